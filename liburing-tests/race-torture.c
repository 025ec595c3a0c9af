/* SPDX-License-Identifier: MIT */
/*
 * Description: race torture for buffered overwrites under a shared inode
 *		lock (design.md sections 3-5 and 9). Each round prefills a
 *		4 MiB file with stamps (written, fsynced and read back, so
 *		that it is cached and every overwrite of it is eligible for
 *		the fast path) and for TEST_TORTURE_MS races two overwriters,
 *		each with its own io_uring ring (queue depth 4, plain writes
 *		of whole 4 KiB, 16 KiB or 64 KiB aligned slots), against a
 *		set of attackers that change the page cache or the block map
 *		under them:
 *		  truncate  ftruncate() down to a slot boundary, then back up;
 *		  punch     fallocate(PUNCH_HOLE | KEEP_SIZE) of aligned
 *			    ranges;
 *		  dio       O_DIRECT pwrite() of whole stamped slots and
 *			    O_DIRECT pread() of slots (the gate of section 3);
 *		  mmap      memcpy() of whole stamped slots into a MAP_SHARED
 *			    mapping (never with truncate, so a SIGBUS fails);
 *		  sync      sync_file_range(SYNC_FILE_RANGE_WRITE), fdatasync();
 *		  drop      fadvise(DONTNEED), /proc/sys/vm/drop_caches;
 *		  compact   /proc/sys/vm/compact_memory (folio migration, which
 *			    the bcachefs report implicated, section 9).
 *		Round n takes attacker set n of a fixed list, cyclically; the
 *		default six rounds use every attacker.
 *
 *		The model. Every write (io_uring, O_DIRECT, mmap) holds a
 *		userspace lock on each 4 KiB unit of its range from before it
 *		is submitted until its completion has been reaped, so the
 *		writes to a unit are totally ordered and the last one recorded
 *		is what the unit must hold. Truncates and punches take no unit
 *		lock: they are logged with a global sequence counter read just
 *		before the call and just after it returned, as every write is
 *		(before submission, after completion), which orders a zeroing
 *		before, after or concurrently with a write. After each round
 *		(all threads joined, fsync) the file is read with pread() and
 *		with O_DIRECT, and:
 *		  1. whole stamps: every unit holds one stamp in every word
 *		     (so every 512-byte grain holds one stamp), naming a write
 *		     of this round whose range covers the unit, or zeros;
 *		  2. no lost write: a unit holds the stamp of the last write
 *		     recorded for it; zeros instead are allowed only when a
 *		     truncate or punch covering the unit ran concurrently
 *		     with that write or after it;
 *		  3. no resurrection: when such a truncate or punch started
 *		     after that write's completion was reaped, the unit reads
 *		     zeros;
 *		  4. after fsync the page cache (pread) and the disk (O_DIRECT
 *		     read; without O_DIRECT, pread after fadvise DONTNEED)
 *		     agree.
 *		During the round every O_DIRECT read must hold whole stamps
 *		(or zeros where the round zeroes) in every unit, and no call
 *		may fail: an fsync or fdatasync -EIO is what a page cache
 *		invalidation failure on direct I/O leaves behind.
 *
 *		Last, one round per eight attacker rounds (at least one), the
 *		disk-image workload that broke bcachefs's lockless buffered
 *		writes: three io_uring writers of mixed 4-64 KiB overlapping
 *		writes at 4 KiB-aligned offsets (every other one RWF_NOWAIT,
 *		written again blocking after a refusal or a short count), under
 *		the same unit locks, two pread() readers of random 4-64 KiB
 *		ranges whose every 512-byte grain must hold one stamp of a
 *		write covering it (a torn grain fails on XFS; ext4 never
 *		promised read atomicity, so there torn grains are only
 *		counted, section 7), and a periodic fsync; then invariants 1,
 *		2 and 4.
 *
 *		Stamp writers: 0-2 io_uring, 4 O_DIRECT, 5 mmap.
 *
 *		Environment: TEST_TORTURE_ROUNDS (6), TEST_TORTURE_MS (length
 *		of a round, 500), TEST_SEED, TEST_SELFTEST_LOSE=1 (roll one
 *		unit back to its previous write after every round: must fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "helpers.h"
#include "stamp.h"

#define FILE_SIZE	(4U << 20)
#define UNIT		4096U
#define NR_UNITS	(FILE_SIZE / UNIT)
#define FILL_TILE	65536U
#define MAX_LEN		65536U
#define QD		4
#define HIST		4
#define MAX_ZEV		65536
#define MAX_THREADS	8
#define MAX_REPORT	4

#define ID_DIO		4
#define ID_MMAP		5

#define DROP_CACHES	"/proc/sys/vm/drop_caches"
#define COMPACT_MEMORY	"/proc/sys/vm/compact_memory"

/* Attackers. */
enum {
	A_TRUNC		= 1 << 0,
	A_PUNCH		= 1 << 1,
	A_DIO		= 1 << 2,
	A_MMAP		= 1 << 3,
	A_SYNC		= 1 << 4,
	A_DROP		= 1 << 5,
	A_COMPACT	= 1 << 6,
	A_FSYNC		= 1 << 7,	/* the disk-image round's fsync */
};

struct rdesc {
	const char *name;
	unsigned int attackers;
	int qcow;		/* the disk-image workload */
};

/* mmap never with truncate: a store past EOF would be a SIGBUS. */
static const struct rdesc sets[] = {
	{ "truncate+drop",		A_TRUNC | A_DROP,			0 },
	{ "punch+sync",			A_PUNCH | A_SYNC,			0 },
	{ "dio+compact",		A_DIO | A_COMPACT,			0 },
	{ "mmap+sync+drop",		A_MMAP | A_SYNC | A_DROP,		0 },
	{ "truncate+dio+compact",	A_TRUNC | A_DIO | A_COMPACT,		0 },
	{ "punch+dio+sync+drop",	A_PUNCH | A_DIO | A_SYNC | A_DROP,	0 },
	{ "mmap+compact+sync",		A_MMAP | A_COMPACT | A_SYNC,		0 },
	{ "truncate+punch+compact",	A_TRUNC | A_PUNCH | A_COMPACT,		0 },
};

#define NR_SETS		(sizeof(sets) / sizeof(sets[0]))

static const struct rdesc qcow_round = { "qcow2-like", A_FSYNC, 1 };

/* How a recorded write was made. */
enum {
	H_FILL, H_URING, H_NOWAIT, H_RETRY, H_DIO, H_MMAP,
};

static const char *const how_name[] = {
	[H_FILL]	= "prefill",
	[H_URING]	= "io_uring write",
	[H_NOWAIT]	= "io_uring RWF_NOWAIT write",
	[H_RETRY]	= "io_uring RWF_NOWAIT write, rest written blocking",
	[H_DIO]		= "O_DIRECT pwrite",
	[H_MMAP]	= "mmap store",
};

struct wrec {
	uint64_t stamp;
	uint64_t submit;	/* clock before it was submitted */
	uint64_t done;		/* clock after its completion was reaped */
	unsigned int how;
};

struct unit {
	pthread_mutex_t lock;	/* held by a write from submit to reap */
	uint32_t nr;		/* writes recorded, the prefill first */
	struct wrec hist[HIST];	/* the last ones: hist[(nr - 1) % HIST] */
};

enum { Z_NONE, Z_TRUNC, Z_PUNCH };

/* A truncate or punch: [lo, hi) read as zeros after it. */
struct zev {
	unsigned int kind;
	uint32_t lo, hi;
	uint64_t start, end;	/* clock before the call, after it returned */
};

/* One io_uring write of a batch. */
struct pending {
	uint32_t off, len;
	uint64_t stamp;
	uint64_t done;
	int res;
	int nowait;
};

enum role {
	R_WRITER, R_READER, R_TRUNC, R_PUNCH, R_DIO, R_MMAP, R_SYNC,
	R_DROP, R_COMPACT, R_FSYNC,
};

struct thr {
	pthread_t thread;
	enum role role;
	char name[16];
	unsigned int id;	/* stamp writer id */
	uint64_t rnd;
	uint32_t seq;		/* the last stamp seq issued */
	int nowait;		/* RWF_NOWAIT on every other write */
	unsigned long long ops, ops2;
	unsigned long long torn;	/* reader: torn grains (not on XFS) */
	char first_torn[768];
	int failed;
	struct pending pend[QD];
};

static struct {
	unsigned int rounds;
	unsigned int ms;
	int selftest_lose;
} cfg;

static int fd, dfd = -1;
static char path[PATH_MAX];
static unsigned int seed;
static int on_xfs, can_punch, can_drop, can_compact;
static char no_dio[64], no_punch[64];

static struct {
	unsigned int no;	/* round number, from 1 */
	unsigned int magic;
	const struct rdesc *d;
} cur;

static struct unit units[NR_UNITS];
static struct zev zev[MAX_ZEV];
static uint32_t nr_zev;
static uint64_t clock_seq;
static struct thr thrs[MAX_THREADS];
static unsigned int nr_thrs;
static unsigned char *map;
static unsigned char *img, *dimg;
static uint64_t deadline;
static int stop;
static pthread_barrier_t start_barrier;
static __thread sigjmp_buf *bus_jmp;

static uint64_t tick(void)
{
	return __atomic_add_fetch(&clock_seq, 1, __ATOMIC_SEQ_CST);
}

static int round_over(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED) ||
	       t_now_ns() >= deadline;
}

static void thr_fail(struct thr *t)
{
	t->failed = 1;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

/* A whole 4K, 16K or 64K slot, aligned to its size. */
static void pick_slot(uint64_t *rnd, uint32_t *off, uint32_t *len)
{
	static const uint32_t sizes[] = { 4096, 16384, 65536 };
	uint64_t x = t_rnd_next(rnd);

	*len = sizes[(x >> 32) % 3];
	*off = (x % (FILE_SIZE / *len)) * *len;
}

/* 4 KiB to 64 KiB at any 4 KiB boundary: writes overlap partially. */
static void pick_qcow(uint64_t *rnd, uint32_t *off, uint32_t *len)
{
	uint64_t x = t_rnd_next(rnd);

	*len = (1 + (x >> 40) % 16) * UNIT;
	*off = (x % ((FILE_SIZE - *len) / UNIT + 1)) * UNIT;
}

/*
 * Lock the units of [@off, @off + @len) in ascending order; without
 * @wait give up (holding none of them) when one is taken. A thread waits
 * only while it holds no unit lock but those of the same range, so a
 * chain of waiters climbs in unit order and cannot close a cycle; writes
 * in flight, whose locks are held, complete without anyone's help.
 */
static int lock_units(uint32_t off, uint32_t len, int wait)
{
	uint32_t u, first = off / UNIT, end = (off + len) / UNIT;

	for (u = first; u < end; u++) {
		if (wait) {
			pthread_mutex_lock(&units[u].lock);
			continue;
		}
		if (pthread_mutex_trylock(&units[u].lock)) {
			while (u-- > first)
				pthread_mutex_unlock(&units[u].lock);
			return 0;
		}
	}
	return 1;
}

static void unlock_units(uint32_t off, uint32_t len)
{
	uint32_t u;

	for (u = off / UNIT; u < (off + len) / UNIT; u++)
		pthread_mutex_unlock(&units[u].lock);
}

/* Record a completed write in its units, whose locks the caller holds. */
static void record(uint32_t off, uint32_t len, uint64_t stamp,
		   uint64_t submit, uint64_t done, unsigned int how)
{
	uint32_t u;

	for (u = off / UNIT; u < (off + len) / UNIT; u++) {
		struct unit *un = &units[u];

		un->hist[un->nr++ % HIST] = (struct wrec){ stamp, submit, done,
							   how };
	}
}

static const struct wrec *last_write(uint32_t u)
{
	return &units[u].hist[(units[u].nr - 1) % HIST];
}

/* A log entry for a truncate or punch, or NULL when the log is full. */
static struct zev *zev_get(void)
{
	uint32_t i = __atomic_fetch_add(&nr_zev, 1, __ATOMIC_RELAXED);

	return i < MAX_ZEV ? &zev[i] : NULL;
}

static uint32_t zev_count(void)
{
	return nr_zev < MAX_ZEV ? nr_zev : MAX_ZEV;
}

static int zev_covers(const struct zev *z, uint32_t u)
{
	return z->kind != Z_NONE && z->lo <= u * UNIT &&
	       (u + 1) * UNIT <= z->hi;
}

/*
 * Is the whole, uniform stamp @s one the bytes at file offset @off may
 * hold? It must be this round's, of a writer of the round, and its range
 * must cover @off; the prefill's must be @off's tile.
 */
static const char *bad_stamp(uint64_t s, uint32_t off)
{
	unsigned int w = T_STAMP_WRITER(s);

	if (T_STAMP_MAGIC(s) != cur.magic)
		return "not a stamp of this round";
	if (w == T_STAMP_FILL)
		return s == t_stamp_fill_tile(cur.magic, FILL_TILE, off) ?
		       NULL : "not the prefill of this tile";
	if (w > 2 && w != ID_DIO && w != ID_MMAP)
		return "no such writer";
	if (!T_STAMP_SEQ(s))
		return "sequence number 0";
	if (off < T_STAMP_OFF(s) || off >= T_STAMP_OFF(s) + T_STAMP_LEN(s))
		return "a write of another range";
	return NULL;
}

/* t_stamp_str(), or "zeros". */
static const char *word_str(uint64_t s, char *buf, size_t size)
{
	if (!s) {
		snprintf(buf, size, "zeros");
		return buf;
	}
	return t_stamp_str(s, buf, size);
}

/*
 * Check @len bytes read at file offset @off in pieces of @gran bytes:
 * each must hold one stamp in every word, which bad_stamp() accepts, or
 * zeros where @zero_ok. Returns 0, or 1 for a piece holding more than one
 * stamp or 2 for a bad stamp, described in @why.
 */
static int check_read(const unsigned char *buf, uint32_t off, uint32_t len,
		      uint32_t gran, int zero_ok, char *why, size_t size)
{
	const char *bad;
	uint32_t i;
	uint64_t s;
	char str[80];
	int n;

	for (i = 0; i < len; i += gran) {
		s = *(const uint64_t *)(buf + i);
		if (!t_stamp_whole(buf + i, gran)) {
			n = snprintf(why, size, "  [0x%x, 0x%x) holds more than one stamp:\n",
				     off + i, off + i + gran);
			t_stamp_describe(why + n, size - n, buf + i, gran,
					 MAX_REPORT);
			return 1;
		}
		if (!s && zero_ok)
			continue;
		bad = s ? bad_stamp(s, off + i) :
			  "zeros, in a round without truncate or punch";
		if (bad) {
			snprintf(why, size, "  [0x%x, 0x%x) holds %s: %s\n",
				 off + i, off + i + gran,
				 t_stamp_str(s, str, sizeof(str)), bad);
			return 2;
		}
	}
	return 0;
}

static int write_proc(const char *file, const char *s)
{
	int pfd = open(file, O_WRONLY);
	ssize_t ret;

	if (pfd < 0)
		return -errno;
	ret = write(pfd, s, strlen(s));
	ret = ret < 0 ? -errno : 0;
	close(pfd);
	return ret;
}

static void write_done(void *arg, const struct io_uring_cqe *cqe)
{
	struct thr *t = arg;
	struct pending *p = &t->pend[cqe->user_data];

	p->res = cqe->res;
	p->done = tick();
}

/*
 * Did an RWF_NOWAIT write leave some or all of it unwritten: -EAGAIN, a
 * short count, or -EOPNOTSUPP or -EINVAL where the file system takes no
 * buffered NOWAIT write at all (tmpfs)?
 */
static int nowait_unfinished(const struct pending *p)
{
	return p->res == -EAGAIN || p->res == -EOPNOTSUPP ||
	       p->res == -EINVAL || (p->res > 0 && p->res < (int)p->len);
}

/*
 * An RWF_NOWAIT write was refused or cut short: write the rest blocking,
 * still under the unit locks, so the write lands whole in the end.
 */
static int finish_nowait(struct thr *t, struct io_uring *ring,
			 struct pending *p, const unsigned char *buf)
{
	uint32_t done = p->res > 0 ? p->res : 0;
	int ret;

	ret = t_uring_pwrite(ring, fd, buf + done, p->len - done,
			     p->off + done, 0);
	if (ret != (int)(p->len - done)) {
		fprintf(stderr, "%s: blocking write of %u bytes at 0x%x after RWF_NOWAIT returned %d: %d%s%s\n",
			t->name, p->len - done, p->off + done, p->res, ret,
			ret < 0 ? " " : "", ret < 0 ? t_errno_name(-ret) : "");
		return 1;
	}
	p->done = tick();
	t->ops2++;
	return 0;
}

/* Prepare up to QD writes whose units this writer could lock. */
static unsigned int prep_batch(struct thr *t, struct io_uring *ring,
			       unsigned char *bufs)
{
	unsigned int n = 0, tries;
	uint32_t off, len;

	for (tries = 0; n < QD && tries < 2 * QD; tries++) {
		struct pending *p = &t->pend[n];
		struct io_uring_sqe *sqe;
		unsigned char *buf = bufs + n * MAX_LEN;

		if (cur.d->qcow)
			pick_qcow(&t->rnd, &off, &len);
		else
			pick_slot(&t->rnd, &off, &len);
		/* Wait only while holding nothing, and then surely. */
		if (!lock_units(off, len, !n && tries >= QD))
			continue;
		p->off = off;
		p->len = len;
		p->stamp = t_stamp(cur.magic, t->id, ++t->seq, off, len);
		p->nowait = t->nowait && (t->seq & 1);
		t_stamp_fill(buf, len, p->stamp);
		sqe = io_uring_get_sqe(ring);
		io_uring_prep_write(sqe, fd, buf, len, off);
		sqe->rw_flags = p->nowait ? RWF_NOWAIT : 0;
		sqe->user_data = n++;
	}
	return n;
}

static void *writer_fn(void *arg)
{
	struct thr *t = arg;
	unsigned int n, i, how;
	struct io_uring ring;
	unsigned char *bufs;
	struct pending *p;
	uint64_t submit;

	bufs = t_worker_ring(&ring, QD, QD * MAX_LEN, t->name);
	if (!bufs)
		thr_fail(t);
	pthread_barrier_wait(&start_barrier);

	while (bufs && !round_over()) {
		n = prep_batch(t, &ring, bufs);
		submit = tick();
		if (t_uring_batch(&ring, n, t->name, write_done, t)) {
			for (i = 0; i < n; i++)
				unlock_units(t->pend[i].off, t->pend[i].len);
			thr_fail(t);
			break;
		}
		for (i = 0; i < n; i++) {
			p = &t->pend[i];
			how = p->nowait ? H_NOWAIT : H_URING;
			if (p->res != (int)p->len && p->nowait &&
			    nowait_unfinished(p)) {
				how = H_RETRY;
				if (finish_nowait(t, &ring, p,
						  bufs + i * MAX_LEN))
					thr_fail(t);
			} else if (p->res != (int)p->len) {
				fprintf(stderr, "%s: io_uring write of %u bytes at 0x%x%s: res %d%s%s\n",
					t->name, p->len, p->off,
					p->nowait ? " (RWF_NOWAIT)" : "",
					p->res, p->res < 0 ? " " : "",
					p->res < 0 ? t_errno_name(-p->res) : "");
				thr_fail(t);
			}
			if (!t->failed)
				record(p->off, p->len, p->stamp, submit,
				       p->done, how);
			unlock_units(p->off, p->len);
		}
		t->ops += n;
	}
	t_worker_ring_exit(&ring, bufs);
	return NULL;
}

/* Disk-image readers: every grain of a read holds one whole stamp. */
static void *reader_fn(void *arg)
{
	struct thr *t = arg;
	unsigned char *buf;
	uint32_t off, len;
	char why[768];
	ssize_t ret;
	uint64_t x;
	int bad;

	buf = t_worker_buf(MAX_LEN, t->name);
	if (!buf)
		thr_fail(t);
	pthread_barrier_wait(&start_barrier);

	while (buf && !round_over()) {
		x = t_rnd_next(&t->rnd);
		len = (1 + (x >> 40) % 16) * UNIT;
		off = (x % ((FILE_SIZE - len) / T_GRAIN + 1)) * T_GRAIN;
		ret = pread(fd, buf, len, off);
		if (ret != (ssize_t)len) {
			fprintf(stderr, "%s: pread of %u bytes at 0x%x: %zd (%s)\n",
				t->name, len, off, ret,
				ret < 0 ? strerror(errno) : "short");
			thr_fail(t);
			break;
		}
		t->ops++;
		bad = check_read(buf, off, len, T_GRAIN, 0, why, sizeof(why));
		if (bad == 1 && !on_xfs) {
			if (!t->torn++)
				snprintf(t->first_torn, sizeof(t->first_torn),
					 "%s", why);
			continue;
		}
		if (bad) {
			fprintf(stderr, "%s: pread of [0x%x, 0x%x)%s:\n%s",
				t->name, off, off + len,
				bad == 1 ? " is torn (XFS serialises buffered reads against writes)" : "",
				why);
			thr_fail(t);
			break;
		}
	}
	free(buf);
	return NULL;
}

static void *trunc_fn(void *arg)
{
	struct thr *t = arg;
	uint32_t off, len;
	struct zev *z;
	int ret;

	pthread_barrier_wait(&start_barrier);
	while (!round_over() && (z = zev_get())) {
		pick_slot(&t->rnd, &off, &len);
		z->lo = off;
		z->hi = FILE_SIZE;
		z->start = tick();
		ret = ftruncate(fd, off);
		z->end = tick();
		if (ret) {
			fprintf(stderr, "%s: ftruncate to 0x%x: %s\n", t->name,
				off, strerror(errno));
			thr_fail(t);
			break;
		}
		z->kind = Z_TRUNC;
		/* Now and then let writers meet EOF: extending writes. */
		if (t->rnd & 2)
			usleep(100);
		if (ftruncate(fd, FILE_SIZE)) {
			fprintf(stderr, "%s: ftruncate back to 0x%x: %s\n",
				t->name, FILE_SIZE, strerror(errno));
			thr_fail(t);
			break;
		}
		t->ops++;
	}
	return NULL;
}

static void *punch_fn(void *arg)
{
	static const uint32_t sizes[] = { 4096, 16384, 65536, 262144 };
	struct thr *t = arg;
	uint32_t off, len;
	struct zev *z;
	uint64_t x;
	int ret;

	pthread_barrier_wait(&start_barrier);
	while (!round_over() && (z = zev_get())) {
		x = t_rnd_next(&t->rnd);
		len = sizes[(x >> 32) % 4];
		off = (x % (FILE_SIZE / len)) * len;
		z->lo = off;
		z->hi = off + len;
		z->start = tick();
		ret = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				off, len);
		z->end = tick();
		if (ret) {
			fprintf(stderr, "%s: punch [0x%x, 0x%x): %s\n", t->name,
				off, off + len, strerror(errno));
			thr_fail(t);
			break;
		}
		z->kind = Z_PUNCH;
		t->ops++;
		usleep(50);
	}
	return NULL;
}

static void *dio_fn(void *arg)
{
	struct thr *t = arg;
	int zero_ok = !!(cur.d->attackers & (A_TRUNC | A_PUNCH));
	uint64_t stamp, submit, done;
	unsigned char *buf;
	uint32_t off, len;
	char why[768];
	ssize_t ret;

	buf = t_worker_buf(MAX_LEN, t->name);
	if (!buf)
		thr_fail(t);
	pthread_barrier_wait(&start_barrier);

	while (buf && !round_over()) {
		pick_slot(&t->rnd, &off, &len);
		if (t->rnd & 4) {
			ret = pread(dfd, buf, len, off);
			if (ret < 0) {
				fprintf(stderr, "%s: O_DIRECT pread of %u bytes at 0x%x: %s\n",
					t->name, len, off, strerror(errno));
				thr_fail(t);
				break;
			}
			/* Short only at EOF, which is unit aligned. */
			if (check_read(buf, off, ret & ~(UNIT - 1), UNIT,
				       zero_ok, why, sizeof(why))) {
				fprintf(stderr, "%s: O_DIRECT pread of [0x%x, 0x%x):\n%s",
					t->name, off, off + len, why);
				thr_fail(t);
				break;
			}
			t->ops2++;
			continue;
		}
		lock_units(off, len, 1);
		stamp = t_stamp(cur.magic, t->id, ++t->seq, off, len);
		t_stamp_fill(buf, len, stamp);
		submit = tick();
		ret = pwrite(dfd, buf, len, off);
		done = tick();
		if (ret == (ssize_t)len)
			record(off, len, stamp, submit, done, H_DIO);
		unlock_units(off, len);
		if (ret != (ssize_t)len) {
			fprintf(stderr, "%s: O_DIRECT pwrite of %u bytes at 0x%x: %zd (%s)\n",
				t->name, len, off, ret,
				ret < 0 ? strerror(errno) : "short");
			thr_fail(t);
			break;
		}
		t->ops++;
	}
	free(buf);
	return NULL;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	static const char msg[] = "race-torture: SIGBUS outside an mmap store\n";
	ssize_t ret;

	(void)sig;
	(void)si;
	(void)uc;
	if (bus_jmp)
		siglongjmp(*bus_jmp, 1);
	ret = write(2, msg, sizeof(msg) - 1);
	(void)ret;
	_exit(T_EXIT_FAIL);
}

/* Store @len bytes into the mapping at @off: 0, or 1 after a SIGBUS. */
static int map_store(uint32_t off, const void *buf, uint32_t len)
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 1)) {
		bus_jmp = NULL;
		return 1;
	}
	bus_jmp = &jb;
	memcpy(map + off, buf, len);
	bus_jmp = NULL;
	return 0;
}

static void *mmap_fn(void *arg)
{
	struct thr *t = arg;
	uint64_t stamp, submit, done;
	unsigned char *buf;
	uint32_t off, len;
	struct stat st;

	buf = t_worker_buf(MAX_LEN, t->name);
	if (!buf)
		thr_fail(t);
	pthread_barrier_wait(&start_barrier);

	while (buf && !round_over()) {
		pick_slot(&t->rnd, &off, &len);
		lock_units(off, len, 1);
		stamp = t_stamp(cur.magic, t->id, ++t->seq, off, len);
		t_stamp_fill(buf, len, stamp);
		submit = tick();
		if (map_store(off, buf, len)) {
			unlock_units(off, len);
			fprintf(stderr, "%s: SIGBUS storing [0x%x, 0x%x) through MAP_SHARED (file size %lld), though nothing in this round shrinks the file\n",
				t->name, off, off + len,
				fstat(fd, &st) ? -1LL : (long long)st.st_size);
			thr_fail(t);
			break;
		}
		done = tick();
		record(off, len, stamp, submit, done, H_MMAP);
		unlock_units(off, len);
		t->ops++;
	}
	free(buf);
	return NULL;
}

static void *sync_fn(void *arg)
{
	struct thr *t = arg;
	uint64_t x;
	int ret;

	pthread_barrier_wait(&start_barrier);
	while (!round_over()) {
		x = t_rnd_next(&t->rnd);
		if (x % 8 == 0) {
			ret = fdatasync(fd);
			t->ops2++;
		} else {
			uint32_t len = (1 + (x >> 40) % 64) * 16384;
			uint32_t off = (x >> 8) % (FILE_SIZE / UNIT) * UNIT;

			ret = sync_file_range(fd, off, len,
					      SYNC_FILE_RANGE_WRITE);
			t->ops++;
		}
		if (ret) {
			fprintf(stderr, "%s: %s: %s%s\n", t->name,
				x % 8 ? "sync_file_range" : "fdatasync",
				strerror(errno), errno == EIO ?
				" (a page cache invalidation failure on direct I/O leaves -EIO: see the kernel log)" : "");
			thr_fail(t);
			break;
		}
		usleep(200);
	}
	return NULL;
}

static void *drop_fn(void *arg)
{
	struct thr *t = arg;
	uint64_t x, last = t_now_ns();
	uint32_t off, len;
	int ret;

	pthread_barrier_wait(&start_barrier);
	while (!round_over()) {
		x = t_rnd_next(&t->rnd);
		len = x % 4 ? (1 + (x >> 40) % 64) * 16384 : 0;
		off = len ? (x >> 8) % (FILE_SIZE / UNIT) * UNIT : 0;
		ret = posix_fadvise(fd, off, len, POSIX_FADV_DONTNEED);
		if (ret) {
			fprintf(stderr, "%s: fadvise DONTNEED: %s\n", t->name,
				strerror(ret));
			thr_fail(t);
			break;
		}
		t->ops++;
		/* System-wide and slow: a few times a round. */
		if (can_drop && t_now_ns() - last > 150000000ULL) {
			ret = write_proc(DROP_CACHES, "1");
			if (ret) {
				fprintf(stderr, "%s: %s: %s\n", t->name,
					DROP_CACHES, strerror(-ret));
				thr_fail(t);
				break;
			}
			t->ops2++;
			last = t_now_ns();
		}
		usleep(300);
	}
	return NULL;
}

static void *compact_fn(void *arg)
{
	struct thr *t = arg;

	pthread_barrier_wait(&start_barrier);
	while (!round_over()) {
		/* Failure is no finding: count successes only. */
		if (!write_proc(COMPACT_MEMORY, "1"))
			t->ops++;
		usleep(10000);
	}
	return NULL;
}

static void *fsync_fn(void *arg)
{
	struct thr *t = arg;

	pthread_barrier_wait(&start_barrier);
	while (!round_over()) {
		if (fsync(fd)) {
			fprintf(stderr, "%s: fsync: %s\n", t->name,
				strerror(errno));
			thr_fail(t);
			break;
		}
		t->ops++;
		usleep(20000);
	}
	return NULL;
}

static const struct {
	const char *name;
	void *(*fn)(void *arg);
	const char *what, *what2;
} roles[] = {
	[R_WRITER]	= { "w",	writer_fn,  "writes", "RWF_NOWAIT retried" },
	[R_READER]	= { "r",	reader_fn,  "reads", NULL },
	[R_TRUNC]	= { "truncate",	trunc_fn,   "down+up", NULL },
	[R_PUNCH]	= { "punch",	punch_fn,   "punches", NULL },
	[R_DIO]		= { "dio",	dio_fn,     "writes", "reads" },
	[R_MMAP]	= { "mmap",	mmap_fn,    "stores", NULL },
	[R_SYNC]	= { "sync",	sync_fn,    "sync_file_range",
			    "fdatasync" },
	[R_DROP]	= { "drop",	drop_fn,    "fadvise", "drop_caches" },
	[R_COMPACT]	= { "compact",	compact_fn, "compact_memory", NULL },
	[R_FSYNC]	= { "fsync",	fsync_fn,   "fsync", NULL },
};

static struct thr *add_thr(enum role role, unsigned int id)
{
	struct thr *t = &thrs[nr_thrs];

	memset(t, 0, sizeof(*t));
	t->role = role;
	t->id = id;
	if (role == R_WRITER || role == R_READER)
		snprintf(t->name, sizeof(t->name), "%s%u", roles[role].name,
			 id);
	else
		snprintf(t->name, sizeof(t->name), "%s", roles[role].name);
	t->rnd = ((seed + 1ULL) * 0x9e3779b97f4a7c15ULL ^
		  (cur.no * 0x100000001b3ULL + nr_thrs + 1) << 8) | 1;
	nr_thrs++;
	return t;
}

static int read_all(int rfd, unsigned char *buf, const char *what)
{
	uint32_t done = 0;
	ssize_t ret;

	while (done < FILE_SIZE) {
		ret = pread(rfd, buf + done, FILE_SIZE - done < (1U << 20) ?
			    FILE_SIZE - done : (1U << 20), done);
		if (ret <= 0) {
			fprintf(stderr, "%s at 0x%x: %zd (%s)\n", what, done,
				ret, ret < 0 ? strerror(errno) : "EOF");
			return 1;
		}
		done += ret;
	}
	return 0;
}

/* Prefill the file with this round's stamps, cached, and reset the log. */
static int prefill(void)
{
	uint32_t u;

	if (t_stamp_prefill(fd, cur.magic, FILE_SIZE, FILL_TILE) ||
	    read_all(fd, img, "prefill read-back"))
		return 1;
	for (u = 0; u < NR_UNITS; u++) {
		units[u].nr = 1;
		units[u].hist[0] = (struct wrec){
			t_stamp_fill_tile(cur.magic, FILL_TILE, u * UNIT),
			0, 0, H_FILL };
	}
	memset(zev, 0, sizeof(zev));
	nr_zev = 0;
	return 0;
}

/*
 * The truncates and punches covering unit @u, relative to its last
 * write: any started after that write's completion was reaped (@after),
 * any not finished before it was submitted (@during).
 */
static void zeroings(uint32_t u, int *after, int *during)
{
	const struct wrec *w = last_write(u);
	uint32_t i, n = zev_count();

	*after = *during = 0;
	for (i = 0; i < n; i++) {
		if (!zev_covers(&zev[i], u))
			continue;
		if (zev[i].start > w->done)
			*after = 1;
		else if (zev[i].end > w->submit)
			*during = 1;
	}
}

/* Print the writes recorded for @u and the last zeroings covering it. */
static void print_history(uint32_t u)
{
	const struct zev *last[MAX_REPORT] = { NULL };
	uint32_t i, j, k = 0, n = zev_count(), nr = units[u].nr;
	const struct wrec *w;
	char str[80];

	fprintf(stderr, "    its last writes (of %u, clock at submit..after completion):\n",
		nr);
	for (i = nr > HIST ? nr - HIST : 0; i < nr; i++) {
		w = &units[u].hist[i % HIST];
		fprintf(stderr, "      %s, %s, clock %llu..%llu\n",
			t_stamp_str(w->stamp, str, sizeof(str)),
			how_name[w->how], (unsigned long long)w->submit,
			(unsigned long long)w->done);
	}
	/* The MAX_REPORT latest-starting ones, oldest first. */
	for (i = 0; i < n; i++) {
		const struct zev *z = &zev[i];

		if (!zev_covers(z, u))
			continue;
		if (k == MAX_REPORT) {
			if (z->start < last[0]->start)
				continue;
			memmove(last, last + 1, --k * sizeof(*last));
		}
		for (j = k; j > 0 && last[j - 1]->start > z->start; j--)
			last[j] = last[j - 1];
		last[j] = z;
		k++;
	}
	for (i = 0; i < k; i++) {
		if (last[i]->kind == Z_TRUNC)
			fprintf(stderr, "      truncate to 0x%x, clock %llu..%llu\n",
				last[i]->lo, (unsigned long long)last[i]->start,
				(unsigned long long)last[i]->end);
		else
			fprintf(stderr, "      punch [0x%x, 0x%x), clock %llu..%llu\n",
				last[i]->lo, last[i]->hi,
				(unsigned long long)last[i]->start,
				(unsigned long long)last[i]->end);
	}
}

/* Invariants 1-3 on the file read back into @buf. */
static unsigned int check_units(const unsigned char *buf)
{
	char exp[96], got[80], desc[512];
	const unsigned char *p;
	const struct wrec *w;
	unsigned int bad = 0;
	int after, during;
	const char *why;
	uint32_t u;
	uint64_t s;

	for (u = 0; u < NR_UNITS; u++) {
		p = buf + u * UNIT;
		s = *(const uint64_t *)p;
		w = last_write(u);
		zeroings(u, &after, &during);
		why = NULL;
		if (!t_stamp_whole(p, UNIT))
			why = "holds more than one stamp (invariant 1: a torn or mixed write)";
		else if (s && bad_stamp(s, u * UNIT))
			why = "holds a stamp of no write that covers it (invariant 1)";
		else if (after && s)
			why = "holds data, though a truncate or punch covering it started after its last write had completed (invariant 3: zeroed data came back)";
		else if (!after && s != w->stamp && (s || !during))
			why = s ? "holds another write than the last one acknowledged (invariant 2: lost write)" :
				  "reads zeros, though no truncate or punch covering it ran during or after its last write (invariant 2: lost write)";
		if (!why)
			continue;
		if (bad++ >= MAX_REPORT)
			continue;
		t_stamp_str(w->stamp, got, sizeof(got));
		snprintf(exp, sizeof(exp), "%s%s", after ? "zeros" : got,
			 !after && during ? " or zeros" : "");
		fprintf(stderr, "  round %u [%s] unit 0x%x %s\n",
			cur.no, cur.d->name, u * UNIT, why);
		fprintf(stderr, "    expected %s, found %s\n", exp,
			word_str(s, got, sizeof(got)));
		if (!t_stamp_whole(p, UNIT)) {
			t_stamp_describe(desc, sizeof(desc), p, UNIT,
					 MAX_REPORT);
			fputs(desc, stderr);
		}
		print_history(u);
	}
	if (bad)
		fprintf(stderr, "  %u of %u units bad\n", bad, NR_UNITS);
	return bad;
}

/* Invariant 4: the page cache and the disk agree after fsync. */
static unsigned int compare_disk(const unsigned char *a,
				 const unsigned char *b, const char *how)
{
	char sa[80], sb[80], desc[512];
	unsigned int bad = 0;
	uint32_t u, i;

	for (u = 0; u < NR_UNITS; u++) {
		const unsigned char *pa = a + u * UNIT, *pb = b + u * UNIT;

		if (!memcmp(pa, pb, UNIT) || bad++ >= MAX_REPORT)
			continue;
		for (i = 0; pa[i] == pb[i]; i++)
			;
		i &= ~7U;
		fprintf(stderr, "  round %u [%s] unit 0x%x differs at 0x%x: pread after fsync has %s, %s has %s (invariant 4)\n",
			cur.no, cur.d->name, u * UNIT, u * UNIT + i,
			word_str(*(const uint64_t *)(pa + i), sa, sizeof(sa)),
			how,
			word_str(*(const uint64_t *)(pb + i), sb, sizeof(sb)));
		t_stamp_describe(desc, sizeof(desc), pa, UNIT, MAX_REPORT);
		fprintf(stderr, "    pread:\n%s", desc);
		t_stamp_describe(desc, sizeof(desc), pb, UNIT, MAX_REPORT);
		fprintf(stderr, "    %s:\n%s", how, desc);
	}
	if (bad)
		fprintf(stderr, "  %u of %u units differ between the page cache and the disk\n",
			bad, NR_UNITS);
	return bad;
}

/*
 * TEST_SELFTEST_LOSE: put the previous write's stamp back into the first
 * unit written more than once, as a lost write would leave it.
 */
static int selftest_lose(void)
{
	const struct wrec *prev;
	unsigned char *buf;
	char str[80];
	uint32_t u;
	int ret = 0;

	for (u = 0; u < NR_UNITS && units[u].nr < 2; u++)
		;
	if (u == NR_UNITS)
		return 0;
	prev = &units[u].hist[(units[u].nr - 2) % HIST];
	buf = t_worker_buf(UNIT, "self-test");
	if (!buf)
		return 1;
	t_stamp_fill(buf, UNIT, prev->stamp);
	if (pwrite(fd, buf, UNIT, u * UNIT) != UNIT) {
		perror("self-test pwrite");
		ret = 1;
	}
	printf("  self-test: unit 0x%x rolled back to %s\n", u * UNIT,
	       t_stamp_str(prev->stamp, str, sizeof(str)));
	free(buf);
	return ret;
}

static int check_final(void)
{
	const char *how = "O_DIRECT read";
	struct stat st;
	unsigned int bad;

	if (fsync(fd)) {
		fprintf(stderr, "  fsync after the round: %s%s\n",
			strerror(errno), errno == EIO ?
			" (a page cache invalidation failure on direct I/O leaves -EIO: see the kernel log)" : "");
		return 1;
	}
	if (fstat(fd, &st)) {
		perror("fstat");
		return 1;
	}
	if (st.st_size != FILE_SIZE) {
		fprintf(stderr, "  file size %lld after the round, want %u\n",
			(long long)st.st_size, FILE_SIZE);
		return 1;
	}
	if (read_all(fd, img, "pread after the round"))
		return 1;
	if (dfd >= 0) {
		if (read_all(dfd, dimg, "O_DIRECT read after the round"))
			return 1;
	} else {
		how = "pread after fadvise DONTNEED";
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (read_all(fd, dimg, "pread after fadvise DONTNEED"))
			return 1;
	}
	bad = check_units(img);
	bad += compare_disk(img, dimg, how);
	return bad != 0;
}

/* "w0: 1234 writes, dio: 5 writes, 6 reads, ..." of the round. */
static void summary(char *out, size_t size)
{
	size_t n = 0;
	unsigned int i;

	out[0] = 0;
	for (i = 0; i < nr_thrs && n < size; i++) {
		const struct thr *t = &thrs[i];

		n += snprintf(out + n, size - n, "%s%s: %llu %s", i ? ", " : "",
			      t->name, t->ops, roles[t->role].what);
		if (roles[t->role].what2 && n < size &&
		    (t->role != R_WRITER || t->nowait))
			n += snprintf(out + n, size - n, ", %llu %s", t->ops2,
				      roles[t->role].what2);
		if (t->role == R_READER && n < size)
			n += snprintf(out + n, size - n, ", %llu torn grains",
				      t->torn);
	}
	if (cur.d->attackers & A_DIO && dfd < 0 && n < size)
		n += snprintf(out + n, size - n, ", dio skipped (%s)", no_dio);
	if (cur.d->attackers & A_PUNCH && !can_punch && n < size)
		n += snprintf(out + n, size - n, ", punch skipped (%s)",
			      no_punch);
	if (cur.d->attackers & A_DROP && !can_drop && n < size)
		n += snprintf(out + n, size - n, ", drop_caches skipped");
	if (cur.d->attackers & A_COMPACT && !can_compact && n < size)
		n += snprintf(out + n, size - n, ", compact skipped (no %s)",
			      COMPACT_MEMORY);
	if (nr_zev > MAX_ZEV && n < size)
		snprintf(out + n, size - n, ", zeroing log full: truncate and punch stopped early");
}

static int run_round(const struct rdesc *d, unsigned int no)
{
	unsigned int i, a = d->attackers, failed = 0;
	uint64_t t0, t1, t2;
	char line[1024];
	int ret = 1;

	cur.no = no;
	cur.magic = 0x80 | (no & 0x7f);
	cur.d = d;
	if (prefill())
		return 1;
	if (a & A_MMAP) {
		map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
			   fd, 0);
		if (map == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}

	nr_thrs = 0;
	for (i = 0; i < (d->qcow ? 3U : 2U); i++)
		add_thr(R_WRITER, i)->nowait = d->qcow;
	if (d->qcow)
		for (i = 0; i < 2; i++)
			add_thr(R_READER, i);
	if (a & A_TRUNC)
		add_thr(R_TRUNC, 0);
	if (a & A_PUNCH && can_punch)
		add_thr(R_PUNCH, 0);
	if (a & A_DIO && dfd >= 0)
		add_thr(R_DIO, ID_DIO);
	if (a & A_MMAP)
		add_thr(R_MMAP, ID_MMAP);
	if (a & A_SYNC)
		add_thr(R_SYNC, 0);
	if (a & A_DROP)
		add_thr(R_DROP, 0);
	if (a & A_COMPACT && can_compact)
		add_thr(R_COMPACT, 0);
	if (a & A_FSYNC)
		add_thr(R_FSYNC, 0);

	stop = 0;
	pthread_barrier_init(&start_barrier, NULL, nr_thrs + 1);
	for (i = 0; i < nr_thrs; i++) {
		if (pthread_create(&thrs[i].thread, NULL,
				   roles[thrs[i].role].fn, &thrs[i])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(T_EXIT_FAIL);
		}
	}
	t0 = t_now_ns();
	deadline = t0 + cfg.ms * 1000000ULL;
	pthread_barrier_wait(&start_barrier);
	for (i = 0; i < nr_thrs; i++) {
		pthread_join(thrs[i].thread, NULL);
		failed |= thrs[i].failed;
	}
	t1 = t_now_ns();
	pthread_barrier_destroy(&start_barrier);
	if (map) {
		munmap(map, FILE_SIZE);
		map = NULL;
	}

	if (!failed && (!cfg.selftest_lose || !selftest_lose()))
		ret = check_final();
	t2 = t_now_ns();
	summary(line, sizeof(line));
	printf("round %u %s: %s; %.2fs, check %.2fs: %s\n", no, d->name, line,
	       (t1 - t0) / 1e9, (t2 - t1) / 1e9, ret ? "FAIL" : "ok");
	for (i = 0; i < nr_thrs; i++)
		if (thrs[i].torn)
			printf("  torn reads reported, not asserted, on fs %s (not XFS); the first of %s:\n%s",
			       t_test_fs(), thrs[i].name, thrs[i].first_torn);
	fflush(stdout);
	return ret;
}

/* Can this file system take O_DIRECT and punch? Sets no_dio, no_punch. */
static void probe(void)
{
	unsigned char *buf;

	buf = t_worker_buf(2 * UNIT, "probe");
	if (!buf)
		exit(T_EXIT_FAIL);
	memset(buf, 0, 2 * UNIT);
	if (pwrite(fd, buf, 2 * UNIT, 0) != 2 * UNIT) {
		perror("probe pwrite");
		exit(T_EXIT_FAIL);
	}
	dfd = open(path, O_RDWR | O_DIRECT);
	if (dfd < 0) {
		snprintf(no_dio, sizeof(no_dio), "open O_DIRECT: %s",
			 strerror(errno));
	} else if (pread(dfd, buf, UNIT, 0) != UNIT ||
		   pwrite(dfd, buf, UNIT, 0) != UNIT) {
		snprintf(no_dio, sizeof(no_dio), "O_DIRECT I/O: %s",
			 strerror(errno));
		close(dfd);
		dfd = -1;
	}
	can_punch = !fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       0, UNIT);
	if (!can_punch)
		snprintf(no_punch, sizeof(no_punch), "fallocate punch: %s",
			 strerror(errno));
	can_drop = !access(DROP_CACHES, W_OK);
	can_compact = !access(COMPACT_MEMORY, W_OK);
	free(buf);
}

int main(void)
{
	unsigned int i, no = 0, nr_qcow;
	struct sigaction sa;
	struct io_uring ring;
	struct statfs sfs;
	uint64_t start;
	int ret;

	seed = t_seed("race-torture");
	cfg.rounds = t_env_uint("TEST_TORTURE_ROUNDS", 6, 1, 100000);
	cfg.ms = t_env_uint("TEST_TORTURE_MS", 500, 1, 600000);
	cfg.selftest_lose = t_env_uint("TEST_SELFTEST_LOSE", 0, 0, 1);

	ret = io_uring_queue_init(1, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	io_uring_queue_exit(&ring);

	fd = t_create_file("race-torture", 0, path, sizeof(path));
	if (fstatfs(fd, &sfs)) {
		perror("fstatfs");
		return T_EXIT_FAIL;
	}
	on_xfs = sfs.f_type == XFS_SUPER_MAGIC;
	probe();
	/*
	 * ext4 and XFS take both: there a missing attacker is a failure, not
	 * a torture with fewer detectors (elsewhere, e.g. the host's tmpfs
	 * of the selftest, it is only named in the header line).
	 */
	if ((on_xfs || sfs.f_type == EXT4_SUPER_MAGIC) && (no_dio[0] || !can_punch)) {
		fprintf(stderr, "%s: the O_DIRECT or punch attacker cannot run (%s%s%s)\n",
			t_test_fs(), no_dio, no_dio[0] && !can_punch ? "; " : "",
			can_punch ? "" : no_punch);
		return T_EXIT_FAIL;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGBUS, &sa, NULL);

	for (i = 0; i < NR_UNITS; i++)
		pthread_mutex_init(&units[i].lock, NULL);
	img = t_worker_buf(FILE_SIZE, "image");
	dimg = t_worker_buf(FILE_SIZE, "image");
	if (!img || !dimg)
		return T_EXIT_FAIL;

	printf("fs %s (%sXFS), %u KiB file, %u rounds of %u ms; O_DIRECT %s, punch %s, drop_caches %s, compact_memory %s%s\n",
	       t_test_fs(), on_xfs ? "" : "not ", FILE_SIZE / 1024,
	       cfg.rounds, cfg.ms, dfd >= 0 ? "yes" : no_dio,
	       can_punch ? "yes" : no_punch, can_drop ? "yes" : "no",
	       can_compact ? "yes" : "no",
	       cfg.selftest_lose ? "; SELF-TEST: one unit rolled back a write per round, must fail" : "");
	fflush(stdout);

	start = t_now_ns();
	nr_qcow = cfg.rounds / NR_SETS ? cfg.rounds / NR_SETS : 1;
	for (i = 0; i < cfg.rounds + nr_qcow; i++) {
		const struct rdesc *d = i < cfg.rounds ? &sets[i % NR_SETS] :
				       &qcow_round;

		if (run_round(d, ++no)) {
			fprintf(stderr, "race-torture: round %u [%s] failed (fs %s, seed %u: rerun with TEST_SEED=%u TEST_TORTURE_ROUNDS=%u TEST_TORTURE_MS=%u)\n",
				no, d->name, t_test_fs(), seed, seed,
				cfg.rounds, cfg.ms);
			return T_EXIT_FAIL;
		}
	}
	printf("race-torture: %u rounds passed in %.1fs\n", no,
	       (t_now_ns() - start) / 1e9);
	if (dfd >= 0)
		close(dfd);
	close(fd);
	free(img);
	free(dimg);
	return T_EXIT_PASS;
}
