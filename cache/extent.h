/*
 * extent.h — a set of byte ranges [start, end) over a 64-bit file offset
 * space: the valid bytes of a cache object (and later its dirty bytes).
 *
 * Ranges are kept merged (overlapping or touching ranges become one), so a
 * file cached whole costs one range however large it is, and a page holding
 * valid bytes only in [wb_pgbase, wb_pgbase + wb_bytes) costs one range for
 * that part.  Page-level questions (is page N wholly uptodate up to EOF?) are
 * answered from the ranges.  Operations are O(log n) in the number of ranges
 * (a red-black tree, <bsd/sys/tree.h>).  Single-threaded; no I/O.
 *
 * A set of one range (most cache objects: a small file read whole) holds it
 * in struct extent_set itself and allocates nothing; the tree exists only
 * while the set holds two ranges or more.
 */
#ifndef NFSCACHED_EXTENT_H
#define NFSCACHED_EXTENT_H

#include <stddef.h>
#include <stdint.h>

struct extent_node;

/*
 * count and bytes are public (read-only outside extent.c); the union is
 * extent.c's alone and means what count says: nothing when count is 0, the
 * one range [first, first + bytes) when count is 1, the tree when count is 2
 * or more.  All zero bytes is an empty set.
 */
struct extent_set {
	union {
		struct extent_node *root;   /* count >= 2: RB tree root, keyed by start */
		uint64_t first;             /* count == 1: the range's first byte */
	} held;
	size_t count;               /* ranges held */
	uint64_t bytes;             /* sum of their lengths */
};

/* An empty set.  EXTENT_SET_INIT for static initialisation. */
#define EXTENT_SET_INIT { { NULL }, 0, 0 }
void extent_set_init(struct extent_set *s);

/* Remove every range and free the memory.  The set stays usable (empty). */
void extent_set_clear(struct extent_set *s);

/* Add [start, end) (no-op when start >= end), merging with overlapping and
 * touching ranges. */
void extent_set_add(struct extent_set *s, uint64_t start, uint64_t end);

/* Remove [start, end) (no-op when start >= end), splitting a range that
 * straddles it.  extent_set_remove(s, size, UINT64_MAX) truncates. */
void extent_set_remove(struct extent_set *s, uint64_t start, uint64_t end);

/* 1 when every byte of [start, end) is in the set (also when start >= end). */
int extent_set_covers(const struct extent_set *s, uint64_t start, uint64_t end);

/*
 * The first part of [start, end) not in the set: returns 1 and sets
 * [*gap_start, *gap_end) (the gap is clipped to [start, end)), or 0 when the
 * whole of [start, end) is covered.
 */
int extent_set_first_gap(const struct extent_set *s, uint64_t start, uint64_t end,
			 uint64_t *gap_start, uint64_t *gap_end);

/* 1 when page `page_index` of `page_size` bytes (a power of two) is wholly
 * uptodate: valid from its start up to the smaller of its end and `eof`.
 * A page wholly at or past EOF is not uptodate (it holds nothing). */
int extent_set_page_uptodate(const struct extent_set *s, uint64_t page_index,
			     uint64_t page_size, uint64_t eof);

/* Call fn(start, end, ctx) for each range in increasing order; stops early
 * and returns fn's value when it is nonzero, else returns 0.  `fn` must not
 * change the set. */
int extent_set_foreach(const struct extent_set *s,
		       int (*fn)(uint64_t start, uint64_t end, void *ctx), void *ctx);

#endif
