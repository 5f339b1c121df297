/*
 * fuzz_call.c — libFuzzer target for the RPC call header and its credentials
 * (proto/rpc_msg.c, RFC 5531 §9, §14 and appendix A).
 *
 * The input is one record.  rpc_decode_call() must read nothing outside it
 * (the record sits in a buffer of its own size); what it decodes must agree
 * with the bytes (xid, program, version, procedure, flavors, the AUTH_SYS
 * fields) and with the bounds the header promises (args_offset within the
 * record and on a 4-byte boundary, at most 16 gids, machinename
 * NUL-terminated and the wire's name whole, never cut at a NUL); then every reply header encoder runs on the xid, into
 * buffers of exactly RPC_REPLY_MAX_HDR_BYTES.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/rpc_msg.h"
#include "proto/xdr_util.h"
#include "tests/fuzz/fuzz.h"

static uint32_t be32_at(const uint8_t *rec, size_t len, size_t off)
{
	FUZZ_CHECK(off + 4 <= len);
	return xdr_be32(rec + off);
}

/* An AUTH_SYS body at rec + 32 matches what was decoded from it. */
static void check_auth_sys(const uint8_t *rec, size_t len, const struct rpc_cred *cred)
{
	size_t body_len = be32_at(rec, len, 28);
	size_t pos = 32;

	FUZZ_CHECK(body_len <= RPC_AUTH_MAX_BYTES);
	FUZZ_CHECK(cred->stamp == be32_at(rec, len, pos));
	size_t name_len = be32_at(rec, len, pos + 4);
	FUZZ_CHECK(name_len <= RPC_AUTH_SYS_MAX_NAME);
	/* the wire's name whole: one holding a NUL byte is refused */
	size_t copied = strnlen(cred->machinename, sizeof(cred->machinename));
	FUZZ_CHECK(copied == name_len);
	FUZZ_CHECK(memcmp(cred->machinename, rec + pos + 8, copied) == 0);
	pos += 8 + ((name_len + 3) & ~(size_t)3);
	FUZZ_CHECK(cred->uid == be32_at(rec, len, pos));
	FUZZ_CHECK(cred->gid == be32_at(rec, len, pos + 4));
	FUZZ_CHECK(cred->gids_len == be32_at(rec, len, pos + 8));
	FUZZ_CHECK(cred->gids_len <= RPC_AUTH_SYS_MAX_GIDS);
	pos += 12;
	for (uint32_t i = 0; i < cred->gids_len; i++, pos += 4)
		FUZZ_CHECK(cred->gids[i] == be32_at(rec, len, pos));
	/* the body is exactly the structure */
	FUZZ_CHECK(pos == 32 + body_len);
}

static void check_replies(uint32_t xid)
{
	uint8_t *out = malloc(RPC_REPLY_MAX_HDR_BYTES);
	size_t n;

	for (int stat = RPC_SUCCESS; stat <= RPC_SYSTEM_ERR; stat++) {
		n = rpc_encode_accepted(out, xid, (enum rpc_accept_stat)stat, xid ^ 1, xid ^ 2);
		FUZZ_CHECK(n == (stat == RPC_PROG_MISMATCH ? RPC_REPLY_MAX_HDR_BYTES : RPC_REPLY_HDR_BYTES));
		FUZZ_CHECK(xdr_be32(out) == xid && xdr_be32(out + 4) == RPC_MSG_REPLY);
		FUZZ_CHECK(xdr_be32(out + 8) == 0 && xdr_be32(out + 20) == (uint32_t)stat);
		if (stat == RPC_PROG_MISMATCH)
			FUZZ_CHECK(xdr_be32(out + 24) == (xid ^ 1) && xdr_be32(out + 28) == (xid ^ 2));
	}
	n = rpc_encode_rpc_mismatch(out, xid, RPC_VERSION, RPC_VERSION);
	FUZZ_CHECK(n == 24 && xdr_be32(out) == xid && xdr_be32(out + 8) == 1 &&
		   xdr_be32(out + 12) == 0 && xdr_be32(out + 16) == RPC_VERSION);
	for (int stat = RPC_AUTH_OK; stat <= RPC_AUTH_TOOWEAK; stat++) {
		n = rpc_encode_auth_error(out, xid, (enum rpc_auth_stat)stat);
		FUZZ_CHECK(n == 20 && xdr_be32(out) == xid && xdr_be32(out + 8) == 1 &&
			   xdr_be32(out + 12) == 1 && xdr_be32(out + 16) == (uint32_t)stat);
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *rec = malloc(size ? size : 1);
	struct rpc_call_hdr hdr;

	memcpy(rec, data, size);
	memset(&hdr, 0xa5, sizeof(hdr));
	enum rpc_call_status st = rpc_decode_call(rec, size, &hdr);

	/* DROP exactly when there is no xid or the message is not a CALL */
	int is_call = size >= 8 && xdr_be32(rec + 4) == RPC_MSG_CALL;
	FUZZ_CHECK((st == RPC_CALL_DROP) == !is_call);
	if (st != RPC_CALL_DROP)
		FUZZ_CHECK(hdr.xid == xdr_be32(rec));
	if (size >= 12 && is_call)
		FUZZ_CHECK(hdr.rpcvers == xdr_be32(rec + 8));
	if (st == RPC_CALL_RPC_MISMATCH)
		FUZZ_CHECK(hdr.rpcvers != RPC_VERSION);
	if (st == RPC_CALL_BADCRED && hdr.cred.flavor != RPC_AUTH_NONE && hdr.cred.flavor != RPC_AUTH_SYS)
		FUZZ_CHECK(hdr.cred.flavor == be32_at(rec, size, 24));

	if (st == RPC_CALL_OK) {
		FUZZ_CHECK(hdr.rpcvers == RPC_VERSION);
		FUZZ_CHECK(hdr.prog == be32_at(rec, size, 12));
		FUZZ_CHECK(hdr.vers == be32_at(rec, size, 16));
		FUZZ_CHECK(hdr.proc == be32_at(rec, size, 20));
		FUZZ_CHECK(hdr.cred.flavor == be32_at(rec, size, 24));
		FUZZ_CHECK(hdr.cred.flavor == RPC_AUTH_NONE || hdr.cred.flavor == RPC_AUTH_SYS);
		FUZZ_CHECK(hdr.verf_flavor == RPC_AUTH_NONE);
		FUZZ_CHECK(hdr.args_offset <= size);
		FUZZ_CHECK(hdr.args_offset % 4 == 0);
		FUZZ_CHECK(hdr.args_offset >= 40);   /* 6 words, two empty opaque_auth */
		FUZZ_CHECK(hdr.cred.gids_len <= RPC_AUTH_SYS_MAX_GIDS);
		FUZZ_CHECK(memchr(hdr.cred.machinename, '\0', sizeof(hdr.cred.machinename)) != NULL);
		size_t cred_len = be32_at(rec, size, 28);
		size_t verf_at = 32 + ((cred_len + 3) & ~(size_t)3);
		FUZZ_CHECK(hdr.verf_flavor == be32_at(rec, size, verf_at));
		size_t verf_len = be32_at(rec, size, verf_at + 4);
		FUZZ_CHECK(verf_len <= RPC_AUTH_MAX_BYTES);
		FUZZ_CHECK(hdr.args_offset == verf_at + 8 + ((verf_len + 3) & ~(size_t)3));
		if (hdr.cred.flavor == RPC_AUTH_SYS)
			check_auth_sys(rec, size, &hdr.cred);
		else
			FUZZ_CHECK(hdr.cred.gids_len == 0 && hdr.cred.machinename[0] == '\0');
		/* the arguments are readable to the end of the record */
		volatile uint8_t sink = 0;
		for (size_t i = hdr.args_offset; i < size; i++)
			sink ^= rec[i];
		(void)sink;
	}
	if (st != RPC_CALL_DROP)
		check_replies(hdr.xid);
	free(rec);
	return 0;
}
