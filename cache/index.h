/*
 * index.h — the sqlite index of the cache (WAL journal, prepared statements):
 * one row per cache object with its key (volume, file handle), coherency
 * data, last access, valid bytes and write-back state (the writer's
 * credential, whether writes may be unrecorded), one row per valid byte
 * range, one row per dirty byte range (written locally, not yet committed
 * upstream), and per volume the object count and byte total (kept by
 * triggers, exact without a scan).  It is the table of all objects; the loop
 * thread keeps the objects in use in memory and hands the index batches of
 * records to write in one transaction on a worker thread (never one
 * transaction per READ).  At start-up only the objects with dirty ranges or
 * open for writing are loaded; the others are found on demand by a point
 * lookup on a reader, a second, read-only connection of its own thread.
 *
 * Threads: only one thread uses a cache_index at a time: the loop thread for
 * index_open/index_totals/index_load/index_load_pending/index_mark_clean/
 * index_close, then one worker job at a time for index_write/
 * index_checkpoint/index_lru/index_scan/index_drop_ranges.  A
 * cache_index_reader is used by one thread at a time, concurrently with the
 * cache_index (sqlite's multi-thread mode, WAL: the reader never waits for a
 * write in progress and sees every commit made before its call).
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
	int touched;                   /* index_write: only last_access_s changes: the other
					* columns and the ranges stay as stored (no row of this
					* id: nothing happens) */
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
 * the caller must drop every backing file.  An index of schema version 2 is
 * upgraded in place (its objects and ranges kept, *was_reset 0).  Returns
 * NULL, after logging, only when not even a fresh index can be created (DIR
 * not writable).
 *
 * Cost independent of the number of objects when the previous stop was
 * clean (index_mark_clean); otherwise PRAGMA quick_check reads the whole
 * file first (and before an upgrade).  Logs at info which it was.  The
 * clean stop mark is cleared, synced, before returning: a crash from here on
 * is an unclean stop.  Loop thread, blocks on the disk.
 */
struct cache_index *index_open(const char *dir, int *was_reset);

/* Close; index_close(NULL) is a no-op. */
void index_close(struct cache_index *ix);

/*
 * Record a clean stop: the next index_open trusts the file without a
 * quick_check.  Call after the last index_write, right before index_close,
 * with nothing left to write (loop thread, synced to disk).  0, or -EIO
 * after logging (the next open then checks), -EIO too when index_damaged.
 */
int index_mark_clean(struct cache_index *ix);

/*
 * 1 when a call on ix met a damaged file (sqlite's SQLITE_CORRUPT or
 * SQLITE_NOTADB: pages overwritten or zeroed while the daemon was stopped,
 * which a clean stop's skipped quick_check does not see), else 0.  From then
 * on index_mark_clean refuses, so the next index_open runs quick_check and
 * starts afresh if the file fails it.  The first such error is logged once.
 * index_set_damaged() records one a cache_index_reader met.  Any thread
 * using ix (index.h's threading rule).
 */
int index_damaged(const struct cache_index *ix);
void index_set_damaged(struct cache_index *ix);

/*
 * Close ix, remove DIR/index.sqlite (with its WAL and shared-memory files)
 * and create a fresh, empty index there, as index_open does with a file that
 * is not a usable index; the caller must drop every backing file.  For a
 * start that found the file damaged (index_damaged) before loading
 * anything.  Returns the new index, or NULL after logging (ix is closed
 * either way).  Loop thread, blocks on the disk.
 */
struct cache_index *index_recreate(struct cache_index *ix, const char *dir);

/*
 * How many objects of `volume` are stored and the sum of their valid bytes
 * (the lengths of their ranges), into *objects and *bytes; zeros when the
 * volume has none.  O(1): one row kept exact by triggers on every write.
 * Exact while a volume holds fewer than 2^63 bytes.  Loop thread (at
 * open).  Returns 0, or -EIO after logging.
 */
int index_totals(struct cache_index *ix, const char *volume, uint64_t *objects,
		 uint64_t *bytes);
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

/*
 * What must be in memory from the start: call fn(rec, ctx) for every stored
 * object of `volume` that has dirty ranges or wopen = 1, in ascending
 * unsigned id order, with its ranges and dirty ranges; records, range order,
 * gid handling and the return of fn exactly as index_load.  Cost
 * proportional to those objects (the dirty_ranges rows and the objects_wopen
 * partial index), not to the index size.  Loop thread at start-up.
 * Returns 0, fn's nonzero return, or -EIO after logging.
 */
int index_load_pending(struct cache_index *ix, const char *volume,
		       int (*fn)(const struct index_record *rec, void *ctx), void *ctx);

/* Highest id stored (0 when empty): new objects take ids above it. */
uint64_t index_max_id(struct cache_index *ix);

/*
 * Write `n` records in one transaction: each replaces the stored object of
 * the same id with all its ranges and dirty ranges, or removes them
 * (deleted).  The object's valid bytes (index_totals, index_lru) are
 * computed here from rec->ranges.  Blocks on the disk: call from a worker thread.  Returns 0, or
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
	uint64_t bytes;                /* valid bytes: the sum of the lengths of its ranges */
	uint32_t nranges;              /* its number of valid ranges */
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
 * Call fn(id, volume, has_ranges, bytes, ctx) for every stored object of
 * every volume, in no particular order; has_ranges is 1 when it has valid or
 * dirty ranges (so its backing file must exist); bytes is its valid bytes.
 * A nonzero return from fn stops the scan and is returned.  Worker thread
 * (start-up reconciliation).  Returns 0, or -EIO after logging.
 */
int index_scan(struct cache_index *ix,
	       int (*fn)(uint64_t id, const char *volume, int has_ranges, uint64_t bytes,
			 void *ctx), void *ctx);

/*
 * Drop every valid range of every object of `volume` and set their valid
 * bytes to 0 (the totals follow), in one transaction; dirty ranges and the
 * objects themselves are kept.  Worker thread (the one running
 * index_write).  Returns 0, or -EIO after logging (rolled back: nothing
 * dropped).
 */
int index_drop_ranges(struct cache_index *ix, const char *volume);

/*
 * Checkpoint the WAL into the database file (worker thread).  Waits a
 * moment for lookups in progress on a reader; one that stays leaves the
 * checkpoint partial, which is not an error.  0 or -EIO.
 */
int index_checkpoint(struct cache_index *ix);

/*
 * Point lookups on a second, read-only connection to DIR/index.sqlite.
 * Open it after index_open (the file must exist and be checked; the reader
 * runs no check of its own) and close it before index_close.  Returns NULL,
 * after logging, when the file cannot be opened or sqlite is built without
 * thread support (sqlite3_threadsafe() == 0).
 */
struct cache_index_reader;
struct cache_index_reader *index_reader_open(const char *dir);

/* Close; index_reader_close(NULL) is a no-op. */
void index_reader_close(struct cache_index_reader *r);

/*
 * Find the object of `volume` with file handle fh (fh_len bytes,
 * 1..NFS3_FHSIZE_MAX) by the UNIQUE (volume, fh) index, and its ranges and
 * dirty ranges by their primary keys, in one short read transaction: it sees
 * everything index_write committed before the call, and holds no snapshot
 * after it.  Fills *rec as index_load does; rec->volume, rec->ranges and
 * rec->dirty point into the reader's own memory, valid until the next
 * index_lookup or index_reader_close on it.  Blocks on the disk: the
 * reader's own thread.  Returns 1 (found), 0 (no such object), or -EIO
 * after logging.
 */
int index_lookup(struct cache_index_reader *r, const char *volume, const uint8_t *fh,
		 uint32_t fh_len, struct index_record *rec);

/* 1 when a lookup on r met a damaged file (as index_damaged), else 0.  The
 * reader's thread, or any thread once no lookup runs. */
int index_reader_damaged(const struct cache_index_reader *r);

#endif
