/* live.c - setup shared by the libk8s integration programs (live.h). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "live.h"

k8s_client *live_connect(const char *prog)
{
	const char *kc = getenv("KUBECONFIG");
	if (!kc || !*kc) {
		fprintf(stderr, "%s: KUBECONFIG must point at a running cluster's admin kubeconfig\n", prog);
		exit(1);
	}
	k8s_global_init();
	k8s_config *cfg = NULL;
	k8s_client *c = NULL;
	if (k8s_config_load(&cfg, kc, NULL) < 0 || k8s_client_new(&c, cfg, NULL) < 0) {
		fprintf(stderr, "%s: %s\n", prog, asb_error_last()->message);
		exit(1);
	}
	k8s_config_free(cfg);
	return c;
}

void live_namespace(k8s_client *c, const char *prog, const char *prefix,
                    char *ns, size_t cap)
{
	snprintf(ns, cap, "%s-%d", prefix, (int)getpid());
	cJSON *o = cJSON_CreateObject();
	cJSON *md = cJSON_AddObjectToObject(o, "metadata");
	cJSON_AddStringToObject(md, "name", ns);
	int rc = k8s_client_create(c, &k8s_resource_namespaces, NULL, o, NULL, NULL);
	cJSON_Delete(o);
	if (rc < 0) {
		fprintf(stderr, "%s: cannot create namespace %s: %s\n", prog, ns, asb_error_last()->message);
		exit(1);
	}
}

int live_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed;
}

void live_delete_namespace(k8s_client *c, const char *ns)
{
	k8s_client_delete(c, &k8s_resource_namespaces, NULL, ns, NULL, NULL);
}
