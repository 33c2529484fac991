/*
 * leaderelection.h - leader election on a coordination.k8s.io/v1 Lease,
 * with the semantics of client-go's k8s.io/client-go/tools/leaderelection.
 *
 * Several candidates (processes, usually replicas of one controller) name
 * the same Lease (namespace/name) and each its own identity. A background
 * thread per candidate reads the Lease every retry period and:
 * - takes it when it is free (spec.holderIdentity empty, or no Lease yet:
 *   it is created) or expired;
 * - renews it (spec.renewTime) every retry period while it leads;
 * - stops leading when renewing has failed for longer than the renew
 *   deadline, or when the Lease names another holder.
 *
 * "Expired" is judged with the LOCAL monotonic clock only: a lease held by
 * someone else is expired when spec.leaseDurationSeconds have passed since
 * this candidate last saw the Lease record change. Timestamps written by
 * other machines are never compared with this machine's clock, so clock
 * skew between machines does not matter (a difference in clock *rate* does:
 * keep lease_duration / renew_deadline above the worst rate ratio, as
 * client-go's documentation explains).
 *
 * Every write carries the resourceVersion that was read (optimistic
 * concurrency, https://kubernetes.io/docs/reference/using-api/api-concepts/
 * #resource-versions): when two candidates race for a free lease, one write
 * wins and the other gets 409 Conflict and stays a follower.
 *
 * Lease fields written (https://kubernetes.io/docs/reference/kubernetes-api/
 * cluster-resources/lease-v1/): holderIdentity, leaseDurationSeconds,
 * acquireTime and renewTime (MicroTime: RFC 3339 with microseconds, UTC),
 * leaseTransitions (incremented each time the holder changes).
 *
 * Like client-go, this does not fence: for a short while after losing the
 * lease (at most the renew deadline after the last successful renewal) a
 * former leader may still believe it leads. k8s_leader_is_leader() turns
 * false at that deadline even when the elector thread is stuck in a request.
 */
#ifndef K8S_LEADERELECTION_H
#define K8S_LEADERELECTION_H

#include "k8s/client.h"
#include "asb/log.h"
#include "asb/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque leader elector (one candidate for one Lease). */
typedef struct k8s_leader k8s_leader;

/**
 * Leadership callback (on_started_leading, on_stopped_leading). Runs on
 * the elector thread, never with an internal lock held, never concurrently
 * with another callback of the same elector. It must return promptly (start
 * your leader-only work on other threads and return): renewals do not run
 * while it does. It may call k8s_leader_is_leader(), but must not call
 * k8s_leader_stop() or k8s_leader_free() (they wait for this thread).
 */
typedef void (*k8s_leader_fn)(void *userdata);

/**
 * Called when the observed holder of the Lease changes, including the
 * first holder observed and this candidate itself. `identity` is borrowed
 * for the call; "" means the Lease is free (released). Same threading
 * rules as k8s_leader_fn.
 */
typedef void (*k8s_leader_new_leader_fn)(const char *identity, void *userdata);

/** Randomisation of a follower's retry period (client-go's JitterFactor). */
#define K8S_LEADER_JITTER_FACTOR 1.2

#define K8S_LEADER_OPTIONS_VERSION 2

/**
 * Elector options; initialise with K8S_LEADER_OPTIONS_INIT. The defaults
 * are client-go's (and controller-runtime's): 15 s, 10 s, 2 s.
 * Constraints (checked by k8s_leader_new(), as client-go does):
 * lease_duration_ms > renew_deadline_ms > K8S_LEADER_JITTER_FACTOR *
 * retry_period_ms > 0, and lease_duration_ms >= 1000 because the Lease
 * stores whole seconds (a duration that is not a multiple of 1000 ms is
 * written rounded up). Version 1 structs end at `logger`.
 */
typedef struct {
	unsigned int version;         /**< K8S_LEADER_OPTIONS_VERSION */
	const char *lease_namespace;  /**< required; namespace of the Lease (copied) */
	const char *lease_name;       /**< required; name of the Lease (copied) */
	const char *identity;         /**< required; unique per candidate, e.g. the pod name (copied) */
	long lease_duration_ms;       /**< how long followers wait on an unrenewed lease; default 15000 */
	long renew_deadline_ms;       /**< the leader gives up after failing to renew this long; default 10000 */
	long retry_period_ms;         /**< interval between attempts; default 2000 */
	bool release_on_cancel;       /**< on k8s_leader_stop() a leader frees the Lease; default true */
	k8s_leader_fn on_started_leading;      /**< optional */
	k8s_leader_fn on_stopped_leading;      /**< optional */
	k8s_leader_new_leader_fn on_new_leader; /**< optional */
	void *userdata;               /**< passed to the callbacks */
	asb_logger *logger;           /**< borrowed; NULL: silent */
	/** Version 2. Borrowed, must outlive the elector; NULL: no metrics.
	 *  Exposes leader_election_master_status{name=lease_name} (gauge), as
	 *  client-go's leader election reports it through controller-runtime's
	 *  metrics provider: 1 while k8s_leader_is_leader() is true, else 0
	 *  (before the first acquisition, as a follower, after losing the
	 *  lease or its renew deadline, after k8s_leader_stop()). Read at each
	 *  scrape, so it is never staler than k8s_leader_is_leader(). One
	 *  elector per lease name per registry (a second would repeat the
	 *  series). */
	asb_metrics_registry *metrics;
} k8s_leader_options;

#define K8S_LEADER_OPTIONS_INIT { .version = K8S_LEADER_OPTIONS_VERSION, \
	.lease_duration_ms = 15000, .renew_deadline_ms = 10000, .retry_period_ms = 2000, \
	.release_on_cancel = true }

/**
 * Fills `opts` with the defaults of K8S_LEADER_OPTIONS_INIT (`version` 1
 * or 2; a version 1 struct is filled up to `logger`). Returns 0, or
 * ASB_EINVAL for a NULL `opts` or an unknown version. Thread-safe.
 */
K8S_EXTERN int k8s_leader_options_init(k8s_leader_options *opts,
                                       unsigned int version);

/**
 * Creates an elector (not started) for the Lease and identity in `opts`
 * (strings copied). `client` is borrowed and must outlive the elector. One
 * call of the client may last (max_retries + 1) * timeout_ms plus the
 * backoffs (k8s_client_options); keep that well below renew_deadline_ms, so
 * that a hung request cannot hold the elector thread past the deadline (a
 * dedicated client with e.g. timeout_ms 2000 and max_retries 1 for the
 * defaults). k8s_leader_is_leader() is right even then; only the
 * on_stopped_leading callback would come late. The client's identity needs
 * get, create and update on coordination.k8s.io leases in the Lease's
 * namespace.
 *
 * @return 0; ASB_EINVAL for a missing field, an unknown options version,
 *         durations that break the constraints above (message says which)
 *         or a leader_election_master_status family of another shape in
 *         `metrics`; ASB_ENOMEM.
 */
K8S_EXTERN int k8s_leader_new(k8s_leader **out, k8s_client *client,
                              const k8s_leader_options *opts);

/**
 * Starts the elector thread, which tries to acquire the Lease at once.
 * Call once; an elector is not restarted after k8s_leader_stop().
 * Returns 0, ASB_EINVAL (already started) or ASB_ERROR (no thread).
 * Not thread-safe with respect to k8s_leader_stop()/free() on the same
 * elector.
 */
K8S_EXTERN int k8s_leader_start(k8s_leader *le);

/**
 * Stops the elector and waits for its thread. A leader first calls
 * on_stopped_leading (so that its leader-only work has ended before anyone
 * else may start it), then, with release_on_cancel, releases the Lease:
 * holderIdentity "", leaseDurationSeconds 1, so a follower takes over at
 * its next attempt instead of waiting a whole lease duration. Blocks for at
 * most one request in flight plus the release (each bounded by the client's
 * timeout). NULL accepted; safe to call twice and on an elector never
 * started. Must not be called from an elector callback.
 */
K8S_EXTERN void k8s_leader_stop(k8s_leader *le);

/** Stops if needed and frees; NULL accepted. */
K8S_EXTERN void k8s_leader_free(k8s_leader *le);

/**
 * True while this candidate leads: it acquired or renewed the Lease less
 * than renew_deadline_ms ago (local monotonic clock) and has not stopped.
 * Thread-safe; cheap (one mutex).
 */
K8S_EXTERN bool k8s_leader_is_leader(k8s_leader *le);

/**
 * Copies the identity of the last observed holder ("" when the Lease is
 * free or not yet read) into `buf` (`cap` bytes, truncated and always
 * NUL-terminated when cap > 0). Informational (logs, metrics). Returns the
 * identity's full length in bytes. Thread-safe.
 */
K8S_EXTERN size_t k8s_leader_get_leader(k8s_leader *le, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
