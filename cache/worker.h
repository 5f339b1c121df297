/*
 * worker.h — a small pool of threads for the disk work the event loop must
 * never wait on: fdatasync, sqlite commits and checkpoints, unlinks, cold
 * preads.  A job runs `work(arg)` on a pool thread, then `done(arg)` on the
 * loop thread (woken through an ev_async), in submission order per pool
 * thread and exactly once each.
 */
#ifndef NFSCACHED_WORKER_H
#define NFSCACHED_WORKER_H

#include <ev.h>

struct worker_pool;

/* Start `threads` (1..16) threads whose completions are delivered on `loop`.
 * Returns NULL after logging when a thread cannot be created. */
struct worker_pool *worker_pool_new(struct ev_loop *loop, unsigned threads);

/*
 * Queue a job: `work(arg)` runs on a pool thread (it must not touch loop
 * state), then `done(arg)` on the loop thread; `done` may be NULL.
 * Returns 0: both run exactly once, `done` never from inside this call.
 * Never blocks (the queue is unbounded; callers bound what they submit).
 */
int worker_submit(struct worker_pool *pool, void (*work)(void *arg), void (*done)(void *arg),
		  void *arg);

/* Jobs queued or running, not yet done. */
unsigned worker_pending(const struct worker_pool *pool);

/* Run every queued job to completion (their `done` callbacks included),
 * then stop the threads and free the pool.  Blocks: for shutdown only.
 * worker_pool_free(NULL) is a no-op. */
void worker_pool_free(struct worker_pool *pool);

#endif
