/*
 * clock.c - monotonic condition variables and deadlines (asb/clock.h).
 */
#include "asb/clock.h"

int asb_cond_init_monotonic(pthread_cond_t *cond)
{
	pthread_condattr_t ca;
	int err = pthread_condattr_init(&ca);
	if (err)
		return err;
	err = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(cond, &ca);
	pthread_condattr_destroy(&ca);
	return err;
}

void asb_deadline_after_ms(struct timespec *ts, long ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}
