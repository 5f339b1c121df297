/*
 * fake_upstream.h — the upstream server and the client side of calls, for
 * unit tests of the request state machines (nfs_read.c, nfs_write.c,
 * writeback.c), in the manner of chrony's test/unit: the modules run as
 * they are, on the real cache/ module, a real libev loop and the real
 * procedure table, and only their I/O is defined here.
 *
 * Upstream: upstream_call() records each call (procedure, credential, the
 * callback and its priv, and a copy of what matters of the arguments:
 * handle, offset, count, stable, the WRITE data, ACCESS bits) and answers
 * nothing by itself.  The test picks recorded calls and completes them in
 * any order it chooses, with a result it builds (fake_read3res() ...), an
 * NFS error status, or no answer (UPSTREAM_TIMEOUT).  As the real
 * upstream, a callback never fires from inside upstream_call().
 *
 * Client: fake_client_call() makes a decoded call as call_dispatch() would
 * hand it to a handler; call_reply(), call_reply_jukebox() and the RPC-error
 * replies record the answer (the NFS status and, for READ, WRITE and
 * COMMIT, the count, EOF flag, bytes and verifier) under the call's xid,
 * then free the call as call.c does.
 *
 * Daemon: fake_daemon_start() sets up the one `struct nfsd` (defined
 * here), a cache on a fresh temporary directory, and write-back;
 * fake_daemon_stop() undoes it.
 */
#ifndef NFSCACHED_FAKE_UPSTREAM_H
#define NFSCACHED_FAKE_UPSTREAM_H

#include <ev.h>
#include <stdint.h>

#include "daemon/call.h"
#include "daemon/conf.h"
#include "daemon/nfsd.h"
#include "daemon/upstream.h"
#include "proto/nfs.h"

#define FAKE_ANY_PROC UINT32_MAX   /* every procedure, in the queries below */

/* One call sent upstream. */
struct fake_call {
	unsigned seq;                    /* 0, 1, ...: order of upstream_call() since the reset */
	uint32_t proc;                   /* NFSv3 procedure number */
	const struct proc_desc *desc;
	void *args;                      /* the caller's argument struct; valid while pending */
	struct rpc_cred cred;
	upstream_done_fn done;
	void *priv;
	int pending;                     /* 1 until the test completes it */
	/* copied when it was sent (so still readable once completed) */
	uint8_t fh[NFS3_FHSIZE];
	uint32_t fh_len;
	uint64_t offset;                 /* READ, WRITE, COMMIT */
	uint32_t count;                  /* READ, WRITE, COMMIT */
	int stable;                      /* WRITE: stable_how */
	uint8_t *data;                   /* WRITE: `count` bytes (malloc'd), else NULL */
	uint32_t access;                 /* ACCESS: the bits asked */
};

enum fake_reply_kind {
	FAKE_REPLY_RESULT,               /* call_reply(): an NFS result */
	FAKE_REPLY_JUKEBOX,              /* call_reply_jukebox() */
	FAKE_REPLY_RPC_ERROR,            /* call_reply_rpc_error() */
	FAKE_REPLY_AUTH_ERROR,           /* call_reply_auth_error() */
	FAKE_REPLY_DROPPED,              /* call_drop() */
};

/* The answer a client call got. */
struct fake_reply {
	uint32_t xid;
	uint32_t proc;
	enum fake_reply_kind kind;
	uint32_t status;                 /* nfsstat3 (NFS3ERR_JUKEBOX for FAKE_REPLY_JUKEBOX) */
	uint32_t rpc_stat;               /* accept_stat / auth_stat of the error replies */
	uint32_t count;                  /* READ, WRITE: resok count */
	int eof;                         /* READ */
	uint8_t *data;                   /* READ: `count` bytes answered (malloc'd) */
	int committed;                   /* WRITE: stable_how */
	char verf[NFS3_WRITEVERFSIZE];   /* WRITE, COMMIT: resok verifier */
	int attrs_follow;                /* READ, GETATTR, LOOKUP (the object's), ACCESS:
					  * post-op attributes; WRITE, COMMIT: wcc after */
	fattr3 attrs;
	uint8_t fh[NFS3_FHSIZE];         /* LOOKUP: the handle answered */
	uint32_t fh_len;
	uint32_t access;                 /* ACCESS: the bits granted */
};

/* ---- the daemon around the modules ---------------------------------- */

/*
 * The `nfsd` of the tests: configuration defaults (conf_defaults), then
 * `tune(cfg)` when not NULL, a cache on a new temporary directory (under
 * $TMPDIR), write-back, nfsd.max_payload = `max_payload`, a random write
 * verifier, the upstream's wtmax 64 KiB, records empty (the counters are
 * the caller's to zero first).
 * Exits the program when the cache cannot be opened.
 */
void fake_daemon_start(struct ev_loop *loop, uint32_t max_payload,
		       void (*tune)(struct nfsd_conf *cfg));

/* Stop write-back, close the cache, remove its directory, free the records
 * and the configuration. */
void fake_daemon_stop(void);

/* A hang (a call never answered, a loop that does not return) fails the
 * program after `seconds` with "Bail out!" instead of blocking the suite. */
void fake_watchdog(unsigned seconds);

/* A test cannot go on (a call it needs was not made): print "Bail out!
 * why" (TAP), stop the daemon (its directory removed) and exit 1. */
void fake_bail_out(const char *why) __attribute__((noreturn));

/* Run the loop for `seconds` (workers, timers), then return. */
void fake_run_for(double seconds);

/* Run the loop until `cond(arg)` is nonzero, for at most `max_s` seconds.
 * Returns 1 when it became true, 0 on the time limit. */
int fake_run_until(int (*cond)(void *arg), void *arg, double max_s);

/* ---- upstream --------------------------------------------------------- */

/* The upstream's FSINFO wtmax as upstream_wtmax() reports it, bytes. */
void fake_upstream_set_wtmax(uint32_t bytes);

/* The upstream's FSINFO rtmax as upstream_rtmax() reports it, bytes (0, as
 * before the first mount, until set). */
void fake_upstream_set_rtmax(uint32_t bytes);
/* The smoothed round trip upstream_srtt() reports, seconds (0: unknown). */
void fake_upstream_set_srtt(double seconds);

/* Calls of procedure `proc` (FAKE_ANY_PROC: all) sent since the start. */
unsigned fake_sent(uint32_t proc);

/* Of those, the ones not completed yet. */
unsigned fake_pending(uint32_t proc);

/* The n-th (0-based, in send order) call of `proc` sent since the start,
 * completed or not; NULL when there are not that many. */
struct fake_call *fake_sent_nth(uint32_t proc, unsigned n);

/* The n-th call of `proc` still pending, in send order; or NULL. */
struct fake_call *fake_pending_nth(uint32_t proc, unsigned n);

/* Run the loop (workers read dirty data before WRITEs go) until `n` calls
 * of `proc` are pending, for at most 5 s.  Returns 1 when they are. */
int fake_wait_pending(uint32_t proc, unsigned n);

/* Complete a pending call: done(priv, st, res).  `res` (the procedure's
 * result struct, or NULL unless st is UPSTREAM_OK) is only read during the
 * callback, as libnfs's. */
void fake_complete(struct fake_call *c, enum upstream_status st, void *res);

/* Complete a pending call with UPSTREAM_OK and an error `status` (every
 * NFSv3 result starts with nfsstat3; the zeroed failure arm says "no
 * attributes"). */
void fake_complete_status(struct fake_call *c, uint32_t status);

/* No answer within upstream.timeout_ms: UPSTREAM_TIMEOUT. */
void fake_complete_timeout(struct fake_call *c);

/* Results: `attrs` may be NULL (no attributes follow); data and verifiers
 * are pointed to or copied, not owned. */
READ3res fake_read3res(const fattr3 *attrs, const void *data, uint32_t count, int eof);
WRITE3res fake_write3res(uint32_t count, stable_how committed, const char verf[NFS3_WRITEVERFSIZE],
			 const fattr3 *before, const fattr3 *after);
COMMIT3res fake_commit3res(const char verf[NFS3_WRITEVERFSIZE], const fattr3 *after);
GETATTR3res fake_getattr3res(const fattr3 *attrs);
ACCESS3res fake_access3res(uint32_t granted, const fattr3 *attrs);

/* ---- the client ------------------------------------------------------- */

/*
 * A decoded NFSv3 call of procedure `proc` from `cred` with a fresh xid
 * and zeroed arguments (call->args, the procedure's libnfs struct) for the
 * test to fill; handles and data it points them to must outlive the call.
 * Run it with fake_dispatch().
 */
struct nfsd_call *fake_client_call(uint32_t proc, const struct rpc_cred *cred);

/* Hand the call to its handler in the procedure table (proto/proc.c), as
 * call_dispatch() does.  Returns its xid. */
uint32_t fake_dispatch(struct nfsd_call *call);

/* The answer to call `xid`, or NULL while it has none. */
const struct fake_reply *fake_reply_of(uint32_t xid);

/* Run the loop until call `xid` is answered, at most 5 s; the answer or NULL. */
const struct fake_reply *fake_wait_reply(uint32_t xid);

/* Client calls answered since the start. */
unsigned fake_replies(void);

#endif
