/*
 * resume.h - resuming Sandboxes suspended for idleness, one at a time each
 * (docs/router.md#resume-on-request).
 *
 * A request for a Sandbox the cache shows suspended with the Suspend idle
 * policy (sbx_idle_resumable()) is held by the proxy (proxy.c) while the
 * Sandbox is resumed: its resume patch (rt_resume_patch()) is sent here,
 * on threads of their own (an API call blocks; never on a loop thread nor
 * on libuv's thread pool, which DNS lookups need), and the held requests
 * poll the cache until the Sandbox's pod is Ready (as do requests for a
 * Sandbox with that policy that runs without a Ready pod yet: starting,
 * or resumed by an earlier request; proxy.c `hold()`).
 *
 * Single flight: every request for a Sandbox asks (rt_resumeq_request())
 * each time it polls; one patch is sent per Sandbox and the requests
 * share it:
 * - while its patch is queued or running, asking again joins it;
 * - once it succeeded, no new patch for `settle_ms` (the watch brings the
 *   Sandbox's new operatingMode to the cache meanwhile);
 * - once it failed, a new one only after `retry_ms`.
 * At most `max_pending` Sandboxes are tracked at once (queued, running, or
 * in their settle or retry time); past that a request is refused for now
 * (ASB_ESERVICEUNAVAILABLE) and asks again at its next poll. Keys come
 * from Sandboxes found in the cache, never from raw headers.
 *
 * Thread-safety: rt_resumeq_request() and rt_resumeq_pending() from any
 * thread; rt_resumeq_free() by the owner once nothing asks any more.
 */
#ifndef RT_RESUME_H
#define RT_RESUME_H

#include <stdint.h>

typedef struct rt_resumeq rt_resumeq;

/**
 * Sends the resume patch of Sandbox ns/name (blocking; on a resume
 * thread, several at once for different Sandboxes). Returns 0 or an
 * ASB_E* code (ASB_ENOTFOUND: the Sandbox is gone).
 */
typedef int (*rt_resume_fn)(void *ud, const char *ns, const char *name);

/** A monotonic clock in ms (tests pass their own). */
typedef int64_t (*rt_clock_fn)(void);

typedef struct {
	rt_resume_fn resume;        /**< required */
	void *resume_ud;            /**< its first argument */
	rt_clock_fn clock;          /**< NULL: k8s_monotonic_ms() */
	int workers;                /**< resume threads, >= 1 */
	int max_pending;            /**< Sandboxes tracked at once, >= 1 */
	long settle_ms;             /**< after a success, no new patch this long (>= 0) */
	long retry_ms;              /**< after a failure, no new patch this long (>= 0) */
} rt_resumeq_options;

/** What rt_resumeq_request() did. */
enum {
	RT_RESUME_QUEUED = 0,       /**< a new patch was queued for the Sandbox */
	RT_RESUME_SHARED = 1,       /**< one is queued or running: joined */
	RT_RESUME_SETTLING = 2,     /**< one succeeded within settle_ms: none sent */
	RT_RESUME_BACKOFF = 3       /**< one failed within retry_ms: none sent */
};

/** Starts the threads. 0, ASB_EINVAL (bad options), ASB_ENOMEM or ASB_ERROR. */
int rt_resumeq_new(rt_resumeq **out, const rt_resumeq_options *o);

/**
 * Asks for Sandbox ns/name (each at most 63 bytes) to be resumed. Returns
 * RT_RESUME_* (>= 0), with the result of the latest patch for it in
 * `*last_rc` when not NULL (0, or its ASB_E* code; 0 when none finished
 * yet); or ASB_ESERVICEUNAVAILABLE (max_pending Sandboxes tracked, or
 * stopping), ASB_EINVAL, ASB_ENOMEM. Never blocks on the API.
 */
int rt_resumeq_request(rt_resumeq *q, const char *ns, const char *name, int *last_rc);

/** Patches queued or running now (for tests and logs). */
int rt_resumeq_pending(rt_resumeq *q);

/**
 * Stops: the patches running now finish (each bounded by the client's
 * timeout), queued ones are dropped, the threads joined, everything
 * freed. NULL accepted.
 */
void rt_resumeq_free(rt_resumeq *q);

#endif
