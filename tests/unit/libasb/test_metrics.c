/* Unit tests of libasb/src/metrics.c: registry, series, text exposition 0.0.4. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "asb/metrics.h"

static asb_metrics_registry *reg;

static void setup(void)
{
	ck_assert_int_eq(asb_metrics_registry_new(&reg), 0);
}

static void teardown(void)
{
	asb_metrics_registry_free(reg);
	reg = NULL;
}

static asb_metric *must_register(asb_metric_type type, const char *name, const char *help,
                                 const char *const *labels)
{
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = type;
	o.name = name;
	o.help = help;
	o.label_names = labels;
	asb_metric *m = NULL;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), 0);
	ck_assert_ptr_nonnull(m);
	return m;
}

/* The exposition of the whole registry; the caller frees it. */
static char *expose(void)
{
	char *text = NULL;
	size_t len = 0;
	ck_assert_int_eq(asb_metrics_registry_expose(reg, &text, &len), 0);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, strlen(text));
	return text;
}

#define ASSERT_EXPOSITION(expected) do { \
	char *got_ = expose(); \
	ck_assert_str_eq(got_, expected); \
	free(got_); \
} while (0)

START_TEST(counter_vector_exact_text)
{
	static const char *const labels[] = { "method", "code", NULL };
	asb_metric *m = must_register(ASB_METRIC_COUNTER, "http_requests_total",
	                              "Requests served.", labels);
	const char *get200[] = { "GET", "200" };
	const char *post500[] = { "POST", "500" };
	const char *get404[] = { "GET", "404" };
	ck_assert_int_eq(asb_metric_add(m, get200, 2, 1), 0);
	ck_assert_int_eq(asb_metric_add(m, get200, 2, 2), 0);
	ck_assert_int_eq(asb_metric_add(m, post500, 2, 1), 0);
	ck_assert_int_eq(asb_metric_add(m, get404, 2, 0.5), 0);
	/* label pairs sorted by name (code before method), series by values */
	ASSERT_EXPOSITION(
		"# HELP http_requests_total Requests served.\n"
		"# TYPE http_requests_total counter\n"
		"http_requests_total{code=\"200\",method=\"GET\"} 3\n"
		"http_requests_total{code=\"404\",method=\"GET\"} 0.5\n"
		"http_requests_total{code=\"500\",method=\"POST\"} 1\n");
}
END_TEST

START_TEST(families_sorted_by_name_and_empty_ones_omitted)
{
	static const char *const labels[] = { "name", NULL };
	asb_metric *z = must_register(ASB_METRIC_GAUGE, "zeta", "Last.", NULL);
	must_register(ASB_METRIC_COUNTER, "empty_total", "Never used.", labels);
	asb_metric *a = must_register(ASB_METRIC_GAUGE, "alpha", "First.", NULL);
	ck_assert_int_eq(asb_metric_set(z, NULL, 0, -2.25), 0);
	ck_assert_int_eq(asb_metric_set(a, NULL, 0, 1e6), 0);
	ASSERT_EXPOSITION(
		"# HELP alpha First.\n"
		"# TYPE alpha gauge\n"
		"alpha 1e+06\n"
		"# HELP zeta Last.\n"
		"# TYPE zeta gauge\n"
		"zeta -2.25\n");
}
END_TEST

START_TEST(const_labels_merge_sorted_with_variable_labels)
{
	static const char *const labels[] = { "zone", NULL };
	static const char *const consts[] = { "version", "1.2", "app", "x", NULL };
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = "build_info";
	o.help = "Build metadata.";
	o.label_names = labels;
	o.const_labels = consts;
	asb_metric *m;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), 0);
	const char *zone[] = { "b" };
	ck_assert_int_eq(asb_metric_set(m, zone, 1, 1), 0);
	ASSERT_EXPOSITION(
		"# HELP build_info Build metadata.\n"
		"# TYPE build_info gauge\n"
		"build_info{app=\"x\",version=\"1.2\",zone=\"b\"} 1\n");
}
END_TEST

START_TEST(histogram_buckets_are_cumulative_with_inf_sum_count)
{
	static const char *const labels[] = { "op", NULL };
	static const double bounds[] = { 0.5, 1, 2.5 };
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_HISTOGRAM;
	o.name = "op_seconds";
	o.help = "Op latency.";
	o.label_names = labels;
	o.buckets = bounds;
	o.nbuckets = 3;
	asb_metric *m;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), 0);
	const char *op[] = { "read" };
	asb_metric_series *s;
	ck_assert_int_eq(asb_metric_series_get(&s, m, op, 1), 0);
	/* 0.5 and 1 sit exactly on bounds: le is inclusive */
	double obs[] = { 0.25, 0.5, 1, 2, 3, 100 };
	for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
		ck_assert_int_eq(asb_metric_series_observe(s, obs[i]), 0);
	ck_assert_uint_eq(asb_metric_series_count(s), 6);
	ck_assert(asb_metric_series_value(s) == 106.75);
	ASSERT_EXPOSITION(
		"# HELP op_seconds Op latency.\n"
		"# TYPE op_seconds histogram\n"
		"op_seconds_bucket{op=\"read\",le=\"0.5\"} 2\n"
		"op_seconds_bucket{op=\"read\",le=\"1\"} 3\n"
		"op_seconds_bucket{op=\"read\",le=\"2.5\"} 4\n"
		"op_seconds_bucket{op=\"read\",le=\"+Inf\"} 6\n"
		"op_seconds_sum{op=\"read\"} 106.75\n"
		"op_seconds_count{op=\"read\"} 6\n");
}
END_TEST

START_TEST(histogram_default_buckets_and_no_labels)
{
	asb_metric *m = must_register(ASB_METRIC_HISTOGRAM, "h", "", NULL);
	ck_assert_int_eq(asb_metric_observe(m, NULL, 0, 0.007), 0);
	ASSERT_EXPOSITION(
		"# HELP h \n"
		"# TYPE h histogram\n"
		"h_bucket{le=\"0.005\"} 0\n"
		"h_bucket{le=\"0.01\"} 1\n"
		"h_bucket{le=\"0.025\"} 1\n"
		"h_bucket{le=\"0.05\"} 1\n"
		"h_bucket{le=\"0.1\"} 1\n"
		"h_bucket{le=\"0.25\"} 1\n"
		"h_bucket{le=\"0.5\"} 1\n"
		"h_bucket{le=\"1\"} 1\n"
		"h_bucket{le=\"2.5\"} 1\n"
		"h_bucket{le=\"5\"} 1\n"
		"h_bucket{le=\"10\"} 1\n"
		"h_bucket{le=\"+Inf\"} 1\n"
		"h_sum 0.007\n"
		"h_count 1\n");
}
END_TEST

START_TEST(histogram_trailing_inf_bound_dropped_and_nan_goes_to_inf)
{
	const double bounds[] = { 1, INFINITY };
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_HISTOGRAM;
	o.name = "h";
	o.help = "x";
	o.buckets = bounds;
	o.nbuckets = 2;
	asb_metric *m;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), 0);
	ck_assert_int_eq(asb_metric_observe(m, NULL, 0, NAN), 0);
	ASSERT_EXPOSITION(
		"# HELP h x\n"
		"# TYPE h histogram\n"
		"h_bucket{le=\"1\"} 0\n"
		"h_bucket{le=\"+Inf\"} 1\n"
		"h_sum NaN\n"
		"h_count 1\n");
}
END_TEST

START_TEST(label_values_and_help_are_escaped)
{
	static const char *const labels[] = { "path", NULL };
	asb_metric *m = must_register(ASB_METRIC_COUNTER, "esc_total",
	                              "Help with \\ backslash,\nnewline and \"quotes\".", labels);
	const char *v[] = { "C:\\dir \"q\"\nnext" };
	ck_assert_int_eq(asb_metric_add(m, v, 1, 1), 0);
	/* help escapes only backslash and newline; label values also the quote */
	ASSERT_EXPOSITION(
		"# HELP esc_total Help with \\\\ backslash,\\nnewline and \"quotes\".\n"
		"# TYPE esc_total counter\n"
		"esc_total{path=\"C:\\\\dir \\\"q\\\"\\nnext\"} 1\n");
}
END_TEST

START_TEST(register_same_shape_returns_existing_family)
{
	static const char *const labels[] = { "name", NULL };
	asb_metric *a = must_register(ASB_METRIC_COUNTER, "adds_total", "Adds.", labels);
	asb_metric *b = must_register(ASB_METRIC_COUNTER, "adds_total", "Adds.", labels);
	ck_assert_ptr_eq(a, b);

	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_GAUGE;
	o.name = "adds_total";
	o.help = "Adds.";
	o.label_names = labels;
	asb_metric *c = (asb_metric *)1;
	ck_assert_int_eq(asb_metrics_register(&c, reg, &o), ASB_EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "already registered"));
	o.type = ASB_METRIC_COUNTER;
	o.help = "Other help.";
	ck_assert_int_eq(asb_metrics_register(&c, reg, &o), ASB_EINVAL);
}
END_TEST

START_TEST(register_rejects_invalid_names)
{
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	asb_metric *m;
	o.name = "1bad";
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);
	o.name = "bad-name";
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);
	o.name = NULL;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);

	o.name = "ok:name_1";
	static const char *const reserved[] = { "__x", NULL };
	o.label_names = reserved;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);
	static const char *const dup[] = { "a", "a", NULL };
	o.label_names = dup;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);
	static const char *const le[] = { "le", NULL };
	o.label_names = le;
	o.type = ASB_METRIC_HISTOGRAM;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);
	o.type = ASB_METRIC_COUNTER;  /* "le" is only reserved for histograms */
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), 0);

	static const double unsorted[] = { 1, 1 };
	o.name = "h2";
	o.label_names = NULL;
	o.type = ASB_METRIC_HISTOGRAM;
	o.buckets = unsorted;
	o.nbuckets = 2;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);

	static const char *const odd[] = { "a", NULL };
	o.type = ASB_METRIC_GAUGE;
	o.buckets = NULL;
	o.nbuckets = 0;
	o.const_labels = odd;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);

	o.const_labels = NULL;
	o.version = 99;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), ASB_EINVAL);
}
END_TEST

START_TEST(series_checks_values_and_types)
{
	static const char *const labels[] = { "a", "b", NULL };
	asb_metric *c = must_register(ASB_METRIC_COUNTER, "c_total", "c", labels);
	asb_metric *g = must_register(ASB_METRIC_GAUGE, "g", "g", NULL);
	const char *one[] = { "x" };
	const char *two[] = { "x", "y" };
	const char *null_value[] = { "x", NULL };
	const char *bad_utf8[] = { "x", "\xc3\x28" };
	const char *overlong[] = { "x", "\xc0\xaf" };
	const char *utf8[] = { "x", "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80" };
	asb_metric_series *s;
	ck_assert_int_eq(asb_metric_series_get(&s, c, one, 1), ASB_EINVAL);
	ck_assert_int_eq(asb_metric_series_get(&s, c, null_value, 2), ASB_EINVAL);
	ck_assert_int_eq(asb_metric_series_get(&s, c, bad_utf8, 2), ASB_EINVAL);
	ck_assert_int_eq(asb_metric_series_get(&s, c, overlong, 2), ASB_EINVAL);
	ck_assert_int_eq(asb_metric_series_get(&s, c, utf8, 2), 0);
	ck_assert_int_eq(asb_metric_series_get(&s, c, two, 2), 0);
	/* the same tuple gives the same series */
	asb_metric_series *again;
	ck_assert_int_eq(asb_metric_series_get(&again, c, two, 2), 0);
	ck_assert_ptr_eq(s, again);
	ck_assert_int_eq(asb_metric_series_add(s, -1), ASB_EINVAL);
	ck_assert_int_eq(asb_metric_series_set(s, 3), ASB_EINVAL);
	ck_assert_int_eq(asb_metric_series_observe(s, 3), ASB_EINVAL);
	ck_assert(asb_metric_series_value(s) == 0);

	asb_metric_series *gs;
	ck_assert_int_eq(asb_metric_series_get(&gs, g, NULL, 0), 0);
	ck_assert_int_eq(asb_metric_series_add(gs, 5), 0);
	ck_assert_int_eq(asb_metric_series_add(gs, -7), 0);
	ck_assert(asb_metric_series_value(gs) == -2);
	ck_assert_int_eq(asb_metric_series_set(gs, 0.5), 0);
	ck_assert(asb_metric_series_value(gs) == 0.5);
	ck_assert_int_eq(asb_metric_series_observe(gs, 1), ASB_EINVAL);
}
END_TEST

/* A collector standing for a cache: emits one sample per entry. */
typedef struct {
	int calls;
	const char *ns[3];
	double count[3];
	int n;
} fake_cache;

static void collect_cache(asb_metrics_emitter *e, void *ud)
{
	fake_cache *c = ud;
	c->calls++;
	for (int i = 0; i < c->n; i++) {
		const char *v[] = { c->ns[i] };
		ck_assert_int_eq(asb_metrics_emit(e, v, 1, c->count[i]), 0);
	}
	const char *wrong[] = { "a", "b" };
	ck_assert_int_eq(asb_metrics_emit(e, wrong, 2, 1), ASB_EINVAL);
}

START_TEST(collectors_run_at_scrape_time)
{
	static const char *const labels[] = { "namespace", NULL };
	asb_metric *m = must_register(ASB_METRIC_GAUGE, "objects", "Objects per namespace.", labels);
	const char *stored[] = { "b" };
	ck_assert_int_eq(asb_metric_set(m, stored, 1, 7), 0);
	fake_cache cache = { 0, { "c", "a" }, { 2, 1 }, 2 };
	ck_assert_int_eq(asb_metric_add_collector(m, collect_cache, &cache), 0);
	ASSERT_EXPOSITION(
		"# HELP objects Objects per namespace.\n"
		"# TYPE objects gauge\n"
		"objects{namespace=\"a\"} 1\n"
		"objects{namespace=\"b\"} 7\n"
		"objects{namespace=\"c\"} 2\n");
	ck_assert_int_eq(cache.calls, 1);
	/* values are read at every scrape, not at registration */
	cache.count[0] = 5;
	cache.n = 1;
	ASSERT_EXPOSITION(
		"# HELP objects Objects per namespace.\n"
		"# TYPE objects gauge\n"
		"objects{namespace=\"b\"} 7\n"
		"objects{namespace=\"c\"} 5\n");
	asb_metric_remove_collector(m, collect_cache, &cache);
	ASSERT_EXPOSITION(
		"# HELP objects Objects per namespace.\n"
		"# TYPE objects gauge\n"
		"objects{namespace=\"b\"} 7\n");
	ck_assert_int_eq(cache.calls, 2);

	asb_metric *h = must_register(ASB_METRIC_HISTOGRAM, "hist", "h", NULL);
	ck_assert_int_eq(asb_metric_add_collector(h, collect_cache, &cache), ASB_EINVAL);
}
END_TEST

START_TEST(empty_registry_exposes_empty_text)
{
	ASSERT_EXPOSITION("");
}
END_TEST

enum { THREADS = 8, ITERATIONS = 20000 };

typedef struct {
	asb_metric_series *counter, *gauge, *hist;
	asb_metric *vec;
	int id;
} worker_arg;

static void *hammer(void *p)
{
	worker_arg *a = p;
	for (int i = 0; i < ITERATIONS; i++) {
		asb_metric_series_add(a->counter, 1);
		asb_metric_series_add(a->gauge, (i % 2) ? -1 : 1);
		asb_metric_series_observe(a->hist, (double)(i % 4));
		/* lookups racing with creations of the same and other tuples */
		char v[16];
		snprintf(v, sizeof(v), "k%d", i % 50);
		const char *vals[] = { v };
		asb_metric_add(a->vec, vals, 1, 1);
	}
	return NULL;
}

START_TEST(concurrent_recording_loses_nothing)
{
	static const char *const labels[] = { "key", NULL };
	static const double bounds[] = { 0.5, 1.5, 2.5 };
	asb_metric *c = must_register(ASB_METRIC_COUNTER, "c_total", "c", NULL);
	asb_metric *g = must_register(ASB_METRIC_GAUGE, "g", "g", NULL);
	asb_metric *v = must_register(ASB_METRIC_COUNTER, "v_total", "v", labels);
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.type = ASB_METRIC_HISTOGRAM;
	o.name = "h";
	o.help = "h";
	o.buckets = bounds;
	o.nbuckets = 3;
	asb_metric *h;
	ck_assert_int_eq(asb_metrics_register(&h, reg, &o), 0);
	worker_arg args[THREADS];
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++) {
		args[i].vec = v;
		args[i].id = i;
		ck_assert_int_eq(asb_metric_series_get(&args[i].counter, c, NULL, 0), 0);
		ck_assert_int_eq(asb_metric_series_get(&args[i].gauge, g, NULL, 0), 0);
		ck_assert_int_eq(asb_metric_series_get(&args[i].hist, h, NULL, 0), 0);
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
	}
	/* scrapes while the writers run must not disturb them */
	for (int i = 0; i < 20; i++)
		free(expose());
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ck_assert(asb_metric_series_value(args[0].counter) == THREADS * ITERATIONS);
	ck_assert(asb_metric_series_value(args[0].gauge) == 0);
	ck_assert_uint_eq(asb_metric_series_count(args[0].hist), THREADS * ITERATIONS);
	/* each thread observes 0,1,2,3 equally often: sum = 1.5 per observation */
	ck_assert(asb_metric_series_value(args[0].hist) == 1.5 * THREADS * ITERATIONS);
	double total = 0;
	for (int k = 0; k < 50; k++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", k);
		const char *vals[] = { key };
		asb_metric_series *s;
		ck_assert_int_eq(asb_metric_series_get(&s, v, vals, 1), 0);
		ck_assert(asb_metric_series_value(s) == THREADS * ITERATIONS / 50);
		total += asb_metric_series_value(s);
	}
	ck_assert(total == THREADS * ITERATIONS);
	char *text = expose();
	ck_assert_ptr_nonnull(strstr(text, "h_bucket{le=\"0.5\"} 40000\n"));
	ck_assert_ptr_nonnull(strstr(text, "h_bucket{le=\"2.5\"} 120000\n"));
	ck_assert_ptr_nonnull(strstr(text, "h_bucket{le=\"+Inf\"} 160000\n"));
	ck_assert_ptr_nonnull(strstr(text, "h_count 160000\n"));
	free(text);
}
END_TEST

/* max_series: new tuples past the bound fold into their overflow tuple,
 * which keeps the labels the caller bounds (here: code), so the family
 * never holds more than the bound plus one series per kept value. */
START_TEST(series_bound_folds_into_overflow)
{
	static const char *const labels[] = { "tenant", "code", NULL };
	static const char *const overflow[] = { "_other", NULL };
	asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
	o.name = "bounded_total";
	o.help = "b";
	o.label_names = labels;
	o.max_series = 3;
	o.overflow_values = overflow;
	asb_metric *m;
	ck_assert_int_eq(asb_metrics_register(&m, reg, &o), 0);
	for (int i = 0; i < 1000; i++) {
		char t[16];
		snprintf(t, sizeof(t), "t%d", i);
		const char *v[] = { t, i % 2 ? "200" : "500" };
		ck_assert_int_eq(asb_metric_add(m, v, 2, 1), 0);
	}
	/* 3 admitted tenants, then (_other, 200) and (_other, 500) */
	ck_assert_uint_eq(asb_metric_size(m), 5);
	/* an admitted tuple keeps counting on its own series */
	ck_assert_int_eq(asb_metric_add(m, (const char *[]){ "t1", "200" }, 2, 1), 0);
	ASSERT_EXPOSITION(
		"# HELP bounded_total b\n"
		"# TYPE bounded_total counter\n"
		"bounded_total{code=\"200\",tenant=\"_other\"} 499\n"
		"bounded_total{code=\"200\",tenant=\"t1\"} 2\n"
		"bounded_total{code=\"500\",tenant=\"_other\"} 498\n"
		"bounded_total{code=\"500\",tenant=\"t0\"} 1\n"
		"bounded_total{code=\"500\",tenant=\"t2\"} 1\n");
	/* no bound without overflow values; re-registering must match it */
	asb_metric *again;
	ck_assert_int_eq(asb_metrics_register(&again, reg, &o), 0);
	ck_assert_ptr_eq(again, m);
	o.max_series = 4;
	ck_assert_int_eq(asb_metrics_register(&again, reg, &o), ASB_EINVAL);
	o.name = "unbounded_total";
	o.overflow_values = NULL;
	ck_assert_int_eq(asb_metrics_register(&again, reg, &o), ASB_EINVAL);
	static const char *const keep_all[] = { NULL, NULL };
	o.overflow_values = keep_all;
	ck_assert_int_eq(asb_metrics_register(&again, reg, &o), ASB_EINVAL);
	/* a version 1 options struct is still accepted (and has no bound) */
	asb_metric_options v1;
	memset(&v1, 0xff, sizeof(v1));
	ck_assert_int_eq(asb_metric_options_init(&v1, 1), 0);
	ck_assert_uint_eq(v1.version, 1);
	ck_assert_uint_eq(v1.max_series, (size_t)-1);  /* not written: not in a v1 struct */
	v1.name = "v1_total";
	ck_assert_int_eq(asb_metrics_register(&again, reg, &v1), 0);
	ck_assert_int_eq(asb_metric_options_init(&v1, 3), ASB_EINVAL);
}
END_TEST

static const char *fmt(double v)
{
	static char buf[64];
	return asb_metrics_format_float(v, buf, sizeof(buf));
}

START_TEST(floats_format_like_go)
{
	ck_assert_str_eq(fmt(0), "0");
	ck_assert_str_eq(fmt(-0.0), "0");
	ck_assert_str_eq(fmt(1), "1");
	ck_assert_str_eq(fmt(-1), "-1");
	ck_assert_str_eq(fmt(0.1), "0.1");
	ck_assert_str_eq(fmt(0.1 + 0.2), "0.30000000000000004");
	ck_assert_str_eq(fmt(100), "100");
	ck_assert_str_eq(fmt(123456), "123456");
	ck_assert_str_eq(fmt(1e6), "1e+06");
	ck_assert_str_eq(fmt(1234567), "1.234567e+06");
	ck_assert_str_eq(fmt(0.0001), "0.0001");
	ck_assert_str_eq(fmt(0.00001), "1e-05");
	ck_assert_str_eq(fmt(1.5e-5), "1.5e-05");
	ck_assert_str_eq(fmt(10e-9), "1e-08");
	ck_assert_str_eq(fmt(1.5e300), "1.5e+300");
	ck_assert_str_eq(fmt(-2.5), "-2.5");
	ck_assert_str_eq(fmt(0.005), "0.005");
	ck_assert_str_eq(fmt(INFINITY), "+Inf");
	ck_assert_str_eq(fmt(-INFINITY), "-Inf");
	ck_assert_str_eq(fmt(NAN), "NaN");
}
END_TEST

START_TEST(exponential_buckets_match_client_golang)
{
	double b[12];
	ck_assert_int_eq(asb_metrics_exponential_buckets(10e-9, 10, 12, b), 0);
	ck_assert_str_eq(fmt(b[0]), "1e-08");
	/* repeated multiplication, as in Go: real workqueue scrapes show this bound */
	ck_assert_str_eq(fmt(b[3]), "9.999999999999999e-06");
	ck_assert_str_eq(fmt(b[11]), "1000");
	ck_assert_int_eq(asb_metrics_exponential_buckets(0, 10, 12, b), ASB_EINVAL);
	ck_assert_int_eq(asb_metrics_exponential_buckets(1, 1, 12, b), ASB_EINVAL);
	ck_assert_int_eq(asb_metrics_exponential_buckets(1, 2, 0, b), ASB_EINVAL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, counter_vector_exact_text);
	tcase_add_test(tc, families_sorted_by_name_and_empty_ones_omitted);
	tcase_add_test(tc, const_labels_merge_sorted_with_variable_labels);
	tcase_add_test(tc, histogram_buckets_are_cumulative_with_inf_sum_count);
	tcase_add_test(tc, histogram_default_buckets_and_no_labels);
	tcase_add_test(tc, histogram_trailing_inf_bound_dropped_and_nan_goes_to_inf);
	tcase_add_test(tc, label_values_and_help_are_escaped);
	tcase_add_test(tc, register_same_shape_returns_existing_family);
	tcase_add_test(tc, register_rejects_invalid_names);
	tcase_add_test(tc, series_checks_values_and_types);
	tcase_add_test(tc, collectors_run_at_scrape_time);
	tcase_add_test(tc, empty_registry_exposes_empty_text);
	tcase_add_test(tc, concurrent_recording_loses_nothing);
	tcase_add_test(tc, series_bound_folds_into_overflow);
	tcase_add_test(tc, floats_format_like_go);
	tcase_add_test(tc, exponential_buckets_match_client_golang);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
