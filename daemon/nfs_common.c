/*
 * nfs_common.c — what the NFS handlers share (nfs_common.h): forwarding
 * with the caller's credential and a fixup, the handler's per-call state,
 * the GETATTR that refreshes a cache object's attributes, the snooping of
 * attributes in results, the export check, and the release of the state
 * the handlers hang off cache objects.  It answers no procedure itself.
 */
#include "config.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/meta.h"
#include "common/xalloc.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfsd.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"

/* ---- per-call state ----------------------------------------------------- */

struct nfsd_call_state *nfsd_call_state(struct nfsd_call *call)
{
	if (!call->hstate) {
		/* only a row whose free function releases it may make one */
		assert(nfsd_proc_of(call->desc)->free);
		call->hstate = xcalloc(1, sizeof(*call->hstate));
	}
	return call->hstate;
}

void nfsd_call_hold(struct nfsd_call *call, struct cache_object *o,
		    void (*unhold)(struct cache_object *o))
{
	struct nfsd_call_state *hs = nfsd_call_state(call);

	assert(!hs->held);
	hs->held = o;
	hs->unhold = unhold;
}

void nfsd_call_state_free(struct nfsd_call *call)
{
	struct nfsd_call_state *hs = call->hstate;

	if (!hs)
		return;
	if (hs->held)
		hs->unhold(hs->held);
	if (hs->meta)
		nfsd_meta_op_free(hs->meta);
	free(hs);
	call->hstate = NULL;
}

/* ---- forwarding --------------------------------------------------------- */

static void forward_done(void *priv, enum upstream_status st, void *res)
{
	struct nfsd_call *call = priv;

	if (call->hstate)
		call->hstate->upstream_st = st;
	switch (st) {
	case UPSTREAM_OK:
		if (call->hstate && call->hstate->fixup)
			call->hstate->fixup(call, res);
		call_reply(call, res);
		break;
	case UPSTREAM_TIMEOUT:
		call_reply_jukebox(call);
		break;
	case UPSTREAM_DENIED:
		call_reply_auth_error(call, RPC_AUTH_BADCRED);
		break;
	case UPSTREAM_FAILED:
	default:
		call_reply_rpc_error(call, RPC_SYSTEM_ERR);
		break;
	}
}

void nfsd_forward_with(struct nfsd_call *call, nfsd_fixup_fn fixup)
{
	if (fixup || call->hstate) {
		/* a plain forward keeps no state: its row may release none */
		struct nfsd_call_state *hs = nfsd_call_state(call);
		hs->fixup = fixup;
		hs->seq = cache_seq();
		hs->mseq = meta_seq();
	}
	upstream_call(nfsd.upstream, call->desc, call->args, &call->cred, forward_done, call);
}

/* ---- cache objects ------------------------------------------------------ */

/* The file whose cache object the call's handler needs: READ, WRITE and
 * COMMIT answer from or into its data, SETATTR of the size cuts it. */
static const nfs_fh3 *call_object_fh(const struct nfsd_call *call)
{
	if (call->desc->prog != NFS3_PROGRAM || !call->args)
		return NULL;
	switch (call->desc->proc) {
	case NFS3PROC_READ:
		return &((READ3args *)call->args)->file;
	case NFS3PROC_WRITE:
		return &((WRITE3args *)call->args)->file;
	case NFS3PROC_COMMIT:
		return &((COMMIT3args *)call->args)->file;
	case NFS3PROC_SETATTR:
		return &((SETATTR3args *)call->args)->object;
	default:
		return NULL;
	}
}

static void call_resolved(struct cache_waiter *w)
{
	struct nfsd_call_state *hs = container_of(w, struct nfsd_call_state, resolve);

	nfsd_proc_of(hs->call->desc)->handler(hs->call);
}

void nfsd_call_run(struct nfsd_call *call)
{
	const nfs_fh3 *fh = call_object_fh(call);

	if (fh && nfsd.cache_on && nfsd_fh_cacheable(fh)) {
		struct nfsd_call_state *hs = nfsd_call_state(call);
		hs->call = call;
		hs->resolve.wake = call_resolved;
		if (cache_resolve((const uint8_t *)fh->data.data_val, fh->data.data_len,
				  &hs->resolve) == 0)
			return;   /* call_resolved() */
	}
	nfsd_proc_of(call->desc)->handler(call);
}

bool nfsd_fh_cacheable(const nfs_fh3 *fh)
{
	return fh->data.data_len >= 1 && fh->data.data_len <= NFS3_FHSIZE_MAX;
}

struct cache_object *nfsd_cache_object(const nfs_fh3 *fh)
{
	if (!nfsd.cache_on || !nfsd_fh_cacheable(fh))
		return NULL;
	return cache_find((const uint8_t *)fh->data.data_val, fh->data.data_len);
}

/* The cache frees `o`: what the handlers hung off it goes with it. */
void nfsd_object_release(struct cache_object *o)
{
	nfsd_read_state_free(o);
	writeback_state_free(o);
}

/* ---- attributes --------------------------------------------------------- */

static void getattr_done(void *priv, enum upstream_status st, void *res)
{
	struct nfsd_getattr *g = priv;
	struct cache_object *o = g->o;
	const GETATTR3res *r = res;
	bool revalidating = g->revalidating;

	if (revalidating)
		o->getattr_busy = 0;
	if (st == UPSTREAM_OK && r->status == NFS3_OK)
		cache_attrs_update(o, &r->GETATTR3res_u.resok.obj_attributes, g->seq);
	g->done(g, st, st == UPSTREAM_OK ? r : NULL);   /* may free g */
	if (revalidating) {
		cache_wake(o);
		cache_unpin(o);   /* nfsd_revalidate() pinned it */
	}
}

static void getattr_send(struct nfsd_getattr *g, struct cache_object *o,
			 const struct rpc_cred *cred, nfsd_getattr_fn done, bool revalidating)
{
	g->o = o;
	g->revalidating = revalidating;
	g->seq = cache_seq();
	g->done = done;
	memset(&g->args, 0, sizeof(g->args));
	g->args.object.data.data_len = o->fh_len;
	g->args.object.data.data_val = (char *)o->fh;
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_GETATTR), &g->args, cred, getattr_done, g);
}

void nfsd_getattr_send(struct nfsd_getattr *g, struct cache_object *o,
		       const struct rpc_cred *cred, nfsd_getattr_fn done)
{
	getattr_send(g, o, cred, done, false);
}

bool nfsd_revalidate(struct cache_object *o, const struct rpc_cred *cred, struct cache_waiter *w,
		     struct nfsd_getattr *g, nfsd_getattr_fn done)
{
	if (cache_attrs_fresh(o))
		return false;
	if (o->getattr_busy) {
		cache_wait(o, w);   /* one GETATTR per object at a time */
		return true;
	}
	o->getattr_busy = 1;
	cache_pin(o);   /* until getattr_done() clears getattr_busy */
	getattr_send(g, o, cred, done, true);
	return true;
}

void nfsd_access_send(struct nfsd_access *q, const nfs_fh3 *fh, uint32_t asked,
		      const struct rpc_cred *cred, upstream_done_fn done, void *priv)
{
	q->seq = cache_seq();
	q->args.object = *fh;
	q->args.access = asked;
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_ACCESS), &q->args, cred, done, priv);
}

void nfsd_access_snoop(struct cache_object *o, const struct rpc_cred *cred,
		       const struct nfsd_access *q, const ACCESS3res *r)
{
	const post_op_attr *pa = &r->ACCESS3res_u.resok.obj_attributes;

	cache_access_record(o, cred, q->args.access, r->ACCESS3res_u.resok.access);
	if (pa->attributes_follow)
		cache_attrs_update(o, &pa->post_op_attr_u.attributes, q->seq);
}

void nfsd_meta_change_done(struct nfsd_call *call, const nfs_fh3 *fh, nfsstat3 status,
			   const wcc_data *wcc)
{
	if (status == NFS3_OK)
		meta_changed(fh, wcc);
	else if (wcc->after.attributes_follow)
		meta_attrs_record(fh, &wcc->after.post_op_attr_u.attributes, nfsd_call_state(call)->mseq);
}

void nfsd_meta_object_changed(const struct cache_object *o, const wcc_data *wcc, bool explained)
{
	nfs_fh3 fh = { .data = { o->fh_len, (char *)o->fh } };

	if (explained)
		meta_changed_explained(&fh, wcc);
	else
		meta_changed(&fh, wcc);
}

void nfsd_post_op_snoop(struct nfsd_call *call, const nfs_fh3 *fh, post_op_attr *pa)
{
	struct cache_object *o;

	if (pa->attributes_follow && (o = nfsd_cache_object(fh))) {
		cache_attrs_update(o, &pa->post_op_attr_u.attributes, nfsd_call_state(call)->seq);
		cache_patch_attrs(o, &pa->post_op_attr_u.attributes);
	}
}

void nfsd_readdirplus_snoop(struct nfsd_call *call, void *res)
{
	READDIRPLUS3res *r = res;

	if (r->status != NFS3_OK || !nfsd.cache_on)
		return;
	for (entryplus3 *e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry)
		if (e->name_handle.handle_follows)
			nfsd_post_op_snoop(call, &e->name_handle.post_op_fh3_u.handle,
					   &e->name_attributes);
}

/* ---- exports ------------------------------------------------------------ */

/* Is `path` one of the space-separated paths of upstream.exports ("" = all)? */
bool nfsd_export_allowed(const char *path)
{
	const char *list = nfsd.cfg.upstream_exports;
	size_t n = strlen(path);

	while (path[0] && n > 1 && path[n - 1] == '/')
		n--;   /* "/export/" names "/export" */
	if (!*list)
		return true;
	while (*list) {
		while (*list == ' ' || *list == ',' || *list == '\t')
			list++;
		size_t w = strcspn(list, " ,\t"), wn = w;
		while (wn > 1 && list[wn - 1] == '/')
			wn--;   /* "/export/" in the list names "/export" too */
		if (wn && wn == n && strncmp(list, path, n) == 0)
			return true;
		list += w;
	}
	return false;
}
