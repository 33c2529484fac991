/*
 * handle.c - the life of a sandbox handle (sandbox/handle.h): creation
 * from a resolved claim, identity, the Sandbox's pod name, IP and status,
 * close and terminate. Requests are http.c's, the way to the router
 * connect.c's.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "handle_internal.h"
#include "jsonutil.h"
#include "k8s/object.h"
#include "k8s/validation.h"
#include "sandbox/clientclaim.h"

/* Bytes of a version 1 struct: everything before the version 2 fields. */
#define CONN_V1_SIZE offsetof(sbx_connection_options, in_cluster_address)

int sbx_connection_options_init(sbx_connection_options *opts, unsigned int version)
{
	sbx_connection_options d = SBX_CONNECTION_OPTIONS_INIT;
	if (!opts || version < 1 || version > SBX_CONNECTION_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "connection options: unknown version %u",
		                     version);
	d.version = version;
	memcpy(opts, &d, version == 1 ? CONN_V1_SIZE : sizeof(d));
	return 0;
}

/* A caller's options as the current struct: a version 1 struct is read only
 * as far as it goes, the later fields taking their defaults. */
static void conn_copy(sbx_connection_options *o, const sbx_connection_options *in)
{
	sbx_connection_options d = SBX_CONNECTION_OPTIONS_INIT;
	*o = d;
	if (in->version == 1)
		memcpy(o, in, CONN_V1_SIZE);
	else if (in->version == SBX_CONNECTION_OPTIONS_VERSION)
		*o = *in;
	else
		o->version = in->version;  /* refused by check_conn() */
}

/* Checks the options of one mode; records ASB_EINVAL naming the problem. */
static int check_conn(const sbx_connection_options *o)
{
	if (o->version < 1 || o->version > SBX_CONNECTION_OPTIONS_VERSION)
		return asb_error_set(ASB_EINVAL, 0, NULL, "connection options: unknown version %u",
		                     o->version);
	if (o->server_port < 1 || o->server_port > 65535)
		return asb_error_set(ASB_EINVAL, 0, NULL, "server_port must be in 1-65535, got %d",
		                     o->server_port);
	if (o->max_retries < 0 || o->retry_backoff_ms < 0)
		return asb_error_set(ASB_EINVAL, 0, NULL, "max_retries and retry_backoff_ms must not "
		                     "be negative");
	switch (o->mode) {
	case SBX_CONNECT_DIRECT:
		if (ju_empty(o->api_url) || (strncmp(o->api_url, "http://", 7) != 0 &&
		                             strncmp(o->api_url, "https://", 8) != 0))
			return asb_error_set(ASB_EINVAL, 0, NULL, "direct connection: api_url must be an "
			                     "http:// or https:// URL, got \"%s\"", ju_nz(o->api_url));
		return 0;
	case SBX_CONNECT_GATEWAY:
		if (ju_empty(o->gateway_name))
			return asb_error_set(ASB_EINVAL, 0, NULL, "gateway connection: gateway_name is "
			                     "required");
		return 0;
	case SBX_CONNECT_LOCAL_TUNNEL:
		if (o->router_namespace && !k8s_is_dns1123_label(o->router_namespace))
			return asb_error_set(ASB_EINVAL, 0, NULL, "router_namespace \"%s\" is not a valid "
			                     "namespace name (DNS-1123 label)", o->router_namespace);
		return 0;
	case SBX_CONNECT_IN_CLUSTER:
		if (o->in_cluster_address != SBX_IN_CLUSTER_ANY &&
		    o->in_cluster_address != SBX_IN_CLUSTER_POD_IP &&
		    o->in_cluster_address != SBX_IN_CLUSTER_SERVICE)
			return asb_error_set(ASB_EINVAL, 0, NULL, "in-cluster connection: unknown "
			                     "address kind %d", (int)o->in_cluster_address);
		return 0;
	}
	return asb_error_set(ASB_EINVAL, 0, NULL, "unknown connection mode %d", (int)o->mode);
}

int sbx_handle_new(sbx_handle **out, sbx_client *client, const char *ns, const char *claim_name,
                   const char *sandbox_id, const char *pod_ip, const sbx_connection_options *conn)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_new: no output");
	*out = NULL;
	if (!client || ju_empty(claim_name) || ju_empty(sandbox_id))
		return asb_error_set(ASB_EINVAL, 0, NULL, "a handle needs a client, a claim name and a "
		                     "sandbox name");
	sbx_connection_options o = SBX_CONNECTION_OPTIONS_INIT;
	if (conn)
		conn_copy(&o, conn);
	int rc = check_conn(&o);
	if (rc)
		return rc;
	sbx_handle *h = calloc(1, sizeof(*h));
	if (!h)
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory creating a handle");
	h->ns = sbx__strdup(sbx__ns_or_default(client, ns), &rc);
	h->claim = sbx__strdup(claim_name, &rc);
	h->sandbox_id = sbx__strdup(sandbox_id, &rc);
	h->pod_ip = sbx__strdup(ju_empty(pod_ip) ? NULL : pod_ip, &rc);
	h->api_url = sbx__strdup(o.api_url, &rc);
	h->gateway_name = sbx__strdup(o.gateway_name, &rc);
	h->gateway_ns = sbx__strdup(ju_empty(o.gateway_namespace) ? "default" : o.gateway_namespace,
	                            &rc);
	h->router_ns = sbx__strdup(ju_empty(o.router_namespace) ? SBX_ROUTER_NAMESPACE
	                                                        : o.router_namespace, &rc);
	h->kubectl = sbx__strdup(o.kubectl, &rc);
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->connect_lock, NULL);
	h->conn = o;
	h->conn.api_url = h->api_url;
	h->conn.gateway_name = h->gateway_name;
	h->conn.gateway_namespace = h->gateway_ns;
	h->conn.router_namespace = h->router_ns;
	h->conn.kubectl = h->kubectl;
	sbx__client_ref(client);
	h->client = client;
	if (rc) {
		sbx_handle_free(h);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory creating a handle");
	}
	*out = h;
	return 0;
}

int sbx_handle_create(sbx_handle **out, sbx_client *client, const sbx_claim_options *claim,
                      const sbx_connection_options *conn)
{
	if (!out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_create: no output");
	*out = NULL;
	if (conn) {
		sbx_connection_options o;
		conn_copy(&o, conn);
		if (check_conn(&o) != 0)
			return ASB_EINVAL;  /* refused before anything is created */
	}
	sbx_claim_info *info = NULL;
	int rc = sbx_client_create(client, claim, &info);
	if (rc)
		return rc;
	rc = sbx_handle_new(out, client, info->ns, info->claim_name, info->sandbox_name,
	                    info->pod_ip, conn);
	if (rc && !claim->keep_on_failure)
		sbx_client_delete_claim(client, info->ns, info->claim_name);
	sbx_claim_info_free(info);
	return rc;
}

void sbx_handle_free(sbx_handle *h)
{
	if (!h)
		return;
	sbx_handle_close(h);
	pthread_mutex_destroy(&h->lock);
	pthread_mutex_destroy(&h->connect_lock);
	free(h->ns);
	free(h->claim);
	free(h->sandbox_id);
	free(h->pod_ip);
	free(h->pod_name);
	free(h->api_url);
	free(h->gateway_name);
	free(h->gateway_ns);
	free(h->router_ns);
	free(h->kubectl);
	sbx__client_unref(h->client);
	free(h);
}

const char *sbx_handle_claim_name(const sbx_handle *h)
{
	if (!h)
		return NULL;
	/* The string itself stays: another thread may hold the pointer. */
	return __atomic_load_n(&h->terminated, __ATOMIC_ACQUIRE) ? "" : h->claim;
}

const char *sbx_handle_sandbox_id(const sbx_handle *h)
{
	return h ? h->sandbox_id : NULL;
}

const char *sbx_handle_namespace(const sbx_handle *h)
{
	return h ? h->ns : NULL;
}

bool sbx_handle_is_active(sbx_handle *h)
{
	if (!h)
		return false;
	pthread_mutex_lock(&h->lock);
	bool active = !h->closed;
	pthread_mutex_unlock(&h->lock);
	return active;
}

int sbx__handle_get_sandbox(sbx_handle *h, cJSON **out)
{
	cJSON *sb = NULL;
	int rc = k8s_client_get(sbx_client_k8s(h->client), &sbx_resource_sandboxes, h->ns,
	                        h->sandbox_id, &sb);
	if (out)
		*out = sb;
	else
		cJSON_Delete(sb);
	return rc;
}

int sbx_handle_pod_name(sbx_handle *h, char **out)
{
	if (!h || !out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_pod_name: no handle or output");
	*out = NULL;
	pthread_mutex_lock(&h->lock);
	char *cached = h->pod_name ? strdup(h->pod_name) : NULL;
	bool had = h->pod_name != NULL;
	pthread_mutex_unlock(&h->lock);
	if (had) {
		*out = cached;
		return cached ? 0 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	cJSON *sb = NULL;
	int rc = sbx__handle_get_sandbox(h, &sb);
	if (rc)
		return rc;
	const char *ann = k8s_obj_annotation(sb, SBX_ANNOTATION_POD_NAME);
	char *name = strdup(ju_empty(ann) ? h->sandbox_id : ann);
	char *keep = name ? strdup(name) : NULL;
	cJSON_Delete(sb);
	if (!name || !keep) {
		free(name);
		free(keep);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	pthread_mutex_lock(&h->lock);
	if (!h->pod_name && !h->closed) {
		h->pod_name = keep;
		keep = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	free(keep);
	*out = name;
	return 0;
}

int sbx_handle_pod_ip(sbx_handle *h, char **out)
{
	if (!h || !out)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_pod_ip: no handle or output");
	*out = NULL;
	cJSON *sb = NULL;
	int rc = sbx__handle_get_sandbox(h, &sb);
	if (rc)
		return rc;
	char ip[SBX_IP_SIZE];
	if (sbx_pick_pod_ip(k8s_obj_at(sb, "status.podIPs"), ip) && !(*out = strdup(ip)))
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	cJSON_Delete(sb);
	return rc;
}

int sbx_handle_status(sbx_handle *h, sbx_state *state, char **message)
{
	if (!h || !state)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_status: no handle or output");
	if (message)
		*message = NULL;
	cJSON *sb = NULL;
	int rc = sbx__handle_get_sandbox(h, &sb);
	const char *msg;
	char buf[512];
	if (rc == ASB_ENOTFOUND) {
		*state = SBX_STATE_NOT_FOUND;
		snprintf(buf, sizeof(buf), "Sandbox %s/%s not found", h->ns, h->sandbox_id);
		msg = buf;
	} else if (rc) {
		return rc;
	} else {
		const cJSON *c, *ready = NULL;
		cJSON_ArrayForEach(c, k8s_obj_at(sb, "status.conditions"))
			if (ju_str_eq(ju_str(c, "type"), SBX_CONDITION_READY))
				ready = c;
		*state = ready && ju_str_eq(ju_str(ready, "status"), "True") ? SBX_STATE_READY
		                                                              : SBX_STATE_NOT_READY;
		msg = ready ? ju_nz(ju_str(ready, "message")) : "Sandbox has no Ready condition yet";
	}
	rc = 0;
	if (message && !(*message = strdup(msg)))
		rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	cJSON_Delete(sb);
	return rc;
}

void sbx_handle_close(sbx_handle *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->closed = true;
	free(h->pod_name);
	h->pod_name = NULL;
	sbx__http_pool_clear(h);
	pthread_mutex_unlock(&h->lock);
	sbx__handle_disconnect(h);
}

int sbx_handle_terminate(sbx_handle *h)
{
	if (!h)
		return asb_error_set(ASB_EINVAL, 0, NULL, "sbx_handle_terminate: no handle");
	sbx_handle_close(h);
	pthread_mutex_lock(&h->lock);
	bool first = !h->terminated;
	__atomic_store_n(&h->terminated, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&h->lock);
	if (!first)
		return 0;
	int rc = sbx_client_delete_claim(h->client, h->ns, h->claim);
	asb_log(h->client->logger, ASB_LOG_DEBUG, "claim deleted", "namespace", h->ns,
	        "claim", h->claim, "result", rc ? sbx_strerror(rc) : "ok", NULL);
	return rc == ASB_ENOTFOUND ? 0 : rc;
}
