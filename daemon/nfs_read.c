/*
 * nfs_read.c — READ through the cache (DESIGN.md "Read cache").
 *
 * A READ is served from the backing file when every requested byte below
 * EOF is valid — in wholly uptodate pages (cache.read.hits) or partially
 * uptodate ones (cache.read.partial_hits, unless cache.partial_pages = no) —
 * to a credential the upstream granted read access, while the attributes
 * are fresh (else one GETATTR first).  Otherwise the page-aligned span is
 * fetched with the caller's credential (plus readahead on sequential access,
 * several READs in flight), stored with one pwrite, and the client answered
 * from the fetched buffer.  Misses on a range already being fetched wait for
 * that fetch instead of sending another.
 *
 * Owns each object's read state (o->rd, struct read_state): where the last
 * READ ended, how far readahead went, and the object's fetches in flight;
 * made by the object's first READ, released with the object
 * (nfsd_read_state_free, through the cache's free hook).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"
#include "daemon/call.h"
#include "daemon/handlers.h"
#include "daemon/nfs_common.h"
#include "daemon/nfsd.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"

#define READAHEAD_MAX_FETCHES 8     /* readahead READs in flight, all objects */

/* nfs_read.c's part of a cache object (o->rd). */
struct read_state {
	uint64_t next_offset;           /* end of the last READ: sequential access */
	uint64_t readahead_end;         /* readahead issued up to here, bytes */
	struct list_node fetches;       /* struct fetch in flight for the object */
};

struct read_op {
	struct nfsd_call *call;
	struct cache_object *o;
	struct cache_waiter waiter;
	bool sequential;                /* it starts where the previous READ ended */
	bool readahead_done;            /* its readahead was started */
	int fetches;                    /* upstream READs made for it */
	struct writeback_waiter wbw;
	union {
		struct nfsd_getattr getattr;    /* revalidation */
		struct nfsd_access access;
	} args;
};

/* One READ sent upstream for [start, start + len) of an object. */
struct fetch {
	struct list_node link;          /* in o->rd->fetches */
	struct cache_object *o;
	uint64_t start;
	uint32_t len;
	uint64_t seq;
	READ3args args;
	struct read_op *op;             /* the client READ it answers, or NULL (readahead) */
	struct rpc_cred cred;
};

static unsigned readahead_in_flight;

static void read_try(struct read_op *op);

/* The read state of `o`, made on first use.  Never NULL. */
static struct read_state *read_state(struct cache_object *o)
{
	if (!o->rd) {
		o->rd = xcalloc(1, sizeof(*o->rd));
		list_init(&o->rd->fetches);
	}
	return o->rd;
}

void nfsd_read_state_free(struct cache_object *o)
{
	/* fetches pin their object (cache_pin): the cache frees none while one is
	 * in flight, unless the daemon stops (cache_finalise) */
	free(o->rd);
	o->rd = NULL;
}

static void op_free(struct read_op *op)
{
	cache_unpin(op->o);
	free(op);
}

static void op_wake(struct cache_waiter *w)
{
	read_try(container_of(w, struct read_op, waiter));
}

/* Pass the READ through unchanged (the upstream has the last word). */
static void read_forward(struct read_op *op)
{
	struct nfsd_call *call = op->call;

	op_free(op);
	nfsd_forward_with(call, NULL);
}

/* The per-export READ counters of `o` (stats.h: keyed by the upstream fsid). */
static struct stats_export_counts *export_stats(const struct cache_object *o)
{
	return stats_export(o->have_attrs, o->attrs.fsid);
}

/* Is a byte of [start, end) of `o` being fetched? */
static bool fetch_overlaps(const struct cache_object *o, uint64_t start, uint64_t end)
{
	struct list_node *pos;

	if (!o->rd)
		return false;
	for (pos = o->rd->fetches.next; pos != &o->rd->fetches; pos = pos->next) {
		struct fetch *f = list_entry(pos, struct fetch, link);
		if (f->start < end && start < f->start + f->len)
			return true;
	}
	return false;
}

static void reply_from(struct read_op *op, READ3res *res)
{
	struct nfsd_call *call = op->call;

	op_free(op);
	call_reply(call, res);
}

/* ---- answering from the cache ---------------------------------------- */

static bool pages_uptodate(const struct cache_object *o, uint64_t start, uint64_t end)
{
	uint64_t pg = cache_config()->page_size;

	for (uint64_t p = start / pg; p * pg < end; p++)
		if (!extent_set_page_uptodate(&o->valid, p, pg, cache_client_size(o)))
			return false;
	return true;
}

/* Answers at least this big are sent from the page cache with sendfile
 * when it holds them; smaller ones are copied (on loopback the copy of
 * 32 KiB costs about as much as the residency check and the extra
 * syscalls; at 256 KiB sendfile takes a third less time). */
#define READ_ZEROCOPY_MIN_BYTES (32u * 1024)

struct local_read {
	struct read_op *op;
	uint64_t start, end;
	bool whole;          /* every touched page wholly uptodate */
	char *buf;           /* the bytes read, or NULL: sent from `fd` */
	int fd;              /* the backing file (the cache's), when buf is NULL */
};

static void local_reply(struct local_read *lr)
{
	struct read_op *op = lr->op;
	struct cache_object *o = op->o;
	uint32_t n = (uint32_t)(lr->end - lr->start);
	READ3res res;

	memset(&res, 0, sizeof(res));
	res.status = NFS3_OK;
	res.READ3res_u.resok.file_attributes.attributes_follow = 1;
	res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes = o->attrs;
	cache_patch_attrs(o, &res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes);
	res.READ3res_u.resok.count = n;
	res.READ3res_u.resok.eof = lr->end >= cache_client_size(o);
	res.READ3res_u.resok.data.data_len = n;
	res.READ3res_u.resok.data.data_val = lr->buf;
	struct stats_export_counts *xs = export_stats(o);
	if (lr->whole) {
		stats.cache_read_hits++;
		xs->cache_read_hits++;
	} else {
		stats.cache_read_partial_hits++;
		xs->cache_read_partial_hits++;
	}
	stats.cache_read_bytes_local += n;
	xs->cache_read_bytes_local += n;
	cache_touch(o);
	if (lr->buf) {
		reply_from(op, &res);
	} else {
		/* the object stays pinned (op) while its backing file sends */
		call_reply_read_file(op->call, &res, lr->fd, lr->start);
		op_free(op);
	}
	free(lr->buf);
	free(lr);
}

/* A cold read finished on a worker thread. */
static void local_read_done(void *arg, int rc)
{
	struct local_read *lr = arg;
	struct read_op *op = lr->op;

	if (rc == 0) {
		local_reply(lr);
		return;
	}
	free(lr->buf);
	free(lr);
	read_try(op);   /* lost behind our back: fetched again */
}

/* true when answered (or being answered from a worker), false when the
 * bytes are not all here.  Bytes in the page cache are read on the loop;
 * the others on a worker thread (the loop never waits on the disk). */
static bool serve_local(struct read_op *op)
{
	READ3args *a = op->call->args;
	struct cache_object *o = op->o;
	uint64_t size = cache_client_size(o);
	uint64_t start = a->offset, end = a->offset + a->count;

	if (end > size)
		end = size;
	if (start > end)
		start = end;
	if (!extent_set_covers(&o->valid, start, end))
		return false;
	bool whole = pages_uptodate(o, start, end);
	if (!whole && !cache_config()->partial_pages)
		return false;
	struct local_read *lr = xcalloc(1, sizeof(*lr));
	lr->op = op;
	lr->start = start;
	lr->end = end;
	lr->whole = whole;
	uint32_t n = (uint32_t)(end - start);
	int rc = n ? -EAGAIN : 0;
	if (n >= READ_ZEROCOPY_MIN_BYTES) {
		lr->fd = cache_zerocopy_fd(o, start, n);
		if (lr->fd >= 0) {
			local_reply(lr);
			return true;
		}
		if (lr->fd == -EIO) {
			free(lr);
			return false;   /* lost behind our back: fetched again */
		}
	}
	lr->buf = xmalloc(n ? n : 1);
	if (n && n < READ_ZEROCOPY_MIN_BYTES)
		rc = cache_read_local_nowait(o, start, lr->buf, n);
	if (rc == 0) {
		local_reply(lr);
		return true;
	}
	if (rc == -EAGAIN && cache_read_async(o, start, lr->buf, n, local_read_done, lr) == 0)
		return true;
	free(lr->buf);
	free(lr);
	return false;   /* lost behind our back: fetched again */
}

/* ---- fetching -------------------------------------------------------- */

static void fetch_done(void *priv, enum upstream_status st, void *res);

static void fetch_start(struct cache_object *o, uint64_t start, uint32_t len,
			const struct rpc_cred *cred, struct read_op *op)
{
	struct fetch *f = xcalloc(1, sizeof(*f));
	f->o = o;
	f->start = start;
	f->len = len;
	f->seq = cache_seq();
	f->op = op;
	f->cred = *cred;
	f->args.file.data.data_len = o->fh_len;
	f->args.file.data.data_val = (char *)o->fh;
	f->args.offset = start;
	f->args.count = len;
	list_add_tail(&read_state(o)->fetches, &f->link);
	cache_pin(o);
	if (!op)
		readahead_in_flight++;
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_READ), &f->args, cred, fetch_done, f);
}

/* Sequential access: keep up to cache.readahead bytes past `from` fetched. */
static void readahead(struct cache_object *o, uint64_t from, const struct rpc_cred *cred)
{
	uint64_t limit = from + cache_config()->readahead;
	uint64_t pg = cache_config()->page_size;

	if (!cache_storing())
		return;   /* nothing fetched ahead could be kept */
	if (o->coh.known && limit > (cache_client_size(o) + pg - 1) / pg * pg)
		limit = (cache_client_size(o) + pg - 1) / pg * pg;
	struct read_state *rd = read_state(o);
	if (rd->readahead_end < from)
		rd->readahead_end = from;
	while (rd->readahead_end < limit && readahead_in_flight < READAHEAD_MAX_FETCHES) {
		uint64_t s = rd->readahead_end, e = s + nfsd.max_payload;
		if (e > limit)
			e = limit;
		rd->readahead_end = e;
		uint64_t gs, ge;
		if (!extent_set_first_gap(&o->valid, s, e, &gs, &ge) || fetch_overlaps(o, s, e))
			continue;
		fetch_start(o, s, (uint32_t)(e - s), cred, NULL);
	}
}

/* Answer the client whose miss started the fetch, from the fetched bytes. */
static void answer_from_fetch(struct read_op *op, const struct fetch *f, READ3res *up)
{
	READ3args *a = op->call->args;
	READ3resok *ok = &up->READ3res_u.resok;
	uint64_t got_end = f->start + ok->count;
	uint64_t start = a->offset, end = a->offset + a->count;
	READ3res res = *up;

	if (end > got_end)
		end = got_end;
	if (start > end)
		start = end;
	res.READ3res_u.resok.count = (uint32_t)(end - start);
	res.READ3res_u.resok.data.data_len = (uint32_t)(end - start);
	res.READ3res_u.resok.data.data_val = ok->data.data_val + (start - f->start);
	/* EOF only when the client's range reaches the end the upstream saw */
	res.READ3res_u.resok.eof = ok->eof && end == got_end;
	reply_from(op, &res);
}

static void read_after_flush(struct writeback_waiter *w, int status)
{
	struct read_op *op = container_of(w, struct read_op, wbw);

	if (status < 0) {
		struct nfsd_call *call = op->call;
		op_free(op);
		call_reply_jukebox(call);
		return;
	}
	read_try(op);
}

static bool ok_attrs(const READ3res *r)
{
	return r->READ3res_u.resok.file_attributes.attributes_follow;
}

/*
 * The upstream's file ends before the local one (dirty bytes past its EOF):
 * what lies between its EOF and the local size, outside dirty bytes, reads
 * as zeros — as it will once the dirty bytes are written there.
 */
static void store_zeros_past_eof(struct cache_object *o, const struct fetch *f, uint32_t got)
{
	uint64_t from = f->start + got, to = f->start + f->len;

	if (to > cache_client_size(o))
		to = cache_client_size(o);
	if (from >= to)
		return;
	char *zeros = xcalloc(1, (size_t)(to - from));
	cache_store(o, from, zeros, (uint32_t)(to - from), f->seq);
	free(zeros);
}

static void fetch_done(void *priv, enum upstream_status st, void *res)
{
	struct fetch *f = priv;
	struct cache_object *o = f->o;
	READ3res *r = res;

	list_del(&f->link);
	cache_unpin(o);
	if (!f->op)
		readahead_in_flight--;
	if (st == UPSTREAM_OK && r->status == NFS3_OK) {
		READ3resok *ok = &r->READ3res_u.resok;
		if (ok->file_attributes.attributes_follow)
			cache_attrs_update(o, &ok->file_attributes.post_op_attr_u.attributes, f->seq);
		uint32_t n = ok->count <= ok->data.data_len ? ok->count : ok->data.data_len;
		stats.cache_read_bytes_upstream += n;
		export_stats(o)->cache_read_bytes_upstream += n;
		cache_store(o, f->start, ok->data.data_val, n, f->seq);
		if (ok->eof && cache_has_uncommitted(o))
			store_zeros_past_eof(o, f, n);
		cache_access_record(o, &f->cred, ACCESS3_READ, ACCESS3_READ);
	}
	if (f->op) {
		struct read_op *op = f->op;
		struct nfsd_call *call = op->call;
		if (st == UPSTREAM_OK && r->status == NFS3_OK && cache_has_uncommitted(o)) {
			/* local bytes are newer than the upstream's: answered from the
			 * cache, which now holds the rest — or, when our own write-back
			 * keeps outdating what is fetched, once the upstream has them */
			f->op = NULL;
			if (op->fetches < 3) {
				read_try(op);
			} else {
				op->fetches = 0;
				op->wbw.done = read_after_flush;
				if (writeback_flush(o, &op->wbw) != 0)
					read_try(op);   /* nothing to write back after all */
			}
		} else if (st == UPSTREAM_OK && r->status == NFS3_OK) {
			if (ok_attrs(r))
				cache_patch_attrs(o, &r->READ3res_u.resok.file_attributes.post_op_attr_u.attributes);
			answer_from_fetch(op, f, r);
		} else if (st == UPSTREAM_OK) {
			reply_from(op, r);   /* the upstream's error, as it gave it */
		} else {
			op_free(op);
			if (st == UPSTREAM_TIMEOUT)
				call_reply_jukebox(call);
			else if (st == UPSTREAM_DENIED)
				call_reply_auth_error(call, RPC_AUTH_BADCRED);
			else
				call_reply_rpc_error(call, RPC_SYSTEM_ERR);
		}
	}
	free(f);
	cache_wake(o);
}

/* ---- revalidation ---------------------------------------------------- */

static void read_revalidated(struct nfsd_getattr *g, enum upstream_status st, const GETATTR3res *r)
{
	struct read_op *op = container_of(g, struct read_op, args.getattr);

	(void)st;
	(void)r;
	if (cache_attrs_fresh(op->o))
		read_try(op);
	else
		read_forward(op);   /* not a regular file, stale handle, no answer...: the upstream decides */
}

static void access_done(void *priv, enum upstream_status st, void *res)
{
	struct read_op *op = priv;
	ACCESS3res *r = res;

	if (st == UPSTREAM_OK && r->status == NFS3_OK) {
		nfsd_access_snoop(op->o, &op->call->cred, &op->args.access, r);
		if (cache_access_granted(op->o, &op->call->cred, ACCESS3_READ)) {
			read_try(op);
			return;
		}
	}
	read_forward(op);   /* not granted: the upstream gives the error */
}

/* Sequential access (judged once, when the READ arrived): keep the data
 * past `from` coming, once per READ. */
static void op_readahead(struct read_op *op, uint64_t from)
{
	if (op->sequential && !op->readahead_done) {
		op->readahead_done = true;
		readahead(op->o, from, &op->call->cred);
	}
}

static void read_try(struct read_op *op)
{
	struct cache_object *o = op->o;
	READ3args *a = op->call->args;
	const struct rpc_cred *cred = &op->call->cred;

	if (nfsd_revalidate(o, cred, &op->waiter, &op->args.getattr, read_revalidated))
		return;
	uint64_t pg = cache_config()->page_size;
	uint64_t end = a->offset + a->count;
	uint64_t fs = a->offset / pg * pg, fe = (end + pg - 1) / pg * pg;

	if (fe - fs > nfsd.max_payload)
		fe = fs + nfsd.max_payload;   /* the rest is a short read: legal */
	uint64_t size = cache_client_size(o);
	if (extent_set_covers(&o->valid, a->offset, end < size ? end : size) || a->offset >= size) {
		if (!cache_access_granted(o, cred, ACCESS3_READ)) {
			nfsd_access_send(&op->args.access, &a->file, ACCESS3_READ, cred, access_done, op);
			return;
		}
		op_readahead(op, end);
		if (serve_local(op))
			return;
	}
	if (fetch_overlaps(o, fs, fe)) {
		op_readahead(op, fe);
		cache_wait(o, &op->waiter);   /* one upstream READ per page range */
		return;
	}
	stats.cache_read_misses++;
	export_stats(o)->cache_read_misses++;
	op->fetches++;
	fetch_start(o, fs, (uint32_t)(fe - fs), cred, op);
	op_readahead(op, fe);   /* random reads fetch their pages only */
}

/* The first READ of a handle the cache does not know goes upstream as it is;
 * only a reply showing a regular file makes an object of it, holding the
 * bytes read. */
static void first_read_fixup(struct nfsd_call *call, void *res)
{
	READ3res *r = res;
	READ3args *a = call->args;
	READ3resok *ok = &r->READ3res_u.resok;

	stats.cache_read_misses++;
	struct stats_export_counts *xs = stats_export(
		r->status == NFS3_OK && ok->file_attributes.attributes_follow,
		ok->file_attributes.post_op_attr_u.attributes.fsid);
	xs->cache_read_misses++;
	if (r->status != NFS3_OK || !ok->file_attributes.attributes_follow ||
	    ok->file_attributes.post_op_attr_u.attributes.type != NF3REG)
		return;
	struct cache_object *o = cache_get((const uint8_t *)a->file.data.data_val,
					   a->file.data.data_len);
	uint32_t n = ok->count <= ok->data.data_len ? ok->count : ok->data.data_len;
	uint64_t seq = nfsd_call_state(call)->seq;
	cache_attrs_update(o, &ok->file_attributes.post_op_attr_u.attributes, seq);
	stats.cache_read_bytes_upstream += n;
	xs->cache_read_bytes_upstream += n;
	cache_store(o, a->offset, ok->data.data_val, n, seq);
	cache_access_record(o, &call->cred, ACCESS3_READ, ACCESS3_READ);
	read_state(o)->next_offset = a->offset + a->count;
}

void nfsd_proc_read(struct nfsd_call *call)
{
	READ3args *a = call->args;

	if (a->count > nfsd.max_payload)
		a->count = nfsd.max_payload;
	/* what the cache would answer differently from the upstream goes there:
	 * 0-byte reads (EOF flag) and offsets past what a file can hold */
	if (!nfsd.cache_on || !nfsd_fh_cacheable(&a->file) ||
	    a->count == 0 || a->offset > (uint64_t)INT64_MAX - a->count) {
		nfsd_forward_with(call, NULL);
		return;
	}
	struct cache_object *o = cache_find((const uint8_t *)a->file.data.data_val,
					    a->file.data.data_len);
	if (!o) {
		nfsd_forward_with(call, first_read_fixup);
		return;
	}
	struct read_op *op = xcalloc(1, sizeof(*op));
	op->call = call;
	op->o = o;
	struct read_state *rd = read_state(o);
	op->sequential = a->offset == rd->next_offset && a->offset != 0;
	rd->next_offset = a->offset + a->count;
	cache_pin(op->o);
	op->waiter.wake = op_wake;
	read_try(op);
}
