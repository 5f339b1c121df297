/*
 * upstream.h — the client side: calls forwarded to the upstream NFS server
 * with libnfs on the daemon's libev loop.
 *
 * NFSv3 calls go over upstream.connections TCP connections, each one
 * nfs_context mounted on its own (so libnfs brings its timeouts, and
 * reconnection that requeues calls with their XIDs), like the Linux
 * client's nconnect.  A call is sent on the connection that is up with the
 * fewest calls in flight; a call gets one XID, unique across connections,
 * and keeps it when it is sent again, on any connection.  Each call carries
 * its client's AUTH_SYS credential.  While no connection is up calls wait —
 * hard-mount behaviour — and are sent when one is, or completed with
 * UPSTREAM_TIMEOUT after upstream.timeout_ms (the caller answers
 * NFS3ERR_JUKEBOX).  A transport failure is never reported as an error
 * result: the calls of a failed connection go to another one.  MOUNT calls
 * go over short-lived connections to the upstream's MOUNT port
 * (mountfwd.c) under the same rules.
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

/* "up" when at least one connection is up; else "connecting" when one
 * is mounting, else "down".  For status lines; the strings are static. */
const char *upstream_state(const struct upstream *up);

/* One connection, for status lines (a snapshot). */
struct upstream_conn_info {
	const char *state;         /* "up", "connecting" or "down" (static) */
	uint64_t calls;            /* NFSv3 calls sent on it since start, resends included */
	unsigned in_flight;        /* calls sent on it and not answered yet */
	uint64_t reconnects;       /* its share of the upstream.reconnects counter */
	uint64_t errors;           /* its share of upstream.errors */
};

/* The number of connections (upstream.connections when started, 1..16). */
unsigned upstream_connections(const struct upstream *up);

/* Fill `info` for connection `index` (0 .. upstream_connections() - 1).
 * Returns 0, or -ENOENT for an index beyond them. */
int upstream_conn_info(const struct upstream *up, unsigned index, struct upstream_conn_info *info);

/* The upstream's largest WRITE (FSINFO wtmax, learnt from the first
 * mount that completes), bytes; 0 before it. */
uint32_t upstream_wtmax(const struct upstream *up);

/* The upstream's preferred and largest READ (FSINFO rtmax, learnt from the
 * first mount that completes), bytes; 0 before it. */
uint32_t upstream_rtmax(const struct upstream *up);

/* The smoothed round-trip time of NFSv3 calls answered by the upstream
 * (RFC 6298's SRTT, alpha = 1/8, over every answered call on every
 * connection: send to reply,
 * the transfer of its data included), seconds; 0 before the first answer. */
double upstream_srtt(const struct upstream *up);

/* The server and default export, from upstream.url. */
const char *upstream_server(const struct upstream *up);
const char *upstream_export(const struct upstream *up);

#endif
