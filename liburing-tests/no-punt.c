/* SPDX-License-Identifier: MIT */
/*
 * Description: plain io_uring buffered overwrites (no RWF_NOWAIT) of a
 *		cached, allocated file must complete inline, not be punted
 *		to io-wq.
 *
 * Random 4 KiB overwrites of one file with 1 and 4 threads (each with its
 * own ring) at QD 1 and 16, and with 1 thread at QD 1 racing a plain
 * pwrite(2) overwriter of the same file (a blocking writer must not hold
 * the inode lock exclusively against inline writers: "no cascade").
 *
 * Every ring is SINGLE_ISSUER|DEFER_TASKRUN, so each write is known to be
 * inline or not: an inline write posts its CQE during io_uring_submit(),
 * others only when the task next enters the kernel to wait (task work),
 * and the writer never waits with writes of the batch unharvested. A write
 * that is not inline was either punted to io-wq or waited for a busy folio
 * and was issued again from task_work (patch 0014), which is not a punt.
 * Hist triggers on io_uring:io_uring_queue_async_work count the punts and
 * name each punted write (its user_data: writer, batch); there cannot be
 * more punts than writes that were not inline.
 *
 * Each writer (and the contender) overwrites its own 2 MiB slice of the
 * file, aligned so that no folio (at most PMD size) spans two slices: the
 * writers share the file and its inode lock but never a folio lock. In a
 * last run 4 writers at QD 16, with 5 times as many writes each, write
 * anywhere in the file, so that they share every folio (on XFS the file
 * sits in large folios): a write that finds a folio locked by another
 * writer must wait for it from task_work (patches 0012 and 0014), not
 * punt. Built with NO_PUNT_READERS (the test no-punt-readers), it makes
 * one run instead: 4 writers at QD 16 write their own slices while 2
 * threads read the whole file with plain buffered pread(): on XFS readers
 * and overwriters exclude each other (the overwrite gate), and a write
 * that meets a reader must wait for it from task_work too (patches 0015
 * to 0017), not punt. On lazytime mounts no io-wq worker
 * may exist at the end of any writer's run either (each writer looks for
 * its own iou-wrk-TID threads before it closes its ring).
 *
 * The bound is exact, per write (docs/design.md):
 *  - lazytime mounts, and default mounts of a kernel that completes a
 *    NOWAIT write with stale times (it updates them in memory and logs
 *    them from a work item, patch 0013; XFS's mapping check then does not
 *    need the ILOCK that work item takes, patch 0022): no write may punt,
 *    and no io-wq worker may exist;
 *  - other kernels' default mounts (6.12): a write may punt only if a
 *    timestamp update was due or
 *    under way when it was submitted (the update needs a blocking
 *    transaction, and on XFS that transaction holds the ILOCK the others'
 *    NOWAIT mapping checks try). Before each submission the writer reads
 *    the coarse clock c0, then the file's c/mtime, and after it the clock
 *    again. A batch may punt if its c/mtime were older than c0, if the
 *    clock ticked during its submission, or, on XFS, if an update that
 *    began earlier may still hold the ILOCK:
 *    a write submitted with stale timestamps, or any writer's write
 *    submitted in an earlier tick, still in flight, or the contender inside
 *    a pwrite() that began in an earlier tick, before its copy faulted.
 *    A batch that found none of these may not punt. Such a kernel also
 *    fails at once: refusing a NOWAIT write with stale times is the punt
 *    this test is about. A writer waits for its punted writes before its
 *    next batch (in io-wq they hold its slice's folios). A test in which
 *    every write was allowed to punt cannot tell anything: then it makes
 *    its runs again, up to three times in all, and fails if none judged
 *    a write.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

#define SLICE		(2 * 1024 * 1024)
#define SLICES		8
#define FILE_SIZE	(SLICES * SLICE)
#define BS		4096

static unsigned int writes_per_thread = 200;
/* The writers of the current run write anywhere in the file. */
static int shared_folios;
/* Writes per writer in the current run. */
static unsigned int run_writes;
static unsigned char cbuf_probe[4096];
static int fd;

/* A random block of slice @slice, or of the file if the writers share it. */
static off_t slice_offset(unsigned int slice, unsigned int *seed)
{
	if (shared_folios)
		return (off_t)(rand_r(seed) % (FILE_SIZE / BS)) * BS;
	return (off_t)slice * SLICE + (off_t)(rand_r(seed) % (SLICE / BS)) * BS;
}

/* The io-wq workers of thread @tid that exist now (iou-wrk-TID). */
static int count_iowq_workers(pid_t tid)
{
	char want[32], path[300], comm[32];
	struct dirent *de;
	int n = 0;
	DIR *d;
	FILE *f;

	snprintf(want, sizeof(want), "iou-wrk-%d", (int)tid);
	d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;	/* exited meanwhile */
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			n += !strcmp(comm, want);
		}
		fclose(f);
	}
	closedir(d);
	return n;
}

/*
 * A plain pwrite(2) overwriter of the same file (t_stalled_writer): 64 KiB
 * writes whose copy sleeps in a userfault on its first page, about
 * CONTENDER_FAULT_US. 6.12 holds XFS's IOLOCK_EXCL (ext4: i_rwsem) across
 * that copy, so io_uring writes that try the lock meanwhile punt; the
 * design lets blocking overwrites take the lock shared and copy before
 * locking any folio, so they must not. 64 KiB is the largest write the
 * design overwrites under the shared lock (FILEMAP_LOCK_RANGE_MAX). A
 * contender that runs instead of sleeping holds the lock only when the
 * scheduler happens to overlap the two threads: with plain 4 KiB and
 * 64 KiB writes 6.12 XFS punted 2-3 of 200 writes in some runs. The
 * stall is much shorter than a clock tick, so a punt on every stall
 * exceeds the tick bound.
 */
#define CONTENDER_LEN		(64 * 1024)
#define CONTENDER_FAULT_US	200
/*
 * Under TCG a stalled write takes tens of milliseconds end to end, longer
 * than 200 inline writes: in the contender's run the writers go on until
 * it has done this many.
 */
#define CONTENDER_MIN_WRITES	10

/* The contender while it runs, else NULL. */
static struct t_stalled_writer *contender;
/* Stop waiting for the contender's writes after this long. */
#define CONTENDER_DEADLINE_S	120

/*
 * Whether another writer's timestamp update can hold a lock that a NOWAIT
 * overwrite tries: on XFS the update's transaction holds the ILOCK, which
 * the mapping check takes shared under NOWAIT. On ext4 the update holds
 * nothing the NOWAIT overwrite path tries.
 */
static int updates_block;
/*
 * Does a NOWAIT write with stale times succeed on this default mount (a
 * kernel that logs them from a work item, patch 0013)? Probed once.
 */
static int time_work;
/* Is the test file's mount lazytime? */
static int lazytime;

/*
 * Writes submitted with stale timestamps that have not been reaped yet, of
 * all writers, counted before they are submitted: a punted one may be
 * logging the timestamp update in io-wq, and on XFS that transaction holds
 * the ILOCK that another writer's mapping check tries under NOWAIT.
 */
static unsigned long stale_in_flight;

/* Batches in flight per writer: at most one per write, QD at most 16. */
#define MAX_BATCHES	32

struct worker {
	pthread_t thread;
	unsigned int qd;
	unsigned int slice;
	unsigned int seed;
	unsigned long done;
	unsigned long not_inline;	/* writes whose CQE was not posted at submit */
	unsigned long allowed;		/* writes that were allowed to punt */
	/* per batch: may its writes punt? (grown as batches are submitted) */
	unsigned char *bat_allowed;
	unsigned long nr_bat_allowed;
	int iowq_workers;		/* its io-wq workers at the end */
	/* batch n: the coarse clock at its submission, writes not reaped */
	struct { uint64_t c0; unsigned int left; } bat[MAX_BATCHES];
	/* the c0 of its oldest batch with writes in flight, or UINT64_MAX */
	uint64_t oldest_c0;
	int err;
};

static struct worker w[4];
static unsigned int nr_workers;

static uint64_t ts_ns(const struct timespec *t)
{
	return (uint64_t)t->tv_sec * 1000000000ULL + t->tv_nsec;
}

/* Publish the c0 of @wk's oldest batch that still has writes in flight. */
static void publish_oldest(struct worker *wk)
{
	uint64_t oldest = UINT64_MAX;
	unsigned int i;

	for (i = 0; i < MAX_BATCHES; i++)
		if (wk->bat[i].left && wk->bat[i].c0 < oldest)
			oldest = wk->bat[i].c0;
	__atomic_store_n(&wk->oldest_c0, oldest, __ATOMIC_SEQ_CST);
}

/*
 * Whether a timestamp update that began before @c0 may still be under way:
 * a write of another writer submitted in an earlier tick, one submitted
 * with stale timestamps, or the contender inside a pwrite() that began in
 * an earlier tick or with stale timestamps and has not reached its copy.
 */
static int update_in_flight(const struct worker *self, uint64_t c0)
{
	unsigned int i;
	int64_t since;

	if (!updates_block)
		return 0;
	if (__atomic_load_n(&stale_in_flight, __ATOMIC_SEQ_CST))
		return 1;
	for (i = 0; i < nr_workers; i++)
		if (&w[i] != self &&
		    __atomic_load_n(&w[i].oldest_c0, __ATOMIC_SEQ_CST) < c0)
			return 1;
	if (contender) {
		since = __atomic_load_n(&contender->updating, __ATOMIC_SEQ_CST);
		if (since && (uint64_t)since < c0)
			return 1;
	}
	return 0;
}

/* user_data: writer index, batch number, submitted with stale times */
#define UD_WRITER_SHIFT	48
static uint64_t ud_make(const struct worker *wk, unsigned long batch, int stale)
{
	return (uint64_t)(wk - w) << UD_WRITER_SHIFT | (uint64_t)batch << 1 | !!stale;
}

static unsigned long ud_batch(uint64_t ud)
{
	return (ud & ((1ULL << UD_WRITER_SHIFT) - 1)) >> 1;
}

/* Reap the CQEs posted so far without entering the kernel; count them. */
static unsigned int reap(struct io_uring *ring, struct worker *w)
{
	struct io_uring_cqe *cqe;
	unsigned int head, n = 0;

	io_uring_for_each_cqe(ring, head, cqe) {
		if (cqe->user_data & 1)
			__atomic_sub_fetch(&stale_in_flight, 1, __ATOMIC_SEQ_CST);
		w->bat[ud_batch(cqe->user_data) % MAX_BATCHES].left--;
		if (cqe->res != BS) {
			fprintf(stderr, "write returned %d\n", cqe->res);
			w->err = cqe->res < 0 ? cqe->res : -EIO;
		}
		n++;
	}
	io_uring_cq_advance(ring, n);
	w->done += n;
	publish_oldest(w);
	return n;
}

static void *writer(void *arg)
{
	struct worker *w = arg;
	unsigned long submitted = 0;
	struct io_uring_cqe *cqe;
	struct timespec c0, c1;
	struct io_uring ring;
	unsigned int batch, inl;
	unsigned long nbat = 0;
	uint64_t c0ns = 0, deadline;
	struct stat st;
	char *buf;
	int ret, stale = 0, busy = 0;

	w->err = io_uring_queue_init(w->qd, &ring, IORING_SETUP_SINGLE_ISSUER |
				     IORING_SETUP_DEFER_TASKRUN);
	if (w->err)
		return NULL;
	buf = aligned_alloc(BS, BS);
	memset(buf, w->seed & 0xff, BS);
	deadline = t_now_ns() + CONTENDER_DEADLINE_S * 1000000000ULL;
	while (!w->err) {
		unsigned long want = run_writes;

		/* Go on until the contender has done its writes, or gave up. */
		if (contender && submitted >= want &&
		    __atomic_load_n(&contender->writes, __ATOMIC_ACQUIRE) <
		    CONTENDER_MIN_WRITES && !contender->error &&
		    !contender->h.error && t_now_ns() < deadline)
			want = submitted + 1;
		if (want < submitted)
			want = submitted;
		if (w->done >= want)
			break;
		batch = 0;
		if (submitted < want && submitted - w->done < w->qd) {
			/*
			 * Clock, then c/mtime, then submit, then clock. If the
			 * clock did not move, the kernel's current_time() was
			 * c0 throughout, and c/mtime can only have moved up: a
			 * batch that found them equal to c0 needs no update,
			 * unless an update that began earlier still holds a
			 * lock it needs (update_in_flight()).
			 */
			clock_gettime(CLOCK_REALTIME_COARSE, &c0);
			c0ns = ts_ns(&c0);
			if (fstat(fd, &st)) {
				w->err = -errno;
				break;
			}
			stale = t_ts_before(&st.st_mtim, &c0) ||
				t_ts_before(&st.st_ctim, &c0);
			busy = update_in_flight(w, c0ns);
		}
		while (submitted < want && submitted - w->done < w->qd) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			io_uring_prep_write(sqe, fd, buf, BS,
					    slice_offset(w->slice, &w->seed));
			sqe->user_data = ud_make(w, nbat, stale);
			submitted++;
			batch++;
		}
		if (batch && nbat >= w->nr_bat_allowed) {
			unsigned long n = w->nr_bat_allowed * 2 + 1024;
			unsigned char *p = realloc(w->bat_allowed, n);

			if (!p) {
				w->err = -ENOMEM;
				break;
			}
			memset(p + w->nr_bat_allowed, 0, n - w->nr_bat_allowed);
			w->bat_allowed = p;
			w->nr_bat_allowed = n;
		}
		if (batch) {
			w->bat[nbat % MAX_BATCHES].c0 = c0ns;
			w->bat[nbat % MAX_BATCHES].left = batch;
			nbat++;
			publish_oldest(w);
			if (stale)
				__atomic_add_fetch(&stale_in_flight, batch,
						   __ATOMIC_SEQ_CST);
			ret = io_uring_submit(&ring);
			clock_gettime(CLOCK_REALTIME_COARSE, &c1);
			if (ret != (int)batch) {
				w->err = ret < 0 ? ret : -EIO;
				break;
			}
			/* No GETEVENTS since the last reap: only this batch's inline CQEs. */
			inl = reap(&ring, w);
			w->not_inline += batch - inl;
			if (stale || busy || t_ts_before(&c0, &c1)) {
				w->allowed += batch;
				w->bat_allowed[nbat - 1] = 1;
			}
		}
		/*
		 * Wait for the batch's punted writes before the next one: in
		 * io-wq they hold the folios of this writer's slice, which the
		 * next batch's NOWAIT writes would find locked.
		 */
		while (w->done < submitted && !w->err) {
			ret = io_uring_wait_cqe(&ring, &cqe);
			if (ret) {
				w->err = ret;
				break;
			}
			reap(&ring, w);
		}
	}
	/* Idle io-wq workers live for seconds: any created are still here. */
	ret = count_iowq_workers((pid_t)syscall(SYS_gettid));
	if (ret < 0 && !w->err)
		w->err = ret;
	w->iowq_workers = ret;
	io_uring_queue_exit(&ring);
	free(buf);
	return NULL;
}


/* The punted writes of a run, sorted by whether their batch could punt. */
struct punt_count {
	int strict;		/* no write may punt */
	long allowed, bad, unknown;
};

/* Buffered readers beside the writers, until the writers are done. */
#define READERS		2
#define READ_LEN	(64 * 1024)
static int readers_stop;

struct reader {
	pthread_t thread;
	unsigned int seed;
	unsigned long reads;
	int err;
};

static void *reader(void *arg)
{
	static __thread unsigned char rbuf[READ_LEN];
	struct reader *r = arg;

	while (!__atomic_load_n(&readers_stop, __ATOMIC_ACQUIRE)) {
		off_t off = (off_t)(rand_r(&r->seed) % (FILE_SIZE / READ_LEN)) *
			    READ_LEN;

		if (pread(fd, rbuf, READ_LEN, off) != READ_LEN) {
			r->err = errno ? errno : EIO;
			break;
		}
		r->reads++;
	}
	return NULL;
}

static void count_punt(uint64_t ud, long n, void *arg)
{
	struct punt_count *pc = arg;
	unsigned long wi = ud >> UD_WRITER_SHIFT, b = ud_batch(ud);

	if (wi >= nr_workers || b >= w[wi].nr_bat_allowed) {
		fprintf(stderr, "punted user_data %#llx is no write of this run\n",
			(unsigned long long)ud);
		pc->unknown += n;
	} else if (!pc->strict && w[wi].bat_allowed[b]) {
		pc->allowed += n;
	} else {
		pc->bad += n;
	}
}

static int run(unsigned int threads, unsigned int qd, int with_contender,
	       int shared, int with_readers, unsigned int *seed,
	       unsigned long *judged)
{
	/* No write may punt: see the bound at the top. */
	int strict = lazytime || time_work;
	struct reader rd[READERS];
	static unsigned char cbuf[CONTENDER_LEN];
	struct t_stalled_writer cont = {
		.fd = fd, .off = (off_t)(SLICES - 1) * SLICE,
		.len = CONTENDER_LEN, .data = cbuf,
		.delay_us = CONTENDER_FAULT_US,
	};
	unsigned long not_inline = 0, may = 0, total = 0, bad;
	struct punt_count pc = { 0 };
	struct timespec t0, t1;
	int workers = 0;
	long ticks;
	unsigned int i;
	char what[128];
	long punts;
	int err = 0, ret;

	snprintf(what, sizeof(what), "threads %u qd %u%s%s%s", threads, qd,
		 with_contender ? " + pwrite contender" : "",
		 shared ? " sharing every folio" : "",
		 with_readers ? " + 2 buffered readers" : "");
	shared_folios = shared;
	/* Meetings on a folio are rare: give them more chances. */
	run_writes = shared ? 5 * writes_per_thread : writes_per_thread;

	/* The contender is another writer of a file in io_uring use. */
	if (with_contender && t_note_nowait_use(fd))
		return -1;
	/* Start on a fresh clock tick: the first write needs new timestamps. */
	t_next_tick();
	if (t_punts_start())
		return -1;
	if (t_punts_by_data_start()) {
		t_punts_stop();
		return -1;
	}
	clock_gettime(CLOCK_REALTIME_COARSE, &t0);
	/*
	 * The writers start once the contender has done its first stalled
	 * write: setting up the userfaultfd takes longer than 200 writes
	 * under TCG.
	 */
	memset(cbuf, 0x22, sizeof(cbuf));
	if (with_contender) {
		if (t_stalled_writer_start(&cont))
			return -1;
		contender = &cont;
	}
	stale_in_flight = 0;
	readers_stop = 0;
	for (i = 0; with_readers && i < READERS; i++) {
		memset(&rd[i], 0, sizeof(rd[i]));
		rd[i].seed = rand_r(seed);
		ret = pthread_create(&rd[i].thread, NULL, reader, &rd[i]);
		if (ret) {
			fprintf(stderr, "pthread_create: %s\n", strerror(ret));
			return -1;
		}
	}
	for (i = 0; i < threads; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].oldest_c0 = UINT64_MAX;
	}
	nr_workers = threads;
	for (i = 0; i < threads; i++) {
		w[i].qd = qd;
		w[i].slice = i;
		w[i].seed = rand_r(seed);
		ret = pthread_create(&w[i].thread, NULL, writer, &w[i]);
		if (ret) {
			fprintf(stderr, "pthread_create: %s\n", strerror(ret));
			return -1;
		}
	}
	for (i = 0; i < threads; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].err) {
			fprintf(stderr, "writer %u: %s\n", i, strerror(-w[i].err));
			err = 1;
		}
		not_inline += w[i].not_inline;
		workers += w[i].iowq_workers;
		may += w[i].allowed;
		total += w[i].done;
	}
	__atomic_store_n(&readers_stop, 1, __ATOMIC_RELEASE);
	for (i = 0; with_readers && i < READERS; i++) {
		pthread_join(rd[i].thread, NULL);
		printf("reader %u: %lu reads of 64 KiB\n", i, rd[i].reads);
		if (rd[i].err) {
			fprintf(stderr, "reader %u: %s\n", i, strerror(rd[i].err));
			err = 1;
		} else if (!rd[i].reads) {
			/* Then the writers met no reader: not the run asked for. */
			fprintf(stderr, "reader %u read nothing while the writers ran\n", i);
			err = 1;
		}
	}
	if (with_contender) {
		contender = NULL;
		err |= t_stalled_writer_stop(&cont);
		printf("contender: %lu stalled 64 KiB pwrites\n", cont.writes);
		if (cont.writes < CONTENDER_MIN_WRITES) {
			fprintf(stderr, "contender: only %lu writes in %d s\n",
				cont.writes, CONTENDER_DEADLINE_S);
			err = 1;
		}
	}
	clock_gettime(CLOCK_REALTIME_COARSE, &t1);
	punts = t_punts_read();
	pc.strict = strict;
	if (punts >= 0 && t_punts_by_data(count_punt, &pc) != punts) {
		fprintf(stderr, "%s: the punts by user_data do not add up to the %ld punts traced\n",
			what, punts);
		punts = -1;
	}
	t_punts_by_data_stop();
	t_punts_stop();
	for (i = 0; i < threads; i++) {
		free(w[i].bat_allowed);
		w[i].bat_allowed = NULL;
	}
	if (punts < 0 || err || pc.unknown)
		return -1;
	bad = pc.bad;
	ticks = t_ticks_between(&t0, &t1) + 1;
	printf("%s: %lu writes, %lu not inline, of them %ld punted (%.1f per 1000; %ld of them allowed) and %ld waited for a folio or the gate; %lu writes %s (stale timestamps, a tick or an update in flight at submission); %d io-wq workers at the end; %ld clock ticks\n",
	       what, total, not_inline, punts, 1000.0 * punts / total,
	       pc.allowed, (long)not_inline - punts, may,
	       strict ? "would have been allowed to punt on 6.12, not here" :
			"allowed to punt", workers, ticks - 1);
	*judged += strict ? total : total - may;
	if (punts > (long)not_inline) {
		fprintf(stderr, "%s: %ld punts traced but only %lu writes not inline: a punted write cannot complete during its submission\n",
			what, punts, not_inline);
		return 1;
	}
	if (bad) {
		fprintf(stderr, "%s: punts exceed the bound: %lu writes punted %s\n",
			what, bad,
			lazytime ? "on a lazytime mount" :
			strict ? "on a default mount whose kernel logs NOWAIT writers' times from a work item" :
				 "with current timestamps and no update in flight");
		return 1;
	}
	if (strict && workers) {
		fprintf(stderr, "%s: %d io-wq workers where no write may punt\n",
			what, workers);
		return 1;
	}
	return 0;
}

int main(void)
{
	static const struct {
		unsigned int threads, qd, contender, shared, readers;
	} runs[] = {
		{ 1, 1, 0, 0, 0 }, { 1, 16, 0, 0, 0 }, { 4, 1, 0, 0, 0 },
		{ 4, 16, 0, 0, 0 }, { 1, 1, 1, 0, 0 }, { 4, 16, 0, 1, 0 },
		{ 4, 16, 0, 0, 1 },
	};
	unsigned int seed, i, prefill_bs;
	int ret, failed = 0, attempts = 0;
	unsigned long judged = 0;
	struct statfs sfs;
	char *buf;
	off_t off;

	seed = t_seed("no-punt");
	if (getenv("TEST_WRITES"))
		writes_per_thread = strtoul(getenv("TEST_WRITES"), NULL, 0);
	fd = t_create_file("no-punt", 0, NULL, 0);
	buf = malloc(FILE_SIZE);
	memset(buf, 0x11, FILE_SIZE);
	/*
	 * One write by default, which on XFS puts the file in large folios
	 * (none spans two slices); TEST_PREFILL_BS=4096 writes it a page at
	 * a time instead.
	 */
	prefill_bs = t_env_uint("TEST_PREFILL_BS", FILE_SIZE, BS, FILE_SIZE);
	for (off = 0; off < FILE_SIZE; off += prefill_bs)
		if (pwrite(fd, buf + off, prefill_bs, off) != (ssize_t)prefill_bs)
			break;
	if (off < FILE_SIZE || fsync(fd) ||
	    pread(fd, buf, FILE_SIZE, 0) != FILE_SIZE) {
		perror("prefill");
		return T_EXIT_FAIL;
	}
	printf("prefill in %u-byte writes\n", prefill_bs);
	free(buf);
	if (fstatfs(fd, &sfs)) {
		perror("fstatfs");
		return T_EXIT_FAIL;
	}
	updates_block = sfs.f_type != EXT4_SUPER_MAGIC;
	lazytime = t_mount_has_option(fd, "lazytime");
	if (lazytime < 0)
		return T_EXIT_FAIL;
	printf("fs %s, lazytime %s\n", t_test_fs(), lazytime ? "yes" : "no");
	if (!lazytime) {
		struct iovec iov = { .iov_base = cbuf_probe, .iov_len = BS };

		memset(cbuf_probe, 0x11, BS);
		t_next_tick();
		time_work = pwritev2(fd, &iov, 1, 0, RWF_NOWAIT) == BS;
		printf("a NOWAIT write with stale times %s: %s\n",
		       time_work ? "completed" : "was refused",
		       time_work ? "the kernel logs times from a work item; no write may punt" :
				   "no punt is tolerated beyond the bound");
		/*
		 * Such a kernel punts the first write of every tick, and its
		 * punted writes keep the times stale for the next: nearly
		 * every write is allowed to punt and few are left to judge.
		 * That refusal is itself the punt this test is about (6.12:
		 * -EAGAIN on XFS, -EOPNOTSUPP on ext4).
		 */
		if (!time_work) {
			fprintf(stderr, "a NOWAIT write with stale times was refused: such writes punt\n");
			failed = 1;
		}
	}

	/*
	 * On a default mount a slow kernel can see a tick in nearly every
	 * submission, which leaves no write to judge: then make the runs
	 * again, up to three times in all.
	 */
again:
	attempts++;
	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
#ifdef NO_PUNT_READERS
		if (!runs[i].readers)
			continue;
#else
		if (runs[i].readers)
			continue;
#endif
		ret = run(runs[i].threads, runs[i].qd, runs[i].contender,
			  runs[i].shared, runs[i].readers, &seed, &judged);
		if (ret < 0) {
			fprintf(stderr, "run %u could not be measured\n", i);
			return T_EXIT_FAIL;
		}
		failed |= ret;
	}
	if (!lazytime && !judged && !failed && attempts < 3) {
		printf("no write judged in attempt %d: running again\n",
		       attempts);
		goto again;
	}
	close(fd);
	/* On a slow kernel a tick can fall in nearly every submission. */
	printf("%lu writes judged (not allowed to punt)\n", judged);
	if (!lazytime && !judged) {
		fprintf(stderr, "every write was allowed to punt: the test cannot tell a punt from an allowed one\n");
		failed = 1;
	}
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
