/*
 * test_backing.c — the extents of backing files (cache/backing.c): a file
 * written at scattered offsets has the extent count backing_extent_count
 * reports, checked against a FIEMAP walk of its extent records done here;
 * the extent-size hint given at creation never fails it (on this file
 * system the hint is taken or refused, and the outcome is printed); and
 * backing_extents_sample takes the 99th percentile of the files it reads,
 * skips names that are not objects', and goes round the directories from
 * one sample to the next.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "cache/backing.h"
#include "common/log.h"

#include "tests/unit/tap.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)
#define HINT_BYTES MiB

static char dir[256];

/* Extents of `fd` by walking FIEMAP's extent records 32 at a time up to
 * the one flagged last: -errno when the file system has no FIEMAP. */
static long extents_walked(int fd)
{
	enum { BATCH = 32 };
	char buf[sizeof(struct fiemap) + BATCH * sizeof(struct fiemap_extent)];
	struct fiemap *fm = (struct fiemap *)buf;
	uint64_t start = 0;
	long n = 0;

	for (;;) {
		memset(buf, 0, sizeof(buf));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = BATCH;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) != 0)
			return -errno;
		if (fm->fm_mapped_extents == 0)
			return n;
		n += fm->fm_mapped_extents;
		struct fiemap_extent *last = &fm->fm_extents[fm->fm_mapped_extents - 1];
		if (last->fe_flags & FIEMAP_EXTENT_LAST)
			return n;
		start = last->fe_logical + last->fe_length;
	}
}

/* Data runs of `fd` (SEEK_DATA/SEEK_HOLE): each is at least one extent. */
static long data_runs(int fd)
{
	off_t at = 0;
	long n = 0;

	for (;;) {
		off_t d = lseek(fd, at, SEEK_DATA);
		if (d < 0)
			return n;
		n++;
		at = lseek(fd, d, SEEK_HOLE);
		if (at < 0)
			return -errno;
	}
}

/* Object `id`'s file, created through backing_open, with `pieces` 4 KiB
 * writes 1 MiB apart, in an order that is not the file's, then synced. */
static int write_scattered(uint64_t id, unsigned pieces)
{
	char block[4 * KiB];
	int fd = backing_open(id, 1);

	if (fd < 0)
		return fd;
	memset(block, 0x5a, sizeof(block));
	for (unsigned i = 0; i < pieces; i++) {
		unsigned k = (i * 7 + 3) % pieces;   /* 7 is prime to the counts used */
		int rc = backing_write(fd, block, sizeof(block), k * MiB + (k % 13) * 4 * KiB);
		if (rc != 0) {
			close(fd);
			return rc;
		}
	}
	fdatasync(fd);
	return fd;
}

static void test_hint_and_count(void)
{
	struct statfs sf;
	int fd = write_scattered(1, 32);

	ok(fd >= 0, "a backing file with the extent-size hint is created and written (%s)",
	   fd < 0 ? strerror(-fd) : "ok");
	if (fd < 0)
		return;
	if (fstatfs(fd, &sf) == 0)
		diag("file system of %s: magic 0x%lx", dir, (unsigned long)sf.f_type);
	int fd2 = backing_open(99, 1);
	int hint = backing_extent_hint(fd2, HINT_BYTES);
	diag("extent-size hint of 1 MiB on a new file here: %s", hint ? strerror(-hint) : "taken");
	ok(hint == 0 || hint == -ENOTTY || hint == -EOPNOTSUPP || hint == -EINVAL,
	   "the hint is taken or refused as a file system without it refuses it (%d)", hint);
	is_int(backing_extent_hint(fd2, 0), -EINVAL, "a hint of 0 bytes is -EINVAL");
	close(fd2);
	backing_unlink(99);

	long walked = extents_walked(fd), counted = backing_extent_count(fd);
	is_int(counted, walked, "backing_extent_count is the extents FIEMAP lists (%ld)", walked);
	long runs = data_runs(fd);
	is_int(runs, 32, "the file holds 32 runs of data");
	if (walked >= 0)
		ok(counted >= runs, "at least one extent per run of data (%ld >= %ld)", counted, runs);
	else
		ok(walked == -EOPNOTSUPP, "no FIEMAP here: EOPNOTSUPP (%ld)", walked);
	if (hint != 0 && walked >= 0)
		is_int(counted, 32, "without the hint every scattered write is its own extent");
	else
		diag("with the hint: %ld extents for 32 scattered writes", counted);
	close(fd);
}

static long extents_of(uint64_t id)
{
	int fd = backing_open(id, 0);

	if (fd < 0)
		return fd;
	long n = extents_walked(fd);
	close(fd);
	return n;
}

static void test_sample(void)
{
	char path[4300];
	unsigned cursor = 0;
	uint32_t p99 = 12345;

	/* object 1 (directory 01) holds 32 runs; 2 (02) one; 0x103 (03) five */
	int fd = write_scattered(2, 1);
	ok(fd >= 0, "object 2 written");
	if (fd >= 0)
		close(fd);
	fd = write_scattered(0x103, 5);
	ok(fd >= 0, "object 0x103 written");
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/objects/05/not-an-object", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd >= 0)
		close(fd);
	long e1 = extents_of(1), e2 = extents_of(2), e3 = extents_of(0x103);
	diag("extents: object 1 %ld, object 2 %ld, object 0x103 %ld", e1, e2, e3);
	if (e1 < 0) {
		is_int(backing_extents_sample(256, &cursor, &p99), 0,
		       "no FIEMAP here: no file counted");
		return;
	}
	long max = e1 > e2 ? e1 : e2;
	max = max > e3 ? max : e3;
	is_int(backing_extents_sample(256, &cursor, &p99), 3,
	       "a sample counts the three objects' files, not the other name");
	is_int(p99, max, "the 99th percentile of three files is the largest count");
	is_int(cursor, 0, "a sample that read every directory starts the next one where it began");

	cursor = 0;
	p99 = 0;
	is_int(backing_extents_sample(2, &cursor, &p99), 2, "at most 2 files: 2");
	is_int(p99, e1 > e2 ? e1 : e2, "p99 of objects 1 and 2");
	is_int(cursor, 3, "the next sample starts at directory 03");
	is_int(backing_extents_sample(2, &cursor, &p99), 2,
	       "the next sample goes round: objects 0x103 and 1");
	is_int(p99, e1 > e3 ? e1 : e3, "p99 of objects 0x103 and 1");
	is_int(cursor, 2, "then it starts at directory 02");
}

int main(void)
{
	char cmd[300];

	log_init(1, LOG_LEVEL_ERROR);
	snprintf(dir, sizeof(dir), "%s/test_backing.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir) || backing_init(dir) != 0) {
		printf("Bail out! cannot make a cache directory\n");
		return 1;
	}
	backing_set_extent_hint(HINT_BYTES);
	test_hint_and_count();
	test_sample();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	return done();
}
