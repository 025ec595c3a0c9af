/* SPDX-License-Identifier: MIT */
/*
 * Description: a NOWAIT overwrite of cached data must succeed when the
 *		file's c/mtime are stale, on every mount, and its new times
 *		must be logged soon without an fsync. Six parts:
 *		- stale: in each NOWAIT mode (pwritev2 and io_uring with
 *		  RWF_NOWAIT), after the clock has ticked past the file's
 *		  times, a cached 4 KiB overwrite must complete (no -EAGAIN)
 *		  and stat must show a later mtime and ctime at once. A
 *		  feature test: 6.12 XFS returns -EAGAIN on a default mount,
 *		  6.12 ext4 -EOPNOTSUPP on every mount.
 *		- loaded: the same write, in each NOWAIT mode, to a file
 *		  whose inode was just evicted (drop_caches) and read back
 *		  (O_NOATIME, so that no atime update logs the inode first):
 *		  ext4 and XFS mark the i_version of an inode read from the
 *		  disk queried, so the first change must bump it, which the
 *		  46-patch series left to the blocking path (-EAGAIN: a
 *		  pwritev2(RWF_NOWAIT) caller never got through, an io_uring
 *		  write was punted once per inode load); patch 0048 bumps it
 *		  in memory and has the time item log it.
 *		- versioned: such a write (on 6.12, where NOWAIT is refused,
 *		  a plain io_uring write) to a file whose inode was read
 *		  back after a remount, then syncfs(): the inode's change
 *		  counter on the disk (read unmounted with xfs_db or
 *		  debugfs) must have moved, so the bump reached the log.
 *		- logged (mounts without lazytime): after such a write (where
 *		  NOWAIT is refused, a plain io_uring write) and a short wait (TEST_STAMP_WAIT_MS, default 1000), the file
 *		  system is shut down with a log flush and no data or inode
 *		  writeback (the XFS_IOC_GOINGDOWN / EXT4_IOC_SHUTDOWN ioctl,
 *		  LOGFLUSH), remounted, and the file's mtime and ctime must be
 *		  the write's: they were logged, as a blocking writer's are,
 *		  not left in memory for lazytime writeback. On lazytime
 *		  mounts times persist lazily by design; the part says so and
 *		  is not run (TEST_STAMP_FORCE_LOGGED=1 runs it there, where
 *		  it must fail: a check of the check).
 *		- fsynced (every mount): fsync right after such a write, then
 *		  a shutdown without a log flush, remount: the times must be
 *		  on disk (fsync logs the times of a pending work item
 *		  itself).
 *		- privs: a writer without CAP_FSETID overwrites its own
 *		  setuid/setgid file in every mode. NOWAIT writes must be
 *		  refused and leave the mode and data alone (stripping the
 *		  bits needs the blocking path); io_uring and pwritev2 writes
 *		  must complete and strip both bits.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "helpers.h"

#define FSIZE		(256 * 1024)
#define WLEN		4096
#define ROUNDS		8

static struct io_uring ring;
static int lazytime;
static unsigned char buf[WLEN], back[WLEN];

static int ts_equal(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* A cached, fsynced file of FSIZE bytes of generation 1; fd or -1. */
static int new_file(const char *tag, char *path, size_t plen)
{
	static unsigned char fill[FSIZE];
	int fd = t_create_file(tag, 0, path, plen);

	t_fill_pattern(fill, FSIZE, 0, 1);
	if (pwrite(fd, fill, FSIZE, 0) != FSIZE || fsync(fd) ||
	    pread(fd, fill, FSIZE, 0) != FSIZE) {
		perror("setup");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * One NOWAIT overwrite at @off with the times stale; it must complete,
 * land, and move mtime and ctime. Fills @after. 0 or 1 (printed).
 */
static int stale_write(int fd, const char *path, enum t_wmode m, off_t off,
		       uint32_t gen, const char *what, struct stat *after)
{
	struct stat before, by_path;
	ssize_t ret;

	t_next_tick();
	if (fstat(fd, &before)) {
		perror("fstat");
		return 1;
	}
	t_fill_pattern(buf, WLEN, off, gen);
	ret = t_wmode_write(&ring, m, fd, buf, WLEN, off, 0);
	if (ret != WLEN) {
		fprintf(stderr, "%s [%s]: a cached overwrite with stale times returned %s%s\n",
			what, t_wmode_name(m), ret < 0 ? "-" : "",
			ret < 0 ? t_errno_name((int)-ret) : "a short count");
		return 1;
	}
	if (fstat(fd, after) || stat(path, &by_path)) {
		perror("stat");
		return 1;
	}
	if (!t_ts_before(&before.st_mtim, &after->st_mtim) ||
	    !t_ts_before(&before.st_ctim, &after->st_ctim)) {
		fprintf(stderr, "%s [%s]: the write completed but mtime %ld.%09ld ctime %ld.%09ld did not move past %ld.%09ld / %ld.%09ld\n",
			what, t_wmode_name(m),
			(long)after->st_mtim.tv_sec, after->st_mtim.tv_nsec,
			(long)after->st_ctim.tv_sec, after->st_ctim.tv_nsec,
			(long)before.st_mtim.tv_sec, before.st_mtim.tv_nsec,
			(long)before.st_ctim.tv_sec, before.st_ctim.tv_nsec);
		return 1;
	}
	if (!ts_equal(&by_path.st_mtim, &after->st_mtim)) {
		fprintf(stderr, "%s [%s]: stat by path and fstat disagree on mtime\n",
			what, t_wmode_name(m));
		return 1;
	}
	if (pread(fd, back, WLEN, off) != WLEN ||
	    t_check_pattern(back, WLEN, off, gen) >= 0) {
		fprintf(stderr, "%s [%s]: the write completed but its data is not in the file\n",
			what, t_wmode_name(m));
		return 1;
	}
	return 0;
}

/* The stale part's io_uring NOWAIT writes completed: not 6.12. */
static int nowait_works;

static int part_stale(void)
{
	static const enum t_wmode modes[] = { T_URING_NOWAIT, T_PWRITEV2_NOWAIT };
	char path[PATH_MAX];
	struct stat st;
	unsigned int i, r;
	int fd, bad = 0;

	fd = new_file("nowait-stamp", path, sizeof(path));
	if (fd < 0)
		return 1;
	for (i = 0; i < 2; i++) {
		for (r = 0; r < ROUNDS && !bad; r++)
			bad = stale_write(fd, path, modes[i], (off_t)r * 3 * WLEN,
					  2 + r, "stale", &st);
		if (bad)
			break;
		printf("stale [%s]: %u writes with stale times completed and moved c/mtime\n",
		       t_wmode_name(modes[i]), ROUNDS);
		if (modes[i] == T_URING_NOWAIT)
			nowait_works = 1;
	}
	close(fd);
	return bad;
}

/*
 * Open @path again with O_NOATIME (no atime transaction logs the inode
 * first) and read it back whole, so that its pages are cached: fd or -1.
 */
static int reopen_cached(const char *path)
{
	static unsigned char all[FSIZE];
	int fd = open(path, O_RDWR | O_NOATIME);

	if (fd < 0 || pread(fd, all, FSIZE, 0) != FSIZE) {
		perror(path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * A tick later, one io_uring NOWAIT overwrite at @off; where NOWAIT is
 * refused (6.12), a plain io_uring write instead, so that the check that
 * follows is seen to pass there. Returns res.
 */
static int nowait_or_plain_write(int fd, off_t off, uint32_t gen,
				 const char *what)
{
	int ret;

	t_next_tick();
	t_fill_pattern(buf, WLEN, off, gen);
	ret = t_wmode_write(&ring, T_URING_NOWAIT, fd, buf, WLEN, off, 0);
	if ((ret == -EAGAIN || ret == -EOPNOTSUPP) && nowait_works) {
		/* Not 6.12: the stale part's NOWAIT writes completed. */
		fprintf(stderr, "%s: NOWAIT overwrite refused (%s), where the stale part's completed\n",
			what, t_errno_name((int)-ret));
		return ret;
	}
	if (ret == -EAGAIN || ret == -EOPNOTSUPP) {
		printf("%s: NOWAIT refused (%s): checking a plain io_uring write instead\n",
		       what, t_errno_name((int)-ret));
		ret = t_wmode_write(&ring, T_URING, fd, buf, WLEN, off, 0);
	}
	return ret;
}

static int part_loaded(void)
{
	static const enum t_wmode modes[] = { T_URING_NOWAIT, T_PWRITEV2_NOWAIT };
	char path[PATH_MAX];
	struct stat st;
	unsigned int i;
	int fd, bad = 0;

	for (i = 0; i < 2 && !bad; i++) {
		fd = new_file("nowait-stamp-loaded", path, sizeof(path));
		if (fd < 0)
			return 1;
		close(fd);
		if (t_drop_caches())
			return 1;
		fd = reopen_cached(path);
		if (fd < 0)
			return 1;
		bad = stale_write(fd, path, modes[i], WLEN, 20 + i,
				  "loaded (inode read from the disk)", &st);
		close(fd);
		unlink(path);
		if (!bad)
			printf("loaded [%s]: a write to a file whose inode was read back from the disk completed and moved c/mtime\n",
			       t_wmode_name(modes[i]));
	}
	return bad;
}

/* The mount holding @path: mount point, device and fs type. */
static int find_mount(const char *path, char *mnt, char *dev, char *type,
		      size_t len)
{
	char line[4096], m[PATH_MAX], d[PATH_MAX], t[64], real[PATH_MAX];
	size_t best = 0, n;
	FILE *f;

	if (!realpath(path, real))
		return -1;
	f = fopen("/proc/self/mounts", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%4095s %4095s %63s", d, m, t) != 3)
			continue;
		n = strlen(m);
		if (strncmp(real, m, n) || (real[n] != '/' && real[n] != '\0' &&
					    strcmp(m, "/")))
			continue;
		if (n >= best) {
			best = n;
			snprintf(mnt, len, "%s", m);
			snprintf(dev, len, "%s", d);
			snprintf(type, len, "%s", t);
		}
	}
	fclose(f);
	return best ? 0 : -1;
}

static int unmount_test_fs(const char *mnt, const char *what)
{
	int i, ret;

	for (i = 0; (ret = umount(mnt)) && errno == EBUSY && i < 50; i++)
		usleep(100 * 1000);
	if (ret)
		fprintf(stderr, "%s: umount %s: %s\n", what, mnt, strerror(errno));
	return ret ? 1 : 0;
}

static int mount_test_fs(const char *mnt, const char *dev, const char *type,
			 const char *what)
{
	if (!mount(dev, mnt, type, lazytime ? MS_LAZYTIME : 0, NULL))
		return 0;
	fprintf(stderr, "%s: mount %s on %s (%s): %s; later tests will fail\n",
		what, dev, mnt, type, strerror(errno));
	return 1;
}

/*
 * @fsynced 0: wait, shut down with a log flush (the work item must have
 * logged the times). @fsynced 1: fsync right after the write, shut down
 * without a log flush (fsync must have committed them, item or not).
 */
static int part_logged(int fsynced)
{
	const char *what = fsynced ? "fsynced" : "logged";
	char path[PATH_MAX], mnt[PATH_MAX], dev[PATH_MAX], type[PATH_MAX];
	/* KASAN and lockdep slow the item's worker down several times. */
	unsigned int wait_ms = t_env_uint("TEST_STAMP_WAIT_MS",
					  strcmp(getenv("TEST_FLAVOUR") ?: "", "debug") ? 1000 : 5000,
					  0, 60000);
	uint32_t flags = fsynced ? T_GOING_FLAGS_NOLOGFLUSH : T_GOING_FLAGS_LOGFLUSH;
	struct stat st, disk;
	int fd, ret;

	if (find_mount(t_test_dir(), mnt, dev, type, sizeof(mnt))) {
		fprintf(stderr, "%s: cannot find the mount of %s\n", what, t_test_dir());
		return 1;
	}
	fd = new_file("nowait-stamp-logged", path, sizeof(path));
	if (fd < 0)
		return 1;
	/*
	 * The NOWAIT write whose times a work item logs; where NOWAIT is
	 * refused (6.12), the blocking write that logs them itself.
	 */
	ret = nowait_or_plain_write(fd, 0, 9, what);
	if (ret != WLEN || fstat(fd, &st)) {
		fprintf(stderr, "%s: write returned %d\n", what, ret);
		close(fd);
		return 1;
	}
	if (fsynced) {
		if (fsync(fd)) {
			perror("fsynced: fsync");
			close(fd);
			return 1;
		}
	} else {
		usleep(wait_ms * 1000);
	}
	/* Flush the log or not, write back nothing, refuse all I/O. */
	if (ioctl(fd, T_IOC_GOINGDOWN, &flags)) {
		fprintf(stderr, "%s: shutdown ioctl on %s: %s\n", what, mnt, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	if (unmount_test_fs(mnt, what) || mount_test_fs(mnt, dev, type, what))
		return 1;
	if (stat(path, &disk)) {
		fprintf(stderr, "%s: stat %s after remount: %s\n", what, path, strerror(errno));
		return 1;
	}
	if (!ts_equal(&disk.st_mtim, &st.st_mtim) ||
	    !ts_equal(&disk.st_ctim, &st.st_ctim)) {
		fprintf(stderr, "%s: the write's times were not %s: on disk mtime %ld.%09ld ctime %ld.%09ld, the write set %ld.%09ld / %ld.%09ld\n",
			what, fsynced ? "committed by the fsync right after it" : "logged within the wait",
			(long)disk.st_mtim.tv_sec, disk.st_mtim.tv_nsec,
			(long)disk.st_ctim.tv_sec, disk.st_ctim.tv_nsec,
			(long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
			(long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
		return 1;
	}
	if (fsynced)
		printf("fsynced: the write's mtime and ctime were on disk after an fsync right after it and a shutdown without a log flush\n");
	else
		printf("logged: the write's mtime and ctime were on disk after %u ms, a log flush and a shutdown\n",
		       wait_ms);
	return 0;
}

/*
 * The change counter (i_version) of inode @ino as the unmounted @dev holds
 * it, read with the file system's own debugger; 0 or -1 (printed).
 */
static int disk_iversion(const char *type, const char *dev, unsigned long ino,
			 unsigned long long *v)
{
	char cmd[2 * PATH_MAX], line[512];
	unsigned int hi, lo;
	int xfs = !strcmp(type, "xfs"), found = 0;
	FILE *p;

	if (xfs)
		snprintf(cmd, sizeof(cmd),
			 "xfs_db -r -c 'inode %lu' -c 'print v3.change_count' %s 2>&1",
			 ino, dev);
	else
		snprintf(cmd, sizeof(cmd), "debugfs -R 'stat <%lu>' %s 2>&1", ino, dev);
	p = popen(cmd, "r");
	if (!p) {
		perror("versioned: popen");
		return -1;
	}
	while (!found && fgets(line, sizeof(line), p)) {
		const char *s = strstr(line, "Version: 0x");

		if (xfs) {
			found = sscanf(line, "v3.change_count = %llu", v) == 1;
		} else if (s) {
			/* "0xHI:LO" with a large inode, "0xLO" without. */
			if (sscanf(s, "Version: 0x%x:%x", &hi, &lo) == 2)
				*v = (unsigned long long)hi << 32 | lo;
			else
				*v = strtoull(s + 9, NULL, 16);
			found = 1;
		}
	}
	if (pclose(p) || !found) {
		fprintf(stderr, "versioned: no change counter from: %s\n", cmd);
		return -1;
	}
	return 0;
}

/*
 * Unmount the test file system, read inode @ino's change counter from
 * @dev into @v, mount it again: 0 or 1 (printed).
 */
static int counter_remounted(const char *mnt, const char *dev,
			     const char *type, unsigned long ino,
			     unsigned long long *v)
{
	const char *what = "versioned";
	int ret;

	if (unmount_test_fs(mnt, what))
		return 1;
	ret = disk_iversion(type, dev, ino, v);
	return mount_test_fs(mnt, dev, type, what) || ret ? 1 : 0;
}

/*
 * A NOWAIT overwrite of a file whose inode was just read from the disk
 * (ext4 and XFS mark its i_version queried) must change the inode's change
 * counter on the disk by the time syncfs() returns: the bump that an NFS
 * client's change attribute relies on, logged. On 6.12, which refuses the
 * NOWAIT write, a plain io_uring write shows the check passing.
 */
static int part_versioned(void)
{
	const char *what = "versioned";
	char path[PATH_MAX], mnt[PATH_MAX], dev[PATH_MAX], type[PATH_MAX];
	unsigned long long v0, v1;
	struct stat st;
	unsigned long ino;
	int fd, ret;

	if (find_mount(t_test_dir(), mnt, dev, type, sizeof(mnt))) {
		fprintf(stderr, "%s: cannot find the mount of %s\n", what, t_test_dir());
		return 1;
	}
	if (strcmp(type, "xfs") && strcmp(type, "ext4")) {
		printf("%s: not run on %s (no change counter reader)\n", what, type);
		return 0;
	}
	fd = new_file("nowait-stamp-versioned", path, sizeof(path));
	if (fd < 0)
		return 1;
	if (fstat(fd, &st)) {
		perror("versioned: fstat");
		close(fd);
		return 1;
	}
	ino = (unsigned long)st.st_ino;
	close(fd);
	if (counter_remounted(mnt, dev, type, ino, &v0))
		return 1;
	fd = reopen_cached(path);
	if (fd < 0)
		return 1;
	ret = nowait_or_plain_write(fd, 2 * WLEN, 30, what);
	if (ret != WLEN || syncfs(fd)) {
		fprintf(stderr, "%s: write returned %d, or syncfs failed\n", what, ret);
		close(fd);
		return 1;
	}
	close(fd);
	if (counter_remounted(mnt, dev, type, ino, &v1))
		return 1;
	unlink(path);
	if (v1 <= v0) {
		fprintf(stderr, "%s: the change counter on the disk did not move: %llu before the write, %llu after it and syncfs\n",
			what, v0, v1);
		return 1;
	}
	printf("%s: the change counter on the disk moved from %llu to %llu across the write and syncfs\n",
	       what, v0, v1);
	return 0;
}

/* In a child without CAP_FSETID that owns the file. */
static int privs_child(const char *path)
{
	struct io_uring cring;
	enum t_wmode m;
	struct stat st;
	int fd, bad = 0;

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)) {
		perror("privs: drop to uid/gid 65534");
		return 1;
	}
	fd = open(path, O_RDWR);
	if (fd < 0 || io_uring_queue_init(4, &cring, 0)) {
		perror("privs: open or ring");
		return 1;
	}
	for (m = 0; m < T_NR_WMODES; m++) {
		ssize_t ret;

		if (fchmod(fd, 06777)) {
			perror("privs: fchmod 06777");
			return 1;
		}
		t_next_tick();
		t_fill_pattern(buf, WLEN, 0, 20 + m);
		ret = t_wmode_write(&cring, m, fd, buf, WLEN, 0, 0);
		if (fstat(fd, &st) || pread(fd, back, WLEN, 0) != WLEN) {
			perror("privs: fstat or pread");
			return 1;
		}
		if (t_wmode_nowait(m)) {
			if (ret != -EAGAIN && ret != -EOPNOTSUPP) {
				fprintf(stderr, "privs [%s]: a write that must strip setuid/setgid returned %zd, not a refusal\n",
					t_wmode_name(m), ret);
				bad = 1;
			} else if ((st.st_mode & 07777) != 06777 ||
				   t_check_pattern(back, WLEN, 0, 20 + m) < 0) {
				fprintf(stderr, "privs [%s]: a refused write changed the mode (%04o) or the data\n",
					t_wmode_name(m), st.st_mode & 07777);
				bad = 1;
			}
			continue;
		}
		if (ret != WLEN) {
			fprintf(stderr, "privs [%s]: returned %zd\n", t_wmode_name(m), ret);
			bad = 1;
		} else if (st.st_mode & 06000) {
			fprintf(stderr, "privs [%s]: the write completed and left mode %04o: setuid/setgid not stripped\n",
				t_wmode_name(m), st.st_mode & 07777);
			bad = 1;
		} else if (t_check_pattern(back, WLEN, 0, 20 + m) >= 0) {
			fprintf(stderr, "privs [%s]: the write completed but its data is not in the file\n",
				t_wmode_name(m));
			bad = 1;
		}
	}
	if (!bad)
		printf("privs: NOWAIT writes refused, mode and data untouched; blocking and io_uring writes stripped setuid/setgid\n");
	return bad;
}

static int part_privs(void)
{
	char path[PATH_MAX];
	int fd, status;
	pid_t pid;

	fd = new_file("nowait-stamp-privs", path, sizeof(path));
	if (fd < 0)
		return 1;
	if (fchown(fd, 65534, 65534)) {
		perror("privs: fchown");
		return 1;
	}
	close(fd);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid) {
		int ret = privs_child(path);

		fflush(stdout);
		_exit(ret);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		fprintf(stderr, "privs: the child did not exit normally\n");
		return 1;
	}
	return WEXITSTATUS(status) ? 1 : 0;
}

int main(void)
{
	char path[PATH_MAX];
	int fd, bad = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (io_uring_queue_init(8, &ring, 0)) {
		fprintf(stderr, "io_uring_queue_init failed\n");
		return T_EXIT_FAIL;
	}
	fd = t_create_file("nowait-stamp-probe", 0, path, sizeof(path));
	lazytime = t_mount_has_option(fd, "lazytime");
	close(fd);
	if (lazytime < 0) {
		fprintf(stderr, "cannot read the mount options\n");
		return T_EXIT_FAIL;
	}
	printf("fs %s, lazytime %s\n", t_test_fs(), lazytime ? "yes" : "no");

	bad |= part_stale();
	bad |= part_loaded();
	bad |= part_versioned();
	bad |= part_privs();
	/*
	 * TEST_STAMP_FORCE_LOGGED=1 runs the logged part on a lazytime mount
	 * too, where it must fail: a check of the check.
	 */
	if (lazytime && !t_env_uint("TEST_STAMP_FORCE_LOGGED", 0, 0, 1))
		printf("logged: not run on a lazytime mount (its times persist lazily by design)\n");
	else
		bad |= part_logged(0);
	bad |= part_logged(1);
	io_uring_queue_exit(&ring);
	return bad ? T_EXIT_FAIL : T_EXIT_PASS;
}
