/*
 * fixture.h - shared helpers of the libsandbox unit tests: load JSON
 * fixtures from tests/unit/libsandbox/fixtures/, edit them by dotted path,
 * run a plan through a scripted executor (callbacks standing in for the I/O), and assert on actions,
 * bodies and conditions.
 *
 * The scripted executor answers every action with success unless a rule says
 * otherwise; a Pod create answers the body with status.phase "Pending" (as
 * the API server would), other writes answer nothing.
 */
#ifndef SBX_TEST_FIXTURE_H
#define SBX_TEST_FIXTURE_H

#include <check.h>
#include <cjson/cJSON.h>
#include "k8s/common.h"
#include "k8s/object.h"
#include "sandbox/api.h"
#include "sandbox/namehash.h"
#include "sandbox/reconcile.h"

/* The hash of the fixtures' Sandbox name "my-sandbox". */
#define FX_HASH "374de8f5"
#define FX_UID "6b1d7a52-0000-4000-8000-000000000001"
/* Now in the fixtures: 2026-01-02T03:04:05Z. */
#define FX_NOW_STR "2026-01-02T03:04:05Z"
#define FX_NOW_MS 1767323045000LL

/* Loads fixtures/<file>; fails the test when unreadable or not JSON. */
cJSON *fx_load(const char *file);

/* Sets `value` (taken) at the dotted `path` of `obj`, creating objects. */
void fx_set(cJSON *obj, const char *path, cJSON *value);
void fx_set_str(cJSON *obj, const char *path, const char *value);
/* Deletes the member at `path` (if any). */
void fx_del(cJSON *obj, const char *path);
/* Sets metadata.labels[key] / metadata.annotations[key] (NULL: delete). */
void fx_label(cJSON *obj, const char *key, const char *value);
void fx_annotation(cJSON *obj, const char *key, const char *value);
/* A JSON array holding copies of the given objects (NULL-terminated). */
cJSON *fx_list(const cJSON *first, ...) __attribute__((sentinel));

/* A scripted failure: the n-th (1-based; 0 = every) matching action fails. */
typedef struct {
	sbx_object object;
	sbx_verb verb;
	int rc;
	const char *message;
	int nth;
	int seen;
} fx_rule;

/* The scripted executor. */
typedef struct {
	fx_rule rules[8];
	int n_rules;
	const cJSON *fetch;   /* answer of a fetch after AlreadyExists (copied) */
	int applied;          /* actions applied */
	int fetched;          /* fetches made */
} fx_server;

void fx_fail(fx_server *s, sbx_object object, sbx_verb verb, int rc,
             const char *message);

/* One pass: plan, execute against `srv` (NULL: all succeed), outcome. */
typedef struct {
	sbx_plan *plan;
	sbx_outcome out;
} fx_pass;

void fx_run(fx_pass *pass, const sbx_observed *obs, fx_server *srv);
void fx_pass_free(fx_pass *pass);

/* The observed state of the fixtures' namespace at FX_NOW_MS. */
sbx_observed fx_observed(const cJSON *sandbox);

/* Asserts action `i` of the plan and returns it. */
const sbx_action *fx_action(const sbx_plan *plan, size_t i, sbx_step step,
                            sbx_verb verb, sbx_object object, const char *name);

/* Asserts JSON equality (objects order-insensitive), printing both. */
void fx_assert_json(const cJSON *got, const cJSON *want);
/* Same, `want` given as JSON text. */
void fx_assert_json_str(const cJSON *got, const char *want);

/* The condition `type` of a status, or NULL. */
const cJSON *fx_condition(const cJSON *status, const char *type);
/* Asserts condition `type` has these status, reason, message. */
void fx_assert_condition(const cJSON *status, const char *type,
                         const char *cstatus, const char *reason,
                         const char *message);

/* Runs a Check suite; returns the process exit code. */
int fx_main(Suite *s);

#endif
