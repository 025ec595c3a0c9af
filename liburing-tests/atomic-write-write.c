/* SPDX-License-Identifier: MIT */
/*
 * Description: write-vs-write atomicity of buffered overwrites. Several
 *		threads, each with its own io_uring ring (in some rounds half
 *		of them using pwrite(2) instead, in others with registered
 *		buffers: WRITE_FIXED), overwrite a prefilled,
 *		fsynced file concurrently: whole 4 KiB, 16 KiB or 64 KiB
 *		slots, or 4K/16K/64K writes at offsets that overlap partially.
 *		Every 64-bit word of a write holds the write's stamp (writer,
 *		sequence number, offset, length, round). After each round the
 *		file must be the result of applying every write of the round
 *		whole, one at a time, in an order that keeps each thread's
 *		completion order (see check_round()).
 *
 *		Environment: TEST_THREADS (writers, 4), TEST_QD (writes in
 *		flight per ring, 4), TEST_ROUND_MS (length of a round, 600),
 *		TEST_ROUNDS (passes over the round list, 1), TEST_MAX_WRITES
 *		(per writer and round, 131072), TEST_SELFTEST_TEAR=1 (tear
 *		one write on purpose at the end of every round: must fail).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "stamp.h"

#define MAX_WRITERS	64
#define MAX_QD		16
#define MAX_LEN		65536
#define MAX_REPORT	4

/* One write as issued: seq n of a writer is its log[n - 1]. */
struct wlog {
	uint32_t off;
	uint32_t len;
	uint32_t batch;		/* the batch it was submitted in */
};

struct writer {
	pthread_t thread;
	unsigned int id;
	char name[16];		/* "w3", for messages */
	int use_uring;
	uint64_t rnd;
	struct wlog *log;
	uint32_t nr;		/* writes issued, seq 1..nr */
	uint32_t batches;	/* batches submitted and completed */
	int failed;
};

struct round {
	const char *name;
	uint32_t slot;		/* slot size, 0: mixed, overlapping sizes */
	uint32_t area;		/* bytes of the file the round writes */
	int pwrite_half;	/* odd-numbered writers use pwrite(2) */
	int fixed;		/* io_uring writers use registered buffers */
};

static const struct round rounds[] = {
	{ "4k-slots",		4096,	64 * 4096,	0, 0 },
	{ "16k-slots",		16384,	32 * 16384,	0, 0 },
	{ "64k-slots",		65536,	16 * 65536,	0, 0 },
	{ "mixed-sizes",	0,	256 * 1024,	0, 0 },
	{ "4k-slots+pwrite",	4096,	64 * 4096,	1, 0 },
	{ "64k-slots+pwrite",	65536,	16 * 65536,	1, 0 },
	{ "mixed-sizes+pwrite",	0,	256 * 1024,	1, 0 },
	/*
	 * WRITE_FIXED: the source is a bio_vec, which the patched kernels
	 * copy into the locked folios without a bounce buffer.
	 */
	{ "4k-slots+fixed",	4096,	64 * 4096,	0, 1 },
	{ "mixed-sizes+fixed",	0,	256 * 1024,	0, 1 },
	{ "mixed+fixed+pwrite",	0,	256 * 1024,	1, 1 },
};

static struct {
	unsigned int writers;
	unsigned int qd;
	unsigned int round_ms;
	unsigned int passes;
	unsigned int max_writes;
	int selftest_tear;
} cfg;

static int fd;
static unsigned int seed;
static struct writer writers[MAX_WRITERS];
static const struct round *cur;
static unsigned int cur_magic;
static uint64_t deadline;
static int stop;
static pthread_barrier_t start_barrier;

/* The prefill writes the area in tiles of this size. */
static uint32_t fill_tile(const struct round *r)
{
	return r->slot ? r->slot : MAX_LEN;
}

static void pick_write(struct writer *w, uint32_t *off, uint32_t *len)
{
	uint64_t x = t_rnd_next(&w->rnd);
	uint32_t align;

	if (cur->slot) {
		*len = cur->slot;
		*off = (x % (cur->area / cur->slot)) * cur->slot;
		return;
	}
	/*
	 * 4K at any grain (straddling pages), 16K at any page, 64K at any
	 * 16K: writes of different sizes overlap partially, not only nest.
	 */
	switch ((x >> 40) % 3) {
	case 0:
		*len = 4096;
		align = T_GRAIN;
		break;
	case 1:
		*len = 16384;
		align = 4096;
		break;
	default:
		*len = 65536;
		align = 16384;
		break;
	}
	*off = (x % ((cur->area - *len) / align + 1)) * align;
}

/* Log a new write in the current batch and return its stamp. */
static uint64_t issue(struct writer *w, uint32_t off, uint32_t len)
{
	uint32_t seq = ++w->nr;

	w->log[seq - 1] = (struct wlog){ off, len, w->batches };
	return t_stamp(cur_magic, w->id, seq, off, len);
}

static int round_over(const struct writer *w, unsigned int batch)
{
	return w->nr + batch > cfg.max_writes ||
	       __atomic_load_n(&stop, __ATOMIC_RELAXED) ||
	       t_now_ns() >= deadline;
}

static void writer_fail(struct writer *w)
{
	w->failed = 1;
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
}

static void write_done(void *arg, const struct io_uring_cqe *cqe)
{
	struct writer *w = arg;
	uint32_t seq = cqe->user_data;
	uint32_t len = w->log[seq - 1].len;

	if (cqe->res != (int)len) {
		fprintf(stderr, "w%u: io_uring write #%u of %u bytes at 0x%x: res %d\n",
			w->id, seq, len, w->log[seq - 1].off, cqe->res);
		writer_fail(w);
	}
}

static void *uring_writer(void *arg)
{
	struct writer *w = arg;
	struct io_uring ring;
	unsigned char *bufs;
	unsigned int i;
	uint32_t off, len;

	bufs = t_worker_ring(&ring, cfg.qd, cfg.qd * MAX_LEN, w->name);
	if (bufs && cur->fixed)
		bufs = t_worker_ring_fixed(&ring, bufs, cfg.qd, MAX_LEN,
					   w->name);
	if (!bufs)
		writer_fail(w);
	pthread_barrier_wait(&start_barrier);

	while (bufs && !round_over(w, cfg.qd)) {
		for (i = 0; i < cfg.qd; i++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			void *buf = bufs + i * MAX_LEN;

			pick_write(w, &off, &len);
			t_stamp_fill(buf, len, issue(w, off, len));
			if (cur->fixed)
				io_uring_prep_write_fixed(sqe, fd, buf, len,
							  off, i);
			else
				io_uring_prep_write(sqe, fd, buf, len, off);
			sqe->user_data = w->nr;
		}
		if (t_uring_batch(&ring, cfg.qd, w->name, write_done, w)) {
			writer_fail(w);
			break;
		}
		w->batches++;
	}
	t_worker_ring_exit(&ring, bufs);
	return NULL;
}

static void *pwrite_writer(void *arg)
{
	struct writer *w = arg;
	uint32_t off, len;
	ssize_t ret;
	void *buf;

	buf = t_worker_buf(MAX_LEN, w->name);
	if (!buf)
		writer_fail(w);
	pthread_barrier_wait(&start_barrier);

	while (buf && !round_over(w, 1)) {
		pick_write(w, &off, &len);
		t_stamp_fill(buf, len, issue(w, off, len));
		ret = pwrite(fd, buf, len, off);
		if (ret != (ssize_t)len) {
			fprintf(stderr, "w%u: pwrite #%u of %u bytes at 0x%x: %zd (%s)\n",
				w->id, w->nr, len, off, ret,
				ret < 0 ? strerror(errno) : "short");
			writer_fail(w);
			break;
		}
		w->batches++;
	}
	free(buf);
	return NULL;
}

/*
 * TEST_SELFTEST_TEAR: writer 0 issues two more whole writes A and B of
 * the same range, one after the other, but the file gets A's stamp in the
 * first half and B's in the second: what a torn pair would leave.
 */
static int selftest_tear(void)
{
	struct writer *w = &writers[0];
	uint32_t len = cur->slot ? cur->slot : 16384;
	uint64_t a, b;
	void *buf;
	int ret = 0;

	if (posix_memalign(&buf, 4096, len))
		return 1;
	a = issue(w, 0, len);
	w->batches++;
	b = issue(w, 0, len);
	w->batches++;
	t_stamp_fill(buf, len / 2, a);
	t_stamp_fill((char *)buf + len / 2, len / 2, b);
	if (pwrite(fd, buf, len, 0) != (ssize_t)len) {
		perror("self-test pwrite");
		ret = 1;
	}
	free(buf);
	return ret;
}

static int read_all(void *buf, uint32_t len)
{
	uint32_t done = 0;
	ssize_t ret;

	while (done < len) {
		ret = pread(fd, (char *)buf + done, len - done, done);
		if (ret <= 0) {
			fprintf(stderr, "pread at 0x%x: %zd (%s)\n", done, ret,
				ret < 0 ? strerror(errno) : "EOF");
			return 1;
		}
		done += ret;
	}
	return 0;
}

/*
 * Print the stamps found in [off, off + len) of @img: the first one and
 * where each of the next few changes begins.
 */
static void print_stamps(const unsigned char *img, uint32_t off, uint32_t len)
{
	char out[512];

	t_stamp_describe(out, sizeof(out), img + off, len, MAX_REPORT);
	fputs(out, stderr);
}

/* Whole-slot rounds: each slot must hold one stamp in every word. */
static int check_slots(const unsigned char *img)
{
	unsigned int bad = 0;
	uint32_t off;

	for (off = 0; off < cur->area; off += cur->slot) {
		if (t_stamp_whole(img + off, cur->slot))
			continue;
		if (bad++ < MAX_REPORT) {
			fprintf(stderr, "  slot %u [0x%x, 0x%x) holds more than one write:\n",
				off / cur->slot, off, off + cur->slot);
			print_stamps(img, off, cur->slot);
		}
	}
	if (bad)
		fprintf(stderr, "  %u of %u slots torn\n", bad,
			cur->area / cur->slot);
	return bad != 0;
}

/*
 * Precedence graph of the round: one node per write, plus one per batch
 * of each writer (the point where all of the batch had completed).
 */
#define NODE_FILL	UINT32_MAX
#define NODE_BAD	(UINT32_MAX - 1)

struct graph {
	uint32_t nr_writes;		/* write nodes 0..nr_writes - 1 */
	uint32_t nr_nodes;
	uint32_t wbase[MAX_WRITERS + 1];
	uint32_t bbase[MAX_WRITERS + 1];
	uint32_t *winner;		/* per grain: node, NODE_FILL, NODE_BAD */
	uint32_t *efrom, *eto;
	size_t nr_edges, max_edges;
};

static int add_edge(struct graph *g, uint32_t from, uint32_t to)
{
	if (g->nr_edges == g->max_edges) {
		size_t n = g->max_edges ? g->max_edges * 2 : 65536;
		uint32_t *f = realloc(g->efrom, n * sizeof(*f));

		if (f)
			g->efrom = f;
		f = f ? realloc(g->eto, n * sizeof(*f)) : NULL;
		if (!f) {
			fprintf(stderr, "out of memory for %zu edges\n", n);
			return 1;
		}
		g->eto = f;
		g->max_edges = n;
	}
	g->efrom[g->nr_edges] = from;
	g->eto[g->nr_edges++] = to;
	return 0;
}

static const char *node_str(const struct graph *g, uint32_t node, char *buf,
			    size_t size)
{
	const struct wlog *e;
	unsigned int w;

	for (w = 0; node >= g->wbase[w + 1]; w++)
		;
	e = &writers[w].log[node - g->wbase[w]];
	snprintf(buf, size, "w%u#%u [0x%x+0x%x] (%s, batch %u)", w,
		 node - g->wbase[w] + 1, e->off, e->len,
		 writers[w].use_uring ? "io_uring" : "pwrite", e->batch);
	return buf;
}

static const struct wlog *node_log(const struct graph *g, uint32_t node)
{
	unsigned int w;

	for (w = 0; node >= g->wbase[w + 1]; w++)
		;
	return &writers[w].log[node - g->wbase[w]];
}

/*
 * Every grain must hold one stamp, naming a write of this round that
 * covers the grain, or the prefill tile of the grain. Fills g->winner.
 */
static unsigned int check_grains(struct graph *g, const unsigned char *img)
{
	uint32_t grain, seq, w, tile = fill_tile(cur);
	const struct wlog *e;
	unsigned int bad = 0;
	uint64_t s;

	for (grain = 0; grain < cur->area / T_GRAIN; grain++) {
		uint32_t off = grain * T_GRAIN;

		s = *(const uint64_t *)(img + off);
		g->winner[grain] = NODE_BAD;
		if (!t_stamp_whole(img + off, T_GRAIN)) {
			if (bad++ < MAX_REPORT) {
				fprintf(stderr, "  grain 0x%x holds more than one write:\n", off);
				print_stamps(img, off, T_GRAIN);
			}
			continue;
		}
		w = T_STAMP_WRITER(s);
		seq = T_STAMP_SEQ(s);
		if (T_STAMP_MAGIC(s) != cur_magic)
			goto bad_stamp;
		if (w == T_STAMP_FILL) {
			if (s != t_stamp_fill_tile(cur_magic, tile, off))
				goto bad_stamp;
			g->winner[grain] = NODE_FILL;
			continue;
		}
		if (w >= cfg.writers || !seq || seq > writers[w].nr)
			goto bad_stamp;
		e = &writers[w].log[seq - 1];
		if (e->off != T_STAMP_OFF(s) || e->len != T_STAMP_LEN(s) ||
		    off < e->off || off >= e->off + e->len)
			goto bad_stamp;
		g->winner[grain] = g->wbase[w] + seq - 1;
		continue;
bad_stamp:
		if (bad++ < MAX_REPORT) {
			char str[80];

			fprintf(stderr, "  grain 0x%x holds %s: no write of this round covering it has that stamp\n",
				off, t_stamp_str(s, str, sizeof(str)));
		}
	}
	if (bad)
		fprintf(stderr, "  %u bad grains\n", bad);
	return bad;
}

/*
 * Edges: V -> W when V covers a grain that holds W (V was applied before
 * W), and program order: writes of batch k -> batch node k -> writes of
 * batch k + 1 of the same writer. A grain still holding the prefill while
 * some write of the round covered it is a lost write.
 */
static unsigned int build_edges(struct graph *g)
{
	unsigned int lost = 0, w;
	uint32_t seq, node, grain, win, last;
	const struct wlog *e;
	char str[96];

	for (w = 0; w < cfg.writers; w++) {
		for (seq = 1; seq <= writers[w].nr; seq++) {
			node = g->wbase[w] + seq - 1;
			e = &writers[w].log[seq - 1];
			last = node;
			for (grain = e->off / T_GRAIN;
			     grain < (e->off + e->len) / T_GRAIN; grain++) {
				win = g->winner[grain];
				if (win == NODE_FILL) {
					if (lost++ < MAX_REPORT)
						fprintf(stderr, "  lost write: %s covers grain 0x%x, which still holds the prefill\n",
							node_str(g, node, str, sizeof(str)),
							grain * T_GRAIN);
					break;
				}
				if (win == node || win == last)
					continue;
				if (add_edge(g, node, win))
					return lost + 1;
				last = win;
			}
			if (e->batch && add_edge(g, g->bbase[w] + e->batch - 1, node))
				return lost + 1;
			if (add_edge(g, node, g->bbase[w] + e->batch))
				return lost + 1;
		}
	}
	if (lost)
		fprintf(stderr, "  %u lost writes\n", lost);
	return lost;
}

/* Explain the edge from write @a to write @b of a cycle. */
static void print_edge(const struct graph *g, uint32_t a, uint32_t b)
{
	const struct wlog *e = node_log(g, a);
	uint32_t grain;

	for (grain = e->off / T_GRAIN; grain < (e->off + e->len) / T_GRAIN;
	     grain++) {
		if (g->winner[grain] == b) {
			fprintf(stderr, "      covers 0x%x, which holds the next write's data\n",
				grain * T_GRAIN);
			return;
		}
	}
	fprintf(stderr, "      completed before the next one was submitted\n");
}

/*
 * Kahn's topological sort; on a cycle, walk back along unsorted
 * predecessors from an unsorted node until a node repeats and print the
 * writes of that cycle.
 */
static int check_order(struct graph *g)
{
	uint32_t *deg, *start, *adj, *queue, *pos, *path;
	uint32_t n = g->nr_nodes, head = 0, tail = 0, x, i, k, len;
	unsigned char *sorted;
	size_t j;
	int ret = 1;

	deg = calloc(n, sizeof(*deg));
	start = calloc(n + 1, sizeof(*start));
	adj = malloc((g->nr_edges + 1) * sizeof(*adj));
	queue = malloc(n * sizeof(*queue));
	sorted = calloc(n, 1);
	if (!deg || !start || !adj || !queue || !sorted) {
		fprintf(stderr, "out of memory sorting %u nodes\n", n);
		goto out;
	}
	/* Out-edges in CSR form. */
	for (j = 0; j < g->nr_edges; j++) {
		start[g->efrom[j] + 1]++;
		deg[g->eto[j]]++;
	}
	for (x = 0; x < n; x++)
		start[x + 1] += start[x];
	for (j = 0; j < g->nr_edges; j++)
		adj[start[g->efrom[j]]++] = g->eto[j];
	for (x = n; x > 0; x--)
		start[x] = start[x - 1];
	start[0] = 0;

	for (x = 0; x < n; x++)
		if (!deg[x])
			queue[tail++] = x;
	while (head < tail) {
		x = queue[head++];
		sorted[x] = 1;
		for (i = start[x]; i < start[x + 1]; i++)
			if (!--deg[adj[i]])
				queue[tail++] = adj[i];
	}
	if (tail == n) {
		ret = 0;
		goto out;
	}

	/* In-edges now: reuse adj/start for the reverse graph. */
	memset(start, 0, (n + 1) * sizeof(*start));
	for (j = 0; j < g->nr_edges; j++)
		start[g->eto[j] + 1]++;
	for (x = 0; x < n; x++)
		start[x + 1] += start[x];
	for (j = 0; j < g->nr_edges; j++)
		adj[start[g->eto[j]]++] = g->efrom[j];
	for (x = n; x > 0; x--)
		start[x] = start[x - 1];
	start[0] = 0;

	pos = deg;	/* 0: not on the path, else index + 1 */
	path = queue;
	memset(pos, 0, n * sizeof(*pos));
	for (x = 0; sorted[x]; x++)
		;
	for (len = 0; !pos[x]; len++) {
		path[len] = x;
		pos[x] = len + 1;
		/* Unsorted means some predecessor is unsorted too. */
		for (i = start[x]; i < start[x + 1] && sorted[adj[i]]; i++)
			;
		if (i == start[x + 1])
			goto out;
		x = adj[i];
	}
	for (k = 0, i = pos[x] - 1; i < len; i++)
		k += path[i] < g->nr_writes;
	/* path[pos[x] - 1 .. len - 1] walked backwards is the cycle. */
	fprintf(stderr, "  no order of the writes gives this file; a cycle of %u writes, each of which had to come before the next:\n",
		k);
	for (k = 0, i = len; i-- > pos[x] - 1;) {
		uint32_t next = i > pos[x] - 1 ? path[i - 1] : path[len - 1];
		char str[96];

		if (path[i] >= g->nr_writes)
			continue;
		if (k++ == 2 * MAX_REPORT) {
			fprintf(stderr, "    ...\n");
			break;
		}
		fprintf(stderr, "    %s\n", node_str(g, path[i], str, sizeof(str)));
		if (next < g->nr_writes)
			print_edge(g, path[i], next);
		else
			fprintf(stderr, "      completed before the next one was submitted\n");
	}
out:
	free(deg);
	free(start);
	free(adj);
	free(queue);
	free(sorted);
	return ret;
}

/*
 * The invariant. Writes to a regular file are atomic with respect to each
 * other (POSIX write(2): "either all or none" of another write's effects,
 * and a returned write is seen by everything after it), so the round's
 * writes must be serializable: there is an order of all of them, each
 * applied whole, that (a) puts every write a thread had completed before
 * it submitted another write ahead of that write and (b) leaves exactly
 * the file we read back. That holds iff
 *  1. every grain (T_GRAIN bytes) holds one stamp, naming a write of the
 *     round that covers it (or the grain's prefill tile, when no write
 *     covered it),
 *  2. the precedence graph is acyclic: V -> W when V covers a grain that
 *     holds W (W was applied after V there), and V -> W when V's writer
 *     had reaped V's completion before submitting W.
 * A torn pair A, B (A's data in part of A ∩ B, B's in another part) gives
 * A -> B and B -> A. In the whole-slot rounds this is: every slot holds
 * one stamp across the whole slot, and that stamp is the last write its
 * writer made to the slot; check_slots() says so first, more plainly.
 */
static int check_round(const unsigned char *img)
{
	struct graph g = { 0 };
	unsigned int w;
	int ret = 1;

	if (cur->slot && check_slots(img))
		return 1;

	for (w = 0; w < cfg.writers; w++) {
		g.wbase[w + 1] = g.wbase[w] + writers[w].nr;
		g.bbase[w + 1] = g.bbase[w] + writers[w].batches;
	}
	g.nr_writes = g.wbase[cfg.writers];
	for (w = 0; w <= cfg.writers; w++)
		g.bbase[w] += g.nr_writes;
	g.nr_nodes = g.bbase[cfg.writers];
	g.winner = malloc(cur->area / T_GRAIN * sizeof(*g.winner));
	if (!g.winner)
		return 1;

	if (check_grains(&g, img) || build_edges(&g))
		goto out;
	ret = check_order(&g);
out:
	free(g.winner);
	free(g.efrom);
	free(g.eto);
	return ret;
}

static int test_round(const struct round *r, unsigned int round_no)
{
	unsigned long long total = 0;
	unsigned int w, nr_uring = 0, bad;
	unsigned char *img = NULL, *img2 = NULL;
	uint64_t t0, t1, t2;
	int ret = 1;

	cur = r;
	cur_magic = 0x80 | (round_no & 0x7f);
	if (t_stamp_prefill(fd, cur_magic, r->area, fill_tile(r)))
		return 1;
	/*
	 * The pwrite() writers are other writers of a file in io_uring use:
	 * from the first write on, not only once an io_uring write came.
	 */
	if (t_note_nowait_use(fd))
		return 1;
	stop = 0;
	for (w = 0; w < cfg.writers; w++) {
		writers[w].id = w;
		snprintf(writers[w].name, sizeof(writers[w].name), "w%u", w);
		writers[w].use_uring = !r->pwrite_half || !(w & 1);
		writers[w].rnd = ((seed + 1ULL) * 0x9e3779b97f4a7c15ULL ^
				  (round_no * 0x100000001b3ULL + w + 1) << 8) | 1;
		writers[w].nr = 0;
		writers[w].batches = 0;
		writers[w].failed = 0;
		nr_uring += writers[w].use_uring;
	}
	pthread_barrier_init(&start_barrier, NULL, cfg.writers + 1);
	for (w = 0; w < cfg.writers; w++) {
		if (pthread_create(&writers[w].thread, NULL,
				   writers[w].use_uring ? uring_writer : pwrite_writer,
				   &writers[w])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(T_EXIT_FAIL);
		}
	}
	t0 = t_now_ns();
	deadline = t0 + cfg.round_ms * 1000000ULL;
	pthread_barrier_wait(&start_barrier);
	bad = 0;
	for (w = 0; w < cfg.writers; w++) {
		pthread_join(writers[w].thread, NULL);
		bad |= writers[w].failed;
		total += writers[w].nr;
	}
	t1 = t_now_ns();
	pthread_barrier_destroy(&start_barrier);
	if (bad)
		return 1;
	if (cfg.selftest_tear && selftest_tear())
		return 1;

	img = malloc(r->area);
	img2 = malloc(r->area);
	if (!img || !img2 || read_all(img, r->area))
		goto out;
	if (check_round(img))
		goto out;
	/* The same bytes once written back and read from the disk again. */
	if (fsync(fd)) {
		perror("fsync");
		goto out;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (read_all(img2, r->area))
		goto out;
	if (memcmp(img, img2, r->area)) {
		uint32_t i;

		for (i = 0; img[i] == img2[i]; i++)
			;
		fprintf(stderr, "  after fsync and dropping the cache, byte 0x%x differs\n", i);
		goto out;
	}
	ret = 0;
out:
	t2 = t_now_ns();
	printf("%-18s %u writers (%u io_uring qd %u, %u pwrite): %llu writes in %.2fs, check %.2fs: %s\n",
	       r->name, cfg.writers, nr_uring, cfg.qd, cfg.writers - nr_uring,
	       total, (t1 - t0) / 1e9, (t2 - t1) / 1e9, ret ? "FAIL" : "ok");
	fflush(stdout);
	free(img);
	free(img2);
	return ret;
}

int main(void)
{
	unsigned int pass, i, w, round_no = 0, failed = 0;
	struct io_uring ring;
	int ret;

	seed = t_seed("atomic-write-write");
	cfg.writers = t_env_uint("TEST_THREADS", 4, 1, MAX_WRITERS);
	cfg.qd = t_env_uint("TEST_QD", 4, 1, MAX_QD);
	cfg.round_ms = t_env_uint("TEST_ROUND_MS", 600, 1, 600000);
	cfg.passes = t_env_uint("TEST_ROUNDS", 1, 1, 1000);
	cfg.max_writes = t_env_uint("TEST_MAX_WRITES", 131072, MAX_QD, 1 << 23);
	cfg.selftest_tear = t_env_uint("TEST_SELFTEST_TEAR", 0, 0, 1);

	ret = io_uring_queue_init(1, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	io_uring_queue_exit(&ring);

	for (w = 0; w < cfg.writers; w++) {
		/* Two more for the self-test's writes. */
		writers[w].log = malloc((cfg.max_writes + 2) * sizeof(struct wlog));
		if (!writers[w].log)
			return T_EXIT_FAIL;
	}
	fd = t_create_file("atomic-write-write", 0, NULL, 0);
	printf("fs %s, %u writers, qd %u, %u ms a round%s\n", t_test_fs(),
	       cfg.writers, cfg.qd, cfg.round_ms,
	       cfg.selftest_tear ? ", SELF-TEST: tearing one write per round, must fail" : "");

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
	for (w = 0; w < cfg.writers; w++)
		free(writers[w].log);
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
