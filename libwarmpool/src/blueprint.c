/*
 * blueprint.c - what a SandboxTemplate stamps onto a Sandbox
 * (docs/api.md#sandboxtemplate-spec), the secure defaults of docs/api.md#secure-defaults, the content hashes of docs/api.md#name-hash and the
 * staleness test of docs/api.md#staleness-and-update-strategies. Shared by the pool and the claim controllers.
 *
 * Semantic comparison uses k8s_obj_semantic_equal() (a missing member equals its
 * zero value, nil lists/maps equal empty ones) on copies whose resource
 * quantities were rewritten to one canonical spelling, so "1Gi" equals
 * "1024Mi" and "0.5" equals "500m", as Go's Quantity comparison says
 * (docs/api.md#write-primitives-and-equality). Only the places where PodSpec and PersistentVolumeClaimSpec hold
 * quantities are rewritten: container (init, ephemeral) and pod-level
 * resources limits/requests, pod overhead, VCT resources.
 *
 * The blueprint also carries the template's idleTimeoutSeconds and
 * idlePolicy (ours, docs/api.md#idle-suspend-and-resume) when it sets them, so pool
 * members and cold Sandboxes get them by the same copy, the blueprint hash
 * of a template with them changes with them (one without them hashes as
 * before), and a member whose idle policy is not the template's is stale
 * like one with another pod spec.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warmpool/blueprint.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "jsonutil.h"
#include "sandbox/idle.h"

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
		return asb_error_set(ASB_EINVAL, 0, NULL, "secure defaults: pod spec is not an object");
	const cJSON *am = cJSON_GetObjectItemCaseSensitive(pod_spec, "automountServiceAccountToken");
	if ((!am || cJSON_IsNull(am)) &&
	    !ju_set(pod_spec, "automountServiceAccountToken", cJSON_CreateFalse()))
		goto oom;
	if (!secure_by_default || !ju_empty(ju_str(pod_spec, "dnsPolicy")))
		return 0;
	/* Cluster DNS is blocked by the default NetworkPolicy: public resolvers,
	 * and the template's dnsConfig is replaced, not merged (docs/api.md#secure-defaults). */
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
	return asb_error_set(ASB_ENOMEM, 0, NULL, "secure defaults: out of memory");
}

cJSON *wp_blueprint_new(const cJSON *tpl)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(tpl, "spec");
	const cJSON *pt = cJSON_GetObjectItemCaseSensitive(spec, "podTemplate");
	if (!cJSON_IsObject(pt)) {
		asb_error_set(ASB_EINVAL, 0, NULL, "SandboxTemplate \"%s\" has no spec.podTemplate",
		              ju_nz(k8s_obj_name(tpl)));
		return NULL;
	}
	/* Go field order of SandboxBlueprint, then our idle fields;
	 * omitempty members stay absent. */
	static const char *const members[] = { "podTemplate", "volumeClaimTemplates", "service",
	                                       "idleTimeoutSeconds", "idlePolicy" };
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
	asb_error_set(ASB_ENOMEM, 0, NULL, "blueprint: out of memory");
	return NULL;
}

static int hash_json(const cJSON *v, char out[SBX_NAME_HASH_SIZE])
{
	char *s = cJSON_PrintUnformatted(v);
	if (!s)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "blueprint hash: out of memory");
	sbx_name_hash(s, out);
	cJSON_free(s);
	return 0;
}

int wp_blueprint_hash(const cJSON *tpl, char out[SBX_NAME_HASH_SIZE])
{
	cJSON *bp = wp_blueprint_new(tpl);
	if (!bp)
		return asb_error_last()->code;
	int rc = hash_json(bp, out);
	cJSON_Delete(bp);
	return rc;
}

int wp_pod_template_hash(const cJSON *tpl, char out[SBX_NAME_HASH_SIZE])
{
	const cJSON *pt = k8s_obj_at(tpl, "spec.podTemplate");
	if (!cJSON_IsObject(pt))
		return asb_error_set(ASB_EINVAL, 0, NULL, "SandboxTemplate \"%s\" has no spec.podTemplate",
		                     ju_nz(k8s_obj_name(tpl)));
	return hash_json(pt, out);
}

/* ---- quantities ---- */

/* The value of a Kubernetes quantity string ("1Gi", "500m", "1e3", "2"),
 * or false when `s` is not one. */
static bool quantity_value(const char *s, long double *out)
{
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	const char *digits = p;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.')
		p++;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p == digits || (p == digits + 1 && *digits == '.'))
		return false;
	char num[64];
	size_t len = (size_t)(p - s);
	if (len >= sizeof(num))
		return false;
	memcpy(num, s, len);
	num[len] = '\0';
	long double v = strtold(num, NULL);
	static const struct { const char *sfx; int base2; int exp10; } sfx[] = {
		{ "Ki", 10, 0 }, { "Mi", 20, 0 }, { "Gi", 30, 0 }, { "Ti", 40, 0 },
		{ "Pi", 50, 0 }, { "Ei", 60, 0 }, { "n", 0, -9 }, { "u", 0, -6 },
		{ "m", 0, -3 }, { "", 0, 0 }, { "k", 0, 3 }, { "M", 0, 6 },
		{ "G", 0, 9 }, { "T", 0, 12 }, { "P", 0, 15 }, { "E", 0, 18 },
	};
	int base2 = 0, exp10 = 0;
	bool found = false;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]) && !found; i++) {
		if (strcmp(p, sfx[i].sfx) == 0) {
			base2 = sfx[i].base2;
			exp10 = sfx[i].exp10;
			found = true;
		}
	}
	if (!found && (*p == 'e' || *p == 'E')) {
		const char *q = p + 1;
		if (*q == '+' || *q == '-')
			q++;
		if (!*q || strspn(q, "0123456789") != strlen(q) || strlen(q) > 3)
			return false;
		exp10 = atoi(p + 1);
		found = true;
	}
	if (!found)
		return false;
	for (int i = 0; i < base2; i++)
		v *= 2;
	/* Divide for negative exponents: 500 / 1000 is exact where
	 * 500 * 0.001 is not. */
	for (int i = 0; i < exp10; i++)
		v *= 10;
	for (int i = 0; i > exp10; i--)
		v /= 10;
	*out = v;
	return true;
}

/* Rewrites every member of the quantity map `m` to a canonical string. */
static void canon_quantity_map(cJSON *m)
{
	cJSON *q;
	cJSON_ArrayForEach(q, m) {
		long double v;
		char buf[64];
		if (cJSON_IsNumber(q))
			v = (long double)q->valuedouble;
		else if (!cJSON_IsString(q) || !quantity_value(q->valuestring, &v))
			continue;
		/* 15 significant digits absorb the binary rounding of decimals. */
		snprintf(buf, sizeof(buf), "%.15Lg", v);
		cJSON *c = cJSON_CreateString(buf);
		if (!c || (q->type & cJSON_StringIsConst)) {
			cJSON_Delete(c);
			continue;
		}
		/* The key moves to the new item (ReplaceItemViaPointer keeps none). */
		c->string = q->string;
		q->string = NULL;
		cJSON_ReplaceItemViaPointer(m, q, c);
		q = c;
	}
}

static void canon_resources(cJSON *res)
{
	canon_quantity_map(cJSON_GetObjectItemCaseSensitive(res, "limits"));
	canon_quantity_map(cJSON_GetObjectItemCaseSensitive(res, "requests"));
}

static void canon_pod_spec(cJSON *spec)
{
	static const char *const lists[] = { "containers", "initContainers", "ephemeralContainers" };
	for (size_t i = 0; i < 3; i++) {
		cJSON *c;
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(spec, lists[i]))
			canon_resources(cJSON_GetObjectItemCaseSensitive(c, "resources"));
	}
	canon_resources(cJSON_GetObjectItemCaseSensitive(spec, "resources"));
	canon_quantity_map(cJSON_GetObjectItemCaseSensitive(spec, "overhead"));
}

/* Semantic equality of two pod specs / PVC specs, quantities by value. A
 * copy that cannot be made reads as "different". */
static bool spec_equal(const cJSON *a, const cJSON *b, void (*canon)(cJSON *))
{
	cJSON *x = a ? cJSON_Duplicate(a, true) : NULL, *y = b ? cJSON_Duplicate(b, true) : NULL;
	if ((a && !x) || (b && !y)) {
		cJSON_Delete(x);
		cJSON_Delete(y);
		return false;
	}
	canon(x);
	canon(y);
	bool eq = k8s_obj_semantic_equal(x, y);
	cJSON_Delete(x);
	cJSON_Delete(y);
	return eq;
}

static void canon_pvc_spec(cJSON *spec)
{
	canon_resources(cJSON_GetObjectItemCaseSensitive(spec, "resources"));
}

/* VCT lists: same length, index by index same name and semantically equal
 * spec; metadata otherwise ignored (docs/api.md#staleness-and-update-strategies). */
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
		if (!spec_equal(cJSON_GetObjectItemCaseSensitive(x, "spec"),
		                cJSON_GetObjectItemCaseSensitive(y, "spec"), canon_pvc_spec))
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

/* The idle policies the two specs' holders give (sbx_idle_policy_at()):
 * compared as what they do, so an absent idlePolicy equals "Suspend" and
 * an idlePolicy without a timeout equals none. */
static bool idle_equal(const cJSON *tpl, const cJSON *sbx)
{
	sbx_idle_policy a, b;
	sbx_idle_policy_at(tpl, "spec", &a);
	sbx_idle_policy_at(sbx, "spec", &b);
	return a.action == b.action && a.timeout_ms == b.timeout_ms;
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
	bool same = spec_equal(want, k8s_obj_at(sspec, "podTemplate.spec"), canon_pod_spec);
	cJSON_Delete(want);
	return !(same &&
	         vcts_equal(cJSON_GetObjectItemCaseSensitive(tspec, "volumeClaimTemplates"),
	                    cJSON_GetObjectItemCaseSensitive(sspec, "volumeClaimTemplates")) &&
	         service_equal(cJSON_GetObjectItemCaseSensitive(tspec, "service"),
	                       cJSON_GetObjectItemCaseSensitive(sspec, "service")) &&
	         idle_equal(tpl, sbx));
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
