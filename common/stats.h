/*
 * stats.h — the daemon's counters (monotonic, zeroed by `stats reset`) and
 * gauges (current values), and their text, JSON and Prometheus renderings.
 * Names are part of the interface contract (DESIGN.md "Counters").
 */
#ifndef NFSCACHED_STATS_H
#define NFSCACHED_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "common/stats_list.h"

#define STATS_NFS3_PROCS 22
#define STATS_MOUNT3_PROCS 6

/*
 * Round trips of NFSv3 calls to the upstream, one histogram per procedure
 * (a Prometheus histogram: DESIGN.md "Counters").  STATS_RTT_BOUNDS finite
 * upper bounds in seconds, ascending, from 100 us to 10 s; a round trip
 * equal to a bound is counted in that bound's bucket (Prometheus `le`).
 * Storage is not cumulative: bucket[i] counts round trips in
 * (bound[i-1], bound[i]], bucket[STATS_RTT_BOUNDS] those above the last
 * bound; the renderings of stats_write() add them up, so that the bucket
 * `le="+Inf"` equals `count`.
 */
#define STATS_RTT_BOUNDS 16

struct stats_rtt_bound {
	double seconds;       /* the upper bound */
	const char *label;    /* its `le` text, as the renderings print it */
};

extern const struct stats_rtt_bound stats_rtt_bounds[STATS_RTT_BOUNDS];

struct stats_rtt {
	uint64_t bucket[STATS_RTT_BOUNDS + 1];   /* round trips per bucket, not cumulative */
	uint64_t count;                          /* round trips observed: sum of bucket[] */
	uint64_t sum_us;                         /* their sum, microseconds (each rounded) */
};

struct nfsd_stats {
#define X(field, name, help) uint64_t field;
	STATS_COUNTERS(X)
	STATS_CACHE_COUNTERS(X)
	STATS_GAUGES(X)
#undef X
	uint64_t nfs3_calls[STATS_NFS3_PROCS];        /* by NFSv3 procedure number */
	uint64_t mount3_calls[STATS_MOUNT3_PROCS];    /* by MOUNTv3 procedure number */
	uint64_t upstream_nfs3[STATS_NFS3_PROCS];
	uint64_t upstream_mount3[STATS_MOUNT3_PROCS];
	struct stats_rtt upstream_rtt[STATS_NFS3_PROCS];  /* by NFSv3 procedure number */
};

extern struct nfsd_stats stats;

/* Upper-case RFC 1813 procedure names, index = procedure number. */
extern const char *const stats_nfs3_proc_names[STATS_NFS3_PROCS];
extern const char *const stats_mount3_proc_names[STATS_MOUNT3_PROCS];

/* Count one round trip of `seconds` of an NFSv3 call of procedure `proc`
 * (0 to STATS_NFS3_PROCS - 1) answered by the upstream: the time from its
 * hand-over to the RPC library to its reply.  A negative time (the wall
 * clock stepped back) counts as 0, one above 10^6 s as 10^6 s; an unknown
 * procedure is ignored. */
void stats_rtt_observe(unsigned proc, double seconds);

enum stats_format { STATS_TEXT, STATS_JSON, STATS_PROMETHEUS };

/*
 * Write every counter and gauge to `out` in `fmt`; JSON and Prometheus
 * include the per-export counters (text has them in `stats exports`).
 * Then the round-trip histograms of the procedures with a count above 0,
 * buckets cumulative, PROC as in stats_nfs3_proc_names:
 *   text        upstream.rtt.PROC{le="0.0001"} N ... upstream.rtt.PROC{le="+Inf"} N,
 *               upstream.rtt.PROC.count N, upstream.rtt.PROC.sum_us N
 *   JSON        "upstream.rtt.PROC.le.0.0001":N ... "upstream.rtt.PROC.le.+Inf":N,
 *               "upstream.rtt.PROC.count":N, "upstream.rtt.PROC.sum_us":N
 *   Prometheus  the family nfscached_upstream_rtt_seconds (one HELP and TYPE
 *               histogram line, written only when some procedure has a
 *               count): _bucket{proc="PROC",le="0.0001"} N ... le="+Inf",
 *               _sum{proc="PROC"} in seconds (6 decimals), _count{proc="PROC"}
 */
void stats_write(FILE *out, enum stats_format fmt);

/*
 * Per-export READ counters (`stats exports`).  An object is counted under
 * the upstream file system its attributes name: fattr3 fsid (RFC 1813
 * §2.6) is in every attribute reply, so no record of the MNT a client came
 * through is needed, and a file reached through any handle or connection
 * counts where it lives.  The control socket names file systems by
 * mounting the upstream's exports and reading the fsid of their roots
 * (ctl.c); exports on one upstream file system share one fsid, and so one
 * line, named by all of them.
 */
#define STATS_EXPORTS_MAX 64

struct stats_export_counts {
#define X(field, name, help) uint64_t field;
	STATS_EXPORT_COUNTERS(X)
#undef X
};

/* The counters of file system `fsid`, or with known = 0 of objects whose
 * attributes are not known yet (named "-", as are file systems past
 * STATS_EXPORTS_MAX).  Never NULL. */
struct stats_export_counts *stats_export(int known, uint64_t fsid);

/* `path`, an upstream export, has its root on file system `fsid`. */
void stats_export_name(uint64_t fsid, const char *path);

/* 1 when some file system counted has no export name yet. */
int stats_export_unnamed(void);

/* Write the per-export counters alone: text lines
 * `cache.read.hits{export="/PATH"} N`, JSON one flat object of
 * "exports./PATH.cache.read.hits" keys, Prometheus
 * `nfscached_export_cache_read_hits_total{export="/PATH"} N`. */
void stats_write_exports(FILE *out, enum stats_format fmt);

/* Zero the counters and the round-trip histograms; gauges keep their values. */
void stats_reset(void);

#endif
