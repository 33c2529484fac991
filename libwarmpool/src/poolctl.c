/*
 * poolctl.c - the SandboxWarmPool controller's I/O glue (docs/api.md#warm-pool-controller):
 * informer handlers and indexes, the per-pool memory (expectations,
 * replenish/refill state, event state), and a reconcile that reads the
 * caches, runs the pure phases of poolplan.h and applies what they decide:
 * member updates and deletes, slow-start batched creates, excess deletes,
 * the status patch and the progressing events.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "warmpool/poolctl.h"
#include "warmpool/blueprint.h"
#include "sandbox/podcache.h"
#include "asb/map.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "jsonutil.h"
#include "ctlbase.h"
#include "expectations.h"
#include "poolplan.h"

/* Index names: distinct from other controllers' indexes on shared informers. */
#define IDX_POOL_TEMPLATE "wp-pool:spec.sandboxTemplateRef.name"
#define IDX_SANDBOX_POOL "wp-pool:warm-pool-sandbox"
/* Most threads one slow-start batch runs at once. */
#define MAX_PARALLEL 32
/* Tries of a member delete whose resourceVersion precondition conflicts. */
#define DELETE_ATTEMPTS 3

/*
 * What a pass read of each member, kept for the next pass by the
 * member's resourceVersion (unique across a resource's objects, so an
 * unchanged version is an unchanged member): most members of a pool do
 * not change between two passes, and unpacking each one every pass was
 * the largest part of this controller's CPU under a claim burst. Valid
 * for one pool uid and update strategy (they decide whether a member is
 * read whole). Only the pass of its pool touches it (the work queue runs
 * one pass per key at a time): taken at the start, put back at the end.
 */
typedef struct {
	cJSON *view;        /* member_view(); NULL: skipped or read whole */
	char *whole;        /* the name of a member read whole, else NULL */
} member_memo;

typedef struct {
	char *pool_uid;
	bool compare_spec;   /* Recreate or RollingUpdate: members compared whole */
	asb_map by_rv;      /* resourceVersion -> member_memo* */
} member_memos;

typedef struct {
	char *key;
	wp_pool_state st;
	member_memos *memos;
} state_entry;

struct wp_pool_controller {
	wp_pool_controller_options o;
	k8s_controller *ctl;
	wp_expectations *exp;
	pthread_mutex_t mu;           /* guards states and seed */
	state_entry *states;
	size_t nstates, capstates;
	unsigned int seed;
};

/* ---- per-pool state ---- */

static void memo_free(void *v)
{
	member_memo *m = v;
	if (m) {
		cJSON_Delete(m->view);
		free(m->whole);
		free(m);
	}
}

static void memos_free(member_memos *ms)
{
	if (ms) {
		asb_map_clear(&ms->by_rv, memo_free);
		free(ms->pool_uid);
		free(ms);
	}
}

static state_entry *state_find(wp_pool_controller *c, const char *key)
{
	for (size_t i = 0; i < c->nstates; i++)
		if (strcmp(c->states[i].key, key) == 0)
			return &c->states[i];
	return NULL;
}

static void state_get(wp_pool_controller *c, const char *key, wp_pool_state *out)
{
	pthread_mutex_lock(&c->mu);
	state_entry *e = state_find(c, key);
	if (e)
		*out = e->st;
	else
		memset(out, 0, sizeof(*out));
	pthread_mutex_unlock(&c->mu);
}

/* Out of memory only loses pacing memory: the next pass starts afresh. */
static void state_put(wp_pool_controller *c, const char *key, const wp_pool_state *st)
{
	pthread_mutex_lock(&c->mu);
	state_entry *e = state_find(c, key);
	if (!e && c->nstates == c->capstates) {
		size_t cap = c->capstates ? c->capstates * 2 : 8;
		state_entry *n = realloc(c->states, cap * sizeof(*n));
		if (n) {
			c->states = n;
			c->capstates = cap;
		}
	}
	if (!e && c->nstates < c->capstates) {
		char *k = strdup(key);
		if (k) {
			e = &c->states[c->nstates++];
			e->key = k;
			e->memos = NULL;
		}
	}
	if (e)
		e->st = *st;
	pthread_mutex_unlock(&c->mu);
}

/* Pool deleted: forget all per-pool state (docs/api.md#expectations). */
static void forget_pool(wp_pool_controller *c, const char *key)
{
	wp_expectations_forget(c->exp, key);
	pthread_mutex_lock(&c->mu);
	state_entry *e = state_find(c, key);
	member_memos *ms = NULL;
	if (e) {
		free(e->key);
		ms = e->memos;
		*e = c->states[--c->nstates];
	}
	pthread_mutex_unlock(&c->mu);
	memos_free(ms);
}

/* The pool's member memos (owned by the caller until memos_put()), or NULL. */
static member_memos *memos_take(wp_pool_controller *c, const char *key)
{
	pthread_mutex_lock(&c->mu);
	state_entry *e = state_find(c, key);
	member_memos *ms = e ? e->memos : NULL;
	if (e)
		e->memos = NULL;
	pthread_mutex_unlock(&c->mu);
	return ms;
}

/* Keeps `ms` for the pool's next pass; freed when the pool has no state
 * entry (state_put() makes one at every pass that reaches sizing). */
static void memos_put(wp_pool_controller *c, const char *key, member_memos *ms)
{
	if (!ms)
		return;
	pthread_mutex_lock(&c->mu);
	state_entry *e = state_find(c, key);
	member_memos *old = NULL;
	if (e) {
		old = e->memos;
		e->memos = ms;
		ms = NULL;
	}
	pthread_mutex_unlock(&c->mu);
	memos_free(old);
	memos_free(ms);
}

static double next_jitter(wp_pool_controller *c)
{
	pthread_mutex_lock(&c->mu);
	double j = (double)rand_r(&c->seed) / ((double)RAND_MAX + 1.0);
	pthread_mutex_unlock(&c->mu);
	return j;
}

/* ---- handlers and indexes ---- */

static int index_pool_template(const cJSON *obj, const char **keys, int cap, void *ud)
{
	(void)ud;
	const char *t = k8s_obj_str(obj, "spec.sandboxTemplateRef.name");
	if (ju_empty(t) || cap < 1)
		return 0;
	keys[0] = t;
	return 1;
}

/* "ns/pool" of the SandboxWarmPool controlling `sbx` (any version of the
 * group, docs/api.md#ownership), or NULL. */
static char *controlling_pool_key(const cJSON *sbx)
{
	const cJSON *ref = k8s_obj_controller_ref(sbx);
	char group[128];
	if (!ref || !ju_str_eq(ju_str(ref, "kind"), SBX_KIND_WARM_POOL) ||
	    !ju_str_eq(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	               SBX_EXTENSIONS_GROUP) || ju_empty(ju_str(ref, "name")))
		return NULL;
	return ju_printf("%s/%s", ju_nz(k8s_obj_namespace(sbx)), ju_str(ref, "name"));
}


/* An orphan carrying a pool label wakes the pools of its namespace whose
 * name hashes to it, so it is adopted (or deleted as stale) without
 * waiting for another event of the pool. Orphans are rare: a list of the
 * namespace's pools is affordable. */
static void enqueue_orphan_pool(wp_pool_controller *c, const cJSON *sbx)
{
	const char *h = k8s_obj_label(sbx, SBX_LABEL_WARM_POOL_SANDBOX);
	if (ju_empty(h) || k8s_obj_controller_ref(sbx))
		return;
	cJSON *pools = NULL;
	if (k8s_informer_list(c->o.pools, k8s_obj_namespace(sbx), &pools))
		return;
	const cJSON *pool;
	cJSON_ArrayForEach(pool, pools) {
		char ph[SBX_NAME_HASH_SIZE];
		wp_pool_hash(pool, ph);
		if (strcmp(ph, h) == 0)
			wp_ctl_enqueue_key(c->ctl, pool);
	}
	cJSON_Delete(pools);
}

/* The expectation is lowered before the pool is enqueued (docs/api.md#expectations). */
static void on_sbx_add(const cJSON *o, void *ud)
{
	wp_pool_controller *c = ud;
	char *key = controlling_pool_key(o);
	if (!key) {
		enqueue_orphan_pool(c, o);
		return;
	}
	wp_expectations_lower_creations(c->exp, key, 1);
	k8s_controller_enqueue(c->ctl, key);
	free(key);
}

static void on_sbx_update(const cJSON *o, const cJSON *n, void *ud)
{
	wp_pool_controller *c = ud;
	char *ko = controlling_pool_key(o), *kn = controlling_pool_key(n);
	if (kn)
		k8s_controller_enqueue(c->ctl, kn);
	if (ko && (!kn || strcmp(ko, kn) != 0))   /* adopted away by a claim */
		k8s_controller_enqueue(c->ctl, ko);
	if (!kn)
		enqueue_orphan_pool(c, n);
	free(ko);
	free(kn);
}

static void on_sbx_delete(const cJSON *o, void *ud)
{
	wp_pool_controller *c = ud;
	char *key = controlling_pool_key(o);
	if (!key)
		return;
	wp_expectations_deletion_observed(c->exp, key, k8s_obj_uid(o));
	k8s_controller_enqueue(c->ctl, key);
	free(key);
}

typedef struct {
	wp_pool_controller *c;
	const char *ns;
} tpl_walk;

static int enqueue_pool_of_template(const void *obj, void *ud)
{
	tpl_walk *w = ud;
	const cJSON *pool = obj;   /* the pools informer has no codec */
	if (ju_str_eq(k8s_obj_namespace(pool), w->ns))
		wp_ctl_enqueue_key(w->c->ctl, pool);
	return 0;
}

static void on_tpl_event(wp_pool_controller *c, const cJSON *tpl)
{
	tpl_walk w = { c, k8s_obj_namespace(tpl) };
	const char *name = k8s_obj_name(tpl);
	if (name)
		k8s_informer_read_index(c->o.pools, IDX_POOL_TEMPLATE, name, enqueue_pool_of_template, &w);
}
static void on_tpl_add(const cJSON *o, void *ud) { on_tpl_event(ud, o); }
static void on_tpl_update(const cJSON *o, const cJSON *n, void *ud) { (void)o; on_tpl_event(ud, n); }
static void on_tpl_delete(const cJSON *o, void *ud) { on_tpl_event(ud, o); }

/* ---- lifecycle ---- */

static int reconcile_fn(const char *key, k8s_reconcile_result *res, void *ud)
{
	return wp_pool_controller_reconcile(ud, key, res);
}

int wp_pool_controller_new(wp_pool_controller **out, const wp_pool_controller_options *opts)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "pool controller: NULL out");
	*out = NULL;
	if (!opts || opts->version != WP_POOL_CONTROLLER_OPTIONS_VERSION || !opts->client ||
	    !opts->pools || !opts->sandboxes || !opts->templates || !opts->pods)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "pool controller: bad options (version, client, pools, sandboxes, templates, pods)");
	if (opts->max_batch_size < 1 || opts->replenish_delay_ms < 0 || !(opts->max_refill_rate >= 0) ||
	    opts->readiness_grace_ms < 0 || opts->unschedulable_recheck_ms < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "pool controller: batch size < 1 or a negative delay, rate or period");
	wp_pool_controller *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "pool controller: out of memory");
	c->o = *opts;
	c->seed = (unsigned int)k8s_monotonic_ms() ^ (unsigned int)(uintptr_t)c;
	pthread_mutex_init(&c->mu, NULL);
	int rc = wp_expectations_new(&c->exp, WP_EXPECTATIONS_TIMEOUT_MS);
	if (rc)
		goto fail;
	if ((rc = wp_ctl_new(&c->ctl, "sandboxwarmpool", opts->workers > 0 ? opts->workers : 1,
	                     reconcile_fn, c, opts->logger, opts->metrics)))
		goto fail;
	const wp_ctl_handlers sets[] = {
		wp_ctl_own_key_handlers(opts->pools, c->ctl),
		{ opts->sandboxes, on_sbx_add, on_sbx_update, on_sbx_delete, NULL },
		{ opts->templates, on_tpl_add, on_tpl_update, on_tpl_delete, NULL },
	};
	if ((rc = k8s_informer_add_index(opts->pools, IDX_POOL_TEMPLATE, index_pool_template, NULL)) ||
	    (rc = k8s_informer_add_index(opts->sandboxes, IDX_SANDBOX_POOL, k8s_index_by_label,
	                                 (void *)SBX_LABEL_WARM_POOL_SANDBOX)) ||
	    (rc = wp_ctl_add_handlers(sets, sizeof(sets) / sizeof(sets[0]), c))) {
		/* Handlers may be in: the caller must not start the informers
		 * after a failed _new(). */
		rc = asb_error_set(rc, 0, NULL, "pool controller: informer already started or index taken");
		goto fail;
	}
	*out = c;
	return 0;
fail:
	wp_pool_controller_free(c);   /* takes a partly built controller too */
	return rc;
}

int wp_pool_controller_start(wp_pool_controller *c)
{
	return wp_ctl_start(c ? c->ctl : NULL, "pool controller");
}

void wp_pool_controller_stop(wp_pool_controller *c)
{
	if (c)
		k8s_controller_stop(c->ctl);
}

void wp_pool_controller_free(wp_pool_controller *c)
{
	if (!c)
		return;
	k8s_controller_free(c->ctl);
	wp_expectations_free(c->exp);
	for (size_t i = 0; i < c->nstates; i++) {
		free(c->states[i].key);
		memos_free(c->states[i].memos);
	}
	free(c->states);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* ---- a pass ---- */

typedef struct {
	wp_pool_controller *c;
	const char *key, *ns;
	int rc;                /* first error of the pass */
	char *err;             /* its message */
	pthread_mutex_t mu;    /* guards rc/err across batch threads */
} pass;

/* Collects an error of the pass (the first one is returned; each is logged). */
static void pass_fail(pass *p, int rc, const char *what, const char *name, const char *msg)
{
	asb_log(p->c->o.logger, ASB_LOG_WARN, "warm pool pass failed", "pool", p->key,
	        "op", what, "object", name, "error", msg, NULL);
	pthread_mutex_lock(&p->mu);
	if (!p->rc) {
		p->rc = rc;
		p->err = ju_printf("failed to %s \"%s\": %s", what, ju_nz(name), ju_nz(msg));
	}
	pthread_mutex_unlock(&p->mu);
}

static bool deletion_pending_cb(void *ud, const char *uid)
{
	pass *p = ud;
	return wp_expectations_deletion_pending(p->c->exp, p->key, uid, k8s_monotonic_ms());
}

static bool unschedulable(const char *status, const char *reason)
{
	return ju_str_eq(status, "False") && ju_str_eq(reason, "Unschedulable");
}

static int pod_unschedulable_read(const void *obj, void *ud)
{
	const k8s_packer *pk = ud;
	if (pk) {
		/* packed: its deletionTimestamp and conditions, unpacked alone */
		cJSON *del = k8s_packer_unpack_at(pk, obj, "metadata.deletionTimestamp");
		cJSON *conds = del ? NULL : k8s_packer_unpack_at(pk, obj, "status.conditions");
		int yes = 0;
		const cJSON *c;
		cJSON_ArrayForEach(c, conds)
			if (ju_str_eq(ju_str(c, "type"), SBX_CONDITION_POD_SCHEDULED)) {
				yes = unschedulable(ju_str(c, "status"), ju_str(c, "reason"));
				break;
			}
		cJSON_Delete(del);
		cJSON_Delete(conds);
		return yes;
	}
	const sbx_pod *pod = obj;
	if (pod->deletion_timestamp)
		return 0;
	const sbx_pod_condition *cond = sbx_pod_condition_get(pod, SBX_CONDITION_POD_SCHEDULED);
	return cond && unschedulable(cond->status, cond->reason);
}

static bool pod_unschedulable_cb(void *ud, const char *ns, const char *name)
{
	pass *p = ud;
	return k8s_informer_read(p->c->o.pods, ns, name, pod_unschedulable_read,
	                         (void *)p->c->o.packer) == 1;
}

/* Deletes member `m` with its expectation recorded first; NotFound is
 * success; on failure the expectation is rolled back. True on success. */
static bool delete_member(pass *p, const wp_pool_member *m, const char *why)
{
	wp_pool_controller *c = p->c;
	bool track = m->owned;
	if (track && wp_expectations_expect_deletion(c->exp, p->key, m->uid, k8s_monotonic_ms())) {
		pass_fail(p, ASB_ENOMEM, why, m->name, "out of memory");
		return false;
	}
	/* The resourceVersion precondition is what keeps a delete decided on
	 * a lagging cache off a Sandbox a claim adopted meanwhile (docs/api.md#staleness-and-update-strategies
	 * "claimed sandboxes are never touched by the pool"): the adoption
	 * patch changes the version, the delete then gets 409, and a re-read
	 * tells whether the member is still ours to delete. */
	const cJSON *ref0 = k8s_obj_controller_ref(m->obj);
	char *rv = strdup(ju_nz(k8s_obj_resource_version(m->obj)));
	int rc = rv ? 0 : ASB_ENOMEM;
	for (int attempt = 0; rc == 0 && attempt < DELETE_ATTEMPTS; attempt++) {
		k8s_delete_options dopts = K8S_DELETE_OPTIONS_INIT;
		dopts.precondition_uid = m->uid;
		dopts.precondition_resource_version = rv;
		rc = k8s_client_delete(c->o.client, &sbx_resource_sandboxes, p->ns, m->name, &dopts, NULL);
		if (rc != ASB_ECONFLICT)
			break;
		cJSON *fresh = NULL;
		int grc = k8s_client_get(c->o.client, &sbx_resource_sandboxes, p->ns, m->name, &fresh);
		if (grc == 0 && !ju_str_eq(k8s_obj_uid(fresh), m->uid))
			grc = ASB_ENOTFOUND;   /* recreated under the same name: ours is gone */
		if (grc) {
			cJSON_Delete(fresh);
			rc = grc == ASB_ENOTFOUND ? ASB_ENOTFOUND : ASB_ECONFLICT;
			break;
		}
		const cJSON *ref = k8s_obj_controller_ref(fresh);
		bool same_owner = ref0 ? ju_str_eq(ju_str(ref, "uid"), ju_str(ref0, "uid")) : !ref;
		if (!same_owner) {
			/* adopted away (claimed) meanwhile: not ours to delete */
			asb_log(c->o.logger, ASB_LOG_INFO, "warm pool sandbox changed owner, not deleted",
			        "pool", p->key, "sandbox", m->name, "reason", why, NULL);
			cJSON_Delete(fresh);
			rc = ASB_ENOTFOUND;
			break;
		}
		free(rv);
		rv = strdup(ju_nz(k8s_obj_resource_version(fresh)));
		cJSON_Delete(fresh);
		rc = rv ? ASB_ECONFLICT : ASB_ENOMEM;
	}
	free(rv);
	if (rc == 0) {
		asb_log(c->o.logger, ASB_LOG_INFO, "deleted warm pool sandbox", "pool", p->key,
		        "sandbox", m->name, "reason", why, NULL);
		return true;
	}
	if (track)   /* the delete event will never come: clear it ourselves */
		wp_expectations_deletion_observed(c->exp, p->key, m->uid);
	if (rc == ASB_ENOTFOUND)
		return true;
	pass_fail(p, rc, why, m->name, rc == ASB_ENOMEM ? "out of memory" : asb_error_last()->message);
	return false;
}

static bool update_member(pass *p, const wp_pool_member *m, const char *why)
{
	int rc = k8s_client_update(p->c->o.client, &sbx_resource_sandboxes, p->ns, m->body, NULL, NULL);
	if (rc == 0) {
		asb_log(p->c->o.logger, ASB_LOG_INFO, "updated warm pool sandbox", "pool", p->key,
		        "sandbox", m->name, "reason", why, NULL);
		return true;
	}
	pass_fail(p, rc, why, m->name, asb_error_last()->message);
	return false;
}

/* ---- slow-start batches (docs/api.md#pool-sizing): 1, 2, 4, ... jobs in parallel, stop at
 * the first batch with a failure. ---- */

typedef bool (*job_fn)(pass *p, size_t i, void *ud);

typedef struct {
	pass *p;
	job_fn fn;
	void *ud;
	size_t from, to;
	atomic_size_t next;
	atomic_size_t ok;
	atomic_bool failed;
} batch;

static void *batch_thread(void *arg)
{
	batch *b = arg;
	size_t i;
	while ((i = atomic_fetch_add(&b->next, 1)) < b->to) {
		if (b->fn(b->p, i, b->ud))
			atomic_fetch_add(&b->ok, 1);
		else
			atomic_store(&b->failed, true);
	}
	return NULL;
}

/* Runs jobs 0..n-1; returns how many succeeded, `*tried` how many ran. */
static size_t slow_start(pass *p, size_t n, job_fn fn, void *ud, size_t *tried)
{
	size_t done = 0, ok = 0, size = 1;
	while (done < n) {
		size_t to = done + size < n ? done + size : n;
		batch b = { .p = p, .fn = fn, .ud = ud, .from = done, .to = to };
		atomic_init(&b.next, done);
		atomic_init(&b.ok, 0);
		atomic_init(&b.failed, false);
		size_t nth = to - done < MAX_PARALLEL ? to - done : MAX_PARALLEL;
		pthread_t th[MAX_PARALLEL];
		size_t started = 0;
		/* This thread is one of the workers; the others are extra. */
		for (size_t t = 1; t < nth; t++)
			if (pthread_create(&th[started], NULL, batch_thread, &b) == 0)
				started++;
		batch_thread(&b);
		for (size_t t = 0; t < started; t++)
			pthread_join(th[t], NULL);
		ok += atomic_load(&b.ok);
		done = to;
		if (atomic_load(&b.failed))
			break;
		size *= 2;
	}
	*tried = done;
	return ok;
}

typedef struct {
	const cJSON *body;
} create_ctx;

/* The API server's generateName alphabet (no vowels, no look-alikes). */
static const char NAME_ALPHABET[] = "bcdfghjklmnpqrstvwxz2456789";

/*
 * A member named here rather than by generateName: the same shape of name
 * (the generateName prefix and 5 random characters), but known before the
 * create, so the body can carry the agents.x-k8s.io/pod-name annotation the
 * Sandbox controller would otherwise write in a patch of its own right
 * after creating the Pod. Returns a new body, or NULL (out of memory).
 */
static cJSON *named_member(const cJSON *body)
{
	unsigned char r[5];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return NULL;
	char suffix[sizeof(r) + 1];
	for (size_t i = 0; i < sizeof(r); i++)
		suffix[i] = NAME_ALPHABET[r[i] % (sizeof(NAME_ALPHABET) - 1)];
	suffix[sizeof(r)] = 0;
	char *name = ju_printf("%s%s", ju_nz(k8s_obj_str(body, "metadata.generateName")), suffix);
	cJSON *o = name ? cJSON_Duplicate(body, true) : NULL;
	cJSON *md = o ? cJSON_GetObjectItemCaseSensitive(o, "metadata") : NULL;
	cJSON *ann = md ? ju_obj(md, "annotations") : NULL;
	if (!ann || !ju_set_str(md, "name", name) || !ju_set_str(ann, SBX_ANNOTATION_POD_NAME, name)) {
		cJSON_Delete(o);
		o = NULL;
	}
	free(name);
	return o;
}

static bool create_job(pass *p, size_t i, void *ud)
{
	(void)i;
	create_ctx *cc = ud;
	cJSON *made = NULL;
	int rc = ASB_EALREADYEXISTS;
	/* a name taken already (1 in 14 million per member) draws again */
	for (int attempt = 0; attempt < 3 && rc == ASB_EALREADYEXISTS; attempt++) {
		cJSON *body = named_member(cc->body);
		if (!body) {
			rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
			break;
		}
		rc = k8s_client_create(p->c->o.client, &sbx_resource_sandboxes, p->ns, body, NULL, &made);
		cJSON_Delete(body);
	}
	if (rc) {
		pass_fail(p, rc, "create sandbox", k8s_obj_str(cc->body, "metadata.generateName"),
		          asb_error_last()->message);
		return false;
	}
	asb_log(p->c->o.logger, ASB_LOG_DEBUG, "created warm pool sandbox", "pool", p->key,
	        "sandbox", k8s_obj_name(made), NULL);
	cJSON_Delete(made);
	return true;
}

typedef struct {
	const wp_pool_member *m;
	const size_t *idx;
} excess_ctx;

static bool excess_job(pass *p, size_t i, void *ud)
{
	excess_ctx *ec = ud;
	return delete_member(p, &ec->m[ec->idx[i]], "delete excess sandbox");
}

static void record_event(wp_pool_controller *c, const cJSON *pool, const wp_pool_plan *plan)
{
	bool warn = plan->event == WP_POOL_EVENT_NOT_PROGRESSING;
	const char *reason = warn ? "WarmPoolNotProgressing" : "WarmPoolProgressing";
	asb_log(c->o.logger, warn ? ASB_LOG_WARN : ASB_LOG_INFO, "warm pool event",
	        "pool", k8s_obj_name(pool), "namespace", k8s_obj_namespace(pool),
	        "reason", reason, "note", plan->event_note, NULL);
	k8s_event_ref ref;
	if (c->o.events && k8s_event_ref_from(pool, WP_API_VERSION, SBX_KIND_WARM_POOL, &ref) == 0)
		/* best effort: an event never fails a reconcile */
		k8s_event_record(c->o.events, &ref, NULL, warn ? K8S_EVENT_WARNING : K8S_EVENT_NORMAL,
		                 reason, SBX_EVENT_ACTION_RECONCILING, plan->event_note);
}

/* Whether this pass's refill and status write wait for pending claim
 * handouts (options handouts_pending): yes while there are some, for at
 * most WP_POOL_HANDOUT_WAIT_MS since the first wait (then they go). */
static bool refill_waits(wp_pool_controller *c, wp_pool_state *st)
{
	if (!c->o.handouts_pending || c->o.handouts_pending(c->o.handouts_ud) == 0) {
		st->handout_wait_ms = 0;
		return false;
	}
	int64_t now = k8s_monotonic_ms();
	if (!st->handout_wait_ms)
		st->handout_wait_ms = now;
	if (now - st->handout_wait_ms < WP_POOL_HANDOUT_WAIT_MS)
		return true;
	st->handout_wait_ms = 0;
	return false;
}

/*
 * The members of `pool` (label hash `h`) as a new cJSON array (*out). A
 * pass looks at every member, and a pool's members change on every
 * claim, refill and status write, so copying each one whole on every pass
 * made most of this controller's CPU: a member is copied as a view with
 * what the plan reads of it (metadata and the Ready condition), and whole
 * only when the plan may compare its spec with the template (a Recreate
 * pool, a member the pool does not control) or write it back (launch-type
 * missing). Returns 0, ASB_EINVAL (no index) or ASB_ENOMEM.
 */
typedef struct {
	const char *ns, *pool_uid;
	bool compare_spec;   /* Recreate or RollingUpdate: the plan compares specs */
	const k8s_packer *packer;   /* the cache's values are packed; NULL: cJSON */
	cJSON *out;        /* the array being filled */
	cJSON *whole;      /* names of the members to copy whole */
	member_memos *prev;   /* the previous pass's reads, or NULL */
	member_memos *next;   /* this pass's, or NULL (out of memory: no memos) */
	bool oom;
} members_read;

static bool member_needs_whole(const members_read *mr, const cJSON *sbx)
{
	return mr->compare_spec || k8s_obj_owner_class(sbx, mr->pool_uid) != K8S_OWNER_THIS ||
	       !ju_str_eq(k8s_obj_label(sbx, SBX_LABEL_LAUNCH_TYPE), WP_LAUNCH_TYPE_WARM);
}

static const char *const view_meta[] = { "name", "namespace", "uid", "resourceVersion",
                                         "creationTimestamp", "deletionTimestamp", "labels",
                                         "annotations", "ownerReferences" };

static bool view_meta_key(const char *k)
{
	for (size_t i = 0; k && i < sizeof(view_meta) / sizeof(view_meta[0]); i++)
		if (strcmp(k, view_meta[i]) == 0)
			return true;
	return false;
}

/* metadata and status.conditions[type=Ready] of `sbx`, or NULL */
static cJSON *member_view(const cJSON *sbx)
{
	cJSON *v = cJSON_CreateObject();
	cJSON *md = v ? ju_obj(v, "metadata") : NULL;
	if (!md)
		goto fail;
	const cJSON *smd = cJSON_GetObjectItemCaseSensitive(sbx, "metadata");
	for (size_t i = 0; i < sizeof(view_meta) / sizeof(view_meta[0]); i++) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(smd, view_meta[i]);
		if (f && !ju_set(md, view_meta[i], cJSON_Duplicate(f, true)))
			goto fail;
	}
	const cJSON *c;
	cJSON_ArrayForEach(c, k8s_obj_at(sbx, "status.conditions")) {
		if (!ju_str_eq(ju_str(c, "type"), SBX_CONDITION_READY))
			continue;
		cJSON *conds = cJSON_CreateArray(), *st = ju_obj(v, "status");
		if (!conds || !st || !ju_set(st, "conditions", conds) ||
		    !cJSON_AddItemToArray(conds, cJSON_Duplicate(c, true)))
			goto fail;
		break;
	}
	return v;
fail:
	cJSON_Delete(v);
	return NULL;
}

/* member_view() of a tree of member_parts() made in place, no copy: the
 * metadata members the view keeps, the first Ready condition alone. */
static cJSON *view_in_place(cJSON *parts)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(parts, "metadata");
	for (cJSON *f = md ? md->child : NULL, *next; f; f = next) {
		next = f->next;
		if (!view_meta_key(f->string))
			cJSON_Delete(cJSON_DetachItemViaPointer(md, f));
	}
	cJSON *conds = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(parts, "status"), "conditions");
	bool ready = false;
	for (cJSON *c = conds ? conds->child : NULL, *next; c; c = next) {
		next = c->next;
		if (ready || !ju_str_eq(ju_str(c, "type"), SBX_CONDITION_READY))
			cJSON_Delete(cJSON_DetachItemViaPointer(conds, c));
		else
			ready = true;
	}
	if (!ready)
		cJSON_DeleteItemFromObjectCaseSensitive(parts, "status");
	return parts;
}

/* Of a packed member, what member_view() reads: its metadata and
 * status.conditions, unpacked alone (NULL when out of memory). */
static cJSON *member_parts(const k8s_packer *pk, const k8s_packed *p)
{
	cJSON *v = cJSON_CreateObject();
	cJSON *md = k8s_packer_unpack_at(pk, p, "metadata");
	cJSON *conds = k8s_packer_unpack_at(pk, p, "status.conditions");
	if (!v) {
		cJSON_Delete(md);
		cJSON_Delete(conds);
		return NULL;
	}
	/* ju_set() takes the item even when it fails */
	bool md_ok = !md || ju_set(v, "metadata", md);
	bool conds_ok = !conds || ju_set(ju_obj(v, "status"), "conditions", conds);
	if (!md_ok || !conds_ok) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* A new memo of the member `obj` (a cache value): its view, or the name
 * of a member read whole, or neither (another namespace's). NULL when out
 * of memory. */
static member_memo *memo_new(members_read *mr, const void *obj)
{
	member_memo *memo = calloc(1, sizeof(*memo));
	cJSON *parts = mr->packer ? member_parts(mr->packer, obj) : NULL;
	const cJSON *sbx = mr->packer ? parts : obj;
	bool ok = memo && sbx;
	if (ok && !ju_str_eq(k8s_obj_namespace(sbx), mr->ns)) {
		/* a same-named pool's, in another namespace */
	} else if (ok && member_needs_whole(mr, sbx)) {
		ok = (memo->whole = strdup(ju_nz(k8s_obj_name(sbx)))) != NULL;
	} else if (ok && parts) {
		memo->view = view_in_place(parts);   /* already a copy: made the view itself */
		parts = NULL;
	} else if (ok) {
		ok = (memo->view = member_view(sbx)) != NULL;
	}
	cJSON_Delete(parts);
	if (!ok) {
		memo_free(memo);
		return NULL;
	}
	return memo;
}

static int read_member(const void *obj, void *ud)
{
	members_read *mr = ud;
	const char *rv = mr->packer ? k8s_packed_resource_version(obj) : k8s_obj_resource_version(obj);
	member_memo *memo = NULL;
	if (mr->prev && !ju_empty(rv))
		asb_map_remove(&mr->prev->by_rv, rv, (void **)&memo);
	if (!memo && !(memo = memo_new(mr, obj))) {
		mr->oom = true;
		return 1;
	}
	cJSON *item = memo->whole ? cJSON_CreateString(memo->whole)
	              : memo->view ? cJSON_CreateObjectReference(memo->view->child) : NULL;
	if ((memo->whole || memo->view) &&
	    (!item || !cJSON_AddItemToArray(memo->whole ? mr->whole : mr->out, item))) {
		cJSON_Delete(item);
		mr->oom = true;
	}
	/* kept for the next pass; the views referenced above live as long */
	if (!mr->next || ju_empty(rv) || asb_map_set(&mr->next->by_rv, rv, memo, NULL) != 0) {
		if (memo->view && !mr->oom) {
			/* referenced by `out`: it must outlive the pass, so it goes
			 * into `out` itself in place of the reference */
			cJSON *last = cJSON_GetArrayItem(mr->out, cJSON_GetArraySize(mr->out) - 1);
			cJSON_ReplaceItemViaPointer(mr->out, last, memo->view);
			memo->view = NULL;
		}
		memo_free(memo);
	}
	return mr->oom;
}

/* `*memos`: the previous pass's memos on entry (consumed), this pass's on
 * return (NULL when none could be kept); `*out` references its views, so
 * they are freed after it. */
static int read_members(wp_pool_controller *c, const cJSON *pool, const char *h,
                        member_memos **memos, cJSON **out)
{
	members_read mr = { k8s_obj_namespace(pool), k8s_obj_uid(pool),
	                    wp_pool_recreate(pool) || wp_pool_rolling(pool),
	                    c->o.packer, cJSON_CreateArray(), cJSON_CreateArray(), *memos, NULL,
	                    false };
	*out = NULL;
	*memos = NULL;
	/* memos made for another pool uid or strategy would read members wrongly */
	if (mr.prev && (mr.prev->compare_spec != mr.compare_spec ||
	                !ju_str_eq(mr.prev->pool_uid, mr.pool_uid))) {
		memos_free(mr.prev);
		mr.prev = NULL;
	}
	mr.next = calloc(1, sizeof(*mr.next));
	if (mr.next) {
		asb_map_init(&mr.next->by_rv);
		mr.next->compare_spec = mr.compare_spec;
		if (!(mr.next->pool_uid = strdup(ju_nz(mr.pool_uid)))) {
			free(mr.next);
			mr.next = NULL;
		}
	}
	int rc = mr.out && mr.whole ? k8s_informer_read_index(c->o.sandboxes, IDX_SANDBOX_POOL, h,
	                                                      read_member, &mr)
	                            : ASB_ENOMEM;
	if (rc == 0 && mr.oom)
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "warm pool: out of memory");
	const cJSON *n;
	for (n = rc == 0 ? mr.whole->child : NULL; n; n = n->next) {
		cJSON *sbx = NULL;
		if (k8s_informer_get(c->o.sandboxes, mr.ns, n->valuestring, &sbx) != 0)
			continue;   /* gone meanwhile */
		if (!cJSON_AddItemToArray(mr.out, sbx)) {
			cJSON_Delete(sbx);
			rc = asb_error_set(ASB_ENOMEM, 0, NULL, "warm pool: out of memory");
			break;
		}
	}
	cJSON_Delete(mr.whole);
	memos_free(mr.prev);   /* members gone or changed since */
	if (rc) {
		cJSON_Delete(mr.out);
		memos_free(mr.next);
		return rc;
	}
	*out = mr.out;
	*memos = mr.next;
	return 0;
}

int wp_pool_controller_reconcile(wp_pool_controller *c, const char *key, k8s_reconcile_result *res)
{
	if (res)
		memset(res, 0, sizeof(*res));
	if (!c || !key)
		return asb_error_set(ASB_EINVAL, 0, NULL, "pool reconcile: NULL argument");
	char *ns = NULL, *name = NULL;
	cJSON *pool = NULL, *tpl = NULL, *members = NULL, *body = NULL;
	member_memos *memos = NULL;
	wp_pool_member *m = NULL;
	size_t n = 0;
	wp_pool_plan plan = { 0 };
	pass p = { .c = c, .key = key };
	pthread_mutex_init(&p.mu, NULL);
	int rc = k8s_key_split(key, &ns, &name);
	if (rc)
		goto out;
	p.ns = ns;

	rc = k8s_informer_get(c->o.pools, ns, name, &pool);
	if (rc == ASB_ENOTFOUND || (rc == 0 && k8s_obj_is_deleting(pool))) {
		forget_pool(c, key);   /* members go by GC (docs/api.md#pool-deletion) */
		rc = 0;
		goto out;
	}
	if (rc)
		goto out;

	/* The template: NotFound only means "no creates" (docs/api.md#pool-sizing). */
	const char *tpl_name = k8s_obj_str(pool, "spec.sandboxTemplateRef.name");
	char tpl_hash[SBX_NAME_HASH_SIZE];
	bool have_hash = false;
	if (!ju_empty(tpl_name)) {
		int trc = k8s_informer_get(c->o.templates, ns, tpl_name, &tpl);
		if (trc && trc != ASB_ENOTFOUND)
			pass_fail(&p, trc, "get SandboxTemplate", tpl_name, asb_error_last()->message);
		if (tpl)
			have_hash = wp_blueprint_hash(tpl, tpl_hash) == 0;
	}

	char h[SBX_NAME_HASH_SIZE];
	wp_pool_hash(pool, h);
	memos = memos_take(c, key);
	if ((rc = read_members(c, pool, h, &memos, &members)))
		goto out;

	wp_pool_input in = {
		.pool = pool, .tpl = tpl, .tpl_hash = have_hash ? tpl_hash : NULL,
		.now_ms = k8s_now_ms(),
		.readiness_grace_ms = c->o.readiness_grace_ms,
		.unschedulable_recheck_ms = c->o.unschedulable_recheck_ms,
		.replenish_delay_ms = c->o.replenish_delay_ms,
		.max_refill_rate = c->o.max_refill_rate,
		.max_batch = c->o.max_batch_size,
		.jitter = next_jitter(c),
		.deletion_pending = deletion_pending_cb,
		.pod_unschedulable = pod_unschedulable_cb,
		.ud = &p,
	};

	/* Phase 1: stale deletes, launch-type fixes, adoptions (docs/api.md#pool-members, #staleness-and-update-strategies). */
	if ((rc = wp_pool_classify(&in, members, &m, &n)))
		goto out;
	for (size_t i = 0; i < n; i++) {
		switch (m[i].action) {
		case WP_MEMBER_DELETE_STALE:
			m[i].failed = !delete_member(&p, &m[i], "delete stale sandbox");
			break;
		case WP_MEMBER_SET_LAUNCH_TYPE:
			m[i].failed = !update_member(&p, &m[i], "set launch-type of sandbox");
			break;
		case WP_MEMBER_ADOPT:
			m[i].failed = !update_member(&p, &m[i], "adopt sandbox");
			break;
		default:
			break;
		}
	}
	wp_pool_classify_failed(m, n);

	/* Phase 2: stuck members (docs/api.md#stuck-and-unschedulable-members); not gated by the expectations. */
	long grace_requeue = 0;
	wp_pool_stuck(&in, m, n, &grace_requeue);
	for (size_t i = 0; i < n; i++)
		if (m[i].action == WP_MEMBER_DELETE_STUCK)
			m[i].failed = !delete_member(&p, &m[i], "delete stuck sandbox");
	wp_pool_stuck_failed(m, n);

	/* Phase 3: sizing. */
	wp_pool_state st;
	state_get(c, key, &st);
	bool gate = wp_expectations_satisfied(c->exp, key, k8s_monotonic_ms());
	if ((rc = wp_pool_size(&in, m, n, gate, grace_requeue, &st, &plan)))
		goto out;
	if (plan.event)
		record_event(c, pool, &plan);

	long requeue = plan.requeue_after_ms;
	/* Claims first: the refill and the status write (which no hand-out
	 * waits for, and which a burst would otherwise write once per claim)
	 * wait for the pending hand-outs. */
	if ((plan.create > 0 || plan.status_patch) && refill_waits(c, &st)) {
		st.tokens += plan.tokens_granted;     /* not spent: refund */
		if (!requeue || requeue > WP_POOL_HANDOUT_RECHECK_MS)
			requeue = WP_POOL_HANDOUT_RECHECK_MS;
		plan.create = 0;
		cJSON_Delete(plan.status_patch);
		plan.status_patch = NULL;
	}
	if (plan.create > 0) {
		body = wp_pool_member_new(pool, tpl, c->o.enable_eviction);
		if (!body) {
			pass_fail(&p, asb_error_last()->code, "build a sandbox for pool", name, asb_error_last()->message);
			st.tokens += plan.tokens_granted;
		} else if (!wp_expectations_expect_creations(c->exp, key, plan.create, k8s_monotonic_ms())) {
			st.tokens += plan.tokens_granted;     /* gated out: refund */
			if (!requeue || requeue > WP_POOL_EXPECTATIONS_REQUEUE_MS)
				requeue = WP_POOL_EXPECTATIONS_REQUEUE_MS;
		} else {
			create_ctx cc = { body };
			size_t tried = 0;
			size_t ok = slow_start(&p, (size_t)plan.create, create_job, &cc, &tried);
			/* Creates that failed or never ran will never be observed. */
			wp_expectations_lower_creations(c->exp, key, plan.create - (int)ok);
			st.baseline += (int)ok;
			asb_log(c->o.logger, ASB_LOG_INFO, "warm pool refill", "pool", key,
			        "created", ok == (size_t)plan.create ? "all" : "some", NULL);
		}
	}
	if (plan.nexcess > 0) {
		excess_ctx ec = { m, plan.excess };
		size_t tried = 0;
		slow_start(&p, plan.nexcess, excess_job, &ec, &tried);
	}
	state_put(c, key, &st);

	/* The status is left alone on a pass with errors (docs/api.md#pool-sizing). */
	if (!p.rc && plan.status_patch) {
		int src = k8s_client_patch(c->o.client, &wp_resource_pools, ns, name, "status",
		                           K8S_PATCH_MERGE, plan.status_patch, NULL, NULL);
		if (src && src != ASB_ENOTFOUND)
			pass_fail(&p, src, "update status of SandboxWarmPool", name, asb_error_last()->message);
	}
	if (res)
		res->requeue_after_ms = requeue;
	rc = p.rc;
	if (rc)
		asb_error_set(rc, 0, NULL, "SandboxWarmPool \"%s\": %s", key, ju_nz(p.err));
out:
	wp_pool_plan_clear(&plan);
	wp_pool_members_free(m, n);
	cJSON_Delete(body);
	cJSON_Delete(members);
	memos_put(c, key, memos);   /* after `members`, which references its views */
	cJSON_Delete(tpl);
	cJSON_Delete(pool);
	free(p.err);
	pthread_mutex_destroy(&p.mu);
	free(ns);
	free(name);
	return rc;
}
