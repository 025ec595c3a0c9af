/* SPDX-License-Identifier: MIT */
/*
 * Description: io_uring buffered overwrite benchmark. Prefills and fsyncs
 *		a file so every block is allocated and cached, then keeps
 *		QD overwrites in flight and counts how many of them io_uring
 *		punted to io-wq (io_uring_queue_async_work tracepoint).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

struct opts {
	const char *path;
	unsigned long long size;
	unsigned int bs;
	unsigned long writes;
	unsigned int qd;
	int random;
	int nowait;
};

static void usage(const char *prog, const struct opts *o)
{
	printf("usage: %s [options]\n"
	       "  -f PATH   file to overwrite (default: $TEST_DIR/bench-file = %s)\n"
	       "  -s BYTES  file size, K/M/G suffixes (default: %llu)\n"
	       "  -b BYTES  write size (default: %u)\n"
	       "  -n N      number of writes (default: %lu)\n"
	       "  -q N      queue depth (default: %u)\n"
	       "  -S        sequential instead of random offsets\n"
	       "  -N        set RWF_NOWAIT on every write (-EAGAIN counted, not retried)\n"
	       "  -h        this text\n",
	       prog, o->path, o->size, o->bs, o->writes, o->qd);
}

static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	switch (*end) {
	case 'g': case 'G': v <<= 10; /* fall through */
	case 'm': case 'M': v <<= 10; /* fall through */
	case 'k': case 'K': v <<= 10; end++; break;
	}
	if (*end || !v) {
		fprintf(stderr, "bad size '%s'\n", s);
		exit(2);
	}
	return v;
}

static int prefill(int fd, const struct opts *o)
{
	static char buf[1 << 20];
	unsigned long long off;
	size_t len;

	memset(buf, 0x5a, sizeof(buf));
	for (off = 0; off < o->size; off += len) {
		len = o->size - off < sizeof(buf) ? o->size - off : sizeof(buf);
		if (pwrite(fd, buf, len, off) != (ssize_t)len) {
			perror("prefill pwrite");
			return -1;
		}
	}
	if (fsync(fd)) {
		perror("fsync");
		return -1;
	}
	return 0;
}

static double now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char *argv[])
{
	static char default_path[4096];
	struct opts o = { .size = 64ULL << 20, .bs = 4096, .writes = 20000,
			  .qd = 8, .random = 1 };
	unsigned long submitted = 0, done = 0, eagain = 0, errors = 0;
	unsigned long long blocks, seq = 0;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	long punts0, punts;
	double t0, t1;
	char *buf;
	int fd, ret, c;

	snprintf(default_path, sizeof(default_path), "%s/bench-file", t_test_dir());
	o.path = default_path;
	while ((c = getopt(argc, argv, "f:s:b:n:q:SNh")) != -1) {
		switch (c) {
		case 'f': o.path = optarg; break;
		case 's': o.size = parse_size(optarg); break;
		case 'b': o.bs = parse_size(optarg); break;
		case 'n': o.writes = strtoul(optarg, NULL, 0); break;
		case 'q': o.qd = strtoul(optarg, NULL, 0); break;
		case 'S': o.random = 0; break;
		case 'N': o.nowait = 1; break;
		case 'h': usage(argv[0], &o); return 0;
		default: usage(argv[0], &o); return 2;
		}
	}
	if (!o.qd || !o.writes || o.bs > o.size) {
		fprintf(stderr, "need -q > 0, -n > 0 and -b <= -s\n");
		return 2;
	}
	blocks = o.size / o.bs;
	fd = open(o.path, O_RDWR | O_CREAT, 0644);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", o.path, strerror(errno));
		return 1;
	}
	if (prefill(fd, &o))
		return 1;
	buf = aligned_alloc(4096, (o.bs + 4095) & ~4095u);
	if (!buf)
		return 1;
	memset(buf, 0xa5, o.bs);
	ret = io_uring_queue_init(o.qd, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	srand(getpid());
	if (t_punts_start())
		return 1;
	punts0 = t_punts_read();
	t0 = now_sec();
	while (done < o.writes) {
		while (submitted < o.writes && submitted - done < o.qd) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			unsigned long long blk;

			blk = o.random ? (unsigned long long)rand() % blocks : seq++ % blocks;
			io_uring_prep_write(sqe, fd, buf, o.bs, blk * o.bs);
			if (o.nowait)
				sqe->rw_flags = RWF_NOWAIT;
			submitted++;
		}
		ret = io_uring_submit_and_wait(&ring, 1);
		if (ret < 0) {
			fprintf(stderr, "io_uring_submit_and_wait: %s\n", strerror(-ret));
			return 1;
		}
		while (io_uring_peek_cqe(&ring, &cqe) == 0) {
			if (cqe->res == -EAGAIN)
				eagain++;
			else if (cqe->res != (int)o.bs)
				errors++;
			io_uring_cqe_seen(&ring, cqe);
			done++;
		}
	}
	t1 = now_sec();
	punts = t_punts_read() - punts0;
	t_punts_stop();
	printf("%s %s: %lu x %u B %s overwrites, QD %u%s: punts %ld (%.1f per 1000 writes), "
	       "-EAGAIN %lu, errors %lu, %.0f writes/s\n",
	       t_test_fs(), getenv("TEST_FLAVOUR") ? getenv("TEST_FLAVOUR") : "",
	       o.writes, o.bs, o.random ? "random" : "sequential", o.qd,
	       o.nowait ? ", RWF_NOWAIT" : "", punts, punts * 1000.0 / o.writes,
	       eagain, errors, o.writes / (t1 - t0));
	io_uring_queue_exit(&ring);
	close(fd);
	unlink(o.path);
	return errors ? 1 : 0;
}
