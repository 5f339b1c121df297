/*
 * rpc_poll.h — a libnfs rpc_context driven by the daemon's libev loop: one
 * ev_io that follows rpc_get_fd() and rpc_which_events(), and calls
 * rpc_service() when the socket is ready (libnfs-raw.h, "interfacing the
 * async version of the api into an external eventsystem").  The watcher
 * lives inside struct rpc_poll, which lives inside its owner (libev manual,
 * "Building your own composite watchers"); the owner gets it back with
 * container_of in its `serviced` callback.
 *
 * Owns the watcher, not the context: the owner creates and destroys the
 * rpc_context (stop first), and keeps its own timers (libnfs timeout scans,
 * deadlines, retries), which differ from one owner to the next.
 *
 * libnfs reconnects by dup2()ing a new socket onto the same fd number, and
 * a context that connects again (the portmapper, then the service) may get
 * the same number for a new socket: the watcher is set again (stop, set,
 * start) whenever the fd, the events libnfs wants or the socket behind the
 * fd change, and left alone otherwise.
 */
#ifndef NFSCACHED_RPC_POLL_H
#define NFSCACHED_RPC_POLL_H

#include <ev.h>
#include <sys/types.h>

struct rpc_context;
struct rpc_poll;

/* Called after every rpc_service() the poll made, with its return value
 * (< 0: the context failed; rpc_get_error() says why).  The owner may stop
 * the poll and destroy the context from here: rpc_service() has returned. */
typedef void (*rpc_poll_serviced_fn)(struct rpc_poll *p, int rc);

struct rpc_poll {
	struct ev_loop *loop;
	struct rpc_context *rpc;        /* the context followed; NULL while stopped */
	rpc_poll_serviced_fn serviced;
	ev_io io;                       /* on `fd` for `events`; active only when both are set */
	int fd;                         /* what io was last set to; -1: nothing */
	int events;                     /* EV_READ | EV_WRITE, 0: nothing */
	ino_t sock_ino;                 /* the socket behind fd then; 0: not known */
};

/* Make `p` a stopped poll on `loop`.  Once, before anything else. */
void rpc_poll_init(struct rpc_poll *p, struct ev_loop *loop, rpc_poll_serviced_fn serviced);

/* Follow `rpc` (not owned) from now on, and set the watcher for what it
 * wants now.  `p` must be stopped. */
void rpc_poll_start(struct rpc_poll *p, struct rpc_context *rpc);

/*
 * Set the watcher again if the context's fd, the events it wants, or the
 * socket behind the fd changed since the last update; call after anything
 * that may change them: queueing a call, connecting, and every rpc_service()
 * (the poll's own too: `serviced` decides whether to update or to stop).
 * Returns 1 when the same fd number now holds another socket than at the
 * last update (libnfs reconnected by itself), 0 otherwise.
 */
int rpc_poll_update(struct rpc_poll *p);

/* Forget the socket seen last: the next update sets the watcher again and
 * reports no new socket (a socket the owner knows about, such as the
 * sockets of a mount, is not a reconnection). */
void rpc_poll_forget_socket(struct rpc_poll *p);

/* Stop the watcher and forget the context (the caller may destroy it now).
 * A stopped poll may be started again; stopping a stopped poll is a no-op. */
void rpc_poll_stop(struct rpc_poll *p);

#endif
