/*
 * nfs_meta.c — the procedures the namespace cache (cache/meta.h) answers or
 * learns from: GETATTR, LOOKUP, ACCESS, READLINK, READDIR, READDIRPLUS,
 * FSSTAT, FSINFO, PATHCONF, NULL and MOUNT's NULL, MNT and EXPORT are
 * answered locally while what the upstream said is fresh, and forwarded
 * otherwise with their answer recorded (DESIGN.md "Namespace cache");
 * nfs_names.c keeps a directory's names right after the changes made
 * through nfscached.
 *
 * Permissions are the upstream's: a name is given from the cache only to a
 * credential the upstream granted ACCESS3_LOOKUP on the directory, a listing
 * only to one granted ACCESS3_READ, an ACCESS answer only from the caller's
 * own result.  When the answer is cached but the credential's grant is not,
 * one ACCESS of the directory goes upstream as the caller (asking every
 * bit, as the Linux client does) instead of the call itself.
 *
 * While a file has dirty data, every answer carries its local size and
 * times (cache_patch_attrs), as forwarded answers do.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/meta.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/macros.h"
#include "common/stats.h"
#include "common/xalloc.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfs_meta.h"
#include "daemon/nfsd.h"

/* What an ACCESS asks when nfscached asks on a caller's behalf: every bit,
 * so that the caller's own ACCESS calls hit afterwards too. */
#define ACCESS3_ALL (ACCESS3_READ | ACCESS3_LOOKUP | ACCESS3_MODIFY | ACCESS3_EXTEND | \
		     ACCESS3_DELETE | ACCESS3_EXECUTE)


struct nfsd_meta_op *nfsd_meta_op_of(struct nfsd_call *call)
{
	struct nfsd_call_state *hs = nfsd_call_state(call);

	if (!hs->meta) {
		hs->meta = xcalloc(1, sizeof(*hs->meta));
		hs->meta->call = call;
	}
	return hs->meta;
}

uint64_t nfsd_meta_mseq(struct nfsd_call *call)
{
	return nfsd_call_state(call)->mseq;
}

/* The client sees a dirty file's local size and times. */
static void patch(const nfs_fh3 *fh, fattr3 *a)
{
	struct cache_object *o = nfsd_cache_object(fh);

	if (o)
		cache_patch_attrs(o, a);
}

void nfsd_meta_record(const nfs_fh3 *fh, const post_op_attr *pa, uint64_t mseq)
{
	if (pa->attributes_follow)
		meta_attrs_record(fh, &pa->post_op_attr_u.attributes, mseq);
}

static void set_post_op(post_op_attr *pa, const nfs_fh3 *fh, const fattr3 *a)
{
	pa->attributes_follow = 1;
	pa->post_op_attr_u.attributes = *a;
	patch(fh, &pa->post_op_attr_u.attributes);
}

/* Set while meta_getattr_end() wakes the waiters of a GETATTR the upstream
 * did not answer in upstream.timeout_ms: they answer JUKEBOX at once rather
 * than wait a whole timeout again each. */
static bool getattr_timed_out;

void nfsd_meta_op_free(struct nfsd_meta_op *m)
{
	if (m->getattr_begun) {   /* no result came */
		nfs_fh3 fh = { .data = { m->fh_len, (char *)m->fh } };
		m->getattr_begun = false;
		getattr_timed_out = m->call->hstate && m->call->hstate->upstream_st == UPSTREAM_TIMEOUT;
		meta_getattr_end(&fh);
		getattr_timed_out = false;
	}
	free(m);
}

/* ---- our own ACCESS of a directory ------------------------------------ */

static void own_access_done(void *priv, enum upstream_status st, void *res)
{
	struct nfsd_meta_op *m = priv;
	const ACCESS3res *r = res;
	const nfs_fh3 *fh = &m->access.args.object;

	if (st == UPSTREAM_OK && r->status == NFS3_OK) {
		nfsd_meta_record(fh, &r->ACCESS3res_u.resok.obj_attributes, m->access_mseq);
		meta_access_record(fh, &m->call->cred, m->access.args.access,
				   r->ACCESS3res_u.resok.access, m->access_mseq);
	}
	m->retry(m->call);
}

/* The answer to `call` is cached but `cred`'s grant on `dir` is not: ask
 * it, then retry(call) once more (which forwards if still unknown). */
static void ask_access(struct nfsd_call *call, const nfs_fh3 *dir,
		       void (*retry)(struct nfsd_call *call))
{
	struct nfsd_meta_op *m = nfsd_meta_op_of(call);

	m->access_asked = true;
	m->retry = retry;
	m->access_mseq = meta_seq();
	nfsd_access_send(&m->access, dir, ACCESS3_ALL, &call->cred, own_access_done, m);
}

/* The credential's grant of `bit` on `dir`: 1 granted, 0 refused, -1 not
 * known (then ask_access(), unless asked already: then 0, forward). */
static int granted(struct nfsd_call *call, const nfs_fh3 *dir, uint32_t bit)
{
	uint32_t g;

	if (meta_access_get(dir, &call->cred, bit, &g))
		return (g & bit) != 0;
	return nfsd_meta_op_of(call)->access_asked ? 0 : -1;
}

/*
 * The upstream answered the caller's call on directory `dir`, so it granted
 * `bit`: a LOOKUP found or not (NFS3ERR_NOENT) was allowed to search it, a
 * READDIR(PLUS) to read it — knfsd's nfsd_lookup() and nfsd_readdir()
 * check MAY_EXEC and MAY_READ before answering either, as nfs_read.c takes
 * a READ answered as read access.  Recorded as that credential's result
 * for that bit only, with the call's sequence, after the attributes the
 * answer carried.
 */
static void granted_by_answer(struct nfsd_call *call, const nfs_fh3 *dir, uint32_t bit)
{
	meta_access_record(dir, &call->cred, bit, bit, nfsd_meta_mseq(call));
}

/* ---- one GETATTR renews a directory's listing --------------------------- */

static void dir_getattr_done(void *priv, enum upstream_status st, void *res)
{
	struct nfsd_meta_op *m = priv;
	const GETATTR3res *r = res;
	nfs_fh3 fh = { .data = { m->fh_len, (char *)m->fh } };

	if (st == UPSTREAM_OK && r->status == NFS3_OK)
		meta_attrs_record(&fh, &r->GETATTR3res_u.resok.obj_attributes, m->getattr_mseq);
	if (m->getattr_begun) {
		m->getattr_begun = false;
		meta_getattr_end(&fh);
	}
	m->retry(m->call);
}

static void dir_wake(struct meta_waiter *w)
{
	struct nfsd_meta_op *m = container_of(w, struct nfsd_meta_op, waiter);

	m->retry(m->call);
}

/* `dir` holds a complete listing but its attributes are past their TTL:
 * one GETATTR (or the one in flight) as the caller, then retry(call) —
 * unchanged attributes make the listing answer again (Linux
 * nfs_revalidate_mapping before readdir), changed ones drop it. */
static void revalidate_dir(struct nfsd_call *call, const nfs_fh3 *dir,
			   void (*retry)(struct nfsd_call *call))
{
	struct nfsd_meta_op *m = nfsd_meta_op_of(call);

	m->revalidated = true;
	m->retry = retry;
	m->waiter.wake = dir_wake;
	if (meta_getattr_join(dir, &m->waiter))
		return;
	m->fh_len = dir->data.data_len;
	memcpy(m->fh, dir->data.data_val, m->fh_len);
	m->getattr_begun = meta_getattr_begin(dir);
	memset(&m->getattr, 0, sizeof(m->getattr));
	m->getattr.object.data.data_len = m->fh_len;
	m->getattr.object.data.data_val = (char *)m->fh;
	m->getattr_mseq = meta_seq();
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_GETATTR), &m->getattr, &call->cred,
		      dir_getattr_done, m);
}

/* ---- NULL --------------------------------------------------------------- */

/* NULL is our own ping (a new client's mount costs no round trip) — unless
 * every ac* key is 0, which restores forwarding every call. */
void nfsd_proc_null(struct nfsd_call *call)
{
	const struct cache_config *c = &nfsd.cfg.cache;

	if (meta_on() && (c->acregmin || c->acregmax || c->acdirmin || c->acdirmax))
		call_reply(call, NULL);   /* our own ping: no round trip */
	else
		nfsd_forward_with(call, NULL);
}

/* ---- GETATTR (RFC 1813 §3.3.1) ------------------------------------------ */

static void getattr_fixup(struct nfsd_call *call, void *res)
{
	GETATTR3res *r = res;
	GETATTR3args *a = call->args;
	struct nfsd_meta_op *m = nfsd_call_state(call)->meta;

	if (r->status == NFS3_OK)
		meta_attrs_record(&a->object, &r->GETATTR3res_u.resok.obj_attributes, nfsd_meta_mseq(call));
	nfsd_attrs_snoop(call, res);
	if (m && m->getattr_begun) {
		m->getattr_begun = false;
		meta_getattr_end(&a->object);   /* the waiters answer from what came */
	}
}

static void getattr_try(struct nfsd_call *call);

static void getattr_wake(struct meta_waiter *w)
{
	struct nfsd_call *call = container_of(w, struct nfsd_meta_op, waiter)->call;

	if (getattr_timed_out)
		call_reply_jukebox(call);   /* the upstream did not answer the one we waited for */
	else
		getattr_try(call);
}

static void getattr_try(struct nfsd_call *call)
{
	GETATTR3args *a = call->args;
	GETATTR3res res;

	if (!meta_on()) {
		nfsd_forward_with(call, getattr_fixup);
		return;
	}
	memset(&res, 0, sizeof(res));
	if (meta_attrs_get(&a->object, &res.GETATTR3res_u.resok.obj_attributes)) {
		stats.cache_attr_hits++;
		res.status = NFS3_OK;
		patch(&a->object, &res.GETATTR3res_u.resok.obj_attributes);
		call_reply(call, &res);
		return;
	}
	struct nfsd_meta_op *m = nfsd_meta_op_of(call);
	if (!m->joined) {
		/* one GETATTR per object at a time: the others wait for it */
		m->joined = true;
		m->waiter.wake = getattr_wake;
		if (meta_getattr_join(&a->object, &m->waiter))
			return;
		if (meta_getattr_begin(&a->object)) {
			m->getattr_begun = true;
			m->fh_len = a->object.data.data_len;
			memcpy(m->fh, a->object.data.data_val, m->fh_len);
		}
	}
	stats.cache_attr_misses++;
	nfsd_forward_with(call, getattr_fixup);
}

void nfsd_proc_getattr(struct nfsd_call *call)
{
	getattr_try(call);
}

/* ---- LOOKUP (§3.3.3) ------------------------------------------------------ */

static void prefetch_consider(struct nfsd_call *call, const nfs_fh3 *dir, const post_op_attr *da);

static void lookup_fixup(struct nfsd_call *call, void *res)
{
	LOOKUP3res *r = res;
	LOOKUP3args *a = call->args;
	uint64_t mseq = nfsd_meta_mseq(call);

	if (r->status == NFS3_OK) {
		LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
		nfsd_meta_record(&a->what.dir, &ok->dir_attributes, mseq);
		granted_by_answer(call, &a->what.dir, ACCESS3_LOOKUP);
		meta_name_add(&a->what.dir, a->what.name, &ok->object,
			      ok->obj_attributes.attributes_follow ?
			      &ok->obj_attributes.post_op_attr_u.attributes : NULL, mseq);
	} else {
		nfsd_meta_record(&a->what.dir, &r->LOOKUP3res_u.resfail.dir_attributes, mseq);
		if (r->status == NFS3ERR_NOENT) {
			granted_by_answer(call, &a->what.dir, ACCESS3_LOOKUP);
			meta_name_negative(&a->what.dir, a->what.name, mseq);
		}
	}
	if (r->status == NFS3_OK || r->status == NFS3ERR_NOENT)
		prefetch_consider(call, &a->what.dir, r->status == NFS3_OK ?
				  &r->LOOKUP3res_u.resok.dir_attributes :
				  &r->LOOKUP3res_u.resfail.dir_attributes);
	nfsd_attrs_snoop(call, res);
}

/* ---- reading a directory whose names are looked up one by one --------- */

/*
 * A client that looks names up one by one in a directory it never listed
 * (open() or stat() of many files: a build, `git status`, an import path)
 * would cost one round trip per name.  After PREFETCH_AFTER forwarded
 * LOOKUPs in one directory within its TTL, nfscached reads the
 * directory's listing itself, as the caller, with READDIRPLUS (the names,
 * handles and attributes answer the LOOKUPs and GETATTRs that follow),
 * unless the directory is larger than PREFETCH_DIR_MAX bytes or than a
 * quarter of cache.metadata_max can hold, or its listing is cached
 * already.  One pass per directory at a time, none again within
 * acdirmin of the last.
 */
#define PREFETCH_SLOTS 64                   /* directories tracked (direct-mapped) */
#define PREFETCH_AFTER 2                    /* forwarded LOOKUPs before reading */
#define PREFETCH_DIR_MAX (1024 * 1024)      /* bytes: the directory's size attribute */
#define PREFETCH_PAGES 64                   /* READDIRPLUS pages of one pass at most */
#define PREFETCH_DIRCOUNT 16384u            /* bytes of names per page */
#define PREFETCH_MAXCOUNT 65536u            /* bytes per page (at most max_payload) */

struct prefetch_slot {
	uint8_t fh[NFS3_FHSIZE_MAX];
	uint32_t fh_len;                    /* 0: free */
	unsigned misses;                    /* forwarded LOOKUPs since `since` */
	ev_tstamp since;
	ev_tstamp done_at;                  /* the last pass ended (0: none) */
	bool busy;                          /* a pass is in flight */
};

struct prefetch {
	struct prefetch_slot *slot;
	struct rpc_cred cred;
	uint8_t fh[NFS3_FHSIZE_MAX];
	READDIRPLUS3args args;
	uint64_t mseq;                      /* meta_seq() when the page was asked */
	unsigned pages;
};

static struct prefetch_slot prefetch_slots[PREFETCH_SLOTS];

static struct prefetch_slot *prefetch_slot(const nfs_fh3 *dir)
{
	uint32_t h = hash_fnv1a32(HASH_FNV32_OFFSET, dir->data.data_val, dir->data.data_len);
	struct prefetch_slot *s = &prefetch_slots[h % PREFETCH_SLOTS];
	if (s->fh_len == dir->data.data_len && memcmp(s->fh, dir->data.data_val, s->fh_len) == 0)
		return s;
	if (s->busy)
		return NULL;   /* another directory's pass holds it */
	memset(s, 0, sizeof(*s));
	s->fh_len = dir->data.data_len;
	memcpy(s->fh, dir->data.data_val, s->fh_len);
	return s;
}

static void prefetch_send(struct prefetch *p);

static void prefetch_done(void *priv, enum upstream_status st, void *res)
{
	struct prefetch *p = priv;
	READDIRPLUS3res *r = res;
	bool more = false;

	if (st == UPSTREAM_OK && r->status == NFS3_OK && meta_on()) {
		READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
		nfsd_meta_record(&p->args.dir, &ok->dir_attributes, p->mseq);
		meta_access_record(&p->args.dir, &p->cred, ACCESS3_READ, ACCESS3_READ, p->mseq);
		meta_listing_plus(&p->args.dir, p->args.cookie, p->args.cookieverf, ok, p->mseq);
		const entryplus3 *last = NULL;
		for (const entryplus3 *e = ok->reply.entries; e; e = e->nextentry)
			last = e;
		if (!ok->reply.eof && last && ++p->pages < PREFETCH_PAGES) {
			p->args.cookie = last->cookie;
			memcpy(p->args.cookieverf, ok->cookieverf, NFS3_COOKIEVERFSIZE);
			more = true;
		}
	}
	if (more) {
		prefetch_send(p);
		return;
	}
	p->slot->busy = false;
	p->slot->done_at = ev_now(nfsd.loop);
	p->slot->misses = 0;
	free(p);
}

static void prefetch_send(struct prefetch *p)
{
	p->mseq = meta_seq();
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_READDIRPLUS), &p->args, &p->cred,
		      prefetch_done, p);
}

/* A LOOKUP in `dir` went upstream and was answered (found or NOENT) with
 * the directory's attributes `da` (NULL: none). */
static void prefetch_consider(struct nfsd_call *call, const nfs_fh3 *dir, const post_op_attr *da)
{
	const struct cache_config *c = &nfsd.cfg.cache;

	if (!meta_on() || !c->acdirmax || !da->attributes_follow ||
	    da->post_op_attr_u.attributes.type != NF3DIR ||
	    da->post_op_attr_u.attributes.size > PREFETCH_DIR_MAX ||
	    /* room: its entries (at most one per 8 bytes of directory, twice
	     * that with their nodes) within a quarter of the cache, so that
	     * reading it never evicts what its callers use */
	    (da->post_op_attr_u.attributes.size / 8 + 1) * 2 > c->metadata_max / 4 ||
	    dir->data.data_len < 1 || dir->data.data_len > NFS3_FHSIZE_MAX ||
	    meta_listing_held(dir, true))
		return;
	struct prefetch_slot *s = prefetch_slot(dir);
	ev_tstamp now = ev_now(nfsd.loop);
	if (!s || s->busy || (s->done_at && now - s->done_at < (double)c->acdirmin))
		return;
	if (now - s->since > (double)c->acdirmax) {
		s->misses = 0;
		s->since = now;
	}
	if (++s->misses < PREFETCH_AFTER)
		return;
	struct prefetch *p = xcalloc(1, sizeof(*p));
	p->slot = s;
	s->busy = true;
	p->cred = call->cred;
	memcpy(p->fh, dir->data.data_val, dir->data.data_len);
	p->args.dir.data.data_len = dir->data.data_len;
	p->args.dir.data.data_val = (char *)p->fh;
	p->args.maxcount = nfsd.max_payload < PREFETCH_MAXCOUNT ? nfsd.max_payload : PREFETCH_MAXCOUNT;
	p->args.dircount = PREFETCH_DIRCOUNT < p->args.maxcount ? PREFETCH_DIRCOUNT : p->args.maxcount;
	log_debug("meta: reading the listing of a directory looked up name by name");
	prefetch_send(p);
}

static void lookup_try(struct nfsd_call *call)
{
	LOOKUP3args *a = call->args;
	LOOKUP3res res;
	nfs_fh3 child;
	fattr3 child_attrs, dir_attrs;

	if (!meta_on()) {
		nfsd_forward_with(call, lookup_fixup);
		return;
	}
	enum meta_lookup found = meta_lookup(&a->what.dir, a->what.name, &child, &child_attrs,
					     &dir_attrs);
	if (found != META_LOOKUP_MISS) {
		int g = granted(call, &a->what.dir, ACCESS3_LOOKUP);
		if (g < 0) {
			ask_access(call, &a->what.dir, lookup_try);
			return;
		}
		if (g > 0) {
			memset(&res, 0, sizeof(res));
			if (found == META_LOOKUP_FOUND) {
				stats.cache_lookup_hits++;
				res.status = NFS3_OK;
				res.LOOKUP3res_u.resok.object = child;
				set_post_op(&res.LOOKUP3res_u.resok.obj_attributes, &child, &child_attrs);
				set_post_op(&res.LOOKUP3res_u.resok.dir_attributes, &a->what.dir, &dir_attrs);
			} else {
				stats.cache_lookup_negative_hits++;
				res.status = NFS3ERR_NOENT;
				set_post_op(&res.LOOKUP3res_u.resfail.dir_attributes, &a->what.dir,
					    &dir_attrs);
			}
			call_reply(call, &res);
			return;
		}
		/* refused: the upstream gives the error */
	}
	stats.cache_lookup_misses++;
	nfsd_forward_with(call, lookup_fixup);
}

void nfsd_proc_lookup(struct nfsd_call *call)
{
	lookup_try(call);
}

/* ---- ACCESS (§3.3.4) ------------------------------------------------------ */

static void access_fixup(struct nfsd_call *call, void *res)
{
	ACCESS3res *r = res;
	ACCESS3args *a = call->args;
	uint64_t mseq = nfsd_meta_mseq(call);

	if (r->status == NFS3_OK) {
		nfsd_meta_record(&a->object, &r->ACCESS3res_u.resok.obj_attributes, mseq);
		meta_access_record(&a->object, &call->cred, a->access, r->ACCESS3res_u.resok.access,
				   mseq);
	} else {
		nfsd_meta_record(&a->object, &r->ACCESS3res_u.resfail.obj_attributes, mseq);
	}
	nfsd_attrs_snoop(call, res);
}

void nfsd_proc_access(struct nfsd_call *call)
{
	ACCESS3args *a = call->args;
	ACCESS3res res;
	uint32_t g;
	fattr3 attrs;

	if (!meta_on()) {
		nfsd_forward_with(call, access_fixup);
		return;
	}
	if (meta_access_get(&a->object, &call->cred, a->access, &g) &&
	    meta_attrs_get(&a->object, &attrs)) {
		stats.cache_access_hits++;
		memset(&res, 0, sizeof(res));
		res.status = NFS3_OK;
		res.ACCESS3res_u.resok.access = g;
		set_post_op(&res.ACCESS3res_u.resok.obj_attributes, &a->object, &attrs);
		call_reply(call, &res);
		return;
	}
	stats.cache_access_misses++;
	nfsd_forward_with(call, access_fixup);
}

/* ---- READLINK (§3.3.5) ---------------------------------------------------- */

static void readlink_fixup(struct nfsd_call *call, void *res)
{
	READLINK3res *r = res;
	READLINK3args *a = call->args;
	uint64_t mseq = nfsd_meta_mseq(call);

	if (r->status == NFS3_OK) {
		nfsd_meta_record(&a->symlink, &r->READLINK3res_u.resok.symlink_attributes, mseq);
		meta_readlink_record(&a->symlink, r->READLINK3res_u.resok.data, mseq);
		if (r->READLINK3res_u.resok.symlink_attributes.attributes_follow)
			patch(&a->symlink, &r->READLINK3res_u.resok.symlink_attributes.post_op_attr_u.attributes);
	}
}

void nfsd_proc_readlink(struct nfsd_call *call)
{
	READLINK3args *a = call->args;
	READLINK3res res;
	fattr3 attrs;
	const char *target;

	if (meta_on() && (target = meta_readlink(&a->symlink, &attrs))) {
		stats.cache_readlink_hits++;
		memset(&res, 0, sizeof(res));
		res.status = NFS3_OK;
		set_post_op(&res.READLINK3res_u.resok.symlink_attributes, &a->symlink, &attrs);
		res.READLINK3res_u.resok.data = (char *)target;
		call_reply(call, &res);
		return;
	}
	nfsd_forward_with(call, readlink_fixup);
}

/* ---- READDIR (§3.3.16), READDIRPLUS (§3.3.17) ------------------------------ */

static void readdir_fixup(struct nfsd_call *call, void *res)
{
	uint64_t mseq = nfsd_meta_mseq(call);

	if (call->desc->proc == NFS3PROC_READDIR) {
		READDIR3res *r = res;
		READDIR3args *a = call->args;
		if (r->status == NFS3_OK) {
			READDIR3resok *ok = &r->READDIR3res_u.resok;
			nfsd_meta_record(&a->dir, &ok->dir_attributes, mseq);
			granted_by_answer(call, &a->dir, ACCESS3_READ);
			meta_listing_plain(&a->dir, a->cookie, a->cookieverf, ok, mseq);
		} else {
			nfsd_meta_record(&a->dir, &r->READDIR3res_u.resfail.dir_attributes, mseq);
		}
		return;
	}
	READDIRPLUS3res *r = res;
	READDIRPLUS3args *a = call->args;
	if (r->status == NFS3_OK) {
		READDIRPLUS3resok *ok = &r->READDIRPLUS3res_u.resok;
		nfsd_meta_record(&a->dir, &ok->dir_attributes, mseq);
		granted_by_answer(call, &a->dir, ACCESS3_READ);
		meta_listing_plus(&a->dir, a->cookie, a->cookieverf, ok, mseq);
	} else {
		nfsd_meta_record(&a->dir, &r->READDIRPLUS3res_u.resfail.dir_attributes, mseq);
	}
	nfsd_readdirplus_snoop(call, res);   /* the data cache's coherency; patches */
}

/* READDIRPLUS from the cache: dirty files show their local attributes. */
static void readdirplus_patch(READDIRPLUS3res *res)
{
	for (entryplus3 *e = res->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry)
		if (e->name_handle.handle_follows && e->name_attributes.attributes_follow)
			patch(&e->name_handle.post_op_fh3_u.handle,
			      &e->name_attributes.post_op_attr_u.attributes);
}

static void readdir_try(struct nfsd_call *call)
{
	if (!meta_on()) {
		nfsd_forward_with(call, readdir_fixup);
		return;
	}
	if (call->desc->proc == NFS3PROC_READDIR) {
		READDIR3args *a = call->args;
		READDIR3res res;
		if (meta_readdir(a, &res)) {
			int g = granted(call, &a->dir, ACCESS3_READ);
			if (g > 0) {
				stats.cache_readdir_hits++;
				call_reply(call, &res);
				meta_readdir_free(&res);
				return;
			}
			meta_readdir_free(&res);
			if (g < 0) {
				ask_access(call, &a->dir, readdir_try);
				return;
			}
		}
	} else {
		READDIRPLUS3args *a = call->args;
		READDIRPLUS3res res;
		if (meta_readdirplus(a, &res)) {
			/* the handles and attributes of the entries too: the
			 * upstream gives them only to a caller who may search */
			int g = granted(call, &a->dir, ACCESS3_READ);
			if (g > 0)
				g = granted(call, &a->dir, ACCESS3_LOOKUP);
			if (g > 0) {
				stats.cache_readdir_hits++;
				readdirplus_patch(&res);
				call_reply(call, &res);
				meta_readdirplus_free(&res);
				return;
			}
			meta_readdirplus_free(&res);
			if (g < 0) {
				ask_access(call, &a->dir, readdir_try);
				return;
			}
		}
	}
	const nfs_fh3 *dir = call->desc->proc == NFS3PROC_READDIR ?
			     &((READDIR3args *)call->args)->dir : &((READDIRPLUS3args *)call->args)->dir;
	fattr3 attrs;
	if (!nfsd_meta_op_of(call)->revalidated && nfsd.cfg.cache.acdirmax &&
	    meta_listing_held(dir, call->desc->proc == NFS3PROC_READDIRPLUS) &&
	    !meta_attrs_get(dir, &attrs)) {
		revalidate_dir(call, dir, readdir_try);
		return;
	}
	stats.cache_readdir_misses++;
	nfsd_forward_with(call, readdir_fixup);
}

void nfsd_proc_readdir(struct nfsd_call *call)
{
	if (call->desc->proc == NFS3PROC_READDIR) {
		READDIR3args *a = call->args;
		if (a->count > nfsd.max_payload)
			a->count = nfsd.max_payload;
	} else {
		READDIRPLUS3args *a = call->args;
		if (a->maxcount > nfsd.max_payload)
			a->maxcount = nfsd.max_payload;
		if (a->dircount > a->maxcount)
			a->dircount = a->maxcount;
	}
	readdir_try(call);
}

/* ---- FSSTAT (§3.3.18), FSINFO (§3.3.19), PATHCONF (§3.3.20) ---------------- */

static uint32_t clamp(uint32_t v, uint32_t max)
{
	return v > max ? max : v;
}

/* What a file system answers, the proxy's own limits applied to FSINFO. */
static void fs_fixup(struct nfsd_call *call, void *res)
{
	const nfs_fh3 *fh = call->args;   /* FSSTAT3args, FSINFO3args, PATHCONF3args: the handle */
	uint64_t mseq = nfsd_meta_mseq(call);

	switch (call->desc->proc) {
	case NFS3PROC_FSSTAT: {
		FSSTAT3res *r = res;
		if (r->status != NFS3_OK)
			break;
		nfsd_meta_record(fh, &r->FSSTAT3res_u.resok.obj_attributes, mseq);
		meta_fsstat_record(fh, &r->FSSTAT3res_u.resok, mseq);
		break;
	}
	case NFS3PROC_FSINFO: {
		FSINFO3res *r = res;
		if (r->status != NFS3_OK)
			break;
		FSINFO3resok *ok = &r->FSINFO3res_u.resok;
		ok->rtmax = clamp(ok->rtmax, nfsd.max_payload);
		ok->rtpref = clamp(ok->rtpref, ok->rtmax);
		ok->wtmax = clamp(ok->wtmax, nfsd.max_payload);
		ok->wtpref = clamp(ok->wtpref, ok->wtmax);
		ok->dtpref = clamp(ok->dtpref, nfsd.max_payload);
		nfsd_meta_record(fh, &ok->obj_attributes, mseq);
		meta_fsinfo_record(fh, ok, mseq);
		break;
	}
	case NFS3PROC_PATHCONF: {
		PATHCONF3res *r = res;
		if (r->status != NFS3_OK)
			break;
		nfsd_meta_record(fh, &r->PATHCONF3res_u.resok.obj_attributes, mseq);
		meta_pathconf_record(fh, &r->PATHCONF3res_u.resok, mseq);
		break;
	}
	}
}

void nfsd_proc_fs(struct nfsd_call *call)
{
	const nfs_fh3 *fh = call->args;
	bool hit = false;

	if (meta_on()) {
		switch (call->desc->proc) {
		case NFS3PROC_FSSTAT: {
			FSSTAT3res res;
			memset(&res, 0, sizeof(res));
			if ((hit = meta_fsstat(fh, &res.FSSTAT3res_u.resok))) {
				res.status = NFS3_OK;
				call_reply(call, &res);
			}
			break;
		}
		case NFS3PROC_FSINFO: {
			FSINFO3res res;
			memset(&res, 0, sizeof(res));
			if ((hit = meta_fsinfo(fh, &res.FSINFO3res_u.resok))) {
				res.status = NFS3_OK;
				call_reply(call, &res);
			}
			break;
		}
		case NFS3PROC_PATHCONF: {
			PATHCONF3res res;
			memset(&res, 0, sizeof(res));
			if ((hit = meta_pathconf(fh, &res.PATHCONF3res_u.resok))) {
				res.status = NFS3_OK;
				call_reply(call, &res);
			}
			break;
		}
		}
	}
	if (!hit)
		nfsd_forward_with(call, fs_fixup);
}

/* ---- MOUNT (RFC 1813 §5.2) -------------------------------------------------- */

static void mnt_fixup(struct nfsd_call *call, void *res)
{
	mountres3 *r = res;

	if (r->fhs_status == MNT3_OK)
		meta_mnt_record(*(dirpath *)call->args, &r->mountres3_u.mountinfo);
}

void nfsd_proc_mnt(struct nfsd_call *call)
{
	dirpath *path = call->args;
	mountres3 res;

	memset(&res, 0, sizeof(res));
	if (!nfsd_export_allowed(*path)) {
		res.fhs_status = MNT3ERR_ACCES;
		log_info("mount: %s refused: not in upstream.exports", *path);
		call_reply(call, &res);
		return;
	}
	if (meta_on() && meta_mnt(*path, &res.mountres3_u.mountinfo)) {
		res.fhs_status = MNT3_OK;
		call_reply(call, &res);
		return;
	}
	nfsd_forward_with(call, mnt_fixup);
}

/* The upstream's EXPORT list is cached whole; upstream.exports (which a
 * reload may change) restricts it in every answer. */
static void export_fixup(struct nfsd_call *call, void *res)
{
	(void)call;
	exports *list = res;

	meta_export_record(*list);
	for (exports *p = list; *p;) {
		if (!nfsd_export_allowed((*p)->ex_dir))
			*p = (*p)->ex_next;   /* unlink; the nodes belong to libnfs */
		else
			p = &(*p)->ex_next;
	}
}

void nfsd_proc_export(struct nfsd_call *call)
{
	exports cached;

	if (meta_on() && meta_export(&cached)) {
		/* shallow copies of the allowed nodes, linked anew */
		size_t n = 0;
		for (exports e = cached; e; e = e->ex_next)
			n++;
		struct exportnode *nodes = xcalloc(n ? n : 1, sizeof(*nodes)), *v = nodes;
		exports list = NULL, *tail = &list;
		for (exports e = cached; e; e = e->ex_next) {
			if (!nfsd_export_allowed(e->ex_dir))
				continue;
			*v = *e;
			v->ex_next = NULL;
			*tail = v;
			tail = &v->ex_next;
			v++;
		}
		call_reply(call, &list);
		free(nodes);
		return;
	}
	nfsd_forward_with(call, export_fixup);
}
