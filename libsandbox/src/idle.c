/*
 * idle.c - the idle policy of a Sandbox and its clock (sandbox/idle.h).
 */
#include <string.h>
#include "k8s/object.h"
#include "sandbox/idle.h"
#include "jsonutil.h"

void sbx_idle_policy_at(const cJSON *obj, const char *path, sbx_idle_policy *out)
{
	memset(out, 0, sizeof(*out));
	const cJSON *holder = obj && path ? k8s_obj_at(obj, path) : NULL;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(holder, "idleTimeoutSeconds");
	/* The CRD bounds it; an object stored before the CRD did (or read from
	 * elsewhere) is clamped rather than trusted with an overflow. */
	if (!cJSON_IsNumber(t) || t->valuedouble < 1)
		return;
	double s = t->valuedouble > SBX_IDLE_TIMEOUT_MAX_SECONDS
	         ? SBX_IDLE_TIMEOUT_MAX_SECONDS : t->valuedouble;
	out->timeout_ms = (int64_t)s * 1000;
	out->action = ju_str_eq(ju_str(holder, "idlePolicy"), SBX_IDLE_POLICY_DELETE)
	            ? SBX_IDLE_DELETE : SBX_IDLE_SUSPEND;
}

void sbx_idle_policy_of(const cJSON *sandbox, sbx_idle_policy *out)
{
	sbx_idle_policy_at(sandbox, "spec", out);
}

static int64_t time_at(const char *s)
{
	int64_t ms;
	return s && *s && k8s_time_parse(s, &ms) == 0 ? ms : 0;
}

int64_t sbx_idle_last_activity_ms(const cJSON *sandbox)
{
	if (!sandbox)
		return 0;
	int64_t last = time_at(k8s_obj_annotation(sandbox, SBX_ANNOTATION_LAST_ACTIVITY));
	int64_t created = time_at(k8s_obj_str(sandbox, "metadata.creationTimestamp"));
	if (created > last)
		last = created;
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(sandbox, "status.conditions")) {
		if (ju_str_eq(ju_str(c, "type"), SBX_CONDITION_READY) &&
		    ju_str_eq(ju_str(c, "status"), "True")) {
			int64_t ready = time_at(ju_str(c, "lastTransitionTime"));
			if (ready > last)
				last = ready;
		}
	}
	return last;
}

static bool suspended(const cJSON *sandbox)
{
	return ju_str_eq(k8s_obj_str(sandbox, "spec.operatingMode"),
	                 SBX_OPERATING_MODE_SUSPENDED);
}

bool sbx_idle_applies(const cJSON *sandbox)
{
	sbx_idle_policy pol;
	sbx_idle_policy_of(sandbox, &pol);
	if (pol.action == SBX_IDLE_OFF || k8s_obj_is_deleting(sandbox) || suspended(sandbox))
		return false;
	const char *pool = k8s_obj_label(sandbox, SBX_LABEL_WARM_POOL_SANDBOX);
	if (pool && *pool)
		return false;
	/* Only a Sandbox that runs can be idle: one starting or being resumed
	 * (spec Running, status still Suspended) is judged once Ready turns
	 * True, whose transition time then starts its clock. */
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(sandbox, "status.conditions"))
		if (ju_str_eq(ju_str(c, "type"), SBX_CONDITION_READY))
			return ju_str_eq(ju_str(c, "status"), "True");
	return false;
}

int64_t sbx_idle_due_ms(const cJSON *sandbox)
{
	if (!sbx_idle_applies(sandbox))
		return 0;
	sbx_idle_policy pol;
	sbx_idle_policy_of(sandbox, &pol);
	int64_t last = sbx_idle_last_activity_ms(sandbox);
	return last > 0 ? last + pol.timeout_ms : 0;
}

bool sbx_idle_delete_pending(const cJSON *sandbox)
{
	sbx_idle_policy pol;
	sbx_idle_policy_of(sandbox, &pol);
	return sandbox && pol.action == SBX_IDLE_DELETE && suspended(sandbox) &&
	       k8s_obj_annotation(sandbox, SBX_ANNOTATION_IDLE_SUSPENDED_AT) &&
	       !k8s_obj_is_deleting(sandbox);
}

bool sbx_idle_resumable(const cJSON *sandbox)
{
	sbx_idle_policy pol;
	sbx_idle_policy_of(sandbox, &pol);
	return sandbox && pol.action == SBX_IDLE_SUSPEND && suspended(sandbox) &&
	       !k8s_obj_is_deleting(sandbox);
}

const char *sbx_idle_controlling_claim(const cJSON *sandbox)
{
	const cJSON *ref = k8s_obj_controller_ref(sandbox);
	const char *api = ju_str(ref, "apiVersion");
	size_t g = strlen(SBX_EXTENSIONS_GROUP);
	if (!ref || !ju_str_eq(ju_str(ref, "kind"), SBX_KIND_CLAIM) || !api ||
	    strncmp(api, SBX_EXTENSIONS_GROUP, g) != 0 || api[g] != '/')
		return NULL;
	const char *name = ju_str(ref, "name");
	return name && *name ? name : NULL;
}

int64_t sbx_idle_publish_interval_ms(int64_t timeout_ms)
{
	int64_t q = timeout_ms / 4;
	return q > SBX_IDLE_PUBLISH_MIN_MS ? q : SBX_IDLE_PUBLISH_MIN_MS;
}
