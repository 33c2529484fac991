/*
 * test_transport.c - libk8s/src/transport.c: Retry-After and Warning header
 * parsing, the header callback, retry backoff and the retry rule, and the
 * connection shards themselves, driven with file:// transfers (a shard
 * runs any libcurl transfer; no server is needed to check that requests
 * from many threads all come back, each with its own answer).
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "transport.h"

/* --- Retry-After ------------------------------------------------------------ */

START_TEST(test_retry_after_seconds)
{
	ck_assert_int_eq(k8s__retry_after_ms("1", 0), 1000);
	ck_assert_int_eq(k8s__retry_after_ms("0", 0), 0);
	ck_assert_int_eq(k8s__retry_after_ms("  120 ", 0), 120000);
	/* Absurd values are capped at a day rather than overflowing. */
	ck_assert_int_eq(k8s__retry_after_ms("99999999999999999999", 0), -1);
	ck_assert_int_eq(k8s__retry_after_ms("100000000", 0), 86400000L);
	/* Not a number, negative, trailing junk: ignored. */
	ck_assert_int_eq(k8s__retry_after_ms("", 0), -1);
	ck_assert_int_eq(k8s__retry_after_ms("-5", 0), -1);
	ck_assert_int_eq(k8s__retry_after_ms("5s", 0), -1);
	ck_assert_int_eq(k8s__retry_after_ms("soon", 0), -1);
}
END_TEST

START_TEST(test_retry_after_date)
{
	/* RFC 9110 allows an HTTP-date: the delay is relative to now. */
	time_t now = 784111777;  /* Sun, 06 Nov 1994 08:49:37 GMT */
	ck_assert_int_eq(k8s__retry_after_ms("Sun, 06 Nov 1994 08:49:40 GMT", now), 3000);
	/* A date in the past: retry at once. */
	ck_assert_int_eq(k8s__retry_after_ms("Sun, 06 Nov 1994 08:49:00 GMT", now), 0);
}
END_TEST

/* --- Warning ------------------------------------------------------------------ */

typedef struct {
	char texts[8][256];
	int n;
} collected;

static void collect(const char *text, void *ud)
{
	collected *c = ud;
	ck_assert_int_lt(c->n, 8);
	snprintf(c->texts[c->n++], sizeof(c->texts[0]), "%s", text);
}

START_TEST(test_warning_parse)
{
	collected c = { .n = 0 };
	/* What kube-apiserver sends for a deprecated API. */
	ck_assert_uint_eq(k8s__warning_parse(
		"299 - \"v1 ComponentStatus is deprecated in v1.19+\"", collect, &c), 1);
	ck_assert_str_eq(c.texts[0], "v1 ComponentStatus is deprecated in v1.19+");

	/* Several in one header, escapes, an agent with a port, a date. */
	c.n = 0;
	ck_assert_uint_eq(k8s__warning_parse(
		"299 - \"first\", 299 api.example:443 \"say \\\"hi\\\" \\\\ back\" "
		"\"Sun, 06 Nov 1994 08:49:37 GMT\",299 - \"third\"", collect, &c), 3);
	ck_assert_str_eq(c.texts[0], "first");
	ck_assert_str_eq(c.texts[1], "say \"hi\" \\ back");
	ck_assert_str_eq(c.texts[2], "third");

	/* Only 299 (miscellaneous persistent warning) is reported, as in
	 * client-go; other codes are skipped, not fatal. */
	c.n = 0;
	ck_assert_uint_eq(k8s__warning_parse("110 - \"Response is stale\", 299 - \"kept\"",
	                                     collect, &c), 1);
	ck_assert_str_eq(c.texts[0], "kept");
}
END_TEST

START_TEST(test_warning_malformed)
{
	collected c = { .n = 0 };
	ck_assert_uint_eq(k8s__warning_parse("", collect, &c), 0);
	ck_assert_uint_eq(k8s__warning_parse("not a warning", collect, &c), 0);
	ck_assert_uint_eq(k8s__warning_parse("299 - unquoted", collect, &c), 0);
	ck_assert_uint_eq(k8s__warning_parse("299 - \"unterminated", collect, &c), 0);
	ck_assert_uint_eq(k8s__warning_parse("29 - \"short code\"", collect, &c), 0);
	ck_assert_uint_eq(k8s__warning_parse("299 \"no agent\"", collect, &c), 0);
	ck_assert_uint_eq(k8s__warning_parse("299 - \"\"", collect, &c), 0);
	/* What parsed before the junk still counts. */
	ck_assert_uint_eq(k8s__warning_parse("299 - \"ok\" junk", collect, &c), 1);
	ck_assert_str_eq(c.texts[0], "ok");
}
END_TEST

/* --- the header callback --------------------------------------------------------- */

static void feed(k8s__resp *r, const char *line)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", line);
	ck_assert_uint_eq(k8s__header_cb(buf, 1, strlen(buf), r), strlen(buf));
}

START_TEST(test_header_cb)
{
	k8s__resp r;
	k8s__resp_init(&r);
	r.now = 784111777;
	ck_assert_int_eq(r.retry_after_ms, -1);
	feed(&r, "HTTP/1.1 100 Continue\r\n");
	feed(&r, "Warning: 299 - \"from the 100\"\r\n");
	/* A new status line starts over: the 100's headers are forgotten. */
	feed(&r, "HTTP/2 429\r\n");
	/* HTTP/2 sends lower-case names. */
	feed(&r, "retry-after: 3\r\n");
	feed(&r, "warning: 299 - \"one\"\r\n");
	feed(&r, "WARNING:   299 - \"two\"  \r\n");
	feed(&r, "Content-Type: application/json\r\n");
	feed(&r, "\r\n");
	ck_assert_int_eq(r.retry_after_ms, 3000);
	ck_assert_str_eq(r.warnings, "299 - \"one\"\n299 - \"two\"\n");

	/* Warnings beyond the bound are dropped whole, never cut. */
	k8s__resp_init(&r);
	char big[600];
	memset(big, 'x', sizeof(big));
	memcpy(big, "Warning: 299 - \"", 16);
	memcpy(big + sizeof(big) - 4, "\"\r\n", 4);
	for (int i = 0; i < 40; i++)
		ck_assert_uint_eq(k8s__header_cb(big, 1, sizeof(big) - 1, &r),
		                  sizeof(big) - 1);
	ck_assert_uint_le(r.warnings_len, K8S__WARNINGS_MAX - 1);
	ck_assert_uint_eq(r.warnings_len % (sizeof(big) - 1 - 9 - 2 + 1), 0);
}
END_TEST

/* --- retries ------------------------------------------------------------------------ */

START_TEST(test_backoff)
{
	unsigned seed = 42;
	long prev = 0;
	for (int a = 0; a < 6; a++) {
		long base = 100L << a;
		long d = k8s__backoff_ms(a, 100000, &seed);
		/* 100 ms doubling, plus at most 20% jitter. */
		ck_assert_int_ge(d, base);
		ck_assert_int_le(d, base + base / 5);
		ck_assert_int_gt(d, prev);
		prev = d;
	}
	/* Never past the bound, however many tries. */
	for (int a = 0; a < 100; a++)
		ck_assert_int_le(k8s__backoff_ms(a, 10000, &seed), 10000);
	ck_assert_int_eq(k8s__backoff_ms(60, 10000, &seed), 10000);
	/* The jitter varies. */
	int differ = 0;
	long first = k8s__backoff_ms(3, 100000, &seed);
	for (int i = 0; i < 20; i++)
		differ |= k8s__backoff_ms(3, 100000, &seed) != first;
	ck_assert(differ);
}
END_TEST

START_TEST(test_retryable)
{
	/* Never sent: any request. */
	ck_assert(k8s__retryable(false, CURLE_COULDNT_CONNECT, 0));
	ck_assert(k8s__retryable(false, CURLE_COULDNT_RESOLVE_HOST, 0));
	/* Broken mid-way: only what is safe to run twice. */
	ck_assert(k8s__retryable(true, CURLE_RECV_ERROR, 0));
	ck_assert(k8s__retryable(true, CURLE_HTTP2_STREAM, 0));
	ck_assert(!k8s__retryable(false, CURLE_RECV_ERROR, 0));
	ck_assert(!k8s__retryable(false, CURLE_GOT_NOTHING, 0));
	/* TLS trouble and timeouts: never. */
	ck_assert(!k8s__retryable(true, CURLE_PEER_FAILED_VERIFICATION, 0));
	ck_assert(!k8s__retryable(true, CURLE_OPERATION_TIMEDOUT, 0));
	/* 429: not processed, any verb. */
	ck_assert(k8s__retryable(false, CURLE_OK, 429));
	/* 5xx: only idempotent requests. */
	for (long s = 500; s <= 504; s++) {
		if (s == 501)
			continue;
		ck_assert(k8s__retryable(true, CURLE_OK, s));
		ck_assert(!k8s__retryable(false, CURLE_OK, s));
	}
	ck_assert(!k8s__retryable(true, CURLE_OK, 501));
	/* Client errors and success: never. */
	ck_assert(!k8s__retryable(true, CURLE_OK, 404));
	ck_assert(!k8s__retryable(true, CURLE_OK, 409));
	ck_assert(!k8s__retryable(true, CURLE_OK, 401));
	ck_assert(!k8s__retryable(true, CURLE_OK, 200));
}
END_TEST

/* --- shards ------------------------------------------------------------------------ */

#define FILES 4
static char file_dir[64];

static void files_setup(void)
{
	snprintf(file_dir, sizeof(file_dir), "/tmp/k8s-test-shard-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(file_dir));
	for (int i = 0; i < FILES; i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/f%d", file_dir, i);
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		/* Distinct, and large enough to take several write callbacks. */
		for (int k = 0; k < 5000; k++)
			fprintf(f, "file %d line %d\n", i, k);
		fclose(f);
	}
}

static void files_teardown(void)
{
	for (int i = 0; i < FILES; i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/f%d", file_dir, i);
		unlink(path);
	}
	rmdir(file_dir);
}

typedef struct {
	size_t len;
	unsigned long sum;
} digest;

static size_t digest_cb(char *p, size_t size, size_t n, void *ud)
{
	digest *d = ud;
	for (size_t i = 0; i < size * n; i++)
		d->sum = d->sum * 31 + (unsigned char)p[i];
	d->len += size * n;
	return size * n;
}

/* Fetches file `i` through the transport; returns its digest. */
static digest fetch(k8s__transport *t, int i)
{
	char url[160];
	digest d = { 0, 0 };
	snprintf(url, sizeof(url), "file://%s/f%d", file_dir, i);
	CURL *h = k8s__transport_handle(t);
	ck_assert_ptr_nonnull(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, digest_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &d);
	k8s__xfer x;
	ck_assert_int_eq(k8s__xfer_init(&x, h), 0);
	CURLcode res = k8s__xfer_perform(k8s__transport_pick(t, i % 2 == 0), &x);
	ck_assert_int_eq(x.done, true);
	k8s__xfer_destroy(&x);
	ck_assert_int_eq(res, CURLE_OK);
	k8s__transport_release(t, h);
	return d;
}

static digest expected[FILES];

typedef struct {
	k8s__transport *t;
	int id;
	int mismatches;
} worker;

static void *hammer(void *ud)
{
	worker *w = ud;
	for (int k = 0; k < 40; k++) {
		int i = (w->id + k) % FILES;
		digest d = fetch(w->t, i);
		if (d.len != expected[i].len || d.sum != expected[i].sum)
			w->mismatches++;
	}
	return NULL;
}

START_TEST(test_shards_many_threads)
{
	k8s__transport t;
	ck_assert_int_eq(k8s__transport_init(&t, 3, true), 0);
	ck_assert_uint_eq(t.nshards, 3);
	ck_assert_ptr_nonnull(t.watch);
	for (int i = 0; i < FILES; i++) {
		expected[i] = fetch(&t, i);
		ck_assert_uint_gt(expected[i].len, 50000);
	}
	ck_assert(expected[0].sum != expected[1].sum);

	worker w[8];
	pthread_t th[8];
	for (int i = 0; i < 8; i++) {
		w[i] = (worker){ &t, i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, hammer, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].mismatches, 0);
	}
	/* Handles came back to the pool for reuse (bounded). */
	ck_assert_uint_ge(t.nidle, 1);
	ck_assert_uint_le(t.nidle, K8S__POOL_MAX);
	k8s__transport_cleanup(&t);
}
END_TEST

START_TEST(test_pick_round_robin)
{
	k8s__transport t;
	ck_assert_int_eq(k8s__transport_init(&t, 3, false), 0);
	k8s__shard *seen[6];
	for (int i = 0; i < 6; i++)
		seen[i] = k8s__transport_pick(&t, false);
	/* Every shard in turn, then again in the same order. */
	ck_assert_ptr_ne(seen[0], seen[1]);
	ck_assert_ptr_ne(seen[1], seen[2]);
	ck_assert_ptr_ne(seen[0], seen[2]);
	for (int i = 0; i < 3; i++)
		ck_assert_ptr_eq(seen[i], seen[i + 3]);
	/* No watch shard: lists and watches take their turn too. */
	ck_assert_ptr_eq(k8s__transport_pick(&t, true), seen[0]);
	k8s__transport_cleanup(&t);

	ck_assert_int_eq(k8s__transport_init(&t, 2, true), 0);
	k8s__shard *w = k8s__transport_pick(&t, true);
	ck_assert_ptr_eq(w, t.watch);
	for (int i = 0; i < 4; i++)
		ck_assert_ptr_ne(k8s__transport_pick(&t, false), w);
	k8s__transport_cleanup(&t);

	ck_assert_int_eq(k8s__transport_init(&t, 0, false), ASB_EINVAL);
	ck_assert_int_eq(k8s__transport_init(&t, K8S__SHARDS_MAX + 1, false), ASB_EINVAL);
}
END_TEST

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	Suite *s = suite_create("transport");
	TCase *tc = tcase_create("headers");
	tcase_add_test(tc, test_retry_after_seconds);
	tcase_add_test(tc, test_retry_after_date);
	tcase_add_test(tc, test_warning_parse);
	tcase_add_test(tc, test_warning_malformed);
	tcase_add_test(tc, test_header_cb);
	suite_add_tcase(s, tc);
	tc = tcase_create("retries");
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_retryable);
	suite_add_tcase(s, tc);
	tc = tcase_create("shards");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, files_setup, files_teardown);
	tcase_add_test(tc, test_shards_many_threads);
	tcase_add_test(tc, test_pick_round_robin);
	suite_add_tcase(s, tc);

	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
