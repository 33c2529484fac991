/*
 * client_internal.h - the client's fields and the request helpers that
 * client.c (verbs, retries, auth) shares with watch.c (streaming).
 * Private to libk8s.
 */
#ifndef K8S_CLIENT_INTERNAL_H
#define K8S_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <curl/curl.h>
#include "k8s/client.h"
#include "k8s/ratelimit.h"
#include "config_internal.h"
#include "exec_credential.h"
#include "asb/map.h"
#include "asb/strbuf.h"
#include "rest_metrics.h"
#include "transport.h"
#include "watch_decoder.h"

/*
 * An answer's body as it arrives: an asb_strbuf that refuses to grow past
 * `max` bytes, so that a runaway answer or a stalled consumer can not take
 * all memory. Once an append fails (too_big, or buf.failed when out of
 * memory) later appends are refused too.
 */
typedef struct {
	asb_strbuf buf;
	size_t max;      /* bytes accepted at most; 0: no limit */
	bool too_big;    /* an append would have passed `max` */
} k8s__body;

/** Appends `n` bytes to `b`. Returns 0, or -1 (too_big or out of memory). */
int k8s__body_add(k8s__body *b, const char *s, size_t n);

/* Counters of k8s_client_stats; relaxed atomics. */
typedef struct {
	atomic_uint_fast64_t requests, retries, throttled, throttle_wait_ms,
		connections, http2, credential_runs, warnings;
} k8s__counters;

struct k8s_client {
	k8s_config *cfg;              /* own copy */
	char *user_agent;
	long timeout_ms;
	long connect_timeout_ms;
	int max_retries;
	long max_retry_delay_ms;
	long exec_timeout_ms;
	asb_logger *log;              /* borrowed */
	char *base_url;               /* what paths are appended to */
	struct curl_slist *connect_to;  /* tls-server-name routing, or NULL */
	char *proxy;                  /* CURLOPT_PROXY, or NULL (secret) */
	k8s__transport transport;
	k8s_ratelimiter *limiter;     /* NULL: no limit */
	bool own_limiter;
	k8s__counters stats;
	k8s__rest_metrics *metrics;   /* NULL: off */

	pthread_mutex_t lock;         /* guards the token and warning state */
	char *token;                  /* current bearer token, or NULL */
	struct timespec token_mtime;  /* of token_file when last read */
	ino_t token_ino;
	off_t token_size;
	asb_map warnings_seen;        /* Warning texts already logged */

	pthread_mutex_t exec_lock;    /* one plugin run at a time; guards below */
	k8s__exec_credential exec_cred;
	bool exec_valid;              /* exec_cred may be used */
	unsigned exec_gen;            /* bumped at every run */
};

/* One request: what to send and what it is about. */
typedef struct {
	const char *method;        /* GET, POST, PUT, PATCH, DELETE */
	const char *path;          /* path and query, from '/' */
	const char *content_type;  /* of `body`; NULL when no body */
	const char *body;
	const char *subject;       /* e.g. `Pod "default/x"`, for messages */
	bool idempotent;           /* safe to send again after a failure */
	bool list_or_watch;        /* goes to the list/watch shard if any */
	bool watch;                /* not rate limited, no request timeout */
} k8s__request;

/* The credentials one try uses (copies: the client's may rotate meanwhile). */
typedef struct {
	char *token;               /* secret, or NULL */
	k8s__blob cert, key;       /* from the exec plugin, or absent */
	unsigned exec_gen;         /* 0: no plugin credential used */
} k8s__creds;

/**
 * Fills `cr` with the credentials to use now: the token file re-read when
 * it changed, or the exec plugin's cached credential, the plugin run when
 * there is none or it expired. Returns 0 or the plugin's error.
 */
int k8s__client_creds(k8s_client *c, k8s__creds *cr);

/** Wipes and frees `cr`. */
void k8s__creds_free(k8s__creds *cr);

/**
 * After a 401: forgets the plugin credential `cr` used (unless another
 * thread already replaced it). Returns true when a retry can use fresh
 * credentials.
 */
bool k8s__client_auth_failed(k8s_client *c, const k8s__creds *cr);

/**
 * Sets the options every request shares on a fresh handle: URL, TLS,
 * proxy, identity, headers, method and body, header collection into
 * `resp`. `headers` receives the list to free with k8s__free_headers()
 * after the transfer. Returns 0 or an error code (recorded).
 */
int k8s__client_prepare(k8s_client *c, CURL *h, const k8s__request *rq,
                        const k8s__creds *cr, char *errbuf,
                        struct curl_slist **headers, k8s__resp *resp);

/* What one try of a request holds from its start to its end. */
typedef struct {
	CURL *h;                        /* from the transport's pool, or NULL */
	k8s__creds cr;
	k8s__resp resp;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
} k8s__try;

/**
 * Starts a try of `rq`: takes the credentials and a pooled handle, which
 * it prepares (k8s__client_prepare()) and sets `x` up on. The caller then
 * sets its write callback and runs `x`. Returns 0 or an error code
 * (recorded); end the try with k8s__try_end() in both cases.
 */
int k8s__try_begin(k8s_client *c, const k8s__request *rq, k8s__try *t,
                   k8s__xfer *x);

/**
 * Ends a try: unhooks the handle from the caller's memory, returns it to
 * the pool, frees the headers and wipes the credentials.
 */
void k8s__try_end(k8s_client *c, k8s__try *t);

/** Wipes the Authorization header before the list is freed. */
void k8s__free_headers(struct curl_slist *headers);

/** Records a transfer failure (no HTTP answer) and returns its code. */
int k8s__transport_error(const k8s__request *rq, CURLcode res,
                         const char *errbuf);

/**
 * After a try: counts it in the stats, logs the debug line (never headers,
 * bodies or the token), and logs each new Warning text once.
 */
void k8s__client_after(k8s_client *c, CURL *h, const k8s__request *rq,
                       long status, int64_t started_ms, int attempt,
                       const k8s__resp *resp);

/**
 * Streams a watch request (watch.c): runs it on the list/watch shard and
 * feeds the body to `dec` on the calling thread, until the stream ends,
 * the decoder stops it, or `*cancel` is set (checked every 250 ms).
 * `timeout_seconds` > 0 is the server-side timeout the request asked for.
 * Returns what k8s_client_watch() documents.
 */
int k8s__client_stream(k8s_client *c, const k8s__request *rq,
                       k8s__watch_decoder *dec, const atomic_int *cancel,
                       long timeout_seconds);

/** Monotonic milliseconds. */
int64_t k8s__now_ms(void);

#endif
