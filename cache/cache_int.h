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
#include "proto/list.h"

struct cache_index;
struct worker_pool;

struct cache_state {
	struct ev_loop *loop;
	const struct nfsd_config *cfg;
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
};

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

/* dirty.c: the write-back state */
uint64_t dirty_bytes(const struct cache_object *o);
void dirty_changed(struct cache_object *o, uint64_t before);
int foreach_clean_part(const struct cache_object *o, uint64_t start, uint64_t end,
		       int (*fn)(uint64_t s, uint64_t e, void *ctx), void *ctx);

/* persist.c: the batched index commits */
void mark_dirty(struct cache_object *o);
void commit_start(void);
void commit_sync_fd(int fd);

#endif
