/*
 * nfs_attrs.c — the procedures whose results carry attributes of cached
 * files: forwarded as they are, their attributes fed to the cache's
 * coherency checks (DESIGN.md "Coherency"), WRITE's data copied into the
 * cache (write-through), SETATTR's new size applied to it.
 */
#include "config.h"

#include "cache/cache.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfsd.h"
#include "daemon/stats.h"

#define ACCESS3_READ_BIT 0x0001

static struct cache_object *known(const nfs_fh3 *fh)
{
	if (!nfsd.cache_on || fh->data.data_len == 0 || fh->data.data_len > 64)
		return NULL;
	return cache_find((const uint8_t *)fh->data.data_val, fh->data.data_len);
}

static void post_op(struct nfsd_call *call, const nfs_fh3 *fh, const post_op_attr *pa)
{
	struct cache_object *o;

	if (pa->attributes_follow && (o = known(fh)))
		cache_attrs_update(o, &pa->post_op_attr_u.attributes, call->seq);
}

static void attrs_fixup(struct nfsd_call *call, void *res)
{
	switch (call->desc->proc) {
	case 1: { /* GETATTR */
		GETATTR3res *r = res;
		struct cache_object *o;
		if (r->status == NFS3_OK && (o = known(&((GETATTR3args *)call->args)->object)))
			cache_attrs_update(o, &r->GETATTR3res_u.resok.obj_attributes, call->seq);
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
			if ((o = known(fh)))
				cache_access_record(o, &call->cred, r->ACCESS3res_u.resok.access);
		}
		break;
	}
	case 8: { /* CREATE: an UNCHECKED create of an existing file may truncate it */
		CREATE3res *r = res;
		if (r->status == NFS3_OK && r->CREATE3res_u.resok.obj.handle_follows)
			post_op(call, &r->CREATE3res_u.resok.obj.post_op_fh3_u.handle,
				&r->CREATE3res_u.resok.obj_attributes);
		break;
	}
	case 21: { /* COMMIT */
		COMMIT3res *r = res;
		struct cache_object *o;
		if (r->status == NFS3_OK && (o = known(&((COMMIT3args *)call->args)->file)) &&
		    r->COMMIT3res_u.resok.file_wcc.after.attributes_follow)
			cache_attrs_update(o, &r->COMMIT3res_u.resok.file_wcc.after.post_op_attr_u.attributes,
					   call->seq);
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

static void write_fixup(struct nfsd_call *call, void *res)
{
	WRITE3res *r = res;
	WRITE3args *a = call->args;

	if (r->status != NFS3_OK || !nfsd.cache_on || a->file.data.data_len == 0 ||
	    a->file.data.data_len > 64)
		return;
	const post_op_attr *post = &r->WRITE3res_u.resok.file_wcc.after;
	if (!post->attributes_follow || post->post_op_attr_u.attributes.type != NF3REG)
		return;
	struct cache_object *o = cache_get((const uint8_t *)a->file.data.data_val, a->file.data.data_len);
	uint32_t written = r->WRITE3res_u.resok.count;
	if (written > a->data.data_len)
		written = a->data.data_len;
	if (cache_change_done(o, &r->WRITE3res_u.resok.file_wcc) &&
	    cache_store(o, a->offset, a->data.data_val, written, cache_seq()) == 0)
		stats.cache_write_bytes += written;
}

/* Count our changes in flight: their replies may come back in any order. */
static void change_begins(struct nfsd_call *call, const nfs_fh3 *fh)
{
	struct cache_object *o = known(fh);

	if (o) {
		o->changes_in_flight++;
		call->cache_obj = o;
	}
}

void nfsd_proc_write(struct nfsd_call *call)
{
	change_begins(call, &((WRITE3args *)call->args)->file);
	nfsd_forward_with(call, write_fixup);
}

static void setattr_fixup(struct nfsd_call *call, void *res)
{
	SETATTR3res *r = res;
	SETATTR3args *a = call->args;
	struct cache_object *o = known(&a->object);

	if (!o)
		return;
	if (r->status != NFS3_OK)
		return;   /* nothing changed */
	cache_change_done(o, &r->SETATTR3res_u.resok.obj_wcc);
	if (a->new_attributes.size.set_it)
		cache_truncate(o, a->new_attributes.size.set_size3_u.size);
}

void nfsd_proc_setattr(struct nfsd_call *call)
{
	change_begins(call, &((SETATTR3args *)call->args)->object);
	nfsd_forward_with(call, setattr_fixup);
}
