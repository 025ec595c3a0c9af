/* SPDX-License-Identifier: MIT */
/*
 * Description: write stamps for the atomicity tests. Every 64-bit word a
 *		write puts in the file is the write's stamp, so each word of
 *		the file names the write it came from, and a range that holds
 *		more than one stamp holds parts of more than one write.
 */
#ifndef URING_OVERWRITE_STAMP_H
#define URING_OVERWRITE_STAMP_H

#include <stddef.h>
#include <stdint.h>

/* Every stamped write starts and ends on a T_GRAIN boundary. */
#define T_GRAIN		512
/* The writer of the prefill. */
#define T_STAMP_FILL	0xff

/*
 * A stamp's fields, high to low: magic (8 bits, 0x80 | round number),
 * writer (8, T_STAMP_FILL for the prefill), length in grains (8), offset
 * in grains (16), sequence number within the writer and round (24, from
 * 1). @off and @len must be multiples of T_GRAIN.
 */
static inline uint64_t t_stamp(unsigned int magic, unsigned int writer,
			       uint32_t seq, uint32_t off, uint32_t len)
{
	return (uint64_t)magic << 56 | (uint64_t)writer << 48 |
	       (uint64_t)(len / T_GRAIN) << 40 |
	       (uint64_t)(off / T_GRAIN) << 24 | (seq & 0xffffff);
}

#define T_STAMP_MAGIC(s)	((unsigned int)((s) >> 56))
#define T_STAMP_WRITER(s)	((unsigned int)((s) >> 48) & 0xff)
#define T_STAMP_LEN(s)	((uint32_t)(((s) >> 40) & 0xff) * T_GRAIN)
#define T_STAMP_OFF(s)	((uint32_t)(((s) >> 24) & 0xffff) * T_GRAIN)
#define T_STAMP_SEQ(s)	((uint32_t)(s) & 0xffffff)

/*
 * The prefill writes the file in tiles of @tile bytes, tile n (from 0)
 * as write n + 1 of T_STAMP_FILL: the stamp of the tile holding @off.
 */
static inline uint64_t t_stamp_fill_tile(unsigned int magic, uint32_t tile,
					 uint32_t off)
{
	return t_stamp(magic, T_STAMP_FILL, off / tile + 1, off / tile * tile,
		       tile);
}

/* Put @stamp in each of the @len / 8 words of @buf. */
void t_stamp_fill(void *buf, uint32_t len, uint64_t stamp);

/* Does every word of the @len bytes at @buf hold the same stamp? */
int t_stamp_whole(const void *buf, uint32_t len);

/*
 * @s in words, in @buf: "w3#17 [0x4000+0x1000] r2", "fill#1 [...] r2",
 * or "junk <hex>" when its magic is not a round's. Returns @buf.
 */
const char *t_stamp_str(uint64_t s, char *buf, size_t size);

/*
 * Describe the @len bytes at @buf in @out, one indented line each: the
 * first stamp and where each of the next @max_changes changes of stamp
 * begins, then "..." if there are more. Returns the length written.
 */
int t_stamp_describe(char *out, size_t size, const void *buf, uint32_t len,
		     unsigned int max_changes);

/*
 * Truncate @fd and prefill [0, @size) in tiles of @tile bytes, each
 * holding its t_stamp_fill_tile() stamp of round @magic, then fsync.
 * Returns 0, or 1 after perror() (silently when out of memory).
 */
int t_stamp_prefill(int fd, unsigned int magic, uint32_t size, uint32_t tile);

#endif
