/* SPDX-License-Identifier: MIT */
/*
 * Description: io_uring overwrites of whole pages whose blocks are
 *		allocated but not in the page cache complete inline, without a
 *		punt to io-wq, on XFS and ext4, on XFS even while a buffered
 *		reader of another range holds the inode lock shared; so do
 *		overwrites of pages read back from the disk; and the data is
 *		right once written back and read from the disk again.
 *
 * A fio run on a file that fio drops from the cache when it opens it (its
 * default, invalidate=1) makes exactly such writes until the file is
 * cached again. On 6.12 each of them needs XFS's IOLOCK_EXCL; the series
 * writes them under IOLOCK_SHARED, creating the folios they cover whole
 * (patch 0040), as it writes cached ones. A reader stalled in its copy to
 * user memory (a userfaultfd page that the test supplies only at the end)
 * holds IOLOCK_SHARED throughout, so on a kernel that takes IOLOCK_EXCL
 * for these writes every one of them fails its trylock and punts, however
 * the threads are scheduled (the reader is let go as soon as a batch was
 * not inline: its punted writes wait for that lock in io-wq).
 *
 * The writes: one ring (SINGLE_ISSUER|DEFER_TASKRUN, so an inline write is
 * one whose CQE is posted during io_uring_submit()), batches of 8, 4 KiB
 * and 16 KiB writes in the first 4 MiB of an 8 MiB file, each to its own
 * 16 KiB slot, page aligned, in random order, so that every write finds
 * its pages uncached. The test checks that those pages are not cached
 * before it starts (mincore() of a mapping of the file), and fails if
 * they are. Every write must be inline and no punt may be traced.
 *
 * Then the paths that fail after creating folios, none of them judged
 * for punts, only for the data (see holes()): writes over punched holes,
 * an RWF_NOWAIT write into a hole read back at once, unaligned writes with
 * cached and with uncached end pages. The whole file is compared with
 * what was written, from the cache and, after fsync and dropping it, from
 * the disk: written bytes, holes as zeros, the rest as prefilled.
 *
 * On ext4 the same writes need buffer heads on folios that ext4's write
 * path did not create: on 6.12 every io_uring buffered write punts, and
 * a series without patches 0042-0043 takes ext4's exclusive path for a
 * folio without buffers (so punts it). A folio read from the disk has
 * none either (ext4_mpage_readpages() attaches none), which readback()
 * checks on both file systems; stale() checks that writes refused over
 * unwritten blocks leave nothing that reads the disk's old bytes. (ext4's
 * buffered reads take no lock, so the stalled reader holds nothing
 * there.) The test skips with a page or block size other than 4 KiB, or
 * without userfaultfd.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/magic.h>
#include <linux/userfaultfd.h>

#include "helpers.h"

#define FILE_SIZE	(8 * 1024 * 1024)
#define WRITE_AREA	(4 * 1024 * 1024)
#define SLOT		(16 * 1024)
#define SLOTS		(WRITE_AREA / SLOT)
#define PG		4096
#define QD		8
#define READER_OFF	(7 * 1024 * 1024)

static int fd;
static unsigned char *uffd_area;

/* The reader: one pread() into a page that faults until the test serves it. */
static void *reader(void *arg)
{
	ssize_t *ret = arg;

	*ret = pread(fd, uffd_area, PG, READER_OFF);
	if (*ret < 0)
		*ret = -errno;
	return NULL;
}

/*
 * The paths that fail after creating folios, on [4 MiB, 7 MiB), which the
 * first part leaves uncached: 16 KiB slots with an 8 KiB hole punched in
 * the middle, dropped from the cache, then written through io_uring
 * (punts allowed: these writes need an allocation) four ways: the whole
 * slot (hole and data: the mapping check refuses it after creating the
 * folios, and the IOLOCK_EXCL path fills them); a page inside the hole
 * with RWF_NOWAIT (it may be refused, and leave its new folio behind not
 * uptodate; then the hole must still read as zeros); an unaligned write
 * whose first and last pages were read into the cache first and whose
 * middle pages were not; and an unaligned write with both ends uncached.
 * @file is the expected content, updated here.
 */
static int holes(unsigned char *file)
{
	static unsigned char buf[SLOT];
	struct io_uring ring;
	unsigned int i;
	int ret, failed = 0;

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		fprintf(stderr, "holes: io_uring_queue_init: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < 64; i++) {
		off_t slot = WRITE_AREA + (off_t)i * SLOT;

		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      slot + PG, 2 * PG)) {
			perror("holes: punch");
			return 1;
		}
		memset(file + slot + PG, 0, 2 * PG);
	}
	/* No readahead: a read of one page must cache that page alone. */
	if (posix_fadvise(fd, WRITE_AREA, 3 * 1024 * 1024, POSIX_FADV_DONTNEED) ||
	    posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM)) {
		perror("holes: fadvise");
		return 1;
	}
	for (i = 0; i < 64; i++) {
		off_t slot = WRITE_AREA + (off_t)i * SLOT, off = slot;
		size_t len = SLOT;
		struct iovec iov;
		ssize_t r;

		switch (i % 4) {
		case 0:		/* the whole slot: data, hole, data */
			break;
		case 1:		/* one page of the hole, RWF_NOWAIT */
			off = slot + PG;
			len = PG;
			t_fill_pattern(buf, len, off, 3);
			iov.iov_base = buf;
			iov.iov_len = len;
			r = pwritev2(fd, &iov, 1, off, RWF_NOWAIT);
			if (r == (ssize_t)len)
				memcpy(file + off, buf, len);
			else if (r != -1 || errno != EAGAIN) {
				fprintf(stderr, "holes: RWF_NOWAIT write into a hole: %zd (%s)\n",
					r, r < 0 ? strerror(errno) : "short");
				failed = 1;
			}
			/* Read it back now, new folio or not. */
			if (pread(fd, buf, len, off) != (ssize_t)len ||
			    memcmp(buf, file + off, len)) {
				fprintf(stderr, "holes: page at %lld reads wrong after an RWF_NOWAIT write into the hole\n",
					(long long)off);
				failed = 1;
			}
			continue;
		case 2:		/* unaligned, both end pages cached first */
			off = slot + 1000;
			len = SLOT - 2000;
			if (pread(fd, buf, 1, slot) != 1 ||
			    pread(fd, buf, 1, slot + SLOT - 1) != 1) {
				perror("holes: pread");
				return 1;
			}
			break;
		case 3:		/* unaligned, nothing cached */
			off = slot + 1000;
			len = SLOT - 2000;
			break;
		}
		t_fill_pattern(buf, len, off, 3);
		ret = t_uring_pwrite(&ring, fd, buf, len, off, 0);
		if (ret != (int)len) {
			fprintf(stderr, "holes: write of %zu at %lld: %d\n",
				len, (long long)off, ret);
			failed = 1;
			continue;
		}
		memcpy(file + off, buf, len);
	}
	io_uring_queue_exit(&ring);
	posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL);
	printf("holes: 64 writes over punched holes and uncached pages%s\n",
	       failed ? ": FAILED" : "");
	return failed;
}

/*
 * Overwrites of pages read back from the disk: [0, WRITE_AREA) is written
 * back, dropped and read again (a read caches folios without buffer
 * heads on ext4), then 64 io_uring writes, each within one page, some
 * unaligned and smaller than a block, must all complete inline with no
 * punt. @file is the expected content, updated here.
 */
static int readback(unsigned char *file, unsigned int *seed)
{
	struct io_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	};
	static unsigned char buf[PG];
	unsigned int i, inline_writes = 0;
	struct io_uring ring;
	int ret, failed = 0;
	long punts, cached;
	unsigned char *area = malloc(WRITE_AREA);

	if (!area || fsync(fd) ||
	    posix_fadvise(fd, 0, WRITE_AREA, POSIX_FADV_DONTNEED) ||
	    pread(fd, area, WRITE_AREA, 0) != WRITE_AREA) {
		perror("readback: write back, drop, read");
		return 1;
	}
	free(area);
	cached = t_cached_pages(fd, 0, WRITE_AREA);
	if (cached != WRITE_AREA / PG) {
		fprintf(stderr, "readback: %ld of %d pages cached after reading them\n",
			cached, WRITE_AREA / PG);
		return 1;
	}
	ret = io_uring_queue_init_params(4, &ring, &p);
	if (ret) {
		fprintf(stderr, "readback: io_uring_queue_init_params: %s\n",
			strerror(-ret));
		return 1;
	}
	if (t_punts_start())
		return 1;
	for (i = 0; i < 64; i++) {
		off_t off = (off_t)(rand_r(seed) % (WRITE_AREA / PG)) * PG;
		size_t len = PG;
		struct io_uring_cqe *cqe;

		/* Every other write: unaligned, within the page. */
		if (i & 1) {
			off += 1 + rand_r(seed) % 2000;
			len = 1 + rand_r(seed) % 2000;
		}
		t_fill_pattern(buf, len, off, 4);
		io_uring_prep_write(io_uring_get_sqe(&ring), fd, buf, len, off);
		if (io_uring_submit(&ring) != 1) {
			fprintf(stderr, "readback: io_uring_submit failed\n");
			return 1;
		}
		if (io_uring_cq_ready(&ring))
			inline_writes++;
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (ret) {
			fprintf(stderr, "readback: io_uring_wait_cqe: %s\n",
				strerror(-ret));
			return 1;
		}
		if (cqe->res != (int)len) {
			fprintf(stderr, "readback: write of %zu at %lld: %d\n",
				len, (long long)off, cqe->res);
			failed = 1;
		} else {
			memcpy(file + off, buf, len);
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	punts = t_punts_read();
	t_punts_stop();
	io_uring_queue_exit(&ring);
	printf("readback: 64 writes of pages read from the disk, %u inline, %ld punted\n",
	       inline_writes, punts);
	if (punts || inline_writes != 64) {
		fprintf(stderr, "writes to pages read from the disk punted: %ld punts, %u of 64 writes not inline\n",
			punts, 64 - inline_writes);
		failed = 1;
	}
	return failed;
}

/*
 * Refused writes must leave no way to read what unwritten blocks hold on
 * the disk. A file of STALE bytes is written and synced, then
 * FALLOC_FL_ZERO_RANGE turns its blocks unwritten (ext4 keeps the old
 * data on the disk and only marks the extents; XFS gives it unwritten
 * blocks) and drops its cache. RWF_NOWAIT writes of whole pages from a
 * source that was never touched (no page present, so the overwrite path
 * refuses after creating and checking its folios: -EAGAIN) must leave the
 * file reading as zeros, before and after a blocking write of a few
 * bytes into one of those pages. On ext4 a folio that kept the buffer
 * heads of such a refused write (mapped, unwritten, not uptodate) would
 * be read from the disk: the old bytes.
 */
#define STALE		(256 * 1024)
static int stale(void)
{
	static unsigned char buf[STALE];
	unsigned char *src;
	struct iovec iov;
	int sfd, failed = 0, refused = 0;
	ssize_t r;
	off_t off;

	sfd = t_create_file("cold-overwrite-stale", 0, NULL, 0);
	t_fill_pattern(buf, STALE, 0, 7);
	if (pwrite(sfd, buf, STALE, 0) != STALE || fsync(sfd) ||
	    fallocate(sfd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0,
		      STALE) ||
	    posix_fadvise(sfd, 0, 0, POSIX_FADV_DONTNEED)) {
		perror("stale: set up");
		return 1;
	}
	src = mmap(NULL, SLOT * 4, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src == MAP_FAILED) {
		perror("stale: mmap");
		return 1;
	}
	for (off = 0; off < STALE; off += SLOT * 4) {
		iov.iov_base = src;
		iov.iov_len = SLOT * 4;
		r = pwritev2(sfd, &iov, 1, off, RWF_NOWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EOPNOTSUPP))
			refused++;
		else if (r != SLOT * 4) {
			fprintf(stderr, "stale: RWF_NOWAIT write at %lld: %zd (%s)\n",
				(long long)off, r, r < 0 ? strerror(errno) : "short");
			failed = 1;
		}
	}
	/* A few bytes into a page that a refused write may have created. */
	memset(buf, 0x5a, 100);
	if (pwrite(sfd, buf, 100, 5000) != 100) {
		perror("stale: pwrite");
		failed = 1;
	}
	if (pread(sfd, buf, STALE, 0) != STALE) {
		perror("stale: pread");
		return 1;
	}
	for (off = 0; off < STALE; off++)
		if (buf[off] != (off >= 5000 && off < 5100 ? 0x5a : 0))
			break;
	if (off < STALE) {
		fprintf(stderr, "stale data exposed: byte %lld reads 0x%02x after refused RWF_NOWAIT writes over unwritten blocks\n",
			(long long)off, buf[off]);
		failed = 1;
	}
	printf("stale: %d of %d RWF_NOWAIT writes from an untouched source refused, file reads %s\n",
	       refused, STALE / (SLOT * 4), off < STALE ? "OLD DATA" : "zeros");
	/*
	 * A write that went through wrote zeros (the source was never
	 * touched) and would pass the check above without any refusal to
	 * test: 6.12 refuses every one of them too (xfs -EAGAIN, ext4
	 * -EOPNOTSUPP).
	 */
	if (refused != STALE / (SLOT * 4)) {
		fprintf(stderr, "stale: only %d of %d RWF_NOWAIT writes from an untouched source refused: the refused writes this part checks did not all happen\n",
			refused, STALE / (SLOT * 4));
		failed = 1;
	}
	munmap(src, SLOT * 4);
	close(sfd);
	return failed;
}

/*
 * Supply the reader's page (generation 1, what it must read), once: a
 * write that was not inline may wait in io-wq for the lock the reader
 * holds.
 */
static int release_reader(int uffd, const unsigned char *file)
{
	static unsigned char src[PG];
	static int released;
	struct uffdio_copy copy = {
		.dst = (unsigned long)uffd_area,
		.src = (unsigned long)src,
		.len = PG,
	};

	if (released)
		return 0;
	released = 1;
	memcpy(src, file + READER_OFF, PG);
	if (ioctl(uffd, UFFDIO_COPY, &copy) && errno != EEXIST) {
		perror("UFFDIO_COPY");
		return -1;
	}
	return 0;
}

int main(void)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct io_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	};
	unsigned int order[SLOTS], seed, i, j, done = 0, inline_writes = 0;
	unsigned char *file, *wbuf, *img;
	struct io_uring ring;
	struct uffd_msg msg;
	struct pollfd pfd;
	struct statfs sfs;
	pthread_t rthr;
	ssize_t rret = 0;
	int uffd, ret, failed = 0;
	long punts, cached;
	off_t off;

	seed = t_seed("cold-overwrite");
	fd = t_create_file("cold-overwrite", 0, NULL, 0);
	if (fstatfs(fd, &sfs)) {
		perror("fstatfs");
		return T_EXIT_FAIL;
	}
	/* Its 4 KiB writes must cover whole pages and whole blocks. */
	if (sysconf(_SC_PAGESIZE) != PG || sfs.f_bsize > PG) {
		printf("skip: page size %ld, block size %ld: 4 KiB writes would not cover a whole page and block\n",
		       sysconf(_SC_PAGESIZE), (long)sfs.f_bsize);
		return T_EXIT_SKIP;
	}

	/* Generation 1 everywhere, on the disk, then out of the cache. */
	file = malloc(FILE_SIZE);
	wbuf = aligned_alloc(PG, QD * SLOT);
	if (!file || !wbuf) {
		fprintf(stderr, "out of memory\n");
		return T_EXIT_FAIL;
	}
	t_fill_pattern(file, FILE_SIZE, 0, 1);
	if (pwrite(fd, file, FILE_SIZE, 0) != FILE_SIZE || fsync(fd) ||
	    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) {
		perror("prefill");
		return T_EXIT_FAIL;
	}
	cached = t_cached_pages(fd, 0, WRITE_AREA);
	if (cached < 0) {
		perror("mincore of the write area");
		return T_EXIT_FAIL;
	}
	if (cached) {
		fprintf(stderr, "%ld pages of the write area still cached after POSIX_FADV_DONTNEED: the test would not write uncached pages\n",
			cached);
		return T_EXIT_FAIL;
	}

	/* The reader stalls in its copy, holding XFS's IOLOCK_SHARED. */
	uffd = t_uffd_open();
	if (uffd < 0) {
		printf("skip: userfaultfd: %s\n", strerror(-uffd));
		return T_EXIT_SKIP;
	}
	uffd_area = mmap(NULL, PG, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)uffd_area;
	reg.range.len = PG;
	if (uffd_area == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    pthread_create(&rthr, NULL, reader, &rret)) {
		perror("reader setup");
		return T_EXIT_FAIL;
	}
	pfd.fd = uffd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) != 1 ||
	    read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT) {
		fprintf(stderr, "the reader did not fault in its copy within 10 s\n");
		return T_EXIT_FAIL;
	}
	printf("reader stalled in its copy of [%d, +%d)\n", READER_OFF, PG);

	ret = io_uring_queue_init_params(QD, &ring, &p);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init_params: %s\n",
			strerror(-ret));
		return T_EXIT_FAIL;
	}
	for (i = 0; i < SLOTS; i++)
		order[i] = i;
	for (i = SLOTS - 1; i > 0; i--) {
		unsigned int k = rand_r(&seed) % (i + 1), t = order[i];

		order[i] = order[k];
		order[k] = t;
	}
	if (t_punts_start())
		return T_EXIT_FAIL;
	for (i = 0; i < SLOTS; i += QD) {
		unsigned int ready;

		for (j = 0; j < QD; j++) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
			unsigned int slot = order[i + j];
			size_t len = SLOT;

			off = (off_t)slot * SLOT;
			/* Half the slots: one page of the four, not the first. */
			if (rand_r(&seed) & 1) {
				off += (off_t)(1 + rand_r(&seed) % 3) * PG;
				len = PG;
			}
			t_fill_pattern(wbuf + j * SLOT, len, off, 2);
			t_fill_pattern(file + off, len, off, 2);
			io_uring_prep_write(sqe, fd, wbuf + j * SLOT, len, off);
			sqe->user_data = len;
		}
		ret = io_uring_submit(&ring);
		if (ret != QD) {
			fprintf(stderr, "io_uring_submit: %d\n", ret);
			return T_EXIT_FAIL;
		}
		/* Inline writes posted their CQEs during the submission. */
		ready = io_uring_cq_ready(&ring);
		inline_writes += ready;
		if (ready < QD && release_reader(uffd, file))
			return T_EXIT_FAIL;
		for (j = 0; j < QD; j++) {
			struct io_uring_cqe *cqe;

			ret = io_uring_wait_cqe(&ring, &cqe);
			if (ret) {
				fprintf(stderr, "io_uring_wait_cqe: %s\n",
					strerror(-ret));
				return T_EXIT_FAIL;
			}
			if (cqe->res != (int)cqe->user_data) {
				fprintf(stderr, "write of %llu bytes: %d\n",
					(unsigned long long)cqe->user_data,
					cqe->res);
				failed = 1;
			}
			io_uring_cqe_seen(&ring, cqe);
			done++;
		}
	}
	punts = t_punts_read();
	t_punts_stop();
	io_uring_queue_exit(&ring);

	if (release_reader(uffd, file))
		return T_EXIT_FAIL;
	pthread_join(rthr, NULL);
	if (rret != PG || t_check_pattern(uffd_area, PG, READER_OFF, 1) >= 0) {
		fprintf(stderr, "the reader's pread(): %zd, or wrong bytes\n",
			rret);
		failed = 1;
	}

	printf("%u writes of uncached pages, %u inline, %ld punted\n", done,
	       inline_writes, punts);
	if (punts < 0)
		return T_EXIT_FAIL;
	if (punts || inline_writes != done) {
		fprintf(stderr, "writes to uncached pages punted: %ld punts, %u of %u writes not inline\n",
			punts, done - inline_writes, done);
		failed = 1;
	}

	if (readback(file, &seed))
		failed = 1;
	if (stale())
		failed = 1;
	if (holes(file))
		failed = 1;

	/* What the writes left, from the cache and from the disk. */
	img = malloc(FILE_SIZE);

	for (j = 0; j < 2; j++) {
		if (j && (fsync(fd) ||
			  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))) {
			perror("fsync");
			return T_EXIT_FAIL;
		}
		if (!img || pread(fd, img, FILE_SIZE, 0) != FILE_SIZE) {
			perror("read back");
			return T_EXIT_FAIL;
		}
		for (off = 0; off < FILE_SIZE && img[off] == file[off]; off++)
			;
		if (off < FILE_SIZE) {
			fprintf(stderr, "%s: byte %lld differs from what was written\n",
				j ? "after fsync and dropping the cache" :
				    "from the cache",
				(long long)off);
			failed = 1;
		}
	}
	free(img);
	close(fd);
	return failed ? T_EXIT_FAIL : T_EXIT_PASS;
}
