"""sandbox-router with its informer caches and TokenReviews against the real
control plane (tools/local-cluster), running as the deploy/router
ServiceAccount: a Sandbox resolved by name to its pod, the pod-IP guards
(another Sandbox's IP refused, unknown Sandboxes 404), a warm-pool Sandbox
reached by pod IP (and by name once claimed), and tokenreview allow and
deny.

kwok gives pods loopback IPs (127.x.y.z); a test sandbox (an HTTP server)
listens on the pod's IP, hence --allow-loopback-pod-ip.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.parse
import uuid

import pytest

from conftest import LOCAL_CLUSTER, ROOT, condition, new_namespace, wait_for
from router_util import Backend, GateProxy, Router, sandbox_headers
from test_sandbox import sandbox, wait_ready

sys.path.insert(0, os.path.join(ROOT, "tools"))
from kubeconfig import Context  # noqa: E402  tools/kubeconfig.py

EXT_API = "extensions.agents.x-k8s.io/v1beta1"


@pytest.fixture(scope="module")
def router_kubeconfig(deployed):
    """deploy/router applied; a kubeconfig of its ServiceAccount."""
    deployed.run("apply", "-k", os.path.join(ROOT, "deploy", "router"))
    p = subprocess.run([LOCAL_CLUSTER, "sa-kubeconfig", "agent-sandbox-system", "sandbox-router"],
                       capture_output=True, text=True, check=True)
    return p.stdout.strip().splitlines()[-1]


def start_router(logdir, kubeconfig, extra=(), name="router"):
    r = Router(logdir, ["--cache-enabled", "--kubeconfig", kubeconfig, "--upstream-max-retries=1",
                        "--upstream-retry-initial-delay=50ms", *extra], name=name)
    return r.wait_ready()


@pytest.fixture(scope="module")
def cached_router(router_kubeconfig, tmp_path_factory):
    r = start_router(tmp_path_factory.mktemp("router-cache"), router_kubeconfig)
    yield r
    rc = r.stop()
    r.assert_clean_log()
    assert rc == 0, r.text()[-3000:]


def pod_ip(kube, name, ns):
    sb = kube.get("sandbox", name, ns)
    ips = (sb.get("status") or {}).get("podIPs") or []
    return ips[0] if ips else None


def running(kube, ns, name):
    """Creates Sandbox ns/name, waits for Ready; returns a test sandbox
    listening on the pod's IP."""
    kube.create(sandbox(name), ns)
    wait_ready(kube, name, ns)
    ip = wait_for(lambda: pod_ip(kube, name, ns), desc=f"podIPs of {ns}/{name}")
    return Backend(host=ip)


def test_sandbox_by_name_and_pod_ip_guards(deployed, ns, cached_router):
    a, b = running(deployed, ns, "alpha"), running(deployed, ns, "beta")
    r = cached_router
    try:
        # by name: the cache gives the pod's IP, no X-Sandbox-Pod-IP needed
        h = sandbox_headers("alpha", port=a.port, ip=None, ns=ns)
        st, _, body = wait_for(lambda: (lambda x: x if x[0] == 200 else None)(r.request("GET", "/echo", h)),
                               timeout=20, desc="alpha by name")
        assert json.loads(body)["headers"] and a.server.seen[-1][1] == "/echo"
        # its own pod IP is fine; another Sandbox's is refused
        assert r.request("GET", "/echo", sandbox_headers("alpha", port=a.port, ip=a.host, ns=ns))[0] == 200
        st, _, body = r.request("GET", "/echo", sandbox_headers("alpha", port=b.port, ip=b.host, ns=ns))
        assert (st, json.loads(body)["detail"]) == (400, "Invalid target IP address.")
        seen_b = len(b.server.seen)
        # unknown Sandboxes: 404 from the cache, no DNS attempt
        st, _, body = r.request("GET", "/", sandbox_headers("nobody", ip=None, ns=ns))
        assert (st, json.loads(body)["detail"]) == (404, f"Sandbox {ns}/nobody not found.")
        st, _, body = r.request("GET", "/", sandbox_headers("nobody", ip=b.host, port=b.port, ns=ns))
        assert st == 404
        assert len(b.server.seen) == seen_b
        # the cache follows the watch: a deleted Sandbox is gone
        deployed.delete("sandbox", "alpha", ns)
        wait_for(lambda: r.request("GET", "/", sandbox_headers("alpha", ip=None, ns=ns))[0] == 404,
                 timeout=30, desc="alpha gone from the cache")
    finally:
        a.close()
        b.close()


def test_tokenreview_allow_and_deny(deployed, ns, router_kubeconfig, tmp_path):
    kube = deployed
    s = running(kube, ns, "tr")
    kube.run("create", "serviceaccount", "caller", "-n", ns)
    kube.run("create", "role", "use-sandboxes", "-n", ns, "--verb=get", "--resource=sandboxes.agents.x-k8s.io")
    kube.run("create", "rolebinding", "caller-uses", "-n", ns, "--role=use-sandboxes",
             f"--serviceaccount={ns}:caller")
    token = kube.run("create", "token", "caller", "-n", ns, "--duration=10m").stdout.strip()
    r = start_router(tmp_path, router_kubeconfig, ["--authz-mode=tokenreview",
                                                  "--authz-tokenreview-require-token"], name="router-tr")
    try:
        ok = sandbox_headers("tr", port=s.port, ip=None, ns=ns, Authorization=f"Bearer {token}")
        st, _, body = wait_for(lambda: (lambda x: x if x[0] == 200 else None)(r.request("GET", "/echo", ok)),
                               timeout=20, desc="allowed by TokenReview + SubjectAccessReview")
        # the token never reaches the sandbox
        assert not any(k.lower() == "authorization" for k, _ in s.server.seen[-1][2])
        assert r.request("GET", "/echo", ok)[0] == 200  # cached decision
        cases = [({}, 401, "unauthenticated"),
                 ({"Authorization": "Bearer not-a-token"}, 401, "unauthenticated"),
                 ({"Authorization": f"Bearer {token}", "X-Sandbox-Namespace": "default"}, 403, "forbidden")]
        for extra, want, detail in cases:
            h = {**sandbox_headers("tr", port=s.port, ip=None, ns=ns), **extra}
            st, _, body = r.request("GET", "/echo", h)
            assert (st, json.loads(body)["detail"]) == (want, detail), extra
        m = r.metrics()
        assert f'sandbox_router_authz_decisions_total{{decision="allow",sandbox_namespace="{ns}"}} 2' in m
        assert 'sandbox_router_authz_decisions_total{decision="deny",sandbox_namespace="default"} 1' in m
    finally:
        s.close()
        assert r.stop() == 0
        r.assert_clean_log()


def test_warm_pool_sandbox_by_pod_ip(deployed, extensions_controller, router_kubeconfig, ns, tmp_path):
    kube = deployed
    kube.create({"apiVersion": EXT_API, "kind": "SandboxTemplate", "metadata": {"name": "tpl"},
                 "spec": {"podTemplate": {"spec": {"containers": [{"name": "main",
                                                                  "image": "registry.k8s.io/pause:3.10"}]}}}}, ns)
    kube.create({"apiVersion": EXT_API, "kind": "SandboxWarmPool", "metadata": {"name": "pool"},
                 "spec": {"replicas": 1, "sandboxTemplateRef": {"name": "tpl"}}}, ns)

    def member():
        for sb in kube.list("sandboxes", ns):
            c = condition(sb, "Ready")
            if c and c["status"] == "True" and (sb["status"].get("podIPs") or []):
                return sb
        return None
    sb = wait_for(member, timeout=60, desc="a Ready warm-pool member")
    name, ip = sb["metadata"]["name"], sb["status"]["podIPs"][0]
    assert "agents.x-k8s.io/warm-pool-sandbox" in sb["metadata"]["labels"]
    s = Backend(host=ip)
    r = start_router(tmp_path, router_kubeconfig, name="router-pool")
    try:
        # by pod IP (what the SDK sends for a warm-pool Sandbox)
        st, _, body = r.request("GET", "/echo", sandbox_headers(name, port=s.port, ip=ip, ns=ns))
        assert st == 200, body
        # an unclaimed pool member is not reachable by its name alone
        seen = len(s.server.seen)
        st, _, _ = r.request("GET", "/echo", sandbox_headers(name, port=s.port, ip=None, ns=ns))
        assert st == 502 and len(s.server.seen) == seen
        # claimed, it is an ordinary Sandbox: reachable by name
        kube.create({"apiVersion": EXT_API, "kind": "SandboxClaim", "metadata": {"name": "c1"},
                     "spec": {"warmPoolRef": {"name": "pool"}}}, ns)
        wait_for(lambda: ((kube.get("sandboxclaim", "c1", ns) or {}).get("status", {}).get("sandbox") or {})
                 .get("name") == name, timeout=60, desc="claim bound to the pool member")
        wait_for(lambda: r.request("GET", "/echo", sandbox_headers(name, port=s.port, ip=None, ns=ns))[0] == 200,
                 timeout=30, desc="claimed Sandbox reachable by name")
    finally:
        s.close()
        assert r.stop() == 0
        r.assert_clean_log()


def caller_token(kube, ns, name="caller"):
    """A ServiceAccount token allowed to get sandboxes in `ns` only."""
    kube.run("create", "serviceaccount", name, "-n", ns)
    kube.run("create", "role", f"{name}-sandboxes", "-n", ns, "--verb=get",
             "--resource=sandboxes.agents.x-k8s.io")
    kube.run("create", "rolebinding", f"{name}-sandboxes", "-n", ns, f"--role={name}-sandboxes",
             f"--serviceaccount={ns}:{name}")
    return kube.run("create", "token", name, "-n", ns, "--duration=10m").stdout.strip()


@pytest.fixture
def bob_ns(deployed, controller):
    """A second tenant's namespace."""
    name = new_namespace(deployed, "it-bob-")
    yield name
    deployed.delete("namespace", name)


def test_tokenreview_pod_ip_cannot_reach_another_tenant(deployed, ns, bob_ns, router_kubeconfig,
                                                        tmp_path):
    """Issue 15 item 1: a caller authorized for its own Sandbox named it
    with another tenant's pod IP and reached that pod. Without a cache the
    header is refused (403) in tokenreview mode; with the cache it must be
    the IP of the authorized Sandbox's own pod (400 otherwise)."""
    kube = deployed
    mine, bobs = running(kube, ns, "mine"), running(kube, bob_ns, "bobs")
    token = caller_token(kube, ns)
    auth = {"Authorization": f"Bearer {token}"}
    plain = Router(tmp_path, ["--kubeconfig", router_kubeconfig, "--authz-mode=tokenreview",
                              "--upstream-max-retries=0"], name="router-tr-nocache").wait_ready()
    cached = start_router(tmp_path, router_kubeconfig, ["--authz-mode=tokenreview"],
                          name="router-tr-cache")
    try:
        # naming bob's sandbox directly is forbidden (the access review)
        st, _, body = plain.request("GET", "/echo", {**sandbox_headers("bobs", port=bobs.port,
                                                                         ip=None, ns=bob_ns), **auth})
        assert (st, json.loads(body)["detail"]) == (403, "forbidden")
        # so is naming one's own with bob's pod IP, and even with one's own
        # IP: without the cache nothing ties an address to a Sandbox
        for ip, port in ((bobs.host, bobs.port), (mine.host, mine.port)):
            st, _, body = plain.request("GET", "/echo", {**sandbox_headers("mine", port=port, ip=ip,
                                                                             ns=ns), **auth})
            assert (st, json.loads(body)["detail"]) == (403, "forbidden"), ip
        # a request without a token is no way around it
        st, _, _ = plain.request("GET", "/echo", sandbox_headers("mine", port=bobs.port, ip=bobs.host,
                                                                 ns=ns))
        assert st == 403
        assert not bobs.server.seen and not mine.server.seen
        # with the cache: bob's IP is not this Sandbox's, one's own is fine
        st, _, body = cached.request("GET", "/echo", {**sandbox_headers("mine", port=bobs.port,
                                                                          ip=bobs.host, ns=ns), **auth})
        assert (st, json.loads(body)["detail"]) == (400, "Invalid target IP address.")
        assert not bobs.server.seen
        own = {**sandbox_headers("mine", port=mine.port, ip=mine.host, ns=ns), **auth}
        wait_for(lambda: cached.request("GET", "/echo", own)[0] == 200, timeout=20,
                 desc="own pod IP through the cached router")
        m = plain.metrics()
        assert f'sandbox_router_authz_decisions_total{{decision="deny",sandbox_namespace="{ns}"}} 3' in m
    finally:
        mine.close()
        bobs.close()
        for r in (plain, cached):
            assert r.stop() == 0
            r.assert_clean_log()


def test_cache_pod_ip_of_a_sandbox_without_one_is_not_dialled(deployed, ns, cached_router):
    """Issue 15 item 2: with the cache on, a Sandbox whose pod has no IP
    yet accepted any non-sandbox address in X-Sandbox-Pod-IP (the API
    server, a node service). The header is now ignored there: the request
    goes by name, as for any Sandbox not Ready (DNS, which fails here)."""
    kube = deployed
    # a pod no node will take: it stays Pending, without an IP
    kube.create(sandbox("pending", podspec={"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                                            "nodeSelector": {"no-such-node": "true"}}), ns)
    wait_for(lambda: (kube.get("pod", "pending", ns) or {}).get("metadata"), timeout=30,
             desc="the pending pod")
    assert not ((kube.get("pod", "pending", ns) or {}).get("status") or {}).get("podIP")
    service = Backend(host="127.0.0.1")  # stands for any non-sandbox service
    try:
        api_port = api_server_port()
        for ip, port in (("127.0.0.1", service.port), ("127.0.0.1", api_port)):
            st, _, body = cached_router.request("GET", "/echo", sandbox_headers("pending", port=port,
                                                                                 ip=ip, ns=ns))
            assert (st, json.loads(body)["detail"]) == \
                (502, "Could not connect to the backend sandbox: pending"), (ip, port, body)
        assert not service.server.seen
    finally:
        service.close()


def kubeconfig_server(path):
    """The API server URL of a kubeconfig's current context, parsed."""
    with tempfile.TemporaryDirectory() as secrets:
        return urllib.parse.urlparse(Context(path, secrets).server)


def api_server_port():
    """The test cluster's API server port."""
    return kubeconfig_server(os.environ["KUBECONFIG"]).port


def proxied_kubeconfig(kubeconfig, port, path):
    """A copy of `kubeconfig` whose API server is reached on 127.0.0.1:port."""
    with open(kubeconfig) as f:
        text = f.read()
    server = kubeconfig_server(kubeconfig)
    with open(path, "w") as f:
        f.write(text.replace(f"{server.hostname}:{server.port}", f"127.0.0.1:{port}"))
    return str(path)


def test_tokenreview_flood_does_not_hold_up_other_requests(deployed, ns, router_kubeconfig, tmp_path):
    """Issue 15 item 5: reviews of unknown tokens occupied libuv's thread
    pool, which DNS lookups share: 40 of them delayed a legitimate request
    by 10 s. With the API server's reviews held (a proxy that stops
    forwarding), a request with an already reviewed token and one resolved
    by DNS are both answered while the flood is still pending; one client
    gets only its share of the review queue (429 past it); a token that
    failed is not reviewed again for another sandbox."""
    kube = deployed
    s = running(kube, ns, "tr")
    token = caller_token(kube, ns)
    api = kubeconfig_server(router_kubeconfig)
    gate = GateProxy(api.hostname, api.port)
    kc = proxied_kubeconfig(router_kubeconfig, gate.port, tmp_path / "gated-kubeconfig")
    r = start_router(tmp_path, kc, ["--authz-mode=tokenreview", f"--cache-namespace={ns}",
                                    "--upstream-max-retries=0", "--authz-tokenreview-workers=4",
                                    "--authz-tokenreview-max-pending-per-client=12"],
                     name="router-flood")
    ok = {**sandbox_headers("tr", port=s.port, ip=None, ns=ns), "Authorization": f"Bearer {token}"}
    flood, threads = [], []

    def flood_one(i):
        h = {**sandbox_headers("tr", port=s.port, ip=None, ns=ns),
             "Authorization": f"Bearer flood-{i}-{uuid.uuid4().hex}"}
        st = r.request("GET", "/echo", h, timeout=120)[0]
        flood.append(st)
    try:
        wait_for(lambda: r.request("GET", "/echo", ok)[0] == 200, timeout=20,
                 desc="the caller's token reviewed")
        gate.close_gate()
        for i in range(40):
            t = threading.Thread(target=flood_one, args=(i,), daemon=True)
            t.start()
            threads.append(t)
        # one client's share of the queue: the rest are refused at once
        wait_for(lambda: flood.count(429) == 28, timeout=30, desc="28 floods over the client's share")
        wait_for(lambda: gate.held >= 1, timeout=30, desc="reviews held at the API server")
        # both served while the 12 reviews are still pending
        st, _, _ = r.request("GET", "/echo", ok, timeout=60)
        pending_then = 40 - len(flood)
        assert st == 200 and pending_then >= 8, (st, pending_then)
        other = f"{ns}-x"  # outside --cache-namespace: DNS (no such name here: 502)
        st, _, body = r.request("GET", "/", sandbox_headers("dns-target", ip=None, ns=other[:63]),
                                timeout=60)
        pending_then = 40 - len(flood)
        assert st == 502 and pending_then >= 8, (st, body, pending_then)
        gate.open_gate()
        for t in threads:
            t.join(timeout=60)
        assert sorted(set(flood)) in ([401, 429], [401, 429, 500]), flood
        # a rejected token is remembered whatever sandbox it names next
        bad = {**sandbox_headers("another", ip=None, ns=ns), "Authorization": "Bearer flood-again"}
        assert r.request("GET", "/", bad)[0] == 401
        gate.close_gate()
        bad["X-Sandbox-ID"] = "yet-another"
        assert r.request("GET", "/", bad, timeout=60)[0] == 401
        assert gate.held == 0
    finally:
        gate.open_gate()
        s.close()
        assert r.stop() == 0
        r.assert_clean_log()
        gate.close()
