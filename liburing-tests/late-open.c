/* SPDX-License-Identifier: MIT */
/*
 * Description: a file opened for writing before and while it is being
 *		read, after its inode was evicted. On XFS the state that
 *		buffered overwrites under IOLOCK_SHARED share with readers
 *		(the gate, the writers' ranges, the remembered extent run) is
 *		installed only under IOLOCK_EXCL: by an open for writing of a
 *		non-empty file that finds the IOLOCK free, or else by the
 *		file's first write in IOCB_NOWAIT use, on the IOLOCK_EXCL
 *		path; it is freed when the inode is evicted (patch 0044). An
 *		inode without it has its readers and direct I/O skip the
 *		gate.
 *
 * Each cycle: the file is fsynced, closed everywhere and dropped from the
 * caches (drop_caches 3, which evicts the inode), then opened read-only
 * again. Four reader threads read whole 4 KiB slots in a loop through it:
 * pread(2), io_uring reads, O_DIRECT pread(2) and splice(2) into a pipe
 * (on XFS the O_DIRECT one enters the gate when there is one; splice
 * readers did too until patch 0050). The file is opened O_RDWR before the
 * readers start (odd cycles) or once they are reading (even cycles), and
 * two io_uring writers overwrite their own slots with a stamp in every
 * word (stamp.h). The O_DIRECT reader stops before the writers start: an
 * overwriter that meets direct I/O in the gate takes the IOLOCK_EXCL
 * path, a punt this test is not about. The splice reader goes on beside
 * the writers (with 49 patches, where it entered the gate, a writer that
 * kept meeting it there went to io-wq after eight waits, in about one
 * cycle of 40).
 * Asserted:
 *  - after an open before the readers (the IOLOCK free: the open
 *    installs the state) no io_uring write is punted to io-wq; after an
 *    open among readers (the open's trylock may fail) only the writers'
 *    first writes may be: one takes the IOLOCK_EXCL path to install the
 *    state and, meeting a reader, is punted (the named fallback), and
 *    the other's may meet it holding IOLOCK_EXCL in io-wq. Once each
 *    writer's first write is done, none may be punted;
 *  - on XFS no read holds more than one stamp (XFS
 *    serializes buffered reads against writes; ext4 never promised it,
 *    so there torn reads are only reported, as are the splice reader's
 *    everywhere: the pipe holds references to the page cache, read when
 *    the reader drains it, after the IOLOCK is dropped, on 6.12 too); on
 *    every fs a read is full length and every stamp it holds is one
 *    written to that slot;
 *  - after each cycle every slot holds the last stamp written to it.
 * The file open for writing is closed among the readers in even cycles
 * and after them in odd ones.
 * The readers open with O_NOATIME: a relatime atime update takes XFS's
 * ILOCK, which the first write after an eviction tries for its mapping
 * check (no extent run is remembered yet); that punt is no-punt-readers'
 * subject, not this test's. On the debug kernel (KASAN, lockdep) the
 * cycles also check the state's lifetime and the gate's balance across
 * its installation.
 *
 * Environment: TEST_CYCLES (12), TEST_WRITES (writes per writer and
 * cycle, 200).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#include "helpers.h"
#include "stamp.h"

#define SLOT		4096
#define NR_SLOTS	64
#define NR_WRITERS	2

enum rkind { R_PREAD, R_URING, R_DIRECT, R_SPLICE, NR_RKINDS };
static const char *const rkind_name[NR_RKINDS] = {
	"pread", "io_uring", "O_DIRECT", "splice"
};

struct reader {
	pthread_t thread;
	enum rkind kind;
	uint64_t rnd;
	unsigned long long reads, torn;
	int failed;
	char first_bad[512];
};

static char path[4096];
static int rfd, dfd, wfd;
static int on_xfs;
static unsigned int cycle_magic;
static volatile int stop, gate_stop;
/* The writers and the main thread, once each writer's first write is done. */
static pthread_barrier_t first_done;
static unsigned int cfg_cycles, cfg_writes;
/* The stamp last written to each slot, and whether this cycle wrote it. */
static uint64_t last_stamp[NR_SLOTS];

static uint64_t next_rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A stamp that may be in @slot: this test's, for that slot, whole. */
static int stamp_fits(uint64_t s, unsigned int slot)
{
	unsigned int magic = T_STAMP_MAGIC(s);

	return magic >= 0x80 && magic <= cycle_magic &&
	       T_STAMP_OFF(s) == slot * SLOT && T_STAMP_LEN(s) == SLOT;
}

static int read_slot(struct reader *r, struct io_uring *ring, int *pipefd,
		     void *buf, unsigned int slot)
{
	off_t off = (off_t)slot * SLOT;
	ssize_t n = 0, got;
	loff_t soff = off;

	switch (r->kind) {
	case R_PREAD:
		n = pread(rfd, buf, SLOT, off);
		break;
	case R_URING:
		n = t_uring_pread(ring, rfd, buf, SLOT, off);
		if (n < 0) {
			errno = -n;
			n = -1;
		}
		break;
	case R_DIRECT:
		n = pread(dfd, buf, SLOT, off);
		break;
	case R_SPLICE:
		n = splice(rfd, &soff, pipefd[1], NULL, SLOT, 0);
		for (got = 0; n > 0 && got < n;) {
			ssize_t m = read(pipefd[0], (char *)buf + got, n - got);

			if (m <= 0)
				return -1;
			got += m;
		}
		break;
	default:
		break;
	}
	return n;
}

/* Readers that stop before the writers start: direct I/O. */
static int stops_early(enum rkind kind)
{
	return kind == R_DIRECT;
}

/* Readers whose torn reads XFS is held to (the splice reader's are not). */
static int judged_torn(enum rkind kind)
{
	return kind != R_SPLICE;
}

static void *reader_fn(void *arg)
{
	struct reader *r = arg;
	struct io_uring ring;
	int pipefd[2] = { -1, -1 };
	void *buf;

	if (posix_memalign(&buf, 4096, SLOT)) {
		r->failed = 1;
		return NULL;
	}
	if (r->kind == R_URING && io_uring_queue_init(4, &ring, 0)) {
		fprintf(stderr, "%s reader: io_uring_queue_init failed\n",
			rkind_name[r->kind]);
		r->failed = 1;
		free(buf);
		return NULL;
	}
	if (r->kind == R_SPLICE && pipe(pipefd)) {
		perror("pipe");
		r->failed = 1;
		free(buf);
		return NULL;
	}
	while (!stop && !r->failed && !(stops_early(r->kind) && gate_stop)) {
		unsigned int slot = next_rnd(&r->rnd) % NR_SLOTS;
		const uint64_t *w = buf;
		ssize_t n;
		unsigned int i;

		n = read_slot(r, &ring, pipefd, buf, slot);
		if (n != SLOT) {
			fprintf(stderr, "%s reader: slot %u: %zd (%s), not %d bytes\n",
				rkind_name[r->kind], slot, n,
				n < 0 ? strerror(errno) : "short", SLOT);
			r->failed = 1;
			break;
		}
		r->reads++;
		for (i = 0; i < SLOT / 8; i++) {
			if (!stamp_fits(w[i], slot)) {
				char s[96];

				fprintf(stderr, "%s reader: slot %u word %u holds %s, no write to this slot\n",
					rkind_name[r->kind], slot, i,
					t_stamp_str(w[i], s, sizeof(s)));
				r->failed = 1;
				break;
			}
		}
		if (!r->failed && !t_stamp_whole(buf, SLOT)) {
			if (!r->torn++)
				t_stamp_describe(r->first_bad,
						 sizeof(r->first_bad), buf,
						 SLOT, 4);
		}
	}
	if (r->kind == R_URING)
		io_uring_queue_exit(&ring);
	if (pipefd[0] >= 0) {
		close(pipefd[0]);
		close(pipefd[1]);
	}
	free(buf);
	return NULL;
}

struct writer {
	pthread_t thread;
	unsigned int id;
	uint64_t rnd;
	int failed;
};

static void *writer_fn(void *arg)
{
	struct writer *wr = arg;
	struct io_uring ring;
	unsigned int i;
	void *buf;

	if (posix_memalign(&buf, 4096, SLOT) ||
	    io_uring_queue_init(4, &ring, 0)) {
		fprintf(stderr, "writer %u: setup failed\n", wr->id);
		wr->failed = 1;
		/* Let the main thread past the barriers it waits at. */
		pthread_barrier_wait(&first_done);
		pthread_barrier_wait(&first_done);
		return NULL;
	}
	for (i = 0; i < cfg_writes; i++) {
		/* Writer w owns the slots s with s % NR_WRITERS == w. */
		unsigned int slot = next_rnd(&wr->rnd) %
				    (NR_SLOTS / NR_WRITERS) * NR_WRITERS + wr->id;
		uint64_t s = t_stamp(cycle_magic, wr->id, i + 1, slot * SLOT,
				     SLOT);
		int ret;

		t_stamp_fill(buf, SLOT, s);
		ret = t_uring_pwrite(&ring, wfd, buf, SLOT, (off_t)slot * SLOT,
				     0);
		if (ret != SLOT) {
			fprintf(stderr, "writer %u: write of slot %u: %d (%s)\n",
				wr->id, slot, ret,
				ret < 0 ? strerror(-ret) : "short");
			wr->failed = 1;
			break;
		}
		last_stamp[slot] = s;
		/* Here the main thread counts the first writes' punts. */
		if (!i) {
			pthread_barrier_wait(&first_done);
			pthread_barrier_wait(&first_done);
		}
	}
	if (wr->failed && !i) {
		/* Let the main thread past the barriers it waits at. */
		pthread_barrier_wait(&first_done);
		pthread_barrier_wait(&first_done);
	}
	io_uring_queue_exit(&ring);
	free(buf);
	return NULL;
}

static int check_final(void)
{
	unsigned int slot, i, bad = 0;
	void *buf;

	if (posix_memalign(&buf, 4096, SLOT))
		return 1;
	for (slot = 0; slot < NR_SLOTS; slot++) {
		const uint64_t *w = buf;

		if (pread(rfd, buf, SLOT, (off_t)slot * SLOT) != SLOT) {
			perror("pread final");
			bad++;
			break;
		}
		for (i = 0; i < SLOT / 8; i++) {
			if (w[i] != last_stamp[slot]) {
				char want[96], got[96];

				if (bad++ < 4)
					fprintf(stderr, "final: slot %u word %u holds %s, not the last write %s\n",
						slot, i,
						t_stamp_str(w[i], got, sizeof(got)),
						t_stamp_str(last_stamp[slot], want,
							    sizeof(want)));
				break;
			}
		}
	}
	free(buf);
	return bad != 0;
}

static int open_writable(void)
{
	wfd = open(path, O_RDWR);
	if (wfd < 0) {
		fprintf(stderr, "open %s O_RDWR: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static int run_cycle(unsigned int c, unsigned long long *late_punts)
{
	struct reader readers[NR_RKINDS];
	struct writer writers[NR_WRITERS];
	long by_op0[256], by_op_mid[256], by_op1[256];
	int early = c % 2, failed = 0;
	struct timespec pause = { 0, 20 * 1000000 };
	unsigned long long reads = 0, torn = 0;
	unsigned int i;
	long punts, first;

	cycle_magic = 0x80 | (c & 0x7f);
	if (t_drop_caches())
		return 1;
	rfd = open(path, O_RDONLY | O_NOATIME);
	dfd = open(path, O_RDONLY | O_DIRECT | O_NOATIME);
	if (rfd < 0 || dfd < 0) {
		fprintf(stderr, "open %s read-only: %s\n", path, strerror(errno));
		return 1;
	}
	if (early && open_writable())
		return 1;
	stop = gate_stop = 0;
	for (i = 0; i < NR_RKINDS; i++) {
		memset(&readers[i], 0, sizeof(readers[i]));
		readers[i].kind = i;
		readers[i].rnd = (c + 1) * 0x9e3779b97f4a7c15ULL + i + 1;
		if (pthread_create(&readers[i].thread, NULL, reader_fn,
				   &readers[i])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(T_EXIT_FAIL);
		}
	}
	nanosleep(&pause, NULL);
	/* Among readers: the open's IOLOCK_EXCL trylock may fail. */
	if (!early && open_writable())
		exit(T_EXIT_FAIL);
	/*
	 * An overwriter that meets direct I/O in the gate takes the
	 * IOLOCK_EXCL path (docs/design.md section 7): the O_DIRECT reader
	 * stops before the writers start. The splice reader goes on.
	 */
	gate_stop = 1;
	pthread_join(readers[R_DIRECT].thread, NULL);
	if (t_punts_read_ops(by_op0) < 0)
		failed = 1;
	pthread_barrier_init(&first_done, NULL, NR_WRITERS + 1);
	for (i = 0; i < NR_WRITERS; i++) {
		memset(&writers[i], 0, sizeof(writers[i]));
		writers[i].id = i;
		writers[i].rnd = (c + 3) * 0xbf58476d1ce4e5b9ULL + i + 1;
		if (pthread_create(&writers[i].thread, NULL, writer_fn,
				   &writers[i])) {
			fprintf(stderr, "pthread_create failed\n");
			exit(T_EXIT_FAIL);
		}
	}
	pthread_barrier_wait(&first_done);
	if (t_punts_read_ops(by_op_mid) < 0)
		failed = 1;
	pthread_barrier_wait(&first_done);
	for (i = 0; i < NR_WRITERS; i++) {
		pthread_join(writers[i].thread, NULL);
		failed |= writers[i].failed;
	}
	pthread_barrier_destroy(&first_done);
	if (t_punts_read_ops(by_op1) < 0)
		failed = 1;
	/* The file open for writing goes among the readers, or after them. */
	if (!early)
		close(wfd);
	stop = 1;
	for (i = 0; i < NR_RKINDS; i++) {
		if (!stops_early(i))
			pthread_join(readers[i].thread, NULL);
		failed |= readers[i].failed;
		reads += readers[i].reads;
		if (judged_torn(i))
			torn += readers[i].torn;
	}
	first = by_op_mid[IORING_OP_WRITE] - by_op0[IORING_OP_WRITE];
	punts = by_op1[IORING_OP_WRITE] - by_op0[IORING_OP_WRITE];
	printf("cycle %2u: open %s the readers, %u writes, %ld punted (%ld of the writers' first ones); %llu reads (",
	       c, early ? "before" : "among", NR_WRITERS * cfg_writes,
	       punts, first, reads);
	for (i = 0; i < NR_RKINDS; i++)
		printf("%s%s %llu%s", i ? ", " : "", rkind_name[i],
		       readers[i].reads,
		       readers[i].torn ? " TORN" : "");
	printf("), %llu torn\n", torn);
	if (!failed && check_final())
		failed = 1;
	if (fsync(rfd)) {
		perror("fsync");
		failed = 1;
	}
	close(rfd);
	close(dfd);
	if (early)
		close(wfd);
	if (failed)
		return 1;
	if (readers[R_SPLICE].torn)
		printf("  %llu torn splice reads, reported, not asserted; the first:\n%s",
		       readers[R_SPLICE].torn, readers[R_SPLICE].first_bad);
	if (torn) {
		for (i = 0; !(judged_torn(i) && readers[i].torn); i++)
			;
		if (on_xfs) {
			fprintf(stderr, "cycle %u: %llu torn reads on XFS; the first of the %s reader:\n%s",
				c, torn, rkind_name[i], readers[i].first_bad);
			failed = 1;
		} else {
			printf("  torn reads reported, not asserted, on fs %s; the first of the %s reader:\n%s",
			       t_test_fs(), rkind_name[i], readers[i].first_bad);
		}
	}
	if (!early)
		*late_punts += punts;
	if (early ? punts : punts - first) {
		fprintf(stderr, "cycle %u: %ld of %u io_uring writes punted after an open for writing %s the readers (%ld of them after each writer's first write was done; none may be)\n",
			c, punts, NR_WRITERS * cfg_writes,
			early ? "before" : "among", punts - first);
		failed = 1;
	}
	return failed;
}

int main(void)
{
	unsigned long long late_punts = 0;
	unsigned int c, failed = 0;
	struct io_uring ring;
	struct statfs sfs;
	int ret;

	t_seed("late-open");
	cfg_cycles = t_env_uint("TEST_CYCLES", 12, 1, 10000);
	cfg_writes = t_env_uint("TEST_WRITES", 200, 1, 1000000);

	ret = io_uring_queue_init(1, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}

	wfd = t_create_file("late-open", 0, path, sizeof(path));
	if (fstatfs(wfd, &sfs)) {
		perror("fstatfs");
		return T_EXIT_FAIL;
	}
	on_xfs = sfs.f_type == XFS_SUPER_MAGIC;
	if (t_stamp_prefill(wfd, 0x80, NR_SLOTS * SLOT, SLOT))
		return T_EXIT_FAIL;
	close(wfd);
	for (c = 0; c < NR_SLOTS; c++)
		last_stamp[c] = t_stamp_fill_tile(0x80, SLOT, c * SLOT);
	if (t_punts_start())
		return T_EXIT_FAIL;
	printf("fs %s (%s), %u cycles, %u writers x %u writes, readers: pread, io_uring, O_DIRECT, splice; torn reads %s\n",
	       t_test_fs(), on_xfs ? "XFS" : "not XFS", cfg_cycles,
	       NR_WRITERS, cfg_writes, on_xfs ? "fail" : "only reported");
	for (c = 1; c <= cfg_cycles; c++) {
		if (!run_cycle(c, &late_punts))
			continue;
		fprintf(stderr, "cycle %u failed (fs %s)\n", c, t_test_fs());
		failed++;
		break;
	}
	t_punts_stop();
	printf("opens among readers: %llu writes punted in all (a writer's first write may take the IOLOCK_EXCL path)\n",
	       late_punts);
	io_uring_queue_exit(&ring);
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
