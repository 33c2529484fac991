/*
 * plan_pod.c - the Pod step (docs/api.md#pod-management, #pod-metadata, #extension-labels) and the Pod part
 * of expiry teardown (docs/api.md#sandbox-expiry).
 *
 * Lookup: the Pods of the name-hash index that this Sandbox controls (UID
 * is authoritative, the label is only an index), plus the Pod got by the
 * resolved name when it is controlled but missing from the index. Then,
 * by mode:
 *  - Suspended: delete the owned Pod (once; a terminating one is left
 *    alone), never an unowned or foreign one; drop the pod-name annotation
 *    only when no owned Pod remains.
 *  - Running: adopt or refuse an existing Pod, reconcile its metadata in one
 *    merge patch, or create a new one named like the Sandbox; then make sure
 *    the Sandbox's pod-name annotation names it.
 * The Pod spec of an existing Pod is never touched.
 */
#include <stdlib.h>
#include <string.h>
#include "plan.h"
#include "k8s/object.h"
#include "sandbox/metrics.h"

/*
 * Extension labels copied from the Sandbox to its Pod (docs/api.md#extension-labels): only when the
 * Sandbox is controlled by a kind of the extensions group (version
 * ignored); the warm-pool label only under a SandboxWarmPool.
 */
static void extension_labels(const sbx_plan *p, const char **warm,
                             const char **tref)
{
	char group[128];
	const cJSON *ref = k8s_obj_controller_ref(p->sandbox);
	*warm = *tref = NULL;
	if (!ref || strcmp(ju_api_group(ju_str(ref, "apiVersion"), group,
	                                sizeof(group)), SBX_EXTENSIONS_GROUP) != 0)
		return;
	const char *w = k8s_obj_label(p->sandbox, SBX_LABEL_WARM_POOL_SANDBOX);
	if (ju_str_eq(ju_str(ref, "kind"), SBX_KIND_WARM_POOL) && !ju_empty(w))
		*warm = w;
	const char *t = k8s_obj_label(p->sandbox, SBX_LABEL_TEMPLATE_REF_HASH);
	if (!ju_empty(t))
		*tref = t;
}

/* Sets or deletes `key` in the map `m` (NULL value: delete). */
static bool map_put(cJSON *m, const char *key, const char *value)
{
	if (!value) {
		cJSON_DeleteItemFromObjectCaseSensitive(m, key);
		return true;
	}
	return ju_set_str(m, key, value);
}

/*
 * Copies the non-system entries of the template map `tmpl` into `dst` and
 * records their keys in `keys` (borrowed from the template).
 */
static bool copy_template_map(cJSON *dst, const cJSON *tmpl,
                              bool (*is_system)(const char *), strlist *keys)
{
	const cJSON *kv;
	cJSON_ArrayForEach(kv, tmpl) {
		if (!cJSON_IsString(kv) || is_system(kv->string))
			continue;
		if (!ju_set_str(dst, kv->string, kv->valuestring) ||
		    !strlist_add(keys, kv->string))
			return false;
	}
	return true;
}

/* Sets the labels every Pod of this Sandbox carries after the template's:
 * tracking label, extension labels, normalised created-by (docs/api.md#pod-management, #pod-metadata). */
static bool put_controller_labels(const sbx_plan *p, cJSON *labels)
{
	const char *warm, *tref;
	extension_labels(p, &warm, &tref);
	const char *cb = k8s_obj_label(p->sandbox, SBX_LABEL_CREATED_BY);
	return ju_set_str(labels, SBX_LABEL_NAME_HASH, p->hash) &&
	       map_put(labels, SBX_LABEL_WARM_POOL_SANDBOX, warm) &&
	       map_put(labels, SBX_LABEL_TEMPLATE_REF_HASH, tref) &&
	       map_put(labels, SBX_LABEL_CREATED_BY,
	               cb ? sbx_created_by_normalize(cb) : NULL);  /* normalised (docs/api.md#labels) */
}

/*
 * Pod volumes with the claim volumes merged in (docs/api.md#pod-management, StatefulSet-like):
 * template volumes named like a VCT are dropped, the others keep their
 * order, and one PVC volume per VCT is appended in VCT order.
 */
static bool merge_vct_volumes(const sbx_plan *p, cJSON *spec)
{
	const cJSON *vcts = k8s_obj_at(p->sandbox, "spec.volumeClaimTemplates");
	if (!cJSON_IsArray(vcts) || !vcts->child)
		return true;
	cJSON *vols = cJSON_GetObjectItemCaseSensitive(spec, "volumes");
	cJSON *merged = cJSON_CreateArray();
	if (!merged)
		return false;
	const cJSON *v, *vct;
	cJSON_ArrayForEach(v, vols) {
		bool replaced = false;
		cJSON_ArrayForEach(vct, vcts)
			if (ju_str_eq(ju_str(v, "name"), k8s_obj_name(vct)))
				replaced = true;
		if (!replaced && !cJSON_AddItemToArray(merged, cJSON_Duplicate(v, true)))
			goto fail;
	}
	cJSON_ArrayForEach(vct, vcts) {
		const char *vn = ju_nz(k8s_obj_name(vct));
		char *claim = ju_printf("%s-%s", vn, p->name);
		cJSON *vol = cJSON_CreateObject();
		bool ok = claim && vol && ju_set_str(vol, "name", vn) &&
		          ju_set_str(ju_obj(vol, "persistentVolumeClaim"),
		                     "claimName", claim);
		free(claim);
		if (!ok || !cJSON_AddItemToArray(merged, vol)) {
			cJSON_Delete(vol);
			goto fail;
		}
	}
	return ju_set(spec, "volumes", merged);
fail:
	cJSON_Delete(merged);
	return false;
}

/* The body of a new Pod (docs/api.md#pod-management "Running, no Pod ⇒ create"). */
static cJSON *pod_body(sbx_plan *p)
{
	const cJSON *tmd = k8s_obj_at(p->sandbox, "spec.podTemplate.metadata");
	strlist lkeys = { 0 }, akeys = { 0 };
	char *ljoined = NULL, *ajoined = NULL;
	cJSON *pod = cJSON_CreateObject();
	cJSON *md = ju_obj(pod, "metadata");
	cJSON *labels = md ? ju_obj(md, "labels") : NULL;
	cJSON *ann = cJSON_CreateObject();
	bool ok = labels && ann && ju_set_str(pod, "apiVersion", "v1") &&
	          ju_set_str(pod, "kind", "Pod") &&
	          ju_set_str(md, "name", p->name) &&
	          ju_set_str(md, "namespace", p->ns);

	ok = ok && copy_template_map(labels, cJSON_GetObjectItemCaseSensitive(tmd, "labels"),
	                             sbx_is_system_key, &lkeys) &&
	     put_controller_labels(p, labels);
	ok = ok && copy_template_map(ann, cJSON_GetObjectItemCaseSensitive(tmd, "annotations"),
	                             sbx_is_system_annotation, &akeys);
	/* The bookkeeping lists only when non-empty on create (docs/api.md#pod-management). */
	strlist_sort(&lkeys);
	strlist_sort(&akeys);
	if (ok && lkeys.len)
		ok = (ljoined = strlist_join(&lkeys, ',')) &&
		     ju_set_str(ann, SBX_ANNOTATION_PROPAGATED_LABELS, ljoined);
	if (ok && akeys.len)
		ok = (ajoined = strlist_join(&akeys, ',')) &&
		     ju_set_str(ann, SBX_ANNOTATION_PROPAGATED_ANNOTATIONS, ajoined);
	if (ok && ann->child) {
		ok = ju_set(md, "annotations", ann);
		ann = NULL;
	}
	ok = ok && ju_set(md, "ownerReferences",
	                  ju_controller_refs(p->name, p->uid));

	if (ok) {
		const cJSON *tspec = plan_pod_spec(p);
		cJSON *spec = tspec ? cJSON_Duplicate(tspec, true)
		                    : cJSON_CreateObject();
		ok = ju_set(pod, "spec", spec) && merge_vct_volumes(p, spec);
	}

	cJSON_Delete(ann);
	free(ljoined);
	free(ajoined);
	strlist_free(&lkeys);
	strlist_free(&akeys);
	if (!plan_ok(p, ok)) {
		cJSON_Delete(pod);
		return NULL;
	}
	return pod;
}

/*
 * Removes from `m` the keys listed in the tracking annotation value
 * `listed` that this pass no longer propagates (docs/api.md#pod-metadata): system keys (except
 * those in `keep`, a NULL-terminated list) and keys no longer in `copied`.
 */
static bool scrub_listed(cJSON *m, const char *listed, const strlist *copied,
                         bool (*is_system)(const char *),
                         const char *const *keep)
{
	strlist items = { 0 };
	char *buf = ju_split_commas(listed, &items);
	if (!buf)
		return false;
	for (size_t i = 0; i < items.len; i++) {
		const char *k = items.items[i];
		bool kept = false;
		for (const char *const *q = keep; *q; q++)
			if (strcmp(k, *q) == 0)
				kept = true;
		if (kept)
			continue;
		if (is_system(k) || !strlist_has(copied, k))
			cJSON_DeleteItemFromObjectCaseSensitive(m, k);
	}
	strlist_free(&items);
	free(buf);
	return true;
}

/*
 * Rewrites tracking annotation `key` in `ann` to the sorted list `keys`:
 * an absent annotation with an empty list stays absent, otherwise it is
 * set, possibly to "" (docs/api.md#pod-metadata).
 */
static bool put_tracking(cJSON *ann, const cJSON *orig, const char *key,
                         strlist *keys)
{
	if (!keys->len && !cJSON_GetObjectItemCaseSensitive(orig, key))
		return true;
	strlist_sort(keys);
	char *joined = strlist_join(keys, ',');
	bool ok = joined && ju_set_str(ann, key, joined);
	free(joined);
	return ok;
}

/*
 * Adds to `patch_md[field]` the merge-patch entries turning the string map
 * `orig` into `want`: changed or new keys set, vanished keys null.
 */
static bool diff_map(cJSON *patch_md, const char *field, const cJSON *orig,
                     const cJSON *want)
{
	cJSON *d = cJSON_CreateObject();
	if (!d)
		return false;
	bool ok = true;
	const cJSON *kv;
	cJSON_ArrayForEach(kv, want) {
		const char *was = ju_str(orig, kv->string);
		if (!was || !ju_str_eq(was, kv->valuestring))
			ok = ok && ju_set_str(d, kv->string, kv->valuestring);
	}
	cJSON_ArrayForEach(kv, orig)
		if (!cJSON_GetObjectItemCaseSensitive(want, kv->string))
			ok = ok && ju_set_null(d, kv->string);
	if (!d->child || !ok) {
		cJSON_Delete(d);
		return ok;
	}
	return ju_set(patch_md, field, d);
}

/*
 * The merge patch reconciling the metadata of the existing `pod` (docs/api.md#pod-metadata),
 * with the adopting owner references when `adopt`. *out is NULL when
 * nothing changes. Returns false on allocation failure.
 */
static bool pod_metadata_patch(sbx_plan *p, const cJSON *pod, bool adopt,
                               cJSON **out)
{
	static const char *const keep_labels[] = { SBX_LABEL_NAME_HASH, NULL };
	static const char *const keep_ann[] = { SBX_ANNOTATION_PROPAGATED_LABELS,
	                                        SBX_ANNOTATION_PROPAGATED_ANNOTATIONS,
	                                        NULL };
	const cJSON *tmd = k8s_obj_at(p->sandbox, "spec.podTemplate.metadata");
	const cJSON *ol = k8s_obj_at(pod, "metadata.labels");
	const cJSON *oa = k8s_obj_at(pod, "metadata.annotations");
	cJSON *labels = cJSON_IsObject(ol) ? cJSON_Duplicate(ol, true) : cJSON_CreateObject();
	cJSON *ann = cJSON_IsObject(oa) ? cJSON_Duplicate(oa, true) : cJSON_CreateObject();
	cJSON *patch = cJSON_CreateObject();
	cJSON *md = ju_obj(patch, "metadata");
	strlist lkeys = { 0 }, akeys = { 0 };
	*out = NULL;

	bool ok = labels && ann && md &&
	          ju_set_str(labels, SBX_LABEL_NAME_HASH, p->hash) &&
	          copy_template_map(labels, cJSON_GetObjectItemCaseSensitive(tmd, "labels"),
	                            sbx_is_system_key, &lkeys) &&
	          scrub_listed(labels, ju_str(oa, SBX_ANNOTATION_PROPAGATED_LABELS),
	                       &lkeys, sbx_is_system_key, keep_labels) &&
	          put_controller_labels(p, labels) &&
	          copy_template_map(ann, cJSON_GetObjectItemCaseSensitive(tmd, "annotations"),
	                            sbx_is_system_annotation, &akeys) &&
	          scrub_listed(ann, ju_str(oa, SBX_ANNOTATION_PROPAGATED_ANNOTATIONS),
	                       &akeys, sbx_is_system_annotation, keep_ann) &&
	          put_tracking(ann, oa, SBX_ANNOTATION_PROPAGATED_LABELS, &lkeys) &&
	          put_tracking(ann, oa, SBX_ANNOTATION_PROPAGATED_ANNOTATIONS, &akeys) &&
	          diff_map(md, "labels", ol, labels) &&
	          diff_map(md, "annotations", oa, ann);
	if (ok && adopt)
		ok = ju_set(md, "ownerReferences",
		            ju_adopted_owner_refs(pod, p->name, p->uid));
	cJSON_Delete(labels);
	cJSON_Delete(ann);
	strlist_free(&lkeys);
	strlist_free(&akeys);
	if (ok && md->child)
		*out = patch;
	else
		cJSON_Delete(patch);
	return ok;
}

/* Sets the pod the status will read (a copy) and its ownership. */
static void set_pod_result(sbx_plan *p, const cJSON *pod, k8s_owner_class owner)
{
	cJSON_Delete(p->pod_result);
	p->pod_result = NULL;
	p->pod_owner = owner;
	if (pod) {
		p->pod_result = cJSON_Duplicate(pod, true);
		plan_ok(p, p->pod_result != NULL);
	}
}

static bool same_uid(const cJSON *a, const cJSON *b)
{
	const char *ua = k8s_obj_uid(a), *ub = k8s_obj_uid(b);
	return ua && ub && strcmp(ua, ub) == 0;
}

/*
 * Write-behind (docs/api.md#pod-metadata last bullet): whether the metadata patch of an
 * already-owned Pod waits this pass. It waits from the first pass that
 * needs it for min(window, 1 s); the pass after that writes it, with
 * whatever the template says by then (edits in between coalesce).
 */
static bool defer_pod_patch(sbx_plan *p)
{
	if (p->write_behind_window_ms <= 0)
		return false;
	long bound = p->write_behind_window_ms < SBX_WRITE_BEHIND_POD_MAX_MS
	             ? p->write_behind_window_ms : SBX_WRITE_BEHIND_POD_MAX_MS;
	int64_t since = p->deferred_since_in > 0 && p->deferred_since_in <= p->now_ms
	                ? p->deferred_since_in : p->now_ms;
	int64_t left = since + bound - p->now_ms;
	if (left <= 0)
		return false;
	p->deferred_since = since;
	p->deferred_left_ms = (long)left;
	return true;
}

/*
 * A Pod of the index that this Sandbox controls. The index is by label
 * value only and spans namespaces (docs/api.md#sandbox-watches lists "in namespace"); an owner
 * reference names an owner in the dependent's own namespace, so a pod
 * elsewhere carrying our UID is not ours (and must never be counted or
 * reported).
 */
static bool owned_here(const sbx_plan *p, const cJSON *pod)
{
	const char *ns = k8s_obj_namespace(pod);
	return (ju_empty(ns) || strcmp(ns, p->ns) == 0) &&
	       k8s_obj_owner_class(pod, p->uid) == K8S_OWNER_THIS;
}

/* Running mode with an existing pod (docs/api.md#pod-management): refuse, adopt, reconcile. */
static void plan_existing_pod(sbx_plan *p, const cJSON *pod, k8s_owner_class owner,
                              const char **annot)
{
	const char *pname = ju_nz(k8s_obj_name(pod));
	if (owner == K8S_OWNER_OTHER) {
		if (*annot) {
			plan_sandbox_annotation(p, SBX_ANNOTATION_POD_NAME, NULL);
			*annot = NULL;
		}
		plan_fail_owned_by_other(p, SBX_STEP_POD, "pod", pod);
		return;
	}
	if (owner == K8S_OWNER_NONE && !plan_adoptable(p, pod)) {
		plan_fail_not_adoptable(p, SBX_STEP_POD, "pod", pname);
		return;
	}
	cJSON *patch = NULL;
	if (!plan_ok(p, pod_metadata_patch(p, pod, owner == K8S_OWNER_NONE, &patch)))
		return;
	if (patch && owner == K8S_OWNER_THIS && defer_pod_patch(p)) {
		/* Metadata only, on a Pod we already own: may wait. */
		cJSON_Delete(patch);
		patch = NULL;
	}
	if (patch) {
		plan_action *a = plan_add(p, SBX_STEP_POD, SBX_VERB_PATCH, SBX_OBJ_POD,
		                          pname, patch, "failed to patch pod");
		if (a)
			a->yields_pod = true;
	}
	set_pod_result(p, pod, K8S_OWNER_THIS);
	if (ju_empty(*annot))
		plan_sandbox_annotation(p, SBX_ANNOTATION_POD_NAME, pname);
}

void plan_pod(sbx_plan *p)
{
	set_pod_result(p, NULL, K8S_OWNER_NONE);
	p->multiple_pods = false;
	p->deferred_since = 0;
	p->deferred_left_ms = 0;
	plan_idle_annotation(p);
	if (p->pods_error) {
		plan_fail(p, SBX_STEP_POD, "failed to list pods: %s", p->pods_error);
		return;
	}
	if (p->pod_error) {
		plan_fail(p, SBX_STEP_POD, "failed to get pod: %s", p->pod_error);
		return;
	}

	/* The annotation as this pass leaves it, NULL once removed. Removal
	 * goes by presence ("if present", docs/api.md#pod-management), even of an empty value; the
	 * pod name it resolves to (reconciler.c) and the "only written if
	 * empty" rule go by value. */
	const char *annot = k8s_obj_annotation(p->sandbox, SBX_ANNOTATION_POD_NAME);
	/* An annotation naming the Sandbox itself while no such pod exists
	 * stays: the create below would write it again (a warm pool names its
	 * members' pods when it creates them, saving that write). */
	if (!p->pod && annot && !ju_str_eq(annot, p->name)) {
		plan_sandbox_annotation(p, SBX_ANNOTATION_POD_NAME, NULL);
		annot = NULL;
	}

	/* The Pods this Sandbox controls, by UID, each counted once; only the
	 * first one is kept (more than one is refused below). */
	const cJSON *first_owned = NULL;
	int n_owned = 0;
	const cJSON *o, *q;
	cJSON_ArrayForEach(o, p->pods) {
		if (!owned_here(p, o))
			continue;
		bool seen = false;
		for (q = p->pods->child; q != o && !seen; q = q->next)
			seen = same_uid(q, o) && owned_here(p, q);
		if (seen)
			continue;
		if (!n_owned++)
			first_owned = o;
	}
	if (p->pod && k8s_obj_owner_class(p->pod, p->uid) == K8S_OWNER_THIS) {
		bool listed = false;
		cJSON_ArrayForEach(o, p->pods)
			listed = listed || same_uid(o, p->pod);
		if (!listed && !n_owned++)
			first_owned = p->pod;
	}
	if (n_owned > 1) {
		p->multiple_pods = true;
		plan_fail(p, SBX_STEP_POD, "multiple Pods (%d) are controlled by this "
		          "Sandbox; refusing to choose or create a Pod", n_owned);
		return;
	}

	const cJSON *pod = NULL;
	k8s_owner_class owner = K8S_OWNER_NONE;
	if (n_owned == 1) {
		/* An owned pod always wins over the annotated/named one. */
		if (!p->pod || !same_uid(p->pod, first_owned)) {
			if (annot)
				plan_sandbox_annotation(p, SBX_ANNOTATION_POD_NAME, NULL);
			annot = NULL;
		}
		pod = first_owned;
		owner = K8S_OWNER_THIS;
	} else if (p->pod) {
		pod = p->pod;
		owner = k8s_obj_owner_class(pod, p->uid);
	}

	if (p->suspended) {
		if (pod && owner == K8S_OWNER_THIS) {
			if (!k8s_obj_is_deleting(pod)) {
				plan_action *a = plan_add(p, SBX_STEP_POD, SBX_VERB_DELETE,
				                          SBX_OBJ_POD, k8s_obj_name(pod), NULL,
				                          "failed to delete pod");
				if (a) {
					a->pub.not_found_ok = true;
					a->keeps_pod = true;
				}
			}
			/* The pod-name annotation stays while the owned pod exists. */
			set_pod_result(p, pod, K8S_OWNER_THIS);
			return;
		}
		if (annot)
			plan_sandbox_annotation(p, SBX_ANNOTATION_POD_NAME, NULL);
		set_pod_result(p, pod, owner);
		return;
	}

	if (pod) {
		plan_existing_pod(p, pod, owner, &annot);
		return;
	}
	cJSON *body = pod_body(p);
	if (!body)
		return;
	plan_action *a = plan_add(p, SBX_STEP_POD, SBX_VERB_CREATE, SBX_OBJ_POD,
	                          p->name, body, "failed to create pod");
	if (!a)
		return;
	a->yields_pod = true;
	set_pod_result(p, body, K8S_OWNER_THIS);
	if (ju_empty(annot))
		plan_sandbox_annotation(p, SBX_ANNOTATION_POD_NAME, p->name);
}

void plan_pod_teardown(sbx_plan *p)
{
	/* Only the pod by resolved name, and only when owned (docs/api.md#sandbox-expiry). */
	if (p->pod_error) {
		plan_fail(p, SBX_STEP_POD, "failed to get pod: %s", p->pod_error);
		return;
	}
	if (p->pod && k8s_obj_owner_class(p->pod, p->uid) == K8S_OWNER_THIS) {
		plan_action *a = plan_add(p, SBX_STEP_POD, SBX_VERB_DELETE, SBX_OBJ_POD,
		                          k8s_obj_name(p->pod), NULL,
		                          "failed to delete pod");
		if (a)
			a->pub.not_found_ok = true;
	}
}
