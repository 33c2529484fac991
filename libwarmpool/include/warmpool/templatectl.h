/*
 * templatectl.h - the SandboxTemplate controller (docs/api.md#sandboxtemplate-controller): labels
 * each template with its sandbox-template-ref-hash and keeps the per-template
 * NetworkPolicy `<template>-network-policy` (Managed / Unmanaged).
 *
 * Lifecycle: _new() registers its informer handlers (so it must be called
 * before the informers start), _start() starts the workers (once the caches
 * synced, and under leader election once leading), _stop() drains them,
 * _free() releases. Thread-safety: _reconcile() may run on any number of
 * workers at once (never twice for one key); the other calls are made by
 * one thread.
 */
#ifndef WARMPOOL_TEMPLATECTL_H
#define WARMPOOL_TEMPLATECTL_H

#include "k8s/client.h"
#include "k8s/controller.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "warmpool/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wp_template_controller wp_template_controller;

#define WP_TEMPLATE_CONTROLLER_OPTIONS_VERSION 1

/** Options; initialise with WP_TEMPLATE_CONTROLLER_OPTIONS_INIT. */
typedef struct {
	unsigned int version;             /**< WP_TEMPLATE_CONTROLLER_OPTIONS_VERSION */
	k8s_client *client;               /**< required; borrowed */
	k8s_informer *templates;          /**< required; borrowed; SandboxTemplates (not started) */
	k8s_informer *networkpolicies;    /**< required; borrowed; NetworkPolicies (not started) */
	int workers;                      /**< `--sandbox-template-concurrent-workers`; <= 0: 1 */
	asb_logger *logger;               /**< borrowed; NULL: silent */
	asb_metrics_registry *metrics;    /**< borrowed; NULL: none; controller/workqueue metrics */
	k8s_event_recorder *events;       /**< borrowed; NULL: none */
} wp_template_controller_options;

#define WP_TEMPLATE_CONTROLLER_OPTIONS_INIT { .version = WP_TEMPLATE_CONTROLLER_OPTIONS_VERSION, .workers = 1 }

/**
 * Creates the controller (workers not started) and registers its handlers
 * on the informers. @return 0; ASB_EINVAL (NULL/unknown version/required
 * handle missing, informer already started); ASB_ENOMEM.
 */
WP_EXTERN int wp_template_controller_new(wp_template_controller **out,
                                         const wp_template_controller_options *opts);
/** Starts the workers. @return 0, ASB_EINVAL (started twice), ASB_ERROR. */
WP_EXTERN int wp_template_controller_start(wp_template_controller *c);
/** Stops and joins the workers (reconciles in flight finish). Idempotent. */
WP_EXTERN void wp_template_controller_stop(wp_template_controller *c);
/** Frees; NULL accepted. Stop first. */
WP_EXTERN void wp_template_controller_free(wp_template_controller *c);
/**
 * Reconciles the SandboxTemplate `key` ("namespace/name") once.
 * @return 0 or a ASB_E* code with the message in asb_error_last().
 */
WP_EXTERN int wp_template_controller_reconcile(wp_template_controller *c, const char *key,
                                               k8s_reconcile_result *res);

#ifdef __cplusplus
}
#endif
#endif
