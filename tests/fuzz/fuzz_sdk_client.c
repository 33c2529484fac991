/*
 * libFuzzer target: the pure parts of libsandbox's client side on hostile
 * input. The first line is a path and a Gateway address (sbx_path_guard,
 * sbx_gateway_address_valid); the rest is JSON taken as a SandboxClaim seen
 * on a watch (sbx_claim_outcome in both modes, sbx_pick_pod_ip on its
 * status) and as claim options ("labels", "podLabels", "annotations":
 * objects of strings; "vct": a string of JSON; "after": a number) built
 * into a manifest (sbx_claim_build). Nothing may crash or leak; a path the
 * guard accepts must not escape ("..") or be empty.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/object.h"
#include "sandbox/clientclaim.h"
#include "sandbox/handle.h"

/* The string members of object `key` of `in` as sbx_kv (borrowed). */
static size_t kvs(const cJSON *in, const char *key, sbx_kv *out, size_t cap)
{
	const cJSON *it;
	size_t n = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(in, key)) {
		if (n < cap && it->string && cJSON_IsString(it)) {
			out[n].key = it->string;
			out[n].value = it->valuestring;
			n++;
		}
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	char *nl = strchr(text, '\n');
	char *json = nl ? nl + 1 : text + size;
	if (nl)
		*nl = '\0';

	char *guarded = NULL;
	if (sbx_path_guard(text, &guarded) == 0) {
		if (!guarded[0] || strcmp(guarded, "..") == 0 || strncmp(guarded, "../", 3) == 0 ||
		    strstr(guarded, "/../") || (strlen(guarded) >= 3 &&
		                                strcmp(guarded + strlen(guarded) - 3, "/..") == 0))
			abort();  /* the guard let an escaping or empty path through */
		sbx_free(guarded);
	}
	(void)sbx_gateway_address_valid(text);

	cJSON *in = cJSON_Parse(json);
	if (in) {
		const char *name, *reason, *message;
		(void)sbx_claim_outcome(in, true, &name, &reason, &message);
		(void)sbx_claim_outcome(in, false, &name, &reason, &message);
		char ip[SBX_IP_SIZE];
		(void)sbx_pick_pod_ip(k8s_obj_at(in, "status.sandbox.podIPs"), ip);
		(void)sbx_pick_pod_ip(in, ip);

		sbx_kv labels[16], plabels[16], ann[16];
		sbx_claim_options o = SBX_CLAIM_OPTIONS_INIT;
		o.warm_pool = "pool";
		o.labels = labels;
		o.nlabels = kvs(in, "labels", labels, 16);
		o.pod_labels = plabels;
		o.npod_labels = kvs(in, "podLabels", plabels, 16);
		o.annotations = ann;
		o.nannotations = kvs(in, "annotations", ann, 16);
		const cJSON *vct = cJSON_GetObjectItem(in, "vct");
		o.volume_claim_templates_json = cJSON_IsString(vct) ? vct->valuestring : NULL;
		const cJSON *after = cJSON_GetObjectItem(in, "after");
		o.shutdown_after_seconds = cJSON_IsNumber(after) && after->valuedouble > -1e9 &&
		                           after->valuedouble < 1e9 ? (int64_t)after->valuedouble : 0;
		cJSON *claim = NULL;
		if (sbx_claim_build(&o, "ns", "sandbox-claim-00000000", 1767323045123456LL, &claim) == 0)
			cJSON_Delete(claim);
		cJSON_Delete(in);
	}
	free(text);
	return 0;
}
