/*
 * drc.c — duplicate request cache: a chained hash table of entries plus an
 * LRU list for eviction of completed entries.  See drc.h for the semantics.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/xalloc.h"
#include "proto/drc.h"

struct drc {
	struct drc_entry **buckets;
	size_t nbuckets;       /* power of two */
	size_t count;
	size_t max_entries;
	struct list_node lru;  /* every entry, oldest first */
};

struct drc *drc_new(size_t max_entries)
{
	struct drc *drc = xcalloc(1, sizeof(*drc));

	drc->nbuckets = 64;
	while (drc->nbuckets < max_entries)
		drc->nbuckets *= 2;
	drc->buckets = xcalloc(drc->nbuckets, sizeof(*drc->buckets));
	drc->max_entries = max_entries;
	list_init(&drc->lru);
	return drc;
}

static void entry_free(struct drc_entry *e)
{
	free(e->reply);
	free(e);
}

void drc_free(struct drc *drc)
{
	struct list_node *pos, *tmp;

	if (!drc)
		return;
	list_for_each_safe(pos, tmp, &drc->lru)
		entry_free(list_entry(pos, struct drc_entry, lru));
	free(drc->buckets);
	free(drc);
}

uint32_t drc_checksum(const uint8_t *args, size_t len)
{
	return hash_fnv1a32(HASH_FNV32_OFFSET, args, len < 256 ? len : 256);
}

static size_t key_bucket(const struct drc *drc, const struct drc_key *k)
{
	uint32_t h = hash_fnv1a32(HASH_FNV32_OFFSET, &k->xid, sizeof(k->xid));
	h = hash_fnv1a32(h, k->addr, sizeof(k->addr));
	return h & (drc->nbuckets - 1);
}

static int key_equal(const struct drc_key *a, const struct drc_key *b)
{
	return a->xid == b->xid && a->family == b->family && a->prog == b->prog &&
	       a->vers == b->vers && a->proc == b->proc && a->args_len == b->args_len &&
	       a->csum == b->csum && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static void entry_unlink(struct drc *drc, struct drc_entry *e)
{
	struct drc_entry **pp = &drc->buckets[key_bucket(drc, &e->key)];

	while (*pp && *pp != e)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = e->hash_next;
	list_del(&e->lru);
	drc->count--;
}

/* Evict completed entries, oldest first, until there is room for one more.
 * In-progress entries are never evicted: while they alone fill the table it
 * grows past its bound (the calls in flight bound it), and shrinks back as
 * they complete. */
static void evict_for_insert(struct drc *drc)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &drc->lru) {
		if (drc->count < drc->max_entries)
			return;
		struct drc_entry *e = list_entry(pos, struct drc_entry, lru);
		if (e->done) {
			entry_unlink(drc, e);
			entry_free(e);
		}
	}
}

enum drc_result drc_lookup(struct drc *drc, const struct drc_key *key,
			   struct drc_entry **entry)
{
	size_t b = key_bucket(drc, key);

	for (struct drc_entry *e = drc->buckets[b]; e; e = e->hash_next) {
		if (key_equal(&e->key, key)) {
			*entry = e;
			/* keep recently retransmitted entries around */
			list_del(&e->lru);
			list_add_tail(&drc->lru, &e->lru);
			return e->done ? DRC_REPLAY : DRC_IN_PROGRESS;
		}
	}
	if (drc->count >= drc->max_entries)
		evict_for_insert(drc);
	struct drc_entry *e = xcalloc(1, sizeof(*e));
	e->key = *key;
	e->hash_next = drc->buckets[b];
	drc->buckets[b] = e;
	list_add_tail(&drc->lru, &e->lru);
	drc->count++;
	*entry = e;
	return DRC_MISS;
}

void drc_complete(struct drc *drc, struct drc_entry *e, const uint8_t *reply, size_t len)
{
	(void)drc;
	free(e->reply);
	e->reply = xmalloc(len ? len : 1);
	memcpy(e->reply, reply, len);
	e->reply_len = len;
	e->done = 1;
}

void drc_abandon(struct drc *drc, struct drc_entry *e)
{
	entry_unlink(drc, e);
	entry_free(e);
}

size_t drc_count(const struct drc *drc)
{
	return drc->count;
}
