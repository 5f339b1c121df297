/*
 * frag.c — how fragmented the backing files are: at start and every
 * FRAG_SAMPLE_S seconds a worker job counts the extents (FIEMAP) of at most
 * FRAG_SAMPLE_FILES backing files, going round the cache from one sample
 * to the next, and sets the gauge backing.extents_per_file_p99.  Owns that
 * gauge and nothing else; the counting is backing.c's.
 */
#include "config.h"

#include <ev.h>
#include <stdint.h>
#include <stdlib.h>

#include "cache/backing.h"
#include "cache/cache_int.h"
#include "cache/worker.h"
#include "common/stats.h"
#include "common/xalloc.h"

#define FRAG_SAMPLE_S 60.0              /* a sample at most this often */
#define FRAG_SAMPLE_FILES 256           /* files counted per sample, at most */

struct frag_job {
	unsigned dir_cursor;            /* in: the first directory; out: the next */
	uint32_t p99;                   /* out: extents per file, 99th percentile */
	int files;                      /* out: files counted, or -errno */
};

static struct frag_state {
	ev_timer timer;                 /* FRAG_SAMPLE_S */
	unsigned dir_cursor;            /* where the next sample starts */
	bool running;                   /* a sample job is queued or running */
} frag_state;

static void frag_work(void *arg)
{
	struct frag_job *j = arg;

	j->files = backing_extents_sample(FRAG_SAMPLE_FILES, &j->dir_cursor, &j->p99);
}

static void frag_done(void *arg)
{
	struct frag_job *j = arg;

	frag_state.running = false;
	frag_state.dir_cursor = j->dir_cursor;
	if (j->files > 0)
		stats.backing_extents_per_file_p99 = j->p99;
	else if (j->files == 0)
		stats.backing_extents_per_file_p99 = 0;   /* no backing file left */
	free(j);
}

static void frag_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	if (frag_state.running || !cache_state.workers)
		return;
	struct frag_job *j = xcalloc(1, sizeof(*j));
	j->dir_cursor = frag_state.dir_cursor;
	frag_state.running = true;
	worker_submit(cache_state.workers, frag_work, frag_done, j);
}

void frag_init(void)
{
	frag_state.dir_cursor = 0;
	frag_state.running = false;
	stats.backing_extents_per_file_p99 = 0;
	ev_timer_init(&frag_state.timer, frag_timer_cb, 0., FRAG_SAMPLE_S);
	ev_timer_start(cache_state.loop, &frag_state.timer);
	ev_unref(cache_state.loop);   /* the timer alone does not keep the loop running */
}

void frag_finalise(void)
{
	ev_ref(cache_state.loop);
	ev_timer_stop(cache_state.loop, &frag_state.timer);
}
