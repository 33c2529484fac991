/*
 * Unit tests of libk8s/src/workqueue_metrics.c and controller_metrics.c,
 * through the public work queue and controller APIs: what client-go's
 * queue and controller-runtime's controller would record, read back from
 * the exposition text.
 */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/controller.h"
#include "asb/metrics.h"
#include "k8s/workqueue.h"

static char *scrape(asb_metrics_registry *reg)
{
	char *text = NULL;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &text, NULL), 0);
	return text;
}

/* The value of the sample line starting with `series` ("name{labels}"), or -1. */
static double value_of(asb_metrics_registry *reg, const char *series)
{
	char *text = scrape(reg);
	double v = -1;
	size_t n = strlen(series);
	for (char *line = text; line && *line;) {
		if (strncmp(line, series, n) == 0 && line[n] == ' ') {
			v = strtod(line + n + 1, NULL);
			break;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	free(text);
	return v;
}

#define Q "{controller=\"q\",name=\"q\"}"

START_TEST(queue_records_client_go_metrics)
{
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	k8s_workqueue_options o = K8S_WORKQUEUE_OPTIONS_INIT;
	o.name = "q";
	o.metrics = reg;
	k8s_workqueue *q;
	ck_assert_int_eq(k8s_workqueue_new(&q, &o), 0);

	/* every series exists from the start */
	ck_assert(value_of(reg, "workqueue_depth{controller=\"q\",name=\"q\",priority=\"\"}") == 0);
	ck_assert(value_of(reg, "workqueue_adds_total" Q) == 0);
	ck_assert(value_of(reg, "workqueue_retries_total" Q) == 0);
	ck_assert(value_of(reg, "workqueue_queue_duration_seconds_count" Q) == 0);
	ck_assert(value_of(reg, "workqueue_unfinished_work_seconds" Q) == 0);
	ck_assert(value_of(reg, "workqueue_longest_running_processor_seconds" Q) == 0);

	k8s_workqueue_add(q, "a");
	k8s_workqueue_add(q, "a");  /* deduplicated: not an add */
	k8s_workqueue_add(q, "b");
	ck_assert(value_of(reg, "workqueue_adds_total" Q) == 2);
	ck_assert(value_of(reg, "workqueue_depth{controller=\"q\",name=\"q\",priority=\"\"}") == 2);

	char *k;
	ck_assert_int_eq(k8s_workqueue_get(q, &k), 0);
	ck_assert(value_of(reg, "workqueue_depth{controller=\"q\",name=\"q\",priority=\"\"}") == 1);
	ck_assert(value_of(reg, "workqueue_queue_duration_seconds_count" Q) == 1);
	ck_assert(value_of(reg, "workqueue_work_duration_seconds_count" Q) == 0);
	/* a key in processing is unfinished work */
	ck_assert(value_of(reg, "workqueue_unfinished_work_seconds" Q) > 0);
	ck_assert(value_of(reg, "workqueue_longest_running_processor_seconds" Q) > 0);
	/* added again while processed: counted, as client-go does */
	k8s_workqueue_add(q, k);
	ck_assert(value_of(reg, "workqueue_adds_total" Q) == 3);
	k8s_workqueue_done(q, k);
	free(k);
	ck_assert(value_of(reg, "workqueue_work_duration_seconds_count" Q) == 1);
	ck_assert(value_of(reg, "workqueue_unfinished_work_seconds" Q) == 0);
	ck_assert(value_of(reg, "workqueue_longest_running_processor_seconds" Q) == 0);
	ck_assert(value_of(reg, "workqueue_depth{controller=\"q\",name=\"q\",priority=\"\"}") == 2);

	/* every delayed add is a retry */
	k8s_workqueue_add_after(q, "c", 0);
	k8s_workqueue_add_after(q, "d", 60000);
	k8s_workqueue_add_rate_limited(q, "e");
	ck_assert(value_of(reg, "workqueue_retries_total" Q) == 3);

	/* client-go's buckets: 10 ns to 1000 s by factors of 10 */
	char *text = scrape(reg);
	ck_assert_ptr_nonnull(strstr(text, "workqueue_queue_duration_seconds_bucket{controller=\"q\",name=\"q\",le=\"1e-08\"} "));
	ck_assert_ptr_nonnull(strstr(text, "workqueue_queue_duration_seconds_bucket{controller=\"q\",name=\"q\",le=\"1000\"} "));
	ck_assert_ptr_nonnull(strstr(text, "# HELP workqueue_adds_total Total number of adds handled by workqueue\n"
	                                   "# TYPE workqueue_adds_total counter\n"));
	free(text);

	k8s_workqueue_shutdown(q);
	k8s_workqueue_free(q);
	/* the queue's collectors are gone with it */
	ck_assert(value_of(reg, "workqueue_unfinished_work_seconds" Q) == -1);
	asb_metrics_registry_free(reg);
}
END_TEST

START_TEST(two_queues_share_the_families)
{
	asb_metrics_registry *reg;
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
	k8s_workqueue_options o = K8S_WORKQUEUE_OPTIONS_INIT;
	o.metrics = reg;
	o.name = "one";
	k8s_workqueue *a, *b;
	ck_assert_int_eq(k8s_workqueue_new(&a, &o), 0);
	o.name = "two";
	ck_assert_int_eq(k8s_workqueue_new(&b, &o), 0);
	k8s_workqueue_add(b, "x");
	ck_assert(value_of(reg, "workqueue_adds_total{controller=\"one\",name=\"one\"}") == 0);
	ck_assert(value_of(reg, "workqueue_adds_total{controller=\"two\",name=\"two\"}") == 1);
	ck_assert(value_of(reg, "workqueue_longest_running_processor_seconds{controller=\"one\",name=\"one\"}") == 0);
	ck_assert(value_of(reg, "workqueue_longest_running_processor_seconds{controller=\"two\",name=\"two\"}") == 0);
	k8s_workqueue_shutdown(a);
	k8s_workqueue_shutdown(b);
	k8s_workqueue_free(a);
	k8s_workqueue_free(b);
	asb_metrics_registry_free(reg);
}
END_TEST

/* --- controller ---------------------------------------------------------------- */

typedef struct {
	asb_metrics_registry *reg;
	atomic_int errors_left;
	atomic_int calls;
	atomic_int active_seen;   /* active_workers read inside a reconcile */
} rec_state;

static int reconcile(const char *key, k8s_reconcile_result *res, void *ud)
{
	rec_state *s = ud;
	atomic_fetch_add(&s->calls, 1);
	if (strcmp(key, "ns/err") == 0 && atomic_fetch_sub(&s->errors_left, 1) > 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "failing on purpose");
	if (strcmp(key, "ns/requeue") == 0 && atomic_load(&s->calls) < 3)
		res->requeue = true;
	if (strcmp(key, "ns/later") == 0)
		res->requeue_after_ms = 600000;  /* not again during the test */
	if (strcmp(key, "ns/probe") == 0)
		atomic_store(&s->active_seen,
		             (int)value_of(s->reg, "controller_runtime_active_workers{controller=\"t\"}"));
	return 0;
}

#define T "{controller=\"t\""

START_TEST(controller_records_controller_runtime_metrics)
{
	rec_state s = { 0 };
	atomic_store(&s.errors_left, 2);
	ck_assert_int_eq(asb_metrics_registry_new(&s.reg), 0);
	k8s_controller_options o = K8S_CONTROLLER_OPTIONS_INIT;
	o.name = "t";
	o.workers = 2;
	o.reconcile = reconcile;
	o.userdata = &s;
	o.metrics = s.reg;
	k8s_controller *c;
	ck_assert_int_eq(k8s_controller_new(&c, &o), 0);

	/* at start, as controller-runtime: results at 0, the worker count */
	ck_assert(value_of(s.reg, "controller_runtime_max_concurrent_reconciles" T "}") == 2);
	ck_assert(value_of(s.reg, "controller_runtime_active_workers" T "}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"success\"}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"error\"}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"requeue\"}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"requeue_after\"}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_errors_total" T "}") == 0);
	/* present at 0, with controller-runtime's help texts and types */
	ck_assert(value_of(s.reg, "controller_runtime_terminal_reconcile_errors_total" T "}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_panics_total" T "}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_timeouts_total" T "}") == 0);
	char *text = scrape(s.reg);
	ck_assert_ptr_nonnull(strstr(text,
		"# HELP controller_runtime_terminal_reconcile_errors_total Total number of terminal "
		"reconciliation errors per controller\n"
		"# TYPE controller_runtime_terminal_reconcile_errors_total counter\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"# HELP controller_runtime_reconcile_panics_total Total number of reconciliation panics "
		"per controller\n# TYPE controller_runtime_reconcile_panics_total counter\n"));
	ck_assert_ptr_nonnull(strstr(text,
		"# HELP controller_runtime_reconcile_timeouts_total Total number of reconciliation "
		"timeouts per controller\n# TYPE controller_runtime_reconcile_timeouts_total counter\n"));
	free(text);

	ck_assert_int_eq(k8s_controller_start(c), 0);
	k8s_controller_enqueue(c, "ns/err");      /* error, error, success */
	k8s_controller_enqueue(c, "ns/later");    /* requeue_after */
	for (int i = 0; i < 1000 && value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"success\"}") < 1; i++)
		usleep(10000);
	k8s_controller_enqueue(c, "ns/probe");    /* success */
	for (int i = 0; i < 1000 && value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"success\"}") < 2; i++)
		usleep(10000);
	k8s_controller_stop(c);

	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"success\"}") == 2);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"error\"}") == 2);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"requeue_after\"}") == 1);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_errors_total" T "}") == 2);
	/* both errors were requeued (ns/err then succeeded): none terminal */
	ck_assert(value_of(s.reg, "controller_runtime_terminal_reconcile_errors_total" T "}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_time_seconds_count" T "}") == 5);
	ck_assert(value_of(s.reg, "controller_runtime_active_workers" T "}") == 0);
	ck_assert_int_ge(atomic_load(&s.active_seen), 1);
	/* the controller's queue is named after it */
	ck_assert(value_of(s.reg, "workqueue_adds_total{controller=\"t\",name=\"t\"}") >= 3);
	ck_assert(value_of(s.reg, "workqueue_retries_total{controller=\"t\",name=\"t\"}") >= 3);
	k8s_controller_free(c);
	asb_metrics_registry_free(s.reg);
}
END_TEST

START_TEST(requeue_result_is_counted)
{
	rec_state s = { 0 };
	ck_assert_int_eq(asb_metrics_registry_new(&s.reg), 0);
	k8s_controller_options o = K8S_CONTROLLER_OPTIONS_INIT;
	o.name = "t";
	o.reconcile = reconcile;
	o.userdata = &s;
	o.metrics = s.reg;
	k8s_controller *c;
	ck_assert_int_eq(k8s_controller_new(&c, &o), 0);
	ck_assert_int_eq(k8s_controller_start(c), 0);
	k8s_controller_enqueue(c, "ns/requeue");  /* requeue, requeue, success */
	for (int i = 0; i < 1000 && value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"success\"}") < 1; i++)
		usleep(10000);
	k8s_controller_stop(c);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"requeue\"}") == 2);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_total" T ",result=\"success\"}") == 1);
	ck_assert(value_of(s.reg, "controller_runtime_reconcile_errors_total" T "}") == 0);
	ck_assert(value_of(s.reg, "controller_runtime_max_concurrent_reconciles" T "}") == 1);
	k8s_controller_free(c);
	asb_metrics_registry_free(s.reg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("workqueue_metrics");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, queue_records_client_go_metrics);
	tcase_add_test(tc, two_queues_share_the_families);
	tcase_add_test(tc, controller_records_controller_runtime_metrics);
	tcase_add_test(tc, requeue_result_is_counted);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
