/*
 * test_nfs_read.c — the READ state machine of daemon/nfs_read.c (DESIGN.md
 * "Read cache", "Coherency"), driven through nfsd_proc_read() with the
 * fake upstream (fake_upstream.h) on the real cache/ module, a temporary
 * cache directory and a real libev loop.  Each case asserts the bytes and
 * status answered, the READ counters that say where the bytes came from,
 * and the upstream calls sent:
 *   1. a hit: every byte valid in wholly uptodate pages — no upstream call;
 *   2. a partial hit: a partially uptodate page answers locally (and with
 *      cache.partial_pages = no it is fetched);
 *   3. a miss on a page range being fetched joins that fetch: one upstream
 *      READ answers both;
 *   4. a fetch that a WRITE overtook (the generation moved on) answers its
 *      client but is not stored, and leaves the attributes alone;
 *   5. readahead on sequential access only, in a window that doubles at
 *      its async marker up to cache.readahead_max;
 *   6. readahead READs of the upstream's rtmax, stopping at the file's end;
 *   7. a READ waiting for a fetch is answered as soon as that fetch is in,
 *      one spanning two once both are;
 *   8. READs that joined a fetch: not answered from it when a WRITE
 *      overtook it, and with the dirty bytes over the fetched ones;
 *   9. several sequential streams on one file, the least recently used
 *      replaced.
 *
 * Includes nfs_read.c to see its fetches in flight; the other modules
 * (nfs_write.c, writeback.c, nfs_common.c, nfs_attrs.c, handlers.c, procs.c,
 * proc.c, cache/) are linked as they are.
 */
#include "daemon/nfs_read.c"

#include <stdio.h>

#include "tests/unit/fake_upstream.h"
#include "tests/unit/fattr.h"
#include "tests/unit/tap.h"

#define PAGE 4096u
#define PAYLOAD 16384u               /* nfsd.max_payload: one fetch or readahead READ at most */
#define READAHEAD 65536u             /* cache.readahead */
#define READAHEAD_MAX 131072u        /* cache.readahead_max */
#define FILE_BYTES (1024u * 1024u)
#define MTIME_S 1000u

static struct ev_loop *lp;
static uint8_t v1[FILE_BYTES];      /* the upstream file's bytes */
static uint8_t v2[FILE_BYTES];      /* ... after another WRITE */

static const struct rpc_cred reader = {
	.flavor = RPC_AUTH_SYS,
	.machinename = "client",
	.uid = 1000,
	.gid = 100,
	.gids_len = 1,
	.gids = { 100 },
};

static void tune(struct nfsd_conf *cfg)
{
	cfg->cache.page_size = PAGE;
	cfg->cache.readahead = READAHEAD;
	cfg->cache.readahead_max = READAHEAD_MAX;
	cfg->cache.dirty_expire_ms = 60000;
}

static void tune_no_partial(struct nfsd_conf *cfg)
{
	tune(cfg);
	cfg->cache.partial_pages = 0;
}

static void start(void (*tuning)(struct nfsd_conf *cfg))
{
	stats_reset();
	memset(&stats, 0, sizeof(stats));   /* the gauges too: a new cache */
	fake_daemon_start(lp, PAYLOAD, tuning);
}

/* Fetches in flight, over every object (nfs_read.c keeps them per object). */
static void count_fetches(struct cache_object *o, void *arg)
{
	struct list_node *pos;

	if (o->rd)
		for (pos = o->rd->fetches.next; pos != &o->rd->fetches; pos = pos->next)
			(*(unsigned *)arg)++;
}

static void stop(void)
{
	unsigned in_flight = 0;

	is_int(fake_pending(FAKE_ANY_PROC), 0, "no upstream call left unanswered");
	cache_foreach(count_fetches, &in_flight);
	ok(in_flight == 0 && readahead_bytes_in_flight == 0, "no fetch left in flight");
	fake_daemon_stop();
}

static fattr3 attrs_of(uint64_t size, uint32_t mtime_s)
{
	return test_fattr3(size, mtime_s, 0, 7, 42);
}

/* A regular file the cache knows: fresh attributes, READ granted to `reader`. */
static struct cache_object *known_file(const char *fh, uint64_t size)
{
	struct cache_object *o = cache_get((const uint8_t *)fh, (uint32_t)strlen(fh));
	fattr3 a = attrs_of(size, MTIME_S);

	cache_attrs_update(o, &a, cache_seq());
	cache_access_record(o, &reader, ACCESS3_READ, ACCESS3_READ);
	return o;
}

static uint32_t read_call(const char *fh, uint64_t offset, uint32_t count)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_READ, &reader);
	READ3args *a = call->args;

	a->file.data.data_len = (u_int)strlen(fh);
	a->file.data.data_val = (char *)fh;
	a->offset = offset;
	a->count = count;
	return fake_dispatch(call);
}

/* Answer an upstream READ from `file` of `size` bytes, with `attrs`. */
static void upstream_read(struct fake_call *c, const uint8_t *file, uint64_t size, const fattr3 *attrs)
{
	if (!c)
		fake_bail_out("the upstream READ the case goes on with is missing");
	uint64_t end = c->offset + c->count < size ? c->offset + c->count : size;
	uint32_t n = c->offset < end ? (uint32_t)(end - c->offset) : 0;
	READ3res res = fake_read3res(attrs, file + c->offset, n, end == size);

	fake_complete(c, UPSTREAM_OK, &res);
}

/* The client got NFS3_OK and `count` bytes of `file` from `offset`. */
static int answered(uint32_t xid, const uint8_t *file, uint64_t offset, uint32_t count,
		    const char *what)
{
	const struct fake_reply *r = fake_wait_reply(xid);

	if (!r) {
		ok(0, "%s: answered", what);
		return 0;
	}
	int cond = r->kind == FAKE_REPLY_RESULT && r->status == NFS3_OK && r->count == count &&
		   memcmp(r->data, file + offset, count) == 0;
	ok(cond, "%s: NFS3_OK, %u bytes from %llu", what, count, (unsigned long long)offset);
	if (!cond)
		diag("    got kind %d status %u count %u", r->kind, r->status, r->count);
	return cond;
}

static int call_is(const struct fake_call *c, uint64_t offset, uint32_t count)
{
	return c && c->proc == NFS3PROC_READ && c->offset == offset && c->count == count;
}

/* ---- 1. a hit ---------------------------------------------------------- */

static void test_hit(void)
{
	start(tune);
	diag("1. a READ whose bytes are all valid in wholly uptodate pages");
	known_file("fh-hit", 65536);

	uint32_t x1 = read_call("fh-hit", 8192, 8192);
	is_int(fake_sent(NFS3PROC_READ), 1, "first READ: a miss, one upstream READ");
	struct fake_call *c = fake_pending_nth(NFS3PROC_READ, 0);
	ok(call_is(c, 8192, 8192), "... of its pages [8192, 16384)");
	fattr3 a = attrs_of(65536, MTIME_S);
	upstream_read(c, v1, 65536, &a);
	answered(x1, v1, 8192, 8192, "first READ");

	uint32_t x2 = read_call("fh-hit", 8292, 4000);
	answered(x2, v1, 8292, 4000, "second READ, inside the fetched pages");
	is_int(fake_sent(NFS3PROC_READ), 1, "... sent nothing upstream");
	is_int(stats.cache_read_hits, 1, "cache.read.hits 1");
	is_int(stats.cache_read_partial_hits, 0, "cache.read.partial_hits 0");
	is_int(stats.cache_read_misses, 1, "cache.read.misses 1 (the first READ)");
	is_int(stats.cache_read_bytes_local, 4000, "cache.read.bytes_local: the hit's 4000");
	is_int(stats.cache_read_bytes_upstream, 8192, "cache.read.bytes_upstream: the fetch's 8192");
	is_int(stats_export(1, 7)->cache_read_hits, 1, "counted under the file's fsid too");
	stop();
}

/* ---- 2. a partial hit -------------------------------------------------- */

static void test_partial_hit(void)
{
	start(tune);
	diag("2. a READ inside the valid part of a partially uptodate page");
	struct cache_object *o = known_file("fh-partial", 65536);

	/* bytes a WRITE wrote through: page 0 holds [1000, 3000) only */
	is_int(cache_store(o, 1000, v1 + 1000, 2000, cache_seq()), 0, "[1000, 3000) stored");
	uint32_t x = read_call("fh-partial", 1500, 1000);
	answered(x, v1, 1500, 1000, "READ [1500, 2500)");
	is_int(fake_sent(FAKE_ANY_PROC), 0, "nothing sent upstream");
	is_int(stats.cache_read_partial_hits, 1, "cache.read.partial_hits 1");
	is_int(stats.cache_read_hits, 0, "cache.read.hits 0: the page is not wholly uptodate");
	is_int(stats.cache_read_misses, 0, "cache.read.misses 0");
	is_int(stats.cache_read_bytes_local, 1000, "cache.read.bytes_local 1000");

	/* a READ reaching past the valid part fetches the whole page */
	x = read_call("fh-partial", 0, 2000);
	struct fake_call *c = fake_pending_nth(NFS3PROC_READ, 0);
	ok(call_is(c, 0, PAGE), "READ [0, 2000): page 0 fetched whole");
	fattr3 a = attrs_of(65536, MTIME_S);
	upstream_read(c, v1, 65536, &a);
	answered(x, v1, 0, 2000, "READ [0, 2000)");
	is_int(stats.cache_read_misses, 1, "... counted as a miss");
	stop();

	start(tune_no_partial);
	diag("2b. the same with cache.partial_pages = no");
	o = known_file("fh-partial", 65536);
	cache_store(o, 1000, v1 + 1000, 2000, cache_seq());
	x = read_call("fh-partial", 1500, 1000);
	c = fake_pending_nth(NFS3PROC_READ, 0);
	ok(call_is(c, 0, PAGE), "the partially uptodate page is fetched whole");
	upstream_read(c, v1, 65536, &a);
	answered(x, v1, 1500, 1000, "READ [1500, 2500)");
	is_int(stats.cache_read_partial_hits, 0, "cache.read.partial_hits 0");
	is_int(stats.cache_read_misses, 1, "cache.read.misses 1");
	is_int(stats.cache_read_bytes_upstream, PAGE, "cache.read.bytes_upstream: one page");
	stop();
}

/* ---- 3. a miss joins the fetch in flight -------------------------------- */

static void test_join(void)
{
	start(tune);
	diag("3. two READs of one page while its fetch is in flight");
	known_file("fh-join", 65536);

	uint32_t xa = read_call("fh-join", 0, PAGE);
	uint32_t xb = read_call("fh-join", 1000, 100);
	is_int(fake_sent(NFS3PROC_READ), 1, "one upstream READ for both");
	ok(!fake_reply_of(xa) && !fake_reply_of(xb), "neither answered before the fetch completes");
	struct fake_call *c = fake_pending_nth(NFS3PROC_READ, 0);
	ok(call_is(c, 0, PAGE), "the READ is of page 0");
	fattr3 a = attrs_of(65536, MTIME_S);
	upstream_read(c, v1, 65536, &a);
	answered(xa, v1, 0, PAGE, "READ A [0, 4096), from the fetch");
	answered(xb, v1, 1000, 100, "READ B [1000, 1100), joined: from the same fetch");
	is_int(fake_sent(NFS3PROC_READ), 1, "still one upstream READ");
	is_int(stats.cache_read_misses, 1, "cache.read.misses 1");
	is_int(stats.cache_read_hits, 1, "cache.read.hits 1 (B: it needed no upstream READ of its own)");
	is_int(stats.cache_read_bytes_upstream, PAGE, "cache.read.bytes_upstream: one page");
	is_int(stats.cache_read_bytes_local, 100, "cache.read.bytes_local: B's 100");
	stop();
}

/* ---- 4. a fetch overtaken by a WRITE ------------------------------------ */

static void test_stale_fetch(void)
{
	start(tune);
	diag("4. a WRITE completes while a fetch of the same bytes is in flight");
	struct cache_object *o = known_file("fh-stale", 65536);
	fattr3 before = attrs_of(65536, MTIME_S), after = attrs_of(65536, MTIME_S + 1);
	static const char upverf[NFS3_WRITEVERFSIZE] = { 'u', 'p', 's', 't', 'r', 'e', 'a', 'm' };

	uint32_t xr = read_call("fh-stale", 0, PAGE);
	struct fake_call *fetch = fake_pending_nth(NFS3PROC_READ, 0);
	ok(call_is(fetch, 0, PAGE), "READ: page 0 fetched");

	struct nfsd_call *call = fake_client_call(NFS3PROC_WRITE, &reader);
	WRITE3args *w = call->args;
	w->file.data.data_len = (u_int)strlen("fh-stale");
	w->file.data.data_val = (char *)"fh-stale";
	w->offset = 0;
	w->count = 100;
	w->stable = FILE_SYNC;
	w->data.data_len = 100;
	w->data.data_val = (char *)v2;
	uint32_t xw = fake_dispatch(call);
	struct fake_call *wc = fake_pending_nth(NFS3PROC_WRITE, 0);
	ok(wc && wc->offset == 0 && wc->count == 100 && wc->stable == FILE_SYNC,
	   "WRITE FILE_SYNC [0, 100) goes upstream");
	WRITE3res wres = fake_write3res(100, FILE_SYNC, upverf, &before, &after);
	fake_complete(wc, UPSTREAM_OK, &wres);
	const struct fake_reply *r = fake_wait_reply(xw);
	ok(r && r->status == NFS3_OK && memcmp(r->verf, nfsd.write_verf, NFS3_WRITEVERFSIZE) == 0,
	   "WRITE answered NFS3_OK with the daemon's verifier");
	ok(extent_set_covers(&o->valid, 0, 100) && o->valid.bytes == 100,
	   "the written bytes are valid");

	/* the upstream read page 0 before the WRITE reached it */
	upstream_read(fetch, v1, 65536, &before);
	answered(xr, v1, 0, PAGE, "READ answered with what the upstream read");
	is_int(o->valid.bytes, 100, "the fetched page is not stored: 100 bytes valid");
	ok(!extent_set_covers(&o->valid, 100, PAGE), "[100, 4096) not valid");
	is_int(o->coh.mtime_ns, (int64_t)(MTIME_S + 1) * 1000000000,
	       "the fetch's older attributes are ignored: mtime is the WRITE's");
	is_int(stats.cache_invalidations, 0, "no invalidation");

	uint32_t x2 = read_call("fh-stale", 0, 100);
	answered(x2, v2, 0, 100, "READ [0, 100): the WRITE's bytes, locally");
	is_int(fake_sent(NFS3PROC_READ), 1, "... without an upstream READ");
	uint32_t x3 = read_call("fh-stale", 0, PAGE);
	struct fake_call *refetch = fake_pending_nth(NFS3PROC_READ, 0);
	ok(call_is(refetch, 0, PAGE), "READ [0, 4096): fetched again, not answered from stale bytes");
	memcpy(v2 + 100, v1 + 100, PAGE - 100);
	upstream_read(refetch, v2, 65536, &after);
	answered(x3, v2, 0, PAGE, "READ [0, 4096): the file as written");
	ok(extent_set_covers(&o->valid, 0, PAGE), "page 0 valid now");
	stop();
}

/* ---- 5. readahead on sequential access only ----------------------------- */

/* The upstream READs sent from the n-th on include `count` READs of `each`
 * bytes from `offset` on, in order. */
static int sent_at(unsigned n, uint64_t offset, unsigned count, uint32_t each)
{
	int good = 1;

	for (unsigned i = 0; i < count; i++)
		good &= call_is(fake_sent_nth(NFS3PROC_READ, n + i), offset + (uint64_t)i * each, each);
	return good;
}

/* The same, and they are the last sent. */
static int sent_run(unsigned n, uint64_t offset, unsigned count, uint32_t each)
{
	return fake_sent(NFS3PROC_READ) == n + count && sent_at(n, offset, count, each);
}

/* Answer every pending upstream READ of the file, last sent first. */
static void answer_all(const uint8_t *file, uint64_t size, const fattr3 *a)
{
	unsigned n;

	while ((n = fake_pending(NFS3PROC_READ)) > 0)
		upstream_read(fake_pending_nth(NFS3PROC_READ, n - 1), file, size, a);
}

static void test_readahead(void)
{
	start(tune);
	diag("5. sequential READs read ahead in a window that doubles, random ones fetch their pages only");
	known_file("fh-ra", FILE_BYTES);
	fattr3 a = attrs_of(FILE_BYTES, MTIME_S);

	uint32_t x = read_call("fh-ra", 0, PAYLOAD);
	is_int(fake_sent(NFS3PROC_READ), 1, "READ [0, 16K), the first: one upstream READ, no readahead");
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, 0, PAYLOAD, "READ [0, 16K)");

	x = read_call("fh-ra", PAYLOAD, PAYLOAD);
	ok(call_is(fake_sent_nth(NFS3PROC_READ, 1), 16384, PAYLOAD),
	   "READ [16K, 32K), sequential: its own upstream READ");
	ok(sent_run(2, 32768, 4, PAYLOAD),
	   "... then the window [32K, 96K) (cache.readahead = 64K) in READs of 16K (no rtmax yet: the payload)");
	is_int(stats.cache_readahead_window_grows, 0, "... the window opened, not grown");
	answer_all(v1, FILE_BYTES, &a);
	answered(x, v1, PAYLOAD, PAYLOAD, "READ [16K, 32K)");
	is_int(stats.cache_readahead_bytes, 4 * PAYLOAD, "cache.readahead.bytes: the window's 64K");

	x = read_call("fh-ra", 32768, PAYLOAD);
	answered(x, v1, 32768, PAYLOAD, "READ [32K, 48K): from the readahead");
	is_int(stats.cache_read_hits, 1, "... a hit");
	ok(sent_run(6, 98304, 8, PAYLOAD),
	   "... it reached into the window: the next one, [96K, 224K), twice the size, is fetched");
	is_int(stats.cache_readahead_window_grows, 1, "cache.readahead.window_grows 1");
	answer_all(v1, FILE_BYTES, &a);
	for (uint64_t off = 49152; off < 98304; off += PAYLOAD) {
		x = read_call("fh-ra", off, PAYLOAD);
		answered(x, v1, off, PAYLOAD, "READ inside the first window");
	}
	is_int(fake_sent(NFS3PROC_READ), 14, "... the READs in the window the marker passed send nothing");

	x = read_call("fh-ra", 98304, PAYLOAD);
	answered(x, v1, 98304, PAYLOAD, "READ [96K, 112K): reaches into the second window");
	ok(sent_run(14, 229376, 8, PAYLOAD),
	   "... the third window [224K, 352K) is fetched: 128K, at cache.readahead_max");
	is_int(stats.cache_readahead_window_grows, 1, "... so it did not grow: window_grows still 1");
	answer_all(v1, FILE_BYTES, &a);
	is_int(stats.cache_readahead_bytes, 20 * PAYLOAD, "cache.readahead.bytes: the three windows");

	unsigned before = fake_sent(NFS3PROC_READ);
	x = read_call("fh-ra", 500000, 4096);
	is_int(fake_sent(NFS3PROC_READ), before + 1, "random READ at 500000: one upstream READ");
	ok(call_is(fake_sent_nth(NFS3PROC_READ, before), 499712, 8192), "... of its two pages only");
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, 500000, 4096, "random READ [500000, 504096)");

	x = read_call("fh-ra", 750000, 1000);
	is_int(fake_sent(NFS3PROC_READ), before + 2, "random READ at 750000: one upstream READ");
	ok(call_is(fake_sent_nth(NFS3PROC_READ, before + 1), 749568, PAGE), "... of its page only");
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, 750000, 1000, "random READ [750000, 751000)");

	is_int(stats.cache_read_misses, 4, "cache.read.misses 4: the first two and the random ones");
	is_int(stats.cache_read_bytes_upstream, 22 * PAYLOAD + 8192 + PAGE,
	       "cache.read.bytes_upstream: every READ sent");
	is_int(stats.cache_readahead_bytes, 20 * PAYLOAD, "cache.readahead.bytes: not the random READs'");
	stop();
}

/* ---- 6. fetches of the upstream's rtmax, bounded by the file ------------ */

static void tune_big_window(struct nfsd_conf *cfg)
{
	tune(cfg);
	cfg->cache.readahead = 256 * 1024;
	cfg->cache.readahead_max = 1024 * 1024;
}

static void test_rtmax(void)
{
	start(tune_big_window);
	diag("6. readahead READs are the upstream's rtmax (in pages), and stop at the file's end");
	fake_upstream_set_rtmax(65536 + 100);
	known_file("fh-rt", 300000);
	fattr3 a = attrs_of(300000, MTIME_S);

	uint32_t x = read_call("fh-rt", 0, PAYLOAD);
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, 300000, &a);
	answered(x, v1, 0, PAYLOAD, "READ [0, 16K)");
	x = read_call("fh-rt", PAYLOAD, PAYLOAD);
	/* window [32K, 288K): READs of 64K (rtmax 64K + 100 in whole pages) */
	ok(sent_run(2, 32768, 4, 65536), "READ [16K, 32K): the window [32K, 288K) in READs of 64K");
	answer_all(v1, 300000, &a);
	answered(x, v1, PAYLOAD, PAYLOAD, "READ [16K, 32K)");
	x = read_call("fh-rt", 2 * PAYLOAD, PAYLOAD);
	answered(x, v1, 2 * PAYLOAD, PAYLOAD, "READ [32K, 48K): a hit");
	ok(sent_run(6, 294912, 1, 8192),
	   "... the next window stops at the file's last page: one READ of [288K, 296K)");
	is_int(stats.cache_readahead_window_grows, 1, "cache.readahead.window_grows 1");
	answer_all(v1, 300000, &a);
	/* the rest of the file, then all of it again (a new stream) */
	int right = 1;
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t off = pass ? 0 : 3 * PAYLOAD; off < 300000; off += PAYLOAD) {
			uint32_t n = off + PAYLOAD < 300000 ? PAYLOAD : (uint32_t)(300000 - off);
			x = read_call("fh-rt", off, PAYLOAD);
			answer_all(v1, 300000, &a);
			right &= answered(x, v1, off, n, "a READ up to the end");
		}
	ok(right, "the READs to the end, and then a second pass: the file's bytes");
	is_int(fake_sent(NFS3PROC_READ), 7,
	       "... all from the readahead: the partial last page is not fetched again");
	is_int(stats.cache_read_bytes_upstream, 300000, "cache.read.bytes_upstream: each byte once");
	is_int(stats.cache_readahead_window_grows, 2,
	       "window_grows 2: once per pass, never past the file's end");
	stop();
}

/* ---- 7. READs waiting for readahead ------------------------------------- */

static void test_wait_readahead(void)
{
	start(tune);
	diag("7. a READ waiting for a fetch is answered as soon as that fetch is in");
	struct cache_object *o = known_file("fh-wait", FILE_BYTES);
	fattr3 a = attrs_of(FILE_BYTES, MTIME_S);

	uint32_t x = read_call("fh-wait", 0, PAYLOAD);
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, 0, PAYLOAD, "READ [0, 16K)");
	x = read_call("fh-wait", PAYLOAD, PAYLOAD);
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, PAYLOAD, PAYLOAD, "READ [16K, 32K), its window [32K, 96K) in flight");
	is_int(fake_pending(NFS3PROC_READ), 4, "four readahead READs pending");

	unsigned hits = (unsigned)stats.cache_read_hits, misses = (unsigned)stats.cache_read_misses;
	uint32_t x1 = read_call("fh-wait", 32768, PAYLOAD);
	uint32_t x2 = read_call("fh-wait", 40960, PAYLOAD);
	ok(!fake_reply_of(x1) && !fake_reply_of(x2), "READs [32K, 48K) and [40K, 56K) wait");
	struct fake_call *r48 = fake_pending_nth(NFS3PROC_READ, 1);
	ok(call_is(r48, 49152, PAYLOAD), "the readahead READ of [48K, 64K) is pending");
	unsigned preads = (unsigned)stats.backing_read_calls;
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	const struct fake_reply *r1 = fake_reply_of(x1);
	ok(r1 && r1->status == NFS3_OK && r1->count == PAYLOAD && memcmp(r1->data, v1 + 32768, PAYLOAD) == 0,
	   "the fetch of [32K, 48K) is in: READ [32K, 48K) answered at once from it, "
	   "the later fetches still pending");
	is_int(stats.backing_read_calls - preads, 0, "... from the fetched buffer, not the backing file");
	ok(!fake_reply_of(x2), "READ [40K, 56K), spanning two fetches, still waits");
	ok(extent_set_covers(&o->valid, 32768, 49152), "[32K, 48K) stored after");
	upstream_read(r48, v1, FILE_BYTES, &a);
	answered(x2, v1, 40960, PAYLOAD, "READ [40K, 56K) answered once both fetches are in");
	is_int(stats.cache_read_hits - hits, 2, "both counted as hits");
	is_int(stats.cache_read_misses - misses, 0, "no miss");
	answer_all(v1, FILE_BYTES, &a);
	stop();
}

/* ---- 8. joined READs and coherency -------------------------------------- */

static uint32_t write_call(const char *fh, uint64_t offset, uint32_t count, stable_how how,
			   const uint8_t *data)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_WRITE, &reader);
	WRITE3args *w = call->args;

	w->file.data.data_len = (u_int)strlen(fh);
	w->file.data.data_val = (char *)fh;
	w->offset = offset;
	w->count = count;
	w->stable = how;
	w->data.data_len = count;
	w->data.data_val = (char *)data + offset;
	return fake_dispatch(call);
}

static void test_join_coherency(void)
{
	start(tune);
	diag("8. READs joining a fetch that a WRITE overtook, or under dirty bytes");
	struct cache_object *o = known_file("fh-jc", 65536);
	uint32_t all = ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND;
	fattr3 before = attrs_of(65536, MTIME_S), after = attrs_of(65536, MTIME_S + 1);
	static const char upverf[NFS3_WRITEVERFSIZE] = { 'u', 'p', 's', 't', 'r', 'e', 'a', 'm' };

	cache_access_record(o, &reader, all, all);
	uint32_t xa = read_call("fh-jc", 0, PAGE);
	struct fake_call *fetch = fake_pending_nth(NFS3PROC_READ, 0);
	uint32_t xw = write_call("fh-jc", 0, 100, FILE_SYNC, v2);
	struct fake_call *wc = fake_pending_nth(NFS3PROC_WRITE, 0);
	WRITE3res wres = fake_write3res(100, FILE_SYNC, upverf, &before, &after);
	fake_complete(wc, UPSTREAM_OK, &wres);
	fake_wait_reply(xw);
	uint32_t xb = read_call("fh-jc", 0, PAGE);
	is_int(fake_sent(NFS3PROC_READ), 1, "a READ after the WRITE joins the fetch in flight");
	upstream_read(fetch, v1, 65536, &before);
	answered(xa, v1, 0, PAGE, "the READ that started the fetch: what the upstream read");
	ok(!fake_reply_of(xb), "the READ that came after the WRITE is not answered from the fetch");
	struct fake_call *again = fake_pending_nth(NFS3PROC_READ, 0);
	ok(call_is(again, 0, PAGE), "... it fetches page 0 again");
	memcpy(v2 + 100, v1 + 100, PAGE - 100);
	upstream_read(again, v2, 65536, &after);
	answered(xb, v2, 0, PAGE, "... and gets the file as written");

	/* dirty bytes [8192 + 100, 8192 + 200), written locally */
	uint32_t xd = write_call("fh-jc", 8192 + 100, 100, UNSTABLE, v2);
	const struct fake_reply *rd = fake_wait_reply(xd);
	ok(rd && rd->status == NFS3_OK && rd->committed == UNSTABLE, "UNSTABLE WRITE taken locally");
	uint32_t xc = read_call("fh-jc", 8192, PAGE);
	uint32_t xe = read_call("fh-jc", 8192, 1000);
	is_int(fake_pending(NFS3PROC_READ), 1, "two READs of the page under the dirty bytes: one fetch");
	static uint8_t mixed[65536];
	memcpy(mixed, v1, sizeof(mixed));
	memcpy(mixed + 8192 + 100, v2 + 8192 + 100, 100);
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, 65536, &after);
	answered(xc, mixed, 8192, PAGE, "the READ that started it: the dirty bytes win");
	answered(xe, mixed, 8192, 1000, "the READ that joined it: the dirty bytes win");
	stop();
}

/* ---- 9. several streams on one file -------------------------------------- */

static void test_streams(void)
{
	start(tune);
	diag("9. interleaved sequential streams on one file each read ahead");
	known_file("fh-st", FILE_BYTES);
	fattr3 a = attrs_of(FILE_BYTES, MTIME_S);
	static const uint64_t base[5] = { 0, 200 * 1024, 400 * 1024, 600 * 1024, 900 * 1024 };

	/* the first READ of each of four streams, then the second of each */
	for (unsigned round = 0; round < 2; round++)
		for (unsigned i = 0; i < 4; i++) {
			uint32_t x = read_call("fh-st", base[i] + round * PAYLOAD, PAYLOAD);
			answer_all(v1, FILE_BYTES, &a);
			answered(x, v1, base[i] + round * PAYLOAD, PAYLOAD, "a READ of one of four streams");
		}
	is_int(stats.cache_readahead_bytes, 4 * 65536, "each of the four streams fetched its window ahead");
	is_int(fake_sent(NFS3PROC_READ), 4 + 4 * 5, "4 first READs, then 4 x (a READ and 4 readahead READs)");
	for (unsigned i = 0; i < 4; i++)
		ok(sent_at(5 + 5 * i, base[i] + 2 * PAYLOAD, 4, PAYLOAD),
		   "... stream %u: its window [%lluK, %lluK)", i,
		   (unsigned long long)(base[i] / 1024 + 32), (unsigned long long)(base[i] / 1024 + 96));

	/* a fifth stream takes the slot of the least recently used, stream 0 */
	uint32_t x = read_call("fh-st", base[4], PAYLOAD);
	answer_all(v1, FILE_BYTES, &a);
	answered(x, v1, base[4], PAYLOAD, "a fifth stream's first READ");
	is_int(fake_sent(NFS3PROC_READ), 25, "... one upstream READ");
	x = read_call("fh-st", base[3] + 2 * PAYLOAD, PAYLOAD);
	answered(x, v1, base[3] + 2 * PAYLOAD, PAYLOAD, "stream 3 goes on, from its readahead");
	ok(sent_run(25, base[3] + 96 * 1024, 8, PAYLOAD),
	   "... and reached into its window: the next one, 128K, is fetched");
	answer_all(v1, FILE_BYTES, &a);
	x = read_call("fh-st", base[0] + 2 * PAYLOAD, PAYLOAD);
	answered(x, v1, base[0] + 2 * PAYLOAD, PAYLOAD, "stream 0 goes on, from its readahead");
	is_int(fake_sent(NFS3PROC_READ), 33, "... but its slot was taken: no readahead for it");
	is_int(stats.cache_readahead_window_grows, 1, "cache.readahead.window_grows 1 (stream 3)");
	stop();
}

int main(void)
{
	fake_watchdog(60);
	lp = ev_loop_new(EVFLAG_AUTO);
	if (!lp)
		return 1;
	log_init(1, LOG_LEVEL_WARNING);
	for (size_t i = 0; i < FILE_BYTES; i++) {
		v1[i] = (uint8_t)(i * 7 + i / 4096);
		v2[i] = (uint8_t)~v1[i];
	}

	test_hit();
	test_partial_hit();
	test_join();
	test_stale_fetch();
	test_readahead();
	test_rtmax();
	test_wait_readahead();
	test_join_coherency();
	test_streams();

	ev_loop_destroy(lp);
	return done();
}
