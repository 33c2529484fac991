/*
 * client_internal.h - what the files of the client side share: the
 * sbx_client structure (its reference count lets handles outlive the
 * caller's reference), the SandboxClaim resource, and small helpers.
 * Private to libsandbox.
 */
#ifndef SBX_CLIENT_INTERNAL_H
#define SBX_CLIENT_INTERNAL_H

#include <stdatomic.h>
#include "k8s/client.h"
#include "k8s/config.h"
#include "asb/log.h"
#include "sandbox/client.h"

struct sbx_client {
	atomic_int refs;          /* the caller's + one per handle */
	k8s_config *config;
	k8s_client *k8s;
	asb_logger *logger;       /* borrowed */
	char *kubeconfig;         /* as given, or "" */
	char *context;            /* as given, or "" */
	char *user_agent;
};

/* extensions.agents.x-k8s.io/v1beta1 sandboxclaims (libwarmpool has the
 * same constant; libsandbox sits below it and keeps its own). */
extern const k8s_resource sbx__resource_claims;

/* Takes one more reference to `c`. */
void sbx__client_ref(sbx_client *c);
/* Drops one reference; the last frees the client. */
void sbx__client_unref(sbx_client *c);

/* `ns` when non-empty, else the client's namespace. */
const char *sbx__ns_or_default(const sbx_client *c, const char *ns);

/* A copy of `s` (NULL: NULL); sets *rc to ASB_ENOMEM when it fails. */
char *sbx__strdup(const char *s, int *rc);

/*
 * The wait of sbx_client_create() / sbx_client_wait_claim(): one watch on
 * claim ns/name from resourceVersion `rv` (NULL or "": "0") until it
 * resolves (client_wait.c).
 */
int sbx__client_wait(sbx_client *c, const char *ns, const char *name, const char *rv,
                     bool need_ready, long timeout_ms, const atomic_int *cancel,
                     sbx_claim_info **out);

/* Sleeps `ms` milliseconds (interrupted sleeps resume). */
void sbx__sleep_ms(long ms);

#endif
