/*
 * fuzz_record.c — libFuzzer target for RPC record marking (proto/rpc_record.c,
 * RFC 5531 §11).
 *
 * Input: 2 bytes of max_record (1..4096), 1 byte k (0..15), the stream, then
 * k bytes at the end that choose the sizes of the pieces the stream is fed
 * in (cycled; 0xff means "all the rest"; none: the whole stream at once).
 * A model reads the same stream in one piece; every record the reassembler
 * completes must have the length and bytes the fragments said, TOO_BIG must
 * come exactly where the model says, nothing is held past max_record nor
 * past twice the bytes received, rpc_record_pending() says whether part of
 * a record is held, and rpc_record_free() leaves nothing behind.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/rpc_record.h"
#include "tests/fuzz/fuzz.h"

/* The model's idea of the stream: records, then how it ends. */
struct model {
	const uint8_t *s;
	size_t n, pos;     /* stream, its length, bytes the model has read */
	uint8_t *rec;      /* record being assembled */
	size_t rec_len;
	int too_big;       /* the stream ended with a fragment past max_record */
	size_t too_big_at; /* stream offset just after that fragment's header */
};

/* Next record of the model: 1 and (*out, *out_len) owned by the model until
 * the next call, or 0 when the stream holds no further whole record. */
static int model_next(struct model *m, size_t max_record, const uint8_t **out, size_t *out_len)
{
	m->rec_len = 0;
	for (;;) {
		if (m->n - m->pos < 4)
			return 0;
		uint32_t h = (uint32_t)m->s[m->pos] << 24 | (uint32_t)m->s[m->pos + 1] << 16 |
			     (uint32_t)m->s[m->pos + 2] << 8 | m->s[m->pos + 3];
		size_t frag = h & 0x7fffffffu;
		m->pos += 4;
		if (frag > max_record - m->rec_len) {
			m->too_big = 1;
			m->too_big_at = m->pos;
			return 0;
		}
		if (m->n - m->pos < frag)
			return 0;
		memcpy(m->rec + m->rec_len, m->s + m->pos, frag);
		m->rec_len += frag;
		m->pos += frag;
		if (h & 0x80000000u) {
			*out = m->rec;
			*out_len = m->rec_len;
			return 1;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	size_t max_record = 1 + (((size_t)data[0] << 8 | data[1]) % 4096);
	size_t k = data[2] % 16;
	data += 3;
	size -= 3;
	if (k > size)
		k = size;
	const uint8_t *sizes = data + size - k;
	size_t n = size - k;

	/* the stream in a buffer of its own size, so that ASan sees any overread */
	uint8_t *stream = malloc(n ? n : 1);
	memcpy(stream, data, n);
	struct model m = { .s = stream, .n = n, .rec = malloc(max_record) };

	struct rpc_record r;
	rpc_record_init(&r, max_record);
	size_t off = 0, piece = 0, last_end = 0;   /* end of the last record */
	int stopped = 0;
	while (off < n && !stopped) {
		size_t len = n - off;
		if (k) {
			uint8_t b = sizes[piece++ % k];
			if (b != 0xff && (size_t)b + 1 < len)
				len = (size_t)b + 1;
		}
		const uint8_t *p = stream + off;
		while (len > 0) {
			size_t used = (size_t)-1;
			enum rpc_record_status st = rpc_record_feed(&r, p, len, &used);
			FUZZ_CHECK(used <= len);
			FUZZ_CHECK(r.len <= max_record && r.cap <= max_record);
			FUZZ_CHECK(r.cap <= 2 * r.len);   /* a header alone allocates nothing */
			off += used;
			p += used;
			len -= used;
			if (st == RPC_RECORD_COMPLETE) {
				const uint8_t *want;
				size_t want_len, got_len = (size_t)-1;
				FUZZ_CHECK(model_next(&m, max_record, &want, &want_len));
				/* the record ends where the model's does */
				FUZZ_CHECK(off == m.pos);
				uint8_t *got = rpc_record_take(&r, &got_len);
				FUZZ_CHECK(got != NULL);
				FUZZ_CHECK(got_len == want_len);
				FUZZ_CHECK(memcmp(got, want, got_len) == 0);
				free(got);
				last_end = off;
				FUZZ_CHECK(!rpc_record_pending(&r));
			} else if (st == RPC_RECORD_TOO_BIG) {
				const uint8_t *want;
				size_t want_len;
				FUZZ_CHECK(!model_next(&m, max_record, &want, &want_len));
				FUZZ_CHECK(m.too_big && m.too_big_at == off);
				stopped = 1;   /* the daemon closes the connection */
				break;
			} else {
				FUZZ_CHECK(st == RPC_RECORD_MORE);
				FUZZ_CHECK(len == 0);
			}
		}
	}
	if (!stopped) {
		/* the stream ended inside a record (or between two): the model
		 * finds no further whole record either */
		const uint8_t *want;
		size_t want_len;
		FUZZ_CHECK(!model_next(&m, max_record, &want, &want_len));
		FUZZ_CHECK(!m.too_big);
		/* part of a record is pending after any bytes past the last
		 * one, empty non-last fragments included */
		FUZZ_CHECK(rpc_record_pending(&r) == (n > last_end));
		if (r.len > 0)
			FUZZ_CHECK(rpc_record_pending(&r));
	}
	rpc_record_free(&r);
	rpc_record_free(&r);   /* safe twice, as the header says */
	free(m.rec);
	free(stream);
	return 0;
}
