/*
 * call.c — the life of one client call: header and credential checks,
 * procedure lookup, argument bounds and decode, the duplicate request cache,
 * the handler, and the encoding of whichever reply ends it.  Handlers decide
 * what to answer; this file owns how an answer reaches the wire.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/call.h"
#include "daemon/conn.h"
#include "daemon/handlers.h"
#include "common/log.h"
#include "daemon/netaddr.h"
#include "daemon/nfsd.h"
#include "common/stats.h"
#include "proto/xdr_util.h"
#include "common/xalloc.h"

#define NOBODY 65534u
#define REPLY_MAX_BYTES (64u << 20)   /* bound on one encoded reply */

static void call_free(struct nfsd_call *call)
{
	if (call->magic != CALL_MAGIC)
		abort();
	if (call->conn) {
		list_del(&call->conn_link);
		conn_call_done(call->conn, call->charge);
	}
	if (call->desc && nfsd_proc_of(call->desc)->free)
		nfsd_proc_of(call->desc)->free(call);
	if (call->args_zdr_live)
		zdr_destroy(&call->args_zdr);
	free(call->args);
	free(call->record);
	call->magic = 0;
	stats.calls_in_flight--;
	free(call);
}

void call_detach_conn(struct nfsd_call *call)
{
	list_del(&call->conn_link);
	call->conn = NULL;
}

/* Send an encoded reply record (mark included) and store it in the DRC. */
static void call_finish(struct nfsd_call *call, struct conn_out *out)
{
	if (call->drc) {
		drc_complete(nfsd.drc, call->drc, out->data, out->len);
		call->drc = NULL;
	}
	if (call->conn)
		conn_send(call->conn, out);
	else
		free(out);
	call_free(call);
}

static void call_send_header_only(struct nfsd_call *call, const uint8_t *hdr, size_t n)
{
	struct conn_out *out = conn_out_new(n + 4);

	rpc_record_mark(out->data, (uint32_t)n);
	memcpy(out->data + 4, hdr, n);
	call_finish(call, out);
}

void call_reply_rpc_error(struct nfsd_call *call, enum rpc_accept_stat stat)
{
	uint8_t hdr[RPC_REPLY_MAX_HDR_BYTES];

	if (stat == RPC_GARBAGE_ARGS)
		stats.rpc_garbage_args++;
	else
		stats.rpc_rejected++;
	if (call->drc) {   /* an error is not a result worth replaying */
		drc_abandon(nfsd.drc, call->drc);
		call->drc = NULL;
	}
	call_send_header_only(call, hdr, rpc_encode_accepted(hdr, call->hdr.xid, stat, 0, 0));
}

void call_reply_auth_error(struct nfsd_call *call, enum rpc_auth_stat stat)
{
	uint8_t hdr[RPC_REPLY_MAX_HDR_BYTES];

	stats.rpc_rejected++;
	if (call->drc) {
		drc_abandon(nfsd.drc, call->drc);
		call->drc = NULL;
	}
	call_send_header_only(call, hdr, rpc_encode_auth_error(hdr, call->hdr.xid, stat));
}

void call_drop(struct nfsd_call *call)
{
	if (call->drc) {
		drc_abandon(nfsd.drc, call->drc);
		call->drc = NULL;
	}
	call_free(call);
}

/* The most a reply can take, bytes: what a READ, READDIR or READDIRPLUS
 * asks for, clamped as its handler clamps it (to the transfer size offered
 * in FSINFO), plus room for the header and attributes; 8192 for the rest.
 * Never more than a client may get, whatever count it sent. */
static size_t reply_size_hint(const struct nfsd_call *call)
{
	uint32_t count = 0;

	if (call->desc && call->desc->prog == NFS3_PROGRAM && call->args) {
		switch (call->desc->proc) {
		case NFS3PROC_READ:
			count = ((READ3args *)call->args)->count;
			break;
		case NFS3PROC_READDIR:
			count = ((READDIR3args *)call->args)->count;
			break;
		case NFS3PROC_READDIRPLUS:
			count = ((READDIRPLUS3args *)call->args)->maxcount;
			break;
		default:
			return 8192;
		}
		if (count > nfsd.max_payload)
			count = nfsd.max_payload;
		return (size_t)count + 512;
	}
	return 8192;
}

void call_reply(struct nfsd_call *call, void *res)
{
	size_t cap = reply_size_hint(call);

	for (;;) {
		struct conn_out *out = conn_out_new(4 + cap);
		size_t n = rpc_encode_accepted(out->data + 4, call->hdr.xid, RPC_SUCCESS, 0, 0);
		if (!call->desc->encode_res) {
			out->len = 4 + n;
			rpc_record_mark(out->data, (uint32_t)n);
			call_finish(call, out);
			return;
		}
		ZDR zdr;
		zdrmem_create(&zdr, (char *)out->data + 4 + n, (uint32_t)(cap - n), ZDR_ENCODE);
		if (call->desc->encode_res(&zdr, res)) {
			n += zdr_getpos(&zdr);
			zdr_destroy(&zdr);
			out->len = 4 + n;
			rpc_record_mark(out->data, (uint32_t)n);
			call_finish(call, out);
			return;
		}
		zdr_destroy(&zdr);
		free(out);
		if (cap >= REPLY_MAX_BYTES) {
			log_error("call: cannot encode %s reply in %u bytes", call->desc->name,
				  REPLY_MAX_BYTES);
			call_reply_rpc_error(call, RPC_SYSTEM_ERR);
			return;
		}
		cap *= 2;
	}
}

/* A READ3resok before its data: status, post_op_attr (fattr3: 84 bytes),
 * count, eof, the data's length (RFC 1813 §3.3.6), with room to spare. */
#define READ_REPLY_HEAD_BYTES 256

/* READ3res encoded with no data ends with the data's length word: it is
 * the last thing before the data (RFC 4506 §4.10), set to the count once
 * encoded. */
void call_reply_read_file(struct nfsd_call *call, const READ3res *res, int fd, uint64_t offset)
{
	uint32_t count = res->READ3res_u.resok.count;
	size_t pad = (4 - count % 4) % 4;
	struct conn_out *head = conn_out_new(4 + RPC_REPLY_MAX_HDR_BYTES + READ_REPLY_HEAD_BYTES);
	READ3res hres = *res;
	ZDR zdr;

	assert(res->status == NFS3_OK && res->READ3res_u.resok.data.data_len == count);
	hres.READ3res_u.resok.data.data_len = 0;
	hres.READ3res_u.resok.data.data_val = NULL;
	size_t n = rpc_encode_accepted(head->data + 4, call->hdr.xid, RPC_SUCCESS, 0, 0);
	zdrmem_create(&zdr, (char *)head->data + 4 + n, (uint32_t)(head->len - 4 - n), ZDR_ENCODE);
	int ok = call->desc->encode_res(&zdr, &hres);
	n += zdr_getpos(&zdr);
	zdr_destroy(&zdr);
	if (!ok) {
		free(head);
		log_error("call: cannot encode the READ reply header");
		call_reply_rpc_error(call, RPC_SYSTEM_ERR);
		return;
	}
	uint8_t *len_word = head->data + 4 + n - 4;
	assert(len_word[0] == 0 && len_word[1] == 0 && len_word[2] == 0 && len_word[3] == 0);
	len_word[0] = (uint8_t)(count >> 24);
	len_word[1] = (uint8_t)(count >> 16);
	len_word[2] = (uint8_t)(count >> 8);
	len_word[3] = (uint8_t)count;
	head->len = 4 + n;
	rpc_record_mark(head->data, (uint32_t)(n + count + pad));
	if (!call->conn && !call->drc) {
		free(head);
		call_free(call);
		return;
	}
	if (call->drc) {
		/* the duplicate request cache keeps whole replies */
		struct conn_out *out = conn_out_new(head->len + count + pad);
		memcpy(out->data, head->data, head->len);
		free(head);
		if (pread(fd, out->data + 4 + n, count, (off_t)offset) != (ssize_t)count) {
			free(out);
			call_reply_rpc_error(call, RPC_SYSTEM_ERR);
			return;
		}
		memset(out->data + 4 + n + count, 0, pad);
		call_finish(call, out);
		return;
	}
	conn_send_file(call->conn, head, fd, offset, count, pad);
	call_free(call);
}

void call_reply_status(struct nfsd_call *call, uint32_t status)
{
	if (call->desc->prog != NFS3_PROGRAM || !call->desc->encode_res) {
		call_reply_rpc_error(call, RPC_SYSTEM_ERR);
		return;
	}
	/* Every NFSv3 result starts with nfsstat3; the zeroed failure arm
	 * encodes as "no attributes follow". */
	void *res = xcalloc(1, call->desc->res_size);
	*(uint32_t *)res = status;
	if (call->drc) {   /* the retry must run the call */
		drc_abandon(nfsd.drc, call->drc);
		call->drc = NULL;
	}
	call_reply(call, res);
	free(res);
}

void call_reply_jukebox(struct nfsd_call *call)
{
	call_reply_status(call, NFS3ERR_JUKEBOX_STATUS);
}

/* AUTH_NONE, unless server.auth_none = nobody, gets no further than knfsd
 * with sec=sys lets it: the calls that carry no file handle and read
 * nothing of the export (NFS NULL; MOUNT NULL, DUMP, EXPORT). */
static int auth_none_allowed(const struct nfsd_call *call)
{
	if (call->hdr.cred.flavor != RPC_AUTH_NONE || nfsd.cfg.server_auth_none == AUTH_NONE_NOBODY)
		return 1;
	if (call->desc->prog == NFS3_PROGRAM)
		return call->desc->proc == 0;
	return call->desc->proc == 0 || call->desc->proc == 2 || call->desc->proc == 5;
}

static void squash(struct rpc_cred *cred)
{
	if (cred->flavor != RPC_AUTH_SYS) {
		/* AUTH_NONE is the anonymous user, as knfsd maps it */
		cred->flavor = RPC_AUTH_SYS;
		cred->uid = cred->gid = NOBODY;
		cred->gids_len = 0;
		snprintf(cred->machinename, sizeof(cred->machinename), "nfscached");
		return;
	}
	if (nfsd.cfg.server_squash == SQUASH_ALL ||
	    (nfsd.cfg.server_squash == SQUASH_ROOT && cred->uid == 0)) {
		cred->uid = NOBODY;
		cred->gid = NOBODY;
		cred->gids_len = 0;
	} else if (nfsd.cfg.server_squash == SQUASH_ROOT && cred->gid == 0) {
		cred->gid = NOBODY;
	}
}

/* Header-level failures are answered without a procedure. */
static int call_check_header(struct nfsd_call *call, enum rpc_call_status st)
{
	uint8_t hdr[RPC_REPLY_MAX_HDR_BYTES];
	size_t n;

	switch (st) {
	case RPC_CALL_OK:
		return 0;
	case RPC_CALL_DROP:
		log_debug("call: dropping a record that is not a call (%zu bytes)", call->record_len);
		call_drop(call);
		return -1;
	case RPC_CALL_RPC_MISMATCH:
		n = rpc_encode_rpc_mismatch(hdr, call->hdr.xid, RPC_VERSION, RPC_VERSION);
		break;
	case RPC_CALL_BADCRED:
		n = rpc_encode_auth_error(hdr, call->hdr.xid, RPC_AUTH_BADCRED);
		break;
	case RPC_CALL_BADVERF:
		n = rpc_encode_auth_error(hdr, call->hdr.xid, RPC_AUTH_BADVERF);
		break;
	case RPC_CALL_GARBAGE:
	default:
		call_reply_rpc_error(call, RPC_GARBAGE_ARGS);
		return -1;
	}
	stats.rpc_rejected++;
	call_send_header_only(call, hdr, n);
	return -1;
}

/* Duplicate request cache: 1 if the call was answered or dropped here. */
static int call_check_drc(struct nfsd_call *call, const uint8_t *args, size_t args_len)
{
	struct drc_key key;
	struct drc_entry *e;

	if (!(call->desc->flags & PROC_NONIDEMPOTENT) || !call->conn)
		return 0;
	memset(&key, 0, sizeof(key));
	key.family = (uint32_t)netaddr_key((struct sockaddr *)&call->conn->peer, key.addr);
	key.xid = call->hdr.xid;
	key.prog = call->hdr.prog;
	key.vers = call->hdr.vers;
	key.proc = call->hdr.proc;
	key.args_len = (uint32_t)args_len;
	key.csum = drc_checksum(args, args_len);
	switch (drc_lookup(nfsd.drc, &key, &e)) {
	case DRC_MISS:
		call->drc = e;
		return 0;
	case DRC_IN_PROGRESS:
		stats.rpc_drc_drops++;
		log_debug("call %s xid 0x%08x: retransmission while in progress: dropped",
			  call->desc->name, call->hdr.xid);
		call_free(call);
		return 1;
	case DRC_REPLAY:
	default: {
		stats.rpc_drc_hits++;
		log_debug("call %s xid 0x%08x: replayed from the duplicate request cache",
			  call->desc->name, call->hdr.xid);
		struct conn_out *out = conn_out_new(e->reply_len);
		memcpy(out->data, e->reply, e->reply_len);
		conn_send(call->conn, out);
		call_free(call);
		return 1;
	}
	}
}

void call_dispatch(struct nfsd_conn *conn, uint8_t *record, size_t len)
{
	struct nfsd_call *call = xcalloc(1, sizeof(*call));
	enum proc_lookup_status why;
	uint32_t low = 0, high = 0;

	call->magic = CALL_MAGIC;
	call->conn = conn;
	list_add_tail(&conn->calls, &call->conn_link);
	call->record = record;
	call->record_len = len;
	call->charge = len;   /* conn_consume() charged the record */
	call->start = ev_now(nfsd.loop);
	stats.calls_in_flight++;

	if (call_check_header(call, rpc_decode_call(record, len, &call->hdr)) != 0)
		return;

	call->desc = proc_lookup(call->hdr.prog, call->hdr.vers, call->hdr.proc, &why, &low, &high);
	if (!call->desc) {
		uint8_t hdr[RPC_REPLY_MAX_HDR_BYTES];
		enum rpc_accept_stat st = why == PROC_PROG_UNAVAIL ? RPC_PROG_UNAVAIL :
					  why == PROC_PROG_MISMATCH ? RPC_PROG_MISMATCH : RPC_PROC_UNAVAIL;
		stats.rpc_rejected++;
		log_debug("call xid 0x%08x from %s: program %u version %u procedure %u unavailable",
			  call->hdr.xid, conn->peer_str, call->hdr.prog, call->hdr.vers, call->hdr.proc);
		call_send_header_only(call, hdr, rpc_encode_accepted(hdr, call->hdr.xid, st, low, high));
		return;
	}
	if (call->desc->prog == NFS3_PROGRAM)
		stats.nfs3_calls[call->desc->proc]++;
	else
		stats.mount3_calls[call->desc->proc]++;

	if (!auth_none_allowed(call)) {
		log_debug("call %s xid 0x%08x from %s: AUTH_NONE refused (server.auth_none)",
			  call->desc->name, call->hdr.xid, conn->peer_str);
		stats.rpc_auth_tooweak++;
		call_reply_auth_error(call, RPC_AUTH_TOOWEAK);
		return;
	}

	const uint8_t *args = record + call->hdr.args_offset;
	size_t args_len = len - call->hdr.args_offset;
	int rc = args_check(call->desc->prog, call->desc->proc, args, args_len, nfsd.max_payload);
	if (rc == -EILSEQ) {
		log_debug("call %s xid 0x%08x from %s: a path holding a NUL byte", call->desc->name,
			  call->hdr.xid, conn->peer_str);
		call_reply_status(call, NFS3ERR_INVAL_STATUS);
		return;
	}
	if (rc != 0) {
		log_debug("call %s xid 0x%08x from %s: malformed arguments", call->desc->name,
			  call->hdr.xid, conn->peer_str);
		call_reply_rpc_error(call, RPC_GARBAGE_ARGS);
		return;
	}
	if (call_check_drc(call, args, args_len))
		return;

	if (call->desc->decode_args) {
		call->args = xcalloc(1, call->desc->args_size);
		zdrmem_create(&call->args_zdr, (char *)args, (uint32_t)args_len, ZDR_DECODE);
		call->args_zdr_live = 1;
		if (!call->desc->decode_args(&call->args_zdr, call->args) ||
		    zdr_getpos(&call->args_zdr) > args_len) {
			call_reply_rpc_error(call, RPC_GARBAGE_ARGS);
			return;
		}
	}
	/* a big reply is charged to the connection while the call runs */
	size_t reply_bytes = reply_size_hint(call);
	if (reply_bytes > 8192) {
		conn_charge(conn, reply_bytes);
		call->charge += reply_bytes;
	}
	call->cred = call->hdr.cred;
	squash(&call->cred);
	log_debug("call %s xid 0x%08x from %s uid %u", call->desc->name, call->hdr.xid,
		  conn->peer_str, call->cred.uid);
	nfsd_call_run(call);
}
