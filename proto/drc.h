/*
 * drc.h — the duplicate request cache (DRC), as knfsd's reply cache
 * (fs/nfsd/nfscache.c): clients retransmit a call with the same XID after a
 * timeout or a reconnect, and a non-idempotent call (CREATE, REMOVE, RENAME,
 * WRITE, ...) must not run twice.  Entries are keyed by client address (not
 * port: a reconnecting client may get a new one), XID, program, version,
 * procedure, argument length and a checksum of the first argument bytes.
 *
 * An entry is in progress from the first sighting until its reply is stored;
 * a retransmission meanwhile is dropped (the reply will come).  Completed
 * entries keep a copy of the reply record and are evicted oldest first once
 * `max_entries` is reached.  Single-threaded; no I/O.
 */
#ifndef NFSCACHED_DRC_H
#define NFSCACHED_DRC_H

#include <stddef.h>
#include <stdint.h>

#include "common/list.h"

struct drc_key {
	uint8_t addr[16];     /* client IPv4 (first 4 bytes) or IPv6 address */
	uint32_t family;      /* AF_INET or AF_INET6 */
	uint32_t xid;
	uint32_t prog, vers, proc;
	uint32_t args_len;    /* bytes of procedure arguments */
	uint32_t csum;        /* drc_checksum() of the arguments */
};

struct drc_entry {
	struct drc_key key;
	int done;              /* reply stored */
	uint8_t *reply;        /* whole reply record incl. record mark; malloc'd */
	size_t reply_len;      /* bytes */
	struct drc_entry *hash_next;
	struct list_node lru;  /* oldest first */
};

struct drc;

enum drc_result {
	DRC_MISS = 0,         /* new: an in-progress entry was inserted (*entry) */
	DRC_IN_PROGRESS = 1,  /* retransmission of a call still running: drop it */
	DRC_REPLAY = 2,       /* completed: resend (*entry)->reply */
};

/* Create a cache holding at most `max_entries` entries (> 0).  Never NULL. */
struct drc *drc_new(size_t max_entries);

/* Free the cache and every entry.  drc_free(NULL) is a no-op. */
void drc_free(struct drc *drc);

/* Checksum over `len` argument bytes (the first 256 are hashed, as knfsd). */
uint32_t drc_checksum(const uint8_t *args, size_t len);

/* Look `key` up; see enum drc_result.  The entry stays owned by the cache. */
enum drc_result drc_lookup(struct drc *drc, const struct drc_key *key,
			   struct drc_entry **entry);

/* Store a copy of the reply record (`len` bytes) in an in-progress entry. */
void drc_complete(struct drc *drc, struct drc_entry *e, const uint8_t *reply, size_t len);

/* Remove an in-progress entry whose call got no cacheable reply (dropped, or
 * answered NFS3ERR_JUKEBOX): the next retransmission must run the call. */
void drc_abandon(struct drc *drc, struct drc_entry *e);

/* Entries now held (in progress and completed). */
size_t drc_count(const struct drc *drc);

#endif
