/*
 * proctable.h - process ids and the concurrent-process cap. Ids are the
 * daemon's own counter from 1 (docs/upstream.md#process-semantics), handed to processes
 * started through the streaming API so that stdin, signal and resize
 * requests can find them; buffered executions take a slot of the cap but
 * no id. Not thread-safe: used on the server's loop thread only.
 */
#ifndef SBXD_PROCTABLE_H
#define SBXD_PROCTABLE_H

#include <stdint.h>

typedef struct sbxd_proctable sbxd_proctable;

/** Creates a table admitting `max` (>= 1) processes at once. 0 or ASB_ENOMEM/ASB_EINVAL. */
int sbxd_proctable_new(sbxd_proctable **out, unsigned int max);

/** Frees the table (not the items); NULL is accepted. */
void sbxd_proctable_free(sbxd_proctable *t);

/**
 * Takes a slot of the cap before a process is started. Returns 0, or
 * ASB_ETOOMANYREQUESTS ("too many processes: N running, the limit is N").
 */
int sbxd_proctable_acquire(sbxd_proctable *t);

/** Gives a slot back (the process ended or never started). */
void sbxd_proctable_release(sbxd_proctable *t);

/** Slots in use. */
unsigned int sbxd_proctable_running(const sbxd_proctable *t);

/**
 * Registers `item` (borrowed) under the next id, which it returns (> 0),
 * or ASB_ENOMEM (< 0).
 */
int32_t sbxd_proctable_add(sbxd_proctable *t, void *item);

/** The item registered under `id`, or NULL. */
void *sbxd_proctable_get(const sbxd_proctable *t, int32_t id);

/** Unregisters `id` (no-op when unknown). */
void sbxd_proctable_remove(sbxd_proctable *t, int32_t id);

/** Calls `fn` for every registered item (it must not add or remove). */
void sbxd_proctable_each(const sbxd_proctable *t, void (*fn)(int32_t id, void *item, void *ud),
                         void *ud);

#endif
