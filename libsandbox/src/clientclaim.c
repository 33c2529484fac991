/*
 * clientclaim.c - the SandboxClaim a client writes and what a claim says
 * about the wait for it (sandbox/clientclaim.h; docs/upstream.md#claim-manifest,
 * docs/upstream.md#readiness-wait, docs/api.md#claim-conditions). Pure: client.c and client_wait.c do the I/O.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include "jsonutil.h"
#include "k8s/object.h"
#include "k8s/validation.h"
#include "sandbox/clientclaim.h"

#define CLAIM_API_VERSION SBX_EXTENSIONS_GROUP "/v1beta1"
#define CREATED_BY_DEFAULT "python-client"

int sbx_claim_name_generate(char out[SBX_CLAIM_NAME_SIZE])
{
	uint32_t r;
	size_t got = 0;
	while (got < sizeof(r)) {
		ssize_t n = getrandom((char *)&r + got, sizeof(r) - got, 0);
		if (n <= 0)
			return asb_error_set(ASB_ERROR, 0, NULL, "no random bytes for a claim name");
		got += (size_t)n;
	}
	snprintf(out, SBX_CLAIM_NAME_SIZE, SBX_CLAIM_NAME_PREFIX "%08x", r);
	return 0;
}

char *sbx_time_format_iso_us(int64_t us, char *buf, size_t cap)
{
	time_t secs = (time_t)(us / 1000000);
	long frac = (long)(us % 1000000);
	if (frac < 0) {
		frac += 1000000;
		secs--;
	}
	struct tm tm;
	gmtime_r(&secs, &tm);
	snprintf(buf, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%06ld+00:00", tm.tm_year + 1900,
	         tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	return buf;
}

/* ---- building ---- */

/* Checks one label (key and value); records ASB_EINVAL naming `what`. */
static int check_label(const char *what, const sbx_kv *kv)
{
	char m[K8S_VALIDATION_MSG_SIZE];
	if (k8s_validate_qualified_name(kv->key, m, sizeof(m)) != 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid %s key \"%s\": %s", what,
		                     ju_nz(kv->key), m);
	if (k8s_validate_label_value(kv->value, m, sizeof(m)) != 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid %s value \"%s\" for key \"%s\": %s",
		                     what, ju_nz(kv->value), kv->key, m);
	return 0;
}

static int check_annotation(const char *what, const sbx_kv *kv)
{
	char m[K8S_VALIDATION_MSG_SIZE];
	if (k8s_validate_qualified_name(kv->key, m, sizeof(m)) != 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid %s key \"%s\": %s", what,
		                     ju_nz(kv->key), m);
	return 0;
}

/*
 * A new JSON object of the `n` pairs (a later key replaces an earlier
 * one), each checked by `check` as `what`; NULL with *rc set on failure.
 */
static cJSON *kv_object(const sbx_kv *kv, size_t n, const char *what,
                        int (*check)(const char *, const sbx_kv *), int *rc)
{
	cJSON *o = cJSON_CreateObject();
	if (!o) {
		*rc = ASB_ENOMEM;
		return NULL;
	}
	if (n && !kv) {
		*rc = asb_error_set(ASB_EINVAL, 0, NULL, "%ss: %zu entries but no array", what, n);
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if ((*rc = check(what, &kv[i])) != 0)
			goto fail;
		if (!ju_set_str(o, kv[i].key, ju_nz(kv[i].value))) {
			*rc = ASB_ENOMEM;
			goto fail;
		}
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

/* Adds `item` as `key` of `parent` unless it is an empty object (freed). */
static bool set_unless_empty(cJSON *parent, const char *key, cJSON *item)
{
	if (!cJSON_GetArraySize(item)) {
		cJSON_Delete(item);
		return true;
	}
	return ju_set(parent, key, item);
}

static int build_metadata(cJSON *claim, const sbx_claim_options *o, const char *ns,
                          const char *name, int64_t now_us)
{
	int rc = 0;
	cJSON *md = ju_obj(claim, "metadata");
	if (!md || !ju_set_str(md, "name", name) || (ns && !ju_set_str(md, "namespace", ns)))
		return ASB_ENOMEM;
	cJSON *labels = kv_object(o->labels, o->nlabels, "label", check_label, &rc);
	if (!labels)
		return rc;
	if (!ju_set(md, "labels", labels) ||
	    !ju_set_str(labels, SBX_LABEL_CREATED_BY,
	                ju_empty(o->created_by) ? CREATED_BY_DEFAULT : o->created_by))
		return ASB_ENOMEM;
	if ((rc = check_label("label", &(sbx_kv){ SBX_LABEL_CREATED_BY,
	                                          ju_str(labels, SBX_LABEL_CREATED_BY) })) != 0)
		return rc;
	cJSON *ann = kv_object(o->annotations, o->nannotations, "annotation", check_annotation, &rc);
	if (!ann)
		return rc;
	if (!ju_set(md, "annotations", ann))
		return ASB_ENOMEM;
	if (ju_empty(ju_str(ann, SBX_ANNOTATION_CLIENT_FIRST_REQUESTED))) {
		char ts[40];
		if (!ju_set_str(ann, SBX_ANNOTATION_CLIENT_FIRST_REQUESTED,
		                sbx_time_format_iso_us(now_us, ts, sizeof(ts))))
			return ASB_ENOMEM;
	}
	return 0;
}

static int build_spec(cJSON *claim, const sbx_claim_options *o, int64_t now_us)
{
	int rc = 0;
	cJSON *spec = ju_obj(claim, "spec");
	cJSON *ref = spec ? ju_obj(spec, "warmPoolRef") : NULL;
	if (!ref || !ju_set_str(ref, "name", o->warm_pool))
		return ASB_ENOMEM;
	if (o->shutdown_after_seconds > 0) {
		char ts[32];
		int64_t at_ms = (now_us / 1000000 + o->shutdown_after_seconds) * 1000;
		cJSON *lc = ju_obj(spec, "lifecycle");
		if (!lc || !ju_set_str(lc, "shutdownTime", k8s_time_format(at_ms, ts, sizeof(ts))) ||
		    !ju_set_str(lc, "shutdownPolicy", ju_empty(o->shutdown_policy)
		                                      ? SBX_SHUTDOWN_POLICY_DELETE : o->shutdown_policy))
			return ASB_ENOMEM;
	}
	if (o->volume_claim_templates_json) {
		cJSON *vcts = cJSON_Parse(o->volume_claim_templates_json);
		const cJSON *it;
		bool ok = cJSON_IsArray(vcts);
		cJSON_ArrayForEach(it, (ok ? vcts : NULL))
			ok = ok && cJSON_IsObject(it);
		if (!ok) {
			cJSON_Delete(vcts);
			return asb_error_set(ASB_EINVAL, 0, NULL, "volume claim templates must be a JSON "
			                     "array of PersistentVolumeClaim templates ({metadata, spec})");
		}
		if (!ju_set(spec, "volumeClaimTemplates", vcts))
			return ASB_ENOMEM;
	}
	if (o->nenv) {
		cJSON *env = cJSON_CreateArray();
		if (!env || !ju_set(spec, "env", env))
			return ASB_ENOMEM;
		for (size_t i = 0; i < o->nenv; i++) {
			if (!o->env || ju_empty(o->env[i].key))
				return asb_error_set(ASB_EINVAL, 0, NULL, "env entry %zu has no name", i);
			cJSON *e = cJSON_CreateObject();
			if (e && !cJSON_AddItemToArray(env, e)) {
				cJSON_Delete(e);
				e = NULL;
			}
			if (!e || !ju_set_str(e, "name", o->env[i].key) ||
			    !ju_set_str(e, "value", ju_nz(o->env[i].value)))
				return ASB_ENOMEM;
		}
	}
	cJSON *apm = cJSON_CreateObject();
	if (!apm)
		return ASB_ENOMEM;
	cJSON *pl = kv_object(o->pod_labels, o->npod_labels, "pod label", check_label, &rc);
	cJSON *pa = pl ? kv_object(o->pod_annotations, o->npod_annotations, "pod annotation",
	                           check_annotation, &rc) : NULL;
	if (!pa) {
		cJSON_Delete(pl);
		cJSON_Delete(apm);
		return rc;
	}
	if (!set_unless_empty(apm, "labels", pl) || !set_unless_empty(apm, "annotations", pa) ||
	    !set_unless_empty(spec, "additionalPodMetadata", apm))
		return ASB_ENOMEM;
	return 0;
}

int sbx_claim_build(const sbx_claim_options *o, const char *ns, const char *name,
                    int64_t now_us, cJSON **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_claim_build: no output");
	*out = NULL;
	if (!o || o->version < 1 || o->version > SBX_CLAIM_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "claim options: missing or unknown version");
	if (ju_empty(o->warm_pool))
		return asb_error_set(ASB_EINVAL, 0, NULL, "a warm pool name is required");
	if (ju_empty(name))
		return asb_error_set(ASB_EINVAL, 0, NULL, "a claim name is required");
	if (o->shutdown_after_seconds < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "shutdown_after_seconds must be a positive "
		                     "number of seconds, got %lld", (long long)o->shutdown_after_seconds);
	cJSON *claim = cJSON_CreateObject();
	if (!claim || !ju_set_str(claim, "apiVersion", CLAIM_API_VERSION) ||
	    !ju_set_str(claim, "kind", SBX_KIND_CLAIM)) {
		cJSON_Delete(claim);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory building claim %s", name);
	}
	int rc = build_metadata(claim, o, ns, name, now_us);
	if (rc == 0)
		rc = build_spec(claim, o, now_us);
	if (rc != 0) {
		cJSON_Delete(claim);
		if (rc == ASB_ENOMEM)
			asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory building claim %s", name);
		return rc;
	}
	*out = claim;
	return 0;
}

/* ---- reading ---- */

/* Ready=False reasons that end the wait, and their codes (docs/api.md#claim-conditions, docs/upstream.md#readiness-wait). */
static const struct {
	const char *reason;
	int code;
} terminal[] = {
	{ "TemplateNotFound", SBX_ETEMPLATENOTFOUND },
	{ "InvalidMetadata", SBX_EINVALIDMETADATA },
	{ "EnvVarsInjectionRejected", SBX_EENVREJECTED },
	{ "VolumeClaimTemplatesError", SBX_EVOLUMECLAIMTEMPLATES },
	{ "ClaimExpired", SBX_ECLAIMEXPIRED },
	{ "SandboxExpired", SBX_ESANDBOXEXPIRED },
};

int sbx_claim_outcome(const cJSON *claim, bool need_ready, const char **sandbox_name,
                      const char **reason, const char **message)
{
	if (sandbox_name)
		*sandbox_name = NULL;
	if (reason)
		*reason = NULL;
	if (message)
		*message = NULL;
	const cJSON *conds = k8s_obj_at(claim, "status.conditions");
	const cJSON *c;
	bool ready = false;
	cJSON_ArrayForEach(c, (cJSON_IsArray(conds) ? conds : NULL)) {
		const char *type = ju_str(c, "type"), *status = ju_str(c, "status");
		const char *why = ju_str(c, "reason");
		int code = 0;
		if (ju_str_eq(why, "WarmPoolNotFound")) {
			code = SBX_EWARMPOOLNOTFOUND;
		} else if (ju_str_eq(type, SBX_CONDITION_READY) && ju_str_eq(status, "False")) {
			for (size_t i = 0; i < sizeof(terminal) / sizeof(terminal[0]) && !code; i++)
				if (ju_str_eq(why, terminal[i].reason))
					code = terminal[i].code;
		}
		if (code) {
			if (reason)
				*reason = why;
			if (message)
				*message = ju_nz(ju_str(c, "message"));
			return code;
		}
		if (ju_str_eq(type, SBX_CONDITION_READY) && ju_str_eq(status, "True"))
			ready = true;
	}
	const cJSON *sb = k8s_obj_at(claim, "status.sandbox");
	const char *name = ju_str(sb, "name");
	if (ju_empty(name))
		name = ju_str(sb, "Name");  /* legacy spelling, still accepted upstream */
	if (ju_empty(name))
		return SBX_CLAIM_PENDING;
	if (sandbox_name)
		*sandbox_name = name;
	return !need_ready || ready ? SBX_CLAIM_RESOLVED : SBX_CLAIM_PENDING;
}

/* The address text of one podIPs entry (string or {"ip": ...}). */
static const char *pod_ip_text(const cJSON *e)
{
	if (cJSON_IsString(e))
		return e->valuestring;
	return ju_str(e, "ip");
}

const char *sbx_pick_pod_ip(const cJSON *pod_ips, char buf[SBX_IP_SIZE])
{
	const cJSON *e;
	char first6[SBX_IP_SIZE] = "";
	cJSON_ArrayForEach(e, (cJSON_IsArray(pod_ips) ? pod_ips : NULL)) {
		const char *s = pod_ip_text(e);
		struct in_addr a4;
		struct in6_addr a6;
		if (!s)
			continue;
		if (inet_pton(AF_INET, s, &a4) == 1)
			return inet_ntop(AF_INET, &a4, buf, SBX_IP_SIZE);
		if (inet_pton(AF_INET6, s, &a6) != 1)
			continue;
		if (IN6_IS_ADDR_V4MAPPED(&a6)) {
			memcpy(&a4, &a6.s6_addr[12], 4);
			return inet_ntop(AF_INET, &a4, buf, SBX_IP_SIZE);
		}
		if (!first6[0])
			inet_ntop(AF_INET6, &a6, first6, sizeof(first6));
	}
	if (!first6[0])
		return NULL;
	memcpy(buf, first6, SBX_IP_SIZE);
	return buf;
}
