/*
 * handlers.h — the procedure handlers named in the dispatch table
 * (daemon/procs.c).  Each takes over a decoded call and answers it exactly
 * once through daemon/call.h; none blocks.
 */
#ifndef NFSCACHED_HANDLERS_H
#define NFSCACHED_HANDLERS_H

#include <stdint.h>

#include "daemon/upstream.h"

struct nfsd_call;
struct proc_desc;

/* One row of the dispatch table. */
struct nfsd_proc {
	/* Takes over the call: answers it (now or later) or drops it, exactly
	 * once, through the call_* functions of daemon/call.h. */
	void (*handler)(struct nfsd_call *call);
	/* Releases what the handler holds for the call (call->held), when the
	 * call is freed; NULL when it holds nothing. */
	void (*free)(struct nfsd_call *call);
};

/* The row of a procedure that proto/proc.h's proc_lookup() found; never
 * NULL. */
const struct nfsd_proc *nfsd_proc_of(const struct proc_desc *desc);

/* Forward unchanged; the upstream's result goes back unchanged. */
void nfsd_proc_forward(struct nfsd_call *call);

/* Forward, and run `fixup(call, res)` on a successful upstream result before
 * it is encoded (coherency updates, clamps); answers JUKEBOX or an RPC error
 * when the upstream gave no result. */
void nfsd_forward_with(struct nfsd_call *call, void (*fixup)(struct nfsd_call *call, void *res));

/* READ (nfs_read.c): served from the cache when every requested byte is
 * valid (wholly or partially uptodate pages), else fetched page-aligned with
 * readahead on sequential access, stored, and answered; count bounded by
 * what the proxy accepts (a short read is legal, RFC 1813 §3.3.6). */
void nfsd_proc_read(struct nfsd_call *call);

/* WRITE (nfs_write.c): in write-back mode an UNSTABLE WRITE the writer may
 * make is stored locally as dirty data and answered with the daemon's
 * verifier; others go upstream (after the file's dirty data) and their
 * bytes become valid in the cache. */
void nfsd_proc_write(struct nfsd_call *call);

/* COMMIT (nfs_write.c): in write-back mode answered once the file's dirty
 * data is committed upstream, with the daemon's verifier, or the error of
 * a failed write-back; else forwarded. */
void nfsd_proc_commit(struct nfsd_call *call);

/* SETATTR (nfs_write.c): forwarded after the file's dirty data; a new size
 * cuts the cached data. */
void nfsd_proc_setattr(struct nfsd_call *call);

/* REMOVE (nfs_write.c): forwarded; removing a file's last link drops its
 * dirty data. */
void nfsd_proc_remove(struct nfsd_call *call);

/* Free functions (nfs_write.c): a WRITE or SETATTR forwarded to the upstream
 * is one of the object's changes in flight until its call is freed; a REMOVE
 * of a file's last link holds the object until then. */
void nfsd_change_free(struct nfsd_call *call);
void nfsd_remove_free(struct nfsd_call *call);

/*
 * Attributes of cache object `o` (file handle `fh`) older than
 * cache.acregmax: returns 1 when the caller must wait — in `w` for the
 * GETATTR already in flight (woken by cache_wake), or for the one sent now
 * with `cred` (`args` must live until `done(priv, ...)`, which clears
 * o->getattr_busy and cache_unpin()s `o`; `*seq` is the change sequence
 * it was sent at); 0 when they are fresh.
 */
struct cache_object;
struct cache_waiter;
struct rpc_cred;
struct GETATTR3args;
int nfsd_revalidate(struct cache_object *o, const struct nfs_fh3 *fh, const struct rpc_cred *cred,
		    struct cache_waiter *w, struct GETATTR3args *args, uint64_t *seq,
		    upstream_done_fn done, void *priv);

/* A successful ACCESS result (RFC 1813 §3.3.4) for `o`, asked by `cred`
 * for the bits `asked` and sent at change sequence `seq`: its grants and
 * attributes go to the cache.  `r` is only read. */
struct ACCESS3res;
void nfsd_access_snoop(struct cache_object *o, const struct rpc_cred *cred, uint32_t asked,
		       const struct ACCESS3res *r, uint64_t seq);

/* The cache object of a file handle, or NULL (no cache, not cached). */
struct nfs_fh3;
struct cache_object *nfsd_cache_object(const struct nfs_fh3 *fh);

/* GETATTR, LOOKUP, ACCESS, READDIRPLUS, COMMIT...: forwarded; their
 * attributes feed the cache's coherency checks (and ACCESS results its
 * per-credential permissions). */
void nfsd_proc_attrs(struct nfsd_call *call);

/* READDIRPLUS result: the entries' attributes feed the cache likewise. */
struct READDIRPLUS3res;
void nfsd_readdirplus_snoop(struct nfsd_call *call, struct READDIRPLUS3res *res);

/* READDIR/READDIRPLUS: reply size bounded likewise. */
void nfsd_proc_readdir(struct nfsd_call *call);

/* FSINFO: forwarded; rtmax/rtpref/wtmax/wtpref clamped to the proxy's limit. */
void nfsd_proc_fsinfo(struct nfsd_call *call);

/* 1 when `path` is one of the paths of upstream.exports ("" = any; a
 * trailing slash names the same export), else 0. */
int nfsd_export_allowed(const char *path);

/* MNT: refused with MNT3ERR_ACCES for a path outside upstream.exports. */
void nfsd_proc_mnt(struct nfsd_call *call);

/* EXPORT: the upstream's list, restricted to upstream.exports. */
void nfsd_proc_export(struct nfsd_call *call);

#endif
