/*
 * Unit tests of libwarmpool/src/poolctl.c and templatectl.c that need no
 * API server: option checking, the life cycle (new, start, stop, free) and
 * a reconcile of an object that is not in the caches (the pool's per-pool
 * memory is forgotten and nothing is written). The informers are never
 * started and the client points at a closed port, so any request would
 * fail the test. Reconciles against a real API server: the local cluster.
 */
#include <check.h>
#include <string.h>
#include "warmpool/poolctl.h"
#include "warmpool/templatectl.h"
#include "sandbox/podcache.h"
#include "sandbox/reconciler.h"
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
static k8s_informer *pools, *sandboxes, *templates, *pods, *nps;

static k8s_informer *informer(const k8s_resource *r, bool pod_codec)
{
	k8s_informer_options io = K8S_INFORMER_OPTIONS_INIT;
	io.resource = r;
	if (pod_codec) {
		io.transform = sbx_pod_transform;
		io.codec = sbx_pod_codec();
	}
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
	pools = informer(&wp_resource_pools, false);
	sandboxes = informer(&sbx_resource_sandboxes, false);
	templates = informer(&wp_resource_templates, false);
	pods = informer(&k8s_resource_pods, true);
	nps = informer(&wp_resource_networkpolicies, false);
}

static void teardown(void)
{
	k8s_informer_free(pools);
	k8s_informer_free(sandboxes);
	k8s_informer_free(templates);
	k8s_informer_free(pods);
	k8s_informer_free(nps);
	k8s_client_free(client);
	k8s_config_free(cfg);
	k8s_global_cleanup();
}

static wp_pool_controller_options pool_opts(void)
{
	wp_pool_controller_options o = WP_POOL_CONTROLLER_OPTIONS_INIT;
	o.client = client;
	o.pools = pools;
	o.sandboxes = sandboxes;
	o.templates = templates;
	o.pods = pods;
	return o;
}

START_TEST(pool_defaults)
{
	wp_pool_controller_options o = WP_POOL_CONTROLLER_OPTIONS_INIT;
	/* The upstream defaults of docs/api.md#controller-flags. */
	ck_assert_int_eq(o.workers, 1);
	ck_assert_int_eq(o.max_batch_size, 300);
	ck_assert_int_eq(o.replenish_delay_ms, 0);
	ck_assert(o.max_refill_rate == 0.0);
	ck_assert_int_eq(o.readiness_grace_ms, 300000);
	ck_assert_int_eq(o.unschedulable_recheck_ms, 60000);
	ck_assert(o.enable_eviction);
}
END_TEST

START_TEST(pool_bad_options)
{
	wp_pool_controller *c = (wp_pool_controller *)1;
	ck_assert_int_eq(wp_pool_controller_new(NULL, NULL), ASB_EINVAL);
	ck_assert_int_eq(wp_pool_controller_new(&c, NULL), ASB_EINVAL);
	ck_assert_ptr_null(c);
	wp_pool_controller_options o = pool_opts();
	o.version = 99;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), ASB_EINVAL);
	o = pool_opts();
	o.pods = NULL;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), ASB_EINVAL);
	o = pool_opts();
	o.templates = NULL;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), ASB_EINVAL);
	o = pool_opts();
	o.client = NULL;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), ASB_EINVAL);
	o = pool_opts();
	o.max_batch_size = 0;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), ASB_EINVAL);
	o = pool_opts();
	o.replenish_delay_ms = -1;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), ASB_EINVAL);
	o = pool_opts();
	o.max_refill_rate = -0.5;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), ASB_EINVAL);
	ck_assert(strstr(asb_error_last()->message, "negative") != NULL);
	ck_assert_ptr_null(c);
	wp_pool_controller_free(NULL);
	k8s_reconcile_result res = { 5, true };
	ck_assert_int_eq(wp_pool_controller_reconcile(NULL, "a/b", &res), ASB_EINVAL);
	ck_assert_int_eq(res.requeue_after_ms, 0);
	ck_assert(!res.requeue);
}
END_TEST

START_TEST(pool_lifecycle_and_missing_pool)
{
	wp_pool_controller_options o = pool_opts();
	wp_pool_controller *c = NULL;
	ck_assert_int_eq(wp_pool_controller_new(&c, &o), 0);
	ck_assert_ptr_nonnull(c);
	/* Its indexes exist on the informers now (a second controller on the
	 * same informers is refused: one index name per informer). */
	wp_pool_controller *c2 = NULL;
	ck_assert_int_eq(wp_pool_controller_new(&c2, &o), ASB_EINVAL);
	ck_assert_ptr_null(c2);

	/* Not in the cache: nothing to do, no request, no requeue. */
	k8s_reconcile_result res = { 7, true };
	ck_assert_int_eq(wp_pool_controller_reconcile(c, "ns1/pool", &res), 0);
	ck_assert_int_eq(res.requeue_after_ms, 0);
	ck_assert(!res.requeue);
	ck_assert_int_eq(wp_pool_controller_reconcile(c, "ns1/pool", NULL), 0);
	ck_assert_int_eq(wp_pool_controller_reconcile(c, "", &res), ASB_EINVAL);

	ck_assert_int_eq(wp_pool_controller_start(c), 0);
	ck_assert_int_eq(wp_pool_controller_start(c), ASB_EINVAL);
	wp_pool_controller_stop(c);
	wp_pool_controller_stop(c);    /* idempotent */
	wp_pool_controller_free(c);
}
END_TEST

START_TEST(template_lifecycle_and_missing_template)
{
	wp_template_controller_options o = WP_TEMPLATE_CONTROLLER_OPTIONS_INIT;
	wp_template_controller *c = NULL;
	ck_assert_int_eq(wp_template_controller_new(&c, &o), ASB_EINVAL);
	o.client = client;
	o.templates = templates;
	ck_assert_int_eq(wp_template_controller_new(&c, &o), ASB_EINVAL);   /* no NP informer */
	ck_assert_ptr_null(c);
	o.networkpolicies = nps;
	o.workers = 0;                                                      /* <= 0: 1 */
	ck_assert_int_eq(wp_template_controller_new(&c, &o), 0);
	k8s_reconcile_result res = { 7, true };
	ck_assert_int_eq(wp_template_controller_reconcile(c, "ns1/tpl", &res), 0);
	ck_assert_int_eq(res.requeue_after_ms, 0);
	ck_assert(!res.requeue);
	ck_assert_int_eq(wp_template_controller_reconcile(c, NULL, &res), ASB_EINVAL);
	ck_assert_int_eq(wp_template_controller_start(c), 0);
	ck_assert_int_eq(wp_template_controller_start(c), ASB_EINVAL);
	wp_template_controller_stop(c);
	wp_template_controller_free(c);
	wp_template_controller_free(NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("poolctl");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, pool_defaults);
	tcase_add_test(tc, pool_bad_options);
	tcase_add_test(tc, pool_lifecycle_and_missing_pool);
	tcase_add_test(tc, template_lifecycle_and_missing_template);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
