/*
 * client_transport.c - what the client's transport costs and delivers:
 * GET latency from one thread, and GET throughput from many threads over
 * 1, 2 and 4 connection shards (api_connections), with the connections
 * opened and the share of HTTP/2 answers. Prints figures; not a test.
 *
 *   KUBECONFIG=... build/bench/client_transport [THREADS] [GETS_PER_THREAD]
 *
 * Uses the admin kubeconfig of a real cluster (tools/local-cluster up); the
 * object read is the `default` namespace, so nothing is created.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "k8s/client.h"

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

typedef struct {
	k8s_client *c;
	int n;
	int64_t *lat;   /* n latencies, us */
	int failures;
} worker;

static void *run(void *ud)
{
	worker *w = ud;
	for (int i = 0; i < w->n; i++) {
		int64_t t0 = now_us();
		if (k8s_client_get(w->c, &k8s_resource_namespaces, NULL, "default", NULL))
			w->failures++;
		w->lat[i] = now_us() - t0;
	}
	return NULL;
}

/* T threads x N GETs on a client with `shards` connections; one line. */
static int measure(const k8s_config *cfg, int shards, int threads, int n)
{
	k8s_client_options o = K8S_CLIENT_OPTIONS_INIT;
	o.api_connections = shards;
	k8s_client *c = NULL;
	if (k8s_client_new(&c, cfg, &o)) {
		fprintf(stderr, "client: %s\n", asb_error_last()->message);
		return -1;
	}
	/* Warm up: connections and TLS set up before the clock starts. */
	for (int i = 0; i < shards * 2; i++)
		k8s_client_get(c, &k8s_resource_namespaces, NULL, "default", NULL);
	k8s_client_stats before = { .version = K8S_CLIENT_STATS_VERSION };
	k8s_client_stats_get(c, &before);

	worker *w = calloc((size_t)threads, sizeof(*w));
	pthread_t *t = calloc((size_t)threads, sizeof(*t));
	int64_t *all = calloc((size_t)threads * (size_t)n, sizeof(int64_t));
	int64_t start = now_us();
	for (int i = 0; i < threads; i++) {
		w[i] = (worker){ c, n, all + (size_t)i * (size_t)n, 0 };
		pthread_create(&t[i], NULL, run, &w[i]);
	}
	int failures = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		failures += w[i].failures;
	}
	double secs = (double)(now_us() - start) / 1e6;
	k8s_client_stats after = { .version = K8S_CLIENT_STATS_VERSION };
	k8s_client_stats_get(c, &after);
	size_t total = (size_t)threads * (size_t)n;
	qsort(all, total, sizeof(int64_t), cmp64);
	printf("%7d %7d %7d %10.0f %9.2f %9.2f %11lu %6.0f%% %8d\n", shards, threads, n,
	       (double)total / secs, all[total / 2] / 1000.0,
	       all[total * 99 / 100] / 1000.0,
	       (unsigned long)after.connections,
	       100.0 * (double)(after.http2 - before.http2) / (double)total, failures);
	free(all);
	free(t);
	free(w);
	k8s_client_free(c);
	return failures ? -1 : 0;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	int n = argc > 2 ? atoi(argv[2]) : 500;
	k8s_config *cfg = NULL;
	struct utsname u;

	if (threads < 1 || n < 1) {
		fprintf(stderr, "usage: %s [THREADS] [GETS_PER_THREAD]\n", argv[0]);
		return 2;
	}
	if (k8s_global_init() < 0 || k8s_config_load(&cfg, NULL, NULL)) {
		fprintf(stderr, "%s\n", asb_error_last()->message);
		return 1;
	}
	uname(&u);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	printf("# %s %d %d   (server %s; %s %s, %ld CPUs)\n", argv[0], threads, n,
	       k8s_config_server(cfg), u.sysname, u.machine, cpus);
	printf("# GET /api/v1/namespaces/default; latency in ms\n");
	printf("%7s %7s %7s %10s %9s %9s %11s %7s %8s\n", "shards", "threads",
	       "gets", "req/s", "p50", "p99", "connections", "http2", "failures");
	int rc = measure(cfg, 1, 1, n);
	for (int s = 1; s <= 4 && rc == 0; s *= 2)
		rc = measure(cfg, s, threads, n);
	k8s_config_free(cfg);
	k8s_global_cleanup();
	return rc ? 1 : 0;
}
