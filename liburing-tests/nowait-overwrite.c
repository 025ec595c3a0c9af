/* SPDX-License-Identifier: MIT */
/*
 * Description: RWF_NOWAIT buffered overwrites of cached, allocated data
 *		must complete in full, through io_uring and pwritev2(2).
 *
 * The file is written and fsynced first, so every overwritten range is
 * allocated and in the page cache. Ranges: 64 B, 512 B unaligned, 4 KiB
 * aligned, 4 KiB straddling two pages, 16 KiB, 64 KiB. Each round starts
 * after the timestamp clock has ticked, so the first write of a round
 * needs an mtime/ctime update.
 *
 * Allowed outcomes of a NOWAIT overwrite:
 *  - the full length;
 *  - -EAGAIN, only on a mount without lazytime and only while the file's
 *    timestamps are stale (the update needs a transaction that may block).
 *    The test then falls back to a blocking write, as an application
 *    would, so the next NOWAIT write in the same clock tick must succeed.
 * Anything else fails: -EAGAIN on a lazytime mount, -EAGAIN although
 * mtime and ctime already equalled the coarse time before the write and
 * the clock did not tick during it, -EOPNOTSUPP or -EINVAL (no NOWAIT
 * buffered writes at all), a short count, wrong data.
 *
 * A second part repeats 4 KiB NOWAIT overwrites while another thread keeps
 * overwriting a different 64 KiB range of the same file with blocking
 * pwrite(), as a database's other writers would, each write sleeping
 * briefly in a user fault on its source buffer. On 6.12 XFS that thread
 * holds IOLOCK_EXCL, so NOWAIT writes that meet it fail (how often, on a
 * default mount, is up to the scheduler under TCG: see the expectations);
 * a writer that does not exclude other overwriters lets them through.
 * There, on a lazytime mount, no
 * NOWAIT write may fail; on other mounts the other writer's timestamp
 * update is a transaction once per clock tick, which can make a NOWAIT
 * write fail even when the times it saw were current, so at most one
 * -EAGAIN per clock tick elapsed (plus one) is allowed. That file is
 * written 4 KiB at a time, so that on XFS the two ranges do not share a
 * large folio (one folio lock would serialise them by design).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define FILE_SIZE	(1024 * 1024)
#define ROUNDS		10
#define CONTENDED_WRITES	200
#define CONTENDER_OFF	(512 * 1024)
/*
 * The other writer (t_stalled_writer): 64 KiB pwrite()s whose copy sleeps
 * in a userfault on the first page of its source, about
 * CONTENDER_FAULT_US, so that on 6.12 XFS it holds IOLOCK_EXCL whenever
 * the NOWAIT writer looks, however the two threads are scheduled. A
 * writer that runs instead of sleeping did not: with 4 KiB writes one
 * baseline run saw 3 -EAGAIN in 200 writes, with 64 KiB writes one saw
 * 2 in 200 (2026-12-04) and others failed at once. The stall is much
 * shorter than a clock tick, so an -EAGAIN at every stall exceeds the
 * one-per-tick allowance. 64 KiB is FILEMAP_LOCK_RANGE_MAX: a larger
 * blocking write takes the exclusive lock on the patched kernel too, by
 * design, as does every blocking write to a file before its first NOWAIT
 * write (test_contended() makes one first).
 */
#define CONTENDER_LEN		(64 * 1024)
#define CONTENDER_FAULT_US	200

static const struct range {
	const char *name;
	off_t off;
	unsigned int len;
} ranges[] = {
	{ "64B", 100, 64 },
	{ "512B-unaligned", 513, 512 },
	{ "4KiB-aligned", 8192, 4096 },
	{ "4KiB-straddling", 3 * 4096 + 2048, 4096 },
	{ "16KiB", 32768, 16384 },
	{ "64KiB", 131072, 65536 },
};

enum method { VIA_URING, VIA_PWRITEV2 };
static const char *const method_name[] = { "io_uring", "pwritev2" };

static struct io_uring ring;
static unsigned char *wbuf, *rbuf, *image;
static int lazytime;

static int do_write(enum method m, int fd, unsigned int len, off_t off, int flags)
{
	struct iovec iov = { .iov_base = wbuf, .iov_len = len };
	ssize_t ret;

	if (m == VIA_URING)
		return t_uring_pwrite(&ring, fd, wbuf, len, off, flags);
	ret = pwritev2(fd, &iov, 1, off, flags);
	return ret < 0 ? -errno : (int)ret;
}

static int ts_equal(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The file's times and the coarse clock, read just before a write. */
struct pre_write {
	struct stat st;
	struct timespec now;
};

static int pre_write_sample(int fd, struct pre_write *pw)
{
	if (fstat(fd, &pw->st) ||
	    clock_gettime(CLOCK_REALTIME_COARSE, &pw->now)) {
		perror("fstat/clock_gettime");
		return 1;
	}
	return 0;
}

/*
 * After an -EAGAIN: was a timestamp update really due? The kernel compares
 * the inode's times with the coarse clock. If both already equalled the
 * coarse clock before the write and the clock has not ticked since, they
 * equalled it when the write looked, since times only move forward; then
 * the -EAGAIN had another cause. Sampling before the write keeps a
 * concurrent writer's update from hiding a justified -EAGAIN.
 */
static int eagain_justified(const struct pre_write *pw)
{
	struct timespec now;

	if (clock_gettime(CLOCK_REALTIME_COARSE, &now))
		return 0;
	return !(ts_equal(&pw->st.st_mtim, &pw->now) &&
		 ts_equal(&pw->st.st_ctim, &pw->now) &&
		 ts_equal(&now, &pw->now));
}

static int check_range(int fd, const struct range *r, const char *what)
{
	ssize_t ret = pread(fd, rbuf, r->len, r->off);

	if (ret != r->len || memcmp(rbuf, image + r->off, r->len)) {
		fprintf(stderr, "%s %s: read back %zd bytes at %lld, data %s\n",
			what, r->name, ret, (long long)r->off,
			ret == r->len ? "differs" : "short");
		return 1;
	}
	return 0;
}

static int test_method(int fd, enum method m)
{
	unsigned int round, i, ok = 0, eagain = 0, gen = 100 * (m + 1);
	const char *mn = method_name[m];
	struct pre_write pw;
	int ret;

	for (round = 0; round < ROUNDS; round++) {
		t_next_tick();
		for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
			const struct range *r = &ranges[i];

			t_fill_pattern(wbuf, r->len, r->off, ++gen);
			if (pre_write_sample(fd, &pw))
				return 1;
			ret = do_write(m, fd, r->len, r->off, RWF_NOWAIT);
			if (ret == (int)r->len) {
				ok++;
			} else if (ret == -EAGAIN) {
				eagain++;
				if (lazytime) {
					fprintf(stderr, "%s %s round %u: -EAGAIN on a lazytime mount\n",
						mn, r->name, round);
					return 1;
				}
				if (!eagain_justified(&pw)) {
					fprintf(stderr, "%s %s round %u: -EAGAIN with timestamps already current\n",
						mn, r->name, round);
					return 1;
				}
				/* The application's fallback: a blocking write. */
				ret = do_write(m, fd, r->len, r->off, 0);
				if (ret != (int)r->len) {
					fprintf(stderr, "%s %s: blocking fallback returned %d\n",
						mn, r->name, ret);
					return 1;
				}
			} else {
				fprintf(stderr, "%s %s round %u: NOWAIT overwrite of %u bytes at %lld returned %d (%s)\n",
					mn, r->name, round, r->len, (long long)r->off, ret,
					ret < 0 ? strerror(-ret) : "short");
				return 1;
			}
			memcpy(image + r->off, wbuf, r->len);
			if (check_range(fd, r, mn))
				return 1;
		}
	}
	printf("%s: %u NOWAIT overwrites completed, %u -EAGAIN (timestamp ticks)\n",
	       mn, ok, eagain);
	return 0;
}

static int test_contended(int fd, enum method m)
{
	const struct range r = { "4KiB-contended", 8192, 4096 };
	unsigned int i, ok = 0, eagain = 0, gen = 1000 * (m + 1);
	const char *mn = method_name[m];
	struct t_stalled_writer c = {
		.fd = fd, .off = CONTENDER_OFF, .len = CONTENDER_LEN,
		.data = image + CONTENDER_OFF, .delay_us = CONTENDER_FAULT_US,
	};
	struct timespec t0, t1;
	long ticks = 0;
	int ret, failed = 0;

	/*
	 * The pwrite() writer is another writer of a file that NOWAIT
	 * writers use: until its first NOWAIT write, a file's blocking
	 * writers take the exclusive lock on the patched kernel too.
	 */
	if (t_note_nowait_use(fd) || t_stalled_writer_start(&c))
		return 1;
	clock_gettime(CLOCK_REALTIME_COARSE, &t0);
	for (i = 0; i < CONTENDED_WRITES && !failed; i++) {
		t_fill_pattern(wbuf, r.len, r.off, ++gen);
		ret = do_write(m, fd, r.len, r.off, RWF_NOWAIT);
		if (ret == (int)r.len) {
			ok++;
		} else if (ret == -EAGAIN) {
			eagain++;
			clock_gettime(CLOCK_REALTIME_COARSE, &t1);
			ticks = t_ticks_between(&t0, &t1);
			if (lazytime || eagain > ticks + 1) {
				fprintf(stderr, "%s %s write %u: -EAGAIN %s while a pwrite() writer overwrote another range\n",
					mn, r.name, i, lazytime ?
					"on a lazytime mount" :
					"more than once per clock tick");
				failed = 1;
				break;
			}
			ret = do_write(m, fd, r.len, r.off, 0);
			if (ret != (int)r.len) {
				fprintf(stderr, "%s %s: blocking fallback returned %d\n",
					mn, r.name, ret);
				failed = 1;
				break;
			}
		} else {
			fprintf(stderr, "%s %s write %u: NOWAIT overwrite returned %d (%s)\n",
				mn, r.name, i, ret,
				ret < 0 ? strerror(-ret) : "short");
			failed = 1;
			break;
		}
		memcpy(image + r.off, wbuf, r.len);
		if (check_range(fd, &r, mn))
			failed = 1;
	}
	failed |= t_stalled_writer_stop(&c);
	clock_gettime(CLOCK_REALTIME_COARSE, &t1);
	printf("%s contended: %u NOWAIT overwrites completed, %u -EAGAIN in %ld clock ticks, contender wrote %lu times\n",
	       mn, ok, eagain, t_ticks_between(&t0, &t1), c.writes);
	return failed;
}

/* A file written 4 KiB at a time, fsynced and read back: see the top. */
static int make_small_folio_file(void)
{
	int fd = t_create_file("nowait-overwrite-contended", 0, NULL, 0);
	off_t off;

	for (off = 0; off < FILE_SIZE; off += 4096)
		if (pwrite(fd, image + off, 4096, off) != 4096)
			break;
	if (off < FILE_SIZE || fsync(fd) ||
	    pread(fd, rbuf, FILE_SIZE, 0) != FILE_SIZE) {
		perror("prefill of the contended file");
		return -1;
	}
	return fd;
}

int main(void)
{
	int fd, ret, failed = 0;
	off_t off;

	t_seed("nowait-overwrite");
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return T_EXIT_SKIP;
	}
	wbuf = malloc(FILE_SIZE);
	rbuf = malloc(FILE_SIZE);
	image = malloc(FILE_SIZE);
	if (!wbuf || !rbuf || !image)
		return T_EXIT_FAIL;
	fd = t_create_file("nowait-overwrite", 0, NULL, 0);
	lazytime = t_mount_has_option(fd, "lazytime");
	if (lazytime < 0) {
		fprintf(stderr, "cannot read mount options\n");
		return T_EXIT_FAIL;
	}
	printf("fs %s, lazytime %s\n", t_test_fs(), lazytime ? "yes" : "no");

	/* Allocate and cache every block: written, fsynced, read back. */
	t_fill_pattern(image, FILE_SIZE, 0, 1);
	if (pwrite(fd, image, FILE_SIZE, 0) != FILE_SIZE || fsync(fd) ||
	    pread(fd, rbuf, FILE_SIZE, 0) != FILE_SIZE) {
		perror("prefill");
		return T_EXIT_FAIL;
	}

	if (test_method(fd, VIA_URING)) {
		fprintf(stderr, "test_method io_uring failed\n");
		failed = 1;
	}
	if (test_method(fd, VIA_PWRITEV2)) {
		fprintf(stderr, "test_method pwritev2 failed\n");
		failed = 1;
	}
	for (off = 0; !failed && off < FILE_SIZE; off += 65536) {
		if (pread(fd, rbuf, 65536, off) != 65536 ||
		    memcmp(rbuf, image + off, 65536)) {
			fprintf(stderr, "final check: mismatch in 64 KiB at %lld\n",
				(long long)off);
			failed = 1;
		}
	}
	close(fd);

	fd = make_small_folio_file();
	if (fd < 0)
		return T_EXIT_FAIL;
	if (test_contended(fd, VIA_URING)) {
		fprintf(stderr, "test_contended io_uring failed\n");
		failed = 1;
	}
	if (test_contended(fd, VIA_PWRITEV2)) {
		fprintf(stderr, "test_contended pwritev2 failed\n");
		failed = 1;
	}
	close(fd);
	io_uring_queue_exit(&ring);
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
