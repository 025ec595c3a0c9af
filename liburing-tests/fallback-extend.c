/* SPDX-License-Identifier: MIT */
/*
 * Description: buffered writes that the inline overwrite path must leave
 *		alone because they move EOF or need blocks allocated: append
 *		at EOF, O_APPEND, RWF_APPEND, straddling EOF, past EOF, into a
 *		punched hole and into an unwritten (fallocated) extent, with
 *		and without the target pages cached (the whole file is first
 *		overwritten in place, so that a kernel that remembers which
 *		ranges it found mapped must see the hole appear). Each case
 *		runs on a fresh file in four modes: io_uring and pwritev2(),
 *		with RWF_NOWAIT (allowed: EAGAIN, the full length, or an
 *		honest short count; see t_write_outcome()) and without (must
 *		complete). The file is compared with a shadow copy after the
 *		write, and again from disk after fsync. Must pass on every
 *		kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "helpers.h"

#define BASE		(64 * 1024)	/* data every case starts with */
#define SPARSE_SIZE	(256 * 1024)	/* size of the hole/unwritten files */
#define GAP_OFF		(64 * 1024)	/* the hole or unwritten extent... */
#define GAP_LEN		(128 * 1024)	/* ...between the two data ranges */
#define CAP		(2 * 1024 * 1024)

enum prep {
	P_PLAIN,	/* BASE bytes, fsynced, cached */
	P_SHORT_EOF,	/* same, truncated to end mid-page */
	P_HOLE,		/* data, punched hole, data */
	P_HOLE_CACHED,	/* same, hole read into the page cache */
	P_UNWRITTEN,	/* data, unwritten extent, data */
	P_UNWRITTEN_CACHED,
	P_PREALLOC,	/* BASE bytes, then unwritten blocks past EOF */
};

struct xcase {
	const char *name;
	enum prep prep;
	int open_flags;
	int rw_flags;
	off_t off;		/* -1: at EOF */
	unsigned int len;
};

static const struct xcase cases[] = {
	{ "append",		P_PLAIN,	0, 0, -1, 6000 },
	{ "append-page",	P_PLAIN,	0, 0, -1, 4096 },
	{ "append-midpage-eof",	P_SHORT_EOF,	0, 0, -1, 3000 },
	{ "o-append",		P_PLAIN,	O_APPEND, 0, 100, 5000 },
	{ "rwf-append",		P_PLAIN,	0, RWF_APPEND, 100, 5000 },
	{ "straddle-eof",	P_PLAIN,	0, 0, BASE - 1000, 5000 },
	{ "one-byte-past-eof",	P_PLAIN,	0, 0, BASE - 4096, 4097 },
	{ "extend-in-eof-page",	P_SHORT_EOF,	0, 0, BASE - 4096, 4000 },
	{ "past-eof",		P_PLAIN,	0, 0, BASE + 10000, 3000 },
	{ "far-past-eof",	P_PLAIN,	0, 0, 1024 * 1024 + 512, 8192 },
	{ "hole",		P_HOLE,		0, 0, 100 * 1024 + 17, 8000 },
	{ "hole-cached",	P_HOLE_CACHED,	0, 0, 100 * 1024 + 17, 8000 },
	{ "hole-page-cached",	P_HOLE_CACHED,	0, 0, 128 * 1024, 4096 },
	{ "hole-straddle",	P_HOLE_CACHED,	0, 0, GAP_OFF - 4000, 8000 },
	{ "unwritten",		P_UNWRITTEN,	0, 0, 100 * 1024 + 17, 8000 },
	{ "unwritten-cached",	P_UNWRITTEN_CACHED, 0, 0, 100 * 1024 + 17, 8000 },
	{ "unwritten-straddle",	P_UNWRITTEN_CACHED, 0, 0, GAP_OFF - 4000, 8000 },
	{ "prealloc-past-eof",	P_PREALLOC,	0, 0, BASE + 5000, 8000 },
};

static struct io_uring ring;
static unsigned char *wbuf, *rbuf;

static int put(int fd, struct t_shadow *sh, off_t off, size_t len,
	       uint32_t gen, const char *what)
{
	t_fill_pattern(wbuf, len, off, gen);
	if (pwrite(fd, wbuf, len, off) != (ssize_t)len) {
		fprintf(stderr, "%s: setup write %zu at %lld: %s\n", what, len,
			(long long)off, strerror(errno));
		return 1;
	}
	t_shadow_put(sh, wbuf, len, off);
	return 0;
}

/*
 * Overwrite all of a SPARSE_SIZE file with what it holds, in 16 KiB
 * writes: on a patched kernel these take the overwrite path (the file is
 * given one RWF_NOWAIT write first: since patch 34 blocking writers of a
 * file without NOWAIT users keep 6.12's path), so a kernel that remembers
 * ranges it found mapped (patched XFS) has seen the whole file mapped
 * before the gap is made, and must notice the change.
 */
static int rewrite_all(int fd, const struct t_shadow *sh, const char *what)
{
	size_t off, n = 16 * 1024;

	if (t_note_nowait_use(fd))
		return 1;
	for (off = 0; off < SPARSE_SIZE; off += n) {
		if (pwrite(fd, sh->data + off, n, off) != (ssize_t)n) {
			fprintf(stderr, "%s: rewrite at %zu: %s\n", what, off,
				strerror(errno));
			return 1;
		}
	}
	return 0;
}

/* Punch GAP out of a SPARSE_SIZE file, optionally fallocate it back. */
static int make_gap(int fd, int unwritten, const char *what)
{
	off_t data;

	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      GAP_OFF, GAP_LEN)) {
		if (errno == EOPNOTSUPP)
			return T_EXIT_SKIP;
		fprintf(stderr, "%s: punch hole: %s\n", what, strerror(errno));
		return 1;
	}
	if (unwritten && fallocate(fd, 0, GAP_OFF, GAP_LEN)) {
		if (errno == EOPNOTSUPP)
			return T_EXIT_SKIP;
		fprintf(stderr, "%s: fallocate: %s\n", what, strerror(errno));
		return 1;
	}
	/* Holes and unwritten extents without cached data both read as holes. */
	data = lseek(fd, GAP_OFF, SEEK_DATA);
	if (data != GAP_OFF + GAP_LEN)
		printf("note: %s: SEEK_DATA from %d gives %lld, not %d\n", what,
		       GAP_OFF, (long long)data, GAP_OFF + GAP_LEN);
	return 0;
}

static int prep(const struct xcase *c, int fd, struct t_shadow *sh,
		const char *what)
{
	int ret;

	if (put(fd, sh, 0, BASE, 1, what))
		return 1;
	switch (c->prep) {
	case P_PLAIN:
		break;
	case P_SHORT_EOF:
		if (ftruncate(fd, BASE - 1234)) {
			perror("ftruncate");
			return 1;
		}
		t_shadow_truncate(sh, BASE - 1234);
		break;
	case P_HOLE:
	case P_HOLE_CACHED:
	case P_UNWRITTEN:
	case P_UNWRITTEN_CACHED:
		if (put(fd, sh, GAP_OFF, GAP_LEN, 1, what) ||
		    put(fd, sh, GAP_OFF + GAP_LEN,
			SPARSE_SIZE - GAP_OFF - GAP_LEN, 1, what))
			return 1;
		if (fsync(fd)) {
			perror("fsync");
			return 1;
		}
		if (rewrite_all(fd, sh, what))
			return 1;
		if (fsync(fd)) {
			perror("fsync");
			return 1;
		}
		ret = make_gap(fd, c->prep == P_UNWRITTEN ||
			       c->prep == P_UNWRITTEN_CACHED, what);
		if (ret)
			return ret;
		memset(sh->data + GAP_OFF, 0, GAP_LEN);
		break;
	case P_PREALLOC:
		if (fsync(fd)) {
			perror("fsync");
			return 1;
		}
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, BASE, 128 * 1024)) {
			if (errno == EOPNOTSUPP)
				return T_EXIT_SKIP;
			fprintf(stderr, "%s: fallocate: %s\n", what,
				strerror(errno));
			return 1;
		}
		break;
	}
	if (fsync(fd)) {
		perror("fsync");
		return 1;
	}
	/* Everything that is data is cached; so is the gap when asked. */
	if (pread(fd, rbuf, BASE, 0) < 0 ||
	    ((c->prep == P_HOLE_CACHED || c->prep == P_UNWRITTEN_CACHED) &&
	     pread(fd, rbuf, GAP_LEN, GAP_OFF) != GAP_LEN)) {
		fprintf(stderr, "%s: setup read: %s\n", what, strerror(errno));
		return 1;
	}
	return t_shadow_verify(sh, fd, what);
}

/* Case @arg in mode @m, for t_run_modes(). */
static int run_one(const void *arg, enum t_wmode m, const char *what,
		   struct t_tally *t)
{
	const struct xcase *c = arg;
	char path[PATH_MAX];
	struct t_shadow sh;
	int fd, fd2, ret;
	off_t off;

	t_shadow_init(&sh, CAP);
	fd = t_create_file("fallback-extend", 0, path, sizeof(path));
	ret = prep(c, fd, &sh, what);
	if (ret)
		goto out;
	if (c->open_flags) {
		fd2 = open(path, O_RDWR | c->open_flags);
		if (fd2 < 0) {
			fprintf(stderr, "%s: reopen: %s\n", what, strerror(errno));
			ret = 1;
			goto out;
		}
		close(fd);
		fd = fd2;
	}
	off = c->off < 0 ? (off_t)sh.size : c->off;
	t_fill_pattern(wbuf, c->len, off, 2 + m);
	ret = t_write_check(&ring, m, fd, &sh, what, wbuf, NULL, c->len, off,
			    c->rw_flags, t);
	if (!ret)
		ret = t_shadow_verify_stable(&sh, fd, what);
out:
	close(fd);
	t_remove_file(path);
	t_shadow_free(&sh);
	return ret;
}

int main(void)
{
	struct t_cases cs = { .test = "fallback-extend" };
	unsigned int i;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	wbuf = malloc(CAP);
	rbuf = malloc(CAP);
	if (!wbuf || !rbuf)
		return T_EXIT_FAIL;
	printf("fallback-extend: fs %s, dir %s\n", t_test_fs(), t_test_dir());

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		t_cases_add(&cs, t_run_modes(cases[i].name,
					     ": not supported by this file system",
					     run_one, &cases[i]));
	io_uring_queue_exit(&ring);
	return t_cases_exit(&cs);
}
