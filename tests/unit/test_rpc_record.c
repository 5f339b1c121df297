/*
 * test_rpc_record.c — RPC record marking reassembly (proto/rpc_record.c,
 * RFC 5531 §11): records fed whole, in every two-piece split and byte by
 * byte; back-to-back records; empty fragments; the max_record bound, checked
 * before anything is allocated.
 */
#include <stdlib.h>

#include "common/xalloc.h"

/* Count the module's allocations to prove that a bad length allocates nothing
 * and that no buffer ever exceeds max_record. */
static size_t alloc_calls;
static size_t alloc_max_bytes;

static void *counting_realloc(void *p, size_t n)
{
	alloc_calls++;
	if (n > alloc_max_bytes)
		alloc_max_bytes = n;
	return xreallocarray(p, n, 1);
}

#define xreallocarray(p, n, size) counting_realloc((p), (n) * (size))
#include "proto/rpc_record.c"
#undef xreallocarray

#include "tests/unit/tap.h"

#define MAX_STREAM 4096

struct stream {
	uint8_t bytes[MAX_STREAM];
	size_t len;
};

static void put_be32(struct stream *s, uint32_t v)
{
	xdr_put_be32(s->bytes + s->len, v);
	s->len += 4;
}

/* Append one fragment of `len` bytes of `payload`, last fragment if `last`. */
static void put_fragment(struct stream *s, const uint8_t *payload, uint32_t len, int last)
{
	put_be32(s, len | (last ? RPC_RECORD_LAST_FRAGMENT : 0));
	memcpy(s->bytes + s->len, payload, len);
	s->len += len;
}

/* A 3-fragment record carrying the 100 bytes of `payload` (30 + 50 + 20). */
static void make_three_fragments(struct stream *s, uint8_t payload[100])
{
	for (int i = 0; i < 100; i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	s->len = 0;
	put_fragment(s, payload, 30, 0);
	put_fragment(s, payload + 30, 50, 0);
	put_fragment(s, payload + 80, 20, 1);
}

/*
 * Feed `s` in pieces whose boundaries are `cuts` (sorted offsets), collecting
 * up to `max_out` records.  Returns the number of records, or -1 on
 * RPC_RECORD_TOO_BIG or on a consumed count that is out of range.
 */
static int feed_pieces(struct rpc_record *r, const struct stream *s, const size_t *cuts,
		       size_t ncuts, uint8_t **out, size_t *out_len, int max_out)
{
	int nout = 0;
	size_t start = 0;

	for (size_t k = 0; k <= ncuts; k++) {
		size_t end = k < ncuts ? cuts[k] : s->len;
		while (start < end) {
			size_t used = (size_t)-1;
			enum rpc_record_status st =
				rpc_record_feed(r, s->bytes + start, end - start, &used);
			if (st == RPC_RECORD_TOO_BIG || used > end - start)
				return -1;
			start += used;
			if (st == RPC_RECORD_COMPLETE) {
				if (nout == max_out)
					return -1;
				out[nout] = rpc_record_take(r, &out_len[nout]);
				nout++;
			} else if (start != end) {
				return -1;   /* MORE must consume everything */
			}
		}
	}
	return nout;
}

static void free_records(uint8_t **out, int n)
{
	for (int i = 0; i < n; i++)
		free(out[i]);
}

static void test_whole(void)
{
	struct stream s;
	uint8_t payload[100];
	struct rpc_record r;
	size_t used = 0, len = 0;

	make_three_fragments(&s, payload);
	rpc_record_init(&r, 1024);
	is_int(rpc_record_feed(&r, s.bytes, s.len, &used), RPC_RECORD_COMPLETE,
	       "3-fragment record fed whole completes");
	is_int(used, s.len, "whole record consumed");
	uint8_t *rec = rpc_record_take(&r, &len);
	is_int(len, 100, "record length is the sum of the fragments");
	is_mem(rec, payload, 100, "record bytes are the fragment payloads in order");
	free(rec);
	ok(r.buf == NULL && r.len == 0 && r.in_fragment == 0 && r.header_have == 0,
	   "reassembler is empty after take");
	used = 1;
	is_int(rpc_record_feed(&r, s.bytes, 0, &used), RPC_RECORD_MORE, "empty input: MORE");
	is_int(used, 0, "empty input: nothing consumed");
	rpc_record_free(&r);
	rpc_record_free(&r);
	ok(1, "rpc_record_free twice is harmless");
}

static void test_every_split(void)
{
	struct stream s;
	uint8_t payload[100];
	uint8_t *out[2];
	size_t out_len[2];
	int bad = 0;

	make_three_fragments(&s, payload);
	for (size_t cut = 1; cut < s.len; cut++) {
		struct rpc_record r;
		rpc_record_init(&r, 1024);
		int n = feed_pieces(&r, &s, &cut, 1, out, out_len, 2);
		if (n != 1 || out_len[0] != 100 || memcmp(out[0], payload, 100) != 0) {
			diag("split at byte %zu: %d records", cut, n);
			bad++;
		}
		if (n > 0)
			free_records(out, n);
		rpc_record_free(&r);
	}
	is_int(bad, 0, "split in two at every byte boundary (%zu splits): same record", s.len - 1);

	/* one byte at a time */
	size_t cuts[MAX_STREAM];
	for (size_t i = 0; i + 1 < s.len; i++)
		cuts[i] = i + 1;
	struct rpc_record r;
	rpc_record_init(&r, 1024);
	int n = feed_pieces(&r, &s, cuts, s.len - 1, out, out_len, 2);
	is_int(n, 1, "fed one byte at a time: one record");
	ok(n == 1 && out_len[0] == 100 && memcmp(out[0], payload, 100) == 0,
	   "fed one byte at a time: same record");
	if (n > 0)
		free_records(out, n);
	rpc_record_free(&r);
}

static void test_back_to_back(void)
{
	struct stream s;
	uint8_t a[40], b[12];
	struct rpc_record r;
	size_t used, len;

	memset(a, 0xaa, sizeof(a));
	memset(b, 0xbb, sizeof(b));
	s.len = 0;
	put_fragment(&s, a, 16, 0);
	put_fragment(&s, a + 16, 24, 1);
	put_fragment(&s, b, 12, 1);
	size_t first_len = 4 + 16 + 4 + 24;

	rpc_record_init(&r, 1024);
	is_int(rpc_record_feed(&r, s.bytes, s.len, &used), RPC_RECORD_COMPLETE,
	       "two records in one buffer: first completes");
	is_int(used, first_len, "first record: consumed stops at its end");
	uint8_t *rec = rpc_record_take(&r, &len);
	ok(len == 40 && memcmp(rec, a, 40) == 0, "first record intact");
	free(rec);
	size_t used2;
	is_int(rpc_record_feed(&r, s.bytes + used, s.len - used, &used2), RPC_RECORD_COMPLETE,
	       "second record completes from the rest");
	is_int(used + used2, s.len, "everything consumed");
	rec = rpc_record_take(&r, &len);
	ok(len == 12 && memcmp(rec, b, 12) == 0, "second record intact");
	free(rec);
	rpc_record_free(&r);
}

static void test_empty_fragments(void)
{
	struct stream s;
	uint8_t a[20];
	struct rpc_record r;
	size_t used, len;

	memset(a, 0x5c, sizeof(a));
	s.len = 0;
	put_fragment(&s, a, 20, 0);
	put_fragment(&s, a, 0, 1);    /* empty last fragment */
	rpc_record_init(&r, 1024);
	is_int(rpc_record_feed(&r, s.bytes, s.len, &used), RPC_RECORD_COMPLETE,
	       "empty last fragment completes the record");
	is_int(used, s.len, "empty last fragment: header consumed");
	uint8_t *rec = rpc_record_take(&r, &len);
	ok(len == 20 && memcmp(rec, a, 20) == 0, "record before the empty last fragment intact");
	free(rec);

	/* the empty last fragment's header arriving alone */
	is_int(rpc_record_feed(&r, s.bytes, 24, &used), RPC_RECORD_MORE,
	       "first fragment alone: MORE");
	is_int(rpc_record_feed(&r, s.bytes + 24, 4, &used), RPC_RECORD_COMPLETE,
	       "empty last fragment header alone completes");
	rec = rpc_record_take(&r, &len);
	ok(len == 20 && memcmp(rec, a, 20) == 0, "same record");
	free(rec);

	/* an empty first fragment, then data; and a wholly empty record */
	s.len = 0;
	put_fragment(&s, a, 0, 0);
	put_fragment(&s, a, 8, 1);
	put_fragment(&s, a, 0, 1);
	is_int(rpc_record_feed(&r, s.bytes, s.len, &used), RPC_RECORD_COMPLETE,
	       "empty first fragment then data completes");
	rec = rpc_record_take(&r, &len);
	ok(len == 8 && memcmp(rec, a, 8) == 0, "empty first fragment adds nothing");
	free(rec);
	size_t used2;
	is_int(rpc_record_feed(&r, s.bytes + used, s.len - used, &used2), RPC_RECORD_COMPLETE,
	       "a record of one empty last fragment completes");
	rec = rpc_record_take(&r, &len);
	ok(rec != NULL && len == 0, "empty record: a buffer of length 0");
	free(rec);
	rpc_record_free(&r);
}

static void test_too_big(void)
{
	struct rpc_record r;
	uint8_t hdr[4];
	size_t used;
	const size_t max = 1088 * 1024;

	/* a single fragment claiming 2^31-1 bytes */
	alloc_calls = 0;
	rpc_record_init(&r, max);
	xdr_put_be32(hdr, 0x7fffffffu | RPC_RECORD_LAST_FRAGMENT);
	is_int(rpc_record_feed(&r, hdr, 4, &used), RPC_RECORD_TOO_BIG,
	       "last fragment of 2^31-1 bytes: TOO_BIG");
	is_int(alloc_calls, 0, "2^31-1: rejected before any allocation");
	ok(r.buf == NULL && r.cap == 0, "2^31-1: no record buffer");
	rpc_record_free(&r);

	/* the same, not marked last, header arriving a byte at a time */
	alloc_calls = 0;
	rpc_record_init(&r, max);
	xdr_put_be32(hdr, 0x7fffffffu);
	enum rpc_record_status st = RPC_RECORD_MORE;
	for (int i = 0; i < 4 && st == RPC_RECORD_MORE; i++)
		st = rpc_record_feed(&r, hdr + i, 1, &used);
	is_int(st, RPC_RECORD_TOO_BIG, "non-last 2^31-1 fragment, header byte by byte: TOO_BIG");
	is_int(alloc_calls, 0, "non-last 2^31-1: no allocation");
	rpc_record_free(&r);

	/* one byte over max_record in a single fragment */
	alloc_calls = 0;
	rpc_record_init(&r, max);
	xdr_put_be32(hdr, (uint32_t)(max + 1) | RPC_RECORD_LAST_FRAGMENT);
	is_int(rpc_record_feed(&r, hdr, 4, &used), RPC_RECORD_TOO_BIG,
	       "single fragment of max_record+1: TOO_BIG");
	is_int(alloc_calls, 0, "max_record+1: no allocation");
	rpc_record_free(&r);
}

/* A record of `nfrag` fragments; fragment sizes in `sizes`.  Data is a
 * position pattern so reassembly order can be checked. */
static uint8_t *make_big_stream(const uint32_t *sizes, int nfrag, size_t *len_out)
{
	size_t total = 0;

	for (int i = 0; i < nfrag; i++)
		total += 4 + sizes[i];
	uint8_t *p = malloc(total), *q = p;
	if (!p)
		abort();
	size_t payload_pos = 0;
	for (int i = 0; i < nfrag; i++) {
		xdr_put_be32(q, sizes[i] | (i == nfrag - 1 ? RPC_RECORD_LAST_FRAGMENT : 0));
		q += 4;
		for (uint32_t j = 0; j < sizes[i]; j++)
			*q++ = (uint8_t)(payload_pos++ % 251);
	}
	*len_out = total;
	return p;
}

static void test_max_record(void)
{
	const size_t max = 64 * 1024 + 12;   /* not a power of two on purpose */
	struct rpc_record r;
	size_t used, len, slen;

	/* several fragments whose sum is one byte too many */
	uint32_t over[3] = { 30000, 30000, (uint32_t)(max - 60000 + 1) };
	uint8_t *s = make_big_stream(over, 3, &slen);
	rpc_record_init(&r, max);
	alloc_calls = 0;
	alloc_max_bytes = 0;
	enum rpc_record_status st = rpc_record_feed(&r, s, slen, &used);
	is_int(st, RPC_RECORD_TOO_BIG, "3 fragments summing to max_record+1: TOO_BIG");
	is_int(used, 4 + 30000 + 4 + 30000 + 4, "TOO_BIG reported at the offending header");
	ok(alloc_max_bytes <= max, "never allocated more than max_record (%zu <= %zu)",
	   alloc_max_bytes, max);
	rpc_record_free(&r);
	free(s);

	/* exactly max_record in three fragments */
	uint32_t exact[3] = { 30000, 30000, (uint32_t)(max - 60000) };
	s = make_big_stream(exact, 3, &slen);
	rpc_record_init(&r, max);
	alloc_max_bytes = 0;
	st = rpc_record_feed(&r, s, slen, &used);
	is_int(st, RPC_RECORD_COMPLETE, "3 fragments summing to exactly max_record: COMPLETE");
	uint8_t *rec = rpc_record_take(&r, &len);
	is_int(len, max, "record of exactly max_record bytes");
	int pattern_ok = 1;
	for (size_t i = 0; i < len; i++)
		if (rec[i] != (uint8_t)(i % 251)) {
			pattern_ok = 0;
			break;
		}
	ok(pattern_ok, "max_record record bytes in order");
	ok(alloc_max_bytes <= max, "exact max_record: allocation bounded (%zu)", alloc_max_bytes);
	free(rec);
	rpc_record_free(&r);
	free(s);

	/* exactly max_record in one fragment */
	uint32_t one[1] = { (uint32_t)max };
	s = make_big_stream(one, 1, &slen);
	rpc_record_init(&r, max);
	st = rpc_record_feed(&r, s, slen, &used);
	is_int(st, RPC_RECORD_COMPLETE, "one fragment of exactly max_record: COMPLETE");
	rec = rpc_record_take(&r, &len);
	is_int(len, max, "one fragment of max_record: length");
	free(rec);
	rpc_record_free(&r);
	free(s);

	/* the bound applies per record, not per stream */
	uint32_t half[1] = { (uint32_t)(max / 2 + 1) };
	s = make_big_stream(half, 1, &slen);
	rpc_record_init(&r, max);
	int completes = 0;
	for (int i = 0; i < 3; i++) {
		if (rpc_record_feed(&r, s, slen, &used) == RPC_RECORD_COMPLETE && used == slen) {
			completes++;
			free(rpc_record_take(&r, &len));
		}
	}
	is_int(completes, 3, "three records of max_record/2+1 in a row all accepted");
	rpc_record_free(&r);
	free(s);

	/* free mid-record releases the partial buffer (checked by ASan/LSan) */
	s = make_big_stream(exact, 3, &slen);
	rpc_record_init(&r, max);
	is_int(rpc_record_feed(&r, s, slen / 2, &used), RPC_RECORD_MORE, "half a record: MORE");
	rpc_record_free(&r);
	ok(r.buf == NULL, "free mid-record drops the partial record");
	free(s);
}

/* A header announcing a big fragment costs nothing until its bytes come;
 * what arrives is held in at most about twice its size. */
static void test_grows_with_bytes(void)
{
	const size_t max = 1088 * 1024;
	uint32_t one[1] = { 1024 * 1024 };
	struct rpc_record r;
	size_t used, slen;
	uint8_t *s = make_big_stream(one, 1, &slen);

	rpc_record_init(&r, max);
	ok(!rpc_record_pending(&r), "nothing fed: no record pending");
	alloc_max_bytes = 0;
	is_int(rpc_record_feed(&r, s, 2, &used), RPC_RECORD_MORE, "half a header: MORE");
	ok(rpc_record_pending(&r), "half a header: a record is pending");
	is_int(rpc_record_feed(&r, s + 2, 2, &used), RPC_RECORD_MORE, "a 1 MiB fragment's header: MORE");
	ok(r.buf == NULL && r.cap == 0 && alloc_max_bytes == 0,
	   "the header alone allocates nothing (cap %zu)", r.cap);
	ok(rpc_record_pending(&r), "header only: a record is pending");
	is_int(rpc_record_feed(&r, s + 4, 100, &used), RPC_RECORD_MORE, "100 bytes of it: MORE");
	ok(r.len == 100 && r.cap >= 100 && r.cap <= 200, "100 bytes held in %zu", r.cap);
	size_t pos = 104;
	while (pos < 4 + 300000) {
		size_t n = 1460;
		if (n > 4 + 300000 - pos)
			n = 4 + 300000 - pos;
		rpc_record_feed(&r, s + pos, n, &used);
		pos += n;
	}
	ok(r.len == 300000 && r.cap <= 600000, "300,000 bytes in segments of 1460 held in %zu", r.cap);
	is_int(rpc_record_feed(&r, s + pos, slen - pos, &used), RPC_RECORD_COMPLETE, "the rest: COMPLETE");
	ok(r.cap == 1024 * 1024 && alloc_max_bytes <= 1024 * 1024,
	   "never more than the fragment (%zu)", alloc_max_bytes);
	size_t len;
	free(rpc_record_take(&r, &len));
	ok(!rpc_record_pending(&r), "taken: no record pending");
	static const uint8_t empty_first[4] = { 0, 0, 0, 0 };
	is_int(rpc_record_feed(&r, empty_first, 4, &used), RPC_RECORD_MORE,
	       "an empty first fragment: MORE");
	ok(rpc_record_pending(&r), "an empty first fragment: a record is pending");
	rpc_record_free(&r);
	is_int(rpc_record_feed(&r, s, 10, &used), RPC_RECORD_MORE, "a new record begins");
	rpc_record_free(&r);
	ok(!rpc_record_pending(&r) && r.max_record == max,
	   "free forgets the partial record and keeps max_record");
	free(s);
}

/* A record sent in many small fragments grows its buffer geometrically:
 * a few reallocations, not one (and a copy of the record) per fragment. */
static void test_small_fragments(void)
{
	const unsigned nfrag = 16384;
	size_t slen = (size_t)nfrag * 8;
	uint8_t *s = malloc(slen);
	struct rpc_record r;
	size_t used, len;

	for (unsigned i = 0; i < nfrag; i++) {
		uint32_t mark = 4 | (i == nfrag - 1 ? RPC_RECORD_LAST_FRAGMENT : 0);
		s[i * 8] = (uint8_t)(mark >> 24);
		s[i * 8 + 1] = (uint8_t)(mark >> 16);
		s[i * 8 + 2] = (uint8_t)(mark >> 8);
		s[i * 8 + 3] = (uint8_t)mark;
		memcpy(s + i * 8 + 4, &i, 4);
	}
	rpc_record_init(&r, 1088 * 1024);
	alloc_calls = 0;
	is_int(rpc_record_feed(&r, s, slen, &used), RPC_RECORD_COMPLETE,
	       "16384 fragments of 4 bytes: COMPLETE");
	ok(alloc_calls <= 20, "in %zu reallocations", alloc_calls);
	uint8_t *rec = rpc_record_take(&r, &len);
	int in_order = len == (size_t)nfrag * 4;
	for (unsigned i = 0; in_order && i < nfrag; i++)
		in_order = memcmp(rec + i * 4, &i, 4) == 0;
	ok(in_order, "the 65536 bytes in order");
	free(rec);
	rpc_record_free(&r);
	free(s);
}

static void test_mark(void)
{
	uint8_t m[4];
	const uint8_t want[4] = { 0x80, 0x00, 0x01, 0x2c };

	rpc_record_mark(m, 300);
	is_mem(m, want, 4, "rpc_record_mark(300) = 80 00 01 2c");
}

int main(void)
{
	test_whole();
	test_every_split();
	test_back_to_back();
	test_empty_fragments();
	test_too_big();
	test_max_record();
	test_grows_with_bytes();
	test_small_fragments();
	test_mark();
	return done();
}
