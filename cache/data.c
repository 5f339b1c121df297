/*
 * data.c — the bytes of each object in its backing file: the file opened on
 * first use and checked against the ranges the index recorded, at most
 * MAX_OPEN_BACKING kept open (least recently used closed); fetched data
 * stored with one pwrite per part not dirty (merged under local dirty
 * bytes); local reads, on the loop when the page cache holds them, else on
 * a worker.  Not here: which bytes are valid or dirty and why (cache.c,
 * dirty.c), the index (persist.c).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/backing.h"
#include "cache/cache.h"
#include "cache/cache_int.h"
#include "cache/worker.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"

#ifndef MAX_OPEN_BACKING
#define MAX_OPEN_BACKING 1024      /* backing files kept open, least recently used closed */
#endif

static int range_has_data(uint64_t start, uint64_t end, void *ctx)
{
	return backing_has_data(*(int *)ctx, start, end) == 1 ? 0 : -1;
}

/* The backing file, opened on first use and checked against the ranges the
 * index recorded: a file deleted, truncated or punched behind our back is
 * refetched, never served as zeros. */
int object_fd(struct cache_object *o)
{
	if (o->fd >= 0) {
		list_del(&o->fd_link);
		list_add_tail(&cache_state.open_fds, &o->fd_link);
		return o->fd;
	}
	if (cache_state.n_open >= MAX_OPEN_BACKING) {
		/* reopened on its next use; its data stays valid */
		struct cache_object *lru = list_first(&cache_state.open_fds, struct cache_object, fd_link);
		list_del(&lru->fd_link);
		/* its ranges may go to the index with the next batch, which
		 * must sync their data first: it opens the file again by id
		 * (holding the descriptor meanwhile would let a slow batch take
		 * every descriptor the daemon may open) */
		if (lru->persist_queued)
			batch_sync_id(lru->id);
		close(lru->fd);
		lru->fd = -1;
		cache_state.n_open--;
	}
	o->fd = backing_open(o->id, 1);
	if (o->fd >= 0) {
		list_add_tail(&cache_state.open_fds, &o->fd_link);
		cache_state.n_open++;
	}
	if (o->fd < 0) {
		log_limited(LOG_LEVEL_ERROR, "cache: cannot open backing file of object %llu: %s",
			    (unsigned long long)o->id, strerror(-o->fd));
		return o->fd;
	}
	if (!o->checked) {
		o->checked = 1;
		if (o->valid.count == 0)
			backing_truncate(o->fd, 0);   /* nothing of an older object with this id */
		else if (extent_set_foreach(&o->valid, range_has_data, &o->fd) != 0)
			cache_invalidate(o, "backing file lost data");
	}
	return o->fd;
}

static int forget_part(uint64_t s, uint64_t e, void *ctx)
{
	struct cache_object *o = ctx;
	uint64_t before = o->valid.bytes;

	extent_set_remove(&o->valid, s, e);
	bytes_changed(before, o->valid.bytes);
	return 0;
}

/* A store of [start, end) failed: the bytes the cache holds there (not
 * dirty or sent ones, which are newer) are older than the caller's and are
 * no longer valid. */
static void forget_clean(struct cache_object *o, uint64_t start, uint64_t end)
{
	uint64_t before = o->valid.bytes;

	foreach_clean_part(o, start, end, forget_part, o);
	if (o->valid.bytes != before) {
		changed(o);
		persist_mark(o);
	}
}

struct store_ctx {
	struct cache_object *o;
	int fd;
	const void *data;       /* the bytes from `offset` on */
	uint64_t offset;
};

static int store_part(uint64_t s, uint64_t e, void *ctx)
{
	struct store_ctx *sc = ctx;
	int rc = backing_write(sc->fd, (const char *)sc->data + (s - sc->offset), (size_t)(e - s), s);

	if (rc != 0) {
		log_limited(LOG_LEVEL_WARNING, "cache: backing write of object %llu: %s",
			    (unsigned long long)sc->o->id, strerror(-rc));
		if (rc == -ENOSPC || rc == -EDQUOT)
			space_nospace();
		return rc;
	}
	uint64_t before = sc->o->valid.bytes;
	extent_set_add(&sc->o->valid, s, e);
	bytes_changed(before, sc->o->valid.bytes);
	return 0;
}

int cache_store(struct cache_object *o, uint64_t offset, const void *data, uint32_t len,
		uint64_t gen_at_start)
{
	if (o->gen > gen_at_start)
		return -ESTALE;
	if (len == 0)
		return 0;
	if (!space_may_store(len)) {
		/* answered from the caller's buffer, not kept: what the cache
		 * holds of the range may be older (a WRITE written through) */
		forget_clean(o, offset, offset + len);
		return -ENOSPC;
	}
	int fd = object_fd(o);
	if (fd < 0) {
		forget_clean(o, offset, offset + len);
		return fd;
	}
	/* one pwrite per part that is neither dirty nor sent: local bytes win */
	struct store_ctx sc = { o, fd, data, offset };
	int rc = foreach_clean_part(o, offset, offset + len, store_part, &sc);
	if (rc != 0)
		forget_clean(o, offset, offset + len);
	persist_mark(o);
	space_stored();
	return rc;
}


/*
 * A page of zeros in what was read may be a hole punched in the backing file
 * behind our back: ask the file (one lseek), and drop the data if so.  Real
 * zero pages cost that lseek; others cost nothing but the scan.
 */
static int zeros_are_data(struct cache_object *o, uint64_t offset, const void *buf, uint32_t len)
{
	static const uint8_t zero[4096];
	const uint8_t *p = buf;

	for (uint32_t done = 0; done < len; ) {
		uint32_t n = len - done < sizeof(zero) ? len - done : (uint32_t)sizeof(zero);
		if (memcmp(p + done, zero, n) == 0 &&
		    backing_has_data(o->fd, offset + done, offset + done + n) != 1) {
			cache_invalidate(o, "hole in the backing file");
			return 0;
		}
		done += n;
	}
	return 1;
}

int cache_read_local(struct cache_object *o, uint64_t offset, void *buf, uint32_t len)
{
	int fd = object_fd(o);

	if (fd < 0)
		return -EIO;
	if (!extent_set_covers(&o->valid, offset, offset + len))
		return -EIO;   /* the check on opening dropped them */
	ssize_t n = backing_read(fd, buf, len, offset);
	if (n != (ssize_t)len) {
		cache_invalidate(o, "backing file shorter than its valid data");
		return -EIO;
	}
	return zeros_are_data(o, offset, buf, len) ? 0 : -EIO;
}

int cache_read_local_nowait(struct cache_object *o, uint64_t offset, void *buf, uint32_t len)
{
	int fd = object_fd(o);

	if (fd < 0 || !extent_set_covers(&o->valid, offset, offset + len))
		return -EIO;
	ssize_t n = backing_read_nowait(fd, buf, len, offset);
	if (n == (ssize_t)len)
		return zeros_are_data(o, offset, buf, len) ? 0 : -EIO;
	if (n == -EAGAIN || n > 0)
		return -EAGAIN;   /* the rest is on the disk */
	cache_invalidate(o, "backing file shorter than its valid data");
	return -EIO;
}

int cache_zerocopy_fd(struct cache_object *o, uint64_t offset, uint32_t len)
{
	int fd = object_fd(o);

	if (fd < 0 || !extent_set_covers(&o->valid, offset, offset + len))
		return -EIO;
	int rc = backing_data_through(fd, offset, offset + len);
	if (rc == 0) {
		cache_invalidate(o, "backing file shorter than its valid data, or a hole in it");
		return -EIO;
	}
	if (rc == 1)
		rc = backing_resident(fd, offset, offset + len);
	return rc == 1 ? fd : -EAGAIN;   /* an lseek or mincore error: the worker reads */
}

static void nothing_work(void *arg)
{
	(void)arg;
}

struct read_job {
	struct cache_object *o;
	int fd;               /* dup: the object's fd may be closed meanwhile */
	uint64_t offset;
	void *buf;
	uint32_t len;
	ssize_t got;
	void (*done)(void *arg, int rc);
	void *arg;
	uint64_t seq;         /* the object's generation when the read started */
	int raw;              /* bytes of the backing file, whatever their state */
};

static void read_job_work(void *arg)
{
	struct read_job *j = arg;
	size_t done = 0;

	j->got = 0;
	while (done < j->len) {
		ssize_t n = pread(j->fd, (char *)j->buf + done, j->len - done, (off_t)(j->offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	j->got = (ssize_t)done;
}

static void read_job_done(void *arg)
{
	struct read_job *j = arg;
	int rc = 0;

	stats.backing_read_calls++;
	close(j->fd);
	if (j->raw) {
		rc = j->got == (ssize_t)j->len ? 0 : -EIO;
	} else if (j->got != (ssize_t)j->len) {
		cache_invalidate(j->o, "backing file shorter than its valid data");
		rc = -EIO;
	} else if (j->seq != j->o->gen ||
		   !extent_set_covers(&j->o->valid, j->offset, j->offset + j->len) ||
		   (j->o->fd >= 0 && !zeros_are_data(j->o, j->offset, j->buf, j->len))) {
		rc = -EIO;   /* changed while the worker read: read again */
	}
	j->done(j->arg, rc);
	free(j);
}

static int read_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
		      void (*done)(void *arg, int rc), void *arg, int raw)
{
	if (!cache_state.workers)
		return -ENODEV;
	struct read_job *j = xcalloc(1, sizeof(*j));
	if (raw)
		object_fd(o);
	j->raw = raw;
	j->o = o;
	j->seq = o->gen;
	j->fd = o->fd >= 0 ? dup(o->fd) : -1;
	j->offset = offset;
	j->buf = buf;
	j->len = len;
	j->done = done;
	j->arg = arg;
	if (j->fd < 0) {
		j->got = -1;   /* completes with -EIO, later, from the loop */
		return worker_submit(cache_state.workers, nothing_work, read_job_done, j);
	}
	return worker_submit(cache_state.workers, read_job_work, read_job_done, j);
}

int cache_read_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
		     void (*done)(void *arg, int rc), void *arg)
{
	return read_async(o, offset, buf, len, done, arg, 0);
}

int cache_read_backing_async(struct cache_object *o, uint64_t offset, void *buf, uint32_t len,
			     void (*done)(void *arg, int rc), void *arg)
{
	return read_async(o, offset, buf, len, done, arg, 1);
}
