/*
 * writeback.c — passes that write an object's dirty bytes upstream.
 *
 * A pass takes every dirty range of one object (they move to its commit
 * set: bytes written again meanwhile are dirty anew and go with the next
 * pass), reads them from the backing file on a worker, sends them as
 * UNSTABLE WRITEs of up to the upstream's wtmax with the writer's
 * credential, several in flight, then one COMMIT.  Every WRITE and the
 * COMMIT must carry one upstream verifier; otherwise the upstream lost
 * uncommitted data (a reboot) and the pass starts over — the client never
 * hears of it.  An upstream that does not answer, or answers NFS3ERR_JUKEBOX,
 * ends the pass with the bytes dirty for a later one (counted in
 * cache.writeback.retries; a COMMIT waiting for them gets JUKEBOX); an
 * upstream that refuses them (NFS3ERR_NOSPC, STALE...) fails the pass: the
 * bytes are forgotten, the error is counted and reported by the next
 * COMMIT (never an OK with the verifier of the data lost).  With
 * cache.commit = local a COMMIT may already have been answered OK for
 * them: the refusal is logged and counted, and the bytes stay dirty (in
 * memory and in the index) and are tried again after a backoff that
 * doubles from WB_RETRY_MIN_S to WB_RETRY_MAX_S (`flush` tries at once).
 * So are bytes a COMMIT answered that way before a reload set
 * cache.commit = upstream (cache_unwritten_bytes()); the next COMMIT then
 * gets the error, and the write verifier stays (nothing was lost).
 *
 * One pass per object at a time.  WRITEs in flight, all passes together,
 * fill a window sized to keep the link busy: the bandwidth-delay product
 * of the measured round trip (upstream_srtt()) and an assumed link rate of
 * WB_LINK_BYTES_PER_S (10 Gbit/s: a far link faster than that is rare, and
 * a slower one only queues the window at the upstream).  The window holds
 * at least WB_MIN_WRITES WRITEs of wtmax (a round trip not measured yet,
 * loopback), at most cache.writeback_in_flight_max bytes and half of
 * cache.max_dirty (the buffers read from the backing files are held while
 * in flight), and at most WB_MAX_WRITES WRITEs: small scattered dirty
 * ranges cost a WRITE each, and a COMMIT of N of them costs about
 * N / WB_MAX_WRITES round trips.  One pass may take the whole window (the
 * first pass in the list goes first: a COMMIT waits for one file).
 *
 * Owns each object's write-back state (o->wb, struct writeback_state): the
 * pass running, the passes counted, the error the next COMMIT reports.  A
 * running pass pins its object (cache_pin) so that the cache keeps it.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cache/cache.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"
#include "daemon/nfs_common.h"
#include "daemon/nfsd.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"

#define WB_LINK_BYTES_PER_S (10e9 / 8)   /* assumed link rate: 10 Gbit/s */
#define WB_MIN_WRITES 4           /* WRITEs of wtmax the window holds at least */
#define WB_MAX_WRITES 256         /* WRITEs in flight at most, all passes */
#define WB_MAX_RESTARTS 10        /* verifier changes before a pass gives up for now */
#define WB_TICK_S 0.25            /* expiry and pressure checks */
#define WB_BEHIND_BYTES (4u << 20)   /* dirty bytes of a sequential writer's file
				      * that start its write-back (writeback_dirtied) */
#define WB_RETRY_MIN_S 1.0        /* first wait after a refusal (cache.commit = local) */
#define WB_RETRY_MAX_S 60.0       /* longest wait between tries of refused bytes */
#define WB_DEFAULT_WTMAX 65536    /* before the upstream told its wtmax */

struct wb_pass {
	struct list_node link;        /* in passes */
	struct cache_object *o;
	uint64_t *ranges;             /* n pairs (start, end) taken from the object */
	size_t n;
	size_t cur;                   /* range being sent */
	uint64_t pos;                 /* next byte of it to send */
	unsigned in_flight;           /* WRITEs */
	int have_verf;
	char verf[NFS3_WRITEVERFSIZE];  /* the upstream's, from the first WRITE */
	int verf_changed;
	uint32_t error;               /* nfsstat3: the upstream refused the data */
	int transient;                /* the upstream did not answer */
	int restarts;
	struct rpc_cred cred;         /* the writer's */
	COMMIT3args commit;
};

struct wb_chunk {
	struct wb_pass *p;
	uint64_t offset;
	uint32_t len;
	uint32_t sent;                /* bytes the upstream took so far */
	char *buf;
	WRITE3args args;
};

/* writeback.c's part of a cache object (o->wb), made by its first pass. */
struct writeback_state {
	struct wb_pass *pass;         /* the pass running, or NULL */
	uint64_t started, done;       /* passes started / finished */
	uint32_t error;               /* nfsstat3 of a failed write-back, reported by the
				       * next COMMIT; 0 = none */
	bool removed;                 /* the file's last link was removed through us */
	ev_tstamp retry_at;           /* cache.commit = local: loop time refused bytes are
				       * tried again (0: no wait) */
	double backoff_s;             /* the wait after the next refusal */
};

struct flush_all {
	unsigned pending;
	int status;
	void (*done)(void *arg, int status);
	void *arg;
};

static struct {
	struct ev_loop *loop;
	ev_timer tick;
	struct list_node passes;      /* struct wb_pass */
	struct list_node waiters;     /* struct writeback_waiter */
	struct list_node throttled;   /* struct cache_waiter: writes waiting for room */
	unsigned in_flight;           /* WRITEs, all passes */
	uint64_t bytes_in_flight;     /* their bytes */
	int stopping;                 /* no new WRITEs: the daemon stops */
} writeback;

static void pass_pump(struct wb_pass *p);
static void pass_start(struct cache_object *o);
static bool behind_writer(const struct cache_object *o);

static struct writeback_state *state_of(struct cache_object *o)
{
	if (!o->wb)
		o->wb = xcalloc(1, sizeof(*o->wb));
	return o->wb;
}

/* The pass running on `o`, or NULL. */
static struct wb_pass *pass_of(const struct cache_object *o)
{
	return o->wb ? o->wb->pass : NULL;
}

/* Passes of `o` finished so far. */
static uint64_t passes_done(const struct cache_object *o)
{
	return o->wb ? o->wb->done : 0;
}

void writeback_state_free(struct cache_object *o)
{
	free(o->wb);
	o->wb = NULL;
}

uint32_t writeback_error(const struct cache_object *o)
{
	return o->wb ? o->wb->error : 0;
}

/* An error not reported yet keeps `o` in memory (pinned) until a COMMIT
 * hears of it: an object leaving memory would take it along. */
static void error_set(struct cache_object *o, struct writeback_state *s, uint32_t status)
{
	if (!s->error && status)
		cache_pin(o);
	else if (s->error && !status)
		cache_unpin(o);
	s->error = status;
}

uint32_t writeback_take_error(struct cache_object *o)
{
	uint32_t err = writeback_error(o);

	if (o->wb)
		error_set(o, o->wb, 0);
	return err;
}

void writeback_removed(struct cache_object *o)
{
	struct writeback_state *s = state_of(o);

	s->removed = true;
	error_set(o, s, 0);
}

/*
 * Bytes acknowledged with the current verifier are lost: a new verifier
 * makes every client resend what it has not committed (knfsd resets its
 * verifier on a write-back error the same way).  The first COMMIT of the
 * file still gets the error itself.
 */
static void new_write_verifier(void)
{
	char v[sizeof(nfsd.write_verf)];

	if (getrandom(v, sizeof(v), 0) != (ssize_t)sizeof(v) ||
	    memcmp(v, nfsd.write_verf, sizeof(v)) == 0) {
		memcpy(v, nfsd.write_verf, sizeof(v));
		v[0]++;   /* different all the same */
	}
	memcpy(nfsd.write_verf, v, sizeof(v));
}

static const struct nfsd_conf *cfg(void)
{
	return &nfsd.cfg;
}

static uint32_t chunk_max(void)
{
	uint32_t m = upstream_wtmax(nfsd.upstream);

	if (m == 0)
		m = WB_DEFAULT_WTMAX;
	return m;
}

/*
 * The bytes of WRITEs in flight at most (see the header): srtt times the
 * assumed link rate, within [WB_MIN_WRITES * wtmax, min(cache.
 * writeback_in_flight_max, cache.max_dirty / 2)], never less than one WRITE.
 */
static uint64_t window_bytes(void)
{
	uint64_t floor_bytes = (uint64_t)WB_MIN_WRITES * chunk_max();
	uint64_t ceiling = cfg()->cache.writeback_in_flight_max;
	uint64_t bytes = (uint64_t)(upstream_srtt(nfsd.upstream) * WB_LINK_BYTES_PER_S);

	if (ceiling > cfg()->cache.max_dirty / 2)
		ceiling = cfg()->cache.max_dirty / 2;
	if (bytes < floor_bytes)
		bytes = floor_bytes;
	if (bytes > ceiling)
		bytes = ceiling;
	return bytes > chunk_max() ? bytes : chunk_max();
}

/* May one more WRITE of `len` bytes go now?  The first always may. */
static bool window_has_room(uint64_t len)
{
	if (writeback.in_flight == 0)
		return true;
	return writeback.in_flight < WB_MAX_WRITES &&
	       writeback.bytes_in_flight + len <= window_bytes();
}

/* ---- waiters ---------------------------------------------------------- */

/* Answer the waiters of `o` that its passes have served. */
static void waiters_check(struct cache_object *o, int status)
{
	struct list_node *pos, *tmp, ready;

	list_init(&ready);
	list_for_each_safe(pos, tmp, &writeback.waiters) {
		struct writeback_waiter *w = list_entry(pos, struct writeback_waiter, link);
		if (w->o != o)
			continue;
		if (w->need <= passes_done(o) || (!pass_of(o) && !cache_has_uncommitted(o))) {
			list_del(&w->link);
			list_add_tail(&ready, &w->link);
		}
	}
	while (!list_empty(&ready)) {
		struct writeback_waiter *w = list_entry(ready.next, struct writeback_waiter, link);
		list_del(&w->link);
		w->done(w, w->need <= passes_done(o) ? status : 0);
	}
}

static bool waited_for(const struct cache_object *o)
{
	struct list_node *pos;

	for (pos = writeback.waiters.next; pos != &writeback.waiters; pos = pos->next)
		if (list_entry(pos, struct writeback_waiter, link)->o == o)
			return true;
	return false;
}

static void throttled_wake(void)
{
	static bool waking;  /* a woken write calls writeback_throttle(), which calls us */
	struct list_node *pos, *tmp;
	size_t n = 0;

	if (waking)
		return;
	waking = true;
	/* each waiter once: one that finds no room for its bytes waits again */
	list_for_each_safe(pos, tmp, &writeback.throttled)
		n++;
	while (n-- > 0 && !list_empty(&writeback.throttled) &&
	       stats.cache_dirty_bytes < cfg()->cache.max_dirty) {
		struct cache_waiter *w = list_entry(writeback.throttled.next, struct cache_waiter, link);
		list_del(&w->link);
		w->wake(w);
	}
	/* no room for upstream.timeout_ms: answered like an unanswered call */
	list_for_each_safe(pos, tmp, &writeback.throttled) {
		struct cache_waiter *w = list_entry(pos, struct cache_waiter, link);
		if (ev_now(writeback.loop) >= w->deadline) {
			list_del(&w->link);
			w->timed_out = 1;
			w->wake(w);
		}
	}
	waking = false;
}

/* ---- a pass ----------------------------------------------------------- */

/* Pump every pass.  A pass that ends calls pump_all() again (from
 * pass_finish()), which could end and free the pass this walk goes to
 * next: a call made during the walk only asks for one more walk. */
static void pump_all(void)
{
	static bool pumping, again;
	struct list_node *pos, *tmp;

	if (pumping) {
		again = true;
		return;
	}
	pumping = true;
	do {
		again = false;
		list_for_each_safe(pos, tmp, &writeback.passes)
			pass_pump(list_entry(pos, struct wb_pass, link));
	} while (again);
	pumping = false;
}

/*
 * A WRITE or COMMIT got no answer within upstream.timeout_ms: every pass
 * stops sending (what it sent still completes), so that passes waiting for
 * room in the window end now, their bytes dirty for a later pass, instead
 * of each waiting out a timeout of its own in turn: a flush or a stop with
 * the upstream down answers within about one upstream.timeout_ms.
 */
static void upstream_silent(void)
{
	struct list_node *pos;

	for (pos = writeback.passes.next; pos != &writeback.passes; pos = pos->next)
		list_entry(pos, struct wb_pass, link)->transient = 1;
	pump_all();
}

static void pass_finish(struct wb_pass *p, int status)
{
	struct cache_object *o = p->o;
	struct writeback_state *s = o->wb;

	if (status == 0) {
		cache_commit_settle(o, CACHE_COMMITTED);
		s->retry_at = 0;
		s->backoff_s = 0;
	} else if (status < 0) {
		cache_commit_settle(o, CACHE_RESEND);
		stats.cache_writeback_retries++;
	} else if ((cfg()->cache.commit == COMMIT_LOCAL || cache_unwritten_bytes(o) != 0) &&
		   !s->removed) {
		/* a COMMIT may have been answered for them (in this mode, or in
		 * it before a reload): kept, tried again later */
		cache_commit_settle(o, CACHE_RESEND);
		stats.cache_writeback_errors++;
		if (cfg()->cache.commit != COMMIT_LOCAL)
			error_set(o, s, (uint32_t)status);   /* a COMMIT waiting for them hears of it */
		if (status == NFS3ERR_ACCES || status == NFS3ERR_PERM)
			cache_access_forget(o);   /* asked again before a write is taken */
		s->backoff_s = s->backoff_s == 0 ? WB_RETRY_MIN_S : s->backoff_s * 2;
		if (s->backoff_s > WB_RETRY_MAX_S)
			s->backoff_s = WB_RETRY_MAX_S;
		s->retry_at = ev_now(writeback.loop) + s->backoff_s;
		log_warning("writeback: object %llu: the upstream refused the data (NFS status %d): "
			    "%llu bytes committed locally kept, tried again in %.0f s",
			    (unsigned long long)o->id, status,
			    (unsigned long long)cache_unwritten_bytes(o), s->backoff_s);
	} else {
		cache_commit_settle(o, CACHE_FAILED);
		if (!s->removed) {
			stats.cache_writeback_errors++;
			error_set(o, s, (uint32_t)status);
			if (status == NFS3ERR_ACCES || status == NFS3ERR_PERM)
				cache_access_forget(o);   /* asked again before a write is taken */
			new_write_verifier();
			log_warning("writeback: object %llu: the upstream refused the data (NFS status "
				    "%d): reported to the next COMMIT; new write verifier",
				    (unsigned long long)o->id, status);
		}
	}
	s->pass = NULL;
	s->done++;
	cache_unpin(o);   /* pass_start() pinned it */
	list_del(&p->link);
	free(p->ranges);
	free(p);
	waiters_check(o, status);
	if ((waited_for(o) || behind_writer(o)) && cache_has_uncommitted(o) && !pass_of(o) &&
	    !o->wb_recover && status >= 0)
		pass_start(o);   /* bytes written since this pass began are waited for, or
				  * the writer goes on */
	throttled_wake();
	pump_all();
}

/* The upstream lost what it had not committed (its verifier changed): the
 * pass sends everything again, the bytes dirtied since included. */
static void pass_restart(struct wb_pass *p)
{
	struct cache_object *o = p->o;
	size_t n;

	log_info("writeback: object %llu: the upstream's verifier changed: writing again",
		 (unsigned long long)o->id);
	if (++p->restarts > WB_MAX_RESTARTS) {
		pass_finish(p, -ETIMEDOUT);
		return;
	}
	cache_commit_settle(o, CACHE_RESEND);
	free(p->ranges);
	p->ranges = cache_dirty_take(o, &n);
	p->n = n;
	p->cur = 0;
	p->pos = n ? p->ranges[0] : 0;
	p->have_verf = p->verf_changed = 0;
	if (cache_wb_cred(o))
		p->cred = *cache_wb_cred(o);
	memset(&p->commit, 0, sizeof(p->commit));
	pass_pump(p);
}

static void commit_done(void *priv, enum upstream_status st, void *res)
{
	struct wb_pass *p = priv;
	COMMIT3res *r = res;

	if (st == UPSTREAM_TIMEOUT || (st == UPSTREAM_OK && r->status == NFS3ERR_JUKEBOX)) {
		if (st == UPSTREAM_TIMEOUT)
			upstream_silent();
		pass_finish(p, -ETIMEDOUT);
	} else if (st != UPSTREAM_OK) {
		pass_finish(p, st == UPSTREAM_DENIED ? NFS3ERR_ACCES : NFS3ERR_IO);
	} else if (r->status != NFS3_OK) {
		pass_finish(p, r->status);
	} else if (memcmp(r->COMMIT3res_u.resok.verf, p->verf, NFS3_WRITEVERFSIZE) != 0) {
		pass_restart(p);
	} else {
		pass_finish(p, 0);
	}
}

/* Every WRITE answered: COMMIT, or end the pass. */
static void pass_writes_done(struct wb_pass *p)
{
	if (p->error) {
		pass_finish(p, (int)p->error);
		return;
	}
	if (p->transient) {
		/* resent by a later pass */
		pass_finish(p, -ETIMEDOUT);
		return;
	}
	if (p->verf_changed) {
		pass_restart(p);
		return;
	}
	if (!p->have_verf) {
		pass_finish(p, 0);   /* nothing was left to send (a file removed meanwhile) */
		return;
	}
	memset(&p->commit, 0, sizeof(p->commit));
	p->commit.file.data.data_len = p->o->fh_len;
	p->commit.file.data.data_val = (char *)p->o->fh;
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_COMMIT), &p->commit, &p->cred, commit_done, p);
}

static void chunk_end(struct wb_chunk *c)
{
	struct wb_pass *p = c->p;

	p->in_flight--;
	writeback.in_flight--;
	writeback.bytes_in_flight -= c->len;
	free(c->buf);
	free(c);
	pass_pump(p);
	pump_all();
}

static void chunk_send(struct wb_chunk *c);

static void chunk_write_done(void *priv, enum upstream_status st, void *res)
{
	struct wb_chunk *c = priv;
	struct wb_pass *p = c->p;
	struct cache_object *o = p->o;
	WRITE3res *r = res;

	/* the change ends after its wcc data is taken: cache_change_done()
	 * counts it among the changes in flight */
	if (st == UPSTREAM_TIMEOUT || (st == UPSTREAM_OK && r->status == NFS3ERR_JUKEBOX)) {
		p->transient = 1;
		if (st == UPSTREAM_TIMEOUT)
			upstream_silent();
	} else if (st != UPSTREAM_OK) {
		p->error = st == UPSTREAM_DENIED ? NFS3ERR_ACCES : NFS3ERR_IO;
	} else if (r->status != NFS3_OK) {
		p->error = r->status;
	} else {
		WRITE3resok *ok = &r->WRITE3res_u.resok;
		uint32_t n = ok->count < c->len - c->sent ? ok->count : c->len - c->sent;
		if (!p->have_verf) {
			memcpy(p->verf, ok->verf, NFS3_WRITEVERFSIZE);
			p->have_verf = 1;
		} else if (memcmp(p->verf, ok->verf, NFS3_WRITEVERFSIZE) != 0) {
			p->verf_changed = 1;
		}
		nfsd_meta_object_changed(o, &ok->file_wcc, cache_change_done(o, &ok->file_wcc));
		stats.cache_writeback_bytes += n;
		c->sent += n;
		if (n == 0) {
			p->error = NFS3ERR_IO;   /* the upstream takes nothing: no progress */
		} else if (c->sent < c->len) {
			cache_change_end(o);
			chunk_send(c);           /* a short write: the rest */
			return;
		}
	}
	cache_change_end(o);
	chunk_end(c);
}

static void chunk_send(struct wb_chunk *c)
{
	struct wb_pass *p = c->p;
	struct cache_object *o = p->o;

	memset(&c->args, 0, sizeof(c->args));
	c->args.file.data.data_len = o->fh_len;
	c->args.file.data.data_val = (char *)o->fh;
	c->args.offset = c->offset + c->sent;
	c->args.count = c->len - c->sent;
	c->args.stable = UNSTABLE;
	c->args.data.data_len = c->len - c->sent;
	c->args.data.data_val = c->buf + c->sent;
	cache_change_begin(o);
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_WRITE), &c->args, &p->cred, chunk_write_done, c);
}

static void chunk_read_done(void *arg, int rc)
{
	struct wb_chunk *c = arg;

	if (writeback.stopping) {
		c->p->transient = 1;
		chunk_end(c);
		return;
	}
	if (rc != 0) {
		log_limited(LOG_LEVEL_ERROR, "writeback: object %llu: backing file lost dirty data",
			    (unsigned long long)c->p->o->id);
		c->p->error = NFS3ERR_IO;
		chunk_end(c);
		return;
	}
	chunk_send(c);
}

static void pass_pump(struct wb_pass *p)
{
	if (writeback.stopping)
		p->transient = 1;   /* the bytes stay dirty, recorded for the next start */
	while (p->cur < p->n && !p->error && !p->transient) {
		uint64_t end = p->ranges[2 * p->cur + 1];
		uint64_t len = end - p->pos;
		if (len > chunk_max())
			len = chunk_max();
		if (!window_has_room(len))
			break;
		struct wb_chunk *c = xcalloc(1, sizeof(*c));
		c->p = p;
		c->offset = p->pos;
		c->len = (uint32_t)len;
		c->buf = xmalloc(c->len);
		p->pos += len;
		if (p->pos == end && ++p->cur < p->n)
			p->pos = p->ranges[2 * p->cur];
		p->in_flight++;
		writeback.in_flight++;
		writeback.bytes_in_flight += c->len;
		if (cache_read_backing_async(p->o, c->offset, c->buf, c->len, chunk_read_done,
					     c) != 0) {
			p->transient = 1;   /* the cache is closing: the bytes stay dirty */
			p->in_flight--;
			writeback.in_flight--;
			writeback.bytes_in_flight -= c->len;
			free(c->buf);
			free(c);
		}
	}
	if ((p->cur == p->n || p->error || p->transient) && p->in_flight == 0 && !p->commit.file.data.data_len)
		pass_writes_done(p);
}

static void pass_start(struct cache_object *o)
{
	struct wb_pass *p = xcalloc(1, sizeof(*p));
	size_t n;

	p->o = o;
	if (cache_wb_cred(o))
		p->cred = *cache_wb_cred(o);
	p->ranges = cache_dirty_take(o, &n);
	p->n = n;
	p->pos = n ? p->ranges[0] : 0;
	struct writeback_state *s = state_of(o);
	s->pass = p;
	s->started++;
	cache_pin(o);   /* kept by the cache until pass_finish() */
	list_add_tail(&writeback.passes, &p->link);
	pass_pump(p);
}

/* Is `o` written sequentially with enough dirty bytes to be written back
 * behind its writer? */
static bool behind_writer(const struct cache_object *o)
{
	const struct extent_set *dirty = cache_dirty_set(o);

	return dirty->bytes >= WB_BEHIND_BYTES && dirty->bytes / dirty->count >= chunk_max();
}

void writeback_dirtied(struct cache_object *o)
{
	if (!pass_of(o) && !o->wb_recover && !writeback.stopping && behind_writer(o) &&
	    !(o->wb && o->wb->retry_at > ev_now(writeback.loop)))
		pass_start(o);
}

/* ---- recovery of dirty ranges from the index --------------------------- */

/* The attributes (gone to the cache: cache.c keeps the recovered ranges
 * when they show the file unchanged) or the error that tells the file is
 * gone upstream. */
static void recover_done(struct nfsd_getattr *g, enum upstream_status st, const GETATTR3res *r)
{
	struct cache_object *o = g->o;

	if (st == UPSTREAM_OK && r->status != NFS3_OK && r->status != NFS3ERR_JUKEBOX &&
	    o->wb_recover) {
		o->wb_recover = CACHE_RECOVER_NONE;
		log_warning("writeback: object %llu: gone upstream (NFS status %d): "
			    "%llu dirty bytes from before the restart discarded",
			    (unsigned long long)o->id, r->status,
			    (unsigned long long)cache_dirty_drop(o, 0, UINT64_MAX));
	}
	if (o->wb_recover == CACHE_RECOVER_GETATTR)
		o->wb_recover = CACHE_RECOVER_PENDING;   /* no answer: asked again on a later tick */
	free(g);
	waiters_check(o, 0);
	if (!o->wb_recover && cache_has_uncommitted(o) && !pass_of(o))
		pass_start(o);
}

static void recover_start(struct cache_object *o)
{
	o->wb_recover = CACHE_RECOVER_GETATTR;
	nfsd_getattr_send(xcalloc(1, sizeof(struct nfsd_getattr)), o, cache_wb_cred(o), recover_done);
}

/* ---- scheduling ------------------------------------------------------- */

static void tick_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct list_node *head = cache_uncommitted_list(), *pos, *tmp;
	ev_tstamp now = ev_now(loop);
	double expire_s = (double)cfg()->cache.dirty_expire_ms / 1000.0;
	int pressure = stats.cache_dirty_bytes >= cfg()->cache.max_dirty / 2;

	(void)t;
	(void)revents;
	list_for_each_safe(pos, tmp, head) {
		struct cache_object *o = cache_uncommitted_object(pos);
		if (o->wb_recover == CACHE_RECOVER_PENDING && nfsd.upstream)
			recover_start(o);
		if (pass_of(o) || o->wb_recover || cache_dirty_set(o)->count == 0)
			continue;
		if (o->wb && now < o->wb->retry_at && !waited_for(o))
			continue;   /* refused lately: tried again after its backoff */
		if (pressure || now - cache_dirty_since(o) >= expire_s || waited_for(o))
			pass_start(o);
	}
	throttled_wake();
	cache_unwritten_refresh();
}

bool writeback_throttle(uint32_t len, struct cache_waiter *w)
{
	if (stats.cache_dirty_bytes + len >= cfg()->cache.max_dirty / 2)
		tick_cb(writeback.loop, &writeback.tick, 0);   /* write-back starts early */
	if (stats.cache_dirty_bytes == 0 || stats.cache_dirty_bytes + len <= cfg()->cache.max_dirty)
		return false;
	w->timed_out = 0;
	if (w->deadline == 0)   /* woken without room: its first deadline holds */
		w->deadline = ev_now(writeback.loop) + (double)cfg()->upstream_timeout_ms / 1000.0;
	list_add_tail(&writeback.throttled, &w->link);
	return true;
}

int writeback_flush(struct cache_object *o, struct writeback_waiter *w)
{
	struct wb_pass *running = pass_of(o);

	if (!cache_has_uncommitted(o) && !running)
		return -EALREADY;
	w->o = o;
	/* a running pass does not hold the bytes dirtied since it started */
	w->need = (o->wb ? o->wb->started : 0) + (running == NULL || cache_dirty_set(o)->count != 0);
	list_add_tail(&writeback.waiters, &w->link);
	if (!running && !o->wb_recover && cache_dirty_set(o)->count)
		pass_start(o);
	else if (!running && !o->wb_recover)
		ev_feed_event(writeback.loop, &writeback.tick, EV_TIMER);   /* answered from the loop */
	return 0;
}

struct flush_one {
	struct writeback_waiter w;
	struct flush_all *fa;
};

static void flush_all_end(struct flush_all *fa)
{
	if (--fa->pending == 0) {
		fa->done(fa->arg, fa->status);
		free(fa);
	}
}

static void flush_all_one(struct writeback_waiter *w, int status)
{
	struct flush_one *one = container_of(w, struct flush_one, w);
	struct flush_all *fa = one->fa;

	if (status == 0 && writeback_error(w->o))
		status = (int)writeback_error(w->o);
	if (status != 0 && fa->status == 0)
		fa->status = status;
	free(one);
	flush_all_end(fa);
}

int writeback_flush_all(void (*done)(void *arg, int status), void *arg)
{
	struct list_node *head = cache_uncommitted_list(), *pos, *tmp;
	struct flush_all *fa = xcalloc(1, sizeof(*fa));
	fa->done = done;
	fa->arg = arg;
	fa->pending = 1;   /* held until every object is asked */
	list_for_each_safe(pos, tmp, head) {
		struct cache_object *o = cache_uncommitted_object(pos);
		struct flush_one *one = xcalloc(1, sizeof(*one));
		one->w.done = flush_all_one;
		one->fa = fa;
		fa->pending++;
		if (writeback_flush(o, &one->w) != 0) {
			fa->pending--;   /* nothing to write back: never answers */
			free(one);
		}
	}
	if (fa->pending == 1) {
		free(fa);
		return -EALREADY;
	}
	/* answered from the loop, never from here */
	fa->pending--;
	return 0;
}

int writeback_init(struct ev_loop *loop)
{
	memset(&writeback, 0, sizeof(writeback));
	writeback.loop = loop;
	list_init(&writeback.passes);
	list_init(&writeback.waiters);
	list_init(&writeback.throttled);
	ev_timer_init(&writeback.tick, tick_cb, WB_TICK_S, WB_TICK_S);
	ev_timer_start(loop, &writeback.tick);
	ev_unref(loop);   /* the timer alone does not keep the loop running */
	return 0;
}

void writeback_finalise(void)
{
	if (!writeback.loop)
		return;
	ev_ref(writeback.loop);
	ev_timer_stop(writeback.loop, &writeback.tick);
	writeback.stopping = 1;
}
