/*
 * leaderelection_internal.h - the pure part of leader election: reading a
 * Lease record, deciding what a candidate does next, and building the Lease
 * it writes. Private to libk8s; leaderelection.c does the I/O around it and
 * tests/unit/libk8s/test_leaderelection.c tests it without a cluster.
 */
#ifndef K8S_LEADERELECTION_INTERNAL_H
#define K8S_LEADERELECTION_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>

/**
 * The election fields of a Lease's spec (client-go's LeaderElectionRecord).
 * Strings are borrowed from the Lease object; missing ones read as "".
 */
typedef struct {
	const char *holder;        /**< spec.holderIdentity; "" when free */
	long duration_s;           /**< spec.leaseDurationSeconds; 0 when unset */
	const char *acquire_time;  /**< spec.acquireTime (MicroTime) */
	const char *renew_time;    /**< spec.renewTime (MicroTime) */
	long transitions;          /**< spec.leaseTransitions */
} k8s__lease_record;

/** Reads the record of `lease` (NULL or no spec: an empty record). */
void k8s__lease_record_from(const cJSON *lease, k8s__lease_record *out);

/**
 * True when two records hold the same values. A candidate restarts its
 * expiry countdown whenever the record it reads differs from the last one
 * it saw (client-go compares the raw record the same way).
 */
bool k8s__lease_record_equal(const k8s__lease_record *a,
                             const k8s__lease_record *b);

/** What a candidate does after reading the Lease. */
typedef enum {
	K8S__LEASE_ACQUIRE = 0, /**< free, expired or absent: write ourselves as holder */
	K8S__LEASE_RENEW = 1,   /**< ours: write a new renewTime */
	K8S__LEASE_WAIT = 2,    /**< held by someone else and not expired: retry later */
	K8S__LEASE_LOST = 3     /**< we led, but no longer do: stop leader work */
} k8s__lease_action;

/** A candidate's local view; all times on the local monotonic clock (ms). */
typedef struct {
	bool leading;         /**< we believe we lead */
	int64_t renewed_ms;   /**< start of our last successful acquire or renew */
	int64_t observed_ms;  /**< when we last saw the record change */
} k8s__lease_state;

/**
 * True when a leader's last successful renewal started `renew_deadline_ms`
 * or more ago: it must stop leading (false when not leading).
 */
bool k8s__lease_renew_overdue(const k8s__lease_state *st, int64_t now_ms,
                              long renew_deadline_ms);

/**
 * Decides the next step of candidate `identity` from the record it read
 * (`observed` NULL: the Lease does not exist) and its local state.
 * A lease held by another identity is expired once its own
 * leaseDurationSeconds have passed since `st->observed_ms`; the times in the
 * record are never compared with the local clock. Pure.
 */
k8s__lease_action k8s__lease_decide(const k8s__lease_record *observed,
                                    const k8s__lease_state *st,
                                    int64_t now_ms, const char *identity,
                                    long renew_deadline_ms);

/**
 * Builds the Lease to write for `action` (ACQUIRE or RENEW) as a new object
 * the caller frees: a copy of `current` (which keeps its resourceVersion, so
 * the write is optimistic) or, when `current` is NULL, a new Lease
 * `ns`/`name`. ACQUIRE sets acquireTime to now and counts one more
 * transition (0 for a new Lease); RENEW keeps both. Either way holder is
 * `identity`, leaseDurationSeconds `duration_s` and renewTime now
 * (`now_us`, microseconds since the epoch). Returns NULL when out of memory.
 */
cJSON *k8s__lease_desired(const cJSON *current, k8s__lease_action action,
                          const char *ns, const char *name,
                          const char *identity, long duration_s,
                          int64_t now_us);

/**
 * Builds the released form of `current` (new object, caller frees): holder
 * "", leaseDurationSeconds 1, acquireTime and renewTime now, transitions
 * unchanged (client-go's release()). NULL when out of memory.
 */
cJSON *k8s__lease_released(const cJSON *current, int64_t now_us);

/** Lease duration in whole seconds as written to the Lease: ceil(ms / 1000). */
long k8s__lease_duration_seconds(long lease_duration_ms);

#endif
