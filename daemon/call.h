/*
 * call.h — one client call from the record it arrived in to its reply.
 *
 * A call owns its record buffer, the libnfs decode stream (decoded opaque
 * fields point into the record; strings and pointers live on the stream) and
 * the decoded arguments, all released in call_free() once it is answered or
 * dropped.  The connection it came on may close first: conn is then NULL,
 * the reply is still stored in the duplicate request cache and discarded.
 */
#ifndef NFSCACHED_CALL_H
#define NFSCACHED_CALL_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "proto/drc.h"
#include "common/list.h"
#include "proto/proc.h"
#include "proto/rpc_msg.h"

struct nfsd_conn;
struct nfsd_call_state;

#define CALL_MAGIC 0x6e63616cu   /* "ncal" */

struct nfsd_call {
	uint32_t magic;
	struct nfsd_conn *conn;       /* NULL once the connection is gone */
	struct list_node conn_link;   /* in conn->calls */
	uint8_t *record;              /* the whole call record (malloc'd) */
	size_t record_len;            /* bytes */
	size_t charge;                /* bytes charged to the connection (record, expected reply) */
	struct rpc_call_hdr hdr;
	const struct proc_desc *desc;
	ZDR args_zdr;                 /* decode stream, live while args is */
	int args_zdr_live;
	void *args;                   /* desc->args_size bytes, decoded */
	struct rpc_cred cred;         /* credential sent upstream (after squash) */
	struct drc_entry *drc;        /* in-progress DRC entry, or NULL */
	ev_tstamp start;              /* arrival, loop time */
	struct nfsd_call_state *hstate;  /* the handler's per-call state (daemon/nfs_common.h),
					  * NULL until it makes one; released by its row's
					  * free function (daemon/procs.c) */
};

/*
 * Take a complete record that arrived on `conn` (ownership of `record`
 * passes here) and run it: header and auth checks, procedure lookup,
 * argument checks and decode, DRC, then the procedure's handler.  Every
 * RPC-level error is answered here.  Never fails; never blocks.
 */
void call_dispatch(struct nfsd_conn *conn, uint8_t *record, size_t len);

/* Answer with an accepted SUCCESS reply carrying `res` (a libnfs result
 * struct of the call's procedure; NULL for void results), then free the
 * call.  `res` is only read. */
void call_reply(struct nfsd_call *call, void *res);

/*
 * Answer a READ with NFS3_OK and `res` (RFC 1813 §3.3.6), whose data are
 * the res->READ3res_u.resok.count bytes of the file `fd` from `offset`
 * (data.data_val is not read; data_len must equal count), then free the
 * call.  The reply goes out through conn_send_file(): the data from the
 * page cache without a copy when nothing is queued before it.  The caller
 * makes sure the bytes are in the page cache and valid; `fd` need only
 * stay open during the call.  A reply the duplicate request cache must
 * keep (never a READ's: idempotent, proto/proc.c) is built by copy.
 */
void call_reply_read_file(struct nfsd_call *call, const READ3res *res, int fd, uint64_t offset);

/* Answer the NFSv3 error `status` (nfsstat3, RFC 1813 §2.6) with no
 * attributes, or for procedures without an NFS status (NULL, MOUNT)
 * SYSTEM_ERR; then free the call.  Nothing is kept in the duplicate
 * request cache: a retransmission runs the call again. */
void call_reply_status(struct nfsd_call *call, uint32_t status);

/* call_reply_status(NFS3ERR_JUKEBOX): the client retries later. */
void call_reply_jukebox(struct nfsd_call *call);

/* Answer with an RPC-level error (GARBAGE_ARGS, SYSTEM_ERR, ...). */
void call_reply_rpc_error(struct nfsd_call *call, enum rpc_accept_stat stat);

/* Answer MSG_DENIED AUTH_ERROR with `stat` (the upstream refused the
 * credential). */
void call_reply_auth_error(struct nfsd_call *call, enum rpc_auth_stat stat);

/* Drop the call without a reply (the client will retransmit). */
void call_drop(struct nfsd_call *call);

/* Detach every call from a closing connection. */
void call_detach_conn(struct nfsd_call *call);

#endif
