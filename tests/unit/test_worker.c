/*
 * test_worker.c — the worker pool (cache/worker.c): every job runs exactly
 * once on a pool thread and its done callback on the loop thread, in
 * submission order on a one-thread pool; ev_run() returns once nothing is
 * pending and not before; worker_pool_free drains what is still queued.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cache/worker.c"

#include "tests/unit/tap.h"

#define MANY_JOBS 1000

static pthread_t loop_thread;

struct job {
	struct worker_pool *pool;
	unsigned index;
	unsigned work_runs;         /* written by the pool thread that ran it */
	unsigned done_runs;
	int work_on_loop_thread;    /* work ran on the loop thread: wrong */
	int done_off_loop_thread;   /* done ran elsewhere: wrong */
	int done_before_work;       /* done saw work_runs == 0: wrong */
	pthread_t work_thread;
	unsigned usleep_us;         /* work sleeps this long */
	struct job *follow_up;      /* done submits it, when set */
};

/* Order of calls, for the one-thread pool; each array written by one thread. */
static unsigned work_order[MANY_JOBS], done_order[MANY_JOBS];
static unsigned nwork_order, ndone_order;

static void job_work(void *arg)
{
	struct job *j = arg;

	j->work_thread = pthread_self();
	if (pthread_equal(j->work_thread, loop_thread))
		j->work_on_loop_thread = 1;
	if (j->usleep_us)
		usleep(j->usleep_us);
	j->work_runs++;
}

static void job_done(void *arg)
{
	struct job *j = arg;

	if (!pthread_equal(pthread_self(), loop_thread))
		j->done_off_loop_thread = 1;
	if (j->work_runs == 0)
		j->done_before_work = 1;
	j->done_runs++;
	if (j->follow_up)
		worker_submit(j->pool, job_work, job_done, j->follow_up);
}

static void ordered_work(void *arg)
{
	work_order[nwork_order++] = ((struct job *)arg)->index;
	job_work(arg);
}

static void ordered_done(void *arg)
{
	done_order[ndone_order++] = ((struct job *)arg)->index;
	job_done(arg);
}

/* Counts of jobs whose bookkeeping is wrong; all must be 0. */
struct tally {
	unsigned not_once_work, not_once_done, work_on_loop, done_off_loop, done_early;
};

static struct tally tally_jobs(const struct job *jobs, unsigned n)
{
	struct tally t = { 0, 0, 0, 0, 0 };

	for (unsigned i = 0; i < n; i++) {
		t.not_once_work += jobs[i].work_runs != 1;
		t.not_once_done += jobs[i].done_runs != 1;
		t.work_on_loop += jobs[i].work_on_loop_thread;
		t.done_off_loop += jobs[i].done_off_loop_thread;
		t.done_early += jobs[i].done_before_work;
	}
	return t;
}

static void check_tally(const struct job *jobs, unsigned n, const char *what)
{
	struct tally t = tally_jobs(jobs, n);

	is_int(t.not_once_work, 0, "%s: every work ran exactly once", what);
	is_int(t.not_once_done, 0, "%s: every done ran exactly once", what);
	is_int(t.work_on_loop, 0, "%s: no work ran on the loop thread", what);
	is_int(t.done_off_loop, 0, "%s: every done ran on the loop thread", what);
	is_int(t.done_early, 0, "%s: no done ran before its work", what);
}

static unsigned distinct_work_threads(const struct job *jobs, unsigned n)
{
	pthread_t seen[WORKER_THREADS_MAX];
	unsigned nseen = 0, k;

	for (unsigned i = 0; i < n; i++) {
		for (k = 0; k < nseen && !pthread_equal(seen[k], jobs[i].work_thread); k++)
			;
		if (k == nseen && nseen < WORKER_THREADS_MAX)
			seen[nseen++] = jobs[i].work_thread;
	}
	return nseen;
}

static void test_many_jobs(struct ev_loop *loop)
{
	struct worker_pool *pool = worker_pool_new(loop, 3);
	struct job *jobs = calloc(MANY_JOBS, sizeof(*jobs));
	unsigned done_in_submit = 0, submit_errors = 0;

	ok(pool != NULL, "3-thread pool created");
	for (unsigned i = 0; i < MANY_JOBS; i++) {
		jobs[i].usleep_us = 100;   /* long enough for every thread to take some */
		submit_errors += worker_submit(pool, job_work, job_done, &jobs[i]) != 0;
		done_in_submit += jobs[i].done_runs;
	}
	is_int(submit_errors, 0, "every worker_submit returned 0");
	is_int(done_in_submit, 0, "no done ran from inside worker_submit");
	is_int(worker_pending(pool), MANY_JOBS, "%d pending after submitting", MANY_JOBS);
	ev_run(loop, 0);   /* must return by itself once everything is done */
	is_int(worker_pending(pool), 0, "ev_run returned with nothing pending");
	check_tally(jobs, MANY_JOBS, "1000 jobs on 3 threads");
	is_int(distinct_work_threads(jobs, MANY_JOBS), 3, "all 3 threads took jobs");

	/* after going idle the pool holds the loop again for new jobs */
	memset(jobs, 0, 10 * sizeof(*jobs));
	for (unsigned i = 0; i < 10; i++)
		worker_submit(pool, job_work, job_done, &jobs[i]);
	ev_run(loop, 0);
	check_tally(jobs, 10, "second round on the same pool");
	worker_pool_free(pool);
	free(jobs);
}

static void test_order(struct ev_loop *loop)
{
	struct worker_pool *pool = worker_pool_new(loop, 1);
	static struct job jobs[200];
	unsigned out_of_order = 0;

	nwork_order = ndone_order = 0;
	for (unsigned i = 0; i < 200; i++) {
		jobs[i].index = i;
		jobs[i].usleep_us = i % 7 == 0 ? 200 : 0;
		worker_submit(pool, ordered_work, ordered_done, &jobs[i]);
	}
	ev_run(loop, 0);
	check_tally(jobs, 200, "1-thread pool");
	is_int(nwork_order, 200, "1-thread pool: 200 works recorded");
	is_int(ndone_order, 200, "1-thread pool: 200 dones recorded");
	for (unsigned i = 0; i < 200; i++)
		out_of_order += work_order[i] != i || done_order[i] != i;
	is_int(out_of_order, 0, "1-thread pool: work and done in submission order");
	worker_pool_free(pool);
}

static void test_free_drains(struct ev_loop *loop)
{
	struct worker_pool *pool = worker_pool_new(loop, 2);
	static struct job jobs[51];

	for (unsigned i = 0; i < 50; i++) {
		jobs[i].pool = pool;
		jobs[i].usleep_us = 1000;
	}
	jobs[0].follow_up = &jobs[50];   /* submitted from a done run by the drain */
	for (unsigned i = 0; i < 50; i++)
		worker_submit(pool, job_work, job_done, &jobs[i]);
	is_int(worker_pending(pool), 50, "50 slow jobs pending, loop not run");
	worker_pool_free(pool);   /* the loop never ran: free must do it all */
	check_tally(jobs, 51, "worker_pool_free drained");
	ok(ev_run(loop, EVRUN_NOWAIT) == 0, "nothing holds the loop after free");
}

static unsigned null_done_works;

static void count_work(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&null_done_works, 1, __ATOMIC_RELAXED);
}

static void test_idle_and_null_done(struct ev_loop *loop)
{
	struct worker_pool *pool = worker_pool_new(loop, 2);
	int ret;

	is_int(worker_pending(pool), 0, "new pool: nothing pending");
	ret = ev_run(loop, 0);   /* an idle pool must not keep the loop alive */
	ok(ret == 0, "ev_run returns at once with an idle pool");
	for (int i = 0; i < 20; i++)
		worker_submit(pool, count_work, NULL, NULL);
	ev_run(loop, 0);
	is_int(null_done_works, 20, "jobs without done: all 20 ran");
	is_int(worker_pending(pool), 0, "jobs without done: nothing pending after");
	worker_pool_free(pool);
	worker_pool_free(NULL);
	ok(1, "worker_pool_free(NULL) is a no-op");
}

int main(void)
{
	struct ev_loop *loop = ev_default_loop(0);

	alarm(60);   /* a hang (loop kept alive, lost wakeup) fails instead of blocking */
	log_init(1, LOG_LEVEL_WARNING);
	loop_thread = pthread_self();
	test_idle_and_null_done(loop);
	test_many_jobs(loop);
	test_order(loop);
	test_free_drains(loop);
	ev_loop_destroy(loop);
	return done();
}
