/*
 * meta.h — the namespace cache: what the upstream said about names and
 * attributes, kept in memory so that GETATTR, LOOKUP, ACCESS, READDIR,
 * READDIRPLUS, READLINK, FSSTAT, FSINFO, PATHCONF and MOUNT's MNT and EXPORT
 * can be answered without a round trip (DESIGN.md "Namespace cache").
 *
 * The contract is the Linux NFS client's attribute cache (fs/nfs/inode.c
 * nfs_update_inode, fs/nfs/dir.c lookupcache=all), applied at the proxy:
 *
 * - A node per upstream file handle (any file type) holds its attributes,
 *   trusted for a TTL fixed when they are confirmed: clamp((now − mtime) / 10,
 *   min, max) seconds, with cache.acregmin/acregmax for non-directories and
 *   cache.acdirmin/acdirmax for directories.  A TTL of 0 trusts nothing.
 * - A directory's names (name → handle, and negative: "no such name") and
 *   its listing (the entries of a complete READDIR/READDIRPLUS pass, with the
 *   upstream's cookies and cookie verifier) are valid while the directory's
 *   attributes are fresh: they hang off the directory's attributes as
 *   recorded, and attributes showing a change not made through nfscached
 *   (mtime, ctime, size, fileid or type differ) drop them.
 * - ACCESS results per (handle, credential), the bits asked and granted,
 *   valid while the node's attributes are fresh; dropped when attributes show
 *   a change not made through nfscached, or a mode/owner/group change.
 * - A symlink's target (READLINK), valid while its attributes are fresh.
 * - Per file system (fsid): FSINFO and PATHCONF (valid cache.acdirmax
 *   seconds) and FSSTAT (cache.acregmin seconds).
 * - MOUNT: the MNT answer per export path (valid while the root's attributes
 *   are fresh) and the EXPORT list (valid cache.acdirmax seconds).
 *
 * Every reply that carries attributes feeds meta_attrs_record(); a change
 * made through nfscached feeds meta_changed() with its wcc data and then the
 * name edits.  A reply that started before a change of ours to the same
 * node completed is stale and ignored: callers pass meta_seq() as it was
 * when their call was sent (the Linux client's attribute generation).
 *
 * Memory: an entry is a node (a handle's attributes and what hangs off it)
 * or a name in a directory (positive or negative); at most
 * cache.metadata_max entries, the least recently used evicted first
 * (cache.metadata.evictions); a node pinned by meta_getattr_begin() is not
 * evicted.  Gauge cache.metadata.entries.  Nothing survives a restart.
 *
 * Off (cache.metadata = no, or metadata_max = 0): every record is ignored
 * and every query misses.
 *
 * Pointers into the cache that a query returns (handles, names, targets)
 * stay valid until the next meta_ call that records, changes or evicts
 * anything: copy them or use them at once (call_reply() encodes at once).
 *
 * All functions run on the loop thread.  Handles are 1..NFS3_FHSIZE_MAX
 * bytes; others are never cached (queries miss, records are ignored).
 * Names are NUL-terminated, 1..NFS3_NAME_MAX bytes.
 */
#ifndef NFSCACHED_META_H
#define NFSCACHED_META_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/cache_config.h"
#include "common/list.h"
#include "proto/nfs.h"
#include "proto/rpc_msg.h"

/* Start (empty) with the configuration `cfg` (kept: keys a reload changes
 * apply at their next use) and the loop whose time it uses. */
void meta_init(struct ev_loop *loop, const struct cache_config *cfg);

/* Free everything. */
void meta_finalise(void);

/* Drop every entry (nfscachectl invalidate --all); counted in
 * cache.metadata.invalidations once. */
void meta_clear(void);

/* cache.metadata = yes and metadata_max > 0. */
bool meta_on(void);

/* The change sequence now: a call records it when it is sent and passes it
 * with what its reply brings. */
uint64_t meta_seq(void);

/* ---- attributes --------------------------------------------------- */

/*
 * Attributes `a` of `fh` in an upstream reply to a call sent at `seq` that
 * changed nothing (GETATTR, LOOKUP, ACCESS, READ, READDIRPLUS entries, ...):
 * ignored when a change of ours to `fh` completed after `seq`; otherwise
 * they are confirmed now, and a difference from the recorded ones (mtime,
 * ctime, size, fileid, type) drops what hangs off the node (names, listing,
 * ACCESS results, symlink target; cache.metadata.invalidations), as does a
 * mode, uid or gid difference for the ACCESS results.
 */
void meta_attrs_record(const nfs_fh3 *fh, const fattr3 *a, uint64_t seq);

/* Fresh attributes of `fh` into *out: true; false when not cached or past
 * their TTL. */
bool meta_attrs_get(const nfs_fh3 *fh, fattr3 *out);

/* Trust `fh`'s attributes no longer (REMOVE or RENAME changed its nlink or
 * ctime upstream): the next query misses.  What hangs off it stays until
 * attributes show a change. */
void meta_attrs_expire(const nfs_fh3 *fh);

/* A name whose handle the cache does not know went away through us (a
 * REMOVE, or a RENAME over it): whichever file it named lost a link, so the
 * attributes of every file known to have more than one link are no longer
 * trusted (their nlink and ctime changed upstream).  Costs the number of
 * such files (a list kept as attributes are recorded). */
void meta_expire_linked(void);

/*
 * A change made through nfscached to `fh` (WRITE, SETATTR, COMMIT, and to a
 * directory CREATE, MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR, RENAME, LINK) was
 * answered with `wcc` (NULL: the call failed without wcc data).  Pre-op
 * attributes equal to the recorded size, mtime and ctime explain the change
 * as ours: names and ACCESS results stay (the latter unless mode, uid or
 * gid changed), a directory's listing is dropped (its cookies are the
 * upstream's to give); otherwise everything hanging off the node goes.
 * Post-op attributes are recorded (else the node is expired).  A reply
 * started before this call with an older sequence is stale from now on.
 * Name edits follow with meta_seq() as their sequence.
 */
void meta_changed(const nfs_fh3 *fh, const wcc_data *wcc);

/* The same for a change the data cache explained as ours although its
 * pre-op attributes are not the recorded ones (several of our WRITEs in
 * flight answered out of order: cache_change_done()). */
void meta_changed_explained(const nfs_fh3 *fh, const wcc_data *wcc);

/* ---- names (LOOKUP) ----------------------------------------------- */

/*
 * `name` in directory `dir` is `child` (attributes `child_attrs`, NULL when
 * the reply had none): from a LOOKUP reply sent at `seq`, a READDIRPLUS
 * entry, or a change of ours (CREATE...).  Recorded only when `dir`'s
 * attributes are known (the name hangs off them); replaces a negative entry.
 */
void meta_name_add(const nfs_fh3 *dir, const char *name, const nfs_fh3 *child,
		   const fattr3 *child_attrs, uint64_t seq);

/* No `name` in `dir` (a LOOKUP answered NFS3ERR_NOENT, or our REMOVE,
 * RMDIR, RENAME took it away): a negative entry, on the same terms. */
void meta_name_negative(const nfs_fh3 *dir, const char *name, uint64_t seq);

/* Forget `name` in `dir`, positive or negative. */
void meta_name_forget(const nfs_fh3 *dir, const char *name);

enum meta_lookup {
	META_LOOKUP_MISS,        /* not cached, or `dir` (or the child) not fresh */
	META_LOOKUP_FOUND,       /* *child, *child_attrs and *dir_attrs filled */
	META_LOOKUP_NOENT,       /* a negative entry: *dir_attrs filled */
};

/*
 * LOOKUP (RFC 1813 §3.3.3) of `name` in `dir` from the cache: FOUND needs
 * `dir`'s and the child's attributes fresh; NOENT needs `dir`'s.  The
 * caller checks the credential (ACCESS3_LOOKUP on `dir`, meta_access_get)
 * before answering.  child->data points into the cache.
 */
enum meta_lookup meta_lookup(const nfs_fh3 *dir, const char *name, nfs_fh3 *child,
			     fattr3 *child_attrs, fattr3 *dir_attrs);

/* The handle `name` in `dir` names, whatever the freshness (RENAME moves
 * the name to another directory): true and *child (pointing into the
 * cache), or false. */
bool meta_name_handle(const nfs_fh3 *dir, const char *name, nfs_fh3 *child);

/* ---- ACCESS (RFC 1813 §3.3.4) -------------------------------------- */

/*
 * The upstream answered ACCESS of `fh` for the bits `asked` with `granted`,
 * to `cred` (after squashing), in a call sent at `seq`.  Bits not asked
 * keep what was known of them.  Kept per credential (uid, gid and the
 * supplementary groups, compared exactly).
 */
void meta_access_record(const nfs_fh3 *fh, const struct rpc_cred *cred, uint32_t asked,
			uint32_t granted, uint64_t seq);

/* When every bit of `asked` is known for `cred` on `fh` and its attributes
 * are fresh: true, *granted = the granted ones of `asked`.  Never another
 * credential's result, never computed from mode bits. */
bool meta_access_get(const nfs_fh3 *fh, const struct rpc_cred *cred, uint32_t asked,
		     uint32_t *granted);

/* ---- READLINK (RFC 1813 §3.3.5) ------------------------------------ */

/* `target` (NUL-terminated; longer than NFS3_SYMLINK_WIRE_MAX bytes: not
 * kept) is the target of symlink `fh`, from a reply started at `seq`
 * (before the node's last change: ignored).  Copied. */
void meta_readlink_record(const nfs_fh3 *fh, const char *target, uint64_t seq);

/* The target of symlink `fh` when its attributes are fresh (also into
 * *attrs), else NULL.  Points into the cache. */
const char *meta_readlink(const nfs_fh3 *fh, fattr3 *attrs);

/* ---- listings (READDIR §3.3.16, READDIRPLUS §3.3.17) ----------------- */

/*
 * A page of a READDIRPLUS of `dir` (asked from `cookie` with verifier
 * `verf`) the upstream answered `ok` to, in a call sent at `seq`.  The
 * caller has recorded the page's directory attributes first.  A page from
 * cookie 0 starts a listing; a page that continues the one being built
 * (its last cookie, the same verifier) extends it; eof completes it; any
 * other page, or one without directory attributes, drops the listing being
 * built.  Each entry with a handle also records its name and attributes
 * (meta_name_add).
 */
void meta_listing_plus(const nfs_fh3 *dir, uint64_t cookie, const char *verf,
		       const READDIRPLUS3resok *ok, uint64_t seq);

/* The same for a READDIR page: a listing of names without handles, which
 * answers READDIR only. */
void meta_listing_plain(const nfs_fh3 *dir, uint64_t cookie, const char *verf,
			const READDIR3resok *ok, uint64_t seq);

/*
 * Answer READDIRPLUS `a` from a complete listing of a fresh directory into
 * *res: true, res->status NFS3_OK (as many entries from a->cookie on as fit
 * in a->dircount bytes of names, fileids and cookies (the first entry
 * whatever dircount says) and a->maxcount bytes of the whole reply, RFC
 * 1813 XDR sizes; eof when the last one is in) or NFS3ERR_TOOSMALL (not one
 * entry fits in maxcount), directory attributes included; an
 * entry's attributes only when its node is fresh.  The entries are an
 * array (malloc'd, names and handles pointing into the cache) that
 * meta_readdirplus_free() releases.  false (nothing to free): no complete
 * listing from READDIRPLUS, the directory not fresh, a->cookie not 0 and
 * not a cookie of the listing, or a->cookieverf not the listing's.  The
 * caller checks the credential (ACCESS3_READ on `dir`) first.
 */
bool meta_readdirplus(const READDIRPLUS3args *a, READDIRPLUS3res *res);
void meta_readdirplus_free(READDIRPLUS3res *res);

/* READDIR `a` (count bytes of the whole reply) from any complete listing, on
 * the same terms. */
bool meta_readdir(const READDIR3args *a, READDIR3res *res);
void meta_readdir_free(READDIR3res *res);

/* A complete listing of `dir` is held (READDIRPLUS: one built from
 * READDIRPLUS pages), whatever the freshness of `dir`'s attributes: when
 * they are past their TTL, one GETATTR that finds them unchanged makes it
 * answer again. */
bool meta_listing_held(const nfs_fh3 *dir, bool plus);

/* ---- per file system (FSSTAT §3.3.18, FSINFO §3.3.19, PATHCONF §3.3.20) */

/* Recorded per fsid of `fh`'s attributes (known by then: record the
 * reply's obj_attributes first). */
void meta_fsstat_record(const nfs_fh3 *fh, const FSSTAT3resok *ok, uint64_t seq);
void meta_fsinfo_record(const nfs_fh3 *fh, const FSINFO3resok *ok, uint64_t seq);
void meta_pathconf_record(const nfs_fh3 *fh, const PATHCONF3resok *ok, uint64_t seq);

/* Answers for `fh`'s file system: true and *ok filled (obj_attributes
 * included when `fh`'s are fresh), or false. */
bool meta_fsstat(const nfs_fh3 *fh, FSSTAT3resok *ok);
bool meta_fsinfo(const nfs_fh3 *fh, FSINFO3resok *ok);
bool meta_pathconf(const nfs_fh3 *fh, PATHCONF3resok *ok);

/* ---- MOUNT (RFC 1813 §5.2.1, §5.2.5) -------------------------------- */

/* MNT of `path` answered `ok` (the root handle, the auth flavors). */
void meta_mnt_record(const char *path, const mountres3_ok *ok);

/* MNT of `path` from the cache while the root's attributes are fresh:
 * true and *ok (pointing into the cache). */
bool meta_mnt(const char *path, mountres3_ok *ok);

/* The EXPORT list the upstream answered (deep-copied), and the cached one
 * while it is younger than cache.acdirmax: true and *list (NULL: empty;
 * owned by the cache). */
void meta_export_record(exports list);
bool meta_export(exports *list);

/* ---- one GETATTR per node at a time -------------------------------- */

struct meta_waiter {
	struct list_node link;
	void (*wake)(struct meta_waiter *w);    /* the caller's: called once */
};

/*
 * A GETATTR of `fh` is going upstream on behalf of a client: begin pins its
 * node (created when missing; never evicted while pinned) and marks it
 * busy; end, once its answer went to meta_attrs_record(), wakes every
 * waiter (each wake() once) and unpins (meta_clear() keeps a pinned node,
 * without its attributes).  Returns false when not cached
 * (off, or a handle it cannot hold): no end then.
 */
bool meta_getattr_begin(const nfs_fh3 *fh);
void meta_getattr_end(const nfs_fh3 *fh);

/* A GETATTR of `fh` is in flight: true, `w` waits for its end (woken later,
 * never from inside this call); false: none, go ahead. */
bool meta_getattr_join(const nfs_fh3 *fh, struct meta_waiter *w);

/* Bytes of memory the namespace cache holds now (nodes, names, listings,
 * ACCESS results, hash tables), for `status` and the cost per entry. */
uint64_t meta_bytes(void);

#endif
