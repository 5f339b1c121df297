/*
 * cache_int.h — what cache.c, dirty.c and persist.c share and nothing else
 * may use: the module's state (C) and the helpers more than one of them
 * calls.  The rest of the daemon uses cache/cache.h only.
 */
#ifndef NFSCACHED_CACHE_INT_H
#define NFSCACHED_CACHE_INT_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "cache/extent.h"
#include "common/list.h"

struct cache_index;
struct worker_pool;

struct cache_state {
	struct ev_loop *loop;
	const struct cache_config *cfg;
	char *volume;
	struct cache_index *index;
	struct worker_pool *workers;
	struct cache_object **buckets;
	size_t nbuckets;                /* power of two */
	size_t count;
	uint64_t next_id;
	struct list_node dirty;         /* objects to write to the index */
	ev_timer commit_timer;
	int commit_running;
	uint64_t seq;                   /* change sequence: the last change's number */
	int lock_fd;                    /* holds the flock on CACHE_DIR/lock */
	struct list_node open_fds;      /* objects with an open backing file, LRU first */
	unsigned n_open;
	struct list_node wb_list;       /* objects with dirty data, oldest first */
	int *sync_fds;                  /* closed backing files the next batch syncs first */
	size_t n_sync_fds, cap_sync_fds;
	int commit_again;               /* a batch is wanted as soon as the running one ends */
	uint64_t *deletes;              /* ids whose rows the next batch removes */
	size_t n_deletes, cap_deletes;
	uint64_t max_id_at_start;       /* start-up reconciliation: newer ids are not orphans */
};

/* C.commit_running: who holds the index (one worker job at a time, index.h) */
#define INDEX_HELD_BATCH 1
#define INDEX_HELD_CULL 2

extern struct cache_state C;

/* cache.c: the object table, changes, extent callbacks, backing files */
void changed(struct cache_object *o);
int64_t ns_of(const nfstime3 *t);
void bytes_changed(uint64_t before, uint64_t after);
int add_range(uint64_t start, uint64_t end, void *ctx);
int collect_range(uint64_t start, uint64_t end, void *ctx);
int remove_range(uint64_t start, uint64_t end, void *ctx);
void table_grow(void);
struct cache_object *object_new(uint64_t id, const uint8_t *fh, uint32_t fh_len);
int object_fd(struct cache_object *o);
/* Can `o` go now: no dirty or sent bytes, no call, fetch, pass or waiter on it. */
int object_cullable(const struct cache_object *o);
/* Take `o` out of the table and free it (its file and rows are the caller's). */
void object_remove(struct cache_object *o);
/* Free `o` (out of every list already), the daemon's free hook first. */
void object_free(struct cache_object *o);

/* dirty.c: the write-back state */
uint64_t dirty_bytes(const struct cache_object *o);
void dirty_changed(struct cache_object *o, uint64_t before);
int foreach_clean_part(const struct cache_object *o, uint64_t start, uint64_t end,
		       int (*fn)(uint64_t s, uint64_t e, void *ctx), void *ctx);

/* persist.c: the batched index commits */
void mark_dirty(struct cache_object *o);
void commit_start(void);
void commit_sync_fd(int fd);
/* The next batch removes object `id`'s rows (first, before any upsert). */
void commit_delete(uint64_t id);

/* cull.c: space management */
void space_init(void);
void space_finalise(void);
/* May `len` more bytes be stored?  1 yes; 0 no (stopped, or no room left
 * under max_size): the caller answers without storing. */
int space_may_store(uint64_t len);
/* Bytes were stored: cache.bytes against max_size. */
void space_stored(void);
/* A backing write failed with ENOSPC/EDQUOT: cull now. */
void space_nospace(void);
/* A batch ended: a culling step waiting for the index may go. */
void space_index_free(void);
/* Start-up reconciliation of the index and the backing files (a worker job). */
void space_reconcile(void);

#endif
