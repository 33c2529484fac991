/*
 * Unit tests of libsandbox/src/conversion.c for the extension kinds of
 * extensions.agents.x-k8s.io: SandboxClaim (docs/api.md#converting-sandboxclaim),
 * SandboxTemplate (docs/api.md#converting-sandboxtemplate) and SandboxWarmPool (docs/api.md#converting-sandboxwarmpool), one test per rule,
 * plus round trips and a ConversionReview of mixed kinds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fixture.h"
#include "sandbox/conversion.h"

#define ALPHA SBX_EXT_API_VERSION_V1ALPHA1
#define BETA SBX_EXT_API_VERSION
#define CLAIM_SNAP SBX_ANNOTATION_V1ALPHA1_SANDBOXCLAIM_STATE
#define TPL_SNAP SBX_ANNOTATION_V1ALPHA1_SANDBOXTEMPLATE_STATE
#define POOL_SNAP SBX_ANNOTATION_V1ALPHA1_SANDBOXWARMPOOL_STATE
#define VCTP SBX_ANNOTATION_V1BETA1_VCT_POLICY

/* Parses JSON written with ' for " (test readability). */
static cJSON *j(const char *s)
{
	char *t = strdup(s);
	ck_assert_ptr_nonnull(t);
	for (char *p = t; *p; p++)
		if (*p == '\'')
			*p = '"';
	cJSON *o = cJSON_Parse(t);
	ck_assert_msg(o != NULL, "bad JSON in test: %s", t);
	free(t);
	return o;
}

static cJSON *convert(const cJSON *obj, const char *to)
{
	cJSON *out = NULL;
	int rc = sbx_conversion_convert(&out, obj, to);
	ck_assert_msg(rc == 0, "conversion failed: %s", asb_error_last()->message);
	ck_assert_ptr_nonnull(out);
	return out;
}

static const char *str(const cJSON *o, const char *path)
{
	return k8s_obj_str(o, path);
}

/* Annotation `key` (keys hold dots, so not via a dotted path), or NULL. */
static const char *ann(const cJSON *o, const char *key)
{
	const cJSON *a = k8s_obj_at(o, "metadata.annotations");
	const cJSON *v = cJSON_IsObject(a) ? cJSON_GetObjectItemCaseSensitive(a, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* --- SandboxClaim v1alpha1 -> v1beta1: warmPoolRef derivation (docs/api.md#converting-sandboxclaim) ---- */

/* A v1alpha1 claim "c" with template `tpl`, warmpool `wp` (NULL: absent), bound sandbox `sbx`. */
static cJSON *alpha_claim(const char *tpl, const char *wp, const char *sbx)
{
	cJSON *c = j("{'apiVersion':'" ALPHA "','kind':'SandboxClaim',"
	             "'metadata':{'name':'c','namespace':'n','annotations':{'a':'1'}},"
	             "'spec':{'lifecycle':{'shutdownPolicy':'Delete','ttlSecondsAfterFinished':30},"
	             "'additionalPodMetadata':{'labels':{'x':'y'}},"
	             "'env':[{'name':'E','value':'v'}]}}");
	fx_set_str(c, "spec.sandboxTemplateRef.name", tpl);
	if (wp)
		fx_set_str(c, "spec.warmpool", wp);
	if (sbx)
		fx_set_str(c, "status.sandbox.name", sbx);
	return c;
}

static const char *pool_of(const cJSON *o)
{
	return str(o, "spec.warmPoolRef.name");
}

START_TEST(claim_specific_pool_is_used)
{
	cJSON *a = alpha_claim("tpl", "fast-pool", "fast-pool-abcde");
	cJSON *b = convert(a, BETA);
	ck_assert_str_eq(str(b, "apiVersion"), BETA);
	ck_assert_str_eq(pool_of(b), "fast-pool");
	ck_assert_ptr_null(k8s_obj_at(b, "spec.sandboxTemplateRef"));
	ck_assert_ptr_null(k8s_obj_at(b, "spec.warmpool"));
	/* lifecycle, additionalPodMetadata, env, status copied */
	ck_assert_str_eq(str(b, "spec.lifecycle.shutdownPolicy"), "Delete");
	ck_assert_int_eq(k8s_obj_at(b, "spec.lifecycle.ttlSecondsAfterFinished")->valueint, 30);
	ck_assert_str_eq(str(b, "spec.additionalPodMetadata.labels.x"), "y");
	ck_assert_str_eq(str(cJSON_GetArrayItem(k8s_obj_at(b, "spec.env"), 0), "name"), "E");
	ck_assert_str_eq(str(b, "status.sandbox.name"), "fast-pool-abcde");
	ck_assert_str_eq(ann(b, "a"), "1");
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(claim_warm_started_sandbox_minus_suffix)
{
	/* none/default/empty are not pool names; a warm-started sandbox names the pool */
	const char *policies[] = { "none", "default", "", NULL };
	for (size_t i = 0; i < 4; i++) {
		cJSON *a = alpha_claim("tpl", policies[i], "my-pool-x7k2p");
		cJSON *b = convert(a, BETA);
		ck_assert_str_eq(pool_of(b), "my-pool");
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	/* a name without '-' is used unchanged */
	cJSON *a = alpha_claim("tpl", "default", "pool7");
	cJSON *b = convert(a, BETA);
	ck_assert_str_eq(pool_of(b), "pool7");
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(claim_cold_is_shadow_pool)
{
	/* bound to a sandbox named like the claim (cold start), or not bound */
	const char *bound[] = { "c", "", NULL };
	for (size_t i = 0; i < 3; i++) {
		cJSON *a = alpha_claim("python", "default", bound[i]);
		cJSON *b = convert(a, BETA);
		ck_assert_str_eq(pool_of(b), "shadow-pool-python");
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
}
END_TEST

START_TEST(claim_snapshot_written)
{
	cJSON *a = alpha_claim("tpl", "p", NULL);
	fx_annotation(a, CLAIM_SNAP, "{\"old\":true}");   /* its own snapshot is not nested */
	cJSON *b = convert(a, BETA);
	const char *snap = ann(b, CLAIM_SNAP);
	ck_assert_ptr_nonnull(snap);
	cJSON *s = cJSON_Parse(snap);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(str(s, "apiVersion"), ALPHA);
	ck_assert_str_eq(str(s, "spec.sandboxTemplateRef.name"), "tpl");
	ck_assert_str_eq(str(s, "spec.warmpool"), "p");
	ck_assert_ptr_null(ann(s, CLAIM_SNAP));
	cJSON_Delete(s);
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

/* --- SandboxClaim v1beta1 -> v1alpha1 (docs/api.md#converting-sandboxclaim) ----------------------------- */

static cJSON *beta_claim(const char *pool, const char *sbx, const char *snapshot)
{
	cJSON *c = j("{'apiVersion':'" BETA "','kind':'SandboxClaim',"
	             "'metadata':{'name':'c','namespace':'n'},"
	             "'spec':{'lifecycle':{'shutdownPolicy':'Retain'},"
	             "'volumeClaimTemplates':[{'metadata':{'name':'data'},'spec':{}}]}}");
	fx_set_str(c, "spec.warmPoolRef.name", pool);
	if (sbx)
		fx_set_str(c, "status.sandbox.name", sbx);
	if (snapshot)
		fx_annotation(c, CLAIM_SNAP, snapshot);
	return c;
}

START_TEST(claim_no_snapshot_shadow_pool)
{
	cJSON *b = beta_claim("shadow-pool-python", NULL, NULL);
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(str(a, "apiVersion"), ALPHA);
	ck_assert_str_eq(str(a, "spec.sandboxTemplateRef.name"), "python");
	ck_assert_str_eq(str(a, "spec.warmpool"), "default");
	ck_assert_ptr_null(k8s_obj_at(a, "spec.warmPoolRef"));
	ck_assert_ptr_null(k8s_obj_at(a, "spec.volumeClaimTemplates"));  /* dropped */
	ck_assert_str_eq(str(a, "spec.lifecycle.shutdownPolicy"), "Retain");
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(claim_no_snapshot_pool_guess)
{
	cJSON *b = beta_claim("fast", NULL, NULL);
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(str(a, "spec.sandboxTemplateRef.name"), "fast");
	ck_assert_str_eq(str(a, "spec.warmpool"), "fast");
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(claim_snapshot_restores_when_pool_matches)
{
	/* expected = the original template name (warmpool was default) */
	const char *snap_default = "{\"spec\":{\"sandboxTemplateRef\":{\"name\":\"tpl\"},\"warmpool\":\"default\"}}";
	/* expected = the original specific pool */
	const char *snap_pool = "{\"spec\":{\"sandboxTemplateRef\":{\"name\":\"tpl\"},\"warmpool\":\"p1\"}}";
	struct { const char *pool, *sbx, *snap, *warmpool; } cases[] = {
		{ "tpl", NULL, snap_default, "default" },                 /* == expected */
		{ "shadow-pool-tpl", NULL, snap_default, "default" },     /* shadow-pool-<expected> */
		{ "p1", NULL, snap_pool, "p1" },
		{ "shadow-pool-p1", NULL, snap_pool, "p1" },
		{ "bound-sbx", "bound-sbx", snap_default, "default" },    /* the bound sandbox name */
		{ "pool-a", "pool-a-xyz12", snap_default, "default" },    /* minus its suffix */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *b = beta_claim(cases[i].pool, cases[i].sbx, cases[i].snap);
		cJSON *a = convert(b, ALPHA);
		ck_assert_msg(strcmp(str(a, "spec.sandboxTemplateRef.name"), "tpl") == 0, "case %zu", i);
		ck_assert_msg(strcmp(str(a, "spec.warmpool"), cases[i].warmpool) == 0, "case %zu", i);
		ck_assert_ptr_null(ann(a, CLAIM_SNAP));
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
}
END_TEST

START_TEST(claim_snapshot_absent_warmpool_stays_absent)
{
	cJSON *b = beta_claim("shadow-pool-tpl", NULL, "{\"spec\":{\"sandboxTemplateRef\":{\"name\":\"tpl\"}}}");
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(str(a, "spec.sandboxTemplateRef.name"), "tpl");
	ck_assert_ptr_null(k8s_obj_at(a, "spec.warmpool"));
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(claim_snapshot_new_pool)
{
	cJSON *b = beta_claim("other", "c", "{\"spec\":{\"sandboxTemplateRef\":{\"name\":\"tpl\"},\"warmpool\":\"p1\"}}");
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(str(a, "spec.sandboxTemplateRef.name"), "tpl");  /* the original */
	ck_assert_str_eq(str(a, "spec.warmpool"), "other");               /* the new pool */
	ck_assert_ptr_null(ann(a, CLAIM_SNAP));
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(claim_snapshot_invalid_fails)
{
	cJSON *out = (cJSON *)1;
	cJSON *b = beta_claim("p", NULL, "{not json");
	ck_assert_int_eq(sbx_conversion_convert(&out, b, ALPHA), ASB_EDECODE);
	ck_assert_ptr_null(out);
	ck_assert_msg(strncmp(asb_error_last()->message, "failed to unmarshal v1alpha1 SandboxClaim state: ",
	                      strlen("failed to unmarshal v1alpha1 SandboxClaim state: ")) == 0,
	              "%s", asb_error_last()->message);
	cJSON_Delete(b);
}
END_TEST

START_TEST(claim_round_trips)
{
	/* alpha -> beta -> alpha restores template ref and warmpool, whatever the case */
	const char *wps[] = { "p1", "default", "none", NULL };
	const char *sbxs[] = { NULL, "c", "p1-abcde", "pool-q-zz" };
	for (size_t i = 0; i < 4; i++)
		for (size_t k = 0; k < 4; k++) {
			cJSON *a = alpha_claim("tpl", wps[i], sbxs[k]);
			cJSON *b = convert(a, BETA);
			cJSON *a2 = convert(b, ALPHA);
			ck_assert_msg(cJSON_Compare(a, a2, true), "case %zu/%zu: %s", i, k,
			              cJSON_PrintUnformatted(a2));
			cJSON_Delete(a);
			cJSON_Delete(b);
			cJSON_Delete(a2);
		}
	/* beta -> alpha -> beta keeps warmPoolRef (VCTs are dropped by design) */
	const char *pools[] = { "shadow-pool-tpl", "fast" };
	for (size_t i = 0; i < 2; i++) {
		cJSON *b = beta_claim(pools[i], NULL, NULL);
		fx_del(b, "spec.volumeClaimTemplates");
		cJSON *a = convert(b, ALPHA);
		cJSON *b2 = convert(a, BETA);
		ck_assert_str_eq(pool_of(b2), pools[i]);
		ck_assert_ptr_nonnull(ann(b2, CLAIM_SNAP));
		fx_del(b2, "metadata.annotations");
		ck_assert_msg(cJSON_Compare(b, b2, true), "%s", pools[i]);
		cJSON_Delete(a);
		cJSON_Delete(b);
		cJSON_Delete(b2);
	}
}
END_TEST

/* Idle suspend (ours, docs/api.md#idle-suspend-and-resume): spec.lifecycle's
 * idleTimeoutSeconds and idlePolicy survive both directions beside the
 * warmPoolRef mapping, with and without a snapshot. */
START_TEST(claim_idle_fields_round_trip)
{
	cJSON *a = alpha_claim("tpl", "p1", "p1-abcde");
	fx_set(a, "spec.lifecycle.idleTimeoutSeconds", cJSON_CreateNumber(600));
	fx_set_str(a, "spec.lifecycle.idlePolicy", "Delete");
	cJSON *b = convert(a, BETA);
	ck_assert_int_eq(k8s_obj_at(b, "spec.lifecycle.idleTimeoutSeconds")->valueint, 600);
	ck_assert_str_eq(str(b, "spec.lifecycle.idlePolicy"), "Delete");
	ck_assert_str_eq(str(b, "spec.lifecycle.shutdownPolicy"), "Delete");
	cJSON *a2 = convert(b, ALPHA);
	ck_assert_msg(cJSON_Compare(a, a2, true), "%s", cJSON_PrintUnformatted(a2));
	/* changed in v1beta1 after the snapshot: the new values come through */
	fx_set(b, "spec.lifecycle.idleTimeoutSeconds", cJSON_CreateNumber(31536000));
	fx_set_str(b, "spec.lifecycle.idlePolicy", "Suspend");
	cJSON *a3 = convert(b, ALPHA);
	ck_assert_int_eq(k8s_obj_at(a3, "spec.lifecycle.idleTimeoutSeconds")->valueint, 31536000);
	ck_assert_str_eq(str(a3, "spec.lifecycle.idlePolicy"), "Suspend");
	cJSON_Delete(a);
	cJSON_Delete(a2);
	cJSON_Delete(a3);
	cJSON_Delete(b);
	/* v1beta1 without a snapshot */
	b = beta_claim("fast", NULL, NULL);
	fx_set(b, "spec.lifecycle.idleTimeoutSeconds", cJSON_CreateNumber(45));
	a = convert(b, ALPHA);
	ck_assert_int_eq(k8s_obj_at(a, "spec.lifecycle.idleTimeoutSeconds")->valueint, 45);
	ck_assert_ptr_null(k8s_obj_at(a, "spec.lifecycle.idlePolicy"));
	cJSON *b2 = convert(a, BETA);
	ck_assert(cJSON_Compare(k8s_obj_at(b, "spec.lifecycle"), k8s_obj_at(b2, "spec.lifecycle"), true));
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(b2);
}
END_TEST

/* --- SandboxTemplate (docs/api.md#converting-sandboxtemplate) ---------------------------------------------- */

static cJSON *template(const char *version)
{
	cJSON *t = j("{'kind':'SandboxTemplate','metadata':{'name':'t','namespace':'n'},"
	             "'spec':{'podTemplate':{'spec':{'containers':[{'name':'c','image':'i'}]}},"
	             "'networkPolicyManagement':'Managed','envVarsInjectionPolicy':'Allowed',"
	             "'networkPolicy':{'ingress':[]}}}");
	fx_set_str(t, "apiVersion", version);
	return t;
}

START_TEST(template_policy_to_annotation)
{
	cJSON *b = template(BETA);
	fx_set_str(b, "spec.volumeClaimTemplatesPolicy", "Overrides");
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(ann(a, VCTP), "Overrides");
	ck_assert_ptr_null(k8s_obj_at(a, "spec.volumeClaimTemplatesPolicy"));
	ck_assert_str_eq(str(a, "spec.envVarsInjectionPolicy"), "Allowed");
	ck_assert_ptr_nonnull(k8s_obj_at(a, "spec.networkPolicy.ingress"));
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(template_empty_policy_removes_annotation)
{
	cJSON *b = template(BETA);
	fx_annotation(b, VCTP, "Allowed");   /* a stale copy */
	cJSON *a = convert(b, ALPHA);
	ck_assert_ptr_null(ann(a, VCTP));
	ck_assert_ptr_null(k8s_obj_at(a, "metadata.annotations"));
	cJSON_Delete(a);
	fx_set_str(b, "spec.volumeClaimTemplatesPolicy", "");
	a = convert(b, ALPHA);
	ck_assert_ptr_null(ann(a, VCTP));
	ck_assert_ptr_null(k8s_obj_at(a, "spec.volumeClaimTemplatesPolicy"));
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(template_annotation_to_policy)
{
	const char *vals[] = { "Disallowed", "Allowed", "Overrides" };
	for (size_t i = 0; i < 3; i++) {
		cJSON *a = template(ALPHA);
		fx_annotation(a, VCTP, vals[i]);
		cJSON *b = convert(a, BETA);
		ck_assert_str_eq(str(b, "spec.volumeClaimTemplatesPolicy"), vals[i]);
		ck_assert_ptr_null(ann(b, VCTP));
		/* the snapshot is written (of the object as it came, annotation and all) */
		cJSON *s = cJSON_Parse(ann(b, TPL_SNAP));
		ck_assert_ptr_nonnull(s);
		ck_assert_str_eq(ann(s, VCTP), vals[i]);
		cJSON_Delete(s);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	/* no annotation: no field */
	cJSON *a = template(ALPHA);
	cJSON *b = convert(a, BETA);
	ck_assert_ptr_null(k8s_obj_at(b, "spec.volumeClaimTemplatesPolicy"));
	ck_assert_ptr_nonnull(ann(b, TPL_SNAP));
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(template_invalid_annotation_fails)
{
	const char *bad[] = { "allowed", "", "Sometimes" };
	for (size_t i = 0; i < 3; i++) {
		cJSON *a = template(ALPHA);
		fx_annotation(a, VCTP, bad[i]);
		cJSON *out = (cJSON *)1;
		ck_assert_int_eq(sbx_conversion_convert(&out, a, BETA), ASB_EDECODE);
		ck_assert_ptr_null(out);
		char want[128];
		snprintf(want, sizeof(want), "invalid VolumeClaimTemplatesPolicy annotation value: \"%s\"", bad[i]);
		ck_assert_str_eq(asb_error_last()->message, want);
		cJSON_Delete(a);
	}
}
END_TEST

START_TEST(template_snapshot_not_used)
{
	/* a snapshot saying otherwise restores nothing; it is stripped */
	cJSON *b = template(BETA);
	fx_set_str(b, "spec.envVarsInjectionPolicy", "Overrides");
	fx_annotation(b, TPL_SNAP, "{\"spec\":{\"envVarsInjectionPolicy\":\"Disallowed\"}}");
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(str(a, "spec.envVarsInjectionPolicy"), "Overrides");
	ck_assert_ptr_null(ann(a, TPL_SNAP));
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(template_round_trips)
{
	const char *vals[] = { "Disallowed", "Allowed", "Overrides", NULL };
	for (size_t i = 0; i < 4; i++) {
		cJSON *b = template(BETA);
		if (vals[i])
			fx_set_str(b, "spec.volumeClaimTemplatesPolicy", vals[i]);
		cJSON *a = convert(b, ALPHA);
		cJSON *b2 = convert(a, BETA);
		ck_assert_ptr_nonnull(ann(b2, TPL_SNAP));
		fx_del(b2, "metadata.annotations");
		ck_assert_msg(cJSON_Compare(b, b2, true), "%s", cJSON_PrintUnformatted(b2));
		cJSON *a2 = convert(b2, ALPHA);
		ck_assert(cJSON_Compare(a, a2, true));
		cJSON_Delete(a);
		cJSON_Delete(a2);
		cJSON_Delete(b);
		cJSON_Delete(b2);
	}
}
END_TEST

/* Idle suspend (ours, docs/api.md#idle-suspend-and-resume): spec.idleTimeoutSeconds
 * and spec.idlePolicy survive both directions beside the policy annotation. */
START_TEST(template_idle_fields_round_trip)
{
	cJSON *b = template(BETA);
	fx_set_str(b, "spec.volumeClaimTemplatesPolicy", "Allowed");
	fx_set(b, "spec.idleTimeoutSeconds", cJSON_CreateNumber(3600));
	fx_set_str(b, "spec.idlePolicy", "Delete");
	cJSON *a = convert(b, ALPHA);
	ck_assert_int_eq(k8s_obj_at(a, "spec.idleTimeoutSeconds")->valueint, 3600);
	ck_assert_str_eq(str(a, "spec.idlePolicy"), "Delete");
	ck_assert_str_eq(ann(a, VCTP), "Allowed");
	cJSON *b2 = convert(a, BETA);
	fx_del(b2, "metadata.annotations");   /* the snapshot */
	ck_assert_msg(cJSON_Compare(b, b2, true), "%s", cJSON_PrintUnformatted(b2));
	cJSON_Delete(b2);
	cJSON_Delete(b);
	/* v1alpha1 first: lossless, and absent stays absent */
	fx_set(a, "spec.idleTimeoutSeconds", cJSON_CreateNumber(30));
	fx_del(a, "spec.idlePolicy");
	b = convert(a, BETA);
	ck_assert_int_eq(k8s_obj_at(b, "spec.idleTimeoutSeconds")->valueint, 30);
	ck_assert_ptr_null(k8s_obj_at(b, "spec.idlePolicy"));
	cJSON *a2 = convert(b, ALPHA);
	ck_assert_msg(cJSON_Compare(a, a2, true), "%s", cJSON_PrintUnformatted(a2));
	cJSON_Delete(a);
	cJSON_Delete(a2);
	cJSON_Delete(b);
}
END_TEST

/* --- SandboxWarmPool (docs/api.md#converting-sandboxwarmpool) ---------------------------------------------- */

static cJSON *pool(const char *version)
{
	cJSON *p = j("{'kind':'SandboxWarmPool','metadata':{'name':'p','namespace':'n','generation':3},"
	             "'spec':{'sandboxTemplateRef':{'name':'tpl'},'updateStrategy':{'type':'Recreate'}},"
	             "'status':{'replicas':2,'readyReplicas':1,'selector':'agents.x-k8s.io/warm-pool-sandbox=abc'}}");
	fx_set_str(p, "apiVersion", version);
	return p;
}

START_TEST(pool_nil_replicas_is_one)
{
	cJSON *b = pool(BETA);
	fx_set(b, "status.observedGeneration", cJSON_CreateNumber(3));
	cJSON *a = convert(b, ALPHA);
	ck_assert_int_eq(k8s_obj_at(a, "spec.replicas")->valueint, 1);
	ck_assert_ptr_null(k8s_obj_at(a, "status.observedGeneration"));  /* dropped */
	ck_assert_int_eq(k8s_obj_at(a, "status.replicas")->valueint, 2);
	ck_assert_str_eq(str(a, "spec.updateStrategy.type"), "Recreate");
	cJSON_Delete(a);
	cJSON_Delete(b);
}
END_TEST

START_TEST(pool_replicas_copied)
{
	const int vals[] = { 0, 1, 5 };
	for (size_t i = 0; i < 3; i++) {
		cJSON *b = pool(BETA);
		fx_set(b, "spec.replicas", cJSON_CreateNumber(vals[i]));
		cJSON *a = convert(b, ALPHA);
		ck_assert_int_eq(k8s_obj_at(a, "spec.replicas")->valueint, vals[i]);
		cJSON *b2 = convert(a, BETA);
		ck_assert_int_eq(k8s_obj_at(b2, "spec.replicas")->valueint, vals[i]);
		cJSON_Delete(a);
		cJSON_Delete(b);
		cJSON_Delete(b2);
	}
}
END_TEST

/* RollingUpdate (ours, docs/api.md#rolling-update): its limits, updatedReplicas and the
 * Progressing condition survive v1beta1 -> v1alpha1 -> v1beta1. */
START_TEST(pool_rolling_update_round_trips)
{
	cJSON *b = pool(BETA);
	fx_set(b, "spec.updateStrategy",
	       j("{'type':'RollingUpdate','rollingUpdate':{'maxSurge':'50%','maxUnavailable':0}}"));
	fx_set(b, "status.updatedReplicas", cJSON_CreateNumber(1));
	fx_set(b, "status.conditions",
	       j("[{'type':'Progressing','status':'True','reason':'RollingUpdate',"
	         "'message':'1 of 2 members on the current template',"
	         "'lastTransitionTime':'2026-01-02T03:00:00Z','observedGeneration':3}]"));
	cJSON *a = convert(b, ALPHA);
	ck_assert_str_eq(str(a, "spec.updateStrategy.type"), "RollingUpdate");
	ck_assert_str_eq(str(a, "spec.updateStrategy.rollingUpdate.maxSurge"), "50%");
	ck_assert_int_eq(k8s_obj_at(a, "status.updatedReplicas")->valueint, 1);
	cJSON *b2 = convert(a, BETA);
	ck_assert(cJSON_Compare(k8s_obj_at(b, "spec.updateStrategy"), k8s_obj_at(b2, "spec.updateStrategy"), true));
	ck_assert(cJSON_Compare(k8s_obj_at(b, "status.conditions"), k8s_obj_at(b2, "status.conditions"), true));
	ck_assert_int_eq(k8s_obj_at(b2, "status.updatedReplicas")->valueint, 1);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(b2);
}
END_TEST

START_TEST(pool_snapshot_written_and_stripped)
{
	cJSON *a = pool(ALPHA);
	fx_set(a, "spec.replicas", cJSON_CreateNumber(4));
	cJSON *b = convert(a, BETA);
	cJSON *s = cJSON_Parse(ann(b, POOL_SNAP));
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(k8s_obj_at(s, "spec.replicas")->valueint, 4);
	cJSON_Delete(s);
	/* not used: the v1beta1 value wins */
	fx_set(b, "spec.replicas", cJSON_CreateNumber(7));
	cJSON *a2 = convert(b, ALPHA);
	ck_assert_int_eq(k8s_obj_at(a2, "spec.replicas")->valueint, 7);
	ck_assert_ptr_null(ann(a2, POOL_SNAP));
	ck_assert_ptr_null(k8s_obj_at(a2, "metadata.annotations"));
	cJSON_Delete(a);
	cJSON_Delete(a2);
	cJSON_Delete(b);
}
END_TEST

START_TEST(pool_round_trip_lossless)
{
	cJSON *a = pool(ALPHA);
	fx_set(a, "spec.replicas", cJSON_CreateNumber(0));
	cJSON *b = convert(a, BETA);
	cJSON *a2 = convert(b, ALPHA);
	ck_assert_msg(cJSON_Compare(a, a2, true), "%s", cJSON_PrintUnformatted(a2));
	cJSON_Delete(a);
	cJSON_Delete(a2);
	cJSON_Delete(b);
}
END_TEST

START_TEST(pool_bad_replicas_rejected)
{
	cJSON *b = pool(BETA);
	fx_set_str(b, "spec.replicas", "two");
	cJSON *out = NULL;
	ck_assert_int_eq(sbx_conversion_convert(&out, b, ALPHA), ASB_EDECODE);
	ck_assert_ptr_null(out);
	fx_set_str(b, "apiVersion", ALPHA);
	ck_assert_int_eq(sbx_conversion_convert(&out, b, BETA), ASB_EDECODE);
	cJSON_Delete(b);
}
END_TEST

/* --- group routing and the review ---------------------------------------- */

START_TEST(extension_group_only)
{
	cJSON *out = NULL;
	cJSON *c = beta_claim("p", NULL, NULL);
	/* the core group has no SandboxClaim; no cross-group conversion */
	ck_assert_int_eq(sbx_conversion_convert(&out, c, SBX_API_VERSION_V1ALPHA1), ASB_EINVAL);
	fx_set_str(c, "apiVersion", SBX_API_VERSION);
	ck_assert_int_eq(sbx_conversion_convert(&out, c, SBX_API_VERSION_V1ALPHA1), ASB_EINVAL);
	ck_assert_ptr_null(out);
	cJSON_Delete(c);
}
END_TEST

START_TEST(review_mixed_kinds)
{
	const char *body =
		"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"request\":{"
		"\"uid\":\"u1\",\"desiredAPIVersion\":\"" BETA "\",\"objects\":["
		"{\"apiVersion\":\"" ALPHA "\",\"kind\":\"SandboxClaim\",\"metadata\":{\"name\":\"c\"},"
		"\"spec\":{\"sandboxTemplateRef\":{\"name\":\"t\"}}},"
		"{\"apiVersion\":\"" ALPHA "\",\"kind\":\"SandboxWarmPool\",\"metadata\":{\"name\":\"p\"},"
		"\"spec\":{\"replicas\":2,\"sandboxTemplateRef\":{\"name\":\"t\"}}},"
		"{\"apiVersion\":\"" ALPHA "\",\"kind\":\"SandboxTemplate\",\"metadata\":{\"name\":\"t\","
		"\"annotations\":{\"" VCTP "\":\"bogus\"}},\"spec\":{}}]}}";
	char *resp = NULL, *failure = NULL;
	ck_assert_int_eq(sbx_conversion_review(body, strlen(body), &resp, &failure), 0);
	ck_assert_ptr_nonnull(failure);
	ck_assert_msg(strstr(failure, "objects[2] (SandboxTemplate t)") != NULL, "%s", failure);
	ck_assert_msg(strstr(failure, "invalid VolumeClaimTemplatesPolicy annotation value: \"bogus\"") != NULL,
	              "%s", failure);
	cJSON *r = cJSON_Parse(resp);
	ck_assert_str_eq(str(r, "response.result.status"), "Failure");
	ck_assert_int_eq(cJSON_GetArraySize(k8s_obj_at(r, "response.convertedObjects")), 0);
	cJSON_Delete(r);
	free(resp);
	free(failure);
}
END_TEST

START_TEST(odd_shapes_do_not_crash)
{
	/* wrong types: a spec that is not an object fails; odd members are tolerated */
	const char *objs[] = {
		"{'apiVersion':'" BETA "','kind':'SandboxClaim','spec':'x'}",
		"{'apiVersion':'" ALPHA "','kind':'SandboxClaim','spec':[1]}",
		"{'apiVersion':'" BETA "','kind':'SandboxTemplate','spec':7}",
		"{'apiVersion':'" ALPHA "','kind':'SandboxWarmPool','spec':true}",
	};
	for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		cJSON *o = j(objs[i]);
		cJSON *out = NULL;
		const char *to = strcmp(str(o, "apiVersion"), BETA) == 0 ? ALPHA : BETA;
		ck_assert_msg(sbx_conversion_convert(&out, o, to) == ASB_EDECODE, "case %zu", i);
		ck_assert_ptr_null(out);
		cJSON_Delete(o);
	}
	const char *ok[] = {
		"{'apiVersion':'" BETA "','kind':'SandboxClaim','metadata':{'name':'c'},'spec':{'warmPoolRef':'x'},'status':'s'}",
		"{'apiVersion':'" ALPHA "','kind':'SandboxClaim','metadata':{'name':'c'},'spec':{'warmpool':3,'sandboxTemplateRef':5},'status':{'sandbox':7}}",
		"{'apiVersion':'" BETA "','kind':'SandboxClaim','metadata':{'annotations':{'" CLAIM_SNAP "':'{\\'spec\\':{\\'warmpool\\':1}}'}},'spec':{}}",
		"{'apiVersion':'" BETA "','kind':'SandboxWarmPool','status':[]}",
		"{'apiVersion':'" ALPHA "','kind':'SandboxTemplate'}",
		"{'apiVersion':'" BETA "','kind':'SandboxTemplate'}",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cJSON *o = j(ok[i]);
		cJSON *out = NULL;
		const char *to = strcmp(str(o, "apiVersion"), BETA) == 0 ? ALPHA : BETA;
		ck_assert_msg(sbx_conversion_convert(&out, o, to) == 0, "case %zu: %s", i, asb_error_last()->message);
		ck_assert_ptr_nonnull(out);
		cJSON_Delete(out);
		cJSON_Delete(o);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("conversion_ext");
	TCase *tc = tcase_create("claim");
	tcase_add_test(tc, claim_specific_pool_is_used);
	tcase_add_test(tc, claim_warm_started_sandbox_minus_suffix);
	tcase_add_test(tc, claim_cold_is_shadow_pool);
	tcase_add_test(tc, claim_snapshot_written);
	tcase_add_test(tc, claim_no_snapshot_shadow_pool);
	tcase_add_test(tc, claim_no_snapshot_pool_guess);
	tcase_add_test(tc, claim_snapshot_restores_when_pool_matches);
	tcase_add_test(tc, claim_snapshot_absent_warmpool_stays_absent);
	tcase_add_test(tc, claim_snapshot_new_pool);
	tcase_add_test(tc, claim_snapshot_invalid_fails);
	tcase_add_test(tc, claim_round_trips);
	tcase_add_test(tc, claim_idle_fields_round_trip);
	suite_add_tcase(s, tc);
	tc = tcase_create("template");
	tcase_add_test(tc, template_policy_to_annotation);
	tcase_add_test(tc, template_empty_policy_removes_annotation);
	tcase_add_test(tc, template_annotation_to_policy);
	tcase_add_test(tc, template_invalid_annotation_fails);
	tcase_add_test(tc, template_snapshot_not_used);
	tcase_add_test(tc, template_round_trips);
	tcase_add_test(tc, template_idle_fields_round_trip);
	suite_add_tcase(s, tc);
	tc = tcase_create("warmpool");
	tcase_add_test(tc, pool_nil_replicas_is_one);
	tcase_add_test(tc, pool_rolling_update_round_trips);
	tcase_add_test(tc, pool_replicas_copied);
	tcase_add_test(tc, pool_snapshot_written_and_stripped);
	tcase_add_test(tc, pool_round_trip_lossless);
	tcase_add_test(tc, pool_bad_replicas_rejected);
	suite_add_tcase(s, tc);
	tc = tcase_create("routing");
	tcase_add_test(tc, extension_group_only);
	tcase_add_test(tc, review_mixed_kinds);
	tcase_add_test(tc, odd_shapes_do_not_crash);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
