/*
 * metrics.c — the Prometheus endpoint on metrics.listen.  Owns the listening
 * socket, the libmicrohttpd daemon and the two watchers that drive it from
 * the libev loop: an ev_io on libmicrohttpd's epoll descriptor (ready when
 * any of its sockets is) and an ev_timer set from MHD_get_timeout() after
 * every MHD_run(), for its connection timeouts and for work it left pending.
 * Not the counters (common/stats.c writes them) nor the export names
 * (ctl_exports.c walks the upstream for them).
 *
 * Every request is answered from inside MHD_run(): the body is rendered
 * from the counters in memory, so a scrape never waits on the upstream or
 * the disk.  HTTP parsing, malformed requests (400) and the limits below
 * are libmicrohttpd's.
 */
#include "config.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/stats.h"
#include "common/xalloc.h"
#include "daemon/ctl_exports.h"
#include "daemon/metrics.h"
#include "daemon/netaddr.h"

#define METRICS_PATH "/metrics"
/* The text exposition format's own content type (Prometheus, format 0.0.4). */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_CONNECTIONS_MAX 16u        /* HTTP connections at once */
#define METRICS_TIMEOUT_S 10u              /* an idle or slow connection is closed */
#define METRICS_CONN_MEMORY_BYTES (32u * 1024)  /* request line and headers, per connection */
/* connections beyond METRICS_CONNECTIONS_MAX wait here until one ends */
#define METRICS_BACKLOG 64

static struct {
	struct ev_loop *loop;
	struct MHD_Daemon *mhd;        /* NULL: metrics.listen is empty */
	ev_io io;                      /* on MHD_DAEMON_INFO_EPOLL_FD */
	ev_timer timer;                /* MHD_get_timeout() after the last MHD_run() */
	char address[80];              /* "ADDRESS:PORT" as bound */
} metrics;

/* libmicrohttpd's messages are about single connections: debug level. */
__attribute__((format(printf, 2, 0)))
static void metrics_mhd_log_cb(void *cls, const char *fmt, va_list ap)
{
	char msg[256];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("metrics: %s", msg);
}

/* A small fixed text answer (404, 405). */
static enum MHD_Result metrics_answer_text(struct MHD_Connection *connection,
					   unsigned int status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
								  MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(connection, status, r);
	MHD_destroy_response(r);
	return rc;
}

/* The body of `stats --prometheus`, rendered now; HEAD gets its length. */
static enum MHD_Result metrics_answer_metrics(struct MHD_Connection *connection)
{
	char *body = NULL;
	size_t len = 0;
	FILE *out = xopen_memstream(&body, &len);
	struct MHD_Response *r;
	enum MHD_Result rc;

	stats_write(out, STATS_PROMETHEUS);
	fclose(out);
	/* per-export counters of file systems not named yet get their names
	 * for the next scrape, as `stats --prometheus` does */
	ctl_stats_name_exports();
	r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
	rc = MHD_queue_response(connection, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return rc;
}

/*
 * Called once the request line and headers are in, then for each piece of
 * a request body, then once more at its end.  Another method than GET or
 * HEAD is answered at once (libmicrohttpd then closes the connection
 * rather than read its body).  GET and HEAD are answered at the end of
 * the request, its body (none is expected) read and dropped: answered
 * earlier, the connection could not be kept for the next scrape.
 */
static enum MHD_Result metrics_request_cb(void *cls, struct MHD_Connection *connection,
					  const char *url, const char *method,
					  const char *version, const char *upload_data,
					  size_t *upload_data_size, void **req_cls)
{
	static int request_seen;   /* *req_cls of a request whose headers were seen */

	(void)cls;
	(void)version;
	(void)upload_data;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return metrics_answer_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
					   "method not allowed: GET or HEAD\n");
	if (!*req_cls) {
		*req_cls = &request_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(url, METRICS_PATH) != 0)
		return metrics_answer_text(connection, MHD_HTTP_NOT_FOUND,
					   "not found: the metrics are at " METRICS_PATH "\n");
	return metrics_answer_metrics(connection);
}

/* HTTP connections open now. */
static unsigned metrics_connections(void)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(metrics.mhd, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);

	return info ? info->num_connections : 0;
}

/*
 * Run libmicrohttpd once, then wake up again when it says it must run.  At
 * METRICS_CONNECTIONS_MAX it takes its listening socket out of its epoll
 * set, and puts it back only in a run after connections closed: a run that
 * closed some is followed by another at once, or connections waiting in
 * the backlog would never be accepted (the epoll descriptor has nothing to
 * report for them).
 */
static void metrics_run(void)
{
	MHD_UNSIGNED_LONG_LONG timeout_ms;
	unsigned before = metrics_connections();
	double after_s = -1;

	MHD_run(metrics.mhd);
	ev_timer_stop(metrics.loop, &metrics.timer);
	if (metrics_connections() < before)
		after_s = 0;
	else if (MHD_get_timeout(metrics.mhd, &timeout_ms) == MHD_YES)
		after_s = (double)timeout_ms / 1000.0;
	if (after_s >= 0) {
		ev_timer_set(&metrics.timer, after_s, 0.);
		ev_timer_start(metrics.loop, &metrics.timer);
	}
}

static void metrics_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	metrics_run();
}

static void metrics_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	metrics_run();
}

/* A listening TCP socket on `addr`: its descriptor, or -errno after
 * logging.  The bound address goes to metrics.address. */
static int metrics_listen(const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	int one = 1, fd, err;
	char a[80];

	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
		log_error("metrics: socket: %s", strerror(err));
		return -err;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, addr, len) != 0 || listen(fd, METRICS_BACKLOG) != 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &blen) != 0) {
		err = errno;
		log_error("metrics: cannot listen on %s: %s", netaddr_format(addr, a, sizeof(a)),
			  strerror(err));
		close(fd);
		return -err;
	}
	netaddr_format((struct sockaddr *)&bound, metrics.address, sizeof(metrics.address));
	return fd;
}

int metrics_init(struct ev_loop *loop, const struct nfsd_conf *cfg)
{
	const union MHD_DaemonInfo *info;
	int fd;

	if (!*cfg->metrics_listen)
		return 0;
	fd = metrics_listen((const struct sockaddr *)&cfg->metrics_addr, cfg->metrics_addr_len);
	if (fd < 0)
		return fd;
	metrics.loop = loop;
	metrics.mhd = MHD_start_daemon(
		MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (cfg->metrics_addr.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		0, NULL, NULL, metrics_request_cb, NULL,
		/* first, or its own messages about the others go to stderr */
		MHD_OPTION_EXTERNAL_LOGGER, metrics_mhd_log_cb, NULL,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, METRICS_CONNECTIONS_MAX,
		MHD_OPTION_CONNECTION_TIMEOUT, METRICS_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY_BYTES,
		MHD_OPTION_END);
	if (!metrics.mhd) {
		log_error("metrics: cannot start the HTTP server on %s", metrics.address);
		close(fd);
		return -EIO;
	}
	info = MHD_get_daemon_info(metrics.mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		log_error("metrics: the HTTP server has no epoll descriptor");
		metrics_finalise();
		return -EIO;
	}
	ev_io_init(&metrics.io, metrics_io_cb, info->epoll_fd, EV_READ);
	ev_io_start(loop, &metrics.io);
	ev_timer_init(&metrics.timer, metrics_timer_cb, 0., 0.);
	log_info("metrics: serving http://%s%s", metrics.address, METRICS_PATH);
	return 0;
}

void metrics_finalise(void)
{
	if (!metrics.mhd)
		return;
	ev_io_stop(metrics.loop, &metrics.io);
	ev_timer_stop(metrics.loop, &metrics.timer);
	MHD_stop_daemon(metrics.mhd);   /* closes the listening socket too */
	metrics.mhd = NULL;
}

const char *metrics_address(void)
{
	return metrics.mhd ? metrics.address : "off";
}
