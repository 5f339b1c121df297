/*
 * rpc_record.h — RPC record marking over a byte stream (RFC 5531, section 11).
 *
 * A record is one or more fragments, each preceded by a 4-byte header: the
 * high bit marks the last fragment, the low 31 bits give the fragment length.
 * The reassembler takes bytes as they arrive from a socket, in pieces of any
 * size, and yields whole records.  It owns the record buffer until the caller
 * takes it.  It does no I/O and never allocates more than `max_record` bytes
 * plus its own small state, nor more than about twice the bytes received: a
 * fragment header alone allocates nothing.
 */
#ifndef NFSCACHED_RPC_RECORD_H
#define NFSCACHED_RPC_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define RPC_RECORD_LAST_FRAGMENT 0x80000000u
#define RPC_RECORD_MARK_BYTES 4

struct rpc_record {
	size_t max_record;     /* bound on a reassembled record, bytes */
	uint8_t header[4];     /* fragment header being read */
	unsigned header_have;  /* bytes of header[] filled, 0..4 */
	uint32_t frag_left;    /* bytes of the current fragment still to read */
	int last_fragment;     /* the current fragment ends the record */
	int in_fragment;       /* a header was read and its body is pending */
	int started;           /* a header of the record being assembled was read */
	uint8_t *buf;          /* record being assembled (malloc'd) */
	size_t len;            /* bytes in buf */
	size_t cap;            /* bytes allocated for buf */
};

enum rpc_record_status {
	RPC_RECORD_MORE = 0,      /* all input consumed, no whole record yet */
	RPC_RECORD_COMPLETE = 1,  /* a record is ready: rpc_record_take() it */
	RPC_RECORD_TOO_BIG = -1,  /* a fragment would grow the record past max_record */
};

/* Prepare `r` for a stream; `max_record_bytes` must be > 0. */
void rpc_record_init(struct rpc_record *r, size_t max_record_bytes);

/* Release whatever `r` holds and forget a partial record (max_record stays).
 * Safe on an initialised or finished reassembler. */
void rpc_record_free(struct rpc_record *r);

/* 1 when part of a record (a header byte at least) has been fed and the
 * record is not complete yet; 0 otherwise. */
int rpc_record_pending(const struct rpc_record *r);

/*
 * Consume bytes from `data` (`len` bytes) until a record completes or the
 * input is used up.  *consumed is set to the bytes used.  Returns
 * RPC_RECORD_COMPLETE (call again with the rest of the input after taking the
 * record), RPC_RECORD_MORE, or RPC_RECORD_TOO_BIG, after which the stream is
 * out of sync and the connection must be closed.  Empty fragments are allowed.
 */
enum rpc_record_status rpc_record_feed(struct rpc_record *r, const uint8_t *data,
				       size_t len, size_t *consumed);

/*
 * Take the completed record: returns the malloc'd buffer (caller frees it with
 * free()) and sets *len_out.  Only valid right after RPC_RECORD_COMPLETE.
 */
uint8_t *rpc_record_take(struct rpc_record *r, size_t *len_out);

/* Write a single-fragment record mark for a `len`-byte record into out[4]. */
void rpc_record_mark(uint8_t out[4], uint32_t len);

#endif
