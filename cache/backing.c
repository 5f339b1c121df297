/*
 * backing.c — the backing files' names, creation and I/O syscalls, the
 * extent-size hint given to new ones and the count of their extents.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "cache/backing.h"
#include "common/log.h"
#include "common/stats.h"

static char backing_dir[4096];
static char graveyard_dir[4096];
static int parse_name(const char *name, unsigned dir, uint64_t *id);
static uint64_t extent_hint_bytes;      /* backing_set_extent_hint; 0 = none */
static int extent_hint_logged;          /* the file system refused it once */

int backing_init(const char *cache_dir)
{
	char path[4200];

	snprintf(backing_dir, sizeof(backing_dir), "%s/objects", cache_dir);
	snprintf(graveyard_dir, sizeof(graveyard_dir), "%s/graveyard", cache_dir);
	if (mkdir(cache_dir, 0700) != 0 && errno != EEXIST) {
		log_error("backing: cannot create %s: %s", cache_dir, strerror(errno));
		return -errno;
	}
	if (mkdir(graveyard_dir, 0700) != 0 && errno != EEXIST) {
		log_error("backing: cannot create %s: %s", graveyard_dir, strerror(errno));
		return -errno;
	}
	if (mkdir(backing_dir, 0700) != 0 && errno != EEXIST) {
		log_error("backing: cannot create %s: %s", backing_dir, strerror(errno));
		return -errno;
	}
	for (int i = 0; i < 256; i++) {
		snprintf(path, sizeof(path), "%s/%02x", backing_dir, i);
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			log_error("backing: cannot create %s: %s", path, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

void backing_path(uint64_t id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%02x/%016" PRIx64, backing_dir, (unsigned)(id & 0xff), id);
}

void backing_set_extent_hint(uint64_t bytes)
{
	extent_hint_bytes = bytes;
}

int backing_extent_hint(int fd, uint64_t bytes)
{
	struct fsxattr fa;

	if (bytes == 0 || bytes > UINT32_MAX)
		return -EINVAL;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) != 0)
		return -errno;
	fa.fsx_xflags |= FS_XFLAG_EXTSIZE;
	fa.fsx_extsize = (uint32_t)bytes;
	if (ioctl(fd, FS_IOC_FSSETXATTR, &fa) != 0)
		return -errno;
	/* ext4 answers 0 and drops the flags it does not have: read it back */
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fa) != 0)
		return -errno;
	return (fa.fsx_xflags & FS_XFLAG_EXTSIZE) && fa.fsx_extsize == bytes ? 0 : -EOPNOTSUPP;
}

int backing_open(uint64_t id, int create)
{
	char path[4200];
	struct stat st;

	backing_path(id, path, sizeof(path));
	int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0600);
	if (fd < 0)
		return -errno;
	/* XFS takes the hint only while the file has no extent: a new file */
	if (create && extent_hint_bytes && fstat(fd, &st) == 0 && st.st_blocks == 0) {
		int rc = backing_extent_hint(fd, extent_hint_bytes);
		if (rc != 0 && !extent_hint_logged++)
			log_debug("backing: no extent-size hint on %s: %s", path, strerror(-rc));
	}
	return fd;
}

long backing_extent_count(int fd)
{
	struct fiemap fm;

	memset(&fm, 0, sizeof(fm));
	fm.fm_length = FIEMAP_MAX_OFFSET;
	fm.fm_extent_count = 0;   /* count only: the kernel fills fm_mapped_extents */
	if (ioctl(fd, FS_IOC_FIEMAP, &fm) != 0)
		return -errno;
	return (long)fm.fm_mapped_extents;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int backing_extents_sample(unsigned max_files, unsigned *dir_cursor, uint32_t *p99)
{
	uint32_t *counts = calloc(max_files ? max_files : 1, sizeof(*counts));
	char dir[4200], path[4200 + 256];
	unsigned n = 0, first = *dir_cursor & 0xff, i;

	if (!counts)
		return -ENOMEM;
	/* whole directories from the cursor on, so that successive samples
	 * go round the cache rather than look at the same files */
	for (i = 0; i < 256 && n < max_files; i++) {
		snprintf(dir, sizeof(dir), "%s/%02x", backing_dir, (first + i) & 0xff);
		DIR *d = opendir(dir);
		struct dirent *e;
		if (!d)
			continue;
		while (n < max_files && (e = readdir(d))) {
			uint64_t id;
			if (parse_name(e->d_name, (first + i) & 0xff, &id) != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
			if (fd < 0 && errno == EPERM)
				fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;   /* culled meanwhile */
			long c = backing_extent_count(fd);
			close(fd);
			if (c < 0)
				continue;
			counts[n++] = c > (long)UINT32_MAX ? UINT32_MAX : (uint32_t)c;
		}
		closedir(d);
	}
	*dir_cursor = (first + i) & 0xff;
	if (n == 0) {
		free(counts);
		return 0;
	}
	qsort(counts, n, sizeof(*counts), cmp_u32);
	/* nearest rank: the smallest count at or above 99 % of the files */
	*p99 = counts[(99 * (uint64_t)n + 99) / 100 - 1];
	free(counts);
	return (int)n;
}

int backing_write(int fd, const void *buf, size_t len, uint64_t offset)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)offset);
		stats.backing_write_calls++;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOSPC || errno == EDQUOT)
				stats.cache_nospace++;
			return -errno;
		}
		stats.backing_write_bytes += (uint64_t)n;
		p += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

ssize_t backing_read(int fd, void *buf, size_t len, uint64_t offset)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
		stats.backing_read_calls++;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t backing_read_nowait(int fd, void *buf, size_t len, uint64_t offset)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	ssize_t n = preadv2(fd, &iov, 1, (off_t)offset, RWF_NOWAIT);
	stats.backing_read_calls++;
	if (n < 0)
		return errno == EOPNOTSUPP ? -EAGAIN : -errno;
	return n;
}

int backing_has_data(int fd, uint64_t start, uint64_t end)
{
	struct stat st;

	if (start >= end)
		return 1;
	if (fstat(fd, &st) != 0)
		return -errno;
	if ((uint64_t)st.st_size < end)
		return 0;
	off_t hole = lseek(fd, (off_t)start, SEEK_HOLE);
	if (hole < 0)
		return errno == ENXIO ? 0 : -errno;
	return (uint64_t)hole >= end;
}

int backing_data_through(int fd, uint64_t start, uint64_t end)
{
	if (start >= end)
		return 1;
	off_t hole = lseek(fd, (off_t)start, SEEK_HOLE);
	if (hole < 0)
		return errno == ENXIO ? 0 : -errno;
	return (uint64_t)hole >= end;
}

/* cachestat(2) (Linux 6.5, include/uapi/linux/mman.h), absent from older
 * headers: the same number on every architecture but alpha. */
#if !defined(__NR_cachestat) && !defined(__alpha__)
#define __NR_cachestat 451
#endif

struct backing_cachestat_range {
	uint64_t off, len;
};

struct backing_cachestat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

#ifdef __NR_cachestat
static int resident_cachestat = 1;   /* cleared when the kernel lacks it */
#endif

static int resident_mincore(int fd, uint64_t first, uint64_t pages, long pg)
{
	unsigned char vec[256];
	int ret = 1;

	while (pages > 0 && ret == 1) {
		uint64_t n = pages < sizeof(vec) ? pages : sizeof(vec);
		void *m = mmap(NULL, (size_t)(n * (uint64_t)pg), PROT_READ, MAP_SHARED, fd,
			       (off_t)(first * (uint64_t)pg));
		if (m == MAP_FAILED)
			return -errno;
		if (mincore(m, (size_t)(n * (uint64_t)pg), vec) != 0)
			ret = -errno;
		for (uint64_t i = 0; ret == 1 && i < n; i++)
			if (!(vec[i] & 1))
				ret = 0;
		munmap(m, (size_t)(n * (uint64_t)pg));
		first += n;
		pages -= n;
	}
	return ret;
}

int backing_resident(int fd, uint64_t start, uint64_t end)
{
	static long pg;

	if (start >= end)
		return 1;
	if (!pg)
		pg = sysconf(_SC_PAGESIZE);
	uint64_t first = start / (uint64_t)pg, last = (end - 1) / (uint64_t)pg;
#ifdef __NR_cachestat
	if (resident_cachestat) {
		struct backing_cachestat_range r = { first * (uint64_t)pg,
						     (last - first + 1) * (uint64_t)pg };
		struct backing_cachestat cs;
		if (syscall(__NR_cachestat, fd, &r, &cs, 0) == 0)
			return cs.nr_cache >= last - first + 1;
		if (errno != ENOSYS)
			return -errno;
		resident_cachestat = 0;
	}
#endif
	return resident_mincore(fd, first, last - first + 1, pg);
}

int backing_truncate(int fd, uint64_t size)
{
	return ftruncate(fd, (off_t)size) == 0 ? 0 : -errno;
}

int backing_unlink(uint64_t id)
{
	char path[4200];

	backing_path(id, path, sizeof(path));
	return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}

int backing_retire_all(const char *cache_dir)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/objects.%ld.%ld", graveyard_dir, (long)getpid(),
		 (long)time(NULL));
	if (rename(backing_dir, path) != 0 && errno != ENOENT)
		return -errno;
	return backing_init(cache_dir);
}

int backing_bury(uint64_t id)
{
	char from[4200], to[4200];

	backing_path(id, from, sizeof(from));
	snprintf(to, sizeof(to), "%s/%016" PRIx64, graveyard_dir, id);
	if (rename(from, to) == 0)
		return 0;
	return errno == ENOENT ? 1 : -errno;
}

int backing_unlink_buried(uint64_t id)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%016" PRIx64, graveyard_dir, id);
	return unlink(path) == 0 || errno == ENOENT ? 0 : -errno;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;   /* remove what can be removed */
}

int backing_remove_tree(const char *path)
{
	return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -errno;
}

size_t backing_purge_graveyard(void)
{
	DIR *d = opendir(graveyard_dir);
	struct dirent *e;
	size_t n = 0;
	char path[4096 + 256 + 16];

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", graveyard_dir, e->d_name);
		if (unlink(path) == 0 || (errno == EISDIR && backing_remove_tree(path) == 0))
			n++;
	}
	closedir(d);
	return n;
}

/* A backing file's name: 16 lowercase hex digits, in the directory of its low byte. */
static int parse_name(const char *name, unsigned dir, uint64_t *id)
{
	uint64_t v = 0;

	if (strlen(name) != 16)
		return -1;
	for (int i = 0; i < 16; i++) {
		char c = name[i];
		unsigned dgt = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			       c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;
		if (dgt == 16)
			return -1;
		v = v << 4 | dgt;
	}
	if ((v & 0xff) != dir || v == 0)
		return -1;
	*id = v;
	return 0;
}

int backing_foreach(int (*fn)(uint64_t id, const char *path, void *ctx), void *ctx)
{
	char dir[4200], path[4200 + 256];
	int ret = 0;

	for (unsigned i = 0; i < 256 && ret == 0; i++) {
		snprintf(dir, sizeof(dir), "%s/%02x", backing_dir, i);
		DIR *d = opendir(dir);
		struct dirent *e;
		if (!d)
			continue;
		while (ret == 0 && (e = readdir(d))) {
			uint64_t id = 0;
			if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (parse_name(e->d_name, i, &id) != 0)
				id = 0;
			ret = fn(id, path, ctx);
		}
		closedir(d);
	}
	return ret;
}
