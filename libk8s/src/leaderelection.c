/*
 * leaderelection.c - leader election on a coordination.k8s.io/v1 Lease
 * (see leaderelection.h), after client-go's tools/leaderelection.
 *
 * The file has two halves:
 * - the pure part (leaderelection_internal.h): read a Lease record, decide
 *   ACQUIRE / RENEW / WAIT / LOST, build the Lease to write. No I/O, no
 *   clock of its own: the unit tests drive it with chosen times;
 * - the elector thread: every retry period it reads the Lease (a leader
 *   first tries a blind renewal on the copy it holds, client-go's "fast
 *   path"), decides, writes with the resourceVersion it read, and runs the
 *   callbacks on transitions.
 *
 * Locking: `lock` guards the state that other threads read (leading,
 * renewed_ms, the observed holder, the stop flag). The Lease copy and the
 * last reported leader belong to the elector thread alone. Callbacks run
 * without the lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "asb/clock.h"
#include "k8s/leaderelection.h"
#include "k8s/object.h"
#include "leaderelection_internal.h"
#include "microtime.h"
#include "rng.h"

/* --- pure part ----------------------------------------------------------- */

static const char *str_or_empty(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsString(v) && v->valuestring ? v->valuestring : "";
}

static long long_or_zero(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	return cJSON_IsNumber(v) ? (long)v->valuedouble : 0;
}

void k8s__lease_record_from(const cJSON *lease, k8s__lease_record *out)
{
	const cJSON *spec = cJSON_GetObjectItemCaseSensitive(lease, "spec");
	out->holder = str_or_empty(spec, "holderIdentity");
	out->duration_s = long_or_zero(spec, "leaseDurationSeconds");
	out->acquire_time = str_or_empty(spec, "acquireTime");
	out->renew_time = str_or_empty(spec, "renewTime");
	out->transitions = long_or_zero(spec, "leaseTransitions");
}

bool k8s__lease_record_equal(const k8s__lease_record *a,
                             const k8s__lease_record *b)
{
	return strcmp(a->holder, b->holder) == 0 &&
	       a->duration_s == b->duration_s &&
	       strcmp(a->acquire_time, b->acquire_time) == 0 &&
	       strcmp(a->renew_time, b->renew_time) == 0 &&
	       a->transitions == b->transitions;
}

bool k8s__lease_renew_overdue(const k8s__lease_state *st, int64_t now_ms,
                              long renew_deadline_ms)
{
	return st->leading && now_ms - st->renewed_ms >= renew_deadline_ms;
}

k8s__lease_action k8s__lease_decide(const k8s__lease_record *observed,
                                    const k8s__lease_state *st,
                                    int64_t now_ms, const char *identity,
                                    long renew_deadline_ms)
{
	if (st->leading) {
		if (k8s__lease_renew_overdue(st, now_ms, renew_deadline_ms))
			return K8S__LEASE_LOST;
		/*
		 * A Lease deleted under a leader is recreated, as client-go does: a
		 * rival that creates it first makes our create fail with
		 * AlreadyExists, and the next read reports LOST.
		 */
		if (!observed)
			return K8S__LEASE_ACQUIRE;
		/* Another holder, or a release we did not write: it is not ours. */
		return strcmp(observed->holder, identity) == 0 ? K8S__LEASE_RENEW
		                                               : K8S__LEASE_LOST;
	}
	if (!observed || observed->holder[0] == '\0')
		return K8S__LEASE_ACQUIRE;
	/* Ours already, e.g. this identity restarted within the lease: keep it. */
	if (strcmp(observed->holder, identity) == 0)
		return K8S__LEASE_RENEW;
	/*
	 * Expiry on the local monotonic clock, from when we saw the record
	 * change: the holder's renewTime is another machine's clock.
	 */
	if (now_ms - st->observed_ms >= (int64_t)observed->duration_s * 1000)
		return K8S__LEASE_ACQUIRE;
	return K8S__LEASE_WAIT;
}

long k8s__lease_duration_seconds(long lease_duration_ms)
{
	return (lease_duration_ms + 999) / 1000;
}

/* Sets obj[key] = item, replacing an existing member; frees `item` on failure. */
static bool put(cJSON *obj, const char *key, cJSON *item)
{
	if (!item)
		return false;
	bool ok = cJSON_GetObjectItemCaseSensitive(obj, key)
		? cJSON_ReplaceItemInObjectCaseSensitive(obj, key, item)
		: cJSON_AddItemToObject(obj, key, item);
	if (!ok)
		cJSON_Delete(item);
	return ok;
}

/* A copy of `current` or a new Lease ns/name, and its spec object. */
static cJSON *lease_copy(const cJSON *current, const char *ns,
                         const char *name, cJSON **spec)
{
	cJSON *o = current ? cJSON_Duplicate(current, 1) : cJSON_CreateObject();
	if (!o)
		return NULL;
	if (!current) {
		if (!put(o, "apiVersion", cJSON_CreateString("coordination.k8s.io/v1")) ||
		    !put(o, "kind", cJSON_CreateString("Lease")) ||
		    !put(o, "metadata", cJSON_CreateObject())) {
			cJSON_Delete(o);
			return NULL;
		}
		cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
		if (!put(meta, "name", cJSON_CreateString(name)) ||
		    !put(meta, "namespace", cJSON_CreateString(ns))) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	*spec = cJSON_GetObjectItemCaseSensitive(o, "spec");
	if (!cJSON_IsObject(*spec)) {
		*spec = cJSON_CreateObject();
		if (!put(o, "spec", *spec)) {
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

cJSON *k8s__lease_desired(const cJSON *current, k8s__lease_action action,
                          const char *ns, const char *name,
                          const char *identity, long duration_s,
                          int64_t now_us)
{
	cJSON *spec;
	cJSON *o = lease_copy(current, ns, name, &spec);
	if (!o)
		return NULL;
	k8s__lease_record old;
	k8s__lease_record_from(current, &old);
	char now[K8S_MICROTIME_LEN];
	k8s__microtime_format(now_us, now, sizeof(now));
	bool ok = put(spec, "holderIdentity", cJSON_CreateString(identity)) &&
	          put(spec, "leaseDurationSeconds", cJSON_CreateNumber((double)duration_s)) &&
	          put(spec, "renewTime", cJSON_CreateString(now));
	if (ok && action == K8S__LEASE_ACQUIRE) {
		/* A new term: client-go counts a transition unless the Lease is new. */
		long transitions = current ? old.transitions + 1 : 0;
		ok = put(spec, "acquireTime", cJSON_CreateString(now)) &&
		     put(spec, "leaseTransitions", cJSON_CreateNumber((double)transitions));
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *k8s__lease_released(const cJSON *current, int64_t now_us)
{
	cJSON *spec;
	cJSON *o = lease_copy(current, NULL, NULL, &spec);
	if (!o)
		return NULL;
	char now[K8S_MICROTIME_LEN];
	k8s__microtime_format(now_us, now, sizeof(now));
	if (!put(spec, "holderIdentity", cJSON_CreateString("")) ||
	    !put(spec, "leaseDurationSeconds", cJSON_CreateNumber(1)) ||
	    !put(spec, "acquireTime", cJSON_CreateString(now)) ||
	    !put(spec, "renewTime", cJSON_CreateString(now))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* --- the elector ---------------------------------------------------------- */

struct k8s_leader {
	k8s_client *client;
	asb_logger *log;
	char *ns, *name, *identity;
	char *lease_key;            /* "ns/name", for logs */
	long lease_ms, renew_ms, retry_ms, duration_s;
	bool release_on_cancel;
	k8s_leader_fn on_started, on_stopped;
	k8s_leader_new_leader_fn on_new_leader;
	void *userdata;
	asb_metric *master_status;  /* leader_election_master_status; NULL: no metrics */

	pthread_mutex_t lock;       /* guards the fields below, up to the blank line */
	pthread_cond_t cond;        /* signalled on stop */
	k8s__lease_state st;        /* written by the elector thread only */
	char *holder;               /* last observed holder; never NULL */
	bool started, stopping, joined;

	pthread_t thread;
	cJSON *observed;            /* the Lease last read or written (thread only) */
	char *reported;             /* holder last passed to on_new_leader (thread only) */
	uint64_t rng;               /* jitter state (thread only) */
};

int k8s_leader_options_init(k8s_leader_options *opts, unsigned int version)
{
	if (!opts || version < 1 || version > K8S_LEADER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election: unknown options version %u", version);
	k8s_leader_options def = K8S_LEADER_OPTIONS_INIT;
	def.version = version;
	memcpy(opts, &def, version == 1 ? offsetof(k8s_leader_options, metrics) : sizeof(def));
	return 0;
}

static int check_options(const k8s_leader_options *o)
{
	if (!o || o->version < 1 || o->version > K8S_LEADER_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election: options missing or of an unknown version");
	if (!o->lease_namespace || !o->lease_namespace[0] ||
	    !o->lease_name || !o->lease_name[0])
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election: lease_namespace and lease_name are required");
	if (!o->identity || !o->identity[0])
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election: identity is required");
	if (o->retry_period_ms < 1 || o->renew_deadline_ms < 1 || o->lease_duration_ms < 1000)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election: retry_period_ms and renew_deadline_ms must be "
		                     "positive and lease_duration_ms at least 1000");
	if (o->lease_duration_ms <= o->renew_deadline_ms)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election: lease_duration_ms (%ld) must be greater than "
		                     "renew_deadline_ms (%ld)", o->lease_duration_ms, o->renew_deadline_ms);
	if ((double)o->renew_deadline_ms <= K8S_LEADER_JITTER_FACTOR * (double)o->retry_period_ms)
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election: renew_deadline_ms (%ld) must be greater than "
		                     "%.1f * retry_period_ms (%ld)", o->renew_deadline_ms,
		                     K8S_LEADER_JITTER_FACTOR, o->retry_period_ms);
	return 0;
}

/* leader_election_master_status at scrape time: k8s_leader_is_leader(). */
static void collect_master_status(asb_metrics_emitter *e, void *userdata)
{
	k8s_leader *le = userdata;
	const char *name = le->name;
	asb_metrics_emit(e, &name, 1, k8s_leader_is_leader(le) ? 1 : 0);
}

/* client-go's help text; controller-runtime registers the family. */
static int register_master_status(k8s_leader *le, asb_metrics_registry *reg)
{
	static const char *const labels[] = { "name", NULL };
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = "leader_election_master_status";
	o.help = "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
	         "backup, 1 indicates master. 'name' is the string used to identify the lease. "
	         "Please make sure to group by name.";
	o.label_names = labels;
	asb_metric *m;
	int rc = asb_metrics_register(&m, reg, &o);
	if (rc == 0 && (rc = asb_metric_add_collector(m, collect_master_status, le)) == 0)
		le->master_status = m;
	return rc;
}

void k8s_leader_free(k8s_leader *le)
{
	if (!le)
		return;
	k8s_leader_stop(le);
	/* waits for a scrape that is reading this elector */
	if (le->master_status)
		asb_metric_remove_collector(le->master_status, collect_master_status, le);
	pthread_cond_destroy(&le->cond);
	pthread_mutex_destroy(&le->lock);
	cJSON_Delete(le->observed);
	free(le->reported);
	free(le->holder);
	free(le->lease_key);
	free(le->identity);
	free(le->name);
	free(le->ns);
	free(le);
}

int k8s_leader_new(k8s_leader **out, k8s_client *client,
                   const k8s_leader_options *o)
{
	if (!out || !client)
		return asb_error_set(ASB_EINVAL, 0, NULL, "leader election: out and client are required");
	*out = NULL;
	int rc = check_options(o);
	if (rc < 0)
		return rc;
	k8s_leader *le = calloc(1, sizeof(*le));
	if (!le)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	pthread_mutex_init(&le->lock, NULL);
	asb_cond_init_monotonic(&le->cond);
	le->client = client;
	le->log = o->logger;
	le->ns = strdup(o->lease_namespace);
	le->name = strdup(o->lease_name);
	le->identity = strdup(o->identity);
	le->holder = strdup("");
	size_t klen = strlen(o->lease_namespace) + strlen(o->lease_name) + 2;
	le->lease_key = malloc(klen);
	if (!le->ns || !le->name || !le->identity || !le->holder || !le->lease_key) {
		k8s_leader_free(le);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	snprintf(le->lease_key, klen, "%s/%s", o->lease_namespace, o->lease_name);
	le->lease_ms = o->lease_duration_ms;
	le->renew_ms = o->renew_deadline_ms;
	le->retry_ms = o->retry_period_ms;
	le->duration_s = k8s__lease_duration_seconds(o->lease_duration_ms);
	le->release_on_cancel = o->release_on_cancel;
	le->on_started = o->on_started_leading;
	le->on_stopped = o->on_stopped_leading;
	le->on_new_leader = o->on_new_leader;
	le->userdata = o->userdata;
	le->rng = k8s__rng_seed(le);
	if (o->version >= 2 && o->metrics && (rc = register_master_status(le, o->metrics)) < 0) {
		k8s_leader_free(le);
		return rc;
	}
	*out = le;
	return 0;
}

/* client-go's wait.Jitter(retry, 1.2): retry + random * 1.2 * retry. */
static long jittered(k8s_leader *le, long ms)
{
	return ms + (long)(k8s__rng_unit(&le->rng) * K8S_LEADER_JITTER_FACTOR * (double)ms);
}

/* Sleeps `ms` or until k8s_leader_stop(); true when stopping. */
static bool sleep_or_stop(k8s_leader *le, long ms)
{
	struct timespec ts;
	asb_deadline_after_ms(&ts, ms);
	pthread_mutex_lock(&le->lock);
	while (!le->stopping)
		if (pthread_cond_timedwait(&le->cond, &le->lock, &ts) == ETIMEDOUT)
			break;
	bool stopping = le->stopping;
	pthread_mutex_unlock(&le->lock);
	return stopping;
}

/*
 * Records a Lease read (`changed_only`: restart the expiry countdown only
 * if the record differs) or written by us (always restart it, as client-go
 * does after its own write). Takes ownership of `lease` (NULL: no Lease).
 */
static void observe(k8s_leader *le, cJSON *lease, bool changed_only)
{
	k8s__lease_record old, cur;
	k8s__lease_record_from(le->observed, &old);
	k8s__lease_record_from(lease, &cur);
	bool changed = !changed_only || !le->observed || !lease ||
	               !k8s__lease_record_equal(&old, &cur);
	char *holder = strdup(cur.holder);
	pthread_mutex_lock(&le->lock);
	if (changed)
		le->st.observed_ms = k8s_monotonic_ms();
	if (holder) {
		free(le->holder);
		le->holder = holder;
	}
	pthread_mutex_unlock(&le->lock);
	cJSON_Delete(le->observed);
	le->observed = lease;
}

typedef enum { TRY_OK, TRY_FAILED, TRY_LOST } try_result;

static void log_failure(k8s_leader *le, int rc, const char *what)
{
	/* Losing a race is the normal case for a follower: not a warning. */
	bool race = rc == ASB_ECONFLICT || rc == ASB_EALREADYEXISTS;
	asb_log(le->log, race ? ASB_LOG_DEBUG : ASB_LOG_WARN, what,
	        "lease", le->lease_key, "identity", le->identity,
	        "error", asb_error_last()->message, NULL);
}

/* Writes `want` (create when there is no Lease) and observes the answer. */
static int write_lease(k8s_leader *le, cJSON *want, bool create)
{
	if (!want)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	cJSON *out = NULL;
	int rc = create
		? k8s_client_create(le->client, &k8s_resource_leases, le->ns, want, NULL, &out)
		: k8s_client_update(le->client, &k8s_resource_leases, le->ns, want, NULL, &out);
	cJSON_Delete(want);
	if (rc == 0)
		observe(le, out, false);
	return rc;
}

/* One attempt, client-go's tryAcquireOrRenew(). */
static try_result try_acquire_or_renew(k8s_leader *le)
{
	/* Past the deadline (e.g. after a hung request) a leader gives up first. */
	if (k8s__lease_renew_overdue(&le->st, k8s_monotonic_ms(), le->renew_ms))
		return TRY_LOST;
	/* Fast path: a leader renews its copy blindly; a 409 sends it to the slow path. */
	if (le->st.leading && le->observed) {
		cJSON *want = k8s__lease_desired(le->observed, K8S__LEASE_RENEW, le->ns,
		                                 le->name, le->identity, le->duration_s,
		                                 k8s__now_us());
		int rc = write_lease(le, want, false);
		if (rc == 0)
			return TRY_OK;
		log_failure(le, rc, "leader election: optimistic renewal failed; reading the lease");
	}

	cJSON *cur = NULL;
	int rc = k8s_client_get(le->client, &k8s_resource_leases, le->ns, le->name, &cur);
	if (rc != 0 && rc != ASB_ENOTFOUND) {
		log_failure(le, rc, "leader election: error retrieving the lease");
		return TRY_FAILED;
	}
	observe(le, cur, true);

	k8s__lease_record rec;
	k8s__lease_record_from(le->observed, &rec);
	k8s__lease_action action = k8s__lease_decide(le->observed ? &rec : NULL, &le->st,
	                                             k8s_monotonic_ms(), le->identity,
	                                             le->renew_ms);
	if (action == K8S__LEASE_WAIT)
		return TRY_FAILED;
	if (action == K8S__LEASE_LOST)
		return TRY_LOST;
	bool create = le->observed == NULL;
	cJSON *want = k8s__lease_desired(le->observed, action, le->ns, le->name,
	                                 le->identity, le->duration_s, k8s__now_us());
	rc = write_lease(le, want, create);
	if (rc == 0)
		return TRY_OK;
	log_failure(le, rc, create ? "leader election: error creating the lease"
	                           : "leader election: error updating the lease");
	return TRY_FAILED;
}

/* client-go's maybeReportTransition(): on_new_leader when the holder changed. */
static void report_transition(k8s_leader *le)
{
	k8s__lease_record rec;
	k8s__lease_record_from(le->observed, &rec);
	/* Starts from "" like client-go's reportedLeader: no report until a holder is seen. */
	if (strcmp(le->reported ? le->reported : "", rec.holder) == 0)
		return;
	char *h = strdup(rec.holder);
	if (!h)
		return;
	free(le->reported);
	le->reported = h;
	if (rec.holder[0])
		asb_log(le->log, ASB_LOG_INFO, "leader election: new leader observed",
		        "lease", le->lease_key, "leader", h, "identity", le->identity, NULL);
	if (le->on_new_leader)
		le->on_new_leader(h, le->userdata);
}

/*
 * Frees the Lease if the last record we saw names us (client-go's
 * release()). The write carries the resourceVersion we saw: if anyone wrote
 * since, the 409 makes us read again and re-check that it is still ours.
 */
static void release(k8s_leader *le)
{
	for (int attempt = 0; attempt < 2 && le->observed; attempt++) {
		k8s__lease_record rec;
		k8s__lease_record_from(le->observed, &rec);
		if (strcmp(rec.holder, le->identity) != 0)
			return;
		int rc = write_lease(le, k8s__lease_released(le->observed, k8s__now_us()), false);
		if (rc == 0) {
			asb_log(le->log, ASB_LOG_INFO, "leader election: released the lease",
			        "lease", le->lease_key, "identity", le->identity, NULL);
			return;
		}
		log_failure(le, rc, "leader election: failed to release the lease");
		if (rc != ASB_ECONFLICT)
			return;
		cJSON *cur = NULL;
		rc = k8s_client_get(le->client, &k8s_resource_leases, le->ns, le->name, &cur);
		if (rc != 0 && rc != ASB_ENOTFOUND)
			return;
		observe(le, cur, true);
	}
}

static void *elector_main(void *arg)
{
	k8s_leader *le = arg;
	asb_log(le->log, ASB_LOG_INFO, "leader election: attempting to acquire the lease",
	        "lease", le->lease_key, "identity", le->identity, NULL);
	for (;;) {
		int64_t start = k8s_monotonic_ms();
		try_result r = try_acquire_or_renew(le);
		report_transition(le);

		bool started = false, stopped = false;
		const char *why = NULL;
		pthread_mutex_lock(&le->lock);
		bool overdue = k8s__lease_renew_overdue(&le->st, k8s_monotonic_ms(), le->renew_ms);
		if (r == TRY_OK) {
			/* The attempt's start, not its end: the conservative bound. */
			le->st.renewed_ms = start;
			started = !le->st.leading;
			le->st.leading = true;
		} else if (le->st.leading && (r == TRY_LOST || overdue)) {
			le->st.leading = false;
			stopped = true;
			why = overdue ? "renew deadline exceeded" : "the lease names another holder";
		}
		bool leading = le->st.leading;
		pthread_mutex_unlock(&le->lock);

		if (started) {
			asb_log(le->log, ASB_LOG_INFO, "leader election: acquired the lease; started leading",
			        "lease", le->lease_key, "identity", le->identity, NULL);
			if (le->on_started)
				le->on_started(le->userdata);
		}
		if (stopped) {
			asb_log(le->log, ASB_LOG_WARN, "leader election: lost the lease; stopped leading",
			        "lease", le->lease_key, "identity", le->identity,
			        "reason", why, NULL);
			if (le->on_stopped)
				le->on_stopped(le->userdata);
		}
		/* Followers jitter, so that candidates do not retry in lockstep. */
		if (sleep_or_stop(le, leading ? le->retry_ms : jittered(le, le->retry_ms)))
			break;
	}

	pthread_mutex_lock(&le->lock);
	bool was_leading = le->st.leading;
	le->st.leading = false;
	pthread_mutex_unlock(&le->lock);
	/* Leader-only work ends before a successor can start it. */
	if (was_leading) {
		asb_log(le->log, ASB_LOG_INFO, "leader election: stopping; stopped leading",
		        "lease", le->lease_key, "identity", le->identity, NULL);
		if (le->on_stopped)
			le->on_stopped(le->userdata);
	}
	if (le->release_on_cancel)
		release(le);
	return NULL;
}

int k8s_leader_start(k8s_leader *le)
{
	if (!le)
		return asb_error_set(ASB_EINVAL, 0, NULL, "leader election: NULL elector");
	pthread_mutex_lock(&le->lock);
	if (le->started || le->stopping) {
		pthread_mutex_unlock(&le->lock);
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "leader election for lease %s: already started", le->lease_key);
	}
	int err = pthread_create(&le->thread, NULL, elector_main, le);
	if (err == 0)
		le->started = true;
	pthread_mutex_unlock(&le->lock);
	if (err != 0)
		return asb_error_set(ASB_ERROR, 0, NULL,
		                     "leader election for lease %s: cannot start a thread: %s",
		                     le->lease_key, strerror(err));
	return 0;
}

void k8s_leader_stop(k8s_leader *le)
{
	if (!le)
		return;
	pthread_mutex_lock(&le->lock);
	le->stopping = true;
	bool join = le->started && !le->joined;
	le->joined = true;
	pthread_cond_broadcast(&le->cond);
	pthread_mutex_unlock(&le->lock);
	if (join)
		pthread_join(le->thread, NULL);
}

bool k8s_leader_is_leader(k8s_leader *le)
{
	if (!le)
		return false;
	pthread_mutex_lock(&le->lock);
	/* Also false while the thread is stuck in a request past the deadline. */
	bool leading = le->st.leading &&
	               !k8s__lease_renew_overdue(&le->st, k8s_monotonic_ms(), le->renew_ms);
	pthread_mutex_unlock(&le->lock);
	return leading;
}

size_t k8s_leader_get_leader(k8s_leader *le, char *buf, size_t cap)
{
	if (!le) {
		if (buf && cap)
			buf[0] = '\0';
		return 0;
	}
	pthread_mutex_lock(&le->lock);
	size_t len = strlen(le->holder);
	if (buf && cap) {
		size_t n = len < cap - 1 ? len : cap - 1;
		memcpy(buf, le->holder, n);
		buf[n] = '\0';
	}
	pthread_mutex_unlock(&le->lock);
	return len;
}
