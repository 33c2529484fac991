/*
 * heap.c - glibc malloc tuning for a process of many threads and a large,
 * long-lived cache (see heap.h).
 */
#include <malloc.h>
#include <stdlib.h>
#include <unistd.h>
#include "heap.h"

#define MAX_ARENAS 4

void heap_limit_arenas(void)
{
	if (getenv("MALLOC_ARENA_MAX"))
		return;   /* the operator's choice, read by glibc itself */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus < 1 ? 1 : cpus > MAX_ARENAS ? MAX_ARENAS : (int)cpus;
	mallopt(M_ARENA_MAX, n);
}

void heap_trim(void)
{
	malloc_trim(0);
}
