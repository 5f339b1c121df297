/*
 * cache.h — cache objects: FS-Cache's cookie, one per regular file, keyed by
 * (volume, upstream file handle), with the file's valid byte ranges, its
 * backing file, its coherency data (size, mtime and ctime to the nanosecond,
 * fileid) and change generation, and per-credential ACCESS results.  The
 * procedure handlers decide when to fetch and what to answer; this module
 * keeps the state right and persists it (batched through the worker pool).
 *
 * Coherency (DESIGN.md "Coherency"): every attribute reply feeds
 * cache_attrs_update(); a change not made through nfscached invalidates the
 * data.  A reply started before a change that completed meanwhile (the
 * generation moved on) is ignored, never cached.
 *
 * Asynchronous calls (STYLE.md, libnfs): a function that takes a callback
 * returns 0 when the callback will be called exactly once, later, on the
 * loop (never from inside the call), and a negative errno when it will not
 * be called at all.  A predicate that may make its caller wait returns
 * bool, true meaning "wait: you will be woken" (like writeback_throttle()
 * and nfsd_revalidate() in the daemon); false means go ahead now.
 */
#ifndef NFSCACHED_CACHE_H
#define NFSCACHED_CACHE_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/extent.h"
#include "cache/cache_config.h"
#include "common/list.h"
#include "proto/limits.h"
#include "proto/nfs.h"
#include "proto/rpc_msg.h"

#define CACHE_OBJECT_MAGIC 0x636f626au   /* "cobj" */
#define CACHE_ACCESS_SLOTS 4

struct cache_access {
	uint32_t uid, gid;
	uint32_t gids_hash;     /* of the supplementary groups */
	uint32_t granted;       /* ACCESS3_* bits the upstream granted */
	ev_tstamp time;         /* loop time of the answer; 0 = empty slot */
};

/* What the cached bytes are a copy of. */
struct cache_coherency {
	int known;
	uint64_t size;
	int64_t mtime_ns, ctime_ns;
	uint64_t fileid;
};

/* o->wopen: the "written to" mark of an object in the index (crash safety of
 * local writes, cache_write_must_wait()). */
enum cache_wopen {
	CACHE_WOPEN_NONE,               /* not written to in this daemon life */
	CACHE_WOPEN_REQUESTED,          /* asked of the next batch, not recorded yet */
	CACHE_WOPEN_RECORDED,           /* in the index: local writes may go ahead */
};

/* o->wb_recover: dirty ranges loaded from the index after a restart. */
enum cache_wb_recover {
	CACHE_RECOVER_NONE,             /* nothing to recover (or decided) */
	CACHE_RECOVER_PENDING,          /* kept only if the upstream file is unchanged
					 * since: decided by its first attributes */
	CACHE_RECOVER_GETATTR,          /* daemon/writeback.c: their GETATTR is in flight */
};

/*
 * The fattr3 fields (RFC 1813 §2.6) the coherency data do not hold: with
 * them, the last attributes the upstream sent (cache_object_attrs()).  The
 * type is always NF3REG: only a regular file's attributes are kept.
 */
struct cache_attrs {
	uint32_t mode, nlink, uid, gid;
	specdata3 rdev;
	nfstime3 atime;
	uint64_t used;                   /* bytes */
	uint64_t fsid;
};

struct dirty_state;

/*
 * One cached file.  The fields above the line are public: every module may
 * read them, and each says which module writes it (cache/ means the
 * functions of cache.h, no caller).  Below the line the fields are the
 * cache's own (the files of cache/ only; unit tests may look).  The daemon keeps an
 * object alive past the current loop callback only with a pin
 * (cache_pin()); the cache never culls or frees a pinned object.  Small on
 * purpose (many are resident): what only some objects need hangs off a
 * pointer, NULL until needed (ACCESS results, the write-back state), and
 * the handle, public too, is the last field, allocated to its length.
 */
struct cache_object {
	/* ---- public ---------------------------------------------------- */
	uint32_t magic;                  /* cache/: CACHE_OBJECT_MAGIC while alive */
	uint32_t fh_len;                 /* cache/, at creation: bytes of fh, 1..NFS3_FHSIZE_MAX */
	uint64_t id;                     /* cache/: names the backing file and the index row */
	struct cache_attrs attrs;        /* cache/: with coh, the last attributes the upstream
					  * sent (read them with cache_object_attrs()) */
	struct cache_coherency coh;      /* cache/: what the cached bytes are a copy of */
	uint64_t gen;                    /* cache/: change generation, cache_seq() at its last change */
	struct extent_set valid;         /* cache/: bytes held and right (the dirty bytes
					  * of the write-back state included) */
	struct read_state *rd;           /* daemon/nfs_read.c's, NULL until the object's first
					  * READ; released by the free hook */
	struct writeback_state *wb;      /* daemon/writeback.c's, NULL until the object's first
					  * pass; released by the free hook */
	unsigned pins;                   /* cache_pin()/cache_unpin() only: holders that
					  * keep a pointer to it (calls, fetches, GETATTRs,
					  * changes in flight, write-back passes) */
	int changes_in_flight;           /* cache_change_begin()/end() only: our WRITE/
					  * SETATTR calls not answered yet (coherency: they
					  * explain attribute changes; each also pins) */
	uint8_t have_attrs;              /* cache/: attrs holds something */
	uint8_t wb_recover;              /* enum cache_wb_recover: cache/ sets PENDING when
					  * loading and NONE on the first attributes;
					  * daemon/writeback.c moves PENDING <-> GETATTR and
					  * ends it when the file is gone */
	uint8_t getattr_busy;            /* daemon (nfsd_revalidate() sets it, its GETATTR's
					  * callback clears it): a revalidating GETATTR is in
					  * flight, others wait for it (the GETATTR also pins) */

	/* ---- below: the cache's own ------------------------------------ */
	uint8_t persist_queued;          /* persist.c: on the queue below (enum persist_queued) */
	uint8_t checked;                 /* cache.c: backing file checked against `valid` */
	uint8_t wopen;                   /* enum cache_wopen: dirty.c requests, persist.c
					  * records: the "written to" mark in the index */
	uint8_t naccess;                 /* cache.c: slots of `access` */
	uint8_t changes_raced;           /* cache.c: a change was answered while another was in
					  * flight, since changes_in_flight was last 0 */
	int fd;                          /* cache.c: backing file, -1 when not open */
	uint32_t recorded_ranges;        /* persist.c: valid ranges the index holds (or a
					  * running batch is writing) for it */
	struct cache_object *hash_next;  /* cache.c: the object table's chain */
	struct list_node lru_link;       /* cache.c: in the list of resident objects, least
					  * recently used first (resident.c evicts from it) */
	struct list_node persist_link;   /* persist.c: in the queue of objects the index
					  * must learn (persist_mark) */
	struct list_node fd_link;        /* cache.c: in the LRU list of open backing files */
	struct list_node waiters;        /* cache.c: struct cache_waiter */
	uint64_t persist_seq;            /* persist.c: the batch that last snapshotted it
					  * (0: none): it may leave memory once that batch
					  * is committed */
	ev_tstamp attr_time;             /* cache.c: loop time coh was last confirmed */
	int64_t last_access_s;           /* cache.c: unix seconds */
	int64_t access_recorded_s;       /* persist.c: last_access_s as the index has it
					  * (or the running batch writes it) */
	struct cache_access *access;     /* cache.c: naccess slots (grown one at a time up
					  * to CACHE_ACCESS_SLOTS), NULL when none */
	struct dirty_state *dirty_state; /* dirty.c: the write-back state, NULL while
					  * nothing is uncommitted (cache_int.h) */
	uint8_t fh[];                    /* public, cache/, at creation: the upstream file
					  * handle, fh_len bytes (last: allocated to its length) */
};

/* A call waiting for something in flight on an object (a fetch, GETATTR).
 * The waiter is the caller's (the daemon's); while it waits, `link` is the
 * cache's (cache_wait) or daemon/writeback.c's (writeback_throttle). */
struct cache_waiter {
	struct list_node link;
	void (*wake)(struct cache_waiter *w);   /* the caller's: called once per wake-up */
	ev_tstamp deadline;          /* writeback_throttle(): loop time it gives up */
	int timed_out;               /* writeback_throttle(): woken at the deadline */
};

/*
 * Open the cache under cfg->dir for volume "SERVER:EXPORT": backing
 * directories, the index (reset when unusable), the objects it holds.
 * Returns 0 or -errno after logging.  Uses a worker pool of its own for
 * fdatasync and index commits.
 */
int cache_init(struct ev_loop *loop, const struct cache_config *cfg, const char *volume);

/* Commit everything to the index and close.  Blocks (shutdown only). */
void cache_finalise(void);

/* The change sequence now.  A call records it when it is sent; a reply whose
 * object changed after that (o->gen > the recorded value) is stale.  Used
 * for every "gen_at_start" below. */
uint64_t cache_seq(void);

/*
 * Objects in memory (DESIGN.md "Cache objects"): the index holds every
 * object; memory holds those in use and the most recently used others, at
 * most cache.resident_max of them.  cache_find() and cache_get() see the
 * objects in memory only.  A call that needs the object of a file handle
 * (to answer from its data, to write to it) first makes it resident:
 *
 * cache_resolve(): returns -EALREADY when there is nothing to wait for (the
 * object is in memory, the index is known not to hold it, or the cache is
 * not open): go ahead now.  Returns 0 when a point lookup in the index is
 * on its way (on a thread of the cache's, never blocking the loop): `w` is
 * woken once, later, on the loop, when the object is in memory or known to
 * be absent (or the lookup failed: then cache_get() still returns NULL).
 * `w` NULL: start the lookup, wake nobody (returns -EALREADY).  The waiter
 * is the caller's and must stay valid until woken.  Counted in
 * cache.index.lookups when the index held the object.
 */
int cache_resolve(const uint8_t *fh, uint32_t fh_len, struct cache_waiter *w);

/*
 * Stopping: no lookup starts any more (cache_resolve() answers -EALREADY);
 * the running ones end and the queued ones fail, their waiters woken (on
 * the calling thread, from inside this call: the calls go on without the
 * cache).  Call while what the woken calls use still works (the upstream);
 * cache_finalise() does it too if needed.  Blocks for the running lookup.
 */
void cache_lookups_finish(void);

/* The object for a file handle in memory, or NULL (not cached, or not
 * resident: see cache_resolve()).  Counts as a use for the resident list. */
struct cache_object *cache_find(const uint8_t *fh, uint32_t fh_len);

/* The object for a file handle, created (empty, attributes unknown) when
 * the cache does not hold one.  NULL when the handle was not resolved (it
 * may be in the index: cache_resolve() first, in the same loop callback).
 * fh_len must be 1..NFS3_FHSIZE_MAX. */
struct cache_object *cache_get(const uint8_t *fh, uint32_t fh_len);

/*
 * Attributes from an upstream reply for this object.  `gen_at_start` is the
 * object's generation when the call that brought them was sent: a change
 * completed since makes them stale, and they are ignored.  A size, mtime,
 * ctime or fileid different from the coherency data invalidates the data,
 * except while a change of ours is in flight: the upstream may already
 * have applied it, so the attributes are taken and the data kept (the
 * change's wcc data follow, cache_change_done()).
 */
void cache_attrs_update(struct cache_object *o, const fattr3 *a, uint64_t gen_at_start);

/*
 * wcc data of a change made through nfscached (WRITE, SETATTR, COMMIT):
 * pre-op attributes equal to the coherency data mean nobody else changed
 * the file meanwhile, and the post-op attributes become the new coherency
 * data without invalidation; otherwise the data is invalidated.  Without
 * pre-op attributes the change is taken as ours (Linux nfs_post_op_update_
 * inode_force_wcc).  Bumps the generation.  Returns true when the change
 * was explained by our own call (or our other changes in flight).
 */
bool cache_change_done(struct cache_object *o, const wcc_data *wcc);

/* Drop the object's clean data (not the object, never its dirty bytes):
 * counted in cache.invalidations. */
void cache_invalidate(struct cache_object *o, const char *why);

/* Cut the data at `size` bytes (SETATTR of the size), the tail of the last
 * partial page and dirty bytes past it included. */
void cache_truncate(struct cache_object *o, uint64_t size);

/* Were the coherency data confirmed within cache.acregmax? */
bool cache_attrs_fresh(const struct cache_object *o);

/* The attributes are no longer trusted (the file lost its last link): the
 * next use of the object revalidates them upstream. */
void cache_attrs_expire(struct cache_object *o);

/* ACCESS results per credential: record what the upstream granted of the
 * bits `asked` (RFC 1813 §3.3.4: an answer says nothing of bits not asked,
 * so what is known of those stays), and ask whether `bits` were granted to
 * `cred` within cache.acregmax. */
void cache_access_record(struct cache_object *o, const struct rpc_cred *cred, uint32_t asked,
			 uint32_t granted);
/* Forget every credential's ACCESS results (the upstream refused one). */
void cache_access_forget(struct cache_object *o);
int cache_access_granted(const struct cache_object *o, const struct rpc_cred *cred, uint32_t bits);

/*
 * Data fetched from the upstream (or written through it) for [offset,
 * offset + len): written to the backing file with one pwrite per part not
 * dirty (merged under local dirty bytes, which are newer), then marked
 * valid — unless the generation moved on since `gen_at_start`.  A store
 * that fails (-ENOSPC when the space state refuses it: stopped, or past
 * max_size; a backing write's -errno) keeps none of the caller's bytes and
 * drops the clean bytes the cache held in the range, which may be older.
 * Returns 0, -ESTALE (dropped: stale), or -errno.
 */
int cache_store(struct cache_object *o, uint64_t offset, const void *data, uint32_t len,
		uint64_t gen_at_start);

/*
 * Read [offset, offset + len) of valid bytes from the backing file into buf.
 * Returns 0, or -EIO when the backing file no longer holds them (missing,
 * truncated, a hole): the object's data is then dropped and must be
 * fetched again.
 */
int cache_read_local(struct cache_object *o, uint64_t offset, void *buf, uint32_t len);

/*
 * The same without waiting for the disk: 0 when the page cache held all of
 * it, -EAGAIN when not (then read it with cache_read_async()), -EIO as above.
 */
int cache_read_local_nowait(struct cache_object *o, uint64_t offset, void *buf, uint32_t len);

/*
 * Read [offset, offset + len) of valid bytes into buf on a worker thread and
 * call done(arg, rc) on the loop thread: rc 0, or -EIO as cache_read_local()
 * (the backing file cannot be opened, is short, or the object changed
 * while the worker read).  buf must stay valid until then.  Returns 0: done
 * is called once, later; -ENODEV: the cache is not open (done is never
 * called).
 */
int cache_read_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
		     void (*done)(void *arg, int rc), void *arg);

/*
 * The backing file's descriptor, for sending [offset, offset + len) of valid
 * bytes straight from the page cache (sendfile): >= 0 when the file holds
 * data through the whole range (one lseek: no hole, not short) and every
 * page of it is in the page cache; the descriptor stays the cache's, open
 * until the current loop callback returns.  -EAGAIN when some page is not
 * in the page cache (read it with cache_read_async()); -EIO when the bytes
 * are not valid or the file no longer holds them (then dropped, as
 * cache_read_local()).  Never blocks on the disk.
 */
int cache_zerocopy_fd(struct cache_object *o, uint64_t offset, uint32_t len);

/* Wait for the next cache_wake() of `o`. */
void cache_wait(struct cache_object *o, struct cache_waiter *w);
/* Wake every waiter of `o` (each wake() runs once; they may wait again). */
void cache_wake(struct cache_object *o);

/*
 * Pin `o` while a pointer to it is kept past the current loop callback (a
 * call, a fetch, a GETATTR, a write-back pass): a pinned object is never
 * culled or freed.  Every cache_pin() is undone by one cache_unpin().
 */
void cache_pin(struct cache_object *o);
void cache_unpin(struct cache_object *o);

/*
 * A WRITE or SETATTR of ours is sent upstream (begin) / answered or given
 * up (end): while several are in flight their replies may come back in any
 * order, and cache_change_done() takes an attribute change they explain as
 * ours.  Each change in flight also pins `o`.
 */
void cache_change_begin(struct cache_object *o);
void cache_change_end(struct cache_object *o);

/* Note a use of `o` (for least-recently-used order; persisted in batches). */
void cache_touch(struct cache_object *o);

/* The last attributes the upstream sent for `o` (have_attrs set), from
 * o->attrs and the coherency data: what a reply carries for it. */
void cache_object_attrs(const struct cache_object *o, fattr3 *out);

/* ---- write-back state (DESIGN.md "Write-back") -------------------- */

/* The bytes of `o` written locally and not sent upstream yet (per page the
 * merged ranges are wb_pgbase/wb_bytes; ⊆ valid): an empty set when
 * nothing is.  Read-only; valid until the next change of `o`. */
const struct extent_set *cache_dirty_set(const struct cache_object *o);

/* Loop time the oldest dirty byte of `o` was written; 0 when none is. */
ev_tstamp cache_dirty_since(const struct cache_object *o);

/* The writer of the uncommitted bytes of `o`, whose credential write-back
 * uses; NULL when nothing is uncommitted.  The cache's (shared by objects
 * with the same writer): valid until the next change of `o`; copy it to
 * keep it. */
const struct rpc_cred *cache_wb_cred(const struct cache_object *o);

/* The object whose node of cache_uncommitted_list() is `pos`. */
struct cache_object *cache_uncommitted_object(struct list_node *pos);

/* True when `o` holds bytes not committed upstream yet (dirty, or sent and
 * awaiting the upstream COMMIT). */
bool cache_has_uncommitted(const struct cache_object *o);

/* The file size clients see, bytes: the upstream's, or while dirty, the
 * upstream's extended by local writes. */
uint64_t cache_client_size(const struct cache_object *o);

/* While `o` is dirty, give `a` (attributes of `o` from the upstream or the
 * cache) the local size, mtime and ctime; otherwise leave it alone. */
void cache_patch_attrs(const struct cache_object *o, fattr3 *a);

/*
 * Before the first local write of this daemon life to an object holding
 * valid data, the index must record that the object is being written
 * (after a crash its unrecorded writes may sit on top of recorded ranges,
 * which are then not trusted).  Returns false when local writes may go
 * ahead now; true when the caller must wait: the record is on its way, and
 * `w` is woken (cache_wake, never from inside this call) once it is in the
 * index.
 */
bool cache_write_must_wait(struct cache_object *o, struct cache_waiter *w);

/*
 * An UNSTABLE WRITE accepted locally (RFC 1813 §3.3.7): `len` bytes at
 * `offset` go to the backing file with one pwrite and become valid and
 * dirty; bytes between the current size and `offset` (at most
 * CACHE_WRITE_GAP_MAX) are stored as zeros, valid but not dirty.  `cred`
 * becomes the object's write-back credential (the caller flushes first when
 * another credential holds dirty data).  Needs cache_write_must_wait()
 * false first.  Returns 0, or -errno of the backing write (nothing changed
 * then).
 */
#define CACHE_WRITE_GAP_MAX (1024 * 1024)
int cache_write_local(struct cache_object *o, uint64_t offset, const void *data, uint32_t len,
		      const struct rpc_cred *cred);

/*
 * Start a write-back pass: every dirty range moves to the commit set.
 * Returns the ranges as *n pairs (start, end) in a malloc'd array the
 * caller frees; NULL with *n = 0 when nothing is dirty.
 */
uint64_t *cache_dirty_take(struct cache_object *o, size_t *n);

/*
 * The pass ended: CACHE_COMMITTED, its bytes are committed upstream and
 * clean (still valid); CACHE_RESEND, they are dirty again (a changed
 * upstream verifier, an upstream that did not answer); CACHE_FAILED, the
 * upstream refused them for good: they are forgotten, and no longer valid
 * unless written again meanwhile.
 */
enum cache_settle { CACHE_COMMITTED, CACHE_RESEND, CACHE_FAILED };
void cache_commit_settle(struct cache_object *o, enum cache_settle how);

/*
 * Forget dirty and sent bytes in [start, end) and their data (no longer
 * valid): a write-back that failed for good, a file removed.  Returns the
 * bytes dropped.
 */
uint64_t cache_dirty_drop(struct cache_object *o, uint64_t start, uint64_t end);

/*
 * cache.commit = local (DESIGN.md "Write-back"; RFC 1813 §3.3.21: what a
 * COMMIT promises is stable storage): make the bytes of `o` not committed
 * upstream stable locally.  `o` is marked for the index's batch, which
 * fdatasyncs the backing files and records the dirty ranges in one index
 * transaction (what recovery after a crash relies on); the batch starts
 * now unless one is running (then right after it).  done(arg, rc) fires
 * once a batch that snapshotted `o` after this call has completed: rc 0,
 * and the bytes uncommitted at the call (still so) count in
 * cache.unwritten.bytes until committed upstream; a batch that fails is
 * tried again and the caller waits for the next; rc -ECANCELED when the
 * cache closes first.  Returns 0: done fires exactly once, later, never
 * from inside this call; -EALREADY: nothing of `o` is uncommitted (done
 * never fires: answer at once); -ENODEV: the cache is not open.  Pins
 * `o` while it waits.  Never blocks.
 */
int cache_sync(struct cache_object *o, void (*done)(void *arg, int rc), void *arg);

/* Bytes of `o` made stable by cache_sync() and not committed upstream. */
uint64_t cache_unwritten_bytes(const struct cache_object *o);

/* Set the gauge cache.unwritten.oldest_s (whole seconds since the oldest
 * unwritten byte became stable locally; for bytes recovered from the index,
 * since the cache opened; 0 when none) from the loop time now.
 * cache.unwritten.bytes is kept as the ranges change. */
void cache_unwritten_refresh(void);

/* The objects holding bytes not committed upstream (dirty, or sent and
 * awaiting COMMIT: cache_has_uncommitted()), in the order they first
 * became dirty: a list the daemon walks (never changes), each node's
 * object given by cache_uncommitted_object(). */
struct list_node *cache_uncommitted_list(void);

/*
 * Read `len` bytes at `offset` of the backing file (dirty data for a
 * write-back), whatever their state, on a worker thread; done(arg, rc) on
 * the loop: 0, or -EIO (no backing file, or fewer bytes than asked).
 * Returns 0: done is called once, later; -ENODEV: the cache is not open
 * (done is never called).
 */
int cache_read_backing_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
			     void (*done)(void *arg, int rc), void *arg);

/*
 * State the daemon hangs off an object (o->rd, o->wb) is its own: the cache
 * calls `fn(o)` once with each object it frees (culled, dropped, or at
 * cache_finalise), just before freeing it, for the daemon to release that
 * state.  One hook, set once (before cache_init); NULL = none.  `fn` must
 * not call back into the cache.
 */
void cache_set_free_hook(void (*fn)(struct cache_object *o));

/* Call fn(o, arg) for every object in memory; fn must not create or free
 * objects. */
void cache_foreach(void (*fn)(struct cache_object *o, void *arg), void *arg);

/*
 * nfscachectl invalidate --all, for the objects not in memory (those in
 * memory are the caller's to invalidate, cache_foreach and
 * cache_invalidate, before this call): they lose their clean data with the
 * next batch (they hold no dirty data), and one made resident before that
 * is invalidated as it arrives.  Returns their number.
 */
uint64_t cache_invalidate_stored(void);

/* ---- space (DESIGN.md "Space management"; cachefilesd(8)) ----------- */

/*
 * The cache file system's free blocks and free files (statvfs of
 * cache.dir, every second and after every 4 MiB stored) and cache.max_size
 * against cache.bytes, against the thresholds: CACHE_CACHING above
 * bcull/fcull; CACHE_CULLING while a culling run is on (started below
 * bcull/fcull, by a backing write's ENOSPC/EDQUOT, or by cache_cull_now(),
 * until above brun/frun); CACHE_STOPPED below bstop/fstop: nothing new is
 * stored (reads are answered from the fetched data, writes go through to
 * the upstream) while culling goes on.
 */
enum cache_space_state { CACHE_CACHING, CACHE_CULLING, CACHE_STOPPED };

struct cache_space {
	enum cache_space_state state;
	uint64_t blocks_total, blocks_avail;   /* bytes of the cache file system */
	uint64_t files_total, files_avail;     /* inodes of it; total 0 = not reported */
	uint64_t run_objects, run_bytes;       /* culled by the current or last run
						* (cache_cull_now's done(): since it was called) */
	int starved;                           /* the last pass found nothing to cull */
};

/* The state now, and its name: "caching", "culling", "stopped". */
void cache_space(struct cache_space *out);
const char *cache_space_state_name(enum cache_space_state s);

/* False while stopped (below bstop/fstop): fetch no more than asked. */
bool cache_storing(void);

/* Measure now and act on the thresholds (after a reload changed them). */
void cache_space_check(void);

/*
 * `nfscachectl cull`: a culling run now, until the cache is above
 * brun/frun (and max_size's brun).  Returns 0: done(arg, space) is called
 * once, on the loop, when the run ends (never from inside this call;
 * *space as cache_space(), its run counts since this call; starved set
 * when nothing more could be culled: every remaining object dirty or
 * pinned).  Returns -EALREADY when the cache is above brun/frun and no run
 * is on (nothing to cull), -ENODEV when the cache is not open: done is
 * never called then.
 */
int cache_cull_now(void (*done)(void *arg, const struct cache_space *space), void *arg);

/* The volume's configuration. */
const struct cache_config *cache_config(void);

#endif
