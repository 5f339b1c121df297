/*
 * nfs_write.c — WRITE, COMMIT, SETATTR and REMOVE with the cache
 * (DESIGN.md "Write-back", RFC 1813 §3.3.7, §3.3.21).
 *
 * cache.write_mode = writeback: an UNSTABLE WRITE is taken locally — when
 * the writer's cached ACCESS grants MODIFY (and EXTEND when the file grows)
 * — stored in the backing file as a dirty range and answered UNSTABLE with
 * the daemon's verifier.  Every other WRITE goes upstream once the object's
 * dirty data is (so that an older local byte never lands after a newer one),
 * as FILE_SYNC when the client asked UNSTABLE: nothing of it then depends
 * on a COMMIT, and its reply carries the daemon's verifier too.  Dirty data
 * of a second writer (another credential) is written back first, as the
 * Linux client's nfs_flush_incompatible() does; so one object has one
 * write-back credential.  Within a page, separate dirty ranges are kept as
 * they are (never widened over bytes nobody wrote here: another writer's
 * bytes in between stay).
 *
 * COMMIT answers once every dirty byte of the file is committed upstream,
 * an error when a write-back failed; with cache.commit = local, once they
 * are on stable local storage and in the index (cache_sync(): no upstream
 * call), always with the daemon's verifier, write-back going on in the
 * background (writeback.c keeps what the upstream refuses).  SETATTR writes the file's dirty data
 * back first (Linux nfs_setattr); REMOVE of the file's last link drops it.
 *
 * cache.write_mode = writethrough: WRITEs go upstream and their bytes are
 * copied into the cache; COMMIT is the upstream's.  Dirty data the index
 * kept from a run in write-back mode is written back first.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfsd.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"

/* What a WRITE taken locally asks ACCESS for (RFC 1813 §3.3.4). */
#define WRITE_ACCESS_ASKED (ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND)

/* One WRITE, COMMIT, SETATTR or REMOVE that waits for something first. */
struct write_op {
	struct nfsd_call *call;
	struct cache_object *o;
	struct cache_waiter waiter;          /* a GETATTR, the index, room for dirty data */
	struct writeback_waiter wbw;         /* the object's write-back */
	bool access_asked;                   /* ACCESS was asked once for it */
	union {
		struct nfsd_getattr getattr;     /* revalidation */
		struct nfsd_access access;
		LOOKUP3args lookup;
	} args;
};

static bool writeback_mode(void)
{
	return nfsd.cache_on && nfsd.cfg.cache.write_mode == WRITE_MODE_WRITEBACK;
}

/* cache.commit = local (read at each COMMIT: a reload applies at once). */
static bool commit_local(void)
{
	return writeback_mode() && nfsd.cfg.cache.commit == COMMIT_LOCAL;
}

static struct write_op *op_new(struct nfsd_call *call, struct cache_object *o)
{
	struct write_op *op = xcalloc(1, sizeof(*op));
	op->call = call;
	op->o = o;
	if (o)
		cache_pin(o);
	return op;
}

static void op_free(struct write_op *op)
{
	if (op->o)
		cache_unpin(op->o);
	free(op);
}

static void op_jukebox(struct write_op *op)
{
	struct nfsd_call *call = op->call;

	op_free(op);
	call_reply_jukebox(call);
}

static void commit_fixup(struct nfsd_call *call, void *res);

/* ---- forwarded WRITEs ------------------------------------------------- */

/* Count our changes in flight: their replies may come back in any order. */
static void change_ends(struct cache_object *o)
{
	cache_change_end(o);
}

static void change_begins(struct nfsd_call *call, const nfs_fh3 *fh)
{
	struct cache_object *o = nfsd_cache_object(fh);

	if (o) {
		cache_change_begin(o);
		nfsd_call_hold(call, o, change_ends);
	}
}

/* A WRITE that went upstream: its bytes become valid (write-through); in
 * write-back mode the reply carries the daemon's verifier. */
static void write_fixup(struct nfsd_call *call, void *res)
{
	WRITE3res *r = res;
	WRITE3args *a = call->args;

	nfsd_meta_change_done(call, &a->file, r->status, r->status == NFS3_OK ?
			      &r->WRITE3res_u.resok.file_wcc : &r->WRITE3res_u.resfail.file_wcc);
	if (writeback_mode() && r->status == NFS3_OK)
		memcpy(r->WRITE3res_u.resok.verf, nfsd.write_verf, NFS3_WRITEVERFSIZE);
	if (r->status != NFS3_OK || !nfsd.cache_on || !nfsd_fh_cacheable(&a->file))
		return;
	const post_op_attr *post = &r->WRITE3res_u.resok.file_wcc.after;
	if (!post->attributes_follow || post->post_op_attr_u.attributes.type != NF3REG)
		return;
	struct cache_object *o = cache_get((const uint8_t *)a->file.data.data_val, a->file.data.data_len);
	if (!o)
		return;   /* not resolved: the index may hold it (nfsd_call_run) */
	uint32_t written = r->WRITE3res_u.resok.count;
	if (written > a->data.data_len)
		written = a->data.data_len;
	if (cache_change_done(o, &r->WRITE3res_u.resok.file_wcc) &&
	    cache_store(o, a->offset, a->data.data_val, written, cache_seq()) == 0)
		stats.cache_write_bytes += written;
	cache_patch_attrs(o, &r->WRITE3res_u.resok.file_wcc.after.post_op_attr_u.attributes);
}

static void write_send(struct nfsd_call *call)
{
	WRITE3args *a = call->args;

	if (writeback_mode() && a->stable == UNSTABLE)
		a->stable = FILE_SYNC;   /* answered with our verifier: must not need a COMMIT */
	change_begins(call, &a->file);
	nfsd_forward_with(call, write_fixup);
}

static void forward_after_flush(struct writeback_waiter *w, int status)
{
	struct write_op *op = container_of(w, struct write_op, wbw);
	struct nfsd_call *call = op->call;

	if (status < 0) {
		op_jukebox(op);   /* the older bytes are not upstream yet */
		return;
	}
	op_free(op);
	if (call->desc->proc == NFS3PROC_WRITE)
		write_send(call);
	else
		nfsd_forward_with(call, commit_fixup);
}

/* Send the call upstream once the object's dirty bytes are there. */
static void forward_flushed(struct write_op *op)
{
	op->wbw.done = forward_after_flush;
	if (!op->o || writeback_flush(op->o, &op->wbw) != 0)
		forward_after_flush(&op->wbw, 0);   /* nothing to write back */
}

/* ---- WRITE taken locally ---------------------------------------------- */

static void write_try(struct write_op *op);

static void op_wake(struct cache_waiter *w)
{
	write_try(container_of(w, struct write_op, waiter));
}

static void retry_after_flush(struct writeback_waiter *w, int status)
{
	struct write_op *op = container_of(w, struct write_op, wbw);

	if (status < 0)
		op_jukebox(op);
	else
		write_try(op);
}

static bool cred_same(const struct rpc_cred *a, const struct rpc_cred *b)
{
	return a->uid == b->uid && a->gid == b->gid && a->gids_len == b->gids_len &&
	       memcmp(a->gids, b->gids, a->gids_len * sizeof(a->gids[0])) == 0;
}

static void write_revalidated(struct nfsd_getattr *g, enum upstream_status st, const GETATTR3res *r)
{
	struct write_op *op = container_of(g, struct write_op, args.getattr);

	(void)r;
	if (st == UPSTREAM_TIMEOUT)
		op_jukebox(op);        /* no upstream: forwarding would wait as long again */
	else if (cache_attrs_fresh(op->o))
		write_try(op);
	else
		forward_flushed(op);   /* the upstream decides */
}

static void write_access_done(void *priv, enum upstream_status st, void *res)
{
	struct write_op *op = priv;
	ACCESS3res *r = res;

	if (st == UPSTREAM_OK && r->status == NFS3_OK)
		nfsd_access_snoop(op->o, &op->call->cred, &op->args.access, r);
	if (st == UPSTREAM_TIMEOUT)
		op_jukebox(op);
	else
		write_try(op);
}

static void write_first_access_done(void *priv, enum upstream_status st, void *res)
{
	struct write_op *op = priv;
	ACCESS3res *r = res;
	WRITE3args *a = op->call->args;

	if (st == UPSTREAM_OK && r->status == NFS3_OK) {
		post_op_attr *pa = &r->ACCESS3res_u.resok.obj_attributes;
		if (pa->attributes_follow && pa->post_op_attr_u.attributes.type == NF3REG) {
			struct cache_object *o = cache_get((const uint8_t *)a->file.data.data_val,
							   a->file.data.data_len);
			if (o) {
				nfsd_access_snoop(o, &op->call->cred, &op->args.access, r);
				op->o = o;
				cache_pin(o);
				write_try(op);
				return;
			}
			/* no longer known to be absent from the index: the upstream's */
		}
	}
	if (st == UPSTREAM_TIMEOUT)
		op_jukebox(op);
	else
		forward_flushed(op);   /* not a regular file, an error: the upstream answers */
}

static void write_reply_local(struct write_op *op, const wcc_attr *pre)
{
	struct nfsd_call *call = op->call;
	WRITE3args *a = call->args;
	struct cache_object *o = op->o;
	WRITE3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	WRITE3resok *ok = &res.WRITE3res_u.resok;
	ok->file_wcc.before.attributes_follow = 1;
	ok->file_wcc.before.pre_op_attr_u.attributes = *pre;
	ok->file_wcc.after.attributes_follow = 1;
	cache_object_attrs(o, &ok->file_wcc.after.post_op_attr_u.attributes);
	cache_patch_attrs(o, &ok->file_wcc.after.post_op_attr_u.attributes);
	ok->count = a->count;
	ok->committed = UNSTABLE;
	memcpy(ok->verf, nfsd.write_verf, NFS3_WRITEVERFSIZE);
	op_free(op);
	call_reply(call, &res);
}

static void write_try(struct write_op *op)
{
	struct cache_object *o = op->o;
	WRITE3args *a = op->call->args;
	const struct rpc_cred *cred = &op->call->cred;

	if (nfsd_revalidate(o, cred, &op->waiter, &op->args.getattr, write_revalidated))
		return;
	uint64_t end = a->offset + a->count;
	uint32_t need = ACCESS3_MODIFY | (end > cache_client_size(o) ? ACCESS3_EXTEND : 0);
	if (!cache_access_granted(o, cred, need)) {
		if (op->access_asked) {
			forward_flushed(op);   /* not granted: the upstream gives the error */
			return;
		}
		op->access_asked = true;
		nfsd_access_send(&op->args.access, &a->file, WRITE_ACCESS_ASKED, cred,
				 write_access_done, op);
		return;
	}
	if (cache_has_uncommitted(o) && !cred_same(cache_wb_cred(o), cred)) {
		/* another writer's dirty data goes first, with its credential */
		op->wbw.done = retry_after_flush;
		if (writeback_flush(o, &op->wbw) == 0)
			return;   /* retry_after_flush() goes on */
	}
	if (a->offset > cache_client_size(o) + CACHE_WRITE_GAP_MAX) {
		forward_flushed(op);   /* a far hole: not filled with zeros here */
		return;
	}
	if (op->waiter.timed_out) {
		op_jukebox(op);   /* no room for its dirty bytes: the client retries */
		return;
	}
	if (cache_write_must_wait(o, &op->waiter) || writeback_throttle(a->count, &op->waiter))
		return;   /* op_wake() tries again */
	wcc_attr pre;
	fattr3 before;
	cache_object_attrs(o, &before);
	cache_patch_attrs(o, &before);
	pre.size = before.size;
	pre.mtime = before.mtime;
	pre.ctime = before.ctime;
	if (cache_write_local(o, a->offset, a->data.data_val, a->count, cred) != 0) {
		forward_flushed(op);   /* no room in the cache: written through */
		return;
	}
	writeback_dirtied(o);
	write_reply_local(op, &pre);
}

void nfsd_proc_write(struct nfsd_call *call)
{
	WRITE3args *a = call->args;
	struct cache_object *o = nfsd_cache_object(&a->file);

	if (!writeback_mode()) {
		/* dirty data from before a restart in write-back mode goes first */
		if (o && cache_has_uncommitted(o))
			forward_flushed(op_new(call, o));
		else
			write_send(call);
		return;
	}
	struct write_op *op = op_new(call, o);
	op->waiter.wake = op_wake;
	if (a->stable != UNSTABLE || a->count == 0 || a->count != a->data.data_len ||
	    a->offset > (uint64_t)INT64_MAX - a->count || !nfsd_fh_cacheable(&a->file)) {
		/* a stable write, or one the cache would answer differently (a
		 * count that is not the data's length, RFC 1813 §3.3.7, is
		 * refused by some servers and taken by others): the upstream's */
		forward_flushed(op);
		return;
	}
	if (!o) {
		/* a file not seen yet: one ACCESS tells whether it is a regular
		 * file (its attributes) and whether this writer may write it */
		op->access_asked = true;
		nfsd_access_send(&op->args.access, &a->file, WRITE_ACCESS_ASKED, &call->cred,
				 write_first_access_done, op);
		return;
	}
	write_try(op);
}

/* ---- COMMIT ----------------------------------------------------------- */

static void commit_fixup(struct nfsd_call *call, void *res)
{
	COMMIT3res *r = res;
	struct cache_object *o = nfsd_cache_object(&((COMMIT3args *)call->args)->file);
	post_op_attr *post = &r->COMMIT3res_u.resok.file_wcc.after;

	nfsd_meta_change_done(call, &((COMMIT3args *)call->args)->file, r->status,
			      r->status == NFS3_OK ? &r->COMMIT3res_u.resok.file_wcc :
			      &r->COMMIT3res_u.resfail.file_wcc);
	if (r->status != NFS3_OK)
		return;
	if (o && post->attributes_follow)
		cache_attrs_update(o, &post->post_op_attr_u.attributes, nfsd_call_state(call)->seq);
	if (writeback_mode()) {
		/* WRITEs of this file were answered with our verifier (forwarded
		 * ones as FILE_SYNC): the same one here */
		memcpy(r->COMMIT3res_u.resok.verf, nfsd.write_verf, NFS3_WRITEVERFSIZE);
		if (o && post->attributes_follow)
			cache_patch_attrs(o, &post->post_op_attr_u.attributes);
	}
}

static nfsstat3 commit_error(uint32_t err)
{
	switch (err) {
	case NFS3ERR_NOSPC:
	case NFS3ERR_DQUOT:
	case NFS3ERR_STALE:
	case NFS3ERR_ROFS:
	case NFS3ERR_ACCES:
	case NFS3ERR_PERM:
	case NFS3ERR_FBIG:
		return (nfsstat3)err;
	default:
		return NFS3ERR_IO;
	}
}

static void commit_after_flush(struct writeback_waiter *w, int status)
{
	struct write_op *op = container_of(w, struct write_op, wbw);
	struct nfsd_call *call = op->call;
	struct cache_object *o = op->o;
	COMMIT3res res;

	if (status < 0) {
		op_jukebox(op);   /* the upstream did not answer: the client asks again */
		return;
	}
	memset(&res, 0, sizeof(res));
	/* reported once, as the Linux client reports it to one fsync */
	uint32_t err = writeback_take_error(o);
	wcc_data *wcc = err ? &res.COMMIT3res_u.resfail.file_wcc : &res.COMMIT3res_u.resok.file_wcc;
	if (o->have_attrs) {
		wcc->after.attributes_follow = 1;
		cache_object_attrs(o, &wcc->after.post_op_attr_u.attributes);
		cache_patch_attrs(o, &wcc->after.post_op_attr_u.attributes);
	}
	if (err) {
		res.status = commit_error(err);
	} else {
		res.status = NFS3_OK;
		memcpy(res.COMMIT3res_u.resok.verf, nfsd.write_verf, NFS3_WRITEVERFSIZE);
	}
	op_free(op);
	call_reply(call, &res);
}

/* cache_sync() is done: the bytes are stable locally (or the cache closes
 * first: the client asks again). */
static void commit_synced(void *arg, int rc)
{
	struct write_op *op = arg;

	commit_after_flush(&op->wbw, rc == 0 ? 0 : -ECANCELED);
}

/* A range past what a file can hold, or one whose end wraps (knfsd:
 * NFS3ERR_INVAL; nfs-ganesha: NFS3_OK for an offset past 2^63). */
static bool commit_range_odd(const COMMIT3args *a)
{
	return a->offset > (uint64_t)INT64_MAX ||
	       (a->count != 0 && a->offset + a->count - 1 > (uint64_t)INT64_MAX);
}

/* The dirty bytes are upstream (or a failed write-back is reported, as to
 * any COMMIT): the odd range goes there as it is. */
static void commit_odd_after_flush(struct writeback_waiter *w, int status)
{
	struct write_op *op = container_of(w, struct write_op, wbw);
	struct nfsd_call *call = op->call;

	if (status < 0 || writeback_error(op->o)) {
		commit_after_flush(w, status);
		return;
	}
	op_free(op);
	nfsd_forward_with(call, commit_fixup);
}

void nfsd_proc_commit(struct nfsd_call *call)
{
	COMMIT3args *a = call->args;
	struct cache_object *o = nfsd_cache_object(&a->file);

	if (!o) {
		nfsd_forward_with(call, commit_fixup);
		return;
	}
	if (!writeback_mode()) {
		forward_flushed(op_new(call, o));
		return;
	}
	/* the whole file, whatever range was asked: one pass holds it all */
	struct write_op *op = op_new(call, o);
	if (commit_range_odd(a)) {
		/* servers judge such a range differently: the upstream's answer,
		 * once the dirty bytes are there */
		op->wbw.done = commit_odd_after_flush;
		if (writeback_flush(o, &op->wbw) != 0)
			commit_odd_after_flush(&op->wbw, 0);   /* nothing to write back */
		return;
	}
	op->wbw.done = commit_after_flush;
	if (commit_local()) {
		/* nothing of it waits for the upstream */
		if (cache_sync(o, commit_synced, op) != 0)
			commit_after_flush(&op->wbw, 0);   /* nothing uncommitted */
		return;
	}
	if (writeback_flush(o, &op->wbw) != 0)
		commit_after_flush(&op->wbw, 0);   /* nothing to write back */
}

/* ---- SETATTR ---------------------------------------------------------- */

static void setattr_fixup(struct nfsd_call *call, void *res)
{
	SETATTR3res *r = res;
	SETATTR3args *a = call->args;
	struct cache_object *o = nfsd_cache_object(&a->object);

	nfsd_meta_change_done(call, &a->object, r->status, r->status == NFS3_OK ?
			      &r->SETATTR3res_u.resok.obj_wcc : &r->SETATTR3res_u.resfail.obj_wcc);
	if (!o || r->status != NFS3_OK)
		return;   /* nothing changed */
	cache_change_done(o, &r->SETATTR3res_u.resok.obj_wcc);
	if (a->new_attributes.size.set_it)
		cache_truncate(o, a->new_attributes.size.set_size3_u.size);
	if (r->SETATTR3res_u.resok.obj_wcc.after.attributes_follow)
		cache_patch_attrs(o, &r->SETATTR3res_u.resok.obj_wcc.after.post_op_attr_u.attributes);
}

static void setattr_send(struct nfsd_call *call)
{
	change_begins(call, &((SETATTR3args *)call->args)->object);
	nfsd_forward_with(call, setattr_fixup);
}

static void setattr_after_flush(struct writeback_waiter *w, int status)
{
	struct write_op *op = container_of(w, struct write_op, wbw);
	struct nfsd_call *call = op->call;

	if (status < 0) {
		op_jukebox(op);
		return;
	}
	op_free(op);
	setattr_send(call);
}

void nfsd_proc_setattr(struct nfsd_call *call)
{
	struct cache_object *o = nfsd_cache_object(&((SETATTR3args *)call->args)->object);

	if (!o || !cache_has_uncommitted(o)) {
		setattr_send(call);
		return;
	}
	/* size, times, mode, owner: the dirty data goes first (Linux nfs_setattr),
	 * so that it lands under the new attributes, never after them */
	struct write_op *op = op_new(call, o);
	op->wbw.done = setattr_after_flush;
	if (writeback_flush(o, &op->wbw) != 0)
		setattr_after_flush(&op->wbw, 0);   /* nothing to write back */
}

/* ---- REMOVE ----------------------------------------------------------- */

static void remove_unpin(struct cache_object *o)
{
	cache_unpin(o);
}

static void remove_fixup(struct nfsd_call *call, void *res)
{
	REMOVE3res *r = res;
	REMOVE3args *a = call->args;
	struct cache_object *o = nfsd_call_state(call)->held;

	nfsd_meta_unlinked(call, &a->object.dir, a->object.name, r->status,
			   r->status == NFS3_OK ? &r->REMOVE3res_u.resok.dir_wcc :
			   &r->REMOVE3res_u.resfail.dir_wcc);
	if (o && r->status == NFS3_OK) {
		/* its last link: nothing to write the dirty bytes to any more */
		uint64_t n = cache_dirty_drop(o, 0, UINT64_MAX);
		writeback_removed(o);
		log_debug("writeback: object %llu removed: %llu dirty bytes dropped",
			  (unsigned long long)o->id, (unsigned long long)n);
	}
}

static void remove_lookup_done(void *priv, enum upstream_status st, void *res)
{
	struct write_op *op = priv;
	struct nfsd_call *call = op->call;
	LOOKUP3res *r = res;

	if (st == UPSTREAM_OK && r->status == NFS3_OK) {
		LOOKUP3resok *ok = &r->LOOKUP3res_u.resok;
		struct cache_object *o = nfsd_cache_object(&ok->object);
		if (o && cache_has_uncommitted(o) && ok->obj_attributes.attributes_follow &&
		    ok->obj_attributes.post_op_attr_u.attributes.nlink <= 1) {
			cache_pin(o);   /* until the call is freed */
			nfsd_call_hold(call, o, remove_unpin);
		}
	}
	op_free(op);
	nfsd_forward_with(call, remove_fixup);
}

static void remove_send(struct nfsd_call *call)
{
	REMOVE3args *a = call->args;

	if (!writeback_mode() || list_empty(cache_uncommitted_list())) {
		nfsd_forward_with(call, remove_fixup);
		return;
	}
	/* which file goes: a LOOKUP, only while some file has dirty data */
	struct write_op *op = op_new(call, NULL);
	op->args.lookup.what = a->object;
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_LOOKUP), &op->args.lookup, &call->cred,
		      remove_lookup_done, op);
}

void nfsd_proc_remove(struct nfsd_call *call)
{
	REMOVE3args *a = call->args;

	nfsd_meta_lookup_first(call, &a->object.dir, a->object.name, remove_send);
}
