/* SPDX-License-Identifier: MIT */
/*
 * Description: a NOWAIT write that fails must leave no trace. RWF_NOWAIT
 *		overwrites (pwritev2() and io_uring) are issued where they may
 *		or must fail: next to an O_DIRECT write that is in flight
 *		(stalled in a userfaultfd fault on its buffer), over a range
 *		whose middle page was dropped from the page cache, and over a
 *		range that is not cached at all. Before each write the clock
 *		has ticked since the file's c/mtime were set, so a write that
 *		updated them would change them. Every write that returns an
 *		error must have left mtime, ctime and the data as they were:
 *		an RWF_NOWAIT caller that does not retry must not see a
 *		modification that never happened. (The change cookie is not
 *		visible to userspace on 6.12.) The O_DIRECT case must fail at
 *		least one write on every kernel. Must pass on every kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/userfaultfd.h>

#include "helpers.h"

#define FSIZE		(1024 * 1024)
#define PG		4096
#define DIO_OFF		0		/* the stalled O_DIRECT write */
#define WOFF		(512 * 1024)	/* the NOWAIT writes */
#define WLEN		(3 * PG)
#define ROUNDS		8
#define FAULT_WAIT_MS	20000

static struct io_uring ring;
static unsigned char *shadow, *buf, *wbuf;
static uint32_t gen = 1;

struct tally {
	int failed;	/* writes that returned an error: judged */
	int traces;	/* of those, ones that changed something */
	int written;	/* writes that completed: not judged */
};

/* Fresh file of generation 1 in @shadow, fsynced and cached; fd or -1. */
static int new_file(char *path, size_t plen)
{
	int fd = t_create_file("nowait-no-trace", 0, path, plen);
	off_t off;

	t_fill_pattern(shadow, FSIZE, 0, 1);
	/*
	 * 4 KiB at a time, so that XFS caches the file in small folios: a
	 * page dropped below is then dropped, not kept inside a large folio.
	 */
	for (off = 0; off < FSIZE; off += PG) {
		if (pwrite(fd, shadow + off, PG, off) != PG) {
			perror("setup");
			close(fd);
			return -1;
		}
	}
	if (fsync(fd) || pread(fd, buf, FSIZE, 0) != FSIZE) {
		perror("setup");
		close(fd);
		return -1;
	}
	return fd;
}

static int ts_equal(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/*
 * One RWF_NOWAIT write of [woff, woff + WLEN) in mode @m with stale
 * timestamps; judge it if it failed. Returns -1 on a setup error.
 */
static int nowait_write(int fd, off_t woff, enum t_wmode m, const char *what,
			struct tally *t)
{
	struct stat before, after;
	ssize_t ret, n;

	/* The last write set c/mtime; let the clock move past them. */
	t_next_tick();
	if (fstat(fd, &before))
		return -1;
	gen++;
	t_fill_pattern(wbuf, WLEN, woff, gen);
	ret = t_wmode_write(&ring, m, fd, wbuf, WLEN, woff, 0);
	if (fstat(fd, &after))
		return -1;
	if (ret == WLEN) {
		memcpy(shadow + woff, wbuf, WLEN);
		t->written++;
		return 0;
	}
	if (ret >= 0) {
		/* A short NOWAIT write: honest, but not what is judged here. */
		memcpy(shadow + woff, wbuf, ret);
		t->written++;
		return 0;
	}
	t->failed++;
	n = pread(fd, buf, WLEN, woff);
	if (!ts_equal(&before.st_mtim, &after.st_mtim) ||
	    !ts_equal(&before.st_ctim, &after.st_ctim)) {
		printf("%s, %s: the write failed (%s) but changed c/mtime (mtime %lld.%09ld -> %lld.%09ld)\n",
		       what, t_wmode_name(m), t_errno_name(-ret),
		       (long long)before.st_mtim.tv_sec, before.st_mtim.tv_nsec,
		       (long long)after.st_mtim.tv_sec, after.st_mtim.tv_nsec);
		t->traces++;
	} else if (n != WLEN || memcmp(buf, shadow + woff, WLEN)) {
		printf("%s, %s: the write failed (%s) but changed the data\n",
		       what, t_wmode_name(m), t_errno_name(-ret));
		t->traces++;
	}
	return 0;
}

/* A blocking write that makes c/mtime current again. */
static int touch(int fd)
{
	t_fill_pattern(buf, PG, FSIZE - PG, 1);
	return pwrite(fd, buf, PG, FSIZE - PG) == PG ? 0 : -1;
}

static int report(const char *what, const struct tally *t, int must_fail)
{
	printf("%s: %d writes failed (judged), %d left a trace, %d completed\n",
	       what, t->failed, t->traces, t->written);
	if (t->traces)
		return 1;
	if (must_fail && !t->failed) {
		printf("%s: no write failed, nothing was judged\n", what);
		return 1;
	}
	return 0;
}

struct dio {
	int fd;
	void *src;
	ssize_t ret;
};

static void *dio_fn(void *arg)
{
	struct dio *d = arg;

	d->ret = pwrite(d->fd, d->src, PG, DIO_OFF);
	if (d->ret < 0)
		d->ret = -errno;
	return NULL;
}

/* NOWAIT writes while an O_DIRECT write of another range is in flight. */
static int case_dio(void)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd pfd;
	struct uffd_msg msg;
	struct uffdio_copy copy = { 0 };
	struct tally t = { 0 };
	struct dio d = { .fd = -1 };
	char path[PATH_MAX];
	pthread_t thr;
	void *area, *src;
	int fd, uffd, i, m, ret = 1;

	fd = new_file(path, sizeof(path));
	if (fd < 0)
		return 1;
	d.fd = open(path, O_WRONLY | O_DIRECT);
	uffd = t_uffd_open();
	area = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)area;
	reg.range.len = PG;
	if (d.fd < 0 || uffd < 0 || area == MAP_FAILED ||
	    ioctl(uffd, UFFDIO_REGISTER, &reg) ||
	    posix_memalign(&src, PG, PG)) {
		fprintf(stderr, "O_DIRECT case: setup: %s\n",
			uffd < 0 ? strerror(-uffd) : strerror(errno));
		return 1;
	}
	d.src = area;
	if (pthread_create(&thr, NULL, dio_fn, &d)) {
		fprintf(stderr, "O_DIRECT case: pthread_create\n");
		return 1;
	}
	pfd.fd = uffd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, FAULT_WAIT_MS) != 1 ||
	    read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT) {
		fprintf(stderr, "O_DIRECT case: the direct write did not fault on its buffer\n");
	} else {
		/* The direct write is in flight: i_dio_count is raised. */
		for (i = 0; i < ROUNDS; i++)
			for (m = T_URING_NOWAIT; m <= T_PWRITEV2_NOWAIT; m++)
				if (nowait_write(fd, WOFF, m, "O_DIRECT write in flight", &t))
					goto serve;
		ret = report("O_DIRECT write in flight", &t, 1);
	}
serve:
	t_fill_pattern(src, PG, DIO_OFF, 1);
	copy.dst = (unsigned long)area;
	copy.src = (unsigned long)src;
	copy.len = PG;
	if (ioctl(uffd, UFFDIO_COPY, &copy) && errno != EEXIST) {
		fprintf(stderr, "UFFDIO_COPY: %s\n", strerror(errno));
		exit(T_EXIT_FAIL);
	}
	pthread_join(thr, NULL);
	if (d.ret != PG) {
		fprintf(stderr, "O_DIRECT case: the direct write returned %zd\n",
			d.ret);
		ret = 1;
	}
	if (pread(fd, buf, FSIZE, 0) != FSIZE || memcmp(buf, shadow, FSIZE)) {
		printf("O_DIRECT case: the file differs from what was written\n");
		ret = 1;
	}
	munmap(area, PG);
	close(uffd);
	close(d.fd);
	close(fd);
	free(src);
	t_remove_file(path);
	return ret;
}

/*
 * NOWAIT writes over a range with its middle page (@how 0), every page
 * (1) or its first page, which the write covers in part (2), dropped from
 * the page cache before each write. (The first: where a later page is the
 * one that needs a read, 6.12's path writes the pages before it and
 * returns a short count, which is not what is judged here.) A write that
 * covers its uncached pages whole may create them and complete (patches
 * 40-43), so only the partial case must see a write fail: it needs a
 * read, which no NOWAIT write does (6.12 refuses it too: XFS at the read,
 * ext4 at once).
 */
static int case_uncached(int how)
{
	static const char *const name[] = {
		"middle page uncached", "uncached range",
		"first page uncached, written in part",
	};
	const char *what = name[how];
	struct tally t = { 0 };
	char path[PATH_MAX];
	off_t drop = how == 0 ? WOFF + PG : WOFF;
	size_t dlen = how == 1 ? WLEN : PG;
	off_t woff = how == 2 ? WOFF + 100 : WOFF;
	int fd, i, m, ret;

	fd = new_file(path, sizeof(path));
	if (fd < 0)
		return 1;
	for (i = 0; i < ROUNDS; i++)
		for (m = T_URING_NOWAIT; m <= T_PWRITEV2_NOWAIT; m++) {
			if (touch(fd) || fdatasync(fd) ||
			    posix_fadvise(fd, drop, dlen, POSIX_FADV_DONTNEED)) {
				perror(what);
				close(fd);
				return 1;
			}
			if (t_cached_pages(fd, drop, dlen)) {
				printf("%s: the dropped pages are still cached: nothing to judge\n",
				       what);
				close(fd);
				return 1;
			}
			if (nowait_write(fd, woff, m, what, &t)) {
				close(fd);
				return 1;
			}
		}
	ret = report(what, &t, how == 2);
	if (pread(fd, buf, FSIZE, 0) != FSIZE ||
	    memcmp(buf + woff, shadow + woff, WLEN)) {
		printf("%s: the file differs from what was written\n", what);
		ret = 1;
	}
	close(fd);
	t_remove_file(path);
	return ret;
}

int main(void)
{
	struct t_cases cs = { .test = "nowait-no-trace" };
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return T_EXIT_FAIL;
	}
	shadow = malloc(FSIZE);
	buf = malloc(FSIZE);
	wbuf = malloc(WLEN);
	if (!shadow || !buf || !wbuf)
		return T_EXIT_FAIL;
	printf("nowait-no-trace: fs %s, dir %s\n", t_test_fs(), t_test_dir());
	t_cases_add(&cs, case_dio());
	t_cases_add(&cs, case_uncached(0));
	t_cases_add(&cs, case_uncached(1));
	t_cases_add(&cs, case_uncached(2));
	io_uring_queue_exit(&ring);
	return t_cases_exit(&cs);
}
