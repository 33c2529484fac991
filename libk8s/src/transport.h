/*
 * transport.h - the HTTP plumbing under the client, private to libk8s.
 *
 * A transport is N connection shards (upstream's --api-connections) and an
 * optional extra shard for lists and watches (--separate-watch-connection).
 * A shard is one libcurl multi handle driven by a thread of its own: the
 * multi handle owns the shard's connections, and because every transfer of
 * the shard goes through it, concurrent requests share one HTTP/2
 * connection as streams (curl opens another only past the server's stream
 * limit, or when the server speaks HTTP/1.1). Callers prepare a CURL easy
 * handle on their own thread, hand it to a shard, and wait; the shard
 * thread runs the transfer and its callbacks.
 *
 * Also here: the parsing of the response headers the client acts on
 * (Retry-After, Warning) and the retry backoff, kept free of I/O so the
 * unit tests can reach them. The k8s__ functions are exported (K8S_EXTERN)
 * only for those tests; they are not part of the public API.
 */
#ifndef K8S_TRANSPORT_H
#define K8S_TRANSPORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <curl/curl.h>
#include "k8s/common.h"

/* Idle easy handles kept for reuse (their options are reset each time). */
#define K8S__POOL_MAX 32
/* Most API connections (shards) a client may ask for. */
#define K8S__SHARDS_MAX 64

typedef struct k8s__shard k8s__shard;

/**
 * A transfer handed to a shard. The caller owns it (often on its stack)
 * and must not free it before it is done. `done`, `abort` and whatever a
 * streaming caller shares with its callbacks are guarded by the shard's
 * lock (k8s__xfer_lock()).
 */
typedef struct k8s__xfer {
	CURL *h;                 /* set up by the caller */
	CURLcode result;         /* valid once done */
	bool done;
	bool abort;              /* the caller asked the shard to drop it */
	pthread_cond_t cond;     /* broadcast when done, or by callbacks */
	k8s__shard *shard;       /* set by k8s__xfer_start() */
	struct k8s__xfer *prev, *next;  /* the shard's lists */
} k8s__xfer;

/** The shards of one client. */
typedef struct {
	k8s__shard *shards[K8S__SHARDS_MAX];
	size_t nshards;
	k8s__shard *watch;       /* lists and watches, or NULL: they use shards */
	atomic_uint next;        /* round robin over shards */
	pthread_mutex_t lock;    /* guards the idle handles */
	CURL *idle[K8S__POOL_MAX];
	size_t nidle;
} k8s__transport;

/**
 * Starts `nshards` (1..K8S__SHARDS_MAX) shard threads, plus one for lists
 * and watches when `separate_watch`. Returns 0, ASB_ENOMEM or ASB_ERROR
 * (recorded); on failure nothing is left running.
 */
int k8s__transport_init(k8s__transport *t, size_t nshards, bool separate_watch);

/** Stops the shard threads and frees everything. No transfer may be in flight. */
void k8s__transport_cleanup(k8s__transport *t);

/**
 * The shard for the next request: the list/watch shard when there is one
 * and `list_or_watch`, else the next request shard, round-robin.
 */
k8s__shard *k8s__transport_pick(k8s__transport *t, bool list_or_watch);

/** An easy handle with default options (reused when one is idle), or NULL. */
CURL *k8s__transport_handle(k8s__transport *t);

/** Gives a handle back for reuse (it must not be in a transfer). */
void k8s__transport_release(k8s__transport *t, CURL *h);

/** Prepares `x` for handle `h`. Returns 0 or ASB_ERROR (recorded). */
int k8s__xfer_init(k8s__xfer *x, CURL *h);
/** Releases what k8s__xfer_init() made; the transfer must be done. */
void k8s__xfer_destroy(k8s__xfer *x);

/**
 * Hands `x` to `s`; the shard thread runs it from now on. Returns 0, or
 * ASB_ESHUTDOWN when the shard is stopping (recorded).
 */
int k8s__xfer_start(k8s__shard *s, k8s__xfer *x);

/** Blocks until `x` is done. Takes the shard lock itself. */
void k8s__xfer_wait(k8s__xfer *x);

/** Starts `x` on `s` and waits: the blocking request of the client. */
CURLcode k8s__xfer_perform(k8s__shard *s, k8s__xfer *x);

/**
 * Asks the shard to drop `x` (it then completes with
 * CURLE_ABORTED_BY_CALLBACK unless it was done already). Call with the
 * shard lock held; returns at once.
 */
void k8s__xfer_abort_locked(k8s__xfer *x);

/** The shard lock of a started transfer, for streaming callers. */
void k8s__xfer_lock(k8s__xfer *x);
void k8s__xfer_unlock(k8s__xfer *x);

/**
 * With the lock held: waits at most `ms` for `x->cond` (a callback's
 * signal or completion). Spurious wakeups happen; re-check the state.
 */
void k8s__xfer_timedwait(k8s__xfer *x, long ms);

/* --- response headers ------------------------------------------------------ */

/* Bytes of Warning header values kept per response (more are dropped). */
#define K8S__WARNINGS_MAX 8192

/**
 * What the client keeps from a response's headers. Filled by
 * k8s__header_cb() on the shard thread; read by the caller once the
 * transfer is done (or, for a watch, once body data arrived).
 */
typedef struct {
	long retry_after_ms;     /* -1: no (valid) Retry-After */
	char warnings[K8S__WARNINGS_MAX];  /* Warning values, '\n'-separated */
	size_t warnings_len;
	time_t now;              /* wall clock for an HTTP-date Retry-After;
	                          * 0: time(NULL) when the header arrives */
} k8s__resp;

/** Resets `r` for a new response. */
void k8s__resp_init(k8s__resp *r);

/** CURLOPT_HEADERFUNCTION collecting into the k8s__resp in CURLOPT_HEADERDATA. */
size_t k8s__header_cb(char *buf, size_t size, size_t nitems, void *ud);

/**
 * Parses a Retry-After value (RFC 9110 10.2.3): delay-seconds, or an
 * HTTP-date taken relative to `now`. Returns the delay in ms (0 for a
 * date in the past), or -1 when the value is neither.
 */
K8S_EXTERN long k8s__retry_after_ms(const char *value, time_t now);

/** Called once per warning text found by k8s__warning_parse(). */
typedef void (*k8s__warning_fn)(const char *text, void *ud);

/**
 * Parses one Warning header value (RFC 7234 5.5: a comma-separated list of
 * `warn-code SP warn-agent SP warn-text [SP warn-date]`, warn-text a
 * quoted-string with backslash escapes) and calls `fn` with the unescaped
 * text of each warning whose code is 299 (the code the API server uses for
 * every warning, and the only one client-go surfaces). Malformed input
 * ends the parse. Returns the number of texts reported.
 */
K8S_EXTERN size_t k8s__warning_parse(const char *value, k8s__warning_fn fn,
                                     void *ud);

/**
 * The delay before retry number `attempt` (0 for the first retry):
 * 100 ms doubling each time, never more than `max_ms`, with up to 20%
 * added jitter from `*seed` (rand_r) so that clients that failed together
 * do not retry together.
 */
K8S_EXTERN long k8s__backoff_ms(int attempt, long max_ms, unsigned *seed);

/**
 * Whether a failed try may be sent again. Any request may be when it was
 * never sent (could not connect or resolve), or refused with 429
 * (kube-apiserver's priority and fairness rejects before running
 * anything). An `idempotent` one (running it twice changes nothing: GET,
 * DELETE, PUT with a resourceVersion) also may after a connection broke
 * mid-way or a 500, 502, 503 or 504: it may have run. TLS failures and
 * timeouts are never retried: the first would fail again, the second is
 * the caller's bound. `status` is 0 when no HTTP answer came.
 */
K8S_EXTERN bool k8s__retryable(bool idempotent, CURLcode res, long status);

#endif
