/*
 * ctl_top.c — `nfscachectl top`, what it computes: the parsing of `stats`
 * and `status` replies, the arithmetic on two samples (counter deltas,
 * rates, quantiles of the upstream round-trip histograms) and one frame as
 * text lines.  No terminal, no socket, no clock: the program around it
 * (sampling, waiting, the curses screen) is ctl_top_screen.c.
 */
#include "config.h"
#include "daemon/ctl_top.h"
#include "common/xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---------------------------------------------------------------- */

void top_vars_free(struct top_vars *vars)
{
	if (!vars)
		return;
	for (size_t i = 0; i < vars->n; i++) {
		free(vars->v[i].name);
		free(vars->v[i].value);
	}
	free(vars->v);
	memset(vars, 0, sizeof(*vars));
}

static void vars_add(struct top_vars *vars, const char *name, size_t name_len,
		     const char *value, size_t value_len)
{
	if (vars->n == vars->cap) {
		vars->cap = vars->cap ? vars->cap * 2 : 64;
		vars->v = xreallocarray(vars->v, vars->cap, sizeof(*vars->v));
	}
	vars->v[vars->n].name = xasprintf("%.*s", (int)name_len, name);
	vars->v[vars->n].value = xasprintf("%.*s", (int)value_len, value);
	/* the frame prints them, to a terminal too */
	top_text_printable(vars->v[vars->n].name);
	top_text_printable(vars->v[vars->n].value);
	vars->n++;
}

int top_vars_parse(struct top_vars *vars, const char *text)
{
	const char *p = text;

	while (*p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *sp = memchr(p, ' ', len);

		if (len > 0) {
			if (!sp || sp == p || sp + 1 == p + len) {
				top_vars_free(vars);
				return -EINVAL;
			}
			vars_add(vars, p, (size_t)(sp - p), sp + 1, (size_t)(p + len - sp - 1));
		}
		p += len + (end ? 1 : 0);
	}
	return (int)vars->n;
}

const char *top_vars_str(const struct top_vars *vars, const char *name)
{
	for (size_t i = 0; i < vars->n; i++)
		if (strcmp(vars->v[i].name, name) == 0)
			return vars->v[i].value;
	return NULL;
}

static int u64_parse(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int top_vars_u64(const struct top_vars *vars, const char *name, uint64_t *out)
{
	const char *s = top_vars_str(vars, name);

	return s ? u64_parse(s, out) : -ENOENT;
}

/* ---- deltas and rates ------------------------------------------------------ */

void top_sample_free(struct top_sample *s)
{
	top_vars_free(&s->stats);
	top_vars_free(&s->status);
}

uint64_t top_counter_delta(uint64_t prev, uint64_t cur)
{
	return cur >= prev ? cur - prev : cur;
}

int top_stats_delta(const struct top_sample *prev, const struct top_sample *cur,
		    const char *name, uint64_t *out)
{
	uint64_t a = 0, b;

	if (top_vars_u64(&cur->stats, name, &b) != 0)
		return -ENOENT;
	if (prev)
		(void)top_vars_u64(&prev->stats, name, &a);
	*out = top_counter_delta(a, b);
	return 0;
}

double top_rate(uint64_t delta, double interval_s)
{
	return interval_s > 0 ? (double)delta / interval_s : 0;
}

/* ---- histogram quantiles --------------------------------------------------- */

int top_quantile(double q, const double *bounds_s, const uint64_t *counts, size_t n_bounds,
		 double *out_s)
{
	uint64_t total = counts[n_bounds];
	double rank = q * (double)total;
	size_t b = 0;

	if (total == 0 || n_bounds == 0)
		return -ENOENT;
	while (b < n_bounds && (double)counts[b] < rank)
		b++;
	if (b == n_bounds) {                /* in the +Inf bucket */
		*out_s = bounds_s[n_bounds - 1];
		return 0;
	}
	if (b == 0 && bounds_s[0] <= 0) {
		*out_s = bounds_s[0];
		return 0;
	}
	double lower = b ? bounds_s[b - 1] : 0;
	uint64_t below = b ? counts[b - 1] : 0;
	uint64_t in = counts[b] > below ? counts[b] - below : 0;
	*out_s = in ? lower + (bounds_s[b] - lower) * ((rank - (double)below) / (double)in) : lower;
	return 0;
}

#define HIST_MAX 32             /* buckets of one histogram, +Inf included */

/* One procedure's histogram: le[] ascending, the last +Inf. */
struct hist {
	size_t n;
	double le[HIST_MAX];
	uint64_t cum[HIST_MAX];
};

/* The buckets upstream.rtt.PROC{le="X"} of `vars` into *h, sorted by X.
 * Returns 0, or -ENOENT when there are none or the last is not +Inf. */
static int hist_of(const struct top_vars *vars, const char *proc, struct hist *h)
{
	char prefix[96];
	size_t plen = (size_t)snprintf(prefix, sizeof(prefix), "upstream.rtt.%s{le=\"", proc);

	h->n = 0;
	for (size_t i = 0; i < vars->n && plen < sizeof(prefix); i++) {
		const char *name = vars->v[i].name;
		uint64_t c;
		char *end;

		if (strncmp(name, prefix, plen) != 0 || u64_parse(vars->v[i].value, &c) != 0)
			continue;
		double le = strtod(name + plen, &end);
		if (end == name + plen || strcmp(end, "\"}") != 0 || isnan(le) || h->n == HIST_MAX)
			continue;
		size_t j = h->n++;
		for (; j > 0 && h->le[j - 1] > le; j--) {
			h->le[j] = h->le[j - 1];
			h->cum[j] = h->cum[j - 1];
		}
		h->le[j] = le;
		h->cum[j] = c;
	}
	return h->n > 1 && isinf(h->le[h->n - 1]) ? 0 : -ENOENT;
}

/* The histogram of `proc` over the interval into *d: cur minus prev bucket
 * by bucket, or cur alone when prev has none, other buckets, or any bucket
 * went down (reset).  Returns 0 or -ENOENT (no histogram in cur). */
static int hist_delta(const struct top_sample *prev, const struct top_sample *cur,
		      const char *proc, struct hist *d)
{
	struct hist p;

	if (hist_of(&cur->stats, proc, d) != 0)
		return -ENOENT;
	if (!prev || hist_of(&prev->stats, proc, &p) != 0 || p.n != d->n)
		return 0;
	for (size_t i = 0; i < d->n; i++)
		if (p.le[i] != d->le[i] || p.cum[i] > d->cum[i])
			return 0;
	for (size_t i = 0; i < d->n; i++)
		d->cum[i] -= p.cum[i];
	return 0;
}

int top_rtt_quantile(const struct top_sample *prev, const struct top_sample *cur,
		     const char *proc, double q, double *out_s)
{
	static const char pre[] = "upstream.rtt.", post[] = ".count";
	struct hist sum = { 0 }, d;

	if (proc) {
		if (hist_delta(prev, cur, proc, &sum) != 0)
			return -ENOENT;
		return top_quantile(q, sum.le, sum.cum, sum.n - 1, out_s);
	}
	/* all procedures: every PROC with an upstream.rtt.PROC.count line */
	for (size_t i = 0; i < cur->stats.n; i++) {
		const char *name = cur->stats.v[i].name;
		size_t len = strlen(name);
		char p[64];

		if (strncmp(name, pre, sizeof(pre) - 1) != 0 || len < sizeof(pre) + sizeof(post) - 1 ||
		    strcmp(name + len - (sizeof(post) - 1), post) != 0 ||
		    len - (sizeof(pre) - 1) - (sizeof(post) - 1) >= sizeof(p))
			continue;
		snprintf(p, sizeof(p), "%.*s", (int)(len - (sizeof(pre) - 1) - (sizeof(post) - 1)),
			 name + sizeof(pre) - 1);
		if (hist_delta(prev, cur, p, &d) != 0)
			continue;
		if (sum.n == 0) {
			sum = d;
			continue;
		}
		if (d.n != sum.n || memcmp(d.le, sum.le, d.n * sizeof(d.le[0])) != 0)
			continue;
		for (size_t k = 0; k < d.n; k++)
			sum.cum[k] += d.cum[k];
	}
	if (sum.n == 0)
		return -ENOENT;
	return top_quantile(q, sum.le, sum.cum, sum.n - 1, out_s);
}

/* ---- one frame ------------------------------------------------------------ */

static void num_u64(struct top_num *n, const struct top_vars *vars, const char *name)
{
	uint64_t v;

	n->known = top_vars_u64(vars, name, &v) == 0;
	n->v = n->known ? (double)v : 0;
}

static double rate_of(const struct top_frame *f, const struct top_sample *prev,
		      const struct top_sample *cur, const char *name)
{
	uint64_t d;

	if (!prev || top_stats_delta(prev, cur, name, &d) != 0)
		return 0;
	return top_rate(d, f->interval_s);
}

static void ratio(struct top_num *r, double part, double all)
{
	r->known = all > 0;
	r->v = all > 0 ? part / all : 0;
}

/* Keep (name, per_s) among the TOP_BUSIEST highest rates of f->busiest. */
static void busiest_add(struct top_frame *f, const char *name, double per_s)
{
	int i = TOP_BUSIEST;

	if (per_s <= 0)
		return;
	while (i > 0 && (!f->busiest[i - 1].name || f->busiest[i - 1].per_s < per_s))
		i--;
	if (i == TOP_BUSIEST)
		return;
	memmove(&f->busiest[i + 1], &f->busiest[i], (TOP_BUSIEST - 1 - i) * sizeof(f->busiest[0]));
	f->busiest[i].name = name;
	f->busiest[i].per_s = per_s;
}

static void calls_compute(struct top_frame *f, const struct top_sample *prev,
			  const struct top_sample *cur)
{
	static const char nfs[] = "nfs3.calls.", mnt[] = "mount3.calls.";

	for (size_t i = 0; i < cur->stats.n; i++) {
		const char *name = cur->stats.v[i].name, *label;

		if (strncmp(name, nfs, sizeof(nfs) - 1) == 0)
			label = name + sizeof(nfs) - 1;
		else if (strncmp(name, mnt, sizeof(mnt) - 1) == 0)
			label = strcmp(name + sizeof(mnt) - 1, "NULL") == 0 ? "MOUNT_NULL" :
										name + sizeof(mnt) - 1;
		else
			continue;
		double r = rate_of(f, prev, cur, name);
		f->calls_per_s += r;
		busiest_add(f, label, r);
	}
}

static void rtt_compute(struct top_num *p50, struct top_num *p99, const struct top_sample *prev,
			const struct top_sample *cur, const char *proc)
{
	p50->known = prev && top_rtt_quantile(prev, cur, proc, 0.5, &p50->v) == 0;
	p99->known = prev && top_rtt_quantile(prev, cur, proc, 0.99, &p99->v) == 0;
}

static const char *status_str(const struct top_sample *cur, const char *name)
{
	const char *s = top_vars_str(&cur->status, name);

	return s ? s : "-";
}

void top_frame_compute(struct top_frame *f, const struct top_sample *prev,
		       const struct top_sample *cur)
{
	static const char *const rtt_procs[TOP_RTT_PROCS] = { "READ", "GETATTR", "WRITE" };
	static const char *const ns_hits[] = {
		"cache.attr.hits", "cache.lookup.hits", "cache.lookup.negative_hits",
		"cache.readdir.hits", "cache.access.hits",
	};
	static const char *const ns_misses[] = {
		"cache.attr.misses", "cache.lookup.misses", "cache.readdir.misses",
		"cache.access.misses",
	};

	memset(f, 0, sizeof(*f));
	f->interval_s = prev ? cur->t_s - prev->t_s : 0;
	calls_compute(f, prev, cur);
	f->read_hits_per_s = rate_of(f, prev, cur, "cache.read.hits");
	f->read_partial_per_s = rate_of(f, prev, cur, "cache.read.partial_hits");
	f->read_misses_per_s = rate_of(f, prev, cur, "cache.read.misses");
	ratio(&f->read_hit_ratio, f->read_hits_per_s + f->read_partial_per_s,
	      f->read_hits_per_s + f->read_partial_per_s + f->read_misses_per_s);
	for (size_t i = 0; i < sizeof(ns_hits) / sizeof(ns_hits[0]); i++)
		f->ns_hits_per_s += rate_of(f, prev, cur, ns_hits[i]);
	for (size_t i = 0; i < sizeof(ns_misses) / sizeof(ns_misses[0]); i++)
		f->ns_misses_per_s += rate_of(f, prev, cur, ns_misses[i]);
	ratio(&f->ns_hit_ratio, f->ns_hits_per_s, f->ns_hits_per_s + f->ns_misses_per_s);
	f->local_bytes_per_s = rate_of(f, prev, cur, "cache.read.bytes_local");
	f->upstream_bytes_per_s = rate_of(f, prev, cur, "cache.read.bytes_upstream");
	f->write_bytes_per_s = rate_of(f, prev, cur, "cache.write.bytes");
	f->writeback_bytes_per_s = rate_of(f, prev, cur, "cache.writeback.bytes");
	rtt_compute(&f->rtt_p50_s, &f->rtt_p99_s, prev, cur, NULL);
	for (int i = 0; i < TOP_RTT_PROCS; i++) {
		f->rtt[i].proc = rtt_procs[i];
		rtt_compute(&f->rtt[i].p50_s, &f->rtt[i].p99_s, prev, cur, rtt_procs[i]);
	}
	f->srtt_ms = status_str(cur, "upstream_srtt_ms");
	num_u64(&f->dirty_bytes, &cur->stats, "cache.dirty.bytes");
	num_u64(&f->unwritten_bytes, &cur->status, "unwritten_bytes");
	num_u64(&f->cache_objects, &cur->status, "cache_objects");
	num_u64(&f->cache_bytes, &cur->status, "cache_bytes");
	num_u64(&f->uptime_s, &cur->status, "uptime_s");
	num_u64(&f->connections, &cur->status, "connections");
	num_u64(&f->upstream_connections, &cur->status, "upstream_connections");
	num_u64(&f->calls_in_flight, &cur->status, "calls_in_flight");
	f->cache_state = status_str(cur, "cache");
	f->upstream_state = status_str(cur, "upstream");
	f->state = status_str(cur, "state");
	f->version = status_str(cur, "version");
}

/* ---- text ------------------------------------------------------------------- */

/* `n` as a whole number, or "-". */
static const char *fmt_count(char *buf, size_t len, const struct top_num *n)
{
	if (!n->known)
		return "-";
	snprintf(buf, len, "%.0f", n->v);
	return buf;
}

/* Bytes in decimal units (kB = 1000 B), or "-". */
static const char *fmt_bytes(char *buf, size_t len, const struct top_num *n)
{
	static const char *const unit[] = { "B", "kB", "MB", "GB", "TB", "PB" };
	double v = n->v;
	int u = 0;

	if (!n->known)
		return "-";
	while (v >= 1000 && u < 5) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

static const char *fmt_pct(char *buf, size_t len, const struct top_num *r)
{
	if (!r->known)
		return "-";
	snprintf(buf, len, "%.1f%%", r->v * 100);
	return buf;
}

static const char *fmt_ms(char *buf, size_t len, const struct top_num *s)
{
	if (!s->known)
		return "-";
	snprintf(buf, len, "%.3f", s->v * 1000);
	return buf;
}

static const char *fmt_uptime(char *buf, size_t len, const struct top_num *s)
{
	if (!s->known)
		return "-";
	unsigned long long t = (unsigned long long)s->v;
	if (t >= 86400)
		snprintf(buf, len, "%llud%02llu:%02llu:%02llu", t / 86400, t / 3600 % 24, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%llu:%02llu:%02llu", t / 3600, t / 60 % 60, t % 60);
	return buf;
}

#define MB 1e6

void top_frame_write(FILE *out, const struct top_frame *f)
{
	char a[32], b[32], c[32], d[32];
	char line[128];
	int len;

	fprintf(out, "nfscached %.20s  up %s  %.12s  interval %.2f s\n", f->version,
		fmt_uptime(a, sizeof(a), &f->uptime_s), f->state, f->interval_s);
	fprintf(out, "calls/s          %-10.1f connections %s  in flight %s\n", f->calls_per_s,
		fmt_count(a, sizeof(a), &f->connections), fmt_count(b, sizeof(b), &f->calls_in_flight));
	len = snprintf(line, sizeof(line), "busiest/s       ");
	for (int i = 0; i < TOP_BUSIEST && f->busiest[i].name; i++) {
		int n = snprintf(line + len, sizeof(line) - (size_t)len, " %s %.1f", f->busiest[i].name,
				 f->busiest[i].per_s);
		if (n < 0 || len + n > 79)
			break;
		len += n;
	}
	line[len] = '\0';
	fprintf(out, "%s%s\n", line, f->busiest[0].name ? "" : " -");
	fprintf(out, "READ/s           hits %.1f  partial %.1f  misses %.1f  hit ratio %s\n",
		f->read_hits_per_s, f->read_partial_per_s, f->read_misses_per_s,
		fmt_pct(a, sizeof(a), &f->read_hit_ratio));
	fprintf(out, "namespace/s      hits %.1f  misses %.1f  hit ratio %s\n", f->ns_hits_per_s,
		f->ns_misses_per_s, fmt_pct(a, sizeof(a), &f->ns_hit_ratio));
	fprintf(out, "MB/s             local %.2f  fetched %.2f  written %.2f  written back %.2f\n",
		f->local_bytes_per_s / MB, f->upstream_bytes_per_s / MB, f->write_bytes_per_s / MB,
		f->writeback_bytes_per_s / MB);
	fprintf(out, "upstream         %.20s  connections %s  srtt %.16s%s\n", f->upstream_state,
		fmt_count(a, sizeof(a), &f->upstream_connections), f->srtt_ms,
		strcmp(f->srtt_ms, "-") ? " ms" : "");
	fprintf(out, "rtt ms           %-10s %s\n", "p50", "p99");
	fprintf(out, "  all            %-10s %s\n", fmt_ms(a, sizeof(a), &f->rtt_p50_s),
		fmt_ms(b, sizeof(b), &f->rtt_p99_s));
	for (int i = 0; i < TOP_RTT_PROCS; i++)
		fprintf(out, "  %-14s %-10s %s\n", f->rtt[i].proc,
			fmt_ms(a, sizeof(a), &f->rtt[i].p50_s), fmt_ms(b, sizeof(b), &f->rtt[i].p99_s));
	fprintf(out, "cache            %.12s  objects %s  bytes %s  dirty %s  unwritten %s\n",
		f->cache_state, fmt_count(a, sizeof(a), &f->cache_objects),
		fmt_bytes(b, sizeof(b), &f->cache_bytes), fmt_bytes(c, sizeof(c), &f->dirty_bytes),
		fmt_bytes(d, sizeof(d), &f->unwritten_bytes));
}

/* ---- text from the daemon ----------------------------------------------- */

void top_text_printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}
