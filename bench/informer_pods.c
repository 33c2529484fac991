/*
 * Benchmark: informer cache of Pods (issue "libk8s" benchmark).
 *
 *   informer_pods setup N NS      create N realistic Pods in namespace NS
 *   informer_pods cache NS MODE   LIST+WATCH them into an informer and print
 *                                 the time to sync, objects/s, and resident
 *                                 memory per cached Pod; MODE is "full" (the
 *                                 objects as served, minus managedFields),
 *                                 "diet" (libsandbox's sbx_pod_transform:
 *                                 metadata, spec.nodeName, status phase, IPs
 *                                 and conditions, as cJSON trees) or
 *                                 "compact" (the diet cached as sbx_pod
 *                                 structs through sbx_pod_codec(): what the
 *                                 Sandbox controller keeps)
 *   informer_pods codec NS        LIST the Pods once, diet them, then time
 *                                 sbx_pod_decode and sbx_pod_encode over all
 *                                 of them (CPU only) and print struct sizes
 *   informer_pods decode NS       LIST the Pods once, then measure the watch
 *                                 path offline: frame+decode+store of N
 *                                 ADDED events through the watch decoder
 *                                 into a hash map (events/s, CPU only)
 *   informer_pods watch NS        with an informer synced, patch every Pod (8
 *                                 threads) and report events/s observed
 *
 * Reads $KUBECONFIG. Prints figures; asserts nothing.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "k8s/client.h"
#include "k8s/informer.h"
#include "k8s/object.h"
#include "asb/map.h"
#include "sandbox/podcache.h"
#include "sandbox/reconciler.h"
#include "watch_decoder.h"

static k8s_client *client;

static long rss_kib(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A Pod shaped like real workloads: two containers, env, probes, resources, volumes. */
static cJSON *realistic_pod(const char *name)
{
	char buf[4096];
	snprintf(buf, sizeof(buf),
	  "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
	  "\"labels\":{\"app\":\"agent\",\"agents.x-k8s.io/sandbox-name-hash\":\"1234abcd\",\"tier\":\"sandbox\"},"
	  "\"annotations\":{\"agents.x-k8s.io/propagated-labels\":\"app,tier\",\"note\":\"benchmark pod\"}},"
	  "\"spec\":{\"automountServiceAccountToken\":false,\"terminationGracePeriodSeconds\":5,"
	  "\"containers\":[{\"name\":\"runtime\",\"image\":\"registry.k8s.io/pause:3.10\","
	  "\"args\":[\"--port\",\"8888\",\"--root\",\"/workspace\"],"
	  "\"env\":[{\"name\":\"SANDBOX\",\"value\":\"%s\"},{\"name\":\"LOG_LEVEL\",\"value\":\"info\"},{\"name\":\"HOME\",\"value\":\"/workspace\"}],"
	  "\"ports\":[{\"containerPort\":8888,\"name\":\"http\"}],"
	  "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}},"
	  "\"readinessProbe\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":8888},\"periodSeconds\":5},"
	  "\"volumeMounts\":[{\"name\":\"workspace\",\"mountPath\":\"/workspace\"}]},"
	  "{\"name\":\"sidecar\",\"image\":\"registry.k8s.io/pause:3.10\",\"resources\":{\"requests\":{\"cpu\":\"10m\",\"memory\":\"16Mi\"}}}],"
	  "\"volumes\":[{\"name\":\"workspace\",\"emptyDir\":{}}]}}", name, name);
	return cJSON_Parse(buf);
}

typedef struct {
	const char *ns;
	int from, to;
	int failures;
} setup_job;

static void *setup_worker(void *arg)
{
	setup_job *j = arg;
	char name[64];
	for (int i = j->from; i < j->to; i++) {
		snprintf(name, sizeof(name), "bench-pod-%05d", i);
		cJSON *p = realistic_pod(name);
		int rc = k8s_client_create(client, &k8s_resource_pods, j->ns, p, NULL, NULL);
		if (rc < 0 && rc != ASB_EALREADYEXISTS)
			j->failures++;
		cJSON_Delete(p);
	}
	return NULL;
}

static int cmd_setup(int n, const char *ns)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"}}", ns);
	cJSON *o = cJSON_Parse(body);
	k8s_client_create(client, &k8s_resource_namespaces, NULL, o, NULL, NULL);
	cJSON_Delete(o);
	sleep(2);  /* the namespace's default ServiceAccount must exist before pods */
	enum { T = 8 };
	pthread_t th[T];
	setup_job jobs[T];
	int64_t t0 = k8s_monotonic_ms();
	for (int i = 0; i < T; i++) {
		jobs[i] = (setup_job){ ns, n * i / T, n * (i + 1) / T, 0 };
		pthread_create(&th[i], NULL, setup_worker, &jobs[i]);
	}
	int failures = 0;
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		failures += jobs[i].failures;
	}
	double s = (double)(k8s_monotonic_ms() - t0) / 1000.0;
	printf("setup: created %d pods in %.1f s (%.0f creates/s, 8 threads, %d failures)\n", n, s, n / s, failures);
	return failures ? 1 : 0;
}

/* "full": the objects as served, minus managedFields. */
static cJSON *strip_managed(cJSON *obj, void *ud)
{
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(obj, "metadata"), "managedFields");
	return obj;
}

static int cmd_cache(const char *ns, const char *mode)
{
	long before = rss_kib();
	struct mallinfo2 mi = mallinfo2();
	size_t heap_before = mi.uordblks + mi.hblkhd;
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &k8s_resource_pods;
	o.namespace_ = ns;
	if (strcmp(mode, "full") == 0) {
		o.transform = strip_managed;
	} else if (strcmp(mode, "diet") == 0) {
		o.transform = sbx_pod_transform;
	} else if (strcmp(mode, "compact") == 0) {
		o.transform = sbx_pod_transform;
		o.codec = sbx_pod_codec();
	} else {
		fprintf(stderr, "informer_pods: mode is full, diet or compact\n");
		return 2;
	}
	k8s_informer *inf;
	if (k8s_informer_new(&inf, client, &o) < 0)
		return 1;
	int64_t t0 = k8s_monotonic_ms();
	k8s_informer_start(inf);
	if (k8s_informer_wait_synced(inf, 600000) < 0)
		return 1;
	double s = (double)(k8s_monotonic_ms() - t0) / 1000.0;
	size_t n = k8s_informer_size(inf);
	long after = rss_kib();
	/* bytes malloc has handed out (every arena, and mmapped blocks), without
	 * the free space and holes that RSS also counts */
	mi = mallinfo2();
	size_t heap = mi.uordblks + mi.hblkhd - heap_before;
	/* LIST pages and transient trees leave free heap behind: also show
	 * what is held once it is returned to the system */
	malloc_trim(0);
	long trimmed = rss_kib();
	printf("cache[%s]: %zu pods synced (LIST, pages of 500) in %.2f s = %.0f objects/s; "
	       "RSS %ld -> %ld KiB = %.2f KiB per cached pod (%.2f KiB after malloc_trim; "
	       "%.2f KiB allocated per pod)\n",
	       mode, n, s, n / s, before, after, n ? (double)(after - before) / n : 0.0,
	       n ? (double)(trimmed - before) / n : 0.0, n ? (double)heap / 1024.0 / n : 0.0);
	k8s_informer_free(inf);
	return 0;
}

static int count_event(k8s_watch_event_type t, cJSON *obj, void *ud)
{
	asb_map *m = ud;
	char *key = k8s_obj_key(obj);
	void *old = NULL;
	if (key)
		asb_map_set(m, key, obj, &old);
	else
		cJSON_Delete(obj);
	cJSON_Delete(old);
	free(key);
	return 0;
}

static void free_obj(void *v) { cJSON_Delete(v); }

static int cmd_decode(const char *ns)
{
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	cJSON *list = NULL;
	if (k8s_client_list(client, &k8s_resource_pods, ns, &lo, &list) < 0)
		return 1;
	/* the stream a watch would carry: one ADDED line per pod */
	size_t cap = 1 << 20, len = 0;
	char *stream = malloc(cap);
	size_t n = 0;
	const cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(list, "items")) {
		char *obj = cJSON_PrintUnformatted(it);
		size_t need = strlen(obj) + 40;
		while (len + need > cap)
			stream = realloc(stream, cap *= 2);
		len += (size_t)sprintf(stream + len, "{\"type\":\"ADDED\",\"object\":%s}\n", obj);
		free(obj);
		n++;
	}
	cJSON_Delete(list);
	asb_map cache;
	asb_map_init(&cache);
	k8s__watch_decoder *d;
	k8s__watch_decoder_new(&d, 0, "bench", count_event, &cache);
	int64_t t0 = k8s_monotonic_ms();
	/* 16 KiB chunks, like a socket read */
	for (size_t off = 0; off < len; off += 16384)
		k8s__watch_decoder_feed(d, stream + off, len - off < 16384 ? len - off : 16384);
	k8s__watch_decoder_finish(d);
	double s = (double)(k8s_monotonic_ms() - t0) / 1000.0;
	printf("decode: %zu ADDED events (%.1f MiB of watch stream) framed+decoded+stored in %.3f s = %.0f events/s (%.0f MiB/s)\n",
	       n, len / 1048576.0, s, n / s, len / 1048576.0 / s);
	k8s__watch_decoder_free(d);
	asb_map_clear(&cache, free_obj);
	free(stream);
	return 0;
}

static int cmd_codec(const char *ns)
{
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	cJSON *list = NULL;
	if (k8s_client_list(client, &k8s_resource_pods, ns, &lo, &list) < 0)
		return 1;
	cJSON *items = cJSON_GetObjectItem(list, "items");
	int n = cJSON_GetArraySize(items);
	if (n == 0) {
		cJSON_Delete(list);
		return 1;
	}
	cJSON **diets = calloc((size_t)n, sizeof(*diets));
	sbx_pod **pods = calloc((size_t)n, sizeof(*pods));
	size_t diet_bytes = 0, struct_bytes = 0;
	for (int i = 0; i < n; i++) {
		diets[i] = sbx_pod_transform(cJSON_DetachItemFromArray(items, 0), NULL);
		char *t = cJSON_PrintUnformatted(diets[i]);
		diet_bytes += strlen(t);
		free(t);
	}
	cJSON_Delete(list);
	int64_t t0 = k8s_monotonic_ms();
	for (int i = 0; i < n; i++)
		if (sbx_pod_decode(diets[i], &pods[i]) < 0)
			return 1;
	double ds = (double)(k8s_monotonic_ms() - t0) / 1000.0;
	int fallback = 0;
	for (int i = 0; i < n; i++) {
		struct_bytes += pods[i]->size;
		fallback += pods[i]->json != NULL;
	}
	t0 = k8s_monotonic_ms();
	for (int i = 0; i < n; i++)
		cJSON_Delete(sbx_pod_encode(pods[i]));
	double es = (double)(k8s_monotonic_ms() - t0) / 1000.0;
	printf("codec: %d diet pods (%.0f bytes of JSON each): decode %.3f s = %.0f pods/s, "
	       "encode %.3f s = %.0f pods/s; sbx_pod %.0f bytes each (one allocation), %d kept as JSON\n",
	       n, (double)diet_bytes / n, ds, ds > 0 ? n / ds : 0.0, es, es > 0 ? n / es : 0.0,
	       (double)struct_bytes / n, fallback);
	for (int i = 0; i < n; i++) {
		sbx_pod_free(pods[i]);
		cJSON_Delete(diets[i]);
	}
	free(pods);
	free(diets);
	return 0;
}

typedef struct {
	pthread_mutex_t lock;
	int updates;
	int64_t first, last;
} watch_count;

static void on_update(const cJSON *a, const cJSON *b, void *ud)
{
	watch_count *w = ud;
	if (!k8s_obj_label(b, "bench-round"))
		return;
	pthread_mutex_lock(&w->lock);
	int64_t now = k8s_monotonic_ms();
	if (!w->updates++)
		w->first = now;
	w->last = now;
	pthread_mutex_unlock(&w->lock);
}

typedef struct {
	const char *ns;
	cJSON *names;
	int from, to;
} patch_job;

static void *patch_worker(void *arg)
{
	patch_job *j = arg;
	cJSON *patch = cJSON_Parse("{\"metadata\":{\"labels\":{\"bench-round\":\"1\"}}}");
	for (int i = j->from; i < j->to; i++)
		k8s_client_patch(client, &k8s_resource_pods, j->ns,
		                 cJSON_GetArrayItem(j->names, i)->valuestring, NULL,
		                 K8S_PATCH_MERGE, patch, NULL, NULL);
	cJSON_Delete(patch);
	return NULL;
}

static int cmd_watch(const char *ns)
{
	watch_count w = { .lock = PTHREAD_MUTEX_INITIALIZER };
	k8s_informer_options o = K8S_INFORMER_OPTIONS_INIT;
	o.resource = &k8s_resource_pods;
	o.namespace_ = ns;
	o.transform = sbx_pod_transform;
	o.codec = sbx_pod_codec();
	o.on_update = on_update;
	o.userdata = &w;
	k8s_informer *inf;
	k8s_informer_new(&inf, client, &o);
	k8s_informer_start(inf);
	if (k8s_informer_wait_synced(inf, 600000) < 0)
		return 1;
	cJSON *all = NULL;
	k8s_informer_list(inf, ns, &all);
	cJSON *names = cJSON_CreateArray();
	const cJSON *it;
	cJSON_ArrayForEach(it, all)
		cJSON_AddItemToArray(names, cJSON_CreateString(k8s_obj_name(it)));
	cJSON_Delete(all);
	int n = cJSON_GetArraySize(names);
	enum { T = 8 };
	pthread_t th[T];
	patch_job jobs[T];
	int64_t t0 = k8s_monotonic_ms();
	for (int i = 0; i < T; i++) {
		jobs[i] = (patch_job){ ns, names, n * i / T, n * (i + 1) / T };
		pthread_create(&th[i], NULL, patch_worker, &jobs[i]);
	}
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	double ws = (double)(k8s_monotonic_ms() - t0) / 1000.0;
	for (int i = 0; i < 600 && w.updates < n; i++)
		usleep(100000);
	double span = (double)(w.last - w.first) / 1000.0;
	printf("watch: %d patches sent in %.1f s (%.0f writes/s, 8 threads); %d update events received, "
	       "first-to-last %.1f s = %.0f events/s (bounded by the API server's write rate)\n",
	       n, ws, n / ws, w.updates, span, span > 0 ? w.updates / span : 0.0);
	cJSON_Delete(names);
	k8s_informer_free(inf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s setup N NS | cache NS full|diet|compact | decode NS | codec NS | watch NS\n", argv[0]);
		return 2;
	}
	k8s_global_init();
	k8s_config *cfg;
	k8s_client_options co = K8S_CLIENT_OPTIONS_INIT;
	co.timeout_ms = 120000;
	if (k8s_config_load(&cfg, NULL, NULL) < 0 || k8s_client_new(&client, cfg, &co) < 0) {
		fprintf(stderr, "informer_pods: %s\n", asb_error_last()->message);
		return 1;
	}
	k8s_config_free(cfg);
	int rc = 2;
	if (strcmp(argv[1], "setup") == 0 && argc == 4)
		rc = cmd_setup(atoi(argv[2]), argv[3]);
	else if (strcmp(argv[1], "cache") == 0 && argc == 4)
		rc = cmd_cache(argv[2], argv[3]);
	else if (strcmp(argv[1], "decode") == 0 && argc == 3)
		rc = cmd_decode(argv[2]);
	else if (strcmp(argv[1], "codec") == 0 && argc == 3)
		rc = cmd_codec(argv[2]);
	else if (strcmp(argv[1], "watch") == 0 && argc == 3)
		rc = cmd_watch(argv[2]);
	else
		fprintf(stderr, "informer_pods: bad arguments\n");
	k8s_client_free(client);
	k8s_global_cleanup();
	return rc;
}
