/* SPDX-License-Identifier: MIT */
/*
 * Description: NOWAIT overwrites on a mount without lazytime, while the
 *		file system's log cannot be written. Such a write updates
 *		c/mtime in memory and leaves the logging to a work item on
 *		the inode_times workqueue (patch 0013); with the log stalled
 *		the items block in ->dirty_inode(). A file written at every
 *		clock tick must not queue an item per tick (the 44-patch
 *		series did: an item per file per tick, without a bound while
 *		the stall lasts), and the times of the writes made meanwhile
 *		must be logged once the log moves again (patch 0045).
 *
 *		The test builds its own file system of TEST_FS's type (small
 *		log or journal, default mount) on a device-mapper linear
 *		target over a loop device on a tmpfs file, so that it can
 *		stall it: it writes the set-up back (a freeze and a thaw),
 *		suspends the target (--noflush: I/O waits) and a
 *		thread changes the mode of nmeta files (16000 on ext4, 8000
 *		on XFS) until that stops for STALL_S seconds (the log is
 *		full). Items are counted with hist triggers on the
 *		workqueue_queue_work, workqueue_execute_start and
 *		workqueue_execute_end events (by function:
 *		inode_time_workfn).
 *		- hot: hog 0 is overwritten with RWF_NOWAIT at HOT_TICKS
 *		  ticks in a row. Its first item starts and blocks; its
 *		  second starts, finds the first running and is handed to
 *		  it (patch 0047); the rest queue nothing. At most one of
 *		  its items may be running (the 46-patch series started one
 *		  per tick until the workqueue's max_active, NHOG, all held
 *		  by one file), and a second must have started, or nothing
 *		  is judged.
 *		- hogs: one RWF_NOWAIT overwrite of each other hog file, a
 *		  tick after its last update: with hog 0's, NHOG items, the
 *		  workqueue's max_active, running and blocked, so that the
 *		  targets' items can only wait. None may finish while the
 *		  target is suspended (but hog 0's hand-off); if they do,
 *		  the log had not stalled yet (a busy host can stop the
 *		  thread for seconds): wait for the stall again and queue
 *		  new ones, STALL_TRIES tries in all, else nothing is
 *		  judged.
 *		- targets: NTARGET threads overwrite 4 KiB of their own
 *		  cached file with pwritev2(RWF_NOWAIT) for TEST_STALL_MS
 *		  (default 3000) and until they saw MIN_TICKS mtime changes
 *		  in all (at most 30 s). Every write must complete (no
 *		  -EAGAIN, no short write), no writer may block, and at most
 *		  as many items as target files may be queued.
 *		- other fs: while the stalled log holds its items, a NOWAIT
 *		  overwrite on TEST_DIR's file system (another superblock)
 *		  a tick later queues an item there, which must run, and
 *		  syncfs() of that file system must return within OTHER_S
 *		  (each superblock has its own workqueue: patch 0046).
 *		  Not on the lazytime configs, whose TEST_DIR file system
 *		  queues no items, so that syncfs() could not wait for one.
 *		- logged: resume, wait until every queued item has finished;
 *		  one more RWF_NOWAIT overwrite of half the targets a tick
 *		  later (an item must be queued again: nothing left the file
 *		  marked), wait again; a shutdown with a log flush and no
 *		  data or inode writeback (XFS_IOC_GOINGDOWN /
 *		  EXT4_IOC_SHUTDOWN), remount: the mtime and ctime of every
 *		  target and of hog 0 (logged by the item handed on) must be
 *		  those stat showed before the shutdown.
 *		- churn, after the remount: 8 writers overwrite, with
 *		  RWF_NOWAIT, their own file and one shared file for 4 s
 *		  while the target is suspended for 150 ms again and again,
 *		  a syncfs() across every other stall; every item must
 *		  finish, and every file's times be on disk after a log
 *		  flush and a shutdown.
 *		- splice, last: with the target suspended, a thread splices
 *		  an uncached range of a file into a pipe and blocks in the
 *		  read I/O; 16 plain io_uring overwrites of the file's cached
 *		  range must all complete, without a punt, within 5 s while
 *		  it is still blocked. XFS splice readers entered the
 *		  overwrite gate until patch 0050, and the writes waited for
 *		  the reader from task_work until the device resumed (16 of
 *		  16 on the 49-patch series).
 *		While it runs, the hung task detector's limit is raised to
 *		HUNG_S (the log's own threads wait for the device as long as
 *		the log is stalled, which on a slow host passes the debug
 *		kernel's 60 s), and restored at exit.
 *		A feature test: 6.12 refuses these writes (-EAGAIN on XFS,
 *		-EOPNOTSUPP on ext4). Runs on the default-mount configs; on
 *		a lazytime config it skips (such mounts queue no items).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "helpers.h"

/* The max_active of a superblock's inode_times workqueue (fs/inode.c). */
#define NHOG		8
#define NTARGET		8
/*
 * Files whose mode the metadata thread changes in turn. On ext4 more than
 * two journal transactions hold (about 4000 inodes each with a 4 MiB
 * journal): with fewer, the thread came back to a file whose inode block
 * the committing transaction was writing and waited for that block alone
 * (at 8000 updates, a host under load), while other inodes' updates, the
 * time items' among them, went on. XFS relogs an inode without waiting.
 */
#define NMETA_EXT4	16000
#define NMETA_XFS	8000
#define FSIZE		(64 * 1024)
#define WLEN		4096
#define MIN_TICKS	100
#define DM_NAME		"stalled-log"
#define DM_ENV		"DM_DISABLE_UDEV=1 "
#define IMG		"/tmp/stalled-log.img"
#define MNT		"/tmp/stalled-log.mnt"
#define TRACING		"/sys/kernel/tracing/events/workqueue/"
#define EV_QUEUE	TRACING "workqueue_queue_work"
#define EV_START	TRACING "workqueue_execute_start"
#define EV_END		TRACING "workqueue_execute_end"
#define TRIGGER		"hist:keys=function.sym"
#define ITEM_FN		"inode_time_workfn"
#define HUNG_PATH	"/proc/sys/kernel/hung_task_timeout_secs"
/*
 * The hung task detector's limit while the test runs: the log's own
 * threads (XFS's log worker, jbd2) wait for the suspended device for as
 * long as the log stays stalled, past the debug kernel's 60 s on a slow
 * host (a splat: a failed boot). Still past the watchdog's resume.
 */
#define HUNG_S		"600"
/* How long the target may stay suspended before the watchdog resumes it. */
#define WATCHDOG_S	420
/* Seconds without an inode update that count as a stalled log. */
#define STALL_S		3
/* How long the hogs' items may take to start. */
#define SETTLE_S	10
/* Tries at stalling the log before the test gives up. */
#define STALL_TRIES	3
/* How long syncfs() of TEST_DIR's file system may take beside the stall. */
#define OTHER_S		60
/* Ticks at which the hot file (hog 0) is written before the other hogs. */
#define HOT_TICKS	16
/* The churn part: how long, and each stall of the log in it. */
#define CHURN_MS	4000
#define CHURN_STALL_MS	150
/* The splice part: a file of SPLICE_FSIZE, its second half spliced. */
#define SPLICE_FSIZE	(1 << 20)
#define SPLICE_LEN	(64 * 1024)
#define SPLICE_WRITES	16
#define SPLICE_WAIT_S	5

static char loopdev[64];
static int have_dm, mounted, suspended, triggers, meta_started;
static int watchdog_fd = -1;
static pid_t other_pid;
static const char *fstype;
static int other_fs;
static int nmeta;
static int hog_fd[NHOG];
static char hung_timeout[32];
static pthread_t meta;

static atomic_long meta_done;
static atomic_int meta_tid;
static atomic_int stop_meta, stop_writers;

struct writer {
	pthread_t thread;
	int fd;
	long ok, eagain, other;
	atomic_long ticks;
	int err;
	atomic_int done;
};

static struct writer writers[NTARGET];

static void msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	ret = system(cmd);
	if (ret)
		fprintf(stderr, "command failed (%d): %s\n", ret, cmd);
	return ret;
}

static int resume(void)
{
	if (!suspended)
		return 0;
	if (sh(DM_ENV "dmsetup resume --noudevsync " DM_NAME))
		return -1;
	suspended = 0;
	if (watchdog_fd >= 0) {
		if (write(watchdog_fd, "r", 1) != 1)
			perror("watchdog pipe");
		close(watchdog_fd);
		watchdog_fd = -1;
	}
	return 0;
}

static void cleanup(void)
{
	int i;

	atomic_store(&stop_writers, 1);
	atomic_store(&stop_meta, 1);
	resume();
	/* A syncfs() that waited behind the stalled log returns now. */
	if (other_pid > 0)
		waitpid(other_pid, NULL, 0);
	if (meta_started) {
		pthread_join(meta, NULL);
		meta_started = 0;
	}
	for (i = 0; i < NTARGET; i++)
		if (writers[i].fd > 0)
			close(writers[i].fd);
	for (i = 0; i < NHOG; i++)
		if (hog_fd[i] > 0)
			close(hog_fd[i]);
	if (triggers) {
		t_write_str(EV_QUEUE "/trigger", "!" TRIGGER);
		t_write_str(EV_START "/trigger", "!" TRIGGER);
		t_write_str(EV_END "/trigger", "!" TRIGGER);
	}
	if (hung_timeout[0] && t_write_str(HUNG_PATH, hung_timeout))
		fprintf(stderr, "note: " HUNG_PATH " not restored to %s\n", hung_timeout);
	if (mounted) {
		for (i = 0; umount(MNT) && errno == EBUSY && i < 20; i++)
			msleep(100);
		if (i == 20)
			umount2(MNT, MNT_DETACH);
	}
	if (have_dm)
		sh(DM_ENV "dmsetup remove --noudevsync --retry " DM_NAME
		   " || " DM_ENV "dmsetup remove --noudevsync --deferred " DM_NAME);
	if (loopdev[0])
		sh("losetup -d %s", loopdev);
	unlink(IMG);
	rmdir(MNT);
}

/*
 * A child outside the test's process group resumes the target if the
 * test neither does so nor exits in WATCHDOG_S: a test killed while a
 * thread sleeps uninterruptibly on the suspended device cannot exit, and
 * the boot's later tests would hang on it.
 */
static int start_watchdog(void)
{
	int p[2];
	pid_t pid;

	if (pipe(p)) {
		perror("pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return -1;
	}
	if (!pid) {
		struct pollfd pfd = { p[0], POLLIN, 0 };
		char c = 0;

		close(p[1]);
		setsid();
		if (poll(&pfd, 1, WATCHDOG_S * 1000) == 1 &&
		    read(p[0], &c, 1) == 1 && c == 'r')
			_exit(0);
		if (c != 'r' && system(DM_ENV "dmsetup resume --noudevsync " DM_NAME " 2>/dev/null") == 0)
			fprintf(stderr, "watchdog: resumed " DM_NAME "\n");
		_exit(0);
	}
	close(p[0]);
	watchdog_fd = p[1];
	return 0;
}

/* Hits of inode_time_workfn in @event's hist, or -1. */
static long item_hits(const char *event)
{
	char path[256], line[512], *h;
	long n = 0, v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/hist", event);
	f = fopen(path, "r");
	if (!f) {
		perror(path);
		return -1;
	}
	/* "{ function: [ffffffff812a3b40] inode_time_workfn } hitcount: 8" */
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, ITEM_FN))
			continue;
		h = strstr(line, "hitcount:");
		if (h && sscanf(h, "hitcount: %ld", &v) == 1)
			n += v;
	}
	fclose(f);
	return n;
}

struct counts {
	long queued, started, ended;
};

static int items(long *queued, long *ended)
{
	*queued = item_hits(EV_QUEUE);
	*ended = item_hits(EV_END);
	return *queued < 0 || *ended < 0 ? -1 : 0;
}

static int counts(struct counts *c)
{
	c->started = item_hits(EV_START);
	return items(&c->queued, &c->ended) || c->started < 0 ? -1 : 0;
}

static int setup(void)
{
	static const char *const tools[] = {
		"dmsetup", "losetup", "blockdev", NULL
	};
	char buf[FSIZE], path[PATH_MAX];
	FILE *p;
	int i, fd;

	for (i = 0; tools[i]; i++)
		if (sh("command -v %s >/dev/null", tools[i]))
			return 1;
	if (sh("command -v mkfs.%s >/dev/null", fstype))
		return 1;
	/* What a killed earlier run may have left. */
	if (system("umount -l " MNT " 2>/dev/null; " DM_ENV "dmsetup remove --noudevsync "
		   DM_NAME " 2>/dev/null; losetup -j " IMG " -n -O NAME | xargs -r -n1 losetup -d"))
		fprintf(stderr, "note: removing a stale setup failed\n");
	t_write_str(EV_QUEUE "/trigger", "!" TRIGGER);
	t_write_str(EV_START "/trigger", "!" TRIGGER);
	t_write_str(EV_END "/trigger", "!" TRIGGER);
	/* Absent without CONFIG_DETECT_HUNG_TASK: nothing to raise. */
	p = fopen(HUNG_PATH, "r");
	if (p) {
		if (fgets(hung_timeout, sizeof(hung_timeout), p))
			hung_timeout[strcspn(hung_timeout, "\n")] = '\0';
		fclose(p);
		if (hung_timeout[0] && t_write_str(HUNG_PATH, HUNG_S)) {
			perror(HUNG_PATH);
			hung_timeout[0] = '\0';
			return 1;
		}
	}
	unlink(IMG);
	fd = open(IMG, O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 256 << 20)) {
		perror(IMG);
		return 1;
	}
	close(fd);
	p = popen("losetup -f --show " IMG, "r");
	if (!p || !fgets(loopdev, sizeof(loopdev), p)) {
		fprintf(stderr, "losetup failed\n");
		if (p)
			pclose(p);
		loopdev[0] = '\0';
		return 1;
	}
	pclose(p);
	loopdev[strcspn(loopdev, "\n")] = '\0';
	if (sh(DM_ENV "dmsetup create --noudevsync " DM_NAME
	       " --table \"0 $(blockdev --getsz %s) linear %s 0\"", loopdev, loopdev))
		return 1;
	have_dm = 1;
	/*
	 * A small log (XFS) or journal (ext4), so that a few thousand inode
	 * updates fill what can wait for the stalled device. mkfs.xfs makes
	 * a file system under 300 MB and a log under 64 MB only for fstests
	 * (TEST_DIR, TEST_DEV and QA_CHECK_FS all set).
	 */
	if (!strcmp(fstype, "xfs") ?
	    sh("TEST_DIR=" MNT " TEST_DEV=/dev/mapper/" DM_NAME
	       " QA_CHECK_FS=1 mkfs.xfs -q -f -K -l size=6m /dev/mapper/" DM_NAME) :
	    sh("mkfs.ext4 -q -F -J size=4 -E lazy_itable_init=0,nodiscard /dev/mapper/" DM_NAME))
		return 1;
	mkdir(MNT, 0755);
	if (mount("/dev/mapper/" DM_NAME, MNT, fstype, 0, NULL)) {
		perror("mount");
		return 1;
	}
	mounted = 1;
	if (mkdir(MNT "/meta", 0755)) {
		perror("mkdir");
		return 1;
	}
	for (i = 0; i < nmeta; i++) {
		snprintf(path, sizeof(path), MNT "/meta/%d", i);
		fd = open(path, O_CREAT | O_WRONLY, 0644);
		if (fd < 0) {
			perror(path);
			return 1;
		}
		close(fd);
	}
	t_fill_pattern(buf, FSIZE, 0, 1);
	for (i = 0; i < NHOG + NTARGET; i++) {
		snprintf(path, sizeof(path), MNT "/%s%d",
			 i < NHOG ? "hog" : "t", i < NHOG ? i : i - NHOG);
		fd = open(path, O_CREAT | O_RDWR, 0644);
		if (fd < 0 || pwrite(fd, buf, FSIZE, 0) != FSIZE ||
		    fsync(fd) || pread(fd, buf, FSIZE, 0) != FSIZE) {
			perror(path);
			if (fd >= 0)
				close(fd);
			return 1;
		}
		if (i < NHOG)
			hog_fd[i] = fd;
		else
			writers[i - NHOG].fd = fd;
	}
	sync();
	if (t_write_str(EV_QUEUE "/trigger", TRIGGER) ||
	    t_write_str(EV_START "/trigger", TRIGGER) ||
	    t_write_str(EV_END "/trigger", TRIGGER)) {
		perror("cannot install the workqueue hist triggers");
		return 1;
	}
	triggers = 1;
	return 0;
}

/*
 * Write back everything the set-up logged before the target is suspended:
 * freezing the file system pushes XFS's AIL (or checkpoints ext4's
 * journal) and waits for it. Without this the metadata thread's first
 * inode can be in a cluster (or table) buffer that xfsaild (a checkpoint)
 * is still writing when the target stops: the thread then waits for that
 * write, not for log space, and the stall it seems to show is not one
 * (CI, 2026-12-07, debug xfs-lazytime: "stalled after 0 inode updates"
 * three times, and every hog's item ran).
 */
static int quiesce(void)
{
	int fd = open(MNT, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || ioctl(fd, FIFREEZE, 0) || ioctl(fd, FITHAW, 0)) {
		perror("freezing " MNT " to write the set-up back");
		if (fd >= 0)
			close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

static void *meta_fn(void *arg)
{
	char path[PATH_MAX];
	long i;

	(void)arg;
	atomic_store(&meta_tid, (int)syscall(SYS_gettid));
	for (i = 0; !atomic_load(&stop_meta); i++) {
		snprintf(path, sizeof(path), MNT "/meta/%ld", i % nmeta);
		if (chmod(path, (i / nmeta) % 2 ? 0644 : 0600)) {
			perror("chmod");
			break;
		}
		atomic_store(&meta_done, i + 1);
	}
	return NULL;
}

static ssize_t nowait_write(int fd, uint32_t gen)
{
	unsigned char buf[WLEN];
	struct iovec iov = { buf, WLEN };

	t_fill_pattern(buf, WLEN, 0, gen);
	return pwritev2(fd, &iov, 1, 0, RWF_NOWAIT);
}

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	struct timespec last;
	struct stat st;
	ssize_t ret;
	uint32_t gen = 2;

	if (fstat(w->fd, &st)) {
		w->other++;
		w->err = errno;
		atomic_store(&w->done, 1);
		return NULL;
	}
	last = st.st_mtim;
	while (!atomic_load(&stop_writers)) {
		ret = nowait_write(w->fd, gen++);
		if (ret == WLEN) {
			w->ok++;
		} else if (ret < 0 && errno == EAGAIN) {
			w->eagain++;
		} else {
			w->other++;
			w->err = ret < 0 ? errno : 0;
			if (ret < 0 && errno == EOPNOTSUPP)
				break;
		}
		if (!fstat(w->fd, &st) &&
		    (st.st_mtim.tv_sec != last.tv_sec ||
		     st.st_mtim.tv_nsec != last.tv_nsec)) {
			atomic_fetch_add_explicit(&w->ticks, 1, memory_order_relaxed);
			last = st.st_mtim;
		}
	}
	atomic_store(&w->done, 1);
	return NULL;
}

static long total_ticks(int *min_ticks)
{
	long t = 0;
	int i;

	*min_ticks = INT_MAX;
	for (i = 0; i < NTARGET; i++) {
		long n = atomic_load_explicit(&writers[i].ticks,
					      memory_order_relaxed);

		t += n;
		if (n < *min_ticks)
			*min_ticks = (int)n;
	}
	return t;
}

/* Where the stopped metadata thread waits, as evidence for the log. */
static void print_meta_stack(void)
{
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stack",
		 atomic_load(&meta_tid));
	f = fopen(path, "r");
	if (!f)
		return;
	printf("metadata thread waits in:");
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "+\n")] = '\0';
		printf(" %s", line + (line[0] == '[' ? strcspn(line, "]") + 2 : 0));
	}
	printf("\n");
	fclose(f);
}

/*
 * Wait until the metadata thread makes no progress for STALL_S seconds in
 * a row (max 240 s). A thread that a busy host keeps from running, or
 * that waits a moment for a commit to start, stops for a while too; the
 * hogs below tell whether the log really stalled.
 */
static int wait_stalled(void)
{
	long before;
	int i, still = 0;

	for (i = 0; i < 240; i++) {
		before = atomic_load(&meta_done);
		msleep(1000);
		if (atomic_load(&meta_done) != before) {
			still = 0;
		} else if (++still == STALL_S) {
			printf("log stalled after %ld inode updates\n", before);
			if (!before)
				printf("(not one update with the target suspended: the thread waits for something else than log space; the hogs below tell)\n");
			print_meta_stack();
			return 0;
		}
	}
	fprintf(stderr, "the log never stalled: %ld inode updates in 240 s went on; nothing judged\n",
		atomic_load(&meta_done));
	return 1;
}

/*
 * Wait at least @min_ms, then until every item queued has started and
 * @running are running (at most, for @running 1; exactly, else), at most
 * SETTLE_S: on a slow host a worker may take longer than @min_ms to
 * start, and a kernel that gets this wrong is judged on what @c then
 * holds.
 */
static int settle(struct counts *c, unsigned int min_ms, long running)
{
	uint64_t end;

	msleep(min_ms);
	end = t_now_ns() + SETTLE_S * 1000000000ULL;
	for (;;) {
		if (counts(c))
			return 1;
		if (c->queued == c->started &&
		    (running == 1 ? c->started - c->ended <= 1 :
		     c->started - c->ended == running))
			return 0;
		if (t_now_ns() > end)
			return 0;
		msleep(50);
	}
}

/* Wait until every item queued has finished (max 120 s). */
static int wait_drained(const char *when)
{
	long q, e;
	int i;

	for (i = 0; i < 1200; i++) {
		if (items(&q, &e))
			return 1;
		if (q == e)
			return 0;
		msleep(100);
	}
	fprintf(stderr, "%s: time items still unfinished after 120 s (%ld queued, %ld finished)\n",
		when, q, e);
	return 1;
}

/* One RWF_NOWAIT overwrite of @fd, a tick after its last update. */
static int tick_write(int fd, const char *what, uint32_t gen)
{
	ssize_t ret;

	t_next_tick();
	ret = nowait_write(fd, gen);
	if (ret == WLEN)
		return 0;
	fprintf(stderr, "NOWAIT overwrites were refused: %s: %s\n", what,
		ret < 0 ? t_errno_name(errno) : "short write");
	return 1;
}

/*
 * While the stalled log holds its items: a NOWAIT overwrite of a file on
 * TEST_DIR's file system (another superblock, not stalled) a tick later
 * queues an item there, and syncfs() of that file system, which waits for
 * it, must return. With one workqueue for all file systems that item
 * cannot start while the stalled one's items fill the running slots.
 */
static int check_other_fs(void)
{
	char buf[FSIZE], path[PATH_MAX];
	uint64_t start, waited;
	long q0, e0, q1, e1;
	int fd, status;
	pid_t pid, ret;

	fd = t_create_file("stalled-log-other", 0, path, sizeof(path));
	t_fill_pattern(buf, FSIZE, 0, 1);
	if (pwrite(fd, buf, FSIZE, 0) != FSIZE || fsync(fd) ||
	    pread(fd, buf, FSIZE, 0) != FSIZE) {
		perror(path);
		close(fd);
		return 1;
	}
	if (items(&q0, &e0) || tick_write(fd, "on TEST_DIR's file system", 7)) {
		close(fd);
		return 1;
	}
	start = t_now_ns();
	pid = fork();
	if (pid < 0) {
		perror("fork");
		close(fd);
		return 1;
	}
	if (!pid)
		_exit(syncfs(fd) ? 1 : 0);
	other_pid = pid;
	close(fd);
	while ((ret = waitpid(pid, &status, WNOHANG)) == 0) {
		waited = t_now_ns() - start;
		if (waited >= OTHER_S * 1000000000ULL) {
			fprintf(stderr, "syncfs of another file system waited %.1f s behind the stalled log's time items (still waiting; TEST_DIR %s)\n",
				waited / 1e9, t_test_dir());
			return 1;
		}
		msleep(20);
	}
	waited = t_now_ns() - start;
	if (ret < 0) {
		perror("waitpid");
		return 1;
	}
	other_pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "syncfs of TEST_DIR's file system failed\n");
		return 1;
	}
	/*
	 * The item ends (workqueue_execute_end) just after it lets syncfs()
	 * go on. The stalled file system queues nothing meanwhile (its
	 * writers stopped, its chmod thread is blocked) and must finish
	 * nothing.
	 */
	for (int i = 0; i < 1000; i++) {
		if (items(&q1, &e1))
			return 1;
		if (e1 - e0 >= q1 - q0)
			break;
		msleep(10);
	}
	if (q1 - q0 < 1 || e1 - e0 < q1 - q0) {
		fprintf(stderr, "syncfs of TEST_DIR's file system returned with its time item not run (%ld queued, %ld finished)\n",
			q1 - q0, e1 - e0);
		return 1;
	}
	if (e1 - e0 > q1 - q0) {
		fprintf(stderr, "%ld time items finished while the log was stalled: it did not hold them, nothing judged\n",
			e1 - e0 - (q1 - q0));
		return 1;
	}
	printf("other fs: a NOWAIT overwrite on TEST_DIR's file system queued %ld time item(s), %ld finished, syncfs returned in %.2f s, beside the stalled log's items\n",
	       q1 - q0, e1 - e0, waited / 1e9);
	return 0;
}

/*
 * Shut the file system down through @fd with a log flush and no data or
 * inode writeback (XFS_IOC_GOINGDOWN / EXT4_IOC_SHUTDOWN), close every file
 * the test holds open, unmount and mount again.
 */
static int shutdown_remount(int fd, const char *when)
{
	uint32_t flags = T_GOING_FLAGS_LOGFLUSH;
	int i, ret;

	if (ioctl(fd, T_IOC_GOINGDOWN, &flags)) {
		fprintf(stderr, "%s: shutdown ioctl: %s\n", when, strerror(errno));
		return 1;
	}
	for (i = 0; i < NTARGET; i++) {
		if (writers[i].fd >= 0)
			close(writers[i].fd);
		writers[i].fd = -1;
	}
	for (i = 0; i < NHOG; i++) {
		if (hog_fd[i] >= 0)
			close(hog_fd[i]);
		hog_fd[i] = -1;
	}
	for (i = 0; (ret = umount(MNT)) && errno == EBUSY && i < 50; i++)
		msleep(100);
	if (ret) {
		fprintf(stderr, "%s: umount after the shutdown: %s\n", when, strerror(errno));
		return 1;
	}
	mounted = 0;
	if (mount("/dev/mapper/" DM_NAME, MNT, fstype, 0, NULL)) {
		fprintf(stderr, "%s: remount: %s\n", when, strerror(errno));
		return 1;
	}
	mounted = 1;
	return 0;
}

/*
 * Are the mtime and ctime of MNT/@name on disk those of @mem, which stat
 * showed before the shutdown?  0, or 1 (printed, with @what).
 */
static int times_on_disk(const char *name, const struct stat *mem,
			 const char *what)
{
	char path[PATH_MAX];
	struct stat disk;

	snprintf(path, sizeof(path), MNT "/%s", name);
	if (stat(path, &disk)) {
		perror(path);
		return 1;
	}
	if (disk.st_mtim.tv_sec == mem->st_mtim.tv_sec &&
	    disk.st_mtim.tv_nsec == mem->st_mtim.tv_nsec &&
	    disk.st_ctim.tv_sec == mem->st_ctim.tv_sec &&
	    disk.st_ctim.tv_nsec == mem->st_ctim.tv_nsec)
		return 0;
	fprintf(stderr, "%s (%s): times not logged: on disk mtime %ld.%09ld ctime %ld.%09ld, stat before the shutdown %ld.%09ld / %ld.%09ld\n",
		name, what, (long)disk.st_mtim.tv_sec, disk.st_mtim.tv_nsec,
		(long)disk.st_ctim.tv_sec, disk.st_ctim.tv_nsec,
		(long)mem->st_mtim.tv_sec, mem->st_mtim.tv_nsec,
		(long)mem->st_ctim.tv_sec, mem->st_ctim.tv_nsec);
	return 1;
}

static int check_logged(void)
{
	struct stat mem[NTARGET], hot;
	char name[32];
	int i, bad = 0;

	for (i = 0; i < NTARGET / 2; i++)
		if (tick_write(writers[i].fd, "after the log resumed", 1000 + i))
			return 1;
	if (wait_drained("after the writes after the resume"))
		return 1;
	for (i = 0; i < NTARGET; i++) {
		if (fstat(writers[i].fd, &mem[i])) {
			perror("fstat");
			return 1;
		}
	}
	if (fstat(hog_fd[0], &hot)) {
		perror("fstat hog0");
		return 1;
	}
	if (shutdown_remount(writers[0].fd, "logged"))
		return 1;
	for (i = 0; i < NTARGET; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		bad |= times_on_disk(name, &mem[i], i < NTARGET / 2 ?
				     "written again after the resume" :
				     "last written during the stall");
	}
	/* Its last times were logged by the item its first one handed on. */
	bad |= times_on_disk("hog0", &hot,
			     "the hot file, last written during the stall");
	if (!bad)
		printf("logged: the mtime and ctime of every target and of the hot file were on disk after a log flush and a shutdown (%d targets last written during the stall, %d again after it)\n",
		       NTARGET - NTARGET / 2, NTARGET / 2);
	return bad;
}

struct churner {
	pthread_t thread;
	int fd, hot_fd;
	long ok, eagain, own_eagain, other;
	int err;
};

static void *churn_fn(void *arg)
{
	struct churner *c = arg;
	uint32_t gen = 5000;
	ssize_t ret;

	/* Leave the CPUs to the thread that stalls and resumes the log. */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19))
		perror("setpriority");
	while (!atomic_load(&stop_writers)) {
		ret = nowait_write(gen & 1 ? c->hot_fd : c->fd, gen);
		if (ret == WLEN) {
			c->ok++;
		} else if (ret < 0 && errno == EAGAIN) {
			/*
			 * Counted apart, not judged: the shared file's folios
			 * are written by every churner, and on either file
			 * something else may hold a folio locked across the
			 * stall (seen on ext4's own files, presumably its
			 * writeback waiting for a journal handle): a busy
			 * folio refuses RWF_NOWAIT.
			 */
			if (gen & 1)
				c->eagain++;
			else
				c->own_eagain++;
		} else {
			c->other++;
			c->err = ret < 0 ? errno : 0;
		}
		gen++;
	}
	return NULL;
}

/* Wait (max OTHER_S) for a child that calls syncfs(). */
static int wait_syncfs_child(pid_t pid)
{
	uint64_t start = t_now_ns();
	int status;
	pid_t ret;

	while ((ret = waitpid(pid, &status, WNOHANG)) == 0) {
		if (t_now_ns() - start >= OTHER_S * 1000000000ULL) {
			fprintf(stderr, "churn: syncfs() still waiting %d s after the log resumed\n",
				OTHER_S);
			return 1;
		}
		msleep(20);
	}
	if (ret < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "churn: syncfs() failed\n");
		return 1;
	}
	return 0;
}

/*
 * Churn, after the remount: NTARGET threads overwrite, with RWF_NOWAIT,
 * their own file and all the same hot file in turn, while the log stalls
 * for CHURN_STALL_MS again and again (the target suspended and resumed)
 * and a syncfs() runs across every other stall. Items block, hand
 * themselves on and are run in loops (patch 0047) and freed under the
 * debug kernel's KASAN. Then every item must finish, and the times stat
 * showed must be on disk after a log flush and a shutdown.
 */
static int check_churn(void)
{
	struct churner c[NTARGET];
	struct stat mem[NTARGET + 1];
	char path[PATH_MAX], buf[FSIZE];
	struct counts c0, c1;
	long ok = 0, eagain = 0, own_eagain = 0, other = 0;
	int i, rounds = 0, syncs = 0, bad = 0, created = 0, hot_fd;
	pid_t child = 0;
	uint64_t start, t, sync_max = 0;

	memset(c, 0, sizeof(c));
	/*
	 * A blocking write first, as setup did: an inode read back from the
	 * disk has its i_version marked queried, and a write that must bump
	 * it takes the blocking path (RWF_NOWAIT: -EAGAIN).
	 */
	t_fill_pattern(buf, FSIZE, 0, 3);
	hot_fd = open(MNT "/hog0", O_RDWR);
	if (hot_fd < 0 || pwrite(hot_fd, buf, FSIZE, 0) != FSIZE) {
		perror(MNT "/hog0");
		return 1;
	}
	hog_fd[0] = hot_fd;
	for (i = 0; i < NTARGET; i++) {
		snprintf(path, sizeof(path), MNT "/t%d", i);
		c[i].fd = writers[i].fd = open(path, O_RDWR);
		c[i].hot_fd = hot_fd;
		if (c[i].fd < 0 || pwrite(c[i].fd, buf, FSIZE, 0) != FSIZE) {
			perror(path);
			return 1;
		}
	}
	if (counts(&c0))
		return 1;
	atomic_store(&stop_writers, 0);
	for (i = 0; i < NTARGET; i++) {
		if (pthread_create(&c[i].thread, NULL, churn_fn, &c[i])) {
			perror("pthread_create");
			bad = 1;
			break;
		}
		created++;
	}
	start = t_now_ns();
	while (!bad && t_now_ns() - start < CHURN_MS * 1000000ULL) {
		if (start_watchdog() ||
		    sh(DM_ENV "dmsetup suspend --noflush --noudevsync " DM_NAME)) {
			bad = 1;
			break;
		}
		suspended = 1;
		if (!(rounds % 2)) {
			child = fork();
			if (child < 0) {
				perror("fork");
				bad = 1;
			} else if (!child) {
				_exit(syncfs(hot_fd) ? 1 : 0);
			}
			other_pid = child;
		}
		msleep(CHURN_STALL_MS);
		if (resume())
			bad = 1;
		if (child > 0) {
			t = t_now_ns();
			if (wait_syncfs_child(child))
				bad = 1;
			t = t_now_ns() - t;
			if (t > sync_max)
				sync_max = t;
			other_pid = child = 0;
			syncs++;
		}
		rounds++;
		msleep(50);
	}
	atomic_store(&stop_writers, 1);
	for (i = 0; i < created; i++) {
		pthread_join(c[i].thread, NULL);
		ok += c[i].ok;
		eagain += c[i].eagain;
		own_eagain += c[i].own_eagain;
		other += c[i].other;
		if (c[i].other)
			fprintf(stderr, "churn: writer %d: %ld writes failed, last error %s\n",
				i, c[i].other, t_errno_name(c[i].err));
	}
	if (bad || other || wait_drained("after the churn") || counts(&c1))
		return 1;
	if (!ok) {
		fprintf(stderr, "churn: no write succeeded (%ld -EAGAIN): nothing judged\n",
			eagain);
		return 1;
	}
	for (i = 0; i < NTARGET; i++)
		if (fstat(c[i].fd, &mem[i]))
			bad = 1;
	if (bad || fstat(hot_fd, &mem[NTARGET])) {
		perror("churn: fstat");
		return 1;
	}
	if (shutdown_remount(hot_fd, "churn"))
		return 1;
	for (i = 0; i <= NTARGET; i++) {
		if (i < NTARGET)
			snprintf(path, sizeof(path), "t%d", i);
		else
			snprintf(path, sizeof(path), "hog0");
		bad |= times_on_disk(path, &mem[i], "churn");
	}
	printf("churn: %ld RWF_NOWAIT overwrites (-EAGAIN: %ld on the shared file, %ld on the own ones) of %d files and a shared one over %d stalls of %d ms, %d syncfs() across them (at most %.2f s after the resume); time items queued %ld, started %ld, finished %ld; %s\n",
	       ok, eagain, own_eagain, NTARGET, rounds, CHURN_STALL_MS, syncs,
	       sync_max / 1e9, c1.queued - c0.queued, c1.started - c0.started,
	       c1.ended - c0.ended,
	       bad ? "times lost" : "every file's times on disk after a log flush and a shutdown");
	return bad;
}

/* A reader that splices an uncached range into a pipe. */
struct splicer {
	pthread_t thread;
	int fd;
	atomic_int tid;
	atomic_int done;
	ssize_t ret;
	int err;
};

static void *splice_fn(void *arg)
{
	struct splicer *sp = arg;
	loff_t off = SPLICE_FSIZE / 2;
	int p[2];

	atomic_store(&sp->tid, (int)syscall(SYS_gettid));
	if (pipe(p)) {
		sp->ret = -1;
		sp->err = errno;
	} else {
		sp->ret = splice(sp->fd, &off, p[1], NULL, SPLICE_LEN, 0);
		sp->err = errno;
		close(p[0]);
		close(p[1]);
	}
	atomic_store(&sp->done, 1);
	return NULL;
}

/* The state letter of thread @tid of this process ('D': uninterruptible). */
static char task_state(int tid)
{
	char path[64], line[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	p = strrchr(line, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * Splice, last: with the target suspended, a thread splices SPLICE_LEN
 * bytes of a file's range that is not cached into a pipe and blocks in
 * the read I/O, inside the file system's ->splice_read (XFS: holding
 * IOLOCK_SHARED, and until patch 0050 inside the overwrite gate, as a
 * reader); then SPLICE_WRITES plain io_uring overwrites of the file's
 * cached range must all complete, without a punt, while that reader is
 * still blocked. The splice reader orders nothing about the data it puts
 * in the pipe (references to page cache folios, read when the pipe is
 * drained), so it must not hold writers up. With the reader in the gate
 * the writes waited for it, from task_work, until the device came back;
 * 6.12 XFS punts them, and its io-wq workers wait for IOLOCK_EXCL.
 */
static int check_splice(void)
{
	static unsigned char buf[SPLICE_FSIZE];
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	struct splicer sp;
	long punts0, punts1, cached;
	int fd, i, ret, done = 0, failed = 0, bad = 0, started = 0, submitted = 0;
	char state = '?';
	uint64_t start;

	memset(&sp, 0, sizeof(sp));
	t_fill_pattern(buf, SPLICE_FSIZE, 0, 7);
	fd = open(MNT "/splice", O_CREAT | O_RDWR | O_TRUNC, 0644);
	/*
	 * Written SPLICE_LEN at a time, so that no large folio spans the
	 * two halves (XFS makes folios as large as a write) and the second
	 * can be dropped alone.
	 */
	for (i = 0; fd >= 0 && i < SPLICE_FSIZE / SPLICE_LEN; i++)
		if (pwrite(fd, buf + i * SPLICE_LEN, SPLICE_LEN,
			   (off_t)i * SPLICE_LEN) != SPLICE_LEN)
			break;
	if (fd < 0 || i < SPLICE_FSIZE / SPLICE_LEN ||
	    fsync(fd) || pread(fd, buf, SPLICE_FSIZE, 0) != SPLICE_FSIZE ||
	    posix_fadvise(fd, SPLICE_FSIZE / 2, SPLICE_FSIZE / 2,
			  POSIX_FADV_DONTNEED)) {
		perror(MNT "/splice");
		return 1;
	}
	sp.fd = fd;
	cached = t_cached_pages(fd, SPLICE_FSIZE / 2, SPLICE_FSIZE / 2);
	if (cached) {
		fprintf(stderr, "splice: %ld pages of the range to splice still cached after POSIX_FADV_DONTNEED: nothing judged\n",
			cached);
		return 1;
	}
	if (io_uring_queue_init(SPLICE_WRITES, &ring, 0)) {
		fprintf(stderr, "splice: io_uring_queue_init failed\n");
		return 1;
	}
	/* One write first: the file in io_uring use, its state set up. */
	if (t_uring_pwrite(&ring, fd, buf, WLEN, 0, 0) != WLEN ||
	    t_punts_start()) {
		io_uring_queue_exit(&ring);
		return 1;
	}
	punts0 = t_punts_read();
	if (punts0 < 0 || start_watchdog() ||
	    sh(DM_ENV "dmsetup suspend --noflush --noudevsync " DM_NAME)) {
		bad = 1;
		goto out;
	}
	suspended = 1;
	if (pthread_create(&sp.thread, NULL, splice_fn, &sp)) {
		perror("pthread_create");
		bad = 1;
		goto resume;
	}
	started = 1;
	/* Blocked in the read I/O: sleeping uninterruptibly (max 30 s). */
	for (i = 0; i < 3000 && !atomic_load(&sp.done); i++) {
		if (atomic_load(&sp.tid) &&
		    (state = task_state(atomic_load(&sp.tid))) == 'D')
			break;
		msleep(10);
	}
	if (state != 'D') {
		fprintf(stderr, "splice: the splice reader did not block in its read with the device suspended (%s, state %c): nothing judged\n",
			atomic_load(&sp.done) ? "returned" : "still running", state);
		bad = 1;
		goto resume;
	}
	for (i = 0; i < SPLICE_WRITES; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_write(sqe, fd, buf + (i + 1) * WLEN, WLEN,
				    (off_t)(i + 1) * WLEN);
		sqe->user_data = i;
	}
	ret = io_uring_submit(&ring);
	submitted = ret > 0 ? ret : 0;
	if (ret != SPLICE_WRITES) {
		fprintf(stderr, "splice: io_uring_submit: %d\n", ret);
		bad = 1;
		goto resume;
	}
	start = t_now_ns();
	while (done < SPLICE_WRITES &&
	       t_now_ns() - start < SPLICE_WAIT_S * 1000000000ULL) {
		struct __kernel_timespec ts = { 0, 100 * 1000000 };

		if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts))
			continue;
		if (cqe->res != WLEN)
			failed++;
		io_uring_cqe_seen(&ring, cqe);
		done++;
	}
	punts1 = t_punts_read();
	if (punts1 < 0) {
		fprintf(stderr, "splice: the punt count could not be read: nothing judged\n");
		bad = 1;
	} else if (atomic_load(&sp.done)) {
		fprintf(stderr, "splice: the splice reader returned with the device suspended: nothing judged\n");
		bad = 1;
	} else if (done < SPLICE_WRITES) {
		fprintf(stderr, "splice: %d of %d io_uring overwrites of cached data waited %d s for a splice reader blocked in its read of another range (%ld punted)\n",
			SPLICE_WRITES - done, SPLICE_WRITES, SPLICE_WAIT_S,
			punts1 - punts0);
		bad = 1;
	} else if (failed || punts1 != punts0) {
		fprintf(stderr, "splice: beside a splice reader blocked in its read, %d of %d io_uring overwrites failed and %ld were punted to io-wq\n",
			failed, SPLICE_WRITES, punts1 - punts0);
		bad = 1;
	}
resume:
	if (resume())
		bad = 1;
	if (started)
		pthread_join(sp.thread, NULL);
	while (done < submitted && !io_uring_wait_cqe(&ring, &cqe)) {
		io_uring_cqe_seen(&ring, cqe);
		done++;
	}
	if (!bad && started && sp.ret != SPLICE_LEN) {
		fprintf(stderr, "splice: the splice returned %zd (%s) after the device resumed\n",
			sp.ret, sp.ret < 0 ? t_errno_name(sp.err) : "short");
		bad = 1;
	}
	if (!bad)
		printf("splice: %d io_uring overwrites of cached data completed without a punt while a splice reader of the same file was blocked in its read I/O\n",
		       SPLICE_WRITES);
out:
	t_punts_stop();
	io_uring_queue_exit(&ring);
	close(fd);
	return bad;
}

int main(void)
{
	unsigned int stall_ms = t_env_uint("TEST_STALL_MS", 3000, 500, 30000);
	long q2, e2, ok = 0, eagain = 0, other = 0, ticks;
	long hot_started, hot_running;
	struct counts c0, ch, c1;
	int i, try, created = 0, blocked = 0, min_ticks;
	uint64_t start, end;
	char name[32];

	/*
	 * The test builds its own default-mount file system of TEST_FS's
	 * type, so on a lazytime config it repeats the default config's run
	 * but for the other-fs part, which needs TEST_DIR to queue items.
	 * The debug kernel runs it there anyway: CI boots it on xfs-lazytime
	 * and ext4 only, and XFS's time items would go without KASAN and
	 * lockdep otherwise.
	 */
	other_fs = !strstr(t_test_fs(), "lazytime");
	if (!other_fs && strcmp(getenv("TEST_FLAVOUR") ?: "", "debug")) {
		printf("skip: a lazytime config repeats the default config's run on its own default-mount file system (the debug kernel runs it: CI boots debug on xfs-lazytime)\n");
		return T_EXIT_SKIP;
	}
	if (!strncmp(t_test_fs(), "xfs", 3)) {
		fstype = "xfs";
		nmeta = NMETA_XFS;
	} else if (!strncmp(t_test_fs(), "ext4", 4)) {
		fstype = "ext4";
		nmeta = NMETA_EXT4;
	} else {
		fprintf(stderr, "TEST_FS %s: not xfs or ext4\n", t_test_fs());
		return T_EXIT_FAIL;
	}
	for (i = 0; i < NHOG; i++)
		hog_fd[i] = -1;
	for (i = 0; i < NTARGET; i++)
		writers[i].fd = -1;
	atexit(cleanup);
	if (setup())
		return T_EXIT_FAIL;

	if (start_watchdog() || quiesce())
		return T_EXIT_FAIL;
	if (sh(DM_ENV "dmsetup suspend --noflush --noudevsync " DM_NAME))
		return T_EXIT_FAIL;
	suspended = 1;
	if (pthread_create(&meta, NULL, meta_fn, NULL)) {
		perror("pthread_create");
		return T_EXIT_FAIL;
	}
	meta_started = 1;

	/*
	 * Fill the workqueue's running slots with items that block: first
	 * the hot file, hog 0, written at HOT_TICKS ticks in a row, whose
	 * first item blocks and whose later ones must not take more workers
	 * (at most one item of a file runs: patch 0047), then one write of
	 * each other hog. If items finish, the log had not stalled yet: the
	 * metadata thread goes on, wait again and queue new ones.
	 */
	for (try = 1;; try++) {
		if (wait_stalled() || counts(&c0))
			return T_EXIT_FAIL;
		for (i = 0; i < HOT_TICKS; i++)
			if (tick_write(hog_fd[0], "hot hog0", 100 * try + i))
				return T_EXIT_FAIL;
		if (settle(&ch, 200, 1))
			return T_EXIT_FAIL;
		for (i = 1; i < NHOG; i++) {
			snprintf(name, sizeof(name), "hog%d", i);
			if (tick_write(hog_fd[i], name, 100 * try + i))
				return T_EXIT_FAIL;
		}
		if (settle(&c1, 1000, NHOG))
			return T_EXIT_FAIL;
		/*
		 * A stalled log: every running slot holds an item that blocks
		 * (hog 0's first and the other hogs' with the fix, hog 0's
		 * alone without it), and nothing finished after the hot file's
		 * writes but the hand-off of its second item to its first.
		 */
		if (c1.started - c1.ended == NHOG && c1.ended == ch.ended &&
		    ch.ended - c0.ended <= 1)
			break;
		if (try == STALL_TRIES) {
			fprintf(stderr, "hogs: %ld time items queued, %ld started, %ld finished with the target suspended (%ld running in all, %d slots): the items did not block in %d tries, nothing judged\n",
				c1.queued - c0.queued, c1.started - c0.started,
				c1.ended - c0.ended, c1.started - c1.ended, NHOG, try);
			return T_EXIT_FAIL;
		}
		printf("hogs: %ld time items queued, %ld started, %ld finished (%ld running in all): the log had not stalled yet (try %d of %d)\n",
		       c1.queued - c0.queued, c1.started - c0.started,
		       c1.ended - c0.ended, c1.started - c1.ended, try, STALL_TRIES);
	}
	hot_started = ch.started - c0.started;
	hot_running = hot_started - (ch.ended - c0.ended);
	printf("hot: %d RWF_NOWAIT overwrites of hog0 a tick apart with the log stalled: %ld time items queued, %ld started, %ld of them still running (handed off: %ld)\n",
	       HOT_TICKS, ch.queued - c0.queued, hot_started, hot_running,
	       ch.ended - c0.ended);
	if (hot_started < 2) {
		fprintf(stderr, "hot: no second item of hog0 started while its first ran (%ld started): nothing judged\n",
			hot_started);
		return T_EXIT_FAIL;
	}
	/* Judged after the targets, so that a kernel that fails both says so. */
	if (hot_running > 1)
		fprintf(stderr, "one file's time items took %ld of the %d workers that may run at once, with the log stalled (at most one item of a file may run)\n",
			hot_running, NHOG);

	for (i = 0; i < NTARGET; i++) {
		if (pthread_create(&writers[i].thread, NULL, writer_fn, &writers[i])) {
			perror("pthread_create");
			return T_EXIT_FAIL;
		}
		created++;
	}
	start = t_now_ns();
	do {
		msleep(50);
		ticks = total_ticks(&min_ticks);
	} while (t_now_ns() - start < (uint64_t)stall_ms * 1000000 ||
		 ((ticks < MIN_TICKS || min_ticks < 2) &&
		  t_now_ns() - start < 30000ULL * 1000000));
	atomic_store(&stop_writers, 1);
	end = t_now_ns() + 5000ULL * 1000000;
	for (i = 0; i < created; i++) {
		while (!atomic_load(&writers[i].done) && t_now_ns() < end)
			msleep(10);
		if (!atomic_load(&writers[i].done)) {
			fprintf(stderr, "writer %d blocked: not done 5 s after its time, with the log stalled\n", i);
			blocked = 1;
		}
	}
	if (blocked)
		return T_EXIT_FAIL;
	for (i = 0; i < created; i++) {
		pthread_join(writers[i].thread, NULL);
		ok += writers[i].ok;
		eagain += writers[i].eagain;
		other += writers[i].other;
	}
	ticks = total_ticks(&min_ticks);
	if (items(&q2, &e2))
		return T_EXIT_FAIL;
	printf("%s: %ld RWF_NOWAIT overwrites of %d files in %.1f s, %ld -EAGAIN, %ld other, %ld mtime changes seen (at least %d per file); time items queued meanwhile %ld, finished %ld (the %d hogs' %ld queued, %ld finished)\n",
	       fstype, ok, NTARGET, (t_now_ns() - start) / 1e9, eagain, other,
	       ticks, min_ticks, q2 - c1.queued, e2 - c1.ended, NHOG,
	       c1.queued - c0.queued, c1.ended - c0.ended);
	if (eagain || other) {
		for (i = 0; i < created; i++)
			if (writers[i].other)
				fprintf(stderr, "writer %d: %ld writes failed, last error %s\n",
					i, writers[i].other, t_errno_name(writers[i].err));
		fprintf(stderr, "NOWAIT overwrites were refused while the log was stalled (-EAGAIN %ld, other %ld)\n",
			eagain, other);
		return T_EXIT_FAIL;
	}
	if (ticks < MIN_TICKS || min_ticks < 2) {
		fprintf(stderr, "only %ld mtime changes (at least %d per file; need %d, 2): too few to judge the items\n",
			ticks, min_ticks, MIN_TICKS);
		return T_EXIT_FAIL;
	}
	if (e2 != c1.ended) {
		fprintf(stderr, "%ld time items finished with the target suspended: the log did not stall them, nothing judged\n",
			e2 - c1.ended);
		return T_EXIT_FAIL;
	}
	if (q2 - c1.queued > NTARGET) {
		fprintf(stderr, "time work items piled up: %ld queued for %d files over %ld timestamp updates, with the log stalled (at most one waiting per file)\n",
			q2 - c1.queued, NTARGET, ticks);
		return T_EXIT_FAIL;
	}
	if (hot_running > 1)
		return T_EXIT_FAIL;

	if (!other_fs)
		printf("other fs: not run: TEST_DIR is mounted lazytime and queues no time items\n");
	else if (check_other_fs())
		return T_EXIT_FAIL;

	atomic_store(&stop_meta, 1);
	if (resume())
		return T_EXIT_FAIL;
	pthread_join(meta, NULL);
	meta_started = 0;
	if (wait_drained("after the log resumed"))
		return T_EXIT_FAIL;
	if (check_logged())
		return T_EXIT_FAIL;
	if (check_churn())
		return T_EXIT_FAIL;
	return check_splice() ? T_EXIT_FAIL : T_EXIT_PASS;
}
