/*
 * events_internal.h - the pure part of the event recorder: aggregation
 * keys, the per-object token bucket, series bookkeeping, and the Event and
 * series-patch documents. Private to libk8s; events.c wraps them with the
 * queue and the writer thread, tests/unit/libk8s/test_events.c tests them
 * with chosen times and no cluster.
 */
#ifndef K8S_EVENTS_INTERNAL_H
#define K8S_EVENTS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "k8s/events.h"

/** Limits of events.k8s.io/v1 validation (k8s.io/kubernetes pkg/apis/core/validation/events.go). */
#define K8S__EVENT_NOTE_MAX 1024
#define K8S__EVENT_FIELD_MAX 128
/** An object name is a DNS subdomain (at most 253); ".<16 hex>" must still fit. */
#define K8S__EVENT_NAME_PREFIX_MAX (253 - 17)

/**
 * The aggregation key of an event: regarding and related (apiVersion,
 * kind, namespace, name, uid; not resourceVersion), type, reason, action,
 * note. Each field is length-prefixed so that no two different events
 * share a key. New string (caller frees), NULL when out of memory.
 */
char *k8s__event_key(const k8s_event_ref *regarding, const k8s_event_ref *related,
                     k8s_event_type type, const char *reason,
                     const char *action, const char *note);

/** The rate-limit key of an object (apiVersion, kind, namespace, name, uid). */
char *k8s__event_object_key(const k8s_event_ref *regarding);

/** A token bucket: `tokens` refill at one per interval up to the burst. */
typedef struct {
	double tokens;
	int64_t last_ms;   /**< monotonic time of the last refill */
} k8s__token_bucket;

/** A full bucket at `now_ms`. */
void k8s__bucket_init(k8s__token_bucket *b, int burst, int64_t now_ms);

/** Refills for the time since the last call, then takes one token if any. */
bool k8s__bucket_take(k8s__token_bucket *b, int burst, long refill_interval_ms,
                      int64_t now_ms);

/** True when the bucket is full at `now_ms` (it then equals a fresh one). */
bool k8s__bucket_full(const k8s__token_bucket *b, int burst,
                      long refill_interval_ms, int64_t now_ms);

/** Occurrences of one aggregated event and what the server knows of them. */
typedef struct {
	int count;                /**< occurrences so far; 1 for a single event */
	int written_count;        /**< count the server has (1 once created) */
	int64_t last_observed_ms; /**< monotonic time of the last occurrence */
	int64_t last_observed_us; /**< wall clock of the last occurrence (series.lastObservedTime) */
	int64_t last_write_ms;    /**< monotonic time of the last series write; 0: none yet */
	bool created;             /**< the Event exists on the server */
} k8s__event_series;

/** A first occurrence at `now_ms` / `now_us`. */
void k8s__series_start(k8s__event_series *s, int64_t now_ms, int64_t now_us);

/** One more occurrence. */
void k8s__series_observe(k8s__event_series *s, int64_t now_ms, int64_t now_us);

/**
 * True when the series ended: no occurrence for `window_ms`. An identical
 * event after that starts a new Event.
 */
bool k8s__series_expired(const k8s__event_series *s, int64_t now_ms, long window_ms);

/**
 * True when a series PATCH is due: the Event exists, the server's count is
 * behind, and either no series write happened yet (the first repeat is
 * written at once, as client-go does), `interval_ms` passed since the last
 * one, the series ended (its final count), or `force` (a flush).
 */
bool k8s__series_patch_due(const k8s__event_series *s, int64_t now_ms,
                           long interval_ms, long window_ms, bool force);

/**
 * Monotonic time at which k8s__series_patch_due() turns true without a
 * flush, or INT64_MAX when it never will (nothing to write).
 */
int64_t k8s__series_next_patch_ms(const k8s__event_series *s, long interval_ms,
                                  long window_ms);

/**
 * Writes the Event name "<name>.<16 lowercase hex digits of unix_ns>" into
 * `buf` (`cap` bytes); the object name is cut so the result is at most
 * 253 bytes.
 */
void k8s__event_name(char *buf, size_t cap, const char *object_name, int64_t unix_ns);

/** The Event's namespace: the regarding object's, or "default". */
const char *k8s__event_namespace(const k8s_event_ref *regarding);

/** Fields of an Event to build. */
typedef struct {
	const char *name, *ns;
	const k8s_event_ref *regarding, *related;
	k8s_event_type type;
	const char *reason, *action, *note;
	const char *reporting_controller, *reporting_instance;
	int64_t event_time_us;
	int series_count;             /**< >= 2: include a series */
	int64_t series_last_us;       /**< series.lastObservedTime */
} k8s__event_fields;

/** The events.k8s.io/v1 Event document (new, caller frees); NULL when out of memory. */
cJSON *k8s__event_build(const k8s__event_fields *f);

/**
 * The merge patch {"series":{"count":N,"lastObservedTime":"..."}} (new,
 * caller frees); NULL when out of memory.
 */
cJSON *k8s__event_series_patch(int count, int64_t last_observed_us);

/**
 * Length of the longest prefix of `s` of at most `max` bytes that does not
 * end inside a UTF-8 sequence.
 */
size_t k8s__utf8_prefix(const char *s, size_t max);

#endif
