/* SPDX-License-Identifier: MIT */
/*
 * Description: a write whose source is mapped from the file it writes
 *		must be serialisable against another write of the pages it
 *		reads. Each round, two threads start together: the "big"
 *		writer overwrites the source pages with a new byte G, and the
 *		"copy" writer writes from a shared mapping of the source pages
 *		(pages 0-7) to pages 8 and up of the same file.
 *
 *		Round kinds, in turn:
 *		- cover: the big write covers the source and the copy's
 *		  destination (pages 0-15, 64 KiB), the copy is 1 KiB. In
 *		  either order the destination ends as G: written last by the
 *		  big write, or copied from the source after the big write
 *		  filled it. A source read before the big write and written
 *		  after it (stale), or read halfway through it (torn), leaves
 *		  something else.
 *		- source-small, source-large: the big write covers the source
 *		  pages only (pages 0-7, 32 KiB), the copy is 1 KiB (read
 *		  into a buffer by the series) or 32 KiB (pinned). Either
 *		  order leaves the destination uniform, G or the source's
 *		  byte before the round; a source read while the big write is
 *		  copying leaves it mixed. The two writes share no folio, so
 *		  only the inode lock (6.12, and the series' exclusive path
 *		  for a source in the file it writes) orders them.
 *		- read (XFS only): instead of the copy, a 32 KiB read of pages
 *		  8-15 into the shared mapping of pages 0-7, against the big
 *		  write of pages 0-7. Either order leaves pages 0-7 all G or
 *		  all what pages 8-15 held; stores of the read mixed with the
 *		  write's copy leave something else. 6.12's XFS orders a
 *		  buffered read against a buffered write (IOLOCK_SHARED
 *		  against IOLOCK_EXCL); ext4 never did, so ext4 skips them.
 *		The copy (or read) goes through pwrite() (pread()) and
 *		io_uring (inline under IOCB_NOWAIT, or punted) in alternate
 *		rounds of each kind.
 *		The file is written 4 KiB at a time, so that XFS caches it
 *		in small folios and the two writes meet on no large one.
 *
 *		Not a feature test: 6.12 must pass it too. The series sends
 *		a write whose source is in the file it writes to the
 *		exclusive path (patch 32), and sends a read into memory that
 *		may map the file it reads into XFS's overwrite gate (patch
 *		33); kernel/broken/0011 takes such a write on the shared path,
 *		as the series did before, and fails the source rounds. Before
 *		patch 32 the cover rounds failed when a buffered source was
 *		read before the folio locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include "helpers.h"

#define PG		4096
#define NPAGES		16
#define FSIZE		(NPAGES * PG)
#define SRC_PAGES	8
#define DST		(SRC_PAGES * PG)

enum { COVER, SOURCE_SMALL, SOURCE_LARGE, READ, NR_KINDS };

static const char *const kind_name[NR_KINDS] = {
	"cover", "source-small", "source-large", "read",
};
static const size_t copy_len[NR_KINDS] = { 1024, 1024, SRC_PAGES * PG,
					   SRC_PAGES * PG };
static const size_t big_len[NR_KINDS] = { FSIZE, SRC_PAGES * PG,
					   SRC_PAGES * PG, SRC_PAGES * PG };

static int fd;
static unsigned char big[FSIZE] __attribute__((aligned(PG)));
static atomic_uint go, done;
static atomic_int stop;
static atomic_size_t big_want;
static ssize_t big_ret;

/* Spin a little, so that either writer may start first. */
static void jitter(uint64_t *rnd)
{
	unsigned int n = t_rnd_next(rnd) % 2000;

	while (n--)
		__asm__ __volatile__("" ::: "memory");
}

static void *big_writer(void *arg)
{
	uint64_t rnd = (uintptr_t)arg;
	unsigned int r;

	for (r = 1; ; r++) {
		while (atomic_load(&go) < r && !atomic_load(&stop))
			;
		if (atomic_load(&go) < r)
			break;
		jitter(&rnd);
		big_ret = pwrite(fd, big, atomic_load(&big_want), 0);
		atomic_store(&done, r);
	}
	return NULL;
}

int main(void)
{
	unsigned int seed = t_seed("same-file-source");
	unsigned int secs = t_env_uint("TEST_SAMEFILE_SECONDS", 4, 1, 3600);
	static unsigned char check[SRC_PAGES * PG], before[FSIZE];
	unsigned int rounds[NR_KINDS] = { 0 }, bad[NR_KINDS] = { 0 };
	unsigned int r, k, nbad = 0, copy_err = 0;
	struct statfs sfs;
	int nr_kinds;
	unsigned char *map;
	struct io_uring ring;
	uint64_t rnd = seed | 1, t_end;
	pthread_t th;
	char path[256];
	int ret;

	fd = t_create_file("same-file-source", O_RDWR, path, sizeof(path));
	if (fd < 0)
		return 1;
	unlink(path);
	/*
	 * The read rounds need XFS (patch 33), on either timestamp mode: ask
	 * the file system, not TEST_FS, which names the mount too.
	 */
	if (fstatfs(fd, &sfs)) {
		perror("fstatfs");
		return 1;
	}
	nr_kinds = sfs.f_type == XFS_SUPER_MAGIC ? NR_KINDS : READ;
	/* 4 KiB at a time: small folios on XFS too. */
	memset(big, 0, sizeof(big));
	for (k = 0; k < NPAGES; k++) {
		if (pwrite(fd, big, PG, (off_t)k * PG) != PG) {
			perror("prefill");
			return 1;
		}
	}
	if (fsync(fd) || pread(fd, big, FSIZE, 0) != FSIZE) {
		perror("prefill");
		return 1;
	}
	/* The big pwrite() takes the series' shared path from round 1 on. */
	if (t_note_nowait_use(fd))
		return 1;
	map = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}

	/* As many rounds as fit in the time asked for. */
	t_end = t_now_ns() + (uint64_t)secs * 1000000000ull;
	printf("same-file-source: fs %s, %u s, seed %u%s\n", t_test_fs(), secs,
	       seed, nr_kinds < NR_KINDS ? " (no read rounds: not XFS)" : "");

	ret = pthread_create(&th, NULL, big_writer, (void *)(uintptr_t)(seed | 2));
	if (ret) {
		fprintf(stderr, "pthread_create: %s\n", strerror(ret));
		return 1;
	}
	for (r = 1; t_now_ns() < t_end; r++) {
		unsigned char g = 1 + r % 251;
		int kind = (r / 2) % nr_kinds, uring = r & 1;
		size_t len = copy_len[kind], i;
		const unsigned char *old;
		off_t at = DST;
		ssize_t n;

		/* What the pages held before the round. */
		if (pread(fd, before, FSIZE, 0) != FSIZE) {
			perror("pread");
			return 1;
		}
		memset(big, g, big_len[kind]);
		atomic_store(&big_want, big_len[kind]);
		atomic_store(&go, r);
		jitter(&rnd);
		if (kind == READ && uring)
			n = t_uring_pread(&ring, fd, map, len, DST);
		else if (kind == READ)
			n = pread(fd, map, len, DST);
		else if (uring)
			n = t_uring_pwrite(&ring, fd, map, len, DST, 0);
		else
			n = pwrite(fd, map, len, DST);
		if (n != (ssize_t)len)
			copy_err++;
		while (atomic_load(&done) < r)
			;
		if (big_ret != (ssize_t)big_len[kind]) {
			fprintf(stderr, "round %u: the %zu KiB write returned %zd\n",
				r, big_len[kind] / 1024, big_ret);
			return 1;
		}
		/*
		 * cover: G. source: G, or the source before the round. read:
		 * pages 0-7 are G, or what pages 8-15 held.
		 */
		old = before;
		if (kind == READ) {
			at = 0;
			old = before + DST;
		}
		if (pread(fd, check, len, at) != (ssize_t)len) {
			perror("pread");
			return 1;
		}
		rounds[kind]++;
		for (i = 0; i < len && check[i] == g; i++)
			;
		if (i < len && kind != COVER)
			for (i = 0; i < len && check[i] == old[i]; i++)
				;
		if (i == len)
			continue;
		if (nbad < 5)
			printf("round %u (%s, %s): byte %zu of %zu is %u, the "
			       "big write wrote %u, before the round it was %u "
			       "(byte 0 %u, last %u): no order of the two gives "
			       "this\n", r, kind_name[kind],
			       uring ? "io_uring" : "syscall", i, len, check[i],
			       g, old[i], check[0], check[len - 1]);
		bad[kind]++;
		nbad++;
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	for (k = 0; k < (unsigned int)nr_kinds; k++)
		printf("same-file-source: %s: %u rounds, %u bad\n",
		       kind_name[k], rounds[k], bad[k]);
	if (copy_err) {
		printf("%u copies or reads did not move all their bytes\n", copy_err);
		return 1;
	}
	if (nbad) {
		printf("%u rounds not serialisable\n", nbad);
		return 1;
	}
	return 0;
}
