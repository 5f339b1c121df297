/*
 * upstream.c — the NFSv3 connections to the upstream server: upstream.connections
 * libnfs nfs_contexts (each mounted on its own, like the Linux client's
 * nconnect) driven by the daemon's libev loop, one queue of calls waiting
 * for a connection, reconnection with backoff per connection, per-call
 * deadlines, and the XIDs of forwarded calls.  MOUNT calls are handed to
 * mountfwd.c.  Owns every forwarded call from upstream_call() until its
 * `done` callback.
 *
 * A call goes to the connection that is up with the fewest calls in flight
 * (ties go round the connections).  A connection that fails gives its calls
 * back to the queue: they go to another connection that is up, or wait for
 * one.  Every call gets one XID from a daemon-wide counter when it is first
 * sent and keeps it when it is sent again: XIDs are unique across
 * connections, so an upstream duplicate request cache that keys on the XID
 * alone neither confuses two calls nor misses a retransmission.
 *
 * libnfs's own reconnection is off: libnfs 4.0 keeps its receive state (a
 * reply record read in part, or its record marker) across it, so the first
 * bytes of the new socket complete the old record (a reply made of two, which
 * may match a call sent again) and every record after it is out of step (a
 * record marker read from reply data fails each new socket before it reads a
 * byte, for ever).  A connection that fails is torn down and mounted again
 * on a new context.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/macros.h"
#include "daemon/mountfwd.h"
#include "daemon/rpc_poll.h"
#include "common/stats.h"
#include "daemon/upstream.h"
#include "common/list.h"
#include "common/xalloc.h"

#define TICK_S 0.1               /* libnfs timeout scan and deadline checks */
#define BACKOFF_MIN_S 0.1
#define BACKOFF_MAX_S 2.0
#define MOUNT_XIDS 64            /* XIDs set aside for the calls of one nfs_mount_async */

enum up_state { UP_DOWN, UP_CONNECTING, UP_UP };

/* One TCP connection (one mounted nfs_context).  Written by upstream.c only. */
struct up_conn {
	struct upstream *up;
	unsigned index;                /* 0 .. upstream.connections - 1 */
	struct nfs_context *nfs;       /* NULL while down */
	enum up_state state;
	int broken;                    /* tear the context down after nfs_service */
	int ever_up;
	int queued;                    /* calls handed to libnfs since the last io update */
	struct rpc_poll poll;          /* follows nfs's rpc_context while it exists */
	ev_timer retry;
	double backoff_s;
	unsigned in_flight;            /* struct up_req sent on it, not answered yet */
	uint64_t calls;                /* calls sent on it since start (resends included) */
	uint64_t reconnects;           /* its share of upstream.reconnects */
	uint64_t errors;               /* its share of upstream.errors */
	char last_error[256];
};

struct up_req {
	struct list_node link;         /* up->waiting or up->sent */
	struct upstream *up;
	struct upstream_call call;
	struct up_conn *conn;          /* connection it was sent on, or NULL while waiting */
	struct nfs_context *sent_on;   /* context that holds its PDU, or NULL */
	double sent_at;                /* CLOCK_MONOTONIC seconds it was last handed to libnfs */
	uint32_t xid;                  /* its XID on every send, once has_xid */
	int has_xid;
	unsigned queue_failures;       /* times libnfs refused to queue it */
};

struct upstream {
	struct ev_loop *loop;
	const struct nfsd_conf *cfg;
	char *server;                  /* from upstream.url */
	char *export;
	uint32_t wtmax;                /* the upstream's FSINFO wtmax, bytes (0 = not known yet) */
	uint32_t rtmax;                /* its FSINFO rtmax, bytes (0 = not known yet) */
	double srtt;                   /* smoothed round trip, seconds (0 = none measured) */
	int mount_port;                /* 0: ask the portmapper */
	unsigned n_conns;              /* upstream.connections, read once */
	struct up_conn *conns;         /* [n_conns] */
	unsigned next_conn;            /* where the search for the least busy one starts */
	uint32_t next_xid;             /* the XID of the next call sent for the first time */
	ev_timer tick;
	struct list_node waiting;      /* struct up_req not yet sent */
	struct list_node sent;         /* struct up_req with a PDU in libnfs */
	struct list_node unsendable;   /* struct up_req libnfs cannot queue: failed at the next tick */
	bool closing;                  /* upstream_free() runs: calls made by the callbacks
					* it runs wait in `waiting`, and fail there too */
};

static void up_serviced(struct rpc_poll *p, int rc);
static void up_retry_cb(struct ev_loop *loop, ev_timer *w, int revents);

static int url_param(const char *url, const char *name)
{
	const char *q = strchr(url, '?');
	size_t n = strlen(name);

	while (q) {
		q++;
		if (strncmp(q, name, n) == 0 && q[n] == '=')
			return atoi(q + n + 1);
		q = strchr(q, '&');
	}
	return 0;
}

/* A random first XID, so that a restarted daemon does not reuse the XIDs
 * of its previous run while the upstream still remembers them. */
static uint32_t up_first_xid(void)
{
	uint32_t xid;

	if (getrandom(&xid, sizeof(xid), GRND_NONBLOCK) == (ssize_t)sizeof(xid))
		return xid;
	return (uint32_t)time(NULL) ^ ((uint32_t)getpid() << 16);
}

struct upstream *upstream_new(struct ev_loop *loop, const struct nfsd_conf *cfg, FILE *err)
{
	struct nfs_context *nfs = nfs_init_context();
	struct nfs_url *url;

	if (!nfs)
		abort();
	url = nfs_parse_url_dir(nfs, cfg->upstream_url);
	if (!url || !url->server || !url->path) {
		fprintf(err, "%s: upstream.url: \"%s\": %s\n", cfg->source, cfg->upstream_url,
			nfs_get_error(nfs));
		if (url)
			nfs_destroy_url(url);
		nfs_destroy_context(nfs);
		return NULL;
	}
	struct upstream *up = xcalloc(1, sizeof(*up));
	up->loop = loop;
	up->cfg = cfg;
	up->server = xstrdup(url->server);
	up->export = xstrdup(url->path);
	up->mount_port = url_param(cfg->upstream_url, "mountport");
	nfs_destroy_url(url);
	nfs_destroy_context(nfs);
	up->n_conns = cfg->upstream_connections >= 1 ? (unsigned)cfg->upstream_connections : 1;
	up->conns = xcalloc(up->n_conns, sizeof(*up->conns));
	for (unsigned i = 0; i < up->n_conns; i++) {
		struct up_conn *c = &up->conns[i];
		c->up = up;
		c->index = i;
		c->backoff_s = BACKOFF_MIN_S;
		rpc_poll_init(&c->poll, loop, up_serviced);
		ev_init(&c->retry, NULL);
	}
	up->next_xid = up_first_xid();
	list_init(&up->waiting);
	list_init(&up->unsendable);
	list_init(&up->sent);
	ev_init(&up->tick, NULL);
	return up;
}

static const char *const state_names[] = { "down", "connecting", "up" };

const char *upstream_state(const struct upstream *up)
{
	enum up_state best = UP_DOWN;

	for (unsigned i = 0; i < up->n_conns; i++)
		if (up->conns[i].state > best)
			best = up->conns[i].state;
	return state_names[best];
}

unsigned upstream_connections(const struct upstream *up)
{
	return up->n_conns;
}

int upstream_conn_info(const struct upstream *up, unsigned index, struct upstream_conn_info *info)
{
	if (index >= up->n_conns)
		return -ENOENT;
	const struct up_conn *c = &up->conns[index];
	info->state = state_names[c->state];
	info->calls = c->calls;
	info->in_flight = c->in_flight;
	info->reconnects = c->reconnects;
	info->errors = c->errors;
	return 0;
}

const char *upstream_server(const struct upstream *up)
{
	return up->server;
}

const char *upstream_export(const struct upstream *up)
{
	return up->export;
}

struct AUTH *upstream_call_auth(struct upstream_call *call)
{
	struct rpc_cred *cred = &call->cred;

	return libnfs_authunix_create(cred->machinename, cred->uid, cred->gid, cred->gids_len,
				      cred->gids);
}

/* Take `r` off its list and off its connection's calls in flight. */
static void req_detach(struct up_req *r)
{
	list_del(&r->link);
	if (r->conn)
		r->conn->in_flight--;
	r->conn = NULL;
	r->sent_on = NULL;
}

static void req_complete(struct up_req *r, enum upstream_status st, void *res)
{
	req_detach(r);
	r->call.done(r->call.priv, st, res);
	free(r);
}

/* Back to the queue, to be sent again (with its XID) on a connection that is up. */
static void req_requeue(struct up_req *r)
{
	req_detach(r);
	list_add_tail(&r->up->waiting, &r->link);
}

static void up_count_error(struct up_conn *c)
{
	stats.upstream_errors++;
	c->errors++;
}

static void up_count_reconnect(struct up_conn *c)
{
	stats.upstream_reconnects++;
	c->reconnects++;
}

/* Keep the libev watcher in step with what libnfs wants. */
static void up_io_update(struct up_conn *c)
{
	c->queued = 0;
	rpc_poll_update(&c->poll);
}

static void up_tick_update(struct upstream *up)
{
	int want = !list_empty(&up->waiting) || !list_empty(&up->sent) ||
		   !list_empty(&up->unsendable);

	if (want && !ev_is_active(&up->tick))
		ev_timer_again(up->loop, &up->tick);
	else if (!want && ev_is_active(&up->tick))
		ev_timer_stop(up->loop, &up->tick);
}

static void up_teardown(struct up_conn *c)
{
	struct upstream *up = c->up;
	struct nfs_context *nfs = c->nfs;
	struct list_node *pos, *tmp;

	c->broken = 0;
	if (!nfs)
		return;
	up_count_error(c);
	if (c->state == UP_UP)
		log_warning("upstream: %s:%s conn %u: connection failed: %s", up->server, up->export,
			    c->index, c->last_error);
	c->nfs = NULL;
	c->state = UP_DOWN;
	c->queued = 0;
	rpc_poll_stop(&c->poll);
	nfs_destroy_context(nfs);   /* its PDU callbacks requeue their calls */
	list_for_each_safe(pos, tmp, &up->sent) {
		struct up_req *r = list_entry(pos, struct up_req, link);
		if (r->sent_on == nfs)
			req_requeue(r);
	}
	ev_timer_set(&c->retry, c->backoff_s, 0.);
	ev_timer_start(up->loop, &c->retry);
	c->backoff_s = c->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : c->backoff_s * 2;
}

/* After an nfs_service() of `c`: tear down a failed context, follow fd changes. */
static void up_conn_after_service(struct up_conn *c)
{
	if (c->broken)
		up_teardown(c);
	else
		up_io_update(c);
}

int upstream_error_status(const char *msg)
{
	/* lib/pdu.c: the messages of replies, as opposed to transport failures */
	static const char *const replies[] = {
		"Server responded", "Message rejected", "Unknown rpc response",
	};

	if (!msg)
		return -1;
	if (strncmp(msg, "RPC Packet not accepted", 23) == 0)
		return UPSTREAM_DENIED;
	for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++)
		if (strncmp(msg, replies[i], strlen(replies[i])) == 0)
			return UPSTREAM_FAILED;
	return -1;
}

/* Seconds on CLOCK_MONOTONIC: round trips that a step of the wall clock
 * cannot make negative or huge. */
static double monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void up_rpc_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct up_req *r = priv;
	struct upstream *up = r->up;
	struct up_conn *c = r->conn;

	switch (status) {
	case RPC_STATUS_SUCCESS:
		{
			double rtt = monotonic_s() - r->sent_at;
			up->srtt = up->srtt == 0 ? rtt : up->srtt + (rtt - up->srtt) / 8;
			stats_rtt_observe(r->call.desc->proc, rtt);
		}
		/* every NFSv3 result but NULL's starts with its nfsstat3 */
		if (data && r->call.desc->prog == NFS3_PROGRAM && r->call.desc->proc != 0 &&
		    *(const uint32_t *)data == NFS3ERR_JUKEBOX_STATUS)
			stats.upstream_jukebox++;
		req_complete(r, UPSTREAM_OK, data);
		return;
	case RPC_STATUS_TIMEOUT:
		stats.upstream_timeouts++;
		log_limited(LOG_LEVEL_WARNING, "upstream: %s %s: no reply within %llu ms",
			    up->server, r->call.desc->name, (unsigned long long)up->cfg->upstream_timeout_ms);
		req_complete(r, UPSTREAM_TIMEOUT, NULL);
		return;
	case RPC_STATUS_ERROR:
		if (upstream_error_status(data) >= 0) {
			log_limited(LOG_LEVEL_WARNING, "upstream: %s %s: %s", up->server, r->call.desc->name,
				    (const char *)data);
			req_complete(r, (enum upstream_status)upstream_error_status(data), NULL);
			return;
		}
		/* the transport failed, not the call: send it again once reconnected */
		if (c->nfs == r->sent_on && !c->broken) {
			/* the context's own error says why the socket failed; the
			 * call's is libnfs's fixed "Failed to reconnect" text */
			const char *why = rpc_get_error(rpc);
			if (!why || !*why)
				why = data ? (const char *)data : "transport error";
			snprintf(c->last_error, sizeof(c->last_error), "%s", why);
			c->broken = 1;
		}
		break;
	case RPC_STATUS_CANCEL:
	default:
		break;   /* the context is going away: send it again on another */
	}
	req_requeue(r);
}

/* The connection that is up with the fewest calls in flight; ties go round
 * the connections.  NULL when none is up. */
static struct up_conn *up_pick_conn(struct upstream *up)
{
	struct up_conn *best = NULL;

	for (unsigned k = 0; k < up->n_conns; k++) {
		struct up_conn *c = &up->conns[(up->next_conn + k) % up->n_conns];
		if (c->state != UP_UP || c->broken)
			continue;
		if (!best || c->in_flight < best->in_flight)
			best = c;
	}
	if (best)
		up->next_conn = (best->index + 1) % up->n_conns;
	return best;
}

static void up_submit(struct up_conn *c, struct up_req *r)
{
	struct upstream *up = c->up;
	struct rpc_context *rpc = nfs_get_rpc_context(c->nfs);
	double left_ms = (r->call.deadline - ev_now(up->loop)) * 1000.0;

	if (left_ms < 1)
		left_ms = 1;
	if (!r->has_xid) {
		r->xid = up->next_xid++;
		r->has_xid = 1;
	}
	rpc_set_next_xid(rpc, r->xid);   /* lib/pdu.c rpc_allocate_pdu2(): pdu->xid = rpc->xid++ */
	rpc_set_auth(rpc, upstream_call_auth(&r->call));
	nfs_set_timeout(c->nfs, (int)left_ms);
	list_del(&r->link);
	if (r->call.desc->send(rpc, up_rpc_cb, r->call.args, r) != 0) {
		log_warning("upstream: %s:%s conn %u: %s: cannot queue: %s", up->server, up->export,
			    c->index, r->call.desc->name, rpc_get_error(rpc));
		if (++r->queue_failures >= 2) {
			/* refused on two connections: the call, not the
			 * connection, is at fault (libnfs encodes a call in a
			 * buffer of its own size); it fails, nothing reconnects */
			list_add_tail(&up->unsendable, &r->link);
			return;
		}
		list_add_tail(&up->waiting, &r->link);
		c->broken = 1;
		return;
	}
	r->conn = c;
	r->sent_on = c->nfs;
	r->sent_at = monotonic_s();
	list_add_tail(&up->sent, &r->link);
	c->in_flight++;
	c->calls++;
	c->queued = 1;
	stats.upstream_nfs3[r->call.desc->proc]++;
}

/* Send what waits on the connections that are up, then let libev watch
 * for what libnfs wants to write. */
static void up_submit_waiting(struct upstream *up)
{
	struct up_conn *c;

	while (!list_empty(&up->waiting) && (c = up_pick_conn(up)) != NULL)
		up_submit(c, list_first(&up->waiting, struct up_req, link));
	for (unsigned i = 0; i < up->n_conns; i++)
		if (up->conns[i].queued && up->conns[i].nfs)
			up_io_update(&up->conns[i]);   /* libnfs now wants POLLOUT */
}

static void up_serviced(struct rpc_poll *p, int rc)
{
	struct up_conn *c = container_of(p, struct up_conn, poll);

	if (rc < 0 && !c->broken) {
		const char *why = nfs_get_error(c->nfs);   /* libnfs 4.0 sets none for a close */
		snprintf(c->last_error, sizeof(c->last_error), "%s", why ? why : "closed by the server");
		c->broken = 1;
	}
	up_conn_after_service(c);
	up_submit_waiting(c->up);
	up_tick_update(c->up);
}

static void up_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct upstream *up = w->data;
	struct list_node *pos, *tmp;

	(void)revents;
	for (unsigned i = 0; i < up->n_conns; i++) {
		struct up_conn *c = &up->conns[i];
		if (c->nfs && nfs_service(c->nfs, 0) < 0 && !c->broken) {
			snprintf(c->last_error, sizeof(c->last_error), "%s", nfs_get_error(c->nfs));
			c->broken = 1;
		}
	}
	list_for_each_safe(pos, tmp, &up->unsendable) {
		struct up_req *r = list_entry(pos, struct up_req, link);
		stats.upstream_errors++;
		req_complete(r, UPSTREAM_FAILED, NULL);
	}
	/* calls still waiting for a connection when their time is up */
	list_for_each_safe(pos, tmp, &up->waiting) {
		struct up_req *r = list_entry(pos, struct up_req, link);
		if (r->call.deadline <= ev_now(loop)) {
			stats.upstream_timeouts++;
			req_complete(r, UPSTREAM_TIMEOUT, NULL);
		}
	}
	for (unsigned i = 0; i < up->n_conns; i++)
		up_conn_after_service(&up->conns[i]);
	up_submit_waiting(up);
	up_tick_update(up);
}

static void up_mount_cb(int status, struct nfs_context *nfs, void *data, void *priv)
{
	struct up_conn *c = priv;
	struct upstream *up = c->up;

	(void)nfs;
	if (!c->nfs)
		return;   /* cancelled by a teardown or upstream_free(): nothing to retry */
	if (status != 0) {
		const char *why = data ? (const char *)data : "unknown error";
		if (strcmp(c->last_error, why) != 0 || !c->ever_up)
			log_warning("upstream: %s:%s conn %u: mount failed: %s (retrying)", up->server,
				    up->export, c->index, why);
		snprintf(c->last_error, sizeof(c->last_error), "%s", why);
		c->broken = 1;
		return;
	}
	c->state = UP_UP;
	c->backoff_s = BACKOFF_MIN_S;
	if (up->wtmax == 0 && up->rtmax == 0) {
		/* the first mount that completes; every connection mounts one server */
		uint64_t wtmax = nfs_get_writemax(nfs);
		up->wtmax = wtmax > UINT32_MAX ? UINT32_MAX : (uint32_t)wtmax;
		uint64_t rtmax = nfs_get_readmax(nfs);
		up->rtmax = rtmax > UINT32_MAX ? UINT32_MAX : (uint32_t)rtmax;
	}
	rpc_set_autoreconnect(nfs_get_rpc_context(c->nfs), 0);   /* see the top of this file */
	if (c->ever_up) {
		up_count_reconnect(c);
		log_info("upstream: %s:%s conn %u: reconnected", up->server, up->export, c->index);
	} else {
		log_info("upstream: %s:%s conn %u: mounted", up->server, up->export, c->index);
	}
	c->ever_up = 1;
	c->last_error[0] = '\0';
	up_submit_waiting(up);
}

static void up_connect(struct up_conn *c)
{
	struct upstream *up = c->up;
	struct nfs_url *url;

	c->nfs = nfs_init_context();
	if (!c->nfs)
		abort();
	url = nfs_parse_url_dir(c->nfs, up->cfg->upstream_url);   /* applies ?nfsport= etc. */
	if (url)
		nfs_destroy_url(url);
	nfs_set_timeout(c->nfs, (int)up->cfg->upstream_timeout_ms);
	nfs_set_autoreconnect(c->nfs, 0);   /* what the mount sets on its NFS connection */
	/* the mount's own calls take XIDs no forwarded call will have */
	rpc_set_next_xid(nfs_get_rpc_context(c->nfs), up->next_xid);
	up->next_xid += MOUNT_XIDS;
	rpc_poll_start(&c->poll, nfs_get_rpc_context(c->nfs));
	c->state = UP_CONNECTING;
	if (nfs_mount_async(c->nfs, up->server, up->export, up_mount_cb, c) != 0) {
		log_warning("upstream: %s:%s conn %u: cannot start mount: %s", up->server, up->export,
			    c->index, nfs_get_error(c->nfs));
		c->broken = 1;
	}
	up_conn_after_service(c);
	up_tick_update(up);
}

static void up_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	up_connect(w->data);
}

void upstream_start(struct upstream *up)
{
	ev_timer_init(&up->tick, up_tick_cb, TICK_S, TICK_S);
	up->tick.data = up;
	for (unsigned i = 0; i < up->n_conns; i++) {
		struct up_conn *c = &up->conns[i];
		ev_timer_init(&c->retry, up_retry_cb, 0., 0.);
		c->retry.data = c;
		up_connect(c);
	}
}

int upstream_call(struct upstream *up, const struct proc_desc *desc, void *args,
		  const struct rpc_cred *cred, upstream_done_fn done, void *priv)
{
	double timeout_s = (double)up->cfg->upstream_timeout_ms / 1000.0;
	struct upstream_call call = {
		.desc = desc, .args = args, .cred = *cred, .done = done, .priv = priv,
		.deadline = ev_now(up->loop) + timeout_s,
	};

	if (desc->prog == MOUNT_PROGRAM) {
		stats.upstream_mount3[desc->proc]++;
		return mountfwd_call(up->loop, up->server, up->mount_port, &call);
	}
	struct up_req *r = xcalloc(1, sizeof(*r));
	r->up = up;
	r->call = call;
	list_init(&r->link);
	list_add_tail(&up->waiting, &r->link);
	if (up->closing)
		return 0;   /* upstream_free() fails it */
	up_submit_waiting(up);
	up_tick_update(up);
	return 0;
}

void upstream_free(struct upstream *up)
{
	struct list_node *pos, *tmp;

	if (!up)
		return;
	ev_timer_stop(up->loop, &up->tick);
	for (unsigned i = 0; i < up->n_conns; i++) {
		struct up_conn *c = &up->conns[i];
		ev_timer_stop(up->loop, &c->retry);
		rpc_poll_stop(&c->poll);
		if (c->nfs) {
			struct nfs_context *nfs = c->nfs;
			c->nfs = NULL;
			nfs_destroy_context(nfs);
		}
	}
	/* a completed call's callback may make another (a READ forwarded once
	 * its revalidating GETATTR failed): it waits, and fails in turn */
	up->closing = true;
	list_for_each_safe(pos, tmp, &up->sent)
		req_complete(list_entry(pos, struct up_req, link), UPSTREAM_TIMEOUT, NULL);
	list_for_each_safe(pos, tmp, &up->unsendable)
		req_complete(list_entry(pos, struct up_req, link), UPSTREAM_FAILED, NULL);
	while (!list_empty(&up->waiting))
		req_complete(list_entry(up->waiting.next, struct up_req, link), UPSTREAM_TIMEOUT, NULL);
	mountfwd_finalise();
	free(up->conns);
	free(up->server);
	free(up->export);
	free(up);
}

uint32_t upstream_wtmax(const struct upstream *up)
{
	return up->wtmax;
}

uint32_t upstream_rtmax(const struct upstream *up)
{
	return up->rtmax;
}

double upstream_srtt(const struct upstream *up)
{
	return up->srtt;
}
