/*
 * Unit tests of libwarmpool/src/claim_validate.c: docs/api.md#additionalpodmetadata - the
 * allowed label domains file, restricted label values and annotation
 * domains, the wrapped InvalidMetadata message, and the no-override merge.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "fixture.h"
#include "claim.h"
#include "k8s/common.h"

#define QNAME_ERR "must consist of alphanumeric characters, '-', '_' or '.', and must start " \
	"and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', " \
	"regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

static void assert_errs(char *got, const char *want)
{
	if (!want) {
		ck_assert_msg(got == NULL, "unexpected errors: %s", got);
		return;
	}
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(domains_file)
{
	wp_domains d;
	ck_assert_int_eq(wp_domains_parse(" Team.Example.com ,\n\nother.io\n", &d), 0);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_str_eq(d.items[0], "team.example.com");
	ck_assert_str_eq(d.items[1], "other.io");
	wp_domains_free(&d);
	/* blank: the default */
	ck_assert_int_eq(wp_domains_parse(" \n , ", &d), 0);
	ck_assert_uint_eq(d.n, 1);
	ck_assert_str_eq(d.items[0], "sandbox.users.io");
	wp_domains_free(&d);
	/* missing file: the default */
	ck_assert_int_eq(wp_domains_load("/nonexistent/allowed-label-domains", &d), 0);
	ck_assert_str_eq(d.items[0], "sandbox.users.io");
	wp_domains_free(&d);
	/* a file */
	char path[] = "/tmp/wp-domains-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "acme.io,corp.net", 16), 16);
	close(fd);
	ck_assert_int_eq(wp_domains_load(path, &d), 0);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_str_eq(d.items[1], "corp.net");
	wp_domains_free(&d);
	unlink(path);
	/* a directory cannot be read: error */
	ck_assert_int_eq(wp_domains_load("/tmp", &d), ASB_ERROR);
}
END_TEST

/* Validates a claim with the given additionalPodMetadata; returns the message or NULL. */
static char *validate(const char *apm, const char *domains)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "spec"), "additionalPodMetadata", fx_json(apm));
	wp_domains d;
	ck_assert_int_eq(wp_domains_parse(domains, &d), 0);
	wp_claim_err err = { 0 };
	bool ok = wp_claim_validate_metadata(claim, &d, &err);
	wp_domains_free(&d);
	cJSON_Delete(claim);
	ck_assert(ok == (err.kind == WP_CLAIM_OK));
	if (!ok) {
		ck_assert_int_eq(err.kind, WP_CLAIM_E_INVALID_METADATA);
		ck_assert(wp_claim_err_suppressed(&err));
	}
	return err.msg;
}

START_TEST(metadata_rules)
{
	assert_errs(validate("{\"labels\":{\"sandbox.users.io/team\":\"blue\"},"
	                     "\"annotations\":{\"note\":\"x\",\"example.com/a\":\"y\","
	                     "\"cluster-autoscaler.kubernetes.io/safe-to-evict\":\"false\"}}", NULL), NULL);
	/* subdomain of an allowed domain (an upper-case prefix is no qualified name) */
	assert_errs(validate("{\"labels\":{\"a.sandbox.users.io/team\":\"blue\"}}", NULL), NULL);
	assert_errs(validate("{\"labels\":{\"team\":\"blue\"}}", NULL),
	            "invalid additionalPodMetadata: failed to validate label \"team\": label \"team\" "
	            "must have a domain prefix (e.g. 'sandbox.users.io/my-label') to prevent opting "
	            "into unintended policy domains");
	assert_errs(validate("{\"labels\":{\"APP\":\"Sandbox-Router\"}}", NULL),
	            "invalid additionalPodMetadata: failed to validate label \"APP\": restricted "
	            "system label value: \"APP\"=\"Sandbox-Router\" is not allowed in AdditionalPodMetadata");
	assert_errs(validate("{\"labels\":{\"evil.io/x\":\"1\"}}", NULL),
	            "invalid additionalPodMetadata: failed to validate label \"evil.io/x\": label "
	            "domain \"evil.io\" is not in the allowlist");
	/* "xsandbox.users.io" is not a subdomain */
	assert_errs(validate("{\"labels\":{\"xsandbox.users.io/x\":\"1\"}}", NULL),
	            "invalid additionalPodMetadata: failed to validate label \"xsandbox.users.io/x\": "
	            "label domain \"xsandbox.users.io\" is not in the allowlist");
	/* custom allowlist replaces the default */
	assert_errs(validate("{\"labels\":{\"acme.io/x\":\"1\"}}", "acme.io"), NULL);
	char *m = validate("{\"labels\":{\"sandbox.users.io/x\":\"1\"}}", "acme.io");
	ck_assert_ptr_nonnull(m);
	free(m);
	m = validate("{\"labels\":{\"sandbox.users.io/x\":\"a b\"}}", NULL);
	ck_assert_ptr_nonnull(strstr(m, "failed to validate label \"sandbox.users.io/x\": invalid "
	                                "label value: \"a b\" does not match allowed pattern: a valid label"));
	free(m);
	m = validate("{\"labels\":{\"sandbox.users.io/-x\":\"1\"}}", NULL);
	ck_assert_str_eq(m, "invalid additionalPodMetadata: failed to validate label "
	                    "\"sandbox.users.io/-x\": invalid label key: \"sandbox.users.io/-x\": "
	                    "name part " QNAME_ERR);
	free(m);
	/* annotations: restricted system domains */
	assert_errs(validate("{\"annotations\":{\"foo.kubernetes.io/x\":\"1\"}}", NULL),
	            "invalid additionalPodMetadata: failed to validate annotation "
	            "\"foo.kubernetes.io/x\": restricted system domain: \"foo.kubernetes.io/x\" is "
	            "not allowed in AdditionalPodMetadata");
	m = validate("{\"annotations\":{\"agents.x-k8s.io/pod-name\":\"1\"}}", NULL);
	ck_assert_ptr_nonnull(strstr(m, "restricted system domain"));
	free(m);
	m = validate("{\"annotations\":{\"k8s.io/x\":\"1\"}}", NULL);
	ck_assert_ptr_nonnull(m);
	free(m);
	/* labels before annotations, sorted keys */
	m = validate("{\"labels\":{\"zz\":\"1\",\"aa\":\"1\"},\"annotations\":{\"k8s.io/x\":\"1\"}}", NULL);
	ck_assert_ptr_nonnull(strstr(m, "failed to validate label \"aa\""));
	free(m);
}
END_TEST

START_TEST(merge_no_override)
{
	cJSON *claim = fx_load("claim.json");
	cJSON_AddItemToObject(cJSON_GetObjectItem(claim, "spec"), "additionalPodMetadata",
	                      fx_json("{\"labels\":{\"app\":\"demo\",\"sandbox.users.io/t\":\"x\"},"
	                               "\"annotations\":{\"note\":\"n\"}}"));
	cJSON *meta = fx_json("{\"labels\":{\"app\":\"demo\"}}");
	wp_claim_err err = { 0 };
	ck_assert(wp_merge_pod_metadata(meta, claim, &err));
	fx_assert_json_str(meta, "{\"labels\":{\"app\":\"demo\",\"sandbox.users.io/t\":\"x\"},"
	                          "\"annotations\":{\"note\":\"n\"}}");
	cJSON_Delete(meta);
	meta = fx_json("{\"labels\":{\"app\":\"other\"}}");
	ck_assert(!wp_merge_pod_metadata(meta, claim, &err));
	ck_assert_int_eq(err.kind, WP_CLAIM_E_OTHER);
	ck_assert(!wp_claim_err_suppressed(&err));
	ck_assert_str_eq(err.msg, "metadata override conflict: label \"app\" is defined in template "
	                          "with value \"other\", but claim requests \"demo\"");
	cJSON_Delete(meta);
	meta = fx_json("{\"annotations\":{\"note\":\"m\"}}");
	ck_assert(!wp_merge_pod_metadata(meta, claim, &err));
	ck_assert_str_eq(err.msg, "metadata override conflict: annotation \"note\" is defined in "
	                          "template with value \"m\", but claim requests \"n\"");
	wp_claim_err_clear(&err);
	ck_assert_ptr_null(err.msg);
	cJSON_Delete(meta);
	cJSON_Delete(claim);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("claim_validate");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, domains_file);
	tcase_add_test(tc, metadata_rules);
	tcase_add_test(tc, merge_no_override);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
