/*
 * cache.c — the object table (lookup by file handle, ids, pins, the free
 * hook), coherency rules and change generations, per-credential ACCESS
 * results, invalidation and truncation, waiters; starting and stopping the
 * module (cache_init/cache_finalise: the lock, the index, the worker pool,
 * in that order and undone in reverse).  Not here: the bytes of an object
 * in its backing file (data.c), the write-back state (dirty.c), persisting
 * objects to the index (persist.c), space and culling (cull.c).
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/cred.h"
#include "cache/index.h"
#include "cache/worker.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

#define HASH_BUCKETS_MIN 1024

struct cache_state cache_state;

/* A change to `o`: replies to calls sent before it are stale. */
void changed(struct cache_object *o)
{
	o->gen = ++cache_state.seq;
}

uint64_t cache_seq(void)
{
	return cache_state.seq;
}

static uint32_t fh_hash(const uint8_t *fh, uint32_t len)
{
	return hash_fnv1a32(HASH_FNV32_OFFSET, fh, len);
}

int64_t ns_of(const nfstime3 *t)
{
	return (int64_t)t->seconds * 1000000000 + t->nseconds;
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

/* Keep cache.bytes in step with a change of the valid set. */
void bytes_changed(uint64_t before, uint64_t after)
{
	stats.cache_bytes += after - before;
}

/* extent_set_foreach callbacks: add to / remove from the set `ctx`. */
int add_range(uint64_t start, uint64_t end, void *ctx)
{
	extent_set_add(ctx, start, end);
	return 0;
}

int collect_range(uint64_t start, uint64_t end, void *ctx)
{
	uint64_t **p = ctx;

	(*p)[0] = start;
	(*p)[1] = end;
	*p += 2;
	return 0;
}

int remove_range(uint64_t start, uint64_t end, void *ctx)
{
	extent_set_remove(ctx, start, end);
	return 0;
}

void table_grow(void)
{
	size_t n = cache_state.nbuckets ? cache_state.nbuckets * 2 : HASH_BUCKETS_MIN;
	struct cache_object **b = xcalloc(n, sizeof(*b));
	for (size_t i = 0; i < cache_state.nbuckets; i++) {
		struct cache_object *o = cache_state.buckets[i], *next;
		for (; o; o = next) {
			next = o->hash_next;
			size_t k = fh_hash(o->fh, o->fh_len) & (n - 1);
			o->hash_next = b[k];
			b[k] = o;
		}
	}
	free(cache_state.buckets);
	cache_state.buckets = b;
	cache_state.nbuckets = n;
}

struct cache_object *object_new(uint64_t id, const uint8_t *fh, uint32_t fh_len)
{
	size_t bytes = offsetof(struct cache_object, fh) + fh_len;
	struct cache_object *o = xcalloc(1, bytes > sizeof(*o) ? bytes : sizeof(*o));
	o->magic = CACHE_OBJECT_MAGIC;
	o->id = id;
	memcpy(o->fh, fh, fh_len);
	o->fh_len = fh_len;
	o->fd = -1;
	extent_set_init(&o->valid);
	list_init(&o->persist_link);
	list_init(&o->waiters);
	list_init(&o->fd_link);
	list_add_tail(&cache_state.resident_lru, &o->lru_link);
	if (cache_state.count + 1 > cache_state.nbuckets)
		table_grow();
	size_t k = fh_hash(fh, fh_len) & (cache_state.nbuckets - 1);
	o->hash_next = cache_state.buckets[k];
	cache_state.buckets[k] = o;
	cache_state.count++;
	stats.cache_objects_resident = cache_state.count;
	if (id >= cache_state.next_id)
		cache_state.next_id = id + 1;
	return o;
}

void cache_pin(struct cache_object *o)
{
	o->pins++;
}

void cache_unpin(struct cache_object *o)
{
	assert(o->pins > 0);
	o->pins--;
}

void cache_change_begin(struct cache_object *o)
{
	o->changes_in_flight++;
	cache_pin(o);
}

void cache_change_end(struct cache_object *o)
{
	assert(o->changes_in_flight > 0);
	if (--o->changes_in_flight == 0)
		o->changes_raced = 0;
	cache_unpin(o);
}

bool object_cullable(const struct cache_object *o)
{
	return o->pins == 0 && !cache_has_uncommitted(o) && o->wb_recover == CACHE_RECOVER_NONE &&
	       o->wopen != CACHE_WOPEN_REQUESTED && list_empty(&o->waiters);
}

/* Out of the table, the resident list and the open files. */
static void object_unlink(struct cache_object *o)
{
	size_t k = fh_hash(o->fh, o->fh_len) & (cache_state.nbuckets - 1);
	struct cache_object **pp = &cache_state.buckets[k];

	while (*pp != o)
		pp = &(*pp)->hash_next;
	*pp = o->hash_next;
	list_del(&o->lru_link);
	cache_state.count--;
	stats.cache_objects_resident = cache_state.count;
	if (o->fd >= 0) {
		list_del(&o->fd_link);
		close(o->fd);
		cache_state.n_open--;
	}
}

void object_remove(struct cache_object *o)
{
	object_unlink(o);
	/* floors: the gauges never wrap, whatever went before */
	if (stats.cache_objects)
		stats.cache_objects--;
	stats.cache_bytes -= o->valid.bytes < stats.cache_bytes ? o->valid.bytes : stats.cache_bytes;
	if (o->persist_queued)
		list_del(&o->persist_link);
	object_free(o);
}

void object_evict(struct cache_object *o)
{
	assert(!o->persist_queued && !cache_has_uncommitted(o));
	object_unlink(o);
	object_free(o);
}

static void (*free_hook)(struct cache_object *o);

void cache_set_free_hook(void (*fn)(struct cache_object *o))
{
	free_hook = fn;
}

void object_free(struct cache_object *o)
{
	if (free_hook)
		free_hook(o);
	extent_set_clear(&o->valid);
	dirty_state_free(o);
	free(o->access);
	o->magic = 0;
	free(o);
}

struct cache_object *cache_find_resident(const uint8_t *fh, uint32_t fh_len)
{
	if (!cache_state.nbuckets)
		return NULL;
	size_t k = fh_hash(fh, fh_len) & (cache_state.nbuckets - 1);
	for (struct cache_object *o = cache_state.buckets[k]; o; o = o->hash_next)
		if (o->fh_len == fh_len && memcmp(o->fh, fh, fh_len) == 0)
			return o;
	return NULL;
}

struct cache_object *cache_find(const uint8_t *fh, uint32_t fh_len)
{
	struct cache_object *o = cache_find_resident(fh, fh_len);

	if (o) {
		list_del(&o->lru_link);
		list_add_tail(&cache_state.resident_lru, &o->lru_link);
	}
	return o;
}

struct cache_object *cache_get(const uint8_t *fh, uint32_t fh_len)
{
	struct cache_object *o = cache_find(fh, fh_len);

	if (!o && cache_state.nbuckets && resident_absent(fh, fh_len)) {
		/* the index holds no object of it: this one is new */
		resident_absent_forget(fh, fh_len);
		o = object_new(cache_state.next_id, fh, fh_len);
		stats.cache_objects++;
		o->last_access_s = now_s();
		persist_mark(o);
	}
	return o;
}

const struct cache_config *cache_config(void)
{
	return cache_state.cfg;
}

void cache_invalidate(struct cache_object *o, const char *why)
{
	uint64_t before = o->valid.bytes;

	changed(o);
	if (before == 0)
		return;
	extent_set_clear(&o->valid);
	/* dirty bytes are newer than anything upstream: never dropped here */
	extent_set_foreach(object_dirty(o), add_range, &o->valid);
	extent_set_foreach(object_commit(o), add_range, &o->valid);
	bytes_changed(before, o->valid.bytes);
	if (o->valid.bytes == before)
		return;   /* nothing clean was held */
	log_debug("cache: object %llu invalidated: %s", (unsigned long long)o->id, why);
	stats.cache_invalidations++;
	if (o->fd >= 0 && o->valid.count == 0)
		backing_truncate(o->fd, 0);
	persist_mark(o);
}

/* Permissions changed: what the upstream granted before no longer holds
 * (the Linux client zaps its access cache the same way). */
static void forget_access_if_changed(struct cache_object *o, const fattr3 *a)
{
	if (o->have_attrs && (o->attrs.mode != a->mode || o->attrs.uid != a->uid ||
			      o->attrs.gid != a->gid))
		cache_access_forget(o);
}

/* Keep what coh does not hold of `a` (a regular file's attributes). */
static void attrs_keep(struct cache_object *o, const fattr3 *a)
{
	o->attrs.mode = a->mode;
	o->attrs.nlink = a->nlink;
	o->attrs.uid = a->uid;
	o->attrs.gid = a->gid;
	o->attrs.rdev = a->rdev;
	o->attrs.atime = a->atime;
	o->attrs.used = a->used;
	o->attrs.fsid = a->fsid;
	o->have_attrs = 1;
}

void cache_object_attrs(const struct cache_object *o, fattr3 *out)
{
	memset(out, 0, sizeof(*out));
	out->type = NF3REG;
	out->mode = o->attrs.mode;
	out->nlink = o->attrs.nlink;
	out->uid = o->attrs.uid;
	out->gid = o->attrs.gid;
	out->size = o->coh.size;
	out->used = o->attrs.used;
	out->rdev = o->attrs.rdev;
	out->fsid = o->attrs.fsid;
	out->fileid = o->coh.fileid;
	out->atime = o->attrs.atime;
	out->mtime.seconds = (uint32_t)(o->coh.mtime_ns / 1000000000);
	out->mtime.nseconds = (uint32_t)(o->coh.mtime_ns % 1000000000);
	out->ctime.seconds = (uint32_t)(o->coh.ctime_ns / 1000000000);
	out->ctime.nseconds = (uint32_t)(o->coh.ctime_ns % 1000000000);
}

static void set_coherency(struct cache_object *o, const fattr3 *a)
{
	forget_access_if_changed(o, a);
	/* grown upstream by someone else while dirty: the larger size holds
	 * (Linux nfs_update_inode with writes pending) */
	if (cache_has_uncommitted(o) && a->size > o->dirty_state->local_size)
		o->dirty_state->local_size = a->size;
	o->coh.known = 1;
	o->coh.size = a->size;
	o->coh.mtime_ns = ns_of(&a->mtime);
	o->coh.ctime_ns = ns_of(&a->ctime);
	o->coh.fileid = a->fileid;
	attrs_keep(o, a);
	o->attr_time = ev_now(cache_state.loop);
	persist_mark(o);
}

static int coherency_matches(const struct cache_object *o, const fattr3 *a)
{
	return o->coh.size == a->size && o->coh.mtime_ns == ns_of(&a->mtime) &&
	       o->coh.ctime_ns == ns_of(&a->ctime) && o->coh.fileid == a->fileid;
}

void cache_attrs_update(struct cache_object *o, const fattr3 *a, uint64_t gen_at_start)
{
	if (o->gen > gen_at_start || a->type != NF3REG)
		return;   /* started before a change that completed meanwhile */
	if (o->wb_recover != CACHE_RECOVER_NONE) {
		/* dirty bytes from before a restart: written back only onto the
		 * file they were written to, unchanged since */
		o->wb_recover = CACHE_RECOVER_NONE;
		if (!o->coh.known || !coherency_matches(o, a)) {
			uint64_t n = cache_dirty_drop(o, 0, UINT64_MAX);
			log_warning("cache: object %llu changed upstream while nfscached was "
				    "stopped: %llu dirty bytes discarded",
				    (unsigned long long)o->id, (unsigned long long)n);
		} else
			log_info("cache: object %llu: %llu dirty bytes from before the restart "
				 "to write back", (unsigned long long)o->id,
				 (unsigned long long)object_uncommitted_bytes(o));
	}
	/* with a WRITE or SETATTR of ours in flight the upstream may have
	 * applied it already: the attributes are taken and the data kept, its
	 * reply's wcc data following (Linux nfs_update_inode with writes
	 * outstanding) */
	if (o->coh.known && !coherency_matches(o, a) && o->changes_in_flight == 0)
		cache_invalidate(o, "changed upstream");
	if (!o->coh.known || !coherency_matches(o, a))
		set_coherency(o, a);
	else {
		forget_access_if_changed(o, a);
		attrs_keep(o, a);
		o->attr_time = ev_now(cache_state.loop);
	}
}

bool cache_change_done(struct cache_object *o, const wcc_data *wcc)
{
	const wcc_attr *pre = wcc->before.attributes_follow ?
			      &wcc->before.pre_op_attr_u.attributes : NULL;
	const fattr3 *post = wcc->after.attributes_follow ? &wcc->after.post_op_attr_u.attributes : NULL;
	int ours = 0;

	if (o->changes_in_flight > 1)
		o->changes_raced = 1;

	if (pre && o->coh.known && pre->size == o->coh.size &&
	    ns_of(&pre->mtime) == o->coh.mtime_ns && ns_of(&pre->ctime) == o->coh.ctime_ns)
		ours = 1;
	else if (!pre && o->coh.known)
		ours = 1;   /* no pre-op attributes (ganesha's WRITE): taken as our own
			     * change, as the Linux client's force_wcc does */
	else if (o->changes_in_flight > 1)
		ours = 1;   /* our other changes in flight explain it; replies come
			     * back in any order (as the Linux client, the attributes
			     * are revalidated instead of the data dropped) */
	else if (!o->coh.known && o->valid.bytes == 0)
		ours = 1;   /* nothing held that another change could contradict */
	if (!ours)
		cache_invalidate(o, "changed upstream before our change");
	changed(o);
	if (post && post->type == NF3REG) {
		/* an older reply arriving last must not roll the attributes back;
		 * changes in one tick of the upstream's clock share a ctime, and
		 * of racing WRITEs the one that grew the file most came last */
		int64_t ctime_ns = ns_of(&post->ctime);
		if (!o->coh.known || ctime_ns > o->coh.ctime_ns ||
		    (ctime_ns == o->coh.ctime_ns && (!o->changes_raced || post->size >= o->coh.size)))
			set_coherency(o, post);
		if (o->changes_in_flight > 1)
			o->attr_time = 0;
	} else {
		o->coh.known = 0;
		o->attr_time = 0;
	}
	return ours;
}

void cache_truncate(struct cache_object *o, uint64_t size)
{
	uint64_t before = o->valid.bytes, dbefore = object_uncommitted_bytes(o);

	extent_set_remove(&o->valid, size, UINT64_MAX);
	bytes_changed(before, o->valid.bytes);
	if (o->dirty_state) {
		extent_set_remove(&o->dirty_state->dirty, size, UINT64_MAX);
		extent_set_remove(&o->dirty_state->commit, size, UINT64_MAX);
	}
	dirty_changed(o, dbefore);
	if (o->dirty_state && o->dirty_state->local_size > size)
		o->dirty_state->local_size = size;
	if (o->fd >= 0)
		backing_truncate(o->fd, size);
	changed(o);
	persist_mark(o);
}

bool cache_attrs_fresh(const struct cache_object *o)
{
	return o->coh.known && o->have_attrs &&
	       ev_now(cache_state.loop) - o->attr_time <= (double)cache_state.cfg->acregmax;
}

void cache_attrs_expire(struct cache_object *o)
{
	o->attr_time = 0;
}

static uint32_t gids_hash(const struct rpc_cred *cred)
{
	return fh_hash((const uint8_t *)cred->gids, cred->gids_len * 4) ^ cred->gids_len;
}

static int access_same(const struct cache_access *a, const struct rpc_cred *cred)
{
	return a->time != 0 && a->uid == cred->uid && a->gid == cred->gid &&
	       a->gids_hash == gids_hash(cred);
}

void cache_access_record(struct cache_object *o, const struct rpc_cred *cred, uint32_t asked,
			 uint32_t granted)
{
	struct cache_access *slot = NULL;
	uint32_t known = 0;

	for (uint32_t i = 0; i < o->naccess; i++) {
		if (access_same(&o->access[i], cred)) {
			slot = &o->access[i];
			if (ev_now(cache_state.loop) - slot->time <= (double)cache_state.cfg->acregmax)
				known = slot->granted & ~asked;
			break;
		}
	}
	if (!slot && o->naccess < CACHE_ACCESS_SLOTS) {
		/* most files are read by one credential: one slot more at a time */
		o->access = xreallocarray(o->access, o->naccess + 1, sizeof(*o->access));
		slot = &o->access[o->naccess++];
	} else if (!slot) {
		slot = &o->access[0];
		for (uint32_t i = 1; i < o->naccess; i++)
			if (o->access[i].time < slot->time)
				slot = &o->access[i];   /* the oldest goes */
	}
	granted = known | (granted & asked);
	slot->uid = cred->uid;
	slot->gid = cred->gid;
	slot->gids_hash = gids_hash(cred);
	slot->granted = granted;
	slot->time = ev_now(cache_state.loop);
}

void cache_access_forget(struct cache_object *o)
{
	free(o->access);
	o->access = NULL;
	o->naccess = 0;
}

int cache_access_granted(const struct cache_object *o, const struct rpc_cred *cred, uint32_t bits)
{
	for (uint32_t i = 0; i < o->naccess; i++) {
		const struct cache_access *a = &o->access[i];
		if (access_same(a, cred))
			return (a->granted & bits) == bits &&
			       ev_now(cache_state.loop) - a->time <= (double)cache_state.cfg->acregmax;
	}
	return 0;
}

void cache_wait(struct cache_object *o, struct cache_waiter *w)
{
	list_add_tail(&o->waiters, &w->link);
}

void cache_wake(struct cache_object *o)
{
	struct list_node woken;

	/* take the list first: a woken call may wait again */
	list_init(&woken);
	if (list_empty(&o->waiters))
		return;
	woken.next = o->waiters.next;
	woken.prev = o->waiters.prev;
	woken.next->prev = &woken;
	woken.prev->next = &woken;
	list_init(&o->waiters);
	while (!list_empty(&woken)) {
		struct cache_waiter *w = list_entry(woken.next, struct cache_waiter, link);
		list_del(&w->link);
		w->wake(w);
	}
}

void cache_touch(struct cache_object *o)
{
	int64_t now = now_s();

	/* persisted with the next batch; a minute's precision is enough for LRU */
	o->last_access_s = now;
	if (now - o->access_recorded_s >= 60)
		persist_mark_access(o);
}

void cache_foreach(void (*fn)(struct cache_object *o, void *arg), void *arg)
{
	for (size_t i = 0; i < cache_state.nbuckets; i++)
		for (struct cache_object *o = cache_state.buckets[i]; o; o = o->hash_next)
			fn(o, arg);
}

static void sum_valid(struct cache_object *o, void *arg)
{
	*(uint64_t *)arg += o->valid.bytes;
}

uint64_t cache_invalidate_stored(void)
{
	uint64_t resident_bytes = 0;

	if (!cache_state.workers)
		return 0;
	/* their ranges go with the next batch, and a lookup answered
	 * meanwhile is invalidated as it arrives */
	uint64_t stored = stats.cache_objects > cache_state.count ?
			  stats.cache_objects - cache_state.count : 0;

	cache_foreach(sum_valid, &resident_bytes);
	stats.cache_bytes = resident_bytes;
	stats.cache_invalidations += stored;
	cache_state.inval_seq++;
	if (index_lease_holder() != INDEX_FREE)
		cache_state.batch_again = true;
	else
		batch_start();
	return stored;
}

/* ---- start and stop ------------------------------------------------- */

static void objects_free(void)
{
	for (size_t i = 0; i < cache_state.nbuckets; i++) {
		struct cache_object *o = cache_state.buckets[i], *next;
		for (; o; o = next) {
			next = o->hash_next;
			if (o->fd >= 0)
				close(o->fd);
			object_free(o);
		}
	}
	free(cache_state.buckets);
	cache_state.buckets = NULL;
	cache_state.nbuckets = 0;
}

int cache_init(struct ev_loop *loop, const struct cache_config *cfg, const char *volume)
{
	char lock_path[4200];
	int reset = 0, rc;

	memset(&cache_state, 0, sizeof(cache_state));
	cache_state.loop = loop;
	cache_state.cfg = cfg;
	cache_state.next_id = 1;
	cache_state.lock_fd = -1;
	list_init(&cache_state.persist_queue);
	list_init(&cache_state.open_fds);
	list_init(&cache_state.wb_list);
	list_init(&cache_state.resident_lru);
	if ((rc = backing_init(cfg->dir)) != 0)
		goto fail;
	/* one daemon per cache directory: another would reset an index it
	 * finds locked, and the two would write the same backing files */
	snprintf(lock_path, sizeof(lock_path), "%s/lock", cfg->dir);
	cache_state.lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (cache_state.lock_fd < 0 || flock(cache_state.lock_fd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		log_error("cache: %s is in use by another nfscached", cfg->dir);
		goto fail;
	}
	cache_state.index = index_open(cfg->dir, &reset);
	if (!cache_state.index) {
		rc = -EIO;
		goto fail;
	}
	cache_state.volume = xstrdup(volume);
	table_grow();
	if (!reset && persist_load() != 0) {
		if (index_damaged(cache_state.index) && cache_state.count == 0) {
			/* damaged since a clean stop (whose mark skipped the
			 * quick_check), found before any object was loaded: as
			 * if the check had failed */
			cache_state.index = index_recreate(cache_state.index, cfg->dir);
			if (!cache_state.index) {
				rc = -EIO;
				goto fail;
			}
			stats.cache_objects = stats.cache_bytes = 0;
			reset = 1;
		} else {
			log_warning("cache: index in %s could not be read fully: using what was "
				    "read", cfg->dir);
		}
	}
	if (reset) {
		log_warning("cache: index in %s was unusable: starting with an empty cache",
			    cfg->dir);
		if ((rc = backing_retire_all(cfg->dir)) != 0)
			log_error("cache: cannot move the old backing files of %s away: %s",
				  cfg->dir, strerror(-rc));
		cache_state.all_resident = true;   /* an empty index */
	}
	uint64_t max_id = index_max_id(cache_state.index);
	if (max_id >= cache_state.next_id)
		cache_state.next_id = max_id + 1;
	cache_state.max_id_at_start = cache_state.next_id - 1;
	cache_state.workers = worker_pool_new(loop, 2);
	if (!cache_state.workers) {
		rc = -EAGAIN;
		goto fail;
	}
	if ((rc = resident_init()) != 0) {
		worker_pool_free(cache_state.workers);
		goto fail;
	}
	backing_set_extent_hint(cfg->extent_hint);
	space_init();
	frag_init();
	space_reconcile();   /* in the background: the graveyard, orphans */
	persist_start();
	log_info("cache: %s: %llu objects, %llu bytes in the index; %zu loaded at start",
		 cfg->dir, (unsigned long long)stats.cache_objects,
		 (unsigned long long)stats.cache_bytes, cache_state.count);
	return 0;

fail:
	objects_free();
	cred_finalise();
	index_close(cache_state.index);
	if (cache_state.lock_fd >= 0)
		close(cache_state.lock_fd);
	free(cache_state.volume);
	memset(&cache_state, 0, sizeof(cache_state));
	stats.cache_objects = stats.cache_bytes = stats.cache_objects_resident = 0;
	return rc;
}

void cache_finalise(void)
{
	if (!cache_state.workers)
		return;
	resident_finalise();
	persist_stop();
	frag_finalise();
	space_finalise();
	/* the last batch: wait for a running one, then write what is left */
	worker_pool_free(cache_state.workers);
	cache_state.workers = worker_pool_new(cache_state.loop, 1);
	persist_last_batch();
	worker_pool_free(cache_state.workers);
	cache_state.workers = NULL;
	/* everything recorded: the next start need not check the index */
	if (list_empty(&cache_state.persist_queue) && cache_state.deletes.n == 0)
		index_mark_clean(cache_state.index);
	index_close(cache_state.index);
	objects_free();
	cred_finalise();
	free(cache_state.volume);
	persist_free();
	close(cache_state.lock_fd);
	memset(&cache_state, 0, sizeof(cache_state));
}
