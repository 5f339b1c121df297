/*
 * test_nfs_meta.c — the namespace cache's procedures (daemon/nfs_meta.c,
 * DESIGN.md "Namespace cache") driven through the procedure table with the
 * fake upstream (fake_upstream.h) on the real cache/meta.c, a real libev
 * loop and the data cache.  Each case asserts what was answered, the
 * counters that say where the answer came from, and the upstream calls:
 *   1. GETATTR: a miss goes upstream once; the next is answered locally;
 *      concurrent GETATTRs of one handle wait for the one in flight;
 *   2. LOOKUP of a name a READDIRPLUS returned: one ACCESS of the directory
 *      as the caller, then every LOOKUP of it locally; another uid gets its
 *      own ACCESS and, refused, the upstream's error; a forwarded LOOKUP
 *      answered (found or NOENT) grants the search it needed;
 *   3. ACCESS answered from the caller's own result only;
 *   4. a negative LOOKUP, then a CREATE of that name through the proxy: the
 *      name is found at once without a LOOKUP upstream;
 *   5. NULL answered locally; FSINFO twice: one upstream call;
 *   6. a listing past its directory's TTL: one GETATTR renews it when the
 *      directory is unchanged; a changed one sends the READDIRPLUS;
 *   7. names looked up one by one in a directory never listed: after two
 *      forwarded LOOKUPs its listing is read (READDIRPLUS, as the caller)
 *      and the next names are answered from it;
 *   8. cache.metadata = no: everything forwarded;
 *   9. SYMLINK: a 3000-byte target is forwarded; one that libnfs cannot
 *      encode in its 4 KiB call buffer is answered NFS3ERR_NAMETOOLONG
 *      without an upstream call;
 *  10. RENAME over a file while some file has data not written back: the
 *      name is looked up first; the file's last link gone, its dirty data
 *      goes (as on a REMOVE) and a READ of it, even at its end, is the
 *      upstream's (revalidated, never answered from the data cache); a
 *      file with a second link keeps its dirty data.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/meta.h"
#include "common/log.h"
#include "common/stats.h"
#include "daemon/nfs_common.h"
#include "tests/unit/fake_upstream.h"
#include "tests/unit/fattr.h"
#include "tests/unit/tap.h"

#define PAYLOAD 65536u

static struct ev_loop *lp;

static const struct rpc_cred alice = {
	.flavor = RPC_AUTH_SYS, .machinename = "client", .uid = 1000, .gid = 100,
	.gids_len = 1, .gids = { 100 },
};
static const struct rpc_cred bob = {
	.flavor = RPC_AUTH_SYS, .machinename = "client", .uid = 1001, .gid = 1001,
	.gids_len = 0,
};

static uint8_t dir_fh[] = { 0xd1, 0x01, 0x02, 0x03 };
static uint8_t file_fh[] = { 0xf1, 0x01, 0x02, 0x03, 0x04 };
static uint8_t new_fh[] = { 0xf2, 0x09 };
static fattr3 dir_attrs, file_attrs;

static int metadata_on = 1;
static unsigned acdir = 60;
static uint64_t metadata_max = 1000000;

static void tune(struct nfsd_conf *cfg)
{
	cfg->cache.acregmin = cfg->cache.acregmax = 60;
	cfg->cache.acdirmin = cfg->cache.acdirmax = acdir;
	cfg->cache.metadata = metadata_on;
	cfg->cache.metadata_max = metadata_max;
}

static void start(void)
{
	stats_reset();
	memset(&stats, 0, sizeof(stats));
	fake_daemon_start(lp, PAYLOAD, tune);
	meta_init(lp, &nfsd.cfg.cache);
	dir_attrs = test_fattr3(4096, 1000, 0, 1, 2);
	dir_attrs.type = NF3DIR;
	dir_attrs.mode = 0755;
	file_attrs = test_fattr3(10, 1000, 0, 1, 3);
}

static void stop(void)
{
	meta_finalise();
	fake_daemon_stop();
}

static nfs_fh3 fh3(uint8_t *data, uint32_t len)
{
	nfs_fh3 fh = { .data = { len, (char *)data } };
	return fh;
}

static uint32_t getattr(const uint8_t *fh, uint32_t len, const struct rpc_cred *cred)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_GETATTR, cred);
	GETATTR3args *a = call->args;

	a->object = fh3((uint8_t *)fh, len);
	return fake_dispatch(call);
}

static uint8_t *lookup_dir = dir_fh;   /* the directory lookup() looks in */

static uint32_t lookup(const char *name, const struct rpc_cred *cred)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_LOOKUP, cred);
	LOOKUP3args *a = call->args;

	a->what.dir = fh3(lookup_dir, sizeof(dir_fh));
	a->what.name = (char *)name;
	return fake_dispatch(call);
}

static uint32_t access_call(uint8_t *fh, uint32_t len, uint32_t bits, const struct rpc_cred *cred)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_ACCESS, cred);
	ACCESS3args *a = call->args;

	a->object = fh3(fh, len);
	a->access = bits;
	return fake_dispatch(call);
}

/* A READDIRPLUS of the directory, forwarded and answered with one entry
 * "f" (file_fh, file_attrs), eof. */
static void readdirplus_warm(void)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_READDIRPLUS, &alice);
	READDIRPLUS3args *a = call->args;

	a->dir = fh3(dir_fh, sizeof(dir_fh));
	a->dircount = 4096;
	a->maxcount = 16384;
	uint32_t xid = fake_dispatch(call);
	struct fake_call *c = fake_pending_nth(NFS3PROC_READDIRPLUS, 0);
	if (!c)
		fake_bail_out("READDIRPLUS not forwarded");
	READDIRPLUS3res res;
	entryplus3 e;
	memset(&res, 0, sizeof(res));
	memset(&e, 0, sizeof(e));
	e.fileid = file_attrs.fileid;
	e.name = "f";
	e.cookie = 7;
	e.name_attributes.attributes_follow = 1;
	e.name_attributes.post_op_attr_u.attributes = file_attrs;
	e.name_handle.handle_follows = 1;
	e.name_handle.post_op_fh3_u.handle = fh3(file_fh, sizeof(file_fh));
	res.status = NFS3_OK;
	res.READDIRPLUS3res_u.resok.dir_attributes.attributes_follow = 1;
	res.READDIRPLUS3res_u.resok.dir_attributes.post_op_attr_u.attributes = dir_attrs;
	memcpy(res.READDIRPLUS3res_u.resok.cookieverf, "verfverf", 8);
	res.READDIRPLUS3res_u.resok.reply.entries = &e;
	res.READDIRPLUS3res_u.resok.reply.eof = 1;
	fake_complete(c, UPSTREAM_OK, &res);
	const struct fake_reply *r = fake_wait_reply(xid);
	is_int(r ? (long long)r->status : -1, NFS3_OK, "READDIRPLUS forwarded and answered");
}

static void test_getattr(void)
{
	start();
	uint32_t x1 = getattr(file_fh, sizeof(file_fh), &alice);
	is_int(fake_sent(NFS3PROC_GETATTR), 1, "GETATTR miss: one upstream GETATTR");
	GETATTR3res res = fake_getattr3res(&file_attrs);
	fake_complete(fake_pending_nth(NFS3PROC_GETATTR, 0), UPSTREAM_OK, &res);
	const struct fake_reply *r = fake_wait_reply(x1);
	ok(r && r->status == NFS3_OK && r->attrs.size == 10, "the first GETATTR answered from upstream");

	uint32_t x2 = getattr(file_fh, sizeof(file_fh), &bob);
	r = fake_reply_of(x2);
	ok(r && r->status == NFS3_OK && r->attrs.fileid == 3 && r->attrs.size == 10,
	   "the second answered at once from the cache (any credential)");
	is_int(fake_sent(NFS3PROC_GETATTR), 1, "no second upstream GETATTR");
	is_int(stats.cache_attr_hits, 1, "cache.attr.hits 1");
	is_int(stats.cache_attr_misses, 1, "cache.attr.misses 1");

	/* three at once on an unknown handle: one goes, two wait */
	uint32_t y[3];
	for (int i = 0; i < 3; i++)
		y[i] = getattr(new_fh, sizeof(new_fh), &alice);
	is_int(fake_pending(NFS3PROC_GETATTR), 1, "concurrent GETATTRs: one upstream call in flight");
	fattr3 na = test_fattr3(99, 1000, 0, 1, 9);
	res = fake_getattr3res(&na);
	fake_complete(fake_pending_nth(NFS3PROC_GETATTR, 0), UPSTREAM_OK, &res);
	int answered = 0;
	for (int i = 0; i < 3; i++) {
		r = fake_wait_reply(y[i]);
		answered += r && r->status == NFS3_OK && r->attrs.size == 99;
	}
	is_int(answered, 3, "all three answered with its attributes");
	is_int(fake_sent(NFS3PROC_GETATTR), 2, "by one upstream GETATTR");

	/* the one in flight gets no answer in upstream.timeout_ms: its waiters
	 * answer JUKEBOX with it rather than wait a whole timeout again */
	uint8_t other[] = { 0x77 };
	uint32_t z1 = getattr(other, sizeof(other), &alice);
	uint32_t z2 = getattr(other, sizeof(other), &alice);
	fake_complete_timeout(fake_pending_nth(NFS3PROC_GETATTR, 0));
	r = fake_wait_reply(z1);
	is_int(r ? (long long)r->status : -1, NFS3ERR_JUKEBOX, "GETATTR without an answer: JUKEBOX");
	r = fake_wait_reply(z2);
	is_int(r ? (long long)r->status : -1, NFS3ERR_JUKEBOX, "its waiter too, at once");
	is_int(fake_pending(NFS3PROC_GETATTR), 0, "without a GETATTR of its own");

	/* one refused (an error status): the waiters answer from their own GETATTR */
	uint32_t w1 = getattr(other, sizeof(other), &alice);
	uint32_t w2 = getattr(other, sizeof(other), &bob);
	fake_complete_status(fake_pending_nth(NFS3PROC_GETATTR, 0), NFS3ERR_ACCES);
	r = fake_wait_reply(w1);
	is_int(r ? (long long)r->status : -1, NFS3ERR_ACCES, "a GETATTR refused: its caller gets the error");
	ok(fake_wait_pending(NFS3PROC_GETATTR, 1), "its waiter sends its own");
	res = fake_getattr3res(&na);
	fake_complete(fake_pending_nth(NFS3PROC_GETATTR, 0), UPSTREAM_OK, &res);
	r = fake_wait_reply(w2);
	is_int(r ? (long long)r->status : -1, NFS3_OK, "and gets its answer");
	stop();
}

static void test_lookup(void)
{
	start();
	readdirplus_warm();
	uint32_t x = lookup("f", &alice);
	is_int(fake_sent(NFS3PROC_LOOKUP), 0, "LOOKUP of a listed name: no upstream LOOKUP");
	struct fake_call *c = fake_pending_nth(NFS3PROC_ACCESS, 0);
	ok(c && c->cred.uid == 1000 && c->access == 0x3f,
	   "one ACCESS of the directory as the caller, every bit asked");
	if (!c)
		fake_bail_out("no ACCESS");
	ACCESS3res ar = fake_access3res(ACCESS3_READ | ACCESS3_LOOKUP, &dir_attrs);
	fake_complete(c, UPSTREAM_OK, &ar);
	const struct fake_reply *r = fake_wait_reply(x);
	ok(r && r->status == NFS3_OK && r->fh_len == sizeof(file_fh) &&
	   memcmp(r->fh, file_fh, sizeof(file_fh)) == 0 && r->attrs.size == 10,
	   "LOOKUP answered from the listing: handle and attributes");
	x = lookup("f", &alice);
	r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK, "the next LOOKUP at once");
	is_int(fake_sent(NFS3PROC_ACCESS), 1, "without another ACCESS");
	is_int(stats.cache_lookup_hits, 2, "cache.lookup.hits 2");

	/* ACCESS: alice's own result; bob has none */
	x = access_call(dir_fh, sizeof(dir_fh), ACCESS3_LOOKUP | ACCESS3_READ, &alice);
	r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK && r->access == (ACCESS3_LOOKUP | ACCESS3_READ),
	   "alice's ACCESS of the directory answered from her own result");
	is_int(stats.cache_access_hits, 1, "cache.access.hits 1");

	/* bob: his own ACCESS, refused search: the upstream's error */
	x = lookup("f", &bob);
	c = fake_pending_nth(NFS3PROC_ACCESS, 0);
	ok(c && c->cred.uid == 1001, "bob's LOOKUP asks ACCESS as bob");
	if (!c)
		fake_bail_out("no ACCESS for bob");
	ar = fake_access3res(0, &dir_attrs);
	fake_complete(c, UPSTREAM_OK, &ar);
	ok(fake_wait_pending(NFS3PROC_LOOKUP, 1), "refused: the LOOKUP goes upstream");
	fake_complete_status(fake_pending_nth(NFS3PROC_LOOKUP, 0), NFS3ERR_ACCES);
	r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3ERR_ACCES, "bob gets NFS3ERR_ACCES");
	is_int(stats.cache_lookup_hits, 2, "no cache hit for bob");
	x = access_call(dir_fh, sizeof(dir_fh), ACCESS3_LOOKUP, &bob);
	r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK && r->access == 0, "bob's ACCESS: his own result (nothing granted)");
	stop();

	/* carol: a LOOKUP of hers answered NOENT by the upstream grants her search */
	static const struct rpc_cred carol = {
		.flavor = RPC_AUTH_SYS, .machinename = "client", .uid = 1002, .gid = 1002,
	};
	start();
	readdirplus_warm();
	x = lookup("nothere", &carol);
	c = fake_pending_nth(NFS3PROC_LOOKUP, 0);
	if (!c)
		fake_bail_out("carol's LOOKUP not forwarded");
	LOOKUP3res lr;
	memset(&lr, 0, sizeof(lr));
	lr.status = NFS3ERR_NOENT;
	lr.LOOKUP3res_u.resfail.dir_attributes.attributes_follow = 1;
	lr.LOOKUP3res_u.resfail.dir_attributes.post_op_attr_u.attributes = dir_attrs;
	fake_complete(c, UPSTREAM_OK, &lr);
	fake_wait_reply(x);
	x = lookup("f", &carol);
	r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK && r->fh_len == sizeof(file_fh),
	   "carol's next LOOKUP answered at once from the listing");
	is_int(fake_sent(NFS3PROC_ACCESS), 0, "without an ACCESS: her NOENT showed the grant");
	x = access_call(dir_fh, sizeof(dir_fh), ACCESS3_LOOKUP | ACCESS3_MODIFY, &carol);
	ok(fake_reply_of(x) == NULL && fake_pending(NFS3PROC_ACCESS) == 1,
	   "her ACCESS asking more than search is forwarded");
	fake_complete_status(fake_pending_nth(NFS3PROC_ACCESS, 0), NFS3ERR_IO);
	fake_wait_reply(x);
	stop();
}

static void test_negative_create(void)
{
	start();
	readdirplus_warm();
	uint32_t x = lookup("new", &alice);
	struct fake_call *c = fake_pending_nth(NFS3PROC_LOOKUP, 0);
	ok(c != NULL, "LOOKUP of a name not cached goes upstream");
	if (!c)
		fake_bail_out("no LOOKUP");
	LOOKUP3res lr;
	memset(&lr, 0, sizeof(lr));
	lr.status = NFS3ERR_NOENT;
	lr.LOOKUP3res_u.resfail.dir_attributes.attributes_follow = 1;
	lr.LOOKUP3res_u.resfail.dir_attributes.post_op_attr_u.attributes = dir_attrs;
	fake_complete(c, UPSTREAM_OK, &lr);
	const struct fake_reply *r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3ERR_NOENT, "NOENT");
	x = lookup("new", &alice);
	c = fake_pending_nth(NFS3PROC_ACCESS, 0);
	if (c) {
		ACCESS3res ar = fake_access3res(0x1f, &dir_attrs);
		fake_complete(c, UPSTREAM_OK, &ar);
	}
	r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3ERR_NOENT, "the second NOENT from the cache");
	is_int(fake_sent(NFS3PROC_LOOKUP), 1, "one upstream LOOKUP for both");
	is_int(stats.cache_lookup_negative_hits, 1, "cache.lookup.negative_hits 1");

	/* CREATE of it through the proxy: wcc before = the cached attributes */
	struct nfsd_call *call = fake_client_call(NFS3PROC_CREATE, &alice);
	CREATE3args *ca = call->args;
	ca->where.dir = fh3(dir_fh, sizeof(dir_fh));
	ca->where.name = "new";
	x = fake_dispatch(call);
	c = fake_pending_nth(NFS3PROC_CREATE, 0);
	if (!c)
		fake_bail_out("CREATE not forwarded");
	fattr3 after = dir_attrs, made = test_fattr3(0, 2000, 5, 1, 11);
	after.mtime.seconds = after.ctime.seconds = 2000;
	CREATE3res cr;
	memset(&cr, 0, sizeof(cr));
	cr.status = NFS3_OK;
	cr.CREATE3res_u.resok.obj.handle_follows = 1;
	cr.CREATE3res_u.resok.obj.post_op_fh3_u.handle = fh3(new_fh, sizeof(new_fh));
	cr.CREATE3res_u.resok.obj_attributes.attributes_follow = 1;
	cr.CREATE3res_u.resok.obj_attributes.post_op_attr_u.attributes = made;
	wcc_data *w = &cr.CREATE3res_u.resok.dir_wcc;
	w->before.attributes_follow = 1;
	w->before.pre_op_attr_u.attributes.size = dir_attrs.size;
	w->before.pre_op_attr_u.attributes.mtime = dir_attrs.mtime;
	w->before.pre_op_attr_u.attributes.ctime = dir_attrs.ctime;
	w->after.attributes_follow = 1;
	w->after.post_op_attr_u.attributes = after;
	fake_complete(c, UPSTREAM_OK, &cr);
	r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3_OK, "CREATE answered");
	x = lookup("new", &alice);
	r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK && r->fh_len == sizeof(new_fh) &&
	   memcmp(r->fh, new_fh, sizeof(new_fh)) == 0,
	   "the created name is found at once, with its handle");
	is_int(fake_sent(NFS3PROC_LOOKUP), 1, "no upstream LOOKUP for it");
	x = lookup("f", &alice);
	r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK, "the other names stay (the change was ours)");
	stop();
}

static void test_null_fsinfo(void)
{
	start();
	struct nfsd_call *call = fake_client_call(NFS3PROC_NULL, &alice);
	uint32_t x = fake_dispatch(call);
	const struct fake_reply *r = fake_reply_of(x);
	ok(r && r->kind == FAKE_REPLY_RESULT, "NULL answered at once");
	is_int(fake_sent(FAKE_ANY_PROC), 0, "without an upstream call");

	FSINFO3res fr;
	memset(&fr, 0, sizeof(fr));
	fr.status = NFS3_OK;
	fr.FSINFO3res_u.resok.obj_attributes.attributes_follow = 1;
	fr.FSINFO3res_u.resok.obj_attributes.post_op_attr_u.attributes = dir_attrs;
	fr.FSINFO3res_u.resok.rtmax = 1 << 20;
	fr.FSINFO3res_u.resok.wtmax = 1 << 20;
	fr.FSINFO3res_u.resok.maxfilesize = 1ull << 40;
	for (int i = 0; i < 2; i++) {
		call = fake_client_call(NFS3PROC_FSINFO, &alice);
		((FSINFO3args *)call->args)->fsroot = fh3(dir_fh, sizeof(dir_fh));
		x = fake_dispatch(call);
		struct fake_call *c = fake_pending_nth(NFS3PROC_FSINFO, 0);
		if (c)
			fake_complete(c, UPSTREAM_OK, &fr);
		r = fake_wait_reply(x);
		is_int(r ? (long long)r->status : -1, NFS3_OK, "FSINFO %d answered", i + 1);
	}
	is_int(fake_sent(NFS3PROC_FSINFO), 1, "FSINFO twice: one upstream call");
	stop();
}

static uint32_t readdirplus(void)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_READDIRPLUS, &alice);
	READDIRPLUS3args *a = call->args;

	a->dir = fh3(dir_fh, sizeof(dir_fh));
	a->dircount = 4096;
	a->maxcount = 16384;
	return fake_dispatch(call);
}

static void test_listing_revalidate(void)
{
	acdir = 1;
	start();
	readdirplus_warm();
	uint32_t x = readdirplus();
	/* the forwarded one showed the read grant; the handles need search too */
	struct fake_call *c = fake_pending_nth(NFS3PROC_ACCESS, 0);
	ok(c && c->cred.uid == 1000, "READDIRPLUS from the listing: one ACCESS for the search grant");
	if (!c)
		fake_bail_out("no ACCESS for the search grant");
	ACCESS3res ar = fake_access3res(ACCESS3_READ | ACCESS3_LOOKUP, &dir_attrs);
	fake_complete(c, UPSTREAM_OK, &ar);
	const struct fake_reply *r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3_OK, "then answered from the listing");
	is_int(fake_sent(NFS3PROC_READDIRPLUS), 1, "one upstream READDIRPLUS so far");

	/* bob may read the directory but not search it: no handles for him
	 * from the listing (the upstream gives him names only) */
	x = fake_dispatch(({
		struct nfsd_call *bc = fake_client_call(NFS3PROC_READDIRPLUS, &bob);
		READDIRPLUS3args *ba = bc->args;
		ba->dir = fh3(dir_fh, sizeof(dir_fh));
		ba->dircount = 4096;
		ba->maxcount = 16384;
		bc;
	}));
	c = fake_pending_nth(NFS3PROC_ACCESS, 0);
	if (!c)
		fake_bail_out("no ACCESS for bob");
	ar = fake_access3res(ACCESS3_READ, &dir_attrs);
	fake_complete(c, UPSTREAM_OK, &ar);
	ok(fake_wait_pending(NFS3PROC_READDIRPLUS, 1),
	   "read but no search granted: bob's READDIRPLUS goes upstream, not the cached handles");
	fake_complete_status(fake_pending_nth(NFS3PROC_READDIRPLUS, 0), NFS3ERR_IO);
	fake_wait_reply(x);
	is_int(stats.cache_readdir_hits, 1, "no cache hit for bob");

	fake_run_for(1.2);   /* the directory's TTL (acdirmax 1 s) is over */
	x = readdirplus();
	c = fake_pending_nth(NFS3PROC_GETATTR, 0);
	ok(c != NULL && fake_pending(NFS3PROC_READDIRPLUS) == 0,
	   "past the TTL: one GETATTR of the directory, no READDIRPLUS");
	if (!c)
		fake_bail_out("no GETATTR");
	GETATTR3res gr = fake_getattr3res(&dir_attrs);
	fake_complete(c, UPSTREAM_OK, &gr);
	r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3_OK, "unchanged: answered from the listing");
	is_int(fake_sent(NFS3PROC_READDIRPLUS), 2, "no READDIRPLUS upstream for it (the second was bob's)");
	is_int(stats.cache_readdir_hits, 2, "cache.readdir.hits 2 (alice's)");

	fake_run_for(1.2);
	x = readdirplus();
	c = fake_pending_nth(NFS3PROC_GETATTR, 0);
	if (!c)
		fake_bail_out("no second GETATTR");
	fattr3 changed = dir_attrs;
	changed.mtime.nseconds = 1;
	gr = fake_getattr3res(&changed);
	fake_complete(c, UPSTREAM_OK, &gr);
	ok(fake_wait_pending(NFS3PROC_READDIRPLUS, 1), "changed: the READDIRPLUS goes upstream");
	fake_complete_status(fake_pending_nth(NFS3PROC_READDIRPLUS, 0), NFS3ERR_IO);
	r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3ERR_IO, "with the upstream's answer");
	stop();
	acdir = 60;
}

static LOOKUP3res lookup3res(nfsstat3 status, uint8_t *fh, uint32_t len, const fattr3 *a,
			     const fattr3 *dir)
{
	LOOKUP3res lr;

	memset(&lr, 0, sizeof(lr));
	lr.status = status;
	if (status == NFS3_OK) {
		lr.LOOKUP3res_u.resok.object = fh3(fh, len);
		lr.LOOKUP3res_u.resok.obj_attributes.attributes_follow = 1;
		lr.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes = *a;
		lr.LOOKUP3res_u.resok.dir_attributes.attributes_follow = 1;
		lr.LOOKUP3res_u.resok.dir_attributes.post_op_attr_u.attributes = *dir;
	} else {
		lr.LOOKUP3res_u.resfail.dir_attributes.attributes_follow = 1;
		lr.LOOKUP3res_u.resfail.dir_attributes.post_op_attr_u.attributes = *dir;
	}
	return lr;
}

static void test_prefetch(void)
{
	static uint8_t dir2_fh[sizeof(dir_fh)] = { 0xd2, 0x01, 0x02, 0x03 };

	lookup_dir = dir2_fh;   /* a directory no other case looked up in */
	start();
	/* two names looked up upstream one by one */
	uint32_t x = lookup("f", &alice);
	LOOKUP3res lr = lookup3res(NFS3_OK, file_fh, sizeof(file_fh), &file_attrs, &dir_attrs);
	fake_complete(fake_pending_nth(NFS3PROC_LOOKUP, 0), UPSTREAM_OK, &lr);
	fake_wait_reply(x);
	is_int(fake_sent(NFS3PROC_READDIRPLUS), 0, "one forwarded LOOKUP: the directory is not read");
	x = lookup("nothere", &alice);
	lr = lookup3res(NFS3ERR_NOENT, NULL, 0, NULL, &dir_attrs);
	fake_complete(fake_pending_nth(NFS3PROC_LOOKUP, 0), UPSTREAM_OK, &lr);
	fake_wait_reply(x);
	struct fake_call *c = fake_pending_nth(NFS3PROC_READDIRPLUS, 0);
	const READDIRPLUS3args *rp = c ? c->args : NULL;
	ok(c && c->cred.uid == 1000 && rp->dir.data.data_len == sizeof(dir2_fh) &&
	   memcmp(rp->dir.data.data_val, dir2_fh, sizeof(dir2_fh)) == 0 && rp->cookie == 0,
	   "the second: nfscached reads the directory's listing as the caller");
	if (!c)
		fake_bail_out("no READDIRPLUS");
	/* the listing: f and g, in two pages */
	fattr3 g_attrs = test_fattr3(20, 1000, 0, 1, 4);
	entryplus3 e[2];
	memset(e, 0, sizeof(e));
	e[0].fileid = 3; e[0].name = "f"; e[0].cookie = 1;
	e[0].name_attributes.attributes_follow = 1;
	e[0].name_attributes.post_op_attr_u.attributes = file_attrs;
	e[0].name_handle.handle_follows = 1;
	e[0].name_handle.post_op_fh3_u.handle = fh3(file_fh, sizeof(file_fh));
	e[1].fileid = 4; e[1].name = "g"; e[1].cookie = 2;
	e[1].name_attributes.attributes_follow = 1;
	e[1].name_attributes.post_op_attr_u.attributes = g_attrs;
	e[1].name_handle.handle_follows = 1;
	e[1].name_handle.post_op_fh3_u.handle = fh3(new_fh, sizeof(new_fh));
	READDIRPLUS3res res;
	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READDIRPLUS3res_u.resok.dir_attributes.attributes_follow = 1;
	res.READDIRPLUS3res_u.resok.dir_attributes.post_op_attr_u.attributes = dir_attrs;
	memcpy(res.READDIRPLUS3res_u.resok.cookieverf, "verfverf", 8);
	res.READDIRPLUS3res_u.resok.reply.entries = &e[0];
	fake_complete(c, UPSTREAM_OK, &res);
	ok(fake_wait_pending(NFS3PROC_READDIRPLUS, 1), "not at its end: the next page is asked");
	c = fake_pending_nth(NFS3PROC_READDIRPLUS, 0);
	READDIRPLUS3args *ra = c->args;
	ok(ra->cookie == 1 && memcmp(ra->cookieverf, "verfverf", 8) == 0,
	   "from the last cookie, with the verifier");
	res.READDIRPLUS3res_u.resok.reply.entries = &e[1];
	res.READDIRPLUS3res_u.resok.reply.eof = 1;
	fake_complete(c, UPSTREAM_OK, &res);
	fake_run_for(0.01);
	is_int(fake_sent(NFS3PROC_READDIRPLUS), 2, "two pages, then its end");

	x = lookup("g", &alice);
	const struct fake_reply *r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK && r->fh_len == sizeof(new_fh) &&
	   memcmp(r->fh, new_fh, sizeof(new_fh)) == 0 && r->attrs.size == 20,
	   "a name never looked up is answered from the listing read");
	is_int(fake_sent(NFS3PROC_LOOKUP), 2, "with no LOOKUP upstream");
	x = getattr(new_fh, sizeof(new_fh), &alice);
	r = fake_reply_of(x);
	ok(r && r->status == NFS3_OK && r->attrs.size == 20, "and its GETATTR too");
	stop();

	/* a cache too small for the directory (a 4096-byte directory may hold
	 * 512 names, and their nodes): names looked up one by one stay so */
	static uint8_t dir3_fh[sizeof(dir_fh)] = { 0xd3, 0x01, 0x02, 0x03 };
	lookup_dir = dir3_fh;
	metadata_max = 4000;
	start();
	for (int i = 0; i < 3; i++) {
		x = lookup(i ? "f" : "nothere", &alice);
		lr = i ? lookup3res(NFS3_OK, file_fh, sizeof(file_fh), &file_attrs, &dir_attrs) :
			 lookup3res(NFS3ERR_NOENT, NULL, 0, NULL, &dir_attrs);
		c = fake_pending_nth(NFS3PROC_LOOKUP, 0);
		if (c)
			fake_complete(c, UPSTREAM_OK, &lr);
		fake_wait_reply(x);
	}
	is_int(fake_sent(NFS3PROC_READDIRPLUS), 0,
	       "cache.metadata_max 4000: a directory that could fill a quarter of it is not read");
	stop();
	metadata_max = 1000000;
	lookup_dir = dir_fh;
}

static void test_off(void)
{
	metadata_on = 0;
	start();
	for (int i = 0; i < 2; i++) {
		uint32_t x = getattr(file_fh, sizeof(file_fh), &alice);
		GETATTR3res res = fake_getattr3res(&file_attrs);
		fake_complete(fake_pending_nth(NFS3PROC_GETATTR, 0), UPSTREAM_OK, &res);
		fake_wait_reply(x);
	}
	is_int(fake_sent(NFS3PROC_GETATTR), 2, "cache.metadata = no: every GETATTR forwarded");
	struct nfsd_call *call = fake_client_call(NFS3PROC_NULL, &alice);
	fake_dispatch(call);
	is_int(fake_sent(NFS3PROC_NULL), 1, "and NULL too");
	fake_complete(fake_pending_nth(NFS3PROC_NULL, 0), UPSTREAM_OK, NULL);
	is_int(stats.cache_attr_hits + stats.cache_attr_misses, 0, "nothing counted as a cache answer");
	stop();
	metadata_on = 1;
}

/* ---- 9. SYMLINK targets libnfs can send ------------------------------ */

static void test_symlink_long(void)
{
	static char target[4096];

	start();
	memset(target, 't', sizeof(target) - 1);
	for (int i = 0; i < 2; i++) {
		size_t len = i == 0 ? 3000 : 4095;
		target[len] = '\0';
		struct nfsd_call *call = fake_client_call(NFS3PROC_SYMLINK, &alice);
		SYMLINK3args *a = call->args;
		a->where.dir = fh3(dir_fh, sizeof(dir_fh));
		a->where.name = "s";
		a->symlink.symlink_data = target;
		uint32_t x = fake_dispatch(call);
		if (i == 0) {
			struct fake_call *c = fake_pending_nth(NFS3PROC_SYMLINK, 0);
			ok(c != NULL, "a 3000-byte target is forwarded");
			if (c)
				fake_complete_status(c, NFS3ERR_EXIST);
			const struct fake_reply *r = fake_wait_reply(x);
			is_int(r ? (long long)r->status : -1, NFS3ERR_EXIST, "... the upstream's answer");
		} else {
			const struct fake_reply *r = fake_wait_reply(x);
			is_int(r ? (long long)r->status : -1, NFS3ERR_NAMETOOLONG,
			       "a 4095-byte target: NFS3ERR_NAMETOOLONG");
			is_int(fake_sent(NFS3PROC_SYMLINK), 1, "... not sent upstream");
		}
		target[len] = 't';
	}
	stop();
}

/* ---- 10. RENAME over a file with data not written back ---------------- */

static uint8_t wb_data[8192];

/* A file the data cache knows (`nlink` links, fresh attributes, alice may
 * write it) with wb_data taken as dirty data by an UNSTABLE WRITE. */
static struct cache_object *dirty_file(uint8_t *fh, uint32_t len, uint32_t nlink, uint64_t fileid)
{
	struct cache_object *o = cache_get(fh, len);
	fattr3 a = test_fattr3(0, 1000, 0, 1, fileid);
	uint32_t all = ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND;

	a.nlink = nlink;
	cache_attrs_update(o, &a, cache_seq());
	cache_access_record(o, &alice, all, all);
	struct nfsd_call *call = fake_client_call(NFS3PROC_WRITE, &alice);
	WRITE3args *w = call->args;
	w->file = fh3(fh, len);
	w->count = sizeof(wb_data);
	w->stable = UNSTABLE;
	w->data.data_len = sizeof(wb_data);
	w->data.data_val = (char *)wb_data;
	const struct fake_reply *r = fake_wait_reply(fake_dispatch(call));
	ok(r && r->status == NFS3_OK && r->committed == UNSTABLE && cache_has_uncommitted(o),
	   "fileid %llu: an UNSTABLE WRITE taken as dirty data", (unsigned long long)fileid);
	return o;
}

/* RENAME dir/`from` over dir/`to`; the upstream's LOOKUP of `to` answers
 * `to_fh` with `nlink` links, then the RENAME succeeds.  The reply's status. */
static uint32_t rename_over(const char *from, const char *to, uint8_t *to_fh, uint32_t to_len,
			    uint32_t nlink)
{
	struct nfsd_call *call = fake_client_call(NFS3PROC_RENAME, &alice);
	RENAME3args *a = call->args;

	a->from.dir = a->to.dir = fh3(dir_fh, sizeof(dir_fh));
	a->from.name = (char *)from;
	a->to.name = (char *)to;
	uint32_t x = fake_dispatch(call);
	struct fake_call *c = fake_pending_nth(NFS3PROC_LOOKUP, 0);
	ok(c && fake_pending(NFS3PROC_RENAME) == 0, "RENAME over %s: %s looked up first", to, to);
	if (!c)
		fake_bail_out("no LOOKUP before the RENAME");
	LOOKUP3res lr;
	memset(&lr, 0, sizeof(lr));
	lr.status = NFS3_OK;
	lr.LOOKUP3res_u.resok.object = fh3(to_fh, to_len);
	lr.LOOKUP3res_u.resok.obj_attributes.attributes_follow = 1;
	lr.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes = test_fattr3(0, 1000, 0, 1, 99);
	lr.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes.nlink = nlink;
	fake_complete(c, UPSTREAM_OK, &lr);
	c = fake_pending_nth(NFS3PROC_RENAME, 0);
	if (!c)
		fake_bail_out("RENAME not forwarded");
	fake_complete_status(c, NFS3_OK);
	const struct fake_reply *r = fake_wait_reply(x);
	return r ? r->status : 0xffffffffu;
}

static void test_rename_over_dirty(void)
{
	static uint8_t z_fh[] = { 0xf3, 0x01 }, k_fh[] = { 0xf4, 0x02 };

	start();
	memset(wb_data, 'w', sizeof(wb_data));
	struct cache_object *z = dirty_file(z_fh, sizeof(z_fh), 1, 21);
	struct cache_object *k = dirty_file(k_fh, sizeof(k_fh), 2, 22);
	is_int(stats.cache_dirty_bytes, 2 * sizeof(wb_data), "16 KiB dirty");

	is_int(rename_over("w", "z", z_fh, sizeof(z_fh), 1), NFS3_OK, "RENAME w over z answered");
	ok(!cache_has_uncommitted(z), "z's last link gone: its dirty data dropped");
	is_int(stats.cache_dirty_bytes, sizeof(wb_data), "8 KiB dirty left (k's)");
	is_int(fake_sent(NFS3PROC_WRITE), 0, "nothing of z written upstream");

	/* its end, 8192, is what the cache knew of it: the upstream answers */
	struct nfsd_call *call = fake_client_call(NFS3PROC_READ, &alice);
	READ3args *ra = call->args;
	ra->file = fh3(z_fh, sizeof(z_fh));
	ra->offset = sizeof(wb_data);
	ra->count = 4096;
	uint32_t x = fake_dispatch(call);
	fake_run_for(0.01);
	ok(fake_reply_of(x) == NULL && fake_pending(FAKE_ANY_PROC) == 1,
	   "READ of z at its end: not answered from the data cache, one upstream call");
	/* a revalidating GETATTR, then the READ forwarded */
	for (int i = 0; i < 2 && fake_pending(FAKE_ANY_PROC) == 1; i++)
		fake_complete_status(fake_pending_nth(FAKE_ANY_PROC, 0), NFS3ERR_STALE);
	const struct fake_reply *r = fake_wait_reply(x);
	is_int(r ? (long long)r->status : -1, NFS3ERR_STALE, "READ of z: the upstream's NFS3ERR_STALE");

	is_int(rename_over("v", "k", k_fh, sizeof(k_fh), 2), NFS3_OK, "RENAME v over k answered");
	ok(cache_has_uncommitted(k), "k has a second link: its dirty data stays");
	is_int(stats.cache_dirty_bytes, sizeof(wb_data), "8 KiB dirty");
	stop();
}

int main(void)
{
	fake_watchdog(60);
	lp = ev_loop_new(EVFLAG_AUTO);
	if (!lp)
		return 1;
	log_init(1, LOG_LEVEL_WARNING);

	test_getattr();
	test_lookup();
	test_negative_create();
	test_null_fsinfo();
	test_listing_revalidate();
	test_prefetch();
	test_off();
	test_symlink_long();
	test_rename_over_dirty();

	ev_loop_destroy(lp);
	return done();
}
