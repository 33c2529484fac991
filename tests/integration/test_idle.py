"""Idle suspend and delete by the controller (docs/api.md#idle-suspend-and-resume),
on the real control plane of tools/local-cluster with kwok nodes.

Every scenario starts at once in one namespace (the smallest timeout the
CRD accepts is 30 s), then each test checks its own:
  - suspend: a Sandbox idle past its timeout is suspended (operatingMode
    Suspended, pod deleted, PVC kept, Suspended reason IdleTimeout, an
    IdleTimeout event), and resumed by hand it runs again and is not found
    idle for the time it spent suspended;
  - active: a Sandbox whose last-activity annotation keeps moving (as the
    router writes it) stays running past its timeout, then idles out;
  - delete: policy Delete deletes the Sandbox;
  - claim: a claim's lifecycle idle policy Delete deletes the claim, and the
    garbage collector its Sandbox (the claim would replace a Sandbox deleted
    under it);
  - forger: a Sandbox whose controller reference names another's claim is
    deleted alone, never that claim;
  - plain: a Sandbox without the policy is left alone and never written.
The router's side (activity, resume on request) is in test_router_idle.py;
real pods and data in tests/e2e.
"""
import datetime
import threading
import time

import pytest

from conftest import condition, new_namespace, wait_for
from test_extensions import claim, pool, template
from test_sandbox import sandbox, wait_ready

pytestmark = pytest.mark.usefixtures("extensions_controller")

TIMEOUT = 30
LAST_ACTIVITY = "agents.x-k8s.io/last-activity"
IDLE_SUSPENDED_AT = "agents.x-k8s.io/idle-suspended-at"


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def vct(name):
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


class Observer(threading.Thread):
    """Starts with the scenarios, so each is watched from its start whatever
    order the tests run in: plays the router for `active` (its last-activity
    moved every 8 s for TIMEOUT + 15 s, noting whether it was ever seen
    suspended meanwhile) and records the Sandbox the claim is bound to."""

    def __init__(self, kube, ns):
        super().__init__(daemon=True)
        self.kube, self.ns = kube, ns
        self.active_until = time.monotonic() + TIMEOUT + 15
        self.suspended_while_active = None
        self.writes = 0
        self.last_write = None      # the last last-activity written (RFC 3339)
        self.mode_after_active = None
        self.claimed = None
        self.forger = None
        self.error = None

    def run(self):
        try:
            while (time.monotonic() < self.active_until or self.mode_after_active is None
                   or self.claimed is None or self.forger is None):
                if time.monotonic() < self.active_until:
                    sb = self.kube.get("sandbox", "active", self.ns)
                    if sb and sb["spec"].get("operatingMode", "Running") != "Running":
                        self.suspended_while_active = sb
                    stamp = now_rfc3339()
                    self.kube.patch("sandbox", "active", self.ns,
                                    {"metadata": {"annotations": {LAST_ACTIVITY: stamp}}})
                    self.last_write = stamp
                    self.writes += 1
                elif self.mode_after_active is None:
                    # read at once: the test may run long after (other tests first)
                    sb = self.kube.get("sandbox", "active", self.ns)
                    self.mode_after_active = sb["spec"].get("operatingMode", "Running")
                if self.claimed is None:
                    c = self.kube.get("sandboxclaim", "idle-claim", self.ns) or {}
                    name = c.get("status", {}).get("sandbox", {}).get("name")
                    if name:
                        self.claimed = self.kube.get("sandbox", name, self.ns)
                if self.forger is None:
                    c = self.kube.get("sandboxclaim", "kept-claim", self.ns) or {}
                    if c.get("status", {}).get("sandbox", {}).get("name"):
                        self.forge(c)
                time.sleep(8 if self.claimed is not None and self.forger is not None else 0.5)
        except Exception as e:  # reported by the tests
            self.error = e

    def forge(self, victim):
        """A Sandbox whose controller reference names another's claim (anyone
        who may create Sandboxes can write one), with idle policy Delete."""
        sb = sandbox("forger", idleTimeoutSeconds=TIMEOUT, idlePolicy="Delete")
        sb["metadata"]["ownerReferences"] = [{
            "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
            "name": "kept-claim", "uid": victim["metadata"]["uid"], "controller": True}]
        self.kube.create(sb, self.ns)
        self.forger = victim


@pytest.fixture(scope="module")
def idle_ns(kube, extensions_controller):
    ns = new_namespace(kube, "it-idle-")
    kube.create({"apiVersion": "v1", "kind": "List", "items": [
        sandbox("suspend", idleTimeoutSeconds=TIMEOUT, volumeClaimTemplates=[vct("data")]),
        sandbox("active", idleTimeoutSeconds=TIMEOUT),
        sandbox("delete", idleTimeoutSeconds=TIMEOUT, idlePolicy="Delete"),
        sandbox("plain"),
        template("idle-tpl"),
        pool("idle-pool", "idle-tpl", replicas=1),
        claim("idle-claim", "idle-pool", lifecycle={"idleTimeoutSeconds": TIMEOUT, "idlePolicy": "Delete"}),
        claim("kept-claim", "idle-pool"),
    ]}, ns)
    obs = Observer(kube, ns)
    obs.start()
    yield ns, obs
    kube.delete("namespace", ns)


def suspended_for_idleness(kube, name, ns):
    sb = kube.get("sandbox", name, ns)
    c = condition(sb, "Suspended") if sb else None
    return sb if c and c["status"] == "True" and c["reason"] == "IdleTimeout" else None


def test_idle_sandbox_is_suspended_keeping_its_pvc_and_resumes(kube, idle_ns):
    ns, _ = idle_ns
    wait_ready(kube, "suspend", ns, timeout=180)   # the PVC's provisioning (test_sandbox.py)
    sb = wait_for(lambda: suspended_for_idleness(kube, "suspend", ns), timeout=TIMEOUT + 60,
                  desc="suspend suspended for idleness")
    assert sb["spec"]["operatingMode"] == "Suspended"
    assert IDLE_SUSPENDED_AT in sb["metadata"]["annotations"]
    assert condition(sb, "Ready")["reason"] == "SandboxSuspended"
    assert kube.get("pod", "suspend", ns) is None
    assert kube.get("persistentvolumeclaim", "data-suspend", ns) is not None

    def idle_event():
        evs = [e for e in kube.list("events.events.k8s.io", ns)
               if e.get("regarding", {}).get("name") == "suspend" and e.get("reason") == "IdleTimeout"]
        return evs[0] if evs else None
    ev = wait_for(idle_event, timeout=30, desc="an IdleTimeout event")
    assert ev["type"] == "Normal" and ev["action"] == "Suspend"
    assert "idleTimeoutSeconds 30" in ev["note"]

    # resumed by hand, long after its last activity: it runs, and its clock
    # starts at the resume (Ready), not at the old activity
    kube.patch("sandbox", "suspend", ns, {"spec": {"operatingMode": "Running"}})
    sb = wait_ready(kube, "suspend", ns)
    assert condition(sb, "Suspended")["reason"] == "NotSuspended"
    wait_for(lambda: IDLE_SUSPENDED_AT not in (kube.get("sandbox", "suspend", ns)["metadata"]
                                               .get("annotations") or {}),
             timeout=30, desc="the idle-suspended-at annotation removed")
    time.sleep(5)
    assert kube.get("sandbox", "suspend", ns)["spec"]["operatingMode"] == "Running"


def test_activity_keeps_a_sandbox_running_past_its_timeout(kube, idle_ns):
    ns, obs = idle_ns
    wait_for(lambda: time.monotonic() >= obs.active_until, timeout=TIMEOUT + 60, interval=1,
             desc="the activity phase over")
    assert obs.error is None, obs.error
    assert obs.writes >= 5
    assert obs.suspended_while_active is None, "suspended while in use"
    wait_for(lambda: obs.mode_after_active or obs.error, timeout=30, desc="the mode after activity")
    assert obs.mode_after_active == "Running"
    # activity stops: it idles out one timeout after the last write, not before
    sb = wait_for(lambda: suspended_for_idleness(kube, "active", ns), timeout=TIMEOUT + 60,
                  desc="active suspended once activity stopped")
    def t(s):
        return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
    at = condition(sb, "Suspended")["lastTransitionTime"]
    assert t(at) >= t(obs.last_write) + datetime.timedelta(seconds=TIMEOUT), (at, obs.last_write)


def test_idle_policy_delete_deletes_the_sandbox(kube, idle_ns):
    wait_for(lambda: kube.get("sandbox", "delete", idle_ns[0]) is None, timeout=TIMEOUT + 60,
             desc="Sandbox delete deleted for idleness")


def test_idle_claim_with_delete_policy_is_deleted_with_its_sandbox(kube, idle_ns):
    ns, obs = idle_ns
    wait_for(lambda: obs.claimed or obs.error, timeout=60, desc="the claim bound")
    assert obs.error is None, obs.error
    sb = obs.claimed
    assert sb["spec"]["idleTimeoutSeconds"] == TIMEOUT and sb["spec"]["idlePolicy"] == "Delete"
    wait_for(lambda: kube.get("sandboxclaim", "idle-claim", ns) is None, timeout=TIMEOUT + 60,
             desc="the idle claim deleted")
    wait_for(lambda: kube.get("sandbox", sb["metadata"]["name"], ns) is None, timeout=60,
             desc="its Sandbox removed by the garbage collector")


def test_a_sandbox_naming_anothers_claim_never_gets_it_deleted(kube, idle_ns):
    """Idle Delete of a Sandbox whose controller reference names a claim
    that does not bind it deletes that Sandbox only: an owner reference is
    anyone's to write."""
    ns, obs = idle_ns
    wait_for(lambda: obs.forger or obs.error, timeout=60, desc="the forger created")
    assert obs.error is None, obs.error
    wait_for(lambda: kube.get("sandbox", "forger", ns) is None, timeout=TIMEOUT + 90,
             desc="the forger deleted for idleness")
    victim = kube.get("sandboxclaim", "kept-claim", ns)
    assert victim and victim["metadata"]["uid"] == obs.forger["metadata"]["uid"], "another's claim deleted"
    assert kube.get("sandbox", victim["status"]["sandbox"]["name"], ns) is not None


def test_sandbox_without_policy_is_never_touched(kube, idle_ns):
    ns, _ = idle_ns
    sb = wait_ready(kube, "plain", ns)
    rv = sb["metadata"]["resourceVersion"]
    created = datetime.datetime.strptime(sb["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    created = created.replace(tzinfo=datetime.timezone.utc)
    wait_for(lambda: datetime.datetime.now(datetime.timezone.utc) > created + datetime.timedelta(seconds=TIMEOUT + 5),
             timeout=TIMEOUT + 60, interval=1, desc="past the others' timeout")
    sb = kube.get("sandbox", "plain", ns)
    assert sb["metadata"]["resourceVersion"] == rv
    assert sb["spec"].get("operatingMode", "Running") == "Running"
    assert LAST_ACTIVITY not in (sb["metadata"].get("annotations") or {})
