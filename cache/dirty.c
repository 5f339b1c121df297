/*
 * dirty.c — the write-back state of each object (DESIGN.md "Write-back"):
 * bytes written locally and not sent upstream yet (dirty), those a pass
 * sent and has not committed yet (commit), the size and mtime clients see
 * meanwhile, the writer's credential, the list of objects with dirty data
 * and the cache.dirty.bytes gauge; with cache.commit = local, the bytes a
 * COMMIT answered locally made stable and not committed upstream yet
 * (unwritten: always within dirty ∪ commit, so every change of those sets
 * keeps it exact) and the cache.unwritten.* gauges.  All of it lives in a
 * struct dirty_state of its own, allocated by the object's first local
 * write (or by loading recorded dirty ranges) and freed as soon as nothing
 * is uncommitted, so that a clean object carries one NULL pointer; the
 * writer's credential is a shared reference (cred.h).  Not here: sending
 * anything upstream (daemon/writeback.c), nor persisting the sets
 * (persist.c).
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/cred.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

static const struct extent_set no_ranges = EXTENT_SET_INIT;

const struct extent_set *object_dirty(const struct cache_object *o)
{
	return o->dirty_state ? &o->dirty_state->dirty : &no_ranges;
}

const struct extent_set *object_commit(const struct cache_object *o)
{
	return o->dirty_state ? &o->dirty_state->commit : &no_ranges;
}

struct dirty_state *dirty_state_get(struct cache_object *o, const struct rpc_cred *cred)
{
	struct dirty_state *ds = o->dirty_state;

	if (ds)
		return ds;
	ds = xcalloc(1, sizeof(*ds));
	ds->o = o;
	extent_set_init(&ds->dirty);
	extent_set_init(&ds->commit);
	extent_set_init(&ds->unwritten);
	ds->wb_cred = cred_intern(cred);
	list_init(&ds->wb_link);
	o->dirty_state = ds;
	return ds;
}

void dirty_state_free(struct cache_object *o)
{
	struct dirty_state *ds = o->dirty_state;

	if (!ds)
		return;
	list_del(&ds->wb_link);
	extent_set_clear(&ds->dirty);
	extent_set_clear(&ds->commit);
	extent_set_clear(&ds->unwritten);
	cred_release(ds->wb_cred);
	free(ds);
	o->dirty_state = NULL;
}

/* The write-back state ends with the last uncommitted byte. */
static void dirty_state_end_if_clean(struct cache_object *o)
{
	struct dirty_state *ds = o->dirty_state;

	if (ds && ds->dirty.count == 0 && ds->commit.count == 0 && ds->unwritten.count == 0) {
		assert(ds->uncommitted_bytes == 0);
		dirty_state_free(o);
	}
}

uint64_t object_uncommitted_bytes(const struct cache_object *o)
{
	return o->dirty_state ? o->dirty_state->uncommitted_bytes : 0;
}

/* |dirty ∪ commit|: both sets are only held together while a pass runs. */
static uint64_t union_bytes(const struct dirty_state *ds)
{
	struct extent_set u;
	uint64_t n;

	if (ds->commit.count == 0 || ds->dirty.count == 0)
		return ds->dirty.bytes + ds->commit.bytes;
	extent_set_init(&u);
	extent_set_foreach(&ds->dirty, add_range, &u);
	extent_set_foreach(&ds->commit, add_range, &u);
	n = u.bytes;
	extent_set_clear(&u);
	return n;
}

/* Keep uncommitted_bytes, cache.dirty.bytes and the list of dirty objects in
 * step with the sets (`now`: the new |dirty ∪ commit|). */
static void uncommitted_set(struct dirty_state *ds, uint64_t now)
{
	stats.cache_dirty_bytes += now - ds->uncommitted_bytes;
	ds->uncommitted_bytes = now;
	if (ds->dirty.count == 0 && ds->commit.count == 0)
		list_del(&ds->wb_link);
	else if (list_empty(&ds->wb_link))
		list_add_tail(&cache_state.wb_list, &ds->wb_link);
}

static int add_clean_part(uint64_t s, uint64_t e, void *ctx)
{
	extent_set_add(ctx, s, e);
	return 0;
}

struct trim_ctx {
	const struct cache_object *o;
	struct extent_set *gone;
};

static int find_committed(uint64_t s, uint64_t e, void *ctx)
{
	struct trim_ctx *t = ctx;

	return foreach_clean_part(t->o, s, e, add_clean_part, t->gone);
}

/* unwritten ∩= dirty ∪ commit: bytes committed upstream (or dropped) are
 * no longer unwritten; the gauges follow. */
static void unwritten_trim(struct cache_object *o)
{
	struct dirty_state *ds = o->dirty_state;
	uint64_t before = ds->unwritten.bytes;
	struct extent_set gone;

	if (ds->unwritten.count == 0)
		return;
	extent_set_init(&gone);
	struct trim_ctx t = { o, &gone };
	extent_set_foreach(&ds->unwritten, find_committed, &t);
	extent_set_foreach(&gone, remove_range, &ds->unwritten);
	extent_set_clear(&gone);
	stats.cache_unwritten_bytes -= before - ds->unwritten.bytes;
	if (ds->unwritten.count == 0) {
		ds->unwritten_since = ds->unwritten_later = 0;
		cache_unwritten_refresh();
	}
}

void dirty_changed(struct cache_object *o, uint64_t before)
{
	(void)before;
	if (!o->dirty_state)
		return;
	uncommitted_set(o->dirty_state, union_bytes(o->dirty_state));
	unwritten_trim(o);
	dirty_state_end_if_clean(o);
}

void unwritten_add(struct cache_object *o, const struct extent_set *stable)
{
	struct dirty_state *ds = o->dirty_state;
	ev_tstamp now = ev_now(cache_state.loop);

	if (!ds)
		return;   /* all of it committed upstream meanwhile */
	uint64_t before = ds->unwritten.bytes;
	extent_set_foreach(stable, add_range, &ds->unwritten);
	stats.cache_unwritten_bytes += ds->unwritten.bytes - before;
	unwritten_trim(o);   /* committed upstream meanwhile: not unwritten */
	if (ds->unwritten.bytes == before)
		return;
	if (ds->unwritten_since == 0)
		ds->unwritten_since = now;
	else if (ds->commit.count && ds->unwritten_later == 0)
		ds->unwritten_later = now;   /* not in the running pass */
	cache_unwritten_refresh();
}

void unwritten_recovered(struct cache_object *o)
{
	struct dirty_state *ds = o->dirty_state;

	if (!ds)
		return;
	uint64_t before = ds->unwritten.bytes;
	extent_set_foreach(&ds->dirty, add_range, &ds->unwritten);
	stats.cache_unwritten_bytes += ds->unwritten.bytes - before;
	if (ds->unwritten.count && ds->unwritten_since == 0)
		ds->unwritten_since = ev_now(cache_state.loop);
}

uint64_t cache_unwritten_bytes(const struct cache_object *o)
{
	return o->dirty_state ? o->dirty_state->unwritten.bytes : 0;
}

void cache_unwritten_refresh(void)
{
	struct list_node *pos;
	ev_tstamp oldest = 0;

	if (!cache_state.loop)
		return;
	for (pos = cache_state.wb_list.next; pos != &cache_state.wb_list; pos = pos->next) {
		const struct dirty_state *ds = list_entry(pos, struct dirty_state, wb_link);
		if (ds->unwritten.count && (oldest == 0 || ds->unwritten_since < oldest))
			oldest = ds->unwritten_since;
	}
	ev_tstamp age = oldest ? ev_now(cache_state.loop) - oldest : 0;
	stats.cache_unwritten_oldest_s = age > 0 ? (uint64_t)age : 0;
}

/*
 * Call fn(start, end, ctx) for each part of [start, end) that is neither
 * dirty nor sent upstream (the bytes that are only the upstream's copy),
 * in order; stops at and returns a nonzero return of fn.
 */
int foreach_clean_part(const struct cache_object *o, uint64_t start, uint64_t end,
		       int (*fn)(uint64_t s, uint64_t e, void *ctx), void *ctx)
{
	const struct extent_set *dirty = object_dirty(o), *commit = object_commit(o);
	uint64_t pos = start, gs, ge, cs, ce;
	int rc;

	while (pos < end && extent_set_first_gap(dirty, pos, end, &gs, &ge)) {
		for (uint64_t p = gs; p < ge && extent_set_first_gap(commit, p, ge, &cs, &ce); p = ce)
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

/* ---- write-back state ------------------------------------------------ */

bool cache_has_uncommitted(const struct cache_object *o)
{
	const struct dirty_state *ds = o->dirty_state;

	return ds && (ds->dirty.count != 0 || ds->commit.count != 0);
}

uint64_t cache_client_size(const struct cache_object *o)
{
	return cache_has_uncommitted(o) ? o->dirty_state->local_size : o->coh.size;
}

const struct extent_set *cache_dirty_set(const struct cache_object *o)
{
	return object_dirty(o);
}

ev_tstamp cache_dirty_since(const struct cache_object *o)
{
	const struct dirty_state *ds = o->dirty_state;

	return ds && ds->dirty.count ? ds->dirty_since : 0;
}

const struct rpc_cred *cache_wb_cred(const struct cache_object *o)
{
	return o->dirty_state ? o->dirty_state->wb_cred : NULL;
}

struct cache_object *cache_uncommitted_object(struct list_node *pos)
{
	return list_entry(pos, struct dirty_state, wb_link)->o;
}

void cache_patch_attrs(const struct cache_object *o, fattr3 *a)
{
	if (!cache_has_uncommitted(o))
		return;
	const struct dirty_state *ds = o->dirty_state;
	a->size = ds->local_size;
	if (a->used < a->size)
		a->used = a->size;
	/* never older than what the upstream reported */
	if (ds->local_mtime_ns > ns_of(&a->mtime)) {
		a->mtime.seconds = (uint32_t)(ds->local_mtime_ns / 1000000000);
		a->mtime.nseconds = (uint32_t)(ds->local_mtime_ns % 1000000000);
	}
	if (ns_of(&a->mtime) > ns_of(&a->ctime))
		a->ctime = a->mtime;
}

bool cache_write_must_wait(struct cache_object *o, struct cache_waiter *w)
{
	if (o->wopen == CACHE_WOPEN_RECORDED)
		return false;
	if (o->recorded_ranges == 0 && o->wb_recover == CACHE_RECOVER_NONE) {
		/* the index trusts nothing of it that a write could contradict;
		 * the mark goes with the next batch all the same */
		if (o->wopen == CACHE_WOPEN_NONE) {
			o->wopen = CACHE_WOPEN_REQUESTED;
			persist_mark(o);
		}
		return false;
	}
	o->wopen = CACHE_WOPEN_REQUESTED;
	persist_mark(o);
	cache_wait(o, w);
	if (index_lease_holder() != INDEX_FREE)
		cache_state.batch_again = true;
	else
		batch_start();
	return true;
}

int cache_write_local(struct cache_object *o, uint64_t offset, const void *data, uint32_t len,
		      const struct rpc_cred *cred)
{
	uint64_t size = cache_client_size(o), end = offset + len;
	int fd, rc;

	if (!space_may_store(len + (offset > size ? offset - size : 0)))
		return -ENOSPC;   /* written through instead */
	if ((fd = object_fd(o)) < 0)
		return fd;
	assert(offset <= size || offset - size <= CACHE_WRITE_GAP_MAX);
	if (offset > size) {
		/* what extending the file leaves between: zeros, not the client's bytes */
		void *zeros = xcalloc(1, (size_t)(offset - size));
		rc = backing_write(fd, zeros, (size_t)(offset - size), size);
		free(zeros);
		if (rc == -ENOSPC || rc == -EDQUOT)
			space_nospace();
		if (rc != 0)
			return rc;
		uint64_t before = o->valid.bytes;
		extent_set_add(&o->valid, size, offset);
		bytes_changed(before, o->valid.bytes);
	}
	if ((rc = backing_write(fd, data, len, offset)) != 0) {
		log_limited(LOG_LEVEL_WARNING, "cache: backing write of object %llu: %s",
			    (unsigned long long)o->id, strerror(-rc));
		if (rc == -ENOSPC || rc == -EDQUOT)
			space_nospace();
		return rc;
	}
	uint64_t added = 0, before = o->valid.bytes;
	foreach_clean_part(o, offset, end, count_part, &added);
	bool fresh = !cache_has_uncommitted(o);
	struct dirty_state *ds = dirty_state_get(o, cred);
	if (fresh) {
		ds->local_size = o->coh.size;
		ds->local_mtime_ns = o->coh.mtime_ns;
	}
	if (ds->dirty.count == 0)
		ds->dirty_since = ev_now(cache_state.loop);
	extent_set_add(&o->valid, offset, end);
	bytes_changed(before, o->valid.bytes);
	extent_set_add(&ds->dirty, offset, end);
	uncommitted_set(ds, ds->uncommitted_bytes + added);
	if (end > ds->local_size)
		ds->local_size = end;
	int64_t now = realtime_ns();
	ds->local_mtime_ns = now > ds->local_mtime_ns ? now : ds->local_mtime_ns + 1;
	if (!cred_equal(ds->wb_cred, cred)) {
		const struct rpc_cred *writer = cred_intern(cred);
		cred_release(ds->wb_cred);
		ds->wb_cred = writer;
	}
	dirty_state_end_if_clean(o);   /* a WRITE of no bytes leaves nothing dirty */
	stats.cache_write_bytes += len;
	persist_mark(o);
	space_stored();
	return 0;
}

uint64_t *cache_dirty_take(struct cache_object *o, size_t *n)
{
	struct dirty_state *ds = o->dirty_state;
	uint64_t *ranges, *p;

	*n = ds ? ds->dirty.count : 0;
	if (*n == 0)
		return NULL;
	ranges = xcalloc(*n * 2, sizeof(*ranges));
	p = ranges;
	uint64_t before = object_uncommitted_bytes(o);
	extent_set_foreach(&ds->dirty, collect_range, &p);
	extent_set_foreach(&ds->dirty, add_range, &ds->commit);
	extent_set_clear(&ds->dirty);
	dirty_changed(o, before);   /* the commit set holds them: ds stays */
	ds->unwritten_later = 0;   /* every unwritten byte is in this pass */
	return ranges;
}

void cache_commit_settle(struct cache_object *o, enum cache_settle how)
{
	struct dirty_state *ds = o->dirty_state;
	uint64_t before = object_uncommitted_bytes(o), vbefore = o->valid.bytes;

	if (!ds) {
		persist_mark(o);
		return;
	}
	if (how == CACHE_RESEND) {
		if (ds->dirty.count == 0 && ds->commit.count)
			ds->dirty_since = ev_now(cache_state.loop);
		extent_set_foreach(&ds->commit, add_range, &ds->dirty);
	} else if (how == CACHE_FAILED) {
		/* the backing bytes are not the upstream's; those written again
		 * since are dirty and stay */
		extent_set_foreach(&ds->dirty, remove_range, &ds->commit);
		extent_set_foreach(&ds->commit, remove_range, &o->valid);
		bytes_changed(vbefore, o->valid.bytes);
		changed(o);
	}
	extent_set_clear(&ds->commit);
	dirty_changed(o, before);
	ds = o->dirty_state;   /* NULL when nothing is left uncommitted */
	if (ds && ds->unwritten.count && ds->unwritten_later) {
		/* what is left became stable after the pass took its ranges (or
		 * was written again since: counted as of that time) */
		if (how == CACHE_COMMITTED)
			ds->unwritten_since = ds->unwritten_later;
		ds->unwritten_later = 0;
		cache_unwritten_refresh();
	}
	persist_mark(o);
}

uint64_t cache_dirty_drop(struct cache_object *o, uint64_t start, uint64_t end)
{
	struct dirty_state *ds = o->dirty_state;
	uint64_t before = object_uncommitted_bytes(o), vbefore = o->valid.bytes;
	struct extent_set gone;

	extent_set_init(&gone);
	if (ds) {
		extent_set_foreach(&ds->dirty, add_range, &gone);
		extent_set_foreach(&ds->commit, add_range, &gone);
	}
	extent_set_remove(&gone, 0, start);
	extent_set_remove(&gone, end, UINT64_MAX);
	uint64_t n = gone.bytes;
	if (ds) {
		extent_set_remove(&ds->dirty, start, end);
		extent_set_remove(&ds->commit, start, end);
	}
	/* their bytes in the backing file are not the upstream's */
	extent_set_foreach(&gone, remove_range, &o->valid);
	extent_set_clear(&gone);
	bytes_changed(vbefore, o->valid.bytes);
	dirty_changed(o, before);
	changed(o);
	persist_mark(o);
	return n;
}

struct list_node *cache_uncommitted_list(void)
{
	return &cache_state.wb_list;
}
