/*
 * test_client_rest.c - the REST client (libk8s/src/client.c) against a real
 * kube-apiserver, reached with the admin kubeconfig in $KUBECONFIG
 * (tools/local-cluster up prints one).
 *
 * Everything happens in a fresh namespace that is deleted at the end:
 * ConfigMap CRUD with optimistic concurrency, paging, every patch type,
 * delete options, Pod status writes, watches (events, cancel, 410), a
 * bearer-token client, tls-server-name, and many threads on one client.
 */
#include <check.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <curl/curl.h>
#include <mbedtls/base64.h>
#include "k8s/client.h"
#include "asb/log.h"
#include "config_internal.h"

static k8s_client *client;
static k8s_config *admin_cfg;
static char ns[64];

static const k8s_resource configmaps = { "", "v1", "configmaps", "ConfigMap", true };
static const k8s_resource secrets = { "", "v1", "secrets", "Secret", true };
static const k8s_resource serviceaccounts =
	{ "", "v1", "serviceaccounts", "ServiceAccount", true };
static const k8s_resource rolebindings =
	{ "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true };

/* --- helpers ------------------------------------------------------------- */

/* Parses printf-formatted JSON; fails the test on a typo. */
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

static const char *rv_of(const cJSON *o)
{
	return str_at(o, "metadata", "resourceVersion");
}

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

static cJSON *configmap(const char *name, const char *labels, const char *data)
{
	return json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	            "{\"name\":\"%s\",\"labels\":{%s}},\"data\":{%s}}",
	            name, labels ? labels : "", data ? data : "");
}

static void create_cm(const char *name, const char *labels, const char *data)
{
	cJSON *cm = configmap(name, labels, data);
	OK(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL));
	cJSON_Delete(cm);
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
 * A kubeconfig document for the admin's cluster with extra cluster fields
 * and the given user body (both YAML flow-mapping members).
 */
static char *kubeconfig_doc(const char *server, const char *cluster_extra,
                            const char *user)
{
	char *ca = b64(admin_cfg->ca.data, admin_cfg->ca.len);
	size_t n = strlen(ca) + strlen(user) + 1024;
	char *doc = malloc(n);
	ck_assert_ptr_nonnull(doc);
	snprintf(doc, n,
	         "apiVersion: v1\nkind: Config\ncurrent-context: it\n"
	         "clusters:\n- name: c\n  cluster: {server: '%s', "
	         "certificate-authority-data: %s%s%s}\n"
	         "users:\n- name: u\n  user: {%s}\n"
	         "contexts:\n- name: it\n  context: {cluster: c, user: u, "
	         "namespace: %s}\n",
	         server ? server : admin_cfg->server, ca,
	         cluster_extra ? ", " : "", cluster_extra ? cluster_extra : "",
	         user, ns);
	free(ca);
	return doc;
}

static k8s_client *client_from_doc_opts(const char *doc,
                                        const k8s_client_options *opts)
{
	k8s_config *cfg = NULL;
	k8s_client *c = NULL;
	OK(k8s_config_load_yaml(&cfg, doc, strlen(doc), NULL, "test-kubeconfig"));
	OK(k8s_client_new(&c, cfg, opts));
	k8s_config_free(cfg);
	return c;
}

static k8s_client *client_from_doc(const char *doc)
{
	return client_from_doc_opts(doc, NULL);
}

/* The admin's client certificate and key as kubeconfig user fields. */
static char *admin_user_fields(void)
{
	char *cert = b64(admin_cfg->cert.data, admin_cfg->cert.len);
	char *key = b64(admin_cfg->key.data, admin_cfg->key.len);
	size_t n = strlen(cert) + strlen(key) + 128;
	char *user = malloc(n);
	ck_assert_ptr_nonnull(user);
	snprintf(user, n, "client-certificate-data: %s, client-key-data: %s", cert, key);
	free(cert);
	free(key);
	return user;
}

typedef struct {
	char *data;
	size_t len;
} sbuf_t;

static size_t collect_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
	sbuf_t *b = ud;
	size_t n = size * nmemb;
	char *d = realloc(b->data, b->len + n + 1);
	if (!d)
		return 0;
	memcpy(d + b->len, ptr, n);
	b->len += n;
	d[b->len] = '\0';
	b->data = d;
	return n;
}

/* --- ConfigMap CRUD ----------------------------------------------------------- */

START_TEST(test_crud)
{
	cJSON *cm = configmap("crud", "\"app\":\"it\"", "\"a\":\"1\"");
	cJSON *created = NULL, *got = NULL, *updated = NULL, *out = NULL;

	OK(k8s_client_create(client, &configmaps, ns, cm, NULL, &created));
	ck_assert_str_eq(str_at(created, "metadata", "name"), "crud");
	ck_assert_str_eq(str_at(created, "metadata", "namespace"), ns);
	ck_assert_ptr_nonnull(rv_of(created));

	OK(k8s_client_get(client, &configmaps, ns, "crud", &got));
	ck_assert_str_eq(str_at(got, "data", "a"), "1");
	ck_assert_str_eq(rv_of(got), rv_of(created));

	/* Update with the current resourceVersion. */
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(got, "data"), "a",
	                          cJSON_CreateString("2"));
	OK(k8s_client_update(client, &configmaps, ns, got, NULL, &updated));
	ck_assert_str_eq(str_at(updated, "data", "a"), "2");
	ck_assert_str_ne(rv_of(updated), rv_of(created));

	/* The same write again carries a stale resourceVersion. */
	FAILS_WITH(ASB_ECONFLICT, k8s_client_update(client, &configmaps, ns, got,
	                                            NULL, &out));
	ck_assert_ptr_null(out);
	ck_assert_str_eq(asb_error_last()->reason, "Conflict");
	ck_assert_int_eq(asb_error_last()->http_status, 409);
	char subject[128];
	snprintf(subject, sizeof(subject), "ConfigMap \"%s/crud\": ", ns);
	assert_message_has(subject);
	assert_message_has("the object has been modified");

	/* Merge patch: add a key, remove another. */
	cJSON *merge = json("{\"data\":{\"b\":\"x\",\"a\":null}}");
	OK(k8s_client_patch(client, &configmaps, ns, "crud", NULL, K8S_PATCH_MERGE,
	                    merge, NULL, &out));
	ck_assert_str_eq(str_at(out, "data", "b"), "x");
	ck_assert_ptr_null(str_at(out, "data", "a"));
	cJSON_Delete(out);

	/* JSON patch: test-and-replace, then a failing test. */
	cJSON *jp = json("[{\"op\":\"test\",\"path\":\"/data/b\",\"value\":\"x\"},"
	                 "{\"op\":\"replace\",\"path\":\"/data/b\",\"value\":\"y\"},"
	                 "{\"op\":\"add\",\"path\":\"/metadata/labels/patched\","
	                 "\"value\":\"json\"}]");
	OK(k8s_client_patch(client, &configmaps, ns, "crud", NULL, K8S_PATCH_JSON,
	                    jp, NULL, &out));
	ck_assert_str_eq(str_at(out, "data", "b"), "y");
	cJSON_Delete(out);
	int rc = k8s_client_patch(client, &configmaps, ns, "crud", NULL,
	                          K8S_PATCH_JSON, jp, NULL, &out);
	ck_assert_msg(rc == ASB_EINVALID || rc == ASB_EUNSUPPORTEDMEDIA ||
	              rc == ASB_EBADREQUEST || rc == ASB_ECONFLICT,
	              "failed JSON patch test: rc %d: %s", rc, asb_error_last()->message);
	ck_assert_ptr_null(out);

	/* Strategic merge patch (ConfigMap is a core kind). */
	cJSON *sp = json("{\"data\":{\"s\":\"1\"}}");
	OK(k8s_client_patch(client, &configmaps, ns, "crud", NULL,
	                    K8S_PATCH_STRATEGIC, sp, NULL, &out));
	ck_assert_str_eq(str_at(out, "data", "s"), "1");
	cJSON_Delete(out);

	/* Delete, then it is gone. */
	OK(k8s_client_delete(client, &configmaps, ns, "crud", NULL, &out));
	ck_assert_ptr_nonnull(out);
	cJSON_Delete(out);
	FAILS_WITH(ASB_ENOTFOUND, k8s_client_get(client, &configmaps, ns, "crud", &out));
	FAILS_WITH(ASB_ENOTFOUND, k8s_client_delete(client, &configmaps, ns, "crud",
	                                            NULL, NULL));

	cJSON_Delete(sp);
	cJSON_Delete(jp);
	cJSON_Delete(merge);
	cJSON_Delete(updated);
	cJSON_Delete(got);
	cJSON_Delete(created);
	cJSON_Delete(cm);
}
END_TEST

START_TEST(test_create_twice)
{
	cJSON *cm = configmap("twice", NULL, NULL);
	OK(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL));
	FAILS_WITH(ASB_EALREADYEXISTS, k8s_client_create(client, &configmaps, ns, cm,
	                                                 NULL, NULL));
	ck_assert_str_eq(asb_error_last()->reason, "AlreadyExists");
	ck_assert_int_eq(asb_error_last()->http_status, 409);
	assert_message_has("already exists (AlreadyExists)");
	cJSON_Delete(cm);
}
END_TEST

START_TEST(test_get_missing)
{
	cJSON *out = (cJSON *)1;
	FAILS_WITH(ASB_ENOTFOUND, k8s_client_get(client, &configmaps, ns, "nope", &out));
	ck_assert_ptr_null(out);
	char want[256];
	snprintf(want, sizeof(want),
	         "ConfigMap \"%s/nope\": configmaps \"nope\" not found (NotFound)", ns);
	ck_assert_str_eq(asb_error_last()->message, want);
	ck_assert_str_eq(asb_error_last()->reason, "NotFound");
	ck_assert_int_eq(asb_error_last()->http_status, 404);
}
END_TEST

START_TEST(test_default_namespace)
{
	/* ns NULL: the object's namespace, else the client's context. */
	cJSON *cm = json("{\"metadata\":{\"name\":\"nsdefault\",\"namespace\":\"%s\"}}", ns);
	OK(k8s_client_create(client, &configmaps, NULL, cm, NULL, NULL));
	cJSON_Delete(cm);

	char *user = admin_user_fields();
	char *doc = kubeconfig_doc(NULL, NULL, user);
	k8s_client *c = client_from_doc(doc);
	ck_assert_str_eq(k8s_client_namespace(c), ns);
	cJSON *out = NULL;
	OK(k8s_client_get(c, &configmaps, NULL, "nsdefault", &out));
	cJSON_Delete(out);
	k8s_client_free(c);
	free(doc);
	free(user);
}
END_TEST

START_TEST(test_list_selector_and_paging)
{
	char name[32];
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "page-%d", i);
		create_cm(name, "\"group\":\"paged\"", NULL);
	}
	create_cm("other-1", "\"group\":\"other\"", NULL);
	create_cm("other-2", NULL, NULL);

	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	cJSON *list = NULL;
	lo.label_selector = "group=paged";
	OK(k8s_client_list(client, &configmaps, ns, &lo, &list));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 5);
	ck_assert_ptr_nonnull(rv_of(list));
	cJSON_Delete(list);

	/* Set-based selectors need escaping in the query. */
	lo.label_selector = "group in (paged,other),group!=paged";
	OK(k8s_client_list(client, &configmaps, ns, &lo, &list));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 1);
	cJSON_Delete(list);

	lo.label_selector = NULL;
	lo.field_selector = "metadata.name=page-3";
	OK(k8s_client_list(client, &configmaps, ns, &lo, &list));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 1);
	cJSON_Delete(list);

	/* Pages of two: 2 + 2 + 1, each name once. */
	lo.field_selector = NULL;
	lo.label_selector = "group=paged";
	lo.limit = 2;
	char token[1024] = "";
	int pages = 0, total = 0, seen[5] = { 0 };
	do {
		lo.continue_token = token[0] ? token : NULL;
		OK(k8s_client_list(client, &configmaps, ns, &lo, &list));
		const cJSON *item;
		int n = 0;
		cJSON_ArrayForEach(item, cJSON_GetObjectItem(list, "items")) {
			const char *nm = str_at(item, "metadata", "name");
			ck_assert_int_eq(strncmp(nm, "page-", 5), 0);
			seen[nm[5] - '0']++;
			n++;
		}
		ck_assert_int_le(n, 2);
		total += n;
		pages++;
		const char *cont = str_at(list, "metadata", "continue");
		snprintf(token, sizeof(token), "%s", cont ? cont : "");
		cJSON_Delete(list);
	} while (token[0] && pages < 10);
	ck_assert_int_eq(pages, 3);
	ck_assert_int_eq(total, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(seen[i], 1);

	/* All namespaces. */
	k8s_list_options all = K8S_LIST_OPTIONS_INIT;
	all.label_selector = "group=paged";
	OK(k8s_client_list(client, &configmaps, NULL, &all, &list));
	ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(list, "items")), 5);
	cJSON_Delete(list);
}
END_TEST

START_TEST(test_write_options)
{
	cJSON *cm = configmap("dry", NULL, "\"k\":\"v\"");
	cJSON *out = NULL;
	k8s_write_options wo = K8S_WRITE_OPTIONS_INIT;

	/* Dry run: answered, not stored. */
	wo.dry_run = true;
	OK(k8s_client_create(client, &configmaps, ns, cm, &wo, &out));
	ck_assert_str_eq(str_at(out, "metadata", "name"), "dry");
	cJSON_Delete(out);
	FAILS_WITH(ASB_ENOTFOUND, k8s_client_get(client, &configmaps, ns, "dry", &out));

	/* fieldManager is recorded in managedFields. */
	wo.dry_run = false;
	wo.field_manager = "libk8s-it";
	OK(k8s_client_create(client, &configmaps, ns, cm, &wo, &out));
	char *text = cJSON_PrintUnformatted(cJSON_GetObjectItem(
		cJSON_GetObjectItem(out, "metadata"), "managedFields"));
	ck_assert_ptr_nonnull(strstr(text, "\"manager\":\"libk8s-it\""));
	free(text);
	cJSON_Delete(out);

	/* generateName: the server names it. */
	cJSON *gen = json("{\"metadata\":{\"generateName\":\"gen-\"}}");
	OK(k8s_client_create(client, &configmaps, ns, gen, NULL, &out));
	ck_assert_int_eq(strncmp(str_at(out, "metadata", "name"), "gen-", 4), 0);
	cJSON_Delete(out);
	cJSON_Delete(gen);

	/* An invalid object: the causes reach the message. */
	cJSON *bad = json("{\"metadata\":{\"name\":\"Not_Valid\"}}");
	FAILS_WITH(ASB_EINVALID, k8s_client_create(client, &configmaps, ns, bad, NULL, NULL));
	assert_message_has("ConfigMap \"");
	assert_message_has("Not_Valid");
	assert_message_has("(Invalid)");
	cJSON_Delete(bad);
	cJSON_Delete(cm);
}
END_TEST

START_TEST(test_server_side_apply)
{
	cJSON *doc = json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	                  "{\"name\":\"applied\"},\"data\":{\"k\":\"one\"}}");
	cJSON *doc2 = json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	                   "{\"name\":\"applied\"},\"data\":{\"k\":\"two\"}}");
	cJSON *out = NULL;
	k8s_write_options a = K8S_WRITE_OPTIONS_INIT, b = K8S_WRITE_OPTIONS_INIT;
	a.field_manager = "manager-a";
	b.field_manager = "manager-b";

	/* Apply needs a field manager. */
	FAILS_WITH(ASB_EINVAL, k8s_client_patch(client, &configmaps, ns, "applied", NULL,
	                                        K8S_PATCH_APPLY, doc, NULL, NULL));
	OK(k8s_client_patch(client, &configmaps, ns, "applied", NULL, K8S_PATCH_APPLY,
	                    doc, &a, &out));
	ck_assert_str_eq(str_at(out, "data", "k"), "one");
	cJSON_Delete(out);
	/* Another manager taking the field over conflicts, unless forced. */
	FAILS_WITH(ASB_ECONFLICT, k8s_client_patch(client, &configmaps, ns, "applied",
	                                           NULL, K8S_PATCH_APPLY, doc2, &b, NULL));
	assert_message_has("manager-a");
	b.force = true;
	OK(k8s_client_patch(client, &configmaps, ns, "applied", NULL, K8S_PATCH_APPLY,
	                    doc2, &b, &out));
	ck_assert_str_eq(str_at(out, "data", "k"), "two");
	cJSON_Delete(out);
	cJSON_Delete(doc);
	cJSON_Delete(doc2);
}
END_TEST

START_TEST(test_delete_options)
{
	cJSON *created = NULL, *out = NULL;
	cJSON *cm = configmap("del", NULL, NULL);
	OK(k8s_client_create(client, &configmaps, ns, cm, NULL, &created));

	k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
	/* Dry run: still there afterwards. */
	d.dry_run = true;
	OK(k8s_client_delete(client, &configmaps, ns, "del", &d, NULL));
	OK(k8s_client_get(client, &configmaps, ns, "del", &out));
	cJSON_Delete(out);

	/* A UID precondition that does not match refuses. */
	d.dry_run = false;
	d.precondition_uid = "00000000-0000-0000-0000-000000000000";
	FAILS_WITH(ASB_ECONFLICT, k8s_client_delete(client, &configmaps, ns, "del", &d, NULL));
	assert_message_has("precondition");
	assert_message_has("(Conflict)");

	/* Matching preconditions, foreground propagation, no grace period. */
	d.precondition_uid = str_at(created, "metadata", "uid");
	d.precondition_resource_version = rv_of(created);
	d.propagation_policy = "Foreground";
	d.grace_period_seconds = 0;
	OK(k8s_client_delete(client, &configmaps, ns, "del", &d, &out));
	cJSON_Delete(out);
	/* Foreground deletion may linger while its finalizer runs. */
	int rc = 0;
	for (int i = 0; i < 50; i++) {
		rc = k8s_client_get(client, &configmaps, ns, "del", &out);
		if (rc == ASB_ENOTFOUND)
			break;
		cJSON_Delete(out);
		usleep(100 * 1000);
	}
	ck_assert_int_eq(rc, ASB_ENOTFOUND);
	cJSON_Delete(created);
	cJSON_Delete(cm);
}
END_TEST

/* --- Pod status ------------------------------------------------------------- */

START_TEST(test_pod_status)
{
	/* No scheduler picks this Pod up, so nothing else writes its status. */
	cJSON *pod = json("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
	                  "{\"name\":\"st\"},\"spec\":{\"schedulerName\":"
	                  "\"libk8s-no-such-scheduler\",\"containers\":[{\"name\":\"c\","
	                  "\"image\":\"registry.invalid/none:1\"}]}}");
	cJSON *got = NULL, *out = NULL;
	OK(k8s_client_create(client, &k8s_resource_pods, ns, pod, NULL, NULL));
	OK(k8s_client_get(client, &k8s_resource_pods, ns, "st", &got));

	cJSON *status = cJSON_GetObjectItem(got, "status");
	ck_assert_ptr_nonnull(status);
	cJSON_DeleteItemFromObject(status, "message");
	cJSON_AddStringToObject(status, "message", "set by update_status");
	cJSON_DeleteItemFromObject(status, "reason");
	cJSON_AddStringToObject(status, "reason", "LibK8sTest");
	/* A spec change sent to /status is ignored by the server. */
	cJSON_AddStringToObject(cJSON_GetObjectItem(got, "spec"), "hostname", "ignored");
	OK(k8s_client_update_status(client, &k8s_resource_pods, ns, got, NULL, &out));
	ck_assert_str_eq(str_at(out, "status", "message"), "set by update_status");
	ck_assert_str_eq(str_at(out, "status", "reason"), "LibK8sTest");
	ck_assert_ptr_null(str_at(out, "spec", "hostname"));
	cJSON_Delete(out);

	/* Stale resourceVersion on status too. */
	FAILS_WITH(ASB_ECONFLICT, k8s_client_update_status(client, &k8s_resource_pods,
	                                                   ns, got, NULL, NULL));
	char subject[128];
	snprintf(subject, sizeof(subject), "Pod \"%s/st\"", ns);
	assert_message_has(subject);

	/* Merge patch of the status subresource. */
	cJSON *patch = json("{\"status\":{\"message\":\"patched\"}}");
	OK(k8s_client_patch(client, &k8s_resource_pods, ns, "st", "status",
	                    K8S_PATCH_MERGE, patch, NULL, &out));
	ck_assert_str_eq(str_at(out, "status", "message"), "patched");
	ck_assert_str_eq(str_at(out, "status", "reason"), "LibK8sTest");
	cJSON_Delete(out);
	OK(k8s_client_get(client, &k8s_resource_pods, ns, "st", &out));
	ck_assert_str_eq(str_at(out, "status", "message"), "patched");
	cJSON_Delete(out);

	k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
	d.grace_period_seconds = 0;
	OK(k8s_client_delete(client, &k8s_resource_pods, ns, "st", &d, NULL));
	cJSON_Delete(patch);
	cJSON_Delete(got);
	cJSON_Delete(pod);
}
END_TEST

/* --- watch ------------------------------------------------------------------ */

typedef struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int added, modified, deleted, bookmarks, other;
	atomic_int cancel;
	int64_t cancelled_at_ms;
} watch_state;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int on_watch_event(k8s_watch_event_type type, cJSON *obj, void *ud)
{
	watch_state *w = ud;
	const char *name = str_at(obj, "metadata", "name");
	pthread_mutex_lock(&w->lock);
	if (type == K8S_WATCH_BOOKMARK)
		w->bookmarks++;
	else if (!name || strcmp(name, "watched") != 0)
		w->other++;
	else if (type == K8S_WATCH_ADDED)
		w->added++;
	else if (type == K8S_WATCH_MODIFIED)
		w->modified++;
	else if (type == K8S_WATCH_DELETED)
		w->deleted++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	cJSON_Delete(obj);
	return 0;
}

/* Makes the changes from another thread, then cancels the watch. */
static void *watch_writer(void *ud)
{
	watch_state *w = ud;
	cJSON *cm = configmap("watched", "\"watch\":\"yes\"", "\"v\":\"1\"");
	cJSON *out = NULL, *patch = json("{\"data\":{\"v\":\"2\"}}");
	int ok = k8s_client_create(client, &configmaps, ns, cm, NULL, NULL) == 0 &&
	         k8s_client_patch(client, &configmaps, ns, "watched", NULL,
	                          K8S_PATCH_MERGE, patch, NULL, &out) == 0 &&
	         k8s_client_delete(client, &configmaps, ns, "watched", NULL, NULL) == 0;
	if (!ok)
		fprintf(stderr, "watch writer: %s\n", asb_error_last()->message);
	cJSON_Delete(out);
	cJSON_Delete(patch);
	cJSON_Delete(cm);

	/* Wait (bounded) for the watcher to see all three, then cancel. */
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 20;
	pthread_mutex_lock(&w->lock);
	while (ok && w->deleted == 0 &&
	       pthread_cond_timedwait(&w->cond, &w->lock, &deadline) == 0)
		;
	pthread_mutex_unlock(&w->lock);
	/* Let the stream go idle first: cancel must work without traffic. */
	sleep(1);
	w->cancelled_at_ms = mono_ms();
	atomic_store(&w->cancel, 1);
	return NULL;
}

START_TEST(test_watch_events_and_cancel)
{
	watch_state w = { .lock = PTHREAD_MUTEX_INITIALIZER,
	                  .cond = PTHREAD_COND_INITIALIZER };
	atomic_init(&w.cancel, 0);
	cJSON *list = NULL;
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.label_selector = "watch=yes";
	OK(k8s_client_list(client, &configmaps, ns, &lo, &list));
	lo.resource_version = rv_of(list);
	lo.allow_watch_bookmarks = true;

	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, watch_writer, &w), 0);
	int rc = k8s_client_watch(client, &configmaps, ns, &lo, on_watch_event, &w,
	                          &w.cancel);
	int64_t returned = mono_ms();
	pthread_join(t, NULL);

	ck_assert_msg(rc == ASB_ECANCELED, "watch rc %d: %s", rc,
	              asb_error_last()->message);
	ck_assert_int_eq(w.added, 1);
	ck_assert_int_eq(w.modified, 1);
	ck_assert_int_eq(w.deleted, 1);
	ck_assert_int_eq(w.other, 0);
	/* The flag is looked at about once a second even on an idle stream. */
	ck_assert_int_lt(returned - w.cancelled_at_ms, 2500);
	cJSON_Delete(list);
}
END_TEST

static int stop_at_first(k8s_watch_event_type type, cJSON *obj, void *ud)
{
	(*(int *)ud)++;
	cJSON_Delete(obj);
	return 1;
}

START_TEST(test_watch_callback_stops)
{
	create_cm("stopper", "\"stop\":\"yes\"", NULL);
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.label_selector = "stop=yes";
	int n = 0;
	/* Without a resourceVersion the watch starts with ADDED for each
	 * existing object; the callback ends it at the first. */
	OK(k8s_client_watch(client, &configmaps, ns, &lo, stop_at_first, &n, NULL));
	ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(test_watch_server_timeout)
{
	/* The server ends the watch after timeoutSeconds: a normal end. */
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.label_selector = "nothing=here";
	lo.timeout_seconds = 1;
	watch_state w = { .lock = PTHREAD_MUTEX_INITIALIZER,
	                  .cond = PTHREAD_COND_INITIALIZER };
	int64_t start = mono_ms();
	OK(k8s_client_watch(client, &configmaps, ns, &lo, on_watch_event, &w, NULL));
	ck_assert_int_lt(mono_ms() - start, 10000);
}
END_TEST

/* Returns the body of a POST to etcd's JSON gateway, or NULL. */
static char *etcd_post(const char *base, const char *path, const char *body)
{
	char url[512];
	sbuf_t out = { NULL, 0 };
	snprintf(url, sizeof(url), "%s%s", base, path);
	CURL *h = curl_easy_init();
	if (!h)
		return NULL;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
	CURLcode res = curl_easy_perform(h);
	curl_easy_cleanup(h);
	if (res != CURLE_OK) {
		free(out.data);
		return NULL;
	}
	return out.data;
}

/* Compacts etcd's history up to its current revision. */
static void etcd_compact(const char *base)
{
	char *range = etcd_post(base, "/v3/kv/range", "{\"key\":\"AA==\"}");
	ck_assert_msg(range != NULL, "etcd at %s did not answer", base);
	cJSON *r = cJSON_Parse(range);
	const char *rev = str_at(r, "header", "revision");
	ck_assert_msg(rev != NULL, "etcd range answer: %s", range);
	char body[128];
	snprintf(body, sizeof(body), "{\"revision\":\"%s\",\"physical\":true}", rev);
	char *done = etcd_post(base, "/v3/kv/compaction", body);
	ck_assert_msg(done != NULL, "etcd compaction failed");
	free(done);
	cJSON_Delete(r);
	free(range);
}

START_TEST(test_watch_too_old)
{
	/*
	 * A resourceVersion older than the history etcd keeps gives 410
	 * Expired (an ERROR event). Events are not in the API server's watch
	 * cache (which would replay its own state instead), so the watch goes
	 * to etcd. The API server compacts etcd every 5 minutes; a younger
	 * cluster still has revision 1, unless $LIBK8S_TEST_ETCD_URL (etcd's
	 * client URL, e.g. http://127.0.0.1:16379) lets the test compact it.
	 */
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.resource_version = "1";
	lo.timeout_seconds = 3;
	watch_state w = { .lock = PTHREAD_MUTEX_INITIALIZER,
	                  .cond = PTHREAD_COND_INITIALIZER };
	const char *etcd = getenv("LIBK8S_TEST_ETCD_URL");
	if (etcd && etcd[0])
		etcd_compact(etcd);
	int rc = k8s_client_watch(client, &k8s_resource_events, ns, &lo,
	                          on_watch_event, &w, NULL);
	if (rc == 0 && !(etcd && etcd[0])) {
		fprintf(stderr, "test_watch_too_old: etcd still has revision 1 (cluster "
		        "younger than the 5-minute compaction); set LIBK8S_TEST_ETCD_URL "
		        "to force the 410 - not checked this time\n");
		return;
	}
	ck_assert_msg(rc == ASB_EGONE, "watch from resourceVersion 1: rc %d: %s", rc,
	              asb_error_last()->message);
	ck_assert_int_eq(asb_error_last()->http_status, 410);
	ck_assert_str_eq(asb_error_last()->reason, "Expired");
	assert_message_has("watch Event in namespace");
}
END_TEST

/* --- authentication and transport -------------------------------------------- */

/* Waits for the token controller to fill a service-account token Secret. */
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
			mbedtls_base64_decode(NULL, 0, &len, (const unsigned char *)enc,
			                      strlen(enc));
			char *tok = calloc(1, len + 1);
			ck_assert_int_eq(mbedtls_base64_decode((unsigned char *)tok, len + 1,
			                                       &len, (const unsigned char *)enc,
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

START_TEST(test_bearer_token)
{
	char *token = sa_token("reader");
	char user[4096];
	snprintf(user, sizeof(user), "token: %s", token);
	char *doc = kubeconfig_doc(NULL, NULL, user);
	/* Debug logs of this client are kept to check what they hold. */
	char *logbuf = NULL;
	size_t loglen = 0;
	FILE *logf = open_memstream(&logbuf, &loglen);
	asb_logger *log = NULL;
	OK(asb_logger_new(&log, logf, ASB_LOG_TEXT, ASB_LOG_DEBUG));
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.logger = log;
	k8s_client *c = client_from_doc_opts(doc, &co);
	cJSON *out = NULL;

	/* Authenticated as the ServiceAccount, which may do nothing yet. */
	FAILS_WITH(ASB_EFORBIDDEN, k8s_client_list(c, &configmaps, ns, NULL, &out));
	char who[128];
	snprintf(who, sizeof(who), "system:serviceaccount:%s:reader", ns);
	assert_message_has(who);
	assert_message_has("(Forbidden)");

	cJSON *rb = json("{\"metadata\":{\"name\":\"reader-view\"},\"roleRef\":"
	                 "{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
	                 "\"ClusterRole\",\"name\":\"view\"},\"subjects\":[{\"kind\":"
	                 "\"ServiceAccount\",\"name\":\"reader\",\"namespace\":\"%s\"}]}",
	                 ns);
	OK(k8s_client_create(client, &rolebindings, ns, rb, NULL, NULL));
	cJSON_Delete(rb);
	/* RBAC changes take a moment to be seen by the authorizer. */
	int rc = 0;
	for (int i = 0; i < 50; i++) {
		rc = k8s_client_list(c, &configmaps, ns, NULL, &out);
		if (rc != ASB_EFORBIDDEN)
			break;
		usleep(100 * 1000);
	}
	ck_assert_msg(rc == 0, "list as reader: %s", asb_error_last()->message);
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(out, "items")));
	cJSON_Delete(out);
	k8s_client_free(c);
	asb_logger_free(log);
	fclose(logf);
	/* One line per request, the connection reused after the first, and
	 * never the token. */
	ck_assert_ptr_nonnull(strstr(logbuf, "api request"));
	ck_assert_ptr_nonnull(strstr(logbuf, "new_connection=true"));
	ck_assert_ptr_nonnull(strstr(logbuf, "new_connection=false"));
	ck_assert_ptr_null(strstr(logbuf, token));
	ck_assert_ptr_null(strstr(logbuf, "Bearer"));
	free(logbuf);
	free(doc);

	/* A wrong token: 401. */
	doc = kubeconfig_doc(NULL, NULL, "token: not-a-valid-token");
	c = client_from_doc(doc);
	FAILS_WITH(ASB_EUNAUTHORIZED, k8s_client_list(c, &configmaps, ns, NULL, NULL));
	k8s_client_free(c);
	free(doc);
	free(token);
}
END_TEST

START_TEST(test_token_file_rotation)
{
	char *token = sa_token("rotor");
	char path[] = "/tmp/k8s-it-token-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "wrong-token\n", 12), 12);
	close(fd);

	char user[512];
	snprintf(user, sizeof(user), "tokenFile: '%s'", path);
	char *doc = kubeconfig_doc(NULL, NULL, user);
	k8s_client *c = client_from_doc(doc);
	FAILS_WITH(ASB_EUNAUTHORIZED, k8s_client_get(c, &serviceaccounts, ns, "rotor", NULL));

	/* Rotate: the client notices the file changed and reads it again. */
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	FILE *f = fopen(tmp, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", token);
	fclose(f);
	ck_assert_int_eq(rename(tmp, path), 0);
	/* Authenticated now: the answer is Forbidden (no RBAC), not 401. */
	FAILS_WITH(ASB_EFORBIDDEN, k8s_client_get(c, &serviceaccounts, ns, "rotor", NULL));

	k8s_client_free(c);
	free(doc);
	unlink(path);
	free(token);
}
END_TEST

START_TEST(test_tls_server_name)
{
	/* Connect to the server's address but verify the certificate against
	 * another name it carries, as client-go's ServerName does. */
	char *user = admin_user_fields();
	char *doc = kubeconfig_doc(NULL, "tls-server-name: kubernetes.default.svc", user);
	k8s_client *c = client_from_doc(doc);
	cJSON *out = NULL;
	OK(k8s_client_get(c, &k8s_resource_namespaces, NULL, ns, &out));
	cJSON_Delete(out);
	k8s_client_free(c);
	free(doc);

	/* A name the certificate does not carry fails verification. */
	doc = kubeconfig_doc(NULL, "tls-server-name: wrong.example.test", user);
	c = client_from_doc(doc);
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_get(c, &k8s_resource_namespaces, NULL,
	                                          ns, &out));
	k8s_client_free(c);
	free(doc);

	/* insecure-skip-tls-verify accepts it. */
	doc = kubeconfig_doc(NULL, "tls-server-name: wrong.example.test, "
	                     "insecure-skip-tls-verify: true", user);
	c = client_from_doc(doc);
	OK(k8s_client_get(c, &k8s_resource_namespaces, NULL, ns, &out));
	cJSON_Delete(out);
	k8s_client_free(c);
	free(doc);
	free(user);
}
END_TEST

START_TEST(test_transport_errors)
{
	/* Nothing listens on port 1. */
	char *doc = kubeconfig_doc("https://127.0.0.1:1", NULL, "token: x");
	k8s_client *c = client_from_doc(doc);
	cJSON *out = (cJSON *)1;
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_get(c, &configmaps, ns, "x", &out));
	ck_assert_ptr_null(out);
	assert_message_has("ConfigMap \"");
	assert_message_has("GET /api/v1/namespaces/");
	ck_assert_int_eq(asb_error_last()->http_status, 0);
	k8s_client_free(c);
	free(doc);

	/* A CA that did not sign the server's certificate. */
	k8s_config *cfg = NULL;
	const char *bad_ca_doc =
		"clusters:\n- name: c\n  cluster:\n    server: SERVER\n"
		"contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n";
	char buf[512];
	const char *at = strstr(bad_ca_doc, "SERVER");
	snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - bad_ca_doc), bad_ca_doc,
	         admin_cfg->server, at + 6);
	OK(k8s_config_load_yaml(&cfg, buf, strlen(buf), NULL, NULL));
	OK(k8s_client_new(&c, cfg, NULL));
	/* No CA given: the system store does not know the test cluster's CA. */
	FAILS_WITH(ASB_ETRANSPORT, k8s_client_get(c, &configmaps, ns, "x", NULL));
	k8s_client_free(c);
	k8s_config_free(cfg);
}
END_TEST

START_TEST(test_invalid_arguments)
{
	cJSON *out = (cJSON *)1;
	FAILS_WITH(ASB_EINVAL, k8s_client_get(client, &configmaps, ns, NULL, &out));
	ck_assert_ptr_null(out);
	FAILS_WITH(ASB_EINVAL, k8s_client_get(client, &configmaps, ns, "..", NULL));
	FAILS_WITH(ASB_EINVAL, k8s_client_get(NULL, &configmaps, ns, "x", NULL));
	cJSON *noname = json("{\"metadata\":{}}");
	FAILS_WITH(ASB_EINVAL, k8s_client_update(client, &configmaps, ns, noname, NULL, NULL));
	cJSON *arr = json("[]");
	FAILS_WITH(ASB_EINVAL, k8s_client_patch(client, &configmaps, ns, "x", NULL,
	                                        K8S_PATCH_MERGE, arr, NULL, NULL));
	FAILS_WITH(ASB_EINVAL, k8s_client_patch(client, &configmaps, ns, "x", NULL,
	                                        K8S_PATCH_JSON, noname, NULL, NULL));
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.version = 99;
	FAILS_WITH(ASB_EINVAL, k8s_client_list(client, &configmaps, ns, &lo, NULL));
	k8s_client_options co;
	FAILS_WITH(ASB_EINVAL, k8s_client_options_init(&co, 0));
	OK(k8s_client_options_init(&co, K8S_CLIENT_OPTIONS_VERSION));
	ck_assert_int_eq(co.timeout_ms, 30000);
	cJSON_Delete(noname);
	cJSON_Delete(arr);
}
END_TEST

/* --- many threads, one client ------------------------------------------------ */

#define THREADS 8
#define CALLS 25

static void *hammer(void *ud)
{
	long failures = 0;
	for (int i = 0; i < CALLS; i++) {
		cJSON *out = NULL;
		const char *v = NULL;
		if (k8s_client_get(client, &configmaps, ns, "shared", &out) != 0 ||
		    !(v = str_at(out, "data", "k")) || strcmp(v, "v") != 0)
			failures++;
		cJSON_Delete(out);
		/* A miss is an error on this thread only. */
		if (k8s_client_get(client, &configmaps, ns, "absent", NULL) != ASB_ENOTFOUND ||
		    !strstr(asb_error_last()->message, "\"absent\""))
			failures++;
	}
	return (void *)failures;
}

START_TEST(test_threads)
{
	create_cm("shared", NULL, "\"k\":\"v\"");
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, NULL), 0);
	long failures = 0;
	for (int i = 0; i < THREADS; i++) {
		void *r;
		pthread_join(t[i], &r);
		failures += (long)r;
	}
	ck_assert_int_eq(failures, 0);
}
END_TEST

/* --- setup ------------------------------------------------------------------ */

static int setup_namespace(void)
{
	snprintf(ns, sizeof(ns), "libk8s-it-%ld-%d", (long)time(NULL) % 100000,
	         (int)getpid());
	cJSON *o = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(o, "metadata");
	cJSON_AddStringToObject(md, "name", ns);
	int rc = k8s_client_create(client, &k8s_resource_namespaces, NULL, o, NULL, NULL);
	cJSON_Delete(o);
	return rc;
}

static Suite *client_suite(void)
{
	Suite *s = suite_create("client_rest");
	TCase *tc = tcase_create("rest");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_crud);
	tcase_add_test(tc, test_create_twice);
	tcase_add_test(tc, test_get_missing);
	tcase_add_test(tc, test_default_namespace);
	tcase_add_test(tc, test_list_selector_and_paging);
	tcase_add_test(tc, test_write_options);
	tcase_add_test(tc, test_server_side_apply);
	tcase_add_test(tc, test_delete_options);
	tcase_add_test(tc, test_pod_status);
	tcase_add_test(tc, test_invalid_arguments);
	tcase_add_test(tc, test_threads);
	suite_add_tcase(s, tc);

	tc = tcase_create("watch");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_watch_events_and_cancel);
	tcase_add_test(tc, test_watch_callback_stops);
	tcase_add_test(tc, test_watch_server_timeout);
	tcase_add_test(tc, test_watch_too_old);
	suite_add_tcase(s, tc);

	tc = tcase_create("auth");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_bearer_token);
	tcase_add_test(tc, test_token_file_rotation);
	tcase_add_test(tc, test_tls_server_name);
	tcase_add_test(tc, test_transport_errors);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *kc = getenv("KUBECONFIG");
	if (!kc || !kc[0]) {
		fprintf(stderr, "test_client_rest: KUBECONFIG is not set; point it at "
		        "the admin kubeconfig of a real cluster (tools/local-cluster up "
		        "prints one)\n");
		return EXIT_FAILURE;
	}
	if (k8s_global_init() < 0 ||
	    k8s_config_load(&admin_cfg, NULL, NULL) != 0 ||
	    k8s_client_new(&client, admin_cfg, NULL) != 0) {
		fprintf(stderr, "test_client_rest: %s\n", asb_error_last()->message);
		return EXIT_FAILURE;
	}
	if (!admin_cfg->ca.data || !admin_cfg->cert.data) {
		fprintf(stderr, "test_client_rest: %s: expected an admin kubeconfig with "
		        "a CA and a client certificate\n", kc);
		return EXIT_FAILURE;
	}
	if (setup_namespace() != 0) {
		fprintf(stderr, "test_client_rest: creating the test namespace: %s\n",
		        asb_error_last()->message);
		return EXIT_FAILURE;
	}
	printf("test_client_rest: server %s, namespace %s\n",
	       k8s_config_server(admin_cfg), ns);

	SRunner *sr = srunner_create(client_suite());
	/* One process: the client and its connections are shared by the tests. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);

	k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
	d.propagation_policy = "Background";
	if (k8s_client_delete(client, &k8s_resource_namespaces, NULL, ns, &d, NULL) != 0) {
		fprintf(stderr, "test_client_rest: deleting namespace %s: %s\n", ns,
		        asb_error_last()->message);
		failed++;
	}
	k8s_client_free(client);
	k8s_config_free(admin_cfg);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
