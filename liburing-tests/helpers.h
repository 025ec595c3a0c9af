/* SPDX-License-Identifier: MIT */
/*
 * Description: helpers shared by the tests and the benchmark: exit codes,
 *		scratch files, data patterns, and counting io_uring punts to
 *		io-wq with the io_uring_queue_async_work tracepoint.
 */
#ifndef URING_OVERWRITE_HELPERS_H
#define URING_OVERWRITE_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <liburing.h>

enum t_test_result {
	T_EXIT_PASS = 0,
	T_EXIT_FAIL = 1,
	T_EXIT_SKIP = 77,
};

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

/* Seed from $TEST_SEED or the clock; printed once so a failure can be rerun. */
unsigned int t_seed(const char *test_name);

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
int t_uring_pread(struct io_uring *ring, int fd, void *buf,
		  unsigned int len, off_t off);
int t_uring_fsync(struct io_uring *ring, int fd);

/*
 * Punt counting. t_punts_start() installs a hist trigger on
 * io_uring:io_uring_queue_async_work (exact, no ring buffer to overflow);
 * t_punts_read() returns the hits since start, t_punts_stop() removes it.
 * Return -1 (and print why) when tracefs or the event is unavailable.
 */
int t_punts_start(void);
long t_punts_read(void);
void t_punts_stop(void);

#endif
