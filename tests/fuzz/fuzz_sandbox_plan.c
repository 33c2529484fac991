/*
 * libFuzzer target: object decoding and the Sandbox reconcile decision on
 * hostile objects. The input is a JSON document {"sandbox":..., "pods":[...],
 * "pod":..., "service":..., "pvcs":[...]}; whatever shapes the fields have,
 * planning, executing (every action "succeeds") and computing the outcome
 * and status patch must not crash or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/object.h"
#include "sandbox/reconcile.h"
#include "sandbox/reconciler.h"

static int apply_ok(const sbx_action *a, const char *ns, cJSON **result, void *ud)
{
	(void)ns;
	(void)ud;
	*result = a->body ? cJSON_Duplicate(a->body, 1) : NULL;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	cJSON *in = cJSON_Parse(text);
	free(text);
	if (!in)
		return 0;
	/* the informer transform and index see every object first */
	cJSON *pod = cJSON_GetObjectItem(in, "pod");
	if (pod) {
		const char *keys[4];
		sbx_pod_index_name_hash(pod, keys, 4, NULL);
		char *owner = sbx_owner_sandbox_key(pod);
		free(owner);
		cJSON *copy = sbx_pod_transform(cJSON_Duplicate(pod, 1), NULL);
		cJSON_Delete(copy);
	}
	sbx_observed obs = { 0 };
	obs.sandbox = cJSON_GetObjectItem(in, "sandbox");
	obs.pods = cJSON_GetObjectItem(in, "pods");
	obs.pod = pod;
	obs.service = cJSON_GetObjectItem(in, "service");
	obs.pvcs = cJSON_GetObjectItem(in, "pvcs");
	obs.now_ms = 1795959592000LL;
	sbx_plan *plan = NULL;
	if (sbx_plan_new(&plan, &obs) == 0) {
		sbx_executor ex = { apply_ok, NULL, NULL };
		sbx_plan_execute(plan, &ex);
		sbx_outcome out;
		if (sbx_plan_outcome(plan, obs.now_ms + 1000, &out) == 0) {
			if (out.status) {
				cJSON *p = sbx_status_patch(k8s_obj_at(obs.sandbox, "status"), out.status);
				cJSON_Delete(p);
			}
			sbx_outcome_dispose(&out);
		}
		sbx_plan_free(plan);
	}
	cJSON_Delete(in);
	asb_error_clear();
	return 0;
}
