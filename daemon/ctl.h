/*
 * ctl.h — the control socket (unix stream, control.socket, mode 0660).
 *
 * Protocol: the client writes one command line; the daemon answers with a
 * first line "ok" or "error: MESSAGE", then the body, and closes.  Commands
 * are small ctl_handle_<cmd>() functions in one table (chrony cmdmon.c);
 * those that change state (stats reset, flush, invalidate) need root, the
 * daemon's own user, or the socket's group; others are answered "error:
 * permission denied: ...".  stats, flush and invalidate may be answered
 * later: they wait for the upstream (write-back, MOUNT EXPORT, MNT,
 * LOOKUP, GETATTR).  The request line itself (gathering, words, command
 * names) is parsed by ctl_parse.h, which needs no socket.
 */
#ifndef NFSCACHED_CTL_H
#define NFSCACHED_CTL_H

#include <ev.h>

/* Listen on `path` (a stale socket file is replaced).  Returns 0, or -errno
 * after logging. */
int ctl_init(struct ev_loop *loop, const char *path);

/* Close the listener and every client, remove the socket file. */
void ctl_finalise(void);

#endif
