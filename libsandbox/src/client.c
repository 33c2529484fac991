/*
 * client.c - the client's connection to a cluster and its claim verbs:
 * create (and wait, client_wait.c), delete, list, read the pool
 * (sandbox/client.h). The claim itself is built by clientclaim.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "client_internal.h"
#include "jsonutil.h"
#include "k8s/object.h"
#include "sandbox/clientclaim.h"

const k8s_resource sbx__resource_claims = {
	.group = SBX_EXTENSIONS_GROUP, .version = "v1beta1",
	.resource = "sandboxclaims", .kind = SBX_KIND_CLAIM, .namespaced = true,
};

/* ---- errors and small helpers ---- */

const char *sbx_strerror(int code)
{
	switch (code) {
	case SBX_ETEMPLATENOTFOUND: return "sandbox template not found";
	case SBX_EWARMPOOLNOTFOUND: return "sandbox warm pool not found";
	case SBX_EINVALIDMETADATA: return "claim has invalid pod metadata";
	case SBX_EENVREJECTED: return "claim env injection rejected";
	case SBX_EVOLUMECLAIMTEMPLATES: return "claim volume claim templates rejected";
	case SBX_ECLAIMEXPIRED: return "claim expired";
	case SBX_ESANDBOXEXPIRED: return "sandbox expired";
	case SBX_ECLAIMDELETED: return "claim deleted";
	case SBX_EREQUEST: return "sandbox request failed";
	case SBX_EPORTFORWARD: return "port-forward failed";
	case SBX_ECLOSED: return "sandbox handle closed";
	case SBX_EUNSUPPORTED: return "not supported by the sandbox runtime";
	case SBX_ERESPONSE: return "unexpected answer from the sandbox";
	case SBX_ENOSERVICE: return "sandbox has no service";
	case SBX_ENOPODIP: return "sandbox has no pod IP yet";
	default: return asb_strerror(code);
	}
}

bool sbx_error_is_claim_failure(int code)
{
	return code == SBX_EINVALIDMETADATA || code == SBX_EENVREJECTED ||
	       code == SBX_EVOLUMECLAIMTEMPLATES || code == SBX_ECLAIMEXPIRED ||
	       code == SBX_ESANDBOXEXPIRED;
}

int sbx_global_init(void)
{
	return k8s_global_init();
}

void sbx_global_cleanup(void)
{
	k8s_global_cleanup();
}

char *sbx__strdup(const char *s, int *rc)
{
	if (!s)
		return NULL;
	char *d = strdup(s);
	if (!d)
		*rc = ASB_ENOMEM;
	return d;
}

void sbx__sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void sbx_free(void *p)
{
	free(p);
}

void sbx_strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

void sbx_claim_info_free(sbx_claim_info *info)
{
	if (!info)
		return;
	free(info->ns);
	free(info->claim_name);
	free(info->sandbox_name);
	free(info->pod_ip);
	free(info->resource_version);
	free(info);
}

/* ---- the client ---- */

int sbx_client_options_init(sbx_client_options *opts, unsigned int version)
{
	sbx_client_options d = SBX_CLIENT_OPTIONS_INIT;
	if (!opts || version != SBX_CLIENT_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "client options: unknown version %u", version);
	*opts = d;
	return 0;
}

int sbx_claim_options_init(sbx_claim_options *opts, unsigned int version)
{
	sbx_claim_options d = SBX_CLAIM_OPTIONS_INIT;
	if (!opts || version != SBX_CLAIM_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "claim options: unknown version %u", version);
	*opts = d;
	return 0;
}

/* In-cluster when asked, or when no file was named and this runs in a pod. */
static int load_config(const sbx_client_options *o, k8s_config **cfg)
{
	if (o->in_cluster)
		return k8s_config_incluster(cfg);
	if (ju_empty(o->kubeconfig) && getenv("KUBERNETES_SERVICE_HOST") &&
	    k8s_config_incluster(cfg) == 0)
		return 0;
	return k8s_config_load(cfg, ju_empty(o->kubeconfig) ? NULL : o->kubeconfig,
	                       ju_empty(o->context) ? NULL : o->context);
}

int sbx_client_new(sbx_client **out, const sbx_client_options *opts)
{
	sbx_client_options o = SBX_CLIENT_OPTIONS_INIT;
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_client_new: no output");
	*out = NULL;
	if (opts) {
		if (opts->version != SBX_CLIENT_OPTIONS_VERSION)
			return asb_error_set(ASB_EINVAL, 0, NULL, "client options: unknown version %u",
			                     opts->version);
		o = *opts;
	}
	sbx_client *c = calloc(1, sizeof(*c));
	if (!c)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory creating a client");
	atomic_init(&c->refs, 1);
	c->logger = o.logger;
	int rc = 0;
	c->kubeconfig = sbx__strdup(ju_nz(o.in_cluster ? NULL : o.kubeconfig), &rc);
	c->context = sbx__strdup(ju_nz(o.context), &rc);
	char ua[64];
	snprintf(ua, sizeof(ua), "agent-sandbox-client/%s", SBX_CLIENT_VERSION);
	c->user_agent = sbx__strdup(o.user_agent ? o.user_agent : ua, &rc);
	if (rc) {
		sbx__client_unref(c);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory creating a client");
	}
	if ((rc = load_config(&o, &c->config)) != 0) {
		sbx__client_unref(c);
		return rc;
	}
	k8s_client_options ko = K8S_CLIENT_OPTIONS_INIT;
	ko.timeout_ms = o.request_timeout_ms > 0 ? o.request_timeout_ms : 30000;
	ko.user_agent = c->user_agent;
	ko.logger = o.logger;
	ko.qps = o.qps;
	ko.burst = o.burst;
	ko.api_connections = o.api_connections > 0 ? o.api_connections : 1;
	if (o.api_max_retries >= 0)
		ko.max_retries = o.api_max_retries;
	if ((rc = k8s_client_new(&c->k8s, c->config, &ko)) != 0) {
		sbx__client_unref(c);
		return rc;
	}
	*out = c;
	return 0;
}

void sbx__client_ref(sbx_client *c)
{
	atomic_fetch_add(&c->refs, 1);
}

void sbx__client_unref(sbx_client *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	k8s_client_free(c->k8s);
	k8s_config_free(c->config);
	free(c->kubeconfig);
	free(c->context);
	free(c->user_agent);
	free(c);
}

void sbx_client_free(sbx_client *c)
{
	sbx__client_unref(c);
}

const char *sbx_client_namespace(const sbx_client *c)
{
	return c ? k8s_client_namespace(c->k8s) : NULL;
}

const char *sbx_client_kubeconfig(const sbx_client *c)
{
	return c ? c->kubeconfig : NULL;
}

const char *sbx_client_context(const sbx_client *c)
{
	return c ? c->context : NULL;
}

k8s_client *sbx_client_k8s(sbx_client *c)
{
	return c ? c->k8s : NULL;
}

const char *sbx__ns_or_default(const sbx_client *c, const char *ns)
{
	return ju_empty(ns) ? sbx_client_namespace(c) : ns;
}

/* ---- claims ---- */

static int64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int sbx_client_create_claim(sbx_client *c, const sbx_claim_options *opts, cJSON **out)
{
	if (out)
		*out = NULL;
	if (!c || !opts)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_client_create_claim: no client or options");
	char gen[SBX_CLAIM_NAME_SIZE];
	const char *name = opts->name;
	int rc;
	if (ju_empty(name)) {
		if ((rc = sbx_claim_name_generate(gen)) != 0)
			return rc;
		name = gen;
	}
	const char *ns = sbx__ns_or_default(c, opts->ns);
	cJSON *claim = NULL;
	if ((rc = sbx_claim_build(opts, ns, name, now_us(), &claim)) != 0)
		return rc;
	rc = k8s_client_create(c->k8s, &sbx__resource_claims, ns, claim, NULL, out);
	cJSON_Delete(claim);
	if (rc == 0)
		asb_log(c->logger, ASB_LOG_DEBUG, "claim created", "namespace", ns, "claim", name,
		        "warmpool", opts->warm_pool, NULL);
	return rc;
}

int sbx_client_create(sbx_client *c, const sbx_claim_options *opts, sbx_claim_info **out)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_client_create: no output");
	*out = NULL;
	cJSON *created = NULL;
	int rc = sbx_client_create_claim(c, opts, &created);
	if (rc != 0)
		return rc;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	const char *ns = sbx__ns_or_default(c, opts->ns);
	char *name = strdup(ju_nz(k8s_obj_name(created)));
	char *rv = strdup(ju_nz(k8s_obj_resource_version(created)));
	cJSON_Delete(created);
	if (!name || !rv) {
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory waiting for a claim");
	} else {
		rc = sbx__client_wait(c, ns, name, rv, true, opts->ready_timeout_ms, opts->cancel, out);
		if (rc == 0)
			(*out)->created_at = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
	}
	if (rc != 0 && name && !opts->keep_on_failure) {
		/* Keep the wait's error for the caller, whatever the delete says. */
		asb_error saved = *asb_error_last();
		char msg[1024], reason[64];
		snprintf(msg, sizeof(msg), "%s", saved.message);
		snprintf(reason, sizeof(reason), "%s", saved.reason);
		int drc = k8s_client_delete(c->k8s, &sbx__resource_claims, ns, name, NULL, NULL);
		asb_log(c->logger, ASB_LOG_DEBUG, "claim deleted after a failed wait", "namespace", ns,
		        "claim", name, "result", drc == 0 || drc == ASB_ENOTFOUND ? "ok" : sbx_strerror(drc),
		        NULL);
		asb_error_set(saved.code, saved.http_status, reason, "%s", msg);
	}
	free(name);
	free(rv);
	return rc;
}

int sbx_client_delete_claim(sbx_client *c, const char *ns, const char *name)
{
	if (!c || ju_empty(name))
		return asb_error_set(ASB_EINVAL, 0, NULL, "delete claim: no client or claim name");
	k8s_delete_options d = K8S_DELETE_OPTIONS_INIT;
	d.propagation_policy = "Background";
	return k8s_client_delete(c->k8s, &sbx__resource_claims, sbx__ns_or_default(c, ns), name,
	                         &d, NULL);
}

int sbx_client_list_claims(sbx_client *c, const char *ns, const char *label_selector,
                           char ***names, size_t *count)
{
	if (!c || !names)
		return asb_error_set(ASB_EINVAL, 0, NULL, "list claims: no client or output");
	*names = NULL;
	if (count)
		*count = 0;
	k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
	lo.label_selector = ju_empty(label_selector) ? NULL : label_selector;
	cJSON *list = NULL;
	int rc = k8s_client_list_all(c->k8s, &sbx__resource_claims, sbx__ns_or_default(c, ns),
	                             &lo, &list);
	if (rc != 0)
		return rc;
	const cJSON *items = cJSON_GetObjectItemCaseSensitive(list, "items");
	size_t n = 0, cap = (size_t)cJSON_GetArraySize(items);
	char **v = calloc(cap + 1, sizeof(*v));
	const cJSON *it;
	cJSON_ArrayForEach(it, (v ? items : NULL)) {
		const char *nm = k8s_obj_name(it);
		if (nm && !(v[n++] = strdup(nm))) {
			sbx_strv_free(v);
			v = NULL;
			break;
		}
	}
	cJSON_Delete(list);
	if (!v)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory listing claims");
	*names = v;
	if (count)
		*count = n;
	return 0;
}

int sbx_client_claim_warm_pool(sbx_client *c, const char *ns, const char *name, char **out)
{
	if (!c || ju_empty(name) || !out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "claim warm pool: no client, name or output");
	*out = NULL;
	ns = sbx__ns_or_default(c, ns);
	cJSON *claim = NULL;
	int rc = k8s_client_get(c->k8s, &sbx__resource_claims, ns, name, &claim);
	if (rc != 0)
		return rc;
	const char *pool = k8s_obj_str(claim, "spec.warmPoolRef.name");
	if (ju_empty(pool))
		rc = asb_error_set(ASB_EDECODE, 0, NULL, "SandboxClaim %s/%s names no warm pool", ns, name);
	else if (!(*out = strdup(pool)))
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	cJSON_Delete(claim);
	return rc;
}
