/*
 * informer_internal.h - entry points into the informer's cache logic without
 * a server, for the unit tests: they feed events and lists by hand to an
 * informer that was created but never started. Private to libk8s.
 */
#ifndef K8S_INFORMER_INTERNAL_H
#define K8S_INFORMER_INTERNAL_H

#include "k8s/informer.h"

/**
 * Applies one watch event as the informer thread would (transform, codec,
 * cache, indexes, handlers), taking ownership of `obj`. Only on an informer
 * that is not started (the informer thread is the cache's only writer).
 */
void k8s__informer_apply(k8s_informer *inf, k8s_watch_event_type type, cJSON *obj);

/**
 * Applies a complete LIST answer as a relist does: upserts for `items` (a
 * cJSON array, emptied), deletes for cached objects not among them, and
 * `rv` as the last resourceVersion. Same restriction as above.
 */
void k8s__informer_replace(k8s_informer *inf, cJSON *items, const char *rv);

#endif
