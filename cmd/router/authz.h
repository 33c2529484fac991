/*
 * authz.h - who may reach a sandbox (docs/upstream.md#router-authorization), after the
 * routing headers were validated:
 * - allow-all: everyone;
 * - tokenreview: the bearer token is checked with an
 *   authentication.k8s.io/v1 TokenReview (optional audiences); no token is
 *   allowed unless --authz-tokenreview-require-token. With
 *   --authz-namespace-access-review (default true; not in the Go router,
 *   which authenticates only) an authorization.k8s.io/v1
 *   SubjectAccessReview then asks whether that user may `get` the Sandbox
 *   <id> in <namespace>: a caller is refused (403) a sandbox in a namespace
 *   it may not use. Decisions are cached for --authz-tokenreview-ttl in an
 *   LRU keyed by the token's SHA-256 (and the sandbox); a token that did
 *   not authenticate also under its SHA-256 alone (whatever sandbox it
 *   names next, no new review); API failures are cached for max(TTL/3,
 *   1 s) and answered 500. The reviews run on threads of their own
 *   (reviewq.h);
 * - scoped-token: an HMAC-SHA256 token bound to one namespace/sandbox
 *   (format below); a request carrying X-Sandbox-Pod-IP or X-Sandbox-UID
 *   is refused (the target must then come from the name).
 * In both authenticating modes X-Sandbox-Pod-IP is honoured only where the
 * cache binds it to the authorized Sandbox (rt_authz_pod_ip_allowed()).
 * Scoped token: "v1." payload "." signature, payload = unpadded base64url
 * of the JSON {"ns":..,"name":..,"exp":<unix seconds>}, signature =
 * unpadded base64url HMAC-SHA256(secret, "agent-sandbox/scoped-token/v1."
 * + payload as received), compared in constant time.
 * Crypto by mbedTLS (md, base64). Thread-safe.
 */
#ifndef RT_AUTHZ_H
#define RT_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "k8s/client.h"
#include "flags.h"

/** Outcome of a check. */
typedef enum {
	RT_VERDICT_ALLOW = 0,
	RT_VERDICT_UNAUTHENTICATED = 1,  /**< 401 "unauthenticated" */
	RT_VERDICT_FORBIDDEN = 2,        /**< 403 "forbidden" */
	RT_VERDICT_ERROR = 3,            /**< 500 with the error text */
	RT_VERDICT_PENDING = 4           /**< run rt_authz_review() off the loop */
} rt_verdict;

typedef struct rt_authz rt_authz;

typedef struct {
	rt_authz_mode mode;
	const unsigned char *secret;     /**< scoped-token key (copied) */
	size_t secret_len;
	k8s_client *client;              /**< tokenreview: borrowed, outlives the handle */
	long ttl_ms;                     /**< decision cache TTL */
	int cache_size;                  /**< decision cache entries */
	bool require_token;
	char **audiences;                /**< NULL-terminated or NULL; copied */
	bool access_review;              /**< SubjectAccessReview after the TokenReview */
} rt_authz_options;

/** Creates an authorizer. 0, or ASB_EINVAL / ASB_ENOMEM. */
int rt_authz_new(rt_authz **out, const rt_authz_options *o);
void rt_authz_free(rt_authz *a);

/**
 * The decision that needs no API call: allow-all, scoped-token, a
 * tokenreview request without a token, or a cached decision. Returns
 * RT_VERDICT_PENDING when rt_authz_review() must be asked. `overrides`:
 * the request carries X-Sandbox-Pod-IP or X-Sandbox-UID. `detail` (cap
 * bytes) receives the error text of RT_VERDICT_ERROR. Never blocks.
 */
rt_verdict rt_authz_check(rt_authz *a, const char *authorization, const char *ns,
                          const char *id, bool overrides, int64_t now_s, char *detail,
                          size_t cap);

/**
 * Whether a request that carries X-Sandbox-Pod-IP may go on once allowed,
 * given `bound`: the router's cache is synced and covers the request's
 * namespace, so resolve.h pins the header to the authorized Sandbox's own
 * pod. allow-all: always. tokenreview and scoped-token: only when bound
 * (the caller was authorized for a Sandbox by name; an address nothing
 * ties to that name could be anyone's pod or service), else the request is
 * refused with 403; scoped-token refuses the header in rt_authz_check()
 * already. Pure; thread-safe.
 */
bool rt_authz_pod_ip_allowed(const rt_authz *a, bool bound);

/**
 * The tokenreview decision by API calls (TokenReview, then the access
 * review), stored in the cache. Blocks up to a few seconds: call it on a
 * worker thread. Returns ALLOW, UNAUTHENTICATED, FORBIDDEN or ERROR.
 */
rt_verdict rt_authz_review(rt_authz *a, const char *authorization, const char *ns,
                           const char *id, char *detail, size_t cap);

/**
 * The token of an Authorization value "Bearer <token>" (scheme compared
 * without case, token trimmed): a pointer into `authorization` and its
 * length in `*len`, or NULL when there is none.
 */
const char *rt_bearer(const char *authorization, size_t *len);

/** Claims of a scoped token. */
typedef struct {
	char ns[254];
	char name[254];
	int64_t exp;
} rt_scoped_claims;

/**
 * Verifies a scoped token (not its binding): RT_VERDICT_ALLOW with
 * `claims` filled, or RT_VERDICT_UNAUTHENTICATED (wrong version,
 * malformed, bad signature, bad JSON, expired at `now_s`).
 */
rt_verdict rt_scoped_token_verify(const unsigned char *secret, size_t len, const char *token,
                                  size_t token_len, int64_t now_s, rt_scoped_claims *claims);

/**
 * Mints a scoped token for ns/name valid `ttl_s` (>= 1) seconds from
 * `now_s`: a malloc'd string in `*out` (caller frees). Returns 0, or -1
 * for empty ns/name, a TTL below 1 s or no memory. (The router only
 * verifies; minting is for callers and tests.)
 */
int rt_scoped_token_mint(const unsigned char *secret, size_t len, const char *ns,
                         const char *name, int64_t ttl_s, int64_t now_s, char **out);

/**
 * Reads the scoped-token secret file: contents with leading and trailing
 * whitespace removed, at least 32 bytes. 0 with a malloc'd key in `*key`
 * (caller frees) and its length, or -1 with the reason in `err`.
 */
int rt_scoped_secret_load(const char *path, unsigned char **key, size_t *len, char *err,
                          size_t cap);

#endif
