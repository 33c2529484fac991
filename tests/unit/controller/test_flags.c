/*
 * test_flags.c - unit tests of cmd/controller/flags.c: defaults, the
 * spellings of each flag (Go's flag package: one dash or two, =value or
 * the next word), the Go duration syntax, the messages naming a bad flag,
 * and the startup validation of docs/upstream.md#controller-flags,
 * #startup-validation.
 */
#include <check.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "flags.h"
#include "../argv.h"
#include "asb/duration.h"

/* Parses the NULL-terminated flags after the program name into `f`
 * (defaults first); returns controller_flags_parse()'s result. */
static int parse(controller_flags *f, ...)
{
	char **argv;
	va_list ap;
	va_start(ap, f);
	int argc = test_argv(&argv, "agent-sandbox-controller", ap);
	va_end(ap);
	controller_flags_defaults(f);
	return controller_flags_parse(argc, argv, f);
}

START_TEST(defaults_are_upstream)
{
	controller_flags f;
	controller_flags_defaults(&f);
	ck_assert_str_eq(f.cluster_domain, "cluster.local");
	ck_assert_int_eq(f.sandbox_workers, 100);
	ck_assert_str_eq(f.metrics_addr, ":8080");
	ck_assert_str_eq(f.probe_addr, ":8081");
	ck_assert(f.leader_elect);
	ck_assert(f.kube_api_qps == -1);
	ck_assert_int_eq(f.kube_api_burst, 10);
	ck_assert_int_eq(f.api_connections, 1);
	ck_assert(!f.separate_watch_connection);
}
END_TEST

START_TEST(bool_spellings)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--leader-elect=false", NULL), 0);
	ck_assert(!f.leader_elect);
	ck_assert_int_eq(parse(&f, "--leader-elect", NULL), 0);
	ck_assert(f.leader_elect);
	ck_assert_int_eq(parse(&f, "--separate-watch-connection=true", NULL), 0);
	ck_assert(f.separate_watch_connection);
	ck_assert_int_eq(parse(&f, "--leader-elect=maybe", NULL), -1);
	/* Go's strconv.ParseBool spellings */
	ck_assert_int_eq(parse(&f, "--leader-elect=F", NULL), 0);
	ck_assert(!f.leader_elect);
	ck_assert_int_eq(parse(&f, "--leader-elect=True", NULL), 0);
	ck_assert(f.leader_elect);
	ck_assert_int_eq(parse(&f, "--leader-elect=0", NULL), 0);
	ck_assert(!f.leader_elect);
	ck_assert_int_eq(parse(&f, "--leader-elect=yes", NULL), -1);
}
END_TEST

START_TEST(go_durations)
{
	int64_t ns;
	ck_assert_int_eq(asb_duration_parse("0", &ns), 0);
	ck_assert_int_eq(ns, 0);
	ck_assert_int_eq(asb_duration_parse("5m", &ns), 0);
	ck_assert_int_eq(ns, 300000000000LL);
	ck_assert_int_eq(asb_duration_parse("1h2m3.5s", &ns), 0);
	ck_assert_int_eq(ns, 3723500000000LL);
	ck_assert_int_eq(asb_duration_parse("-1.5ms", &ns), 0);
	ck_assert_int_eq(ns, -1500000);
	ck_assert_int_eq(asb_duration_parse("\xc2\xb5s", &ns), -1);
	ck_assert_int_eq(asb_duration_parse("3\xc2\xb5s", &ns), 0);
	ck_assert_int_eq(ns, 3000);
	ck_assert_int_eq(asb_duration_parse("5", &ns), -1);
	ck_assert_int_eq(asb_duration_parse("", &ns), -1);
	ck_assert_int_eq(asb_duration_parse("1d", &ns), -1);
	ck_assert_int_eq(asb_duration_parse(".s", &ns), -1);
	ck_assert_int_eq(asb_duration_parse("3000000h", &ns), -1);
}
END_TEST

START_TEST(defaults_of_upstream_only_flags)
{
	controller_flags f;
	controller_flags_defaults(&f);
	ck_assert(!f.extensions);
	ck_assert(!f.cache_label_selectors);
	ck_assert_int_eq(f.sandbox_claim_workers, 50);
	ck_assert_int_eq(f.sandbox_warm_pool_workers, 1);
	ck_assert_int_eq(f.sandbox_template_workers, 1);
	ck_assert_int_eq(f.warm_pool_max_batch_size, 300);
	ck_assert_int_eq(f.warm_pool_replenish_delay_ms, 0);
	ck_assert(f.warm_pool_max_refill_rate == 0);
	ck_assert_int_eq(f.warm_pool_readiness_grace_period_ms, 300000);
	ck_assert_int_eq(f.warm_pool_unschedulable_recheck_ms, 60000);
	ck_assert(f.enable_warm_pool_eviction);
	ck_assert(!f.disable_claim_events);
	ck_assert(!f.disable_claim_observability_annotations);
	ck_assert(!f.enable_tracing);
	ck_assert(!f.enable_pprof);
	ck_assert(!f.enable_pprof_debug);
	ck_assert_int_eq(f.pprof_block_profile_rate, 1000000);
	ck_assert_int_eq(f.pprof_mutex_profile_fraction, 10);
	ck_assert(!f.log.devel);
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);  /* upstream's production default */
	ck_assert_int_eq(f.log.level, ASB_LOG_INFO);
}
END_TEST

/* Every boolean flag of docs/upstream.md#controller-flags takes --flag, --flag=true and --flag=false. */
START_TEST(every_bool_flag_spelling)
{
	static const struct {
		const char *name;
		size_t off;
	} flags[] = {
		{ "cache-label-selectors", offsetof(controller_flags, cache_label_selectors) },
		{ "extensions", offsetof(controller_flags, extensions) },
		{ "enable-warm-pool-eviction", offsetof(controller_flags, enable_warm_pool_eviction) },
		{ "disable-claim-events", offsetof(controller_flags, disable_claim_events) },
		{ "disable-claim-observability-annotations",
		  offsetof(controller_flags, disable_claim_observability_annotations) },
		{ "enable-tracing", offsetof(controller_flags, enable_tracing) },
		{ "enable-pprof", offsetof(controller_flags, enable_pprof) },
		{ "enable-pprof-debug", offsetof(controller_flags, enable_pprof_debug) },
		{ "zap-devel", offsetof(controller_flags, log.devel) },
	};
	/* each spelling, with the value it sets (-1: refused); one dash or
	 * two, as Go's flag package */
	static const struct {
		const char *dashes, *suffix;
		int want;
	} spellings[] = {
		{ "--", "", 1 }, { "--", "=false", 0 }, { "--", "=true", 1 }, { "--", "=yes", -1 },
		{ "-", "=false", 0 }, { "-", "", 1 }, { "-", "=0", 0 }, { "-", "=T", 1 },
	};
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		for (size_t j = 0; j < sizeof(spellings) / sizeof(spellings[0]); j++) {
			controller_flags f;
			char a[128];
			bool *v = (bool *)((char *)&f + flags[i].off);
			snprintf(a, sizeof(a), "%s%s%s", spellings[j].dashes, flags[i].name,
			         spellings[j].suffix);
			int want = spellings[j].want;
			ck_assert_int_eq(parse(&f, a, NULL), want < 0 ? -1 : 0);
			if (want >= 0)
				ck_assert_msg(*v == (want == 1), "%s", a);
		}
	}
}
END_TEST

/* docs/upstream.md#startup-validation: claim and warm-pool workers > 0, template workers unchecked, batch > 0. */
START_TEST(worker_and_batch_validation)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--sandbox-claim-concurrent-workers=7",
	                       "--sandbox-warm-pool-concurrent-workers", "3",
	                       "--sandbox-template-concurrent-workers=2",
	                       "--sandbox-warm-pool-max-batch-size=20", NULL), 0);
	ck_assert_int_eq(f.sandbox_claim_workers, 7);
	ck_assert_int_eq(f.sandbox_warm_pool_workers, 3);
	ck_assert_int_eq(f.sandbox_template_workers, 2);
	ck_assert_int_eq(f.warm_pool_max_batch_size, 20);
	ck_assert_int_eq(parse(&f, "--sandbox-claim-concurrent-workers=0", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-concurrent-workers=-1", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-concurrent-workers=0", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-max-batch-size=0", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-template-concurrent-workers=0", NULL), 0);
	ck_assert_int_eq(f.sandbox_template_workers, 0);
	ck_assert_int_eq(parse(&f, "--sandbox-template-concurrent-workers=-2", NULL), 0);
	ck_assert_int_eq(parse(&f, "--sandbox-template-concurrent-workers=x", NULL), -1);
}
END_TEST

/* docs/upstream.md#startup-validation: grace period and recheck interval positive; refill rate finite, >= 0. */
START_TEST(warm_pool_durations_and_rate)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-readiness-grace-period=90s",
	                       "--sandbox-warm-pool-unschedulable-recheck-interval=1m30s",
	                       "--sandbox-warm-pool-replenish-delay=250ms",
	                       "--sandbox-warm-pool-max-refill-rate=2.5", NULL), 0);
	ck_assert_int_eq(f.warm_pool_readiness_grace_period_ms, 90000);
	ck_assert_int_eq(f.warm_pool_unschedulable_recheck_ms, 90000);
	ck_assert_int_eq(f.warm_pool_replenish_delay_ms, 250);
	ck_assert(f.warm_pool_max_refill_rate == 2.5);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-readiness-grace-period=0", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-readiness-grace-period=-1s", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-readiness-grace-period=5", NULL), -1);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-unschedulable-recheck-interval=0s", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-replenish-delay=soon", NULL), -1);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-replenish-delay=0", NULL), 0);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-max-refill-rate=0", NULL), 0);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-max-refill-rate=-1", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-max-refill-rate=NaN", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-max-refill-rate=+Inf", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-max-refill-rate=1e400", NULL), -1);
}
END_TEST

START_TEST(pprof_values)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--pprof-block-profile-rate=-5", "--pprof-mutex-profile-fraction=0",
	                       NULL), 0);
	ck_assert_int_eq(f.pprof_block_profile_rate, 0);  /* negative clamped */
	ck_assert_int_eq(f.pprof_mutex_profile_fraction, 0);
	ck_assert_int_eq(parse(&f, "--pprof-block-profile-rate=1", NULL), 0);
	ck_assert_int_eq(f.pprof_block_profile_rate, 1);
	ck_assert_int_eq(parse(&f, "--pprof-mutex-profile-fraction=ten", NULL), -1);
}
END_TEST

/* controller-runtime's zap flags map onto --log-format and --log-level. */
START_TEST(zap_flags)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--zap-encoder=json", NULL), 0);
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);
	ck_assert_int_eq(parse(&f, "--zap-encoder", "console", NULL), 0);
	ck_assert_int_eq(f.log.format, ASB_LOG_TEXT);
	ck_assert_int_eq(parse(&f, "--zap-encoder=logfmt", NULL), -1);
	ck_assert_int_eq(parse(&f, "--zap-log-level=error", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_ERROR);
	ck_assert_int_eq(parse(&f, "--zap-log-level=info", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_INFO);
	ck_assert_int_eq(parse(&f, "--zap-log-level=3", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_DEBUG);
	ck_assert_int_eq(parse(&f, "--zap-log-level=0", NULL), -1);
	ck_assert_int_eq(parse(&f, "--zap-log-level=dpanic", NULL), -1);
	/* panic: accepted as upstream; nothing of ours is more severe than error */
	ck_assert_int_eq(parse(&f, "--zap-log-level=panic", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_ERROR);
	/* the last level flag wins, as both set one setting */
	ck_assert_int_eq(parse(&f, "--zap-log-level=error", "--log-level=warn", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_WARN);
	/* development mode: debug and text unless a level or format is given,
	 * in any order */
	ck_assert_int_eq(parse(&f, "--zap-devel", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_DEBUG);
	ck_assert_int_eq(f.log.format, ASB_LOG_TEXT);
	ck_assert_int_eq(parse(&f, "--zap-log-level=info", "--zap-devel", "-zap-encoder=json", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_INFO);
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);
	ck_assert_int_eq(parse(&f, "--zap-devel=false", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_INFO);
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);
	ck_assert_int_eq(parse(&f, "--zap-stacktrace-level=panic", "--zap-time-encoding=rfc3339nano",
	                       NULL), 0);
	ck_assert_int_eq(parse(&f, "--zap-stacktrace-level=warn", NULL), -1);
	ck_assert_int_eq(parse(&f, "--zap-time-encoding=unix", NULL), -1);
	/* controller-runtime lower-cases the values; "nanos" is its real spelling */
	ck_assert_int_eq(parse(&f, "--zap-encoder=JSON", NULL), 0);
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);
	ck_assert_int_eq(parse(&f, "--zap-encoder=Console", NULL), 0);
	ck_assert_int_eq(f.log.format, ASB_LOG_TEXT);
	ck_assert_int_eq(parse(&f, "--zap-log-level=DEBUG", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_DEBUG);
	ck_assert_int_eq(parse(&f, "--zap-log-level=Error", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_ERROR);
	ck_assert_int_eq(parse(&f, "--zap-stacktrace-level=Panic", "--zap-time-encoding=ISO8601",
	                       NULL), 0);
	ck_assert_int_eq(f.log.time, ASB_LOG_TIME_ISO8601);
	ck_assert_int_eq(parse(&f, "--zap-time-encoding=nanos", NULL), 0);
	ck_assert_int_eq(f.log.time, ASB_LOG_TIME_NANOS);
	ck_assert_int_eq(parse(&f, "-zap-time-encoding", "RFC3339", NULL), 0);
	ck_assert_int_eq(f.log.time, ASB_LOG_TIME_RFC3339);
	ck_assert_int_eq(parse(&f, "--zap-time-encoding=nano", NULL), 0);
	ck_assert_int_eq(parse(&f, "--zap-log-level=Warn", NULL), 0);
	ck_assert_int_eq(f.log.level, ASB_LOG_WARN);
}
END_TEST

START_TEST(extensions_accepted_by_validation)
{
	controller_flags f;
	char err[256] = "";
	ck_assert_int_eq(parse(&f, NULL), 0);
	ck_assert(!f.extensions);
	ck_assert_int_eq(parse(&f, "--extensions", NULL), 0);
	ck_assert(f.extensions);
	ck_assert_int_eq(controller_flags_validate(&f, err, sizeof(err)), 0);
	ck_assert_int_eq(parse(&f, "--extensions=false", NULL), 0);
	ck_assert(!f.extensions);
	ck_assert_int_eq(parse(&f, "--extensions=maybe", NULL), -1);
}
END_TEST

typedef struct {
	int n;
	char flags[8][64];
} warnings;

static void collect(const char *flag, const char *msg, void *ud)
{
	warnings *w = ud;
	ck_assert_ptr_nonnull(msg);
	ck_assert(*msg);
	if (w->n < 8)
		snprintf(w->flags[w->n], sizeof(w->flags[0]), "%s", flag);
	w->n++;
}

static int warn_count(controller_flags *f, warnings *w)
{
	memset(w, 0, sizeof(*w));
	int n = controller_flags_warnings(f, collect, w);
	ck_assert_int_eq(n, w->n);
	return n;
}

/* docs/upstream.md#startup-validation warnings, and the flags accepted without effect. */
START_TEST(startup_warnings)
{
	controller_flags f;
	warnings w;
	ck_assert_int_eq(parse(&f, NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 0);
	/* 948 + 50 + 1 + 1 = 1000: not above */
	ck_assert_int_eq(parse(&f, "--sandbox-concurrent-workers=948", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 0);
	ck_assert_int_eq(parse(&f, "--sandbox-concurrent-workers=949", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 1);
	ck_assert_str_eq(w.flags[0], "sandbox-concurrent-workers");
	/* the template workers count in the sum */
	ck_assert_int_eq(parse(&f, "--sandbox-template-concurrent-workers=900", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 1);
	/* QPS limited and 152 workers > burst 10 */
	ck_assert_int_eq(parse(&f, "--kube-api-qps=50", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 1);
	ck_assert_str_eq(w.flags[0], "kube-api-burst");
	ck_assert_int_eq(parse(&f, "--kube-api-qps=50", "--kube-api-burst=152", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 0);
	ck_assert_int_eq(parse(&f, "--kube-api-qps=-1", "--kube-api-burst=1", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 0);
	ck_assert_int_eq(parse(&f, "--enable-tracing", "--enable-pprof", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 2);
	ck_assert_str_eq(w.flags[0], "enable-tracing");
	ck_assert_str_eq(w.flags[1], "enable-pprof");
	ck_assert_int_eq(parse(&f, "--enable-pprof-debug", NULL), 0);
	ck_assert_int_eq(warn_count(&f, &w), 1);
	ck_assert_str_eq(w.flags[0], "enable-pprof-debug");
}
END_TEST

/* The flags of the Sandbox controller itself: both value spellings,
 * getopt's unique prefixes, and what each refuses. */
START_TEST(core_flag_values)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--kubeconfig", "/k", "--context=c", "--cluster-domain", "d.example",
	                       "--leader-election-namespace=ns", NULL), 0);
	ck_assert_str_eq(f.kubeconfig, "/k");
	ck_assert_str_eq(f.context, "c");
	ck_assert_str_eq(f.cluster_domain, "d.example");
	ck_assert_str_eq(f.leader_election_namespace, "ns");
	ck_assert_int_eq(parse(&f, "--kubeconfig=", NULL), -2);
	ck_assert_int_eq(parse(&f, "--context=", NULL), -2);
	ck_assert_int_eq(parse(&f, "--cluster-domain=", NULL), -2);
	ck_assert_int_eq(parse(&f, "--leader-election-namespace=", NULL), -2);

	ck_assert_int_eq(parse(&f, "--sandbox-concurrent-workers", "7", "--kube-api-burst=3",
	                       "--api-connections=64", "--kube-api-qps=2.5", NULL), 0);
	ck_assert_int_eq(f.sandbox_workers, 7);
	ck_assert_int_eq(f.kube_api_burst, 3);
	ck_assert_int_eq(f.api_connections, 64);
	ck_assert(f.kube_api_qps == 2.5);
	ck_assert_int_eq(parse(&f, "--api-connections=65", NULL), -2);
	ck_assert_int_eq(parse(&f, "--api-connections=0", NULL), -2);
	ck_assert_int_eq(parse(&f, "--kube-api-burst=0", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-concurrent-workers=99999999999", NULL), -2);
	ck_assert_int_eq(parse(&f, "--kube-api-qps=inf", NULL), -2);
	ck_assert_int_eq(parse(&f, "--kube-api-qps=", NULL), -1);
	/* Go's strconv refuses spaces around a number */
	ck_assert_int_eq(parse(&f, "--kube-api-qps= 5", NULL), -1);
	ck_assert_int_eq(parse(&f, "--kube-api-burst= 5", NULL), -1);
	ck_assert_int_eq(parse(&f, "--sandbox-warm-pool-max-refill-rate=\n1", NULL), -1);

	ck_assert_int_eq(parse(&f, "--sandbox-write-behind-window=1.5ms", NULL), 0);
	ck_assert_int_eq(f.sandbox_write_behind_window_ms, 2);  /* rounded up */
	ck_assert_int_eq(parse(&f, "--sandbox-write-behind-window=0", NULL), 0);
	ck_assert_int_eq(f.sandbox_write_behind_window_ms, 0);
	ck_assert_int_eq(parse(&f, "--sandbox-write-behind-window=-1ms", NULL), -2);
	/* negative however small: not rounded to 0 and let through */
	ck_assert_int_eq(parse(&f, "--sandbox-write-behind-window=-0.5ms", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-status-coalesce-window=-1ns", NULL), -2);
	ck_assert_int_eq(parse(&f, "--sandbox-write-behind-window=5", NULL), -1);

	ck_assert_int_eq(parse(&f, "--metrics-bind-address=:9", "--health-probe-bind-address", "0",
	                       NULL), 0);
	ck_assert_str_eq(f.metrics_addr, ":9");
	ck_assert_str_eq(f.probe_addr, "0");
	ck_assert_int_eq(parse(&f, "--log-format=json", "--log-level", "warn", NULL), 0);
	ck_assert_int_eq(f.log.format, ASB_LOG_JSON);
	ck_assert_int_eq(f.log.level, ASB_LOG_WARN);
	ck_assert(f.log.level_set);
	ck_assert_int_eq(parse(&f, "--log-format=text", NULL), 0);
	ck_assert_int_eq(f.log.format, ASB_LOG_TEXT);
	ck_assert_int_eq(parse(&f, "--log-format=JSON", NULL), -1);  /* exact, unlike --zap-encoder */
	ck_assert_int_eq(parse(&f, "--log-level=trace", NULL), -1);

	/* no abbreviations, as Go's flag package */
	ck_assert_int_eq(parse(&f, "--kube-api-b=4", NULL), -1);
}
END_TEST

/* --help and --version stop parsing (1); anything not a flag is refused (-1). */
START_TEST(actions_and_refusals)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--help", NULL), 1);
	ck_assert_int_eq(parse(&f, "-help", NULL), 1);
	ck_assert_int_eq(parse(&f, "-h", "--bogus", NULL), 1);
	ck_assert_int_eq(parse(&f, "--version", NULL), 1);
	ck_assert_int_eq(parse(&f, "-version", NULL), 1);
	ck_assert_int_eq(parse(&f, "-version=true", NULL), 1);
	ck_assert_int_eq(parse(&f, "-version=false", NULL), 0);  /* a Go boolean: no request */
	ck_assert_int_eq(parse(&f, "--ver", NULL), -1);
	ck_assert_int_eq(parse(&f, "--bogus", NULL), -1);
	ck_assert_int_eq(parse(&f, "--bogus", "--help", NULL), -1);
	ck_assert_int_eq(parse(&f, "--kubeconfig", NULL), -1);  /* its value missing */
	ck_assert_int_eq(parse(&f, "--help=x", NULL), -1);      /* not a boolean */
	ck_assert_int_eq(parse(&f, "positional", NULL), -1);
	ck_assert_int_eq(parse(&f, "--leader-elect", "false", NULL), -1);  /* booleans: =B only */
	ck_assert_int_eq(parse(&f, "--", "x", NULL), -1);
	ck_assert_int_eq(parse(&f, "--", NULL), 0);
}
END_TEST

/* Go's spellings, as upstream's manifests write them: one dash or two,
 * =value or the next word. */
START_TEST(go_style_spellings)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "-leader-elect=false", "-webhook-port", "9444",
	                       "-cluster-domain=example.org", "--kube-api-burst", "7",
	                       "--sandbox-concurrent-workers=5", "-zap-log-level", "debug",
	                       "-metrics-bind-address=:9999", NULL), 0);
	ck_assert(!f.leader_elect);
	ck_assert_int_eq(f.webhook.port, 9444);
	ck_assert_str_eq(f.cluster_domain, "example.org");
	ck_assert_int_eq(f.kube_api_burst, 7);
	ck_assert_int_eq(f.sandbox_workers, 5);
	ck_assert_int_eq(f.log.level, ASB_LOG_DEBUG);
	ck_assert_str_eq(f.metrics_addr, ":9999");
	/* a value that starts with a dash is taken as the next word */
	ck_assert_int_eq(parse(&f, "-kube-api-qps", "-1", NULL), 0);
	ck_assert(f.kube_api_qps == -1);
	ck_assert_int_eq(parse(&f, "-extensions", "-enable-webhook=0", NULL), 0);
	ck_assert(f.extensions && !f.webhook.enable);
}
END_TEST

/* A parse into fresh defaults, for test_stderr_of(). */
static int parse_fresh(int argc, char **argv)
{
	controller_flags f;
	controller_flags_defaults(&f);
	return controller_flags_parse(argc, argv, &f);
}

/* What the parse of `args` printed (to free), run as an installed binary
 * would be, so that a message naming the program's path would show. */
static char *err_of(int *rc, const char *const *args)
{
	return test_stderr_of(parse_fresh, rc, "/usr/local/bin/agent-sandbox-controller", args);
}

/* The message names the flag as given, never the program's path. */
START_TEST(errors_name_the_flag)
{
	int rc;
	char *e = err_of(&rc, TEST_ARGS("-leader-elect=false", "-nope"));
	ck_assert_int_eq(rc, -1);
	ck_assert_msg(strncmp(e, "agent-sandbox-controller: flag provided but not defined: -nope\n",
	                      63) == 0, "%s", e);
	ck_assert_ptr_null(strstr(e, "/usr/local/bin"));
	free(e);
	e = err_of(&rc, TEST_ARGS("--nope=3"));
	ck_assert_ptr_nonnull(strstr(e, "flag provided but not defined: --nope\n"));
	free(e);
	e = err_of(&rc, TEST_ARGS("-leader-elect=maybe"));
	ck_assert_int_eq(rc, -1);
	ck_assert_str_eq(e, "agent-sandbox-controller: invalid value \"maybe\" for flag "
	                    "--leader-elect: must be true or false\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-webhook-port", "x"));
	ck_assert_str_eq(e, "agent-sandbox-controller: invalid value \"x\" for flag --webhook-port: "
	                    "must be an integer >= 1\n");
	free(e);
	/* a number out of int's range is told so, not "must be an integer >= MIN" */
	e = err_of(&rc, TEST_ARGS("-webhook-port=99999999999"));
	ck_assert_str_eq(e, "agent-sandbox-controller: invalid value \"99999999999\" for flag "
	                    "--webhook-port: must be at most 2147483647\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-pprof-mutex-profile-fraction=-99999999999999999999"));
	ck_assert_str_eq(e, "agent-sandbox-controller: invalid value \"-99999999999999999999\" for "
	                    "flag --pprof-mutex-profile-fraction: must be at least -2147483648\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-pprof-mutex-profile-fraction=x"));
	ck_assert_str_eq(e, "agent-sandbox-controller: invalid value \"x\" for flag "
	                    "--pprof-mutex-profile-fraction: must be an integer\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-kubeconfig"));
	ck_assert_str_eq(e, "agent-sandbox-controller: flag needs an argument: --kubeconfig\n");
	free(e);
	e = err_of(&rc, TEST_ARGS("-zap-encoder=logfmt"));
	ck_assert_str_eq(e, "agent-sandbox-controller: invalid value \"logfmt\" for flag "
	                    "--zap-encoder: use json or console\n");
	free(e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("controller_flags");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, defaults_are_upstream);
	tcase_add_test(tc, bool_spellings);
	tcase_add_test(tc, go_durations);
	tcase_add_test(tc, defaults_of_upstream_only_flags);
	tcase_add_test(tc, every_bool_flag_spelling);
	tcase_add_test(tc, worker_and_batch_validation);
	tcase_add_test(tc, warm_pool_durations_and_rate);
	tcase_add_test(tc, pprof_values);
	tcase_add_test(tc, zap_flags);
	tcase_add_test(tc, extensions_accepted_by_validation);
	tcase_add_test(tc, startup_warnings);
	tcase_add_test(tc, core_flag_values);
	tcase_add_test(tc, actions_and_refusals);
	tcase_add_test(tc, go_style_spellings);
	tcase_add_test(tc, errors_name_the_flag);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
