/*
 * Unit tests of libk8s/src/packed.c: packing cJSON trees into one
 * allocation and back, exactly (the informer codec over it: test_informer).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/object.h"
#include "k8s/packed.h"

/* A Sandbox as the API server serves it (managedFields and all). */
static const char *SANDBOX =
	"{\"apiVersion\":\"agents.x-k8s.io/v1beta1\",\"kind\":\"Sandbox\","
	"\"metadata\":{\"creationTimestamp\":\"2026-12-03T11:50:01Z\",\"generation\":1,"
	"\"annotations\":{\"agents.x-k8s.io/pod-name\":\"sb-00042\"},"
	"\"finalizers\":[\"agents.x-k8s.io/sandbox\"],"
	"\"managedFields\":[{\"apiVersion\":\"agents.x-k8s.io/v1beta1\",\"fieldsType\":\"FieldsV1\","
	"\"fieldsV1\":{\"f:spec\":{\".\":{},\"f:podTemplate\":{\".\":{},\"f:spec\":{}}}},"
	"\"manager\":\"python-requests\",\"operation\":\"Update\",\"time\":\"2026-12-03T11:50:01Z\"}],"
	"\"name\":\"sb-00042\",\"namespace\":\"bench-c2r-1-abcdef\",\"resourceVersion\":\"123456\","
	"\"uid\":\"0b0e8f2c-7a51-4f7e-9d0e-6f3c2d1a9b8c\"},"
	"\"spec\":{\"podTemplate\":{\"metadata\":{\"resourceVersion\":\"not-this\"},"
	"\"spec\":{\"containers\":[{\"image\":\"registry.k8s.io/pause:3.10\",\"name\":\"main\","
	"\"ports\":[{\"containerPort\":8888,\"protocol\":\"TCP\"}],"
	"\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"256Mi\"}}}]}},"
	"\"replicas\":1},"
	"\"status\":{\"conditions\":[{\"lastTransitionTime\":\"2026-12-03T11:50:02Z\","
	"\"message\":\"Pod is Ready; Service Exists\",\"observedGeneration\":1,"
	"\"reason\":\"DependenciesReady\",\"status\":\"True\",\"type\":\"Ready\"}],"
	"\"podIPs\":[\"10.19.0.42\"],\"replicas\":1,\"selector\":\"agents.x-k8s.io/sandbox-name-hash=1a2b3c4d\","
	"\"service\":\"sb-00042\",\"serviceFQDN\":\"sb-00042.bench-c2r-1-abcdef.svc.cluster.local\"}}";

static k8s_packer *new_packer(void)
{
	k8s_packer *pk = NULL;
	ck_assert_int_eq(k8s_packer_new(&pk, NULL, 0), 0);
	return pk;
}

/* pack, unpack, compare (exactly, and printed the same) */
static void round_trip(const k8s_packer *pk, const cJSON *in)
{
	k8s_packed *p = NULL;
	ck_assert_int_eq(k8s_packer_pack(pk, in, &p), 0);
	ck_assert_ptr_nonnull(p);
	cJSON *out = k8s_packer_unpack(pk, p);
	ck_assert_ptr_nonnull(out);
	/* cJSON_Compare() fails an object with duplicate keys even against
	 * a copy of itself (it matches each key to the first of its name): only where it
	 * holds for `in` itself; the printed forms are compared always */
	cJSON *dup = cJSON_Duplicate(in, 1);
	if (cJSON_Compare(in, dup, 1))
		ck_assert(cJSON_Compare(in, out, 1));
	cJSON_Delete(dup);
	char *a = cJSON_PrintUnformatted(in), *b = cJSON_PrintUnformatted(out);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	cJSON_Delete(out);
	k8s_packed_free(p);
}

START_TEST(sandbox_round_trip_and_size)
{
	k8s_packer *pk = new_packer();
	cJSON *sb = cJSON_Parse(SANDBOX);
	ck_assert_ptr_nonnull(sb);
	round_trip(pk, sb);
	k8s_packed *p = NULL;
	ck_assert_int_eq(k8s_packer_pack(pk, sb, &p), 0);
	/* smaller than the JSON text it came from */
	ck_assert_uint_lt(k8s_packed_size(p), strlen(SANDBOX));
	/* the root's metadata.resourceVersion, not the podTemplate's */
	ck_assert_str_eq(k8s_packed_resource_version(p), "123456");
	k8s_packed_free(p);
	cJSON_Delete(sb);
	k8s_packer_free(pk);
}
END_TEST

START_TEST(every_type_and_edge)
{
	k8s_packer *pk = new_packer();
	static const char *docs[] = {
		"{}", "[]", "null", "true", "false", "0", "\"\"", "\"True\"", "\"x\"",
		"[[],{},[[]],{\"\":{}}]",
		"{\"a\":1,\"a\":2,\"a\":\"dup keys kept, in order\"}",
		"{\"n\":[0,-1,1,127,128,-128,16383,16384,-9007199254740992,9007199254740992,"
		"9007199254740994,1.5,-2.25,1e300,-1e-300,123456789012345678901234567890,"
		"2147483647,2147483648,-2147483649,0.1]}",
		"{\"\\u00e9t\\u00e9\":\"\\u65e5\\u672c\",\"tab\\t\":\"q\\\"uote\\\\\",\"metadata\":5}",
		"{\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"True\":\"False\"}},\"status\":{\"phase\":\"Running\"}}",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		cJSON *o = cJSON_Parse(docs[i]);
		ck_assert_msg(o != NULL, "%s", docs[i]);
		round_trip(pk, o);
		cJSON_Delete(o);
	}
	/* -0.0 keeps its sign (as a double, not a varint) */
	cJSON *a = cJSON_CreateArray();
	cJSON_AddItemToArray(a, cJSON_CreateNumber(-0.0));
	cJSON_AddItemToArray(a, cJSON_CreateRaw("{\"raw\":1}"));
	k8s_packed *p = NULL;
	ck_assert_int_eq(k8s_packer_pack(pk, a, &p), 0);
	cJSON *b = k8s_packer_unpack(pk, p);
	ck_assert(signbit(b->child->valuedouble));
	ck_assert(cJSON_IsRaw(b->child->next));
	ck_assert_str_eq(b->child->next->valuestring, "{\"raw\":1}");
	cJSON_Delete(b);
	k8s_packed_free(p);
	cJSON_Delete(a);
	/* an object member without a key (built by hand) stays keyless */
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToArray(o, cJSON_CreateString("no key"));
	cJSON_AddStringToObject(o, "k", "v");
	ck_assert_int_eq(k8s_packer_pack(pk, o, &p), 0);
	b = k8s_packer_unpack(pk, p);
	ck_assert_ptr_null(b->child->string);
	ck_assert_str_eq(b->child->valuestring, "no key");
	ck_assert_str_eq(b->child->next->string, "k");
	cJSON_Delete(b);
	k8s_packed_free(p);
	cJSON_Delete(o);
	k8s_packer_free(pk);
}
END_TEST

START_TEST(resource_version_as_cjson_finds_it)
{
	k8s_packer *pk = new_packer();
	static const struct { const char *doc, *rv; } cases[] = {
		{ "{\"metadata\":{\"resourceVersion\":\"7\"}}", "7" },
		{ "{\"spec\":{\"metadata\":{\"resourceVersion\":\"9\"}},\"metadata\":{\"resourceVersion\":\"7\"}}", "7" },
		/* the first of duplicates, as k8s_obj_resource_version() reads it */
		{ "{\"metadata\":{\"resourceVersion\":\"1\",\"resourceVersion\":\"2\"}}", "1" },
		{ "{\"metadata\":{\"resourceVersion\":3,\"resourceVersion\":\"2\"}}", NULL },
		{ "{\"metadata\":1,\"metadata\":{\"resourceVersion\":\"3\"}}", NULL },
		{ "{\"metadata\":{\"resourceVersion\":\"True\"}}", "True" },   /* a dictionary word */
		{ "{\"metadata\":{}}", NULL },
		{ "[{\"metadata\":{\"resourceVersion\":\"7\"}}]", NULL },
		{ "{\"metadata\":{\"x\":{\"resourceVersion\":\"7\"}}}", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *o = cJSON_Parse(cases[i].doc);
		k8s_packed *p = NULL;
		ck_assert_int_eq(k8s_packer_pack(pk, o, &p), 0);
		const char *rv = k8s_packed_resource_version(p);
		const char *want = k8s_obj_resource_version(o);
		if (cases[i].rv) {
			ck_assert_msg(rv && strcmp(rv, cases[i].rv) == 0, "%s: %s", cases[i].doc, rv);
			ck_assert_str_eq(want, cases[i].rv);
		} else {
			ck_assert_msg(rv == NULL, "%s: %s", cases[i].doc, rv);
			ck_assert_ptr_null(want);
		}
		round_trip(pk, o);
		k8s_packed_free(p);
		cJSON_Delete(o);
	}
	k8s_packer_free(pk);
}
END_TEST

START_TEST(unpack_at_follows_paths_as_k8s_obj_at)
{
	k8s_packer *pk = new_packer();
	cJSON *sb = cJSON_Parse(SANDBOX);
	/* a duplicate "status" after the first: the first is the one found */
	cJSON_AddItemToObject(sb, "status", cJSON_CreateString("second"));
	k8s_packed *p = NULL;
	ck_assert_int_eq(k8s_packer_pack(pk, sb, &p), 0);
	static const char *paths[] = { "", "metadata", "metadata.name", "metadata.labels",
	                               "metadata.managedFields", "status.conditions",
	                               "spec.podTemplate.spec.containers", "status",
	                               "spec.replicas", "status.podIPs", "missing",
	                               "metadata.name.deeper", "spec.missing", "status.conditions.type" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const cJSON *want = *paths[i] ? k8s_obj_at(sb, paths[i]) : sb;
		cJSON *got = k8s_packer_unpack_at(pk, p, paths[i]);
		if (!want) {
			ck_assert_msg(got == NULL, "%s", paths[i]);
			continue;
		}
		ck_assert_msg(got != NULL, "%s", paths[i]);
		ck_assert_ptr_null(got->string);
		char *a = cJSON_PrintUnformatted(want), *b = cJSON_PrintUnformatted(got);
		ck_assert_str_eq(a, b);
		free(a);
		free(b);
		cJSON_Delete(got);
	}
	ck_assert_ptr_null(k8s_packer_unpack_at(pk, p, NULL));
	ck_assert_ptr_null(k8s_packer_unpack_at(NULL, p, "metadata"));
	k8s_packed_free(p);
	cJSON_Delete(sb);
	/* a root that is not an object has no members */
	cJSON *arr = cJSON_Parse("[{\"metadata\":{}}]");
	ck_assert_int_eq(k8s_packer_pack(pk, arr, &p), 0);
	ck_assert_ptr_null(k8s_packer_unpack_at(pk, p, "metadata"));
	k8s_packed_free(p);
	cJSON_Delete(arr);
	k8s_packer_free(pk);
}
END_TEST

START_TEST(bad_arguments)
{
	k8s_packer *pk = new_packer();
	k8s_packed *p = (k8s_packed *)1;
	ck_assert_int_eq(k8s_packer_pack(pk, NULL, &p), ASB_EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(k8s_packer_pack(NULL, NULL, NULL), ASB_EINVAL);
	/* a node of no JSON type, deep inside */
	cJSON *o = cJSON_Parse("{\"a\":[1,{\"b\":2}]}");
	cJSON *bad = cJSON_CreateNull();
	bad->type = cJSON_Invalid;
	cJSON_AddItemToObject(o->child->child->next, "c", bad);
	ck_assert_int_eq(k8s_packer_pack(pk, o, &p), ASB_EINVAL);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "no JSON type"));
	cJSON_Delete(o);
	ck_assert_ptr_null(k8s_packer_unpack(pk, NULL));
	ck_assert_ptr_null(k8s_packed_resource_version(NULL));
	ck_assert_uint_eq(k8s_packed_size(NULL), 0);
	k8s_packed_free(NULL);
	k8s_packer_free(NULL);
	k8s_packer_free(pk);

	const char *empty[] = { "ok", "" };
	ck_assert_int_eq(k8s_packer_new(&pk, empty, 2), ASB_EINVAL);
	const char *many[K8S_PACKER_MAX_WORDS + 1];
	for (size_t i = 0; i <= K8S_PACKER_MAX_WORDS; i++)
		many[i] = "w";
	ck_assert_int_eq(k8s_packer_new(&pk, many, K8S_PACKER_MAX_WORDS + 1), ASB_EINVAL);
	ck_assert_int_eq(k8s_packer_new(NULL, NULL, 0), ASB_EINVAL);
}
END_TEST

START_TEST(caller_words_make_it_smaller)
{
	k8s_packer *plain = new_packer(), *pk = NULL;
	/* duplicates of each other and of built-in words are ignored */
	const char *words[] = { "serviceFQDN", "podTemplate", "Sandbox", "agents.x-k8s.io/v1beta1",
	                        "podTemplate", "metadata" };
	ck_assert_int_eq(k8s_packer_new(&pk, words, 6), 0);
	cJSON *sb = cJSON_Parse(SANDBOX);
	k8s_packed *a = NULL, *b = NULL;
	ck_assert_int_eq(k8s_packer_pack(plain, sb, &a), 0);
	ck_assert_int_eq(k8s_packer_pack(pk, sb, &b), 0);
	/* each of 4 words saves its length plus a NUL, less one byte */
	size_t saved = strlen("serviceFQDN") + strlen("podTemplate") + strlen("Sandbox") +
	               2 * strlen("agents.x-k8s.io/v1beta1");
	ck_assert_uint_eq(k8s_packed_size(a) - k8s_packed_size(b), saved);
	round_trip(pk, sb);
	k8s_packed_free(a);
	k8s_packed_free(b);
	cJSON_Delete(sb);
	k8s_packer_free(plain);
	k8s_packer_free(pk);
}
END_TEST

/* A deterministic random tree of up to `depth` levels. */
static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static cJSON *random_tree(int depth)
{
	static const char *strs[] = { "", "True", "metadata", "x", "agents", "\xc3\xa9", "v1",
	                              "a-much-longer-string-than-the-others-0123456789" };
	switch (rnd() % (depth > 0 ? 9 : 6)) {
	case 0: return cJSON_CreateNull();
	case 1: return cJSON_CreateBool(rnd() & 1);
	case 2: return cJSON_CreateNumber((double)(int64_t)rnd() / (double)(1 + rnd() % 1000));
	case 3: return cJSON_CreateNumber((double)((int64_t)(rnd() % 2000001) - 1000000));
	case 4:
	case 5: return cJSON_CreateString(strs[rnd() % 8]);
	case 6: {
		cJSON *a = cJSON_CreateArray();
		for (int i = (int)(rnd() % 5); i > 0; i--)
			cJSON_AddItemToArray(a, random_tree(depth - 1));
		return a;
	}
	default: {
		cJSON *o = cJSON_CreateObject();
		for (int i = (int)(rnd() % 6); i > 0; i--)
			cJSON_AddItemToObject(o, strs[rnd() % 8], random_tree(depth - 1));
		return o;
	}
	}
}

START_TEST(random_trees_round_trip)
{
	k8s_packer *pk = new_packer();
	for (int i = 0; i < 2000; i++) {
		cJSON *t = random_tree(5);
		round_trip(pk, t);
		cJSON_Delete(t);
	}
	k8s_packer_free(pk);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("packed");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, sandbox_round_trip_and_size);
	tcase_add_test(tc, every_type_and_edge);
	tcase_add_test(tc, resource_version_as_cjson_finds_it);
	tcase_add_test(tc, unpack_at_follows_paths_as_k8s_obj_at);
	tcase_add_test(tc, bad_arguments);
	tcase_add_test(tc, caller_words_make_it_smaller);
	tcase_add_test(tc, random_trees_round_trip);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
