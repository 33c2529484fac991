/*
 * config_internal.h - the fields of a k8s_config, for the client.
 *
 * Private to libk8s: config.c builds these, client.c reads them. A config
 * is immutable once built; the client works on its own copy
 * (k8s__config_dup()). Credentials are held in memory as loaded; only the
 * token file is read again later, by the client, because projected
 * service-account tokens rotate, and a credential plugin (`exec`) is only
 * described here: the client runs it when it needs credentials.
 */
#ifndef K8S_CONFIG_INTERNAL_H
#define K8S_CONFIG_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include "k8s/config.h"

/* A user's credential plugin (exec_credential.h). */
typedef struct k8s__exec_config k8s__exec_config;

/* The k8s__ functions below are used by client.c; they are exported
 * (K8S_EXTERN) only so that the unit tests, which link the shared library,
 * can reach them. Not part of the public API. */

/** Bytes read from a file or decoded from base64; `data` is NUL-terminated. */
typedef struct {
	char *data;   /* NULL when absent */
	size_t len;
} k8s__blob;

struct k8s_config {
	char *origin;           /* kubeconfig path, "<memory>" or "in-cluster" */
	char *context;          /* resolved context name; "" in-cluster */
	char *server;           /* scheme://host[:port][/prefix], no trailing '/' */
	char *namespace;        /* never NULL ("default" when unset) */
	char *tls_server_name;  /* SNI / verified name override, or NULL */
	bool insecure;          /* insecure-skip-tls-verify */
	k8s__blob ca;           /* PEM bundle to trust; absent: system CAs */
	k8s__blob cert;         /* client certificate PEM, or absent */
	k8s__blob key;          /* client key PEM, or absent (secret) */
	char *token;            /* bearer token, or NULL (secret) */
	char *token_file;       /* file the token came from and is re-read from */
	char *proxy_url;        /* cluster proxy-url (http, https, socks5), or NULL
	                         * (secret: it may carry proxy credentials) */
	k8s__exec_config *exec; /* credential plugin, or NULL; used only when the
	                         * user has no token and no client certificate */
};

/** Largest file the config reads (kubeconfig, PEM, token). */
#define K8S_CONFIG_FILE_MAX ((size_t)16 << 20)

/**
 * Reads a whole file (at most K8S_CONFIG_FILE_MAX bytes) into a new,
 * NUL-terminated buffer. Returns 0, or -errno (-EFBIG when too large);
 * records no error: callers word the message.
 */
K8S_EXTERN int k8s__read_file(const char *path, k8s__blob *out);

/** Frees a blob, wiping it first (it may hold a key or a token). */
K8S_EXTERN void k8s__blob_free(k8s__blob *b);

/** Wipes and frees a NUL-terminated secret (a token, a key); NULL accepted. */
K8S_EXTERN void k8s__free_secret(char *s);

/** Deep copy of a config. Returns 0 or ASB_ENOMEM (recorded). */
K8S_EXTERN int k8s__config_dup(k8s_config **out, const k8s_config *cfg);

#endif
