/*
 * rpc_msg.c — decode of RPC call headers with their AUTH_NONE/AUTH_SYS
 * credentials, and encode of every reply header the server sends
 * (RFC 5531 §9 and appendix A).  Procedure bodies are not handled here.
 */
#include "config.h"

#include <string.h>

#include "proto/rpc_msg.h"
#include "proto/xdr_util.h"

/* authsys_parms inside an opaque_auth body of `len` bytes. */
static int decode_auth_sys(const uint8_t *body, uint32_t len, struct rpc_cred *cred)
{
	struct xdr_cursor c;
	const uint8_t *name;
	uint32_t name_len;

	xdr_cursor_init(&c, body, len);
	if (!xdr_get_u32(&c, &cred->stamp))
		return -1;
	if (!xdr_get_opaque(&c, RPC_AUTH_SYS_MAX_NAME, &name, &name_len))
		return -1;
	/* kept as a C string and sent upstream as one: a NUL inside would
	 * forward another name */
	if (memchr(name, 0, name_len))
		return -1;
	memcpy(cred->machinename, name, name_len);
	cred->machinename[name_len] = '\0';
	if (!xdr_get_u32(&c, &cred->uid) || !xdr_get_u32(&c, &cred->gid))
		return -1;
	if (!xdr_get_u32(&c, &cred->gids_len) || cred->gids_len > RPC_AUTH_SYS_MAX_GIDS)
		return -1;
	for (uint32_t i = 0; i < cred->gids_len; i++)
		if (!xdr_get_u32(&c, &cred->gids[i]))
			return -1;
	/* The body must be exactly the structure: trailing bytes are garbage. */
	return xdr_remaining(&c) == 0 ? 0 : -1;
}

enum rpc_call_status rpc_decode_call(const uint8_t *rec, size_t len,
				     struct rpc_call_hdr *hdr)
{
	struct xdr_cursor c;
	uint32_t mtype, flavor, blen;
	const uint8_t *body;

	memset(hdr, 0, sizeof(*hdr));
	xdr_cursor_init(&c, rec, len);
	if (!xdr_get_u32(&c, &hdr->xid))
		return RPC_CALL_DROP;
	if (!xdr_get_u32(&c, &mtype))
		return RPC_CALL_DROP;
	if (mtype != RPC_MSG_CALL)
		return RPC_CALL_DROP;
	if (!xdr_get_u32(&c, &hdr->rpcvers))
		return RPC_CALL_GARBAGE;
	if (hdr->rpcvers != RPC_VERSION)
		return RPC_CALL_RPC_MISMATCH;
	if (!xdr_get_u32(&c, &hdr->prog) || !xdr_get_u32(&c, &hdr->vers) ||
	    !xdr_get_u32(&c, &hdr->proc))
		return RPC_CALL_GARBAGE;

	/* credential */
	if (!xdr_get_u32(&c, &flavor))
		return RPC_CALL_GARBAGE;
	hdr->cred.flavor = flavor;
	if (!xdr_get_opaque(&c, RPC_AUTH_MAX_BYTES, &body, &blen))
		return RPC_CALL_BADCRED;
	switch (flavor) {
	case RPC_AUTH_NONE:
		break;
	case RPC_AUTH_SYS:
		if (decode_auth_sys(body, blen, &hdr->cred) != 0)
			return RPC_CALL_BADCRED;
		break;
	default:
		return RPC_CALL_BADCRED;
	}

	/* verifier: AUTH_NONE is the only one that goes with these credentials */
	if (!xdr_get_u32(&c, &hdr->verf_flavor))
		return RPC_CALL_GARBAGE;
	if (!xdr_get_opaque(&c, RPC_AUTH_MAX_BYTES, &body, &blen))
		return RPC_CALL_BADVERF;
	if (hdr->verf_flavor != RPC_AUTH_NONE)
		return RPC_CALL_BADVERF;
	hdr->args_offset = c.pos;
	return RPC_CALL_OK;
}

static size_t put_reply_start(uint8_t *out, uint32_t xid, uint32_t reply_stat)
{
	xdr_put_be32(out, xid);
	xdr_put_be32(out + 4, RPC_MSG_REPLY);
	xdr_put_be32(out + 8, reply_stat);
	return 12;
}

size_t rpc_encode_accepted(uint8_t *out, uint32_t xid, enum rpc_accept_stat stat,
			   uint32_t low, uint32_t high)
{
	size_t n = put_reply_start(out, xid, 0 /* MSG_ACCEPTED */);

	xdr_put_be32(out + n, RPC_AUTH_NONE);  /* verifier flavor */
	xdr_put_be32(out + n + 4, 0);          /* verifier length */
	xdr_put_be32(out + n + 8, stat);
	n += 12;
	if (stat == RPC_PROG_MISMATCH) {
		xdr_put_be32(out + n, low);
		xdr_put_be32(out + n + 4, high);
		n += 8;
	}
	return n;
}

size_t rpc_encode_rpc_mismatch(uint8_t *out, uint32_t xid, uint32_t low, uint32_t high)
{
	size_t n = put_reply_start(out, xid, 1 /* MSG_DENIED */);

	xdr_put_be32(out + n, 0 /* RPC_MISMATCH */);
	xdr_put_be32(out + n + 4, low);
	xdr_put_be32(out + n + 8, high);
	return n + 12;
}

size_t rpc_encode_auth_error(uint8_t *out, uint32_t xid, enum rpc_auth_stat stat)
{
	size_t n = put_reply_start(out, xid, 1 /* MSG_DENIED */);

	xdr_put_be32(out + n, 1 /* AUTH_ERROR */);
	xdr_put_be32(out + n + 4, stat);
	return n + 8;
}
