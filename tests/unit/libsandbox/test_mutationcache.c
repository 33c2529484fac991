/*
 * Unit tests of libsandbox/src/mutationcache.c: the read-your-own-writes
 * decision (which Sandbox a pass reads) and the per-key chain of writes,
 * as the reconciler drives them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fixture.h"
#include "sandbox/mutationcache.h"

/* A Sandbox at resourceVersion `rv` with the pod-name annotation `pod`
 * (NULL: none). */
static cJSON *sandbox(const char *rv, const char *pod)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
	         "{\"metadata\":{\"name\":\"s\",\"namespace\":\"ns\",\"uid\":\"u\","
	         "\"resourceVersion\":\"%s\",\"managedFields\":[{\"manager\":\"m\"}]%s%s%s}}",
	         rv, pod ? ",\"annotations\":{\"agents.x-k8s.io/pod-name\":\"" : "",
	         pod ? pod : "", pod ? "\"}" : "");
	cJSON *o = cJSON_Parse(buf);
	ck_assert_ptr_nonnull(o);
	return o;
}

static const char *rv_of(const cJSON *o)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"),
	                                                "resourceVersion"));
}

/* Resolves `key` with an informer copy at `informer_rv`; returns the rv read. */
static char *read_rv(sbx_mutation_cache *c, const char *key, const char *informer_rv,
                     int want_used)
{
	cJSON *obj = sandbox(informer_rv, NULL);
	ck_assert_int_eq(sbx_mutation_cache_resolve(c, key, &obj), want_used);
	char *rv = strdup(rv_of(obj));
	cJSON_Delete(obj);
	return rv;
}

START_TEST(choose_by_equality_only)
{
	const char *sup[] = { "10", "12" };
	ck_assert_int_eq(sbx_mutation_choose("10", "13", sup, 2), SBX_READ_REMEMBERED);
	ck_assert_int_eq(sbx_mutation_choose("12", "13", sup, 2), SBX_READ_REMEMBERED);
	/* caught up */
	ck_assert_int_eq(sbx_mutation_choose("13", "13", sup, 2), SBX_READ_INFORMER);
	/* another version, "newer" or "older" alike: never ordered */
	ck_assert_int_eq(sbx_mutation_choose("14", "13", sup, 2), SBX_READ_INFORMER);
	ck_assert_int_eq(sbx_mutation_choose("9", "13", sup, 2), SBX_READ_INFORMER);
	ck_assert_int_eq(sbx_mutation_choose("1", "13", sup, 2), SBX_READ_INFORMER);
	/* opaque strings: no numeric prefix matching */
	ck_assert_int_eq(sbx_mutation_choose("100", "13", sup, 2), SBX_READ_INFORMER);
	/* missing data: the informer */
	ck_assert_int_eq(sbx_mutation_choose(NULL, "13", sup, 2), SBX_READ_INFORMER);
	ck_assert_int_eq(sbx_mutation_choose("", "13", sup, 2), SBX_READ_INFORMER);
	ck_assert_int_eq(sbx_mutation_choose("10", NULL, sup, 2), SBX_READ_INFORMER);
	ck_assert_int_eq(sbx_mutation_choose("10", "13", NULL, 2), SBX_READ_INFORMER);
	ck_assert_int_eq(sbx_mutation_choose("10", "13", sup, 0), SBX_READ_INFORMER);
	const char *holes[] = { NULL, "", "10" };
	ck_assert_int_eq(sbx_mutation_choose("10", "13", holes, 3), SBX_READ_REMEMBERED);
	ck_assert_int_eq(sbx_mutation_choose("", "13", holes, 3), SBX_READ_INFORMER);
}
END_TEST

/* One pass reads rv 1, patches the annotation (-> 2) and the status (-> 3);
 * the next passes see the informer lag behind, then catch up. */
START_TEST(chain_of_one_pass_until_caught_up)
{
	sbx_mutation_cache *c = NULL;
	ck_assert_int_eq(sbx_mutation_cache_new(&c), 0);
	char *rv = read_rv(c, "ns/s", "1", 0);   /* nothing remembered */
	ck_assert_str_eq(rv, "1");
	free(rv);

	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "1", sandbox("2", "s")), 0);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "2", sandbox("3", "s")), 0);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 1);

	/* the informer still shows 1, then 2: the remembered object (3) is read */
	cJSON *obj = sandbox("1", NULL);
	ck_assert_int_eq(sbx_mutation_cache_resolve(c, "ns/s", &obj), 1);
	ck_assert_str_eq(rv_of(obj), "3");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(
		cJSON_GetObjectItem(obj, "metadata"), "annotations"), "agents.x-k8s.io/pod-name")), "s");
	/* kept without managedFields */
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(obj, "metadata"),
	                                       "managedFields"));
	cJSON_Delete(obj);
	rv = read_rv(c, "ns/s", "2", 1);
	ck_assert_str_eq(rv, "3");
	free(rv);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 1);

	/* caught up: the informer's object, and the entry is gone */
	rv = read_rv(c, "ns/s", "3", 0);
	ck_assert_str_eq(rv, "3");
	free(rv);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 0);
	/* a later lagging copy is believed again (nothing remembered) */
	rv = read_rv(c, "ns/s", "2", 0);
	ck_assert_str_eq(rv, "2");
	free(rv);
	sbx_mutation_cache_free(c);
}
END_TEST

/* A pass that read the remembered object and wrote again continues the
 * chain: every earlier version still means "not caught up". */
START_TEST(chain_across_passes)
{
	sbx_mutation_cache *c = NULL;
	ck_assert_int_eq(sbx_mutation_cache_new(&c), 0);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "1", sandbox("2", NULL)), 0);
	char *rv = read_rv(c, "ns/s", "1", 1);
	ck_assert_str_eq(rv, "2");
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", rv, sandbox("5", NULL)), 0);
	free(rv);
	rv = read_rv(c, "ns/s", "1", 1);
	ck_assert_str_eq(rv, "5");
	free(rv);
	rv = read_rv(c, "ns/s", "2", 1);
	ck_assert_str_eq(rv, "5");
	free(rv);
	/* someone else wrote (the informer shows a version we never saw) */
	rv = read_rv(c, "ns/s", "4", 0);
	ck_assert_str_eq(rv, "4");
	free(rv);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 0);
	sbx_mutation_cache_free(c);
}
END_TEST

/* A write based on something else than the remembered object starts a new
 * chain; the old superseded versions no longer count. */
START_TEST(new_chain_replaces_old)
{
	sbx_mutation_cache *c = NULL;
	ck_assert_int_eq(sbx_mutation_cache_new(&c), 0);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "1", sandbox("2", NULL)), 0);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "7", sandbox("8", NULL)), 0);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 1);
	char *rv = read_rv(c, "ns/s", "7", 1);
	ck_assert_str_eq(rv, "8");
	free(rv);
	rv = read_rv(c, "ns/s", "1", 0);
	ck_assert_str_eq(rv, "1");
	free(rv);
	sbx_mutation_cache_free(c);
}
END_TEST

START_TEST(forget_noop_and_bad_input)
{
	sbx_mutation_cache *c = NULL;
	ck_assert_int_eq(sbx_mutation_cache_new(NULL), ASB_EINVAL);
	ck_assert_int_eq(sbx_mutation_cache_new(&c), 0);

	/* deleted / deleting Sandbox: the reconciler forgets the key */
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "1", sandbox("2", NULL)), 0);
	sbx_mutation_cache_forget(c, "ns/s");
	sbx_mutation_cache_forget(c, "ns/absent");
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 0);

	/* a no-op write (same resourceVersion) supersedes nothing */
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "2", sandbox("2", NULL)), 0);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 0);

	/* no base or no result version: the entry is dropped */
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "1", sandbox("2", NULL)), 0);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", NULL, sandbox("3", NULL)), 0);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 0);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "1", sandbox("2", NULL)), 0);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "2", sandbox("", NULL)), 0);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 0);

	/* a Sandbox gone from the informer (NULL) drops the entry */
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", "1", sandbox("2", NULL)), 0);
	cJSON *none = NULL;
	ck_assert_int_eq(sbx_mutation_cache_resolve(c, "ns/s", &none), 0);
	ck_assert_ptr_null(none);
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 0);

	ck_assert_int_eq(sbx_mutation_cache_wrote(NULL, "k", "1", sandbox("2", NULL)), ASB_EINVAL);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, NULL, "1", sandbox("2", NULL)), ASB_EINVAL);
	ck_assert_int_eq(sbx_mutation_cache_wrote(c, "k", "1", NULL), ASB_EINVAL);
	ck_assert_int_eq(sbx_mutation_cache_resolve(NULL, "k", &none), 0);
	sbx_mutation_cache_forget(NULL, "k");
	ck_assert_uint_eq(sbx_mutation_cache_size(NULL), 0);
	sbx_mutation_cache_free(NULL);
	sbx_mutation_cache_free(c);
}
END_TEST

/* The superseded list is bounded: the oldest versions are forgotten. */
START_TEST(superseded_bounded)
{
	sbx_mutation_cache *c = NULL;
	ck_assert_int_eq(sbx_mutation_cache_new(&c), 0);
	char base[16], next[16];
	int n = SBX_MUTATION_CACHE_MAX_SUPERSEDED + 4;
	for (int i = 1; i <= n; i++) {
		snprintf(base, sizeof(base), "%d", i);
		snprintf(next, sizeof(next), "%d", i + 1);
		ck_assert_int_eq(sbx_mutation_cache_wrote(c, "ns/s", base, sandbox(next, NULL)), 0);
	}
	snprintf(next, sizeof(next), "%d", n + 1);
	/* the newest superseded version still counts ... */
	char *rv = read_rv(c, "ns/s", base, 1);
	ck_assert_str_eq(rv, next);
	free(rv);
	/* ... the oldest (1) was forgotten: believed, entry dropped */
	rv = read_rv(c, "ns/s", "1", 0);
	ck_assert_str_eq(rv, "1");
	free(rv);
	sbx_mutation_cache_free(c);
}
END_TEST

/* Many keys: the table grows, each key keeps its own entry. */
START_TEST(many_keys)
{
	sbx_mutation_cache *c = NULL;
	ck_assert_int_eq(sbx_mutation_cache_new(&c), 0);
	char key[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "ns/s-%d", i);
		ck_assert_int_eq(sbx_mutation_cache_wrote(c, key, "1", sandbox("2", NULL)), 0);
	}
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 1000);
	for (int i = 0; i < 1000; i += 2) {
		snprintf(key, sizeof(key), "ns/s-%d", i);
		char *rv = read_rv(c, key, "1", 1);
		ck_assert_str_eq(rv, "2");
		free(rv);
		rv = read_rv(c, key, "2", 0);   /* caught up */
		free(rv);
	}
	ck_assert_uint_eq(sbx_mutation_cache_size(c), 500);
	sbx_mutation_cache_free(c);   /* frees the other 500 */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mutationcache");
	TCase *tc = tcase_create("mutationcache");
	tcase_add_test(tc, choose_by_equality_only);
	tcase_add_test(tc, chain_of_one_pass_until_caught_up);
	tcase_add_test(tc, chain_across_passes);
	tcase_add_test(tc, new_chain_replaces_old);
	tcase_add_test(tc, forget_noop_and_bad_input);
	tcase_add_test(tc, superseded_bounded);
	tcase_add_test(tc, many_keys);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
