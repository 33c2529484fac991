/*
 * Unit tests of libk8s/src/certs.c: the generated CA and serving
 * certificate are read back with mbedTLS's parser and checked field by
 * field (names, serials, validity, CA flags, EKU, SANs, key type), and the
 * chain verifies. IP SANs are exercised over a real handshake in
 * test_httpserver_tls.c (mbedTLS 2.28's parser lists only DNS SANs).
 */
#include <arpa/inet.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include "k8s/certs.h"

/* 2026-01-02T03:04:05Z */
#define NOW_MS 1767323045000LL
#define HOUR_MS 3600000LL

static const char *const dns[] = { "svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local", NULL };
static const char *const ips[] = { "127.0.0.1", "::1", NULL };

static k8s_cert_options options(void)
{
	k8s_cert_options o = K8S_CERT_OPTIONS_INIT;
	o.ca_common_name = "agent-sandbox-conversion-webhook-ca";
	o.common_name = "svc.ns.svc";
	o.dns_names = dns;
	o.ip_addresses = ips;
	o.not_before_ms = NOW_MS - HOUR_MS;
	o.not_after_ms = NOW_MS + 365 * 24 * HOUR_MS;
	return o;
}

static void parse(mbedtls_x509_crt *crt, const char *pem)
{
	mbedtls_x509_crt_init(crt);
	ck_assert_int_eq(mbedtls_x509_crt_parse(crt, (const unsigned char *)pem, strlen(pem) + 1), 0);
}

static void assert_cn(const mbedtls_x509_name *n, const char *want)
{
	char buf[256];
	ck_assert_int_gt(mbedtls_x509_dn_gets(buf, sizeof(buf), n), 0);
	char exp[300];
	snprintf(exp, sizeof(exp), "CN=%s", want);
	ck_assert_str_eq(buf, exp);
}

static void assert_time(const mbedtls_x509_time *t, int y, int mo, int d, int h, int mi, int s)
{
	ck_assert_int_eq(t->year, y);
	ck_assert_int_eq(t->mon, mo);
	ck_assert_int_eq(t->day, d);
	ck_assert_int_eq(t->hour, h);
	ck_assert_int_eq(t->min, mi);
	ck_assert_int_eq(t->sec, s);
}

START_TEST(ca_and_serving_certificate)
{
	k8s_cert_options o = options();
	k8s_cert_bundle b;
	ck_assert_int_eq(k8s_cert_bundle_generate(&b, &o), 0);
	ck_assert_ptr_nonnull(strstr(b.key, "-----BEGIN EC PRIVATE KEY-----"));
	ck_assert_ptr_nonnull(strstr(b.ca_key, "-----BEGIN EC PRIVATE KEY-----"));
	ck_assert(k8s_pem_decodable(b.ca_cert, strlen(b.ca_cert)));

	mbedtls_x509_crt ca, leaf;
	parse(&ca, b.ca_cert);
	parse(&leaf, b.cert);
	/* CA: CN, serial 1, self-issued, CA with keyCertSign, validity */
	assert_cn(&ca.subject, "agent-sandbox-conversion-webhook-ca");
	assert_cn(&ca.issuer, "agent-sandbox-conversion-webhook-ca");
	ck_assert_int_eq(ca.serial.len, 1);
	ck_assert_int_eq(ca.serial.p[0], 1);
	ck_assert_int_eq(ca.ca_istrue, 1);
	ck_assert_uint_eq(ca.key_usage, MBEDTLS_X509_KU_KEY_CERT_SIGN);
	assert_time(&ca.valid_from, 2026, 1, 2, 2, 4, 5);
	assert_time(&ca.valid_to, 2027, 1, 2, 3, 4, 5);
	ck_assert_int_eq(mbedtls_pk_get_type(&ca.pk), MBEDTLS_PK_ECKEY);
	ck_assert_int_eq(mbedtls_pk_get_bitlen(&ca.pk), 256);

	/* serving certificate */
	assert_cn(&leaf.subject, "svc.ns.svc");
	assert_cn(&leaf.issuer, "agent-sandbox-conversion-webhook-ca");
	ck_assert_int_eq(leaf.serial.len, 1);
	ck_assert_int_eq(leaf.serial.p[0], 2);
	ck_assert_int_eq(leaf.ca_istrue, 0);
	ck_assert_int_eq(mbedtls_x509_crt_check_extended_key_usage(&leaf, MBEDTLS_OID_SERVER_AUTH,
	                 MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)), 0);
	ck_assert_int_ne(mbedtls_x509_crt_check_extended_key_usage(&leaf, MBEDTLS_OID_CLIENT_AUTH,
	                 MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH)), 0);
	assert_time(&leaf.valid_from, 2026, 1, 2, 2, 4, 5);
	assert_time(&leaf.valid_to, 2027, 1, 2, 3, 4, 5);
	/* SANs in order: the DNS names, then the IPs (raw 4 or 16 bytes) */
	int i = 0, j = 0;
	for (const mbedtls_x509_sequence *s = &leaf.subject_alt_names; s && s->buf.p; s = s->next) {
		if (s->buf.tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2)) {
			ck_assert_int_eq(j, 0);
			ck_assert_ptr_nonnull(dns[i]);
			ck_assert_int_eq(s->buf.len, strlen(dns[i]));
			ck_assert_int_eq(memcmp(s->buf.p, dns[i], s->buf.len), 0);
			i++;
		} else {
			ck_assert_int_eq(s->buf.tag, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7);
			ck_assert_ptr_nonnull(ips[j]);
			unsigned char raw[16];
			ck_assert_int_eq(inet_pton(j == 0 ? AF_INET : AF_INET6, ips[j], raw), 1);
			ck_assert_int_eq(s->buf.len, j == 0 ? 4 : 16);
			ck_assert_int_eq(memcmp(s->buf.p, raw, s->buf.len), 0);
			j++;
		}
	}
	ck_assert_int_eq(i, 4);
	ck_assert_int_eq(j, 2);

	/* the chain verifies, for a DNS name of the list and not for another */
	uint32_t flags = 0;
	ck_assert_int_eq(mbedtls_x509_crt_verify(&leaf, &ca, NULL, "svc.ns.svc.cluster.local", &flags, NULL, NULL), 0);
	ck_assert_int_ne(mbedtls_x509_crt_verify(&leaf, &ca, NULL, "other.example", &flags, NULL, NULL), 0);

	/* the key belongs to the certificate */
	mbedtls_pk_context key;
	mbedtls_pk_init(&key);
	ck_assert_int_eq(mbedtls_pk_parse_key(&key, (const unsigned char *)b.key, strlen(b.key) + 1, NULL, 0), 0);
	ck_assert_int_eq(mbedtls_pk_check_pair(&leaf.pk, &key), 0);
	mbedtls_pk_free(&key);

	mbedtls_x509_crt_free(&ca);
	mbedtls_x509_crt_free(&leaf);
	k8s_cert_bundle_dispose(&b);
	ck_assert_ptr_null(b.cert);
	k8s_cert_bundle_dispose(NULL);
}
END_TEST

START_TEST(two_bundles_differ)
{
	k8s_cert_options o = options();
	k8s_cert_bundle a, b;
	ck_assert_int_eq(k8s_cert_bundle_generate(&a, &o), 0);
	ck_assert_int_eq(k8s_cert_bundle_generate(&b, &o), 0);
	ck_assert_str_ne(a.key, b.key);
	ck_assert_str_ne(a.ca_cert, b.ca_cert);
	k8s_cert_bundle_dispose(&a);
	k8s_cert_bundle_dispose(&b);
}
END_TEST

START_TEST(bad_options)
{
	k8s_cert_bundle b;
	k8s_cert_options o = options();
	o.common_name = NULL;
	ck_assert_int_eq(k8s_cert_bundle_generate(&b, &o), ASB_EINVAL);
	o = options();
	o.not_after_ms = o.not_before_ms;
	ck_assert_int_eq(k8s_cert_bundle_generate(&b, &o), ASB_EINVAL);
	o = options();
	static const char *const bad_ip[] = { "not-an-ip", NULL };
	o.ip_addresses = bad_ip;
	ck_assert_int_eq(k8s_cert_bundle_generate(&b, &o), ASB_EINVAL);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "not-an-ip"));
	ck_assert_ptr_null(b.ca_cert);
	o = options();
	o.common_name = "a,O=evil";
	ck_assert_int_eq(k8s_cert_bundle_generate(&b, &o), ASB_EINVAL);
	ck_assert_int_eq(k8s_cert_bundle_generate(NULL, &o), ASB_EINVAL);
	ck_assert_int_eq(k8s_cert_bundle_generate(&b, NULL), ASB_EINVAL);
}
END_TEST

START_TEST(pem_decodable)
{
	const char *good = "junk\n-----BEGIN THING-----\naGVsbG8=\n-----END THING-----\n";
	ck_assert(k8s_pem_decodable(good, strlen(good)));
	ck_assert(!k8s_pem_decodable("", 0));
	ck_assert(!k8s_pem_decodable("hello", 5));
	const char *bad = "-----BEGIN THING-----\n%%%%\n-----END THING-----\n";
	ck_assert(!k8s_pem_decodable(bad, strlen(bad)));
	const char *unterminated = "-----BEGIN THING-----\naGVsbG8=\n";
	ck_assert(!k8s_pem_decodable(unterminated, strlen(unterminated)));
	const char *mismatch = "-----BEGIN A-----\naGVsbG8=\n-----END B-----\n";
	ck_assert(!k8s_pem_decodable(mismatch, strlen(mismatch)));
	ck_assert(!k8s_pem_decodable(NULL, 0));
	/* length honoured: the block cut short is not decodable */
	ck_assert(!k8s_pem_decodable(good, 30));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("certs");
	TCase *tc = tcase_create("certs");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ca_and_serving_certificate);
	tcase_add_test(tc, two_bundles_differ);
	tcase_add_test(tc, bad_options);
	tcase_add_test(tc, pem_decodable);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
