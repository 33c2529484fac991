/*
 * Unit tests of libk8s/src/leaderelection.c: the pure decision (acquire /
 * renew / wait / lost from the observed Lease record and local times), the
 * Lease documents written, option validation, the elector's lifecycle
 * when no API server answers (it stays a follower and stops at once), and
 * its leader_election_master_status gauge.
 */
#include <check.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/leaderelection.h"
#include "k8s/object.h"
#include "asb/metrics.h"
#include "leaderelection_internal.h"
#include "microtime.h"

#define RD 10000  /* renew deadline used by the decision tests */

static cJSON *lease(const char *holder, long duration, const char *acquire,
                    const char *renew, long transitions)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
	         "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
	         "\"metadata\":{\"name\":\"lock\",\"namespace\":\"ns\",\"resourceVersion\":\"42\"},"
	         "\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":%ld,"
	         "\"acquireTime\":\"%s\",\"renewTime\":\"%s\",\"leaseTransitions\":%ld}}",
	         holder, duration, acquire, renew, transitions);
	cJSON *o = cJSON_Parse(buf);
	ck_assert_ptr_nonnull(o);
	return o;
}

static void assert_microtime(const char *s)
{
	regex_t re;
	ck_assert_int_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
	                              "\\.[0-9]{6}Z$", REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_msg(s && regexec(&re, s, 0, NULL, 0) == 0, "not a MicroTime: %s", s ? s : "(null)");
	regfree(&re);
}

/* --- MicroTime ------------------------------------------------------------- */

START_TEST(microtime_has_six_fraction_digits_in_utc)
{
	char b[K8S_MICROTIME_LEN];
	ck_assert_str_eq(k8s__microtime_format(0, b, sizeof(b)), "1970-01-01T00:00:00.000000Z");
	ck_assert_str_eq(k8s__microtime_format(1700000000123456LL, b, sizeof(b)),
	                 "2023-11-14T22:13:20.123456Z");
	ck_assert_str_eq(k8s__microtime_format(-1, b, sizeof(b)), "1969-12-31T23:59:59.999999Z");
	/* round trip through the library's RFC 3339 parser (millisecond precision) */
	int64_t ms = 0;
	ck_assert_int_eq(k8s_time_parse("2023-11-14T22:13:20.123456Z", &ms), 0);
	ck_assert_int_eq(ms, 1700000000123LL);
	assert_microtime(k8s__microtime_format(k8s__now_us(), b, sizeof(b)));
}
END_TEST

/* --- records ------------------------------------------------------------------ */

START_TEST(record_reads_the_spec_and_defaults_missing_fields)
{
	cJSON *l = lease("a", 15, "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:05.000000Z", 3);
	k8s__lease_record r;
	k8s__lease_record_from(l, &r);
	ck_assert_str_eq(r.holder, "a");
	ck_assert_int_eq(r.duration_s, 15);
	ck_assert_str_eq(r.acquire_time, "2024-01-01T00:00:00.000000Z");
	ck_assert_str_eq(r.renew_time, "2024-01-01T00:00:05.000000Z");
	ck_assert_int_eq(r.transitions, 3);

	cJSON *bare = cJSON_Parse("{\"metadata\":{\"name\":\"lock\"}}");
	k8s__lease_record_from(bare, &r);
	ck_assert_str_eq(r.holder, "");
	ck_assert_int_eq(r.duration_s, 0);
	ck_assert_str_eq(r.renew_time, "");
	ck_assert_int_eq(r.transitions, 0);
	k8s__lease_record_from(NULL, &r);
	ck_assert_str_eq(r.holder, "");
	cJSON_Delete(bare);
	cJSON_Delete(l);
}
END_TEST

START_TEST(record_equality_notices_every_field)
{
	const char *t0 = "2024-01-01T00:00:00.000000Z", *t1 = "2024-01-01T00:00:01.000000Z";
	cJSON *base = lease("a", 15, t0, t0, 1);
	cJSON *variants[] = {
		lease("b", 15, t0, t0, 1), lease("a", 16, t0, t0, 1),
		lease("a", 15, t1, t0, 1), lease("a", 15, t0, t1, 1), lease("a", 15, t0, t0, 2),
	};
	k8s__lease_record rb, rv;
	k8s__lease_record_from(base, &rb);
	cJSON *same = lease("a", 15, t0, t0, 1);
	k8s__lease_record_from(same, &rv);
	ck_assert(k8s__lease_record_equal(&rb, &rv));
	for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
		k8s__lease_record_from(variants[i], &rv);
		ck_assert_msg(!k8s__lease_record_equal(&rb, &rv), "variant %zu", i);
		cJSON_Delete(variants[i]);
	}
	cJSON_Delete(same);
	cJSON_Delete(base);
}
END_TEST

/* --- the decision ---------------------------------------------------------------- */

static k8s__lease_record rec(const char *holder, long duration_s)
{
	k8s__lease_record r = { holder, duration_s, "2024-01-01T00:00:00.000000Z",
	                        "2024-01-01T00:00:00.000000Z", 0 };
	return r;
}

START_TEST(follower_acquires_a_missing_or_free_lease)
{
	k8s__lease_state st = { false, 0, 1000 };
	ck_assert_int_eq(k8s__lease_decide(NULL, &st, 1000, "me", RD), K8S__LEASE_ACQUIRE);
	k8s__lease_record free_ = rec("", 15);
	/* free: no need to wait out the duration since it was observed */
	ck_assert_int_eq(k8s__lease_decide(&free_, &st, 1000, "me", RD), K8S__LEASE_ACQUIRE);
}
END_TEST

START_TEST(follower_waits_for_a_whole_duration_since_the_last_observed_change)
{
	k8s__lease_state st = { false, 0, 50000 };  /* record last changed at 50 s */
	k8s__lease_record held = rec("other", 15);
	ck_assert_int_eq(k8s__lease_decide(&held, &st, 50000, "me", RD), K8S__LEASE_WAIT);
	ck_assert_int_eq(k8s__lease_decide(&held, &st, 64999, "me", RD), K8S__LEASE_WAIT);
	ck_assert_int_eq(k8s__lease_decide(&held, &st, 65000, "me", RD), K8S__LEASE_ACQUIRE);
	/* the record's own duration counts, not ours */
	k8s__lease_record released = rec("other", 1);
	ck_assert_int_eq(k8s__lease_decide(&released, &st, 50999, "me", RD), K8S__LEASE_WAIT);
	ck_assert_int_eq(k8s__lease_decide(&released, &st, 51000, "me", RD), K8S__LEASE_ACQUIRE);
	/* a record without a duration is expired at once */
	k8s__lease_record nodur = rec("other", 0);
	ck_assert_int_eq(k8s__lease_decide(&nodur, &st, 50000, "me", RD), K8S__LEASE_ACQUIRE);
}
END_TEST

START_TEST(expiry_ignores_the_remote_clock_in_renew_time)
{
	/* renewTime decades in the past, but we saw the record change just now */
	k8s__lease_record stale = { "other", 15, "1971-01-01T00:00:00.000000Z",
	                            "1971-01-01T00:00:00.000000Z", 0 };
	k8s__lease_state st = { false, 0, 7000 };
	ck_assert_int_eq(k8s__lease_decide(&stale, &st, 7001, "me", RD), K8S__LEASE_WAIT);
	/* renewTime far in the future, but we saw no change for 15 s */
	k8s__lease_record future = { "other", 15, "2999-01-01T00:00:00.000000Z",
	                             "2999-01-01T00:00:00.000000Z", 0 };
	ck_assert_int_eq(k8s__lease_decide(&future, &st, 22000, "me", RD), K8S__LEASE_ACQUIRE);
}
END_TEST

START_TEST(follower_renews_a_lease_already_in_its_name)
{
	k8s__lease_state st = { false, 0, 1000 };
	k8s__lease_record mine = rec("me", 15);
	ck_assert_int_eq(k8s__lease_decide(&mine, &st, 1000, "me", RD), K8S__LEASE_RENEW);
	/* identity comparison is exact */
	k8s__lease_record prefix = rec("me-2", 15);
	ck_assert_int_eq(k8s__lease_decide(&prefix, &st, 1000, "me", RD), K8S__LEASE_WAIT);
}
END_TEST

START_TEST(leader_renews_its_lease_and_recreates_a_deleted_one)
{
	k8s__lease_state st = { true, 1000, 1000 };
	k8s__lease_record mine = rec("me", 15);
	ck_assert_int_eq(k8s__lease_decide(&mine, &st, 3000, "me", RD), K8S__LEASE_RENEW);
	ck_assert_int_eq(k8s__lease_decide(NULL, &st, 3000, "me", RD), K8S__LEASE_ACQUIRE);
}
END_TEST

START_TEST(leader_loses_to_another_holder_or_a_foreign_release)
{
	k8s__lease_state st = { true, 1000, 1000 };
	k8s__lease_record other = rec("other", 15);
	ck_assert_int_eq(k8s__lease_decide(&other, &st, 2000, "me", RD), K8S__LEASE_LOST);
	k8s__lease_record free_ = rec("", 1);
	ck_assert_int_eq(k8s__lease_decide(&free_, &st, 2000, "me", RD), K8S__LEASE_LOST);
}
END_TEST

START_TEST(leader_loses_after_the_renew_deadline_even_if_the_lease_names_it)
{
	k8s__lease_state st = { true, 1000, 1000 };
	k8s__lease_record mine = rec("me", 15);
	ck_assert(!k8s__lease_renew_overdue(&st, 1000 + RD - 1, RD));
	ck_assert_int_eq(k8s__lease_decide(&mine, &st, 1000 + RD - 1, "me", RD), K8S__LEASE_RENEW);
	ck_assert(k8s__lease_renew_overdue(&st, 1000 + RD, RD));
	ck_assert_int_eq(k8s__lease_decide(&mine, &st, 1000 + RD, "me", RD), K8S__LEASE_LOST);
	/* a follower is never overdue */
	k8s__lease_state f = { false, 1000, 1000 };
	ck_assert(!k8s__lease_renew_overdue(&f, 1000000, RD));
}
END_TEST

/* --- documents written ------------------------------------------------------------ */

static const char *spec_str(const cJSON *o, const char *k)
{
	return k8s_obj_str(cJSON_GetObjectItem(o, "spec"), k);
}

static double spec_num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "spec"), k);
	ck_assert_msg(cJSON_IsNumber(v), "spec.%s is not a number", k);
	return v->valuedouble;
}

START_TEST(create_builds_a_new_lease_with_zero_transitions)
{
	int64_t now = 1700000000123456LL;
	cJSON *o = k8s__lease_desired(NULL, K8S__LEASE_ACQUIRE, "ns", "lock", "me", 15, now);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(k8s_obj_str(o, "apiVersion"), "coordination.k8s.io/v1");
	ck_assert_str_eq(k8s_obj_str(o, "kind"), "Lease");
	ck_assert_str_eq(k8s_obj_name(o), "lock");
	ck_assert_str_eq(k8s_obj_namespace(o), "ns");
	ck_assert_ptr_null(k8s_obj_resource_version(o));
	ck_assert_str_eq(spec_str(o, "holderIdentity"), "me");
	ck_assert_int_eq((int)spec_num(o, "leaseDurationSeconds"), 15);
	ck_assert_str_eq(spec_str(o, "acquireTime"), "2023-11-14T22:13:20.123456Z");
	ck_assert_str_eq(spec_str(o, "renewTime"), "2023-11-14T22:13:20.123456Z");
	ck_assert_int_eq((int)spec_num(o, "leaseTransitions"), 0);
	cJSON_Delete(o);
}
END_TEST

START_TEST(acquire_takes_over_with_one_more_transition_and_the_read_version)
{
	cJSON *cur = lease("other", 15, "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:09.000000Z", 4);
	cJSON *o = k8s__lease_desired(cur, K8S__LEASE_ACQUIRE, "ns", "lock", "me", 20, 1700000000000001LL);
	ck_assert_str_eq(k8s_obj_resource_version(o), "42");  /* optimistic concurrency */
	ck_assert_str_eq(spec_str(o, "holderIdentity"), "me");
	ck_assert_int_eq((int)spec_num(o, "leaseDurationSeconds"), 20);
	ck_assert_str_eq(spec_str(o, "acquireTime"), "2023-11-14T22:13:20.000001Z");
	ck_assert_str_eq(spec_str(o, "renewTime"), "2023-11-14T22:13:20.000001Z");
	ck_assert_int_eq((int)spec_num(o, "leaseTransitions"), 5);
	/* the input is left alone */
	ck_assert_str_eq(spec_str(cur, "holderIdentity"), "other");
	cJSON_Delete(o);
	cJSON_Delete(cur);
}
END_TEST

START_TEST(renew_keeps_acquire_time_and_transitions)
{
	cJSON *cur = lease("me", 15, "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:09.000000Z", 4);
	cJSON *o = k8s__lease_desired(cur, K8S__LEASE_RENEW, "ns", "lock", "me", 15, 1700000000000001LL);
	ck_assert_str_eq(k8s_obj_resource_version(o), "42");
	ck_assert_str_eq(spec_str(o, "acquireTime"), "2024-01-01T00:00:00.000000Z");
	ck_assert_str_eq(spec_str(o, "renewTime"), "2023-11-14T22:13:20.000001Z");
	ck_assert_int_eq((int)spec_num(o, "leaseTransitions"), 4);
	cJSON_Delete(o);
	cJSON_Delete(cur);

	/* a Lease without a spec gets one */
	cJSON *bare = cJSON_Parse("{\"metadata\":{\"name\":\"lock\",\"resourceVersion\":\"7\"}}");
	o = k8s__lease_desired(bare, K8S__LEASE_ACQUIRE, "ns", "lock", "me", 15, 0);
	ck_assert_str_eq(spec_str(o, "holderIdentity"), "me");
	ck_assert_int_eq((int)spec_num(o, "leaseTransitions"), 1);
	cJSON_Delete(o);
	cJSON_Delete(bare);
}
END_TEST

START_TEST(release_frees_the_lease_for_an_immediate_successor)
{
	cJSON *cur = lease("me", 15, "2024-01-01T00:00:00.000000Z", "2024-01-01T00:00:09.000000Z", 4);
	cJSON *o = k8s__lease_released(cur, 1700000000000001LL);
	ck_assert_str_eq(k8s_obj_resource_version(o), "42");
	ck_assert_str_eq(spec_str(o, "holderIdentity"), "");
	ck_assert_int_eq((int)spec_num(o, "leaseDurationSeconds"), 1);
	ck_assert_int_eq((int)spec_num(o, "leaseTransitions"), 4);
	assert_microtime(spec_str(o, "renewTime"));
	/* and a follower that reads it acquires at once */
	k8s__lease_record r;
	k8s__lease_record_from(o, &r);
	k8s__lease_state st = { false, 0, 5000 };
	ck_assert_int_eq(k8s__lease_decide(&r, &st, 5000, "next", RD), K8S__LEASE_ACQUIRE);
	cJSON_Delete(o);
	cJSON_Delete(cur);
}
END_TEST

START_TEST(duration_is_written_in_whole_seconds_rounded_up)
{
	ck_assert_int_eq(k8s__lease_duration_seconds(15000), 15);
	ck_assert_int_eq(k8s__lease_duration_seconds(1000), 1);
	ck_assert_int_eq(k8s__lease_duration_seconds(1500), 2);
	ck_assert_int_eq(k8s__lease_duration_seconds(15001), 16);
}
END_TEST

/* --- options and lifecycle --------------------------------------------------- */

static k8s_client *unreachable_client(void)
{
	/* Port 1 on loopback refuses connections at once: no server, no fake. */
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

static k8s_leader_options valid_options(void)
{
	k8s_leader_options o = K8S_LEADER_OPTIONS_INIT;
	o.lease_namespace = "ns";
	o.lease_name = "lock";
	o.identity = "me";
	return o;
}

START_TEST(options_default_to_client_go_durations)
{
	k8s_leader_options o;
	memset(&o, 0xff, sizeof(o));
	ck_assert_int_eq(k8s_leader_options_init(&o, K8S_LEADER_OPTIONS_VERSION), 0);
	ck_assert_int_eq(o.lease_duration_ms, 15000);
	ck_assert_int_eq(o.renew_deadline_ms, 10000);
	ck_assert_int_eq(o.retry_period_ms, 2000);
	ck_assert(o.release_on_cancel);
	ck_assert_ptr_null(o.identity);
	ck_assert_ptr_null(o.on_started_leading);
	ck_assert_int_eq(k8s_leader_options_init(&o, 99), ASB_EINVAL);
}
END_TEST

START_TEST(options_are_validated_like_client_go)
{
	k8s_client *c = unreachable_client();
	k8s_leader *le = NULL;
	k8s_leader_options o = valid_options();
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), 0);
	k8s_leader_free(le);

	o = valid_options();
	o.lease_duration_ms = 10000;  /* not greater than the renew deadline */
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);
	ck_assert_ptr_null(le);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "renew_deadline_ms"));

	o = valid_options();
	o.retry_period_ms = 8334;  /* 1.2 * 8334 > 10000 */
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "retry_period_ms"));
	o.retry_period_ms = 8333;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), 0);
	k8s_leader_free(le);

	o = valid_options();
	o.lease_duration_ms = 999;
	o.renew_deadline_ms = 500;
	o.retry_period_ms = 100;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);

	o = valid_options();
	o.identity = "";
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);
	o = valid_options();
	o.lease_name = NULL;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);
	o = valid_options();
	o.version = K8S_LEADER_OPTIONS_VERSION + 1;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);
	o.version = 0;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);
	ck_assert_int_eq(k8s_leader_new(&le, NULL, &o), ASB_EINVAL);
	k8s_client_free(c);
}
END_TEST

typedef struct {
	int started, stopped, new_leader;
} counts;

static void on_started(void *ud) { ((counts *)ud)->started++; }
static void on_stopped(void *ud) { ((counts *)ud)->stopped++; }
static void on_new(const char *id, void *ud) { (void)id; ((counts *)ud)->new_leader++; }

START_TEST(without_a_server_the_elector_follows_and_stops_promptly)
{
	k8s_client *c = unreachable_client();
	counts n = { 0, 0, 0 };
	k8s_leader_options o = valid_options();
	o.lease_duration_ms = 30000;
	o.renew_deadline_ms = 20000;
	o.retry_period_ms = 10000;
	o.on_started_leading = on_started;
	o.on_stopped_leading = on_stopped;
	o.on_new_leader = on_new;
	o.userdata = &n;
	k8s_leader *le = NULL;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), 0);
	ck_assert(!k8s_leader_is_leader(le));
	char who[8] = "x";
	ck_assert_uint_eq(k8s_leader_get_leader(le, who, sizeof(who)), 0);
	ck_assert_str_eq(who, "");

	ck_assert_int_eq(k8s_leader_start(le), 0);
	ck_assert_int_eq(k8s_leader_start(le), ASB_EINVAL);
	/* the first attempt fails (connection refused; slower under valgrind) */
	usleep(1500 * 1000);
	ck_assert(!k8s_leader_is_leader(le));
	int64_t t0 = k8s_monotonic_ms();
	k8s_leader_stop(le);
	/*
	 * The thread sleeps 10 to 22 s between attempts: stop wakes it. The
	 * bound leaves room for an attempt still in flight (1 s timeouts).
	 */
	ck_assert_int_lt(k8s_monotonic_ms() - t0, 5000);
	k8s_leader_stop(le);  /* twice is fine */
	ck_assert_int_eq(k8s_leader_start(le), ASB_EINVAL);  /* no restart */
	ck_assert_int_eq(n.started, 0);
	ck_assert_int_eq(n.stopped, 0);
	ck_assert_int_eq(n.new_leader, 0);  /* no holder was ever observed */
	ck_assert(!k8s_leader_is_leader(le));
	k8s_leader_free(le);
	k8s_client_free(c);
}
END_TEST

static char *scrape(asb_metrics_registry *reg)
{
	char *text = NULL;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &text, NULL), 0);
	return text;
}

START_TEST(master_status_gauge_follows_leadership)
{
	k8s_client *c = unreachable_client();
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	k8s_leader_options o = valid_options();
	o.lease_duration_ms = 30000;
	o.renew_deadline_ms = 20000;
	o.retry_period_ms = 10000;
	o.metrics = reg;
	k8s_leader *le = NULL;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), 0);
	/* 0 from creation on, as client-go sets it; labelled with the lease name */
	char *text = scrape(reg);
	ck_assert_str_eq(text,
		"# HELP leader_election_master_status Gauge of if the reporting system is master of the "
		"relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to "
		"identify the lease. Please make sure to group by name.\n"
		"# TYPE leader_election_master_status gauge\n"
		"leader_election_master_status{name=\"lock\"} 0\n");
	free(text);
	/* a follower (no server answers) stays at 0 */
	ck_assert_int_eq(k8s_leader_start(le), 0);
	usleep(300 * 1000);
	text = scrape(reg);
	ck_assert_ptr_nonnull(strstr(text, "leader_election_master_status{name=\"lock\"} 0\n"));
	free(text);
	/* freed: its collector is gone, so is the series */
	k8s_leader_free(le);
	text = scrape(reg);
	ck_assert_str_eq(text, "");
	free(text);

	/* a version 1 struct has no metrics field and is still accepted */
	o = valid_options();
	o.version = 1;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), 0);
	k8s_leader_free(le);
	k8s_leader_options v1;
	ck_assert_int_eq(k8s_leader_options_init(&v1, 1), 0);
	ck_assert_uint_eq(v1.version, 1);
	ck_assert_int_eq(v1.retry_period_ms, 2000);

	/* a family of that name with another shape is refused */
	asb_metric_options mo = ASB_METRIC_OPTIONS_INIT;
	mo.name = "leader_election_master_status";
	asb_metric *m;
	asb_metrics_registry *other;
	ck_assert_int_eq(asb_metrics_registry_new(&other), 0);
	ck_assert_int_eq(asb_metrics_register(&m, other, &mo), 0);
	o = valid_options();
	o.metrics = other;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), ASB_EINVAL);
	ck_assert_ptr_null(le);
	asb_metrics_registry_free(other);
	asb_metrics_registry_free(reg);
	k8s_client_free(c);
}
END_TEST

START_TEST(null_and_never_started_electors_are_safe)
{
	k8s_leader_stop(NULL);
	k8s_leader_free(NULL);
	ck_assert(!k8s_leader_is_leader(NULL));
	char b[4] = "x";
	ck_assert_uint_eq(k8s_leader_get_leader(NULL, b, sizeof(b)), 0);
	ck_assert_str_eq(b, "");
	k8s_client *c = unreachable_client();
	k8s_leader_options o = valid_options();
	k8s_leader *le = NULL;
	ck_assert_int_eq(k8s_leader_new(&le, c, &o), 0);
	k8s_leader_stop(le);
	k8s_leader_free(le);
	k8s_client_free(c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("leaderelection");
	TCase *tc = tcase_create("decision");
	tcase_add_test(tc, microtime_has_six_fraction_digits_in_utc);
	tcase_add_test(tc, record_reads_the_spec_and_defaults_missing_fields);
	tcase_add_test(tc, record_equality_notices_every_field);
	tcase_add_test(tc, follower_acquires_a_missing_or_free_lease);
	tcase_add_test(tc, follower_waits_for_a_whole_duration_since_the_last_observed_change);
	tcase_add_test(tc, expiry_ignores_the_remote_clock_in_renew_time);
	tcase_add_test(tc, follower_renews_a_lease_already_in_its_name);
	tcase_add_test(tc, leader_renews_its_lease_and_recreates_a_deleted_one);
	tcase_add_test(tc, leader_loses_to_another_holder_or_a_foreign_release);
	tcase_add_test(tc, leader_loses_after_the_renew_deadline_even_if_the_lease_names_it);
	suite_add_tcase(s, tc);

	tc = tcase_create("documents");
	tcase_add_test(tc, create_builds_a_new_lease_with_zero_transitions);
	tcase_add_test(tc, acquire_takes_over_with_one_more_transition_and_the_read_version);
	tcase_add_test(tc, renew_keeps_acquire_time_and_transitions);
	tcase_add_test(tc, release_frees_the_lease_for_an_immediate_successor);
	tcase_add_test(tc, duration_is_written_in_whole_seconds_rounded_up);
	suite_add_tcase(s, tc);

	tc = tcase_create("elector");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, options_default_to_client_go_durations);
	tcase_add_test(tc, options_are_validated_like_client_go);
	tcase_add_test(tc, without_a_server_the_elector_follows_and_stops_promptly);
	tcase_add_test(tc, null_and_never_started_electors_are_safe);
	tcase_add_test(tc, master_status_gauge_follows_leadership);
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
