/* SPDX-License-Identifier: MIT */
/*
 * Description: helpers shared by the tests and the benchmark (see helpers.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

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

static int t_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, s, strlen(s));
	close(fd);
	return ret < 0 ? -errno : 0;
}

int t_punts_start(void)
{
	int ret;

	/* A trigger left behind by a killed run would refuse a second one. */
	t_write_str(PUNT_EVENT "/trigger", "!" PUNT_TRIGGER);
	ret = t_write_str(PUNT_EVENT "/trigger", PUNT_TRIGGER);
	if (ret) {
		fprintf(stderr, "cannot install %s on %s/trigger: %s\n",
			PUNT_TRIGGER, PUNT_EVENT, strerror(-ret));
		return -1;
	}
	return 0;
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

void t_punts_stop(void)
{
	t_write_str(PUNT_EVENT "/trigger", "!" PUNT_TRIGGER);
}
