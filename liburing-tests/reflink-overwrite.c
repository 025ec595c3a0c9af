/* SPDX-License-Identifier: MIT */
/*
 * Description: overwrites of cached blocks that another file shares
 *		(FICLONE, FICLONERANGE) must not go in place. A cached file
 *		is cloned whole and in part, then both the original and the
 *		clone are overwritten in their shared ranges, the four ways
 *		of t_wmode_write() (io_uring and pwritev2(), with and without
 *		RWF_NOWAIT); after each write, and again after the page cache
 *		is dropped, both files must hold what was written to each. The overwrite path must see the sharing (XFS marks
 *		such inodes for copy-on-write) and leave such writes to the
 *		copy-on-write path. Must pass on every kernel; file systems
 *		without reflink (ext4) skip.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/fs.h>

#include "helpers.h"

#define FSIZE		(256 * 1024)
#define CLONE_OFF	(64 * 1024)	/* FICLONERANGE: this range of a... */
#define CLONE_LEN	(128 * 1024)	/* ...into the same range of b */
#define WLEN		(4 * 1024)
#define NR_WRITES	24

static struct io_uring ring;
static unsigned char *buf, *sha, *shb;

/* Fresh file holding @sh, fsynced and read back into the cache. */
static int new_file(const char *tag, const unsigned char *sh, char *path,
		    size_t plen)
{
	int fd = t_create_file(tag, 0, path, plen);

	if (pwrite(fd, sh, FSIZE, 0) != FSIZE || fsync(fd) ||
	    pread(fd, buf, FSIZE, 0) != FSIZE) {
		perror("setup");
		close(fd);
		return -1;
	}
	/* Blocking writes too go to the overwrite path's checks. */
	if (t_note_nowait_use(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Does [off, off + len) of @fd hold what @sh holds? Prints if not. */
static int check(int fd, const unsigned char *sh, const char *who,
		 const char *when, off_t off, size_t len)
{
	size_t i;

	if (pread(fd, buf, len, off) != (ssize_t)len) {
		fprintf(stderr, "%s %s: pread: %s\n", who, when, strerror(errno));
		return 1;
	}
	for (i = 0; i < len; i++)
		if (buf[i] != sh[off + i])
			break;
	if (i == len)
		return 0;
	printf("%s %s: byte %lld differs from what was written to it: a shared block was overwritten in place\n",
	       who, when, (long long)(off + i));
	return 1;
}

/*
 * Overwrite offsets inside [lo, hi) of @wfd with generation @gen, the four
 * ways of t_wmode_write() in turn, recording in @wsh what must be in the
 * file; after each write, @wfd must hold what it recorded and @ofd (the
 * other file) what @osh holds. Returns the number of failed checks, or -1
 * if an error stops it.
 */
static int overwrite(int wfd, int ofd, unsigned char *wsh,
		     const unsigned char *osh, const char *wname,
		     const char *oname, off_t lo, off_t hi, uint32_t gen)
{
	int i, bad = 0;

	for (i = 0; i < NR_WRITES; i++) {
		enum t_wmode m = i % T_NR_WMODES;
		off_t off = lo + (off_t)(rand() % ((hi - lo) / WLEN)) * WLEN;
		ssize_t ret, done;

		t_fill_pattern(wsh + FSIZE, WLEN, off, gen);
		ret = t_wmode_write(&ring, m, wfd, wsh + FSIZE, WLEN, off, 0);
		done = t_write_outcome(wname, m, wfd, ret, WLEN);
		if (done < 0)
			return -1;
		memcpy(wsh + off, wsh + FSIZE, done);
		bad += check(wfd, wsh, wname, "after its write", off, WLEN);
		bad += check(ofd, osh, oname, "after the other's write", off,
			     WLEN);
	}
	return bad;
}

static int run(int whole)
{
	char pa[PATH_MAX], pb[PATH_MAX];
	off_t lo = whole ? 0 : CLONE_OFF;
	off_t hi = whole ? FSIZE : CLONE_OFF + CLONE_LEN;
	const char *how = whole ? "FICLONE" : "FICLONERANGE";
	int a, b, bad = 0, r;

	/* Shadows, each followed by a WLEN scratch area for the source. */
	t_fill_pattern(sha, FSIZE, 0, 1);
	t_fill_pattern(shb, FSIZE, 0, 2);
	a = new_file("reflink-a", sha, pa, sizeof(pa));
	b = new_file("reflink-b", shb, pb, sizeof(pb));
	if (a < 0 || b < 0)
		return 1;
	if (whole) {
		r = ioctl(b, FICLONE, a);
	} else {
		struct file_clone_range fcr = {
			.src_fd = a, .src_offset = CLONE_OFF,
			.src_length = CLONE_LEN, .dest_offset = CLONE_OFF,
		};

		r = ioctl(b, FICLONERANGE, &fcr);
	}
	if (r) {
		int err = errno;

		close(a);
		close(b);
		t_remove_file(pa);
		t_remove_file(pb);
		if (err == EOPNOTSUPP || err == EXDEV || err == EINVAL ||
		    err == ENOTTY) {
			printf("SKIP %s: %s (no reflink on %s)\n", how,
			       strerror(err), t_test_fs());
			return T_EXIT_SKIP;
		}
		fprintf(stderr, "%s: %s\n", how, strerror(err));
		return 1;
	}
	memcpy(shb + lo, sha + lo, hi - lo);
	/* Read the clone's shared range into the cache. */
	bad += check(b, shb, "clone", "after the clone", 0, FSIZE);

	/* Write the original, then the clone, in their shared range. */
	r = overwrite(a, b, sha, shb, "original", "clone", lo, hi, 3);
	if (r < 0)
		return 1;
	bad += r;
	r = overwrite(b, a, shb, sha, "clone", "original", lo, hi, 4);
	if (r < 0)
		return 1;
	bad += r;

	/* What is on disk, not in the cache. */
	if (fsync(a) || fsync(b) ||
	    posix_fadvise(a, 0, 0, POSIX_FADV_DONTNEED) ||
	    posix_fadvise(b, 0, 0, POSIX_FADV_DONTNEED)) {
		perror("fsync/fadvise");
		return 1;
	}
	bad += check(a, sha, "original", "from disk", 0, FSIZE);
	bad += check(b, shb, "clone", "from disk", 0, FSIZE);
	printf("%s: %d writes each way, %d bad checks\n", how, NR_WRITES, bad);
	close(a);
	close(b);
	t_remove_file(pa);
	t_remove_file(pb);
	return bad ? 1 : 0;
}

int main(void)
{
	struct t_cases cs = { .test = "reflink-overwrite" };
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(t_seed("reflink-overwrite"));
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return T_EXIT_FAIL;
	}
	buf = malloc(FSIZE);
	sha = malloc(FSIZE + WLEN);
	shb = malloc(FSIZE + WLEN);
	if (!buf || !sha || !shb)
		return T_EXIT_FAIL;
	printf("reflink-overwrite: fs %s, dir %s\n", t_test_fs(), t_test_dir());
	t_cases_add(&cs, run(1));
	t_cases_add(&cs, run(0));
	io_uring_queue_exit(&ring);
	return t_cases_exit(&cs);
}
