/*
 * test_yaml_json.c - YAML document to cJSON tree (k8s/yaml.h,
 * libk8s/src/yaml_json.c): structure, scalar typing, the scalar-text flag,
 * and the errors with their positions.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/yaml.h"

/* Converts `yaml` and returns the unformatted JSON text (caller frees). */
static char *to_json(const char *yaml)
{
	cJSON *root = NULL;
	int rc = k8s_yaml_to_json(&root, yaml, strlen(yaml), "test.yaml", 0);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, asb_error_last()->message);
	ck_assert_ptr_nonnull(root);
	char *text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return text;
}

static void assert_json(const char *yaml, const char *want)
{
	char *got = to_json(yaml);
	ck_assert_msg(strcmp(got, want) == 0, "YAML:\n%s\nwant %s\ngot  %s", yaml,
	              want, got);
	free(got);
}

static void assert_error(const char *yaml, const char *needle1, const char *needle2)
{
	cJSON *root = (cJSON *)1;
	int rc = k8s_yaml_to_json(&root, yaml, strlen(yaml), "test.yaml", 0);
	const char *m = asb_error_last()->message;
	ck_assert_msg(rc == ASB_EDECODE, "rc %d for %s", rc, yaml);
	ck_assert_ptr_null(root);
	ck_assert_msg(strstr(m, needle1), "\"%s\" not in: %s", needle1, m);
	if (needle2)
		ck_assert_msg(strstr(m, needle2), "\"%s\" not in: %s", needle2, m);
}

START_TEST(test_structure)
{
	assert_json("a: 1\nb:\n  c: [x, y]\n  d:\n  - {e: f}\n  - g\n",
	            "{\"a\":1,\"b\":{\"c\":[\"x\",\"y\"],\"d\":[{\"e\":\"f\"},\"g\"]}}");
	assert_json("- 1\n- - 2\n  - 3\n- []\n- {}\n", "[1,[2,3],[],{}]");
	assert_json("---\nkey: value\n...\n", "{\"key\":\"value\"}");
	/* Key order is kept. */
	assert_json("z: 1\na: 2\nm: 3\n", "{\"z\":1,\"a\":2,\"m\":3}");
	/* A key with no value is null. */
	assert_json("a:\nb: ~\n", "{\"a\":null,\"b\":null}");
}
END_TEST

START_TEST(test_scalars_plain)
{
	assert_json("[null, Null, NULL, ~, '', ]", "[null,null,null,null,\"\"]");
	assert_json("[true, True, TRUE, false, False, FALSE]",
	            "[true,true,true,false,false,false]");
	/* YAML 1.1 booleans (kubectl's parser), but not y/n. */
	assert_json("[yes, No, ON, off, y, n, Y, N]",
	            "[true,false,true,false,\"y\",\"n\",\"Y\",\"N\"]");
	assert_json("[0, 42, -7, +3, 0x1F, 0o17, 0b101, 0644, 09, 007]",
	            "[0,42,-7,3,31,15,5,420,9,7]");
	assert_json("[1.5, -0.25, .5, 1., 1e3, 2.5E-1, +1.0]",
	            "[1.5,-0.25,0.5,1,1000,0.25,1]");
	/* Not numbers. */
	assert_json("[1.2.3, 0x, 1e, -, 1_000, 12abc, 0xZZ, -0x1]",
	            "[\"1.2.3\",\"0x\",\"1e\",\"-\",\"1_000\",\"12abc\",\"0xZZ\",\"-0x1\"]");
	/* No JSON form: kept as text. */
	assert_json("[.inf, -.Inf, .nan]", "[\".inf\",\"-.Inf\",\".nan\"]");
	assert_json("v: -0", "{\"v\":0}");
}
END_TEST

START_TEST(test_big_integers)
{
	/* Up to 15 digits: numbers; from 16 digits on, raw numbers that
	 * print every digit (a cJSON number would print 15). */
	assert_json("[999999999999999, -999999999999999, 3000000000]",
	            "[999999999999999,-999999999999999,3000000000]");
	cJSON *root = NULL;
	ck_assert_int_eq(k8s_yaml_to_json(&root, "[999999999999999, 1000000000000000]",
	                                   35, NULL, 0), 0);
	ck_assert(cJSON_IsNumber(cJSON_GetArrayItem(root, 0)));
	ck_assert(cJSON_IsRaw(cJSON_GetArrayItem(root, 1)));
	cJSON_Delete(root);
	assert_json("[9007199254740992, -9007199254740992]",
	            "[9007199254740992,-9007199254740992]");
	assert_json("[9007199254740993, 123456789012345678901234567890, -00018446744073709551616]",
	            "[9007199254740993,123456789012345678901234567890,-18446744073709551616]");
	assert_json("big: 0xFFFFFFFFFFFFFFFF", "{\"big\":18446744073709551615}");
	/* Beyond 64 bits in hex: a string. */
	assert_json("big: 0x1FFFFFFFFFFFFFFFF", "{\"big\":\"0x1FFFFFFFFFFFFFFFF\"}");
}
END_TEST

START_TEST(test_scalars_quoted)
{
	/* Quoted and block scalars are always strings. */
	assert_json("['true', \"1\", 'null', \"~\", '0x10']",
	            "[\"true\",\"1\",\"null\",\"~\",\"0x10\"]");
	assert_json("a: |\n  line1\n  line2\nb: >\n  folded\n  text\n",
	            "{\"a\":\"line1\\nline2\\n\",\"b\":\"folded text\\n\"}");
	assert_json("s: \"tab\\there \\u00e9 \\\"q\\\"\"",
	            "{\"s\":\"tab\\there \xc3\xa9 \\\"q\\\"\"}");
	/* Keys are text whatever they look like. */
	assert_json("{1: a, true: b, null: c}", "{\"1\":\"a\",\"true\":\"b\",\"null\":\"c\"}");
}
END_TEST

START_TEST(test_tags)
{
	assert_json("[!!str 123, !!int '42', !!float '1', !!bool 'true', !!null '']",
	            "[\"123\",42,1,true,null]");
	assert_json("! 12", "\"12\"");
	assert_json("!!map {a: !!seq [1]}", "{\"a\":[1]}");
	assert_error("!!int abc", "value does not match its tag", "line 1, column 1");
	assert_error("a: !custom x", "unsupported tag", "!custom");
	assert_error("a: !!set {x}", "unsupported tag", NULL);
}
END_TEST

START_TEST(test_empty)
{
	cJSON *root = NULL;
	ck_assert_int_eq(k8s_yaml_to_json(&root, "", 0, NULL, 0), 0);
	ck_assert(cJSON_IsNull(root));
	cJSON_Delete(root);
	ck_assert_int_eq(k8s_yaml_to_json(&root, "# only a comment\n\n", 18, NULL, 0), 0);
	ck_assert(cJSON_IsNull(root));
	cJSON_Delete(root);
	ck_assert_int_eq(k8s_yaml_to_json(&root, NULL, 0, NULL, 0), 0);
	ck_assert(cJSON_IsNull(root));
	cJSON_Delete(root);
	assert_json("plain", "\"plain\"");
}
END_TEST

START_TEST(test_not_nul_terminated)
{
	/* The length bounds the input, not a NUL. */
	const char text[] = "a: 1\nb: 2\nGARBAGE: [";
	cJSON *root = NULL;
	ck_assert_int_eq(k8s_yaml_to_json(&root, text, 10, NULL, 0), 0);
	char *s = cJSON_PrintUnformatted(root);
	ck_assert_str_eq(s, "{\"a\":1,\"b\":2}");
	free(s);
	cJSON_Delete(root);
}
END_TEST

START_TEST(test_syntax_errors)
{
	assert_error("a: b\n c: d\n", "test.yaml: line 2, column", "not valid YAML");
	assert_error("a: [1, 2\n", "not valid YAML", "test.yaml: line ");
	assert_error("a: 'unterminated\n", "not valid YAML", NULL);
	assert_error("\t- tab\n", "not valid YAML", "line 1");
	assert_error("a: b\n---\nc: d\n", "single YAML document", "line 2, column 1");
	/* Invalid UTF-8. */
	assert_error("a: \xff\xfe\xfd\n", "not valid YAML", NULL);
}
END_TEST

START_TEST(test_unsupported)
{
	assert_error("a: &x 1\nb: *x\n", "anchors are not supported: x", "line 1, column 4");
	assert_error("a: *x\n", "aliases are not supported: x", "line 1, column 4");
	assert_error("- &s [1]\n", "anchors are not supported: s", NULL);
	assert_error("? [a, b]\n: c\n", "a mapping key must be a scalar", "line 1, column 3");
	assert_error("? {a: b}\n: c\n", "a mapping key must be a scalar", NULL);
	assert_error("a: 1\nb: 2\na: 3\n", "duplicate mapping key a", "line 3, column 1");
	assert_error("s: \"nul\\0char\"\n", "NUL character", NULL);
}
END_TEST

START_TEST(test_depth_limit)
{
	size_t depth = K8S_YAML_MAX_DEPTH + 1;
	char *deep = malloc(2 * depth + 1);
	ck_assert_ptr_nonnull(deep);
	memset(deep, '[', depth);
	memset(deep + depth, ']', depth);
	deep[2 * depth] = '\0';
	assert_error(deep, "nesting too deep", NULL);
	/* One level less is fine. */
	deep[depth - 1] = ' ';
	deep[depth] = ' ';
	cJSON *root = NULL;
	ck_assert_int_eq(k8s_yaml_to_json(&root, deep, 2 * depth, NULL, 0), 0);
	cJSON_Delete(root);
	free(deep);
}
END_TEST

START_TEST(test_origin_default)
{
	cJSON *root = NULL;
	ck_assert_int_eq(k8s_yaml_to_json(&root, "[", 1, NULL, 0), ASB_EDECODE);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "<memory>: line "));
	ck_assert_int_eq(k8s_yaml_to_json(NULL, "a", 1, NULL, 0), ASB_EINVAL);
	ck_assert_int_eq(k8s_yaml_to_json(&root, NULL, 3, NULL, 0), ASB_EINVAL);
}
END_TEST

/* K8S_YAML_SCALAR_TEXT: bools and numbers keep their text, as raw nodes;
 * nulls, strings and the structure are as without it. */
START_TEST(test_scalar_text)
{
	cJSON *root = NULL;
	const char *yaml = "a: yes\nb: 0644\nc: 3.0\nd: \"3.0\"\ne: ~\nf: x\n"
	                   "g: !!int 0x10\nh: 12345678901234567890\ni: [1, on]\n";
	ck_assert_int_eq(k8s_yaml_to_json(&root, yaml, strlen(yaml), NULL,
	                                  K8S_YAML_SCALAR_TEXT), 0);
	static const struct { const char *key, *raw; } raws[] = {
		{ "a", "yes" }, { "b", "0644" }, { "c", "3.0" }, { "g", "0x10" },
		{ "h", "12345678901234567890" },
	};
	for (size_t i = 0; i < sizeof(raws) / sizeof(raws[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, raws[i].key);
		ck_assert_msg(cJSON_IsRaw(v), "%s is not raw", raws[i].key);
		ck_assert_str_eq(v->valuestring, raws[i].raw);
	}
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "d")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "e")));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(root, "f")->valuestring, "x");
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "i");
	ck_assert_str_eq(cJSON_GetArrayItem(arr, 0)->valuestring, "1");
	ck_assert_str_eq(cJSON_GetArrayItem(arr, 1)->valuestring, "on");
	cJSON_Delete(root);
	/* a tag still has to match */
	ck_assert_int_eq(k8s_yaml_to_json(&root, "!!int x", 7, NULL, K8S_YAML_SCALAR_TEXT),
	                 ASB_EDECODE);
}
END_TEST

START_TEST(test_kubernetes_manifest)
{
	/* A typical manifest: the shapes the API server expects. */
	assert_json(
		"apiVersion: v1\n"
		"kind: Pod\n"
		"metadata:\n"
		"  name: web\n"
		"  labels: {app: web, tier: \"1\"}\n"
		"  annotations:\n"
		"    note: \"yes\"\n"
		"spec:\n"
		"  containers:\n"
		"  - name: c\n"
		"    image: nginx:1.25\n"
		"    ports: [{containerPort: 80}]\n"
		"    env:\n"
		"    - {name: DEBUG, value: 'true'}\n"
		"  volumes:\n"
		"  - name: v\n"
		"    secret: {secretName: s, defaultMode: 0644}\n",
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\","
		"\"labels\":{\"app\":\"web\",\"tier\":\"1\"},\"annotations\":{\"note\":"
		"\"yes\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
		"\"nginx:1.25\",\"ports\":[{\"containerPort\":80}],\"env\":[{\"name\":"
		"\"DEBUG\",\"value\":\"true\"}]}],\"volumes\":[{\"name\":\"v\",\"secret\":"
		"{\"secretName\":\"s\",\"defaultMode\":420}}]}}");
}
END_TEST

static Suite *yaml_suite(void)
{
	Suite *s = suite_create("yaml_json");
	TCase *tc = tcase_create("convert");
	tcase_add_test(tc, test_structure);
	tcase_add_test(tc, test_scalar_text);
	tcase_add_test(tc, test_scalars_plain);
	tcase_add_test(tc, test_big_integers);
	tcase_add_test(tc, test_scalars_quoted);
	tcase_add_test(tc, test_tags);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_not_nul_terminated);
	tcase_add_test(tc, test_kubernetes_manifest);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_unsupported);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_origin_default);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(yaml_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
