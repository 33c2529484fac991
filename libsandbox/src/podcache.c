/*
 * podcache.c - Pods as compact structs for the informer cache (podcache.h).
 *
 * sbx_pod_decode() walks the object twice with the same code: the first
 * pass counts array entries and string bytes, the second fills one
 * allocation laid out as [sbx_pod][labels][annotations][owner refs]
 * [conditions][pod IPs][strings]. Values that nearly every Pod repeats
 * ("True", "Ready", "v1"...) point to static constants instead of being
 * copied. Anything the fields cannot represent makes the object
 * "non-canonical": its compact JSON text is kept too, and encoding parses
 * that, so a round trip never loses a member.
 */
#include <stdlib.h>
#include <string.h>
#include "sandbox/podcache.h"

/* Shared by most Pods; a cached Pod points at these rather than copying. */
static const char *const well_known[] = {
	"", "True", "False", "Unknown", "v1", "Pod",
	"Ready", "ContainersReady", "Initialized", "PodScheduled",
	"PodReadyToStartContainers", "DisruptionTarget",
	"Pending", "Running", "Succeeded", "Failed",
	"agents.x-k8s.io/v1alpha1", "agents.x-k8s.io/v1beta1", "Sandbox",
	"agents.x-k8s.io/sandbox-name-hash", "agents.x-k8s.io/propagated-labels",
	"agents.x-k8s.io/propagated-annotations", "agents.x-k8s.io/pod-name",
};

static const char *well_known_str(const char *s)
{
	for (size_t i = 0; i < sizeof(well_known) / sizeof(well_known[0]); i++)
		if (strcmp(s, well_known[i]) == 0)
			return well_known[i];
	return NULL;
}

/* One pass of the decoder: counting (fill false) or filling. */
typedef struct {
	bool fill;
	bool canonical;
	size_t strbytes;
	uint32_t nlabels, nannotations, nrefs, nconds, nips;
	sbx_pod *p;
	sbx_pod_kv *labels, *annotations;
	sbx_pod_owner_ref *refs;
	sbx_pod_condition *conds;
	const char **ips;
	char *strp;
} pass;

static const char *put_str(pass *b, const char *s)
{
	const char *wk = well_known_str(s);
	if (wk)
		return wk;
	size_t n = strlen(s) + 1;
	if (!b->fill) {
		b->strbytes += n;
		return NULL;
	}
	char *r = b->strp;
	memcpy(r, s, n);
	b->strp += n;
	return r;
}

static void take_str(pass *b, const cJSON *v, const char **field)
{
	if (cJSON_IsString(v))
		*field = put_str(b, v->valuestring);
	else
		b->canonical = false;
}

/* An integer that survives the trip through a double exactly. */
static void take_int(pass *b, const cJSON *v, int64_t *field, uint32_t bit)
{
	double d = cJSON_IsNumber(v) ? v->valuedouble : 0.5;
	/* within +-2^53 (NaN fails too), and whole */
	if (!(d >= -9007199254740992.0 && d <= 9007199254740992.0) || (double)(int64_t)d != d) {
		b->canonical = false;
		return;
	}
	*field = (int64_t)d;
	b->p->present |= bit;
}

static void take_bool(pass *b, const cJSON *v, int8_t *field)
{
	if (cJSON_IsBool(v))
		*field = cJSON_IsTrue(v) ? 1 : 0;
	else
		b->canonical = false;
}

/* Index of `name` in `names` (NULL-terminated), or -1. */
static int member(const char *const *names, const char *name)
{
	for (int i = 0; name && names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

/* The member's index when known and not seen before; else marks the object
 * non-canonical and returns -1. */
static int known_member(pass *b, const char *const *names, const cJSON *m, uint32_t *seen)
{
	int i = member(names, m->string);
	if (i < 0 || (*seen & (1u << i))) {
		b->canonical = false;
		return -1;
	}
	*seen |= 1u << i;
	return i;
}

/* True when a member before `e` in `obj` has its key. A JSON map may repeat
 * a key; the struct could, but cJSON_Compare() never equates such objects,
 * so the round-trip guarantee is kept by leaving them to the JSON fallback. */
static bool repeated_key(const cJSON *obj, const cJSON *e)
{
	for (const cJSON *p = obj->child; p && p != e; p = p->next)
		if (p->string && strcmp(p->string, e->string) == 0)
			return true;
	return false;
}

static void take_map(pass *b, const cJSON *v, bool labels)
{
	if (!cJSON_IsObject(v)) {
		b->canonical = false;
		return;
	}
	b->p->present |= labels ? SBX_POD_HAS_LABELS : SBX_POD_HAS_ANNOTATIONS;
	const cJSON *e;
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsString(e) || !e->string || repeated_key(v, e)) {
			b->canonical = false;
			continue;
		}
		uint32_t *n = labels ? &b->nlabels : &b->nannotations;
		const char *key = put_str(b, e->string), *val = put_str(b, e->valuestring);
		if (b->fill)
			(labels ? b->labels : b->annotations)[*n] = (sbx_pod_kv){ key, val };
		(*n)++;
	}
}

static void take_refs(pass *b, const cJSON *v)
{
	static const char *const names[] = { "apiVersion", "kind", "name", "uid",
	                                     "controller", "blockOwnerDeletion", NULL };
	if (!cJSON_IsArray(v)) {
		b->canonical = false;
		return;
	}
	b->p->present |= SBX_POD_HAS_OWNER_REFS;
	const cJSON *ref;
	cJSON_ArrayForEach(ref, v) {
		if (!cJSON_IsObject(ref)) {
			b->canonical = false;
			continue;
		}
		sbx_pod_owner_ref r = { NULL, NULL, NULL, NULL, -1, -1 };
		uint32_t seen = 0;
		const cJSON *m;
		cJSON_ArrayForEach(m, ref) {
			switch (known_member(b, names, m, &seen)) {
			case 0: take_str(b, m, &r.api_version); break;
			case 1: take_str(b, m, &r.kind); break;
			case 2: take_str(b, m, &r.name); break;
			case 3: take_str(b, m, &r.uid); break;
			case 4: take_bool(b, m, &r.controller); break;
			case 5: take_bool(b, m, &r.block_owner_deletion); break;
			}
		}
		if (b->fill)
			b->refs[b->nrefs] = r;
		b->nrefs++;
	}
}

static void take_metadata(pass *b, const cJSON *md)
{
	static const char *const names[] = {
		"name", "generateName", "namespace", "uid", "resourceVersion",
		"generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "labels", "annotations",
		"ownerReferences", NULL };
	sbx_pod *p = b->p;
	p->present |= SBX_POD_HAS_METADATA;
	uint32_t seen = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, md) {
		switch (known_member(b, names, m, &seen)) {
		case 0: take_str(b, m, &p->name); break;
		case 1: take_str(b, m, &p->generate_name); break;
		case 2: take_str(b, m, &p->namespace_); break;
		case 3: take_str(b, m, &p->uid); break;
		case 4: take_str(b, m, &p->resource_version); break;
		case 5: take_int(b, m, &p->generation, SBX_POD_HAS_GENERATION); break;
		case 6: take_str(b, m, &p->creation_timestamp); break;
		case 7: take_str(b, m, &p->deletion_timestamp); break;
		case 8: take_int(b, m, &p->deletion_grace_period_seconds, SBX_POD_HAS_GRACE_PERIOD); break;
		case 9: take_map(b, m, true); break;
		case 10: take_map(b, m, false); break;
		case 11: take_refs(b, m); break;
		}
	}
}

static void take_spec(pass *b, const cJSON *spec)
{
	static const char *const names[] = { "nodeName", NULL };
	b->p->present |= SBX_POD_HAS_SPEC;
	uint32_t seen = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, spec)
		if (known_member(b, names, m, &seen) == 0)
			take_str(b, m, &b->p->node_name);
}

static void take_pod_ips(pass *b, const cJSON *v)
{
	static const char *const names[] = { "ip", NULL };
	if (!cJSON_IsArray(v)) {
		b->canonical = false;
		return;
	}
	b->p->present |= SBX_POD_HAS_POD_IPS;
	const cJSON *e;
	cJSON_ArrayForEach(e, v) {
		if (!cJSON_IsObject(e)) {
			b->canonical = false;
			continue;
		}
		const char *ip = NULL;
		uint32_t seen = 0;
		const cJSON *m;
		cJSON_ArrayForEach(m, e)
			if (known_member(b, names, m, &seen) == 0)
				take_str(b, m, &ip);
		if (b->fill)
			b->ips[b->nips] = ip;
		b->nips++;
	}
}

static void take_conditions(pass *b, const cJSON *v)
{
	static const char *const names[] = { "type", "status", "reason", "message", NULL };
	if (!cJSON_IsArray(v)) {
		b->canonical = false;
		return;
	}
	b->p->present |= SBX_POD_HAS_CONDITIONS;
	const cJSON *c;
	cJSON_ArrayForEach(c, v) {
		if (!cJSON_IsObject(c)) {
			b->canonical = false;
			continue;
		}
		sbx_pod_condition k = { NULL, NULL, NULL, NULL };
		uint32_t seen = 0;
		const cJSON *m;
		cJSON_ArrayForEach(m, c) {
			switch (known_member(b, names, m, &seen)) {
			case 0: take_str(b, m, &k.type); break;
			case 1: take_str(b, m, &k.status); break;
			case 2: take_str(b, m, &k.reason); break;
			case 3: take_str(b, m, &k.message); break;
			}
		}
		if (b->fill)
			b->conds[b->nconds] = k;
		b->nconds++;
	}
}

static void take_status(pass *b, const cJSON *st)
{
	static const char *const names[] = { "phase", "conditions", "podIP", "podIPs", NULL };
	b->p->present |= SBX_POD_HAS_STATUS;
	uint32_t seen = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, st) {
		switch (known_member(b, names, m, &seen)) {
		case 0: take_str(b, m, &b->p->phase); break;
		case 1: take_conditions(b, m); break;
		case 2: take_str(b, m, &b->p->pod_ip); break;
		case 3: take_pod_ips(b, m); break;
		}
	}
}

static void take_pod(pass *b, const cJSON *obj)
{
	static const char *const names[] = { "kind", "apiVersion", "metadata", "spec", "status", NULL };
	if (!cJSON_IsObject(obj)) {
		b->canonical = false;
		return;
	}
	uint32_t seen = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, obj) {
		int i = known_member(b, names, m, &seen);
		if (i >= 2 && !cJSON_IsObject(m)) {
			b->canonical = false;
			continue;
		}
		switch (i) {
		case 0: take_str(b, m, &b->p->kind); break;
		case 1: take_str(b, m, &b->p->api_version); break;
		case 2: take_metadata(b, m); break;
		case 3: take_spec(b, m); break;
		case 4: take_status(b, m); break;
		}
	}
}

/* Rounds up to pointer alignment, for the arrays following one another. */
static size_t align(size_t n)
{
	return (n + sizeof(void *) - 1) & ~(sizeof(void *) - 1);
}

int sbx_pod_decode(const cJSON *obj, sbx_pod **out)
{
	if (!obj || !out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "pod codec: object and out are required");
	*out = NULL;
	sbx_pod scratch;
	memset(&scratch, 0, sizeof(scratch));
	pass count = { .fill = false, .canonical = true, .p = &scratch };
	take_pod(&count, obj);
	char *json = count.canonical ? NULL : cJSON_PrintUnformatted(obj);
	if (!count.canonical && !json)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "pod codec: out of memory");
	size_t off_labels = align(sizeof(sbx_pod));
	size_t off_ann = off_labels + align(count.nlabels * sizeof(sbx_pod_kv));
	size_t off_refs = off_ann + align(count.nannotations * sizeof(sbx_pod_kv));
	size_t off_conds = off_refs + align(count.nrefs * sizeof(sbx_pod_owner_ref));
	size_t off_ips = off_conds + align(count.nconds * sizeof(sbx_pod_condition));
	size_t off_str = off_ips + align(count.nips * sizeof(char *));
	size_t total = off_str + count.strbytes + (json ? strlen(json) + 1 : 0);
	char *mem = total <= UINT32_MAX ? calloc(1, total) : NULL;
	if (!mem) {
		free(json);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "pod codec: out of memory (%zu bytes)", total);
	}
	sbx_pod *p = (sbx_pod *)mem;
	pass fill = {
		.fill = true, .canonical = true, .p = p,
		.labels = (sbx_pod_kv *)(mem + off_labels),
		.annotations = (sbx_pod_kv *)(mem + off_ann),
		.refs = (sbx_pod_owner_ref *)(mem + off_refs),
		.conds = (sbx_pod_condition *)(mem + off_conds),
		.ips = (const char **)(mem + off_ips),
		.strp = mem + off_str,
	};
	take_pod(&fill, obj);
	p->labels = fill.labels;
	p->annotations = fill.annotations;
	p->owner_refs = fill.refs;
	p->conditions = fill.conds;
	p->pod_ips = fill.ips;
	p->nlabels = fill.nlabels;
	p->nannotations = fill.nannotations;
	p->nowner_refs = fill.nrefs;
	p->nconditions = fill.nconds;
	p->npod_ips = fill.nips;
	p->size = (uint32_t)total;
	if (json) {
		memcpy(fill.strp, json, strlen(json) + 1);
		p->json = fill.strp;
		free(json);
	}
	*out = p;
	return 0;
}

/* ---- encode: the API server's member order ---- */

static bool add_str(cJSON *o, const char *key, const char *v)
{
	return !v || cJSON_AddStringToObject(o, key, v);
}

static bool add_map(cJSON *md, const char *key, const sbx_pod_kv *kv, uint32_t n)
{
	cJSON *m = cJSON_AddObjectToObject(md, key);
	for (uint32_t i = 0; m && i < n; i++)
		if (!cJSON_AddStringToObject(m, kv[i].key, kv[i].value))
			return false;
	return m != NULL;
}

static bool add_tristate(cJSON *o, const char *key, int8_t v)
{
	return v < 0 || cJSON_AddBoolToObject(o, key, v);
}

static bool encode_metadata(const sbx_pod *p, cJSON *o)
{
	cJSON *md = cJSON_AddObjectToObject(o, "metadata");
	bool ok = md && add_str(md, "name", p->name) &&
	          add_str(md, "generateName", p->generate_name) &&
	          add_str(md, "namespace", p->namespace_) && add_str(md, "uid", p->uid) &&
	          add_str(md, "resourceVersion", p->resource_version);
	if (ok && (p->present & SBX_POD_HAS_GENERATION))
		ok = cJSON_AddNumberToObject(md, "generation", (double)p->generation);
	ok = ok && add_str(md, "creationTimestamp", p->creation_timestamp) &&
	     add_str(md, "deletionTimestamp", p->deletion_timestamp);
	if (ok && (p->present & SBX_POD_HAS_GRACE_PERIOD))
		ok = cJSON_AddNumberToObject(md, "deletionGracePeriodSeconds",
		                             (double)p->deletion_grace_period_seconds);
	if (ok && (p->present & SBX_POD_HAS_LABELS))
		ok = add_map(md, "labels", p->labels, p->nlabels);
	if (ok && (p->present & SBX_POD_HAS_ANNOTATIONS))
		ok = add_map(md, "annotations", p->annotations, p->nannotations);
	if (ok && (p->present & SBX_POD_HAS_OWNER_REFS)) {
		cJSON *refs = cJSON_AddArrayToObject(md, "ownerReferences");
		ok = refs != NULL;
		for (uint32_t i = 0; ok && i < p->nowner_refs; i++) {
			const sbx_pod_owner_ref *r = &p->owner_refs[i];
			cJSON *e = cJSON_CreateObject();
			ok = e && cJSON_AddItemToArray(refs, e);
			if (!ok) {
				cJSON_Delete(e);
				break;
			}
			ok = add_str(e, "apiVersion", r->api_version) && add_str(e, "kind", r->kind) &&
			     add_str(e, "name", r->name) && add_str(e, "uid", r->uid) &&
			     add_tristate(e, "controller", r->controller) &&
			     add_tristate(e, "blockOwnerDeletion", r->block_owner_deletion);
		}
	}
	return ok;
}

static bool encode_status(const sbx_pod *p, cJSON *o)
{
	cJSON *st = cJSON_AddObjectToObject(o, "status");
	bool ok = st && add_str(st, "phase", p->phase);
	if (ok && (p->present & SBX_POD_HAS_CONDITIONS)) {
		cJSON *cs = cJSON_AddArrayToObject(st, "conditions");
		ok = cs != NULL;
		for (uint32_t i = 0; ok && i < p->nconditions; i++) {
			const sbx_pod_condition *c = &p->conditions[i];
			cJSON *e = cJSON_CreateObject();
			ok = e && cJSON_AddItemToArray(cs, e);
			if (!ok) {
				cJSON_Delete(e);
				break;
			}
			ok = add_str(e, "type", c->type) && add_str(e, "status", c->status) &&
			     add_str(e, "reason", c->reason) && add_str(e, "message", c->message);
		}
	}
	ok = ok && add_str(st, "podIP", p->pod_ip);
	if (ok && (p->present & SBX_POD_HAS_POD_IPS)) {
		cJSON *ips = cJSON_AddArrayToObject(st, "podIPs");
		ok = ips != NULL;
		for (uint32_t i = 0; ok && i < p->npod_ips; i++) {
			cJSON *e = cJSON_CreateObject();
			ok = e && cJSON_AddItemToArray(ips, e);
			if (!ok) {
				cJSON_Delete(e);
				break;
			}
			ok = add_str(e, "ip", p->pod_ips[i]);
		}
	}
	return ok;
}

cJSON *sbx_pod_encode(const sbx_pod *p)
{
	if (!p)
		return NULL;
	if (p->json)
		return cJSON_Parse(p->json);
	cJSON *o = cJSON_CreateObject();
	bool ok = o && add_str(o, "kind", p->kind) && add_str(o, "apiVersion", p->api_version);
	if (ok && (p->present & SBX_POD_HAS_METADATA))
		ok = encode_metadata(p, o);
	if (ok && (p->present & SBX_POD_HAS_SPEC)) {
		cJSON *spec = cJSON_AddObjectToObject(o, "spec");
		ok = spec && add_str(spec, "nodeName", p->node_name);
	}
	if (ok && (p->present & SBX_POD_HAS_STATUS))
		ok = encode_status(p, o);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

void sbx_pod_free(sbx_pod *p)
{
	free(p);
}

const char *sbx_pod_label(const sbx_pod *p, const char *key)
{
	for (uint32_t i = 0; p && key && i < p->nlabels; i++)
		if (strcmp(p->labels[i].key, key) == 0)
			return p->labels[i].value;
	return NULL;
}

const sbx_pod_condition *sbx_pod_condition_get(const sbx_pod *p, const char *type)
{
	for (uint32_t i = 0; p && type && i < p->nconditions; i++)
		if (p->conditions[i].type && strcmp(p->conditions[i].type, type) == 0)
			return &p->conditions[i];
	return NULL;
}

/* ---- the informer codec ---- */

static int codec_decode(const cJSON *obj, void **out, void *ud)
{
	sbx_pod *p = NULL;
	int rc = sbx_pod_decode(obj, &p);
	*out = p;
	return rc;
}

static cJSON *codec_encode(const void *v, void *ud)
{
	return sbx_pod_encode(v);
}

static void codec_free(void *v, void *ud)
{
	sbx_pod_free(v);
}

static const char *codec_rv(const void *v, void *ud)
{
	return ((const sbx_pod *)v)->resource_version;
}

static const k8s_object_codec pod_codec = {
	codec_decode, codec_encode, codec_free, codec_rv, NULL,
};

const k8s_object_codec *sbx_pod_codec(void)
{
	return &pod_codec;
}
