/* SPDX-License-Identifier: MIT */
/*
 * Description: bad input to buffered writes returns what 6.12 returns
 *		and leaves no data it did not report.
 *
 * (The expected value is the same on every file system config we test:
 * cases whose 6.12 result depends on the file system, such as offsets
 * beyond ext4's s_maxbytes but inside XFS's, are left out.)
 *
 * Each case is issued four ways: io_uring write, io_uring write with
 * RWF_NOWAIT, pwritev2(2) and pwritev2(RWF_NOWAIT). The expected result is
 * a table here, written from what unpatched 6.12 returns (the suite runs
 * this test on the baseline kernel too, so the table is checked against
 * it): bad and closed fds, read-only fds, directories, negative offsets,
 * offsets at and past the maximum file size, lengths that overflow,
 * unmapped, PROT_NONE and partly unmapped buffers, iovecs with a bad
 * entry, unknown RWF flags, and writes past RLIMIT_FSIZE.
 *
 * A NOWAIT write may instead return -EAGAIN (or -EOPNOTSUPP, which is
 * what 6.12 ext4 returns for every NOWAIT buffered write): the test then
 * retries without RWF_NOWAIT, as an application would, and the retry must
 * give the expected result. After every write the file must hold exactly
 * its old contents plus the bytes the write reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "helpers.h"

#define FILE_SIZE	(256 * 1024)
#define PAGE		4096

static struct io_uring ring;
static char path[PATH_MAX], dir_path[PATH_MAX];
static int rw_fd;
static unsigned char *image, *rbuf, *good;
static unsigned char *hole;	/* an unmapped page */
static unsigned char *noaccess;	/* a PROT_NONE page */
static unsigned char *half;	/* one mapped page followed by an unmapped one */
static struct iovec iov[4];
static uint32_t gen = 1;

static int setup_rw(void) { return rw_fd; }
static int setup_bad_fd(void) { return -1; }
/* Setups return a descriptor, -1 for the bad one, or -errno. */
static int setup_open(const char *p, int flags)
{
	int fd = open(p, flags);

	return fd < 0 ? -errno : fd;
}

static int setup_rdonly(void) { return setup_open(path, O_RDONLY); }
static int setup_dir(void) { return setup_open(dir_path, O_RDONLY | O_DIRECTORY); }

static int setup_closed(void)
{
	int fd = setup_open(path, O_RDWR);

	if (fd >= 0)
		close(fd);
	return fd;
}

enum { IOV_GOOD, IOV_HOLE, IOV_NOACCESS, IOV_HALF, IOV_BAD_MIDDLE,
       IOV_OVERFLOW };

/* Build the iovecs for iov kind @kind; returns how many. */
static int make_iov(int kind, size_t len)
{
	switch (kind) {
	case IOV_GOOD:
		iov[0] = (struct iovec){ good, len };
		return 1;
	case IOV_HOLE:
		iov[0] = (struct iovec){ hole, PAGE };
		return 1;
	case IOV_NOACCESS:
		iov[0] = (struct iovec){ noaccess, PAGE };
		return 1;
	case IOV_HALF:
		iov[0] = (struct iovec){ half, 2 * PAGE };
		return 1;
	case IOV_BAD_MIDDLE:
		iov[0] = (struct iovec){ good, PAGE };
		iov[1] = (struct iovec){ hole, PAGE };
		iov[2] = (struct iovec){ good + PAGE, PAGE };
		return 3;
	case IOV_OVERFLOW:
		iov[0] = (struct iovec){ good, SSIZE_MAX };
		iov[1] = (struct iovec){ good, PAGE };
		return 2;
	}
	return 0;
}

static const struct {
	const char *name;
	int (*setup)(void);
	off_t off;
	int iov_kind;
	int rw_flags;
	long expect;
	rlim_t fsize;
} cases[] = {
	{ "bad-fd",		setup_bad_fd,	0, IOV_GOOD, 0, -EBADF, 0 },
	{ "closed-fd",		setup_closed,	0, IOV_GOOD, 0, -EBADF, 0 },
	{ "read-only-fd",	setup_rdonly,	0, IOV_GOOD, 0, -EBADF, 0 },
	{ "directory",		setup_dir,	0, IOV_GOOD, 0, -EBADF, 0 },
	{ "negative-offset",	setup_rw,	-8192, IOV_GOOD, 0, -EINVAL, 0 },
	{ "offset-llong-max",	setup_rw,	LLONG_MAX - 100, IOV_GOOD, 0, -EINVAL, 0 },
	{ "length-overflow",	setup_rw,	0, IOV_OVERFLOW, 0, -EFAULT, 0 },
	{ "unmapped-buffer",	setup_rw,	PAGE, IOV_HOLE, 0, -EFAULT, 0 },
	{ "prot-none-buffer",	setup_rw,	PAGE, IOV_NOACCESS, 0, -EFAULT, 0 },
	{ "half-unmapped-buffer", setup_rw,	2 * PAGE, IOV_HALF, 0, PAGE, 0 },
	{ "bad-middle-iovec",	setup_rw,	8 * PAGE, IOV_BAD_MIDDLE, 0, PAGE, 0 },
	{ "unknown-rwf-flag",	setup_rw,	0, IOV_GOOD, 0x40000000, -EOPNOTSUPP, 0 },
	{ "inside-rlimit-fsize", setup_rw,	0, IOV_GOOD, 0, PAGE, 64 * 1024 },
	{ "past-rlimit-fsize",	setup_rw,	64 * 1024, IOV_GOOD, 0, -EFBIG, 64 * 1024 },
	{ "straddle-rlimit-fsize", setup_rw,	64 * 1024 - 1024, IOV_GOOD, 0, 1024, 64 * 1024 },
};

static long do_write(int fd, int nr, off_t off, int flags, int via_uring)
{
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	long ret;

	if (!via_uring) {
		ret = pwritev2(fd, iov, nr, off, flags);
		return ret < 0 ? -errno : ret;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_writev(sqe, fd, iov, nr, off);
	sqe->rw_flags = flags;
	ret = io_uring_submit(&ring);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = io_uring_wait_cqe(&ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	return ret;
}

/* The file must hold image[]: old contents plus what writes reported. */
static int check_file(const char *what)
{
	struct stat st;
	ssize_t n;
	size_t i;

	if (fstat(rw_fd, &st) || st.st_size != FILE_SIZE) {
		fprintf(stderr, "%s: file size %lld, expected %d\n", what,
			(long long)st.st_size, FILE_SIZE);
		return 1;
	}
	n = pread(rw_fd, rbuf, FILE_SIZE, 0);
	if (n != FILE_SIZE) {
		fprintf(stderr, "%s: read back %zd bytes\n", what, n);
		return 1;
	}
	for (i = 0; i < FILE_SIZE; i++) {
		if (rbuf[i] != image[i]) {
			fprintf(stderr, "%s: byte %zu is 0x%02x, expected 0x%02x (data not reported by the write)\n",
				what, i, rbuf[i], image[i]);
			return 1;
		}
	}
	return 0;
}

static const char *result_str(long r, char *buf, size_t len)
{
	if (r >= 0)
		snprintf(buf, len, "%ld bytes", r);
	else
		snprintf(buf, len, "%s", t_errno_name((int)-r));
	return buf;
}

static int run_case(unsigned int c, int mode)
{
	static const char *const mode_name[] = {
		"uring", "uring-nowait", "pwritev2", "pwritev2-nowait",
	};
	int via_uring = mode < 2, nowait = mode & 1;
	struct rlimit old, lim;
	char what[96], got[32], want[32];
	long ret, retry = 0;
	int fd, nr, failed = 0;

	snprintf(what, sizeof(what), "%s %s", cases[c].name, mode_name[mode]);
	fd = cases[c].setup();
	if (fd < 0 && cases[c].setup != setup_bad_fd) {
		fprintf(stderr, "%s: setup failed: %s\n", what,
			t_errno_name(-fd));
		return 1;
	}
	t_fill_pattern(good, 4 * PAGE, cases[c].off, ++gen);
	nr = make_iov(cases[c].iov_kind, PAGE);
	if (cases[c].fsize) {
		getrlimit(RLIMIT_FSIZE, &old);
		lim = old;
		lim.rlim_cur = cases[c].fsize;
		setrlimit(RLIMIT_FSIZE, &lim);
	}
	ret = do_write(fd, nr, cases[c].off,
		       cases[c].rw_flags | (nowait ? RWF_NOWAIT : 0), via_uring);
	if (nowait && (ret == -EAGAIN || ret == -EOPNOTSUPP) &&
	    cases[c].expect != -EOPNOTSUPP) {
		char refused[128];

		/* A refused write must have written nothing. */
		snprintf(refused, sizeof(refused), "%s (refused)", what);
		failed |= check_file(refused);
		retry = ret;
		ret = do_write(fd, nr, cases[c].off, cases[c].rw_flags,
			       via_uring);
	}
	if (cases[c].fsize)
		setrlimit(RLIMIT_FSIZE, &old);
	if (fd >= 0 && fd != rw_fd)
		close(fd);

	if (ret != cases[c].expect) {
		fprintf(stderr, "%s: returned %s%s, 6.12 returns %s\n", what,
			result_str(ret, got, sizeof(got)),
			retry ? " on the blocking retry" : "",
			result_str(cases[c].expect, want, sizeof(want)));
		failed = 1;
	}
	if (ret > 0) {
		/* The reported bytes came from the start of the iovecs. */
		size_t done = 0;
		int i;

		for (i = 0; i < nr && done < (size_t)ret; i++) {
			size_t n = iov[i].iov_len;

			if (n > (size_t)ret - done)
				n = (size_t)ret - done;
			memcpy(image + cases[c].off + done, iov[i].iov_base, n);
			done += n;
		}
	}
	failed |= check_file(what);
	printf("%-24s %-16s %s%s\n", cases[c].name, mode_name[mode],
	       result_str(ret, got, sizeof(got)),
	       retry ? (retry == -EAGAIN ? " (after EAGAIN)" :
			" (after EOPNOTSUPP)") : "");
	return failed;
}

int main(void)
{
	unsigned int c;
	int mode, failed = 0, ret;
	unsigned char *map;

	t_seed("bad-input");
	signal(SIGXFSZ, SIG_IGN);
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return T_EXIT_SKIP;
	}
	image = malloc(FILE_SIZE);
	rbuf = malloc(FILE_SIZE);
	map = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!image || !rbuf || map == MAP_FAILED) {
		perror("buffers");
		return T_EXIT_FAIL;
	}
	/* good: 4 pages; hole: unmapped; noaccess: PROT_NONE; half: 1 + hole */
	good = map;
	half = map + 5 * PAGE;
	hole = map + 6 * PAGE;
	noaccess = map + 4 * PAGE;
	if (munmap(hole, PAGE) || mprotect(noaccess, PAGE, PROT_NONE)) {
		perror("munmap/mprotect");
		return T_EXIT_FAIL;
	}
	memset(half, 0x5a, PAGE);

	rw_fd = t_create_file("bad-input", 0, path, sizeof(path));
	snprintf(dir_path, sizeof(dir_path), "%s", t_test_dir());
	t_fill_pattern(image, FILE_SIZE, 0, gen);
	if (pwrite(rw_fd, image, FILE_SIZE, 0) != FILE_SIZE || fsync(rw_fd) ||
	    pread(rw_fd, rbuf, FILE_SIZE, 0) != FILE_SIZE) {
		perror("prefill");
		return T_EXIT_FAIL;
	}
	printf("fs %s\n", t_test_fs());
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (mode = 0; mode < 4; mode++)
			failed |= run_case(c, mode);
	close(rw_fd);
	io_uring_queue_exit(&ring);
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
