/*
 * reconcile.c — the start-up reconciliation of the index with the backing
 * files, one worker job run once after cache_init: the graveyard left by a
 * crash is emptied, backing files no index row names are deleted, rows of
 * this volume whose file is missing lose their objects, and files of ids
 * above the index's largest at start that no object took (written before a
 * crash, before their first batch) are buried.  It owns that job and its
 * tables only; cull.c schedules it (it holds the index lease meanwhile,
 * like a culling step) and buries files for it.
 */
#include "config.h"

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

struct row {
	uint64_t id;
	uint64_t bytes;    /* its valid bytes */
	int ours;          /* this volume's */
	int has_ranges;
	int seen;          /* its backing file exists */
};

struct reconcile_job {
	ARRAY(struct row) rows;         /* every index row, sorted by id */
	uint64_t max_id;
	size_t purged, orphan_files, other_files;
	ARRAY(struct row) orphan_rows;  /* ours, with ranges, without a file */
	ARRAY(uint64_t) late;           /* files of ids above max_id: new objects' or orphans */
	int rc;
};

static int scan_row(uint64_t id, const char *volume, int has_ranges, uint64_t bytes, void *ctx)
{
	struct reconcile_job *j = ctx;
	struct row r = { id, bytes, strcmp(volume, cache_state.volume) == 0, has_ranges, 0 };

	ARRAY_PUSH(&j->rows, r);
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct row *)a)->id, y = ((const struct row *)b)->id;

	return x < y ? -1 : x > y;
}

static int reconcile_file(uint64_t id, const char *path, void *ctx)
{
	struct reconcile_job *j = ctx;
	struct row key = { .id = id };

	if (id == 0) {
		j->other_files++;   /* not ours: left alone */
		return 0;
	}
	if (id > j->max_id) {
		/* an object created since the start, or a crash's orphan written
		 * before its first batch: the loop tells them apart */
		ARRAY_PUSH(&j->late, id);
		return 0;
	}
	struct row *r = j->rows.n ? bsearch(&key, j->rows.v, j->rows.n, sizeof(*j->rows.v),
					    row_cmp) : NULL;
	if (r) {
		r->seen = 1;
		return 0;
	}
	if (unlink(path) == 0)
		j->orphan_files++;
	return 0;
}

static void reconcile_work(void *arg)
{
	struct reconcile_job *j = arg;

	j->purged = backing_purge_graveyard();
	j->rc = index_scan(cache_state.index, scan_row, j);
	if (j->rc != 0)
		return;
	if (j->rows.n)
		qsort(j->rows.v, j->rows.n, sizeof(*j->rows.v), row_cmp);
	backing_foreach(reconcile_file, j);
	for (size_t i = 0; i < j->rows.n; i++) {
		struct row *r = &j->rows.v[i];
		if (r->ours && r->has_ranges && !r->seen && r->id <= j->max_id)
			ARRAY_PUSH(&j->orphan_rows, *r);
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct orphan_ctx {
	const struct row *rows;        /* sorted by id */
	size_t n;
	ARRAY(struct cache_object *) found;
};

struct live_ctx {
	uint64_t above;
	ARRAY(uint64_t) ids;
};

static void collect_live(struct cache_object *o, void *arg)
{
	struct live_ctx *lc = arg;

	if (o->id > lc->above)
		ARRAY_PUSH(&lc->ids, o->id);
}

/* Backing files of ids above the index's largest at start that no object
 * has: files written before a crash, whose rows never reached the index.
 * No object takes those ids afterwards; a worker deletes the files. */
static size_t bury_late(struct reconcile_job *j)
{
	struct live_ctx lc = { .above = cache_state.max_id_at_start };
	ARRAY(uint64_t) ids = { 0 };
	uint64_t top = 0;

	if (!j->late.n)
		return 0;
	cache_foreach(collect_live, &lc);
	if (lc.ids.n)
		qsort(lc.ids.v, lc.ids.n, sizeof(*lc.ids.v), u64_cmp);
	for (size_t i = 0; i < j->late.n; i++) {
		uint64_t id = j->late.v[i];
		if (lc.ids.n && bsearch(&id, lc.ids.v, lc.ids.n, sizeof(*lc.ids.v), u64_cmp))
			continue;   /* an object's since the start */
		ARRAY_PUSH(&ids, id);
		if (id > top)
			top = id;
	}
	ARRAY_FREE(&lc.ids);
	if (top >= cache_state.next_id)
		cache_state.next_id = top + 1;
	size_t n = ids.n;
	space_bury(ids.v, ids.n);
	ARRAY_FREE(&ids);
	return n;
}

static void find_orphan(struct cache_object *o, void *arg)
{
	struct orphan_ctx *oc = arg;

	struct row key = { .id = o->id };

	if (bsearch(&key, oc->rows, oc->n, sizeof(*oc->rows), row_cmp))
		ARRAY_PUSH(&oc->found, o);
}

static void reconcile_done(void *arg)
{
	struct reconcile_job *j = arg;
	size_t removed = 0;

	/* objects are only removed while the index is ours: no batch holds them */
	if (j->orphan_rows.n) {
		struct orphan_ctx oc = { j->orphan_rows.v, j->orphan_rows.n, { 0 } };
		cache_foreach(find_orphan, &oc);
		/* first those not in memory: their rows go (a lookup finding them
		 * meanwhile answers absent) */
		ARRAY(uint64_t) in_memory = { 0 };
		for (size_t k = 0; k < oc.found.n; k++)
			ARRAY_PUSH(&in_memory, oc.found.v[k]->id);
		if (in_memory.n)
			qsort(in_memory.v, in_memory.n, sizeof(*in_memory.v), u64_cmp);
		for (size_t i = 0; i < j->orphan_rows.n; i++) {
			const struct row *r = &j->orphan_rows.v[i];
			if (in_memory.n && bsearch(&r->id, in_memory.v, in_memory.n,
						   sizeof(*in_memory.v), u64_cmp))
				continue;
			batch_delete(r->id);
			if (stats.cache_objects)
				stats.cache_objects--;
			/* (an invalidate --all since the scan may have counted them out) */
			stats.cache_bytes -= r->bytes < stats.cache_bytes ? r->bytes : stats.cache_bytes;
			removed++;
		}
		ARRAY_FREE(&in_memory);
		for (size_t i = 0; i < oc.found.n; i++) {
			struct cache_object *o = oc.found.v[i];
			if (o->fd >= 0 || o->checked)
				continue;   /* opened since: its file exists now */
			if (cache_has_uncommitted(o) && o->pins == 0) {
				uint64_t n = cache_dirty_drop(o, 0, UINT64_MAX);
				log_error("cache: object %llu: its backing file is missing: %llu dirty "
					  "bytes lost", (unsigned long long)o->id,
					  (unsigned long long)n);
			}
			if (!object_cullable(o))
				continue;
			batch_delete(o->id);
			object_remove(o);
			removed++;
		}
		ARRAY_FREE(&oc.found);
	}
	index_lease_release();
	batch_start();
	size_t late = bury_late(j);
	cache_state.reconciled = true;   /* objects of new ids may leave memory now */
	if (j->rc == 0)
		log_info("cache: reconciled with %s: %zu orphan backing files and %zu index rows "
			 "without a file removed, %zu graveyard entries deleted%s",
			 cache_state.cfg->dir, j->orphan_files + late, removed, j->purged,
			 j->other_files ? " (files not named as objects left alone)" : "");
	ARRAY_FREE(&j->late);
	ARRAY_FREE(&j->rows);
	ARRAY_FREE(&j->orphan_rows);
	free(j);
	space_reconcile_done();
}

int reconcile_submit(void)
{
	struct reconcile_job *j = xcalloc(1, sizeof(*j));

	j->max_id = cache_state.max_id_at_start;
	return worker_submit(cache_state.workers, reconcile_work, reconcile_done, j);
}
