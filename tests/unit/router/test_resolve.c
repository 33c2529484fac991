/*
 * test_resolve.c - unit tests of cmd/router/resolve.c over a fake cache
 * view: a Sandbox resolved by name to its Ready Pod's IP, the pod-name
 * annotation of warm-pool Sandboxes, unknown Sandboxes (404 when the cache
 * is authoritative, DNS otherwise), X-Sandbox-Pod-IP accepted only for the
 * IP of the Sandbox's own live pod and never for another Sandbox's, not
 * dialled at all when the cache knows no such IP (starting Sandbox, pod
 * gone or going) or when no live pod holds it (stale: a resumed Sandbox's
 * old pod IP goes by name), unclaimed warm-pool members not reachable by
 * name; the idle facts carried by the target; and cache.c's Sandbox diet
 * (idle policy, Suspended mode, last-activity) and converter.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include "cache.h"
#include "resolve.h"

typedef struct {
	bool synced;
	const char *scope;  /* "" all */
	rt_sandbox_info sb[16];
	char sb_ns[16][64], sb_name[16][64];
	int nsb;
	rt_pod_info pods[16];
	int npods;
} fake;

static bool f_synced(void *ud)
{
	return ((fake *)ud)->synced;
}

static bool f_auth(void *ud, const char *ns)
{
	fake *f = ud;
	return f->synced && (!*f->scope || !strcmp(f->scope, ns));
}

static int f_sandbox(void *ud, const char *ns, const char *name, rt_sandbox_info *out)
{
	fake *f = ud;
	for (int i = 0; i < f->nsb; i++)
		if (!strcmp(f->sb_ns[i], ns) && !strcmp(f->sb_name[i], name))
			return *out = f->sb[i], 0;
	return -1;
}

static int f_pod(void *ud, const char *ns, const char *name, rt_pod_info *out)
{
	fake *f = ud;
	for (int i = 0; i < f->npods; i++)
		if (!strcmp(f->pods[i].ns, ns) && !strcmp(f->pods[i].name, name))
			return *out = f->pods[i], 0;
	return -1;
}

static int f_owned(void *ud, const char *uid, rt_pod_info *out, int cap)
{
	fake *f = ud;
	int n = 0;
	for (int i = 0; i < f->npods && n < cap; i++)
		if (!strcmp(f->pods[i].owner_uid, uid))
			out[n++] = f->pods[i];
	return n;
}

static int f_with_ip(void *ud, const char *ip, rt_pod_info *out, int cap)
{
	fake *f = ud;
	int n = 0;
	for (int i = 0; i < f->npods && n < cap; i++)
		for (int j = 0; j < f->pods[i].nips; j++)
			if (!strcmp(f->pods[i].ips[j], ip) && n < cap)
				out[n++] = f->pods[i];
	return n;
}

static fake F;
static rt_cache_view V = { f_auth, f_synced, f_sandbox, f_pod, f_owned, f_with_ip, &F };

static void add_sandbox(const char *ns, const char *name, const char *uid, const char *podname,
                        bool pool)
{
	ck_assert_int_lt(F.nsb, 16);
	int i = F.nsb++;
	snprintf(F.sb_ns[i], 64, "%s", ns);
	snprintf(F.sb_name[i], 64, "%s", name);
	memset(&F.sb[i], 0, sizeof(F.sb[i]));
	snprintf(F.sb[i].uid, 64, "%s", uid);
	snprintf(F.sb[i].pod_name, 254, "%s", podname ? podname : name);
	F.sb[i].warm_pool = pool;
}

static rt_pod_info *add_pod(const char *ns, const char *name, const char *owner_uid,
                            const char *owner_name, const char *ip, bool ready)
{
	ck_assert_int_lt(F.npods, 16);
	rt_pod_info *p = &F.pods[F.npods++];
	memset(p, 0, sizeof(*p));
	snprintf(p->ns, 64, "%s", ns);
	snprintf(p->name, 254, "%s", name);
	snprintf(p->owner_uid, 64, "%s", owner_uid);
	snprintf(p->owner_name, 254, "%s", owner_name);
	if (ip)
		snprintf(p->ips[p->nips++], 46, "%s", ip);
	p->ready = ready;
	return p;
}

static void setup(void)
{
	memset(&F, 0, sizeof(F));
	F.synced = true;
	F.scope = "";
	add_sandbox("team", "alpha", "u-alpha", NULL, false);
	add_pod("team", "alpha", "u-alpha", "alpha", "10.0.0.1", true);
	add_sandbox("team", "beta", "u-beta", NULL, false);
	add_pod("team", "beta", "u-beta", "beta", "10.0.0.2", true);
	/* adopted from a warm pool: pod name from the annotation */
	add_sandbox("team", "claimed", "u-claimed", "pool-abc12", false);
	add_pod("team", "pool-abc12", "u-claimed", "claimed", "10.0.0.3", true);
	/* unclaimed pool member */
	add_sandbox("team", "pool-xyz", "u-pool", NULL, true);
	rt_pod_info *p = add_pod("team", "pool-xyz", "u-pool", "pool-xyz", "10.0.0.4", true);
	p->warm_pool = true;
	/* starting: pod without readiness */
	add_sandbox("team", "starting", "u-start", NULL, false);
	add_pod("team", "starting", "u-start", "starting", "10.0.0.5", false);
	add_sandbox("team", "loop", "u-loop", NULL, false);
	add_pod("team", "loop", "u-loop", "loop", "127.0.1.9", true);
}

static int resolve(const char *ns, const char *id, const char *podip, bool loopback,
                   const rt_cache_view *v, rt_target *t, rt_reject *rej)
{
	rt_route r;
	memset(&r, 0, sizeof(r));
	snprintf(r.ns, sizeof(r.ns), "%s", ns);
	snprintf(r.id, sizeof(r.id), "%s", id);
	r.port = 8888;
	if (podip) {
		ck_assert(rt_ip_parse(podip, &r.pod_ip));
		r.has_pod_ip = true;
	}
	memset(rej, 0, sizeof(*rej));
	return rt_resolve(&r, v, "cluster.local", loopback, t, rej);
}

START_TEST(by_name)
{
	setup();
	rt_target t;
	rt_reject rej;
	ck_assert_int_eq(resolve("team", "alpha", NULL, false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_CACHE);
	ck_assert_str_eq(t.host, "10.0.0.1");
	ck_assert_int_eq(t.port, 8888);
	ck_assert(t.is_ip);
	ck_assert_int_eq(resolve("team", "claimed", NULL, false, &V, &t, &rej), 0);
	ck_assert_str_eq(t.host, "10.0.0.3");
	ck_assert_str_eq(rt_source_name(t.source), "cache-name");
}
END_TEST

START_TEST(unknown_and_dns)
{
	setup();
	rt_target t;
	rt_reject rej;
	ck_assert_int_eq(resolve("team", "nobody", NULL, false, &V, &t, &rej), -1);
	ck_assert_int_eq(rej.status, 404);
	ck_assert_str_eq(rej.detail, "Sandbox team/nobody not found.");
	/* a pod IP does not make an unknown Sandbox known */
	ck_assert_int_eq(resolve("team", "nobody", "10.9.9.9", false, &V, &t, &rej), -1);
	ck_assert_int_eq(rej.status, 404);
	/* not authoritative: before the sync, outside the scope, no cache */
	F.synced = false;
	ck_assert_int_eq(resolve("team", "nobody", NULL, false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	ck_assert_str_eq(t.host, "nobody.team.svc.cluster.local");
	F.synced = true;
	F.scope = "other";
	ck_assert_int_eq(resolve("team", "alpha", NULL, false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	ck_assert_int_eq(resolve("team", "alpha", NULL, false, NULL, &t, &rej), 0);
	ck_assert_str_eq(t.host, "alpha.team.svc.cluster.local");
	/* known but not Ready, or an unclaimed pool member: DNS (connect retries) */
	F.scope = "";
	ck_assert_int_eq(resolve("team", "starting", NULL, false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	ck_assert_int_eq(resolve("team", "pool-xyz", NULL, false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	/* a cached loopback IP is used only with --allow-loopback-pod-ip */
	ck_assert_int_eq(resolve("team", "loop", NULL, false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	ck_assert_int_eq(resolve("team", "loop", NULL, true, &V, &t, &rej), 0);
	ck_assert_str_eq(t.host, "127.0.1.9");
}
END_TEST

START_TEST(pod_ip_header)
{
	setup();
	rt_target t;
	rt_reject rej;
	/* its own IP: dialled as given */
	ck_assert_int_eq(resolve("team", "alpha", "10.0.0.1", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_POD_IP);
	ck_assert_str_eq(t.host, "10.0.0.1");
	/* a warm-pool member by pod IP (how the SDK reaches one) */
	ck_assert_int_eq(resolve("team", "pool-xyz", "10.0.0.4", false, &V, &t, &rej), 0);
	ck_assert_str_eq(t.host, "10.0.0.4");
	ck_assert_int_eq(resolve("team", "claimed", "10.0.0.3", false, &V, &t, &rej), 0);
	/* another Sandbox's IP is refused */
	ck_assert_int_eq(resolve("team", "alpha", "10.0.0.2", false, &V, &t, &rej), -1);
	ck_assert_int_eq(rej.status, 400);
	ck_assert_str_eq(rej.detail, "Invalid target IP address.");
	/* an IP no live pod has is stale: not dialled, the request goes by name */
	ck_assert_int_eq(resolve("team", "alpha", "10.7.7.7", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_CACHE);
	ck_assert_str_eq(t.host, "10.0.0.1");
	/* outside the cache's scope: still never another Sandbox's pod */
	F.scope = "other";
	ck_assert_int_eq(resolve("team", "alpha", "10.0.0.2", false, &V, &t, &rej), -1);
	ck_assert_int_eq(resolve("team", "alpha", "10.7.7.7", false, &V, &t, &rej), 0);
	/* without a cache only the contract's class checks apply */
	ck_assert_int_eq(resolve("team", "alpha", "10.0.0.2", false, NULL, &t, &rej), 0);
	/* a pod that is starting (not Ready) is reached at its own IP only */
	F.scope = "";
	ck_assert_int_eq(resolve("team", "starting", "10.0.0.5", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_POD_IP);
	/* another IP: by name, and not Ready yet: DNS (the connect retries) */
	ck_assert_int_eq(resolve("team", "starting", "10.7.7.7", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	ck_assert_int_eq(resolve("team", "starting", "10.0.0.1", false, &V, &t, &rej), -1);
	ck_assert_int_eq(rej.status, 400);
}
END_TEST

/* A Sandbox suspended and resumed has a new pod with a new IP; the SDK may
 * still send the old one. While no live pod holds the old IP the request
 * goes by name (to the new pod once Ready); once another Sandbox's live
 * pod holds it, it is refused; the pod of the Sandbox itself on its way
 * out does not make it refused. */
START_TEST(pod_ip_header_of_a_resumed_sandbox)
{
	setup();
	rt_target t;
	rt_reject rej;
	add_sandbox("team", "napper", "u-nap", NULL, false);
	/* suspended: no pod, so the old IP is not dialled */
	ck_assert_int_eq(resolve("team", "napper", "10.0.0.20", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	/* resumed, its new pod starting, then Ready at a new IP */
	rt_pod_info *p = add_pod("team", "napper", "u-nap", "napper", "10.0.0.21", false);
	ck_assert_int_eq(resolve("team", "napper", "10.0.0.20", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	p->ready = true;
	ck_assert_int_eq(resolve("team", "napper", "10.0.0.20", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_CACHE);
	ck_assert_str_eq(t.host, "10.0.0.21");
	/* the new IP itself is dialled as given */
	ck_assert_int_eq(resolve("team", "napper", "10.0.0.21", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_POD_IP);
	/* a pod being deleted that still has the old IP: still by name */
	add_pod("team", "napper-old", "u-nap", "napper", "10.0.0.20", true)->deleting = true;
	ck_assert_int_eq(resolve("team", "napper", "10.0.0.20", false, &V, &t, &rej), 0);
	ck_assert_str_eq(t.host, "10.0.0.21");
	/* the old IP now another Sandbox's live pod's: refused */
	add_sandbox("team", "other", "u-other", NULL, false);
	add_pod("team", "other", "u-other", "other", "10.0.0.20", true);
	ck_assert_int_eq(resolve("team", "napper", "10.0.0.20", false, &V, &t, &rej), -1);
	ck_assert_int_eq(rej.status, 400);
}
END_TEST

/* The idle facts of a cached Sandbox travel with the target. */
START_TEST(idle_facts_in_target)
{
	setup();
	rt_target t;
	rt_reject rej;
	add_sandbox("team", "idler", "u-idler", NULL, false);
	F.sb[F.nsb - 1].idle = (rt_idle_info){ .timeout_ms = 60000, .resumable = true,
	                                       .suspended = true, .last_activity_ms = 5000 };
	ck_assert_int_eq(resolve("team", "idler", NULL, false, &V, &t, &rej), 0);
	ck_assert(t.cached);
	ck_assert_int_eq(t.idle.timeout_ms, 60000);
	ck_assert(t.idle.resumable && t.idle.suspended && !t.idle.applies);
	ck_assert_int_eq(t.idle.last_activity_ms, 5000);
	ck_assert(!t.pod_ready);  /* no pod */
	ck_assert_int_eq(resolve("team", "alpha", NULL, false, &V, &t, &rej), 0);
	ck_assert(t.cached && t.idle.timeout_ms == 0 && !t.idle.applies);
	ck_assert(t.pod_ready);
	/* a pod not Ready: by name to DNS, and said so (a request for a
	 * Sandbox with the Suspend policy waits for Ready, proxy.c); also when
	 * the header names the pod's IP */
	ck_assert_int_eq(resolve("team", "starting", NULL, false, &V, &t, &rej), 0);
	ck_assert(t.cached && !t.pod_ready && t.source == RT_SRC_DNS);
	ck_assert_int_eq(resolve("team", "starting", "10.0.0.5", false, &V, &t, &rej), 0);
	ck_assert(t.cached && !t.pod_ready && t.source == RT_SRC_POD_IP);
	/* not authoritative: nothing known */
	F.synced = false;
	ck_assert_int_eq(resolve("team", "idler", NULL, false, &V, &t, &rej), 0);
	ck_assert(!t.cached && !t.idle.resumable && t.idle.timeout_ms == 0);
}
END_TEST

/* An ownerReference is anyone's to write: a Pod in another namespace that
 * names a Sandbox's UID as its controller is never that Sandbox's pod. */
START_TEST(owned_pod_of_another_namespace_ignored)
{
	setup();
	rt_target t;
	rt_reject rej;
	add_sandbox("victim-ns", "victim", "u-victim", NULL, false);
	add_pod("attacker-ns", "evil", "u-victim", "victim", "10.6.6.6", true);
	ck_assert_int_eq(resolve("victim-ns", "victim", NULL, false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	/* nor is its IP what the header gets pinned to */
	ck_assert_int_eq(resolve("victim-ns", "victim", "10.6.6.6", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	/* a Pod of the Sandbox's own namespace that it controls is */
	add_pod("victim-ns", "victim-other", "u-victim", "victim", "10.6.6.7", true);
	ck_assert_int_eq(resolve("victim-ns", "victim", NULL, false, &V, &t, &rej), 0);
	ck_assert_str_eq(t.host, "10.6.6.7");
}
END_TEST

/* The cache is authoritative and knows no live pod IP for the Sandbox:
 * the header is never dialled, whatever it names; the request goes by name
 * as for a Sandbox not Ready yet. */
START_TEST(pod_ip_header_without_known_ip)
{
	setup();
	rt_target t;
	rt_reject rej;
	/* no Pod cached yet */
	add_sandbox("team", "fresh", "u-fresh", NULL, false);
	static const char *const any[] = { "127.0.0.1", "10.0.0.6", "10.9.9.9", "192.168.1.1" };
	for (size_t i = 0; i < sizeof(any) / sizeof(any[0]); i++) {
		ck_assert_int_eq(resolve("team", "fresh", any[i], true, &V, &t, &rej), 0);
		ck_assert_int_eq(t.source, RT_SRC_DNS);
		ck_assert_str_eq(t.host, "fresh.team.svc.cluster.local");
	}
	/* a Pod without an IP yet */
	add_sandbox("team", "noip", "u-noip", NULL, false);
	add_pod("team", "noip", "u-noip", "noip", NULL, false);
	ck_assert_int_eq(resolve("team", "noip", "10.0.0.6", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	/* a Pod being deleted: its IP is on its way to someone else */
	add_sandbox("team", "going", "u-going", NULL, false);
	add_pod("team", "going", "u-going", "going", "10.0.0.8", true)->deleting = true;
	ck_assert_int_eq(resolve("team", "going", "10.0.0.8", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
	/* another Sandbox's pod is still refused outright */
	ck_assert_int_eq(resolve("team", "fresh", "10.0.0.2", false, &V, &t, &rej), 0);
	ck_assert_int_eq(t.source, RT_SRC_DNS);
}
END_TEST

START_TEST(sandbox_diet)
{
	cJSON *sb = cJSON_Parse(
		"{\"apiVersion\":\"agents.x-k8s.io/v1beta1\",\"kind\":\"Sandbox\","
		"\"metadata\":{\"name\":\"s1\",\"namespace\":\"team\",\"uid\":\"u1\",\"resourceVersion\":\"7\","
		"\"labels\":{\"agents.x-k8s.io/warm-pool-sandbox\":\"abcd\",\"other\":\"x\"},"
		"\"annotations\":{\"agents.x-k8s.io/pod-name\":\"pool-1\",\"big\":\"yyyy\"},"
		"\"managedFields\":[{}]},"
		"\"spec\":{\"podTemplate\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}},"
		"\"status\":{\"podIPs\":[\"10.1.1.1\",{\"ip\":\"fd00::1\"}],\"conditions\":[]}}");
	ck_assert_ptr_nonnull(sb);
	cJSON *d = rt_cache_sandbox_transform(sb, NULL);
	char *s = cJSON_PrintUnformatted(d);
	ck_assert_str_eq(s, "{\"metadata\":{\"name\":\"s1\",\"namespace\":\"team\",\"uid\":\"u1\","
	                    "\"resourceVersion\":\"7\",\"labels\":{\"agents.x-k8s.io/warm-pool-sandbox\":\"abcd\"},"
	                    "\"annotations\":{\"agents.x-k8s.io/pod-name\":\"pool-1\"}}}");
	cJSON_free(s);
	rt_sandbox_info info;
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert_str_eq(info.uid, "u1");
	ck_assert_str_eq(info.pod_name, "pool-1");
	ck_assert(info.warm_pool);
	ck_assert_int_eq(info.idle.timeout_ms, 0);
	ck_assert(!info.idle.applies && !info.idle.resumable && !info.idle.suspended);
	cJSON_Delete(d);
}
END_TEST

/* The diet keeps what idle tracking and resume read: the idle policy, a
 * Suspended operatingMode (not Running, every Sandbox's default) and the
 * last-activity annotation; and the converter judges them with
 * sandbox/idle.h. */
START_TEST(sandbox_diet_idle)
{
	static const char *const running =
		"{\"metadata\":{\"name\":\"s2\",\"namespace\":\"team\",\"uid\":\"u2\","
		"\"annotations\":{\"agents.x-k8s.io/last-activity\":\"2026-01-02T03:04:05Z\","
		"\"agents.x-k8s.io/idle-suspended-at\":\"2026-01-02T03:00:00Z\"}},"
		"\"spec\":{\"operatingMode\":\"Running\",\"idleTimeoutSeconds\":120,"
		"\"podTemplate\":{}}}";
	cJSON *d = rt_cache_sandbox_transform(cJSON_Parse(running), NULL);
	char *s = cJSON_PrintUnformatted(d);
	ck_assert_str_eq(s, "{\"metadata\":{\"name\":\"s2\",\"namespace\":\"team\",\"uid\":\"u2\","
	                    "\"annotations\":{\"agents.x-k8s.io/last-activity\":\"2026-01-02T03:04:05Z\"}},"
	                    "\"spec\":{\"idleTimeoutSeconds\":120}}");
	cJSON_free(s);
	rt_sandbox_info info;
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert_int_eq(info.idle.timeout_ms, 120000);
	ck_assert(info.idle.applies && !info.idle.resumable && !info.idle.suspended);
	ck_assert(info.idle.wakes);  /* running, policy Suspend: requests wait for Ready */
	ck_assert_int_eq(info.idle.last_activity_ms, 1767323045000LL);
	cJSON_Delete(d);

	static const char *const suspended =
		"{\"metadata\":{\"name\":\"s3\",\"namespace\":\"team\",\"uid\":\"u3\"},"
		"\"spec\":{\"operatingMode\":\"Suspended\",\"idleTimeoutSeconds\":30,"
		"\"idlePolicy\":\"Suspend\"}}";
	d = rt_cache_sandbox_transform(cJSON_Parse(suspended), NULL);
	s = cJSON_PrintUnformatted(d);
	ck_assert_str_eq(s, "{\"metadata\":{\"name\":\"s3\",\"namespace\":\"team\",\"uid\":\"u3\"},"
	                    "\"spec\":{\"idleTimeoutSeconds\":30,\"idlePolicy\":\"Suspend\","
	                    "\"operatingMode\":\"Suspended\"}}");
	cJSON_free(s);
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert(info.idle.resumable && info.idle.suspended && !info.idle.applies);
	ck_assert(info.idle.wakes);
	ck_assert_int_eq(info.idle.last_activity_ms, 0);
	cJSON_Delete(d);

	/* the Delete policy is never resumed; a suspended Sandbox without a
	 * policy neither (both keep the Suspended mode) */
	d = rt_cache_sandbox_transform(cJSON_Parse(
		"{\"metadata\":{\"name\":\"s4\"},\"spec\":{\"operatingMode\":\"Suspended\","
		"\"idleTimeoutSeconds\":30,\"idlePolicy\":\"Delete\"}}"), NULL);
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert(!info.idle.resumable && info.idle.suspended && !info.idle.wakes);
	cJSON_Delete(d);
	d = rt_cache_sandbox_transform(cJSON_Parse(
		"{\"metadata\":{\"name\":\"s5\"},\"spec\":{\"operatingMode\":\"Suspended\"}}"), NULL);
	s = cJSON_PrintUnformatted(d);
	ck_assert_str_eq(s, "{\"metadata\":{\"name\":\"s5\"},\"spec\":{\"operatingMode\":\"Suspended\"}}");
	cJSON_free(s);
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert(!info.idle.resumable && info.idle.suspended && info.idle.timeout_ms == 0);
	ck_assert(!info.idle.wakes);
	cJSON_Delete(d);
	/* being deleted: not resumable, not tracked */
	d = rt_cache_sandbox_transform(cJSON_Parse(
		"{\"metadata\":{\"name\":\"s6\",\"deletionTimestamp\":\"2026-01-02T03:04:05Z\"},"
		"\"spec\":{\"operatingMode\":\"Suspended\",\"idleTimeoutSeconds\":30}}"), NULL);
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert(!info.idle.resumable && !info.idle.applies && !info.idle.wakes);
	cJSON_Delete(d);
	/* an unclaimed pool member is reached by pod IP only: nothing waits */
	d = rt_cache_sandbox_transform(cJSON_Parse(
		"{\"metadata\":{\"name\":\"s7\",\"labels\":{\"agents.x-k8s.io/warm-pool-sandbox\":\"p\"}},"
		"\"spec\":{\"idleTimeoutSeconds\":30}}"), NULL);
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert(info.warm_pool && !info.idle.wakes);
	cJSON_Delete(d);
	/* nor is one suspended by hand resumed by a request naming it */
	d = rt_cache_sandbox_transform(cJSON_Parse(
		"{\"metadata\":{\"name\":\"s8\",\"labels\":{\"agents.x-k8s.io/warm-pool-sandbox\":\"p\"}},"
		"\"spec\":{\"operatingMode\":\"Suspended\",\"idleTimeoutSeconds\":30}}"), NULL);
	ck_assert_int_eq(rt_cache_sandbox_info(d, &info), 0);
	ck_assert(info.warm_pool && info.idle.suspended && !info.idle.resumable && !info.idle.wakes);
	cJSON_Delete(d);
}
END_TEST

START_TEST(pod_ip_index)
{
	cJSON *pod = cJSON_Parse("{\"status\":{\"podIP\":\"10.0.0.9\",\"podIPs\":[{\"ip\":\"10.0.0.9\"},"
	                         "{\"ip\":\"fd00::9\"}]}}");
	const char *keys[4];
	ck_assert_int_eq(rt_cache_index_pod_ips(pod, keys, 4, NULL), 2);
	ck_assert_str_eq(keys[0], "10.0.0.9");
	ck_assert_str_eq(keys[1], "fd00::9");
	cJSON_Delete(pod);
	pod = cJSON_Parse("{\"status\":{\"podIP\":\"10.0.0.8\"}}");
	ck_assert_int_eq(rt_cache_index_pod_ips(pod, keys, 4, NULL), 1);
	cJSON_Delete(pod);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("resolve");
	TCase *tc = tcase_create("resolve");
	tcase_add_test(tc, by_name);
	tcase_add_test(tc, unknown_and_dns);
	tcase_add_test(tc, pod_ip_header);
	tcase_add_test(tc, pod_ip_header_without_known_ip);
	tcase_add_test(tc, pod_ip_header_of_a_resumed_sandbox);
	tcase_add_test(tc, idle_facts_in_target);
	tcase_add_test(tc, owned_pod_of_another_namespace_ignored);
	tcase_add_test(tc, sandbox_diet);
	tcase_add_test(tc, sandbox_diet_idle);
	tcase_add_test(tc, pod_ip_index);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
