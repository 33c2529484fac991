/*
 * exec_credential.h - client-go credential plugins ("exec" users of a
 * kubeconfig), private to libk8s.
 *
 * https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins
 * A kubeconfig user may name a command that prints an ExecCredential
 * (client.authentication.k8s.io/v1 or v1beta1) holding a bearer token or a
 * client certificate and key, optionally with an expiry. config.c parses
 * the `exec` stanza into a k8s__exec_config; the client runs the plugin
 * (k8s__exec_run()) when it needs credentials, caches them until they
 * expire or the server answers 401, and never logs them.
 *
 * The k8s__ functions are exported (K8S_EXTERN) only so that the unit
 * tests can reach them; they are not part of the public API.
 */
#ifndef K8S_EXEC_CREDENTIAL_H
#define K8S_EXEC_CREDENTIAL_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "config_internal.h"

/* The plugin API versions client-go still speaks (v1alpha1 was removed in 1.24). */
#define K8S_EXEC_API_V1 "client.authentication.k8s.io/v1"
#define K8S_EXEC_API_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* Largest ExecCredential accepted on the plugin's stdout. */
#define K8S_EXEC_OUTPUT_MAX ((size_t)1 << 20)
/* Bytes of the plugin's stderr quoted in an error message. */
#define K8S_EXEC_STDERR_QUOTE 400

/** exec.interactiveMode. libk8s never has a terminal to offer. */
typedef enum {
	K8S__EXEC_NEVER = 0,
	K8S__EXEC_IF_AVAILABLE = 1,
	K8S__EXEC_ALWAYS = 2
} k8s__exec_interactive;

/** A user's `exec` stanza (clientcmd v1 ExecConfig). */
struct k8s__exec_config {
	char *label;           /* `kubeconfig "F": user "U"`, for messages */
	char *api_version;     /* K8S_EXEC_API_V1 or K8S_EXEC_API_V1BETA1 */
	char *command;         /* resolved against the kubeconfig's directory
	                        * when it contains a '/', else looked up on PATH */
	char **args;           /* nargs strings */
	size_t nargs;
	char **env;            /* nenv "NAME=value" strings, added to the
	                        * process environment (they win) */
	size_t nenv;
	char *install_hint;    /* shown when the command is missing, or NULL */
	k8s__exec_interactive interactive;
	char *cluster_json;    /* ExecCredential spec.cluster when the stanza
	                        * sets provideClusterInfo, else NULL */
};

/** Credentials from a plugin. Secret: wipe with k8s__exec_credential_clear(). */
typedef struct {
	char *token;           /* bearer token, or NULL */
	k8s__blob cert;        /* client certificate PEM, or absent */
	k8s__blob key;         /* client key PEM, or absent */
	int64_t expiry_ms;     /* expirationTimestamp, ms since the epoch; 0: none */
} k8s__exec_credential;

/**
 * Parses an `exec` stanza. `label` names the user in messages; `dir` (may
 * be NULL) is the kubeconfig's directory, which relative command paths are
 * resolved against. `cluster_json` (may be NULL) is copied into the config
 * when the stanza sets provideClusterInfo.
 *
 * Follows clientcmd's validation: command and apiVersion are required, the
 * apiVersion must be v1 or v1beta1, env entries need a name, and v1 needs
 * an interactiveMode (Never, IfAvailable or Always).
 *
 * @return 0; ASB_ECONFIG naming the label and the problem; ASB_ENOMEM.
 */
K8S_EXTERN int k8s__exec_config_parse(k8s__exec_config **out, const cJSON *exec,
                                      const char *label, const char *dir,
                                      const char *cluster_json);

/** Deep copy. Returns 0 or ASB_ENOMEM (recorded). `src` may be NULL. */
K8S_EXTERN int k8s__exec_config_dup(k8s__exec_config **out,
                                    const k8s__exec_config *src);

/** Frees a config; NULL is accepted. */
K8S_EXTERN void k8s__exec_config_free(k8s__exec_config *e);

/**
 * The value of KUBERNETES_EXEC_INFO for `e`: an ExecCredential of the
 * configured apiVersion whose spec says `interactive: false` and, with
 * provideClusterInfo, carries the cluster. A new string (free()), or NULL
 * when out of memory.
 */
K8S_EXTERN char *k8s__exec_info_json(const k8s__exec_config *e);

/**
 * Parses a plugin's output. It must be an ExecCredential of `api_version`
 * with a status holding a token, or both clientCertificateData and
 * clientKeyData (PEM), and optionally an RFC 3339 expirationTimestamp.
 * `label` prefixes messages, which never quote the output (it is secret).
 *
 * @return 0; ASB_EDECODE naming what is wrong; ASB_ENOMEM. On error `out`
 *         holds nothing.
 */
K8S_EXTERN int k8s__exec_credential_parse(k8s__exec_credential *out,
                                          const char *json, size_t len,
                                          const char *api_version,
                                          const char *label);

/** Wipes and frees what a credential holds; the struct is left empty. */
K8S_EXTERN void k8s__exec_credential_clear(k8s__exec_credential *c);

/**
 * Runs the plugin (posix_spawn, stdin from /dev/null, stdout and stderr
 * through pipes, its own process group) with the configured args and env
 * plus KUBERNETES_EXEC_INFO, waits at most `timeout_ms` (<= 0: 60 s), and
 * parses its output into `out`. Blocks the calling thread; thread-safe
 * (no shared state; pipes are close-on-exec, and other descriptors are
 * closed in the child where glibc allows).
 *
 * @return 0;
 *   ASB_ECONFIG when interactiveMode is Always (no terminal), the command
 *   can not be found or run (the install hint is quoted), or it exits
 *   non-zero or dies from a signal (its stderr is quoted, at most
 *   K8S_EXEC_STDERR_QUOTE bytes);
 *   ASB_ETIMEOUT when it runs longer than `timeout_ms` (its process group
 *   is killed);
 *   ASB_EDECODE when its output is not a valid ExecCredential (see
 *   k8s__exec_credential_parse()) or is larger than K8S_EXEC_OUTPUT_MAX;
 *   ASB_ENOMEM; ASB_ERROR when a pipe can not be made.
 */
K8S_EXTERN int k8s__exec_run(const k8s__exec_config *e, long timeout_ms,
                             k8s__exec_credential *out);

#endif
