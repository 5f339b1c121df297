/*
 * index.c — the cache index in sqlite: the schema, recovery from an unusable
 * file, and the handful of prepared statements the cache needs.  It stores
 * the records it is given and loads them back; deciding what is valid, what
 * to cull and when to write belongs to the caller.  Per-volume totals are
 * kept by triggers, so they never need a scan; a reader is a second,
 * read-only connection for point lookups from another thread (WAL lets it
 * read while the main connection writes).
 *
 * sqlite integers are signed 64-bit, so unsigned values (ids, sizes, file
 * ids, range offsets) are stored in two's complement: values above
 * INT64_MAX are negative in the file and come back unchanged.  uids and gids
 * fit as they are; the supplementary gids are one blob of little-endian
 * 32-bit values, so the file does not depend on the host.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cache/index.h"
#include "common/array.h"
#include "common/log.h"
#include "common/xalloc.h"

/* Bump on any change to the tables below: an index of another version is reset
 * (version 2 is upgraded in place, index_migrate_v2). */
#define INDEX_SCHEMA_VERSION 3
#define INDEX_STR(x) INDEX_STR_(x)
#define INDEX_STR_(x) #x

/*
 * Kept verbatim: sqlite stores this text, and index_check_table compares it.
 * `bytes` sits where ALTER TABLE ADD COLUMN puts it in a version 2 table
 * (after the last column, before the table constraint), so a fresh and an
 * upgraded table store the same text.  bytes: the sum of the lengths of the
 * object's `ranges` rows, written by index_write.
 */
#define INDEX_OBJECTS_SQL \
	"CREATE TABLE objects (id INTEGER PRIMARY KEY, volume TEXT NOT NULL," \
	" fh BLOB NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL," \
	" ctime_ns INTEGER NOT NULL, fileid INTEGER NOT NULL," \
	" last_access INTEGER NOT NULL, wopen INTEGER NOT NULL," \
	" wb_uid INTEGER NOT NULL, wb_gid INTEGER NOT NULL, wb_gids BLOB NOT NULL," \
	INDEX_BYTES_COLUMN ", UNIQUE (volume, fh))"
#define INDEX_BYTES_COLUMN " bytes INTEGER NOT NULL DEFAULT 0"
#define INDEX_RANGES_SQL \
	"CREATE TABLE ranges (object INTEGER NOT NULL, start INTEGER NOT NULL," \
	" \"end\" INTEGER NOT NULL, PRIMARY KEY (object, start)) WITHOUT ROWID"
#define INDEX_DIRTY_RANGES_SQL \
	"CREATE TABLE dirty_ranges (object INTEGER NOT NULL, start INTEGER NOT NULL," \
	" \"end\" INTEGER NOT NULL, PRIMARY KEY (object, start)) WITHOUT ROWID"
/* Per volume: how many objects and the sum of their bytes, kept by the triggers below. */
#define INDEX_TOTALS_SQL \
	"CREATE TABLE totals (volume TEXT PRIMARY KEY, objects INTEGER NOT NULL," \
	" bytes INTEGER NOT NULL)"
/* One row (mark = 1) while the index is closed after a clean stop (index_mark_clean). */
#define INDEX_CLEAN_STOP_SQL \
	"CREATE TABLE clean_stop (mark INTEGER PRIMARY KEY CHECK (mark = 1))"
#define INDEX_TOTALS_ADD \
	" INSERT INTO totals (volume, objects, bytes) VALUES (new.volume, 1, new.bytes)" \
	" ON CONFLICT (volume) DO UPDATE SET objects = objects + 1," \
	" bytes = bytes + excluded.bytes;"
#define INDEX_TOTALS_SUB \
	" UPDATE totals SET objects = objects - 1, bytes = bytes - old.bytes" \
	" WHERE volume = old.volume;"
#define INDEX_TOTALS_INSERT_SQL \
	"CREATE TRIGGER totals_insert AFTER INSERT ON objects BEGIN" INDEX_TOTALS_ADD " END"
/* index_write's upsert sets both columns: an update moves the object's share. */
#define INDEX_TOTALS_UPDATE_SQL \
	"CREATE TRIGGER totals_update AFTER UPDATE OF volume, bytes ON objects BEGIN" \
	INDEX_TOTALS_SUB INDEX_TOTALS_ADD " END"
#define INDEX_TOTALS_DELETE_SQL \
	"CREATE TRIGGER totals_delete AFTER DELETE ON objects BEGIN" INDEX_TOTALS_SUB " END"

/*
 * Not part of the table check: indexes only speed up queries, and an index
 * file without them (created by an older nfscached) gets them on open.
 * objects_wopen is partial: it holds the objects open for writing only.
 */
#define INDEX_LRU_SQL \
	"CREATE INDEX IF NOT EXISTS objects_lru ON objects (volume, last_access, id)"
#define INDEX_WOPEN_SQL \
	"CREATE INDEX IF NOT EXISTS objects_wopen ON objects (volume, id) WHERE wopen = 1"

/* Everything version 3 adds to version 2 (the totals are filled by the caller). */
#define INDEX_V3_ADDITIONS_SQL \
	INDEX_TOTALS_SQL "; " INDEX_CLEAN_STOP_SQL "; " INDEX_TOTALS_INSERT_SQL "; " \
	INDEX_TOTALS_UPDATE_SQL "; " INDEX_TOTALS_DELETE_SQL "; " INDEX_WOPEN_SQL

/* The tables and triggers index_check_table compares with what sqlite stores. */
static const struct {
	const char *name;
	const char *sql;
} index_schema[] = {
	{ "objects", INDEX_OBJECTS_SQL },
	{ "ranges", INDEX_RANGES_SQL },
	{ "dirty_ranges", INDEX_DIRTY_RANGES_SQL },
	{ "totals", INDEX_TOTALS_SQL },
	{ "clean_stop", INDEX_CLEAN_STOP_SQL },
	{ "totals_insert", INDEX_TOTALS_INSERT_SQL },
	{ "totals_update", INDEX_TOTALS_UPDATE_SQL },
	{ "totals_delete", INDEX_TOTALS_DELETE_SQL },
};

_Static_assert(sizeof(((struct index_record *)0)->wb_gids) == INDEX_GIDS_MAX * sizeof(uint32_t),
	       "wb_gids holds INDEX_GIDS_MAX gids");

/* The object columns index_row_to_record reads, in its order. */
#define INDEX_OBJECT_COLUMNS \
	"id, volume, fh, size, mtime_ns, ctime_ns, fileid, last_access," \
	" wopen, wb_uid, wb_gid, wb_gids"

enum index_stmt {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_DELETE_RANGES,
	ST_DELETE_DIRTY,
	ST_DELETE_OBJECT,
	ST_TOUCH_OBJECT,
	ST_UPSERT_OBJECT,
	ST_INSERT_RANGE,
	ST_INSERT_DIRTY,
	ST_LOAD_OBJECTS,
	ST_LOAD_RANGES,
	ST_LOAD_DIRTY,
	ST_MAX_ID_NEGATIVE,
	ST_MAX_ID_POSITIVE,
	ST_TABLE_SQL,
	ST_LRU,
	ST_SCAN,
	ST_TOTALS,
	ST_PENDING_IDS,
	ST_OBJECT_BY_ID,
	ST_OBJECT_RANGES,
	ST_OBJECT_DIRTY,
	ST_MARK_CLEAN,
	ST_VOLUME_DROP_RANGES,
	ST_VOLUME_DROP_BYTES,
	ST_COUNT
};

static const struct {
	const char *name;   /* for log lines */
	const char *sql;
} index_stmts[ST_COUNT] = {
	[ST_BEGIN] = { "begin", "BEGIN IMMEDIATE" },
	[ST_COMMIT] = { "commit", "COMMIT" },
	[ST_ROLLBACK] = { "rollback", "ROLLBACK" },
	[ST_DELETE_RANGES] = { "delete ranges", "DELETE FROM ranges WHERE object = ?1" },
	[ST_DELETE_DIRTY] = { "delete dirty ranges", "DELETE FROM dirty_ranges WHERE object = ?1" },
	[ST_DELETE_OBJECT] = { "delete object", "DELETE FROM objects WHERE id = ?1" },
	[ST_TOUCH_OBJECT] = { "touch object", "UPDATE objects SET last_access = ?2 WHERE id = ?1" },
	/*
	 * An upsert on the id rather than INSERT OR REPLACE: REPLACE would
	 * silently drop another object holding the same (volume, fh) and
	 * orphan its backing file; here that is an error and a rollback.
	 */
	[ST_UPSERT_OBJECT] = { "upsert object",
		"INSERT INTO objects (id, volume, fh, size, mtime_ns, ctime_ns, fileid, last_access,"
		" wopen, wb_uid, wb_gid, wb_gids, bytes)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
		" ON CONFLICT (id) DO UPDATE SET"
		" volume = excluded.volume, fh = excluded.fh, size = excluded.size,"
		" mtime_ns = excluded.mtime_ns, ctime_ns = excluded.ctime_ns,"
		" fileid = excluded.fileid, last_access = excluded.last_access,"
		" wopen = excluded.wopen, wb_uid = excluded.wb_uid, wb_gid = excluded.wb_gid,"
		" wb_gids = excluded.wb_gids, bytes = excluded.bytes" },
	[ST_INSERT_RANGE] = { "insert range",
		"INSERT INTO ranges (object, start, \"end\") VALUES (?1, ?2, ?3)" },
	[ST_INSERT_DIRTY] = { "insert dirty range",
		"INSERT INTO dirty_ranges (object, start, \"end\") VALUES (?1, ?2, ?3)" },
	[ST_LOAD_OBJECTS] = { "load objects",
		"SELECT " INDEX_OBJECT_COLUMNS
		" FROM objects WHERE id BETWEEN ?1 AND ?2 ORDER BY id" },
	[ST_LOAD_RANGES] = { "load ranges",
		"SELECT object, start, \"end\" FROM ranges"
		" WHERE object BETWEEN ?1 AND ?2 ORDER BY object, start" },
	[ST_LOAD_DIRTY] = { "load dirty ranges",
		"SELECT object, start, \"end\" FROM dirty_ranges"
		" WHERE object BETWEEN ?1 AND ?2 ORDER BY object, start" },
	/* Stored ids below zero are the largest unsigned ones; both are one seek. */
	[ST_MAX_ID_NEGATIVE] = { "max id",
		"SELECT id FROM objects WHERE id < 0 ORDER BY id DESC LIMIT 1" },
	[ST_MAX_ID_POSITIVE] = { "max id", "SELECT max(id) FROM objects" },
	[ST_TABLE_SQL] = { "schema",
		"SELECT sql FROM sqlite_master WHERE type IN ('table', 'trigger') AND name = ?1" },
	/* least recently used first, after a cursor (objects_lru below) */
	[ST_LRU] = { "lru",
		"SELECT id, fh, last_access, bytes,"
		" (SELECT count(*) FROM ranges WHERE object = objects.id) FROM objects"
		" WHERE volume = ?1 AND (last_access, id) > (?2, ?3)"
		" ORDER BY last_access, id LIMIT ?4" },
	[ST_SCAN] = { "scan",
		"SELECT id, volume,"
		" EXISTS (SELECT 1 FROM ranges WHERE object = objects.id)"
		" OR EXISTS (SELECT 1 FROM dirty_ranges WHERE object = objects.id), bytes"
		" FROM objects" },
	[ST_TOTALS] = { "totals", "SELECT objects, bytes FROM totals WHERE volume = ?1" },
	/*
	 * dirty_ranges holds only what waits for write-back, and objects_wopen
	 * only the objects open for writing: both small whatever the index
	 * size.  The dirty ones of other volumes are filtered out afterwards.
	 */
	[ST_PENDING_IDS] = { "pending objects",
		"SELECT object FROM dirty_ranges"
		" UNION SELECT id FROM objects WHERE volume = ?1 AND wopen = 1" },
	[ST_OBJECT_BY_ID] = { "object by id",
		"SELECT " INDEX_OBJECT_COLUMNS " FROM objects WHERE id = ?1" },
	[ST_OBJECT_RANGES] = { "object ranges",
		"SELECT start, \"end\" FROM ranges WHERE object = ?1 ORDER BY start" },
	[ST_OBJECT_DIRTY] = { "object dirty ranges",
		"SELECT start, \"end\" FROM dirty_ranges WHERE object = ?1 ORDER BY start" },
	[ST_MARK_CLEAN] = { "mark clean", "INSERT OR IGNORE INTO clean_stop (mark) VALUES (1)" },
	[ST_VOLUME_DROP_RANGES] = { "drop ranges",
		"DELETE FROM ranges WHERE object IN (SELECT id FROM objects WHERE volume = ?1)" },
	[ST_VOLUME_DROP_BYTES] = { "drop bytes",
		"UPDATE objects SET bytes = 0 WHERE volume = ?1 AND bytes != 0" },
};

/* index_load walks ids in unsigned order: the stored ids >= 0, then those < 0. */
static const int64_t index_load_bounds[2][2] = {
	{ 0, INT64_MAX },
	{ INT64_MIN, -1 },
};

/* The (start, end) pairs of the current object, reused across objects:
 * v[2i], v[2i + 1] for i < n / 2. */
typedef ARRAY(uint64_t) index_pairs;

struct cache_index {
	sqlite3 *db;
	char *path;                       /* DIR/index.sqlite, for log lines */
	sqlite3_stmt *st[ST_COUNT];       /* prepared once, reset after every use */
	index_pairs ranges;               /* index_load*: valid ranges of the current object */
	index_pairs dirty;                /* index_load*: dirty ranges of the current object */
	int gids_logged;                  /* index_load*: a bad gid list was logged in this load */
	int was_clean;                    /* index_open: the clean stop mark was found */
	int quick_checked;                /* index_open: quick_check ran (1) or was skipped (0) */
	int damaged;                      /* a call met a damaged file (index_damaged) */
};

enum reader_stmt {
	RD_BEGIN,
	RD_COMMIT,
	RD_ROLLBACK,
	RD_OBJECT,
	RD_RANGES,
	RD_DIRTY,
	RD_COUNT
};

static const struct {
	const char *name;
	const char *sql;
} reader_stmts[RD_COUNT] = {
	/* One snapshot for the object and its ranges, ended at once. */
	[RD_BEGIN] = { "begin", "BEGIN" },
	[RD_COMMIT] = { "commit", "COMMIT" },
	[RD_ROLLBACK] = { "rollback", "ROLLBACK" },
	/* the UNIQUE (volume, fh) index */
	[RD_OBJECT] = { "lookup",
		"SELECT " INDEX_OBJECT_COLUMNS " FROM objects WHERE volume = ?1 AND fh = ?2" },
	[RD_RANGES] = { "lookup ranges",
		"SELECT start, \"end\" FROM ranges WHERE object = ?1 ORDER BY start" },
	[RD_DIRTY] = { "lookup dirty ranges",
		"SELECT start, \"end\" FROM dirty_ranges WHERE object = ?1 ORDER BY start" },
};

struct cache_index_reader {
	sqlite3 *db;                      /* read-only, its own connection */
	char *path;                       /* DIR/index.sqlite, for log lines */
	sqlite3_stmt *st[RD_COUNT];       /* prepared once, reset after every use */
	index_pairs ranges;               /* the last lookup's valid ranges */
	index_pairs dirty;                /* the last lookup's dirty ranges */
	char *volume;                     /* the last lookup's volume (volume_size bytes) */
	size_t volume_size;
	int gids_logged;                  /* a bad gid list was logged by this reader */
	int damaged;                      /* a lookup met a damaged file (index_reader_damaged) */
};

/*
 * A busy wait only where a second connection can be in the way: a
 * checkpoint waits for lookups in progress, a lookup for a WAL being
 * restarted.  Both last microseconds to milliseconds.
 */
#define INDEX_BUSY_TIMEOUT_MS 5000

/* Two's complement without the implementation-defined unsigned-to-signed cast. */
static int64_t u64_to_db(uint64_t v)
{
	if (v <= INT64_MAX)
		return (int64_t)v;
	return -(int64_t)(UINT64_MAX - v) - 1;
}

static uint64_t u64_from_db(int64_t v)
{
	return (uint64_t)v;   /* modulo 2^64: well defined */
}

/* 1 when the last error of `db` says its file is damaged, not merely busy
 * or full: SQLITE_CORRUPT (extended codes included) or SQLITE_NOTADB. */
static int sqlite_says_damaged(sqlite3 *db)
{
	int code = sqlite3_errcode(db) & 0xff;

	return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

static void index_log_sqlite(struct cache_index *ix, const char *what)
{
	if (sqlite_says_damaged(ix->db)) {
		if (!ix->damaged)
			log_error("index: %s: %s: %s: the file is damaged; it is not marked "
				  "clean at the stop, so the next start checks it (and starts "
				  "with an empty cache if it must)", ix->path, what,
				  sqlite3_errmsg(ix->db));
		ix->damaged = 1;
		return;
	}
	log_error("index: %s: %s: %s", ix->path, what, sqlite3_errmsg(ix->db));
}

/* Run a statement that returns no rows.  0, or -EIO after logging. */
static int index_step_done(struct cache_index *ix, enum index_stmt s)
{
	sqlite3_stmt *st = ix->st[s];
	int rc = sqlite3_step(st);

	if (rc != SQLITE_DONE)
		index_log_sqlite(ix, index_stmts[s].name);
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* First column of the first row of `sql` as text into buf.  0 or -EIO. */
static int index_query_text(struct cache_index *ix, const char *sql, char *buf, size_t len)
{
	sqlite3_stmt *st = NULL;
	int ret = -EIO;

	if (sqlite3_prepare_v2(ix->db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		const unsigned char *text = sqlite3_column_text(st, 0);
		snprintf(buf, len, "%s", text ? (const char *)text : "");
		ret = 0;
	}
	if (ret < 0)   /* only used while opening, where a failure means a reset */
		log_warning("index: %s: %s: %s", ix->path, sql, sqlite3_errmsg(ix->db));
	sqlite3_finalize(st);
	return ret;
}

/*
 * WAL with synchronous=FULL: every commit syncs the WAL, so a batch that
 * recorded dirty ranges or a wopen flag survives a power cut once
 * index_write returned (local writes wait for that record).  One sync per
 * batch, not per READ.
 */
static int index_configure(struct cache_index *ix)
{
	char mode[16];

	if (index_query_text(ix, "PRAGMA journal_mode = WAL", mode, sizeof(mode)) < 0)
		return -EIO;
	if (strcmp(mode, "wal") != 0) {
		log_warning("index: %s: journal mode is %s, not wal", ix->path, mode);
		return -EIO;
	}
	if (sqlite3_exec(ix->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL) != SQLITE_OK) {
		log_warning("index: %s: synchronous: %s", ix->path, sqlite3_errmsg(ix->db));
		return -EIO;
	}
	sqlite3_busy_timeout(ix->db, INDEX_BUSY_TIMEOUT_MS);
	return 0;
}

static int index_create_schema(struct cache_index *ix)
{
	static const char sql[] = "BEGIN; " INDEX_OBJECTS_SQL "; " INDEX_RANGES_SQL
		"; " INDEX_DIRTY_RANGES_SQL "; " INDEX_V3_ADDITIONS_SQL
		"; PRAGMA user_version = " INDEX_STR(INDEX_SCHEMA_VERSION) "; COMMIT";

	/* On failure the open transaction dies with the connection. */
	if (sqlite3_exec(ix->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		index_log_sqlite(ix, "create schema");
		return -EIO;
	}
	return 0;
}

/* 0 when table or trigger `name` was created by exactly `want`. */
static int index_check_table(struct cache_index *ix, const char *name, const char *want)
{
	sqlite3_stmt *st = ix->st[ST_TABLE_SQL];
	const unsigned char *sql;
	int ret = -EIO;

	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		sql = sqlite3_column_text(st, 0);
		if (sql && strcmp((const char *)sql, want) == 0)
			ret = 0;
	}
	sqlite3_reset(st);
	if (ret < 0)
		log_warning("index: %s: %s missing or different", ix->path, name);
	return ret;
}

/*
 * Sum of the lengths of `n` pairs [start, end): an object's valid bytes.
 * Saturates at INT64_MAX, the most a stored integer holds (no object and no
 * volume comes near it).
 */
static uint64_t index_ranges_bytes(const uint64_t *pairs, size_t n)
{
	uint64_t bytes = 0, len;

	for (size_t i = 0; i < n; i++) {
		len = pairs[2 * i + 1] > pairs[2 * i] ? pairs[2 * i + 1] - pairs[2 * i] : 0;
		bytes = len > INT64_MAX - bytes ? INT64_MAX : bytes + len;
	}
	return bytes;
}

/*
 * The `bytes` of every object from its ranges (version 2 has no such
 * column): one pass over `ranges` in object order, one update per object
 * holding some.  Inside the caller's transaction.  0 or -EIO.
 */
static int index_migrate_bytes(struct cache_index *ix)
{
	sqlite3_stmt *sel = NULL, *upd = NULL;
	uint64_t pair[2], bytes = 0;
	int64_t object = 0;
	int have = 0, rc = SQLITE_ERROR;

	if (sqlite3_prepare_v2(ix->db, "SELECT object, start, \"end\" FROM ranges"
			       " ORDER BY object, start", -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(ix->db, "UPDATE objects SET bytes = ?2 WHERE id = ?1", -1, &upd,
			       NULL) != SQLITE_OK)
		goto out;
	for (;;) {
		rc = sqlite3_step(sel);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			goto out;
		if (have && (rc == SQLITE_DONE || sqlite3_column_int64(sel, 0) != object)) {
			sqlite3_bind_int64(upd, 1, object);
			sqlite3_bind_int64(upd, 2, (int64_t)bytes);   /* <= INT64_MAX */
			if (sqlite3_step(upd) != SQLITE_DONE) {
				rc = SQLITE_ERROR;
				goto out;
			}
			sqlite3_reset(upd);
			have = 0;
			bytes = 0;
		}
		if (rc == SQLITE_DONE)
			break;
		object = sqlite3_column_int64(sel, 0);
		pair[0] = u64_from_db(sqlite3_column_int64(sel, 1));
		pair[1] = u64_from_db(sqlite3_column_int64(sel, 2));
		bytes += index_ranges_bytes(pair, 1);
		if (bytes > INT64_MAX)
			bytes = INT64_MAX;
		have = 1;
	}
out:
	if (rc != SQLITE_DONE)
		index_log_sqlite(ix, "migrate: object bytes");
	sqlite3_finalize(sel);
	sqlite3_finalize(upd);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/*
 * Version 2 to 3 in place, in one transaction: the bytes column, the totals
 * counted once, the clean stop table, the triggers.  Objects and ranges are
 * kept.  0, or -EIO after logging (rolled back: the caller resets).
 */
static int index_migrate_v2(struct cache_index *ix)
{
	static const char alter[] = "BEGIN IMMEDIATE;"
		" ALTER TABLE objects ADD COLUMN" INDEX_BYTES_COLUMN;
	static const char finish[] = INDEX_V3_ADDITIONS_SQL ";"
		" INSERT INTO totals (volume, objects, bytes)"
		" SELECT volume, count(*), sum(bytes) FROM objects GROUP BY volume;"
		" PRAGMA user_version = 3; COMMIT";
	char count[32];

	if (sqlite3_exec(ix->db, alter, NULL, NULL, NULL) != SQLITE_OK) {
		index_log_sqlite(ix, "migrate: add column bytes");
		goto fail;
	}
	if (index_migrate_bytes(ix) < 0)
		goto fail;
	if (sqlite3_exec(ix->db, finish, NULL, NULL, NULL) != SQLITE_OK) {
		index_log_sqlite(ix, "migrate: totals");
		goto fail;
	}
	if (index_query_text(ix, "SELECT count(*) FROM objects", count, sizeof(count)) < 0)
		snprintf(count, sizeof(count), "?");
	log_info("index: %s: schema version 2 upgraded to 3 (%s objects kept)", ix->path, count);
	return 0;
fail:
	if (!sqlite3_get_autocommit(ix->db))
		sqlite3_exec(ix->db, "ROLLBACK", NULL, NULL, NULL);
	return -EIO;
}

/* 1 when the clean stop mark is set, 0 when not (or the table is missing). */
static int index_clean_mark(struct cache_index *ix)
{
	sqlite3_stmt *st = NULL;
	int mark = 0;

	if (sqlite3_prepare_v2(ix->db, "SELECT count(*) FROM clean_stop", -1, &st, NULL) ==
	    SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		mark = sqlite3_column_int64(st, 0) > 0;
	sqlite3_finalize(st);
	return mark;
}

/* PRAGMA quick_check reads every page: 0 when it says ok, else -EIO after logging. */
static int index_quick_check(struct cache_index *ix)
{
	char buf[256];

	ix->quick_checked = 1;
	if (index_query_text(ix, "PRAGMA quick_check", buf, sizeof(buf)) < 0)
		return -EIO;
	if (strcmp(buf, "ok") != 0) {
		for (char *p = buf; (p = strchr(p, '\n')); )
			*p = ' ';   /* one log line */
		log_warning("index: %s: quick_check: %s", ix->path, buf);
		return -EIO;
	}
	return 0;
}

/*
 * Integrity and schema: the file must either be empty (then the schema is
 * created), hold exactly our tables at our version, or at version 2 (then
 * upgraded).  quick_check runs unless the previous stop was clean (a fresh
 * index needs none).  0, or -EIO after logging.
 */
static int index_check(struct cache_index *ix)
{
	char buf[256];
	long version;

	if (index_query_text(ix, "PRAGMA user_version", buf, sizeof(buf)) < 0)
		return -EIO;
	version = strtol(buf, NULL, 10);
	if (version == 0 &&
	    index_query_text(ix, "SELECT count(*) FROM sqlite_master", buf, sizeof(buf)) == 0 &&
	    strcmp(buf, "0") == 0) {
		if (index_create_schema(ix) < 0)
			return -EIO;
		log_info("index: %s: created", ix->path);
		version = INDEX_SCHEMA_VERSION;
	} else {
		ix->was_clean = version == INDEX_SCHEMA_VERSION && index_clean_mark(ix);
		if (ix->was_clean)
			log_info("index: %s: clean stop recorded, quick_check skipped", ix->path);
		else if (index_quick_check(ix) < 0)
			return -EIO;
		else
			log_info("index: %s: no clean stop recorded, quick_check passed", ix->path);
		if (version == 2 && index_migrate_v2(ix) == 0)
			version = INDEX_SCHEMA_VERSION;
	}
	if (version != INDEX_SCHEMA_VERSION) {
		log_warning("index: %s: schema version %ld, expected %d", ix->path, version,
			    INDEX_SCHEMA_VERSION);
		return -EIO;
	}
	if (sqlite3_exec(ix->db, INDEX_LRU_SQL "; " INDEX_WOPEN_SQL, NULL, NULL, NULL) !=
	    SQLITE_OK) {
		index_log_sqlite(ix, "create indexes");
		return -EIO;
	}
	return 0;
}

/* Also the last part of the schema check: every statement must compile. */
static int index_prepare(struct cache_index *ix)
{
	for (int s = 0; s < ST_COUNT; s++) {
		if (sqlite3_prepare_v3(ix->db, index_stmts[s].sql, -1, SQLITE_PREPARE_PERSISTENT,
				       &ix->st[s], NULL) != SQLITE_OK) {
			log_warning("index: %s: %s: %s", ix->path, index_stmts[s].name,
				    sqlite3_errmsg(ix->db));
			return -EIO;
		}
	}
	return 0;
}

void index_close(struct cache_index *ix)
{
	if (!ix)
		return;
	for (int s = 0; s < ST_COUNT; s++)
		sqlite3_finalize(ix->st[s]);
	/* Every statement is finalized, so this cannot be SQLITE_BUSY. */
	if (sqlite3_close(ix->db) != SQLITE_OK)
		log_error("index: %s: close: %s", ix->path, sqlite3_errmsg(ix->db));
	ARRAY_FREE(&ix->ranges);
	ARRAY_FREE(&ix->dirty);
	free(ix->path);
	free(ix);
}

/* Returns NULL, after logging why, when `path` is not a usable index. */
static struct cache_index *index_try_open(const char *path)
{
	struct cache_index *ix = xcalloc(1, sizeof(*ix));
	int rc;

	ix->path = xstrdup(path);
	/* One thread at a time (index.h), so sqlite's own mutexes are not needed. */
	rc = sqlite3_open_v2(path, &ix->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		log_warning("index: %s: open: %s", path,
			    ix->db ? sqlite3_errmsg(ix->db) : sqlite3_errstr(rc));
		index_close(ix);
		return NULL;
	}
	if (index_configure(ix) < 0 || index_check(ix) < 0 || index_prepare(ix) < 0)
		goto fail;
	for (size_t i = 0; i < sizeof(index_schema) / sizeof(index_schema[0]); i++)
		if (index_check_table(ix, index_schema[i].name, index_schema[i].sql) < 0)
			goto fail;
	/*
	 * From here on a crash is an unclean stop: the mark goes before the
	 * caller can write anything, and the commit is synced (synchronous=FULL).
	 */
	if (ix->was_clean &&
	    sqlite3_exec(ix->db, "DELETE FROM clean_stop", NULL, NULL, NULL) != SQLITE_OK) {
		index_log_sqlite(ix, "clear the clean stop mark");
		goto fail;
	}
	return ix;
fail:
	index_close(ix);
	return NULL;
}

/* Remove the database and its WAL and shared-memory files, if present. */
static void index_remove_files(const char *path)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char name[4096];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", path, suffixes[i]);
		if (unlink(name) < 0 && errno != ENOENT)
			log_error("index: unlink %s: %s", name, strerror(errno));
	}
}

/* DIR/index.sqlite into path: 0, or -1 after logging when it does not fit. */
static int index_path(const char *dir, char *path, size_t size)
{
	if ((size_t)snprintf(path, size, "%s/index.sqlite", dir) < size)
		return 0;
	log_error("index: %s: directory name too long", dir);
	return -1;
}

/* A fresh index at `path`, whatever was there: NULL after logging. */
static struct cache_index *index_fresh(const char *path)
{
	struct cache_index *ix;

	index_remove_files(path);
	ix = index_try_open(path);
	if (!ix)
		log_error("index: %s: cannot create a fresh index", path);
	return ix;
}

struct cache_index *index_open(const char *dir, int *was_reset)
{
	struct cache_index *ix;
	char path[4096];

	*was_reset = 0;
	if (index_path(dir, path, sizeof(path)) < 0)
		return NULL;
	ix = index_try_open(path);
	if (ix)
		return ix;
	log_warning("index: %s unusable, starting with an empty cache", path);
	*was_reset = 1;
	return index_fresh(path);
}

/*
 * The gid list from a wb_gids blob.  Anything but a whole number of at most
 * INDEX_GIDS_MAX gids is a damaged row: keep the whole gids that fit, and
 * log the first such object of a load only.
 */
static void index_gids_from_db(const char *path, int *gids_logged, sqlite3_stmt *st, int col,
			       struct index_record *rec)
{
	const uint8_t *p = sqlite3_column_blob(st, col);
	size_t len = (size_t)sqlite3_column_bytes(st, col);

	rec->wb_ngids = (uint32_t)(len / 4 < INDEX_GIDS_MAX ? len / 4 : INDEX_GIDS_MAX);
	if ((len % 4 != 0 || len / 4 > INDEX_GIDS_MAX) && !*gids_logged) {
		log_warning("index: %s: object %" PRIu64 ": gid list of %zu bytes, using %" PRIu32
			    " gids (further objects not logged)", path, rec->id, len,
			    rec->wb_ngids);
		*gids_logged = 1;
	}
	for (uint32_t i = 0; i < rec->wb_ngids; i++, p += 4)
		rec->wb_gids[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				  (uint32_t)p[3] << 24;
}

/*
 * Fill rec from the current row of a statement selecting INDEX_OBJECT_COLUMNS
 * (ranges excepted; rec->volume points into the row).  0, or -EIO after
 * logging for a row without a volume or a valid file handle.
 */
static int index_row_to_record(const char *path, int *gids_logged, sqlite3_stmt *st,
			       struct index_record *rec)
{
	const void *fh = sqlite3_column_blob(st, 2);
	int fh_len = sqlite3_column_bytes(st, 2);

	memset(rec, 0, sizeof(*rec));
	rec->id = u64_from_db(sqlite3_column_int64(st, 0));
	rec->volume = (const char *)sqlite3_column_text(st, 1);
	if (!rec->volume || !fh || fh_len < 1 || fh_len > NFS3_FHSIZE_MAX) {
		log_error("index: %s: object %" PRIu64 ": bad volume or file handle", path,
			  rec->id);
		return -EIO;
	}
	memcpy(rec->fh, fh, (size_t)fh_len);
	rec->fh_len = (uint32_t)fh_len;
	rec->size = u64_from_db(sqlite3_column_int64(st, 3));
	rec->mtime_ns = sqlite3_column_int64(st, 4);
	rec->ctime_ns = sqlite3_column_int64(st, 5);
	rec->fileid = u64_from_db(sqlite3_column_int64(st, 6));
	rec->last_access_s = sqlite3_column_int64(st, 7);
	rec->wopen = sqlite3_column_int64(st, 8) != 0;
	rec->wb_uid = (uint32_t)sqlite3_column_int64(st, 9);   /* modulo 2^32: stored in range */
	rec->wb_gid = (uint32_t)sqlite3_column_int64(st, 10);
	index_gids_from_db(path, gids_logged, st, 11, rec);
	return 0;
}

static void index_pairs_append(index_pairs *p, int64_t start, int64_t end)
{
	ARRAY_PUSH(p, u64_from_db(start));
	ARRAY_PUSH(p, u64_from_db(end));
}

static void index_ranges_reverse(uint64_t *pairs, size_t n)
{
	if (n < 2)
		return;
	for (size_t i = 0, j = n - 1; i < j; i++, j--) {
		uint64_t start = pairs[2 * i], end = pairs[2 * i + 1];

		pairs[2 * i] = pairs[2 * j];
		pairs[2 * i + 1] = pairs[2 * j + 1];
		pairs[2 * j] = start;
		pairs[2 * j + 1] = end;
	}
}

/*
 * The cursor returns an object's ranges in signed order of the stored
 * start, which puts starts above INT64_MAX first: rotate them to the end so
 * the caller sees ascending unsigned starts.
 */
static void index_ranges_unsigned_order(uint64_t *pairs, size_t n)
{
	size_t high = 0;

	while (high < n && pairs[2 * high] > INT64_MAX)
		high++;
	if (high == 0 || high == n)
		return;
	index_ranges_reverse(pairs, n);
	index_ranges_reverse(pairs, n - high);
	index_ranges_reverse(pairs + 2 * (n - high), high);
}

/*
 * Advance the cursor of statement `s` (ST_LOAD_RANGES or ST_LOAD_DIRTY, last
 * step result `rc`) past the rows of object `id`, collecting them into
 * `pairs`.  The cursors run in the same id order as the objects one, so rows
 * of ids below `id` belong to no object and are skipped.  Returns the last
 * step result.
 */
static int index_collect_pairs(struct cache_index *ix, enum index_stmt s, int rc, int64_t id,
			       index_pairs *pairs, size_t *npairs)
{
	sqlite3_stmt *st = ix->st[s];
	int64_t object;

	ARRAY_CLEAR(pairs);
	for (; rc == SQLITE_ROW; rc = sqlite3_step(st)) {
		object = sqlite3_column_int64(st, 0);
		if (object > id)
			break;
		if (object == id)
			index_pairs_append(pairs, sqlite3_column_int64(st, 1),
					   sqlite3_column_int64(st, 2));
	}
	*npairs = pairs->n / 2;
	index_ranges_unsigned_order(pairs->v, *npairs);
	return rc;
}

/* A cursor still usable: on a row or at its end. */
static int index_cursor_ok(int rc)
{
	return rc == SQLITE_ROW || rc == SQLITE_DONE;
}

/* Bind [lo, hi] to a load cursor and step it to its first row. */
static int index_load_start(struct cache_index *ix, enum index_stmt s, int64_t lo, int64_t hi)
{
	sqlite3_stmt *st = ix->st[s];

	sqlite3_reset(st);   /* a cursor must be reset before it can be rebound */
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	return sqlite3_step(st);
}

/* index_load over the stored ids in [lo, hi]: objects, ranges and dirty ranges merged. */
static int index_load_span(struct cache_index *ix, int64_t lo, int64_t hi,
			   int (*fn)(const struct index_record *rec, void *ctx), void *ctx)
{
	struct index_record rec;
	int orc, rrc, drc, ret;
	int64_t id;

	orc = index_load_start(ix, ST_LOAD_OBJECTS, lo, hi);
	rrc = index_load_start(ix, ST_LOAD_RANGES, lo, hi);
	drc = index_load_start(ix, ST_LOAD_DIRTY, lo, hi);
	for (; orc == SQLITE_ROW; orc = sqlite3_step(ix->st[ST_LOAD_OBJECTS])) {
		if (index_row_to_record(ix->path, &ix->gids_logged, ix->st[ST_LOAD_OBJECTS], &rec) < 0)
			return -EIO;
		id = u64_to_db(rec.id);
		rrc = index_collect_pairs(ix, ST_LOAD_RANGES, rrc, id, &ix->ranges, &rec.nranges);
		drc = index_collect_pairs(ix, ST_LOAD_DIRTY, drc, id, &ix->dirty, &rec.ndirty);
		if (!index_cursor_ok(rrc) || !index_cursor_ok(drc))
			break;
		rec.ranges = ix->ranges.v;
		rec.dirty = ix->dirty.v;
		ret = fn(&rec, ctx);
		if (ret)
			return ret;
	}
	if (orc == SQLITE_DONE && index_cursor_ok(rrc) && index_cursor_ok(drc))
		return 0;
	index_log_sqlite(ix, "load");
	return -EIO;
}

int index_load(struct cache_index *ix, int (*fn)(const struct index_record *rec, void *ctx),
	       void *ctx)
{
	int ret = 0;

	ix->gids_logged = 0;
	for (int i = 0; i < 2 && ret == 0; i++)
		ret = index_load_span(ix, index_load_bounds[i][0], index_load_bounds[i][1], fn, ctx);
	/* Reset so that no read transaction stays open behind the cursors. */
	sqlite3_reset(ix->st[ST_LOAD_OBJECTS]);
	sqlite3_reset(ix->st[ST_LOAD_RANGES]);
	sqlite3_reset(ix->st[ST_LOAD_DIRTY]);
	return ret;
}

uint64_t index_max_id(struct cache_index *ix)
{
	static const enum index_stmt order[] = { ST_MAX_ID_NEGATIVE, ST_MAX_ID_POSITIVE };
	uint64_t id = 0;
	int rc = SQLITE_DONE;

	for (size_t i = 0; i < 2 && rc == SQLITE_DONE; i++) {
		sqlite3_stmt *st = ix->st[order[i]];

		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW)
			id = u64_from_db(sqlite3_column_int64(st, 0));
		else if (rc != SQLITE_DONE)
			index_log_sqlite(ix, index_stmts[order[i]].name);
		sqlite3_reset(st);
	}
	return id;
}

/* Insert `n` pairs of object `id` with statement `s` (ST_INSERT_RANGE or ST_INSERT_DIRTY). */
static int index_write_pairs(struct cache_index *ix, enum index_stmt s, uint64_t id,
			     const uint64_t *pairs, size_t n)
{
	sqlite3_stmt *st = ix->st[s];

	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(st, 1, u64_to_db(id));
		sqlite3_bind_int64(st, 2, u64_to_db(pairs[2 * i]));
		sqlite3_bind_int64(st, 3, u64_to_db(pairs[2 * i + 1]));
		if (index_step_done(ix, s) < 0)
			return -EIO;
	}
	return 0;
}

/* The wb_gids blob: rec->wb_ngids little-endian u32s into buf; returns its bytes. */
static int index_gids_to_db(const struct index_record *rec, uint8_t buf[INDEX_GIDS_MAX * 4])
{
	for (uint32_t i = 0; i < rec->wb_ngids; i++) {
		buf[4 * i] = (uint8_t)rec->wb_gids[i];
		buf[4 * i + 1] = (uint8_t)(rec->wb_gids[i] >> 8);
		buf[4 * i + 2] = (uint8_t)(rec->wb_gids[i] >> 16);
		buf[4 * i + 3] = (uint8_t)(rec->wb_gids[i] >> 24);
	}
	return (int)rec->wb_ngids * 4;
}

static int index_write_object(struct cache_index *ix, const struct index_record *rec)
{
	sqlite3_stmt *st = ix->st[ST_UPSERT_OBJECT];
	uint8_t gids[INDEX_GIDS_MAX * 4];

	assert(rec->volume && rec->fh_len >= 1 && rec->fh_len <= NFS3_FHSIZE_MAX);
	assert(rec->nranges == 0 || rec->ranges);
	assert(rec->ndirty == 0 || rec->dirty);
	assert(rec->wb_ngids <= INDEX_GIDS_MAX);
	/*
	 * SQLITE_STATIC: the step below is done before the caller's memory
	 * and `gids` go.  `gids` is never NULL, so no gids binds an empty
	 * blob, not a NULL that the NOT NULL column would refuse.
	 */
	sqlite3_bind_int64(st, 1, u64_to_db(rec->id));
	sqlite3_bind_text(st, 2, rec->volume, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, rec->fh, (int)rec->fh_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, u64_to_db(rec->size));
	sqlite3_bind_int64(st, 5, rec->mtime_ns);
	sqlite3_bind_int64(st, 6, rec->ctime_ns);
	sqlite3_bind_int64(st, 7, u64_to_db(rec->fileid));
	sqlite3_bind_int64(st, 8, rec->last_access_s);
	sqlite3_bind_int64(st, 9, rec->wopen != 0);
	sqlite3_bind_int64(st, 10, rec->wb_uid);
	sqlite3_bind_int64(st, 11, rec->wb_gid);
	sqlite3_bind_blob(st, 12, gids, index_gids_to_db(rec, gids), SQLITE_STATIC);
	sqlite3_bind_int64(st, 13, (int64_t)index_ranges_bytes(rec->ranges, rec->nranges));
	if (index_step_done(ix, ST_UPSERT_OBJECT) < 0 ||
	    index_write_pairs(ix, ST_INSERT_RANGE, rec->id, rec->ranges, rec->nranges) < 0 ||
	    index_write_pairs(ix, ST_INSERT_DIRTY, rec->id, rec->dirty, rec->ndirty) < 0)
		return -EIO;
	return 0;
}

/* Replace or remove one record: its old ranges and dirty ranges always go first. */
static int index_write_one(struct cache_index *ix, const struct index_record *rec)
{
	int64_t id = u64_to_db(rec->id);

	assert(rec->id > 0);
	if (rec->touched) {
		sqlite3_bind_int64(ix->st[ST_TOUCH_OBJECT], 1, id);
		sqlite3_bind_int64(ix->st[ST_TOUCH_OBJECT], 2, rec->last_access_s);
		return index_step_done(ix, ST_TOUCH_OBJECT);
	}
	sqlite3_bind_int64(ix->st[ST_DELETE_RANGES], 1, id);
	if (index_step_done(ix, ST_DELETE_RANGES) < 0)
		return -EIO;
	sqlite3_bind_int64(ix->st[ST_DELETE_DIRTY], 1, id);
	if (index_step_done(ix, ST_DELETE_DIRTY) < 0)
		return -EIO;
	if (!rec->deleted)
		return index_write_object(ix, rec);
	sqlite3_bind_int64(ix->st[ST_DELETE_OBJECT], 1, id);
	return index_step_done(ix, ST_DELETE_OBJECT);
}

int index_write(struct cache_index *ix, const struct index_record *recs, size_t n)
{
	int ret = index_step_done(ix, ST_BEGIN);

	for (size_t i = 0; ret == 0 && i < n; i++)
		ret = index_write_one(ix, &recs[i]);
	if (ret == 0)
		ret = index_step_done(ix, ST_COMMIT);
	/* A failed COMMIT may leave the transaction open (SQLITE_BUSY), or not. */
	if (ret < 0 && !sqlite3_get_autocommit(ix->db))
		index_step_done(ix, ST_ROLLBACK);
	return ret;
}

/*
 * TRUNCATE: the WAL file shrinks back instead of staying at its largest.  It
 * waits (busy timeout) for lookups of a reader in progress; a reader that
 * stays longer leaves the checkpoint partial (SQLITE_BUSY), which is not an
 * error: the next one finishes it.
 */
int index_checkpoint(struct cache_index *ix)
{
	int rc = sqlite3_wal_checkpoint_v2(ix->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);

	if (rc == SQLITE_BUSY) {
		log_debug("index: %s: checkpoint: a reader is in the way, partial", ix->path);
		return 0;
	}
	if (rc != SQLITE_OK) {
		index_log_sqlite(ix, "checkpoint");
		return -EIO;
	}
	return 0;
}

int index_lru(struct cache_index *ix, const char *volume, struct index_cursor *cur,
	      struct index_lru_entry *out, size_t max)
{
	sqlite3_stmt *st = ix->st[ST_LRU];
	size_t n = 0;
	int rc = SQLITE_DONE;

	sqlite3_bind_text(st, 1, volume, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, cur->last_access_s);
	sqlite3_bind_int64(st, 3, cur->id);
	sqlite3_bind_int64(st, 4, (int64_t)max);
	while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *fh = sqlite3_column_blob(st, 1);
		int fh_len = sqlite3_column_bytes(st, 1);
		struct index_lru_entry *e = &out[n];

		cur->id = sqlite3_column_int64(st, 0);
		cur->last_access_s = sqlite3_column_int64(st, 2);
		if (!fh || fh_len < 1 || fh_len > NFS3_FHSIZE_MAX)
			continue;   /* a damaged row: index_load refused it too */
		e->at = *cur;
		e->id = u64_from_db(cur->id);
		e->last_access_s = cur->last_access_s;
		e->bytes = u64_from_db(sqlite3_column_int64(st, 3));
		e->nranges = (uint32_t)sqlite3_column_int64(st, 4);
		memcpy(e->fh, fh, (size_t)fh_len);
		e->fh_len = (uint32_t)fh_len;
		n++;
	}
	if (n < max && rc != SQLITE_DONE) {
		index_log_sqlite(ix, index_stmts[ST_LRU].name);
		sqlite3_reset(st);
		return -EIO;
	}
	sqlite3_reset(st);
	return (int)n;
}

int index_scan(struct cache_index *ix,
	       int (*fn)(uint64_t id, const char *volume, int has_ranges, uint64_t bytes,
			 void *ctx), void *ctx)
{
	sqlite3_stmt *st = ix->st[ST_SCAN];
	int rc, ret = 0;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *volume = (const char *)sqlite3_column_text(st, 1);
		if ((ret = fn(u64_from_db(sqlite3_column_int64(st, 0)), volume ? volume : "",
			      sqlite3_column_int(st, 2) != 0,
			      u64_from_db(sqlite3_column_int64(st, 3)), ctx)) != 0)
			break;
	}
	if (ret == 0 && rc != SQLITE_DONE) {
		index_log_sqlite(ix, index_stmts[ST_SCAN].name);
		ret = -EIO;
	}
	sqlite3_reset(st);
	return ret;
}

int index_totals(struct cache_index *ix, const char *volume, uint64_t *objects, uint64_t *bytes)
{
	sqlite3_stmt *st = ix->st[ST_TOTALS];
	int rc;

	*objects = *bytes = 0;
	sqlite3_bind_text(st, 1, volume, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*objects = u64_from_db(sqlite3_column_int64(st, 0));
		*bytes = u64_from_db(sqlite3_column_int64(st, 1));
	} else if (rc != SQLITE_DONE) {
		index_log_sqlite(ix, index_stmts[ST_TOTALS].name);
	}
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

/*
 * The (start, end) pairs of stored object `id` from `st` (a "SELECT start,
 * end ... WHERE object = ?1 ORDER BY start" statement) into `pairs`, in
 * ascending unsigned start order.  Returns the last step result: SQLITE_DONE
 * when all were read; the caller logs anything else.  `st` is reset.
 */
static int index_fetch_pairs(sqlite3_stmt *st, int64_t id, index_pairs *pairs, size_t *npairs)
{
	int rc;

	ARRAY_CLEAR(pairs);
	sqlite3_bind_int64(st, 1, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		index_pairs_append(pairs, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
	sqlite3_reset(st);
	*npairs = pairs->n / 2;
	index_ranges_unsigned_order(pairs->v, *npairs);
	return rc;
}

/*
 * index_load_pending for one object: fn(rec, ctx) when object `id` is of
 * `volume`.  An id without an object (a stray dirty_ranges row) is skipped,
 * as index_load skips it.  Returns fn's result, 0, or -EIO after logging.
 */
static int index_load_one(struct cache_index *ix, const char *volume, uint64_t id,
			  int (*fn)(const struct index_record *rec, void *ctx), void *ctx)
{
	sqlite3_stmt *st = ix->st[ST_OBJECT_BY_ID];
	struct index_record rec;
	int rc, ours = 0;

	sqlite3_bind_int64(st, 1, u64_to_db(id));
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (index_row_to_record(ix->path, &ix->gids_logged, st, &rec) < 0) {
			sqlite3_reset(st);
			return -EIO;
		}
		ours = strcmp(rec.volume, volume) == 0;
		rec.volume = volume;   /* the same text, and it outlives the row */
	} else if (rc != SQLITE_DONE) {
		index_log_sqlite(ix, index_stmts[ST_OBJECT_BY_ID].name);
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? 0 : -EIO;
	if (!ours)
		return 0;
	if (index_fetch_pairs(ix->st[ST_OBJECT_RANGES], u64_to_db(id), &ix->ranges,
			      &rec.nranges) != SQLITE_DONE ||
	    index_fetch_pairs(ix->st[ST_OBJECT_DIRTY], u64_to_db(id), &ix->dirty,
			      &rec.ndirty) != SQLITE_DONE) {
		index_log_sqlite(ix, "load pending ranges");
		return -EIO;
	}
	rec.ranges = ix->ranges.v;
	rec.dirty = ix->dirty.v;
	return fn(&rec, ctx);
}

static int index_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int index_load_pending(struct cache_index *ix, const char *volume,
		       int (*fn)(const struct index_record *rec, void *ctx), void *ctx)
{
	sqlite3_stmt *st = ix->st[ST_PENDING_IDS];
	ARRAY(uint64_t) ids = { 0 };
	int rc, ret = 0;

	ix->gids_logged = 0;
	sqlite3_bind_text(st, 1, volume, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		ARRAY_PUSH(&ids, u64_from_db(sqlite3_column_int64(st, 0)));
	if (rc != SQLITE_DONE) {
		index_log_sqlite(ix, index_stmts[ST_PENDING_IDS].name);
		ret = -EIO;
	}
	sqlite3_reset(st);
	if (ret == 0 && ids.n > 1)
		qsort(ids.v, ids.n, sizeof(*ids.v), index_u64_cmp);   /* index_load's order */
	for (size_t i = 0; ret == 0 && i < ids.n; i++)
		ret = index_load_one(ix, volume, ids.v[i], fn, ctx);
	ARRAY_FREE(&ids);
	return ret;
}

int index_mark_clean(struct cache_index *ix)
{
	if (ix->damaged) {
		log_warning("index: %s: damaged while running: not marked clean", ix->path);
		return -EIO;
	}
	return index_step_done(ix, ST_MARK_CLEAN);
}

int index_damaged(const struct cache_index *ix)
{
	return ix->damaged;
}

void index_set_damaged(struct cache_index *ix)
{
	ix->damaged = 1;
}

struct cache_index *index_recreate(struct cache_index *ix, const char *dir)
{
	char path[4096];

	index_close(ix);
	return index_path(dir, path, sizeof(path)) < 0 ? NULL : index_fresh(path);
}

int index_drop_ranges(struct cache_index *ix, const char *volume)
{
	int ret = index_step_done(ix, ST_BEGIN);

	if (ret == 0) {
		sqlite3_bind_text(ix->st[ST_VOLUME_DROP_RANGES], 1, volume, -1, SQLITE_STATIC);
		ret = index_step_done(ix, ST_VOLUME_DROP_RANGES);
	}
	if (ret == 0) {
		sqlite3_bind_text(ix->st[ST_VOLUME_DROP_BYTES], 1, volume, -1, SQLITE_STATIC);
		ret = index_step_done(ix, ST_VOLUME_DROP_BYTES);
	}
	if (ret == 0)
		ret = index_step_done(ix, ST_COMMIT);
	if (ret < 0 && !sqlite3_get_autocommit(ix->db))
		index_step_done(ix, ST_ROLLBACK);
	return ret;
}

static void index_reader_log(struct cache_index_reader *r, const char *what)
{
	if (sqlite_says_damaged(r->db)) {
		if (!r->damaged)
			log_error("index: %s: %s: %s: the file is damaged; it is not marked "
				  "clean at the stop, so the next start checks it", r->path, what,
				  sqlite3_errmsg(r->db));
		r->damaged = 1;
		return;
	}
	log_error("index: %s: %s: %s", r->path, what, sqlite3_errmsg(r->db));
}

int index_reader_damaged(const struct cache_index_reader *r)
{
	return r->damaged;
}

/* Run a reader statement that returns no rows.  0, or -EIO after logging. */
static int index_reader_step_done(struct cache_index_reader *r, enum reader_stmt s)
{
	int rc = sqlite3_step(r->st[s]);

	if (rc != SQLITE_DONE)
		index_reader_log(r, reader_stmts[s].name);
	sqlite3_reset(r->st[s]);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

void index_reader_close(struct cache_index_reader *r)
{
	if (!r)
		return;
	for (int s = 0; s < RD_COUNT; s++)
		sqlite3_finalize(r->st[s]);
	if (sqlite3_close(r->db) != SQLITE_OK)
		log_error("index: %s: close reader: %s", r->path, sqlite3_errmsg(r->db));
	ARRAY_FREE(&r->ranges);
	ARRAY_FREE(&r->dirty);
	free(r->volume);
	free(r->path);
	free(r);
}

struct cache_index_reader *index_reader_open(const char *dir)
{
	struct cache_index_reader *r;
	char path[4096];
	int rc;

	/* Two connections on two threads need sqlite's multi-thread mode at least. */
	if (sqlite3_threadsafe() == 0) {
		log_error("index: sqlite is built without thread support: no lookups on a reader");
		return NULL;
	}
	if (index_path(dir, path, sizeof(path)) < 0)
		return NULL;
	r = xcalloc(1, sizeof(*r));
	r->path = xstrdup(path);
	/* Its own connection, used by one thread at a time: no sqlite mutexes needed. */
	rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		log_error("index: %s: open reader: %s", path,
			  r->db ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(r->db, INDEX_BUSY_TIMEOUT_MS);
	for (int s = 0; s < RD_COUNT; s++) {
		if (sqlite3_prepare_v3(r->db, reader_stmts[s].sql, -1, SQLITE_PREPARE_PERSISTENT,
				       &r->st[s], NULL) != SQLITE_OK) {
			index_reader_log(r, reader_stmts[s].name);
			goto fail;
		}
	}
	return r;
fail:
	index_reader_close(r);
	return NULL;
}

/* rec->volume into the reader's own buffer, so that it outlives the row. */
static void index_reader_keep_volume(struct cache_index_reader *r, struct index_record *rec)
{
	size_t len = strlen(rec->volume) + 1;

	if (len > r->volume_size) {
		r->volume = xreallocarray(r->volume, len, 1);
		r->volume_size = len;
	}
	memcpy(r->volume, rec->volume, len);
	rec->volume = r->volume;
}

int index_lookup(struct cache_index_reader *r, const char *volume, const uint8_t *fh,
		 uint32_t fh_len, struct index_record *rec)
{
	sqlite3_stmt *st = r->st[RD_OBJECT];
	int64_t id;
	int rc;

	assert(fh_len >= 1 && fh_len <= NFS3_FHSIZE_MAX);
	/* A read transaction for this lookup only: the next one sees later commits. */
	if (index_reader_step_done(r, RD_BEGIN) < 0)
		return -EIO;
	sqlite3_bind_text(st, 1, volume, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 2, fh, (int)fh_len, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (index_row_to_record(r->path, &r->gids_logged, st, rec) < 0)
			goto fail_logged;
		index_reader_keep_volume(r, rec);
	} else if (rc != SQLITE_DONE) {
		goto fail;
	}
	sqlite3_reset(st);
	if (rc == SQLITE_ROW) {
		id = u64_to_db(rec->id);
		if (index_fetch_pairs(r->st[RD_RANGES], id, &r->ranges, &rec->nranges) !=
		    SQLITE_DONE ||
		    index_fetch_pairs(r->st[RD_DIRTY], id, &r->dirty, &rec->ndirty) != SQLITE_DONE)
			goto fail;
		rec->ranges = r->ranges.v;
		rec->dirty = r->dirty.v;
	}
	if (index_reader_step_done(r, RD_COMMIT) < 0)
		goto fail_logged;
	return rc == SQLITE_ROW;
fail:
	index_reader_log(r, reader_stmts[RD_OBJECT].name);
fail_logged:
	sqlite3_reset(st);
	if (!sqlite3_get_autocommit(r->db))
		index_reader_step_done(r, RD_ROLLBACK);
	return -EIO;
}
