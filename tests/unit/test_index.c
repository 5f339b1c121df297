/*
 * test_index.c — the sqlite index (cache/index.c): records survive a close
 * and reopen bit for bit (64-bit unsigned values above INT64_MAX, a 64-byte
 * file handle, dirty ranges, the write-back credential with 0 to 16 gids),
 * replace and delete take the old ranges and dirty ranges with them, a
 * failed write leaves nothing behind, a damaged gid list is clamped, and an
 * unusable file (garbage, random bytes, another schema version such as the
 * version 1 layout, another table layout) is reset rather than trusted.
 * Version 3: the per-volume totals stay exact through every kind of write
 * and through the upgrade of a version 2 file, which keeps its objects;
 * only the dirty or open objects load at start; a reader finds objects by
 * key and sees later commits; the queries use indexes; quick_check runs
 * only after an unclean stop; a 200,000-object index opens quickly.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/index.c"

#include "tests/unit/tap.h"

#define LOADED_MAX 8

static char dir[256];
static char db_path[300];

/* A deep copy of what index_load handed out. */
struct loaded {
	struct index_record rec;
	char volume[64];
	uint64_t ranges[16];
	uint64_t dirty[16];
};

struct load_ctx {
	struct loaded got[LOADED_MAX];
	size_t n;
	size_t stop_after;   /* nonzero: return 42 from the callback after this many */
};

static int load_cb(const struct index_record *rec, void *arg)
{
	struct load_ctx *ctx = arg;
	struct loaded *l;

	if (ctx->n == LOADED_MAX || rec->nranges > 8 || rec->ndirty > 8)
		return -1000;
	l = &ctx->got[ctx->n++];
	l->rec = *rec;
	snprintf(l->volume, sizeof(l->volume), "%s", rec->volume);
	if (rec->nranges)
		memcpy(l->ranges, rec->ranges, rec->nranges * 2 * sizeof(uint64_t));
	if (rec->ndirty)
		memcpy(l->dirty, rec->dirty, rec->ndirty * 2 * sizeof(uint64_t));
	l->rec.volume = l->volume;
	l->rec.ranges = l->ranges;
	l->rec.dirty = l->dirty;
	if (ctx->stop_after && ctx->n == ctx->stop_after)
		return 42;
	return 0;
}

static int load_all(struct cache_index *ix, struct load_ctx *ctx)
{
	memset(ctx, 0, sizeof(*ctx));
	return index_load(ix, load_cb, ctx);
}

/* 1 when every field index_load gives back matches what was written. */
static int same_record(const struct index_record *got, const struct index_record *want)
{
	return got->id == want->id && strcmp(got->volume, want->volume) == 0 &&
	       got->fh_len == want->fh_len && memcmp(got->fh, want->fh, want->fh_len) == 0 &&
	       got->size == want->size && got->mtime_ns == want->mtime_ns &&
	       got->ctime_ns == want->ctime_ns && got->fileid == want->fileid &&
	       got->last_access_s == want->last_access_s && got->nranges == want->nranges &&
	       (want->nranges == 0 ||
		memcmp(got->ranges, want->ranges, want->nranges * 2 * sizeof(uint64_t)) == 0) &&
	       got->ndirty == want->ndirty &&
	       (want->ndirty == 0 ||
		memcmp(got->dirty, want->dirty, want->ndirty * 2 * sizeof(uint64_t)) == 0) &&
	       got->wopen == want->wopen && got->wb_uid == want->wb_uid &&
	       got->wb_gid == want->wb_gid && got->wb_ngids == want->wb_ngids &&
	       memcmp(got->wb_gids, want->wb_gids, want->wb_ngids * sizeof(uint32_t)) == 0 &&
	       !got->deleted;
}

static int64_t count_rows(struct cache_index *ix, const char *sql)
{
	sqlite3_stmt *st;
	int64_t n = -1;

	if (sqlite3_prepare_v2(ix->db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static const uint64_t r1_ranges[] = {
	0, 4096,
	(uint64_t)INT64_MAX - 1, (uint64_t)INT64_MAX + 1,
	(uint64_t)INT64_MAX + 4096, (uint64_t)INT64_MAX + 8192,
	UINT64_MAX - 100, UINT64_MAX - 1,
};
static const uint64_t r3_ranges[] = { 1u << 20, 2u << 20 };
/* Inside r1_ranges; given in unsigned order, which the load must keep. */
static const uint64_t r1_dirty[] = {
	100, 200,
	1000, 4096,
	(uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 1,
	UINT64_MAX - 50, UINT64_MAX - 1,
};
static const uint64_t r3_dirty[] = { (1u << 20) + 512, (1u << 20) + 1024 };

static struct index_record r1, r2, r3;

static void make_records(void)
{
	memset(&r1, 0, sizeof(r1));
	r1.id = 1;
	r1.volume = "server:/export";
	for (int i = 0; i < NFS3_FHSIZE_MAX; i++)
		r1.fh[i] = (uint8_t)(0xff - i);
	r1.fh_len = NFS3_FHSIZE_MAX;
	r1.size = UINT64_MAX;
	r1.mtime_ns = -1234567890123LL;   /* before the epoch */
	r1.ctime_ns = INT64_MAX;
	r1.fileid = (uint64_t)INT64_MAX + 77;
	r1.last_access_s = 1700000000;
	r1.ranges = r1_ranges;
	r1.nranges = 4;   /* loads back in this, unsigned, order */
	r1.dirty = r1_dirty;
	r1.ndirty = 4;
	r1.wopen = 1;
	r1.wb_uid = 1000;
	r1.wb_gid = 100;
	for (int i = 0; i < INDEX_GIDS_MAX; i++)
		r1.wb_gids[i] = 0x01020304u * (uint32_t)(i + 1);   /* every byte position differs */
	r1.wb_ngids = INDEX_GIDS_MAX;

	r2 = r1;
	r2.id = 2;
	r2.volume = "server:/other";
	r2.fh_len = 1;
	r2.size = 0;
	r2.fileid = 0;
	r2.mtime_ns = r2.ctime_ns = INT64_MIN;
	r2.ranges = NULL;
	r2.nranges = 0;
	r2.dirty = NULL;
	r2.ndirty = 0;
	r2.wopen = 0;
	r2.wb_uid = r2.wb_gid = 0;
	memset(r2.wb_gids, 0, sizeof(r2.wb_gids));
	r2.wb_ngids = 0;

	r3 = r1;
	r3.id = (uint64_t)INT64_MAX + 5;   /* stored negative */
	r3.fh[0] = 0;
	r3.size = 3u << 20;
	r3.ranges = r3_ranges;
	r3.nranges = 1;
	r3.dirty = r3_dirty;
	r3.ndirty = 1;
	r3.wopen = 0;                      /* dirty bytes recorded, closed cleanly */
	r3.wb_uid = UINT32_MAX;            /* above INT32_MAX: stored unsigned */
	r3.wb_gid = 0x80000000u;
	r3.wb_ngids = 3;
}

static struct cache_index *reopen(struct cache_index *ix, int *was_reset)
{
	index_close(ix);
	return index_open(dir, was_reset);
}

static void test_roundtrip(void)
{
	struct index_record recs[3];
	struct load_ctx ctx;
	int was_reset = -1;
	struct cache_index *ix = index_open(dir, &was_reset);

	ok(ix != NULL, "fresh index created");
	is_int(was_reset, 0, "a missing index is created, not reset");
	is_int(index_max_id(ix), 0, "max_id of an empty index is 0");
	is_int(load_all(ix, &ctx), 0, "load of an empty index");
	is_int(ctx.n, 0, "empty index loads nothing");

	recs[0] = r3;   /* written out of id order: load gives them in unsigned id order */
	recs[1] = r1;
	recs[2] = r2;
	is_int(index_write(ix, recs, 3), 0, "write 3 records");
	ok(index_max_id(ix) == r3.id, "max_id is the id above INT64_MAX");
	ix = reopen(ix, &was_reset);
	ok(ix != NULL, "reopened");
	is_int(was_reset, 0, "reopen: no reset");
	is_int(load_all(ix, &ctx), 0, "load after reopen");
	is_int(ctx.n, 3, "3 records loaded");
	ok(ctx.n == 3 && same_record(&ctx.got[0].rec, &r1), "record 1 (64-byte fh, values above INT64_MAX) identical");
	ok(ctx.n == 3 && same_record(&ctx.got[1].rec, &r2), "record 2 (1-byte fh, no ranges) identical");
	ok(ctx.n == 3 && same_record(&ctx.got[2].rec, &r3), "record 3 (id above INT64_MAX) identical, loaded last");
	ok(index_max_id(ix) == r3.id, "max_id after reopen");
	if (ctx.n == 3) {
		const struct index_record *g1 = &ctx.got[0].rec, *g2 = &ctx.got[1].rec;

		is_int(g1->ndirty, 4, "record 1: 4 dirty ranges");
		is_mem(g1->dirty, r1_dirty, sizeof(r1_dirty), "record 1: dirty ranges in unsigned order");
		is_int(g1->wopen, 1, "record 1: wopen set");
		is_int(g1->wb_uid, 1000, "record 1: uid");
		is_int(g1->wb_gid, 100, "record 1: gid");
		is_int(g1->wb_ngids, 16, "record 1: 16 gids");
		is_mem(g1->wb_gids, r1.wb_gids, sizeof(r1.wb_gids), "record 1: the 16 gids");
		is_int(g2->ndirty, 0, "record 2: no dirty ranges");
		is_int(g2->wopen, 0, "record 2: wopen clear");
		is_int(g2->wb_ngids, 0, "record 2: 0 gids");
		is_int(ctx.got[2].rec.wb_uid, UINT32_MAX, "record 3: uid above INT32_MAX");
	}
	is_int(count_rows(ix, "SELECT count(*) FROM dirty_ranges"), 5, "5 dirty range rows");
	is_int(count_rows(ix, "SELECT length(wb_gids) FROM objects WHERE id = 1"), 64,
	       "16 gids stored as 64 bytes");
	is_int(count_rows(ix, "SELECT hex(substr(wb_gids, 1, 4)) = '04030201' FROM objects"
			  " WHERE id = 1"), 1, "gids stored little-endian");

	ctx.n = 0;
	ctx.stop_after = 2;
	is_int(index_load(ix, load_cb, &ctx), 42, "a nonzero callback return stops the load and is returned");
	is_int(ctx.n, 2, "no callback after the one that stopped it");
	index_close(ix);
}

static void test_replace_and_delete(void)
{
	struct index_record rec;
	struct load_ctx ctx;
	int was_reset;
	struct cache_index *ix = index_open(dir, &was_reset);

	rec = r1;
	rec.nranges = 1;   /* fewer ranges: the others must go */
	rec.size = 4096;
	rec.last_access_s++;
	rec.dirty = r1_dirty + 2;   /* one other dirty range, replacing the 4 */
	rec.ndirty = 1;
	rec.wopen = 0;
	rec.wb_uid = 0;
	rec.wb_ngids = 1;
	is_int(index_write(ix, &rec, 1), 0, "replace record 1 with one range");
	is_int(count_rows(ix, "SELECT count(*) FROM ranges WHERE object = 1"), 1, "old ranges of record 1 gone");
	is_int(count_rows(ix, "SELECT count(*) FROM dirty_ranges WHERE object = 1"), 1,
	       "old dirty ranges of record 1 gone");
	is_int(load_all(ix, &ctx), 0, "load after replace");
	ok(ctx.n == 3 && same_record(&ctx.got[0].rec, &rec), "replaced record loads as written");
	ok(ctx.n == 3 && ctx.got[0].rec.ndirty == 1 && ctx.got[0].rec.dirty[0] == 1000 &&
	   ctx.got[0].rec.dirty[1] == 4096, "the new dirty range is the one stored");

	rec.ndirty = 0;
	rec.wb_ngids = 0;
	is_int(index_write(ix, &rec, 1), 0, "replace record 1 with no dirty ranges");
	is_int(count_rows(ix, "SELECT count(*) FROM dirty_ranges WHERE object = 1"), 0,
	       "no dirty ranges of record 1 left");
	is_int(load_all(ix, &ctx), 0, "load after clearing");
	ok(ctx.n == 3 && same_record(&ctx.got[0].rec, &rec), "record 1 clean, 0 gids");
	rec.ndirty = 1;
	rec.wb_ngids = 1;
	is_int(index_write(ix, &rec, 1), 0, "record 1 dirty again");

	memset(&rec, 0, sizeof(rec));
	rec.id = r3.id;
	rec.deleted = 1;
	is_int(index_write(ix, &rec, 1), 0, "delete the record above INT64_MAX");
	is_int(count_rows(ix, "SELECT count(*) FROM ranges"), 1, "its ranges went with it");
	is_int(count_rows(ix, "SELECT count(*) FROM dirty_ranges"), 1, "its dirty ranges went with it");
	ok(index_max_id(ix) == 2, "max_id back to 2");
	rec.id = 1;
	is_int(index_write(ix, &rec, 1), 0, "delete record 1");
	rec.id = 999;
	is_int(index_write(ix, &rec, 1), 0, "deleting an id never stored is not an error");
	ix = reopen(ix, &was_reset);
	is_int(load_all(ix, &ctx), 0, "load after deletes");
	ok(ctx.n == 1 && same_record(&ctx.got[0].rec, &r2), "only record 2 left");
	is_int(count_rows(ix, "SELECT count(*) FROM ranges"), 0, "no ranges left");
	is_int(count_rows(ix, "SELECT count(*) FROM dirty_ranges"), 0, "no dirty ranges left");
	index_close(ix);
}

static void test_failed_write(void)
{
	struct index_record recs[3];
	struct load_ctx ctx;
	int was_reset;
	struct cache_index *ix = index_open(dir, &was_reset);

	recs[0] = r2;
	recs[0].size = 777;            /* would change record 2 */
	recs[1] = r1;
	recs[1].id = 10;               /* a new object with ranges */
	recs[2] = r2;
	recs[2].id = 11;               /* same (volume, fh) as record 2: must fail */
	recs[2].ranges = r3_ranges;
	recs[2].nranges = 1;
	recs[2].dirty = r3_dirty;
	recs[2].ndirty = 1;
	is_int(index_write(ix, recs, 3), -EIO, "write with a duplicate (volume, fh) fails with -EIO");
	is_int(load_all(ix, &ctx), 0, "load after the failed write");
	ok(ctx.n == 1 && same_record(&ctx.got[0].rec, &r2), "record 2 unchanged");
	is_int(count_rows(ix, "SELECT count(*) FROM ranges"), 0, "no ranges of the failed write");
	is_int(count_rows(ix, "SELECT count(*) FROM dirty_ranges"), 0, "no dirty ranges of the failed write");
	ok(index_max_id(ix) == 2, "max_id unchanged");
	ok(sqlite3_get_autocommit(ix->db), "no transaction left open");

	is_int(index_write(ix, recs, 2), 0, "the same write without the duplicate succeeds");
	is_int(load_all(ix, &ctx), 0, "load after it");
	is_int(ctx.n, 2, "2 records");
	is_int(ctx.n == 2 ? ctx.got[0].rec.size : 0, 777, "record 2 updated");
	is_int(index_checkpoint(ix), 0, "checkpoint");
	index_close(ix);
}

static void cleanup_files(void)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char name[320];

	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "%s%s", db_path, suffixes[i]);
		unlink(name);
	}
}

static void cleanup(void)
{
	cleanup_files();
	rmdir(dir);
}

static void write_file(const char *path, off_t offset, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0600);

	if (fd < 0 || pwrite(fd, buf, len, offset) != (ssize_t)len)
		diag("cannot write %s", path);
	if (fd >= 0)
		close(fd);
}

/* Open after damaging the index: must reset, load empty and work again. */
static void expect_reset(const char *what)
{
	struct load_ctx ctx;
	int was_reset = -1;
	struct cache_index *ix = index_open(dir, &was_reset);

	ok(ix != NULL, "%s: index_open still succeeds", what);
	if (!ix)
		return;
	is_int(was_reset, 1, "%s: *was_reset == 1", what);
	is_int(load_all(ix, &ctx), 0, "%s: load", what);
	is_int(ctx.n, 0, "%s: loads empty", what);
	is_int(index_max_id(ix), 0, "%s: max_id 0", what);
	is_int(index_write(ix, &r2, 1), 0, "%s: writable again", what);
	ix = reopen(ix, &was_reset);
	is_int(was_reset, 0, "%s: the fresh index reopens without a reset", what);
	is_int(ix ? load_all(ix, &ctx) : -1, 0, "%s: load after reopen", what);
	is_int(ctx.n, 1, "%s: the record written after the reset is there", what);
	index_close(ix);
}

static void test_corrupt(void)
{
	uint8_t junk[16384];
	char wal[320];

	memset(junk, 0xa5, 4096);
	write_file(db_path, 0, junk, 4096);
	snprintf(wal, sizeof(wal), "%s-wal", db_path);
	write_file(wal, 0, junk, 4096);   /* a stale WAL must not survive the reset */
	expect_reset("first 4 KiB garbage");

	srand(12345);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)rand();
	unlink(db_path);
	write_file(db_path, 0, junk, sizeof(junk));
	expect_reset("random bytes");
}

/* Garbage past the header, inside the tables: only quick_check can tell. */
static void test_corrupt_pages(void)
{
	static struct index_record many[300];
	static char volumes[300][32];
	uint8_t junk[4096];
	struct stat st;
	int was_reset;
	struct cache_index *ix = index_open(dir, &was_reset);

	for (int i = 0; i < 300; i++) {
		many[i] = r1;
		many[i].id = (uint64_t)i + 100;
		snprintf(volumes[i], sizeof(volumes[i]), "server%d:/export", i);
		many[i].volume = volumes[i];
	}
	is_int(index_write(ix, many, 300), 0, "write 300 records");
	index_close(ix);
	ok(stat(db_path, &st) == 0 && st.st_size >= 8 * 4096, "index spans several pages (%lld bytes)",
	   (long long)st.st_size);
	memset(junk, 0x5a, sizeof(junk));
	for (off_t page = 2; page * 4096 < st.st_size; page += 2)
		write_file(db_path, page * 4096, junk, sizeof(junk));
	expect_reset("every other page garbage");
}

static void test_schema_changes(void)
{
	int was_reset;
	struct cache_index *ix = index_open(dir, &was_reset);

	sqlite3_exec(ix->db, "PRAGMA user_version = 99", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("user_version 99");

	ix = index_open(dir, &was_reset);
	sqlite3_exec(ix->db, "DROP TABLE ranges", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("ranges table dropped");

	ix = index_open(dir, &was_reset);
	sqlite3_exec(ix->db, "CREATE INDEX objects_access ON objects (last_access);"
		     "DROP TABLE ranges;"
		     "CREATE TABLE ranges (object INTEGER, start INTEGER, \"end\" INTEGER)",
		     NULL, NULL, NULL);
	index_close(ix);
	expect_reset("ranges table of another layout");

	ix = index_open(dir, &was_reset);
	sqlite3_exec(ix->db, "DROP TABLE ranges; DROP TABLE objects;"
		     "CREATE TABLE foreign_things (x); PRAGMA user_version = 0", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("version 0 with foreign tables");

	ix = index_open(dir, &was_reset);
	sqlite3_exec(ix->db, "DROP TABLE dirty_ranges", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("dirty_ranges table dropped");

	ix = index_open(dir, &was_reset);
	sqlite3_exec(ix->db, "DROP TRIGGER totals_update", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("a totals trigger dropped");

	ix = index_open(dir, &was_reset);
	sqlite3_exec(ix->db, "DROP TABLE totals", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("totals table dropped");

	ix = index_open(dir, &was_reset);
	sqlite3_exec(ix->db, "DROP TABLE dirty_ranges;"
		     "CREATE TABLE dirty_ranges (object INTEGER NOT NULL, start INTEGER NOT NULL,"
		     " \"end\" INTEGER NOT NULL, PRIMARY KEY (object, start))", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("dirty_ranges table with a rowid");
}

/* Log lines (warnings included) go to a file between capture_start and capture_end. */
static char log_path[320];
static int saved_stderr = -1;

static void capture_start_at(enum log_level level);

static void capture_start(void)
{
	capture_start_at(LOG_LEVEL_WARNING);
}

static void capture_start_at(enum log_level level)
{
	int fd;

	snprintf(log_path, sizeof(log_path), "%s/log", dir);
	fflush(stderr);
	saved_stderr = dup(2);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved_stderr < 0 || fd < 0 || dup2(fd, 2) < 0)
		diag("cannot redirect stderr to %s", log_path);
	if (fd >= 0)
		close(fd);
	log_set_level(level);
}

/* Back to stderr; returns how many captured lines contain `needle`. */
static int capture_end(const char *needle)
{
	char line[1024];
	int n = 0;
	FILE *f;

	log_set_level(LOG_LEVEL_ERROR);
	fflush(stderr);
	if (saved_stderr >= 0) {
		dup2(saved_stderr, 2);
		close(saved_stderr);
		saved_stderr = -1;
	}
	f = fopen(log_path, "r");
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	if (f)
		fclose(f);
	unlink(log_path);
	return n;
}

/* A stored gid list that is not 0..16 whole gids: clamped, logged once, no crash. */
static void test_bad_gids(void)
{
	struct index_record recs[2];
	struct load_ctx ctx;
	int was_reset;
	struct cache_index *ix = index_open(dir, &was_reset);

	recs[0] = r1;
	recs[0].id = 20;
	recs[0].volume = "server:/fourth";
	recs[1] = r3;
	recs[1].id = 21;
	recs[1].volume = "server:/third";
	is_int(index_write(ix, recs, 2), 0, "write 2 records");
	/* 17 gids (the 16 of r1, then one more) and 5 bytes (one gid and a stray byte) */
	is_int(sqlite3_exec(ix->db, "UPDATE objects SET wb_gids = wb_gids || x'11223344' WHERE id = 20;"
			    "UPDATE objects SET wb_gids = x'0700000099' WHERE id = 21",
			    NULL, NULL, NULL), SQLITE_OK, "damage both gid lists");
	capture_start();
	is_int(load_all(ix, &ctx), 0, "load with damaged gid lists succeeds");
	is_int(capture_end("gid list of"), 1, "logged once for both objects");
	ok(ctx.n >= 2, "both loaded");
	for (size_t i = 0; i < ctx.n; i++) {
		const struct index_record *g = &ctx.got[i].rec;

		if (g->id == 20) {
			is_int(g->wb_ngids, 16, "17 stored gids clamped to 16");
			is_mem(g->wb_gids, r1.wb_gids, sizeof(r1.wb_gids), "the first 16 kept");
			ok(same_record(g, &recs[0]), "the rest of the record intact");
		} else if (g->id == 21) {
			is_int(g->wb_ngids, 1, "5 bytes: one whole gid");
			is_int(g->wb_gids[0], 7, "that gid");
			is_int(g->wb_gids[1], 0, "nothing past it");
		}
	}
	recs[0].deleted = recs[1].deleted = 1;
	is_int(index_write(ix, recs, 2), 0, "delete them again");
	index_close(ix);
}

/* The version 1 layout, verbatim: no write-back columns, no dirty_ranges. */
#define V1_OBJECTS_SQL \
	"CREATE TABLE objects (id INTEGER PRIMARY KEY, volume TEXT NOT NULL," \
	" fh BLOB NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL," \
	" ctime_ns INTEGER NOT NULL, fileid INTEGER NOT NULL," \
	" last_access INTEGER NOT NULL, UNIQUE (volume, fh))"
#define V1_RANGES_SQL \
	"CREATE TABLE ranges (object INTEGER NOT NULL, start INTEGER NOT NULL," \
	" \"end\" INTEGER NOT NULL, PRIMARY KEY (object, start)) WITHOUT ROWID"

static void test_schema_v1(void)
{
	static const char sql[] = "PRAGMA journal_mode = WAL; BEGIN; " V1_OBJECTS_SQL "; "
		V1_RANGES_SQL "; INSERT INTO objects VALUES (1, 'server:/export', x'01', 4096, 0, 0, 7, 0);"
		" INSERT INTO ranges VALUES (1, 0, 4096); PRAGMA user_version = 1; COMMIT";
	sqlite3 *db = NULL;

	cleanup_files();
	ok(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) ==
	   SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK,
	   "version 1 index created by hand");
	sqlite3_close(db);
	capture_start();
	expect_reset("schema version 1");
	is_int(capture_end("schema version 1, expected 3"), 1, "the version mismatch is logged");

	/* The current tables under the old version number are still the old version. */
	db = NULL;
	sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL);
	sqlite3_exec(db, "PRAGMA user_version = 1", NULL, NULL, NULL);
	sqlite3_close(db);
	expect_reset("version 3 tables at user_version 1");
}

/* The sum of the lengths of every `ranges` row of the objects of `volume`, read back. */
static uint64_t stored_bytes(struct cache_index *ix, const char *volume)
{
	sqlite3_stmt *st;
	uint64_t sum = 0;

	if (sqlite3_prepare_v2(ix->db, "SELECT start, \"end\" FROM ranges JOIN objects"
			       " ON object = id WHERE volume = ?1", -1, &st, NULL) != SQLITE_OK)
		return UINT64_MAX;
	sqlite3_bind_text(st, 1, volume, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW)
		sum += u64_from_db(sqlite3_column_int64(st, 1)) -
		       u64_from_db(sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	return sum;
}

/* index_totals of `volume` equal to (objects, bytes) and to what its rows hold. */
static void totals_are(struct cache_index *ix, const char *volume, uint64_t objects,
		       uint64_t bytes, const char *what)
{
	uint64_t got_objects = 99, got_bytes = 99;
	char sql[200];

	is_int(index_totals(ix, volume, &got_objects, &got_bytes), 0, "%s: index_totals", what);
	ok(got_objects == objects, "%s: %s holds %" PRIu64 " objects (got %" PRIu64 ")", what,
	   volume, objects, got_objects);
	ok(got_bytes == bytes, "%s: %s holds %" PRIu64 " bytes (got %" PRIu64 ")", what, volume,
	   bytes, got_bytes);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM objects WHERE volume = '%s'", volume);
	ok((uint64_t)count_rows(ix, sql) == got_objects && stored_bytes(ix, volume) == got_bytes,
	   "%s: %s totals agree with the rows", what, volume);
}

/* Valid bytes of a record, counted here rather than by the index. */
static uint64_t record_bytes(const struct index_record *rec)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < rec->nranges; i++)
		sum += rec->ranges[2 * i + 1] - rec->ranges[2 * i];
	return sum;
}

static uint64_t scan_bytes_sum;

static int scan_bytes_cb(uint64_t id, const char *volume, int has_ranges, uint64_t bytes,
			 void *ctx)
{
	(void)id, (void)volume, (void)has_ranges, (void)ctx;
	scan_bytes_sum += bytes;
	return 0;
}

static const uint64_t grown_ranges[] = { 0, 8192, 1u << 20, (1u << 20) + 100, 3u << 20, 4u << 20 };

static void test_totals(void)
{
	struct index_record recs[3], rec, dup;
	struct index_cursor cur = INDEX_CURSOR_START;
	struct index_lru_entry lru[4];
	const char *a = "server:/export", *b = "server:/other";
	uint64_t r1_bytes = record_bytes(&r1), r3_bytes = record_bytes(&r3), r3_grown;
	int was_reset;
	struct cache_index *ix;

	cleanup_files();
	ix = index_open(dir, &was_reset);
	is_int(r1_bytes, 4096 + 2 + 4096 + 99, "record 1 holds 8,293 valid bytes");
	totals_are(ix, a, 0, 0, "empty index");
	recs[0] = r1;
	recs[1] = r2;
	recs[2] = r3;
	is_int(index_write(ix, recs, 3), 0, "write records 1, 2, 3");
	totals_are(ix, a, 2, r1_bytes + r3_bytes, "inserts");
	totals_are(ix, b, 1, 0, "inserts");
	totals_are(ix, "server:/none", 0, 0, "a volume never written");
	is_int(count_rows(ix, "SELECT bytes FROM objects WHERE id = 1"), (int64_t)r1_bytes,
	       "the object's bytes column");

	rec = r3;
	rec.ranges = grown_ranges;
	rec.nranges = 3;
	r3_grown = 8192 + 100 + (1u << 20);
	is_int(index_write(ix, &rec, 1), 0, "record 3 grows to 3 ranges");
	totals_are(ix, a, 2, r1_bytes + r3_grown, "ranges grow");
	rec = r1;
	rec.nranges = 1;
	is_int(index_write(ix, &rec, 1), 0, "record 1 shrinks to one range");
	totals_are(ix, a, 2, 4096 + r3_grown, "ranges shrink");

	/* same last access: record 3 first, its id is stored below 0 */
	is_int(index_lru(ix, a, &cur, lru, 4), 2, "lru: 2 objects of the volume");
	ok(lru[0].id == r3.id && lru[0].bytes == r3_grown && lru[0].nranges == 3,
	   "lru entry of record 3: its bytes in 3 ranges");
	ok(lru[1].id == 1 && lru[1].bytes == 4096 && lru[1].nranges == 1,
	   "lru entry of record 1: 4096 bytes in 1 range");

	dup = r2;
	dup.id = 50;
	dup.volume = a;
	dup.fh_len = r1.fh_len;   /* same (volume, fh) as record 1 */
	dup.ranges = grown_ranges;
	dup.nranges = 3;
	is_int(index_write(ix, &dup, 1), -EIO, "a failed write");
	totals_are(ix, a, 2, 4096 + r3_grown, "a failed write changes nothing");

	rec.volume = b;
	is_int(index_write(ix, &rec, 1), 0, "record 1 moves to the other volume");
	totals_are(ix, a, 1, r3_grown, "update of the volume, old one");
	totals_are(ix, b, 2, 4096, "update of the volume, new one");

	memset(&dup, 0, sizeof(dup));
	dup.id = r3.id;
	dup.deleted = 1;
	is_int(index_write(ix, &dup, 1), 0, "delete record 3");
	totals_are(ix, a, 0, 0, "delete");
	recs[0] = r3;
	is_int(index_write(ix, recs, 1), 0, "record 3 written again");
	totals_are(ix, a, 1, r3_bytes, "insert after delete");

	scan_bytes_sum = 0;
	is_int(index_scan(ix, scan_bytes_cb, NULL), 0, "scan");
	ok(scan_bytes_sum == r3_bytes + 4096, "scan hands out every object's bytes");

	is_int(index_drop_ranges(ix, b), 0, "drop the ranges of the other volume");
	totals_are(ix, b, 2, 0, "drop ranges");
	totals_are(ix, a, 1, r3_bytes, "drop ranges of another volume");
	is_int(count_rows(ix, "SELECT count(*) FROM ranges WHERE object = 1"), 0,
	       "record 1 has no ranges left");
	is_int(count_rows(ix, "SELECT count(*) FROM dirty_ranges WHERE object = 1"), 4,
	       "its dirty ranges are kept");
	is_int(count_rows(ix, "SELECT count(*) FROM ranges"), 1, "record 3's range is kept");
	is_int(index_drop_ranges(ix, b), 0, "dropping again is no error");
	ok(sqlite3_get_autocommit(ix->db), "no transaction left open");
	ix = reopen(ix, &was_reset);
	totals_are(ix, b, 2, 0, "after reopen");
	totals_are(ix, a, 1, r3_bytes, "after reopen");
	index_close(ix);
}

/* The version 2 layout, verbatim. */
#define V2_OBJECTS_SQL \
	"CREATE TABLE objects (id INTEGER PRIMARY KEY, volume TEXT NOT NULL," \
	" fh BLOB NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL," \
	" ctime_ns INTEGER NOT NULL, fileid INTEGER NOT NULL," \
	" last_access INTEGER NOT NULL, wopen INTEGER NOT NULL," \
	" wb_uid INTEGER NOT NULL, wb_gid INTEGER NOT NULL, wb_gids BLOB NOT NULL," \
	" UNIQUE (volume, fh))"
#define V2_RANGES_SQL \
	"CREATE TABLE ranges (object INTEGER NOT NULL, start INTEGER NOT NULL," \
	" \"end\" INTEGER NOT NULL, PRIMARY KEY (object, start)) WITHOUT ROWID"
#define V2_DIRTY_RANGES_SQL \
	"CREATE TABLE dirty_ranges (object INTEGER NOT NULL, start INTEGER NOT NULL," \
	" \"end\" INTEGER NOT NULL, PRIMARY KEY (object, start)) WITHOUT ROWID"
#define V2_LRU_SQL "CREATE INDEX objects_lru ON objects (volume, last_access, id)"

/* Insert `n` pairs into a version 2 table by hand. */
static int v2_insert_pairs(sqlite3 *db, const char *table, uint64_t id, const uint64_t *pairs,
			   size_t n)
{
	char sql[100];
	sqlite3_stmt *st;
	int bad = 0;

	snprintf(sql, sizeof(sql), "INSERT INTO %s VALUES (?1, ?2, ?3)", table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(st, 1, u64_to_db(id));
		sqlite3_bind_int64(st, 2, u64_to_db(pairs[2 * i]));
		sqlite3_bind_int64(st, 3, u64_to_db(pairs[2 * i + 1]));
		bad |= sqlite3_step(st) != SQLITE_DONE;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return bad ? -1 : 0;
}

/* One record into a version 2 file, as nfscached of that version wrote it. */
static int v2_insert(sqlite3 *db, const struct index_record *rec)
{
	sqlite3_stmt *st;
	uint8_t gids[INDEX_GIDS_MAX * 4];
	int rc;

	if (sqlite3_prepare_v2(db, "INSERT INTO objects VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
			       " ?9, ?10, ?11, ?12)", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, u64_to_db(rec->id));
	sqlite3_bind_text(st, 2, rec->volume, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, rec->fh, (int)rec->fh_len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, u64_to_db(rec->size));
	sqlite3_bind_int64(st, 5, rec->mtime_ns);
	sqlite3_bind_int64(st, 6, rec->ctime_ns);
	sqlite3_bind_int64(st, 7, u64_to_db(rec->fileid));
	sqlite3_bind_int64(st, 8, rec->last_access_s);
	sqlite3_bind_int64(st, 9, rec->wopen);
	sqlite3_bind_int64(st, 10, rec->wb_uid);
	sqlite3_bind_int64(st, 11, rec->wb_gid);
	sqlite3_bind_blob(st, 12, gids, index_gids_to_db(rec, gids), SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return -1;
	return v2_insert_pairs(db, "ranges", rec->id, rec->ranges, rec->nranges) |
	       v2_insert_pairs(db, "dirty_ranges", rec->id, rec->dirty, rec->ndirty);
}

static void test_migrate_v2(void)
{
	static const char create[] = "PRAGMA journal_mode = WAL; BEGIN; " V2_OBJECTS_SQL "; "
		V2_RANGES_SQL "; " V2_DIRTY_RANGES_SQL "; " V2_LRU_SQL "; PRAGMA user_version = 2";
	uint64_t r1_bytes = record_bytes(&r1), r3_bytes = record_bytes(&r3);
	struct load_ctx ctx;
	struct index_record rec;
	char sql[1024];
	sqlite3 *db = NULL;
	int was_reset = -1;
	struct cache_index *ix;

	cleanup_files();
	ok(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) ==
	   SQLITE_OK && sqlite3_exec(db, create, NULL, NULL, NULL) == SQLITE_OK &&
	   v2_insert(db, &r1) == 0 && v2_insert(db, &r2) == 0 && v2_insert(db, &r3) == 0 &&
	   sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK,
	   "version 2 index with 3 objects, ranges and dirty ranges created by hand");
	sqlite3_close(db);

	capture_start_at(LOG_LEVEL_INFO);
	ix = index_open(dir, &was_reset);
	is_int(capture_end("schema version 2 upgraded to 3 (3 objects kept)"), 1,
	       "the upgrade is logged");
	ok(ix != NULL, "version 2 index opens");
	if (!ix)
		return;
	is_int(was_reset, 0, "upgraded, not reset");
	is_int(ix->quick_checked, 1, "checked before the upgrade");
	is_int(count_rows(ix, "PRAGMA user_version"), 3, "user_version 3");
	is_int(load_all(ix, &ctx), 0, "load after the upgrade");
	is_int(ctx.n, 3, "3 records kept");
	ok(ctx.n == 3 && same_record(&ctx.got[0].rec, &r1), "record 1 kept bit for bit");
	ok(ctx.n == 3 && same_record(&ctx.got[1].rec, &r2), "record 2 kept");
	ok(ctx.n == 3 && same_record(&ctx.got[2].rec, &r3), "record 3 (id above INT64_MAX) kept");
	is_int(count_rows(ix, "SELECT bytes FROM objects WHERE id = 1"), (int64_t)r1_bytes,
	       "record 1's bytes computed from its ranges above INT64_MAX");
	totals_are(ix, r1.volume, 2, r1_bytes + r3_bytes, "upgrade");
	totals_are(ix, r2.volume, 1, 0, "upgrade");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM sqlite_master WHERE name = 'objects'"
		 " AND sql = '%s'", INDEX_OBJECTS_SQL);
	is_int(count_rows(ix, sql), 1, "the upgraded objects table reads as a fresh one");

	ix = reopen(ix, &was_reset);
	ok(ix != NULL, "the upgraded index opens again");
	if (!ix)
		return;
	is_int(was_reset, 0, "the upgraded index opens again without a reset");
	is_int(load_all(ix, &ctx), 0, "load after reopen");
	is_int(ctx.n, 3, "still 3 records");
	rec = r1;
	rec.nranges = 1;
	is_int(index_write(ix, &rec, 1), 0, "write to the upgraded index");
	totals_are(ix, r1.volume, 2, 4096 + r3_bytes, "triggers of the upgraded index");
	index_close(ix);
}

/* ids of what index_load_pending handed out, in order */
static int pending_is(struct cache_index *ix, const char *volume, const uint64_t *ids, size_t n,
		      const struct index_record *const *want)
{
	struct load_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	if (index_load_pending(ix, volume, load_cb, &ctx) != 0 || ctx.n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (ctx.got[i].rec.id != ids[i] || !same_record(&ctx.got[i].rec, want[i]))
			return 0;
	return 1;
}

static void test_load_pending(void)
{
	struct index_record recs[6];
	const struct index_record *want[3];
	struct load_ctx ctx;
	uint64_t ids[3];
	int was_reset;
	struct cache_index *ix;

	cleanup_files();
	ix = index_open(dir, &was_reset);
	for (int i = 0; i < 6; i++) {
		recs[i] = r1;
		recs[i].fh[0] = (uint8_t)i;
		recs[i].id = (uint64_t)i + 1;
	}
	recs[0].ndirty = 0;                        /* clean, closed: not pending */
	recs[0].wopen = 0;
	recs[1].wopen = 0;                         /* dirty only */
	recs[2].ndirty = 0;                        /* open only */
	recs[3].id = (uint64_t)INT64_MAX + 9;      /* both, id above INT64_MAX */
	recs[4].volume = "server:/other";          /* both, another volume */
	recs[5].volume = "server:/other";          /* open only, another volume */
	recs[5].ndirty = 0;
	is_int(index_write(ix, recs, 6), 0, "write 6 objects");
	ids[0] = 2, ids[1] = 3, ids[2] = recs[3].id;
	want[0] = &recs[1], want[1] = &recs[2], want[2] = &recs[3];
	ok(pending_is(ix, r1.volume, ids, 3, want),
	   "pending of the volume: the dirty one, the open one, both (unsigned id order)");
	ids[0] = 5, ids[1] = 6;
	want[0] = &recs[4], want[1] = &recs[5];
	ok(pending_is(ix, "server:/other", ids, 2, want), "pending of the other volume");
	ok(pending_is(ix, "server:/none", ids, 0, want), "nothing pending in an unknown volume");
	memset(&ctx, 0, sizeof(ctx));
	ctx.stop_after = 1;
	is_int(index_load_pending(ix, r1.volume, load_cb, &ctx), 42,
	       "a nonzero callback return stops it and is returned");
	is_int(ctx.n, 1, "no callback after the one that stopped it");

	recs[1].ndirty = 0;                        /* written back */
	recs[2].wopen = 0;                         /* closed */
	is_int(index_write(ix, recs + 1, 2), 0, "the dirty one written back, the open one closed");
	ids[0] = recs[3].id;
	want[0] = &recs[3];
	ok(pending_is(ix, r1.volume, ids, 1, want), "only the one still dirty and open is pending");
	index_close(ix);
}

struct lookup_thread {
	struct cache_index_reader *r;
	int found, errors;
};

/* Look record 3 up again and again while the main thread writes. */
static void *lookup_loop(void *arg)
{
	struct lookup_thread *t = arg;
	struct index_record rec;

	for (int i = 0; i < 2000; i++) {
		int rc = index_lookup(t->r, r3.volume, r3.fh, r3.fh_len, &rec);

		if (rc == 1 && same_record(&rec, &r3))
			t->found++;
		else
			t->errors++;
	}
	return NULL;
}

static void test_lookup(void)
{
	struct index_record rec, del;
	struct lookup_thread t = { NULL, 0, 0 };
	pthread_t thread;
	int was_reset;
	struct cache_index *ix;
	struct cache_index_reader *r;
	char missing[300];

	cleanup_files();
	ix = index_open(dir, &was_reset);
	r = index_reader_open(dir);
	ok(r != NULL, "reader opened");
	if (!r) {
		index_close(ix);
		return;
	}
	is_int(index_lookup(r, r1.volume, r1.fh, r1.fh_len, &rec), 0, "nothing found in an empty index");
	is_int(index_write(ix, &r1, 1), 0, "record 1 written on the main connection");
	is_int(index_lookup(r, r1.volume, r1.fh, r1.fh_len, &rec), 1,
	       "the reader sees the commit made after it opened");
	ok(same_record(&rec, &r1),
	   "record 1 found bit for bit (ranges above INT64_MAX, dirty ranges, gids)");
	ok(rec.volume != r1.volume && strcmp(rec.volume, r1.volume) == 0,
	   "its volume is the reader's copy");
	is_int(index_lookup(r, "server:/other", r1.fh, r1.fh_len, &rec), 0, "another volume: not found");
	is_int(index_lookup(r, r1.volume, r1.fh, r1.fh_len - 1, &rec), 0, "a shorter handle: not found");

	rec = r1;
	rec.nranges = 1;
	rec.ndirty = 0;
	rec.size = 4096;
	is_int(index_write(ix, &rec, 1), 0, "record 1 replaced");
	memset(&del, 0, sizeof(del));
	is_int(index_lookup(r, r1.volume, r1.fh, r1.fh_len, &del), 1, "found again");
	ok(same_record(&del, &rec), "the reader sees the replacement");
	is_int(index_write(ix, &r3, 1), 0, "record 3 written");
	is_int(index_lookup(r, r3.volume, r3.fh, r3.fh_len, &rec), 1, "record 3 found");
	ok(same_record(&rec, &r3), "record 3 (id above INT64_MAX) found bit for bit");
	memset(&del, 0, sizeof(del));
	del.id = 1;
	del.deleted = 1;
	is_int(index_write(ix, &del, 1), 0, "record 1 deleted");
	is_int(index_lookup(r, r1.volume, r1.fh, r1.fh_len, &rec), 0, "the reader sees the delete");

	t.r = r;
	ok(pthread_create(&thread, NULL, lookup_loop, &t) == 0, "lookup thread started");
	rec = r1;
	for (int i = 0; i < 300; i++) {
		rec.last_access_s = i;
		if (index_write(ix, &rec, 1) != 0)
			break;
		if (i % 100 == 0)
			index_checkpoint(ix);
	}
	pthread_join(thread, NULL);
	is_int(t.errors, 0, "2,000 lookups on their own thread during 300 writes: no error");
	is_int(t.found, 2000, "every one found the object");
	is_int(index_checkpoint(ix), 0, "checkpoint with a reader open");
	index_reader_close(r);
	index_reader_close(NULL);
	ok(1, "index_reader_close(NULL) is a no-op");
	snprintf(missing, sizeof(missing), "%s/no/such/dir", dir);
	ok(index_reader_open(missing) == NULL, "a reader of a missing index: NULL");
	index_close(ix);
}

/* EXPLAIN QUERY PLAN of `sql` on db: its lines joined with "; ". */
static void query_plan(sqlite3 *db, const char *sql, char *buf, size_t len)
{
	char eqp[2048];
	sqlite3_stmt *st;
	size_t used = 0;

	buf[0] = 0;
	snprintf(eqp, sizeof(eqp), "EXPLAIN QUERY PLAN %s", sql);
	if (sqlite3_prepare_v2(db, eqp, -1, &st, NULL) != SQLITE_OK) {
		snprintf(buf, len, "error: %s", sqlite3_errmsg(db));
		return;
	}
	while (sqlite3_step(st) == SQLITE_ROW && used < len)
		used += (size_t)snprintf(buf + used, len - used, "%s; ", sqlite3_column_text(st, 3));
	sqlite3_finalize(st);
}

static void plan_uses(sqlite3 *db, const char *sql, const char *want, const char *what)
{
	char plan[2048];

	query_plan(db, sql, plan, sizeof(plan));
	ok(strstr(plan, want) != NULL && !strstr(plan, "SCAN objects") && !strstr(plan, "SCAN ranges"),
	   "%s: %s", what, want);
	if (!strstr(plan, want))
		diag("plan: %s", plan);
}

static void test_query_plans(void)
{
	int was_reset;
	struct cache_index *ix;

	cleanup_files();
	ix = index_open(dir, &was_reset);
	plan_uses(ix->db, reader_stmts[RD_OBJECT].sql,
		  "SEARCH objects USING INDEX sqlite_autoindex_objects_1 (volume=? AND fh=?)",
		  "lookup by key");
	plan_uses(ix->db, reader_stmts[RD_RANGES].sql, "SEARCH ranges USING PRIMARY KEY (object=?)",
		  "lookup ranges");
	plan_uses(ix->db, reader_stmts[RD_DIRTY].sql,
		  "SEARCH dirty_ranges USING PRIMARY KEY (object=?)", "lookup dirty ranges");
	plan_uses(ix->db, index_stmts[ST_PENDING_IDS].sql,
		  "SEARCH objects USING INDEX objects_wopen (volume=?)", "pending: the open ones");
	plan_uses(ix->db, index_stmts[ST_OBJECT_BY_ID].sql,
		  "SEARCH objects USING INTEGER PRIMARY KEY (rowid=?)", "pending: object by id");
	plan_uses(ix->db, index_stmts[ST_TOTALS].sql,
		  "SEARCH totals USING INDEX sqlite_autoindex_totals_1 (volume=?)", "totals");
	plan_uses(ix->db, index_stmts[ST_MAX_ID_NEGATIVE].sql,
		  "SEARCH objects USING INTEGER PRIMARY KEY (rowid<?)", "max id below 0");
	plan_uses(ix->db, index_stmts[ST_MAX_ID_POSITIVE].sql, "SEARCH objects", "max id");
	plan_uses(ix->db, "SELECT count(*) FROM clean_stop", "clean_stop", "clean stop mark");
	plan_uses(ix->db, index_stmts[ST_LRU].sql, "objects_lru", "lru");
	plan_uses(ix->db, index_stmts[ST_VOLUME_DROP_RANGES].sql,
		  "SEARCH ranges USING PRIMARY KEY (object=?)", "drop ranges");
	index_close(ix);
}

static void test_clean_mark(void)
{
	int was_reset;
	sqlite3 *db = NULL;
	struct cache_index *ix;

	cleanup_files();
	capture_start_at(LOG_LEVEL_INFO);
	ix = index_open(dir, &was_reset);
	is_int(capture_end("quick_check"), 0, "a new index is not checked");
	is_int(ix->quick_checked, 0, "a new index counts as checked");
	is_int(index_write(ix, &r1, 1), 0, "write a record");
	is_int(index_mark_clean(ix), 0, "mark a clean stop");
	is_int(index_mark_clean(ix), 0, "marking twice is no error");
	is_int(count_rows(ix, "SELECT count(*) FROM clean_stop"), 1, "the mark is stored");
	index_close(ix);

	capture_start_at(LOG_LEVEL_INFO);
	ix = index_open(dir, &was_reset);
	is_int(capture_end("clean stop recorded, quick_check skipped"), 1,
	       "after a clean stop: quick_check skipped, logged");
	is_int(ix->quick_checked, 0, "quick_check did not run");
	is_int(was_reset, 0, "no reset");
	ok(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK,
	   "a second connection");
	{
		sqlite3_stmt *st = NULL;
		int64_t n = -1;

		if (sqlite3_prepare_v2(db, "SELECT count(*) FROM clean_stop", -1, &st, NULL) ==
		    SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		is_int(n, 0, "the mark is cleared and committed by the time index_open returns");
	}
	sqlite3_close(db);
	index_close(ix);   /* without a mark: as after a crash */

	capture_start_at(LOG_LEVEL_INFO);
	ix = index_open(dir, &was_reset);
	is_int(capture_end("no clean stop recorded, quick_check passed"), 1,
	       "without the mark: quick_check runs, logged");
	is_int(ix->quick_checked, 1, "quick_check ran");
	index_close(ix);
}

/*
 * Damage after a clean stop: its mark skips the quick_check, so a page
 * zeroed while the daemon was stopped is met by the first call that reads
 * it.  The index then counts as damaged: it is not marked clean again (the
 * next open checks it and starts afresh), and index_recreate gives a fresh
 * one at once.
 */
static void zero_totals_pages(struct cache_index *ix)
{
	static const uint8_t zeros[4096];
	int64_t page_size = count_rows(ix, "PRAGMA page_size");
	int64_t table = count_rows(ix, "SELECT rootpage FROM sqlite_master WHERE name = 'totals'");
	int64_t autoindex = count_rows(ix, "SELECT rootpage FROM sqlite_master WHERE "
				       "type = 'index' AND tbl_name = 'totals'");

	ok(page_size == 4096 && table > 1 && autoindex > 1,
	   "totals: table page %lld, its key's index page %lld (pages of %lld bytes)",
	   (long long)table, (long long)autoindex, (long long)page_size);
	is_int(index_mark_clean(ix), 0, "a clean stop");
	index_close(ix);
	if (table > 1)
		write_file(db_path, (off_t)(table - 1) * 4096, zeros, sizeof(zeros));
	if (autoindex > 1)
		write_file(db_path, (off_t)(autoindex - 1) * 4096, zeros, sizeof(zeros));
}

static void test_damage_after_clean_stop(void)
{
	uint64_t objects = 0, bytes = 0;
	int was_reset = -1;
	struct cache_index *ix;

	cleanup_files();
	ix = index_open(dir, &was_reset);
	is_int(index_write(ix, &r1, 1), 0, "write a record");
	zero_totals_pages(ix);

	capture_start_at(LOG_LEVEL_INFO);
	ix = index_open(dir, &was_reset);
	is_int(capture_end("clean stop recorded, quick_check skipped"), 1,
	       "zeroed pages after a clean stop: quick_check skipped");
	is_int(was_reset, 0, "not reset at open");
	is_int(index_damaged(ix), 0, "not known to be damaged yet");
	capture_start_at(LOG_LEVEL_ERROR);
	ok(index_totals(ix, r1.volume, &objects, &bytes) < 0, "index_totals fails on the zeroed page");
	ok(index_totals(ix, r1.volume, &objects, &bytes) < 0, "and again");
	is_int(capture_end("the file is damaged"), 1, "the damage logged once");
	is_int(index_damaged(ix), 1, "index_damaged");
	ok(index_mark_clean(ix) < 0, "a damaged index is not marked clean");
	index_close(ix);

	capture_start_at(LOG_LEVEL_INFO);
	ix = index_open(dir, &was_reset);
	is_int(capture_end("quick_check skipped"), 0, "the next open checks it");
	is_int(was_reset, 1, "and starts afresh");
	ok(index_totals(ix, r1.volume, &objects, &bytes) == 0 && objects == 0,
	   "the fresh index holds nothing");
	is_int(index_write(ix, &r1, 1), 0, "write a record again");
	zero_totals_pages(ix);

	ix = index_open(dir, &was_reset);
	ok(index_totals(ix, r1.volume, &objects, &bytes) < 0 && index_damaged(ix),
	   "damaged again, found by index_totals");
	ix = index_recreate(ix, dir);
	ok(ix != NULL, "index_recreate");
	if (!ix)
		return;
	is_int(index_damaged(ix), 0, "the fresh index is not damaged");
	ok(index_totals(ix, r1.volume, &objects, &bytes) == 0 && objects == 0 && bytes == 0,
	   "and holds nothing");
	is_int(index_write(ix, &r1, 1), 0, "it takes records");
	is_int(index_mark_clean(ix), 0, "and is marked clean");

	/* a lookup meeting damage: the (volume, fh) index's page zeroed */
	static const uint8_t zeros[4096];
	int64_t page = count_rows(ix, "SELECT rootpage FROM sqlite_master WHERE type = 'index' "
				  "AND tbl_name = 'objects' AND sql IS NULL");
	index_close(ix);
	ok(page > 1, "the objects' (volume, fh) index: page %lld", (long long)page);
	if (page > 1)
		write_file(db_path, (off_t)(page - 1) * 4096, zeros, sizeof(zeros));
	ix = index_open(dir, &was_reset);
	struct cache_index_reader *r = index_reader_open(dir);
	struct index_record rec;
	ok(r != NULL, "a reader");
	if (!r) {
		index_close(ix);
		return;
	}
	is_int(index_reader_damaged(r), 0, "the reader: not known to be damaged yet");
	ok(index_lookup(r, r1.volume, r1.fh, r1.fh_len, &rec) < 0, "a lookup fails on the zeroed page");
	is_int(index_reader_damaged(r), 1, "index_reader_damaged");
	index_reader_close(r);
	index_close(ix);
}

#define BIG_OBJECTS 200000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count_cb(const struct index_record *rec, void *ctx)
{
	(void)rec;
	++*(size_t *)ctx;
	return 0;
}

/* index_open + index_totals + index_load_pending; the seconds it took. */
static double timed_open(struct cache_index **ixp, uint64_t *objects, uint64_t *bytes,
			 size_t *pending)
{
	int was_reset;
	double t0 = now_s();

	*ixp = index_open(dir, &was_reset);
	*pending = 0;
	if (!*ixp || index_totals(*ixp, r1.volume, objects, bytes) < 0 ||
	    index_load_pending(*ixp, r1.volume, count_cb, pending) < 0)
		return -1;
	return now_s() - t0;
}

/*
 * 200,000 objects of one range each, generated by one statement (index_write
 * of that many takes seconds under ASan); the triggers count them as
 * index_write's would.
 */
#define BIG_FILL_SQL \
	"BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n" \
	" WHERE i < " INDEX_STR(BIG_OBJECTS) ")" \
	" INSERT INTO objects (id, volume, fh, size, mtime_ns, ctime_ns, fileid, last_access," \
	" wopen, wb_uid, wb_gid, wb_gids, bytes)" \
	" SELECT i, 'server:/export', CAST(printf('%08x', i) AS BLOB), 4096 + i % 7, 0, 0, i," \
	" 1700000000 + i % 1000, 0, 0, 0, x'', 4096 + i % 7 FROM n;" \
	" WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n" \
	" WHERE i < " INDEX_STR(BIG_OBJECTS) ")" \
	" INSERT INTO ranges (object, start, \"end\") SELECT i, 0, 4096 + i % 7 FROM n; COMMIT"

static void test_open_big(void)
{
	uint64_t objects, bytes, want_bytes = 0;
	size_t pending;
	int was_reset;
	double t_clean, t_unclean, t0;
	struct cache_index *ix;
	struct load_ctx ctx;

	for (uint64_t i = 1; i <= BIG_OBJECTS; i++)
		want_bytes += 4096 + i % 7;
	cleanup_files();
	ix = index_open(dir, &was_reset);
	t0 = now_s();
	is_int(sqlite3_exec(ix->db, BIG_FILL_SQL, NULL, NULL, NULL), SQLITE_OK,
	       "200,000 objects stored");
	diag("200,000 objects stored in %.2f s", now_s() - t0);
	is_int(index_mark_clean(ix), 0, "clean stop");
	index_close(ix);

	t_clean = timed_open(&ix, &objects, &bytes, &pending);
	diag("open of 200,000 objects after a clean stop: %.3f s", t_clean);
	ok(t_clean >= 0 && t_clean < 5.0, "opens in under 5 s (%.3f s)", t_clean);
	ok(ix && ix->quick_checked == 0, "no quick_check");
	ok(objects == BIG_OBJECTS && bytes == want_bytes, "totals: %" PRIu64 " objects, %" PRIu64
	   " bytes", objects, bytes);
	is_int(pending, 0, "nothing pending");
	index_close(ix);   /* no mark */

	t_unclean = timed_open(&ix, &objects, &bytes, &pending);
	diag("open of 200,000 objects after an unclean stop (quick_check): %.3f s", t_unclean);
	ok(ix && ix->quick_checked == 1, "quick_check ran after the unclean stop");
	ok(objects == BIG_OBJECTS && bytes == want_bytes, "same totals");
	ok(ix && index_max_id(ix) == BIG_OBJECTS, "max id");
	memset(&ctx, 0, sizeof(ctx));
	ctx.stop_after = 1;
	is_int(ix ? index_load(ix, load_cb, &ctx) : -1, 42, "the generated objects load");
	ok(ctx.n == 1 && ctx.got[0].rec.fh_len == 8 && ctx.got[0].rec.nranges == 1,
	   "as objects with an 8-byte handle and one range");
	index_close(ix);
}

static void test_unwritable(void)
{
	int was_reset;
	char missing[300];

	snprintf(missing, sizeof(missing), "%s/no/such/dir", dir);
	ok(index_open(missing, &was_reset) == NULL, "a directory that does not exist: NULL");
	index_close(NULL);
	ok(1, "index_close(NULL) is a no-op");
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	alarm(300);
	log_init(1, LOG_LEVEL_ERROR);   /* the resets below warn by design */
	snprintf(dir, sizeof(dir), "%s/test_index.XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(db_path, sizeof(db_path), "%s/index.sqlite", dir);
	make_records();
	test_roundtrip();
	test_replace_and_delete();
	test_failed_write();
	test_bad_gids();
	test_corrupt();
	test_corrupt_pages();
	test_schema_changes();
	test_schema_v1();
	test_totals();
	test_migrate_v2();
	test_load_pending();
	test_lookup();
	test_query_plans();
	test_clean_mark();
	test_damage_after_clean_stop();
	test_open_big();
	test_unwritable();
	cleanup();
	return done();
}
