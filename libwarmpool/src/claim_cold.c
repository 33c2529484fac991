/*
 * claim_cold.c - the Sandbox a claim creates when no warm one is adopted
 * (docs/api.md#cold-start), built from the template's blueprint (blueprint.h), with the
 * claim's idle fields over the template's (ours, docs/api.md#idle-suspend-and-resume).
 */
#include <stdlib.h>
#include <string.h>
#include "claim.h"
#include "jsonutil.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "sandbox/namehash.h"
#include "warmpool/blueprint.h"

#define NOMEM(err) wp_claim_err_set((err), WP_CLAIM_E_OTHER, "out of memory")

/* ---- docs/api.md#cold-start cold Sandbox ---- */

/* Replaces the idle fields the blueprint copied from the template by the
 * claim's pair (wp_claim_idle_fields(), ours). False on allocation failure. */
static bool set_idle_fields(cJSON *spec, const cJSON *claim, const cJSON *tpl)
{
	cJSON *want = wp_claim_idle_fields(claim, tpl, NULL);
	if (!want)
		return false;
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "idleTimeoutSeconds");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "idlePolicy");
	bool ok = true;
	while (ok && want->child) {
		cJSON *item = cJSON_DetachItemViaPointer(want, want->child);
		ok = cJSON_AddItemToObject(spec, item->string, item);
		if (!ok)
			cJSON_Delete(item);
	}
	cJSON_Delete(want);
	return ok;
}

cJSON *wp_claim_cold_sandbox(const cJSON *claim, const cJSON *tpl, wp_claim_err *err)
{
	const char *tpl_name = k8s_obj_name(tpl);
	char ref_hash[SBX_NAME_HASH_SIZE];
	sbx_name_hash(ju_nz(tpl_name), ref_hash);
	cJSON *spec = wp_blueprint_new(tpl);
	if (!spec) {
		wp_claim_err_set(err, WP_CLAIM_E_OTHER, "SandboxTemplate \"%s\" has no podTemplate",
		                 ju_nz(tpl_name));
		return NULL;
	}
	cJSON *sbx = cJSON_CreateObject();
	if (!sbx || !ju_set(sbx, "spec", spec)) {  /* ju_set takes spec in all cases */
		if (!sbx)
			cJSON_Delete(spec);
		cJSON_Delete(sbx);
		NOMEM(err);
		return NULL;
	}
	cJSON *md = ju_obj(sbx, "metadata");
	if (!md || !ju_set_str(sbx, "apiVersion", SBX_API_VERSION) || !ju_set_str(sbx, "kind", SBX_KIND))
		goto nomem;
	/* 1. VCTs */
	const cJSON *claim_vcts = k8s_obj_at(claim, "spec.volumeClaimTemplates");
	const cJSON *tpl_vcts = cJSON_GetObjectItem(spec, "volumeClaimTemplates");
	if (cJSON_GetArraySize(claim_vcts) > 0) {
		cJSON *merged = wp_merge_vcts(tpl_vcts, claim_vcts,
		                              k8s_obj_str(tpl, "spec.volumeClaimTemplatesPolicy"), err);
		if (!merged)
			goto fail;
		if (!ju_set(spec, "volumeClaimTemplates", merged))
			goto nomem;
	} else {
		char *m = wp_vct_errors(tpl_vcts);
		if (m) {
			wp_claim_err_set(err, WP_CLAIM_E_VCT,
			                 "invalid volume claim templates in template: %s", m);
			free(m);
			goto fail;
		}
	}
	/* 2. labels (object and podTemplate) */
	if (!ju_set_str(md, "name", k8s_obj_name(claim)) ||
	    !ju_set_str(md, "namespace", k8s_obj_namespace(claim)))
		goto nomem;
	cJSON *labels = ju_obj(md, "labels");
	cJSON *ann = ju_obj(md, "annotations");
	if (!labels || !ann)
		goto nomem;
	const char *cb = k8s_obj_label(claim, SBX_LABEL_CREATED_BY);
	const char *trace = k8s_obj_annotation(claim, SBX_ANNOTATION_TRACE_CONTEXT);
	if (!ju_set_str(labels, WP_LABEL_CLAIM_UID, ju_nz(k8s_obj_uid(claim))) ||
	    (!ju_empty(cb) && !ju_set_str(labels, SBX_LABEL_CREATED_BY, cb)) ||
	    !ju_set_str(labels, SBX_LABEL_LAUNCH_TYPE, WP_LAUNCH_TYPE_COLD) ||
	    !ju_set_str(labels, SBX_LABEL_TEMPLATE_REF_HASH, ref_hash) ||
	    (!ju_empty(trace) && !ju_set_str(ann, SBX_ANNOTATION_TRACE_CONTEXT, trace)) ||
	    !ju_set_str(ann, SBX_ANNOTATION_SANDBOX_TEMPLATE_REF, ju_nz(tpl_name)))
		goto nomem;
	cJSON *refs = cJSON_CreateArray();
	cJSON *ref = wp_claim_owner_ref(claim);
	if (!refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
		cJSON_Delete(refs);
		cJSON_Delete(ref);
		goto nomem;
	}
	if (!ju_set(md, "ownerReferences", refs))
		goto nomem;
	cJSON *pt = ju_obj(spec, "podTemplate");
	cJSON *ptmeta = pt ? ju_obj(pt, "metadata") : NULL;
	if (!ptmeta || !wp_claim_add_labels(ptmeta, claim, ref_hash))
		goto nomem;
	/* 3. additionalPodMetadata */
	if (!wp_merge_pod_metadata(ptmeta, claim, err))
		goto fail;
	/* 4. env */
	cJSON *pod_spec = cJSON_GetObjectItem(pt, "spec");
	if (!wp_inject_env(pod_spec, claim, k8s_obj_str(tpl, "spec.envVarsInjectionPolicy"), err))
		goto fail;
	/* 5. secure defaults */
	if (wp_apply_secure_defaults(pod_spec, wp_template_secure_by_default(tpl)) != 0) {
		wp_claim_err_set(err, WP_CLAIM_E_OTHER, "applying secure defaults: %s",
		                 asb_error_last()->message);
		goto fail;
	}
	/* 6. idle fields (ours, docs/api.md#idle-suspend-and-resume): the claim's pair wins */
	if (!set_idle_fields(spec, claim, tpl))
		goto nomem;
	return sbx;
nomem:
	NOMEM(err);
fail:
	cJSON_Delete(sbx);
	return NULL;
}

