/*
 * test_claim_fixture.h - helpers of the claim and warm queue unit tests:
 * load a JSON fixture from tests/unit/libwarmpool/fixtures/ and compare
 * JSON. Header-only (static functions), one copy per test program.
 */
#ifndef WP_TEST_CLAIM_FIXTURE_H
#define WP_TEST_CLAIM_FIXTURE_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <cjson/cJSON.h>

/* Loads fixtures/<file>; fails the test when unreadable or not JSON. */
static inline cJSON *cfx_load(const char *file)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", TEST_DATA_DIR, file);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	ck_assert_msg(j != NULL, "%s is not JSON", path);
	return j;
}

/* Parses JSON text (fails the test when invalid). */
static inline cJSON *cfx_json(const char *text)
{
	cJSON *j = cJSON_Parse(text);
	ck_assert_msg(j != NULL, "bad JSON in test: %s", text);
	return j;
}

/* Asserts JSON equality (cJSON_Compare, case-sensitive), printing both. */
static inline void cfx_assert_json(const cJSON *got, const cJSON *want)
{
	if (!cJSON_Compare(got, want, true)) {
		char *g = got ? cJSON_Print(got) : NULL;
		char *w = want ? cJSON_Print(want) : NULL;
		ck_abort_msg("JSON differs.\ngot:  %s\nwant: %s", g ? g : "(null)", w ? w : "(null)");
	}
}

static inline void cfx_assert_json_str(const cJSON *got, const char *want)
{
	cJSON *w = cfx_json(want);
	cfx_assert_json(got, w);
	cJSON_Delete(w);
}

/* Runs a suite; returns the exit code. */
static inline int cfx_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
