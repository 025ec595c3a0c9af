/* SPDX-License-Identifier: MIT */
/*
 * A rough host-side proxy for what instruction counting cannot price: on
 * this machine's CPU, does taking a reference on a user page through the
 * lockless page-table walk cost more or less than copying the data?
 *
 * Two ways to move LEN bytes into a pipe and back out with read():
 *   copy:     write(), which allocates a pipe page and copies into it
 *             (copy_from_user);
 *   vmsplice: vmsplice(), which takes a reference on the user page through
 *             get_user_pages_fast() (FOLL_GET, not FOLL_PIN) and copies
 *             nothing.
 * Both then read() the bytes out (one copy_to_user). The difference of the
 * two is (copy in + page allocation) - (lockless walk + page reference +
 * splice bookkeeping): not the cost of pin_user_pages_fast_only() alone, but
 * of the same order. A userspace memcpy of LEN bytes is printed beside.
 * Each figure is the minimum over ROUNDS rounds of the mean of ITERS
 * iterations, so that other load on the host raises no figure.
 *
 * usage: pin-vs-copy [LEN ...]   (default: 64 4096 16384 65536)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>

#define ROUNDS	50
#define ITERS	1000
#define AREA	(1 << 20)

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int measure(size_t len, int p[2], char *buf, char *sink)
{
	double best_copy = 1e18, best_splice = 1e18, best_memcpy = 1e18;
	int r, i;

	for (r = 0; r < ROUNDS; r++) {
		double t0, t;

		t0 = now_ns();
		for (i = 0; i < ITERS; i++) {
			if (write(p[1], buf, len) != (ssize_t)len ||
			    read(p[0], sink, len) != (ssize_t)len)
				return 1;
		}
		t = (now_ns() - t0) / ITERS;
		if (t < best_copy)
			best_copy = t;

		t0 = now_ns();
		for (i = 0; i < ITERS; i++) {
			struct iovec iov = { .iov_base = buf, .iov_len = len };

			if (vmsplice(p[1], &iov, 1, 0) != (ssize_t)len ||
			    read(p[0], sink, len) != (ssize_t)len)
				return 1;
		}
		t = (now_ns() - t0) / ITERS;
		if (t < best_splice)
			best_splice = t;

		t0 = now_ns();
		for (i = 0; i < ITERS; i++) {
			memcpy(sink + (i & 7) * len % (AREA / 2), buf, len);
			__asm__ volatile("" : : "r"(sink) : "memory");
		}
		t = (now_ns() - t0) / ITERS;
		if (t < best_memcpy)
			best_memcpy = t;
	}
	printf("len %6zu: write+read %6.0f ns, vmsplice+read %6.0f ns, "
	       "difference %+6.0f ns; userspace memcpy %6.1f ns\n", len,
	       best_copy, best_splice, best_copy - best_splice, best_memcpy);
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t def[] = { 64, 4096, 16384, 65536 };
	char *buf, *sink;
	int p[2], i, n;

	if (pipe(p) || fcntl(p[1], F_SETPIPE_SZ, AREA) < 0) {
		perror("pipe");
		return 1;
	}
	buf = aligned_alloc(4096, AREA);
	sink = aligned_alloc(4096, AREA);
	if (!buf || !sink)
		return 1;
	memset(buf, 1, AREA);
	memset(sink, 0, AREA);
	n = argc > 1 ? argc - 1 : (int)(sizeof(def) / sizeof(def[0]));
	for (i = 0; i < n; i++) {
		size_t len = argc > 1 ? strtoul(argv[i + 1], NULL, 0) : def[i];

		if (!len || len > 65536) {
			fprintf(stderr, "pin-vs-copy: LEN must be 1-65536\n");
			return 1;
		}
		if (measure(len, p, buf, sink)) {
			perror("pin-vs-copy: write/vmsplice/read");
			return 1;
		}
	}
	return 0;
}
