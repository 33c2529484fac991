/*
 * Integration test of libk8s/src/informer.c and controller.c against a real
 * kube-apiserver ($KUBECONFIG): the cache follows creates, updates and
 * deletes, handlers fire in order, and the index answers.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/informer.h"
#include "k8s/object.h"
#include "live.h"

static k8s_client *client;
static char ns[64];

static const k8s_resource configmaps = { "", "v1", "configmaps", "ConfigMap", true };

static cJSON *configmap(const char *name, const char *team)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
	         "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
	         "\"labels\":{\"team\":\"%s\"},\"managedFields\":[]},\"data\":{\"k\":\"v\"}}", name, team);
	return cJSON_Parse(buf);
}

typedef struct {
	pthread_mutex_t lock;
	int adds, updates, deletes;
	char last_deleted[64];
} counts;

static void on_add(const cJSON *o, void *ud)
{
	counts *c = ud;
	const char *ons = k8s_obj_namespace(o);
	if (!ons || strcmp(ons, ns) != 0)
		return;
	pthread_mutex_lock(&c->lock);
	c->adds++;
	pthread_mutex_unlock(&c->lock);
}

static void on_update(const cJSON *old, const cJSON *o, void *ud)
{
	counts *c = ud;
	const char *ons = k8s_obj_namespace(o);
	if (!ons || strcmp(ons, ns) != 0)
		return;
	pthread_mutex_lock(&c->lock);
	c->updates++;
	pthread_mutex_unlock(&c->lock);
}

static void on_delete(const cJSON *o, void *ud)
{
	counts *c = ud;
	const char *ons = k8s_obj_namespace(o);
	if (!ons || strcmp(ons, ns) != 0)
		return;
	pthread_mutex_lock(&c->lock);
	c->deletes++;
	snprintf(c->last_deleted, sizeof(c->last_deleted), "%s", k8s_obj_name(o));
	pthread_mutex_unlock(&c->lock);
}

static cJSON *strip_managed(cJSON *o, void *ud)
{
	cJSON *md = cJSON_GetObjectItem(o, "metadata");
	cJSON_DeleteItemFromObject(md, "managedFields");
	return o;
}

static int index_team(const cJSON *o, const char **keys, int cap, void *ud)
{
	const char *t = k8s_obj_label(o, "team");
	if (!t || cap < 1)
		return 0;
	keys[0] = t;
	return 1;
}

/* Polls `cond` for up to 20 s. */
#define WAIT_FOR(cond) do { \
	int _i; \
	for (_i = 0; _i < 200 && !(cond); _i++) usleep(100000); \
	ck_assert_msg((cond), "timed out waiting for " #cond); \
} while (0)

static bool cached(k8s_informer *inf, const char *name)
{
	cJSON *o = NULL;
	int rc = k8s_informer_get(inf, ns, name, &o);
	cJSON_Delete(o);
	return rc == 0;
}

static int index_count(k8s_informer *inf, const char *index, const char *value)
{
	cJSON *arr = NULL;
	if (k8s_informer_by_index(inf, index, value, &arr) < 0)
		return -1;
	int n = cJSON_GetArraySize(arr);
	cJSON_Delete(arr);
	return n;
}

static int read_count(counts *c, int *field)
{
	pthread_mutex_lock(&c->lock);
	int v = *field;
	pthread_mutex_unlock(&c->lock);
	return v;
}

START_TEST(cache_follows_the_server)
{
	/* one object exists before the informer starts: it must come from the LIST */
	cJSON *cm = configmap("before", "red");
	ck_assert_int_eq(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL), 0);
	cJSON_Delete(cm);

	counts c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.namespace_ = ns;
	/* kube-controller-manager adds kube-root-ca.crt to every namespace: select ours */
	o.label_selector = "team";
	o.on_add = on_add;
	o.on_update = on_update;
	o.on_delete = on_delete;
	o.transform = strip_managed;
	o.userdata = &c;
	k8s_informer *inf;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	ck_assert_int_eq(k8s_informer_add_index(inf, "team", index_team, NULL), 0);
	ck_assert_int_eq(k8s_informer_start(inf), 0);
	ck_assert_int_eq(k8s_informer_wait_synced(inf, 20000), 0);
	ck_assert(k8s_informer_has_synced(inf));

	cJSON *got = NULL;
	ck_assert_int_eq(k8s_informer_get(inf, ns, "before", &got), 0);
	ck_assert_ptr_null(k8s_obj_at(got, "metadata.managedFields"));
	cJSON_Delete(got);
	ck_assert_int_eq(read_count(&c, &c.adds), 1);

	/* watch: create, update, delete made through the API show up */
	cm = configmap("during", "blue");
	ck_assert_int_eq(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL), 0);
	cJSON_Delete(cm);
	WAIT_FOR(cached(inf, "during"));
	ck_assert_int_eq(read_count(&c, &c.adds), 2);

	cJSON *patch = cJSON_Parse("{\"metadata\":{\"labels\":{\"team\":\"red\"}}}");
	ck_assert_int_eq(k8s_client_patch(client, &configmaps, ns, "during", NULL,
	                                  K8S_PATCH_MERGE, patch, NULL, NULL), 0);
	cJSON_Delete(patch);
	WAIT_FOR(read_count(&c, &c.updates) >= 1);

	WAIT_FOR(index_count(inf, "team", "red") == 2);
	cJSON *blue = NULL;
	ck_assert_int_eq(k8s_informer_by_index(inf, "team", "blue", &blue), 0);
	ck_assert_int_eq(cJSON_GetArraySize(blue), 0);
	cJSON_Delete(blue);
	ck_assert_int_eq(k8s_informer_by_index(inf, "nope", "x", &blue), ASB_EINVAL);

	ck_assert_int_eq(k8s_client_delete(client, &configmaps, ns, "before", NULL, NULL), 0);
	WAIT_FOR(read_count(&c, &c.deletes) == 1);
	ck_assert_str_eq(c.last_deleted, "before");
	ck_assert_int_eq(k8s_informer_get(inf, ns, "before", &got), ASB_ENOTFOUND);
	ck_assert_uint_eq(k8s_informer_size(inf), 1);

	cJSON *all = NULL;
	ck_assert_int_eq(k8s_informer_list(inf, ns, &all), 0);
	ck_assert_int_eq(cJSON_GetArraySize(all), 1);
	cJSON_Delete(all);
	k8s_informer_free(inf);
}
END_TEST

START_TEST(factory_shares_one_informer_between_consumers)
{
	k8s_informer_factory *f;
	ck_assert_int_eq(k8s_informer_factory_new(&f, client, NULL), 0);
	counts a = { .lock = PTHREAD_MUTEX_INITIALIZER }, b = { .lock = PTHREAD_MUTEX_INITIALIZER };
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.namespace_ = ns;
	o.label_selector = "shared";
	o.on_add = on_add;
	o.userdata = &a;
	k8s_informer *i1, *i2, *i3;
	ck_assert_int_eq(k8s_informer_factory_informer(f, &o, &i1), 0);
	o.userdata = &b;
	ck_assert_int_eq(k8s_informer_factory_informer(f, &o, &i2), 0);
	ck_assert_ptr_eq(i1, i2);  /* same resource and selector: one informer */
	o.transform = strip_managed;
	ck_assert_int_eq(k8s_informer_factory_informer(f, &o, &i3), ASB_EINVAL);
	o.label_selector = "other";
	ck_assert_int_eq(k8s_informer_factory_informer(f, &o, &i3), 0);
	ck_assert_ptr_ne(i1, i3);
	ck_assert_int_eq(k8s_informer_factory_start(f), 0);
	ck_assert_int_eq(k8s_informer_factory_wait_synced(f, 20000), 0);
	cJSON *cm = configmap("shared-1", "x");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cm, "metadata"), "labels");
	cJSON_AddItemToObject(cJSON_GetObjectItem(cm, "metadata"), "labels", cJSON_Parse("{\"shared\":\"1\"}"));
	ck_assert_int_eq(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL), 0);
	cJSON_Delete(cm);
	/* both consumers hear about it from the one watch */
	WAIT_FOR(read_count(&a, &a.adds) == 1 && read_count(&b, &b.adds) == 1);
	k8s_informer_factory_free(f);
}
END_TEST

START_TEST(resync_redelivers_cached_objects)
{
	counts c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	cJSON *cm = configmap("resync-1", "resync");
	ck_assert_int_eq(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL), 0);
	cJSON_Delete(cm);
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.namespace_ = ns;
	o.label_selector = "team=resync";
	o.on_update = on_update;
	o.userdata = &c;
	o.resync_ms = 200;
	k8s_informer *inf;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	ck_assert_int_eq(k8s_informer_start(inf), 0);
	ck_assert_int_eq(k8s_informer_wait_synced(inf, 20000), 0);
	size_t n = k8s_informer_size(inf);
	ck_assert_uint_eq(n, 1);
	/* nothing changes on the server, yet each object is handed out again */
	WAIT_FOR(read_count(&c, &c.updates) >= (int)(2 * n));
	k8s_informer_free(inf);
}
END_TEST

/* ---- a codec: the cache holds a small struct per ConfigMap ---- */

typedef struct {
	char *ns, *name, *rv, *team, *value;
} compact_cm;

/* Keeps exactly what the struct holds, so encode(decode(x)) == x. */
static cJSON *cm_slim(cJSON *o, void *ud)
{
	cJSON *slim = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(slim, "metadata");
	static const char *const keep[] = { "name", "namespace", "resourceVersion" };
	for (int i = 0; i < 3; i++) {
		const char *v = cJSON_GetStringValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(o, "metadata"), keep[i]));
		if (v)
			cJSON_AddStringToObject(md, keep[i], v);
	}
	const char *team = k8s_obj_label(o, "team");
	if (team)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), "team", team);
	const char *k = k8s_obj_str(o, "data.k");
	if (k)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(slim, "data"), "k", k);
	cJSON_Delete(o);
	return slim;
}

static char *sdup(const char *s) { return s ? strdup(s) : NULL; }

static int cm_decode(const cJSON *o, void **out, void *ud)
{
	compact_cm *c = calloc(1, sizeof(*c));
	if (!c)
		return ASB_ENOMEM;
	c->ns = sdup(k8s_obj_namespace(o));
	c->name = sdup(k8s_obj_name(o));
	c->rv = sdup(k8s_obj_resource_version(o));
	c->team = sdup(k8s_obj_label(o, "team"));
	c->value = sdup(k8s_obj_str(o, "data.k"));
	atomic_fetch_add((atomic_int *)ud, 1);
	*out = c;
	return 0;
}

static cJSON *cm_encode(const void *v, void *ud)
{
	const compact_cm *c = v;
	cJSON *o = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(o, "metadata");
	if (c->name)
		cJSON_AddStringToObject(md, "name", c->name);
	if (c->ns)
		cJSON_AddStringToObject(md, "namespace", c->ns);
	if (c->rv)
		cJSON_AddStringToObject(md, "resourceVersion", c->rv);
	if (c->team)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), "team", c->team);
	if (c->value)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "data"), "k", c->value);
	return o;
}

static void cm_free(void *v, void *ud)
{
	compact_cm *c = v;
	free(c->ns);
	free(c->name);
	free(c->rv);
	free(c->team);
	free(c->value);
	free(c);
	atomic_fetch_sub((atomic_int *)ud, 1);
}

static int read_value(const void *v, void *ud)
{
	const compact_cm *c = v;
	snprintf(ud, 64, "%s:%s", c->team ? c->team : "", c->value ? c->value : "");
	return 0;
}

static int read_matches(k8s_informer *inf, const char *name, const char *want)
{
	char got[64] = "";
	return k8s_informer_read(inf, ns, name, read_value, got) == 0 && strcmp(got, want) == 0;
}

START_TEST(codec_cache_follows_the_server)
{
	atomic_int live = 0;  /* structs decoded and not yet freed */
	k8s_object_codec codec = { cm_decode, cm_encode, cm_free, NULL, &live };
	counts c = { .lock = PTHREAD_MUTEX_INITIALIZER };
	cJSON *cm = configmap("codec-before", "green");
	ck_assert_int_eq(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL), 0);
	cJSON_Delete(cm);

	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.namespace_ = ns;
	o.label_selector = "team in (green,yellow)";
	o.transform = cm_slim;
	o.codec = &codec;
	o.on_add = on_add;
	o.on_update = on_update;
	o.on_delete = on_delete;
	o.userdata = &c;
	k8s_informer *inf;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	ck_assert_int_eq(k8s_informer_add_index(inf, "team", index_team, NULL), 0);
	ck_assert_int_eq(k8s_informer_start(inf), 0);
	ck_assert_int_eq(k8s_informer_wait_synced(inf, 20000), 0);
	ck_assert_int_eq(read_count(&c, &c.adds), 1);
	ck_assert(read_matches(inf, "codec-before", "green:v"));
	ck_assert_int_eq(atomic_load(&live), 1);

	/* the lister's copy is the slim object, encoded from the struct */
	cJSON *got = NULL;
	ck_assert_int_eq(k8s_informer_get(inf, ns, "codec-before", &got), 0);
	cJSON *srv = NULL;
	ck_assert_int_eq(k8s_client_get(client, &configmaps, ns, "codec-before", &srv), 0);
	srv = cm_slim(srv, NULL);
	ck_assert(cJSON_Compare(got, srv, true));
	cJSON_Delete(srv);
	cJSON_Delete(got);

	cm = configmap("codec-during", "yellow");
	ck_assert_int_eq(k8s_client_create(client, &configmaps, ns, cm, NULL, NULL), 0);
	cJSON_Delete(cm);
	WAIT_FOR(read_matches(inf, "codec-during", "yellow:v"));
	cJSON *patch = cJSON_Parse("{\"metadata\":{\"labels\":{\"team\":\"green\"}},\"data\":{\"k\":\"w\"}}");
	ck_assert_int_eq(k8s_client_patch(client, &configmaps, ns, "codec-during", NULL,
	                                  K8S_PATCH_MERGE, patch, NULL, NULL), 0);
	cJSON_Delete(patch);
	WAIT_FOR(read_matches(inf, "codec-during", "green:w"));
	WAIT_FOR(read_count(&c, &c.updates) >= 1);
	WAIT_FOR(index_count(inf, "team", "green") == 2);
	ck_assert_int_eq(index_count(inf, "team", "yellow"), 0);

	ck_assert_int_eq(k8s_client_delete(client, &configmaps, ns, "codec-before", NULL, NULL), 0);
	WAIT_FOR(read_count(&c, &c.deletes) == 1);
	ck_assert_str_eq(c.last_deleted, "codec-before");
	ck_assert_int_eq(k8s_informer_read(inf, ns, "codec-before", read_value, NULL), ASB_ENOTFOUND);
	ck_assert_int_eq(index_count(inf, "team", "green"), 1);
	cJSON *all = NULL;
	ck_assert_int_eq(k8s_informer_list(inf, ns, &all), 0);
	ck_assert_int_eq(cJSON_GetArraySize(all), 1);
	ck_assert_str_eq(k8s_obj_str(cJSON_GetArrayItem(all, 0), "data.k"), "w");
	cJSON_Delete(all);
	ck_assert_int_eq(atomic_load(&live), 1);
	k8s_informer_free(inf);
	ck_assert_int_eq(atomic_load(&live), 0);
}
END_TEST

int main(void)
{
	client = live_connect("test_informer");
	live_namespace(client, "test_informer", "inf", ns, sizeof(ns));

	Suite *s = suite_create("informer");
	TCase *tc = tcase_create("live");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, cache_follows_the_server);
	tcase_add_test(tc, factory_shares_one_informer_between_consumers);
	tcase_add_test(tc, resync_redelivers_cached_objects);
	tcase_add_test(tc, codec_cache_follows_the_server);
	suite_add_tcase(s, tc);
	int failed = live_run(s);

	live_delete_namespace(client, ns);
	k8s_client_free(client);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
