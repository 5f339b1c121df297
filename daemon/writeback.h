/*
 * writeback.h — dirty data of cache objects written upstream (DESIGN.md
 * "Write-back"): coalesced UNSTABLE WRITEs of up to the upstream's wtmax,
 * a window of them in flight sized from the measured round trip, then one
 * COMMIT; a changed upstream verifier sends the bytes again.  With
 * cache.commit = local a refusal keeps the bytes dirty (tried again after
 * a backoff) instead of reporting it to the next COMMIT.  A pass starts after cache.dirty_expire_ms, under pressure
 * (half of cache.max_dirty dirty), when a caller waits for an object to be
 * clean (COMMIT, SETATTR, a WRITE that must go through), and on `flush`.
 * Dirty ranges recovered from the index are checked first (cache.c).
 *
 * Each object's write-back state (its pass, the passes counted, the error
 * its next COMMIT reports) hangs off o->wb, made and released here only.
 * Async contract (STYLE.md): a function taking a callback returns 0 when
 * it fires exactly once, later, -errno when it never will; a predicate
 * that may make its caller wait returns true when the caller waits.
 */
#ifndef NFSCACHED_WRITEBACK_H
#define NFSCACHED_WRITEBACK_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"
#include "common/list.h"

/* A caller waiting for an object's dirty data to be committed upstream. */
struct writeback_waiter {
	struct list_node link;
	struct cache_object *o;
	uint64_t need;        /* done once this many of o's passes finished */
	/* status: 0 committed (or nothing left to write: see writeback_error()
	 * for a failure reported earlier), an nfsstat3 > 0 when the write-back failed
	 * for good (with cache.commit = local the bytes stay dirty), -ETIMEDOUT when the upstream did not answer (the bytes stay
	 * dirty; the caller answers NFS3ERR_JUKEBOX) */
	void (*done)(struct writeback_waiter *w, int status);
};

/* Start the expiry and pressure timer.  0 or -errno. */
int writeback_init(struct ev_loop *loop);

/* Stop the timer; passes still running are abandoned (their bytes stay
 * dirty and are recorded by the index's last batch). */
void writeback_finalise(void);

/*
 * Write `o`'s dirty data back, the bytes dirty now included.  Returns 0:
 * w->done fires exactly once, later, never from inside this call (`w` must
 * stay valid until then); or -EALREADY: there is nothing to write back
 * (no dirty byte, no pass running) and w->done never fires.
 */
int writeback_flush(struct cache_object *o, struct writeback_waiter *w);

/*
 * Write every object's dirty data back (nfscachectl flush, stopping).
 * Returns 0: done(arg, status) fires exactly once, later, with 0, the first
 * failure's nfsstat3, or -ETIMEDOUT; or -EALREADY: nothing is dirty and
 * done never fires.
 */
int writeback_flush_all(void (*done)(void *arg, int status), void *arg);

/*
 * A local write of `len` bytes is about to add dirty data: false when it
 * may go ahead; true when cache.max_dirty is reached and the caller waits
 * in `w` — w->wake() once write-back made room, or with w->timed_out set
 * after upstream.timeout_ms without room (the upstream does not take the
 * data: the caller answers NFS3ERR_JUKEBOX, as for any call the upstream
 * leaves unanswered).  Starts write-back under pressure either way.
 * `w` starts zeroed: woken and called again without room, it keeps the
 * deadline of its first wait.
 */
bool writeback_throttle(uint32_t len, struct cache_waiter *w);

/*
 * A local write added dirty bytes to `o`.  A file written sequentially
 * (its dirty bytes at least WB_BEHIND_BYTES in runs of a wtmax on average)
 * is written back behind its writer, as the Linux client's background
 * write-back does, so that the COMMIT that ends the writing waits only for
 * the tail; scattered dirty bytes wait for dirty_expire_ms, pressure or a
 * COMMIT (later writes next to them make fewer WRITEs).
 */
void writeback_dirtied(struct cache_object *o);

/* The nfsstat3 of a failed write-back of `o` not reported yet (0: none),
 * left for the next COMMIT. */
uint32_t writeback_error(const struct cache_object *o);

/* The same, reported now: it is cleared (one COMMIT hears of it, as one
 * fsync does on Linux). */
uint32_t writeback_take_error(struct cache_object *o);

/* The file's last link was removed through us and its dirty data dropped:
 * a write-back of it that fails from now on is neither counted nor
 * reported, and an error not reported yet is forgotten. */
void writeback_removed(struct cache_object *o);

/* Release o->wb (the cache frees `o`: nfsd_object_release()).  A pass
 * still running pins `o`, so there is none unless the daemon stops. */
void writeback_state_free(struct cache_object *o);

#endif
