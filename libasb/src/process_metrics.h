/*
 * process_metrics.h - internal to libasb: the /proc parsing behind
 * asb_metrics_register_process() (asb/metrics.h), split out so that unit
 * tests can feed it fixed texts and a fixture directory tree.
 *
 * Every parser takes the whole text of one file, NUL-terminated, and
 * returns 0 or ASB_EDECODE (message names the file and what is wrong).
 * Pure and thread-safe.
 */
#ifndef ASB_PROCESS_METRICS_H
#define ASB_PROCESS_METRICS_H

#include <stdint.h>
#include "asb/metrics.h"

/** The fields of /proc/<pid>/stat (proc_pid_stat(5)) the collector uses. */
typedef struct {
	uint64_t utime, stime;    /**< clock ticks (fields 14, 15) */
	uint64_t starttime;       /**< clock ticks after boot (field 22) */
	uint64_t vsize;           /**< bytes (field 23) */
	int64_t rss;              /**< pages (field 24) */
} asb__proc_stat;

/**
 * Parses /proc/<pid>/stat. The command name (field 2) is in parentheses
 * and may itself hold spaces and ')': the fields after it are found from
 * the last ')'.
 */
int asb__proc_parse_stat(const char *text, asb__proc_stat *out);

/** The `btime` line of /proc/stat: boot time, seconds since the epoch. */
int asb__proc_parse_btime(const char *text, uint64_t *out);

/**
 * The soft limit of the line of /proc/<pid>/limits whose name is `name`
 * ("Max open files", "Max address space"); "unlimited" reads as 2^64 - 1,
 * as prometheus/procfs reads it.
 */
int asb__proc_parse_limit(const char *text, const char *name, double *out);

/**
 * IpExt InOctets and OutOctets of /proc/<pid>/net/netstat (the network
 * namespace's bytes received and sent). A file without those columns gives
 * 0 for them, as prometheus/procfs does.
 */
int asb__proc_parse_netstat(const char *text, double *in, double *out);

/** What asb__proc_read() fills. */
enum {
	ASB__PROC_STAT = 1,       /**< cpu, memory, start time (stat + /proc/stat) */
	ASB__PROC_FDS = 2,        /**< open_fds */
	ASB__PROC_LIMITS = 4,     /**< max_fds, max_virtual_bytes */
	ASB__PROC_NETSTAT = 8     /**< network_* */
};

/** One reading of the process figures, in the collector's units. */
typedef struct {
	unsigned int have;        /**< ASB__PROC_* bits read successfully */
	double cpu_seconds;       /**< (utime + stime) / ticks per second */
	double resident_bytes;    /**< rss * page size */
	double virtual_bytes;
	double start_time_seconds; /**< btime + starttime / ticks per second */
	double open_fds;
	double max_fds;
	double max_virtual_bytes;
	double network_receive_bytes;
	double network_transmit_bytes;
} asb__proc_figures;

/**
 * Reads the `what` parts (ASB__PROC_* bits) of `root`/self/... and
 * `root`/stat, `root` being "/proc" or a fixture tree of the same shape.
 * Parts that cannot be read are left out of `have` (the collector then
 * omits their families, as client_golang does without ReportErrors).
 * Open descriptors: on procfs the size of the fd directory (Linux 6.2+),
 * else the entries listed. Thread-safe.
 */
void asb__proc_read(const char *root, unsigned int what, asb__proc_figures *out);

/**
 * asb_metrics_register_process() reading `root` instead of "/proc". `root`
 * is borrowed and must outlive the registry (a string literal).
 */
int asb__metrics_register_process_at(asb_metrics_registry *r, const char *root);

#endif
