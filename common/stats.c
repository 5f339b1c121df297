/*
 * stats.c — counter storage and rendering.  Text is "name value" per line
 * (memcached `stats`), JSON one flat object, Prometheus the text exposition
 * format with HELP/TYPE lines and `nfscached_<name>_total` counters.
 * Per-export READ counters are kept per upstream fsid (stats.h); upstream
 * round trips in one histogram per NFSv3 procedure, written after them.
 */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "common/xalloc.h"

struct nfsd_stats stats;

/* One upstream file system: its counters and the exports it is the root of. */
struct stats_export_entry {
	int known;                      /* 0: the "-" entry (attributes unknown) */
	uint64_t fsid;
	char *names;                    /* export paths, ","-joined, malloc'd; NULL = not learnt */
	struct stats_export_counts c;
};

static struct stats_export_entry stats_exports[STATS_EXPORTS_MAX];
static size_t stats_exports_n;

static struct stats_export_entry *export_find(int known, uint64_t fsid, int create)
{
	for (size_t i = 0; i < stats_exports_n; i++) {
		struct stats_export_entry *x = &stats_exports[i];
		if (x->known == known && (!known || x->fsid == fsid))
			return x;
	}
	if (!create)
		return NULL;
	if (stats_exports_n == STATS_EXPORTS_MAX - 1 && known)
		return export_find(0, 0, 1);   /* the last slot is kept for "-" */
	struct stats_export_entry *x = &stats_exports[stats_exports_n++];
	x->known = known;
	x->fsid = known ? fsid : 0;
	return x;
}

struct stats_export_counts *stats_export(int known, uint64_t fsid)
{
	return &export_find(known != 0, fsid, 1)->c;
}

/* The names of one file system stop growing at this length (bytes); the
 * first always fits: an export path is at most MNTPATHLEN (1024). */
#define STATS_EXPORT_NAMES_MAX 4096

void stats_export_name(uint64_t fsid, const char *path)
{
	struct stats_export_entry *x = export_find(1, fsid, 1);
	size_t have = x->names ? strlen(x->names) : 0, n = strlen(path);

	if (x->known == 0)
		return;   /* no slot left */
	for (const char *p = x->names; p && *p;) {
		size_t w = strcspn(p, ",");
		if (w == n && strncmp(p, path, n) == 0)
			return;   /* known already */
		p += w + (p[w] == ',');
	}
	if (have && have + n + 1 > STATS_EXPORT_NAMES_MAX)
		return;
	x->names = xreallocarray(x->names, have + n + 2, 1);
	if (have)
		x->names[have++] = ',';
	memcpy(x->names + have, path, n + 1);
}

int stats_export_unnamed(void)
{
	for (size_t i = 0; i < stats_exports_n; i++)
		if (stats_exports[i].known && !stats_exports[i].names)
			return 1;
	return 0;
}

static const char *export_label(const struct stats_export_entry *x, char *buf, size_t len)
{
	if (!x->known)
		return "-";
	if (x->names)
		return x->names;
	snprintf(buf, len, "fsid:0x%" PRIx64, x->fsid);
	return buf;
}

/* Bytes of the well-formed UTF-8 sequence at `s` (RFC 3629 §4: no
 * overlong forms, no surrogates, nothing above U+10FFFF), 0 when there is
 * none. */
static size_t utf8_seq_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		if (s[0] == 0xe0)
			lo = 0xa0;
		else if (s[0] == 0xed)
			hi = 0x9f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		if (s[0] == 0xf0)
			lo = 0x90;
		else if (s[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * An export name as a label value (text, Prometheus) or a JSON string:
 * backslash, quote and newline escaped; a byte that is not part of
 * well-formed UTF-8 written as the four characters \xHH, so that every
 * output is valid UTF-8 and distinct names stay distinct.  Other control
 * characters: Prometheus label values may hold them as they are, JSON
 * strings as \u00HH, and text lines (one per counter) show them as \xHH.
 */
static void put_escaped(FILE *out, const char *str, enum stats_format fmt)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		size_t n = utf8_seq_len(s);

		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else if (n == 0)
			fprintf(out, "\\\\x%02x", *s);   /* a backslash, escaped, then xHH */
		else if (*s < 0x20 && fmt == STATS_JSON)
			fprintf(out, "\\u%04x", *s);
		else if (*s < 0x20 && fmt == STATS_TEXT)
			fprintf(out, "\\\\x%02x", *s);
		else
			fwrite(s, 1, n, out);
		s += n ? n : 1;
	}
}

const char *const stats_nfs3_proc_names[STATS_NFS3_PROCS] = {
	"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
	"CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK",
	"READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT",
};

const char *const stats_mount3_proc_names[STATS_MOUNT3_PROCS] = {
	"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT",
};

/* Longer round trips (the wall clock stepped forward) count as this long. */
#define STATS_RTT_MAX_S 1e6

const struct stats_rtt_bound stats_rtt_bounds[STATS_RTT_BOUNDS] = {
	{ 0.0001, "0.0001" }, { 0.00025, "0.00025" }, { 0.0005, "0.0005" },
	{ 0.001, "0.001" }, { 0.0025, "0.0025" }, { 0.005, "0.005" },
	{ 0.01, "0.01" }, { 0.025, "0.025" }, { 0.05, "0.05" },
	{ 0.1, "0.1" }, { 0.25, "0.25" }, { 0.5, "0.5" },
	{ 1, "1" }, { 2.5, "2.5" }, { 5, "5" }, { 10, "10" },
};

void stats_rtt_observe(unsigned proc, double seconds)
{
	struct stats_rtt *h;
	unsigned i = 0;

	if (proc >= STATS_NFS3_PROCS)
		return;
	if (!(seconds > 0))
		seconds = 0;   /* also NaN */
	else if (seconds > STATS_RTT_MAX_S)
		seconds = STATS_RTT_MAX_S;   /* keeps the conversion to integer defined */
	h = &stats.upstream_rtt[proc];
	while (i < STATS_RTT_BOUNDS && seconds > stats_rtt_bounds[i].seconds)
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_us += (uint64_t)(seconds * 1e6 + 0.5);
}

static void prom_name(char *buf, size_t len, const char *prefix, const char *name, int gauge)
{
	snprintf(buf, len, "nfscached_%s%s%s", prefix, name, gauge ? "" : "_total");
	for (char *p = buf; *p; p++)
		if (*p == '.')
			*p = '_';
}

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
		prom_name(prom, sizeof(prom), "", name, gauge);
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

/* Prometheus: one family per counter, one sample per export. */
static void emit_exports_prometheus(FILE *out)
{
	char prom[128], buf[32];

#define X(field, name, help)                                                                \
	prom_name(prom, sizeof(prom), "export_", name, 0);                                  \
	fprintf(out, "# HELP %s %s, per export\n# TYPE %s counter\n", prom, help, prom);   \
	for (size_t i = 0; i < stats_exports_n; i++) {                                      \
		fprintf(out, "%s{export=\"", prom);                                         \
		put_escaped(out, export_label(&stats_exports[i], buf, sizeof(buf)),        \
			    STATS_PROMETHEUS);                                      \
		fprintf(out, "\"} %" PRIu64 "\n", stats_exports[i].c.field);               \
	}
	STATS_EXPORT_COUNTERS(X)
#undef X
}

static void emit_exports(struct emitter *e)
{
	char buf[32];

	if (e->fmt == STATS_PROMETHEUS) {
		if (stats_exports_n)
			emit_exports_prometheus(e->out);
		return;
	}
	for (size_t i = 0; i < stats_exports_n; i++) {
		const char *label = export_label(&stats_exports[i], buf, sizeof(buf));
#define X(field, name, help)                                                        \
		if (e->fmt == STATS_JSON) {                                         \
			fprintf(e->out, "%s\"exports.", e->n ? "," : "{");          \
			put_escaped(e->out, label, e->fmt);                         \
			fprintf(e->out, ".%s\":%" PRIu64, name, stats_exports[i].c.field); \
		} else {                                                            \
			fprintf(e->out, "%s{export=\"", name);                      \
			put_escaped(e->out, label, e->fmt);                         \
			fprintf(e->out, "\"} %" PRIu64 "\n", stats_exports[i].c.field); \
		}                                                                   \
		e->n++;
		STATS_EXPORT_COUNTERS(X)
#undef X
	}
}

/* One procedure's histogram in text or JSON, buckets made cumulative. */
static void emit_rtt_proc(struct emitter *e, const char *proc, const struct stats_rtt *h)
{
	char name[96];
	uint64_t below = 0;

	for (int i = 0; i <= STATS_RTT_BOUNDS; i++) {
		const char *le = i < STATS_RTT_BOUNDS ? stats_rtt_bounds[i].label : "+Inf";
		below += h->bucket[i];
		if (e->fmt == STATS_JSON)
			snprintf(name, sizeof(name), "upstream.rtt.%s.le.%s", proc, le);
		else
			snprintf(name, sizeof(name), "upstream.rtt.%s{le=\"%s\"}", proc, le);
		emit(e, name, below, 0, NULL);
	}
	snprintf(name, sizeof(name), "upstream.rtt.%s.count", proc);
	emit(e, name, h->count, 0, NULL);
	snprintf(name, sizeof(name), "upstream.rtt.%s.sum_us", proc);
	emit(e, name, h->sum_us, 0, NULL);
}

/* Prometheus: one histogram family, one series per procedure. */
static void emit_rtt_prometheus(FILE *out)
{
	static const char fam[] = "nfscached_upstream_rtt_seconds";
	int head = 0;

	for (int p = 0; p < STATS_NFS3_PROCS; p++) {
		const struct stats_rtt *h = &stats.upstream_rtt[p];
		const char *proc = stats_nfs3_proc_names[p];
		uint64_t below = 0;

		if (h->count == 0)
			continue;
		if (!head++)
			fprintf(out, "# HELP %s round trip of calls to the upstream, per NFSv3 procedure\n"
				"# TYPE %s histogram\n", fam, fam);
		for (int i = 0; i <= STATS_RTT_BOUNDS; i++) {
			below += h->bucket[i];
			fprintf(out, "%s_bucket{proc=\"%s\",le=\"%s\"} %" PRIu64 "\n", fam, proc,
				i < STATS_RTT_BOUNDS ? stats_rtt_bounds[i].label : "+Inf", below);
		}
		fprintf(out, "%s_sum{proc=\"%s\"} %" PRIu64 ".%06" PRIu64 "\n", fam, proc,
			h->sum_us / 1000000, h->sum_us % 1000000);
		fprintf(out, "%s_count{proc=\"%s\"} %" PRIu64 "\n", fam, proc, h->count);
	}
}

static void emit_rtt(struct emitter *e)
{
	if (e->fmt == STATS_PROMETHEUS) {
		emit_rtt_prometheus(e->out);
		return;
	}
	for (int p = 0; p < STATS_NFS3_PROCS; p++)
		if (stats.upstream_rtt[p].count)
			emit_rtt_proc(e, stats_nfs3_proc_names[p], &stats.upstream_rtt[p]);
}

void stats_write_exports(FILE *out, enum stats_format fmt)
{
	struct emitter e = { out, fmt, 0 };

	emit_exports(&e);
	if (fmt == STATS_JSON)
		fputs(e.n ? "}\n" : "{}\n", out);
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
	emit_rtt(&e);
	if (fmt != STATS_TEXT)
		emit_exports(&e);
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
	for (size_t i = 0; i < stats_exports_n; i++)
		memset(&stats_exports[i].c, 0, sizeof(stats_exports[i].c));
}
