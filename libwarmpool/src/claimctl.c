/*
 * claimctl.c - the SandboxClaim controller (docs/api.md#claim-controller, #warm-queue): the I/O
 * around the pure claim logic of claim.h and the warm queue of
 * warmqueue.h: informer handlers, the reconcile outline of docs/api.md#claim-reconcile,
 * getOrCreateSandbox (docs/api.md#finding-the-claims-sandbox), warm adoption with its compare-and-swap
 * (docs/api.md#claim-adoption), cold creation (docs/api.md#cold-start), expiry (docs/api.md#claim-expiry), the status write (docs/api.md#claim-conditions),
 * the claim metrics (docs/api.md#metrics) and events (docs/api.md#events).
 *
 * Reads come from the informer caches; the authoritative re-reads that
 * docs/api.md#claim-adoption names (claim after a 409 on the adoption Update, Sandbox after a
 * 404/409 on the adoption patch, claim before clearing its reference) go
 * to the API server. Every read and write of a pass goes through the
 * controller's executor (claimexec.h), so that whole passes run in the
 * unit tests without one; the decisions themselves are claimplan.h's.
 *
 * The one-warm-Sandbox-one-claim invariant does not rest on the queue (a
 * key may be popped by two workers after a push back raced a re-list):
 * it rests on the two optimistic-lock writes. The claim Update carries
 * the claim's resourceVersion, so a claim names one Sandbox; the Sandbox
 * patch carries the Sandbox's resourceVersion and moves its controller
 * reference from the pool to the claim, so only one claim's patch can
 * apply to the pool-owned version; the loser re-reads, sees another
 * controller, clears its reference and reports AdoptionConflict.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "warmpool/claimctl.h"
#include "asb/map.h"
#include "warmpool/blueprint.h"
#include "claim.h"
#include "claimexec.h"
#include "claimplan.h"
#include "ctlbase.h"
#include "warmqueue.h"
#include "jsonutil.h"
#include "k8s/object.h"
#include "sandbox/namehash.h"

#define INDEX_POOL_REF "claimctl:spec.warmPoolRef.name"
#define ADOPTION_ATTEMPTS 5
/* A Sandbox this controller bound a claim to less than BIND_CACHE_WAIT_MS
 * ago but that the Sandbox cache does not show yet is looked for there
 * again after BIND_CACHE_RECHECK_MS (the claim's Ready is written by then:
 * the recheck only confirms the binding, so it need not be soon; waking
 * the claim on the adoption's own event instead made passes whose claim
 * cache still lacked the status write, and their status writes lost 409s);
 * older, it is read from the API server. */
#define BIND_CACHE_WAIT_MS 3000
#define BIND_CACHE_RECHECK_MS 1000
/* Under a backlog of claim passes the first-Ready stamp waits (it only
 * guards the latency metrics), at most this long after the first Ready. */
#define STAMP_DEFER_MAX_MS 5000
#define STAMP_RECHECK_MS 1000

/* In-memory first observation of a claim ("ns/name" + UID), docs/api.md#claim-reconcile step 4. */
typedef struct obs_entry {
	char *uid;
	int64_t first_ns;     /* wall clock, ns since the epoch */
	bool np_checked;      /* legacy NetworkPolicy looked at (docs/api.md#claim-reconcile step 2) */
	char *bound;          /* Sandbox this controller bound the claim to, or NULL */
	int64_t bound_ms;     /* monotonic time of that binding */
	int64_t ready_ns;     /* first Ready recorded in the metrics here (wall clock, ns), or 0 */
	bool stamped;         /* the first-Ready stamp written by this controller */
} obs_entry;

struct wp_claim_controller {
	k8s_controller *ctl;
	wp_warm_queue *queue;
	asb_logger *logger;
	bool disable_events;
	bool disable_obs;
	wp_domains domains;
	asb_metric *m_claim, *m_ctrl, *m_client, *m_creation, *m_total;
	wp_claim_k8s k8s;              /* what the default executor works on */
	wp_claim_executor ex;          /* every read and write of a pass */
	pthread_mutex_t lock;          /* guards obs */
	asb_map obs;                   /* "ns/name" -> obs_entry * */
	atomic_int running;            /* passes in progress */
};

static const double claim_buckets[] = { 100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000,
                                        10000, 30000, 60000, 120000, 240000 };
static const double creation_buckets[] = { 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
                                           60000, 120000, 240000, 300000, 600000 };

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- first observations ---- */

/* The entry of `key` (lock held), or NULL. */
static obs_entry *obs_find(wp_claim_controller *c, const char *key)
{
	return asb_map_get(&c->obs, key);
}

static void obs_free(void *v)
{
	obs_entry *e = v;
	free(e->bound);
	free(e->uid);
	free(e);
}

/* Records the first observation of `claim` (a newer UID overwrites). */
static void obs_record(wp_claim_controller *c, const cJSON *claim)
{
	char *key = k8s_obj_key(claim);
	const char *uid = ju_nz(k8s_obj_uid(claim));
	if (!key)
		return;
	pthread_mutex_lock(&c->lock);
	obs_entry *e = obs_find(c, key);
	if (e && strcmp(e->uid, uid) != 0) {
		char *u = strdup(uid);
		if (u) {
			free(e->uid);
			e->uid = u;
			e->first_ns = now_ns();
			e->np_checked = false;
			free(e->bound);
			e->bound = NULL;
			e->ready_ns = 0;
			e->stamped = false;
		}
	} else if (!e) {
		e = calloc(1, sizeof(*e));
		if (e && (e->uid = strdup(uid))) {
			e->first_ns = now_ns();
			if (asb_map_set(&c->obs, key, e, NULL) < 0)
				obs_free(e);
		} else if (e) {
			free(e);
		}
	}
	pthread_mutex_unlock(&c->lock);
	free(key);
}

static void obs_forget(wp_claim_controller *c, const char *key)
{
	void *old = NULL;
	pthread_mutex_lock(&c->lock);
	if (asb_map_remove(&c->obs, key, &old) == 1)
		obs_free(old);
	pthread_mutex_unlock(&c->lock);
}

/* First observation of key+uid in ns (0: unknown); marks the NP check done
 * when `np_check` and returns in *np_todo whether it was still to do. */
static int64_t obs_get(wp_claim_controller *c, const char *key, const char *uid, bool *np_todo)
{
	int64_t t = 0;
	pthread_mutex_lock(&c->lock);
	obs_entry *e = obs_find(c, key);
	if (e && ju_str_eq(e->uid, uid)) {
		t = e->first_ns;
		if (np_todo) {
			*np_todo = !e->np_checked;
			e->np_checked = true;
		}
	} else if (np_todo) {
		*np_todo = true;
	}
	pthread_mutex_unlock(&c->lock);
	return t;
}

/*
 * The Sandbox this controller last bound claim key+uid to (cold create or
 * warm adoption), remembered so that a later pass whose caches lag behind
 * that write (the claim's status write lost to a 409, the Sandbox not yet
 * in the cache) does not bind the claim to a second Sandbox. `name` NULL
 * forgets it. Out of memory only loses the guard.
 */
static void obs_set_bound(wp_claim_controller *c, const char *key, const char *uid,
                          const char *name)
{
	char *v = name ? strdup(name) : NULL;
	pthread_mutex_lock(&c->lock);
	obs_entry *e = obs_find(c, key);
	if (e && ju_str_eq(e->uid, uid)) {
		free(e->bound);
		e->bound = v;
		e->bound_ms = k8s_monotonic_ms();
		v = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	free(v);
}

/* A copy of the remembered bound Sandbox name (caller frees), or NULL;
 * *age_ms (may be NULL) receives how long ago the binding was made. */
static char *obs_get_bound(wp_claim_controller *c, const char *key, const char *uid,
                           int64_t *age_ms)
{
	char *v = NULL;
	pthread_mutex_lock(&c->lock);
	obs_entry *e = obs_find(c, key);
	if (e && ju_str_eq(e->uid, uid) && e->bound) {
		v = strdup(e->bound);
		if (age_ms)
			*age_ms = k8s_monotonic_ms() - e->bound_ms;
	}
	pthread_mutex_unlock(&c->lock);
	return v;
}

/* The first-Ready bookkeeping of key+uid: *ready_ns (0: not recorded
 * here) and *stamped. */
static void obs_get_ready(wp_claim_controller *c, const char *key, const char *uid,
                          int64_t *ready_ns, bool *stamped)
{
	*ready_ns = 0;
	*stamped = false;
	pthread_mutex_lock(&c->lock);
	obs_entry *e = obs_find(c, key);
	if (e && ju_str_eq(e->uid, uid)) {
		*ready_ns = e->ready_ns;
		*stamped = e->stamped;
	}
	pthread_mutex_unlock(&c->lock);
}

/* Records the first-Ready metrics time (ready_ns > 0) and/or the stamp written. */
static void obs_set_ready(wp_claim_controller *c, const char *key, const char *uid,
                          int64_t ready_ns, bool stamped)
{
	pthread_mutex_lock(&c->lock);
	obs_entry *e = obs_find(c, key);
	if (e && ju_str_eq(e->uid, uid)) {
		if (ready_ns > 0)
			e->ready_ns = ready_ns;
		if (stamped)
			e->stamped = true;
	}
	pthread_mutex_unlock(&c->lock);
}

/* ---- handlers ---- */

static void on_claim_add(const cJSON *obj, void *ud)
{
	wp_claim_controller *c = ud;
	obs_record(c, obj);
	wp_ctl_enqueue_key(c->ctl, obj);
}

static void on_claim_update(const cJSON *o, const cJSON *n, void *ud)
{
	(void)o;
	on_claim_add(n, ud);
}

static void on_claim_delete(const cJSON *obj, void *ud)
{
	wp_ctl_enqueue_key(((wp_claim_controller *)ud)->ctl, obj);
}

static int index_pool_ref(const cJSON *obj, const char **keys, int cap, void *ud)
{
	(void)ud;
	const char *p = k8s_obj_str(obj, "spec.warmPoolRef.name");
	if (cap < 1 || ju_empty(p))
		return 0;
	keys[0] = p;
	return 1;
}

/* Enqueues the non-deleting claims of pool ns/pool (only unbound ones when `unbound_only`). */
typedef struct {
	wp_claim_controller *c;
	const char *ns;
	bool unbound_only;
} pool_claims_walk;

static int enqueue_claim(const void *obj, void *ud)
{
	pool_claims_walk *w = ud;
	const cJSON *cl = obj;
	if (!ju_str_eq(k8s_obj_namespace(cl), w->ns) || k8s_obj_is_deleting(cl))
		return 0;
	if (w->unbound_only && !ju_empty(k8s_obj_str(cl, "status.sandbox.name")))
		return 0;
	wp_ctl_enqueue_key(w->c->ctl, cl);
	return 0;
}

/* Enqueues the claims of pool ns/`pool` (unbound ones only, when asked),
 * read in place from the cache: this runs on every member event. */
static void enqueue_pool_claims(wp_claim_controller *c, const char *ns, const char *pool,
                                bool unbound_only)
{
	pool_claims_walk w = { c, ns, unbound_only };
	if (!ju_empty(pool))
		k8s_informer_read_index(c->k8s.claims, INDEX_POOL_REF, pool, enqueue_claim, &w);
}

static bool is_claim_ref(const cJSON *ref)
{
	char group[128];
	return ref && ju_str_eq(ju_str(ref, "kind"), SBX_KIND_CLAIM) &&
	       strcmp(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	              SBX_EXTENSIONS_GROUP) == 0;
}

/* True when `obj` is controlled by a SandboxWarmPool (any version). */
/* Sandboxes by the UID of their controller when that is a SandboxClaim:
 * how a claim finds the Sandbox it adopted, which its own object does not
 * name until its status is written (docs/api.md#claim-adoption). */
static int index_claim_controller(const cJSON *obj, const char **keys, int cap, void *ud)
{
	(void)ud;
	const cJSON *ref = k8s_obj_controller_ref(obj);
	const char *uid = ju_str(ref, "uid");
	if (cap < 1 || !is_claim_ref(ref) || ju_empty(uid))
		return 0;
	keys[0] = uid;
	return 1;
}

static bool is_pool_ctrl(const cJSON *obj)
{
	const cJSON *ref = k8s_obj_controller_ref(obj);
	char group[128];
	return ref && ju_str_eq(ju_str(ref, "kind"), SBX_KIND_WARM_POOL) &&
	       strcmp(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	              SBX_EXTENSIONS_GROUP) == 0;
}

static void enqueue_owner_claim(wp_claim_controller *c, const cJSON *sbx)
{
	const cJSON *ref = k8s_obj_controller_ref(sbx);
	if (!is_claim_ref(ref))
		return;
	wp_ctl_enqueue(c->ctl, k8s_obj_namespace(sbx), ju_str(ref, "name"));
}

static void feed_queue(wp_claim_controller *c, const cJSON *old_obj, const cJSON *new_obj)
{
	if (!wp_warm_should_push(old_obj, new_obj))
		return;
	char *pk = wp_warm_pool_key(k8s_obj_namespace(new_obj), wp_warm_pool_owner(new_obj));
	if (pk)
		wp_warm_queue_push(c->queue, pk, k8s_obj_namespace(new_obj), k8s_obj_name(new_obj),
		                   k8s_obj_str(new_obj, "status.nodeName"));
	free(pk);
}

static void on_sbx_add(const cJSON *obj, void *ud)
{
	enqueue_owner_claim(ud, obj);
	feed_queue(ud, NULL, obj);
}

static void on_sbx_update(const cJSON *o, const cJSON *n, void *ud)
{
	if (wp_claim_sandbox_update_matters(o, n)) {
		enqueue_owner_claim(ud, n);
		if (!ju_str_eq(ju_str(k8s_obj_controller_ref(o), "uid"),
		               ju_str(k8s_obj_controller_ref(n), "uid")))
			enqueue_owner_claim(ud, o);
	}
	feed_queue(ud, o, n);
}

static void on_sbx_delete(const cJSON *obj, void *ud)
{
	wp_claim_controller *c = ud;
	enqueue_owner_claim(c, obj);
	const char *pool = wp_warm_pool_owner(obj);
	if (!pool)
		return;
	char *pk = wp_warm_pool_key(k8s_obj_namespace(obj), pool);
	if (pk)
		wp_warm_queue_remove(c->queue, pk, k8s_obj_namespace(obj), k8s_obj_name(obj));
	free(pk);
}

static void on_pool_add(const cJSON *obj, void *ud)
{
	enqueue_pool_claims(ud, k8s_obj_namespace(obj), k8s_obj_name(obj), true);
}

static void on_pool_update(const cJSON *o, const cJSON *n, void *ud)
{
	if (k8s_obj_generation(o) != k8s_obj_generation(n))
		enqueue_pool_claims(ud, k8s_obj_namespace(n), k8s_obj_name(n), true);
}

static void on_pool_delete(const cJSON *obj, void *ud)
{
	wp_claim_controller *c = ud;
	char *pk = wp_warm_pool_key(k8s_obj_namespace(obj), k8s_obj_name(obj));
	if (pk)
		wp_warm_queue_drop(c->queue, pk);
	free(pk);
	enqueue_pool_claims(c, k8s_obj_namespace(obj), k8s_obj_name(obj), true);
}

/* Template create only: the claims of the pools that reference it. */
static void on_tpl_add(const cJSON *obj, void *ud)
{
	wp_claim_controller *c = ud;
	cJSON *pools = NULL;
	if (k8s_informer_list(c->k8s.pools, k8s_obj_namespace(obj), &pools) != 0)
		return;
	const cJSON *p;
	cJSON_ArrayForEach(p, pools)
		if (ju_str_eq(k8s_obj_str(p, "spec.sandboxTemplateRef.name"), k8s_obj_name(obj)))
			enqueue_pool_claims(c, k8s_obj_namespace(p), k8s_obj_name(p), false);
	cJSON_Delete(pools);
}

/* ---- life cycle ---- */

static int reconcile_fn(const char *key, k8s_reconcile_result *res, void *ud)
{
	return wp_claim_controller_reconcile(ud, key, res);
}

static int register_metrics(wp_claim_controller *c, asb_metrics_registry *reg)
{
	static const char *const hist_labels[] = { "launch_type", "sandbox_template", NULL };
	static const char *const creation_labels[] = { "namespace", "launch_type", "sandbox_template", NULL };
	static const char *const total_labels[] = { "namespace", "sandbox_template", "launch_type",
	                                            "warmpool_name", "pod_condition", "created_by", NULL };
	/* the three claim startup histograms differ only by name and help */
	static const struct { const char *name, *help; } hists[] = {
		{ "agent_sandbox_claim_startup_latency_ms", "End-to-end latency from SandboxClaim "
		  "creation (webhook first observation) to Ready, in milliseconds." },
		{ "agent_sandbox_claim_controller_startup_latency_ms", "Latency from the controller's "
		  "first observation of a SandboxClaim to Ready, in milliseconds." },
		{ "agent_sandbox_client_claim_startup_latency_ms", "Latency from the client's first "
		  "request of a SandboxClaim to Ready, in milliseconds." },
	};
	asb_metric **hist_out[] = { &c->m_claim, &c->m_ctrl, &c->m_client };
	wp_ctl_metric defs[5];
	for (size_t i = 0; i < 3; i++)
		defs[i] = (wp_ctl_metric){ hist_out[i], ASB_METRIC_HISTOGRAM, hists[i].name,
		                           hists[i].help, hist_labels, claim_buckets,
		                           sizeof(claim_buckets) / sizeof(double) };
	defs[3] = (wp_ctl_metric){ &c->m_creation, ASB_METRIC_HISTOGRAM,
	                           "agent_sandbox_creation_latency_ms",
	                           "Latency from Sandbox creation to its Ready condition, in milliseconds.",
	                           creation_labels, creation_buckets,
	                           sizeof(creation_buckets) / sizeof(double) };
	defs[4] = (wp_ctl_metric){ &c->m_total, ASB_METRIC_COUNTER, "agent_sandbox_claim_creation_total",
	                           "Sandboxes handed to SandboxClaims (cold creates and warm adoptions).",
	                           total_labels, NULL, 0 };
	return wp_ctl_register_metrics(reg, defs, 5);
}

int wp_claim_controller_new(wp_claim_controller **out, const wp_claim_controller_options *opts)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "claim controller: NULL out");
	*out = NULL;
	if (!opts || opts->version != WP_CLAIM_CONTROLLER_OPTIONS_VERSION || !opts->client ||
	    !opts->claims || !opts->sandboxes || !opts->pools || !opts->templates)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "claim controller: bad options (version, client, claims, sandboxes, "
		                     "pools, templates)");
	wp_claim_controller *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "claim controller: out of memory");
	c->k8s = (wp_claim_k8s){ opts->client, opts->claims, opts->sandboxes, opts->pools,
	                         opts->templates, opts->events, opts->networkpolicies };
	wp_claim_executor_k8s(&c->ex, &c->k8s);
	c->logger = opts->logger;
	c->disable_events = opts->disable_events;
	c->disable_obs = opts->disable_observability_annotations;
	pthread_mutex_init(&c->lock, NULL);
	asb_map_init(&c->obs);
	int rc = wp_domains_load(opts->allowed_label_domains_file, &c->domains);
	if (rc)
		goto fail;
	if ((rc = wp_warm_queue_new(&c->queue)))
		goto fail;
	if (opts->metrics && (rc = register_metrics(c, opts->metrics)))
		goto fail;
	if ((rc = wp_ctl_new(&c->ctl, "sandboxclaim", opts->workers > 0 ? opts->workers : 50,
	                     reconcile_fn, c, opts->logger, opts->metrics)))
		goto fail;
	const wp_ctl_handlers sets[] = {
		{ opts->claims, on_claim_add, on_claim_update, on_claim_delete, NULL },
		{ opts->sandboxes, on_sbx_add, on_sbx_update, on_sbx_delete, NULL },
		{ opts->pools, on_pool_add, on_pool_update, on_pool_delete, NULL },
		{ opts->templates, on_tpl_add, NULL, NULL, NULL },
	};
	/* Handlers before the informers start (documented contract); a
	 * failure here leaves earlier handler sets in: the caller must not
	 * start the informers after a failed _new(). */
	if ((rc = k8s_informer_add_index(opts->claims, INDEX_POOL_REF, index_pool_ref, NULL)) ||
	    (rc = k8s_informer_add_index(opts->sandboxes, WP_CLAIM_INDEX_CONTROLLER,
	                                 index_claim_controller, NULL)) ||
	    (rc = wp_ctl_add_handlers(sets, sizeof(sets) / sizeof(sets[0]), c))) {
		rc = asb_error_set(rc, 0, NULL, "claim controller: informer already started");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	wp_claim_controller_free(c);   /* takes a partly built controller too */
	return rc;
}

int wp_claim_controller_start(wp_claim_controller *c)
{
	return wp_ctl_start(c ? c->ctl : NULL, "claim controller");
}

void wp_claim_controller_stop(wp_claim_controller *c)
{
	if (c)
		k8s_controller_stop(c->ctl);
}

void wp_claim_controller_free(wp_claim_controller *c)
{
	if (!c)
		return;
	k8s_controller_free(c->ctl);
	wp_warm_queue_free(c->queue);
	wp_domains_free(&c->domains);
	asb_map_clear(&c->obs, obs_free);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* ---- one pass ---- */

typedef struct {
	wp_claim_controller *c;
	char *ns, *name, *key;
	cJSON *claim;         /* latest known copy; replaced by what writes return */
	cJSON *sbx;           /* the Sandbox the claim is bound to (owned), or NULL */
	wp_claim_err err;
	long pending_ms;      /* > 0: requeue after it, no status write (warm candidates
	                       * pending network, a binding the cache does not show yet) */
	bool stamp_deferred;  /* the first-Ready stamp waits for the claim backlog */
	int64_t now_ms;
	char first_observed[48];  /* the controller-first-observed-at value of this pass */
	char *bound_missing;  /* status.sandbox.name the Sandbox cache did not have */
} pass;

static void pass_set_claim(pass *p, cJSON *claim)
{
	if (claim) {
		cJSON_Delete(p->claim);
		p->claim = claim;
	}
}

static void pass_set_sbx(pass *p, cJSON *sbx)
{
	cJSON_Delete(p->sbx);
	p->sbx = sbx;
}

static void event(pass *p, const char *reason, const char *action, const char *note)
{
	wp_claim_controller *c = p->c;
	asb_log(c->logger, ASB_LOG_INFO, "claim event", "claim", p->key, "reason", reason,
	        "note", note, NULL);
	if (!c->disable_events)
		c->ex.event(c->ex.userdata, p->claim, reason, action, note);
}

/* The pass's I/O, through the controller's executor (claimexec.h). */
static int io_cached(pass *p, const k8s_resource *r, const char *ns, const char *name,
                     cJSON **out)
{
	return p->c->ex.cached(p->c->ex.userdata, r, ns, name, out);
}

static int io_get(pass *p, const k8s_resource *r, const char *name, cJSON **out)
{
	return p->c->ex.get(p->c->ex.userdata, r, p->ns, name, out);
}

static int io_patch(pass *p, const k8s_resource *r, const char *name, const char *sub,
                    const cJSON *patch, cJSON **out)
{
	return p->c->ex.patch(p->c->ex.userdata, r, p->ns, name, sub, patch, out);
}

static int io_delete(pass *p, const k8s_resource *r, const char *name,
                     const k8s_delete_options *opts)
{
	return p->c->ex.del(p->c->ex.userdata, r, p->ns, name, opts);
}

static const char *api_msg(void)
{
	return asb_error_last()->message;
}

/* Merge-patches the claim's metadata with `md` (taken); updates p->claim. */
static int patch_claim_metadata(pass *p, cJSON *md)
{
	cJSON *patch = cJSON_CreateObject();
	if (!patch || !ju_set(patch, "metadata", md)) {
		cJSON_Delete(patch);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	cJSON *out = NULL;
	int rc = io_patch(p, &wp_resource_claims, p->name, NULL, patch, &out);
	cJSON_Delete(patch);
	pass_set_claim(p, out);
	return rc;
}

/* Sets one claim annotation (value NULL: removes it), also a legacy label removal. */
static int patch_claim_annotation(pass *p, const char *k, const char *v, const char *label_rm)
{
	cJSON *md = cJSON_CreateObject();
	cJSON *ann = md ? ju_obj(md, "annotations") : NULL;
	if (!ann || !(v ? ju_set_str(ann, k, v) : ju_set_null(ann, k)) ||
	    (label_rm && !ju_set_null(ju_obj(md, "labels"), label_rm))) {
		cJSON_Delete(md);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	return patch_claim_metadata(p, md);
}

/* Merge-patches Sandbox ns/name with `patch`; *out (may be NULL) the result. */
static int patch_sandbox(pass *p, const char *name, const cJSON *patch, cJSON **out)
{
	return io_patch(p, &sbx_resource_sandboxes, name, NULL, patch, out);
}

/* Ensures the launch-type label exists on the bound Sandbox (only adds). */
static int ensure_launch_type(pass *p, const char *value)
{
	if (!ju_empty(k8s_obj_label(p->sbx, SBX_LABEL_LAUNCH_TYPE)))
		return 0;
	cJSON *patch = cJSON_CreateObject();
	cJSON *labels = patch ? ju_obj(ju_obj(patch, "metadata"), "labels") : NULL;
	if (!labels || !ju_set_str(labels, SBX_LABEL_LAUNCH_TYPE, value)) {
		cJSON_Delete(patch);
		return wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "out of memory"), ASB_ENOMEM;
	}
	cJSON *out = NULL;
	int rc = patch_sandbox(p, k8s_obj_name(p->sbx), patch, &out);
	cJSON_Delete(patch);
	if (rc) {
		wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "failed to set launch-type on sandbox "
		                 "\"%s\": %s", k8s_obj_name(p->sbx), api_msg());
		return rc;
	}
	pass_set_sbx(p, out);
	return 0;
}

/* The claim's pool and its template from the caches (either may come
 * back NULL). `*tpl_name` borrows from the pool. */
static void load_pool_template(pass *p, cJSON **pool, cJSON **tpl)
{
	*pool = NULL;
	*tpl = NULL;
	const char *pname = k8s_obj_str(p->claim, "spec.warmPoolRef.name");
	if (ju_empty(pname) || io_cached(p, &wp_resource_pools, p->ns, pname, pool) != 0)
		return;
	const char *tname = k8s_obj_str(*pool, "spec.sandboxTemplateRef.name");
	if (!ju_empty(tname))
		io_cached(p, &wp_resource_templates, p->ns, tname, tpl);
}

static bool claim_has_apm(const cJSON *claim)
{
	const cJSON *apm = k8s_obj_at(claim, "spec.additionalPodMetadata");
	return cJSON_GetArraySize(cJSON_GetObjectItem(apm, "labels")) > 0 ||
	       cJSON_GetArraySize(cJSON_GetObjectItem(apm, "annotations")) > 0;
}

/* docs/api.md#additionalpodmetadata fast path: re-derive the bound Sandbox's podTemplate metadata and
 * patch it when it differs. */
static int ensure_pod_metadata(pass *p)
{
	cJSON *pool, *tpl;
	load_pool_template(p, &pool, &tpl);
	int rc = 0;
	if (!tpl) {
		if (claim_has_apm(p->claim)) {
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER,
			                 "cannot apply additionalPodMetadata: template of SandboxWarmPool "
			                 "\"%s\" not found", ju_nz(k8s_obj_str(p->claim, "spec.warmPoolRef.name")));
			rc = ASB_ENOTFOUND;
		}
		goto out;
	}
	char hash[SBX_NAME_HASH_SIZE];
	const char *ref_hash = k8s_obj_label(p->sbx, SBX_LABEL_TEMPLATE_REF_HASH);
	if (ju_empty(ref_hash))
		ref_hash = sbx_name_hash(ju_nz(k8s_obj_name(tpl)), hash);
	cJSON *want = wp_claim_pod_metadata(p->claim, tpl, p->sbx, ref_hash, &p->err);
	if (!want) {
		rc = ASB_ERROR;
		goto out;
	}
	const cJSON *curmeta = k8s_obj_at(p->sbx, "spec.podTemplate.metadata");
	cJSON *cur = cJSON_CreateObject();
	const cJSON *l = cJSON_GetObjectItem(curmeta, "labels");
	const cJSON *a = cJSON_GetObjectItem(curmeta, "annotations");
	if (cur && l)
		ju_set(cur, "labels", cJSON_Duplicate(l, true));
	if (cur && a)
		ju_set(cur, "annotations", cJSON_Duplicate(a, true));
	if (cur && !k8s_obj_semantic_equal(cur, want)) {
		cJSON *diff = wp_merge_patch_diff(cur, want);
		cJSON *patch = cJSON_CreateObject();
		cJSON *pt = patch ? ju_obj(ju_obj(patch, "spec"), "podTemplate") : NULL;
		if (diff && pt && ju_set(pt, "metadata", diff)) {
			cJSON *outobj = NULL;
			rc = patch_sandbox(p, k8s_obj_name(p->sbx), patch, &outobj);
			if (rc)
				wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "failed to update pod metadata "
				                 "of sandbox \"%s\": %s", k8s_obj_name(p->sbx), api_msg());
			else
				pass_set_sbx(p, outobj);
		} else {
			if (!pt)
				cJSON_Delete(diff);
			rc = ASB_ENOMEM;
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "out of memory");
		}
		cJSON_Delete(patch);
	}
	cJSON_Delete(cur);
	cJSON_Delete(want);
out:
	cJSON_Delete(pool);
	cJSON_Delete(tpl);
	return rc;
}

/* The claim's assigned reference (docs/api.md#finding-the-claims-sandbox step 2); *from_label when legacy. */
static const char *assigned_ref(const cJSON *claim, bool *from_label)
{
	const char *a = k8s_obj_annotation(claim, WP_ANNOTATION_SANDBOX_NAME);
	*from_label = false;
	if (!ju_empty(a))
		return a;
	a = k8s_obj_label(claim, WP_LABEL_SANDBOX_NAME);
	if (!ju_empty(a)) {
		*from_label = true;
		return a;
	}
	return NULL;
}

/* Clears the claim's reference to `sbx_name` on a fresh copy from the API
 * server (only the forms that still name it). */
static int clear_reference(pass *p, const char *sbx_name)
{
	/* adoption no longer writes a reference: only claims an older
	 * controller assigned carry one */
	if (!ju_str_eq(k8s_obj_annotation(p->claim, WP_ANNOTATION_SANDBOX_NAME), sbx_name) &&
	    !ju_str_eq(k8s_obj_label(p->claim, WP_LABEL_SANDBOX_NAME), sbx_name))
		return 0;
	cJSON *fresh = NULL;
	int rc = io_get(p, &wp_resource_claims, p->name, &fresh);
	if (rc)
		return rc == ASB_ENOTFOUND ? 0 : rc;
	bool ann = ju_str_eq(k8s_obj_annotation(fresh, WP_ANNOTATION_SANDBOX_NAME), sbx_name);
	bool lab = ju_str_eq(k8s_obj_label(fresh, WP_LABEL_SANDBOX_NAME), sbx_name);
	if (!ann && !lab) {
		pass_set_claim(p, fresh);
		return 0;
	}
	cJSON *md = cJSON_CreateObject();
	if (!md || !ju_set_str(md, "resourceVersion", ju_nz(k8s_obj_resource_version(fresh))) ||
	    (ann && !ju_set_null(ju_obj(md, "annotations"), WP_ANNOTATION_SANDBOX_NAME)) ||
	    (lab && !ju_set_null(ju_obj(md, "labels"), WP_LABEL_SANDBOX_NAME))) {
		cJSON_Delete(md);
		cJSON_Delete(fresh);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	cJSON_Delete(fresh);
	rc = patch_claim_metadata(p, md);
	return rc == ASB_ENOTFOUND ? 0 : rc;
}

static void conflict(pass *p, const char *fmt, const char *a, const char *b)
{
	wp_claim_err_set(&p->err, WP_CLAIM_E_ADOPTION_CONFLICT, fmt, a, b);
}

/* Sets an AdoptionConflict "<prefix>: <api error>" with the api tail marked. */
static void conflict_api(pass *p, char *prefix, const char *apierr)
{
	if (!prefix) {
		wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "out of memory");
		return;
	}
	wp_claim_err_set(&p->err, WP_CLAIM_E_ADOPTION_CONFLICT, "%s: %s", prefix, apierr);
	p->err.api_tail = strlen(prefix);
	free(prefix);
}

static const char *pool_template_name(const cJSON *pool, const cJSON *sbx)
{
	const char *t = k8s_obj_str(pool, "spec.sandboxTemplateRef.name");
	return !ju_empty(t) ? t : k8s_obj_annotation(sbx, SBX_ANNOTATION_SANDBOX_TEMPLATE_REF);
}

/*
 * After a 404/409 on the adoption patch of `sname`: the authoritative
 * re-read and what it means (docs/api.md#claim-adoption step 2). Returns 0
 * when the claim controls it already (p->sbx set), 1 when it is still
 * pool-owned and adoptable (*fresh, owned: the copy to patch again), -1
 * otherwise (p->err set; the claim's reference cleared where the Sandbox is
 * lost to it).
 */
static int reread_after_conflict(pass *p, const char *sname, cJSON **fresh_out)
{
	cJSON *fresh = NULL;
	int rc = io_get(p, &sbx_resource_sandboxes, sname, &fresh);
	if (rc == ASB_ENOTFOUND) {
		if (clear_reference(p, sname))
			conflict(p, "adoption write conflict: sandbox %s deleted and reference cleanup "
			         "failed%s", sname, "");
		else
			conflict(p, "adoption write conflict: sandbox %s deleted before adoption "
			         "completed%s", sname, "");
		return -1;
	}
	if (rc) {
		wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "failed to re-read sandbox \"%s\": %s",
		                 sname, api_msg());
		return -1;
	}
	if (wp_controlled_by_claim(fresh, p->claim)) {
		pass_set_sbx(p, fresh);
		return 0;
	}
	const char *why = NULL;
	if (!is_pool_ctrl(fresh)) {
		cJSON_Delete(fresh);
		if (clear_reference(p, sname))
			conflict(p, "adoption write conflict: sandbox %s lost to another owner and "
			         "reference cleanup failed%s", sname, "");
		else
			conflict(p, "adoption write conflict: sandbox %s is no longer pool-owned and not "
			         "controlled by claim %s", sname, p->name);
		return -1;
	}
	if (!wp_claim_candidate_ok(p->claim, fresh, &why)) {
		cJSON_Delete(fresh);
		if (clear_reference(p, sname)) {
			conflict(p, "adoption write conflict: sandbox %s lost to another owner and "
			         "reference cleanup failed%s", sname, "");
		} else {
			char *pfx = ju_printf("adoption write conflict: sandbox %s is no longer adoptable "
			                      "by claim %s", sname, p->name);
			wp_claim_err_set(&p->err, WP_CLAIM_E_ADOPTION_CONFLICT, "%s: %s", ju_nz(pfx), why);
			free(pfx);
		}
		return -1;
	}
	*fresh_out = fresh;
	return 1;
}

/*
 * docs/api.md#claim-adoption step 2 (and docs/api.md#finding-the-claims-sandbox step 2): the Sandbox patch with its 404/409
 * resolution. `sbx` is the pool-owned copy (borrowed). On success p->sbx
 * is the claim-owned Sandbox. Returns 0, or -1 with p->err set; *requeue_key
 * tells the caller whether the candidate key may go back to the queue.
 */
static int finish_adoption(pass *p, const cJSON *sbx, bool from_queue, bool *requeue_key)
{
	const char *sname = k8s_obj_name(sbx);
	cJSON *pool, *tpl;
	load_pool_template(p, &pool, &tpl);
	const char *tname = pool_template_name(pool, sbx);
	cJSON *cur = cJSON_Duplicate(sbx, true);
	int result = -1;
	*requeue_key = false;
	for (int attempt = 0; attempt < ADOPTION_ATTEMPTS; attempt++) {
		cJSON *patch = wp_claim_adoption_patch(p->claim, cur, tpl, tname, k8s_now_ms(), &p->err);
		if (!patch) {
			*requeue_key = from_queue;
			goto out;
		}
		cJSON *out = NULL;
		int rc = patch_sandbox(p, sname, patch, &out);
		cJSON_Delete(patch);
		if (rc == 0) {
			pass_set_sbx(p, out);
			result = 0;
			goto out;
		}
		if (rc != ASB_ENOTFOUND && rc != ASB_ECONFLICT) {
			if (from_queue) {
				*requeue_key = true;
				wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "%s", api_msg());
			} else {
				wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER,
				                 "failed to complete adoption of \"%s\": %s", sname, api_msg());
			}
			goto out;
		}
		char *apierr = strdup(api_msg());
		cJSON *fresh = NULL;
		int r = reread_after_conflict(p, sname, &fresh);
		if (r <= 0) {
			free(apierr);
			result = r;
			goto out;
		}
		/* still pool-owned and adoptable: re-patch on the fresh copy */
		cJSON_Delete(cur);
		cur = fresh;
		if (attempt == ADOPTION_ATTEMPTS - 1) {
			conflict_api(p, ju_printf("adoption write conflict: completing adoption of %s for "
			                          "claim %s", sname, p->name), ju_nz(apierr));
			free(apierr);
			goto out;
		}
		free(apierr);
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
	}
out:
	cJSON_Delete(cur);
	cJSON_Delete(pool);
	cJSON_Delete(tpl);
	return result;
}

static bool sbx_ready(const cJSON *sbx)
{
	return ju_str_eq(ju_str(wp_condition(cJSON_GetObjectItem(sbx, "status"), SBX_CONDITION_READY),
	                        "status"), "True");
}

static const char *template_label(const cJSON *sbx)
{
	const char *t = k8s_obj_annotation(sbx, SBX_ANNOTATION_SANDBOX_TEMPLATE_REF);
	return ju_empty(t) ? "__unknown__" : t;
}

static void count_creation(pass *p, const char *tpl, const char *launch, const char *pool,
                           const char *pod_condition)
{
	if (!p->c->m_total)
		return;
	const char *v[] = { p->ns, ju_nz(tpl), launch, ju_nz(pool), pod_condition,
	                    wp_normalize_created_by(k8s_obj_label(p->claim, SBX_LABEL_CREATED_BY)) };
	asb_metric_add(p->c->m_total, v, 6, 1);
}

/* Item list for push back. */
typedef struct {
	wp_warm_item *items;
	size_t n, cap;
} item_list;

static void items_add(item_list *l, wp_warm_item *it)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		wp_warm_item *ni = realloc(l->items, cap * sizeof(*ni));
		if (!ni) {
			wp_warm_item_clear(it);  /* lost key: re-fed by its next update */
			return;
		}
		l->items = ni;
		l->cap = cap;
	}
	l->items[l->n++] = *it;
	memset(it, 0, sizeof(*it));
}

/* The state of one scan of a pool's warm queue (try_warm()). */
typedef struct {
	const char *pname;          /* the claim's pool */
	wp_claim_choice choice;
	cJSON *chosen, *fallback;   /* owned */
	wp_warm_item chosen_it, fallback_it;
	item_list skipped;          /* pushed back when the scan ends */
	bool pool_loaded;
	wp_claim_pool_view view;
	cJSON *tpl;                 /* the pool's template under Recreate (owned) */
	char tpl_hash[SBX_NAME_HASH_SIZE];
} warm_scan;

/* The Recreate view of the claim's pool (its template and hash), read once,
 * and only when a candidate needs it. */
static void scan_load_pool(pass *p, warm_scan *s)
{
	cJSON *pool = NULL;
	s->pool_loaded = true;
	if (io_cached(p, &wp_resource_pools, p->ns, s->pname, &pool) == 0 &&
	    ju_str_eq(k8s_obj_str(pool, "spec.updateStrategy.type"), WP_UPDATE_STRATEGY_RECREATE)) {
		s->view.recreate = true;
		const char *tn = k8s_obj_str(pool, "spec.sandboxTemplateRef.name");
		if (!ju_empty(tn) && io_cached(p, &wp_resource_templates, p->ns, tn, &s->tpl) == 0 &&
		    wp_blueprint_hash(s->tpl, s->tpl_hash) == 0) {
			s->view.tpl_known = true;
			s->view.tpl = s->tpl;
			s->view.tpl_hash = s->tpl_hash;
		}
	}
	cJSON_Delete(pool);
}

/* The verdict on candidate `sbx` (item `it`); *pending: it waits for its IPs. */
static wp_cand_verdict scan_verdict(pass *p, warm_scan *s, const cJSON *sbx, wp_warm_item *it,
                                    bool *pending)
{
	*pending = false;
	wp_cand_verdict v = wp_claim_cand_precheck(p->claim, sbx);
	if (v == WP_CAND_ELIGIBLE) {
		if (!s->pool_loaded)
			scan_load_pool(p, s);
		v = wp_claim_cand_verdict(&s->view, sbx, pending);
	}
	if (v == WP_CAND_NO_NETWORK) {
		/* the picker prefers its node once the IPs arrive */
		const char *node = k8s_obj_str(sbx, "status.nodeName");
		if (!ju_empty(node)) {
			char *nd = strdup(node);
			if (nd) {
				free(it->node_name);
				it->node_name = nd;
			}
		}
	}
	return v;
}

/* Offers candidate `sbx` (taken) with its item `it` (emptied) to the choice. */
static void scan_offer(warm_scan *s, wp_cand_verdict v, bool pending, cJSON *sbx,
                       wp_warm_item *it)
{
	switch (wp_claim_choice_offer(&s->choice, v, pending)) {
	case WP_CAND_TAKE:
		s->chosen = sbx;
		s->chosen_it = *it;
		break;
	case WP_CAND_HOLD:
		s->fallback = sbx;
		s->fallback_it = *it;
		break;
	case WP_CAND_DROP:
		wp_warm_item_clear(it);
		cJSON_Delete(sbx);
		break;
	case WP_CAND_KEEP:
		items_add(&s->skipped, it);
		cJSON_Delete(sbx);
		break;
	}
}

/* Ends the scan: the held fallback becomes the choice when nothing was
 * Ready, the candidates kept go back to the queue `qkey`. */
static void scan_finish(wp_claim_controller *c, const char *qkey, warm_scan *s)
{
	wp_claim_choice_finish(&s->choice);
	if (s->choice.held && !s->choice.keep_held) {
		/* nothing Ready: the held fallback is the one */
		s->chosen = s->fallback;
		s->chosen_it = s->fallback_it;
		s->fallback = NULL;
		memset(&s->fallback_it, 0, sizeof(s->fallback_it));
	}
	if (s->fallback)
		items_add(&s->skipped, &s->fallback_it);
	cJSON_Delete(s->fallback);
	for (size_t i = 0; i < s->skipped.n; i++) {
		wp_warm_queue_push(c->queue, qkey, s->skipped.items[i].namespace_,
		                   s->skipped.items[i].name, s->skipped.items[i].node_name);
		wp_warm_item_clear(&s->skipped.items[i]);
	}
	free(s->skipped.items);
	cJSON_Delete(s->tpl);
}

/* Adopts the chosen `sbx` (taken; `it` its queue item, cleared): the
 * Sandbox patch, then the event, metric and log. A failed
 * adoption puts the item back when finish_adoption() allows. Returns 1 or -1. */
static int adopt_warm(pass *p, const char *qkey, cJSON *sbx, wp_warm_item *it)
{
	wp_claim_controller *c = p->c;
	const char *sname = k8s_obj_name(sbx);
	bool requeue = true;
	int result;
	/* One conditional write adopts: the Sandbox patch under its
	 * resourceVersion names the claim its controller; the claim finds it
	 * again by that ownerReference (use_controlled()), and clients by the
	 * status this pass writes. */
	if (finish_adoption(p, sbx, true, &requeue) != 0) {
		result = -1;
	} else {
		result = 1;
		obs_set_bound(c, p->key, k8s_obj_uid(p->claim), sname);
		char *note = ju_printf("Adopted warm pool Sandbox \"%s\"", sname);
		event(p, "SandboxAdopted", "Adoption", note ? note : "Adopted warm pool Sandbox");
		free(note);
		const char *owner = wp_warm_pool_owner(sbx);
		count_creation(p, template_label(sbx), WP_LAUNCH_TYPE_WARM,
		               owner ? owner : "none", sbx_ready(sbx) ? "ready" : "not_ready");
		asb_log(c->logger, ASB_LOG_INFO, "warm sandbox adopted", "claim", p->key,
		        "sandbox", sname, NULL);
	}
	if (result < 0 && requeue)
		wp_warm_queue_push(c->queue, qkey, it->namespace_, it->name, it->node_name);
	wp_warm_item_clear(it);
	cJSON_Delete(sbx);
	return result;
}

/*
 * docs/api.md#claim-adoption candidate selection and adoption. Returns 1 adopted (p->sbx set),
 * 0 none adoptable (*pending_network = candidates without IPs), -1 error
 * (p->err set).
 */
static int try_warm(pass *p, int *pending_network)
{
	wp_claim_controller *c = p->c;
	warm_scan s = { .pname = k8s_obj_str(p->claim, "spec.warmPoolRef.name") };
	char *qkey = wp_warm_pool_key(p->ns, s.pname);
	if (!qkey)
		return wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "out of memory"), -1;
	*pending_network = 0;
	wp_warm_item it;
	while (!s.choice.done && wp_warm_queue_pop(c->queue, qkey, &it) == 0) {
		cJSON *sbx = NULL;
		if (io_cached(p, &sbx_resource_sandboxes, it.namespace_, it.name, &sbx) != 0) {
			wp_warm_item_clear(&it);  /* gone: discard */
			continue;
		}
		bool pending;
		wp_cand_verdict v = scan_verdict(p, &s, sbx, &it, &pending);
		scan_offer(&s, v, pending, sbx, &it);
	}
	scan_finish(c, qkey, &s);
	*pending_network = s.choice.pending;
	int result = s.chosen ? adopt_warm(p, qkey, s.chosen, &s.chosen_it) : 0;
	free(qkey);
	return result;
}

/*
 * A pool or template by name: the cache, else the API server. A pool and a
 * claim applied together (or a pool created just before create_sandbox())
 * can reach the claim worker before the pool's informer: the SDK fails
 * fast on WarmPoolNotFound, so "not found" must be the API server's word,
 * not a lagging cache's. Costs one GET per pass of a claim whose pool or
 * template is really missing (those are requeued slowly).
 * Returns 0 (*out owned), ASB_ENOTFOUND, or the GET's error.
 */
static int get_ref(pass *p, const k8s_resource *r, const char *name, cJSON **out)
{
	if (ju_empty(name))
		return ASB_ENOTFOUND;
	if (io_cached(p, r, p->ns, name, out) == 0)
		return 0;
	int rc = io_get(p, r, name, out);
	if (rc == 0)
		asb_log(p->c->logger, ASB_LOG_DEBUG, "cache miss, found on the API server", "claim",
		        p->key, "resource", r->resource, "name", name, NULL);
	return rc;
}

/* docs/api.md#cold-start: the cold path (pool, template, create). */
static void create_cold(pass *p)
{
	wp_claim_controller *c = p->c;
	const char *pname = k8s_obj_str(p->claim, "spec.warmPoolRef.name");
	cJSON *pool = NULL, *tpl = NULL;
	int rc = get_ref(p, &wp_resource_pools, pname, &pool);
	if (rc != 0) {
		if (rc == ASB_ENOTFOUND)
			wp_claim_err_set(&p->err, WP_CLAIM_E_POOL_NOT_FOUND,
			                 "SandboxWarmPool \"%s\" not found", ju_nz(pname));
		else
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "get SandboxWarmPool \"%s\": %s",
			                 ju_nz(pname), asb_error_last()->message);
		return;
	}
	const char *tname = k8s_obj_str(pool, "spec.sandboxTemplateRef.name");
	rc = get_ref(p, &wp_resource_templates, tname, &tpl);
	if (rc != 0) {
		if (rc == ASB_ENOTFOUND)
			wp_claim_err_set(&p->err, WP_CLAIM_E_TEMPLATE_NOT_FOUND,
			                 "SandboxTemplate \"%s\" not found", ju_nz(tname));
		else
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "get SandboxTemplate \"%s\": %s",
			                 ju_nz(tname), asb_error_last()->message);
		cJSON_Delete(pool);
		return;
	}
	cJSON *want = wp_claim_cold_sandbox(p->claim, tpl, &p->err);
	if (want) {
		cJSON *out = NULL;
		rc = c->ex.create(c->ex.userdata, &sbx_resource_sandboxes, p->ns, want, &out);
		if (rc == ASB_EALREADYEXISTS) {
			wp_claim_err_set(&p->err, WP_CLAIM_E_CREATE_PENDING, "sandbox \"%s\" already exists",
			                 p->name);
		} else if (rc) {
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "sandbox create error: %s", api_msg());
		} else {
			pass_set_sbx(p, out);
			obs_set_bound(c, p->key, k8s_obj_uid(p->claim), p->name);
			char *note = ju_printf("Created Sandbox \"%s\"", p->name);
			event(p, "SandboxProvisioned", "Provisioning", note ? note : "Created Sandbox");
			free(note);
			count_creation(p, tname, WP_LAUNCH_TYPE_COLD, pname, "not_ready");
			asb_log(c->logger, ASB_LOG_INFO, "cold sandbox created", "claim", p->key, NULL);
		}
		cJSON_Delete(want);
	}
	cJSON_Delete(pool);
	cJSON_Delete(tpl);
}

static int64_t claim_age_ms(pass *p)
{
	int64_t first = obs_get(p->c, p->key, k8s_obj_uid(p->claim), NULL);
	if (first > 0)
		return p->now_ms - first / 1000000;
	int64_t created;
	if (k8s_time_parse(ju_nz(k8s_obj_str(p->claim, "metadata.creationTimestamp")), &created) == 0)
		return p->now_ms - created;
	return WP_CLAIM_NETWORK_GRACE_MS;
}

/*
 * Cache-lag guard for get_or_create: when this controller bound the claim
 * to a Sandbox earlier (or `status_name`, the claim's status.sandbox.name
 * the Sandbox cache missed, names one: a bind by an earlier run) and the
 * caches do not show it, re-reads that Sandbox from the API server. Returns true
 * when the pass is decided (p->sbx set, or p->err set on a read error);
 * false when the Sandbox is gone or no longer the claim's (then forgotten).
 */
static bool recall_bound(pass *p, const char *status_name)
{
	int64_t age_ms = -1;
	char *name = obs_get_bound(p->c, p->key, k8s_obj_uid(p->claim), &age_ms);
	if (name && age_ms >= 0 && age_ms < BIND_CACHE_WAIT_MS) {
		/* Our own write of moments ago (this pass runs on the event of
		 * the status write that followed it): the Sandbox cache will
		 * show it shortly. Look again then, without a GET per claim of
		 * a burst at an API server that is busy with the burst. */
		asb_log(p->c->logger, ASB_LOG_DEBUG, "bound sandbox not yet in cache, rechecking",
		        "claim", p->key, "sandbox", name, NULL);
		free(name);
		p->pending_ms = BIND_CACHE_RECHECK_MS;
		return true;
	}
	if (!name && status_name && !(name = strdup(status_name)))
		return false;
	if (!name)
		return false;
	cJSON *fresh = NULL;
	int rc = io_get(p, &sbx_resource_sandboxes, name, &fresh);
	bool decided = true;
	if (rc == 0 && wp_controlled_by_claim(fresh, p->claim)) {
		asb_log(p->c->logger, ASB_LOG_DEBUG, "bound sandbox not yet in cache", "claim", p->key,
		        "sandbox", name, NULL);
		pass_set_sbx(p, fresh);
		ensure_launch_type(p, strcmp(name, p->name) == 0 ? WP_LAUNCH_TYPE_COLD
		                                                 : WP_LAUNCH_TYPE_WARM);
	} else if (rc == 0 || rc == ASB_ENOTFOUND) {
		cJSON_Delete(fresh);
		obs_set_bound(p->c, p->key, k8s_obj_uid(p->claim), NULL);
		decided = false;
	} else {
		wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "failed to get sandbox \"%s\": %s", name,
		                 api_msg());
	}
	free(name);
	return decided;
}

/* Removes the claim's assigned reference (the annotation, and the legacy
 * label when that is where it was); a failure is only logged. */
static void drop_reference(pass *p, bool from_label)
{
	if (patch_claim_annotation(p, WP_ANNOTATION_SANDBOX_NAME, NULL,
	                           from_label ? WP_LABEL_SANDBOX_NAME : NULL) != 0)
		asb_log(p->c->logger, ASB_LOG_WARN, "cannot remove sandbox reference", "claim",
		        p->key, "error", api_msg(), NULL);
}

/*
 * docs/api.md#finding-the-claims-sandbox step 2: the Sandbox that the
 * claim's reference `aname` names. Returns true when the pass is decided
 * (p->sbx or p->err set); false to go on, the reference removed when it
 * names no Sandbox or one this claim cannot have.
 */
static bool use_assigned(pass *p, const char *aname, bool from_label)
{
	cJSON *sbx = NULL;
	if (io_cached(p, &sbx_resource_sandboxes, p->ns, aname, &sbx) != 0) {
		if (patch_claim_annotation(p, WP_ANNOTATION_SANDBOX_NAME, NULL,
		                           from_label ? WP_LABEL_SANDBOX_NAME : NULL) != 0 &&
		    asb_error_last()->code != ASB_ENOTFOUND) {
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "failed to remove sandbox "
			                 "reference: %s", api_msg());
			return true;
		}
		return false;
	}
	if (wp_controlled_by_claim(sbx, p->claim)) {
		if (from_label && patch_claim_annotation(p, WP_ANNOTATION_SANDBOX_NAME, aname,
		                                         WP_LABEL_SANDBOX_NAME) != 0)
			asb_log(p->c->logger, ASB_LOG_WARN, "legacy sandbox-name label migration failed",
			        "claim", p->key, "error", api_msg(), NULL);
		pass_set_sbx(p, sbx);
		ensure_launch_type(p, WP_LAUNCH_TYPE_WARM);
		return true;
	}
	bool pool_owned = is_pool_ctrl(sbx);
	if (pool_owned && wp_claim_candidate_ok(p->claim, sbx, NULL)) {
		bool requeue;
		if (finish_adoption(p, sbx, false, &requeue) == 0)
			obs_set_bound(p->c, p->key, k8s_obj_uid(p->claim), aname);
		cJSON_Delete(sbx);
		return true;
	}
	bool drop = pool_owned || wp_controlled_by_any_claim(sbx);
	cJSON_Delete(sbx);
	if (drop)
		drop_reference(p, from_label);
	return false;
}

/* docs/api.md#finding-the-claims-sandbox step 3: a Sandbox in the cache
 * that this claim controls (its UID in the controller ownerReference). */
static bool use_controlled(pass *p)
{
	cJSON *sbx = NULL;
	if (p->c->ex.controlled(p->c->ex.userdata, p->ns, k8s_obj_uid(p->claim), &sbx) != 0)
		return false;
	if (!wp_controlled_by_claim(sbx, p->claim)) {
		cJSON_Delete(sbx);
		return false;
	}
	bool cold = ju_str_eq(k8s_obj_name(sbx), p->name);
	pass_set_sbx(p, sbx);
	obs_set_bound(p->c, p->key, k8s_obj_uid(p->claim), k8s_obj_name(sbx));
	ensure_launch_type(p, cold ? WP_LAUNCH_TYPE_COLD : WP_LAUNCH_TYPE_WARM);
	return true;
}

/* docs/api.md#finding-the-claims-sandbox getOrCreateSandbox. */
static void get_or_create(pass *p)
{
	cJSON *sbx = NULL;
	bool from_label;
	/* 1. the bound name */
	const char *bound = k8s_obj_str(p->claim, "status.sandbox.name");
	const char *assigned = assigned_ref(p->claim, &from_label);
	if (!ju_empty(bound) && io_cached(p, &sbx_resource_sandboxes, p->ns, bound, &sbx) != 0) {
		free(p->bound_missing);
		p->bound_missing = strdup(bound);   /* NULL (out of memory): no guard */
	} else if (!ju_empty(bound)) {
		if (wp_controlled_by_claim(sbx, p->claim)) {
			bool warm = ju_str_eq(bound, assigned) || strcmp(bound, p->name) != 0;
			pass_set_sbx(p, sbx);
			if (ensure_launch_type(p, warm ? WP_LAUNCH_TYPE_WARM : WP_LAUNCH_TYPE_COLD) == 0)
				ensure_pod_metadata(p);
			return;
		}
		cJSON_Delete(sbx);
		sbx = NULL;
	}
	/* 2. the assigned reference (a copy: writes replace p->claim) */
	if (assigned) {
		char *aname = strdup(assigned);
		if (!aname) {
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "out of memory");
			return;
		}
		bool decided = use_assigned(p, aname, from_label);
		free(aname);
		if (decided)
			return;
	}
	/* 3. a Sandbox the claim controls: one it adopted, found by the
	 * ownerReference adoption wrote */
	if (use_controlled(p))
		return;
	/* 4. the claim's own name */
	if (io_cached(p, &sbx_resource_sandboxes, p->ns, p->name, &sbx) == 0) {
		if (wp_controlled_by_claim(sbx, p->claim)) {
			pass_set_sbx(p, sbx);
			ensure_launch_type(p, WP_LAUNCH_TYPE_COLD);
			return;
		}
		cJSON_Delete(sbx);
		wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER,
		                 "sandbox \"%s\" is not controlled by claim \"%s\". Please use a different "
		                 "claim name or delete the sandbox manually", p->name, p->name);
		return;
	}
	/* A Sandbox this controller bound the claim to that the caches do not
	 * show yet: ask the API server before handing out a second one. */
	if (recall_bound(p, p->bound_missing))
		return;
	/* 5.-7. warm */
	if (!wp_claim_forces_cold(p->claim)) {
		int pending = 0;
		int r = try_warm(p, &pending);
		if (r != 0)
			return;
		if (pending > 0) {
			p->pending_ms = wp_claim_network_wait_ms(claim_age_ms(p));
			if (p->pending_ms > 0)
				return;
		}
	}
	/* 8. cold */
	create_cold(p);
}

/* docs/api.md#claim-expiry Retain: delete the bound Sandbox if ours. */
static void reconcile_expired(pass *p)
{
	const char *bound = k8s_obj_str(p->claim, "status.sandbox.name");
	const char *sname = !ju_empty(bound) ? bound : p->name;
	cJSON *sbx = NULL;
	if (io_cached(p, &sbx_resource_sandboxes, p->ns, sname, &sbx) != 0)
		return;
	if (!wp_controlled_by_claim(sbx, p->claim)) {
		wp_claim_err_set(&p->err, WP_CLAIM_E_NOT_OWNED,
		                 "Claim expired. sandbox not owned by this claim: sandbox \"%s\" is not "
		                 "owned by claim \"%s\"; deletion skipped.", sname, p->name);
		cJSON_Delete(sbx);
		return;
	}
	if (!k8s_obj_is_deleting(sbx)) {
		int rc = io_delete(p, &sbx_resource_sandboxes, sname, NULL);
		if (rc && rc != ASB_ENOTFOUND)
			wp_claim_err_set(&p->err, WP_CLAIM_E_OTHER, "failed to delete sandbox \"%s\": %s",
			                 sname, api_msg());
	}
	pass_set_sbx(p, sbx);
}

/*
 * Writes `st` as the claim status (optimistic-lock merge patch) unless
 * unchanged. Returns 0 (also for a swallowed 409 or NotFound; *authoritative
 * false after a 409) or the error.
 */
static int write_status(pass *p, const cJSON *st, bool *authoritative)
{
	*authoritative = true;
	const cJSON *old = cJSON_GetObjectItem(p->claim, "status");
	if (wp_claim_status_equal(old, st))
		return 0;
	/* conditions of both sides sorted by type first (docs/api.md#claim-reconcile step 9) */
	cJSON *olds = wp_claim_status_sorted(old), *news = wp_claim_status_sorted(st);
	cJSON *diff = olds && news ? wp_merge_patch_diff(olds, news) : NULL;
	cJSON_Delete(olds);
	cJSON_Delete(news);
	cJSON *patch = cJSON_CreateObject();
	cJSON *md = patch ? ju_obj(patch, "metadata") : NULL;
	if (!diff || !md || !ju_set_str(md, "resourceVersion",
	                                ju_nz(k8s_obj_resource_version(p->claim))) ||
	    !ju_set(patch, "status", diff)) {
		if (!cJSON_GetObjectItem(patch, "status"))
			cJSON_Delete(diff);
		cJSON_Delete(patch);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	cJSON *out = NULL;
	int rc = io_patch(p, &wp_resource_claims, p->name, "status", patch, &out);
	cJSON_Delete(patch);
	if (rc == ASB_ECONFLICT) {
		*authoritative = false;
		asb_log(p->c->logger, ASB_LOG_DEBUG, "claim status write conflict", "claim", p->key, NULL);
		return 0;
	}
	if (rc == ASB_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	const cJSON *r = wp_condition(cJSON_GetObjectItem(out, "status"), SBX_CONDITION_READY);
	asb_log(p->c->logger, ASB_LOG_DEBUG, "claim status written", "claim", p->key,
	        "ready", ju_str(r, "status"), "reason", ju_str(r, "reason"), NULL);
	pass_set_claim(p, out);
	return 0;
}

static void observe_since(asb_metric *m, const char *const *labels, size_t n, const char *stamp,
                          int64_t now, bool guard_negative)
{
	int64_t t;
	if (!m || ju_empty(stamp) || k8s_time_parse(stamp, &t) != 0)
		return;
	int64_t d = now - t;
	if (guard_negative && d < 0)
		return;
	asb_metric_observe(m, labels, n, (double)d);
}

/* The metadata of the first-Ready write: claim-first-ready-at `ready`,
 * and controller-first-observed-at when the claim lacks it (unless
 * observability annotations are off). NULL when out of memory. */
static cJSON *stamps(pass *p, const char *ready)
{
	cJSON *md = cJSON_CreateObject();
	cJSON *ann = md ? ju_obj(md, "annotations") : NULL;
	bool obs = !p->c->disable_obs &&
	           ju_empty(k8s_obj_annotation(p->claim, WP_ANNOTATION_CONTROLLER_FIRST_OBSERVED));
	if (!ann || !ju_set_str(ann, WP_ANNOTATION_CLAIM_FIRST_READY, ready) ||
	    (obs && !ju_set_str(ann, WP_ANNOTATION_CONTROLLER_FIRST_OBSERVED, p->first_observed))) {
		cJSON_Delete(md);
		return NULL;
	}
	return md;
}

/* Writes the first-Ready stamp `ready_ns` (wall clock, ns), or defers it
 * (p->stamp_deferred) while other claim passes wait, so a burst's
 * hand-outs do not queue behind it at the API server; at most
 * STAMP_DEFER_MAX_MS after the first Ready. */
static int write_stamp(pass *p, int64_t ready_ns)
{
	wp_claim_controller *c = p->c;
	if (wp_claim_controller_pending(c) > 1 &&
	    now_ns() - ready_ns < (int64_t)STAMP_DEFER_MAX_MS * 1000000) {
		p->stamp_deferred = true;
		return 0;
	}
	char buf[48];
	cJSON *md = stamps(p, wp_format_rfc3339nano(ready_ns, buf, sizeof(buf)));
	if (!md)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	int rc = patch_claim_metadata(p, md);
	if (rc == 0)
		obs_set_ready(c, p->key, k8s_obj_uid(p->claim), 0, true);
	return rc;
}

/*
 * docs/api.md#metrics first-Ready recording and the claim-first-ready-at
 * stamp. The metrics are recorded once per claim: the stamp guards that
 * across restarts, memory (obs_entry.ready_ns, .stamped) within this
 * process, so a pass whose cache has our Ready status but not yet our
 * stamp neither records again nor backfills over it.
 */
static int first_ready(pass *p, bool was_ready, const cJSON *st, bool authoritative)
{
	wp_claim_controller *c = p->c;
	if (!ju_empty(k8s_obj_annotation(p->claim, WP_ANNOTATION_CLAIM_FIRST_READY)))
		return 0;
	/* a copy: the writes below replace p->claim */
	char uid[128];
	snprintf(uid, sizeof(uid), "%s", ju_nz(k8s_obj_uid(p->claim)));
	int64_t ready_ns;
	bool stamped;
	obs_get_ready(c, p->key, uid, &ready_ns, &stamped);
	if (stamped)
		return 0;
	if (ready_ns > 0)
		return write_stamp(p, ready_ns);
	if (was_ready) {
		/* Ready before this controller saw it (a restart, or a stamp that
		 * failed): arm the guard with "unknown", under the resourceVersion
		 * read, so a lagging cache cannot overwrite a real stamp (409,
		 * ignored; the next pass reads the stamp). */
		cJSON *md = stamps(p, "unknown");
		if (!md || !ju_set_str(md, "resourceVersion", ju_nz(k8s_obj_resource_version(p->claim)))) {
			cJSON_Delete(md);
			return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
		}
		int rc = patch_claim_metadata(p, md);
		if (rc == 0)
			obs_set_ready(c, p->key, uid, 0, true);
		return rc == ASB_ECONFLICT || rc == ASB_ENOTFOUND ? 0 : rc;
	}
	bool now_ready = ju_str_eq(ju_str(wp_condition(st, SBX_CONDITION_READY), "status"), "True");
	if (!now_ready || !authoritative)
		return 0;
	int64_t now = k8s_now_ms();
	const char *launch = !p->sbx ? "unknown"
	                     : ju_str_eq(k8s_obj_label(p->sbx, SBX_LABEL_LAUNCH_TYPE), WP_LAUNCH_TYPE_WARM)
	                       ? WP_LAUNCH_TYPE_WARM : WP_LAUNCH_TYPE_COLD;
	const char *tpl = p->sbx ? template_label(p->sbx) : "__unknown__";
	const char *hl[] = { launch, tpl };
	observe_since(c->m_claim, hl, 2, k8s_obj_annotation(p->claim, WP_ANNOTATION_WEBHOOK_FIRST_OBSERVED),
	              now, true);
	observe_since(c->m_ctrl, hl, 2, p->first_observed, now, false);
	if (c->m_creation && p->sbx) {
		const cJSON *r = wp_condition(cJSON_GetObjectItem(p->sbx, "status"), SBX_CONDITION_READY);
		int64_t created, readyt;
		if (ju_str_eq(ju_str(r, "status"), "True") &&
		    k8s_time_parse(ju_nz(k8s_obj_str(p->sbx, "metadata.creationTimestamp")), &created) == 0 &&
		    k8s_time_parse(ju_nz(ju_str(r, "lastTransitionTime")), &readyt) == 0 &&
		    readyt >= created) {
			const char *cl[] = { ju_nz(k8s_obj_namespace(p->sbx)), launch, tpl };
			asb_metric_observe(c->m_creation, cl, 3, (double)(readyt - created));
		}
	}
	observe_since(c->m_client, hl, 2,
	              k8s_obj_annotation(p->claim, WP_ANNOTATION_CLIENT_FIRST_REQUESTED), now, true);
	int64_t t = now_ns();
	obs_set_ready(c, p->key, uid, t, false);
	return write_stamp(p, t);
}

/* docs/api.md#claim-reconcile step 2, once per claim UID (not on every pass: nothing creates
 * these any more, so one look per claim and controller start is enough):
 * the legacy per-claim NetworkPolicy, deleted only if this claim controls
 * it. Errors are only logged. */
static void delete_legacy_np(pass *p)
{
	bool todo = true;
	obs_get(p->c, p->key, k8s_obj_uid(p->claim), &todo);
	if (!todo)
		return;
	char *np = ju_printf("%s-network-policy", p->name);
	cJSON *obj = NULL;
	/* from the cache when there is one: nothing creates these any more, so
	 * a cache that lags behind a new one does not matter */
	int grc = np ? io_cached(p, &wp_resource_networkpolicies, p->ns, np, &obj) : ASB_ENOMEM;
	if (grc == ASB_EINVAL)
		grc = io_get(p, &wp_resource_networkpolicies, np, &obj);
	if (grc == 0) {
		const cJSON *ref = k8s_obj_controller_ref(obj);
		if (is_claim_ref(ref) && ju_str_eq(ju_str(ref, "uid"), k8s_obj_uid(p->claim))) {
			int rc = io_delete(p, &wp_resource_networkpolicies, np, NULL);
			if (rc && rc != ASB_ENOTFOUND)
				asb_log(p->c->logger, ASB_LOG_WARN, "legacy network policy delete failed",
				        "claim", p->key, "error", api_msg(), NULL);
		}
	}
	cJSON_Delete(obj);
	free(np);
}

/* docs/api.md#claim-reconcile step 4: the controller-first-observed-at
 * value of this pass (written by first_ready()). */
static int stamp_observed(pass *p)
{
	const char *have = k8s_obj_annotation(p->claim, WP_ANNOTATION_CONTROLLER_FIRST_OBSERVED);
	if (!ju_empty(have)) {
		snprintf(p->first_observed, sizeof(p->first_observed), "%s", have);
		return 0;
	}
	int64_t t = obs_get(p->c, p->key, k8s_obj_uid(p->claim), NULL);
	char *buf = p->first_observed;
	wp_format_rfc3339nano(t > 0 ? t : now_ns(), buf, sizeof(p->first_observed));
	if (p->c->disable_obs) {
		/* in memory only; p->first_observed survives the claim copies
		 * that later writes return, for the controller latency metric */
		cJSON *ann = ju_obj(ju_obj(p->claim, "metadata"), "annotations");
		if (ann)
			ju_set_str(ann, WP_ANNOTATION_CONTROLLER_FIRST_OBSERVED, buf);
		return 0;
	}
	/* Persisted with the first-Ready stamp (first_ready()), in the same
	 * write: until then it only feeds the latency metric, which reads the
	 * in-memory first observation. */
	return 0;
}

/* Persists Ready=ClaimExpired (+ event) and requeues 1 ms (docs/api.md#claim-reconcile steps 5, 9). */
static int mark_expired(pass *p, cJSON *st, k8s_reconcile_result *res)
{
	bool auth;
	int rc = write_status(p, st, &auth);
	if (rc)
		return asb_error_set(rc, 0, NULL, "claim %s: status write: %s", p->key, api_msg());
	event(p, WP_REASON_CLAIM_EXPIRED, "Claim Expired", "Claim expired");
	res->requeue_after_ms = 1;
	return 0;
}

/* Expired under Delete / DeleteForeground: the claim goes, UID-guarded. */
static int delete_claim(pass *p, bool fg)
{
	event(p, WP_REASON_CLAIM_EXPIRED, "Deleting",
	      fg ? "Deleting Claim (ShutdownPolicy=DeleteForeground)"
	         : "Deleting Claim (ShutdownPolicy=Delete)");
	k8s_delete_options dopt = K8S_DELETE_OPTIONS_INIT;
	dopt.propagation_policy = fg ? "Foreground" : NULL;
	dopt.precondition_uid = k8s_obj_uid(p->claim);
	int rc = io_delete(p, &wp_resource_claims, p->name, &dopt);
	return rc && rc != ASB_ENOTFOUND ? rc : 0;
}

/*
 * The end of a pass that has its Sandbox (or its error): the status, its
 * write, the first-Ready stamp, and the pass's result and requeue
 * (docs/api.md#claim-reconcile steps 9-11).
 */
static int finish_pass(pass *p, const wp_claim_expiry_plan *exp, bool was_ready,
                       k8s_reconcile_result *res)
{
	wp_claim_controller *c = p->c;
	cJSON *st = NULL;
	bool now_expired = false;
	int rc;
	if (wp_claim_plan_status(p->claim, p->sbx, &p->err, exp->expired, p->now_ms, &st,
	                         &now_expired) != 0)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	if (now_expired) {
		rc = mark_expired(p, st, res);
		cJSON_Delete(st);
		return rc;
	}
	bool authoritative;
	rc = write_status(p, st, &authoritative);
	if (rc) {
		cJSON_Delete(st);
		return asb_error_set(rc, 0, NULL, "claim %s: status write: %s%s%s", p->key, api_msg(),
		                     p->err.kind ? "; " : "", p->err.kind ? ju_nz(p->err.msg) : "");
	}
	bool nf = p->err.kind == WP_CLAIM_E_POOL_NOT_FOUND ||
	          p->err.kind == WP_CLAIM_E_TEMPLATE_NOT_FOUND;
	rc = first_ready(p, was_ready, st, authoritative);
	cJSON_Delete(st);
	if (rc && !nf)
		return asb_error_set(rc, 0, NULL, "claim %s: stamping %s: %s", p->key,
		                     WP_ANNOTATION_CLAIM_FIRST_READY, api_msg());
	if (rc)
		asb_log(c->logger, ASB_LOG_WARN, "first-ready stamp failed", "claim", p->key,
		        "error", api_msg(), NULL);
	wp_claim_pass_end end;
	wp_claim_plan_end(&p->err, exp, p->now_ms, &end);
	if (end.fail)
		return asb_error_set(end.fail, 0, NULL, "claim %s: %s", p->key, ju_nz(p->err.msg));
	res->requeue_after_ms = end.requeue_after_ms;
	if (p->stamp_deferred &&
	    (res->requeue_after_ms <= 0 || res->requeue_after_ms > STAMP_RECHECK_MS))
		res->requeue_after_ms = STAMP_RECHECK_MS;
	return 0;
}

/*
 * One pass: the expiry decision, then the Sandbox (get or create, or the
 * Retain cleanup), the status, the first-Ready stamp and the requeue. The
 * decisions are claimplan.h's; this function does the reads and writes.
 */
static int do_reconcile(pass *p, k8s_reconcile_result *res)
{
	wp_claim_controller *c = p->c;
	if (k8s_obj_is_deleting(p->claim))
		return 0;
	int rc = stamp_observed(p);
	if (rc)
		return rc;
	p->now_ms = k8s_now_ms();
	wp_claim_expiry_plan exp;
	wp_claim_plan_expiry(p->claim, p->now_ms, &exp);
	if (exp.action == WP_EXPIRY_MARK) {
		cJSON *st = wp_claim_expired_status(p->claim, p->now_ms);
		if (!st)
			return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
		rc = mark_expired(p, st, res);
		cJSON_Delete(st);
		return rc;
	}
	if (exp.action == WP_EXPIRY_DELETE_CLAIM)
		return delete_claim(p, exp.foreground);
	bool was_ready = ju_str_eq(ju_str(wp_condition(cJSON_GetObjectItem(p->claim, "status"),
	                                               SBX_CONDITION_READY), "status"), "True");
	if (exp.action == WP_EXPIRY_RETAIN) {
		reconcile_expired(p);
	} else {
		if (wp_claim_validate_metadata(p->claim, &c->domains, &p->err))
			get_or_create(p);
	}
	if (p->pending_ms > 0) {
		res->requeue_after_ms = p->pending_ms;
		return 0;
	}
	return finish_pass(p, &exp, was_ready, res);
}

void wp__claim_controller_set_executor(wp_claim_controller *c, const wp_claim_executor *ex)
{
	c->ex = *ex;
}

wp_warm_queue *wp__claim_controller_queue(wp_claim_controller *c)
{
	return c->queue;
}

void wp__claim_controller_observe(wp_claim_controller *c, const cJSON *claim)
{
	obs_record(c, claim);
}

k8s_controller *wp__claim_controller_ctl(wp_claim_controller *c)
{
	return c->ctl;
}

size_t wp_claim_controller_pending(wp_claim_controller *c)
{
	if (!c)
		return 0;
	int running = atomic_load(&c->running);
	return k8s_workqueue_len(k8s_controller_queue(c->ctl)) + (size_t)(running > 0 ? running : 0);
}

static int reconcile_pass(wp_claim_controller *c, const char *key, k8s_reconcile_result *res);

int wp_claim_controller_reconcile(wp_claim_controller *c, const char *key,
                                  k8s_reconcile_result *res)
{
	if (!c || !key || !res)
		return asb_error_set(ASB_EINVAL, 0, NULL, "claim controller: NULL argument");
	atomic_fetch_add(&c->running, 1);
	int rc = reconcile_pass(c, key, res);
	atomic_fetch_sub(&c->running, 1);
	return rc;
}

static int reconcile_pass(wp_claim_controller *c, const char *key, k8s_reconcile_result *res)
{
	memset(res, 0, sizeof(*res));
	pass p = { .c = c };
	int rc = k8s_key_split(key, &p.ns, &p.name);
	if (rc)
		return rc;
	p.key = strdup(key);
	if (!p.key) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
		goto out;
	}
	if (c->ex.cached(c->ex.userdata, &wp_resource_claims, p.ns, p.name, &p.claim) != 0) {
		obs_forget(c, key);
		goto out;
	}
	rc = do_reconcile(&p, res);
	/* docs/api.md#claim-reconcile step 2 after the pass, not before it: its result is only
	 * logged, and a new claim's first pass (the warm hand-out) should not
	 * wait for the extra request */
	if (rc == 0) {
		delete_legacy_np(&p);
	} else {
		/* keep this pass's error as the thread's last error */
		const asb_error *e = asb_error_last();
		int http = e->http_status;
		char *reason = strdup(e->reason), *msg = strdup(e->message);
		delete_legacy_np(&p);
		asb_error_set(rc, http, reason, "%s", msg ? msg : "");
		free(reason);
		free(msg);
	}
out:
	wp_claim_err_clear(&p.err);
	free(p.bound_missing);
	cJSON_Delete(p.claim);
	cJSON_Delete(p.sbx);
	free(p.ns);
	free(p.name);
	free(p.key);
	return rc;
}
