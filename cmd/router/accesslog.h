/*
 * accesslog.h - one JSON line per proxied request (docs/upstream.md#router-observability):
 * {"ts","level":"info","logger":"sandbox-router.access","msg":"request",
 *  "method","path","status","duration_ms","client_ip","sandbox_id",
 *  "sandbox_namespace","bytes_out","user_agent"} - client_ip is the socket
 * peer (X-Forwarded-For is not trusted), sandbox_id and sandbox_namespace
 * the raw header values. /healthz, /readyz and /metrics are not logged.
 * Lines are printed by cJSON (from nodes on the stack: no allocation for
 * a line under 2 KiB) and written whole (thread-safe).
 */
#ifndef RT_ACCESSLOG_H
#define RT_ACCESSLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
	const char *method, *path, *client_ip, *sandbox_id, *sandbox_namespace, *user_agent;
	int status;
	double duration_ms;
	uint64_t bytes_out;
} rt_access_entry;

/** True for the paths that are never logged. */
bool rt_access_skip(const char *path);

/**
 * The line for `e` at time `ts` (RFC 3339 text), with its trailing newline:
 * malloc'd (caller frees), or NULL when out of memory. Pure.
 */
char *rt_access_line(const rt_access_entry *e, const char *ts);

/** Writes the line for `e`, stamped now, to `out` in one write. */
void rt_access_log(FILE *out, const rt_access_entry *e);

#endif
