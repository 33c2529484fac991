/*
 * Unit tests of libk8s/src/object.c: metadata helpers, merge patches,
 * semantic equality, owner references and RFC 3339 times.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/object.h"

static const char *POD =
	"{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\","
	"\"resourceVersion\":\"42\",\"generation\":3,"
	"\"labels\":{\"agents.x-k8s.io/sandbox-name-hash\":\"abc\"},"
	"\"annotations\":{\"a.b/c\":\"d\"},"
	"\"ownerReferences\":[{\"kind\":\"X\",\"name\":\"x\",\"uid\":\"1\"},"
	"{\"kind\":\"Sandbox\",\"name\":\"s\",\"uid\":\"2\",\"controller\":true}]},"
	"\"status\":{\"podIP\":\"127.0.1.5\"}}";

START_TEST(metadata_getters)
{
	cJSON *o = cJSON_Parse(POD);
	ck_assert_str_eq(k8s_obj_name(o), "p");
	ck_assert_str_eq(k8s_obj_namespace(o), "ns");
	ck_assert_str_eq(k8s_obj_uid(o), "u1");
	ck_assert_str_eq(k8s_obj_resource_version(o), "42");
	ck_assert_int_eq(k8s_obj_generation(o), 3);
	/* beyond int64 (a malformed object; found by fuzz_sandbox_plan): 0, no UB */
	cJSON *big = cJSON_Parse("{\"metadata\":{\"generation\":2.6e111}}");
	ck_assert_int_eq(k8s_obj_generation(big), 0);
	cJSON_Delete(big);
	ck_assert(!k8s_obj_is_deleting(o));
	ck_assert_str_eq(k8s_obj_label(o, "agents.x-k8s.io/sandbox-name-hash"), "abc");
	ck_assert_ptr_null(k8s_obj_label(o, "missing"));
	ck_assert_str_eq(k8s_obj_annotation(o, "a.b/c"), "d");
	ck_assert_str_eq(k8s_obj_str(o, "status.podIP"), "127.0.1.5");
	ck_assert_ptr_null(k8s_obj_str(o, "status.podIP.deeper"));
	const cJSON *ref = k8s_obj_controller_ref(o);
	ck_assert_ptr_nonnull(ref);
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "name")->valuestring, "s");
	char *key = k8s_obj_key(o);
	ck_assert_str_eq(key, "ns/p");
	free(key);
	ck_assert_ptr_null(k8s_obj_name(NULL));
	cJSON_Delete(o);
}
END_TEST

START_TEST(key_split)
{
	char *ns, *name;
	ck_assert_int_eq(k8s_key_split("a/b", &ns, &name), 0);
	ck_assert_str_eq(ns, "a");
	ck_assert_str_eq(name, "b");
	free(ns);
	free(name);
	ck_assert_int_eq(k8s_key_split("cluster-obj", &ns, &name), 0);
	ck_assert_str_eq(ns, "");
	ck_assert_str_eq(name, "cluster-obj");
	free(ns);
	free(name);
	ck_assert_int_eq(k8s_key_split("", &ns, &name), ASB_EINVAL);
}
END_TEST

/* Parses `text` (single quotes stand for double quotes, for readability). */
static cJSON *js(const char *text)
{
	char *t = strdup(text);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	cJSON *j = cJSON_Parse(t);
	free(t);
	ck_assert_ptr_nonnull(j);
	return j;
}

static void assert_json(const cJSON *got, const char *want)
{
	cJSON *w = js(want);
	char *g = cJSON_PrintUnformatted(got), *e = cJSON_PrintUnformatted(w);
	ck_assert_str_eq(g, e);
	free(g);
	free(e);
	cJSON_Delete(w);
}

/* RFC 7386 appendix A, and what our callers rely on. */
START_TEST(set_member)
{
	cJSON *o = js("{'a':1}");
	ck_assert(k8s_obj_set(o, "a", cJSON_CreateString("x")));   /* replaced */
	ck_assert(k8s_obj_set(o, "b", cJSON_CreateTrue()));        /* added */
	assert_json(o, "{'a':'x','b':true}");
	ck_assert(!k8s_obj_set(o, "c", NULL));
	ck_assert(!k8s_obj_set(NULL, "c", cJSON_CreateNull()));    /* item freed */
	cJSON_Delete(o);
}
END_TEST

START_TEST(merge_patch)
{
	static const struct { const char *target, *patch, *want; } cases[] = {
		{ "{'a':'b'}", "{'a':'c'}", "{'a':'c'}" },
		{ "{'a':'b'}", "{'b':'c'}", "{'a':'b','b':'c'}" },
		{ "{'a':'b'}", "{'a':null}", "{}" },
		{ "{'a':'b','b':'c'}", "{'a':null}", "{'b':'c'}" },
		{ "{'a':['b']}", "{'a':'c'}", "{'a':'c'}" },
		{ "{'a':'c'}", "{'a':['b']}", "{'a':['b']}" },
		{ "{'a':{'b':'c'}}", "{'a':{'b':'d','c':null}}", "{'a':{'b':'d'}}" },
		{ "{'a':[{'b':'c'}]}", "{'a':[1]}", "{'a':[1]}" },
		{ "{'e':null}", "{'a':1}", "{'e':null,'a':1}" },
		{ "{}", "{'a':{'bb':{'ccc':null}}}", "{'a':{'bb':{}}}" },
		{ "{'a':'x'}", "{'a':{'b':1}}", "{'a':{'b':1}}" },
		{ "{'a':1}", "{}", "{'a':1}" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *t = js(cases[i].target), *p = js(cases[i].patch);
		ck_assert_msg(k8s_obj_merge_patch(t, p), "case %zu", i);
		assert_json(t, cases[i].want);
		cJSON_Delete(t);
		cJSON_Delete(p);
	}
	/* only objects patch objects; nothing changes otherwise */
	cJSON *t = js("{'a':1}"), *arr = js("[1]");
	ck_assert(!k8s_obj_merge_patch(t, arr));
	ck_assert(!k8s_obj_merge_patch(arr, t));
	ck_assert(!k8s_obj_merge_patch(NULL, t));
	assert_json(t, "{'a':1}");
	cJSON_Delete(t);
	cJSON_Delete(arr);
}
END_TEST

START_TEST(semantic_equality)
{
	static const struct { const char *a, *b; bool eq; } cases[] = {
		{ "{}", "{'a':null,'b':'','c':0,'d':false,'e':[],'f':{}}", true },
		{ "{'a':{'b':{'c':''}}}", "{}", true },          /* zero structs */
		{ "{'a':{'x':1}}", "{'a':{'x':1.0}}", true },
		{ "{'a':[1,2]}", "{'a':[2,1]}", false },            /* arrays in order */
		{ "{'a':[1]}", "{'a':[1,0]}", false },
		{ "{'a':[{}]}", "{'a':[{'b':null}]}", true },
		{ "{'a':'x'}", "{'a':'y'}", false },
		{ "{'a':'x'}", "{}", false },
		{ "{'a':true}", "{'a':true}", true },
		{ "{'a':true}", "{'a':1}", false },                 /* types differ */
		{ "{'a':'1'}", "{'a':1}", false },
		{ "{'a':{'b':1}}", "{'a':{'b':1,'c':2}}", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *a = js(cases[i].a), *b = js(cases[i].b);
		ck_assert_msg(k8s_obj_semantic_equal(a, b) == cases[i].eq, "case %zu", i);
		ck_assert_msg(k8s_obj_semantic_equal(b, a) == cases[i].eq, "case %zu reversed", i);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	cJSON *empty = js("{}");
	ck_assert(k8s_obj_semantic_equal(NULL, empty));
	ck_assert(k8s_obj_semantic_equal(NULL, NULL));
	cJSON_Delete(empty);

	static const struct { const char *v; bool zero; } zeros[] = {
		{ "null", true }, { "false", true }, { "0", true }, { "''", true },
		{ "[]", true }, { "{}", true }, { "true", false }, { "0.5", false },
		{ "'x'", false }, { "[0]", false }, { "{'a':null}", false },
	};
	for (size_t i = 0; i < sizeof(zeros) / sizeof(zeros[0]); i++) {
		cJSON *v = js(zeros[i].v);
		ck_assert_msg(k8s_obj_is_zero(v) == zeros[i].zero, "zero case %zu", i);
		cJSON_Delete(v);
	}
	ck_assert(k8s_obj_is_zero(NULL));
}
END_TEST

START_TEST(owner_references)
{
	cJSON *o = cJSON_Parse(POD);
	ck_assert_int_eq(k8s_obj_owner_class(o, "2"), K8S_OWNER_THIS);
	ck_assert_int_eq(k8s_obj_owner_class(o, "1"), K8S_OWNER_OTHER);  /* not the controller */
	ck_assert_int_eq(k8s_obj_owner_class(o, ""), K8S_OWNER_OTHER);
	ck_assert_int_eq(k8s_obj_owner_class(o, NULL), K8S_OWNER_OTHER);
	cJSON *bare = js("{'metadata':{'ownerReferences':[{'uid':'1'}]}}");
	ck_assert_int_eq(k8s_obj_owner_class(bare, "1"), K8S_OWNER_NONE);
	ck_assert_int_eq(k8s_obj_owner_class(NULL, "1"), K8S_OWNER_NONE);

	cJSON *ref = k8s_obj_controller_ref_new("apps/v1", "ReplicaSet", "rs", "9");
	assert_json(ref, "{'apiVersion':'apps/v1','kind':'ReplicaSet','name':'rs','uid':'9',"
	                 "'controller':true,'blockOwnerDeletion':true}");
	cJSON_Delete(ref);
	cJSON *refs = k8s_obj_controller_refs_new("v1", "Thing", NULL, "9");
	assert_json(refs, "[{'apiVersion':'v1','kind':'Thing','name':'','uid':'9',"
	                  "'controller':true,'blockOwnerDeletion':true}]");
	cJSON_Delete(refs);

	/* adoption keeps the other references, drops any to the adopter, and
	 * puts the controller reference last */
	cJSON *adopt = js("{'metadata':{'ownerReferences':[{'kind':'X','uid':'1'},"
	                  "{'kind':'Old','uid':'7'},{'kind':'Y','uid':'3'}]}}");
	refs = k8s_obj_adopted_owner_refs(adopt, "g/v1", "K", "n", "7");
	assert_json(refs, "[{'kind':'X','uid':'1'},{'kind':'Y','uid':'3'},"
	                  "{'apiVersion':'g/v1','kind':'K','name':'n','uid':'7',"
	                  "'controller':true,'blockOwnerDeletion':true}]");
	cJSON_Delete(refs);
	refs = k8s_obj_adopted_owner_refs(bare, "g/v1", "K", "n", "7");
	ck_assert_int_eq(cJSON_GetArraySize(refs), 2);
	cJSON_Delete(refs);
	refs = k8s_obj_adopted_owner_refs(NULL, "g/v1", "K", "n", "7");
	ck_assert_int_eq(cJSON_GetArraySize(refs), 1);
	cJSON_Delete(refs);
	cJSON_Delete(adopt);
	cJSON_Delete(bare);
	cJSON_Delete(o);
}
END_TEST

START_TEST(time_parse_and_format)
{
	int64_t ms;
	ck_assert_int_eq(k8s_time_parse("1970-01-01T00:00:00Z", &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(k8s_time_parse("2026-11-29T13:39:52Z", &ms), 0);
	ck_assert_int_eq(ms, 1795959592000LL);
	ck_assert_int_eq(k8s_time_parse("2026-11-29T13:39:52.25Z", &ms), 0);
	ck_assert_int_eq(ms, 1795959592250LL);
	ck_assert_int_eq(k8s_time_parse("2026-11-29T15:39:52+02:00", &ms), 0);
	ck_assert_int_eq(ms, 1795959592000LL);
	ck_assert_int_eq(k8s_time_parse("2026-11-29 13:39:52", &ms), ASB_EINVAL);
	ck_assert_int_eq(k8s_time_parse("garbage", &ms), ASB_EINVAL);
	ck_assert_int_eq(k8s_time_parse("2026-13-01T00:00:00Z", &ms), ASB_EINVAL);
	char buf[32];
	ck_assert_str_eq(k8s_time_format(1795959592250LL, buf, sizeof(buf)), "2026-11-29T13:39:52Z");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("object");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, metadata_getters);
	tcase_add_test(tc, key_split);
	tcase_add_test(tc, set_member);
	tcase_add_test(tc, merge_patch);
	tcase_add_test(tc, semantic_equality);
	tcase_add_test(tc, owner_references);
	tcase_add_test(tc, time_parse_and_format);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
