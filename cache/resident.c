/*
 * resident.c — which objects are in memory (DESIGN.md "Cache objects"): the
 * index holds every object; memory holds the objects in use and a
 * least-recently-used list of others, at most cache.resident_max of them.
 * An object not in memory is found by a point lookup by (volume, file
 * handle) on a thread of its own, with a read-only connection to the index
 * (index_lookup), and made resident with its ranges (cache_resolve).
 * Handles the index was found not to hold are remembered (the "absent"
 * set), so that a call for a file not cached yet asks the index once: only
 * this daemon adds rows, so an answer "absent" stays true until it creates
 * the object itself.  Objects removed from memory whose rows a batch has not
 * deleted yet are "dead": a lookup that finds one answers absent.
 *
 * Eviction (between loop callbacks, never inside one: the daemon keeps an
 * unpinned pointer within a callback) takes least-recently-used objects that
 * may go: not pinned, nothing uncommitted, no waiter, and everything about
 * them already committed to the index by a batch (eviction writes nothing).
 * An object marked "written to" has the mark cleared by one more batch
 * first, as a clean stop would.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/index.h"
#include "cache/worker.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

#define ABSENT_MAX 16384          /* handles remembered as not in the index */
#define LOOKUP_JOB_MAX 64         /* lookups per worker job */
#define EVICT_SCAN_EXTRA 64       /* objects looked at beyond the excess, per pass */

/* A handle the index does not hold. */
struct absent {
	struct absent *hash_next;
	struct list_node fifo_link;   /* oldest first */
	uint32_t fh_len;
	uint8_t fh[];
};

/* A lookup of one handle, from cache_resolve() to its answer. */
struct lookup {
	struct lookup *hash_next;
	struct list_node link;        /* in the queue, then in a job */
	struct list_node waiters;     /* struct cache_waiter */
	uint64_t inval_seq;           /* cache_state.inval_seq when asked */
	int rc;                       /* worker: 1 found, 0 absent, -EIO */
	struct index_record rec;      /* worker: found (volume not kept) */
	uint64_t *ranges, *dirty;     /* worker: copies of rec's pairs (malloc'd) */
	uint32_t fh_len;
	uint8_t fh[NFS3_FHSIZE_MAX];
};

struct lookup_job {
	struct list_node lookups;
	size_t n;
	uint64_t batch_done_seq;      /* cache_state.batch_done_seq when submitted */
};

/* A dead id: removed from memory, its rows not deleted by a batch yet. */
struct dead {
	struct dead *next;
	uint64_t id;
	unsigned refs;                /* batch_delete()s of it not committed yet */
};

#define DEAD_BUCKETS 256
#define TABLE_BUCKETS 1024

static struct resident_state {
	struct cache_index_reader *reader;   /* used by the lookup thread only */
	struct worker_pool *pool;            /* one thread: the lookups */
	int job_running;
	struct list_node queue;              /* lookups not in a job yet */
	struct lookup *pending[TABLE_BUCKETS];
	size_t npending;
	struct absent *absent[ABSENT_MAX];   /* hash table, as many buckets as entries */
	struct list_node absent_fifo;
	size_t nabsent;
	struct dead *dead[DEAD_BUCKETS];
	ev_prepare evict_watcher;
	int open;
} rs;

static uint32_t fh_hash(const uint8_t *fh, uint32_t len)
{
	return hash_fnv1a32(HASH_FNV32_OFFSET, fh, len);
}

/* ---- the absent set --------------------------------------------------- */

static struct absent **absent_slot(const uint8_t *fh, uint32_t fh_len)
{
	struct absent **pp = &rs.absent[fh_hash(fh, fh_len) % ABSENT_MAX];

	while (*pp && !((*pp)->fh_len == fh_len && memcmp((*pp)->fh, fh, fh_len) == 0))
		pp = &(*pp)->hash_next;
	return pp;
}

static void absent_unlink(struct absent **pp)
{
	struct absent *a = *pp;

	*pp = a->hash_next;
	list_del(&a->fifo_link);
	rs.nabsent--;
	free(a);
}

bool resident_absent(const uint8_t *fh, uint32_t fh_len)
{
	/* every object in memory (a new or small cache): no need to ask */
	if (cache_state.all_resident)
		return true;
	return *absent_slot(fh, fh_len) != NULL;
}

void resident_absent_forget(const uint8_t *fh, uint32_t fh_len)
{
	struct absent **pp = absent_slot(fh, fh_len);

	if (*pp)
		absent_unlink(pp);
}

void resident_absent_add(const uint8_t *fh, uint32_t fh_len)
{
	struct absent **pp = absent_slot(fh, fh_len);

	if (*pp)
		return;
	if (rs.nabsent >= ABSENT_MAX) {
		struct absent *old = list_entry(rs.absent_fifo.next, struct absent, fifo_link);
		absent_unlink(absent_slot(old->fh, old->fh_len));
		pp = absent_slot(fh, fh_len);   /* the chain may have changed */
	}
	struct absent *a = xmalloc(sizeof(*a) + fh_len);
	a->hash_next = NULL;
	a->fh_len = fh_len;
	memcpy(a->fh, fh, fh_len);
	*pp = a;
	list_add_tail(&rs.absent_fifo, &a->fifo_link);
	rs.nabsent++;
}

/* ---- dead ids --------------------------------------------------------- */

void resident_dead_add(uint64_t id)
{
	struct dead **pp = &rs.dead[id % DEAD_BUCKETS];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			(*pp)->refs++;
			return;
		}
	struct dead *d = xcalloc(1, sizeof(*d));
	d->id = id;
	d->refs = 1;
	*pp = d;
}

void resident_dead_committed(uint64_t id)
{
	for (struct dead **pp = &rs.dead[id % DEAD_BUCKETS]; *pp; pp = &(*pp)->next)
		if ((*pp)->id == id) {
			struct dead *d = *pp;
			if (--d->refs == 0) {
				*pp = d->next;
				free(d);
			}
			return;
		}
}

bool resident_dead(uint64_t id)
{
	for (struct dead *d = rs.dead[id % DEAD_BUCKETS]; d; d = d->next)
		if (d->id == id)
			return true;
	return false;
}

/* ---- lookups ---------------------------------------------------------- */

static struct lookup **pending_slot(const uint8_t *fh, uint32_t fh_len)
{
	struct lookup **pp = &rs.pending[fh_hash(fh, fh_len) % TABLE_BUCKETS];

	while (*pp && !((*pp)->fh_len == fh_len && memcmp((*pp)->fh, fh, fh_len) == 0))
		pp = &(*pp)->hash_next;
	return pp;
}

bool resident_lookup_pending(const uint8_t *fh, uint32_t fh_len)
{
	return *pending_slot(fh, fh_len) != NULL;
}

static uint64_t *pairs_copy(const uint64_t *v, size_t n)
{
	if (!n)
		return NULL;
	uint64_t *c = xmalloc(n * 2 * sizeof(*c));
	memcpy(c, v, n * 2 * sizeof(*c));
	return c;
}

static void lookup_work(void *arg)
{
	struct lookup_job *j = arg;
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &j->lookups) {
		struct lookup *l = list_entry(pos, struct lookup, link);
		struct index_record rec;
		l->rc = index_lookup(rs.reader, cache_state.volume, l->fh, l->fh_len, &rec);
		if (l->rc != 1)
			continue;
		l->rec = rec;
		l->rec.volume = NULL;   /* the reader's memory: not kept */
		l->ranges = pairs_copy(rec.ranges, rec.nranges);
		l->dirty = pairs_copy(rec.dirty, rec.ndirty);
		l->rec.ranges = l->ranges;
		l->rec.dirty = l->dirty;
	}
}

static void lookup_job_start(void);
static void evict(void);

/* On the loop: the answer of one lookup. */
static void lookup_answer(struct lookup *l)
{
	struct lookup **pp = pending_slot(l->fh, l->fh_len);

	assert(*pp == l);
	*pp = l->hash_next;
	rs.npending--;
	if (l->rc == 1 && !resident_dead(l->rec.id) && !cache_find_resident(l->fh, l->fh_len)) {
		struct cache_object *o = object_from_record(&l->rec);
		stats.cache_index_lookups++;
		if (o && (l->inval_seq != cache_state.inval_seq ||
			  cache_state.inval_done != cache_state.inval_seq)) {
			/* not in memory at the invalidate --all: its bytes are out
			 * of cache.bytes already, and its ranges on their way out */
			stats.cache_bytes += o->valid.bytes;
			cache_invalidate(o, "nfscachectl invalidate --all");
		}
	} else if (l->rc == 0 || (l->rc == 1 && resident_dead(l->rec.id))) {
		resident_absent_add(l->fh, l->fh_len);
	} else if (l->rc < 0 && l->rc != -ECANCELED) {
		log_limited(LOG_LEVEL_ERROR, "cache: index lookup failed: the file is not cached "
			    "this time");
	}
	free(l->ranges);
	free(l->dirty);
	/* take the list first: a woken call may wait again */
	struct list_node woken;
	list_init(&woken);
	if (!list_empty(&l->waiters)) {
		woken.next = l->waiters.next;
		woken.prev = l->waiters.prev;
		woken.next->prev = &woken;
		woken.prev->next = &woken;
	}
	free(l);
	while (!list_empty(&woken)) {
		struct cache_waiter *w = list_entry(woken.next, struct cache_waiter, link);
		list_del(&w->link);
		w->wake(w);
	}
}

static void lookup_done(void *arg)
{
	struct lookup_job *j = arg;

	rs.job_running = 0;
	while (!list_empty(&j->lookups)) {
		struct lookup *l = list_entry(j->lookups.next, struct lookup, link);
		list_del(&l->link);
		if (l->rc == 1 && j->batch_done_seq != cache_state.batch_done_seq && rs.open) {
			/* a batch committed meanwhile may have deleted the row or
			 * dropped its ranges after the worker read them (its ids
			 * are no longer dead, the drop is done): asked again */
			free(l->ranges);
			free(l->dirty);
			l->ranges = l->dirty = NULL;
			l->rc = 0;
			list_add_tail(&rs.queue, &l->link);
			continue;
		}
		lookup_answer(l);
	}
	free(j);
	if (rs.open) {
		evict();   /* the woken calls returned: room for what came in */
		lookup_job_start();
	}
}

static void lookup_job_start(void)
{
	if (rs.job_running || list_empty(&rs.queue))
		return;
	struct lookup_job *j = xcalloc(1, sizeof(*j));
	list_init(&j->lookups);
	while (!list_empty(&rs.queue) && j->n < LOOKUP_JOB_MAX) {
		struct list_node *n = rs.queue.next;
		list_del(n);
		list_add_tail(&j->lookups, n);
		j->n++;
	}
	rs.job_running = 1;
	j->batch_done_seq = cache_state.batch_done_seq;
	worker_submit(rs.pool, lookup_work, lookup_done, j);
}

int cache_resolve(const uint8_t *fh, uint32_t fh_len, struct cache_waiter *w)
{
	if (!rs.open || fh_len < 1 || fh_len > NFS3_FHSIZE_MAX)
		return -EALREADY;
	if (cache_find_resident(fh, fh_len))
		return -EALREADY;
	if (resident_absent(fh, fh_len)) {
		/* remembered, for a cache_get() after objects left memory */
		resident_absent_add(fh, fh_len);
		return -EALREADY;
	}
	struct lookup **pp = pending_slot(fh, fh_len);
	if (!*pp) {
		struct lookup *l = xcalloc(1, sizeof(*l));
		list_init(&l->waiters);
		l->fh_len = fh_len;
		memcpy(l->fh, fh, fh_len);
		l->inval_seq = cache_state.inval_seq;
		*pp = l;
		rs.npending++;
		list_add_tail(&rs.queue, &l->link);
		lookup_job_start();
	}
	if (w)
		list_add_tail(&(*pp)->waiters, &w->link);
	return w ? 0 : -EALREADY;
}

/* ---- eviction --------------------------------------------------------- */

enum evict_verdict {
	EVICT_NOW,
	EVICT_SOON,          /* on its way to the index: left in its place */
	EVICT_IN_USE,        /* in use: to the tail, looked at again later */
};

/* May `o` leave memory now, without writing anything? */
static enum evict_verdict evictable(struct cache_object *o)
{
	if (!object_cullable(o) || o->getattr_busy)
		return EVICT_IN_USE;
	if (o->persist_queued == PERSIST_FULL || o->persist_seq > cache_state.batch_done_seq)
		return EVICT_SOON;
	/* a file of an id above the start's largest is told from a crash's
	 * orphan by the object holding it, until the reconciliation ran */
	if (!cache_state.reconciled && o->id > cache_state.max_id_at_start)
		return EVICT_SOON;
	if (o->wopen != CACHE_WOPEN_NONE) {
		/* every write is recorded (nothing uncommitted, not pinned): the
		 * mark goes with one more batch, then the object may go */
		o->wopen = CACHE_WOPEN_NONE;
		persist_mark(o);
		return EVICT_SOON;
	}
	return EVICT_NOW;
}

/* Evict down to cache.resident_max, as far as objects may go.  Only
 * between the daemon's callbacks: a loop callback may hold an object
 * unpinned until it returns. */
static void evict(void)
{
	uint64_t max = cache_state.cfg->resident_max;
	if (cache_state.count <= max)
		return;
	size_t excess = cache_state.count - max;
	size_t scan = excess * 2 + EVICT_SCAN_EXTRA;
	size_t evicted = 0;
	struct list_node *pos = cache_state.resident_lru.next, *next;
	for (; pos != &cache_state.resident_lru && evicted < excess && scan-- > 0; pos = next) {
		struct cache_object *o = list_entry(pos, struct cache_object, lru_link);
		next = pos->next;
		switch (evictable(o)) {
		case EVICT_NOW:
			cache_state.all_resident = false;   /* the index holds more now */
			if (o->persist_queued == PERSIST_ACCESS)
				persist_access_later(o);   /* the one thing left to record */
			object_evict(o);
			evicted++;
			break;
		case EVICT_IN_USE:
			list_del(&o->lru_link);
			list_add_tail(&cache_state.resident_lru, &o->lru_link);
			break;
		case EVICT_SOON:
			break;
		}
	}
	if (cache_state.count > max && !list_empty(&cache_state.persist_queue) &&
	    index_lease_holder() == INDEX_FREE)
		batch_start();   /* what waits for the index to leave memory: now, not
				  * at the next tick */
	if (cache_state.count > max && !cache_state.evict_logged) {
		cache_state.evict_logged = 1;
		log_debug("cache: %zu objects in memory, above cache.resident_max (%llu): the "
			 "others are in use, dirty or not recorded yet", cache_state.count,
			 (unsigned long long)max);
	} else if (cache_state.count <= max)
		cache_state.evict_logged = 0;
}

static void evict_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	evict();
}

/* ---- start and stop --------------------------------------------------- */

int resident_init(void)
{
	memset(&rs, 0, sizeof(rs));
	list_init(&rs.queue);
	list_init(&rs.absent_fifo);
	rs.reader = index_reader_open(cache_state.cfg->dir);
	if (!rs.reader)
		return -EIO;
	rs.pool = worker_pool_new(cache_state.loop, 1);
	if (!rs.pool) {
		index_reader_close(rs.reader);
		rs.reader = NULL;
		return -EAGAIN;
	}
	ev_prepare_init(&rs.evict_watcher, evict_cb);
	ev_prepare_start(cache_state.loop, &rs.evict_watcher);
	ev_unref(cache_state.loop);   /* eviction alone does not keep the loop running */
	rs.open = 1;
	return 0;
}

void cache_lookups_finish(void)
{
	if (!rs.pool)
		return;
	rs.open = 0;
	ev_ref(cache_state.loop);
	ev_prepare_stop(cache_state.loop, &rs.evict_watcher);
	/* lookups running end (their callers are woken); queued ones are
	 * answered as failed: their callers go on without the cache */
	worker_pool_free(rs.pool);
	rs.pool = NULL;
	while (!list_empty(&rs.queue)) {
		struct lookup *l = list_entry(rs.queue.next, struct lookup, link);
		list_del(&l->link);
		l->rc = -ECANCELED;
		lookup_answer(l);
	}
}

void resident_finalise(void)
{
	cache_lookups_finish();
	/* damage a lookup met keeps the index from being marked clean */
	if (rs.reader && index_reader_damaged(rs.reader) && cache_state.index)
		index_set_damaged(cache_state.index);
	index_reader_close(rs.reader);
	rs.reader = NULL;
	while (!list_empty(&rs.absent_fifo)) {
		struct absent *a = list_entry(rs.absent_fifo.next, struct absent, fifo_link);
		absent_unlink(absent_slot(a->fh, a->fh_len));
	}
	for (size_t i = 0; i < DEAD_BUCKETS; i++)
		while (rs.dead[i]) {
			struct dead *d = rs.dead[i];
			rs.dead[i] = d->next;
			free(d);
		}
}
