/*
 * conversion.c - v1alpha1 <-> v1beta1 conversion of the agents.x-k8s.io
 * kinds and the ConversionReview envelope (conversion.h, docs/api.md#conversion).
 *
 * One table row per kind: its group and kind, the snapshot annotation, and
 * two functions that map spec and status in place on a deep copy. The
 * shared pattern (apiVersion rewrite, snapshot written going to the hub,
 * snapshot stripped coming back) lives in convert_one(), so a kind only
 * writes its field mapping. Rows: Sandbox (docs/api.md#converting-sandbox), SandboxClaim (docs/api.md#converting-sandboxclaim),
 * SandboxTemplate (docs/api.md#converting-sandboxtemplate), SandboxWarmPool (docs/api.md#converting-sandboxwarmpool).
 * A field no mapping names is copied as it is, in both directions: that is
 * how the fields both versions share travel, our extensions included
 * (idleTimeoutSeconds and idlePolicy, docs/api.md#idle-suspend-and-resume).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/common.h"
#include "sandbox/conversion.h"
#include "jsonutil.h"

#define REVIEW_KIND "ConversionReview"
#define REVIEW_GROUP "apiextensions.k8s.io"

/*
 * A kind's field mapping, applied in place to a deep copy whose apiVersion
 * is already the target one. `snapshot` (to_spoke only) is the parsed
 * v1alpha1 snapshot, or NULL when the object carried none. Returns 0 or a
 * ASB_E* code with the message set.
 */
typedef int (*map_fn)(cJSON *obj, const cJSON *snapshot);

typedef struct {
	const char *group;
	const char *kind;
	const char *hub;              /* storage version */
	const char *spoke;            /* the deprecated version */
	const char *snapshot_key;     /* annotation holding the spoke's JSON */
	map_fn to_hub;
	map_fn to_spoke;
} kind_conv;

/* --- Sandbox (docs/api.md#sandbox-v1alpha1, #converting-sandbox) --------------------------------------- */

/* spec.replicas as an int: 1 = absent; -1 with an error when not an integer. */
static int read_replicas(const cJSON *spec, const char *what, long *out, bool *present)
{
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(spec, "replicas");
	*present = r && !cJSON_IsNull(r);
	*out = 1;
	if (!*present)
		return 0;
	if (!cJSON_IsNumber(r) || r->valuedouble != (double)(long)r->valuedouble)
		return asb_error_set(ASB_EDECODE, 0, NULL, "%s: spec.replicas must be an integer", what);
	*out = (long)r->valuedouble;
	return 0;
}

static int sandbox_to_hub(cJSON *obj, const cJSON *snapshot)
{
	(void)snapshot;
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	if (spec && !cJSON_IsObject(spec))
		return asb_error_set(ASB_EDECODE, 0, NULL, "v1alpha1 Sandbox: spec must be an object");
	if (spec) {
		long replicas;
		bool present;
		if (read_replicas(spec, "v1alpha1 Sandbox", &replicas, &present) < 0)
			return ASB_EDECODE;
		/* replicas 0 suspends; nil or 1 runs */
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "replicas");
		if (!ju_set_str(spec, "operatingMode", present && replicas == 0
		                ? SBX_OPERATING_MODE_SUSPENDED : SBX_OPERATING_MODE_RUNNING))
			return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	}
	cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
	if (cJSON_IsObject(status)) {
		/* v1beta1 has no status.replicas; its nodeName starts empty */
		cJSON_DeleteItemFromObjectCaseSensitive(status, "replicas");
		cJSON_DeleteItemFromObjectCaseSensitive(status, "nodeName");
	}
	return 0;
}

static int sandbox_to_spoke(cJSON *obj, const cJSON *snapshot)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	if (spec && !cJSON_IsObject(spec))
		return asb_error_set(ASB_EDECODE, 0, NULL, "v1beta1 Sandbox: spec must be an object");
	const cJSON *m = spec ? cJSON_GetObjectItemCaseSensitive(spec, "operatingMode") : NULL;
	if (m && !cJSON_IsNull(m) && !cJSON_IsString(m))
		return asb_error_set(ASB_EDECODE, 0, NULL, "v1beta1 Sandbox: spec.operatingMode must be a string");
	const char *mode = cJSON_IsString(m) ? m->valuestring : "";
	bool suspended = strcmp(mode, SBX_OPERATING_MODE_SUSPENDED) == 0;
	bool running = strcmp(mode, SBX_OPERATING_MODE_RUNNING) == 0;

	long replicas = suspended ? 0 : 1;
	bool omit_replicas = false;
	long status_replicas = suspended ? 0 : 1;  /* best effort without a snapshot */
	if (snapshot) {
		const cJSON *sspec = cJSON_GetObjectItemCaseSensitive(snapshot, "spec");
		if (sspec && !cJSON_IsNull(sspec) && !cJSON_IsObject(sspec))
			return asb_error_set(ASB_EDECODE, 0, NULL,
			                     "failed to unmarshal v1alpha1 Sandbox state: spec is not an object");
		long snap_replicas = 1;
		bool snap_present = false;
		if (cJSON_IsObject(sspec) &&
		    read_replicas(sspec, "failed to unmarshal v1alpha1 Sandbox state", &snap_replicas,
		                  &snap_present) < 0)
			return ASB_EDECODE;
		if (running) {
			if (!snap_present)
				omit_replicas = true;       /* nil stays nil */
			else
				replicas = snap_replicas == 0 ? 1 : snap_replicas;
		}
		/* Only exactly Running restores; Suspended is 0, anything else the base 1. */
		const cJSON *sstatus = cJSON_GetObjectItemCaseSensitive(snapshot, "status");
		const cJSON *sr = cJSON_IsObject(sstatus)
			? cJSON_GetObjectItemCaseSensitive(sstatus, "replicas") : NULL;
		if (sr && !cJSON_IsNull(sr) && !cJSON_IsNumber(sr))
			return asb_error_set(ASB_EDECODE, 0, NULL,
			                     "failed to unmarshal v1alpha1 Sandbox state: status.replicas must be an integer");
		/* taken from the snapshot whatever the mode (it may be stale) */
		status_replicas = cJSON_IsNumber(sr) ? (long)sr->valuedouble : 0;
	}

	if (spec) {
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "operatingMode");
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "replicas");
		if (!omit_replicas && !ju_set(spec, "replicas", cJSON_CreateNumber((double)replicas)))
			return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	}
	cJSON *status = ju_obj(obj, "status");
	if (!status)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	cJSON_DeleteItemFromObjectCaseSensitive(status, "nodeName");  /* no such v1alpha1 field */
	if (!ju_set(status, "replicas", cJSON_CreateNumber((double)status_replicas)))
		return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	return 0;
}

static cJSON *annotations_of(cJSON *obj);
static void drop_annotation(cJSON *obj, const char *key);

/* --- shared helpers of the extension kinds --------------------------------- */

#define NOMEM() asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory")

/* obj.spec as an object: NULL (no error) when absent; -1 via *rc when not an object. */
static cJSON *spec_of(cJSON *obj, const char *what, int *rc)
{
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	*rc = 0;
	if (spec && !cJSON_IsNull(spec) && !cJSON_IsObject(spec))
		*rc = asb_error_set(ASB_EDECODE, 0, NULL, "%s: spec must be an object", what);
	return cJSON_IsObject(spec) ? spec : NULL;
}

/* o.a.b as a string; NULL when absent or not a string. */
static const char *str2(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, a) : NULL;
	return cJSON_IsObject(x) ? ju_str(x, b) : NULL;
}

/* The name without its last "-<suffix>" segment (unchanged without '-'), malloc'd. */
static char *strip_suffix(const char *name)
{
	const char *dash = strrchr(name, '-');
	size_t n = dash ? (size_t)(dash - name) : strlen(name);
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, name, n);
		s[n] = '\0';
	}
	return s;
}

/* A v1alpha1 `warmpool` naming a specific pool (not none/default/empty). */
static bool specific_pool(const char *wp)
{
	return wp && *wp && strcmp(wp, "none") != 0 && strcmp(wp, "default") != 0;
}

/* --- SandboxClaim (docs/api.md#sandboxclaim-v1alpha1, #converting-sandboxclaim) -------------------------------- */

static int claim_to_hub(cJSON *obj, const cJSON *snapshot)
{
	(void)snapshot;
	int rc;
	cJSON *spec = spec_of(obj, "v1alpha1 SandboxClaim", &rc);
	if (rc < 0)
		return rc;
	if (!spec && !(spec = ju_obj(obj, "spec")))
		return NOMEM();
	const char *wp = ju_str(spec, "warmpool");
	const char *tpl = str2(spec, "sandboxTemplateRef", "name");
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
	const char *bound = str2(status, "sandbox", "name");
	const char *name = str2(obj, "metadata", "name");

	char *pool;
	if (specific_pool(wp))
		pool = ju_printf("%s", wp);                             /* 1. a specific pool */
	else if (bound && *bound && !ju_str_eq(bound, name))
		pool = strip_suffix(bound);                             /* 2. warm-started */
	else
		pool = ju_printf(SBX_SHADOW_POOL_PREFIX "%s", ju_nz(tpl)); /* 3. the shadow pool */
	if (!pool)
		return NOMEM();
	cJSON *ref = cJSON_CreateObject();
	bool ok = ref && cJSON_AddStringToObject(ref, "name", pool);
	free(pool);
	if (!ok) {
		cJSON_Delete(ref);
		return NOMEM();
	}
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "sandboxTemplateRef");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "warmpool");
	if (!ju_set(spec, "warmPoolRef", ref))
		return NOMEM();
	return 0;
}

static int claim_to_spoke(cJSON *obj, const cJSON *snapshot)
{
	int rc;
	cJSON *spec = spec_of(obj, "v1beta1 SandboxClaim", &rc);
	if (rc < 0)
		return rc;
	if (!spec && !(spec = ju_obj(obj, "spec")))
		return NOMEM();
	const cJSON *wref = cJSON_GetObjectItemCaseSensitive(spec, "warmPoolRef");
	char *pool = ju_printf("%s", cJSON_IsObject(wref) ? ju_nz(ju_str(wref, "name")) : "");
	if (!pool)
		return NOMEM();
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "warmPoolRef");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "volumeClaimTemplates"); /* dropped, docs/api.md#converting-sandboxclaim */

	cJSON *tref = NULL;          /* the new sandboxTemplateRef */
	cJSON *warmpool = NULL;      /* the new warmpool, NULL: absent */
	const size_t plen = strlen(SBX_SHADOW_POOL_PREFIX);
	if (!snapshot) {
		tref = cJSON_CreateObject();
		if (strncmp(pool, SBX_SHADOW_POOL_PREFIX, plen) == 0) {
			if (tref && !cJSON_AddStringToObject(tref, "name", pool + plen))
				goto nomem;
			warmpool = cJSON_CreateString("default");
		} else {
			/* a guess: the pool and its template share the name */
			if (tref && !cJSON_AddStringToObject(tref, "name", pool))
				goto nomem;
			warmpool = cJSON_CreateString(pool);
		}
		if (!tref || !warmpool)
			goto nomem;
	} else {
		const cJSON *sspec = cJSON_GetObjectItemCaseSensitive(snapshot, "spec");
		if (sspec && !cJSON_IsNull(sspec) && !cJSON_IsObject(sspec)) {
			free(pool);
			return asb_error_set(ASB_EDECODE, 0, NULL,
			                     "failed to unmarshal v1alpha1 SandboxClaim state: spec is not an object");
		}
		const cJSON *otref = cJSON_IsObject(sspec)
			? cJSON_GetObjectItemCaseSensitive(sspec, "sandboxTemplateRef") : NULL;
		const cJSON *owp = cJSON_IsObject(sspec)
			? cJSON_GetObjectItemCaseSensitive(sspec, "warmpool") : NULL;
		const char *owp_s = cJSON_IsString(owp) ? owp->valuestring : NULL;
		const char *otpl = cJSON_IsObject(otref) ? ju_str(otref, "name") : NULL;
		const char *expected = specific_pool(owp_s) ? owp_s : ju_nz(otpl);

		const cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
		const char *bound = str2(status, "sandbox", "name");
		char *bound_base = bound && *bound ? strip_suffix(bound) : NULL;
		if (bound && *bound && !bound_base)
			goto nomem;
		bool same = strcmp(pool, expected) == 0 ||
			(strncmp(pool, SBX_SHADOW_POOL_PREFIX, plen) == 0 &&
			 strcmp(pool + plen, expected) == 0) ||
			(bound && *bound && strcmp(pool, bound) == 0) ||
			(bound_base && strcmp(pool, bound_base) == 0);
		free(bound_base);
		tref = otref ? cJSON_Duplicate(otref, true) : NULL;
		if (otref && !tref)
			goto nomem;
		if (same)
			warmpool = owp ? cJSON_Duplicate(owp, true) : NULL;  /* restore the original */
		else
			warmpool = cJSON_CreateString(pool);                 /* moved to another pool */
		if ((same && owp && !warmpool) || (!same && !warmpool))
			goto nomem;
	}
	free(pool);
	pool = NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "sandboxTemplateRef");
	cJSON_DeleteItemFromObjectCaseSensitive(spec, "warmpool");
	if (tref && !ju_set(spec, "sandboxTemplateRef", tref)) {
		cJSON_Delete(warmpool);
		return NOMEM();
	}
	if (warmpool && !ju_set(spec, "warmpool", warmpool))
		return NOMEM();
	return 0;
nomem:
	free(pool);
	cJSON_Delete(tref);
	cJSON_Delete(warmpool);
	return NOMEM();
}

/* --- SandboxTemplate (docs/api.md#sandboxtemplate-v1alpha1, #converting-sandboxtemplate) ----------------------------- */

static const char *const vct_policies[] = { "Disallowed", "Allowed", "Overrides" };

static int template_to_hub(cJSON *obj, const cJSON *snapshot)
{
	(void)snapshot;
	int rc;
	cJSON *spec = spec_of(obj, "v1alpha1 SandboxTemplate", &rc);
	if (rc < 0)
		return rc;
	cJSON *a = annotations_of(obj);
	const cJSON *v = a ? cJSON_GetObjectItemCaseSensitive(a, SBX_ANNOTATION_V1BETA1_VCT_POLICY) : NULL;
	if (!v)
		return 0;
	bool valid = false;
	for (size_t i = 0; cJSON_IsString(v) && i < sizeof(vct_policies) / sizeof(vct_policies[0]); i++)
		valid = valid || strcmp(v->valuestring, vct_policies[i]) == 0;
	if (!valid) {
		char *text = cJSON_IsString(v) ? NULL : cJSON_PrintUnformatted(v);
		rc = asb_error_set(ASB_EDECODE, 0, NULL,
		                   "invalid VolumeClaimTemplatesPolicy annotation value: \"%s\"",
		                   cJSON_IsString(v) ? v->valuestring : ju_nz(text));
		free(text);
		return rc;
	}
	if (!spec && !(spec = ju_obj(obj, "spec")))
		return NOMEM();
	if (!ju_set_str(spec, "volumeClaimTemplatesPolicy", v->valuestring))
		return NOMEM();
	drop_annotation(obj, SBX_ANNOTATION_V1BETA1_VCT_POLICY);
	return 0;
}

static int template_to_spoke(cJSON *obj, const cJSON *snapshot)
{
	(void)snapshot;  /* written but never used to restore (docs/api.md#converting-sandboxtemplate) */
	int rc;
	cJSON *spec = spec_of(obj, "v1beta1 SandboxTemplate", &rc);
	if (rc < 0)
		return rc;
	const cJSON *p = spec ? cJSON_GetObjectItemCaseSensitive(spec, "volumeClaimTemplatesPolicy") : NULL;
	if (p && !cJSON_IsNull(p) && !cJSON_IsString(p))
		return asb_error_set(ASB_EDECODE, 0, NULL,
		                     "v1beta1 SandboxTemplate: spec.volumeClaimTemplatesPolicy must be a string");
	if (cJSON_IsString(p) && *p->valuestring) {
		cJSON *md = ju_obj(obj, "metadata");
		cJSON *ann = md ? ju_obj(md, "annotations") : NULL;
		if (!ann || !ju_set_str(ann, SBX_ANNOTATION_V1BETA1_VCT_POLICY, p->valuestring))
			return NOMEM();
	} else {
		drop_annotation(obj, SBX_ANNOTATION_V1BETA1_VCT_POLICY);
	}
	if (spec)
		cJSON_DeleteItemFromObjectCaseSensitive(spec, "volumeClaimTemplatesPolicy");
	return 0;
}

/* --- SandboxWarmPool (docs/api.md#sandboxwarmpool-spec, #sandboxwarmpool-status, #converting-sandboxwarmpool) ----------------------- */

static int warmpool_to_hub(cJSON *obj, const cJSON *snapshot)
{
	(void)snapshot;
	int rc;
	cJSON *spec = spec_of(obj, "v1alpha1 SandboxWarmPool", &rc);
	if (rc < 0)
		return rc;
	if (spec) {
		long replicas;
		bool present;
		if (read_replicas(spec, "v1alpha1 SandboxWarmPool", &replicas, &present) < 0)
			return ASB_EDECODE;
	}
	return 0;  /* int32 -> *int32: the value is kept as is */
}

static int warmpool_to_spoke(cJSON *obj, const cJSON *snapshot)
{
	(void)snapshot;  /* stripped by the caller, never used (docs/api.md#converting-sandboxwarmpool) */
	int rc;
	cJSON *spec = spec_of(obj, "v1beta1 SandboxWarmPool", &rc);
	if (rc < 0)
		return rc;
	if (!spec && !(spec = ju_obj(obj, "spec")))
		return NOMEM();
	long replicas;
	bool present;
	if (read_replicas(spec, "v1beta1 SandboxWarmPool", &replicas, &present) < 0)
		return ASB_EDECODE;
	/* nil => 1 (read_replicas' default) */
	if (!ju_set(spec, "replicas", cJSON_CreateNumber((double)replicas)))
		return NOMEM();
	cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
	if (cJSON_IsObject(status))
		cJSON_DeleteItemFromObjectCaseSensitive(status, "observedGeneration");
	return 0;
}

static const kind_conv kinds[] = {
	{ SBX_GROUP, SBX_KIND, SBX_VERSION, SBX_VERSION_V1ALPHA1,
	  SBX_ANNOTATION_V1ALPHA1_SANDBOX_STATE, sandbox_to_hub, sandbox_to_spoke },
	{ SBX_EXTENSIONS_GROUP, SBX_KIND_CLAIM, SBX_VERSION, SBX_VERSION_V1ALPHA1,
	  SBX_ANNOTATION_V1ALPHA1_SANDBOXCLAIM_STATE, claim_to_hub, claim_to_spoke },
	{ SBX_EXTENSIONS_GROUP, SBX_KIND_TEMPLATE, SBX_VERSION, SBX_VERSION_V1ALPHA1,
	  SBX_ANNOTATION_V1ALPHA1_SANDBOXTEMPLATE_STATE, template_to_hub, template_to_spoke },
	{ SBX_EXTENSIONS_GROUP, SBX_KIND_WARM_POOL, SBX_VERSION, SBX_VERSION_V1ALPHA1,
	  SBX_ANNOTATION_V1ALPHA1_SANDBOXWARMPOOL_STATE, warmpool_to_hub, warmpool_to_spoke },
};

/* --- the shared pattern -------------------------------------------------- */

/* Splits "group/version" (group may hold no '/'); false when malformed. */
static bool split_api_version(const char *av, char *group, size_t gcap, const char **version)
{
	const char *slash = av ? strchr(av, '/') : NULL;
	if (!slash || slash == av || !slash[1] || strchr(slash + 1, '/') ||
	    (size_t)(slash - av) >= gcap)
		return false;
	memcpy(group, av, (size_t)(slash - av));
	group[slash - av] = '\0';
	*version = slash + 1;
	return true;
}

static const kind_conv *find_kind(const char *group, const char *kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].group, group) == 0 && strcmp(kinds[i].kind, kind) == 0)
			return &kinds[i];
	return NULL;
}

static cJSON *annotations_of(cJSON *obj)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	cJSON *a = cJSON_IsObject(md) ? cJSON_GetObjectItemCaseSensitive(md, "annotations") : NULL;
	return cJSON_IsObject(a) ? a : NULL;
}

/* Removes annotation `key`, and the then-empty map (Go's omitempty). */
static void drop_annotation(cJSON *obj, const char *key)
{
	cJSON *a = annotations_of(obj);
	if (!a)
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(a, key);
	if (!a->child)
		cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
		                                        "annotations");
}

/* Spoke -> hub: map fields, then store the snapshot of the spoke object. */
static int to_hub(const kind_conv *k, const cJSON *src, cJSON *dst)
{
	cJSON *snap = cJSON_Duplicate(src, true);
	if (!snap)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	drop_annotation(snap, k->snapshot_key);
	cJSON *md = cJSON_GetObjectItemCaseSensitive(snap, "metadata");
	if (cJSON_IsObject(md))
		cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
	char *text = cJSON_PrintUnformatted(snap);
	cJSON_Delete(snap);
	if (!text)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	int rc = k->to_hub(dst, NULL);
	if (rc == 0) {
		md = ju_obj(dst, "metadata");
		cJSON *ann = md ? ju_obj(md, "annotations") : NULL;
		if (!ann || !ju_set_str(ann, k->snapshot_key, text))
			rc = asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	}
	free(text);
	return rc;
}

/* Hub -> spoke: the snapshot (if any) is parsed, stripped, handed to the mapping. */
static int to_spoke(const kind_conv *k, cJSON *dst)
{
	cJSON *a = annotations_of(dst);
	const cJSON *s = a ? cJSON_GetObjectItemCaseSensitive(a, k->snapshot_key) : NULL;
	cJSON *snapshot = NULL;
	if (s) {
		if (!cJSON_IsString(s))
			return asb_error_set(ASB_EDECODE, 0, NULL,
			                     "failed to unmarshal v1alpha1 %s state: annotation %s is not a string",
			                     k->kind, k->snapshot_key);
		const char *end = NULL;
		snapshot = cJSON_ParseWithOpts(s->valuestring, &end, true);
		if (!snapshot)
			return asb_error_set(ASB_EDECODE, 0, NULL,
			                     "failed to unmarshal v1alpha1 %s state: invalid JSON at offset %zu",
			                     k->kind, end && end >= s->valuestring
			                     ? (size_t)(end - s->valuestring) : (size_t)0);
		if (!cJSON_IsObject(snapshot)) {
			cJSON_Delete(snapshot);
			return asb_error_set(ASB_EDECODE, 0, NULL,
			                     "failed to unmarshal v1alpha1 %s state: not a JSON object", k->kind);
		}
	}
	int rc = k->to_spoke(dst, snapshot);
	cJSON_Delete(snapshot);
	if (rc == 0)
		drop_annotation(dst, k->snapshot_key);
	return rc;
}

int sbx_conversion_convert(cJSON **out, const cJSON *obj, const char *desired)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "conversion: out is required");
	*out = NULL;
	if (!cJSON_IsObject(obj) || !desired)
		return asb_error_set(ASB_EINVAL, 0, NULL, "conversion: an object and a desired apiVersion are required");
	const char *av = ju_str(obj, "apiVersion"), *kind = ju_str(obj, "kind");
	char group[256], dgroup[256];
	const char *version, *dversion;
	if (!av || !kind || !split_api_version(av, group, sizeof(group), &version))
		return asb_error_set(ASB_EINVAL, 0, NULL, "object has no valid apiVersion (group/version) and kind");
	if (!split_api_version(desired, dgroup, sizeof(dgroup), &dversion))
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid desiredAPIVersion \"%s\"", desired);
	if (strcmp(group, dgroup) != 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "cannot convert %s %s to another group (%s)",
		                     av, kind, desired);
	const kind_conv *k = find_kind(group, kind);
	if (!k)
		return asb_error_set(ASB_EINVAL, 0, NULL, "unsupported kind %s in group %s", kind, group);
	bool src_hub = strcmp(version, k->hub) == 0, src_spoke = strcmp(version, k->spoke) == 0;
	bool dst_hub = strcmp(dversion, k->hub) == 0, dst_spoke = strcmp(dversion, k->spoke) == 0;
	if (!src_hub && !src_spoke)
		return asb_error_set(ASB_EINVAL, 0, NULL, "unsupported version %s of %s", av, kind);
	if (!dst_hub && !dst_spoke)
		return asb_error_set(ASB_EINVAL, 0, NULL, "unsupported version %s of %s", desired, kind);

	cJSON *dst = cJSON_Duplicate(obj, true);
	if (!dst || !ju_set_str(dst, "apiVersion", desired)) {
		cJSON_Delete(dst);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion: out of memory");
	}
	int rc = 0;
	if (src_spoke && dst_hub)
		rc = to_hub(k, obj, dst);
	else if (src_hub && dst_spoke)
		rc = to_spoke(k, dst);
	/* same version: an unchanged copy */
	if (rc < 0) {
		cJSON_Delete(dst);
		return rc;
	}
	*out = dst;
	return 0;
}

/* --- ConversionReview ---------------------------------------------------- */

/* Describes object i for a failure message: "objects[2] (Sandbox ns/name)". */
static void describe(char *buf, size_t cap, size_t i, const cJSON *obj)
{
	const cJSON *md = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "metadata") : NULL;
	const char *kind = cJSON_IsObject(obj) ? ju_str(obj, "kind") : NULL;
	const char *ns = cJSON_IsObject(md) ? ju_str(md, "namespace") : NULL;
	const char *name = cJSON_IsObject(md) ? ju_str(md, "name") : NULL;
	snprintf(buf, cap, "objects[%zu] (%s %s%s%s)", i, kind ? kind : "?", ns ? ns : "",
	         ns ? "/" : "", name ? name : "?");
}

int sbx_conversion_review(const char *body, size_t len, char **response, char **failure)
{
	if (!body || !response)
		return asb_error_set(ASB_EINVAL, 0, NULL, "conversion review: body and response are required");
	*response = NULL;
	if (failure)
		*failure = NULL;
	cJSON *review = cJSON_ParseWithLength(body, len);
	if (!review)
		return asb_error_set(ASB_EDECODE, 0, NULL, "request body is not JSON");
	const char *av = cJSON_IsObject(review) ? ju_str(review, "apiVersion") : NULL;
	const char *kind = cJSON_IsObject(review) ? ju_str(review, "kind") : NULL;
	const cJSON *req = cJSON_IsObject(review) ? cJSON_GetObjectItemCaseSensitive(review, "request") : NULL;
	if (!av || !kind || strcmp(kind, REVIEW_KIND) != 0 ||
	    (strcmp(av, REVIEW_GROUP "/v1") != 0 && strcmp(av, REVIEW_GROUP "/v1beta1") != 0)) {
		cJSON_Delete(review);
		return asb_error_set(ASB_EDECODE, 0, NULL,
		                     "request body is not a ConversionReview (apiextensions.k8s.io/v1 or v1beta1)");
	}
	if (!cJSON_IsObject(req)) {
		cJSON_Delete(review);
		return asb_error_set(ASB_EDECODE, 0, NULL, "ConversionReview has no request");
	}

	const char *uid = ju_str(req, "uid");
	const char *desired = ju_str(req, "desiredAPIVersion");
	const cJSON *objects = cJSON_GetObjectItemCaseSensitive(req, "objects");
	char *msg = NULL;
	bool failed = true;
	cJSON *converted = cJSON_CreateArray();
	if (!converted)
		goto nomem;
	if (!uid || !*uid)
		msg = ju_printf("ConversionReview request.uid is required");
	else if (!desired || !*desired)
		msg = ju_printf("ConversionReview request.desiredAPIVersion is required");
	else if (!cJSON_IsArray(objects))
		msg = ju_printf("ConversionReview request.objects must be a list");
	else {
		size_t i = 0;
		const cJSON *o;
		cJSON_ArrayForEach(o, objects) {
			cJSON *c = NULL;
			int rc = sbx_conversion_convert(&c, o, desired);
			if (rc == ASB_ENOMEM)
				goto nomem;
			if (rc < 0) {
				char what[512];
				describe(what, sizeof(what), i, o);
				msg = ju_printf("converting %s to %s: %s", what, desired, asb_error_last()->message);
				break;
			}
			cJSON_AddItemToArray(converted, c);
			i++;
		}
		failed = msg != NULL;
	}
	if (!uid || !*uid || !desired || !*desired || !cJSON_IsArray(objects))
		failed = true;
	if (failed && !msg)
		goto nomem;

	cJSON *resp = cJSON_CreateObject();
	cJSON *r = resp ? cJSON_AddObjectToObject(resp, "response") : NULL;
	cJSON *result = r ? cJSON_CreateObject() : NULL;
	if (!r || !result || !cJSON_AddStringToObject(resp, "apiVersion", av) ||
	    !cJSON_AddStringToObject(resp, "kind", REVIEW_KIND) ||
	    !cJSON_AddStringToObject(r, "uid", uid ? uid : "")) {
		cJSON_Delete(resp);
		cJSON_Delete(result);
		goto nomem;
	}
	/* the key order of the Go structs: apiVersion, kind, response */
	cJSON_DetachItemViaPointer(resp, r);
	cJSON_AddItemToObject(resp, "response", r);
	if (failed) {
		cJSON_Delete(converted);
		converted = cJSON_CreateArray();
		cJSON_AddStringToObject(result, "status", "Failure");
		cJSON_AddStringToObject(result, "message", msg);
	} else {
		cJSON_AddStringToObject(result, "status", "Success");
	}
	cJSON_AddItemToObject(r, "convertedObjects", converted);
	cJSON_AddItemToObject(r, "result", result);
	converted = NULL;
	*response = cJSON_PrintUnformatted(resp);
	cJSON_Delete(resp);
	cJSON_Delete(review);
	if (!*response) {
		free(msg);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion review: out of memory");
	}
	if (failure)
		*failure = msg;
	else
		free(msg);
	return 0;
nomem:
	cJSON_Delete(converted);
	cJSON_Delete(review);
	free(msg);
	return asb_error_set(ASB_ENOMEM, 0, NULL, "conversion review: out of memory");
}
