/* SPDX-License-Identifier: MIT */
/*
 * Description: write stamps for the atomicity tests (see stamp.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "stamp.h"

void t_stamp_fill(void *buf, uint32_t len, uint64_t stamp)
{
	uint64_t *p = buf;
	uint32_t i;

	for (i = 0; i < len / 8; i++)
		p[i] = stamp;
}

int t_stamp_whole(const void *buf, uint32_t len)
{
	const uint64_t *p = buf;
	uint32_t i;

	for (i = 1; i < len / 8; i++)
		if (p[i] != p[0])
			return 0;
	return 1;
}

const char *t_stamp_str(uint64_t s, char *buf, size_t size)
{
	if (T_STAMP_MAGIC(s) < 0x80)
		snprintf(buf, size, "junk %016llx", (unsigned long long)s);
	else if (T_STAMP_WRITER(s) == T_STAMP_FILL)
		snprintf(buf, size, "fill#%u [0x%x+0x%x] r%u", T_STAMP_SEQ(s),
			 T_STAMP_OFF(s), T_STAMP_LEN(s),
			 T_STAMP_MAGIC(s) & 0x7f);
	else
		snprintf(buf, size, "w%u#%u [0x%x+0x%x] r%u", T_STAMP_WRITER(s),
			 T_STAMP_SEQ(s), T_STAMP_OFF(s), T_STAMP_LEN(s),
			 T_STAMP_MAGIC(s) & 0x7f);
	return buf;
}

int t_stamp_describe(char *out, size_t size, const void *buf, uint32_t len,
		     unsigned int max_changes)
{
	const uint64_t *p = buf;
	unsigned int changes = 0;
	uint32_t i;
	char s[80];
	int n;

	n = snprintf(out, size, "    +0x%05x %s\n", 0,
		     t_stamp_str(p[0], s, sizeof(s)));
	for (i = 1; i < len / 8 && n < (int)size; i++) {
		if (p[i] == p[i - 1])
			continue;
		if (++changes > max_changes) {
			n += snprintf(out + n, size - n, "    ...\n");
			break;
		}
		n += snprintf(out + n, size - n, "    +0x%05x %s\n", i * 8,
			      t_stamp_str(p[i], s, sizeof(s)));
	}
	return n;
}

int t_stamp_prefill(int fd, unsigned int magic, uint32_t size, uint32_t tile)
{
	uint32_t off;
	void *buf;
	int ret = 0;

	if (posix_memalign(&buf, 4096, tile))
		return 1;
	if (ftruncate(fd, 0)) {
		perror("ftruncate");
		ret = 1;
	}
	for (off = 0; !ret && off < size; off += tile) {
		t_stamp_fill(buf, tile, t_stamp_fill_tile(magic, tile, off));
		if (pwrite(fd, buf, tile, off) != (ssize_t)tile) {
			perror("prefill pwrite");
			ret = 1;
		}
	}
	if (!ret && fsync(fd)) {
		perror("fsync");
		ret = 1;
	}
	free(buf);
	return ret;
}
