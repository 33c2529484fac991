/*
 * webhook_flags.h - the flags of the conversion webhook (upstream names
 * and defaults, docs/upstream.md#controller-flags and #startup-validation), plus two of ours for
 * running the controller outside a cluster. Parsed by flags.c (whose table
 * holds their --help lines); used by webhook.c. Pure.
 */
#ifndef CONTROLLER_WEBHOOK_FLAGS_H
#define CONTROLLER_WEBHOOK_FLAGS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
	bool enable;                 /* --enable-webhook (true) */
	bool manage_certs;           /* --manage-webhook-certs (true) */
	int port;                    /* --webhook-port (9443) */
	const char *cert_dir;        /* --webhook-cert-dir */
	const char *cert_name;       /* --webhook-cert-name (tls.crt) */
	const char *key_name;        /* --webhook-key-name (tls.key) */
	const char *service_name;    /* --webhook-service-name */
	const char *namespace_;      /* --webhook-namespace */
	/* ours, for local development (not upstream) */
	const char *url;             /* --webhook-url: CRD clientConfig.url instead of service */
	const char *bind_address;    /* --webhook-bind-address: host to listen on; NULL: all */
	bool cert_name_set, key_name_set;  /* given on the command line */
} webhook_flags;

/** Fills the upstream defaults. */
void webhook_flags_defaults(webhook_flags *w);

/**
 * Startup checks (docs/upstream.md#startup-validation): non-blank cert and key names, a port in
 * 1..65535, non-blank dir, Service and namespace, a bind address that is
 * a host only, --webhook-url an https URL with a host and no user, query
 * or fragment. Returns 0, or -1 with "invalid value ... for --FLAG: ..."
 * in `err` (NUL-terminated, truncated to `cap`).
 */
int webhook_flags_validate(const webhook_flags *w, char *err, size_t cap);

/**
 * The host of an https URL without IPv6 brackets (malloc'd; caller
 * frees), or NULL with a reason in `*why` (static text).
 */
char *webhook_url_host(const char *url, const char **why);

#endif
