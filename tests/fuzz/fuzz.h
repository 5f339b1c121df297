/*
 * fuzz.h — what the libFuzzer targets under tests/fuzz/ share: the entry
 * point's prototype and an invariant check that aborts (a crash libFuzzer
 * reports with the input) instead of assert(), which NDEBUG would remove.
 */
#ifndef NFSCACHED_FUZZ_H
#define NFSCACHED_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* For a target's model of the code under test: its loops and comparisons
 * are no coverage worth tracing, and tracing them costs most of the time. */
#define FUZZ_MODEL __attribute__((no_sanitize("coverage")))

#define FUZZ_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#endif
