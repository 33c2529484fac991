/*
 * metrics.h - a Prometheus metrics registry: counters, gauges and
 * histograms, exposed in the Prometheus text format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format).
 *
 * The model is client_golang's, reduced:
 * - an asb_metrics_registry holds metric families. There is no global
 *   registry: the application creates one and hands it to every component
 *   that records metrics (client, work queue, controller, its own code);
 * - an asb_metric is one family (name, help, type) whose label names are
 *   fixed at registration; each distinct tuple of label values is a
 *   asb_metric_series, created on first use and kept as long as the
 *   registry (a "vector" in client_golang's words);
 * - const labels carry the same value on every series of a family (e.g.
 *   build metadata);
 * - collector callbacks compute a family's samples at scrape time, for
 *   values that are cheaper to read than to track (cache sizes, ages).
 *
 * The output follows client_golang byte for byte where it can: families
 * sorted by name, series sorted by label values, label pairs sorted by
 * label name (histogram `le` last), floats formatted as Go's
 * strconv.FormatFloat(v, 'g', -1, 64), families without series omitted.
 *
 * Thread-safety: everything here may be called from any thread. Recording
 * on a series is lock-free (C11 atomics); finding a series by label values
 * takes a per-family read lock (write lock only the first time a tuple is
 * seen), so callers on hot paths keep the asb_metric_series pointer.
 */
#ifndef ASB_METRICS_H
#define ASB_METRICS_H

#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque registry of metric families. */
typedef struct asb_metrics_registry asb_metrics_registry;

/** Opaque metric family; owned by its registry. */
typedef struct asb_metric asb_metric;

/** Opaque series (one tuple of label values); owned by its family. */
typedef struct asb_metric_series asb_metric_series;

/** Scrape-time sink handed to collector callbacks. */
typedef struct asb_metrics_emitter asb_metrics_emitter;

/** Content-Type of asb_metrics_registry_expose()'s output. */
#define ASB_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/** Metric types (the `# TYPE` line). */
typedef enum {
	ASB_METRIC_COUNTER = 0,   /**< monotonically increasing */
	ASB_METRIC_GAUGE = 1,     /**< goes up and down */
	ASB_METRIC_HISTOGRAM = 2  /**< cumulative buckets, _sum and _count */
} asb_metric_type;

#define ASB_METRIC_OPTIONS_VERSION 2

/**
 * Describes a metric family to register. Strings and arrays are copied.
 */
typedef struct {
	unsigned int version;            /**< ASB_METRIC_OPTIONS_VERSION */
	asb_metric_type type;            /**< default ASB_METRIC_COUNTER */
	const char *name;                /**< required; [a-zA-Z_:][a-zA-Z0-9_:]* */
	const char *help;                /**< the `# HELP` text; NULL: "" */
	/** Variable label names, NULL-terminated; NULL: none. Each matches
	 *  [a-zA-Z_][a-zA-Z0-9_]*, does not start with "__", and is not "le"
	 *  for a histogram. */
	const char *const *label_names;
	/** Const labels: name, value, name, value, ..., NULL; NULL: none. */
	const char *const *const_labels;
	/** Histogram bucket upper bounds, strictly increasing and finite (a
	 *  trailing +Inf is dropped: the +Inf bucket is always there). NULL
	 *  with nbuckets 0: client_golang's DefBuckets (.005 ... 10). */
	const double *buckets;
	size_t nbuckets;                 /**< entries in `buckets` */
	/** Version 2: the most series the family holds, for labels whose
	 *  values an outside party chooses (a cardinality bound); 0: no bound.
	 *  Once the family holds that many, a new tuple of label values is
	 *  recorded in its overflow tuple instead: the tuple with each non-NULL
	 *  entry of `overflow_values` in place of the caller's value (as
	 *  OpenTelemetry's cardinality limit folds into one overflow series).
	 *  Overflow tuples are admitted past the bound, so the family holds at
	 *  most max_series series plus one per combination of the values the
	 *  overflow keeps: the caller bounds those labels. */
	size_t max_series;
	/** Version 2, required with max_series: one entry per variable label,
	 *  NULL to keep the caller's value, at least one non-NULL (copied). */
	const char *const *overflow_values;
} asb_metric_options;

#define ASB_METRIC_OPTIONS_INIT { .version = ASB_METRIC_OPTIONS_VERSION, .type = ASB_METRIC_COUNTER }

/** Fills `opts` with defaults; ASB_EINVAL for an unknown version (1 and 2
 *  are known; a version 1 struct ends at `nbuckets`). */
ASB_EXTERN int asb_metric_options_init(asb_metric_options *opts,
                                       unsigned int version);

/** Creates an empty registry. Returns 0, ASB_EINVAL (out NULL) or ASB_ENOMEM. */
ASB_EXTERN int asb_metrics_registry_new(asb_metrics_registry **out);

/**
 * Frees a registry with its families and series; NULL is accepted. Every
 * asb_metric and asb_metric_series pointer of it becomes invalid, so
 * components that record into it must be freed first.
 */
ASB_EXTERN void asb_metrics_registry_free(asb_metrics_registry *r);

/**
 * Registers a family, or returns the one already registered under that
 * name when it is identical (type, help, label names, const labels and
 * buckets): several components may then share a family, e.g. one work
 * queue metric family for all queues. `*out` is borrowed from the registry.
 *
 * @return 0; ASB_EINVAL for a bad name, label name, bucket list or options
 *         version, max_series without a valid overflow_values, or a name
 *         registered with a different shape (the message says which);
 *         ASB_ENOMEM.
 */
ASB_EXTERN int asb_metrics_register(asb_metric **out, asb_metrics_registry *r,
                                    const asb_metric_options *opts);

/** Number of series the family holds now (stored ones, not collectors'). */
ASB_EXTERN size_t asb_metric_size(asb_metric *m);

/** Number of variable labels of the family. */
ASB_EXTERN size_t asb_metric_label_count(const asb_metric *m);

/**
 * Returns the series for one tuple of label values, creating it (at 0) on
 * first use. `values` holds exactly asb_metric_label_count() strings, in
 * label-name order of registration (NULL with n 0 for a family without
 * labels); they are copied and must be valid UTF-8. `*out` stays valid
 * as long as the registry. In a family at its max_series, a new tuple
 * gives its overflow tuple's series (asb_metric_options).
 *
 * @return 0; ASB_EINVAL (wrong count, NULL or non-UTF-8 value); ASB_ENOMEM.
 */
ASB_EXTERN int asb_metric_series_get(asb_metric_series **out, asb_metric *m,
                                     const char *const *values, size_t n);

/**
 * Adds `v` to a counter (v >= 0) or a gauge (any sign). Lock-free.
 * @return 0, or ASB_EINVAL for a histogram or a negative counter increment.
 */
ASB_EXTERN int asb_metric_series_add(asb_metric_series *s, double v);

/** Sets a gauge to `v`. Lock-free. Returns 0, or ASB_EINVAL if not a gauge. */
ASB_EXTERN int asb_metric_series_set(asb_metric_series *s, double v);

/**
 * Records one observation in a histogram: it counts in the first bucket
 * whose upper bound is >= v (le means "less or equal"), else in +Inf, and
 * adds v to the sum. Lock-free. Returns 0, or ASB_EINVAL if not a histogram.
 */
ASB_EXTERN int asb_metric_series_observe(asb_metric_series *s, double v);

/** Current value of a counter or gauge, or the sum of a histogram. */
ASB_EXTERN double asb_metric_series_value(const asb_metric_series *s);

/** Number of observations of a histogram (0 for other types). */
ASB_EXTERN uint64_t asb_metric_series_count(const asb_metric_series *s);

/** asb_metric_series_get() then asb_metric_series_add(); same returns. */
ASB_EXTERN int asb_metric_add(asb_metric *m, const char *const *values,
                              size_t n, double v);

/** asb_metric_series_get() then asb_metric_series_set(); same returns. */
ASB_EXTERN int asb_metric_set(asb_metric *m, const char *const *values,
                              size_t n, double v);

/** asb_metric_series_get() then asb_metric_series_observe(); same returns. */
ASB_EXTERN int asb_metric_observe(asb_metric *m, const char *const *values,
                                  size_t n, double v);

/**
 * Computes samples of a counter or gauge family at scrape time: call
 * asb_metrics_emit() once per tuple of label values. Runs on the thread
 * that calls asb_metrics_registry_expose(); it must not register metrics
 * or add/remove collectors (the family's collector lock is held).
 */
typedef void (*asb_metric_collect_fn)(asb_metrics_emitter *e, void *userdata);

/**
 * Attaches a collector to a counter or gauge family; its samples are
 * written next to the family's stored series (emit tuples that no stored
 * series uses). Several collectors may feed one family (e.g. one per work
 * queue). Returns 0, ASB_EINVAL (histogram, NULL fn) or ASB_ENOMEM.
 */
ASB_EXTERN int asb_metric_add_collector(asb_metric *m, asb_metric_collect_fn fn,
                                        void *userdata);

/**
 * Detaches the collector registered with this exact (fn, userdata); waits
 * for a scrape that is running it. Call it before `userdata` goes away.
 * Unknown pairs are ignored.
 */
ASB_EXTERN void asb_metric_remove_collector(asb_metric *m,
                                            asb_metric_collect_fn fn,
                                            void *userdata);

/**
 * Emits one sample from a collector: label values as for
 * asb_metric_series_get() (copied), and the value.
 * @return 0; ASB_EINVAL (wrong count, NULL or non-UTF-8 value); ASB_ENOMEM.
 */
ASB_EXTERN int asb_metrics_emit(asb_metrics_emitter *e,
                                const char *const *values, size_t n,
                                double value);

/**
 * Writes every family in the text format 0.0.4 (ASB_METRICS_CONTENT_TYPE):
 * `# HELP` (backslash and newline escaped), `# TYPE`, then one line per
 * sample; label values escape backslash, double quote and newline;
 * histograms write cumulative `_bucket{le="..."}` lines ending with
 * `le="+Inf"`, then `_sum` and `_count`. Runs the collectors.
 *
 * @param out  receives a NUL-terminated string the caller frees with free()
 * @param len  receives its length in bytes; may be NULL
 * @return 0 or ASB_ENOMEM (then *out is NULL).
 */
ASB_EXTERN int asb_metrics_registry_expose(asb_metrics_registry *r,
                                           char **out, size_t *len);

/**
 * Fills `out[0..count-1]` with start, start*factor, start*factor^2, ...
 * (client_golang's ExponentialBuckets). Returns 0, or ASB_EINVAL when
 * start <= 0, factor <= 1 or count == 0.
 */
ASB_EXTERN int asb_metrics_exponential_buckets(double start, double factor,
                                               size_t count, double *out);

/**
 * Formats `v` as Go's strconv.FormatFloat(v, 'g', -1, 64) does, which is
 * how client_golang writes sample values and `le` bounds: the shortest
 * digits that read back exactly, in exponent form when the decimal
 * exponent is below -4 or at least 6 ("1e+06", "1.5e-05", "100000",
 * "0.0001"), and "+Inf", "-Inf", "NaN" for the special values. `cap`
 * should be at least 32 bytes (shorter buffers get a truncated string).
 * Pure; thread-safe. Returns `buf`.
 */
ASB_EXTERN char *asb_metrics_format_float(double v, char *buf, size_t cap);

/**
 * Registers the process_* families of client_golang's process collector
 * (the one controller-runtime registers), with its names, help texts and
 * types, computed from /proc at each scrape as prometheus/procfs does
 * (proc_pid_stat(5), proc_pid_limits, proc_pid_fd, /proc/stat):
 * - process_cpu_seconds_total (counter): user + system CPU time, seconds
 *   (utime + stime over the clock ticks per second);
 * - process_resident_memory_bytes (gauge): resident set (rss pages times
 *   the page size);
 * - process_virtual_memory_bytes (gauge): vsize;
 * - process_virtual_memory_max_bytes (gauge): soft RLIMIT_AS
 *   ("unlimited": 2^64 - 1, written 1.8446744073709552e+19);
 * - process_open_fds (gauge): descriptors open now;
 * - process_max_fds (gauge): soft RLIMIT_NOFILE;
 * - process_start_time_seconds (gauge): start time, seconds since the
 *   epoch (boot time + start ticks);
 * - process_network_receive_bytes_total and _transmit_bytes_total
 *   (counters): IpExt InOctets/OutOctets of /proc/self/net/netstat, i.e.
 *   of the process's network namespace (the pod), not of the process alone.
 * A family whose file cannot be read is left out of that scrape. Calling
 * it again on the same registry changes nothing. Linux only.
 *
 * @return 0; ASB_EINVAL (NULL registry, or a family of one of these names
 *         registered with another shape); ASB_ENOMEM.
 */
ASB_EXTERN int asb_metrics_register_process(asb_metrics_registry *r);

#ifdef __cplusplus
}
#endif
#endif
