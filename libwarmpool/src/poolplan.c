/*
 * poolplan.c - the pure decisions of the SandboxWarmPool controller
 * (docs/api.md#warm-pool-controller); see poolplan.h for the three phases. poolctl.c reads
 * the caches, runs the phases and applies what they decide.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "warmpool/blueprint.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "jsonutil.h"
#include "poolplan.h"
#include "claim.h"

/* floor/ceil of non-negative values, without libm. */
static double floor_pos(double x) { return (double)(long long)x; }
static double ceil_pos(double x) { double f = floor_pos(x); return f < x ? f + 1 : f; }

void wp_pool_hash(const cJSON *pool, char out[SBX_NAME_HASH_SIZE])
{
	sbx_name_hash(k8s_obj_name(pool), out);
}

int wp_pool_desired(const cJSON *pool)
{
	const cJSON *r = k8s_obj_at(pool, "spec.replicas");
	if (!cJSON_IsNumber(r))
		return 1;
	return r->valuedouble < 0 ? 0 : (r->valuedouble > 1e9 ? 1000000000 : (int)r->valuedouble);
}

bool wp_pool_recreate(const cJSON *pool)
{
	return ju_str_eq(k8s_obj_str(pool, "spec.updateStrategy.type"), WP_UPDATE_STRATEGY_RECREATE);
}

bool wp_pool_rolling(const cJSON *pool)
{
	return ju_str_eq(k8s_obj_str(pool, "spec.updateStrategy.type"), WP_UPDATE_STRATEGY_ROLLING);
}

/* An int-or-string limit against `desired`: `up` rounds a percentage up.
 * Any non-negative integer or percentage (above 100 % too, as a
 * Deployment's maxSurge), clamped to 1e9; anything else: 25 %. */
static int resolve_limit(const cJSON *v, int desired, bool up)
{
	double pct = 25;
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 &&
	    v->valuedouble == (double)(long long)v->valuedouble)
		return v->valuedouble > 1e9 ? 1000000000 : (int)v->valuedouble;
	if (cJSON_IsString(v) && v->valuestring[0] >= '0' && v->valuestring[0] <= '9') {
		char *end = NULL;
		double n = strtod(v->valuestring, &end);
		bool digits = true;
		for (const char *c = v->valuestring; c < end; c++)
			digits = digits && *c >= '0' && *c <= '9';
		if (digits && end && strcmp(end, "%") == 0)
			pct = n;   /* huge: clamped below */
	}
	double x = (double)desired * pct / 100.0;
	if (x > 1e9)
		x = 1e9;
	return (int)(up ? ceil_pos(x) : floor_pos(x));
}

void wp_pool_rolling_limits(const cJSON *pool, int desired, int *max_surge, int *max_unavailable)
{
	const cJSON *ru = k8s_obj_at(pool, "spec.updateStrategy.rollingUpdate");
	*max_surge = resolve_limit(cJSON_GetObjectItemCaseSensitive(ru, "maxSurge"), desired, true);
	*max_unavailable = resolve_limit(cJSON_GetObjectItemCaseSensitive(ru, "maxUnavailable"),
	                                 desired, false);
	if (*max_unavailable > desired)
		*max_unavailable = desired;
	if (*max_surge == 0 && *max_unavailable == 0)
		*max_surge = 1;   /* else a roll could never start */
}

static bool sandbox_ready(const cJSON *sbx)
{
	const cJSON *conds = k8s_obj_at(sbx, "status.conditions");
	const cJSON *c;
	cJSON_ArrayForEach(c, conds)
		if (ju_str_eq(ju_str(c, "type"), SBX_CONDITION_READY))
			return ju_str_eq(ju_str(c, "status"), "True");
	return false;
}

/* A controller ownerReference to the pool. */
static cJSON *pool_ref(const cJSON *pool)
{
	cJSON *ref = cJSON_CreateObject();
	if (!ref)
		return NULL;
	if (!ju_set_str(ref, "apiVersion", WP_API_VERSION) ||
	    !ju_set_str(ref, "kind", SBX_KIND_WARM_POOL) ||
	    !ju_set_str(ref, "name", ju_nz(k8s_obj_name(pool))) ||
	    !ju_set_str(ref, "uid", ju_nz(k8s_obj_uid(pool))) ||
	    !ju_set(ref, "controller", cJSON_CreateTrue()) ||
	    !ju_set(ref, "blockOwnerDeletion", cJSON_CreateTrue())) {
		cJSON_Delete(ref);
		return NULL;
	}
	return ref;
}

static bool set_label(cJSON *obj, const char *key, const char *value)
{
	cJSON *labels = ju_obj(ju_obj(obj, "metadata"), "labels");
	return labels && ju_set_str(labels, key, value);
}

/* The orphan with a controller ref to the pool (kept: its other refs) and
 * launch-type warm: the body of the adoption Update (docs/api.md#pool-members). */
static cJSON *adopted(const cJSON *pool, const cJSON *sbx)
{
	cJSON *o = cJSON_Duplicate(sbx, true);
	if (!o)
		return NULL;
	cJSON *md = ju_obj(o, "metadata");
	cJSON *refs = md ? cJSON_GetObjectItemCaseSensitive(md, "ownerReferences") : NULL;
	if (md && !cJSON_IsArray(refs)) {
		refs = cJSON_CreateArray();
		if (!ju_set(md, "ownerReferences", refs))
			refs = NULL;
	}
	cJSON *ref = refs ? pool_ref(pool) : NULL;
	if (ref && !cJSON_AddItemToArray(refs, ref)) {
		cJSON_Delete(ref);
		ref = NULL;
	}
	if (!ref || !set_label(o, SBX_LABEL_LAUNCH_TYPE, WP_LAUNCH_TYPE_WARM)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* Semantic verdicts of one pass, per old blueprint-hash label of owned
 * members (docs/api.md#staleness-and-update-strategies: members built from the same template version share it). */
typedef struct {
	char hash[SBX_NAME_HASH_SIZE];
	bool stale;
} verdict;

#define MAX_VERDICTS 16

/* wp_sandbox_is_stale() with the per-pass cache of hash-mismatch results. */
static bool member_stale(const wp_pool_input *in, const cJSON *s, bool owned,
                         verdict *cache, size_t *ncache)
{
	const char *old = k8s_obj_label(s, WP_LABEL_TEMPLATE_HASH);
	char ref[SBX_NAME_HASH_SIZE];
	sbx_name_hash(k8s_obj_name(in->tpl), ref);
	if (!owned || !in->tpl_hash || ju_empty(old) || strlen(old) >= SBX_NAME_HASH_SIZE ||
	    strcmp(old, in->tpl_hash) == 0 ||
	    !ju_str_eq(k8s_obj_label(s, SBX_LABEL_TEMPLATE_REF_HASH), ref))
		return wp_sandbox_is_stale(in->tpl, in->tpl_hash, s, owned);
	for (size_t i = 0; i < *ncache; i++)
		if (strcmp(cache[i].hash, old) == 0)
			return cache[i].stale;
	bool stale = wp_blueprint_differs(in->tpl, s);
	if (*ncache < MAX_VERDICTS) {
		strcpy(cache[*ncache].hash, old);
		cache[(*ncache)++].stale = stale;
	}
	return stale;
}

int wp_pool_classify(const wp_pool_input *in, const cJSON *members,
                     wp_pool_member **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	int cap = cJSON_GetArraySize(members);
	wp_pool_member *m = calloc(cap > 0 ? (size_t)cap : 1, sizeof(*m));
	if (!m)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "warm pool: out of memory");
	const char *ns = k8s_obj_namespace(in->pool), *pool_uid = k8s_obj_uid(in->pool);
	bool recreate = wp_pool_recreate(in->pool), rolling = wp_pool_rolling(in->pool);
	verdict cache[MAX_VERDICTS];
	size_t ncache = 0;
	size_t k = 0;
	const cJSON *s;
	cJSON_ArrayForEach(s, members) {
		if (!ju_str_eq(k8s_obj_namespace(s), ns))
			continue;
		wp_pool_member *x = &m[k++];
		x->obj = s;
		x->name = k8s_obj_name(s);
		x->uid = k8s_obj_uid(s);
		x->ready = sandbox_ready(s);
		const char *ct = k8s_obj_str(s, "metadata.creationTimestamp");
		if (!ct || k8s_time_parse(ct, &x->created_ms) != 0)
			x->created_ms = 0;
		k8s_owner_class oc = k8s_obj_owner_class(s, pool_uid);
		x->owned = oc == K8S_OWNER_THIS;

		if (oc == K8S_OWNER_OTHER) {            /* claimed, or someone else's */
			x->cls = WP_MEMBER_IGNORED;
			continue;
		}
		if (k8s_obj_is_deleting(s)) {
			/* A deleting orphan is not counted and never adopted. */
			x->cls = x->owned ? WP_MEMBER_TERMINATING : WP_MEMBER_IGNORED;
			continue;
		}
		if (x->owned && in->deletion_pending && in->deletion_pending(in->ud, x->uid)) {
			x->cls = WP_MEMBER_TERMINATING;
			continue;
		}
		/* Without a template nothing is judged stale: orphans are
		 * adopted unchecked (docs/api.md#pool-members). */
		if (in->tpl && (recreate || rolling || !x->owned) &&
		    member_stale(in, s, x->owned, cache, &ncache)) {
			if (rolling && x->owned) {
				x->outdated = true;   /* serves until the roll replaces it */
			} else {
				x->action = WP_MEMBER_DELETE_STALE;
				x->cls = x->owned ? WP_MEMBER_TERMINATING : WP_MEMBER_IGNORED;
				continue;
			}
		}
		x->cls = WP_MEMBER_ACTIVE;
		if (x->owned && !ju_str_eq(k8s_obj_label(s, SBX_LABEL_LAUNCH_TYPE), WP_LAUNCH_TYPE_WARM)) {
			x->body = cJSON_Duplicate(s, true);
			if (!x->body || !set_label(x->body, SBX_LABEL_LAUNCH_TYPE, WP_LAUNCH_TYPE_WARM))
				goto oom;
			x->action = WP_MEMBER_SET_LAUNCH_TYPE;
		} else if (!x->owned) {
			if (!(x->body = adopted(in->pool, s)))
				goto oom;
			x->action = WP_MEMBER_ADOPT;
		}
	}
	*out = m;
	*n = k;
	return 0;
oom:
	wp_pool_members_free(m, k);
	return asb_error_set(ASB_ENOMEM, 0, NULL, "warm pool: out of memory");
}

void wp_pool_classify_failed(wp_pool_member *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!m[i].failed)
			continue;
		if (m[i].action == WP_MEMBER_DELETE_STALE || m[i].action == WP_MEMBER_SET_LAUNCH_TYPE ||
		    m[i].action == WP_MEMBER_ADOPT) {
			m[i].cls = WP_MEMBER_SKIPPED;
			m[i].action = WP_MEMBER_NONE;
		}
		m[i].failed = false;
	}
}

int wp_pool_stuck(const wp_pool_input *in, wp_pool_member *m, size_t n, long *grace_requeue_ms)
{
	int unsched = 0;
	int64_t earliest = 0;
	const char *ns = k8s_obj_namespace(in->pool);
	for (size_t i = 0; i < n; i++) {
		wp_pool_member *x = &m[i];
		/* Only members already settled as active this pass. */
		if (x->cls != WP_MEMBER_ACTIVE || x->ready || x->created_ms == 0)
			continue;
		x->action = WP_MEMBER_NONE;
		int64_t deadline = x->created_ms + in->readiness_grace_ms;
		if (in->now_ms - x->created_ms <= in->readiness_grace_ms) {
			if (!earliest || deadline < earliest)
				earliest = deadline;
			continue;
		}
		const char *pod = k8s_obj_annotation(x->obj, SBX_ANNOTATION_POD_NAME);
		if (ju_empty(pod))
			pod = x->name;
		x->stuck = true;
		if (in->pod_unschedulable && in->pod_unschedulable(in->ud, ns, pod)) {
			x->unschedulable = true;
			unsched++;
			continue;
		}
		x->action = WP_MEMBER_DELETE_STUCK;
		x->cls = WP_MEMBER_TERMINATING;
	}
	*grace_requeue_ms = 0;
	if (earliest) {
		double d = (double)(earliest - in->now_ms + WP_POOL_GRACE_SLACK_MS);
		if (d < 1)
			d = 1;
		d *= 1.0 + 0.5 * (in->jitter < 0 ? 0 : (in->jitter >= 1 ? 0.999999 : in->jitter));
		*grace_requeue_ms = (long)ceil_pos(d);
	}
	return unsched;
}

void wp_pool_stuck_failed(wp_pool_member *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (m[i].failed && m[i].action == WP_MEMBER_DELETE_STUCK) {
			m[i].cls = WP_MEMBER_ACTIVE;
			m[i].action = WP_MEMBER_NONE;
		}
		m[i].failed = false;
	}
}

char *wp_go_duration(long ms, char *buf, size_t cap)
{
	if (ms == 0) {
		snprintf(buf, cap, "0s");
		return buf;
	}
	const char *sign = ms < 0 ? "-" : "";
	unsigned long u = ms < 0 ? (unsigned long)-(ms + 1) + 1 : (unsigned long)ms;
	if (u < 1000) {
		snprintf(buf, cap, "%s%lums", sign, u);
		return buf;
	}
	unsigned long h = u / 3600000, mi = u / 60000 % 60, s = u / 1000 % 60, frac = u % 1000;
	char sec[32];
	if (frac) {
		int n = snprintf(sec, sizeof(sec), "%lu.%03lu", s, frac);
		while (n > 0 && sec[n - 1] == '0')
			sec[--n] = '\0';
	} else {
		snprintf(sec, sizeof(sec), "%lu", s);
	}
	if (h)
		snprintf(buf, cap, "%s%luh%lum%ss", sign, h, mi, sec);
	else if (mi)
		snprintf(buf, cap, "%s%lum%ss", sign, mi, sec);
	else
		snprintf(buf, cap, "%s%ss", sign, sec);
	return buf;
}

char *wp_pool_not_progressing_note(int unschedulable, int desired, long grace_ms)
{
	char g[64];
	return ju_printf("%d/%d sandboxes are unschedulable past the %s readiness grace period; "
	                 "holding them instead of replacing (replacements would be equally unschedulable)",
	                 unschedulable, desired, wp_go_duration(grace_ms, g, sizeof(g)));
}

static long min_nonzero(long a, long b)
{
	if (a <= 0)
		return b > 0 ? b : 0;
	if (b <= 0)
		return a;
	return a < b ? a : b;
}

/* Excess victims first: not Ready before Ready, then newest first. */
static int excess_cmp(const void *pa, const void *pb, void *base)
{
	const wp_pool_member *m = base;
	const wp_pool_member *a = &m[*(const size_t *)pa], *b = &m[*(const size_t *)pb];
	if (a->ready != b->ready)
		return a->ready ? 1 : -1;
	if (a->created_ms != b->created_ms)
		return a->created_ms > b->created_ms ? -1 : 1;
	return strcmp(ju_nz(b->name), ju_nz(a->name));
}

/* The Progressing condition of a RollingUpdate pool (docs/api.md#rolling-update), its
 * lastTransitionTime kept while its status does not change; NULL when out of memory. */
static cJSON *progressing_condition(const wp_pool_input *in, const wp_pool_plan *p,
                                    int outdated, bool stalled)
{
	const char *status = "True", *reason;
	char *msg;
	char g[32];
	if (outdated > 0 && stalled) {
		status = "False";
		reason = "NewMembersNotReady";
		msg = ju_printf("members of the current template were not Ready within the %s readiness "
		                "grace period: the update is stopped, %d outdated member(s) kept",
		                wp_go_duration(in->readiness_grace_ms, g, sizeof(g)), outdated);
	} else if (outdated > 0) {
		reason = "RollingUpdate";
		msg = ju_printf("%d of %d members on the current template", p->updated, p->desired);
	} else {
		reason = "UpdateComplete";
		msg = ju_printf("all %d members on the current template", p->current);
	}
	const cJSON *have = wp_condition(cJSON_GetObjectItemCaseSensitive(in->pool, "status"),
	                                    WP_CONDITION_PROGRESSING);
	char ts[40];
	const char *since = ju_str_eq(ju_str(have, "status"), status) &&
	                    !ju_empty(ju_str(have, "lastTransitionTime"))
	                    ? ju_str(have, "lastTransitionTime")
	                    : k8s_time_format(in->now_ms, ts, sizeof(ts));
	cJSON *c = cJSON_CreateObject();
	int64_t gen = k8s_obj_generation(in->pool);
	if (!msg || !c || !ju_set_str(c, "type", WP_CONDITION_PROGRESSING) ||
	    !ju_set_str(c, "status", status) || !ju_set_str(c, "reason", reason) ||
	    !ju_set_str(c, "message", msg) || !since || !ju_set_str(c, "lastTransitionTime", since) ||
	    (gen && !ju_set(c, "observedGeneration", cJSON_CreateNumber((double)gen)))) {
		cJSON_Delete(c);
		c = NULL;
	}
	free(msg);
	return c;
}

/* The status merge patch when any of the four fields changed; zero values
 * are sent as null since the fields are omitempty (docs/api.md#pool-sizing).
 * `cond`: a RollingUpdate pool's updatedReplicas and Progressing condition
 * (taken), or NULL; `clear_rolling`: the pool left RollingUpdate, so those
 * fields go (nulled, or the other conditions kept). */
static int status_patch(const wp_pool_input *in, int current, int ready, int updated,
                        cJSON *cond, bool clear_rolling, cJSON **out)
{
	char h[SBX_NAME_HASH_SIZE];
	wp_pool_hash(in->pool, h);
	char *selector = ju_printf("%s=%s", SBX_LABEL_WARM_POOL_SANDBOX, h);
	cJSON *want = cJSON_CreateObject();
	int64_t gen = k8s_obj_generation(in->pool);
	*out = NULL;
	if (!selector || !want ||
	    !ju_set(want, "replicas", current ? cJSON_CreateNumber(current) : cJSON_CreateNull()) ||
	    !ju_set(want, "readyReplicas", ready ? cJSON_CreateNumber(ready) : cJSON_CreateNull()) ||
	    !ju_set_str(want, "selector", selector) ||
	    !ju_set(want, "observedGeneration", gen ? cJSON_CreateNumber((double)gen) : cJSON_CreateNull()))
		goto oom;
	if (cond) {
		cJSON *conds = cJSON_CreateArray();
		if (!conds)
			goto oom;
		if (!cJSON_AddItemToArray(conds, cond)) {
			cJSON_Delete(conds);
			goto oom;
		}
		cond = NULL;   /* in `conds`, which `want` takes */
		if (!ju_set(want, "conditions", conds) ||
		    !ju_set(want, "updatedReplicas", updated ? cJSON_CreateNumber(updated) : cJSON_CreateNull()))
			goto oom;
	} else if (clear_rolling) {
		const cJSON *hs = cJSON_GetObjectItemCaseSensitive(in->pool, "status");
		if (cJSON_GetObjectItemCaseSensitive(hs, "updatedReplicas") &&
		    !ju_set(want, "updatedReplicas", cJSON_CreateNull()))
			goto oom;
		if (wp_condition(hs, WP_CONDITION_PROGRESSING)) {
			cJSON *rest = cJSON_CreateArray();
			const cJSON *c;
			cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(hs, "conditions")) {
				if (!rest || ju_str_eq(ju_str(c, "type"), WP_CONDITION_PROGRESSING))
					continue;
				cJSON *d = cJSON_Duplicate(c, true);
				if (!d || !cJSON_AddItemToArray(rest, d)) {
					cJSON_Delete(d);
					cJSON_Delete(rest);
					rest = NULL;
				}
			}
			if (!rest)
				goto oom;
			if (!rest->child) {
				cJSON_Delete(rest);
				rest = cJSON_CreateNull();
			}
			if (!ju_set(want, "conditions", rest))
				goto oom;
		}
	}
	free(selector);
	selector = NULL;
	const cJSON *have = cJSON_GetObjectItemCaseSensitive(in->pool, "status");
	bool same = true;
	for (const cJSON *f = want->child; f && same; f = f->next)
		same = k8s_obj_semantic_equal(f, cJSON_GetObjectItemCaseSensitive(have, f->string));
	if (same) {
		cJSON_Delete(want);
		return 0;
	}
	cJSON *patch = cJSON_CreateObject();
	if (!patch || !ju_set(patch, "status", want)) {
		cJSON_Delete(patch);
		goto oom_taken;
	}
	*out = patch;
	return 0;
oom:
	cJSON_Delete(want);
oom_taken:
	cJSON_Delete(cond);
	free(selector);
	return ASB_ENOMEM;
}

/* Replenish hold (docs/api.md#pool-sizing a): true while refills are held; the state's
 * baseline becomes `current` (the caller adds what it creates). */
static bool replenish_hold(const wp_pool_input *in, wp_pool_state *st, int current, int desired,
                           long *requeue)
{
	if (in->replenish_delay_ms <= 0)
		return false;
	if (!st->seen)
		st->seen = true;            /* first observation: baseline only */
	else if (current < st->baseline)
		st->hold_until_ms = in->now_ms + in->replenish_delay_ms;   /* a drop re-arms */
	st->baseline = current;
	if (current >= desired)
		st->hold_until_ms = 0;      /* a full pool clears the hold */
	if (!in->tpl || current >= desired || st->hold_until_ms <= in->now_ms)
		return false;
	*requeue = min_nonzero(*requeue, (long)(st->hold_until_ms - in->now_ms));
	return true;
}

/* Refill token bucket (docs/api.md#pool-sizing b): grants up to `want` creates. */
static int take_tokens(const wp_pool_input *in, wp_pool_state *st, int want, long *requeue)
{
	double rate = in->max_refill_rate;
	if (rate <= 0)
		return want;
	double cap = rate > 1 ? rate : 1;
	if (!st->tokens_init) {
		st->tokens_init = true;
		st->tokens = cap;           /* initially full */
	} else if (in->now_ms > st->tokens_at_ms) {
		st->tokens += (double)(in->now_ms - st->tokens_at_ms) / 1000.0 * rate;
		if (st->tokens > cap)
			st->tokens = cap;
	}
	st->tokens_at_ms = in->now_ms;
	/* compared as doubles: a huge rate holds more tokens than an int (or
	 * a long long) can, and converting that is undefined (it came out as
	 * INT_MIN: a negative grant, no creates at all) */
	int grant = st->tokens >= (double)want ? want : (int)floor_pos(st->tokens);
	st->tokens -= grant;
	if (grant < want)   /* wake when the next token is due */
		*requeue = min_nonzero(*requeue, (long)ceil_pos((1.0 - (st->tokens - floor_pos(st->tokens))) / rate * 1000.0));
	return grant;
}

/* The members a RollingUpdate pass deletes (docs/api.md#rolling-update), into `idx` (room for
 * every member), at most `max`: outdated members not Ready (they serve no
 * claim), then Ready ones while the Ready members stay at least `desired -
 * max_unavailable` (none while the roll is stalled by stuck members of the
 * current template), then members of the current template above `desired`.
 * Returns how many. */
static size_t rolling_victims(const wp_pool_member *m, size_t n, const wp_pool_plan *p,
                              int max_unavailable, bool stalled, size_t max, size_t *idx)
{
	size_t k = 0, j;
	/* outdated first, each group in excess order (not Ready first) */
	for (size_t i = 0; i < n; i++)
		if (m[i].cls == WP_MEMBER_ACTIVE && m[i].outdated)
			idx[k++] = i;
	qsort_r(idx, k, sizeof(*idx), excess_cmp, (void *)m);
	int spare_ready = stalled ? 0 : p->ready - (p->desired - max_unavailable);
	size_t out = 0;
	for (j = 0; j < k && out < max; j++) {
		if (m[idx[j]].ready) {
			if (spare_ready <= 0)
				break;   /* the rest are Ready too (sorted) */
			spare_ready--;
		}
		idx[out++] = idx[j];
	}
	/* then the current template's members above desired */
	size_t first_new = out;
	for (size_t i = 0; i < n; i++)
		if (m[i].cls == WP_MEMBER_ACTIVE && !m[i].outdated)
			idx[first_new++] = i;
	qsort_r(idx + out, first_new - out, sizeof(*idx), excess_cmp, (void *)m);
	int surplus = p->updated - p->desired;
	size_t keep = out + (surplus > 0 ? (size_t)surplus : 0);
	if (keep > max)
		keep = max;
	return keep < first_new ? keep : first_new;
}

int wp_pool_size(const wp_pool_input *in, const wp_pool_member *m, size_t n,
                 bool gate_open, long grace_requeue_ms, wp_pool_state *st, wp_pool_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->desired = wp_pool_desired(in->pool);
	int outdated = 0, new_stuck = 0, new_ready = 0;
	for (size_t i = 0; i < n; i++) {
		if (m[i].cls == WP_MEMBER_ACTIVE) {
			p->current++;
			p->ready += m[i].ready;
			p->unschedulable += m[i].unschedulable;
			outdated += m[i].outdated;
			new_ready += m[i].ready && !m[i].outdated;
		} else if (m[i].cls == WP_MEMBER_TERMINATING) {
			p->terminating++;
		}
		if (m[i].stuck && !m[i].outdated)
			new_stuck++;
	}
	int total = p->current + p->terminating;
	long requeue = grace_requeue_ms;
	bool rolling_strategy = wp_pool_rolling(in->pool) && in->tpl;
	p->updated = p->current - outdated;
	p->rolling = rolling_strategy && outdated > 0;
	int max_surge = 0, max_unavailable = 0;
	if (p->rolling)
		wp_pool_rolling_limits(in->pool, p->desired, &max_surge, &max_unavailable);
	/* A stuck member of the current template while none of that template
	 * is Ready stops the roll, until one of them is Ready or the template
	 * changes: remembered, since a stuck member deleted and replaced would
	 * otherwise let it go on between two failures. A Ready member proves
	 * the template: a stuck one beside it (a bad node) stops nothing. */
	const char *hash = in->tpl_hash ? in->tpl_hash : "";
	if (!p->rolling || new_ready > 0 || strcmp(st->stall_hash, hash) != 0)
		st->roll_stalled = false;
	if (p->rolling && new_stuck > 0 && new_ready == 0) {
		st->roll_stalled = true;
		snprintf(st->stall_hash, sizeof(st->stall_hash), "%s", hash);
	}
	bool stalled = p->rolling && st->roll_stalled;

	cJSON *cond = NULL;
	if (rolling_strategy && !(cond = progressing_condition(in, p, outdated, stalled)))
		goto oom;
	if (status_patch(in, p->current, p->ready, p->updated, cond, !wp_pool_rolling(in->pool),
	                 &p->status_patch))
		goto oom;

	/* Unschedulable transitions (docs/api.md#stuck-and-unschedulable-members); the flag lives in memory only. */
	if (p->unschedulable > 0) {
		requeue = min_nonzero(requeue, in->unschedulable_recheck_ms);
		if (!st->not_progressing) {
			st->not_progressing = true;
			p->event = WP_POOL_EVENT_NOT_PROGRESSING;
			p->event_note = wp_pool_not_progressing_note(p->unschedulable, p->desired,
			                                             in->readiness_grace_ms);
			if (!p->event_note)
				goto oom;
		}
	} else if (st->not_progressing) {
		st->not_progressing = false;
		p->event = WP_POOL_EVENT_PROGRESSING;
		if (!(p->event_note = strdup("Warm pool is progressing again")))
			goto oom;
	}

	bool hold = replenish_hold(in, st, p->current, p->desired, &requeue);
	int max_batch = in->max_batch > 0 ? in->max_batch : 1;
	int want = total < p->desired ? p->desired - total : 0;
	if (p->rolling && !stalled) {
		/* surge: members of the current template ahead of the old ones' removal */
		int surge = p->desired + max_surge - total, missing = p->desired - p->updated;
		if (surge > missing)
			surge = missing;
		if (surge > want)
			want = surge;
	}
	if (want > 0 && in->tpl && !hold) {
		if (want > max_batch)
			want = max_batch;
		if (!gate_open) {
			p->gated = true;
		} else {
			p->create = take_tokens(in, st, want, &requeue);
			p->tokens_granted = in->max_refill_rate > 0 ? p->create : 0;
		}
	}
	if (p->rolling) {
		size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
		if (!idx)
			goto oom;
		size_t k = rolling_victims(m, n, p, max_unavailable, stalled, (size_t)max_batch, idx);
		if (k && !gate_open) {
			p->gated = true;
			k = 0;
		}
		p->excess = idx;
		p->nexcess = k;
	} else if (p->current > p->desired) {
		if (!gate_open) {
			p->gated = true;
		} else {
			size_t k = 0, excess = (size_t)(p->current - p->desired);
			if (excess > (size_t)max_batch)
				excess = (size_t)max_batch;
			size_t *idx = malloc((size_t)p->current * sizeof(*idx));
			if (!idx)
				goto oom;
			for (size_t i = 0; i < n; i++)
				if (m[i].cls == WP_MEMBER_ACTIVE)
					idx[k++] = i;
			qsort_r(idx, k, sizeof(*idx), excess_cmp, (void *)m);
			p->excess = idx;
			p->nexcess = excess;
		}
	}
	if (p->gated)
		requeue = min_nonzero(requeue, WP_POOL_EXPECTATIONS_REQUEUE_MS);
	p->requeue_after_ms = requeue;
	return 0;
oom:
	wp_pool_plan_clear(p);
	return asb_error_set(ASB_ENOMEM, 0, NULL, "warm pool: out of memory");
}

void wp_pool_plan_clear(wp_pool_plan *p)
{
	if (!p)
		return;
	free(p->excess);
	cJSON_Delete(p->status_patch);
	free(p->event_note);
	memset(p, 0, sizeof(*p));
}

void wp_pool_members_free(wp_pool_member *m, size_t n)
{
	if (!m)
		return;
	for (size_t i = 0; i < n; i++)
		cJSON_Delete(m[i].body);
	free(m);
}

/* ---- the member Sandbox (docs/api.md#pool-sizing) ---- */

cJSON *wp_pool_member_new(const cJSON *pool, const cJSON *tpl, bool enable_eviction)
{
	char ph[SBX_NAME_HASH_SIZE], th[SBX_NAME_HASH_SIZE], bh[SBX_NAME_HASH_SIZE], rh[SBX_NAME_HASH_SIZE];
	if (wp_pod_template_hash(tpl, th) || wp_blueprint_hash(tpl, bh))
		return NULL;
	wp_pool_hash(pool, ph);
	const char *tpl_name = k8s_obj_str(pool, "spec.sandboxTemplateRef.name");
	if (ju_empty(tpl_name))
		tpl_name = k8s_obj_name(tpl);
	sbx_name_hash(tpl_name, rh);

	cJSON *bp = wp_blueprint_new(tpl);
	if (!bp)
		return NULL;
	char *gen_name = ju_printf("%s-", ju_nz(k8s_obj_name(pool)));
	cJSON *sbx = cJSON_CreateObject(), *md = NULL, *refs = NULL, *ann = NULL;
	cJSON *pt = cJSON_GetObjectItemCaseSensitive(bp, "podTemplate");
	cJSON *ptmd = ju_obj(pt, "metadata");
	cJSON *ptlabels = ju_obj(ptmd, "labels");
	cJSON *ptspec = ju_obj(pt, "spec");
	bool ok = gen_name && sbx && ptlabels && ptspec &&
	          ju_set_str(sbx, "apiVersion", SBX_API_VERSION) &&
	          ju_set_str(sbx, "kind", SBX_KIND) &&
	          (md = ju_obj(sbx, "metadata")) != NULL &&
	          ju_set_str(md, "generateName", gen_name) &&
	          ju_set_str(md, "namespace", ju_nz(k8s_obj_namespace(pool))) &&
	          set_label(sbx, SBX_LABEL_WARM_POOL_SANDBOX, ph) &&
	          set_label(sbx, SBX_LABEL_TEMPLATE_REF_HASH, rh) &&
	          set_label(sbx, SBX_LABEL_LAUNCH_TYPE, WP_LAUNCH_TYPE_WARM) &&
	          set_label(sbx, WP_LABEL_POD_TEMPLATE_HASH, th) &&
	          set_label(sbx, WP_LABEL_TEMPLATE_HASH, bh) &&
	          set_label(sbx, SBX_LABEL_CREATED_BY, WP_CREATED_BY_CONTROLLER) &&
	          (ann = ju_obj(md, "annotations")) != NULL &&
	          ju_set_str(ann, SBX_ANNOTATION_SANDBOX_TEMPLATE_REF, ju_nz(tpl_name)) &&
	          (refs = cJSON_AddArrayToObject(md, "ownerReferences")) != NULL;
	if (ok) {
		cJSON *ref = pool_ref(pool);
		ok = ref && cJSON_AddItemToArray(refs, ref);
		if (!ok)
			cJSON_Delete(ref);
	}
	/* System keys on the podTemplate never reach the Pod (docs/api.md#system-metadata-keys). */
	ok = ok && ju_set_str(ptlabels, SBX_LABEL_WARM_POOL_SANDBOX, ph) &&
	     ju_set_str(ptlabels, SBX_LABEL_TEMPLATE_REF_HASH, rh) &&
	     ju_set_str(ptlabels, WP_LABEL_POD_TEMPLATE_HASH, th) &&
	     ju_set_str(ptlabels, WP_LABEL_TEMPLATE_HASH, bh);
	if (ok && enable_eviction) {
		cJSON *ptann = ju_obj(ptmd, "annotations");
		ok = ptann && (cJSON_GetObjectItemCaseSensitive(ptann, WP_ANNOTATION_SAFE_TO_EVICT) ||
		               ju_set_str(ptann, WP_ANNOTATION_SAFE_TO_EVICT, "true"));
	}
	ok = ok && wp_apply_secure_defaults(ptspec, wp_template_secure_by_default(tpl)) == 0;
	/* Move the blueprint members into spec. */
	cJSON *spec = ok ? ju_obj(sbx, "spec") : NULL;
	ok = spec != NULL;
	while (ok && bp->child) {
		cJSON *item = cJSON_DetachItemViaPointer(bp, bp->child);
		ok = cJSON_AddItemToObject(spec, item->string, item);
		if (!ok)
			cJSON_Delete(item);
	}
	free(gen_name);
	cJSON_Delete(bp);
	if (!ok) {
		cJSON_Delete(sbx);
		asb_error_set(ASB_ENOMEM, 0, NULL, "warm pool: out of memory");
		return NULL;
	}
	return sbx;
}
