/*
 * test_ctl_top.c — the computing of `nfscachectl top` (daemon/ctl_top.c):
 * parsing `name value` replies, counter deltas across `stats reset`, rates,
 * quantiles from histogram bucket deltas (interpolation inside a bucket,
 * the +Inf bucket, procedures together), one frame from two samples; and
 * top_run() in plain text over a request function on a socket pair: the
 * deadline of an answer, the exit statuses, control bytes of a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "daemon/ctl_top.h"

#include "tests/unit/tap.h"

/* The upstream round-trip buckets as `stats` names them. */
static const char *const le_names[17] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
	"0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf",
};

/* Append to buf the histogram lines of `proc` whose per-bucket (not
 * cumulative) counts are per[0..16]; sum_us is made up. */
static void hist_lines(char *buf, size_t len, const char *proc, const unsigned *per)
{
	unsigned long long cum = 0;

	for (int i = 0; i < 17; i++) {
		cum += per[i];
		snprintf(buf + strlen(buf), len - strlen(buf), "upstream.rtt.%s{le=\"%s\"} %llu\n", proc,
			 le_names[i], cum);
	}
	snprintf(buf + strlen(buf), len - strlen(buf), "upstream.rtt.%s.count %llu\n"
		 "upstream.rtt.%s.sum_us %llu\n", proc, cum, proc, cum * 100);
}

static void sample_of(struct top_sample *s, double t_s, const char *stats, const char *status)
{
	memset(s, 0, sizeof(*s));
	s->t_s = t_s;
	if (top_vars_parse(&s->stats, stats) < 0 || top_vars_parse(&s->status, status) < 0) {
		diag("a sample did not parse");
		abort();
	}
}

static int near(double got, double want)
{
	return fabs(got - want) <= 1e-9 * (fabs(want) > 1 ? fabs(want) : 1);
}

/* top_quantile() over bounds[3] and counts[4], NAN when it has none. */
static double quant(double q, const double *bounds, const uint64_t *counts)
{
	double v;

	return top_quantile(q, bounds, counts, 3, &v) == 0 ? v : NAN;
}

/* top_rtt_quantile(), NAN when it has none. */
static double rtt(const struct top_sample *a, const struct top_sample *b, const char *proc, double q)
{
	double v;

	return top_rtt_quantile(a, b, proc, q, &v) == 0 ? v : NAN;
}

static void test_parse(void)
{
	struct top_vars v = { 0 };
	uint64_t x = 0;

	is_int(top_vars_parse(&v, "nfs3.calls.READ 12\n\ncache.read.hits 18446744073709551615\n"
				  "upstream_conn0 connected calls 5 in_flight 0\ncache culling"), 4,
	       "parse: four lines kept, the empty one skipped, the last without a newline");
	is_int(top_vars_u64(&v, "nfs3.calls.READ", &x), 0, "parse: a counter is read");
	is_int((long long)x, 12, "parse: its value");
	ok(top_vars_u64(&v, "cache.read.hits", &x) == 0 && x == UINT64_MAX,
	   "parse: 2^64 - 1 is a value");
	ok(top_vars_str(&v, "upstream_conn0") &&
	   strcmp(top_vars_str(&v, "upstream_conn0"), "connected calls 5 in_flight 0") == 0,
	   "parse: a value is the rest of the line");
	is_int(top_vars_u64(&v, "upstream_conn0", &x), -EINVAL, "parse: words are not a number");
	is_int(top_vars_u64(&v, "cache.read.misses", &x), -ENOENT, "parse: a missing name");
	ok(strcmp(top_vars_str(&v, "cache"), "culling") == 0, "parse: the cache state line");
	top_vars_free(&v);
	is_int(top_vars_parse(&v, "a 1\nnovalue\n"), -EINVAL, "parse: a line without a value is refused");
	is_int((long long)v.n, 0, "parse: and nothing is kept");
	is_int(top_vars_parse(&v, "a 1\nb \n"), -EINVAL, "parse: an empty value is refused");
	is_int(top_vars_parse(&v, " 1\n"), -EINVAL, "parse: an empty name is refused");
	ok(top_vars_parse(&v, "n 99999999999999999999\n") == 1 &&
	   top_vars_u64(&v, "n", &x) == -EINVAL, "parse: a value above 2^64 - 1 is not a number");
	top_vars_free(&v);
	ok(top_vars_parse(&v, "version 1\033]0;x\a\r\n") == 1 &&
	   strcmp(top_vars_str(&v, "version"), "1?]0;x??") == 0,
	   "parse: control bytes of a value are kept as '?'");
	top_vars_free(&v);
	top_vars_free(&v);
	top_vars_free(NULL);
}

static void test_deltas(void)
{
	struct top_sample a, b;
	uint64_t d = 0;

	is_int((long long)top_counter_delta(10, 25), 15, "delta: a counter going up");
	is_int((long long)top_counter_delta(1000, 7), 7,
	       "delta: a counter going down was reset: its new value is the delta");
	is_int((long long)top_counter_delta(5, 5), 0, "delta: unchanged");
	sample_of(&a, 10.0, "cache.read.bytes_local 1000000\ncache.read.hits 500\n", "");
	sample_of(&b, 12.0, "cache.read.bytes_local 7000000\ncache.read.hits 20\ncache.write.bytes 4\n", "");
	ok(top_stats_delta(&a, &b, "cache.read.bytes_local", &d) == 0 && d == 6000000,
	   "delta: from two samples");
	ok(near(top_rate(d, b.t_s - a.t_s), 3000000.0), "rate: 6 MB over 2 s is 3 MB/s");
	ok(top_stats_delta(&a, &b, "cache.read.hits", &d) == 0 && d == 20,
	   "delta: reset between samples: the new value (20), not a huge number");
	ok(top_stats_delta(&a, &b, "cache.write.bytes", &d) == 0 && d == 4,
	   "delta: a counter not in the first sample counts from 0");
	is_int(top_stats_delta(&a, &b, "cache.nope", &d), -ENOENT, "delta: a counter in neither");
	ok(top_rate(5, 0) == 0, "rate: no interval, no rate");
	top_sample_free(&a);
	top_sample_free(&b);
}

static void test_quantile(void)
{
	static const double bounds[3] = { 0.001, 0.01, 0.1 };
	double v = -1;

	/* 10 calls in (0.001, 0.01], 10 in (0.01, 0.1] */
	static const uint64_t c1[4] = { 0, 10, 20, 20 };
	v = quant(0.25, bounds, c1);
	ok(near(v, 0.0055),
	   "quantile: p25 halfway through the second bucket: 0.0055 (got %g)", v);
	v = quant(0.75, bounds, c1);
	ok(near(v, 0.055),
	   "quantile: p75 halfway through the third bucket: 0.055 (got %g)", v);
	v = quant(0.5, bounds, c1);
	ok(near(v, 0.01),
	   "quantile: p50 at a bucket's upper edge: 0.01 (got %g)", v);
	/* 4 calls in [0, 0.001]: the first bucket's lower bound is 0 */
	static const uint64_t c2[4] = { 4, 4, 4, 4 };
	v = quant(0.5, bounds, c2);
	ok(near(v, 0.0005),
	   "quantile: in the first bucket, from 0: 0.0005 (got %g)", v);
	/* 10 fast calls, 10 slower than every finite bound */
	static const uint64_t c3[4] = { 10, 10, 10, 20 };
	v = quant(0.99, bounds, c3);
	ok(near(v, 0.1),
	   "quantile: a rank in the +Inf bucket answers the highest finite bound (got %g)", v);
	v = quant(0.5, bounds, c3);
	ok(near(v, 0.001),
	   "quantile: p50 at the edge below the +Inf bucket (got %g)", v);
	static const uint64_t c4[4] = { 0, 0, 0, 0 };
	is_int(top_quantile(0.5, bounds, c4, 3, &v), -ENOENT, "quantile: no observation");
}

static void test_rtt(void)
{
	static char s1[8192], s2[8192], s3[8192];
	struct top_sample a, b, c;
	double v = -1;
	/* before: 100 READs under 100 us, 3 GETATTRs in (0.5 ms, 1 ms] */
	unsigned read1[17] = { [0] = 100 }, ga[17] = { [3] = 3 };
	/* after: 10 more READs in (5 ms, 10 ms], 10 WRITEs in (25 ms, 50 ms] */
	unsigned read2[17] = { [0] = 100, [6] = 10 }, wr[17] = { [8] = 10 };
	/* after a reset: 4 READs in (1 ms, 2.5 ms], none since */
	unsigned read3[17] = { [4] = 4 };

	hist_lines(s1, sizeof(s1), "READ", read1);
	hist_lines(s1, sizeof(s1), "GETATTR", ga);
	hist_lines(s2, sizeof(s2), "READ", read2);
	hist_lines(s2, sizeof(s2), "GETATTR", ga);
	hist_lines(s2, sizeof(s2), "WRITE", wr);
	hist_lines(s3, sizeof(s3), "READ", read3);
	sample_of(&a, 1, s1, "");
	sample_of(&b, 2, s2, "");
	sample_of(&c, 3, s3, "");

	v = rtt(&a, &b, "READ", 0.5);
	ok(near(v, 0.0075),
	   "rtt: READ p50 of the interval from bucket deltas: 7.5 ms, not the cumulative 0.1 ms (got %g)", v);
	v = rtt(&a, &b, "READ", 0.99);
	ok(near(v, 0.005 + 0.005 * 0.99),
	   "rtt: READ p99 interpolated in (5 ms, 10 ms] (got %g)", v);
	is_int(top_rtt_quantile(&a, &b, "GETATTR", 0.5, &v), -ENOENT,
	       "rtt: GETATTR had no call in the interval: none");
	v = rtt(&a, &b, "WRITE", 0.5);
	ok(near(v, 0.0375),
	   "rtt: WRITE, first seen in the second sample, counts from 0 (got %g)", v);
	v = rtt(&a, &b, NULL, 0.5);
	ok(near(v, 0.01),
	   "rtt: all procedures: 10 READs and 10 WRITEs, p50 at 10 ms (got %g)", v);
	v = rtt(&a, &b, NULL, 0.75);
	ok(near(v, 0.0375),
	   "rtt: all procedures: p75 inside the WRITEs' bucket (got %g)", v);
	v = rtt(&b, &c, "READ", 0.5);
	ok(near(v, 0.00175),
	   "rtt: after stats reset the new buckets are the delta (got %g)", v);
	is_int(top_rtt_quantile(&b, &c, "WRITE", 0.5, &v), -ENOENT, "rtt: a procedure gone after a reset");
	is_int(top_rtt_quantile(&c, &c, NULL, 0.5, &v), -ENOENT, "rtt: no call between equal samples");
	is_int(top_rtt_quantile(&a, &b, "READDIR", 0.5, &v), -ENOENT, "rtt: a procedure never called");
	top_sample_free(&a);
	top_sample_free(&b);
	top_sample_free(&c);
}

static void test_frame(void)
{
	static char s1[8192], s2[8192];
	unsigned read1[17] = { [0] = 1 }, read2[17] = { [0] = 1, [5] = 2 };
	struct top_sample a, b;
	struct top_frame f;
	char out[4096] = { 0 };

	strcpy(s1, "nfs3.calls.READ 100\nnfs3.calls.GETATTR 50\nnfs3.calls.ACCESS 9\n"
		   "mount3.calls.NULL 0\nmount3.calls.MNT 1\nupstream.calls.READ 70\n"
		   "cache.read.hits 60\ncache.read.partial_hits 10\ncache.read.misses 30\n"
		   "cache.attr.hits 40\ncache.attr.misses 10\ncache.lookup.hits 0\n"
		   "cache.read.bytes_local 0\ncache.read.bytes_upstream 0\n"
		   "cache.write.bytes 900\ncache.writeback.bytes 0\ncache.dirty.bytes 4096\n");
	strcpy(s2, "nfs3.calls.READ 300\nnfs3.calls.GETATTR 60\nnfs3.calls.ACCESS 9\n"
		   "mount3.calls.NULL 4\nmount3.calls.MNT 3\nupstream.calls.READ 80\n"
		   "cache.read.hits 210\ncache.read.partial_hits 30\ncache.read.misses 60\n"
		   "cache.attr.hits 52\ncache.attr.misses 10\ncache.lookup.hits 4\n"
		   "cache.read.bytes_local 16000000\ncache.read.bytes_upstream 2000000\n"
		   "cache.write.bytes 100\ncache.writeback.bytes 500000\ncache.dirty.bytes 8192\n");
	hist_lines(s1, sizeof(s1), "READ", read1);
	hist_lines(s2, sizeof(s2), "READ", read2);
	sample_of(&a, 100.0, s1, "version 0.1.0\nuptime_s 3700\nupstream connected\n"
		  "upstream_connections 2\nconnections 1\n");
	sample_of(&b, 102.0, s2, "version 0.1.0\nuptime_s 3702\nupstream connected\n"
		  "upstream_connections 2\nconnections 3\ncalls_in_flight 1\nstate serving\n"
		  "cache culling\ncache_objects 12\ncache_bytes 1500000\nunwritten_bytes 0\n"
		  "upstream_srtt_ms 4.250\n");
	top_frame_compute(&f, &a, &b);
	ok(near(f.interval_s, 2), "frame: the interval is the samples' distance");
	ok(near(f.calls_per_s, (200 + 10 + 0 + 4 + 2) / 2.0),
	   "frame: calls/s sums every nfs3 and mount3 procedure (got %g)", f.calls_per_s);
	ok(f.busiest[0].name && strcmp(f.busiest[0].name, "READ") == 0 && near(f.busiest[0].per_s, 100),
	   "frame: READ is the busiest at 100/s");
	ok(f.busiest[1].name && strcmp(f.busiest[1].name, "GETATTR") == 0 && near(f.busiest[1].per_s, 5),
	   "frame: then GETATTR at 5/s");
	ok(f.busiest[2].name && strcmp(f.busiest[2].name, "MOUNT_NULL") == 0,
	   "frame: the MOUNT NULL is told from the NFS NULL");
	ok(f.busiest[3].name && strcmp(f.busiest[3].name, "MNT") == 0 && !f.busiest[4].name,
	   "frame: procedures without a call are not among the busiest");
	ok(near(f.read_hits_per_s, 75) && near(f.read_partial_per_s, 10) && near(f.read_misses_per_s, 15),
	   "frame: READ hits, partial hits, misses per second");
	ok(f.read_hit_ratio.known && near(f.read_hit_ratio.v, 0.85),
	   "frame: hit ratio (hits + partial) / all READs = 0.85 (got %g)", f.read_hit_ratio.v);
	ok(f.ns_hit_ratio.known && near(f.ns_hit_ratio.v, 1.0),
	   "frame: namespace hit ratio: 16 hits, no miss");
	ok(near(f.local_bytes_per_s, 8e6) && near(f.upstream_bytes_per_s, 1e6),
	   "frame: 8 MB/s local, 1 MB/s fetched");
	ok(near(f.write_bytes_per_s, 50),
	   "frame: cache.write.bytes went down (reset): its new value over the interval, 50 B/s");
	ok(near(f.writeback_bytes_per_s, 250000), "frame: written back 0.25 MB/s");
	ok(f.rtt_p50_s.known && near(f.rtt_p50_s.v, 0.00375) && f.rtt[0].p50_s.known &&
	   !f.rtt[1].p50_s.known && !f.rtt[2].p99_s.known,
	   "frame: RTT p50 of READ in the interval; none for GETATTR and WRITE");
	ok(strcmp(f.srtt_ms, "4.250") == 0 && strcmp(f.cache_state, "culling") == 0 &&
	   f.dirty_bytes.known && f.dirty_bytes.v == 8192 && f.connections.v == 3,
	   "frame: srtt, cache state, dirty bytes, connections as reported");

	FILE *m = fmemopen(out, sizeof(out) - 1, "w");
	top_frame_write(m, &f);
	fclose(m);
	ok(strstr(out, "calls/s          108.0 ") != NULL, "text: calls/s");
	ok(strstr(out, "READ/s           hits 75.0  partial 10.0  misses 15.0  hit ratio 85.0%\n") != NULL,
	   "text: the READ line");
	ok(strstr(out, "MB/s             local 8.00  fetched 1.00  written 0.00  written back 0.25\n") != NULL,
	   "text: the MB/s line");
	ok(strstr(out, "  all            3.750      ") != NULL && strstr(out, "  GETATTR        -          -") != NULL,
	   "text: RTT in ms, `-` where no call");
	ok(strstr(out, "cache            culling  objects 12  bytes 1.5 MB  dirty 8.2 kB  unwritten 0 B\n") != NULL,
	   "text: the cache line");
	ok(strstr(out, "srtt 4.250 ms") != NULL && strstr(out, "up 1:01:42") != NULL, "text: srtt and uptime");
	ok(strchr(out, '\033') == NULL, "text: no escape code");
	int longest = 0;
	for (const char *p = out; *p;) {
		int len = (int)strcspn(p, "\n");
		longest = len > longest ? len : longest;
		p += len + (p[len] ? 1 : 0);
	}
	ok(longest <= 79, "text: lines fit 79 columns (longest %d)", longest);
	for (const char *p = out; *p;) {        /* the frame, as a diagnostic */
		int len = (int)strcspn(p, "\n");
		diag("%.*s", len, p);
		p += len + (p[len] ? 1 : 0);
	}

	/* a first frame: no rates, unknowns shown as `-` */
	top_frame_compute(&f, NULL, &b);
	ok(f.calls_per_s == 0 && !f.read_hit_ratio.known && !f.rtt_p50_s.known && !f.busiest[0].name,
	   "frame: a first sample alone has no rates");
	top_sample_free(&a);
	top_sample_free(&b);
}

/* A daemon on a socket pair: each request waits (through top's wait) for
 * one byte on fds[0], which `answer` writes first or not at all. */
struct fake {
	int fds[2];                 /* fds[0] non-blocking: the request's end */
	int answer;                 /* 1: the byte is written, the request answered */
	const char *error;          /* answer "error: ..." with this text */
	int requests, waits;
};

static int fake_request(void *arg, const char *line, top_wait_fn *wait, void *wait_ctx,
			char **reply, char *why, size_t why_len)
{
	struct fake *f = arg;
	char byte;
	int rc;

	f->requests++;
	if (f->answer && write(f->fds[1], "x", 1) != 1)
		return -EIO;
	while (read(f->fds[0], &byte, 1) != 1) {
		f->waits++;
		if ((rc = wait(wait_ctx, f->fds[0], POLLIN)) < 0)
			return rc;
	}
	if (f->error) {
		snprintf(why, why_len, "%s", f->error);
		return 1;
	}
	*reply = strdup(strcmp(line, "stats\n") == 0 ? "nfs3.calls.READ 7\n" : "version 0.1.0\n");
	return *reply ? 0 : -ENOMEM;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* top_run() --once over *f with its stdout and stderr into out[] and
 * err[]; the seconds it took into *took_s.  Returns its status. */
static int run_once(struct fake *f, double answer_timeout_s, char *out, size_t out_len,
		    char *err, size_t err_len, double *took_s)
{
	struct top_opts o = { .interval_s = 0.1, .answer_timeout_s = answer_timeout_s, .once = 1,
			      .request = fake_request, .request_arg = f };
	FILE *fo = tmpfile(), *fe = tmpfile();
	int saved_out, saved_err, rc;
	size_t n;

	if (!fo || !fe)
		abort();
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	dup2(fileno(fo), STDOUT_FILENO);
	dup2(fileno(fe), STDERR_FILENO);
	double t0 = mono_s();
	rc = top_run(&o);
	*took_s = mono_s() - t0;
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	rewind(fo);
	n = fread(out, 1, out_len - 1, fo);
	out[n] = '\0';
	rewind(fe);
	n = fread(err, 1, err_len - 1, fe);
	err[n] = '\0';
	fclose(fo);
	fclose(fe);
	return rc;
}

static void test_run(void)
{
	struct fake f = { .answer = 1 };
	char out[4096], err[1024];
	double took_s;
	int rc;

	ok(top_answer_timeout_s(1) == TOP_ANSWER_MIN_S && top_answer_timeout_s(0.1) == TOP_ANSWER_MIN_S,
	   "timeout: an interval shorter than %g s waits %g s for an answer", TOP_ANSWER_MIN_S,
	   TOP_ANSWER_MIN_S);
	ok(top_answer_timeout_s(60) == 60, "timeout: a longer interval waits the interval");
	char text[] = "a\033[2J\tb\x7f\r\n\xc3\xa9";
	top_text_printable(text);
	ok(strcmp(text, "a?[2J?b???\xc3\xa9") == 0,
	   "printable: control bytes and DEL as '?', UTF-8 kept (got \"%s\")", text);

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, f.fds) != 0 ||
	    fcntl(f.fds[0], F_SETFL, O_NONBLOCK) != 0) {
		diag("socketpair: %s", strerror(errno));
		abort();
	}
	rc = run_once(&f, 0.3, out, sizeof(out), err, sizeof(err), &took_s);
	is_int(rc, 0, "run: answered: status 0");
	is_int(f.requests, 4, "run: stats and status, twice");
	ok(strncmp(out, "nfscached 0.1.0  ", 17) == 0 && strstr(out, "\ncalls/s          0.0 "),
	   "run: a frame of the answers on stdout");
	is_int((long long)strlen(err), 0, "run: nothing on stderr");

	f.answer = 0;
	f.requests = f.waits = 0;
	rc = run_once(&f, 0.3, out, sizeof(out), err, sizeof(err), &took_s);
	is_int(rc, 2, "run: no answer: status 2");
	ok(took_s >= 0.3 && took_s < TOP_ANSWER_MIN_S,
	   "run: after the answer timeout (0.3 s), not before (took %.3f s)", took_s);
	ok(f.requests == 1 && f.waits >= 1, "run: the first request waited and was given up (%d, %d)",
	   f.requests, f.waits);
	ok(strcmp(err, "nfscachectl: the daemon did not answer within 0.3 s\n") == 0,
	   "run: the message says so (got \"%.*s\")", (int)strcspn(err, "\n"), err);
	is_int((long long)strlen(out), 0, "run: nothing on stdout");

	f.answer = 1;
	f.error = "not\033]0;the daemon\a";
	rc = run_once(&f, 0.3, out, sizeof(out), err, sizeof(err), &took_s);
	is_int(rc, 1, "run: an error answer: status 1");
	ok(strcmp(err, "nfscachectl: not?]0;the daemon?\n") == 0,
	   "run: its text without control bytes (got \"%.*s\")", (int)strcspn(err, "\n"), err);
	close(f.fds[0]);
	close(f.fds[1]);
}

int main(void)
{
	test_parse();
	test_deltas();
	test_quantile();
	test_rtt();
	test_frame();
	test_run();
	return done();
}
