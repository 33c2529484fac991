/*
 * events.h - an event recorder: creates events.k8s.io/v1 Events about
 * objects (what `kubectl describe` and `kubectl events` show), with the
 * aggregation and spam protection of client-go's event broadcaster
 * (k8s.io/client-go/tools/events, k8s.io/client-go/tools/record).
 *
 * Recording never blocks on the network and never fails the caller's
 * work: k8s_event_record() only updates in-memory state and queues the
 * write for a background thread (one per recorder). A full queue, the rate
 * limit, or an API error drops the event; drops are counted
 * (k8s_event_recorder_stats()) and logged, never returned as a failure of
 * the reconcile that recorded the event.
 *
 * Aggregation ("series", https://kubernetes.io/docs/reference/kubernetes-api/
 * cluster-resources/event-v1/): an event identical to one recorded less than
 * series_window_ms ago (same regarding and related object, type, reason,
 * action and note) does not create a new Event. Its occurrence is counted,
 * and the existing Event's `series` (count, lastObservedTime) is PATCHed -
 * the first repeat at once, later ones at most once per series_interval_ms
 * per Event, and the final count when the series ends (no repeat for
 * series_window_ms) or on k8s_event_recorder_flush(). The regarding
 * object's resourceVersion is not part of the identity, so that the same
 * failure reported across updates of an object still aggregates.
 *
 * Rate limit: each regarding object has a token bucket (burst, one token
 * per refill_interval_ms; client-go's defaults 25 and 5 min). Creating a
 * new Event takes a token; an event recorded with the bucket empty is
 * dropped. Repeats folded into a series cost no token: they cost no API
 * call beyond the paced series patches.
 *
 * Event names are "<regarding name>.<16 hex digits>", the hex digits being
 * the creation time in nanoseconds since the epoch (client-go's scheme).
 * An Event lives in the regarding object's namespace ("default" for a
 * cluster-scoped object). Event writes need create and patch on
 * events.k8s.io events in those namespaces.
 */
#ifndef K8S_EVENTS_H
#define K8S_EVENTS_H

#include <cjson/cJSON.h>
#include "k8s/client.h"
#include "asb/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque event recorder. Thread-safe. */
typedef struct k8s_event_recorder k8s_event_recorder;

/** The events.k8s.io/v1 resource (group events.k8s.io, version v1, "events"). */
K8S_EXTERN extern const k8s_resource k8s_resource_events_v1;

/** Event type (Event.type). */
typedef enum {
	K8S_EVENT_NORMAL = 0,   /**< "Normal" */
	K8S_EVENT_WARNING = 1   /**< "Warning" */
} k8s_event_type;

/**
 * The object an event is about (Event.regarding) or a second object it
 * involves (Event.related): a core/v1 ObjectReference. All strings are
 * borrowed for the duration of the call that takes the reference.
 */
typedef struct {
	const char *api_version;      /**< required, e.g. "v1", "agents.x-k8s.io/v1alpha1" */
	const char *kind;             /**< required, e.g. "Pod" */
	const char *namespace_;       /**< NULL or "" for a cluster-scoped object */
	const char *name;             /**< required */
	const char *uid;              /**< metadata.uid; NULL if unknown */
	const char *resource_version; /**< metadata.resourceVersion; NULL if unknown */
} k8s_event_ref;

/**
 * Fills `out` from an object's metadata (borrowing from `obj`). Objects
 * from a LIST or an informer cache often lack apiVersion and kind: pass
 * them in `api_version` and `kind`; NULL takes them from the object.
 * Returns 0, or ASB_EINVAL when the object has no name or no apiVersion or
 * kind can be found. Pure; thread-safe.
 */
K8S_EXTERN int k8s_event_ref_from(const cJSON *obj, const char *api_version,
                                  const char *kind, k8s_event_ref *out);

#define K8S_EVENT_RECORDER_OPTIONS_VERSION 1

/** Recorder options; initialise with K8S_EVENT_RECORDER_OPTIONS_INIT. */
typedef struct {
	unsigned int version;             /**< K8S_EVENT_RECORDER_OPTIONS_VERSION */
	const char *reporting_controller; /**< required; a qualified name, e.g. "agents.x-k8s.io/sandbox-controller" (copied) */
	const char *reporting_instance;   /**< required; e.g. "<controller>-<pod name>", at most 128 bytes (copied) */
	size_t queue_size;                /**< Events waiting to be created; default 1000 (client-go's maxQueuedEvents) */
	long series_window_ms;            /**< identical events this close form a series; default 360000 (6 min) */
	long series_interval_ms;          /**< at most one series PATCH per Event per interval; default 30000 */
	int burst;                        /**< rate limit: bucket size per object; default 25 */
	long refill_interval_ms;          /**< rate limit: one token back per interval; default 300000 (5 min) */
	int max_tries;                    /**< write attempts on transport/5xx/429 errors; default 12 */
	long retry_delay_ms;              /**< between attempts (+ up to 25% jitter); default 10000 */
	long shutdown_timeout_ms;         /**< k8s_event_recorder_free() flushes this long at most; default 5000 */
	asb_logger *logger;               /**< borrowed; NULL: silent */
} k8s_event_recorder_options;

#define K8S_EVENT_RECORDER_OPTIONS_INIT { .version = K8S_EVENT_RECORDER_OPTIONS_VERSION, \
	.queue_size = 1000, .series_window_ms = 360000, .series_interval_ms = 30000, \
	.burst = 25, .refill_interval_ms = 300000, .max_tries = 12, \
	.retry_delay_ms = 10000, .shutdown_timeout_ms = 5000 }

/**
 * Fills `opts` with the defaults of K8S_EVENT_RECORDER_OPTIONS_INIT.
 * Returns 0, or ASB_EINVAL for a NULL `opts` or an unknown version.
 */
K8S_EXTERN int k8s_event_recorder_options_init(k8s_event_recorder_options *opts,
                                               unsigned int version);

/**
 * Creates a recorder and starts its background thread. `client` is
 * borrowed and must outlive the recorder. Zero or negative numeric options
 * take their defaults.
 *
 * @return 0; ASB_EINVAL (missing reporting_controller/instance, unknown
 *         options version); ASB_ENOMEM; ASB_ERROR (no thread).
 */
K8S_EXTERN int k8s_event_recorder_new(k8s_event_recorder **out, k8s_client *client,
                                      const k8s_event_recorder_options *opts);

/**
 * Flushes (at most shutdown_timeout_ms, see k8s_event_recorder_flush()),
 * stops the background thread and frees the recorder. Events still queued
 * after the timeout are dropped. Blocks for at most the timeout plus one
 * request in flight. NULL accepted. No k8s_event_record() may run
 * concurrently or afterwards.
 */
K8S_EXTERN void k8s_event_recorder_free(k8s_event_recorder *rec);

/**
 * Records an event about `regarding` (and optionally `related`, NULL for
 * none). `reason` (UpperCamelCase, e.g. "FailedCreate") and `action` (what
 * was done or failed, e.g. "Create") are required, at most 128 bytes each;
 * `note` (human-readable, may be NULL) is cut to 1024 bytes, the API limit.
 * Every string is copied; nothing is kept borrowed. The Event's eventTime
 * is now (MicroTime).
 *
 * Never blocks on I/O (one mutex, memory work only). Callers may ignore the
 * return value: it exists for diagnostics and tests, and a reconcile should
 * never fail because an event could not be recorded.
 *
 * @return 0 when queued for creation or counted into a series;
 *         ASB_ETOOMANYREQUESTS when dropped by the rate limit or a full
 *         queue (counted and logged); ASB_EINVAL (missing or oversized
 *         field, unknown type); ASB_ENOMEM; ASB_ESHUTDOWN once the
 *         recorder is being freed. Thread-safe.
 */
K8S_EXTERN int k8s_event_record(k8s_event_recorder *rec,
                                const k8s_event_ref *regarding,
                                const k8s_event_ref *related,
                                k8s_event_type type, const char *reason,
                                const char *action, const char *note);

/** As k8s_event_record() with a printf-style note. */
K8S_EXTERN int k8s_event_recordf(k8s_event_recorder *rec,
                                 const k8s_event_ref *regarding,
                                 const k8s_event_ref *related,
                                 k8s_event_type type, const char *reason,
                                 const char *action, const char *note_fmt, ...)
	__attribute__((format(printf, 7, 8)));

/**
 * Writes now what is pending: queued Events are created (retry delays are
 * skipped once) and every series with uncounted repeats is PATCHed
 * regardless of series_interval_ms. Waits until each such write was tried
 * once, at most `timeout_ms` (< 0: no limit). Events recorded meanwhile
 * may or may not be included. Thread-safe.
 *
 * @return 0, or ASB_ETIMEOUT (recorded) when the writes took longer; the
 *         writes go on in the background either way.
 */
K8S_EXTERN int k8s_event_recorder_flush(k8s_event_recorder *rec, long timeout_ms);

/** Counters since the recorder was created. */
typedef struct {
	uint64_t recorded;             /**< k8s_event_record() calls that returned 0 */
	uint64_t aggregated;           /**< of those, repeats counted into a series */
	uint64_t created;              /**< Events created on the server */
	uint64_t series_patches;       /**< series PATCHes that succeeded */
	uint64_t dropped_rate_limited; /**< new events dropped: the object's bucket was empty */
	uint64_t dropped_queue_full;   /**< new events dropped: queue (or series table) full */
	uint64_t failed;               /**< writes given up: API rejection or max_tries reached */
} k8s_event_stats;

/** Copies the counters into `out`. Thread-safe. */
K8S_EXTERN void k8s_event_recorder_stats(k8s_event_recorder *rec, k8s_event_stats *out);

#ifdef __cplusplus
}
#endif
#endif
