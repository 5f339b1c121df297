/*
 * upstream.c — the NFSv3 connection to the upstream server: one libnfs
 * nfs_context driven by the daemon's libev loop, a queue of calls waiting
 * for it, reconnection with backoff, and per-call deadlines.  MOUNT calls are
 * handed to mountfwd.c.  Owns every forwarded call from upstream_call() until
 * its `done` callback.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
#define RECONNECT_RETRIES 3      /* libnfs's own immediate reconnects, keeping XIDs */

enum up_state { UP_DOWN, UP_CONNECTING, UP_UP };

struct up_req {
	struct list_node link;         /* up->waiting or up->sent */
	struct upstream *up;
	struct upstream_call call;
	struct nfs_context *sent_on;   /* context that holds its PDU, or NULL */
	ev_tstamp sent_at;             /* loop time it was last handed to libnfs */
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
	struct nfs_context *nfs;       /* NULL while down */
	enum up_state state;
	int broken;                    /* tear the context down after nfs_service */
	int ever_up;
	int reconnecting;              /* libnfs replaced the socket: no reply on it yet */
	struct rpc_poll poll;          /* follows nfs's rpc_context while it exists */
	ev_timer tick;
	ev_timer retry;
	double backoff_s;
	struct list_node waiting;      /* struct up_req not yet sent */
	struct list_node sent;         /* struct up_req with a PDU in libnfs */
	char last_error[256];
};

static void up_connect(struct upstream *up);
static void up_serviced(struct rpc_poll *p, int rc);

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
	rpc_poll_init(&up->poll, loop, up_serviced);
	up->backoff_s = BACKOFF_MIN_S;
	list_init(&up->waiting);
	list_init(&up->sent);
	ev_init(&up->tick, NULL);
	ev_init(&up->retry, NULL);
	return up;
}

const char *upstream_state(const struct upstream *up)
{
	static const char *const names[] = { "down", "connecting", "up" };

	return names[up->state];
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

static void req_complete(struct up_req *r, enum upstream_status st, void *res)
{
	list_del(&r->link);
	r->call.done(r->call.priv, st, res);
	free(r);
}

/* Keep the libev watcher in step with what libnfs wants. */
static void up_io_update(struct upstream *up)
{
	if (rpc_poll_update(&up->poll) && up->state == UP_UP) {
		/* libnfs is reconnecting by itself, dup2()ing a new socket onto
		 * the fd; it counts once a reply arrives on it */
		if (!up->reconnecting)
			stats.upstream_errors++;
		up->reconnecting = 1;
	}
}

static void up_tick_update(struct upstream *up)
{
	int want = !list_empty(&up->waiting) || !list_empty(&up->sent);

	if (want && !ev_is_active(&up->tick))
		ev_timer_again(up->loop, &up->tick);
	else if (!want && ev_is_active(&up->tick))
		ev_timer_stop(up->loop, &up->tick);
}

static void up_teardown(struct upstream *up)
{
	struct nfs_context *nfs = up->nfs;
	struct list_node *pos, *tmp;

	up->broken = 0;
	if (!nfs)
		return;
	stats.upstream_errors++;
	if (up->state == UP_UP)
		log_warning("upstream: %s: connection failed: %s", up->server, up->last_error);
	up->nfs = NULL;
	up->state = UP_DOWN;
	up->reconnecting = 0;
	rpc_poll_stop(&up->poll);
	nfs_destroy_context(nfs);   /* its PDU callbacks requeue their calls */
	list_for_each_safe(pos, tmp, &up->sent) {
		struct up_req *r = list_entry(pos, struct up_req, link);
		if (r->sent_on == nfs) {
			r->sent_on = NULL;
			list_del(&r->link);
			list_add_tail(&up->waiting, &r->link);
		}
	}
	ev_timer_set(&up->retry, up->backoff_s, 0.);
	ev_timer_start(up->loop, &up->retry);
	up->backoff_s = up->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : up->backoff_s * 2;
}

/* After every nfs_service(): tear down a failed context, follow fd changes. */
static void up_after_service(struct upstream *up)
{
	if (up->broken)
		up_teardown(up);
	else
		up_io_update(up);
	up_tick_update(up);
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

static void up_rpc_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct up_req *r = priv;
	struct upstream *up = r->up;

	(void)rpc;
	switch (status) {
	case RPC_STATUS_SUCCESS:
		if (up->reconnecting && up->nfs == r->sent_on) {
			up->reconnecting = 0;
			stats.upstream_reconnects++;
			log_info("upstream: %s: reconnected", up->server);
		}
		{
			double rtt = ev_time() - r->sent_at;
			up->srtt = up->srtt == 0 ? rtt : up->srtt + (rtt - up->srtt) / 8;
		}
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
		if (up->nfs == r->sent_on) {
			snprintf(up->last_error, sizeof(up->last_error), "%s",
				 data ? (const char *)data : "transport error");
			up->broken = 1;
		}
		break;
	case RPC_STATUS_CANCEL:
	default:
		break;   /* the context is going away: send it again on the next */
	}
	r->sent_on = NULL;
	list_del(&r->link);
	list_add_tail(&up->waiting, &r->link);
}

static void up_submit(struct upstream *up, struct up_req *r)
{
	struct rpc_context *rpc = nfs_get_rpc_context(up->nfs);
	double left_ms = (r->call.deadline - ev_now(up->loop)) * 1000.0;

	if (left_ms < 1)
		left_ms = 1;
	rpc_set_auth(rpc, upstream_call_auth(&r->call));
	nfs_set_timeout(up->nfs, (int)left_ms);
	list_del(&r->link);
	if (r->call.desc->send(rpc, up_rpc_cb, r->call.args, r) != 0) {
		log_warning("upstream: %s %s: cannot queue: %s", up->server, r->call.desc->name,
			    rpc_get_error(rpc));
		list_add_tail(&up->waiting, &r->link);
		up->broken = 1;
		return;
	}
	r->sent_on = up->nfs;
	r->sent_at = ev_time();
	list_add_tail(&up->sent, &r->link);
	stats.upstream_nfs3[r->call.desc->proc]++;
}

static void up_submit_waiting(struct upstream *up)
{
	while (up->state == UP_UP && !up->broken && !list_empty(&up->waiting))
		up_submit(up, list_first(&up->waiting, struct up_req, link));
}

static void up_serviced(struct rpc_poll *p, int rc)
{
	struct upstream *up = container_of(p, struct upstream, poll);

	if (rc < 0 && !up->broken) {
		snprintf(up->last_error, sizeof(up->last_error), "%s", nfs_get_error(up->nfs));
		up->broken = 1;
	}
	up_after_service(up);
}

static void up_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct upstream *up = w->data;
	struct list_node *pos, *tmp;

	(void)revents;
	if (up->nfs && nfs_service(up->nfs, 0) < 0)
		up->broken = 1;
	/* calls still waiting for a connection when their time is up */
	list_for_each_safe(pos, tmp, &up->waiting) {
		struct up_req *r = list_entry(pos, struct up_req, link);
		if (r->call.deadline <= ev_now(loop)) {
			stats.upstream_timeouts++;
			req_complete(r, UPSTREAM_TIMEOUT, NULL);
		}
	}
	up_after_service(up);
}

static void up_mount_cb(int status, struct nfs_context *nfs, void *data, void *priv)
{
	struct upstream *up = priv;

	(void)nfs;
	if (!up->nfs)
		return;   /* cancelled by upstream_free(): nothing to retry */
	if (status != 0) {
		const char *why = data ? (const char *)data : "unknown error";
		if (strcmp(up->last_error, why) != 0 || !up->ever_up)
			log_warning("upstream: %s:%s: mount failed: %s (retrying)", up->server,
				    up->export, why);
		snprintf(up->last_error, sizeof(up->last_error), "%s", why);
		up->broken = 1;
		return;
	}
	up->state = UP_UP;
	up->backoff_s = BACKOFF_MIN_S;
	uint64_t wtmax = nfs_get_writemax(nfs);
	up->wtmax = wtmax > UINT32_MAX ? UINT32_MAX : (uint32_t)wtmax;
	uint64_t rtmax = nfs_get_readmax(nfs);
	up->rtmax = rtmax > UINT32_MAX ? UINT32_MAX : (uint32_t)rtmax;
	rpc_poll_forget_socket(&up->poll);   /* the mount's own sockets are not reconnections */
	rpc_set_autoreconnect(nfs_get_rpc_context(up->nfs), RECONNECT_RETRIES);
	if (up->ever_up) {
		stats.upstream_reconnects++;
		log_info("upstream: %s:%s: reconnected", up->server, up->export);
	} else {
		log_info("upstream: %s:%s: mounted", up->server, up->export);
	}
	up->ever_up = 1;
	up->last_error[0] = '\0';
	up_submit_waiting(up);
}

static void up_connect(struct upstream *up)
{
	struct nfs_url *url;

	up->nfs = nfs_init_context();
	if (!up->nfs)
		abort();
	url = nfs_parse_url_dir(up->nfs, up->cfg->upstream_url);   /* applies ?nfsport= etc. */
	if (url)
		nfs_destroy_url(url);
	nfs_set_timeout(up->nfs, (int)up->cfg->upstream_timeout_ms);
	nfs_set_autoreconnect(up->nfs, RECONNECT_RETRIES);
	rpc_poll_start(&up->poll, nfs_get_rpc_context(up->nfs));
	up->state = UP_CONNECTING;
	if (nfs_mount_async(up->nfs, up->server, up->export, up_mount_cb, up) != 0) {
		log_warning("upstream: %s:%s: cannot start mount: %s", up->server, up->export,
			    nfs_get_error(up->nfs));
		up->broken = 1;
	}
	up_after_service(up);
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
	ev_timer_init(&up->retry, up_retry_cb, 0., 0.);
	up->retry.data = up;
	up_connect(up);
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
	up_submit_waiting(up);
	if (up->nfs && up->state == UP_UP)
		up_io_update(up);   /* libnfs now wants POLLOUT */
	up_tick_update(up);
	return 0;
}

void upstream_free(struct upstream *up)
{
	struct list_node *pos, *tmp;

	if (!up)
		return;
	ev_timer_stop(up->loop, &up->tick);
	ev_timer_stop(up->loop, &up->retry);
	rpc_poll_stop(&up->poll);
	if (up->nfs) {
		struct nfs_context *nfs = up->nfs;
		up->nfs = NULL;
		nfs_destroy_context(nfs);
	}
	list_for_each_safe(pos, tmp, &up->sent)
		req_complete(list_entry(pos, struct up_req, link), UPSTREAM_TIMEOUT, NULL);
	list_for_each_safe(pos, tmp, &up->waiting)
		req_complete(list_entry(pos, struct up_req, link), UPSTREAM_TIMEOUT, NULL);
	mountfwd_finalise();
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
