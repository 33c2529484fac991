/*
 * authz.c - the three authorization modes (authz.h): scoped tokens
 * verified with mbedTLS' HMAC, TokenReview and SubjectAccessReview through
 * libk8s' client, decisions cached in an rt_lru.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cjson/cJSON.h>
#include <mbedtls/base64.h>
#include <mbedtls/md.h>
#include "k8s/object.h"
#include "k8s/resource.h"
#include "authz.h"
#include "lru.h"

#define SCOPED_PREFIX "agent-sandbox/scoped-token/v1."

static const k8s_resource tokenreviews = {
	"authentication.k8s.io", "v1", "tokenreviews", "TokenReview", false,
};
static const k8s_resource subjectaccessreviews = {
	"authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", false,
};

struct rt_authz {
	rt_authz_mode mode;
	unsigned char *secret;
	size_t secret_len;
	k8s_client *client;
	long ttl_ms;
	bool require_token, access_review;
	char **audiences;
	rt_lru *cache;
};

/* ---- base64url (RFC 4648 §5, unpadded) over mbedTLS' base64 ---- */

static int b64url_encode(const unsigned char *in, size_t n, char *out, size_t cap)
{
	size_t olen;
	if (mbedtls_base64_encode((unsigned char *)out, cap, &olen, in, n) != 0)
		return -1;
	while (olen && out[olen - 1] == '=')
		olen--;
	out[olen] = '\0';
	for (size_t i = 0; i < olen; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	return (int)olen;
}

/* Decodes `n` chars of unpadded base64url; -1 for anything else. */
static int b64url_decode(const char *in, size_t n, unsigned char *out, size_t cap, size_t *olen)
{
	if (n % 4 == 1 || n > 16384)
		return -1;
	char *tmp = malloc(n + 4);
	if (!tmp)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (!isalnum((unsigned char)c)) {
			free(tmp);
			return -1;
		}
		tmp[i] = c;
	}
	size_t m = n;
	while (m % 4)
		tmp[m++] = '=';
	int rc = mbedtls_base64_decode(out, cap, olen, (unsigned char *)tmp, m);
	free(tmp);
	return rc == 0 ? 0 : -1;
}

static int hmac(const unsigned char *key, size_t klen, const char *payload, size_t plen,
                unsigned char mac[32])
{
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	mbedtls_md_context_t ctx;
	mbedtls_md_init(&ctx);
	int rc = -1;
	if (md && mbedtls_md_setup(&ctx, md, 1) == 0 && mbedtls_md_hmac_starts(&ctx, key, klen) == 0 &&
	    mbedtls_md_hmac_update(&ctx, (const unsigned char *)SCOPED_PREFIX,
	                           sizeof(SCOPED_PREFIX) - 1) == 0 &&
	    mbedtls_md_hmac_update(&ctx, (const unsigned char *)payload, plen) == 0 &&
	    mbedtls_md_hmac_finish(&ctx, mac) == 0)
		rc = 0;
	mbedtls_md_free(&ctx);
	return rc;
}

/* Compares without an early exit, so timing says nothing about where the
 * first difference is. */
static bool equal_ct(const unsigned char *a, const unsigned char *b, size_t n)
{
	volatile unsigned char d = 0;
	for (size_t i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}

/* A claim string: absent or null leaves "", another type fails (as Go's
 * encoding/json into a string field). */
static int claim_str(const cJSON *o, const char *key, char *out, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);
	out[0] = '\0';
	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return -1;
	if (strlen(v->valuestring) >= cap)
		return snprintf(out, cap, "%s", "\x01too-long"), 0;  /* never matches a label */
	snprintf(out, cap, "%s", v->valuestring);
	return 0;
}

rt_verdict rt_scoped_token_verify(const unsigned char *secret, size_t len, const char *token,
                                  size_t token_len, int64_t now_s, rt_scoped_claims *claims)
{
	memset(claims, 0, sizeof(*claims));
	const char *end = token + token_len;
	const char *dot1 = memchr(token, '.', token_len);
	if (!dot1 || dot1 - token != 2 || strncmp(token, "v1", 2) != 0)
		return RT_VERDICT_UNAUTHENTICATED;
	const char *payload = dot1 + 1;
	const char *dot2 = memchr(payload, '.', (size_t)(end - payload));
	if (!dot2 || dot2 == payload)
		return RT_VERDICT_UNAUTHENTICATED;
	size_t plen = (size_t)(dot2 - payload);
	const char *sig = dot2 + 1;
	unsigned char want[32], got[64];
	size_t glen = 0;
	/* everything after the second dot is the signature: more dots fail here */
	if (b64url_decode(sig, (size_t)(end - sig), got, sizeof(got), &glen) < 0 || glen != 32 ||
	    hmac(secret, len, payload, plen, want) < 0 || !equal_ct(want, got, 32))
		return RT_VERDICT_UNAUTHENTICATED;
	size_t jcap = plen, jlen = 0;
	unsigned char *json = malloc(jcap + 1);
	if (!json)
		return RT_VERDICT_UNAUTHENTICATED;
	if (b64url_decode(payload, plen, json, jcap, &jlen) < 0) {
		free(json);
		return RT_VERDICT_UNAUTHENTICATED;
	}
	cJSON *o = cJSON_ParseWithLength((const char *)json, jlen);
	free(json);
	rt_verdict v = RT_VERDICT_UNAUTHENTICATED;
	const cJSON *exp = cJSON_GetObjectItem(o, "exp");
	if (cJSON_IsObject(o) && claim_str(o, "ns", claims->ns, sizeof(claims->ns)) == 0 &&
	    claim_str(o, "name", claims->name, sizeof(claims->name)) == 0 &&
	    (!exp || cJSON_IsNull(exp) ||
	     (cJSON_IsNumber(exp) && exp->valuedouble == floor(exp->valuedouble) &&
	      fabs(exp->valuedouble) < 9.2e18))) {
		claims->exp = cJSON_IsNumber(exp) ? (int64_t)exp->valuedouble : 0;
		if (now_s < claims->exp)
			v = RT_VERDICT_ALLOW;
	}
	cJSON_Delete(o);
	return v;
}

int rt_scoped_token_mint(const unsigned char *secret, size_t len, const char *ns,
                         const char *name, int64_t ttl_s, int64_t now_s, char **out)
{
	if (!ns || !*ns || !name || !*name || ttl_s < 1)
		return -1;
	cJSON *o = cJSON_CreateObject();
	char *json = NULL, *tok = NULL;
	int rc = -1;
	/* the upstream minter's member order: ns, name, exp */
	if (!o || !cJSON_AddStringToObject(o, "ns", ns) || !cJSON_AddStringToObject(o, "name", name) ||
	    !cJSON_AddNumberToObject(o, "exp", (double)(now_s + ttl_s)) ||
	    !(json = cJSON_PrintUnformatted(o)))
		goto out;
	size_t jl = strlen(json), cap = 3 + (jl + 2) / 3 * 4 + 1 + 1 + 44 + 1;
	if (!(tok = malloc(cap)))
		goto out;
	memcpy(tok, "v1.", 3);
	int pl = b64url_encode((unsigned char *)json, jl, tok + 3, cap - 3);
	unsigned char mac[32];
	if (pl < 0 || hmac(secret, len, tok + 3, (size_t)pl, mac) < 0)
		goto out;
	tok[3 + pl] = '.';
	if (b64url_encode(mac, 32, tok + 4 + pl, cap - 4 - (size_t)pl) < 0)
		goto out;
	*out = tok;
	tok = NULL;
	rc = 0;
out:
	free(tok);
	free(json);
	cJSON_Delete(o);
	return rc;
}

int rt_scoped_secret_load(const char *path, unsigned char **key, size_t *len, char *err,
                          size_t cap)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return snprintf(err, cap, "--authz-scoped-token-secret-file %s: %s", path,
		                strerror(errno)), -1;
	unsigned char *buf = malloc(65536 + 1);
	size_t n = buf ? fread(buf, 1, 65536, f) : 0;
	fclose(f);
	if (!buf)
		return snprintf(err, cap, "out of memory"), -1;
	size_t s = 0;
	while (s < n && isspace(buf[s]))
		s++;
	while (n > s && isspace(buf[n - 1]))
		n--;
	if (n - s < 32) {
		free(buf);
		return snprintf(err, cap, "--authz-scoped-token-secret-file %s: the secret must be at "
		                "least 32 bytes (after trimming whitespace)", path), -1;
	}
	memmove(buf, buf + s, n - s);
	*key = buf;
	*len = n - s;
	return 0;
}

const char *rt_bearer(const char *authorization, size_t *len)
{
	if (!authorization || strncasecmp(authorization, "Bearer ", 7) != 0)
		return NULL;
	const char *t = authorization + 7;
	while (*t == ' ' || *t == '\t')
		t++;
	size_t n = strlen(t);
	while (n && (t[n - 1] == ' ' || t[n - 1] == '\t'))
		n--;
	if (!n)
		return NULL;
	*len = n;
	return t;
}

/* ---- the authorizer ---- */

int rt_authz_new(rt_authz **out, const rt_authz_options *o)
{
	rt_authz *a = calloc(1, sizeof(*a));
	if (!a)
		return ASB_ENOMEM;
	a->mode = o->mode;
	a->client = o->client;
	a->ttl_ms = o->ttl_ms > 0 ? o->ttl_ms : 30000;
	a->require_token = o->require_token;
	a->access_review = o->access_review;
	if (o->mode == RT_AUTHZ_SCOPED_TOKEN) {
		if (!o->secret || o->secret_len < 32 || !(a->secret = malloc(o->secret_len)))
			goto fail;
		memcpy(a->secret, o->secret, o->secret_len);
		a->secret_len = o->secret_len;
	}
	if (o->mode == RT_AUTHZ_TOKENREVIEW) {
		if (!o->client || rt_lru_new(&a->cache, o->cache_size > 0 ? (size_t)o->cache_size : 2048) < 0)
			goto fail;
		size_t n = 0;
		while (o->audiences && o->audiences[n])
			n++;
		if (n) {
			if (!(a->audiences = calloc(n + 1, sizeof(char *))))
				goto fail;
			for (size_t i = 0; i < n; i++)
				if (!(a->audiences[i] = strdup(o->audiences[i])))
					goto fail;
		}
	}
	*out = a;
	return 0;
fail:
	rt_authz_free(a);
	return ASB_EINVAL;
}

void rt_authz_free(rt_authz *a)
{
	if (!a)
		return;
	if (a->secret)
		memset(a->secret, 0, a->secret_len);
	free(a->secret);
	for (char **p = a->audiences; p && *p; p++)
		free(*p);
	free(a->audiences);
	rt_lru_free(a->cache);
	free(a);
}

/* Cache keys: the hex SHA-256 of the token, plus the sandbox when the
 * decision depends on it (the access review); the token itself is never
 * kept. `token_key` (may be NULL) receives the key of the token alone,
 * under which a token that did not authenticate is remembered whatever
 * sandbox it named: a rejected token tried on many sandboxes costs one
 * review, not one each. */
static void cache_key(rt_authz *a, const char *tok, size_t n, const char *ns, const char *id,
                      char *key, size_t cap, char *token_key, size_t tcap)
{
	unsigned char sum[32];
	mbedtls_md(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), (const unsigned char *)tok, n, sum);
	char hex[65];
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", sum[i]);
	if (a->access_review)
		snprintf(key, cap, "%s/%s/%s", hex, ns, id);
	else
		snprintf(key, cap, "%s", hex);
	if (token_key)
		snprintf(token_key, tcap, "%s", hex);
}

static int64_t now_ms(void)
{
	return k8s_now_ms();
}

rt_verdict rt_authz_check(rt_authz *a, const char *authorization, const char *ns,
                          const char *id, bool overrides, int64_t now_s, char *detail,
                          size_t cap)
{
	size_t n = 0;
	const char *tok = rt_bearer(authorization, &n);
	switch (a->mode) {
	case RT_AUTHZ_ALLOW_ALL:
		return RT_VERDICT_ALLOW;
	case RT_AUTHZ_SCOPED_TOKEN: {
		rt_scoped_claims c;
		if (!tok || rt_scoped_token_verify(a->secret, a->secret_len, tok, n, now_s, &c) !=
		                RT_VERDICT_ALLOW)
			return RT_VERDICT_UNAUTHENTICATED;
		if (overrides)
			return RT_VERDICT_FORBIDDEN;
		if (strcmp(c.ns, ns) != 0 || strcmp(c.name, id) != 0)
			return RT_VERDICT_FORBIDDEN;
		return RT_VERDICT_ALLOW;
	}
	case RT_AUTHZ_TOKENREVIEW: {
		if (!tok)
			return a->require_token ? RT_VERDICT_UNAUTHENTICATED : RT_VERDICT_ALLOW;
		char key[200], tkey[80];
		int v;
		cache_key(a, tok, n, ns, id, key, sizeof(key), tkey, sizeof(tkey));
		if (rt_lru_get(a->cache, key, now_ms(), &v, detail, cap) == 0)
			return (rt_verdict)v;
		if (a->access_review && rt_lru_get(a->cache, tkey, now_ms(), &v, detail, cap) == 0 &&
		    v == RT_VERDICT_UNAUTHENTICATED)
			return (rt_verdict)v;
		return RT_VERDICT_PENDING;
	}
	}
	return RT_VERDICT_FORBIDDEN;
}

bool rt_authz_pod_ip_allowed(const rt_authz *a, bool bound)
{
	return a->mode == RT_AUTHZ_ALLOW_ALL || bound;
}

/* POSTs `body` to a review resource; the answer's status in `*status`. */
static int review(rt_authz *a, const k8s_resource *r, cJSON *body, cJSON **status,
                  cJSON **answer)
{
	*answer = NULL;
	int rc = k8s_client_create(a->client, r, NULL, body, NULL, answer);
	cJSON_Delete(body);
	if (rc < 0)
		return rc;
	*status = cJSON_GetObjectItemCaseSensitive(*answer, "status");
	return 0;
}

static cJSON *review_object(const char *api_version, const char *kind, cJSON **spec)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "apiVersion", api_version);
	cJSON_AddStringToObject(o, "kind", kind);
	*spec = cJSON_AddObjectToObject(o, "spec");
	if (!*spec) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* SubjectAccessReview: may `user` get sandboxes/<id> in <ns>? */
static rt_verdict access_review(rt_authz *a, const cJSON *user, const char *ns, const char *id,
                                char *detail, size_t cap)
{
	cJSON *spec, *o = review_object("authorization.k8s.io/v1", "SubjectAccessReview", &spec);
	if (!o)
		return snprintf(detail, cap, "subjectaccessreview: out of memory"), RT_VERDICT_ERROR;
	const char *name = k8s_obj_str(user, "username");
	const char *uid = k8s_obj_str(user, "uid");
	cJSON_AddStringToObject(spec, "user", name ? name : "");
	if (uid)
		cJSON_AddStringToObject(spec, "uid", uid);
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(user, "groups");
	if (cJSON_IsArray(groups))
		cJSON_AddItemToObject(spec, "groups", cJSON_Duplicate(groups, true));
	const cJSON *extra = cJSON_GetObjectItemCaseSensitive(user, "extra");
	if (cJSON_IsObject(extra))
		cJSON_AddItemToObject(spec, "extra", cJSON_Duplicate(extra, true));
	cJSON *ra = cJSON_AddObjectToObject(spec, "resourceAttributes");
	cJSON_AddStringToObject(ra, "namespace", ns);
	cJSON_AddStringToObject(ra, "verb", "get");
	cJSON_AddStringToObject(ra, "group", "agents.x-k8s.io");
	cJSON_AddStringToObject(ra, "resource", "sandboxes");
	cJSON_AddStringToObject(ra, "name", id);
	cJSON *status = NULL, *answer = NULL;
	if (review(a, &subjectaccessreviews, o, &status, &answer) < 0) {
		snprintf(detail, cap, "subjectaccessreview: %s", asb_error_last()->message);
		return RT_VERDICT_ERROR;
	}
	rt_verdict v = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status, "allowed"))
	                       ? RT_VERDICT_ALLOW : RT_VERDICT_FORBIDDEN;
	cJSON_Delete(answer);
	return v;
}

rt_verdict rt_authz_review(rt_authz *a, const char *authorization, const char *ns,
                           const char *id, char *detail, size_t cap)
{
	size_t n = 0;
	const char *tok = rt_bearer(authorization, &n);
	if (a->mode != RT_AUTHZ_TOKENREVIEW || !tok)
		return rt_authz_check(a, authorization, ns, id, false, now_ms() / 1000, detail, cap);
	char key[200], tkey[80];
	cache_key(a, tok, n, ns, id, key, sizeof(key), tkey, sizeof(tkey));
	cJSON *spec, *o = review_object("authentication.k8s.io/v1", "TokenReview", &spec);
	if (!o)
		return snprintf(detail, cap, "tokenreview: out of memory"), RT_VERDICT_ERROR;
	char *t = strndup(tok, n);
	cJSON_AddStringToObject(spec, "token", t ? t : "");
	free(t);
	if (a->audiences) {
		cJSON *aud = cJSON_AddArrayToObject(spec, "audiences");
		for (char **p = a->audiences; *p; p++)
			cJSON_AddItemToArray(aud, cJSON_CreateString(*p));
	}
	cJSON *status = NULL, *answer = NULL;
	rt_verdict v;
	long ttl = a->ttl_ms;
	if (review(a, &tokenreviews, o, &status, &answer) < 0) {
		snprintf(detail, cap, "tokenreview: %s", asb_error_last()->message);
		v = RT_VERDICT_ERROR;
	} else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(status, "authenticated"))) {
		v = RT_VERDICT_UNAUTHENTICATED;
	} else if (a->access_review) {
		v = access_review(a, cJSON_GetObjectItemCaseSensitive(status, "user"), ns, id,
		                  detail, cap);
	} else {
		v = RT_VERDICT_ALLOW;
	}
	cJSON_Delete(answer);
	if (v == RT_VERDICT_ERROR) {
		/* API failures are remembered briefly, so an outage is not hammered */
		ttl = a->ttl_ms / 3 > 1000 ? a->ttl_ms / 3 : 1000;
		char cached[300];
		const char *colon = strchr(detail, ':');
		snprintf(cached, sizeof(cached), "%.*s (cached)%s", colon ? (int)(colon - detail) : 0,
		         detail, colon ? colon : detail);
		rt_lru_put(a->cache, key, v, cached, now_ms() + ttl);
	} else {
		rt_lru_put(a->cache, key, v, "", now_ms() + ttl);
		if (v == RT_VERDICT_UNAUTHENTICATED && a->access_review)
			rt_lru_put(a->cache, tkey, v, "", now_ms() + ttl);
	}
	return v;
}
