/*
 * Integration test of the informer's list+watch loop across a kube-apiserver
 * restart (tools/local-cluster restart kube-apiserver):
 * - resume: after the restart the watch continues from the last
 *   resourceVersion, and no event is lost or delivered twice;
 * - relist: when the last resourceVersion was compacted away in etcd while
 *   the watch was down, the watch answers 410 Gone, the informer relists and
 *   its cache equals the server's state again (deletes it missed included).
 * Needs $KUBECONFIG (admin), $LIBK8S_TEST_ETCD_URL (the cluster's etcd) and
 * the same AGENT_SANDBOX_* environment that started the cluster.
 */
#include <check.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/informer.h"
#include "k8s/object.h"
#include "asb/map.h"
#include "live.h"

static k8s_client *client;
/* each test labels its objects differently, so they never see each other's */
static const char *selector;
static char ns[64], other_ns[64];
static const k8s_resource configmaps = { "", "v1", "configmaps", "ConfigMap", true };

/* Every event the informer delivered, per object name. */
typedef struct {
	pthread_mutex_t lock;
	asb_map adds, deletes;  /* name -> (intptr_t) count */
	int updates;
} record;

static void bump(asb_map *m, const char *name)
{
	intptr_t n = (intptr_t)asb_map_get(m, name);
	asb_map_set(m, name, (void *)(n + 1), NULL);
}

static void on_add(const cJSON *o, void *ud)
{
	record *r = ud;
	pthread_mutex_lock(&r->lock);
	bump(&r->adds, k8s_obj_name(o));
	pthread_mutex_unlock(&r->lock);
}

static void on_update(const cJSON *a, const cJSON *b, void *ud)
{
	record *r = ud;
	pthread_mutex_lock(&r->lock);
	r->updates++;
	pthread_mutex_unlock(&r->lock);
}

static void on_delete(const cJSON *o, void *ud)
{
	record *r = ud;
	pthread_mutex_lock(&r->lock);
	bump(&r->deletes, k8s_obj_name(o));
	pthread_mutex_unlock(&r->lock);
}

static int count(record *r, asb_map *m, const char *name)
{
	pthread_mutex_lock(&r->lock);
	int n = (int)(intptr_t)asb_map_get(m, name);
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void create_cm(const char *in_ns, const char *name, const char *label)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"%s\":\"x\"}}}", name, label);
	cJSON *o = cJSON_Parse(buf);
	int rc = k8s_client_create(client, &configmaps, in_ns, o, NULL, NULL);
	cJSON_Delete(o);
	ck_assert_msg(rc == 0, "create %s: %s", name, asb_error_last()->message);
}

static void restart_apiserver(void)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s/tools/local-cluster restart kube-apiserver >/dev/null 2>&1", SOURCE_ROOT);
	ck_assert_int_eq(system(cmd), 0);
}

/* True when the informer's cache holds exactly what the server lists. */
static bool cache_matches_server(k8s_informer *inf)
{
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.label_selector = selector;
	cJSON *list = NULL;
	if (k8s_client_list(client, &configmaps, ns, &lo, &list) < 0)
		return false;
	cJSON *items = cJSON_GetObjectItem(list, "items");
	bool same = (size_t)cJSON_GetArraySize(items) == k8s_informer_size(inf);
	const cJSON *it;
	cJSON_ArrayForEach(it, items) {
		cJSON *c = NULL;
		if (!same || k8s_informer_get(inf, ns, k8s_obj_name(it), &c) < 0) {
			same = false;
			break;
		}
		same = strcmp(k8s_obj_resource_version(c), k8s_obj_resource_version(it)) == 0;
		cJSON_Delete(c);
	}
	cJSON_Delete(list);
	return same;
}

#define WAIT_FOR(cond, secs) do { \
	int _i; \
	for (_i = 0; _i < (secs) * 10 && !(cond); _i++) usleep(100000); \
	ck_assert_msg((cond), "timed out waiting for " #cond); \
} while (0)

static k8s_informer *start_informer(record *r, asb_logger *log)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	asb_map_init(&r->adds);
	asb_map_init(&r->deletes);
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.namespace_ = ns;
	o.label_selector = selector;
	o.on_add = on_add;
	o.on_update = on_update;
	o.on_delete = on_delete;
	o.userdata = r;
	o.logger = log;
	k8s_informer *inf;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	ck_assert_int_eq(k8s_informer_start(inf), 0);
	ck_assert_int_eq(k8s_informer_wait_synced(inf, 30000), 0);
	return inf;
}

START_TEST(watch_resumes_across_apiserver_restart)
{
	record r;
	selector = "resume-test";
	k8s_informer *inf = start_informer(&r, NULL);
	char name[32];
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "before-%d", i);
		create_cm(ns, name, "resume-test");
	}
	WAIT_FOR(k8s_informer_size(inf) == 10, 30);

	restart_apiserver();

	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "after-%d", i);
		create_cm(ns, name, "resume-test");
	}
	ck_assert_int_eq(k8s_client_delete(client, &configmaps, ns, "before-0", NULL, NULL), 0);
	WAIT_FOR(cache_matches_server(inf), 60);
	/* every object was added exactly once, the deleted one deleted once */
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "before-%d", i);
		ck_assert_int_eq(count(&r, &r.adds, name), 1);
		snprintf(name, sizeof(name), "after-%d", i);
		ck_assert_int_eq(count(&r, &r.adds, name), 1);
	}
	ck_assert_int_eq(count(&r, &r.deletes, "before-0"), 1);
	ck_assert_int_eq(r.updates, 0);
	k8s_informer_free(inf);
	asb_map_clear(&r.adds, NULL);
	asb_map_clear(&r.deletes, NULL);
}
END_TEST

/* ---- etcd compaction through its HTTP gateway (v3 JSON API) ---- */

static size_t grow(char *p, size_t sz, size_t n, void *ud)
{
	char **buf = ud;
	size_t have = *buf ? strlen(*buf) : 0;
	char *b = realloc(*buf, have + sz * n + 1);
	if (!b)
		return 0;
	memcpy(b + have, p, sz * n);
	b[have + sz * n] = '\0';
	*buf = b;
	return sz * n;
}

static cJSON *etcd_post(const char *path, const char *body)
{
	const char *base = getenv("LIBK8S_TEST_ETCD_URL");
	char url[256];
	snprintf(url, sizeof(url), "%s%s", base, path);
	CURL *h = curl_easy_init();
	char *out = NULL;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, grow);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
	CURLcode rc = curl_easy_perform(h);
	curl_easy_cleanup(h);
	ck_assert_msg(rc == CURLE_OK, "etcd %s: %s", path, curl_easy_strerror(rc));
	cJSON *j = cJSON_Parse(out);
	free(out);
	ck_assert_ptr_nonnull(j);
	return j;
}

static void compact_etcd(void)
{
	/* key "/" base64 "Lw==": any range answers with the current revision */
	cJSON *r = etcd_post("/v3/kv/range", "{\"key\":\"Lw==\",\"limit\":1}");
	const char *rev = k8s_obj_str(r, "header.revision");
	ck_assert_ptr_nonnull(rev);
	char body[128];
	snprintf(body, sizeof(body), "{\"revision\":\"%s\",\"physical\":true}", rev);
	cJSON_Delete(r);
	cJSON_Delete(etcd_post("/v3/kv/compaction", body));
}

START_TEST(relist_after_410_when_history_was_compacted)
{
	ck_assert_msg(getenv("LIBK8S_TEST_ETCD_URL"), "LIBK8S_TEST_ETCD_URL must name the cluster's etcd");
	char *logbuf = NULL;
	size_t loglen = 0;
	FILE *logf = open_memstream(&logbuf, &loglen);
	asb_logger *log;
	asb_logger_new(&log, logf, ASB_LOG_TEXT, ASB_LOG_INFO);
	record r;
	char name[32];
	selector = "relist-test";
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "keep-%d", i);
		create_cm(ns, name, selector);
	}
	k8s_informer *inf = start_informer(&r, log);
	ck_assert_uint_eq(k8s_informer_size(inf), 5);
	/* history the informer never sees (another namespace), then compaction:
	 * the informer's last resourceVersion is now older than etcd keeps */
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "noise-%d", i);
		create_cm(other_ns, name, "noise");
	}
	compact_etcd();
	restart_apiserver();
	/* a change while the informer reconnects: it must still be reflected */
	ck_assert_int_eq(k8s_client_delete(client, &configmaps, ns, "keep-0", NULL, NULL), 0);
	WAIT_FOR(cache_matches_server(inf), 60);
	ck_assert_uint_eq(k8s_informer_size(inf), 4);
	ck_assert_int_eq(count(&r, &r.deletes, "keep-0"), 1);
	for (int i = 1; i < 5; i++) {
		snprintf(name, sizeof(name), "keep-%d", i);
		ck_assert_int_eq(count(&r, &r.adds, name), 1);  /* relist found them unchanged */
	}
	k8s_informer_free(inf);
	fflush(logf);
	ck_assert_msg(strstr(logbuf, "relisting") != NULL, "no relist in the informer log:\n%s", logbuf);
	fclose(logf);
	free(logbuf);
	asb_logger_free(log);
	asb_map_clear(&r.adds, NULL);
	asb_map_clear(&r.deletes, NULL);
}
END_TEST

int main(void)
{
	client = live_connect("test_watch_resume");
	live_namespace(client, "test_watch_resume", "resume", ns, sizeof(ns));
	live_namespace(client, "test_watch_resume", "noise", other_ns, sizeof(other_ns));

	Suite *s = suite_create("watch_resume");
	TCase *tc = tcase_create("live");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, watch_resumes_across_apiserver_restart);
	tcase_add_test(tc, relist_after_410_when_history_was_compacted);
	suite_add_tcase(s, tc);
	int failed = live_run(s);

	live_delete_namespace(client, ns);
	live_delete_namespace(client, other_ns);
	k8s_client_free(client);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
