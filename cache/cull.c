/*
 * cull.c — space management (DESIGN.md "Space management"), after
 * cachefilesd(8): the cache file system's free blocks and files, and
 * cache.bytes under cache.max_size, against brun/bcull/bstop and
 * frun/fcull/fstop; culling of least-recently-used objects in bounded steps;
 * the scheduling of the start-up reconciliation (reconcile.c does it) in
 * the same slot: both hold the index lease while their worker job runs.
 *
 * A culling step is two worker jobs and two short loop callbacks: the index
 * gives up to CULL_STEP_MAX candidates in least-recently-used order (a
 * cursor walks the order, so objects that cannot go are passed over, not
 * asked for again in this run; every run starts at the head of the order,
 * where what was passed over before is the least recently used now).  The
 * order is the index's, and objects created or used since the last batch
 * are not in it or not in their place: a step starts that batch first when
 * objects wait for it (else a cache filled within a batch's second has
 * nothing to cull, the run starves, and what a reader reads meanwhile is
 * not kept).  On the loop each candidate still cullable is taken out
 * of the table at once (new calls for its file start a new object) and its
 * rows are queued for removal by the next batch; then a worker renames the
 * victims' backing files into the graveyard and unlinks them there.  After
 * each step the free space is measured again and the next step starts on
 * the next loop iteration while still below brun/frun.  Nothing here waits
 * on the disk on the loop thread but statvfs.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
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

/* The space state and the culling run: cull.c only. */
static struct cull_state {
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
	int want_index;                 /* a step waits for the index lease (a batch holds it) */
	int reconcile;                  /* the reconciliation is still to run */
	struct index_cursor cur;        /* the run's place in the order */
	uint64_t pass_culled;           /* culled since the cursor last started over */
	int index_fresh;                /* the step's batch ran: the index holds every
					 * object the step may cull in its place */
	int starved;
	ev_tstamp starved_until, starved_backoff;
	int starved_logged;
	uint64_t run_objects, run_bytes;
	struct cull_waiter *waiters;
	int logged_statvfs;
	int closing;                    /* space_finalise: jobs still draining start nothing */
} cull_state;

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
	uint64_t avail = cull_state.bavail, used = cull_state.stored_since;

	return avail > used ? avail - used : 0;
}

static uint64_t max_avail(void)
{
	uint64_t m = cache_state.cfg->max_size;

	return m > stats.cache_bytes ? m - stats.cache_bytes : 0;
}

static void measure(void)
{
	struct statvfs v;

	if (statvfs(cache_state.cfg->dir, &v) != 0) {
		if (!cull_state.logged_statvfs++)
			log_error("cull: statvfs %s: %s: free space not watched", cache_state.cfg->dir,
				  strerror(errno));
		return;
	}
	uint64_t fr = v.f_frsize ? v.f_frsize : v.f_bsize;
	cull_state.btotal = (uint64_t)v.f_blocks * fr;
	cull_state.bavail = (uint64_t)v.f_bavail * fr;
	cull_state.ftotal = v.f_files;
	cull_state.favail = v.f_favail;
	cull_state.stored_since = 0;
	cull_state.measured = 1;
}

/* What a run must still free: bytes of the file system (disk blocks),
 * valid bytes under max_size, and files (all 0: above brun/frun). */
struct deficit {
	uint64_t disk, valid, files;
};

static struct deficit deficit(void)
{
	const struct cache_config *cfg = cache_state.cfg;
	struct deficit d = { 0, 0, 0 };

	if (cull_state.measured) {
		uint64_t want = pct_of(cull_state.btotal, cfg->brun), have = bavail_now();
		if (have < want)
			d.disk = want - have;
		want = pct_of(cull_state.ftotal, cfg->frun);
		if (cull_state.ftotal && cull_state.favail < want)
			d.files = want - cull_state.favail;
	}
	uint64_t ms = cfg->max_size;
	if (ms) {
		/* cache.bytes must come down to max_size less brun percent */
		uint64_t target = ms - pct_of(ms, cfg->brun);
		if (stats.cache_bytes > target)
			d.valid = stats.cache_bytes - target;
	}
	if (cull_state.kick_left > d.disk)
		d.disk = cull_state.kick_left;
	return d;
}

static int deficit_none(const struct deficit *d)
{
	return d->disk == 0 && d->valid == 0 && d->files == 0;
}

static void answer_waiters(void)
{
	struct cache_space sp;

	while (cull_state.waiters) {
		struct cull_waiter *w = cull_state.waiters;
		cull_state.waiters = w->next;
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
		 (unsigned long long)cull_state.run_objects, (unsigned long long)cull_state.run_bytes,
		 pct(bavail_now(), cull_state.btotal), pct(cull_state.favail, cull_state.ftotal),
		 cull_state.starved ? " (nothing more could be culled)" : "");
	cull_state.culling = 0;
	cull_state.kick_left = 0;
	answer_waiters();
}

static void run_start(const char *why)
{
	if (cull_state.culling)
		return;
	cull_state.culling = 1;
	cull_state.run_objects = cull_state.run_bytes = 0;
	/* from the head of the order: objects an earlier run passed over (in
	 * use then) are older than those it stopped at */
	cull_state.cur = (struct index_cursor)INDEX_CURSOR_START;
	cull_state.pass_culled = 0;
	cull_state.index_fresh = 0;
	log_debug("cull: run started: %s; free blocks %u%%, files %u%%, cache.bytes %llu", why,
		 pct(bavail_now(), cull_state.btotal), pct(cull_state.favail, cull_state.ftotal),
		 (unsigned long long)stats.cache_bytes);
}

/* The thresholds against the last measurement: the state, runs started and ended. */
static void evaluate(void)
{
	const struct cache_config *cfg = cache_state.cfg;
	uint64_t b = bavail_now(), m = max_avail(), ms = cfg->max_size;
	int stop = (cull_state.measured && (below(b, cull_state.btotal, cfg->bstop) ||
				   below(cull_state.favail, cull_state.ftotal, cfg->fstop))) ||
		   (ms && below(m, ms, cfg->bstop));
	int due = (cull_state.measured && (below(b, cull_state.btotal, cfg->bcull) ||
				  below(cull_state.favail, cull_state.ftotal, cfg->fcull))) ||
		  (ms && below(m, ms, cfg->bcull));

	if (stop != cull_state.stopped)
		log_limited(LOG_LEVEL_INFO, "cull: %s: free blocks %u%%, files %u%%, cache.bytes %llu",
			 stop ? "no new data cached (below bstop/fstop)" : "caching again",
			 pct(b, cull_state.btotal), pct(cull_state.favail, cull_state.ftotal),
			 (unsigned long long)stats.cache_bytes);
	cull_state.stopped = stop;
	if (due)
		run_start("below bcull/fcull");
	struct deficit d = deficit();
	if (cull_state.culling && deficit_none(&d) && !cull_state.step)
		run_end();
	else if (cull_state.culling)
		step_start();
}

/* ---- a culling step --------------------------------------------------- */

struct lru_job {
	struct index_cursor cur;
	int n;                                  /* entries, or -EIO */
	struct index_lru_entry e[CULL_STEP_MAX];
};

struct bury_job {
	ARRAY(uint64_t) ids;                    /* objects whose backing files go */
	int step;                               /* a culling step's (else reconciliation's) */
};

static struct bury_job *bury_job_new(void)
{
	return xcalloc(1, sizeof(struct bury_job));
}

static void bury_job_free(struct bury_job *b)
{
	ARRAY_FREE(&b->ids);
	free(b);
}

static void lru_work(void *arg)
{
	struct lru_job *j = arg;

	j->n = index_lru(cache_state.index, cache_state.volume, &j->cur, j->e, CULL_STEP_MAX);
}

static void bury_work(void *arg)
{
	struct bury_job *j = arg;

	/* renamed first: a crash leaves them in the graveyard, emptied at start */
	for (size_t i = 0; i < j->ids.n; i++)
		if (backing_bury(j->ids.v[i]) != 0)
			j->ids.v[i] = 0;   /* no file */
	for (size_t i = 0; i < j->ids.n; i++)
		if (j->ids.v[i])
			backing_unlink_buried(j->ids.v[i]);
}

static void step_next(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	measure();
	evaluate();
}

/* measure() and evaluate() on the next loop iteration. */
static void evaluate_soon(void)
{
	if (cull_state.closing)
		return;
	ev_timer_stop(cache_state.loop, &cull_state.next_step);
	ev_timer_set(&cull_state.next_step, 0., 0.);
	ev_timer_start(cache_state.loop, &cull_state.next_step);
}

static void step_end(void)
{
	cull_state.step = 0;
	evaluate_soon();   /* the next step */
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
	cull_state.starved = 1;
	cull_state.starved_backoff = cull_state.starved_backoff ? cull_state.starved_backoff * 2 :
				     CULL_STARVED_RETRY_S;
	if (cull_state.starved_backoff > CULL_STARVED_RETRY_MAX_S)
		cull_state.starved_backoff = CULL_STARVED_RETRY_MAX_S;
	cull_state.starved_until = ev_now(cache_state.loop) + cull_state.starved_backoff;
	if (!cull_state.starved_logged++) {
		if (cache_state.count)
			log_warning("cull: nothing can be culled now: none of the %zu objects may go "
				    "(dirty, in use, or used since the index last recorded it)", cache_state.count);
		else
			log_warning("cull: nothing to cull: the cache holds no object; the space "
				    "is used by other files");
	}
	cull_state.step = 0;
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
	struct bury_job *b = bury_job_new();
	struct deficit need;
	uint64_t freed_disk = 0, freed_valid = 0, freed_files = 0;
	int i;

	b->step = 1;
	if (j->n < 0) {
		index_lease_release();
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
		cull_state.cur = e->at;
		if (resident_dead(e->id))
			continue;   /* culled already: its row goes with the next batch */
		struct cache_object *o = cache_find_resident(e->fh, e->fh_len);
		if (!o) {
			if (resident_lookup_pending(e->fh, e->fh_len))
				continue;   /* on its way into memory: in use */
			/* only in the index: as recorded there (ranges rounded
			 * to pages as closely as the count allows) */
			uint64_t disk = e->nranges ? PAGE_ROUND(e->bytes) +
						     (uint64_t)(e->nranges - 1) * 4096 : 0;
			freed_disk += disk;
			freed_valid += e->bytes;
			freed_files++;
			cull_state.run_objects++;
			cull_state.run_bytes += e->bytes;
			stats.cache_culled_objects++;
			stats.cache_culled_bytes += e->bytes;
			if (stats.cache_objects)
				stats.cache_objects--;
			stats.cache_bytes -= e->bytes < stats.cache_bytes ? e->bytes : stats.cache_bytes;
			if (cull_state.kick_left)
				cull_state.kick_left = cull_state.kick_left > disk ?
						       cull_state.kick_left - disk : 0;
			ARRAY_PUSH(&b->ids, e->id);
			batch_delete(e->id);
			continue;
		}
		if (o->id != e->id || !object_cullable(o))
			continue;   /* gone already, or in use: passed over this time */
		if (o->access_recorded_s != e->last_access_s)
			continue;   /* used since: its place in the order is on its way */
		uint64_t disk = 0;
		extent_set_foreach(&o->valid, sum_pages, &disk);
		freed_disk += disk;
		freed_valid += o->valid.bytes;
		freed_files += o->valid.count || o->fd >= 0 || o->checked;   /* it has a file */
		cull_state.run_objects++;
		cull_state.run_bytes += o->valid.bytes;
		stats.cache_culled_objects++;
		stats.cache_culled_bytes += o->valid.bytes;
		if (cull_state.kick_left)
			cull_state.kick_left = cull_state.kick_left > disk ? cull_state.kick_left - disk : 0;
		ARRAY_PUSH(&b->ids, o->id);
		batch_delete(o->id);
		object_remove(o);
	}
	/* objects are only removed while the index is ours: no batch holds them */
	index_lease_release();
	cull_state.pass_culled += b->ids.n;
	int starved = 0;
	if (i == j->n && j->n < CULL_STEP_MAX) {
		/* the end of the order: the next step starts over */
		starved = cull_state.pass_culled == 0 && (freed_disk < need.disk ||
						 freed_valid < need.valid || freed_files < need.files);
		cull_state.cur = (struct index_cursor)INDEX_CURSOR_START;
		cull_state.pass_culled = 0;
	}
	free(j);
	if (b->ids.n) {
		cull_state.starved = 0;
		cull_state.starved_backoff = 0;
		cull_state.starved_logged = 0;
		log_debug("cull: step: %zu objects", b->ids.n);
		batch_start();   /* their rows go now */
		worker_submit(cache_state.workers, bury_work, bury_done, b);
		return;
	}
	bury_job_free(b);
	if (starved)
		starve();
	else
		step_end();
}

/* ---- the index, shared with the batches ------------------------------- */

static void step_start(void)
{
	if (cull_state.step || !cache_state.workers || cull_state.closing)
		return;
	bool backing_off = cull_state.starved && ev_now(cache_state.loop) < cull_state.starved_until;
	if (!cull_state.reconcile && (!cull_state.culling || backing_off))
		return;
	if (!cull_state.reconcile && !cull_state.index_fresh &&
	    (!list_empty(&cache_state.persist_queue) ||
	     cache_state.inval_done != cache_state.inval_seq)) {
		/* objects the index has no row for yet (or an older access):
		 * their batch first, then the order (space_index_free() calls
		 * again when it releases the index) */
		if (index_lease_holder() == INDEX_FREE) {
			batch_start();
			cull_state.index_fresh = 1;
		}
		cull_state.want_index = 1;
		return;
	}
	if (!index_lease_take(INDEX_HELD_CULL)) {
		cull_state.want_index = 1;   /* space_index_free() calls again */
		return;
	}
	cull_state.want_index = 0;
	cull_state.step = 1;
	if (cull_state.reconcile) {
		cull_state.reconcile = 0;
		reconcile_submit();   /* space_reconcile_done() when it ends */
		return;
	}
	cull_state.index_fresh = 0;   /* the next step asks for the next batch */
	struct lru_job *j = xcalloc(1, sizeof(*j));
	j->cur = cull_state.cur;
	worker_submit(cache_state.workers, lru_work, lru_done, j);
}

void space_index_free(void)
{
	if (cull_state.want_index)
		step_start();
}

void space_reconcile_done(void)
{
	cull_state.step = 0;
	evaluate();
}

void space_bury(const uint64_t *ids, size_t n)
{
	if (n == 0)
		return;
	struct bury_job *b = bury_job_new();
	ARRAY_RESERVE(&b->ids, n);
	memcpy(b->ids.v, ids, n * sizeof(*ids));
	b->ids.n = n;
	worker_submit(cache_state.workers, bury_work, bury_done, b);
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
	memset(&cull_state, 0, sizeof(cull_state));
	cull_state.cur = (struct index_cursor)INDEX_CURSOR_START;
	ev_timer_init(&cull_state.timer, timer_cb, SPACE_CHECK_S, SPACE_CHECK_S);
	ev_timer_start(cache_state.loop, &cull_state.timer);
	ev_unref(cache_state.loop);   /* the timer alone does not keep the loop running */
	ev_timer_init(&cull_state.next_step, step_next, 0., 0.);
	measure();
	evaluate();
}

void space_finalise(void)
{
	cull_state.closing = 1;
	ev_ref(cache_state.loop);
	ev_timer_stop(cache_state.loop, &cull_state.timer);
	ev_timer_stop(cache_state.loop, &cull_state.next_step);
	while (cull_state.waiters) {
		struct cull_waiter *w = cull_state.waiters;
		cull_state.waiters = w->next;
		free(w);
	}
}

void space_reconcile(void)
{
	cull_state.reconcile = 1;
	step_start();
}

bool space_may_store(uint64_t len)
{
	if (!cache_state.cfg)
		return true;
	uint64_t ms = cache_state.cfg->max_size;
	if (ms) {
		evaluate();   /* cache.bytes against max_size: no syscall */
		if (stats.cache_bytes + len > ms - pct_of(ms, cache_state.cfg->bstop))
			return false;
	}
	if (cull_state.stopped)
		return false;
	len = PAGE_ROUND(len);   /* what file systems allocate */
	uint64_t bstop = pct_of(cull_state.btotal, cache_state.cfg->bstop);
	if (cull_state.measured && bavail_now() < bstop + len) {
		/* close to bstop: the estimate is not enough */
		measure();
		evaluate();
		bstop = pct_of(cull_state.btotal, cache_state.cfg->bstop);
		if (cull_state.stopped || bavail_now() < bstop + len)
			return false;
	}
	cull_state.stored_since += len;
	if (cull_state.stored_since >= SPACE_CHECK_BYTES) {
		measure();
		evaluate();
	}
	return true;
}

void space_stored(void)
{
	if (cache_state.cfg && cache_state.cfg->max_size)
		evaluate();   /* cache.bytes against max_size: no syscall */
}

bool cache_storing(void)
{
	return !cache_state.cfg || !cull_state.stopped;
}

void space_nospace(void)
{
	measure();
	uint64_t kick = pct_of(cull_state.btotal, 1);
	cull_state.kick_left = kick > CULL_KICK_MIN ? kick : CULL_KICK_MIN;
	run_start("ENOSPC/EDQUOT from a backing write");
	evaluate();
}

void cache_space(struct cache_space *out)
{
	memset(out, 0, sizeof(*out));
	if (!cache_state.cfg)
		return;
	out->state = cull_state.stopped ? CACHE_STOPPED :
		     cull_state.culling ? CACHE_CULLING : CACHE_CACHING;
	out->blocks_total = cull_state.btotal;
	out->blocks_avail = bavail_now();
	out->files_total = cull_state.ftotal;
	out->files_avail = cull_state.favail;
	out->run_objects = cull_state.run_objects;
	out->run_bytes = cull_state.run_bytes;
	out->starved = cull_state.starved;
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
	if (!cache_state.cfg)
		return;
	measure();
	evaluate();
}

int cache_cull_now(void (*done)(void *arg, const struct cache_space *space), void *arg)
{
	if (!cache_state.cfg)
		return -ENODEV;
	measure();
	struct deficit d = deficit();
	if (!cull_state.culling && deficit_none(&d))
		return -EALREADY;
	struct cull_waiter *w = xcalloc(1, sizeof(*w));
	w->done = done;
	w->arg = arg;
	if (cull_state.culling) {
		w->base_objects = cull_state.run_objects;
		w->base_bytes = cull_state.run_bytes;
	}
	w->next = cull_state.waiters;
	cull_state.waiters = w;
	cull_state.starved = 0;   /* asked for: try now */
	cull_state.starved_backoff = 0;
	run_start("nfscachectl cull");
	evaluate_soon();   /* a run that ends at once answers from the loop, not from here */
	return 0;
}
