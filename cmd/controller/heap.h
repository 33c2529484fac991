/*
 * heap.h - how the controller keeps its heap small (glibc malloc tuning).
 */
#ifndef CONTROLLER_HEAP_H
#define CONTROLLER_HEAP_H

/** Period of heap_trim() from the main thread, ms. */
#define HEAP_TRIM_PERIOD_MS 60000

/**
 * Limits malloc to a few arenas (the number of CPUs, at most 4), unless
 * MALLOC_ARENA_MAX is set in the environment. glibc gives each thread that
 * allocates an arena of its own, up to 8 per CPU: with a hundred workers,
 * each arena keeps the high-water mark of the reconciles that ran in it,
 * which under a burst was two thirds of the controller's growth. Call
 * first thing in main(), before any thread starts. Never fails.
 */
void heap_limit_arenas(void);

/**
 * Gives the kernel back the free pages of every arena (malloc_trim(0)):
 * what a LIST page or a burst of reconciles freed but glibc keeps mapped.
 * Called after the caches sync and every HEAP_TRIM_PERIOD_MS; costs a walk
 * of the free lists (a few ms at tens of MiB). Thread-safe.
 */
void heap_trim(void);

#endif
