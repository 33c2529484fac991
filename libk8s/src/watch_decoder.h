/*
 * watch_decoder.h - framing of a watch stream into events.
 *
 * Private to libk8s. The body of `GET ...?watch=1` is a sequence of JSON
 * meta/v1 WatchEvent objects, {"type": ..., "object": {...}}, each ended by
 * a newline. The transport hands over bytes in chunks that may be cut
 * anywhere (inside a UTF-8 character, a JSON string, a number); this push
 * decoder buffers the incomplete tail, parses each complete line and calls
 * back once per event. ERROR events are not passed on: their Status is
 * decoded into an error code (410 Gone/Expired => ASB_EGONE) that ends the
 * stream.
 *
 * A decoder is used by one thread at a time. Exported (K8S_EXTERN) only for
 * the unit tests; not part of the public API.
 */
#ifndef K8S_WATCH_DECODER_H
#define K8S_WATCH_DECODER_H

#include <stddef.h>
#include <cjson/cJSON.h>
#include "k8s/client.h"

/** Default bound on one event line (the API server's own limit is lower). */
#define K8S_WATCH_MAX_LINE_DEFAULT ((size_t)64 << 20)

/** Returned by k8s__watch_decoder_feed() when the callback asked to stop. */
#define K8S__WATCH_STOPPED 1

typedef struct k8s__watch_decoder k8s__watch_decoder;

/**
 * Called once per ADDED, MODIFIED, DELETED or BOOKMARK event, in stream
 * order; takes ownership of `object`. Returns 0 to go on, non-zero to stop.
 * (Same shape as the public k8s_watch_fn.)
 */
typedef k8s_watch_fn k8s__watch_event_fn;

/**
 * Creates a decoder.
 *
 * @param out       receives the decoder; free with k8s__watch_decoder_free().
 * @param max_line  largest event line accepted, in bytes; 0: the default.
 * @param subject   names the watch in error messages (e.g.
 *                  `watch Pod in "default"`); copied. NULL: "watch".
 * @param fn        the event callback; `userdata` is passed to it.
 * @return 0 or ASB_ENOMEM / ASB_EINVAL.
 */
K8S_EXTERN int k8s__watch_decoder_new(k8s__watch_decoder **out, size_t max_line,
                                      const char *subject,
                                      k8s__watch_event_fn fn, void *userdata);

/**
 * Feeds `len` bytes of the stream. Every event completed by these bytes is
 * parsed and delivered before this returns.
 *
 * @return 0 when all bytes were consumed; K8S__WATCH_STOPPED when the
 *         callback returned non-zero (the rest is dropped); a negative code
 *         with the error recorded: ASB_EDECODE for a line that is not a
 *         WatchEvent (not JSON, not an object, unknown type, no object) or
 *         longer than the maximum, or the code of an ERROR event's Status.
 *         Once it has stopped or failed, the decoder returns the same value
 *         for every later call without looking at the data.
 */
K8S_EXTERN int k8s__watch_decoder_feed(k8s__watch_decoder *d, const char *data,
                                       size_t len);

/**
 * Ends the stream. A last event that lacks only its newline is delivered;
 * anything else left over is a truncated event (ASB_EDECODE).
 * Returns as k8s__watch_decoder_feed().
 */
K8S_EXTERN int k8s__watch_decoder_finish(k8s__watch_decoder *d);

/** Number of events delivered so far (for logs and tests). */
K8S_EXTERN size_t k8s__watch_decoder_events(const k8s__watch_decoder *d);

/** Frees the decoder and any buffered bytes; NULL is accepted. */
K8S_EXTERN void k8s__watch_decoder_free(k8s__watch_decoder *d);

#endif
