/*
 * conn.h — the TCP listener and client connections: non-blocking reads into
 * the record reassembler, a per-connection output queue written with
 * writev, and backpressure (a connection whose output is backed up, or that
 * has too many calls in flight, is not read until it drains).
 *
 * A connection may close while its calls are upstream: it detaches them
 * (their replies are then discarded) and is freed once no callback of its
 * own is running.
 */
#ifndef NFSCACHED_CONN_H
#define NFSCACHED_CONN_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/list.h"
#include "proto/rpc_record.h"

#define CONN_MAGIC 0x6e636f6eu        /* "ncon" */
#define CONN_MAX_OUT_BYTES (8u << 20)  /* stop reading above this much queued output */
#define CONN_MAX_CALLS 256             /* stop reading with this many calls in flight */
#define CONN_MAX_CALL_BYTES (32u << 20) /* ... or with their records and expected replies this big */
#define CONN_MAX_TOTAL_BYTES (512u << 20) /* stop reading every connection above this, all together */
#define CONN_IDLE_TIMEOUT_S 360.0      /* close connections idle this long (as knfsd) */

struct conn_out {
	struct list_node link;
	size_t len;          /* bytes in data */
	size_t off;          /* bytes already written */
	uint8_t data[];
};

struct nfsd_conn {
	uint32_t magic;
	int fd;
	ev_io rd, wr;                 /* read and write readiness */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	char peer_str[64];            /* "ADDR:PORT" for logs */
	struct rpc_record rec;
	struct list_node out;         /* struct conn_out, oldest first */
	size_t out_bytes;             /* queued, not yet written */
	struct list_node calls;       /* struct nfsd_call in flight */
	unsigned ncalls;
	size_t call_bytes;            /* charged by the calls in flight: records and expected replies */
	ev_tstamp last_active;        /* loop time of the last byte read or written */
	int dead;                     /* closed; free when in_callback drops to 0 */
	int in_callback;              /* nesting depth of our own watcher callbacks */
	int read_paused;
	uint8_t *stash;               /* bytes read but not yet fed: reading paused mid-buffer */
	size_t stash_len;
	ev_idle resume;               /* feeds the stash once reading may go on */
	struct list_node link;        /* in the list of open connections */
	size_t partial_bytes;         /* received of the record not yet complete (rec.len), counted in the total */
	int partial_listed;           /* in the list of partial records, at partial_link */
	struct list_node partial_link;
};

struct listener;

/* Open the listening socket on cfg->listen_addr.  Returns NULL after logging
 * (bind/listen errors); the bound port is then in listener_port(). */
struct listener *listener_new(struct ev_loop *loop, const struct sockaddr *addr, socklen_t len);
void listener_free(struct listener *l);
/* Stop accepting (graceful shutdown); existing connections go on. */
void listener_stop(struct listener *l);
/* "ADDR:PORT" actually bound. */
const char *listener_address(const struct listener *l);
unsigned listener_port(const struct listener *l);
/* The bound address itself. */
const struct sockaddr *listener_sockaddr(const struct listener *l);
socklen_t listener_sockaddr_len(const struct listener *l);

/* Allocate an output buffer of `len` bytes for conn_send(). */
struct conn_out *conn_out_new(size_t len);

/* Queue `out` (ownership passes) on `conn` and write what the socket takes.
 * On a dead connection the buffer is freed.  A write error closes the
 * connection. */
void conn_send(struct nfsd_conn *conn, struct conn_out *out);

/*
 * Send the record made of `head` (ownership passes: record mark and the
 * bytes before the data), then `len` bytes of the file `fd` from `offset`,
 * then `pad` zero bytes (XDR padding, 0..3), in its turn in the output
 * queue.  When the queue is empty, `head` goes out with MSG_MORE and the
 * file's bytes from the page cache without a copy through user space
 * (backing.sendfile.*): spliced into a pipe and from it to the socket in
 * one call, or with sendfile(2) when the pipe cannot hold them; what the
 * socket does not take now — everything, when replies are queued before
 * it — is read (from the pipe, or from `fd`) into the queue before
 * return, so `fd` need not outlive the call.  The
 * caller makes sure the bytes are in the page cache (the read must not wait
 * for the disk).  Returns 0; -EIO when `fd` ends before offset + len (the
 * record's length was promised: the connection is closed); on a dead
 * connection nothing is sent and 0 returned.
 */
int conn_send_file(struct nfsd_conn *conn, struct conn_out *head, int fd, uint64_t offset,
		   size_t len, size_t pad);

/* Charge `bytes` more (an expected reply) to the calls in flight of `conn`. */
void conn_charge(struct nfsd_conn *conn, size_t bytes);

/* A call of this connection that was charged `charged_bytes` in all (its
 * record and conn_charge()s) finished: may resume reading. */
void conn_call_done(struct nfsd_conn *conn, size_t charged_bytes);

/* Close: stop watchers, close the socket, detach calls.  Freed now or when
 * the running callback returns. */
void conn_close(struct nfsd_conn *conn, const char *why);

/* The configuration was reloaded: apply a lowered server.partial_max to
 * the partial records held now (closing connections as conn_consume()
 * would), not only once more bytes arrive. */
void conn_limits_changed(void);

/* Number of open client connections. */
unsigned conn_count(void);

/* Close every client connection (shutdown). */
void conn_close_all(void);

#endif
