/* SPDX-License-Identifier: MIT */
/*
 * Description: helpers shared by the tests and the benchmark (see helpers.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <linux/userfaultfd.h>
#include "helpers.h"

#define PUNT_EVENT "/sys/kernel/tracing/events/io_uring/io_uring_queue_async_work"
#define PUNT_TRIGGER "hist:keys=opcode"

const char *t_test_dir(void)
{
	const char *d = getenv("TEST_DIR");

	return d && *d ? d : ".";
}

const char *t_test_fs(void)
{
	const char *f = getenv("TEST_FS");

	return f && *f ? f : "?";
}

static char t_files[16][PATH_MAX];
static int t_nr_files;

static void t_unlink_files(void)
{
	int i;

	if (getenv("TEST_KEEP_FILES"))
		return;
	for (i = 0; i < t_nr_files; i++)
		unlink(t_files[i]);
}

int t_create_file(const char *tag, int flags, char *path_out, size_t path_len)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s.%d.%d", t_test_dir(), tag,
		 (int)getpid(), t_nr_files);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | flags, 0644);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		exit(T_EXIT_FAIL);
	}
	if (t_nr_files < 16) {
		if (!t_nr_files)
			atexit(t_unlink_files);
		strcpy(t_files[t_nr_files++], path);
	}
	if (path_out)
		snprintf(path_out, path_len, "%s", path);
	return fd;
}

/* Is @opt one of the comma-separated options in @list? */
static int t_opt_in_list(const char *list, const char *opt)
{
	size_t n = strlen(opt);
	const char *p = list;

	while (p && *p) {
		if (!strncmp(p, opt, n) && (p[n] == ',' || p[n] == '\0'))
			return 1;
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return 0;
}

int t_mount_has_option(int fd, const char *opt)
{
	char line[4096], majmin[32], *tok, *save, *last = NULL;
	int field, found = -1;
	struct stat st;
	FILE *f;

	if (fstat(fd, &st))
		return -1;
	snprintf(majmin, sizeof(majmin), "%u:%u", major(st.st_dev), minor(st.st_dev));
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return -1;
	/*
	 * Fields: id parent major:minor root mountpoint mount-options
	 * [optional...] - fstype source super-options
	 */
	while (found < 0 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		field = 0;
		for (tok = strtok_r(line, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save), field++) {
			if (field == 2 && strcmp(tok, majmin))
				break;
			if (field == 5 && t_opt_in_list(tok, opt))
				found = 1;
			last = tok;
		}
		if (field > 2 && found < 0)
			found = last && t_opt_in_list(last, opt);
	}
	fclose(f);
	return found < 0 ? -1 : found;
}

int t_ts_before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

long t_ticks_between(const struct timespec *a, const struct timespec *b)
{
	struct timespec res;
	long long ns;

	clock_getres(CLOCK_REALTIME_COARSE, &res);
	ns = (b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
	return (long)(ns / (res.tv_sec * 1000000000LL + res.tv_nsec));
}

void t_next_tick(void)
{
	struct timespec a, b;

	clock_gettime(CLOCK_REALTIME_COARSE, &a);
	do {
		usleep(1000);
		clock_gettime(CLOCK_REALTIME_COARSE, &b);
	} while (a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec);
}

unsigned int t_seed(const char *test_name)
{
	const char *s = getenv("TEST_SEED");
	unsigned int seed;

	if (s && *s)
		seed = strtoul(s, NULL, 0);
	else
		seed = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	printf("%s: seed %u (rerun with TEST_SEED=%u)\n", test_name, seed, seed);
	fflush(stdout);
	return seed;
}

unsigned int t_env_uint(const char *name, unsigned int def,
			unsigned int min, unsigned int max)
{
	const char *s = getenv(name);
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, NULL, 0);
	if (v < min)
		v = min;
	if (v > max)
		v = max;
	return v;
}

uint64_t t_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void t_fill_pattern(void *buf, size_t len, uint64_t off, uint32_t gen)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = t_pattern_byte(off + i, gen);
}

ssize_t t_check_pattern(const void *buf, size_t len, uint64_t off, uint32_t gen)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != t_pattern_byte(off + i, gen))
			return (ssize_t)i;
	return -1;
}

static int t_submit_wait(struct io_uring *ring)
{
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_submit(ring);
	if (ret != 1) {
		fprintf(stderr, "io_uring_submit: %d\n", ret);
		return ret < 0 ? ret : -EIO;
	}
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret) {
		fprintf(stderr, "io_uring_wait_cqe: %d\n", ret);
		return ret;
	}
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

int t_uring_pwrite(struct io_uring *ring, int fd, const void *buf,
		   unsigned int len, off_t off, int rw_flags)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_write(sqe, fd, buf, len, off);
	sqe->rw_flags = rw_flags;
	return t_submit_wait(ring);
}

int t_uring_pwritev(struct io_uring *ring, int fd, const struct iovec *iov,
		    unsigned int nr, off_t off, int rw_flags)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_writev(sqe, fd, iov, nr, off);
	sqe->rw_flags = rw_flags;
	return t_submit_wait(ring);
}

int t_uring_pread(struct io_uring *ring, int fd, void *buf,
		  unsigned int len, off_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_read(sqe, fd, buf, len, off);
	return t_submit_wait(ring);
}

int t_uring_fsync(struct io_uring *ring, int fd)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_fsync(sqe, fd, 0);
	return t_submit_wait(ring);
}

void *t_worker_buf(size_t size, const char *who)
{
	void *buf;

	if (posix_memalign(&buf, 4096, size)) {
		fprintf(stderr, "%s: out of memory\n", who);
		return NULL;
	}
	return buf;
}

void *t_worker_ring(struct io_uring *ring, unsigned int entries, size_t size,
		    const char *who)
{
	void *bufs;
	int ret;

	ret = io_uring_queue_init(entries, ring, 0);
	if (ret) {
		fprintf(stderr, "%s: io_uring_queue_init: %s\n", who,
			strerror(-ret));
		return NULL;
	}
	bufs = t_worker_buf(size, who);
	if (!bufs)
		io_uring_queue_exit(ring);
	return bufs;
}

void *t_worker_ring_fixed(struct io_uring *ring, void *bufs, unsigned int nr,
			  size_t size, const char *who)
{
	struct iovec *iov;
	unsigned int i;
	int ret;

	iov = calloc(nr, sizeof(*iov));
	if (!iov) {
		fprintf(stderr, "%s: out of memory\n", who);
		t_worker_ring_exit(ring, bufs);
		return NULL;
	}
	for (i = 0; i < nr; i++) {
		iov[i].iov_base = (char *)bufs + i * size;
		iov[i].iov_len = size;
	}
	ret = io_uring_register_buffers(ring, iov, nr);
	free(iov);
	if (ret) {
		fprintf(stderr, "%s: io_uring_register_buffers: %s\n", who,
			strerror(-ret));
		t_worker_ring_exit(ring, bufs);
		return NULL;
	}
	return bufs;
}

void t_worker_ring_exit(struct io_uring *ring, void *bufs)
{
	if (!bufs)
		return;
	free(bufs);
	io_uring_queue_exit(ring);
}

int t_uring_batch(struct io_uring *ring, unsigned int nr, const char *who,
		  void (*fn)(void *arg, const struct io_uring_cqe *cqe),
		  void *arg)
{
	struct io_uring_cqe *cqe;
	unsigned int i;
	int ret;

	ret = io_uring_submit(ring);
	if (ret != (int)nr) {
		fprintf(stderr, "%s: io_uring_submit: %d\n", who, ret);
		return 1;
	}
	for (i = 0; i < nr; i++) {
		ret = io_uring_wait_cqe(ring, &cqe);
		if (ret) {
			fprintf(stderr, "%s: io_uring_wait_cqe: %s\n", who,
				strerror(-ret));
			return 1;
		}
		fn(arg, cqe);
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

int t_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, s, strlen(s));
	close(fd);
	return ret < 0 ? -errno : 0;
}

int t_drop_caches(void)
{
	int ret;

	sync();
	ret = t_write_str("/proc/sys/vm/drop_caches", "3");
	if (ret)
		fprintf(stderr, "drop_caches: %s\n", strerror(-ret));
	return ret ? 1 : 0;
}

/* Install a hist trigger on the punt event; 0 or -1 (and print why). */
static int t_punt_trigger_install(const char *trigger)
{
	char remove[128];
	int ret;

	/* A trigger left behind by a killed run would refuse a second one. */
	snprintf(remove, sizeof(remove), "!%s", trigger);
	t_write_str(PUNT_EVENT "/trigger", remove);
	ret = t_write_str(PUNT_EVENT "/trigger", trigger);
	if (ret) {
		fprintf(stderr, "cannot install %s on %s/trigger: %s\n",
			trigger, PUNT_EVENT, strerror(-ret));
		return -1;
	}
	return 0;
}

int t_punts_start(void)
{
	return t_punt_trigger_install(PUNT_TRIGGER);
}

long t_punts_read(void)
{
	char line[256];
	long hits = -1;
	FILE *f;

	f = fopen(PUNT_EVENT "/hist", "r");
	if (!f) {
		perror("open " PUNT_EVENT "/hist");
		return -1;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " Hits: %ld", &hits) == 1)
			break;
	fclose(f);
	if (hits < 0)
		fprintf(stderr, "no 'Hits:' total in %s/hist\n", PUNT_EVENT);
	return hits;
}

long t_punts_read_ops(long by_op[256])
{
	char line[256];
	long total = 0, n;
	unsigned int op;
	FILE *f;

	memset(by_op, 0, 256 * sizeof(*by_op));
	f = fopen(PUNT_EVENT "/hist", "r");
	if (!f) {
		perror("open " PUNT_EVENT "/hist");
		return -1;
	}
	/* One line per key: "{ opcode:         23 } hitcount:          5" */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " { opcode: %u } hitcount: %ld", &op, &n) == 2 &&
		    op < 256) {
			by_op[op] += n;
			total += n;
		}
	fclose(f);
	return total;
}

void t_punts_stop(void)
{
	t_write_str(PUNT_EVENT "/trigger", "!" PUNT_TRIGGER);
}

#define PUNT_DATA_TRIGGER "hist:keys=user_data:size=16384"

int t_punts_by_data_start(void)
{
	return t_punt_trigger_install(PUNT_DATA_TRIGGER);
}

long t_punts_by_data(void (*fn)(uint64_t user_data, long n, void *arg),
		     void *arg)
{
	unsigned long long data;
	long total = 0, n, drops = 0;
	char line[256];
	FILE *f;

	f = fopen(PUNT_EVENT "/hist", "r");
	if (!f) {
		perror("open " PUNT_EVENT "/hist");
		return -1;
	}
	/* "{ user_data:       1234 } hitcount:          1", "    Dropped: 0" */
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " { user_data: %llu } hitcount: %ld", &data, &n) == 2) {
			fn(data, n, arg);
			total += n;
		} else if (sscanf(line, " Dropped: %ld", &n) == 1) {
			drops += n;
		}
	}
	fclose(f);
	if (drops) {
		fprintf(stderr, "%s/hist dropped %ld entries\n", PUNT_EVENT, drops);
		return -1;
	}
	return total;
}

void t_punts_by_data_stop(void)
{
	t_write_str(PUNT_EVENT "/trigger", "!" PUNT_DATA_TRIGGER);
}

void t_remove_file(const char *path)
{
	if (!getenv("TEST_KEEP_FILES"))
		unlink(path);
}

const char *t_wmode_name(enum t_wmode m)
{
	switch (m) {
	case T_URING_NOWAIT:	return "uring-nowait";
	case T_PWRITEV2_NOWAIT:	return "pwritev2-nowait";
	case T_URING:		return "uring";
	case T_PWRITEV2:	return "pwritev2";
	default:		return "?";
	}
}

ssize_t t_wmode_write(struct io_uring *ring, enum t_wmode m, int fd,
		      const void *buf, size_t len, off_t off, int rw_flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ssize_t ret;

	if (t_wmode_nowait(m))
		rw_flags |= RWF_NOWAIT;
	if (m == T_URING_NOWAIT || m == T_URING)
		return t_uring_pwrite(ring, fd, buf, len, off, rw_flags);
	ret = pwritev2(fd, &iov, 1, off, rw_flags);
	return ret < 0 ? -errno : ret;
}

const char *t_errno_name(int err)
{
	static char buf[16];

	switch (err) {
	case EAGAIN:	return "EAGAIN";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EINVAL:	return "EINVAL";
	case EBADF:	return "EBADF";
	case EROFS:	return "EROFS";
	case EPERM:	return "EPERM";
	case EFAULT:	return "EFAULT";
	case EIO:	return "EIO";
	case ENOSPC:	return "ENOSPC";
	case EINTR:	return "EINTR";
	case EFBIG:	return "EFBIG";
	case EOVERFLOW:	return "EOVERFLOW";
	}
	snprintf(buf, sizeof(buf), "errno %d", err);
	return buf;
}

static struct {
	dev_t dev;
	int refuses;
} t_nowait_fs[8];
static int t_nr_nowait_fs;

static int t_nowait_lookup(dev_t dev)
{
	int i;

	for (i = 0; i < t_nr_nowait_fs; i++)
		if (t_nowait_fs[i].dev == dev)
			return t_nowait_fs[i].refuses;
	return -1;
}

int t_nowait_probe(const char *dir)
{
	char path[PATH_MAX], buf[4096];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct stat st;
	ssize_t ret = 0;
	int fd, i, refuses;

	if (stat(dir, &st)) {
		fprintf(stderr, "stat %s: %s\n", dir, strerror(errno));
		return -1;
	}
	refuses = t_nowait_lookup(st.st_dev);
	if (refuses >= 0)
		return refuses;

	snprintf(path, sizeof(path), "%s/nowait-probe.%d", dir, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "open %s: %s\n", path, strerror(errno));
		return -1;
	}
	unlink(path);
	memset(buf, 0x42, sizeof(buf));
	if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf)) {
		fprintf(stderr, "probe write %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	/* A cached, non-extending overwrite: EAGAIN would only be a race. */
	for (i = 0; i < 10; i++) {
		ret = pwritev2(fd, &iov, 1, 0, RWF_NOWAIT);
		if (ret >= 0 || errno != EAGAIN)
			break;
		usleep(1000);
	}
	close(fd);
	refuses = ret < 0 && (errno == EOPNOTSUPP || errno == EINVAL);
	if (t_nr_nowait_fs < 8) {
		t_nowait_fs[t_nr_nowait_fs].dev = st.st_dev;
		t_nowait_fs[t_nr_nowait_fs++].refuses = refuses;
	}
	if (refuses)
		printf("note: %s refuses buffered RWF_NOWAIT pwritev2 (%s)\n",
		       dir, t_errno_name(errno));
	return refuses;
}

int t_note_nowait_use(int fd)
{
	char buf[4096];
	struct iovec iov = { .iov_base = buf };
	ssize_t n, ret;
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || (fl & O_DIRECT) || (fl & O_ACCMODE) == O_RDONLY) {
		fprintf(stderr, "note NOWAIT use: needs a buffered fd open for writing\n");
		return -1;
	}
	n = pread(fd, buf, sizeof(buf), 0);
	if (n <= 0) {
		fprintf(stderr, "note NOWAIT use: read: %s\n",
			n ? strerror(errno) : "empty file");
		return -1;
	}
	iov.iov_len = n;
	ret = pwritev2(fd, &iov, 1, 0, RWF_NOWAIT);
	/* EAGAIN: stale times or a busy lock; EOPNOTSUPP: 6.12's ext4. */
	if (ret != n && !(ret < 0 && (errno == EAGAIN || errno == EOPNOTSUPP))) {
		fprintf(stderr, "note NOWAIT use: pwritev2 returned %zd (%s)\n",
			ret, ret < 0 ? strerror(errno) : "short");
		return -1;
	}
	return 0;
}

/* t_nowait_probe() for the file system of @fd, found through /proc. */
static int t_nowait_probe_fd(int fd)
{
	char link[64], path[PATH_MAX];
	struct stat st;
	ssize_t n;
	char *p;
	int ret;

	if (fstat(fd, &st))
		return -1;
	ret = t_nowait_lookup(st.st_dev);
	if (ret >= 0)
		return ret;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return -1;
	path[n] = 0;
	p = strstr(path, " (deleted)");
	if (p)
		*p = 0;
	return t_nowait_probe(dirname(path));
}

/*
 * The one place that says what a test write may return.
 *
 * Without RWF_NOWAIT: all @len bytes, nothing else.
 *
 * With RWF_NOWAIT:
 *   @len		done in full;
 *   0 < n < @len	short but honest: bytes [0, n) are in the file and
 *			the rest untouched (the caller's shadow checks it);
 *   -EAGAIN		refused, nothing written;
 *   -EOPNOTSUPP, -EINVAL
 *			refused, nothing written: pwritev2() only, and only
 *			on a file system that refuses every buffered
 *			RWF_NOWAIT write (6.12 ext4 has no FOP_BUFFER_WASYNC:
 *			-EOPNOTSUPP from ext4_buffered_write_iter(), -EINVAL
 *			from generic_write_checks_count()). A file system
 *			that takes NOWAIT overwrites must say -EAGAIN.
 * Zero, and every other error, is a failure.
 */
ssize_t t_write_outcome(const char *what, enum t_wmode m, int fd,
			ssize_t ret, size_t len)
{
	if (ret == (ssize_t)len)
		return ret;
	if (!t_wmode_nowait(m)) {
		fprintf(stderr, "%s: blocking write of %zu bytes returned %zd%s%s\n",
			what, len, ret, ret < 0 ? " " : "",
			ret < 0 ? t_errno_name(-ret) : "");
		return -1;
	}
	if (ret > 0 && ret < (ssize_t)len)
		return ret;
	if (ret == -EAGAIN)
		return 0;
	if (m == T_PWRITEV2_NOWAIT && (ret == -EOPNOTSUPP || ret == -EINVAL)) {
		if (t_nowait_probe_fd(fd) == 1)
			return 0;
		fprintf(stderr, "%s: RWF_NOWAIT write returned %s on a file system that takes buffered RWF_NOWAIT writes (want EAGAIN)\n",
			what, t_errno_name(-ret));
		return -1;
	}
	fprintf(stderr, "%s: RWF_NOWAIT write of %zu bytes returned %zd%s%s (allowed: %zu, 1..%zu, EAGAIN%s)\n",
		what, len, ret, ret < 0 ? " " : "",
		ret < 0 ? t_errno_name(-ret) : "", len, len - 1,
		m == T_PWRITEV2_NOWAIT ? ", EOPNOTSUPP/EINVAL where the fs refuses all" : "");
	return -1;
}

void t_tally_add(struct t_tally *t, ssize_t ret, size_t len)
{
	t->writes++;
	if (ret == (ssize_t)len)
		t->full++;
	else if (ret > 0)
		t->partial++;
	else {
		t->refused++;
		t->last_err = (int)-ret;
	}
}

const char *t_tally_str(const struct t_tally *t, char *buf, size_t len)
{
	size_t n = 0;

	snprintf(buf, len, "none");
	if (t->writes == 1) {
		snprintf(buf, len, "%s", t->full ? "full" : t->partial ?
			 "short" : t_errno_name(t->last_err));
		return buf;
	}
	if (t->full)
		n += snprintf(buf + n, len - n, "full %u ", t->full);
	if (t->partial && n < len)
		n += snprintf(buf + n, len - n, "short %u ", t->partial);
	if (t->refused && n < len)
		n += snprintf(buf + n, len - n, "%s %u ",
			      t_errno_name(t->last_err), t->refused);
	if (n && n <= len)
		buf[n - 1] = 0;
	return buf;
}

int t_run_modes(const char *name, const char *skip_note,
		int (*fn)(const void *arg, enum t_wmode m, const char *what,
			  struct t_tally *t),
		const void *arg)
{
	char line[512], what[128], tb[64];
	struct t_tally t;
	int m, ret, failed = 0;
	size_t n = 0;

	line[0] = 0;
	for (m = 0; m < T_NR_WMODES; m++) {
		snprintf(what, sizeof(what), "%s [%s]", name, t_wmode_name(m));
		memset(&t, 0, sizeof(t));
		ret = fn(arg, m, what, &t);
		if (ret == T_EXIT_SKIP) {
			printf("SKIP %s%s\n", name, skip_note);
			return T_EXIT_SKIP;
		}
		if (ret)
			failed = 1;
		n += snprintf(line + n, sizeof(line) - n, " %s=%s",
			      t_wmode_name(m),
			      ret ? "FAILED" : t_tally_str(&t, tb, sizeof(tb)));
	}
	printf("%s %s:%s\n", failed ? "FAIL" : "ok  ", name, line);
	return failed;
}

int t_cases_exit(const struct t_cases *cs)
{
	if (cs->failed) {
		fprintf(stderr, "%s: %d case(s) failed (fs %s)\n", cs->test,
			cs->failed, t_test_fs());
		return T_EXIT_FAIL;
	}
	if (cs->skipped) {
		printf("%s: %d case(s) skipped\n", cs->test, cs->skipped);
		return T_EXIT_SKIP;
	}
	return T_EXIT_PASS;
}

void t_shadow_init(struct t_shadow *sh, size_t cap)
{
	sh->data = calloc(1, cap);
	if (!sh->data) {
		fprintf(stderr, "shadow: cannot allocate %zu bytes\n", cap);
		exit(T_EXIT_FAIL);
	}
	sh->size = 0;
	sh->cap = cap;
}

void t_shadow_free(struct t_shadow *sh)
{
	free(sh->data);
	sh->data = NULL;
}

void t_shadow_put(struct t_shadow *sh, const void *buf, size_t len, off_t off)
{
	if (!len)
		return;
	if ((size_t)off + len > sh->cap) {
		fprintf(stderr, "shadow: write %zu at %lld past its %zu bytes\n",
			len, (long long)off, sh->cap);
		exit(T_EXIT_FAIL);
	}
	memcpy(sh->data + off, buf, len);
	if ((size_t)off + len > sh->size)
		sh->size = off + len;
}

void t_shadow_truncate(struct t_shadow *sh, size_t size)
{
	if (size > sh->cap) {
		fprintf(stderr, "shadow: truncate to %zu past its %zu bytes\n",
			size, sh->cap);
		exit(T_EXIT_FAIL);
	}
	if (size < sh->size)
		memset(sh->data + size, 0, sh->size - size);
	sh->size = size;
}

int t_shadow_verify(const struct t_shadow *sh, int fd, const char *what)
{
	static unsigned char buf[64 * 1024];
	long long first = -1, last = -1;
	size_t off, i, n;
	struct stat st;
	ssize_t ret;

	if (fstat(fd, &st)) {
		fprintf(stderr, "%s: fstat: %s\n", what, strerror(errno));
		return 1;
	}
	if ((size_t)st.st_size != sh->size) {
		fprintf(stderr, "%s: file size %lld, want %zu\n", what,
			(long long)st.st_size, sh->size);
		return 1;
	}
	for (off = 0; off < sh->size; off += n) {
		n = sh->size - off < sizeof(buf) ? sh->size - off : sizeof(buf);
		ret = pread(fd, buf, n, off);
		if (ret != (ssize_t)n) {
			fprintf(stderr, "%s: pread %zu at %zu: %zd (%s)\n", what,
				n, off, ret, ret < 0 ? strerror(errno) : "short");
			return 1;
		}
		if (!memcmp(buf, sh->data + off, n))
			continue;
		for (i = 0; i < n; i++) {
			if (buf[i] == sh->data[off + i])
				continue;
			if (first < 0) {
				first = off + i;
				fprintf(stderr, "%s: data mismatch at offset %lld: got %02x want %02x\n",
					what, first, buf[i], sh->data[off + i]);
			}
			last = off + i;
		}
	}
	if (first < 0)
		return 0;
	fprintf(stderr, "%s: bytes differ from %lld to %lld (file size %zu)\n",
		what, first, last, sh->size);
	return 1;
}

int t_shadow_verify_stable(const struct t_shadow *sh, int fd, const char *what)
{
	char w[256];
	int ret;

	if (fsync(fd)) {
		fprintf(stderr, "%s: fsync: %s\n", what, strerror(errno));
		return 1;
	}
	ret = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	if (ret) {
		fprintf(stderr, "%s: fadvise DONTNEED: %s\n", what, strerror(ret));
		return 1;
	}
	snprintf(w, sizeof(w), "%s, re-read after fsync", what);
	return t_shadow_verify(sh, fd, w);
}

int t_check_written(enum t_wmode m, int fd, struct t_shadow *sh,
		    const char *what, const void *expect, size_t len,
		    off_t off, int rw_flags, ssize_t ret,
		    struct t_tally *tally)
{
	ssize_t done;
	int fl;

	done = t_write_outcome(what, m, fd, ret, len);
	if (done < 0)
		return 1;
	if (tally)
		t_tally_add(tally, ret, len);
	fl = fcntl(fd, F_GETFL);
	if ((fl >= 0 && (fl & O_APPEND)) || (rw_flags & RWF_APPEND))
		off = sh->size;
	t_shadow_put(sh, expect, done, off);
	if (t_shadow_verify(sh, fd, what)) {
		fprintf(stderr, "%s: the write of %zu bytes at %lld returned %zd%s%s\n",
			what, len, (long long)off, ret, ret < 0 ? " " : "",
			ret < 0 ? t_errno_name(-ret) : "");
		return 1;
	}
	return 0;
}

int t_write_check(struct io_uring *ring, enum t_wmode m, int fd,
		  struct t_shadow *sh, const char *what, const void *buf,
		  const void *expect, size_t len, off_t off, int rw_flags,
		  struct t_tally *tally)
{
	ssize_t ret;

	ret = t_wmode_write(ring, m, fd, buf, len, off, rw_flags);
	return t_check_written(m, fd, sh, what, expect ? expect : buf, len,
			       off, rw_flags, ret, tally);
}

void *t_uffd_serve(void *arg)
{
	struct t_uffd_handler *h = arg;
	const long pg = sysconf(_SC_PAGESIZE);
	struct pollfd pfd[2] = {
		{ .fd = h->uffd, .events = POLLIN },
		{ .fd = h->stop_fd, .events = POLLIN },
	};
	struct uffdio_copy copy;
	struct uffd_msg msg;
	unsigned long addr;

	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			h->error = errno;
			break;
		}
		if (pfd[1].revents)
			break;
		if (read(h->uffd, &msg, sizeof(msg)) != sizeof(msg)) {
			if (errno == EAGAIN)
				continue;
			h->error = errno;
			break;
		}
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		if (h->clear_on_fault)
			__atomic_store_n(h->clear_on_fault, 0, __ATOMIC_SEQ_CST);
		usleep(h->delay_us);
		addr = msg.arg.pagefault.address & ~(unsigned long)(pg - 1);
		copy.dst = addr;
		copy.src = (unsigned long)(h->src + (addr - (unsigned long)h->area));
		copy.len = pg;
		copy.mode = 0;
		copy.copy = 0;
		if (ioctl(h->uffd, UFFDIO_COPY, &copy) && errno != EEXIST) {
			h->error = errno;
			break;
		}
		__atomic_add_fetch(&h->served, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

long t_cached_pages(int fd, off_t off, size_t len)
{
	const long pg = sysconf(_SC_PAGESIZE);
	size_t i, nr = (len + pg - 1) / pg;
	unsigned char *vec;
	long n = -1;
	void *p;

	vec = malloc(nr ? nr : 1);
	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	if (vec && p != MAP_FAILED && !mincore(p, len, vec))
		for (n = 0, i = 0; i < nr; i++)
			n += vec[i] & 1;
	if (p != MAP_FAILED)
		munmap(p, len);
	free(vec);
	return n;
}

int t_uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd, dev;

	fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
		if (dev < 0)
			return -errno;
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
		close(dev);
		if (fd < 0)
			return -errno;
	}
	if (ioctl(fd, UFFDIO_API, &api)) {
		close(fd);
		return -errno;
	}
	return fd;
}

static void *stalled_writer_fn(void *arg)
{
	struct t_stalled_writer *w = arg;
	const long pg = sysconf(_SC_PAGESIZE);

	struct timespec now;
	struct stat st;
	ssize_t ret;

	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		/* Missing again: this write faults on its first page. */
		madvise(w->h.area, pg, MADV_DONTNEED);
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		if (fstat(w->fd, &st)) {
			w->error = errno;
			break;
		}
		__atomic_store_n(&w->updating,
				 t_ts_before(&st.st_mtim, &now) ||
				 t_ts_before(&st.st_ctim, &now) ? 1 :
				 (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec,
				 __ATOMIC_SEQ_CST);
		ret = pwrite(w->fd, w->h.area, w->len, w->off);
		__atomic_store_n(&w->updating, 0, __ATOMIC_SEQ_CST);
		if (ret != (ssize_t)w->len) {
			w->error = errno ? errno : EIO;
			break;
		}
		__atomic_add_fetch(&w->writes, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int t_stalled_writer_start(struct t_stalled_writer *w)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	const long pg = sysconf(_SC_PAGESIZE);
	size_t maplen = (w->len + pg - 1) & ~(size_t)(pg - 1);
	int i;

	memset(&w->h, 0, sizeof(w->h));
	w->h.stop_fd = -1;
	w->h.area = MAP_FAILED;
	w->h.src = w->data;
	w->h.delay_us = w->delay_us;
	w->h.clear_on_fault = &w->updating;
	w->writes = 0;
	w->error = 0;
	w->stop = 0;
	w->h.uffd = t_uffd_open();
	if (w->h.uffd < 0) {
		fprintf(stderr, "stalled writer: userfaultfd: %s\n",
			strerror(-w->h.uffd));
		return -1;
	}
	w->h.stop_fd = eventfd(0, EFD_CLOEXEC);
	w->h.area = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	reg.range.start = (unsigned long)w->h.area;
	reg.range.len = maplen;
	if (w->h.stop_fd < 0 || w->h.area == MAP_FAILED ||
	    ioctl(w->h.uffd, UFFDIO_REGISTER, &reg) ||
	    pthread_create(&w->hthr, NULL, t_uffd_serve, &w->h)) {
		perror("stalled writer: setup");
		goto fail;
	}
	if (pthread_create(&w->thr, NULL, stalled_writer_fn, w)) {
		perror("stalled writer: pthread_create");
		eventfd_write(w->h.stop_fd, 1);
		pthread_join(w->hthr, NULL);
		goto fail;
	}
	/* Up to 10 s for the first fault to be served: it is in a write. */
	for (i = 0; i < 10000; i++) {
		if (__atomic_load_n(&w->h.served, __ATOMIC_ACQUIRE) > 0)
			return 0;
		if (w->error || w->h.error)
			break;
		usleep(1000);
	}
	fprintf(stderr, "stalled writer: no write started\n");
	t_stalled_writer_stop(w);
	return -1;
fail:
	if (w->h.area != MAP_FAILED)
		munmap(w->h.area, maplen);
	if (w->h.stop_fd >= 0)
		close(w->h.stop_fd);
	close(w->h.uffd);
	return -1;
}

int t_stalled_writer_stop(struct t_stalled_writer *w)
{
	const long pg = sysconf(_SC_PAGESIZE);
	size_t maplen = (w->len + pg - 1) & ~(size_t)(pg - 1);
	int ret = 0;

	__atomic_store_n(&w->stop, 1, __ATOMIC_RELEASE);
	pthread_join(w->thr, NULL);
	eventfd_write(w->h.stop_fd, 1);
	pthread_join(w->hthr, NULL);
	if (w->error || w->h.error) {
		fprintf(stderr, "stalled writer: %s\n",
			strerror(w->error ? w->error : w->h.error));
		ret = 1;
	}
	munmap(w->h.area, maplen);
	close(w->h.stop_fd);
	close(w->h.uffd);
	return ret;
}
