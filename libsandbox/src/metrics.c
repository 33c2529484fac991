/*
 * metrics.c - the `agent_sandboxes` gauge (metrics.h, docs/api.md#metrics):
 * label values of one Sandbox, counting per tuple, and the collector that
 * reads the Sandbox cache at scrape time.
 *
 * Counting sorts the tuples (pointers into the listed objects, nothing
 * copied) and runs through equal neighbours, so a scrape costs one cache
 * list and one sort, and the samples come out in a stable order.
 */
#include <stdlib.h>
#include <string.h>
#include "sandbox/metrics.h"
#include "jsonutil.h"
#include "k8s/informer.h"
#include "k8s/object.h"

#define NLABELS SBX_SANDBOXES_METRIC_NLABELS

const char *const sbx_sandboxes_metric_labels[NLABELS + 1] = {
	"namespace", "ready_condition", "expired", "launch_type",
	"sandbox_template", "owned_by", "created_by", NULL,
};

const char *sbx_created_by_normalize(const char *value)
{
	static const char *const known[] = { "go-client", "python-client", "controller" };
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (ju_str_eq(value, known[i]))
			return known[i];
	return "unknown";
}

/* The condition of type `type` in status.conditions, or NULL. */
static const cJSON *condition(const cJSON *obj, const char *type)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(obj, "status.conditions"))
		if (ju_str_eq(ju_str(c, "type"), type))
			return c;
	return NULL;
}

/* SandboxClaim / SandboxWarmPool when the controller reference is one of
 * the extensions group (version ignored, docs/api.md#ownership), else None. */
static const char *owned_by(const cJSON *sandbox)
{
	const cJSON *ref = k8s_obj_controller_ref(sandbox);
	char group[128];
	if (!ref || strcmp(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	                   SBX_EXTENSIONS_GROUP) != 0)
		return "None";
	const char *kind = ju_str(ref, "kind");
	if (ju_str_eq(kind, SBX_KIND_CLAIM))
		return SBX_KIND_CLAIM;
	if (ju_str_eq(kind, SBX_KIND_WARM_POOL))
		return SBX_KIND_WARM_POOL;
	return "None";
}

void sbx_sandboxes_metric_values(const cJSON *sandbox, const char *values[NLABELS])
{
	const cJSON *ready = condition(sandbox, SBX_CONDITION_READY);
	const char *tmpl = k8s_obj_annotation(sandbox, SBX_ANNOTATION_SANDBOX_TEMPLATE_REF);

	values[0] = ju_nz(k8s_obj_namespace(sandbox));
	values[1] = ju_str_eq(ju_str(ready, "status"), "True") ? "true" : "false";
	values[2] = ju_str_eq(ju_str(ready, "reason"), SBX_REASON_SANDBOX_EXPIRED) ? "true" : "false";
	values[3] = ju_str_eq(k8s_obj_label(sandbox, SBX_LABEL_LAUNCH_TYPE), "warm") ? "warm" : "cold";
	values[4] = ju_empty(tmpl) ? "unknown" : tmpl;
	values[5] = owned_by(sandbox);
	values[6] = sbx_created_by_normalize(k8s_obj_label(sandbox, SBX_LABEL_CREATED_BY));
}

typedef struct {
	const char *v[NLABELS];
} tuple;

static int tuple_cmp(const void *a, const void *b)
{
	const tuple *x = a, *y = b;
	for (int i = 0; i < NLABELS; i++) {
		int c = strcmp(x->v[i], y->v[i]);
		if (c)
			return c;
	}
	return 0;
}

int sbx_sandboxes_count(const cJSON *sandboxes, sbx_sandboxes_count_fn fn, void *userdata)
{
	int n = cJSON_IsArray(sandboxes) ? cJSON_GetArraySize(sandboxes) : 0;
	if (n == 0)
		return 0;
	tuple *t = malloc((size_t)n * sizeof(*t));
	if (!t)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory counting sandboxes");
	int i = 0;
	const cJSON *s;
	cJSON_ArrayForEach(s, sandboxes)
		sbx_sandboxes_metric_values(s, t[i++].v);
	qsort(t, (size_t)n, sizeof(*t), tuple_cmp);

	int rc = 0;
	for (int start = 0; start < n && rc == 0;) {
		int end = start + 1;
		while (end < n && tuple_cmp(&t[start], &t[end]) == 0)
			end++;
		rc = fn(t[start].v, NLABELS, end - start, userdata);
		start = end;
	}
	free(t);
	return rc;
}

static int emit(const char *const *values, size_t n, double count, void *userdata)
{
	return asb_metrics_emit(userdata, values, n, count);
}

void sbx_sandboxes_collect(asb_metrics_emitter *e, void *userdata)
{
	cJSON *list = NULL;
	if (k8s_informer_list(userdata, NULL, &list) == 0)
		sbx_sandboxes_count(list, emit, e);
	cJSON_Delete(list);
}
