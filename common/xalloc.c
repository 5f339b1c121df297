/*
 * xalloc.c — the allocation wrappers of xalloc.h: one log line, then abort
 * (exit status of SIGABRT; a core for the administrator), as tmux does.
 */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"

static void __attribute__((noreturn)) xalloc_fail(const char *what, size_t n, size_t size)
{
	log_error("xalloc: out of memory: %s of %zu x %zu bytes", what, n, size);
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		xalloc_fail("malloc", 1, size);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		xalloc_fail("calloc", n, size);
	return p;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		xalloc_fail("realloc (overflow)", n, size);
	size_t bytes = n * size;
	void *q = realloc(p, bytes ? bytes : 1);

	if (!q)
		xalloc_fail("realloc", n, size);
	return q;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		xalloc_fail("strdup", 1, strlen(s) + 1);
	return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
	char *s;

	if (vasprintf(&s, fmt, ap) < 0)
		xalloc_fail("asprintf", 1, 0);
	return s;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

FILE *xopen_memstream(char **buf, size_t *len)
{
	FILE *f = open_memstream(buf, len);

	if (!f)
		xalloc_fail("open_memstream", 1, 0);
	return f;
}
