/*
 * test_client_apf.c - the client's handling of 429 Too Many Requests and
 * Retry-After (libk8s/src/client.c, transport.c) against a real
 * kube-apiserver's API Priority and Fairness
 * (https://kubernetes.io/docs/concepts/cluster-administration/flow-control/).
 *
 * A PriorityLevelConfiguration with no seats (Limited, nominalConcurrency-
 * Shares 0, nothing to lend or borrow, limitResponse Reject) and a
 * FlowSchema sending it every request of one ServiceAccount. APF still
 * dispatches a request at an idle level (its queue set admits a request
 * wider than the limit when nothing executes), so the test keeps one request
 * of that identity executing: a POST whose body it never sends. Then every
 * other request of the identity is answered 429 with Retry-After: 1.
 *
 * (a) a GET with 2 retries fails with ASB_ETOOMANYREQUESTS after 3 tries,
 *     each answered 429 (rest_client_requests_total), each retry waiting
 *     the server's Retry-After (the delay it logs, not a measured time);
 * (b) a GET started while rejected succeeds once another thread deletes the
 *     FlowSchema after the first 429.
 *
 * The APF objects have fixed names: left-overs of a crashed run are deleted
 * at start, and everything is deleted at exit whatever the outcome.
 */
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>
#include "k8s/client.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "k8s/object.h"
#include "config_internal.h"
#include "live.h"

#define APF_NAME "libk8s-test-apf-reject"
#define SA_NAME "throttled"

static const k8s_resource flowschemas =
	{ "flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema", false };
static const k8s_resource prioritylevels =
	{ "flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
	  "PriorityLevelConfiguration", false };
static const k8s_resource serviceaccounts = { "", "v1", "serviceaccounts", "ServiceAccount", true };
static const k8s_resource roles = { "rbac.authorization.k8s.io", "v1", "roles", "Role", true };
static const k8s_resource rolebindings =
	{ "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true };
static const k8s_resource configmaps = { "", "v1", "configmaps", "ConfigMap", true };

static k8s_client *admin;
static k8s_config *sa_cfg;   /* the ServiceAccount's identity */
static char ns[64];

static void create_or_die(const k8s_resource *r, const char *on_ns, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void create_or_die(const k8s_resource *r, const char *on_ns, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cJSON *o = cJSON_Parse(buf);
	int rc = o ? k8s_client_create(admin, r, on_ns, o, NULL, NULL) : ASB_EINVAL;
	cJSON_Delete(o);
	if (rc < 0) {
		fprintf(stderr, "test_client_apf: cannot create %s: %s\n", r->kind, asb_error_last()->message);
		exit(1);
	}
}

/* ---- the blocker: one request of the identity that stays executing ---- */

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool reading;   /* the server asked for the body: the request executes */
	bool release;
	bool running;
	pthread_t thread;
} blocker;

static blocker blk = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false, 0 };

static size_t blocker_read(char *buf, size_t size, size_t n, void *ud)
{
	blocker *b = ud;
	pthread_mutex_lock(&b->lock);
	b->reading = true;
	pthread_cond_broadcast(&b->cond);
	while (!b->release)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	return 0;  /* an empty body: the create fails and the seat is freed */
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
	return size * n;
}

/*
 * POSTs a ConfigMap as the ServiceAccount over HTTP/1.1 with
 * "Expect: 100-continue": the headers go out alone, and the server asks for
 * the body (100 Continue) only once APF dispatched the request and the
 * handler reads it. The read callback then blocks until released.
 */
static void *blocker_run(void *arg)
{
	blocker *b = arg;
	char url[512], auth[4096];
	snprintf(url, sizeof(url), "%s/api/v1/namespaces/%s/configmaps", sa_cfg->server, ns);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", sa_cfg->token);
	struct curl_slist *h = NULL;
	h = curl_slist_append(h, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	h = curl_slist_append(h, "Expect: 100-continue");
	h = curl_slist_append(h, "Transfer-Encoding: chunked");
	CURL *e = curl_easy_init();
	struct curl_blob ca = { sa_cfg->ca.data, sa_cfg->ca.len, CURL_BLOB_COPY };
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "POST");
	curl_easy_setopt(e, CURLOPT_READFUNCTION, blocker_read);
	curl_easy_setopt(e, CURLOPT_READDATA, b);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(e, CURLOPT_EXPECT_100_TIMEOUT_MS, 120000L);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 180L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_perform(e);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	/* answered without asking for the body (e.g. rejected): say so */
	pthread_mutex_lock(&b->lock);
	b->reading = true;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

static void blocker_stop(void)
{
	if (!blk.running)
		return;
	pthread_mutex_lock(&blk.lock);
	blk.release = true;
	pthread_cond_broadcast(&blk.cond);
	pthread_mutex_unlock(&blk.lock);
	pthread_join(blk.thread, NULL);
	blk.running = false;
}

/* Starts the blocker and waits (20 s at most) until its request executes. */
static bool blocker_start(void)
{
	blocker_stop();  /* one at a time (a failed test may have left one) */
	blk.reading = blk.release = false;
	if (pthread_create(&blk.thread, NULL, blocker_run, &blk) != 0)
		return false;
	blk.running = true;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	pthread_mutex_lock(&blk.lock);
	while (!blk.reading)
		if (pthread_cond_timedwait(&blk.cond, &blk.lock, &until) != 0)
			break;
	bool ok = blk.reading;
	pthread_mutex_unlock(&blk.lock);
	return ok;
}

/* ---- the ServiceAccount's client ---- */

typedef struct {
	k8s_client *client;
	asb_metrics_registry *metrics;
	asb_logger *log;
	FILE *logf;
	char *logbuf;
	size_t loglen;
} sa_client;

static void sa_client_new(sa_client *s, int max_retries)
{
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(asb_metrics_registry_new(&s->metrics), 0);
	s->logf = open_memstream(&s->logbuf, &s->loglen);
	ck_assert_int_eq(asb_logger_new(&s->log, s->logf, ASB_LOG_TEXT, ASB_LOG_DEBUG), 0);
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.max_retries = max_retries;
	o.metrics = s->metrics;
	o.logger = s->log;
	ck_assert_int_eq(k8s_client_new(&s->client, sa_cfg, &o), 0);
}

/* Closes the log (readable in s->logbuf) and frees the rest. */
static void sa_client_free(sa_client *s)
{
	k8s_client_free(s->client);
	asb_logger_free(s->log);
	fclose(s->logf);
	asb_metrics_registry_free(s->metrics);
	free(s->logbuf);
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* rest_client_requests_total for `code` and method GET (0 when absent). */
static int tries_with_code(sa_client *s, const char *code)
{
	char *text = NULL;
	ck_assert_int_eq(asb_metrics_registry_expose(s->metrics, &text, NULL), 0);
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "rest_client_requests_total{code=\"%s\",", code);
	int n = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		if (strncmp(line, prefix, strlen(prefix)) == 0 && strstr(line, "method=\"GET\"}"))
			n += atoi(strrchr(line, ' ') + 1);
	free(text);
	return n;
}

/*
 * Makes the identity rejected: the blocker executes in the level, and a
 * probe GET without retries answers 429. The apiserver applies APF objects
 * a moment after they are written, so this tries again for up to 30 s.
 */
static void reject_everything(void)
{
	sa_client probe;
	sa_client_new(&probe, 0);
	int rc = 0;
	for (int i = 0; i < 60; i++) {
		if (blocker_start()) {
			cJSON *o = NULL;
			rc = k8s_client_get(probe.client, &configmaps, ns, "present", &o);
			cJSON_Delete(o);
			if (rc == ASB_ETOOMANYREQUESTS)
				break;
		}
		blocker_stop();
		usleep(500000);
	}
	sa_client_free(&probe);
	ck_assert_msg(rc == ASB_ETOOMANYREQUESTS, "the ServiceAccount is never rejected: %s",
	              asb_error_last()->message);
}

START_TEST(retries_end_with_too_many_requests)
{
	reject_everything();
	sa_client s;
	sa_client_new(&s, 2);
	cJSON *o = NULL;
	int rc = k8s_client_get(s.client, &configmaps, ns, "present", &o);
	ck_assert_ptr_null(o);
	ck_assert_int_eq(rc, ASB_ETOOMANYREQUESTS);
	ck_assert_int_eq(asb_error_last()->http_status, 429);
	/* APF answers in plain text ("Too many requests, please try again
	 * later."), not a Status: the code comes from the HTTP status */
	ck_assert_msg(strstr(asb_error_last()->message, "Too many requests"), "%s",
	              asb_error_last()->message);
	/* 1 try + 2 retries, every one answered 429 */
	ck_assert_int_eq(tries_with_code(&s, "429"), 3);
	k8s_client_stats st = { .version = K8S_CLIENT_STATS_VERSION };
	ck_assert_int_eq(k8s_client_stats_get(s.client, &st), 0);
	ck_assert_uint_eq(st.requests, 3);
	ck_assert_uint_eq(st.retries, 2);
	/* the server said Retry-After: 1, and each retry waited that long */
	fflush(s.logf);
	ck_assert_msg(count_of(s.logbuf, "delay_ms=1000") == 2, "%s", s.logbuf);
	sa_client_free(&s);
	blocker_stop();
}
END_TEST

typedef struct {
	sa_client *s;
	int rc;
	char *value;
} get_job;

static void *get_present(void *arg)
{
	get_job *j = arg;
	cJSON *o = NULL;
	j->rc = k8s_client_get(j->s->client, &configmaps, ns, "present", &o);
	const char *v = k8s_obj_str(o, "data.k");
	j->value = v ? strdup(v) : NULL;
	cJSON_Delete(o);
	return NULL;
}

START_TEST(retry_after_then_success_once_the_flowschema_is_gone)
{
	reject_everything();
	sa_client s;
	sa_client_new(&s, 4);
	get_job j = { &s, 1, NULL };
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, get_present, &j), 0);
	/* the first try is refused ... */
	for (int i = 0; i < 200 && tries_with_code(&s, "429") == 0; i++)
		usleep(50000);
	ck_assert_int_ge(tries_with_code(&s, "429"), 1);
	/* ... and while the client waits, this thread lifts the rejection */
	ck_assert_int_eq(k8s_client_delete(admin, &flowschemas, NULL, APF_NAME, NULL, NULL), 0);
	pthread_join(th, NULL);
	ck_assert_msg(j.rc == 0, "GET failed: %s", asb_error_last()->message);
	ck_assert_str_eq(j.value, "v");
	free(j.value);
	int refused = tries_with_code(&s, "429");
	ck_assert_int_ge(refused, 1);
	ck_assert_int_eq(tries_with_code(&s, "200"), 1);
	k8s_client_stats st = { .version = K8S_CLIENT_STATS_VERSION };
	ck_assert_int_eq(k8s_client_stats_get(s.client, &st), 0);
	ck_assert_uint_eq(st.retries, (uint64_t)refused);
	fflush(s.logf);
	/* every retry waited the server's Retry-After (1 s), not the backoff */
	ck_assert_int_eq(count_of(s.logbuf, "msg=\"retrying api request\""), refused);
	ck_assert_msg(count_of(s.logbuf, "delay_ms=1000") == refused, "%s", s.logbuf);
	sa_client_free(&s);
	blocker_stop();
}
END_TEST

/* Deletes what the test created; safe to call more than once. */
static void cleanup(void)
{
	static bool done;
	if (done || !admin)
		return;
	done = true;
	blocker_stop();
	k8s_client_delete(admin, &flowschemas, NULL, APF_NAME, NULL, NULL);
	k8s_client_delete(admin, &prioritylevels, NULL, APF_NAME, NULL, NULL);
	if (ns[0])
		live_delete_namespace(admin, ns);
	k8s_config_free(sa_cfg);
	k8s_client_free(admin);
	admin = NULL;
	k8s_global_cleanup();
}

/* A kubeconfig for the ServiceAccount, from tools/local-cluster sa-kubeconfig. */
static k8s_config *sa_config(void)
{
	char cmd[1024], path[1024] = "", line[1024];
	snprintf(cmd, sizeof(cmd), "%s/tools/local-cluster sa-kubeconfig %s %s 2>/dev/null",
	         SOURCE_ROOT, ns, SA_NAME);
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	while (fgets(line, sizeof(line), p))
		snprintf(path, sizeof(path), "%s", line);
	int status = pclose(p);
	path[strcspn(path, "\n")] = '\0';
	k8s_config *cfg = NULL;
	if (status != 0 || !*path || k8s_config_load(&cfg, path, NULL) < 0) {
		fprintf(stderr, "test_client_apf: `%s` gave no usable kubeconfig (status %d, \"%s\"); "
		        "the AGENT_SANDBOX_* variables must name the cluster of $KUBECONFIG\n",
		        cmd, status, path);
		return NULL;
	}
	return cfg;
}

static void setup(void)
{
	admin = live_connect("test_client_apf");
	atexit(cleanup);
	/* left-overs of a run that could not clean up */
	k8s_client_delete(admin, &flowschemas, NULL, APF_NAME, NULL, NULL);
	k8s_client_delete(admin, &prioritylevels, NULL, APF_NAME, NULL, NULL);
	live_namespace(admin, "test_client_apf", "apf", ns, sizeof(ns));
	create_or_die(&serviceaccounts, ns, "{\"metadata\":{\"name\":\"" SA_NAME "\"}}");
	create_or_die(&roles, ns, "{\"metadata\":{\"name\":\"cm\"},\"rules\":[{\"apiGroups\":[\"\"],"
	              "\"resources\":[\"configmaps\"],\"verbs\":[\"get\",\"create\"]}]}");
	create_or_die(&rolebindings, ns, "{\"metadata\":{\"name\":\"cm\"},\"roleRef\":{\"apiGroup\":"
	              "\"rbac.authorization.k8s.io\",\"kind\":\"Role\",\"name\":\"cm\"},\"subjects\":"
	              "[{\"kind\":\"ServiceAccount\",\"name\":\"" SA_NAME "\",\"namespace\":\"%s\"}]}", ns);
	create_or_die(&configmaps, ns, "{\"metadata\":{\"name\":\"present\"},\"data\":{\"k\":\"v\"}}");
	create_or_die(&prioritylevels, NULL,
	              "{\"metadata\":{\"name\":\"" APF_NAME "\"},\"spec\":{\"type\":\"Limited\","
	              "\"limited\":{\"nominalConcurrencyShares\":0,\"lendablePercent\":0,"
	              "\"borrowingLimitPercent\":0,\"limitResponse\":{\"type\":\"Reject\"}}}}");
	/* precedence 90: before every suggested schema but exempt (1) and
	 * probes (2), which never match a ServiceAccount */
	create_or_die(&flowschemas, NULL,
	              "{\"metadata\":{\"name\":\"" APF_NAME "\"},\"spec\":{"
	              "\"priorityLevelConfiguration\":{\"name\":\"" APF_NAME "\"},"
	              "\"matchingPrecedence\":90,\"rules\":[{\"subjects\":[{\"kind\":\"ServiceAccount\","
	              "\"serviceAccount\":{\"namespace\":\"%s\",\"name\":\"" SA_NAME "\"}}],"
	              "\"resourceRules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"],"
	              "\"namespaces\":[\"*\"],\"clusterScope\":true}],"
	              "\"nonResourceRules\":[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]}]}}", ns);
	if (!(sa_cfg = sa_config()))
		exit(1);
}

int main(void)
{
	setup();
	Suite *s = suite_create("client_apf");
	TCase *tc = tcase_create("live");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, retries_end_with_too_many_requests);
	tcase_add_test(tc, retry_after_then_success_once_the_flowschema_is_gone);
	suite_add_tcase(s, tc);
	int failed = live_run(s);
	cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
