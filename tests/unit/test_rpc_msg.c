/*
 * test_rpc_msg.c — RPC call header decode and reply header encode
 * (proto/rpc_msg.c, RFC 5531 §9, §14 and appendix A): valid AUTH_SYS and
 * AUTH_NONE calls, truncation at every byte, every credential and verifier
 * limit, and the exact bytes of each reply header.
 *
 * Every decode runs on a heap buffer of exactly the record's size, so a read
 * past the end shows under the --enable-asan build.
 */
#include <stdlib.h>

#include "common/xalloc.h"
#include "proto/rpc_msg.c"

#include "tests/unit/tap.h"

#define NFS_PROGRAM 100003
#define XID 0x1234abcdu

struct buf {
	uint8_t b[2048];
	size_t len;
};

static void u32(struct buf *m, uint32_t v)
{
	xdr_put_be32(m->b + m->len, v);
	m->len += 4;
}

/* opaque<>: length, bytes, zero padding to 4 */
static void opaque(struct buf *m, const void *data, uint32_t n)
{
	u32(m, n);
	memcpy(m->b + m->len, data, n);
	m->len += n;
	while (m->len % 4)
		m->b[m->len++] = 0;
}

struct sys_cred {
	uint32_t stamp;
	const char *name;
	uint32_t name_len;   /* bytes of name sent (may exceed strlen with 'x's) */
	uint32_t uid, gid;
	uint32_t ngids;
	uint32_t trailing;   /* extra bytes inside the body */
};

/* An authsys_parms body. */
static void sys_body(struct buf *body, const struct sys_cred *c)
{
	char name[1024];

	memset(name, 'x', sizeof(name));
	memcpy(name, c->name, strlen(c->name) < c->name_len ? strlen(c->name) : c->name_len);
	body->len = 0;
	u32(body, c->stamp);
	opaque(body, name, c->name_len);
	u32(body, c->uid);
	u32(body, c->gid);
	u32(body, c->ngids);
	for (uint32_t i = 0; i < c->ngids; i++)
		u32(body, 1000 + i);
	for (uint32_t i = 0; i < c->trailing; i++)
		body->b[body->len++] = 0;
}

/* Call header with the given fields; cred body raw (flavor + opaque). */
static void call_hdr(struct buf *m, uint32_t mtype, uint32_t rpcvers, uint32_t cred_flavor,
		     const struct buf *cred_body, uint32_t verf_flavor)
{
	m->len = 0;
	u32(m, XID);
	u32(m, mtype);
	u32(m, rpcvers);
	u32(m, NFS_PROGRAM);
	u32(m, 3);
	u32(m, 1);        /* GETATTR */
	u32(m, cred_flavor);
	opaque(m, cred_body->b, (uint32_t)cred_body->len);
	u32(m, verf_flavor);
	u32(m, 0);
}

static const struct sys_cred default_cred = {
	.stamp = 77, .name = "client.example", .name_len = 14,
	.uid = 1001, .gid = 100, .ngids = 3,
};

static void valid_sys_call(struct buf *m)
{
	struct buf body;

	sys_body(&body, &default_cred);
	call_hdr(m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
}

/* Decode a copy of the first `len` bytes of `m` from an exact-size heap buffer. */
static enum rpc_call_status decode_n(const struct buf *m, size_t len, struct rpc_call_hdr *h)
{
	uint8_t *copy = xmalloc(len ? len : 1);
	memcpy(copy, m->b, len);
	enum rpc_call_status st = rpc_decode_call(copy, len, h);
	free(copy);
	return st;
}

static enum rpc_call_status decode(const struct buf *m, struct rpc_call_hdr *h)
{
	return decode_n(m, m->len, h);
}

static void test_valid_sys(void)
{
	struct buf m;
	struct rpc_call_hdr h;

	valid_sys_call(&m);
	/* procedure arguments after the header: a 4-byte stand-in */
	u32(&m, 0xdeadbeef);
	is_int(decode(&m, &h), RPC_CALL_OK, "AUTH_SYS call decodes");
	is_int(h.xid, XID, "xid");
	is_int(h.rpcvers, 2, "rpcvers");
	is_int(h.prog, NFS_PROGRAM, "prog");
	is_int(h.vers, 3, "vers");
	is_int(h.proc, 1, "proc");
	is_int(h.cred.flavor, RPC_AUTH_SYS, "cred flavor AUTH_SYS");
	is_int(h.cred.stamp, 77, "stamp");
	ok(strcmp(h.cred.machinename, "client.example") == 0, "machinename");
	is_int(h.cred.uid, 1001, "uid");
	is_int(h.cred.gid, 100, "gid");
	is_int(h.cred.gids_len, 3, "gids_len");
	ok(h.cred.gids[0] == 1000 && h.cred.gids[1] == 1001 && h.cred.gids[2] == 1002, "gids");
	is_int(h.verf_flavor, RPC_AUTH_NONE, "verifier flavor");
	/* 6 words, cred flavor + len + body (4 + 4+16 + 4 + 4 + 4 + 12 = 48), verf 2 words */
	is_int(h.args_offset, 24 + 8 + 48 + 8, "args_offset points after the verifier");
	is_int(h.args_offset, m.len - 4, "args_offset = record length - argument bytes");

	/* the limits themselves are accepted: 255-byte name, 16 gids */
	struct buf body;
	struct sys_cred c = default_cred;
	c.name_len = 255;
	c.ngids = 16;
	sys_body(&body, &c);
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_OK, "machinename of 255 bytes and 16 gids accepted");
	is_int(strlen(h.cred.machinename), 255, "255-byte machinename NUL-terminated");
	is_int(h.cred.gids_len, 16, "16 gids");
	is_int(h.cred.gids[15], 1015, "16th gid");
	is_int(h.args_offset, m.len, "args_offset = record length with no arguments");

	/* empty machinename, no gids */
	c = default_cred;
	c.name = "";
	c.name_len = 0;
	c.ngids = 0;
	sys_body(&body, &c);
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_OK, "empty machinename and no gids accepted");
	ok(h.cred.machinename[0] == '\0' && h.cred.gids_len == 0, "empty name, 0 gids");
}

static void test_auth_none(void)
{
	struct buf m, empty = { .len = 0 };
	struct rpc_call_hdr h;

	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_NONE, &empty, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_OK, "AUTH_NONE call decodes");
	is_int(h.cred.flavor, RPC_AUTH_NONE, "cred flavor AUTH_NONE");
	is_int(h.xid, XID, "AUTH_NONE xid");
	is_int(h.args_offset, 40, "AUTH_NONE args_offset = 40");
}

/* Truncate a valid AUTH_SYS header at every byte. */
static void test_truncation(void)
{
	struct buf m;
	struct rpc_call_hdr h;
	int bad_drop = 0, bad_other = 0, bad_xid = 0;

	valid_sys_call(&m);
	for (size_t n = 0; n < m.len; n++) {
		enum rpc_call_status st = decode_n(&m, n, &h);
		if (n < 8) {
			if (st != RPC_CALL_DROP) {
				diag("truncated to %zu bytes: status %d, want DROP", n, st);
				bad_drop++;
			}
			continue;
		}
		if (st != RPC_CALL_GARBAGE && st != RPC_CALL_BADCRED && st != RPC_CALL_BADVERF) {
			diag("truncated to %zu bytes: status %d, want GARBAGE/BADCRED/BADVERF", n, st);
			bad_other++;
		}
		if (h.xid != XID)
			bad_xid++;
	}
	is_int(bad_drop, 0, "truncated inside xid or msg type (0..7 bytes): DROP");
	is_int(bad_other, 0, "truncated at each of bytes 8..%zu: GARBAGE, BADCRED or BADVERF, never OK",
	       m.len - 1);
	is_int(bad_xid, 0, "truncated after the msg type: xid still reported");
	is_int(decode_n(&m, m.len, &h), RPC_CALL_OK, "untruncated header: OK");
}

static void test_bad_creds(void)
{
	struct buf m, body;
	struct rpc_call_hdr h;
	struct sys_cred c;

	c = default_cred;
	c.name_len = 256;
	sys_body(&body, &c);
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "machinename of 256 bytes: BADCRED");
	is_int(h.xid, XID, "BADCRED still reports the xid");

	/* a NUL inside the machine name: it could not be forwarded as it came */
	c = default_cred;
	sys_body(&body, &c);
	body.b[4 + 4 + 3] = 0;
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "machinename holding a NUL byte: BADCRED");

	c = default_cred;
	c.ngids = 17;
	sys_body(&body, &c);
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "17 gids: BADCRED");

	/* a 401-byte credential body, present in full */
	c = default_cred;
	sys_body(&body, &c);
	memset(body.b + body.len, 0, 401 - body.len);
	body.len = 401;
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "credential body of 401 bytes: BADCRED");

	/* ... and with AUTH_NONE: the bound applies before the flavor is looked at */
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_NONE, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "AUTH_NONE body of 401 bytes: BADCRED");

	/* body length claiming more than the record holds */
	valid_sys_call(&m);
	xdr_put_be32(m.b + 28, 300);   /* cred body length; record is ~88 bytes */
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "credential length beyond the record: BADCRED");
	xdr_put_be32(m.b + 28, 0xfffffffcu);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "credential length 0xfffffffc: BADCRED");

	/* trailing bytes inside the AUTH_SYS body */
	c = default_cred;
	c.trailing = 4;
	sys_body(&body, &c);
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "4 trailing bytes inside the AUTH_SYS body: BADCRED");

	/* an AUTH_SYS body cut short inside itself (gids count says 3, 2 present) */
	c = default_cred;
	sys_body(&body, &c);
	body.len -= 4;
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "AUTH_SYS body shorter than its gids: BADCRED");

	/* machinename length beyond the body (but within the record) */
	c = default_cred;
	sys_body(&body, &c);
	xdr_put_be32(body.b + 4, 200);
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	for (int i = 0; i < 64; i++)
		u32(&m, 0);      /* argument bytes the name must not run into */
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "machinename longer than the credential body: BADCRED");

	/* AUTH_DH (flavor 3) with a plausible body */
	struct buf dh = { .len = 0 };
	opaque(&dh, "netname", 7);
	for (int i = 0; i < 4; i++)
		u32(&dh, 0x11111111u * (uint32_t)i);
	call_hdr(&m, RPC_MSG_CALL, 2, 3, &dh, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "AUTH_DH credential: BADCRED");
	is_int(h.cred.flavor, 3, "AUTH_DH: flavor reported");
	is_int(h.xid, XID, "AUTH_DH: xid reported");

	/* RPCSEC_GSS (6) likewise */
	call_hdr(&m, RPC_MSG_CALL, 2, 6, &dh, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_BADCRED, "RPCSEC_GSS credential: BADCRED");
}

static void test_other_header_errors(void)
{
	struct buf m, body;
	struct rpc_call_hdr h;

	sys_body(&body, &default_cred);
	call_hdr(&m, RPC_MSG_CALL, 3, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_RPC_MISMATCH, "rpcvers 3: RPC_MISMATCH");
	is_int(h.xid, XID, "RPC_MISMATCH reports the xid");

	call_hdr(&m, RPC_MSG_CALL, 1, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_RPC_MISMATCH, "rpcvers 1: RPC_MISMATCH");

	/* rpcvers 3 followed by nothing: the version alone decides */
	call_hdr(&m, RPC_MSG_CALL, 3, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode_n(&m, 12, &h), RPC_CALL_RPC_MISMATCH, "rpcvers 3 in a 12-byte record: RPC_MISMATCH");

	call_hdr(&m, RPC_MSG_REPLY, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_DROP, "msg type REPLY: DROP");
	call_hdr(&m, 7, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	is_int(decode(&m, &h), RPC_CALL_DROP, "msg type 7: DROP");

	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_SYS);
	is_int(decode(&m, &h), RPC_CALL_BADVERF, "verifier flavor 1: BADVERF");
	is_int(h.xid, XID, "BADVERF reports the xid");

	/* verifier length beyond the record */
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	xdr_put_be32(m.b + m.len - 4, 64);
	is_int(decode(&m, &h), RPC_CALL_BADVERF, "verifier length beyond the record: BADVERF");
	/* verifier longer than 400 bytes (present) */
	call_hdr(&m, RPC_MSG_CALL, 2, RPC_AUTH_SYS, &body, RPC_AUTH_NONE);
	xdr_put_be32(m.b + m.len - 4, 404);
	memset(m.b + m.len, 0, 404);
	m.len += 404;
	is_int(decode(&m, &h), RPC_CALL_BADVERF, "verifier of 404 bytes: BADVERF");
}

static void test_encoders(void)
{
	uint8_t out[RPC_REPLY_MAX_HDR_BYTES + 16];
	size_t n;

	static const uint8_t success[] = {
		0x12, 0x34, 0xab, 0xcd,  0, 0, 0, 1,  0, 0, 0, 0,
		0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,
	};
	memset(out, 0xee, sizeof(out));
	n = rpc_encode_accepted(out, XID, RPC_SUCCESS, 9, 9);
	is_int(n, 24, "SUCCESS: 24 bytes");
	is_int(n, RPC_REPLY_HDR_BYTES, "SUCCESS: RPC_REPLY_HDR_BYTES");
	is_mem(out, success, sizeof(success), "SUCCESS: xid REPLY MSG_ACCEPTED AUTH_NONE/0 SUCCESS");
	is_int(out[24], 0xee, "SUCCESS: nothing written past the header");

	static const uint8_t garbage[] = {
		0x12, 0x34, 0xab, 0xcd,  0, 0, 0, 1,  0, 0, 0, 0,
		0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 4,
	};
	n = rpc_encode_accepted(out, XID, RPC_GARBAGE_ARGS, 0, 0);
	ok(n == 24 && memcmp(out, garbage, 24) == 0, "GARBAGE_ARGS: 24 bytes, accept_stat 4");

	static const uint8_t progmis[] = {
		0x12, 0x34, 0xab, 0xcd,  0, 0, 0, 1,  0, 0, 0, 0,
		0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 2,
		0, 0, 0, 3,  0, 0, 0, 3,
	};
	memset(out, 0xee, sizeof(out));
	n = rpc_encode_accepted(out, XID, RPC_PROG_MISMATCH, 3, 3);
	is_int(n, 32, "PROG_MISMATCH: 32 bytes");
	is_int(n, RPC_REPLY_MAX_HDR_BYTES, "PROG_MISMATCH: RPC_REPLY_MAX_HDR_BYTES");
	is_mem(out, progmis, sizeof(progmis), "PROG_MISMATCH 3..3: exact bytes");
	n = rpc_encode_accepted(out, XID, RPC_PROG_MISMATCH, 2, 0x01020304u);
	ok(n == 32 && xdr_be32(out + 24) == 2 && xdr_be32(out + 28) == 0x01020304u,
	   "PROG_MISMATCH: low and high in that order");

	static const uint8_t rpcmis[] = {
		0x12, 0x34, 0xab, 0xcd,  0, 0, 0, 1,  0, 0, 0, 1,
		0, 0, 0, 0,  0, 0, 0, 2,  0, 0, 0, 2,
	};
	memset(out, 0xee, sizeof(out));
	n = rpc_encode_rpc_mismatch(out, XID, 2, 2);
	is_int(n, 24, "RPC_MISMATCH: 24 bytes (xid, REPLY, MSG_DENIED, RPC_MISMATCH, low, high)");
	is_mem(out, rpcmis, sizeof(rpcmis), "RPC_MISMATCH 2..2: exact bytes");
	is_int(out[24], 0xee, "RPC_MISMATCH: nothing written past the header");

	static const uint8_t autherr[] = {
		0x12, 0x34, 0xab, 0xcd,  0, 0, 0, 1,  0, 0, 0, 1,
		0, 0, 0, 1,  0, 0, 0, 1,
	};
	memset(out, 0xee, sizeof(out));
	n = rpc_encode_auth_error(out, XID, RPC_AUTH_BADCRED);
	is_int(n, 20, "AUTH_ERROR: 20 bytes (xid, REPLY, MSG_DENIED, AUTH_ERROR, auth_stat)");
	is_mem(out, autherr, sizeof(autherr), "AUTH_ERROR BADCRED: exact bytes");
	is_int(out[20], 0xee, "AUTH_ERROR: nothing written past the header");
	n = rpc_encode_auth_error(out, XID, RPC_AUTH_BADVERF);
	ok(n == 20 && xdr_be32(out + 16) == RPC_AUTH_BADVERF, "AUTH_ERROR BADVERF: auth_stat 3");
	n = rpc_encode_auth_error(out, XID, RPC_AUTH_TOOWEAK);
	ok(n == 20 && xdr_be32(out + 16) == RPC_AUTH_TOOWEAK, "AUTH_ERROR TOOWEAK: auth_stat 5");
}

int main(void)
{
	test_valid_sys();
	test_auth_none();
	test_truncation();
	test_bad_creds();
	test_other_header_errors();
	test_encoders();
	return done();
}
