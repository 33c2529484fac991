/*
 * blueprint.c - what a SandboxTemplate stamps onto a Sandbox (spec/api.md
 * §3.1), the secure defaults of §9.6, the content hashes of §1.1 and the
 * staleness test of §8.4. Shared by the pool and the claim controllers.
 *
 * Semantic comparison uses ju_semantic_equal() (a missing member equals its
 * zero value, nil lists/maps equal empty ones). Known limitation: resource
 * quantities are compared as JSON, not by value ("1Gi" and "1024Mi"
 * differ). Both the template and its Sandboxes are custom resources, whose
 * quantities the API server stores verbatim, and members are deep copies of
 * the template, so a copy never differs from its source; only Sandboxes
 * written by another implementation in a different quantity spelling would
 * be judged stale.
 */
#include <stdlib.h>
#include <string.h>
#include "warmpool/blueprint.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "jsonutil.h"

bool wp_template_secure_by_default(const cJSON *tpl)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(tpl, "spec");
	const char *mgmt = ju_str(spec, "networkPolicyManagement");
	if (!ju_empty(mgmt) && strcmp(mgmt, WP_NETWORK_POLICY_MANAGED) != 0)
		return false;
	const cJSON *np = cJSON_GetObjectItemCaseSensitive(spec, "networkPolicy");
	return !np || cJSON_IsNull(np);
}

int wp_apply_secure_defaults(cJSON *pod_spec, bool secure_by_default)
{
	if (!cJSON_IsObject(pod_spec))
		return k8s_error_set(K8S_EINVAL, 0, NULL, "secure defaults: pod spec is not an object");
	const cJSON *am = cJSON_GetObjectItemCaseSensitive(pod_spec, "automountServiceAccountToken");
	if ((!am || cJSON_IsNull(am)) &&
	    !ju_set(pod_spec, "automountServiceAccountToken", cJSON_CreateFalse()))
		goto oom;
	if (!secure_by_default || !ju_empty(ju_str(pod_spec, "dnsPolicy")))
		return 0;
	/* Cluster DNS is blocked by the default NetworkPolicy: public resolvers,
	 * and the template's dnsConfig is replaced, not merged (§9.6). */
	cJSON *cfg = cJSON_CreateObject();
	const char *const ns[] = { "8.8.8.8", "1.1.1.1" };
	if (!cfg || !ju_set(cfg, "nameservers", cJSON_CreateStringArray(ns, 2)) ||
	    !ju_set_str(pod_spec, "dnsPolicy", "None")) {
		cJSON_Delete(cfg);
		goto oom;
	}
	if (!ju_set(pod_spec, "dnsConfig", cfg))
		goto oom;
	return 0;
oom:
	return k8s_error_set(K8S_ENOMEM, 0, NULL, "secure defaults: out of memory");
}

cJSON *wp_blueprint_new(const cJSON *tpl)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(tpl, "spec");
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(spec, "podTemplate");
	if (!cJSON_IsObject(pt)) {
		k8s_error_set(K8S_EINVAL, 0, NULL, "SandboxTemplate \"%s\" has no spec.podTemplate",
		              ju_nz(k8s_obj_name(tpl)));
		return NULL;
	}
	/* Go field order of SandboxBlueprint; omitempty members stay absent. */
	static const char *const members[] = { "podTemplate", "volumeClaimTemplates", "service" };
	cJSON *bp = cJSON_CreateObject();
	if (!bp)
		goto oom;
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, members[i]);
		if (!v || cJSON_IsNull(v))
			continue;
		if (!ju_set(bp, members[i], cJSON_Duplicate(v, true)))
			goto oom;
	}
	return bp;
oom:
	cJSON_Delete(bp);
	k8s_error_set(K8S_ENOMEM, 0, NULL, "blueprint: out of memory");
	return NULL;
}

static int hash_json(const cJSON *v, char out[SBX_NAME_HASH_SIZE])
{
	char *s = cJSON_PrintUnformatted(v);
	if (!s)
		return k8s_error_set(K8S_ENOMEM, 0, NULL, "blueprint hash: out of memory");
	sbx_name_hash(s, out);
	cJSON_free(s);
	return 0;
}

int wp_blueprint_hash(const cJSON *tpl, char out[SBX_NAME_HASH_SIZE])
{
	cJSON *bp = wp_blueprint_new(tpl);
	if (!bp)
		return k8s_error_last()->code;
	int rc = hash_json(bp, out);
	cJSON_Delete(bp);
	return rc;
}

int wp_pod_template_hash(const cJSON *tpl, char out[SBX_NAME_HASH_SIZE])
{
	const cJSON *pt = k8s_obj_at(tpl, "spec.podTemplate");
	if (!cJSON_IsObject(pt))
		return k8s_error_set(K8S_EINVAL, 0, NULL, "SandboxTemplate \"%s\" has no spec.podTemplate",
		                     ju_nz(k8s_obj_name(tpl)));
	return hash_json(pt, out);
}

/* VCT lists: same length, index by index same name and semantically equal
 * spec; metadata otherwise ignored (§8.4). */
static bool vcts_equal(const cJSON *a, const cJSON *b)
{
	int na = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
	int nb = cJSON_IsArray(b) ? cJSON_GetArraySize(b) : 0;
	if (na != nb)
		return false;
	const cJSON *x = na ? a->child : NULL, *y = nb ? b->child : NULL;
	for (; x && y; x = x->next, y = y->next) {
		if (!ju_str_eq(k8s_obj_name(x), k8s_obj_name(y)))
			return false;
		if (!ju_semantic_equal(cJSON_GetObjectItemCaseSensitive(x, "spec"),
		                       cJSON_GetObjectItemCaseSensitive(y, "spec")))
			return false;
	}
	return true;
}

/* `service` is a *bool: nil and false are different pointers. */
static bool service_equal(const cJSON *a, const cJSON *b)
{
	bool na = !cJSON_IsBool(a), nb = !cJSON_IsBool(b);
	if (na || nb)
		return na && nb;
	return cJSON_IsTrue(a) == cJSON_IsTrue(b);
}

bool wp_blueprint_differs(const cJSON *tpl, const cJSON *sbx)
{
	const cJSON *tspec = cJSON_GetObjectItemCaseSensitive(tpl, "spec");
	const cJSON *sspec = cJSON_GetObjectItemCaseSensitive(sbx, "spec");
	const cJSON *tpod = k8s_obj_at(tspec, "podTemplate.spec");
	cJSON *want = cJSON_IsObject(tpod) ? cJSON_Duplicate(tpod, true) : cJSON_CreateObject();
	/* Out of memory: say "differs"; a needless recreate beats a wrong
	 * "fresh" that would keep an outdated member forever. */
	if (!want || wp_apply_secure_defaults(want, wp_template_secure_by_default(tpl)) != 0) {
		cJSON_Delete(want);
		return true;
	}
	bool same = ju_semantic_equal(want, k8s_obj_at(sspec, "podTemplate.spec"));
	cJSON_Delete(want);
	return !(same &&
	         vcts_equal(cJSON_GetObjectItemCaseSensitive(tspec, "volumeClaimTemplates"),
	                    cJSON_GetObjectItemCaseSensitive(sspec, "volumeClaimTemplates")) &&
	         service_equal(cJSON_GetObjectItemCaseSensitive(tspec, "service"),
	                       cJSON_GetObjectItemCaseSensitive(sspec, "service")));
}

bool wp_sandbox_is_stale(const cJSON *tpl, const char *tpl_hash,
                         const cJSON *sbx, bool owned)
{
	char ref[SBX_NAME_HASH_SIZE];
	sbx_name_hash(k8s_obj_name(tpl), ref);
	if (!ju_str_eq(k8s_obj_label(sbx, SBX_LABEL_TEMPLATE_REF_HASH), ref))
		return true;
	if (owned) {
		if (!tpl_hash)
			return false;
		if (ju_str_eq(k8s_obj_label(sbx, WP_LABEL_TEMPLATE_HASH), tpl_hash))
			return false;
	}
	return wp_blueprint_differs(tpl, sbx);
}
