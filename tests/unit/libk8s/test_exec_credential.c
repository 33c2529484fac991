/*
 * test_exec_credential.c - credential plugins (libk8s/src/exec_credential.c):
 * parsing an ExecCredential, and running real plugin scripts written to a
 * temporary directory (success, env and KUBERNETES_EXEC_INFO, non-zero
 * exit with stderr, a signal, bad JSON, a missing command, a timeout).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "exec_credential.h"

#define V1 "client.authentication.k8s.io/v1"
#define LABEL "kubeconfig \"k\": user \"u\""

static void assert_error(int rc, int code, const char *needle)
{
	const char *m = asb_error_last()->message;
	ck_assert_msg(rc == code, "rc %d, want %d: %s", rc, code, m);
	ck_assert_msg(strstr(m, needle), "\"%s\" not in: %s", needle, m);
}

static void assert_message_has(const char *needle)
{
	const char *m = asb_error_last()->message;
	ck_assert_msg(strstr(m, needle), "\"%s\" not in: %s", needle, m);
}

static int parse(k8s__exec_credential *c, const char *json)
{
	return k8s__exec_credential_parse(c, json, strlen(json), V1, LABEL);
}

/* --- ExecCredential parsing ----------------------------------------------- */

START_TEST(test_parse_token)
{
	k8s__exec_credential c;
	ck_assert_int_eq(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                       "\"status\":{\"token\":\"tok-123\"}}"), 0);
	ck_assert_str_eq(c.token, "tok-123");
	ck_assert_ptr_null(c.cert.data);
	ck_assert_int_eq(c.expiry_ms, 0);  /* no expiry: cached until a 401 */
	k8s__exec_credential_clear(&c);
	ck_assert_ptr_null(c.token);

	/* With an expiry (RFC 3339, fraction and offset allowed). */
	ck_assert_int_eq(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                       "\"status\":{\"token\":\"t\",\"expirationTimestamp\":"
	                       "\"2030-01-02T03:04:05Z\"}}"), 0);
	ck_assert_int_eq(c.expiry_ms, 1893553445000LL);
	k8s__exec_credential_clear(&c);
	ck_assert_int_eq(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                       "\"status\":{\"token\":\"t\",\"expirationTimestamp\":"
	                       "\"2030-01-02T04:04:05.5+01:00\"}}"), 0);
	ck_assert_int_eq(c.expiry_ms, 1893553445500LL);
	k8s__exec_credential_clear(&c);
}
END_TEST

START_TEST(test_parse_cert)
{
	k8s__exec_credential c;
	ck_assert_int_eq(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                       "\"status\":{\"clientCertificateData\":\"-----BEGIN CERTIFICATE-----\\nC\\n"
	                       "-----END CERTIFICATE-----\\n\",\"clientKeyData\":"
	                       "\"-----BEGIN PRIVATE KEY-----\\nK\\n-----END PRIVATE KEY-----\\n\"}}"), 0);
	ck_assert_ptr_null(c.token);
	ck_assert_str_eq(c.cert.data, "-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n");
	ck_assert_uint_eq(c.cert.len, strlen(c.cert.data));
	ck_assert_str_eq(c.key.data, "-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n");
	k8s__exec_credential_clear(&c);
}
END_TEST

START_TEST(test_parse_malformed)
{
	k8s__exec_credential c;
	assert_error(parse(&c, "not json"), ASB_EDECODE, "not a JSON object");
	ck_assert_ptr_null(c.token);
	assert_error(k8s__exec_credential_parse(&c, "", 0, V1, LABEL), ASB_EDECODE, "empty");
	assert_error(parse(&c, "[1]"), ASB_EDECODE, "not a JSON object");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"Pod\","
	                   "\"status\":{\"token\":\"t\"}}"), ASB_EDECODE,
	             "kind is not ExecCredential");
	/* The plugin must answer in the version it was asked for. */
	assert_error(parse(&c, "{\"apiVersion\":\"client.authentication.k8s.io/v1beta1\","
	                   "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}"),
	             ASB_EDECODE, "configured to use API version " V1
	             ", plugin returned version client.authentication.k8s.io/v1beta1");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}"),
	             ASB_EDECODE, "no status field");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                   "\"status\":{}}"), ASB_EDECODE, "neither a token nor");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                   "\"status\":{\"token\":\"\"}}"), ASB_EDECODE, "neither a token nor");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                   "\"status\":{\"clientCertificateData\":\"-----BEGIN C\"}}"),
	             ASB_EDECODE, "not both");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                   "\"status\":{\"clientCertificateData\":\"abc\",\"clientKeyData\":\"def\"}}"),
	             ASB_EDECODE, "must be PEM");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                   "\"status\":{\"token\":42}}"), ASB_EDECODE, "must be strings");
	assert_error(parse(&c, "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	                   "\"status\":{\"token\":\"sekrit\",\"expirationTimestamp\":\"tomorrow\"}}"),
	             ASB_EDECODE, "expirationTimestamp is not an RFC 3339 time");
	/* Messages never quote the output: it is a secret. */
	ck_assert_ptr_null(strstr(asb_error_last()->message, "sekrit"));
	ck_assert_ptr_null(c.token);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, LABEL));
}
END_TEST

/* --- running plugins ------------------------------------------------------- */

static char dir[64];

static void script(const char *name, const char *body)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0755), 0);
}

static void run_setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/k8s-test-exec-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	script("ok.sh",
	       "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$INFO_FILE\"\n"
	       "printf '{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\","
	       "\"status\":{\"token\":\"%s-%s-%s\",\"expirationTimestamp\":"
	       "\"2030-01-02T03:04:05Z\"}}' \"$REGION\" \"$1\" \"$#\"\n");
	script("fail.sh", "echo 'error: refresh token expired; run login' >&2\nexit 3\n");
	script("noisy.sh", "i=0; while [ $i -lt 200 ]; do printf 'line %03d of noise\\n' $i >&2;"
	       " i=$((i+1)); done\nexit 1\n");
	script("signal.sh", "kill -9 $$\n");
	script("badjson.sh", "echo '{\"apiVersion\": oops'\n");
	script("stdin.sh", "cat\n");  /* stdin is /dev/null: prints nothing */
	script("slow.sh", "sleep 30 &\necho $! > \"$0.pid\"\necho started >&2\nwait\n");
}

static void run_teardown(void)
{
	const char *names[] = { "ok.sh", "fail.sh", "noisy.sh", "signal.sh",
	                        "badjson.sh", "stdin.sh", "slow.sh", "slow.sh.pid",
	                        "info.json" };
	char path[256];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* An exec stanza for `command` (relative to `dir`), with extra JSON members. */
static k8s__exec_config *stanza(const char *command, const char *extra)
{
	char json[1024];
	snprintf(json, sizeof(json), "{\"apiVersion\":\"" V1 "\",\"command\":\"%s\","
	         "\"interactiveMode\":\"Never\"%s%s}", command, extra ? "," : "",
	         extra ? extra : "");
	cJSON *j = cJSON_Parse(json);
	ck_assert_ptr_nonnull(j);
	k8s__exec_config *e = NULL;
	int rc = k8s__exec_config_parse(&e, j, LABEL, dir, "{\"server\":\"https://h:1\"}");
	ck_assert_msg(rc == 0, "%s", asb_error_last()->message);
	cJSON_Delete(j);
	return e;
}

START_TEST(test_run_ok)
{
	char info_path[256], extra[512];
	snprintf(info_path, sizeof(info_path), "%s/info.json", dir);
	snprintf(extra, sizeof(extra), "\"args\":[\"prod\",\"two words\"],\"env\":"
	         "[{\"name\":\"REGION\",\"value\":\"eu\"},{\"name\":\"INFO_FILE\","
	         "\"value\":\"%s\"}],\"provideClusterInfo\":true", info_path);
	/* The configured env wins over the process's. */
	setenv("REGION", "wrong", 1);
	k8s__exec_config *e = stanza("./ok.sh", extra);
	k8s__exec_credential c;
	int rc = k8s__exec_run(e, 10000, &c);
	ck_assert_msg(rc == 0, "%s", asb_error_last()->message);
	/* args arrive as separate words; env is set. */
	ck_assert_str_eq(c.token, "eu-prod-2");
	ck_assert_int_eq(c.expiry_ms, 1893553445000LL);
	k8s__exec_credential_clear(&c);
	unsetenv("REGION");

	/* KUBERNETES_EXEC_INFO: the ExecCredential spec, never interactive,
	 * with the cluster since provideClusterInfo is set. */
	FILE *f = fopen(info_path, "r");
	ck_assert_ptr_nonnull(f);
	char buf[2048] = "";
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	cJSON *info = cJSON_Parse(buf);
	ck_assert_msg(info != NULL, "KUBERNETES_EXEC_INFO: %s", buf);
	ck_assert_str_eq(cJSON_GetObjectItem(info, "kind")->valuestring, "ExecCredential");
	ck_assert_str_eq(cJSON_GetObjectItem(info, "apiVersion")->valuestring, V1);
	cJSON *spec = cJSON_GetObjectItem(info, "spec");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(spec, "interactive")));
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "cluster"),
	                                     "server")->valuestring, "https://h:1");
	cJSON_Delete(info);
	k8s__exec_config_free(e);
}
END_TEST

START_TEST(test_run_exit_status_quotes_stderr)
{
	k8s__exec_config *e = stanza("./fail.sh", NULL);
	k8s__exec_credential c;
	assert_error(k8s__exec_run(e, 10000, &c), ASB_ECONFIG, "exited with status 3");
	assert_message_has("stderr: error: refresh token expired; run login");
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, LABEL));
	ck_assert_ptr_null(c.token);
	k8s__exec_config_free(e);

	/* A long stderr is quoted only in part, on one line. */
	e = stanza("./noisy.sh", NULL);
	assert_error(k8s__exec_run(e, 10000, &c), ASB_ECONFIG, "exited with status 1");
	const char *m = asb_error_last()->message;
	ck_assert_ptr_nonnull(strstr(m, "line 000 of noise line 001"));
	ck_assert_ptr_null(strstr(m, "line 199"));
	ck_assert_ptr_nonnull(strstr(m, "..."));
	ck_assert_ptr_null(strchr(m, '\n'));
	k8s__exec_config_free(e);

	e = stanza("./signal.sh", NULL);
	assert_error(k8s__exec_run(e, 10000, &c), ASB_ECONFIG, "killed by signal 9");
	k8s__exec_config_free(e);
}
END_TEST

START_TEST(test_run_bad_output)
{
	k8s__exec_config *e = stanza("./badjson.sh", NULL);
	k8s__exec_credential c;
	assert_error(k8s__exec_run(e, 10000, &c), ASB_EDECODE, "not a JSON object");
	k8s__exec_config_free(e);
	/* stdin is /dev/null, so a plugin that reads it ends at once. */
	e = stanza("./stdin.sh", NULL);
	assert_error(k8s__exec_run(e, 10000, &c), ASB_EDECODE, "empty");
	k8s__exec_config_free(e);
}
END_TEST

START_TEST(test_run_missing_command)
{
	k8s__exec_config *e = stanza("./no-such-plugin",
	                             "\"installHint\":\"Install it with: apt install x\"");
	k8s__exec_credential c;
	assert_error(k8s__exec_run(e, 10000, &c), ASB_ECONFIG, "not found");
	assert_message_has("Install it with: apt install x");
	assert_message_has("/no-such-plugin\"");
	k8s__exec_config_free(e);
	/* A bare name is looked up on PATH. */
	e = stanza("libk8s-no-such-plugin-on-path", NULL);
	assert_error(k8s__exec_run(e, 10000, &c), ASB_ECONFIG,
	             "executable \"libk8s-no-such-plugin-on-path\" not found");
	k8s__exec_config_free(e);
	/* Not executable. */
	char path[256];
	snprintf(path, sizeof(path), "%s/info.json", dir);
	FILE *f = fopen(path, "w");
	fclose(f);
	e = stanza("./info.json", NULL);
	assert_error(k8s__exec_run(e, 10000, &c), ASB_ECONFIG, "cannot run");
	k8s__exec_config_free(e);
}
END_TEST

START_TEST(test_run_timeout_kills)
{
	k8s__exec_config *e = stanza("./slow.sh", NULL);
	k8s__exec_credential c;
	assert_error(k8s__exec_run(e, 300, &c), ASB_ETIMEOUT, "did not finish within 300 ms");
	assert_message_has("stderr: started");
	k8s__exec_config_free(e);
	/* What the plugin started (sleep) is dead too: the whole process group
	 * was killed. (Dead: gone, or a zombie waiting for init to reap it.) */
	char path[256];
	snprintf(path, sizeof(path), "%s/slow.sh.pid", dir);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	int pid = 0;
	ck_assert_int_eq(fscanf(f, "%d", &pid), 1);
	fclose(f);
	int gone = 0;
	for (int i = 0; i < 500 && !gone; i++) {
		char stat_path[64], st[256] = "";
		snprintf(stat_path, sizeof(stat_path), "/proc/%d/stat", pid);
		FILE *sf = fopen(stat_path, "r");
		if (sf && fgets(st, sizeof(st), sf)) {
			const char *paren = strrchr(st, ')');
			gone = paren && (paren[2] == 'Z' || paren[2] == 'X');
		} else {
			gone = 1;
		}
		if (sf)
			fclose(sf);
		if (!gone)
			usleep(10 * 1000);
	}
	ck_assert_msg(gone, "the plugin's child %d still runs", pid);
}
END_TEST

START_TEST(test_run_interactive_always)
{
	cJSON *j = cJSON_Parse("{\"apiVersion\":\"" V1 "\",\"command\":\"./ok.sh\","
	                       "\"interactiveMode\":\"Always\"}");
	k8s__exec_config *e = NULL;
	ck_assert_int_eq(k8s__exec_config_parse(&e, j, LABEL, dir, NULL), 0);
	cJSON_Delete(j);
	k8s__exec_credential c;
	assert_error(k8s__exec_run(e, 10000, &c), ASB_ECONFIG, "no terminal");
	k8s__exec_config_free(e);
}
END_TEST

int main(void)
{
	/* A plugin killed by a signal must not take the test with it. */
	signal(SIGPIPE, SIG_IGN);
	Suite *s = suite_create("exec_credential");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, test_parse_token);
	tcase_add_test(tc, test_parse_cert);
	tcase_add_test(tc, test_parse_malformed);
	suite_add_tcase(s, tc);
	tc = tcase_create("run");
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, run_setup, run_teardown);
	tcase_add_test(tc, test_run_ok);
	tcase_add_test(tc, test_run_exit_status_quotes_stderr);
	tcase_add_test(tc, test_run_bad_output);
	tcase_add_test(tc, test_run_missing_command);
	tcase_add_test(tc, test_run_timeout_kills);
	tcase_add_test(tc, test_run_interactive_always);
	suite_add_tcase(s, tc);

	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
