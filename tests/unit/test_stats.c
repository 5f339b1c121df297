/*
 * test_stats.c — the upstream round-trip histograms of common/stats.c:
 * bucket edges (a round trip equal to a bound is in that bound's bucket),
 * cumulative buckets with +Inf equal to the count, sum_us, only procedures
 * with a count written, `stats reset`, and the three renderings of
 * stats_write(): text lines, a flat JSON object, and Prometheus exposition
 * lines (one HELP and TYPE for the histogram family, every line well
 * formed, every family's samples together after its TYPE).
 */
#include "config.h"   /* _GNU_SOURCE: open_memstream */

#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"

#include "tests/unit/tap.h"

#define NFS3_GETATTR 1
#define NFS3_READ 6

/* What `write` (stats_write, stats_write_exports) writes in `fmt`; the
 * caller frees it. */
static char *written_by(void (*write)(FILE *, enum stats_format), enum stats_format fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	write(f, fmt);
	fclose(f);
	return buf;
}

/* What stats_write() writes in `fmt`; the caller frees it. */
static char *written(enum stats_format fmt)
{
	return written_by(stats_write, fmt);
}

/* The value of the text line "NAME VALUE" in `text`; -1 when there is none. */
static long long text_value(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtoll(p + n + 1, NULL, 10);
		if (!strchr(p, '\n'))
			break;
	}
	return -1;
}

static long long text_bucket(const char *text, const char *proc, const char *le)
{
	char name[96];

	snprintf(name, sizeof(name), "upstream.rtt.%s{le=\"%s\"}", proc, le);
	return text_value(text, name);
}

/* The value of member "NAME" of the flat JSON object `json`; -1 when none. */
static long long json_value(const char *json, const char *name)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(json, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* The value of the Prometheus sample line "SERIES VALUE"; NULL when none. */
static const char *prom_value(const char *prom, const char *series, char *buf, size_t len)
{
	size_t n = strlen(series);

	for (const char *p = prom; *p;) {
		const char *end = strchr(p, '\n');
		if (!end)
			break;
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			snprintf(buf, len, "%.*s", (int)(end - p - n - 1), p + n + 1);
			return buf;
		}
		p = end + 1;
	}
	return NULL;
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* Bound i's `le` label, +Inf for i == STATS_RTT_BOUNDS. */
static const char *le_of(int i)
{
	return i < STATS_RTT_BOUNDS ? stats_rtt_bounds[i].label : "+Inf";
}

/* Each bound's own value lands in its bucket, a hair above it in the next. */
static void test_edges(void)
{
	int wrong = 0;

	for (int i = 0; i < STATS_RTT_BOUNDS; i++) {
		double b = stats_rtt_bounds[i].seconds;

		stats_reset();
		stats_rtt_observe(NFS3_READ, b);
		if (stats.upstream_rtt[NFS3_READ].bucket[i] != 1) {
			diag("%s s not in bucket le=%s", stats_rtt_bounds[i].label, le_of(i));
			wrong++;
		}
		stats_reset();
		stats_rtt_observe(NFS3_READ, b * 1.0001);
		if (stats.upstream_rtt[NFS3_READ].bucket[i + 1] != 1) {
			diag("just above %s s not in bucket le=%s", stats_rtt_bounds[i].label, le_of(i + 1));
			wrong++;
		}
	}
	is_int(wrong, 0, "a round trip equal to a bound is in that bucket, one above it in the next");

	int ascending = 1;
	for (int i = 1; i < STATS_RTT_BOUNDS; i++)
		ascending &= stats_rtt_bounds[i].seconds > stats_rtt_bounds[i - 1].seconds &&
			     strtod(stats_rtt_bounds[i].label, NULL) == stats_rtt_bounds[i].seconds;
	ok(ascending && stats_rtt_bounds[0].seconds == 0.0001 &&
	   stats_rtt_bounds[STATS_RTT_BOUNDS - 1].seconds == 10,
	   "bounds ascend from 0.0001 to 10 s, labels are their values");

	stats_reset();
	stats_rtt_observe(NFS3_READ, -0.5);
	stats_rtt_observe(NFS3_READ, 0);
	stats_rtt_observe(STATS_NFS3_PROCS, 0.001);
	is_int(stats.upstream_rtt[NFS3_READ].bucket[0], 2, "negative and zero round trips count as 0 s");
	is_int(stats.upstream_rtt[NFS3_READ].sum_us, 0, "... adding nothing to sum_us");
	uint64_t others = 0;
	for (int p = 0; p < STATS_NFS3_PROCS; p++)
		if (p != NFS3_READ)
			others += stats.upstream_rtt[p].count;
	is_int(others, 0, "an unknown procedure is ignored");
}

/* The round trips used below: GETATTR 0.05 ms, 0.1 ms, 0.3 ms, 4 ms, 10 ms,
 * 12 s; READ 10 ms twice. */
static void observe_sample(void)
{
	stats_reset();
	stats_rtt_observe(NFS3_GETATTR, 0.00005);
	stats_rtt_observe(NFS3_GETATTR, 0.0001);
	stats_rtt_observe(NFS3_GETATTR, 0.0003);
	stats_rtt_observe(NFS3_GETATTR, 0.004);
	stats_rtt_observe(NFS3_GETATTR, 0.01);
	stats_rtt_observe(NFS3_GETATTR, 12);
	stats_rtt_observe(NFS3_READ, 0.01);
	stats_rtt_observe(NFS3_READ, 0.01);
}

/* Cumulative counts of that sample per bound, GETATTR and READ. */
static const long long getattr_cum[STATS_RTT_BOUNDS + 1] = {
	2, 2, 3, 3, 3, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6,
};
static const long long read_cum[STATS_RTT_BOUNDS + 1] = {
	0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
};
#define GETATTR_SUM_US (50 + 100 + 300 + 4000 + 10000 + 12000000LL)

static void test_text(void)
{
	char *t;
	int wrong = 0;

	observe_sample();
	t = written(STATS_TEXT);
	for (int i = 0; i <= STATS_RTT_BOUNDS; i++) {
		long long g = text_bucket(t, "GETATTR", le_of(i)), r = text_bucket(t, "READ", le_of(i));
		if (g != getattr_cum[i] || r != read_cum[i]) {
			diag("le=%s: GETATTR %lld (want %lld), READ %lld (want %lld)", le_of(i), g,
			     getattr_cum[i], r, read_cum[i]);
			wrong++;
		}
	}
	is_int(wrong, 0, "text: cumulative buckets of GETATTR and READ");
	is_int(text_bucket(t, "GETATTR", "+Inf"), text_value(t, "upstream.rtt.GETATTR.count"),
	       "text: le=\"+Inf\" equals the count");
	is_int(text_value(t, "upstream.rtt.GETATTR.count"), 6, "text: GETATTR count");
	is_int(text_value(t, "upstream.rtt.GETATTR.sum_us"), GETATTR_SUM_US, "text: GETATTR sum_us");
	is_int(text_value(t, "upstream.rtt.READ.count"), 2, "text: READ count");
	is_int(text_value(t, "upstream.rtt.READ.sum_us"), 20000, "text: READ sum_us");
	is_int(count_lines_with(t, "upstream.rtt."), 2 * (STATS_RTT_BOUNDS + 3),
	       "text: no lines for procedures without a round trip");
	/* the order of one procedure's lines: buckets ascending, count, sum_us */
	const char *b0 = strstr(t, "upstream.rtt.READ{le=\"0.0001\"} "),
		   *inf = strstr(t, "upstream.rtt.READ{le=\"+Inf\"} "),
		   *cnt = strstr(t, "upstream.rtt.READ.count "),
		   *sum = strstr(t, "upstream.rtt.READ.sum_us ");
	ok(b0 && inf && cnt && sum && b0 < inf && inf < cnt && cnt < sum,
	   "text: buckets, then count, then sum_us");
	ok(text_value(t, "upstream.calls.READ") == 0, "text: the other counters are still there");
	free(t);
}

/* A flat JSON object of "name":integer members. */
static int json_flat_ok(const char *j)
{
	const char *p = j;

	if (*p++ != '{')
		return 0;
	while (*p == '"') {
		const char *q = strchr(p + 1, '"');
		if (!q || q[1] != ':' || q[2] < '0' || q[2] > '9')
			return 0;
		p = q + 2;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p == ',')
			p++;
		else
			break;
	}
	return strcmp(p, "}\n") == 0;
}

static void test_json(void)
{
	char *j, name[96];
	int wrong = 0;

	observe_sample();
	j = written(STATS_JSON);
	ok(json_flat_ok(j), "json: one flat object of integer members");
	for (int i = 0; i <= STATS_RTT_BOUNDS; i++) {
		snprintf(name, sizeof(name), "upstream.rtt.GETATTR.le.%s", le_of(i));
		long long g = json_value(j, name);
		snprintf(name, sizeof(name), "upstream.rtt.READ.le.%s", le_of(i));
		long long r = json_value(j, name);
		if (g != getattr_cum[i] || r != read_cum[i]) {
			diag("le.%s: GETATTR %lld, READ %lld", le_of(i), g, r);
			wrong++;
		}
	}
	is_int(wrong, 0, "json: cumulative buckets of GETATTR and READ");
	is_int(json_value(j, "upstream.rtt.GETATTR.count"), 6, "json: GETATTR count");
	is_int(json_value(j, "upstream.rtt.GETATTR.sum_us"), GETATTR_SUM_US, "json: GETATTR sum_us");
	is_int(json_value(j, "upstream.rtt.READ.count"), 2, "json: READ count");
	is_int(json_value(j, "upstream.rtt.READ.sum_us"), 20000, "json: READ sum_us");
	is_int(count_lines_with(j, "\"upstream.rtt."), 2 * (STATS_RTT_BOUNDS + 3),
	       "json: no members for procedures without a round trip");
	free(j);
}

/*
 * Every line is "# HELP name text", "# TYPE name type" or a sample
 * "name{label="v",...} value"; a family's samples (for a histogram its
 * _bucket, _sum and _count series) follow its TYPE line together, and no
 * family is declared twice.  Returns the number of bad lines.
 */
static int prom_check(const char *prom)
{
	regex_t sample, meta;
	char fam[128] = "", type[16] = "", seen[32768] = " ";
	int bad = 0, lineno = 0;

	regcomp(&sample, "^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\""
			 "(,[a-zA-Z_][a-zA-Z0-9_]*=\"[^\"]*\")*\\})? [0-9]+(\\.[0-9]+)?$",
		REG_EXTENDED);
	regcomp(&meta, "^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$", REG_EXTENDED);
	for (const char *p = prom; *p;) {
		const char *end = strchr(p, '\n');
		char line[512], name[128];
		regmatch_t m[4];

		lineno++;
		if (!end) {
			diag("line %d: no newline at the end", lineno);
			bad++;
			break;
		}
		snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
		p = end + 1;
		if (regexec(&meta, line, 4, m, 0) == 0) {
			snprintf(name, sizeof(name), "%.*s", (int)(m[2].rm_eo - m[2].rm_so), line + m[2].rm_so);
			if (line[2] == 'T') {
				char key[140];
				snprintf(key, sizeof(key), " %s ", name);
				if (strstr(seen, key)) {
					diag("line %d: family %s declared twice", lineno, name);
					bad++;
				}
				strncat(seen, key + 1, sizeof(seen) - strlen(seen) - 1);
				snprintf(fam, sizeof(fam), "%s", name);
				snprintf(type, sizeof(type), "%s", line + m[3].rm_so);
			}
			continue;
		}
		if (regexec(&sample, line, 2, m, 0) != 0) {
			diag("line %d malformed: %s", lineno, line);
			bad++;
			continue;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line);
		size_t fl = strlen(fam);
		int in_family = strcmp(name, fam) == 0;
		if (!in_family && strcmp(type, "histogram") == 0 && strncmp(name, fam, fl) == 0)
			in_family = strcmp(name + fl, "_bucket") == 0 || strcmp(name + fl, "_sum") == 0 ||
				    strcmp(name + fl, "_count") == 0;
		if (!fam[0] || !in_family) {
			diag("line %d: %s outside its family (last TYPE: %s)", lineno, name, fam);
			bad++;
		}
	}
	regfree(&sample);
	regfree(&meta);
	return bad;
}

static void test_prometheus(void)
{
	static const char fam[] = "nfscached_upstream_rtt_seconds";
	char *t, series[160], buf[64];
	int wrong = 0;

	observe_sample();
	t = written(STATS_PROMETHEUS);
	is_int(prom_check(t), 0, "prometheus: every line well formed, families together");
	is_int(count_lines_with(t, "# HELP nfscached_upstream_rtt_seconds round trip of calls to the "
				   "upstream, per NFSv3 procedure\n"), 1,
	       "prometheus: one HELP line for the histogram family");
	is_int(count_lines_with(t, "# TYPE nfscached_upstream_rtt_seconds histogram\n"), 1,
	       "prometheus: one TYPE histogram line");
	for (int i = 0; i <= STATS_RTT_BOUNDS; i++) {
		const char *g, *r;
		snprintf(series, sizeof(series), "%s_bucket{proc=\"GETATTR\",le=\"%s\"}", fam, le_of(i));
		g = prom_value(t, series, buf, sizeof(buf));
		long long gv = g ? strtoll(g, NULL, 10) : -1;
		snprintf(series, sizeof(series), "%s_bucket{proc=\"READ\",le=\"%s\"}", fam, le_of(i));
		r = prom_value(t, series, buf, sizeof(buf));
		long long rv = r ? strtoll(r, NULL, 10) : -1;
		if (gv != getattr_cum[i] || rv != read_cum[i]) {
			diag("le=%s: GETATTR %lld, READ %lld", le_of(i), gv, rv);
			wrong++;
		}
	}
	is_int(wrong, 0, "prometheus: cumulative buckets of GETATTR and READ");
	snprintf(series, sizeof(series), "%s_sum{proc=\"GETATTR\"}", fam);
	const char *v = prom_value(t, series, buf, sizeof(buf));
	ok(v && strcmp(v, "12.014450") == 0, "prometheus: GETATTR sum in seconds (%s)", v ? v : "none");
	snprintf(series, sizeof(series), "%s_sum{proc=\"READ\"}", fam);
	v = prom_value(t, series, buf, sizeof(buf));
	ok(v && strcmp(v, "0.020000") == 0, "prometheus: READ sum in seconds (%s)", v ? v : "none");
	snprintf(series, sizeof(series), "%s_count{proc=\"GETATTR\"}", fam);
	v = prom_value(t, series, buf, sizeof(buf));
	ok(v && strcmp(v, "6") == 0, "prometheus: GETATTR count (%s)", v ? v : "none");
	is_int(count_lines_with(t, "nfscached_upstream_rtt_seconds_bucket{"), 2 * (STATS_RTT_BOUNDS + 1),
	       "prometheus: buckets for the two procedures with round trips only");
	free(t);
}

static void test_reset(void)
{
	char *t, *j, *p;
	int nonzero = 0;

	observe_sample();
	stats.conn_open = 3;
	stats_reset();
	for (int k = 0; k < STATS_NFS3_PROCS; k++) {
		const struct stats_rtt *h = &stats.upstream_rtt[k];
		nonzero += h->count != 0 || h->sum_us != 0;
		for (int i = 0; i <= STATS_RTT_BOUNDS; i++)
			nonzero += h->bucket[i] != 0;
	}
	is_int(nonzero, 0, "reset zeroes every bucket, count and sum");
	is_int(stats.conn_open, 3, "reset keeps the gauges");
	t = written(STATS_TEXT);
	j = written(STATS_JSON);
	p = written(STATS_PROMETHEUS);
	ok(!strstr(t, "upstream.rtt.") && !strstr(j, "upstream.rtt.") &&
	   !strstr(p, "nfscached_upstream_rtt_seconds"),
	   "after a reset no format writes a histogram");
	is_int(prom_check(p), 0, "prometheus without histograms: every line well formed");
	ok(json_flat_ok(j), "json without histograms: one flat object");
	free(t);
	free(j);
	free(p);
	stats_rtt_observe(NFS3_READ, 0.0025);
	t = written(STATS_TEXT);
	ok(text_bucket(t, "READ", "0.001") == 0 && text_bucket(t, "READ", "0.0025") == 1 &&
	   text_value(t, "upstream.rtt.READ.count") == 1 && text_value(t, "upstream.rtt.READ.sum_us") == 2500,
	   "counting starts again from zero after a reset");
	free(t);
}

/* Export names from an upstream's EXPORT list: any bytes but NUL. */
static void test_export_names(void)
{
	char longname[302];

	diag("export names: escaped, valid UTF-8, distinct, any length");
	stats_export(1, 0x10)->cache_read_hits = 1;
	stats_export_name(0x10, "/c\tx");
	stats_export(1, 0x11)->cache_read_hits = 2;
	stats_export_name(0x11, "/c\rx");
	stats_export(1, 0x12)->cache_read_hits = 3;
	stats_export_name(0x12, "/bad\xff\xfe\xe2\x82");   /* not UTF-8, a cut sequence */
	stats_export(1, 0x13)->cache_read_hits = 4;
	stats_export_name(0x13, "/q\"b\\s\nn/\xc3\xa9");     /* quote, backslash, newline, U+00E9 */
	memset(longname, 'l', sizeof(longname) - 1);
	longname[0] = '/';
	longname[sizeof(longname) - 1] = '\0';
	stats_export(1, 0x14)->cache_read_hits = 5;
	stats_export_name(0x14, longname);
	ok(!stats_export_unnamed(), "every file system named, the 301-byte path too");

	char *prom = written_by(stats_write_exports, STATS_PROMETHEUS);
	ok(strstr(prom, "nfscached_export_cache_read_hits_total{export=\"/c\tx\"} 1\n") != NULL,
	   "Prometheus: a TAB stays as it is");
	ok(strstr(prom, "nfscached_export_cache_read_hits_total{export=\"/c\rx\"} 2\n") != NULL,
	   "Prometheus: a CR stays as it is: the two names stay distinct");
	ok(strstr(prom, "{export=\"/bad\\\\xff\\\\xfe\\\\xe2\\\\x82\"} 3\n") != NULL,
	   "Prometheus: bytes that are not UTF-8 written as \\xHH");
	ok(strstr(prom, "{export=\"/q\\\"b\\\\s\\nn/\xc3\xa9\"} 4\n") != NULL,
	   "Prometheus: quote, backslash and newline escaped, UTF-8 kept");
	char want[400];
	snprintf(want, sizeof(want), "{export=\"%s\"} 5\n", longname);
	ok(strstr(prom, want) != NULL, "Prometheus: the long name in full");
	free(prom);

	char *json = written_by(stats_write_exports, STATS_JSON);
	ok(strstr(json, "\"exports./c\\u0009x.cache.read.hits\":1") != NULL, "JSON: a TAB as \\u0009");
	ok(strstr(json, "\"exports./bad\\\\xff\\\\xfe\\\\xe2\\\\x82.cache.read.hits\":3") != NULL,
	   "JSON: bytes that are not UTF-8 written as \\xHH");
	free(json);

	char *text = written_by(stats_write_exports, STATS_TEXT);
	ok(strstr(text, "cache.read.hits{export=\"/c\\\\x09x\"} 1\n") != NULL, "text: a TAB as \\x09");
	free(text);
}

int main(void)
{
	test_edges();
	test_text();
	test_json();
	test_prometheus();
	test_reset();
	test_export_names();   /* last: the other checks see no export */
	return done();
}
