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
 * read-write) or -errno (-ENOENT when missing and not `create`). */
int backing_open(uint64_t id, int create);

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

/* Drop the file's contents from `size` on (ftruncate).  0 or -errno. */
int backing_truncate(int fd, uint64_t size);

/* Move every backing file out of the way at once (CACHE_DIR/objects is
 * renamed into CACHE_DIR/graveyard.N) and recreate an empty tree; the old
 * one's path goes to `graveyard` for backing_remove_tree().  0 or -errno. */
int backing_retire_all(const char *cache_dir, char *graveyard, size_t len);

/* Delete a directory tree (blocking: a worker job).  0 or -errno. */
int backing_remove_tree(const char *path);

/* Remove object `id`'s file (blocking: a worker job).  0 or -errno. */
int backing_unlink(uint64_t id);

#endif
