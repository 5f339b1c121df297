/*
 * test_drc.c — the duplicate request cache (proto/drc.c): miss, in progress,
 * replay of the stored reply, every key field telling calls apart, abandon,
 * and eviction (bounded, oldest completed first, never an in-progress entry).
 */
#include <stdlib.h>
#include <sys/socket.h>

#include "proto/drc.c"

#include "tests/unit/tap.h"

static struct drc_key key_for(uint32_t xid)
{
	struct drc_key k;

	memset(&k, 0, sizeof(k));
	k.family = AF_INET;
	k.addr[0] = 127;
	k.addr[3] = 1;
	k.xid = xid;
	k.prog = 100003;
	k.vers = 3;
	k.proc = 12;   /* REMOVE */
	k.args_len = 48;
	k.csum = drc_checksum((const uint8_t *)"remove this file, please........................", 48);
	return k;
}

/* Whether an entry with `key` is held, found without touching the LRU order. */
static struct drc_entry *held(const struct drc *drc, const struct drc_key *key)
{
	for (struct drc_entry *e = drc->buckets[key_bucket(drc, key)]; e; e = e->hash_next)
		if (key_equal(&e->key, key))
			return e;
	return NULL;
}

static void complete_with(struct drc *drc, struct drc_entry *e, uint32_t tag)
{
	uint8_t reply[32];

	memset(reply, (int)(tag & 0xff), sizeof(reply));
	drc_complete(drc, e, reply, sizeof(reply));
}

static void test_basic(void)
{
	struct drc *drc = drc_new(16);
	struct drc_key k = key_for(0x1001);
	struct drc_entry *e = NULL, *e2 = NULL;

	is_int(drc_count(drc), 0, "new cache is empty");
	is_int(drc_lookup(drc, &k, &e), DRC_MISS, "first sighting: MISS");
	ok(e != NULL && !e->done, "MISS inserted an in-progress entry");
	is_int(drc_count(drc), 1, "count 1 after the miss");
	is_int(drc_lookup(drc, &k, &e2), DRC_IN_PROGRESS, "retransmission while running: IN_PROGRESS");
	ok(e2 == e, "IN_PROGRESS returns the same entry");
	is_int(drc_count(drc), 1, "IN_PROGRESS inserts nothing");

	uint8_t reply[100];
	for (int i = 0; i < 100; i++)
		reply[i] = (uint8_t)(i ^ 0x5a);
	uint8_t saved[100];
	memcpy(saved, reply, sizeof(reply));
	drc_complete(drc, e, reply, sizeof(reply));
	memset(reply, 0, sizeof(reply));   /* the cache must hold its own copy */
	e2 = NULL;
	is_int(drc_lookup(drc, &k, &e2), DRC_REPLAY, "after drc_complete: REPLAY");
	ok(e2 == e, "REPLAY returns the entry");
	is_int(e2 ? e2->reply_len : 0, 100, "replayed reply length");
	is_mem(e2 ? e2->reply : NULL, saved, 100, "replayed reply bytes identical (a copy)");
	is_int(drc_lookup(drc, &k, &e2), DRC_REPLAY, "second retransmission: REPLAY again");
	is_int(drc_count(drc), 1, "REPLAY inserts nothing");

	/* each key field tells calls apart */
#define CASE(name, stmt) do { \
		struct drc_key v = key_for(0x1001); \
		stmt; \
		struct drc_entry *ve = NULL; \
		size_t before = drc_count(drc); \
		is_int(drc_lookup(drc, &v, &ve), DRC_MISS, "different %s: MISS", name); \
		ok(ve != e && drc_count(drc) == before + 1, "different %s: a new entry", name); \
	} while (0)
	CASE("checksum", v.csum ^= 1);
	CASE("procedure", v.proc = 8);
	CASE("IPv4 address", v.addr[3] = 2);
	CASE("address family", v.family = AF_INET6);
	CASE("xid", v.xid = 0x1002);
	CASE("argument length", v.args_len = 52);
	CASE("program", v.prog = 100005);
	CASE("version", v.vers = 2);
#undef CASE
	/* the original is untouched by all that */
	is_int(drc_lookup(drc, &k, &e2), DRC_REPLAY, "original still REPLAY among the others");

	/* IPv6 addresses: the whole 16 bytes count */
	struct drc_key a6 = key_for(0x2000), b6;
	a6.family = AF_INET6;
	memset(a6.addr, 0, 16);
	a6.addr[15] = 1;
	b6 = a6;
	b6.addr[0] = 0xfe;
	struct drc_entry *ea, *eb;
	is_int(drc_lookup(drc, &a6, &ea), DRC_MISS, "IPv6 ::1: MISS");
	is_int(drc_lookup(drc, &b6, &eb), DRC_MISS, "IPv6 fe00::1, same xid: MISS");
	ok(ea != eb, "IPv6 addresses differing in the first byte: distinct entries");

	drc_free(drc);
	drc_free(NULL);
	ok(1, "drc_free with entries, and drc_free(NULL)");
}

static void test_checksum(void)
{
	uint8_t a[600], b[600];

	for (int i = 0; i < 600; i++)
		a[i] = b[i] = (uint8_t)i;
	is_int(drc_checksum(a, 600), drc_checksum(b, 600), "same bytes: same checksum");
	b[10] ^= 1;
	ok(drc_checksum(a, 600) != drc_checksum(b, 600), "one bit flipped: checksum differs");
	b[10] ^= 1;
	ok(drc_checksum(a, 40) != drc_checksum(a, 44), "different length: checksum differs");
	drc_checksum(a, 0);
	ok(1, "checksum of 0 bytes");
}

static void test_abandon(void)
{
	struct drc *drc = drc_new(8);
	struct drc_key k = key_for(7), other = key_for(8);
	struct drc_entry *e, *o;

	drc_lookup(drc, &other, &o);
	complete_with(drc, o, 8);
	is_int(drc_lookup(drc, &k, &e), DRC_MISS, "abandon: MISS first");
	is_int(drc_count(drc), 2, "abandon: two entries");
	drc_abandon(drc, e);
	is_int(drc_count(drc), 1, "abandon removes the entry");
	ok(held(drc, &k) == NULL, "abandoned entry no longer in the table");
	ok(held(drc, &other) == o, "other entry kept");
	is_int(drc_lookup(drc, &k, &e), DRC_MISS, "after abandon the retransmission runs again: MISS");
	drc_free(drc);
}

static void test_eviction(void)
{
	const size_t max = 4;
	struct drc *drc = drc_new(max);
	struct drc_key k[8];
	struct drc_entry *e[8];

	for (int i = 0; i < 8; i++)
		k[i] = key_for(0x100 + (uint32_t)i);

	/* k0 in progress (the oldest), k1..k3 completed */
	drc_lookup(drc, &k[0], &e[0]);
	for (int i = 1; i < 4; i++) {
		drc_lookup(drc, &k[i], &e[i]);
		complete_with(drc, e[i], (uint32_t)i);
	}
	is_int(drc_count(drc), 4, "full: 4 entries");

	is_int(drc_lookup(drc, &k[4], &e[4]), DRC_MISS, "fifth call: MISS");
	is_int(drc_count(drc), max, "count stays at max_entries");
	ok(held(drc, &k[0]) != NULL, "oldest entry, in progress: kept");
	ok(held(drc, &k[1]) == NULL, "oldest completed entry evicted");
	ok(held(drc, &k[2]) && held(drc, &k[3]) && held(drc, &k[4]), "newer entries kept");

	/* a replay refreshes an entry: k3 then outlives k2 */
	struct drc_entry *tmp;
	is_int(drc_lookup(drc, &k[2], &tmp), DRC_REPLAY, "k2 retransmitted: REPLAY");
	complete_with(drc, e[4], 4);
	is_int(drc_lookup(drc, &k[5], &e[5]), DRC_MISS, "sixth call: MISS");
	ok(held(drc, &k[3]) == NULL, "least recently used completed entry evicted (k3)");
	ok(held(drc, &k[2]) != NULL, "recently replayed k2 kept");
	ok(held(drc, &k[0]) != NULL, "in-progress k0 still kept");
	is_int(drc_count(drc), max, "count stays at max_entries");

	/* many more completed calls: bounded throughout, k0 never evicted */
	int over = 0;
	for (uint32_t x = 0x1000; x < 0x1400; x++) {
		struct drc_key kk = key_for(x);
		struct drc_entry *ee;
		drc_lookup(drc, &kk, &ee);
		complete_with(drc, ee, x);
		if (drc_count(drc) > max)
			over++;
	}
	is_int(over, 0, "1024 more calls: count never above max_entries");
	ok(held(drc, &k[0]) != NULL && !held(drc, &k[0])->done, "in-progress k0 survived all of them");
	drc_free(drc);
}

static void test_all_in_progress(void)
{
	const size_t max = 2;
	struct drc *drc = drc_new(max);
	struct drc_key k[3];
	struct drc_entry *e[3];

	for (int i = 0; i < 3; i++) {
		k[i] = key_for(0x300 + (uint32_t)i);
		is_int(drc_lookup(drc, &k[i], &e[i]), DRC_MISS, "in-progress call %d: MISS", i);
	}
	ok(held(drc, &k[0]) && held(drc, &k[1]) && held(drc, &k[2]),
	   "all entries in progress: none evicted");
	is_int(drc_count(drc), 3, "the table grew past max_entries rather than drop a running call");

	/* once they complete, the bound is restored */
	for (int i = 0; i < 3; i++)
		complete_with(drc, e[i], (uint32_t)i);
	struct drc_key n = key_for(0x3ff);
	struct drc_entry *ne;
	is_int(drc_lookup(drc, &n, &ne), DRC_MISS, "new call after they completed: MISS");
	ok(drc_count(drc) <= max, "count back within max_entries (%zu <= %zu)", drc_count(drc), max);
	ok(held(drc, &n) != NULL, "the new call is held");
	drc_free(drc);
}

int main(void)
{
	test_basic();
	test_checksum();
	test_abandon();
	test_eviction();
	test_all_in_progress();
	return done();
}
