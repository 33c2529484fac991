/*
 * flags.h - the command line of sandboxd. Names and defaults follow
 * upstream sandboxd (docs/upstream.md#sandboxd-daemon) where it has the flag, so that
 * existing manifests carry over; docs/sandboxd.md lists every flag.
 */
#ifndef SBXD_FLAGS_H
#define SBXD_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "asb/log_flags.h"

typedef struct {
	const char *listen_host;        /**< --listen-host, default 127.0.0.1 */
	int rest_port;                  /**< --rest-port, default 8080 (REST + process API) */
	int runtime_port;               /**< --runtime-port, default 8888; 0: off */
	int grpc_port;                  /**< --grpc-port: accepted, checked, unused (no gRPC) */
	bool grpc_port_set;
	const char *root_dir;           /**< --root-dir > $SANDBOX_BASE_DIR > /workspace */
	const char *metadata_env_prefix;/**< default SANDBOX_ (empty falls back to it) */
	long shutdown_timeout_ms;       /**< --shutdown-timeout, default 10s */
	long http_idle_timeout_ms;      /**< --http-idle-timeout, default 60s */
	long stall_timeout_ms;          /**< --stall-timeout: a transfer without progress is cut; default 60s, 0: off */
	size_t stream_chunk_size;       /**< --stream-chunk-size, <= 0 means 4096 */
	long stream_keepalive_ms;       /**< --stream-keepalive, default 10s; 0: off */
	int max_processes;              /**< --max-processes, default 64 */
	uint64_t max_output_bytes;      /**< --max-output-bytes per stream, default 8 MiB */
	long max_tasks;                 /**< --max-tasks (RLIMIT_NPROC of children), 0: inherited */
	int idle_keepers;               /**< --idle-keepers per API, default 8; 0: a keeper per command */
	long kill_grace_ms;             /**< --kill-grace, default 2s */
	uint64_t max_upload_bytes;      /**< --max-upload-bytes, 0: unbounded */
	/** --log-format, --log-level and controller-runtime's zap flags
	 *  (asb/log_flags.h): JSON at info by default, as upstream's sandboxd. */
	asb_log_flags log;
} sandboxd_flags;

/** The defaults (before the environment and argv). */
void sandboxd_flags_defaults(sandboxd_flags *f);

/**
 * Parses argv into `f` (pointers into argv or the environment) as Go's
 * flag package reads upstream's (asb/flags.h ASB_FLAGS_GO): -flag or
 * --flag, =value or the next word, booleans bare or =value. Applies
 * $SANDBOX_BASE_DIR when --root-dir is not given, then validates (ports
 * 1..65535, REST and runtime ports distinct, non-empty root dir).
 * Returns 0 to run, 1 when the program should exit 0 (--help, --version:
 * already printed on stdout), -1 on a bad flag (message on stderr naming
 * the flag as given).
 */
int sandboxd_flags_parse(int argc, char **argv, sandboxd_flags *f);

/**
 * Parses a byte size: a non-negative integer with an optional binary
 * suffix Ki, Mi, Gi (or K, M, G, also 1024-based), e.g. "8Mi", "1G",
 * "4096". Returns 0 or -1 (malformed, overflow). Pure.
 */
int sandboxd_parse_bytes(const char *s, uint64_t *out);

#endif
