/*
 * Unit tests of libk8s/src/validation.c: qualified names and label values
 * with apimachinery's messages (byte for byte), DNS-1123 labels and
 * subdomains, and messages cut to a small buffer.
 */
#include <check.h>
#include <string.h>
#include "k8s/validation.h"

#define QNAME_ERR "must consist of alphanumeric characters, '-', '_' or '.', and must start " \
	"and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', " \
	"regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"

/* Runs a check; `want` NULL means valid. */
static void assert_qname(const char *s, const char *want)
{
	char m[K8S_VALIDATION_MSG_SIZE] = "untouched";
	int rc = k8s_validate_qualified_name(s, m, sizeof(m));
	if (!want) {
		ck_assert_msg(rc == 0, "unexpected errors for %s: %s", s, m);
		ck_assert_str_eq(m, "untouched");
		return;
	}
	ck_assert_int_eq(rc, ASB_EINVAL);
	ck_assert_str_eq(m, want);
}

static void assert_value(const char *s, const char *want)
{
	char m[K8S_VALIDATION_MSG_SIZE] = "untouched";
	int rc = k8s_validate_label_value(s, m, sizeof(m));
	if (!want) {
		ck_assert_msg(rc == 0, "unexpected errors for %s: %s", s, m);
		return;
	}
	ck_assert_int_eq(rc, ASB_EINVAL);
	ck_assert_str_eq(m, want);
}

START_TEST(qualified_names)
{
	assert_qname("app", NULL);
	assert_qname("sandbox.users.io/My_Label.1", NULL);
	assert_qname(NULL, "name part must be non-empty; name part " QNAME_ERR);
	assert_qname("-bad", "name part " QNAME_ERR);
	assert_qname("", "name part must be non-empty; name part " QNAME_ERR);
	assert_qname("/x", "prefix part must be non-empty");
	assert_qname("Example.com/x",
	             "prefix part a lowercase RFC 1123 subdomain must consist of lower case "
	             "alphanumeric characters, '-' or '.', and must start and end with an "
	             "alphanumeric character (e.g. 'example.com', regex used for validation is "
	             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
	assert_qname("a/b/c",
	             "a qualified name " QNAME_ERR " with an optional DNS subdomain prefix and '/' "
	             "(e.g. 'example.com/MyName')");
	char longname[80];
	memset(longname, 'a', 64);
	longname[64] = '\0';
	assert_qname(longname, "name part must be no more than 63 characters");
	longname[63] = '\0';
	assert_qname(longname, NULL);
	char prefix[300];
	memset(prefix, 'a', 254);
	strcpy(prefix + 254, "/x");
	assert_qname(prefix, "prefix part must be no more than 253 characters");
	prefix[0] = '-';
	assert_qname(prefix, "prefix part must be no more than 253 characters; prefix part "
	             "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
	             "characters, '-' or '.', and must start and end with an alphanumeric "
	             "character (e.g. 'example.com', regex used for validation is "
	             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
}
END_TEST

START_TEST(label_values)
{
	assert_value("", NULL);
	assert_value(NULL, NULL);
	assert_value("v1.2_x-y", NULL);
	assert_value("bad value",
	             "a valid label must be an empty string or consist of alphanumeric characters, "
	             "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
	             "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
	             "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
	char v[70];
	memset(v, 'x', 64);
	v[64] = '\0';
	assert_value(v, "must be no more than 63 characters");
}
END_TEST

START_TEST(small_buffer_is_cut_not_overrun)
{
	char m[16];
	memset(m, 'Z', sizeof(m));
	ck_assert_int_eq(k8s_validate_qualified_name("", m, 8), ASB_EINVAL);
	ck_assert_str_eq(m, "name pa");
	ck_assert_int_eq(m[8], 'Z');
	/* no buffer at all: the verdict alone */
	ck_assert_int_eq(k8s_validate_label_value("-", NULL, 0), ASB_EINVAL);
}
END_TEST

START_TEST(dns1123)
{
	ck_assert(k8s_is_dns1123_label("default"));
	ck_assert(k8s_is_dns1123_label("a-1"));
	ck_assert(!k8s_is_dns1123_label(""));
	ck_assert(!k8s_is_dns1123_label(NULL));
	ck_assert(!k8s_is_dns1123_label("-a"));
	ck_assert(!k8s_is_dns1123_label("a-"));
	ck_assert(!k8s_is_dns1123_label("A"));
	ck_assert(!k8s_is_dns1123_label("a.b"));
	char l[70];
	memset(l, 'a', 64);
	l[64] = '\0';
	ck_assert(!k8s_is_dns1123_label(l));
	l[63] = '\0';
	ck_assert(k8s_is_dns1123_label(l));

	ck_assert(k8s_is_dns1123_subdomain("a.b-c.d"));
	ck_assert(!k8s_is_dns1123_subdomain("a..b"));
	ck_assert(!k8s_is_dns1123_subdomain("a."));
	ck_assert(!k8s_is_dns1123_subdomain(""));
	ck_assert(!k8s_is_dns1123_subdomain(NULL));
	char d[300];
	memset(d, 'a', 254);
	d[254] = '\0';
	for (int i = 60; i < 254; i += 61)
		d[i] = '.';
	ck_assert(!k8s_is_dns1123_subdomain(d));
	d[253] = '\0';
	ck_assert(k8s_is_dns1123_subdomain(d));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("validation");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, qualified_names);
	tcase_add_test(tc, label_values);
	tcase_add_test(tc, small_buffer_is_cut_not_overrun);
	tcase_add_test(tc, dns1123);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
