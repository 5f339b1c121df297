/*
 * delay-relay.c — a TCP relay that delays every byte by a fixed time, the
 * project's stand-in for a far upstream in benchmarks: this kernel has no
 * netem qdisc and cannot load modules, so latency is made in user space.
 *
 *   delay-relay [-q] DELAY_MS LISTEN_ADDR:PORT=TARGET_ADDR:PORT [...]
 *
 * For each mapping it listens on LISTEN (IPv4) and, for every connection it
 * accepts, connects to TARGET and forwards bytes both ways.  Each chunk read
 * is written DELAY_MS (a double; 0 forwards at once) after it was read: a
 * one-way delay per direction, so a round trip gets twice DELAY_MS.  Chunks
 * stay in order and any number of them are in flight, so the delay costs
 * latency, not throughput (up to 16 MiB queued per direction; reading stops
 * beyond that and resumes as the queue drains).  An end of file is delayed
 * like data: the other side's write half is shut down once everything read
 * before it has been delivered.  An error on either socket (reset, refused
 * connect) closes both with a reset.
 *
 * One thread, one libev loop.  SIGTERM and SIGINT exit 0.  Bad arguments
 * exit 2, a listen socket that cannot be set up exits 1.  It owns nothing of
 * nfscached and speaks no RPC: it is a pipe with a clock.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1         /* accept4 */
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <ev.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RELAY_MAX_QUEUED_BYTES (16u << 20)  /* per direction, before reading stops */
#define RELAY_READ_BYTES (256 * 1024)       /* one read, one chunk at most */
#define RELAY_READS_PER_EVENT 16            /* fairness between connections */
#define RELAY_IOV_MAX 64                    /* chunks per writev */
#define RELAY_DELAY_MAX_MS 3600000.0
#define RELAY_ACCEPT_BACKOFF_S 0.1          /* out of file descriptors */
#define RELAY_SPARE_CHUNKS 32               /* full-size chunks kept for reuse */

/* Bytes read at one time; len_bytes == 0 marks the end of file. */
struct relay_chunk {
	struct relay_chunk *next;
	int64_t due_ns;                 /* CLOCK_MONOTONIC at read + delay */
	size_t len_bytes;
	size_t off_bytes;               /* already written, < len_bytes */
	size_t cap_bytes;               /* of data[]: RELAY_READ_BYTES, or len_bytes */
	uint8_t data[];
};

struct relay_session;

/* One socket of a session. */
struct relay_side {
	int fd;
	ev_io read_io;                  /* stopped while `in` is full or at EOF */
	ev_io write_io;                 /* connect in progress, or `out` blocked */
	struct relay_direction *in;     /* bytes read from this socket */
	struct relay_direction *out;    /* bytes written to this socket */
	struct relay_session *session;
};

/* One way of a session: a FIFO of chunks from `from` to `to`.  Chunks before
 * `pending` are due and may be written; `timer_fd` fires at pending->due_ns.
 * A timerfd rather than an ev_timer: libev rounds its epoll timeouts up to
 * whole milliseconds, which would turn 0.5 ms into 1-2 ms. */
struct relay_direction {
	struct relay_side *from, *to;
	struct relay_chunk *head, *tail;
	struct relay_chunk *pending;    /* first chunk not yet due; NULL: all due */
	size_t queued_bytes;            /* data bytes in the FIFO, unwritten */
	int timer_fd;                   /* -1 when the delay is 0 */
	ev_io timer_io;
	int eof_read;                   /* the EOF marker is queued; no more reads */
	int done;                       /* `to` is shut down for writing */
};

struct relay_session {
	struct ev_loop *loop;
	const struct relay_map *map;
	int connected;                  /* the connect to the target completed */
	struct relay_side client, server;
	struct relay_direction up;      /* client -> server */
	struct relay_direction down;    /* server -> client */
};

struct relay_map {
	struct sockaddr_in listen_addr, target_addr;
	char listen_name[32], target_name[32];
	int fd;
	ev_io accept_io;
	ev_timer backoff;
};

static int64_t delay_ns;
static int quiet;
static struct relay_chunk *spare_chunks;     /* full-size, linked through next */
static unsigned n_spare_chunks;

static void relay_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void relay_log(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	fputs("delay-relay: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void *xmalloc(size_t size)
{
	void *p = malloc(size);

	if (!p) {
		fputs("delay-relay: out of memory\n", stderr);
		abort();
	}
	return p;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ---- chunks -------------------------------------------------------------- */

/* Reads go straight into a full-size chunk; one that stays mostly empty (a
 * small RPC) is copied into one of its own size, so that queued small
 * messages do not each hold RELAY_READ_BYTES.  Full-size chunks are recycled:
 * at hundreds of MB/s, malloc and the page faults of fresh memory cost more
 * than the copy would. */
static struct relay_chunk *chunk_new(size_t cap_bytes)
{
	struct relay_chunk *c;

	if (cap_bytes == RELAY_READ_BYTES && spare_chunks) {
		c = spare_chunks;
		spare_chunks = c->next;
		n_spare_chunks--;
	} else {
		c = xmalloc(sizeof(*c) + cap_bytes);
	}
	c->next = NULL;
	c->len_bytes = c->off_bytes = 0;
	c->cap_bytes = cap_bytes;
	return c;
}

/* chunk_free(NULL) is a no-op. */
static void chunk_free(struct relay_chunk *c)
{
	if (c && c->cap_bytes == RELAY_READ_BYTES && n_spare_chunks < RELAY_SPARE_CHUNKS) {
		c->next = spare_chunks;
		spare_chunks = c;
		n_spare_chunks++;
	} else {
		free(c);
	}
}

/* Returns `c` with `len` bytes, or a right-sized copy (freeing `c`). */
static struct relay_chunk *chunk_fit(struct relay_chunk *c, size_t len)
{
	struct relay_chunk *small;

	c->len_bytes = len;
	if (len >= c->cap_bytes / 4)
		return c;
	small = chunk_new(len);
	small->len_bytes = len;
	memcpy(small->data, c->data, len);
	chunk_free(c);
	return small;
}

/* ---- sessions ------------------------------------------------------------ */

static void direction_clear(struct ev_loop *loop, struct relay_direction *d)
{
	struct relay_chunk *c = d->head, *next;

	if (d->timer_fd >= 0) {
		ev_io_stop(loop, &d->timer_io);
		close(d->timer_fd);
		d->timer_fd = -1;
	}

	for (; c; c = next) {
		next = c->next;
		chunk_free(c);
	}
	d->head = d->tail = d->pending = NULL;
	d->queued_bytes = 0;
}

/* Closes both sockets and frees the session.  `reset`: close with an RST so
 * that a peer sees the error the other peer caused. */
static void session_free(struct relay_session *s, int reset)
{
	struct relay_side *sides[2] = { &s->client, &s->server };
	struct linger lg = { 1, 0 };

	for (int i = 0; i < 2; i++) {
		ev_io_stop(s->loop, &sides[i]->read_io);
		ev_io_stop(s->loop, &sides[i]->write_io);
		if (reset)
			setsockopt(sides[i]->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(sides[i]->fd);
	}
	direction_clear(s->loop, &s->up);
	direction_clear(s->loop, &s->down);
	free(s);
}

/* An error on a socket ends the session; resets and broken pipes are how
 * peers leave, anything else is worth a line. */
static void session_abort(struct relay_session *s, const char *what, int err)
{
	if (err != ECONNRESET && err != EPIPE)
		relay_log("%s -> %s: %s: %s", s->map->listen_name, s->map->target_name,
			  what, strerror(err));
	session_free(s, 1);
}

/* Reading from `d->from` runs while its FIFO is below the bound and no EOF
 * was seen; the server side is read only once connected. */
static void direction_update_read(struct relay_direction *d)
{
	struct relay_session *s = d->from->session;
	int want = !d->eof_read && d->queued_bytes < RELAY_MAX_QUEUED_BYTES &&
		   (s->connected || d->from == &s->client);

	if (want)
		ev_io_start(s->loop, &d->from->read_io);
	else
		ev_io_stop(s->loop, &d->from->read_io);
}

/* Writes the chunks that are due to `d->to`.  Returns 0, or -1 when the
 * session was freed (both directions done, or an error). */
static int direction_flush(struct relay_direction *d)
{
	struct relay_session *s = d->to->session;
	struct iovec iov[RELAY_IOV_MAX];
	struct relay_chunk *c;
	ssize_t n;
	int niov;

	if (!s->connected || d->done)
		return 0;
	while (d->head && d->head != d->pending) {
		if (d->head->len_bytes == 0) {       /* the EOF marker: half close */
			c = d->head;
			d->head = c->next;
			if (!d->head)
				d->tail = NULL;
			chunk_free(c);
			ev_io_stop(s->loop, &d->to->write_io);
			if (shutdown(d->to->fd, SHUT_WR) < 0 && errno != ENOTCONN) {
				session_abort(s, "shutdown", errno);
				return -1;
			}
			d->done = 1;
			if (s->up.done && s->down.done) {
				session_free(s, 0);
				return -1;
			}
			return 0;
		}
		niov = 0;
		for (c = d->head; c && c != d->pending && c->len_bytes && niov < RELAY_IOV_MAX;
		     c = c->next) {
			iov[niov].iov_base = c->data + c->off_bytes;
			iov[niov].iov_len = c->len_bytes - c->off_bytes;
			niov++;
		}
		n = writev(d->to->fd, iov, niov);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				ev_io_start(s->loop, &d->to->write_io);
				direction_update_read(d);
				return 0;
			}
			session_abort(s, "write", errno);
			return -1;
		}
		d->queued_bytes -= (size_t)n;
		while (n > 0) {
			c = d->head;
			if ((size_t)n < c->len_bytes - c->off_bytes) {
				c->off_bytes += (size_t)n;
				break;
			}
			n -= (ssize_t)(c->len_bytes - c->off_bytes);
			d->head = c->next;
			if (!d->head)
				d->tail = NULL;
			chunk_free(c);
		}
	}
	ev_io_stop(s->loop, &d->to->write_io);
	direction_update_read(d);
	return 0;
}

/* Arms the direction's timer for the absolute time `due_ns`; one in the past
 * fires at once. */
static void direction_arm(struct relay_direction *d, int64_t due_ns)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	its.it_value.tv_sec = due_ns / 1000000000;
	its.it_value.tv_nsec = due_ns % 1000000000;
	if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0)
		its.it_value.tv_nsec = 1;     /* all zero would disarm */
	if (timerfd_settime(d->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		fprintf(stderr, "delay-relay: timerfd_settime: %s\n", strerror(errno));
		exit(3);
	}
}

/* Appends `c` (len_bytes 0: EOF) read at `now_ns`; it is due `delay_ns`
 * later.  Takes `c`. */
static void direction_push(struct relay_direction *d, struct relay_chunk *c, int64_t now_ns)
{
	c->next = NULL;
	c->due_ns = now_ns + delay_ns;
	if (d->tail)
		d->tail->next = c;
	else
		d->head = c;
	d->tail = c;
	d->queued_bytes += c->len_bytes;
	if (delay_ns > 0 && !d->pending) {
		d->pending = c;
		direction_arm(d, c->due_ns);
	}
}

/* The timer expired: release every chunk due by now, re-arm for the next. */
static void direction_timer_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct relay_direction *d = w->data;
	uint64_t expirations;
	int64_t now_ns;

	(void)loop;
	(void)revents;
	if (read(d->timer_fd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return;
	if (!d->pending)
		return;
	now_ns = mono_ns();
	while (d->pending && d->pending->due_ns <= now_ns)
		d->pending = d->pending->next;
	if (d->pending)
		direction_arm(d, d->pending->due_ns);
	direction_flush(d);
}

static void side_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct relay_side *side = w->data;
	struct relay_direction *d = side->in;
	struct relay_chunk *c = NULL;
	ssize_t n;
	int64_t now_ns;

	(void)loop;
	(void)revents;
	for (int i = 0; i < RELAY_READS_PER_EVENT && !d->eof_read &&
			d->queued_bytes < RELAY_MAX_QUEUED_BYTES; i++) {
		if (!c)
			c = chunk_new(RELAY_READ_BYTES);
		n = read(side->fd, c->data, c->cap_bytes);
		now_ns = mono_ns();
		if (n > 0) {
			direction_push(d, chunk_fit(c, (size_t)n), now_ns);
			c = NULL;
			if ((size_t)n < RELAY_READ_BYTES)
				break;
		} else if (n == 0) {
			direction_push(d, chunk_fit(c, 0), now_ns);
			c = NULL;
			d->eof_read = 1;
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			break;
		} else {
			chunk_free(c);
			session_abort(side->session, "read", errno);
			return;
		}
	}
	chunk_free(c);
	direction_update_read(d);
	if (delay_ns == 0)
		direction_flush(d);
}

/* Connect completion on the server side, then writability of either. */
static void side_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct relay_side *side = w->data;
	struct relay_session *s = side->session;
	int err = 0;
	socklen_t len = sizeof(err);

	(void)revents;
	if (!s->connected) {
		if (getsockopt(side->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err == EINPROGRESS)
			return;
		if (err) {
			relay_log("connect %s: %s", s->map->target_name, strerror(err));
			session_free(s, 1);
			return;
		}
		s->connected = 1;
		ev_io_stop(loop, w);
		direction_update_read(&s->down);
	}
	direction_flush(side->out);
}

static void side_init(struct relay_session *s, struct relay_side *side, int fd,
		      struct relay_direction *in, struct relay_direction *out)
{
	side->fd = fd;
	side->in = in;
	side->out = out;
	side->session = s;
	ev_io_init(&side->read_io, side_read_cb, fd, EV_READ);
	ev_io_init(&side->write_io, side_write_cb, fd, EV_WRITE);
	side->read_io.data = side;
	side->write_io.data = side;
}

/* Returns 0, or -errno when the timerfd cannot be made. */
static int direction_init(struct ev_loop *loop, struct relay_direction *d,
			  struct relay_side *from, struct relay_side *to)
{
	memset(d, 0, sizeof(*d));
	d->from = from;
	d->to = to;
	d->timer_fd = -1;
	if (delay_ns == 0)
		return 0;
	d->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->timer_fd < 0)
		return -errno;
	ev_io_init(&d->timer_io, direction_timer_cb, d->timer_fd, EV_READ);
	d->timer_io.data = d;
	ev_io_start(loop, &d->timer_io);
	return 0;
}

/* Takes `client_fd`; starts the connect to the map's target. */
static void session_start(struct ev_loop *loop, const struct relay_map *map, int client_fd)
{
	struct relay_session *s;
	int fd, err;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		relay_log("socket: %s", strerror(errno));
		close(client_fd);
		return;
	}
	set_nodelay(client_fd);
	set_nodelay(fd);
	s = xmalloc(sizeof(*s));
	memset(s, 0, sizeof(*s));
	s->loop = loop;
	s->map = map;
	side_init(s, &s->client, client_fd, &s->up, &s->down);
	side_init(s, &s->server, fd, &s->down, &s->up);
	s->up.timer_fd = s->down.timer_fd = -1;     /* for session_free */
	if ((err = direction_init(loop, &s->up, &s->client, &s->server)) < 0 ||
	    (err = direction_init(loop, &s->down, &s->server, &s->client)) < 0) {
		relay_log("timerfd: %s", strerror(-err));
		session_free(s, 1);
		return;
	}

	if (connect(fd, (const struct sockaddr *)&map->target_addr,
		    sizeof(map->target_addr)) == 0) {
		s->connected = 1;
	} else if (errno != EINPROGRESS) {
		relay_log("connect %s: %s", map->target_name, strerror(errno));
		session_free(s, 1);
		return;
	} else {
		ev_io_start(loop, &s->server.write_io);
	}
	direction_update_read(&s->up);
	direction_update_read(&s->down);
}

/* ---- listeners ----------------------------------------------------------- */

static void map_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct relay_map *map = w->data;
	int fd;

	(void)revents;
	for (;;) {
		fd = accept4(map->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			session_start(loop, map, fd);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
			relay_log("accept %s: %s", map->listen_name, strerror(errno));
			ev_io_stop(loop, &map->accept_io);
			ev_timer_set(&map->backoff, RELAY_ACCEPT_BACKOFF_S, 0.);
			ev_timer_start(loop, &map->backoff);
		}
		return;
	}
}

static void map_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct relay_map *map = w->data;

	(void)revents;
	ev_io_start(loop, &map->accept_io);
}

/* Binds and listens; returns 0 or -errno. */
static int map_listen(struct ev_loop *loop, struct relay_map *map)
{
	int one = 1, err;

	map->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (map->fd < 0)
		return -errno;
	setsockopt(map->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(map->fd, (const struct sockaddr *)&map->listen_addr,
		 sizeof(map->listen_addr)) < 0 || listen(map->fd, 128) < 0) {
		err = -errno;
		close(map->fd);
		map->fd = -1;
		return err;
	}
	ev_io_init(&map->accept_io, map_accept_cb, map->fd, EV_READ);
	map->accept_io.data = map;
	ev_init(&map->backoff, map_backoff_cb);
	map->backoff.data = map;
	ev_io_start(loop, &map->accept_io);
	return 0;
}

/* ---- arguments ----------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: delay-relay [-q] DELAY_MS LISTEN_ADDR:PORT=TARGET_ADDR:PORT [...]\n"
	      "  Forwards TCP from each LISTEN to its TARGET (IPv4), delaying each\n"
	      "  direction by DELAY_MS milliseconds (a number >= 0, e.g. 5 or 0.5).\n"
	      "  -q  print nothing but fatal errors\n", f);
}

/* "A.B.C.D:PORT" into `sa` and a canonical `name`; 0, or -EINVAL. */
static int parse_addr(const char *s, size_t len, struct sockaddr_in *sa,
		      char *name, size_t name_size)
{
	char host[INET_ADDRSTRLEN], *end;
	const char *colon = memchr(s, ':', len);
	unsigned long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host) || colon == s)
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -EINVAL;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end != s + len || end == colon + 1 || colon[1] == '-' ||
	    colon[1] == '+' || port == 0 || port > 65535)
		return -EINVAL;
	sa->sin_port = htons((uint16_t)port);
	snprintf(name, name_size, "%s:%lu", host, port);
	return 0;
}

static int parse_map(const char *arg, struct relay_map *map)
{
	const char *eq = strchr(arg, '=');

	if (!eq)
		return -EINVAL;
	if (parse_addr(arg, (size_t)(eq - arg), &map->listen_addr,
		       map->listen_name, sizeof(map->listen_name)) < 0)
		return -EINVAL;
	return parse_addr(eq + 1, strlen(eq + 1), &map->target_addr,
			  map->target_name, sizeof(map->target_name));
}

static int parse_delay(const char *arg, double *ms)
{
	char *end;

	errno = 0;
	*ms = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(*ms) || *ms < 0 ||
	    *ms > RELAY_DELAY_MAX_MS)
		return -EINVAL;
	return 0;
}

static void stop_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

int main(int argc, char **argv)
{
	struct ev_loop *loop;
	struct relay_map *maps;
	ev_signal sigterm, sigint;
	double delay_ms;
	int opt, nmaps, err;

	while ((opt = getopt(argc, argv, "+qh")) != -1) {
		switch (opt) {
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	if (parse_delay(argv[optind], &delay_ms) < 0) {
		fprintf(stderr, "delay-relay: %s: not a delay in ms (0 to %.0f)\n",
			argv[optind], RELAY_DELAY_MAX_MS);
		usage(stderr);
		return 2;
	}
	delay_ns = (int64_t)(delay_ms * 1e6 + 0.5);
	nmaps = argc - optind - 1;
	maps = xmalloc(sizeof(*maps) * (size_t)nmaps);
	for (int i = 0; i < nmaps; i++) {
		if (parse_map(argv[optind + 1 + i], &maps[i]) < 0) {
			fprintf(stderr, "delay-relay: %s: not LISTEN_ADDR:PORT=TARGET_ADDR:PORT "
				"(IPv4, ports 1-65535)\n", argv[optind + 1 + i]);
			usage(stderr);
			return 2;
		}
	}

	signal(SIGPIPE, SIG_IGN);
	loop = ev_default_loop(EVFLAG_AUTO);
	if (!loop) {
		fputs("delay-relay: cannot initialise libev\n", stderr);
		return 1;
	}
	for (int i = 0; i < nmaps; i++) {
		err = map_listen(loop, &maps[i]);
		if (err < 0) {
			fprintf(stderr, "delay-relay: listen %s: %s\n", maps[i].listen_name,
				strerror(-err));
			return 1;
		}
	}
	/* Every listener is up before the first line: a script may wait for it. */
	for (int i = 0; i < nmaps; i++)
		relay_log("%s -> %s, %.3f ms each way", maps[i].listen_name,
			  maps[i].target_name, delay_ms);

	ev_signal_init(&sigterm, stop_cb, SIGTERM);
	ev_signal_init(&sigint, stop_cb, SIGINT);
	ev_signal_start(loop, &sigterm);
	ev_signal_start(loop, &sigint);
	ev_run(loop, 0);
	return 0;
}
