/*
 * resolve.c - target resolution over the cache view (resolve.h).
 */
#include <stdio.h>
#include <string.h>
#include "resolve.h"

const char *rt_source_name(rt_source s)
{
	switch (s) {
	case RT_SRC_POD_IP: return "pod-ip";
	case RT_SRC_CACHE: return "cache-name";
	default: return "dns";
	}
}

/* The Sandbox's pod: the named Pod when the Sandbox controls it, else any
 * live Pod it controls. Returns true when one was found. */
static bool sandbox_pod(const rt_cache_view *v, const char *ns, const rt_sandbox_info *sb,
                        rt_pod_info *out)
{
	if (v->pod(v->ud, ns, sb->pod_name, out) == 0 && strcmp(out->owner_uid, sb->uid) == 0)
		return true;
	rt_pod_info owned[4];
	int n = v->pods_owned(v->ud, sb->uid, owned, 4);
	for (int i = 0; i < n && i < 4; i++)
		/* an ownerReference is anyone's to write: only a Pod of the
		 * Sandbox's own namespace is its pod */
		if (!owned[i].deleting && strcmp(owned[i].owner_uid, sb->uid) == 0 &&
		    strcmp(owned[i].ns, ns) == 0) {
			*out = owned[i];
			return true;
		}
	return false;
}

static bool ip_in(const rt_ip *ip, char ips[][46], int n)
{
	for (int i = 0; i < n; i++) {
		rt_ip other;
		if (rt_ip_parse(ips[i], &other) && rt_ip_equal(ip, &other))
			return true;
	}
	return false;
}

/* Whether a live (not deleting) cached Pod has IP `ip`. */
static bool live_pod_has_ip(const rt_cache_view *v, const rt_ip *ip)
{
	rt_pod_info holders[4];
	int n = v->pods_with_ip(v->ud, ip->text, holders, 4);
	for (int i = 0; i < n && i < 4; i++)
		if (!holders[i].deleting)
			return true;
	return false;
}

static void set_ip_target(rt_target *out, rt_source src, const rt_ip *ip, int port)
{
	out->source = src;
	out->is_ip = true;
	out->ip = *ip;
	out->port = port;
	size_t n = strnlen(ip->text, sizeof(ip->text) - 1);  /* text[46] < host[300] */
	memcpy(out->host, ip->text, n);
	out->host[n] = '\0';
}

int rt_resolve(const rt_route *r, const rt_cache_view *view, const char *cluster_domain,
               bool allow_loopback, rt_target *out, rt_reject *rej)
{
	memset(out, 0, sizeof(*out));
	bool auth = view && view->authoritative(view->ud, r->ns);
	rt_sandbox_info sb;
	rt_pod_info pod;
	bool have_sb = false, have_pod = false;
	if (auth) {
		if (view->sandbox(view->ud, r->ns, r->id, &sb) < 0)
			return rt_reject_set(rej, 404, "Sandbox %s/%s not found.", r->ns, r->id);
		have_sb = true;
		have_pod = sandbox_pod(view, r->ns, &sb, &pod);
		out->cached = true;
		out->idle = sb.idle;
		out->pod_ready = have_pod && pod.ready && !pod.deleting;
	}

	/* authoritative: the header may only name an IP of the Sandbox's live
	 * pod; with none known it is not dialled at all (resolved by name) */
	bool pinned = have_pod && !pod.deleting && pod.nips > 0;
	bool use_header = r->has_pod_ip && (!have_sb || pinned);
	if (use_header && pinned && !ip_in(&r->pod_ip, pod.ips, pod.nips)) {
		/* another live pod's IP is refused; an IP that no live pod holds
		 * is stale (the pod it named is gone: the Sandbox was suspended
		 * and resumed, its pod recreated): ignored, resolved by name */
		if (live_pod_has_ip(view, &r->pod_ip))
			return rt_reject_set(rej, 400, "Invalid target IP address.");
		use_header = false;
	}
	if (use_header) {
		if (view && view->synced(view->ud)) {
			rt_pod_info others[4];
			int n = view->pods_with_ip(view->ud, r->pod_ip.text, others, 4);
			for (int i = 0; i < n && i < 4; i++) {
				bool same = strcmp(others[i].ns, r->ns) == 0 &&
				            strcmp(others[i].owner_name, r->id) == 0 &&
				            (!have_sb || strcmp(others[i].owner_uid, sb.uid) == 0);
				if (!same && !others[i].deleting)
					return rt_reject_set(rej, 400, "Invalid target IP address.");
			}
		}
		set_ip_target(out, RT_SRC_POD_IP, &r->pod_ip, r->port);
		return 0;
	}

	if (have_pod && pod.ready && !pod.deleting && !pod.warm_pool && !sb.warm_pool) {
		for (int i = 0; i < pod.nips; i++) {
			rt_ip ip;
			if (rt_ip_parse(pod.ips[i], &ip) && rt_ip_allowed(&ip, allow_loopback)) {
				set_ip_target(out, RT_SRC_CACHE, &ip, r->port);
				return 0;
			}
		}
	}
	out->source = RT_SRC_DNS;
	out->port = r->port;
	snprintf(out->host, sizeof(out->host), "%s.%s.svc.%s", r->id, r->ns, cluster_domain);
	return 0;
}
