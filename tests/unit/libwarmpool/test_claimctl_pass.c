/*
 * Unit tests of whole claim passes (libwarmpool/src/claimctl.c) with no API
 * server: the controller's executor (claimexec.h) is replaced by one over an
 * in-memory store that acts as both the informer caches and the API server
 * (a write is in the cache at once), and that records every API call and
 * event. The tests assert which writes a pass makes and in which order:
 * cold creation, warm adoption, the adoption conflict, expiry (Delete,
 * DeleteForeground, Retain), the status written only when it changed, a
 * status write lost to a 409, events switched off.
 */
#include <check.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>
#include "warmpool/claimctl.h"
#include "sandbox/api.h"
#include "k8s/common.h"
#include "k8s/config.h"
#include "k8s/object.h"
#include "k8s/workqueue.h"
#include "claimexec.h"
#include "jsonutil.h"
#include "fixture.h"

/* ---- the store: objects by resource, plus the record of calls ---- */

#define MAX_OBJS 16
#define MAX_CALLS 64

static struct {
	const k8s_resource *r;
	cJSON *obj;
} objs[MAX_OBJS];
static int nobjs;
static char *calls[MAX_CALLS];
static int ncalls;
static int next_rv = 9000;
/* Called before each write with the call's line; a non-zero return is the
 * write's answer (the hook may change the store first). */
static int (*write_hook)(const char *line);

static void record(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	ck_assert_int_lt(ncalls, MAX_CALLS);
	calls[ncalls++] = strdup(buf);
}

static void forget_calls(void)
{
	for (int i = 0; i < ncalls; i++)
		free(calls[i]);
	ncalls = 0;
}

static int find(const k8s_resource *r, const char *ns, const char *name)
{
	for (int i = 0; i < nobjs; i++)
		if (objs[i].r == r && ju_str_eq(k8s_obj_namespace(objs[i].obj), ns) &&
		    ju_str_eq(k8s_obj_name(objs[i].obj), name))
			return i;
	return -1;
}

static void put(const k8s_resource *r, cJSON *obj)
{
	int i = find(r, k8s_obj_namespace(obj), k8s_obj_name(obj));
	if (i >= 0) {
		cJSON_Delete(objs[i].obj);
		objs[i].obj = obj;
		return;
	}
	ck_assert_int_lt(nobjs, MAX_OBJS);
	objs[nobjs].r = r;
	objs[nobjs++].obj = obj;
}

static cJSON *stored(const k8s_resource *r, const char *ns, const char *name)
{
	int i = find(r, ns, name);
	return i >= 0 ? objs[i].obj : NULL;
}

static void bump_rv(cJSON *obj)
{
	char rv[16];
	snprintf(rv, sizeof(rv), "%d", next_rv++);
	fx_set_str(obj, "metadata.resourceVersion", rv);
}

static int not_found(const k8s_resource *r, const char *name)
{
	return asb_error_set(ASB_ENOTFOUND, 404, "NotFound", "%s \"%s\" not found", r->resource,
	                     name);
}

/* 409 when `want` names a resourceVersion other than the stored one. */
static int rv_check(const cJSON *cur, const char *want)
{
	if (!ju_empty(want) && !ju_str_eq(want, k8s_obj_resource_version(cur)))
		return asb_error_set(ASB_ECONFLICT, 409, "Conflict", "the object has been modified");
	return 0;
}

static int hook(const char *line)
{
	return write_hook ? write_hook(line) : 0;
}

static int f_cached(void *ud, const k8s_resource *r, const char *ns, const char *name,
                    cJSON **out)
{
	(void)ud;
	cJSON *o = stored(r, ns, name);
	if (!o)
		return ASB_ENOTFOUND;
	*out = cJSON_Duplicate(o, true);
	return 0;
}

/* The informer index of Sandboxes by controlling claim UID, over the store. */
static int f_controlled(void *ud, const char *ns, const char *uid, cJSON **out)
{
	(void)ud;
	for (int i = 0; i < nobjs; i++) {
		const cJSON *ref = k8s_obj_controller_ref(objs[i].obj);
		if (objs[i].r == &sbx_resource_sandboxes &&
		    ju_str_eq(k8s_obj_namespace(objs[i].obj), ns) &&
		    ju_str_eq(ju_str(ref, "kind"), "SandboxClaim") && ju_str_eq(ju_str(ref, "uid"), uid)) {
			*out = cJSON_Duplicate(objs[i].obj, true);
			return 0;
		}
	}
	return ASB_ENOTFOUND;
}

static int f_get(void *ud, const k8s_resource *r, const char *ns, const char *name, cJSON **out)
{
	(void)ud;
	record("get %s %s/%s", r->resource, ns, name);
	cJSON *o = stored(r, ns, name);
	if (!o)
		return not_found(r, name);
	*out = cJSON_Duplicate(o, true);
	return 0;
}

static int f_patch(void *ud, const k8s_resource *r, const char *ns, const char *name,
                   const char *sub, const cJSON *patch, cJSON **out)
{
	(void)ud;
	record("patch %s %s/%s%s%s", r->resource, ns, name, sub ? "/" : "", sub ? sub : "");
	int rc = hook(calls[ncalls - 1]);
	if (rc)
		return rc;
	cJSON *o = stored(r, ns, name);
	if (!o)
		return not_found(r, name);
	if ((rc = rv_check(o, k8s_obj_str(patch, "metadata.resourceVersion"))))
		return rc;
	ck_assert(k8s_obj_merge_patch(o, patch));
	bump_rv(o);
	if (out)
		*out = cJSON_Duplicate(o, true);
	return 0;
}

static int f_create(void *ud, const k8s_resource *r, const char *ns, const cJSON *obj,
                    cJSON **out)
{
	(void)ud;
	record("create %s %s/%s", r->resource, ns, k8s_obj_name(obj));
	int rc = hook(calls[ncalls - 1]);
	if (rc)
		return rc;
	if (stored(r, ns, k8s_obj_name(obj)))
		return asb_error_set(ASB_EALREADYEXISTS, 409, "AlreadyExists", "already exists");
	cJSON *n = cJSON_Duplicate(obj, true);
	fx_set_str(n, "metadata.namespace", ns);
	fx_set_str(n, "metadata.uid", "5b000000-0000-4000-8000-0000000000c0");
	fx_set_str(n, "metadata.creationTimestamp", "2026-01-02T03:05:00Z");
	bump_rv(n);
	put(r, n);
	*out = cJSON_Duplicate(n, true);
	return 0;
}

static int f_del(void *ud, const k8s_resource *r, const char *ns, const char *name,
                 const k8s_delete_options *opts)
{
	(void)ud;
	record("delete %s %s/%s%s%s%s", r->resource, ns, name,
	       opts && opts->precondition_uid ? " uid=" : "",
	       opts && opts->precondition_uid ? opts->precondition_uid : "",
	       opts && opts->propagation_policy ? " foreground" : "");
	int i = find(r, ns, name);
	if (i < 0)
		return not_found(r, name);
	cJSON_Delete(objs[i].obj);
	objs[i] = objs[--nobjs];
	return 0;
}

static void f_event(void *ud, const cJSON *claim, const char *reason, const char *action,
                    const char *note)
{
	(void)ud;
	(void)action;
	record("event %s %s: %s", k8s_obj_name(claim), reason, note);
}

static const wp_claim_executor recorder = { f_cached, f_controlled, f_get, f_patch, f_create,
                                            f_del, f_event, NULL };

/* ---- the controller: informers that never start, a client to a closed port ---- */

static const char kubeconfig[] =
	"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
	"clusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:1\n"
	"users:\n- name: u\n  user:\n    token: t\n"
	"contexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n";

static k8s_config *cfg;
static k8s_client *client;
static k8s_informer *infs[4];
static wp_claim_controller *ctl;

static const char pool_json[] =
	"{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\",\"kind\":\"SandboxWarmPool\","
	"\"metadata\":{\"name\":\"test-pool\",\"namespace\":\"default\","
	"\"uid\":\"900d0000-0000-4000-8000-000000000001\",\"resourceVersion\":\"400\","
	"\"generation\":1},"
	"\"spec\":{\"replicas\":1,\"sandboxTemplateRef\":{\"name\":\"test-template\"}}}";

static void controller(bool disable_events)
{
	const k8s_resource *rs[4] = { &wp_resource_claims, &sbx_resource_sandboxes,
	                              &wp_resource_pools, &wp_resource_templates };
	for (int i = 0; i < 4; i++) {
		k8s_informer_options io = K8S_INFORMER_OPTIONS_INIT;
		io.resource = rs[i];
		ck_assert_int_eq(k8s_informer_new(&infs[i], client, &io), 0);
	}
	wp_claim_controller_options o = WP_CLAIM_CONTROLLER_OPTIONS_INIT;
	o.client = client;
	o.claims = infs[0];
	o.sandboxes = infs[1];
	o.pools = infs[2];
	o.templates = infs[3];
	o.disable_events = disable_events;
	o.allowed_label_domains_file = "/nonexistent/allowed-label-domains";
	ck_assert_int_eq(wp_claim_controller_new(&ctl, &o), 0);
	wp__claim_controller_set_executor(ctl, &recorder);
}

static void setup(void)
{
	ck_assert_int_ge(k8s_global_init(), 0);
	ck_assert_int_eq(k8s_config_load_yaml(&cfg, kubeconfig, strlen(kubeconfig), NULL, NULL), 0);
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.max_retries = 0;
	ck_assert_int_eq(k8s_client_new(&client, cfg, &co), 0);
	put(&wp_resource_pools, fx_json(pool_json));
	put(&wp_resource_templates, fx_load("claim-template.json"));
}

static void teardown(void)
{
	wp_claim_controller_free(ctl);
	ctl = NULL;
	for (int i = 0; i < 4; i++) {
		k8s_informer_free(infs[i]);
		infs[i] = NULL;
	}
	for (int i = 0; i < nobjs; i++)
		cJSON_Delete(objs[i].obj);
	nobjs = 0;
	forget_calls();
	write_hook = NULL;
	k8s_client_free(client);
	k8s_config_free(cfg);
	k8s_global_cleanup();
}

/* Stores `claim` (taken) and records its first observation, as the claim
 * informer's add handler would. */
static void add_claim(cJSON *claim)
{
	wp__claim_controller_observe(ctl, claim);
	put(&wp_resource_claims, claim);
}

static int pass(k8s_reconcile_result *res)
{
	forget_calls();
	return wp_claim_controller_reconcile(ctl, "default/my-claim", res);
}

/* Asserts the calls of the last pass, one line each, NULL-terminated; an
 * entry ending in '*' matches lines that start with it. */
static void expect_calls(const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	int i = 0;
	for (const char *want = first; want; want = va_arg(ap, const char *), i++) {
		ck_assert_msg(i < ncalls, "call %d missing: want \"%s\"", i, want);
		size_t n = strlen(want);
		bool ok = n && want[n - 1] == '*' ? strncmp(calls[i], want, n - 1) == 0
		                                  : strcmp(calls[i], want) == 0;
		ck_assert_msg(ok, "call %d: got \"%s\", want \"%s\"", i, calls[i], want);
	}
	va_end(ap);
	ck_assert_msg(i == ncalls, "%d calls more than expected, the first \"%s\"", ncalls - i,
	              i < ncalls ? calls[i] : "");
}

static const char *claim_str(const char *path)
{
	return k8s_obj_str(stored(&wp_resource_claims, "default", "my-claim"), path);
}

static const char *ready_reason(void)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(stored(&wp_resource_claims, "default", "my-claim"),
	                                 "status.conditions"))
		if (ju_str_eq(ju_str(c, "type"), "Ready"))
			return ju_str(c, "reason");
	return NULL;
}

/* ---- the tests ---- */

START_TEST(cold_create_then_steady)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("create sandboxes default/my-claim",
	             "event my-claim SandboxProvisioned: Created Sandbox \"my-claim\"",
	             "patch sandboxclaims default/my-claim/status", NULL);
	ck_assert_str_eq(claim_str("status.sandbox.name"), "my-claim");
	/* the first observation is written with the first-Ready stamp, not
	 * in a write of its own */
	ck_assert_ptr_null(k8s_obj_annotation(stored(&wp_resource_claims, "default", "my-claim"),
	                                      WP_ANNOTATION_CONTROLLER_FIRST_OBSERVED));
	/* the next pass finds its Sandbox and the same status: nothing to write,
	 * and the legacy NetworkPolicy is not looked at again */
	ck_assert_int_eq(pass(&res), 0);
	expect_calls(NULL);
}
END_TEST

START_TEST(events_disabled)
{
	controller(true);
	add_claim(fx_load("claim.json"));
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("create sandboxes default/my-claim",
	             "patch sandboxclaims default/my-claim/status", NULL);
}
END_TEST

static void add_warm(void)
{
	put(&sbx_resource_sandboxes, fx_load("sandbox-warm.json"));
	char *pk = wp_warm_pool_key("default", "test-pool");
	ck_assert_int_eq(wp_warm_queue_push(wp__claim_controller_queue(ctl), pk, "default",
	                                    "test-pool-abcde", "kwok-node-1"), 0);
	free(pk);
}

START_TEST(warm_adoption)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	add_warm();
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	/* one conditional write adopts: the claim itself is not written first */
	expect_calls("patch sandboxes default/test-pool-abcde",    /* the Sandbox moves to the claim */
	             "event my-claim SandboxAdopted: Adopted warm pool Sandbox \"test-pool-abcde\"",
	             "patch sandboxclaims default/my-claim/status",
	             "patch sandboxclaims default/my-claim",       /* both stamps, one write */
	             NULL);
	ck_assert_str_eq(claim_str("status.sandbox.name"), "test-pool-abcde");
	const cJSON *cl = stored(&wp_resource_claims, "default", "my-claim");
	ck_assert_ptr_nonnull(k8s_obj_annotation(cl, WP_ANNOTATION_CONTROLLER_FIRST_OBSERVED));
	ck_assert_ptr_nonnull(k8s_obj_annotation(cl, WP_ANNOTATION_CLAIM_FIRST_READY));
	ck_assert_ptr_null(k8s_obj_annotation(cl, WP_ANNOTATION_SANDBOX_NAME));
	const cJSON *sbx = stored(&sbx_resource_sandboxes, "default", "test-pool-abcde");
	ck_assert_str_eq(ju_str(k8s_obj_controller_ref(sbx), "kind"), "SandboxClaim");
	ck_assert_str_eq(ready_reason(), "DependenciesReady");
	ck_assert_int_eq(pass(&res), 0);
	expect_calls(NULL);
}
END_TEST

/* With other claim passes waiting, the first-Ready stamp is not written in
 * the pass that hands the Sandbox out: the pass requeues itself, and a pass
 * without a backlog writes the stamp with the time the first Ready was
 * recorded, not its own; a pass whose cache has the Ready status but not
 * the stamp neither backfills "unknown" over it nor writes it twice. */
START_TEST(stamp_waits_for_the_backlog)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	add_warm();
	k8s_controller_enqueue(wp__claim_controller_ctl(ctl), "default/another-claim");
	ck_assert_uint_ge(wp_claim_controller_pending(ctl), 1);
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("patch sandboxes default/test-pool-abcde",
	             "event my-claim SandboxAdopted: Adopted warm pool Sandbox \"test-pool-abcde\"",
	             "patch sandboxclaims default/my-claim/status", NULL);
	ck_assert_str_eq(ready_reason(), "DependenciesReady");
	ck_assert_int_gt(res.requeue_after_ms, 0);
	ck_assert_int_le(res.requeue_after_ms, 1000);
	ck_assert_ptr_null(k8s_obj_annotation(stored(&wp_resource_claims, "default", "my-claim"),
	                                      WP_ANNOTATION_CLAIM_FIRST_READY));
	/* still a backlog: still deferred, and no "unknown" backfill although
	 * the stored claim is Ready without a stamp */
	ck_assert_int_eq(pass(&res), 0);
	expect_calls(NULL);
	/* the backlog gone: the stamp, once */
	k8s_workqueue *q = k8s_controller_queue(wp__claim_controller_ctl(ctl));
	char *k = NULL;
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	k8s_workqueue_done(q, k);
	free(k);
	ck_assert_uint_eq(wp_claim_controller_pending(ctl), 0);
	usleep(2000);
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("patch sandboxclaims default/my-claim", NULL);
	const char *stamp = k8s_obj_annotation(stored(&wp_resource_claims, "default", "my-claim"),
	                                       WP_ANNOTATION_CLAIM_FIRST_READY);
	ck_assert_ptr_nonnull(stamp);
	ck_assert_str_ne(stamp, "unknown");
	int64_t stamped_ms = 0;
	ck_assert_int_eq(k8s_time_parse(stamp, &stamped_ms), 0);
	ck_assert_int_lt(k8s_now_ms() - stamped_ms, 60000);
	ck_assert_int_eq(pass(&res), 0);
	expect_calls(NULL);
}
END_TEST

/* A controller that finds a claim Ready without the first-Ready stamp (a
 * restart after a stamp that never reached the API) arms the guard with
 * "unknown", once, under the claim's resourceVersion, and records nothing. */
START_TEST(ready_claim_without_stamp_is_stamped_unknown_once)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	add_warm();
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	cJSON *cl = stored(&wp_resource_claims, "default", "my-claim");
	cJSON_DeleteItemFromObjectCaseSensitive(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cl, "metadata"), "annotations"),
		WP_ANNOTATION_CLAIM_FIRST_READY);
	/* the restart: a new controller, nothing in memory */
	wp_claim_controller_free(ctl);
	for (int i = 0; i < 4; i++)
		k8s_informer_free(infs[i]);
	controller(false);
	wp__claim_controller_observe(ctl, cl);
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("patch sandboxclaims default/my-claim", NULL);
	ck_assert_str_eq(k8s_obj_annotation(stored(&wp_resource_claims, "default", "my-claim"),
	                                    WP_ANNOTATION_CLAIM_FIRST_READY), "unknown");
	ck_assert_int_eq(pass(&res), 0);
	expect_calls(NULL);
}
END_TEST

/* A NetworkPolicy <claim>-network-policy that the claim controls (made by an
 * old controller) is deleted after the pass; one that another owner
 * controls is left alone. Both are read from the cache, not the API. */
START_TEST(legacy_network_policy_deleted_if_the_claims)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	cJSON *np = cJSON_Parse("{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
	                        "\"metadata\":{\"name\":\"my-claim-network-policy\",\"namespace\":\"default\","
	                        "\"ownerReferences\":[{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\","
	                        "\"kind\":\"SandboxClaim\",\"name\":\"my-claim\","
	                        "\"uid\":\"c1a10000-0000-4000-8000-000000000001\",\"controller\":true}]}}");
	ck_assert_ptr_nonnull(np);
	ck_assert_str_eq(k8s_obj_uid(stored(&wp_resource_claims, "default", "my-claim")),
	                 "c1a10000-0000-4000-8000-000000000001");
	put(&wp_resource_networkpolicies, np);
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	ck_assert_int_ge(ncalls, 1);
	ck_assert_str_eq(calls[ncalls - 1], "delete networkpolicies default/my-claim-network-policy");
	for (int i = 0; i < ncalls; i++)
		ck_assert_msg(strncmp(calls[i], "get ", 4) != 0, "unexpected %s", calls[i]);
	forget_calls();

	/* another claim of the same name (new UID): its NetworkPolicy is another owner's */
	teardown();
	setup();
	controller(false);
	add_claim(fx_load("claim.json"));
	np = cJSON_Parse("{\"apiVersion\":\"networking.k8s.io/v1\",\"kind\":\"NetworkPolicy\","
	                 "\"metadata\":{\"name\":\"my-claim-network-policy\",\"namespace\":\"default\","
	                 "\"ownerReferences\":[{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\","
	                 "\"kind\":\"SandboxClaim\",\"name\":\"my-claim\",\"uid\":\"0ther\","
	                 "\"controller\":true}]}}");
	put(&wp_resource_networkpolicies, np);
	ck_assert_int_eq(pass(&res), 0);
	for (int i = 0; i < ncalls; i++)
		ck_assert_msg(strncmp(calls[i], "delete networkpolicies", 22) != 0, "unexpected %s", calls[i]);
}
END_TEST

/* The Sandbox patch loses to another claim: re-read, reference cleared on a
 * fresh claim, AdoptionConflict returned as ASB_ECONFLICT. */
static int steal_on_sandbox_patch(const char *line)
{
	if (strcmp(line, "patch sandboxes default/test-pool-abcde") != 0)
		return 0;
	cJSON *sbx = stored(&sbx_resource_sandboxes, "default", "test-pool-abcde");
	fx_set_json(sbx, "metadata.ownerReferences",
	            "[{\"apiVersion\":\"extensions.agents.x-k8s.io/v1beta1\","
	            "\"kind\":\"SandboxClaim\",\"name\":\"other\",\"uid\":\"0ther\","
	            "\"controller\":true}]");
	bump_rv(sbx);
	return asb_error_set(ASB_ECONFLICT, 409, "Conflict", "the object has been modified");
}

START_TEST(adoption_conflict)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	add_warm();
	write_hook = steal_on_sandbox_patch;
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), ASB_ECONFLICT);
	expect_calls("patch sandboxes default/test-pool-abcde",
	             "get sandboxes default/test-pool-abcde",      /* authoritative re-read */
	             "patch sandboxclaims default/my-claim/status", NULL);
	ck_assert_ptr_null(k8s_obj_annotation(stored(&wp_resource_claims, "default", "my-claim"),
	                                      WP_ANNOTATION_SANDBOX_NAME));
	ck_assert_str_eq(ready_reason(), "AdoptionConflict");
}
END_TEST

START_TEST(expired_delete)
{
	controller(false);
	cJSON *claim = fx_load("claim.json");
	fx_set_json(claim, "spec.lifecycle",
	            "{\"shutdownTime\":\"2020-01-01T00:00:00Z\",\"shutdownPolicy\":\"Delete\"}");
	add_claim(claim);
	k8s_reconcile_result res;
	/* ClaimExpired first, persisted, with a 1 ms requeue... */
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("patch sandboxclaims default/my-claim/status",
	             "event my-claim ClaimExpired: Claim expired", NULL);
	ck_assert_int_eq(res.requeue_after_ms, 1);
	ck_assert_str_eq(ready_reason(), "ClaimExpired");
	/* ...then the claim goes, guarded by its UID; no Sandbox is made */
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("event my-claim ClaimExpired: Deleting Claim (ShutdownPolicy=Delete)",
	             "delete sandboxclaims default/my-claim uid=c1a10000-0000-4000-8000-000000000001",
	             NULL);
	ck_assert_ptr_null(stored(&wp_resource_claims, "default", "my-claim"));
}
END_TEST

START_TEST(expired_retain)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);   /* cold: Sandbox my-claim */
	cJSON *claim = stored(&wp_resource_claims, "default", "my-claim");
	fx_set_json(claim, "spec.lifecycle",
	            "{\"shutdownTime\":\"2020-01-01T00:00:00Z\",\"shutdownPolicy\":\"Retain\"}");
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("patch sandboxclaims default/my-claim/status",
	             "event my-claim ClaimExpired: Claim expired", NULL);
	ck_assert_int_eq(res.requeue_after_ms, 1);
	ck_assert_str_eq(ready_reason(), "ClaimExpired");
	/* ClaimExpired is persisted: the next pass deletes the Sandbox */
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("delete sandboxes default/my-claim*", NULL);
}
END_TEST

START_TEST(expired_delete_foreground)
{
	controller(false);
	cJSON *claim = fx_load("claim.json");
	fx_set_json(claim, "spec.lifecycle", "{\"shutdownTime\":\"2020-01-01T00:00:00Z\","
	            "\"shutdownPolicy\":\"DeleteForeground\"}");
	add_claim(claim);
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("event my-claim ClaimExpired: Deleting Claim (ShutdownPolicy=DeleteForeground)",
	             "delete sandboxclaims default/my-claim uid=c1a10000-0000-4000-8000-000000000001"
	             " foreground", NULL);
}
END_TEST

/* A 409 on the status write is not an error (the next pass retries), and
 * the first-Ready stamp waits for an authoritative status. */
static int conflict_on_status(const char *line)
{
	if (strcmp(line, "patch sandboxclaims default/my-claim/status") != 0)
		return 0;
	return asb_error_set(ASB_ECONFLICT, 409, "Conflict", "the object has been modified");
}

START_TEST(status_conflict_swallowed)
{
	controller(false);
	add_claim(fx_load("claim.json"));
	add_warm();
	write_hook = conflict_on_status;
	k8s_reconcile_result res;
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("patch sandboxes default/test-pool-abcde",
	             "event my-claim SandboxAdopted: Adopted warm pool Sandbox \"test-pool-abcde\"",
	             "patch sandboxclaims default/my-claim/status", NULL);
	/* the next pass finds the adopted Sandbox by its ownerReference (the
	 * claim names it nowhere yet) */
	write_hook = NULL;
	ck_assert_int_eq(pass(&res), 0);
	expect_calls("patch sandboxclaims default/my-claim/status",
	             "patch sandboxclaims default/my-claim", NULL);
	ck_assert_str_eq(claim_str("status.sandbox.name"), "test-pool-abcde");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("claimctl_pass");
	TCase *tc = tcase_create("pass");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cold_create_then_steady);
	tcase_add_test(tc, events_disabled);
	tcase_add_test(tc, warm_adoption);
	tcase_add_test(tc, stamp_waits_for_the_backlog);
	tcase_add_test(tc, ready_claim_without_stamp_is_stamped_unknown_once);
	tcase_add_test(tc, legacy_network_policy_deleted_if_the_claims);
	tcase_add_test(tc, adoption_conflict);
	tcase_add_test(tc, expired_delete);
	tcase_add_test(tc, expired_retain);
	tcase_add_test(tc, expired_delete_foreground);
	tcase_add_test(tc, status_conflict_swallowed);
	suite_add_tcase(s, tc);
	return fx_main(s);
}
