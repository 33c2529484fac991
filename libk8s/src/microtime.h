/*
 * microtime.h - the meta/v1 MicroTime wire form, shared by the Lease
 * (leaderelection.c) and Event (events.c) writers.
 *
 * Private to libk8s. MicroTime is RFC 3339 in UTC with exactly six
 * fractional digits ("2026-01-02T03:04:05.123456Z",
 * https://kubernetes.io/docs/reference/generated/kubernetes-api/v1.34/
 * #microtime-v1-meta); the API server rejects a Lease or events.k8s.io
 * Event whose MicroTime fields have another shape. Reading one back uses
 * k8s_time_parse() (object.h), which accepts any fraction.
 */
#ifndef K8S_MICROTIME_H
#define K8S_MICROTIME_H

#include <stddef.h>
#include <stdint.h>

/** Size of a buffer that holds any MicroTime string of years 0000-9999. */
#define K8S_MICROTIME_LEN 32

/** Wall-clock now in microseconds since the Unix epoch. */
int64_t k8s__now_us(void);

/**
 * Formats `us` (microseconds since the epoch) as a MicroTime string into
 * `buf` (`cap` bytes, at least K8S_MICROTIME_LEN). Returns `buf`.
 */
char *k8s__microtime_format(int64_t us, char *buf, size_t cap);

#endif
