/*
 * cred.c — the table of shared write-back credentials (cred.h): a chained
 * hash table of reference-counted copies, looked up by a hash of the
 * fields cred_equal() compares.  Owns nothing else; who holds a reference
 * (dirty.c, for an object's writer) is the caller's business.
 */
#include "config.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cred.h"
#include "common/hash.h"
#include "common/macros.h"
#include "common/xalloc.h"

#define CRED_BUCKETS_MIN 16

struct cred_entry {
	struct rpc_cred cred;           /* the shared copy: what holders point to */
	struct cred_entry *next;        /* the bucket's chain */
	uint32_t hash;                  /* cred_hash(&cred) */
	unsigned refs;                  /* references given out and not released; > 0 */
};

static struct {
	struct cred_entry **buckets;
	size_t nbuckets;                /* power of two, or 0 before the first */
	size_t count;                   /* entries */
} creds;

bool cred_equal(const struct rpc_cred *a, const struct rpc_cred *b)
{
	return a->flavor == b->flavor && a->uid == b->uid && a->gid == b->gid &&
	       a->gids_len == b->gids_len &&
	       memcmp(a->gids, b->gids, a->gids_len * sizeof(a->gids[0])) == 0 &&
	       strcmp(a->machinename, b->machinename) == 0;
}

static uint32_t cred_hash(const struct rpc_cred *c)
{
	uint32_t h = HASH_FNV32_OFFSET;

	h = hash_fnv1a32(h, &c->flavor, sizeof(c->flavor));
	h = hash_fnv1a32(h, &c->uid, sizeof(c->uid));
	h = hash_fnv1a32(h, &c->gid, sizeof(c->gid));
	h = hash_fnv1a32(h, &c->gids_len, sizeof(c->gids_len));
	h = hash_fnv1a32(h, c->gids, c->gids_len * sizeof(c->gids[0]));
	return hash_fnv1a32(h, c->machinename, strlen(c->machinename));
}

static void table_grow(void)
{
	size_t n = creds.nbuckets ? creds.nbuckets * 2 : CRED_BUCKETS_MIN;
	struct cred_entry **b = xcalloc(n, sizeof(*b));

	for (size_t i = 0; i < creds.nbuckets; i++) {
		struct cred_entry *e = creds.buckets[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(creds.buckets);
	creds.buckets = b;
	creds.nbuckets = n;
}

const struct rpc_cred *cred_intern(const struct rpc_cred *cred)
{
	uint32_t h = cred_hash(cred);
	struct cred_entry *e;

	if (creds.nbuckets)
		for (e = creds.buckets[h & (creds.nbuckets - 1)]; e; e = e->next)
			if (e->hash == h && cred_equal(&e->cred, cred)) {
				e->refs++;
				return &e->cred;
			}
	if (creds.count + 1 > creds.nbuckets)
		table_grow();
	e = xcalloc(1, sizeof(*e));
	e->cred.flavor = cred->flavor;
	e->cred.stamp = cred->stamp;
	strcpy(e->cred.machinename, cred->machinename);
	e->cred.uid = cred->uid;
	e->cred.gid = cred->gid;
	assert(cred->gids_len <= RPC_AUTH_SYS_MAX_GIDS);
	e->cred.gids_len = cred->gids_len;
	memcpy(e->cred.gids, cred->gids, cred->gids_len * sizeof(cred->gids[0]));
	e->hash = h;
	e->refs = 1;
	e->next = creds.buckets[h & (creds.nbuckets - 1)];
	creds.buckets[h & (creds.nbuckets - 1)] = e;
	creds.count++;
	return &e->cred;
}

void cred_release(const struct rpc_cred *cred)
{
	if (!cred)
		return;
	struct cred_entry *e = container_of(cred, struct cred_entry, cred);
	assert(e->refs > 0);
	if (--e->refs > 0)
		return;
	struct cred_entry **pp = &creds.buckets[e->hash & (creds.nbuckets - 1)];
	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	creds.count--;
	free(e);
}

size_t cred_count(void)
{
	return creds.count;
}

void cred_finalise(void)
{
	assert(creds.count == 0);
	free(creds.buckets);
	memset(&creds, 0, sizeof(creds));
}
