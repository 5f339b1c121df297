/*
 * mountfwd.c — one libnfs rpc_context per forwarded MOUNT call, on libev,
 * MOUNTFWD_MAX_CONNS of them at once (the other calls wait, oldest first).
 * A context is never destroyed from inside one of its own callbacks: the
 * callbacks only record the outcome, and the watcher callbacks act on it
 * once rpc_service() has returned.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/list.h"
#include "common/log.h"
#include "common/macros.h"
#include "daemon/mountfwd.h"
#include "daemon/rpc_poll.h"
#include "common/xalloc.h"

#define RETRY_S 0.25
/* Upstream MOUNT connections open at once.  Each one binds a privileged
 * port (libnfs looks for a free one among 512..1023, consulting
 * /etc/services for each): a client that pipelines a thousand MOUNT calls
 * would otherwise take every such port and keep the loop busy for seconds. */
#define MOUNTFWD_MAX_CONNS 16

struct mount_req {
	struct ev_loop *loop;
	char *server;
	int port;
	struct upstream_call call;
	struct rpc_context *rpc;      /* current attempt, or NULL */
	struct rpc_poll poll;         /* follows rpc while it exists */
	ev_timer timer;               /* retry delay, and the deadline */
	int failed;                   /* current attempt failed: retry */
	int finished;                 /* done() has fired */
	int waiting;                  /* 1: on mreq_waiting; 2: woken, a connection kept for it */
	struct list_node link;        /* mreq_pending, until freed */
	struct list_node wait_link;   /* mreq_waiting, while waiting */
};

/* every mount_req not yet freed, for mountfwd_finalise() */
static struct list_node mreq_pending = LIST_INIT(mreq_pending);
/* requests whose next attempt waits for a connection, oldest first */
static struct list_node mreq_waiting = LIST_INIT(mreq_waiting);
static unsigned mreq_conns;           /* requests holding an rpc_context */
static unsigned mreq_woken;           /* requests woken, their connection kept */

static void mreq_attempt(struct mount_req *m);

/* A connection is free: the oldest waiting request attempts on the next
 * loop iteration (its timer, from 0), ahead of any request that comes new. */
static void mreq_wake_one(void)
{
	if (list_empty(&mreq_waiting) || mreq_conns + mreq_woken >= MOUNTFWD_MAX_CONNS)
		return;
	struct mount_req *m = list_first(&mreq_waiting, struct mount_req, wait_link);
	list_del(&m->wait_link);
	m->waiting = 2;
	mreq_woken++;
	ev_timer_stop(m->loop, &m->timer);
	ev_timer_set(&m->timer, 0., 0.);
	ev_timer_start(m->loop, &m->timer);
}

static void mreq_drop_rpc(struct mount_req *m)
{
	rpc_poll_stop(&m->poll);
	if (m->rpc) {
		struct rpc_context *rpc = m->rpc;
		m->rpc = NULL;
		rpc_destroy_context(rpc);   /* callbacks may fire: finished/failed guard them */
		mreq_conns--;
		mreq_wake_one();
	}
}

static void mreq_free(struct mount_req *m)
{
	ev_timer_stop(m->loop, &m->timer);
	if (m->waiting == 1)
		list_del(&m->wait_link);
	else if (m->waiting == 2)
		mreq_woken--;
	m->waiting = 0;
	mreq_drop_rpc(m);
	mreq_wake_one();
	list_del(&m->link);
	free(m->server);
	free(m);
}

static void mreq_finish(struct mount_req *m, enum upstream_status st, void *res)
{
	if (m->finished)
		return;
	m->finished = 1;
	m->call.done(m->call.priv, st, res);
}

static void mreq_call_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct mount_req *m = priv;

	(void)rpc;
	if (m->finished)
		return;
	if (status == RPC_STATUS_SUCCESS) {
		mreq_finish(m, UPSTREAM_OK, data);
	} else if (status == RPC_STATUS_ERROR && upstream_error_status(data) >= 0) {
		log_limited(LOG_LEVEL_WARNING, "upstream: MOUNT %s: %s", m->call.desc->name,
			    (const char *)data);
		mreq_finish(m, (enum upstream_status)upstream_error_status(data), NULL);
	} else {
		m->failed = 1;
	}
}

static void mreq_connect_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct mount_req *m = priv;

	(void)data;
	if (m->finished || !m->rpc)
		return;
	if (status != RPC_STATUS_SUCCESS) {
		m->failed = 1;
		return;
	}
	if (m->call.desc->send(rpc, mreq_call_cb, m->call.args, m) != 0)
		m->failed = 1;
}

/* After rpc_service(): finish, retry, or follow the events libnfs wants. */
static void mreq_after_service(struct mount_req *m)
{
	if (m->finished) {
		mreq_free(m);
		return;
	}
	if (m->failed) {
		m->failed = 0;
		mreq_drop_rpc(m);
		double left = m->call.deadline - ev_now(m->loop);
		ev_timer_stop(m->loop, &m->timer);
		ev_timer_set(&m->timer, left < RETRY_S ? (left > 0 ? left : 0) : RETRY_S, 0.);
		ev_timer_start(m->loop, &m->timer);
		return;
	}
	rpc_poll_update(&m->poll);
}

static void mreq_serviced(struct rpc_poll *p, int rc)
{
	struct mount_req *m = container_of(p, struct mount_req, poll);

	if (rc < 0 && !m->finished)
		m->failed = 1;
	mreq_after_service(m);
}

static void mreq_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct mount_req *m = w->data;

	(void)revents;
	if (ev_now(loop) >= m->call.deadline) {
		log_warning("upstream: MOUNT %s to %s: no answer in time", m->call.desc->name, m->server);
		mreq_finish(m, UPSTREAM_TIMEOUT, NULL);
		mreq_free(m);
		return;
	}
	if (m->waiting == 2) {            /* woken: its connection was kept */
		mreq_woken--;
		m->waiting = 0;
	} else if (mreq_conns + mreq_woken >= MOUNTFWD_MAX_CONNS || !list_empty(&mreq_waiting)) {
		/* wait for a connection, in arrival order; the deadline still holds */
		if (!m->waiting) {
			list_add_tail(&mreq_waiting, &m->wait_link);
			m->waiting = 1;
		}
		ev_timer_set(&m->timer, m->call.deadline - ev_now(loop), 0.);
		ev_timer_start(loop, &m->timer);
		return;
	}
	mreq_attempt(m);
}

static void mreq_attempt(struct mount_req *m)
{
	int rc;

	m->rpc = rpc_init_context();
	if (!m->rpc)
		abort();
	mreq_conns++;
	rpc_poll_start(&m->poll, m->rpc);
	rpc_set_auth(m->rpc, upstream_call_auth(&m->call));
	if (m->port)
		rc = rpc_connect_async(m->rpc, m->server, m->port, mreq_connect_cb, m);
	else
		rc = rpc_connect_program_async(m->rpc, m->server, MOUNT_PROGRAM, MOUNT_V3,
					       mreq_connect_cb, m);
	if (rc != 0)
		m->failed = 1;
	/* the deadline timer runs while the attempt is under way */
	ev_timer_stop(m->loop, &m->timer);
	double left = m->call.deadline - ev_now(m->loop);
	ev_timer_set(&m->timer, left > 0 ? left : 0, 0.);
	ev_timer_start(m->loop, &m->timer);
	mreq_after_service(m);
}

int mountfwd_call(struct ev_loop *loop, const char *server, int port,
		  const struct upstream_call *call)
{
	struct mount_req *m = xcalloc(1, sizeof(*m));
	m->loop = loop;
	m->server = xstrdup(server);
	m->port = port;
	m->call = *call;
	rpc_poll_init(&m->poll, loop, mreq_serviced);
	ev_timer_init(&m->timer, mreq_timer_cb, 0., 0.);
	m->timer.data = m;
	list_add_tail(&mreq_pending, &m->link);
	/* start on the next loop iteration so done() never fires from here */
	ev_timer_start(loop, &m->timer);
	return 0;
}

void mountfwd_finalise(void)
{
	struct list_node *pos, *tmp;

	list_for_each_safe(pos, tmp, &mreq_pending) {
		struct mount_req *m = list_entry(pos, struct mount_req, link);
		mreq_finish(m, UPSTREAM_TIMEOUT, NULL);
		mreq_free(m);
	}
}
