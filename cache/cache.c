/*
 * cache.c — the object table, coherency rules, backing-file use of each
 * object, and the batched persistence of it all: every second the objects
 * changed since the last batch are snapshotted, their backing files
 * fdatasync'ed and the snapshot written to the index in one transaction, on
 * a worker thread.  A range reaches the index only after its data was synced.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/index.h"
#include "cache/worker.h"
#include "daemon/log.h"
#include "daemon/stats.h"

#define COMMIT_INTERVAL_S 1.0
#ifndef MAX_OPEN_BACKING
#define MAX_OPEN_BACKING 1024      /* backing files kept open, least recently used closed */
#endif
#define HASH_BUCKETS_MIN 1024

static struct {
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
} C;

/* A change to `o`: replies to calls sent before it are stale. */
static void commit_start(void);

static void changed(struct cache_object *o)
{
	o->gen = ++C.seq;
}

uint64_t cache_seq(void)
{
	return C.seq;
}

static uint32_t fh_hash(const uint8_t *fh, uint32_t len)
{
	uint32_t h = 2166136261u;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ fh[i]) * 16777619u;
	return h;
}

static int64_t ns_of(const nfstime3 *t)
{
	return (int64_t)t->seconds * 1000000000 + t->nseconds;
}

static int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static void mark_dirty(struct cache_object *o)
{
	if (!o->index_dirty) {
		o->index_dirty = 1;
		list_add_tail(&C.dirty, &o->dirty_link);
	}
}

/* Keep cache.bytes in step with a change of the valid set. */
static void bytes_changed(uint64_t before, uint64_t after)
{
	stats.cache_bytes += after - before;
}

static uint64_t dirty_bytes(const struct cache_object *o)
{
	return o->unsynced_bytes;
}

static int add_range(uint64_t start, uint64_t end, void *ctx);

/* |dirty ∪ commit|: both sets are only held together while a pass runs. */
static uint64_t union_bytes(const struct cache_object *o)
{
	struct extent_set u;
	uint64_t n;

	if (o->commit.count == 0 || o->dirty.count == 0)
		return o->dirty.bytes + o->commit.bytes;
	extent_set_init(&u);
	extent_set_foreach(&o->dirty, add_range, &u);
	extent_set_foreach(&o->commit, add_range, &u);
	n = u.bytes;
	extent_set_clear(&u);
	return n;
}

/* Keep unsynced_bytes, cache.dirty.bytes and the list of dirty objects in
 * step with the sets (`now`: the new |dirty ∪ commit|). */
static void unsynced_set(struct cache_object *o, uint64_t now)
{
	stats.cache_dirty_bytes += now - o->unsynced_bytes;
	o->unsynced_bytes = now;
	if (o->dirty.count == 0 && o->commit.count == 0)
		list_del(&o->wb_link);
	else if (list_empty(&o->wb_link))
		list_add_tail(&C.wb_list, &o->wb_link);
}

static void dirty_changed(struct cache_object *o, uint64_t before)
{
	(void)before;
	unsynced_set(o, union_bytes(o));
}

/*
 * Call fn(start, end, ctx) for each part of [start, end) that is neither
 * dirty nor sent upstream (the bytes that are only the upstream's copy),
 * in order; stops at and returns a nonzero return of fn.
 */
static int foreach_clean_part(const struct cache_object *o, uint64_t start, uint64_t end,
			      int (*fn)(uint64_t s, uint64_t e, void *ctx), void *ctx)
{
	uint64_t pos = start, gs, ge, cs, ce;
	int rc;

	while (pos < end && extent_set_first_gap(&o->dirty, pos, end, &gs, &ge)) {
		for (uint64_t p = gs; p < ge && extent_set_first_gap(&o->commit, p, ge, &cs, &ce); p = ce)
			if ((rc = fn(cs, ce, ctx)) != 0)
				return rc;
		pos = ge;
	}
	return 0;
}

static int count_part(uint64_t s, uint64_t e, void *ctx)
{
	*(uint64_t *)ctx += e - s;
	return 0;
}

static int64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* extent_set_foreach callbacks: add to / remove from the set `ctx`. */
static int add_range(uint64_t start, uint64_t end, void *ctx)
{
	extent_set_add(ctx, start, end);
	return 0;
}

static int collect_range(uint64_t start, uint64_t end, void *ctx)
{
	uint64_t **p = ctx;

	(*p)[0] = start;
	(*p)[1] = end;
	*p += 2;
	return 0;
}

static int remove_range(uint64_t start, uint64_t end, void *ctx)
{
	extent_set_remove(ctx, start, end);
	return 0;
}

static void table_grow(void)
{
	size_t n = C.nbuckets ? C.nbuckets * 2 : HASH_BUCKETS_MIN;
	struct cache_object **b = calloc(n, sizeof(*b));

	if (!b)
		abort();
	for (size_t i = 0; i < C.nbuckets; i++) {
		struct cache_object *o = C.buckets[i], *next;
		for (; o; o = next) {
			next = o->hash_next;
			size_t k = fh_hash(o->fh, o->fh_len) & (n - 1);
			o->hash_next = b[k];
			b[k] = o;
		}
	}
	free(C.buckets);
	C.buckets = b;
	C.nbuckets = n;
}

static struct cache_object *object_new(uint64_t id, const uint8_t *fh, uint32_t fh_len)
{
	struct cache_object *o = calloc(1, sizeof(*o));

	if (!o)
		abort();
	o->magic = CACHE_OBJECT_MAGIC;
	o->id = id;
	memcpy(o->fh, fh, fh_len);
	o->fh_len = fh_len;
	o->fd = -1;
	extent_set_init(&o->valid);
	extent_set_init(&o->dirty);
	extent_set_init(&o->commit);
	list_init(&o->wb_link);
	list_init(&o->dirty_link);
	list_init(&o->waiters);
	list_init(&o->fd_link);
	if (C.count + 1 > C.nbuckets)
		table_grow();
	size_t k = fh_hash(fh, fh_len) & (C.nbuckets - 1);
	o->hash_next = C.buckets[k];
	C.buckets[k] = o;
	C.count++;
	stats.cache_objects = C.count;
	if (id >= C.next_id)
		C.next_id = id + 1;
	return o;
}

struct cache_object *cache_find(const uint8_t *fh, uint32_t fh_len)
{
	if (!C.nbuckets)
		return NULL;
	for (struct cache_object *o = C.buckets[fh_hash(fh, fh_len) & (C.nbuckets - 1)]; o;
	     o = o->hash_next)
		if (o->fh_len == fh_len && memcmp(o->fh, fh, fh_len) == 0)
			return o;
	return NULL;
}

struct cache_object *cache_get(const uint8_t *fh, uint32_t fh_len)
{
	struct cache_object *o = cache_find(fh, fh_len);

	if (!o) {
		o = object_new(C.next_id, fh, fh_len);
		o->last_access_s = now_s();
		mark_dirty(o);
	}
	return o;
}

const struct nfsd_config *cache_config(void)
{
	return C.cfg;
}

void cache_invalidate(struct cache_object *o, const char *why)
{
	uint64_t before = o->valid.bytes;

	changed(o);
	if (before == 0)
		return;
	extent_set_clear(&o->valid);
	/* dirty bytes are newer than anything upstream: never dropped here */
	extent_set_foreach(&o->dirty, add_range, &o->valid);
	extent_set_foreach(&o->commit, add_range, &o->valid);
	bytes_changed(before, o->valid.bytes);
	if (o->valid.bytes == before)
		return;   /* nothing clean was held */
	log_debug("cache: object %llu invalidated: %s", (unsigned long long)o->id, why);
	stats.cache_invalidations++;
	if (o->fd >= 0 && o->valid.count == 0)
		backing_truncate(o->fd, 0);
	mark_dirty(o);
}

/* Permissions changed: what the upstream granted before no longer holds
 * (the Linux client zaps its access cache the same way). */
static void forget_access_if_changed(struct cache_object *o, const fattr3 *a)
{
	if (o->have_attrs && (o->attrs.mode != a->mode || o->attrs.uid != a->uid ||
			      o->attrs.gid != a->gid))
		memset(o->access, 0, sizeof(o->access));
}

static void set_coherency(struct cache_object *o, const fattr3 *a)
{
	forget_access_if_changed(o, a);
	/* grown upstream by someone else while dirty: the larger size holds
	 * (Linux nfs_update_inode with writes pending) */
	if (cache_has_dirty(o) && a->size > o->local_size)
		o->local_size = a->size;
	o->coh.known = 1;
	o->coh.size = a->size;
	o->coh.mtime_ns = ns_of(&a->mtime);
	o->coh.ctime_ns = ns_of(&a->ctime);
	o->coh.fileid = a->fileid;
	o->attrs = *a;
	o->have_attrs = 1;
	o->attr_time = ev_now(C.loop);
	mark_dirty(o);
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
	if (o->wb_recover) {
		/* dirty bytes from before a restart: written back only onto the
		 * file they were written to, unchanged since */
		o->wb_recover = 0;
		if (!o->coh.known || !coherency_matches(o, a)) {
			uint64_t n = cache_dirty_drop(o, 0, UINT64_MAX);
			log_warning("cache: object %llu changed upstream while nfscached was "
				    "stopped: %llu dirty bytes discarded",
				    (unsigned long long)o->id, (unsigned long long)n);
		} else
			log_info("cache: object %llu: %llu dirty bytes from before the restart "
				 "to write back", (unsigned long long)o->id,
				 (unsigned long long)dirty_bytes(o));
	}
	if (o->coh.known && !coherency_matches(o, a))
		cache_invalidate(o, "changed upstream");
	if (!o->coh.known || !coherency_matches(o, a))
		set_coherency(o, a);
	else {
		forget_access_if_changed(o, a);
		o->attrs = *a;
		o->have_attrs = 1;
		o->attr_time = ev_now(C.loop);
	}
}

int cache_change_done(struct cache_object *o, const wcc_data *wcc)
{
	const wcc_attr *pre = wcc->before.attributes_follow ?
			      &wcc->before.pre_op_attr_u.attributes : NULL;
	const fattr3 *post = wcc->after.attributes_follow ? &wcc->after.post_op_attr_u.attributes : NULL;
	int ours = 0;

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
		/* an older reply arriving last must not roll the attributes back */
		if (!o->coh.known || ns_of(&post->ctime) >= o->coh.ctime_ns)
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
	uint64_t before = o->valid.bytes, dbefore = dirty_bytes(o);

	extent_set_remove(&o->valid, size, UINT64_MAX);
	bytes_changed(before, o->valid.bytes);
	extent_set_remove(&o->dirty, size, UINT64_MAX);
	extent_set_remove(&o->commit, size, UINT64_MAX);
	dirty_changed(o, dbefore);
	if (o->local_size > size)
		o->local_size = size;
	if (o->fd >= 0)
		backing_truncate(o->fd, size);
	changed(o);
	mark_dirty(o);
}

int cache_attrs_fresh(const struct cache_object *o)
{
	return o->coh.known && o->have_attrs &&
	       ev_now(C.loop) - o->attr_time <= (double)C.cfg->cache_acregmax;
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
	struct cache_access *slot = &o->access[0];
	uint32_t known = 0;

	for (int i = 0; i < CACHE_ACCESS_SLOTS; i++) {
		if (access_same(&o->access[i], cred)) {
			slot = &o->access[i];
			if (ev_now(C.loop) - slot->time <= (double)C.cfg->cache_acregmax)
				known = slot->granted & ~asked;
			break;
		}
		if (o->access[i].time < slot->time)
			slot = &o->access[i];   /* the oldest goes */
	}
	granted = known | (granted & asked);
	slot->uid = cred->uid;
	slot->gid = cred->gid;
	slot->gids_hash = gids_hash(cred);
	slot->granted = granted;
	slot->time = ev_now(C.loop);
}

void cache_access_forget(struct cache_object *o)
{
	memset(o->access, 0, sizeof(o->access));
}

int cache_access_granted(const struct cache_object *o, const struct rpc_cred *cred, uint32_t bits)
{
	for (int i = 0; i < CACHE_ACCESS_SLOTS; i++) {
		const struct cache_access *a = &o->access[i];
		if (access_same(a, cred))
			return (a->granted & bits) == bits &&
			       ev_now(C.loop) - a->time <= (double)C.cfg->cache_acregmax;
	}
	return 0;
}

static int range_has_data(uint64_t start, uint64_t end, void *ctx)
{
	return backing_has_data(*(int *)ctx, start, end) == 1 ? 0 : -1;
}

/* The backing file, opened on first use and checked against the ranges the
 * index recorded: a file deleted, truncated or punched behind our back is
 * refetched, never served as zeros. */
static int object_fd(struct cache_object *o)
{
	if (o->fd >= 0) {
		list_del(&o->fd_link);
		list_add_tail(&C.open_fds, &o->fd_link);
		return o->fd;
	}
	if (C.n_open >= MAX_OPEN_BACKING) {
		/* reopened on its next use; its data stays valid */
		struct cache_object *lru = list_first(&C.open_fds, struct cache_object, fd_link);
		list_del(&lru->fd_link);
		if (lru->index_dirty) {
			/* its ranges go to the index with the next batch, which
			 * must sync their data first: the batch closes it */
			if (C.n_sync_fds == C.cap_sync_fds) {
				C.cap_sync_fds = C.cap_sync_fds ? 2 * C.cap_sync_fds : 64;
				C.sync_fds = realloc(C.sync_fds, C.cap_sync_fds * sizeof(*C.sync_fds));
				if (!C.sync_fds)
					abort();
			}
			C.sync_fds[C.n_sync_fds++] = lru->fd;
		} else {
			close(lru->fd);
		}
		lru->fd = -1;
		C.n_open--;
	}
	o->fd = backing_open(o->id, 1);
	if (o->fd >= 0) {
		list_add_tail(&C.open_fds, &o->fd_link);
		C.n_open++;
	}
	if (o->fd < 0) {
		log_limited(LOG_LEVEL_ERROR, "cache: cannot open backing file of object %llu: %s",
			    (unsigned long long)o->id, strerror(-o->fd));
		return o->fd;
	}
	if (!o->checked) {
		o->checked = 1;
		if (o->valid.count == 0)
			backing_truncate(o->fd, 0);   /* nothing of an older object with this id */
		else if (extent_set_foreach(&o->valid, range_has_data, &o->fd) != 0)
			cache_invalidate(o, "backing file lost data");
	}
	return o->fd;
}

struct store_ctx {
	struct cache_object *o;
	int fd;
	const void *data;       /* the bytes from `offset` on */
	uint64_t offset;
};

static int store_part(uint64_t s, uint64_t e, void *ctx)
{
	struct store_ctx *sc = ctx;
	int rc = backing_write(sc->fd, (const char *)sc->data + (s - sc->offset), (size_t)(e - s), s);

	if (rc != 0) {
		log_limited(LOG_LEVEL_WARNING, "cache: backing write of object %llu: %s",
			    (unsigned long long)sc->o->id, strerror(-rc));
		return rc;
	}
	uint64_t before = sc->o->valid.bytes;
	extent_set_add(&sc->o->valid, s, e);
	bytes_changed(before, sc->o->valid.bytes);
	return 0;
}

int cache_store(struct cache_object *o, uint64_t offset, const void *data, uint32_t len,
		uint64_t gen_at_start)
{
	if (o->gen > gen_at_start)
		return -ESTALE;
	if (len == 0)
		return 0;
	int fd = object_fd(o);
	if (fd < 0)
		return fd;
	/* one pwrite per part that is neither dirty nor sent: local bytes win */
	struct store_ctx sc = { o, fd, data, offset };
	int rc = foreach_clean_part(o, offset, offset + len, store_part, &sc);
	mark_dirty(o);
	return rc;
}

/* ---- write-back state ------------------------------------------------ */

int cache_has_dirty(const struct cache_object *o)
{
	return o->dirty.count != 0 || o->commit.count != 0;
}

uint64_t cache_size(const struct cache_object *o)
{
	return cache_has_dirty(o) ? o->local_size : o->coh.size;
}

void cache_patch_attrs(const struct cache_object *o, fattr3 *a)
{
	if (!cache_has_dirty(o))
		return;
	a->size = o->local_size;
	if (a->used < a->size)
		a->used = a->size;
	/* never older than what the upstream reported */
	if (o->local_mtime_ns > ns_of(&a->mtime)) {
		a->mtime.seconds = (uint32_t)(o->local_mtime_ns / 1000000000);
		a->mtime.nseconds = (uint32_t)(o->local_mtime_ns % 1000000000);
	}
	if (ns_of(&a->mtime) > ns_of(&a->ctime))
		a->ctime = a->mtime;
}

int cache_write_ready(struct cache_object *o, struct cache_waiter *w)
{
	if (o->wopen == 2)
		return 1;
	if (o->recorded_ranges == 0 && !o->wb_recover) {
		/* the index trusts nothing of it that a write could contradict;
		 * the mark goes with the next batch all the same */
		if (o->wopen == 0) {
			o->wopen = 1;
			mark_dirty(o);
		}
		return 1;
	}
	o->wopen = 1;
	mark_dirty(o);
	cache_wait(o, w);
	if (C.commit_running)
		C.commit_again = 1;
	else
		commit_start();
	return 0;
}

int cache_write_local(struct cache_object *o, uint64_t offset, const void *data, uint32_t len,
		      const struct rpc_cred *cred)
{
	uint64_t size = cache_size(o), end = offset + len;
	int fd = object_fd(o), rc;

	if (fd < 0)
		return fd;
	assert(offset <= size || offset - size <= CACHE_WRITE_GAP_MAX);
	if (offset > size) {
		/* what extending the file leaves between: zeros, not the client's bytes */
		void *zeros = calloc(1, (size_t)(offset - size));
		if (!zeros)
			abort();
		rc = backing_write(fd, zeros, (size_t)(offset - size), size);
		free(zeros);
		if (rc != 0)
			return rc;
		uint64_t before = o->valid.bytes;
		extent_set_add(&o->valid, size, offset);
		bytes_changed(before, o->valid.bytes);
	}
	if ((rc = backing_write(fd, data, len, offset)) != 0) {
		log_limited(LOG_LEVEL_WARNING, "cache: backing write of object %llu: %s",
			    (unsigned long long)o->id, strerror(-rc));
		return rc;
	}
	uint64_t added = 0, before = o->valid.bytes;
	foreach_clean_part(o, offset, end, count_part, &added);
	if (!cache_has_dirty(o)) {
		o->local_size = o->coh.size;
		o->local_mtime_ns = o->coh.mtime_ns;
	}
	if (o->dirty.count == 0)
		o->dirty_since = ev_now(C.loop);
	extent_set_add(&o->valid, offset, end);
	bytes_changed(before, o->valid.bytes);
	extent_set_add(&o->dirty, offset, end);
	unsynced_set(o, o->unsynced_bytes + added);
	if (end > o->local_size)
		o->local_size = end;
	int64_t now = realtime_ns();
	o->local_mtime_ns = now > o->local_mtime_ns ? now : o->local_mtime_ns + 1;
	o->wb_cred = *cred;
	stats.cache_write_bytes += len;
	mark_dirty(o);
	return 0;
}

uint64_t *cache_dirty_take(struct cache_object *o, size_t *n)
{
	uint64_t *ranges, *p;

	*n = o->dirty.count;
	if (*n == 0)
		return NULL;
	ranges = calloc(*n * 2, sizeof(*ranges));
	if (!ranges)
		abort();
	p = ranges;
	uint64_t before = dirty_bytes(o);
	extent_set_foreach(&o->dirty, collect_range, &p);
	extent_set_foreach(&o->dirty, add_range, &o->commit);
	extent_set_clear(&o->dirty);
	dirty_changed(o, before);
	return ranges;
}

void cache_commit_settle(struct cache_object *o, enum cache_settle how)
{
	uint64_t before = dirty_bytes(o), vbefore = o->valid.bytes;

	if (how == CACHE_RESEND) {
		if (o->dirty.count == 0 && o->commit.count)
			o->dirty_since = ev_now(C.loop);
		extent_set_foreach(&o->commit, add_range, &o->dirty);
	} else if (how == CACHE_FAILED) {
		/* the backing bytes are not the upstream's; those written again
		 * since are dirty and stay */
		extent_set_foreach(&o->dirty, remove_range, &o->commit);
		extent_set_foreach(&o->commit, remove_range, &o->valid);
		bytes_changed(vbefore, o->valid.bytes);
		changed(o);
	}
	extent_set_clear(&o->commit);
	dirty_changed(o, before);
	mark_dirty(o);
}

uint64_t cache_dirty_drop(struct cache_object *o, uint64_t start, uint64_t end)
{
	uint64_t before = dirty_bytes(o), vbefore = o->valid.bytes;
	struct extent_set gone;

	extent_set_init(&gone);
	extent_set_foreach(&o->dirty, add_range, &gone);
	extent_set_foreach(&o->commit, add_range, &gone);
	extent_set_remove(&gone, 0, start);
	extent_set_remove(&gone, end, UINT64_MAX);
	uint64_t n = gone.bytes;
	extent_set_remove(&o->dirty, start, end);
	extent_set_remove(&o->commit, start, end);
	/* their bytes in the backing file are not the upstream's */
	extent_set_foreach(&gone, remove_range, &o->valid);
	extent_set_clear(&gone);
	bytes_changed(vbefore, o->valid.bytes);
	dirty_changed(o, before);
	changed(o);
	mark_dirty(o);
	return n;
}

struct list_node *cache_dirty_list(void)
{
	return &C.wb_list;
}

/*
 * A page of zeros in what was read may be a hole punched in the backing file
 * behind our back: ask the file (one lseek), and drop the data if so.  Real
 * zero pages cost that lseek; others cost nothing but the scan.
 */
static int zeros_are_data(struct cache_object *o, uint64_t offset, const void *buf, uint32_t len)
{
	static const uint8_t zero[4096];
	const uint8_t *p = buf;

	for (uint32_t done = 0; done < len; ) {
		uint32_t n = len - done < sizeof(zero) ? len - done : (uint32_t)sizeof(zero);
		if (memcmp(p + done, zero, n) == 0 &&
		    backing_has_data(o->fd, offset + done, offset + done + n) != 1) {
			cache_invalidate(o, "hole in the backing file");
			return 0;
		}
		done += n;
	}
	return 1;
}

int cache_read_local(struct cache_object *o, uint64_t offset, void *buf, uint32_t len)
{
	int fd = object_fd(o);

	if (fd < 0)
		return -EIO;
	if (!extent_set_covers(&o->valid, offset, offset + len))
		return -EIO;   /* the check on opening dropped them */
	ssize_t n = backing_read(fd, buf, len, offset);
	if (n != (ssize_t)len) {
		cache_invalidate(o, "backing file shorter than its valid data");
		return -EIO;
	}
	return zeros_are_data(o, offset, buf, len) ? 0 : -EIO;
}

int cache_read_local_nowait(struct cache_object *o, uint64_t offset, void *buf, uint32_t len)
{
	int fd = object_fd(o);

	if (fd < 0 || !extent_set_covers(&o->valid, offset, offset + len))
		return -EIO;
	ssize_t n = backing_read_nowait(fd, buf, len, offset);
	if (n == (ssize_t)len)
		return zeros_are_data(o, offset, buf, len) ? 0 : -EIO;
	if (n == -EAGAIN || n > 0)
		return -EAGAIN;   /* the rest is on the disk */
	cache_invalidate(o, "backing file shorter than its valid data");
	return -EIO;
}

static void nothing_work(void *arg)
{
	(void)arg;
}

struct read_job {
	struct cache_object *o;
	int fd;               /* dup: the object's fd may be closed meanwhile */
	uint64_t offset;
	void *buf;
	uint32_t len;
	ssize_t got;
	void (*done)(void *arg, int rc);
	void *arg;
	uint64_t seq;         /* the object's generation when the read started */
	int raw;              /* bytes of the backing file, whatever their state */
};

static void read_job_work(void *arg)
{
	struct read_job *j = arg;
	size_t done = 0;

	j->got = 0;
	while (done < j->len) {
		ssize_t n = pread(j->fd, (char *)j->buf + done, j->len - done, (off_t)(j->offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	j->got = (ssize_t)done;
}

static void read_job_done(void *arg)
{
	struct read_job *j = arg;
	int rc = 0;

	stats.backing_read_calls++;
	close(j->fd);
	if (j->raw) {
		rc = j->got == (ssize_t)j->len ? 0 : -EIO;
	} else if (j->got != (ssize_t)j->len) {
		cache_invalidate(j->o, "backing file shorter than its valid data");
		rc = -EIO;
	} else if (j->seq != j->o->gen ||
		   !extent_set_covers(&j->o->valid, j->offset, j->offset + j->len) ||
		   (j->o->fd >= 0 && !zeros_are_data(j->o, j->offset, j->buf, j->len))) {
		rc = -EIO;   /* changed while the worker read: read again */
	}
	j->done(j->arg, rc);
	free(j);
}

static void read_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
		       void (*done)(void *arg, int rc), void *arg, int raw)
{
	struct read_job *j = calloc(1, sizeof(*j));

	if (!j)
		abort();
	if (raw)
		object_fd(o);
	j->raw = raw;
	j->o = o;
	j->seq = o->gen;
	j->fd = o->fd >= 0 ? dup(o->fd) : -1;
	j->offset = offset;
	j->buf = buf;
	j->len = len;
	j->done = done;
	j->arg = arg;
	if (j->fd < 0) {
		j->got = -1;   /* completes with -EIO, still from the loop */
		worker_submit(C.workers, nothing_work, read_job_done, j);
		return;
	}
	worker_submit(C.workers, read_job_work, read_job_done, j);
}

void cache_read_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
		      void (*done)(void *arg, int rc), void *arg)
{
	read_async(o, offset, buf, len, done, arg, 0);
}

void cache_read_backing_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
			      void (*done)(void *arg, int rc), void *arg)
{
	read_async(o, offset, buf, len, done, arg, 1);
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
	if (now - o->last_access_s >= 60) {
		o->last_access_s = now;
		mark_dirty(o);
	} else {
		o->last_access_s = now;
	}
}

/* ---- persistence ---------------------------------------------------- */

struct commit_job {
	struct index_record *recs;
	size_t n;
	int *fds;             /* dup()s of the backing files to sync */
	size_t nfds;
	uint64_t *ranges;     /* storage behind every recs[i].ranges */
	struct cache_object **objs;   /* recs[i] describes objs[i] */
	int rc;               /* index_write's */
};

static void commit_work(void *arg)
{
	struct commit_job *job = arg;

	for (size_t i = 0; i < job->nfds; i++) {
		fdatasync(job->fds[i]);
		close(job->fds[i]);
	}
	job->rc = index_write(C.index, job->recs, job->n);
}

static void commit_done(void *arg)
{
	struct commit_job *job = arg;

	C.commit_running = 0;
	for (size_t i = 0; i < job->n; i++) {
		struct cache_object *o = job->objs[i];
		if (job->rc != 0) {
			mark_dirty(o);   /* nothing of it was stored: the next batch tries again */
			continue;
		}
		o->recorded_ranges = job->recs[i].nranges;
		if (job->recs[i].wopen && o->wopen == 1) {
			o->wopen = 2;    /* recorded: local writes may go ahead */
			cache_wake(o);
		}
	}
	free(job->objs);

	free(job->recs);
	free(job->fds);
	free(job->ranges);
	free(job);
	if (C.commit_again) {
		C.commit_again = 0;
		commit_start();
	}
}

/* Snapshot the changed objects and hand them to a worker. */
static void commit_start(void)
{
	struct list_node *pos, *tmp;
	size_t n = 0, nranges = 0;

	if (C.commit_running || list_empty(&C.dirty))
		return;
	list_for_each_safe(pos, tmp, &C.dirty) {
		struct cache_object *o = list_entry(pos, struct cache_object, dirty_link);
		n++;
		nranges += o->valid.count + o->dirty.count + o->commit.count;
	}
	struct commit_job *job = calloc(1, sizeof(*job));
	if (!job)
		abort();
	job->recs = calloc(n, sizeof(*job->recs));
	job->objs = calloc(n, sizeof(*job->objs));
	job->fds = calloc(n + C.n_sync_fds, sizeof(*job->fds));
	job->ranges = calloc(nranges * 2 + 2, sizeof(*job->ranges));
	if (!job->recs || !job->fds || !job->ranges)
		abort();
	uint64_t *rp = job->ranges;
	if (C.n_sync_fds)
		memcpy(job->fds, C.sync_fds, C.n_sync_fds * sizeof(*job->fds));
	job->nfds = C.n_sync_fds;
	C.n_sync_fds = 0;
	list_for_each_safe(pos, tmp, &C.dirty) {
		struct cache_object *o = list_entry(pos, struct cache_object, dirty_link);
		job->objs[job->n] = o;
		struct index_record *r = &job->recs[job->n++];
		r->id = o->id;
		r->volume = C.volume;
		memcpy(r->fh, o->fh, o->fh_len);
		r->fh_len = o->fh_len;
		r->size = o->coh.known ? o->coh.size : 0;
		r->mtime_ns = o->coh.known ? o->coh.mtime_ns : -1;
		r->ctime_ns = o->coh.known ? o->coh.ctime_ns : -1;
		r->fileid = o->coh.fileid;
		r->last_access_s = o->last_access_s;
		r->ranges = rp;
		r->nranges = o->valid.count;
		extent_set_foreach(&o->valid, collect_range, &rp);
		struct extent_set unsynced;   /* dirty ∪ commit */
		extent_set_init(&unsynced);
		extent_set_foreach(&o->dirty, add_range, &unsynced);
		extent_set_foreach(&o->commit, add_range, &unsynced);
		r->dirty = rp;
		r->ndirty = unsynced.count;
		extent_set_foreach(&unsynced, collect_range, &rp);
		extent_set_clear(&unsynced);
		r->wopen = o->wopen != 0;
		/* from now on the index may hold these ranges: a write must be
		 * marked first (cache_write_ready) */
		if (r->nranges > o->recorded_ranges)
			o->recorded_ranges = r->nranges;
		r->wb_uid = o->wb_cred.uid;
		r->wb_gid = o->wb_cred.gid;
		r->wb_ngids = o->wb_cred.gids_len;
		memcpy(r->wb_gids, o->wb_cred.gids, sizeof(r->wb_gids));
		if (o->fd >= 0 && o->valid.count) {
			int d = dup(o->fd);
			if (d >= 0)
				job->fds[job->nfds++] = d;
		}
		o->index_dirty = 0;
		list_del(&o->dirty_link);
	}
	C.commit_running = 1;
	worker_submit(C.workers, commit_work, commit_done, job);
}

static void commit_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	commit_start();
}

static void remove_tree_work(void *arg)
{
	backing_remove_tree(arg);
}

static void objects_free(void)
{
	for (size_t i = 0; i < C.nbuckets; i++) {
		struct cache_object *o = C.buckets[i], *next;
		for (; o; o = next) {
			next = o->hash_next;
			if (o->fd >= 0)
				close(o->fd);
			extent_set_clear(&o->valid);
			extent_set_clear(&o->dirty);
			extent_set_clear(&o->commit);
			free(o);
		}
	}
	free(C.buckets);
	C.buckets = NULL;
	C.nbuckets = 0;
}

static int load_one(const struct index_record *r, void *ctx)
{
	(void)ctx;
	if (strcmp(r->volume, C.volume) != 0 || r->fh_len == 0 || r->fh_len > 64)
		return 0;   /* another upstream's objects stay for their own daemon */
	struct cache_object *o = object_new(r->id, r->fh, r->fh_len);
	if (r->mtime_ns != -1) {
		o->coh.known = 1;
		o->coh.size = r->size;
		o->coh.mtime_ns = r->mtime_ns;
		o->coh.ctime_ns = r->ctime_ns;
		o->coh.fileid = r->fileid;
	}
	o->attr_time = 0;   /* revalidated with a GETATTR on first use */
	o->last_access_s = r->last_access_s;
	for (size_t i = 0; i < r->nranges; i++)
		extent_set_add(&o->valid, r->ranges[2 * i], r->ranges[2 * i + 1]);
	if (r->wopen) {
		/* written to when the daemon stopped without a last batch: writes
		 * not recorded may lie over recorded ranges; only the recorded
		 * dirty bytes are kept (CacheFiles' "in use" mark) */
		extent_set_clear(&o->valid);
	}
	for (size_t i = 0; i < r->ndirty; i++) {
		extent_set_add(&o->valid, r->dirty[2 * i], r->dirty[2 * i + 1]);
		extent_set_add(&o->dirty, r->dirty[2 * i], r->dirty[2 * i + 1]);
	}
	if (o->dirty.count) {
		/* written back once the upstream file is shown unchanged since */
		o->wb_recover = 1;
		o->wb_cred.flavor = RPC_AUTH_SYS;
		o->wb_cred.uid = r->wb_uid;
		o->wb_cred.gid = r->wb_gid;
		o->wb_cred.gids_len = r->wb_ngids <= RPC_AUTH_SYS_MAX_GIDS ? r->wb_ngids : 0;
		memcpy(o->wb_cred.gids, r->wb_gids, sizeof(o->wb_cred.gids));
		snprintf(o->wb_cred.machinename, sizeof(o->wb_cred.machinename), "nfscached");
		o->local_size = o->coh.size;
		uint64_t end = r->dirty[2 * r->ndirty - 1];
		if (end > o->local_size)
			o->local_size = end;
		o->local_mtime_ns = o->coh.mtime_ns;
		o->dirty_since = ev_now(C.loop);
		dirty_changed(o, 0);
	}
	o->recorded_ranges = r->nranges;
	stats.cache_bytes += o->valid.bytes;
	return 0;
}

int cache_init(struct ev_loop *loop, const struct nfsd_config *cfg, const char *volume)
{
	char lock_path[4200];
	int reset = 0, rc;

	memset(&C, 0, sizeof(C));
	C.loop = loop;
	C.cfg = cfg;
	C.next_id = 1;
	C.lock_fd = -1;
	list_init(&C.dirty);
	list_init(&C.open_fds);
	list_init(&C.wb_list);
	if ((rc = backing_init(cfg->cache_dir)) != 0)
		goto fail;
	/* one daemon per cache directory: another would reset an index it
	 * finds locked, and the two would write the same backing files */
	snprintf(lock_path, sizeof(lock_path), "%s/lock", cfg->cache_dir);
	C.lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (C.lock_fd < 0 || flock(C.lock_fd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		log_error("cache: %s is in use by another nfscached", cfg->cache_dir);
		goto fail;
	}
	C.index = index_open(cfg->cache_dir, &reset);
	if (!C.index) {
		rc = -EIO;
		goto fail;
	}
	C.volume = strdup(volume);
	table_grow();
	char graveyard[4400] = "";
	if (reset) {
		log_warning("cache: index in %s was unusable: starting with an empty cache",
			    cfg->cache_dir);
		if (backing_retire_all(cfg->cache_dir, graveyard, sizeof(graveyard)) != 0)
			graveyard[0] = '\0';
	}
	if (!reset && index_load(C.index, load_one, NULL) != 0)
		log_warning("cache: index in %s could not be read fully: using what was read",
			    cfg->cache_dir);
	uint64_t max_id = index_max_id(C.index);
	if (max_id >= C.next_id)
		C.next_id = max_id + 1;
	C.workers = worker_pool_new(loop, 2);
	if (!C.workers) {
		rc = -EAGAIN;
		goto fail;
	}
	if (graveyard[0]) {
		char *path = strdup(graveyard);
		worker_submit(C.workers, remove_tree_work, free, path);
	}
	ev_timer_init(&C.commit_timer, commit_timer_cb, COMMIT_INTERVAL_S, COMMIT_INTERVAL_S);
	ev_timer_start(loop, &C.commit_timer);
	ev_unref(loop);   /* the batch timer alone does not keep the loop running */
	log_info("cache: %s: %zu objects, %llu bytes", cfg->cache_dir, C.count,
		 (unsigned long long)stats.cache_bytes);
	return 0;

fail:
	objects_free();
	index_close(C.index);
	if (C.lock_fd >= 0)
		close(C.lock_fd);
	free(C.volume);
	memset(&C, 0, sizeof(C));
	stats.cache_objects = stats.cache_bytes = 0;
	return rc;
}

void cache_finalise(void)
{
	if (!C.workers)
		return;
	ev_ref(C.loop);
	ev_timer_stop(C.loop, &C.commit_timer);
	/* the last batch: wait for a running one, then write what is left */
	worker_pool_free(C.workers);
	C.workers = worker_pool_new(C.loop, 1);
	C.commit_running = 0;
	C.commit_again = 0;
	/* a clean stop: every write is in the last batch */
	for (size_t i = 0; i < C.nbuckets; i++)
		for (struct cache_object *o = C.buckets[i]; o; o = o->hash_next)
			if (o->wopen) {
				o->wopen = 0;
				mark_dirty(o);
			}
	commit_start();
	worker_pool_free(C.workers);
	C.workers = NULL;
	index_close(C.index);
	objects_free();
	free(C.volume);
	for (size_t i = 0; i < C.n_sync_fds; i++)
		close(C.sync_fds[i]);
	free(C.sync_fds);
	close(C.lock_fd);
	memset(&C, 0, sizeof(C));
}

void cache_foreach(void (*fn)(struct cache_object *o, void *arg), void *arg)
{
	for (size_t i = 0; i < C.nbuckets; i++)
		for (struct cache_object *o = C.buckets[i]; o; o = o->hash_next)
			fn(o, arg);
}
