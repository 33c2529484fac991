/*
 * cache.c - Sandbox and Pod informers behind the resolver's view (cache.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/informer.h"
#include "k8s/object.h"
#include "sandbox/api.h"
#include "sandbox/idle.h"
#include "sandbox/podcache.h"
#include "sandbox/reconciler.h"
#include "cache.h"

#define INDEX_OWNER "owner"
#define INDEX_IP "ip"

struct rt_cache {
	k8s_informer *sandboxes;
	k8s_informer *pods;
	char *ns;  /* "" for all */
};

static void copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

/* ---- Sandboxes ---- */

static void keep_key(cJSON *dst, const cJSON *src, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, key);
	if (v)
		cJSON_AddItemToObject(dst, key, cJSON_Duplicate(v, true));
}

cJSON *rt_cache_sandbox_transform(cJSON *obj, void *ud)
{
	(void)ud;
	cJSON *out = cJSON_CreateObject();
	cJSON *meta = out ? cJSON_AddObjectToObject(out, "metadata") : NULL;
	if (!meta) {
		cJSON_Delete(out);
		return obj;  /* keep the whole object rather than lose it */
	}
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	keep_key(meta, m, "name");
	keep_key(meta, m, "namespace");
	keep_key(meta, m, "uid");
	keep_key(meta, m, "resourceVersion");
	keep_key(meta, m, "deletionTimestamp");
	const char *pool = k8s_obj_label(obj, SBX_LABEL_WARM_POOL_SANDBOX);
	if (pool)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "labels"),
		                        SBX_LABEL_WARM_POOL_SANDBOX, pool);
	const char *podname = k8s_obj_annotation(obj, SBX_ANNOTATION_POD_NAME);
	const char *active = k8s_obj_annotation(obj, SBX_ANNOTATION_LAST_ACTIVITY);
	if (podname || active) {
		cJSON *ann = cJSON_AddObjectToObject(meta, "annotations");
		if (podname)
			cJSON_AddStringToObject(ann, SBX_ANNOTATION_POD_NAME, podname);
		if (active)
			cJSON_AddStringToObject(ann, SBX_ANNOTATION_LAST_ACTIVITY, active);
	}
	/* the idle policy and whether the Sandbox is suspended (idlesync.h);
	 * operatingMode only when Suspended: Running is every other Sandbox's
	 * default, and not worth a string in each of them */
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	const char *mode = k8s_obj_str(obj, "spec.operatingMode");
	bool suspended = mode && strcmp(mode, SBX_OPERATING_MODE_SUSPENDED) == 0;
	if (suspended || cJSON_GetObjectItemCaseSensitive(spec, "idleTimeoutSeconds")) {
		cJSON *ds = cJSON_AddObjectToObject(out, "spec");
		keep_key(ds, spec, "idleTimeoutSeconds");
		keep_key(ds, spec, "idlePolicy");
		if (suspended)
			cJSON_AddStringToObject(ds, "operatingMode", mode);
	}
	cJSON_Delete(obj);
	return out;
}

int rt_cache_sandbox_info(const cJSON *sb, rt_sandbox_info *out)
{
	memset(out, 0, sizeof(*out));
	copy(out->uid, sizeof(out->uid), k8s_obj_uid(sb));
	const char *podname = k8s_obj_annotation(sb, SBX_ANNOTATION_POD_NAME);
	copy(out->pod_name, sizeof(out->pod_name), podname && *podname ? podname : k8s_obj_name(sb));
	const char *pool = k8s_obj_label(sb, SBX_LABEL_WARM_POOL_SANDBOX);
	out->warm_pool = pool && *pool;
	sbx_idle_policy pol;
	sbx_idle_policy_of(sb, &pol);
	out->idle.timeout_ms = pol.timeout_ms;
	/* sbx_idle_applies() without its Ready condition (not cached): the
	 * router sees requests only while a pod serves them anyway */
	out->idle.applies = pol.action != SBX_IDLE_OFF && !k8s_obj_is_deleting(sb) &&
	                    !out->warm_pool;
	/* an unclaimed pool member is reached by pod IP only: a request by
	 * its name (a guess) must not wake one suspended by hand either */
	out->idle.resumable = sbx_idle_resumable(sb) && !out->warm_pool;
	out->idle.wakes = pol.action == SBX_IDLE_SUSPEND && !k8s_obj_is_deleting(sb) &&
	                  !out->warm_pool;
	const char *mode = k8s_obj_str(sb, "spec.operatingMode");
	out->idle.suspended = mode && strcmp(mode, SBX_OPERATING_MODE_SUSPENDED) == 0;
	out->idle.applies &= !out->idle.suspended;
	const char *active = k8s_obj_annotation(sb, SBX_ANNOTATION_LAST_ACTIVITY);
	int64_t ms;
	out->idle.last_activity_ms = active && k8s_time_parse(active, &ms) == 0 ? ms : 0;
	return 0;
}

static int read_sandbox(const void *obj, void *ud)
{
	return rt_cache_sandbox_info(obj, ud);
}

/* ---- Pods ---- */

int rt_cache_index_pod_ips(const cJSON *obj, const char **keys, int cap, void *ud)
{
	(void)ud;
	int n = 0;
	const cJSON *ip;
	cJSON_ArrayForEach(ip, k8s_obj_at(obj, "status.podIPs")) {
		const char *s = k8s_obj_str(ip, "ip");
		if (s && *s && n < cap)
			keys[n++] = s;
	}
	const char *one = k8s_obj_str(obj, "status.podIP");
	if (one && *one && n < cap) {
		bool dup = false;
		for (int i = 0; i < n; i++)
			dup |= strcmp(keys[i], one) == 0;
		if (!dup)
			keys[n++] = one;
	}
	return n;
}

/* The controller reference of a Pod when it is a Sandbox of agents.x-k8s.io. */
static const sbx_pod_owner_ref *sandbox_owner(const sbx_pod *p)
{
	for (uint32_t i = 0; i < p->nowner_refs; i++) {
		const sbx_pod_owner_ref *r = &p->owner_refs[i];
		if (r->controller != 1 || !r->kind || strcmp(r->kind, SBX_KIND) != 0 || !r->api_version)
			continue;
		size_t g = strlen(SBX_GROUP);
		if (strncmp(r->api_version, SBX_GROUP, g) == 0 && r->api_version[g] == '/')
			return r;
	}
	return NULL;
}

static void pod_info(const sbx_pod *p, rt_pod_info *out)
{
	memset(out, 0, sizeof(*out));
	copy(out->ns, sizeof(out->ns), p->namespace_);
	copy(out->name, sizeof(out->name), p->name);
	const sbx_pod_owner_ref *own = sandbox_owner(p);
	if (own) {
		copy(out->owner_uid, sizeof(out->owner_uid), own->uid);
		copy(out->owner_name, sizeof(out->owner_name), own->name);
	}
	for (uint32_t i = 0; i < p->npod_ips && out->nips < RT_MAX_IPS; i++)
		if (p->pod_ips[i])
			copy(out->ips[out->nips++], sizeof(out->ips[0]), p->pod_ips[i]);
	if (!out->nips && p->pod_ip && *p->pod_ip)
		copy(out->ips[out->nips++], sizeof(out->ips[0]), p->pod_ip);
	const sbx_pod_condition *c = sbx_pod_condition_get(p, "Ready");
	out->ready = c && c->status && strcmp(c->status, "True") == 0;
	out->deleting = p->deletion_timestamp != NULL;
	out->warm_pool = sbx_pod_label(p, SBX_LABEL_WARM_POOL_SANDBOX) != NULL;
}

static int read_pod(const void *obj, void *ud)
{
	pod_info(obj, ud);
	return 0;
}

typedef struct {
	rt_pod_info *out;
	int cap, n;
} pod_list;

static int collect_pod(const void *obj, void *ud)
{
	pod_list *l = ud;
	if (l->n < l->cap)
		pod_info(obj, &l->out[l->n]);
	l->n++;
	return l->n >= l->cap ? 1 : 0;
}

/* ---- view ---- */

static bool v_synced(void *ud)
{
	return rt_cache_synced(ud);
}

static bool v_authoritative(void *ud, const char *ns)
{
	rt_cache *c = ud;
	return rt_cache_synced(c) && (!*c->ns || strcmp(c->ns, ns) == 0);
}

static int v_sandbox(void *ud, const char *ns, const char *name, rt_sandbox_info *out)
{
	rt_cache *c = ud;
	return k8s_informer_read(c->sandboxes, ns, name, read_sandbox, out) == 0 ? 0 : -1;
}

static int v_pod(void *ud, const char *ns, const char *name, rt_pod_info *out)
{
	rt_cache *c = ud;
	return k8s_informer_read(c->pods, ns, name, read_pod, out) == 0 ? 0 : -1;
}

static int v_pods_owned(void *ud, const char *uid, rt_pod_info *out, int cap)
{
	rt_cache *c = ud;
	pod_list l = { out, cap, 0 };
	k8s_informer_read_index(c->pods, INDEX_OWNER, uid, collect_pod, &l);
	return l.n < cap ? l.n : cap;
}

static int v_pods_with_ip(void *ud, const char *ip, rt_pod_info *out, int cap)
{
	rt_cache *c = ud;
	pod_list l = { out, cap, 0 };
	k8s_informer_read_index(c->pods, INDEX_IP, ip, collect_pod, &l);
	return l.n < cap ? l.n : cap;
}

void rt_cache_view_init(rt_cache *c, rt_cache_view *v)
{
	*v = (rt_cache_view){
		.authoritative = v_authoritative, .synced = v_synced, .sandbox = v_sandbox,
		.pod = v_pod, .pods_owned = v_pods_owned, .pods_with_ip = v_pods_with_ip, .ud = c,
	};
}

/* ---- life cycle ---- */

int rt_cache_new(rt_cache **out, k8s_client *client, const char *ns, asb_logger *log)
{
	rt_cache *c = calloc(1, sizeof(*c));
	if (!c || !(c->ns = strdup(ns ? ns : ""))) {
		free(c);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	k8s_informer_options so = K8S_INFORMER_OPTIONS_INIT;
	so.resource = &sbx_resource_sandboxes;
	so.namespace_ = *c->ns ? c->ns : NULL;
	so.resync_ms = 600000;
	so.transform = rt_cache_sandbox_transform;
	so.logger = log;
	k8s_informer_options po = K8S_INFORMER_OPTIONS_INIT;
	po.resource = &k8s_resource_pods;
	po.namespace_ = so.namespace_;
	po.label_selector = SBX_LABEL_NAME_HASH;
	po.field_selector = "status.podIP!=";
	po.resync_ms = 600000;
	po.transform = sbx_pod_transform;
	po.codec = sbx_pod_codec();
	po.logger = log;
	int rc;
	if ((rc = k8s_informer_new(&c->sandboxes, client, &so)) < 0 ||
	    (rc = k8s_informer_new(&c->pods, client, &po)) < 0 ||
	    (rc = k8s_informer_add_index(c->pods, INDEX_OWNER, k8s_index_by_owner_uid, NULL)) < 0 ||
	    (rc = k8s_informer_add_index(c->pods, INDEX_IP, rt_cache_index_pod_ips, NULL)) < 0) {
		rt_cache_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int rt_cache_start(rt_cache *c)
{
	int rc = k8s_informer_start(c->sandboxes);
	return rc < 0 ? rc : k8s_informer_start(c->pods);
}

int rt_cache_wait_synced(rt_cache *c, long timeout_ms)
{
	int64_t deadline = k8s_monotonic_ms() + timeout_ms;
	int rc = k8s_informer_wait_synced(c->sandboxes, timeout_ms);
	if (rc < 0)
		return rc;
	long left = (long)(deadline - k8s_monotonic_ms());
	return k8s_informer_wait_synced(c->pods, left > 0 ? left : 0);
}

bool rt_cache_synced(rt_cache *c)
{
	return k8s_informer_has_synced(c->sandboxes) && k8s_informer_has_synced(c->pods);
}

void rt_cache_free(rt_cache *c)
{
	if (!c)
		return;
	k8s_informer_free(c->pods);
	k8s_informer_free(c->sandboxes);
	free(c->ns);
	free(c);
}
