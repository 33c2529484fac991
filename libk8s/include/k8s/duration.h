/*
 * duration.h - parsing Go durations ("250ms", "1m30s"), the syntax of the
 * duration flags of Kubernetes components and of our commands.
 */
#ifndef K8S_DURATION_H
#define K8S_DURATION_H

#include <stdint.h>
#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Parses a Go duration (time.ParseDuration syntax,
 * https://pkg.go.dev/time#ParseDuration): an optional sign, then one or
 * more decimal numbers, each with an optional fraction and a unit (ns, us,
 * µs, ms, s, m, h), e.g. "250ms", "1.5s", "1m30s", "-2h"; the bare "0"
 * needs no unit. Writes nanoseconds to `*ns`. Pure; thread-safe.
 * @return 0, or -1 for a malformed value or one beyond +-2^63 ns (no
 *         last error is recorded: callers name their flag).
 */
K8S_EXTERN int k8s_duration_parse(const char *s, int64_t *ns);

#ifdef __cplusplus
}
#endif
#endif
