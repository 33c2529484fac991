/*
 * test_client_transport.c - config, auth and transport of the client
 * (libk8s/src/client.c, transport.c, watch.c, exec_credential.c) against a
 * real kube-apiserver, reached with the admin kubeconfig in $KUBECONFIG
 * (tools/local-cluster up prints one; the static-token test user's
 * kubeconfig, test-user.kubeconfig, lies next to it).
 *
 * Exec credential plugins (a shell script written at test time: auth as
 * the test user, expiry, refresh after a 401, failures), HTTP/2, connection
 * shards from many threads, watches with and without their own connection,
 * client-side QPS, retries (connection refused; 503 from an unavailable
 * aggregated API), Warning headers, pagination over 1,000 ConfigMaps, the
 * scale subresource, and proxy-url. Everything happens in a fresh
 * namespace that is deleted at the end.
 */
#include <check.h>
#include <libgen.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <mbedtls/base64.h>
#include "k8s/client.h"
#include "asb/log.h"
#include "config_internal.h"

static k8s_client *client;
static k8s_config *admin_cfg;
static char *test_user_token;   /* the static token of the test user */
static char ns[64];
static char tmpdir[64];

#define TEST_USER "agent-sandbox-test-user"

static const k8s_resource configmaps = { "", "v1", "configmaps", "ConfigMap", true };
static const k8s_resource selfsubjectreviews =
	{ "authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", false };
static const k8s_resource componentstatuses =
	{ "", "v1", "componentstatuses", "ComponentStatus", false };
static const k8s_resource deployments = { "apps", "v1", "deployments", "Deployment", true };
static const k8s_resource services = { "", "v1", "services", "Service", true };
static const k8s_resource apiservices =
	{ "apiregistration.k8s.io", "v1", "apiservices", "APIService", false };
static const k8s_resource things = { "nowhere.libk8s.example", "v1", "things", "Thing", true };

/* --- helpers ------------------------------------------------------------- */

#define OK(call) do { \
	int rc_ = (call); \
	ck_assert_msg(rc_ == 0, "%s: rc %d (%s): %s", #call, rc_, \
	              asb_strerror(rc_), asb_error_last()->message); \
} while (0)

#define FAILS_WITH(code, call) do { \
	int rc_ = (call); \
	ck_assert_msg(rc_ == (code), "%s: rc %d (%s), want %s: %s", #call, rc_, \
	              asb_strerror(rc_), asb_strerror(code), \
	              asb_error_last()->message); \
} while (0)

static void assert_message_has(const char *needle)
{
	const char *m = asb_error_last()->message;
	ck_assert_msg(strstr(m, needle) != NULL, "\"%s\" not in: %s", needle, m);
}

static cJSON *json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static cJSON *json(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	cJSON *o = cJSON_Parse(buf);
	ck_assert_msg(o != NULL, "bad test JSON: %s", buf);
	return o;
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
	ck_assert_msg(cJSON_IsNumber(v), "%s.%s is not a number", a, b);
	return v->valuedouble;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static k8s_client_stats stats_of(k8s_client *c)
{
	k8s_client_stats s = { .version = K8S_CLIENT_STATS_VERSION };
	OK(k8s_client_stats_get(c, &s));
	return s;
}

static char *b64(const void *data, size_t len)
{
	size_t need = 0;
	mbedtls_base64_encode(NULL, 0, &need, data, len);
	char *out = malloc(need);
	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(mbedtls_base64_encode((unsigned char *)out, need, &need,
	                                       data, len), 0);
	return out;
}

/*
 * A kubeconfig for the admin's cluster (its CA, `cluster_extra` YAML flow
 * members) with the given user body; written to `path` (so that relative
 * paths in it resolve against tmpdir) and loaded.
 */
static k8s_config *config_with(const char *cluster_extra, const char *user)
{
	char *ca = b64(admin_cfg->ca.data, admin_cfg->ca.len);
	size_t n = strlen(ca) + strlen(user) + 2048;
	char *doc = malloc(n);
	ck_assert_ptr_nonnull(doc);
	snprintf(doc, n,
	         "apiVersion: v1\nkind: Config\ncurrent-context: it\n"
	         "clusters:\n- name: c\n  cluster: {server: '%s', "
	         "certificate-authority-data: %s%s%s}\n"
	         "users:\n- name: u\n  user: %s\n"
	         "contexts:\n- name: it\n  context: {cluster: c, user: u, "
	         "namespace: %s}\n",
	         admin_cfg->server, ca, cluster_extra ? ", " : "",
	         cluster_extra ? cluster_extra : "", user, ns);
	free(ca);
	char path[128];
	snprintf(path, sizeof(path), "%s/kubeconfig", tmpdir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(doc, f);
	fclose(f);
	free(doc);
	k8s_config *cfg = NULL;
	OK(k8s_config_load(&cfg, path, NULL));
	return cfg;
}

static k8s_client *client_with(const k8s_config *cfg, const k8s_client_options *o)
{
	k8s_client *c = NULL;
	OK(k8s_client_new(&c, cfg, o));
	return c;
}

/* A logger into memory; read the text with log_text() after log_close(). */
typedef struct {
	char *buf;
	size_t len;
	FILE *f;
	asb_logger *log;
} memlog;

static void log_open(memlog *m, asb_log_level level)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	ck_assert_ptr_nonnull(m->f);
	OK(asb_logger_new(&m->log, m->f, ASB_LOG_TEXT, level));
}

static void log_close(memlog *m)
{
	asb_logger_free(m->log);
	fclose(m->f);
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Who the API server says we are (authentication.k8s.io/v1 SelfSubjectReview). */
static int whoami(k8s_client *c, char *user, size_t cap)
{
	cJSON *req = json("{\"apiVersion\":\"authentication.k8s.io/v1\","
	                  "\"kind\":\"SelfSubjectReview\"}");
	cJSON *out = NULL;
	int rc = k8s_client_create(c, &selfsubjectreviews, NULL, req, NULL, &out);
	cJSON_Delete(req);
	if (rc == 0) {
		const cJSON *ui = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(out, "status"), "userInfo");
		const char *name = str_at(ui, "username", NULL);
		snprintf(user, cap, "%s", name ? name : "");
	}
	cJSON_Delete(out);
	return rc;
}

/* Creates a ConfigMap unless it exists (several tests share one). */
static void create_cm(k8s_client *c, const char *name, const char *labels)
{
	cJSON *cm = json("{\"metadata\":{\"name\":\"%s\",\"labels\":{%s}},"
	                 "\"data\":{\"k\":\"v\"}}", name, labels ? labels : "");
	int rc = k8s_client_create(c, &configmaps, ns, cm, NULL, NULL);
	ck_assert_msg(rc == 0 || rc == ASB_EALREADYEXISTS, "create %s: %s", name,
	              asb_error_last()->message);
	cJSON_Delete(cm);
}

/* --- exec credential plugins --------------------------------------------- */

/*
 * The plugin: counts its runs in $COUNTER, prints an ExecCredential with
 * the token in $TOKEN_FILE valid for $TTL seconds; with $BAD_FIRST its
 * first answer is a wrong token; with $FAIL it fails like a real plugin.
 */
static const char plugin_script[] =
	"#!/bin/sh\n"
	"n=$(cat \"$COUNTER\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"$COUNTER\"\n"
	"if [ -n \"$FAIL\" ]; then echo \"error: $FAIL\" >&2; exit 2; fi\n"
	"tok=$(cat \"$TOKEN_FILE\")\n"
	"if [ -n \"$BAD_FIRST\" ] && [ \"$n\" = 1 ]; then tok=not-the-right-token; fi\n"
	"exp=$(date -u -d \"+${TTL:-3600} seconds\" +%Y-%m-%dT%H:%M:%SZ)\n"
	"printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	"\"status\":{\"token\":\"%s\",\"expirationTimestamp\":\"%s\"}}\\n' \"$tok\" \"$exp\"\n";

static int runs_counted(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/runs", tmpdir);
	FILE *f = fopen(path, "r");
	int n = 0;
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

/* The user body of an exec kubeconfig; the command is relative to it. */
static k8s_config *exec_config(const char *extra_env)
{
	char user[1024];
	char runs[128];
	snprintf(runs, sizeof(runs), "%s/runs", tmpdir);
	unlink(runs);
	snprintf(user, sizeof(user),
	         "{exec: {apiVersion: client.authentication.k8s.io/v1, "
	         "command: ./plugin.sh, interactiveMode: Never, "
	         "installHint: 'the test writes plugin.sh', env: ["
	         "{name: COUNTER, value: '%s/runs'}, "
	         "{name: TOKEN_FILE, value: '%s/token'}%s%s]}}",
	         tmpdir, tmpdir, extra_env ? ", " : "", extra_env ? extra_env : "");
	return config_with(NULL, user);
}

START_TEST(test_exec_plugin_auth)
{
	memlog m;
	log_open(&m, ASB_LOG_DEBUG);
	k8s_config *cfg = exec_config("{name: TTL, value: '2'}");
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.logger = m.log;
	k8s_client *c = client_with(cfg, &o);
	char who[256] = "";

	/* Authenticated as the token the plugin printed. */
	OK(whoami(c, who, sizeof(who)));
	ck_assert_str_eq(who, TEST_USER);
	ck_assert_int_eq(runs_counted(), 1);
	/* Cached until it expires: no second run. */
	OK(whoami(c, who, sizeof(who)));
	/* The test user has no RBAC grants: the server knows who it is. */
	FAILS_WITH(ASB_EFORBIDDEN, k8s_client_list(c, &configmaps, ns, NULL, NULL));
	assert_message_has(TEST_USER);
	ck_assert_int_eq(runs_counted(), 1);
	/* Past expirationTimestamp (2 s, second precision): run again. */
	sleep(3);
	OK(whoami(c, who, sizeof(who)));
	ck_assert_str_eq(who, TEST_USER);
	ck_assert_int_eq(runs_counted(), 2);
	ck_assert_int_eq(stats_of(c).credential_runs, 2);
	k8s_client_free(c);
	k8s_config_free(cfg);
	log_close(&m);
	/* The token never reaches the log; the runs do. */
	ck_assert_ptr_null(strstr(m.buf, test_user_token));
	ck_assert_ptr_null(strstr(m.buf, "Bearer"));
	ck_assert_int_eq(count_of(m.buf, "exec credential obtained"), 2);
	ck_assert_int_eq(count_of(m.buf, "exec credential expired"), 1);
	free(m.buf);
}
END_TEST

START_TEST(test_exec_plugin_refresh_on_401)
{
	/* The first credential is refused: the client runs the plugin again
	 * and sends the request once more, which then succeeds. */
	k8s_config *cfg = exec_config("{name: BAD_FIRST, value: '1'}");
	k8s_client *c = client_with(cfg, NULL);
	char who[256] = "";
	OK(whoami(c, who, sizeof(who)));
	ck_assert_str_eq(who, TEST_USER);
	ck_assert_int_eq(runs_counted(), 2);
	k8s_client_stats s = stats_of(c);
	ck_assert_int_eq(s.credential_runs, 2);
	ck_assert_int_eq(s.retries, 1);
	ck_assert_int_eq(s.requests, 2);
	k8s_client_free(c);
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_exec_plugin_failures)
{
	/* A plugin that fails: its stderr is in the error, nothing is sent. */
	k8s_config *cfg = exec_config("{name: FAIL, value: 'refresh token revoked, run login'}");
	k8s_client *c = client_with(cfg, NULL);
	char who[256];
	FAILS_WITH(ASB_ECONFIG, whoami(c, who, sizeof(who)));
	assert_message_has("exited with status 2");
	assert_message_has("error: refresh token revoked, run login");
	ck_assert_int_eq(stats_of(c).requests, 0);
	k8s_client_free(c);
	k8s_config_free(cfg);

	/* A plugin that is not there: the install hint is quoted. */
	cfg = config_with(NULL, "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
	                  "command: ./no-such-plugin, installHint: 'see the docs'}}");
	c = client_with(cfg, NULL);
	FAILS_WITH(ASB_ECONFIG, whoami(c, who, sizeof(who)));
	assert_message_has("not found. see the docs");
	k8s_client_free(c);
	k8s_config_free(cfg);
}
END_TEST

/* --- in-cluster config: the projected token rotates ------------------------ */

static const k8s_resource serviceaccounts =
	{ "", "v1", "serviceaccounts", "ServiceAccount", true };
static const k8s_resource secrets = { "", "v1", "secrets", "Secret", true };

/* A ServiceAccount token from the token controller (a legacy token Secret). */
static char *sa_token(const char *sa)
{
	cJSON *o = json("{\"metadata\":{\"name\":\"%s\"}}", sa);
	OK(k8s_client_create(client, &serviceaccounts, ns, o, NULL, NULL));
	cJSON_Delete(o);
	o = json("{\"metadata\":{\"name\":\"%s-token\",\"annotations\":"
	         "{\"kubernetes.io/service-account.name\":\"%s\"}},"
	         "\"type\":\"kubernetes.io/service-account-token\"}", sa, sa);
	OK(k8s_client_create(client, &secrets, ns, o, NULL, NULL));
	cJSON_Delete(o);
	char name[128];
	snprintf(name, sizeof(name), "%s-token", sa);
	for (int i = 0; i < 300; i++) {
		cJSON *s = NULL;
		OK(k8s_client_get(client, &secrets, ns, name, &s));
		const char *enc = str_at(s, "data", "token");
		if (enc) {
			size_t len = 0;
			mbedtls_base64_decode(NULL, 0, &len, (const unsigned char *)enc, strlen(enc));
			char *tok = calloc(1, len + 1);
			ck_assert_int_eq(mbedtls_base64_decode((unsigned char *)tok, len + 1, &len,
			                                       (const unsigned char *)enc,
			                                       strlen(enc)), 0);
			cJSON_Delete(s);
			return tok;
		}
		cJSON_Delete(s);
		usleep(100 * 1000);
	}
	ck_abort_msg("the token controller did not fill %s/%s in 30 s", ns, name);
	return NULL;
}

/* Writes the service-account files into dir/GEN and points dir/..data at it,
 * atomically, the way the kubelet's atomic writer updates a projected volume. */
static void project(const char *dir, const char *gen, const char *token)
{
	char path[256], link[256];
	snprintf(path, sizeof(path), "%s/%s", dir, gen);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	const char *names[] = { "token", "ca.crt", "namespace" };
	const char *texts[] = { token, admin_cfg->ca.data, ns };
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", dir, gen, names[i]);
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(texts[i], f);
		fclose(f);
	}
	snprintf(link, sizeof(link), "%s/..data_tmp", dir);
	ck_assert_int_eq(symlink(gen, link), 0);
	snprintf(path, sizeof(path), "%s/..data", dir);
	ck_assert_int_eq(rename(link, path), 0);
	for (int i = 0; i < 3; i++) {
		char target[64];
		snprintf(link, sizeof(link), "%s/%s", dir, names[i]);
		snprintf(target, sizeof(target), "..data/%s", names[i]);
		if (access(link, F_OK) != 0)
			ck_assert_int_eq(symlink(target, link), 0);
	}
}

START_TEST(test_incluster_token_rotation)
{
	char dir[128], host[64], port[16];
	snprintf(dir, sizeof(dir), "%s/sa", tmpdir);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	project(dir, "..gen1", test_user_token);
	ck_assert_int_eq(sscanf(admin_cfg->server, "https://%63[^:]:%15s", host, port), 2);

	k8s_config *cfg = NULL;
	OK(k8s_config_incluster_from(&cfg, host, port, dir));
	ck_assert_str_eq(k8s_config_namespace(cfg), ns);
	k8s_client *c = client_with(cfg, NULL);
	char who[256] = "";
	OK(whoami(c, who, sizeof(who)));
	ck_assert_str_eq(who, TEST_USER);

	/* The kubelet rotates the projected token: the client reads it again. */
	char *token = sa_token("rotated");
	project(dir, "..gen2", token);
	OK(whoami(c, who, sizeof(who)));
	char want[160];
	snprintf(want, sizeof(want), "system:serviceaccount:%s:rotated", ns);
	ck_assert_str_eq(who, want);
	k8s_client_free(c);
	k8s_config_free(cfg);
	free(token);

	const char *rm[] = { "token", "ca.crt", "namespace", "..data",
	                     "..gen1/token", "..gen1/ca.crt", "..gen1/namespace",
	                     "..gen2/token", "..gen2/ca.crt", "..gen2/namespace" };
	char path[256];
	for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, rm[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/..gen1", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/..gen2", dir);
	rmdir(path);
	rmdir(dir);
}
END_TEST

/* --- HTTP/2 and connection shards -------------------------------------------- */

START_TEST(test_http2_negotiated)
{
	memlog m;
	log_open(&m, ASB_LOG_DEBUG);
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.logger = m.log;
	k8s_client *c = client_with(admin_cfg, &o);
	cJSON *out = NULL;
	OK(k8s_client_get(c, &k8s_resource_namespaces, NULL, ns, &out));
	cJSON_Delete(out);
	k8s_client_stats s = stats_of(c);
	ck_assert_int_eq(s.requests, 1);
	ck_assert_int_eq(s.http2, 1);
	ck_assert_int_eq(s.connections, 1);
	k8s_client_free(c);
	log_close(&m);
	ck_assert_msg(strstr(m.buf, "http_version=2"), "log: %s", m.buf);
	free(m.buf);
}
END_TEST

#define THREADS 8
#define CALLS 25

typedef struct {
	k8s_client *c;
	int failures;
} hammer_arg;

static void *hammer(void *ud)
{
	hammer_arg *a = ud;
	for (int i = 0; i < CALLS; i++) {
		cJSON *out = NULL;
		const char *v = NULL;
		if (k8s_client_get(a->c, &configmaps, ns, "shared", &out) != 0 ||
		    !(v = str_at(out, "data", "k")) || strcmp(v, "v") != 0)
			a->failures++;
		cJSON_Delete(out);
		if (k8s_client_get(a->c, &configmaps, ns, "absent", NULL) != ASB_ENOTFOUND)
			a->failures++;
	}
	return NULL;
}

static void run_hammers(k8s_client *c)
{
	pthread_t t[THREADS];
	hammer_arg a[THREADS];
	for (int i = 0; i < THREADS; i++) {
		a[i] = (hammer_arg){ c, 0 };
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &a[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(a[i].failures, 0);
	}
}

START_TEST(test_sharded_threads)
{
	create_cm(client, "shared", NULL);
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.api_connections = 3;
	k8s_client *c = client_with(admin_cfg, &o);
	run_hammers(c);
	k8s_client_stats s = stats_of(c);
	ck_assert_int_eq(s.requests, THREADS * CALLS * 2);
	ck_assert_int_eq(s.http2, THREADS * CALLS * 2);
	/* Three shards, one HTTP/2 connection each, however many threads:
	 * concurrent requests of a shard are streams of its connection. */
	ck_assert_int_eq(s.connections, 3);
	ck_assert_int_eq(s.retries, 0);
	k8s_client_free(c);

	/* One shard: one connection for all 8 threads. */
	k8s_client *one = client_with(admin_cfg, NULL);
	run_hammers(one);
	ck_assert_int_eq(stats_of(one).connections, 1);
	k8s_client_free(one);
}
END_TEST

typedef struct {
	k8s_client *c;
	atomic_int cancel;
	atomic_int events;
	int rc;
} watcher;

static int count_event(k8s_watch_event_type type, cJSON *object, void *ud)
{
	watcher *w = ud;
	atomic_fetch_add(&w->events, 1);
	cJSON_Delete(object);
	return 0;
}

static void *watch_main(void *ud)
{
	watcher *w = ud;
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.field_selector = "metadata.name=shared";
	w->rc = k8s_client_watch(w->c, &configmaps, ns, &lo, count_event, w, &w->cancel);
	return NULL;
}

/* Runs a watch and 20 GETs on `c` at once; returns the connections opened. */
static uint64_t watch_and_get(k8s_client *c)
{
	watcher w = { .c = c, .rc = -1 };
	atomic_init(&w.cancel, 0);
	atomic_init(&w.events, 0);
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, watch_main, &w), 0);
	/* Without a resourceVersion the watch starts with an ADDED event for
	 * the existing object: then it is established. */
	for (int i = 0; i < 100 && atomic_load(&w.events) == 0; i++)
		usleep(50 * 1000);
	ck_assert_int_ge(atomic_load(&w.events), 1);
	for (int i = 0; i < 20; i++)
		OK(k8s_client_get(c, &configmaps, ns, "shared", NULL));
	atomic_store(&w.cancel, 1);
	pthread_join(t, NULL);
	ck_assert_int_eq(w.rc, ASB_ECANCELED);
	return stats_of(c).connections;
}

START_TEST(test_watch_connection_sharing)
{
	create_cm(client, "shared", NULL);
	/* By default a watch is one more HTTP/2 stream on the connection the
	 * requests use... */
	k8s_client *c = client_with(admin_cfg, NULL);
	ck_assert_int_eq(watch_and_get(c), 1);
	k8s_client_free(c);
	/* ...with separate_watch_connection it has a connection of its own. */
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.separate_watch_connection = true;
	c = client_with(admin_cfg, &o);
	ck_assert_int_eq(watch_and_get(c), 2);
	k8s_client_free(c);
}
END_TEST

/* --- client-side rate limit ---------------------------------------------------- */

START_TEST(test_qps_limit)
{
	create_cm(client, "shared", NULL);
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.qps = 20;
	o.burst = 1;
	k8s_client *c = client_with(admin_cfg, &o);
	int64_t start = mono_ms();
	for (int i = 0; i < 21; i++)
		OK(k8s_client_get(c, &configmaps, ns, "shared", NULL));
	int64_t elapsed = mono_ms() - start;
	/* Burst 1 admits the first at once, then one per 50 ms: 20 waits. */
	ck_assert_msg(elapsed >= 950, "21 requests at qps 20 took only %ld ms",
	              (long)elapsed);
	k8s_client_stats s = stats_of(c);
	ck_assert_int_ge(s.throttled, 19);
	ck_assert_int_ge(s.throttle_wait_ms, 500);  /* the rest of the 1 s is request time */
	printf("test_qps_limit: 21 GETs at qps 20, burst 1: %ld ms, throttled %lu "
	       "times, %lu ms waiting\n", (long)elapsed, (unsigned long)s.throttled,
	       (unsigned long)s.throttle_wait_ms);
	k8s_client_free(c);

	/* The default (qps -1, upstream's default) never throttles. */
	c = client_with(admin_cfg, NULL);
	for (int i = 0; i < 21; i++)
		OK(k8s_client_get(c, &configmaps, ns, "shared", NULL));
	ck_assert_int_eq(stats_of(c).throttled, 0);
	k8s_client_free(c);

	/* One limiter shared by two clients paces them together. */
	k8s_ratelimiter *rl = NULL;
	OK(k8s_ratelimiter_new(&rl, 20, 1));
	o = (k8s_client_options)K8S_CLIENT_OPTIONS_INIT;
	o.ratelimiter = rl;
	k8s_client *a = client_with(admin_cfg, &o), *b = client_with(admin_cfg, &o);
	start = mono_ms();
	for (int i = 0; i < 11; i++) {
		OK(k8s_client_get(a, &configmaps, ns, "shared", NULL));
		OK(k8s_client_get(b, &configmaps, ns, "shared", NULL));
	}
	ck_assert_int_ge(mono_ms() - start, 950);
	k8s_client_free(a);
	k8s_client_free(b);
	k8s_ratelimiter_free(rl);
}
END_TEST

/* --- retries ------------------------------------------------------------------- */

START_TEST(test_retry_connection_refused)
{
	/* Nothing listens on port 1: never sent, so every verb is retried. */
	char *doc = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&doc, &n);
	fprintf(f, "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', "
	        "insecure-skip-tls-verify: true}}]\n"
	        "contexts: [{name: x, context: {cluster: c, namespace: %s}}]\n"
	        "current-context: x\n", ns);
	fclose(f);
	k8s_config *cfg = NULL;
	OK(k8s_config_load_yaml(&cfg, doc, n, NULL, NULL));
	free(doc);
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.max_retries = 3;
	k8s_client *c = client_with(cfg, &o);
	int64_t start = mono_ms();
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_get(c, &configmaps, ns, "x", NULL));
	int64_t elapsed = mono_ms() - start;
	k8s_client_stats s = stats_of(c);
	ck_assert_int_eq(s.requests, 4);
	ck_assert_int_eq(s.retries, 3);
	/* Backoff 100, 200, 400 ms (+ jitter). */
	ck_assert_msg(elapsed >= 700, "3 retries took %ld ms", (long)elapsed);
	cJSON *cm = json("{\"metadata\":{\"name\":\"x\"}}");
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_create(c, &configmaps, ns, cm, NULL, NULL));
	cJSON_Delete(cm);
	ck_assert_int_eq(stats_of(c).retries, 6);
	k8s_client_free(c);

	/* max_retries 0: one try. */
	o.max_retries = 0;
	c = client_with(cfg, &o);
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_get(c, &configmaps, ns, "x", NULL));
	ck_assert_int_eq(stats_of(c).requests, 1);
	k8s_client_free(c);
	k8s_config_free(cfg);
}
END_TEST

/*
 * A 503 from the real API server: an aggregated API (APIService) whose
 * Service has no endpoints. Removed right after: while an APIService is
 * unavailable, discovery is degraded for everyone (namespace deletion
 * waits), so the window is kept short.
 */
START_TEST(test_retry_503_idempotent_only)
{
	cJSON *svc = json("{\"metadata\":{\"name\":\"libk8s-nowhere\"},\"spec\":"
	                  "{\"ports\":[{\"port\":443,\"targetPort\":443}]}}");
	OK(k8s_client_create(client, &services, ns, svc, NULL, NULL));
	cJSON_Delete(svc);
	cJSON *as = json("{\"metadata\":{\"name\":\"v1.nowhere.libk8s.example\"},\"spec\":"
	                 "{\"group\":\"nowhere.libk8s.example\",\"version\":\"v1\","
	                 "\"groupPriorityMinimum\":100,\"versionPriority\":10,"
	                 "\"insecureSkipTLSVerify\":true,\"service\":{\"name\":"
	                 "\"libk8s-nowhere\",\"namespace\":\"%s\",\"port\":443}}}", ns);
	OK(k8s_client_create(client, &apiservices, NULL, as, NULL, NULL));
	cJSON_Delete(as);

	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.max_retries = 0;
	k8s_client *probe = client_with(admin_cfg, &o);
	int rc = 0;
	for (int i = 0; i < 100; i++) {  /* until the aggregator proxies it */
		rc = k8s_client_get(probe, &things, ns, "x", NULL);
		if (rc == ASB_ESERVICEUNAVAILABLE)
			break;
		usleep(100 * 1000);
	}
	k8s_client_free(probe);
	ck_assert_msg(rc == ASB_ESERVICEUNAVAILABLE, "no 503 from the APIService: %s",
	              asb_error_last()->message);

	o.max_retries = 3;
	k8s_client *c = client_with(admin_cfg, &o);
	int64_t start = mono_ms();
	FAILS_WITH(ASB_ESERVICEUNAVAILABLE, k8s_client_get(c, &things, ns, "x", NULL));
	int64_t elapsed = mono_ms() - start;
	ck_assert_int_eq(asb_error_last()->http_status, 503);
	ck_assert_int_eq(stats_of(c).retries, 3);
	ck_assert_int_eq(stats_of(c).requests, 4);
	ck_assert_msg(elapsed >= 700, "3 retries took %ld ms", (long)elapsed);
	/* DELETE is idempotent: retried too. */
	FAILS_WITH(ASB_ESERVICEUNAVAILABLE, k8s_client_delete(c, &things, ns, "x", NULL, NULL));
	ck_assert_int_eq(stats_of(c).retries, 6);
	/* POST and PATCH may have run: never sent twice. */
	cJSON *t = json("{\"metadata\":{\"name\":\"x\"}}");
	FAILS_WITH(ASB_ESERVICEUNAVAILABLE, k8s_client_create(c, &things, ns, t, NULL, NULL));
	FAILS_WITH(ASB_ESERVICEUNAVAILABLE, k8s_client_patch(c, &things, ns, "x", NULL,
	                                                     K8S_PATCH_MERGE, t, NULL, NULL));
	/* A PUT without a resourceVersion is not either; with one it is. */
	FAILS_WITH(ASB_ESERVICEUNAVAILABLE, k8s_client_update(c, &things, ns, t, NULL, NULL));
	ck_assert_int_eq(stats_of(c).retries, 6);
	cJSON *tv = json("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"1\"}}");
	FAILS_WITH(ASB_ESERVICEUNAVAILABLE, k8s_client_update(c, &things, ns, tv, NULL, NULL));
	ck_assert_int_eq(stats_of(c).retries, 9);
	cJSON_Delete(t);
	cJSON_Delete(tv);
	k8s_client_free(c);

	OK(k8s_client_delete(client, &apiservices, NULL, "v1.nowhere.libk8s.example",
	                     NULL, NULL));
	OK(k8s_client_delete(client, &services, ns, "libk8s-nowhere", NULL, NULL));
}
END_TEST

/* --- warnings ------------------------------------------------------------------ */

START_TEST(test_warning_logged_once)
{
	memlog m;
	log_open(&m, ASB_LOG_WARN);
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.logger = m.log;
	k8s_client *c = client_with(admin_cfg, &o);
	/* core/v1 ComponentStatus is deprecated: every answer carries
	 * `Warning: 299 - "v1 ComponentStatus is deprecated in v1.19+"`. */
	for (int i = 0; i < 3; i++)
		OK(k8s_client_list(c, &componentstatuses, NULL, NULL, NULL));
	ck_assert_int_eq(stats_of(c).warnings, 1);
	ck_assert_int_eq(stats_of(c).requests, 3);
	k8s_client_free(c);
	log_close(&m);
	ck_assert_msg(count_of(m.buf, "ComponentStatus is deprecated") == 1,
	              "log: %s", m.buf);
	ck_assert_ptr_nonnull(strstr(m.buf, "level=warn"));
	ck_assert_ptr_nonnull(strstr(m.buf, "API server warning"));
	free(m.buf);
}
END_TEST

/* --- pagination ------------------------------------------------------------------ */

#define PAGED 1000
#define CREATORS 8

static void *create_some(void *ud)
{
	long first = (long)ud;
	for (long i = first; i < PAGED; i += CREATORS) {
		char name[32];
		snprintf(name, sizeof(name), "paged-%04ld", i);
		cJSON *cm = json("{\"metadata\":{\"name\":\"%s\",\"labels\":"
		                 "{\"set\":\"paged\"}}}", name);
		int rc = k8s_client_create(client, &configmaps, ns, cm, NULL, NULL);
		cJSON_Delete(cm);
		if (rc)
			return (void *)1;
	}
	return NULL;
}

START_TEST(test_list_all_pages)
{
	pthread_t t[CREATORS];
	for (long i = 0; i < CREATORS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, create_some, (void *)i), 0);
	for (int i = 0; i < CREATORS; i++) {
		void *r;
		pthread_join(t[i], &r);
		ck_assert_ptr_null(r);
	}
	k8s_client *c = client_with(admin_cfg, NULL);
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.label_selector = "set=paged";
	lo.limit = 100;
	cJSON *all = NULL;
	OK(k8s_client_list_all(c, &configmaps, ns, &lo, &all));
	/* Ten pages at least (an exact multiple may end with an empty one). */
	ck_assert_int_ge(stats_of(c).requests, 10);
	ck_assert_int_le(stats_of(c).requests, 11);
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(all, "items");
	ck_assert_int_eq(cJSON_GetArraySize(items), PAGED);
	/* Every one exactly once. */
	static char seen[PAGED];
	memset(seen, 0, sizeof(seen));
	const cJSON *it;
	cJSON_ArrayForEach(it, items) {
		const char *name = str_at(it, "metadata", "name");
		ck_assert_ptr_nonnull(name);
		int idx = atoi(name + strlen("paged-"));
		ck_assert_int_ge(idx, 0);
		ck_assert_int_lt(idx, PAGED);
		ck_assert_msg(!seen[idx], "%s listed twice", name);
		seen[idx] = 1;
	}
	/* One List: the final resourceVersion, no continue. */
	ck_assert_ptr_nonnull(str_at(all, "metadata", "resourceVersion"));
	ck_assert_ptr_null(str_at(all, "metadata", "continue"));
	ck_assert_str_eq(str_at(all, "kind", NULL), "ConfigMapList");
	cJSON_Delete(all);

	/* Without a page size: 500 per page, still everything. */
	lo.limit = 0;
	OK(k8s_client_list_all(c, &configmaps, ns, &lo, &all));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(all, "items")), PAGED);
	cJSON_Delete(all);
	/* An empty result is one List with no items. */
	lo.label_selector = "set=none";
	OK(k8s_client_list_all(c, &configmaps, ns, &lo, &all));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(all, "items")), 0);
	cJSON_Delete(all);
	FAILS_WITH(ASB_EINVAL, k8s_client_list_all(c, &configmaps, ns, &lo, NULL));
	k8s_client_free(c);
}
END_TEST

/* --- the scale subresource -------------------------------------------------------- */

START_TEST(test_scale_subresource)
{
	cJSON *d = json("{\"metadata\":{\"name\":\"web\"},\"spec\":{\"replicas\":1,"
	                "\"selector\":{\"matchLabels\":{\"app\":\"web\"}},\"template\":"
	                "{\"metadata\":{\"labels\":{\"app\":\"web\"}},\"spec\":"
	                "{\"containers\":[{\"name\":\"c\",\"image\":\"example.test/web\"}]}}}}");
	OK(k8s_client_create(client, &deployments, ns, d, NULL, NULL));
	cJSON_Delete(d);
	cJSON *scale = NULL;
	OK(k8s_client_get_scale(client, &deployments, ns, "web", &scale));
	ck_assert_str_eq(str_at(scale, "kind", NULL), "Scale");
	ck_assert_str_eq(str_at(scale, "apiVersion", NULL), "autoscaling/v1");
	ck_assert_int_eq((int)num_at(scale, "spec", "replicas"), 1);
	cJSON_Delete(scale);

	OK(k8s_client_update_scale(client, &deployments, ns, "web", 3, NULL, &scale));
	ck_assert_int_eq((int)num_at(scale, "spec", "replicas"), 3);
	cJSON_Delete(scale);
	cJSON *got = NULL;
	OK(k8s_client_get(client, &deployments, ns, "web", &got));
	ck_assert_int_eq((int)num_at(got, "spec", "replicas"), 3);
	cJSON_Delete(got);

	/* A dry run changes nothing. */
	k8s_write_options wo = K8S_WRITE_OPTIONS_INIT;
	wo.dry_run = true;
	OK(k8s_client_update_scale(client, &deployments, ns, "web", 0, &wo, NULL));
	OK(k8s_client_get_scale(client, &deployments, ns, "web", &scale));
	ck_assert_int_eq((int)num_at(scale, "spec", "replicas"), 3);
	cJSON_Delete(scale);

	FAILS_WITH(ASB_EINVAL, k8s_client_update_scale(client, &deployments, ns, "web",
	                                               -1, NULL, NULL));
	FAILS_WITH(ASB_ENOTFOUND, k8s_client_get_scale(client, &deployments, ns,
	                                               "absent", NULL));
	assert_message_has("Deployment \"");
	/* ConfigMaps have no scale subresource. */
	create_cm(client, "unscalable", NULL);
	FAILS_WITH(ASB_ENOTFOUND, k8s_client_get_scale(client, &configmaps, ns,
	                                               "unscalable", NULL));
}
END_TEST

/* --- proxy-url ----------------------------------------------------------------- */

START_TEST(test_proxy_url_used)
{
	/* The connection goes to the proxy (here: nothing listens there), not
	 * to the API server. */
	k8s_config *cfg = config_with("proxy-url: 'http://127.0.0.1:1'", "{token: x}");
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.max_retries = 0;
	k8s_client *c = client_with(cfg, &o);
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_get(c, &configmaps, ns, "x", NULL));
	assert_message_has("127.0.0.1 port 1");
	k8s_client_free(c);
	k8s_config_free(cfg);

	cfg = config_with("proxy-url: 'socks5://127.0.0.1:1'", "{token: x}");
	c = client_with(cfg, &o);
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_get(c, &configmaps, ns, "x", NULL));
	k8s_client_free(c);
	k8s_config_free(cfg);
}
END_TEST

/* --- options ------------------------------------------------------------------- */

START_TEST(test_options)
{
	k8s_client_options o;
	OK(k8s_client_options_init(&o, K8S_CLIENT_OPTIONS_VERSION));
	ck_assert_int_eq(o.api_connections, 1);
	ck_assert(o.qps < 0);
	ck_assert_int_eq(o.burst, 10);
	ck_assert_int_eq(o.max_retries, 4);
	/* A caller built against version 1 still works. */
	k8s_client_options v1;
	memset(&v1, 0xAB, sizeof(v1));
	OK(k8s_client_options_init(&v1, 1));
	ck_assert_int_eq(v1.version, 1);
	ck_assert_int_eq(v1.timeout_ms, 30000);
	k8s_client *c = client_with(admin_cfg, &v1);  /* the 0xAB tail is ignored */
	OK(k8s_client_get(c, &k8s_resource_namespaces, NULL, ns, NULL));
	k8s_client_free(c);

	k8s_client *bad = NULL;
	o.api_connections = 65;
	FAILS_WITH(ASB_EINVAL, k8s_client_new(&bad, admin_cfg, &o));
	o.api_connections = 1;
	o.qps = 5;
	o.burst = 0;
	FAILS_WITH(ASB_EINVAL, k8s_client_new(&bad, admin_cfg, &o));
	o.burst = 1;
	o.max_retries = -1;
	FAILS_WITH(ASB_EINVAL, k8s_client_new(&bad, admin_cfg, &o));
	o.version = K8S_CLIENT_OPTIONS_VERSION + 1;
	FAILS_WITH(ASB_EINVAL, k8s_client_new(&bad, admin_cfg, &o));
	ck_assert_ptr_null(bad);
	k8s_client_stats s = { .version = 9 };
	FAILS_WITH(ASB_EINVAL, k8s_client_stats_get(client, &s));
}
END_TEST

/* --- setup ------------------------------------------------------------------- */

static int setup(void)
{
	snprintf(ns, sizeof(ns), "libk8s-tr-%ld-%d", (long)time(NULL) % 100000,
	         (int)getpid());
	cJSON *o = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(o, "metadata");
	cJSON_AddStringToObject(md, "name", ns);
	int rc = k8s_client_create(client, &k8s_resource_namespaces, NULL, o, NULL, NULL);
	cJSON_Delete(o);
	if (rc)
		return rc;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/k8s-it-transport-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	char path[128];
	snprintf(path, sizeof(path), "%s/plugin.sh", tmpdir);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(plugin_script, f);
	fclose(f);
	chmod(path, 0700);
	snprintf(path, sizeof(path), "%s/token", tmpdir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(test_user_token, f);
	fclose(f);
	chmod(path, 0600);
	return 0;
}

static void remove_tmpdir(void)
{
	const char *names[] = { "plugin.sh", "token", "runs", "kubeconfig" };
	char path[128];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
}

/* The static token of the test user, from test-user.kubeconfig next to $KUBECONFIG. */
static char *read_test_user_token(const char *kubeconfig)
{
	char *copy = strdup(kubeconfig);
	char path[1024];
	snprintf(path, sizeof(path), "%s/test-user.kubeconfig", dirname(copy));
	free(copy);
	k8s_config *cfg = NULL;
	if (k8s_config_load(&cfg, path, NULL) != 0 || !cfg->token) {
		fprintf(stderr, "test_client_transport: %s: %s (the local cluster writes "
		        "it; see tools/local-cluster status)\n", path,
		        asb_error_last()->message);
		k8s_config_free(cfg);
		return NULL;
	}
	char *t = strdup(cfg->token);
	k8s_config_free(cfg);
	return t;
}

static Suite *transport_suite(void)
{
	Suite *s = suite_create("client_transport");
	TCase *tc = tcase_create("auth");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_exec_plugin_auth);
	tcase_add_test(tc, test_exec_plugin_refresh_on_401);
	tcase_add_test(tc, test_exec_plugin_failures);
	tcase_add_test(tc, test_proxy_url_used);
	tcase_add_test(tc, test_incluster_token_rotation);
	suite_add_tcase(s, tc);

	tc = tcase_create("transport");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_http2_negotiated);
	tcase_add_test(tc, test_sharded_threads);
	tcase_add_test(tc, test_watch_connection_sharing);
	tcase_add_test(tc, test_qps_limit);
	tcase_add_test(tc, test_retry_connection_refused);
	tcase_add_test(tc, test_retry_503_idempotent_only);
	tcase_add_test(tc, test_warning_logged_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("verbs");
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, test_list_all_pages);
	tcase_add_test(tc, test_scale_subresource);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *kc = getenv("KUBECONFIG");
	if (!kc || !kc[0]) {
		fprintf(stderr, "test_client_transport: KUBECONFIG is not set; point it "
		        "at the admin kubeconfig of a real cluster (tools/local-cluster "
		        "up prints one)\n");
		return EXIT_FAILURE;
	}
	if (k8s_global_init() < 0 ||
	    k8s_config_load(&admin_cfg, NULL, NULL) != 0 ||
	    k8s_client_new(&client, admin_cfg, NULL) != 0) {
		fprintf(stderr, "test_client_transport: %s\n", asb_error_last()->message);
		return EXIT_FAILURE;
	}
	if (!admin_cfg->ca.data || !admin_cfg->cert.data) {
		fprintf(stderr, "test_client_transport: %s: expected an admin kubeconfig "
		        "with a CA and a client certificate\n", kc);
		return EXIT_FAILURE;
	}
	if (!(test_user_token = read_test_user_token(kc)))
		return EXIT_FAILURE;
	if (setup() != 0) {
		fprintf(stderr, "test_client_transport: setup: %s\n",
		        asb_error_last()->message);
		return EXIT_FAILURE;
	}
	printf("test_client_transport: server %s, namespace %s\n",
	       k8s_config_server(admin_cfg), ns);

	SRunner *sr = srunner_create(transport_suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);

	/* Leave nothing behind even when a test failed half-way. */
	k8s_client_delete(client, &apiservices, NULL, "v1.nowhere.libk8s.example",
	                  NULL, NULL);
	k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
	d.propagation_policy = "Background";
	k8s_client_delete(client, &k8s_resource_namespaces, NULL, ns, &d, NULL);
	remove_tmpdir();
	free(test_user_token);
	k8s_client_free(client);
	k8s_config_free(admin_cfg);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
