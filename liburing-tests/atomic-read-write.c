/* SPDX-License-Identifier: MIT */
/*
 * Description: read-vs-write atomicity of buffered overwrites. Writer
 *		threads (io_uring rings, in two rounds with registered
 *		buffers, and pwrite(2)) overwrite whole 4 KiB,
 *		16 KiB or 64 KiB slots of a prefilled, fsynced file with a
 *		stamp in every 64-bit word, while reader threads (io_uring
 *		rings and pread(2)) read whole slots and count the reads that
 *		hold more than one stamp: torn reads. XFS serializes buffered
 *		reads against writes (IOLOCK shared vs exclusive), so there a
 *		torn read fails the test; ext4 never promised it, so there the
 *		rate is only reported. On every file system a read must be
 *		full length and must never show data that is not some write's
 *		whole stamp where it is whole, nor go back in time, and after
 *		each round every slot must hold the last write some writer
 *		made to it.
 *
 *		Environment: TEST_THREADS (writers, 4), TEST_READERS (4),
 *		TEST_QD (requests in flight per ring, 4), TEST_ROUND_MS (600),
 *		TEST_ROUNDS (passes over the round list, 1),
 *		TEST_SELFTEST_TEAR=1 (writer 0 writes every slot in two halves
 *		with different stamps: must fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>

#include "helpers.h"
#include "stamp.h"

#define MAX_WRITERS	32
#define MAX_READERS	32
#define MAX_QD		16
#define NR_SLOTS	16
#define MAX_REPORT	4

struct writer {
	pthread_t thread;
	unsigned int id;
	char name[16];		/* "w3", for messages */
	int use_uring;
	int halves;		/* self-test: every write in two halves */
	uint64_t rnd;
	uint32_t nr;		/* seq of the last write issued (atomic) */
	uint32_t last[NR_SLOTS];	/* seq of its last write to each slot */
	int failed;
};

struct reader {
	pthread_t thread;
	unsigned int id;
	char name[16];		/* "r3", for messages */
	int use_uring;
	uint64_t rnd;
	/* Highest seq of each writer read whole in each slot, and whether
	 * any writer's write was, by reads that completed before the
	 * current batch was submitted. */
	uint32_t seen[NR_SLOTS][MAX_WRITERS];
	unsigned char seen_any[NR_SLOTS];
	unsigned long long reads, torn;
	int failed;
	char first_torn[512];
};

struct round {
	const char *name;
	uint32_t slot;		/* slot size; the file has NR_SLOTS of them */
	int fixed;		/* io_uring writers use registered buffers */
};

static const struct round rounds[] = {
	{ "4k-slots",		4096, 0 },
	{ "16k-slots",		16384, 0 },
	{ "64k-slots",		65536, 0 },
	/* WRITE_FIXED: a bio_vec source, copied without a bounce buffer. */
	{ "16k-slots+fixed",	16384, 1 },
	{ "64k-slots+fixed",	65536, 1 },
};

static struct {
	unsigned int writers;
	unsigned int readers;
	unsigned int qd;
	unsigned int round_ms;
	unsigned int passes;
	int selftest_tear;
} cfg;

static int fd;
static int on_xfs;
static unsigned int seed;
static struct writer writers[MAX_WRITERS];
static struct reader readers[MAX_READERS];
static const struct round *cur;
static unsigned int cur_magic;
static uint64_t deadline;
static int stop;
static unsigned int writers_left;
static pthread_barrier_t start_barrier;

/* The prefill's stamp of @slot. */
static uint64_t fill_stamp(unsigned int slot)
{
	return t_stamp_fill_tile(cur_magic, cur->slot, slot * cur->slot);
}

static void fail_round(int *failed)
{
	*failed = 1;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

static int writer_over(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED) ||
	       t_now_ns() >= deadline;
}

/* @n distinct random slots: one writer never has two writes in flight
 * to a slot, so its writes to each slot are ordered. */
static void pick_slots(uint64_t *rnd, unsigned int *slots, unsigned int n)
{
	unsigned int i, j;

	for (i = 0; i < n; i++) {
again:
		slots[i] = t_rnd_next(rnd) % NR_SLOTS;
		for (j = 0; j < i; j++)
			if (slots[j] == slots[i])
				goto again;
	}
}

/* Log a write to @slot and return its stamp; readers may see it now. */
static uint64_t issue(struct writer *w, unsigned int slot, uint32_t off,
		      uint32_t len)
{
	uint32_t seq = w->nr + 1;

	w->last[slot] = seq;
	__atomic_store_n(&w->nr, seq, __ATOMIC_RELEASE);
	return t_stamp(cur_magic, w->id, seq, off, len);
}

static void write_done(void *arg, const struct io_uring_cqe *cqe)
{
	struct writer *w = arg;

	if (cqe->res != (int)cur->slot) {
		fprintf(stderr, "w%u: io_uring write of %u bytes at 0x%llx: res %d\n",
			w->id, cur->slot, (unsigned long long)cqe->user_data,
			cqe->res);
		fail_round(&w->failed);
	}
}

static void *uring_writer(void *arg)
{
	struct writer *w = arg;
	unsigned int slots[MAX_QD], i;
	struct io_uring ring;
	unsigned char *bufs;

	bufs = t_worker_ring(&ring, cfg.qd, cfg.qd * cur->slot, w->name);
	if (bufs && cur->fixed)
		bufs = t_worker_ring_fixed(&ring, bufs, cfg.qd, cur->slot,
					   w->name);
	if (!bufs)
		fail_round(&w->failed);
	pthread_barrier_wait(&start_barrier);

	while (bufs && !writer_over()) {
		pick_slots(&w->rnd, slots, cfg.qd);
		for (i = 0; i < cfg.qd; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			unsigned char *buf = bufs + i * cur->slot;
			uint32_t off = slots[i] * cur->slot;

			t_stamp_fill(buf, cur->slot,
				     issue(w, slots[i], off, cur->slot));
			if (cur->fixed)
				io_uring_prep_write_fixed(sqe, fd, buf,
							  cur->slot, off, i);
			else
				io_uring_prep_write(sqe, fd, buf, cur->slot,
						    off);
			sqe->user_data = off;
		}
		if (t_uring_batch(&ring, cfg.qd, w->name, write_done, w)) {
			fail_round(&w->failed);
			break;
		}
	}
	t_worker_ring_exit(&ring, bufs);
	__atomic_sub_fetch(&writers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int pwrite_full(struct writer *w, const void *buf, uint32_t len,
		       uint32_t off)
{
	ssize_t ret = pwrite(fd, buf, len, off);

	if (ret == (ssize_t)len)
		return 0;
	fprintf(stderr, "w%u: pwrite of %u bytes at 0x%x: %zd (%s)\n", w->id,
		len, off, ret, ret < 0 ? strerror(errno) : "short");
	fail_round(&w->failed);
	return 1;
}

/*
 * TEST_SELFTEST_TEAR: the two halves of a slot get different stamps, in
 * two pwrite calls, as a torn write would leave them.
 */
static int write_halves(struct writer *w, void *buf, unsigned int slot)
{
	uint32_t off = slot * cur->slot, half = cur->slot / 2;

	t_stamp_fill(buf, half, issue(w, slot, off, half));
	if (pwrite_full(w, buf, half, off))
		return 1;
	t_stamp_fill(buf, half, issue(w, slot, off + half, half));
	return pwrite_full(w, buf, half, off + half);
}

static void *pwrite_writer(void *arg)
{
	struct writer *w = arg;
	unsigned int slot;
	uint32_t off;
	void *buf;

	buf = t_worker_buf(cur->slot, w->name);
	if (!buf)
		fail_round(&w->failed);
	pthread_barrier_wait(&start_barrier);

	while (buf && !writer_over()) {
		pick_slots(&w->rnd, &slot, 1);
		if (w->halves) {
			if (write_halves(w, buf, slot))
				break;
			continue;
		}
		off = slot * cur->slot;
		t_stamp_fill(buf, cur->slot, issue(w, slot, off, cur->slot));
		if (pwrite_full(w, buf, cur->slot, off))
			break;
	}
	free(buf);
	__atomic_sub_fetch(&writers_left, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Is this whole, uniform stamp one a reader of @slot may see? It must
 * name a write issued to exactly this slot. Returns NULL or why not.
 */
static const char *bad_stamp(uint64_t s, unsigned int slot)
{
	unsigned int w = T_STAMP_WRITER(s);
	uint32_t seq = T_STAMP_SEQ(s);

	if (T_STAMP_MAGIC(s) != cur_magic)
		return "not a stamp of this round";
	if (w == T_STAMP_FILL)
		return s == fill_stamp(slot) ? NULL : "not this slot's prefill";
	if (w >= cfg.writers)
		return "no such writer";
	if (T_STAMP_OFF(s) != slot * cur->slot || T_STAMP_LEN(s) != cur->slot)
		return "a write of another range";
	if (!seq || seq > __atomic_load_n(&writers[w].nr, __ATOMIC_ACQUIRE))
		return "a write not issued yet";
	return NULL;
}

struct seen_update {
	unsigned int slot, writer;
	uint32_t seq;
};

/*
 * Classify one completed read of @slot. A read holding one stamp must
 * name a write to this slot no older than what earlier batches of this
 * reader saw there; one holding several is torn. Returns 0 whole, 1 torn,
 * -1 a failure on any file system.
 */
static int check_read(struct reader *r, const void *buf, unsigned int slot,
		      struct seen_update *upd)
{
	uint64_t s = *(const uint64_t *)buf;
	const char *why;
	char str[80];

	if (!t_stamp_whole(buf, cur->slot)) {
		if (!r->torn) {
			int n = snprintf(r->first_torn, sizeof(r->first_torn),
					 "  %s reader r%u, slot %u [0x%x, 0x%x):\n",
					 r->use_uring ? "io_uring" : "pread",
					 r->id, slot, slot * cur->slot,
					 (slot + 1) * cur->slot);

			t_stamp_describe(r->first_torn + n,
					 sizeof(r->first_torn) - n, buf,
					 cur->slot, MAX_REPORT);
		}
		r->torn++;
		return 1;
	}
	why = bad_stamp(s, slot);
	if (!why && T_STAMP_WRITER(s) == T_STAMP_FILL && r->seen_any[slot])
		why = "the prefill, after a later write was read there";
	if (!why && T_STAMP_WRITER(s) != T_STAMP_FILL &&
	    T_STAMP_SEQ(s) < r->seen[slot][T_STAMP_WRITER(s)])
		why = "older than a write of the same writer read there before";
	if (why) {
		fprintf(stderr, "r%u: %s read of slot %u holds %s: %s\n", r->id,
			r->use_uring ? "io_uring" : "pread", slot,
			t_stamp_str(s, str, sizeof(str)), why);
		return -1;
	}
	upd->slot = slot;
	upd->writer = T_STAMP_WRITER(s);
	upd->seq = T_STAMP_SEQ(s);
	return 0;
}

static void apply_updates(struct reader *r, const struct seen_update *upd,
			  unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (upd[i].writer == T_STAMP_FILL)
			continue;
		r->seen_any[upd[i].slot] = 1;
		if (upd[i].seq > r->seen[upd[i].slot][upd[i].writer])
			r->seen[upd[i].slot][upd[i].writer] = upd[i].seq;
	}
}

static int reader_over(void)
{
	return __atomic_load_n(&stop, __ATOMIC_RELAXED) ||
	       !__atomic_load_n(&writers_left, __ATOMIC_ACQUIRE);
}

static void read_done(void *arg, const struct io_uring_cqe *cqe)
{
	struct reader *r = arg;

	if (cqe->res != (int)cur->slot) {
		fprintf(stderr, "r%u: io_uring read of slot %u: res %d, want %u\n",
			r->id, (unsigned int)cqe->user_data, cqe->res,
			cur->slot);
		fail_round(&r->failed);
	}
}

static void *uring_reader(void *arg)
{
	struct seen_update upd[MAX_QD];
	unsigned int slots[MAX_QD], i, nr_upd;
	struct reader *r = arg;
	struct io_uring ring;
	unsigned char *bufs;
	int ret;

	bufs = t_worker_ring(&ring, cfg.qd, cfg.qd * cur->slot, r->name);
	if (!bufs)
		fail_round(&r->failed);
	pthread_barrier_wait(&start_barrier);

	while (bufs && !reader_over()) {
		for (i = 0; i < cfg.qd; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

			slots[i] = t_rnd_next(&r->rnd) % NR_SLOTS;
			io_uring_prep_read(sqe, fd, bufs + i * cur->slot,
					   cur->slot, slots[i] * cur->slot);
			sqe->user_data = slots[i];
		}
		if (t_uring_batch(&ring, cfg.qd, r->name, read_done, r)) {
			fail_round(&r->failed);
			break;
		}
		if (r->failed)
			break;
		/* All of the batch against what earlier batches saw. */
		for (i = 0, nr_upd = 0; i < cfg.qd; i++) {
			r->reads++;
			ret = check_read(r, bufs + i * cur->slot, slots[i],
					 &upd[nr_upd]);
			if (ret < 0)
				fail_round(&r->failed);
			else if (!ret)
				nr_upd++;
		}
		apply_updates(r, upd, nr_upd);
	}
	t_worker_ring_exit(&ring, bufs);
	return NULL;
}

static void *pread_reader(void *arg)
{
	struct reader *r = arg;
	struct seen_update upd;
	unsigned int slot;
	ssize_t ret;
	void *buf;

	buf = t_worker_buf(cur->slot, r->name);
	if (!buf)
		fail_round(&r->failed);
	pthread_barrier_wait(&start_barrier);

	while (buf && !reader_over()) {
		slot = t_rnd_next(&r->rnd) % NR_SLOTS;
		ret = pread(fd, buf, cur->slot, slot * cur->slot);
		if (ret != (ssize_t)cur->slot) {
			fprintf(stderr, "r%u: pread of slot %u: %zd (%s)\n",
				r->id, slot, ret,
				ret < 0 ? strerror(errno) : "short");
			fail_round(&r->failed);
			break;
		}
		r->reads++;
		ret = check_read(r, buf, slot, &upd);
		if (ret < 0) {
			fail_round(&r->failed);
			break;
		}
		if (!ret)
			apply_updates(r, &upd, 1);
	}
	free(buf);
	return NULL;
}

/*
 * After the round: every slot holds one stamp in every word, and it is
 * the last write to the slot of the writer it names (a writer's writes
 * to a slot are ordered, other writers' are not), or the prefill if no
 * writer wrote the slot at all.
 */
static int check_final(void)
{
	unsigned int slot, w, bad = 0;
	unsigned char *buf;
	const char *why;
	char out[512];
	uint64_t s;

	if (posix_memalign((void **)&buf, 4096, cur->slot))
		return 1;
	for (slot = 0; slot < NR_SLOTS; slot++) {
		if (pread(fd, buf, cur->slot, slot * cur->slot) !=
		    (ssize_t)cur->slot) {
			perror("final pread");
			bad++;
			break;
		}
		s = *(const uint64_t *)buf;
		if (!t_stamp_whole(buf, cur->slot)) {
			why = "more than one write";
		} else if ((why = bad_stamp(s, slot))) {
			;
		} else if (T_STAMP_WRITER(s) == T_STAMP_FILL) {
			for (w = 0; w < cfg.writers; w++)
				if (writers[w].last[slot])
					why = "the prefill, but writers wrote the slot";
		} else if (T_STAMP_SEQ(s) !=
			   writers[T_STAMP_WRITER(s)].last[slot]) {
			why = "a write its writer later overwrote";
		}
		if (!why)
			continue;
		if (bad++ < MAX_REPORT) {
			t_stamp_describe(out, sizeof(out), buf, cur->slot,
					 MAX_REPORT);
			fprintf(stderr, "  final: slot %u [0x%x, 0x%x) holds %s:\n%s",
				slot, slot * cur->slot, (slot + 1) * cur->slot,
				why, out);
			if (T_STAMP_WRITER(s) < cfg.writers)
				fprintf(stderr, "    (last write of w%u there: #%u)\n",
					T_STAMP_WRITER(s),
					writers[T_STAMP_WRITER(s)].last[slot]);
		}
	}
	free(buf);
	if (bad)
		fprintf(stderr, "  final: %u bad slots of %u\n", bad, NR_SLOTS);
	return bad != 0;
}

static double pct(unsigned long long a, unsigned long long b)
{
	return b ? 100.0 * a / b : 0;
}

static int test_round(const struct round *r, unsigned int round_no)
{
	unsigned long long writes = 0, reads[2] = { 0 }, torn[2] = { 0 };
	unsigned int w, i, nr_threads, nr_uring_w = 0, nr_uring_r = 0;
	uint64_t t0, t1;
	int failed = 0, ret = 0;
	void *buf;

	cur = r;
	cur_magic = 0x80 | (round_no & 0x7f);
	if (t_stamp_prefill(fd, cur_magic, NR_SLOTS * r->slot, r->slot))
		return 1;
	/*
	 * The pwrite() writers are other writers of a file in io_uring use:
	 * from the first write on, not only once an io_uring write came.
	 */
	if (t_note_nowait_use(fd))
		return 1;
	stop = 0;
	writers_left = cfg.writers;
	for (w = 0; w < cfg.writers; w++) {
		struct writer *wr = &writers[w];

		memset(wr, 0, sizeof(*wr));
		wr->id = w;
		snprintf(wr->name, sizeof(wr->name), "w%u", w);
		wr->halves = cfg.selftest_tear && !w;
		wr->use_uring = !(w & 1) && !wr->halves;
		wr->rnd = ((seed + 1ULL) * 0x9e3779b97f4a7c15ULL ^
			   (round_no * 0x100000001b3ULL + w + 1) << 8) | 1;
		nr_uring_w += wr->use_uring;
	}
	for (i = 0; i < cfg.readers; i++) {
		struct reader *rd = &readers[i];

		memset(rd, 0, sizeof(*rd));
		rd->id = i;
		snprintf(rd->name, sizeof(rd->name), "r%u", i);
		rd->use_uring = !(i & 1);
		rd->rnd = ((seed + 7ULL) * 0xbf58476d1ce4e5b9ULL ^
			   (round_no * 0x100000001b3ULL + i + 1) << 8) | 1;
		nr_uring_r += rd->use_uring;
	}
	nr_threads = cfg.writers + cfg.readers;
	pthread_barrier_init(&start_barrier, NULL, nr_threads + 1);
	for (w = 0; w < cfg.writers; w++)
		if (pthread_create(&writers[w].thread, NULL,
				   writers[w].use_uring ? uring_writer : pwrite_writer,
				   &writers[w]))
			goto no_thread;
	for (i = 0; i < cfg.readers; i++)
		if (pthread_create(&readers[i].thread, NULL,
				   readers[i].use_uring ? uring_reader : pread_reader,
				   &readers[i]))
			goto no_thread;
	t0 = t_now_ns();
	deadline = t0 + cfg.round_ms * 1000000ULL;
	pthread_barrier_wait(&start_barrier);
	for (w = 0; w < cfg.writers; w++) {
		pthread_join(writers[w].thread, NULL);
		failed |= writers[w].failed;
		writes += writers[w].nr;
	}
	for (i = 0; i < cfg.readers; i++) {
		pthread_join(readers[i].thread, NULL);
		failed |= readers[i].failed;
		reads[readers[i].use_uring] += readers[i].reads;
		torn[readers[i].use_uring] += readers[i].torn;
	}
	t1 = t_now_ns();
	pthread_barrier_destroy(&start_barrier);

	/* Self-test: leave one slot torn for check_final() for certain. */
	if (cfg.selftest_tear && !failed && !posix_memalign(&buf, 4096, r->slot)) {
		failed |= write_halves(&writers[0], buf, 0);
		free(buf);
	}

	printf("%-9s %u writers (%u io_uring qd %u, %u pwrite), %u readers (%u io_uring, %u pread): %.2fs, %llu writes, %llu reads, torn: io_uring %llu/%llu (%.3f%%), pread %llu/%llu (%.3f%%)\n",
	       r->name, cfg.writers, nr_uring_w, cfg.qd,
	       cfg.writers - nr_uring_w, cfg.readers, nr_uring_r,
	       cfg.readers - nr_uring_r, (t1 - t0) / 1e9, writes,
	       reads[0] + reads[1], torn[1], reads[1], pct(torn[1], reads[1]),
	       torn[0], reads[0], pct(torn[0], reads[0]));
	fflush(stdout);
	if (failed)
		return 1;
	/* A kind of reader that read nothing checked no read against writes. */
	if ((nr_uring_r && !reads[1]) || (cfg.readers > nr_uring_r && !reads[0])) {
		fprintf(stderr, "  no %s read completed in the round\n",
			nr_uring_r && !reads[1] ? "io_uring" : "pread");
		return 1;
	}

	if (check_final())
		ret = 1;
	if (!torn[0] && !torn[1])
		return ret;
	if (!on_xfs) {
		/* One example, for the record. */
		for (i = 0; !readers[i].torn; i++)
			;
		printf("  torn reads reported, not asserted, on fs %s; the first of r%u:\n%s",
		       t_test_fs(), i, readers[i].first_torn);
		return ret;
	}
	fprintf(stderr, "  %llu torn reads on XFS, which serializes buffered reads against writes; first ones:\n",
		torn[0] + torn[1]);
	for (i = 0, w = 0; i < cfg.readers && w < MAX_REPORT; i++) {
		if (readers[i].torn) {
			fprintf(stderr, "%s", readers[i].first_torn);
			w++;
		}
	}
	return 1;

no_thread:
	fprintf(stderr, "pthread_create failed\n");
	exit(T_EXIT_FAIL);
}

int main(void)
{
	unsigned int pass, i, round_no = 0, failed = 0;
	struct io_uring ring;
	struct statfs sfs;
	int ret;

	seed = t_seed("atomic-read-write");
	cfg.writers = t_env_uint("TEST_THREADS", 4, 1, MAX_WRITERS);
	cfg.readers = t_env_uint("TEST_READERS", 4, 1, MAX_READERS);
	cfg.qd = t_env_uint("TEST_QD", 4, 1, MAX_QD);
	cfg.round_ms = t_env_uint("TEST_ROUND_MS", 600, 1, 600000);
	cfg.passes = t_env_uint("TEST_ROUNDS", 1, 1, 1000);
	cfg.selftest_tear = t_env_uint("TEST_SELFTEST_TEAR", 0, 0, 1);

	ret = io_uring_queue_init(1, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	io_uring_queue_exit(&ring);

	fd = t_create_file("atomic-read-write", 0, NULL, 0);
	/* The file system the file is on decides, not only its name. */
	if (fstatfs(fd, &sfs)) {
		perror("fstatfs");
		return T_EXIT_FAIL;
	}
	on_xfs = sfs.f_type == XFS_SUPER_MAGIC;
	if ((strncmp(t_test_fs(), "xfs", 3) == 0) != on_xfs)
		printf("note: TEST_FS is %s but %s is %son XFS (statfs magic 0x%lx)\n",
		       t_test_fs(), t_test_dir(), on_xfs ? "" : "not ",
		       (unsigned long)sfs.f_type);
	printf("fs %s (%s), %u writers, %u readers, qd %u, %u ms a round, torn reads %s%s\n",
	       t_test_fs(), on_xfs ? "XFS" : "not XFS", cfg.writers,
	       cfg.readers, cfg.qd, cfg.round_ms,
	       on_xfs ? "fail" : "only reported",
	       cfg.selftest_tear ? ", SELF-TEST: writer 0 writes in halves, must fail" : "");

	for (pass = 0; pass < cfg.passes; pass++) {
		for (i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++) {
			if (!test_round(&rounds[i], ++round_no))
				continue;
			fprintf(stderr, "test_round %s (pass %u) failed (fs %s, seed %u)\n",
				rounds[i].name, pass + 1, t_test_fs(), seed);
			failed++;
		}
	}
	close(fd);
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
