/*
 * test_leaderelection.c - leader election (libk8s/src/leaderelection.c)
 * between separate processes on a real kube-apiserver ($KUBECONFIG).
 *
 * Each candidate is the program lease_candidate (path in LEASE_CANDIDATE,
 * set by meson), started with fork+exec; it prints LEADER / FOLLOWER /
 * STOPPED / EXIT lines stamped with CLOCK_MONOTONIC, the same clock this
 * program reads, so hand-over times are measured between processes:
 * - of two candidates exactly one leads, the Lease names it and it renews;
 * - after `kill -9` of the leader the follower takes over once the lease
 *   has expired: not before (lease duration - retry period) and in less
 *   than lease duration + retry period + 3 s;
 * - after SIGTERM the leader stops leading, releases the Lease, and the
 *   follower leads in less than 4 s;
 * - a leader frozen (SIGSTOP) past its renew deadline, once resumed, stops
 *   leading at its next attempt and leaves the Lease to its successor.
 *
 * Timings: lease 6 s, renew deadline 4 s, retry 500 ms, or the values of
 * $LEASE_TEST_DURATION_MS, $LEASE_TEST_RENEW_MS, $LEASE_TEST_RETRY_MS.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/config.h"
#include "k8s/object.h"

#ifndef LEASE_CANDIDATE
#error "LEASE_CANDIDATE (path of the lease_candidate program) must be defined"
#endif

static k8s_client *client;
static char ns[64];
static long lease_ms = 6000, renew_ms = 4000, retry_ms = 500;

#define MAX_CANDS 4
#define MAX_LINES 256

typedef struct {
	char id[32];
	pid_t pid;          /* 0 once reaped */
	int fd;             /* stdout pipe; -1 at EOF */
	char part[1024];    /* an incomplete line */
	size_t part_len;
	char *lines[MAX_LINES];
	size_t nlines;
	int status;         /* waitpid status once reaped */
} cand;

static cand cands[MAX_CANDS];
static int ncands;

static cand *spawn(const char *lease, const char *id)
{
	ck_assert_int_lt(ncands, MAX_CANDS);
	cand *c = &cands[ncands++];
	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "%s", id);
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	char a[3][24];
	snprintf(a[0], sizeof(a[0]), "%ld", lease_ms);
	snprintf(a[1], sizeof(a[1]), "%ld", renew_ms);
	snprintf(a[2], sizeof(a[2]), "%ld", retry_ms);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(p[1], STDOUT_FILENO);
		execl(LEASE_CANDIDATE, "lease_candidate", ns, lease, id, a[0], a[1], a[2], (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	c->pid = pid;
	c->fd = p[0];
	return c;
}

static void take_bytes(cand *c, const char *data, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (data[i] != '\n') {
			if (c->part_len + 1 < sizeof(c->part))
				c->part[c->part_len++] = data[i];
			continue;
		}
		c->part[c->part_len] = '\0';
		if (c->nlines < MAX_LINES)
			c->lines[c->nlines++] = strdup(c->part);
		printf("  [%s] %s\n", c->id, c->part);
		c->part_len = 0;
	}
}

/* Reads whatever the candidates printed, waiting at most `ms`. */
static void pump(long ms)
{
	struct pollfd pf[MAX_CANDS];
	cand *who[MAX_CANDS];
	int n = 0;
	for (int i = 0; i < ncands; i++)
		if (cands[i].fd >= 0) {
			pf[n].fd = cands[i].fd;
			pf[n].events = POLLIN;
			who[n++] = &cands[i];
		}
	if (n == 0) {
		usleep((useconds_t)ms * 1000);
		return;
	}
	if (poll(pf, (nfds_t)n, (int)ms) <= 0)
		return;
	for (int i = 0; i < n; i++) {
		if (!(pf[i].revents & (POLLIN | POLLHUP)))
			continue;
		char buf[4096];
		ssize_t r = read(pf[i].fd, buf, sizeof(buf));
		if (r > 0) {
			take_bytes(who[i], buf, (size_t)r);
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
			close(who[i]->fd);
			who[i]->fd = -1;
		}
	}
}

/*
 * The time stamp (t=) of the first line of `c` that starts with `what`
 * (and contains `also`, when not NULL), or -1.
 */
static int64_t line_time(const cand *c, const char *what, const char *also)
{
	size_t wl = strlen(what);
	for (size_t i = 0; i < c->nlines; i++) {
		const char *l = c->lines[i];
		if (strncmp(l, what, wl) != 0 || l[wl] != ' ')
			continue;
		if (also && !strstr(l, also))
			continue;
		const char *t = strstr(l, " t=");
		return t ? strtoll(t + 3, NULL, 10) : -1;
	}
	return -1;
}

static int64_t wait_line(const cand *c, const char *what, const char *also, long timeout_ms)
{
	int64_t deadline = k8s_monotonic_ms() + timeout_ms;
	for (;;) {
		int64_t t = line_time(c, what, also);
		if (t >= 0 || k8s_monotonic_ms() >= deadline)
			return t;
		pump(100);
	}
}

static int count_lines(const char *what)
{
	int n = 0;
	for (int i = 0; i < ncands; i++)
		if (line_time(&cands[i], what, NULL) >= 0)
			n++;
	return n;
}

static void reap(cand *c, long timeout_ms)
{
	int64_t deadline = k8s_monotonic_ms() + timeout_ms;
	while (c->pid > 0) {
		pid_t r = waitpid(c->pid, &c->status, WNOHANG);
		if (r == c->pid) {
			c->pid = 0;
			break;
		}
		if (k8s_monotonic_ms() >= deadline)
			break;
		pump(50);
	}
	pump(0);
}

static void kill_all(void)
{
	for (int i = 0; i < ncands; i++) {
		cand *c = &cands[i];
		if (c->pid > 0) {
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &c->status, 0);
		}
		if (c->fd >= 0)
			close(c->fd);
		for (size_t j = 0; j < c->nlines; j++)
			free(c->lines[j]);
		memset(c, 0, sizeof(*c));
	}
	ncands = 0;
}

static void teardown(void)
{
	kill_all();
}

static cJSON *get_lease(const char *name)
{
	cJSON *l = NULL;
	int rc = k8s_client_get(client, &k8s_resource_leases, ns, name, &l);
	ck_assert_msg(rc == 0, "get lease %s: %s", name, asb_error_last()->message);
	return l;
}

static void assert_microtime(const char *s)
{
	regex_t re;
	ck_assert_int_eq(regcomp(&re, "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"
	                              "\\.[0-9]{6}Z$", REG_EXTENDED | REG_NOSUB), 0);
	ck_assert_msg(s && regexec(&re, s, 0, NULL, 0) == 0, "not a MicroTime: %s", s ? s : "(null)");
	regfree(&re);
}

static long spec_long(const cJSON *l, const char *field)
{
	const cJSON *v = k8s_obj_at(l, field);
	ck_assert_msg(cJSON_IsNumber(v), "%s missing", field);
	return (long)v->valuedouble;
}

/* Time for a candidate process to start and make its first attempt. */
#define START_TIMEOUT_MS 30000

/* --- tests ---------------------------------------------------------------- */

START_TEST(exactly_one_of_two_candidates_leads)
{
	cand *a = spawn("one", "cand-a");
	cand *b = spawn("one", "cand-b");
	int64_t deadline = k8s_monotonic_ms() + START_TIMEOUT_MS;
	while (count_lines("LEADER") == 0 && k8s_monotonic_ms() < deadline)
		pump(100);
	ck_assert_int_eq(count_lines("LEADER"), 1);
	cand *leader = line_time(a, "LEADER", NULL) >= 0 ? a : b;
	cand *follower = leader == a ? b : a;
	char want[64];
	snprintf(want, sizeof(want), "leader=%s", leader->id);
	ck_assert_int_ge(wait_line(follower, "FOLLOWER", want, START_TIMEOUT_MS), 0);

	/* Several retry periods later, still exactly one leader. */
	cJSON *l1 = get_lease("one");
	int64_t until = k8s_monotonic_ms() + 6 * retry_ms + 1000;
	while (k8s_monotonic_ms() < until)
		pump(100);
	ck_assert_int_eq(count_lines("LEADER"), 1);
	ck_assert_int_eq(count_lines("STOPPED"), 0);

	cJSON *l2 = get_lease("one");
	ck_assert_str_eq(k8s_obj_str(l2, "spec.holderIdentity"), leader->id);
	ck_assert_int_eq(spec_long(l2, "spec.leaseDurationSeconds"), (lease_ms + 999) / 1000);
	ck_assert_int_eq(spec_long(l2, "spec.leaseTransitions"), 0);
	assert_microtime(k8s_obj_str(l2, "spec.acquireTime"));
	assert_microtime(k8s_obj_str(l2, "spec.renewTime"));
	/* it renews: a later renewTime, the same term */
	ck_assert_str_eq(k8s_obj_str(l2, "spec.acquireTime"), k8s_obj_str(l1, "spec.acquireTime"));
	ck_assert_str_ne(k8s_obj_str(l2, "spec.renewTime"), k8s_obj_str(l1, "spec.renewTime"));
	cJSON_Delete(l1);
	cJSON_Delete(l2);
}
END_TEST

START_TEST(kill_9_of_the_leader_hands_over_within_a_lease_duration)
{
	cand *a = spawn("two", "cand-a");
	ck_assert_int_ge(wait_line(a, "LEADER", NULL, START_TIMEOUT_MS), 0);
	cand *b = spawn("two", "cand-b");
	ck_assert_int_ge(wait_line(b, "FOLLOWER", "leader=cand-a", START_TIMEOUT_MS), 0);
	pump(1000);

	int64_t t_kill = k8s_monotonic_ms();
	kill(a->pid, SIGKILL);
	int64_t t_lead = wait_line(b, "LEADER", NULL, lease_ms + retry_ms + 20000);
	ck_assert_msg(t_lead >= 0, "no hand-over after kill -9");
	int64_t handover = t_lead - t_kill;
	printf("hand-over after kill -9 of the leader: %lld ms (lease %ld ms, renew deadline %ld ms, "
	       "retry %ld ms)\n", (long long)handover, lease_ms, renew_ms, retry_ms);
	/* the follower waited for the lease to expire on its own clock... */
	ck_assert_int_ge(handover, lease_ms - retry_ms - 500);
	/* ...and no longer than about one lease duration */
	ck_assert_int_lt(handover, lease_ms + retry_ms + 3000);
	reap(a, 5000);
	ck_assert(WIFSIGNALED(a->status) && WTERMSIG(a->status) == SIGKILL);

	cJSON *l = get_lease("two");
	ck_assert_str_eq(k8s_obj_str(l, "spec.holderIdentity"), "cand-b");
	ck_assert_int_eq(spec_long(l, "spec.leaseTransitions"), 1);
	cJSON_Delete(l);
}
END_TEST

START_TEST(clean_stop_releases_the_lease_at_once)
{
	cand *a = spawn("three", "cand-a");
	ck_assert_int_ge(wait_line(a, "LEADER", NULL, START_TIMEOUT_MS), 0);
	cand *b = spawn("three", "cand-b");
	ck_assert_int_ge(wait_line(b, "FOLLOWER", "leader=cand-a", START_TIMEOUT_MS), 0);
	pump(1000);

	int64_t t_term = k8s_monotonic_ms();
	kill(a->pid, SIGTERM);
	int64_t t_lead = wait_line(b, "LEADER", NULL, lease_ms + 20000);
	ck_assert_msg(t_lead >= 0, "no hand-over after SIGTERM");
	int64_t handover = t_lead - t_term;
	printf("hand-over after SIGTERM (release) of the leader: %lld ms (lease %ld ms, retry %ld ms)\n",
	       (long long)handover, lease_ms, retry_ms);
	ck_assert_int_lt(handover, 4000);

	reap(a, 10000);
	ck_assert_int_eq(a->pid, 0);
	ck_assert(WIFEXITED(a->status) && WEXITSTATUS(a->status) == 0);
	int64_t t_stopped = line_time(a, "STOPPED", NULL), t_exit = line_time(a, "EXIT", NULL);
	ck_assert_int_ge(t_stopped, 0);
	ck_assert_int_ge(t_exit, t_stopped);
	/* the old leader's work had ended before the new one started */
	ck_assert_int_le(t_stopped, t_lead);

	cJSON *l = get_lease("three");
	ck_assert_str_eq(k8s_obj_str(l, "spec.holderIdentity"), "cand-b");
	ck_assert_int_eq(spec_long(l, "spec.leaseTransitions"), 1);
	cJSON_Delete(l);
}
END_TEST

START_TEST(a_frozen_leader_steps_down_when_it_wakes)
{
	cand *a = spawn("four", "cand-a");
	ck_assert_int_ge(wait_line(a, "LEADER", NULL, START_TIMEOUT_MS), 0);
	cand *b = spawn("four", "cand-b");
	ck_assert_int_ge(wait_line(b, "FOLLOWER", "leader=cand-a", START_TIMEOUT_MS), 0);

	/* A stops renewing (all its threads frozen); B takes over after the lease. */
	kill(a->pid, SIGSTOP);
	ck_assert_int_ge(wait_line(b, "LEADER", NULL, lease_ms + retry_ms + 20000), 0);
	int64_t t_cont = k8s_monotonic_ms();
	kill(a->pid, SIGCONT);
	/* Past its renew deadline, A gives up at its next attempt, without writing. */
	int64_t t_stop = wait_line(a, "STOPPED", NULL, 10000);
	ck_assert_msg(t_stop >= 0, "the frozen leader did not step down");
	printf("frozen leader stepped down %lld ms after it was resumed\n",
	       (long long)(t_stop - t_cont));
	ck_assert_int_lt(t_stop - t_cont, retry_ms + 3000);
	ck_assert_int_ge(wait_line(a, "FOLLOWER", "leader=cand-b", 10000), 0);

	/* B still leads; A did not take the Lease back. */
	pump(4 * retry_ms);
	cJSON *l = get_lease("four");
	ck_assert_str_eq(k8s_obj_str(l, "spec.holderIdentity"), "cand-b");
	ck_assert_int_eq(spec_long(l, "spec.leaseTransitions"), 1);
	ck_assert_int_eq(line_time(b, "STOPPED", NULL), -1);
	cJSON_Delete(l);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("leaderelection");
	TCase *tc = tcase_create("processes");
	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, exactly_one_of_two_candidates_leads);
	tcase_add_test(tc, kill_9_of_the_leader_hands_over_within_a_lease_duration);
	tcase_add_test(tc, clean_stop_releases_the_lease_at_once);
	tcase_add_test(tc, a_frozen_leader_steps_down_when_it_wakes);
	suite_add_tcase(s, tc);
	return s;
}

static long env_ms(const char *name, long def)
{
	const char *v = getenv(name);
	return v && v[0] ? strtol(v, NULL, 10) : def;
}

int main(void)
{
	const char *kc = getenv("KUBECONFIG");
	if (!kc || !kc[0]) {
		fprintf(stderr, "test_leaderelection: KUBECONFIG is not set; point it at the admin "
		        "kubeconfig of a real cluster (tools/local-cluster up prints one)\n");
		return EXIT_FAILURE;
	}
	lease_ms = env_ms("LEASE_TEST_DURATION_MS", lease_ms);
	renew_ms = env_ms("LEASE_TEST_RENEW_MS", renew_ms);
	retry_ms = env_ms("LEASE_TEST_RETRY_MS", retry_ms);
	setvbuf(stdout, NULL, _IOLBF, 0);

	k8s_config *cfg = NULL;
	cJSON *want = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
	                          "\"metadata\":{\"generateName\":\"leader-it-\"}}");
	cJSON *got = NULL;
	if (k8s_global_init() < 0 || k8s_config_load(&cfg, NULL, NULL) != 0 ||
	    k8s_client_new(&client, cfg, NULL) != 0 ||
	    k8s_client_create(client, &k8s_resource_namespaces, NULL, want, NULL, &got) != 0) {
		fprintf(stderr, "test_leaderelection: %s\n", asb_error_last()->message);
		return EXIT_FAILURE;
	}
	snprintf(ns, sizeof(ns), "%s", k8s_obj_name(got));
	cJSON_Delete(got);
	cJSON_Delete(want);
	printf("test_leaderelection: server %s, namespace %s, candidate %s\n",
	       k8s_config_server(cfg), ns, LEASE_CANDIDATE);

	SRunner *sr = srunner_create(suite());
	/* The children are ours: no Check fork in between. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	kill_all();

	k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
	d.propagation_policy = "Background";
	if (k8s_client_delete(client, &k8s_resource_namespaces, NULL, ns, &d, NULL) != 0) {
		fprintf(stderr, "test_leaderelection: deleting namespace %s: %s\n", ns,
		        asb_error_last()->message);
		failed++;
	}
	k8s_client_free(client);
	k8s_config_free(cfg);
	k8s_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
