/*
 * The SandboxClaim controller against a real API server when its pool and
 * template caches lag behind it: a pool created just before a claim (a pool
 * and a claim applied together, or the SDK's create_sandbox() right after
 * the pool) may reach the claim worker before the pool's informer. The
 * SDK fails fast on WarmPoolNotFound, so the controller must not report it
 * while the pool exists. Here the pool and template informers are never
 * started (a cache that has not seen them yet): a reconcile must create
 * the cold Sandbox from what the API server holds, and a pool that exists
 * nowhere is still WarmPoolNotFound.
 *
 * Needs the extension CRDs installed (deploy/; tools/test applies them
 * before the integration programs run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../libk8s/live.h"
#include "k8s/informer.h"
#include "k8s/object.h"
#include "sandbox/api.h"
#include "warmpool/api.h"
#include "warmpool/claimctl.h"

static k8s_client *client;
static char ns[64];

static void create(const k8s_resource *r, const char *json)
{
	cJSON *o = cJSON_Parse(json);
	ck_assert_ptr_nonnull(o);
	int rc = k8s_client_create(client, r, ns, o, NULL, NULL);
	cJSON_Delete(o);
	ck_assert_msg(rc == 0, "create %s: %s", r->resource, asb_error_last()->message);
}

static k8s_informer *informer(const k8s_resource *r)
{
	k8s_informer_options io = K8S_INFORMER_OPTIONS_INIT;
	io.resource = r;
	io.namespace_ = ns;
	k8s_informer *inf = NULL;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &io), 0);
	return inf;
}

/* The claim's Ready condition reason on the API server ("" if none). */
static void ready_reason(const char *name, char *out, size_t cap)
{
	cJSON *claim = NULL;
	ck_assert_int_eq(k8s_client_get(client, &wp_resource_claims, ns, name, &claim), 0);
	out[0] = '\0';
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(claim, "status.conditions")) {
		const char *type = k8s_obj_str(c, "type"), *reason = k8s_obj_str(c, "reason");
		if (type && strcmp(type, "Ready") == 0 && reason)
			snprintf(out, cap, "%s", reason);
	}
	cJSON_Delete(claim);
}

START_TEST(test_claim_with_uncached_pool_goes_cold)
{
	create(&wp_resource_templates,
	       "{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\",\"kind\":\"SandboxTemplate\","
	       "\"metadata\":{\"name\":\"tpl\"},\"spec\":{\"podTemplate\":{\"spec\":{\"containers\":"
	       "[{\"name\":\"main\",\"image\":\"registry.k8s.io/pause:3.10\"}]}}}}");
	create(&wp_resource_pools,
	       "{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\",\"kind\":\"SandboxWarmPool\","
	       "\"metadata\":{\"name\":\"pool\"},\"spec\":{\"replicas\":0,"
	       "\"sandboxTemplateRef\":{\"name\":\"tpl\"}}}");
	create(&wp_resource_claims,
	       "{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\",\"kind\":\"SandboxClaim\","
	       "\"metadata\":{\"name\":\"lag\"},\"spec\":{\"warmPoolRef\":{\"name\":\"pool\"}}}");
	create(&wp_resource_claims,
	       "{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\",\"kind\":\"SandboxClaim\","
	       "\"metadata\":{\"name\":\"nopool\"},\"spec\":{\"warmPoolRef\":{\"name\":\"missing\"}}}");

	k8s_informer *claims = informer(&wp_resource_claims);
	k8s_informer *sandboxes = informer(&sbx_resource_sandboxes);
	k8s_informer *pools = informer(&wp_resource_pools);        /* never started */
	k8s_informer *templates = informer(&wp_resource_templates); /* never started */
	wp_claim_controller_options o = WP_CLAIM_CONTROLLER_OPTIONS_INIT;
	o.client = client;
	o.claims = claims;
	o.sandboxes = sandboxes;
	o.pools = pools;
	o.templates = templates;
	o.allowed_label_domains_file = "/nonexistent/allowed-label-domains";
	wp_claim_controller *ctl = NULL;
	ck_assert_int_eq(wp_claim_controller_new(&ctl, &o), 0);
	ck_assert_int_eq(k8s_informer_start(claims), 0);
	ck_assert_int_eq(k8s_informer_start(sandboxes), 0);
	ck_assert_int_eq(k8s_informer_wait_synced(claims, 30000), 0);
	ck_assert_int_eq(k8s_informer_wait_synced(sandboxes, 30000), 0);
	ck_assert_uint_eq(k8s_informer_size(pools), 0);

	char key[128], reason[64];
	k8s_reconcile_result res = {0};
	snprintf(key, sizeof(key), "%s/lag", ns);
	int rc = wp_claim_controller_reconcile(ctl, key, &res);
	ck_assert_msg(rc == 0, "reconcile %s: %d %s", key, rc, asb_error_last()->message);
	ready_reason("lag", reason, sizeof(reason));
	ck_assert_msg(strcmp(reason, WP_REASON_WARM_POOL_NOT_FOUND) != 0 &&
	              strcmp(reason, WP_REASON_TEMPLATE_NOT_FOUND) != 0,
	              "claim reported %s while its pool and template exist", reason);
	cJSON *sbx = NULL;
	ck_assert_msg(k8s_client_get(client, &sbx_resource_sandboxes, ns, "lag", &sbx) == 0,
	              "no cold Sandbox created: %s", asb_error_last()->message);
	const cJSON *launch = cJSON_GetObjectItem(k8s_obj_at(sbx, "metadata.labels"),
	                                          "agents.x-k8s.io/launch-type");
	ck_assert_msg(cJSON_IsString(launch) && strcmp(launch->valuestring, "cold") == 0,
	              "the Sandbox is not labelled a cold launch");
	cJSON_Delete(sbx);

	snprintf(key, sizeof(key), "%s/nopool", ns);
	memset(&res, 0, sizeof(res));
	rc = wp_claim_controller_reconcile(ctl, key, &res);
	ck_assert_msg(rc == 0, "reconcile %s: %d %s", key, rc, asb_error_last()->message);
	ready_reason("nopool", reason, sizeof(reason));
	ck_assert_str_eq(reason, WP_REASON_WARM_POOL_NOT_FOUND);
	ck_assert_int_gt(res.requeue_after_ms, 0);

	k8s_informer_stop(claims);
	k8s_informer_stop(sandboxes);
	wp_claim_controller_free(ctl);
	k8s_informer_free(claims);
	k8s_informer_free(sandboxes);
	k8s_informer_free(pools);
	k8s_informer_free(templates);
}
END_TEST

int main(void)
{
	client = live_connect("test_claim_cache_lag");
	cJSON *crd = NULL;
	if (k8s_client_get(client, &k8s_resource_crds, NULL, "sandboxclaims.extensions.agents.x-k8s.io",
	                   &crd) != 0) {
		fprintf(stderr, "test_claim_cache_lag: the extension CRDs are not installed "
		        "(kubectl apply -k deploy/): %s\n", asb_error_last()->message);
		return 1;
	}
	cJSON_Delete(crd);
	live_namespace(client, "test_claim_cache_lag", "wp-cache-lag", ns, sizeof(ns));
	Suite *s = suite_create("claim cache lag");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_claim_with_uncached_pool_goes_cold);
	suite_add_tcase(s, tc);
	int failed = live_run(s);
	live_delete_namespace(client, ns);
	k8s_client_free(client);
	k8s_global_cleanup();
	return failed ? 1 : 0;
}
