/*
 * test_events.c - the event recorder (libk8s/src/events.c) against a real
 * kube-apiserver ($KUBECONFIG), in a fresh namespace deleted at the end:
 * - one event becomes an events.k8s.io/v1 Event with the right fields;
 * - the same event recorded 10 times quickly is one Event whose
 *   series.count is 10 after a flush; later repeats wait for the series
 *   interval (or a flush) before they are written;
 * - the rate limit lets 25 distinct events per object through, drops the
 *   rest, and counts them;
 * - an event the server refuses (its namespace does not exist) is counted
 *   as failed, never reported to the caller;
 * - an event about a cluster-scoped object lands in "default".
 */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/config.h"
#include "k8s/events.h"
#include "k8s/object.h"

static k8s_client *client;
static asb_logger *logger;
static char ns[64];
static char instance[64];
static const char *controller = "agents.x-k8s.io/libk8s-test";

static const k8s_resource configmaps = { "", "v1", "configmaps", "ConfigMap", true };

#define OK(call) do { \
	int rc_ = (call); \
	ck_assert_msg(rc_ == 0, "%s: rc %d (%s): %s", #call, rc_, \
	              asb_strerror(rc_), asb_error_last()->message); \
} while (0)

/* Creates a ConfigMap to be the regarding object; the caller frees it. */
static cJSON *make_object(const char *name)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	         "\"metadata\":{\"name\":\"%s\"},\"data\":{\"k\":\"v\"}}", name);
	cJSON *want = cJSON_Parse(buf), *got = NULL;
	OK(k8s_client_create(client, &configmaps, ns, want, NULL, &got));
	cJSON_Delete(want);
	return got;
}

static k8s_event_recorder *recorder(void)
{
	k8s_event_recorder_options o = K8S_EVENT_RECORDER_OPTIONS_INIT;
	o.reporting_controller = controller;
	o.reporting_instance = instance;
	o.logger = logger;
	k8s_event_recorder *rec = NULL;
	OK(k8s_event_recorder_new(&rec, client, &o));
	return rec;
}

/* The Events in `in_ns` about the object named `name` with `reason` (a new array). */
static cJSON *events_about(const char *in_ns, const char *name, const char *reason)
{
	cJSON *list = NULL;
	OK(k8s_client_list(client, &k8s_resource_events_v1, in_ns, NULL, &list));
	cJSON *out = cJSON_CreateArray();
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(list, "items")) {
		const char *rn = k8s_obj_str(it, "regarding.name");
		const char *r = k8s_obj_str(it, "reason");
		if (rn && strcmp(rn, name) == 0 && (!reason || (r && strcmp(r, reason) == 0)))
			cJSON_AddItemToArray(out, cJSON_Duplicate(it, 1));
	}
	cJSON_Delete(list);
	return out;
}

static int series_count(const cJSON *ev)
{
	const cJSON *c = k8s_obj_at(ev, "series.count");
	return cJSON_IsNumber(c) ? (int)c->valuedouble : 0;
}

static void assert_matches(const char *s, const char *pattern)
{
	regex_t re;
	ck_assert_int_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_msg(s && regexec(&re, s, 0, NULL, 0) == 0, "\"%s\" does not match %s",
	              s ? s : "(null)", pattern);
	regfree(&re);
}

#define MICROTIME "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6}Z$"

/* --- tests ------------------------------------------------------------------- */

START_TEST(an_event_is_created_with_the_right_fields)
{
	cJSON *obj = make_object("one");
	k8s_event_ref ref;
	OK(k8s_event_ref_from(obj, "v1", "ConfigMap", &ref));
	k8s_event_recorder *rec = recorder();
	OK(k8s_event_recordf(rec, &ref, NULL, K8S_EVENT_WARNING, "FailedSync", "Sync",
	                     "could not sync %s: %s", "one", "quota exceeded"));
	OK(k8s_event_recorder_flush(rec, 20000));

	cJSON *evs = events_about(ns, "one", NULL);
	ck_assert_int_eq(cJSON_GetArraySize(evs), 1);
	const cJSON *ev = cJSON_GetArrayItem(evs, 0);
	assert_matches(k8s_obj_name(ev), "^one\\.[0-9a-f]{16}$");
	ck_assert_str_eq(k8s_obj_namespace(ev), ns);
	ck_assert_str_eq(k8s_obj_str(ev, "type"), "Warning");
	ck_assert_str_eq(k8s_obj_str(ev, "reason"), "FailedSync");
	ck_assert_str_eq(k8s_obj_str(ev, "action"), "Sync");
	ck_assert_str_eq(k8s_obj_str(ev, "note"), "could not sync one: quota exceeded");
	ck_assert_str_eq(k8s_obj_str(ev, "reportingController"), controller);
	ck_assert_str_eq(k8s_obj_str(ev, "reportingInstance"), instance);
	assert_matches(k8s_obj_str(ev, "eventTime"), MICROTIME);
	ck_assert_str_eq(k8s_obj_str(ev, "regarding.apiVersion"), "v1");
	ck_assert_str_eq(k8s_obj_str(ev, "regarding.kind"), "ConfigMap");
	ck_assert_str_eq(k8s_obj_str(ev, "regarding.namespace"), ns);
	ck_assert_str_eq(k8s_obj_str(ev, "regarding.name"), "one");
	ck_assert_str_eq(k8s_obj_str(ev, "regarding.uid"), k8s_obj_uid(obj));
	ck_assert_str_eq(k8s_obj_str(ev, "regarding.resourceVersion"), k8s_obj_resource_version(obj));
	ck_assert_ptr_null(k8s_obj_at(ev, "series"));

	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.created, 1);
	ck_assert_uint_eq(st.failed, 0);
	k8s_event_recorder_free(rec);
	cJSON_Delete(evs);
	cJSON_Delete(obj);
}
END_TEST

START_TEST(ten_repeats_make_one_event_with_a_series)
{
	cJSON *obj = make_object("repeat");
	k8s_event_ref ref;
	OK(k8s_event_ref_from(obj, "v1", "ConfigMap", &ref));
	k8s_event_recorder *rec = recorder();
	for (int i = 0; i < 10; i++)
		OK(k8s_event_record(rec, &ref, NULL, K8S_EVENT_NORMAL, "Retrying", "Reconcile",
		                    "waiting for the pod"));
	OK(k8s_event_recorder_flush(rec, 20000));

	cJSON *evs = events_about(ns, "repeat", "Retrying");
	ck_assert_int_eq(cJSON_GetArraySize(evs), 1);
	const cJSON *ev = cJSON_GetArrayItem(evs, 0);
	ck_assert_int_eq(series_count(ev), 10);
	assert_matches(k8s_obj_str(ev, "series.lastObservedTime"), MICROTIME);
	char name[300];
	snprintf(name, sizeof(name), "%s", k8s_obj_name(ev));
	cJSON_Delete(evs);

	/* Five more: written at most once per series interval (30 s), so not yet... */
	for (int i = 0; i < 5; i++)
		OK(k8s_event_record(rec, &ref, NULL, K8S_EVENT_NORMAL, "Retrying", "Reconcile",
		                    "waiting for the pod"));
	sleep(2);
	cJSON *got = NULL;
	OK(k8s_client_get(client, &k8s_resource_events_v1, ns, name, &got));
	ck_assert_int_eq(series_count(got), 10);
	cJSON_Delete(got);
	/* ...but a flush writes them, on the same Event. */
	OK(k8s_event_recorder_flush(rec, 20000));
	OK(k8s_client_get(client, &k8s_resource_events_v1, ns, name, &got));
	ck_assert_int_eq(series_count(got), 15);
	cJSON_Delete(got);
	evs = events_about(ns, "repeat", "Retrying");
	ck_assert_int_eq(cJSON_GetArraySize(evs), 1);

	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.recorded, 15);
	ck_assert_uint_eq(st.aggregated, 14);
	ck_assert_uint_eq(st.created, 1);
	ck_assert_uint_ge(st.series_patches, 1);
	ck_assert_uint_eq(st.failed, 0);
	k8s_event_recorder_free(rec);
	cJSON_Delete(evs);
	cJSON_Delete(obj);
}
END_TEST

START_TEST(rate_limit_drops_beyond_the_burst_per_object)
{
	cJSON *obj = make_object("noisy");
	cJSON *quiet = make_object("quiet");
	k8s_event_ref ref, qref;
	OK(k8s_event_ref_from(obj, "v1", "ConfigMap", &ref));
	OK(k8s_event_ref_from(quiet, "v1", "ConfigMap", &qref));
	k8s_event_recorder *rec = recorder();
	int accepted = 0, dropped = 0;
	for (int i = 0; i < 30; i++) {
		int rc = k8s_event_recordf(rec, &ref, NULL, K8S_EVENT_NORMAL, "Step", "Reconcile",
		                           "step %d", i);
		if (rc == 0)
			accepted++;
		else if (rc == ASB_ETOOMANYREQUESTS)
			dropped++;
	}
	ck_assert_int_eq(accepted, 25);
	ck_assert_int_eq(dropped, 5);
	/* another object has its own bucket */
	OK(k8s_event_record(rec, &qref, NULL, K8S_EVENT_NORMAL, "Step", "Reconcile", "step 0"));
	OK(k8s_event_recorder_flush(rec, 30000));

	cJSON *evs = events_about(ns, "noisy", "Step");
	ck_assert_int_eq(cJSON_GetArraySize(evs), 25);
	cJSON_Delete(evs);
	evs = events_about(ns, "quiet", "Step");
	ck_assert_int_eq(cJSON_GetArraySize(evs), 1);
	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.dropped_rate_limited, 5);
	ck_assert_uint_eq(st.created, 26);
	k8s_event_recorder_free(rec);
	cJSON_Delete(evs);
	cJSON_Delete(quiet);
	cJSON_Delete(obj);
}
END_TEST

START_TEST(a_refused_event_is_counted_not_returned)
{
	k8s_event_ref ghost = { "v1", "ConfigMap", "no-such-namespace-libk8s-it", "ghost",
	                        NULL, NULL };
	k8s_event_recorder *rec = recorder();
	OK(k8s_event_record(rec, &ghost, NULL, K8S_EVENT_WARNING, "Lost", "Sync", "nobody hears"));
	OK(k8s_event_recorder_flush(rec, 20000));
	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.created, 0);
	ck_assert_uint_eq(st.failed, 1);
	k8s_event_recorder_free(rec);
}
END_TEST

START_TEST(an_event_about_a_cluster_scoped_object_goes_to_default)
{
	cJSON *nsobj = NULL;
	OK(k8s_client_get(client, &k8s_resource_namespaces, NULL, ns, &nsobj));
	k8s_event_ref ref;
	OK(k8s_event_ref_from(nsobj, "v1", "Namespace", &ref));
	k8s_event_recorder *rec = recorder();
	OK(k8s_event_record(rec, &ref, NULL, K8S_EVENT_NORMAL, "Tested", "Test", "cluster-scoped"));
	OK(k8s_event_recorder_flush(rec, 20000));
	cJSON *evs = events_about("default", ns, "Tested");
	ck_assert_int_eq(cJSON_GetArraySize(evs), 1);
	const cJSON *ev = cJSON_GetArrayItem(evs, 0);
	ck_assert_str_eq(k8s_obj_str(ev, "regarding.kind"), "Namespace");
	ck_assert_ptr_null(k8s_obj_at(ev, "regarding.namespace"));
	OK(k8s_client_delete(client, &k8s_resource_events_v1, "default", k8s_obj_name(ev), NULL, NULL));
	k8s_event_recorder_free(rec);
	cJSON_Delete(evs);
	cJSON_Delete(nsobj);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("events");
	TCase *tc = tcase_create("recorder");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, an_event_is_created_with_the_right_fields);
	tcase_add_test(tc, ten_repeats_make_one_event_with_a_series);
	tcase_add_test(tc, rate_limit_drops_beyond_the_burst_per_object);
	tcase_add_test(tc, a_refused_event_is_counted_not_returned);
	tcase_add_test(tc, an_event_about_a_cluster_scoped_object_goes_to_default);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *kc = getenv("KUBECONFIG");
	if (!kc || !kc[0]) {
		fprintf(stderr, "test_events: KUBECONFIG is not set; point it at the admin "
		        "kubeconfig of a real cluster (tools/local-cluster up prints one)\n");
		return EXIT_FAILURE;
	}
	snprintf(instance, sizeof(instance), "libk8s-test-%ld", (long)getpid());
	asb_logger_new(&logger, stderr, ASB_LOG_TEXT, ASB_LOG_DEBUG);
	k8s_config *cfg = NULL;
	cJSON *want = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
	                          "\"metadata\":{\"generateName\":\"events-it-\"}}");
	cJSON *got = NULL;
	if (k8s_global_init() < 0 || k8s_config_load(&cfg, NULL, NULL) != 0 ||
	    k8s_client_new(&client, cfg, NULL) != 0 ||
	    k8s_client_create(client, &k8s_resource_namespaces, NULL, want, NULL, &got) != 0) {
		fprintf(stderr, "test_events: %s\n", asb_error_last()->message);
		return EXIT_FAILURE;
	}
	snprintf(ns, sizeof(ns), "%s", k8s_obj_name(got));
	cJSON_Delete(got);
	cJSON_Delete(want);
	printf("test_events: server %s, namespace %s\n", k8s_config_server(cfg), ns);

	SRunner *sr = srunner_create(suite());
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);

	k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
	d.propagation_policy = "Background";
	if (k8s_client_delete(client, &k8s_resource_namespaces, NULL, ns, &d, NULL) != 0) {
		fprintf(stderr, "test_events: deleting namespace %s: %s\n", ns,
		        asb_error_last()->message);
		failed++;
	}
	k8s_client_free(client);
	k8s_config_free(cfg);
	asb_logger_free(logger);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
