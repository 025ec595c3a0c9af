/* SPDX-License-Identifier: MIT */
/*
 * Description: lockdep must see the overwrite gate in the lock order.
 *		The gate that keeps buffered overwriters apart from direct
 *		I/O (and, on XFS, from buffered readers) is a lockdep map:
 *		writers acquire it exclusive, readers and direct I/O shared.
 *		This test makes both classes enter it (cached overwrites by
 *		pwrite() and io_uring, O_DIRECT reads and writes, buffered
 *		reads), then reads /proc/lockdep and requires the gate's
 *		class for this file system to be there with a lock held
 *		before it (i_rwsem / IOLOCK: an edge into the gate, recorded
 *		only for a blocking acquire: pwrite(), which enters the gate
 *		once an io_uring write has made the file one that NOWAIT
 *		writers use) and a lock taken under it (an
 *		edge out of it). So a deadlock through the gate is one
 *		lockdep can report, not one only the hung task detector
 *		would find.
 *
 *		Needs a lockdep kernel (the debug flavour): elsewhere there
 *		is no /proc/lockdep and the test skips. A debug kernel
 *		without the series, or with a gate lockdep does not track,
 *		fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

#define FSIZE	(1024 * 1024)
#define BS	4096
#define ROUNDS	16

/* Make writers, direct I/O and readers enter the gate of one file. */
static int exercise(void)
{
	struct io_uring ring;
	char path[4096];
	void *buf;
	int fd, dfd, i;
	off_t off;

	if (posix_memalign(&buf, BS, BS))
		return -1;
	memset(buf, 0x5a, BS);
	fd = t_create_file("lockdep-gate", 0, path, sizeof(path));
	for (off = 0; off < FSIZE; off += BS)
		if (pwrite(fd, buf, BS, off) != BS) {
			perror("lockdep-gate: prefill");
			return -1;
		}
	if (fsync(fd)) {
		perror("lockdep-gate: fsync");
		return -1;
	}
	dfd = open(path, O_RDWR | O_DIRECT);
	if (dfd < 0) {
		perror("lockdep-gate: open O_DIRECT");
		return -1;
	}
	if (io_uring_queue_init(8, &ring, 0)) {
		fprintf(stderr, "lockdep-gate: io_uring_queue_init failed\n");
		return -1;
	}
	for (i = 0; i < ROUNDS; i++) {
		off = (off_t)(i * 7 % (FSIZE / BS)) * BS;
		if (pwrite(fd, buf, BS, off) != BS ||
		    t_uring_pwrite(&ring, fd, buf, BS, off + BS, 0) != BS ||
		    pread(dfd, buf, BS, off) != BS ||
		    pread(fd, buf, BS, off + 2 * BS) != BS ||
		    pwrite(dfd, buf, BS, off + 3 * BS) != BS) {
			fprintf(stderr, "lockdep-gate: I/O failed at %lld: %s\n",
				(long long)off, strerror(errno));
			return -1;
		}
	}
	io_uring_queue_exit(&ring);
	close(dfd);
	close(fd);
	free(buf);
	return 0;
}

/*
 * Is @name the gate's class? Lockdep names a class after the expression it
 * was initialised with, and adds "#N" to further classes of the same name;
 * other locks may start with the same text, so a substring is not
 * enough. XFS's gate is in its struct xfs_overwrite since patch 0044.
 */
static int is_gate(const char *name, const char *gate)
{
	const char *p = strstr(name, gate);

	return p && (p[strlen(gate)] == '\0' || p[strlen(gate)] == '#');
}

int main(void)
{
	const char *fs = t_test_fs();
	const char *gate = strncmp(fs, "xfs", 3) ? "ei->i_overwrite" :
						   "ow->gate";
	char line[1024], cls[1024] = "";
	int found = 0, out = 0, in = 0;
	char in_from[1024] = "", out_to[1024] = "";
	FILE *f;

	if (access("/proc/lockdep", R_OK)) {
		printf("lockdep-gate: no /proc/lockdep: not a lockdep kernel\n");
		return T_EXIT_SKIP;
	}
	if (exercise())
		return T_EXIT_FAIL;

	f = fopen("/proc/lockdep", "r");
	if (!f) {
		perror("lockdep-gate: /proc/lockdep");
		return T_EXIT_FAIL;
	}
	/*
	 * A class line starts with its key's address and ends with its name;
	 * the " -> [key] name" lines under it are the locks taken while it
	 * was held (its direct forward dependencies).
	 */
	while (fgets(line, sizeof(line), f)) {
		char *name;

		line[strcspn(line, "\n")] = 0;
		if (line[0] != ' ') {
			name = strrchr(line, ':');
			name = name ? name + 1 : line;
			name += strspn(name, " ");
			snprintf(cls, sizeof(cls), "%s", name);
			if (is_gate(cls, gate))
				found = 1;
			continue;
		}
		name = strchr(line, ']');
		if (strncmp(line, " -> ", 4) || !name)
			continue;
		name += 1 + strspn(name + 1, " ");
		if (is_gate(cls, gate) && !out) {
			out = 1;
			snprintf(out_to, sizeof(out_to), "%s", name);
		}
		if (is_gate(name, gate) && !in) {
			in = 1;
			snprintf(in_from, sizeof(in_from), "%s", cls);
		}
	}
	fclose(f);

	if (!found) {
		printf("lockdep-gate: %s: lockdep has no class %s: the gate is not a lockdep map\n",
		       fs, gate);
		return T_EXIT_FAIL;
	}
	printf("lockdep-gate: %s: class %s; held before it: %s; taken under it: %s\n",
	       fs, gate, in ? in_from : "(none)", out ? out_to : "(none)");
	if (!in || !out) {
		printf("lockdep-gate: %s: lockdep does not see the gate in the lock order\n",
		       fs);
		return T_EXIT_FAIL;
	}
	return T_EXIT_PASS;
}
