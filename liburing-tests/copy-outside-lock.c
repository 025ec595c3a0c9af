/* SPDX-License-Identifier: MIT */
/*
 * Description: a writer whose source buffer faults slowly must not keep
 *		other users of the file waiting. A 4 KiB overwrite of a cached
 *		file, by pwrite() or by io_uring, copies from a page behind a
 *		userfaultfd that the test serves only after checking: while
 *		the writer sleeps in that fault, a buffered read and an
 *		O_DIRECT read of another range of the same file must complete.
 *		Then the fault is served, and the write and the reads must
 *		have transferred the right bytes.
 *
 *		A read that has not completed after READ_WAIT_MS is blocked
 *		behind the writer (it needs milliseconds otherwise); this is
 *		not a speed test. On 6.12 a buffered writer holds the inode
 *		lock exclusive across its copy (XFS IOLOCK_EXCL, ext4
 *		i_rwsem), which O_DIRECT reads on both and buffered reads on
 *		XFS wait for, so this is a feature test expected to fail there.
 *		The series faults the source in before it takes any lock of
 *		the file and copies from pinned pages; it does so for blocking
 *		writers of a file that IOCB_NOWAIT writers use (a file before
 *		its first NOWAIT write keeps 6.12's path and its stall), so
 *		the file is given one RWF_NOWAIT write first. A last case
 *		checks that: a pwrite() to a file without NOWAIT users must
 *		keep the O_DIRECT read waiting, as on 6.12.
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
#include <linux/userfaultfd.h>

#include "helpers.h"

#define FSIZE		(1024 * 1024)
#define PG		4096
#define WOFF		0		/* the stalled write */
#define ROFF		(512 * 1024)	/* the reads: another range */
#define FAULT_WAIT_MS	20000
#define READ_WAIT_MS	5000

enum writer { W_PWRITE, W_URING, W_PWRITE_ONLY };
enum reader { R_BUFFERED, R_DIRECT };

static const char *const writer_name[] = {
	"pwrite", "io_uring", "pwrite (file without NOWAIT users)",
};
static const char *const reader_name[] = { "buffered read", "O_DIRECT read" };

struct wctx {
	enum writer kind;
	int fd;
	void *src;
	ssize_t ret;
};

struct rctx {
	int fd;
	void *buf;
	ssize_t ret;
	int err;
	int done;
};

static void *writer_fn(void *arg)
{
	struct wctx *w = arg;
	struct io_uring ring;
	int ret;

	if (w->kind != W_URING) {
		w->ret = pwrite(w->fd, w->src, PG, WOFF);
		if (w->ret < 0)
			w->ret = -errno;
		return NULL;
	}
	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		w->ret = ret;
		return NULL;
	}
	w->ret = t_uring_pwrite(&ring, w->fd, w->src, PG, WOFF, 0);
	io_uring_queue_exit(&ring);
	return NULL;
}

static void *reader_fn(void *arg)
{
	struct rctx *r = arg;

	r->ret = pread(r->fd, r->buf, PG, ROFF);
	r->err = errno;
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Wait up to @ms for a page fault on @uffd; its address, or 0. */
static unsigned long wait_fault(int uffd, int ms)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	for (;;) {
		if (poll(&pfd, 1, ms) <= 0)
			return 0;
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg)) {
			if (errno == EAGAIN)
				continue;
			return 0;
		}
		if (msg.event == UFFD_EVENT_PAGEFAULT)
			return msg.arg.pagefault.address;
	}
}

/*
 * Fresh 1 MiB file of generation 1, fsynced and cached, and unless
 * @pwrite_only given one RWF_NOWAIT write; its fd or -1.
 */
static int new_file(char *path, size_t plen, void *buf, int pwrite_only)
{
	size_t off;
	int fd;

	fd = t_create_file("copy-outside-lock", 0, path, plen);
	if (fd < 0)
		return -1;
	for (off = 0; off < FSIZE; off += PG) {
		t_fill_pattern(buf, PG, off, 1);
		if (pwrite(fd, buf, PG, off) != PG) {
			perror("setup pwrite");
			goto fail;
		}
	}
	if (fsync(fd)) {
		perror("setup fsync");
		goto fail;
	}
	for (off = 0; off < FSIZE; off += PG)
		if (pread(fd, buf, PG, off) != PG) {
			perror("setup pread");
			goto fail;
		}
	/* One overwrite first, so that the stalled one is not the first. */
	t_fill_pattern(buf, PG, WOFF, 1);
	if (pwrite(fd, buf, PG, WOFF) != PG) {
		perror("setup overwrite");
		goto fail;
	}
	/*
	 * A file that NOWAIT writers use: before its first NOWAIT write the
	 * series takes a blocking writer through 6.12's exclusive path.
	 */
	if (!pwrite_only && t_note_nowait_use(fd))
		goto fail;
	return fd;
fail:
	close(fd);
	t_remove_file(path);
	return -1;
}

static int run_case(enum writer wk, enum reader rk)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_copy copy = { 0 };
	struct wctx w = { .kind = wk };
	struct rctx r = { .fd = -1 };
	pthread_t wthr, rthr;
	int uffd = -1, fd, ret = 1, blocked = 0, i;
	void *area = MAP_FAILED, *setup, *data;
	char path[PATH_MAX];
	char what[64];

	snprintf(what, sizeof(what), "%s writer, %s", writer_name[wk],
		 reader_name[rk]);
	if (posix_memalign(&setup, PG, PG) || posix_memalign(&data, PG, PG) ||
	    posix_memalign(&r.buf, PG, PG)) {
		fprintf(stderr, "%s: out of memory\n", what);
		return 1;
	}
	fd = new_file(path, sizeof(path), setup, wk == W_PWRITE_ONLY);
	if (fd < 0)
		goto out_free;
	r.fd = open(path, O_RDONLY | (rk == R_DIRECT ? O_DIRECT : 0));
	if (r.fd < 0) {
		fprintf(stderr, "%s: open: %s\n", what, strerror(errno));
		goto out_close;
	}
	uffd = t_uffd_open();
	if (uffd < 0) {
		fprintf(stderr, "%s: userfaultfd: %s\n", what, strerror(-uffd));
		goto out_close;
	}
	area = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)area;
	reg.range.len = PG;
	if (area == MAP_FAILED || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		fprintf(stderr, "%s: uffd setup: %s\n", what, strerror(errno));
		goto out_close;
	}

	w.fd = fd;
	w.src = area;
	if (pthread_create(&wthr, NULL, writer_fn, &w)) {
		fprintf(stderr, "%s: pthread_create\n", what);
		goto out_close;
	}
	if (!wait_fault(uffd, FAULT_WAIT_MS)) {
		/* Unblock it anyway, in case it faults later. */
		fprintf(stderr, "%s: the write did not fault on its source in %d ms\n",
			what, FAULT_WAIT_MS);
		blocked = -1;
	} else {
		/* The writer sleeps in its fault now, holding what it holds. */
		if (pthread_create(&rthr, NULL, reader_fn, &r)) {
			fprintf(stderr, "%s: pthread_create\n", what);
			blocked = -1;
		} else {
			for (i = 0; i < READ_WAIT_MS; i++) {
				if (__atomic_load_n(&r.done, __ATOMIC_ACQUIRE))
					break;
				usleep(1000);
			}
			blocked = !__atomic_load_n(&r.done, __ATOMIC_ACQUIRE);
			/*
			 * The line the baseline expectation looks for: only
			 * from the cases where waiting is the failure.
			 */
			if (blocked && wk != W_PWRITE_ONLY)
				printf("%s: %s blocked behind a writer stalled in its source fault (%d ms)\n",
				       what, reader_name[rk], READ_WAIT_MS);
			else if (blocked)
				printf("%s: %s waited for a writer stalled in its source fault in a file without NOWAIT users (%d ms), as on 6.12\n",
				       what, reader_name[rk], READ_WAIT_MS);
		}
	}

	/* Serve the fault: the write goes on with generation 2. */
	t_fill_pattern(data, PG, WOFF, 2);
	copy.dst = (unsigned long)area;
	copy.src = (unsigned long)data;
	copy.len = PG;
	if (ioctl(uffd, UFFDIO_COPY, &copy) && errno != EEXIST) {
		fprintf(stderr, "%s: UFFDIO_COPY: %s\n", what, strerror(errno));
		/* The writer would sleep forever: give up on the process. */
		exit(T_EXIT_FAIL);
	}
	pthread_join(wthr, NULL);
	if (blocked >= 0)
		pthread_join(rthr, NULL);
	if (blocked < 0)
		goto out_close;

	/*
	 * A file that no NOWAIT I/O has used keeps 6.12's path for blocking
	 * writers, and with it the inode lock across the fault: the series
	 * must change nothing there.
	 */
	ret = wk == W_PWRITE_ONLY ? !blocked : blocked;
	if (wk == W_PWRITE_ONLY && !blocked)
		fprintf(stderr, "%s: the read did not wait: a blocking writer of a file without NOWAIT users did not take the exclusive path\n",
			what);
	if (w.ret != PG) {
		fprintf(stderr, "%s: write returned %zd\n", what, w.ret);
		ret = 1;
	}
	if (r.ret != PG) {
		fprintf(stderr, "%s: read returned %zd (%s)\n", what, r.ret,
			strerror(r.err));
		ret = 1;
	} else if (t_check_pattern(r.buf, PG, ROFF, 1) >= 0) {
		fprintf(stderr, "%s: the read saw wrong data\n", what);
		ret = 1;
	}
	if (pread(fd, setup, PG, WOFF) != PG ||
	    t_check_pattern(setup, PG, WOFF, 2) >= 0) {
		fprintf(stderr, "%s: the write's data is not in the file\n", what);
		ret = 1;
	}
	if (!ret && wk != W_PWRITE_ONLY)
		printf("%s: the read completed while the writer was stalled\n",
		       what);
	else if (!ret)
		printf("%s: the read waited, as on 6.12\n", what);
out_close:
	if (area != MAP_FAILED)
		munmap(area, PG);
	if (uffd >= 0)
		close(uffd);
	if (r.fd >= 0)
		close(r.fd);
	close(fd);
	t_remove_file(path);
out_free:
	free(setup);
	free(data);
	free(r.buf);
	return ret;
}

int main(void)
{
	int wk, rk, ret = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("copy-outside-lock: fs %s, dir %s\n", t_test_fs(), t_test_dir());
	for (wk = W_PWRITE; wk <= W_URING; wk++)
		for (rk = R_BUFFERED; rk <= R_DIRECT; rk++)
			ret |= run_case(wk, rk);
	/*
	 * An O_DIRECT read waits for the inode lock on both file systems
	 * (ext4's buffered reads never take it).
	 */
	ret |= run_case(W_PWRITE_ONLY, R_DIRECT);
	return ret ? T_EXIT_FAIL : T_EXIT_PASS;
}
