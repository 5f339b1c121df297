/*
 * upstream.h — the client side: calls forwarded to the upstream NFS server
 * with libnfs on the daemon's libev loop.
 *
 * NFSv3 calls go over one nfs_context (mounted once, so libnfs brings its
 * timeouts, and reconnection that requeues calls with their XIDs).  Each
 * call carries its client's AUTH_SYS credential.  While the upstream is
 * unreachable calls wait — hard-mount behaviour — and are sent when it is
 * back, or completed with UPSTREAM_TIMEOUT after upstream.timeout_ms (the
 * caller answers NFS3ERR_JUKEBOX).  A transport failure is never reported
 * as an error result.  MOUNT calls go over short-lived connections to the
 * upstream's MOUNT port (mountfwd.c) under the same rules.
 */
#ifndef NFSCACHED_UPSTREAM_H
#define NFSCACHED_UPSTREAM_H

#include <ev.h>

#include "daemon/conf.h"
#include "proto/proc.h"
#include "proto/rpc_msg.h"

enum upstream_status {
	UPSTREAM_OK = 0,       /* `res` is the decoded result, valid during the callback only */
	UPSTREAM_TIMEOUT,      /* no answer within upstream.timeout_ms */
	UPSTREAM_FAILED,       /* the upstream answered with an RPC-level error */
	UPSTREAM_DENIED,       /* the upstream refused the call's credential (AUTH_ERROR) */
};

typedef void (*upstream_done_fn)(void *priv, enum upstream_status status, void *res);

/* One forwarded call as upstream_call() takes it (upstream.c and
 * mountfwd.c keep one each in their request structs). */
struct upstream_call {
	const struct proc_desc *desc;
	void *args;                    /* desc's libnfs argument struct; the caller's */
	struct rpc_cred cred;          /* a copy */
	upstream_done_fn done;
	void *priv;
	ev_tstamp deadline;            /* loop time: UPSTREAM_TIMEOUT from then on */
};

struct upstream;

/* Parse cfg->upstream_url.  Returns NULL after printing "upstream.url: why"
 * to `err` when the URL is unusable.  Nothing is connected yet. */
struct upstream *upstream_new(struct ev_loop *loop, const struct nfsd_conf *cfg, FILE *err);

/* Start connecting (and keep reconnecting) in the background. */
void upstream_start(struct upstream *up);

/* Stop everything: calls still queued, MOUNT calls included, complete
 * with UPSTREAM_TIMEOUT.
 * upstream_free(NULL) is a no-op. */
void upstream_free(struct upstream *up);

/*
 * Forward one call.  `args` (the libnfs argument struct of desc's
 * procedure) must stay valid until `done` fires: libnfs may send WRITE data
 * from it again after a reconnection.  `cred` is copied.
 * Never fails: always returns 0 — `done` fires exactly once, later, never
 * from inside this call (UPSTREAM_TIMEOUT when the upstream does not answer
 * in time); callers do not test the result.
 */
int upstream_call(struct upstream *up, const struct proc_desc *desc, void *args,
		  const struct rpc_cred *cred, upstream_done_fn done, void *priv);

/* The AUTH_SYS credential of `call` for rpc_set_auth(), which takes it
 * over (libnfs_authunix_create(); the groups are copied). */
struct AUTH *upstream_call_auth(struct upstream_call *call);

/* Classify a libnfs RPC_STATUS_ERROR message: UPSTREAM_FAILED or
 * UPSTREAM_DENIED when the upstream answered, -1 for a transport failure. */
int upstream_error_status(const char *msg);

/* "up", "connecting" or "down", for status lines. */
const char *upstream_state(const struct upstream *up);

/* The upstream's largest WRITE (FSINFO wtmax, learnt when mounting), bytes;
 * 0 before the first mount. */
uint32_t upstream_wtmax(const struct upstream *up);

/* The upstream's preferred and largest READ (FSINFO rtmax, learnt when
 * mounting), bytes; 0 before the first mount. */
uint32_t upstream_rtmax(const struct upstream *up);

/* The smoothed round-trip time of NFSv3 calls answered by the upstream
 * (RFC 6298's SRTT, alpha = 1/8, over every answered call: send to reply,
 * the transfer of its data included), seconds; 0 before the first answer. */
double upstream_srtt(const struct upstream *up);

/* The server and default export, from upstream.url. */
const char *upstream_server(const struct upstream *up);
const char *upstream_export(const struct upstream *up);

#endif
