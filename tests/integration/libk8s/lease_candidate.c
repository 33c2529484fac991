/*
 * lease_candidate.c - one leader-election candidate as a process, for
 * test_leaderelection.c (which starts several and kills them).
 *
 *   lease_candidate NAMESPACE LEASE IDENTITY [LEASE_MS RENEW_MS RETRY_MS]
 *
 * Reads the cluster from $KUBECONFIG, runs a k8s_leader on the Lease and
 * prints one line per transition on stdout, each with the time on the
 * system-wide monotonic clock (CLOCK_MONOTONIC, milliseconds), so that the
 * parent can measure hand-over times against its own clock:
 *
 *   START <id> t=<ms>
 *   LEADER <id> t=<ms>                   on_started_leading
 *   FOLLOWER <id> leader=<other> t=<ms>  on_new_leader, another holder
 *   STOPPED <id> t=<ms>                  on_stopped_leading
 *   EXIT <id> t=<ms>                     after SIGTERM/SIGINT: stopped (and released)
 *
 * Logs (libk8s logger, info level) go to stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/client.h"
#include "k8s/config.h"
#include "k8s/leaderelection.h"
#include "k8s/object.h"

static const char *identity;

static void say(const char *what, const char *extra)
{
	/* One write per line: stdout is a pipe, and the parent reads lines. */
	printf("%s %s%s%s t=%lld\n", what, identity, extra ? " " : "", extra ? extra : "",
	       (long long)k8s_monotonic_ms());
	fflush(stdout);
}

static void on_started(void *ud) { (void)ud; say("LEADER", NULL); }
static void on_stopped(void *ud) { (void)ud; say("STOPPED", NULL); }

static void on_new_leader(const char *id, void *ud)
{
	(void)ud;
	if (strcmp(id, identity) == 0)
		return;  /* our own term is announced by LEADER */
	char extra[300];
	snprintf(extra, sizeof(extra), "leader=%s", id[0] ? id : "<none>");
	say("FOLLOWER", extra);
}

static long arg_ms(int argc, char **argv, int i, long def)
{
	return argc > i ? strtol(argv[i], NULL, 10) : def;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s NAMESPACE LEASE IDENTITY [LEASE_MS RENEW_MS RETRY_MS]\n",
		        argv[0]);
		return 2;
	}
	identity = argv[3];

	/* Signals are taken by sigwait() below, never by a library thread. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	asb_logger *log = NULL;
	k8s_config *cfg = NULL;
	k8s_client *client = NULL;
	k8s_leader *le = NULL;
	k8s_leader_options o = K8S_LEADER_OPTIONS_INIT;
	o.lease_namespace = argv[1];
	o.lease_name = argv[2];
	o.identity = identity;
	o.lease_duration_ms = arg_ms(argc, argv, 4, o.lease_duration_ms);
	o.renew_deadline_ms = arg_ms(argc, argv, 5, o.renew_deadline_ms);
	o.retry_period_ms = arg_ms(argc, argv, 6, o.retry_period_ms);
	o.on_started_leading = on_started;
	o.on_stopped_leading = on_stopped;
	o.on_new_leader = on_new_leader;

	/* One client call must end well before the renew deadline (see leaderelection.h). */
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.timeout_ms = o.renew_deadline_ms / 4;
	co.max_retries = 1;
	if (k8s_global_init() < 0 || asb_logger_new(&log, stderr, ASB_LOG_TEXT, ASB_LOG_INFO) != 0) {
		fprintf(stderr, "lease_candidate: cannot initialise\n");
		return 1;
	}
	co.logger = log;
	o.logger = log;
	if (k8s_config_load(&cfg, NULL, NULL) != 0 || k8s_client_new(&client, cfg, &co) != 0) {
		fprintf(stderr, "lease_candidate: %s\n", asb_error_last()->message);
		return 1;
	}
	if (k8s_leader_new(&le, client, &o) != 0 || k8s_leader_start(le) != 0) {
		fprintf(stderr, "lease_candidate: %s\n", asb_error_last()->message);
		return 1;
	}
	say("START", NULL);

	int sig = 0;
	sigwait(&sigs, &sig);
	k8s_leader_stop(le);
	say("EXIT", NULL);

	k8s_leader_free(le);
	k8s_client_free(client);
	k8s_config_free(cfg);
	asb_logger_free(log);
	k8s_global_cleanup();
	return 0;
}
