/*
 * clock.h - timed waits on CLOCK_MONOTONIC: condition variables whose
 * pthread_cond_timedwait() deadlines are monotonic (a wall-clock step never
 * shortens or stretches a wait), and the deadline "now + ms" for them.
 */
#ifndef ASB_CLOCK_H
#define ASB_CLOCK_H

#include <pthread.h>
#include <time.h>
#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Initialises `cond` (default attributes otherwise) so that its timed waits
 * take CLOCK_MONOTONIC deadlines, as asb_deadline_after_ms() makes them.
 * Destroy it with pthread_cond_destroy().
 *
 * @return 0, or the pthread error number (e.g. ENOMEM) when it could not be
 *         initialised (nothing is recorded in the last error).
 * Thread-safety: as pthread_cond_init().
 */
ASB_EXTERN int asb_cond_init_monotonic(pthread_cond_t *cond);

/**
 * Sets `*ts` to CLOCK_MONOTONIC now plus `ms` milliseconds (`ms` >= 0),
 * normalised (tv_nsec below one second), for pthread_cond_timedwait() on a
 * condition made by asb_cond_init_monotonic(). Thread-safe.
 */
ASB_EXTERN void asb_deadline_after_ms(struct timespec *ts, long ms);

#ifdef __cplusplus
}
#endif
#endif
