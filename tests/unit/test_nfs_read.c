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
 *   5. readahead on sequential access only.
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
	ok(in_flight == 0 && readahead_in_flight == 0, "no fetch left in flight");
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
	answered(xb, v1, 1000, 100, "READ B [1000, 1100), once the fetch stored the page");
	is_int(fake_sent(NFS3PROC_READ), 1, "still one upstream READ");
	is_int(stats.cache_read_misses, 1, "cache.read.misses 1");
	is_int(stats.cache_read_hits, 1, "cache.read.hits 1 (B, from the stored page)");
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

static void test_readahead(void)
{
	start(tune);
	diag("5. sequential READs read ahead, random ones fetch their pages only");
	known_file("fh-ra", FILE_BYTES);
	fattr3 a = attrs_of(FILE_BYTES, MTIME_S);

	uint32_t x = read_call("fh-ra", 0, PAYLOAD);
	is_int(fake_sent(NFS3PROC_READ), 1, "READ [0, 16K), the first: one upstream READ, no readahead");
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, 0, PAYLOAD, "READ [0, 16K)");

	x = read_call("fh-ra", PAYLOAD, PAYLOAD);
	is_int(fake_sent(NFS3PROC_READ), 6, "READ [16K, 32K), sequential: its READ and 4 readahead READs");
	ok(call_is(fake_sent_nth(NFS3PROC_READ, 1), 16384, PAYLOAD), "... its own [16K, 32K)");
	int ahead = 1;
	for (unsigned i = 0; i < 4; i++)
		ahead &= call_is(fake_sent_nth(NFS3PROC_READ, 2 + i), 32768 + i * PAYLOAD, PAYLOAD);
	ok(ahead, "... then [32K, 96K) in READs of 16K (cache.readahead = 64K past it)");
	/* the upstream answers the readahead first, last one first */
	for (unsigned i = 5; i >= 1; i--)
		upstream_read(fake_sent_nth(NFS3PROC_READ, i), v1, FILE_BYTES, &a);
	answered(x, v1, PAYLOAD, PAYLOAD, "READ [16K, 32K)");

	x = read_call("fh-ra", 32768, PAYLOAD);
	answered(x, v1, 32768, PAYLOAD, "READ [32K, 48K): from the readahead");
	is_int(stats.cache_read_hits, 1, "... a hit");
	is_int(fake_sent(NFS3PROC_READ), 7, "... and readahead keeps 64K ahead: one more READ");
	ok(call_is(fake_sent_nth(NFS3PROC_READ, 6), 98304, PAYLOAD), "... of [96K, 112K)");
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);

	x = read_call("fh-ra", 500000, 4096);
	is_int(fake_sent(NFS3PROC_READ), 8, "random READ at 500000: one upstream READ");
	ok(call_is(fake_sent_nth(NFS3PROC_READ, 7), 499712, 8192), "... of its two pages only");
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, 500000, 4096, "random READ [500000, 504096)");

	x = read_call("fh-ra", 300000, 1000);
	is_int(fake_sent(NFS3PROC_READ), 9, "random READ at 300000: one upstream READ");
	ok(call_is(fake_sent_nth(NFS3PROC_READ, 8), 299008, PAGE), "... of its page only");
	upstream_read(fake_pending_nth(NFS3PROC_READ, 0), v1, FILE_BYTES, &a);
	answered(x, v1, 300000, 1000, "random READ [300000, 301000)");

	is_int(stats.cache_read_misses, 4, "cache.read.misses 4");
	is_int(stats.cache_read_bytes_upstream, 7 * PAYLOAD + 8192 + PAGE,
	       "cache.read.bytes_upstream: every READ sent");
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

	ev_loop_destroy(lp);
	return done();
}
