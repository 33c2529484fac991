/*
 * test_authz.c - unit tests of cmd/router/authz.c and lru.c: the scoped
 * token wire format of docs/upstream.md#router-authorization (a known-answer token, mint
 * and verify, every 401 case, the 403 cases of the binding), bearer
 * parsing, the tokenreview paths that need no API call, the secret file
 * rules, and the decision cache's expiry and LRU eviction.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include "authz.h"
#include "lru.h"

static const unsigned char KEY[] = "0123456789abcdef0123456789abcdef";  /* 32 bytes */
#define KEYLEN 32
#define NOW 1700000000

START_TEST(known_answer)
{
	/* v1.<b64url({"ns":"team","name":"alpha","exp":1700000600})>.<b64url(HMAC)>,
	 * the HMAC computed independently: printf 'agent-sandbox/scoped-token/v1.%s' "$payload" |
	 * openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef -binary | basenc --base64url */
	const char *tok = "v1.eyJucyI6InRlYW0iLCJuYW1lIjoiYWxwaGEiLCJleHAiOjE3MDAwMDA2MDB9."
	                  "bbh5JaQEYBPntPkbTFprKnARmeFlLF6Cv2Fuih-K9OU";
	rt_scoped_claims c;
	ck_assert_int_eq(rt_scoped_token_verify(KEY, KEYLEN, tok, strlen(tok), NOW, &c), RT_VERDICT_ALLOW);
	ck_assert_str_eq(c.ns, "team");
	ck_assert_str_eq(c.name, "alpha");
	ck_assert_int_eq(c.exp, 1700000600);
	char *minted = NULL;
	ck_assert_int_eq(rt_scoped_token_mint(KEY, KEYLEN, "team", "alpha", 600, NOW, &minted), 0);
	ck_assert_str_eq(minted, tok);
	free(minted);
}
END_TEST

START_TEST(verify_failures)
{
	char *tok = NULL;
	rt_scoped_claims c;
	ck_assert_int_eq(rt_scoped_token_mint(KEY, KEYLEN, "team", "alpha", 60, NOW, &tok), 0);
	size_t n = strlen(tok);
	ck_assert_int_eq(rt_scoped_token_verify(KEY, KEYLEN, tok, n, NOW + 59, &c), RT_VERDICT_ALLOW);
	/* expired at now >= exp */
	ck_assert_int_eq(rt_scoped_token_verify(KEY, KEYLEN, tok, n, NOW + 60, &c),
	                 RT_VERDICT_UNAUTHENTICATED);
	/* another key */
	const unsigned char other[] = "ffffffffffffffffffffffffffffffff";
	ck_assert_int_eq(rt_scoped_token_verify(other, 32, tok, n, NOW, &c), RT_VERDICT_UNAUTHENTICATED);
	/* each byte flipped in turn */
	for (size_t i = 0; i < n; i++) {
		char *bad = strdup(tok);
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		ck_assert_msg(rt_scoped_token_verify(KEY, KEYLEN, bad, n, NOW, &c) != RT_VERDICT_ALLOW,
		              "byte %zu flipped still verifies", i);
		free(bad);
	}
	/* wrong version, missing parts, extra dots, padding */
	char buf[512];
	snprintf(buf, sizeof(buf), "v2%s", tok + 2);
	ck_assert_int_eq(rt_scoped_token_verify(KEY, KEYLEN, buf, strlen(buf), NOW, &c),
	                 RT_VERDICT_UNAUTHENTICATED);
	snprintf(buf, sizeof(buf), "%s.x", tok);
	ck_assert_int_eq(rt_scoped_token_verify(KEY, KEYLEN, buf, strlen(buf), NOW, &c),
	                 RT_VERDICT_UNAUTHENTICATED);
	snprintf(buf, sizeof(buf), "%s=", tok);
	ck_assert_int_eq(rt_scoped_token_verify(KEY, KEYLEN, buf, strlen(buf), NOW, &c),
	                 RT_VERDICT_UNAUTHENTICATED);
	for (const char *const *p = (const char *const[]){ "", "v1", "v1.", "v1..", "v1.abc", ".a.b",
	                                                   "v1.a.b", NULL }; *p; p++)
		ck_assert_int_eq(rt_scoped_token_verify(KEY, KEYLEN, *p, strlen(*p), NOW, &c),
		                 RT_VERDICT_UNAUTHENTICATED);
	free(tok);
	/* minting rules */
	ck_assert_int_eq(rt_scoped_token_mint(KEY, KEYLEN, "", "a", 60, NOW, &tok), -1);
	ck_assert_int_eq(rt_scoped_token_mint(KEY, KEYLEN, "a", "", 60, NOW, &tok), -1);
	ck_assert_int_eq(rt_scoped_token_mint(KEY, KEYLEN, "a", "b", 0, NOW, &tok), -1);
}
END_TEST

START_TEST(scoped_binding)
{
	rt_authz_options o = { .mode = RT_AUTHZ_SCOPED_TOKEN, .secret = KEY, .secret_len = KEYLEN };
	rt_authz *a;
	ck_assert_int_eq(rt_authz_new(&a, &o), 0);
	char *tok, hdr[512], d[64];
	int64_t now = (int64_t)time(NULL);
	ck_assert_int_eq(rt_scoped_token_mint(KEY, KEYLEN, "team", "alpha", 60, now, &tok), 0);
	snprintf(hdr, sizeof(hdr), "bearer  %s ", tok);
	ck_assert_int_eq(rt_authz_check(a, hdr, "team", "alpha", false, now, d, sizeof(d)), RT_VERDICT_ALLOW);
	ck_assert_int_eq(rt_authz_check(a, hdr, "team", "beta", false, now, d, sizeof(d)), RT_VERDICT_FORBIDDEN);
	ck_assert_int_eq(rt_authz_check(a, hdr, "default", "alpha", false, now, d, sizeof(d)), RT_VERDICT_FORBIDDEN);
	/* pod-IP or UID overrides are refused with a valid token */
	ck_assert_int_eq(rt_authz_check(a, hdr, "team", "alpha", true, now, d, sizeof(d)), RT_VERDICT_FORBIDDEN);
	ck_assert_int_eq(rt_authz_check(a, NULL, "team", "alpha", false, now, d, sizeof(d)), RT_VERDICT_UNAUTHENTICATED);
	ck_assert_int_eq(rt_authz_check(a, tok, "team", "alpha", false, now, d, sizeof(d)), RT_VERDICT_UNAUTHENTICATED);
	ck_assert_int_eq(rt_authz_check(a, "Bearer ", "team", "alpha", false, now, d, sizeof(d)), RT_VERDICT_UNAUTHENTICATED);
	free(tok);
	rt_authz_free(a);
	/* the key must be 32 bytes or more */
	o.secret_len = 31;
	ck_assert_int_ne(rt_authz_new(&a, &o), 0);
}
END_TEST

START_TEST(bearer)
{
	size_t n;
	const char *t = rt_bearer("Bearer abc ", &n);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(n, 3);
	ck_assert(strncmp(t, "abc", 3) == 0);
	ck_assert_ptr_nonnull(rt_bearer("BEARER x", &n));
	ck_assert_ptr_null(rt_bearer("Basic abc", &n));
	ck_assert_ptr_null(rt_bearer("Bearer   ", &n));
	ck_assert_ptr_null(rt_bearer("Bearerabc", &n));
	ck_assert_ptr_null(rt_bearer(NULL, &n));
}
END_TEST

START_TEST(tokenreview_without_api)
{
	rt_authz_options o = { .mode = RT_AUTHZ_TOKENREVIEW, .client = (k8s_client *)&o,
	                       .ttl_ms = 30000, .cache_size = 4 };
	rt_authz *a;
	char d[64];
	ck_assert_int_eq(rt_authz_new(&a, &o), 0);
	/* no token: allowed unless required; a token: needs the API */
	ck_assert_int_eq(rt_authz_check(a, NULL, "ns", "id", false, NOW, d, sizeof(d)), RT_VERDICT_ALLOW);
	ck_assert_int_eq(rt_authz_check(a, "Bearer t", "ns", "id", false, NOW, d, sizeof(d)), RT_VERDICT_PENDING);
	rt_authz_free(a);
	o.require_token = true;
	ck_assert_int_eq(rt_authz_new(&a, &o), 0);
	ck_assert_int_eq(rt_authz_check(a, "Basic x", "ns", "id", false, NOW, d, sizeof(d)),
	                 RT_VERDICT_UNAUTHENTICATED);
	rt_authz_free(a);
	o.mode = RT_AUTHZ_ALLOW_ALL;
	ck_assert_int_eq(rt_authz_new(&a, &o), 0);
	ck_assert_int_eq(rt_authz_check(a, NULL, "ns", "id", true, NOW, d, sizeof(d)), RT_VERDICT_ALLOW);
	rt_authz_free(a);
}
END_TEST

/* X-Sandbox-Pod-IP in the authenticating modes: only where the cache binds
 * it to the authorized Sandbox (without one, any pod or service could be
 * reached under another Sandbox's authorization) */
START_TEST(pod_ip_needs_a_binding_cache)
{
	rt_authz_options o = { .mode = RT_AUTHZ_TOKENREVIEW, .client = (k8s_client *)&o,
	                       .ttl_ms = 30000, .cache_size = 4 };
	rt_authz *a;
	ck_assert_int_eq(rt_authz_new(&a, &o), 0);
	ck_assert(!rt_authz_pod_ip_allowed(a, false));
	ck_assert(rt_authz_pod_ip_allowed(a, true));
	rt_authz_free(a);
	rt_authz_options so = { .mode = RT_AUTHZ_SCOPED_TOKEN, .secret = KEY, .secret_len = KEYLEN };
	ck_assert_int_eq(rt_authz_new(&a, &so), 0);
	ck_assert(!rt_authz_pod_ip_allowed(a, false));
	rt_authz_free(a);
	o.mode = RT_AUTHZ_ALLOW_ALL;
	ck_assert_int_eq(rt_authz_new(&a, &o), 0);
	ck_assert(rt_authz_pod_ip_allowed(a, false));
	rt_authz_free(a);
}
END_TEST

START_TEST(secret_file)
{
	char path[] = "/tmp/rt-secret-XXXXXX", err[256];
	int fd = mkstemp(path);
	const char *text = "  \n0123456789abcdef0123456789abcdef\n\n";
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	unsigned char *key;
	size_t len;
	ck_assert_int_eq(rt_scoped_secret_load(path, &key, &len, err, sizeof(err)), 0);
	ck_assert_int_eq(len, 32);
	ck_assert(memcmp(key, KEY, 32) == 0);
	free(key);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_eq(write(fd, "short secret   \n", 16), 16);
	close(fd);
	ck_assert_int_eq(rt_scoped_secret_load(path, &key, &len, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "at least 32 bytes"));
	unlink(path);
	ck_assert_int_eq(rt_scoped_secret_load(path, &key, &len, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, path));
}
END_TEST

START_TEST(lru)
{
	rt_lru *c;
	int v;
	char d[16];
	ck_assert_int_eq(rt_lru_new(&c, 2), 0);
	ck_assert_int_eq(rt_lru_put(c, "a", 1, "one", 1000), 0);
	ck_assert_int_eq(rt_lru_put(c, "b", 2, "two", 1000), 0);
	ck_assert_int_eq(rt_lru_get(c, "a", 10, &v, d, sizeof(d)), 0);  /* a is now the most recent */
	ck_assert_int_eq(v, 1);
	ck_assert_str_eq(d, "one");
	ck_assert_int_eq(rt_lru_put(c, "c", 3, "", 1000), 0);            /* evicts b */
	ck_assert_int_eq(rt_lru_get(c, "b", 10, &v, d, sizeof(d)), -1);
	ck_assert_int_eq(rt_lru_get(c, "c", 10, &v, d, sizeof(d)), 0);
	ck_assert_int_eq(rt_lru_size(c), 2);
	/* replace, then expiry */
	ck_assert_int_eq(rt_lru_put(c, "a", 9, "nine", 500), 0);
	ck_assert_int_eq(rt_lru_get(c, "a", 499, &v, d, sizeof(d)), 0);
	ck_assert_int_eq(v, 9);
	ck_assert_int_eq(rt_lru_get(c, "a", 500, &v, d, sizeof(d)), -1);
	ck_assert_int_eq(rt_lru_size(c), 1);
	rt_lru_free(c);
	/* many keys through a small cache */
	ck_assert_int_eq(rt_lru_new(&c, 16), 0);
	char k[16];
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "k%d", i);
		ck_assert_int_eq(rt_lru_put(c, k, i, "", 1000), 0);
	}
	ck_assert_int_eq(rt_lru_size(c), 16);
	ck_assert_int_eq(rt_lru_get(c, "k999", 1, &v, NULL, 0), 0);
	ck_assert_int_eq(rt_lru_get(c, "k983", 1, &v, NULL, 0), -1);
	rt_lru_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("authz");
	TCase *tc = tcase_create("authz");
	tcase_add_test(tc, known_answer);
	tcase_add_test(tc, verify_failures);
	tcase_add_test(tc, scoped_binding);
	tcase_add_test(tc, bearer);
	tcase_add_test(tc, tokenreview_without_api);
	tcase_add_test(tc, pod_ip_needs_a_binding_cache);
	tcase_add_test(tc, secret_file);
	tcase_add_test(tc, lru);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
