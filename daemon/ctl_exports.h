/*
 * ctl_exports.h — the control commands that walk the upstream (ctl_exports.c),
 * and the replies of the control socket server (ctl.c) they answer with.
 * Internal to the control socket, but for ctl_stats_name_exports(), which
 * the HTTP metrics endpoint (metrics.c) calls too: main.c uses ctl.h only.
 *
 * A command answered later is started by ctl.c's command table with the
 * client's read watcher and idle timer stopped; it answers exactly once,
 * with ctl_send() or ctl_reply_error(), either from inside its start
 * function (usage errors, answers that need no upstream) or later, from an
 * upstream or write-back callback.  After answering it never touches the
 * client again.
 */
#ifndef NFSCACHED_CTL_EXPORTS_H
#define NFSCACHED_CTL_EXPORTS_H

#include <stddef.h>

struct ctl_client;   /* one control connection (ctl.c); opaque here */

/* ---- ctl.c: replies ---------------------------------------------------- */

/*
 * Answer client `c` with `reply` (`len` bytes: "ok\n" + body, or
 * "error: MESSAGE\n"), which must be malloc'd: ctl.c owns it from now on.
 * The reply is written as the socket takes it, then the client is closed
 * and freed: `c` must not be used after this call.  Once per client.
 */
void ctl_send(struct ctl_client *c, char *reply, size_t len);

/* ctl_send() of "error: `msg`\n"; `msg` is copied. */
void ctl_reply_error(struct ctl_client *c, const char *msg);

/* ---- ctl_exports.c: commands that walk the upstream -------------------- */

/*
 * stats [exports] [--json|--prometheus] (argv[0] "stats", argc words).
 * `stats exports` first names every export's file system in the
 * per-export counters (MOUNT EXPORT, then MNT and GETATTR of each export's
 * root: its fsid gets the export's name, stats_export_name()), and answers
 * with what is known when the upstream is not up or stops answering.  The
 * other forms answer at once; JSON and Prometheus then start one naming
 * walk in the background when a file system counted has no name yet (at
 * most one at a time; it belongs to no client and ends when the upstream
 * answers, fails, or is freed).
 */
void ctl_start_stats(struct ctl_client *c, int argc, char **argv);

/*
 * After a scrape (`stats --json`, `stats --prometheus`, GET /metrics):
 * start the background naming walk of `stats` above when the upstream is
 * up, some file system counted has no export name yet (stats.h
 * stats_export_unnamed()) and no walk is running.  Returns at once; the
 * names appear in the per-export counters as the upstream answers.  Never
 * blocks, never waits for the upstream.
 */
void ctl_stats_name_exports(void);

/*
 * invalidate EXPORT/PATH | --all (argv[0] "invalidate", argc words; the
 * caller has checked the peer may change state).  EXPORT/PATH: MOUNT
 * EXPORT, MNT of the longest export leading the path, a LOOKUP per
 * component, then the cached regular file's dirty data is written back
 * (writeback_flush) and its clean data dropped (cache_invalidate).  --all:
 * every dirty byte written back (writeback_flush_all), then every object's
 * clean data dropped; answered "ok\nobjects N\n".  Nothing is dropped when
 * the write-back fails.  Upstream calls use uid 0.
 */
void ctl_start_invalidate(struct ctl_client *c, int argc, char **argv);

#endif
