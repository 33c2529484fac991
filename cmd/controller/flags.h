/*
 * flags.h - the command line of agent-sandbox-controller. Names and
 * defaults follow the upstream controller (spec/surfaces.md A.2), so that
 * existing Helm values and docs carry over. docs/controller.md lists them.
 */
#ifndef CONTROLLER_FLAGS_H
#define CONTROLLER_FLAGS_H

#include <stdbool.h>
#include <stdint.h>
#include "k8s/log.h"

typedef struct {
	const char *kubeconfig;
	const char *context;
	const char *cluster_domain;
	int sandbox_workers;
	k8s_log_format log_format;
	int log_level;
	const char *metrics_addr;
	const char *probe_addr;
	bool leader_elect;
	const char *leader_election_namespace;
	double kube_api_qps;
	int kube_api_burst;
	int api_connections;
	bool separate_watch_connection;
	/** --sandbox-write-behind-window in milliseconds (>= 0; 0: synchronous). */
	long sandbox_write_behind_window_ms;
} controller_flags;

/** The upstream defaults. */
void controller_flags_defaults(controller_flags *f);

/**
 * Parses argv into `f` (pointers into argv). Returns 0 to run, 1 when the
 * program should exit 0 (--help, --version: already printed), -1 on a bad
 * flag (the message, naming the flag, is printed on stderr).
 */
int controller_flags_parse(int argc, char **argv, controller_flags *f);

/**
 * Parses a Go duration (time.ParseDuration syntax): an optional sign, then
 * one or more decimal numbers, each with an optional fraction and a unit
 * (ns, us, µs, ms, s, m, h), e.g. "250ms", "1.5s", "1m30s", "-2h"; the bare
 * "0" needs no unit. Writes nanoseconds to `*ns`. Returns 0, or -1 for a
 * malformed value or one beyond +-2^63 ns. Used by every duration flag.
 */
int controller_parse_duration(const char *s, int64_t *ns);

#endif
