/*
 * watch_pods - a small libk8s example: list the Pods of a namespace, then
 * follow changes through an informer until Ctrl-C.
 *
 *   watch_pods [-n NAMESPACE | -A] [-l SELECTOR] [--kubeconfig PATH] [--context NAME]
 *
 * Shows the usual shape of a libk8s program: global init, config, client,
 * informer with handlers and a transform, signal handling, clean teardown.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "k8s/client.h"
#include "k8s/config.h"
#include "k8s/informer.h"
#include "k8s/object.h"

static void print_pod(const char *what, const cJSON *pod)
{
	const char *phase = k8s_obj_str(pod, "status.phase");
	const char *ip = k8s_obj_str(pod, "status.podIP");
	const char *node = k8s_obj_str(pod, "spec.nodeName");
	printf("%-8s %s/%s phase=%s ip=%s node=%s rv=%s\n", what,
	       k8s_obj_namespace(pod), k8s_obj_name(pod), phase ? phase : "-",
	       ip ? ip : "-", node ? node : "-", k8s_obj_resource_version(pod));
	fflush(stdout);
}

static void on_add(const cJSON *pod, void *ud) { print_pod("ADDED", pod); }
static void on_update(const cJSON *old, const cJSON *pod, void *ud) { print_pod("MODIFIED", pod); }
static void on_delete(const cJSON *pod, void *ud) { print_pod("DELETED", pod); }

/* Keep only what this program prints: drop managedFields and most of the spec. */
static cJSON *slim(cJSON *pod, void *ud)
{
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(pod, "metadata"), "managedFields");
	cJSON *spec = cJSON_GetObjectItem(pod, "spec");
	cJSON *node = cJSON_DetachItemFromObject(spec, "nodeName");
	cJSON_DeleteItemFromObject(pod, "spec");
	cJSON *ns = cJSON_AddObjectToObject(pod, "spec");
	if (node)
		cJSON_AddItemToObject(ns, "nodeName", node);
	return pod;
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *context = NULL, *ns = NULL, *selector = NULL;
	bool all = false;
	static const struct option opts[] = {
		{ "namespace", required_argument, NULL, 'n' },
		{ "all-namespaces", no_argument, NULL, 'A' },
		{ "selector", required_argument, NULL, 'l' },
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "context", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "n:Al:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n': ns = optarg; break;
		case 'A': all = true; break;
		case 'l': selector = optarg; break;
		case 'k': kubeconfig = optarg; break;
		case 'c': context = optarg; break;
		default:
			fprintf(stderr, "usage: %s [-n NAMESPACE | -A] [-l SELECTOR] [--kubeconfig PATH] [--context NAME]\n", argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	/* SIGINT/SIGTERM are taken with sigwait() by the main thread */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	k8s_global_init();
	k8s_config *cfg = NULL;
	k8s_client *client = NULL;
	k8s_informer *inf = NULL;
	int rc = 1;
	if (k8s_config_load(&cfg, kubeconfig, context) < 0 ||
	    k8s_client_new(&client, cfg, NULL) < 0) {
		fprintf(stderr, "watch_pods: %s\n", asb_error_last()->message);
		goto out;
	}
	if (!all && !ns)
		ns = k8s_client_namespace(client);
	k8s_informer_options io = K8S_INFORMER_OPTIONS_INIT;
	io.resource = &k8s_resource_pods;
	io.namespace_ = all ? NULL : ns;
	io.label_selector = selector;
	io.transform = slim;
	io.on_add = on_add;
	io.on_update = on_update;
	io.on_delete = on_delete;
	if (k8s_informer_new(&inf, client, &io) < 0 || k8s_informer_start(inf) < 0 ||
	    k8s_informer_wait_synced(inf, 30000) < 0) {
		fprintf(stderr, "watch_pods: %s\n", asb_error_last()->message);
		goto out;
	}
	fprintf(stderr, "watch_pods: %zu pods listed; watching (Ctrl-C to stop)\n", k8s_informer_size(inf));
	int sig;
	sigwait(&sigs, &sig);
	rc = 0;
out:
	k8s_informer_free(inf);
	k8s_client_free(client);
	k8s_config_free(cfg);
	k8s_global_cleanup();
	return rc;
}
