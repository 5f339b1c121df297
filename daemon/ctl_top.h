/*
 * ctl_top.h — `nfscachectl top`: a live view of the daemon's rates, made
 * from two samples of the control socket's `stats` (text) and `status`
 * replies taken one interval apart.
 *
 * The computing (parsing `name value` lines, deltas, rates, histogram
 * quantiles, one frame of text lines: ctl_top.c) is kept apart from the
 * program (sampling with deadlines, curses on a terminal, plain text
 * otherwise: ctl_top_screen.c) so that it can be tested without a daemon
 * or a terminal.  Part of nfscachectl only.
 */
#ifndef NFSCACHED_CTL_TOP_H
#define NFSCACHED_CTL_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- one reply, parsed ------------------------------------------------- */

/* One line of a reply: the first word and the rest of the line. */
struct top_var {
	char *name;                 /* e.g. "cache.read.hits", "upstream.rtt.READ{le=\"0.001\"}" */
	char *value;                /* the rest of the line after one space, e.g. "12" or "connected" */
};

/* All lines of one reply; owns its strings. */
struct top_vars {
	struct top_var *v;          /* in reply order; names are not checked for duplicates */
	size_t n, cap;              /* used, allocated entries */
};

/* Parse `text` (the body of a `stats` or `status` reply: lines "NAME VALUE",
 * NAME one word, VALUE the rest of the line; the "ok" line already removed)
 * into *vars, which must be zeroed or freed before.  Empty lines are
 * skipped; control bytes in names and values are kept as '?'
 * (top_text_printable).  Returns the number of lines kept, or -EINVAL
 * (with *vars emptied) at a non-empty line with no space or with an empty
 * name or value.  Allocation failure aborts. */
int top_vars_parse(struct top_vars *vars, const char *text);

/* Free the strings and array of *vars and zero it; NULL or an empty
 * *vars is a no-op. */
void top_vars_free(struct top_vars *vars);

/* The value of the line named `name` (the first such line), or NULL. */
const char *top_vars_str(const struct top_vars *vars, const char *name);

/* The value of the line named `name` as a decimal unsigned integer into
 * *out.  Returns 0, -ENOENT when there is no such line, -EINVAL when its
 * value is not a whole decimal number below 2^64. */
int top_vars_u64(const struct top_vars *vars, const char *name, uint64_t *out);

/* ---- two samples -------------------------------------------------------- */

/* What the daemon said at one moment. */
struct top_sample {
	double t_s;                 /* CLOCK_MONOTONIC when `stats` was asked, seconds */
	struct top_vars stats;      /* reply to `stats` */
	struct top_vars status;     /* reply to `status` */
};

void top_sample_free(struct top_sample *s);

/* How much a counter went up from `prev` to `cur`.  A counter going down
 * was zeroed in between (`stats reset`): its new value is the increase. */
uint64_t top_counter_delta(uint64_t prev, uint64_t cur);

/* The increase of counter `name` of `stats` from `prev` to `cur`
 * (top_counter_delta; a counter missing in `prev` counts from 0).  Returns
 * 0 with *out set, or -ENOENT when `cur` lacks it. */
int top_stats_delta(const struct top_sample *prev, const struct top_sample *cur,
		    const char *name, uint64_t *out);

/* `delta` per second over `interval_s` (> 0); 0 when interval_s <= 0. */
double top_rate(uint64_t delta, double interval_s);

/* ---- histogram quantiles ---------------------------------------------- */

/* The q-quantile (0 <= q <= 1) of observations given as cumulative bucket
 * counts: counts[i] observations <= bounds_s[i] for i < n_bounds, and
 * counts[n_bounds] all observations (the +Inf bucket).  As Prometheus'
 * histogram_quantile(): the bucket the rank q * total falls in is found,
 * and the value interpolated linearly between its lower bound (the bucket
 * before's upper bound, 0 for the first) and its upper bound; a rank in
 * the +Inf bucket answers the highest finite bound.  Returns 0 with
 * *out_s set, or -ENOENT when there is no observation. */
int top_quantile(double q, const double *bounds_s, const uint64_t *counts, size_t n_bounds,
		 double *out_s);

/* The q-quantile of the round trips of procedure `proc` ("READ", ...; NULL:
 * all procedures together) made between `prev` and `cur`, from the bucket
 * deltas of upstream.rtt.PROC{le="..."}.  When any bucket or the count of
 * a procedure went down (`stats reset`), that procedure's values in `cur`
 * are its deltas.  Returns 0 with *out_s set, or -ENOENT when no call was
 * measured in between. */
int top_rtt_quantile(const struct top_sample *prev, const struct top_sample *cur,
		     const char *proc, double q, double *out_s);

/* ---- one frame ---------------------------------------------------------- */

#define TOP_BUSIEST 5           /* procedures shown by their rate, at most */
#define TOP_RTT_PROCS 3         /* READ, GETATTR, WRITE */

/* A quantity that may be unknown (`-`). */
struct top_num {
	int known;                  /* 0: shown as "-" */
	double v;
};

/* Everything the view shows, computed from two samples. */
struct top_frame {
	double interval_s;          /* measured between the two `stats` requests */
	double calls_per_s;         /* nfs3.calls.* + mount3.calls.* */
	struct {
		const char *name;   /* "READ", "MNT" ...; NULL: unused slot */
		double per_s;
	} busiest[TOP_BUSIEST];     /* highest rate first, rates > 0 only */
	double read_hits_per_s, read_partial_per_s, read_misses_per_s;
	struct top_num read_hit_ratio;  /* (hits + partial) / all READs, 0..1 */
	double ns_hits_per_s, ns_misses_per_s;  /* attr, lookup (+negative), readdir, access */
	struct top_num ns_hit_ratio;    /* 0..1 */
	double local_bytes_per_s;       /* cache.read.bytes_local */
	double upstream_bytes_per_s;    /* cache.read.bytes_upstream */
	double write_bytes_per_s;       /* cache.write.bytes */
	double writeback_bytes_per_s;   /* cache.writeback.bytes */
	struct top_num rtt_p50_s, rtt_p99_s;    /* all procedures */
	struct {
		const char *proc;
		struct top_num p50_s, p99_s;
	} rtt[TOP_RTT_PROCS];
	const char *srtt_ms;            /* status upstream_srtt_ms, "-" when absent */
	struct top_num dirty_bytes, unwritten_bytes, cache_objects, cache_bytes;
	const char *cache_state;        /* status `cache`: caching, culling, stopped, off */
	const char *upstream_state;     /* status `upstream` */
	const char *state;              /* status `state`: serving, stopping */
	const char *version;
	struct top_num uptime_s, connections, upstream_connections, calls_in_flight;
};

/* Compute *f from `prev` and `cur` (cur taken after prev; with prev NULL
 * the rates are 0 and unknown quantities "-": a first frame).  The
 * strings of *f point into `cur`, valid while it is. */
void top_frame_compute(struct top_frame *f, const struct top_sample *prev,
		       const struct top_sample *cur);

/* Write the frame as text lines (each ending "\n", at most 79 columns, no
 * escape codes) to `out`. */
void top_frame_write(FILE *out, const struct top_frame *f);

/* ---- the program (ctl_top_screen.c) ----------------------------------------- */

#define TOP_ANSWER_MIN_S 5.0    /* the shortest wait for one answer, seconds */

/* How long top waits for the whole answer to one request, seconds: the
 * interval, but at least TOP_ANSWER_MIN_S. */
double top_answer_timeout_s(double interval_s);

/* Replace in the NUL-terminated `s` every control byte (below 0x20, and
 * 0x7f) by '?', so that text that came from the socket cannot drive the
 * terminal it is printed on.  Bytes from 0x80 up (UTF-8) are kept. */
void top_text_printable(char *s);

/* How a request waits where its socket would block: until `fd` is ready
 * for `events` (POLLIN, POLLOUT), or, with fd -1, for a short pause
 * (TOP_RETRY_MS, for a retry), reading keys and watching signals
 * meanwhile.  Returns 0 when the request may go on (fd ready, or the
 * pause over: a retry finds out which), -ETIMEDOUT when the request's
 * deadline passed, -ECANCELED when the user asked to quit (q, SIGINT,
 * SIGTERM, SIGHUP).  `ctx` belongs to top_run(). */
typedef int top_wait_fn(void *ctx, int fd, short events);

#define TOP_RETRY_MS 50         /* the pause of a wait with fd -1 */

/* Ask the daemon `line` (one command ending "\n") and return its whole
 * answer without the "ok" line (malloc'd, NUL-terminated, owned by the
 * caller) in *reply.  It must not block: where its socket would, it calls
 * wait(wait_ctx, fd, events) and gives up with any negative value that
 * returns.  Returns 0; 1 with `why` (a message for the user; it may hold
 * the socket's text) filled and no *reply when the daemon answers
 * "error: ..." or something that is not an answer; -ETIMEDOUT or
 * -ECANCELED from `wait` (`why` untouched); another -errno with `why`
 * filled when the daemon cannot be reached or closes without answering. */
typedef int top_request_fn(void *arg, const char *line, top_wait_fn *wait, void *wait_ctx,
			   char **reply, char *why, size_t why_len);

struct top_opts {
	double interval_s;          /* between samples, > 0 */
	double answer_timeout_s;    /* per request; 0: top_answer_timeout_s(interval_s) */
	int once;                   /* print one frame as plain text and return */
	top_request_fn *request;
	void *request_arg;
};

/* Run the view: on a terminal (stdout a tty and !once) refresh a curses
 * screen every interval until `q` (read from stdin when it is a terminal),
 * SIGINT, SIGTERM or SIGHUP; otherwise take two samples one interval
 * apart, print one frame to stdout and return.  Every request has a
 * deadline (answer_timeout_s); on the screen keys and signals are
 * answered while a request waits too.  Returns the exit status of
 * nfscachectl(8): 0, 1 when the daemon answers an error, 2 when it cannot
 * be reached or does not answer in time (the screen left and the reason
 * printed to stderr, control bytes as '?', first). */
int top_run(const struct top_opts *o);

#endif
