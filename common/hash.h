/*
 * hash.h — FNV-1a (Fowler/Noll/Vo), the one hash of the project's tables
 * (the object table, the namespace cache, the duplicate request cache):
 * cheap and good enough to spread handles, names and keys.  Chain a call's
 * result into the next to hash several pieces as one.
 */
#ifndef NFSCACHED_HASH_H
#define NFSCACHED_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV32_OFFSET 2166136261u
#define HASH_FNV64_OFFSET UINT64_C(14695981039346656037)

/* 32-bit FNV-1a of `len` bytes at `data`, continuing from `h`. */
static inline uint32_t hash_fnv1a32(uint32_t h, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

/* 64-bit FNV-1a likewise. */
static inline uint64_t hash_fnv1a64(uint64_t h, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

#endif
