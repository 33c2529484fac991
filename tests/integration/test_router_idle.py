"""sandbox-router and idle Sandboxes (issue 19 part 1, docs/router.md#idle-sandboxes)
on the real control plane, the router running as the deploy/router
ServiceAccount with its caches:

- a Sandbox with spec.idleTimeoutSeconds gets its last-activity annotation
  written after requests, at most once per publish interval under a steady
  request stream (counted on a watch of the Sandbox), and a request still
  running (a long response) keeps it active; a Sandbox without the policy
  gets no write at all;
- a Sandbox suspended for idleness is resumed by requests (one resume
  patch for concurrent requests, by the router's field manager), which are
  answered once its new pod is Ready, also when they name the old pod's IP;
- a request held past X-Sandbox-Timeout gets 504 "... is resuming; retry
  later."; a client that leaves while held is dropped;
- a Sandbox resumed (spec Running) whose pod is not Ready yet holds the
  retry after that 504 and answers it once Ready; a held POST whose client
  left never reaches the sandbox; --resume-max-held caps the held
  requests (503) and SIGTERM answers them 503 at once;
- a Suspended Sandbox without the policy keeps today's behaviour;
- the ValidatingAdmissionPolicy of deploy/router refuses the router's
  ServiceAccount a podTemplate patch, a removed, back-dated or malformed
  last-activity, a generateName or managedFields rewrite, the resume of
  a Sandbox without the Suspend policy, and lets the router's writes
  through.

The session controller plays its part (suspend deletes the pod, resume
creates one, kwok makes it Ready on a loopback IP). The test sandbox
listens on 0.0.0.0, so it answers on whatever 127.x address kwok gives
the pod.
"""
import calendar
import json
import re
import signal
import socket
import subprocess
import threading
import time

from conftest import wait_for
from kubetest import Kube
from router_util import Backend, sandbox_headers
from test_router_cluster import router_kubeconfig, start_router  # noqa: F401 (fixture)
from test_sandbox import sandbox, wait_ready

import pytest

LAST_ACTIVITY = "agents.x-k8s.io/last-activity"
SUSPENDED_AT = "agents.x-k8s.io/idle-suspended-at"


@pytest.fixture(scope="module")
def idle_router(router_kubeconfig, tmp_path_factory):  # noqa: F811
    r = start_router(tmp_path_factory.mktemp("router-idle"), router_kubeconfig,
                     ["--resume-timeout=30s", "--zap-log-level=debug", "--upstream-max-retries=2"],
                     name="router-idle")
    yield r
    rc = r.stop()
    r.assert_clean_log()
    assert rc == 0, r.text()[-3000:]


@pytest.fixture(scope="module")
def any_address_backend():
    """The test sandbox, on every local address (any pod IP kwok gives)."""
    b = Backend(host="0.0.0.0")
    yield b
    b.close()


def metric(router, name, **labels):
    """The value of one series on the router's /metrics (0 when absent)."""
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    pat = re.compile(r"^" + re.escape(name) + (r"\{" + re.escape(want) + r"\}" if want else "")
                     + r" (\S+)$", re.M)
    m = pat.search(router.metrics())
    return float(m.group(1)) if m else 0.0


def ts(s):
    """An RFC 3339 UTC timestamp (second precision) in seconds since the epoch."""
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


class Watch:
    """`kubectl get -w` of one Sandbox: every version seen, with its
    last-activity annotation and when it arrived."""

    def __init__(self, kube, name, ns):
        self.events = []
        self.proc = subprocess.Popen(
            [*kube.kubectl, "--kubeconfig", kube.kubeconfig, "-n", ns, "get", "sandbox", name,
             "-w", "-o", "jsonpath={.metadata.resourceVersion} "
             "{.metadata.annotations.agents\\.x-k8s\\.io/last-activity}{\"\\n\"}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        wait_for(lambda: self.events, timeout=30, desc=f"watch of {ns}/{name}")

    def _read(self):
        for line in self.proc.stdout:
            rv, _, act = line.strip().partition(" ")
            self.events.append((time.time(), rv, act or None))

    def activity_values(self):
        """The distinct last-activity values, in order."""
        out = []
        for _, _, act in self.events:
            if act and (not out or out[-1] != act):
                out.append(act)
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def get_ok(router, h, timeout=30):
    st, _, body = router.request("GET", "/echo", h, timeout=timeout)
    assert st == 200, (st, body)
    return body


def test_activity_published_once_per_interval(deployed, ns, idle_router, any_address_backend):
    """A steady stream to `busy` (timeout 40 s: interval 10 s) is written
    about every 10 s; `slow`, whose one request runs 22 s, is written while
    it runs; `plain` (no policy) is never written."""
    kube, r, be = deployed, idle_router, any_address_backend
    kube.create(sandbox("busy", idleTimeoutSeconds=40), ns)
    kube.create(sandbox("slow", idleTimeoutSeconds=40), ns)
    kube.create(sandbox("plain"), ns)
    for n in ("busy", "slow", "plain"):
        wait_ready(kube, n, ns)
    time.sleep(2)  # the controller's last status writes after Ready
    watches = {n: Watch(kube, n, ns) for n in ("busy", "slow", "plain")}
    ok_before = metric(r, "sandbox_router_activity_writes_total", result="ok")
    slow_status = []

    def slow_request():
        h = sandbox_headers("slow", port=be.port, ip=None, ns=ns)
        slow_status.append(r.request("GET", "/slow?s=22", h, timeout=60)[0])
    t = threading.Thread(target=slow_request, daemon=True)
    try:
        busy = sandbox_headers("busy", port=be.port, ip=None, ns=ns)
        plain = sandbox_headers("plain", port=be.port, ip=None, ns=ns)
        wait_for(lambda: r.request("GET", "/echo", busy)[0] == 200, timeout=30,
                 desc="busy reachable by name")
        t.start()
        start = time.time()
        while time.time() - start < 25:
            get_ok(r, busy)
            get_ok(r, plain)
            time.sleep(0.2)
        last_request = time.time()
        t.join(timeout=30)
        assert slow_status == [200]
        busy_writes = watches["busy"].activity_values()
        # writes at about 1, 11 and 21 s; never two within an interval
        assert 2 <= len(busy_writes) <= 3, busy_writes
        gaps = [ts(b) - ts(a) for a, b in zip(busy_writes, busy_writes[1:])]
        assert all(g >= 9 for g in gaps), busy_writes
        # one long request is activity all along: written while it ran
        slow_writes = watches["slow"].activity_values()
        assert 2 <= len(slow_writes) <= 3, slow_writes
        # the stream's end (and the long request's) is published once the
        # interval since the last write is over, and then nothing more
        wait_for(lambda: len(watches["busy"].activity_values()) > len(busy_writes), timeout=15,
                 desc="the last activity published")
        wait_for(lambda: len(watches["slow"].activity_values()) > len(slow_writes), timeout=15,
                 desc="the end of the long request published")
        final = watches["busy"].activity_values()[-1]
        assert ts(final) >= int(last_request) - 1, (final, last_request)
        time.sleep(2)
        # no policy: not a single write (no new version of the object at all)
        assert [e[1] for e in watches["plain"].events] == [watches["plain"].events[0][1]]
        assert LAST_ACTIVITY not in (kube.get("sandbox", "plain", ns)["metadata"].get("annotations") or {})
        written = len(watches["busy"].activity_values()) + len(watches["slow"].activity_values())
        assert metric(r, "sandbox_router_activity_writes_total", result="ok") - ok_before == written
        assert metric(r, "sandbox_router_activity_tracked") >= 1
    finally:
        for w in watches.values():
            w.stop()


def suspend(kube, name, ns):
    """What the controller does to an idle Sandbox (plan_idle.c)."""
    kube.patch("sandbox", name, ns, {"metadata": {"annotations": {SUSPENDED_AT: time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}, "spec": {"operatingMode": "Suspended"}})


def test_suspended_sandbox_resumed_by_concurrent_requests(deployed, ns, idle_router,
                                                          any_address_backend):
    """Six requests at once for a Sandbox suspended for idleness, half of
    them naming its old pod's IP: one resume patch; all answered once the
    new pod is Ready."""
    kube, r, be = deployed, idle_router, any_address_backend
    kube.create(sandbox("napper", idleTimeoutSeconds=300), ns)
    wait_ready(kube, "napper", ns)
    old_ip = kube.get("pod", "napper", ns)["status"]["podIP"]
    suspend(kube, "napper", ns)
    wait_for(lambda: kube.get("pod", "napper", ns) is None, timeout=60, desc="the pod deleted")
    resumes = metric(r, "sandbox_router_resumes_total", result="ok")
    held = metric(r, "sandbox_router_resume_hold_seconds_count", result="ready")
    results = []

    def one(i):
        ip = old_ip if i % 2 else None
        h = sandbox_headers("napper", port=be.port, ip=ip, ns=ns)
        st, _, body = r.request("GET", f"/echo?n={i}", h, timeout=90)
        results.append((st, body))
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert [st for st, _ in results] == [200] * 6, results
    sb = kube.get("sandbox", "napper", ns)
    assert sb["spec"]["operatingMode"] == "Running"
    ann = sb["metadata"].get("annotations") or {}
    assert SUSPENDED_AT not in ann and ann.get(LAST_ACTIVITY), ann
    # the router's own field manager wrote operatingMode
    fields = json.loads(kube.run("get", "sandbox", "napper", "-n", ns, "-o", "json",
                                 "--show-managed-fields").stdout)["metadata"]["managedFields"]
    mine = [m for m in fields if m.get("manager") == "sandbox-router"]
    assert mine and "f:operatingMode" in json.dumps(mine), fields
    assert metric(r, "sandbox_router_resumes_total", result="ok") - resumes == 1
    assert metric(r, "sandbox_router_resume_hold_seconds_count", result="ready") - held == 6
    # running again: the old IP is no live pod's, so it still goes by name
    new_ip = kube.get("pod", "napper", ns)["status"]["podIP"]
    if new_ip != old_ip:
        get_ok(r, sandbox_headers("napper", port=be.port, ip=old_ip, ns=ns))
    get_ok(r, sandbox_headers("napper", port=be.port, ip=new_ip, ns=ns))


def test_request_held_past_its_timeout_gets_504(deployed, ns, idle_router):
    """A resumed Sandbox whose pod never starts (no node fits it): a request
    with X-Sandbox-Timeout 2 gets 504 with the resuming detail after 2 s; a
    client that leaves while held is dropped."""
    kube, r = deployed, idle_router
    kube.create(sandbox("stuck", idleTimeoutSeconds=300, operatingMode="Suspended",
                        podspec={"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                                 "nodeSelector": {"no-such-node": "true"}}), ns)
    wait_for(lambda: (kube.get("sandbox", "stuck", ns).get("status") or {}).get("conditions"),
             timeout=30, desc="stuck seen by the controller")
    timeouts = metric(r, "sandbox_router_resume_hold_seconds_count", result="timeout")
    t0 = time.monotonic()
    st, hdrs, body = r.request("GET", "/", sandbox_headers("stuck", ip=None, ns=ns,
                                                            **{"X-Sandbox-Timeout": "2"}), timeout=30)
    took = time.monotonic() - t0
    assert (st, json.loads(body)) == (504, {"detail": f"Sandbox {ns}/stuck is resuming; retry later."})
    assert hdrs["content-type"] == "application/json"
    assert 1.9 <= took < 10, took
    assert kube.get("sandbox", "stuck", ns)["spec"]["operatingMode"] == "Running"
    assert metric(r, "sandbox_router_resume_hold_seconds_count", result="timeout") - timeouts == 1
    # suspended again: a client that goes while held is dropped, the router fine
    suspend(kube, "stuck", ns)
    wait_for(lambda: kube.get("pod", "stuck", ns) is None, timeout=60, desc="the pending pod deleted")
    gone = metric(r, "sandbox_router_resume_hold_seconds_count", result="gone")
    s = socket.create_connection(("127.0.0.1", r.port), timeout=5)
    s.sendall((f"GET / HTTP/1.1\r\nHost: x\r\nX-Sandbox-ID: stuck\r\nX-Sandbox-Namespace: {ns}\r\n"
               "\r\n").encode())
    time.sleep(0.5)
    s.close()
    wait_for(lambda: metric(r, "sandbox_router_resume_hold_seconds_count", result="gone") == gone + 1,
             timeout=10, desc="the held request dropped")
    assert r.get_probe("/healthz")[0] == 200


def gated(kube, name, ns, **spec):
    """A Sandbox with the Suspend idle policy whose pod only gets a node (and
    so Ready) once the nodes are labelled idle-gate=<ns> (open_gate())."""
    kube.create(sandbox(name, idleTimeoutSeconds=300, podspec={
        "containers": [{"name": "main", "image": "x"}], "nodeSelector": {"idle-gate": ns}}, **spec), ns)


def open_gate(kube, ns, value=True):
    for node in ("kwok-node-0", "kwok-node-1"):
        kube.run("label", "node", node, f"idle-gate={ns}" if value else "idle-gate-", "--overwrite")


def raw_request(r, name, ns, port, method="GET", path="/", body=b"", extra=""):
    """A request on a socket of its own, left open (the caller reads or closes)."""
    s = socket.create_connection(("127.0.0.1", r.port), timeout=30)
    head = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nX-Sandbox-ID: {name}\r\n"
            f"X-Sandbox-Namespace: {ns}\r\nX-Sandbox-Port: {port}\r\n{extra}")
    if body:
        head += f"Content-Length: {len(body)}\r\n"
    s.sendall(head.encode() + b"\r\n" + body)
    return s


def test_request_for_a_resuming_sandbox_is_held(deployed, ns, idle_router, any_address_backend):
    """A Sandbox resumed (spec Running) whose pod is not Ready yet: the retry
    after the resuming 504 is held, and answered 200 once the pod is Ready;
    a POST whose client leaves while held never reaches the sandbox."""
    kube, r, be = deployed, idle_router, any_address_backend
    gated(kube, "waker", ns, operatingMode="Suspended")
    kube.patch("sandbox", "waker", ns, {"metadata": {"annotations": {SUSPENDED_AT: "2026-01-01T00:00:00Z"}}})
    wait_for(lambda: (kube.get("sandbox", "waker", ns).get("status") or {}).get("conditions"),
             timeout=30, desc="waker seen by the controller")
    try:
        # the first request resumes it and gives up after 2 s (no node fits yet)
        h = sandbox_headers("waker", port=be.port, ip=None, ns=ns, **{"X-Sandbox-Timeout": "2"})
        st, _, body = r.request("GET", "/echo?first=1", h, timeout=30)
        assert (st, json.loads(body)) == (504, {"detail": f"Sandbox {ns}/waker is resuming; retry later."})
        assert kube.get("sandbox", "waker", ns)["spec"]["operatingMode"] == "Running"
        # resumed, pod not Ready: still held (504 again, not a 502 from DNS)
        st, _, body = r.request("GET", "/echo?again=1", h, timeout=30)
        assert (st, json.loads(body)["detail"]) == (504, f"Sandbox {ns}/waker is resuming; retry later."), body
        # a POST with a body, held, whose client leaves
        gone = metric(r, "sandbox_router_resume_hold_seconds_count", result="gone")
        s = raw_request(r, "waker", ns, be.port, "POST", "/echo?abandoned=1", b"rm -rf /data")
        time.sleep(0.3)
        s.close()
        wait_for(lambda: metric(r, "sandbox_router_resume_hold_seconds_count", result="gone") == gone + 1,
                 timeout=10, desc="the abandoned POST dropped")
        # the retry, sent while the pod is not Ready, is held and answered
        ready = metric(r, "sandbox_router_resume_hold_seconds_count", result="ready")
        out = []
        t = threading.Thread(target=lambda: out.append(r.request(
            "GET", "/echo?retry=1", sandbox_headers("waker", port=be.port, ip=None, ns=ns,
                                                    **{"X-Sandbox-Timeout": "60"}), timeout=90)),
            daemon=True)
        t.start()
        time.sleep(1.5)
        assert not out, out
        open_gate(kube, ns)
        t.join(timeout=90)
        assert out and out[0][0] == 200, out
        assert metric(r, "sandbox_router_resume_hold_seconds_count", result="ready") == ready + 1
        time.sleep(1)
        assert not [x for x in be.server.seen if "abandoned" in str(x)], be.server.seen
        assert [x for x in be.server.seen if "retry=1" in str(x)]
    finally:
        open_gate(kube, ns, False)


def test_held_requests_capped_and_answered_at_shutdown(deployed, ns, router_kubeconfig,  # noqa: F811
                                                       tmp_path):
    """--resume-max-held 2: a third held request gets 503 at once; on
    SIGTERM the held ones get 503 at once, not a cut at --shutdown-timeout."""
    kube = deployed
    gated(kube, "sleeper", ns)
    r = start_router(tmp_path, router_kubeconfig, ["--resume-max-held=2", "--shutdown-timeout=20s",
                                                   "--zap-log-level=debug"], name="router-held")
    try:
        wait_for(lambda: r.request("GET", "/", sandbox_headers("sleeper", ip=None, ns=ns,
                                                                **{"X-Sandbox-Timeout": "0.2"}))[0] == 504,
                 timeout=30, desc="sleeper held by the router")
        held = [raw_request(r, "sleeper", ns, 8888) for _ in range(2)]
        wait_for(lambda: metric(r, "sandbox_router_inflight_requests") >= 2, timeout=10, desc="two held")
        time.sleep(0.3)
        st, _, body = r.request("GET", "/", sandbox_headers("sleeper", ip=None, ns=ns), timeout=10)
        assert (st, json.loads(body)) == (503, {"detail": "Too many requests waiting for sandboxes to resume."})
        t0 = time.monotonic()
        r.proc.send_signal(signal.SIGTERM)
        for s in held:
            data = s.recv(4096).decode()
            assert data.startswith("HTTP/1.1 503 "), data
            assert '"The router is shutting down; retry the request."' in data, data
            s.close()
        assert r.proc.wait(timeout=20) == 0
        assert time.monotonic() - t0 < 10
    finally:
        r.stop()


def test_suspended_without_policy_is_not_resumed(deployed, ns, idle_router):
    """No idleTimeoutSeconds: a Suspended Sandbox stays suspended, the
    request is answered as before (its pod is gone: 502 after the connect
    retries)."""
    kube, r = deployed, idle_router
    kube.create(sandbox("asleep", operatingMode="Suspended"), ns)
    wait_for(lambda: (kube.get("sandbox", "asleep", ns).get("status") or {}).get("conditions"),
             timeout=30, desc="asleep seen by the controller")
    resumes = sum(metric(r, "sandbox_router_resumes_total", result=x) for x in ("ok", "error"))
    st, _, body = r.request("GET", "/", sandbox_headers("asleep", ip=None, ns=ns), timeout=30)
    assert (st, json.loads(body)["detail"]) == (502, "Could not connect to the backend sandbox: asleep")
    time.sleep(1)
    assert kube.get("sandbox", "asleep", ns)["spec"]["operatingMode"] == "Suspended"
    assert sum(metric(r, "sandbox_router_resumes_total", result=x) for x in ("ok", "error")) == resumes


def test_admission_policy_limits_the_router_service_account(deployed, ns,
                                                            router_kubeconfig):  # noqa: F811
    """RBAC gives the router `patch` on sandboxes; the policy lets it change
    only activity (forward, well-formed, never removed) and the resume of a
    Sandbox whose idle policy is Suspend."""
    kube = deployed
    kube.create(sandbox("guarded", idleTimeoutSeconds=300, operatingMode="Suspended"), ns)
    kube.create(sandbox("byhand", operatingMode="Suspended"), ns)
    kube.create(sandbox("deleter", idleTimeoutSeconds=300, idlePolicy="Delete",
                        operatingMode="Suspended"), ns)
    kube.patch("sandbox", "guarded", ns, {"metadata": {"annotations": {SUSPENDED_AT: "2026-01-01T00:00:00Z"}}})
    as_router = Kube(router_kubeconfig)

    def patch(body, name="guarded"):
        return as_router.run("-n", ns, "patch", "sandbox", name, "--type=merge", "-p",
                             json.dumps(body), check=False)
    refused = [
        ({"spec": {"podTemplate": {"spec": {"containers": [{"name": "main", "image": "evil"}]}}}},
         "may change no field of a Sandbox's spec but operatingMode"),
        ({"spec": {"idleTimeoutSeconds": 3000}}, "may change no field of a Sandbox's spec"),
        ({"metadata": {"labels": {"x": "y"}}}, "may not change a Sandbox's labels"),
        ({"metadata": {"annotations": {"other": "x"}}}, "may only set agents.x-k8s.io/last-activity"),
        ({"metadata": {"annotations": {SUSPENDED_AT: "2027-01-01T00:00:00Z"}}},
         "may only set agents.x-k8s.io/last-activity"),
        ({"metadata": {"finalizers": ["example.com/x"]}}, "may not change a Sandbox's finalizers"),
        ({"metadata": {"generateName": "pwn-"}}, "may not change a Sandbox's generateName"),
        ({"metadata": {"managedFields": [{}]}}, "may not rewrite a Sandbox's managedFields"),
    ]
    for body, why in refused:
        p = patch(body)
        assert p.returncode != 0 and why in p.stderr, (body, p.stderr)
    sb = kube.get("sandbox", "guarded", ns)
    assert sb["spec"]["podTemplate"]["spec"]["containers"][0]["image"] != "evil"
    assert not sb["metadata"].get("generateName")
    fields = json.loads(kube.run("get", "sandbox", "guarded", "-n", ns, "-o", "json",
                                 "--show-managed-fields").stdout)["metadata"]["managedFields"]
    assert any("f:podTemplate" in json.dumps(m) for m in fields), fields
    # no update, no delete, no status at all (RBAC)
    for args in (["delete", "sandbox", "guarded"],
                 ["patch", "sandbox", "guarded", "--subresource=status", "--type=merge", "-p", "{}"]):
        p = as_router.run("-n", ns, *args, check=False)
        assert p.returncode != 0 and "forbidden" in p.stderr.lower(), (args, p.stderr)
    # activity, then the resume, go through (the router's normal writes)
    assert patch({"metadata": {"annotations": {LAST_ACTIVITY: "2026-12-06T00:00:00Z"}}}).returncode == 0
    p = patch({"metadata": {"annotations": {LAST_ACTIVITY: "2026-12-06T00:00:01Z", SUSPENDED_AT: None}},
               "spec": {"operatingMode": "Running"}})
    assert p.returncode == 0, p.stderr
    p = patch({"metadata": {"annotations": {LAST_ACTIVITY: "2026-12-06T00:00:11Z"}}})
    assert p.returncode == 0, p.stderr
    # the activity may not be removed, back-dated or malformed
    for body, why in [
        ({"metadata": {"annotations": {LAST_ACTIVITY: None}}}, "may not remove agents.x-k8s.io/last-activity"),
        ({"metadata": {"annotations": {LAST_ACTIVITY: "1970-01-01T00:00:00Z"}}},
         "may not move agents.x-k8s.io/last-activity back"),
        ({"metadata": {"annotations": {LAST_ACTIVITY: "2026-12-06T00:00:10Z"}}},
         "may not move agents.x-k8s.io/last-activity back"),
        ({"metadata": {"annotations": {LAST_ACTIVITY: "not-a-time"}}}, "must be an RFC 3339 UTC time"),
        ({"metadata": {"annotations": {LAST_ACTIVITY: "2026-13-45T99:00:00Z"}}}, "must be an RFC 3339 UTC time"),
        ({"metadata": {"annotations": {LAST_ACTIVITY: "2030-01-01T00:00:00+02:00"}}}, "must be an RFC 3339 UTC time"),
    ]:
        p = patch(body)
        assert p.returncode != 0 and why in p.stderr, (body, p.stderr)
    ann = kube.get("sandbox", "guarded", ns)["metadata"]["annotations"]
    assert ann[LAST_ACTIVITY] == "2026-12-06T00:00:11Z", ann
    # and suspending is not the router's
    p = patch({"spec": {"operatingMode": "Suspended"}})
    assert p.returncode != 0 and "may only resume a Sandbox" in p.stderr, p.stderr
    # nor resuming a Sandbox without the Suspend idle policy
    for name in ("byhand", "deleter"):
        p = patch({"spec": {"operatingMode": "Running"}}, name=name)
        assert p.returncode != 0 and "whose idle policy is Suspend" in p.stderr, (name, p.stderr)
        assert kube.get("sandbox", name, ns)["spec"]["operatingMode"] == "Suspended"
    # the admin is not bound by it
    kube.patch("sandbox", "guarded", ns, {"metadata": {"labels": {"x": "y"}}})
    kube.patch("sandbox", "guarded", ns, {"metadata": {"annotations": {LAST_ACTIVITY: None}}})
