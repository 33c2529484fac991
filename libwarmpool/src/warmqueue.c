/*
 * warmqueue.c - the warm sandbox queue and its picker and feeder rules
 * (docs/api.md#claim-adoption, #warm-queue).
 *
 * A pool list is an array in queue order: picking needs a scan of the
 * whole list anyway (NodeSpread counts items per node, O(n) with a hash
 * table), pools hold at most a few hundred warm Sandboxes, and the array
 * keeps order and memory simple. Pools are found by a linear scan too (a namespace has few).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "asb/array.h"
#include "warmqueue.h"
#include "jsonutil.h"
#include "k8s/common.h"
#include "k8s/object.h"
#include "warmpool/api.h"

typedef struct {
	char *key;             /* "<ns>/<pool>" */
	wp_warm_item *items;   /* oldest first */
	size_t n, cap;
} pool_list;

struct wp_warm_queue {
	pthread_mutex_t lock;  /* guards everything below */
	pool_list *pools;
	size_t n, cap;
};

void wp_warm_item_clear(wp_warm_item *it)
{
	if (!it)
		return;
	free(it->namespace_);
	free(it->name);
	free(it->node_name);
	it->namespace_ = it->name = it->node_name = NULL;
}

int wp_warm_queue_new(wp_warm_queue **out)
{
	wp_warm_queue *q = calloc(1, sizeof(*q));
	if (!q)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	pthread_mutex_init(&q->lock, NULL);
	*out = q;
	return 0;
}

static void pool_clear(pool_list *p)
{
	for (size_t i = 0; i < p->n; i++)
		wp_warm_item_clear(&p->items[i]);
	free(p->items);
	free(p->key);
}

void wp_warm_queue_free(wp_warm_queue *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		pool_clear(&q->pools[i]);
	free(q->pools);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* The list of `key`, or NULL. Lock held. */
static pool_list *pool_find(wp_warm_queue *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->pools[i].key, key) == 0)
			return &q->pools[i];
	return NULL;
}

static pool_list *pool_get(wp_warm_queue *q, const char *key)
{
	pool_list *p = pool_find(q, key);
	if (p)
		return p;
	if (ASB_ARRAY_GROW(q->pools, q->cap, q->n + 1, 8))
		return NULL;
	char *k = strdup(key);
	if (!k)
		return NULL;
	p = &q->pools[q->n++];
	*p = (pool_list){ .key = k };
	return p;
}

static ssize_t item_find(const pool_list *p, const char *ns, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->items[i].name, name) == 0 &&
		    strcmp(p->items[i].namespace_, ns) == 0)
			return (ssize_t)i;
	return -1;
}

static void item_remove_at(pool_list *p, size_t i)
{
	wp_warm_item_clear(&p->items[i]);
	memmove(&p->items[i], &p->items[i + 1], (p->n - i - 1) * sizeof(p->items[0]));
	p->n--;
}

int wp_warm_queue_push(wp_warm_queue *q, const char *pool_key, const char *ns,
                       const char *name, const char *node)
{
	if (!q || ju_empty(pool_key) || ju_empty(ns) || ju_empty(name))
		return asb_error_set(ASB_EINVAL, 0, NULL,
		                     "wp_warm_queue_push: missing pool key, namespace or name");
	int rc = 0;
	pthread_mutex_lock(&q->lock);
	pool_list *p = pool_get(q, pool_key);
	if (!p) {
		rc = ASB_ENOMEM;
		goto out;
	}
	ssize_t at = item_find(p, ns, name);
	char *nd = strdup(ju_nz(node));
	if (!nd) {
		rc = ASB_ENOMEM;
		goto out;
	}
	if (at >= 0) {  /* dedupe: position kept, node refreshed */
		free(p->items[at].node_name);
		p->items[at].node_name = nd;
		goto out;
	}
	if (ASB_ARRAY_GROW(p->items, p->cap, p->n + 1, 16)) {
		free(nd);
		rc = ASB_ENOMEM;
		goto out;
	}
	wp_warm_item it = { strdup(ns), strdup(name), nd };
	if (!it.namespace_ || !it.name) {
		wp_warm_item_clear(&it);
		rc = ASB_ENOMEM;
		goto out;
	}
	p->items[p->n++] = it;
out:
	pthread_mutex_unlock(&q->lock);
	if (rc)
		asb_error_set(rc, 0, NULL, "out of memory");
	return rc;
}

bool wp_warm_queue_remove(wp_warm_queue *q, const char *pool_key,
                          const char *ns, const char *name)
{
	if (!q || !pool_key || !ns || !name)
		return false;
	bool found = false;
	pthread_mutex_lock(&q->lock);
	pool_list *p = pool_find(q, pool_key);
	ssize_t at = p ? item_find(p, ns, name) : -1;
	if (at >= 0) {
		item_remove_at(p, (size_t)at);
		found = true;
	}
	pthread_mutex_unlock(&q->lock);
	return found;
}

void wp_warm_queue_drop(wp_warm_queue *q, const char *pool_key)
{
	if (!q || !pool_key)
		return;
	pthread_mutex_lock(&q->lock);
	pool_list *p = pool_find(q, pool_key);
	if (p) {
		pool_clear(p);
		*p = q->pools[--q->n];
	}
	pthread_mutex_unlock(&q->lock);
}

size_t wp_warm_queue_len(wp_warm_queue *q, const char *pool_key)
{
	if (!q || !pool_key)
		return 0;
	pthread_mutex_lock(&q->lock);
	pool_list *p = pool_find(q, pool_key);
	size_t n = p ? p->n : 0;
	pthread_mutex_unlock(&q->lock);
	return n;
}

static uint32_t str_hash(const char *s)
{
	uint32_t h = 0x811c9dc5u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x01000193u;
	return h;
}

/* One slot of the picker's node table: a node, its count, its first item. */
typedef struct {
	const char *node;
	size_t count, first;
} node_slot;

size_t wp_warm_pick(const wp_warm_item *items, size_t n)
{
	if (n == 0)
		return (size_t)-1;
	if (n == 1)
		return 0;
	/* Count items per node in an open-addressing table (O(n)); the winner
	 * is the node with the highest count, ties to the node whose first
	 * item is queued earliest, and its first item is the earliest-queued
	 * key among the nodes with the highest count. */
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	node_slot stack[64];
	node_slot *tab = cap <= 64 ? stack : calloc(cap, sizeof(*tab));
	if (tab == stack)
		memset(stack, 0, sizeof(stack));
	if (!tab)
		return 0;  /* out of memory: plain FIFO is still correct */
	size_t best = (size_t)-1, best_count = 0;
	for (size_t i = 0; i < n; i++) {
		const char *node = items[i].node_name;
		if (ju_empty(node))
			continue;
		size_t h = str_hash(node) & (cap - 1);
		while (tab[h].node && strcmp(tab[h].node, node) != 0)
			h = (h + 1) & (cap - 1);
		if (!tab[h].node)
			tab[h] = (node_slot){ node, 0, i };
		tab[h].count++;
		if (tab[h].count > best_count ||
		    (tab[h].count == best_count && tab[h].first < best)) {
			best_count = tab[h].count;
			best = tab[h].first;
		}
	}
	if (tab != stack)
		free(tab);
	return best == (size_t)-1 ? 0 : best;
}

int wp_warm_queue_pop(wp_warm_queue *q, const char *pool_key, wp_warm_item *out)
{
	memset(out, 0, sizeof(*out));
	if (!q || !pool_key)
		return ASB_ENOTFOUND;
	int rc = ASB_ENOTFOUND;
	pthread_mutex_lock(&q->lock);
	pool_list *p = pool_find(q, pool_key);
	if (p && p->n > 0) {
		size_t i = wp_warm_pick(p->items, p->n);
		*out = p->items[i];  /* ownership moves to the caller */
		memmove(&p->items[i], &p->items[i + 1], (p->n - i - 1) * sizeof(p->items[0]));
		p->n--;
		rc = 0;
	}
	pthread_mutex_unlock(&q->lock);
	return rc;
}

/* ---- feeder ---- */

static bool is_pool_ref(const cJSON *ref)
{
	char group[128];
	return ju_str_eq(ju_str(ref, "kind"), SBX_KIND_WARM_POOL) &&
	       strcmp(ju_api_group(ju_str(ref, "apiVersion"), group, sizeof(group)),
	              SBX_EXTENSIONS_GROUP) == 0;
}

const char *wp_warm_pool_owner(const cJSON *sbx)
{
	const cJSON *ctrl = k8s_obj_controller_ref(sbx);
	if (ctrl && is_pool_ref(ctrl))
		return ju_str(ctrl, "name");
	const cJSON *r;
	cJSON_ArrayForEach(r, k8s_obj_at(sbx, "metadata.ownerReferences"))
		if (ju_str_eq(ju_str(r, "kind"), SBX_KIND_WARM_POOL))
			return ju_str(r, "name");
	return NULL;
}

bool wp_warm_adoptable(const cJSON *sbx)
{
	if (!sbx || k8s_obj_is_deleting(sbx))
		return false;
	if (ju_empty(k8s_obj_label(sbx, SBX_LABEL_WARM_POOL_SANDBOX)) ||
	    ju_empty(k8s_obj_label(sbx, SBX_LABEL_TEMPLATE_REF_HASH)))
		return false;
	const cJSON *ctrl = k8s_obj_controller_ref(sbx);
	return ctrl && is_pool_ref(ctrl);
}

bool wp_warm_should_push(const cJSON *old_obj, const cJSON *new_obj)
{
	if (!wp_warm_adoptable(new_obj))
		return false;
	if (!old_obj || !wp_warm_adoptable(old_obj))
		return true;
	if (!ju_str_eq(wp_warm_pool_owner(old_obj), wp_warm_pool_owner(new_obj)))
		return true;
	return !ju_str_eq(k8s_obj_str(old_obj, "status.nodeName"),
	                  k8s_obj_str(new_obj, "status.nodeName"));
}

char *wp_warm_pool_key(const char *ns, const char *pool)
{
	return ju_printf("%s/%s", ju_nz(ns), ju_nz(pool));
}
