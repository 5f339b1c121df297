/*
 * backing.h — backing files: one sparse file per cache object under
 * CACHE_DIR/objects/XX/ (XX: the low byte of the object id, so no directory
 * holds more than 1/256 of the objects), the remote file's bytes at the same
 * offsets.  Each contiguous range goes in with one pwrite (CacheFiles' move
 * from a write per page to write()).  Counts its syscalls in the backing.*
 * counters.
 */
#ifndef NFSCACHED_BACKING_H
#define NFSCACHED_BACKING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Create CACHE_DIR/objects/00..ff.  Returns 0 or -errno after logging. */
int backing_init(const char *cache_dir);

/* Path of object `id`'s file into buf (at least 4096 bytes). */
void backing_path(uint64_t id, char *buf, size_t len);

/* Open (create when `create`) object `id`'s file.  Returns an fd (O_CLOEXEC,
 * read-write) or -errno (-ENOENT when missing and not `create`).  A file
 * it finds without blocks when `create` gets the extent-size hint of
 * backing_set_extent_hint (backing_extent_hint); a file system that
 * refuses it (ext4, tmpfs: ENOTTY, EOPNOTSUPP, EINVAL) changes nothing but
 * one debug log line. */
int backing_open(uint64_t id, int create);

/* The extent-size hint, in bytes, backing_open gives new files (0: none);
 * cache.extent_hint.  Read at each creation. */
void backing_set_extent_hint(uint64_t bytes);

/* Set an extent-size hint of `bytes` on the open file `fd`
 * (FS_IOC_FSGETXATTR, then FS_IOC_FSSETXATTR with FS_XFLAG_EXTSIZE and
 * fsx_extsize, <linux/fs.h>): the file system then allocates the file's
 * blocks in aligned runs of that size, so that writes at scattered offsets
 * leave few extents.  XFS honours it on a file with no extent yet.
 * The hint is read back (ext4 takes the call and drops the flag).
 * Returns 0, -EINVAL for 0 or above 4 GiB (or when the file system refuses
 * the size or the file has extents), -ENOTTY or -EOPNOTSUPP where the file
 * system has no such hint, or another -errno. */
int backing_extent_hint(int fd, uint64_t bytes);

/* The number of extents of the open file `fd` (FS_IOC_FIEMAP with no extent
 * array, <linux/fiemap.h>; delayed allocations included, the file is not
 * synced first), or -errno (-EOPNOTSUPP where the file system has no FIEMAP). */
long backing_extent_count(int fd);

/*
 * Sample the backing files' extents: count (backing_extent_count) the
 * extents of at most `max_files` backing files, reading whole directories
 * CACHE_DIR/objects/XX/ from XX = *dir_cursor on; *dir_cursor is set to
 * the first directory not read, for the next sample to go on from.  Sets
 * *p99 to the 99th percentile (nearest rank) of the counts and returns the
 * files counted; returns 0 with *p99 unchanged when there were none, or
 * -ENOMEM.  Blocking (one open, ioctl and close per file): a worker job.
 */
int backing_extents_sample(unsigned max_files, unsigned *dir_cursor, uint32_t *p99);

/* pwrite all `len` bytes at `offset` (one syscall unless the kernel writes
 * less).  Returns 0 or -errno (-ENOSPC, -EDQUOT, ...): the range must then
 * not be marked valid. */
int backing_write(int fd, const void *buf, size_t len, uint64_t offset);

/* pread `len` bytes at `offset`.  Returns the bytes read (fewer only past the
 * file's end: a truncated backing file) or -errno. */
ssize_t backing_read(int fd, void *buf, size_t len, uint64_t offset);

/* pread only what the page cache holds (preadv2 RWF_NOWAIT): the bytes read,
 * possibly fewer than `len`, or -EAGAIN when the first of them would wait
 * for the disk, or -errno.  Never blocks on the disk. */
ssize_t backing_read_nowait(int fd, void *buf, size_t len, uint64_t offset);

/* Does [start, end) of the file hold data everywhere (no hole, not past its
 * end)?  1 yes, 0 no (the range must be refetched), -errno on error. */
int backing_has_data(int fd, uint64_t start, uint64_t end);

/* The same with one lseek(SEEK_HOLE) (the end of the file is a hole): 1
 * when [start, end) holds data everywhere, 0 when not, -errno on error. */
int backing_data_through(int fd, uint64_t start, uint64_t end);

/* Is every page of [start, end) of the file in the page cache?  1 yes, 0
 * no, -errno on error.  One cachestat(2) (Linux 6.5), else an mmap, mincore
 * and munmap of the range.  Never blocks on the disk. */
int backing_resident(int fd, uint64_t start, uint64_t end);

/* Drop the file's contents from `size` on (ftruncate).  0 or -errno. */
int backing_truncate(int fd, uint64_t size);

/*
 * The graveyard, CACHE_DIR/graveyard: what is renamed there is deleted off
 * the hot path (cachefilesd's graveyard).  backing_retire_all moves every
 * backing file there at once (CACHE_DIR/objects becomes graveyard/objects.N)
 * and recreates an empty tree; backing_bury moves one object's file there
 * (graveyard/ID).  0, or -errno; backing_bury returns 1 when the object has
 * no file.
 */
int backing_retire_all(const char *cache_dir);
int backing_bury(uint64_t id);

/* Delete object `id`'s file from the graveyard (blocking: a worker job).
 * 0 or -errno. */
int backing_unlink_buried(uint64_t id);

/* Delete everything in the graveyard (blocking: a worker job at start-up).
 * Returns the entries removed. */
size_t backing_purge_graveyard(void);

/*
 * Call fn(id, path, ctx) for every entry of CACHE_DIR/objects/XX/, with id 0
 * for a name that is not an object's (16 hex digits in the directory of
 * its low byte).  A nonzero return stops the walk and is returned.
 * Blocking: a worker job (start-up reconciliation).
 */
int backing_foreach(int (*fn)(uint64_t id, const char *path, void *ctx), void *ctx);

/* Delete a directory tree (blocking: a worker job).  0 or -errno. */
int backing_remove_tree(const char *path);

/* Remove object `id`'s file (blocking: a worker job).  0 or -errno. */
int backing_unlink(uint64_t id);

#endif
