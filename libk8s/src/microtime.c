/*
 * microtime.c - meta/v1 MicroTime formatting (see microtime.h).
 */
#include <stdio.h>
#include <time.h>
#include "microtime.h"

int64_t k8s__now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

char *k8s__microtime_format(int64_t us, char *buf, size_t cap)
{
	/* Floor division, so that instants before 1970 keep a positive fraction. */
	int64_t secs = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
	long frac = (long)(us - secs * 1000000);
	time_t t = (time_t)secs;
	struct tm tm;
	char date[24];
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, cap, "%s.%06ldZ", date, frac);
	return buf;
}
