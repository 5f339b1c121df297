/*
 * cull.c — space management (DESIGN.md "Space management"), after
 * cachefilesd(8): the cache file system's free blocks and files, and
 * cache.bytes under cache.max_size, against brun/bcull/bstop and
 * frun/fcull/fstop; culling of least-recently-used objects in bounded steps;
 * the start-up reconciliation of the index with the backing files.
 *
 * A culling step is two worker jobs and two short loop callbacks: the index
 * gives up to CULL_STEP_MAX candidates in least-recently-used order (a
 * cursor walks the order, so objects that cannot go are passed over, not
 * asked for again); on the loop each candidate still cullable is taken out
 * of the table at once (new calls for its file start a new object) and its
 * rows are queued for removal by the next batch; then a worker renames the
 * victims' backing files into the graveyard and unlinks them there.  After
 * each step the free space is measured again and the next step starts on
 * the next loop iteration while still below brun/frun.  Nothing here waits
 * on the disk on the loop thread but statvfs.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/index.h"
#include "cache/worker.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

#define SPACE_CHECK_S 1.0                  /* statvfs at least this often */
#define SPACE_CHECK_BYTES (4u << 20)       /* and after this many bytes stored */
#define CULL_STEP_MAX 256                  /* candidates (and victims) per step */
#define CULL_STARVED_RETRY_S 1.0           /* a pass found nothing: try again after, */
#define CULL_STARVED_RETRY_MAX_S 30.0      /* doubling up to this */
#define CULL_KICK_MIN (1u << 20)           /* ENOSPC: cull at least this much */
#define PAGE_ROUND(n) (((n) + 4095) & ~(uint64_t)4095)

struct cull_waiter {
	struct cull_waiter *next;
	void (*done)(void *arg, const struct cache_space *space);
	void *arg;
	uint64_t base_objects, base_bytes;   /* the run's counts when it asked */
};

static struct {
	ev_timer timer;                 /* SPACE_CHECK_S */
	ev_timer next_step;             /* 0 s: the next step on the next loop iteration */
	int measured;
	uint64_t btotal, bavail;        /* bytes */
	uint64_t ftotal, favail;        /* inodes */
	uint64_t stored_since;          /* bytes allowed by space_may_store since the statvfs */
	int stopped;                    /* below bstop/fstop (or max_size's bstop) */
	int culling;                    /* a run is on */
	uint64_t kick_left;             /* ENOSPC: bytes still to cull past the thresholds */
	int step;                       /* a step (or the reconciliation) is running */
	int want_index;                 /* waiting for a batch to end */
	int reconcile;                  /* the reconciliation is still to run */
	struct index_cursor cur;
	uint64_t pass_culled;           /* culled since the cursor last started over */
	int starved;
	ev_tstamp starved_until, starved_backoff;
	int starved_logged;
	uint64_t run_objects, run_bytes;
	struct cull_waiter *waiters;
	int logged_statvfs;
	int closing;                    /* space_finalise: jobs still draining start nothing */
} S;

static uint64_t pct_of(uint64_t total, uint64_t pct)
{
	return total / 100 * pct + total % 100 * pct / 100;
}

static int below(uint64_t avail, uint64_t total, uint64_t pct)
{
	return total > 0 && avail < pct_of(total, pct);
}

static unsigned pct(uint64_t avail, uint64_t total)
{
	return total ? (unsigned)(avail * 100.0 / (double)total) : 100;
}

/* What the file system has free now, by our estimate since the statvfs. */
static uint64_t bavail_now(void)
{
	return S.bavail > S.stored_since ? S.bavail - S.stored_since : 0;
}

static uint64_t max_avail(void)
{
	uint64_t m = C.cfg->max_size;

	return m > stats.cache_bytes ? m - stats.cache_bytes : 0;
}

static void measure(void)
{
	struct statvfs v;

	if (statvfs(C.cfg->dir, &v) != 0) {
		if (!S.logged_statvfs++)
			log_error("cull: statvfs %s: %s: free space not watched", C.cfg->dir,
				  strerror(errno));
		return;
	}
	uint64_t fr = v.f_frsize ? v.f_frsize : v.f_bsize;
	S.btotal = (uint64_t)v.f_blocks * fr;
	S.bavail = (uint64_t)v.f_bavail * fr;
	S.ftotal = v.f_files;
	S.favail = v.f_favail;
	S.stored_since = 0;
	S.measured = 1;
}

/* What a run must still free: bytes of the file system (disk blocks),
 * valid bytes under max_size, and files (all 0: above brun/frun). */
struct deficit {
	uint64_t disk, valid, files;
};

static struct deficit deficit(void)
{
	const struct cache_config *cfg = C.cfg;
	struct deficit d = { 0, 0, 0 };

	if (S.measured) {
		uint64_t want = pct_of(S.btotal, cfg->brun), have = bavail_now();
		if (have < want)
			d.disk = want - have;
		want = pct_of(S.ftotal, cfg->frun);
		if (S.ftotal && S.favail < want)
			d.files = want - S.favail;
	}
	uint64_t ms = cfg->max_size;
	if (ms) {
		/* cache.bytes must come down to max_size less brun percent */
		uint64_t target = ms - pct_of(ms, cfg->brun);
		if (stats.cache_bytes > target)
			d.valid = stats.cache_bytes - target;
	}
	if (S.kick_left > d.disk)
		d.disk = S.kick_left;
	return d;
}

static int deficit_none(const struct deficit *d)
{
	return d->disk == 0 && d->valid == 0 && d->files == 0;
}

static void answer_waiters(void)
{
	struct cache_space sp;

	while (S.waiters) {
		struct cull_waiter *w = S.waiters;
		S.waiters = w->next;
		cache_space(&sp);
		sp.run_objects -= w->base_objects;   /* what was culled since it asked */
		sp.run_bytes -= w->base_bytes;
		w->done(w->arg, &sp);
		free(w);
	}
}

static void step_start(void);

static void run_end(void)
{
	log_debug("cull: run ended: %llu objects, %llu bytes culled; free blocks %u%%, files %u%%%s",
		 (unsigned long long)S.run_objects, (unsigned long long)S.run_bytes,
		 pct(bavail_now(), S.btotal), pct(S.favail, S.ftotal),
		 S.starved ? " (nothing more could be culled)" : "");
	S.culling = 0;
	S.kick_left = 0;
	answer_waiters();
}

static void run_start(const char *why)
{
	if (S.culling)
		return;
	S.culling = 1;
	S.run_objects = S.run_bytes = 0;
	log_debug("cull: run started: %s; free blocks %u%%, files %u%%, cache.bytes %llu", why,
		 pct(bavail_now(), S.btotal), pct(S.favail, S.ftotal),
		 (unsigned long long)stats.cache_bytes);
}

/* The thresholds against the last measurement: the state, runs started and ended. */
static void evaluate(void)
{
	const struct cache_config *cfg = C.cfg;
	uint64_t b = bavail_now(), m = max_avail(), ms = cfg->max_size;
	int stop = (S.measured && (below(b, S.btotal, cfg->bstop) ||
				   below(S.favail, S.ftotal, cfg->fstop))) ||
		   (ms && below(m, ms, cfg->bstop));
	int due = (S.measured && (below(b, S.btotal, cfg->bcull) ||
				  below(S.favail, S.ftotal, cfg->fcull))) ||
		  (ms && below(m, ms, cfg->bcull));

	if (stop != S.stopped)
		log_limited(LOG_LEVEL_INFO, "cull: %s: free blocks %u%%, files %u%%, cache.bytes %llu",
			 stop ? "no new data cached (below bstop/fstop)" : "caching again",
			 pct(b, S.btotal), pct(S.favail, S.ftotal),
			 (unsigned long long)stats.cache_bytes);
	S.stopped = stop;
	if (due)
		run_start("below bcull/fcull");
	struct deficit d = deficit();
	if (S.culling && deficit_none(&d) && !S.step)
		run_end();
	else if (S.culling)
		step_start();
}

/* ---- a culling step --------------------------------------------------- */

struct lru_job {
	struct index_cursor cur;
	int n;                                  /* entries, or -EIO */
	struct index_lru_entry e[CULL_STEP_MAX];
};

struct bury_job {
	size_t n;
	uint64_t *ids;
	int step;                               /* a culling step's (else reconciliation's) */
};

static struct bury_job *bury_job_new(size_t cap)
{
	struct bury_job *b = xcalloc(1, sizeof(*b));

	b->ids = xcalloc(cap, sizeof(*b->ids));
	return b;
}

static void bury_job_free(struct bury_job *b)
{
	free(b->ids);
	free(b);
}

static void release_index(void)
{
	C.commit_running = 0;
	if (C.commit_again) {
		C.commit_again = 0;
		commit_start();
	}
}

static void lru_work(void *arg)
{
	struct lru_job *j = arg;

	j->n = index_lru(C.index, C.volume, &j->cur, j->e, CULL_STEP_MAX);
}

static void bury_work(void *arg)
{
	struct bury_job *j = arg;

	/* renamed first: a crash leaves them in the graveyard, emptied at start */
	for (size_t i = 0; i < j->n; i++)
		if (backing_bury(j->ids[i]) != 0)
			j->ids[i] = 0;   /* no file */
	for (size_t i = 0; i < j->n; i++)
		if (j->ids[i])
			backing_unlink_buried(j->ids[i]);
}

static void step_next(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	measure();
	evaluate();
}

static void step_end(void)
{
	S.step = 0;
	if (S.closing)
		return;
	ev_timer_stop(C.loop, &S.next_step);
	ev_timer_set(&S.next_step, 0., 0.);
	ev_timer_start(C.loop, &S.next_step);   /* the next loop iteration */
}

static void bury_done(void *arg)
{
	struct bury_job *b = arg;
	int step = b->step;

	bury_job_free(b);
	if (step)
		step_end();
}

/* Nothing could be culled (or the index failed): the next try waits, longer
 * each time in a row, and the run ends (the timer starts another while
 * still below bcull/fcull). */
static void starve(void)
{
	S.starved = 1;
	S.starved_backoff = S.starved_backoff ? S.starved_backoff * 2 : CULL_STARVED_RETRY_S;
	if (S.starved_backoff > CULL_STARVED_RETRY_MAX_S)
		S.starved_backoff = CULL_STARVED_RETRY_MAX_S;
	S.starved_until = ev_now(C.loop) + S.starved_backoff;
	if (!S.starved_logged++) {
		if (C.count)
			log_warning("cull: nothing can be culled now: none of the %zu objects may go "
				    "(dirty, in use, or used since the index last recorded it)", C.count);
		else
			log_warning("cull: nothing to cull: the cache holds no object; the space "
				    "is used by other files");
	}
	S.step = 0;
	run_end();
}

static int sum_pages(uint64_t start, uint64_t end, void *ctx)
{
	*(uint64_t *)ctx += PAGE_ROUND(end - start);
	return 0;
}

static void lru_done(void *arg)
{
	struct lru_job *j = arg;
	struct bury_job *b = bury_job_new(CULL_STEP_MAX);
	struct deficit need;
	uint64_t freed_disk = 0, freed_valid = 0, freed_files = 0;
	int i;

	b->step = 1;
	if (j->n < 0) {
		release_index();
		free(j);
		bury_job_free(b);
		starve();
		return;
	}
	need = deficit();
	for (i = 0; i < j->n; i++) {
		const struct index_lru_entry *e = &j->e[i];
		if (freed_disk >= need.disk && freed_valid >= need.valid && freed_files >= need.files)
			break;
		S.cur = e->at;
		struct cache_object *o = cache_find(e->fh, e->fh_len);
		if (!o || o->id != e->id || !object_cullable(o))
			continue;   /* gone already, or in use: passed over this time */
		if (o->access_recorded_s != e->last_access_s)
			continue;   /* used since: its place in the order is on its way */
		uint64_t disk = 0;
		extent_set_foreach(&o->valid, sum_pages, &disk);
		freed_disk += disk;
		freed_valid += o->valid.bytes;
		freed_files += o->valid.count || o->fd >= 0 || o->checked;   /* it has a file */
		S.run_objects++;
		S.run_bytes += o->valid.bytes;
		stats.cache_culled_objects++;
		stats.cache_culled_bytes += o->valid.bytes;
		if (S.kick_left)
			S.kick_left = S.kick_left > disk ? S.kick_left - disk : 0;
		b->ids[b->n++] = o->id;
		commit_delete(o->id);
		object_remove(o);
	}
	/* objects are only removed while the index is ours: no batch holds them */
	release_index();
	S.pass_culled += b->n;
	int starved = 0;
	if (i == j->n && j->n < CULL_STEP_MAX) {
		/* the end of the order: the next step starts over */
		starved = S.pass_culled == 0 && (freed_disk < need.disk ||
						 freed_valid < need.valid || freed_files < need.files);
		S.cur = (struct index_cursor)INDEX_CURSOR_START;
		S.pass_culled = 0;
	}
	free(j);
	if (b->n) {
		S.starved = 0;
		S.starved_backoff = 0;
		S.starved_logged = 0;
		log_debug("cull: step: %zu objects", b->n);
		commit_start();   /* their rows go now */
		worker_submit(C.workers, bury_work, bury_done, b);
		return;
	}
	bury_job_free(b);
	if (starved)
		starve();
	else
		step_end();
}

/* ---- start-up reconciliation ----------------------------------------- */

struct row {
	uint64_t id;
	int ours;          /* this volume's */
	int has_ranges;
	int seen;          /* its backing file exists */
};

struct reconcile_job {
	struct row *rows;
	size_t n, cap;
	uint64_t max_id;
	size_t purged, orphan_files, other_files;
	uint64_t *orphan_rows;     /* ours, with ranges, without a file */
	size_t n_orphan_rows;
	uint64_t *late;            /* files of ids above max_id: new objects' or orphans */
	size_t n_late, cap_late;
	int rc;
};

static int scan_row(uint64_t id, const char *volume, int has_ranges, void *ctx)
{
	struct reconcile_job *j = ctx;

	if (j->n == j->cap) {
		j->cap = j->cap ? 2 * j->cap : 1024;
		j->rows = xreallocarray(j->rows, j->cap, sizeof(*j->rows));
	}
	j->rows[j->n++] = (struct row){ id, strcmp(volume, C.volume) == 0, has_ranges, 0 };
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
		if (j->n_late == j->cap_late) {
			j->cap_late = j->cap_late ? 2 * j->cap_late : 64;
			j->late = xreallocarray(j->late, j->cap_late, sizeof(*j->late));
		}
		j->late[j->n_late++] = id;
		return 0;
	}
	struct row *r = j->n ? bsearch(&key, j->rows, j->n, sizeof(*j->rows), row_cmp) : NULL;
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
	j->rc = index_scan(C.index, scan_row, j);
	if (j->rc != 0)
		return;
	if (j->n)
		qsort(j->rows, j->n, sizeof(*j->rows), row_cmp);
	backing_foreach(reconcile_file, j);
	for (size_t i = 0; i < j->n; i++) {
		struct row *r = &j->rows[i];
		if (r->ours && r->has_ranges && !r->seen && r->id <= j->max_id) {
			if (!j->orphan_rows) {
				j->orphan_rows = xcalloc(j->n, sizeof(*j->orphan_rows));
			}
			j->orphan_rows[j->n_orphan_rows++] = r->id;
		}
	}
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

struct orphan_ctx {
	const uint64_t *ids;
	size_t n;
	struct cache_object **found;
	size_t n_found;
};

struct live_ctx {
	uint64_t above;
	uint64_t *ids;
	size_t n, cap;
};

static void collect_live(struct cache_object *o, void *arg)
{
	struct live_ctx *lc = arg;

	if (o->id <= lc->above)
		return;
	if (lc->n == lc->cap) {
		lc->cap = lc->cap ? 2 * lc->cap : 64;
		lc->ids = xreallocarray(lc->ids, lc->cap, sizeof(*lc->ids));
	}
	lc->ids[lc->n++] = o->id;
}

/* Backing files of ids above the index's largest at start that no object
 * has: files written before a crash, whose rows never reached the index.
 * No object takes those ids afterwards; a worker deletes the files. */
static size_t bury_late(struct reconcile_job *j)
{
	struct live_ctx lc = { C.max_id_at_start, NULL, 0, 0 };
	struct bury_job *b;
	uint64_t top = 0;

	if (!j->n_late)
		return 0;
	cache_foreach(collect_live, &lc);
	if (lc.n)
		qsort(lc.ids, lc.n, sizeof(*lc.ids), u64_cmp);
	b = bury_job_new(j->n_late);
	for (size_t i = 0; i < j->n_late; i++) {
		uint64_t id = j->late[i];
		if (lc.n && bsearch(&id, lc.ids, lc.n, sizeof(*lc.ids), u64_cmp))
			continue;   /* an object's since the start */
		b->ids[b->n++] = id;
		if (id > top)
			top = id;
	}
	free(lc.ids);
	if (top >= C.next_id)
		C.next_id = top + 1;
	size_t n = b->n;
	if (n)
		worker_submit(C.workers, bury_work, bury_done, b);
	else
		bury_job_free(b);
	return n;
}

static void find_orphan(struct cache_object *o, void *arg)
{
	struct orphan_ctx *oc = arg;

	if (bsearch(&o->id, oc->ids, oc->n, sizeof(*oc->ids), u64_cmp))
		oc->found[oc->n_found++] = o;
}

static void reconcile_done(void *arg)
{
	struct reconcile_job *j = arg;
	size_t removed = 0;

	/* objects are only removed while the index is ours: no batch holds them */
	if (j->n_orphan_rows) {
		struct orphan_ctx oc = { j->orphan_rows, j->n_orphan_rows, NULL, 0 };
		oc.found = xcalloc(j->n_orphan_rows, sizeof(*oc.found));
		cache_foreach(find_orphan, &oc);
		for (size_t i = 0; i < oc.n_found; i++) {
			struct cache_object *o = oc.found[i];
			if (o->fd >= 0 || o->checked)
				continue;   /* opened since: its file exists now */
			if (cache_has_dirty(o) && !o->busy) {   /* a write-back pass pins it */
				uint64_t n = cache_dirty_drop(o, 0, UINT64_MAX);
				log_error("cache: object %llu: its backing file is missing: %llu dirty "
					  "bytes lost", (unsigned long long)o->id,
					  (unsigned long long)n);
			}
			if (!object_cullable(o))
				continue;
			commit_delete(o->id);
			object_remove(o);
			removed++;
		}
		free(oc.found);
	}
	release_index();
	commit_start();
	size_t late = bury_late(j);
	if (j->rc == 0)
		log_info("cache: reconciled with %s: %zu orphan backing files and %zu index rows "
			 "without a file removed, %zu graveyard entries deleted%s",
			 C.cfg->dir, j->orphan_files + late, removed, j->purged,
			 j->other_files ? " (files not named as objects left alone)" : "");
	free(j->late);
	free(j->rows);
	free(j->orphan_rows);
	free(j);
	S.step = 0;
	evaluate();
}

/* ---- the index, shared with the batches ------------------------------- */

static void step_start(void)
{
	if (S.step || !C.workers || S.closing)
		return;
	if (!S.reconcile && (!S.culling || (S.starved && ev_now(C.loop) < S.starved_until)))
		return;
	if (C.commit_running) {
		S.want_index = 1;   /* space_index_free() calls again */
		return;
	}
	S.want_index = 0;
	S.step = 1;
	C.commit_running = INDEX_HELD_CULL;
	if (S.reconcile) {
		struct reconcile_job *j = xcalloc(1, sizeof(*j));
		S.reconcile = 0;
		j->max_id = C.max_id_at_start;
		worker_submit(C.workers, reconcile_work, reconcile_done, j);
		return;
	}
	struct lru_job *j = xcalloc(1, sizeof(*j));
	j->cur = S.cur;
	worker_submit(C.workers, lru_work, lru_done, j);
}

void space_index_free(void)
{
	if (S.want_index)
		step_start();
}

/* ---- the interface ----------------------------------------------------- */

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	measure();
	evaluate();
}

void space_init(void)
{
	memset(&S, 0, sizeof(S));
	S.cur = (struct index_cursor)INDEX_CURSOR_START;
	ev_timer_init(&S.timer, timer_cb, SPACE_CHECK_S, SPACE_CHECK_S);
	ev_timer_start(C.loop, &S.timer);
	ev_unref(C.loop);   /* the timer alone does not keep the loop running */
	ev_timer_init(&S.next_step, step_next, 0., 0.);
	measure();
	evaluate();
}

void space_finalise(void)
{
	S.closing = 1;
	ev_ref(C.loop);
	ev_timer_stop(C.loop, &S.timer);
	ev_timer_stop(C.loop, &S.next_step);
	while (S.waiters) {
		struct cull_waiter *w = S.waiters;
		S.waiters = w->next;
		free(w);
	}
}

void space_reconcile(void)
{
	S.reconcile = 1;
	step_start();
}

int space_may_store(uint64_t len)
{
	if (!C.cfg)
		return 1;
	uint64_t ms = C.cfg->max_size;
	if (ms) {
		evaluate();   /* cache.bytes against max_size: no syscall */
		if (stats.cache_bytes + len > ms - pct_of(ms, C.cfg->bstop))
			return 0;
	}
	if (S.stopped)
		return 0;
	len = PAGE_ROUND(len);   /* what file systems allocate */
	if (S.measured && bavail_now() < pct_of(S.btotal, C.cfg->bstop) + len) {
		/* close to bstop: the estimate is not enough */
		measure();
		evaluate();
		if (S.stopped || bavail_now() < pct_of(S.btotal, C.cfg->bstop) + len)
			return 0;
	}
	S.stored_since += len;
	if (S.stored_since >= SPACE_CHECK_BYTES) {
		measure();
		evaluate();
	}
	return 1;
}

void space_stored(void)
{
	if (C.cfg && C.cfg->max_size)
		evaluate();   /* cache.bytes against max_size: no syscall */
}

int cache_storing(void)
{
	return !C.cfg || !S.stopped;
}

void space_nospace(void)
{
	measure();
	uint64_t kick = pct_of(S.btotal, 1);
	S.kick_left = kick > CULL_KICK_MIN ? kick : CULL_KICK_MIN;
	run_start("ENOSPC/EDQUOT from a backing write");
	evaluate();
}

void cache_space(struct cache_space *out)
{
	memset(out, 0, sizeof(*out));
	if (!C.cfg)
		return;
	out->state = S.stopped ? CACHE_STOPPED : S.culling ? CACHE_CULLING : CACHE_CACHING;
	out->blocks_total = S.btotal;
	out->blocks_avail = bavail_now();
	out->files_total = S.ftotal;
	out->files_avail = S.favail;
	out->run_objects = S.run_objects;
	out->run_bytes = S.run_bytes;
	out->starved = S.starved;
}

const char *cache_space_state_name(enum cache_space_state s)
{
	switch (s) {
	case CACHE_CULLING:
		return "culling";
	case CACHE_STOPPED:
		return "stopped";
	default:
		return "caching";
	}
}

void cache_space_check(void)
{
	if (!C.cfg)
		return;
	measure();
	evaluate();
}

int cache_cull_now(void (*done)(void *arg, const struct cache_space *space), void *arg)
{
	if (!C.cfg)
		return 0;
	measure();
	struct deficit d = deficit();
	if (!S.culling && deficit_none(&d))
		return 0;
	struct cull_waiter *w = xcalloc(1, sizeof(*w));
	w->done = done;
	w->arg = arg;
	if (S.culling) {
		w->base_objects = S.run_objects;
		w->base_bytes = S.run_bytes;
	}
	w->next = S.waiters;
	S.waiters = w;
	S.starved = 0;   /* asked for: try now */
	S.starved_backoff = 0;
	run_start("nfscachectl cull");
	evaluate();
	return 1;
}
