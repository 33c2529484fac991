/*
 * connect.c - the way from a handle to its sandbox (docs/upstream.md#connection-configs):
 * the router at a given URL, at a Gateway's address, or behind a local
 * kubectl tunnel; or the pod itself from inside the cluster. The URL is
 * worked out on the first request and kept until a transport failure or
 * close, as upstream's connectors do.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "handle_internal.h"
#include "jsonutil.h"
#include "k8s/object.h"
#include "sandbox/clientclaim.h"

static const k8s_resource gateways = {
	.group = "gateway.networking.k8s.io", .version = "v1",
	.resource = "gateways", .kind = "Gateway", .namespaced = true,
};

/* ---- Gateway addresses ---- */

/* True when every dot-separated label is decimal digits or 0x-hex. */
static bool all_numeric_labels(const char *s)
{
	const char *p = s;
	while (*p) {
		const char *end = strchr(p, '.');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		size_t i = 0;
		bool hex = n > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
		for (i = hex ? 2 : 0; i < n; i++)
			if (hex ? !isxdigit((unsigned char)p[i]) : !isdigit((unsigned char)p[i]))
				return false;
		if (n == 0)
			return false;
		p += n + (end ? 1 : 0);
		if (!end)
			break;
	}
	return true;
}

bool sbx_gateway_address_valid(const char *v)
{
	if (ju_empty(v))
		return false;
	unsigned char buf[sizeof(struct in6_addr)];
	if (inet_pton(AF_INET, v, buf) == 1 || inet_pton(AF_INET6, v, buf) == 1)
		return true;
	size_t len = strlen(v);
	if (len > 253 || v[len - 1] == '.')
		return false;
	const char *p = v;
	for (;;) {
		const char *end = strchr(p, '.');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n == 0 || n > 63 || p[0] == '-' || p[n - 1] == '-')
			return false;
		for (size_t i = 0; i < n; i++)
			if (!isalnum((unsigned char)p[i]) && p[i] != '-')
				return false;
		if (!end)
			break;
		p = end + 1;
	}
	/* "2130706433" or "0x7f.1" would be read as an IPv4 address by some
	 * resolvers: refuse what is not plainly a name. */
	return !all_numeric_labels(v);
}

typedef struct {
	char addr[256];
	sbx_handle *h;
} gw_wait;

static int on_gateway(k8s_watch_event_type type, cJSON *obj, void *ud)
{
	gw_wait *w = ud;
	const cJSON *a;
	if (type == K8S_WATCH_ADDED || type == K8S_WATCH_MODIFIED) {
		cJSON_ArrayForEach(a, k8s_obj_at(obj, "status.addresses")) {
			const char *v = ju_str(a, "value");
			if (!cJSON_IsObject(a) || ju_empty(v))
				continue;
			if (!sbx_gateway_address_valid(v)) {
				asb_log(w->h->client->logger, ASB_LOG_WARN, "gateway address skipped",
				        "gateway", w->h->gateway_name, "address", v, NULL);
				continue;
			}
			snprintf(w->addr, sizeof(w->addr), "%s", v);
			break;
		}
	}
	cJSON_Delete(obj);
	return w->addr[0] != '\0';
}

/* Waits on one watch until the Gateway has a usable address. */
static int gateway_url(sbx_handle *h, char **url)
{
	gw_wait w = { "", h };
	char selector[300];
	snprintf(selector, sizeof(selector), "metadata.name=%s", h->gateway_name);
	int64_t deadline = k8s_monotonic_ms() + h->conn.gateway_ready_timeout_ms;
	int rc = 0;
	for (;;) {
		long secs = (long)((deadline - k8s_monotonic_ms()) / 1000);
		if (secs < 1) {
			rc = asb_error_set(ASB_ETIMEOUT, 0, NULL, "Gateway %s/%s got no address within "
			                   "%g seconds", h->gateway_ns, h->gateway_name,
			                   (double)h->conn.gateway_ready_timeout_ms / 1000.0);
			break;
		}
		k8s_list_options lo = K8S_LIST_OPTIONS_INIT;
		lo.field_selector = selector;
		lo.resource_version = "0";  /* the current object first, then changes */
		lo.timeout_seconds = secs;
		rc = k8s_client_watch(sbx_client_k8s(h->client), &gateways, h->gateway_ns, &lo,
		                      on_gateway, &w, NULL);
		if (w.addr[0] || (rc != 0 && rc != ASB_EGONE))
			break;
	}
	if (!w.addr[0])
		return rc;
	bool v6 = strchr(w.addr, ':') != NULL;
	*url = ju_printf(v6 ? "http://[%s]" : "http://%s", w.addr);
	return *url ? 0 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
}

/* ---- in-cluster ---- */

/* http://<pod IP>:<port>, else the per-sandbox Service's DNS name; or one
 * of the two only (in_cluster_address). Only a pod IP is cached: the
 * Service name is tried again each time, as the IP may appear. */
static int incluster_url(sbx_handle *h, char **url, bool *cacheable)
{
	cJSON *sb = NULL;
	char ip[SBX_IP_SIZE];
	const char *found = NULL;
	char *fqdn = NULL;
	sbx_in_cluster_address want = h->conn.in_cluster_address;
	int rc = sbx__handle_get_sandbox(h, &sb);
	if (rc == 0 && want == SBX_IN_CLUSTER_SERVICE) {
		const char *f = k8s_obj_str(sb, "status.serviceFQDN");
		fqdn = ju_empty(f) ? NULL : strdup(f);
	} else if (rc == 0) {
		found = sbx_pick_pod_ip(k8s_obj_at(sb, "status.podIPs"), ip);
	}
	cJSON_Delete(sb);
	*cacheable = found != NULL || fqdn != NULL;
	if (want == SBX_IN_CLUSTER_SERVICE) {
		if (rc == 0 && !fqdn)
			rc = asb_error_set(SBX_ENOSERVICE, 0, NULL, "Sandbox %s/%s has no Service "
			                   "(status.serviceFQDN); set spec.service: true on its "
			                   "template to connect by Service", h->ns, h->sandbox_id);
		if (rc == 0)
			*url = ju_printf("http://%s:%d", fqdn, h->conn.server_port);
		free(fqdn);
		if (rc)
			return rc;
	} else if (found) {
		*url = ju_printf(strchr(found, ':') ? "http://[%s]:%d" : "http://%s:%d", found,
		                 h->conn.server_port);
	} else if (want == SBX_IN_CLUSTER_POD_IP) {
		if (rc == 0)
			rc = asb_error_set(SBX_ENOPODIP, 0, NULL, "Sandbox %s/%s has no pod IP in its "
			                   "status yet", h->ns, h->sandbox_id);
		return rc;
	} else {
		*url = ju_printf("http://%s.%s.svc.%s:%d", h->sandbox_id, h->ns,
		                 SBX_DEFAULT_CLUSTER_DOMAIN, h->conn.server_port);
	}
	return *url ? 0 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
}

/* ---- the tunnel ---- */

static int tunnel_url(sbx_handle *h, char **url)
{
	const char *kubectl = h->kubectl;
	if (ju_empty(kubectl))
		kubectl = getenv("AGENT_SANDBOX_KUBECTL");
	if (ju_empty(kubectl))
		kubectl = "kubectl";
	sbx_tunnel *t = NULL;
	int rc = sbx__tunnel_start(&t, kubectl, sbx_client_kubeconfig(h->client),
	                           sbx_client_context(h->client), h->router_ns,
	                           "svc/" SBX_ROUTER_SERVICE, SBX_ROUTER_PORT,
	                           h->conn.port_forward_ready_timeout_ms);
	if (rc)
		return rc;
	*url = ju_printf("http://127.0.0.1:%d", sbx__tunnel_port(t));
	if (!*url) {
		sbx__tunnel_stop(t);
		return asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	pthread_mutex_lock(&h->lock);
	sbx_tunnel *old = h->tunnel;
	h->tunnel = t;
	pthread_mutex_unlock(&h->lock);
	if (old)
		sbx__tunnel_stop(old);
	return 0;
}

/* ---- the URL ---- */

/* Monotonic milliseconds, with their fraction (discovery timings). */
static double mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* Copies the cached URL, or checks a cached tunnel is still alive. */
static int cached_url(sbx_handle *h, char **url)
{
	int rc = 0;
	*url = NULL;
	pthread_mutex_lock(&h->lock);
	if (h->closed) {
		rc = asb_error_set(SBX_ECLOSED, 0, NULL, "the handle on sandbox %s/%s is closed",
		                   h->ns, h->sandbox_id);
	} else if (h->base_url) {
		if (h->tunnel && !sbx__tunnel_alive(h->tunnel))
			rc = SBX_EPORTFORWARD;  /* recorded by sbx__tunnel_alive() */
		else if (!(*url = strdup(h->base_url)))
			rc = asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	pthread_mutex_unlock(&h->lock);
	return rc;
}

int sbx__handle_base_url(sbx_handle *h, char **url, bool *router)
{
	*router = h->conn.mode != SBX_CONNECT_IN_CLUSTER;
	if (h->conn.mode == SBX_CONNECT_DIRECT) {
		pthread_mutex_lock(&h->lock);
		bool closed = h->closed;
		pthread_mutex_unlock(&h->lock);
		if (closed)
			return asb_error_set(SBX_ECLOSED, 0, NULL, "the handle on sandbox %s/%s is closed",
			                     h->ns, h->sandbox_id);
		size_t n = strlen(h->api_url);
		while (n > 0 && h->api_url[n - 1] == '/')
			n--;
		*url = strndup(h->api_url, n);
		return *url ? 0 : asb_error_set(ASB_ENOMEM, 0, NULL, "out of memory");
	}
	int rc = cached_url(h, url);
	if (rc == SBX_EPORTFORWARD) {
		/* kubectl died: report it, and start afresh on the next call */
		asb_error saved = *asb_error_last();
		char msg[1024];
		snprintf(msg, sizeof(msg), "%s", saved.message);
		sbx__handle_disconnect(h);
		return asb_error_set(SBX_EPORTFORWARD, 0, NULL, "%s", msg);
	}
	if (rc || *url)
		return rc;
	pthread_mutex_lock(&h->connect_lock);
	rc = cached_url(h, url);  /* another thread may have connected meanwhile */
	if (rc == 0 && !*url) {
		bool cacheable = true;
		double t0 = mono_ms();
		switch (h->conn.mode) {
		case SBX_CONNECT_GATEWAY: rc = gateway_url(h, url); break;
		case SBX_CONNECT_LOCAL_TUNNEL: rc = tunnel_url(h, url); break;
		default: rc = incluster_url(h, url, &cacheable); break;
		}
		if (h->conn.on_connect) {
			/* the callback may log or record: keep the error for our caller */
			asb_error saved = *asb_error_last();
			char msg[1024], reason[64];
			snprintf(msg, sizeof(msg), "%s", saved.message);
			snprintf(reason, sizeof(reason), "%s", saved.reason);
			h->conn.on_connect(h->conn.on_connect_userdata, h->conn.mode, rc,
			                   mono_ms() - t0);
			if (rc)
				asb_error_set(saved.code, saved.http_status, reason, "%s", msg);
		}
		if (rc == 0 && cacheable) {
			char *keep = strdup(*url);
			pthread_mutex_lock(&h->lock);
			if (keep && !h->closed) {
				free(h->base_url);
				h->base_url = keep;
				keep = NULL;
			}
			pthread_mutex_unlock(&h->lock);
			free(keep);
		}
	}
	pthread_mutex_unlock(&h->connect_lock);
	return rc;
}

void sbx__handle_disconnect(sbx_handle *h)
{
	pthread_mutex_lock(&h->lock);
	sbx_tunnel *t = h->tunnel;
	h->tunnel = NULL;
	free(h->base_url);
	h->base_url = NULL;
	free(h->pod_ip);
	h->pod_ip = NULL;
	pthread_mutex_unlock(&h->lock);
	if (t)
		sbx__tunnel_stop(t);
}
