/*
 * array.h — a growable array of one element type (chrony array.h, as a
 * macro so that elements are typed): ARRAY(int) fds; then ARRAY_PUSH(&fds,
 * fd), fds.v[i] for i < fds.n, ARRAY_FREE(&fds).  Capacity doubles (from
 * 8); allocation failure aborts (xalloc.h).  A zeroed ARRAY is empty and
 * valid.
 */
#ifndef NFSCACHED_ARRAY_H
#define NFSCACHED_ARRAY_H

#include <stddef.h>
#include <stdlib.h>

#include "common/xalloc.h"

#define ARRAY(type) struct { type *v; size_t n, cap; }

/* Room for at least `want` elements in all. */
#define ARRAY_RESERVE(a, want) \
	do { \
		if ((want) > (a)->cap) { \
			size_t cap_ = (a)->cap ? (a)->cap : 8; \
			while (cap_ < (want)) \
				cap_ *= 2; \
			(a)->v = xreallocarray((a)->v, cap_, sizeof(*(a)->v)); \
			(a)->cap = cap_; \
		} \
	} while (0)

/* Append one element (an expression of the element type). */
#define ARRAY_PUSH(a, elem) \
	do { \
		ARRAY_RESERVE((a), (a)->n + 1); \
		(a)->v[(a)->n++] = (elem); \
	} while (0)

/* Make it empty, keeping the storage. */
#define ARRAY_CLEAR(a) ((a)->n = 0)

/* Free the storage; the array is empty and valid again. */
#define ARRAY_FREE(a) \
	do { \
		free((a)->v); \
		(a)->v = NULL; \
		(a)->n = (a)->cap = 0; \
	} while (0)

#endif
