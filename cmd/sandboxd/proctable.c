/*
 * proctable.c - ids and the cap (proctable.h): a small array, since the
 * cap keeps it short (linear lookups over at most --max-processes items).
 */
#include <stdlib.h>

#include "asb/array.h"
#include "asb/common.h"
#include "proctable.h"

typedef struct {
	int32_t id;
	void *item;
} slot;

struct sbxd_proctable {
	unsigned int max, running;
	int32_t next_id;
	slot *v;
	size_t len, cap;
};

int sbxd_proctable_new(sbxd_proctable **out, unsigned int max)
{
	*out = NULL;
	if (max == 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "the process limit must be >= 1");
	sbxd_proctable *t = calloc(1, sizeof(*t));
	if (!t)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	t->max = max;
	t->next_id = 1;
	*out = t;
	return 0;
}

void sbxd_proctable_free(sbxd_proctable *t)
{
	if (!t)
		return;
	free(t->v);
	free(t);
}

int sbxd_proctable_acquire(sbxd_proctable *t)
{
	if (t->running >= t->max)
		return asb_error_set(ASB_ETOOMANYREQUESTS, 429, NULL,
		                     "too many processes: %u running, the limit is %u",
		                     t->running, t->max);
	t->running++;
	return 0;
}

void sbxd_proctable_release(sbxd_proctable *t)
{
	if (t->running > 0)
		t->running--;
}

unsigned int sbxd_proctable_running(const sbxd_proctable *t)
{
	return t->running;
}

int32_t sbxd_proctable_add(sbxd_proctable *t, void *item)
{
	if (ASB_ARRAY_GROW(t->v, t->cap, t->len + 1, 16))
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	int32_t id = t->next_id;
	/* wraps after 2^31-1 starts; ids of ended processes are long gone */
	t->next_id = t->next_id == INT32_MAX ? 1 : t->next_id + 1;
	t->v[t->len++] = (slot){ id, item };
	return id;
}

void *sbxd_proctable_get(const sbxd_proctable *t, int32_t id)
{
	for (size_t i = 0; i < t->len; i++)
		if (t->v[i].id == id)
			return t->v[i].item;
	return NULL;
}

void sbxd_proctable_remove(sbxd_proctable *t, int32_t id)
{
	for (size_t i = 0; i < t->len; i++)
		if (t->v[i].id == id) {
			t->v[i] = t->v[--t->len];
			return;
		}
}

void sbxd_proctable_each(const sbxd_proctable *t, void (*fn)(int32_t id, void *item, void *ud),
                         void *ud)
{
	for (size_t i = 0; i < t->len; i++)
		fn(t->v[i].id, t->v[i].item, ud);
}
