/*
 * duration.h - Go's duration syntax (time.ParseDuration), the form every
 * Kubernetes component and controller-runtime flag takes ("30s", "1m30s",
 * "250ms"), so that flags and config files written for the Go programs
 * carry over unchanged.
 */
#ifndef K8S_DURATION_H
#define K8S_DURATION_H

#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Parses a Go duration (https://pkg.go.dev/time#ParseDuration): an optional
 * sign, then one or more decimal numbers, each with an optional fraction and
 * a unit (ns, us, µs, ms, s, m, h), e.g. "250ms", "1.5s", "1m30s", "-2h";
 * the bare "0" needs no unit. Writes nanoseconds to `*ns`. Pure; thread-safe.
 *
 * @return 0, or K8S_EINVAL (recorded, naming the value) for a NULL or
 *         malformed value, or one beyond +-2^63 ns.
 */
K8S_EXTERN int k8s_duration_parse(const char *s, int64_t *ns);

#ifdef __cplusplus
}
#endif
#endif
