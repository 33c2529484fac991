/*
 * claim_validate.c - the claim's additionalPodMetadata (docs/api.md#additionalpodmetadata):
 * keys and values checked with libk8s' validation.h (upstream apimachinery
 * messages), the allowed label domains file, the restricted domains, and
 * the no-override merge. Also the error helpers of claim.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "claim.h"
#include "jsonutil.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "k8s/validation.h"

/* ---- errors ---- */

bool wp_claim_err_set(wp_claim_err *e, wp_claim_err_kind kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	free(e->msg);
	e->kind = kind;
	e->msg = msg ? msg : strdup("out of memory");
	e->api_tail = 0;
	return false;
}

void wp_claim_err_clear(wp_claim_err *e)
{
	free(e->msg);
	e->msg = NULL;
	e->kind = WP_CLAIM_OK;
	e->api_tail = 0;
}

bool wp_claim_err_suppressed(const wp_claim_err *e)
{
	switch (e->kind) {
	case WP_CLAIM_E_INVALID_METADATA:
	case WP_CLAIM_E_ENV_REJECTED:
	case WP_CLAIM_E_NOT_OWNED:
	case WP_CLAIM_E_VCT:
		return true;
	default:
		return false;
	}
}

/* ---- allowed label domains ---- */

void wp_domains_free(wp_domains *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->items[i]);
	free(d->items);
	d->items = NULL;
	d->n = 0;
}

static int domains_add(wp_domains *d, const char *s, size_t len)
{
	char **ni = realloc(d->items, (d->n + 1) * sizeof(*ni));
	if (!ni)
		return ASB_ENOMEM;
	d->items = ni;
	char *v = strndup(s, len);
	if (!v)
		return ASB_ENOMEM;
	for (char *p = v; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	d->items[d->n++] = v;
	return 0;
}

int wp_domains_parse(const char *text, wp_domains *out)
{
	memset(out, 0, sizeof(*out));
	const char *p = text ? text : "";
	while (*p) {
		size_t len = strcspn(p, ",\n");
		const char *s = p, *e = p + len;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (e > s && domains_add(out, s, (size_t)(e - s)) != 0)
			goto nomem;
		p += len;
		if (*p)
			p++;
	}
	if (out->n == 0 && domains_add(out, WP_DEFAULT_LABEL_DOMAIN,
	                               strlen(WP_DEFAULT_LABEL_DOMAIN)) != 0)
		goto nomem;
	return 0;
nomem:
	wp_domains_free(out);
	return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
}

int wp_domains_load(const char *path, wp_domains *out)
{
	if (!path)
		path = WP_DEFAULT_LABEL_DOMAINS_FILE;
	FILE *f = fopen(path, "rb");
	if (!f) {
		if (errno == ENOENT)
			return wp_domains_parse(NULL, out);
		return asb_error_set(ASB_ERROR, 0, NULL, "cannot read allowed label domains file %s: %s",
		                     path, strerror(errno));
	}
	char *buf = NULL;
	size_t len = 0, cap = 0;
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			char *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
			}
			buf = nb;
		}
		memcpy(buf + len, chunk, n);
		len += n;
	}
	bool failed = ferror(f);
	fclose(f);
	if (failed) {
		free(buf);
		return asb_error_set(ASB_ERROR, 0, NULL, "cannot read allowed label domains file %s", path);
	}
	if (buf)
		buf[len] = '\0';
	int rc = wp_domains_parse(buf, out);
	free(buf);
	return rc;
}

/* ---- additionalPodMetadata ---- */

static bool domain_matches(const char *domain, const char *allowed)
{
	size_t dl = strlen(domain), al = strlen(allowed);
	if (strcmp(domain, allowed) == 0)
		return true;
	return dl > al + 1 && domain[dl - al - 1] == '.' && strcmp(domain + dl - al, allowed) == 0;
}

/* The keys of map `m` in sorted order (borrowed). */
static void sorted_keys(const cJSON *m, strlist *out)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, m)
		if (it->string)
			strlist_add(out, it->string);
	strlist_sort(out);
}

static char *lower_dup(const char *s, size_t n)
{
	char *d = strndup(s, n);
	if (d)
		for (char *p = d; *p; p++)
			*p = (char)tolower((unsigned char)*p);
	return d;
}

/* The inner failure of one label, or NULL (new string). */
static char *label_problem(const char *k, const char *v, const wp_domains *domains)
{
	char m[K8S_VALIDATION_MSG_SIZE];
	if (k8s_validate_qualified_name(k, m, sizeof(m)) != 0)
		return ju_printf("invalid label key: \"%s\": %s", k, m);
	if (strcasecmp(k, "app") == 0 && strcasecmp(v, "sandbox-router") == 0)
		return ju_printf("restricted system label value: \"%s\"=\"%s\" is not allowed in "
		                 "AdditionalPodMetadata", k, v);
	const char *slash = strchr(k, '/');
	if (!slash)
		return ju_printf("label \"%s\" must have a domain prefix (e.g. "
		                 "'sandbox.users.io/my-label') to prevent opting into unintended "
		                 "policy domains", k);
	char *domain = lower_dup(k, (size_t)(slash - k));
	if (!domain)
		return strdup("out of memory");
	bool ok = false;
	for (size_t i = 0; i < domains->n && !ok; i++)
		ok = domain_matches(domain, domains->items[i]);
	if (!ok) {
		char *r = ju_printf("label domain \"%s\" is not in the allowlist", domain);
		free(domain);
		return r;
	}
	free(domain);
	if (k8s_validate_label_value(v, m, sizeof(m)) != 0)
		return ju_printf("invalid label value: \"%s\" does not match allowed pattern: %s", v, m);
	return NULL;
}

static char *annotation_problem(const char *k)
{
	char m[K8S_VALIDATION_MSG_SIZE];
	if (k8s_validate_qualified_name(k, m, sizeof(m)) != 0)
		return ju_printf("invalid annotation key: \"%s\": %s", k, m);
	const char *slash = strchr(k, '/');
	if (!slash || strcmp(k, WP_ANNOTATION_SAFE_TO_EVICT) == 0)
		return NULL;
	static const char *const restricted[] = { "kubernetes.io", "k8s.io", "agents.x-k8s.io" };
	char *domain = lower_dup(k, (size_t)(slash - k));
	if (!domain)
		return strdup("out of memory");
	bool bad = false;
	for (size_t i = 0; i < 3 && !bad; i++)
		bad = domain_matches(domain, restricted[i]);
	free(domain);
	if (bad)
		return ju_printf("restricted system domain: \"%s\" is not allowed in "
		                 "AdditionalPodMetadata", k);
	return NULL;
}

bool wp_claim_validate_metadata(const cJSON *claim, const wp_domains *domains,
                                wp_claim_err *err)
{
	const cJSON *apm = k8s_obj_at(claim, "spec.additionalPodMetadata");
	const cJSON *labels = cJSON_GetObjectItem(apm, "labels");
	const cJSON *annotations = cJSON_GetObjectItem(apm, "annotations");
	strlist keys = { 0 };
	sorted_keys(labels, &keys);
	for (size_t i = 0; i < keys.len; i++) {
		const char *k = keys.items[i];
		char *p = label_problem(k, ju_str(labels, k) ? ju_str(labels, k) : "", domains);
		if (p) {
			wp_claim_err_set(err, WP_CLAIM_E_INVALID_METADATA,
			                 "invalid additionalPodMetadata: failed to validate label \"%s\": %s",
			                 k, p);
			free(p);
			strlist_free(&keys);
			return false;
		}
	}
	strlist_free(&keys);
	sorted_keys(annotations, &keys);
	for (size_t i = 0; i < keys.len; i++) {
		const char *k = keys.items[i];
		char *p = annotation_problem(k);
		if (p) {
			wp_claim_err_set(err, WP_CLAIM_E_INVALID_METADATA,
			                 "invalid additionalPodMetadata: failed to validate annotation "
			                 "\"%s\": %s", k, p);
			free(p);
			strlist_free(&keys);
			return false;
		}
	}
	strlist_free(&keys);
	return true;
}

/* Merges map `add` into meta[member] (created) with the no-override rule. */
static bool merge_map(cJSON *meta, const char *member, const char *what, const cJSON *add,
                      wp_claim_err *err)
{
	if (!cJSON_IsObject(add) || !add->child)
		return true;
	cJSON *dst = cJSON_GetObjectItem(meta, member);
	if (!cJSON_IsObject(dst)) {
		dst = ju_obj(meta, member);
		if (!dst)
			return wp_claim_err_set(err, WP_CLAIM_E_OTHER, "out of memory");
	}
	strlist keys = { 0 };
	sorted_keys(add, &keys);
	bool ok = true;
	for (size_t i = 0; i < keys.len && ok; i++) {
		const char *k = keys.items[i];
		const char *v = ju_nz(ju_str(add, k));
		const cJSON *have = cJSON_GetObjectItem(dst, k);
		if (have) {
			const char *hv = ju_nz(cJSON_GetStringValue(have));
			if (strcmp(hv, v) != 0)
				ok = wp_claim_err_set(err, WP_CLAIM_E_OTHER,
				                      "metadata override conflict: %s \"%s\" is defined in "
				                      "template with value \"%s\", but claim requests \"%s\"",
				                      what, k, hv, v);
			continue;
		}
		if (!ju_set_str(dst, k, v))
			ok = wp_claim_err_set(err, WP_CLAIM_E_OTHER, "out of memory");
	}
	strlist_free(&keys);
	return ok;
}

bool wp_merge_pod_metadata(cJSON *meta, const cJSON *claim, wp_claim_err *err)
{
	const cJSON *apm = k8s_obj_at(claim, "spec.additionalPodMetadata");
	return merge_map(meta, "labels", "label", cJSON_GetObjectItem(apm, "labels"), err) &&
	       merge_map(meta, "annotations", "annotation",
	                 cJSON_GetObjectItem(apm, "annotations"), err);
}
