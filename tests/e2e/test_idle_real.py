"""Idle suspend and wake on request on a real node (docs/api.md#idle-suspend-and-resume,
docs/router.md#idle-sandboxes): the controller and the router as deployed,
sandboxd in real pods.

- A Sandbox idle past its timeout is suspended (its pod deleted, its PVC
  kept); a command sent through the router wakes it, and reads back the
  file written before.
- The SDK's handle made before the suspend runs a command after it: the
  router resumes the Sandbox and the handle drops the pod IP it knew.
- 50 Sandboxes idle out together and wake together on 50 requests at once.
- A streaming command running longer than the timeout keeps its Sandbox up.
- Restarting the router's and the controller's pods while a Sandbox is in
  use loses nothing: it stays up while used, idles out after, and wakes.
- Idle Delete of a claim's Sandbox removes the claim and the Sandbox.

Timeouts are the smallest the CRD accepts (30 s).
"""
import base64
import concurrent.futures
import copy
import json
import os
import threading
import time
import urllib.error
import urllib.request

import pytest
import yaml

from conftest import ROUTER, CONTROLLER, SYSTEM_NS, TEMPLATE_FILE, condition, dump, rollout, router_config, wait_for
from test_real_stack import execute, pool, pvc_sandbox, ready, router_url

import agent_sandbox_c as sdk

from kubetest import CLAIM, EXT_API  # noqa: E402

TIMEOUT = 30


def idle_suspended(kube, ns, name):
    sb = kube.get("sandbox", name, ns)
    c = condition(sb, "Suspended") if sb else None
    return sb if c and c["status"] == "True" and c["reason"] == "IdleTimeout" else None


def mode(kube, ns, name):
    return ((kube.get("sandbox", name, ns) or {}).get("spec") or {}).get("operatingMode", "Running")


def sandboxd_sandbox(name, cpu="10m", **spec):
    with open(TEMPLATE_FILE) as f:
        pt = copy.deepcopy(yaml.safe_load(f)["spec"]["podTemplate"])
    pt["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": name},
            "spec": {"podTemplate": pt, **spec}}


def timed_execute(url, ns, name, command, timeout=180):
    t0 = time.monotonic()
    out = execute(url, ns, name, command, timeout=timeout)
    return out, time.monotonic() - t0


class Watch(threading.Thread):
    """Polls Sandboxes until stopped, remembering any seen not Running."""

    def __init__(self, kube, ns, names):
        super().__init__(daemon=True)
        self.kube, self.ns, self.names = kube, ns, names
        self.stopped = threading.Event()
        self.seen_suspended = []

    def run(self):
        while not self.stopped.is_set():
            for n in self.names:
                try:
                    if mode(self.kube, self.ns, n) != "Running":
                        self.seen_suspended.append(n)
                except Exception:  # a kubectl hiccup is no verdict
                    pass
            self.stopped.wait(2)

    def stop(self):
        self.stopped.set()
        self.join(timeout=30)


def test_idle_sandbox_suspends_keeps_its_data_and_a_request_wakes_it(stack, ns):
    name = "napper"
    sb = pvc_sandbox(name)
    sb["spec"]["idleTimeoutSeconds"] = TIMEOUT
    stack.apply(sb, ns)
    wait_for(lambda: ready(stack, ns, name), timeout=180, desc=f"Ready\n{dump(stack, ns)}")
    url = router_url(stack)
    payload = os.urandom(16).hex()
    out = execute(url, ns, name, f"printf %s {payload} > /workspace/kept.txt && cat /workspace/kept.txt")
    assert out["exit_code"] == 0 and out["stdout"] == payload, out
    pod1 = stack.get("pod", name, ns)
    pvc = stack.get("pvc", f"workspace-{name}", ns)

    sb = wait_for(lambda: idle_suspended(stack, ns, name), timeout=TIMEOUT + 90,
                  desc=f"suspended for idleness\n{dump(stack, ns)}")
    assert sb["spec"]["operatingMode"] == "Suspended"
    wait_for(lambda: stack.get("pod", name, ns) is None, timeout=60, desc="the pod deleted")
    assert stack.get("pvc", f"workspace-{name}", ns)["metadata"]["uid"] == pvc["metadata"]["uid"]

    # one request wakes it: held by the router until the new pod is Ready
    out, took = timed_execute(url, ns, name, "cat /workspace/kept.txt")
    assert out["exit_code"] == 0 and out["stdout"] == payload, out
    print(f"wake-up through the router: {took:.2f} s")
    sb = stack.get("sandbox", name, ns)
    assert sb["spec"]["operatingMode"] == "Running"
    assert stack.get("pod", name, ns)["metadata"]["uid"] != pod1["metadata"]["uid"]


def test_sdk_handle_runs_a_command_after_its_sandbox_idled_out(stack, ns):
    with open(TEMPLATE_FILE) as f:
        tpl = yaml.safe_load(f)
    tpl["spec"]["idleTimeoutSeconds"] = TIMEOUT
    stack.apply(tpl, ns)
    pool(stack, ns, 1)
    with sdk.SandboxClient(router_config(), kubeconfig=stack.kubeconfig) as c:
        sb = c.create_sandbox("sandboxd-pool", ns, 180)
        first = sb.commands.run("hostname")
        assert first.exit_code == 0, first.stderr
        uid = stack.get("pod", sb.get_pod_name(), ns)["metadata"]["uid"]
        wait_for(lambda: idle_suspended(stack, ns, sb.sandbox_id), timeout=TIMEOUT + 90,
                 desc=f"the claimed sandbox suspended for idleness\n{dump(stack, ns)}")
        t0 = time.monotonic()
        again = sb.commands.run("hostname", timeout=180)
        print(f"SDK command on a suspended sandbox: {time.monotonic() - t0:.2f} s")
        assert again.exit_code == 0, again.stderr
        assert again.stdout == first.stdout   # the pod is recreated under its name
        assert mode(stack, ns, sb.sandbox_id) == "Running"
        assert stack.get("pod", sb.get_pod_name(), ns)["metadata"]["uid"] != uid


def test_fifty_sandboxes_idle_out_and_wake_at_once(stack, ns):
    names = [f"nap-{i:02d}" for i in range(50)]
    stack.create({"apiVersion": "v1", "kind": "List",
                  "items": [sandboxd_sandbox(n, idleTimeoutSeconds=TIMEOUT) for n in names]}, ns)

    def all_in(pred):
        sbs = {s["metadata"]["name"]: s for s in stack.list("sandbox", ns)}
        return all(pred(sbs.get(n)) for n in names)

    def is_ready(s):
        return (condition(s, "Ready") or {}).get("status") == "True"

    def is_idle(s):
        c = condition(s, "Suspended")
        return bool(c) and c["status"] == "True" and c["reason"] == "IdleTimeout"
    wait_for(lambda: all_in(is_ready), timeout=300, interval=2, desc=f"50 Ready\n{dump(stack, ns)}")
    wait_for(lambda: all_in(is_idle), timeout=TIMEOUT + 180, interval=2,
             desc=f"50 suspended for idleness\n{dump(stack, ns)}")
    wait_for(lambda: not [p for p in stack.list("pods", ns) if p["metadata"]["name"] in names],
             timeout=120, interval=2, desc="their pods deleted")

    url = router_url(stack)
    with concurrent.futures.ThreadPoolExecutor(max_workers=50) as ex:
        futs = {n: ex.submit(timed_execute, url, ns, n, "hostname", 300) for n in names}
        results = {n: f.result() for n, f in futs.items()}
    took = sorted(t for _, t in results.values())
    for n, (out, _) in results.items():
        assert out["exit_code"] == 0 and out["stdout"].strip() == n, (n, out)
    print(f"50 wake-ups at once: p50 {took[24]:.2f} s, max {took[-1]:.2f} s")
    assert all_in(lambda s: s["spec"].get("operatingMode") == "Running")


def stream_process(url, ns, sandbox, shell, timeout):
    """Runs `shell` through the router on sandboxd's process API (port 8080):
    the response head comes at once, then one JSON event a line until the
    exit event, which is returned."""
    body = json.dumps({"config": {"shell": shell}, "timeoutSeconds": timeout}).encode()
    req = urllib.request.Request(url + "/v1/processes", data=body,
                                 headers={"Content-Type": "application/json", "X-Sandbox-ID": sandbox,
                                          "X-Sandbox-Namespace": ns, "X-Sandbox-Port": "8080"})
    out = b""
    with urllib.request.urlopen(req, timeout=timeout + 30) as r:
        for line in r:
            ev = json.loads(line)
            if "stdout" in ev:
                out += base64.b64decode(ev["stdout"])
            if "exit" in ev:
                return ev["exit"], out
    raise AssertionError("the process stream ended without an exit event")


def test_a_streaming_command_longer_than_the_timeout_keeps_its_sandbox_up(stack, ns):
    name = "busy"
    stack.apply(sandboxd_sandbox(name, idleTimeoutSeconds=TIMEOUT), ns)
    wait_for(lambda: ready(stack, ns, name), timeout=180, desc=f"Ready\n{dump(stack, ns)}")
    watch = Watch(stack, ns, [name])
    watch.start()
    try:
        ex, out = stream_process(router_url(stack), ns, name, f"sleep {TIMEOUT + 25}; echo done", TIMEOUT + 90)
    finally:
        watch.stop()
    assert ex.get("exitCode", 0) == 0 and out.strip() == b"done", (ex, out)
    assert not watch.seen_suspended, "suspended while its command ran"
    wait_for(lambda: idle_suspended(stack, ns, name), timeout=TIMEOUT + 90,
             desc="suspended once the command ended")


def restart(kube, app):
    old = {p["metadata"]["name"] for p in kube.list("pods", SYSTEM_NS, selector=f"app={app}")}
    kube.run("rollout", "restart", "-n", SYSTEM_NS, f"deployment/{app}")
    rollout(kube, app)

    def replaced():
        pods = kube.list("pods", SYSTEM_NS, selector=f"app={app}")
        names = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
        return names if names and not (names & old) else None
    wait_for(replaced, timeout=120, desc=f"{app} pods replaced")


def test_router_and_controller_restarts_lose_nothing(stack, ns):
    name = "steady"
    stack.apply(sandboxd_sandbox(name, idleTimeoutSeconds=TIMEOUT), ns)
    wait_for(lambda: ready(stack, ns, name), timeout=180, desc=f"Ready\n{dump(stack, ns)}")
    url = router_url(stack)
    stop = threading.Event()
    failures = []

    def use():
        while not stop.is_set():
            try:
                execute(url, ns, name, "true", timeout=30)
            except (OSError, urllib.error.HTTPError):
                failures.append(time.monotonic())   # a router pod going away: retried
            stop.wait(3)
    user = threading.Thread(target=use, daemon=True)
    watch = Watch(stack, ns, [name])
    user.start()
    watch.start()
    try:
        restart(stack, ROUTER)
        restart(stack, CONTROLLER)
        time.sleep(TIMEOUT + 5)   # in use for longer than its timeout after both restarts
    finally:
        stop.set()
        user.join(timeout=60)
        watch.stop()
    assert not watch.seen_suspended, "suspended while in use across the restarts"
    wait_for(lambda: idle_suspended(stack, ns, name), timeout=TIMEOUT + 90,
             desc="suspended once unused")
    out = execute(url, ns, name, "echo awake", timeout=180)
    assert out["exit_code"] == 0 and out["stdout"].strip() == "awake", out


def test_idle_delete_removes_the_claim_and_its_sandbox(stack, ns):
    pool(stack, ns, 1)
    stack.create({"apiVersion": EXT_API, "kind": "SandboxClaim", "metadata": {"name": "brief"},
                  "spec": {"warmPoolRef": {"name": "sandboxd-pool"},
                           "lifecycle": {"idleTimeoutSeconds": TIMEOUT, "idlePolicy": "Delete"}}}, ns)
    claim = wait_for(lambda: (condition(stack.get(CLAIM, "brief", ns), "Ready") or {}).get("status") == "True"
                     and stack.get(CLAIM, "brief", ns), timeout=180, desc=f"claim Ready\n{dump(stack, ns)}")
    sb = claim["status"]["sandbox"]["name"]
    out = execute(router_url(stack), ns, sb, "echo used")
    assert out["stdout"].strip() == "used"
    wait_for(lambda: stack.get(CLAIM, "brief", ns) is None, timeout=TIMEOUT + 90,
             desc=f"the idle claim deleted\n{dump(stack, ns)}")
    wait_for(lambda: stack.get("sandbox", sb, ns) is None, timeout=120, desc="its Sandbox deleted")
