/*
 * Unit tests of libk8s/src/informer.c's cache without a server: events and
 * lists are fed by hand (informer_internal.h) to an informer that is never
 * started. Mostly the codec path (the cache holds compact structs): store,
 * update, delete, indexes, listers, zero-copy reads, relists, options.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/informer.h"
#include "k8s/packed.h"
#include "k8s/object.h"
#include "informer_internal.h"

static k8s_client *client;
static const k8s_resource configmaps = { "", "v1", "configmaps", "ConfigMap", true };

/* ---- a toy codec: name, namespace, resourceVersion and label "team" ---- */

typedef struct {
	char *name, *ns, *rv, *team;
} toy;

typedef struct {
	int decodes, encodes, frees, fail_decode;
} toy_stats;

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static int toy_decode(const cJSON *obj, void **out, void *ud)
{
	toy_stats *st = ud;
	if (st->fail_decode)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "toy: refused");
	toy *t = calloc(1, sizeof(*t));
	t->name = dup_or_null(k8s_obj_name(obj));
	t->ns = dup_or_null(k8s_obj_namespace(obj));
	t->rv = dup_or_null(k8s_obj_resource_version(obj));
	t->team = dup_or_null(k8s_obj_label(obj, "team"));
	st->decodes++;
	*out = t;
	return 0;
}

static cJSON *toy_encode(const void *v, void *ud)
{
	const toy *t = v;
	((toy_stats *)ud)->encodes++;  /* single-threaded test: no race */
	cJSON *o = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(o, "metadata");
	if (t->name)
		cJSON_AddStringToObject(md, "name", t->name);
	if (t->ns)
		cJSON_AddStringToObject(md, "namespace", t->ns);
	if (t->rv)
		cJSON_AddStringToObject(md, "resourceVersion", t->rv);
	if (t->team)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), "team", t->team);
	return o;
}

static void toy_free(void *v, void *ud)
{
	toy *t = v;
	((toy_stats *)ud)->frees++;
	free(t->name);
	free(t->ns);
	free(t->rv);
	free(t->team);
	free(t);
}

static const char *toy_rv(const void *v, void *ud)
{
	return ((const toy *)v)->rv;
}

static cJSON *cm(const char *ns, const char *name, const char *rv, const char *team)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(o, "metadata");
	cJSON_AddStringToObject(md, "name", name);
	cJSON_AddStringToObject(md, "namespace", ns);
	cJSON_AddStringToObject(md, "resourceVersion", rv);
	if (team)
		cJSON_AddStringToObject(cJSON_AddObjectToObject(md, "labels"), "team", team);
	return o;
}

/* ---- handlers recording what they saw ---- */

typedef struct {
	int adds, updates, deletes;
	char last[256];      /* "add ns/name rv", "update rv->rv", "delete ns/name rv" */
} seen;

static void on_add(const cJSON *o, void *ud)
{
	seen *s = ud;
	s->adds++;
	snprintf(s->last, sizeof(s->last), "add %s/%s %s", k8s_obj_namespace(o),
	         k8s_obj_name(o), k8s_obj_resource_version(o));
}

static void on_update(const cJSON *old, const cJSON *o, void *ud)
{
	seen *s = ud;
	s->updates++;
	snprintf(s->last, sizeof(s->last), "update %s/%s %s->%s team %s->%s",
	         k8s_obj_namespace(o), k8s_obj_name(o), k8s_obj_resource_version(old),
	         k8s_obj_resource_version(o), k8s_obj_label(old, "team"), k8s_obj_label(o, "team"));
}

static void on_delete(const cJSON *o, void *ud)
{
	seen *s = ud;
	s->deletes++;
	snprintf(s->last, sizeof(s->last), "delete %s/%s %s", k8s_obj_namespace(o),
	         k8s_obj_name(o), k8s_obj_resource_version(o));
}

static int index_team(const cJSON *o, const char **keys, int cap, void *ud)
{
	return k8s_index_by_label(o, keys, cap, (void *)"team");
}

static k8s_informer *toy_informer(toy_stats *st, seen *s, bool with_rv)
{
	k8s_object_codec codec = { toy_decode, toy_encode, toy_free,
	                           with_rv ? toy_rv : NULL, st };
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.codec = &codec;  /* copied: a stack codec is fine */
	o.on_add = on_add;
	o.on_update = on_update;
	o.on_delete = on_delete;
	o.userdata = s;
	k8s_informer *inf = NULL;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	ck_assert_int_eq(k8s_informer_add_index(inf, "team", index_team, NULL), 0);
	ck_assert_int_eq(k8s_informer_add_index(inf, "namespace", k8s_index_by_namespace, NULL), 0);
	return inf;
}

static int index_size(k8s_informer *inf, const char *index, const char *value)
{
	cJSON *arr = NULL;
	ck_assert_int_eq(k8s_informer_by_index(inf, index, value, &arr), 0);
	int n = cJSON_GetArraySize(arr);
	cJSON_Delete(arr);
	return n;
}

static int read_team(const void *v, void *ud)
{
	const toy *t = v;
	snprintf(ud, 64, "%s@%s", t->team ? t->team : "-", t->rv);
	return 7;
}

START_TEST(codec_store_get_and_read)
{
	toy_stats st = { 0 };
	seen s = { 0 };
	k8s_informer *inf = toy_informer(&st, &s, true);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "one", "10", "red"));
	ck_assert_int_eq(s.adds, 1);
	ck_assert_str_eq(s.last, "add a/one 10");
	ck_assert_int_eq(st.decodes, 1);
	ck_assert_int_eq(st.encodes, 0);  /* the handler saw the event's object */
	ck_assert_uint_eq(k8s_informer_size(inf), 1);

	cJSON *got = NULL, *want = cm("a", "one", "10", "red");
	ck_assert_int_eq(k8s_informer_get(inf, "a", "one", &got), 0);
	ck_assert(cJSON_Compare(got, want, true));
	cJSON_Delete(got);
	cJSON_Delete(want);
	ck_assert_int_eq(k8s_informer_get(inf, "a", "two", &got), ASB_ENOTFOUND);
	ck_assert_ptr_null(got);

	char buf[64] = "";
	ck_assert_int_eq(k8s_informer_read(inf, "a", "one", read_team, buf), 7);
	ck_assert_str_eq(buf, "red@10");
	ck_assert_int_eq(k8s_informer_read(inf, "b", "one", read_team, buf), ASB_ENOTFOUND);
	k8s_informer_free(inf);
	ck_assert_int_eq(st.frees, st.decodes);
}
END_TEST

START_TEST(codec_update_hands_old_and_new_and_moves_indexes)
{
	toy_stats st = { 0 };
	seen s = { 0 };
	k8s_informer *inf = toy_informer(&st, &s, true);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "one", "10", "red"));
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "two", "11", "red"));
	ck_assert_int_eq(index_size(inf, "team", "red"), 2);
	k8s__informer_apply(inf, K8S_WATCH_MODIFIED, cm("a", "one", "12", "blue"));
	ck_assert_int_eq(s.updates, 1);
	ck_assert_str_eq(s.last, "update a/one 10->12 team red->blue");
	ck_assert_int_eq(index_size(inf, "team", "red"), 1);
	ck_assert_int_eq(index_size(inf, "team", "blue"), 1);
	/* the replaced struct was freed at once */
	ck_assert_int_eq(st.frees, 1);
	char buf[64];
	ck_assert_int_eq(k8s_informer_read(inf, "a", "one", read_team, buf), 7);
	ck_assert_str_eq(buf, "blue@12");
	k8s_informer_free(inf);
	ck_assert_int_eq(st.frees, st.decodes);
}
END_TEST

/* An index value of one object, then of many, then one again, then none:
 * every object listed once at each step (a set of one is stored apart). */
static int count_read(const void *v, void *ud)
{
	(void)v;
	(*(int *)ud)++;
	return 0;
}

static int read_count(k8s_informer *inf, const char *index, const char *value)
{
	int n = 0;
	ck_assert_int_eq(k8s_informer_read_index(inf, index, value, count_read, &n), 0);
	return n;
}

START_TEST(index_sets_of_one_and_many)
{
	toy_stats st = { 0 };
	seen s = { 0 };
	k8s_informer *inf = toy_informer(&st, &s, true);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "one", "10", "red"));
	ck_assert_int_eq(index_size(inf, "team", "red"), 1);
	ck_assert_int_eq(read_count(inf, "team", "red"), 1);
	/* the same object again (a resync-like update): still one */
	k8s__informer_apply(inf, K8S_WATCH_MODIFIED, cm("a", "one", "11", "red"));
	ck_assert_int_eq(index_size(inf, "team", "red"), 1);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "two", "12", "red"));
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "three", "13", "red"));
	ck_assert_int_eq(index_size(inf, "team", "red"), 3);
	ck_assert_int_eq(read_count(inf, "team", "red"), 3);
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cm("a", "one", "14", "red"));
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cm("a", "two", "15", "red"));
	ck_assert_int_eq(index_size(inf, "team", "red"), 1);
	cJSON *arr = NULL;
	ck_assert_int_eq(k8s_informer_by_index(inf, "team", "red", &arr), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(arr->child, "metadata"), "name")->valuestring,
	                 "three");
	cJSON_Delete(arr);
	/* an object moving from a value of its own to one with another object */
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "four", "16", "blue"));
	k8s__informer_apply(inf, K8S_WATCH_MODIFIED, cm("a", "four", "17", "red"));
	ck_assert_int_eq(index_size(inf, "team", "blue"), 0);
	ck_assert_int_eq(index_size(inf, "team", "red"), 2);
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cm("a", "three", "18", "red"));
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cm("a", "four", "19", "red"));
	ck_assert_int_eq(index_size(inf, "team", "red"), 0);
	ck_assert_int_eq(read_count(inf, "team", "red"), 0);
	ck_assert_int_eq(index_size(inf, "namespace", "a"), 0);
	k8s_informer_free(inf);
}
END_TEST

START_TEST(codec_delete_clears_cache_and_indexes)
{
	toy_stats st = { 0 };
	seen s = { 0 };
	k8s_informer *inf = toy_informer(&st, &s, true);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "one", "10", "red"));
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cm("a", "one", "13", "red"));
	ck_assert_int_eq(s.deletes, 1);
	ck_assert_str_eq(s.last, "delete a/one 13");  /* the event's final state */
	ck_assert_uint_eq(k8s_informer_size(inf), 0);
	ck_assert_int_eq(index_size(inf, "team", "red"), 0);
	ck_assert_int_eq(index_size(inf, "namespace", "a"), 0);
	ck_assert_int_eq(st.frees, 1);
	/* a delete of something never cached still reaches the handler */
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cm("a", "ghost", "14", NULL));
	ck_assert_int_eq(s.deletes, 2);
	char rv[64];
	k8s_informer_last_resource_version(inf, rv, sizeof(rv));
	ck_assert_str_eq(rv, "14");
	k8s_informer_free(inf);
	ck_assert_int_eq(st.frees, st.decodes);
}
END_TEST

static int count_and_check(const void *v, void *ud)
{
	const toy *t = v;
	ck_assert_str_eq(t->team, "red");
	(*(int *)ud)++;
	return 0;
}

static int stop_at_first(const void *v, void *ud)
{
	(*(int *)ud)++;
	return 5;
}

START_TEST(codec_list_by_namespace_and_index)
{
	toy_stats st = { 0 };
	seen s = { 0 };
	k8s_informer *inf = toy_informer(&st, &s, true);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "one", "10", "red"));
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "two", "11", "blue"));
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("ab", "three", "12", "red"));
	cJSON *arr = NULL;
	ck_assert_int_eq(k8s_informer_list(inf, "a", &arr), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);  /* not "ab" */
	const cJSON *o;
	cJSON_ArrayForEach(o, arr)
		ck_assert_str_eq(k8s_obj_namespace(o), "a");
	cJSON_Delete(arr);
	ck_assert_int_eq(k8s_informer_list(inf, NULL, &arr), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 3);
	cJSON_Delete(arr);

	ck_assert_int_eq(k8s_informer_by_index(inf, "team", "red", &arr), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
	cJSON_ArrayForEach(o, arr)
		ck_assert_str_eq(k8s_obj_label(o, "team"), "red");
	cJSON_Delete(arr);
	ck_assert_int_eq(index_size(inf, "namespace", "ab"), 1);
	ck_assert_int_eq(k8s_informer_by_index(inf, "nope", "x", &arr), ASB_EINVAL);

	int n = 0;
	int encodes = st.encodes;
	ck_assert_int_eq(k8s_informer_read_index(inf, "team", "red", count_and_check, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(st.encodes, encodes);  /* zero-copy: nothing encoded */
	n = 0;
	ck_assert_int_eq(k8s_informer_read_index(inf, "team", "red", stop_at_first, &n), 5);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(k8s_informer_read_index(inf, "team", "green", stop_at_first, &n), 0);
	ck_assert_int_eq(k8s_informer_read_index(inf, "nope", "x", stop_at_first, &n), ASB_EINVAL);
	k8s_informer_free(inf);
	ck_assert_int_eq(st.frees, st.decodes);
}
END_TEST

static void relist_case(bool with_rv)
{
	toy_stats st = { 0 };
	seen s = { 0 };
	k8s_informer *inf = toy_informer(&st, &s, with_rv);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "kept", "10", "red"));
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "changed", "11", "red"));
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "gone", "12", "blue"));
	int decodes = st.decodes;
	cJSON *items = cJSON_CreateArray();
	cJSON_AddItemToArray(items, cm("a", "kept", "10", "red"));
	cJSON_AddItemToArray(items, cm("a", "changed", "20", "blue"));
	cJSON_AddItemToArray(items, cm("a", "new", "21", "red"));
	k8s__informer_replace(inf, items, "30");
	cJSON_Delete(items);
	ck_assert_int_eq(s.adds, 4);
	ck_assert_int_eq(s.updates, 1);     /* "kept" did not move: no update */
	ck_assert_int_eq(s.deletes, 1);
	ck_assert_int_eq(st.decodes, decodes + 2);
	ck_assert_uint_eq(k8s_informer_size(inf), 3);
	ck_assert_int_eq(index_size(inf, "team", "blue"), 1);
	ck_assert_int_eq(index_size(inf, "team", "red"), 2);
	char rv[64];
	k8s_informer_last_resource_version(inf, rv, sizeof(rv));
	ck_assert_str_eq(rv, "30");
	k8s_informer_free(inf);
	ck_assert_int_eq(st.frees, st.decodes);
}

START_TEST(codec_relist_skips_unchanged_and_deletes_vanished)
{
	relist_case(true);
}
END_TEST

START_TEST(codec_relist_without_resource_version_accessor)
{
	relist_case(false);
}
END_TEST

static cJSON *drop_blue(cJSON *o, void *ud)
{
	if (k8s_obj_label(o, "team") && strcmp(k8s_obj_label(o, "team"), "blue") == 0) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(o, "metadata"), "labels");
	return o;
}

START_TEST(codec_after_transform_and_decode_failure)
{
	toy_stats st = { 0 };
	seen s = { 0 };
	k8s_object_codec codec = { toy_decode, toy_encode, toy_free, toy_rv, &st };
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.codec = &codec;
	o.transform = drop_blue;
	o.on_add = on_add;
	o.on_update = on_update;
	o.on_delete = on_delete;
	o.userdata = &s;
	k8s_informer *inf;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "one", "10", "red"));
	cJSON *got = NULL;
	ck_assert_int_eq(k8s_informer_get(inf, "a", "one", &got), 0);
	ck_assert_ptr_null(k8s_obj_at(got, "metadata.labels"));  /* decoded after the transform */
	cJSON_Delete(got);
	/* the transform drops it: the cached state goes, as a delete */
	k8s__informer_apply(inf, K8S_WATCH_MODIFIED, cm("a", "one", "11", "blue"));
	ck_assert_int_eq(s.deletes, 1);
	ck_assert_str_eq(s.last, "delete a/one 10");
	ck_assert_uint_eq(k8s_informer_size(inf), 0);
	/* a decode failure leaves the previous state cached */
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "two", "12", "red"));
	st.fail_decode = 1;
	k8s__informer_apply(inf, K8S_WATCH_MODIFIED, cm("a", "two", "13", "red"));
	st.fail_decode = 0;
	char buf[64];
	ck_assert_int_eq(k8s_informer_read(inf, "a", "two", read_team, buf), 7);
	ck_assert_str_eq(buf, "-@12");
	ck_assert_int_eq(s.updates, 0);
	k8s_informer_free(inf);
	ck_assert_int_eq(st.frees, st.decodes);
}
END_TEST

static int read_json(const void *v, void *ud)
{
	*(const char **)ud = k8s_obj_name(v);
	return 0;
}

START_TEST(without_codec_read_gives_the_cjson_object)
{
	seen s = { 0 };
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &configmaps;
	o.on_update = on_update;
	o.userdata = &s;
	k8s_informer *inf;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	ck_assert_int_eq(k8s_informer_add_index(inf, "team", index_team, NULL), 0);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cm("a", "one", "10", "red"));
	k8s__informer_apply(inf, K8S_WATCH_MODIFIED, cm("a", "one", "11", "blue"));
	ck_assert_str_eq(s.last, "update a/one 10->11 team red->blue");
	const char *name = NULL;
	ck_assert_int_eq(k8s_informer_read(inf, "a", "one", read_json, &name), 0);
	ck_assert_str_eq(name, "one");
	ck_assert_int_eq(index_size(inf, "team", "blue"), 1);
	ck_assert_int_eq(index_size(inf, "team", "red"), 0);
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cm("a", "one", "12", "blue"));
	ck_assert_uint_eq(k8s_informer_size(inf), 0);
	ck_assert_int_eq(index_size(inf, "team", "blue"), 0);
	k8s_informer_free(inf);
}
END_TEST

START_TEST(options_versions_and_codec_checks)
{
	/* a version-1 caller's struct ends before `codec` */
	k8s_informer_options v1;
	memset(&v1, 0xab, sizeof(v1));
	ck_assert_int_eq(k8s_informer_options_init(&v1, 1), 0);
	ck_assert_uint_eq(v1.version, 1);
	ck_assert_int_eq(v1.watch_timeout_s, 300);
	ck_assert_ptr_eq((void *)v1.codec, (void *)(uintptr_t)0xababababababababULL);
	v1.resource = &configmaps;
	k8s_informer *inf = NULL;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &v1), 0);
	k8s_informer_free(inf);
	ck_assert_int_eq(k8s_informer_options_init(&v1, 3), ASB_EINVAL);
	ck_assert_int_eq(k8s_informer_options_init(NULL, 2), ASB_EINVAL);

	k8s_informer_options o;
	ck_assert_int_eq(k8s_informer_options_init(&o, K8S_INFORMER_OPTIONS_VERSION), 0);
	ck_assert_ptr_null(o.codec);
	o.resource = &configmaps;
	toy_stats st = { 0 };
	k8s_object_codec bad = { toy_decode, NULL, toy_free, NULL, &st };
	o.codec = &bad;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), ASB_EINVAL);
	o.version = 9;
	o.codec = NULL;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), ASB_EINVAL);

	/* a shared informer holds one shape: another codec is refused */
	k8s_informer_factory *f;
	ck_assert_int_eq(k8s_informer_factory_new(&f, client, NULL), 0);
	k8s_object_codec c1 = { toy_decode, toy_encode, toy_free, NULL, &st };
	k8s_informer_options fo = K8S_INFORMER_OPTIONS_INIT;
	fo.resource = &configmaps;
	fo.codec = &c1;
	k8s_informer *i1, *i2;
	ck_assert_int_eq(k8s_informer_factory_informer(f, &fo, &i1), 0);
	k8s_object_codec c2 = c1;  /* same functions: the same informer */
	fo.codec = &c2;
	ck_assert_int_eq(k8s_informer_factory_informer(f, &fo, &i2), 0);
	ck_assert_ptr_eq(i1, i2);
	fo.codec = NULL;
	ck_assert_int_eq(k8s_informer_factory_informer(f, &fo, &i2), ASB_EINVAL);
	c2.userdata = NULL;
	fo.codec = &c2;
	ck_assert_int_eq(k8s_informer_factory_informer(f, &fo, &i2), ASB_EINVAL);
	k8s_informer_factory_free(f);
}
END_TEST

static const char *PACKED_POD =
	"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p1\",\"namespace\":\"ns\","
	"\"resourceVersion\":\"7\",\"labels\":{\"team\":\"red\"}},"
	"\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"ports\":[{\"containerPort\":80}]}]},"
	"\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\"}}";

/* k8s_packer_codec(): the cache holds packed objects and gives them back exactly */
START_TEST(packed_codec_caches_objects_exactly)
{
	k8s_packer *pk = NULL;
	ck_assert_int_eq(k8s_packer_new(&pk, NULL, 0), 0);
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &k8s_resource_pods;
	o.codec = k8s_packer_codec(pk);
	k8s_informer *inf = NULL;
	ck_assert_int_eq(k8s_informer_new(&inf, client, &o), 0);
	cJSON *sb = cJSON_Parse(PACKED_POD);
	k8s__informer_apply(inf, K8S_WATCH_ADDED, cJSON_Duplicate(sb, 1));
	cJSON *got = NULL;
	ck_assert_int_eq(k8s_informer_get(inf, "ns", "p1", &got), 0);
	ck_assert(cJSON_Compare(sb, got, 1));
	cJSON_Delete(got);
	/* a relist with the same resourceVersion keeps it; a newer one replaces it */
	cJSON *items = cJSON_CreateArray();
	cJSON *newer = cJSON_Duplicate(sb, 1);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(newer, "metadata"), "resourceVersion",
	                          cJSON_CreateString("8"));
	cJSON_AddItemToArray(items, newer);
	k8s__informer_replace(inf, items, "8");
	cJSON_Delete(items);
	ck_assert_int_eq(k8s_informer_get(inf, "ns", "p1", &got), 0);
	ck_assert_str_eq(k8s_obj_resource_version(got), "8");
	cJSON_Delete(got);
	k8s__informer_apply(inf, K8S_WATCH_DELETED, cJSON_Duplicate(sb, 1));
	ck_assert_int_eq(k8s_informer_get(inf, "ns", "p1", &got), ASB_ENOTFOUND);
	cJSON_Delete(sb);
	k8s_informer_free(inf);
	k8s_packer_free(pk);
}
END_TEST

/* Per test (in the forked child, so no client thread is inherited across
 * the fork): a client the informers never use, pointed at nothing. */
static void client_setup(void)
{
	static const char kc[] =
		"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		"clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
		"users: [{name: u, user: {token: t}}]\n"
		"contexts: [{name: c, context: {cluster: c, user: u}}]\n";
	k8s_global_init();
	k8s_config *cfg = NULL;
	ck_assert_int_eq(k8s_config_load_yaml(&cfg, kc, strlen(kc), NULL, "test"), 0);
	ck_assert_int_eq(k8s_client_new(&client, cfg, NULL), 0);
	k8s_config_free(cfg);
}

static void client_teardown(void)
{
	k8s_client_free(client);
	client = NULL;
	k8s_global_cleanup();
}

int main(void)
{
	Suite *s = suite_create("informer");
	TCase *tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, client_setup, client_teardown);
	tcase_add_test(tc, codec_store_get_and_read);
	tcase_add_test(tc, codec_update_hands_old_and_new_and_moves_indexes);
	tcase_add_test(tc, codec_delete_clears_cache_and_indexes);
	tcase_add_test(tc, index_sets_of_one_and_many);
	tcase_add_test(tc, codec_list_by_namespace_and_index);
	tcase_add_test(tc, codec_relist_skips_unchanged_and_deletes_vanished);
	tcase_add_test(tc, codec_relist_without_resource_version_accessor);
	tcase_add_test(tc, codec_after_transform_and_decode_failure);
	tcase_add_test(tc, without_codec_read_gives_the_cjson_object);
	tcase_add_test(tc, options_versions_and_codec_checks);
	tcase_add_test(tc, packed_codec_caches_objects_exactly);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
