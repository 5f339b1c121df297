/*
 * extent.c — a set of byte ranges [start, end), kept merged, in a red-black
 * tree keyed by start (<bsd/sys/tree.h>).  It owns the nodes and the count
 * and byte totals; it knows nothing of files, pages on disk or I/O.  See
 * extent.h for the semantics.
 *
 * Because ranges never overlap or touch, their ends are in the same order as
 * their starts, so "the first range ending at or after x" is found with one
 * tree search, and a range can grow, shrink or move its start in place as
 * long as it stays between its neighbours.
 */
#include "config.h"

#include <assert.h>
#include <stdlib.h>

#include <bsd/sys/tree.h>

#include "cache/extent.h"
#include "common/xalloc.h"

struct extent_node {
	RB_ENTRY(extent_node) entry;
	uint64_t start;   /* first byte */
	uint64_t end;     /* one past the last byte; start < end */
};

RB_HEAD(extent_tree, extent_node);

static int node_cmp(const struct extent_node *a, const struct extent_node *b)
{
	return a->start < b->start ? -1 : a->start > b->start;
}

/* RB_GENERATE_STATIC would mark these functions `__unused`, which libbsd's
 * <bsd/sys/cdefs.h> leaves undefined (Linux headers use it as a member
 * name), so spell out its expansion with the attribute written in full. */
RB_GENERATE_INTERNAL(extent_tree, extent_node, entry, node_cmp,
		     __attribute__((unused)) static)

/*
 * struct extent_set holds the bare root pointer so that extent.h need not
 * include tree.h.  The tree functions want a struct extent_tree, so the root
 * is copied into one and back rather than type-punning the field.
 */
static struct extent_tree tree_of(const struct extent_set *s)
{
	struct extent_tree t = { s->root };

	return t;
}

static struct extent_node *node_next(struct extent_node *n)
{
	return RB_NEXT(extent_tree, NULL, n);
}

/* The last range starting at or before `off`, or NULL when there is none. */
static struct extent_node *node_floor(const struct extent_set *s, uint64_t off)
{
	struct extent_tree t = tree_of(s);
	struct extent_node key = { .start = off };
	struct extent_node *n = RB_NFIND(extent_tree, &t, &key);

	if (n && n->start == off)
		return n;
	return n ? RB_PREV(extent_tree, &t, n) : RB_MAX(extent_tree, &t);
}

/*
 * The first range with end >= off, or NULL when there is none.  Ranges
 * before the floor of `off` end before it starts, and the one after the
 * floor starts past `off`, so only the floor can end before `off` and still
 * be a candidate.
 */
static struct extent_node *node_first_end_from(const struct extent_set *s, uint64_t off)
{
	struct extent_node *n = node_floor(s, off);

	if (n && n->end >= off)
		return n;
	if (n)
		return node_next(n);
	struct extent_tree t = tree_of(s);
	return RB_MIN(extent_tree, &t);
}

static void node_insert(struct extent_set *s, uint64_t start, uint64_t end)
{
	struct extent_tree t = tree_of(s);
	struct extent_node *n = xmalloc(sizeof(*n));
	struct extent_node *dup;

	n->start = start;
	n->end = end;
	dup = RB_INSERT(extent_tree, &t, n);
	assert(dup == NULL);   /* callers insert only into a gap */
	(void)dup;
	s->root = RB_ROOT(&t);
	s->count++;
	s->bytes += end - start;
}

static void node_delete(struct extent_set *s, struct extent_node *n)
{
	struct extent_tree t = tree_of(s);

	RB_REMOVE(extent_tree, &t, n);
	s->root = RB_ROOT(&t);
	s->count--;
	s->bytes -= n->end - n->start;
	free(n);
}

/* Give `n` new bounds; the caller keeps it between its neighbours, so the
 * tree order holds without a reinsert.  Unsigned arithmetic wraps, so the
 * order of the two byte adjustments does not matter: the result is exact. */
static void node_resize(struct extent_set *s, struct extent_node *n,
			uint64_t start, uint64_t end)
{
	s->bytes -= n->end - n->start;
	n->start = start;
	n->end = end;
	s->bytes += end - start;
}

void extent_set_init(struct extent_set *s)
{
	s->root = NULL;
	s->count = 0;
	s->bytes = 0;
}

/* Post-order, without rebalancing: the whole tree goes.  The depth is at
 * most 2 log2(n + 1), so the recursion is shallow. */
static void node_free_tree(struct extent_node *n)
{
	if (!n)
		return;
	node_free_tree(RB_LEFT(n, entry));
	node_free_tree(RB_RIGHT(n, entry));
	free(n);
}

void extent_set_clear(struct extent_set *s)
{
	node_free_tree(s->root);
	extent_set_init(s);
}

void extent_set_add(struct extent_set *s, uint64_t start, uint64_t end)
{
	struct extent_node *n, *next;

	if (start >= end)
		return;
	/* the first range that overlaps or touches [start, end), if any */
	n = node_first_end_from(s, start);
	if (!n || n->start > end) {
		node_insert(s, start, end);
		return;
	}
	/* absorb every later range that overlaps or touches, then widen n */
	while ((next = node_next(n)) && next->start <= end) {
		if (next->end > end)
			end = next->end;
		node_delete(s, next);
	}
	node_resize(s, n, n->start < start ? n->start : start,
		    n->end > end ? n->end : end);
}

void extent_set_remove(struct extent_set *s, uint64_t start, uint64_t end)
{
	struct extent_node *n, *next;

	if (start >= end)
		return;
	/* the first range overlapping [start, end); start + 1 <= end, no overflow */
	n = node_first_end_from(s, start + 1);
	for (; n && n->start < end; n = next) {
		next = node_next(n);
		if (n->start < start && n->end > end) {
			uint64_t tail_end = n->end;

			node_resize(s, n, n->start, start);
			node_insert(s, end, tail_end);
			return;
		}
		if (n->start < start)
			node_resize(s, n, n->start, start);
		else if (n->end > end)
			node_resize(s, n, end, n->end);
		else
			node_delete(s, n);
	}
}

int extent_set_covers(const struct extent_set *s, uint64_t start, uint64_t end)
{
	const struct extent_node *n;

	if (start >= end)
		return 1;
	/* merged ranges: a covered span lies inside a single range */
	n = node_floor(s, start);
	return n && n->end >= end;
}

int extent_set_first_gap(const struct extent_set *s, uint64_t start, uint64_t end,
			 uint64_t *gap_start, uint64_t *gap_end)
{
	struct extent_node *n;

	if (start >= end)
		return 0;
	n = node_first_end_from(s, start + 1);
	if (n && n->start <= start) {
		/* n holds `start`; the gap, if any, begins where n ends */
		if (n->end >= end)
			return 0;
		start = n->end;
		n = node_next(n);
	}
	*gap_start = start;
	*gap_end = n && n->start < end ? n->start : end;
	return 1;
}

int extent_set_page_uptodate(const struct extent_set *s, uint64_t page_index,
			     uint64_t page_size, uint64_t eof)
{
	uint64_t page_start, len;

	assert(page_size != 0 && (page_size & (page_size - 1)) == 0);
	/* a page starting at or past 2^64 is past any EOF */
	if (page_index > UINT64_MAX / page_size)
		return 0;
	page_start = page_index * page_size;
	if (page_start >= eof)
		return 0;
	/* clipping at EOF first keeps page_start + len <= eof: no overflow */
	len = eof - page_start < page_size ? eof - page_start : page_size;
	return extent_set_covers(s, page_start, page_start + len);
}

int extent_set_foreach(const struct extent_set *s,
		       int (*fn)(uint64_t start, uint64_t end, void *ctx), void *ctx)
{
	struct extent_tree t = tree_of(s);
	struct extent_node *n;
	int rc;

	RB_FOREACH(n, extent_tree, &t) {
		rc = fn(n->start, n->end, ctx);
		if (rc)
			return rc;
	}
	return 0;
}
