/*
 * Unit tests of libk8s/src/events.c: aggregation keys, the per-object
 * token bucket, series pacing, the Event and series-patch documents, and
 * the recorder's synchronous decisions (aggregate, rate-limit, queue full,
 * argument checks), which do not depend on an API server answering.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/client.h"
#include "k8s/events.h"
#include "k8s/object.h"
#include "events_internal.h"

static k8s_event_ref pod(const char *name)
{
	k8s_event_ref r = { "v1", "Pod", "ns", name, "uid-1", "100" };
	return r;
}

/* --- keys ------------------------------------------------------------------- */

static char *key_of(const k8s_event_ref *reg, const k8s_event_ref *rel,
                    k8s_event_type t, const char *reason, const char *action,
                    const char *note)
{
	char *k = k8s__event_key(reg, rel, t, reason, action, note);
	ck_assert_ptr_nonnull(k);
	return k;
}

START_TEST(identical_events_share_a_key_and_any_difference_splits_it)
{
	k8s_event_ref a = pod("a");
	char *base = key_of(&a, NULL, K8S_EVENT_NORMAL, "Created", "Create", "made it");
	char *same = key_of(&a, NULL, K8S_EVENT_NORMAL, "Created", "Create", "made it");
	ck_assert_str_eq(base, same);
	free(same);

	/* resourceVersion is not part of the identity */
	k8s_event_ref a2 = a;
	a2.resource_version = "101";
	same = key_of(&a2, NULL, K8S_EVENT_NORMAL, "Created", "Create", "made it");
	ck_assert_str_eq(base, same);
	free(same);

	k8s_event_ref v[5] = { a, a, a, a, a };
	v[0].api_version = "v2";
	v[1].kind = "Service";
	v[2].namespace_ = "other";
	v[3].name = "b";
	v[4].uid = "uid-2";
	for (int i = 0; i < 5; i++) {
		char *k = key_of(&v[i], NULL, K8S_EVENT_NORMAL, "Created", "Create", "made it");
		ck_assert_str_ne(k, base);
		free(k);
	}
	char *others[] = {
		key_of(&a, &v[1], K8S_EVENT_NORMAL, "Created", "Create", "made it"),
		key_of(&a, NULL, K8S_EVENT_WARNING, "Created", "Create", "made it"),
		key_of(&a, NULL, K8S_EVENT_NORMAL, "Failed", "Create", "made it"),
		key_of(&a, NULL, K8S_EVENT_NORMAL, "Created", "Delete", "made it"),
		key_of(&a, NULL, K8S_EVENT_NORMAL, "Created", "Create", "made it!"),
		key_of(&a, NULL, K8S_EVENT_NORMAL, "Created", "Create", NULL),
	};
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		ck_assert_msg(strcmp(others[i], base) != 0, "variant %zu", i);
		free(others[i]);
	}
	free(base);
}
END_TEST

START_TEST(keys_are_unambiguous_across_field_boundaries)
{
	k8s_event_ref a = pod("a");
	char *k1 = key_of(&a, NULL, K8S_EVENT_NORMAL, "AB", "C", "n");
	char *k2 = key_of(&a, NULL, K8S_EVENT_NORMAL, "A", "BC", "n");
	ck_assert_str_ne(k1, k2);
	free(k1);
	free(k2);
}
END_TEST

START_TEST(object_key_names_the_object_only)
{
	k8s_event_ref a = pod("a"), a2 = pod("a"), b = pod("b");
	a2.resource_version = "999";
	char *ka = k8s__event_object_key(&a), *ka2 = k8s__event_object_key(&a2);
	char *kb = k8s__event_object_key(&b);
	ck_assert_str_eq(ka, ka2);
	ck_assert_str_ne(ka, kb);
	free(ka);
	free(ka2);
	free(kb);
}
END_TEST

/* --- token bucket --------------------------------------------------------------- */

START_TEST(bucket_allows_the_burst_then_one_per_interval)
{
	const long refill = 300000;
	k8s__token_bucket b;
	k8s__bucket_init(&b, 25, 1000);
	ck_assert(k8s__bucket_full(&b, 25, refill, 1000));
	for (int i = 0; i < 25; i++)
		ck_assert_msg(k8s__bucket_take(&b, 25, refill, 1000), "take %d", i);
	ck_assert(!k8s__bucket_take(&b, 25, refill, 1000));
	ck_assert(!k8s__bucket_full(&b, 25, refill, 1000));
	/* 4 min 59 s later: still nothing */
	ck_assert(!k8s__bucket_take(&b, 25, refill, 1000 + refill - 1000));
	/* one interval after the burst: exactly one more */
	ck_assert(k8s__bucket_take(&b, 25, refill, 1000 + refill));
	ck_assert(!k8s__bucket_take(&b, 25, refill, 1000 + refill));
	/* three intervals later: three */
	int64_t t = 1000 + 4 * refill;
	for (int i = 0; i < 3; i++)
		ck_assert(k8s__bucket_take(&b, 25, refill, t));
	ck_assert(!k8s__bucket_take(&b, 25, refill, t));
	/* a day idle refills to the burst, not beyond */
	t += 86400000;
	ck_assert(k8s__bucket_full(&b, 25, refill, t));
	for (int i = 0; i < 25; i++)
		ck_assert(k8s__bucket_take(&b, 25, refill, t));
	ck_assert(!k8s__bucket_take(&b, 25, refill, t));
}
END_TEST

START_TEST(bucket_ignores_a_clock_going_backwards)
{
	k8s__token_bucket b;
	k8s__bucket_init(&b, 1, 5000);
	ck_assert(k8s__bucket_take(&b, 1, 1000, 5000));
	ck_assert(!k8s__bucket_take(&b, 1, 1000, 4000));
	ck_assert(!k8s__bucket_take(&b, 1, 1000, 5999));
	ck_assert(k8s__bucket_take(&b, 1, 1000, 6000));
}
END_TEST

/* --- series --------------------------------------------------------------------- */

#define INTERVAL 30000
#define WINDOW 360000

START_TEST(first_repeat_is_written_at_once_then_at_most_once_per_interval)
{
	k8s__event_series s;
	k8s__series_start(&s, 1000, 111);
	ck_assert_int_eq(s.count, 1);
	/* not created yet: nothing to patch */
	k8s__series_observe(&s, 1100, 222);
	ck_assert_int_eq(s.count, 2);
	ck_assert_int_eq(s.last_observed_us, 222);
	ck_assert(!k8s__series_patch_due(&s, 1100, INTERVAL, WINDOW, true));
	ck_assert_int_eq(k8s__series_next_patch_ms(&s, INTERVAL, WINDOW), INT64_MAX);

	/* created with count 1 (the repeat came after): the first PATCH is due now */
	s.created = true;
	s.written_count = 1;
	ck_assert(k8s__series_patch_due(&s, 1100, INTERVAL, WINDOW, false));
	/* written at 1200 */
	s.written_count = 2;
	s.last_write_ms = 1200;
	ck_assert(!k8s__series_patch_due(&s, 1200, INTERVAL, WINDOW, false));
	for (int i = 0; i < 8; i++)
		k8s__series_observe(&s, 1300 + i, 300 + i);
	ck_assert_int_eq(s.count, 10);
	ck_assert(!k8s__series_patch_due(&s, 1300, INTERVAL, WINDOW, false));
	ck_assert(!k8s__series_patch_due(&s, 1200 + INTERVAL - 1, INTERVAL, WINDOW, false));
	ck_assert(k8s__series_patch_due(&s, 1200 + INTERVAL, INTERVAL, WINDOW, false));
	ck_assert_int_eq(k8s__series_next_patch_ms(&s, INTERVAL, WINDOW), 1200 + INTERVAL);
	/* a flush does not wait for the interval */
	ck_assert(k8s__series_patch_due(&s, 1300, INTERVAL, WINDOW, true));
	/* nothing unwritten: nothing due, even forced */
	s.written_count = 10;
	ck_assert(!k8s__series_patch_due(&s, 1000000, INTERVAL, WINDOW, true));
}
END_TEST

START_TEST(series_ends_after_the_window_and_its_final_count_is_written)
{
	/* a long interval, so that the end of the series comes first */
	const long interval = 1000000, window = 6000;
	k8s__event_series s;
	k8s__series_start(&s, 0, 0);
	s.created = true;
	s.written_count = 1;
	k8s__series_observe(&s, 10, 10);
	s.written_count = 2;
	s.last_write_ms = 20;
	k8s__series_observe(&s, 30, 30);  /* count 3, unwritten */
	ck_assert(!k8s__series_expired(&s, 30 + window - 1, window));
	ck_assert(k8s__series_expired(&s, 30 + window, window));
	ck_assert_int_eq(k8s__series_next_patch_ms(&s, interval, window), 30 + window);
	ck_assert(!k8s__series_patch_due(&s, 30 + window - 1, interval, window, false));
	ck_assert(k8s__series_patch_due(&s, 30 + window, interval, window, false));
	/* after that write failed (written_count unchanged), it waits an interval */
	s.last_write_ms = 30 + window;
	ck_assert_int_eq(k8s__series_next_patch_ms(&s, interval, window), 30 + window + interval);
}
END_TEST

/* --- documents ------------------------------------------------------------------- */

START_TEST(event_names_are_the_object_name_and_16_hex_digits)
{
	char b[300];
	k8s__event_name(b, sizeof(b), "web-0", 0x17a0b1c2d3e4f506LL);
	ck_assert_str_eq(b, "web-0.17a0b1c2d3e4f506");
	k8s__event_name(b, sizeof(b), "x", 1);
	ck_assert_str_eq(b, "x.0000000000000001");
	char longname[300];
	memset(longname, 'n', 280);
	longname[280] = '\0';
	k8s__event_name(b, sizeof(b), longname, 255);
	ck_assert_uint_eq(strlen(b), 253);
	ck_assert_str_eq(b + 236, ".00000000000000ff");
}
END_TEST

START_TEST(event_namespace_follows_the_object_or_default)
{
	k8s_event_ref r = pod("a");
	ck_assert_str_eq(k8s__event_namespace(&r), "ns");
	r.namespace_ = "";
	ck_assert_str_eq(k8s__event_namespace(&r), "default");
	r.namespace_ = NULL;
	ck_assert_str_eq(k8s__event_namespace(&r), "default");
}
END_TEST

START_TEST(event_document_has_the_events_v1_fields)
{
	k8s_event_ref reg = pod("web-0");
	k8s_event_ref rel = { "v1", "Node", NULL, "node-1", NULL, NULL };
	k8s__event_fields f = {
		.name = "web-0.0000000000000001", .ns = "ns", .regarding = &reg,
		.related = &rel, .type = K8S_EVENT_WARNING, .reason = "FailedCreate",
		.action = "Create", .note = "quota exceeded",
		.reporting_controller = "agents.x-k8s.io/sandbox-controller",
		.reporting_instance = "ctl-1", .event_time_us = 1700000000123456LL,
	};
	cJSON *e = k8s__event_build(&f);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(k8s_obj_str(e, "apiVersion"), "events.k8s.io/v1");
	ck_assert_str_eq(k8s_obj_str(e, "kind"), "Event");
	ck_assert_str_eq(k8s_obj_name(e), "web-0.0000000000000001");
	ck_assert_str_eq(k8s_obj_namespace(e), "ns");
	ck_assert_str_eq(k8s_obj_str(e, "eventTime"), "2023-11-14T22:13:20.123456Z");
	ck_assert_str_eq(k8s_obj_str(e, "type"), "Warning");
	ck_assert_str_eq(k8s_obj_str(e, "reason"), "FailedCreate");
	ck_assert_str_eq(k8s_obj_str(e, "action"), "Create");
	ck_assert_str_eq(k8s_obj_str(e, "note"), "quota exceeded");
	ck_assert_str_eq(k8s_obj_str(e, "reportingController"), "agents.x-k8s.io/sandbox-controller");
	ck_assert_str_eq(k8s_obj_str(e, "reportingInstance"), "ctl-1");
	ck_assert_str_eq(k8s_obj_str(e, "regarding.apiVersion"), "v1");
	ck_assert_str_eq(k8s_obj_str(e, "regarding.kind"), "Pod");
	ck_assert_str_eq(k8s_obj_str(e, "regarding.namespace"), "ns");
	ck_assert_str_eq(k8s_obj_str(e, "regarding.name"), "web-0");
	ck_assert_str_eq(k8s_obj_str(e, "regarding.uid"), "uid-1");
	ck_assert_str_eq(k8s_obj_str(e, "regarding.resourceVersion"), "100");
	ck_assert_str_eq(k8s_obj_str(e, "related.name"), "node-1");
	/* unknown fields are omitted, not written empty */
	ck_assert_ptr_null(k8s_obj_at(e, "related.namespace"));
	ck_assert_ptr_null(k8s_obj_at(e, "related.uid"));
	ck_assert_ptr_null(k8s_obj_at(e, "series"));
	cJSON_Delete(e);

	/* a series, no related object, no note, Normal */
	f.related = NULL;
	f.note = "";
	f.type = K8S_EVENT_NORMAL;
	f.series_count = 3;
	f.series_last_us = 1700000001000000LL;
	e = k8s__event_build(&f);
	ck_assert_str_eq(k8s_obj_str(e, "type"), "Normal");
	ck_assert_ptr_null(k8s_obj_at(e, "related"));
	ck_assert_ptr_null(k8s_obj_at(e, "note"));
	ck_assert_int_eq((int)k8s_obj_at(e, "series.count")->valuedouble, 3);
	ck_assert_str_eq(k8s_obj_str(e, "series.lastObservedTime"), "2023-11-14T22:13:21.000000Z");
	cJSON_Delete(e);
}
END_TEST

START_TEST(series_patch_sets_count_and_last_observed_time)
{
	cJSON *p = k8s__event_series_patch(10, 1700000000000042LL);
	char *s = cJSON_PrintUnformatted(p);
	ck_assert_str_eq(s, "{\"series\":{\"count\":10,\"lastObservedTime\":\"2023-11-14T22:13:20.000042Z\"}}");
	free(s);
	cJSON_Delete(p);
}
END_TEST

START_TEST(notes_are_cut_between_utf8_characters)
{
	ck_assert_uint_eq(k8s__utf8_prefix("abc", 10), 3);
	ck_assert_uint_eq(k8s__utf8_prefix("abcdef", 4), 4);
	/* "aé" is 61 C3 A9: a cut after 2 bytes would split é */
	ck_assert_uint_eq(k8s__utf8_prefix("a\xC3\xA9z", 2), 1);
	ck_assert_uint_eq(k8s__utf8_prefix("a\xC3\xA9z", 3), 3);
	/* a 4-byte character cut anywhere inside */
	ck_assert_uint_eq(k8s__utf8_prefix("\xF0\x9F\x98\x80!", 3), 0);
}
END_TEST

START_TEST(ref_from_reads_metadata_and_takes_type_from_the_caller)
{
	cJSON *o = cJSON_Parse("{\"apiVersion\":\"agents.x-k8s.io/v1alpha1\",\"kind\":\"Sandbox\","
	                       "\"metadata\":{\"name\":\"sb\",\"namespace\":\"team\",\"uid\":\"u\","
	                       "\"resourceVersion\":\"5\"}}");
	k8s_event_ref r;
	ck_assert_int_eq(k8s_event_ref_from(o, NULL, NULL, &r), 0);
	ck_assert_str_eq(r.api_version, "agents.x-k8s.io/v1alpha1");
	ck_assert_str_eq(r.kind, "Sandbox");
	ck_assert_str_eq(r.namespace_, "team");
	ck_assert_str_eq(r.name, "sb");
	ck_assert_str_eq(r.uid, "u");
	ck_assert_str_eq(r.resource_version, "5");
	cJSON *item = cJSON_Parse("{\"metadata\":{\"name\":\"p\"}}");
	ck_assert_int_eq(k8s_event_ref_from(item, NULL, NULL, &r), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_ref_from(item, "v1", "Pod", &r), 0);
	ck_assert_str_eq(r.kind, "Pod");
	ck_assert_ptr_null(r.namespace_);
	cJSON *noname = cJSON_Parse("{\"metadata\":{}}");
	ck_assert_int_eq(k8s_event_ref_from(noname, "v1", "Pod", &r), ASB_EINVAL);
	cJSON_Delete(noname);
	cJSON_Delete(item);
	cJSON_Delete(o);
}
END_TEST

/* --- the recorder's synchronous decisions ------------------------------------------ */

static k8s_client *unreachable_client(void)
{
	/* Port 1 on loopback refuses connections at once: writes fail, no server is faked. */
	static const char doc[] =
		"apiVersion: v1\nkind: Config\ncurrent-context: c\n"
		"clusters:\n- name: k\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\n"
		"users:\n- name: u\n  user: {token: t}\n"
		"contexts:\n- name: c\n  context: {cluster: k, user: u, namespace: ns}\n";
	k8s_config *cfg = NULL;
	k8s_client *c = NULL;
	ck_assert_int_eq(k8s_config_load_yaml(&cfg, doc, strlen(doc), NULL, "test"), 0);
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.timeout_ms = 1000;
	co.connect_timeout_ms = 1000;
	co.max_retries = 0;  /* one refused connection per request, not five */
	ck_assert_int_eq(k8s_client_new(&c, cfg, &co), 0);
	k8s_config_free(cfg);
	return c;
}

static k8s_event_recorder *recorder(k8s_client *c, int burst, size_t queue_size)
{
	k8s_event_recorder_options o = K8S_EVENT_RECORDER_OPTIONS_INIT;
	o.reporting_controller = "example.com/test";
	o.reporting_instance = "test-1";
	o.burst = burst;
	o.queue_size = queue_size;
	o.retry_delay_ms = 3600000;  /* a failed create waits in the queue */
	o.shutdown_timeout_ms = 3000;
	k8s_event_recorder *rec = NULL;
	ck_assert_int_eq(k8s_event_recorder_new(&rec, c, &o), 0);
	return rec;
}

START_TEST(options_default_like_client_go)
{
	k8s_event_recorder_options o;
	memset(&o, 0xff, sizeof(o));
	ck_assert_int_eq(k8s_event_recorder_options_init(&o, K8S_EVENT_RECORDER_OPTIONS_VERSION), 0);
	ck_assert_uint_eq(o.queue_size, 1000);
	ck_assert_int_eq(o.series_window_ms, 360000);
	ck_assert_int_eq(o.burst, 25);
	ck_assert_int_eq(o.refill_interval_ms, 300000);
	ck_assert_int_eq(o.max_tries, 12);
	ck_assert_ptr_null(o.reporting_controller);
	ck_assert_int_eq(k8s_event_recorder_options_init(&o, 0), ASB_EINVAL);

	k8s_client *c = unreachable_client();
	k8s_event_recorder *rec = NULL;
	o.reporting_controller = "example.com/test";
	ck_assert_int_eq(k8s_event_recorder_new(&rec, c, &o), ASB_EINVAL);  /* no instance */
	ck_assert_ptr_null(rec);
	char big[200];
	memset(big, 'i', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	o.reporting_instance = big;
	ck_assert_int_eq(k8s_event_recorder_new(&rec, c, &o), ASB_EINVAL);  /* > 128 bytes */
	k8s_client_free(c);
}
END_TEST

START_TEST(repeats_are_aggregated_without_taking_tokens)
{
	k8s_client *c = unreachable_client();
	k8s_event_recorder *rec = recorder(c, 2, 100);
	k8s_event_ref a = pod("a");
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_WARNING, "Failed",
		                                  "Create", "no quota"), 0);
	/* the bucket (burst 2) still has a token for one more distinct event */
	ck_assert_int_eq(k8s_event_recordf(rec, &a, NULL, K8S_EVENT_NORMAL, "Created",
	                                   "Create", "try %d", 2), 0);
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "Created",
	                                  "Create", "try 3"), ASB_ETOOMANYREQUESTS);
	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.recorded, 11);
	ck_assert_uint_eq(st.aggregated, 9);
	ck_assert_uint_eq(st.dropped_rate_limited, 1);
	ck_assert_uint_eq(st.created, 0);
	k8s_event_recorder_free(rec);
	k8s_client_free(c);
}
END_TEST

START_TEST(rate_limit_is_per_object)
{
	k8s_client *c = unreachable_client();
	k8s_event_recorder *rec = recorder(c, 3, 100);
	k8s_event_ref a = pod("a"), b = pod("b");
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(k8s_event_recordf(rec, &a, NULL, K8S_EVENT_NORMAL, "R", "A",
		                                   "note %d", i), 0);
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "R", "A", "note 3"),
	                 ASB_ETOOMANYREQUESTS);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "rate limit"));
	ck_assert_int_eq(k8s_event_record(rec, &b, NULL, K8S_EVENT_NORMAL, "R", "A", "note 0"), 0);
	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.dropped_rate_limited, 1);
	ck_assert_uint_eq(st.recorded, 4);
	k8s_event_recorder_free(rec);
	k8s_client_free(c);
}
END_TEST

START_TEST(a_full_queue_drops_and_counts)
{
	k8s_client *c = unreachable_client();
	k8s_event_recorder *rec = recorder(c, 25, 1);
	k8s_event_ref a = pod("a");
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "R", "A", "one"), 0);
	/* after one try (connection refused) the create waits in the queue for its retry */
	ck_assert_int_eq(k8s_event_recorder_flush(rec, 10000), 0);
	int64_t t0 = k8s_monotonic_ms();
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "R", "A", "two"),
	                 ASB_ETOOMANYREQUESTS);
	ck_assert_int_lt(k8s_monotonic_ms() - t0, 100);  /* never blocks */
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "queue full"));
	/* a repeat of the queued event still counts */
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "R", "A", "one"), 0);
	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.dropped_queue_full, 1);
	ck_assert_uint_eq(st.aggregated, 1);
	ck_assert_uint_eq(st.created, 0);
	k8s_event_recorder_free(rec);
	k8s_client_free(c);
}
END_TEST

START_TEST(invalid_events_are_refused)
{
	k8s_client *c = unreachable_client();
	k8s_event_recorder *rec = recorder(c, 25, 10);
	k8s_event_ref a = pod("a"), noname = pod(NULL), nokind = pod("a");
	nokind.kind = "";
	char big[200];
	memset(big, 'R', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(k8s_event_record(rec, NULL, NULL, K8S_EVENT_NORMAL, "R", "A", NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(rec, &noname, NULL, K8S_EVENT_NORMAL, "R", "A", NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(rec, &nokind, NULL, K8S_EVENT_NORMAL, "R", "A", NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(rec, &a, &nokind, K8S_EVENT_NORMAL, "R", "A", NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, (k8s_event_type)7, "R", "A", NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "", "A", NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "R", NULL, NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, big, "A", NULL), ASB_EINVAL);
	ck_assert_int_eq(k8s_event_record(NULL, &a, NULL, K8S_EVENT_NORMAL, "R", "A", NULL), ASB_EINVAL);
	/* a note over 1024 bytes is cut, not refused */
	char *note = malloc(5000);
	memset(note, 'n', 4999);
	note[4999] = '\0';
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "R", "A", note), 0);
	/* ... and a note equal to its first 1024 bytes is the same event */
	note[1024] = '\0';
	ck_assert_int_eq(k8s_event_record(rec, &a, NULL, K8S_EVENT_NORMAL, "R", "A", note), 0);
	free(note);
	k8s_event_stats st;
	k8s_event_recorder_stats(rec, &st);
	ck_assert_uint_eq(st.recorded, 2);
	ck_assert_uint_eq(st.aggregated, 1);
	k8s_event_recorder_free(rec);
	k8s_event_recorder_free(NULL);
	k8s_client_free(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("events");
	TCase *tc = tcase_create("pure");
	tcase_add_test(tc, identical_events_share_a_key_and_any_difference_splits_it);
	tcase_add_test(tc, keys_are_unambiguous_across_field_boundaries);
	tcase_add_test(tc, object_key_names_the_object_only);
	tcase_add_test(tc, bucket_allows_the_burst_then_one_per_interval);
	tcase_add_test(tc, bucket_ignores_a_clock_going_backwards);
	tcase_add_test(tc, first_repeat_is_written_at_once_then_at_most_once_per_interval);
	tcase_add_test(tc, series_ends_after_the_window_and_its_final_count_is_written);
	tcase_add_test(tc, event_names_are_the_object_name_and_16_hex_digits);
	tcase_add_test(tc, event_namespace_follows_the_object_or_default);
	tcase_add_test(tc, event_document_has_the_events_v1_fields);
	tcase_add_test(tc, series_patch_sets_count_and_last_observed_time);
	tcase_add_test(tc, notes_are_cut_between_utf8_characters);
	tcase_add_test(tc, ref_from_reads_metadata_and_takes_type_from_the_caller);
	suite_add_tcase(s, tc);

	tc = tcase_create("recorder");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, options_default_like_client_go);
	tcase_add_test(tc, repeats_are_aggregated_without_taking_tokens);
	tcase_add_test(tc, rate_limit_is_per_object);
	tcase_add_test(tc, a_full_queue_drops_and_counts);
	tcase_add_test(tc, invalid_events_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	k8s_global_init();
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
