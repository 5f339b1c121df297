/*
 * stats.h — the daemon's counters (monotonic, zeroed by `stats reset`) and
 * gauges (current values), and their text, JSON and Prometheus renderings.
 * Names are part of the interface contract (DESIGN.md "Counters").
 */
#ifndef NFSCACHED_STATS_H
#define NFSCACHED_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "daemon/stats_list.h"

#define STATS_NFS3_PROCS 22
#define STATS_MOUNT3_PROCS 6

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
};

extern struct nfsd_stats stats;

/* Upper-case RFC 1813 procedure names, index = procedure number. */
extern const char *const stats_nfs3_proc_names[STATS_NFS3_PROCS];
extern const char *const stats_mount3_proc_names[STATS_MOUNT3_PROCS];

enum stats_format { STATS_TEXT, STATS_JSON, STATS_PROMETHEUS };

/* Write every counter and gauge to `out` in `fmt`. */
void stats_write(FILE *out, enum stats_format fmt);

/* Zero the counters; gauges keep their values. */
void stats_reset(void);

#endif
