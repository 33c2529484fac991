/*
 * signals.h - the stop signals of a long-running program, taken
 * synchronously with sigwait() by its main thread (the controller, the
 * router and sandboxd all shut down this way).
 */
#ifndef ASB_SIGNALS_H
#define ASB_SIGNALS_H

#include <signal.h>
#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Blocks SIGTERM, SIGINT and `extra` (0: none) on the calling thread,
 * restores their default dispositions, and fills `set` with them for
 * sigwait(). Call it first thing in main(), before any thread starts, so
 * that every thread inherits the mask and a signal in the first
 * milliseconds is still a clean stop. The dispositions matter because a
 * shell starting a program in the background sets SIGINT to "ignore", and
 * an ignored signal is discarded even while blocked.
 *
 * Changes process-wide dispositions: call once, from the main thread.
 * Cannot fail for valid signal numbers; `extra` out of range is left out.
 */
ASB_EXTERN void asb_signals_block_stop(sigset_t *set, int extra);

#ifdef __cplusplus
}
#endif

#endif
