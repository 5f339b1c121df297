/*
 * persist.c — the batched persistence of the objects: every second the
 * objects the index must learn (persist_mark) are snapshotted, their
 * backing files (and those closed meanwhile) opened again by id and
 * fdatasync'ed, and the snapshot written to the index in one transaction,
 * on a worker thread, under the index lease (lease.c).  A range reaches
 * the index only after its data was synced.  On start the index is loaded
 * back into the object table.
 * cache_sync() callers (cache.commit = local) wait for the first batch
 * that snapshotted their object after they asked, and start one at once.
 * Not here: what the objects hold and when it changes (cache.c, dirty.c),
 * starting and stopping the module (cache.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/index.h"
#include "cache/worker.h"
#include "common/array.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

#define BATCH_INTERVAL_S 1.0

void persist_mark(struct cache_object *o)
{
	if (!o->persist_queued)
		list_add_tail(&cache_state.persist_queue, &o->persist_link);
	o->persist_queued = PERSIST_FULL;
}

void persist_mark_access(struct cache_object *o)
{
	if (!o->persist_queued) {
		o->persist_queued = PERSIST_ACCESS;
		list_add_tail(&cache_state.persist_queue, &o->persist_link);
	}
}

void persist_access_later(struct cache_object *o)
{
	ARRAY_PUSH(&cache_state.touches, (int64_t)o->id);
	ARRAY_PUSH(&cache_state.touches, o->last_access_s);
	if (o->persist_queued) {
		list_del(&o->persist_link);
		o->persist_queued = PERSIST_NONE;
	}
}

void batch_delete(uint64_t id)
{
	ARRAY_PUSH(&cache_state.deletes, id);
	resident_dead_add(id);   /* until the batch deleting its rows committed */
}

void batch_sync_id(uint64_t id)
{
	ARRAY_PUSH(&cache_state.sync_ids, id);
}

/* A cache_sync() caller. */
struct sync_waiter {
	struct list_node link;        /* in cache_state.sync_waiters */
	struct cache_object *o;       /* pinned while it waits */
	struct extent_set stable;     /* o's dirty ∪ commit at the call */
	uint64_t need;                /* done once batch number `need` completed */
	void (*done)(void *arg, int rc);
	void *arg;
};

struct batch_job {
	uint64_t seq;         /* cache_state.batch_seq when it started */
	struct index_record *recs;
	size_t n;
	uint64_t *sync_ids;   /* objects whose backing files to sync, opened by id
			       * here: the batch holds no descriptor of the loop's */
	size_t nsync;
	uint64_t *ranges;     /* storage behind every recs[i].ranges */
	struct cache_object **objs;   /* recs[i] describes objs[i] */
	uint64_t inval_seq;   /* drop every range of the volume first (invalidate
			       * --all up to this request); 0 = no */
	int rc;               /* index_write's */
};

static void batch_work(void *arg)
{
	struct batch_job *job = arg;

	for (size_t i = 0; i < job->nsync && job->rc == 0; i++) {
		/* ranges whose data may not be on the disk never reach the index;
		 * a file no longer there (culled meanwhile) has nothing to sync */
		int fd = backing_open(job->sync_ids[i], 0);
		if (fd == -ENOENT)
			continue;
		if (fd < 0) {
			job->rc = fd;
			break;
		}
		if (fdatasync(fd) != 0)
			job->rc = -errno;
		close(fd);
	}
	if (job->rc == 0 && job->inval_seq)
		job->rc = index_drop_ranges(cache_state.index, cache_state.volume);
	if (job->rc == 0)
		job->rc = index_write(cache_state.index, job->recs, job->n);
}

/* Answer the cache_sync() callers batch `seq` served (rc 0), or all of
 * them (the cache closes: rc -ECANCELED). */
static void sync_waiters_answer(uint64_t seq, int rc)
{
	struct list_node *pos, *tmp, ready;

	list_init(&ready);
	list_for_each_safe(pos, tmp, &cache_state.sync_waiters) {
		struct sync_waiter *w = list_entry(pos, struct sync_waiter, link);
		if (rc != 0 || w->need <= seq) {
			list_del(&w->link);
			list_add_tail(&ready, &w->link);
		}
	}
	while (!list_empty(&ready)) {
		struct sync_waiter *w = list_entry(ready.next, struct sync_waiter, link);
		list_del(&w->link);
		if (rc == 0)
			unwritten_add(w->o, &w->stable);
		extent_set_clear(&w->stable);
		cache_unpin(w->o);
		w->done(w->arg, rc);
		free(w);
	}
}

int cache_sync(struct cache_object *o, void (*done)(void *arg, int rc), void *arg)
{
	if (!cache_state.workers)
		return -ENODEV;
	if (!cache_has_uncommitted(o))
		return -EALREADY;
	struct sync_waiter *w = xcalloc(1, sizeof(*w));
	w->o = o;
	extent_set_init(&w->stable);
	extent_set_foreach(object_dirty(o), add_range, &w->stable);
	extent_set_foreach(object_commit(o), add_range, &w->stable);
	w->need = cache_state.batch_seq + 1;   /* the next batch snapshots o */
	w->done = done;
	w->arg = arg;
	cache_pin(o);
	list_add_tail(&cache_state.sync_waiters, &w->link);
	persist_mark(o);
	if (index_lease_holder() != INDEX_FREE)
		cache_state.batch_again = true;   /* right after the running job */
	else
		batch_start();
	return 0;
}

static void batch_done(void *arg)
{
	struct batch_job *job = arg;

	for (size_t i = 0; i < job->n; i++) {
		struct cache_object *o = job->objs[i];
		if (job->recs[i].touched && !o) {
			if (job->rc != 0) {   /* tried again */
				ARRAY_PUSH(&cache_state.touches, (int64_t)job->recs[i].id);
				ARRAY_PUSH(&cache_state.touches, job->recs[i].last_access_s);
			}
			continue;
		}
		if (job->recs[i].touched) {
			if (job->rc != 0)
				persist_mark_access(o);
			continue;
		}
		if (job->recs[i].deleted) {
			if (job->rc != 0)   /* tried again (still dead meanwhile) */
				ARRAY_PUSH(&cache_state.deletes, job->recs[i].id);
			else
				resident_dead_committed(job->recs[i].id);
			continue;
		}
		if (job->rc != 0) {
			persist_mark(o);   /* nothing of it was stored: the next batch tries again */
			continue;
		}
		o->recorded_ranges = job->recs[i].nranges;
		if (job->recs[i].wopen && o->wopen == CACHE_WOPEN_REQUESTED) {
			o->wopen = CACHE_WOPEN_RECORDED;    /* local writes may go ahead */
			cache_wake(o);
		}
	}
	free(job->objs);

	if (job->rc != 0) {
		/* the next batch syncs their files again before their ranges */
		for (size_t i = 0; i < job->nsync; i++)
			batch_sync_id(job->sync_ids[i]);
		log_limited(LOG_LEVEL_ERROR, "cache: index batch failed: %s: tried again",
			    strerror(-job->rc));
	}
	uint64_t seq = job->seq;
	int rc = job->rc;
	if (rc == 0) {
		cache_state.batch_done_seq = seq;
		if (job->inval_seq)
			cache_state.inval_done = job->inval_seq;
	}
	free(job->recs);
	free(job->sync_ids);
	free(job->ranges);
	free(job);
	/* after the objects above: a batch asked for by a woken call holds them */
	index_lease_release();
	if (rc == 0)
		sync_waiters_answer(seq, 0);
}

/* Snapshot the changed objects and hand them to a worker. */
void batch_start(void)
{
	struct list_node *pos, *tmp;
	size_t n = 0, nranges = 0;

	if (list_empty(&cache_state.persist_queue) && cache_state.deletes.n == 0 &&
	    cache_state.touches.n == 0 && cache_state.inval_done == cache_state.inval_seq)
		return;
	if (index_lease_holder() == INDEX_HELD_CULL) {
		cache_state.batch_again = true;   /* right after the culling job */
		return;
	}
	if (!index_lease_take(INDEX_HELD_BATCH))
		return;   /* the running batch's timer tick comes next */
	n = cache_state.deletes.n + cache_state.touches.n / 2;
	list_for_each_safe(pos, tmp, &cache_state.persist_queue) {
		struct cache_object *o = list_entry(pos, struct cache_object, persist_link);
		n++;
		nranges += o->valid.count + object_dirty(o)->count + object_commit(o)->count;
	}
	struct batch_job *job = xcalloc(1, sizeof(*job));
	job->seq = ++cache_state.batch_seq;
	if (cache_state.inval_done != cache_state.inval_seq)
		job->inval_seq = cache_state.inval_seq;
	job->recs = xcalloc(n, sizeof(*job->recs));
	job->objs = xcalloc(n, sizeof(*job->objs));
	job->sync_ids = xcalloc(n + cache_state.sync_ids.n + 1, sizeof(*job->sync_ids));
	job->ranges = xcalloc(nranges * 2 + 2, sizeof(*job->ranges));
	uint64_t *rp = job->ranges;
	/* removals first: a culled object's (volume, fh) may come back under a
	 * new id in the same batch */
	for (size_t i = 0; i < cache_state.deletes.n; i++) {
		job->recs[job->n].id = cache_state.deletes.v[i];
		job->recs[job->n].deleted = 1;
		job->objs[job->n++] = NULL;
	}
	ARRAY_CLEAR(&cache_state.deletes);
	for (size_t i = 0; i + 1 < cache_state.touches.n; i += 2) {
		job->recs[job->n].id = (uint64_t)cache_state.touches.v[i];
		job->recs[job->n].last_access_s = cache_state.touches.v[i + 1];
		job->recs[job->n].touched = 1;
		job->objs[job->n++] = NULL;
	}
	ARRAY_CLEAR(&cache_state.touches);
	if (cache_state.sync_ids.n)
		memcpy(job->sync_ids, cache_state.sync_ids.v,
		       cache_state.sync_ids.n * sizeof(*job->sync_ids));
	job->nsync = cache_state.sync_ids.n;
	ARRAY_CLEAR(&cache_state.sync_ids);
	list_for_each_safe(pos, tmp, &cache_state.persist_queue) {
		struct cache_object *o = list_entry(pos, struct cache_object, persist_link);
		job->objs[job->n] = o;
		o->persist_seq = job->seq;
		struct index_record *r = &job->recs[job->n++];
		r->id = o->id;
		if (o->persist_queued == PERSIST_ACCESS) {
			r->touched = 1;
			r->last_access_s = o->access_recorded_s = o->last_access_s;
			o->persist_queued = PERSIST_NONE;
			list_del(&o->persist_link);
			continue;
		}
		r->volume = cache_state.volume;
		memcpy(r->fh, o->fh, o->fh_len);
		r->fh_len = o->fh_len;
		r->size = o->coh.known ? o->coh.size : 0;
		r->mtime_ns = o->coh.known ? o->coh.mtime_ns : -1;
		r->ctime_ns = o->coh.known ? o->coh.ctime_ns : -1;
		r->fileid = o->coh.fileid;
		r->last_access_s = o->last_access_s;
		o->access_recorded_s = o->last_access_s;
		r->ranges = rp;
		r->nranges = o->valid.count;
		extent_set_foreach(&o->valid, collect_range, &rp);
		struct extent_set unsynced;   /* dirty ∪ commit: not committed upstream */
		extent_set_init(&unsynced);
		extent_set_foreach(object_dirty(o), add_range, &unsynced);
		extent_set_foreach(object_commit(o), add_range, &unsynced);
		r->dirty = rp;
		r->ndirty = unsynced.count;
		extent_set_foreach(&unsynced, collect_range, &rp);
		extent_set_clear(&unsynced);
		r->wopen = o->wopen != CACHE_WOPEN_NONE;
		/* from now on the index may hold these ranges: a write must be
		 * marked first (cache_write_must_wait) */
		if (r->nranges > o->recorded_ranges)
			o->recorded_ranges = r->nranges;
		const struct rpc_cred *writer = cache_wb_cred(o);
		if (writer) {
			r->wb_uid = writer->uid;
			r->wb_gid = writer->gid;
			r->wb_ngids = writer->gids_len;
			memcpy(r->wb_gids, writer->gids, sizeof(r->wb_gids));
		}
		if (o->fd >= 0 && o->valid.count)
			job->sync_ids[job->nsync++] = o->id;
		o->persist_queued = 0;
		list_del(&o->persist_link);
	}
	worker_submit(cache_state.workers, batch_work, batch_done, job);
}

static void batch_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	batch_start();
}


struct cache_object *object_from_record(const struct index_record *r)
{
	if ((r->volume && strcmp(r->volume, cache_state.volume) != 0) || r->fh_len == 0 ||
	    r->fh_len > NFS3_FHSIZE_MAX)
		return NULL;   /* another upstream's objects stay for their own daemon */
	struct cache_object *o = object_new(r->id, r->fh, r->fh_len);
	changed(o);   /* replies to calls sent before it came into memory are stale */
	uint64_t recorded = 0;   /* bytes of its ranges, in cache.bytes already */
	for (size_t i = 0; i < r->nranges; i++)
		recorded += r->ranges[2 * i + 1] - r->ranges[2 * i];
	if (r->mtime_ns != -1) {
		o->coh.known = 1;
		o->coh.size = r->size;
		o->coh.mtime_ns = r->mtime_ns;
		o->coh.ctime_ns = r->ctime_ns;
		o->coh.fileid = r->fileid;
	}
	o->attr_time = 0;   /* revalidated with a GETATTR on first use */
	o->last_access_s = o->access_recorded_s = r->last_access_s;
	for (size_t i = 0; i < r->nranges; i++)
		extent_set_add(&o->valid, r->ranges[2 * i], r->ranges[2 * i + 1]);
	if (r->wopen) {
		/* written to when the daemon stopped without a last batch: writes
		 * not recorded may lie over recorded ranges; only the recorded
		 * dirty bytes are kept (CacheFiles' "in use" mark).  (Objects
		 * leave memory with the mark cleared, so a lookup finds it only
		 * when a crash left it.)  The index learns it. */
		extent_set_clear(&o->valid);
		persist_mark(o);
	}
	struct dirty_state *ds = NULL;
	if (r->ndirty) {
		struct rpc_cred writer = { .flavor = RPC_AUTH_SYS, .uid = r->wb_uid, .gid = r->wb_gid };
		writer.gids_len = r->wb_ngids <= RPC_AUTH_SYS_MAX_GIDS ? r->wb_ngids : 0;
		memcpy(writer.gids, r->wb_gids, writer.gids_len * sizeof(writer.gids[0]));
		snprintf(writer.machinename, sizeof(writer.machinename), "nfscached");
		ds = dirty_state_get(o, &writer);
	}
	for (size_t i = 0; i < r->ndirty; i++) {
		extent_set_add(&o->valid, r->dirty[2 * i], r->dirty[2 * i + 1]);
		extent_set_add(&ds->dirty, r->dirty[2 * i], r->dirty[2 * i + 1]);
	}
	if (ds && ds->dirty.count && cache_state.cfg->commit == COMMIT_LOCAL) {
		/* a COMMIT may have been answered for any of them: written back
		 * whatever the upstream file became meanwhile (the write-back of
		 * bytes already sent may have changed it), never dropped */
		o->wb_recover = CACHE_RECOVER_NONE;
	} else if (ds && ds->dirty.count) {
		/* written back once the upstream file is shown unchanged since */
		o->wb_recover = CACHE_RECOVER_PENDING;
	}
	if (ds) {
		ds->local_size = o->coh.size;
		uint64_t end = r->dirty[2 * r->ndirty - 1];
		if (end > ds->local_size)
			ds->local_size = end;
		ds->local_mtime_ns = o->coh.mtime_ns;
		ds->dirty_since = ev_now(cache_state.loop);
		dirty_changed(o, 0);
		if (cache_state.cfg->commit == COMMIT_LOCAL)
			unwritten_recovered(o);
	}
	o->recorded_ranges = r->nranges;
	stats.cache_bytes += o->valid.bytes - recorded;
	return o;
}

static int load_one(const struct index_record *r, void *ctx)
{
	(void)ctx;
	object_from_record(r);
	return 0;
}

/* cache_init: the totals of the volume from the index, and the objects that
 * must be in memory from the start: those with dirty data to write back or
 * a "written to" mark left by a crash.  Never a walk of every object.
 * 0, or -EIO (then what was read is used). */
int persist_load(void)
{
	uint64_t objects = 0, bytes = 0;
	int rc = index_totals(cache_state.index, cache_state.volume, &objects, &bytes);

	stats.cache_objects = objects;
	stats.cache_bytes = bytes;
	if (rc != 0)
		return rc;
	rc = index_load_pending(cache_state.index, cache_state.volume, load_one, NULL);
	cache_state.all_resident = rc == 0 && cache_state.count == objects;
	return rc;
}

/* The batch every BATCH_INTERVAL_S. */
void persist_start(void)
{
	list_init(&cache_state.sync_waiters);
	ev_timer_init(&cache_state.batch_timer, batch_timer_cb, BATCH_INTERVAL_S, BATCH_INTERVAL_S);
	ev_timer_start(cache_state.loop, &cache_state.batch_timer);
	ev_unref(cache_state.loop);   /* the batch timer alone does not keep the loop running */
}

void persist_stop(void)
{
	ev_ref(cache_state.loop);
	ev_timer_stop(cache_state.loop, &cache_state.batch_timer);
	/* the last batch records their bytes all the same */
	sync_waiters_answer(0, -ECANCELED);
}

/* The last batch of a clean stop (its worker pool runs it to the end). */
void persist_last_batch(void)
{
	index_lease_reset();
	/* a clean stop: every write is in the last batch */
	for (size_t i = 0; i < cache_state.nbuckets; i++)
		for (struct cache_object *o = cache_state.buckets[i]; o; o = o->hash_next)
			if (o->wopen != CACHE_WOPEN_NONE) {
				o->wopen = CACHE_WOPEN_NONE;
				persist_mark(o);
			}
	batch_start();
}

/* Free the queues. */
void persist_free(void)
{
	ARRAY_FREE(&cache_state.sync_ids);
	ARRAY_FREE(&cache_state.deletes);
	ARRAY_FREE(&cache_state.touches);
	stats.cache_unwritten_bytes = stats.cache_unwritten_oldest_s = 0;
}
