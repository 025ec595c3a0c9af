/* SPDX-License-Identifier: MIT */
/*
 * Description: io_uring buffered writes, then read back through io_uring
 *		and pread(2) with data verification: a fresh file written
 *		front to back, then overwrites of assorted sizes and offsets
 *		(sub-block, unaligned, straddling a page, multi-page), fsynced
 *		and re-read. Runs on any kernel with io_uring.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

#define FILE_SIZE	(1024 * 1024)
#define CHUNK		(64 * 1024)

static struct io_uring ring;
static unsigned char *wbuf, *rbuf;

/* Read the whole file both ways and compare with the expected image. */
static int verify_file(int fd, const unsigned char *image, const char *when)
{
	ssize_t ret, bad;
	off_t off;

	for (off = 0; off < FILE_SIZE; off += CHUNK) {
		memset(rbuf, 0xa5, CHUNK);
		ret = t_uring_pread(&ring, fd, rbuf, CHUNK, off);
		if (ret != CHUNK) {
			fprintf(stderr, "%s: io_uring read at %lld: %zd\n",
				when, (long long)off, ret);
			return 1;
		}
		if (memcmp(rbuf, image + off, CHUNK)) {
			for (bad = 0; rbuf[bad] == image[off + bad]; bad++)
				;
			fprintf(stderr, "%s: io_uring read mismatch at offset %lld: got %02x want %02x\n",
				when, (long long)(off + bad), rbuf[bad], image[off + bad]);
			return 1;
		}
		memset(rbuf, 0x5a, CHUNK);
		ret = pread(fd, rbuf, CHUNK, off);
		if (ret != CHUNK || memcmp(rbuf, image + off, CHUNK)) {
			fprintf(stderr, "%s: pread mismatch at %lld (ret %zd)\n",
				when, (long long)off, ret);
			return 1;
		}
	}
	return 0;
}

static int test_fill(int fd, unsigned char *image)
{
	off_t off;
	int ret;

	for (off = 0; off < FILE_SIZE; off += CHUNK) {
		t_fill_pattern(wbuf, CHUNK, off, 1);
		ret = t_uring_pwrite(&ring, fd, wbuf, CHUNK, off, 0);
		if (ret != CHUNK) {
			fprintf(stderr, "fill write at %lld: %d\n", (long long)off, ret);
			return 1;
		}
		memcpy(image + off, wbuf, CHUNK);
	}
	return verify_file(fd, image, "after fill");
}

static int test_overwrites(int fd, unsigned char *image, unsigned int seed)
{
	static const struct { off_t off; unsigned int len; } fixed[] = {
		{ 0, 1 }, { 100, 64 }, { 513, 512 }, { 4096, 4096 },
		{ 8192 - 2048, 4096 }, { 3 * 4096 + 1, 16384 },
		{ 65536, 65536 }, { FILE_SIZE - 4096, 4096 },
		{ FILE_SIZE - 1, 1 },
	};
	unsigned int i, gen = 2, len;
	off_t off;
	int ret;

	srand(seed);
	for (i = 0; i < 200; i++, gen++) {
		if (i < sizeof(fixed) / sizeof(fixed[0])) {
			off = fixed[i].off;
			len = fixed[i].len;
		} else {
			len = 1 + rand() % CHUNK;
			off = rand() % (FILE_SIZE - len + 1);
		}
		t_fill_pattern(wbuf, len, off, gen);
		ret = t_uring_pwrite(&ring, fd, wbuf, len, off, 0);
		if (ret != (int)len) {
			fprintf(stderr, "overwrite %u (%u bytes at %lld): %d\n",
				i, len, (long long)off, ret);
			return 1;
		}
		memcpy(image + off, wbuf, len);
		/* Read back what was just written, through io_uring. */
		ret = t_uring_pread(&ring, fd, rbuf, len, off);
		if (ret != (int)len || t_check_pattern(rbuf, len, off, gen) >= 0) {
			fprintf(stderr, "overwrite %u (%u bytes at %lld): read back %d, first bad byte %zd\n",
				i, len, (long long)off, ret,
				t_check_pattern(rbuf, len, off, gen));
			return 1;
		}
	}
	if (verify_file(fd, image, "after overwrites"))
		return 1;
	ret = t_uring_fsync(&ring, fd);
	if (ret) {
		fprintf(stderr, "fsync: %d\n", ret);
		return 1;
	}
	return verify_file(fd, image, "after fsync");
}

int main(void)
{
	unsigned char *image;
	unsigned int seed;
	int fd, ret;

	seed = t_seed("buffered-rw");
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	wbuf = malloc(CHUNK);
	rbuf = malloc(CHUNK);
	image = calloc(1, FILE_SIZE);
	if (!wbuf || !rbuf || !image)
		return T_EXIT_FAIL;
	fd = t_create_file("buffered-rw", 0, NULL, 0);

	if (test_fill(fd, image)) {
		fprintf(stderr, "test_fill failed\n");
		return T_EXIT_FAIL;
	}
	if (test_overwrites(fd, image, seed)) {
		fprintf(stderr, "test_overwrites failed (fs %s)\n", t_test_fs());
		return T_EXIT_FAIL;
	}
	close(fd);
	io_uring_queue_exit(&ring);
	return T_EXIT_PASS;
}
