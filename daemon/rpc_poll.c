/*
 * rpc_poll.c — the libnfs <-> libev glue: poll(2) events to libev events
 * and back, the watcher kept in step with the context (rpc_poll.h).
 */
#include "config.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>

#include "common/macros.h"
#include "daemon/rpc_poll.h"

static int rpc_poll_ev_events(int poll_events)
{
	return ((poll_events & POLLIN) ? EV_READ : 0) | ((poll_events & POLLOUT) ? EV_WRITE : 0);
}

static int rpc_poll_poll_events(int ev_events)
{
	return ((ev_events & EV_READ) ? POLLIN : 0) | ((ev_events & EV_WRITE) ? POLLOUT : 0);
}

static void rpc_poll_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rpc_poll *p = container_of(w, struct rpc_poll, io);
	int rc;

	(void)loop;
	rc = rpc_service(p->rpc, rpc_poll_poll_events(revents));
	p->serviced(p, rc);
}

void rpc_poll_init(struct rpc_poll *p, struct ev_loop *loop, rpc_poll_serviced_fn serviced)
{
	p->loop = loop;
	p->rpc = NULL;
	p->serviced = serviced;
	ev_io_init(&p->io, rpc_poll_io_cb, 0, EV_READ);
	p->fd = -1;
	p->events = 0;
	p->sock_ino = 0;
}

void rpc_poll_start(struct rpc_poll *p, struct rpc_context *rpc)
{
	p->rpc = rpc;
	rpc_poll_update(p);
}

/* The inode of the socket open on `fd`, 0 if none. */
static ino_t rpc_poll_socket_ino(int fd)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 ? st.st_ino : 0;
}

int rpc_poll_update(struct rpc_poll *p)
{
	int fd = p->rpc ? rpc_get_fd(p->rpc) : -1;
	int events = fd >= 0 ? rpc_poll_ev_events(rpc_which_events(p->rpc)) : 0;
	ino_t ino = rpc_poll_socket_ino(fd);
	int new_socket = fd >= 0 && fd == p->fd && ino != p->sock_ino && p->sock_ino != 0;

	if (fd == p->fd && events == p->events && ino == p->sock_ino)
		return 0;
	ev_io_stop(p->loop, &p->io);
	if (fd >= 0 && events) {
		ev_io_set(&p->io, fd, events);
		ev_io_start(p->loop, &p->io);
	}
	p->fd = fd;
	p->events = events;
	p->sock_ino = ino;
	return new_socket;
}

void rpc_poll_forget_socket(struct rpc_poll *p)
{
	p->sock_ino = 0;
}

void rpc_poll_stop(struct rpc_poll *p)
{
	ev_io_stop(p->loop, &p->io);
	p->rpc = NULL;
	p->fd = -1;
	p->events = 0;
	p->sock_ino = 0;
}
