/*
 * nfsd.h — the daemon's one instance of each long-lived module, shared by
 * the handlers.  Set up by main() in order and torn down in reverse.
 */
#ifndef NFSCACHED_NFSD_H
#define NFSCACHED_NFSD_H

#include <ev.h>
#include <stdint.h>

#include "daemon/conf.h"

struct upstream;
struct drc;
struct listener;

struct nfsd {
	struct ev_loop *loop;
	struct nfsd_conf cfg;
	struct upstream *upstream;
	struct drc *drc;
	struct listener *listener;
	uint32_t max_payload;      /* largest READ/WRITE payload accepted, bytes */
	ev_tstamp start_time;
	int stopping;              /* SIGTERM received */
	int cache_on;              /* the cache opened: READ/WRITE go through it */
	char write_verf[8];        /* WRITE/COMMIT verifier in write-back mode: random
				    * per start (RFC 1813 §3.3.7 writeverf3) */
};

extern struct nfsd nfsd;

/* nfs_common.c: the cache's free hook (cache_set_free_hook(), set by main
 * before cache_init): releases what the handlers and write-back hang off a
 * cache object (o->rd, o->wb). */
struct cache_object;
void nfsd_object_release(struct cache_object *o);

#endif
