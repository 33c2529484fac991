/*
 * libFuzzer target: decoding what the API server sends back. The input is
 * an answer body: it is classified as a failure Status into a typed error
 * (with details.causes folded into the message) under several HTTP codes,
 * read with every object accessor of k8s/object.h, and, as a Pod, put
 * through the informer's diet and the compact Pod codec (podcache.h),
 * whose round trip must give the diet back, and packed (k8s/packed.h) as
 * the controller caches Sandboxes and Pods, whose round trip must print
 * the same text, with the same resourceVersion and every part reached by
 * k8s_packer_unpack_at() as k8s_obj_at() finds it: a difference aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/object.h"
#include "k8s/packed.h"
#include "sandbox/cache.h"
#include "sandbox/podcache.h"
#include "sandbox/reconciler.h"
#include "status.h"

static void accessors(const cJSON *o)
{
	static const char *const paths[] = {
		"metadata.name", "status.podIP", "details.causes", "spec.nodeName",
		"metadata", "", ".", "a..b", "status.conditions",
	};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		k8s_obj_at(o, paths[i]);
		k8s_obj_str(o, paths[i]);
	}
	k8s_obj_name(o);
	k8s_obj_namespace(o);
	k8s_obj_uid(o);
	k8s_obj_resource_version(o);
	k8s_obj_generation(o);
	k8s_obj_is_deleting(o);
	k8s_obj_label(o, "agents.x-k8s.io/sandbox-name-hash");
	k8s_obj_annotation(o, "agents.x-k8s.io/propagated-labels");
	k8s_obj_controller_ref(o);
	free(k8s_obj_key(o));
	const char *name = k8s_obj_name(o);
	char *ns = NULL, *nm = NULL;
	if (name && k8s_key_split(name, &ns, &nm) == 0) {
		free(ns);
		free(nm);
	}
	int64_t ms;
	char buf[64];
	const char *ts = k8s_obj_str(o, "metadata.creationTimestamp");
	if (ts && k8s_time_parse(ts, &ms) == 0)
		k8s_time_format(ms, buf, sizeof(buf));
}

/* The informer's path for Pods: diet, decode, encode; the round trip must
 * give the diet back (exactly as text when the struct fell back to JSON). */
static void pod_codec(const cJSON *o)
{
	cJSON *diet = sbx_pod_transform(cJSON_Duplicate(o, 1), NULL);
	if (!diet)
		return;
	sbx_pod *p = NULL;
	if (sbx_pod_decode(diet, &p) == 0) {
		sbx_pod_label(p, "app");
		sbx_pod_condition_get(p, "Ready");
		cJSON *back = sbx_pod_encode(p);
		if (back) {
			bool same;
			if (p->json) {
				char *a = cJSON_PrintUnformatted(diet), *b = cJSON_PrintUnformatted(back);
				same = a && b && strcmp(a, b) == 0;
				free(a);
				free(b);
			} else {
				same = cJSON_Compare(diet, back, 1);
			}
			if (!same) {
				fprintf(stderr, "pod codec round trip differs\n");
				abort();
			}
			cJSON_Delete(back);
		}
		sbx_pod_free(p);
	}
	cJSON_Delete(diet);
}

static bool same_text(const cJSON *a, const cJSON *b)
{
	char *x = cJSON_PrintUnformatted(a), *y = cJSON_PrintUnformatted(b);
	bool same = (!x && !y) || (x && y && strcmp(x, y) == 0);
	free(x);
	free(y);
	return same;
}

/* Packed and back (an out-of-memory NULL is no difference). */
static void packed(const cJSON *o)
{
	static k8s_packer *pk;
	if (!pk && sbx_packer_new(&pk) != 0)
		return;
	k8s_packed *p = NULL;
	if (k8s_packer_pack(pk, o, &p) != 0)
		return;
	cJSON *back = k8s_packer_unpack(pk, p);
	if (back && !same_text(o, back)) {
		fprintf(stderr, "packed round trip differs\n");
		abort();
	}
	const char *rv = k8s_packed_resource_version(p), *want = k8s_obj_resource_version(o);
	if ((rv == NULL) != (want == NULL) || (rv && strcmp(rv, want) != 0)) {
		fprintf(stderr, "packed resourceVersion differs\n");
		abort();
	}
	static const char *const paths[] = { "metadata", "status.conditions", "spec", "metadata.name",
	                                     "", "a..b", "status" };
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const cJSON *at = *paths[i] ? k8s_obj_at(o, paths[i]) : o;
		cJSON *part = k8s_packer_unpack_at(pk, p, paths[i]);
		if (part ? !at || !same_text(at, part) : at && back) {
			fprintf(stderr, "packed part %s differs\n", paths[i]);
			abort();
		}
		cJSON_Delete(part);
	}
	cJSON_Delete(back);
	k8s_packed_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int codes[] = { 400, 404, 409, 410, 422, 429, 500, 503, 504, 418 };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		k8s__status_record(codes[i], (const char *)data, size, "Pod \"ns/name\"");
	k8s__status_record(404, (const char *)data, size, NULL);
	const asb_error *e = asb_error_last();
	if (!e->message || !e->reason)
		abort();

	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	cJSON *o = cJSON_Parse(text);
	free(text);
	if (o) {
		/* a watch ERROR event carries the Status as its object */
		const cJSON *inner = cJSON_GetObjectItemCaseSensitive(o, "object");
		k8s__status_record_json(o, 0, "Pod \"ns/name\"");
		k8s__status_record_json(inner ? inner : o, 410, NULL);
		accessors(o);
		pod_codec(o);
		packed(o);
		if (inner) {
			accessors(inner);
			pod_codec(inner);
		}
		cJSON_Delete(o);
	}
	asb_error_clear();
	return 0;
}
