/*
 * expectations.c - per-pool creation/deletion expectations
 * (docs/api.md#expectations). A small array of records under one mutex: pools are few and each
 * record's deletion set is bounded by the pool size, so linear scans keep
 * the code obvious.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "asb/array.h"
#include "k8s/common.h"
#include "expectations.h"

typedef struct {
	char *key;
	int creations;
	char **uids;          /* pending deletions, owned strings */
	size_t nuids, capuids;
	int64_t raised_at;
} record;

struct wp_expectations {
	pthread_mutex_t mu;
	long timeout_ms;
	record *recs;
	size_t nrecs, caprecs;
};

int wp_expectations_new(wp_expectations **out, long timeout_ms)
{
	if (!out || timeout_ms <= 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "expectations: NULL out or timeout <= 0");
	wp_expectations *e = calloc(1, sizeof(*e));
	if (!e)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "expectations: out of memory");
	pthread_mutex_init(&e->mu, NULL);
	e->timeout_ms = timeout_ms;
	*out = e;
	return 0;
}

static void record_clear(record *r)
{
	for (size_t i = 0; i < r->nuids; i++)
		free(r->uids[i]);
	free(r->uids);
	free(r->key);
	memset(r, 0, sizeof(*r));
}

void wp_expectations_free(wp_expectations *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nrecs; i++)
		record_clear(&e->recs[i]);
	free(e->recs);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

static record *find(wp_expectations *e, const char *key)
{
	for (size_t i = 0; key && i < e->nrecs; i++)
		if (strcmp(e->recs[i].key, key) == 0)
			return &e->recs[i];
	return NULL;
}

static void drop(wp_expectations *e, record *r)
{
	record_clear(r);
	size_t i = (size_t)(r - e->recs);
	e->recs[i] = e->recs[--e->nrecs];
}

static record *find_or_add(wp_expectations *e, const char *key)
{
	record *r = find(e, key);
	if (r)
		return r;
	if (ASB_ARRAY_GROW(e->recs, e->caprecs, e->nrecs + 1, 8))
		return NULL;
	r = &e->recs[e->nrecs];
	memset(r, 0, sizeof(*r));
	if (!(r->key = strdup(key)))
		return NULL;
	e->nrecs++;
	return r;
}

static bool expired(const wp_expectations *e, const record *r, int64_t now_ms)
{
	return now_ms - r->raised_at > e->timeout_ms;
}

/* Under the lock: the gate test, dropping an expired record. */
static bool satisfied_locked(wp_expectations *e, const char *key, int64_t now_ms)
{
	record *r = find(e, key);
	if (!r)
		return true;
	if (expired(e, r, now_ms)) {
		drop(e, r);
		return true;
	}
	return r->creations <= 0 && r->nuids == 0;
}

bool wp_expectations_satisfied(wp_expectations *e, const char *key, int64_t now_ms)
{
	pthread_mutex_lock(&e->mu);
	bool ok = satisfied_locked(e, key, now_ms);
	pthread_mutex_unlock(&e->mu);
	return ok;
}

bool wp_expectations_expect_creations(wp_expectations *e, const char *key, int n, int64_t now_ms)
{
	bool ok = false;
	pthread_mutex_lock(&e->mu);
	if (satisfied_locked(e, key, now_ms)) {
		record *r = find_or_add(e, key);
		if (r) {
			/* A fresh record: only UIDs of an expired record can be
			 * left here, and those no longer count. */
			for (size_t i = 0; i < r->nuids; i++)
				free(r->uids[i]);
			r->nuids = 0;
			r->creations = n > 0 ? n : 0;
			r->raised_at = now_ms;
			ok = true;
		} else {
			asb_error_set(ASB_ENOMEM, 0, NULL, "expectations: out of memory");
		}
	}
	pthread_mutex_unlock(&e->mu);
	return ok;
}

void wp_expectations_lower_creations(wp_expectations *e, const char *key, int n)
{
	pthread_mutex_lock(&e->mu);
	record *r = find(e, key);
	if (r && n > 0)
		r->creations = r->creations > n ? r->creations - n : 0;
	pthread_mutex_unlock(&e->mu);
}

int wp_expectations_expect_deletion(wp_expectations *e, const char *key, const char *uid,
                                    int64_t now_ms)
{
	if (!uid || !*uid)
		return 0;
	int rc = 0;
	pthread_mutex_lock(&e->mu);
	record *r = find_or_add(e, key);
	if (!r) {
		rc = ASB_ENOMEM;
		goto out;
	}
	r->raised_at = now_ms;
	for (size_t i = 0; i < r->nuids; i++)
		if (strcmp(r->uids[i], uid) == 0)
			goto out;
	if (ASB_ARRAY_GROW(r->uids, r->capuids, r->nuids + 1, 8)) {
		rc = ASB_ENOMEM;
		goto out;
	}
	if (!(r->uids[r->nuids] = strdup(uid)))
		rc = ASB_ENOMEM;
	else
		r->nuids++;
out:
	pthread_mutex_unlock(&e->mu);
	if (rc)
		return asb_error_set(rc, 0, NULL, "expectations: out of memory");
	return 0;
}

void wp_expectations_deletion_observed(wp_expectations *e, const char *key, const char *uid)
{
	if (!uid || !*uid)
		return;
	pthread_mutex_lock(&e->mu);
	record *r = find(e, key);
	for (size_t i = 0; r && i < r->nuids; i++) {
		if (strcmp(r->uids[i], uid) == 0) {
			free(r->uids[i]);
			r->uids[i] = r->uids[--r->nuids];
			break;
		}
	}
	pthread_mutex_unlock(&e->mu);
}

bool wp_expectations_deletion_pending(wp_expectations *e, const char *key, const char *uid,
                                      int64_t now_ms)
{
	bool pending = false;
	if (!uid || !*uid)
		return false;
	pthread_mutex_lock(&e->mu);
	record *r = find(e, key);
	if (r && !expired(e, r, now_ms))
		for (size_t i = 0; i < r->nuids && !pending; i++)
			pending = strcmp(r->uids[i], uid) == 0;
	pthread_mutex_unlock(&e->mu);
	return pending;
}

int wp_expectations_pending_creations(wp_expectations *e, const char *key)
{
	pthread_mutex_lock(&e->mu);
	record *r = find(e, key);
	int n = r ? r->creations : 0;
	pthread_mutex_unlock(&e->mu);
	return n;
}

void wp_expectations_forget(wp_expectations *e, const char *key)
{
	pthread_mutex_lock(&e->mu);
	record *r = find(e, key);
	if (r)
		drop(e, r);
	pthread_mutex_unlock(&e->mu);
}
