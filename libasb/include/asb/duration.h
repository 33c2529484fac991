/*
 * duration.h - parsing flag values in Go's syntax: durations ("250ms",
 * "1m30s") and booleans, as the flags of Kubernetes components and of our
 * commands take them.
 */
#ifndef ASB_DURATION_H
#define ASB_DURATION_H

#include <stdbool.h>
#include <stdint.h>
#include "asb/common.h"

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
ASB_EXTERN int asb_duration_parse(const char *s, int64_t *ns);

/**
 * As asb_duration_parse(), in whole milliseconds: a positive fraction of a
 * millisecond rounds up (so a tiny timeout or window is never silently 0),
 * a negative one towards zero. Pure; thread-safe.
 * @return 0, or -1 (malformed, or beyond the range of long).
 */
ASB_EXTERN int asb_duration_parse_ms(const char *s, long *ms);

/**
 * Parses a boolean flag value with Go's strconv.ParseBool spellings
 * (https://pkg.go.dev/strconv#ParseBool): 1, t, T, true, TRUE, True and
 * 0, f, F, false, FALSE, False. Pure; thread-safe.
 * @return 0, or -1 for anything else (NULL included).
 */
ASB_EXTERN int k8s_parse_bool(const char *s, bool *out);

#ifdef __cplusplus
}
#endif
#endif
