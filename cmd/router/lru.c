/*
 * lru.c - decision cache (lru.h): a chained hash table whose entries are
 * also on a doubly-linked recency list (head = most recent).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lru.h"

typedef struct entry {
	struct entry *next_hash;
	struct entry *prev, *next;   /* recency list */
	char *key;
	char *detail;
	int verdict;
	int64_t expires_ms;
} entry;

struct rt_lru {
	pthread_mutex_t mu;
	entry **buckets;
	size_t nbuckets, size, cap;
	entry *head, *tail;
};

static size_t hash(const char *s)
{
	size_t h = 1469598103934665603ULL;  /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

int rt_lru_new(rt_lru **out, size_t cap)
{
	rt_lru *c = calloc(1, sizeof(*c));
	if (!c || !cap)
		return free(c), -1;
	c->cap = cap;
	c->nbuckets = 16;
	while (c->nbuckets < cap * 2 && c->nbuckets < ((size_t)1 << 24))
		c->nbuckets *= 2;
	if (!(c->buckets = calloc(c->nbuckets, sizeof(*c->buckets))))
		return free(c), -1;
	pthread_mutex_init(&c->mu, NULL);
	*out = c;
	return 0;
}

static void unlink_list(rt_lru *c, entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void push_front(rt_lru *c, entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static entry **slot(rt_lru *c, const char *key)
{
	entry **p = &c->buckets[hash(key) & (c->nbuckets - 1)];
	while (*p && strcmp((*p)->key, key) != 0)
		p = &(*p)->next_hash;
	return p;
}

static void drop(rt_lru *c, entry *e)
{
	entry **p = slot(c, e->key);
	*p = e->next_hash;
	unlink_list(c, e);
	free(e->key);
	free(e->detail);
	free(e);
	c->size--;
}

void rt_lru_free(rt_lru *c)
{
	if (!c)
		return;
	while (c->head)
		drop(c, c->head);
	pthread_mutex_destroy(&c->mu);
	free(c->buckets);
	free(c);
}

int rt_lru_get(rt_lru *c, const char *key, int64_t now_ms, int *verdict, char *detail,
               size_t cap)
{
	pthread_mutex_lock(&c->mu);
	entry *e = *slot(c, key);
	int rc = -1;
	if (e && e->expires_ms <= now_ms) {
		drop(c, e);
	} else if (e) {
		unlink_list(c, e);
		push_front(c, e);
		*verdict = e->verdict;
		if (detail && cap)
			snprintf(detail, cap, "%s", e->detail);
		rc = 0;
	}
	pthread_mutex_unlock(&c->mu);
	return rc;
}

int rt_lru_put(rt_lru *c, const char *key, int verdict, const char *detail,
               int64_t expires_ms)
{
	char *d = strdup(detail ? detail : "");
	if (!d)
		return -1;
	pthread_mutex_lock(&c->mu);
	entry **p = slot(c, key), *e = *p;
	int rc = 0;
	if (e) {
		free(e->detail);
		unlink_list(c, e);
	} else {
		if (c->size == c->cap)
			drop(c, c->tail);
		p = slot(c, key);
		if (!(e = calloc(1, sizeof(*e))) || !(e->key = strdup(key))) {
			free(e);
			free(d);
			rc = -1;
			goto out;
		}
		*p = e;
		c->size++;
	}
	e->detail = d;
	e->verdict = verdict;
	e->expires_ms = expires_ms;
	push_front(c, e);
out:
	pthread_mutex_unlock(&c->mu);
	return rc;
}

size_t rt_lru_size(rt_lru *c)
{
	pthread_mutex_lock(&c->mu);
	size_t n = c->size;
	pthread_mutex_unlock(&c->mu);
	return n;
}
