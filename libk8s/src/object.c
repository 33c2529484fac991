/*
 * object.c - read helpers over cJSON Kubernetes objects (see object.h) and
 * the RFC 3339 time conversions used by conditions and expiry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "k8s/object.h"

const cJSON *k8s_obj_at(const cJSON *obj, const char *path)
{
	const cJSON *cur = obj;
	const char *p = path;
	char seg[256];
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n >= sizeof(seg) || !cJSON_IsObject(cur))
			return NULL;
		memcpy(seg, p, n);
		seg[n] = '\0';
		cur = cJSON_GetObjectItemCaseSensitive(cur, seg);
		p += n;
		if (*p == '.')
			p++;
	}
	return cur;
}

const char *k8s_obj_str(const cJSON *obj, const char *path)
{
	const cJSON *n = k8s_obj_at(obj, path);
	return cJSON_IsString(n) ? n->valuestring : NULL;
}

const char *k8s_obj_name(const cJSON *obj) { return k8s_obj_str(obj, "metadata.name"); }
const char *k8s_obj_namespace(const cJSON *obj) { return k8s_obj_str(obj, "metadata.namespace"); }
const char *k8s_obj_uid(const cJSON *obj) { return k8s_obj_str(obj, "metadata.uid"); }
const char *k8s_obj_resource_version(const cJSON *obj) { return k8s_obj_str(obj, "metadata.resourceVersion"); }

int64_t k8s_obj_generation(const cJSON *obj)
{
	const cJSON *n = k8s_obj_at(obj, "metadata.generation");
	/* a number beyond int64 (only in a malformed object) must not reach
	 * the conversion, which is undefined behaviour for it */
	if (!cJSON_IsNumber(n) || !(n->valuedouble > -9.2e18 && n->valuedouble < 9.2e18))
		return 0;
	return (int64_t)n->valuedouble;
}

bool k8s_obj_is_deleting(const cJSON *obj)
{
	const cJSON *n = k8s_obj_at(obj, "metadata.deletionTimestamp");
	return n && !cJSON_IsNull(n);
}

static const char *map_str(const cJSON *obj, const char *map, const char *key)
{
	const cJSON *m = k8s_obj_at(obj, map);
	const cJSON *v = cJSON_IsObject(m) ? cJSON_GetObjectItemCaseSensitive(m, key) : NULL;
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const char *k8s_obj_label(const cJSON *obj, const char *key)
{
	return map_str(obj, "metadata.labels", key);
}

const char *k8s_obj_annotation(const cJSON *obj, const char *key)
{
	return map_str(obj, "metadata.annotations", key);
}

const cJSON *k8s_obj_controller_ref(const cJSON *obj)
{
	const cJSON *refs = k8s_obj_at(obj, "metadata.ownerReferences");
	const cJSON *r;
	cJSON_ArrayForEach(r, refs) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "controller")))
			return r;
	}
	return NULL;
}

char *k8s_obj_key(const cJSON *obj)
{
	const char *name = k8s_obj_name(obj);
	const char *ns = k8s_obj_namespace(obj);
	if (!name)
		return NULL;
	size_t n = strlen(name) + (ns ? strlen(ns) + 1 : 0) + 1;
	char *k = malloc(n);
	if (!k)
		return NULL;
	if (ns && *ns)
		snprintf(k, n, "%s/%s", ns, name);
	else
		snprintf(k, n, "%s", name);
	return k;
}

int k8s_key_split(const char *key, char **ns, char **name)
{
	*ns = *name = NULL;
	if (!key || !*key)
		return asb_error_set(ASB_EINVAL, 0, NULL, "empty object key");
	const char *slash = strchr(key, '/');
	*ns = slash ? strndup(key, (size_t)(slash - key)) : strdup("");
	*name = strdup(slash ? slash + 1 : key);
	if (!*ns || !*name) {
		free(*ns);
		free(*name);
		*ns = *name = NULL;
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	const int64_t era = (y >= 0 ? y : y - 399) / 400;
	const unsigned yoe = (unsigned)(y - era * 400);
	const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

int k8s_time_parse(const char *s, int64_t *ms_out)
{
	int Y, M, D, h, m, sec, n = 0;
	if (!s || sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &Y, &M, &D, &h, &m, &sec, &n) != 6 || n == 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 time \"%s\"", s ? s : "");
	if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
		return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 time \"%s\"", s);
	const char *p = s + n;
	int64_t frac_ms = 0;
	if (*p == '.') {
		int digits = 0;
		p++;
		while (*p >= '0' && *p <= '9') {
			if (digits < 3)
				frac_ms = frac_ms * 10 + (*p - '0');
			digits++;
			p++;
		}
		if (digits == 0)
			return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 time \"%s\"", s);
		for (; digits < 3; digits++)
			frac_ms *= 10;
	}
	int64_t offset_s = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int oh, om;
		if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
			return asb_error_set(ASB_EINVAL, 0, NULL, "invalid RFC 3339 offset in \"%s\"", s);
		offset_s = (oh * 3600 + om * 60) * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return asb_error_set(ASB_EINVAL, 0, NULL, "RFC 3339 time \"%s\" has no zone", s);
	}
	if (*p != '\0')
		return asb_error_set(ASB_EINVAL, 0, NULL, "trailing characters in time \"%s\"", s);
	int64_t days = days_from_civil(Y, (unsigned)M, (unsigned)D);
	int64_t secs = days * 86400 + h * 3600 + m * 60 + sec - offset_s;
	*ms_out = secs * 1000 + frac_ms;
	return 0;
}

char *k8s_time_format(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

int64_t k8s_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t k8s_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
