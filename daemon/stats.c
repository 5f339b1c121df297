/*
 * stats.c — counter storage and rendering.  Text is "name value" per line
 * (memcached `stats`), JSON one flat object, Prometheus the text exposition
 * format with HELP/TYPE lines and `nfscached_<name>_total` counters.
 */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "daemon/stats.h"

struct nfsd_stats stats;

const char *const stats_nfs3_proc_names[STATS_NFS3_PROCS] = {
	"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
	"CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
	"READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT",
};

const char *const stats_mount3_proc_names[STATS_MOUNT3_PROCS] = {
	"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT",
};

struct emitter {
	FILE *out;
	enum stats_format fmt;
	int n;                 /* values written so far */
};

static void emit(struct emitter *e, const char *name, uint64_t v, int gauge, const char *help)
{
	char prom[128];

	switch (e->fmt) {
	case STATS_TEXT:
		fprintf(e->out, "%s %" PRIu64 "\n", name, v);
		break;
	case STATS_JSON:
		fprintf(e->out, "%s\"%s\":%" PRIu64, e->n ? "," : "{", name, v);
		break;
	case STATS_PROMETHEUS:
		snprintf(prom, sizeof(prom), "nfscached_%s%s", name, gauge ? "" : "_total");
		for (char *p = prom; *p; p++)
			if (*p == '.')
				*p = '_';
		fprintf(e->out, "# HELP %s %s\n# TYPE %s %s\n%s %" PRIu64 "\n", prom, help, prom,
			gauge ? "gauge" : "counter", prom, v);
		break;
	}
	e->n++;
}

static void emit_procs(struct emitter *e, const char *prefix, const char *const *names,
		       const uint64_t *v, int n, const char *help)
{
	char name[96];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%s", prefix, names[i]);
		emit(e, name, v[i], 0, help);
	}
}

void stats_write(FILE *out, enum stats_format fmt)
{
	struct emitter e = { out, fmt, 0 };

	emit_procs(&e, "nfs3.calls.", stats_nfs3_proc_names, stats.nfs3_calls, STATS_NFS3_PROCS,
		   "NFSv3 calls received from clients");
	emit_procs(&e, "mount3.calls.", stats_mount3_proc_names, stats.mount3_calls,
		   STATS_MOUNT3_PROCS, "MOUNTv3 calls received from clients");
	emit_procs(&e, "upstream.calls.", stats_nfs3_proc_names, stats.upstream_nfs3,
		   STATS_NFS3_PROCS, "NFSv3 calls sent to the upstream server");
	/* MOUNT procedures sent upstream; NULL is named MOUNT_NULL to stay distinct */
	static const char *const mnt_up[STATS_MOUNT3_PROCS] = {
		"MOUNT_NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT",
	};
	emit_procs(&e, "upstream.calls.", mnt_up, stats.upstream_mount3, STATS_MOUNT3_PROCS,
		   "MOUNTv3 calls sent to the upstream server");
#define X(field, name, help) emit(&e, name, stats.field, 0, help);
	STATS_COUNTERS(X)
	STATS_CACHE_COUNTERS(X)
#undef X
#define X(field, name, help) emit(&e, name, stats.field, 1, help);
	STATS_GAUGES(X)
#undef X
	if (fmt == STATS_JSON)
		fputs(e.n ? "}\n" : "{}\n", out);
}

void stats_reset(void)
{
	struct nfsd_stats keep = stats;

	memset(&stats, 0, sizeof(stats));
#define X(field, name, help) stats.field = keep.field;
	STATS_GAUGES(X)
#undef X
}
