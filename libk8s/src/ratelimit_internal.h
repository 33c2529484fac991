/*
 * ratelimit_internal.h - the clock-free core of the token bucket, so that
 * the unit tests can drive it with made-up times. Private to libk8s.
 */
#ifndef K8S_RATELIMIT_INTERNAL_H
#define K8S_RATELIMIT_INTERNAL_H

#include <stdint.h>
#include "k8s/ratelimit.h"

/**
 * Reserves a token as if the monotonic clock read `now_ns`. When the delay
 * would exceed `max_wait_ms` (>= 0) nothing is taken and -1 is returned;
 * otherwise the delay in ms (rounded up). Thread-safe.
 */
long k8s__ratelimiter_reserve_at(k8s_ratelimiter *rl, int64_t now_ns,
                                 long max_wait_ms);

#endif
