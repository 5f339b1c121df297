/*
 * persist.c — the batched persistence of the objects, and the module's
 * start and stop: every second the objects changed since the last batch
 * are snapshotted, their backing files (and those closed meanwhile)
 * fdatasync'ed and the snapshot written to the index in one transaction,
 * on a worker thread.  A range reaches the index only after its data was
 * synced.  On start the index is loaded back into the object table.  Not
 * here: what the objects hold and when it changes (cache.c, dirty.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/index.h"
#include "cache/worker.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

#define COMMIT_INTERVAL_S 1.0

void mark_dirty(struct cache_object *o)
{
	if (!o->index_dirty) {
		o->index_dirty = 1;
		list_add_tail(&C.dirty, &o->dirty_link);
	}
}

void commit_delete(uint64_t id)
{
	if (C.n_deletes == C.cap_deletes) {
		C.cap_deletes = C.cap_deletes ? 2 * C.cap_deletes : 256;
		C.deletes = xreallocarray(C.deletes, C.cap_deletes, sizeof(*C.deletes));
	}
	C.deletes[C.n_deletes++] = id;
}

/* A backing file closed while its ranges wait for the next batch, which
 * must sync their data first: the batch closes it. */
void commit_sync_fd(int fd)
{
	if (C.n_sync_fds == C.cap_sync_fds) {
		C.cap_sync_fds = C.cap_sync_fds ? 2 * C.cap_sync_fds : 64;
		C.sync_fds = xreallocarray(C.sync_fds, C.cap_sync_fds, sizeof(*C.sync_fds));
	}
	C.sync_fds[C.n_sync_fds++] = fd;
}

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
		if (job->recs[i].deleted) {
			if (job->rc != 0)
				commit_delete(job->recs[i].id);   /* tried again */
			continue;
		}
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
	if (!C.commit_running)
		space_index_free();
}

/* Snapshot the changed objects and hand them to a worker. */
void commit_start(void)
{
	struct list_node *pos, *tmp;
	size_t n = 0, nranges = 0;

	if (list_empty(&C.dirty) && C.n_deletes == 0)
		return;
	if (C.commit_running) {
		if (C.commit_running == INDEX_HELD_CULL)
			C.commit_again = 1;   /* right after the culling job */
		return;
	}
	n = C.n_deletes;
	list_for_each_safe(pos, tmp, &C.dirty) {
		struct cache_object *o = list_entry(pos, struct cache_object, dirty_link);
		n++;
		nranges += o->valid.count + o->dirty.count + o->commit.count;
	}
	struct commit_job *job = xcalloc(1, sizeof(*job));
	job->recs = xcalloc(n, sizeof(*job->recs));
	job->objs = xcalloc(n, sizeof(*job->objs));
	job->fds = xcalloc(n + C.n_sync_fds, sizeof(*job->fds));
	job->ranges = xcalloc(nranges * 2 + 2, sizeof(*job->ranges));
	uint64_t *rp = job->ranges;
	/* removals first: a culled object's (volume, fh) may come back under a
	 * new id in the same batch */
	for (size_t i = 0; i < C.n_deletes; i++) {
		job->recs[job->n].id = C.deletes[i];
		job->recs[job->n].deleted = 1;
		job->objs[job->n++] = NULL;
	}
	C.n_deletes = 0;
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
		o->access_recorded_s = o->last_access_s;
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
	C.commit_running = INDEX_HELD_BATCH;
	worker_submit(C.workers, commit_work, commit_done, job);
}

static void commit_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	commit_start();
}


static void objects_free(void)
{
	for (size_t i = 0; i < C.nbuckets; i++) {
		struct cache_object *o = C.buckets[i], *next;
		for (; o; o = next) {
			next = o->hash_next;
			if (o->fd >= 0)
				close(o->fd);
			object_free(o);
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
	o->last_access_s = o->access_recorded_s = r->last_access_s;
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

int cache_init(struct ev_loop *loop, const struct cache_config *cfg, const char *volume)
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
	if ((rc = backing_init(cfg->dir)) != 0)
		goto fail;
	/* one daemon per cache directory: another would reset an index it
	 * finds locked, and the two would write the same backing files */
	snprintf(lock_path, sizeof(lock_path), "%s/lock", cfg->dir);
	C.lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (C.lock_fd < 0 || flock(C.lock_fd, LOCK_EX | LOCK_NB) != 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		log_error("cache: %s is in use by another nfscached", cfg->dir);
		goto fail;
	}
	C.index = index_open(cfg->dir, &reset);
	if (!C.index) {
		rc = -EIO;
		goto fail;
	}
	C.volume = xstrdup(volume);
	table_grow();
	if (reset) {
		log_warning("cache: index in %s was unusable: starting with an empty cache",
			    cfg->dir);
		if ((rc = backing_retire_all(cfg->dir)) != 0)
			log_error("cache: cannot move the old backing files of %s away: %s",
				  cfg->dir, strerror(-rc));
	}
	if (!reset && index_load(C.index, load_one, NULL) != 0)
		log_warning("cache: index in %s could not be read fully: using what was read",
			    cfg->dir);
	uint64_t max_id = index_max_id(C.index);
	if (max_id >= C.next_id)
		C.next_id = max_id + 1;
	C.max_id_at_start = C.next_id - 1;
	C.workers = worker_pool_new(loop, 2);
	if (!C.workers) {
		rc = -EAGAIN;
		goto fail;
	}
	space_init();
	space_reconcile();   /* in the background: the graveyard, orphans */
	ev_timer_init(&C.commit_timer, commit_timer_cb, COMMIT_INTERVAL_S, COMMIT_INTERVAL_S);
	ev_timer_start(loop, &C.commit_timer);
	ev_unref(loop);   /* the batch timer alone does not keep the loop running */
	log_info("cache: %s: %zu objects, %llu bytes", cfg->dir, C.count,
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
	space_finalise();
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
	free(C.deletes);
	close(C.lock_fd);
	memset(&C, 0, sizeof(C));
}
