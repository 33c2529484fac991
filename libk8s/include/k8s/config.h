/*
 * config.h - where the API server is and how to authenticate to it.
 *
 * A k8s_config is built either from a kubeconfig file (the format of
 * https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/,
 * clientcmd v1 "Config") or from the in-cluster service-account files
 * (https://kubernetes.io/docs/tasks/run-application/access-api-from-pod/).
 * It is immutable once built and may be shared between threads.
 */
#ifndef K8S_CONFIG_H
#define K8S_CONFIG_H

#include "k8s/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque, immutable connection settings. Free with k8s_config_free(). */
typedef struct k8s_config k8s_config;

/**
 * Loads kubeconfig files and resolves one context.
 *
 * @param out      receives the new config; the caller frees it.
 * @param path     one kubeconfig file, used alone (as kubectl's
 *                 --kubeconfig). NULL or "": the colon-separated list in
 *                 $KUBECONFIG, merged (see k8s_config_load_files()), else
 *                 $HOME/.kube/config.
 * @param context  context name (kubectl's --context); NULL means the
 *                 `current-context`.
 *
 * Understands clusters (server, certificate-authority[-data],
 * insecure-skip-tls-verify, tls-server-name, proxy-url), users
 * (client-certificate[-data], client-key[-data], token, tokenFile, exec)
 * and contexts (cluster, user, namespace; the namespace defaults to
 * "default"). File paths inside a kubeconfig are relative to that file's
 * directory. As in kubectl, `*-data` wins over the file form, and
 * `tokenFile` over `token`; a server without a scheme means https.
 * `proxy-url` must be http://, https:// or socks5:// (host names are then
 * resolved by the proxy); without it the usual proxy environment variables
 * apply (https_proxy, no_proxy).
 *
 * Every file named is read now (PEM data is kept in memory); the token
 * file is also read again later by the client when it changes. An `exec`
 * credential plugin (client.authentication.k8s.io/v1 or v1beta1,
 * https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins)
 * is validated now and run later by the client, and only when the user has
 * neither a token nor a client certificate. auth-provider and basic auth
 * are not supported: a user relying on them alone is a ASB_ECONFIG.
 * Thread-safe (no shared state; reads the environment).
 *
 * @return 0; ASB_ECONFIG when a file cannot be read, is not YAML, or
 *         names a missing context / cluster / user, or has bad base64 data
 *         or an invalid exec stanza (the message names the file and the
 *         entry, never a credential); ASB_ENOMEM.
 */
K8S_EXTERN int k8s_config_load(k8s_config **out, const char *path,
                               const char *context);

/**
 * Loads and merges several kubeconfig files, as kubectl merges the files
 * of $KUBECONFIG (clientcmd's loading rules): for clusters, users and
 * contexts the first file that defines a name wins (the whole entry);
 * `current-context` comes from the first file that sets one; a file that
 * does not exist is skipped, but one that exists and can not be read or
 * parsed is an error, and so is a list in which no file exists. An empty
 * file contributes nothing. Otherwise as k8s_config_load().
 *
 * @param paths   `npaths` (>= 1) non-empty file paths, borrowed.
 * @return 0; ASB_EINVAL for a NULL/empty list or path; ASB_ECONFIG;
 *         ASB_ENOMEM.
 */
K8S_EXTERN int k8s_config_load_files(k8s_config **out,
                                     const char *const *paths, size_t npaths,
                                     const char *context);

/**
 * Same as k8s_config_load() over an in-memory kubeconfig document.
 * `origin` names the document in error messages (NULL: "<memory>") and,
 * when it is a file path, anchors relative paths. `len` is in bytes.
 */
K8S_EXTERN int k8s_config_load_yaml(k8s_config **out, const char *yaml,
                                    size_t len, const char *context,
                                    const char *origin);

/**
 * Builds the in-cluster config: server from $KUBERNETES_SERVICE_HOST and
 * $KUBERNETES_SERVICE_PORT, token, CA and namespace from
 * /var/run/secrets/kubernetes.io/serviceaccount/. The token file is read
 * again by the client when it changes (projected tokens rotate).
 *
 * @return 0; ASB_ECONFIG when not running in a cluster (variables or
 *         files missing; the message says which); ASB_ENOMEM.
 */
K8S_EXTERN int k8s_config_incluster(k8s_config **out);

/**
 * As k8s_config_incluster() with explicit inputs, for tests and unusual
 * layouts: `host` and `port` of the API server, `sa_dir` holding `token`,
 * `ca.crt` and optionally `namespace`.
 */
K8S_EXTERN int k8s_config_incluster_from(k8s_config **out, const char *host,
                                         const char *port, const char *sa_dir);

/** The server URL, e.g. "https://127.0.0.1:6443". Owned by `cfg`. */
K8S_EXTERN const char *k8s_config_server(const k8s_config *cfg);

/** The context's default namespace, "default" when unset. Owned by `cfg`. */
K8S_EXTERN const char *k8s_config_namespace(const k8s_config *cfg);

/** The resolved context name ("" for in-cluster). Owned by `cfg`. */
K8S_EXTERN const char *k8s_config_context(const k8s_config *cfg);

/** Frees a config; NULL is accepted. */
K8S_EXTERN void k8s_config_free(k8s_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
