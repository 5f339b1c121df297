/*
 * test_cache.c — the write-back state kept by cache/cache.c, dirty.c and
 * persist.c (DESIGN.md "Write-back", "Persistence"), driven through the
 * real module on a temporary cache directory with a real libev loop, the
 * real worker pool and the real sqlite index: local writes (valid, dirty,
 * size, mtime, the gauges), zero-filled gaps, per-page dirty ranges kept
 * apart, fetched data merged under dirty bytes, invalidation sparing
 * dirty and sent bytes, a write-back pass settled each of the three ways,
 * dropping and truncating dirty bytes, dirty ranges and the writer's
 * credential surviving a clean restart (kept or discarded by the first
 * attributes), and the "written to" mark: cache_write_must_wait() waits for
 * its batch, and after a crash (a child that _exit()s without
 * cache_finalise) only recorded dirty ranges of a marked object are
 * trusted; culling and the start-up reconciliation; a pinned object is
 * never culled (cache_pin); batches and culling steps take turns with the
 * index (the lease); the culling order takes in objects the index has not
 * recorded yet, and every run starts at its head; backing files closed
 * while their ranges wait for a batch hold no descriptor and are recorded.
 *
 * Includes cache_int.h to reach the module's state (cache_state), the
 * lease and batch_start(); cache.c, dirty.c, persist.c and the other
 * modules are linked.
 */
#include "config.h"

#include <dirent.h>
#include <malloc.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/cred.h"
#include "cache/index.h"
#include "cache/worker.h"
#include "common/log.h"
#include "common/stats.h"

#include "tests/unit/fattr.h"
#include "tests/unit/tap.h"

#define VOLUME "server:/export"
#define UPSTREAM_MTIME_S 1000u
#define WAIT_MAX_S 10.0

static struct ev_loop *lp;
static struct cache_config cfg;
static char cache_dir[256];

/* A fresh, empty cache directory for the next cache_init. */
static void new_cache_dir(void)
{
	snprintf(cache_dir, sizeof(cache_dir), "%s/test_cache.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(cache_dir)) {
		perror("mkdtemp");
		exit(1);
	}
	cfg.dir = cache_dir;
}

static const struct rpc_cred writer = {
	.flavor = RPC_AUTH_SYS,
	.machinename = "client",
	.uid = 1000,
	.gid = 100,
	.gids_len = 3,
	.gids = { 100, 200, 300 },
};

struct test_waiter {
	struct cache_waiter w;   /* first: the callback casts back */
	int woken;               /* wake() calls */
};

static void test_wake(struct cache_waiter *w)
{
	((struct test_waiter *)(void *)w)->woken++;
}

static void waiter_init(struct test_waiter *t)
{
	memset(t, 0, sizeof(*t));
	list_init(&t->w.link);
	t->w.wake = test_wake;
}

/* ---- the loop ------------------------------------------------------- */

static void break_cb(struct ev_loop *l, ev_timer *t, int revents)
{
	(void)t;
	(void)revents;
	ev_break(l, EVBREAK_ONE);
}

/* Run the loop for `seconds`: batch timer, worker completions. */
static void run_for(double seconds)
{
	ev_timer t;

	ev_now_update(lp);
	ev_timer_init(&t, break_cb, seconds, 0);
	ev_timer_start(lp, &t);
	ev_run(lp, 0);
	ev_timer_stop(lp, &t);
}

/* Run the loop until every changed object is in the index (the 1 s batch
 * ran and completed).  Returns the seconds waited, or -1 on a timeout. */
static double wait_batch(void)
{
	double waited = 0;

	while (index_lease_holder() != INDEX_FREE || !list_empty(&cache_state.persist_queue)) {
		if (waited > WAIT_MAX_S)
			return -1;
		run_for(0.05);
		waited += 0.05;
	}
	return waited;
}

static int wait_woken(const struct test_waiter *t)
{
	double start = ev_time();

	while (!t->woken) {
		if (ev_time() - start > WAIT_MAX_S)
			return 0;
		ev_run(lp, EVRUN_ONCE);   /* a worker's completion, at the latest the batch timer */
	}
	return 1;
}

/* ---- a cache on a fresh directory ----------------------------------- */

static int cache_open_here(void)
{
	memset(&stats, 0, sizeof(stats));
	ev_now_update(lp);
	int rc = cache_init(lp, &cfg, VOLUME);
	/* the start-up reconciliation holds the index for a moment: the
	 * batches the tests start must not wait for it */
	while (rc == 0 && index_lease_holder() != INDEX_FREE)
		ev_run(lp, EVRUN_ONCE);
	return rc;
}

static void setup(void)
{
	new_cache_dir();
	if (cache_open_here() != 0) {
		fprintf(stderr, "cache_init on %s failed\n", cache_dir);
		exit(1);
	}
}

static void teardown(void)
{
	cache_finalise();
	backing_remove_tree(cache_dir);
}

/* ---- objects, data -------------------------------------------------- */

static fattr3 upstream_attrs(uint64_t size, uint32_t mtime_s, uint64_t fileid)
{
	return test_fattr3(size, mtime_s, 500, 1, fileid);
}

static int wait_woken(const struct test_waiter *t);

/* The object of `name`, made resident first when the index holds it. */
static struct cache_object *find(const char *name)
{
	struct test_waiter w;

	waiter_init(&w);
	if (cache_resolve((const uint8_t *)name, (uint32_t)strlen(name), &w.w) == 0 &&
	    !wait_woken(&w))
		return NULL;
	return cache_find((const uint8_t *)name, (uint32_t)strlen(name));
}

/* An object whose coherency data say `size` bytes, mtime UPSTREAM_MTIME_S. */
static struct cache_object *object(const char *name, uint64_t size, uint64_t fileid)
{
	struct cache_object *o = cache_get((const uint8_t *)name, (uint32_t)strlen(name));
	fattr3 a = upstream_attrs(size, UPSTREAM_MTIME_S, fileid);

	cache_attrs_update(o, &a, cache_seq());
	return o;
}

/* Fetched data: `len` bytes of `byte` at `offset`. */
static int fetched(struct cache_object *o, uint64_t offset, uint32_t len, int byte, uint64_t gen)
{
	char *buf = malloc(len);
	int rc;

	if (!buf)
		abort();
	memset(buf, byte, len);
	rc = cache_store(o, offset, buf, len, gen);
	free(buf);
	return rc;
}

/* A client's UNSTABLE WRITE of `len` bytes of `byte` at `offset`. */
static int written(struct cache_object *o, uint64_t offset, uint32_t len, int byte)
{
	char *buf = malloc(len);
	int rc;

	if (!buf)
		abort();
	memset(buf, byte, len);
	rc = cache_write_local(o, offset, buf, len, &writer);
	free(buf);
	return rc;
}

/* Read [offset, offset + len) through cache_read_local: 0 when it worked and
 * every byte is `byte`, the read's -errno, or 1 when some byte differs. */
static int holds(struct cache_object *o, uint64_t offset, uint32_t len, int byte)
{
	unsigned char *buf = malloc(len);
	int rc;

	if (!buf)
		abort();
	rc = cache_read_local(o, offset, buf, len);
	for (uint32_t i = 0; rc == 0 && i < len; i++)
		if (buf[i] != (unsigned char)byte) {
			diag("    byte %llu is 0x%02x, expected 0x%02x",
			     (unsigned long long)(offset + i), buf[i], (unsigned char)byte);
			rc = 1;
		}
	free(buf);
	return rc;
}

/* ---- extent sets as text: "[100,110) [300,310)" ---------------------- */

struct text {
	char buf[1024];
	size_t len;
};

static int append_range(uint64_t start, uint64_t end, void *ctx)
{
	struct text *t = ctx;

	if (t->len < sizeof(t->buf))
		t->len += (size_t)snprintf(t->buf + t->len, sizeof(t->buf) - t->len, "%s[%llu,%llu)",
					   t->len ? " " : "", (unsigned long long)start,
					   (unsigned long long)end);
	return 0;
}

static int is_set(const struct extent_set *s, const char *want, const char *what)
{
	struct text t = { .len = 0 };
	uint64_t bytes = 0;

	t.buf[0] = '\0';
	extent_set_foreach(s, append_range, &t);
	for (const char *p = want; (p = strchr(p, '[')); p++) {
		unsigned long long a, b;
		if (sscanf(p, "[%llu,%llu)", &a, &b) == 2)
			bytes += b - a;
	}
	int cond = strcmp(t.buf, want) == 0 && s->bytes == bytes;
	ok(cond, "%s: {%s}", what, want);
	if (!cond)
		diag("    got: {%s} (%llu bytes)", t.buf, (unsigned long long)s->bytes);
	return cond;
}

static int on_dirty_list(const struct cache_object *o)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, cache_uncommitted_list())
		if (cache_uncommitted_object(pos) == o)
			return 1;
	return 0;
}

static size_t dirty_list_length(void)
{
	struct list_node *pos, *tmp;
	size_t n = 0;

	list_for_each_safe(pos, tmp, cache_uncommitted_list())
		n++;
	return n;
}

static off_t backing_size(const struct cache_object *o)
{
	struct stat st;

	return o->fd >= 0 && fstat(o->fd, &st) == 0 ? st.st_size : -1;
}

/* ---- 1. a write extending the file ---------------------------------- */

static void test_write_extends(void)
{
	struct test_waiter w;
	setup();
	diag("1. a write of 10 bytes at 10 into a 10-byte file");
	struct cache_object *o = object("case1", 10, 11);
	fattr3 up = upstream_attrs(10, UPSTREAM_MTIME_S, 11), a = up;

	is_int(fetched(o, 0, 10, 'u', cache_seq()), 0, "the upstream's 10 bytes stored");
	is_int(cache_has_uncommitted(o), 0, "clean before the write");
	cache_patch_attrs(o, &a);
	ok(a.size == 10 && a.used == 10 && ns_of(&a.mtime) == ns_of(&up.mtime) &&
	   ns_of(&a.ctime) == ns_of(&up.ctime), "clean: cache_patch_attrs leaves the attributes alone");
	waiter_init(&w);
	is_int(!cache_write_must_wait(o, &w.w), 1, "nothing recorded yet: local writes may go at once");
	is_int(written(o, 10, 10, 'w'), 0, "cache_write_local 10 bytes at 10");
	is_set(&o->valid, "[0,20)", "valid");
	is_set(object_dirty(o), "[10,20)", "dirty");
	is_set(object_commit(o), "", "commit set");
	is_int(cache_has_uncommitted(o), 1, "cache_has_uncommitted");
	is_int(cache_client_size(o), 20, "cache_client_size() is the local size");
	is_int(o->coh.size, 10, "the coherency data still say the upstream's 10");
	is_int(stats.cache_dirty_bytes, 10, "cache.dirty.bytes");
	is_int(stats.cache_write_bytes, 10, "cache.write.bytes");
	is_int(stats.cache_bytes, 20, "cache.bytes");
	ok(on_dirty_list(o) && dirty_list_length() == 1, "the object is on cache_uncommitted_list()");
	ok(cache_wb_cred(o) && cred_equal(cache_wb_cred(o), &writer), "the writer's credential is kept");
	cache_patch_attrs(o, &a);
	is_int(a.size, 20, "cache_patch_attrs: size 20");
	ok(a.used >= 20, "cache_patch_attrs: used %llu >= 20", (unsigned long long)a.used);
	ok(ns_of(&a.mtime) >= ns_of(&up.mtime), "cache_patch_attrs: mtime %u.%09u >= the upstream's",
	   a.mtime.seconds, a.mtime.nseconds);
	ok(ns_of(&a.ctime) >= ns_of(&a.mtime), "cache_patch_attrs: ctime >= mtime");
	is_int(a.fileid, 11, "cache_patch_attrs: fileid untouched");

	/* an upstream mtime newer than the local one is never rolled back */
	fattr3 later = upstream_attrs(10, 4000000000u, 11);
	cache_patch_attrs(o, &later);
	is_int(later.mtime.seconds, 4000000000u, "cache_patch_attrs: a newer upstream mtime stays");
	is_int(later.size, 20, "... and the size is still the local one");

	is_int(holds(o, 0, 10, 'u'), 0, "bytes 0..10 read back: the upstream's");
	is_int(holds(o, 10, 10, 'w'), 0, "bytes 10..20 read back: the written ones");
	is_int(backing_size(o), 20, "the backing file is 20 bytes");
	teardown();
}

/* ---- 2. a write past the end leaves zeros --------------------------- */

static void test_write_gap(void)
{
	setup();
	diag("2. a write at 100 into a 20-byte file");
	struct cache_object *o = object("case2", 20, 21);

	is_int(fetched(o, 0, 20, 'u', cache_seq()), 0, "the upstream's 20 bytes stored");
	is_int(written(o, 100, 10, 'w'), 0, "cache_write_local 10 bytes at 100");
	is_set(&o->valid, "[0,110)", "valid: the gap 20..100 included");
	is_set(object_dirty(o), "[100,110)", "dirty: only the written bytes");
	is_int(cache_client_size(o), 110, "cache_client_size()");
	is_int(stats.cache_dirty_bytes, 10, "cache.dirty.bytes");
	is_int(stats.cache_write_bytes, 10, "cache.write.bytes: the zeros are not written bytes");
	is_int(stats.cache_bytes, 110, "cache.bytes");
	is_int(holds(o, 20, 80, 0), 0, "the gap reads as zeros");
	is_int(holds(o, 100, 10, 'w'), 0, "the written bytes read back");

	/* the next gap starts at the local size, not the upstream's */
	is_int(written(o, 200, 10, 'x'), 0, "cache_write_local 10 bytes at 200");
	is_set(&o->valid, "[0,210)", "valid: the gap 110..200 included");
	is_set(object_dirty(o), "[100,110) [200,210)", "dirty");
	is_int(holds(o, 110, 90, 0), 0, "the second gap reads as zeros");
	is_int(cache_client_size(o), 210, "cache_client_size()");
	is_int(stats.cache_dirty_bytes, 20, "cache.dirty.bytes");
	teardown();
}

/* ---- 3. dirty ranges in one page ------------------------------------ */

static void test_ranges_in_page(void)
{
	setup();
	diag("3. two dirty ranges in one page");
	struct cache_object *o = object("case3", 4096, 31);

	is_int(written(o, 100, 10, 'a'), 0, "write 100..110");
	is_int(written(o, 300, 10, 'b'), 0, "write 300..310");
	is_set(object_dirty(o), "[100,110) [300,310)", "two dirty ranges, not widened to one");
	is_set(&o->valid, "[100,110) [300,310)", "valid: the same two ranges");
	is_int(stats.cache_dirty_bytes, 20, "cache.dirty.bytes");
	is_int(cache_client_size(o), 4096, "cache_client_size(): the upstream's, not extended");
	is_int(written(o, 110, 10, 'c'), 0, "write 110..120 (touching at the end)");
	is_set(object_dirty(o), "[100,120) [300,310)", "merged with the range it touches");
	is_int(written(o, 90, 10, 'd'), 0, "write 90..100 (touching at the start)");
	is_set(object_dirty(o), "[90,120) [300,310)", "merged again");
	is_int(written(o, 305, 10, 'e'), 0, "write 305..315 (overlapping)");
	is_set(object_dirty(o), "[90,120) [300,315)", "overlap merged");
	is_set(&o->valid, "[90,120) [300,315)", "valid follows");
	is_int(stats.cache_dirty_bytes, 45, "cache.dirty.bytes");
	is_int(stats.cache_write_bytes, 50, "cache.write.bytes: every byte written");
	is_int(holds(o, 90, 10, 'd'), 0, "90..100");
	is_int(holds(o, 100, 10, 'a'), 0, "100..110");
	is_int(holds(o, 110, 10, 'c'), 0, "110..120");
	is_int(holds(o, 300, 5, 'b'), 0, "300..305");
	is_int(holds(o, 305, 10, 'e'), 0, "305..315");
	is_int(holds(o, 120, 10, 0), -EIO, "120..130 is not valid");
	teardown();
}

/* ---- 4. fetched data merged under dirty bytes ----------------------- */

static void test_store_under_dirty(void)
{
	setup();
	diag("4. cache_store over dirty and sent bytes");
	struct cache_object *o = object("case4", 4096, 41);
	uint64_t gen = cache_seq();   /* the READ was sent before the write */
	size_t n;

	is_int(written(o, 100, 10, 'w'), 0, "write 100..110");
	is_int(fetched(o, 0, 4096, 'f', gen), 0, "a fetched page 0..4096 is stored");
	is_set(&o->valid, "[0,4096)", "valid: the whole page");
	is_set(object_dirty(o), "[100,110)", "dirty: unchanged");
	is_int(stats.cache_bytes, 4096, "cache.bytes");
	is_int(stats.cache_dirty_bytes, 10, "cache.dirty.bytes");
	is_int(holds(o, 100, 10, 'w'), 0, "the dirty bytes are kept (newer)");
	is_int(holds(o, 0, 100, 'f'), 0, "0..100 filled from the fetch");
	is_int(holds(o, 110, 4096 - 110, 'f'), 0, "110..4096 filled from the fetch");

	free(cache_dirty_take(o, &n));
	is_int(written(o, 200, 10, 'x'), 0, "a pass takes 100..110; write 200..210");
	is_int(fetched(o, 0, 4096, 'g', cache_seq()), 0, "the page is fetched again");
	is_int(holds(o, 100, 10, 'w'), 0, "bytes being sent are kept");
	is_int(holds(o, 200, 10, 'x'), 0, "dirty bytes are kept");
	is_int(holds(o, 0, 100, 'g'), 0, "0..100 refreshed");
	is_int(holds(o, 110, 90, 'g'), 0, "110..200 refreshed");
	is_int(holds(o, 210, 4096 - 210, 'g'), 0, "210..4096 refreshed");
	is_set(&o->valid, "[0,4096)", "valid");
	is_set(object_commit(o), "[100,110)", "commit set");
	is_set(object_dirty(o), "[200,210)", "dirty");
	teardown();
}

/* ---- 5. invalidation spares local bytes ----------------------------- */

static void test_invalidate(void)
{
	setup();
	diag("5. cache_invalidate with dirty and sent bytes");
	struct cache_object *o = object("case5", 4096, 51);
	size_t n;

	fetched(o, 0, 4096, 'f', cache_seq());
	written(o, 100, 10, 'a');
	free(cache_dirty_take(o, &n));
	written(o, 300, 10, 'b');
	is_set(&o->valid, "[0,4096)", "valid before");
	uint64_t gen = o->gen;
	cache_invalidate(o, "test");
	is_set(&o->valid, "[100,110) [300,310)", "valid: only the sent and the dirty bytes");
	is_set(object_commit(o), "[100,110)", "commit set kept");
	is_set(object_dirty(o), "[300,310)", "dirty kept");
	is_int(stats.cache_bytes, 20, "cache.bytes");
	is_int(stats.cache_dirty_bytes, 20, "cache.dirty.bytes");
	is_int(stats.cache_invalidations, 1, "cache.invalidations");
	ok(o->gen > gen, "the generation moved on");
	is_int(holds(o, 100, 10, 'a'), 0, "sent bytes still read");
	is_int(holds(o, 300, 10, 'b'), 0, "dirty bytes still read");
	is_int(holds(o, 0, 10, 'f'), -EIO, "clean bytes are gone");
	cache_invalidate(o, "test");
	is_int(stats.cache_invalidations, 1, "nothing clean left: not counted again");
	is_set(&o->valid, "[100,110) [300,310)", "valid unchanged");
	teardown();
}

/* ---- 5b. WRITE replies of one clock tick answered out of order ------- */

/* wcc data as ganesha sends it for a WRITE: no pre-op attributes. */
static wcc_data wcc_after(uint64_t size, uint32_t time_s)
{
	wcc_data w;

	memset(&w, 0, sizeof(w));
	w.after.attributes_follow = 1;
	w.after.post_op_attr_u.attributes = upstream_attrs(size, time_s, 52);
	return w;
}

static void test_changes_raced(void)
{
	setup();
	diag("5b. racing WRITE replies that share a ctime");
	struct cache_object *o = object("case5b", 8192, 52);
	wcc_data a = wcc_after(1 << 20, UPSTREAM_MTIME_S + 1);   /* the older reply */
	wcc_data b = wcc_after(2 << 20, UPSTREAM_MTIME_S + 1);   /* the newer, same tick */

	is_int(fetched(o, 0, 8192, 'f', cache_seq()), 0, "8 KiB fetched");
	cache_change_begin(o);
	cache_change_begin(o);
	ok(cache_change_done(o, &b), "the newer reply, first: ours");
	cache_change_end(o);
	ok(cache_change_done(o, &a), "the older reply, last: ours");
	cache_change_end(o);
	is_int(o->coh.size, 2 << 20, "the coherency data keep the larger size of the tick");
	fattr3 now = upstream_attrs(2 << 20, UPSTREAM_MTIME_S + 1, 52);
	uint64_t inv = stats.cache_invalidations;
	cache_attrs_update(o, &now, cache_seq());
	is_int(stats.cache_invalidations, inv, "a GETATTR showing the file as written invalidates nothing");
	is_int(holds(o, 0, 8192, 'f'), 0, "the fetched bytes are still served");

	/* a GETATTR answered while our WRITE is in flight, which the upstream
	 * applied already: the WRITE's reply decides, nothing is dropped */
	wcc_data c = wcc_after(3 << 20, UPSTREAM_MTIME_S + 2);
	fattr3 mid = upstream_attrs(3 << 20, UPSTREAM_MTIME_S + 2, 52);
	cache_change_begin(o);
	cache_attrs_update(o, &mid, cache_seq());
	is_int(stats.cache_invalidations, inv, "attributes changed while our WRITE is in flight: no invalidation");
	is_int(o->coh.size, 3 << 20, "... the attributes are taken");
	ok(cache_attrs_fresh(o), "... and fresh: the calls waiting for them go on locally");
	is_int(holds(o, 0, 8192, 'f'), 0, "... and the fetched bytes are still served");
	ok(cache_change_done(o, &c), "the WRITE's reply: ours");
	cache_change_end(o);
	cache_attrs_update(o, &mid, cache_seq());
	is_int(stats.cache_invalidations, inv, "the same attributes after it: no invalidation");
	is_int(holds(o, 0, 8192, 'f'), 0, "the fetched bytes are still served");
	fattr3 other = upstream_attrs(3 << 20, UPSTREAM_MTIME_S + 3, 52);
	cache_attrs_update(o, &other, cache_seq());
	is_int(stats.cache_invalidations, inv + 1, "a change of someone else's, nothing in flight: invalidated");

	/* one change at a time: a smaller size in the same tick is a truncation */
	wcc_data t = wcc_after(4096, UPSTREAM_MTIME_S + 3);
	cache_change_begin(o);
	ok(cache_change_done(o, &t), "a SETATTR alone in flight: ours");
	cache_change_end(o);
	is_int(o->coh.size, 4096, "its size is taken");
	teardown();
}

/* ---- 6. a write-back pass settled three ways ------------------------ */

static void test_pass(void)
{
	setup();
	diag("6. cache_dirty_take and cache_commit_settle");
	struct cache_object *o = object("case6a", 4096, 61);
	uint64_t *r;
	size_t n = 99;

	fetched(o, 0, 4096, 'f', cache_seq());
	r = cache_dirty_take(o, &n);
	ok(r == NULL && n == 0, "nothing dirty: NULL, n = 0");
	written(o, 100, 10, 'a');
	written(o, 300, 10, 'b');
	r = cache_dirty_take(o, &n);
	is_int(n, 2, "two ranges taken");
	ok(r && r[0] == 100 && r[1] == 110 && r[2] == 300 && r[3] == 310,
	   "pairs (100, 110), (300, 310)");
	free(r);
	is_set(object_dirty(o), "", "dirty: empty");
	is_set(object_commit(o), "[100,110) [300,310)", "commit set");
	is_int(stats.cache_dirty_bytes, 20, "cache.dirty.bytes unchanged");
	ok(cache_has_uncommitted(o) && on_dirty_list(o), "still has dirty data, still listed");
	is_int(cache_client_size(o), 4096, "cache_client_size()");
	is_int(written(o, 105, 3, 'c'), 0, "a write during the pass: 105..108");
	is_set(object_dirty(o), "[105,108)", "dirty again");
	is_set(object_commit(o), "[100,110) [300,310)", "commit set unchanged");
	is_int(stats.cache_dirty_bytes, 20, "cache.dirty.bytes: |dirty ∪ sent| (105..108 lies in 100..110)");
	cache_commit_settle(o, CACHE_COMMITTED);
	is_set(object_dirty(o), "[105,108)", "COMMITTED: the re-dirtied bytes stay dirty");
	is_set(object_commit(o), "", "COMMITTED: commit set empty");
	is_set(&o->valid, "[0,4096)", "COMMITTED: the others clean but valid");
	is_int(stats.cache_dirty_bytes, 3, "cache.dirty.bytes");
	is_int(stats.cache_bytes, 4096, "cache.bytes");
	ok(on_dirty_list(o), "still listed");
	is_int(holds(o, 100, 5, 'a'), 0, "100..105 still read");
	is_int(holds(o, 105, 3, 'c'), 0, "105..108 the newest bytes");
	is_int(holds(o, 300, 10, 'b'), 0, "300..310 still read");
	r = cache_dirty_take(o, &n);
	ok(n == 1 && r && r[0] == 105 && r[1] == 108, "the next pass takes (105, 108)");
	free(r);
	cache_commit_settle(o, CACHE_COMMITTED);
	ok(!cache_has_uncommitted(o) && !on_dirty_list(o), "all committed: clean, off the list");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	is_set(&o->valid, "[0,4096)", "valid");

	struct cache_object *p = object("case6b", 4096, 62);
	fetched(p, 0, 4096, 'f', cache_seq());
	written(p, 100, 10, 'a');
	written(p, 300, 10, 'b');
	free(cache_dirty_take(p, &n));
	run_for(0.01);
	ev_tstamp now = ev_now(lp);
	cache_commit_settle(p, CACHE_RESEND);
	is_set(object_dirty(p), "[100,110) [300,310)", "RESEND: dirty again");
	is_set(object_commit(p), "", "RESEND: commit set empty");
	is_set(&p->valid, "[0,4096)", "RESEND: valid");
	is_int(stats.cache_dirty_bytes, 20, "cache.dirty.bytes");
	ok(on_dirty_list(p), "listed");
	ok(cache_dirty_since(p) == now, "dirty since the settle");

	struct cache_object *q = object("case6c", 4096, 63);
	fetched(q, 0, 4096, 'f', cache_seq());
	written(q, 100, 10, 'a');
	written(q, 300, 10, 'b');
	free(cache_dirty_take(q, &n));
	written(q, 305, 3, 'c');
	uint64_t gen = q->gen, before = stats.cache_dirty_bytes;
	cache_commit_settle(q, CACHE_FAILED);
	is_set(object_dirty(q), "[305,308)", "FAILED: the bytes written again stay dirty");
	is_set(object_commit(q), "", "FAILED: commit set empty");
	is_set(&q->valid, "[0,100) [110,300) [305,308) [310,4096)", "FAILED: the rest is not valid");
	is_int(before - stats.cache_dirty_bytes, 17, "cache.dirty.bytes down to the 3 written again");
	is_int(stats.cache_bytes, 3 * 4096 - 17, "cache.bytes");
	ok(q->gen > gen, "the generation moved on");
	is_int(holds(q, 100, 10, 'a'), -EIO, "failed bytes no longer read");
	is_int(holds(q, 305, 3, 'c'), 0, "bytes written again still read");
	is_int(holds(q, 0, 100, 'f'), 0, "clean bytes untouched");
	teardown();
}

/* ---- 7. dropping dirty data ----------------------------------------- */

static void test_drop(void)
{
	setup();
	diag("7. cache_dirty_drop");
	struct cache_object *o = object("case7a", 4096, 71), *p = object("case7b", 4096, 72);
	size_t n;

	fetched(o, 0, 4096, 'f', cache_seq());
	fetched(p, 0, 4096, 'f', cache_seq());
	written(o, 100, 10, 'a');
	written(p, 100, 10, 'b');
	ok(dirty_list_length() == 2 &&
	   cache_uncommitted_object(cache_uncommitted_list()->next) == o,
	   "cache_uncommitted_list(): both, in the order they became dirty");
	free(cache_dirty_take(o, &n));
	written(o, 300, 10, 'c');
	is_int(stats.cache_dirty_bytes, 30, "cache.dirty.bytes");
	is_int(cache_dirty_drop(o, 0, UINT64_MAX), 20, "drop everything of the first: 20 bytes");
	ok(!cache_has_uncommitted(o), "no dirty data left");
	is_set(object_dirty(o), "", "dirty empty");
	is_set(object_commit(o), "", "commit set empty");
	is_set(&o->valid, "[0,100) [110,300) [310,4096)", "the dropped bytes are not valid");
	is_int(stats.cache_dirty_bytes, 10, "cache.dirty.bytes: the other object's");
	is_int(stats.cache_bytes, 2 * 4096 - 20, "cache.bytes");
	ok(!on_dirty_list(o) && on_dirty_list(p) && dirty_list_length() == 1,
	   "off cache_uncommitted_list(), the other one stays");
	is_int(holds(o, 100, 10, 'a'), -EIO, "dropped bytes no longer read");

	written(p, 200, 10, 'd');
	is_int(cache_dirty_drop(p, 105, 205), 10, "drop 105..205 of (100..110, 200..210): 10 bytes");
	is_set(object_dirty(p), "[100,105) [205,210)", "dirty: the rest");
	is_set(&p->valid, "[0,105) [110,200) [205,4096)", "valid");
	is_int(cache_dirty_drop(p, 0, UINT64_MAX), 10, "drop the rest: 10 bytes");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes back to 0");
	ok(list_empty(cache_uncommitted_list()), "cache_uncommitted_list() empty");
	teardown();
}

/* ---- 8. truncation -------------------------------------------------- */

static void test_truncate(void)
{
	setup();
	diag("8. cache_truncate");
	struct cache_object *o = object("case8", 4096, 81);
	size_t n;

	fetched(o, 0, 4096, 'f', cache_seq());
	written(o, 100, 10, 'a');
	written(o, 3000, 10, 'b');
	free(cache_dirty_take(o, &n));
	written(o, 3100, 10, 'c');
	cache_truncate(o, 200);
	is_set(&o->valid, "[0,200)", "valid cut at 200");
	is_set(object_commit(o), "[100,110)", "sent bytes past 200 dropped");
	is_set(object_dirty(o), "", "dirty bytes past 200 dropped");
	is_int(stats.cache_dirty_bytes, 10, "cache.dirty.bytes");
	is_int(stats.cache_bytes, 200, "cache.bytes");
	is_int(cache_client_size(o), 200, "cache_client_size()");
	is_int(backing_size(o), 200, "the backing file is cut too");
	written(o, 150, 10, 'd');
	cache_truncate(o, 105);
	is_set(object_dirty(o), "", "dirty 150..160 dropped");
	is_set(object_commit(o), "[100,105)", "sent range cut at 105");
	is_set(&o->valid, "[0,105)", "valid");
	is_int(stats.cache_dirty_bytes, 5, "cache.dirty.bytes");
	is_int(cache_client_size(o), 105, "cache_client_size()");
	is_int(holds(o, 100, 5, 'a'), 0, "100..105 still read");
	cache_commit_settle(o, CACHE_COMMITTED);
	ok(!cache_has_uncommitted(o) && list_empty(cache_uncommitted_list()), "clean after the pass");
	teardown();
}

/* ---- 9. dirty ranges across a clean restart ------------------------- */

static void test_persistence(void)
{
	struct test_waiter w;
	setup();
	diag("9. dirty ranges survive a restart");
	struct cache_object *o = object("case9a", 4096, 91), *p = object("case9b", 4096, 92);

	fetched(o, 0, 4096, 'f', cache_seq());
	fetched(p, 0, 4096, 'g', cache_seq());
	waiter_init(&w);
	is_int(!cache_write_must_wait(o, &w.w) + !cache_write_must_wait(p, &w.w), 2,
	       "nothing recorded: both may be written at once");
	written(o, 100, 10, 'a');
	written(o, 300, 10, 'b');
	written(p, 100, 10, 'c');
	double waited = wait_batch();
	ok(waited >= 0, "a batch recorded everything (%.2f s)", waited);
	is_int(o->recorded_ranges, 1, "the index holds the valid range");
	is_int(o->wopen, CACHE_WOPEN_RECORDED, "the \"written to\" mark is recorded");
	is_int(w.woken, 0, "nobody waited");
	cache_finalise();

	is_int(cache_open_here(), 0, "cache_init again on the same directory");
	o = find("case9a");
	p = find("case9b");
	ok(o && p, "both objects come back");
	if (!o || !p) {
		teardown();
		return;
	}
	is_set(object_dirty(o), "[100,110) [300,310)", "dirty ranges back");
	is_set(&o->valid, "[0,4096)", "valid: clean stop, everything trusted");
	is_set(object_commit(o), "", "commit set empty");
	is_int(o->wb_recover, CACHE_RECOVER_PENDING, "wb_recover = 1");
	is_int(o->wopen, CACHE_WOPEN_NONE, "not written to in this life yet");
	const struct rpc_cred *wc = cache_wb_cred(o);
	ok(wc != NULL, "a write-back credential");
	if (!wc) {
		teardown();
		return;
	}
	is_int(wc->flavor, RPC_AUTH_SYS, "credential: AUTH_SYS");
	is_int(wc->uid, 1000, "credential: uid");
	is_int(wc->gid, 100, "credential: gid");
	ok(wc->gids_len == 3 && wc->gids[0] == 100 && wc->gids[1] == 200 && wc->gids[2] == 300,
	   "credential: gids 100 200 300");
	is_int(stats.cache_dirty_bytes, 30, "cache.dirty.bytes: 20 + 10");
	is_int(stats.cache_bytes, 2 * 4096, "cache.bytes");
	ok(dirty_list_length() == 2 && on_dirty_list(o) && on_dirty_list(p), "both listed dirty");
	is_int(cache_client_size(o), 4096, "cache_client_size()");
	is_int(holds(o, 100, 10, 'a'), 0, "the dirty bytes read back");
	is_int(holds(o, 300, 10, 'b'), 0, "the other dirty range reads back");

	fattr3 same = upstream_attrs(4096, UPSTREAM_MTIME_S, 91);
	cache_attrs_update(o, &same, cache_seq());
	is_int(o->wb_recover, CACHE_RECOVER_NONE, "matching attributes: wb_recover 0");
	is_set(object_dirty(o), "[100,110) [300,310)", "matching attributes: dirty data kept");
	is_set(&o->valid, "[0,4096)", "matching attributes: valid kept");
	is_int(stats.cache_invalidations, 0, "no invalidation");

	fattr3 other = upstream_attrs(4096, UPSTREAM_MTIME_S + 1, 92);
	cache_attrs_update(p, &other, cache_seq());
	is_int(p->wb_recover, CACHE_RECOVER_NONE, "another mtime: wb_recover 0");
	ok(!cache_has_uncommitted(p), "another mtime: dirty data discarded");
	is_set(&p->valid, "", "another mtime: nothing valid");
	is_int(stats.cache_dirty_bytes, 20, "cache.dirty.bytes: only the first object's");
	ok(!on_dirty_list(p), "off cache_uncommitted_list()");
	is_int(holds(p, 100, 10, 'c'), -EIO, "the discarded bytes no longer read");
	is_int(p->coh.mtime_ns, (int64_t)(UPSTREAM_MTIME_S + 1) * 1000000000 + 500,
	       "the new coherency data taken");
	teardown();
}

/* ---- 10. the "written to" mark and an unclean stop ------------------ */

struct crash_report {
	int init_rc;
	size_t recorded_before;   /* A's recorded valid ranges after the first batch */
	int ready_first, ready_second;
	int woken_in_call;
	int wopen_waiting;
	int woken, woken2;        /* wake() calls after running the loop */
	int wopen_recorded;
	int ready_after;
	int woken_after;          /* the third waiter: never queued */
	int write_rc;
	int batch_ok;
	int late_write_rc;
	int stage;                /* how far the child got */
};

static struct crash_report *report_new(void)
{
	void *m = mmap(NULL, sizeof(struct crash_report), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(m, 0, sizeof(struct crash_report));
	return m;
}

/* Run `child` in a process of its own that ends with _exit(0): no
 * cache_finalise, no last batch.  Returns the child's wait status. */
static int in_crashing_child(void (*child)(struct crash_report *r), struct crash_report *r)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		lp = ev_loop_new(EVFLAG_AUTO);   /* not the parent's epoll set */
		memset(&stats, 0, sizeof(stats));
		r->init_rc = cache_init(lp, &cfg, VOLUME);
		while (r->init_rc == 0 && index_lease_holder() != INDEX_FREE)
			ev_run(lp, EVRUN_ONCE);   /* the start-up reconciliation */
		if (r->init_rc == 0)
			child(r);
		_exit(0);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		;
	return status;
}

static void crash_child(struct crash_report *r)
{
	struct test_waiter w1, w2, w3;
	struct cache_object *a = object("case10a", 4096, 101), *b = object("case10b", 4096, 102);

	fetched(a, 0, 4096, 'f', cache_seq());
	fetched(b, 0, 4096, 'g', cache_seq());
	r->stage = 1;
	if (wait_batch() < 0)
		return;
	r->recorded_before = a->recorded_ranges;
	waiter_init(&w1);
	waiter_init(&w2);
	waiter_init(&w3);
	r->ready_first = !cache_write_must_wait(a, &w1.w);
	r->woken_in_call = w1.woken;
	r->ready_second = !cache_write_must_wait(a, &w2.w);
	r->wopen_waiting = a->wopen;
	r->stage = 2;
	wait_woken(&w1);
	wait_woken(&w2);
	r->woken = w1.woken;
	r->woken2 = w2.woken;
	r->wopen_recorded = a->wopen;
	r->ready_after = !cache_write_must_wait(a, &w3.w);
	r->stage = 3;
	r->write_rc = written(a, 100, 10, 'a');
	r->batch_ok = wait_batch() >= 0;
	r->woken_after = w3.woken;
	r->late_write_rc = written(a, 500, 10, 'z');   /* never recorded */
	r->stage = 4;
}

static void test_crash(void)
{
	struct crash_report *r = report_new();

	diag("10. the \"written to\" mark and an unclean stop");
	new_cache_dir();
	int status = in_crashing_child(crash_child, r);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ran and _exit()ed (0)");
	is_int(r->init_rc, 0, "child: cache_init");
	is_int(r->stage, 4, "child: every step done");
	is_int(r->recorded_before, 1, "child: a batch recorded the valid range");
	is_int(r->ready_first, 0, "child: cache_write_must_wait() true: the mark is not recorded yet");
	is_int(r->woken_in_call, 0, "child: wake() not called from inside cache_write_must_wait()");
	is_int(r->ready_second, 0, "child: a second call before the batch: 0 too");
	is_int(r->wopen_waiting, CACHE_WOPEN_REQUESTED, "child: wopen 1 while the mark is on its way");
	is_int(r->woken, 1, "child: the loop ran the batch: wake() called once");
	is_int(r->woken2, 1, "child: the second waiter woken once too");
	is_int(r->wopen_recorded, CACHE_WOPEN_RECORDED, "child: wopen 2: recorded");
	is_int(r->ready_after, 1, "child: cache_write_must_wait() now false");
	is_int(r->woken_after, 0, "child: ... without queueing the waiter");
	is_int(r->write_rc, 0, "child: write 100..110");
	is_int(r->batch_ok, 1, "child: a batch recorded it");
	is_int(r->late_write_rc, 0, "child: write 500..510, then _exit before a batch");
	munmap(r, sizeof(*r));

	is_int(cache_open_here(), 0, "cache_init on the crashed cache directory");
	struct cache_object *a = find("case10a"), *b = find("case10b");
	ok(a && b, "both objects come back");
	if (!a || !b) {
		teardown();
		return;
	}
	is_set(&a->valid, "[100,110)", "written-to object: only its recorded dirty range is valid");
	is_set(object_dirty(a), "[100,110)", "written-to object: its recorded dirty range");
	is_int(a->wb_recover, CACHE_RECOVER_PENDING, "wb_recover 1");
	is_int(cache_wb_cred(a) ? cache_wb_cred(a)->uid : 0, 1000, "the writer's uid");
	is_int(holds(a, 100, 10, 'a'), 0, "the recorded dirty bytes read back");
	is_int(holds(a, 500, 10, 'z'), -EIO, "the unrecorded write is not trusted");
	is_int(holds(a, 0, 100, 'f'), -EIO, "recorded clean bytes of it are not trusted");
	is_set(&b->valid, "[0,4096)", "an object never written to keeps its recorded range");
	is_set(object_dirty(b), "", "... and has nothing dirty");
	is_int(holds(b, 0, 4096, 'g'), 0, "its bytes read back");
	is_int(stats.cache_bytes, 4096 + 10, "cache.bytes");
	is_int(stats.cache_dirty_bytes, 10, "cache.dirty.bytes");
	teardown();
}

/* ---- 11. a write while the first batch of an object runs ------ */

static void race_child(struct crash_report *r)
{
	struct test_waiter w;
	struct cache_object *a = object("case11", 4096, 111);

	/* only the batches this test starts */
	ev_ref(lp);
	ev_timer_stop(lp, &cache_state.batch_timer);
	fetched(a, 0, 4096, 'f', cache_seq());
	batch_start();   /* the batch recording 0..4096 (without the mark) is running */
	r->stage = 1;
	waiter_init(&w);
	r->ready_first = !cache_write_must_wait(a, &w.w);
	if (!r->ready_first && !wait_woken(&w))
		return;
	r->stage = 2;
	r->write_rc = written(a, 100, 10, 'a');
	while (index_lease_holder() != INDEX_FREE)
		ev_run(lp, EVRUN_ONCE);
	r->recorded_before = a->recorded_ranges;
	r->stage = 3;   /* _exit: a crash before the next batch */
}

static void test_write_during_batch(void)
{
	struct crash_report *r = report_new();

	diag("11. a write while a batch records the object's ranges without the mark");
	new_cache_dir();
	int status = in_crashing_child(race_child, r);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 && r->init_rc == 0 && r->stage == 3,
	   "the child ran every step and _exit()ed");
	is_int(r->ready_first, 0, "cache_write_must_wait() true while a batch without the mark runs");
	munmap(r, sizeof(*r));

	is_int(cache_open_here(), 0, "cache_init on the crashed cache directory");
	struct cache_object *a = find("case11");
	ok(a != NULL, "the object comes back");
	if (!a) {
		teardown();
		return;
	}
	ok(!extent_set_covers(&a->valid, 100, 110),
	   "the unrecorded local write is not trusted as the upstream's bytes");
	diag("    valid bytes %llu, dirty bytes %llu, 100..110 read: %d",
	     (unsigned long long)a->valid.bytes, (unsigned long long)object_dirty(a)->bytes,
	     holds(a, 100, 10, 'a'));
	teardown();
}

/* ---- 12. invalidation with bytes both sent and dirty ----------- */

static void test_invalidate_overlap(void)
{
	setup();
	diag("12. cache_invalidate when bytes being sent were written again");
	struct cache_object *o = object("case12", 4096, 121);
	size_t n;

	written(o, 100, 10, 'a');
	free(cache_dirty_take(o, &n));
	written(o, 100, 10, 'b');   /* sent and dirty: 10 bytes counted twice */
	fetched(o, 200, 10, 'f', cache_seq());
	is_set(&o->valid, "[100,110) [200,210)", "valid: 10 local + 10 clean bytes");
	cache_invalidate(o, "test");
	is_set(&o->valid, "[100,110)", "the clean bytes 200..210 are dropped");
	is_int(stats.cache_invalidations, 1, "cache.invalidations");
	is_set(object_dirty(o), "[100,110)", "dirty kept");
	is_set(object_commit(o), "[100,110)", "commit set kept");
	teardown();
}

/* ---- 13. recovered dirty data on a changed file, log level error - */

static void test_recover_quiet(void)
{
	setup();
	diag("13. recovered dirty data of a changed file, with log level \"error\"");
	struct cache_object *o = object("case13", 4096, 131);

	fetched(o, 0, 4096, 'f', cache_seq());
	written(o, 100, 10, 'a');
	cache_finalise();
	log_set_level(LOG_LEVEL_ERROR);
	is_int(cache_open_here(), 0, "cache_init again");
	o = find("case13");
	ok(o && o->wb_recover == CACHE_RECOVER_PENDING && object_dirty(o)->bytes == 10,
	   "the dirty range comes back");
	if (o) {
		fattr3 other = upstream_attrs(4096, UPSTREAM_MTIME_S + 1, 131);
		cache_attrs_update(o, &other, cache_seq());
		is_int(o->wb_recover, CACHE_RECOVER_NONE, "wb_recover 0");
		ok(!cache_has_uncommitted(o), "the dirty data of the changed file is discarded");
		is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	}
	log_set_level(LOG_LEVEL_INFO);
	teardown();
}

/* ---- 14. culling ---------------------------------------------------- */

/* Run the loop until the culling run ends.  0, or -1 after WAIT_MAX_S. */
static int wait_cull(void)
{
	struct cache_space sp;

	for (double waited = 0;; waited += 0.05) {
		cache_space(&sp);
		if (sp.state != CACHE_CULLING)
			return 0;
		if (waited > WAIT_MAX_S)
			return -1;
		run_for(0.05);
	}
}

static int backing_exists(uint64_t id)
{
	char path[4200];
	struct stat st;

	backing_path(id, path, sizeof(path));
	return stat(path, &st) == 0;
}

static void test_cull(void)
{
	struct cache_object *o[24];
	uint64_t ids[24];
	char name[16];
	struct cache_space sp;

	diag("14. culling under max_size: least recently used first, never dirty or busy");
	/* 100 KiB: stop storing past 96 KiB (bstop 4%), cull above 92 KiB
	 * (bcull 8%) down to 88 KiB (brun 12%) */
	cfg.max_size = 100 * 1024;
	cfg.brun = 12;
	cfg.bcull = 8;
	cfg.bstop = 4;
	setup();
	int stored = 0;
	for (int i = 0; i < 22; i++) {
		snprintf(name, sizeof(name), "cull%02d", i);
		o[i] = object(name, 4096, 1400 + (uint64_t)i);
		ids[i] = o[i]->id;
		stored += fetched(o[i], 0, 4096, 'a' + i, cache_seq()) == 0;
	}
	is_int(stored, 22, "22 objects of 4 KiB stored (88 KiB)");
	cache_space(&sp);
	is_int(sp.state, CACHE_CACHING, "88 KiB of 100: above bcull, caching");
	is_int(stats.cache_culled_objects, 0, "nothing culled");
	is_int(written(o[1], 0, 100, 'W'), 0, "object 1 holds dirty bytes");
	cache_pin(o[2]);   /* a call in flight on object 2 */
	ok(wait_batch() >= 0, "the objects are in the index");
	is_int(cache_cull_now(NULL, NULL), -EALREADY, "nfscachectl cull above brun: nothing to do");

	o[22] = object("cull22", 8192, 1422);
	ids[22] = o[22]->id;
	is_int(fetched(o[22], 0, 8192, 'x', cache_seq()), 0, "8 KiB more: stored (96 KiB)");
	cache_space(&sp);
	is_int(sp.state, CACHE_CULLING, "below bcull: culling");
	o[23] = object("cull23", 8192, 1423);
	ids[23] = o[23]->id;
	is_int(fetched(o[23], 0, 4096, 'y', cache_seq()), -ENOSPC,
	       "past bstop: not stored (-ENOSPC, the caller answers from its buffer)");
	is_int(o[23]->valid.bytes, 0, "... nothing of it marked valid");
	is_int(stats.cache_nospace, 0, "... and no ENOSPC event counted: nothing was written");
	is_int(wait_cull(), 0, "the run ends");
	ok(find("cull00") == NULL && find("cull03") == NULL,
	   "the two least recently used clean objects are culled (0, 3)");
	ok(find("cull01") != NULL, "the dirty object is kept");
	ok(find("cull02") != NULL, "the busy object is kept");
	int kept = 0;
	for (int i = 4; i < 23; i++) {
		snprintf(name, sizeof(name), "cull%02d", i);
		kept += find(name) != NULL;
	}
	is_int(kept, 19, "every newer object is kept");
	is_int(stats.cache_culled_objects, 2, "cache.culled.objects");
	is_int(stats.cache_culled_bytes, 8192, "cache.culled.bytes");
	is_int(stats.cache_bytes, 88 * 1024, "cache.bytes back at brun");
	cache_space(&sp);
	is_int(sp.state, CACHE_CACHING, "caching again");
	is_int(sp.run_objects, 2, "the run's count");
	run_for(0.3);   /* the graveyard job */
	ok(!backing_exists(ids[0]) && !backing_exists(ids[3]), "their backing files are deleted");
	ok(backing_exists(ids[4]), "a kept object's file is there");
	char gy[4200];
	snprintf(gy, sizeof(gy), "%s/graveyard", cache_dir);
	DIR *d = opendir(gy);
	int entries = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		entries += e->d_name[0] != '.';
	if (d)
		closedir(d);
	is_int(entries, 0, "the graveyard is empty");
	is_int(holds(find("cull04"), 0, 4096, 'a' + 4), 0, "a kept object's bytes read back");

	/* the culled rows left the index */
	cache_unpin(o[2]);
	ok(wait_batch() >= 0, "the removals reached the index");
	cache_finalise();
	ok(cache_open_here() == 0, "cache_init again");
	ok(find("cull00") == NULL && find("cull03") == NULL, "culled objects are not in the index");
	ok(find("cull01") != NULL && find("cull04") != NULL, "kept ones are");

	/* a WRITE written through when the cache may not store: the older
	 * bytes the cache held of the range must not be served any more */
	struct cache_object *k = find("cull04");
	is_int(holds(k, 0, 4096, 'a' + 4), 0, "object 4 holds its bytes");
	cfg.max_size = stats.cache_bytes;   /* no room for anything more */
	is_int(fetched(k, 0, 4096, 'N', cache_seq()), -ENOSPC, "new bytes of it: not stored");
	is_int(k->valid.bytes, 0, "... and the older ones are no longer valid");
	ok(holds(k, 0, 4096, 'a' + 4) != 0, "... nor read back");
	teardown();
	cfg.max_size = 0;
	cfg.brun = cfg.bcull = cfg.bstop = 0;
}

/* ---- 15. start-up reconciliation ------------------------------------ */

static void test_reconcile(void)
{
	char path[4200];

	diag("15. start-up reconciliation: orphan files, rows without a file, the graveyard");
	setup();
	struct cache_object *a = object("rec-a", 4096, 1500), *b = object("rec-b", 4096, 1501);
	struct cache_object *c = object("rec-c", 4096, 1502), *z = object("rec-z", 4096, 1503);
	uint64_t a_id = a->id, b_id = b->id, c_id = c->id;
	is_int(fetched(a, 0, 4096, 'a', cache_seq()), 0, "object a stored");
	is_int(fetched(b, 0, 4096, 'b', cache_seq()), 0, "object b stored");
	is_int(fetched(c, 0, 4096, 'c', cache_seq()), 0, "object c stored");
	(void)z;   /* the largest id: c's is below it */
	ok(wait_batch() >= 0, "in the index");
	cache_finalise();
	/* c's row goes, its file stays: an orphan below the largest id */
	int reset = 0;
	struct cache_index *ix = index_open(cache_dir, &reset);
	struct index_record del = { .id = c_id, .deleted = 1 };
	ok(ix && !reset && index_write(ix, &del, 1) == 0, "c's row removed from the index");
	index_close(ix);
	/* a file no row names, b's file gone, something in the graveyard */
	uint64_t orphan = b_id + 1000;
	backing_path(orphan, path, sizeof(path));
	int fd = open(path, O_CREAT | O_WRONLY, 0600);
	ok(fd >= 0 && write(fd, "x", 1) == 1, "an orphan backing file");
	close(fd);
	backing_path(b_id, path, sizeof(path));
	ok(unlink(path) == 0, "b's backing file removed");
	snprintf(path, sizeof(path), "%s/graveyard/leftover", cache_dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	close(fd);

	ok(cache_open_here() == 0, "cache_init (waits for the reconciliation)");
	run_for(0.3);   /* the worker deleting files above the largest id */
	ok(!backing_exists(orphan), "the orphan file above the largest id is deleted");
	ok(!backing_exists(c_id), "the orphan file below it is deleted");
	ok(cache_state.next_id > orphan, "no new object takes the orphan's id");
	ok(find("rec-b") == NULL, "the object whose file is missing is removed");
	ok(find("rec-a") != NULL && backing_exists(a_id), "the other one stays, with its file");
	is_int(holds(find("rec-a"), 0, 4096, 'a'), 0, "and its bytes");
	ok(access(path, F_OK) != 0, "the graveyard is emptied");
	ok(wait_batch() >= 0, "the removal reaches the index");
	cache_finalise();
	ok(cache_open_here() == 0, "cache_init again");
	ok(find("rec-b") == NULL, "the row is gone from the index");
	teardown();
}

/* ---- 16. pins ------------------------------------------------------- */

static void count_call(void *arg, const struct cache_space *space)
{
	(void)space;
	(*(int *)arg)++;
}

/* Over max_size (100 KiB, 96 KiB held: below bcull, above bstop) with one
 * object: the culling run must pass it over while it is pinned. */
static void test_pin(void)
{
	struct cache_space sp;
	int calls = 0;

	diag("16. a pinned object is never culled; unpinned, it is");
	setup();
	struct cache_object *a = object("pin0", 96 * 1024, 1600);
	is_int(fetched(a, 0, 96 * 1024, 'p', cache_seq()), 0, "96 KiB stored");
	ok(wait_batch() >= 0, "in the index");
	cache_pin(a);
	cache_pin(a);
	cache_unpin(a);   /* pins count: one is left */
	cfg.max_size = 100 * 1024;
	cfg.brun = 12;
	cfg.bcull = 8;
	cfg.bstop = 4;
	cache_space_check();
	cache_space(&sp);
	is_int(sp.state, CACHE_CULLING, "below bcull: a culling run");
	is_int(wait_cull(), 0, "the run ends");
	ok(find("pin0") == a, "the pinned object is kept");
	cache_space(&sp);
	is_int(sp.starved, 1, "nothing could be culled");
	is_int(stats.cache_culled_objects, 0, "cache.culled.objects 0");

	cache_unpin(a);
	is_int(cache_cull_now(count_call, &calls), 0, "nfscachectl cull: done() will be called");
	is_int(calls, 0, "... not from inside cache_cull_now()");
	for (double waited = 0; calls == 0 && waited < WAIT_MAX_S; waited += 0.05)
		run_for(0.05);
	is_int(calls, 1, "done() called once");
	ok(find("pin0") == NULL, "unpinned, it is culled");
	is_int(stats.cache_culled_objects, 1, "cache.culled.objects 1");
	teardown();
	cfg.max_size = 0;
	cfg.brun = cfg.bcull = cfg.bstop = 0;
}

/* ---- 17. the index lease -------------------------------------------- */

static void test_lease(void)
{
	struct cache_space sp;

	diag("17. the index lease: a culling step waits for a batch, a batch for a culling step");
	setup();
	struct cache_object *a = object("lease0", 96 * 1024, 1700);
	is_int(fetched(a, 0, 96 * 1024, 'l', cache_seq()), 0, "96 KiB stored");
	ok(wait_batch() >= 0, "in the index");
	is_int(index_lease_holder(), INDEX_FREE, "nobody holds the index");

	/* a batch holds the index (its worker job not done yet) */
	ok(index_lease_take(INDEX_HELD_BATCH), "a batch takes it");
	cfg.max_size = 100 * 1024;
	cfg.brun = 12;
	cfg.bcull = 8;
	cfg.bstop = 4;
	cache_space_check();   /* below bcull: the run's first step wants the index */
	cache_space(&sp);
	is_int(sp.state, CACHE_CULLING, "a culling run is on");
	is_int(index_lease_holder(), INDEX_HELD_BATCH,
	       "... its step does not start while the batch holds it");
	ok(find("lease0") == a, "... nothing culled");
	index_lease_release();
	is_int(index_lease_holder(), INDEX_HELD_CULL, "the batch released it: the culling step took it");

	/* the reverse: a culling step holds it, a batch must wait */
	struct cache_object *b = object("lease1", 4096, 1701);
	ok(!list_empty(&cache_state.persist_queue), "a new object for the index");
	batch_start();
	is_int(index_lease_holder(), INDEX_HELD_CULL, "a batch does not start while culling holds it");
	ok(b->persist_queued && cache_state.batch_again, "... it is queued, and asked for");
	is_int(wait_cull(), 0, "the run ends");
	ok(find("lease0") == NULL, "the culling step culled the clean object");
	ok(wait_batch() >= 0, "the batch ran once culling released the index");
	ok(!b->persist_queued, "... with the new object");
	teardown();
	cfg.max_size = 0;
	cfg.brun = cfg.bcull = cfg.bstop = 0;
}

/* ---- 18. the order culling follows ---------------------------------- */

/* 4 KiB objects "ord00".. stored under max_size 100 KiB (brun/bcull/bstop
 * 12/8/4%): each run culls two of them. */
static struct cache_object *ord_object(int i)
{
	char name[16];

	snprintf(name, sizeof(name), "ord%02d", i);
	struct cache_object *o = object(name, 4096, 1800 + (uint64_t)i);
	if (fetched(o, 0, 4096, 'o', cache_seq()) != 0)
		return NULL;
	return o;
}

static int ord_held(int i)
{
	char name[16];

	snprintf(name, sizeof(name), "ord%02d", i);
	return find(name) != NULL;
}

static void test_cull_order(void)
{
	struct cache_space sp;
	struct cache_object *o[28];
	int stored = 0;

	diag("18. culling order: objects not in the index yet are culled in their place; "
	     "a run starts at the head of the order");
	setup();
	cfg.max_size = 100 * 1024;
	cfg.brun = 12;
	cfg.bcull = 8;
	cfg.bstop = 4;
	/* 24 objects (96 KiB) within one batch interval: none is in the index
	 * when the run that cache.bytes starts asks for the order */
	for (int i = 0; i < 24; i++)
		stored += (o[i] = ord_object(i)) != NULL;
	is_int(stored, 24, "24 objects of 4 KiB stored, no batch in between");
	cache_space(&sp);
	is_int(sp.state, CACHE_CULLING, "below bcull: culling");
	is_int(wait_cull(), 0, "the run ends");
	cache_space(&sp);
	is_int(sp.starved, 0, "it did not starve: the objects the index had not recorded are culled");
	is_int(stats.cache_culled_objects, 2, "two objects culled");
	ok(!ord_held(0) && !ord_held(1), "the two least recently used ones (0, 1)");
	int kept = 0;
	for (int i = 2; i < 24; i++)
		kept += ord_held(i);
	is_int(kept, 22, "every newer one is kept");

	/* a run passes over an object in use; the next run starts at the head
	 * of the order again, where that object is the oldest */
	ok(wait_batch() >= 0, "the objects are in the index");
	cache_pin(o[2]);   /* a call in flight on the oldest */
	stored = (o[24] = ord_object(24)) != NULL;
	stored += (o[25] = ord_object(25)) != NULL;
	is_int(stored, 2, "8 KiB more");
	is_int(wait_cull(), 0, "the run ends");
	ok(ord_held(2), "the object in use is kept");
	ok(!ord_held(3) && !ord_held(4), "the next two are culled (3, 4)");
	cache_unpin(o[2]);
	ok(wait_batch() >= 0, "the index learned it all");
	stored = (o[26] = ord_object(26)) != NULL;
	stored += (o[27] = ord_object(27)) != NULL;
	is_int(stored, 2, "8 KiB more");
	is_int(wait_cull(), 0, "the run ends");
	ok(!ord_held(2), "the object passed over before, now the least recently used, is culled");
	ok(!ord_held(5), "and the next one (5)");
	kept = 0;
	for (int i = 6; i < 28; i++)
		kept += ord_held(i);
	is_int(kept, 22, "every newer one is kept (6..27)");
	is_int(stats.cache_culled_objects, 6, "six objects culled in all");
	teardown();
	cfg.max_size = 0;
	cfg.brun = cfg.bcull = cfg.bstop = 0;
}

/* ---- 19. backing files closed while their ranges wait for a batch ---- */

/* Descriptors this process holds. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3;   /* ".", ".." and the directory's own */
}

#define FD_OBJECTS (1024 + 300)   /* more than the backing files kept open (1024) */

static void test_closed_while_queued(void)
{
	char name[32];
	int before, after, stored = 0;

	setup();
	diag("19. %d objects fetched before any batch: the backing files closed while queued "
	     "hold no descriptor, and all of them are recorded", FD_OBJECTS);
	before = open_fds();
	/* the loop does not run: no batch starts meanwhile */
	for (int i = 0; i < FD_OBJECTS; i++) {
		snprintf(name, sizeof(name), "case19-%d", i);
		struct cache_object *o = object(name, 64, 1900 + (uint64_t)i);
		stored += fetched(o, 0, 64, 'a' + i % 26, cache_seq()) == 0;
	}
	after = open_fds();
	is_int(stored, FD_OBJECTS, "every fetch stored");
	is_int(cache_state.n_open, 1024, "1024 backing files open");
	ok(before >= 0 && after - before <= 1024,
	   "descriptors: %d more, no more than the open backing files", after - before);
	is_int(cache_state.sync_ids.n, FD_OBJECTS - 1024, "the closed ones wait for the batch by id");
	ok(wait_batch() >= 0, "a batch recorded them");
	is_int(cache_state.sync_ids.n, 0, "none left to sync");
	is_int(open_fds(), after, "the batch left no descriptor behind");
	cache_finalise();

	is_int(cache_open_here(), 0, "cache_init again on the same directory");
	is_int(stats.cache_objects, FD_OBJECTS, "cache.objects after the restart");
	is_int(stats.cache_bytes, FD_OBJECTS * 64, "cache.bytes: every object's range");
	int right = 0;
	for (int i = 0; i < FD_OBJECTS; i++) {
		snprintf(name, sizeof(name), "case19-%d", i);
		struct cache_object *o = find(name);
		right += o && holds(o, 0, 64, 'a' + i % 26) == 0;
	}
	is_int(right, FD_OBJECTS, "every object's bytes read back from the cache");
	teardown();
}

/* ---- 20. objects in memory on demand ------------------------------- */

#define RES_OBJECTS 60
#define RES_MAX 10

static void test_resident(void)
{
	char name[32];
	struct test_waiter w;

	setup();
	diag("20. %d objects with cache.resident_max %d: the others found in the index on demand",
	     RES_OBJECTS, RES_MAX);
	cfg.resident_max = RES_MAX;
	for (int i = 0; i < RES_OBJECTS; i++) {
		snprintf(name, sizeof(name), "case20-%d", i);
		struct cache_object *o = object(name, 100, 2000 + (uint64_t)i);
		fetched(o, 0, 100, 'a' + i % 26, cache_seq());
	}
	struct cache_object *d = find("case20-0");
	written(d, 0, 10, 'Z');   /* dirty: stays in memory */
	ok(wait_batch() >= 0, "a batch recorded them");
	ok(wait_batch() >= 0, "and the next one (the \"written to\" mark cleared)");
	run_for(0.1);
	is_int(stats.cache_objects, RES_OBJECTS, "cache.objects counts every object");
	is_int(stats.cache_bytes, RES_OBJECTS * 100, "cache.bytes counts every object's bytes");
	ok(cache_state.count <= RES_MAX, "%zu objects resident, at most %d", cache_state.count,
	   RES_MAX);
	is_int(stats.cache_objects_resident, cache_state.count, "cache.objects.resident");
	ok(cache_find_resident((const uint8_t *)"case20-0", 8) == d, "the dirty object stayed");
	ok(!cache_find_resident((const uint8_t *)"case20-1", 8), "the least recently used left");
	ok(!cache_get((const uint8_t *)"case20-1", 8),
	   "cache_get() of a handle not resolved: NULL, no second object");

	waiter_init(&w);
	is_int(cache_resolve((const uint8_t *)"case20-1", 8, &w.w), 0, "a lookup is on its way");
	is_int(w.woken, 0, "not woken from inside the call");
	ok(wait_woken(&w), "woken once the lookup answered");
	struct cache_object *o = cache_find((const uint8_t *)"case20-1", 8);
	ok(o != NULL, "the object is resident again");
	is_int(stats.cache_index_lookups, 1, "cache.index.lookups 1");
	is_int(o ? holds(o, 0, 100, 'a' + 1) : -1, 0, "its bytes read back");
	ok(o && !cache_attrs_fresh(o), "its attributes are revalidated before use");
	waiter_init(&w);
	is_int(cache_resolve((const uint8_t *)"case20-1", 8, &w.w), -EALREADY,
	       "resident: nothing to wait for");

	waiter_init(&w);
	is_int(cache_resolve((const uint8_t *)"case20-new", 10, &w.w), 0, "a new handle is looked up");
	ok(wait_woken(&w), "answered");
	is_int(stats.cache_index_lookups, 1, "not found: not counted");
	ok(cache_get((const uint8_t *)"case20-new", 10) != NULL, "known absent: cache_get creates it");
	is_int(stats.cache_objects, RES_OBJECTS + 1, "cache.objects + 1");
	cache_finalise();

	is_int(cache_open_here(), 0, "cache_init again");
	is_int(cache_state.count, 1, "only the dirty object is loaded at start");
	is_int(stats.cache_objects, RES_OBJECTS + 1, "cache.objects from the index's totals");
	is_int(stats.cache_bytes, RES_OBJECTS * 100, "cache.bytes from the index's totals");
	int right = 0;
	for (int i = 1; i < RES_OBJECTS; i++) {
		snprintf(name, sizeof(name), "case20-%d", i);
		o = find(name);
		right += o && holds(o, 0, 100, 'a' + i % 26) == 0;
		run_for(0.001);   /* eviction runs between loop callbacks */
	}
	is_int(right, RES_OBJECTS - 1, "every object found on demand, its bytes right");
	ok(cache_state.count <= RES_MAX + 1, "resident: %zu", cache_state.count);

	is_int(cache_invalidate_stored(), RES_OBJECTS + 1 - cache_state.count,
	       "invalidate --all: the objects not in memory");
	ok(wait_batch() >= 0, "their ranges dropped by a batch");
	o = find("case20-1");
	ok(o && o->valid.bytes == 0, "an object brought back after it has no valid bytes");
	cfg.resident_max = 1000000;
	teardown();
}

/* ---- 21. bytes per resident object -------------------------------- */

/*
 * The bytes glibc's allocator takes for the block at `p`: its usable size
 * plus the 8-byte chunk header, in 16-byte granules, 32 at least (x86-64).
 * malloc_usable_size() gives the usable size under glibc and the size asked
 * for under ASan: both round to the same chunk, so the count is the same
 * in both builds.
 */
static size_t chunk_bytes(const void *p)
{
	if (!p)
		return 0;
	size_t n = (malloc_usable_size((void *)p) + 8 + 15) & ~(size_t)15;
	return n < 32 ? 32 : n;
}

/* The chunk of a set's tree root: a set of one range holds it inline (none). */
static size_t set_root_bytes(const struct extent_set *s)
{
	return s->count >= 2 ? chunk_bytes(s->held.root) : 0;
}

/* Heap bytes in use (malloc'd and mmap'd): under ASan the allocator is
 * ASan's and glibc's figure does not move, so it is not asked. */
static size_t heap_in_use(void)
{
#ifdef __SANITIZE_ADDRESS__
	return 0;
#else
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
#endif
}

#define BYTES_OBJECTS 100000
#define BYTES_FH_LEN 32         /* ganesha's and knfsd's handles are shorter than 64 */
#define BYTES_CLEAN_MAX 368     /* the object with one valid range and one ACCESS slot */
#define BYTES_TABLE_MAX 16      /* the object table's bucket per object */

static void bytes_fh(uint8_t *fh, uint32_t i, uint8_t fill)
{
	memset(fh, fill, BYTES_FH_LEN);
	memcpy(fh, &i, sizeof(i));
}

static void test_object_bytes(void)
{
	const struct rpc_cred reader = { .flavor = RPC_AUTH_SYS, .uid = 1000, .gid = 100 };
	uint8_t fh[BYTES_FH_LEN];
	size_t pieces = 0, access = 0, shared = 0;

	setup();
	diag("21. bytes per resident object: %d clean objects with a %d-byte handle",
	     BYTES_OBJECTS, BYTES_FH_LEN);
	size_t h0 = heap_in_use();
	for (uint32_t i = 0; i < BYTES_OBJECTS; i++) {
		bytes_fh(fh, i, 0xa5);
		struct cache_object *o = cache_get(fh, sizeof(fh));
		fattr3 a = upstream_attrs(4096, UPSTREAM_MTIME_S, i + 1);
		cache_attrs_update(o, &a, cache_seq());
		extent_set_add(&o->valid, 0, 4096);   /* one range, as a fetch leaves it */
		bytes_changed(0, 4096);
		shared += o->access != NULL || o->dirty_state != NULL;
		pieces += chunk_bytes(o) + set_root_bytes(&o->valid);
	}
	size_t h1 = heap_in_use();
	for (uint32_t i = 0; i < BYTES_OBJECTS; i++) {
		bytes_fh(fh, i, 0xa5);
		struct cache_object *o = cache_find(fh, sizeof(fh));
		cache_access_record(o, &reader, ACCESS3_READ, ACCESS3_READ);
		access += chunk_bytes(o->access);
	}
	size_t h2 = heap_in_use();
	size_t table = cache_state.nbuckets * sizeof(*cache_state.buckets) / BYTES_OBJECTS;
	diag("sizeof(struct cache_object) %zu, the handle at %zu", sizeof(struct cache_object),
	     offsetof(struct cache_object, fh));
	diag("clean object, one valid range: %zu bytes (object and extent node chunks), "
	     "+%zu for one ACCESS slot, +%zu of the object table",
	     pieces / BYTES_OBJECTS, access / BYTES_OBJECTS, table);
	is_int(shared, 0, "no ACCESS slots nor write-back state before they are needed");
	ok((pieces + access) / BYTES_OBJECTS <= BYTES_CLEAN_MAX, "clean object: %zu bytes <= %d",
	   (pieces + access) / BYTES_OBJECTS, BYTES_CLEAN_MAX);
	ok(table <= BYTES_TABLE_MAX, "object table: %zu bytes per object <= %d", table,
	   BYTES_TABLE_MAX);
#ifndef __SANITIZE_ADDRESS__
	diag("heap in use: %zu bytes per clean object, %zu with its ACCESS slot",
	     (h1 - h0) / BYTES_OBJECTS, (h2 - h0) / BYTES_OBJECTS);
	ok((h2 - h0) / BYTES_OBJECTS <= BYTES_CLEAN_MAX + BYTES_TABLE_MAX,
	   "heap in use per clean object and its slot: %zu <= %d", (h2 - h0) / BYTES_OBJECTS,
	   BYTES_CLEAN_MAX + BYTES_TABLE_MAX);
#else
	(void)h0;
	(void)h1;
	(void)h2;
	diag("heap in use: not measured under ASan (its allocator is not glibc's)");
#endif
	for (uint32_t i = 0; i < BYTES_OBJECTS; i++) {
		bytes_fh(fh, i, 0xa5);
		object_remove(cache_find(fh, sizeof(fh)));
	}
	is_int(stats.cache_objects, 0, "cache.objects 0 once they are removed");
	teardown();
}

/* ---- 22. write-back credentials shared -------------------------------- */

#define CRED_OBJECTS 10000
#define BYTES_DIRTY_MAX 496     /* a clean object's, the write-back state and its range */

static void test_shared_creds(void)
{
	struct rpc_cred creds[3];
	struct cache_object **objs = calloc(CRED_OBJECTS, sizeof(*objs));
	uint8_t fh[BYTES_FH_LEN], data[100];
	size_t pieces = 0, state = 0, same = 0, written_ok = 0;

	if (!objs)
		abort();
	setup();
	diag("22. %d objects written by 3 credentials share 3 copies of them", CRED_OBJECTS);
	for (int k = 0; k < 3; k++) {
		creds[k] = writer;
		creds[k].uid = 2000 + (uint32_t)k;
	}
	memset(data, 'w', sizeof(data));
	size_t h0 = heap_in_use();
	for (uint32_t i = 0; i < CRED_OBJECTS; i++) {
		bytes_fh(fh, i, 0x5a);
		struct cache_object *o = objs[i] = cache_get(fh, sizeof(fh));
		fattr3 a = upstream_attrs(0, UPSTREAM_MTIME_S, i + 1);
		cache_attrs_update(o, &a, cache_seq());
		written_ok += cache_write_local(o, 0, data, sizeof(data), &creds[i % 3]) == 0;
		pieces += chunk_bytes(o) + set_root_bytes(&o->valid);
		if (o->dirty_state)
			state += chunk_bytes(o->dirty_state) + set_root_bytes(&o->dirty_state->dirty);
	}
	size_t h1 = heap_in_use();
	is_int(written_ok, CRED_OBJECTS, "every write accepted");
	is_int(cred_count(), 3, "3 distinct credentials held");
	for (uint32_t i = 3; i < CRED_OBJECTS; i++)
		same += cache_wb_cred(objs[i]) == cache_wb_cred(objs[i - 3]) &&
			cache_wb_cred(objs[i]) != cache_wb_cred(objs[i - 1]);
	is_int(same, CRED_OBJECTS - 3, "objects of one writer point to one copy, of another to another");
	ok(cred_equal(cache_wb_cred(objs[1]), &creds[1]), "the copy is the writer's credential");
	is_int(stats.cache_dirty_bytes, CRED_OBJECTS * sizeof(data), "cache.dirty.bytes");
	diag("dirty object, 100 bytes written: %zu bytes (a clean one's %zu, the write-back state "
	     "and its dirty range %zu); the credential shared",
	     (pieces + state) / CRED_OBJECTS, pieces / CRED_OBJECTS, state / CRED_OBJECTS);
	ok((pieces + state) / CRED_OBJECTS <= BYTES_DIRTY_MAX, "dirty object: %zu bytes <= %d",
	   (pieces + state) / CRED_OBJECTS, BYTES_DIRTY_MAX);
#ifndef __SANITIZE_ADDRESS__
	diag("heap in use: %zu bytes per dirty object", (h1 - h0) / CRED_OBJECTS);
#else
	(void)h0;
	(void)h1;
#endif

	/* the same writer under another stamp is the same credential */
	struct rpc_cred restamped = creds[0];
	restamped.stamp = 12345;
	written_ok = cache_write_local(objs[0], 0, data, 10, &restamped) == 0;
	ok(written_ok && cred_count() == 3 && cache_wb_cred(objs[0]) == cache_wb_cred(objs[3]),
	   "another stamp: still 3 copies, the same one");
	/* another machine name is another credential */
	struct rpc_cred elsewhere = creds[0];
	snprintf(elsewhere.machinename, sizeof(elsewhere.machinename), "other");
	written_ok = cache_write_local(objs[0], 0, data, 10, &elsewhere) == 0;
	ok(written_ok && cred_count() == 4 && cache_wb_cred(objs[0]) != cache_wb_cred(objs[3]),
	   "another machine name: a 4th copy");

	/* half committed upstream, half dropped: the write-back state ends */
	size_t n, left = 0;
	for (uint32_t i = 0; i < CRED_OBJECTS; i++) {
		if (i % 2) {
			free(cache_dirty_take(objs[i], &n));
			cache_commit_settle(objs[i], CACHE_COMMITTED);
		} else
			cache_dirty_drop(objs[i], 0, UINT64_MAX);
		left += objs[i]->dirty_state != NULL;
	}
	is_int(left, 0, "no write-back state left once nothing is uncommitted");
	is_int(cred_count(), 0, "no credential held");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	is_int(dirty_list_length(), 0, "cache_uncommitted_list() empty");

	/* an object freed with its write-back state gives its reference back */
	written_ok = cache_write_local(objs[1], 0, data, 10, &creds[1]) == 0;
	ok(written_ok && cred_count() == 1, "written again: 1 credential");
	cache_finalise();
	is_int(cred_count(), 0, "cache_finalise freed it with the object");
	backing_remove_tree(cache_dir);
	free(objs);
}

int main(void)
{
	lp = ev_loop_new(EVFLAG_AUTO);
	if (!lp)
		return 1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.page_size = 4096;
	cfg.partial_pages = 1;
	cfg.acregmin = 3;
	cfg.acregmax = 60;
	cfg.dirty_expire_ms = 30000;
	cfg.max_dirty = 64 << 20;
	cfg.resident_max = 1000000;
	log_init(1, LOG_LEVEL_INFO);

	test_write_extends();
	test_write_gap();
	test_ranges_in_page();
	test_store_under_dirty();
	test_invalidate();
	test_changes_raced();
	test_pass();
	test_drop();
	test_truncate();
	test_persistence();
	test_crash();
	test_write_during_batch();
	test_invalidate_overlap();
	test_recover_quiet();
	test_cull();
	test_reconcile();
	test_pin();
	test_lease();
	test_cull_order();
	test_closed_while_queued();
	test_resident();
	test_object_bytes();
	test_shared_creds();

	ev_loop_destroy(lp);
	return done();
}
