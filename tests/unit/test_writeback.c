/*
 * test_writeback.c — the write-back state machines of daemon/writeback.c
 * and daemon/nfs_write.c (DESIGN.md "Write-back", RFC 1813 §3.3.7,
 * §3.3.21), driven through nfsd_proc_write() and nfsd_proc_commit() with
 * the fake upstream (fake_upstream.h) on the real cache/ module, a
 * temporary cache directory and a real libev loop:
 *   1. the upstream's verifier changes in the middle of a pass (between
 *      two WRITEs, then between the WRITEs and the COMMIT): the ranges are
 *      sent again, and the client's COMMIT is answered OK only after that;
 *   2. a write-back the upstream refuses (NFS3ERR_NOSPC after a flush,
 *      NFS3ERR_ACCES under a COMMIT) is the answer of the next COMMIT,
 *      never an OK with the verifier of the lost bytes;
 *   3. a WRITE that finds no room under cache.max_dirty, with the upstream
 *      not answering, is answered NFS3ERR_JUKEBOX after upstream.timeout_ms;
 *   4. the window of WRITEs in flight: WB_MIN_WRITES of wtmax while the
 *      round trip is unknown, WB_MAX_WRITES small scattered ones at 10 ms;
 *   5. cache.commit = local: COMMIT answered once the index recorded the
 *      bytes, with no upstream call; a refused write-back keeps them dirty
 *      and unwritten, counted, not reported; the next one writes them;
 *      after a reload to cache.commit = upstream a refusal still keeps them
 *      (reported to the next COMMIT);
 *   6. the daemon stops while the upstream does not answer, with passes
 *      waiting for room in the window: every pass ends, the bytes stay dirty;
 *   9. odd calls: a write-back WRITE and COMMIT answered NFS3ERR_JUKEBOX
 *      keep the bytes dirty (cache.writeback.retries) and the client's
 *      COMMIT gets JUKEBOX, never an error; a COMMIT of a range past 2^63
 *      or wrapping goes upstream as it is once the bytes are there; a
 *      WRITE whose count is not its data's length goes upstream unchanged.
 * Each asserts the replies, the upstream calls (offset, count, stable,
 * data, credential) and the write-back counters.
 *
 * Includes writeback.c and nfs_write.c; nfs_read.c and the rest are linked.
 */
#include "daemon/writeback.c"
#include "daemon/nfs_write.c"

#include <stdio.h>

#include "tests/unit/fake_upstream.h"
#include "tests/unit/fattr.h"
#include "tests/unit/tap.h"

#define PAYLOAD 65536u
#define MTIME_S 1000u
#define TIMEOUT_MS 300u              /* upstream.timeout_ms of case 3 */
#define MAX_DIRTY 65536u             /* cache.max_dirty of case 3 */

static struct ev_loop *lp;
static uint8_t data[12 * 1024 * 1024];   /* WRITE data: bytes at their file offset */

static const struct rpc_cred writer = {
	.flavor = RPC_AUTH_SYS,
	.machinename = "client",
	.uid = 1000,
	.gid = 100,
	.gids_len = 2,
	.gids = { 100, 200 },
};

static const char verf1[NFS3_WRITEVERFSIZE] = { 'u', 'p', '-', 'b', 'o', 'o', 't', '1' };
static const char verf2[NFS3_WRITEVERFSIZE] = { 'u', 'p', '-', 'b', 'o', 'o', 't', '2' };
static const char verf3[NFS3_WRITEVERFSIZE] = { 'u', 'p', '-', 'b', 'o', 'o', 't', '3' };

static void tune(struct nfsd_conf *cfg)
{
	cfg->cache.dirty_expire_ms = 60000;   /* only COMMIT, flush and pressure write back */
}

static void tune_no_room(struct nfsd_conf *cfg)
{
	tune(cfg);
	cfg->cache.max_dirty = MAX_DIRTY;
	cfg->upstream_timeout_ms = TIMEOUT_MS;
}

static void start(void (*tuning)(struct nfsd_conf *cfg))
{
	stats_reset();
	memset(&stats, 0, sizeof(stats));   /* the gauges too: a new cache */
	fake_daemon_start(lp, PAYLOAD, tuning);
}

static void stop(void)
{
	is_int(fake_pending(FAKE_ANY_PROC), 0, "no upstream call left unanswered");
	ok(list_empty(&writeback.passes) && list_empty(&writeback.waiters) && list_empty(&writeback.throttled) &&
	   writeback.in_flight == 0, "no pass, waiter or throttled WRITE left");
	fake_daemon_stop();
}

/* ---- the upstream file --------------------------------------------- */

static fattr3 attrs_of(uint64_t size)
{
	return test_fattr3(size, MTIME_S, 0, 7, 43);
}

/* The attributes of the file upstream, changed by each WRITE it takes. */
static fattr3 upstream_file;

/* The upstream takes WRITE `c` with verifier `verf`. */
static void upstream_write(struct fake_call *c, const char verf[NFS3_WRITEVERFSIZE])
{
	fattr3 before = upstream_file;

	if (c->offset + c->count > upstream_file.size)
		upstream_file.size = upstream_file.used = c->offset + c->count;
	upstream_file.mtime.nseconds++;
	upstream_file.ctime = upstream_file.mtime;
	WRITE3res res = fake_write3res(c->count, c->stable == UNSTABLE ? UNSTABLE : FILE_SYNC,
				       verf, &before, &upstream_file);
	fake_complete(c, UPSTREAM_OK, &res);
}

static void upstream_commit(struct fake_call *c, const char verf[NFS3_WRITEVERFSIZE])
{
	COMMIT3res res = fake_commit3res(verf, &upstream_file);

	fake_complete(c, UPSTREAM_OK, &res);
}

/* A file the cache knows, empty: fresh attributes, `writer` may write it. */
static struct cache_object *writable_file(const char *fh)
{
	struct cache_object *o = cache_get((const uint8_t *)fh, (uint32_t)strlen(fh));
	uint32_t all = ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND;

	upstream_file = attrs_of(0);
	cache_attrs_update(o, &upstream_file, cache_seq());
	cache_access_record(o, &writer, all, all);
	return o;
}

/* ---- the client ------------------------------------------------------ */

static uint32_t write_call(const char *fh, uint64_t offset, uint32_t count, stable_how stable)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_WRITE, &writer);
	WRITE3args *a = call->args;

	a->file.data.data_len = (u_int)strlen(fh);
	a->file.data.data_val = (char *)fh;
	a->offset = offset;
	a->count = count;
	a->stable = stable;
	a->data.data_len = count;
	a->data.data_val = (char *)data + offset;
	return fake_dispatch(call);
}

static uint32_t commit_range_call(const char *fh, uint64_t offset, uint32_t count)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_COMMIT, &writer);
	COMMIT3args *a = call->args;

	a->file.data.data_len = (u_int)strlen(fh);
	a->file.data.data_val = (char *)fh;
	a->offset = offset;
	a->count = count;
	return fake_dispatch(call);
}

static uint32_t commit_call(const char *fh)
{
	return commit_range_call(fh, 0, 0);
}

/* The WRITE was taken locally: NFS3_OK UNSTABLE with the daemon's verifier. */
static int taken(uint32_t xid, uint32_t count, const char *what)
{
	const struct fake_reply *r = fake_wait_reply(xid);
	int cond = r && r->kind == FAKE_REPLY_RESULT && r->status == NFS3_OK && r->count == count &&
		   r->committed == UNSTABLE &&
		   memcmp(r->verf, nfsd.write_verf, NFS3_WRITEVERFSIZE) == 0;

	ok(cond, "%s: NFS3_OK UNSTABLE %u bytes, the daemon's verifier", what, count);
	if (!cond && r)
		diag("    got kind %d status %u count %u committed %d", r->kind, r->status, r->count,
		     r->committed);
	return cond;
}

static int status_is(uint32_t xid, uint32_t status, const char *what)
{
	const struct fake_reply *r = fake_wait_reply(xid);

	if (!r) {
		ok(0, "%s: answered", what);
		return 0;
	}
	return is_int(r->status, status, "%s", what);
}

/* The pending upstream WRITE of [offset, offset + count), its data the
 * client's, UNSTABLE, with the writer's credential; or NULL. */
static struct fake_call *write_sent(uint64_t offset, uint32_t count)
{
	struct fake_call *c;

	for (unsigned i = 0; (c = fake_pending_nth(NFS3PROC_WRITE, i)); i++)
		if (c->offset == offset)
			break;
	if (c && c->count == count && c->stable == UNSTABLE && c->cred.uid == writer.uid &&
	    c->cred.gids_len == writer.gids_len && memcmp(c->data, data + offset, count) == 0)
		return c;
	return NULL;
}

/* ---- 1. the upstream's verifier changes mid-pass --------------------- */

static void test_verifier_change(void)
{
	start(tune);
	diag("1. the upstream's verifier changes between two WRITEs of a pass");
	writable_file("fh-verf");
	fake_upstream_set_wtmax(4096);

	taken(write_call("fh-verf", 0, 8192, UNSTABLE), 8192, "WRITE [0, 8K)");
	is_int(fake_sent(FAKE_ANY_PROC), 0, "... nothing sent upstream");
	is_int(stats.cache_dirty_bytes, 8192, "cache.dirty.bytes 8192");

	uint32_t xc = commit_call("fh-verf");
	ok(fake_wait_pending(NFS3PROC_WRITE, 2), "COMMIT: the pass sends two WRITEs (wtmax 4K)");
	struct fake_call *w0 = write_sent(0, 4096), *w1 = write_sent(4096, 4096);
	ok(w0 && w1, "... [0, 4K) and [4K, 8K), UNSTABLE, the client's bytes and credential");
	if (!w0 || !w1)
		fake_bail_out("the pass's WRITEs are missing");
	upstream_write(w1, verf1);
	upstream_write(w0, verf2);   /* the upstream rebooted between the two */
	ok(fake_wait_pending(NFS3PROC_WRITE, 2), "the verifiers differ: two WRITEs again");
	is_int(fake_sent(NFS3PROC_COMMIT), 0, "no COMMIT upstream before the resend");
	ok(!fake_reply_of(xc), "the client's COMMIT still waits");
	w0 = write_sent(0, 4096);
	w1 = write_sent(4096, 4096);
	ok(w0 && w1, "... of the same ranges and bytes");
	if (!w0 || !w1)
		fake_bail_out("the resent WRITEs are missing");
	upstream_write(w0, verf2);
	upstream_write(w1, verf2);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then one COMMIT upstream");
	ok(!fake_reply_of(xc), "the client's COMMIT waits for it");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf2);
	const struct fake_reply *r = fake_wait_reply(xc);
	ok(r && r->status == NFS3_OK && memcmp(r->verf, nfsd.write_verf, NFS3_WRITEVERFSIZE) == 0,
	   "COMMIT answered NFS3_OK with the daemon's verifier");
	is_int(fake_sent(NFS3PROC_WRITE), 4, "4 upstream WRITEs in all");
	is_int(stats.cache_writeback_bytes, 16384, "cache.writeback.bytes: 8K twice");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	is_int(stats.cache_writeback_errors, 0, "cache.writeback.errors 0");

	diag("1b. the upstream's verifier changes between the WRITEs and the COMMIT");
	taken(write_call("fh-verf", 8192, 4096, UNSTABLE), 4096, "WRITE [8K, 12K)");
	xc = commit_call("fh-verf");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1), "COMMIT: one WRITE");
	struct fake_call *w = write_sent(8192, 4096);
	ok(w != NULL, "... of [8K, 12K)");
	if (!w)
		fake_bail_out("the upstream call the case goes on with is missing");
	upstream_write(w, verf2);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf3);
	w = NULL;
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && (w = write_sent(8192, 4096)),
	   "the COMMIT's verifier is another: [8K, 12K) written again");
	ok(!fake_reply_of(xc), "the client's COMMIT still waits");
	if (!w)
		fake_bail_out("the upstream call the case goes on with is missing");
	upstream_write(w, verf3);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf3);
	r = fake_wait_reply(xc);
	ok(r && r->status == NFS3_OK && memcmp(r->verf, nfsd.write_verf, NFS3_WRITEVERFSIZE) == 0,
	   "COMMIT answered NFS3_OK with the daemon's verifier");
	is_int(fake_sent(NFS3PROC_COMMIT), 3, "3 upstream COMMITs in all");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	stop();
}

/* ---- 2. a refused write-back ---------------------------------------- */

static void flush_done(void *arg, int status)
{
	*(int *)arg = status;
}

static int flushed(void *arg)
{
	return *(int *)arg != -1;
}

static void test_refused(void)
{
	char verf0[NFS3_WRITEVERFSIZE];
	int flush_status = -1;

	start(tune);
	diag("2. the upstream refuses a write-back started by a flush: NFS3ERR_NOSPC");
	struct cache_object *o = writable_file("fh-nospc");
	memcpy(verf0, nfsd.write_verf, sizeof(verf0));
	taken(write_call("fh-nospc", 0, 4096, UNSTABLE), 4096, "WRITE [0, 4K)");
	is_int(writeback_flush_all(flush_done, &flush_status), 0, "flush: write-back starts");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 4096), "... one WRITE of [0, 4K)");
	fake_complete_status(fake_pending_nth(NFS3PROC_WRITE, 0), NFS3ERR_NOSPC);
	fake_run_until(flushed, &flush_status, 5.0);
	is_int(flush_status, NFS3ERR_NOSPC, "the flush reports NFS3ERR_NOSPC");
	is_int(stats.cache_writeback_errors, 1, "cache.writeback.errors 1");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0: the bytes are forgotten");
	ok(!extent_set_covers(&o->valid, 0, 4096), "... and no longer valid");
	ok(memcmp(nfsd.write_verf, verf0, sizeof(verf0)) != 0, "a new write verifier");

	status_is(commit_call("fh-nospc"), NFS3ERR_NOSPC, "the next COMMIT: NFS3ERR_NOSPC");
	is_int(fake_sent(NFS3PROC_COMMIT), 0, "... without a COMMIT upstream");
	is_int(fake_sent(NFS3PROC_WRITE), 1, "... nor a WRITE");
	const struct fake_reply *r = fake_wait_reply(commit_call("fh-nospc"));
	ok(r && r->status == NFS3_OK && memcmp(r->verf, verf0, sizeof(verf0)) != 0,
	   "the COMMIT after it: NFS3_OK, with a verifier other than the WRITE's (the client resends)");
	stop();

	start(tune);
	diag("2b. the upstream refuses a write-back started by COMMIT: NFS3ERR_ACCES");
	o = writable_file("fh-acces");
	memcpy(verf0, nfsd.write_verf, sizeof(verf0));
	taken(write_call("fh-acces", 0, 4096, UNSTABLE), 4096, "WRITE [0, 4K)");
	uint32_t xc = commit_call("fh-acces");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 4096), "COMMIT: one WRITE of [0, 4K)");
	fake_complete_status(fake_pending_nth(NFS3PROC_WRITE, 0), NFS3ERR_ACCES);
	status_is(xc, NFS3ERR_ACCES, "COMMIT: NFS3ERR_ACCES");
	is_int(fake_sent(NFS3PROC_COMMIT), 0, "... no COMMIT upstream");
	is_int(stats.cache_writeback_errors, 1, "cache.writeback.errors 1");
	ok(!cache_access_granted(o, &writer, ACCESS3_MODIFY), "the writer's ACCESS grant is forgotten");

	uint32_t xw = write_call("fh-acces", 0, 4096, UNSTABLE);
	struct fake_call *ac = fake_pending_nth(NFS3PROC_ACCESS, 0);
	ok(ac && (ac->access & ACCESS3_MODIFY), "the next WRITE asks ACCESS first");
	if (!ac)
		fake_bail_out("the upstream call the case goes on with is missing");
	ACCESS3res ares = fake_access3res(ACCESS3_READ, &upstream_file);
	fake_complete(ac, UPSTREAM_OK, &ares);
	struct fake_call *wc = fake_pending_nth(NFS3PROC_WRITE, 0);
	ok(wc && wc->stable == FILE_SYNC, "not granted MODIFY: the WRITE goes upstream FILE_SYNC");
	if (!wc)
		fake_bail_out("the upstream call the case goes on with is missing");
	fake_complete_status(wc, NFS3ERR_ACCES);
	status_is(xw, NFS3ERR_ACCES, "... and gets the upstream's NFS3ERR_ACCES");
	r = fake_wait_reply(commit_call("fh-acces"));
	ok(r && r->status == NFS3_OK && memcmp(r->verf, verf0, sizeof(verf0)) != 0,
	   "a later COMMIT: NFS3_OK, with a verifier other than the lost bytes'");
	stop();
}

/* ---- 3. no room for dirty data: JUKEBOX at the deadline --------------- */

static void test_no_room(void)
{
	start(tune_no_room);
	diag("3. cache.max_dirty 64K, upstream.timeout_ms 300, the upstream not answering");
	struct cache_object *o = writable_file("fh-room");

	taken(write_call("fh-room", 0, 49152, UNSTABLE), 49152, "WRITE [0, 48K)");
	ev_now_update(lp);
	ev_tstamp t0 = ev_now(lp);
	uint32_t x = write_call("fh-room", 49152, 32768, UNSTABLE);
	ok(fake_wait_pending(NFS3PROC_WRITE, 1), "WRITE [48K, 80K): write-back starts under pressure");
	fake_run_for(0.1);
	ok(!fake_reply_of(x), "... and the WRITE waits for room");
	const struct fake_reply *r = fake_wait_reply(x);
	double waited = ev_now(lp) - t0;
	ok(r && r->kind == FAKE_REPLY_JUKEBOX, "no room within upstream.timeout_ms: NFS3ERR_JUKEBOX");
	ok(waited >= TIMEOUT_MS / 1000.0 - 0.01 && waited < TIMEOUT_MS / 1000.0 + 1.0,
	   "... after %.3f s (timeout 0.3 s, checked every 0.25 s)", waited);
	is_int(stats.cache_dirty_bytes, 49152, "cache.dirty.bytes: the first WRITE's only");
	ok(!extent_set_covers(&o->valid, 49152, 81920), "the refused bytes are not stored");

	diag("3b. the upstream answers again");
	struct fake_call *w = write_sent(0, 49152);
	ok(w != NULL, "the pending WRITE is [0, 48K)");
	if (!w)
		fake_bail_out("the upstream call the case goes on with is missing");
	upstream_write(w, verf1);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	fake_run_for(0.01);
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	taken(write_call("fh-room", 49152, 32768, UNSTABLE), 32768, "the client's retry is taken");
	uint32_t xc = commit_call("fh-room");
	w = NULL;
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && (w = write_sent(49152, 32768)),
	   "COMMIT: a WRITE of [48K, 80K)");
	if (!w)
		fake_bail_out("the upstream call the case goes on with is missing");
	upstream_write(w, verf1);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	status_is(xc, NFS3_OK, "COMMIT: NFS3_OK");
	stop();
}

/* ---- 4. the window of WRITEs in flight ------------------------------- */

/* Answer pending WRITEs until the COMMIT goes; counts the most in flight. */
static unsigned drain_writes(unsigned *most)
{
	unsigned answered = 0;

	*most = 0;
	while (fake_pending(NFS3PROC_COMMIT) == 0 && fake_wait_pending(NFS3PROC_WRITE, 1)) {
		fake_run_for(0.02);   /* every WRITE the window allows is sent */
		unsigned n = fake_pending(NFS3PROC_WRITE);
		if (n > *most)
			*most = n;
		while (n-- > 0) {
			upstream_write(fake_pending_nth(NFS3PROC_WRITE, 0), verf1);
			answered++;
		}
	}
	return answered;
}

static void test_window(void)
{
	unsigned most;

	start(tune);
	diag("4. the round trip unknown: WB_MIN_WRITES WRITEs of wtmax in flight");
	writable_file("fh-win");
	fake_upstream_set_wtmax(4096);
	fake_upstream_set_srtt(0);
	taken(write_call("fh-win", 0, 65536, UNSTABLE), 65536, "WRITE [0, 64K)");
	uint32_t xc = commit_call("fh-win");
	is_int(drain_writes(&most), 16, "COMMIT: 16 WRITEs of 4K");
	is_int(most, WB_MIN_WRITES, "... at most WB_MIN_WRITES in flight");
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	status_is(xc, NFS3_OK, "COMMIT: NFS3_OK");

	diag("4b. 10 ms round trip, 300 scattered 512-byte ranges: WB_MAX_WRITES in flight");
	fake_upstream_set_srtt(0.010);
	for (unsigned i = 0; i < 300; i++)
		if (!taken(write_call("fh-win", 65536 + 640 * i, 512, UNSTABLE), 512, "scattered WRITE"))
			break;
	xc = commit_call("fh-win");
	is_int(drain_writes(&most), 300, "COMMIT: 300 WRITEs, one per range");
	is_int(most, WB_MAX_WRITES, "... WB_MAX_WRITES (256) in flight at once, not 8");
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	status_is(xc, NFS3_OK, "COMMIT: NFS3_OK");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	stop();
}

/* ---- 5. cache.commit = local ------------------------------------------ */

static void tune_local(struct nfsd_conf *cfg)
{
	tune(cfg);
	cfg->cache.commit = COMMIT_LOCAL;
}

static void test_commit_local(void)
{
	char verf0[NFS3_WRITEVERFSIZE];
	int flush_status = -1;

	start(tune_local);
	diag("5. cache.commit = local: COMMIT answered from the index, no upstream call");
	writable_file("fh-local");
	memcpy(verf0, nfsd.write_verf, sizeof(verf0));
	taken(write_call("fh-local", 0, 8192, UNSTABLE), 8192, "WRITE [0, 8K)");
	is_int(stats.cache_unwritten_bytes, 0, "cache.unwritten.bytes 0 before the COMMIT");
	const struct fake_reply *r = fake_wait_reply(commit_call("fh-local"));
	ok(r && r->status == NFS3_OK && memcmp(r->verf, verf0, sizeof(verf0)) == 0,
	   "COMMIT: NFS3_OK with the WRITE's verifier");
	is_int(fake_sent(FAKE_ANY_PROC), 0, "... without any upstream call");
	is_int(stats.cache_unwritten_bytes, 8192, "cache.unwritten.bytes 8192");
	is_int(stats.cache_dirty_bytes, 8192, "cache.dirty.bytes 8192");

	diag("5b. the upstream refuses the write-back: kept, counted, not reported");
	is_int(writeback_flush_all(flush_done, &flush_status), 0, "flush: write-back starts");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 8192), "... one WRITE of [0, 8K)");
	fake_complete_status(fake_pending_nth(NFS3PROC_WRITE, 0), NFS3ERR_ACCES);
	fake_run_until(flushed, &flush_status, 5.0);
	is_int(flush_status, NFS3ERR_ACCES, "the flush reports NFS3ERR_ACCES");
	is_int(stats.cache_writeback_errors, 1, "cache.writeback.errors 1");
	is_int(stats.cache_dirty_bytes, 8192, "cache.dirty.bytes 8192: kept");
	is_int(stats.cache_unwritten_bytes, 8192, "cache.unwritten.bytes 8192: kept");
	ok(memcmp(nfsd.write_verf, verf0, sizeof(verf0)) == 0, "the write verifier stays");
	r = fake_wait_reply(commit_call("fh-local"));
	ok(r && r->status == NFS3_OK && memcmp(r->verf, verf0, sizeof(verf0)) == 0,
	   "the next COMMIT: NFS3_OK with the same verifier (the error is not reported)");
	is_int(fake_sent(NFS3PROC_WRITE), 1, "... and sends nothing upstream");
	fake_run_for(0.6);
	is_int(fake_pending(NFS3PROC_WRITE), 0, "no retry before the backoff (1 s) even past the expiry tick");

	diag("5c. a later flush writes them");
	flush_status = -1;
	is_int(writeback_flush_all(flush_done, &flush_status), 0, "flush: write-back starts");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 8192), "... one WRITE of [0, 8K)");
	upstream_write(fake_pending_nth(NFS3PROC_WRITE, 0), verf1);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	fake_run_until(flushed, &flush_status, 5.0);
	is_int(flush_status, 0, "the flush is OK");
	is_int(stats.cache_unwritten_bytes, 0, "cache.unwritten.bytes 0");
	is_int(stats.cache_unwritten_oldest_s, 0, "cache.unwritten.oldest_s 0");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	stop();

	start(tune_local);
	diag("5d. committed locally, then a reload sets cache.commit = upstream: a refusal keeps them");
	writable_file("fh-reload");
	memcpy(verf0, nfsd.write_verf, sizeof(verf0));
	taken(write_call("fh-reload", 0, 8192, UNSTABLE), 8192, "WRITE [0, 8K)");
	r = fake_wait_reply(commit_call("fh-reload"));
	ok(r && r->status == NFS3_OK, "COMMIT (local): NFS3_OK");
	is_int(stats.cache_unwritten_bytes, 8192, "cache.unwritten.bytes 8192");
	nfsd.cfg.cache.commit = COMMIT_UPSTREAM;   /* what a reload does */
	flush_status = -1;
	is_int(writeback_flush_all(flush_done, &flush_status), 0, "flush: write-back starts");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 8192), "... one WRITE of [0, 8K)");
	fake_complete_status(fake_pending_nth(NFS3PROC_WRITE, 0), NFS3ERR_ACCES);
	fake_run_until(flushed, &flush_status, 5.0);
	is_int(flush_status, NFS3ERR_ACCES, "the flush reports NFS3ERR_ACCES");
	is_int(stats.cache_writeback_errors, 1, "cache.writeback.errors 1");
	is_int(stats.cache_dirty_bytes, 8192, "cache.dirty.bytes 8192: kept");
	is_int(stats.cache_unwritten_bytes, 8192, "cache.unwritten.bytes 8192: kept");
	ok(memcmp(nfsd.write_verf, verf0, sizeof(verf0)) == 0, "the write verifier stays");
	uint32_t xc = commit_call("fh-reload");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 8192),
	   "the next COMMIT (upstream): the kept bytes are sent again");
	upstream_write(fake_pending_nth(NFS3PROC_WRITE, 0), verf1);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	status_is(xc, NFS3ERR_ACCES, "... and the client's COMMIT hears of the refusal");
	is_int(stats.cache_unwritten_bytes, 0, "cache.unwritten.bytes 0");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	stop();
}

/* ---- 6. the daemon stops with passes waiting for the window ----------- */

static void test_stop_passes(void)
{
	int flush_status = -1;

	start(tune);
	diag("6. the daemon stops while the upstream does not answer: three passes, the first holding the window");
	writable_file("fh-s1");
	writable_file("fh-s2");
	writable_file("fh-s3");
	fake_upstream_set_wtmax(4096);
	fake_upstream_set_srtt(0);
	taken(write_call("fh-s1", 0, 16384, UNSTABLE), 16384, "WRITE [0, 16K) of the first file");
	taken(write_call("fh-s2", 0, 4096, UNSTABLE), 4096, "WRITE [0, 4K) of the second");
	taken(write_call("fh-s3", 0, 4096, UNSTABLE), 4096, "WRITE [0, 4K) of the third");
	is_int(writeback_flush_all(flush_done, &flush_status), 0, "flush: write-back starts");
	ok(fake_wait_pending(NFS3PROC_WRITE, WB_MIN_WRITES), "... WB_MIN_WRITES WRITEs of the first file");
	is_int(fake_pending(NFS3PROC_WRITE), WB_MIN_WRITES, "... and none of the others (no room)");
	writeback.stopping = 1;   /* what writeback_finalise() does first */
	for (unsigned i = 0; i < WB_MIN_WRITES; i++) {
		struct fake_call *c = fake_pending_nth(NFS3PROC_WRITE, 0);
		if (!c)
			fake_bail_out("the upstream call the case goes on with is missing");
		fake_complete(c, UPSTREAM_TIMEOUT, NULL);
	}
	fake_run_until(flushed, &flush_status, 5.0);
	ok(flush_status < 0, "the flush: the upstream did not answer");
	ok(list_empty(&writeback.passes), "every pass ended");
	is_int(stats.cache_dirty_bytes, 24576, "cache.dirty.bytes 24K: kept for the next start");
	stop();
}

/* ---- 7. a flush while the upstream does not answer --------------------- */

static void test_silent_upstream(void)
{
	int flush_status = 1;

	start(tune);
	diag("7. a flush of three files while the upstream does not answer: the first pass holds the window");
	writable_file("fh-t1");
	writable_file("fh-t2");
	writable_file("fh-t3");
	fake_upstream_set_wtmax(4096);
	fake_upstream_set_srtt(0);
	taken(write_call("fh-t1", 0, 16384, UNSTABLE), 16384, "WRITE [0, 16K) of the first file");
	taken(write_call("fh-t2", 0, 4096, UNSTABLE), 4096, "WRITE [0, 4K) of the second");
	taken(write_call("fh-t3", 0, 4096, UNSTABLE), 4096, "WRITE [0, 4K) of the third");
	unsigned sent0 = fake_sent(NFS3PROC_WRITE);
	is_int(writeback_flush_all(flush_done, &flush_status), 0, "flush: write-back starts");
	ok(fake_wait_pending(NFS3PROC_WRITE, WB_MIN_WRITES), "... WB_MIN_WRITES WRITEs of the first file");
	for (unsigned i = 0; i < WB_MIN_WRITES; i++) {
		struct fake_call *c = fake_pending_nth(NFS3PROC_WRITE, 0);
		if (!c)
			fake_bail_out("the upstream call the case goes on with is missing");
		fake_complete(c, UPSTREAM_TIMEOUT, NULL);
	}
	fake_run_until(flushed, &flush_status, 5.0);
	ok(flush_status < 0, "the flush answers once the first WRITEs got no answer: the upstream did not answer");
	is_int(fake_sent(NFS3PROC_WRITE) - sent0, WB_MIN_WRITES,
	       "the passes waiting for room sent nothing (no timeout of their own in turn)");
	ok(list_empty(&writeback.passes), "every pass ended");
	is_int(stats.cache_dirty_bytes, 24576, "cache.dirty.bytes 24K: kept for a later pass");
	stop();
}

/* ---- 9. odd calls ---------------------------------------------------- */

static void test_odd_calls(void)
{
	start(tune);
	diag("9. the upstream answers the write-back JUKEBOX: the COMMIT gets JUKEBOX, the bytes stay");
	writable_file("fh-jb");
	taken(write_call("fh-jb", 0, 4096, UNSTABLE), 4096, "WRITE [0, 4K)");
	uint32_t xc = commit_call("fh-jb");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 4096), "COMMIT: one WRITE of [0, 4K)");
	fake_complete_status(fake_pending_nth(NFS3PROC_WRITE, 0), NFS3ERR_JUKEBOX);
	status_is(xc, NFS3ERR_JUKEBOX, "COMMIT: NFS3ERR_JUKEBOX");
	is_int(stats.cache_writeback_retries, 1, "cache.writeback.retries 1");
	is_int(stats.cache_writeback_errors, 0, "cache.writeback.errors 0");
	is_int(stats.cache_dirty_bytes, 4096, "cache.dirty.bytes 4K: kept");
	xc = commit_call("fh-jb");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 4096), "the COMMIT again: the WRITE again");
	upstream_write(fake_pending_nth(NFS3PROC_WRITE, 0), verf1);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "... then a COMMIT");
	fake_complete_status(fake_pending_nth(NFS3PROC_COMMIT, 0), NFS3ERR_JUKEBOX);
	status_is(xc, NFS3ERR_JUKEBOX, "the upstream's COMMIT answered JUKEBOX: NFS3ERR_JUKEBOX");
	is_int(stats.cache_writeback_retries, 2, "cache.writeback.retries 2");
	is_int(stats.cache_dirty_bytes, 4096, "cache.dirty.bytes 4K: still kept");
	xc = commit_call("fh-jb");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(0, 4096), "a third COMMIT: the WRITE again");
	upstream_write(fake_pending_nth(NFS3PROC_WRITE, 0), verf1);
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "... then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	const struct fake_reply *r = fake_wait_reply(xc);
	ok(r && r->status == NFS3_OK && memcmp(r->verf, nfsd.write_verf, NFS3_WRITEVERFSIZE) == 0,
	   "... NFS3_OK with the daemon's verifier");
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0");
	is_int(stats.cache_writeback_errors, 0, "cache.writeback.errors 0");

	diag("9b. COMMIT of ranges servers judge differently: the upstream's answer");
	static const struct { uint64_t offset; uint32_t count; const char *what; } odd[] = {
		{ 1ull << 63, 0, "at 2^63" },
		{ (1ull << 63) - 5, 10, "across 2^63" },
		{ UINT64_MAX - 4, 10, "across 2^64" },
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		taken(write_call("fh-jb", 4096, 4096, UNSTABLE), 4096, "WRITE [4K, 8K)");
		unsigned commits = fake_sent(NFS3PROC_COMMIT);
		xc = commit_range_call("fh-jb", odd[i].offset, odd[i].count);
		ok(fake_wait_pending(NFS3PROC_WRITE, 1) && write_sent(4096, 4096),
		   "COMMIT %s: the dirty bytes written first", odd[i].what);
		upstream_write(fake_pending_nth(NFS3PROC_WRITE, 0), verf1);
		ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "... and committed");
		upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
		ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "... then the client's COMMIT goes upstream");
		struct fake_call *c = fake_pending_nth(NFS3PROC_COMMIT, 0);
		ok(c && c->offset == odd[i].offset && c->count == odd[i].count, "... with its range");
		is_int(fake_sent(NFS3PROC_COMMIT) - commits, 2, "... two COMMITs upstream in all");
		if (!c)
			fake_bail_out("the upstream call the case goes on with is missing");
		fake_complete_status(c, NFS3ERR_INVAL);
		status_is(xc, NFS3ERR_INVAL, "... and its NFS3ERR_INVAL is the answer");
	}

	diag("9c. a WRITE whose count is not its data's length: upstream as it is");
	struct nfsd_call *call = fake_client_call(NFS3PROC_WRITE, &writer);
	WRITE3args *a = call->args;
	a->file.data.data_len = (u_int)strlen("fh-jb");
	a->file.data.data_val = (char *)"fh-jb";
	a->offset = 8192;
	a->count = 5;
	a->stable = UNSTABLE;
	a->data.data_len = 10;
	a->data.data_val = (char *)data + 8192;
	uint32_t xw = fake_dispatch(call);
	ok(fake_wait_pending(NFS3PROC_WRITE, 1), "count 5 with 10 bytes: a WRITE upstream");
	struct fake_call *wc = fake_pending_nth(NFS3PROC_WRITE, 0);
	if (!wc)
		fake_bail_out("the upstream call the case goes on with is missing");
	ok(wc->offset == 8192 && wc->count == 5 && ((WRITE3args *)wc->args)->data.data_len == 10,
	   "... offset, count and data as the client sent them");
	fake_complete_status(wc, NFS3ERR_INVAL);
	status_is(xw, NFS3ERR_INVAL, "... and the upstream's NFS3ERR_INVAL is the answer");
	is_int(stats.cache_dirty_bytes, 0, "... nothing dirty");
	stop();
}

/* ---- 8. write-back behind a sequential writer ------------------------- */

static void test_behind_writer(void)
{
	unsigned most;
	const uint32_t chunk = 256 * 1024;

	start(tune);
	diag("8. a file written sequentially is written back behind its writer");
	writable_file("fh-seq");
	writable_file("fh-rnd");
	fake_upstream_set_wtmax(65536);
	fake_upstream_set_srtt(0.010);
	unsigned before = fake_sent(NFS3PROC_WRITE);
	for (uint32_t off = 0; off < (4u << 20) - chunk; off += chunk)
		if (!taken(write_call("fh-seq", off, chunk, UNSTABLE), chunk, "sequential WRITE"))
			break;
	fake_run_for(0.05);
	is_int(fake_sent(NFS3PROC_WRITE) - before, 0, "below 4 MiB dirty: nothing written back yet");
	taken(write_call("fh-seq", (4u << 20) - chunk, chunk, UNSTABLE), chunk, "the WRITE that makes 4 MiB");
	ok(fake_wait_pending(NFS3PROC_WRITE, 1), "write-back started without a COMMIT");
	is_int(drain_writes(&most), 64, "64 WRITEs of wtmax (64K)");
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then the pass's COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	fake_run_for(0.05);
	is_int(stats.cache_dirty_bytes, 0, "cache.dirty.bytes 0 with no COMMIT from the client");

	diag("8b. scattered 4K WRITEs making 5 MiB dirty wait (later neighbours make fewer WRITEs)");
	before = fake_sent(NFS3PROC_WRITE);
	for (unsigned i = 0; i < 1280; i++)
		if (!taken(write_call("fh-rnd", 8192ull * i, 4096, UNSTABLE), 4096, "scattered WRITE"))
			break;
	fake_run_for(0.05);
	is_int(fake_sent(NFS3PROC_WRITE) - before, 0, "no write-back started");
	is_int(stats.cache_dirty_bytes, 1280 * 4096, "cache.dirty.bytes 5 MiB");
	uint32_t xc = commit_call("fh-rnd");
	is_int(drain_writes(&most), 1280, "their COMMIT: one WRITE per range");
	ok(fake_wait_pending(NFS3PROC_COMMIT, 1), "then a COMMIT");
	upstream_commit(fake_pending_nth(NFS3PROC_COMMIT, 0), verf1);
	status_is(xc, NFS3_OK, "COMMIT: NFS3_OK");
	stop();
}

int main(void)
{
	fake_watchdog(60);
	lp = ev_loop_new(EVFLAG_AUTO);
	if (!lp)
		return 1;
	log_init(1, LOG_LEVEL_ERROR);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + i / 4096);

	test_verifier_change();
	test_refused();
	test_no_room();
	test_window();
	test_commit_local();
	test_stop_passes();
	test_silent_upstream();
	test_behind_writer();
	test_odd_calls();

	ev_loop_destroy(lp);
	return done();
}
