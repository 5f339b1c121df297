/*
 * rpc_msg.h — ONC RPC version 2 call and reply headers (RFC 5531 §9) and the
 * AUTH_NONE / AUTH_SYS credentials (RFC 5531 §14, appendix A).
 *
 * Decoding works on a whole record held in memory and checks every length
 * against both the record and the protocol maxima before reading it.  Nothing
 * here allocates or includes libnfs or <rpc/rpc.h>, so the module is usable
 * (and tested) alone.
 */
#ifndef NFSCACHED_RPC_MSG_H
#define NFSCACHED_RPC_MSG_H

#include <stddef.h>
#include <stdint.h>

#define RPC_VERSION 2
#define RPC_MSG_CALL 0
#define RPC_MSG_REPLY 1

#define RPC_AUTH_NONE 0
#define RPC_AUTH_SYS 1
#define RPC_AUTH_MAX_BYTES 400     /* opaque_auth body limit, RFC 5531 §8.2 */
#define RPC_AUTH_SYS_MAX_NAME 255  /* machinename<255> */
#define RPC_AUTH_SYS_MAX_GIDS 16   /* gids<16> */

/* accept_stat (RFC 5531 §9) */
enum rpc_accept_stat {
	RPC_SUCCESS = 0,
	RPC_PROG_UNAVAIL = 1,
	RPC_PROG_MISMATCH = 2,
	RPC_PROC_UNAVAIL = 3,
	RPC_GARBAGE_ARGS = 4,
	RPC_SYSTEM_ERR = 5,
};

/* auth_stat (RFC 5531 §9) */
enum rpc_auth_stat {
	RPC_AUTH_OK = 0,
	RPC_AUTH_BADCRED = 1,
	RPC_AUTH_REJECTEDCRED = 2,
	RPC_AUTH_BADVERF = 3,
	RPC_AUTH_REJECTEDVERF = 4,
	RPC_AUTH_TOOWEAK = 5,
};

/* An AUTH_SYS credential (authsys_parms), copied out of the record. */
struct rpc_cred {
	uint32_t flavor;                        /* RPC_AUTH_NONE or RPC_AUTH_SYS */
	uint32_t stamp;
	char machinename[RPC_AUTH_SYS_MAX_NAME + 1];  /* NUL-terminated */
	uint32_t uid;
	uint32_t gid;
	uint32_t gids_len;                      /* 0..RPC_AUTH_SYS_MAX_GIDS */
	uint32_t gids[RPC_AUTH_SYS_MAX_GIDS];
};

struct rpc_call_hdr {
	uint32_t xid;
	uint32_t rpcvers;
	uint32_t prog;
	uint32_t vers;
	uint32_t proc;
	struct rpc_cred cred;
	uint32_t verf_flavor;
	size_t args_offset;   /* where the procedure arguments start in the record */
};

/* What a call header decode concluded; the caller maps it to a reply. */
enum rpc_call_status {
	RPC_CALL_OK = 0,
	RPC_CALL_DROP,          /* no xid, or not a CALL: nothing to reply to */
	RPC_CALL_RPC_MISMATCH,  /* rpcvers != 2: MSG_DENIED RPC_MISMATCH 2..2 */
	RPC_CALL_BADCRED,       /* malformed or unsupported credential: AUTH_ERROR */
	RPC_CALL_BADVERF,       /* malformed verifier: AUTH_ERROR AUTH_BADVERF */
	RPC_CALL_GARBAGE,       /* header truncated after the xid: GARBAGE_ARGS */
};

/*
 * Decode the call header at the start of a record of `len` bytes.
 * Fills *hdr (xid is valid for every status but RPC_CALL_DROP).  Credentials
 * other than AUTH_NONE and AUTH_SYS give RPC_CALL_BADCRED with
 * hdr->cred.flavor set to the flavor seen, as does an AUTH_SYS machine name
 * holding a NUL byte (it could not be forwarded as it came).  Never reads
 * outside `rec`.
 */
enum rpc_call_status rpc_decode_call(const uint8_t *rec, size_t len,
				     struct rpc_call_hdr *hdr);

/* Sizes of the reply headers encoded below, bytes. */
#define RPC_REPLY_HDR_BYTES 24          /* accepted, SUCCESS */
#define RPC_REPLY_MAX_HDR_BYTES 32      /* accepted PROG_MISMATCH with low/high */

/*
 * Encode an accepted reply header (xid, REPLY, MSG_ACCEPTED, AUTH_NONE
 * verifier, accept_stat) into `out`, which must hold RPC_REPLY_MAX_HDR_BYTES.
 * For RPC_PROG_MISMATCH, `low` and `high` follow.  Returns the bytes written.
 */
size_t rpc_encode_accepted(uint8_t *out, uint32_t xid, enum rpc_accept_stat stat,
			   uint32_t low, uint32_t high);

/* Encode MSG_DENIED RPC_MISMATCH (versions low..high supported).  Returns bytes
 * written (24); `out` must hold RPC_REPLY_MAX_HDR_BYTES. */
size_t rpc_encode_rpc_mismatch(uint8_t *out, uint32_t xid, uint32_t low, uint32_t high);

/* Encode MSG_DENIED AUTH_ERROR with `stat`.  Returns bytes written (20). */
size_t rpc_encode_auth_error(uint8_t *out, uint32_t xid, enum rpc_auth_stat stat);

#endif
