/* SPDX-License-Identifier: MIT */
/*
 * Description: io_uring buffered overwrite benchmark. Prefills and fsyncs
 *		a file so every block is allocated and cached, then worker
 *		threads, each with its own ring, keep QD overwrites (and,
 *		with -r, reads) in flight against it. Reports submission and
 *		completion latency percentiles, IOPS, the writes and reads
 *		io_uring punted to io-wq (io_uring_queue_async_work
 *		tracepoint, by opcode), the io-wq workers created, CPU time
 *		and context switches per write, as one JSON object on stdout.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/utsname.h>

#include "helpers.h"

enum mode { M_URING, M_PSYNC, M_URING_DIRECT, M_MEMCPY, M_NR };
enum ring_kind { R_DEFAULT, R_DEFER, R_SQPOLL, R_NR };
enum pattern { P_RANDOM, P_SEQUENTIAL, P_APPEND };

static const char *const mode_names[M_NR] = { "uring", "psync", "uring-direct", "memcpy" };
static const char *const ring_names[R_NR] = { "default", "defer", "sqpoll" };
static const char *const pattern_names[] = { "random", "sequential", "append" };

struct opts {
	const char *path;
	unsigned long long size;
	unsigned int bs;
	unsigned long writes;
	unsigned int qd;
	unsigned int threads;
	unsigned int readers;	/* --readers: reading threads, own rings */
	unsigned int runtime;
	unsigned int read_pct;
	enum mode mode;
	enum ring_kind ring;
	enum pattern pattern;
	int nowait;
	int retry;
	int per_file;
	int fixed_file;		/* -F: registered file */
	int fixed_bufs;		/* -B: registered buffers */
	int drop;		/* --drop: the prefilled file leaves the cache */
	int prime;		/* --prime: one RWF_NOWAIT write before the run */
	uint64_t seed;
	int seed_set;
};

/* -m memcpy: the in-memory stand-in for the file, shared by the workers. */
static char *memarea;

static struct opts o = {
	.size = 64ULL << 20,
	.bs = 4096,
	.writes = 20000,
	.qd = 8,
	.threads = 1,
};

/*
 * Latency histogram: bucket 0 is below 64 ns, then 64 buckets per power
 * of two (as fio) up to 2^34 ns (17 s), then one overflow bucket.
 */
#define H_MIN_SHIFT	6
#define H_MAX_SHIFT	34
#define H_SUB_SHIFT	6
#define H_SUB		(1 << H_SUB_SHIFT)
#define H_NR		(2 + (H_MAX_SHIFT - H_MIN_SHIFT) * H_SUB)

struct hist {
	uint64_t bucket[H_NR];
	uint64_t count, sum, min, max;
};

static unsigned int hist_index(uint64_t v)
{
	unsigned int sh;

	if (v < (1ULL << H_MIN_SHIFT))
		return 0;
	sh = 63 - __builtin_clzll(v);
	if (sh >= H_MAX_SHIFT)
		return H_NR - 1;
	return 1 + (sh - H_MIN_SHIFT) * H_SUB +
	       ((v >> (sh - H_SUB_SHIFT)) & (H_SUB - 1));
}

/* The smallest value above bucket @i (UINT64_MAX for the overflow one). */
static uint64_t hist_upper(unsigned int i)
{
	unsigned int sh, sub;

	if (i == 0)
		return 1ULL << H_MIN_SHIFT;
	if (i == H_NR - 1)
		return UINT64_MAX;
	sh = H_MIN_SHIFT + (i - 1) / H_SUB;
	sub = (i - 1) % H_SUB;
	return (1ULL << sh) + (uint64_t)(sub + 1) * (1ULL << (sh - H_SUB_SHIFT));
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->bucket[hist_index(v)]++;
	if (!h->count || v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
}

static void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned int i;

	if (!src->count)
		return;
	for (i = 0; i < H_NR; i++)
		dst->bucket[i] += src->bucket[i];
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
}

/* Upper edge of the bucket holding the @p quantile, at most the maximum. */
static uint64_t hist_pct(const struct hist *h, double p)
{
	uint64_t rank, seen = 0, up;
	unsigned int i;

	if (!h->count)
		return 0;
	rank = (uint64_t)(p * h->count);
	if ((double)rank < p * h->count)
		rank++;
	if (!rank)
		rank = 1;
	for (i = 0; i < H_NR; i++) {
		seen += h->bucket[i];
		if (seen >= rank)
			break;
	}
	up = i < H_NR ? hist_upper(i) - 1 : h->max;
	return up < h->max ? up : h->max;
}

/* One file the workers share (or, with -P, one per worker). */
struct bfile {
	int fd;
	char path[PATH_MAX];
	/* -A: the file is truncated to 0 when an append would pass cap */
	uint64_t cap;
	_Atomic uint64_t tail;		/* next append offset */
	_Atomic uint64_t written_end;	/* end of the furthest completed append */
	_Atomic int inflight;		/* appends reserved, not yet completed */
	_Atomic int draining;		/* at cap: truncate once inflight is 0 */
	pthread_mutex_t lock;
	unsigned long truncations;
};

struct opstats {
	struct hist sub, comp;
	uint64_t ops, ok, shorts, eagain, eopnotsupp, retries, errors, bytes;
	int last_err;
};

struct worker {
	pthread_t thread;
	unsigned int id;
	struct bfile *f;
	uint64_t rnd;
	unsigned int read_pct;	/* o.read_pct; 100 for a --readers thread */
	uint64_t blocks;	/* blocks of o.bs in the file (not -A) */
	uint64_t wcur, rcur;	/* -S: next block to write and to read */
	unsigned long w_issued;
	struct opstats w, r;
	/* io_uring_submit() calls and the SQEs they carried */
	uint64_t calls, sqes, max_batch;
	struct hist call;		/* one sample per call */
	_Atomic uint64_t w_done, r_done;	/* for the status line */
	uint64_t t_end;
	uint64_t cpu_ns;	/* this thread's CPU time in its loop */
	int failed;
};

struct slot {
	char *buf;
	uint64_t off;
	uint64_t start;
	int is_read;
	int nowait;		/* this attempt carries RWF_NOWAIT */
	int append;		/* counted in f->inflight */
};

static pthread_barrier_t barrier;
static _Atomic int stop, abort_run;
static _Atomic unsigned int nr_finished;

/* Whether the ops go through an io_uring ring. */
static int ring_mode(void)
{
	return o.mode == M_URING || o.mode == M_URING_DIRECT;
}

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [options]\n"
		"Worker threads, each with its own ring, overwrite a cached, allocated file\n"
		"and report latency percentiles, IOPS and io-wq punts as one JSON object.\n"
		"  -f PATH    file to overwrite; with -P the prefix of PATH.0, PATH.1, ...\n"
		"             (default: $TEST_DIR/bench-file = %s)\n"
		"  -P         a file per writer instead of one shared file\n"
		"  -F         registered file (IOSQE_FIXED_FILE), as fio's t/io_uring -F\n"
		"  -B         registered buffers (READ_FIXED/WRITE_FIXED), as t/io_uring -B\n"
		"  --seed N   seed of the offsets and the read/write choice (default: from\n"
		"             the clock; printed in the JSON either way)\n"
		"  -s BYTES   file size, K/M/G suffixes; with -A the size at which the file\n"
		"             is truncated back to 0 (default: %llu)\n"
		"  -b BYTES   write (and read) size (default: %u)\n"
		"  -t N       writer threads (default: %u)\n"
		"  -n N       writes per writer (default: %lu); reads with -r come on top\n"
		"  -T SECS    run for SECS seconds instead of -n writes (default: %u = use -n)\n"
		"  -q N       queue depth per writer, 1 with -m psync (default: %u)\n"
		"  -r PCT     PCT percent of the ops are reads of -b bytes (default: %u;\n"
		"             100 only with -T)\n"
		"  --readers N  N more threads that only read -b bytes at random offsets\n"
		"             of the shared file, each with its own ring (or pread with\n"
		"             -m psync) and -q; needs -T; their reads are counted with\n"
		"             the writers' -r reads (default: 0)\n"
		"  -m MODE    uring: buffered io_uring reads/writes; psync: pread/pwrite,\n"
		"             no ring; uring-direct: io_uring with O_DIRECT; memcpy: no\n"
		"             syscall, a memcpy() into an in-memory copy of the file, the\n"
		"             floor of a cached overwrite (default: %s)\n"
		"  -k RING    default; defer: SINGLE_ISSUER|DEFER_TASKRUN; sqpoll: SQPOLL\n"
		"             (default: %s)\n"
		"  -S         sequential offsets (each writer from its own start) instead\n"
		"             of random ones\n"
		"  -A         appending writes at EOF of a file that starts empty (offsets\n"
		"             from a shared EOF counter, no O_APPEND); reads below EOF\n"
		"  -N         RWF_NOWAIT on every write: -EAGAIN (and -EOPNOTSUPP, a file\n"
		"             system refusing all buffered NOWAIT pwritev2) counted, not\n"
		"             retried\n"
		"  -R         with -N, retry refused writes without RWF_NOWAIT\n"
		"  --drop     drop the prefilled file from the page cache before the\n"
		"             run (fio's default invalidate=1): early writes then find\n"
		"             their blocks uncached\n"
		"  --prime    before the run, rewrite the file's first 4 KiB with\n"
		"             their own contents by one pwritev2(RWF_NOWAIT), so that\n"
		"             the kernel has seen the file used by I/O that must not\n"
		"             block (the series keeps blocking writers of a file on\n"
		"             6.12's path until then); -EAGAIN and -EOPNOTSUPP are\n"
		"             accepted, the file is unchanged either way\n"
		"  -h, --help this text\n"
		"The JSON object is the only thing on stdout; a status line a second and\n"
		"errors go to stderr. Punts need tracefs (-1 without it).\n",
		prog, o.path, o.size, o.bs, o.threads, o.writes, o.runtime, o.qd,
		o.read_pct, mode_names[o.mode], ring_names[o.ring]);
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

static unsigned long parse_num(const char *s, const char *what,
			       unsigned long min, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "bad %s '%s' (want %lu..%lu)\n", what, s, min, max);
		exit(2);
	}
	return v;
}

static int parse_name(const char *s, const char *const *names, int nr,
		      const char *what)
{
	int i;

	for (i = 0; i < nr; i++)
		if (!strcmp(s, names[i]))
			return i;
	fprintf(stderr, "bad %s '%s'\n", what, s);
	exit(2);
}

/*
 * With $URING_BENCH_MARK set, mark the start and the end of the measured
 * run for bench/insn-profile.c, a QEMU plugin that counts the instructions
 * executed between the two marks: "xchg %bx,%bx" does nothing.
 */
static void mark_window(int on)
{
	if (on)
		__asm__ __volatile__(".byte 0x66, 0x87, 0xdb" ::: "memory");
}

/* Write [0, size) in 1 MiB chunks, fsync, and read it back into the cache. */
static int prefill(int fd, const char *path, unsigned long long size)
{
	static char buf[1 << 20];
	unsigned long long off;
	size_t len;

	t_fill_pattern(buf, sizeof(buf), 0, 0);
	for (off = 0; off < size; off += len) {
		len = size - off < sizeof(buf) ? size - off : sizeof(buf);
		if (pwrite(fd, buf, len, off) != (ssize_t)len) {
			fprintf(stderr, "prefill pwrite %s: %s\n", path,
				strerror(errno));
			return -1;
		}
	}
	if (fsync(fd)) {
		fprintf(stderr, "fsync %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (off = 0; off < size; off += len) {
		len = size - off < sizeof(buf) ? size - off : sizeof(buf);
		if (pread(fd, buf, len, off) != (ssize_t)len) {
			fprintf(stderr, "prefill pread %s: %s\n", path,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * --prime: one RWF_NOWAIT rewrite of the first 4 KiB (or of a smaller file)
 * with what they hold, the way a process that also uses io_uring or
 * RWF_NOWAIT on the file would have touched it; fio's twin file is primed
 * the same way (bench/guest-matrix.py).  A refusal (-EAGAIN; -EOPNOTSUPP
 * from a kernel without buffered NOWAIT writes) is that process's
 * fallback, not an error.
 */
static int prime(int fd, const char *path)
{
	char buf[4096];
	size_t len = o.size < sizeof(buf) ? o.size : sizeof(buf);
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ssize_t ret;

	if (pread(fd, buf, len, 0) != (ssize_t)len) {
		fprintf(stderr, "prime pread %s: %s\n", path, strerror(errno));
		return -1;
	}
	ret = pwritev2(fd, &iov, 1, 0, RWF_NOWAIT);
	if (ret == (ssize_t)len ||
	    (ret < 0 && (errno == EAGAIN || errno == EOPNOTSUPP)))
		return 0;
	fprintf(stderr, "prime pwritev2 %s: %s\n", path,
		ret < 0 ? strerror(errno) : "short write");
	return -1;
}

static int open_file(struct bfile *f)
{
	int fd;

	if (o.pattern == P_APPEND) {
		fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	} else {
		fd = open(f->path, O_RDWR | O_CREAT, 0644);
		if (fd >= 0 && prefill(fd, f->path, o.size)) {
			close(fd);
			return -1;
		}
		/* As fio's default invalidate=1: written, synced, dropped. */
		if (fd >= 0 && o.drop &&
		    (errno = posix_fadvise(fd, 0, o.size, POSIX_FADV_DONTNEED))) {
			fprintf(stderr, "posix_fadvise %s: %s\n", f->path,
				strerror(errno));
			close(fd);
			return -1;
		}
		if (fd >= 0 && o.prime && prime(fd, f->path)) {
			close(fd);
			return -1;
		}
		if (fd >= 0 && o.mode == M_URING_DIRECT) {
			close(fd);
			fd = open(f->path, O_RDWR | O_DIRECT);
		}
	}
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", f->path, strerror(errno));
		return -1;
	}
	if (o.pattern == P_APPEND && o.mode == M_URING_DIRECT) {
		close(fd);
		fd = open(f->path, O_RDWR | O_DIRECT);
		if (fd < 0) {
			fprintf(stderr, "open %s O_DIRECT: %s\n", f->path,
				strerror(errno));
			return -1;
		}
	}
	f->fd = fd;
	f->cap = o.size / o.bs * o.bs;
	pthread_mutex_init(&f->lock, NULL);
	return 0;
}

/*
 * -A: reserve the next @o.bs bytes at EOF. Returns -1 when the file is at
 * its cap and being drained for truncation: no append may start then.
 */
static int append_reserve(struct bfile *f, uint64_t *off)
{
	uint64_t pos;

	if (atomic_load(&f->draining))
		return -1;
	atomic_fetch_add(&f->inflight, 1);
	pos = atomic_fetch_add(&f->tail, o.bs);
	if (pos + o.bs > f->cap) {
		atomic_store(&f->draining, 1);
		atomic_fetch_sub(&f->inflight, 1);
		return -1;
	}
	*off = pos;
	return 0;
}

static void append_done(struct bfile *f, uint64_t end)
{
	uint64_t cur = atomic_load(&f->written_end);

	while (cur < end &&
	       !atomic_compare_exchange_weak(&f->written_end, &cur, end))
		;
	atomic_fetch_sub(&f->inflight, 1);
}

/* Truncate a drained file back to 0 so that appends can go on. */
static void append_maybe_truncate(struct bfile *f)
{
	if (!atomic_load(&f->draining) || atomic_load(&f->inflight))
		return;
	pthread_mutex_lock(&f->lock);
	if (atomic_load(&f->draining) && !atomic_load(&f->inflight)) {
		if (ftruncate(f->fd, 0))
			fprintf(stderr, "ftruncate %s: %s\n", f->path,
				strerror(errno));
		atomic_store(&f->written_end, 0);
		atomic_store(&f->tail, 0);
		f->truncations++;
		atomic_store(&f->draining, 0);
	}
	pthread_mutex_unlock(&f->lock);
}

static int may_issue(const struct worker *w)
{
	if (atomic_load_explicit(&stop, memory_order_relaxed))
		return 0;
	return o.runtime || w->w_issued < o.writes;
}

/* Choose the next op for @s. Returns -1 when an append has to wait. */
static int next_op(struct worker *w, struct slot *s)
{
	uint64_t blk, end;

	s->is_read = w->read_pct &&
		     (w->read_pct == 100 || t_rnd_next(&w->rnd) % 100 < w->read_pct);
	s->append = 0;
	if (o.pattern == P_APPEND) {
		end = atomic_load(&w->f->written_end);
		if (s->is_read && end >= o.bs) {
			s->off = t_rnd_next(&w->rnd) % (end / o.bs) * o.bs;
			s->nowait = 0;
			return 0;
		}
		if (append_reserve(w->f, &s->off))
			return -1;
		s->is_read = 0;
		s->append = 1;
	} else if (o.pattern == P_SEQUENTIAL) {
		blk = s->is_read ? w->rcur++ : w->wcur++;
		s->off = blk % w->blocks * o.bs;
	} else {
		s->off = t_rnd_next(&w->rnd) % w->blocks * o.bs;
	}
	s->nowait = !s->is_read && o.nowait;
	if (!s->is_read)
		w->w_issued++;
	return 0;
}

/* A RWF_NOWAIT write the kernel would not do without blocking. */
static int nowait_refused(int res)
{
	return res == -EAGAIN || res == -EOPNOTSUPP;
}

/* Count a RWF_NOWAIT write refused with @res. */
static void count_refused(struct opstats *st, int res)
{
	if (res == -EAGAIN)
		st->eagain++;
	else
		st->eopnotsupp++;
}

/* Account the completion of the op in @s with result @res at time @now. */
static void op_done(struct worker *w, struct slot *s, int res, uint64_t now)
{
	struct opstats *st = s->is_read ? &w->r : &w->w;

	hist_add(&st->comp, now - s->start);
	st->ops++;
	if (res == (int)o.bs) {
		st->ok++;
	} else if (res >= 0) {
		st->shorts++;
	} else if (!s->nowait || !nowait_refused(res)) {
		if (!st->errors)
			fprintf(stderr, "worker %u: %s of %u at %" PRIu64 ": %s\n",
				w->id, s->is_read ? "read" : "write", o.bs,
				s->off, strerror(-res));
		st->errors++;
		st->last_err = -res;
	}
	if (res > 0)
		st->bytes += res;
	if (s->append)
		append_done(w->f, res > 0 ? s->off + res : 0);
}

/* What the kernel's io_uring offers, from worker 0's ring (for the JSON). */
static uint32_t ring_features;
static int probe_last_op = -1, probe_ops = -1;

static int setup_ring(struct worker *w, struct io_uring *ring,
		      struct slot *slots, size_t bufsz)
{
	struct io_uring_params p;
	struct io_uring_probe *probe;
	struct iovec *iov;
	unsigned int i;
	int ret;

	memset(&p, 0, sizeof(p));
	if (o.ring == R_DEFER) {
		p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	} else if (o.ring == R_SQPOLL) {
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000;
	}
	ret = io_uring_queue_init_params(o.qd, ring, &p);
	if (ret) {
		fprintf(stderr, "worker %u: io_uring_queue_init_params(%s): %s\n",
			w->id, ring_names[o.ring], strerror(-ret));
		return ret;
	}
	if (w->id == 0) {
		ring_features = p.features;
		probe = io_uring_get_probe_ring(ring);
		if (probe) {
			probe_last_op = probe->last_op;
			probe_ops = 0;
			for (i = 0; i <= probe->last_op && i < probe->ops_len; i++)
				probe_ops += !!(probe->ops[i].flags & IO_URING_OP_SUPPORTED);
			io_uring_free_probe(probe);
		}
	}
	if (o.fixed_file) {
		ret = io_uring_register_files(ring, &w->f->fd, 1);
		if (ret) {
			fprintf(stderr, "worker %u: io_uring_register_files: %s\n",
				w->id, strerror(-ret));
			goto fail;
		}
	}
	if (o.fixed_bufs) {
		iov = calloc(o.qd, sizeof(*iov));
		if (!iov) {
			ret = -ENOMEM;
			goto fail;
		}
		for (i = 0; i < o.qd; i++) {
			iov[i].iov_base = slots[i].buf;
			iov[i].iov_len = bufsz;
		}
		ret = io_uring_register_buffers(ring, iov, o.qd);
		free(iov);
		if (ret) {
			fprintf(stderr, "worker %u: io_uring_register_buffers: %s\n",
				w->id, strerror(-ret));
			goto fail;
		}
	}
	return 0;
fail:
	io_uring_queue_exit(ring);
	return ret;
}

/* A read or write of slot @idx into @sqe, with -F and -B as asked. */
static void prep_rw(struct io_uring_sqe *sqe, struct worker *w,
		    struct slot *slots, unsigned int idx, int is_read)
{
	struct slot *s = &slots[idx];
	int fd = o.fixed_file ? 0 : w->f->fd;

	if (o.fixed_bufs && is_read)
		io_uring_prep_read_fixed(sqe, fd, s->buf, o.bs, s->off, idx);
	else if (o.fixed_bufs)
		io_uring_prep_write_fixed(sqe, fd, s->buf, o.bs, s->off, idx);
	else if (is_read)
		io_uring_prep_read(sqe, fd, s->buf, o.bs, s->off);
	else
		io_uring_prep_write(sqe, fd, s->buf, o.bs, s->off);
	if (o.fixed_file)
		sqe->flags |= IOSQE_FIXED_FILE;
	sqe->user_data = idx;
}

static void uring_loop(struct worker *w, struct io_uring *ring,
		       struct slot *slots)
{
	unsigned int *freel, *retryq, *pend, nfree = 0, nretry = 0, npend = 0;
	unsigned int outstanding = 0, i, idx;
	struct io_uring_cqe *cqe;
	struct io_uring_sqe *sqe;
	uint64_t t0, t1, now;
	int ret, issuing, has_read, has_write;

	freel = calloc(3 * o.qd, sizeof(*freel));
	if (!freel) {
		w->failed = 1;
		return;
	}
	retryq = freel + o.qd;
	pend = retryq + o.qd;
	for (i = 0; i < o.qd; i++)
		freel[nfree++] = o.qd - 1 - i;

	for (;;) {
		issuing = may_issue(w);
		/* -R: refused RWF_NOWAIT writes again, without it */
		while (nretry && io_uring_sq_space_left(ring)) {
			idx = retryq[--nretry];
			sqe = io_uring_get_sqe(ring);
			prep_rw(sqe, w, slots, idx, 0);
			pend[npend++] = idx;
		}
		while (issuing && nfree && io_uring_sq_space_left(ring)) {
			struct slot *s = &slots[freel[nfree - 1]];

			if (next_op(w, s))
				break;
			idx = freel[--nfree];
			sqe = io_uring_get_sqe(ring);
			prep_rw(sqe, w, slots, idx, s->is_read);
			if (s->nowait)
				sqe->rw_flags = RWF_NOWAIT;
			s->start = 0;
			pend[npend++] = idx;
			outstanding++;
			issuing = may_issue(w);
		}
		if (npend) {
			/*
			 * The submission sample is the call alone; the start
			 * times are stamped after it (completions are reaped
			 * only below).
			 */
			t0 = t_now_ns();
			ret = io_uring_submit(ring);
			t1 = t_now_ns();
			for (i = 0; i < npend; i++)
				if (!slots[pend[i]].start)
					slots[pend[i]].start = t0;
			if (ret < 0) {
				fprintf(stderr, "worker %u: io_uring_submit: %s\n",
					w->id, strerror(-ret));
				w->failed = 1;
				break;
			}
			/*
			 * One sample per call, whatever its batch size, in
			 * the histogram of each kind of op the batch carried.
			 */
			has_read = has_write = 0;
			for (i = 0; i < (unsigned int)ret && i < npend; i++) {
				if (slots[pend[i]].is_read)
					has_read = 1;
				else
					has_write = 1;
			}
			hist_add(&w->call, t1 - t0);
			if (has_write)
				hist_add(&w->w.sub, t1 - t0);
			if (has_read)
				hist_add(&w->r.sub, t1 - t0);
			w->calls++;
			w->sqes += ret;
			if ((uint64_t)ret > w->max_batch)
				w->max_batch = ret;
			if ((unsigned int)ret < npend)
				memmove(pend, pend + ret,
					(npend - ret) * sizeof(*pend));
			npend -= (unsigned int)ret < npend ? (unsigned int)ret : npend;
		}
		if (!outstanding) {
			if (!issuing)
				break;
			/* -A: the file is at its cap and others still write */
			append_maybe_truncate(w->f);
			sched_yield();
			continue;
		}
		if (outstanding == npend + nretry) {
			/* nothing in the kernel to wait for */
			if (nretry)
				continue;
			fprintf(stderr, "worker %u: io_uring_submit submitted nothing\n",
				w->id);
			w->failed = 1;
			break;
		}
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret == -EINTR)
			continue;
		if (ret) {
			fprintf(stderr, "worker %u: io_uring_wait_cqe: %s\n",
				w->id, strerror(-ret));
			w->failed = 1;
			break;
		}
		do {
			struct slot *s;

			now = t_now_ns();
			idx = (unsigned int)cqe->user_data;
			s = &slots[idx];
			ret = cqe->res;
			io_uring_cqe_seen(ring, cqe);
			if (s->nowait && nowait_refused(ret)) {
				count_refused(&w->w, ret);
				if (o.retry) {
					s->nowait = 0;
					w->w.retries++;
					retryq[nretry++] = idx;
					continue;
				}
			}
			op_done(w, s, ret, now);
			freel[nfree++] = idx;
			outstanding--;
		} while (!io_uring_peek_cqe(ring, &cqe));
		atomic_store_explicit(&w->w_done, w->w.ops, memory_order_relaxed);
		atomic_store_explicit(&w->r_done, w->r.ops, memory_order_relaxed);
		if (o.pattern == P_APPEND)
			append_maybe_truncate(w->f);
	}
	free(freel);
}

static void psync_loop(struct worker *w, struct slot *s)
{
	struct iovec iov = { .iov_base = s->buf, .iov_len = o.bs };
	uint64_t t0, t1;
	ssize_t ret;

	while (may_issue(w)) {
		if (next_op(w, s)) {
			append_maybe_truncate(w->f);
			sched_yield();
			continue;
		}
		t0 = t_now_ns();
		s->start = t0;
		if (o.mode == M_MEMCPY) {
			if (s->is_read)
				memcpy(s->buf, memarea + s->off, o.bs);
			else
				memcpy(memarea + s->off, s->buf, o.bs);
			/* keep the copy: the compiler may not drop it */
			__asm__ __volatile__("" : : "r"(memarea) : "memory");
			ret = o.bs;
		} else if (s->is_read)
			ret = pread(w->f->fd, s->buf, o.bs, s->off);
		else if (s->nowait)
			ret = pwritev2(w->f->fd, &iov, 1, s->off, RWF_NOWAIT);
		else
			ret = pwrite(w->f->fd, s->buf, o.bs, s->off);
		if (ret < 0)
			ret = -errno;
		t1 = t_now_ns();
		hist_add(s->is_read ? &w->r.sub : &w->w.sub, t1 - t0);
		if (s->nowait && nowait_refused(ret)) {
			count_refused(&w->w, ret);
			if (o.retry) {
				w->w.retries++;
				ret = pwrite(w->f->fd, s->buf, o.bs, s->off);
				if (ret < 0)
					ret = -errno;
				t0 = t1;
				t1 = t_now_ns();
				hist_add(&w->w.sub, t1 - t0);
			}
		}
		op_done(w, s, (int)ret, t1);
		atomic_store_explicit(&w->w_done, w->w.ops, memory_order_relaxed);
		atomic_store_explicit(&w->r_done, w->r.ops, memory_order_relaxed);
	}
}

/*
 * The calling thread's CPU time: with --readers, the reading threads' CPU
 * per read is the cost of a read apart from how much CPU the scheduler
 * gave them (io-wq workers are other threads and count in neither).
 */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	unsigned int nslots = !ring_mode() ? 1 : o.qd, i;
	size_t bufsz = (o.bs + 4095) & ~(size_t)4095;
	struct io_uring ring;
	struct slot *slots;
	char *bufs = NULL;
	char who[32];
	int ring_up = 0;
	uint64_t cpu0;

	/* uo-w<id> writes, uo-r<id> is a --readers thread: a scheduler
	 * trace (sched_switch's comm) tells them apart. */
	snprintf(who, sizeof(who), "uo-%c%u", w->id < o.threads ? 'w' : 'r',
		 w->id);
	pthread_setname_np(pthread_self(), who);
	snprintf(who, sizeof(who), "worker %u", w->id);
	slots = calloc(nslots, sizeof(*slots));
	if (slots)
		bufs = t_worker_buf(bufsz * nslots, who);
	if (!bufs) {
		w->failed = 1;
	} else {
		for (i = 0; i < nslots; i++) {
			slots[i].buf = bufs + i * bufsz;
			t_fill_pattern(slots[i].buf, o.bs, 0, w->id + 1);
		}
		if (ring_mode()) {
			if (setup_ring(w, &ring, slots, bufsz))
				w->failed = 1;
			else
				ring_up = 1;
		}
	}
	pthread_barrier_wait(&barrier);		/* set up */
	pthread_barrier_wait(&barrier);		/* go */
	cpu0 = thread_cpu_ns();
	if (!w->failed && !atomic_load(&abort_run)) {
		if (!ring_mode())
			psync_loop(w, slots);
		else
			uring_loop(w, &ring, slots);
	}
	w->t_end = t_now_ns();
	w->cpu_ns = thread_cpu_ns() - cpu0;
	atomic_fetch_add(&nr_finished, 1);
	pthread_barrier_wait(&barrier);		/* measured */
	if (ring_up)
		io_uring_queue_exit(&ring);
	free(bufs);
	free(slots);
	return NULL;
}

/*
 * io-wq workers of this process: sampled every 10 ms from
 * /proc/self/task/ (an idle worker lingers for seconds, so none is missed).
 * Each task's comm is read once, when its tid first shows up.
 */
enum { T_OTHER, T_IOU_WRK, T_IOU_SQP };

struct tasks {
	struct { pid_t tid; int kind; } seen[4096];
	unsigned int nr_seen;
	unsigned int before, wrk, sqp, max_wrk;
};

static void tasks_scan(struct tasks *t, int baseline)
{
	char path[64], comm[32];
	unsigned int i, now_wrk = 0;
	struct dirent *de;
	ssize_t len;
	pid_t tid;
	DIR *d;
	int fd, kind;

	d = opendir("/proc/self/task");
	if (!d)
		return;
	while ((de = readdir(d))) {
		tid = atoi(de->d_name);
		if (tid <= 0)
			continue;
		for (i = 0; i < t->nr_seen; i++)
			if (t->seen[i].tid == tid)
				break;
		if (i < t->nr_seen) {
			now_wrk += t->seen[i].kind == T_IOU_WRK;
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;	/* gone meanwhile */
		len = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[len > 0 ? len : 0] = 0;
		kind = !strncmp(comm, "iou-wrk-", 8) ? T_IOU_WRK :
		       !strncmp(comm, "iou-sqp-", 8) ? T_IOU_SQP : T_OTHER;
		if (t->nr_seen < sizeof(t->seen) / sizeof(t->seen[0])) {
			t->seen[t->nr_seen].tid = tid;
			t->seen[t->nr_seen++].kind = kind;
		}
		if (kind == T_IOU_WRK) {
			now_wrk++;
			if (baseline)
				t->before++;
			else
				t->wrk++;
		} else if (kind == T_IOU_SQP) {
			t->sqp++;
		}
	}
	closedir(d);
	if (now_wrk > t->max_wrk)
		t->max_wrk = now_wrk;
}

static double tv_sec(const struct timeval *tv)
{
	return tv->tv_sec + tv->tv_usec / 1e6;
}

static double ru_cpu(const struct rusage *a, const struct rusage *b, int sys)
{
	return sys ? tv_sec(&b->ru_stime) - tv_sec(&a->ru_stime) :
		     tv_sec(&b->ru_utime) - tv_sec(&a->ru_utime);
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void json_hist(const char *name, const struct hist *h)
{
	printf("\"%s\": {\"count\": %" PRIu64 ", \"min\": %" PRIu64
	       ", \"mean\": %.0f, \"p50\": %" PRIu64 ", \"p90\": %" PRIu64
	       ", \"p99\": %" PRIu64 ", \"p99.9\": %" PRIu64
	       ", \"p99.99\": %" PRIu64 ", \"max\": %" PRIu64 "}",
	       name, h->count, h->min, h->count ? (double)h->sum / h->count : 0.0,
	       hist_pct(h, 0.5), hist_pct(h, 0.9), hist_pct(h, 0.99),
	       hist_pct(h, 0.999), hist_pct(h, 0.9999), h->max);
}

static void json_ops(const char *name, const struct opstats *st, double secs)
{
	printf("\"%s\": {\"ops\": %" PRIu64 ", \"ok\": %" PRIu64
	       ", \"short\": %" PRIu64 ", \"eagain\": %" PRIu64
	       ", \"eopnotsupp\": %" PRIu64
	       ", \"retried\": %" PRIu64 ", \"errors\": %" PRIu64
	       ", \"last_error\": ",
	       name, st->ops, st->ok, st->shorts, st->eagain, st->eopnotsupp,
	       st->retries,
	       st->errors);
	if (st->errors)
		json_str(t_errno_name(st->last_err));
	else
		printf("null");
	printf(", \"bytes\": %" PRIu64 ", \"iops\": %.0f, \"mib_s\": %.2f, ",
	       st->bytes, secs > 0 ? (st->ok + st->shorts) / secs : 0.0,
	       secs > 0 ? st->bytes / secs / (1 << 20) : 0.0);
	json_hist("submit_lat_ns", &st->sub);
	printf(", ");
	json_hist("complete_lat_ns", &st->comp);
	printf("}");
}

/* What the numbers mean, in the JSON object itself. */
static void json_notes(void)
{
	const char *notes[][2] = {
		{ "submit_lat", o.mode == M_MEMCPY ?
		  "memcpy: the time of one memcpy() of the op's bytes into "
		  "(or, for reads, out of) an in-memory copy of the file: "
		  "the floor a cached overwrite's copy sets, no syscall" :
		  o.mode == M_PSYNC ?
		  "psync: the time of the pread/pwrite/pwritev2 syscall, one "
		  "sample per syscall (-R retries add theirs)" :
		  "time inside io_uring_submit() (io_uring_enter, unless "
		  "SQPOLL needs no wakeup), one sample per call, whatever "
		  "its batch size: write.submit_lat_ns holds the calls that "
		  "carried a write, read.submit_lat_ns those that carried a "
		  "read, submit_calls all calls with their batch sizes; -R "
		  "retries add theirs" },
		{ "complete_lat", !ring_mode() ?
		  "psync, memcpy: the time of the op (with -R both syscalls)" :
		  "from just before the io_uring_submit() that carried the op "
		  "to its CQE being reaped; with -R from the first submission "
		  "to the final CQE" },
		{ "percentiles",
		  "log histogram, 64 buckets per power of two (as fio) from "
		  "64 ns to 17 s, merged over threads; a percentile is the "
		  "largest value its bucket holds (at most 1.6% high), capped "
		  "at max" },
		{ "ops",
		  "completed ops; RWF_NOWAIT writes refused (eagain, "
		  "eopnotsupp) and not retried count as ops, not as errors; "
		  "iops (ops that moved data: ok + short) and mib_s are over "
		  "elapsed_s, from go to the last worker done" },
		{ "punts",
		  "hits of io_uring:io_uring_queue_async_work over the run, "
		  "system-wide, keyed by opcode (hist trigger): punts_write "
		  "counts WRITE, WRITE_FIXED and WRITEV, punts_read READ, "
		  "READ_FIXED and READV, and the per-1000 rates divide those "
		  "by the writes and the reads; -1 without tracefs or hist "
		  "triggers" },
		{ "cpu",
		  "getrusage(RUSAGE_SELF) over the run (workers, io-wq and "
		  "sqpoll threads; prefill and ring teardown excluded) minus "
		  "the sampling main thread; writer_threads_s and "
		  "reader_threads_s: CLOCK_THREAD_CPUTIME_ID of the writing "
		  "and the --readers threads over their loops (io-wq workers "
		  "in neither), reader_threads_share that over elapsed_s "
		  "(the CPU the scheduler gave the readers), "
		  "reader_threads_us_per_read over the readers' own reads "
		  "(what a read costs them, whatever their share)" },
		{ "voluntary_ctx_switches", "ru_nvcsw delta, same scope as cpu" },
		{ "involuntary_ctx_switches",
		  "ru_nivcsw delta (preemptions), same scope as cpu" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(notes) / sizeof(notes[0]); i++) {
		printf("%s\"%s\": ", i ? ", " : "", notes[i][0]);
		json_str(notes[i][1]);
	}
}

int main(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "seed", required_argument, NULL, 'Z' },
		{ "readers", required_argument, NULL, 'D' },
		{ "drop", no_argument, NULL, 'X' },
		{ "prime", no_argument, NULL, 'Y' },
		{ NULL, 0, NULL, 0 },
	};
	static char default_path[PATH_MAX];
	static struct tasks tasks;
	uint64_t t0, t1, next_status, last_ops = 0, wops, rops;
	struct rusage ru0, ru1, mt0, mt1;
	struct opstats w_all, r_all;
	unsigned int nfiles, nworkers, i;
	struct bfile *files;
	struct worker *ws;
	unsigned long truncations = 0;
	int mark = getenv("URING_BENCH_MARK") != NULL;
	long punts0 = -1, punts = -1, p;
	static long by_op0[256], by_op[256];
	long punts_w = -1, punts_r = -1;
	uint64_t calls = 0, sqes = 0, max_batch = 0;
	struct hist call_all;
	double secs, cpu_user, cpu_sys, cpu;
	uint64_t writer_cpu_ns = 0, reader_cpu_ns = 0, reader_reads = 0;
	long nvcsw, nivcsw;
	struct utsname uts;
	const char *flavour;
	int c, failed = 0, errors;

	snprintf(default_path, sizeof(default_path), "%s/bench-file", t_test_dir());
	o.path = default_path;
	while ((c = getopt_long(argc, argv, "f:PFBs:b:t:n:T:q:r:m:k:SANRh",
				longopts, NULL)) != -1) {
		switch (c) {
		case 'f': o.path = optarg; break;
		case 'P': o.per_file = 1; break;
		case 'F': o.fixed_file = 1; break;
		case 'B': o.fixed_bufs = 1; break;
		case 'Z':
			o.seed = parse_num(optarg, "--seed", 0, ULONG_MAX);
			o.seed_set = 1;
			break;
		case 's': o.size = parse_size(optarg); break;
		case 'b': o.bs = parse_size(optarg); break;
		case 't': o.threads = parse_num(optarg, "-t", 1, 1024); break;
		case 'D': o.readers = parse_num(optarg, "--readers", 0, 1024); break;
		case 'X': o.drop = 1; break;
		case 'Y': o.prime = 1; break;
		case 'n': o.writes = parse_num(optarg, "-n", 1, ULONG_MAX); break;
		case 'T': o.runtime = parse_num(optarg, "-T", 0, 86400 * 365); break;
		case 'q': o.qd = parse_num(optarg, "-q", 1, 4096); break;
		case 'r': o.read_pct = parse_num(optarg, "-r", 0, 100); break;
		case 'm': o.mode = parse_name(optarg, mode_names, M_NR, "-m"); break;
		case 'k': o.ring = parse_name(optarg, ring_names, R_NR, "-k"); break;
		case 'S': o.pattern = P_SEQUENTIAL; break;
		case 'A': o.pattern = P_APPEND; break;
		case 'N': o.nowait = 1; break;
		case 'R': o.retry = 1; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o.bs > o.size || o.bs > INT_MAX) {
		fprintf(stderr, "need -b <= -s\n");
		return 2;
	}
	if (o.drop && (o.pattern == P_APPEND || o.mode == M_MEMCPY ||
		       o.mode == M_URING_DIRECT)) {
		fprintf(stderr, "--drop needs a buffered mode that overwrites "
			"(no -A, -m memcpy or -m uring-direct)\n");
		return 2;
	}
	if (o.prime && (o.pattern == P_APPEND || o.mode == M_MEMCPY)) {
		fprintf(stderr, "--prime needs a mode that overwrites a file "
			"(no -A or -m memcpy)\n");
		return 2;
	}
	if (o.retry && !o.nowait) {
		fprintf(stderr, "-R needs -N\n");
		return 2;
	}
	if (o.read_pct == 100 && !o.runtime) {
		fprintf(stderr, "-r 100 needs -T: -n counts writes\n");
		return 2;
	}
	if (o.readers && (!o.runtime || o.per_file || o.pattern != P_RANDOM ||
			  o.mode == M_MEMCPY)) {
		fprintf(stderr, "--readers needs -T, one shared file (no -P), random\n"
			"offsets (no -S or -A) and a mode that does I/O (not -m memcpy)\n");
		return 2;
	}
	if (o.mode == M_URING_DIRECT && o.bs % 512) {
		fprintf(stderr, "-m uring-direct needs -b a multiple of 512\n");
		return 2;
	}
	if (!ring_mode() && (o.fixed_file || o.fixed_bufs)) {
		fprintf(stderr, "-F and -B need an io_uring mode (-m uring or uring-direct)\n");
		return 2;
	}
	if (!ring_mode())
		o.qd = 1;
	if (o.mode == M_MEMCPY && (o.nowait || o.pattern == P_APPEND)) {
		fprintf(stderr, "-m memcpy takes neither -N nor -A\n");
		return 2;
	}
	if (!o.seed_set)
		o.seed = t_now_ns() ^ ((uint64_t)getpid() << 20);

	nfiles = o.per_file ? o.threads : 1;
	files = calloc(nfiles, sizeof(*files));
	nworkers = o.threads + o.readers;
	ws = calloc(nworkers, sizeof(*ws));
	if (!files || !ws) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	for (i = 0; i < nfiles; i++) {
		if (o.per_file)
			snprintf(files[i].path, sizeof(files[i].path), "%s.%u",
				 o.path, i);
		else
			snprintf(files[i].path, sizeof(files[i].path), "%s", o.path);
		if (open_file(&files[i]))
			return 1;
	}
	if (o.mode == M_MEMCPY) {
		memarea = aligned_alloc(4096, (o.size + 4095) & ~4095ULL);
		if (!memarea) {
			fprintf(stderr, "out of memory for the -m memcpy area\n");
			return 1;
		}
		memset(memarea, 0x5a, o.size);
	}

	pthread_barrier_init(&barrier, NULL, nworkers + 1);
	for (i = 0; i < nworkers; i++) {
		struct worker *w = &ws[i];

		w->id = i;
		w->f = &files[o.per_file ? i : 0];
		w->rnd = o.seed * 2654435761ULL + i;
		if (!w->rnd)
			w->rnd = i + 1;
		w->read_pct = i < o.threads ? o.read_pct : 100;
		w->blocks = o.size / o.bs;
		if (!o.per_file && i < o.threads)
			w->wcur = w->rcur = w->blocks * i / o.threads;
		if (pthread_create(&w->thread, NULL, worker_fn, w)) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	pthread_barrier_wait(&barrier);		/* workers set up */
	for (i = 0; i < nworkers; i++)
		failed |= ws[i].failed;
	if (failed)
		atomic_store(&abort_run, 1);
	else if (!t_punts_start())
		punts0 = t_punts_read_ops(by_op0);
	tasks_scan(&tasks, 1);
	getrusage(RUSAGE_SELF, &ru0);
	getrusage(RUSAGE_THREAD, &mt0);
	t0 = t_now_ns();
	next_status = t0 + 1000000000ULL;
	mark_window(mark);
	pthread_barrier_wait(&barrier);		/* go */

	while (atomic_load(&nr_finished) < nworkers) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		uint64_t now;

		nanosleep(&ts, NULL);
		tasks_scan(&tasks, 0);
		now = t_now_ns();
		if (o.runtime && now - t0 >= o.runtime * 1000000000ULL)
			atomic_store(&stop, 1);
		if (now < next_status || failed)
			continue;
		wops = rops = 0;
		for (i = 0; i < nworkers; i++) {
			wops += atomic_load_explicit(&ws[i].w_done, memory_order_relaxed);
			rops += atomic_load_explicit(&ws[i].r_done, memory_order_relaxed);
		}
		fprintf(stderr, "%6.1f s: %" PRIu64 " ops (%" PRIu64 " writes, %"
			PRIu64 " reads), %.0f ops/s",
			(now - t0) / 1e9, wops + rops, wops, rops,
			(wops + rops - last_ops) / ((now - next_status) / 1e9 + 1));
		if (punts0 >= 0 && (p = t_punts_read()) >= 0)
			fprintf(stderr, ", %ld punts", p - punts0);
		fputc('\n', stderr);
		last_ops = wops + rops;
		next_status += 1000000000ULL;
	}
	mark_window(mark);
	t1 = t0;
	for (i = 0; i < nworkers; i++)
		if (ws[i].t_end > t1)
			t1 = ws[i].t_end;
	tasks_scan(&tasks, 0);
	getrusage(RUSAGE_SELF, &ru1);
	getrusage(RUSAGE_THREAD, &mt1);
	if (punts0 >= 0) {
		punts = t_punts_read_ops(by_op);
		if (punts >= 0) {
			punts -= punts0;
			for (i = 0; i < 256; i++)
				by_op[i] -= by_op0[i];
		}
		t_punts_stop();
	}
	pthread_barrier_wait(&barrier);		/* measured */
	for (i = 0; i < nworkers; i++) {
		pthread_join(ws[i].thread, NULL);
		failed |= ws[i].failed;
	}
	for (i = 0; i < nfiles; i++) {
		truncations += files[i].truncations;
		close(files[i].fd);
		t_remove_file(files[i].path);
	}
	if (failed) {
		free(ws);
		free(files);
		return 1;
	}

	memset(&w_all, 0, sizeof(w_all));
	memset(&r_all, 0, sizeof(r_all));
	memset(&call_all, 0, sizeof(call_all));
	for (i = 0; i < nworkers; i++) {
		hist_merge(&call_all, &ws[i].call);
		calls += ws[i].calls;
		sqes += ws[i].sqes;
		if (ws[i].max_batch > max_batch)
			max_batch = ws[i].max_batch;
	}
	if (punts >= 0) {
		punts_w = by_op[IORING_OP_WRITE] + by_op[IORING_OP_WRITE_FIXED] +
			  by_op[IORING_OP_WRITEV];
		punts_r = by_op[IORING_OP_READ] + by_op[IORING_OP_READ_FIXED] +
			  by_op[IORING_OP_READV];
	}
	for (i = 0; i < nworkers; i++) {
		struct opstats *src[2] = { &ws[i].w, &ws[i].r };
		struct opstats *dst[2] = { &w_all, &r_all };
		int k;

		if (i < o.threads) {
			writer_cpu_ns += ws[i].cpu_ns;
		} else {
			reader_cpu_ns += ws[i].cpu_ns;
			reader_reads += ws[i].r.ops;
		}

		for (k = 0; k < 2; k++) {
			hist_merge(&dst[k]->sub, &src[k]->sub);
			hist_merge(&dst[k]->comp, &src[k]->comp);
			dst[k]->ops += src[k]->ops;
			dst[k]->ok += src[k]->ok;
			dst[k]->shorts += src[k]->shorts;
			dst[k]->eagain += src[k]->eagain;
			dst[k]->eopnotsupp += src[k]->eopnotsupp;
			dst[k]->retries += src[k]->retries;
			dst[k]->errors += src[k]->errors;
			dst[k]->bytes += src[k]->bytes;
			if (src[k]->errors)
				dst[k]->last_err = src[k]->last_err;
		}
	}
	errors = w_all.errors || r_all.errors;
	secs = (t1 - t0) / 1e9;
	/* the main thread only samples and prints: leave it out */
	cpu_user = ru_cpu(&ru0, &ru1, 0) - ru_cpu(&mt0, &mt1, 0);
	cpu_sys = ru_cpu(&ru0, &ru1, 1) - ru_cpu(&mt0, &mt1, 1);
	cpu = cpu_user + cpu_sys;
	nvcsw = (ru1.ru_nvcsw - ru0.ru_nvcsw) - (mt1.ru_nvcsw - mt0.ru_nvcsw);
	nivcsw = (ru1.ru_nivcsw - ru0.ru_nivcsw) -
		 (mt1.ru_nivcsw - mt0.ru_nivcsw);
	flavour = getenv("TEST_FLAVOUR");
	if (uname(&uts))
		strcpy(uts.release, "?");

	printf("{\"benchmark\": \"uring-overwrite\", \"kernel\": ");
	json_str(uts.release);
	printf(", \"fs\": ");
	json_str(t_test_fs());
	printf(", \"flavour\": ");
	if (flavour)
		json_str(flavour);
	else
		printf("null");
	printf(", \"params\": {\"path\": ");
	json_str(o.path);
	printf(", \"file_per_writer\": %s, \"files\": %u, \"mode\": \"%s\", "
	       "\"ring\": \"%s\", \"threads\": %u, \"qd\": %u, \"bs\": %u, "
	       "\"size\": %llu, \"runtime_s\": %u, \"writes_per_writer\": ",
	       o.per_file ? "true" : "false", nfiles, mode_names[o.mode],
	       !ring_mode() ? "none" : ring_names[o.ring], o.threads,
	       o.qd, o.bs, o.size, o.runtime);
	if (o.runtime)
		printf("null");
	else
		printf("%lu", o.writes);
	printf(", \"read_pct\": %u, \"readers\": %u, \"pattern\": \"%s\", \"nowait\": %s, "
	       "\"nowait_retry\": %s, \"fixed_file\": %s, \"fixed_bufs\": %s, "
	       "\"drop\": %s, \"prime\": %s, \"seed\": %" PRIu64 "}, ",
	       o.read_pct, o.readers, pattern_names[o.pattern], o.nowait ? "true" : "false",
	       o.retry ? "true" : "false", o.fixed_file ? "true" : "false",
	       o.fixed_bufs ? "true" : "false", o.drop ? "true" : "false",
	       o.prime ? "true" : "false", o.seed);
	if (!ring_mode())
		printf("\"io_uring\": null, ");
	else
		printf("\"io_uring\": {\"features\": \"0x%x\", \"probe_last_op\": %d, "
		       "\"probe_ops_supported\": %d}, ",
		       ring_features, probe_last_op, probe_ops);
	printf("\"elapsed_s\": %.6f, ", secs);
	json_ops("write", &w_all, secs);
	printf(", ");
	json_ops("read", &r_all, secs);
	printf(", \"total\": {\"ops\": %" PRIu64 ", \"iops\": %.0f, \"mib_s\": %.2f}",
	       w_all.ops + r_all.ops,
	       secs > 0 ? (w_all.ok + w_all.shorts + r_all.ok + r_all.shorts) / secs : 0.0,
	       secs > 0 ? (w_all.bytes + r_all.bytes) / secs / (1 << 20) : 0.0);
	if (ring_mode()) {
		printf(", \"submit_calls\": {\"calls\": %" PRIu64 ", \"sqes\": %" PRIu64
		       ", \"mean_batch\": %.2f, \"max_batch\": %" PRIu64 ", ",
		       calls, sqes, calls ? (double)sqes / calls : 0.0, max_batch);
		json_hist("lat_ns", &call_all);
		printf("}");
	}
	printf(", \"punts\": %ld, \"punts_write\": %ld, \"punts_read\": %ld, "
	       "\"punts_by_opcode\": {", punts, punts_w, punts_r);
	for (i = 0, c = 0; punts >= 0 && i < 256; i++)
		if (by_op[i])
			printf("%s\"%u\": %ld", c++ ? ", " : "", i, by_op[i]);
	printf("}, \"punts_per_1000_writes\": ");
	if (punts_w >= 0 && w_all.ops)
		printf("%.2f", punts_w * 1000.0 / w_all.ops);
	else
		printf("null");
	printf(", \"punts_per_1000_reads\": ");
	if (punts_r >= 0 && r_all.ops)
		printf("%.2f", punts_r * 1000.0 / r_all.ops);
	else
		printf("null");
	printf(", \"io_wq_workers\": {\"created\": %u, \"max_concurrent\": %u, "
	       "\"present_before\": %u, \"method\": \"new iou-wrk-* tids in "
	       "/proc/self/task, sampled every 10 ms during the run\"}",
	       tasks.wrk, tasks.max_wrk, tasks.before);
	printf(", \"sqpoll_threads\": %u", tasks.sqp);
	printf(", \"append_truncations\": %lu", truncations);
	printf(", \"cpu\": {\"user_s\": %.6f, \"sys_s\": %.6f, "
	       "\"us_per_write\": ", cpu_user, cpu_sys);
	if (w_all.ops)
		printf("%.3f", cpu * 1e6 / w_all.ops);
	else
		printf("null");
	printf(", \"us_per_op\": ");
	if (w_all.ops + r_all.ops)
		printf("%.3f", cpu * 1e6 / (w_all.ops + r_all.ops));
	else
		printf("null");
	printf(", \"writer_threads_s\": %.6f", writer_cpu_ns / 1e9);
	if (o.readers) {
		printf(", \"reader_threads_s\": %.6f, \"reader_threads_share\": ",
		       reader_cpu_ns / 1e9);
		if (secs > 0)
			printf("%.4f", reader_cpu_ns / 1e9 / secs);
		else
			printf("null");
		printf(", \"reader_threads_us_per_read\": ");
		if (reader_reads)
			printf("%.3f", reader_cpu_ns / 1e3 / reader_reads);
		else
			printf("null");
	}
	printf("}, \"voluntary_ctx_switches\": %ld, "
	       "\"voluntary_ctx_switches_per_write\": ", nvcsw);
	if (w_all.ops)
		printf("%.4f", (double)nvcsw / w_all.ops);
	else
		printf("null");
	printf(", \"involuntary_ctx_switches\": %ld", nivcsw);
	printf(", \"notes\": {");
	json_notes();
	printf("}}\n");
	fflush(stdout);
	free(ws);
	free(files);
	return errors ? 1 : 0;
}
