/*
 * metrics.h — the Prometheus endpoint: `GET /metrics` over HTTP on
 * metrics.listen, answered with the text exposition format (version 0.0.4)
 * that `nfscachectl stats --prometheus` writes.  HTTP is libmicrohttpd's,
 * run from the daemon's libev loop (no thread of its own).
 */
#ifndef NFSCACHED_METRICS_H
#define NFSCACHED_METRICS_H

#include <ev.h>

#include "daemon/conf.h"

/*
 * Listen on cfg->metrics_addr when metrics.listen is set (nothing to do,
 * and 0, when it is empty).  Port 0 picks a free port, logged at info
 * level.  Returns 0, or -errno after logging when the socket cannot be
 * bound or the HTTP server not started.  Does not block.
 */
int metrics_init(struct ev_loop *loop, const struct nfsd_conf *cfg);

/* Close the listening socket and every HTTP connection.  A no-op when
 * metrics_init() started nothing. */
void metrics_finalise(void);

/* "ADDRESS:PORT" the endpoint listens on (the port chosen when port 0 was
 * asked), or "off".  Owned by this module, valid until metrics_finalise(). */
const char *metrics_address(void);

#endif
