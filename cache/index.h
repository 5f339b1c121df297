/*
 * index.h — the sqlite index of the cache (WAL journal, prepared statements):
 * one row per cache object with its key (volume, file handle), coherency
 * data, last access and write-back state (the writer's credential, whether
 * writes may be unrecorded), one row per valid byte range, and one row per
 * dirty byte range (written locally, not yet committed upstream).  The loop thread
 * keeps the authoritative state in memory and hands the index batches of
 * records to write in one transaction on a worker thread (never one
 * transaction per READ); at start-up the loop thread loads everything back.
 *
 * Only one thread uses a cache_index at a time: the loop thread for
 * index_open/index_load/index_close, one worker job at a time for
 * index_write/index_checkpoint.
 */
#ifndef NFSCACHED_INDEX_H
#define NFSCACHED_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "proto/limits.h"

#define INDEX_GIDS_MAX 16   /* supplementary groups of an AUTH_SYS credential (RFC 5531 A.1) */

/* One object as stored.  For index_write the memory is the caller's. */
struct index_record {
	uint64_t id;                   /* > 0, chosen by the caller, names the backing file */
	const char *volume;            /* "SERVER:EXPORT" of the upstream it came from */
	uint8_t fh[NFS3_FHSIZE_MAX];      /* upstream file handle */
	uint32_t fh_len;               /* bytes, 1..NFS3_FHSIZE_MAX */
	uint64_t size;                 /* coherency: file size, bytes */
	int64_t mtime_ns, ctime_ns;    /* coherency: nanoseconds since the epoch */
	uint64_t fileid;               /* coherency */
	int64_t last_access_s;         /* unix seconds, for least-recently-used culling */
	const uint64_t *ranges;        /* nranges pairs (start, end): valid bytes */
	size_t nranges;
	int deleted;                   /* index_write: remove the object and its ranges */
	/*
	 * Write-back state.  Pairs are [start, end) byte offsets like `ranges`,
	 * and load back in ascending unsigned start order; the index stores
	 * them as given and does not check that they are a subset of `ranges`
	 * (the caller's invariant).  The credential is meaningful only while
	 * ndirty > 0 or wopen; it is stored and loaded whatever it holds.
	 */
	const uint64_t *dirty;         /* ndirty pairs (start, end): bytes written locally, not yet committed upstream (a subset of ranges) */
	size_t ndirty;
	int wopen;                     /* 1: the object may have local writes not recorded yet (cleared by a clean shutdown); stored as 0/1 */
	uint32_t wb_uid, wb_gid;       /* credential of the writer of the dirty bytes (AUTH_SYS) */
	uint32_t wb_gids[16];          /* its supplementary groups, the first wb_ngids used (0 past them on load) */
	uint32_t wb_ngids;             /* 0..16 (INDEX_GIDS_MAX) */
};

struct cache_index;

/*
 * Open DIR/index.sqlite, creating it (and its schema) when missing.  A file
 * that is not a usable index (corrupt, wrong schema version, unreadable) is
 * removed and a fresh one created: *was_reset is set to 1 then (else 0) and
 * the caller must drop every backing file.  Returns NULL, after logging,
 * only when not even a fresh index can be created (DIR not writable).
 */
struct cache_index *index_open(const char *dir, int *was_reset);

/* Close; index_close(NULL) is a no-op. */
void index_close(struct cache_index *ix);

/*
 * Call fn(rec, ctx) for every stored object, in ascending unsigned id order,
 * with its ranges and dirty ranges (rec and the memory it points to are
 * valid during the call only).  A nonzero return from fn stops the load and
 * is returned.  A stored gid list longer than INDEX_GIDS_MAX (a corrupt row)
 * is cut to its first INDEX_GIDS_MAX gids and logged once per load.
 * Returns 0, or -EIO after logging when the index cannot be read (the
 * caller then resets the cache).
 */
int index_load(struct cache_index *ix, int (*fn)(const struct index_record *rec, void *ctx),
	       void *ctx);

/* Highest id stored (0 when empty): new objects take ids above it. */
uint64_t index_max_id(struct cache_index *ix);

/*
 * Write `n` records in one transaction: each replaces the stored object of
 * the same id with all its ranges and dirty ranges, or removes them
 * (deleted).  Blocks on the disk: call from a worker thread.  Returns 0, or
 * -EIO after logging (the transaction is rolled back; nothing of it is
 * stored).
 *
 * A commit is synced (WAL, synchronous=FULL) before index_write returns:
 * dirty ranges and wopen = 1 recorded by it survive a power cut.
 */
int index_write(struct cache_index *ix, const struct index_record *recs, size_t n);

/*
 * Least-recently-used order for culling: (last access, stored id)
 * ascending.  A cursor is where the previous call stopped; INDEX_CURSOR_START
 * is before every object.
 */
struct index_cursor {
	int64_t last_access_s;         /* unix seconds */
	int64_t id;                    /* the stored (signed) id */
};
#define INDEX_CURSOR_START { INT64_MIN, INT64_MIN }

struct index_lru_entry {
	struct index_cursor at;        /* a cursor just past this entry */
	uint64_t id;
	int64_t last_access_s;         /* as stored: at most a minute behind the object's */
	uint8_t fh[NFS3_FHSIZE_MAX];
	uint32_t fh_len;               /* bytes, 1..NFS3_FHSIZE_MAX */
};

/*
 * Up to `max` objects of `volume` after *cur in least-recently-used order
 * into out[] (the caller's, `max` entries), advancing *cur past them.  Uses
 * the objects_lru index: cost O(max log n).  Worker thread.  Returns the
 * number stored (fewer than `max`: the end of the order was reached), or
 * -EIO after logging.
 */
int index_lru(struct cache_index *ix, const char *volume, struct index_cursor *cur,
	      struct index_lru_entry *out, size_t max);

/*
 * Call fn(id, volume, has_ranges, ctx) for every stored object of every
 * volume, in no particular order; has_ranges is 1 when it has valid or
 * dirty ranges (so its backing file must exist).  A nonzero return from fn
 * stops the scan and is returned.  Worker thread (start-up reconciliation).
 * Returns 0, or -EIO after logging.
 */
int index_scan(struct cache_index *ix,
	       int (*fn)(uint64_t id, const char *volume, int has_ranges, void *ctx), void *ctx);

/* Checkpoint the WAL into the database file (worker thread).  0 or -EIO. */
int index_checkpoint(struct cache_index *ix);

#endif
