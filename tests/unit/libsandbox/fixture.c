/*
 * fixture.c - the helpers of fixture.h: fixture loading, path edits, the
 * scripted fake API server and the assertions shared by the tests.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fixture.h"

cJSON *fx_load(const char *file)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", TEST_DATA_DIR, file);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open fixture %s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	cJSON *j = cJSON_Parse(buf);
	free(buf);
	ck_assert_msg(j != NULL, "fixture %s is not valid JSON", path);
	return j;
}

/* Walks `path` to the parent object of its last segment. */
static cJSON *parent_of(cJSON *obj, const char *path, const char **last,
                        bool create, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s", path);
	char *seg = buf, *dot;
	cJSON *cur = obj;
	while ((dot = strchr(seg, '.'))) {
		*dot = '\0';
		cJSON *next = cJSON_GetObjectItemCaseSensitive(cur, seg);
		if (!cJSON_IsObject(next)) {
			if (!create)
				return NULL;
			next = cJSON_CreateObject();
			if (cJSON_GetObjectItemCaseSensitive(cur, seg))
				cJSON_ReplaceItemInObjectCaseSensitive(cur, seg, next);
			else
				cJSON_AddItemToObject(cur, seg, next);
		}
		cur = next;
		seg = dot + 1;
	}
	*last = seg;
	return cur;
}

void fx_set(cJSON *obj, const char *path, cJSON *value)
{
	char buf[256];
	const char *last;
	cJSON *parent = parent_of(obj, path, &last, true, buf, sizeof(buf));
	if (cJSON_GetObjectItemCaseSensitive(parent, last))
		cJSON_ReplaceItemInObjectCaseSensitive(parent, last, value);
	else
		cJSON_AddItemToObject(parent, last, value);
}

void fx_set_str(cJSON *obj, const char *path, const char *value)
{
	fx_set(obj, path, cJSON_CreateString(value));
}

void fx_del(cJSON *obj, const char *path)
{
	char buf[256];
	const char *last;
	cJSON *parent = parent_of(obj, path, &last, false, buf, sizeof(buf));
	if (parent)
		cJSON_DeleteItemFromObjectCaseSensitive(parent, last);
}

static void map_set(cJSON *obj, const char *map, const char *key,
                    const char *value)
{
	cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata");
	cJSON *m = cJSON_GetObjectItemCaseSensitive(md, map);
	if (!m) {
		m = cJSON_CreateObject();
		cJSON_AddItemToObject(md, map, m);
	}
	cJSON_DeleteItemFromObjectCaseSensitive(m, key);
	if (value)
		cJSON_AddStringToObject(m, key, value);
}

void fx_label(cJSON *obj, const char *key, const char *value)
{
	map_set(obj, "labels", key, value);
}

void fx_annotation(cJSON *obj, const char *key, const char *value)
{
	map_set(obj, "annotations", key, value);
}

cJSON *fx_list(const cJSON *first, ...)
{
	cJSON *a = cJSON_CreateArray();
	va_list ap;
	va_start(ap, first);
	for (const cJSON *o = first; o; o = va_arg(ap, const cJSON *))
		cJSON_AddItemToArray(a, cJSON_Duplicate(o, true));
	va_end(ap);
	return a;
}

void fx_fail(fx_server *s, sbx_object object, sbx_verb verb, int rc,
             const char *message)
{
	ck_assert_int_lt(s->n_rules, 8);
	s->rules[s->n_rules++] = (fx_rule){ object, verb, rc, message, 0, 0 };
}

static int fake_apply(const sbx_action *a, const char *ns, cJSON **result,
                      void *userdata)
{
	fx_server *s = userdata;
	ck_assert_str_eq(ns, "team-a");
	if (s) {
		s->applied++;
		for (int i = 0; i < s->n_rules; i++) {
			fx_rule *r = &s->rules[i];
			if (r->object != a->object || r->verb != a->verb)
				continue;
			r->seen++;
			if (r->nth == 0 || r->nth == r->seen)
				return asb_error_set(r->rc, 0, NULL, "%s", r->message);
		}
	}
	if (a->verb == SBX_VERB_CREATE && a->object == SBX_OBJ_POD) {
		cJSON *pod = cJSON_Duplicate(a->body, true);
		fx_set_str(pod, "metadata.uid", "created-pod-uid");
		fx_set_str(pod, "status.phase", "Pending");
		*result = pod;
	}
	return 0;
}

static int fake_fetch(sbx_object object, const char *ns, const char *name,
                      cJSON **out, void *userdata)
{
	fx_server *s = userdata;
	if (s)
		s->fetched++;
	if (!s || !s->fetch)
		return asb_error_set(ASB_ENOTFOUND, 404, "NotFound",
		                     "\"%s\" not found", name);
	*out = cJSON_Duplicate(s->fetch, true);
	return 0;
}

static cJSON *dup_or_null(const cJSON *o)
{
	cJSON *c = o ? cJSON_Duplicate(o, true) : NULL;
	ck_assert(!o || c);
	return c;
}

/* The plan that takes its objects (the controller's way) decides the same
 * actions, with the same bodies, as the one that copies them. */
static void assert_take_plans_alike(const sbx_plan *copied, const sbx_observed *obs)
{
	sbx_observed o = *obs;
	sbx_observed_objects objs = {
		dup_or_null(obs->sandbox), dup_or_null(obs->pods), dup_or_null(obs->pod),
		dup_or_null(obs->service), dup_or_null(obs->pvcs)
	};
	o.sandbox = objs.sandbox;
	o.pods = objs.pods;
	o.pod = objs.pod;
	o.service = objs.service;
	o.pvcs = objs.pvcs;
	sbx_plan *taken = NULL;
	ck_assert_int_eq(sbx_plan_new_take(&taken, &o, &objs), 0);
	ck_assert_ptr_null(objs.sandbox);
	ck_assert_ptr_null(objs.pvcs);
	ck_assert_int_eq(sbx_plan_pass(taken), sbx_plan_pass(copied));
	ck_assert_uint_eq(sbx_plan_action_count(taken), sbx_plan_action_count(copied));
	for (size_t i = 0; i < sbx_plan_action_count(copied); i++) {
		const sbx_action *a = sbx_plan_action(copied, i), *b = sbx_plan_action(taken, i);
		ck_assert_int_eq(a->step, b->step);
		ck_assert_int_eq(a->verb, b->verb);
		ck_assert_int_eq(a->object, b->object);
		ck_assert_str_eq(a->name, b->name);
		ck_assert(cJSON_Compare(a->body, b->body, true) || (!a->body && !b->body));
	}
	sbx_plan_free(taken);
}

void fx_run(fx_pass *pass, const sbx_observed *obs, fx_server *srv)
{
	memset(pass, 0, sizeof(*pass));
	ck_assert_int_eq(sbx_plan_new(&pass->plan, obs), 0);
	assert_take_plans_alike(pass->plan, obs);
	sbx_executor ex = { fake_apply, fake_fetch, srv };
	ck_assert_int_eq(sbx_plan_execute(pass->plan, &ex), 0);
	ck_assert_int_eq(sbx_plan_outcome(pass->plan, obs->now_ms, &pass->out), 0);
}

void fx_pass_free(fx_pass *pass)
{
	sbx_outcome_dispose(&pass->out);
	sbx_plan_free(pass->plan);
	pass->plan = NULL;
}

sbx_observed fx_observed(const cJSON *sandbox)
{
	sbx_observed o = { 0 };
	o.sandbox = sandbox;
	o.now_ms = FX_NOW_MS;
	return o;
}

static const char *step_name(sbx_step s)
{
	static const char *const n[] = { "pvc", "pod", "service", "sandbox" };
	return (unsigned)s < 4 ? n[s] : "?";
}

static const char *verb_name(sbx_verb v)
{
	static const char *const n[] = { "create", "update", "patch", "delete" };
	return (unsigned)v < 4 ? n[v] : "?";
}

static const char *object_name(sbx_object o)
{
	static const char *const n[] = { "sandbox", "pod", "service", "pvc", "claim" };
	return (unsigned)o < 5 ? n[o] : "?";
}

const sbx_action *fx_action(const sbx_plan *plan, size_t i, sbx_step step,
                            sbx_verb verb, sbx_object object, const char *name)
{
	const sbx_action *a = sbx_plan_action(plan, i);
	ck_assert_msg(a != NULL, "no action %zu (plan has %zu)", i,
	              sbx_plan_action_count(plan));
	ck_assert_msg(a->step == step && a->verb == verb && a->object == object,
	              "action %zu is %s %s %s/%s, expected %s %s %s/%s", i,
	              step_name(a->step), verb_name(a->verb), object_name(a->object),
	              a->name, step_name(step), verb_name(verb), object_name(object),
	              name);
	ck_assert_str_eq(a->name, name);
	return a;
}

void fx_assert_json(const cJSON *got, const cJSON *want)
{
	if (cJSON_Compare(got, want, true))
		return;
	char *g = got ? cJSON_Print(got) : strdup("(null)");
	char *w = want ? cJSON_Print(want) : strdup("(null)");
	ck_abort_msg("JSON differs.\n--- got:\n%s\n--- want:\n%s", g, w);
	free(g);
	free(w);
}

void fx_assert_json_str(const cJSON *got, const char *want)
{
	cJSON *w = cJSON_Parse(want);
	ck_assert_msg(w != NULL, "bad expected JSON: %s", want);
	fx_assert_json(got, w);
	cJSON_Delete(w);
}

const cJSON *fx_condition(const cJSON *status, const char *type)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(status, "conditions")) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "type");
		if (cJSON_IsString(t) && strcmp(t->valuestring, type) == 0)
			return c;
	}
	return NULL;
}

void fx_assert_condition(const cJSON *status, const char *type,
                         const char *cstatus, const char *reason,
                         const char *message)
{
	const cJSON *c = fx_condition(status, type);
	ck_assert_msg(c != NULL, "no %s condition", type);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "status")->valuestring, cstatus);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "reason")->valuestring, reason);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "message")->valuestring, message);
}

int fx_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
