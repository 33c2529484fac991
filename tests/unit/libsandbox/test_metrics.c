/*
 * test_metrics.c - unit tests of libsandbox/src/metrics.c: the label values
 * of the agent_sandboxes gauge (docs/api.md#metrics), counting per tuple, and
 * the exposition through an asb_metrics registry collector.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fixture.h"
#include "sandbox/metrics.h"

static cJSON *parse(const char *json)
{
	cJSON *o = cJSON_Parse(json);
	ck_assert_msg(o != NULL, "bad test JSON: %s", json);
	return o;
}

/* Asserts the seven values of `json` against the expected ones. */
static void check_values(const char *json, const char *ns, const char *ready,
                         const char *expired, const char *launch, const char *tmpl,
                         const char *owner, const char *created)
{
	cJSON *s = parse(json);
	const char *v[SBX_SANDBOXES_METRIC_NLABELS];
	const char *want[] = { ns, ready, expired, launch, tmpl, owner, created };
	sbx_sandboxes_metric_values(s, v);
	for (int i = 0; i < SBX_SANDBOXES_METRIC_NLABELS; i++)
		ck_assert_msg(strcmp(v[i], want[i]) == 0, "%s: got %s, want %s in %s",
		              sbx_sandboxes_metric_labels[i], v[i], want[i], json);
	cJSON_Delete(s);
}

START_TEST(label_names)
{
	static const char *const want[] = { "namespace", "ready_condition", "expired",
	                                    "launch_type", "sandbox_template", "owned_by",
	                                    "created_by" };
	for (int i = 0; i < SBX_SANDBOXES_METRIC_NLABELS; i++)
		ck_assert_str_eq(sbx_sandboxes_metric_labels[i], want[i]);
	ck_assert_ptr_null(sbx_sandboxes_metric_labels[SBX_SANDBOXES_METRIC_NLABELS]);
	ck_assert_str_eq(SBX_METRIC_SANDBOXES, "agent_sandboxes");
}
END_TEST

START_TEST(created_by_normalized)
{
	ck_assert_str_eq(sbx_created_by_normalize("go-client"), "go-client");
	ck_assert_str_eq(sbx_created_by_normalize("python-client"), "python-client");
	ck_assert_str_eq(sbx_created_by_normalize("controller"), "controller");
	ck_assert_str_eq(sbx_created_by_normalize("kubectl"), "unknown");
	ck_assert_str_eq(sbx_created_by_normalize("Go-Client"), "unknown");
	ck_assert_str_eq(sbx_created_by_normalize(""), "unknown");
	ck_assert_str_eq(sbx_created_by_normalize(NULL), "unknown");
}
END_TEST

START_TEST(values_of_a_bare_sandbox)
{
	/* never reconciled: no conditions, no labels */
	check_values("{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns1\"}}",
	             "ns1", "false", "false", "cold", "unknown", "None", "unknown");
}
END_TEST

START_TEST(values_ready_and_not_ready)
{
	check_values("{\"metadata\":{\"name\":\"a\",\"namespace\":\"n\"},\"status\":{\"conditions\":["
	             "{\"type\":\"Suspended\",\"status\":\"True\",\"reason\":\"SandboxSuspended\"},"
	             "{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"DependenciesReady\"}]}}",
	             "n", "true", "false", "cold", "unknown", "None", "unknown");
	check_values("{\"metadata\":{\"namespace\":\"n\"},\"status\":{\"conditions\":["
	             "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"SandboxSuspended\"}]}}",
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
	check_values("{\"metadata\":{\"namespace\":\"n\"},\"status\":{\"conditions\":["
	             "{\"type\":\"Ready\",\"status\":\"Unknown\"}]}}",
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
}
END_TEST

START_TEST(values_expired)
{
	check_values("{\"metadata\":{\"namespace\":\"n\"},\"status\":{\"conditions\":["
	             "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"SandboxExpired\"}]}}",
	             "n", "false", "true", "cold", "unknown", "None", "unknown");
	/* the reason of another condition does not count */
	check_values("{\"metadata\":{\"namespace\":\"n\"},\"status\":{\"conditions\":["
	             "{\"type\":\"Finished\",\"status\":\"True\",\"reason\":\"SandboxExpired\"}]}}",
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
}
END_TEST

START_TEST(values_from_labels_and_annotations)
{
	check_values("{\"metadata\":{\"namespace\":\"n\",\"labels\":{"
	             "\"agents.x-k8s.io/launch-type\":\"warm\","
	             "\"agents.x-k8s.io/created-by\":\"python-client\"},"
	             "\"annotations\":{\"agents.x-k8s.io/sandbox-template-ref\":\"python-tmpl\"}}}",
	             "n", "false", "false", "warm", "python-tmpl", "None", "python-client");
	check_values("{\"metadata\":{\"namespace\":\"n\",\"labels\":{"
	             "\"agents.x-k8s.io/launch-type\":\"cold\","
	             "\"agents.x-k8s.io/created-by\":\"someone\"},"
	             "\"annotations\":{\"agents.x-k8s.io/sandbox-template-ref\":\"\"}}}",
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
	check_values("{\"metadata\":{\"namespace\":\"n\",\"labels\":{"
	             "\"agents.x-k8s.io/launch-type\":\"WARM\"}}}",
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
}
END_TEST

START_TEST(values_owned_by)
{
#define REFS(api, kind, ctrl) \
	"{\"metadata\":{\"namespace\":\"n\",\"ownerReferences\":[{\"apiVersion\":\"" api \
	"\",\"kind\":\"" kind "\",\"name\":\"o\",\"uid\":\"u\",\"controller\":" ctrl "}]}}"
	check_values(REFS("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", "true"),
	             "n", "false", "false", "cold", "unknown", "SandboxClaim", "unknown");
	check_values(REFS("extensions.agents.x-k8s.io/v1alpha1", "SandboxWarmPool", "true"),
	             "n", "false", "false", "cold", "unknown", "SandboxWarmPool", "unknown");
	/* not the controller reference */
	check_values(REFS("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim", "false"),
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
	/* right kind, wrong group */
	check_values(REFS("example.com/v1", "SandboxClaim", "true"),
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
	/* other kind of the group */
	check_values(REFS("extensions.agents.x-k8s.io/v1beta1", "SandboxTemplate", "true"),
	             "n", "false", "false", "cold", "unknown", "None", "unknown");
#undef REFS
}
END_TEST

typedef struct {
	int calls;
	char lines[8][256];
} counted;

static int record(const char *const *v, size_t n, double count, void *ud)
{
	counted *c = ud;
	ck_assert_int_eq(n, SBX_SANDBOXES_METRIC_NLABELS);
	if (c->calls < 8)
		snprintf(c->lines[c->calls], sizeof(c->lines[0]), "%s,%s,%s,%s,%s,%s,%s=%g",
		         v[0], v[1], v[2], v[3], v[4], v[5], v[6], count);
	c->calls++;
	return 0;
}

#define READY "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}"

static const char *const LIST =
	"[{\"metadata\":{\"name\":\"a\",\"namespace\":\"b\"}},"
	" {\"metadata\":{\"name\":\"b\",\"namespace\":\"a\"}," READY "},"
	" {\"metadata\":{\"name\":\"c\",\"namespace\":\"b\"}},"
	" {\"metadata\":{\"name\":\"d\",\"namespace\":\"a\"}," READY "},"
	" {\"metadata\":{\"name\":\"e\",\"namespace\":\"a\"}}]";

START_TEST(count_per_tuple_sorted)
{
	cJSON *list = parse(LIST);
	counted c = { 0 };
	ck_assert_int_eq(sbx_sandboxes_count(list, record, &c), 0);
	ck_assert_int_eq(c.calls, 3);
	ck_assert_str_eq(c.lines[0], "a,false,false,cold,unknown,None,unknown=1");
	ck_assert_str_eq(c.lines[1], "a,true,false,cold,unknown,None,unknown=2");
	ck_assert_str_eq(c.lines[2], "b,false,false,cold,unknown,None,unknown=2");
	cJSON_Delete(list);

	memset(&c, 0, sizeof(c));
	list = parse("[]");
	ck_assert_int_eq(sbx_sandboxes_count(list, record, &c), 0);
	ck_assert_int_eq(sbx_sandboxes_count(NULL, record, &c), 0);
	ck_assert_int_eq(c.calls, 0);
	cJSON_Delete(list);
}
END_TEST

static int stop_after_one(const char *const *v, size_t n, double count, void *ud)
{
	(*(int *)ud)++;
	return 7;
}

START_TEST(count_stops_on_callback_error)
{
	cJSON *list = parse(LIST);
	int calls = 0;
	ck_assert_int_eq(sbx_sandboxes_count(list, stop_after_one, &calls), 7);
	ck_assert_int_eq(calls, 1);
	cJSON_Delete(list);
}
END_TEST

static int emit(const char *const *v, size_t n, double count, void *ud)
{
	return asb_metrics_emit(ud, v, n, count);
}

static void collect_list(asb_metrics_emitter *e, void *ud)
{
	sbx_sandboxes_count(ud, emit, e);
}

/* What /metrics shows: the gauge's lines with the label pairs sorted by name. */
START_TEST(exposition_through_a_collector)
{
	asb_metrics_registry *reg = NULL;
	asb_metric *m = NULL;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = SBX_METRIC_SANDBOXES;
	o.help = SBX_METRIC_SANDBOXES_HELP;
	o.label_names = sbx_sandboxes_metric_labels;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), 0);
	cJSON *list = parse(LIST);
	ck_assert_int_eq(asb_metric_add_collector(m, collect_list, list), 0);

	char *text = NULL;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &text, NULL), 0);
	ck_assert_ptr_nonnull(strstr(text, "# TYPE agent_sandboxes gauge\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"agent_sandboxes{created_by=\"unknown\",expired=\"false\",launch_type=\"cold\","
		"namespace=\"a\",owned_by=\"None\",ready_condition=\"true\","
		"sandbox_template=\"unknown\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"agent_sandboxes{created_by=\"unknown\",expired=\"false\",launch_type=\"cold\","
		"namespace=\"b\",owned_by=\"None\",ready_condition=\"false\","
		"sandbox_template=\"unknown\"} 2\n"));
	free(text);

	asb_metric_remove_collector(m, collect_list, list);
	cJSON_Delete(list);
	asb_metrics_registry_free(reg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, label_names);
	tcase_add_test(tc, created_by_normalized);
	tcase_add_test(tc, values_of_a_bare_sandbox);
	tcase_add_test(tc, values_ready_and_not_ready);
	tcase_add_test(tc, values_expired);
	tcase_add_test(tc, values_from_labels_and_annotations);
	tcase_add_test(tc, values_owned_by);
	tcase_add_test(tc, count_per_tuple_sorted);
	tcase_add_test(tc, count_stops_on_callback_error);
	tcase_add_test(tc, exposition_through_a_collector);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
