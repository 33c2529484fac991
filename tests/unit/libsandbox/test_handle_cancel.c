/*
 * test_handle_cancel.c - the per-call options of sandbox/handle.h
 * (sbx_call_options): a set cancel flag ends a request that waits on a
 * silent sandbox, one in a retry backoff, and one not yet sent, each with
 * ASB_ECANCELED; max_retries of a call overrides the handle's.
 *
 * The "sandbox" is a loopback socket that listens and never accepts: the
 * kernel completes the TCP handshake and takes the request's bytes, and no
 * answer ever comes, as with a command that runs for ever. The client's
 * kubeconfig points at a closed port; no Kubernetes request is needed
 * (the handle is seeded with a pod IP, and a cancelled request does not
 * look the Sandbox up).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/handle.h"

static char kubeconfig[] = "/tmp/sbx-cancel-kubeconfig-XXXXXX";
static sbx_client *client;

/* A listening loopback socket (never accepted from) and its port. */
static int listen_silent(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	socklen_t len = sizeof(a);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* A loopback port nothing listens on (connections are refused). */
static int closed_port(void)
{
	int port, fd = listen_silent(&port);
	close(fd);
	return port;
}

static sbx_handle *handle_at(int port, int max_retries, long backoff_ms)
{
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	sbx_connection_options conn = SBX_CONNECTION_OPTIONS_INIT;
	conn.mode = SBX_CONNECT_DIRECT;
	conn.api_url = url;
	conn.max_retries = max_retries;
	conn.retry_backoff_ms = backoff_ms;
	sbx_handle *h = NULL;
	ck_assert_int_eq(sbx_handle_new(&h, client, "default", "claim", "sandbox", "10.1.2.3", &conn),
	                 0);
	return h;
}

static void setup(void)
{
	ck_assert_int_ge(sbx_global_init(), 1);
	int fd = mkstemp(kubeconfig);
	ck_assert_int_ge(fd, 0);
	char text[512];
	int n = snprintf(text, sizeof(text),
	                 "apiVersion: v1\nkind: Config\n"
	                 "clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:%d\n"
	                 "users:\n- name: u\n  user:\n    token: t\n"
	                 "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n"
	                 "current-context: x\n", closed_port());
	ck_assert_int_eq(write(fd, text, (size_t)n), n);
	close(fd);
	sbx_client_options o = SBX_CLIENT_OPTIONS_INIT;
	o.kubeconfig = kubeconfig;
	o.api_max_retries = 0;
	o.request_timeout_ms = 2000;
	ck_assert_msg(sbx_client_new(&client, &o) == 0, "%s", asb_error_last()->message);
}

static void teardown(void)
{
	sbx_client_free(client);
	client = NULL;
	unlink(kubeconfig);
	strcpy(kubeconfig, "/tmp/sbx-cancel-kubeconfig-XXXXXX");
	sbx_global_cleanup();
}

/* Sets the flag after a moment, from another thread (what a binding does
 * when its context is cancelled while the call blocks). */
static void *cancel_later(void *flag)
{
	struct timespec ts = { 0, 200 * 1000000L };
	nanosleep(&ts, NULL);
	atomic_store((atomic_int *)flag, 1);
	return NULL;
}

static int discard(void *ud, const char *buf, size_t len)
{
	(void)ud, (void)buf, (void)len;
	return 0;
}

START_TEST(call_options_defaults_and_checks)
{
	sbx_call_options o;
	ck_assert_int_eq(sbx_call_options_init(&o, SBX_CALL_OPTIONS_VERSION), 0);
	ck_assert_int_eq(o.timeout_ms, 60000);
	ck_assert_int_eq(o.max_retries, -1);
	ck_assert_uint_eq(o.flags, 0);
	ck_assert_ptr_null(o.cancel);
	ck_assert_int_eq(sbx_call_options_init(&o, 99), ASB_EINVAL);

	sbx_handle *h = handle_at(closed_port(), 0, 1);
	sbx_exec_result *r = NULL;
	o.timeout_ms = 0;
	ck_assert_int_eq(sbx_handle_run_opts(h, "true", &o, &r), ASB_EINVAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "timeout must be positive"));
	o.timeout_ms = 1000;
	o.version = 7;
	ck_assert_int_eq(sbx_handle_run_opts(h, "true", &o, &r), ASB_EINVAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "version 7"));
	ck_assert_ptr_null(r);
	sbx_handle_free(h);
}
END_TEST

START_TEST(cancelled_before_the_call_sends_nothing)
{
	int port, lfd = listen_silent(&port);
	sbx_handle *h = handle_at(port, 5, 500);
	atomic_int flag = 1;
	sbx_call_options o = SBX_CALL_OPTIONS_INIT;
	o.cancel = &flag;
	sbx_exec_result *r = NULL;
	ck_assert_int_eq(sbx_handle_run_opts(h, "echo hi", &o, &r), ASB_ECANCELED);
	ck_assert_str_eq(asb_error_last()->message, "the request POST execute was cancelled");
	bool exists = true;
	ck_assert_int_eq(sbx_handle_exists_opts(h, "a", &o, &exists), ASB_ECANCELED);
	ck_assert(!exists);
	/* no connection reached the listener */
	ck_assert_int_eq(fcntl(lfd, F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_lt(accept(lfd, NULL, NULL), 0);
	ck_assert(errno == EAGAIN || errno == EWOULDBLOCK);
	sbx_handle_free(h);
	close(lfd);
}
END_TEST

/* Each verb, waiting for an answer that never comes, ends on the flag:
 * the timeout (10 minutes) is not what stops it. */
START_TEST(cancel_ends_a_request_waiting_for_an_answer)
{
	int port, lfd = listen_silent(&port);
	sbx_handle *h = handle_at(port, 5, 500);
	for (int verb = 0; verb < 5; verb++) {
		atomic_int flag = 0;
		sbx_call_options o = SBX_CALL_OPTIONS_INIT;
		o.timeout_ms = 600000;
		o.cancel = &flag;
		pthread_t t;
		ck_assert_int_eq(pthread_create(&t, NULL, cancel_later, &flag), 0);
		int rc;
		const char *want;
		if (verb == 0) {
			sbx_exec_result *r = NULL;
			rc = sbx_handle_run_opts(h, "sleep 1000", &o, &r);
			ck_assert_ptr_null(r);
			want = "the request POST execute was cancelled";
		} else if (verb == 1) {
			int64_t n = -1;
			rc = sbx_handle_read_cb_opts(h, "big.bin", discard, NULL, &o, &n);
			ck_assert_int_eq(n, 0);
			want = "the request GET download/big.bin was cancelled";
		} else if (verb == 2) {
			static const char data[] = "some bytes";
			sbx_upload_source src = { .data = data, .fd = -1, .size = sizeof(data) - 1 };
			rc = sbx_handle_write_opts(h, "f.txt", &src, &o);
			want = "the request POST upload was cancelled";
		} else if (verb == 3) {
			sbx_file_list *l = NULL;
			rc = sbx_handle_list_opts(h, ".", &o, &l);
			ck_assert_ptr_null(l);
			want = "the request GET list/. was cancelled";
		} else {
			bool e;
			rc = sbx_handle_exists_opts(h, "f.txt", &o, &e);
			want = "the request GET exists/f.txt was cancelled";
		}
		pthread_join(t, NULL);
		ck_assert_msg(rc == ASB_ECANCELED, "verb %d: %d %s", verb, rc,
		              asb_error_last()->message);
		ck_assert_str_eq(asb_error_last()->message, want);
	}
	sbx_handle_free(h);
	close(lfd);
}
END_TEST

/* Connections refused: retried (connect failures are, for any method)
 * with a backoff of 2 x 60 s before the third try; the flag ends the wait. */
START_TEST(cancel_ends_a_retry_backoff)
{
	sbx_handle *h = handle_at(closed_port(), 5, 60000);
	atomic_int flag = 0;
	sbx_call_options o = SBX_CALL_OPTIONS_INIT;
	o.cancel = &flag;
	pthread_t t;
	ck_assert_int_eq(pthread_create(&t, NULL, cancel_later, &flag), 0);
	sbx_exec_result *r = NULL;
	int rc = sbx_handle_run_opts(h, "true", &o, &r);
	pthread_join(t, NULL);
	ck_assert_msg(rc == ASB_ECANCELED, "%d %s", rc, asb_error_last()->message);
	sbx_handle_free(h);
}
END_TEST

/* The call's max_retries overrides the handle's: 0 fails after one try,
 * without the handle's 60 s backoff. */
START_TEST(call_max_retries_overrides_the_handle)
{
	sbx_handle *h = handle_at(closed_port(), 5, 60000);
	sbx_call_options o = SBX_CALL_OPTIONS_INIT;
	o.max_retries = 0;
	bool e = true;
	int rc = sbx_handle_exists_opts(h, "x", &o, &e);
	ck_assert_msg(rc == SBX_EREQUEST, "%d %s", rc, asb_error_last()->message);
	ck_assert_int_eq(asb_error_last()->http_status, 0);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "Failed to communicate"));
	sbx_handle_free(h);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("handle_cancel");
	TCase *tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	/* a broken cancel would hang until this */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, call_options_defaults_and_checks);
	tcase_add_test(tc, cancelled_before_the_call_sends_nothing);
	tcase_add_test(tc, cancel_ends_a_request_waiting_for_an_answer);
	tcase_add_test(tc, cancel_ends_a_retry_backoff);
	tcase_add_test(tc, call_max_retries_overrides_the_handle);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
