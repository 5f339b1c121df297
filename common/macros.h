/*
 * macros.h — the few macros every layer uses: container_of (the struct
 * that embeds a member handed to a callback, as the Linux kernel's) and
 * ARRAY_SIZE of a real array.
 */
#ifndef NFSCACHED_MACROS_H
#define NFSCACHED_MACROS_H

#include <stddef.h>

/* The struct of type `type` whose member `member` is at `ptr`. */
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Elements of an array (not of a pointer). */
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
