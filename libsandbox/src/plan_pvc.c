/*
 * plan_pvc.c - the PVC step (docs/api.md#pvcs): one claim per
 * volumeClaimTemplate, named `<vct.metadata.name>-<sandbox name>`, created
 * when missing, adopted when unowned and authorised, never repaired and
 * never deleted (they outlive Suspend and expiry; GC removes them with the
 * Sandbox). VCTs are handled in order and the step stops at the first
 * error; the Pod and Service steps still run.
 */
#include <stdlib.h>
#include <string.h>
#include "plan.h"
#include "k8s/object.h"

static const cJSON *find_by_name(const cJSON *list, const char *name)
{
	const cJSON *o;
	cJSON_ArrayForEach(o, list)
		if (ju_str_eq(k8s_obj_name(o), name))
			return o;
	return NULL;
}

/* The create body of the claim of `vct`, named `name`. */
static cJSON *pvc_body(sbx_plan *p, const cJSON *vct, const char *name)
{
	cJSON *pvc = cJSON_CreateObject();
	cJSON *md = ju_obj(pvc, "metadata");
	bool ok = md && ju_set_str(pvc, "apiVersion", "v1") &&
	          ju_set_str(pvc, "kind", "PersistentVolumeClaim") &&
	          ju_set_str(md, "name", name) &&
	          ju_set_str(md, "namespace", p->ns);
	/* Labels: the template's, then the tracking label (which wins). */
	cJSON *labels = ok ? ju_obj(md, "labels") : NULL;
	const cJSON *kv;
	ok = ok && labels;
	cJSON_ArrayForEach(kv, k8s_obj_at(vct, "metadata.labels"))
		if (ok && cJSON_IsString(kv))
			ok = ju_set_str(labels, kv->string, kv->valuestring);
	ok = ok && ju_set_str(labels, SBX_LABEL_NAME_HASH, p->hash);
	const cJSON *ann = k8s_obj_at(vct, "metadata.annotations");
	if (ok && cJSON_IsObject(ann) && ann->child)
		ok = ju_set(md, "annotations", cJSON_Duplicate(ann, true));
	ok = ok && ju_set(md, "ownerReferences",
	                  ju_controller_refs(p->name, p->uid));
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(vct, "spec");
	ok = ok && ju_set(pvc, "spec", spec ? cJSON_Duplicate(spec, true)
	                                    : cJSON_CreateObject());
	if (!plan_ok(p, ok)) {
		cJSON_Delete(pvc);
		return NULL;
	}
	return pvc;
}

/* The merge patch adopting `pvc`: its owner references plus ours. */
static cJSON *adopt_patch(sbx_plan *p, const cJSON *obj)
{
	cJSON *patch = cJSON_CreateObject();
	cJSON *md = ju_obj(patch, "metadata");
	if (!plan_ok(p, md && ju_set(md, "ownerReferences",
	                             ju_adopted_owner_refs(obj, p->name, p->uid)))) {
		cJSON_Delete(patch);
		return NULL;
	}
	return patch;
}

void plan_pvcs(sbx_plan *p)
{
	const cJSON *vct;
	cJSON_ArrayForEach(vct, k8s_obj_at(p->sandbox, "spec.volumeClaimTemplates")) {
		char *name = ju_printf("%s-%s", ju_nz(k8s_obj_name(vct)), p->name);
		if (!plan_ok(p, name != NULL))
			return;
		bool stop = true;
		const cJSON *pvc = find_by_name(p->pvcs, name);
		if (p->pvc_error && ju_str_eq(p->pvc_error_name, name) && !pvc) {
			plan_fail(p, SBX_STEP_PVC, "failed to get PVC: %s", p->pvc_error);
		} else if (!pvc) {
			cJSON *body = pvc_body(p, vct, name);
			if (body)
				plan_add(p, SBX_STEP_PVC, SBX_VERB_CREATE, SBX_OBJ_PVC, name,
				         body, "failed to create PVC");
			stop = false;
		} else {
			switch (k8s_obj_owner_class(pvc, p->uid)) {
			case K8S_OWNER_THIS:
				stop = false;   /* no drift repair of claims */
				break;
			case K8S_OWNER_NONE:
				if (!plan_adoptable(p, pvc)) {
					plan_fail_not_adoptable(p, SBX_STEP_PVC, "PVC", name);
					break;
				}
				cJSON *patch = adopt_patch(p, pvc);
				if (patch)
					plan_add(p, SBX_STEP_PVC, SBX_VERB_PATCH, SBX_OBJ_PVC,
					         name, patch, "failed to adopt PVC");
				stop = false;
				break;
			case K8S_OWNER_OTHER:
				plan_fail_owned_by_other(p, SBX_STEP_PVC, "PVC", pvc);
				break;
			}
		}
		free(name);
		if (stop || p->oom)
			return;
	}
}
