/*
 * certs.h - a self-signed CA and a serving certificate it signs, in PEM,
 * for a webhook server that manages its own certificates (the way
 * controller-runtime based controllers do; the API server then trusts the
 * CA through a caBundle).
 *
 * Keys are ECDSA on P-256 (FIPS 186-4), certificates X.509 v3 (RFC 5280)
 * signed with ecdsa-with-SHA256, written by mbedTLS; the key PEM is SEC1
 * ("EC PRIVATE KEY", RFC 5915). Randomness comes from mbedTLS's CTR-DRBG
 * seeded by the system entropy source.
 *
 * Pure apart from randomness: no clock (times are inputs), no files, no
 * global state. Thread-safe.
 */
#ifndef K8S_CERTS_H
#define K8S_CERTS_H

#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define K8S_CERT_OPTIONS_VERSION 1

/** What to generate; initialise with K8S_CERT_OPTIONS_INIT. */
typedef struct {
	unsigned int version;          /**< K8S_CERT_OPTIONS_VERSION */
	/** CA subject and issuer CN, e.g. "agent-sandbox-conversion-webhook-ca". Required. */
	const char *ca_common_name;
	/** Serving certificate subject CN, e.g. "svc.ns.svc". Required. */
	const char *common_name;
	/** NULL-terminated DNS SANs of the serving certificate; may be NULL. */
	const char *const *dns_names;
	/** NULL-terminated IP SANs ("127.0.0.1", "::1"); may be NULL. */
	const char *const *ip_addresses;
	/** Validity of both certificates, milliseconds since the Unix epoch
	 *  (stored with one-second precision, UTC). Required: not_after > not_before. */
	int64_t not_before_ms;
	int64_t not_after_ms;
	long ca_serial;                /**< serial of the CA; 0: 1 */
	long serial;                   /**< serial of the serving certificate; 0: 2 */
} k8s_cert_options;

#define K8S_CERT_OPTIONS_INIT { .version = K8S_CERT_OPTIONS_VERSION }

/**
 * The generated PEM texts, NUL-terminated, owned by the struct: release
 * with k8s_cert_bundle_dispose().
 */
typedef struct {
	char *ca_cert;   /**< CA certificate: basicConstraints CA, keyUsage keyCertSign */
	char *ca_key;    /**< CA private key (EC PRIVATE KEY) */
	char *cert;      /**< serving certificate: EKU serverAuth, the SANs */
	char *key;       /**< its private key (EC PRIVATE KEY) */
} k8s_cert_bundle;

/**
 * Generates a CA and a serving certificate signed by it.
 * @param out  filled on success; zeroed on error
 * @return 0; ASB_EINVAL (missing names, bad validity, an IP SAN that is
 *         not an IPv4 or IPv6 address); ASB_ERROR (mbedTLS failure, named
 *         in the message); ASB_ENOMEM.
 */
K8S_EXTERN int k8s_cert_bundle_generate(k8s_cert_bundle *out,
                                        const k8s_cert_options *opts);

/** Frees the PEM texts (wiping the keys) and zeroes `b`; NULL is accepted. */
K8S_EXTERN void k8s_cert_bundle_dispose(k8s_cert_bundle *b);

/**
 * True when `data` (`len` bytes, no NUL needed) holds at least one PEM
 * block (RFC 7468: "-----BEGIN <label>-----" ... "-----END <label>-----")
 * whose base64 body decodes, as Go's pem.Decode accepts. Pure; thread-safe.
 */
K8S_EXTERN bool k8s_pem_decodable(const char *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
