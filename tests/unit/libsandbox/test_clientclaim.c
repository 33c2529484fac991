/*
 * Unit tests of libsandbox/src/clientclaim.c: the SandboxClaim a client
 * writes (docs/upstream.md#claim-manifest) compared whole with a fixture, the minimal
 * claim, client-side validation messages, generated names, the UTC
 * ISO-8601 annotation, and the readiness decision of docs/upstream.md#readiness-wait (fail-fast
 * reasons and their precedence, Ready, resolve-only, legacy Name), and the
 * pod IP choice of Sandbox.get_pod_ip().
 */
#include <string.h>
#include "fixture.h"
#include "sandbox/clientclaim.h"

/* 2026-01-02T03:04:05.123456Z */
#define NOW_US 1767323045123456LL

static void assert_json_eq(const cJSON *got, const cJSON *want)
{
	if (!cJSON_Compare(got, want, true)) {
		char *g = cJSON_Print(got), *w = cJSON_Print(want);
		ck_abort_msg("JSON differs:\n got: %s\nwant: %s", g, w);
	}
}

START_TEST(full_claim_matches_fixture)
{
	sbx_kv labels[] = { { "app", "agent" }, { "sandbox.users.io/run", "r1" } };
	sbx_kv ann[] = { { "note", "x" } };
	sbx_kv plabels[] = { { "sandbox.users.io/team", "a" } };
	sbx_kv pann[] = { { "example.com/owner", "me" } };
	sbx_claim_options o = SBX_CLAIM_OPTIONS_INIT;
	o.warm_pool = "python-pool";
	o.labels = labels;
	o.nlabels = 2;
	o.annotations = ann;
	o.nannotations = 1;
	o.shutdown_after_seconds = 3600;
	o.volume_claim_templates_json = "[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":"
		"[\"ReadWriteOnce\"],\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]";
	o.pod_labels = plabels;
	o.npod_labels = 1;
	o.pod_annotations = pann;
	o.npod_annotations = 1;
	cJSON *got = NULL;
	ck_assert_int_eq(sbx_claim_build(&o, "team-a", "sandbox-claim-0badf00d", NOW_US, &got), 0);
	cJSON *want = fx_load("client/claim_full.json");
	assert_json_eq(got, want);
	cJSON_Delete(got);
	cJSON_Delete(want);
}
END_TEST

START_TEST(minimal_claim_omits_empty_sections)
{
	sbx_claim_options o = SBX_CLAIM_OPTIONS_INIT;
	o.warm_pool = "p";
	o.created_by = "go-client";
	cJSON *c = NULL;
	ck_assert_int_eq(sbx_claim_build(&o, NULL, "n", NOW_US, &c), 0);
	ck_assert_ptr_null(k8s_obj_at(c, "metadata.namespace"));
	ck_assert_ptr_null(k8s_obj_at(c, "spec.lifecycle"));
	ck_assert_ptr_null(k8s_obj_at(c, "spec.volumeClaimTemplates"));
	ck_assert_ptr_null(k8s_obj_at(c, "spec.additionalPodMetadata"));
	ck_assert_str_eq(k8s_obj_label(c, SBX_LABEL_CREATED_BY), "go-client");
	ck_assert_str_eq(k8s_obj_annotation(c, SBX_ANNOTATION_CLIENT_FIRST_REQUESTED),
	                 "2026-01-02T03:04:05.123456+00:00");
	ck_assert_str_eq(k8s_obj_str(c, "spec.warmPoolRef.name"), "p");
	cJSON_Delete(c);

	/* only pod annotations: the labels section is left out */
	sbx_kv pann[] = { { "a", "b" } };
	o.pod_annotations = pann;
	o.npod_annotations = 1;
	ck_assert_int_eq(sbx_claim_build(&o, NULL, "n", NOW_US, &c), 0);
	ck_assert_ptr_null(k8s_obj_at(c, "spec.additionalPodMetadata.labels"));
	ck_assert_str_eq(k8s_obj_str(c, "spec.additionalPodMetadata.annotations.a"), "b");
	cJSON_Delete(c);
}
END_TEST

START_TEST(caller_timestamp_and_policy_are_kept)
{
	sbx_kv ann[] = { { SBX_ANNOTATION_CLIENT_FIRST_REQUESTED, "2020-01-01T00:00:00+00:00" } };
	sbx_claim_options o = SBX_CLAIM_OPTIONS_INIT;
	o.warm_pool = "p";
	o.annotations = ann;
	o.nannotations = 1;
	o.shutdown_after_seconds = 1;
	o.shutdown_policy = "Retain";
	cJSON *c = NULL;
	ck_assert_int_eq(sbx_claim_build(&o, "ns", "n", NOW_US, &c), 0);
	ck_assert_str_eq(k8s_obj_annotation(c, SBX_ANNOTATION_CLIENT_FIRST_REQUESTED),
	                 "2020-01-01T00:00:00+00:00");
	ck_assert_str_eq(k8s_obj_str(c, "spec.lifecycle.shutdownTime"), "2026-01-02T03:04:06Z");
	ck_assert_str_eq(k8s_obj_str(c, "spec.lifecycle.shutdownPolicy"), "Retain");
	cJSON_Delete(c);
	sbx_kv env[] = { { "A", "1" }, { "B", NULL } };
	o.env = env;
	o.nenv = 2;
	ck_assert_int_eq(sbx_claim_build(&o, "ns", "n", NOW_US, &c), 0);
	cJSON *want = cJSON_Parse("[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"\"}]");
	assert_json_eq(k8s_obj_at(c, "spec.env"), want);
	cJSON_Delete(want);
	cJSON_Delete(c);
}
END_TEST

/* Builds with one bad field and checks the code and the message. */
static void assert_refused(sbx_claim_options *o, const char *want_substring)
{
	cJSON *c = (cJSON *)1;
	ck_assert_int_eq(sbx_claim_build(o, "ns", "n", NOW_US, &c), ASB_EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(asb_error_last()->message, want_substring) != NULL,
	              "message \"%s\" lacks \"%s\"", asb_error_last()->message, want_substring);
}

START_TEST(client_side_validation)
{
	sbx_claim_options o = SBX_CLAIM_OPTIONS_INIT;
	assert_refused(&o, "a warm pool name is required");
	o.warm_pool = "";
	assert_refused(&o, "a warm pool name is required");
	o.warm_pool = "p";
	o.shutdown_after_seconds = -5;
	assert_refused(&o, "shutdown_after_seconds must be a positive number of seconds, got -5");
	o.shutdown_after_seconds = 0;

	sbx_kv bad_key[] = { { "-bad", "v" } };
	o.labels = bad_key;
	o.nlabels = 1;
	assert_refused(&o, "invalid label key \"-bad\": name part must consist of alphanumeric");
	sbx_kv bad_value[] = { { "ok", "not valid!" } };
	o.labels = bad_value;
	assert_refused(&o, "invalid label value \"not valid!\" for key \"ok\": a valid label must");
	o.labels = NULL;
	o.nlabels = 0;

	o.pod_labels = bad_key;
	o.npod_labels = 1;
	assert_refused(&o, "invalid pod label key \"-bad\"");
	o.pod_labels = NULL;
	o.npod_labels = 0;
	sbx_kv bad_ann[] = { { "a/b/c", "v" } };
	o.pod_annotations = bad_ann;
	o.npod_annotations = 1;
	assert_refused(&o, "invalid pod annotation key \"a/b/c\"");
	o.pod_annotations = NULL;
	o.npod_annotations = 0;

	o.volume_claim_templates_json = "{\"metadata\":{}}";
	assert_refused(&o, "volume claim templates must be a JSON array");
	o.volume_claim_templates_json = "[1]";
	assert_refused(&o, "volume claim templates must be a JSON array");
	o.volume_claim_templates_json = "[";
	assert_refused(&o, "volume claim templates must be a JSON array");
	o.volume_claim_templates_json = NULL;

	sbx_kv env[] = { { "", "v" } };
	o.env = env;
	o.nenv = 1;
	assert_refused(&o, "env entry 0 has no name");
	o.env = NULL;
	o.nenv = 0;

	o.created_by = "bad value";
	assert_refused(&o, "invalid label value \"bad value\" for key \"agents.x-k8s.io/created-by\"");
}
END_TEST

START_TEST(generated_names)
{
	char a[SBX_CLAIM_NAME_SIZE], b[SBX_CLAIM_NAME_SIZE];
	ck_assert_int_eq(sbx_claim_name_generate(a), 0);
	ck_assert_int_eq(sbx_claim_name_generate(b), 0);
	ck_assert_int_eq(strlen(a), strlen("sandbox-claim-") + 8);
	ck_assert_int_eq(strncmp(a, "sandbox-claim-", 14), 0);
	for (int i = 14; i < 22; i++)
		ck_assert(strchr("0123456789abcdef", a[i]) != NULL);
	ck_assert_str_ne(a, b);  /* 2^-32 chance of a false failure */
}
END_TEST

START_TEST(iso_time)
{
	char buf[40];
	ck_assert_str_eq(sbx_time_format_iso_us(0, buf, sizeof(buf)),
	                 "1970-01-01T00:00:00.000000+00:00");
	ck_assert_str_eq(sbx_time_format_iso_us(NOW_US, buf, sizeof(buf)),
	                 "2026-01-02T03:04:05.123456+00:00");
	ck_assert_str_eq(sbx_time_format_iso_us(-1, buf, sizeof(buf)),
	                 "1969-12-31T23:59:59.999999+00:00");
}
END_TEST

/* A claim with the given conditions (JSON array text) and sandbox name. */
static cJSON *claim_with(const char *conditions, const char *sandbox_key, const char *sandbox)
{
	cJSON *c = cJSON_Parse("{\"metadata\":{\"name\":\"c\"},\"status\":{}}");
	if (conditions)
		fx_set(c, "status.conditions", cJSON_Parse(conditions));
	if (sandbox) {
		cJSON *sb = cJSON_CreateObject();
		cJSON_AddStringToObject(sb, sandbox_key, sandbox);
		fx_set(c, "status.sandbox", sb);
	}
	return c;
}

/* The outcome; *reason gets a copy of the reason (static), or NULL. */
static int outcome(const char *conds, const char *sandbox, bool need_ready, const char **reason)
{
	static char copy[64];
	cJSON *c = claim_with(conds, "name", sandbox);
	const char *name = NULL, *msg = NULL, *why = NULL;
	int r = sbx_claim_outcome(c, need_ready, &name, &why, &msg);
	if (r < 0)
		ck_assert_ptr_nonnull(msg);
	if (r == SBX_CLAIM_RESOLVED)
		ck_assert_str_eq(name, sandbox);
	snprintf(copy, sizeof(copy), "%s", why ? why : "");
	*reason = why ? copy : NULL;
	cJSON_Delete(c);
	return r;
}

START_TEST(readiness_decisions)
{
	const char *reason;
	ck_assert_int_eq(outcome(NULL, NULL, true, &reason), SBX_CLAIM_PENDING);
	ck_assert_ptr_null(reason);
	ck_assert_int_eq(outcome("[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
	                         "\"SandboxNotReady\"}]", "s", true, &reason), SBX_CLAIM_PENDING);
	ck_assert_int_eq(outcome("[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
	                         "\"DependenciesReady\"}]", NULL, true, &reason), SBX_CLAIM_PENDING);
	ck_assert_int_eq(outcome("[{\"type\":\"Ready\",\"status\":\"True\"}]", "s", true, &reason),
	                 SBX_CLAIM_RESOLVED);
	/* resolve-only: the name is enough */
	ck_assert_int_eq(outcome("[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
	                         "\"SandboxNotReady\"}]", "s", false, &reason), SBX_CLAIM_RESOLVED);

	static const struct { const char *reason; int code; } terminal[] = {
		{ "TemplateNotFound", SBX_ETEMPLATENOTFOUND },
		{ "InvalidMetadata", SBX_EINVALIDMETADATA },
		{ "EnvVarsInjectionRejected", SBX_EENVREJECTED },
		{ "VolumeClaimTemplatesError", SBX_EVOLUMECLAIMTEMPLATES },
		{ "ClaimExpired", SBX_ECLAIMEXPIRED },
		{ "SandboxExpired", SBX_ESANDBOXEXPIRED },
	};
	for (size_t i = 0; i < sizeof(terminal) / sizeof(terminal[0]); i++) {
		char conds[256];
		snprintf(conds, sizeof(conds), "[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
		         "\"%s\",\"message\":\"m\"}]", terminal[i].reason);
		ck_assert_int_eq(outcome(conds, "s", true, &reason), terminal[i].code);
		ck_assert_str_eq(reason, terminal[i].reason);
		/* resolve-only waits fail fast too (upstream) */
		ck_assert_int_eq(outcome(conds, NULL, false, &reason), terminal[i].code);
		/* the terminal reasons need type Ready and status False */
		snprintf(conds, sizeof(conds), "[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":"
		         "\"%s\"}]", terminal[i].reason);
		ck_assert_int_eq(outcome(conds, "s", true, &reason), SBX_CLAIM_RESOLVED);
		snprintf(conds, sizeof(conds), "[{\"type\":\"Other\",\"status\":\"False\",\"reason\":"
		         "\"%s\"}]", terminal[i].reason);
		ck_assert_int_eq(outcome(conds, NULL, true, &reason), SBX_CLAIM_PENDING);
	}
	/* WarmPoolNotFound whatever the condition's type and status */
	ck_assert_int_eq(outcome("[{\"type\":\"Other\",\"status\":\"True\",\"reason\":"
	                         "\"WarmPoolNotFound\"}]", "s", true, &reason), SBX_EWARMPOOLNOTFOUND);
	/* the first fail-fast condition in array order wins */
	ck_assert_int_eq(outcome("[{\"type\":\"X\",\"status\":\"Unknown\",\"reason\":"
	                         "\"WarmPoolNotFound\"},{\"type\":\"Ready\",\"status\":\"False\","
	                         "\"reason\":\"TemplateNotFound\"}]", NULL, true, &reason),
	                 SBX_EWARMPOOLNOTFOUND);
	ck_assert_int_eq(outcome("[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":"
	                         "\"TemplateNotFound\"},{\"type\":\"X\",\"status\":\"Unknown\","
	                         "\"reason\":\"WarmPoolNotFound\"}]", NULL, true, &reason),
	                 SBX_ETEMPLATENOTFOUND);
	/* a fail-fast reason beats a bound, ready-looking status */
	ck_assert_int_eq(outcome("[{\"type\":\"Finished\",\"status\":\"True\",\"reason\":"
	                         "\"WarmPoolNotFound\"},{\"type\":\"Ready\",\"status\":\"True\"}]",
	                         "s", true, &reason), SBX_EWARMPOOLNOTFOUND);
}
END_TEST

START_TEST(legacy_sandbox_name_and_message)
{
	cJSON *c = claim_with("[{\"type\":\"Ready\",\"status\":\"True\"}]", "Name", "legacy");
	const char *name = NULL;
	ck_assert_int_eq(sbx_claim_outcome(c, true, &name, NULL, NULL), SBX_CLAIM_RESOLVED);
	ck_assert_str_eq(name, "legacy");
	cJSON_Delete(c);
	c = claim_with("[{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"TemplateNotFound\","
	               "\"message\":\"SandboxTemplate \\\"t\\\" not found\"}]", "name", NULL);
	const char *reason, *msg;
	ck_assert_int_eq(sbx_claim_outcome(c, true, NULL, &reason, &msg), SBX_ETEMPLATENOTFOUND);
	ck_assert_str_eq(msg, "SandboxTemplate \"t\" not found");
	cJSON_Delete(c);
	/* not an object at all */
	ck_assert_int_eq(sbx_claim_outcome(NULL, true, NULL, NULL, NULL), SBX_CLAIM_PENDING);
}
END_TEST

static const char *pick(const char *json, char *buf)
{
	cJSON *a = cJSON_Parse(json);
	const char *r = sbx_pick_pod_ip(a, buf);
	cJSON_Delete(a);
	return r;
}

START_TEST(pod_ip_choice)
{
	char buf[SBX_IP_SIZE];
	ck_assert_str_eq(pick("[\"fd00::1\",\"10.0.0.5\"]", buf), "10.0.0.5");
	ck_assert_str_eq(pick("[{\"ip\":\"fd00::1\"},{\"ip\":\"10.0.0.6\"}]", buf), "10.0.0.6");
	ck_assert_str_eq(pick("[\"::ffff:127.0.0.9\"]", buf), "127.0.0.9");
	ck_assert_str_eq(pick("[\"bogus\",\"fd00::0001\",\"fd00::2\"]", buf), "fd00::1");
	ck_assert_ptr_null(pick("[\"bogus\", 5, {}]", buf));
	ck_assert_ptr_null(pick("[]", buf));
	ck_assert_ptr_null(pick("{\"ip\":\"1.2.3.4\"}", buf));
	ck_assert_ptr_null(sbx_pick_pod_ip(NULL, buf));
}
END_TEST

START_TEST(error_names)
{
	ck_assert_str_eq(sbx_strerror(SBX_ETEMPLATENOTFOUND), "sandbox template not found");
	ck_assert_str_eq(sbx_strerror(ASB_ENOTFOUND), "not found");
	ck_assert(sbx_error_is_claim_failure(SBX_EVOLUMECLAIMTEMPLATES));
	ck_assert(sbx_error_is_claim_failure(SBX_ESANDBOXEXPIRED));
	ck_assert(!sbx_error_is_claim_failure(SBX_ETEMPLATENOTFOUND));
	ck_assert(!sbx_error_is_claim_failure(SBX_EWARMPOOLNOTFOUND));
	ck_assert(!sbx_error_is_claim_failure(ASB_ETIMEOUT));
	/* every code has its own name */
	for (int a = SBX_ERESPONSE; a <= SBX_ETEMPLATENOTFOUND; a++)
		for (int b = a + 1; b <= SBX_ETEMPLATENOTFOUND; b++)
			if (strcmp(sbx_strerror(a), "unknown error") != 0)
				ck_assert_str_ne(sbx_strerror(a), sbx_strerror(b));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("clientclaim");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, full_claim_matches_fixture);
	tcase_add_test(tc, minimal_claim_omits_empty_sections);
	tcase_add_test(tc, caller_timestamp_and_policy_are_kept);
	tcase_add_test(tc, client_side_validation);
	tcase_add_test(tc, generated_names);
	tcase_add_test(tc, iso_time);
	tcase_add_test(tc, readiness_decisions);
	tcase_add_test(tc, legacy_sandbox_name_and_message);
	tcase_add_test(tc, pod_ip_choice);
	tcase_add_test(tc, error_names);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
