/*
 * rng.h - a tiny pseudo-random generator (xorshift64*) for the jitter of
 * retries and leader election: enough to de-synchronise peers, never for
 * secrets. Not thread-safe: the owner of the state guards it.
 * Private to libk8s.
 */
#ifndef K8S_RNG_H
#define K8S_RNG_H

#include <stdint.h>
#include <unistd.h>
#include "k8s/object.h"

/* A seed that differs between processes, objects (`salt`) and starts. */
static inline uint64_t k8s__rng_seed(const void *salt)
{
	return ((uint64_t)k8s_monotonic_ms() << 20) ^ (uint64_t)(uintptr_t)salt ^
	       ((uint64_t)getpid() << 40) ^ 0x9e3779b97f4a7c15ULL;
}

/* The next number of the sequence in *state, uniform in [0, 1). */
static inline double k8s__rng_unit(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

#endif
