/*
 * test_webhook_flags.c - unit tests of cmd/controller/webhook_flags.c
 * through the controller's flag parser: the upstream defaults and
 * spellings of the webhook flags, the docs/upstream.md#startup-validation checks (blank cert/key names),
 * and our local-development --webhook-url / --webhook-bind-address.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "flags.h"
#include "../argv.h"

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

/* Parses then validates; returns the validation result, message in err. */
static int check(char *err, size_t cap, ...)
{
	static controller_flags f;
	va_list ap;
	const char *args[16] = { 0 };
	int n = 0;
	va_start(ap, cap);
	for (const char *a; (a = va_arg(ap, const char *)) && n < 15;)
		args[n++] = a;
	va_end(ap);
	ck_assert_int_eq(parse(&f, args[0], args[1], args[2], args[3], args[4], args[5], NULL), 0);
	err[0] = '\0';
	return controller_flags_validate(&f, err, cap);
}

START_TEST(defaults_are_upstream)
{
	controller_flags f;
	controller_flags_defaults(&f);
	ck_assert(f.webhook.enable);
	ck_assert(f.webhook.manage_certs);
	ck_assert_int_eq(f.webhook.port, 9443);
	ck_assert_str_eq(f.webhook.cert_dir, "/tmp/k8s-webhook-server/serving-certs");
	ck_assert_str_eq(f.webhook.cert_name, "tls.crt");
	ck_assert_str_eq(f.webhook.key_name, "tls.key");
	ck_assert_str_eq(f.webhook.service_name, "agent-sandbox-webhook-service");
	ck_assert_str_eq(f.webhook.namespace_, "agent-sandbox-system");
	ck_assert_ptr_null(f.webhook.url);
	ck_assert_ptr_null(f.webhook.bind_address);
	char err[256];
	ck_assert_int_eq(controller_flags_validate(&f, err, sizeof(err)), 0);
}
END_TEST

START_TEST(spellings)
{
	controller_flags f;
	ck_assert_int_eq(parse(&f, "--enable-webhook=false", "--manage-webhook-certs=0", "--webhook-port", "9444",
	                       "--webhook-cert-dir=/d", "--webhook-cert-name", "c.pem", "--webhook-key-name=k.pem",
	                       "--webhook-service-name", "svc", "--webhook-namespace=ns",
	                       "--webhook-url", "https://127.0.0.1:9444/convert", "--webhook-bind-address=127.0.0.1",
	                       NULL), 0);
	ck_assert(!f.webhook.enable);
	ck_assert(!f.webhook.manage_certs);
	ck_assert_int_eq(f.webhook.port, 9444);
	ck_assert_str_eq(f.webhook.cert_dir, "/d");
	ck_assert_str_eq(f.webhook.cert_name, "c.pem");
	ck_assert(f.webhook.cert_name_set && f.webhook.key_name_set);
	ck_assert_str_eq(f.webhook.key_name, "k.pem");
	ck_assert_str_eq(f.webhook.service_name, "svc");
	ck_assert_str_eq(f.webhook.namespace_, "ns");
	ck_assert_str_eq(f.webhook.url, "https://127.0.0.1:9444/convert");
	ck_assert_str_eq(f.webhook.bind_address, "127.0.0.1");
	ck_assert_int_eq(parse(&f, "--enable-webhook", NULL), 0);
	ck_assert(f.webhook.enable);
	ck_assert_int_eq(parse(&f, "--enable-webhook=maybe", NULL), -1);
	ck_assert_int_eq(parse(&f, "--webhook-port=x", NULL), -1);
}
END_TEST

START_TEST(validation)
{
	char err[256];
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-cert-name", " ", NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "--webhook-cert-name"));
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-key-name=", NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "--webhook-key-name"));
	ck_assert_int_eq(parse(&(controller_flags){ 0 }, "--webhook-port=0", NULL), -2);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-port=65536", NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "--webhook-port"));
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-port=1", NULL), 0);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-namespace=", NULL), -1);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-service-name=", NULL), -1);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-bind-address=127.0.0.1:80", NULL), -1);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-bind-address=localhost", NULL), 0);
	/* the URL: https, a host, nothing the API server refuses */
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=https://127.0.0.1:9443/convert", NULL), 0);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=https://[::1]:9443/convert", NULL), 0);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=https://webhook.example/convert", NULL), 0);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=http://127.0.0.1/convert", NULL), -1);
	ck_assert_ptr_nonnull(strstr(err, "--webhook-url"));
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=https://127.0.0.1/convert?x=1", NULL), -1);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=https://u:p@127.0.0.1/convert", NULL), -1);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=https://127.0.0.1/c#f", NULL), -1);
	ck_assert_int_eq(check(err, sizeof(err), "--webhook-url=not a url", NULL), -1);
}
END_TEST

START_TEST(url_host)
{
	const char *why;
	char *h = webhook_url_host("https://[::1]:9443/convert", &why);
	ck_assert_str_eq(h, "::1");
	free(h);
	h = webhook_url_host("https://Webhook.example:1/convert", &why);
	ck_assert_ptr_nonnull(h);
	free(h);
	ck_assert_ptr_null(webhook_url_host("ftp://x/", &why));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("webhook_flags");
	TCase *tc = tcase_create("webhook_flags");
	tcase_add_test(tc, defaults_are_upstream);
	tcase_add_test(tc, spellings);
	tcase_add_test(tc, validation);
	tcase_add_test(tc, url_host);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
