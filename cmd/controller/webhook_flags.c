/*
 * webhook_flags.c - the conversion webhook's flags (webhook_flags.h):
 * upstream defaults and the startup checks of
 * docs/upstream.md#startup-validation. Pure; linked into the flags unit tests.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include "webhook_flags.h"

/* --- flags ------------------------------------------------------------------ */

void webhook_flags_defaults(webhook_flags *w)
{
	*w = (webhook_flags){
		.enable = true,
		.manage_certs = true,
		.port = 9443,
		.cert_dir = "/tmp/k8s-webhook-server/serving-certs",
		.cert_name = "tls.crt",
		.key_name = "tls.key",
		.service_name = "agent-sandbox-webhook-service",
		.namespace_ = "agent-sandbox-system",
	};
}

/* The message of an invalid value, as flags.c words it. */
#define bad(flag, value, want) \
	(snprintf(err, cap, "invalid value \"%s\" for --%s: %s", (value), (flag), (want)), -1)

static bool blank(const char *s)
{
	for (; s && *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

/* The host of an https URL, without IPv6 brackets (malloc'd), or NULL when unusable. */
char *webhook_url_host(const char *url, const char **why)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *extra = NULL, *out = NULL;
	*why = "must be an https URL with a host";
	if (!u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		goto done;
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK || strcmp(scheme, "https") != 0)
		goto done;
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
		goto done;
	/* what the API server refuses in a webhook clientConfig.url */
	if (curl_url_get(u, CURLUPART_USER, &extra, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_QUERY, &extra, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_FRAGMENT, &extra, 0) == CURLUE_OK) {
		*why = "must not carry a user, query or fragment";
		goto done;
	}
	size_t n = strlen(host);
	out = host[0] == '[' && n > 2 ? strndup(host + 1, n - 2) : strdup(host);
done:
	curl_free(scheme);
	curl_free(host);
	curl_free(extra);
	curl_url_cleanup(u);
	return out;
}

int webhook_flags_validate(const webhook_flags *w, char *err, size_t cap)
{
	if (blank(w->cert_name))
		return bad("webhook-cert-name", w->cert_name, "must not be blank");
	if (blank(w->key_name))
		return bad("webhook-key-name", w->key_name, "must not be blank");
	if (w->port < 1 || w->port > 65535) {
		char v[16];
		snprintf(v, sizeof(v), "%d", w->port);
		return bad("webhook-port", v, "must be a port number 1..65535");
	}
	if (blank(w->cert_dir))
		return bad("webhook-cert-dir", w->cert_dir, "must not be blank");
	if (blank(w->service_name))
		return bad("webhook-service-name", w->service_name, "must not be blank");
	if (blank(w->namespace_))
		return bad("webhook-namespace", w->namespace_, "must not be blank");
	if (w->bind_address && (blank(w->bind_address) || strchr(w->bind_address, ':') ||
	                        strchr(w->bind_address, '[')))
		return bad("webhook-bind-address", w->bind_address,
		           "must be a host name or IPv4 address (the port is --webhook-port)");
	if (w->url) {
		const char *why;
		char *host = webhook_url_host(w->url, &why);
		if (!host)
			return bad("webhook-url", w->url, why);
		free(host);
	}
	return 0;
}

