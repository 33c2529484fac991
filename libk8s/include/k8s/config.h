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
 * Loads a kubeconfig file and resolves one context.
 *
 * @param out      receives the new config; the caller frees it.
 * @param path     kubeconfig path; NULL means the first entry of the
 *                 colon-separated $KUBECONFIG, else $HOME/.kube/config.
 * @param context  context name; NULL means the file's `current-context`.
 *
 * Understands clusters (server, certificate-authority[-data],
 * insecure-skip-tls-verify, tls-server-name), users (client-certificate
 * [-data], client-key[-data], token, tokenFile) and contexts (cluster,
 * user, namespace). File paths inside the kubeconfig are relative to the
 * kubeconfig's directory. As in kubectl, `*-data` wins over the file
 * form, and `tokenFile` over `token`; a server without a scheme means
 * https. Every file named is read now (PEM data is kept in memory); the
 * token file is also read again later by the client when it changes.
 * Credential plugins (exec, auth-provider) and basic auth are not
 * supported: a user relying on them alone is a K8S_ECONFIG. Only the first
 * file of $KUBECONFIG is read (no merging yet). Thread-safe (no shared
 * state).
 *
 * @return 0; K8S_ECONFIG when the file cannot be read, is not YAML, or
 *         names a missing context / cluster / user, or has bad base64 data
 *         (the message names the file and the entry); K8S_ENOMEM.
 */
K8S_EXTERN int k8s_config_load(k8s_config **out, const char *path,
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
 * @return 0; K8S_ECONFIG when not running in a cluster (variables or
 *         files missing; the message says which); K8S_ENOMEM.
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
