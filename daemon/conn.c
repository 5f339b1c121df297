/*
 * conn.c — listener and client connections on the libev loop.  Owns the
 * sockets, the record reassembly state and the output queues; hands whole
 * records to call_dispatch() and takes encoded replies back through
 * conn_send().  Knows nothing of RPC contents.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon/call.h"
#include "daemon/conn.h"
#include "common/log.h"
#include "daemon/netaddr.h"
#include "daemon/nfsd.h"
#include "common/stats.h"
#include "common/xalloc.h"

#define READ_CHUNK (256 * 1024)
#define READS_PER_EVENT 8        /* fairness between connections */
#define SPLICE_PIPE_BYTES (1u << 20)   /* a whole 1 MiB READ's data (fs.pipe-max-size) */
#define PIPE_PAGE_BYTES 4096u          /* a pipe buffer holds at most one page */

struct listener {
	int fd;
	ev_io io;
	ev_timer backoff;         /* accept paused: out of file descriptors */
	ev_tstamp last_error_log;
	struct ev_loop *loop;
	char address[80];
	unsigned port;
	struct sockaddr_storage bound;
	socklen_t bound_len;
};

static struct list_node all_conns = LIST_INIT(all_conns);
static unsigned n_conns;
static size_t total_bytes;          /* out_bytes + call_bytes of every connection */
static int total_paused;            /* some connection waits for total_bytes to drop */
/* Connections holding part of a record, the one whose record began first
 * first, and the bytes all of them hold (server.partial_max bounds it). */
static struct list_node partial_conns = LIST_INIT(partial_conns);
static size_t partial_total;
static ev_timer idle_sweep;
static uint8_t *read_buf;           /* shared: the loop is single-threaded */

static void conn_free(struct nfsd_conn *conn);

/* Above the shared bound, only the connections holding more than an equal
 * share of it stop: one client's big calls never stall the others.  A
 * quarter above it, every connection stops: the bound holds however many
 * connections there are. */
static int conn_may_read(const struct nfsd_conn *conn)
{
	if (conn->dead || conn->out_bytes >= CONN_MAX_OUT_BYTES ||
	    conn->ncalls >= CONN_MAX_CALLS || conn->call_bytes >= CONN_MAX_CALL_BYTES)
		return 0;
	if (total_bytes < CONN_MAX_TOTAL_BYTES)
		return 1;
	if (total_bytes >= CONN_MAX_TOTAL_BYTES + CONN_MAX_TOTAL_BYTES / 4)
		return 0;
	return conn->out_bytes + conn->call_bytes < CONN_MAX_TOTAL_BYTES / (n_conns ? n_conns : 1);
}

static void conn_update_read(struct nfsd_conn *conn);

/* Every connection's bytes count toward one bound: memory for replies is
 * shared.  Reading resumes everywhere once the total is well below it. */
static void total_add(ssize_t delta)
{
	total_bytes += (size_t)delta;
	if (total_bytes >= CONN_MAX_TOTAL_BYTES) {
		total_paused = 1;
	} else if (total_paused && total_bytes < CONN_MAX_TOTAL_BYTES / 4 * 3) {
		struct list_node *pos, *tmp;
		total_paused = 0;
		list_for_each_safe(pos, tmp, &all_conns)
			conn_update_read(list_entry(pos, struct nfsd_conn, link));
	}
}

/* Backpressure: read (and feed stashed bytes) only while the connection's
 * output and calls in flight are below their bounds.  Stashed bytes are fed
 * from an idle watcher, never from inside the call completion that made
 * room. */
static void conn_update_read(struct nfsd_conn *conn)
{
	int want = conn_may_read(conn);

	if (want && conn->read_paused) {
		if (conn->stash)
			ev_idle_start(nfsd.loop, &conn->resume);
		else
			ev_io_start(nfsd.loop, &conn->rd);
		conn->read_paused = 0;
	} else if (!want && !conn->read_paused) {
		ev_io_stop(nfsd.loop, &conn->rd);
		ev_idle_stop(nfsd.loop, &conn->resume);
		conn->read_paused = 1;
	}
}

struct conn_out *conn_out_new(size_t len)
{
	struct conn_out *o = xmalloc(sizeof(*o) + len);
	list_init(&o->link);
	o->len = len;
	o->off = 0;
	return o;
}

/* Write as much of the queue as the socket takes.  Returns 0 or -errno. */
static int conn_flush(struct nfsd_conn *conn)
{
	while (!list_empty(&conn->out)) {
		struct iovec iov[64];
		int n = 0;
		struct list_node *pos;

		for (pos = conn->out.next; pos != &conn->out && n < 64; pos = pos->next) {
			struct conn_out *o = list_entry(pos, struct conn_out, link);
			iov[n].iov_base = o->data + o->off;
			iov[n].iov_len = o->len - o->off;
			n++;
		}
		ssize_t w = writev(conn->fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		conn->out_bytes -= (size_t)w;
		conn->last_active = ev_now(nfsd.loop);
		total_add(-w);
		while (w > 0) {
			struct conn_out *o = list_first(&conn->out, struct conn_out, link);
			size_t left = o->len - o->off;
			if ((size_t)w < left) {
				o->off += (size_t)w;
				break;
			}
			w -= (ssize_t)left;
			list_del(&o->link);
			free(o);
		}
	}
	return 0;
}

static void conn_after_write(struct nfsd_conn *conn)
{
	if (list_empty(&conn->out))
		ev_io_stop(nfsd.loop, &conn->wr);
	else if (!ev_is_active(&conn->wr))
		ev_io_start(nfsd.loop, &conn->wr);
	conn_update_read(conn);
}

void conn_send(struct nfsd_conn *conn, struct conn_out *out)
{
	if (conn->dead) {
		free(out);
		return;
	}
	int was_empty = list_empty(&conn->out);
	list_add_tail(&conn->out, &out->link);
	conn->out_bytes += out->len;
	total_add((ssize_t)out->len);
	if (!was_empty)
		return;   /* the write watcher is already waiting */
	int rc = conn_flush(conn);
	if (rc < 0) {
		conn_close(conn, strerror(-rc));
		return;
	}
	conn_after_write(conn);
}

/* Read `len` bytes of `fd` at `offset` into `buf`.  0, or -EIO when the
 * file ends first. */
static int read_file(int fd, uint8_t *buf, size_t len, uint64_t offset)
{
	while (len > 0) {
		ssize_t n = pread(fd, buf, len, (off_t)offset);
		stats.backing_read_calls++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
		offset += (uint64_t)n;
	}
	return 0;
}

/* Queue bytes [from, len) of `head` (NULL: none), the file's [offset,
 * offset + len) and `pad` zero bytes as one copied buffer. */
static int queue_copy(struct nfsd_conn *conn, const struct conn_out *head, size_t from, int fd,
		      uint64_t offset, size_t len, size_t pad)
{
	size_t hlen = head ? head->len - from : 0;
	struct conn_out *o = conn_out_new(hlen + len + pad);

	if (hlen)
		memcpy(o->data, head->data + from, hlen);
	if (read_file(fd, o->data + hlen, len, offset) != 0) {
		free(o);
		return -EIO;
	}
	memset(o->data + hlen + len, 0, pad);
	conn_send(conn, o);
	return 0;
}

/* send() all of `buf` that the socket takes now: bytes sent, or -errno. */
static ssize_t send_now(struct nfsd_conn *conn, const uint8_t *buf, size_t len, int flags)
{
	size_t done = 0;

	while (done < len) {
		ssize_t w = send(conn->fd, buf + done, len - done, flags | MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/* sendfile() all of [offset, offset + len) that the socket takes now:
 * bytes sent, -EIO when the file ends first, or -errno. */
static ssize_t sendfile_now(struct nfsd_conn *conn, int fd, uint64_t offset, size_t len)
{
	off_t pos = (off_t)offset;
	size_t done = 0;

	while (done < len) {
		ssize_t w = sendfile(conn->fd, fd, &pos, len - done);
		stats.backing_sendfile_calls++;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return -errno;
		}
		if (w == 0)
			return -EIO;   /* the file is shorter than promised */
		stats.backing_sendfile_bytes += (uint64_t)w;
		done += (size_t)w;
	}
	return (ssize_t)done;
}

/*
 * The pipe replies go through when they fit in it: the file's pages are
 * spliced in (references, no copy), then out to the socket in one call —
 * sendfile() goes 64 KiB at a time, and on a loaded machine a reader on
 * the same CPU is woken, and runs, after each.  What the socket does not
 * take is read back out of the pipe.  Shared: the loop is single-threaded
 * and leaves it empty.
 */
static int splice_pipe[2] = { -1, -1 };
static size_t splice_pipe_bytes;      /* its capacity; 0: not made (yet) */
static int splice_pipe_failed;

static int splice_pipe_ready(size_t len)
{
	if (!splice_pipe_bytes && !splice_pipe_failed) {
		if (pipe2(splice_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
			splice_pipe_failed = 1;
			return 0;
		}
		int got = fcntl(splice_pipe[1], F_SETPIPE_SZ, (int)SPLICE_PIPE_BYTES);
		if (got < 0)
			got = fcntl(splice_pipe[1], F_GETPIPE_SZ);
		if (got <= 0) {
			close(splice_pipe[0]);
			close(splice_pipe[1]);
			splice_pipe_failed = 1;
			return 0;
		}
		splice_pipe_bytes = (size_t)got;
	}
	return splice_pipe_bytes >= len;
}

static void splice_pipe_drop(void)
{
	close(splice_pipe[0]);
	close(splice_pipe[1]);
	splice_pipe_bytes = 0;   /* made again for the next reply */
}

/* Splice [offset, offset + len) of `fd` into the pipe (as much as it
 * holds), then as much as the socket takes out to it: bytes sent, those
 * spliced in but not sent (*left bytes) staying in the pipe for
 * splice_pipe_read(); -EIO when the file ends first, or -errno (the pipe
 * then empty). */
static ssize_t splice_now(struct nfsd_conn *conn, int fd, uint64_t offset, size_t len,
			  size_t *left)
{
	loff_t pos = (loff_t)offset;
	size_t in = 0, out = 0;
	ssize_t rc = 0;

	while (in < len) {
		ssize_t n = splice(fd, &pos, splice_pipe[1], NULL, len - in, SPLICE_F_MOVE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && in > 0)
			break;   /* the pipe is full: the caller reads the rest from fd */
		if (n <= 0) {
			rc = n == 0 ? -EIO : -errno;
			break;
		}
		in += (size_t)n;
	}
	while (rc == 0 && out < in) {
		ssize_t w = splice(splice_pipe[0], NULL, conn->fd, NULL, in - out,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		stats.backing_sendfile_calls++;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				rc = -errno;
			break;
		}
		stats.backing_sendfile_bytes += (uint64_t)w;
		out += (size_t)w;
	}
	*left = in - out;
	if (rc < 0 && *left) {
		splice_pipe_drop();   /* bytes nobody will send: never reused */
		*left = 0;
	}
	return rc < 0 ? rc : (ssize_t)out;
}

/* Read the `n` bytes left in the pipe into buf (a copy of the references
 * spliced in: the bytes as they were then).  0, or -EIO. */
static int splice_pipe_read(uint8_t *buf, size_t n)
{
	while (n > 0) {
		ssize_t r = read(splice_pipe[0], buf, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			splice_pipe_drop();
			return -EIO;
		}
		buf += r;
		n -= (size_t)r;
	}
	return 0;
}

int conn_send_file(struct nfsd_conn *conn, struct conn_out *head, int fd, uint64_t offset,
		   size_t len, size_t pad)
{
	static const uint8_t zeros[4];
	ssize_t hsent = 0, fsent = 0;
	int rc = 0;

	assert(pad < sizeof(zeros));
	if (conn->dead)
		goto out;
	if (!list_empty(&conn->out)) {
		/* its turn comes later: the bytes go in the queue now */
		rc = queue_copy(conn, head, 0, fd, offset, len, pad);
		goto out;
	}
	hsent = send_now(conn, head->data, head->len, len ? MSG_MORE : 0);
	/* the pipe holds pages: the range's, from the one `offset` is in */
	size_t span = (size_t)(offset % PIPE_PAGE_BYTES) + len;
	if (hsent == (ssize_t)head->len && len && splice_pipe_ready(span)) {
		size_t left = 0;
		fsent = splice_now(conn, fd, offset, len, &left);
		if (fsent >= 0 && (size_t)fsent < len) {
			/* the socket is full: the rest waits in the queue, copied
			 * (what the pipe holds, then what it could not) */
			size_t rest = len - (size_t)fsent;
			struct conn_out *o = conn_out_new(rest + pad);
			if (splice_pipe_read(o->data, left) != 0 ||
			    read_file(fd, o->data + left, rest - left,
				      offset + (uint64_t)fsent + left) != 0) {
				free(o);
				fsent = -EIO;
			} else {
				memset(o->data + rest, 0, pad);
				conn->last_active = ev_now(nfsd.loop);
				conn_send(conn, o);
				goto out;
			}
		}
	} else if (hsent == (ssize_t)head->len && len) {
		fsent = sendfile_now(conn, fd, offset, len);
	}
	if (hsent < 0 || fsent < 0) {
		rc = fsent == -EIO ? -EIO : 0;
		conn_close(conn, strerror(-(hsent < 0 ? (int)hsent : (int)fsent)));
		goto out;
	}
	if (hsent || fsent)
		conn->last_active = ev_now(nfsd.loop);
	if ((size_t)hsent < head->len || (size_t)fsent < len) {
		/* the socket is full: the rest waits in the queue, copied */
		rc = queue_copy(conn, head, (size_t)hsent, fd, offset + (uint64_t)fsent,
				len - (size_t)fsent, pad);
	} else if (pad) {
		ssize_t psent = send_now(conn, zeros, pad, 0);
		if (psent < 0) {
			conn_close(conn, strerror(-(int)psent));
		} else if ((size_t)psent < pad) {
			struct conn_out *o = conn_out_new(pad - (size_t)psent);
			memset(o->data, 0, o->len);
			conn_send(conn, o);
		}
	}
	if (rc == -EIO)
		conn_close(conn, "backing file shorter than a reply's promised length");
out:
	free(head);
	return rc;
}

void conn_charge(struct nfsd_conn *conn, size_t bytes)
{
	conn->call_bytes += bytes;
	total_add((ssize_t)bytes);
}

void conn_call_done(struct nfsd_conn *conn, size_t charged_bytes)
{
	conn->ncalls--;
	conn->call_bytes -= charged_bytes;
	total_add(-(ssize_t)charged_bytes);
	conn_update_read(conn);
}

/* Around the body of each of the connection's own watcher callbacks: a
 * conn_close() inside only marks it dead, and the outermost leave frees it. */
static void conn_callback_enter(struct nfsd_conn *conn)
{
	conn->in_callback++;
}

static void conn_callback_leave(struct nfsd_conn *conn)
{
	if (--conn->in_callback == 0 && conn->dead)
		conn_free(conn);
}

static void conn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct nfsd_conn *conn = w->data;

	(void)loop;
	(void)revents;
	conn_callback_enter(conn);
	int rc = conn_flush(conn);
	if (rc < 0)
		conn_close(conn, strerror(-rc));
	else
		conn_after_write(conn);
	conn_callback_leave(conn);
}

/* Account for the record `conn` is assembling: its bytes in the total and
 * its place among the partial records (a record that began later goes
 * behind the others). */
static void partial_update(struct nfsd_conn *conn)
{
	size_t now = rpc_record_pending(&conn->rec) ? conn->rec.len : 0;

	partial_total = partial_total - conn->partial_bytes + now;
	conn->partial_bytes = now;
	stats.conn_partial_bytes = partial_total;
	if (rpc_record_pending(&conn->rec)) {
		if (!conn->partial_listed) {
			list_add_tail(&partial_conns, &conn->partial_link);
			conn->partial_listed = 1;
		}
	} else if (conn->partial_listed) {
		list_del(&conn->partial_link);
		conn->partial_listed = 0;
	}
}

/* Above server.partial_max (never below server.max_record: one whole
 * record always fits), close the connections whose partial records began
 * first until the rest fit: a client that sends half a record and waits
 * holds memory every other client needs. */
static void partial_enforce(void)
{
	size_t budget = nfsd.cfg.server_partial_max;

	if (budget < nfsd.cfg.server_max_record)
		budget = nfsd.cfg.server_max_record;
	while (partial_total > budget && !list_empty(&partial_conns)) {
		struct nfsd_conn *old = list_entry(partial_conns.next, struct nfsd_conn, partial_link);
		stats.conn_partial_closed++;
		log_limited(LOG_LEVEL_WARNING,
			    "conn %s: closing: its partial record (%zu bytes) is the oldest and partial "
			    "records hold %zu bytes, above server.partial_max",
			    old->peer_str, old->partial_bytes, partial_total);
		conn_close(old, "partial records above server.partial_max");
	}
}

/* Feed bytes to the reassembler and dispatch each completed record. */
static int conn_consume(struct nfsd_conn *conn, const uint8_t *data, size_t len)
{
	while (len > 0 && !conn->dead) {
		size_t used = 0;
		enum rpc_record_status st = rpc_record_feed(&conn->rec, data, len, &used);

		data += used;
		len -= used;
		if (st == RPC_RECORD_TOO_BIG) {
			stats.rpc_oversized++;
			log_limited(LOG_LEVEL_WARNING,
				    "conn %s: record larger than server.max_record (%zu bytes): closing",
				    conn->peer_str, conn->rec.max_record);
			return -EMSGSIZE;
		}
		if (st == RPC_RECORD_COMPLETE) {
			size_t rlen;
			uint8_t *rec = rpc_record_take(&conn->rec, &rlen);
			partial_update(conn);   /* now charged as a call */
			conn->ncalls++;
			conn_charge(conn, rlen);
			call_dispatch(conn, rec, rlen);
			if (len > 0 && !conn->dead && !conn_may_read(conn)) {
				/* keep the rest until the calls in flight drain */
				conn->stash = xmalloc(len);
				memcpy(conn->stash, data, len);
				conn->stash_len = len;
				conn_update_read(conn);
				return 0;
			}
		}
	}
	if (!conn->dead) {
		partial_update(conn);
		partial_enforce();
	}
	return 0;
}

void conn_limits_changed(void)
{
	partial_enforce();
}

static void conn_resume_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct nfsd_conn *conn = w->data;
	uint8_t *stash = conn->stash;
	size_t len = conn->stash_len;

	(void)revents;
	ev_idle_stop(loop, w);
	conn->stash = NULL;
	conn_callback_enter(conn);
	if (conn_consume(conn, stash, len) < 0)
		conn_close(conn, "oversized record");
	free(stash);
	if (!conn->dead && !conn->stash && !conn->read_paused)
		ev_io_start(loop, &conn->rd);
	conn_callback_leave(conn);
}

static void conn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct nfsd_conn *conn = w->data;

	(void)loop;
	(void)revents;
	conn_callback_enter(conn);
	for (int i = 0; i < READS_PER_EVENT && !conn->dead && !conn->read_paused && !conn->stash; i++) {
		ssize_t n = read(conn->fd, read_buf, READ_CHUNK);
		if (n == 0) {
			conn_close(conn, "closed by client");
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				conn_close(conn, strerror(errno));
			break;
		}
		conn->last_active = ev_now(nfsd.loop);
		if (conn_consume(conn, read_buf, (size_t)n) < 0) {
			conn_close(conn, "oversized record");
			break;
		}
		if (!conn->dead)
			conn_update_read(conn);   /* too many calls in flight now? */
		if (n < READ_CHUNK)
			break;
	}
	conn_callback_leave(conn);
}

static void conn_free(struct nfsd_conn *conn)
{
	if (conn->magic != CONN_MAGIC)
		abort();
	conn->magic = 0;
	rpc_record_free(&conn->rec);
	free(conn->stash);
	free(conn);
}

void conn_close(struct nfsd_conn *conn, const char *why)
{
	struct list_node *pos, *tmp;

	if (conn->dead)
		return;
	log_debug("conn %s: closing: %s", conn->peer_str, why);
	conn->dead = 1;
	ev_io_stop(nfsd.loop, &conn->rd);
	ev_io_stop(nfsd.loop, &conn->wr);
	ev_idle_stop(nfsd.loop, &conn->resume);
	close(conn->fd);
	conn->fd = -1;
	list_for_each_safe(pos, tmp, &conn->out) {
		list_del(pos);
		free(list_entry(pos, struct conn_out, link));
	}
	list_for_each_safe(pos, tmp, &conn->calls)
		call_detach_conn(list_entry(pos, struct nfsd_call, conn_link));
	conn->ncalls = 0;
	total_add(-(ssize_t)(conn->out_bytes + conn->call_bytes));
	conn->out_bytes = 0;
	conn->call_bytes = 0;
	rpc_record_free(&conn->rec);
	partial_update(conn);
	list_del(&conn->link);
	n_conns--;
	stats.conn_open = n_conns;
	if (conn->in_callback == 0)
		conn_free(conn);
}

unsigned conn_count(void)
{
	return n_conns;
}

void conn_close_all(void)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &all_conns)
		conn_close(list_entry(pos, struct nfsd_conn, link), "shutting down");
}

/* server.allow and server.secure; logs refusals at most once a second. */
static int conn_permitted(const struct sockaddr *peer, const char *peer_str)
{
	const char *why = NULL;

	if (!netaddr_acl_match(&nfsd.cfg.allow_acl, peer))
		why = "not in server.allow";
	else if (nfsd.cfg.server_secure && netaddr_port(peer) >= 1024)
		why = "unreserved source port and server.secure = yes";
	if (!why)
		return 1;
	stats.conn_refused++;
	log_limited(LOG_LEVEL_WARNING, "listener: refused %s: %s", peer_str, why);
	return 0;
}

static void listener_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct listener *l = w->data;

	(void)revents;
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept4(l->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		char peer_str[64];

		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
			    errno == ECONNABORTED)
				return;
			/* EMFILE, ENFILE, ENOBUFS...: the pending connection stays
			 * queued; stop polling the listener for a while rather than
			 * spin on it */
			stats.conn_accept_errors++;
			if (ev_now(loop) - l->last_error_log >= 10.0) {
				l->last_error_log = ev_now(loop);
				log_warning("listener: accept: %s (%u connections open; pausing accept)",
					    strerror(errno), n_conns);
			}
			ev_io_stop(loop, &l->io);
			ev_timer_set(&l->backoff, 0.1, 0.);
			ev_timer_start(loop, &l->backoff);
			return;
		}
		netaddr_format((struct sockaddr *)&peer, peer_str, sizeof(peer_str));
		if (!conn_permitted((struct sockaddr *)&peer, peer_str)) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

		struct nfsd_conn *conn = xcalloc(1, sizeof(*conn));
		conn->magic = CONN_MAGIC;
		conn->fd = fd;
		conn->peer = peer;
		conn->peer_len = plen;
		conn->last_active = ev_now(loop);
		snprintf(conn->peer_str, sizeof(conn->peer_str), "%s", peer_str);
		rpc_record_init(&conn->rec, nfsd.cfg.server_max_record);
		list_init(&conn->out);
		list_init(&conn->calls);
		ev_io_init(&conn->rd, conn_read_cb, fd, EV_READ);
		ev_io_init(&conn->wr, conn_write_cb, fd, EV_WRITE);
		ev_idle_init(&conn->resume, conn_resume_cb);
		conn->rd.data = conn->wr.data = conn->resume.data = conn;
		ev_io_start(loop, &conn->rd);
		list_add_tail(&all_conns, &conn->link);
		n_conns++;
		stats.conn_open = n_conns;
		stats.conn_accepted++;
		log_debug("conn %s: accepted", conn->peer_str);
	}
}

static void listener_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct listener *l = w->data;

	(void)revents;
	if (l->fd >= 0)
		ev_io_start(loop, &l->io);
}

/* Close connections with nothing in flight that have been silent too long. */
static void idle_sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct list_node *pos, *tmp;

	(void)w;
	(void)revents;
	list_for_each_safe(pos, tmp, &all_conns) {
		struct nfsd_conn *conn = list_entry(pos, struct nfsd_conn, link);
		if (conn->ncalls == 0 && list_empty(&conn->out) && !conn->stash &&
		    ev_now(loop) - conn->last_active > CONN_IDLE_TIMEOUT_S) {
			stats.conn_idle_closed++;
			conn_close(conn, "idle");
		}
	}
}

struct listener *listener_new(struct ev_loop *loop, const struct sockaddr *addr, socklen_t len)
{
	struct listener *l = xcalloc(1, sizeof(*l));
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int one = 1;

	if (!read_buf)
		read_buf = xmalloc(READ_CHUNK);
	l->loop = loop;
	l->fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0) {
		log_error("listener: socket: %s", strerror(errno));
		free(l);
		return NULL;
	}
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l->fd, addr, len) != 0 || listen(l->fd, 128) != 0 ||
	    getsockname(l->fd, (struct sockaddr *)&bound, &blen) != 0) {
		char a[80];
		log_error("listener: cannot listen on %s: %s", netaddr_format(addr, a, sizeof(a)),
			  strerror(errno));
		close(l->fd);
		free(l);
		return NULL;
	}
	l->bound = bound;
	l->bound_len = blen;
	netaddr_format((struct sockaddr *)&bound, l->address, sizeof(l->address));
	l->port = netaddr_port((struct sockaddr *)&bound);
	ev_io_init(&l->io, listener_cb, l->fd, EV_READ);
	l->io.data = l;
	ev_io_start(loop, &l->io);
	ev_timer_init(&l->backoff, listener_backoff_cb, 0.1, 0.);
	l->backoff.data = l;
	ev_timer_init(&idle_sweep, idle_sweep_cb, 30., 30.);
	ev_timer_start(loop, &idle_sweep);
	ev_unref(loop);   /* the sweep alone does not keep the loop running */
	return l;
}

void listener_stop(struct listener *l)
{
	if (l && l->fd >= 0) {
		ev_io_stop(l->loop, &l->io);
		ev_timer_stop(l->loop, &l->backoff);
		if (ev_is_active(&idle_sweep)) {
			ev_ref(l->loop);
			ev_timer_stop(l->loop, &idle_sweep);
		}
		close(l->fd);
		l->fd = -1;
	}
}

void listener_free(struct listener *l)
{
	if (!l)
		return;
	listener_stop(l);
	free(l);
}

const char *listener_address(const struct listener *l)
{
	return l->address;
}

unsigned listener_port(const struct listener *l)
{
	return l->port;
}

const struct sockaddr *listener_sockaddr(const struct listener *l)
{
	return (const struct sockaddr *)&l->bound;
}

socklen_t listener_sockaddr_len(const struct listener *l)
{
	return l->bound_len;
}
