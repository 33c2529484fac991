/*
 * reconciler.c - the I/O around the Sandbox decision: read the caches and
 * the API, run the plan through the REST client, write the status. Also
 * the informer helpers the controller wires in (index, owner key, Pod
 * transform).
 *
 * Everything that decides lives in plan*.c and status.c; this file only
 * moves objects between the API server and those functions, so that it can
 * stay short and obviously right.
 *
 * Events: the MultiplePods Warning event (docs/api.md#sandbox-events) goes to the
 * event recorder given in the options, and is logged at warn level.
 *
 * Write-behind (--sandbox-write-behind-window): the plan decides whether a
 * Pod metadata patch waits; this file only remembers since when, per
 * Sandbox key, and hands it back on the next pass.
 *
 * Read-your-own-writes (mutationcache.h): every Sandbox the API server
 * returns from our writes (the pod-name annotation patch, the status patch)
 * is remembered with the resourceVersions it superseded; a pass whose
 * informer copy still shows one of those reads the remembered object
 * instead, so a reconcile woken by a Pod event before the watch event of
 * our own write does not write the same annotation or status again.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "sandbox/reconciler.h"
#include "sandbox/reconcile.h"
#include "sandbox/mutationcache.h"
#include "asb/map.h"
#include "sandbox/namehash.h"
#include "sandbox/idle.h"
#include "client_internal.h"
#include "jsonutil.h"
#include "k8s/object.h"

/* A Sandbox whose Pod metadata patch is deferred (write-behind). */
typedef struct {
	char *key;            /* "ns/name" */
	int64_t since_ms;     /* first deferred at */
} deferral;

struct sbx_reconciler {
	k8s_client *client;
	k8s_informer *sandboxes, *pods, *services;
	char *cluster_domain;
	asb_logger *logger;
	k8s_event_recorder *events;
	long write_behind_window_ms;
	long status_coalesce_window_ms;
	bool cache_label_selectors;  /* children without the tracking label are invisible */
	size_t (*handouts_pending)(void *ud);   /* NULL: nothing yields */
	void *handouts_ud;
	/* Pending deferrals: only the Sandboxes whose Pod patch waits right
	 * now (a few), so a small array; `lock` guards it (workers share it). */
	pthread_mutex_t lock;
	deferral *deferrals;
	size_t n_deferrals, cap_deferrals;
	/* Sandboxes whose status write is held (status coalescing): those
	 * coming up right now, by key, with the time of the first held change;
	 * behind `lock`. */
	asb_map held;
	/* Our last write of each Sandbox whose watch event has not arrived
	 * yet (thread-safe on its own). */
	sbx_mutation_cache *written;
};

/* The pending deferral of `key`, 0 when none. */
static int64_t deferral_get(sbx_reconciler *r, const char *key)
{
	int64_t since = 0;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->n_deferrals; i++)
		if (strcmp(r->deferrals[i].key, key) == 0)
			since = r->deferrals[i].since_ms;
	pthread_mutex_unlock(&r->lock);
	return since;
}

/* Records (since > 0) or forgets (0) the deferral of `key`. On allocation
 * failure the deferral is forgotten: the next pass then waits a full
 * window again, which is still bounded by the requeue. */
static void deferral_put(sbx_reconciler *r, const char *key, int64_t since)
{
	pthread_mutex_lock(&r->lock);
	size_t i = 0;
	while (i < r->n_deferrals && strcmp(r->deferrals[i].key, key) != 0)
		i++;
	if (i < r->n_deferrals) {
		if (since > 0) {
			r->deferrals[i].since_ms = since;
		} else {
			free(r->deferrals[i].key);
			r->deferrals[i] = r->deferrals[--r->n_deferrals];
		}
	} else if (since > 0) {
		if (r->n_deferrals == r->cap_deferrals) {
			size_t cap = r->cap_deferrals ? r->cap_deferrals * 2 : 16;
			deferral *d = realloc(r->deferrals, cap * sizeof(*d));
			if (d) {
				r->deferrals = d;
				r->cap_deferrals = cap;
			}
		}
		char *k = r->n_deferrals < r->cap_deferrals ? strdup(key) : NULL;
		if (k)
			r->deferrals[r->n_deferrals++] = (deferral){ k, since };
	}
	pthread_mutex_unlock(&r->lock);
}

int sbx_reconciler_options_init(sbx_reconciler_options *opts,
                                unsigned int version)
{
	if (!opts || version != SBX_RECONCILER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "sbx_reconciler_options_init: unknown version %u",
		                     version);
	*opts = (sbx_reconciler_options)SBX_RECONCILER_OPTIONS_INIT;
	return 0;
}

int sbx_reconciler_new(sbx_reconciler **out, const sbx_reconciler_options *opts)
{
	if (!out || !opts || opts->version != SBX_RECONCILER_OPTIONS_VERSION ||
	    !opts->client || !opts->sandboxes || !opts->pods || !opts->services)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "sbx_reconciler_new: missing client, informer "
		                     "or options version");
	if (opts->write_behind_window_ms < 0 || opts->status_coalesce_window_ms < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "sbx_reconciler_new: write-behind window %ld ms and status "
		                     "coalesce window %ld ms must be >= 0",
		                     opts->write_behind_window_ms, opts->status_coalesce_window_ms);
	sbx_reconciler *r = calloc(1, sizeof(*r));
	if (!r)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	r->client = opts->client;
	r->sandboxes = opts->sandboxes;
	r->pods = opts->pods;
	r->services = opts->services;
	r->logger = opts->logger;
	r->events = opts->events;
	r->write_behind_window_ms = opts->write_behind_window_ms;
	r->status_coalesce_window_ms = opts->status_coalesce_window_ms;
	asb_map_init(&r->held);
	r->cache_label_selectors = opts->cache_label_selectors;
	r->handouts_pending = opts->handouts_pending;
	r->handouts_ud = opts->handouts_ud;
	pthread_mutex_init(&r->lock, NULL);
	r->cluster_domain = strdup(opts->cluster_domain ? opts->cluster_domain
	                                                : SBX_DEFAULT_CLUSTER_DOMAIN);
	if (!r->cluster_domain || sbx_mutation_cache_new(&r->written) != 0) {
		free(r->cluster_domain);
		pthread_mutex_destroy(&r->lock);
		free(r);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	*out = r;
	return 0;
}

void sbx_reconciler_free(sbx_reconciler *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_deferrals; i++)
		free(r->deferrals[i].key);
	free(r->deferrals);
	sbx_mutation_cache_free(r->written);
	asb_map_clear(&r->held, free);
	pthread_mutex_destroy(&r->lock);
	free(r->cluster_domain);
	free(r);
}

/* ---- applying actions ---- */

static const k8s_resource *resource_of(sbx_object o)
{
	switch (o) {
	case SBX_OBJ_POD: return &k8s_resource_pods;
	case SBX_OBJ_SERVICE: return &k8s_resource_services;
	case SBX_OBJ_PVC: return &k8s_resource_pvcs;
	case SBX_OBJ_CLAIM: return &sbx__resource_claims;
	case SBX_OBJ_SANDBOX: break;
	}
	return &sbx_resource_sandboxes;
}

static const char *verb_name(sbx_verb v)
{
	static const char *const names[] = { "create", "update", "patch", "delete" };
	return (unsigned)v < 4 ? names[v] : "?";
}

static int apply_action(const sbx_action *a, const char *ns, cJSON **result,
                        void *userdata)
{
	sbx_reconciler *r = userdata;
	const k8s_resource *res = resource_of(a->object);
	k8s_write_options wo = K8S_WRITE_OPTIONS_INIT;
	wo.field_manager = SBX_FIELD_MANAGER;
	int rc = ASB_EINVAL;

	switch (a->verb) {
	case SBX_VERB_CREATE:
		rc = k8s_client_create(r->client, res, ns, a->body, &wo, result);
		break;
	case SBX_VERB_UPDATE:
		rc = k8s_client_update(r->client, res, ns, a->body, &wo, result);
		break;
	case SBX_VERB_PATCH:
		rc = k8s_client_patch(r->client, res, ns, a->name, NULL,
		                      K8S_PATCH_MERGE, a->body, &wo, result);
		break;
	case SBX_VERB_DELETE: {
		k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
		d.precondition_resource_version = a->precondition_rv;
		d.precondition_uid = a->precondition_uid;
		rc = k8s_client_delete(r->client, res, ns, a->name, &d, NULL);
		break;
	}
	}
	/* Every change the controller makes is one info line (what an operator
	 * greps for: "who deleted my pod?"); failures come back as the
	 * reconcile error, logged by the controller runner. */
	if (rc == 0 || (rc == ASB_ENOTFOUND && a->not_found_ok))
		asb_log(r->logger, ASB_LOG_INFO, "sandbox child written",
		        "verb", verb_name(a->verb), "kind", res->kind,
		        "namespace", ns, "name", a->name, NULL);
	else
		asb_log(r->logger, ASB_LOG_DEBUG, "sandbox child write failed",
		        "verb", verb_name(a->verb), "kind", res->kind,
		        "namespace", ns, "name", a->name,
		        "error", asb_error_last()->message, NULL);
	return rc;
}

/* With --cache-label-selectors, a Pod or Service read from the API server
 * but outside the scoped cache (no tracking label) is not ours to see. */
static bool hidden_by_scope(const sbx_reconciler *r, sbx_object o, const cJSON *obj)
{
	return r->cache_label_selectors && (o == SBX_OBJ_POD || o == SBX_OBJ_SERVICE) &&
	       !k8s_obj_label(obj, SBX_LABEL_NAME_HASH);
}

static int fetch_object(sbx_object o, const char *ns, const char *name,
                        cJSON **out, void *userdata)
{
	sbx_reconciler *r = userdata;
	int rc = k8s_client_get(r->client, resource_of(o), ns, name, out);
	if (rc == 0 && hidden_by_scope(r, o, *out)) {
		cJSON_Delete(*out);
		*out = NULL;
		return asb_error_set(ASB_EALREADYEXISTS, 409, "AlreadyExists",
		                     "%s \"%s/%s\" already exists without the label %s, "
		                     "so --cache-label-selectors hides it from the controller: "
		                     "label it with the sandbox's name hash to let it be adopted",
		                     resource_of(o)->kind, ns, name, SBX_LABEL_NAME_HASH);
	}
	return rc;
}

/* ---- reading the observed state ---- */

/* The observed state and the memory behind it. */
typedef struct {
	sbx_observed obs;
	cJSON *sandbox, *pods, *pod, *service, *pvcs, *claim;
	char *pods_error, *pod_error, *service_error, *pvc_error, *pvc_error_name;
	char *claim_error;
} observed_buf;

static void observed_free(observed_buf *b)
{
	cJSON_Delete(b->sandbox);
	cJSON_Delete(b->pods);
	cJSON_Delete(b->pod);
	cJSON_Delete(b->service);
	cJSON_Delete(b->pvcs);
	cJSON_Delete(b->claim);
	free(b->claim_error);
	free(b->pods_error);
	free(b->pod_error);
	free(b->service_error);
	free(b->pvc_error);
	free(b->pvc_error_name);
}

static char *last_message(void)
{
	return strdup(asb_error_last()->message);
}

/* The Pod by name: cache first, then the API (the cache may lag behind a
 * Pod an earlier pass made). A Sandbox without a status has had no pass
 * that wrote one: its Pod, if any, comes from a create of moments ago,
 * and a create that meets it gets AlreadyExists and reads it then, so
 * the GET (a 404 for every new Sandbox, a pool's refill included) is
 * not made. */
static void read_pod(sbx_reconciler *r, observed_buf *b, const char *ns,
                     const char *name)
{
	if (k8s_informer_get(r->pods, ns, name, &b->pod) == 0)
		return;
	b->pod = NULL;
	if (k8s_obj_is_zero(cJSON_GetObjectItemCaseSensitive(b->sandbox, "status")))
		return;
	int rc = k8s_client_get(r->client, &k8s_resource_pods, ns, name, &b->pod);
	if (rc == 0 && hidden_by_scope(r, SBX_OBJ_POD, b->pod)) {
		cJSON_Delete(b->pod);
		b->pod = NULL;
	} else if (rc == 0) {
		sbx_pod_transform(b->pod, NULL);
	} else {
		b->pod = NULL;
		if (rc != ASB_ENOTFOUND)
			b->pod_error = last_message();
	}
}

/* The PVCs of the volumeClaimTemplates, in order, up to a failed Get. */
static void read_pvcs(sbx_reconciler *r, observed_buf *b, const char *ns,
                      const char *name)
{
	b->pvcs = cJSON_CreateArray();
	const cJSON *vct;
	cJSON_ArrayForEach(vct, k8s_obj_at(b->sandbox, "spec.volumeClaimTemplates")) {
		char *pvc_name = ju_printf("%s-%s", ju_nz(k8s_obj_name(vct)), name);
		cJSON *pvc = NULL;
		int rc = pvc_name ? k8s_client_get(r->client, &k8s_resource_pvcs, ns,
		                                   pvc_name, &pvc)
		                  : ASB_ENOMEM;
		if (rc == 0 && b->pvcs && cJSON_AddItemToArray(b->pvcs, pvc)) {
			free(pvc_name);
			continue;
		}
		cJSON_Delete(pvc);
		if (rc != ASB_ENOTFOUND) {
			b->pvc_error = last_message();
			b->pvc_error_name = pvc_name;
			return;
		}
		free(pvc_name);
	}
}

/* Reads what the pass needs: nothing more to mark expiry, the Pod by name
 * and the Service to tear down, everything for a normal pass. */
static void read_observed(sbx_reconciler *r, observed_buf *b, const char *ns,
                          const char *name)
{
	char hash[SBX_NAME_HASH_SIZE];
	sbx_name_hash(name, hash);
	b->obs.now_ms = k8s_now_ms();
	sbx_pass pass = sbx_pass_for(b->sandbox, b->obs.now_ms);

	if (pass == SBX_PASS_RECONCILE &&
	    k8s_informer_by_index(r->pods, SBX_POD_INDEX_NAME_HASH, hash,
	                          &b->pods) != 0) {
		b->pods = NULL;
		b->pods_error = last_message();
	}
	if (pass == SBX_PASS_RECONCILE || pass == SBX_PASS_TEARDOWN) {
		const char *pod_name = k8s_obj_annotation(b->sandbox,
		                                          SBX_ANNOTATION_POD_NAME);
		read_pod(r, b, ns, ju_empty(pod_name) ? name : pod_name);
		int rc = k8s_informer_get(r->services, ns, name, &b->service);
		if (rc != 0) {
			b->service = NULL;
			if (rc != ASB_ENOTFOUND)
				b->service_error = last_message();
		}
	}
	if (pass == SBX_PASS_RECONCILE)
		read_pvcs(r, b, ns, name);
	if (pass == SBX_PASS_IDLE) {
		/* idle Delete of a claim's Sandbox: is the claim really its? */
		sbx_idle_policy pol;
		sbx_idle_policy_of(b->sandbox, &pol);
		const char *claim = sbx_idle_controlling_claim(b->sandbox);
		if (pol.action == SBX_IDLE_DELETE && claim) {
			int rc = k8s_client_get(r->client, &sbx__resource_claims, ns, claim, &b->claim);
			if (rc != 0) {
				b->claim = NULL;
				if (rc != ASB_ENOTFOUND)
					b->claim_error = last_message();
			}
		}
	}

	b->obs.sandbox = b->sandbox;
	b->obs.pods = b->pods;
	b->obs.pods_error = b->pods_error;
	b->obs.pod = b->pod;
	b->obs.pod_error = b->pod_error;
	b->obs.service = b->service;
	b->obs.service_error = b->service_error;
	b->obs.pvcs = b->pvcs;
	b->obs.pvc_error = b->pvc_error;
	b->obs.pvc_error_name = b->pvc_error_name;
	b->obs.claim = b->claim;
	b->obs.claim_error = b->claim_error;
	b->obs.cluster_domain = r->cluster_domain;
	b->obs.write_behind_window_ms = r->write_behind_window_ms;
}

/* A copy of status `st` without its observedGeneration and its
 * conditions' (NULL: out of memory). */
static cJSON *without_generations(const cJSON *st)
{
	cJSON *c = st ? cJSON_Duplicate(st, true) : cJSON_CreateObject();
	if (!c)
		return NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(c, "observedGeneration");
	cJSON *cond;
	cJSON_ArrayForEach(cond, cJSON_GetObjectItemCaseSensitive(c, "conditions"))
		cJSON_DeleteItemFromObjectCaseSensitive(cond, "observedGeneration");
	return c;
}

/* Whether `new_st` differs from `old_st` in observedGeneration fields only. */
static bool generation_only(const cJSON *old_st, const cJSON *new_st)
{
	cJSON *a = without_generations(old_st), *b = without_generations(new_st);
	bool same = a && b && k8s_obj_semantic_equal(a, b);
	cJSON_Delete(a);
	cJSON_Delete(b);
	return same;
}

/* ---- status coalescing ---- */

/*
 * sbx_reconciler_options.status_coalesce_window_ms: how long to hold the
 * status write of `key` (old -> new status) before writing it, 0 to write
 * now. A Sandbox coming up changes status two or three times in a few tens
 * of milliseconds (Pod created, scheduled, Ready): holding the changes
 * that leave it coming up lets the write that makes it Ready carry them,
 * one write where upstream makes three. The window runs from the first
 * held change, so nothing is held longer than the window.
 */
static long status_hold_ms(sbx_reconciler *r, const char *key, const cJSON *old_st,
                           const cJSON *new_st, const sbx_outcome *out, bool yield)
{
	bool coming = r->status_coalesce_window_ms > 0 && !out->error_code &&
	              sbx_status_coming_up(old_st) && sbx_status_coming_up(new_st);
	/* yielding to claim hand-outs: a write that only acknowledges a new
	 * generation (SBX_YIELD_MAX_MS at most) */
	bool gen_only = !coming && yield && !out->error_code && generation_only(old_st, new_st);
	bool hold = coming || gen_only;
	long window = coming ? r->status_coalesce_window_ms : SBX_YIELD_MAX_MS;
	if (r->status_coalesce_window_ms <= 0 && !r->handouts_pending)
		return 0;
	int64_t now = k8s_monotonic_ms();
	long left = 0;
	pthread_mutex_lock(&r->lock);
	int64_t *since = asb_map_get(&r->held, key);
	if (hold && !since && (since = malloc(sizeof(*since)))) {
		*since = now;
		if (asb_map_set(&r->held, key, since, NULL) != 0) {
			free(since);   /* out of memory: write now */
			since = NULL;
		}
	}
	if (hold && since)
		left = window - (long)(now - *since);
	if (gen_only && left > SBX_YIELD_RECHECK_MS)
		left = SBX_YIELD_RECHECK_MS;
	if (left <= 0 && since) {
		void *old = NULL;
		asb_map_remove(&r->held, key, &old);
		free(old);
		left = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return left;
}

/* Forgets a held status write of `key` (the Sandbox is gone). */
static void status_hold_forget(sbx_reconciler *r, const char *key)
{
	void *old = NULL;
	pthread_mutex_lock(&r->lock);
	asb_map_remove(&r->held, key, &old);
	pthread_mutex_unlock(&r->lock);
	free(old);
}

/* ---- the reconcile ---- */

/* Writes the status with a merge patch; NotFound (deleted meanwhile) is
 * fine. Returns 0 or the code, with a message, on failure; `*written`
 * receives the Sandbox the server answered (NULL on NotFound; the caller
 * frees it). */
static int write_status(sbx_reconciler *r, const char *ns, const char *name,
                        const cJSON *old_status, const cJSON *new_status,
                        cJSON **written)
{
	*written = NULL;
	cJSON *patch = sbx_status_patch(old_status, new_status);
	if (!patch)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	k8s_write_options wo = K8S_WRITE_OPTIONS_INIT;
	wo.field_manager = SBX_FIELD_MANAGER;
	int rc = k8s_client_patch(r->client, &sbx_resource_sandboxes, ns, name,
	                          "status", K8S_PATCH_MERGE, patch, &wo, written);
	char *body = asb_log_enabled(r->logger, ASB_LOG_DEBUG) ? cJSON_PrintUnformatted(patch) : NULL;
	cJSON_Delete(patch);
	if (rc != 0) {
		cJSON_Delete(*written);
		*written = NULL;
	}
	if (rc == 0) {
		asb_log(r->logger, ASB_LOG_DEBUG, "sandbox status written",
		        "namespace", ns, "name", name, "patch", body ? body : "", NULL);
		/* one line per Ready transition, the state a user watches */
		const cJSON *c, *ready = NULL, *old_ready = NULL;
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(new_status, "conditions"))
			if (ju_str_eq(k8s_obj_str(c, "type"), SBX_CONDITION_READY))
				ready = c;
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(old_status, "conditions"))
			if (ju_str_eq(k8s_obj_str(c, "type"), SBX_CONDITION_READY))
				old_ready = c;
		if (ready && (!old_ready ||
		              !ju_str_eq(k8s_obj_str(ready, "status"), k8s_obj_str(old_ready, "status")) ||
		              !ju_str_eq(k8s_obj_str(ready, "reason"), k8s_obj_str(old_ready, "reason"))))
			asb_log(r->logger, ASB_LOG_INFO, "sandbox ready condition changed",
			        "namespace", ns, "name", name,
			        "ready", k8s_obj_str(ready, "status"), "reason", k8s_obj_str(ready, "reason"),
			        "message", k8s_obj_str(ready, "message"), NULL);
	}
	free(body);
	return rc == ASB_ENOTFOUND ? 0 : rc;
}

/* Remembers the Sandboxes the server returned from the plan's successful
 * Sandbox patches (in execution order, each superseding `*base_rv`, which
 * then points at its resourceVersion, borrowed from the plan); a deleted
 * Sandbox is forgotten. */
static void remember_writes(sbx_reconciler *r, const char *key,
                            const sbx_plan *plan, const char **base_rv)
{
	for (size_t i = 0; i < sbx_plan_action_count(plan); i++) {
		const sbx_action *a = sbx_plan_action(plan, i);
		if (a->object != SBX_OBJ_SANDBOX || a->state != SBX_ACTION_DONE)
			continue;
		if (a->verb == SBX_VERB_DELETE) {
			sbx_mutation_cache_forget(r->written, key);
		} else if (a->verb == SBX_VERB_PATCH && a->result) {
			cJSON *copy = cJSON_Duplicate(a->result, true);
			if (copy)
				sbx_mutation_cache_wrote(r->written, key, *base_rv, copy);
			else
				sbx_mutation_cache_forget(r->written, key);
			*base_rv = k8s_obj_resource_version(a->result);
		}
	}
}

int sbx_reconciler_reconcile(sbx_reconciler *r, const char *key,
                             k8s_reconcile_result *res)
{
	if (res) {
		res->requeue_after_ms = 0;
		res->requeue = false;
	}
	if (!r || !key)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "sbx_reconciler_reconcile: no reconciler or key");
	char *ns = NULL, *name = NULL;
	int rc = k8s_key_split(key, &ns, &name);
	if (rc)
		return rc;

	observed_buf b = { 0 };
	sbx_plan *plan = NULL;
	sbx_outcome out = { 0 };
	rc = k8s_informer_get(r->sandboxes, ns, name, &b.sandbox);
	/* The cache may not have seen our own last write yet: read that. */
	if (rc == 0 && sbx_mutation_cache_resolve(r->written, key, &b.sandbox))
		asb_log(r->logger, ASB_LOG_DEBUG, "sandbox read from own last write",
		        "sandbox", key, "resourceVersion",
		        k8s_obj_resource_version(b.sandbox), NULL);
	if (rc == ASB_ENOTFOUND || (rc == 0 && k8s_obj_is_deleting(b.sandbox))) {
		rc = 0;   /* gone, or going: GC removes the children */
		sbx_mutation_cache_forget(r->written, key);
		if (r->write_behind_window_ms > 0 || r->handouts_pending)
			deferral_put(r, key, 0);
		status_hold_forget(r, key);
		goto done;
	}
	if (rc)
		goto done;

	read_observed(r, &b, ns, name);
	/* claims first (sbx_reconciler_options.handouts_pending): the Pod's
	 * metadata patch waits as a write-behind does */
	bool yield = r->handouts_pending && r->handouts_pending(r->handouts_ud) > 0;
	if (yield && b.obs.write_behind_window_ms < SBX_YIELD_MAX_MS)
		b.obs.write_behind_window_ms = SBX_YIELD_MAX_MS;
	bool deferrals = r->write_behind_window_ms > 0 || r->handouts_pending;
	if (deferrals)
		b.obs.pod_patch_deferred_since_ms = deferral_get(r, key);
	/* the plan takes the copies read above rather than copying them again */
	sbx_observed_objects objs = { b.sandbox, b.pods, b.pod, b.service, b.pvcs };
	const cJSON *sandbox = b.sandbox;   /* the plan's from here (its status and rv stay as read) */
	b.sandbox = b.pods = b.pod = b.service = b.pvcs = NULL;
	rc = sbx_plan_new_take(&plan, &b.obs, &objs);
	if (rc)
		goto done;
	sbx_executor ex = { apply_action, fetch_object, r };
	rc = sbx_plan_execute(plan, &ex);
	/* the chain of our writes of the Sandbox, starting at what we read */
	const char *base_rv = k8s_obj_resource_version(sandbox);
	remember_writes(r, key, plan, &base_rv);
	if (rc == 0)
		rc = sbx_plan_outcome(plan, k8s_now_ms(), &out);
	if (rc)
		goto done;
	if (deferrals) {
		if (out.pod_patch_deferred_since_ms && !b.obs.pod_patch_deferred_since_ms)
			asb_log_typed(r->logger, ASB_LOG_DEBUG, "pod metadata patch deferred",
			              ASB_LOG_STR("sandbox", key), ASB_LOG_BOOL("yield", yield));
		deferral_put(r, key, out.pod_patch_deferred_since_ms);
		/* a yield ends with the backlog: look again soon, not at the window's end */
		if (yield && out.pod_patch_deferred_since_ms &&
		    r->write_behind_window_ms < SBX_YIELD_RECHECK_MS &&
		    (!out.requeue_after_ms || out.requeue_after_ms > SBX_YIELD_RECHECK_MS))
			out.requeue_after_ms = SBX_YIELD_RECHECK_MS;
	}

	if (out.multiple_pods_event) {
		asb_log(r->logger, ASB_LOG_WARN, "sandbox event",
		        "type", "Warning", "reason", SBX_REASON_MULTIPLE_PODS,
		        "action", SBX_EVENT_ACTION_RECONCILING, "sandbox", key,
		        "note", out.multiple_pods_event, NULL);
		k8s_event_ref ref;
		if (r->events && k8s_event_ref_from(sandbox, SBX_API_VERSION, SBX_KIND, &ref) == 0)
			/* best effort: an event never fails a reconcile */
			k8s_event_record(r->events, &ref, NULL, K8S_EVENT_WARNING,
			                 SBX_REASON_MULTIPLE_PODS, SBX_EVENT_ACTION_RECONCILING,
			                 out.multiple_pods_event);
	}

	if (out.idle_event) {
		asb_log(r->logger, ASB_LOG_INFO, "sandbox idle",
		        "sandbox", key, "action", out.idle_event_action,
		        "note", out.idle_event, NULL);
		k8s_event_ref ref;
		if (r->events && k8s_event_ref_from(sandbox, SBX_API_VERSION, SBX_KIND, &ref) == 0)
			k8s_event_record(r->events, &ref, NULL, K8S_EVENT_NORMAL,
			                 SBX_REASON_IDLE_TIMEOUT, out.idle_event_action,
			                 out.idle_event);
	}

	int status_rc = 0;
	char *status_err = NULL;
	long hold_ms = out.status && out.write_status
	               ? status_hold_ms(r, key, cJSON_GetObjectItemCaseSensitive(sandbox, "status"),
	                                out.status, &out, yield)
	               : 0;
	if (hold_ms > 0) {
		/* held: the requeue writes it if nothing else comes first */
		if (!out.requeue_after_ms || out.requeue_after_ms > hold_ms)
			out.requeue_after_ms = hold_ms;
	} else if (out.status && out.write_status) {
		cJSON *written = NULL;
		status_rc = write_status(r, ns, name,
		                         cJSON_GetObjectItemCaseSensitive(sandbox, "status"),
		                         out.status, &written);
		if (written)   /* taken */
			sbx_mutation_cache_wrote(r->written, key, base_rv, written);
		if (status_rc)
			status_err = ju_printf("failed to update sandbox status: %s",
			                       asb_error_last()->message);
	}
	if (res)
		res->requeue_after_ms = out.requeue_after_ms;

	rc = out.error_code ? out.error_code : status_rc;
	if (rc) {
		asb_error_set(rc, 0, NULL, "sandbox \"%s\": %s%s%s", key,
		              ju_nz(out.error), out.error && status_err ? "\n" : "",
		              ju_nz(status_err));
	}
	free(status_err);
done:
	sbx_outcome_dispose(&out);
	sbx_plan_free(plan);
	observed_free(&b);
	free(ns);
	free(name);
	return rc;
}

int sbx_reconcile_fn(const char *key, k8s_reconcile_result *res, void *userdata)
{
	return sbx_reconciler_reconcile(userdata, key, res);
}

/* ---- informer helpers ---- */

int sbx_pod_index_name_hash(const cJSON *obj, const char **keys, int cap,
                            void *userdata)
{
	const char *v = k8s_obj_label(obj, SBX_LABEL_NAME_HASH);
	if (!v || cap < 1)
		return 0;
	keys[0] = v;
	return 1;
}

char *sbx_owner_sandbox_key(const cJSON *obj)
{
	char group[64];
	const cJSON *ref = k8s_obj_controller_ref(obj);
	if (!ref || !ju_str_eq(ju_str(ref, "kind"), SBX_KIND) ||
	    strcmp(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	           SBX_GROUP) != 0)
		return NULL;
	const char *name = ju_str(ref, "name");
	if (ju_empty(name))
		return NULL;
	return ju_printf("%s/%s", ju_nz(k8s_obj_namespace(obj)), name);
}

cJSON *sbx_pod_transform(cJSON *obj, void *userdata)
{
	if (!cJSON_IsObject(obj))
		return obj;
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
	cJSON_DeleteItemFromObjectCaseSensitive(md, "finalizers");
	cJSON *spec = cJSON_GetObjectItemCaseSensitive(obj, "spec");
	if (cJSON_IsObject(spec)) {
		/* Keep only nodeName: detach it, empty the spec, put it back. */
		cJSON *node = cJSON_DetachItemFromObjectCaseSensitive(spec, "nodeName");
		while (spec->child)
			cJSON_Delete(cJSON_DetachItemViaPointer(spec, spec->child));
		if (node && !cJSON_AddItemToObject(spec, "nodeName", node))
			cJSON_Delete(node);
	}
	/* Status: phase, pod IPs and the conditions' type/status/reason/message
	 * are all the reconciler reads; container statuses are most of the rest. */
	cJSON *status = cJSON_GetObjectItemCaseSensitive(obj, "status");
	if (cJSON_IsObject(status)) {
		static const char *keep[] = { "phase", "podIP", "podIPs", "conditions" };
		cJSON *f = status->child;
		while (f) {
			cJSON *next = f->next;
			bool kept = false;
			for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
				kept |= f->string && strcmp(f->string, keep[i]) == 0;
			if (!kept)
				cJSON_Delete(cJSON_DetachItemViaPointer(status, f));
			f = next;
		}
		cJSON *c;
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions")) {
			cJSON_DeleteItemFromObjectCaseSensitive(c, "lastProbeTime");
			cJSON_DeleteItemFromObjectCaseSensitive(c, "lastTransitionTime");
			cJSON_DeleteItemFromObjectCaseSensitive(c, "observedGeneration");
		}
	}
	return obj;
}
