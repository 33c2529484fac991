/*
 * reviewq.h - the router's token reviews, on threads of their own.
 *
 * A TokenReview (and its SubjectAccessReview) blocks for up to the review
 * timeout. On libuv's thread pool, which getaddrinfo shares, a flood of
 * requests with unknown tokens once held every worker and delayed every
 * request resolved by DNS by seconds. Here reviews run on
 * `workers` threads that serve nothing else, behind a bounded queue:
 * - at most `max_pending` reviews are queued or running at once; a review
 *   past that is refused (ASB_ESERVICEUNAVAILABLE: the caller answers 503);
 * - at most `max_per_client` of them were asked for by one client (an IPv4
 *   address, or an IPv6 /64: ASB_ETOOMANYREQUESTS, 429), so one client
 *   cannot fill the queue;
 * - clients take turns: a client's first pending review runs before
 *   another client's tenth, so one with many pending reviews does not hold
 *   every worker while others wait;
 * - requests for the same (Authorization, namespace, sandbox) while its
 *   review is queued or running share it (one API call, one verdict);
 * - a review whose every requester has gone (its `gone` flag set) is not
 *   sent: its requesters get RT_VERDICT_ERROR "client gone".
 * Verdicts are stored in the authorizer's cache by rt_authz_review().
 *
 * Thread-safety: rt_reviewq_submit() may be called from any thread;
 * rt_reviewq_free() by the owner once nothing submits any more.
 */
#ifndef RT_REVIEWQ_H
#define RT_REVIEWQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include "authz.h"

typedef struct rt_reviewq rt_reviewq;

/**
 * The outcome of a review, called once per submission on a review thread
 * (or on the thread calling rt_reviewq_free() for reviews never run, with
 * RT_VERDICT_ERROR "tokenreview: shutting down"). `detail`: the error text
 * of RT_VERDICT_ERROR, valid during the call. It must not block.
 */
typedef void (*rt_review_cb)(rt_verdict v, const char *detail, void *ud);

/**
 * One review, blocking: the verdict for `authorization` on sandbox ns/id,
 * the error text of RT_VERDICT_ERROR in `detail` (cap bytes). Called on a
 * review thread, several at once.
 */
typedef rt_verdict (*rt_review_fn)(void *ud, const char *authorization, const char *ns,
                                   const char *id, char *detail, size_t cap);

typedef struct {
	rt_authz *authz;            /**< tokenreview mode, reviewed by rt_authz_review();
	                                 borrowed, outlives the queue */
	rt_review_fn review;        /**< instead of rt_authz_review() when set (tests) */
	void *review_ud;            /**< its first argument */
	int workers;                /**< review threads, >= 1 */
	int max_pending;            /**< reviews queued or running, >= 1 */
	int max_per_client;         /**< of those asked for by one client; 0: no limit */
} rt_reviewq_options;

/** Starts the threads. 0, ASB_EINVAL (bad options) or ASB_ENOMEM/ASB_ERROR. */
int rt_reviewq_new(rt_reviewq **out, const rt_reviewq_options *o);

/**
 * Asks for the review of `authorization` (the request's Authorization
 * value, copied) for sandbox `id` in `ns`, on behalf of client address
 * `client` (an IP address as text, or "": counted as one client). `cb` gets the verdict once,
 * with `ud`; `gone` (may be NULL) is read before the review is sent: set
 * it when the requester no longer needs the answer (it must stay valid
 * until `cb` ran). Returns 0; ASB_ESERVICEUNAVAILABLE (max_pending
 * reviews pending, or the queue stopping); ASB_ETOOMANYREQUESTS
 * (max_per_client of them this client's); ASB_ENOMEM. `cb` is not called
 * on an error.
 */
int rt_reviewq_submit(rt_reviewq *q, const char *authorization, const char *ns, const char *id,
                      const char *client, const atomic_bool *gone, rt_review_cb cb, void *ud);

/** Reviews queued or running now (for tests and logs). */
int rt_reviewq_pending(rt_reviewq *q);

/**
 * Stops: waits for the reviews running now (each bounded by the review
 * client's timeout), answers the queued ones with RT_VERDICT_ERROR, joins
 * the threads and frees. NULL is accepted.
 */
void rt_reviewq_free(rt_reviewq *q);

#endif
