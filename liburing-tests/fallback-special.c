/* SPDX-License-Identifier: MIT */
/*
 * Description: cached, non-extending buffered overwrites that the inline
 *		overwrite path must still leave to the slow path (or handle
 *		exactly like it) because of the file or its file system:
 *		setuid/setgid files written with and without CAP_FSETID
 *		(the mode afterwards must be what a plain pwrite(2) leaves on
 *		the same kernel), a file with a security.capability xattr,
 *		O_DSYNC/O_SYNC files and RWF_DSYNC/RWF_SYNC writes, an
 *		append-only inode, a read-only bind mount (EROFS/EBADF), and a
 *		frozen file system (a loop-mounted image of TEST_FS's type):
 *		RWF_NOWAIT through io_uring must return EAGAIN at once, and a
 *		blocking write must wait for FITHAW and then complete. Each
 *		case runs on a fresh file through io_uring and pwritev2(), with
 *		RWF_NOWAIT (allowed: EAGAIN, the full length, or an honest
 *		short count; see t_write_outcome()) and without, and the file
 *		is compared with a shadow copy. Needs root for the mount and
 *		freeze cases. Must pass on every kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <linux/capability.h>
#include <linux/loop.h>
#include <linux/magic.h>

#include "helpers.h"

#ifndef FS_IOC_GETFLAGS
#define FS_IOC_GETFLAGS	_IOR('f', 1, long)
#define FS_IOC_SETFLAGS	_IOW('f', 2, long)
#endif
#ifndef FS_APPEND_FL
#define FS_APPEND_FL	0x00000020
#endif

#define FSIZE		(64 * 1024)
#define WOFF		5000	/* the overwrite under test: cached, */
#define WLEN		6000	/* inside EOF, not page aligned */
#define THAW_MS		200
#define WATCHDOG_MS	10000

static struct io_uring ring;
static unsigned char wbuf[FSIZE], rbuf[FSIZE];
static int file_nr;

/* A fresh FSIZE file of generation 1 in @dir, fsynced and cached. */
static int new_file(const char *dir, char *path, size_t plen,
		    struct t_shadow *sh, int *fdp)
{
	int fd;

	snprintf(path, plen, "%s/fallback-special.%d.%d", dir, (int)getpid(),
		 file_nr++);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		return 1;
	}
	t_shadow_init(sh, 2 * FSIZE);
	t_fill_pattern(wbuf, FSIZE, 0, 1);
	if (pwrite(fd, wbuf, FSIZE, 0) != FSIZE || fsync(fd) ||
	    pread(fd, rbuf, FSIZE, 0) != FSIZE) {
		fprintf(stderr, "setup %s: %s\n", path, strerror(errno));
		close(fd);
		unlink(path);
		t_shadow_free(sh);
		return 1;
	}
	t_shadow_put(sh, wbuf, FSIZE, 0);
	*fdp = fd;
	return 0;
}

static void done_file(const char *path, struct t_shadow *sh, int fd)
{
	close(fd);
	t_remove_file(path);
	t_shadow_free(sh);
}

/* Append " mode=outcome" for one mode to a case's summary line. */
static void line_add(char *line, size_t len, enum t_wmode m, int failed,
		     const char *outcome)
{
	size_t n = strlen(line);

	snprintf(line + n, len - n, " %s=%s", t_wmode_name(m),
		 failed ? "FAILED" : outcome);
}

static const char *ret_str(ssize_t ret, size_t len)
{
	static char buf[32];

	if (ret == (ssize_t)len)
		return "full";
	if (ret < 0)
		return t_errno_name(-ret);
	snprintf(buf, sizeof(buf), "short %zd", ret);
	return buf;
}

/*
 * setuid/setgid. Whether a write clears S_ISUID/S_ISGID depends on
 * CAP_FSETID, so the reference is a plain blocking pwrite(2) on the same
 * kind of file by the same task: a write that writes anything must leave
 * the mode it leaves, one that is refused must leave the mode alone.
 */
static const mode_t suid_modes[] = { 04755, 02755, 06755, 02745 };

static int suid_file(const char *what, mode_t mode, char *path, size_t plen,
		     struct t_shadow *sh, int *fdp)
{
	struct stat st;

	if (new_file(t_test_dir(), path, plen, sh, fdp))
		return 1;
	if (fchmod(*fdp, mode) || fstat(*fdp, &st)) {
		fprintf(stderr, "%s: fchmod: %s\n", what, strerror(errno));
		goto fail;
	}
	if ((st.st_mode & 07777) != mode) {
		fprintf(stderr, "%s: mode %#o after fchmod %#o\n", what,
			st.st_mode & 07777, mode);
		goto fail;
	}
	return 0;
fail:
	done_file(path, sh, *fdp);
	return 1;
}

static int file_mode(int fd, mode_t *mode)
{
	struct stat st;

	if (fstat(fd, &st))
		return 1;
	*mode = st.st_mode & 07777;
	return 0;
}

static int suid_reference(mode_t mode, mode_t *ref)
{
	char path[PATH_MAX], what[64];
	struct t_shadow sh;
	int fd, ret = 1;

	snprintf(what, sizeof(what), "suid %#o [pwrite]", mode);
	if (suid_file(what, mode, path, sizeof(path), &sh, &fd))
		return 1;
	t_fill_pattern(wbuf, WLEN, WOFF, 2);
	if (pwrite(fd, wbuf, WLEN, WOFF) != WLEN)
		fprintf(stderr, "%s: %s\n", what, strerror(errno));
	else if (!file_mode(fd, ref))
		ret = 0;
	done_file(path, &sh, fd);
	return ret;
}

static int suid_one(struct io_uring *r, mode_t mode, mode_t ref,
		    enum t_wmode m, const char *what, ssize_t *res)
{
	char path[PATH_MAX];
	struct t_shadow sh;
	mode_t got, want;
	int fd, ret;

	*res = 0;
	if (suid_file(what, mode, path, sizeof(path), &sh, &fd))
		return 1;
	t_fill_pattern(wbuf, WLEN, WOFF, 3 + m);
	*res = t_wmode_write(r, m, fd, wbuf, WLEN, WOFF, 0);
	ret = t_check_written(m, fd, &sh, what, wbuf, WLEN, WOFF, 0, *res,
			      NULL);
	if (!ret && file_mode(fd, &got))
		ret = 1;
	want = *res > 0 ? ref : mode;
	if (!ret && got != want) {
		fprintf(stderr, "%s: mode %#o after the write (returned %zd), want %#o: a plain pwrite leaves %#o\n",
			what, got, *res, want, ref);
		ret = 1;
	}
	done_file(path, &sh, fd);
	return ret;
}

/* All suid modes in every write mode with @r; returns failed cases. */
static int suid_all(struct io_uring *r, int have_fsetid)
{
	const char *ctx = have_fsetid ? "CAP_FSETID" : "no CAP_FSETID";
	char line[512], what[96];
	int failed = 0, bad;
	mode_t mode, ref;
	unsigned int i;
	ssize_t res;
	int m;

	for (i = 0; i < sizeof(suid_modes) / sizeof(suid_modes[0]); i++) {
		mode = suid_modes[i];
		if (suid_reference(mode, &ref)) {
			printf("FAIL suid-%#o (%s): reference pwrite failed\n",
			       mode, ctx);
			failed++;
			continue;
		}
		bad = 0;
		/* Without CAP_FSETID the kernel has always cleared them. */
		if (!have_fsetid && ((ref & S_ISUID) ||
		    ((ref & S_ISGID) && (ref & S_IXGRP)))) {
			fprintf(stderr, "suid %#o: a plain pwrite without CAP_FSETID left mode %#o\n",
				mode, ref);
			bad = 1;
		}
		line[0] = 0;
		for (m = 0; m < T_NR_WMODES; m++) {
			int ret;

			snprintf(what, sizeof(what), "suid-%#o (%s) [%s]",
				 mode, ctx, t_wmode_name(m));
			ret = suid_one(r, mode, ref, m, what, &res);
			bad |= ret;
			line_add(line, sizeof(line), m, ret,
				 ret_str(res, WLEN));
		}
		printf("%s suid-%#o (%s, pwrite leaves %#o):%s\n",
		       bad ? "FAIL" : "ok  ", mode, ctx, ref, line);
		failed += bad;
	}
	return failed;
}

static int drop_cap_fsetid(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_TO_INDEX(CAP_FSETID)].effective &= ~CAP_TO_MASK(CAP_FSETID);
	data[CAP_TO_INDEX(CAP_FSETID)].permitted &= ~CAP_TO_MASK(CAP_FSETID);
	data[CAP_TO_INDEX(CAP_FSETID)].inheritable &= ~CAP_TO_MASK(CAP_FSETID);
	return syscall(SYS_capset, &hdr, data);
}

static int test_suid(void)
{
	struct io_uring r;
	int failed, status;
	pid_t pid;

	failed = suid_all(&ring, 1);

	/* Without CAP_FSETID: a child with its own ring and io-wq. */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return failed + 1;
	}
	if (!pid) {
		int ret = 1;

		if (drop_cap_fsetid())
			perror("capset");
		else if (io_uring_queue_init(8, &r, 0))
			fprintf(stderr, "child io_uring_queue_init failed\n");
		else
			ret = suid_all(&r, 0) ? 1 : 0;
		fflush(stdout);
		fflush(stderr);
		_exit(ret);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		failed++;
	return failed;
}

/*
 * security.capability: any write that changes data removes it, even
 * root's (there is no CAP_FSETID exemption, file_remove_privs()), and the
 * removal needs a transaction. Every write mode must leave the file
 * without it, as a plain pwrite must; a write that fails must keep it.
 */
static int has_fcaps(int fd)
{
	return fgetxattr(fd, "security.capability", NULL, 0) > 0;
}

static int fcaps_file(const char *what, char *path, size_t plen,
		      struct t_shadow *sh, int *fdp)
{
	struct vfs_cap_data caps = {
		.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE,
		.data[0].permitted = 1U << CAP_NET_BIND_SERVICE,
	};

	if (new_file(t_test_dir(), path, plen, sh, fdp))
		return 1;
	if (fsetxattr(*fdp, "security.capability", &caps, XATTR_CAPS_SZ_2, 0)) {
		int err = errno;

		done_file(path, sh, *fdp);
		if (err == EOPNOTSUPP)
			return T_EXIT_SKIP;
		fprintf(stderr, "%s: set security.capability: %s\n", what,
			strerror(err));
		return 1;
	}
	return 0;
}

static int test_fcaps(void)
{
	char path[PATH_MAX], line[512], what[64];
	struct t_shadow sh;
	int fd, m, ret, ref, bad = 0;
	ssize_t res;

	ret = fcaps_file("fcaps [pwrite]", path, sizeof(path), &sh, &fd);
	if (ret == T_EXIT_SKIP) {
		printf("SKIP file-caps: this file system has no security xattrs\n");
		return T_EXIT_SKIP;
	}
	if (ret)
		return 1;
	t_fill_pattern(wbuf, WLEN, WOFF, 2);
	if (pwrite(fd, wbuf, WLEN, WOFF) != WLEN) {
		perror("file-caps: pwrite");
		done_file(path, &sh, fd);
		return 1;
	}
	ref = has_fcaps(fd);
	done_file(path, &sh, fd);
	if (ref) {
		fprintf(stderr, "file-caps: a plain pwrite kept security.capability\n");
		bad = 1;
	}

	line[0] = 0;
	for (m = 0; m < T_NR_WMODES; m++) {
		snprintf(what, sizeof(what), "file-caps [%s]", t_wmode_name(m));
		if (fcaps_file(what, path, sizeof(path), &sh, &fd)) {
			bad = 1;
			continue;
		}
		t_fill_pattern(wbuf, WLEN, WOFF, 3 + m);
		res = t_wmode_write(&ring, m, fd, wbuf, WLEN, WOFF, 0);
		ret = t_check_written(m, fd, &sh, what, wbuf, WLEN, WOFF, 0,
				      res, NULL);
		if (!ret && has_fcaps(fd) != (res > 0 ? 0 : 1)) {
			fprintf(stderr, "%s: security.capability %s after the write (returned %zd)\n",
				what, has_fcaps(fd) ? "kept" : "removed", res);
			ret = 1;
		}
		bad |= ret;
		line_add(line, sizeof(line), m, ret, ret_str(res, WLEN));
		done_file(path, &sh, fd);
	}
	printf("%s file-caps (the xattr must go; pwrite %s it):%s\n",
	       bad ? "FAIL" : "ok  ", ref ? "keeps" : "removes", line);
	return bad;
}

/* O_DSYNC / O_SYNC files and RWF_DSYNC / RWF_SYNC writes. */
static const struct {
	const char *name;
	int open_flags;
	int rw_flags;
} sync_cases[] = {
	{ "o-dsync",	O_DSYNC,	0 },
	{ "rwf-dsync",	0,		RWF_DSYNC },
	{ "o-sync",	O_SYNC,		0 },
	{ "rwf-sync",	0,		RWF_SYNC },
};

static int test_sync(void)
{
	char path[PATH_MAX], line[512], what[64], tb[32];
	struct t_tally t;
	struct t_shadow sh;
	int fd, fd2, m, ret, bad, failed = 0;
	unsigned int i;

	for (i = 0; i < sizeof(sync_cases) / sizeof(sync_cases[0]); i++) {
		line[0] = 0;
		bad = 0;
		for (m = 0; m < T_NR_WMODES; m++) {
			snprintf(what, sizeof(what), "%s [%s]",
				 sync_cases[i].name, t_wmode_name(m));
			memset(&t, 0, sizeof(t));
			if (new_file(t_test_dir(), path, sizeof(path), &sh, &fd)) {
				bad = 1;
				continue;
			}
			ret = 1;
			fd2 = open(path, O_RDWR | sync_cases[i].open_flags);
			if (fd2 < 0) {
				fprintf(stderr, "%s: open: %s\n", what,
					strerror(errno));
			} else {
				t_fill_pattern(wbuf, WLEN, WOFF, 2 + m);
				ret = t_write_check(&ring, m, fd2, &sh, what,
						    wbuf, NULL, WLEN, WOFF,
						    sync_cases[i].rw_flags, &t);
				if (!ret)
					ret = t_shadow_verify_stable(&sh, fd2,
								     what);
				close(fd2);
			}
			bad |= ret;
			line_add(line, sizeof(line), m, ret,
				 t_tally_str(&t, tb, sizeof(tb)));
			done_file(path, &sh, fd);
		}
		printf("%s %s:%s\n", bad ? "FAIL" : "ok  ", sync_cases[i].name,
		       line);
		failed += bad;
	}
	return failed;
}

/*
 * Append-only inode: only an O_APPEND open for writing succeeds, every
 * write lands at EOF whatever its offset, and RWF_NOAPPEND is EPERM.
 */
static int set_append_only(int fd, int on)
{
	int flags;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		return -errno;
	flags = on ? flags | FS_APPEND_FL : flags & ~FS_APPEND_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags))
		return -errno;
	return 0;
}

static int append_only_one(enum t_wmode m, const char *what, struct t_tally *t,
			   char *path, size_t plen)
{
	struct t_shadow sh;
	int fd, afd, ret;
	ssize_t res;

	if (new_file(t_test_dir(), path, plen, &sh, &fd))
		return 1;
	ret = set_append_only(fd, 1);
	if (ret) {
		done_file(path, &sh, fd);
		return ret == -ENOTTY || ret == -EOPNOTSUPP ? T_EXIT_SKIP : 1;
	}
	ret = 1;
	afd = open(path, O_RDWR);
	if (afd >= 0 || errno != EPERM) {
		fprintf(stderr, "%s: O_RDWR open of an append-only file: %s\n",
			what, afd >= 0 ? "succeeded" : strerror(errno));
		goto out;
	}
	afd = open(path, O_RDWR | O_APPEND);
	if (afd < 0) {
		fprintf(stderr, "%s: O_APPEND open: %s\n", what, strerror(errno));
		goto out;
	}
	t_fill_pattern(wbuf, WLEN, WOFF, 2 + m);
	if (t_write_check(&ring, m, afd, &sh, what, wbuf, NULL, WLEN, WOFF, 0, t))
		goto close_afd;
	res = t_wmode_write(&ring, m, afd, wbuf, WLEN, WOFF, RWF_NOAPPEND);
	if (res != -EPERM) {
		fprintf(stderr, "%s: RWF_NOAPPEND write returned %zd, want EPERM\n",
			what, res);
		goto close_afd;
	}
	ret = t_shadow_verify(&sh, afd, what);
close_afd:
	close(afd);
out:
	if (set_append_only(fd, 0)) {
		fprintf(stderr, "%s: cannot clear the append-only flag of %s\n",
			what, path);
		ret = 1;
	}
	done_file(path, &sh, fd);
	return ret;
}

static int test_append_only(void)
{
	char path[PATH_MAX], line[512], what[64], tb[32];
	struct t_tally t;
	int m, ret, bad = 0;

	line[0] = 0;
	for (m = 0; m < T_NR_WMODES; m++) {
		snprintf(what, sizeof(what), "append-only [%s]", t_wmode_name(m));
		memset(&t, 0, sizeof(t));
		ret = append_only_one(m, what, &t, path, sizeof(path));
		if (ret == T_EXIT_SKIP) {
			printf("SKIP append-only: no FS_IOC_SETFLAGS here\n");
			return T_EXIT_SKIP;
		}
		bad |= ret;
		line_add(line, sizeof(line), m, ret, t_tally_str(&t, tb, sizeof(tb)));
	}
	printf("%s append-only:%s\n", bad ? "FAIL" : "ok  ", line);
	return bad;
}

/*
 * Read-only: TEST_DIR bind-mounted read-only (in this process's own mount
 * namespace). Opening for write is EROFS; a read-only fd's writes are EBADF.
 */
static int test_read_only(int have_mntns)
{
	char dir[] = "/tmp/fallback-ro.XXXXXX";
	char path[PATH_MAX], ropath[PATH_MAX + 64], line[512];
	const char *name;
	struct t_shadow sh;
	int fd, rofd, m, bad = 0;
	ssize_t res;

	if (!have_mntns) {
		printf("SKIP read-only: no private mount namespace\n");
		return T_EXIT_SKIP;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	if (mount(t_test_dir(), dir, NULL, MS_BIND, NULL) ||
	    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL)) {
		printf("SKIP read-only: bind mount: %s\n", strerror(errno));
		umount2(dir, MNT_DETACH);
		rmdir(dir);
		return T_EXIT_SKIP;
	}
	if (new_file(t_test_dir(), path, sizeof(path), &sh, &fd)) {
		bad = 1;
		goto umount;
	}
	name = strrchr(path, '/') + 1;
	snprintf(ropath, sizeof(ropath), "%s/%s", dir, name);
	rofd = open(ropath, O_RDWR);
	if (rofd >= 0 || errno != EROFS) {
		fprintf(stderr, "read-only: O_RDWR open: %s, want EROFS\n",
			rofd >= 0 ? "succeeded" : strerror(errno));
		bad = 1;
		if (rofd >= 0)
			close(rofd);
	}
	rofd = open(ropath, O_WRONLY);
	if (rofd >= 0 || errno != EROFS) {
		fprintf(stderr, "read-only: O_WRONLY open: %s, want EROFS\n",
			rofd >= 0 ? "succeeded" : strerror(errno));
		bad = 1;
		if (rofd >= 0)
			close(rofd);
	}
	rofd = open(ropath, O_RDONLY);
	if (rofd < 0) {
		fprintf(stderr, "read-only: O_RDONLY open: %s\n", strerror(errno));
		bad = 1;
		goto remove;
	}
	line[0] = 0;
	for (m = 0; m < T_NR_WMODES; m++) {
		int ret = 0;

		t_fill_pattern(wbuf, WLEN, WOFF, 2 + m);
		res = t_wmode_write(&ring, m, rofd, wbuf, WLEN, WOFF, 0);
		if (res != -EBADF) {
			fprintf(stderr, "read-only [%s]: write on an O_RDONLY fd returned %zd, want EBADF\n",
				t_wmode_name(m), res);
			ret = 1;
		}
		ret |= t_shadow_verify(&sh, fd, "read-only");
		bad |= ret;
		line_add(line, sizeof(line), m, ret, ret_str(res, WLEN));
	}
	printf("%s read-only (open for write: EROFS):%s\n", bad ? "FAIL" : "ok  ",
	       line);
	close(rofd);
remove:
	done_file(path, &sh, fd);
umount:
	if (umount2(dir, 0))
		umount2(dir, MNT_DETACH);
	rmdir(dir);
	return bad;
}

/*
 * Frozen file system: an image file in TEST_DIR, made with mkfs for
 * TEST_FS's type, loop-mounted with TEST_FS's options in this process's
 * mount namespace, frozen with FIFREEZE.
 */
static volatile int frozen_fd = -1;

static void thaw_and_exit(int sig)
{
	if (frozen_fd >= 0)
		ioctl(frozen_fd, FITHAW, 0);
	signal(sig, SIG_DFL);
	raise(sig);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct frozen_write {
	enum t_wmode m;
	int fd, mntfd;
	const void *buf;
	off_t off;
	int delay_ms;		/* thaw this long after the write starts */
	int thaw_early;		/* or as soon as the write returns */
	ssize_t ret;
	int started, done, thawing, thaw_err;
	int done_frozen;	/* returned before the thaw began */
	long start_ms, done_ms;
};

static void *frozen_writer(void *arg)
{
	struct frozen_write *fw = arg;

	fw->start_ms = now_ms();
	__atomic_store_n(&fw->started, 1, __ATOMIC_RELEASE);
	fw->ret = t_wmode_write(&ring, fw->m, fw->fd, fw->buf, WLEN, fw->off, 0);
	fw->done_frozen = !__atomic_load_n(&fw->thawing, __ATOMIC_ACQUIRE);
	fw->done_ms = now_ms();
	__atomic_store_n(&fw->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *thawer(void *arg)
{
	struct frozen_write *fw = arg;
	long deadline;

	while (!__atomic_load_n(&fw->started, __ATOMIC_ACQUIRE))
		usleep(1000);
	deadline = now_ms() + fw->delay_ms;
	while (now_ms() < deadline) {
		if (fw->thaw_early && __atomic_load_n(&fw->done, __ATOMIC_ACQUIRE))
			break;
		usleep(1000);
	}
	__atomic_store_n(&fw->thawing, 1, __ATOMIC_RELEASE);
	if (ioctl(fw->mntfd, FITHAW, 0))
		fw->thaw_err = errno;
	frozen_fd = -1;
	return NULL;
}

static int frozen_one(const char *mnt, int mntfd, enum t_wmode m,
		      const char *what, struct t_tally *t, long *ms)
{
	struct frozen_write fw = { .m = m, .mntfd = mntfd, .off = WOFF };
	pthread_t wthr, tthr;
	char path[PATH_MAX];
	struct t_shadow sh;
	ssize_t done;
	int ret = 1;

	if (new_file(mnt, path, sizeof(path), &sh, &fw.fd))
		return 1;
	t_fill_pattern(wbuf, WLEN, WOFF, 2 + m);
	fw.buf = wbuf;
	if (m == T_URING_NOWAIT) {
		/* Must not wait for the thaw: the watchdog only unsticks. */
		fw.delay_ms = WATCHDOG_MS;
		fw.thaw_early = 1;
	} else {
		fw.delay_ms = THAW_MS;
	}
	if (ioctl(mntfd, FIFREEZE, 0)) {
		ret = errno == EOPNOTSUPP ? T_EXIT_SKIP : 1;
		fprintf(stderr, "%s: FIFREEZE: %s\n", what, strerror(errno));
		goto out;
	}
	frozen_fd = mntfd;
	if (pthread_create(&tthr, NULL, thawer, &fw)) {
		ioctl(mntfd, FITHAW, 0);
		frozen_fd = -1;
		goto out;
	}
	if (pthread_create(&wthr, NULL, frozen_writer, &fw)) {
		__atomic_store_n(&fw.started, 1, __ATOMIC_RELEASE);
		pthread_join(tthr, NULL);
		goto out;
	}
	pthread_join(wthr, NULL);
	pthread_join(tthr, NULL);
	*ms = fw.done_ms - fw.start_ms;
	if (fw.thaw_err) {
		fprintf(stderr, "%s: FITHAW: %s\n", what, strerror(fw.thaw_err));
		goto out;
	}
	done = t_write_outcome(what, m, fw.fd, fw.ret, WLEN);
	if (done < 0)
		goto out;
	t_tally_add(t, fw.ret, WLEN);
	if (m == T_URING_NOWAIT && !fw.done_frozen) {
		fprintf(stderr, "%s: RWF_NOWAIT write waited %ld ms, until the fs was thawed (returned %zd)\n",
			what, fw.done_ms - fw.start_ms, fw.ret);
		goto out;
	}
	if (m == T_URING_NOWAIT && done) {
		fprintf(stderr, "%s: RWF_NOWAIT write to a frozen fs returned %zd, want EAGAIN\n",
			what, fw.ret);
		goto out;
	}
	if (done && fw.done_frozen) {
		fprintf(stderr, "%s: wrote %zd bytes to a frozen fs (returned after %ld ms, before FITHAW)\n",
			what, done, fw.done_ms - fw.start_ms);
		goto out;
	}
	t_shadow_put(&sh, wbuf, done, WOFF);
	ret = t_shadow_verify(&sh, fw.fd, what);
	if (!ret)
		ret = t_shadow_verify_stable(&sh, fw.fd, what);
out:
	close(fw.fd);
	unlink(path);
	t_shadow_free(&sh);
	return ret;
}

/*
 * Attach @img to a free loop device, which detaches itself once unmounted
 * and closed. Returns a read-only fd on it (a writer would make the mount
 * fail without CONFIG_BLK_DEV_WRITE_MOUNTED), its name in @dev.
 */
static int loop_attach(const char *img, char *dev, size_t dlen)
{
	struct loop_config cfg;
	int ctl, lfd, ifd, nr, tries, rofd;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	ifd = open(img, O_RDWR | O_CLOEXEC);
	if (ifd < 0) {
		close(ctl);
		return -errno;
	}
	for (tries = 0; tries < 10; tries++) {
		nr = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (nr < 0)
			break;
		snprintf(dev, dlen, "/dev/loop%d", nr);
		lfd = open(dev, O_RDWR | O_CLOEXEC);
		if (lfd < 0) {
			usleep(10000);
			continue;
		}
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = ifd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (!ioctl(lfd, LOOP_CONFIGURE, &cfg)) {
			rofd = open(dev, O_RDONLY | O_CLOEXEC);
			nr = errno;
			close(lfd);
			close(ifd);
			close(ctl);
			return rofd >= 0 ? rofd : -nr;
		}
		close(lfd);
		if (errno != EBUSY)
			break;
	}
	nr = errno;
	close(ifd);
	close(ctl);
	return -nr;
}

static int test_frozen(int have_mntns)
{
	char img[PATH_MAX], cmd[PATH_MAX + 128], dev[32], line[512], tb[32];
	char mnt[] = "/tmp/fallback-frozen.XXXXXX";
	char what[64], out[64];
	const char *fs = t_test_fs(), *type;
	long ms = 0;
	unsigned long flags = 0;
	struct t_tally t;
	struct statfs sfs;
	int ifd, lfd, mntfd, m, ret, bad = 0;
	off_t size;

	if (!have_mntns) {
		printf("SKIP frozen: no private mount namespace\n");
		return T_EXIT_SKIP;
	}
	if (!strncmp(fs, "xfs", 3) || (!strcmp(fs, "?") &&
	    !statfs(t_test_dir(), &sfs) && sfs.f_type == XFS_SUPER_MAGIC))
		type = "xfs";
	else
		type = "ext4";
	if (strstr(fs, "lazytime"))
		flags |= MS_LAZYTIME;
	/* mkfs.xfs wants 300 MiB; the image stays sparse. */
	size = !strcmp(type, "xfs") ? 320 << 20 : 64 << 20;

	snprintf(img, sizeof(img), "%s/fallback-frozen.%d.img", t_test_dir(),
		 (int)getpid());
	ifd = open(img, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (ifd < 0 || ftruncate(ifd, size)) {
		fprintf(stderr, "frozen: image %s: %s\n", img, strerror(errno));
		if (ifd >= 0)
			close(ifd);
		unlink(img);
		return 1;
	}
	close(ifd);
	if (!strcmp(type, "xfs"))
		snprintf(cmd, sizeof(cmd), "mkfs.xfs -q -f -K '%s' >/dev/null 2>&1", img);
	else
		snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F -E nodiscard '%s' >/dev/null 2>&1", img);
	ret = system(cmd);
	if (ret) {
		printf("SKIP frozen: '%s' failed (status %d)\n", cmd, ret);
		unlink(img);
		return T_EXIT_SKIP;
	}
	lfd = loop_attach(img, dev, sizeof(dev));
	if (lfd < 0) {
		printf("SKIP frozen: no loop device: %s\n", strerror(-lfd));
		unlink(img);
		return T_EXIT_SKIP;
	}
	if (!mkdtemp(mnt) || mount(dev, mnt, type, flags, NULL)) {
		printf("SKIP frozen: mount %s (%s) on %s: %s\n", dev, type, mnt,
		       strerror(errno));
		rmdir(mnt);
		close(lfd);
		unlink(img);
		return T_EXIT_SKIP;
	}
	mntfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (mntfd < 0 || t_nowait_probe(mnt) < 0) {
		bad = 1;
		goto umount;
	}

	line[0] = 0;
	for (m = 0; m < T_NR_WMODES; m++) {
		snprintf(what, sizeof(what), "frozen %s [%s]", type,
			 t_wmode_name(m));
		memset(&t, 0, sizeof(t));
		ret = frozen_one(mnt, mntfd, m, what, &t, &ms);
		if (ret == T_EXIT_SKIP) {
			printf("SKIP frozen: %s cannot be frozen\n", type);
			bad = T_EXIT_SKIP;
			goto umount;
		}
		bad |= ret;
		snprintf(out, sizeof(out), "%s(%ldms)",
			 t_tally_str(&t, tb, sizeof(tb)), ms);
		line_add(line, sizeof(line), m, ret, out);
	}
	printf("%s frozen (%s image%s):%s\n", bad ? "FAIL" : "ok  ", type,
	       flags & MS_LAZYTIME ? ", lazytime" : "", line);
umount:
	if (mntfd >= 0)
		close(mntfd);
	if (umount2(mnt, 0)) {
		fprintf(stderr, "frozen: umount %s: %s\n", mnt, strerror(errno));
		umount2(mnt, MNT_DETACH);
	}
	rmdir(mnt);
	close(lfd);
	unlink(img);
	return bad;
}

int main(void)
{
	int ret, failed = 0, skipped = 0, have_mntns;
	struct sigaction sa = { .sa_handler = thaw_and_exit };

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Before any thread: io-wq workers share fs_struct, so unshare fails. */
	have_mntns = !unshare(CLONE_NEWNS) &&
		     !mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	if (!have_mntns)
		printf("note: no private mount namespace: %s\n", strerror(errno));
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	printf("fallback-special: fs %s, dir %s\n", t_test_fs(), t_test_dir());

	failed += test_suid();
	ret = test_fcaps();
	if (ret == T_EXIT_SKIP)
		skipped++;
	else
		failed += !!ret;
	failed += test_sync();
	ret = test_append_only();
	if (ret == T_EXIT_SKIP)
		skipped++;
	else
		failed += !!ret;
	ret = test_read_only(have_mntns);
	if (ret == T_EXIT_SKIP)
		skipped++;
	else
		failed += ret;
	ret = test_frozen(have_mntns);
	if (ret == T_EXIT_SKIP)
		skipped++;
	else
		failed += !!ret;

	io_uring_queue_exit(&ring);
	if (failed) {
		fprintf(stderr, "fallback-special: %d case(s) failed (fs %s)\n",
			failed, t_test_fs());
		return T_EXIT_FAIL;
	}
	if (skipped) {
		printf("fallback-special: %d case(s) skipped\n", skipped);
		return T_EXIT_SKIP;
	}
	return T_EXIT_PASS;
}
