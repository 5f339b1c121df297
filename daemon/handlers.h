/*
 * handlers.h — the procedure handlers named in the dispatch table
 * (daemon/procs.c), and their free functions.  Each handler takes over a
 * decoded call and answers it exactly once through daemon/call.h; none
 * blocks.  What the handlers share among themselves is in
 * daemon/nfs_common.h.
 */
#ifndef NFSCACHED_HANDLERS_H
#define NFSCACHED_HANDLERS_H

struct nfsd_call;
struct proc_desc;

/* One row of the dispatch table. */
struct nfsd_proc {
	/* Takes over the call: answers it (now or later) or drops it, exactly
	 * once, through the call_* functions of daemon/call.h. */
	void (*handler)(struct nfsd_call *call);
	/* Releases what the handler holds for the call (call->hstate), when
	 * the call is freed; NULL when it never holds anything. */
	void (*free)(struct nfsd_call *call);
};

/* The row of a procedure that proto/proc.h's proc_lookup() found; never
 * NULL. */
const struct nfsd_proc *nfsd_proc_of(const struct proc_desc *desc);

/*
 * Run the call's handler: at once, or, for a call whose handler needs the
 * cache object of its file (READ, WRITE, COMMIT, SETATTR) when that object
 * is only in the index, once a lookup made it resident (cache_resolve()).
 * Takes over the call as a handler does.
 */
void nfsd_call_run(struct nfsd_call *call);

/* Forward unchanged; the upstream's result goes back unchanged. */
void nfsd_proc_forward(struct nfsd_call *call);

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

/*
 * The namespace cache's procedures (nfs_meta.c; cache/meta.h): answered
 * locally while what the upstream said is fresh and the caller's own grants
 * allow it, else forwarded with the answer recorded (and its attributes fed
 * to the data cache's coherency checks).
 *
 * NULL (NFS and MOUNT): answered by nfscached itself.  GETATTR: one GETATTR
 * per object upstream at a time, the others wait for it.  LOOKUP (needs
 * ACCESS3_LOOKUP on the directory), ACCESS (the caller's own result),
 * READLINK, READDIR and READDIRPLUS (need ACCESS3_READ; counts bounded by
 * what the proxy accepts), FSSTAT/FSINFO/PATHCONF (FSINFO's transfer sizes
 * clamped to the proxy's limit), MNT (MNT3ERR_ACCES outside
 * upstream.exports), EXPORT (restricted to upstream.exports).
 */
void nfsd_proc_null(struct nfsd_call *call);
void nfsd_proc_getattr(struct nfsd_call *call);
void nfsd_proc_lookup(struct nfsd_call *call);
void nfsd_proc_access(struct nfsd_call *call);
void nfsd_proc_readlink(struct nfsd_call *call);
void nfsd_proc_readdir(struct nfsd_call *call);
void nfsd_proc_fs(struct nfsd_call *call);
void nfsd_proc_mnt(struct nfsd_call *call);
void nfsd_proc_export(struct nfsd_call *call);

/* CREATE, MKDIR, SYMLINK, MKNOD, RMDIR, RENAME, LINK (nfs_names.c):
 * forwarded; the directory's names are edited from the result at once
 * (CREATE also makes a new regular file's cache object). */
void nfsd_proc_made(struct nfsd_call *call);
void nfsd_proc_rmdir(struct nfsd_call *call);
void nfsd_proc_rename(struct nfsd_call *call);
void nfsd_proc_link(struct nfsd_call *call);

/* The free function of every row whose handler keeps per-call state
 * (nfs_common.c): releases it, and what it holds — a WRITE or SETATTR
 * forwarded to the upstream is one of the object's changes in flight until
 * the call is freed, and a REMOVE of a file's last link pins the object
 * until then. */
void nfsd_call_state_free(struct nfsd_call *call);

#endif
