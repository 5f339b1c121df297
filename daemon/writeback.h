/*
 * writeback.h — dirty data of cache objects written upstream (DESIGN.md
 * "Write-back"): coalesced UNSTABLE WRITEs of up to the upstream's wtmax,
 * several in flight, then one COMMIT; a changed upstream verifier sends the
 * bytes again.  A pass starts after cache.dirty_expire_ms, under pressure
 * (half of cache.max_dirty dirty), when a caller waits for an object to be
 * clean (COMMIT, SETATTR, a WRITE that must go through), and on `flush`.
 * Dirty ranges recovered from the index are checked first (cache.c).
 */
#ifndef NFSCACHED_WRITEBACK_H
#define NFSCACHED_WRITEBACK_H

#include <ev.h>
#include <stdint.h>

#include "cache/cache.h"
#include "common/list.h"

/* A caller waiting for an object's dirty data to be committed upstream. */
struct writeback_waiter {
	struct list_node link;
	struct cache_object *o;
	uint64_t need;        /* done once o->wb_done reaches this */
	/* status: 0 committed (or nothing left to write: see o->wb_error for a
	 * failure reported earlier), an nfsstat3 > 0 when the write-back failed
	 * for good, -ETIMEDOUT when the upstream did not answer (the bytes stay
	 * dirty; the caller answers NFS3ERR_JUKEBOX) */
	void (*done)(struct writeback_waiter *w, int status);
};

/* Start the expiry and pressure timer.  0 or -errno. */
int writeback_init(struct ev_loop *loop);

/* Stop the timer; passes still running are abandoned (their bytes stay
 * dirty and are recorded by the index's last batch). */
void writeback_finalise(void);

/*
 * Write `o`'s dirty data back, the bytes dirty now included.  Returns 1
 * when there is nothing to write (w->done never fires), or 0: w->done fires
 * exactly once, later, never from inside this call.  `w` must stay valid
 * until then.
 */
int writeback_flush(struct cache_object *o, struct writeback_waiter *w);

/*
 * Write every object's dirty data back (nfscachectl flush).  Returns 1 when
 * nothing is dirty (done never fires), or 0: done(arg, status) fires once,
 * later, with 0, the first failure's nfsstat3, or -ETIMEDOUT.
 */
int writeback_flush_all(void (*done)(void *arg, int status), void *arg);

/*
 * A local write of `len` bytes is about to add dirty data: 0 when it may go
 * ahead, 1 when cache.max_dirty is reached: then `w` waits — w->wake() once
 * write-back made room, or with w->timed_out set after upstream.timeout_ms
 * without room (the upstream does not take the data: the caller answers
 * NFS3ERR_JUKEBOX, as for any call the upstream leaves unanswered).  Starts
 * write-back under pressure either way.  `w` starts zeroed: woken and
 * called again without room, it keeps the deadline of its first wait.
 */
int writeback_throttle(uint32_t len, struct cache_waiter *w);

#endif
