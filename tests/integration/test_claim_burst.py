"""Claim bursts (issue 5): 200 SandboxClaims at once against a warm pool of
50, with the extension controllers (--extensions) as the deploy/
ServiceAccount; then the same burst with the controller killed (SIGKILL)
part-way and a new one started. Disruptive (200+ pods, a kill -9): run last
with test_chaos.py (conftest.DISRUPTIVE).

End state checked after each burst (docs/api.md#claim-adoption "1 sandbox <-> 1 claim",
docs/api.md#cold-start, #pod-management):
- every claim Ready=True and bound (status.sandbox.name), no two claims
  bound to the same Sandbox, a warm claim's assigned-sandbox annotation
  naming its Sandbox;
- every Sandbox either an unclaimed pool member (controlled by the pool) or
  bound to exactly one claim, whose single controller ownerReference is that
  claim; exactly 200 claim-controlled Sandboxes (no stray cold Sandbox beside
  an adopted one);
- every Sandbox has exactly one Pod, controlled by it, named by its pod-name
  annotation; no other Pod;
- launch-type warm + cold = 200, a cold Sandbox named like its claim;
- the writes that wait for a burst's hand-outs are made once it is over:
  no claimed Sandbox's Pod carries the pool's label, every Sandbox's
  conditions acknowledge its generation, the pool's status counts its
  Ready members;
- after deleting the claims and the pool, no Sandbox, Pod, Service or PVC is
  left in the namespace (ownerReference garbage collection).

The kwok nodes need room for 200 claimed Sandboxes, the pool and its
refills: the `burst_ns` fixture adds kwok nodes (and removes them after)
when the cluster has too few.
"""
import json
import signal
import threading
import time
import uuid

import pytest

from conftest import condition, install_extension_crds, wait_for
from test_sandbox import IMAGE

GROUP = "extensions.agents.x-k8s.io"
EXT_API = GROUP + "/v1beta1"
CLAIM = "sandboxclaims." + GROUP
POOL = "sandboxwarmpools." + GROUP
CLAIMS = 200
POOL_SIZE = 50
# claimed + pool + the refills that may be in flight when the burst ends
PODS_NEEDED = CLAIMS + 2 * POOL_SIZE
L_LAUNCH = "agents.x-k8s.io/launch-type"
L_CLAIM_UID = "agents.x-k8s.io/claim-uid"
L_POOL = "agents.x-k8s.io/warm-pool-sandbox"
A_POD_NAME = "agents.x-k8s.io/pod-name"
A_SANDBOX_NAME = "agents.x-k8s.io/sandbox-name"


def items(kube, kind, ns, selector=None):
    args = ["get", kind, "-n", ns, "-o", "json"] + (["-l", selector] if selector else [])
    return json.loads(kube.run(*args).stdout)["items"]


def count(kube, kind, ns, selector=None):
    args = ["get", kind, "-n", ns, "-o", "name"] + (["-l", selector] if selector else [])
    p = kube.run(*args, check=False)
    return len(p.stdout.split()) if p.returncode == 0 else 0


def controller_refs(obj):
    return [r for r in obj["metadata"].get("ownerReferences", []) if r.get("controller")]


def kwok_node(name, cidr):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                         "labels": {"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                    "kubernetes.io/arch": "amd64", "node-role.kubernetes.io/agent": ""}},
            "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
            "status": {"allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"},
                       "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"}}}


def room(kube):
    nodes = json.loads(kube.run("get", "nodes", "-o", "json").stdout)["items"]
    alloc = sum(int(n["status"]["allocatable"]["pods"]) for n in nodes
                if (condition(n, "Ready") or {}).get("status") == "True")
    return alloc - len(kube.run("get", "pods", "-A", "-o", "name").stdout.split())


@pytest.fixture
def burst_ns(deployed):
    """A namespace with room for the burst: adds kwok nodes (podCIDR
    127.1.N.0/24) while the Ready nodes lack room for PODS_NEEDED more pods,
    after giving pods of earlier tests a moment to go. Afterwards deletes the
    namespace (waited for) and the nodes it added."""
    kube = deployed
    install_extension_crds(kube)
    try:
        wait_for(lambda: room(kube) >= PODS_NEEDED, timeout=30, interval=2, desc="room")
    except AssertionError:
        pass
    added = []
    while room(kube) < PODS_NEEDED and len(added) < 10:
        name = f"kwok-burst-{uuid.uuid4().hex[:6]}"
        kube.create(kwok_node(name, f"127.1.{len(added) + 1}.0/24"))
        added.append(name)
        wait_for(lambda: (condition(kube.get("node", name), "Ready") or {}).get("status") == "True",
                 timeout=60, desc=f"kwok node {name} Ready")
    assert room(kube) >= PODS_NEEDED, f"no room for {PODS_NEEDED} pods"
    ns = "burst-" + uuid.uuid4().hex[:8]
    kube.run("create", "namespace", ns)
    wait_for(lambda: kube.get("serviceaccount", "default", ns), timeout=120, desc="default ServiceAccount")
    try:
        yield ns
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)
        try:
            wait_for(lambda: kube.get("namespace", ns) is None, timeout=300, interval=2, desc=f"namespace {ns} gone")
        finally:
            for name in added:
                kube.run("delete", "node", name, "--wait=false", check=False)


def setup_pool(kube, ns):
    """Template (service and one VCT, so Services and PVCs are part of the
    cleanup check) and a pool of POOL_SIZE; waits for it to be full and Ready."""
    tpl = {"apiVersion": EXT_API, "kind": "SandboxTemplate", "metadata": {"name": "tpl"},
           "spec": {"podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}}, "service": True,
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Mi"}}}}]}}
    pool = {"apiVersion": EXT_API, "kind": "SandboxWarmPool", "metadata": {"name": "pool"},
            "spec": {"replicas": POOL_SIZE, "sandboxTemplateRef": {"name": "tpl"}}}
    kube.create({"apiVersion": "v1", "kind": "List", "items": [tpl, pool]}, ns)

    wait_for(lambda: pool_full(kube, ns), timeout=240, interval=1, desc=f"{POOL_SIZE} Ready pool members")


class ClaimBurst(threading.Thread):
    """Creates the claims with one server-side apply of a List (repeated
    until it succeeds: applying again creates what is missing)."""

    def __init__(self, kube, ns, names, timeout=180):
        super().__init__(daemon=True)
        self.kube, self.ns, self.timeout, self.error = kube, ns, timeout, None
        self.data = json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": EXT_API, "kind": "SandboxClaim", "metadata": {"name": n},
             "spec": {"warmPoolRef": {"name": "pool"}}} for n in names]})

    def run(self):
        deadline = time.monotonic() + self.timeout
        while True:
            p = self.kube.run("apply", "--server-side", "--field-manager=burst-test", "-n", self.ns, "-f", "-",
                              input=self.data, check=False)
            if p.returncode == 0:
                return
            if time.monotonic() > deadline:
                self.error = p.stderr[-2000:]
                return
            time.sleep(1)

    def finish(self):
        self.join(self.timeout + 30)
        assert not self.is_alive() and self.error is None, f"creating the claims failed: {self.error}"


def wait_claims_ready(kube, ns, names, timeout=360):
    want, pending = set(names), []

    def done():
        cs = {c["metadata"]["name"]: c for c in items(kube, CLAIM, ns)}
        pending[:] = sorted(n for n in want if not (
            n in cs and (condition(cs[n], "Ready") or {}).get("status") == "True"))
        return None if pending else cs
    try:
        return wait_for(done, timeout=timeout, interval=2, desc=f"{len(want)} claims Ready")
    except AssertionError:
        raise AssertionError(f"{len(pending)} of {len(want)} claims not Ready after {timeout}s, "
                             f"e.g. {pending[:10]}") from None


def pool_full(kube, ns):
    members = [s for s in items(kube, "sandboxes", ns, f"{L_POOL}") if not s["metadata"].get("deletionTimestamp")]
    return len(members) == POOL_SIZE and all((condition(s, "Ready") or {}).get("status") == "True" for s in members)


def assert_end_state(kube, ns, claims):
    """The invariants of the module doc; returns (warm, cold). First waits
    for the pool to be refilled (no Sandbox being created meanwhile)."""
    wait_for(lambda: pool_full(kube, ns), timeout=180, interval=1, desc="the pool refilled")
    sbs = {s["metadata"]["name"]: s for s in items(kube, "sandboxes", ns)}
    pods = items(kube, "pods", ns)
    bound = {n: (c.get("status", {}).get("sandbox") or {}).get("name") for n, c in claims.items()}
    unbound = sorted(n for n, s in bound.items() if not s)
    assert not unbound, f"Ready claims without status.sandbox.name: {unbound[:10]}"
    by_sandbox = {}
    for n, s in bound.items():
        by_sandbox.setdefault(s, []).append(n)
    shared = {s: ns_ for s, ns_ in by_sandbox.items() if len(ns_) > 1}
    assert not shared, f"Sandboxes bound to several claims: {shared}"

    claim_uids = {c["metadata"]["uid"]: n for n, c in claims.items()}
    warm = cold = 0
    for n, sbn in bound.items():
        sb = sbs.get(sbn)
        assert sb is not None, f"claim {n}: Sandbox {sbn} missing"
        refs = sb["metadata"].get("ownerReferences", [])
        assert [(r["kind"], r["name"], r["uid"], r.get("controller")) for r in refs] == \
            [("SandboxClaim", n, claims[n]["metadata"]["uid"], True)], f"Sandbox {sbn} of claim {n}: ownerReferences {refs}"
        launch = sb["metadata"].get("labels", {}).get(L_LAUNCH)
        if launch == "warm":
            warm += 1
            assert sbn != n, f"claim {n}: a warm Sandbox named like the claim"
            # adopted by the Sandbox patch alone: the claim is not annotated
            assert A_SANDBOX_NAME not in claims[n]["metadata"].get("annotations", {}), f"claim {n}"
        else:
            assert launch == "cold" and sbn == n, f"claim {n}: Sandbox {sbn} launch-type {launch}"
            cold += 1
    assert warm + cold == len(claims)

    claimed = [s for s in sbs.values() if any(r["kind"] == "SandboxClaim" for r in controller_refs(s))]
    assert len(claimed) == len(claims), \
        f"{len(claimed)} claim-controlled Sandboxes for {len(claims)} claims: " \
        f"{sorted(set(s['metadata']['name'] for s in claimed) - set(bound.values()))[:10]} not bound"
    for s in sbs.values():
        refs = controller_refs(s)
        assert len(refs) == 1 and (refs[0]["kind"] == "SandboxWarmPool" or refs[0]["uid"] in claim_uids), \
            f"Sandbox {s['metadata']['name']}: controller refs {refs}"

    pods_of = {}
    for p in pods:
        refs = controller_refs(p)
        assert len(refs) == 1 and refs[0]["kind"] == "Sandbox", f"Pod {p['metadata']['name']}: {refs}"
        pods_of.setdefault(refs[0]["uid"], []).append(p)
    for s in sbs.values():
        mine = pods_of.pop(s["metadata"]["uid"], [])
        if s["metadata"].get("deletionTimestamp"):
            continue  # a member deleted by the pool (excess, stale): its pod may be going too
        assert len(mine) == 1, f"Sandbox {s['metadata']['name']}: {len(mine)} Pods"
        if s["metadata"]["name"] in bound.values():
            assert s["metadata"]["annotations"][A_POD_NAME] == mine[0]["metadata"]["name"]
    assert not pods_of, f"Pods of no live Sandbox: {[p['metadata']['name'] for ps in pods_of.values() for p in ps][:10]}"
    why = []
    try:
        wait_for(lambda: deferred_writes_made(kube, ns, claims, why), timeout=60, interval=1,
                 desc="the writes that yielded to the burst (Pod labels, observedGeneration, pool status)")
    except AssertionError as e:
        raise AssertionError(f"{e}: {why[-1] if why else ''}") from None
    return warm, cold


def deferred_writes_made(kube, ns, claims, why):
    """None until the writes that wait for pending hand-outs are all made
    (docs/api.md#pod-metadata, #sandbox-reconcile step 6, #pool-sizing), else
    True; `why` gets what is still missing."""
    uid_of = {c["status"]["sandbox"]["name"]: c["metadata"]["uid"] for c in claims.values()}
    pods = {p["metadata"]["name"]: p for p in items(kube, "pods", ns)}
    for s in items(kube, "sandboxes", ns):
        md = s["metadata"]
        if md.get("deletionTimestamp"):
            continue
        gens = {c.get("observedGeneration") for c in s.get("status", {}).get("conditions", [])}
        if gens != {md["generation"]}:
            why.append(f"Sandbox {md['name']}: generation {md['generation']}, conditions at {gens}")
            return None
        if md["name"] in uid_of:
            # the relabel after an adoption: the Pod leaves the pool (docs/api.md#extension-labels)
            pod = pods.get(md["annotations"][A_POD_NAME])
            if not pod or L_POOL in pod["metadata"].get("labels", {}):
                why.append(f"Sandbox {md['name']} of a claim: Pod labels "
                           f"{pod and pod['metadata'].get('labels')}")
                return None
    pool = json.loads(kube.run("get", POOL, "pool", "-n", ns, "-o", "json").stdout)
    if pool.get("status", {}).get("readyReplicas") != POOL_SIZE:
        why.append(f"pool status {pool.get('status')}")
        return None
    return True


def assert_cleanup(kube, ns):
    kube.run("delete", CLAIM, "--all", "-n", ns, "--wait=false")
    kube.run("delete", POOL, "pool", "-n", ns, "--wait=false")

    def left():
        counts = {k: count(kube, k, ns) for k in ("sandboxes", "pods", "services", "pvc")}
        return None if any(counts.values()) else counts
    try:
        wait_for(left, timeout=240, interval=2, desc="garbage collection")
    except AssertionError:
        raise AssertionError("left over after deleting the claims and the pool: " +
                             str({k: count(kube, k, ns) for k in ("sandboxes", "pods", "services", "pvc")})) from None


def test_200_claims_against_a_pool_of_50(kube, exclusive_controller, burst_ns):
    c = exclusive_controller(["--extensions"], name="burst")
    c.wait_leading()
    setup_pool(kube, burst_ns)
    names = [f"claim-{i:03d}" for i in range(CLAIMS)]
    t0 = time.monotonic()
    burst = ClaimBurst(kube, burst_ns, names)
    burst.start()
    burst.finish()
    claims = wait_claims_ready(kube, burst_ns, names)
    warm, cold = assert_end_state(kube, burst_ns, claims)
    print(f"{CLAIMS} claims Ready in {time.monotonic() - t0:.1f}s: {warm} warm, {cold} cold")
    assert warm >= 1
    assert c.proc.poll() is None, c.text()[-4000:]
    assert_cleanup(kube, burst_ns)


def test_controller_killed_during_a_claim_burst(kube, exclusive_controller, burst_ns):
    """kill -9 once a third of the claims have a Sandbox; a new controller
    (after the dead one's Lease expires) finishes: same end state, no
    Sandbox adopted twice, no stray cold Sandbox."""
    first = exclusive_controller(["--extensions"], name="burst-kill-first")
    first.wait_leading()
    setup_pool(kube, burst_ns)
    names = [f"claim-{i:03d}" for i in range(CLAIMS)]
    burst = ClaimBurst(kube, burst_ns, names)
    burst.start()
    wait_for(lambda: count(kube, "sandboxes", burst_ns, L_CLAIM_UID) >= CLAIMS // 3 or first.proc.poll() is not None,
             timeout=180, interval=0.2, desc=f"{CLAIMS // 3} claimed Sandboxes")
    assert first.proc.poll() is None, "controller exited early:\n" + first.text()[-4000:]
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    ready = sum((condition(c, "Ready") or {}).get("status") == "True" for c in items(kube, CLAIM, burst_ns))
    print(f"claimed Sandboxes when killed: {count(kube, 'sandboxes', burst_ns, L_CLAIM_UID)}; claims Ready: {ready}")
    burst.finish()
    assert ready < CLAIMS, "the burst was over before the kill; nothing was left to recover"

    second = exclusive_controller(["--extensions"], name="burst-kill-second")
    second.wait_leading(timeout=120)  # the killed leader's Lease must expire first
    claims = wait_claims_ready(kube, burst_ns, names)
    warm, cold = assert_end_state(kube, burst_ns, claims)
    print(f"after the restart: {warm} warm, {cold} cold")
    assert second.proc.poll() is None, second.text()[-4000:]
    assert_cleanup(kube, burst_ns)
