/*
 * ctl.c — control socket server: accepts, reads one command line, checks
 * the peer may run it, runs its handler from the command table, writes the
 * answer, closes.  Owns the socket file, the clients (struct ctl_client) and
 * their replies (ctl_send, ctl_reply_error), and the commands that walk
 * nothing: status, stats reset, flush.  The upstream walks of `stats` and
 * `invalidate` are ctl_exports.c's (ctl_exports.h).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cache/cache.h"
#include "cache/meta.h"
#include "daemon/conn.h"
#include "daemon/ctl.h"
#include "daemon/ctl_exports.h"
#include "daemon/ctl_parse.h"
#include "common/log.h"
#include "daemon/nfsd.h"
#include "common/stats.h"
#include "daemon/upstream.h"
#include "daemon/writeback.h"
#include "common/xalloc.h"

struct ctl_client {
	int fd;
	ev_io io;
	struct ctl_line line;   /* the request as it arrives */
	char *reply;           /* whole answer, malloc'd */
	size_t reply_len, reply_off;
	uid_t uid;
	gid_t gid;
	int in_group;          /* the socket's group is among the peer's groups */
	ev_timer idle;
};

/* What runs a command; its words and whether it changes state are
 * ctl_cmd_names[] (ctl_parse.c), by the same index. */
struct ctl_cmd {
	int (*fn)(int argc, char **argv, FILE *out);   /* 0 ok; -1 error written to out */
	/* or a command answered later: it ends with ctl_send() */
	void (*start)(struct ctl_client *c, int argc, char **argv);
};

static int ctl_fd = -1;
static ev_io ctl_io;
static char *ctl_path;
static gid_t ctl_group;
static struct ev_loop *ctl_loop;

static int ctl_handle_status(int argc, char **argv, FILE *out)
{
	(void)argv;
	if (argc != 1) {
		fprintf(out, "usage: status");
		return -1;
	}
	fprintf(out, "version %s\n", PACKAGE_VERSION);
	fprintf(out, "pid %ld\n", (long)getpid());
	fprintf(out, "uptime_s %.0f\n", ev_now(nfsd.loop) - nfsd.start_time);
	fprintf(out, "listen %s\n", nfsd.listener ? listener_address(nfsd.listener) : "-");
	fprintf(out, "upstream %s\n", upstream_state(nfsd.upstream));
	fprintf(out, "upstream_server %s\n", upstream_server(nfsd.upstream));
	fprintf(out, "upstream_export %s\n", upstream_export(nfsd.upstream));
	fprintf(out, "upstream_connections %u\n", upstream_connections(nfsd.upstream));
	for (unsigned k = 0; k < upstream_connections(nfsd.upstream); k++) {
		struct upstream_conn_info ci;
		if (upstream_conn_info(nfsd.upstream, k, &ci) == 0)
			fprintf(out, "upstream_conn%u %s calls %llu in_flight %u reconnects %llu errors %llu\n",
				k, ci.state, (unsigned long long)ci.calls, ci.in_flight,
				(unsigned long long)ci.reconnects, (unsigned long long)ci.errors);
	}
	double srtt_s = upstream_srtt(nfsd.upstream);
	if (srtt_s > 0)
		fprintf(out, "upstream_srtt_ms %.3f\n", srtt_s * 1000.0);
	else
		fputs("upstream_srtt_ms -\n", out);
	fprintf(out, "connections %u\n", conn_count());
	fprintf(out, "calls_in_flight %llu\n", (unsigned long long)stats.calls_in_flight);
	fprintf(out, "state %s\n", nfsd.stopping ? "stopping" : "serving");
	struct cache_space sp;
	cache_space(&sp);
	fprintf(out, "cache %s\n", nfsd.cache_on ? cache_space_state_name(sp.state) : "off");
	fprintf(out, "cache_dir %s\n", nfsd.cfg.cache.dir);
	fprintf(out, "cache_objects %llu\n", (unsigned long long)stats.cache_objects);
	fprintf(out, "cache_bytes %llu\n", (unsigned long long)stats.cache_bytes);
	fprintf(out, "commit %s\n", nfsd.cfg.cache.commit == COMMIT_LOCAL ? "local" : "upstream");
	if (nfsd.cache_on)
		cache_unwritten_refresh();
	fprintf(out, "unwritten_bytes %llu\n", (unsigned long long)stats.cache_unwritten_bytes);
	fprintf(out, "unwritten_oldest_s %llu\n", (unsigned long long)stats.cache_unwritten_oldest_s);
	fprintf(out, "metadata %s\n", meta_on() ? "on" : "off");
	fprintf(out, "metadata_entries %llu\n", (unsigned long long)stats.cache_metadata_entries);
	fprintf(out, "metadata_bytes %llu\n", (unsigned long long)meta_bytes());
	if (nfsd.cache_on) {
		fprintf(out, "cache_fs_bytes %llu\n", (unsigned long long)sp.blocks_total);
		fprintf(out, "cache_fs_bytes_free %llu\n", (unsigned long long)sp.blocks_avail);
		fprintf(out, "cache_fs_files %llu\n", (unsigned long long)sp.files_total);
		fprintf(out, "cache_fs_files_free %llu\n", (unsigned long long)sp.files_avail);
	}
	return 0;
}

static int ctl_handle_stats_reset(int argc, char **argv, FILE *out)
{
	(void)argv;
	if (argc != 2) {
		fprintf(out, "usage: stats reset");
		return -1;
	}
	stats_reset();
	log_info("ctl: counters reset");
	return 0;
}

static void ctl_flush_done(void *arg, int status)
{
	struct ctl_client *c = arg;
	char *r;

	if (status == 0)
		r = xstrdup("ok\n");
	else if (status < 0)
		r = xstrdup("error: the upstream did not answer: dirty data kept for a later write-back\n");
	else if (nfsd.cfg.cache.commit == COMMIT_LOCAL)
		r = xasprintf("error: a write-back failed: NFS status %d (the data stays dirty "
			      "and is tried again)\n", status);
	else
		r = xasprintf("error: a write-back failed: NFS status %d (reported to the file's next COMMIT)\n",
			      status);
	log_info("ctl: flush: %s", status == 0 ? "done" : "failed");
	ctl_send(c, r, strlen(r));
}

/* flush: answered once every dirty byte is committed upstream. */
static void ctl_start_flush(struct ctl_client *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		char *r = xstrdup("error: usage: flush\n");
		ctl_send(c, r, strlen(r));
		return;
	}
	if (!nfsd.cache_on || writeback_flush_all(ctl_flush_done, c) != 0)
		ctl_flush_done(c, 0);   /* nothing dirty */
}

static void ctl_cull_done(void *arg, const struct cache_space *sp)
{
	struct ctl_client *c = arg;
	char *r = xasprintf("ok\nculled_objects %llu\nculled_bytes %llu\ncache %s\n%s",
			 (unsigned long long)sp->run_objects, (unsigned long long)sp->run_bytes,
			 cache_space_state_name(sp->state),
			 sp->starved ? "note nothing more can be culled now: the objects left "
				       "hold dirty data, are in use, or the space is used by other "
				       "files\n" : "");

	log_info("ctl: cull: %llu objects, %llu bytes", (unsigned long long)sp->run_objects,
		 (unsigned long long)sp->run_bytes);
	ctl_send(c, r, strlen(r));
}

/* cull: a culling run now, answered when it ends (cache_cull_now). */
static void ctl_start_cull(struct ctl_client *c, int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		ctl_reply_error(c, "usage: cull");
		return;
	}
	if (!nfsd.cache_on) {
		ctl_reply_error(c, "the cache is off: nothing to cull");
		return;
	}
	if (cache_cull_now(ctl_cull_done, c) < 0) {
		struct cache_space sp;
		cache_space(&sp);
		sp.run_objects = sp.run_bytes = 0;   /* above brun/frun: nothing to do */
		sp.starved = 0;
		ctl_cull_done(c, &sp);
	}
}

static const struct ctl_cmd ctl_cmds[CTL_CMD_COUNT] = {
	[CTL_CMD_STATUS] = { ctl_handle_status, NULL },
	[CTL_CMD_STATS_RESET] = { ctl_handle_stats_reset, NULL },
	[CTL_CMD_STATS] = { NULL, ctl_start_stats },
	[CTL_CMD_FLUSH] = { NULL, ctl_start_flush },
	[CTL_CMD_INVALIDATE] = { NULL, ctl_start_invalidate },
	[CTL_CMD_CULL] = { NULL, ctl_start_cull },
};

static void ctl_client_free(struct ctl_client *c)
{
	ev_io_stop(ctl_loop, &c->io);
	ev_timer_stop(ctl_loop, &c->idle);
	close(c->fd);
	free(c->reply);
	free(c);
}

static void ctl_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *c = w->data;

	(void)loop;
	(void)revents;
	while (c->reply_off < c->reply_len) {
		ssize_t n = write(c->fd, c->reply + c->reply_off, c->reply_len - c->reply_off);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			break;
		}
		c->reply_off += (size_t)n;
	}
	ctl_client_free(c);
}

static int ctl_permitted(const struct ctl_client *c)
{
	return c->uid == 0 || c->uid == geteuid() || c->gid == ctl_group || c->in_group;
}

/* Is the socket's group a supplementary group of the peer (SO_PEERGROUPS,
 * Linux 4.13)?  0 when unknown. */
static int ctl_peer_in_group(int fd)
{
#ifdef SO_PEERGROUPS
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0)
		return 0;   /* ERANGE (more than 256 groups) included */
	for (size_t i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == ctl_group)
			return 1;
#else
	(void)fd;
#endif
	return 0;
}

void ctl_send(struct ctl_client *c, char *reply, size_t len)
{
	c->reply = reply;
	c->reply_len = len;
	ev_io_stop(ctl_loop, &c->io);
	ev_io_init(&c->io, ctl_write_cb, c->fd, EV_WRITE);
	c->io.data = c;
	ev_io_start(ctl_loop, &c->io);
}

void ctl_reply_error(struct ctl_client *c, const char *msg)
{
	char *r = xasprintf("error: %s\n", msg);

	ctl_send(c, r, strlen(r));
}

static void ctl_run(struct ctl_client *c)
{
	struct ctl_request req;
	char *body = NULL;
	size_t body_len = 0;
	FILE *out = xopen_memstream(&body, &body_len);
	int rc = -1;

	ctl_parse(c->line.buf, &req);
	int argc = req.argc;
	char **argv = req.argv;
	const struct ctl_cmd_name *name = req.cmd >= 0 ? &ctl_cmd_names[req.cmd] : NULL;
	const struct ctl_cmd *cmd = req.cmd >= 0 ? &ctl_cmds[req.cmd] : NULL;
	if (argc == 0)
		fprintf(out, "empty command");
	else if (!cmd)
		fprintf(out, "unknown command \"%s\" (status, stats, flush, invalidate, cull)", argv[0]);
	else if (name->mutating && !ctl_permitted(c))
		fprintf(out, "permission denied: \"%s%s%s\" needs root, the daemon's user or the socket's group",
			argv[0], name->sub ? " " : "", name->sub ? name->sub : "");
	else if (cmd->start) {
		fclose(out);
		free(body);
		ev_timer_stop(ctl_loop, &c->idle);   /* it takes what it takes */
		ev_io_stop(ctl_loop, &c->io);
		cmd->start(c, argc, argv);
		return;
	} else
		rc = cmd->fn(argc, argv, out);
	fclose(out);

	const char *head = rc == 0 ? "ok\n" : "error: ";
	size_t hl = strlen(head);
	char *reply = xmalloc(hl + body_len + 2);
	memcpy(reply, head, hl);
	memcpy(reply + hl, body, body_len);
	size_t len = hl + body_len;
	if (rc != 0 && (body_len == 0 || body[body_len - 1] != '\n'))
		reply[len++] = '\n';
	free(body);
	ctl_send(c, reply, len);
}

static void ctl_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct ctl_client *c = w->data;

	(void)loop;
	(void)revents;
	ssize_t n = read(c->fd, c->line.buf + c->line.len, sizeof(c->line.buf) - 1 - c->line.len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		ctl_client_free(c);
		return;
	}
	switch (ctl_line_received(&c->line, (size_t)n)) {
	case CTL_LINE_CLOSED:
		ctl_client_free(c);
		break;
	case CTL_LINE_NUL:
		ctl_reply_error(c, "a command is text: NUL byte received");
		break;
	case CTL_LINE_READY:
		ctl_run(c);
		break;
	case CTL_LINE_TOO_LONG:
		ctl_reply_error(c, "command longer than 1023 bytes");
		break;
	case CTL_LINE_MORE:
		break;
	}
}

static void ctl_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	ctl_client_free(w->data);
}

static void ctl_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)w;
	(void)revents;
	int fd = accept4(ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	struct ctl_client *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	c->uid = (uid_t)-1;
	c->gid = (gid_t)-1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0) {
		c->uid = cred.uid;
		c->gid = cred.gid;
	}
	c->in_group = ctl_peer_in_group(fd);
	ev_io_init(&c->io, ctl_read_cb, fd, EV_READ);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	ev_timer_init(&c->idle, ctl_idle_cb, 10.0, 0.);
	c->idle.data = c;
	ev_timer_start(loop, &c->idle);
}

int ctl_init(struct ev_loop *loop, const char *path)
{
	struct sockaddr_un sun;
	struct stat st;

	ctl_loop = loop;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_error("ctl: socket path too long: %s", path);
		return -ENAMETOOLONG;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, path);
	ctl_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl_fd < 0)
		return -errno;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		/* a socket someone still answers on is not ours to replace */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int alive = probe >= 0 && connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0;
		if (probe >= 0)
			close(probe);
		if (alive) {
			log_error("ctl: %s is in use by another running nfscached", path);
			close(ctl_fd);
			ctl_fd = -1;
			return -EADDRINUSE;
		}
		unlink(path);   /* left by a previous run */
	}
	mode_t old = umask(0117);
	int rc = bind(ctl_fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (rc != 0 || listen(ctl_fd, 16) != 0) {
		rc = -errno;
		log_error("ctl: cannot listen on %s: %s", path, strerror(-rc));
		close(ctl_fd);
		ctl_fd = -1;
		return rc;
	}
	chmod(path, 0660);
	ctl_group = stat(path, &st) == 0 ? st.st_gid : (gid_t)-1;
	ctl_path = xstrdup(path);
	ev_io_init(&ctl_io, ctl_accept_cb, ctl_fd, EV_READ);
	ev_io_start(loop, &ctl_io);
	return 0;
}

void ctl_finalise(void)
{
	if (ctl_fd < 0)
		return;
	ev_io_stop(ctl_loop, &ctl_io);
	close(ctl_fd);
	ctl_fd = -1;
	unlink(ctl_path);
	free(ctl_path);
	ctl_path = NULL;
}
