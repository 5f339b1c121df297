/*
 * xalloc.h — allocation that never returns NULL (tmux xmalloc.c): on
 * failure it logs "xalloc: out of memory ..." at error level and aborts, so
 * callers need no failure path of their own.  Sizes from the wire are
 * bounded before anything is allocated (STYLE.md); these are for sizes the
 * daemon chose.
 */
#ifndef NFSCACHED_XALLOC_H
#define NFSCACHED_XALLOC_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* malloc(size); size 0 is taken as 1 so that the result is never NULL. */
void *xmalloc(size_t size) __attribute__((malloc));

/* calloc(n, size): zeroed; n or size 0 taken as 1; aborts when n * size
 * overflows. */
void *xcalloc(size_t n, size_t size) __attribute__((malloc));

/* realloc(p, n * size); aborts when n * size overflows.  p may be NULL. */
void *xreallocarray(void *p, size_t n, size_t size);

/* strdup(s); s must not be NULL. */
char *xstrdup(const char *s) __attribute__((malloc));

/* asprintf / vasprintf into a new string the caller frees. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2), malloc));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0), malloc));

/* open_memstream(3): a stream writing into *buf (the caller frees *buf after
 * fclose). */
FILE *xopen_memstream(char **buf, size_t *len);

#endif
