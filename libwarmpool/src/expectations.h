/*
 * expectations.h - the SandboxWarmPool controller's expectations
 * bookkeeping (docs/api.md#expectations): per pool key, how many creations and
 * which deletions (by UID) were issued but not yet seen in the informer
 * cache, so that a lagging cache never makes a pass create or delete
 * twice. Like client-go's ControllerExpectations, with UIDs for deletions.
 *
 * A record is "satisfied" when absent, when nothing is pending, or when it
 * was last raised more than the timeout ago (5 minutes upstream): the
 * record is then dropped and the cache trusted, so a lost watch event can
 * never wedge a pool.
 *
 * Times are caller-supplied milliseconds of a monotonic clock (tests pass
 * their own). Thread-safety: every function may be called from any thread
 * (one mutex); informer handlers lower expectations while workers read
 * them. Private to libwarmpool: hidden in the shared library; the unit
 * tests reach them through libwarmpool_internal.
 */
#ifndef WP_EXPECTATIONS_H
#define WP_EXPECTATIONS_H

#include <stdbool.h>
#include <stdint.h>
#include "warmpool/api.h"

/** Upstream's expectations timeout. */
#define WP_EXPECTATIONS_TIMEOUT_MS (5 * 60 * 1000L)

typedef struct wp_expectations wp_expectations;

/**
 * Creates an empty tracker whose records expire `timeout_ms` (> 0) after
 * their last raise. @return 0, ASB_EINVAL (NULL out, timeout <= 0),
 * ASB_ENOMEM.
 */
int wp_expectations_new(wp_expectations **out, long timeout_ms);

/** Frees the tracker; NULL accepted. */
void wp_expectations_free(wp_expectations *e);

/**
 * True when the gate of `key` is open (see above). An expired record is
 * dropped by this call.
 */
bool wp_expectations_satisfied(wp_expectations *e, const char *key, int64_t now_ms);

/**
 * Atomically: when the gate of `key` is open, replaces its record by a
 * fresh one expecting `n` (>= 0) creations and returns true; otherwise
 * changes nothing and returns false. ASB_ENOMEM is reported as false with
 * the error recorded.
 */
bool wp_expectations_expect_creations(wp_expectations *e, const char *key, int n,
                                                int64_t now_ms);

/**
 * Lowers the pending creations of `key` by `n` (observed create events: 1;
 * creates that failed or were never sent: their count), never below zero.
 * No record: nothing.
 */
void wp_expectations_lower_creations(wp_expectations *e, const char *key, int n);

/**
 * Records that the member `uid` of `key` is being deleted (creating the
 * record when needed) and refreshes the record's raise time. An empty or
 * NULL `uid` is never recorded (returns 0).
 * @return 0 or ASB_ENOMEM.
 */
int wp_expectations_expect_deletion(wp_expectations *e, const char *key,
                                              const char *uid, int64_t now_ms);

/**
 * Clears the pending deletion of `uid` (observed delete event, failed or
 * NotFound delete). Unknown key or uid: nothing.
 */
void wp_expectations_deletion_observed(wp_expectations *e, const char *key,
                                                 const char *uid);

/**
 * True when `uid` of `key` is pending deletion and the record has not
 * expired (an expired record stops marking its UIDs).
 */
bool wp_expectations_deletion_pending(wp_expectations *e, const char *key,
                                                const char *uid, int64_t now_ms);

/** The pending creations of `key` (0 without a record); for tests and logs. */
int wp_expectations_pending_creations(wp_expectations *e, const char *key);

/** Drops every record of `key` (pool deleted, docs/api.md#expectations). */
void wp_expectations_forget(wp_expectations *e, const char *key);

#endif
