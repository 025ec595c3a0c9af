/* SPDX-License-Identifier: MIT */
/*
 * Description: overwrites of a cached file from every kind of user source
 *		must write exactly the source's bytes, through pwritev(),
 *		pwritev2(RWF_NOWAIT) and io_uring IORING_OP_WRITEV alike. The
 *		series pins a user source's pages and copies from them, or
 *		copies the source into a buffer where it cannot pin them
 *		without a fault (patches 26-29); these are the sources that
 *		take each way:
 *		- iovecs with empty segments, segments that straddle pages and
 *		  start at odd offsets; 17 pages in one 64 KiB write (more
 *		  than one pinning batch); 12 segments of 5000 bytes (more
 *		  pages than are described inline); 40 segments of 100 bytes
 *		  on 40 pages (too many pieces to pin: copied);
 *		- a source mapped from the file being written (another range;
 *		  the series takes such a write on its exclusive path);
 *		- a source mapped from another file whose pages are not cached
 *		  (not present: RWF_NOWAIT may return -EAGAIN, io_uring's
 *		  worker faults it in);
 *		- anonymous memory never touched (the zero page);
 *		- a buffer shared copy-on-write with a child after fork()
 *		  (not pinnable without unsharing: copied);
 *		- a bad address, alone and after a good segment: -EFAULT, or
 *		  a short write of the good part.
 *		After every write the whole file is read back and compared
 *		with what the writes should have left. Not a feature test: the
 *		outcome must be the same on 6.12.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "helpers.h"

#define FSIZE		(256 * 1024)
#define PG		4096
#define MAXSEG		40

enum how { H_PWRITEV, H_NOWAIT, H_URING, H_NR };
static const char *const how_name[] = { "pwritev", "pwritev2(RWF_NOWAIT)",
					"io_uring writev" };

static struct io_uring ring;
static unsigned char *image;	/* what the file must hold */
static unsigned char *rbuf;
static int fd;
static uint32_t gen = 1;

static int verify(const char *what, enum how h)
{
	ssize_t n = pread(fd, rbuf, FSIZE, 0);
	size_t i;

	if (n != FSIZE) {
		fprintf(stderr, "%s via %s: read back %zd of %d bytes\n",
			what, how_name[h], n, FSIZE);
		return 1;
	}
	if (!memcmp(rbuf, image, FSIZE))
		return 0;
	for (i = 0; i < FSIZE && rbuf[i] == image[i]; i++)
		;
	fprintf(stderr, "%s via %s: file byte %zu is 0x%02x, expected 0x%02x\n",
		what, how_name[h], i, rbuf[i], image[i]);
	return 1;
}

static ssize_t do_write(enum how h, const struct iovec *iov, int n, off_t off)
{
	ssize_t ret;

	switch (h) {
	case H_PWRITEV:
		ret = pwritev(fd, iov, n, off);
		return ret < 0 ? -errno : ret;
	case H_NOWAIT:
		ret = pwritev2(fd, iov, n, off, RWF_NOWAIT);
		return ret < 0 ? -errno : ret;
	default:
		return t_uring_pwritev(&ring, fd, iov, n, off, 0);
	}
}

/*
 * Write @iov at @off by @h. A complete write updates the image from the
 * source (read from the iovecs now, before the write: a source mapped
 * from the file itself must be captured first); -EAGAIN from
 * RWF_NOWAIT and, if @may_fault, -EFAULT or a short write of @good bytes
 * are allowed. Then the file must equal the image.
 */
static int check_write(const char *what, enum how h, const struct iovec *iov,
		       int n, off_t off, int may_fault, size_t good)
{
	unsigned char *src;
	size_t total = 0, at = 0;
	ssize_t ret;
	int i;

	for (i = 0; i < n; i++)
		total += iov[i].iov_len;
	src = malloc(total ? total : 1);
	if (!src)
		return 1;
	if (!may_fault)
		for (i = 0; i < n; i++) {
			memcpy(src + at, iov[i].iov_base, iov[i].iov_len);
			at += iov[i].iov_len;
		}
	else if (good)
		memcpy(src, iov[0].iov_base, good);

	ret = do_write(h, iov, n, off);
	if (ret == (ssize_t)total && !may_fault) {
		memcpy(image + off, src, total);
	} else if ((ret == -EAGAIN || ret == -EOPNOTSUPP) && h == H_NOWAIT) {
		/* nothing written (6.12's ext4 has no RWF_NOWAIT writes) */
	} else if (may_fault && good && ret == (ssize_t)good) {
		memcpy(image + off, src, good);
	} else if (may_fault && ret == -EFAULT) {
		/* the good part may have been written before the fault */
		if (good && pread(fd, rbuf, good, off) == (ssize_t)good &&
		    !memcmp(rbuf, src, good))
			memcpy(image + off, src, good);
	} else {
		fprintf(stderr, "%s via %s: wrote %zd of %zu bytes (%s)\n",
			what, how_name[h], ret, total,
			ret < 0 ? strerror(-ret) : "short");
		free(src);
		return 1;
	}
	free(src);
	return verify(what, h);
}

/* Segments of @len bytes at odd offsets in @area, with empty ones. */
static int build_iov(struct iovec *iov, unsigned char *area,
		     const size_t *lens, int n)
{
	size_t at = PG - 96;	/* the first segment straddles a page */
	int i;

	for (i = 0; i < n; i++) {
		t_fill_pattern(area + at, lens[i], at, gen++);
		iov[i].iov_base = area + at;
		iov[i].iov_len = lens[i];
		at += lens[i] < 1000 ? PG : lens[i] + 1000 + 333 * i;
	}
	return n;
}

static int case_iovecs(unsigned char *area)
{
	static const size_t odd[] = { 100, 0, 4000, 0, 3000, 1 };
	static const size_t big[] = { 65536 };
	size_t many[12], tiny[40];
	struct iovec iov[MAXSEG];
	int h, i, n, bad = 0;

	for (i = 0; i < 12; i++)
		many[i] = 5000 + (i & 1);
	for (i = 0; i < 40; i++)
		tiny[i] = 100;
	for (h = 0; h < H_NR; h++) {
		n = build_iov(iov, area, odd, 6);
		bad |= check_write("odd segments", h, iov, n, 1000 + h, 0, 0);
		/* 64 KiB from an unaligned address: 17 pages */
		n = build_iov(iov, area, big, 1);
		bad |= check_write("64 KiB, 17 pages", h, iov, n,
				   70000 + 7 * h, 0, 0);
		n = build_iov(iov, area, many, 12);
		bad |= check_write("12 segments", h, iov, n, 140000 + h, 0, 0);
		n = build_iov(iov, area, tiny, 40);
		bad |= check_write("40 segments on 40 pages", h, iov, n,
				   210000 + h, 0, 0);
	}
	return bad;
}

static int case_same_file(void)
{
	struct iovec iov;
	unsigned char *map;
	int h, bad = 0;

	map = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap of the file");
		return 1;
	}
	for (h = 0; h < H_NR; h++) {
		/* file [200000, 208192) from the mapping of [4000, 12192) */
		iov.iov_base = map + 4000 + h * 512;
		iov.iov_len = 8192;
		bad |= check_write("source mapped from the same file", h,
				   &iov, 1, 200000 + h * 16, 0, 0);
	}
	munmap(map, FSIZE);
	return bad;
}

static int case_uncached_file(void)
{
	char path[256];
	struct iovec iov;
	unsigned char *map, *buf;
	int other, h, bad = 0;

	other = t_create_file("source-kinds-src", 0, path, sizeof(path));
	if (other < 0)
		return 1;
	unlink(path);
	buf = malloc(FSIZE);
	if (!buf)
		return 1;
	t_fill_pattern(buf, FSIZE, 0, gen++);
	if (pwrite(other, buf, FSIZE, 0) != FSIZE || fsync(other)) {
		perror("source file");
		return 1;
	}
	free(buf);
	map = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, other, 0);
	if (map == MAP_FAILED) {
		perror("mmap of the source file");
		return 1;
	}
	for (h = 0; h < H_NR; h++) {
		/* drop its pages, so that the source must be read in */
		posix_fadvise(other, 0, FSIZE, POSIX_FADV_DONTNEED);
		iov.iov_base = map + 8192 * (h + 1) + 123;
		iov.iov_len = 12000;
		bad |= check_write("source from an uncached file", h, &iov, 1,
				   20000 + h * 12000, 0, 0);
	}
	munmap(map, FSIZE);
	close(other);
	return bad;
}

static int case_zero_page(void)
{
	struct iovec iov;
	unsigned char *anon;
	int h, bad = 0;

	for (h = 0; h < H_NR; h++) {
		anon = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (anon == MAP_FAILED)
			return 1;
		iov.iov_base = anon + 100;
		iov.iov_len = 3 * PG;
		bad |= check_write("untouched anonymous memory", h, &iov, 1,
				   100000 + h * 4 * PG, 0, 0);
		munmap(anon, 4 * PG);
	}
	return bad;
}

static int case_after_fork(unsigned char *area)
{
	static const size_t lens[] = { 5000, 7000 };
	struct iovec iov[2];
	pid_t child;
	int h, bad = 0;

	for (h = 0; h < H_NR; h++) {
		build_iov(iov, area, lens, 2);
		child = fork();
		if (child < 0) {
			perror("fork");
			return 1;
		}
		if (!child) {
			pause();
			_exit(0);
		}
		bad |= check_write("buffer shared with a child after fork", h,
				   iov, 2, 150000 + h * 100, 0, 0);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	return bad;
}

static int case_bad_address(unsigned char *area)
{
	struct iovec iov[2];
	int h, bad = 0;

	for (h = 0; h < H_NR; h++) {
		iov[0].iov_base = (void *)8;
		iov[0].iov_len = PG;
		bad |= check_write("a bad address", h, iov, 1, 40000, 1, 0);
		t_fill_pattern(area, 2000, 0, gen++);
		iov[0].iov_base = area;
		iov[0].iov_len = 2000;
		iov[1].iov_base = (void *)8;
		iov[1].iov_len = 2000;
		bad |= check_write("a good segment, then a bad address", h,
				   iov, 2, 50000 + h, 1, 2000);
	}
	return bad;
}

int main(void)
{
	unsigned char *area;
	int ret, bad = 0;

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	image = malloc(FSIZE);
	rbuf = malloc(FSIZE);
	area = mmap(NULL, 4 * FSIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!image || !rbuf || area == MAP_FAILED)
		return T_EXIT_FAIL;
	fd = t_create_file("source-kinds", 0, NULL, 0);
	if (fd < 0)
		return T_EXIT_FAIL;
	t_fill_pattern(image, FSIZE, 0, 0);
	if (pwrite(fd, image, FSIZE, 0) != FSIZE) {
		perror("fill");
		return T_EXIT_FAIL;
	}
	/* pwritev() takes the series' path only in a file NOWAIT writes use. */
	if (t_note_nowait_use(fd))
		return T_EXIT_FAIL;

	bad |= case_iovecs(area);
	bad |= case_same_file();
	bad |= case_uncached_file();
	bad |= case_zero_page();
	bad |= case_after_fork(area);
	bad |= case_bad_address(area);
	if (bad) {
		fprintf(stderr, "source-kinds: the file does not hold what was written (fs %s)\n",
			t_test_fs());
		return T_EXIT_FAIL;
	}
	close(fd);
	io_uring_queue_exit(&ring);
	return T_EXIT_PASS;
}
