/*
 * nfs_common.h — what the NFS procedure handlers (handlers.c, nfs_read.c,
 * nfs_write.c, nfs_attrs.c) and write-back share, and nothing else uses:
 * forwarding a call with a fixup of its result, the per-call state a
 * handler hangs off its call, the cache object of a file handle, one
 * GETATTR that refreshes an object's attributes (and revalidation built on
 * it), the snooping of ACCESS and READDIRPLUS results, and the export check
 * (also used by ctl_exports.c).  The dispatch table sees daemon/handlers.h
 * only.
 *
 * Async contract (STYLE.md): a function taking a callback returns 0 when
 * the callback fires exactly once, later, never from inside the call, and
 * -errno when it never will; a predicate that may make its caller wait
 * returns bool, true = the caller waits and will be woken.
 */
#ifndef NFSCACHED_NFS_COMMON_H
#define NFSCACHED_NFS_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "daemon/upstream.h"
#include "proto/nfs.h"

struct nfsd_call;
struct nfsd_meta_op;


/* Run on a successful upstream result of a forwarded call before it is
 * encoded (coherency updates, clamps); may change `res`. */
typedef void (*nfsd_fixup_fn)(struct nfsd_call *call, void *res);

/*
 * What a handler keeps for its call until the call is freed: created by
 * nfsd_call_state() (only in rows whose free function is
 * nfsd_call_state_free), released by nfsd_call_state_free().
 */
struct nfsd_call_state {
	nfsd_fixup_fn fixup;            /* on the upstream's result; NULL = none */
	uint64_t seq;                   /* cache_seq() when the call was forwarded */
	struct cache_object *held;      /* held for the call (WRITE/SETATTR: one of its
					 * changes in flight; REMOVE: pinned); NULL = none */
	void (*unhold)(struct cache_object *o);  /* releases `held` when the call is freed */
	uint64_t mseq;                  /* meta_seq() when the call was forwarded */
	enum upstream_status upstream_st;   /* how the forwarded call ended (once it did) */
	struct nfsd_meta_op *meta;      /* nfs_meta.c's, NULL = none; released with the state */
	struct cache_waiter resolve;    /* nfsd_call_run(): waiting for the object to be resident */
	struct nfsd_call *call;         /* nfsd_call_run(): the call, while it waits */
};

/* The call's handler state, created (zeroed) on first use.  Never NULL. */
struct nfsd_call_state *nfsd_call_state(struct nfsd_call *call);

/* `o`, which the caller just took a hold on, is held until the call is
 * freed: then unhold(o) releases it.  One hold per call. */
void nfsd_call_hold(struct nfsd_call *call, struct cache_object *o,
		    void (*unhold)(struct cache_object *o));

/*
 * Forward the call to the upstream with the caller's credential; on a
 * result, run `fixup(call, res)` (NULL: none) and answer with it; answer
 * JUKEBOX (no answer in upstream.timeout_ms), AUTH_ERROR or SYSTEM_ERR
 * when the upstream gave no result.  The call is answered exactly once,
 * later.
 */
void nfsd_forward_with(struct nfsd_call *call, nfsd_fixup_fn fixup);

/* The cache object of a file handle, or NULL (cache off, a handle the cache
 * cannot hold, not cached). */
struct cache_object *nfsd_cache_object(const nfs_fh3 *fh);

/* Can the cache hold this handle (1..NFS3_FHSIZE_MAX bytes)? */
bool nfsd_fh_cacheable(const nfs_fh3 *fh);

/*
 * One GETATTR (RFC 1813 §3.3.1) of a cache object's attributes, its answer
 * fed to the cache.  Lives in the caller's per-call state until `done`.
 */
struct nfsd_getattr;
typedef void (*nfsd_getattr_fn)(struct nfsd_getattr *g, enum upstream_status st,
				const GETATTR3res *r);
struct nfsd_getattr {
	struct cache_object *o;
	uint64_t seq;                   /* cache_seq() when it was sent */
	bool revalidating;              /* sent by nfsd_revalidate(): holds o->getattr_busy */
	nfsd_getattr_fn done;
	GETATTR3args args;              /* o's handle: valid while the call is upstream */
};

/*
 * Send a GETATTR of `o` (its handle must live until `done`) as `cred`.
 * done(g, st, r) fires exactly once, later: `r` is the result when st is
 * UPSTREAM_OK (valid during the callback only), and a successful one has
 * already gone to cache_attrs_update() with the sequence it was sent at.
 * `done` may free `g`.  Never fails.
 */
void nfsd_getattr_send(struct nfsd_getattr *g, struct cache_object *o,
		       const struct rpc_cred *cred, nfsd_getattr_fn done);

/*
 * Are `o`'s attributes older than cache.acregmax?  false: they are fresh,
 * go ahead.  true: the caller waits — in `w` for the GETATTR already in
 * flight (woken by cache_wake()), or for the one sent now in `g` with
 * `cred`: done(g, ...) fires exactly once, later, as nfsd_getattr_send()'s
 * (o->getattr_busy cleared first), and the object's other waiters are woken
 * once it returns.
 */
bool nfsd_revalidate(struct cache_object *o, const struct rpc_cred *cred, struct cache_waiter *w,
		     struct nfsd_getattr *g, nfsd_getattr_fn done);

/* One ACCESS (RFC 1813 §3.3.4) a handler asks on its own behalf.  Lives in
 * the caller's per-call state until its callback. */
struct nfsd_access {
	uint64_t seq;                   /* cache_seq() when it was sent */
	ACCESS3args args;               /* the handle must live until the callback */
};

/* Ask ACCESS of `fh` for the bits `asked` (ACCESS3_READ...) as `cred`:
 * done(priv, ...) fires exactly once, later.  Never fails. */
void nfsd_access_send(struct nfsd_access *q, const nfs_fh3 *fh, uint32_t asked,
		      const struct rpc_cred *cred, upstream_done_fn done, void *priv);

/* A successful result `r` of the ACCESS `q` for `o`, asked by `cred`: its
 * grants and attributes go to the cache.  `r` is only read. */
void nfsd_access_snoop(struct cache_object *o, const struct rpc_cred *cred,
		       const struct nfsd_access *q, const ACCESS3res *r);

/* Attributes `pa` of file handle `fh` in the result of a forwarded call:
 * they feed its object's coherency data (at the call's sequence), and while
 * it has dirty data the client sees its local size and times in them. */
void nfsd_post_op_snoop(struct nfsd_call *call, const nfs_fh3 *fh, post_op_attr *pa);

/* Fixup of READDIRPLUS (a READDIRPLUS3res): the entries' attributes feed the
 * cache likewise. */
void nfsd_readdirplus_snoop(struct nfsd_call *call, void *res);

/* true when `path` is one of the paths of upstream.exports ("" = any; a
 * trailing slash names the same export). */
bool nfsd_export_allowed(const char *path);

/* nfs_attrs.c: the data cache's side of a GETATTR, LOOKUP, ACCESS or CREATE
 * result (a fixup): attributes to the coherency checks, ACCESS grants, a new
 * file's object; dirty files' attributes patched. */
void nfsd_attrs_snoop(struct nfsd_call *call, void *res);

/* nfs_meta.c: release a handler's namespace-cache state (from
 * nfsd_call_state_free). */
void nfsd_meta_op_free(struct nfsd_meta_op *m);

/* nfs_names.c: `name` left directory `dir` through a REMOVE or RMDIR of ours
 * answered `status` with `wcc`: the namespace cache learns it at once. */
void nfsd_meta_unlinked(struct nfsd_call *call, const nfs_fh3 *dir, const char *name,
			nfsstat3 status, wcc_data *wcc);

/* nfs_names.c: before a call takes `name` away from `dir` (REMOVE, RMDIR, a
 * RENAME over it), learn which object it names when the namespace cache
 * does not know (one LOOKUP as the caller), so that the object's
 * attributes and, for its last link, cached data stop being trusted once
 * the call succeeds; then then(call).  then() may run at once. */
void nfsd_meta_lookup_first(struct nfsd_call *call, const nfs_fh3 *dir, const char *name,
			    void (*then)(struct nfsd_call *call));

/* A WRITE, SETATTR or COMMIT of `fh` forwarded by `call` was answered
 * `status` with `wcc`: the namespace cache takes the change as ours (or,
 * when it failed, records the attributes after). */
void nfsd_meta_change_done(struct nfsd_call *call, const nfs_fh3 *fh, nfsstat3 status,
			   const wcc_data *wcc);

/* The same for write-back's own WRITEs and COMMITs of `o`; `explained`:
 * cache_change_done() took it as ours (other WRITEs of ours in flight
 * explain pre-op attributes that are not the recorded ones). */
void nfsd_meta_object_changed(const struct cache_object *o, const wcc_data *wcc, bool explained);

/* nfs_read.c: release o->rd (the free hook, nfs_common.c). */
void nfsd_read_state_free(struct cache_object *o);

#endif
