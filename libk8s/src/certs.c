/*
 * certs.c - CA + serving certificate generation with mbedTLS (certs.h).
 *
 * The extensions mbedTLS 2.28 has no setter for (subjectAltName,
 * extendedKeyUsage) are DER-encoded with its asn1write functions and added
 * as raw extensions. asn1write fills buffers from the end backwards, hence
 * the `p` pointers that move down.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <mbedtls/asn1write.h>
#include <mbedtls/bignum.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/pem.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/x509_crt.h>
#include "k8s/certs.h"
#include "config_internal.h"

#define PEM_MAX 4096
#define EXT_MAX 4096

static int tls_fail(int err, const char *what)
{
	char why[160];
	mbedtls_strerror(err, why, sizeof(why));
	return asb_error_set(ASB_ERROR, 0, NULL, "certificate generation: %s: %s", what, why);
}

/* "YYYYMMDDhhmmss" in UTC, as mbedtls_x509write_crt_set_validity wants. */
static bool x509_time(int64_t ms, char out[32])
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 1950)
		return false;
	snprintf(out, 32, "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	         tm.tm_hour, tm.tm_min, tm.tm_sec);
	return true;
}

/*
 * mbedTLS writes DER backwards, from the end of `buf`: puts the SEQUENCE
 * header before the `len` content bytes that start at `p`, and returns
 * the whole length with *start at its first byte (or a recorded error).
 */
static int end_sequence(unsigned char *p, unsigned char *buf, size_t len,
                        unsigned char **start, const char *what)
{
	int n;
	if ((n = mbedtls_asn1_write_len(&p, buf, len)) < 0)
		return tls_fail(n, what);
	len += (size_t)n;
	if ((n = mbedtls_asn1_write_tag(&p, buf, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE)) < 0)
		return tls_fail(n, what);
	len += (size_t)n;
	*start = p;
	return (int)len;
}

/* SubjectAltName ::= SEQUENCE OF GeneralName (RFC 5280 4.2.1.6), DER, at the end of buf. */
static int san_der(const k8s_cert_options *o, unsigned char *buf, size_t cap, unsigned char **start)
{
	unsigned char *p = buf + cap;
	size_t len = 0;
	int n;
	size_t count_ip = 0, count_dns = 0;
	while (o->ip_addresses && o->ip_addresses[count_ip])
		count_ip++;
	while (o->dns_names && o->dns_names[count_dns])
		count_dns++;
	/* written backwards: the last name first, so the output keeps the given order */
	for (size_t i = count_ip; i-- > 0;) {
		unsigned char ip[16];
		size_t iplen;
		if (inet_pton(AF_INET, o->ip_addresses[i], ip) == 1)
			iplen = 4;
		else if (inet_pton(AF_INET6, o->ip_addresses[i], ip) == 1)
			iplen = 16;
		else
			return asb_error_set(ASB_EINVAL, 0, NULL, "certificate generation: \"%s\" is not an IP address",
			                     o->ip_addresses[i]);
		/* iPAddress [7] IMPLICIT OCTET STRING */
		if ((n = mbedtls_asn1_write_tagged_string(&p, buf, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7,
		                                          (const char *)ip, iplen)) < 0)
			return tls_fail(n, "subjectAltName");
		len += (size_t)n;
	}
	for (size_t i = count_dns; i-- > 0;) {
		/* dNSName [2] IMPLICIT IA5String */
		if ((n = mbedtls_asn1_write_tagged_string(&p, buf, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2,
		                                          o->dns_names[i], strlen(o->dns_names[i]))) < 0)
			return tls_fail(n, "subjectAltName");
		len += (size_t)n;
	}
	return end_sequence(p, buf, len, start, "subjectAltName");
}

/* ExtKeyUsageSyntax ::= SEQUENCE OF KeyPurposeId: just id-kp-serverAuth. */
static int eku_der(unsigned char *buf, size_t cap, unsigned char **start)
{
	unsigned char *p = buf + cap;
	size_t len = 0;
	int n;
	if ((n = mbedtls_asn1_write_oid(&p, buf, MBEDTLS_OID_SERVER_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH))) < 0)
		return tls_fail(n, "extendedKeyUsage");
	len += (size_t)n;
	return end_sequence(p, buf, len, start, "extendedKeyUsage");
}

static int gen_key(mbedtls_pk_context *pk, mbedtls_ctr_drbg_context *drbg)
{
	int err = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (err == 0)
		err = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*pk), mbedtls_ctr_drbg_random, drbg);
	return err ? tls_fail(err, "P-256 key") : 0;
}

static int key_pem(mbedtls_pk_context *pk, char **out)
{
	unsigned char *buf = calloc(1, PEM_MAX);
	if (!buf)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "certificate generation: out of memory");
	int err = mbedtls_pk_write_key_pem(pk, buf, PEM_MAX);
	if (err) {
		free(buf);
		return tls_fail(err, "key PEM");
	}
	*out = (char *)buf;
	return 0;
}

/* Signs one certificate; `subject_key` and `issuer_key` may be the same (self-signed). */
static int write_cert(const k8s_cert_options *o, mbedtls_ctr_drbg_context *drbg, bool ca,
                      const char *subject, const char *issuer, long serial,
                      mbedtls_pk_context *subject_key, mbedtls_pk_context *issuer_key, char **out)
{
	mbedtls_x509write_cert w;
	mbedtls_mpi sn;
	mbedtls_x509write_crt_init(&w);
	mbedtls_mpi_init(&sn);
	char nb[32], na[32];
	unsigned char *ext = malloc(EXT_MAX), *pem = calloc(1, PEM_MAX);
	int rc = 0, err = 0;
	if (!ext || !pem) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "certificate generation: out of memory");
		goto done;
	}
	x509_time(o->not_before_ms, nb);
	x509_time(o->not_after_ms, na);
	mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&w, subject_key);
	mbedtls_x509write_crt_set_issuer_key(&w, issuer_key);
	if ((err = mbedtls_mpi_lset(&sn, serial)) != 0 ||
	    (err = mbedtls_x509write_crt_set_serial(&w, &sn)) != 0 ||
	    (err = mbedtls_x509write_crt_set_validity(&w, nb, na)) != 0 ||
	    (err = mbedtls_x509write_crt_set_subject_name(&w, subject)) != 0 ||
	    (err = mbedtls_x509write_crt_set_issuer_name(&w, issuer)) != 0 ||
	    (err = mbedtls_x509write_crt_set_subject_key_identifier(&w)) != 0 ||
	    (err = mbedtls_x509write_crt_set_authority_key_identifier(&w)) != 0) {
		rc = tls_fail(err, "certificate fields");
		goto done;
	}
	if (ca) {
		if ((err = mbedtls_x509write_crt_set_basic_constraints(&w, 1, -1)) != 0 ||
		    (err = mbedtls_x509write_crt_set_key_usage(&w, MBEDTLS_X509_KU_KEY_CERT_SIGN)) != 0) {
			rc = tls_fail(err, "CA extensions");
			goto done;
		}
	} else {
		unsigned char *start = NULL;
		int len = eku_der(ext, EXT_MAX, &start);
		if (len < 0) {
			rc = len;
			goto done;
		}
		if ((err = mbedtls_x509write_crt_set_extension(&w, MBEDTLS_OID_EXTENDED_KEY_USAGE,
		                                               MBEDTLS_OID_SIZE(MBEDTLS_OID_EXTENDED_KEY_USAGE),
		                                               0, start, (size_t)len)) != 0) {
			rc = tls_fail(err, "extendedKeyUsage");
			goto done;
		}
		if ((o->dns_names && o->dns_names[0]) || (o->ip_addresses && o->ip_addresses[0])) {
			len = san_der(o, ext, EXT_MAX, &start);
			if (len < 0) {
				rc = len;
				goto done;
			}
			if ((err = mbedtls_x509write_crt_set_extension(&w, MBEDTLS_OID_SUBJECT_ALT_NAME,
			                                               MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME),
			                                               0, start, (size_t)len)) != 0) {
				rc = tls_fail(err, "subjectAltName");
				goto done;
			}
		}
	}
	if ((err = mbedtls_x509write_crt_pem(&w, pem, PEM_MAX, mbedtls_ctr_drbg_random, drbg)) != 0) {
		rc = tls_fail(err, "certificate PEM");
		goto done;
	}
	*out = (char *)pem;
	pem = NULL;
done:
	free(ext);
	free(pem);
	mbedtls_mpi_free(&sn);
	mbedtls_x509write_crt_free(&w);
	return rc;
}

int k8s_cert_bundle_generate(k8s_cert_bundle *out, const k8s_cert_options *o)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "certificate generation: out is required");
	memset(out, 0, sizeof(*out));
	if (!o || o->version != K8S_CERT_OPTIONS_VERSION || !o->ca_common_name || !*o->ca_common_name ||
	    !o->common_name || !*o->common_name)
		return asb_error_set(ASB_EINVAL, 0, NULL, "certificate generation: options with both common names are required");
	char t[32];
	if (o->not_after_ms <= o->not_before_ms || !x509_time(o->not_before_ms, t) || !x509_time(o->not_after_ms, t))
		return asb_error_set(ASB_EINVAL, 0, NULL, "certificate generation: invalid validity period");
	/* names go into an X.500 string: refuse the separators mbedTLS would interpret */
	if (strpbrk(o->ca_common_name, ",=\\") || strpbrk(o->common_name, ",=\\"))
		return asb_error_set(ASB_EINVAL, 0, NULL, "certificate generation: common names must not contain ',', '=' or '\\'");
	char ca_dn[300], dn[300];
	if ((size_t)snprintf(ca_dn, sizeof(ca_dn), "CN=%s", o->ca_common_name) >= sizeof(ca_dn) ||
	    (size_t)snprintf(dn, sizeof(dn), "CN=%s", o->common_name) >= sizeof(dn))
		return asb_error_set(ASB_EINVAL, 0, NULL, "certificate generation: common name too long");

	mbedtls_entropy_context entropy;
	mbedtls_ctr_drbg_context drbg;
	mbedtls_pk_context ca_key, key;
	mbedtls_entropy_init(&entropy);
	mbedtls_ctr_drbg_init(&drbg);
	mbedtls_pk_init(&ca_key);
	mbedtls_pk_init(&key);
	static const unsigned char pers[] = "k8s-cert-bundle";
	int rc = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy, pers, sizeof(pers) - 1);
	if (rc != 0)
		rc = tls_fail(rc, "random generator");
	if (rc == 0)
		rc = gen_key(&ca_key, &drbg);
	if (rc == 0)
		rc = gen_key(&key, &drbg);
	if (rc == 0)
		rc = write_cert(o, &drbg, true, ca_dn, ca_dn, o->ca_serial ? o->ca_serial : 1,
		                &ca_key, &ca_key, &out->ca_cert);
	if (rc == 0)
		rc = write_cert(o, &drbg, false, dn, ca_dn, o->serial ? o->serial : 2,
		                &key, &ca_key, &out->cert);
	if (rc == 0)
		rc = key_pem(&ca_key, &out->ca_key);
	if (rc == 0)
		rc = key_pem(&key, &out->key);
	mbedtls_pk_free(&ca_key);
	mbedtls_pk_free(&key);
	mbedtls_ctr_drbg_free(&drbg);
	mbedtls_entropy_free(&entropy);
	if (rc < 0)
		k8s_cert_bundle_dispose(out);
	return rc;
}

void k8s_cert_bundle_dispose(k8s_cert_bundle *b)
{
	if (!b)
		return;
	free(b->ca_cert);
	free(b->cert);
	k8s__free_secret(b->ca_key);
	k8s__free_secret(b->key);
	memset(b, 0, sizeof(*b));
}

bool k8s_pem_decodable(const char *data, size_t len)
{
	if (!data)
		return false;
	char *text = strndup(data, len);  /* mbedTLS wants a NUL-terminated buffer */
	if (!text)
		return false;
	bool ok = false;
	const char *p = text;
	while (!ok && (p = strstr(p, "-----BEGIN ")) != NULL) {
		const char *label = p + 11, *end = strstr(label, "-----");
		if (!end || end - label > 64 || memchr(label, '\n', (size_t)(end - label)))
			break;
		char header[96], footer[96];
		snprintf(header, sizeof(header), "-----BEGIN %.*s-----", (int)(end - label), label);
		snprintf(footer, sizeof(footer), "-----END %.*s-----", (int)(end - label), label);
		mbedtls_pem_context pem;
		mbedtls_pem_init(&pem);
		size_t used = 0;
		int err = mbedtls_pem_read_buffer(&pem, header, footer, (const unsigned char *)p, NULL, 0, &used);
		ok = err == 0 && pem.buflen > 0;
		mbedtls_pem_free(&pem);
		p = end;
	}
	free(text);
	return ok;
}
