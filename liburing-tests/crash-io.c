/* SPDX-License-Identifier: MIT */
/*
 * Description: the two halves of the crash check (crash-check.sh).
 *
 * "crash-io write DIR SEED ROUNDS": prefill DIR/crash-file (16 MiB,
 * generation 0) and fsync it; then ROUNDS rounds of 256 io_uring
 * overwrites each (4-64 KiB, 4 KiB aligned, random, generation = round
 * number), each round ended by an io_uring fsync and a "synced N" line;
 * then one more round without fsync, and a hard reset of the machine
 * (sysrq b) in the middle of it, with the data of that round partly in
 * the page cache, partly on its way to the disk.
 *
 * "crash-io verify DIR SEED SYNCED": after the reboot, replay the same
 * random sequence and check every 512-byte sector of the file: it must
 * hold the pattern of the last fsynced round that wrote it (generation 0
 * if none), or, if the unsynced round wrote it, that round's pattern.
 * So nothing fsynced is lost and no unsynced data lands anywhere but
 * where it was written; stale or foreign data, zeros and a wrong size
 * fail.
 *
 * "crash-io logged DIR SEED ROUNDS DM-NAME": the same prefill and rounds
 * on a file system on a dm-log-writes device, with no crash: after each
 * fsync returns (the prefill's is round 0) it inserts the mark
 * "synced-N" into the log (dmsetup message DM-NAME 0 mark synced-N), then
 * writes the unsynced round and returns. dm-log-writes logs a completed
 * write only at the next flush, so the log replayed up to "synced-N" is
 * what the disk held for certain when fsync returned, and "crash-io
 * verify DIR SEED N" on it finds any write that fsync did not flush
 * (logwrites-check.sh).
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern char **environ;

#include "helpers.h"

#define FILE_SIZE	(16u << 20)
#define BLK		4096u
#define NR_BLKS		(FILE_SIZE / BLK)
#define SECTOR		512u
#define WRITES		256
#define MAX_BLKS	16	/* 64 KiB */

struct wr {
	uint32_t blk, nr;
};

/* The @i-th write of round @round: a deterministic function of the seed. */
static struct wr next_write(uint64_t *rnd)
{
	struct wr w;

	w.nr = 1 + t_rnd_next(rnd) % MAX_BLKS;
	w.blk = t_rnd_next(rnd) % (NR_BLKS - w.nr + 1);
	return w;
}

static int open_file(const char *dir, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/crash-file", dir);
	fd = open(path, O_RDWR | flags, 0644);
	if (fd < 0)
		perror(path);
	return fd;
}

static int do_write(const char *dir, uint64_t seed, unsigned int rounds)
{
	static unsigned char buf[MAX_BLKS * BLK];
	unsigned char *fill;
	struct io_uring ring;
	uint64_t rnd = seed;
	unsigned int r, i;
	int fd, ret, trig;

	fd = open_file(dir, O_CREAT | O_TRUNC);
	fill = malloc(FILE_SIZE);
	if (fd < 0 || !fill || io_uring_queue_init(8, &ring, 0))
		return T_EXIT_FAIL;
	t_fill_pattern(fill, FILE_SIZE, 0, 0);
	if (pwrite(fd, fill, FILE_SIZE, 0) != FILE_SIZE || fsync(fd) ||
	    pread(fd, fill, FILE_SIZE, 0) != FILE_SIZE) {
		perror("prefill");
		return T_EXIT_FAIL;
	}
	/* Open the trigger now: no allocation or path walk at crash time. */
	trig = open("/proc/sysrq-trigger", O_WRONLY);
	if (trig < 0) {
		perror("/proc/sysrq-trigger");
		return T_EXIT_FAIL;
	}
	printf("synced 0\n");
	fflush(stdout);
	for (r = 1; r <= rounds + 1; r++) {
		for (i = 0; i < WRITES; i++) {
			struct wr w = next_write(&rnd);
			off_t off = (off_t)w.blk * BLK;

			t_fill_pattern(buf, w.nr * BLK, off, r);
			ret = t_uring_pwrite(&ring, fd, buf, w.nr * BLK, off, 0);
			if (ret != (int)(w.nr * BLK)) {
				fprintf(stderr, "round %u write %u: %d\n", r, i, ret);
				return T_EXIT_FAIL;
			}
			if (r == rounds + 1 && i == WRITES / 2) {
				/* Start writeback of part of it, then crash. */
				sync_file_range(fd, 0, FILE_SIZE / 2,
						SYNC_FILE_RANGE_WRITE);
			}
		}
		if (r == rounds + 1)
			break;
		ret = t_uring_fsync(&ring, fd);
		if (ret) {
			fprintf(stderr, "round %u fsync: %d\n", r, ret);
			return T_EXIT_FAIL;
		}
		printf("synced %u\n", r);
		fflush(stdout);
	}
	printf("crashing in round %u\n", rounds + 1);
	fflush(stdout);
	/* Let the serial port send that line before the reset. */
	tcdrain(STDOUT_FILENO);
	if (write(trig, "b", 1) != 1)
		perror("sysrq b");
	/* Not reached when the reset works. */
	fprintf(stderr, "still running after sysrq b\n");
	return T_EXIT_FAIL;
}

/* dmsetup message @dm 0 mark synced-@r: a mark in the dm-log-writes log. */
static int log_mark(const char *dm, unsigned int r)
{
	char mark[32];
	char *argv[] = { "dmsetup", "message", (char *)dm, "0", "mark", mark, NULL };
	pid_t pid;
	int st;

	snprintf(mark, sizeof(mark), "synced-%u", r);
	if (posix_spawnp(&pid, "dmsetup", NULL, NULL, argv, environ)) {
		perror("dmsetup");
		return -1;
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "dmsetup message %s 0 mark %s failed\n", dm, mark);
		return -1;
	}
	printf("marked %s\n", mark);
	fflush(stdout);
	return 0;
}

/* Prefill, @rounds fsynced rounds each followed by a log mark, one more. */
static int do_logged(const char *dir, uint64_t seed, unsigned int rounds,
		     const char *dm)
{
	static unsigned char buf[MAX_BLKS * BLK];
	unsigned char *fill;
	struct io_uring ring;
	uint64_t rnd = seed;
	unsigned int r, i;
	int fd, ret;

	fd = open_file(dir, O_CREAT | O_TRUNC);
	fill = malloc(FILE_SIZE);
	if (fd < 0 || !fill || io_uring_queue_init(8, &ring, 0))
		return T_EXIT_FAIL;
	t_fill_pattern(fill, FILE_SIZE, 0, 0);
	/* Read back: the rounds overwrite cached data, the path under test. */
	if (pwrite(fd, fill, FILE_SIZE, 0) != FILE_SIZE || fsync(fd) ||
	    pread(fd, fill, FILE_SIZE, 0) != FILE_SIZE) {
		perror("prefill");
		return T_EXIT_FAIL;
	}
	free(fill);
	if (log_mark(dm, 0))
		return T_EXIT_FAIL;
	for (r = 1; r <= rounds + 1; r++) {
		for (i = 0; i < WRITES; i++) {
			struct wr w = next_write(&rnd);
			off_t off = (off_t)w.blk * BLK;

			t_fill_pattern(buf, w.nr * BLK, off, r);
			ret = t_uring_pwrite(&ring, fd, buf, w.nr * BLK, off, 0);
			if (ret != (int)(w.nr * BLK)) {
				fprintf(stderr, "round %u write %u: %d\n", r, i, ret);
				return T_EXIT_FAIL;
			}
		}
		if (r == rounds + 1)
			break;
		ret = t_uring_fsync(&ring, fd);
		if (ret) {
			fprintf(stderr, "round %u fsync: %d\n", r, ret);
			return T_EXIT_FAIL;
		}
		printf("synced %u\n", r);
		if (log_mark(dm, r))
			return T_EXIT_FAIL;
	}
	printf("wrote round %u without fsync\n", rounds + 1);
	io_uring_queue_exit(&ring);
	close(fd);
	return T_EXIT_PASS;
}

static int do_verify(const char *dir, uint64_t seed, unsigned int synced)
{
	uint8_t *last = calloc(NR_BLKS, 1), *unsynced = calloc(NR_BLKS, 1);
	unsigned char *data = malloc(FILE_SIZE), *want = malloc(SECTOR);
	uint64_t rnd = seed;
	unsigned int r, i, b, s, bad = 0, from_unsynced = 0;
	struct stat st;
	int fd;

	if (!last || !unsynced || !data || !want)
		return T_EXIT_FAIL;
	for (r = 1; r <= synced + 1; r++) {
		for (i = 0; i < WRITES; i++) {
			struct wr w = next_write(&rnd);

			for (b = w.blk; b < w.blk + w.nr; b++) {
				if (r <= synced)
					last[b] = r;
				else
					unsynced[b] = 1;
			}
		}
	}
	fd = open_file(dir, 0);
	if (fd < 0 || fstat(fd, &st))
		return T_EXIT_FAIL;
	if (st.st_size != FILE_SIZE) {
		fprintf(stderr, "file size %lld after the crash, expected %u\n",
			(long long)st.st_size, FILE_SIZE);
		return T_EXIT_FAIL;
	}
	if (pread(fd, data, FILE_SIZE, 0) != FILE_SIZE) {
		perror("pread");
		return T_EXIT_FAIL;
	}
	for (s = 0; s < FILE_SIZE / SECTOR; s++) {
		off_t off = (off_t)s * SECTOR;
		unsigned char *got = data + off;

		b = off / BLK;
		t_fill_pattern(want, SECTOR, off, last[b]);
		if (!memcmp(got, want, SECTOR))
			continue;
		if (unsynced[b]) {
			t_fill_pattern(want, SECTOR, off, synced + 1);
			if (!memcmp(got, want, SECTOR)) {
				from_unsynced++;
				continue;
			}
		}
		if (bad++ < 10)
			fprintf(stderr, "sector at %lld: not round %u's data%s (first bytes %02x %02x %02x %02x)\n",
				(long long)off, last[b],
				unsynced[b] ? " nor the unsynced round's" : "",
				got[0], got[1], got[2], got[3]);
	}
	printf("verified %u sectors after round %u: %u bad, %u hold the unsynced round's data\n",
	       FILE_SIZE / SECTOR, synced, bad, from_unsynced);
	close(fd);
	return bad ? T_EXIT_FAIL : T_EXIT_PASS;
}

int main(int argc, char *argv[])
{
	uint64_t seed;
	unsigned int n;

	if (!((argc == 5 && (!strcmp(argv[1], "write") || !strcmp(argv[1], "verify"))) ||
	      (argc == 6 && !strcmp(argv[1], "logged")))) {
		fprintf(stderr, "usage: %s write DIR SEED ROUNDS | verify DIR SEED SYNCED | logged DIR SEED ROUNDS DM-NAME\n",
			argv[0]);
		return T_EXIT_FAIL;
	}
	seed = strtoull(argv[3], NULL, 0) | 1;
	n = strtoul(argv[4], NULL, 0);
	if (!strcmp(argv[1], "logged"))
		return do_logged(argv[2], seed, n, argv[5]);
	if (!strcmp(argv[1], "write"))
		return do_write(argv[2], seed, n);
	return do_verify(argv[2], seed, n);
}
