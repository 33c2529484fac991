/*
 * proxy.h - the router's data path: a streaming route ("/" + "*") on a
 * proxy listener (httpd_server_route_stream, httpd/exchange.h) that takes
 * each request through the contract (contract.h), authorization
 * (authz.h), resolution (resolve.h) and an upstream connection
 * (upstream.h), and relays the response:
 * - /healthz on the proxy listeners answers {"status":"ok"} (any method);
 *   every other path is proxied;
 * - bodies stream both ways with backpressure (the client is paused while
 *   the sandbox's socket is behind, the sandbox while the client's is);
 * - connects that fail are retried after 200/400/800 ms (the
 *   --upstream-retry-* flags), resolving the target again each time (a
 *   starting sandbox gets its pod IP meanwhile); a stale pooled
 *   connection is replaced once at no cost;
 * - errors are JSON {"detail": ...}: 400 bad headers, 401/403/500 from
 *   the authorizer, 404 unknown sandbox, 413 body beyond
 *   --max-request-body-bytes, 502 connect failure, 504 no response head
 *   within --response-header-timeout or --proxy-timeout (or the smaller
 *   X-Sandbox-Timeout); after the head was relayed a failure cuts the
 *   connection;
 * - an Upgrade is forwarded; on the sandbox's 101 the head is relayed and
 *   both connections become one byte tunnel without the proxy timeout;
 * - with idle sync (idlesync.h): an exchange with a Sandbox that has an
 *   idle policy counts as its activity from start to end (tunnels
 *   included); a request for a Sandbox suspended for idleness
 *   (sbx_idle_resumable()) asks for its resume (single flight) and is held,
 *   its body unread, polling the cache every 50 ms on a libuv timer until
 *   the Sandbox runs with a Ready pod, then forwarded as usual; past
 *   X-Sandbox-Timeout, else --resume-timeout (never past --proxy-timeout)
 *   it gets 504 {"detail":"Sandbox <ns>/<id> is resuming; retry later."}.
 * Metrics and the access log are written when each exchange ends.
 *
 * Threads: requests run on the listener's loop threads; each loop thread
 * has its own upstream pool. Authorization calls that need the API run on
 * the review queue's threads (reviewq.h), never on libuv's thread pool,
 * which DNS lookups need; a full queue answers 503, a client's full share
 * of it 429.
 */
#ifndef RT_PROXY_H
#define RT_PROXY_H

#include <stdio.h>
#include "httpd/exchange.h"
#include "httpd/server.h"
#include "asb/log.h"
#include "authz.h"
#include "cache.h"
#include "flags.h"
#include "idlesync.h"
#include "metrics.h"
#include "reviewq.h"

typedef struct rt_proxy rt_proxy;

typedef struct {
	const rt_flags *flags;       /**< borrowed; outlives the proxy */
	rt_authz *authz;             /**< borrowed */
	rt_reviewq *reviews;         /**< borrowed; tokenreview mode (reviews the API answers) */
	rt_cache *cache;             /**< borrowed; NULL: no cache */
	rt_idlesync *idle;           /**< borrowed; NULL: no activity tracking nor resume */
	rt_metrics *metrics;         /**< borrowed */
	asb_logger *log;             /**< borrowed; may be NULL */
	FILE *access_log;            /**< NULL: no access log */
} rt_proxy_options;

/** Creates the proxy. Returns 0 or ASB_ENOMEM. */
int rt_proxy_new(rt_proxy **out, const rt_proxy_options *o);

/**
 * Serves the proxy on `s` (a listener not started yet; at most 64 loops):
 * adds the catch-all streaming route. Returns 0 or what the route call returns.
 */
int rt_proxy_attach(rt_proxy *p, httpd_server *s);

/**
 * Closes the idle upstream connections of every loop of every attached
 * listener (posted to the loops) and keeps no new ones: call right before
 * httpd_server_shutdown().
 */
void rt_proxy_drain(rt_proxy *p);

/** Frees; call after every attached listener has shut down. NULL accepted. */
void rt_proxy_free(rt_proxy *p);

#endif
