/*
 * webhook.h - the controller's conversion webhook: its flags, the
 * self-managed serving certificate (Secret agent-sandbox-webhook-certs,
 * docs/upstream.md#webhook-certificates), the CRD conversion patch, and the HTTPS server
 * answering POST /convert (libsandbox/conversion.h).
 *
 * Served on every replica from startup, leader or not: the API server
 * calls whichever replica the Service picks, and a conversion is needed
 * before any cache can sync.
 */
#ifndef CONTROLLER_WEBHOOK_H
#define CONTROLLER_WEBHOOK_H

#include <stdbool.h>
#include "k8s/client.h"
#include "asb/log.h"
#include "asb/metrics.h"
#include "webhook_flags.h"

/** Name of the Secret holding ca.crt, tls.crt and tls.key. */
#define WEBHOOK_SECRET_NAME "agent-sandbox-webhook-certs"
/** Path the API server posts ConversionReviews to. */
#define WEBHOOK_PATH "/convert"

typedef struct webhook webhook;

/**
 * Prepares the certificates (docs/upstream.md#webhook-certificates), patches the four CRDs' conversion
 * config (those that exist and use Webhook conversion) and starts the
 * HTTPS server. With --enable-webhook=false logs the notice of docs/upstream.md#startup-validation and
 * returns a webhook that does nothing. `client`, `log` and `metrics` are
 * borrowed and must outlive the webhook; `cluster_domain` is copied.
 *
 * `metrics` (NULL: none) gets the families of controller-runtime's webhook
 * server for webhook="/convert" (docs/controller.md#metrics): requests
 * answered by status code, requests in flight and a latency histogram,
 * only while serving; and its two panic counters, always, at 0.
 *
 * Returns 0 or a negative ASB_E* code (message in asb_error_last()).
 */
int webhook_start(webhook **out, const webhook_flags *flags, const char *cluster_domain,
                  k8s_client *client, asb_logger *log, asb_metrics_registry *metrics);

/** Stops serving (requests in flight get `timeout_ms`) and frees; NULL accepted. */
void webhook_free(webhook *w, long timeout_ms);

#endif
