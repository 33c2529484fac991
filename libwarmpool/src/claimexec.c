/*
 * claimexec.c - the default executor of a claim pass (claimexec.h): cache
 * reads from the informers, the rest through the k8s client and the event
 * recorder, exactly the calls claimctl.c made before its I/O was a table.
 */
#include "claimexec.h"
#include "sandbox/api.h"
#include "warmpool/api.h"
#include "jsonutil.h"
#include "k8s/object.h"

static k8s_informer *informer_of(const wp_claim_k8s *k, const k8s_resource *r)
{
	if (r == &wp_resource_claims)
		return k->claims;
	if (r == &sbx_resource_sandboxes)
		return k->sandboxes;
	if (r == &wp_resource_pools)
		return k->pools;
	if (r == &wp_resource_templates)
		return k->templates;
	if (r == &wp_resource_networkpolicies)
		return k->networkpolicies;
	return NULL;
}

static int k_cached(void *ud, const k8s_resource *r, const char *ns, const char *name,
                    cJSON **out)
{
	k8s_informer *inf = informer_of(ud, r);
	if (!inf)
		return asb_error_set(ASB_EINVAL, 0, NULL, "claim executor: no cache of %s",
		                     r->resource);
	return k8s_informer_get(inf, ns, name, out);
}

static int k_controlled(void *ud, const char *ns, const char *claim_uid, cJSON **out)
{
	wp_claim_k8s *k = ud;
	cJSON *list = NULL;
	*out = NULL;
	int rc = k8s_informer_by_index(k->sandboxes, WP_CLAIM_INDEX_CONTROLLER, claim_uid, &list);
	if (rc)
		return rc;
	cJSON *it;
	cJSON_ArrayForEach(it, list) {
		if (ju_str_eq(k8s_obj_namespace(it), ns)) {
			*out = cJSON_DetachItemViaPointer(list, it);
			break;
		}
	}
	cJSON_Delete(list);
	return *out ? 0 : ASB_ENOTFOUND;
}

static int k_get(void *ud, const k8s_resource *r, const char *ns, const char *name, cJSON **out)
{
	return k8s_client_get(((wp_claim_k8s *)ud)->client, r, ns, name, out);
}

static int k_patch(void *ud, const k8s_resource *r, const char *ns, const char *name,
                   const char *subresource, const cJSON *patch, cJSON **out)
{
	return k8s_client_patch(((wp_claim_k8s *)ud)->client, r, ns, name, subresource,
	                        K8S_PATCH_MERGE, patch, NULL, out);
}

static int k_create(void *ud, const k8s_resource *r, const char *ns, const cJSON *obj,
                    cJSON **out)
{
	return k8s_client_create(((wp_claim_k8s *)ud)->client, r, ns, obj, NULL, out);
}

static int k_del(void *ud, const k8s_resource *r, const char *ns, const char *name,
                 const k8s_delete_options *opts)
{
	return k8s_client_delete(((wp_claim_k8s *)ud)->client, r, ns, name, opts, NULL);
}

static void k_event(void *ud, const cJSON *claim, const char *reason, const char *action,
                    const char *note)
{
	wp_claim_k8s *k = ud;
	k8s_event_ref ref;
	if (k->events && k8s_event_ref_from(claim, WP_API_VERSION, SBX_KIND_CLAIM, &ref) == 0)
		k8s_event_record(k->events, &ref, NULL, K8S_EVENT_NORMAL, reason, action, note);
}

void wp_claim_executor_k8s(wp_claim_executor *ex, wp_claim_k8s *k)
{
	*ex = (wp_claim_executor){ k_cached, k_controlled, k_get, k_patch, k_create, k_del, k_event, k };
}
