/*
 * fuzz_drc.c — libFuzzer target for the duplicate request cache (proto/drc.c).
 *
 * Input: one byte of max_entries (1..16), then up to FUZZ_DRC_MAX_OPS
 * operations until the input ends: lookups of keys drawn from a small space (so that they repeat:
 * retransmissions), completions of in-progress entries with reply bytes
 * taken from the input, abandons.  A model of the cache (entries in LRU
 * order, completed ones evicted oldest first) predicts every result: a
 * completed entry replays exactly its bytes, an entry in progress is never
 * evicted, the table holds at most max(max_entries, entries in progress)
 * after an insertion, drc_count() is right; drc_free() frees the rest.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto/drc.h"
#include "tests/fuzz/fuzz.h"

/* Operations per input: enough to fill and evict a table of 16 several times
 * over; more only slows the model (linear scans) down. */
#define FUZZ_DRC_MAX_OPS 64

struct mentry {
	struct drc_key key;
	struct drc_entry *e;     /* the cache's entry */
	int done;
	const uint8_t *reply;    /* into the input */
	size_t reply_len;
};

struct input {
	const uint8_t *p;
	size_t left;
};

static uint8_t next_byte(struct input *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

static void draw_key(struct input *in, struct drc_key *k)
{
	static const uint8_t addrs[4][16] = {
		{ 127, 0, 0, 1 }, { 127, 0, 0, 2 }, { 0xfe, 0x80, [15] = 1 }, { 0 },
	};
	uint8_t b1 = next_byte(in), b2 = next_byte(in), b3 = next_byte(in);

	memset(k, 0, sizeof(*k));
	k->xid = b1;
	memcpy(k->addr, addrs[b2 & 3], sizeof(k->addr));
	k->family = (b2 & 3) == 2 ? AF_INET6 : AF_INET;
	k->prog = b2 & 4 ? 100005 : 100003;
	k->vers = 3;
	k->proc = (b2 >> 3) & 3;
	/* arguments: the next b3 bytes of input (or fewer), not consumed */
	size_t len = b3 < in->left ? b3 : in->left;
	k->args_len = (uint32_t)len + ((b2 >> 5) & 1) * 1000;
	k->csum = drc_checksum(in->p, len);
}

static FUZZ_MODEL int key_same(const struct drc_key *a, const struct drc_key *b)
{
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;

	for (size_t i = 0; i < sizeof(*a); i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/* index of the model's entry with this key, or n */
static FUZZ_MODEL size_t find_entry(const struct mentry *m, size_t n, const struct drc_key *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (key_same(&m[i].key, key))
			break;
	return i;
}

static FUZZ_MODEL size_t count_in_progress(const struct mentry *m, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += !m[i].done;
	return k;
}

/* index of the `pick`-th (modulo their number) entry in progress, or n */
static FUZZ_MODEL size_t pick_in_progress(const struct mentry *m, size_t n, uint8_t pick)
{
	size_t k = count_in_progress(m, n);

	if (!k)
		return n;
	size_t want = pick % k;
	for (size_t i = 0; i < n; i++)
		if (!m[i].done && want-- == 0)
			return i;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t max_entries = 1 + data[0] % 16;
	struct input in = { data + 1, size - 1 };
	struct drc *drc = drc_new(max_entries);
	/* each operation adds at most one entry */
	static struct mentry m[FUZZ_DRC_MAX_OPS];
	size_t n = 0;

	for (int ops = 0; in.left && ops < FUZZ_DRC_MAX_OPS; ops++) {
		uint8_t op = next_byte(&in);
		switch (op % 4) {
		case 0:
		case 1: { /* lookup */
			struct drc_key key;
			struct drc_entry *e = NULL;
			draw_key(&in, &key);
			enum drc_result r = drc_lookup(drc, &key, &e);
			FUZZ_CHECK(e != NULL);
			size_t i = find_entry(m, n, &key);
			if (i < n) {
				struct mentry hit = m[i];
				FUZZ_CHECK(e == hit.e);
				FUZZ_CHECK(r == (hit.done ? DRC_REPLAY : DRC_IN_PROGRESS));
				if (hit.done) {
					FUZZ_CHECK(e->done && e->reply_len == hit.reply_len);
					FUZZ_CHECK(memcmp(e->reply, hit.reply, hit.reply_len) == 0);
				}
				/* most recently used */
				memmove(&m[i], &m[i + 1], (n - i - 1) * sizeof(*m));
				m[n - 1] = hit;
				break;
			}
			FUZZ_CHECK(r == DRC_MISS);
			FUZZ_CHECK(!e->done && e->reply == NULL);
			FUZZ_CHECK(key_same(&e->key, &key));
			/* completed entries go, oldest first, until there is room */
			if (n >= max_entries) {
				size_t w = 0;
				for (size_t j = 0; j < n; j++) {
					if (n - (j - w) < max_entries || !m[j].done)
						m[w++] = m[j];
				}
				n = w;
			}
			m[n++] = (struct mentry){ .key = key, .e = e };
			size_t bound = count_in_progress(m, n);
			if (bound < max_entries)
				bound = max_entries;
			FUZZ_CHECK(drc_count(drc) <= bound);
			break;
		}
		case 2: { /* complete */
			size_t i = pick_in_progress(m, n, next_byte(&in));
			size_t len = next_byte(&in);
			if (len > in.left)
				len = in.left;
			const uint8_t *reply = in.p;
			in.p += len;
			in.left -= len;
			if (i == n)
				break;
			/* from a buffer that goes away: the cache keeps a copy */
			uint8_t *tmp = malloc(len ? len : 1);
			memcpy(tmp, reply, len);
			drc_complete(drc, m[i].e, tmp, len);
			memset(tmp, 0xdd, len);
			free(tmp);
			FUZZ_CHECK(m[i].e->done && m[i].e->reply_len == len);
			m[i].done = 1;
			m[i].reply = reply;
			m[i].reply_len = len;
			break;
		}
		case 3: { /* abandon */
			size_t i = pick_in_progress(m, n, next_byte(&in));
			if (i == n)
				break;
			drc_abandon(drc, m[i].e);
			memmove(&m[i], &m[i + 1], (n - i - 1) * sizeof(*m));
			n--;
			break;
		}
		}
		FUZZ_CHECK(drc_count(drc) == n);
	}
	drc_free(drc);
	return 0;
}
