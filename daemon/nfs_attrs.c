/*
 * nfs_attrs.c — the data cache's side of the results of GETATTR, LOOKUP,
 * ACCESS and CREATE (nfs_meta.c forwards them): their attributes feed the
 * cache's coherency checks (DESIGN.md "Coherency"); while a file has dirty
 * data, clients see its local size and times in them.
 */
#include "config.h"

#include "cache/cache.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfsd.h"

void nfsd_attrs_snoop(struct nfsd_call *call, void *res)
{
	uint64_t seq = nfsd_call_state(call)->seq;

	switch (call->desc->proc) {
	case NFS3PROC_GETATTR: {
		GETATTR3res *r = res;
		struct cache_object *o;
		if (r->status == NFS3_OK && (o = nfsd_cache_object(&((GETATTR3args *)call->args)->object))) {
			cache_attrs_update(o, &r->GETATTR3res_u.resok.obj_attributes, seq);
			cache_patch_attrs(o, &r->GETATTR3res_u.resok.obj_attributes);
		}
		break;
	}
	case NFS3PROC_LOOKUP: {
		LOOKUP3res *r = res;
		if (r->status == NFS3_OK)
			nfsd_post_op_snoop(call, &r->LOOKUP3res_u.resok.object,
					   &r->LOOKUP3res_u.resok.obj_attributes);
		break;
	}
	case NFS3PROC_ACCESS: {
		ACCESS3res *r = res;
		const nfs_fh3 *fh = &((ACCESS3args *)call->args)->object;
		struct cache_object *o;
		if (r->status == NFS3_OK) {
			nfsd_post_op_snoop(call, fh, &r->ACCESS3res_u.resok.obj_attributes);
			if ((o = nfsd_cache_object(fh)))
				cache_access_record(o, &call->cred,
						    ((ACCESS3args *)call->args)->access,
						    r->ACCESS3res_u.resok.access);
		}
		break;
	}
	case NFS3PROC_CREATE: { /* an UNCHECKED create of an existing file may truncate it */
		CREATE3res *r = res;
		CREATE3resok *ok = &r->CREATE3res_u.resok;
		if (r->status != NFS3_OK || !ok->obj.handle_follows)
			break;
		nfs_fh3 *fh = &ok->obj.post_op_fh3_u.handle;
		/* a new regular file: its WRITEs can be taken locally at once */
		if (nfsd.cache_on && !nfsd_cache_object(fh) && ok->obj_attributes.attributes_follow &&
		    ok->obj_attributes.post_op_attr_u.attributes.type == NF3REG &&
		    ok->obj_attributes.post_op_attr_u.attributes.size == 0 && nfsd_fh_cacheable(fh) &&
		    !cache_get((const uint8_t *)fh->data.data_val, fh->data.data_len))
			/* the index may hold it (an UNCHECKED create of a cached
			 * file): looked up now, for its first WRITE */
			cache_resolve((const uint8_t *)fh->data.data_val, fh->data.data_len, NULL);
		nfsd_post_op_snoop(call, fh, &ok->obj_attributes);
		break;
	}
	}
}
