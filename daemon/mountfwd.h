/*
 * mountfwd.h — MOUNTv3 calls forwarded to the upstream's MOUNT service
 * (RFC 1813 §5).  Each call gets its own short-lived libnfs rpc_context on
 * the loop: connect (retried until the deadline while the server is down),
 * one call, disconnect.  MOUNT traffic is a handful of calls per client
 * mount, so nothing is kept open; at most 16 such connections are open at
 * once, and further calls wait for one in the order they came.
 */
#ifndef NFSCACHED_MOUNTFWD_H
#define NFSCACHED_MOUNTFWD_H

#include <ev.h>

#include "daemon/upstream.h"

/*
 * Forward the MOUNT call `call` (copied; call->args must stay valid until
 * call->done) to `server`, port `port` (0: ask its portmapper).
 * Returns 0: call->done fires exactly once, later — UPSTREAM_TIMEOUT when
 * call->deadline passes without an answer.
 */
int mountfwd_call(struct ev_loop *loop, const char *server, int port,
		  const struct upstream_call *call);

/* Stop every call still under way: each one's done() fires, from inside
 * this call, with UPSTREAM_TIMEOUT, and its context is destroyed.  For the
 * daemon's stop (upstream_free()); calls forwarded later start afresh. */
void mountfwd_finalise(void);

#endif
