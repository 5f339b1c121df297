/*
 * lease.c — who holds the index.  The index serves one worker job at a
 * time (index.h): a batch (persist.c), or a culling step or the start-up
 * reconciliation (cull.c, reconcile.c).  A holder takes the lease before it
 * submits its job and releases it on the loop once the job is done; the
 * release hands the index on, first to a batch that asked meanwhile
 * (cache_state.batch_again), then to a culling step waiting for it.  Not
 * here: what the jobs do, nor when they are wanted.
 */
#include "config.h"

#include <assert.h>
#include <stdbool.h>

#include "cache/cache_int.h"

bool index_lease_take(enum index_holder who)
{
	assert(who != INDEX_FREE);
	if (cache_state.index_holder != INDEX_FREE)
		return false;
	cache_state.index_holder = who;
	return true;
}

void index_lease_release(void)
{
	assert(cache_state.index_holder != INDEX_FREE);
	cache_state.index_holder = INDEX_FREE;
	if (cache_state.batch_again) {
		cache_state.batch_again = false;
		batch_start();
	}
	if (cache_state.index_holder == INDEX_FREE)
		space_index_free();
}

enum index_holder index_lease_holder(void)
{
	return cache_state.index_holder;
}

void index_lease_reset(void)
{
	cache_state.index_holder = INDEX_FREE;
	cache_state.batch_again = false;
}
