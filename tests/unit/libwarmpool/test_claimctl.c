/*
 * Unit tests of libwarmpool/src/claimctl.c that need no API server:
 * option checking, the allowed label domains file error, the claim
 * metrics registered with the names, labels and buckets of docs/api.md#metrics
 * (registering the same shape again is accepted only when identical), the
 * life cycle, and a reconcile of a claim absent from the cache (nothing is
 * written). The informers are never started and the client points at a
 * closed port, so any request would fail. Reconciles against a real API
 * server: the local cluster (see the report of the wp-claim branch).
 */
#include <check.h>
#include <string.h>
#include "warmpool/claimctl.h"
#include "sandbox/api.h"
#include "k8s/common.h"
#include "k8s/config.h"
#include "fixture.h"

static const char kubeconfig[] =
	"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
	"clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n"
	"users:\n- name: u\n  user:\n    token: t\n"
	"contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n";

static k8s_config *cfg;
static k8s_client *client;
static k8s_informer *claims, *sandboxes, *pools, *templates;

static k8s_informer *informer(const k8s_resource *r)
{
	k8s_informer_options io = K8S_INFORMER_OPTIONS_INIT;
	io.resource = r;
	k8s_informer *inf = NULL;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &io), 0);
	return inf;
}

static void setup(void)
{
	ck_assert_int_ge(k8s_global_init(), 0);
	ck_assert_int_eq(k8s_config_load_yaml(&cfg, kubeconfig, strlen(kubeconfig), NULL, NULL), 0);
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.max_retries = 0;
	ck_assert_int_eq(k8s_client_new(&client, cfg, &co), 0);
	claims = informer(&wp_resource_claims);
	sandboxes = informer(&sbx_resource_sandboxes);
	pools = informer(&wp_resource_pools);
	templates = informer(&wp_resource_templates);
}

static void teardown(void)
{
	k8s_informer_free(claims);
	k8s_informer_free(sandboxes);
	k8s_informer_free(pools);
	k8s_informer_free(templates);
	k8s_client_free(client);
	k8s_config_free(cfg);
	k8s_global_cleanup();
}

static wp_claim_controller_options opts(void)
{
	wp_claim_controller_options o = WP_CLAIM_CONTROLLER_OPTIONS_INIT;
	o.client = client;
	o.claims = claims;
	o.sandboxes = sandboxes;
	o.pools = pools;
	o.templates = templates;
	o.allowed_label_domains_file = "/nonexistent/allowed-label-domains";
	return o;
}

START_TEST(defaults_and_options)
{
	wp_claim_controller_options d = WP_CLAIM_CONTROLLER_OPTIONS_INIT;
	ck_assert_int_eq(d.workers, 50);
	ck_assert(!d.disable_events);
	ck_assert(!d.disable_observability_annotations);
	ck_assert_ptr_null(d.allowed_label_domains_file);
	wp_claim_controller *c = (wp_claim_controller *)1;
	ck_assert_int_eq(wp_claim_controller_new(&c, NULL), ASB_EINVAL);
	ck_assert_ptr_null(c);
	wp_claim_controller_options o = opts();
	o.templates = NULL;
	ck_assert_int_eq(wp_claim_controller_new(&c, &o), ASB_EINVAL);
	o = opts();
	o.version = 99;
	ck_assert_int_eq(wp_claim_controller_new(&c, &o), ASB_EINVAL);
	/* an unreadable (here: a directory) domains file fails _new() */
	o = opts();
	o.allowed_label_domains_file = "/tmp";
	ck_assert_int_eq(wp_claim_controller_new(&c, &o), ASB_ERROR);
	ck_assert_ptr_null(c);
}
END_TEST

/* Registers `name` with the docs/api.md#metrics shape; 0 only when identical to the controller's. */
static int same_shape(asb_metrics_registry *reg, const char *name, asb_metric_type type,
                      const char *help, const char *const *labels, const double *b, size_t nb)
{
	asb_metric_options mo = ASB_METRIC_OPTIONS_INIT;
	mo.type = type;
	mo.name = name;
	mo.help = help;
	mo.label_names = labels;
	mo.buckets = b;
	mo.nbuckets = nb;
	asb_metric *m;
	return asb_metrics_register(&m, reg, &mo);
}

START_TEST(metrics_shapes)
{
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	wp_claim_controller_options o = opts();
	o.metrics = reg;
	wp_claim_controller *c;
	ck_assert_int_eq(wp_claim_controller_new(&c, &o), 0);
	static const char *const hl[] = { "launch_type", "sandbox_template", NULL };
	static const char *const cl[] = { "namespace", "launch_type", "sandbox_template", NULL };
	static const char *const tl[] = { "namespace", "sandbox_template", "launch_type",
	                                  "warmpool_name", "pod_condition", "created_by", NULL };
	static const double hb[] = { 100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000,
	                             10000, 30000, 60000, 120000, 240000 };
	static const double cb[] = { 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000,
	                             120000, 240000, 300000, 600000 };
	ck_assert_int_eq(same_shape(reg, "agent_sandbox_claim_startup_latency_ms", ASB_METRIC_HISTOGRAM,
	                            "End-to-end latency from SandboxClaim creation (webhook first "
	                            "observation) to Ready, in milliseconds.", hl, hb, 15), 0);
	ck_assert_int_eq(same_shape(reg, "agent_sandbox_claim_controller_startup_latency_ms",
	                            ASB_METRIC_HISTOGRAM, "Latency from the controller's first "
	                            "observation of a SandboxClaim to Ready, in milliseconds.",
	                            hl, hb, 15), 0);
	ck_assert_int_eq(same_shape(reg, "agent_sandbox_client_claim_startup_latency_ms",
	                            ASB_METRIC_HISTOGRAM, "Latency from the client's first request of "
	                            "a SandboxClaim to Ready, in milliseconds.", hl, hb, 15), 0);
	ck_assert_int_eq(same_shape(reg, "agent_sandbox_creation_latency_ms", ASB_METRIC_HISTOGRAM,
	                            "Latency from Sandbox creation to its Ready condition, in "
	                            "milliseconds.", cl, cb, 14), 0);
	ck_assert_int_eq(same_shape(reg, "agent_sandbox_claim_creation_total", ASB_METRIC_COUNTER,
	                            "Sandboxes handed to SandboxClaims (cold creates and warm "
	                            "adoptions).", tl, NULL, 0), 0);
	/* a different bucket list is another shape: refused (so the check above can fail) */
	ck_assert_int_eq(same_shape(reg, "agent_sandbox_creation_latency_ms", ASB_METRIC_HISTOGRAM,
	                            "Latency from Sandbox creation to its Ready condition, in "
	                            "milliseconds.", cl, hb, 15), ASB_EINVAL);
	wp_claim_controller_free(c);
	asb_metrics_registry_free(reg);
}
END_TEST

START_TEST(life_cycle_and_absent_claim)
{
	wp_claim_controller_options o = opts();
	o.workers = 2;
	wp_claim_controller *c;
	ck_assert_int_eq(wp_claim_controller_new(&c, &o), 0);
	k8s_reconcile_result res = { 123, true };
	/* not in the cache: done, nothing requested, no request sent */
	ck_assert_int_eq(wp_claim_controller_reconcile(c, "default/nothing", &res), 0);
	ck_assert_int_eq(res.requeue_after_ms, 0);
	ck_assert(!res.requeue);
	ck_assert_int_eq(wp_claim_controller_reconcile(c, "", &res), ASB_EINVAL);
	ck_assert_int_eq(wp_claim_controller_start(c), 0);
	ck_assert_int_eq(wp_claim_controller_start(c), ASB_EINVAL);
	wp_claim_controller_stop(c);
	wp_claim_controller_stop(c);
	wp_claim_controller_free(c);
	wp_claim_controller_free(NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("claimctl");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, defaults_and_options);
	tcase_add_test(tc, metrics_shapes);
	tcase_add_test(tc, life_cycle_and_absent_claim);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
