/*
 * test_upstream_errors.c — the libnfs messages upstream_error_status()
 * (daemon/upstream.c) tells apart, made by libnfs itself: a libnfs
 * rpc_context calls a server on loopback that this test plays, which
 * answers each call with one kind of RPC reply (encoded by proto/rpc_msg.c)
 * or closes the connection; the message libnfs hands the callback with
 * RPC_STATUS_ERROR is checked word for word and classified.
 *
 * In libnfs 4.0.0 they come from (sahlberg/libnfs, tag libnfs-4.0.0):
 *   lib/pdu.c rpc_process_reply():
 *     "RPC Packet not accepted by the server"     MSG_DENIED (AUTH_ERROR or
 *                                                  RPC_MISMATCH alike)
 *     "Server responded: Program not available"   PROG_UNAVAIL
 *     "Server responded: Program version mismatch" PROG_MISMATCH
 *     "Server responded: Procedure not available" PROC_UNAVAIL
 *     "Server responded: Garbage arguments"        GARBAGE_ARGS
 *     "Server responded: System Error"             SYSTEM_ERR
 *     "Unknown rpc response from server"           another accept_stat
 *     "Message rejected by server"                 a reply zdr_replymsg
 *                                                  cannot decode
 *   lib/socket.c rpc_reconnect_requeue(), through rpc_error_all_pdus():
 *     "RPC ERROR: Failed to reconnect async"       the connection lost,
 *                                                  reconnection off or failed
 *     "RPC ERROR: All attempts to reconnect failed."
 * The first group are answers of the upstream (UPSTREAM_DENIED,
 * UPSTREAM_FAILED), the second transport failures (-1: the call is sent
 * again once reconnected).  A libnfs that words them otherwise fails here
 * before a daemon would answer SYSTEM_ERR for a lost connection, or wait
 * for ever on an upstream that refused a call.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/upstream.h"
#include "proto/nfs.h"
#include "proto/rpc_msg.h"

#include "tests/unit/tap.h"

#define WAIT_MAX_MS 5000
#define RECORD_MAX 4096

/* What the server does with the call it receives. */
enum answer {
	ANSWER_AUTH_ERROR,
	ANSWER_RPC_MISMATCH,
	ANSWER_ACCEPTED,        /* with `accept_stat` */
	ANSWER_BAD_REPLY_STAT,  /* reply_stat 2: neither MSG_ACCEPTED nor MSG_DENIED */
	ANSWER_CLOSE,           /* close the connection, no reply */
	ANSWER_CLOSE_ALL,       /* close it and stop listening */
};

static struct {
	int listen_fd;
	int conn_fd;
	uint16_t port;
	uint8_t rec[RECORD_MAX];
	size_t rec_len;
	enum answer answer;
	uint32_t accept_stat;
	int answered;
} S = { -1, -1, 0, { 0 }, 0, ANSWER_CLOSE, 0, 0 };

struct outcome {
	int done;
	int status;             /* RPC_STATUS_* */
	char msg[256];
	int msg_null;
};

static void server_listen(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int one = 1;

	S.listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (S.listen_fd < 0 || setsockopt(S.listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(S.listen_fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(S.listen_fd, 4) != 0 ||
	    getsockname(S.listen_fd, (struct sockaddr *)&sin, &len) != 0) {
		printf("Bail out! a loopback listener: %s\n", strerror(errno));
		exit(1);
	}
	S.port = ntohs(sin.sin_port);
}

static void send_all(const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(S.conn_fd, p, n);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

/* The whole call record arrived: answer it as told. */
static void server_answer(void)
{
	uint8_t out[4 + RPC_REPLY_MAX_HDR_BYTES];
	uint32_t xid;
	size_t n = 0;

	memcpy(&xid, S.rec + 4, 4);
	xid = ntohl(xid);
	S.answered = 1;
	switch (S.answer) {
	case ANSWER_AUTH_ERROR:
		n = rpc_encode_auth_error(out + 4, xid, RPC_AUTH_BADCRED);
		break;
	case ANSWER_RPC_MISMATCH:
		n = rpc_encode_rpc_mismatch(out + 4, xid, RPC_VERSION, RPC_VERSION);
		break;
	case ANSWER_ACCEPTED:
		n = rpc_encode_accepted(out + 4, xid, (enum rpc_accept_stat)S.accept_stat, 3, 3);
		break;
	case ANSWER_BAD_REPLY_STAT:
		put32(out + 4, xid);
		put32(out + 8, RPC_MSG_REPLY);
		put32(out + 12, 2);
		n = 12;
		break;
	case ANSWER_CLOSE_ALL:
		close(S.listen_fd);
		S.listen_fd = -1;
		/* fall through */
	case ANSWER_CLOSE:
		close(S.conn_fd);
		S.conn_fd = -1;
		return;
	}
	put32(out, 0x80000000u | (uint32_t)n);   /* last fragment */
	send_all(out, n + 4);
}

static void server_read(void)
{
	ssize_t r = read(S.conn_fd, S.rec + S.rec_len, sizeof(S.rec) - S.rec_len);

	if (r <= 0) {
		close(S.conn_fd);
		S.conn_fd = -1;
		return;
	}
	S.rec_len += (size_t)r;
	if (S.rec_len >= 4) {
		uint32_t mark;
		memcpy(&mark, S.rec, 4);
		size_t want = 4 + (ntohl(mark) & 0x7fffffffu);
		if (want > sizeof(S.rec)) {
			printf("Bail out! a call record of %zu bytes\n", want);
			exit(1);
		}
		if (S.rec_len >= want && !S.answered)
			server_answer();
	}
}

/* Poll the client context and the server until *flag is set. */
static int drive(struct rpc_context *rpc, const int *flag)
{
	for (int waited = 0; !*flag; waited += 10) {
		struct pollfd p[2];
		int n = 0;
		if (waited > WAIT_MAX_MS)
			return 0;
		p[n].fd = rpc_get_fd(rpc);
		p[n].events = (short)rpc_which_events(rpc);
		p[n++].revents = 0;
		if (S.conn_fd >= 0 || S.listen_fd >= 0) {
			p[n].fd = S.conn_fd >= 0 ? S.conn_fd : S.listen_fd;
			p[n].events = POLLIN;
			p[n++].revents = 0;
		}
		if (poll(p, (nfds_t)n, 10) < 0 && errno != EINTR)
			return 0;
		if (n > 1 && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			if (S.conn_fd >= 0) {
				server_read();
			} else {
				S.conn_fd = accept(S.listen_fd, NULL, NULL);
				S.rec_len = 0;
				S.answered = 0;
			}
		}
		if (p[0].fd >= 0)
			rpc_service(rpc, p[0].revents);
	}
	return 1;
}

static void connect_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	(void)rpc;
	(void)data;
	*(int *)priv = status == RPC_STATUS_SUCCESS ? 1 : -1;
}

static void call_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct outcome *o = priv;

	(void)rpc;
	o->done = 1;
	o->status = status;
	o->msg_null = data == NULL;
	if (status == RPC_STATUS_ERROR && data)
		snprintf(o->msg, sizeof(o->msg), "%s", (const char *)data);
}

/*
 * One NFSv3 NULL call over a new connection, answered as `answer` says
 * (`reconnect`: libnfs's own reconnection attempts); the outcome in *o.
 * Returns 0 when the call completed.
 */
static int one_call(enum answer answer, uint32_t accept_stat, int reconnect, struct outcome *o)
{
	struct rpc_context *rpc = rpc_init_context();
	int connected = 0, rc = -1;

	memset(o, 0, sizeof(*o));
	if (S.listen_fd < 0)
		server_listen();
	S.answer = answer;
	S.accept_stat = accept_stat;
	if (!rpc || rpc_connect_async(rpc, "127.0.0.1", S.port, connect_cb, &connected) != 0 ||
	    !drive(rpc, &connected) || connected != 1) {
		diag("    cannot connect to the loopback server");
		goto out;
	}
	if (reconnect)
		rpc_set_autoreconnect(rpc, reconnect);
	if (rpc_nfs3_null_async(rpc, call_cb, o) != 0 || !drive(rpc, &o->done))
		goto out;
	rc = 0;
out:
	if (rpc)
		rpc_destroy_context(rpc);
	if (S.conn_fd >= 0) {
		close(S.conn_fd);
		S.conn_fd = -1;
	}
	return rc;
}

/* The call ended with RPC_STATUS_ERROR and exactly `want`, which
 * upstream_error_status() classifies as `cls`. */
static void check(const char *what, const struct outcome *o, int rc, const char *want, int cls)
{
	int cond = rc == 0 && o->status == RPC_STATUS_ERROR && strcmp(o->msg, want) == 0;

	ok(cond, "%s: libnfs says \"%s\"", what, want);
	if (!cond)
		diag("    got rc %d, status %d, \"%s\"", rc, o->status, o->msg);
	is_int(upstream_error_status(o->msg), cls, "%s: classified %s", what,
	       cls == UPSTREAM_DENIED ? "UPSTREAM_DENIED" :
	       cls == UPSTREAM_FAILED ? "UPSTREAM_FAILED" : "a transport failure");
}

int main(void)
{
	static const struct {
		uint32_t stat;
		const char *what, *msg;
	} accepted[] = {
		{ RPC_PROG_UNAVAIL, "PROG_UNAVAIL", "Server responded: Program not available" },
		{ RPC_PROG_MISMATCH, "PROG_MISMATCH", "Server responded: Program version mismatch" },
		{ RPC_PROC_UNAVAIL, "PROC_UNAVAIL", "Server responded: Procedure not available" },
		{ RPC_GARBAGE_ARGS, "GARBAGE_ARGS", "Server responded: Garbage arguments" },
		{ RPC_SYSTEM_ERR, "SYSTEM_ERR", "Server responded: System Error" },
		{ 99, "accept_stat 99", "Unknown rpc response from server" },
	};
	struct outcome o;
	int rc;

	alarm(60);   /* a hang fails instead of blocking */
	rc = one_call(ANSWER_AUTH_ERROR, 0, 0, &o);
	check("MSG_DENIED AUTH_ERROR", &o, rc, "RPC Packet not accepted by the server", UPSTREAM_DENIED);
	/* libnfs gives every MSG_DENIED one message: an RPC version the
	 * upstream refuses reads as a refused credential too */
	rc = one_call(ANSWER_RPC_MISMATCH, 0, 0, &o);
	check("MSG_DENIED RPC_MISMATCH", &o, rc, "RPC Packet not accepted by the server",
	      UPSTREAM_DENIED);
	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		rc = one_call(ANSWER_ACCEPTED, accepted[i].stat, 0, &o);
		check(accepted[i].what, &o, rc, accepted[i].msg, UPSTREAM_FAILED);
	}
	rc = one_call(ANSWER_BAD_REPLY_STAT, 0, 0, &o);
	check("a reply libnfs cannot decode", &o, rc, "Message rejected by server", UPSTREAM_FAILED);

	/* transport failures: never an answer of the upstream */
	rc = one_call(ANSWER_CLOSE, 0, 0, &o);
	check("connection closed, reconnection off", &o, rc, "RPC ERROR: Failed to reconnect async", -1);
	rc = one_call(ANSWER_CLOSE_ALL, 0, 1, &o);
	ok(rc == 0 && o.status == RPC_STATUS_ERROR &&
	   (strcmp(o.msg, "RPC ERROR: Failed to reconnect async") == 0 ||
	    strcmp(o.msg, "RPC ERROR: All attempts to reconnect failed.") == 0),
	   "connection closed, server gone, one reconnection: libnfs says \"RPC ERROR: ...\"");
	if (rc != 0 || o.status != RPC_STATUS_ERROR)
		diag("    got rc %d, status %d, \"%s\"", rc, o.status, o.msg);
	else
		diag("    \"%s\"", o.msg);
	is_int(upstream_error_status(o.msg), -1, "... classified a transport failure");
	is_int(upstream_error_status(NULL), -1, "no message: a transport failure");

	if (S.listen_fd >= 0)
		close(S.listen_fd);
	return done();
}
