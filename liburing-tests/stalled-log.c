/* SPDX-License-Identifier: MIT */
/*
 * Description: NOWAIT overwrites on a mount without lazytime, while the
 *		file system's log cannot be written. Such a write updates
 *		c/mtime in memory and leaves the logging to a work item
 *		(patch 0013); with the log stalled the items block in
 *		->dirty_inode(), and a file written at every clock tick must
 *		not pile up an item per tick (the 44-patch series did:
 *		thousands in seconds, 64 bytes each, unbounded while the
 *		stall lasts), and the times of the last writes must still be
 *		logged once the log moves again.
 *
 *		The test builds its own file system of TEST_FS's type (small
 *		log or journal, default mount) on a device-mapper linear
 *		target over a loop device on a tmpfs file, so that it can
 *		stall it: after setup it suspends the target (--noflush:
 *		I/O waits) and a thread changes the mode of NMETA files until
 *		its metadata commits block. Then NFILES threads overwrite the
 *		first 4 KiB of their own cached file with
 *		pwritev2(RWF_NOWAIT) for TEST_STALL_MS (default 3000), and
 *		the main thread samples /proc/slabinfo. It asserts:
 *		- the metadata thread blocked: the log stalled (else nothing
 *		  is judged, and the test fails saying so);
 *		- every write completed (no -EAGAIN, no short write) and no
 *		  writer blocked (each ends within 5 s of its time);
 *		- the clock ticked under the writers at least MIN_TICKS times
 *		  in all (mtime changes they saw), so that an item per tick
 *		  would have shown;
 *		- the objects in use in the kmalloc caches grew by less than
 *		  BOUND during the stall (NFILES files need at most one item
 *		  waiting each, plus the workqueue's 8 running);
 *		- after the target resumed and a second's wait, a shutdown
 *		  with a log flush (no data or inode writeback) and a
 *		  remount show each file's mtime and ctime as stat showed them
 *		  before the shutdown: the items that absorbed later updates
 *		  logged them.
 *		A feature test: 6.12 refuses these writes (-EAGAIN on XFS,
 *		-EOPNOTSUPP on ext4). Runs on the default-mount configs; on
 *		a lazytime config it skips (such mounts queue no items).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "helpers.h"

#define NFILES		8
#define NMETA		8000
#define FSIZE		(64 * 1024)
#define WLEN		4096
#define MIN_TICKS	400
#define BOUND		300
#define DM_NAME		"stalled-log"
#define IMG		"/tmp/stalled-log.img"
#define MNT		"/tmp/stalled-log.mnt"

/* XFS_IOC_GOINGDOWN and EXT4_IOC_SHUTDOWN are the same ioctl. */
#define T_IOC_GOINGDOWN		_IOR('X', 125, uint32_t)
#define T_GOING_FLAGS_LOGFLUSH	0x1

static char loopdev[64];
static int have_dm, mounted, suspended;
static const char *fstype;

static atomic_long meta_done;
static atomic_int stop_meta, stop_writers;

struct writer {
	pthread_t thread;
	int fd;
	long ok, eagain, other, ticks;
	int err;
	atomic_int done;
};

static struct writer writers[NFILES];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ret = system(cmd);
	if (ret)
		fprintf(stderr, "command failed (%d): %s\n", ret, cmd);
	return ret;
}

static void cleanup(void)
{
	if (suspended && !sh("DM_DISABLE_UDEV=1 dmsetup resume --noudevsync " DM_NAME))
		suspended = 0;
	if (mounted && !umount(MNT))
		mounted = 0;
	if (have_dm && !mounted &&
	    !sh("DM_DISABLE_UDEV=1 dmsetup remove --noudevsync " DM_NAME))
		have_dm = 0;
	if (loopdev[0] && !have_dm)
		sh("losetup -d %s", loopdev);
	unlink(IMG);
	rmdir(MNT);
}

/* Objects in use in the kmalloc caches (active_objs of /proc/slabinfo). */
static long kmalloc_objs(void)
{
	char line[512], name[128];
	long n = 0, active;
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %ld", name, &active) != 2)
			continue;
		if (!strncmp(name, "kmalloc-", 8) &&
		    strncmp(name, "kmalloc-rcl-", 12) &&
		    strncmp(name, "kmalloc-dma-", 12))
			n += active;
	}
	fclose(f);
	return n;
}

static int setup(void)
{
	FILE *p;
	char buf[FSIZE];
	int i, fd;

	if (sh("command -v dmsetup losetup mkfs.%s >/dev/null", fstype))
		return 1;
	unlink(IMG);
	fd = open(IMG, O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 256 << 20)) {
		perror(IMG);
		return 1;
	}
	close(fd);
	p = popen("losetup -f --show " IMG, "r");
	if (!p || !fgets(loopdev, sizeof(loopdev), p)) {
		fprintf(stderr, "losetup failed\n");
		if (p)
			pclose(p);
		loopdev[0] = '\0';
		return 1;
	}
	pclose(p);
	loopdev[strcspn(loopdev, "\n")] = '\0';
	if (sh("DM_DISABLE_UDEV=1 dmsetup create --noudevsync " DM_NAME
	       " --table \"0 $(blockdev --getsz %s) linear %s 0\"", loopdev, loopdev))
		return 1;
	have_dm = 1;
	/*
	 * A small log (XFS) or journal (ext4), so that a few thousand
	 * inode updates fill what can wait for the stalled device.
	 * mkfs.xfs makes a file system under 300 MB and a log under 64 MB
	 * only for fstests (TEST_DIR, TEST_DEV and QA_CHECK_FS all set).
	 */
	if (!strcmp(fstype, "xfs") ?
	    sh("TEST_DIR=" MNT " TEST_DEV=/dev/mapper/" DM_NAME " QA_CHECK_FS=1 mkfs.xfs -q -f -K -l size=6m /dev/mapper/" DM_NAME) :
	    sh("mkfs.ext4 -q -F -J size=4 -E lazy_itable_init=0,nodiscard /dev/mapper/" DM_NAME))
		return 1;
	mkdir(MNT, 0755);
	if (mount("/dev/mapper/" DM_NAME, MNT, fstype, 0, NULL)) {
		perror("mount");
		return 1;
	}
	mounted = 1;
	if (mkdir(MNT "/meta", 0755)) {
		perror("mkdir");
		return 1;
	}
	for (i = 0; i < NMETA; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), MNT "/meta/%d", i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		close(fd);
	}
	t_fill_pattern(buf, FSIZE, 0, 1);
	for (i = 0; i < NFILES; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), MNT "/f%d", i);
		fd = open(path, O_CREAT | O_RDWR, 0644);
		if (fd < 0 || pwrite(fd, buf, FSIZE, 0) != FSIZE ||
		    fsync(fd) || pread(fd, buf, FSIZE, 0) != FSIZE) {
			perror(path);
			return 1;
		}
		writers[i].fd = fd;
	}
	sync();
	return 0;
}

static void *meta_fn(void *arg)
{
	char path[PATH_MAX];
	long i;

	(void)arg;
	for (i = 0; !atomic_load(&stop_meta); i++) {
		snprintf(path, sizeof(path), MNT "/meta/%ld", i % NMETA);
		if (chmod(path, (i / NMETA) % 2 ? 0644 : 0600)) {
			perror("chmod");
			break;
		}
		atomic_store(&meta_done, i + 1);
	}
	return NULL;
}

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	unsigned char buf[WLEN];
	struct iovec iov = { buf, WLEN };
	struct timespec last = { 0, 0 };
	struct stat st;
	ssize_t ret;
	uint32_t gen = 2;

	while (!atomic_load(&stop_writers)) {
		t_fill_pattern(buf, WLEN, 0, gen++);
		ret = pwritev2(w->fd, &iov, 1, 0, RWF_NOWAIT);
		if (ret == WLEN) {
			w->ok++;
		} else if (ret < 0 && errno == EAGAIN) {
			w->eagain++;
		} else {
			w->other++;
			w->err = ret < 0 ? errno : 0;
			if (ret < 0 && errno == EOPNOTSUPP)
				break;
		}
		if (!fstat(w->fd, &st) &&
		    (st.st_mtim.tv_sec != last.tv_sec ||
		     st.st_mtim.tv_nsec != last.tv_nsec)) {
			w->ticks++;
			last = st.st_mtim;
		}
	}
	atomic_store(&w->done, 1);
	return NULL;
}

/* Wait until the metadata thread makes no progress for 1 s (max 60 s). */
static int wait_stalled(void)
{
	long before;
	int i;

	for (i = 0; i < 60; i++) {
		before = atomic_load(&meta_done);
		usleep(1000 * 1000);
		if (atomic_load(&meta_done) == before) {
			printf("log stalled after %ld inode updates\n", before);
			return 0;
		}
	}
	fprintf(stderr, "the log never stalled: %ld inode updates in 60 s went on; nothing judged\n",
		atomic_load(&meta_done));
	return 1;
}

static int check_logged(struct stat *mem)
{
	uint32_t flags = T_GOING_FLAGS_LOGFLUSH;
	struct stat disk;
	char path[PATH_MAX];
	int i, bad = 0, ret;

	if (ioctl(writers[0].fd, T_IOC_GOINGDOWN, &flags)) {
		perror("shutdown ioctl");
		return 1;
	}
	for (i = 0; i < NFILES; i++)
		close(writers[i].fd);
	for (i = 0; (ret = umount(MNT)) && errno == EBUSY && i < 50; i++)
		usleep(100 * 1000);
	if (ret) {
		perror("umount after shutdown");
		return 1;
	}
	mounted = 0;
	if (mount("/dev/mapper/" DM_NAME, MNT, fstype, 0, NULL)) {
		perror("remount");
		return 1;
	}
	mounted = 1;
	for (i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), MNT "/f%d", i);
		if (stat(path, &disk)) {
			perror(path);
			return 1;
		}
		if (disk.st_mtim.tv_sec != mem[i].st_mtim.tv_sec ||
		    disk.st_mtim.tv_nsec != mem[i].st_mtim.tv_nsec ||
		    disk.st_ctim.tv_sec != mem[i].st_ctim.tv_sec ||
		    disk.st_ctim.tv_nsec != mem[i].st_ctim.tv_nsec) {
			fprintf(stderr, "f%d: times not logged: on disk mtime %ld.%09ld ctime %ld.%09ld, stat before the shutdown %ld.%09ld / %ld.%09ld\n",
				i, (long)disk.st_mtim.tv_sec, disk.st_mtim.tv_nsec,
				(long)disk.st_ctim.tv_sec, disk.st_ctim.tv_nsec,
				(long)mem[i].st_mtim.tv_sec, mem[i].st_mtim.tv_nsec,
				(long)mem[i].st_ctim.tv_sec, mem[i].st_ctim.tv_nsec);
			bad = 1;
		}
	}
	if (!bad)
		printf("every file's mtime and ctime were logged: on disk after the log resumed, a 1 s wait, a log flush and a shutdown\n");
	return bad;
}

int main(void)
{
	unsigned int stall_ms = t_env_uint("TEST_STALL_MS", 3000, 500, 60000);
	long base, peak = 0, now, ok = 0, eagain = 0, other = 0, ticks = 0;
	struct stat mem[NFILES];
	pthread_t meta;
	uint64_t end;
	int i, ret = T_EXIT_FAIL, joined = 1;

	if (strstr(t_test_fs(), "lazytime")) {
		printf("skip: builds its own default-mount file system; lazytime mounts queue no time items (run on xfs and ext4)\n");
		return T_EXIT_SKIP;
	}
	if (!strncmp(t_test_fs(), "xfs", 3)) {
		fstype = "xfs";
	} else if (!strncmp(t_test_fs(), "ext4", 4)) {
		fstype = "ext4";
	} else {
		fprintf(stderr, "TEST_FS %s: not xfs or ext4\n", t_test_fs());
		return T_EXIT_FAIL;
	}
	atexit(cleanup);
	if (setup())
		return T_EXIT_FAIL;

	if (sh("DM_DISABLE_UDEV=1 dmsetup suspend --noflush --noudevsync " DM_NAME))
		return T_EXIT_FAIL;
	suspended = 1;
	if (pthread_create(&meta, NULL, meta_fn, NULL)) {
		perror("pthread_create");
		return T_EXIT_FAIL;
	}
	if (wait_stalled())
		goto resume;

	base = kmalloc_objs();
	if (base < 0) {
		perror("/proc/slabinfo");
		goto resume;
	}
	for (i = 0; i < NFILES; i++) {
		if (pthread_create(&writers[i].thread, NULL, writer_fn, &writers[i])) {
			perror("pthread_create");
			atomic_store(&stop_writers, 1);
			goto resume;
		}
	}
	end = t_now_ns() + (uint64_t)stall_ms * 1000000;
	while (t_now_ns() < end) {
		usleep(50 * 1000);
		now = kmalloc_objs();
		if (now - base > peak)
			peak = now - base;
	}
	atomic_store(&stop_writers, 1);
	end = t_now_ns() + 5000ULL * 1000000;
	for (i = 0; i < NFILES; i++) {
		while (!atomic_load(&writers[i].done) && t_now_ns() < end)
			usleep(10 * 1000);
		if (!atomic_load(&writers[i].done)) {
			fprintf(stderr, "writer %d blocked: not done 5 s after its time, with the log stalled\n", i);
			joined = 0;
		}
	}
	for (i = 0; i < NFILES; i++) {
		ok += writers[i].ok;
		eagain += writers[i].eagain;
		other += writers[i].other;
		ticks += writers[i].ticks;
	}
	printf("%s: %ld RWF_NOWAIT overwrites completed, %ld -EAGAIN, %ld other, %ld mtime changes seen, kmalloc objects in use +%ld at most (%ld before)\n",
	       fstype, ok, eagain, other, ticks, peak, base);
	ret = T_EXIT_PASS;
	if (!joined)
		ret = T_EXIT_FAIL;
	if (eagain || other) {
		for (i = 0; i < NFILES; i++)
			if (writers[i].other)
				fprintf(stderr, "writer %d: %ld writes failed, last error %s\n",
					i, writers[i].other, t_errno_name(writers[i].err));
		fprintf(stderr, "NOWAIT overwrites were refused while the log was stalled (-EAGAIN %ld, other %ld)\n",
			eagain, other);
		ret = T_EXIT_FAIL;
	} else if (ticks < MIN_TICKS) {
		fprintf(stderr, "only %ld mtime changes (< %d): too few ticks to judge the items\n",
			ticks, MIN_TICKS);
		ret = T_EXIT_FAIL;
	} else if (peak >= BOUND) {
		fprintf(stderr, "time work items piled up: kmalloc objects in use grew by %ld (bound %d) over %ld timestamp updates of %d files\n",
			peak, BOUND, ticks, NFILES);
		ret = T_EXIT_FAIL;
	}
resume:
	atomic_store(&stop_meta, 1);
	atomic_store(&stop_writers, 1);
	if (sh("DM_DISABLE_UDEV=1 dmsetup resume --noudevsync " DM_NAME))
		return T_EXIT_FAIL;
	suspended = 0;
	pthread_join(meta, NULL);
	if (!joined)
		return T_EXIT_FAIL;
	for (i = 0; i < NFILES; i++)
		if (writers[i].thread)
			pthread_join(writers[i].thread, NULL);
	if (ret != T_EXIT_PASS)
		return ret;
	usleep(1000 * 1000);
	for (i = 0; i < NFILES; i++) {
		if (fstat(writers[i].fd, &mem[i])) {
			perror("fstat");
			return T_EXIT_FAIL;
		}
	}
	return check_logged(mem) ? T_EXIT_FAIL : T_EXIT_PASS;
}
