/*
 * extent.c — a set of byte ranges [start, end), kept merged, in a red-black
 * tree keyed by start (<bsd/sys/tree.h>).  It owns the nodes and the count
 * and byte totals; it knows nothing of files, pages on disk or I/O.  See
 * extent.h for the semantics.
 *
 * A set of one range holds it inline (struct extent_set's `held.first`, its
 * end being first + bytes) and no node.  The search code knows only trees:
 * a query sees a one-range set as a one-node tree built on its stack, and a
 * change moves the inline range into a node first (tree_unfold) and a tree
 * left with one node back inline at the end (tree_fold).  Adding to an empty
 * set, or a range overlapping or touching the one range, is done inline.
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
 * struct extent_set holds the bare root pointer (sharing its place with the
 * inline range) so that extent.h need not include tree.h.  The tree
 * functions want a struct extent_tree, so the root is copied into one and
 * back rather than type-punning the field.
 *
 * The set's ranges as a tree: its own tree when it holds two or more, an
 * empty one when none, and when it holds one, a tree of the single node
 * `one` (which must not be NULL then) set to that range.
 */
static struct extent_tree tree_of(const struct extent_set *s, struct extent_node *one)
{
	struct extent_tree t = RB_INITIALIZER(&t);

	if (s->count == 1) {
		assert(one != NULL);
		one->start = s->held.first;
		one->end = s->held.first + s->bytes;   /* a range's end: no overflow */
		RB_INSERT(extent_tree, &t, one);
	} else if (s->count >= 2) {
		t.rbh_root = s->held.root;
	}
	return t;
}

/* Before a change: the set's ranges as a tree of allocated nodes that the
 * change may insert into and delete from.  The set's union is stale until
 * tree_fold(); count and bytes are kept up to date by the change. */
static struct extent_tree tree_unfold(struct extent_set *s)
{
	return tree_of(s, s->count == 1 ? xmalloc(sizeof(struct extent_node)) : NULL);
}

/* After a change: store the tree `t` back in the set, a single node inline. */
static void tree_fold(struct extent_set *s, struct extent_tree *t)
{
	struct extent_node *n = RB_ROOT(t);

	if (s->count == 1) {
		assert(n && !RB_LEFT(n, entry) && !RB_RIGHT(n, entry));
		assert(n->end - n->start == s->bytes);
		s->held.first = n->start;
		free(n);
	} else {
		assert((s->count == 0) == (n == NULL));
		s->held.root = n;
	}
}

static struct extent_node *node_next(struct extent_node *n)
{
	return RB_NEXT(extent_tree, NULL, n);
}

/* The last range starting at or before `off`, or NULL when there is none. */
static struct extent_node *node_floor(struct extent_tree *t, uint64_t off)
{
	struct extent_node key = { .start = off };
	struct extent_node *n = RB_NFIND(extent_tree, t, &key);

	if (n && n->start == off)
		return n;
	return n ? RB_PREV(extent_tree, t, n) : RB_MAX(extent_tree, t);
}

/*
 * The first range with end >= off, or NULL when there is none.  Ranges
 * before the floor of `off` end before it starts, and the one after the
 * floor starts past `off`, so only the floor can end before `off` and still
 * be a candidate.
 */
static struct extent_node *node_first_end_from(struct extent_tree *t, uint64_t off)
{
	struct extent_node *n = node_floor(t, off);

	if (n && n->end >= off)
		return n;
	if (n)
		return node_next(n);
	return RB_MIN(extent_tree, t);
}

/* Between tree_unfold() and tree_fold(): insert [start, end) into `t`,
 * counted in s. */
static void node_insert(struct extent_set *s, struct extent_tree *t,
			uint64_t start, uint64_t end)
{
	struct extent_node *n = xmalloc(sizeof(*n));
	struct extent_node *dup;

	n->start = start;
	n->end = end;
	dup = RB_INSERT(extent_tree, t, n);
	assert(dup == NULL);   /* callers insert only into a gap */
	(void)dup;
	s->count++;
	s->bytes += end - start;
}

/* Between tree_unfold() and tree_fold(): delete and free `n`. */
static void node_delete(struct extent_set *s, struct extent_tree *t, struct extent_node *n)
{
	RB_REMOVE(extent_tree, t, n);
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
	s->held.root = NULL;
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
	if (s->count >= 2)
		node_free_tree(s->held.root);
	extent_set_init(s);
}

void extent_set_add(struct extent_set *s, uint64_t start, uint64_t end)
{
	struct extent_tree t;
	struct extent_node *n, *next;

	if (start >= end)
		return;
	if (s->count == 0) {
		s->held.first = start;
		s->count = 1;
		s->bytes = end - start;
		return;
	}
	if (s->count == 1 && start <= s->held.first + s->bytes && end >= s->held.first) {
		/* overlapping or touching the one range: it stays one, inline */
		uint64_t first = s->held.first < start ? s->held.first : start;
		uint64_t last = s->held.first + s->bytes > end ? s->held.first + s->bytes : end;

		s->held.first = first;
		s->bytes = last - first;
		return;
	}
	t = tree_unfold(s);
	/* the first range that overlaps or touches [start, end), if any */
	n = node_first_end_from(&t, start);
	if (!n || n->start > end) {
		node_insert(s, &t, start, end);
	} else {
		/* absorb every later range that overlaps or touches, then widen n */
		while ((next = node_next(n)) && next->start <= end) {
			if (next->end > end)
				end = next->end;
			node_delete(s, &t, next);
		}
		node_resize(s, n, n->start < start ? n->start : start,
			    n->end > end ? n->end : end);
	}
	tree_fold(s, &t);
}

void extent_set_remove(struct extent_set *s, uint64_t start, uint64_t end)
{
	struct extent_tree t;
	struct extent_node *n, *next;

	if (start >= end || s->count == 0)
		return;
	t = tree_unfold(s);
	/* the first range overlapping [start, end); start + 1 <= end, no overflow */
	n = node_first_end_from(&t, start + 1);
	for (; n && n->start < end; n = next) {
		next = node_next(n);
		if (n->start < start && n->end > end) {
			uint64_t tail_end = n->end;

			node_resize(s, n, n->start, start);
			node_insert(s, &t, end, tail_end);
			break;
		}
		if (n->start < start)
			node_resize(s, n, n->start, start);
		else if (n->end > end)
			node_resize(s, n, end, n->end);
		else
			node_delete(s, &t, n);
	}
	tree_fold(s, &t);
}

int extent_set_covers(const struct extent_set *s, uint64_t start, uint64_t end)
{
	struct extent_node one;
	struct extent_tree t;
	const struct extent_node *n;

	if (start >= end)
		return 1;
	t = tree_of(s, &one);
	/* merged ranges: a covered span lies inside a single range */
	n = node_floor(&t, start);
	return n && n->end >= end;
}

int extent_set_first_gap(const struct extent_set *s, uint64_t start, uint64_t end,
			 uint64_t *gap_start, uint64_t *gap_end)
{
	struct extent_node one;
	struct extent_tree t;
	struct extent_node *n;

	if (start >= end)
		return 0;
	t = tree_of(s, &one);
	n = node_first_end_from(&t, start + 1);
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
	struct extent_node one;
	struct extent_tree t = tree_of(s, &one);
	struct extent_node *n;
	int rc;

	RB_FOREACH(n, extent_tree, &t) {
		rc = fn(n->start, n->end, ctx);
		if (rc)
			return rc;
	}
	return 0;
}
