/*
 * test_index.c — the sqlite index (cache/index.c): records survive a close
 * and reopen bit for bit (64-bit unsigned values above INT64_MAX, a 64-byte
 * file handle, dirty ranges, the write-back credential with 0 to 16 gids),
 * replace and delete take the old ranges and dirty ranges with them, a
 * failed write leaves nothing behind, a damaged gid list is clamped, and an
 * unusable file (garbage, random bytes, another schema version such as the
 * version 1 layout, another table layout) is reset rather than trusted.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
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
	sqlite3_exec(ix->db, "DROP TABLE dirty_ranges;"
		     "CREATE TABLE dirty_ranges (object INTEGER NOT NULL, start INTEGER NOT NULL,"
		     " \"end\" INTEGER NOT NULL, PRIMARY KEY (object, start))", NULL, NULL, NULL);
	index_close(ix);
	expect_reset("dirty_ranges table with a rowid");
}

/* Log lines (warnings included) go to a file between capture_start and capture_end. */
static char log_path[320];
static int saved_stderr = -1;

static void capture_start(void)
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
	log_set_level(LOG_LEVEL_WARNING);
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
	is_int(capture_end("schema version 1, expected 2"), 1, "the version mismatch is logged");

	/* The new tables under the old version number are still the old version. */
	db = NULL;
	sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL);
	sqlite3_exec(db, "PRAGMA user_version = 1", NULL, NULL, NULL);
	sqlite3_close(db);
	expect_reset("version 2 tables at user_version 1");
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

	alarm(60);
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
	test_unwritable();
	cleanup();
	return done();
}
