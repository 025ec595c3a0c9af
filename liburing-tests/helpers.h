/* SPDX-License-Identifier: MIT */
/*
 * Description: helpers shared by the tests and the benchmark: exit codes,
 *		environment knobs, scratch files, data patterns, worker
 *		threads' rings, counting io_uring punts to io-wq with the
 *		io_uring_queue_async_work tracepoint, and running a fallback
 *		case in every write mode. Write stamps are in stamp.h.
 */
#ifndef URING_OVERWRITE_HELPERS_H
#define URING_OVERWRITE_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <liburing.h>
#include <pthread.h>

enum t_test_result {
	T_EXIT_PASS = 0,
	T_EXIT_FAIL = 1,
	T_EXIT_SKIP = 77,
};

/*
 * The file system shutdown ioctl (XFS_IOC_GOINGDOWN and EXT4_IOC_SHUTDOWN
 * are the same number) and its flags.
 */
#define T_IOC_GOINGDOWN			_IOR('X', 125, uint32_t)
#define T_GOING_FLAGS_LOGFLUSH		0x1
#define T_GOING_FLAGS_NOLOGFLUSH	0x2
/* Freeze and thaw (<linux/fs.h>, which clashes with <sys/mount.h>). */
#ifndef FIFREEZE
#define FIFREEZE			_IOWR('X', 119, int)
#define FITHAW				_IOWR('X', 120, int)
#endif

/* Write @s to the file at @path (sysfs, tracefs): 0 or -errno. */
int t_write_str(const char *path, const char *s);

/*
 * sync(), then drop the page cache and every unused dentry and inode
 * (evicted inodes lose their page cache): 0, or 1 (printed).
 */
int t_drop_caches(void);

/* Directory to create test files in: $TEST_DIR, else ".". */
const char *t_test_dir(void);

/* File system config name from $TEST_FS ("xfs-lazytime", ...), or "?". */
const char *t_test_fs(void);

/*
 * Create a uniquely named file in t_test_dir() and open it with @flags
 * (O_RDWR is implied). The file is unlinked at exit unless
 * $TEST_KEEP_FILES is set. Returns the fd; exits on failure.
 */
int t_create_file(const char *tag, int flags, char *path_out, size_t path_len);

/* Sleep until CLOCK_REALTIME_COARSE (what inode timestamps use) ticks. */
void t_next_tick(void);

/* Whether timespec @a is before @b. */
int t_ts_before(const struct timespec *a, const struct timespec *b);

/* Coarse clock ticks (CLOCK_REALTIME_COARSE resolution) from @a to @b. */
long t_ticks_between(const struct timespec *a, const struct timespec *b);

/* Seed from $TEST_SEED or the clock; printed once so a failure can be rerun. */
unsigned int t_seed(const char *test_name);

/*
 * $@name as a number (strtoul, base 0), clamped to [@min, @max]; @def
 * when it is unset or empty.
 */
unsigned int t_env_uint(const char *name, unsigned int def,
			unsigned int min, unsigned int max);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t t_now_ns(void);

/* xorshift64: the next number of the sequence in @x (never 0 if @x isn't). */
static inline uint64_t t_rnd_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Does the mount holding @fd have option @opt (e.g. "lazytime")? Reads
 * /proc/self/mountinfo. Returns 1, 0, or -1 when it cannot tell.
 */
int t_mount_has_option(int fd, const char *opt);

/*
 * Deterministic bytes: the byte at file offset @off written by generation
 * @gen. Lets a reader name which write a byte came from.
 */
static inline uint8_t t_pattern_byte(uint64_t off, uint32_t gen)
{
	uint64_t x = off * 0x9e3779b97f4a7c15ULL + gen * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 31;
	return (uint8_t)(x ^ (x >> 17));
}

void t_fill_pattern(void *buf, size_t len, uint64_t off, uint32_t gen);

/*
 * Compare @buf (file offset @off) with generation @gen. Returns -1 when it
 * matches, else the index of the first byte that differs.
 */
ssize_t t_check_pattern(const void *buf, size_t len, uint64_t off, uint32_t gen);

/* Write @len bytes of @buf at @off through @ring and wait: returns res. */
int t_uring_pwrite(struct io_uring *ring, int fd, const void *buf,
		   unsigned int len, off_t off, int rw_flags);
int t_uring_pwritev(struct io_uring *ring, int fd, const struct iovec *iov,
		    unsigned int nr, off_t off, int rw_flags);
int t_uring_pread(struct io_uring *ring, int fd, void *buf,
		  unsigned int len, off_t off);
int t_uring_fsync(struct io_uring *ring, int fd);

/*
 * Worker threads of the stress tests, named @who ("w3", "r0") in what
 * they print. t_worker_buf() returns @size bytes, page aligned, or NULL
 * after printing "@who: out of memory". t_worker_ring() sets up @ring
 * with @entries and returns t_worker_buf(@size), or NULL after printing
 * why, with @ring then not set up; t_worker_ring_exit() undoes it (a
 * no-op for NULL @bufs). t_worker_ring_fixed() registers @bufs with
 * @ring as @nr buffers of @size bytes each (buffer i at i * @size, for
 * WRITE_FIXED/READ_FIXED with buf_index i); on failure it prints why,
 * undoes t_worker_ring() and returns NULL, else it returns @bufs.
 */
void *t_worker_buf(size_t size, const char *who);
void *t_worker_ring(struct io_uring *ring, unsigned int entries, size_t size,
		    const char *who);
void *t_worker_ring_fixed(struct io_uring *ring, void *bufs, unsigned int nr,
			  size_t size, const char *who);
void t_worker_ring_exit(struct io_uring *ring, void *bufs);

/*
 * Submit the @nr sqes prepared on @ring and reap @nr completions, each
 * passed to @fn(@arg, cqe) before it is marked seen. Returns 0, or 1
 * after printing the io_uring_submit() or io_uring_wait_cqe() error,
 * prefixed with @who; completions still due are then left on the ring.
 */
int t_uring_batch(struct io_uring *ring, unsigned int nr, const char *who,
		  void (*fn)(void *arg, const struct io_uring_cqe *cqe),
		  void *arg);

/*
 * Punt counting. t_punts_start() installs a hist trigger on
 * io_uring:io_uring_queue_async_work (exact, no ring buffer to overflow);
 * t_punts_read() returns the hits since start, t_punts_stop() removes it.
 * Return -1 (and print why) when tracefs or the event is unavailable.
 */
int t_punts_start(void);
long t_punts_read(void);
void t_punts_stop(void);
/*
 * The same hits by io_uring opcode: @by_op[op] for op < 256. Returns the
 * total, or -1 (and prints why) when the hist file cannot be read.
 */
long t_punts_read_ops(long by_op[256]);
/*
 * The punted requests themselves: a second hist trigger on the same event,
 * keyed on user_data (up to 16384 distinct values). t_punts_by_data()
 * calls @fn for every user_data that was punted, with its count, and
 * returns the number of punts, or -1 (and prints why) if the hist file
 * cannot be read or dropped entries.
 */
int t_punts_by_data_start(void);
long t_punts_by_data(void (*fn)(uint64_t user_data, long n, void *arg),
		     void *arg);
void t_punts_by_data_stop(void);

/*
 * Fallback tests: writes the inline fast path must not take, issued four
 * ways, each checked against a shadow copy of the file.
 */
enum t_wmode {
	T_URING_NOWAIT,		/* io_uring write, sqe->rw_flags RWF_NOWAIT */
	T_PWRITEV2_NOWAIT,	/* pwritev2(..., RWF_NOWAIT) */
	T_URING,		/* io_uring write: inline try, else io-wq */
	T_PWRITEV2,		/* pwritev2(..., 0): plain blocking write */
	T_NR_WMODES,
};

const char *t_wmode_name(enum t_wmode m);

static inline int t_wmode_nowait(enum t_wmode m)
{
	return m == T_URING_NOWAIT || m == T_PWRITEV2_NOWAIT;
}

/*
 * Issue one write in mode @m; @rw_flags (RWF_DSYNC, ...) is added to the
 * mode's own. Returns what the kernel returned: bytes or -errno.
 */
ssize_t t_wmode_write(struct io_uring *ring, enum t_wmode m, int fd,
		      const void *buf, size_t len, off_t off, int rw_flags);

/*
 * The allowed outcomes of a write of @len bytes that returned @ret (see
 * helpers.c). Returns how many bytes must now be in the file, 0 when the
 * write was refused, or -1 (printed, prefixed with @what) when @ret is
 * not an allowed outcome.
 */
ssize_t t_write_outcome(const char *what, enum t_wmode m, int fd,
			ssize_t ret, size_t len);

/*
 * Does the file system holding @dir refuse every buffered RWF_NOWAIT
 * pwritev2() (-EOPNOTSUPP or -EINVAL even for a cached overwrite)? Probed
 * once per file system with a scratch file; 1 yes, 0 no, -1 error.
 * t_write_outcome() probes by itself, but not while a fs is frozen.
 */
int t_nowait_probe(const char *dir);

/* Outcome counts of a case's writes in one mode, for the summary line. */
struct t_tally {
	unsigned int full, partial, refused, writes;
	int last_err;		/* errno of the last refusal */
};

void t_tally_add(struct t_tally *t, ssize_t ret, size_t len);
/* "full", "EAGAIN", "full 60 EAGAIN 4", ... in @buf. */
const char *t_tally_str(const struct t_tally *t, char *buf, size_t len);
/* "EAGAIN", "EOPNOTSUPP", ... or "errno N". */
const char *t_errno_name(int err);

/*
 * Run a case in every write mode: @fn(@arg, m, what, tally), with what
 * "@name [mode]" and the tally zeroed, then print one line: "ok  " or
 * "FAIL", @name and each mode's outcome (t_tally_str(), or "FAILED").
 * Returns 0, 1 when some mode failed, or T_EXIT_SKIP as soon as a mode
 * returns it, after printing "SKIP @name@skip_note" instead.
 */
int t_run_modes(const char *name, const char *skip_note,
		int (*fn)(const void *arg, enum t_wmode m, const char *what,
			  struct t_tally *t),
		const void *arg);

/* The results of a test's cases. */
struct t_cases {
	const char *test;	/* the test's name, for the summary */
	int failed, skipped;
};

/* Count a case that returned @ret: 0 passed, T_EXIT_SKIP, else failed. */
static inline void t_cases_add(struct t_cases *cs, int ret)
{
	if (ret == T_EXIT_SKIP)
		cs->skipped++;
	else if (ret)
		cs->failed++;
}

/*
 * Print how many cases failed (stderr) or else were skipped (stdout), if
 * any, and return the test's exit code: T_EXIT_FAIL, T_EXIT_SKIP or
 * T_EXIT_PASS.
 */
int t_cases_exit(const struct t_cases *cs);

/* The expected contents of a test file: bytes and size. */
struct t_shadow {
	unsigned char *data;
	size_t size;
	size_t cap;
};

/* Exits on allocation failure; @cap bounds every offset + length. */
void t_shadow_init(struct t_shadow *sh, size_t cap);
void t_shadow_free(struct t_shadow *sh);
void t_shadow_put(struct t_shadow *sh, const void *buf, size_t len, off_t off);
void t_shadow_truncate(struct t_shadow *sh, size_t size);

/*
 * Compare the file's size and every byte (pread) with @sh. Returns 0, or
 * 1 after printing @what and the first and last differing offsets.
 */
int t_shadow_verify(const struct t_shadow *sh, int fd, const char *what);

/* fsync, drop the clean page cache, and verify again from the disk. */
int t_shadow_verify_stable(const struct t_shadow *sh, int fd,
			   const char *what);

/*
 * Write @len bytes of @buf at @off in mode @m, check the outcome with
 * t_write_outcome(), record in @sh what landed (at EOF for O_APPEND or
 * RWF_APPEND) and verify the file. @expect is what the bytes of @buf are
 * (NULL: @buf itself). @tally may be NULL. Returns 0 or 1.
 */
int t_write_check(struct io_uring *ring, enum t_wmode m, int fd,
		  struct t_shadow *sh, const char *what, const void *buf,
		  const void *expect, size_t len, off_t off, int rw_flags,
		  struct t_tally *tally);

/* Record in @sh and verify a write already issued that returned @ret. */
int t_check_written(enum t_wmode m, int fd, struct t_shadow *sh,
		    const char *what, const void *expect, size_t len,
		    off_t off, int rw_flags, ssize_t ret,
		    struct t_tally *tally);

/*
 * How many pages of [@off, @off + @len) of @fd's file are in the page
 * cache (mincore() of a shared mapping, which faults nothing in), or -1.
 * @off must be page aligned.
 */
long t_cached_pages(int fd, off_t off, size_t len);

/* Unlink a file made by t_create_file() now, unless $TEST_KEEP_FILES. */
void t_remove_file(const char *path);

/* A userfaultfd (O_NONBLOCK, API handshake done), or -errno. */
int t_uffd_open(void);

/*
 * A thread body serving missing-page faults in @area: @delay_us after
 * each fault it copies the page's bytes from @src (at the same offset
 * from @area) into place. Stops when @stop_fd (an eventfd) is written;
 * @served counts the pages, @error is the errno that stopped it early.
 */
struct t_uffd_handler {
	int uffd;
	int stop_fd;
	unsigned char *area;
	const unsigned char *src;
	unsigned int delay_us;
	int served;
	int error;
	/* If set, stored 0 when a fault arrives (before the delay). */
	int64_t *clear_on_fault;
};
void *t_uffd_serve(void *arg);

/*
 * A thread that overwrites [@off, @off + @len) of @fd with @data in a
 * loop of blocking pwrite()s whose source buffer sits behind a
 * userfaultfd, its first page dropped before each write: every write
 * sleeps in its copy for one fault, @delay_us plus the handler's
 * wake-up, holding whatever locks the kernel holds across the copy. A
 * writer that sleeps, unlike one that runs, holds them whenever another
 * thread looks, however the threads are scheduled.
 */
struct t_stalled_writer {
	int fd;
	off_t off;
	size_t len;
	const void *data;
	unsigned int delay_us;
	/* Out: pwrite()s done, and the errno that stopped it early. */
	unsigned long writes;
	int error;
	/*
	 * Out, read while it runs: nonzero from just before a pwrite() until
	 * its copy faults (or it returns), the span in which it may update
	 * the file's timestamps: the coarse clock in ns when it began, or 1
	 * if the file's c/mtime were older than that clock.
	 */
	int64_t updating;
	/* Private. */
	int stop;
	struct t_uffd_handler h;
	pthread_t thr, hthr;
};

/*
 * Make the file of @fd one that IOCB_NOWAIT writers use: one RWF_NOWAIT
 * pwritev2() that writes back the first page's own bytes (at most 4 KiB;
 * it changes c/mtime). The series keeps blocking writers of a file on the
 * exclusive path until its first IOCB_NOWAIT user; tests whose blocking
 * writers stand for the other writers of a file in io_uring use call this
 * before they start. The write may return -EAGAIN (stale timestamps, a
 * busy lock) or, on 6.12's ext4, -EOPNOTSUPP; returns 0, or -1 after
 * printing why for anything else, and for an O_DIRECT or read-only fd.
 */
int t_note_nowait_use(int fd);

/* Start it; returns 0 once its first write has faulted, or -1. */
int t_stalled_writer_start(struct t_stalled_writer *w);
/* Stop and join it; returns 0, or 1 after printing what went wrong. */
int t_stalled_writer_stop(struct t_stalled_writer *w);

#endif
