/*
 * status.h - turning an API server's failure answer into a libk8s error.
 *
 * Private to libk8s. A failed request answers with a meta/v1 `Status`
 * object (https://kubernetes.io/docs/reference/using-api/api-concepts/),
 * or, from proxies and very old servers, with anything at all. These
 * helpers classify the answer into an asb_error_code and record the
 * thread-local error whose message names the object the request was about.
 * They live in status.c, next to the reason table they use.
 *
 * They are exported (K8S_EXTERN) only so that the unit tests, which link the
 * shared library, can reach them; they are not part of the public API and
 * may change at any time.
 */
#ifndef K8S_STATUS_H
#define K8S_STATUS_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "k8s/common.h"

/**
 * Records the error of a non-2xx answer and returns its code.
 *
 * @param http_status  the HTTP status of the answer (e.g. 404).
 * @param body         the answer's body, not NUL-terminated; may be NULL.
 * @param len          bytes in `body`.
 * @param subject      what the request was about, e.g. `Pod "default/x"`;
 *                     it prefixes the message. NULL: no prefix.
 *
 * When the body is a Status, the message is
 * `SUBJECT: STATUS.MESSAGE (REASON)` followed by `; FIELD: CAUSE` for each
 * entry of `details.causes` that the message does not already contain, and
 * the code comes from the reason (see k8s_error_code_from_status()). When it
 * is not, the code comes from the HTTP status and the message quotes the
 * start of the body (control characters replaced, at most 200 bytes).
 */
K8S_EXTERN int k8s__status_record(int http_status, const char *body,
                                  size_t len, const char *subject);

/**
 * As k8s__status_record() for a Status already parsed, such as the object
 * of a watch ERROR event. `http_status` 0 means "take `status.code`".
 * A `status` that is not a JSON object records ASB_EDECODE.
 */
K8S_EXTERN int k8s__status_record_json(const cJSON *status, int http_status,
                                       const char *subject);

#endif
