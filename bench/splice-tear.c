/* SPDX-License-Identifier: MIT */
/*
 * Are splice reads of a buffered file atomic against buffered writes?
 * Patch 0050 rests on "no, on 6.12 either": filemap_splice_read() puts
 * references to the page cache folios into the pipe, and their data is
 * read when the pipe is drained, after the file system dropped its inode
 * lock, so a write can land between the splice and the drain, or during
 * the drain.
 *
 * Two threads overwrite whole 4 KiB slots of a 256 KiB file with
 * pwrite(2), every 8-byte word of a write holding that write's id; the
 * main thread splices a random slot into a pipe and drains it at once
 * with read(2), and counts the reads whose words are not all one id
 * (parts of two writes). On 6.12 XFS the writers hold IOLOCK_EXCL and the
 * splice holds IOLOCK_SHARED, so any such read is a tear that the inode
 * lock did not prevent. Run it in a guest (vm/run ... -- bench/splice-tear
 * DIR SECONDS); it prints the counts and exits 0 whatever they are: a
 * probe, not a test.
 *
 * usage: splice-tear [DIR [SECONDS]]   (default: /tmp 5)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define SLOT	4096
#define NSLOT	64
#define WORDS	(SLOT / 8)

static int fd;
static volatile int stop;

static uint64_t next_rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *writer_fn(void *arg)
{
	uint64_t buf[WORDS], id = (uint64_t)(uintptr_t)arg << 40;
	uint64_t rnd = 0x9e3779b97f4a7c15ULL * ((uintptr_t)arg + 1);
	int i;

	while (!stop) {
		off_t off = (off_t)(next_rnd(&rnd) % NSLOT) * SLOT;

		id++;
		for (i = 0; i < WORDS; i++)
			buf[i] = id;
		if (pwrite(fd, buf, SLOT, off) != SLOT) {
			perror("pwrite");
			exit(1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static uint64_t zero[NSLOT * WORDS];
	uint64_t buf[WORDS], rnd = 12345;
	long secs = argc > 2 ? atol(argv[2]) : 5, reads = 0, torn = 0;
	char path[4096];
	pthread_t t[2];
	time_t end;
	int p[2], i;

	snprintf(path, sizeof(path), "%s/splice-tear", argc > 1 ? argv[1] : "/tmp");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || pwrite(fd, zero, sizeof(zero), 0) != sizeof(zero) ||
	    fsync(fd) || pipe(p)) {
		perror(path);
		return 1;
	}
	for (i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, writer_fn, (void *)(uintptr_t)(i + 1))) {
			perror("pthread_create");
			return 1;
		}
	end = time(NULL) + secs;
	while (time(NULL) < end) {
		loff_t off = (loff_t)(next_rnd(&rnd) % NSLOT) * SLOT;
		ssize_t n = splice(fd, &off, p[1], NULL, SLOT, 0), got = 0;

		if (n != SLOT) {
			perror("splice");
			return 1;
		}
		while (got < n) {
			ssize_t m = read(p[0], (char *)buf + got, n - got);

			if (m <= 0) {
				perror("read");
				return 1;
			}
			got += m;
		}
		reads++;
		for (i = 1; i < WORDS; i++)
			if (buf[i] != buf[0]) {
				torn++;
				break;
			}
	}
	stop = 1;
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("splice-tear: %s: %ld splice reads beside 2 pwrite() writers of whole 4 KiB slots in %ld s, %ld held parts of two writes\n",
	       path, reads, secs, torn);
	unlink(path);
	return 0;
}
