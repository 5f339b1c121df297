/*
 * worker.c — a fixed set of threads draining one job queue.  A thread that
 * finishes a job moves it to a second queue and pokes an ev_async; the loop
 * thread then runs the `done` callbacks.  The pool owns its threads, the job
 * structs and the ev_async; what the jobs do is the caller's business.
 *
 * The ev_async stays started for the life of the pool but holds a reference
 * on the loop only while jobs are pending, so an idle pool never keeps
 * ev_run() from returning.
 */
#include "config.h"

#include <assert.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cache/worker.h"
#include "common/log.h"
#include "common/xalloc.h"

#define WORKER_THREADS_MAX 16

struct worker_job {
	void (*work)(void *arg);
	void (*done)(void *arg);       /* NULL: nothing to run on the loop */
	void *arg;
	struct worker_job *next;
};

/* FIFO of jobs linked through `next`. */
struct worker_queue {
	struct worker_job *head;
	struct worker_job **tail;      /* &head when empty */
};

struct worker_pool {
	struct ev_loop *loop;
	ev_async wake;                 /* a job finished; holds a loop ref iff pending > 0 */
	unsigned pending;              /* submitted, done not yet run; loop thread only */
	pthread_mutex_t lock;          /* guards the fields below */
	pthread_cond_t job_ready;      /* `jobs` non-empty, or `stopping` */
	pthread_cond_t job_finished;   /* `finished` grew, signalled while `draining` */
	struct worker_queue jobs;      /* submitted, not started */
	struct worker_queue finished;  /* work returned, done not yet run */
	int draining;                  /* worker_pool_free waits on job_finished */
	int stopping;                  /* threads exit once `jobs` is empty */
	unsigned nthreads;             /* started, to be joined */
	pthread_t threads[WORKER_THREADS_MAX];
};

static void queue_init(struct worker_queue *q)
{
	q->head = NULL;
	q->tail = &q->head;
}

static void queue_push(struct worker_queue *q, struct worker_job *job)
{
	job->next = NULL;
	*q->tail = job;
	q->tail = &job->next;
}

/* Returns the oldest job, or NULL when empty. */
static struct worker_job *queue_pop(struct worker_queue *q)
{
	struct worker_job *job = q->head;

	if (job) {
		q->head = job->next;
		if (!q->head)
			q->tail = &q->head;
	}
	return job;
}

/* Empties the queue; returns its jobs as a list, oldest first. */
static struct worker_job *queue_take_all(struct worker_queue *q)
{
	struct worker_job *list = q->head;

	queue_init(q);
	return list;
}

/* Pool thread: hand a finished job to the loop thread.  Called unlocked. */
static void worker_finish(struct worker_pool *pool, struct worker_job *job)
{
	pthread_mutex_lock(&pool->lock);
	queue_push(&pool->finished, job);
	if (pool->draining)
		pthread_cond_signal(&pool->job_finished);
	pthread_mutex_unlock(&pool->lock);
	/* Thread-safe; coalesces with a wakeup not yet handled. */
	ev_async_send(pool->loop, &pool->wake);
}

static void *worker_main(void *p)
{
	struct worker_pool *pool = p;
	struct worker_job *job;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->jobs.head && !pool->stopping)
			pthread_cond_wait(&pool->job_ready, &pool->lock);
		job = queue_pop(&pool->jobs);
		if (!job)
			break;   /* stopping, and nothing left to run */
		pthread_mutex_unlock(&pool->lock);
		job->work(job->arg);
		worker_finish(pool, job);
		pthread_mutex_lock(&pool->lock);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

/* Loop thread: run the done callbacks of `list` in order and free the jobs. */
static void worker_run_done(struct worker_pool *pool, struct worker_job *list)
{
	struct worker_job *job;

	while ((job = list)) {
		list = job->next;
		if (job->done)
			job->done(job->arg);
		free(job);
		assert(pool->pending > 0);
		if (--pool->pending == 0)
			ev_unref(pool->loop);   /* idle: let ev_run() return */
	}
}

static void worker_wake_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct worker_pool *pool = w->data;
	struct worker_job *list;

	(void)loop;
	(void)revents;
	pthread_mutex_lock(&pool->lock);
	list = queue_take_all(&pool->finished);
	pthread_mutex_unlock(&pool->lock);
	worker_run_done(pool, list);
}

/*
 * Start the threads with every signal blocked, so that signals keep going to
 * the loop thread (libev's signal watchers, signalfd included, rely on it).
 * Returns 0 or a positive error number from pthread_create.
 */
static int worker_start_threads(struct worker_pool *pool, unsigned threads)
{
	sigset_t all, old;
	int err = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (pool->nthreads < threads) {
		err = pthread_create(&pool->threads[pool->nthreads], NULL, worker_main, pool);
		if (err)
			break;
		pool->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

struct worker_pool *worker_pool_new(struct ev_loop *loop, unsigned threads)
{
	struct worker_pool *pool = xcalloc(1, sizeof(*pool));
	int err;

	assert(loop && threads >= 1 && threads <= WORKER_THREADS_MAX);
	pool->loop = loop;
	if (pthread_mutex_init(&pool->lock, NULL) || pthread_cond_init(&pool->job_ready, NULL) ||
	    pthread_cond_init(&pool->job_finished, NULL))
		abort();
	queue_init(&pool->jobs);
	queue_init(&pool->finished);
	ev_async_init(&pool->wake, worker_wake_cb);
	pool->wake.data = pool;
	ev_async_start(loop, &pool->wake);
	ev_unref(loop);   /* no jobs yet */
	err = worker_start_threads(pool, threads);
	if (err) {
		log_error("worker: cannot start thread %u of %u: %s", pool->nthreads + 1, threads,
			  strerror(err));
		worker_pool_free(pool);
		return NULL;
	}
	return pool;
}

int worker_submit(struct worker_pool *pool, void (*work)(void *arg), void (*done)(void *arg),
		  void *arg)
{
	struct worker_job *job = xmalloc(sizeof(*job));

	assert(pool && work);
	job->work = work;
	job->done = done;
	job->arg = arg;
	if (pool->pending++ == 0)
		ev_ref(pool->loop);   /* keep ev_run() going until this job is done */
	pthread_mutex_lock(&pool->lock);
	queue_push(&pool->jobs, job);
	pthread_cond_signal(&pool->job_ready);
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

unsigned worker_pending(const struct worker_pool *pool)
{
	return pool->pending;
}

/*
 * Loop thread, without the loop running: wait for every pending job and run
 * its done callback here.  Jobs that done callbacks submit meanwhile are
 * waited for too.
 */
static void worker_drain(struct worker_pool *pool)
{
	struct worker_job *list;

	pthread_mutex_lock(&pool->lock);
	pool->draining = 1;
	while (pool->pending > 0) {
		while (!pool->finished.head)
			pthread_cond_wait(&pool->job_finished, &pool->lock);
		list = queue_take_all(&pool->finished);
		pthread_mutex_unlock(&pool->lock);
		worker_run_done(pool, list);
		pthread_mutex_lock(&pool->lock);
	}
	pool->draining = 0;
	pthread_mutex_unlock(&pool->lock);
}

static void worker_stop_threads(struct worker_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->stopping = 1;
	pthread_cond_broadcast(&pool->job_ready);
	pthread_mutex_unlock(&pool->lock);
	while (pool->nthreads > 0)
		pthread_join(pool->threads[--pool->nthreads], NULL);
}

void worker_pool_free(struct worker_pool *pool)
{
	if (!pool)
		return;
	worker_drain(pool);
	/* Joined before the watcher goes: a thread may still be in ev_async_send. */
	worker_stop_threads(pool);
	ev_ref(pool->loop);   /* undo the idle unref before stopping (libev rule) */
	ev_async_stop(pool->loop, &pool->wake);
	pthread_cond_destroy(&pool->job_finished);
	pthread_cond_destroy(&pool->job_ready);
	pthread_mutex_destroy(&pool->lock);
	free(pool);
}
