/* SPDX-License-Identifier: MIT */
/*
 * Description: non-extending buffered overwrites that the inline overwrite
 *		path must leave alone, or handle without harm, because the
 *		data is not (all) in the page cache or something else is using
 *		the pages: partial and whole pages dropped with
 *		POSIX_FADV_DONTNEED, partly cached ranges, everything dropped
 *		with drop_caches, a MAP_SHARED mapping dirtied before, after
 *		and during the writes, O_DIRECT writes in flight on another
 *		range, and a user buffer whose pages userfaultfd supplies late.
 *		Each case runs on a fresh file through io_uring and pwritev2(),
 *		with RWF_NOWAIT (allowed: EAGAIN, the full length, or an honest
 *		short count; see t_write_outcome()) and without (must complete),
 *		and the file is compared with a shadow copy. Must pass on every
 *		kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <linux/userfaultfd.h>

#include "helpers.h"

#define FSIZE		(256 * 1024)
#define DIO_FSIZE	(1024 * 1024)
#define DIO_SPLIT	(512 * 1024)	/* buffered below, O_DIRECT above */
#define DIO_LEN		(16 * 1024)
#define PG		4096
#define UFFD_PAGES	4
#define UFFD_DELAY_US	100000

static struct io_uring ring;
static unsigned char *wbuf, *rbuf;

/* Fresh file of @size bytes of generation 1, fsynced and cached. */
static int new_file(char *path, size_t plen, struct t_shadow *sh, size_t size,
		    int *fdp)
{
	size_t off, n;
	int fd;

	t_shadow_init(sh, size);
	fd = t_create_file("fallback-cache", 0, path, plen);
	for (off = 0; off < size; off += n) {
		n = size - off < 65536 ? size - off : 65536;
		t_fill_pattern(wbuf, n, off, 1);
		if (pwrite(fd, wbuf, n, off) != (ssize_t)n) {
			perror("setup pwrite");
			close(fd);
			return 1;
		}
		t_shadow_put(sh, wbuf, n, off);
	}
	if (fsync(fd)) {
		perror("setup fsync");
		close(fd);
		return 1;
	}
	*fdp = fd;
	return 0;
}

static void done_file(const char *path, struct t_shadow *sh, int fd)
{
	close(fd);
	t_remove_file(path);
	t_shadow_free(sh);
}

/* Is the page holding @off in the page cache? 1, 0, or -1 (unknown). */
static int page_cached(int fd, off_t off)
{
	return t_cached_pages(fd, off & ~(off_t)(PG - 1), PG);
}

static int drop_caches(void)
{
	int fd;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, "3", 1) != 1) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/*
 * Cases on a FSIZE file whose pages are dropped, in part or in full,
 * before one overwrite of @len bytes at @off.
 */
enum drop {
	D_FADVISE,		/* POSIX_FADV_DONTNEED on the whole file */
	D_FADVISE_KEEP_FIRST,	/* same, then read the first page back */
	D_DROP_CACHES,		/* echo 3 > /proc/sys/vm/drop_caches */
};

static int uncached_write(enum t_wmode m, const char *what, struct t_tally *t,
			  enum drop drop, off_t off, size_t len)
{
	char path[PATH_MAX];
	struct t_shadow sh;
	int fd, ret;
	off_t p;

	if (new_file(path, sizeof(path), &sh, FSIZE, &fd))
		return 1;
	if (drop == D_DROP_CACHES) {
		ret = drop_caches();
		if (ret) {
			printf("note: cannot write /proc/sys/vm/drop_caches: %s\n",
			       strerror(-ret));
			ret = T_EXIT_SKIP;
			goto out;
		}
	} else {
		ret = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (ret) {
			fprintf(stderr, "%s: fadvise: %s\n", what, strerror(ret));
			ret = 1;
			goto out;
		}
	}
	/* Read back the first page only: no readahead of the rest. */
	if (drop == D_FADVISE_KEEP_FIRST &&
	    (posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) ||
	     pread(fd, rbuf, PG, off & ~(off_t)(PG - 1)) != PG)) {
		fprintf(stderr, "%s: pread: %s\n", what, strerror(errno));
		ret = 1;
		goto out;
	}
	/* Say so when the page cache did not do what the case wants. */
	for (p = off & ~(off_t)(PG - 1); p < off + (off_t)len; p += PG) {
		int want = drop == D_FADVISE_KEEP_FIRST &&
			   p == (off & ~(off_t)(PG - 1));

		if (page_cached(fd, p) != want)
			printf("note: %s: page at %lld is %scached\n", what,
			       (long long)p, want ? "not " : "");
	}
	t_fill_pattern(wbuf, len, off, 2 + m);
	ret = t_write_check(&ring, m, fd, &sh, what, wbuf, NULL, len, off, 0, t);
	if (!ret)
		ret = t_shadow_verify_stable(&sh, fd, what);
out:
	done_file(path, &sh, fd);
	return ret;
}

static int test_uncached_partial(enum t_wmode m, const char *what,
				 struct t_tally *t)
{
	return uncached_write(m, what, t, D_FADVISE, 10 * PG + 33, 100);
}

static int test_uncached_full(enum t_wmode m, const char *what,
			      struct t_tally *t)
{
	return uncached_write(m, what, t, D_FADVISE, 12 * PG, 2 * PG);
}

static int test_partly_cached(enum t_wmode m, const char *what,
			      struct t_tally *t)
{
	return uncached_write(m, what, t, D_FADVISE_KEEP_FIRST,
			      20 * PG + 2000, 10000);
}

static int test_drop_caches(enum t_wmode m, const char *what,
			    struct t_tally *t)
{
	return uncached_write(m, what, t, D_DROP_CACHES, 30 * PG + 100, 3 * PG);
}

/* Store generation @gen of [off, off + len) through the mapping. */
static void map_store(unsigned char *map, struct t_shadow *sh, off_t off,
		      size_t len, uint32_t gen)
{
	t_fill_pattern(map + off, len, off, gen);
	if (sh)
		t_shadow_put(sh, map + off, len, off);
}

static int map_verify(const unsigned char *map, const struct t_shadow *sh,
		      const char *what)
{
	size_t i;

	if (!memcmp(map, sh->data, sh->size))
		return 0;
	for (i = 0; map[i] == sh->data[i]; i++)
		;
	fprintf(stderr, "%s: the mapping differs at offset %zu: got %02x want %02x\n",
		what, i, map[i], sh->data[i]);
	return 1;
}

/*
 * Dirty a range through a MAP_SHARED mapping, overwrite across it with the
 * write under test, dirty it again through the mapping: both views must
 * show every store and the file must keep them after msync and fsync.
 */
static int test_mmap_dirty(enum t_wmode m, const char *what, struct t_tally *t)
{
	char path[PATH_MAX];
	struct t_shadow sh;
	unsigned char *map;
	int fd, ret = 1;

	if (new_file(path, sizeof(path), &sh, FSIZE, &fd))
		return 1;
	map = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		goto out;
	}
	map_store(map, &sh, 2 * PG + 100, 6000, 10);
	/* A store into a page the write only partly covers, too. */
	map_store(map, &sh, 5 * PG + 4000, 50, 11);
	t_fill_pattern(wbuf, 2 * PG, 2 * PG + 3000, 2 + m);
	if (t_write_check(&ring, m, fd, &sh, what, wbuf, NULL, 2 * PG,
			  2 * PG + 3000, 0, t) ||
	    map_verify(map, &sh, what))
		goto unmap;
	map_store(map, &sh, 2 * PG + 5000, 3000, 12);
	if (t_shadow_verify(&sh, fd, what) || map_verify(map, &sh, what))
		goto unmap;
	if (msync(map, FSIZE, MS_SYNC)) {
		perror("msync");
		goto unmap;
	}
	ret = 0;
unmap:
	munmap(map, FSIZE);
	if (!ret)
		ret = t_shadow_verify_stable(&sh, fd, what);
out:
	done_file(path, &sh, fd);
	return ret;
}

/*
 * A thread keeps storing through the mapping into the even 512-byte chunks
 * of the first 16 pages while the writes under test go to odd chunks of
 * the same pages: no store and no write may be lost.
 */
#define CHUNK		512
#define MC_PAGES	16
#define MC_WRITES	64

struct mapper {
	unsigned char *map;
	int stop;
	int passes;
};

static void *mapper_fn(void *arg)
{
	struct mapper *mp = arg;
	off_t off;

	while (!__atomic_load_n(&mp->stop, __ATOMIC_ACQUIRE)) {
		for (off = 0; off < MC_PAGES * PG; off += 2 * CHUNK)
			t_fill_pattern(mp->map + off, CHUNK, off, 30);
		__atomic_add_fetch(&mp->passes, 1, __ATOMIC_RELEASE);
		usleep(200);
	}
	return NULL;
}

static int test_mmap_concurrent(enum t_wmode m, const char *what,
				struct t_tally *t)
{
	char path[PATH_MAX];
	struct mapper mp = { 0 };
	struct t_shadow sh;
	pthread_t thr;
	off_t off;
	int fd, i, ret = 1;

	if (new_file(path, sizeof(path), &sh, FSIZE, &fd))
		return 1;
	mp.map = mmap(NULL, FSIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mp.map == MAP_FAILED) {
		perror("mmap");
		goto out;
	}
	if (pthread_create(&thr, NULL, mapper_fn, &mp)) {
		perror("pthread_create");
		munmap(mp.map, FSIZE);
		goto out;
	}
	while (!__atomic_load_n(&mp.passes, __ATOMIC_ACQUIRE))
		usleep(100);
	for (off = 0; off < MC_PAGES * PG; off += 2 * CHUNK) {
		t_fill_pattern(wbuf, CHUNK, off, 30);
		t_shadow_put(&sh, wbuf, CHUNK, off);
	}
	for (i = 0; i < MC_WRITES; i++) {
		off = (rand() % (MC_PAGES * PG / (2 * CHUNK))) * 2 * CHUNK + CHUNK;
		t_fill_pattern(wbuf, CHUNK, off, 100 + i);
		if (t_write_check(&ring, m, fd, &sh, what, wbuf, NULL, CHUNK,
				  off, 0, t))
			break;
	}
	__atomic_store_n(&mp.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	if (i == MC_WRITES && !map_verify(mp.map, &sh, what) &&
	    !t_shadow_verify(&sh, fd, what))
		ret = 0;
	munmap(mp.map, FSIZE);
	if (!ret)
		ret = t_shadow_verify_stable(&sh, fd, what);
out:
	done_file(path, &sh, fd);
	return ret;
}

/*
 * A thread writes [DIO_SPLIT, DIO_FSIZE) with O_DIRECT, over and over,
 * while the writes under test overwrite cached data below DIO_SPLIT.
 */
#define DIO_WRITES	48

struct dio {
	int fd;
	int stop;
	int writes;
	int error;
	uint32_t last_gen[(DIO_FSIZE - DIO_SPLIT) / DIO_LEN];
	unsigned char *buf;
};

static void *dio_fn(void *arg)
{
	struct dio *d = arg;
	unsigned int i, slot;
	uint32_t gen;
	off_t off;
	ssize_t ret;

	for (i = 0; !__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE); i++) {
		slot = i % (sizeof(d->last_gen) / sizeof(d->last_gen[0]));
		off = DIO_SPLIT + (off_t)slot * DIO_LEN;
		gen = 1000 + i;
		t_fill_pattern(d->buf, DIO_LEN, off, gen);
		ret = pwrite(d->fd, d->buf, DIO_LEN, off);
		if (ret != DIO_LEN) {
			d->error = ret < 0 ? errno : EIO;
			break;
		}
		d->last_gen[slot] = gen;
		__atomic_add_fetch(&d->writes, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static int verify_below(const struct t_shadow *sh, int fd, off_t end,
			const char *what)
{
	ssize_t ret;
	off_t i;

	ret = pread(fd, rbuf, end, 0);
	if (ret != end) {
		fprintf(stderr, "%s: pread: %zd\n", what, ret);
		return 1;
	}
	if (!memcmp(rbuf, sh->data, end))
		return 0;
	for (i = 0; rbuf[i] == sh->data[i]; i++)
		;
	fprintf(stderr, "%s: data mismatch at offset %lld: got %02x want %02x\n",
		what, (long long)i, rbuf[i], sh->data[i]);
	return 1;
}

static int test_odirect_inflight(enum t_wmode m, const char *what,
				 struct t_tally *t)
{
	char path[PATH_MAX];
	struct dio d = { 0 };
	struct t_shadow sh;
	unsigned int i, len, slot;
	int fd, ret = 1;
	pthread_t thr;
	ssize_t res, done;
	off_t off;

	if (new_file(path, sizeof(path), &sh, DIO_FSIZE, &fd))
		return 1;
	if (pread(fd, rbuf, DIO_SPLIT, 0) != DIO_SPLIT) {
		perror("pread");
		goto out;
	}
	d.fd = open(path, O_RDWR | O_DIRECT);
	if (d.fd < 0) {
		printf("note: O_DIRECT open: %s\n", strerror(errno));
		ret = errno == EINVAL ? T_EXIT_SKIP : 1;
		goto out;
	}
	if (posix_memalign((void **)&d.buf, PG, DIO_LEN)) {
		close(d.fd);
		goto out;
	}
	if (pthread_create(&thr, NULL, dio_fn, &d)) {
		perror("pthread_create");
		goto close_dio;
	}
	while (!__atomic_load_n(&d.writes, __ATOMIC_ACQUIRE) && !d.error)
		usleep(100);
	for (i = 0; i < DIO_WRITES; i++) {
		len = 1 + rand() % (16 * 1024);
		off = rand() % (DIO_SPLIT - len);
		t_fill_pattern(wbuf, len, off, 2 + m * 100 + i);
		res = t_wmode_write(&ring, m, fd, wbuf, len, off, 0);
		done = t_write_outcome(what, m, fd, res, len);
		if (done < 0)
			break;
		t_tally_add(t, res, len);
		t_shadow_put(&sh, wbuf, done, off);
		if (verify_below(&sh, fd, DIO_SPLIT, what)) {
			fprintf(stderr, "%s: after writing %u bytes at %lld: %zd\n",
				what, len, (long long)off, res);
			break;
		}
	}
	__atomic_store_n(&d.stop, 1, __ATOMIC_RELEASE);
	pthread_join(thr, NULL);
	if (d.error) {
		fprintf(stderr, "%s: O_DIRECT write: %s\n", what,
			strerror(d.error));
		goto close_dio;
	}
	if (i < DIO_WRITES)
		goto close_dio;
	for (slot = 0; slot < sizeof(d.last_gen) / sizeof(d.last_gen[0]); slot++) {
		if (!d.last_gen[slot])
			continue;
		off = DIO_SPLIT + (off_t)slot * DIO_LEN;
		t_fill_pattern(wbuf, DIO_LEN, off, d.last_gen[slot]);
		t_shadow_put(&sh, wbuf, DIO_LEN, off);
	}
	ret = t_shadow_verify(&sh, fd, what);
	if (!ret)
		ret = t_shadow_verify_stable(&sh, fd, what);
close_dio:
	free(d.buf);
	close(d.fd);
out:
	done_file(path, &sh, fd);
	return ret;
}

/*
 * The user buffer: UFFD_PAGES anonymous pages registered with userfaultfd
 * (missing mode), all of them or only the last two. A thread supplies a
 * missing page UFFD_DELAY_US after the fault, so the kernel's copy from
 * the buffer faults and waits.
 */
static int uffd_write(enum t_wmode m, const char *what, struct t_tally *t,
		      int resident)
{
	const size_t len = UFFD_PAGES * PG;
	const off_t off = 5000;
	struct t_uffd_handler h = { .delay_us = UFFD_DELAY_US };
	struct uffdio_register reg;
	char path[PATH_MAX];
	struct t_shadow sh;
	unsigned char *src;
	pthread_t thr;
	int fd, ret = 1;
	ssize_t res;

	if (new_file(path, sizeof(path), &sh, FSIZE, &fd))
		return 1;
	src = malloc(len);
	if (!src)
		goto out;
	t_fill_pattern(src, len, off, 2 + m);
	h.uffd = t_uffd_open();
	if (h.uffd < 0) {
		printf("note: userfaultfd: %s\n", strerror(-h.uffd));
		ret = T_EXIT_SKIP;
		goto free_src;
	}
	h.stop_fd = eventfd(0, EFD_CLOEXEC);
	h.area = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h.stop_fd < 0 || h.area == MAP_FAILED) {
		perror("eventfd/mmap");
		goto close_uffd;
	}
	h.src = src;
	memcpy(h.area, src, resident * PG);
	reg.range.start = (unsigned long)h.area + resident * PG;
	reg.range.len = len - resident * PG;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(h.uffd, UFFDIO_REGISTER, &reg)) {
		printf("note: UFFDIO_REGISTER: %s\n", strerror(errno));
		ret = T_EXIT_SKIP;
		goto unmap;
	}
	if (pthread_create(&thr, NULL, t_uffd_serve, &h)) {
		perror("pthread_create");
		goto unmap;
	}
	res = t_wmode_write(&ring, m, fd, h.area, len, off, 0);
	eventfd_write(h.stop_fd, 1);
	pthread_join(thr, NULL);
	if (h.error) {
		fprintf(stderr, "%s: fault handler: %s\n", what,
			strerror(h.error));
		goto unmap;
	}
	ret = t_check_written(m, fd, &sh, what, src, len, off, 0, res, t);
	if (!ret && res == (ssize_t)len && !h.served && resident < UFFD_PAGES)
		printf("note: %s: full write without a userfault\n", what);
	if (!ret)
		ret = t_shadow_verify_stable(&sh, fd, what);
unmap:
	if (h.area != MAP_FAILED)
		munmap(h.area, len);
close_uffd:
	if (h.stop_fd >= 0)
		close(h.stop_fd);
	close(h.uffd);
free_src:
	free(src);
out:
	done_file(path, &sh, fd);
	return ret;
}

static int test_uffd_all(enum t_wmode m, const char *what, struct t_tally *t)
{
	return uffd_write(m, what, t, 0);
}

static int test_uffd_tail(enum t_wmode m, const char *what, struct t_tally *t)
{
	return uffd_write(m, what, t, 2);
}

struct tcase {
	const char *name;
	int (*fn)(enum t_wmode m, const char *what, struct t_tally *t);
};

static const struct tcase cases[] = {
	{ "uncached-partial-page",	test_uncached_partial },
	{ "uncached-full-pages",	test_uncached_full },
	{ "partly-cached",		test_partly_cached },
	{ "drop-caches",		test_drop_caches },
	{ "mmap-dirty",			test_mmap_dirty },
	{ "mmap-concurrent",		test_mmap_concurrent },
	{ "odirect-inflight",		test_odirect_inflight },
	{ "uffd-all-missing",		test_uffd_all },
	{ "uffd-tail-missing",		test_uffd_tail },
};

/* Case @arg in mode @m, for t_run_modes(). */
static int run_mode(const void *arg, enum t_wmode m, const char *what,
		    struct t_tally *t)
{
	const struct tcase *c = arg;

	return c->fn(m, what, t);
}

int main(void)
{
	struct t_cases cs = { .test = "fallback-cache" };
	unsigned int i;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(t_seed("fallback-cache"));
	ret = io_uring_queue_init(8, &ring, 0);
	if (ret) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-ret));
		return ret == -ENOSYS ? T_EXIT_SKIP : T_EXIT_FAIL;
	}
	wbuf = malloc(DIO_FSIZE);
	rbuf = malloc(DIO_FSIZE);
	if (!wbuf || !rbuf)
		return T_EXIT_FAIL;
	printf("fallback-cache: fs %s, dir %s\n", t_test_fs(), t_test_dir());

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		t_cases_add(&cs, t_run_modes(cases[i].name, "", run_mode,
					     &cases[i]));
	io_uring_queue_exit(&ring);
	return t_cases_exit(&cs);
}
