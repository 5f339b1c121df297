/*
 * nfs_read.c — READ through the cache (DESIGN.md "Read cache").
 *
 * A READ is served from the backing file when every requested byte below
 * EOF is valid — in wholly uptodate pages (cache.read.hits) or partially
 * uptodate ones (cache.read.partial_hits, unless cache.partial_pages = no) —
 * to a credential the upstream granted read access, while the attributes
 * are fresh (else one GETATTR first).  Otherwise the page-aligned span is
 * fetched with the caller's credential, stored with one pwrite, and the
 * client answered from the fetched buffer.  Misses on a range already being
 * fetched wait for that fetch instead of sending another: a READ whose bytes
 * one fetch holds is answered from that fetch's buffer as soon as it arrives,
 * before the bytes are stored (unless a change or dirty bytes overtook the
 * fetch: then from the cache); a READ spanning several fetches is answered
 * from the cache once they are all in.
 *
 * Readahead follows sequential streams, up to READAHEAD_STREAMS per object
 * (several readers of one file, as the Linux kernel's file_ra_state per open
 * file): a stream is known by where its last READ ended, and a READ starting
 * anywhere else starts a new stream in the least recently used slot.  The
 * second READ of a stream (sequential now) opens a window of cache.readahead
 * bytes past its pages; a later READ reaching into the window (its first byte
 * is the async marker) moves it past the window with twice the size, up to
 * cache.readahead_max (cache.readahead.window_grows), so that one window is
 * read while the next is fetched.  Windows are fetched in READs of the
 * upstream's rtmax (page-aligned), skipping what is valid or being fetched.
 * Random access fetches its own pages only.
 *
 * Bound: readahead bytes in flight, over every object, stay below
 * READAHEAD_BYTES_IN_FLIGHT (64 MiB; one fetch may cross it).  Past it a
 * stream sends the rest of its window on its next READ, or when a readahead
 * fetch of its object completes.  A stream at cache.readahead_max = 8M keeps
 * at most 16 MiB in flight (the window being read and the next one), so four
 * such streams run unhindered and more share the bound; memory for replies
 * stays within it whatever the number of streams.
 *
 * Owns each object's read state (o->rd, struct read_state): its streams and
 * its fetches in flight; made by the object's first READ, released with the
 * object (nfsd_read_state_free, through the cache's free hook).
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

#define READAHEAD_STREAMS 4                     /* sequential streams followed per object */
#define READAHEAD_BYTES_IN_FLIGHT (64u << 20)   /* readahead fetched at once, all objects */

/* One sequential reader of an object (a file_ra_state). */
struct ra_stream {
	uint32_t id;                    /* names it to its READs (read_op.stream); 0: unused */
	uint64_t last_use;              /* read_state.clock at its last READ: the least
					 * recently used slot is taken for a new stream */
	uint64_t next_offset;           /* where its last READ ended, bytes */
	uint64_t window_start;          /* readahead window [start, start + bytes), bytes,
					 * page-aligned; its first byte is the async marker */
	uint64_t window_bytes;          /* 0 until the stream is sequential (or readahead off) */
	uint64_t sent_end;              /* readahead sent up to here, bytes (<= window end) */
};

/* nfs_read.c's part of a cache object (o->rd). */
struct read_state {
	struct ra_stream streams[READAHEAD_STREAMS];
	uint64_t clock;                 /* READs of the object: the streams' LRU clock */
	struct list_node fetches;       /* struct fetch in flight for the object */
};

struct read_op {
	struct nfsd_call *call;
	struct cache_object *o;
	struct cache_waiter waiter;     /* cache_wait(): a GETATTR, or fetches it spans */
	struct list_node join_link;     /* in fetch.joined while a fetch holds all its bytes */
	uint32_t stream;                /* its stream's id when it continues one, else 0 */
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
	struct list_node joined;        /* struct read_op whose bytes it holds, waiting */
	struct rpc_cred cred;
};

static uint64_t readahead_bytes_in_flight;   /* len of readahead fetches in flight */
static uint32_t last_stream_id;

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

/* Drop the read state of `o` once it tells nothing: no fetch in flight and
 * every stream it follows has reached the end of the file (a small file
 * read whole, the usual case: its object stays small while in memory). */
static void read_state_trim(struct cache_object *o)
{
	struct read_state *rd = o->rd;
	uint64_t size = cache_client_size(o);

	if (!rd || !list_empty(&rd->fetches))
		return;
	for (int i = 0; i < READAHEAD_STREAMS; i++)
		if (rd->streams[i].id && rd->streams[i].next_offset < size)
			return;
	nfsd_read_state_free(o);
}

static void op_free(struct read_op *op)
{
	read_state_trim(op->o);
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

/* `bytes` rounded up to whole pages. */
static uint64_t page_up(uint64_t bytes)
{
	uint64_t pg = cache_config()->page_size;

	return (bytes + pg - 1) / pg * pg;
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

/* The fetch in flight asking for every byte of [start, end) of `o`, or NULL. */
static struct fetch *fetch_holding(const struct cache_object *o, uint64_t start, uint64_t end)
{
	struct list_node *pos;

	if (!o->rd || start >= end)
		return NULL;
	for (pos = o->rd->fetches.next; pos != &o->rd->fetches; pos = pos->next) {
		struct fetch *f = list_entry(pos, struct fetch, link);
		if (f->start <= start && end <= f->start + f->len)
			return f;
	}
	return NULL;
}

/*
 * The first part of [start, end) of `o` neither valid nor being fetched:
 * true and [*gap_start, *gap_end), or false when there is none.
 */
static bool first_unfetched(const struct cache_object *o, uint64_t start, uint64_t end,
			    uint64_t *gap_start, uint64_t *gap_end)
{
	uint64_t from = start;

	while (from < end) {
		uint64_t gs, ge;
		bool in_flight = false;
		if (!extent_set_first_gap(&o->valid, from, end, &gs, &ge))
			return false;
		for (struct list_node *pos = o->rd ? o->rd->fetches.next : NULL;
		     o->rd && pos != &o->rd->fetches; pos = pos->next) {
			struct fetch *f = list_entry(pos, struct fetch, link);
			if (f->start <= gs && gs < f->start + f->len) {
				from = f->start + f->len;   /* the gap starts in this fetch */
				in_flight = true;
				break;
			}
			if (gs < f->start && f->start < ge)
				ge = f->start;
		}
		if (!in_flight) {
			*gap_start = gs;
			*gap_end = ge;
			return true;
		}
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
	cache_object_attrs(o, &res.READ3res_u.resok.file_attributes.post_op_attr_u.attributes);
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
	list_init(&f->joined);
	f->cred = *cred;
	f->args.file.data.data_len = o->fh_len;
	f->args.file.data.data_val = (char *)o->fh;
	f->args.offset = start;
	f->args.count = len;
	list_add_tail(&read_state(o)->fetches, &f->link);
	cache_pin(o);
	if (!op)
		readahead_bytes_in_flight += len;
	upstream_call(nfsd.upstream, proc_nfs3(NFS3PROC_READ), &f->args, cred, fetch_done, f);
}

/* Bytes per readahead READ: the upstream's rtmax (nfsd.max_payload until it
 * is known), in whole pages. */
static uint64_t readahead_fetch_bytes(void)
{
	uint64_t pg = cache_config()->page_size;
	uint64_t n = upstream_rtmax(nfsd.upstream);

	if (n == 0)
		n = nfsd.max_payload;
	n = n / pg * pg;
	return n ? n : pg;
}

/*
 * Fetch what `s` of `o` has not sent of its window yet, from `from` on
 * (bytes, page-aligned), as `cred`: what is neither valid nor being fetched,
 * below the file's end, while the bound on readahead in flight allows.
 */
static void readahead_send(struct cache_object *o, struct ra_stream *s, uint64_t from,
			   const struct rpc_cred *cred)
{
	uint64_t pg = cache_config()->page_size;
	uint64_t limit = s->window_start + s->window_bytes;
	uint64_t chunk = readahead_fetch_bytes();

	if (!cache_storing() || s->window_bytes == 0)
		return;   /* nothing fetched ahead could be kept */
	if (o->coh.known && limit > cache_client_size(o))
		limit = cache_client_size(o);   /* bytes past EOF are never valid */
	uint64_t pos = s->sent_end > from ? s->sent_end : from;
	while (pos < limit && readahead_bytes_in_flight < READAHEAD_BYTES_IN_FLIGHT) {
		uint64_t gs, ge;
		if (!first_unfetched(o, pos, limit, &gs, &ge)) {
			pos = limit;
			break;
		}
		gs = gs / pg * pg;
		ge = page_up(ge);   /* within the window: its end is page-aligned */
		if (ge - gs > chunk)
			ge = gs + chunk;
		fetch_start(o, gs, (uint32_t)(ge - gs), cred, NULL);
		pos = ge;
	}
	if (pos > s->sent_end)
		s->sent_end = pos;
}

/* A readahead fetch of `o` is in: room in the bound again for what its
 * streams could not send (fetched as `cred`, whose READ just succeeded). */
static void readahead_resume(struct cache_object *o, const struct rpc_cred *cred)
{
	if (!o->rd)
		return;   /* every stream reached the end of the file (read_state_trim) */
	for (struct ra_stream *s = o->rd->streams; s < o->rd->streams + READAHEAD_STREAMS; s++)
		if (s->id && s->window_bytes && s->sent_end < s->window_start + s->window_bytes)
			readahead_send(o, s, s->sent_end, cred);
}

/* Answer the client from the fetched bytes (what it asked for, within what
 * the upstream returned). */
static void answer_from_fetch(struct read_op *op, const struct fetch *f, READ3res *up)
{
	READ3args *a = op->call->args;
	READ3resok *ok = &up->READ3res_u.resok;
	uint32_t got = ok->count <= ok->data.data_len ? ok->count : ok->data.data_len;
	uint64_t got_end = f->start + got;
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

/*
 * The READs waiting for `f` whose bytes it brought, answered from its buffer
 * (before the bytes are stored): counted as hits, for the bytes were fetched
 * ahead of them or for another READ.  Only when nothing overtook the fetch
 * (the caller checked that no local bytes are newer); the others stay joined.
 */
static void answer_joined(struct fetch *f, READ3res *r)
{
	struct cache_object *o = f->o;
	READ3resok *ok = &r->READ3res_u.resok;
	uint32_t got = ok->count <= ok->data.data_len ? ok->count : ok->data.data_len;
	uint64_t got_end = f->start + got;
	struct list_node *pos, *next;
	bool answered = false;

	if (o->gen > f->seq)
		return;   /* a change completed meanwhile: the bytes may be older */
	for (pos = f->joined.next; pos != &f->joined; pos = next) {
		struct read_op *op = list_entry(pos, struct read_op, join_link);
		READ3args *a = op->call->args;
		uint64_t end = a->offset + a->count;
		next = pos->next;
		if (a->offset < f->start || (end > got_end && !(ok->eof && a->offset <= got_end)) ||
		    !cache_access_granted(o, &op->call->cred, ACCESS3_READ))
			continue;
		uint64_t n = (end < got_end ? end : got_end) - a->offset;
		struct stats_export_counts *xs = export_stats(o);
		stats.cache_read_hits++;
		xs->cache_read_hits++;
		stats.cache_read_bytes_local += n;
		xs->cache_read_bytes_local += n;
		list_del(&op->join_link);
		answer_from_fetch(op, f, r);
		answered = true;
	}
	if (answered)
		cache_touch(o);
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

/* The client READ that started `f`, when the fetch did not answer it from
 * its buffer already. */
static void fetch_finish_op(struct fetch *f, enum upstream_status st, READ3res *r)
{
	struct read_op *op = f->op;
	struct nfsd_call *call = op->call;

	f->op = NULL;
	if (st == UPSTREAM_OK && r->status == NFS3_OK) {
		/* local bytes are newer than the upstream's: answered from the
		 * cache, which now holds the rest — or, when our own write-back
		 * keeps outdating what is fetched, once the upstream has them */
		if (op->fetches < 3) {
			read_try(op);
		} else {
			op->fetches = 0;
			op->wbw.done = read_after_flush;
			if (writeback_flush(f->o, &op->wbw) != 0)
				read_try(op);   /* nothing to write back after all */
		}
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

static void fetch_done(void *priv, enum upstream_status st, void *res)
{
	struct fetch *f = priv;
	struct cache_object *o = f->o;
	READ3res *r = res;
	bool got = st == UPSTREAM_OK && r->status == NFS3_OK;
	bool ahead = !f->op;            /* readahead */
	uint32_t n = 0;

	list_del(&f->link);
	if (ahead)
		readahead_bytes_in_flight -= f->len;
	if (got) {
		READ3resok *ok = &r->READ3res_u.resok;
		if (ok->file_attributes.attributes_follow)
			cache_attrs_update(o, &ok->file_attributes.post_op_attr_u.attributes, f->seq);
		n = ok->count <= ok->data.data_len ? ok->count : ok->data.data_len;
		stats.cache_read_bytes_upstream += n;
		export_stats(o)->cache_read_bytes_upstream += n;
		if (ahead)
			stats.cache_readahead_bytes += n;
		cache_access_record(o, &f->cred, ACCESS3_READ, ACCESS3_READ);
	}
	if (got && !cache_has_uncommitted(o)) {
		/* the clients first, the backing file after */
		if (f->op) {
			struct read_op *op = f->op;
			f->op = NULL;
			if (ok_attrs(r))
				cache_patch_attrs(o, &r->READ3res_u.resok.file_attributes.post_op_attr_u.attributes);
			answer_from_fetch(op, f, r);
		}
		answer_joined(f, r);
	}
	if (got) {
		cache_store(o, f->start, r->READ3res_u.resok.data.data_val, n, f->seq);
		if (r->READ3res_u.resok.eof && cache_has_uncommitted(o))
			store_zeros_past_eof(o, f, n);
	}
	if (f->op)
		fetch_finish_op(f, st, r);
	while (!list_empty(&f->joined)) {
		/* not answerable from the buffer: from the cache, or fetched again */
		struct read_op *op = list_entry(f->joined.next, struct read_op, join_link);
		list_del(&op->join_link);
		read_try(op);
	}
	if (got && ahead)
		readahead_resume(o, &f->cred);
	free(f);
	cache_wake(o);
	cache_unpin(o);
}

/* ---- streams --------------------------------------------------------- */

/* The stream of `rd` with id `id`, or NULL (its slot was taken since). */
static struct ra_stream *stream_find(struct read_state *rd, uint32_t id)
{
	for (struct ra_stream *s = rd->streams; s < rd->streams + READAHEAD_STREAMS; s++)
		if (id && s->id == id)
			return s;
	return NULL;
}

/*
 * The stream a READ at `offset` continues: the one whose last READ ended
 * there, else one whose readahead reaches it (READs in flight together may
 * arrive out of order); NULL when none (a READ at 0 starts a file).
 */
static struct ra_stream *stream_continued(struct read_state *rd, uint64_t offset)
{
	struct ra_stream *s;

	if (offset == 0)
		return NULL;
	for (s = rd->streams; s < rd->streams + READAHEAD_STREAMS; s++)
		if (s->id && s->next_offset == offset)
			return s;
	for (s = rd->streams; s < rd->streams + READAHEAD_STREAMS; s++)
		if (s->id && s->window_bytes && offset + s->window_bytes >= s->next_offset &&
		    offset < s->window_start + s->window_bytes)
			return s;
	return NULL;
}

/* A new stream in the least recently used slot of `rd`. */
static struct ra_stream *stream_new(struct read_state *rd)
{
	struct ra_stream *lru = rd->streams;

	for (struct ra_stream *s = rd->streams + 1; s < rd->streams + READAHEAD_STREAMS; s++)
		if (s->last_use < lru->last_use)
			lru = s;
	memset(lru, 0, sizeof(*lru));
	if (++last_stream_id == 0)
		last_stream_id = 1;
	lru->id = last_stream_id;
	return lru;
}

/*
 * A READ ending at `end` continued `s` of `o`: the stream's first sequential
 * READ opens its window of cache.readahead bytes past the READ's pages; a
 * READ reaching into the window (the async marker, its first byte) moves it
 * past itself with twice the size, at most cache.readahead_max.
 */
static void window_advance(struct cache_object *o, struct ra_stream *s, uint64_t end)
{
	const struct cache_config *cc = cache_config();
	uint64_t first = page_up(cc->readahead), max = page_up(cc->readahead_max);
	uint64_t fe = page_up(end);

	if (first == 0) {
		s->window_bytes = 0;   /* readahead off */
		return;
	}
	if (max < first)
		max = first;
	if (s->window_bytes == 0) {
		s->window_start = fe;
		s->window_bytes = first;
		s->sent_end = fe;
		return;
	}
	if (end <= s->window_start)
		return;   /* the marker is not reached yet */
	if (o->coh.known && s->window_start + s->window_bytes >= cache_client_size(o))
		return;   /* the window reaches the end of the file: nothing further */
	uint64_t next = s->window_bytes * 2 < max ? s->window_bytes * 2 : max;
	if (next > s->window_bytes) {
		stats.cache_readahead_window_grows++;
		log_debug("read: object %llu: readahead window %llu bytes",
			  (unsigned long long)o->id, (unsigned long long)next);
	}
	s->window_start += s->window_bytes;
	if (s->window_start < fe)
		s->window_start = fe;   /* the reader overtook its readahead */
	s->window_bytes = next;
	if (s->sent_end < fe)
		s->sent_end = fe;
}

/*
 * Note a READ of [offset, end) of `o` (as it arrives): the id of the stream
 * it continues, its window moved on; or 0, and a new stream starts at it.
 */
static uint32_t stream_note(struct cache_object *o, uint64_t offset, uint64_t end)
{
	struct read_state *rd = read_state(o);
	struct ra_stream *s = stream_continued(rd, offset);
	uint32_t id = 0;

	if (s) {
		window_advance(o, s, end);
		id = s->id;
	} else {
		s = stream_new(rd);
	}
	if (s->next_offset < end)
		s->next_offset = end;
	s->last_use = ++rd->clock;
	return id;
}

/* Sequential access (judged once, when the READ arrived): keep its stream's
 * window coming from `from` (page-aligned), once per READ.  `missed`: the
 * READ's own pages were neither valid nor being fetched, so what was sent
 * ahead of it is gone (or was never sent): sent again from `from`. */
static void op_readahead(struct read_op *op, uint64_t from, bool missed)
{
	if (!op->stream || op->readahead_done)
		return;
	op->readahead_done = true;
	struct ra_stream *s = stream_find(read_state(op->o), op->stream);
	if (!s)
		return;
	if (missed && s->sent_end > from)
		s->sent_end = from;
	readahead_send(op->o, s, from, &op->call->cred);
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
		op_readahead(op, fe, false);
		if (serve_local(op))
			return;
	}
	struct fetch *f = fetch_holding(o, a->offset, end < size ? end : size);
	if (f) {
		op_readahead(op, fe, false);
		list_add_tail(&f->joined, &op->join_link);   /* answered when it is in */
		return;
	}
	if (fetch_overlaps(o, fs, fe)) {
		op_readahead(op, fe, false);
		cache_wait(o, &op->waiter);   /* one upstream READ per page range */
		return;
	}
	stats.cache_read_misses++;
	export_stats(o)->cache_read_misses++;
	op->fetches++;
	fetch_start(o, fs, (uint32_t)(fe - fs), cred, op);
	op_readahead(op, fe, true);   /* random reads fetch their pages only */
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
	stats.cache_read_bytes_upstream += n;
	xs->cache_read_bytes_upstream += n;
	if (!o)
		return;   /* not resolved: the index may hold it (nfsd_call_run) */
	cache_attrs_update(o, &ok->file_attributes.post_op_attr_u.attributes, seq);
	cache_store(o, a->offset, ok->data.data_val, n, seq);
	cache_access_record(o, &call->cred, ACCESS3_READ, ACCESS3_READ);
	stream_note(o, a->offset, a->offset + a->count);
	read_state_trim(o);
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
	list_init(&op->join_link);
	op->stream = stream_note(o, a->offset, a->offset + a->count);
	cache_pin(op->o);
	op->waiter.wake = op_wake;
	read_try(op);
}
