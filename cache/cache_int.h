/*
 * cache_int.h — what the files of cache/ (cache.c, dirty.c, persist.c,
 * lease.c, cull.c, reconcile.c, frag.c) share and nothing else may use: the
 * module's state (cache_state), the index lease, and the helpers more than
 * one of them calls.  The rest of the daemon uses cache/cache.h only.
 */
#ifndef NFSCACHED_CACHE_INT_H
#define NFSCACHED_CACHE_INT_H

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "cache/extent.h"
#include "common/array.h"
#include "common/list.h"

struct cache_index;
struct index_record;
struct worker_pool;

/* Who holds the index: one worker job at a time uses it (index.h). */
enum index_holder {
	INDEX_FREE,
	INDEX_HELD_BATCH,               /* a batch (persist.c) */
	INDEX_HELD_CULL,                /* a culling step or the reconciliation */
};

/* The module's state: one per daemon.  Each field says which file writes it. */
struct cache_state {
	struct ev_loop *loop;           /* cache.c (cache_init) */
	const struct cache_config *cfg; /* cache.c (cache_init): the caller's, read live */
	char *volume;                   /* cache.c (cache_init): "SERVER:EXPORT" */
	struct cache_index *index;      /* cache.c (cache_init); used by one worker job at
					 * a time, the holder of the index lease */
	struct worker_pool *workers;    /* cache.c (cache_init, cache_finalise) */
	struct cache_object **buckets;  /* cache.c: the object table */
	size_t nbuckets;                /* cache.c: power of two */
	size_t count;                   /* cache.c: objects in the table (resident) */
	struct list_node resident_lru;  /* cache.c: resident objects, least recently used first */
	int evict_logged;               /* resident.c: the "above resident_max" line was logged */
	uint64_t batch_done_seq;        /* persist.c: the last batch committed */
	uint64_t inval_seq;             /* cache.c: invalidate --all requests so far */
	uint64_t inval_done;            /* persist.c: the last of them the index carried out */
	bool reconciled;                /* reconcile.c: the start-up reconciliation ended */
	bool all_resident;              /* persist.c sets it at start when every object of
					 * the index was loaded, resident.c clears it at the
					 * first eviction: a handle not in memory is then
					 * not in the index either */
	uint64_t next_id;               /* cache.c, reconcile.c: the next object's id */
	uint64_t seq;                   /* cache.c: change sequence, the last change's number */
	int lock_fd;                    /* cache.c: holds the flock on CACHE_DIR/lock */
	struct list_node open_fds;      /* cache.c: objects with an open backing file, LRU first */
	unsigned n_open;                /* cache.c: their count */
	struct list_node wb_list;       /* dirty.c: objects with bytes not committed
					 * upstream, oldest first */
	struct list_node persist_queue; /* persist.c: objects the index must learn
					 * (persist_mark), oldest first */
	ev_timer batch_timer;           /* persist.c: BATCH_INTERVAL_S, a batch every second */
	ARRAY(uint64_t) sync_ids;       /* persist.c: objects whose backing file was closed
					 * while queued: the next batch syncs it first */
	ARRAY(uint64_t) deletes;        /* persist.c: ids whose rows the next batch removes */
	ARRAY(int64_t) touches;         /* persist.c: (id, last access) pairs the next batch
					 * records, of objects no longer in memory */
	uint64_t batch_seq;             /* persist.c: batches started so far (the running
					 * one's number) */
	struct list_node sync_waiters;  /* persist.c: cache_sync() callers, struct sync_waiter */
	bool batch_again;               /* persist.c, dirty.c set; lease.c clears: a batch
					 * is wanted as soon as the index lease is free */
	enum index_holder index_holder; /* lease.c only */
	uint64_t max_id_at_start;       /* cache.c (cache_init): newer ids are not orphans
					 * to the start-up reconciliation */
};

/* lease.c: who holds the index (one worker job at a time, index.h).
 * Take it before submitting the job: true when taken, false when another
 * holds it (the caller asks again later: batch_again, space_index_free). */
bool index_lease_take(enum index_holder who);
/* Give the index up (on the loop, once the holder's job is done); a batch
 * asked for meanwhile starts, else a culling step waiting for it. */
void index_lease_release(void);
enum index_holder index_lease_holder(void);
/* cache_init/cache_finalise: nobody holds it, no batch is wanted. */
void index_lease_reset(void);

extern struct cache_state cache_state;

/* cache.c: the object table, changes, extent callbacks, backing files */
void changed(struct cache_object *o);
int64_t ns_of(const nfstime3 *t);
void bytes_changed(uint64_t before, uint64_t after);
int add_range(uint64_t start, uint64_t end, void *ctx);
int collect_range(uint64_t start, uint64_t end, void *ctx);
int remove_range(uint64_t start, uint64_t end, void *ctx);
void table_grow(void);
struct cache_object *object_new(uint64_t id, const uint8_t *fh, uint32_t fh_len);
/* The object in memory for a handle, or NULL, without counting a use. */
struct cache_object *cache_find_resident(const uint8_t *fh, uint32_t fh_len);
/* Take `o` out of memory: its index rows stay (resident.c's eviction). */
void object_evict(struct cache_object *o);
int object_fd(struct cache_object *o);
/* May `o` go now: not pinned, no dirty or sent bytes, no recovery to
 * decide, no "written to" mark on its way, no waiter. */
bool object_cullable(const struct cache_object *o);
/* Take `o` out of the table and free it (its file and rows are the caller's). */
void object_remove(struct cache_object *o);
/* Free `o` (out of every list already), the daemon's free hook first. */
void object_free(struct cache_object *o);

/*
 * dirty.c: the write-back state of an object (DESIGN.md "Write-back"),
 * allocated by its first local write (or by loading recorded dirty ranges)
 * and freed once nothing of it is uncommitted (dirty, commit and unwritten
 * all empty) or with the object.  Every field is dirty.c's.
 */
struct dirty_state {
	struct cache_object *o;          /* whose it is */
	struct extent_set dirty;         /* written locally, not sent upstream yet (⊆ valid):
					  * per page the merged ranges are wb_pgbase/wb_bytes */
	struct extent_set commit;        /* sent upstream UNSTABLE by the running pass, not
					  * committed yet (⊆ valid) */
	struct extent_set unwritten;     /* bytes a COMMIT answered locally (cache_sync)
					  * made stable that are not committed upstream yet
					  * (⊆ dirty ∪ commit) */
	const struct rpc_cred *wb_cred;  /* writer of the dirty bytes (cred.h: a shared
					  * reference); write-back uses it; never NULL */
	ev_tstamp dirty_since;           /* loop time the oldest dirty byte was written */
	struct list_node wb_link;        /* in cache_state.wb_list (cache_uncommitted_list()) */
	uint64_t local_size;             /* bytes: the size clients see meanwhile */
	int64_t local_mtime_ns;          /* mtime and ctime clients see meanwhile */
	uint64_t uncommitted_bytes;      /* bytes in dirty ∪ commit */
	ev_tstamp unwritten_since;       /* loop time the oldest unwritten byte became
					  * stable locally; 0 = none */
	ev_tstamp unwritten_later;       /* loop time the first of them added after the
					  * running pass took the dirty ranges became
					  * stable; 0 = none */
};

/* dirty.c: the write-back state */
/* The dirty and commit sets of `o`, empty ones when it has no write-back
 * state (read-only: change them through dirty.c's functions). */
const struct extent_set *object_dirty(const struct cache_object *o);
const struct extent_set *object_commit(const struct cache_object *o);
/* Allocate the write-back state of `o` if it has none (loading recorded
 * dirty ranges, a local write); `cred` becomes its writer. */
struct dirty_state *dirty_state_get(struct cache_object *o, const struct rpc_cred *cred);
/* Free the write-back state of `o` (object_free): its writer released. */
void dirty_state_free(struct cache_object *o);
uint64_t object_uncommitted_bytes(const struct cache_object *o);
void dirty_changed(struct cache_object *o, uint64_t before);
int foreach_clean_part(const struct cache_object *o, uint64_t start, uint64_t end,
		       int (*fn)(uint64_t s, uint64_t e, void *ctx), void *ctx);
/* A cache_sync() batch completed: the bytes of `stable` still uncommitted
 * are unwritten (cache.unwritten.*). */
void unwritten_add(struct cache_object *o, const struct extent_set *stable);
/* Loaded from the index with cache.commit = local: every dirty byte is
 * unwritten (a COMMIT may have been answered for it), as of now. */
void unwritten_recovered(struct cache_object *o);

/* persist.c: the batched index commits.  o->persist_queued: */
enum persist_queued {
	PERSIST_NONE,
	PERSIST_FULL,                   /* the object's row and ranges */
	PERSIST_ACCESS,                 /* only its last access time (cache_touch) */
};
void persist_mark(struct cache_object *o);
/* Only o's last access time changed (a full mark stays full). */
void persist_mark_access(struct cache_object *o);
/* `o` leaves memory with only its last access time still to record: the
 * next batch records it by id (resident.c's eviction). */
void persist_access_later(struct cache_object *o);
void batch_start(void);
/* Object `id`'s backing file is closed while its ranges wait for the next
 * batch, which syncs the file (opened again by id on a worker) first. */
void batch_sync_id(uint64_t id);
/* The next batch removes object `id`'s rows (first, before any upsert). */
void batch_delete(uint64_t id);
/* cache_init/cache_finalise's steps, in order: load the index into the
 * table, start the batch timer; stop it, write the last batch, free. */
int persist_load(void);
void persist_start(void);
void persist_stop(void);
void persist_last_batch(void);
void persist_free(void);

/* persist.c: an object in memory from its index record (at start: those
 * with dirty data or unrecorded writes; later: a lookup's; volume NULL is
 * this volume).  NULL when the record is another volume's. */
struct cache_object *object_from_record(const struct index_record *r);

/* resident.c: objects in memory on demand */
int resident_init(void);
void resident_finalise(void);
/* The index holds no object of this handle: a lookup said so, and this
 * daemon has not created one since, or every object is in memory. */
bool resident_absent(const uint8_t *fh, uint32_t fh_len);
void resident_absent_add(const uint8_t *fh, uint32_t fh_len);
void resident_absent_forget(const uint8_t *fh, uint32_t fh_len);
/* A lookup of this handle is on its way. */
bool resident_lookup_pending(const uint8_t *fh, uint32_t fh_len);
/* Object `id` left memory for good and its rows are queued for deletion
 * (batch_delete): a lookup finding them answers absent, until the batch
 * deleting them committed (resident_dead_committed). */
void resident_dead_add(uint64_t id);
bool resident_dead(uint64_t id);
void resident_dead_committed(uint64_t id);

/* cull.c: space management */
void space_init(void);
void space_finalise(void);
/* May `len` more bytes be stored?  true yes; false no (stopped, or no room
 * left under max_size): the caller answers without storing. */
bool space_may_store(uint64_t len);
/* Bytes were stored: cache.bytes against max_size. */
void space_stored(void);
/* A backing write failed with ENOSPC/EDQUOT: cull now. */
void space_nospace(void);
/* A batch ended: a culling step waiting for the index may go. */
void space_index_free(void);
/* Start-up reconciliation of the index and the backing files (a worker job
 * run by reconcile.c once the index lease is free). */
void space_reconcile(void);
/* reconcile.c's job ended (it released the index lease): culling may go. */
void space_reconcile_done(void);
/* Delete the backing files of ids[0..n) on a worker (graveyard first). */
void space_bury(const uint64_t *ids, size_t n);

/* frag.c: the backing.extents_per_file_p99 gauge, sampled by a worker job
 * at start and every minute; frag_finalise stops the timer (a job already
 * queued ends with the pool). */
void frag_init(void);
void frag_finalise(void);

/* reconcile.c: submit the reconciliation job; the caller holds the index
 * lease, which the job releases when it ends, then space_reconcile_done().
 * Returns 0 (worker_submit). */
int reconcile_submit(void);

#endif
