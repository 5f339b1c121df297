/*
 * tap.h — the few Test Anything Protocol helpers the unit tests use.
 *
 *   plan(n)                  print "1..n" (or call done() without a plan and
 *                            the plan is printed at the end)
 *   ok(cond, fmt, ...)       one test point; returns cond
 *   is_int(got, want, fmt)   ok(got == want) with both values shown on failure
 *   is_mem(got, want, n, fmt) ok(memcmp == 0) with the first difference shown
 *   diag(fmt, ...)           a "# " comment line on stdout
 *   todo_start(why)/todo_end()  mark the points in between "# TODO why"
 *   done()                   returns the process exit status: 0 when every
 *                            point passed (TODO points excepted) and the plan
 *                            was met, 1 otherwise
 *
 * Header-only, one test program per file; output goes to stdout, unbuffered
 * enough for the automake TAP driver.
 */
#ifndef NFSCACHED_TAP_H
#define NFSCACHED_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_planned = -1;   /* -1: no plan printed yet */
static int tap_run;            /* test points so far */
static int tap_failed;         /* failed points that count */
static const char *tap_todo;   /* non-NULL: current points are TODO */

static inline void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static inline void todo_start(const char *why)
{
	tap_todo = why;
}

static inline void todo_end(void)
{
	tap_todo = NULL;
}

static inline int tap_vok(int cond, const char *fmt, va_list ap)
{
	tap_run++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_run);
	vprintf(fmt, ap);
	if (tap_todo)
		printf(" # TODO %s", tap_todo);
	fputc('\n', stdout);
	if (!cond && !tap_todo)
		tap_failed++;
	fflush(stdout);
	return cond;
}

static inline int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cond = tap_vok(cond, fmt, ap);
	va_end(ap);
	return cond;
}

static inline int tap_is_int(long long got, long long want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline int tap_is_int(long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	int cond = got == want;

	va_start(ap, fmt);
	tap_vok(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		diag("    got: %lld, expected: %lld", got, want);
	return cond;
}

#define is_int(got, want, ...) tap_is_int((long long)(got), (long long)(want), __VA_ARGS__)

static inline int is_mem(const void *got, const void *want, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int is_mem(const void *got, const void *want, size_t n, const char *fmt, ...)
{
	va_list ap;
	int cond = got && want && memcmp(got, want, n) == 0;

	va_start(ap, fmt);
	tap_vok(cond, fmt, ap);
	va_end(ap);
	if (!cond && got && want) {
		const uint8_t *g = got, *w = want;
		for (size_t i = 0; i < n; i++) {
			if (g[i] != w[i]) {
				diag("    first difference at byte %zu: got 0x%02x, expected 0x%02x",
				     i, g[i], w[i]);
				break;
			}
		}
	} else if (!cond) {
		diag("    got a NULL buffer");
	}
	return cond;
}

static inline int done(void)
{
	if (tap_planned < 0) {
		printf("1..%d\n", tap_run);
	} else if (tap_planned != tap_run) {
		diag("planned %d tests but ran %d", tap_planned, tap_run);
		fflush(stdout);
		return 1;
	}
	if (tap_failed)
		diag("failed %d of %d tests", tap_failed, tap_run);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif
