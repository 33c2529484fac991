/*
 * array.h - growing a plain C array (pointer + capacity) by doubling, the
 * one place that does the arithmetic and the overflow checks that each
 * "if (n == cap) realloc(cap * 2)" used to repeat.
 */
#ifndef ASB_ARRAY_H
#define ASB_ARRAY_H

#include <stddef.h>
#include "asb/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Makes room for at least `want` elements of `elem_size` bytes in the array
 * whose pointer is at `items_ptr` (a `T **`, passed as `void *`; the
 * pointer may be NULL when `*cap` is 0) and whose capacity in elements is
 * `*cap`. When `want` exceeds `*cap`, the capacity becomes `first` (when it
 * was 0) or doubles, as many times as needed, and the array is reallocated;
 * otherwise nothing changes.
 *
 * Ownership: the array stays the caller's (free it with free()); on failure
 * it is unchanged and still valid.
 * @return 0, or ASB_ENOMEM when the allocation fails or the size would
 *         overflow (nothing is recorded in the last error: callers say what
 *         they were growing).
 * Thread-safety: none; the caller owns the array.
 */
ASB_EXTERN int asb_array_grow(void *items_ptr, size_t *cap, size_t want,
                              size_t elem_size, size_t first);

/** asb_array_grow() for an lvalue array `items` with capacity lvalue `cap`. */
#define ASB_ARRAY_GROW(items, cap, want, first) \
	asb_array_grow(&(items), &(cap), (want), sizeof(*(items)), (first))

#ifdef __cplusplus
}
#endif
#endif
