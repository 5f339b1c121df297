/*
 * nfs_attrs.c — the procedures whose results carry attributes of cached
 * files: forwarded as they are, their attributes fed to the cache's
 * coherency checks (DESIGN.md "Coherency"); while a file has dirty data,
 * clients see its local size and times in them.
 */
#include "config.h"

#include "cache/cache.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfsd.h"
#include "common/stats.h"
#include "daemon/upstream.h"

#define ACCESS3_READ_BIT 0x0001

/* Attributes of a cached file in a reply: they feed its coherency data, and
 * while it has dirty data, the client sees its local size and times. */
static void post_op(struct nfsd_call *call, const nfs_fh3 *fh, post_op_attr *pa)
{
	struct cache_object *o;

	if (pa->attributes_follow && (o = nfsd_cache_object(fh))) {
		cache_attrs_update(o, &pa->post_op_attr_u.attributes, call->seq);
		cache_patch_attrs(o, &pa->post_op_attr_u.attributes);
	}
}

static void attrs_fixup(struct nfsd_call *call, void *res)
{
	switch (call->desc->proc) {
	case 1: { /* GETATTR */
		GETATTR3res *r = res;
		struct cache_object *o;
		if (r->status == NFS3_OK && (o = nfsd_cache_object(&((GETATTR3args *)call->args)->object))) {
			cache_attrs_update(o, &r->GETATTR3res_u.resok.obj_attributes, call->seq);
			cache_patch_attrs(o, &r->GETATTR3res_u.resok.obj_attributes);
		}
		break;
	}
	case 3: { /* LOOKUP */
		LOOKUP3res *r = res;
		if (r->status == NFS3_OK)
			post_op(call, &r->LOOKUP3res_u.resok.object, &r->LOOKUP3res_u.resok.obj_attributes);
		break;
	}
	case 4: { /* ACCESS */
		ACCESS3res *r = res;
		const nfs_fh3 *fh = &((ACCESS3args *)call->args)->object;
		struct cache_object *o;
		if (r->status == NFS3_OK) {
			post_op(call, fh, &r->ACCESS3res_u.resok.obj_attributes);
			if ((o = nfsd_cache_object(fh)))
				cache_access_record(o, &call->cred,
						    ((ACCESS3args *)call->args)->access,
						    r->ACCESS3res_u.resok.access);
		}
		break;
	}
	case 8: { /* CREATE: an UNCHECKED create of an existing file may truncate it */
		CREATE3res *r = res;
		CREATE3resok *ok = &r->CREATE3res_u.resok;
		if (r->status != NFS3_OK || !ok->obj.handle_follows)
			break;
		nfs_fh3 *fh = &ok->obj.post_op_fh3_u.handle;
		/* a new regular file: its WRITEs can be taken locally at once */
		if (nfsd.cache_on && !nfsd_cache_object(fh) && ok->obj_attributes.attributes_follow &&
		    ok->obj_attributes.post_op_attr_u.attributes.type == NF3REG &&
		    ok->obj_attributes.post_op_attr_u.attributes.size == 0 &&
		    fh->data.data_len >= 1 && fh->data.data_len <= 64)
			cache_get((const uint8_t *)fh->data.data_val, fh->data.data_len);
		post_op(call, fh, &ok->obj_attributes);
		break;
	}
	}
}

void nfsd_proc_attrs(struct nfsd_call *call)
{
	nfsd_forward_with(call, attrs_fixup);
}

void nfsd_readdirplus_snoop(struct nfsd_call *call, READDIRPLUS3res *r)
{
	if (r->status != NFS3_OK || !nfsd.cache_on)
		return;
	for (entryplus3 *e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry)
		if (e->name_handle.handle_follows)
			post_op(call, &e->name_handle.post_op_fh3_u.handle, &e->name_attributes);
}

int nfsd_revalidate(struct cache_object *o, const nfs_fh3 *fh, const struct rpc_cred *cred,
		    struct cache_waiter *w, GETATTR3args *args, uint64_t *seq,
		    upstream_done_fn done, void *priv)
{
	if (cache_attrs_fresh(o))
		return 0;
	if (o->getattr_busy) {
		cache_wait(o, w);   /* one GETATTR per object at a time */
		return 1;
	}
	o->getattr_busy = 1;
	cache_pin(o);   /* until its callback clears getattr_busy */
	*seq = cache_seq();
	args->object = *fh;
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_GETATTR), args, cred, done, priv);
	return 1;
}

void nfsd_access_snoop(struct cache_object *o, const struct rpc_cred *cred, uint32_t asked,
		       const ACCESS3res *r, uint64_t seq)
{
	const post_op_attr *pa = &r->ACCESS3res_u.resok.obj_attributes;

	cache_access_record(o, cred, asked, r->ACCESS3res_u.resok.access);
	if (pa->attributes_follow)
		cache_attrs_update(o, &pa->post_op_attr_u.attributes, seq);
}
