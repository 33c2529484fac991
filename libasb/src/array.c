/*
 * array.c - doubling growth of plain C arrays (asb/array.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "asb/array.h"

int asb_array_grow(void *items_ptr, size_t *cap, size_t want,
                   size_t elem_size, size_t first)
{
	if (want <= *cap)
		return ASB_OK;
	size_t n = *cap ? *cap : (first ? first : 1);
	while (n < want) {
		if (n > SIZE_MAX / 2)
			return ASB_ENOMEM;
		n *= 2;
	}
	if (elem_size && n > SIZE_MAX / elem_size)
		return ASB_ENOMEM;
	/* The pointer is read and written through memcpy: items_ptr points to
	 * a `T *`, which must not be accessed as a `void *` lvalue. */
	void *items;
	memcpy(&items, items_ptr, sizeof(items));
	void *grown = realloc(items, n * elem_size);
	if (!grown)
		return ASB_ENOMEM;
	memcpy(items_ptr, &grown, sizeof(grown));
	*cap = n;
	return ASB_OK;
}
