/* Unit tests of libwarmpool/src/poolplan.c: the pure decisions of the
 * SandboxWarmPool controller (docs/api.md#pool-members to #staleness-and-update-strategies) on JSON fixtures. */
#include <check.h>
#include <string.h>
#include "poolplan.h"
#include "warmpool/blueprint.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "fixture.h"

/* 2026-01-02T03:10:00Z; member.json was created at 03:00:00Z. */
#define NOW_MS 1767323400000LL
#define CREATED_MS 1767322800000LL
#define GRACE_MS (5 * 60 * 1000L)
#define POOL_UID "9c000000-0000-4000-8000-0000000000b1"

/* ---- scripted callbacks ---- */

static const char *pending_uids[8];
static const char *unschedulable_pods[8];
static int pod_calls;

static bool fake_pending(void *ud, const char *uid)
{
	(void)ud;
	for (int i = 0; i < 8 && pending_uids[i]; i++)
		if (strcmp(pending_uids[i], uid) == 0)
			return true;
	return false;
}

static bool fake_unschedulable(void *ud, const char *ns, const char *name)
{
	(void)ud;
	pod_calls++;
	ck_assert_str_eq(ns, "ns1");
	for (int i = 0; i < 8 && unschedulable_pods[i]; i++)
		if (strcmp(unschedulable_pods[i], name) == 0)
			return true;
	return false;
}

static cJSON *pool, *tpl, *members;
static char tpl_hash[SBX_NAME_HASH_SIZE];
static wp_pool_input in;

static void setup(void)
{
	pool = fx_load("pool.json");
	tpl = fx_load("template.json");
	members = cJSON_CreateArray();
	ck_assert_int_eq(wp_blueprint_hash(tpl, tpl_hash), 0);
	memset(pending_uids, 0, sizeof(pending_uids));
	memset(unschedulable_pods, 0, sizeof(unschedulable_pods));
	pod_calls = 0;
	memset(&in, 0, sizeof(in));
	in.pool = pool;
	in.tpl = tpl;
	in.tpl_hash = tpl_hash;
	in.now_ms = NOW_MS;
	in.readiness_grace_ms = GRACE_MS;
	in.unschedulable_recheck_ms = 60000;
	in.max_batch = 300;
	in.deletion_pending = fake_pending;
	in.pod_unschedulable = fake_unschedulable;
}

static void teardown(void)
{
	cJSON_Delete(pool);
	cJSON_Delete(tpl);
	cJSON_Delete(members);
}

/* Adds a fresh, owned, Ready member `name` (uid "uid-<name>") and returns it. */
static cJSON *add_member(const char *name)
{
	cJSON *m = fx_load("member.json");
	char uid[64];
	snprintf(uid, sizeof(uid), "uid-%s", name);
	fx_set_str(m, "metadata.name", name);
	fx_set_str(m, "metadata.uid", uid);
	fx_label(m, "agents.x-k8s.io/sandbox-template-hash", tpl_hash);
	cJSON_AddItemToArray(members, m);
	return m;
}

static void set_not_ready(cJSON *m)
{
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(m, "status.conditions"), 0), "status", "False");
}

static wp_pool_member *find(wp_pool_member *m, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return &m[i];
	ck_abort_msg("member %s not classified", name);
	return NULL;
}

/* Runs the three phases with every write succeeding. */
static void run_all(wp_pool_member **m, size_t *n, bool gate, wp_pool_state *st, wp_pool_plan *p)
{
	long gr = 0;
	ck_assert_int_eq(wp_pool_classify(&in, members, m, n), 0);
	wp_pool_classify_failed(*m, *n);
	wp_pool_stuck(&in, *m, *n, &gr);
	wp_pool_stuck_failed(*m, *n);
	ck_assert_int_eq(wp_pool_size(&in, *m, *n, gate, gr, st, p), 0);
}

/* ---- basics ---- */

START_TEST(desired_strategy_hash)
{
	char h[SBX_NAME_HASH_SIZE];
	wp_pool_hash(pool, h);
	ck_assert_str_eq(h, "91dd7983");
	ck_assert_int_eq(wp_pool_desired(pool), 3);
	fx_del(pool, "spec.replicas");
	ck_assert_int_eq(wp_pool_desired(pool), 1);                 /* nil => 1 */
	fx_set(pool, "spec.replicas", cJSON_CreateNull());
	ck_assert_int_eq(wp_pool_desired(pool), 1);
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(0));
	ck_assert_int_eq(wp_pool_desired(pool), 0);
	ck_assert(!wp_pool_recreate(pool));
	fx_set_str(pool, "spec.updateStrategy.type", "OnReplenish");
	ck_assert(!wp_pool_recreate(pool));
	fx_set_str(pool, "spec.updateStrategy.type", "bogus");
	ck_assert(!wp_pool_recreate(pool));
	fx_set_str(pool, "spec.updateStrategy.type", "Recreate");
	ck_assert(wp_pool_recreate(pool));
}
END_TEST

START_TEST(go_durations)
{
	char b[64];
	ck_assert_str_eq(wp_go_duration(300000, b, sizeof(b)), "5m0s");
	ck_assert_str_eq(wp_go_duration(30000, b, sizeof(b)), "30s");
	ck_assert_str_eq(wp_go_duration(3600000, b, sizeof(b)), "1h0m0s");
	ck_assert_str_eq(wp_go_duration(5400500, b, sizeof(b)), "1h30m0.5s");
	ck_assert_str_eq(wp_go_duration(1500, b, sizeof(b)), "1.5s");
	ck_assert_str_eq(wp_go_duration(90000, b, sizeof(b)), "1m30s");
	ck_assert_str_eq(wp_go_duration(500, b, sizeof(b)), "500ms");
	ck_assert_str_eq(wp_go_duration(0, b, sizeof(b)), "0s");
	ck_assert_str_eq(wp_go_duration(1250, b, sizeof(b)), "1.25s");
}
END_TEST

START_TEST(not_progressing_note)
{
	char *s = wp_pool_not_progressing_note(2, 5, GRACE_MS);
	ck_assert_str_eq(s, "2/5 sandboxes are unschedulable past the 5m0s readiness grace period; "
	                 "holding them instead of replacing (replacements would be equally unschedulable)");
	free(s);
}
END_TEST

/* ---- member builder (docs/api.md#pool-sizing) ---- */

START_TEST(member_object)
{
	cJSON *s = wp_pool_member_new(pool, tpl, true);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(k8s_obj_str(s, "apiVersion"), "agents.x-k8s.io/v1beta1");
	ck_assert_str_eq(k8s_obj_str(s, "kind"), "Sandbox");
	ck_assert_str_eq(k8s_obj_str(s, "metadata.generateName"), "pool-");
	ck_assert_ptr_null(k8s_obj_name(s));
	ck_assert_str_eq(k8s_obj_namespace(s), "ns1");
	char ph[SBX_NAME_HASH_SIZE];
	ck_assert_int_eq(wp_pod_template_hash(tpl, ph), 0);
	ck_assert_str_eq(k8s_obj_label(s, "agents.x-k8s.io/warm-pool-sandbox"), "91dd7983");
	ck_assert_str_eq(k8s_obj_label(s, "agents.x-k8s.io/sandbox-template-ref-hash"), "9d22159f");
	ck_assert_str_eq(k8s_obj_label(s, "agents.x-k8s.io/launch-type"), "warm");
	ck_assert_str_eq(k8s_obj_label(s, "agents.x-k8s.io/sandbox-pod-template-hash"), ph);
	ck_assert_str_eq(k8s_obj_label(s, "agents.x-k8s.io/sandbox-template-hash"), tpl_hash);
	ck_assert_str_eq(k8s_obj_label(s, "agents.x-k8s.io/created-by"), "controller");
	ck_assert_int_eq(cJSON_GetArraySize(k8s_obj_at(s, "metadata.labels")), 6);
	ck_assert_str_eq(k8s_obj_annotation(s, "agents.x-k8s.io/sandbox-template-ref"), "tpl");

	const cJSON *ref = k8s_obj_controller_ref(s);
	ck_assert_ptr_nonnull(ref);
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "apiVersion")->valuestring, "extensions.agents.x-k8s.io/v1beta1");
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "kind")->valuestring, "SandboxWarmPool");
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "name")->valuestring, "pool");
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "uid")->valuestring, POOL_UID);

	const cJSON *ptl = k8s_obj_at(s, "spec.podTemplate.metadata.labels");
	ck_assert_str_eq(cJSON_GetObjectItem(ptl, "app")->valuestring, "agent");
	ck_assert_str_eq(cJSON_GetObjectItem(ptl, "agents.x-k8s.io/warm-pool-sandbox")->valuestring, "91dd7983");
	ck_assert_str_eq(cJSON_GetObjectItem(ptl, "agents.x-k8s.io/sandbox-template-ref-hash")->valuestring, "9d22159f");
	ck_assert_str_eq(cJSON_GetObjectItem(ptl, "agents.x-k8s.io/sandbox-pod-template-hash")->valuestring, ph);
	ck_assert_str_eq(cJSON_GetObjectItem(ptl, "agents.x-k8s.io/sandbox-template-hash")->valuestring, tpl_hash);
	const cJSON *pta = k8s_obj_at(s, "spec.podTemplate.metadata.annotations");
	ck_assert_str_eq(cJSON_GetObjectItem(pta, "cluster-autoscaler.kubernetes.io/safe-to-evict")->valuestring, "true");
	ck_assert_str_eq(cJSON_GetObjectItem(pta, "note")->valuestring, "x");

	/* Secure defaults in secure-by-default mode. */
	ck_assert(cJSON_IsFalse(k8s_obj_at(s, "spec.podTemplate.spec.automountServiceAccountToken")));
	ck_assert_str_eq(k8s_obj_str(s, "spec.podTemplate.spec.dnsPolicy"), "None");
	/* The blueprint's VCTs; no operatingMode or lifecycle. */
	ck_assert_int_eq(cJSON_GetArraySize(k8s_obj_at(s, "spec.volumeClaimTemplates")), 1);
	ck_assert_ptr_null(k8s_obj_at(s, "spec.operatingMode"));
	ck_assert_ptr_null(k8s_obj_at(s, "spec.shutdownPolicy"));
	/* The template is untouched. */
	ck_assert_ptr_null(k8s_obj_at(tpl, "spec.podTemplate.spec.dnsPolicy"));

	/* A member just built is never stale against its template. */
	fx_set_str(s, "metadata.name", "pool-xyz12");
	ck_assert(!wp_sandbox_is_stale(tpl, tpl_hash, s, true));
	ck_assert(!wp_sandbox_is_stale(tpl, tpl_hash, s, false));
	cJSON_Delete(s);
}
END_TEST

START_TEST(member_eviction_annotation)
{
	cJSON *s = wp_pool_member_new(pool, tpl, false);
	ck_assert_ptr_null(cJSON_GetObjectItem(k8s_obj_at(s, "spec.podTemplate.metadata.annotations"),
	                                       "cluster-autoscaler.kubernetes.io/safe-to-evict"));
	cJSON_Delete(s);
	/* An explicit template value is kept. */
	cJSON_AddStringToObject((cJSON *)k8s_obj_at(tpl, "spec.podTemplate.metadata.annotations"),
	                        "cluster-autoscaler.kubernetes.io/safe-to-evict", "false");
	s = wp_pool_member_new(pool, tpl, true);
	ck_assert_str_eq(cJSON_GetObjectItem(k8s_obj_at(s, "spec.podTemplate.metadata.annotations"),
	                                     "cluster-autoscaler.kubernetes.io/safe-to-evict")->valuestring, "false");
	cJSON_Delete(s);
	/* No podTemplate metadata at all: created. */
	fx_del(tpl, "spec.podTemplate.metadata");
	s = wp_pool_member_new(pool, tpl, true);
	ck_assert_str_eq(cJSON_GetObjectItem(k8s_obj_at(s, "spec.podTemplate.metadata.annotations"),
	                                     "cluster-autoscaler.kubernetes.io/safe-to-evict")->valuestring, "true");
	ck_assert_str_eq(cJSON_GetObjectItem(k8s_obj_at(s, "spec.podTemplate.metadata.labels"),
	                                     "agents.x-k8s.io/warm-pool-sandbox")->valuestring, "91dd7983");
	cJSON_Delete(s);
	/* Custom network policy: no DNS override. */
	fx_set_json(tpl, "spec.networkPolicy", "{\"egress\":[]}");
	s = wp_pool_member_new(pool, tpl, true);
	ck_assert_ptr_null(k8s_obj_at(s, "spec.podTemplate.spec.dnsPolicy"));
	ck_assert(cJSON_IsFalse(k8s_obj_at(s, "spec.podTemplate.spec.automountServiceAccountToken")));
	cJSON_Delete(s);
	fx_del(tpl, "spec.podTemplate");
	ck_assert_ptr_null(wp_pool_member_new(pool, tpl, true));
	ck_assert_int_eq(asb_error_last()->code, ASB_EINVAL);
}
END_TEST

/* ---- phase 1: classification (docs/api.md#pool-members, #staleness-and-update-strategies) ---- */

START_TEST(classify_kinds)
{
	add_member("a");                                            /* active */
	fx_set_str(add_member("b"), "metadata.deletionTimestamp", "2026-01-02T03:09:00Z");  /* terminating */
	add_member("c");
	pending_uids[0] = "uid-c";                                  /* deletion pending: terminating */
	cJSON *d = add_member("d");                                 /* claimed: ignored */
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(d, "metadata.ownerReferences"), 0), "uid", "claim-uid");
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(d, "metadata.ownerReferences"), 0), "kind", "SandboxClaim");
	fx_set_str(add_member("e"), "metadata.namespace", "other"); /* other namespace: dropped */
	cJSON *f = add_member("f");                                 /* launch-type missing */
	fx_label(f, "agents.x-k8s.io/launch-type", NULL);

	wp_pool_member *m;
	size_t n;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(n, 5);
	ck_assert_int_eq(find(m, n, "a")->cls, WP_MEMBER_ACTIVE);
	ck_assert_int_eq(find(m, n, "a")->action, WP_MEMBER_NONE);
	ck_assert(find(m, n, "a")->owned);
	ck_assert(find(m, n, "a")->ready);
	ck_assert(find(m, n, "a")->created_ms == CREATED_MS);
	ck_assert_int_eq(find(m, n, "b")->cls, WP_MEMBER_TERMINATING);
	ck_assert_int_eq(find(m, n, "c")->cls, WP_MEMBER_TERMINATING);
	ck_assert_int_eq(find(m, n, "d")->cls, WP_MEMBER_IGNORED);
	wp_pool_member *x = find(m, n, "f");
	ck_assert_int_eq(x->cls, WP_MEMBER_ACTIVE);
	ck_assert_int_eq(x->action, WP_MEMBER_SET_LAUNCH_TYPE);
	ck_assert_str_eq(k8s_obj_label(x->body, "agents.x-k8s.io/launch-type"), "warm");
	ck_assert_str_eq(k8s_obj_resource_version(x->body), "200");   /* optimistic Update */
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(classify_orphans)
{
	cJSON *o1 = add_member("o1");                               /* fresh orphan: adopt */
	fx_del(o1, "metadata.ownerReferences");
	fx_label(o1, "agents.x-k8s.io/launch-type", "cold");
	fx_label(o1, "agents.x-k8s.io/sandbox-template-hash", "00000000");  /* orphans: content only */
	cJSON *o2 = add_member("o2");                               /* stale orphan: delete, uncounted */
	fx_set_json(o2, "metadata.ownerReferences", "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"x\",\"uid\":\"cm\"}]");
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(o2, "spec.podTemplate.spec.containers"), 0), "image", "old");
	cJSON *o3 = add_member("o3");                               /* deleting orphan: ignored */
	fx_del(o3, "metadata.ownerReferences");
	fx_set_str(o3, "metadata.deletionTimestamp", "2026-01-02T03:09:00Z");

	wp_pool_member *m;
	size_t n;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	wp_pool_member *x = find(m, n, "o1");
	ck_assert_int_eq(x->cls, WP_MEMBER_ACTIVE);
	ck_assert_int_eq(x->action, WP_MEMBER_ADOPT);
	ck_assert(!x->owned);
	const cJSON *ref = k8s_obj_controller_ref(x->body);
	ck_assert_ptr_nonnull(ref);
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "uid")->valuestring, POOL_UID);
	ck_assert_str_eq(cJSON_GetObjectItem(ref, "kind")->valuestring, "SandboxWarmPool");
	ck_assert_str_eq(k8s_obj_label(x->body, "agents.x-k8s.io/launch-type"), "warm");
	x = find(m, n, "o2");
	ck_assert_int_eq(x->action, WP_MEMBER_DELETE_STALE);
	ck_assert_int_eq(x->cls, WP_MEMBER_IGNORED);
	ck_assert_int_eq(find(m, n, "o3")->cls, WP_MEMBER_IGNORED);
	ck_assert_int_eq(find(m, n, "o3")->action, WP_MEMBER_NONE);
	/* Adoption keeps the other (non-controller) references. */
	wp_pool_members_free(m, n);

	fx_set_json(o1, "metadata.ownerReferences", "[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"x\",\"uid\":\"cm\"}]");
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(cJSON_GetArraySize(k8s_obj_at(find(m, n, "o1")->body, "metadata.ownerReferences")), 2);
	wp_pool_members_free(m, n);

	/* Without a template: orphans adopted unchecked, nothing stale. */
	in.tpl = NULL;
	in.tpl_hash = NULL;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "o2")->action, WP_MEMBER_ADOPT);
	ck_assert_int_eq(find(m, n, "o2")->cls, WP_MEMBER_ACTIVE);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(classify_stale_by_strategy)
{
	cJSON *s = add_member("s");
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(s, "spec.podTemplate.spec.containers"), 0), "image", "old");
	fx_label(s, "agents.x-k8s.io/sandbox-template-hash", "00000000");
	cJSON *r = add_member("r");                 /* template renamed: ref-hash differs */
	fx_label(r, "agents.x-k8s.io/sandbox-template-ref-hash", "11111111");
	cJSON *u = add_member("u");                 /* upgrade: hash differs, content equal */
	fx_label(u, "agents.x-k8s.io/sandbox-template-hash", "11110000");

	wp_pool_member *m;
	size_t n;
	/* OnReplenish: stale members stay. */
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(m[i].cls, WP_MEMBER_ACTIVE);
		ck_assert_int_eq(m[i].action, WP_MEMBER_NONE);
	}
	wp_pool_members_free(m, n);
	/* Recreate: stale owned members deleted and counted terminating. */
	fx_set_str(pool, "spec.updateStrategy.type", "Recreate");
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "s")->action, WP_MEMBER_DELETE_STALE);
	ck_assert_int_eq(find(m, n, "s")->cls, WP_MEMBER_TERMINATING);
	ck_assert_int_eq(find(m, n, "r")->action, WP_MEMBER_DELETE_STALE);
	ck_assert_int_eq(find(m, n, "u")->action, WP_MEMBER_NONE);
	ck_assert_int_eq(find(m, n, "u")->cls, WP_MEMBER_ACTIVE);
	/* A failed stale delete: counted neither active nor terminating. */
	find(m, n, "s")->failed = true;
	wp_pool_classify_failed(m, n);
	ck_assert_int_eq(find(m, n, "s")->cls, WP_MEMBER_SKIPPED);
	ck_assert_int_eq(find(m, n, "r")->cls, WP_MEMBER_TERMINATING);
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	ck_assert_int_eq(wp_pool_size(&in, m, n, true, 0, &st, &p), 0);
	ck_assert_int_eq(p.current, 1);
	ck_assert_int_eq(p.terminating, 1);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Metadata-only template edits never make members stale. */
	fx_set_json(tpl, "spec.podTemplate.metadata.labels", "{\"new\":\"label\"}");
	char h2[SBX_NAME_HASH_SIZE];
	ck_assert_int_eq(wp_blueprint_hash(tpl, h2), 0);
	in.tpl_hash = h2;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "u")->action, WP_MEMBER_NONE);
	ck_assert_int_eq(find(m, n, "u")->cls, WP_MEMBER_ACTIVE);
	wp_pool_members_free(m, n);
}
END_TEST

/* Our idle fields (docs/api.md#idle-suspend-and-resume) are part of what a template
 * stamps: members carry them, and a template whose idle fields change makes
 * its members stale like any other spec change, under each strategy. */
START_TEST(idle_fields_members_and_staleness)
{
	/* a member built from a template with them carries them, and is fresh */
	fx_set(tpl, "spec.idleTimeoutSeconds", cJSON_CreateNumber(600));
	fx_set_str(tpl, "spec.idlePolicy", "Delete");
	char h[SBX_NAME_HASH_SIZE];
	ck_assert_int_eq(wp_blueprint_hash(tpl, h), 0);
	ck_assert_str_ne(h, tpl_hash);
	cJSON *s = wp_pool_member_new(pool, tpl, true);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(k8s_obj_at(s, "spec.idleTimeoutSeconds")->valueint, 600);
	ck_assert_str_eq(k8s_obj_str(s, "spec.idlePolicy"), "Delete");
	ck_assert_str_eq(k8s_obj_label(s, "agents.x-k8s.io/sandbox-template-hash"), h);
	ck_assert(!wp_sandbox_is_stale(tpl, h, s, true));
	ck_assert(!wp_sandbox_is_stale(tpl, h, s, false));
	cJSON_Delete(s);

	/* members of the template as it was before (no idle fields, old hash) */
	add_member("a");
	cJSON *b = add_member("b");              /* already on the new pair */
	fx_label(b, "agents.x-k8s.io/sandbox-template-hash", h);
	fx_set(b, "spec.idleTimeoutSeconds", cJSON_CreateNumber(600));
	fx_set_str(b, "spec.idlePolicy", "Delete");
	cJSON *c = add_member("c");              /* another old hash, same content */
	fx_label(c, "agents.x-k8s.io/sandbox-template-hash", "0c0c0c0c");
	fx_set(c, "spec.idleTimeoutSeconds", cJSON_CreateNumber(600));
	fx_set_str(c, "spec.idlePolicy", "Delete");
	in.tpl_hash = h;

	wp_pool_member *m;
	size_t n;
	/* OnReplenish: left until claimed */
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "a")->action, WP_MEMBER_NONE);
	wp_pool_members_free(m, n);
	/* Recreate: the member without the new idle fields is deleted */
	fx_set_str(pool, "spec.updateStrategy.type", "Recreate");
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "a")->action, WP_MEMBER_DELETE_STALE);
	ck_assert_int_eq(find(m, n, "b")->action, WP_MEMBER_NONE);
	ck_assert_int_eq(find(m, n, "c")->action, WP_MEMBER_NONE);
	wp_pool_members_free(m, n);
	/* RollingUpdate: it is outdated, the others are on the current template */
	fx_set_str(pool, "spec.updateStrategy.type", "RollingUpdate");
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert(find(m, n, "a")->outdated);
	ck_assert(!find(m, n, "b")->outdated);
	ck_assert(!find(m, n, "c")->outdated);
	wp_pool_members_free(m, n);

	/* only the idle timeout changes: b and c are stale now, a still is */
	fx_set(tpl, "spec.idleTimeoutSeconds", cJSON_CreateNumber(900));
	char h2[SBX_NAME_HASH_SIZE];
	ck_assert_int_eq(wp_blueprint_hash(tpl, h2), 0);
	ck_assert_str_ne(h2, h);
	in.tpl_hash = h2;
	fx_set_str(pool, "spec.updateStrategy.type", "Recreate");
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "a")->action, WP_MEMBER_DELETE_STALE);
	ck_assert_int_eq(find(m, n, "b")->action, WP_MEMBER_DELETE_STALE);
	ck_assert_int_eq(find(m, n, "c")->action, WP_MEMBER_DELETE_STALE);
	wp_pool_members_free(m, n);
	/* an explicit Suspend where the members have none is no change */
	fx_set(tpl, "spec.idleTimeoutSeconds", cJSON_CreateNumber(600));
	fx_set_str(tpl, "spec.idlePolicy", "Suspend");
	fx_del(b, "spec.idlePolicy");
	fx_del(c, "spec.idlePolicy");
	ck_assert_int_eq(wp_blueprint_hash(tpl, h2), 0);
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "b")->action, WP_MEMBER_NONE);
	ck_assert_int_eq(find(m, n, "c")->action, WP_MEMBER_NONE);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(classify_verdict_cached_per_old_hash)
{
	fx_set_str(pool, "spec.updateStrategy.type", "Recreate");
	cJSON *a = add_member("a");          /* old hash, content equal: fresh */
	fx_label(a, "agents.x-k8s.io/sandbox-template-hash", "0ld0ld00");
	cJSON *b = add_member("b");          /* same old hash, content differs: shares a's verdict */
	fx_label(b, "agents.x-k8s.io/sandbox-template-hash", "0ld0ld00");
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(b, "spec.podTemplate.spec.containers"), 0), "image", "old");
	cJSON *c = add_member("c");          /* another old hash: its own verdict */
	fx_label(c, "agents.x-k8s.io/sandbox-template-hash", "0ther000");
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(c, "spec.podTemplate.spec.containers"), 0), "image", "old");
	wp_pool_member *m;
	size_t n;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "a")->action, WP_MEMBER_NONE);
	ck_assert_int_eq(find(m, n, "b")->action, WP_MEMBER_NONE);
	ck_assert_int_eq(find(m, n, "c")->action, WP_MEMBER_DELETE_STALE);
	wp_pool_members_free(m, n);
	/* Order decides which member sets the verdict: b first => both stale. */
	cJSON_DetachItemViaPointer(members, a);
	cJSON_AddItemToArray(members, a);
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(find(m, n, "a")->action, WP_MEMBER_DELETE_STALE);
	ck_assert_int_eq(find(m, n, "b")->action, WP_MEMBER_DELETE_STALE);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(classify_update_failed)
{
	cJSON *f = add_member("f");
	fx_label(f, "agents.x-k8s.io/launch-type", NULL);
	wp_pool_member *m;
	size_t n;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	m[0].failed = true;
	wp_pool_classify_failed(m, n);
	ck_assert_int_eq(m[0].cls, WP_MEMBER_SKIPPED);
	ck_assert_int_eq(m[0].action, WP_MEMBER_NONE);
	ck_assert(!m[0].failed);
	wp_pool_members_free(m, n);
}
END_TEST

/* ---- phase 2: stuck / unschedulable (docs/api.md#stuck-and-unschedulable-members) ---- */

START_TEST(stuck_and_unschedulable)
{
	set_not_ready(add_member("old1"));                    /* past grace, schedulable: stuck */
	cJSON *u = add_member("old2");                        /* past grace, unschedulable pod */
	set_not_ready(u);
	cJSON_AddStringToObject((cJSON *)k8s_obj_at(u, "metadata.annotations"), "agents.x-k8s.io/pod-name", "pod-of-old2");
	unschedulable_pods[0] = "pod-of-old2";
	cJSON *y = add_member("young");                       /* inside grace */
	set_not_ready(y);
	fx_set_str(y, "metadata.creationTimestamp", "2026-01-02T03:08:00Z");
	cJSON *z = add_member("nots");                        /* no creationTimestamp: never stuck */
	set_not_ready(z);
	fx_del(z, "metadata.creationTimestamp");
	add_member("ready");                                  /* Ready: not looked at */

	wp_pool_member *m;
	size_t n;
	long gr = -1;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(wp_pool_stuck(&in, m, n, &gr), 1);
	ck_assert_int_eq(find(m, n, "old1")->action, WP_MEMBER_DELETE_STUCK);
	ck_assert_int_eq(find(m, n, "old1")->cls, WP_MEMBER_TERMINATING);
	ck_assert(find(m, n, "old2")->unschedulable);
	ck_assert_int_eq(find(m, n, "old2")->cls, WP_MEMBER_ACTIVE);
	ck_assert_int_eq(find(m, n, "young")->cls, WP_MEMBER_ACTIVE);
	ck_assert_int_eq(find(m, n, "young")->action, WP_MEMBER_NONE);
	ck_assert_int_eq(find(m, n, "nots")->cls, WP_MEMBER_ACTIVE);
	ck_assert_int_eq(pod_calls, 2);   /* only the two past the grace period */
	/* young: deadline 03:13:00, now 03:10:00, + 2 s, no jitter. */
	ck_assert_int_eq(gr, 182000);

	/* Stuck delete failed: active again. */
	find(m, n, "old1")->failed = true;
	wp_pool_stuck_failed(m, n);
	ck_assert_int_eq(find(m, n, "old1")->cls, WP_MEMBER_ACTIVE);

	wp_pool_state st = { 0 };
	wp_pool_plan p;
	ck_assert_int_eq(wp_pool_size(&in, m, n, true, gr, &st, &p), 0);
	ck_assert_int_eq(p.unschedulable, 1);
	ck_assert_int_eq(p.event, WP_POOL_EVENT_NOT_PROGRESSING);
	ck_assert_str_eq(p.event_note, "1/3 sandboxes are unschedulable past the 5m0s readiness grace period; "
	                 "holding them instead of replacing (replacements would be equally unschedulable)");
	ck_assert(st.not_progressing);
	ck_assert_int_eq(p.requeue_after_ms, 60000);   /* recheck < grace requeue */
	wp_pool_plan_clear(&p);
	/* Still unschedulable: no second event. */
	ck_assert_int_eq(wp_pool_size(&in, m, n, true, gr, &st, &p), 0);
	ck_assert_int_eq(p.event, WP_POOL_EVENT_NONE);
	wp_pool_plan_clear(&p);
	/* Out of that state: the Normal event once. */
	find(m, n, "old2")->unschedulable = false;
	ck_assert_int_eq(wp_pool_size(&in, m, n, true, gr, &st, &p), 0);
	ck_assert_int_eq(p.event, WP_POOL_EVENT_PROGRESSING);
	ck_assert_str_eq(p.event_note, "Warm pool is progressing again");
	ck_assert(!st.not_progressing);
	ck_assert_int_eq(p.requeue_after_ms, 182000);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(grace_boundary_and_jitter)
{
	cJSON *y = add_member("edge");
	set_not_ready(y);
	fx_set_str(y, "metadata.creationTimestamp", "2026-01-02T03:05:00Z");   /* age == grace: inside */
	wp_pool_member *m;
	size_t n;
	long gr;
	in.jitter = 0.5;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	ck_assert_int_eq(wp_pool_stuck(&in, m, n, &gr), 0);
	ck_assert_int_eq(m[0].action, WP_MEMBER_NONE);
	ck_assert_int_eq(pod_calls, 0);
	ck_assert_int_eq(gr, 2500);   /* (0 + 2 s) * 1.25 */
	wp_pool_members_free(m, n);
	/* One millisecond later it is past the grace period. */
	in.now_ms += 1;
	ck_assert_int_eq(wp_pool_classify(&in, members, &m, &n), 0);
	wp_pool_stuck(&in, m, n, &gr);
	ck_assert_int_eq(m[0].action, WP_MEMBER_DELETE_STUCK);
	ck_assert_int_eq(gr, 0);
	wp_pool_members_free(m, n);
}
END_TEST

/* ---- phase 3: sizing and status (docs/api.md#pool-sizing) ---- */

START_TEST(status_unchanged_no_patch)
{
	add_member("a");
	add_member("b");
	add_member("c");
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.current, 3);
	ck_assert_int_eq(p.ready, 3);
	ck_assert_int_eq(p.create, 0);
	ck_assert_int_eq(p.nexcess, 0);
	ck_assert_ptr_null(p.status_patch);
	ck_assert_int_eq(p.requeue_after_ms, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(status_patch_values)
{
	set_not_ready(add_member("a"));
	fx_set_str(members->child, "metadata.creationTimestamp", "2026-01-02T03:09:00Z");
	fx_set(pool, "metadata.generation", cJSON_CreateNumber(3));
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	cJSON *want = cJSON_Parse("{\"status\":{\"replicas\":1,\"readyReplicas\":null,"
	                          "\"selector\":\"agents.x-k8s.io/warm-pool-sandbox=91dd7983\",\"observedGeneration\":3}}");
	ck_assert(cJSON_Compare(p.status_patch, want, true));
	cJSON_Delete(want);
	ck_assert_int_eq(p.create, 2);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* Empty pool, status absent: zeros as null, selector set. */
	cJSON_DeleteItemFromArray(members, 0);
	fx_del(pool, "status");
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(0));
	run_all(&m, &n, true, &st, &p);
	want = cJSON_Parse("{\"status\":{\"replicas\":null,\"readyReplicas\":null,"
	                   "\"selector\":\"agents.x-k8s.io/warm-pool-sandbox=91dd7983\",\"observedGeneration\":3}}");
	ck_assert(cJSON_Compare(p.status_patch, want, true));
	cJSON_Delete(want);
	ck_assert_int_eq(p.create, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(creates_bounded)
{
	add_member("a");
	fx_set_str(add_member("t"), "metadata.deletionTimestamp", "2026-01-02T03:09:00Z");
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(10));
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.desired, 10);
	ck_assert_int_eq(p.current, 1);
	ck_assert_int_eq(p.terminating, 1);
	ck_assert_int_eq(p.create, 8);        /* desired - total */
	ck_assert(!p.gated);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	in.max_batch = 3;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 3);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Gate closed: nothing, requeue in 30 s. */
	run_all(&m, &n, false, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert(p.gated);
	ck_assert_int_eq(p.requeue_after_ms, 30000);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Template missing: no creates, not gated. */
	in.tpl = NULL;
	run_all(&m, &n, false, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert(!p.gated);
	ck_assert_int_eq(p.requeue_after_ms, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(excess_order)
{
	cJSON *a = add_member("a-ready-old");
	fx_set_str(a, "metadata.creationTimestamp", "2026-01-02T02:00:00Z");
	cJSON *b = add_member("b-ready-new");
	fx_set_str(b, "metadata.creationTimestamp", "2026-01-02T03:09:00Z");
	cJSON *c = add_member("c-notready-old");
	set_not_ready(c);
	fx_set_str(c, "metadata.creationTimestamp", "2026-01-02T03:07:00Z");
	cJSON *d = add_member("d-notready-new");
	set_not_ready(d);
	fx_set_str(d, "metadata.creationTimestamp", "2026-01-02T03:08:00Z");
	add_member("e-ready-mid");
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(1));
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.nexcess, 4);
	ck_assert_str_eq(m[p.excess[0]].name, "d-notready-new");
	ck_assert_str_eq(m[p.excess[1]].name, "c-notready-old");
	ck_assert_str_eq(m[p.excess[2]].name, "b-ready-new");
	ck_assert_str_eq(m[p.excess[3]].name, "e-ready-mid");
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	in.max_batch = 2;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.nexcess, 2);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Gated. */
	run_all(&m, &n, false, &st, &p);
	ck_assert_int_eq(p.nexcess, 0);
	ck_assert(p.gated);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* replicas 0 drains. */
	in.max_batch = 300;
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(0));
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.nexcess, 5);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(replenish_delay)
{
	add_member("a");
	add_member("b");
	add_member("c");
	in.replenish_delay_ms = 10000;
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	/* First observation: baseline only (even when short). */
	cJSON_DeleteItemFromArray(members, 2);
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 1);
	ck_assert_int_eq(st.baseline, 2);
	st.baseline += p.create;          /* what poolctl.c does after creating */
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* The new member shows up: full, no hold. */
	add_member("c");
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(st.hold_until_ms, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* A drop (claimed): refills held for the delay. */
	cJSON_DeleteItemFromArray(members, 0);
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert_int_eq(p.requeue_after_ms, 10000);
	ck_assert(st.hold_until_ms == NOW_MS + 10000);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Still held 4 s later (no new drop: not re-armed). */
	in.now_ms = NOW_MS + 4000;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert_int_eq(p.requeue_after_ms, 6000);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Another drop re-arms. */
	cJSON_DeleteItemFromArray(members, 0);
	run_all(&m, &n, true, &st, &p);
	ck_assert(st.hold_until_ms == NOW_MS + 14000);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Past the hold: refill. */
	in.now_ms = NOW_MS + 14000;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 2);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

START_TEST(refill_token_bucket)
{
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(10));
	in.max_refill_rate = 2;
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	/* Initially full: capacity max(1, rate) = 2. */
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 2);
	ck_assert_int_eq(p.tokens_granted, 2);
	ck_assert_int_eq(p.requeue_after_ms, 500);   /* next token at 2/s */
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* No time passed: nothing granted. */
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert_int_eq(p.requeue_after_ms, 500);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* 750 ms later: 1.5 tokens, 1 granted, next in 250 ms. */
	in.now_ms += 750;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 1);
	ck_assert_int_eq(p.requeue_after_ms, 250);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Long idle: capped at capacity. */
	in.now_ms += 60000;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 2);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* Gated passes take no tokens. */
	in.now_ms += 60000;
	run_all(&m, &n, false, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert_int_eq(p.tokens_granted, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 2);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* A rate below 1 still holds one token. */
	memset(&st, 0, sizeof(st));
	in.max_refill_rate = 0.5;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 1);
	ck_assert_int_eq(p.requeue_after_ms, 2000);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

/* A rate far above int range (the flag only asks for finite, >= 0) must
 * behave as "plenty of tokens", not overflow the grant into a negative
 * count that never creates anything. */
START_TEST(refill_huge_rate)
{
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(10));
	wp_pool_member *m;
	size_t n;
	wp_pool_plan p;
	const double rates[] = { 3e9, 1e19, 1e300 };
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		wp_pool_state st = { 0 };
		in.max_refill_rate = rates[i];
		run_all(&m, &n, true, &st, &p);
		ck_assert_int_eq(p.create, 10);
		ck_assert_int_eq(p.tokens_granted, 10);
		wp_pool_plan_clear(&p);
		wp_pool_members_free(m, n);
		/* and again later: the bucket refilled without overflowing */
		in.now_ms += 3600 * 1000;
		run_all(&m, &n, true, &st, &p);
		ck_assert_int_eq(p.create, 10);
		wp_pool_plan_clear(&p);
		wp_pool_members_free(m, n);
	}
}
END_TEST


/* ---- RollingUpdate (docs/api.md#rolling-update) ---- */

/* Adds an owned member of an older template (other hash, other image). */
static cJSON *add_outdated(const char *name, bool ready)
{
	cJSON *m = add_member(name);
	fx_label(m, "agents.x-k8s.io/sandbox-template-hash", "0ld0ld00");
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(m, "spec.podTemplate.spec.containers"), 0), "image", "old");
	if (!ready)
		set_not_ready(m);
	return m;
}

static void set_rolling(int replicas, const char *surge, const char *unavail)
{
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(replicas));
	fx_set_str(pool, "spec.updateStrategy.type", "RollingUpdate");
	if (surge)
		fx_set_json(pool, "spec.updateStrategy.rollingUpdate.maxSurge", surge);
	if (unavail)
		fx_set_json(pool, "spec.updateStrategy.rollingUpdate.maxUnavailable", unavail);
}

static const cJSON *patched_condition(const wp_pool_plan *p)
{
	ck_assert_ptr_nonnull(p->status_patch);
	const cJSON *c = cJSON_GetArrayItem(k8s_obj_at(p->status_patch, "status.conditions"), 0);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(k8s_obj_str(c, "type"), "Progressing");
	return c;
}

/* wp_pool_rolling_limits() of `ru` (JSON of rollingUpdate, NULL: absent)
 * against `desired`. */
static void assert_limits(const char *ru, int desired, int surge, int unavailable)
{
	int s, u;
	if (ru)
		fx_set_json(pool, "spec.updateStrategy.rollingUpdate", ru);
	wp_pool_rolling_limits(pool, desired, &s, &u);
	ck_assert_msg(s == surge && u == unavailable, "%s of %d: surge %d, unavailable %d; want %d, %d",
	              ru ? ru : "defaults", desired, s, u, surge, unavailable);
}

START_TEST(rolling_limits)
{
	fx_set_str(pool, "spec.updateStrategy.type", "RollingUpdate");
	ck_assert(wp_pool_rolling(pool));
	ck_assert(!wp_pool_recreate(pool));
	assert_limits(NULL, 10, 3, 2);           /* defaults 25 %: 2.5 up, 2.5 down */
	assert_limits("{\"maxSurge\":\"50%\",\"maxUnavailable\":1}", 3, 2, 1);
	/* malformed values: the default, never a negative or huge limit */
	assert_limits("{\"maxSurge\":\"x%\",\"maxUnavailable\":-4}", 8, 2, 2);
	/* above 100 % as a Deployment's surge; a bare number string is malformed */
	assert_limits("{\"maxSurge\":\"150%\",\"maxUnavailable\":\"7\"}", 8, 12, 2);
	/* clamped, no overflow */
	assert_limits("{\"maxSurge\":\"99999999999999999999%\",\"maxUnavailable\":\"5%x\"}", 8, 1000000000, 2);
	assert_limits("{\"maxSurge\":1e12,\"maxUnavailable\":\"5.5%\"}", 8, 1000000000, 2);
	/* unavailable above desired is desired; both zero surge by one */
	assert_limits("{\"maxSurge\":0,\"maxUnavailable\":9}", 4, 0, 4);
	assert_limits("{\"maxSurge\":0,\"maxUnavailable\":\"0%\"}", 4, 1, 0);
}
END_TEST

/* maxSurge 1, maxUnavailable 0: one member of the new template first, an
 * old one deleted only once it is Ready; outdated members stay active. */
START_TEST(rolling_surges_then_replaces)
{
	set_rolling(4, "1", "0");
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof(name), "o%d", i);
		add_outdated(name, true);
	}
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	ck_assert(find(m, n, "o0")->outdated);
	ck_assert_int_eq(find(m, n, "o0")->cls, WP_MEMBER_ACTIVE);
	ck_assert_int_eq(find(m, n, "o0")->action, WP_MEMBER_NONE);
	ck_assert(p.rolling);
	ck_assert_int_eq(p.current, 4);
	ck_assert_int_eq(p.updated, 0);
	ck_assert_int_eq(p.create, 1);                      /* the surge */
	ck_assert_uint_eq(p.nexcess, 0);                    /* no Ready member to spare */
	const cJSON *c = patched_condition(&p);
	ck_assert_str_eq(k8s_obj_str(c, "status"), "True");
	ck_assert_str_eq(k8s_obj_str(c, "reason"), "RollingUpdate");
	ck_assert_str_eq(k8s_obj_str(c, "message"), "0 of 4 members on the current template");
	ck_assert_ptr_nonnull(k8s_obj_at(p.status_patch, "status.updatedReplicas"));
	ck_assert(cJSON_IsNull(k8s_obj_at(p.status_patch, "status.updatedReplicas")));
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* the new member is not Ready yet: nothing more (no second surge) */
	cJSON *n1 = add_member("n1");
	fx_set_str(n1, "metadata.creationTimestamp", "2026-01-02T03:09:00Z");
	set_not_ready(n1);
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert_uint_eq(p.nexcess, 0);
	ck_assert_int_eq(p.updated, 1);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* Ready: one old member goes, the oldest Ready one in excess order */
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(n1, "status.conditions"), 0), "status", "True");
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert_uint_eq(p.nexcess, 1);
	ck_assert(m[p.excess[0]].outdated);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* the gate closed: nothing deleted, requeued */
	run_all(&m, &n, false, &st, &p);
	ck_assert_uint_eq(p.nexcess, 0);
	ck_assert(p.gated);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

/* Outdated members that are not Ready go first and at once; Ready ones
 * while the Ready count stays at desired - maxUnavailable; members of the
 * current template above desired go too; the end reads UpdateComplete. */
START_TEST(rolling_victims_and_completion)
{
	set_rolling(4, "0", "1");
	add_outdated("o0", true);
	add_outdated("o1", true);
	cJSON *o2 = add_outdated("o2", false);          /* young: not stuck, just not Ready */
	fx_set_str(o2, "metadata.creationTimestamp", "2026-01-02T03:09:00Z");
	add_member("n0");
	add_member("n1");
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	/* Ready 4, floor 3: o2 (not Ready) and one Ready old member */
	ck_assert_uint_eq(p.nexcess, 2);
	ck_assert_str_eq(m[p.excess[0]].name, "o2");
	ck_assert(m[p.excess[1]].outdated && m[p.excess[1]].ready);
	ck_assert_int_eq(p.create, 0);                      /* surge 0, total 5 >= 4 */
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* all new, one too many: the surplus member of the current template goes */
	cJSON_Delete(members);
	members = cJSON_CreateArray();
	for (int i = 0; i < 5; i++) {
		char name[8];
		snprintf(name, sizeof(name), "n%d", i);
		add_member(name);
	}
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(4));
	run_all(&m, &n, true, &st, &p);
	ck_assert(!p.rolling);
	ck_assert_int_eq(p.updated, 5);
	ck_assert_uint_eq(p.nexcess, 1);
	const cJSON *c = patched_condition(&p);
	ck_assert_str_eq(k8s_obj_str(c, "reason"), "UpdateComplete");
	ck_assert_int_eq(k8s_obj_at(p.status_patch, "status.updatedReplicas")->valueint, 5);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

/* A member of the new template stuck past the grace period stops the
 * roll: no surge, no Ready old member deleted, Progressing False; it stays
 * stopped after the stuck member is gone, until one is Ready or the
 * template changes. */
START_TEST(rolling_stops_on_stuck_members)
{
	set_rolling(3, "1", "1");
	add_outdated("o0", true);
	add_outdated("o1", true);
	add_outdated("o2", true);
	cJSON *b = add_member("b");                 /* created 03:00, now 03:10: past 5 min */
	set_not_ready(b);
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(find(m, n, "b")->action, WP_MEMBER_DELETE_STUCK);
	ck_assert_int_eq(p.create, 0);
	ck_assert_uint_eq(p.nexcess, 0);
	const cJSON *c = patched_condition(&p);
	ck_assert_str_eq(k8s_obj_str(c, "status"), "False");
	ck_assert_str_eq(k8s_obj_str(c, "reason"), "NewMembersNotReady");
	ck_assert_str_eq(k8s_obj_str(c, "lastTransitionTime"), "2026-01-02T03:10:00Z");
	ck_assert(st.roll_stalled);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* the stuck member deleted: still stopped; the condition's time kept */
	cJSON_DeleteItemFromArray(members, 3);
	fx_set_json(pool, "status.conditions",
	            "[{\"type\":\"Progressing\",\"status\":\"False\",\"reason\":\"NewMembersNotReady\","
	            "\"lastTransitionTime\":\"2026-01-02T03:05:00Z\"}]");
	run_all(&m, &n, true, &st, &p);
	ck_assert_int_eq(p.create, 0);
	ck_assert_uint_eq(p.nexcess, 0);
	c = patched_condition(&p);
	ck_assert_str_eq(k8s_obj_str(c, "status"), "False");
	ck_assert_str_eq(k8s_obj_str(c, "lastTransitionTime"), "2026-01-02T03:05:00Z");
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* a new template: the roll goes on (surge again) */
	char h2[SBX_NAME_HASH_SIZE];
	fx_set_str(cJSON_GetArrayItem(k8s_obj_at(tpl, "spec.podTemplate.spec.containers"), 0), "image", "fixed");
	ck_assert_int_eq(wp_blueprint_hash(tpl, h2), 0);
	in.tpl_hash = h2;
	run_all(&m, &n, true, &st, &p);
	ck_assert(!st.roll_stalled);
	ck_assert_int_eq(p.create, 1);
	c = patched_condition(&p);
	ck_assert_str_eq(k8s_obj_str(c, "status"), "True");
	ck_assert_str_eq(k8s_obj_str(c, "lastTransitionTime"), "2026-01-02T03:10:00Z");
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	in.tpl_hash = tpl_hash;
}
END_TEST

/* A Ready member of the current template proves it: the stop lifts even
 * with a held (unschedulable) stuck member beside it, and a stuck member
 * next to a Ready one stops nothing. */
START_TEST(rolling_ready_member_lifts_the_stop)
{
	set_rolling(3, "1", "0");
	add_outdated("o0", true);
	add_outdated("o1", true);
	add_outdated("o2", true);
	cJSON *b = add_member("b");                 /* stuck and held: unschedulable */
	set_not_ready(b);
	unschedulable_pods[0] = "b";
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	ck_assert(find(m, n, "b")->unschedulable);
	ck_assert(st.roll_stalled);
	ck_assert_int_eq(p.create, 0);
	ck_assert_uint_eq(p.nexcess, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);

	/* a claim took o2; its refill n1 (current template) is Ready: the roll
	 * goes on though b is still held */
	cJSON_DeleteItemFromArray(members, 2);
	add_member("n1");
	run_all(&m, &n, true, &st, &p);
	ck_assert(!st.roll_stalled);
	const cJSON *c = patched_condition(&p);
	ck_assert_str_eq(k8s_obj_str(c, "status"), "True");
	ck_assert_str_eq(k8s_obj_str(c, "reason"), "RollingUpdate");
	/* Ready 3 (o0, o1, n1) of desired 3, unavailable 0: no old one may go yet;
	 * total 4 = desired + surge: nothing to create */
	ck_assert_uint_eq(p.nexcess, 0);
	ck_assert_int_eq(p.create, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

/* A pool that leaves RollingUpdate drops updatedReplicas and its
 * Progressing condition (other conditions kept), once. */
START_TEST(leaving_rolling_update_clears_its_status)
{
	add_member("a");
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(1));
	fx_set(pool, "status.replicas", cJSON_CreateNumber(1));
	fx_set(pool, "status.readyReplicas", cJSON_CreateNumber(1));
	fx_set(pool, "status.updatedReplicas", cJSON_CreateNumber(1));
	fx_set_json(pool, "status.conditions",
	            "[{\"type\":\"Other\",\"status\":\"True\"},"
	            "{\"type\":\"Progressing\",\"status\":\"False\",\"reason\":\"NewMembersNotReady\"}]");
	fx_set_str(pool, "spec.updateStrategy.type", "Recreate");
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	run_all(&m, &n, true, &st, &p);
	ck_assert_ptr_nonnull(p.status_patch);
	ck_assert(cJSON_IsNull(k8s_obj_at(p.status_patch, "status.updatedReplicas")));
	const cJSON *conds = k8s_obj_at(p.status_patch, "status.conditions");
	ck_assert_int_eq(cJSON_GetArraySize(conds), 1);
	ck_assert_str_eq(k8s_obj_str(cJSON_GetArrayItem(conds, 0), "type"), "Other");
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* written: nothing more to write */
	fx_del(pool, "status.updatedReplicas");
	fx_set_json(pool, "status.conditions", "[{\"type\":\"Other\",\"status\":\"True\"}]");
	run_all(&m, &n, true, &st, &p);
	ck_assert_ptr_null(p.status_patch);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
	/* the only condition was Progressing: conditions nulled */
	fx_set_json(pool, "status.conditions", "[{\"type\":\"Progressing\",\"status\":\"True\"}]");
	run_all(&m, &n, true, &st, &p);
	ck_assert(cJSON_IsNull(k8s_obj_at(p.status_patch, "status.conditions")));
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

/* Other strategies write no rolling status and delete no outdated member. */
START_TEST(rolling_fields_only_with_the_strategy)
{
	add_outdated("o0", true);
	wp_pool_member *m;
	size_t n;
	wp_pool_state st = { 0 };
	wp_pool_plan p;
	fx_set(pool, "spec.replicas", cJSON_CreateNumber(1));
	run_all(&m, &n, true, &st, &p);
	ck_assert(!find(m, n, "o0")->outdated);
	ck_assert(!p.rolling);
	if (p.status_patch) {
		ck_assert_ptr_null(k8s_obj_at(p.status_patch, "status.conditions"));
		ck_assert_ptr_null(k8s_obj_at(p.status_patch, "status.updatedReplicas"));
	}
	ck_assert_uint_eq(p.nexcess, 0);
	wp_pool_plan_clear(&p);
	wp_pool_members_free(m, n);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("poolplan");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, desired_strategy_hash);
	tcase_add_test(tc, go_durations);
	tcase_add_test(tc, not_progressing_note);
	tcase_add_test(tc, member_object);
	tcase_add_test(tc, member_eviction_annotation);
	tcase_add_test(tc, classify_kinds);
	tcase_add_test(tc, classify_orphans);
	tcase_add_test(tc, classify_stale_by_strategy);
	tcase_add_test(tc, idle_fields_members_and_staleness);
	tcase_add_test(tc, classify_verdict_cached_per_old_hash);
	tcase_add_test(tc, classify_update_failed);
	tcase_add_test(tc, rolling_limits);
	tcase_add_test(tc, rolling_surges_then_replaces);
	tcase_add_test(tc, rolling_victims_and_completion);
	tcase_add_test(tc, rolling_stops_on_stuck_members);
	tcase_add_test(tc, rolling_fields_only_with_the_strategy);
	tcase_add_test(tc, rolling_ready_member_lifts_the_stop);
	tcase_add_test(tc, leaving_rolling_update_clears_its_status);
	tcase_add_test(tc, stuck_and_unschedulable);
	tcase_add_test(tc, grace_boundary_and_jitter);
	tcase_add_test(tc, status_unchanged_no_patch);
	tcase_add_test(tc, status_patch_values);
	tcase_add_test(tc, creates_bounded);
	tcase_add_test(tc, excess_order);
	tcase_add_test(tc, replenish_delay);
	tcase_add_test(tc, refill_token_bucket);
	tcase_add_test(tc, refill_huge_rate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
