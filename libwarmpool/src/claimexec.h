/*
 * claimexec.h - the I/O of a claim pass (claimctl.c) as one table of
 * callbacks, as libsandbox's sbx_executor is for the Sandbox reconciler:
 * the cache reads the pass starts from, the authoritative re-reads of
 * docs/api.md#claim-adoption, every API write and the events. The default
 * table (wp_claim_executor_k8s()) does them through the informers, the
 * client and the event recorder; the unit tests put a recording one in its
 * place and drive whole passes from fixtures, with no API server.
 * Private to libwarmpool.
 */
#ifndef WP_CLAIMEXEC_H
#define WP_CLAIMEXEC_H

#include <cjson/cJSON.h>
#include "k8s/client.h"
#include "k8s/events.h"
#include "k8s/controller.h"
#include "k8s/informer.h"
#include "warmpool/claimctl.h"
#include "warmqueue.h"

/*
 * The callbacks. `r` is one of wp_resource_claims, wp_resource_pools,
 * wp_resource_templates, wp_resource_networkpolicies or
 * sbx_resource_sandboxes (compare pointers). Each returns 0 or an ASB_E*
 * code with asb_error_last() set, as the k8s_client_* call it stands for;
 * *out (may be NULL where noted) receives an owned object on success.
 * Called from the controller's workers concurrently: thread-safe.
 */
typedef struct {
	/** Cache read (k8s_informer_get()); claims, Sandboxes, pools, templates,
	 * NetworkPolicies; ASB_EINVAL for a resource without a cache. */
	int (*cached)(void *ud, const k8s_resource *r, const char *ns, const char *name,
	              cJSON **out);
	/**
	 * Cache read of a Sandbox in `ns` whose controller ownerReference is
	 * the SandboxClaim of UID `claim_uid` (the first found); 0 with *out
	 * owned, or ASB_ENOTFOUND.
	 */
	int (*controlled)(void *ud, const char *ns, const char *claim_uid, cJSON **out);
	/** Authoritative read (k8s_client_get()). */
	int (*get)(void *ud, const k8s_resource *r, const char *ns, const char *name,
	           cJSON **out);
	/** JSON merge patch of `name` (its `subresource` when not NULL); out may be NULL. */
	int (*patch)(void *ud, const k8s_resource *r, const char *ns, const char *name,
	             const char *subresource, const cJSON *patch, cJSON **out);
	/** Create of `obj`. */
	int (*create)(void *ud, const k8s_resource *r, const char *ns, const cJSON *obj,
	              cJSON **out);
	/** Delete of `name`; `opts` may be NULL. */
	int (*del)(void *ud, const k8s_resource *r, const char *ns, const char *name,
	           const k8s_delete_options *opts);
	/** A Normal event about `claim` (docs/api.md#events); never fails the pass. */
	void (*event)(void *ud, const cJSON *claim, const char *reason, const char *action,
	              const char *note);
	void *userdata;   /**< passed to every callback */
} wp_claim_executor;

/* The claim controller's index on the Sandbox informer: the UID of a
 * Sandbox's controller when that is a SandboxClaim. */
#define WP_CLAIM_INDEX_CONTROLLER "claimctl:controller-claim-uid"

/* What the default executor works on; all borrowed. */
typedef struct {
	k8s_client *client;
	k8s_informer *claims, *sandboxes, *pools, *templates;
	k8s_event_recorder *events;   /* NULL: no events recorded */
	k8s_informer *networkpolicies; /* NULL: not cached (cached() answers ASB_EINVAL) */
} wp_claim_k8s;

/* Fills `ex` with the informer/client/recorder executor over `k` (which
 * must outlive `ex`). */
void wp_claim_executor_k8s(wp_claim_executor *ex, wp_claim_k8s *k);

/* For the unit tests: replace the controller's executor (before any pass
 * runs; `ex` is copied), hand out its warm queue to fill, and record a
 * claim's first observation as the claim informer's add handler does. */
void wp__claim_controller_set_executor(wp_claim_controller *c, const wp_claim_executor *ex);
wp_warm_queue *wp__claim_controller_queue(wp_claim_controller *c);
void wp__claim_controller_observe(wp_claim_controller *c, const cJSON *claim);
/* The controller's k8s_controller (its work queue makes a backlog for
 * wp_claim_controller_pending()). */
k8s_controller *wp__claim_controller_ctl(wp_claim_controller *c);

#endif
