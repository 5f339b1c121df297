/*
 * test_meta.c — the namespace cache (cache/meta.c, DESIGN.md "Namespace
 * cache") on a clock the test drives: TTLs clamped for files and
 * directories, replies made stale by a change of ours, names dropped by a
 * change seen in a directory's attributes and kept by an explained one
 * (which drops the listing), negative entries, ACCESS per credential,
 * listings built across pages and dropped by a wrong cookie or verifier,
 * READDIR(PLUS) answers within dircount/maxcount measured by libnfs's own
 * XDR encoder, paging through with the returned cookies, TOOSMALL,
 * eviction under cache.metadata_max with its counters, pinned nodes, one
 * GETATTR per node (join and wake), FSSTAT/FSINFO/PATHCONF TTLs, MNT and
 * EXPORT, meta_clear, the module off; and the bytes a node and a name
 * cost.
 *
 * #includes cache/meta.c with META_NOW() on the test's clock.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double test_now = 1000000.0;   /* seconds, the loop's time as meta.c sees it */
#define META_NOW() test_now

#include "cache/meta.c"

#include "tests/unit/fattr.h"
#include "tests/unit/tap.h"

#define FH_LEN 28
#define FH_IDS 40000
#define T0 100000u                   /* mtime of "old" objects: TTL at the max */

static struct cache_config cfg;
static uint8_t fh_buf[FH_IDS][FH_LEN];

/* The handle of object `id` (a 28-byte handle, like Linux knfsd's). */
static nfs_fh3 fh(uint32_t id)
{
	nfs_fh3 f;

	memset(fh_buf[id], 0xa5, FH_LEN);
	memcpy(fh_buf[id], &id, sizeof(id));
	f.data.data_len = FH_LEN;
	f.data.data_val = (char *)fh_buf[id];
	return f;
}

static fattr3 file_attrs(uint64_t fileid, uint32_t mtime_s)
{
	return test_fattr3(100, mtime_s, 0, 7, fileid);
}

static fattr3 dir_attrs(uint64_t fileid, uint32_t mtime_s)
{
	fattr3 a = test_fattr3(4096, mtime_s, 0, 7, fileid);

	a.type = NF3DIR;
	a.mode = 0755;
	return a;
}

static void config_default(void)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.acregmin = 3;
	cfg.acregmax = 60;
	cfg.acdirmin = 30;
	cfg.acdirmax = 60;
	cfg.metadata = 1;
	cfg.metadata_max = 100000;
}

/* A fresh module on the default configuration. */
static void restart(void)
{
	meta_finalise();
	config_default();
	meta_init(NULL, &cfg);
	stats_reset();
	test_now = 1000000.0;
}

static uint64_t entries(void)
{
	return stats.cache_metadata_entries;
}

static bool fresh_now(uint32_t id)
{
	nfs_fh3 f = fh(id);
	fattr3 out;

	return meta_attrs_get(&f, &out);
}

static void record(uint32_t id, fattr3 a)
{
	nfs_fh3 f = fh(id);

	meta_attrs_record(&f, &a, meta_seq());
}

static wcc_data wcc_of(const fattr3 *before, const fattr3 *after)
{
	wcc_data w;

	memset(&w, 0, sizeof(w));
	if (before) {
		w.before.attributes_follow = 1;
		w.before.pre_op_attr_u.attributes.size = before->size;
		w.before.pre_op_attr_u.attributes.mtime = before->mtime;
		w.before.pre_op_attr_u.attributes.ctime = before->ctime;
	}
	if (after) {
		w.after.attributes_follow = 1;
		w.after.post_op_attr_u.attributes = *after;
	}
	return w;
}

static void add_name(uint32_t dir, const char *name, uint32_t child, const fattr3 *ca)
{
	nfs_fh3 d = fh(dir), c = fh(child);

	meta_name_add(&d, name, &c, ca, meta_seq());
}

static enum meta_lookup lookup(uint32_t dir, const char *name, uint32_t *child_id)
{
	nfs_fh3 d = fh(dir), c;
	fattr3 ca, da;
	enum meta_lookup r = meta_lookup(&d, name, &c, &ca, &da);

	if (r == META_LOOKUP_FOUND && child_id)
		memcpy(child_id, c.data.data_val, sizeof(*child_id));
	return r;
}

/* ------------------------------------------------------------------ */

static void test_ttl(void)
{
	restart();
	double t0 = test_now;

	/* file, 100 s old: 10 s */
	record(1, file_attrs(1, (uint32_t)t0 - 100));
	nfs_fh3 f = fh(1);
	is_int(node_find(&f)->ttl * 1000, 10000, "file modified 100 s ago: TTL 10 s");
	test_now = t0 + 9.9;
	ok(fresh_now(1), "fresh at 9.9 s");
	test_now = t0 + 10;
	ok(!fresh_now(1), "not fresh at 10 s (strict)");

	/* file just modified: acregmin; long ago: acregmax */
	test_now = t0;
	record(2, file_attrs(2, (uint32_t)t0));
	record(3, file_attrs(3, (uint32_t)t0 - 100000));
	record(4, file_attrs(4, (uint32_t)t0 + 500));  /* mtime in the future */
	f = fh(2);
	is_int(node_find(&f)->ttl, 3, "file modified now: acregmin 3 s");
	f = fh(3);
	is_int(node_find(&f)->ttl, 60, "file modified long ago: acregmax 60 s");
	f = fh(4);
	is_int(node_find(&f)->ttl, 3, "mtime in the future: acregmin");
	test_now = t0 + 2.999;
	ok(fresh_now(2) && fresh_now(3), "both fresh at 2.999 s");
	test_now = t0 + 3;
	ok(!fresh_now(2) && fresh_now(3), "acregmin one expired at 3 s");
	test_now = t0 + 60;
	ok(!fresh_now(3), "acregmax one expired at 60 s");

	/* directories: acdirmin 30, acdirmax 60 */
	test_now = t0;
	record(5, dir_attrs(5, (uint32_t)t0));
	record(6, dir_attrs(6, (uint32_t)t0 - 450));
	record(7, dir_attrs(7, (uint32_t)t0 - 100000));
	f = fh(5);
	is_int(node_find(&f)->ttl, 30, "directory modified now: acdirmin 30 s");
	f = fh(6);
	is_int(node_find(&f)->ttl, 45, "directory modified 450 s ago: 45 s");
	f = fh(7);
	is_int(node_find(&f)->ttl, 60, "directory modified long ago: acdirmax 60 s");
	test_now = t0 + 44.9;
	ok(fresh_now(6), "45 s directory fresh at 44.9 s");
	test_now = t0 + 45;
	ok(!fresh_now(6), "and not at 45 s");

	/* a TTL of 0 trusts nothing */
	test_now = t0;
	cfg.acregmin = cfg.acregmax = 0;
	record(8, file_attrs(8, T0));
	ok(!fresh_now(8), "acregmin = acregmax = 0: never fresh");

	/* expiry */
	config_default();
	record(9, file_attrs(9, T0));
	ok(fresh_now(9), "recorded: fresh");
	f = fh(9);
	meta_attrs_expire(&f);
	ok(!fresh_now(9), "meta_attrs_expire: not fresh");
	is_int(stats.cache_metadata_entries, 9, "gauge: 9 nodes");
}

static void test_seq(void)
{
	restart();
	fattr3 a = file_attrs(1, T0), b = file_attrs(1, T0 + 5), out;
	nfs_fh3 f = fh(1);

	b.size = 200;
	uint64_t s0 = meta_seq();
	meta_attrs_record(&f, &a, s0);
	ok(meta_attrs_get(&f, &out) && out.size == 100, "recorded");
	wcc_data w = wcc_of(&a, &b);
	meta_changed(&f, &w);
	ok(meta_seq() == s0 + 1, "meta_changed bumps the sequence");
	ok(meta_attrs_get(&f, &out) && out.size == 200, "post-op attributes recorded");
	meta_attrs_record(&f, &a, s0);
	ok(meta_attrs_get(&f, &out) && out.size == 200, "a reply sent before the change is stale: ignored");
	meta_attrs_record(&f, &a, meta_seq());
	ok(meta_attrs_get(&f, &out) && out.size == 100, "one sent after it is recorded");

	/* no post-op: expired */
	w = wcc_of(&a, NULL);
	meta_changed(&f, &w);
	ok(!meta_attrs_get(&f, &out), "change without post-op attributes: expired");
	meta_changed(&f, NULL);
	ok(!meta_attrs_get(&f, &out), "failed change (no wcc): expired");

	/* a change to an uncached handle: a node that makes older replies stale */
	nfs_fh3 g = fh(2);
	uint64_t s1 = meta_seq();
	meta_changed(&g, NULL);
	fattr3 c = file_attrs(2, T0);
	meta_attrs_record(&g, &c, s1);
	ok(!meta_attrs_get(&g, &out), "uncached handle changed: an older reply is still stale");
	meta_attrs_record(&g, &c, meta_seq());
	ok(meta_attrs_get(&g, &out), "a newer one recorded");

	/* names and readlink honour the directory's / node's generation */
	fattr3 d = dir_attrs(10, T0);
	record(10, d);
	uint64_t s2 = meta_seq();
	nfs_fh3 df = fh(10);
	w = wcc_of(&d, &d);
	meta_changed(&df, &w);
	nfs_fh3 cf = fh(11);
	meta_name_add(&df, "x", &cf, NULL, s2);
	meta_name_negative(&df, "y", s2);
	ok(lookup(10, "x", NULL) == META_LOOKUP_MISS && lookup(10, "y", NULL) == META_LOOKUP_MISS,
	   "stale name records ignored");
	fattr3 l = file_attrs(12, T0);
	l.type = NF3LNK;
	record(12, l);
	nfs_fh3 lf = fh(12);
	uint64_t s3 = meta_seq();
	w = wcc_of(&l, &l);
	meta_changed(&lf, &w);
	meta_readlink_record(&lf, "stale", s3);
	ok(meta_readlink(&lf, NULL) == NULL, "stale READLINK ignored");
	meta_readlink_record(&lf, "target", meta_seq());
	fattr3 la;
	const char *t = meta_readlink(&lf, &la);
	ok(t && strcmp(t, "target") == 0 && la.fileid == 12, "READLINK recorded and answered");
	/* as long as a Linux client makes them (PATH_MAX - 1) */
	char long_target[4096];
	memset(long_target, 'l', sizeof(long_target) - 1);
	long_target[sizeof(long_target) - 1] = '\0';
	meta_readlink_record(&lf, long_target, meta_seq());
	t = meta_readlink(&lf, NULL);
	ok(t && strcmp(t, long_target) == 0, "a 4095-byte target recorded and answered");
}

static void test_names(void)
{
	restart();
	fattr3 d = dir_attrs(1, T0), c = file_attrs(2, T0);
	uint32_t id = 0;
	nfs_fh3 df = fh(1);

	add_name(1, "a", 2, &c);
	ok(lookup(1, "a", NULL) == META_LOOKUP_MISS, "name not recorded while the directory's attributes are unknown");
	record(1, d);
	add_name(1, "a", 2, &c);
	ok(lookup(1, "a", &id) == META_LOOKUP_FOUND && id == 2, "LOOKUP found");
	is_int(entries(), 3, "entries: directory, child, name");
	meta_name_negative(&df, "nope", meta_seq());
	ok(lookup(1, "nope", NULL) == META_LOOKUP_NOENT, "negative entry: NOENT");
	add_name(1, "nope", 3, NULL);
	ok(lookup(1, "nope", NULL) == META_LOOKUP_MISS, "replaced by a name whose child attributes are unknown: miss");
	record(3, file_attrs(3, T0));
	ok(lookup(1, "nope", &id) == META_LOOKUP_FOUND && id == 3, "child attributes known: found");
	nfs_fh3 h;
	ok(meta_name_handle(&df, "a", &h) && h.data.data_len == FH_LEN, "meta_name_handle");
	ok(lookup(1, "..", NULL) == META_LOOKUP_MISS && lookup(1, ".", NULL) == META_LOOKUP_MISS,
	   ". and .. never answered");

	/* the child's attributes expire: miss; the directory's: miss */
	test_now += 59;
	ok(lookup(1, "a", NULL) == META_LOOKUP_FOUND, "at 59 s: found");
	test_now += 1;
	ok(lookup(1, "a", NULL) == META_LOOKUP_MISS, "at 60 s: directory stale, miss");
	ok(meta_name_handle(&df, "a", &h), "meta_name_handle whatever the freshness");
	record(1, d);
	record(2, c);
	record(3, file_attrs(3, T0));
	ok(lookup(1, "a", NULL) == META_LOOKUP_FOUND, "same attributes confirmed again: the names stay");

	/* a change not ours in the directory's attributes */
	uint64_t inv = stats.cache_metadata_invalidations;
	fattr3 d2 = d;
	d2.mtime.nseconds = 1;
	record(1, d2);
	ok(lookup(1, "a", NULL) == META_LOOKUP_MISS && lookup(1, "nope", NULL) == META_LOOKUP_MISS,
	   "directory mtime changed: names dropped");
	is_int(stats.cache_metadata_invalidations, inv + 1, "one invalidation");
	is_int(entries(), 3, "entries: the three nodes");
	record(1, d2);
	is_int(stats.cache_metadata_invalidations, inv + 1, "same attributes again: nothing more");

	/* forget */
	add_name(1, "b", 2, NULL);
	ok(lookup(1, "b", NULL) == META_LOOKUP_FOUND, "b found");
	meta_name_forget(&df, "b");
	ok(lookup(1, "b", NULL) == META_LOOKUP_MISS, "b forgotten");
	is_int(entries(), 3, "entries back to 3");

	/* a change of ours: explained, names kept */
	add_name(1, "b", 2, NULL);
	fattr3 d3 = d2;
	d3.mtime.seconds++;
	d3.ctime.seconds++;
	wcc_data w = wcc_of(&d2, &d3);
	meta_changed(&df, &w);
	ok(lookup(1, "b", NULL) == META_LOOKUP_FOUND, "explained change: names kept");
	is_int(stats.cache_metadata_invalidations, inv + 1, "not counted");
	/* one not explained (pre-op differs): everything goes */
	fattr3 d4 = d3;
	d4.mtime.seconds += 5;
	w = wcc_of(&d2, &d4);
	meta_changed(&df, &w);
	ok(lookup(1, "b", NULL) == META_LOOKUP_MISS, "unexplained change: names dropped");
	is_int(stats.cache_metadata_invalidations, inv + 2, "counted");
	/* the child node survives the names */
	ok(fresh_now(2), "child node stays");
}

static struct rpc_cred cred_of(uint32_t uid, uint32_t gid, uint32_t ngids, const uint32_t *gids)
{
	struct rpc_cred c;

	memset(&c, 0, sizeof(c));
	c.flavor = RPC_AUTH_SYS;
	c.uid = uid;
	c.gid = gid;
	c.gids_len = ngids;
	if (ngids)
		memcpy(c.gids, gids, ngids * sizeof(uint32_t));
	return c;
}

static void test_access(void)
{
	restart();
	fattr3 a = file_attrs(1, T0);
	nfs_fh3 f = fh(1);
	uint32_t g1[] = { 10, 20 }, g2[] = { 20, 10 }, granted = 0;
	struct rpc_cred c1 = cred_of(1000, 100, 2, g1), c2 = cred_of(1001, 100, 2, g1);
	struct rpc_cred c3 = cred_of(1000, 100, 2, g2), c4 = cred_of(1000, 100, 1, g1);

	meta_access_record(&f, &c1, ACCESS3_READ, ACCESS3_READ, meta_seq());
	ok(!meta_access_get(&f, &c1, ACCESS3_READ, &granted), "attributes unknown: nothing recorded");
	record(1, a);
	meta_access_record(&f, &c1, ACCESS3_READ | ACCESS3_EXECUTE, ACCESS3_READ, meta_seq());
	ok(meta_access_get(&f, &c1, ACCESS3_READ, &granted) && granted == ACCESS3_READ, "READ granted");
	ok(meta_access_get(&f, &c1, ACCESS3_READ | ACCESS3_EXECUTE, &granted) && granted == ACCESS3_READ,
	   "READ|EXECUTE: READ of them");
	ok(!meta_access_get(&f, &c1, ACCESS3_READ | ACCESS3_MODIFY, &granted), "MODIFY never asked: miss");
	ok(!meta_access_get(&f, &c2, ACCESS3_READ, &granted), "another uid: miss");
	ok(!meta_access_get(&f, &c3, ACCESS3_READ, &granted), "the groups in another order: miss");
	ok(!meta_access_get(&f, &c4, ACCESS3_READ, &granted), "fewer groups: miss");
	meta_access_record(&f, &c1, ACCESS3_MODIFY, ACCESS3_MODIFY, meta_seq());
	ok(meta_access_get(&f, &c1, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXECUTE, &granted) &&
	   granted == (ACCESS3_READ | ACCESS3_MODIFY), "bits not asked keep what was known");
	meta_access_record(&f, &c1, ACCESS3_READ, 0, meta_seq());
	ok(meta_access_get(&f, &c1, ACCESS3_READ | ACCESS3_MODIFY, &granted) && granted == ACCESS3_MODIFY,
	   "READ now denied");
	meta_access_record(&f, &c2, ACCESS3_READ, 0, meta_seq());
	ok(meta_access_get(&f, &c2, ACCESS3_READ, &granted) && granted == 0, "the other uid's own result");

	/* a change of ours that keeps mode and owner (a WRITE) leaves an ACCESS
	 * reply sent before it right */
	uint64_t s = meta_seq();
	wcc_data w = wcc_of(&a, &a);
	meta_changed(&f, &w);
	meta_access_record(&f, &c3, ACCESS3_READ, ACCESS3_READ, s);
	ok(meta_access_get(&f, &c3, ACCESS3_READ, &granted) && granted == ACCESS3_READ,
	   "an ACCESS reply sent before a WRITE of ours is kept");
	ok(meta_access_get(&f, &c1, ACCESS3_MODIFY, &granted), "explained change keeps ACCESS results");

	/* a change of ours that changes the mode drops them, uncounted */
	struct rpc_cred c5 = cred_of(7, 7, 0, NULL);
	meta_access_record(&f, &c5, ACCESS3_READ, ACCESS3_READ, meta_seq());
	fattr3 am = a;
	am.mode = 0640;
	am.ctime.seconds++;
	uint64_t inv0 = stats.cache_metadata_invalidations;
	w = wcc_of(&a, &am);
	meta_changed(&f, &w);
	ok(!meta_access_get(&f, &c5, ACCESS3_READ, &granted) && !meta_access_get(&f, &c1, ACCESS3_MODIFY, &granted),
	   "our SETATTR of the mode: ACCESS results dropped");
	is_int(stats.cache_metadata_invalidations, inv0, "not counted as an invalidation");
	w = wcc_of(&am, &a);
	meta_changed(&f, &w);
	/* stale: sent before a change of the mode */
	fattr3 chmoded = a;
	chmoded.ctime.seconds += 2;
	chmoded.mode ^= 0044;
	s = meta_seq();
	w = wcc_of(&a, &chmoded);
	meta_changed(&f, &w);
	meta_access_record(&f, &c3, ACCESS3_READ, ACCESS3_READ, s);
	ok(!meta_access_get(&f, &c3, ACCESS3_READ, &granted), "stale ACCESS reply ignored");
	w = wcc_of(&chmoded, &a);
	meta_changed(&f, &w);   /* the mode back, for what follows */
	meta_access_record(&f, &c1, ACCESS3_MODIFY, ACCESS3_MODIFY, meta_seq());

	/* not fresh */
	test_now += 60;
	ok(!meta_access_get(&f, &c1, ACCESS3_MODIFY, &granted), "attributes not fresh: miss");
	record(1, a);
	ok(meta_access_get(&f, &c1, ACCESS3_MODIFY, &granted), "confirmed again: hit");

	/* a mode change drops them, counted */
	uint64_t inv = stats.cache_metadata_invalidations;
	fattr3 b = a;
	b.mode = 0600;
	record(1, b);
	ok(!meta_access_get(&f, &c1, ACCESS3_MODIFY, &granted), "mode changed: dropped");
	is_int(stats.cache_metadata_invalidations, inv + 1, "counted");
	b.uid = 5;
	record(1, b);
	is_int(stats.cache_metadata_invalidations, inv + 1, "none held: not counted");

	/* at most META_ACCESS_MAX credentials, the oldest replaced */
	for (uint32_t u = 0; u < META_ACCESS_MAX + 1; u++) {
		struct rpc_cred c = cred_of(u, u, 0, NULL);
		meta_access_record(&f, &c, ACCESS3_READ, ACCESS3_READ, meta_seq());
	}
	struct rpc_cred c0 = cred_of(0, 0, 0, NULL), cl = cred_of(META_ACCESS_MAX, META_ACCESS_MAX, 0, NULL);
	ok(!meta_access_get(&f, &c0, ACCESS3_READ, &granted), "the oldest credential replaced");
	ok(meta_access_get(&f, &cl, ACCESS3_READ, &granted), "the newest kept");
	nfs_fh3 g = fh(1);
	is_int(node_find(&g)->naccess, META_ACCESS_MAX, "8 slots");
}

/* A READDIRPLUS page of `n` entries named "name-<i>", first index `first`,
 * object ids 1000 + i, cookies 100 + i * 7. */
struct page {
	READDIRPLUS3resok ok;
	entryplus3 *e;
	char (*names)[32];
};

static void page_make(struct page *p, uint32_t dir, uint32_t first, uint32_t n, bool eof,
		      const char *verf)
{
	memset(p, 0, sizeof(*p));
	p->e = calloc(n ? n : 1, sizeof(*p->e));
	p->names = calloc(n ? n : 1, sizeof(*p->names));
	p->ok.dir_attributes.attributes_follow = 1;
	p->ok.dir_attributes.post_op_attr_u.attributes = dir_attrs(dir, T0);
	memcpy(p->ok.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	for (uint32_t j = 0; j < n; j++) {
		uint32_t i = first + j;
		/* names of varied lengths, to exercise the rounding */
		snprintf(p->names[j], sizeof(p->names[j]), "name-%u%.*s", i, (int)(i % 7), "xxxxxxx");
		p->e[j].fileid = 1000 + i;
		p->e[j].name = p->names[j];
		p->e[j].cookie = 100 + (uint64_t)i * 7;
		p->e[j].name_attributes.attributes_follow = 1;
		p->e[j].name_attributes.post_op_attr_u.attributes = file_attrs(1000 + i, T0);
		p->e[j].name_handle.handle_follows = 1;
		p->e[j].name_handle.post_op_fh3_u.handle = fh(1000 + i);
		p->e[j].nextentry = j + 1 < n ? &p->e[j + 1] : NULL;
	}
	p->ok.reply.entries = n ? p->e : NULL;
	p->ok.reply.eof = eof;
}

static void page_free(struct page *p)
{
	free(p->e);
	free(p->names);
}

static const char V1[NFS3_COOKIEVERFSIZE] = "verf-01", V2[NFS3_COOKIEVERFSIZE] = "verf-02";
static const char V0[NFS3_COOKIEVERFSIZE];

/* Feed `npages` pages of `per` entries of directory `dir`. */
static void listing_feed(uint32_t dir, uint32_t total, uint32_t per)
{
	uint64_t cookie = 0;

	for (uint32_t first = 0; first < total || (total == 0 && first == 0); first += per) {
		uint32_t n = total - first < per ? total - first : per;
		struct page p;
		page_make(&p, dir, first, n, first + n >= total, V1);
		nfs_fh3 d = fh(dir);
		meta_listing_plus(&d, cookie, cookie ? V1 : V0, &p.ok, meta_seq());
		cookie = n ? p.e[n - 1].cookie : cookie;
		page_free(&p);
		if (total == 0)
			break;
	}
}

static READDIRPLUS3args rdp_args(uint32_t dir, uint64_t cookie, const char *verf, uint32_t dircount,
				 uint32_t maxcount)
{
	READDIRPLUS3args a;

	memset(&a, 0, sizeof(a));
	a.dir = fh(dir);
	a.cookie = cookie;
	memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
	a.dircount = dircount;
	a.maxcount = maxcount;
	return a;
}

static uint32_t count_entries(const READDIRPLUS3res *r)
{
	uint32_t n = 0;

	for (const entryplus3 *e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry)
		n++;
	return n;
}

/* XDR bytes of `r` as libnfs encodes it. */
static uint32_t xdr_size_plus(READDIRPLUS3res *r)
{
	static char buf[1 << 20];
	ZDR z;

	zdrmem_create(&z, buf, sizeof(buf), ZDR_ENCODE);
	if (!zdr_READDIRPLUS3res(&z, r))
		return UINT32_MAX;
	uint32_t n = zdr_getpos(&z);
	zdr_destroy(&z);
	return n;
}

static uint32_t xdr_size_plain(READDIR3res *r)
{
	static char buf[1 << 20];
	ZDR z;

	zdrmem_create(&z, buf, sizeof(buf), ZDR_ENCODE);
	if (!zdr_READDIR3res(&z, r))
		return UINT32_MAX;
	uint32_t n = zdr_getpos(&z);
	zdr_destroy(&z);
	return n;
}

static void test_listing(void)
{
	restart();
	READDIRPLUS3args a;
	READDIRPLUS3res r;

	record(1, dir_attrs(1, T0));
	listing_feed(1, 120, 50);
	a = rdp_args(1, 0, V0, 1 << 20, 1 << 20);
	ok(meta_readdirplus(&a, &r) && r.status == NFS3_OK, "complete listing answers");
	is_int(count_entries(&r), 120, "all 120 entries in one reply");
	ok(r.READDIRPLUS3res_u.resok.reply.eof, "eof");
	ok(memcmp(r.READDIRPLUS3res_u.resok.cookieverf, V1, NFS3_COOKIEVERFSIZE) == 0, "the upstream's verifier");
	entryplus3 *e = r.READDIRPLUS3res_u.resok.reply.entries;
	ok(e[5].fileid == 1005 && strcmp(e[5].name, "name-5xxxxx") == 0 && e[5].cookie == 135 &&
	   e[5].name_attributes.attributes_follow && e[5].name_handle.handle_follows,
	   "an entry: fileid, name, cookie, attributes, handle");
	meta_readdirplus_free(&r);
	is_int(entries(), 1 + 120 + 120, "entries: directory, 120 names, 120 children");
	uint32_t id;
	ok(lookup(1, "name-77", &id) == META_LOOKUP_FOUND && id == 1077, "READDIRPLUS entries answer LOOKUP");

	/* a child not fresh: no attributes in its entry */
	nfs_fh3 c = fh(1010);
	meta_attrs_expire(&c);
	a = rdp_args(1, 0, V0, 1 << 20, 1 << 20);
	ok(meta_readdirplus(&a, &r), "answered");
	e = r.READDIRPLUS3res_u.resok.reply.entries;
	ok(!e[10].name_attributes.attributes_follow && e[10].name_handle.handle_follows,
	   "expired child: handle, no attributes");
	meta_readdirplus_free(&r);

	/* continuing from a cookie */
	a = rdp_args(1, 100 + 59 * 7, V1, 1 << 20, 1 << 20);
	ok(meta_readdirplus(&a, &r) && count_entries(&r) == 60 &&
	   r.READDIRPLUS3res_u.resok.reply.entries->fileid == 1060, "from entry 59's cookie: entries 60..119");
	meta_readdirplus_free(&r);
	a = rdp_args(1, 100 + 59 * 7, V2, 1 << 20, 1 << 20);
	ok(!meta_readdirplus(&a, &r), "another verifier: miss");
	a = rdp_args(1, 101, V1, 1 << 20, 1 << 20);
	ok(!meta_readdirplus(&a, &r), "a cookie not in the listing: miss");
	a = rdp_args(1, 100 + 119 * 7, V1, 1 << 20, 1 << 20);
	ok(meta_readdirplus(&a, &r) && r.status == NFS3_OK && count_entries(&r) == 0 &&
	   r.READDIRPLUS3res_u.resok.reply.eof, "from the last cookie: empty, eof");
	meta_readdirplus_free(&r);

	/* READDIR from a READDIRPLUS listing */
	READDIR3args ra;
	READDIR3res rr;
	memset(&ra, 0, sizeof(ra));
	ra.dir = fh(1);
	ra.count = 1 << 20;
	ok(meta_readdir(&ra, &rr) && rr.status == NFS3_OK && rr.READDIR3res_u.resok.reply.eof,
	   "READDIR from a READDIRPLUS listing");
	meta_readdir_free(&rr);

	/* building across pages: wrong cookie, wrong verifier */
	record(2, dir_attrs(2, T0));
	struct page p;
	nfs_fh3 d = fh(2);
	page_make(&p, 2, 0, 10, false, V1);
	meta_listing_plus(&d, 0, V0, &p.ok, meta_seq());
	page_free(&p);
	page_make(&p, 2, 10, 10, true, V1);
	meta_listing_plus(&d, 100 + 8 * 7, V1, &p.ok, meta_seq());   /* not the last cookie */
	page_free(&p);
	a = rdp_args(2, 0, V0, 1 << 20, 1 << 20);
	ok(!meta_readdirplus(&a, &r), "a page not continuing the listing drops it");
	page_make(&p, 2, 10, 10, true, V1);
	meta_listing_plus(&d, 100 + 9 * 7, V1, &p.ok, meta_seq());
	page_free(&p);
	ok(!meta_readdirplus(&a, &r), "and the next one finds nothing to continue");

	page_make(&p, 2, 0, 10, false, V1);
	meta_listing_plus(&d, 0, V0, &p.ok, meta_seq());
	page_free(&p);
	page_make(&p, 2, 10, 10, true, V2);
	meta_listing_plus(&d, 100 + 9 * 7, V2, &p.ok, meta_seq());
	page_free(&p);
	ok(!meta_readdirplus(&a, &r), "another verifier drops it");

	page_make(&p, 2, 0, 10, false, V1);
	meta_listing_plus(&d, 0, V0, &p.ok, meta_seq());
	page_free(&p);
	ok(!meta_readdirplus(&a, &r), "incomplete: miss");
	page_make(&p, 2, 10, 10, true, V1);
	meta_listing_plus(&d, 100 + 9 * 7, V1, &p.ok, meta_seq());
	page_free(&p);
	ok(meta_readdirplus(&a, &r) && count_entries(&r) == 20, "two pages: complete, 20 entries");
	meta_readdirplus_free(&r);

	/* a complete listing: a stray page leaves it, a READDIR pass too */
	page_make(&p, 2, 10, 10, true, V2);
	meta_listing_plus(&d, 12345, V2, &p.ok, meta_seq());
	page_free(&p);
	ok(meta_readdirplus(&a, &r) && count_entries(&r) == 20, "a page continuing nothing leaves a complete listing");
	meta_readdirplus_free(&r);
	{
		READDIR3resok pl;
		entry3 pe;
		memset(&pl, 0, sizeof(pl));
		memset(&pe, 0, sizeof(pe));
		pe.fileid = 1;
		pe.name = (char *)"other";
		pe.cookie = 5;
		pl.dir_attributes.attributes_follow = 1;
		pl.dir_attributes.post_op_attr_u.attributes = dir_attrs(2, T0);
		pl.reply.entries = &pe;
		pl.reply.eof = 1;
		meta_listing_plain(&d, 0, V0, &pl, meta_seq());
	}
	ok(meta_readdirplus(&a, &r) && count_entries(&r) == 20,
	   "a READDIR pass leaves a complete READDIRPLUS listing");
	meta_readdirplus_free(&r);

	/* a listed name forgotten: listing dropped */
	meta_name_forget(&d, "name-3xxx");
	ok(!meta_readdirplus(&a, &r), "a listed name forgotten: listing dropped");
	listing_feed(2, 20, 20);
	ok(meta_readdirplus(&a, &r), "rebuilt");
	meta_readdirplus_free(&r);
	meta_name_negative(&d, "name-4xxxx", meta_seq());
	ok(!meta_readdirplus(&a, &r), "a listed name made negative: listing dropped");

	listing_feed(2, 20, 20);
	ok(meta_readdirplus(&a, &r), "rebuilt");
	meta_readdirplus_free(&r);
	add_name(2, "name-6xxxxxx", 1006, NULL);
	ok(meta_readdirplus(&a, &r), "a listed name confirmed with the same handle: kept");
	meta_readdirplus_free(&r);
	add_name(2, "name-6xxxxxx", 7777, NULL);
	ok(!meta_readdirplus(&a, &r), "a listed name given another handle: listing dropped");

	/* an explained change keeps names, drops the listing */
	listing_feed(2, 20, 20);
	fattr3 da = dir_attrs(2, T0), db = da;
	db.mtime.seconds += 1;
	wcc_data w = wcc_of(&da, &db);
	uint64_t inv = stats.cache_metadata_invalidations;
	meta_changed(&d, &w);
	ok(!meta_readdirplus(&a, &r), "explained change: listing dropped");
	ok(lookup(2, "name-5xxxxx", NULL) == META_LOOKUP_FOUND, "names kept");
	is_int(stats.cache_metadata_invalidations, inv, "not counted");
	/* the directory's attributes differ from the page's: the caller's record drops all */
	record(2, da);
	ok(lookup(2, "name-5xxxxx", NULL) == META_LOOKUP_MISS, "directory attributes changed: names gone");

	/* a stale page is ignored */
	uint64_t s = meta_seq();
	w = wcc_of(&da, &da);
	meta_changed(&d, &w);
	page_make(&p, 2, 0, 5, true, V1);
	meta_listing_plus(&d, 0, V0, &p.ok, s);
	page_free(&p);
	ok(!meta_readdirplus(&a, &r), "stale page ignored");

	/* a page without directory attributes drops what is being built */
	page_make(&p, 2, 0, 5, false, V1);
	meta_listing_plus(&d, 0, V0, &p.ok, meta_seq());
	page_free(&p);
	page_make(&p, 2, 5, 5, true, V1);
	p.ok.dir_attributes.attributes_follow = 0;
	meta_listing_plus(&d, 100 + 4 * 7, V1, &p.ok, meta_seq());
	page_free(&p);
	ok(!meta_readdirplus(&a, &r), "page without directory attributes: dropped");

	/* plain READDIR listing: answers READDIR only, its names not LOOKUP */
	record(3, dir_attrs(3, T0));
	nfs_fh3 d3 = fh(3);
	READDIR3resok pl;
	entry3 pe[3];
	memset(&pl, 0, sizeof(pl));
	memset(pe, 0, sizeof(pe));
	const char *pn[3] = { ".", "..", "file" };
	for (int i = 0; i < 3; i++) {
		pe[i].fileid = 50 + i;
		pe[i].name = (char *)pn[i];
		pe[i].cookie = 10 + i;
		pe[i].nextentry = i < 2 ? &pe[i + 1] : NULL;
	}
	pl.dir_attributes.attributes_follow = 1;
	pl.dir_attributes.post_op_attr_u.attributes = dir_attrs(3, T0);
	memcpy(pl.cookieverf, V2, NFS3_COOKIEVERFSIZE);
	pl.reply.entries = pe;
	pl.reply.eof = 1;
	meta_listing_plain(&d3, 0, V0, &pl, meta_seq());
	ra.dir = d3;
	ok(meta_readdir(&ra, &rr) && rr.status == NFS3_OK, "plain listing answers READDIR");
	entry3 *re = rr.READDIR3res_u.resok.reply.entries;
	ok(re && strcmp(re->name, ".") == 0 && re->nextentry && strcmp(re->nextentry->nextentry->name, "file") == 0 &&
	   re->nextentry->nextentry->cookie == 12 && !re->nextentry->nextentry->nextentry,
	   "its three entries in order");
	is_int(xdr_size_plain(&rr), DIRLIST_FIXED_XDR + 3 * 24 + 4 + 4 + 4, "READDIR reply size as libnfs encodes it");
	meta_readdir_free(&rr);
	a = rdp_args(3, 0, V0, 1 << 20, 1 << 20);
	ok(!meta_readdirplus(&a, &r), "but not READDIRPLUS");
	ok(lookup(3, "file", NULL) == META_LOOKUP_MISS, "nor LOOKUP");
	/* LOOKUPs after a READDIR fill the handles in without dropping the listing */
	fattr3 fa = file_attrs(52, T0);
	add_name(3, "file", 52, &fa);
	uint32_t fid = 0;
	ok(lookup(3, "file", &fid) == META_LOOKUP_FOUND && fid == 52, "a LOOKUP after READDIR: found");
	ok(meta_readdir(&ra, &rr) && rr.status == NFS3_OK, "and the listing stays");
	meta_readdir_free(&rr);
	uint8_t big[40];
	memset(big, 0x3c, sizeof(big));
	nfs_fh3 bf = { { sizeof(big), (char *)big } };
	meta_name_add(&d3, "..", &bf, NULL, meta_seq());
	struct meta_name *dd = name_find(node_find(&d3), "..");
	ok(dd && dd->fh_len == 40 && dd->listed && memcmp(dd->data, big, 40) == 0,
	   "a handle longer than the room kept for it: record moved, still listed");
	ok(meta_readdir(&ra, &rr) && rr.status == NFS3_OK &&
	   strcmp(rr.READDIR3res_u.resok.reply.entries->nextentry->name, "..") == 0, "listing intact");
	meta_readdir_free(&rr);
	ra.count = DIRLIST_FIXED_XDR + 24 + 4 - 1;
	ok(meta_readdir(&ra, &rr) && rr.status == NFS3ERR_TOOSMALL &&
	   rr.READDIR3res_u.resfail.dir_attributes.attributes_follow, "READDIR count too small: TOOSMALL");
	meta_readdir_free(&rr);
	ra.count = DIRLIST_FIXED_XDR + 24 + 4;
	ok(meta_readdir(&ra, &rr) && rr.status == NFS3_OK && rr.READDIR3res_u.resok.reply.entries &&
	   !rr.READDIR3res_u.resok.reply.entries->nextentry && !rr.READDIR3res_u.resok.reply.eof &&
	   xdr_size_plain(&rr) == ra.count, "exactly one entry fits: its size is count");
	meta_readdir_free(&rr);

	/* directory not fresh */
	test_now += 60;
	a = rdp_args(1, 0, V0, 1 << 20, 1 << 20);
	ok(!meta_readdirplus(&a, &r), "directory not fresh: miss");
}

static void test_sizes(void)
{
	restart();
	READDIRPLUS3args a;
	READDIRPLUS3res r;
	const uint32_t total = 300;

	record(1, dir_attrs(1, T0));
	listing_feed(1, total, 64);
	/* a few children not fresh and one without a handle, for variety */
	for (uint32_t i = 0; i < total; i += 17) {
		nfs_fh3 c = fh(1000 + i);
		meta_attrs_expire(&c);
	}
	srandom(7);
	int bad_size = 0, bad_dir = 0, bad_names = 0, pages = 0, toosmall = 0;
	for (int round = 0; round < 300; round++) {
		uint32_t dircount = 64 + (uint32_t)(random() % 8192);
		uint32_t maxcount = 256 + (uint32_t)(random() % 32768);
		uint8_t seen[300] = { 0 };
		uint64_t cookie = 0;
		char verf[NFS3_COOKIEVERFSIZE] = { 0 };
		for (int step = 0; step < 1000; step++) {
			a = rdp_args(1, cookie, verf, dircount, maxcount);
			if (!meta_readdirplus(&a, &r)) {
				bad_names++;
				break;
			}
			if (r.status != NFS3_OK) {
				toosmall++;
				break;
			}
			pages++;
			uint32_t size = xdr_size_plus(&r), dir = 0;
			if (size > maxcount)
				bad_size++;
			for (entryplus3 *e = r.READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) {
				dir += 8 + 4 + round4((uint32_t)strlen(e->name)) + 8 + 4;
				seen[e->fileid - 1000]++;
				cookie = e->cookie;
			}
			if (dir > dircount)
				bad_dir++;
			memcpy(verf, r.READDIRPLUS3res_u.resok.cookieverf, NFS3_COOKIEVERFSIZE);
			bool eof = r.READDIRPLUS3res_u.resok.reply.eof;
			meta_readdirplus_free(&r);
			if (eof)
				break;
		}
		for (uint32_t i = 0; i < total; i++)
			if (seen[i] != 1)
				bad_names++;
	}
	diag("%d pages over 300 random (dircount, maxcount)", pages);
	is_int(bad_size, 0, "every reply within maxcount (libnfs's XDR size)");
	is_int(bad_dir, 0, "every reply within dircount");
	is_int(bad_names, 0, "paging with the returned cookies: every name exactly once");
	is_int(toosmall, 0, "no TOOSMALL at these sizes");

	/* READDIR from the same listing */
	bad_size = bad_names = toosmall = 0;
	for (int round = 0; round < 300; round++) {
		READDIR3args ra;
		READDIR3res rr;
		uint8_t seen[300] = { 0 };
		memset(&ra, 0, sizeof(ra));
		ra.dir = fh(1);
		ra.count = 160 + (uint32_t)(random() % 8192);
		for (int step = 0; step < 1000; step++) {
			if (!meta_readdir(&ra, &rr)) {
				bad_names++;
				break;
			}
			if (rr.status != NFS3_OK) {
				toosmall++;
				break;
			}
			if (xdr_size_plain(&rr) > ra.count)
				bad_size++;
			for (entry3 *e = rr.READDIR3res_u.resok.reply.entries; e; e = e->nextentry) {
				seen[e->fileid - 1000]++;
				ra.cookie = e->cookie;
			}
			memcpy(ra.cookieverf, rr.READDIR3res_u.resok.cookieverf, NFS3_COOKIEVERFSIZE);
			bool eof = rr.READDIR3res_u.resok.reply.eof;
			meta_readdir_free(&rr);
			if (eof)
				break;
		}
		for (uint32_t i = 0; i < total; i++)
			if (seen[i] != 1)
				bad_names++;
	}
	is_int(bad_size, 0, "READDIR: every reply within count (libnfs's XDR size)");
	is_int(bad_names, 0, "READDIR: every name exactly once");
	is_int(toosmall, 0, "READDIR: no TOOSMALL");

	/* exactly one entry fits */
	a = rdp_args(1, 0, V0, 1 << 20, 1 << 20);
	ok(meta_readdirplus(&a, &r), "all at once");
	entryplus3 *e0 = r.READDIRPLUS3res_u.resok.reply.entries;
	uint32_t one = DIRLIST_FIXED_XDR + 4 + 8 + 4 + round4((uint32_t)strlen(e0->name)) + 8 +
		       4 + (e0->name_attributes.attributes_follow ? FATTR3_XDR : 0) + 4 + 4 + FH_LEN;
	meta_readdirplus_free(&r);
	a = rdp_args(1, 0, V0, 1 << 20, one);
	ok(meta_readdirplus(&a, &r) && r.status == NFS3_OK && count_entries(&r) == 1 &&
	   xdr_size_plus(&r) == one, "maxcount of one entry: one entry, exactly maxcount bytes");
	meta_readdirplus_free(&r);
	a = rdp_args(1, 0, V0, 1 << 20, one - 1);
	ok(meta_readdirplus(&a, &r) && r.status == NFS3ERR_TOOSMALL &&
	   r.READDIRPLUS3res_u.resfail.dir_attributes.attributes_follow, "one byte less: TOOSMALL with directory attributes");
	meta_readdirplus_free(&r);
	a = rdp_args(1, 0, V0, 8, 1 << 20);
	ok(meta_readdirplus(&a, &r) && r.status == NFS3_OK && count_entries(&r) == 1,
	   "dircount below one entry: that one entry (dircount is a hint; maxcount the bound)");
	meta_readdirplus_free(&r);
	a = rdp_args(1, 0, V0, 0, 1 << 20);
	ok(meta_readdirplus(&a, &r) && r.status == NFS3_OK && count_entries(&r) == 1,
	   "dircount 0: one entry, as ganesha gives");
	meta_readdirplus_free(&r);
}

static void test_eviction(void)
{
	restart();
	cfg.metadata_max = 100;
	for (uint32_t i = 1; i <= 300; i++)
		record(i, file_attrs(i, T0));
	is_int(entries(), 100, "entries at metadata_max");
	is_int(stats.cache_metadata_evictions, 200, "200 evicted");
	ok(!fresh_now(1) && fresh_now(300) && fresh_now(201), "the least recently used went");

	/* a query touches: node 201 survives the next 99 inserts */
	ok(fresh_now(201), "touch 201");
	for (uint32_t i = 301; i <= 399; i++)
		record(i, file_attrs(i, T0));
	ok(fresh_now(201) && !fresh_now(202), "touched entry kept, untouched one evicted");

	/* pinned */
	uint64_t ev;
	nfs_fh3 p = fh(250);
	ok(meta_getattr_begin(&p), "pin 250");
	for (uint32_t i = 400; i <= 700; i++)
		record(i, file_attrs(i, T0));
	ok(node_find(&p) != NULL, "pinned node not evicted");
	is_int(entries(), 100, "still 100 entries");
	meta_getattr_end(&p);
	for (uint32_t i = 701; i <= 800; i++)
		record(i, file_attrs(i, T0));
	ok(node_find(&p) == NULL, "unpinned: evicted");

	/* metadata_max lowered by a reload: the next record evicts down to it */
	cfg.metadata_max = 40;
	ev = stats.cache_metadata_evictions;
	nfs_fh3 q = fh(800);
	meta_attrs_expire(&q);   /* a record that inserts nothing */
	ok(entries() == 100, "nothing evicted before a record");
	record(800, file_attrs(800, T0));
	is_int(entries(), 40, "a record after metadata_max went down to 40: 40 entries");
	is_int(stats.cache_metadata_evictions - ev, 60, "60 evicted");

	/* a directory's names go with it, each counted */
	restart();
	cfg.metadata_max = 50;
	record(1, dir_attrs(1, T0));
	char name[16];
	for (uint32_t i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "n%u", i);
		add_name(1, name, 100 + i, NULL);
	}
	is_int(entries(), 11, "directory and 10 names");
	/* touch the names, leaving the directory least recently used */
	for (uint32_t i = 0; i < 10; i++) {
		nfs_fh3 d = fh(1);
		snprintf(name, sizeof(name), "n%u", i);
		touch(&name_find(node_find(&d), name)->e);
	}
	for (uint32_t i = 2; i <= 40; i++)
		record(i, file_attrs(i, T0));
	is_int(entries(), 50, "full");
	ev = stats.cache_metadata_evictions;
	record(41, file_attrs(41, T0));
	is_int(stats.cache_metadata_evictions - ev, 11, "the directory evicted with its 10 names: 11 counted");
	is_int(entries(), 40, "40 entries left");
	nfs_fh3 d = fh(1), h;
	ok(!meta_name_handle(&d, "n3", &h), "names gone");
	is_int(meta.nnames, 0, "no name left");

	/* a listed name evicted drops the listing */
	restart();
	cfg.metadata_max = 1000;
	record(1, dir_attrs(1, T0));
	listing_feed(1, 100, 100);
	READDIRPLUS3args a = rdp_args(1, 0, V0, 1 << 20, 1 << 20);
	READDIRPLUS3res r;
	ok(meta_readdirplus(&a, &r), "listing of 100");
	meta_readdirplus_free(&r);
	ok(fresh_now(1), "the directory touched: least recently used are the children, then the names");
	cfg.metadata_max = 101;
	record(5000, file_attrs(5000, T0));
	is_int(meta.nnames, 99, "100 children and one name evicted");
	ok(node_find(&d) && !node_find(&d)->listing && !meta_readdirplus(&a, &r),
	   "a listed name evicted: listing dropped, directory kept");
	/* a listing longer than metadata_max / 2 is not kept */
	restart();
	cfg.metadata_max = 150;
	record(1, dir_attrs(1, T0));
	listing_feed(1, 80, 40);
	a = rdp_args(1, 0, V0, 1 << 20, 1 << 20);
	ok(!meta_readdirplus(&a, &r), "listing over metadata_max / 2: dropped");
	ok(entries() <= 150, "entries within metadata_max");
}

static int woken[4];
static struct meta_waiter waiters[4];

static void wake_idx(struct meta_waiter *w)
{
	woken[w - waiters]++;
}

static int rejoin_result = -1;

static void wake_rejoin(struct meta_waiter *w)
{
	nfs_fh3 f = fh(1);

	woken[w - waiters]++;
	w->wake = wake_idx;
	rejoin_result = meta_getattr_join(&f, w);
}

static void test_getattr(void)
{
	restart();
	nfs_fh3 f = fh(1);

	memset(woken, 0, sizeof(woken));
	for (int i = 0; i < 4; i++)
		waiters[i].wake = wake_idx;
	ok(!meta_getattr_join(&f, &waiters[0]), "nothing in flight: join false");
	ok(meta_getattr_begin(&f), "begin creates the node");
	is_int(entries(), 1, "one entry");
	ok(!fresh_now(1), "without attributes");
	ok(meta_getattr_join(&f, &waiters[0]) && meta_getattr_join(&f, &waiters[1]), "two join");
	is_int(woken[0] + woken[1], 0, "nobody woken by join");
	record(1, file_attrs(1, T0));
	meta_getattr_end(&f);
	ok(woken[0] == 1 && woken[1] == 1, "end wakes each waiter once");
	ok(!meta_getattr_join(&f, &waiters[2]), "after end: join false");
	ok(fresh_now(1), "attributes recorded");

	/* two in flight: a waiter woken by the first end re-joins the second */
	memset(woken, 0, sizeof(woken));
	ok(meta_getattr_begin(&f) && meta_getattr_begin(&f), "two GETATTRs in flight");
	waiters[0].wake = wake_rejoin;
	ok(meta_getattr_join(&f, &waiters[0]), "join");
	meta_getattr_end(&f);
	ok(woken[0] == 1 && rejoin_result == 1, "woken once, re-joined the other GETATTR");
	meta_getattr_end(&f);
	is_int(woken[0], 2, "woken again by the second end");
	waiters[0].wake = wake_rejoin;
	ok(meta_getattr_begin(&f) && meta_getattr_join(&f, &waiters[0]), "again, one in flight");
	meta_getattr_end(&f);
	ok(woken[0] == 3 && rejoin_result == 0, "re-joining after the last end: false, no loop");

	/* a pinned node survives meta_clear, without attributes */
	ok(meta_getattr_begin(&f), "pinned");
	meta_getattr_join(&f, &waiters[1]);
	meta_clear();
	ok(node_find(&f) != NULL && !fresh_now(1), "meta_clear keeps the pinned node, without attributes");
	is_int(entries(), 1, "one entry");
	meta_getattr_end(&f);
	is_int(woken[1], 1, "its waiter woken");

	/* off */
	cfg.metadata = 0;
	ok(!meta_getattr_begin(&f), "off: begin false");
}

static void test_fs(void)
{
	restart();
	nfs_fh3 f = fh(1), g = fh(2);
	FSSTAT3resok st, sto;
	FSINFO3resok fi, fio;
	PATHCONF3resok pc, pco;
	double t0 = test_now;

	memset(&st, 0, sizeof(st));
	memset(&fi, 0, sizeof(fi));
	memset(&pc, 0, sizeof(pc));
	st.tbytes = 1000;
	fi.rtmax = 65536;
	pc.name_max = 255;
	meta_fsstat_record(&f, &st, meta_seq());
	ok(!meta_fsstat(&f, &sto), "attributes unknown: not recorded");
	record(1, dir_attrs(1, T0));
	record(2, file_attrs(2, (uint32_t)t0));    /* the same fsid; TTL 3 s */
	meta_fsstat_record(&f, &st, meta_seq());
	meta_fsinfo_record(&f, &fi, meta_seq());
	meta_pathconf_record(&f, &pc, meta_seq());
	ok(meta_fsstat(&g, &sto) && sto.tbytes == 1000 && sto.obj_attributes.attributes_follow &&
	   sto.obj_attributes.post_op_attr_u.attributes.fileid == 2,
	   "FSSTAT for another handle of the file system, with its attributes");
	ok(meta_fsinfo(&f, &fio) && fio.rtmax == 65536, "FSINFO");
	ok(meta_pathconf(&f, &pco) && pco.name_max == 255, "PATHCONF");
	test_now = t0 + 2.9;
	ok(meta_fsstat(&f, &sto), "FSSTAT at 2.9 s");
	test_now = t0 + 3;
	ok(!meta_fsstat(&f, &sto), "not at acregmin = 3 s");
	ok(meta_fsinfo(&f, &fio) && fio.obj_attributes.attributes_follow,
	   "FSINFO at 3 s, attributes fresh");
	test_now = t0 + 59.9;
	ok(!meta_fsinfo(&g, &fio),
	   "FSINFO at 59.9 s for a handle whose attributes are stale: asked upstream (it may be gone)");
	ok(meta_pathconf(&f, &pco), "PATHCONF at 59.9 s");
	test_now = t0 + 60;
	ok(!meta_fsinfo(&f, &fio) && !meta_pathconf(&f, &pco), "neither at acdirmax = 60 s");

	/* stale */
	test_now = t0 + 100;
	uint64_t s = meta_seq();
	fattr3 a = file_attrs(2, T0);
	wcc_data w = wcc_of(&a, &a);
	meta_changed(&g, &w);
	meta_fsinfo_record(&g, &fi, s);
	ok(!meta_fsinfo(&g, &fio), "stale FSINFO ignored");
}

static void test_mount(void)
{
	restart();
	nfs_fh3 root = fh(1);
	int flavors[2] = { 1, 0 };
	mountres3_ok m, out;
	double t0 = test_now;

	m.fhandle.fhandle3_len = root.data.data_len;
	m.fhandle.fhandle3_val = root.data.data_val;
	m.auth_flavors.auth_flavors_len = 2;
	m.auth_flavors.auth_flavors_val = flavors;
	meta_mnt_record("/export", &m);
	ok(!meta_mnt("/export", &out), "root attributes unknown: miss");
	record(1, dir_attrs(1, T0));
	ok(meta_mnt("/export", &out) && out.fhandle.fhandle3_len == FH_LEN &&
	   memcmp(out.fhandle.fhandle3_val, root.data.data_val, FH_LEN) == 0 &&
	   out.fhandle.fhandle3_val != root.data.data_val &&
	   out.auth_flavors.auth_flavors_len == 2 && out.auth_flavors.auth_flavors_val[0] == 1,
	   "MNT answered from a copy");
	ok(!meta_mnt("/other", &out), "another path: miss");
	meta_mnt_record("/export", &m);
	ok(meta_mnt("/export", &out), "re-recorded");
	test_now = t0 + 60;
	ok(!meta_mnt("/export", &out), "root not fresh: miss");

	/* EXPORT */
	test_now = t0;
	char dir1[] = "/a", dir2[] = "/b", g1[] = "host1", g2[] = "*";
	groupnode gn2 = { g2, NULL }, gn1 = { g1, &gn2 };
	exportnode e2 = { dir2, NULL, NULL }, e1 = { dir1, &gn1, &e2 };
	exports list;
	ok(!meta_export(&list), "no EXPORT yet");
	meta_export_record(&e1);
	ok(meta_export(&list) && list && list != &e1 && strcmp(list->ex_dir, "/a") == 0 &&
	   list->ex_dir != dir1 && strcmp(list->ex_groups->gr_name, "host1") == 0 &&
	   strcmp(list->ex_groups->gr_next->gr_name, "*") == 0 && !list->ex_groups->gr_next->gr_next &&
	   strcmp(list->ex_next->ex_dir, "/b") == 0 && !list->ex_next->ex_groups && !list->ex_next->ex_next,
	   "EXPORT list deep-copied");
	meta_export_record(&e2);
	ok(meta_export(&list) && list && strcmp(list->ex_dir, "/b") == 0 && !list->ex_next, "re-recorded");
	meta_export_record(NULL);
	ok(meta_export(&list) && list == NULL, "an empty list");
	test_now = t0 + 59.9;
	ok(meta_export(&list), "at 59.9 s");
	test_now = t0 + 60;
	ok(!meta_export(&list), "not at acdirmax = 60 s");
	meta_export_record(&e1);    /* left for meta_finalise to free */
}

static void test_clear_off(void)
{
	restart();
	record(1, dir_attrs(1, T0));
	add_name(1, "a", 2, NULL);
	record(2, file_attrs(2, T0));
	uint64_t inv = stats.cache_metadata_invalidations;
	meta_clear();
	is_int(entries(), 0, "meta_clear: no entry");
	is_int(stats.cache_metadata_invalidations, inv + 1, "one invalidation");
	ok(!fresh_now(1) && lookup(1, "a", NULL) == META_LOOKUP_MISS, "everything misses");
	is_int(meta_bytes(), (meta.nnode_buckets + meta.nname_buckets) * sizeof(void *),
	       "bytes: the hash tables only");

	/* off from the start */
	restart();
	cfg.metadata = 0;
	ok(!meta_on(), "metadata = no: off");
	record(1, dir_attrs(1, T0));
	is_int(entries(), 0, "records ignored");
	ok(!fresh_now(1), "queries miss");
	cfg.metadata = 1;
	cfg.metadata_max = 0;
	ok(!meta_on(), "metadata_max = 0: off");
	record(1, dir_attrs(1, T0));
	is_int(entries(), 0, "records ignored");

	/* turned off by a reload */
	cfg.metadata_max = 1000;
	record(1, dir_attrs(1, T0));
	add_name(1, "a", 2, NULL);
	record(2, file_attrs(2, T0));
	ok(fresh_now(1) && lookup(1, "a", NULL) == META_LOOKUP_FOUND, "on: hits");
	cfg.metadata = 0;
	ok(!fresh_now(1) && lookup(1, "a", NULL) == META_LOOKUP_MISS, "turned off: queries miss");
	record(3, file_attrs(3, T0));
	is_int(entries(), 0, "and the next record drops everything");
}

static void test_bytes(void)
{
	restart();
	const uint32_t n = 10000;
	char name[32];

	record(1, dir_attrs(1, T0));
	/* tables grown beforehand, so that the measure is of entries alone */
	while (meta.nnode_buckets < 4 * n)
		node_table_grow();
	while (meta.nname_buckets < 4 * n)
		name_table_grow();
	uint64_t b0 = meta_bytes();
	for (uint32_t i = 0; i < n; i++)
		record(2 + i, file_attrs(2 + i, T0));
	uint64_t b1 = meta_bytes();
	for (uint32_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "file-%05u.txt", i);   /* 14 bytes */
		add_name(1, name, 2 + i, NULL);
	}
	uint64_t b2 = meta_bytes();
	is_int(entries(), 1 + 2 * n, "entries: the directory, 10000 files, 10000 names");
	double node_b = (double)(b1 - b0) / n, name_b = (double)(b2 - b1) / n;
	diag("bytes per node (28-byte handle): %.1f; per name (14-byte name, 28-byte handle): %.1f",
	     node_b, name_b);
	diag("with hash buckets at load 1: node %.1f, name %.1f", node_b + sizeof(void *),
	     name_b + sizeof(void *));
	ok(node_b <= 320 && name_b <= 160, "a node at most 320 bytes, a name at most 160");
}

/* A name of unknown handle removed through us: every file known to have
 * more than one link stops being trusted; others stay. */
static void test_expire_linked(void)
{
	restart();
	fattr3 one = file_attrs(10, T0), two = file_attrs(11, T0), dir = dir_attrs(12, T0);
	two.nlink = 2;
	dir.nlink = 5;
	record(1, one);
	record(2, two);
	record(3, dir);
	meta_expire_linked();
	ok(fresh_now(1), "expire_linked: a file with one link stays fresh");
	ok(!fresh_now(2), "expire_linked: a file with two links is no longer trusted");
	ok(fresh_now(3), "expire_linked: a directory stays fresh");
	two.nlink = 1;
	record(2, two);
	meta_expire_linked();
	ok(fresh_now(2), "expire_linked: down to one link, it is off the list");
	restart();
	record(2, file_attrs(11, T0));
	meta_expire_linked();   /* after a restart: an empty list */
	ok(fresh_now(2), "expire_linked: nothing listed after a restart");
}

/* A reload lowering the ac* keys applies to what is cached already. */
static void test_reload_ttl(void)
{
	restart();
	record(1, file_attrs(1, T0));           /* old: trusted acregmax = 60 s */
	record(2, dir_attrs(2, T0));
	test_now += 10;
	ok(fresh_now(1) && fresh_now(2), "reload: fresh at 10 s under acregmax = acdirmax = 60");
	cfg.acregmin = cfg.acregmax = 5;         /* what conf_reload() writes in place */
	ok(!fresh_now(1), "reload: acregmax lowered to 5 s: the file's attributes at 10 s are stale");
	ok(fresh_now(2), "reload: the directory's (acdir*) stay fresh");
	cfg.acdirmin = cfg.acdirmax = 0;
	ok(!fresh_now(2), "reload: acdirmax 0: the directory's too");
}

int main(void)
{
	config_default();
	meta_init(NULL, &cfg);
	test_ttl();
	test_seq();
	test_names();
	test_access();
	test_listing();
	test_sizes();
	test_eviction();
	test_getattr();
	test_fs();
	test_mount();
	test_clear_off();
	test_bytes();
	test_expire_linked();
	test_reload_ttl();
	meta_finalise();
	is_int(stats.cache_metadata_entries, 0, "finalised: gauge 0");
	return done();
}
