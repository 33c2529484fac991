/*
 * claim_build.c - what the claim controller writes to Sandboxes: env
 * injection (docs/api.md#env-injection), the volumeClaimTemplates merge (docs/api.md#claim-volumeclaimtemplates), the
 * cold Sandbox (docs/api.md#cold-start), the adoption patch of a warm one (docs/api.md#claim-adoption step 2) and
 * the podTemplate metadata both carry (docs/api.md#additionalpodmetadata), plus candidate verification
 * (docs/api.md#claim-adoption) and a merge-patch diff; the idle fields both carry (ours,
 * docs/api.md#idle-suspend-and-resume).
 */
#include <stdlib.h>
#include <string.h>
#include "claim.h"
#include "jsonutil.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "sandbox/namehash.h"

#define NOMEM(err) wp_claim_err_set((err), WP_CLAIM_E_OTHER, "out of memory")

/* ---- ownership ---- */

static bool is_ext_ref(const cJSON *ref, const char *kind)
{
	char group[128];
	return ref && ju_str_eq(ju_str(ref, "kind"), kind) &&
	       strcmp(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	              SBX_EXTENSIONS_GROUP) == 0;
}

bool wp_controlled_by_claim(const cJSON *obj, const cJSON *claim)
{
	const cJSON *ref = k8s_obj_controller_ref(obj);
	const char *uid = k8s_obj_uid(claim);
	return ref && !ju_empty(uid) && ju_str_eq(ju_str(ref, "uid"), uid);
}

bool wp_controlled_by_any_claim(const cJSON *obj)
{
	return is_ext_ref(k8s_obj_controller_ref(obj), SBX_KIND_CLAIM);
}

cJSON *wp_claim_owner_ref(const cJSON *claim)
{
	cJSON *ref = cJSON_CreateObject();
	if (!ref)
		return NULL;
	if (!(ju_set_str(ref, "apiVersion", WP_API_VERSION) &&
	      ju_set_str(ref, "kind", SBX_KIND_CLAIM) &&
	      ju_set_str(ref, "name", k8s_obj_name(claim)) &&
	      ju_set_str(ref, "uid", k8s_obj_uid(claim)) &&
	      ju_set(ref, "controller", cJSON_CreateTrue()) &&
	      ju_set(ref, "blockOwnerDeletion", cJSON_CreateTrue()))) {
		cJSON_Delete(ref);
		return NULL;
	}
	return ref;
}

bool wp_claim_forces_cold(const cJSON *claim)
{
	return cJSON_GetArraySize(k8s_obj_at(claim, "spec.env")) > 0 ||
	       cJSON_GetArraySize(k8s_obj_at(claim, "spec.volumeClaimTemplates")) > 0;
}

bool wp_claim_candidate_ok(const cJSON *claim, const cJSON *sbx, const char **reason)
{
	const char *why = NULL;
	const cJSON *ctrl = k8s_obj_controller_ref(sbx);
	if (!ju_str_eq(k8s_obj_namespace(sbx), k8s_obj_namespace(claim)))
		why = "sandbox is in another namespace";
	else if (k8s_obj_is_deleting(sbx))
		why = "sandbox is being deleted";
	else if (ju_empty(k8s_obj_label(sbx, SBX_LABEL_WARM_POOL_SANDBOX)))
		why = "sandbox has no " SBX_LABEL_WARM_POOL_SANDBOX " label";
	else if (ju_empty(k8s_obj_label(sbx, SBX_LABEL_TEMPLATE_REF_HASH)))
		why = "sandbox has no " SBX_LABEL_TEMPLATE_REF_HASH " label";
	else if (!is_ext_ref(ctrl, SBX_KIND_WARM_POOL))
		why = "sandbox is not controlled by a SandboxWarmPool";
	else if (!ju_str_eq(ju_str(ctrl, "name"), k8s_obj_str(claim, "spec.warmPoolRef.name")))
		why = "sandbox belongs to another SandboxWarmPool";
	if (reason)
		*reason = why;
	return why == NULL;
}

/* ---- merge patch diff ---- */

cJSON *wp_merge_patch_diff(const cJSON *old_obj, const cJSON *new_obj)
{
	cJSON *patch = cJSON_CreateObject();
	if (!patch)
		return NULL;
	const cJSON *it;
	cJSON_ArrayForEach(it, old_obj) {
		if (it->string && !cJSON_GetObjectItem(new_obj, it->string) &&
		    !ju_set_null(patch, it->string))
			goto fail;
	}
	cJSON_ArrayForEach(it, new_obj) {
		if (!it->string)
			continue;
		const cJSON *was = cJSON_GetObjectItem(old_obj, it->string);
		cJSON *d = NULL;
		if (was && cJSON_Compare(was, it, true))
			continue;
		if (cJSON_IsObject(it) && cJSON_IsObject(was)) {
			d = wp_merge_patch_diff(was, it);
			if (d && !d->child) {
				cJSON_Delete(d);
				continue;
			}
		} else {
			d = cJSON_Duplicate(it, true);
		}
		if (!d || !ju_set(patch, it->string, d))
			goto fail;
	}
	return patch;
fail:
	cJSON_Delete(patch);
	return NULL;
}

/* ---- docs/api.md#env-injection env ---- */

typedef struct {
	cJSON *c;           /* the container */
	const char *name;
} ctr_ref;

static cJSON *find_env(cJSON *env, const char *name)
{
	cJSON *e;
	cJSON_ArrayForEach(e, env)
		if (ju_str_eq(ju_str(e, "name"), name))
			return e;
	return NULL;
}

/* Applies `entry` to container `c` (policy checked by the caller). */
static bool apply_env(cJSON *c, const cJSON *entry, bool overrides, wp_claim_err *err)
{
	const char *name = ju_str(entry, "name");
	cJSON *env = cJSON_GetObjectItem(c, "env");
	if (!cJSON_IsArray(env)) {
		env = cJSON_CreateArray();
		if (!env || !ju_set(c, "env", env))
			return NOMEM(err);
	}
	cJSON *plain = cJSON_CreateObject();
	if (!plain || !ju_set_str(plain, "name", name) ||
	    !ju_set_str(plain, "value", ju_nz(ju_str(entry, "value")))) {
		cJSON_Delete(plain);
		return NOMEM(err);
	}
	cJSON *have = find_env(env, name);
	if (have) {
		if (!overrides) {
			cJSON_Delete(plain);
			return wp_claim_err_set(err, WP_CLAIM_E_OTHER,
			                        "environment variable override is not allowed by the "
			                        "template policy for variable \"%s\"", ju_nz(name));
		}
		/* replaced in place, valueFrom dropped */
		cJSON_ReplaceItemViaPointer(env, have, plain);
		return true;
	}
	cJSON_AddItemToArray(env, plain);
	return true;
}

bool wp_inject_env(cJSON *pod_spec, const cJSON *claim, const char *policy, wp_claim_err *err)
{
	const cJSON *envs = k8s_obj_at(claim, "spec.env");
	int n = cJSON_GetArraySize(envs);
	if (n == 0)
		return true;
	bool allowed = ju_str_eq(policy, WP_POLICY_ALLOWED);
	bool overrides = ju_str_eq(policy, WP_POLICY_OVERRIDES);
	if (!allowed && !overrides)
		return wp_claim_err_set(err, WP_CLAIM_E_ENV_REJECTED,
		                        "environment variable injection rejected: environment variable "
		                        "injection is not allowed by the template policy");
	cJSON *inits = cJSON_GetObjectItem(pod_spec, "initContainers");
	cJSON *mains = cJSON_GetObjectItem(pod_spec, "containers");
	/* every named target must exist (init or main) */
	const cJSON *e;
	cJSON_ArrayForEach(e, envs) {
		const char *cn = ju_str(e, "containerName");
		if (ju_empty(cn))
			continue;
		bool found = false;
		const cJSON *c;
		cJSON_ArrayForEach(c, inits)
			found = found || ju_str_eq(ju_str(c, "name"), cn);
		cJSON_ArrayForEach(c, mains)
			found = found || ju_str_eq(ju_str(c, "name"), cn);
		if (!found)
			return wp_claim_err_set(err, WP_CLAIM_E_OTHER,
			                        "target container \"%s\" not found in template for "
			                        "environment variable \"%s\"", cn, ju_nz(ju_str(e, "name")));
	}
	bool has_unnamed = false;
	cJSON_ArrayForEach(e, envs)
		has_unnamed = has_unnamed || ju_empty(ju_str(e, "containerName"));
	if (has_unnamed && cJSON_GetArraySize(mains) == 0)
		return wp_claim_err_set(err, WP_CLAIM_E_OTHER,
		                        "no container in template for environment variables without "
		                        "containerName");
	/* init containers in order, then main containers; the first main one
	 * gets its named entries, then the unnamed ones. A name shared by an
	 * init and a main container goes to the init one (found first). */
	for (int pass = 0; pass < 2; pass++) {
		cJSON *list = pass == 0 ? inits : mains;
		int idx = 0;
		cJSON *c;
		cJSON_ArrayForEach(c, list) {
			const char *cname = ju_str(c, "name");
			bool first_main = pass == 1 && idx++ == 0;
			/* does this container receive anything? */
			bool receives = false;
			cJSON_ArrayForEach(e, envs) {
				const char *cn = ju_str(e, "containerName");
				bool named_here = !ju_empty(cn) && ju_str_eq(cn, cname);
				if (named_here && pass == 1) {
					/* named entries resolve to the init container first */
					const cJSON *ic;
					cJSON_ArrayForEach(ic, inits)
						if (ju_str_eq(ju_str(ic, "name"), cn))
							named_here = false;
				}
				if (named_here || (first_main && ju_empty(cn)))
					receives = true;
			}
			if (!receives)
				continue;
			if (allowed && cJSON_GetArraySize(cJSON_GetObjectItem(c, "envFrom")) > 0)
				return wp_claim_err_set(err, WP_CLAIM_E_ENV_REJECTED,
				                        "environment variable injection rejected: container "
				                        "\"%s\" uses EnvFrom sources; Allowed policy cannot "
				                        "safely prevent overriding EnvFrom-provided variables",
				                        ju_nz(cname));
			for (int unnamed = 0; unnamed < 2; unnamed++) {
				if (unnamed && !first_main)
					break;
				cJSON_ArrayForEach(e, envs) {
					const char *cn = ju_str(e, "containerName");
					bool take;
					if (unnamed) {
						take = ju_empty(cn);
					} else {
						take = !ju_empty(cn) && ju_str_eq(cn, cname);
						if (take && pass == 1) {
							const cJSON *ic;
							cJSON_ArrayForEach(ic, inits)
								if (ju_str_eq(ju_str(ic, "name"), cn))
									take = false;
						}
					}
					if (take && !apply_env(c, e, overrides, err))
						return false;
				}
			}
		}
	}
	return true;
}

/* ---- docs/api.md#claim-volumeclaimtemplates volumeClaimTemplates ---- */

static const char *vct_name(const cJSON *v)
{
	return k8s_obj_name(v);
}

char *wp_vct_errors(const cJSON *vcts)
{
	int n = cJSON_GetArraySize(vcts);
	for (int i = 0; i < n; i++) {
		const char *name = vct_name(cJSON_GetArrayItem(vcts, i));
		if (ju_empty(name))
			return ju_printf("invalid volume claim templates: name at index %d is empty", i);
		for (int j = 0; j < i; j++)
			if (ju_str_eq(vct_name(cJSON_GetArrayItem(vcts, j)), name))
				return ju_printf("invalid volume claim templates: duplicate name \"%s\"", name);
	}
	return NULL;
}

cJSON *wp_merge_vcts(const cJSON *tpl_vcts, const cJSON *claim_vcts, const char *policy,
                     wp_claim_err *err)
{
	static const char *const pfx = "failed to merge volume claim templates: ";
	char *m = wp_vct_errors(tpl_vcts);
	if (m) {
		wp_claim_err_set(err, WP_CLAIM_E_VCT, "%stemplate: %s", pfx, m);
		free(m);
		return NULL;
	}
	if ((m = wp_vct_errors(claim_vcts))) {
		wp_claim_err_set(err, WP_CLAIM_E_VCT, "%sclaim: %s", pfx, m);
		free(m);
		return NULL;
	}
	bool allowed = ju_str_eq(policy, WP_POLICY_ALLOWED);
	bool overrides = ju_str_eq(policy, WP_POLICY_OVERRIDES);
	if (ju_empty(policy) || ju_str_eq(policy, WP_POLICY_DISALLOWED)) {
		wp_claim_err_set(err, WP_CLAIM_E_VCT,
		                 "%svolume claim templates are disallowed by the template", pfx);
		return NULL;
	}
	if (!allowed && !overrides) {
		wp_claim_err_set(err, WP_CLAIM_E_OTHER,
		                 "%sunknown volume claim templates policy \"%s\"", pfx, policy);
		return NULL;
	}
	cJSON *out = cJSON_CreateArray();
	if (!out) {
		NOMEM(err);
		return NULL;
	}
	const cJSON *t, *c;
	cJSON_ArrayForEach(t, tpl_vcts) {
		const cJSON *use = t;
		cJSON_ArrayForEach(c, claim_vcts) {
			if (!ju_str_eq(vct_name(c), vct_name(t)))
				continue;
			if (allowed) {
				wp_claim_err_set(err, WP_CLAIM_E_VCT,
				                 "%soverriding volume claim templates is forbidden by the "
				                 "template: cannot override template volume \"%s\"",
				                 pfx, vct_name(t));
				cJSON_Delete(out);
				return NULL;
			}
			use = c;
		}
		cJSON_AddItemToArray(out, cJSON_Duplicate(use, true));
	}
	cJSON_ArrayForEach(c, claim_vcts) {
		bool in_tpl = false;
		cJSON_ArrayForEach(t, tpl_vcts)
			in_tpl = in_tpl || ju_str_eq(vct_name(c), vct_name(t));
		if (!in_tpl)
			cJSON_AddItemToArray(out, cJSON_Duplicate(c, true));
	}
	return out;
}

/* ---- podTemplate metadata (docs/api.md#claim-adoption step 2, docs/api.md#additionalpodmetadata) ---- */

/* {labels, annotations} copied from a podTemplate.metadata (maps only). */
static cJSON *meta_copy(const cJSON *meta)
{
	cJSON *out = cJSON_CreateObject();
	if (!out)
		return NULL;
	const cJSON *l = cJSON_GetObjectItem(meta, "labels");
	const cJSON *a = cJSON_GetObjectItem(meta, "annotations");
	if ((cJSON_IsObject(l) && !ju_set(out, "labels", cJSON_Duplicate(l, true))) ||
	    (cJSON_IsObject(a) && !ju_set(out, "annotations", cJSON_Duplicate(a, true)))) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

/* Adds claim-uid, template-ref-hash and created-by (claim's, else removed) to meta.labels. */
bool wp_claim_add_labels(cJSON *meta, const cJSON *claim, const char *ref_hash)
{
	cJSON *labels = ju_obj(meta, "labels");
	if (!labels)
		return false;
	const char *cb = k8s_obj_label(claim, SBX_LABEL_CREATED_BY);
	if (!ju_set_str(labels, WP_LABEL_CLAIM_UID, ju_nz(k8s_obj_uid(claim))) ||
	    !ju_set_str(labels, SBX_LABEL_TEMPLATE_REF_HASH, ref_hash))
		return false;
	if (!ju_empty(cb))
		return ju_set_str(labels, SBX_LABEL_CREATED_BY, cb);
	cJSON_DeleteItemFromObjectCaseSensitive(labels, SBX_LABEL_CREATED_BY);
	return true;
}

cJSON *wp_claim_pod_metadata(const cJSON *claim, const cJSON *tpl, const cJSON *sbx,
                             const char *tpl_ref_hash, wp_claim_err *err)
{
	cJSON *meta;
	if (tpl) {
		meta = meta_copy(k8s_obj_at(tpl, "spec.podTemplate.metadata"));
	} else {
		meta = meta_copy(k8s_obj_at(sbx, "spec.podTemplate.metadata"));
		cJSON *ann = meta ? cJSON_GetObjectItem(meta, "annotations") : NULL;
		if (ju_str_eq(ju_str(ann, WP_ANNOTATION_SAFE_TO_EVICT), "true"))
			cJSON_DeleteItemFromObjectCaseSensitive(ann, WP_ANNOTATION_SAFE_TO_EVICT);
	}
	if (!meta || !wp_claim_add_labels(meta, claim, ju_nz(tpl_ref_hash))) {
		cJSON_Delete(meta);
		NOMEM(err);
		return NULL;
	}
	if (!wp_merge_pod_metadata(meta, claim, err)) {
		cJSON_Delete(meta);
		return NULL;
	}
	return meta;
}

/* ---- idle fields (ours, docs/api.md#idle-suspend-and-resume) ---- */

static const char *const idle_keys[] = { "idleTimeoutSeconds", "idlePolicy" };

/* {idleTimeoutSeconds, idlePolicy} copied from `holder` (members it lacks,
 * or holds with the wrong type, stay absent). NULL on allocation failure. */
static cJSON *idle_pair(const cJSON *holder)
{
	cJSON *out = cJSON_CreateObject();
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(holder, idle_keys[0]);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(holder, idle_keys[1]);
	if (!out || (cJSON_IsNumber(t) && !ju_set(out, idle_keys[0], cJSON_Duplicate(t, false))) ||
	    (cJSON_IsString(p) && !ju_set_str(out, idle_keys[1], p->valuestring))) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

cJSON *wp_claim_idle_fields(const cJSON *claim, const cJSON *base, sbx_idle_action *action)
{
	sbx_idle_policy pol;
	const cJSON *holder = NULL;
	sbx_idle_policy_at(claim, "spec.lifecycle", &pol);
	if (pol.action != SBX_IDLE_OFF) {
		holder = k8s_obj_at(claim, "spec.lifecycle");
	} else {
		sbx_idle_policy_at(base, "spec", &pol);
		if (pol.action != SBX_IDLE_OFF)
			holder = k8s_obj_at(base, "spec");
	}
	if (action)
		*action = pol.action;
	return holder ? idle_pair(holder) : cJSON_CreateObject();
}

/* ---- docs/api.md#claim-adoption step 2 adoption patch ---- */

/*
 * Adds to `patch` the idle part of the adoption (wp_claim_adoption_patch()):
 * the spec members that make `sbx`'s idle fields the claim's pair, and the
 * last-activity stamp when that pair is not OFF. False on allocation failure.
 */
static bool adoption_idle(cJSON *patch, cJSON *ann, const cJSON *claim, const cJSON *sbx,
                          const cJSON *tpl, int64_t now_ms)
{
	sbx_idle_action action;
	cJSON *want = wp_claim_idle_fields(claim, tpl ? tpl : sbx, &action);
	cJSON *have = idle_pair(k8s_obj_at(sbx, "spec"));
	cJSON *diff = want && have ? wp_merge_patch_diff(have, want) : NULL;
	cJSON_Delete(want);
	cJSON_Delete(have);
	if (!diff)
		return false;
	cJSON *spec = diff->child ? ju_obj(patch, "spec") : NULL;
	bool ok = !diff->child || spec;
	while (ok && diff->child) {
		cJSON *item = cJSON_DetachItemViaPointer(diff, diff->child);
		ok = cJSON_AddItemToObject(spec, item->string, item);
		if (!ok)
			cJSON_Delete(item);
	}
	cJSON_Delete(diff);
	if (!ok)
		return false;
	if (action == SBX_IDLE_OFF)
		return true;
	char when[40];
	return ju_set_str(ann, SBX_ANNOTATION_LAST_ACTIVITY, k8s_time_format(now_ms, when, sizeof(when)));
}

cJSON *wp_claim_adoption_patch(const cJSON *claim, const cJSON *sbx, const cJSON *tpl,
                               const char *tpl_name, int64_t now_ms, wp_claim_err *err)
{
	char computed[SBX_NAME_HASH_SIZE];
	const char *ref_hash = k8s_obj_label(sbx, SBX_LABEL_TEMPLATE_REF_HASH);
	if (ju_empty(ref_hash)) {
		if (!tpl_name)
			tpl_name = tpl ? k8s_obj_name(tpl)
			               : k8s_obj_annotation(sbx, SBX_ANNOTATION_SANDBOX_TEMPLATE_REF);
		sbx_name_hash(ju_nz(tpl_name), computed);
		ref_hash = computed;
	}
	cJSON *newmeta = wp_claim_pod_metadata(claim, tpl, sbx, ref_hash, err);
	if (!newmeta)
		return NULL;
	cJSON *oldmeta = meta_copy(k8s_obj_at(sbx, "spec.podTemplate.metadata"));
	cJSON *metadiff = oldmeta ? wp_merge_patch_diff(oldmeta, newmeta) : NULL;
	cJSON_Delete(oldmeta);
	cJSON_Delete(newmeta);
	cJSON *patch = cJSON_CreateObject();
	cJSON *md = patch ? ju_obj(patch, "metadata") : NULL;
	cJSON *labels = md ? ju_obj(md, "labels") : NULL;
	cJSON *ann = md ? ju_obj(md, "annotations") : NULL;
	cJSON *refs = cJSON_CreateArray();
	cJSON *ref = wp_claim_owner_ref(claim);
	if (!metadiff || !labels || !ann || !refs || !ref || !cJSON_AddItemToArray(refs, ref)) {
		if (!cJSON_GetArraySize(refs))
			cJSON_Delete(ref);
		cJSON_Delete(refs);
		goto nomem;
	}
	const char *cb = k8s_obj_label(claim, SBX_LABEL_CREATED_BY);
	const char *trace = k8s_obj_annotation(claim, SBX_ANNOTATION_TRACE_CONTEXT);
	if (!ju_set_str(md, "resourceVersion", ju_nz(k8s_obj_resource_version(sbx))) ||
	    !ju_set(md, "ownerReferences", refs) ||
	    !ju_set_null(labels, SBX_LABEL_WARM_POOL_SANDBOX) ||
	    !ju_set_null(labels, WP_LABEL_POD_TEMPLATE_HASH) ||
	    !ju_set_null(labels, WP_LABEL_TEMPLATE_HASH) ||
	    !ju_set_str(labels, SBX_LABEL_LAUNCH_TYPE, WP_LAUNCH_TYPE_WARM) ||
	    !ju_set_str(labels, WP_LABEL_CLAIM_UID, ju_nz(k8s_obj_uid(claim))) ||
	    !(ju_empty(cb) ? ju_set_null(labels, SBX_LABEL_CREATED_BY)
	                   : ju_set_str(labels, SBX_LABEL_CREATED_BY, cb)) ||
	    !ju_set_str(labels, SBX_LABEL_TEMPLATE_REF_HASH, ref_hash) ||
	    !ju_set_str(ann, SBX_ANNOTATION_POD_NAME, ju_nz(k8s_obj_name(sbx))) ||
	    (!ju_empty(trace) && !ju_set_str(ann, SBX_ANNOTATION_TRACE_CONTEXT, trace)) ||
	    !adoption_idle(patch, ann, claim, sbx, tpl, now_ms))
		goto nomem;
	if (metadiff->child) {
		cJSON *spec = ju_obj(patch, "spec");
		cJSON *pt = spec ? ju_obj(spec, "podTemplate") : NULL;
		if (!pt)
			goto nomem;   /* metadiff still ours: freed there */
		if (!ju_set(pt, "metadata", metadiff)) {
			metadiff = NULL;   /* ju_set took it */
			goto nomem;
		}
	} else {
		cJSON_Delete(metadiff);
	}
	return patch;
nomem:
	cJSON_Delete(metadiff);
	cJSON_Delete(patch);
	NOMEM(err);
	return NULL;
}
