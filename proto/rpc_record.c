/*
 * rpc_record.c — reassembly of RPC records from TCP fragments (RFC 5531 §11).
 * Owns the partly assembled record; knows nothing of sockets or RPC headers.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "proto/rpc_record.h"
#include "proto/xdr_util.h"
#include "common/xalloc.h"

void rpc_record_init(struct rpc_record *r, size_t max_record_bytes)
{
	memset(r, 0, sizeof(*r));
	r->max_record = max_record_bytes;
}

void rpc_record_free(struct rpc_record *r)
{
	size_t max_record = r->max_record;

	free(r->buf);
	memset(r, 0, sizeof(*r));
	r->max_record = max_record;
}

int rpc_record_pending(const struct rpc_record *r)
{
	return r->started || r->header_have > 0;
}

/* Room for `need` bytes, where the fragment being read ends at `frag_end`:
 * the buffer grows with the bytes that arrive (at least doubling, never past
 * the fragment's end), so a header announcing a big fragment costs nothing
 * until its bytes come. */
static void record_reserve(struct rpc_record *r, size_t need, size_t frag_end)
{
	if (need <= r->cap)
		return;
	size_t cap = r->cap * 2;
	if (cap < need)
		cap = need;
	/* The last fragment ends the record: nothing goes past its end.  Before
	 * it, more fragments follow: growth stays geometric (a record sent in
	 * many small fragments would otherwise be copied once per fragment). */
	size_t limit = r->last_fragment ? frag_end : r->max_record;
	if (cap > limit)
		cap = limit;
	r->buf = xreallocarray(r->buf, cap, 1);
	r->cap = cap;
}

enum rpc_record_status rpc_record_feed(struct rpc_record *r, const uint8_t *data,
				       size_t len, size_t *consumed)
{
	size_t pos = 0;

	while (pos < len) {
		if (!r->in_fragment) {
			size_t n = 4 - r->header_have;
			if (n > len - pos)
				n = len - pos;
			memcpy(r->header + r->header_have, data + pos, n);
			r->header_have += n;
			pos += n;
			if (r->header_have < 4)
				break;
			uint32_t h = xdr_be32(r->header);
			r->header_have = 0;
			r->started = 1;
			r->last_fragment = (h & RPC_RECORD_LAST_FRAGMENT) != 0;
			r->frag_left = h & ~RPC_RECORD_LAST_FRAGMENT;
			/* Bound the whole record before allocating anything for it. */
			if (r->frag_left > r->max_record - r->len) {
				*consumed = pos;
				return RPC_RECORD_TOO_BIG;
			}
			r->in_fragment = 1;
		}
		size_t n = r->frag_left;
		if (n > len - pos)
			n = len - pos;
		if (n) {
			record_reserve(r, r->len + n, r->len + r->frag_left);
			memcpy(r->buf + r->len, data + pos, n);
			r->len += n;
			r->frag_left -= n;
			pos += n;
		}
		if (r->frag_left == 0) {
			r->in_fragment = 0;
			if (r->last_fragment) {
				*consumed = pos;
				return RPC_RECORD_COMPLETE;
			}
		}
	}
	/* A last fragment of length 0 completes with no bytes after its header. */
	*consumed = pos;
	return RPC_RECORD_MORE;
}

uint8_t *rpc_record_take(struct rpc_record *r, size_t *len_out)
{
	uint8_t *buf = r->buf;

	*len_out = r->len;
	if (!buf)
		buf = xmalloc(1);   /* an empty record still yields a buffer */
	r->buf = NULL;
	r->len = r->cap = 0;
	r->started = 0;
	return buf;
}

void rpc_record_mark(uint8_t out[4], uint32_t len)
{
	xdr_put_be32(out, len | RPC_RECORD_LAST_FRAGMENT);
}
