/*
 * Unit tests of libwarmpool/src/warmqueue.c: the warm sandbox queue of
 * docs/api.md#warm-queue (FIFO, dedupe keeping the position, push back at the
 * tail, remove, drop), the NodeSpread + FIFO picker of docs/api.md#claim-adoption, the feeder's
 * adoptable / should-push rules on fixtures, and concurrent use.
 */
#include <pthread.h>
#include <string.h>
#include "fixture.h"
#include "warmqueue.h"
#include "k8s/common.h"

#define PK "default/test-pool"

/* Pops one and checks its name (and node when `node` is not NULL). */
static void expect_pop(wp_warm_queue *q, const char *name, const char *node)
{
	wp_warm_item it;
	ck_assert_int_eq(wp_warm_queue_pop(q, PK, &it), 0);
	ck_assert_str_eq(it.name, name);
	ck_assert_str_eq(it.namespace_, "default");
	if (node)
		ck_assert_str_eq(it.node_name, node);
	wp_warm_item_clear(&it);
}

START_TEST(fifo_without_nodes)
{
	wp_warm_queue *q;
	ck_assert_int_eq(wp_warm_queue_new(&q), 0);
	ck_assert_int_eq(wp_warm_queue_push(q, PK, "default", "a", NULL), 0);
	ck_assert_int_eq(wp_warm_queue_push(q, PK, "default", "b", ""), 0);
	ck_assert_int_eq(wp_warm_queue_push(q, PK, "default", "c", NULL), 0);
	ck_assert_uint_eq(wp_warm_queue_len(q, PK), 3);
	expect_pop(q, "a", "");
	expect_pop(q, "b", "");
	expect_pop(q, "c", "");
	wp_warm_item it;
	ck_assert_int_eq(wp_warm_queue_pop(q, PK, &it), ASB_ENOTFOUND);
	ck_assert_int_eq(wp_warm_queue_pop(q, "default/other", &it), ASB_ENOTFOUND);
	wp_warm_queue_free(q);
}
END_TEST

START_TEST(dedupe_keeps_position_updates_node)
{
	wp_warm_queue *q;
	ck_assert_int_eq(wp_warm_queue_new(&q), 0);
	wp_warm_queue_push(q, PK, "default", "a", NULL);
	wp_warm_queue_push(q, PK, "default", "b", NULL);
	/* re-push of a: same place, node now known */
	wp_warm_queue_push(q, PK, "default", "a", "n1");
	ck_assert_uint_eq(wp_warm_queue_len(q, PK), 2);
	/* a is the only one with a node: picked first */
	expect_pop(q, "a", "n1");
	expect_pop(q, "b", "");
	wp_warm_queue_free(q);
}
END_TEST

START_TEST(push_back_goes_to_tail)
{
	wp_warm_queue *q;
	ck_assert_int_eq(wp_warm_queue_new(&q), 0);
	wp_warm_queue_push(q, PK, "default", "a", NULL);
	wp_warm_queue_push(q, PK, "default", "b", NULL);
	wp_warm_queue_push(q, PK, "default", "c", NULL);
	wp_warm_item it;
	ck_assert_int_eq(wp_warm_queue_pop(q, PK, &it), 0);
	ck_assert_str_eq(it.name, "a");
	/* skipped candidate pushed back: behind b and c */
	wp_warm_queue_push(q, PK, it.namespace_, it.name, it.node_name);
	wp_warm_item_clear(&it);
	expect_pop(q, "b", NULL);
	expect_pop(q, "c", NULL);
	expect_pop(q, "a", NULL);
	wp_warm_queue_free(q);
}
END_TEST

START_TEST(remove_and_drop)
{
	wp_warm_queue *q;
	ck_assert_int_eq(wp_warm_queue_new(&q), 0);
	wp_warm_queue_push(q, PK, "default", "a", NULL);
	wp_warm_queue_push(q, PK, "default", "b", NULL);
	wp_warm_queue_push(q, "default/p2", "default", "x", NULL);
	ck_assert(wp_warm_queue_remove(q, PK, "default", "a"));
	ck_assert(!wp_warm_queue_remove(q, PK, "default", "a"));
	ck_assert(!wp_warm_queue_remove(q, PK, "other", "b"));
	ck_assert_uint_eq(wp_warm_queue_len(q, PK), 1);
	wp_warm_queue_drop(q, PK);
	ck_assert_uint_eq(wp_warm_queue_len(q, PK), 0);
	ck_assert_uint_eq(wp_warm_queue_len(q, "default/p2"), 1);
	/* a dropped list starts afresh */
	wp_warm_queue_push(q, PK, "default", "c", NULL);
	expect_pop(q, "c", NULL);
	ck_assert_int_eq(wp_warm_queue_push(q, PK, "default", "", NULL), ASB_EINVAL);
	wp_warm_queue_free(q);
}
END_TEST

START_TEST(pick_node_spread)
{
	/* n2 has the most keys: its earliest (c) wins over older a and b */
	wp_warm_item items[] = {
		{ "default", "a", "" }, { "default", "b", "n1" }, { "default", "c", "n2" },
		{ "default", "d", "n2" }, { "default", "e", "n1" }, { "default", "f", "n2" },
	};
	ck_assert_uint_eq(wp_warm_pick(items, 6), 2);
	/* tie between n1 and n2 (2 each): earliest among both nodes */
	ck_assert_uint_eq(wp_warm_pick(items, 5), 1);
	/* a key without node is not picked while scheduled ones exist */
	wp_warm_item two[] = { { "default", "a", "" }, { "default", "b", "n1" } };
	ck_assert_uint_eq(wp_warm_pick(two, 2), 1);
	/* a single key is taken as is */
	ck_assert_uint_eq(wp_warm_pick(items, 1), 0);
	/* none with a node: the oldest */
	wp_warm_item none[] = { { "default", "a", "" }, { "default", "b", NULL } };
	ck_assert_uint_eq(wp_warm_pick(none, 2), 0);
	ck_assert_uint_eq(wp_warm_pick(items, 0), (size_t)-1);
}
END_TEST

START_TEST(feeder_rules)
{
	cJSON *sb = fx_load("sandbox-warm.json");
	ck_assert(wp_warm_adoptable(sb));
	ck_assert_str_eq(wp_warm_pool_owner(sb), "test-pool");
	/* create event = update from "not adoptable" */
	ck_assert(wp_warm_should_push(NULL, sb));
	/* unchanged: no push */
	cJSON *same = cJSON_Duplicate(sb, true);
	ck_assert(!wp_warm_should_push(same, sb));
	/* node changed: push */
	cJSON *moved = cJSON_Duplicate(sb, true);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(moved, "status"), "nodeName",
	                          cJSON_CreateString("kwok-node-2"));
	ck_assert(wp_warm_should_push(sb, moved));
	/* became adoptable (old lacked the warm-pool label) */
	cJSON *nolabel = cJSON_Duplicate(sb, true);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(nolabel, "metadata"), "labels"),
	                           "agents.x-k8s.io/warm-pool-sandbox");
	ck_assert(!wp_warm_adoptable(nolabel));
	ck_assert(wp_warm_should_push(nolabel, sb));
	ck_assert(!wp_warm_should_push(sb, nolabel));
	/* deleting: not adoptable */
	cJSON *del = cJSON_Duplicate(sb, true);
	cJSON_AddStringToObject(cJSON_GetObjectItem(del, "metadata"), "deletionTimestamp",
	                        "2026-01-02T03:05:00Z");
	ck_assert(!wp_warm_adoptable(del));
	/* claimed (controller is a SandboxClaim): not adoptable; still names no pool */
	cJSON *claimed = cJSON_Duplicate(sb, true);
	cJSON *ref = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(claimed, "metadata"),
	                                                    "ownerReferences"), 0);
	cJSON_ReplaceItemInObject(ref, "kind", cJSON_CreateString("SandboxClaim"));
	ck_assert(!wp_warm_adoptable(claimed));
	ck_assert_ptr_null(wp_warm_pool_owner(claimed));
	/* a non-controller SandboxWarmPool ref still names the pool */
	cJSON_ReplaceItemInObject(ref, "kind", cJSON_CreateString("SandboxWarmPool"));
	cJSON_ReplaceItemInObject(ref, "controller", cJSON_CreateFalse());
	ck_assert_str_eq(wp_warm_pool_owner(claimed), "test-pool");
	ck_assert(!wp_warm_adoptable(claimed));
	/* another group's SandboxWarmPool controller is not a pool */
	cJSON_ReplaceItemInObject(ref, "controller", cJSON_CreateTrue());
	cJSON_ReplaceItemInObject(ref, "apiVersion", cJSON_CreateString("example.com/v1"));
	ck_assert(!wp_warm_adoptable(claimed));
	char *k = wp_warm_pool_key("default", "test-pool");
	ck_assert_str_eq(k, PK);
	free(k);
	cJSON_Delete(sb);
	cJSON_Delete(same);
	cJSON_Delete(moved);
	cJSON_Delete(nolabel);
	cJSON_Delete(del);
	cJSON_Delete(claimed);
}
END_TEST

/* ---- concurrency ----
 * Phase A: producers push overlapping key sets at once (every key by two
 * producers): each key must be queued exactly once.
 * Phase B: consumers pop while producers push new unique keys: every key
 * is popped exactly once (the invariant claims rely on: one warm Sandbox
 * is handed to one claim). */

#define N_THREADS 4
#define PER_THREAD 1500

typedef struct {
	wp_warm_queue *q;
	int id;
	int base;              /* first key index */
	unsigned char *seen;   /* per key: times popped */
	pthread_mutex_t *lock;
	int *producing;        /* producers still running */
	int popped;
} mt_ctx;

static void *producer(void *arg)
{
	mt_ctx *c = arg;
	char name[32], node[16];
	for (int i = 0; i < PER_THREAD; i++) {
		snprintf(name, sizeof(name), "s-%d", c->base + i);
		snprintf(node, sizeof(node), "n%d", i % 3);
		ck_assert_int_eq(wp_warm_queue_push(c->q, PK, "default", name, node), 0);
	}
	pthread_mutex_lock(c->lock);
	(*c->producing)--;
	pthread_mutex_unlock(c->lock);
	return NULL;
}

static void *consumer(void *arg)
{
	mt_ctx *c = arg;
	for (;;) {
		wp_warm_item it;
		if (wp_warm_queue_pop(c->q, PK, &it) != 0) {
			pthread_mutex_lock(c->lock);
			int producing = *c->producing;
			pthread_mutex_unlock(c->lock);
			if (producing == 0 && wp_warm_queue_len(c->q, PK) == 0)
				break;
			continue;
		}
		int k;
		ck_assert_int_eq(sscanf(it.name, "s-%d", &k), 1);
		pthread_mutex_lock(c->lock);
		c->seen[k]++;
		pthread_mutex_unlock(c->lock);
		c->popped++;
		wp_warm_item_clear(&it);
	}
	return NULL;
}

START_TEST(concurrent_push_pop)
{
	wp_warm_queue *q;
	ck_assert_int_eq(wp_warm_queue_new(&q), 0);
	int total = 2 * N_THREADS * PER_THREAD;
	unsigned char *seen = calloc((size_t)total, 1);
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int producing = N_THREADS;
	mt_ctx ctx[2 * N_THREADS];
	pthread_t th[2 * N_THREADS];

	/* A: thread i and i+1 share a key set */
	for (int i = 0; i < N_THREADS; i++) {
		ctx[i] = (mt_ctx){ q, i, (i / 2) * PER_THREAD, seen, &lock, &producing, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, producer, &ctx[i]), 0);
	}
	for (int i = 0; i < N_THREADS; i++)
		pthread_join(th[i], NULL);
	int phase_a = (N_THREADS / 2) * PER_THREAD;
	ck_assert_uint_eq(wp_warm_queue_len(q, PK), (size_t)phase_a);

	/* B: new unique keys pushed while consumers drain */
	producing = N_THREADS;
	for (int i = 0; i < 2 * N_THREADS; i++) {
		bool prod = i < N_THREADS;
		ctx[i] = (mt_ctx){ q, i, phase_a + i * PER_THREAD, seen, &lock, &producing, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, prod ? producer : consumer, &ctx[i]), 0);
	}
	for (int i = 0; i < 2 * N_THREADS; i++)
		pthread_join(th[i], NULL);
	int popped = 0;
	for (int i = N_THREADS; i < 2 * N_THREADS; i++)
		popped += ctx[i].popped;
	int expected = phase_a + N_THREADS * PER_THREAD;
	ck_assert_int_eq(popped, expected);
	for (int k = 0; k < expected; k++)
		ck_assert_msg(seen[k] == 1, "key s-%d popped %d times", k, seen[k]);
	ck_assert_uint_eq(wp_warm_queue_len(q, PK), 0);
	free(seen);
	wp_warm_queue_free(q);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("warmqueue");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fifo_without_nodes);
	tcase_add_test(tc, dedupe_keeps_position_updates_node);
	tcase_add_test(tc, push_back_goes_to_tail);
	tcase_add_test(tc, remove_and_drop);
	tcase_add_test(tc, pick_node_spread);
	tcase_add_test(tc, feeder_rules);
	tcase_add_test(tc, concurrent_push_pop);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return fx_main(suite());
}
