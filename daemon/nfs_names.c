/*
 * nfs_names.c — a directory's names kept right after a change made through
 * nfscached (DESIGN.md "Namespace cache"): CREATE, MKDIR, SYMLINK and MKNOD
 * add the name with the handle and attributes their reply gives; REMOVE,
 * RMDIR, RENAME and LINK edit the names of both directories from their wcc
 * data.  An object that loses a link stops being trusted (and, for its last
 * link, neither are the data cache's attributes, and its clean cached data
 * goes); before a name whose handle the cache does not know goes, one
 * LOOKUP learns it.  A RENAME over a file while some file has data not
 * written back looks the file up first: when that was its last link, its
 * dirty data goes as on a REMOVE (nfs_write.c).  A SYMLINK whose call
 * libnfs could not encode is refused (NFS3ERR_NAMETOOLONG) rather than
 * sent.  nfs_meta.c answers from what this keeps.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/meta.h"
#include "common/log.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfs_meta.h"
#include "daemon/nfsd.h"
#include "daemon/writeback.h"

/* A handle copied out of the cache before it is edited. */
struct fh_copy {
	nfs_fh3 fh;
	uint8_t data[NFS3_FHSIZE_MAX];
	bool known;
};

static void fh_copy_of(struct fh_copy *c, const nfs_fh3 *dir, const char *name)
{
	nfs_fh3 fh;

	c->known = meta_name_handle(dir, name, &fh) && fh.data.data_len <= sizeof(c->data);
	if (c->known) {
		memcpy(c->data, fh.data.data_val, fh.data.data_len);
		c->fh.data.data_len = fh.data.data_len;
		c->fh.data.data_val = (char *)c->data;
	}
}

/* ---- a name about to go: which object it names ------------------------ */

static void lookup_first_done(void *priv, enum upstream_status st, void *res)
{
	struct nfsd_meta_op *m = priv;
	const LOOKUP3res *r = res;

	if (st == UPSTREAM_OK && r->status == NFS3_OK) {
		const LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
		if (ok->object.data.data_len <= sizeof(m->found)) {
			m->found_len = ok->object.data.data_len;
			memcpy(m->found, ok->object.data.data_val, m->found_len);
			if (ok->obj_attributes.attributes_follow)
				m->found_nlink = ok->obj_attributes.post_op_attr_u.attributes.nlink;
		}
	}
	m->retry(m->call);
}

/* One LOOKUP of `name` in `dir` (the call's arguments), then `then`. */
static void lookup_send(struct nfsd_call *call, const nfs_fh3 *dir, const char *name,
			void (*then)(struct nfsd_call *call))
{
	struct nfsd_meta_op *m = nfsd_meta_op_of(call);

	m->retry = then;
	m->lookup.what.dir = *dir;              /* the call's arguments: live until it is freed */
	m->lookup.what.name = (char *)name;
	m->lookup_mseq = meta_seq();
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_LOOKUP), &m->lookup, &call->cred,
		      lookup_first_done, m);
}

void nfsd_meta_lookup_first(struct nfsd_call *call, const nfs_fh3 *dir, const char *name,
			    void (*then)(struct nfsd_call *call))
{
	nfs_fh3 fh;

	if (!meta_on() || meta_name_handle(dir, name, &fh)) {
		then(call);
		return;
	}
	lookup_send(call, dir, name, then);
}

/* The handle `name` in `dir` named before the call changed it: the one
 * the LOOKUP sent first found, else the cache's; *nlink its link count when
 * known (else 0). */
static bool gone_handle(struct nfsd_call *call, const nfs_fh3 *dir, const char *name,
			struct fh_copy *c, uint32_t *nlink)
{
	struct nfsd_meta_op *m = call->hstate ? call->hstate->meta : NULL;

	*nlink = 0;
	fh_copy_of(c, dir, name);
	if (m && m->found_len) {   /* asked just before the call: newer than the cache */
		memcpy(c->data, m->found, m->found_len);
		c->fh.data.data_len = m->found_len;
		c->fh.data.data_val = (char *)c->data;
		c->known = true;
		*nlink = m->found_nlink;
	}
	return c->known;
}

/* The object `fh` lost a link through us: its attributes are no longer
 * trusted, and when that was its last link (`nlink`, 0 = unknown: the data
 * cache's attributes say) neither are the data cache's, and its clean
 * cached data goes — a READ of it, even at its end, gets the upstream's
 * NFS3ERR_STALE. */
static void lost_link(const nfs_fh3 *fh, uint32_t nlink)
{
	struct cache_object *o = nfsd_cache_object(fh);

	meta_attrs_expire(fh);
	if (!nlink && o && o->have_attrs)
		nlink = o->attrs.nlink;
	if (!o || nlink != 1)
		return;
	cache_attrs_expire(o);
	if (!cache_has_uncommitted(o))
		cache_invalidate(o, "its last link removed through nfscached");
}

/* ---- changes of a directory: CREATE, MKDIR, SYMLINK, MKNOD ------------------ */

/* The parts of a CREATE, MKDIR, SYMLINK or MKNOD call and result that name
 * what was made (RFC 1813 §3.3.8–11: one layout for the four). */
struct made {
	const diropargs3 *where;
	nfsstat3 status;
	post_op_fh3 *obj;               /* NULL unless NFS3_OK */
	post_op_attr *obj_attributes;
	wcc_data *dir_wcc;
};

#define MADE(args_t, res_t, ok_m, fail_m) do { \
		res_t *r = res; \
		m.where = &((args_t *)call->args)->where; \
		m.status = r->status; \
		if (r->status == NFS3_OK) { \
			m.obj = &r->ok_m.obj; \
			m.obj_attributes = &r->ok_m.obj_attributes; \
			m.dir_wcc = &r->ok_m.dir_wcc; \
		} else { \
			m.dir_wcc = &r->fail_m.dir_wcc; \
		} \
	} while (0)

static void made_fixup(struct nfsd_call *call, void *res)
{
	struct made m = { 0 };

	switch (call->desc->proc) {
	case NFS3PROC_CREATE:
		MADE(CREATE3args, CREATE3res, CREATE3res_u.resok, CREATE3res_u.resfail);
		break;
	case NFS3PROC_MKDIR:
		MADE(MKDIR3args, MKDIR3res, MKDIR3res_u.resok, MKDIR3res_u.resfail);
		break;
	case NFS3PROC_SYMLINK:
		MADE(SYMLINK3args, SYMLINK3res, SYMLINK3res_u.resok, SYMLINK3res_u.resfail);
		break;
	case NFS3PROC_MKNOD:
		MADE(MKNOD3args, MKNOD3res, MKNOD3res_u.resok, MKNOD3res_u.resfail);
		break;
	default:
		return;
	}
	const nfs_fh3 *dir = &m.where->dir;
	if (m.status != NFS3_OK) {
		/* nothing made; the name may exist after all (NFS3ERR_EXIST) */
		nfsd_meta_record(dir, &m.dir_wcc->after, nfsd_meta_mseq(call));
		meta_name_forget(dir, m.where->name);
	} else {
		meta_changed(dir, m.dir_wcc);
		if (m.obj->handle_follows) {
			const nfs_fh3 *fh = &m.obj->post_op_fh3_u.handle;
			meta_name_add(dir, m.where->name, fh,
				      m.obj_attributes->attributes_follow ?
				      &m.obj_attributes->post_op_attr_u.attributes : NULL, meta_seq());
			if (call->desc->proc == NFS3PROC_SYMLINK)
				meta_readlink_record(fh, ((SYMLINK3args *)call->args)->symlink.symlink_data,
						     meta_seq());
		} else {
			meta_name_forget(dir, m.where->name);
		}
	}
	if (call->desc->proc == NFS3PROC_CREATE)
		nfsd_attrs_snoop(call, res);   /* the data cache's new file */
}
#undef MADE

/* libnfs 4.0 encodes a call into ZDR_ENCODEBUF_MINSIZE bytes (lib/pdu.c;
 * WRITE's data aside): a call that does not fit cannot go upstream. */
#define UPSTREAM_ENCODE_MAX 4096u

static uint32_t xdr_opaque_bytes(size_t len)
{
	return 4 + (uint32_t)((len + 3) & ~(size_t)3);
}

/* The most bytes SYMLINK call `a` takes as libnfs encodes it for `cred`:
 * record mark, call header and AUTH_SYS credential (RFC 5531 §9, §14),
 * AUTH_NONE verifier, SYMLINK3args with every attribute of its sattr3 set
 * (RFC 1813 §3.3.10). */
static uint32_t symlink_call_bytes(const SYMLINK3args *a, const struct rpc_cred *cred)
{
	uint32_t n = 4 + 6 * 4;
	n += 2 * 4 + 4 + xdr_opaque_bytes(strlen(cred->machinename)) + 3 * 4 + 4 * cred->gids_len;
	n += 2 * 4;
	n += xdr_opaque_bytes(a->where.dir.data.data_len) + xdr_opaque_bytes(strlen(a->where.name));
	n += 3 * (4 + 4) + (4 + 8) + 2 * (4 + 8);
	n += xdr_opaque_bytes(strlen(a->symlink.symlink_data));
	return n;
}

void nfsd_proc_made(struct nfsd_call *call)
{
	if (call->desc->proc == NFS3PROC_SYMLINK &&
	    symlink_call_bytes(call->args, &call->cred) > UPSTREAM_ENCODE_MAX) {
		/* a target the upstream may take but that cannot be sent to it
		 * (up to NFS3_SYMLINK_MAX, less the call's other parts): refused
		 * as a server refuses a path too long for it */
		SYMLINK3res res;
		memset(&res, 0, sizeof(res));
		res.status = NFS3ERR_NAMETOOLONG;
		call_reply(call, &res);
		return;
	}
	nfsd_forward_with(call, made_fixup);
}

/* ---- REMOVE, RMDIR, RENAME, LINK ------------------------------------------- */

/* `name` went from `dir` through us (REMOVE, RMDIR): wcc `wcc` of the
 * call's result, status `status`.  The object it named has a new link
 * count and ctime: its attributes are no longer trusted. */
void nfsd_meta_unlinked(struct nfsd_call *call, const nfs_fh3 *dir, const char *name,
			nfsstat3 status, wcc_data *wcc)
{
	struct fh_copy gone;
	uint32_t nlink;

	gone_handle(call, dir, name, &gone, &nlink);
	if (status == NFS3_OK) {
		meta_changed(dir, wcc);
		meta_name_negative(dir, name, meta_seq());
		if (gone.known)
			lost_link(&gone.fh, nlink);
		else
			meta_expire_linked();   /* whichever file it was lost a link */
	} else {
		nfsd_meta_record(dir, &wcc->after, nfsd_meta_mseq(call));
		meta_name_forget(dir, name);
	}
}

static void rmdir_fixup(struct nfsd_call *call, void *res)
{
	RMDIR3res *r = res;
	RMDIR3args *a = call->args;

	nfsd_meta_unlinked(call, &a->object.dir, a->object.name, r->status,
			   r->status == NFS3_OK ? &r->RMDIR3res_u.resok.dir_wcc :
			   &r->RMDIR3res_u.resfail.dir_wcc);
}

static void rmdir_send(struct nfsd_call *call)
{
	nfsd_forward_with(call, rmdir_fixup);
}

void nfsd_proc_rmdir(struct nfsd_call *call)
{
	RMDIR3args *a = call->args;

	nfsd_meta_lookup_first(call, &a->object.dir, a->object.name, rmdir_send);
}

static bool fh_equal(const nfs_fh3 *a, const nfs_fh3 *b)
{
	return a->data.data_len == b->data.data_len &&
	       memcmp(a->data.data_val, b->data.data_val, a->data.data_len) == 0;
}

/* A RENAME replaced the last link of file `fh` (its link count from the
 * LOOKUP sent just before: a second name of the moved file would make it
 * 2): nothing to write its dirty bytes to any more, as after a REMOVE of
 * it — dropped, and a write-back of them failing from now on is no error. */
static void last_link_replaced(const nfs_fh3 *fh)
{
	struct cache_object *o = nfsd_cache_object(fh);

	if (!o || !cache_has_uncommitted(o))
		return;
	uint64_t n = cache_dirty_drop(o, 0, UINT64_MAX);
	writeback_removed(o);
	log_debug("writeback: object %llu replaced by a RENAME: %llu dirty bytes dropped",
		  (unsigned long long)o->id, (unsigned long long)n);
}

static void rename_fixup(struct nfsd_call *call, void *res)
{
	RENAME3res *r = res;
	RENAME3args *a = call->args;
	struct fh_copy moved, replaced;
	wcc_data *from_wcc = r->status == NFS3_OK ? &r->RENAME3res_u.resok.fromdir_wcc :
			     &r->RENAME3res_u.resfail.fromdir_wcc;
	wcc_data *to_wcc = r->status == NFS3_OK ? &r->RENAME3res_u.resok.todir_wcc :
			   &r->RENAME3res_u.resfail.todir_wcc;
	bool same_dir = fh_equal(&a->from.dir, &a->to.dir);

	uint32_t replaced_nlink;

	fh_copy_of(&moved, &a->from.dir, a->from.name);
	gone_handle(call, &a->to.dir, a->to.name, &replaced, &replaced_nlink);
	if (r->status != NFS3_OK) {
		nfsd_meta_record(&a->from.dir, &from_wcc->after, nfsd_meta_mseq(call));
		if (!same_dir)
			nfsd_meta_record(&a->to.dir, &to_wcc->after, nfsd_meta_mseq(call));
		meta_name_forget(&a->from.dir, a->from.name);
		meta_name_forget(&a->to.dir, a->to.name);
		return;
	}
	meta_changed(&a->from.dir, from_wcc);
	if (!same_dir)
		meta_changed(&a->to.dir, to_wcc);
	/* forgotten, not negative: a RENAME onto another link of the same
	 * file leaves both names (POSIX rename(2)) */
	meta_name_forget(&a->from.dir, a->from.name);
	if (moved.known) {
		meta_name_add(&a->to.dir, a->to.name, &moved.fh, NULL, meta_seq());
		meta_attrs_expire(&moved.fh);   /* its ctime (and a directory's "..") changed */
	} else {
		meta_name_forget(&a->to.dir, a->to.name);
	}
	if (replaced.known && replaced_nlink == 1 &&
	    !(same_dir && strcmp(a->from.name, a->to.name) == 0))
		last_link_replaced(&replaced.fh);
	if (replaced.known && !(moved.known && fh_equal(&moved.fh, &replaced.fh)))
		lost_link(&replaced.fh, replaced_nlink);   /* one link fewer */
	else if (!replaced.known)
		meta_expire_linked();   /* a name we did not know may have been replaced */
}

static void rename_send(struct nfsd_call *call)
{
	nfsd_forward_with(call, rename_fixup);
}

void nfsd_proc_rename(struct nfsd_call *call)
{
	RENAME3args *a = call->args;

	/* which file a RENAME over a name replaces, and whether that is its
	 * last link: asked while some file has data not written back */
	if (nfsd.cache_on && !list_empty(cache_uncommitted_list()))
		lookup_send(call, &a->to.dir, a->to.name, rename_send);
	else
		nfsd_meta_lookup_first(call, &a->to.dir, a->to.name, rename_send);
}

static void link_fixup(struct nfsd_call *call, void *res)
{
	LINK3res *r = res;
	LINK3args *a = call->args;

	if (r->status != NFS3_OK) {
		nfsd_meta_record(&a->link.dir, &r->LINK3res_u.resfail.linkdir_wcc.after, nfsd_meta_mseq(call));
		nfsd_meta_record(&a->file, &r->LINK3res_u.resfail.file_attributes, nfsd_meta_mseq(call));
		meta_name_forget(&a->link.dir, a->link.name);
		return;
	}
	LINK3resok *ok = &r->LINK3res_u.resok;
	meta_changed(&a->link.dir, &ok->linkdir_wcc);
	if (ok->file_attributes.attributes_follow)
		meta_name_add(&a->link.dir, a->link.name, &a->file,
			      &ok->file_attributes.post_op_attr_u.attributes, meta_seq());
	else {
		meta_name_add(&a->link.dir, a->link.name, &a->file, NULL, meta_seq());
		meta_attrs_expire(&a->file);
	}
	nfsd_post_op_snoop(call, &a->file, &ok->file_attributes);
}

void nfsd_proc_link(struct nfsd_call *call)
{
	nfsd_forward_with(call, link_fixup);
}
