/* SPDX-License-Identifier: MIT */
/*
 * Description: a write whose source is mapped from the file it writes
 *		must be serialisable against an overwrite of the pages it
 *		reads. Each round, two threads start together: one
 *		overwrites pages 0 and 1 with generation G (one 8 KiB
 *		write), the other writes 1 KiB at page 1 from a shared
 *		mapping of page 0 of the same file. In either order the
 *		1 KiB at page 1 ends as G: written last by the big write, or
 *		copied from page 0 after the big write filled it with G. A
 *		copy of page 0 made while the big write is halfway through
 *		it (a torn source), or made before it and written after it
 *		(a stale source), leaves something else.
 *
 *		6.12 serialises the two writers on the exclusive inode lock.
 *		The series serialises them on the folio locks: a pinned
 *		source is read under the small write's folio lock, and so
 *		must a source read into a buffer (sources of at most 2 KiB,
 *		and those that cannot be pinned); kernel/broken/0011 reads
 *		it before the folio locks and must be caught. The small
 *		write goes through pwrite() and through io_uring (tried
 *		inline under IOCB_NOWAIT, punted to io-wq if that fails) in
 *		alternate rounds. Not a feature test: 6.12 must pass it too.
 *
 *		TEST_SAMEFILE_SOURCE_ONLY=1: the big write covers page 0
 *		only, the source's page and not the small write's. Either
 *		order then leaves page 1 uniform, G or the byte before it,
 *		and a torn source leaves it mixed. The series does not
 *		order that pair (the small write locks only page 1's folio;
 *		docs/design.md section 9): a reproducer, not in the suite.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "helpers.h"

#define PG		4096
#define FSIZE		(16 * PG)
#define SMALL		1024

static int fd;
static unsigned char *map;
static unsigned char big[2 * PG] __attribute__((aligned(PG)));
static atomic_uint go, done;
static atomic_int stop;
static ssize_t big_ret;
static size_t big_len = sizeof(big);

/* Spin a little, so that either writer may start first. */
static void jitter(uint64_t *rnd)
{
	unsigned int n = t_rnd_next(rnd) % 2000;

	while (n--)
		__asm__ __volatile__("" ::: "memory");
}

static void *big_writer(void *arg)
{
	uint64_t rnd = (uintptr_t)arg;
	unsigned int r;

	for (r = 1; ; r++) {
		while (atomic_load(&go) < r && !atomic_load(&stop))
			;
		if (atomic_load(&go) < r)
			break;
		jitter(&rnd);
		big_ret = pwrite(fd, big, big_len, 0);
		atomic_store(&done, r);
	}
	return NULL;
}

int main(void)
{
	unsigned int seed = t_seed("same-file-source");
	unsigned int secs = t_env_uint("TEST_SAMEFILE_SECONDS", 4, 1, 3600);
	int source_only = t_env_uint("TEST_SAMEFILE_SOURCE_ONLY", 0, 0, 1);
	unsigned char check[SMALL];
	struct io_uring ring;
	uint64_t rnd = seed | 1, t_end;
	unsigned int r, rounds, bad = 0, small_err = 0;
	unsigned char *zero;
	pthread_t th;
	char path[256];
	int ret;

	fd = t_create_file("same-file-source", O_RDWR, path, sizeof(path));
	if (fd < 0)
		return 1;
	unlink(path);
	zero = calloc(1, FSIZE);
	if (!zero || pwrite(fd, zero, FSIZE, 0) != FSIZE || fsync(fd) ||
	    pread(fd, zero, FSIZE, 0) != FSIZE) {
		perror("prefill");
		return 1;
	}
	map = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}

	/* As many rounds as fit in the time asked for. */
	t_end = t_now_ns() + (uint64_t)secs * 1000000000ull;
	printf("same-file-source: fs %s, %u s%s, seed %u\n", t_test_fs(),
	       secs, source_only ? " (the big write covers the source only)" : "",
	       seed);

	atomic_store(&go, 0);
	atomic_store(&done, 0);
	ret = pthread_create(&th, NULL, big_writer, (void *)(uintptr_t)(seed | 2));
	if (ret) {
		fprintf(stderr, "pthread_create: %s\n", strerror(ret));
		return 1;
	}
	for (r = 1; t_now_ns() < t_end; r++) {
		unsigned char g = 1 + r % 251;
		ssize_t n;
		int i;

		memset(big, g, sizeof(big));
		atomic_store(&go, r);
		jitter(&rnd);
		if (r & 1) {
			n = pwrite(fd, map, SMALL, PG);
		} else {
			n = t_uring_pwrite(&ring, fd, map, SMALL, PG, 0);
		}
		if (n != SMALL)
			small_err++;
		while (atomic_load(&done) < r)
			;
		if (big_ret != (ssize_t)big_len) {
			fprintf(stderr, "round %u: the 8 KiB write returned %zd\n",
				r, big_ret);
			return 1;
		}
		if (pread(fd, check, SMALL, PG) != SMALL) {
			perror("pread");
			return 1;
		}
		for (i = 0; i < SMALL && check[i] == g; i++)
			;
		/* Source only: uniform, G or the round before's byte. */
		if (source_only && i < SMALL &&
		    check[0] == (r == 1 ? 0 : 1 + (r - 1) % 251)) {
			for (i = 0; i < SMALL && check[i] == check[0]; i++)
				;
		}
		if (i < SMALL) {
			if (bad < 5)
				printf("round %u (%s): byte %d at page 1 is %u, "
				       "the %zu KiB write wrote %u (byte 0 %u, last %u): "
				       "no order of the two writes gives this\n",
				       r, r & 1 ? "pwrite" : "io_uring", i,
				       check[i], big_len / 1024, g, check[0],
				       check[SMALL - 1]);
			bad++;
		}
	}
	rounds = r - 1;
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	if (small_err) {
		printf("%u of %u small writes did not write %d bytes\n",
		       small_err, rounds, SMALL);
		return 1;
	}
	if (bad) {
		printf("%u of %u rounds not serialisable\n", bad, rounds);
		return 1;
	}
	printf("same-file-source: %u rounds serialisable\n", rounds);
	return 0;
}
