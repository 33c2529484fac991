"""Chaos: the controller killed, the API server restarted and two replicas,
each during a burst of Sandbox creations, on the real control plane.

Every test owns the controller (fixture `exclusive_controller`: the session
controller is stopped first and replaced afterwards) and a namespace of its
own, deleted and waited for afterwards so that the next burst finds room on
the kwok nodes (110 pods each). The end state checked after each burst:
every Sandbox Ready=True with its pod-name annotation, exactly one Pod per
Sandbox, named after it and controlled by it (ownerReference UID), and no
other Pod in the namespace.
"""
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.request
import uuid

import pytest

from conftest import LOCAL_CLUSTER, condition, wait_for

IMAGE = "registry.k8s.io/pause:3.10"
POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name"
LEASE = "a3317529.agent-sandbox.x-k8s.io"
BURST = 200


def manifest(names):
    """One List document holding a Sandbox per name (one kubectl call)."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
         "metadata": {"name": n},
         "spec": {"podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}}}}
        for n in names]})


class Burst(threading.Thread):
    """Creates the Sandboxes with server-side apply of one List, repeated
    until it succeeds (an API server restart fails a run half way; applying
    again creates what is missing and leaves the rest alone)."""

    def __init__(self, kube, ns, names, timeout=180):
        super().__init__(daemon=True)
        self.kube, self.ns, self.data, self.timeout = kube, ns, manifest(names), timeout
        self.attempts, self.error = 0, None

    def run(self):
        deadline = time.monotonic() + self.timeout
        while True:
            self.attempts += 1
            p = self.kube.run("apply", "--server-side", "--field-manager=chaos-test", "-n", self.ns,
                              "-f", "-", input=self.data, check=False)
            if p.returncode == 0:
                return
            if time.monotonic() > deadline:
                self.error = p.stderr[-2000:]
                return
            time.sleep(1)

    def finish(self):
        self.join(self.timeout + 30)
        assert not self.is_alive() and self.error is None, f"creating the Sandboxes failed: {self.error}"


def pod_count(kube, ns):
    p = kube.run("get", "pods", "-n", ns, "-o", "name", check=False)
    return len(p.stdout.split()) if p.returncode == 0 else 0


def list_items(kube, kind, ns):
    return json.loads(kube.run("get", kind, "-n", ns, "-o", "json").stdout)["items"]


def wait_converged(kube, ns, names, timeout=240):
    """Polls with one LIST per round until every named Sandbox is Ready=True
    and carries its pod-name annotation; returns the Sandboxes by name."""
    want, pending = set(names), []

    def done():
        by_name = {s["metadata"]["name"]: s for s in list_items(kube, "sandboxes", ns)}
        pending[:] = sorted(n for n in want if not (
            n in by_name
            and (condition(by_name[n], "Ready") or {}).get("status") == "True"
            and by_name[n]["metadata"].get("annotations", {}).get(POD_NAME_ANNOTATION)))
        return None if pending else by_name

    try:
        return wait_for(done, timeout=timeout, interval=1.0, desc=f"{len(want)} Sandboxes Ready")
    except AssertionError:
        # what the stuck ones look like, for the next reader of a CI log
        pods = {p["metadata"]["name"]: p for p in list_items(kube, "pods", ns)}
        seen = []
        for n in pending[:5]:
            p = pods.get(n)
            seen.append(f"{n}: pod " + ("missing" if p is None else
                        f"node={p['spec'].get('nodeName')} phase={p.get('status', {}).get('phase')} "
                        f"ready={(condition(p, 'Ready') or {}).get('status')}"))
        raise AssertionError(f"{len(pending)} of {len(want)} Sandboxes not Ready with a pod-name "
                             f"annotation after {timeout}s, e.g. {pending[:10]}; " + "; ".join(seen)) from None


def assert_one_owned_pod_each(kube, ns, sandboxes):
    """Exactly one Pod per Sandbox, named after it, controlled by it; no other Pod."""
    pods = list_items(kube, "pods", ns)
    by_name = {p["metadata"]["name"]: p for p in pods}
    assert len(by_name) == len(pods)
    extra = sorted(set(by_name) - set(sandboxes))
    assert not extra, f"{len(extra)} Pods not named after a Sandbox: {extra[:10]}"
    missing = sorted(set(sandboxes) - set(by_name))
    assert not missing, f"{len(missing)} Sandboxes without a Pod: {missing[:10]}"
    for name, sb in sandboxes.items():
        pod = by_name[name]
        assert pod["metadata"].get("deletionTimestamp") is None, f"Pod {name} is being deleted"
        ctrl = [r for r in pod["metadata"].get("ownerReferences", []) if r.get("controller")]
        assert len(ctrl) == 1, f"Pod {name}: controller ownerReferences {ctrl}"
        assert (ctrl[0]["kind"], ctrl[0]["name"], ctrl[0]["uid"]) == \
            ("Sandbox", name, sb["metadata"]["uid"]), f"Pod {name} owned by {ctrl[0]}"
        assert sb["metadata"]["annotations"][POD_NAME_ANNOTATION] == name


def metric_sum(url, family, **labels):
    """Sum of the samples of `family` whose labels match (a value may be a set)."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        m = re.match(r'^(\w+)\{([^}]*)\} (\S+)$', line)
        if not m or m.group(1) != family:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        if all(have.get(k) in (v if isinstance(v, set) else {v}) for k, v in labels.items()):
            total += float(m.group(3))
    return total


WRITES = {"POST", "PUT", "PATCH", "DELETE"}


def writes(c):
    return metric_sum(c.metrics_url, "rest_client_requests_total", method=WRITES)


@pytest.fixture
def chaos_ns(deployed):
    """A namespace of its own; first waits until the nodes have room for the
    burst (pods of earlier tests may still be terminating); deleted and
    waited for afterwards."""
    def room():
        nodes = json.loads(deployed.run("get", "nodes", "-o", "json").stdout)["items"]
        alloc = sum(int(n["status"]["allocatable"]["pods"]) for n in nodes)
        used = len(deployed.run("get", "pods", "-A", "-o", "name").stdout.split())
        return alloc - used >= BURST + 10
    wait_for(room, timeout=180, interval=2, desc=f"room for {BURST} more pods on the nodes")
    name = "chaos-" + uuid.uuid4().hex[:8]
    deployed.run("create", "namespace", name)
    yield name
    deployed.run("delete", "namespace", name, "--wait=true", "--timeout=180s", check=False)


def test_controller_killed_during_a_burst_converges_after_restart(kube, exclusive_controller, chaos_ns):
    """kill -9 while a third of a 200-Sandbox burst has pods; a new
    controller (after the dead one's Lease expires) finishes the job without
    duplicates or strays."""
    first = exclusive_controller(name="chaos-kill-first")
    first.wait_leading()
    names = [f"sb-{i:03d}" for i in range(BURST)]
    burst = Burst(kube, chaos_ns, names)
    burst.start()
    wait_for(lambda: pod_count(kube, chaos_ns) >= BURST // 3 or first.proc.poll() is not None,
             timeout=180, interval=0.3, desc=f"{BURST // 3} pods")
    assert first.proc.poll() is None, "controller exited early:\n" + first.text()[-4000:]
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    at_kill = pod_count(kube, chaos_ns)
    print(f"pods when killed: {at_kill}/{BURST}")
    assert at_kill < BURST, "the burst was over before the kill; nothing was left to recover"
    burst.finish()

    second = exclusive_controller(name="chaos-kill-second")
    second.wait_leading(timeout=120)  # the killed leader's Lease must expire first (15 s)
    sandboxes = wait_converged(kube, chaos_ns, names)
    assert_one_owned_pod_each(kube, chaos_ns, sandboxes)
    assert second.proc.poll() is None, second.text()[-4000:]


def cluster_env_matches(kube):
    """tools/local-cluster acts on the cluster named by AGENT_SANDBOX_* in the
    environment; it must be the one KUBECONFIG points at."""
    state = os.environ.get("AGENT_SANDBOX_CLUSTER_DIR", "/tmp/agent-sandbox-cluster")
    ours = os.path.join(state, "kubeconfig")
    return os.path.exists(ours) and os.path.samefile(ours, kube.kubeconfig)


def test_apiserver_restart_during_a_burst(kube, exclusive_controller, chaos_ns):
    """The API server restarts while a third of a 200-Sandbox burst has pods;
    the controller stays up, its watches resume (or relist), and it finishes
    the job. Leader election is off here: the restart takes longer than the
    Lease's 10 s renew deadline on a loaded machine, and a leader that cannot
    renew exits by design (test_leader_election covers that)."""
    if not cluster_env_matches(kube):
        pytest.fail("AGENT_SANDBOX_CLUSTER_DIR (and ports) must name the cluster of KUBECONFIG, "
                    "so that `tools/local-cluster restart kube-apiserver` restarts that one")
    c = exclusive_controller(["--leader-elect=false"], name="chaos-apiserver")
    c.wait_leading()
    names = [f"sb-{i:03d}" for i in range(BURST)]
    burst = Burst(kube, chaos_ns, names)
    burst.start()
    wait_for(lambda: pod_count(kube, chaos_ns) >= BURST // 3 or c.proc.poll() is not None,
             timeout=180, interval=0.3, desc=f"{BURST // 3} pods")
    print(f"pods at restart: {pod_count(kube, chaos_ns)}/{BURST}")
    r = subprocess.run([LOCAL_CLUSTER, "restart", "kube-apiserver"], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    burst.finish()
    print(f"apply attempts: {burst.attempts}")
    sandboxes = wait_converged(kube, chaos_ns, names)
    assert_one_owned_pod_each(kube, chaos_ns, sandboxes)
    assert c.proc.poll() is None, "controller exited:\n" + c.text()[-4000:]
    text = c.text()
    assert re.search(r"watch failed; resuming|watch expired; relisting|list failed; retrying", text), \
        "no sign in the log that the watches saw the restart:\n" + text[-4000:]


def test_only_the_leader_writes_and_the_follower_takes_over(kube, exclusive_controller, chaos_ns):
    """Two replicas: while one leads, the other makes no write at all once
    started (its rest_client_requests_total counts no further POST/PUT/
    PATCH/DELETE, Lease included: a follower only reads the Lease; no
    reconcile ran, no child was written). Every replica writes at startup,
    before leader election, as upstream does: the webhook Secret (create if
    missing) and the CRDs' conversion config; the count is taken after that.
    SIGTERM on the leader hands over: the follower leads and reconciles new
    Sandboxes."""
    leader = exclusive_controller(name="chaos-replica-a")
    leader.wait_leading()
    follower = exclusive_controller(name="chaos-replica-b")
    wait_for(lambda: "waiting for leadership" in follower.text() or follower.proc.poll() is not None,
             timeout=60, desc="the second replica's caches")
    startup_writes = writes(follower)
    first = [f"sb-{i:03d}" for i in range(BURST * 3 // 4)]
    burst = Burst(kube, chaos_ns, first)
    burst.start()
    burst.finish()
    sandboxes = wait_converged(kube, chaos_ns, first)
    assert_one_owned_pod_each(kube, chaos_ns, sandboxes)

    assert follower.proc.poll() is None, follower.text()[-4000:]
    assert writes(follower) == startup_writes, "the follower wrote:\n" + follower.text()[-4000:]
    assert metric_sum(follower.metrics_url, "rest_client_requests_total", method="GET") > 0
    assert metric_sum(follower.metrics_url, "controller_runtime_reconcile_total") == 0
    text = follower.text()
    assert "became leader" not in text and "sandbox child written" not in text, text[-4000:]
    assert metric_sum(leader.metrics_url, "rest_client_requests_total", method="POST",
                      code="201") >= len(first)
    holder = kube.get("lease", LEASE, "agent-sandbox-system")["spec"]["holderIdentity"]
    assert any(r.get("identity") == holder for r in leader.records()), leader.text()[-4000:]

    assert leader.stop() == 0, leader.text()[-4000:]
    follower.wait_leading(timeout=60)
    second = [f"sb-{i:03d}" for i in range(len(first), BURST)]
    burst = Burst(kube, chaos_ns, second)
    burst.start()
    burst.finish()
    sandboxes = wait_converged(kube, chaos_ns, first + second)
    assert_one_owned_pod_each(kube, chaos_ns, sandboxes)
    assert metric_sum(follower.metrics_url, "rest_client_requests_total", method="POST",
                      code="201") >= len(second)
    holder = kube.get("lease", LEASE, "agent-sandbox-system")["spec"]["holderIdentity"]
    assert any(r.get("identity") == holder for r in follower.records()), follower.text()[-4000:]
