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
 */
#ifndef NFSCACHED_CACHE_H
#define NFSCACHED_CACHE_H

#include <ev.h>
#include <stdint.h>

#include "cache/extent.h"
#include "cache/cache_config.h"
#include "common/list.h"
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

struct cache_object {
	uint32_t magic;
	uint64_t id;                     /* names the backing file and the index row */
	uint8_t fh[64];
	uint32_t fh_len;
	struct cache_object *hash_next;
	struct list_node dirty_link;     /* in the list of objects the index must learn */
	int index_dirty;
	fattr3 attrs;                    /* the last attributes the upstream sent */
	int have_attrs;
	struct cache_coherency coh;
	ev_tstamp attr_time;             /* loop time coh was last confirmed */
	uint64_t gen;                    /* change generation: cache_seq() at its last change */
	struct extent_set valid;         /* bytes held and right */
	int fd;                          /* backing file, -1 when not open */
	struct list_node fd_link;        /* in the LRU list of open backing files */
	int checked;                     /* backing file checked against `valid` */
	int64_t last_access_s;           /* unix seconds */
	int64_t access_recorded_s;       /* last_access_s as the index has it (or the
					  * running batch writes it) */
	struct cache_access access[CACHE_ACCESS_SLOTS];
	struct list_node waiters;        /* struct cache_waiter */
	int busy;                        /* calls in flight for this object */
	int getattr_busy;                /* a revalidating GETATTR is in flight */
	int changes_in_flight;           /* our WRITE/SETATTR calls not answered yet */
	struct read_state *rd;           /* the READ handler's (daemon/nfs_read.c), NULL until
					  * the object's first READ; released by the free hook */

	/* write-back (DESIGN.md "Write-back"); dirty ⊆ valid, commit ⊆ valid */
	struct extent_set dirty;         /* written locally, not sent upstream yet: per page
					  * the merged ranges are wb_pgbase/wb_bytes */
	struct extent_set commit;        /* sent upstream UNSTABLE by the running pass,
					  * not committed yet */
	uint64_t local_size;             /* bytes: the size clients see while dirty */
	int64_t local_mtime_ns;          /* mtime and ctime clients see while dirty */
	struct rpc_cred wb_cred;         /* writer of the dirty bytes; write-back uses it */
	struct list_node wb_link;        /* in the list of objects with dirty data */
	ev_tstamp dirty_since;           /* loop time the oldest dirty byte was written */
	int wopen;                       /* 0; 1 = "written to" requested in the index;
					  * 2 = recorded (local writes may go ahead) */
	size_t recorded_ranges;          /* valid ranges the index holds (or a running
					  * batch is writing) for it */
	uint64_t unsynced_bytes;         /* bytes in dirty ∪ commit */
	int wb_recover;                  /* dirty ranges from the index, kept only if the
					  * upstream file is unchanged since (first attributes);
					  * 2 = their GETATTR is in flight */
	struct writeback_state *wb;      /* write-back's (daemon/writeback.c), NULL until the
					  * object's first pass; released by the free hook */
};

/* A call waiting for something in flight on an object (a fetch, GETATTR). */
struct cache_waiter {
	struct list_node link;
	void (*wake)(struct cache_waiter *w);
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

/* The object for a file handle, or NULL. */
struct cache_object *cache_find(const uint8_t *fh, uint32_t fh_len);

/* The object for a file handle, created (empty, attributes unknown) when
 * missing.  fh_len must be 1..64. */
struct cache_object *cache_get(const uint8_t *fh, uint32_t fh_len);

/*
 * Attributes from an upstream reply for this object.  `gen_at_start` is the
 * object's generation when the call that brought them was sent: a change
 * completed since makes them stale, and they are ignored.  A size, mtime,
 * ctime or fileid different from the coherency data invalidates the data.
 */
void cache_attrs_update(struct cache_object *o, const fattr3 *a, uint64_t gen_at_start);

/*
 * wcc data of a change made through nfscached (WRITE, SETATTR, COMMIT):
 * pre-op attributes equal to the coherency data mean nobody else changed
 * the file meanwhile, and the post-op attributes become the new coherency
 * data without invalidation; otherwise the data is invalidated.  Without
 * pre-op attributes the change is taken as ours (Linux nfs_post_op_update_
 * inode_force_wcc).  Bumps the
 * generation.  Returns 1 when the change was explained by our own call.
 */
int cache_change_done(struct cache_object *o, const wcc_data *wcc);

/* Drop the object's clean data (not the object, never its dirty bytes):
 * counted in cache.invalidations. */
void cache_invalidate(struct cache_object *o, const char *why);

/* Cut the data at `size` bytes (SETATTR of the size), the tail of the last
 * partial page and dirty bytes past it included. */
void cache_truncate(struct cache_object *o, uint64_t size);

/* Were the coherency data confirmed within cache.acregmax? */
int cache_attrs_fresh(const struct cache_object *o);

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
 * call done(arg, rc) on the loop thread: rc 0, or -EIO as cache_read_local().
 * buf must stay valid until then.
 */
void cache_read_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
		      void (*done)(void *arg, int rc), void *arg);

/* Wait for the next cache_wake() of `o`. */
void cache_wait(struct cache_object *o, struct cache_waiter *w);
/* Wake every waiter of `o` (each wake() runs once; they may wait again). */
void cache_wake(struct cache_object *o);

/* Note a use of `o` (for least-recently-used order; persisted in batches). */
void cache_touch(struct cache_object *o);

/* ---- write-back state (DESIGN.md "Write-back") -------------------- */

/* 1 when `o` holds bytes not committed upstream yet (dirty, or sent and
 * awaiting the upstream COMMIT). */
int cache_has_dirty(const struct cache_object *o);

/* The file size clients see, bytes: the upstream's, or while dirty, the
 * upstream's extended by local writes. */
uint64_t cache_size(const struct cache_object *o);

/* While `o` is dirty, give `a` (attributes of `o` from the upstream or the
 * cache) the local size, mtime and ctime; otherwise leave it alone. */
void cache_patch_attrs(const struct cache_object *o, fattr3 *a);

/*
 * Before the first local write of this daemon life to an object holding
 * valid data, the index must record that the object is being written
 * (after a crash its unrecorded writes may sit on top of recorded ranges,
 * which are then not trusted).  Returns 1 when local writes may go ahead,
 * else 0: the record is on its way, and `w` is woken (cache_wake) once it
 * is in the index.
 */
int cache_write_ready(struct cache_object *o, struct cache_waiter *w);

/*
 * An UNSTABLE WRITE accepted locally (RFC 1813 §3.3.7): `len` bytes at
 * `offset` go to the backing file with one pwrite and become valid and
 * dirty; bytes between the current size and `offset` (at most
 * CACHE_WRITE_GAP_MAX) are stored as zeros, valid but not dirty.  `cred`
 * becomes the object's write-back credential (the caller flushes first when
 * another credential holds dirty data).  Needs cache_write_ready().
 * Returns 0, or -errno of the backing write (nothing changed then).
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

/* The objects holding dirty data, in the order they became dirty. */
struct list_node *cache_dirty_list(void);

/* Read `len` bytes at `offset` of the backing file (dirty data for a
 * write-back) on a worker thread; done(arg, rc) on the loop: 0, or -EIO. */
void cache_read_backing_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
			      void (*done)(void *arg, int rc), void *arg);

/*
 * State the daemon hangs off an object (o->rd, o->wb) is its own: the cache
 * calls `fn(o)` once with each object it frees (culled, dropped, or at
 * cache_finalise), just before freeing it, for the daemon to release that
 * state.  One hook, set once (before cache_init); NULL = none.  `fn` must
 * not call back into the cache.
 */
void cache_set_free_hook(void (*fn)(struct cache_object *o));

/* Call fn(o, arg) for every object (nfscachectl invalidate --all); fn must
 * not create or free objects. */
void cache_foreach(void (*fn)(struct cache_object *o, void *arg), void *arg);

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

/* 0 while stopped (below bstop/fstop): fetch no more than asked. */
int cache_storing(void);

/* Measure now and act on the thresholds (after a reload changed them). */
void cache_space_check(void);

/*
 * `nfscachectl cull`: a culling run now, until the cache is above
 * brun/frun (and max_size's brun).  Returns 0 when there is nothing to cull
 * (done() is not called), else 1: done(arg, space) is called on the loop
 * once the run ends (*space as cache_space(); starved set when nothing
 * more could be culled: every remaining object dirty or in use).
 */
int cache_cull_now(void (*done)(void *arg, const struct cache_space *space), void *arg);

/* The volume's configuration. */
const struct cache_config *cache_config(void);

#endif
