/*
 * test_extent.c — sets of byte ranges (cache/extent.c): add and merge,
 * remove and split, covers, first_gap, page_uptodate up to EOF and across the
 * 64-bit range, foreach order and early stop, exact count and bytes and the
 * red-black invariants after every change, no node held by a set of one
 * range (nor leaked by any), a randomized comparison with a byte map (also
 * in a window small enough that the set goes between none, one and many
 * ranges all the time), and a timing diagnostic at cache scale.
 */
#include <stdlib.h>
#include <time.h>

#include "common/xalloc.h"

/*
 * Nodes extent.c holds now: its xmalloc and free calls (all of them for
 * nodes) are renamed to these while extent.c is included.  The tests hold
 * one set with nodes at a time, so this must equal that set's node count.
 */
static long nodes_live;

static void *counted_xmalloc(size_t size)
{
	nodes_live++;
	return xmalloc(size);
}

static void counted_free(void *p)
{
	if (p)
		nodes_live--;
	free(p);
}

#define xmalloc counted_xmalloc
#define free counted_free
#include "cache/extent.c"
#undef xmalloc
#undef free

#include "tests/unit/tap.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)
#define KiB (UINT64_C(1) << 10)

/* ------------------------------------------------------------------ */
/* checking a whole set                                                 */

/* Black height of the subtree at `n` (NULL leaves count 1), or -1 when a
 * parent link is wrong, a red node has a red parent, or two paths differ. */
static int rb_black_height(const struct extent_node *n, const struct extent_node *parent)
{
	int l, r;

	if (!n)
		return 1;
	if (RB_PARENT(n, entry) != parent)
		return -1;
	if (RB_COLOR(n, entry) == RB_RED && parent && RB_COLOR(parent, entry) == RB_RED)
		return -1;
	l = rb_black_height(RB_LEFT(n, entry), n);
	r = rb_black_height(RB_RIGHT(n, entry), n);
	if (l < 0 || r < 0 || l != r)
		return -1;
	return l + (RB_COLOR(n, entry) == RB_BLACK);
}

static size_t rb_nodes(const struct extent_node *n)
{
	return n ? 1 + rb_nodes(RB_LEFT(n, entry)) + rb_nodes(RB_RIGHT(n, entry)) : 0;
}

static int rb_depth(const struct extent_node *n)
{
	int l, r;

	if (!n)
		return 0;
	l = rb_depth(RB_LEFT(n, entry));
	r = rb_depth(RB_RIGHT(n, entry));
	return 1 + (l > r ? l : r);
}

struct walk {
	size_t count;
	uint64_t bytes;
	uint64_t prev_end;
	int bad;          /* an empty range, or one not after and apart from the previous */
};

static int walk_cb(uint64_t start, uint64_t end, void *ctx)
{
	struct walk *w = ctx;

	if (start >= end || (w->count && start <= w->prev_end))
		w->bad = 1;
	w->count++;
	w->bytes += end - start;
	w->prev_end = end;
	return 0;
}

/* 1 when the set is well formed: ranges non-empty, increasing and apart
 * (merged), count and bytes equal to what they hold, a valid red-black tree
 * of `count` nodes when it holds two ranges or more, and no node at all
 * (none allocated) when it holds one or none.  Otherwise 0, with the reason
 * as a diag.  `s` must be the only set holding nodes. */
static int set_valid(const struct extent_set *s)
{
	struct walk w = { 0, 0, 0, 0 };
	long want_nodes = s->count >= 2 ? (long)s->count : 0;

	if (nodes_live != want_nodes) {
		diag("    %zu ranges held in %ld nodes, expected %ld", s->count, nodes_live,
		     want_nodes);
		return 0;
	}
	if (s->count >= 2 && RB_COLOR(s->held.root, entry) != RB_BLACK) {
		diag("    root is red");
		return 0;
	}
	if (s->count >= 2 && (rb_black_height(s->held.root, NULL) < 0 ||
			      rb_nodes(s->held.root) != s->count)) {
		diag("    red-black invariant broken, or not count nodes");
		return 0;
	}
	extent_set_foreach(s, walk_cb, &w);
	if (w.bad) {
		diag("    ranges not merged, empty or out of order");
		return 0;
	}
	if (w.count != s->count || w.bytes != s->bytes) {
		diag("    count %zu bytes %" PRIu64 ", but the ranges make %zu and %" PRIu64,
		     s->count, s->bytes, w.count, w.bytes);
		return 0;
	}
	return 1;
}

#define MAXR 16

struct collected {
	size_t n;                 /* ranges seen (may exceed MAXR) */
	uint64_t r[MAXR][2];      /* the first MAXR of them */
	size_t stop_at;           /* return stop_rc on this call (1-based); 0: never */
	int stop_rc;
};

static int collect_cb(uint64_t start, uint64_t end, void *ctx)
{
	struct collected *c = ctx;

	if (c->n < MAXR) {
		c->r[c->n][0] = start;
		c->r[c->n][1] = end;
	}
	c->n++;
	return c->stop_at && c->n == c->stop_at ? c->stop_rc : 0;
}

static void diag_ranges(const char *what, const uint64_t (*r)[2], size_t n)
{
	char line[1024];
	size_t len = 0;

	line[0] = '\0';
	for (size_t i = 0; i < n && i < MAXR && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " [%" PRIu64 ",%" PRIu64 ")",
					r[i][0], r[i][1]);
	diag("    %s:%s", what, line);
}

/* One test point: the set holds exactly want[0..n) and is well formed. */
static int expect_ranges(const struct extent_set *s, const uint64_t (*want)[2], size_t n,
			 const char *name)
{
	struct collected c = { 0 };
	uint64_t bytes = 0;
	int same;

	extent_set_foreach(s, collect_cb, &c);
	same = c.n == n && s->count == n;
	for (size_t i = 0; same && i < n; i++) {
		same = c.r[i][0] == want[i][0] && c.r[i][1] == want[i][1];
		bytes += want[i][1] - want[i][0];
	}
	same = same && s->bytes == bytes;
	if (!ok(same && set_valid(s), "%s", name) && !same) {
		diag_ranges("got", (const uint64_t (*)[2])c.r, c.n);
		diag_ranges("expected", want, n);
		diag("    count %zu, bytes %" PRIu64, s->count, s->bytes);
	}
	return same;
}

#define EXPECT(s, name, ...)							\
	expect_ranges((s), (const uint64_t[][2]){ __VA_ARGS__ },		\
		      sizeof((const uint64_t[][2]){ __VA_ARGS__ }) / sizeof(uint64_t[2]), \
		      (name))
#define EXPECT_EMPTY(s, name) expect_ranges((s), NULL, 0, (name))

/* ------------------------------------------------------------------ */
/* fixed cases                                                          */

static void test_add(void)
{
	struct extent_set s;

	extent_set_init(&s);
	EXPECT_EMPTY(&s, "add: a new set is empty");
	extent_set_add(&s, 5, 5);
	extent_set_add(&s, 9, 3);
	EXPECT_EMPTY(&s, "add: start >= end is a no-op");
	extent_set_add(&s, 10, 20);
	EXPECT(&s, "add: one range", { 10, 20 });
	extent_set_add(&s, 15, 25);
	EXPECT(&s, "add: overlapping the end merges", { 10, 25 });
	extent_set_add(&s, 5, 12);
	EXPECT(&s, "add: overlapping the start merges", { 5, 25 });
	extent_set_add(&s, 25, 30);
	EXPECT(&s, "add: touching the end merges", { 5, 30 });
	extent_set_add(&s, 0, 5);
	EXPECT(&s, "add: touching the start merges", { 0, 30 });
	extent_set_add(&s, 12, 18);
	extent_set_add(&s, 0, 30);
	EXPECT(&s, "add: contained and equal ranges change nothing", { 0, 30 });

	extent_set_add(&s, 80, 90);
	extent_set_add(&s, 40, 50);
	extent_set_add(&s, 100, 110);
	extent_set_add(&s, 60, 70);
	EXPECT(&s, "add: disjoint ranges stay apart, in order",
	       { 0, 30 }, { 40, 50 }, { 60, 70 }, { 80, 90 }, { 100, 110 });
	extent_set_add(&s, 31, 39);
	EXPECT(&s, "add: inside a gap, touching neither side",
	       { 0, 30 }, { 31, 39 }, { 40, 50 }, { 60, 70 }, { 80, 90 }, { 100, 110 });
	extent_set_add(&s, 45, 85);
	EXPECT(&s, "add: bridging three, from inside one to inside another",
	       { 0, 30 }, { 31, 39 }, { 40, 90 }, { 100, 110 });
	extent_set_add(&s, 30, 31);
	EXPECT(&s, "add: a one-byte gap filled joins both neighbours",
	       { 0, 39 }, { 40, 90 }, { 100, 110 });
	extent_set_add(&s, 90, 100);
	EXPECT(&s, "add: exactly a gap, touching both sides", { 0, 39 }, { 40, 110 });
	extent_set_add(&s, 35, 120);
	EXPECT(&s, "add: covering several and extending past the last", { 0, 120 });

	extent_set_clear(&s);
	extent_set_add(&s, 10, 20);
	extent_set_add(&s, 30, 40);
	extent_set_add(&s, 50, 60);
	extent_set_add(&s, 5, 65);
	EXPECT(&s, "add: swallowing several from outside both ends", { 5, 65 });

	extent_set_clear(&s);
	for (uint64_t i = 0; i < 1000; i++)
		extent_set_add(&s, i * 10, i * 10 + 5);
	is_int(s.count, 1000, "add: 1000 disjoint ranges counted");
	ok(set_valid(&s) && s.bytes == 5000, "add: 1000 disjoint ranges, 5000 bytes");
	extent_set_add(&s, 3, 9993);
	EXPECT(&s, "add: bridging 1000 ranges leaves one", { 0, 9995 });

	extent_set_add(&s, UINT64_MAX - 10, UINT64_MAX);
	EXPECT(&s, "add: a range ending at UINT64_MAX", { 0, 9995 }, { UINT64_MAX - 10, UINT64_MAX });
	extent_set_add(&s, 9995, UINT64_MAX - 10);
	EXPECT(&s, "add: the whole 64-bit space is one range of UINT64_MAX bytes",
	       { 0, UINT64_MAX });
	extent_set_add(&s, 0, UINT64_MAX);
	extent_set_add(&s, UINT64_MAX - 1, UINT64_MAX);
	EXPECT(&s, "add: into the full space changes nothing", { 0, UINT64_MAX });
	extent_set_clear(&s);
}

static void test_remove(void)
{
	struct extent_set s = EXTENT_SET_INIT;

	extent_set_add(&s, 0, 100);
	extent_set_remove(&s, 40, 60);
	EXPECT(&s, "remove: the middle splits a range", { 0, 40 }, { 60, 100 });
	extent_set_remove(&s, 0, 10);
	EXPECT(&s, "remove: the left edge", { 10, 40 }, { 60, 100 });
	extent_set_remove(&s, 90, 100);
	EXPECT(&s, "remove: the right edge", { 10, 40 }, { 60, 90 });
	extent_set_remove(&s, 40, 60);
	extent_set_remove(&s, 0, 10);
	extent_set_remove(&s, 90, 1000);
	EXPECT(&s, "remove: gaps, touching ranges only, are a no-op", { 10, 40 }, { 60, 90 });
	extent_set_remove(&s, 30, 30);
	extent_set_remove(&s, 70, 20);
	EXPECT(&s, "remove: start >= end is a no-op", { 10, 40 }, { 60, 90 });
	extent_set_remove(&s, 35, 65);
	EXPECT(&s, "remove: straddling a gap trims both neighbours", { 10, 35 }, { 65, 90 });
	extent_set_remove(&s, 65, 90);
	EXPECT(&s, "remove: exactly one range deletes it", { 10, 35 });
	extent_set_remove(&s, 11, 12);
	EXPECT(&s, "remove: one byte from inside", { 10, 11 }, { 12, 35 });

	extent_set_clear(&s);
	for (uint64_t i = 0; i < 5; i++)
		extent_set_add(&s, i * 20, i * 20 + 10);
	extent_set_remove(&s, 5, 65);
	EXPECT(&s, "remove: across several, ends trimmed and the middle ones gone",
	       { 0, 5 }, { 65, 70 }, { 80, 90 });
	extent_set_remove(&s, 0, 100);
	EXPECT_EMPTY(&s, "remove: everything");

	extent_set_add(&s, 0, 4096);
	extent_set_add(&s, 8192, 12288);
	extent_set_add(&s, UINT64_C(1) << 40, (UINT64_C(1) << 40) + 4096);
	extent_set_add(&s, UINT64_MAX - 1, UINT64_MAX);
	extent_set_remove(&s, 6000, UINT64_MAX);
	EXPECT(&s, "remove(size, UINT64_MAX) truncates, ranges up to UINT64_MAX included",
	       { 0, 4096 });
	extent_set_remove(&s, 100, UINT64_MAX);
	EXPECT(&s, "remove: truncating inside a range", { 0, 100 });
	extent_set_remove(&s, 0, UINT64_MAX);
	EXPECT_EMPTY(&s, "remove: truncating to 0");

	extent_set_add(&s, 0, UINT64_MAX);
	extent_set_remove(&s, 1, UINT64_MAX - 1);
	EXPECT(&s, "remove: from the full space, split near both ends",
	       { 0, 1 }, { UINT64_MAX - 1, UINT64_MAX });
	extent_set_add(&s, 0, UINT64_MAX);
	extent_set_remove(&s, 4 * GiB, 4 * GiB + 1);
	EXPECT(&s, "remove: one byte at 4 GiB from the full space",
	       { 0, 4 * GiB }, { 4 * GiB + 1, UINT64_MAX });
	extent_set_remove(&s, UINT64_MAX - 1, UINT64_MAX);
	EXPECT(&s, "remove: the last byte below UINT64_MAX",
	       { 0, 4 * GiB }, { 4 * GiB + 1, UINT64_MAX - 1 });
	extent_set_clear(&s);
}

static void test_covers(void)
{
	struct extent_set s = EXTENT_SET_INIT;

	ok(!extent_set_covers(&s, 0, 1), "covers: empty set covers no byte");
	ok(extent_set_covers(&s, 7, 7), "covers: empty set covers an empty range");
	extent_set_add(&s, 10, 20);
	extent_set_add(&s, 30, 40);
	extent_set_add(&s, UINT64_MAX - 100, UINT64_MAX);
	ok(extent_set_covers(&s, 10, 20), "covers: exactly a range");
	ok(extent_set_covers(&s, 12, 18), "covers: inside a range");
	ok(extent_set_covers(&s, 10, 11) && extent_set_covers(&s, 19, 20),
	   "covers: first and last byte");
	ok(!extent_set_covers(&s, 9, 11), "covers: not when starting one byte early");
	ok(!extent_set_covers(&s, 19, 21), "covers: not when ending one byte late");
	ok(!extent_set_covers(&s, 10, 40), "covers: not across a gap");
	ok(!extent_set_covers(&s, 20, 30) && !extent_set_covers(&s, 25, 26),
	   "covers: not the gap itself");
	ok(!extent_set_covers(&s, 0, 5) && !extent_set_covers(&s, 50, 60),
	   "covers: not before the first or after a range");
	ok(extent_set_covers(&s, 15, 15) && extent_set_covers(&s, 40, 10),
	   "covers: start >= end is covered");
	ok(extent_set_covers(&s, UINT64_MAX - 100, UINT64_MAX), "covers: a range ending at UINT64_MAX");
	ok(!extent_set_covers(&s, UINT64_MAX - 101, UINT64_MAX), "covers: not one byte before it");
	extent_set_add(&s, 20, 30);
	ok(extent_set_covers(&s, 10, 40), "covers: across the gap once it is filled");
	extent_set_clear(&s);
}

static void is_gap(const struct extent_set *s, uint64_t start, uint64_t end,
		   int want, uint64_t want_start, uint64_t want_end, const char *name)
{
	uint64_t g0 = 0xdead, g1 = 0xbeef;
	int rc = extent_set_first_gap(s, start, end, &g0, &g1);

	if (!want) {
		is_int(rc, 0, "first_gap: %s", name);
		return;
	}
	if (!ok(rc == 1 && g0 == want_start && g1 == want_end, "first_gap: %s", name))
		diag("    got %d [%" PRIu64 ",%" PRIu64 "), expected 1 [%" PRIu64 ",%" PRIu64 ")",
		     rc, g0, g1, want_start, want_end);
}

static void test_first_gap(void)
{
	struct extent_set s = EXTENT_SET_INIT;

	is_gap(&s, 5, 9, 1, 5, 9, "empty set: the whole query");
	is_gap(&s, 5, 5, 0, 0, 0, "empty query: no gap");
	extent_set_add(&s, 10, 20);
	extent_set_add(&s, 30, 40);
	extent_set_add(&s, 50, 60);
	is_gap(&s, 0, 100, 1, 0, 10, "before the first range");
	is_gap(&s, 10, 100, 1, 20, 30, "from a range's start: after it");
	is_gap(&s, 15, 100, 1, 20, 30, "from inside a range: after it");
	is_gap(&s, 20, 100, 1, 20, 30, "from a range's end");
	is_gap(&s, 25, 35, 1, 25, 30, "from inside a gap: up to the next range");
	is_gap(&s, 22, 25, 1, 22, 25, "inside a gap: the whole query");
	is_gap(&s, 35, 45, 1, 40, 45, "clipped at the query's end");
	is_gap(&s, 5, 8, 1, 5, 8, "before everything, clipped");
	is_gap(&s, 55, 70, 1, 60, 70, "after the last range");
	is_gap(&s, 12, 18, 0, 0, 0, "inside a range: none");
	is_gap(&s, 30, 40, 0, 0, 0, "exactly a range: none");
	is_gap(&s, 90, 3, 0, 0, 0, "start >= end: none");

	uint64_t got[8][2], a = 0, g0, g1;
	size_t n = 0;
	while (n < 8 && extent_set_first_gap(&s, a, 100, &g0, &g1)) {
		got[n][0] = g0;
		got[n][1] = g1;
		n++;
		a = g1;
	}
	const uint64_t want[4][2] = { { 0, 10 }, { 20, 30 }, { 40, 50 }, { 60, 100 } };
	ok(n == 4 && memcmp(got, want, sizeof(want)) == 0,
	   "first_gap: walking [0,100) finds the four gaps in order");

	extent_set_clear(&s);
	extent_set_add(&s, 0, 100);
	is_gap(&s, 50, UINT64_MAX, 1, 100, UINT64_MAX, "a gap up to UINT64_MAX");
	extent_set_add(&s, UINT64_MAX - 100, UINT64_MAX);
	is_gap(&s, UINT64_MAX - 200, UINT64_MAX, 1, UINT64_MAX - 200, UINT64_MAX - 100,
	       "a gap just below a range ending at UINT64_MAX");
	is_gap(&s, UINT64_MAX - 50, UINT64_MAX, 0, 0, 0, "none inside a range ending at UINT64_MAX");
	extent_set_add(&s, 0, UINT64_MAX);
	is_gap(&s, 0, UINT64_MAX, 0, 0, 0, "none in the full space");
	extent_set_clear(&s);
}

static void test_page_uptodate(void)
{
	const uint64_t P = 4096;
	const uint64_t last = UINT64_MAX / P;   /* the page at 2^64 - 4096 */
	struct extent_set s = EXTENT_SET_INIT;

	ok(!extent_set_page_uptodate(&s, 0, P, 100), "page: empty set, page 0 not uptodate");
	extent_set_add(&s, 0, 10000);
	ok(extent_set_page_uptodate(&s, 0, P, 10000) && extent_set_page_uptodate(&s, 1, P, 10000),
	   "page: whole pages below EOF");
	ok(extent_set_page_uptodate(&s, 2, P, 10000), "page: partial last page valid up to EOF");
	ok(!extent_set_page_uptodate(&s, 3, P, 10000), "page: a page wholly past EOF is not");
	ok(!extent_set_page_uptodate(&s, 2, P, 10001), "page: one byte short of EOF is not");
	ok(extent_set_page_uptodate(&s, 1, P, 8192), "page: the page ending exactly at EOF");
	ok(!extent_set_page_uptodate(&s, 2, P, 8192), "page: the page starting exactly at EOF is not");
	ok(!extent_set_page_uptodate(&s, 0, P, 0), "page: with EOF 0 no page is");
	extent_set_add(&s, 0, MiB);
	ok(!extent_set_page_uptodate(&s, 1, P, 4096),
	   "page: past EOF is not, even with its bytes in the set");

	extent_set_clear(&s);
	extent_set_add(&s, 1000, 2000);
	ok(!extent_set_page_uptodate(&s, 0, P, MiB), "page: valid only in [1000,2000) is not");
	ok(!extent_set_page_uptodate(&s, 0, P, 2000), "page: nor with EOF at 2000");
	extent_set_add(&s, 0, 1000);
	ok(extent_set_page_uptodate(&s, 0, P, 2000), "page: valid from its start up to EOF 2000");
	ok(!extent_set_page_uptodate(&s, 0, P, 2001), "page: not with EOF one byte further");

	extent_set_clear(&s);
	extent_set_add(&s, 4 * GiB - P, 4 * GiB + P);
	ok(extent_set_page_uptodate(&s, 4 * GiB / P - 1, P, UINT64_MAX) &&
	   extent_set_page_uptodate(&s, 4 * GiB / P, P, UINT64_MAX),
	   "page: the pages either side of 4 GiB");
	ok(!extent_set_page_uptodate(&s, 4 * GiB / P + 1, P, UINT64_MAX),
	   "page: the next one is not");
	extent_set_clear(&s);
	extent_set_add(&s, 0, P);
	ok(!extent_set_page_uptodate(&s, 4 * GiB / P, P, UINT64_MAX),
	   "page: page at 4 GiB is not page 0 (no 32-bit wrap)");
	extent_set_add(&s, 4 * GiB, 4 * GiB + 100);
	ok(extent_set_page_uptodate(&s, 4 * GiB / P, P, 4 * GiB + 100),
	   "page: partial last page just past 4 GiB");

	extent_set_clear(&s);
	extent_set_add(&s, last * P, UINT64_MAX);
	ok(extent_set_page_uptodate(&s, last, P, UINT64_MAX),
	   "page: the last page of the 64-bit space, clipped at EOF UINT64_MAX");
	ok(extent_set_page_uptodate(&s, last, P, UINT64_MAX - 1),
	   "page: the last page with EOF UINT64_MAX - 1");
	extent_set_remove(&s, UINT64_MAX - 1, UINT64_MAX);
	ok(!extent_set_page_uptodate(&s, last, P, UINT64_MAX),
	   "page: the last page missing its last byte is not");

	extent_set_add(&s, 0, UINT64_MAX);
	ok(!extent_set_page_uptodate(&s, last + 1, P, UINT64_MAX),
	   "page: a page starting at 2^64 does not exist");
	ok(!extent_set_page_uptodate(&s, last + 2, P, UINT64_MAX),
	   "page: index * size wrapping to 4096 is not taken for page 1");
	ok(!extent_set_page_uptodate(&s, UINT64_MAX, P, UINT64_MAX),
	   "page: index UINT64_MAX is not");
	ok(extent_set_page_uptodate(&s, 1, UINT64_C(1) << 63, UINT64_MAX),
	   "page: size 2^63, page 1 up to EOF UINT64_MAX");
	ok(!extent_set_page_uptodate(&s, 2, UINT64_C(1) << 63, UINT64_MAX),
	   "page: size 2^63, page 2 starts at 2^64");
	ok(extent_set_page_uptodate(&s, UINT64_MAX - 1, 1, UINT64_MAX) &&
	   !extent_set_page_uptodate(&s, UINT64_MAX, 1, UINT64_MAX),
	   "page: size 1, the byte below EOF UINT64_MAX is, the one at EOF is not");
	extent_set_clear(&s);
}

static void test_foreach(void)
{
	struct extent_set s = EXTENT_SET_INIT;
	struct collected c = { 0 };

	is_int(extent_set_foreach(&s, collect_cb, &c), 0, "foreach: empty set returns 0");
	is_int(c.n, 0, "foreach: empty set, no call");

	extent_set_add(&s, 50, 60);
	extent_set_add(&s, 10, 20);
	extent_set_add(&s, 90, 95);
	extent_set_add(&s, 30, 40);
	extent_set_add(&s, 70, 80);
	EXPECT(&s, "foreach: ranges added out of order come back increasing",
	       { 10, 20 }, { 30, 40 }, { 50, 60 }, { 70, 80 }, { 90, 95 });

	memset(&c, 0, sizeof(c));
	c.stop_at = 2;
	c.stop_rc = 7;
	is_int(extent_set_foreach(&s, collect_cb, &c), 7, "foreach: returns fn's nonzero value");
	ok(c.n == 2 && c.r[1][0] == 30, "foreach: and stops at that call");
	memset(&c, 0, sizeof(c));
	c.stop_at = 1;
	c.stop_rc = -5;
	is_int(extent_set_foreach(&s, collect_cb, &c), -5, "foreach: a negative value stops too");
	is_int(c.n, 1, "foreach: after the first call");
	extent_set_clear(&s);
}

static struct extent_set static_set = EXTENT_SET_INIT;

static void test_clear(void)
{
	EXPECT_EMPTY(&static_set, "clear: EXTENT_SET_INIT is empty");
	extent_set_clear(&static_set);
	EXPECT_EMPTY(&static_set, "clear: an empty set");
	for (uint64_t i = 0; i < 500; i++)
		extent_set_add(&static_set, i * 3 * KiB, i * 3 * KiB + KiB);
	ok(static_set.count == 500 && static_set.bytes == 500 * KiB && set_valid(&static_set),
	   "clear: 500 ranges before");
	extent_set_clear(&static_set);
	ok(static_set.held.root == NULL && nodes_live == 0, "clear: root NULL, every node freed");
	EXPECT_EMPTY(&static_set, "clear: count and bytes 0 after");
	extent_set_add(&static_set, 1, 2);
	EXPECT(&static_set, "clear: the set is usable after", { 1, 2 });
	extent_set_clear(&static_set);
}

/* One range inline, no node: most cache objects hold exactly one. */
static void test_inline(void)
{
	struct extent_set s = EXTENT_SET_INIT;
	struct collected c = { 0 };

	diag("sizeof(struct extent_set) %zu, an allocated node %zu",
	     sizeof(struct extent_set), sizeof(struct extent_node));
	ok(sizeof(struct extent_set) <= sizeof(void *) + sizeof(size_t) + sizeof(uint64_t),
	   "inline: struct extent_set is no larger than root, count and bytes");
	extent_set_add(&s, 4096, 8192);
	ok(nodes_live == 0 && s.count == 1 && s.bytes == 4096,
	   "inline: one range added to an empty set allocates no node");
	extent_set_add(&s, 0, 4096);
	extent_set_add(&s, 8192, 10000);
	extent_set_add(&s, 100, 9000);
	EXPECT(&s, "inline: touching and overlapping adds grow it in place", { 0, 10000 });
	ok(extent_set_covers(&s, 0, 10000) && !extent_set_covers(&s, 0, 10001) &&
	   extent_set_page_uptodate(&s, 2, 4096, 10000) &&
	   !extent_set_page_uptodate(&s, 2, 4096, 10001),
	   "inline: covers and page_uptodate read the inline range");
	is_gap(&s, 5000, 20000, 1, 10000, 20000, "inline: the gap after the one range");
	is_gap(&s, 0, 10000, 0, 0, 0, "inline: none inside the one range");
	c.stop_at = 1;
	c.stop_rc = 3;
	ok(extent_set_foreach(&s, collect_cb, &c) == 3 && c.n == 1 &&
	   c.r[0][0] == 0 && c.r[0][1] == 10000, "inline: foreach calls fn once with the range");
	ok(nodes_live == 0, "inline: queries allocate nothing");

	extent_set_add(&s, 20000, 30000);
	EXPECT(&s, "inline: a second, apart, makes a tree of two", { 0, 10000 }, { 20000, 30000 });
	extent_set_add(&s, 10000, 20000);
	EXPECT(&s, "inline: the add joining them folds the tree back", { 0, 30000 });
	extent_set_remove(&s, 100, 200);
	EXPECT(&s, "inline: a remove splitting it makes a tree", { 0, 100 }, { 200, 30000 });
	extent_set_remove(&s, 0, 100);
	EXPECT(&s, "inline: removing one of two folds back", { 200, 30000 });
	extent_set_remove(&s, 10000, UINT64_MAX);
	EXPECT(&s, "inline: truncating the one range", { 200, 10000 });
	extent_set_remove(&s, 0, 300);
	EXPECT(&s, "inline: trimming its start", { 300, 10000 });
	extent_set_remove(&s, 300, 10000);
	EXPECT_EMPTY(&s, "inline: removing exactly the one range empties the set");

	for (uint64_t i = 0; i < 100; i++)
		extent_set_add(&s, i * 10, i * 10 + 5);
	extent_set_remove(&s, 5, 2000);
	EXPECT(&s, "inline: removing 99 of 100 leaves one, no node", { 0, 5 });
	for (uint64_t i = 1; i < 100; i++)
		extent_set_add(&s, i * 10, i * 10 + 5);
	extent_set_add(&s, 3, 992);
	EXPECT(&s, "inline: one add bridging 100 ranges leaves one, no node", { 0, 995 });

	extent_set_add(&s, 995, UINT64_MAX);
	EXPECT(&s, "inline: the whole 64-bit space inline", { 0, UINT64_MAX });
	ok(extent_set_covers(&s, UINT64_MAX - 1, UINT64_MAX) &&
	   !extent_set_first_gap(&s, 0, UINT64_MAX, &c.r[0][0], &c.r[0][1]),
	   "inline: its end UINT64_MAX read back without overflow");
	extent_set_clear(&s);
	EXPECT_EMPTY(&s, "inline: clear of a one-range set");

	/* cache scale: many objects, each with one range */
	enum { SETS = 1000 };
	static struct extent_set many[SETS];
	uint64_t bytes = 0;

	for (int i = 0; i < SETS; i++) {
		extent_set_init(&many[i]);
		extent_set_add(&many[i], 0, (uint64_t)i + 1);
		extent_set_add(&many[i], (uint64_t)i + 1, 2 * ((uint64_t)i + 1));
	}
	for (int i = 0; i < SETS; i++)
		bytes += many[i].count == 1 ? many[i].bytes : 0;
	ok(nodes_live == 0 && bytes == (uint64_t)SETS * (SETS + 1),
	   "inline: %d sets of one range hold no node", SETS);
	for (int i = 0; i < SETS; i++)
		extent_set_clear(&many[i]);
}

/* ------------------------------------------------------------------ */
/* randomized, against a byte map                                       */

#define MODEL_BYTES 4096

/* The set's part in [base, base + len), one flag per byte. */
struct model {
	uint64_t base;
	uint64_t len;                  /* <= MODEL_BYTES; base + len <= UINT64_MAX */
	uint8_t byte[MODEL_BYTES];
	uint64_t runs[MODEL_BYTES][2]; /* scratch: the model's ranges */
};

struct rng {
	uint64_t state;
};

/* splitmix64: small, good enough, and the same sequence everywhere */
static uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static uint64_t rng_below(struct rng *r, uint64_t n)
{
	return rng_next(r) % n;
}

/* A random [*a, *b) in the model's window (absolute offsets), mostly short,
 * sometimes long, sometimes empty or reversed. */
static void random_range(struct rng *r, const struct model *m, uint64_t *a, uint64_t *b)
{
	uint64_t off = rng_below(r, m->len + 1), len;

	uint64_t kind = rng_below(r, 100);

	if (kind < 75) {
		len = rng_below(r, 9);
	} else if (kind < 95) {
		len = rng_below(r, 65);
	} else if (kind < 96) {
		len = rng_below(r, m->len + 1);
	} else {
		*a = m->base + off;
		*b = m->base + off - (off ? rng_below(r, off < 4 ? off + 1 : 4) : 0);
		return;
	}
	*a = m->base + off;
	*b = m->base + (len > m->len - off ? m->len : off + len);
}

static void model_set(struct model *m, uint64_t a, uint64_t b, uint8_t v)
{
	for (uint64_t x = a; x < b; x++)
		m->byte[x - m->base] = v;
}

/* Bytes outside the window are never in the set. */
static int model_covers(const struct model *m, uint64_t a, uint64_t b)
{
	for (uint64_t x = a; x < b; x++)
		if (x < m->base || x - m->base >= m->len || !m->byte[x - m->base])
			return 0;
	return 1;
}

static int model_first_gap(const struct model *m, uint64_t a, uint64_t b,
			   uint64_t *g0, uint64_t *g1)
{
	uint64_t x = a;

	if (a >= b)
		return 0;
	while (x < b && m->byte[x - m->base])
		x++;
	if (x == b)
		return 0;
	*g0 = x;
	while (x < b && !m->byte[x - m->base])
		x++;
	*g1 = x;
	return 1;
}

static size_t model_runs(struct model *m, uint64_t *bytes)
{
	size_t n = 0;

	*bytes = 0;
	for (uint64_t i = 0; i < m->len; i++) {
		if (!m->byte[i])
			continue;
		if (n && m->runs[n - 1][1] == m->base + i) {
			m->runs[n - 1][1]++;
		} else {
			m->runs[n][0] = m->base + i;
			m->runs[n][1] = m->base + i + 1;
			n++;
		}
		(*bytes)++;
	}
	return n;
}

struct compare {
	const struct model *m;
	size_t n, i;
	int bad;
};

static int compare_cb(uint64_t start, uint64_t end, void *ctx)
{
	struct compare *c = ctx;

	if (c->i >= c->n || c->m->runs[c->i][0] != start || c->m->runs[c->i][1] != end)
		c->bad = 1;
	c->i++;
	return 0;
}

struct failures {
	unsigned ranges, covers, gap, page;   /* mismatches of each kind */
};

static void note(unsigned *counter, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(unsigned *counter, const char *fmt, ...)
{
	va_list ap;
	char line[256];

	if ((*counter)++ >= 3)   /* the first few are enough to debug from */
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	diag("    %s", line);
}

static void check_ranges(const struct extent_set *s, struct model *m, int op, struct failures *f)
{
	uint64_t bytes;
	struct compare c = { m, 0, 0, 0 };

	c.n = model_runs(m, &bytes);
	extent_set_foreach(s, compare_cb, &c);
	if (c.bad || c.i != c.n || s->count != c.n || s->bytes != bytes || !set_valid(s))
		note(&f->ranges, "op %d: ranges differ: count %zu (model %zu) bytes %" PRIu64
		     " (model %" PRIu64 ")", op, s->count, c.n, s->bytes, bytes);
}

static void check_queries(const struct extent_set *s, const struct model *m, struct rng *r,
			  int op, struct failures *f)
{
	static const uint64_t page_sizes[] = { 1, 16, 64, 256, 4096 };
	uint64_t a, b, g0 = 0, g1 = 0, w0 = 0, w1 = 0;

	for (int q = 0; q < 4; q++) {
		random_range(r, m, &a, &b);
		if (extent_set_covers(s, a, b) != model_covers(m, a, b))
			note(&f->covers, "op %d: covers [%" PRIu64 ",%" PRIu64 ")", op, a, b);
		int got = extent_set_first_gap(s, a, b, &g0, &g1);
		int want = model_first_gap(m, a, b, &w0, &w1);
		if (got != want || (got && (g0 != w0 || g1 != w1)))
			note(&f->gap, "op %d: first_gap [%" PRIu64 ",%" PRIu64 ")", op, a, b);

		/* a page holding window bytes, and an EOF in the window */
		uint64_t ps = page_sizes[rng_below(r, 5)];
		uint64_t idx = (m->base + rng_below(r, m->len)) / ps;
		uint64_t eof = m->base + rng_below(r, m->len + 1);
		uint64_t start = idx * ps;
		int want_page = start < eof &&
			model_covers(m, start, start + (eof - start < ps ? eof - start : ps));
		if (extent_set_page_uptodate(s, idx, ps, eof) != want_page)
			note(&f->page, "op %d: page %" PRIu64 " size %" PRIu64 " eof %" PRIu64,
			     op, idx, ps, eof);
	}
}

/* `add_permille`: how many ops in 1000 are adds; the rest are mostly
 * removes, with a few truncations and clears. */
static void random_op(struct extent_set *s, struct model *m, struct rng *r,
		      uint64_t add_permille)
{
	uint64_t a, b, roll = rng_below(r, 1000);

	random_range(r, m, &a, &b);
	if (roll < add_permille) {
		extent_set_add(s, a, b);
		model_set(m, a, b, 1);
	} else if (roll < 985) {
		extent_set_remove(s, a, b);
		model_set(m, a, b, 0);
	} else if (roll < 999) {
		extent_set_remove(s, a, UINT64_MAX);   /* truncate */
		model_set(m, a, m->base + m->len, 0);
	} else {
		extent_set_clear(s);
		model_set(m, m->base, m->base + m->len, 0);
	}
}

/* How often the set went from holding none, one or many ranges to another
 * of these: each change crosses the inline/tree boundary or empties it. */
struct crossings {
	unsigned none_one, one_none, one_many, many_one, none_many, many_none;
};

static void crossed(struct crossings *x, size_t before, size_t after)
{
	int b = before < 2 ? (int)before : 2, a = after < 2 ? (int)after : 2;

	x->none_one += b == 0 && a == 1;
	x->one_none += b == 1 && a == 0;
	x->one_many += b == 1 && a == 2;
	x->many_one += b == 2 && a == 1;
	x->none_many += b == 0 && a == 2;
	x->many_none += b == 2 && a == 0;
}

static struct crossings test_random_window(uint64_t base, uint64_t len, uint64_t seed, int ops)
{
	struct crossings x = { 0, 0, 0, 0, 0, 0 };
	static struct model m;
	struct extent_set s = EXTENT_SET_INIT;
	struct rng r = { seed };
	struct failures f = { 0, 0, 0, 0 };
	size_t max_count = 0;
	uint64_t add_permille = 500;

	memset(&m, 0, sizeof(m));
	m.base = base;
	m.len = len;
	for (int op = 0; op < ops; op++) {
		/* phases of filling and of punching holes, so the set sometimes
		 * holds a few ranges and sometimes hundreds */
		if (op % 250 == 0)
			add_permille = 300 + rng_below(&r, 401);
		size_t before = s.count;

		random_op(&s, &m, &r, add_permille);
		crossed(&x, before, s.count);
		check_ranges(&s, &m, op, &f);
		check_queries(&s, &m, &r, op, &f);
		if (s.count > max_count)
			max_count = s.count;
	}
	diag("window [%" PRIu64 ", +%" PRIu64 "): %d ops, up to %zu ranges, %zu at the end; "
	     "none->one %u, one->none %u, one->many %u, many->one %u, none->many %u, "
	     "many->none %u", base, len, ops, max_count, s.count, x.none_one, x.one_none,
	     x.one_many, x.many_one, x.none_many, x.many_none);
	is_int(f.ranges, 0, "random @%" PRIu64 ": ranges, count and bytes equal the model's", base);
	is_int(f.covers, 0, "random @%" PRIu64 ": covers agrees with the model", base);
	is_int(f.gap, 0, "random @%" PRIu64 ": first_gap agrees with the model", base);
	is_int(f.page, 0, "random @%" PRIu64 ": page_uptodate agrees with the model", base);
	extent_set_clear(&s);
	ok(nodes_live == 0, "random @%" PRIu64 ": every node freed", base);
	return x;
}

static void test_random(void)
{
	uint64_t seed = UINT64_C(0x5eed0f0e7e4c);
	const char *env = getenv("EXTENT_TEST_SEED");

	if (env)
		seed = strtoull(env, NULL, 0);
	diag("random seed 0x%" PRIx64 " (EXTENT_TEST_SEED to change)", seed);
	test_random_window(0, MODEL_BYTES, seed, 10000);
	/* the window's last byte is UINT64_MAX - 1: ranges end at UINT64_MAX */
	test_random_window(UINT64_MAX - (MODEL_BYTES - 1), MODEL_BYTES - 1, seed + 1, 10000);
	/* a window straddling 4 GiB */
	test_random_window(4 * GiB - MODEL_BYTES / 2, MODEL_BYTES, seed + 2, 4000);

	/* windows of 48 bytes: a handful of ranges at most, so the set goes
	 * between none, one (inline) and many (a tree) all the time */
	struct crossings x = test_random_window(1000, 48, seed + 3, 20000);
	struct crossings y = test_random_window(UINT64_MAX - 47, 47, seed + 4, 20000);
	ok(x.none_one >= 25 && x.one_none >= 25 && x.one_many >= 250 && x.many_one >= 250 &&
	   y.none_one >= 25 && y.one_none >= 25 && y.one_many >= 250 && y.many_one >= 250,
	   "random: small windows crossed between none, one and many ranges often");
}

/* ------------------------------------------------------------------ */
/* scale                                                                */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 37,500 random 1 KiB writes into a 64 MiB file: the shape of the valid map
 * of a large, randomly written cache object.  Time is reported, not judged. */
static void test_scale(void)
{
	enum { ADDS = 37500, SLOTS = (int)(64 * MiB / KiB) };
	static uint8_t slot[SLOTS];
	struct extent_set s = EXTENT_SET_INIT;
	struct rng r = { 42 };
	uint64_t want_bytes = 0;
	size_t want_count = 0;
	double t0, t_add, t_query;
	int uptodate = 0;

	t0 = now_s();
	for (int i = 0; i < ADDS; i++) {
		uint64_t k = rng_below(&r, SLOTS);
		slot[k] = 1;
		extent_set_add(&s, k * KiB, (k + 1) * KiB);
	}
	t_add = now_s() - t0;

	t0 = now_s();
	for (uint64_t k = 0; k < SLOTS; k++)
		uptodate += extent_set_page_uptodate(&s, k, KiB, 64 * MiB);
	t_query = now_s() - t0;

	for (int k = 0; k < SLOTS; k++) {
		want_bytes += slot[k] * KiB;
		want_count += slot[k] && (k == 0 || !slot[k - 1]);
	}
	diag("scale: %d random 1 KiB adds into 64 MiB: %.1f ms (%.0f ns each), %zu ranges, "
	     "%" PRIu64 " bytes, tree depth %d",
	     ADDS, t_add * 1e3, t_add * 1e9 / ADDS, s.count, s.bytes, rb_depth(s.held.root));
	diag("scale: %d page_uptodate lookups: %.1f ms (%.0f ns each)",
	     SLOTS, t_query * 1e3, t_query * 1e9 / SLOTS);
	is_int(s.count, want_count, "scale: count equals the runs of written slots");
	ok(s.bytes == want_bytes && (uint64_t)uptodate * KiB == want_bytes,
	   "scale: bytes and uptodate pages equal the written slots");
	ok(set_valid(&s), "scale: a valid red-black tree of merged ranges");
	extent_set_clear(&s);
}

int main(void)
{
	test_add();
	test_remove();
	test_covers();
	test_first_gap();
	test_page_uptodate();
	test_foreach();
	test_clear();
	test_inline();
	test_random();
	test_scale();
	return done();
}
