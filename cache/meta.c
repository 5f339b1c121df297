/*
 * meta.c — the namespace cache (meta.h): nodes (a handle's attributes and
 * what hangs off them: a directory's names and listing, ACCESS results per
 * credential, a symlink's target) in a hash table keyed by handle bytes;
 * names in one hash table keyed by (directory node, name), each also on its
 * directory's list; one LRU list of every node and name, bounded by
 * cache.metadata_max; the per-fsid FSSTAT/FSINFO/PATHCONF answers, the MNT
 * answers per path and the EXPORT list beside them.
 *
 * Not here: the hit and miss counters (the daemon counts them), the data
 * cache (cache.c), anything of the wire (the daemon encodes at once what a
 * query points to).
 *
 * Ownership rules that keep pointers from dangling:
 * - A name holds its child's handle bytes, never the child's node: the
 *   child's attributes are looked up by handle when asked.
 * - A listing points to name records of its own directory, each marked
 *   `listed`; a listed name that goes (evicted, forgotten, made negative,
 *   given another handle) drops the listing first.
 * - A node goes with its names, listing, ACCESS results and target.
 * - Functions that insert entries may evict: they pin what they hold.
 *
 * Time is the loop's (ev_now).  META_NOW() may be defined before this file
 * is compiled (tests/unit/test_meta.c #includes it) to drive time by hand.
 */
#include "config.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cache/meta.h"
#include "common/hash.h"
#include "common/list.h"
#include "common/stats.h"
#include "common/xalloc.h"
#include "proto/limits.h"

#ifndef META_NOW
#define META_NOW() ev_now(meta.loop)
#endif

#define META_BUCKETS_MIN 256     /* initial size of each hash table */
#define META_ACCESS_MAX 8        /* credentials with ACCESS results per node */
#define META_FS_MAX 64           /* file systems with FSSTAT/FSINFO/PATHCONF */
#define META_MNT_MAX 64          /* export paths with an MNT answer */
#define META_FLAVORS_MAX 64      /* auth flavors kept per MNT answer */
#define FATTR3_XDR 84            /* bytes of an fattr3 on the wire (RFC 1813 §2.6) */

enum meta_kind { META_NODE, META_NAME };

/* What the LRU list links: the first member of a node and of a name. */
struct meta_entry {
	struct list_node lru;           /* meta.lru; head = most recently used */
	uint8_t kind;                   /* enum meta_kind */
};

struct meta_access {
	uint64_t stamp;                 /* meta.access_stamp when last recorded */
	uint32_t *gids;                 /* gids_len supplementary groups; NULL when none */
	uint32_t flavor, uid, gid, gids_len;
	uint32_t known;                 /* ACCESS3_* bits asked so far */
	uint32_t granted;               /* of those, the ones granted */
};

struct meta_dirent {
	uint64_t cookie;                /* the upstream's */
	uint64_t fileid;
	struct meta_name *name;         /* of the listing's directory; name->listed */
};

struct meta_listing {
	char verf[NFS3_COOKIEVERFSIZE]; /* the upstream's cookie verifier */
	bool complete;                  /* eof seen: answers READDIR(PLUS) */
	bool plus;                      /* built from READDIRPLUS pages */
	size_t hint;                    /* index after the last answer's last entry */
	size_t n, cap;                  /* entries used, allocated */
	struct meta_dirent *v;
};

struct meta_node {
	struct meta_entry e;            /* kind META_NODE */
	struct meta_node *hash_next;
	uint64_t gen;                   /* meta.seq of our last change; older replies are stale */
	uint64_t access_gen;            /* meta.seq when its ACCESS results were last dropped
					 * (or it was made): older ACCESS replies are stale; a
					 * change that keeps mode and owner (a WRITE) does not
					 * make them so */
	double confirmed;               /* loop time the attributes were confirmed */
	double ttl;                     /* seconds they are trusted; 0 = not at all */
	fattr3 attrs;                   /* valid when has_attrs */
	struct list_node names;         /* struct meta_name.dir_link, of this directory */
	struct list_node waiters;       /* struct meta_waiter.link, for the GETATTR in flight */
	struct list_node linked;        /* on meta.linked while a non-directory with nlink > 1 */
	struct meta_listing *listing;   /* NULL: none being built or complete */
	struct meta_access *access;     /* naccess results */
	char *target;                   /* READLINK answer, NULL when unknown */
	uint32_t hash;                  /* of fh */
	uint32_t pins;                  /* GETATTRs in flight (and short-lived holds): not evicted */
	uint8_t naccess;
	uint8_t fh_len;                 /* 1..NFS3_FHSIZE_MAX */
	bool has_attrs;
	uint8_t fh[];
};

struct meta_name {
	struct meta_entry e;            /* kind META_NAME */
	struct meta_name *hash_next;
	struct meta_node *dir;
	struct list_node dir_link;      /* on dir->names */
	uint32_t hash;                  /* of (dir, name) */
	bool negative;                  /* "no such name" */
	bool listed;                    /* in dir->listing */
	uint8_t fh_len;                 /* 0: negative, or known from a listing without a handle */
	uint8_t fh_cap;                 /* bytes allocated for the handle at data */
	uint8_t data[];                 /* fh_cap handle bytes, then the name, NUL-terminated */
};

struct meta_fs {
	uint64_t fsid;
	double stat_time, info_time, pathconf_time;  /* loop time recorded; < 0: none */
	FSSTAT3resok stat;              /* obj_attributes not kept */
	FSINFO3resok info;
	PATHCONF3resok pathconf;
};

struct meta_mnt {
	char *path;
	double time;                    /* loop time recorded: the oldest is replaced */
	mountres3_ok ok;                /* fhandle and auth_flavors owned */
};

static struct {
	struct ev_loop *loop;
	const struct cache_config *cfg;
	uint64_t seq;                   /* meta_seq() */
	uint64_t dropped_gen;           /* highest gen of a node dropped: older records create no node */
	uint64_t access_stamp;
	struct list_node lru;
	struct list_node linked;        /* nodes of non-directories with more than one link */
	struct meta_node **nodes;       /* hash buckets */
	size_t nnode_buckets, nnodes;
	struct meta_name **names;       /* hash buckets */
	size_t nname_buckets, nnames;
	uint64_t bytes;                 /* meta_bytes() */
	struct meta_fs fs[META_FS_MAX];
	size_t nfs;
	struct meta_mnt mnt[META_MNT_MAX];
	size_t nmnt;
	exports export_list;            /* deep copy, when has_export */
	bool has_export;
	double export_time;
	bool initialised;
} meta;

/* ------------------------------------------------------------------ */
/* memory accounting                                                    */

static void *m_alloc(size_t size)
{
	meta.bytes += size;
	return xcalloc(1, size);
}

static void m_free(void *p, size_t size)
{
	if (!p)
		return;
	meta.bytes -= size;
	free(p);
}

static char *m_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = m_alloc(n);

	memcpy(p, s, n);
	return p;
}

static void m_strfree(char *s)
{
	if (s)
		m_free(s, strlen(s) + 1);
}

static void gauge_update(void)
{
	stats.cache_metadata_entries = meta.nnodes + meta.nnames;
}

/* ------------------------------------------------------------------ */
/* checks and small helpers                                             */

bool meta_on(void)
{
	return meta.cfg && meta.cfg->metadata && meta.cfg->metadata_max > 0;
}

uint64_t meta_seq(void)
{
	return meta.seq;
}

static bool fh_ok(const nfs_fh3 *fh)
{
	return fh && fh->data.data_val && fh->data.data_len >= 1 &&
	       fh->data.data_len <= NFS3_FHSIZE_MAX;
}

static bool name_ok(const char *name)
{
	if (!name)
		return false;
	size_t n = strnlen(name, NFS3_NAME_MAX + 1);
	return n >= 1 && n <= NFS3_NAME_MAX;
}

/* "." and "..": kept in listings, never answered by LOOKUP from the cache
 * (what they name moves with RENAME of a directory, unseen here). */
static bool name_dots(const char *name)
{
	return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

static uint32_t round4(uint32_t n)
{
	return (n + 3) & ~3u;
}

static uint32_t fh_hash(const uint8_t *fh, uint32_t len)
{
	uint64_t h = hash_fnv1a64(HASH_FNV64_OFFSET, fh, len);
	return (uint32_t)(h ^ (h >> 32));
}

static uint32_t name_hash(const struct meta_node *dir, const char *name)
{
	uintptr_t d = (uintptr_t)dir;
	uint64_t h = hash_fnv1a64(HASH_FNV64_OFFSET, &d, sizeof(d));

	h = hash_fnv1a64(h, name, strlen(name));
	return (uint32_t)(h ^ (h >> 32));
}

static const char *name_str(const struct meta_name *n)
{
	return (const char *)n->data + n->fh_cap;
}

static size_t name_size(const struct meta_name *n)
{
	return sizeof(*n) + n->fh_cap + strlen(name_str(n)) + 1;
}

static double now(void)
{
	return META_NOW();
}

/* clamp((now − mtime) / 10, min, max) seconds, acdir* for directories and
 * acreg* for the rest (Linux nfs_update_inode). */
static double ttl_of(const fattr3 *a, double t)
{
	const struct cache_config *c = meta.cfg;
	double lo = a->type == NF3DIR ? (double)c->acdirmin : (double)c->acregmin;
	double hi = a->type == NF3DIR ? (double)c->acdirmax : (double)c->acregmax;
	double ttl = (t - (double)a->mtime.seconds) / 10;

	if (ttl < lo)
		ttl = lo;
	if (ttl > hi)
		ttl = hi;
	return ttl;
}

static bool fresh(const struct meta_node *n)
{
	/* the TTL under the configuration now: a reload that lowers an ac*
	 * key applies to what is cached already */
	return n->has_attrs && n->ttl > 0 && now() - n->confirmed < ttl_of(&n->attrs, n->confirmed);
}

static bool time_eq(const nfstime3 *a, const nfstime3 *b)
{
	return a->seconds == b->seconds && a->nseconds == b->nseconds;
}

/* A change of the object itself: what hangs off it is out of date. */
static bool attrs_differ(const fattr3 *a, const fattr3 *b)
{
	return a->type != b->type || a->fileid != b->fileid || a->size != b->size ||
	       !time_eq(&a->mtime, &b->mtime) || !time_eq(&a->ctime, &b->ctime);
}

/* A change of who may do what: ACCESS results are out of date. */
static bool owner_differs(const fattr3 *a, const fattr3 *b)
{
	return a->mode != b->mode || a->uid != b->uid || a->gid != b->gid;
}

static void touch(struct meta_entry *e)
{
	list_del(&e->lru);
	list_add_head(&meta.lru, &e->lru);
}

/* ------------------------------------------------------------------ */
/* hash tables                                                          */

static void node_table_grow(void)
{
	size_t n = meta.nnode_buckets ? meta.nnode_buckets * 2 : META_BUCKETS_MIN;
	struct meta_node **b = m_alloc(n * sizeof(*b));

	for (size_t i = 0; i < meta.nnode_buckets; i++) {
		struct meta_node *o = meta.nodes[i], *next;
		for (; o; o = next) {
			next = o->hash_next;
			o->hash_next = b[o->hash & (n - 1)];
			b[o->hash & (n - 1)] = o;
		}
	}
	m_free(meta.nodes, meta.nnode_buckets * sizeof(*b));
	meta.nodes = b;
	meta.nnode_buckets = n;
}

static void name_table_grow(void)
{
	size_t n = meta.nname_buckets ? meta.nname_buckets * 2 : META_BUCKETS_MIN;
	struct meta_name **b = m_alloc(n * sizeof(*b));

	for (size_t i = 0; i < meta.nname_buckets; i++) {
		struct meta_name *o = meta.names[i], *next;
		for (; o; o = next) {
			next = o->hash_next;
			o->hash_next = b[o->hash & (n - 1)];
			b[o->hash & (n - 1)] = o;
		}
	}
	m_free(meta.names, meta.nname_buckets * sizeof(*b));
	meta.names = b;
	meta.nname_buckets = n;
}

static struct meta_node *node_find_bytes(const uint8_t *fh, uint32_t len)
{
	if (!meta.nnode_buckets)
		return NULL;
	uint32_t h = fh_hash(fh, len);
	for (struct meta_node *n = meta.nodes[h & (meta.nnode_buckets - 1)]; n; n = n->hash_next)
		if (n->hash == h && n->fh_len == len && memcmp(n->fh, fh, len) == 0)
			return n;
	return NULL;
}

/* The node of `fh`, or NULL (none, or a handle never cached). */
static struct meta_node *node_find(const nfs_fh3 *fh)
{
	if (!fh_ok(fh))
		return NULL;
	return node_find_bytes((const uint8_t *)fh->data.data_val, fh->data.data_len);
}

static struct meta_name *name_find(const struct meta_node *dir, const char *name)
{
	if (!meta.nname_buckets)
		return NULL;
	uint32_t h = name_hash(dir, name);
	for (struct meta_name *n = meta.names[h & (meta.nname_buckets - 1)]; n; n = n->hash_next)
		if (n->hash == h && n->dir == dir && strcmp(name_str(n), name) == 0)
			return n;
	return NULL;
}

static void node_unhash(struct meta_node *n)
{
	struct meta_node **p = &meta.nodes[n->hash & (meta.nnode_buckets - 1)];

	while (*p != n)
		p = &(*p)->hash_next;
	*p = n->hash_next;
}

static void name_unhash(struct meta_name *n)
{
	struct meta_name **p = &meta.names[n->hash & (meta.nname_buckets - 1)];

	while (*p != n)
		p = &(*p)->hash_next;
	*p = n->hash_next;
}

/* ------------------------------------------------------------------ */
/* what hangs off a node                                                */

static void listing_drop(struct meta_node *d)
{
	struct meta_listing *l = d->listing;

	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		l->v[i].name->listed = false;
	m_free(l->v, l->cap * sizeof(*l->v));
	m_free(l, sizeof(*l));
	d->listing = NULL;
}

static void name_free(struct meta_name *n)
{
	if (n->listed)
		listing_drop(n->dir);
	name_unhash(n);
	list_del(&n->dir_link);
	list_del(&n->e.lru);
	meta.nnames--;
	m_free(n, name_size(n));
	gauge_update();
}

/* Drop the names of directory `d`; the number dropped. */
static size_t names_drop(struct meta_node *d)
{
	struct list_node *pos, *tmp;
	size_t dropped = 0;

	list_for_each_safe(pos, tmp, &d->names) {
		name_free(list_entry(pos, struct meta_name, dir_link));
		dropped++;
	}
	return dropped;
}

static bool access_drop(struct meta_node *n)
{
	bool had = n->naccess > 0;

	n->access_gen = meta.seq;
	for (uint8_t i = 0; i < n->naccess; i++)
		m_free(n->access[i].gids, n->access[i].gids_len * sizeof(uint32_t));
	m_free(n->access, n->naccess * sizeof(*n->access));
	n->access = NULL;
	n->naccess = 0;
	return had;
}

/* Drop everything hanging off `n`: true when something was held. */
static bool deps_drop(struct meta_node *n)
{
	bool had = n->listing || n->target;

	had |= names_drop(n) > 0;
	listing_drop(n);
	had |= access_drop(n);
	m_strfree(n->target);
	n->target = NULL;
	return had;
}

static void node_free(struct meta_node *n)
{
	assert(n->pins == 0 && list_empty(&n->waiters));
	deps_drop(n);
	if (n->gen > meta.dropped_gen)
		meta.dropped_gen = n->gen;
	node_unhash(n);
	list_del(&n->e.lru);
	list_del(&n->linked);
	meta.nnodes--;
	m_free(n, sizeof(*n) + n->fh_len);
	gauge_update();
}

/* ------------------------------------------------------------------ */
/* eviction                                                             */

/* Evict the least recently used entry that is not a pinned node: false
 * when there is none. */
static bool evict_one(void)
{
	for (struct list_node *p = meta.lru.prev; p != &meta.lru; p = p->prev) {
		struct meta_entry *e = list_entry(p, struct meta_entry, lru);
		if (e->kind == META_NAME) {
			name_free(container_of(e, struct meta_name, e));
			stats.cache_metadata_evictions++;
			return true;
		}
		struct meta_node *n = container_of(e, struct meta_node, e);
		if (n->pins)
			continue;
		stats.cache_metadata_evictions += 1 + names_drop(n);
		node_free(n);
		return true;
	}
	return false;
}

/* Room for one more entry under cache.metadata_max: false when every
 * entry left is a pinned node (nothing is inserted then). */
static bool make_room(void)
{
	while (meta.nnodes + meta.nnames >= meta.cfg->metadata_max)
		if (!evict_one())
			return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* nodes and names                                                      */

/* A new node for `fh` (not cached yet), without attributes, most recently
 * used; NULL when there is no room.  May evict. */
static struct meta_node *node_new(const nfs_fh3 *fh)
{
	if (!make_room())
		return NULL;
	if (meta.nnodes >= meta.nnode_buckets)
		node_table_grow();
	uint32_t len = fh->data.data_len;
	struct meta_node *n = m_alloc(sizeof(*n) + len);
	n->e.kind = META_NODE;
	n->fh_len = (uint8_t)len;
	memcpy(n->fh, fh->data.data_val, len);
	n->hash = fh_hash(n->fh, len);
	list_init(&n->names);
	list_init(&n->waiters);
	list_init(&n->linked);
	n->access_gen = meta.dropped_gen;   /* a node dropped since may have had other results */
	n->hash_next = meta.nodes[n->hash & (meta.nnode_buckets - 1)];
	meta.nodes[n->hash & (meta.nnode_buckets - 1)] = n;
	list_add_head(&meta.lru, &n->e.lru);
	meta.nnodes++;
	gauge_update();
	return n;
}

/* Attributes `a` confirmed now on `n`.  `ours`: a change made through
 * nfscached explains any difference but an owner change. */
static void attrs_apply(struct meta_node *n, const fattr3 *a, bool ours)
{
	if (n->has_attrs) {
		bool dropped = false;
		if (!ours && attrs_differ(&n->attrs, a))
			dropped = deps_drop(n);
		else if (owner_differs(&n->attrs, a))
			dropped = access_drop(n);
		if (dropped && !ours)
			stats.cache_metadata_invalidations++;
	}
	double t = now();
	n->attrs = *a;
	n->has_attrs = true;
	list_del(&n->linked);
	if (a->type != NF3DIR && a->nlink > 1)
		list_add_head(&meta.linked, &n->linked);
	n->confirmed = t;
	n->ttl = ttl_of(a, t);
	touch(&n->e);
}

static void attrs_record(const nfs_fh3 *fh, const fattr3 *a, uint64_t seq)
{
	struct meta_node *n = node_find(fh);

	if (n) {
		if (seq < n->gen)
			return;
	} else {
		if (!fh_ok(fh) || seq < meta.dropped_gen)
			return;
		n = node_new(fh);
		if (!n)
			return;
	}
	attrs_apply(n, a, false);
}

/* A name record for `name` in `d` with room for a handle of `fh_cap`
 * bytes, most recently used; NULL when there is no room.  May evict: `d`
 * must be pinned. */
static struct meta_name *name_new(struct meta_node *d, const char *name, uint32_t fh_cap)
{
	assert(d->pins > 0);
	if (!make_room())
		return NULL;
	if (meta.nnames >= meta.nname_buckets)
		name_table_grow();
	size_t len = strlen(name);
	struct meta_name *n = m_alloc(sizeof(*n) + fh_cap + len + 1);
	n->e.kind = META_NAME;
	n->dir = d;
	n->fh_cap = (uint8_t)fh_cap;
	memcpy(n->data + fh_cap, name, len + 1);
	n->hash = name_hash(d, name);
	n->hash_next = meta.names[n->hash & (meta.nname_buckets - 1)];
	meta.names[n->hash & (meta.nname_buckets - 1)] = n;
	list_add_tail(&d->names, &n->dir_link);
	list_add_head(&meta.lru, &n->e.lru);
	meta.nnames++;
	gauge_update();
	return n;
}

/* `n` moved to a record with room for a handle of `fh_cap` bytes (no
 * handle yet), in its place in the hash chain, the lists and the listing:
 * not a new entry, so nothing is evicted. */
static struct meta_name *name_grow(struct meta_name *n, uint32_t fh_cap)
{
	const char *name = name_str(n);
	size_t len = strlen(name);
	struct meta_name *g = m_alloc(sizeof(*g) + fh_cap + len + 1);
	struct meta_name **p = &meta.names[n->hash & (meta.nname_buckets - 1)];

	*g = *n;
	g->fh_cap = (uint8_t)fh_cap;
	g->fh_len = 0;
	memcpy(g->data + fh_cap, name, len + 1);
	while (*p != n)
		p = &(*p)->hash_next;
	*p = g;
	list_insert_between(&g->dir_link, n->dir_link.prev, n->dir_link.next);
	list_insert_between(&g->e.lru, n->e.lru.prev, n->e.lru.next);
	if (n->listed) {
		struct meta_listing *l = n->dir->listing;
		for (size_t i = 0; i < l->n; i++)
			if (l->v[i].name == n)
				l->v[i].name = g;
	}
	m_free(n, name_size(n));
	return g;
}

/* `name` in `d` is the handle `fh` (NULL: a name known from a listing
 * without a handle, which keeps a handle already known; its record has
 * room for a handle as long as `d`'s, so that a LOOKUP after a READDIR
 * fills it in place).  May evict: `d` must be pinned.  The record, or
 * NULL when there is no room. */
static struct meta_name *name_set(struct meta_node *d, const char *name, const nfs_fh3 *fh)
{
	struct meta_name *n = name_find(d, name);
	uint32_t len = fh ? fh->data.data_len : 0;

	if (!n) {
		n = name_new(d, name, fh ? len : d->fh_len);
		if (!n)
			return NULL;
	} else if (!fh || (n->fh_len == len && memcmp(n->data, fh->data.data_val, len) == 0)) {
		fh = NULL;      /* nothing new about the handle */
	} else {
		/* Another handle than the listing's: the listing is out of date. */
		if (n->listed && n->fh_len)
			listing_drop(d);
		if (n->fh_cap < len)
			n = name_grow(n, len);
	}
	if (fh) {
		n->fh_len = (uint8_t)len;
		memcpy(n->data, fh->data.data_val, len);
	}
	n->negative = false;
	touch(&n->e);
	return n;
}

/* The directory node `dir` when a name record from a reply sent at `seq`
 * may hang off it (its attributes known, no change of ours since). */
static struct meta_node *dir_for_record(const nfs_fh3 *dir, uint64_t seq)
{
	struct meta_node *d = node_find(dir);

	if (!d || !d->has_attrs || seq < d->gen)
		return NULL;
	return d;
}

static void mnt_free(struct meta_mnt *m)
{
	m_strfree(m->path);
	m_free(m->ok.fhandle.fhandle3_val, m->ok.fhandle.fhandle3_len);
	m_free(m->ok.auth_flavors.auth_flavors_val,
	       m->ok.auth_flavors.auth_flavors_len * sizeof(int));
	memset(m, 0, sizeof(*m));
}

static void export_drop(void);

/* Everything, but nodes pinned (kept without attributes) when `all` is
 * false; the FSSTAT/FSINFO/PATHCONF, MNT and EXPORT answers too. */
static void drop_all(bool all)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &meta.lru) {
		struct meta_entry *e = list_entry(pos, struct meta_entry, lru);
		if (e->kind == META_NAME)
			name_free(container_of(e, struct meta_name, e));
	}
	list_for_each_safe(pos, tmp, &meta.lru) {
		struct meta_node *n = container_of(list_entry(pos, struct meta_entry, lru),
						   struct meta_node, e);
		if (n->pins && !all) {
			deps_drop(n);
			n->has_attrs = false;
			n->ttl = 0;
		} else {
			if (all) {
				n->pins = 0;
				list_init(&n->waiters);
			}
			node_free(n);
		}
	}
	meta.nfs = 0;
	for (size_t i = 0; i < meta.nmnt; i++)
		mnt_free(&meta.mnt[i]);
	meta.nmnt = 0;
	export_drop();
}

/* Off (a reload may turn it off): records are ignored, and what is held
 * goes at the first record.  On: entries past a cache.metadata_max that a
 * reload lowered are evicted at the first record. */
static bool on_or_drop(void)
{
	if (!meta.initialised)
		return false;
	if (meta_on()) {
		/* a reload may have lowered cache.metadata_max */
		while (meta.nnodes + meta.nnames > meta.cfg->metadata_max && evict_one())
			;
		return true;
	}
	if (meta.nnodes + meta.nnames + meta.nfs + meta.nmnt || meta.has_export)
		drop_all(false);
	return false;
}

/* ------------------------------------------------------------------ */
/* start, stop                                                          */

void meta_init(struct ev_loop *loop, const struct cache_config *cfg)
{
	memset(&meta, 0, sizeof(meta));
	meta.loop = loop;
	meta.cfg = cfg;
	list_init(&meta.lru);
	list_init(&meta.linked);
	meta.initialised = true;
	gauge_update();
}

void meta_finalise(void)
{
	if (!meta.initialised)
		return;
	drop_all(true);
	m_free(meta.nodes, meta.nnode_buckets * sizeof(*meta.nodes));
	m_free(meta.names, meta.nname_buckets * sizeof(*meta.names));
	memset(&meta, 0, sizeof(meta));
	gauge_update();
}

void meta_clear(void)
{
	if (!meta.initialised)
		return;
	drop_all(false);
	stats.cache_metadata_invalidations++;
}

/* ------------------------------------------------------------------ */
/* attributes                                                           */

void meta_attrs_record(const nfs_fh3 *fh, const fattr3 *a, uint64_t seq)
{
	if (!on_or_drop() || !a)
		return;
	attrs_record(fh, a, seq);
}

bool meta_attrs_get(const nfs_fh3 *fh, fattr3 *out)
{
	struct meta_node *n;

	if (!meta_on() || !(n = node_find(fh)) || !fresh(n))
		return false;
	*out = n->attrs;
	touch(&n->e);
	return true;
}

void meta_attrs_expire(const nfs_fh3 *fh)
{
	struct meta_node *n = node_find(fh);

	if (n)
		n->ttl = 0;
}

/*
 * With no node for `fh`, the change still creates one (with the post-op
 * attributes, or without attributes) so that replies sent before it are
 * known to be stale; when there is no room for it, every older record
 * that would create a node is refused instead (meta.dropped_gen).
 */
void meta_expire_linked(void)
{
	if (!meta.initialised)
		return;
	for (struct list_node *p = meta.linked.next; p != &meta.linked; p = p->next)
		list_entry(p, struct meta_node, linked)->ttl = 0;
}

static void changed(const nfs_fh3 *fh, const wcc_data *wcc, bool explained);

void meta_changed(const nfs_fh3 *fh, const wcc_data *wcc)
{
	changed(fh, wcc, false);
}

void meta_changed_explained(const nfs_fh3 *fh, const wcc_data *wcc)
{
	changed(fh, wcc, true);
}

static void changed(const nfs_fh3 *fh, const wcc_data *wcc, bool explained)
{
	uint64_t seq = ++meta.seq;

	if (!on_or_drop() || !fh_ok(fh))
		return;
	const fattr3 *post = wcc && wcc->after.attributes_follow ?
			     &wcc->after.post_op_attr_u.attributes : NULL;
	struct meta_node *n = node_find(fh);
	if (!n) {
		n = node_new(fh);
		if (!n) {
			meta.dropped_gen = seq;
			return;
		}
	}
	n->gen = seq;
	if (n->has_attrs) {
		const wcc_attr *pre = wcc && wcc->before.attributes_follow ?
				      &wcc->before.pre_op_attr_u.attributes : NULL;
		bool ours = explained || (pre && pre->size == n->attrs.size &&
					  time_eq(&pre->mtime, &n->attrs.mtime) &&
					  time_eq(&pre->ctime, &n->attrs.ctime));
		if (ours)
			listing_drop(n);
		else if (deps_drop(n))
			stats.cache_metadata_invalidations++;
	}
	if (post)
		attrs_apply(n, post, true);
	else
		n->ttl = 0;
}

/* ------------------------------------------------------------------ */
/* names                                                                */

void meta_name_add(const nfs_fh3 *dir, const char *name, const nfs_fh3 *child,
		   const fattr3 *child_attrs, uint64_t seq)
{
	if (!on_or_drop() || !fh_ok(dir) || !name_ok(name) || !fh_ok(child))
		return;
	if (child_attrs)
		attrs_record(child, child_attrs, seq);
	struct meta_node *d = dir_for_record(dir, seq);
	if (!d)
		return;
	d->pins++;
	name_set(d, name, child);
	d->pins--;
}

void meta_name_negative(const nfs_fh3 *dir, const char *name, uint64_t seq)
{
	if (!on_or_drop() || !fh_ok(dir) || !name_ok(name))
		return;
	struct meta_node *d = dir_for_record(dir, seq);
	if (!d)
		return;
	struct meta_name *n = name_find(d, name);
	if (n) {
		if (n->listed)
			listing_drop(d);
		n->fh_len = 0;
		n->negative = true;
		touch(&n->e);
		return;
	}
	d->pins++;
	n = name_new(d, name, 0);
	if (n)
		n->negative = true;
	d->pins--;
}

void meta_name_forget(const nfs_fh3 *dir, const char *name)
{
	struct meta_node *d = node_find(dir);
	struct meta_name *n;

	if (d && name_ok(name) && (n = name_find(d, name)))
		name_free(n);
}

/* The name record of a LOOKUP-able `name` in `dir`, or NULL. */
static struct meta_name *name_lookup(const nfs_fh3 *dir, const char *name, struct meta_node **d)
{
	if (!meta_on() || !name_ok(name) || name_dots(name))
		return NULL;
	*d = node_find(dir);
	return *d ? name_find(*d, name) : NULL;
}

enum meta_lookup meta_lookup(const nfs_fh3 *dir, const char *name, nfs_fh3 *child,
			     fattr3 *child_attrs, fattr3 *dir_attrs)
{
	struct meta_node *d = NULL, *c;
	struct meta_name *n = name_lookup(dir, name, &d);

	if (!n || !fresh(d))
		return META_LOOKUP_MISS;
	if (n->negative) {
		*dir_attrs = d->attrs;
		touch(&n->e);
		touch(&d->e);
		return META_LOOKUP_NOENT;
	}
	if (!n->fh_len || !(c = node_find_bytes(n->data, n->fh_len)) || !fresh(c))
		return META_LOOKUP_MISS;
	child->data.data_len = n->fh_len;
	child->data.data_val = (char *)n->data;
	*child_attrs = c->attrs;
	*dir_attrs = d->attrs;
	touch(&c->e);
	touch(&n->e);
	touch(&d->e);
	return META_LOOKUP_FOUND;
}

bool meta_name_handle(const nfs_fh3 *dir, const char *name, nfs_fh3 *child)
{
	struct meta_node *d = NULL;
	struct meta_name *n = name_lookup(dir, name, &d);

	if (!n || !n->fh_len)
		return false;
	child->data.data_len = n->fh_len;
	child->data.data_val = (char *)n->data;
	return true;
}

/* ------------------------------------------------------------------ */
/* ACCESS                                                               */

static bool access_same(const struct meta_access *s, const struct rpc_cred *cred)
{
	return s->flavor == cred->flavor && s->uid == cred->uid && s->gid == cred->gid &&
	       s->gids_len == cred->gids_len &&
	       (!s->gids_len || memcmp(s->gids, cred->gids, s->gids_len * sizeof(uint32_t)) == 0);
}

static struct meta_access *access_find(struct meta_node *n, const struct rpc_cred *cred)
{
	for (uint8_t i = 0; i < n->naccess; i++)
		if (access_same(&n->access[i], cred))
			return &n->access[i];
	return NULL;
}

void meta_access_record(const nfs_fh3 *fh, const struct rpc_cred *cred, uint32_t asked,
			uint32_t granted, uint64_t seq)
{
	if (!on_or_drop() || !cred || cred->gids_len > RPC_AUTH_SYS_MAX_GIDS)
		return;
	struct meta_node *n = node_find(fh);
	if (!n || !n->has_attrs || seq < n->access_gen)
		return;
	struct meta_access *s = access_find(n, cred);
	if (!s) {
		if (n->naccess < META_ACCESS_MAX) {
			n->access = xreallocarray(n->access, n->naccess + 1, sizeof(*n->access));
			meta.bytes += sizeof(*n->access);
			s = &n->access[n->naccess++];
		} else {
			s = &n->access[0];
			for (uint8_t i = 1; i < n->naccess; i++)
				if (n->access[i].stamp < s->stamp)
					s = &n->access[i];   /* the oldest goes */
			m_free(s->gids, s->gids_len * sizeof(uint32_t));
		}
		memset(s, 0, sizeof(*s));
		s->flavor = cred->flavor;
		s->uid = cred->uid;
		s->gid = cred->gid;
		s->gids_len = cred->gids_len;
		if (cred->gids_len) {
			s->gids = m_alloc(cred->gids_len * sizeof(uint32_t));
			memcpy(s->gids, cred->gids, cred->gids_len * sizeof(uint32_t));
		}
	}
	s->stamp = ++meta.access_stamp;
	s->known |= asked;
	s->granted = (s->granted & ~asked) | (granted & asked);
	touch(&n->e);
}

bool meta_access_get(const nfs_fh3 *fh, const struct rpc_cred *cred, uint32_t asked,
		     uint32_t *granted)
{
	struct meta_node *n;
	struct meta_access *s;

	if (!meta_on() || !cred || !(n = node_find(fh)) || !fresh(n) ||
	    !(s = access_find(n, cred)) || (s->known & asked) != asked)
		return false;
	*granted = s->granted & asked;
	touch(&n->e);
	return true;
}

/* ------------------------------------------------------------------ */
/* READLINK                                                             */

void meta_readlink_record(const nfs_fh3 *fh, const char *target, uint64_t seq)
{
	if (!on_or_drop() || !target || strnlen(target, NFS3_SYMLINK_WIRE_MAX + 1) > NFS3_SYMLINK_WIRE_MAX)
		return;
	struct meta_node *n = node_find(fh);
	if (!n || !n->has_attrs || seq < n->gen)
		return;
	m_strfree(n->target);
	n->target = m_strdup(target);
	touch(&n->e);
}

const char *meta_readlink(const nfs_fh3 *fh, fattr3 *attrs)
{
	struct meta_node *n;

	if (!meta_on() || !(n = node_find(fh)) || !n->target || !fresh(n))
		return NULL;
	if (attrs)
		*attrs = n->attrs;
	touch(&n->e);
	return n->target;
}

/* ------------------------------------------------------------------ */
/* listings                                                             */

/* May the page asked from `cookie` with verifier `verf`, answered with
 * `reply_verf`, be added to `d`'s listing?  A page from cookie 0 starts a
 * new listing (but a READDIR pass leaves a complete READDIRPLUS listing,
 * which answers READDIR too, alone); a page that does not continue the
 * listing being built drops it.  A complete listing stays until `d`'s
 * attributes change or a new pass replaces it. */
static bool listing_page_begin(struct meta_node *d, uint64_t cookie, const char *verf,
			       const char *reply_verf, bool dir_attrs, bool plus)
{
	struct meta_listing *l = d->listing;

	if (l && l->complete && l->plus && !plus)
		return false;
	if (dir_attrs && cookie == 0) {
		listing_drop(d);
		l = m_alloc(sizeof(*l));
		memcpy(l->verf, reply_verf, NFS3_COOKIEVERFSIZE);
		l->plus = plus;
		d->listing = l;
		return true;
	}
	if (!l || l->complete)
		return false;
	if (dir_attrs && l->plus == plus && l->n > 0 && l->v[l->n - 1].cookie == cookie &&
	    memcmp(l->verf, verf, NFS3_COOKIEVERFSIZE) == 0 &&
	    memcmp(l->verf, reply_verf, NFS3_COOKIEVERFSIZE) == 0)
		return true;
	listing_drop(d);
	return false;
}

/* Append the entry (`name`, `cookie`, `fileid`) to `d`'s listing: false
 * (the listing dropped) when the name record is gone or the listing grew
 * past half of cache.metadata_max. */
static bool listing_append(struct meta_node *d, const char *name, uint64_t cookie,
			   uint64_t fileid)
{
	struct meta_listing *l = d->listing;
	struct meta_name *n = name_find(d, name);

	if (!n || l->n + 1 > meta.cfg->metadata_max / 2) {
		listing_drop(d);
		return false;
	}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		l->v = xreallocarray(l->v, cap, sizeof(*l->v));
		meta.bytes += (cap - l->cap) * sizeof(*l->v);
		l->cap = cap;
	}
	l->v[l->n++] = (struct meta_dirent){ cookie, fileid, n };
	n->listed = true;
	return true;
}

void meta_listing_plus(const nfs_fh3 *dir, uint64_t cookie, const char *verf,
		       const READDIRPLUS3resok *ok, uint64_t seq)
{
	if (!on_or_drop() || !ok || !verf)
		return;
	struct meta_node *d = dir_for_record(dir, seq);
	if (!d || !listing_page_begin(d, cookie, verf, ok->cookieverf,
				      ok->dir_attributes.attributes_follow, true))
		return;
	/* The names first (they may evict), then the entries. */
	d->pins++;
	const entryplus3 *e;
	for (e = ok->reply.entries; e; e = e->nextentry) {
		if (!name_ok(e->name))
			break;
		const nfs_fh3 *fh = e->name_handle.handle_follows && fh_ok(&e->name_handle.post_op_fh3_u.handle) ?
				    &e->name_handle.post_op_fh3_u.handle : NULL;
		if (fh && e->name_attributes.attributes_follow)
			attrs_record(fh, &e->name_attributes.post_op_attr_u.attributes, seq);
		if (!name_set(d, e->name, fh))
			break;
	}
	d->pins--;
	if (e) {
		listing_drop(d);
		return;
	}
	for (e = ok->reply.entries; e && d->listing; e = e->nextentry) {
		if (!listing_append(d, e->name, e->cookie, e->fileid))
			return;
		/* an entry without its handle (the caller may read the directory
		 * but not search it): the listing answers READDIR only, never a
		 * READDIRPLUS of a caller the upstream would give handles to */
		if (!name_dots(e->name) && !e->name_handle.handle_follows)
			d->listing->plus = false;
	}
	if (d->listing && ok->reply.eof)
		d->listing->complete = true;
}

bool meta_listing_held(const nfs_fh3 *dir, bool plus)
{
	struct meta_node *d;

	if (!meta_on() || !(d = node_find(dir)) || !d->has_attrs)
		return false;
	return d->listing && d->listing->complete && (d->listing->plus || !plus);
}

void meta_listing_plain(const nfs_fh3 *dir, uint64_t cookie, const char *verf,
			const READDIR3resok *ok, uint64_t seq)
{
	if (!on_or_drop() || !ok || !verf)
		return;
	struct meta_node *d = dir_for_record(dir, seq);
	if (!d || !listing_page_begin(d, cookie, verf, ok->cookieverf,
				      ok->dir_attributes.attributes_follow, false))
		return;
	d->pins++;
	const entry3 *e;
	for (e = ok->reply.entries; e; e = e->nextentry)
		if (!name_ok(e->name) || !name_set(d, e->name, NULL))
			break;
	d->pins--;
	if (e) {
		listing_drop(d);
		return;
	}
	for (e = ok->reply.entries; e && d->listing; e = e->nextentry)
		if (!listing_append(d, e->name, e->cookie, e->fileid))
			return;
	if (d->listing && ok->reply.eof)
		d->listing->complete = true;
}

/* The complete listing of fresh directory `dir` (from READDIRPLUS when
 * `plus`) and the index to answer from after `cookie`, or NULL. */
static struct meta_listing *listing_for_answer(const nfs_fh3 *dir, uint64_t cookie,
					       const char *verf, bool plus,
					       struct meta_node **d, size_t *start)
{
	struct meta_listing *l;

	if (!meta_on() || !(*d = node_find(dir)) || !fresh(*d) || !(l = (*d)->listing) ||
	    !l->complete || (plus && !l->plus))
		return NULL;
	if (cookie == 0) {
		*start = 0;
		return l;
	}
	if (memcmp(verf, l->verf, NFS3_COOKIEVERFSIZE) != 0)
		return NULL;
	if (l->hint > 0 && l->hint <= l->n && l->v[l->hint - 1].cookie == cookie) {
		*start = l->hint;
		return l;
	}
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].cookie == cookie) {
			*start = i + 1;
			return l;
		}
	}
	return NULL;
}

/* The fresh node a listed name's handle names, or NULL. */
static struct meta_node *dirent_child(const struct meta_dirent *de)
{
	struct meta_node *c;

	if (!de->name->fh_len || !(c = node_find_bytes(de->name->data, de->name->fh_len)))
		return NULL;
	return fresh(c) ? c : NULL;
}

/* XDR bytes of a READDIRPLUS3resok entry (value_follows, fileid, name,
 * cookie, name_attributes, name_handle; RFC 1813 §3.3.17). */
static uint32_t plus_entry_size(const struct meta_dirent *de, bool attrs)
{
	uint32_t n = 4 + 8 + 4 + round4((uint32_t)strlen(name_str(de->name))) + 8;

	n += 4 + (attrs ? FATTR3_XDR : 0);
	n += 4 + (de->name->fh_len ? 4 + round4(de->name->fh_len) : 0);
	return n;
}

/* What counts against dircount: fileid, name, cookie and value_follows. */
static uint32_t dir_entry_size(const struct meta_dirent *de)
{
	return 8 + 4 + round4((uint32_t)strlen(name_str(de->name))) + 8 + 4;
}

/* status, dir_attributes (present), cookieverf, end of list, eof */
#define DIRLIST_FIXED_XDR (4 + 4 + FATTR3_XDR + NFS3_COOKIEVERFSIZE + 4 + 4)

bool meta_readdirplus(const READDIRPLUS3args *a, READDIRPLUS3res *res)
{
	struct meta_node *d;
	struct meta_listing *l;
	size_t start = 0, k = 0;

	memset(res, 0, sizeof(*res));
	if (!a || !(l = listing_for_answer(&a->dir, a->cookie, a->cookieverf, true, &d, &start)))
		return false;
	uint64_t used = DIRLIST_FIXED_XDR, dir_used = 0;
	for (size_t i = start; i < l->n; i++, k++) {
		uint32_t s = plus_entry_size(&l->v[i], dirent_child(&l->v[i]) != NULL);
		uint32_t ds = dir_entry_size(&l->v[i]);
		/* dircount bounds the entries after the first (a hint to
		 * servers: knfsd ignores it, ganesha gives one entry at 0);
		 * maxcount bounds the reply */
		if (used + s > a->maxcount || (k > 0 && dir_used + ds > a->dircount))
			break;
		used += s;
		dir_used += ds;
	}
	touch(&d->e);
	if ((k == 0 && start < l->n) || used > a->maxcount) {
		res->status = NFS3ERR_TOOSMALL;
		res->READDIRPLUS3res_u.resfail.dir_attributes.attributes_follow = 1;
		res->READDIRPLUS3res_u.resfail.dir_attributes.post_op_attr_u.attributes = d->attrs;
		return true;
	}
	READDIRPLUS3resok *ok = &res->READDIRPLUS3res_u.resok;
	entryplus3 *v = k ? xcalloc(k, sizeof(*v)) : NULL;
	for (size_t j = 0; j < k; j++) {
		struct meta_dirent *de = &l->v[start + j];
		struct meta_node *c = dirent_child(de);
		v[j].fileid = de->fileid;
		v[j].name = (char *)name_str(de->name);
		v[j].cookie = de->cookie;
		if (c) {
			v[j].name_attributes.attributes_follow = 1;
			v[j].name_attributes.post_op_attr_u.attributes = c->attrs;
		}
		if (de->name->fh_len) {
			v[j].name_handle.handle_follows = 1;
			v[j].name_handle.post_op_fh3_u.handle.data.data_len = de->name->fh_len;
			v[j].name_handle.post_op_fh3_u.handle.data.data_val = (char *)de->name->data;
		}
		v[j].nextentry = j + 1 < k ? &v[j + 1] : NULL;
		touch(&de->name->e);
	}
	res->status = NFS3_OK;
	ok->dir_attributes.attributes_follow = 1;
	ok->dir_attributes.post_op_attr_u.attributes = d->attrs;
	memcpy(ok->cookieverf, l->verf, NFS3_COOKIEVERFSIZE);
	ok->reply.entries = v;
	ok->reply.eof = start + k == l->n;
	l->hint = start + k;
	return true;
}

void meta_readdirplus_free(READDIRPLUS3res *res)
{
	if (res && res->status == NFS3_OK) {
		free(res->READDIRPLUS3res_u.resok.reply.entries);
		res->READDIRPLUS3res_u.resok.reply.entries = NULL;
	}
}

bool meta_readdir(const READDIR3args *a, READDIR3res *res)
{
	struct meta_node *d;
	struct meta_listing *l;
	size_t start = 0, k = 0;

	memset(res, 0, sizeof(*res));
	if (!a || !(l = listing_for_answer(&a->dir, a->cookie, a->cookieverf, false, &d, &start)))
		return false;
	uint64_t used = DIRLIST_FIXED_XDR;
	for (size_t i = start; i < l->n; i++, k++) {
		uint32_t s = 4 + 8 + 4 + round4((uint32_t)strlen(name_str(l->v[i].name))) + 8;
		if (used + s > a->count)
			break;
		used += s;
	}
	touch(&d->e);
	if ((k == 0 && start < l->n) || used > a->count) {
		res->status = NFS3ERR_TOOSMALL;
		res->READDIR3res_u.resfail.dir_attributes.attributes_follow = 1;
		res->READDIR3res_u.resfail.dir_attributes.post_op_attr_u.attributes = d->attrs;
		return true;
	}
	READDIR3resok *ok = &res->READDIR3res_u.resok;
	entry3 *v = k ? xcalloc(k, sizeof(*v)) : NULL;
	for (size_t j = 0; j < k; j++) {
		struct meta_dirent *de = &l->v[start + j];
		v[j].fileid = de->fileid;
		v[j].name = (char *)name_str(de->name);
		v[j].cookie = de->cookie;
		v[j].nextentry = j + 1 < k ? &v[j + 1] : NULL;
		touch(&de->name->e);
	}
	res->status = NFS3_OK;
	ok->dir_attributes.attributes_follow = 1;
	ok->dir_attributes.post_op_attr_u.attributes = d->attrs;
	memcpy(ok->cookieverf, l->verf, NFS3_COOKIEVERFSIZE);
	ok->reply.entries = v;
	ok->reply.eof = start + k == l->n;
	l->hint = start + k;
	return true;
}

void meta_readdir_free(READDIR3res *res)
{
	if (res && res->status == NFS3_OK) {
		free(res->READDIR3res_u.resok.reply.entries);
		res->READDIR3res_u.resok.reply.entries = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* per file system                                                      */

/* The record of `fh`'s file system for a reply sent at `seq`, created
 * when missing (the least recently recorded one replaced when full), or
 * NULL when `fh`'s attributes are not known or the reply is stale. */
static struct meta_fs *fs_for_record(const nfs_fh3 *fh, uint64_t seq)
{
	struct meta_node *n;

	if (!on_or_drop() || !(n = node_find(fh)) || !n->has_attrs || seq < n->gen)
		return NULL;
	struct meta_fs *f = NULL;
	for (size_t i = 0; i < meta.nfs; i++)
		if (meta.fs[i].fsid == n->attrs.fsid)
			return &meta.fs[i];
	if (meta.nfs < META_FS_MAX) {
		f = &meta.fs[meta.nfs++];
	} else {
		/* full: the one recorded least recently goes */
		double f_last = 0;
		for (size_t i = 0; i < meta.nfs; i++) {
			struct meta_fs *g = &meta.fs[i];
			double last = g->stat_time > g->info_time ? g->stat_time : g->info_time;
			last = last > g->pathconf_time ? last : g->pathconf_time;
			if (!f || last < f_last) {
				f = g;
				f_last = last;
			}
		}
	}
	memset(f, 0, sizeof(*f));
	f->fsid = n->attrs.fsid;
	f->stat_time = f->info_time = f->pathconf_time = -1;
	return f;
}

/* The record of `fh`'s file system, or NULL; *attrs = `fh`'s attributes
 * when fresh. */
static struct meta_fs *fs_for_answer(const nfs_fh3 *fh, post_op_attr *attrs)
{
	struct meta_node *n;

	/* the handle itself fresh: one removed through us is asked upstream */
	if (!meta_on() || !(n = node_find(fh)) || !fresh(n))
		return NULL;
	for (size_t i = 0; i < meta.nfs; i++) {
		if (meta.fs[i].fsid == n->attrs.fsid) {
			memset(attrs, 0, sizeof(*attrs));
			attrs->attributes_follow = 1;
			attrs->post_op_attr_u.attributes = n->attrs;
			return &meta.fs[i];
		}
	}
	return NULL;
}

static bool young(double recorded, uint64_t valid_s)
{
	return recorded >= 0 && now() - recorded < (double)valid_s;
}

void meta_fsstat_record(const nfs_fh3 *fh, const FSSTAT3resok *ok, uint64_t seq)
{
	struct meta_fs *f = ok ? fs_for_record(fh, seq) : NULL;

	if (f) {
		f->stat = *ok;
		memset(&f->stat.obj_attributes, 0, sizeof(f->stat.obj_attributes));
		f->stat_time = now();
	}
}

void meta_fsinfo_record(const nfs_fh3 *fh, const FSINFO3resok *ok, uint64_t seq)
{
	struct meta_fs *f = ok ? fs_for_record(fh, seq) : NULL;

	if (f) {
		f->info = *ok;
		memset(&f->info.obj_attributes, 0, sizeof(f->info.obj_attributes));
		f->info_time = now();
	}
}

void meta_pathconf_record(const nfs_fh3 *fh, const PATHCONF3resok *ok, uint64_t seq)
{
	struct meta_fs *f = ok ? fs_for_record(fh, seq) : NULL;

	if (f) {
		f->pathconf = *ok;
		memset(&f->pathconf.obj_attributes, 0, sizeof(f->pathconf.obj_attributes));
		f->pathconf_time = now();
	}
}

bool meta_fsstat(const nfs_fh3 *fh, FSSTAT3resok *ok)
{
	post_op_attr attrs;
	struct meta_fs *f = fs_for_answer(fh, &attrs);

	if (!f || !young(f->stat_time, meta.cfg->acregmin))
		return false;
	*ok = f->stat;
	ok->obj_attributes = attrs;
	return true;
}

bool meta_fsinfo(const nfs_fh3 *fh, FSINFO3resok *ok)
{
	post_op_attr attrs;
	struct meta_fs *f = fs_for_answer(fh, &attrs);

	if (!f || !young(f->info_time, meta.cfg->acdirmax))
		return false;
	*ok = f->info;
	ok->obj_attributes = attrs;
	return true;
}

bool meta_pathconf(const nfs_fh3 *fh, PATHCONF3resok *ok)
{
	post_op_attr attrs;
	struct meta_fs *f = fs_for_answer(fh, &attrs);

	if (!f || !young(f->pathconf_time, meta.cfg->acdirmax))
		return false;
	*ok = f->pathconf;
	ok->obj_attributes = attrs;
	return true;
}

/* ------------------------------------------------------------------ */
/* MOUNT                                                                */

static struct meta_mnt *mnt_find(const char *path)
{
	for (size_t i = 0; i < meta.nmnt; i++)
		if (strcmp(meta.mnt[i].path, path) == 0)
			return &meta.mnt[i];
	return NULL;
}

void meta_mnt_record(const char *path, const mountres3_ok *ok)
{
	if (!on_or_drop() || !path || !ok || strnlen(path, NFS3_PATH_MAX + 1) > NFS3_PATH_MAX ||
	    !ok->fhandle.fhandle3_val || ok->fhandle.fhandle3_len < 1 ||
	    ok->fhandle.fhandle3_len > NFS3_FHSIZE_MAX ||
	    ok->auth_flavors.auth_flavors_len > META_FLAVORS_MAX)
		return;
	struct meta_mnt *m = mnt_find(path);
	if (!m && meta.nmnt < META_MNT_MAX) {
		m = &meta.mnt[meta.nmnt++];
	} else if (!m) {
		m = &meta.mnt[0];
		for (size_t i = 1; i < meta.nmnt; i++)
			if (meta.mnt[i].time < m->time)
				m = &meta.mnt[i];
	}
	mnt_free(m);
	m->path = m_strdup(path);
	m->time = now();
	m->ok.fhandle.fhandle3_len = ok->fhandle.fhandle3_len;
	m->ok.fhandle.fhandle3_val = m_alloc(ok->fhandle.fhandle3_len);
	memcpy(m->ok.fhandle.fhandle3_val, ok->fhandle.fhandle3_val, ok->fhandle.fhandle3_len);
	uint32_t nf = ok->auth_flavors.auth_flavors_len;
	m->ok.auth_flavors.auth_flavors_len = nf;
	if (nf) {
		m->ok.auth_flavors.auth_flavors_val = m_alloc(nf * sizeof(int));
		memcpy(m->ok.auth_flavors.auth_flavors_val, ok->auth_flavors.auth_flavors_val,
		       nf * sizeof(int));
	}
}

bool meta_mnt(const char *path, mountres3_ok *ok)
{
	struct meta_mnt *m;
	struct meta_node *n;

	if (!meta_on() || !path || !(m = mnt_find(path)) ||
	    !(n = node_find_bytes((const uint8_t *)m->ok.fhandle.fhandle3_val,
				  m->ok.fhandle.fhandle3_len)) || !fresh(n))
		return false;
	*ok = m->ok;
	return true;
}

static void groups_free(groups g)
{
	while (g) {
		groups next = g->gr_next;
		m_strfree(g->gr_name);
		m_free(g, sizeof(*g));
		g = next;
	}
}

static void exports_free(exports e)
{
	while (e) {
		exports next = e->ex_next;
		m_strfree(e->ex_dir);
		groups_free(e->ex_groups);
		m_free(e, sizeof(*e));
		e = next;
	}
}

static exports exports_copy(exports src)
{
	exports head = NULL, *tail = &head;

	for (; src; src = src->ex_next) {
		exports e = m_alloc(sizeof(*e));
		e->ex_dir = m_strdup(src->ex_dir ? src->ex_dir : "");
		groups *gtail = &e->ex_groups;
		for (groups g = src->ex_groups; g; g = g->gr_next) {
			groups c = m_alloc(sizeof(*c));
			c->gr_name = m_strdup(g->gr_name ? g->gr_name : "");
			*gtail = c;
			gtail = &c->gr_next;
		}
		*tail = e;
		tail = &e->ex_next;
	}
	return head;
}

static void export_drop(void)
{
	exports_free(meta.export_list);
	meta.export_list = NULL;
	meta.has_export = false;
}

void meta_export_record(exports list)
{
	if (!on_or_drop())
		return;
	export_drop();
	meta.export_list = exports_copy(list);
	meta.has_export = true;
	meta.export_time = now();
}

bool meta_export(exports *list)
{
	if (!meta_on() || !meta.has_export || !young(meta.export_time, meta.cfg->acdirmax))
		return false;
	*list = meta.export_list;
	return true;
}

/* ------------------------------------------------------------------ */
/* one GETATTR per node at a time                                       */

bool meta_getattr_begin(const nfs_fh3 *fh)
{
	if (!on_or_drop() || !fh_ok(fh))
		return false;
	struct meta_node *n = node_find(fh);
	if (!n && !(n = node_new(fh)))
		return false;
	n->pins++;
	return true;
}

void meta_getattr_end(const nfs_fh3 *fh)
{
	struct meta_node *n = node_find(fh);
	struct list_node woken;

	if (!n || !n->pins)
		return;     /* no begin (or meta_finalise since): nothing to end */
	/* Unpinned before the waiters run: one that joins again waits for
	 * another GETATTR, never for this one. */
	list_init(&woken);
	if (!list_empty(&n->waiters)) {
		woken.next = n->waiters.next;
		woken.prev = n->waiters.prev;
		woken.next->prev = &woken;
		woken.prev->next = &woken;
		list_init(&n->waiters);
	}
	n->pins--;
	while (!list_empty(&woken)) {
		struct meta_waiter *w = list_entry(woken.next, struct meta_waiter, link);
		list_del(&w->link);
		w->wake(w);
	}
}

bool meta_getattr_join(const nfs_fh3 *fh, struct meta_waiter *w)
{
	struct meta_node *n;

	if (!meta_on() || !(n = node_find(fh)) || !n->pins)
		return false;
	list_add_tail(&n->waiters, &w->link);
	return true;
}

uint64_t meta_bytes(void)
{
	return meta.bytes;
}
