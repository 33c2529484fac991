#!/usr/bin/env python3
"""Waking a suspended sandbox on a real node, and what idle tracking costs
the API server.

    bench/idle_wake.py [--count N] [--active N] [--duration S] [--timeout S]

Needs KUBECONFIG naming a cluster with a Ready real node (type=real) and the
images of tools/images loaded (`AGENT_SANDBOX_REAL_NODES=1
AGENT_SANDBOX_NODES=0 tools/local-cluster up`, as tools/test's end-to-end
step): deploy/ and deploy/router are applied as a user does, so the
controller and the router run in pods, sandboxd in real pods
(deploy/sandboxd's template, 10m CPU each).

wake: `--count` sandboxes with an idle policy, suspended; one at a time, the
time from sending a command (POST /execute `true` through the router's
Service) to the first byte of its answer:
  - router: the request alone (the router resumes the sandbox and holds
    the request until its new pod is Ready, docs/router.md#idle-sandboxes);
  - client: what a client does without wake on request (upstream has
    none): patch operatingMode Running, watch the Sandbox until Ready, then
    send the request; timed from the patch.
writes: `--active` sandboxes with idleTimeoutSeconds 120 (publish interval
30 s) each sent a request every second for `--duration` seconds through
the router (two replicas); the activity writes counted on a watch of their
last-activity annotation: writes per active sandbox per minute.
"""
import argparse
import base64
import concurrent.futures
import copy
import json
import os
import shlex
import subprocess
import sys
import threading
import time
import urllib.request
import uuid

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from create_to_ready import ROOT, machine, pct  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests"))
from kubetest import admin_kube, condition, wait_for  # noqa: E402

SYSTEM_NS = "agent-sandbox-system"
TEMPLATE_FILE = os.path.join(ROOT, "deploy", "sandboxd", "sandboxtemplate.yaml")
LAST_ACTIVITY = "agents.x-k8s.io/last-activity"


def log(*a):
    print("[idle_wake]", *a, file=sys.stderr, flush=True)


def sandbox(name, idle):
    with open(TEMPLATE_FILE) as f:
        pt = copy.deepcopy(yaml.safe_load(f)["spec"]["podTemplate"])
    pt["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "10m"
    return {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": name},
            "spec": {"podTemplate": pt, "idleTimeoutSeconds": idle}}


def first_byte(url, ns, name, timeout=300):
    """Seconds from sending POST /execute to the first byte of the answer."""
    body = json.dumps({"command": "true"}).encode()
    req = urllib.request.Request(url + "/execute", data=body,
                                 headers={"Content-Type": "application/json", "X-Sandbox-ID": name,
                                          "X-Sandbox-Namespace": ns, "X-Sandbox-Port": "8888"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        r.read(1)
        took = time.monotonic() - t0
        r.read()
    return took


def is_ready(sb):
    return (condition(sb, "Ready") or {}).get("status") == "True"


def suspend_all(kube, ns, names):
    for n in names:
        kube.patch("sandbox", n, ns, {"spec": {"operatingMode": "Suspended"}})
    wait_for(lambda: not [p for p in kube.list("pods", ns) if p["metadata"]["name"] in names],
             timeout=300, interval=1, desc="their pods deleted")


def wake_phase(kube, url, ns, names, how):
    suspend_all(kube, ns, names)
    took = []
    for n in names:
        if how == "router":
            took.append(first_byte(url, ns, n))
        else:
            t0 = time.monotonic()
            kube.patch("sandbox", n, ns, {"spec": {"operatingMode": "Running"}})
            wait_for(lambda: is_ready(kube.get("sandbox", n, ns)), timeout=300, interval=0.05,
                     desc=f"{n} Ready")
            first_byte(url, ns, n)
            took.append(time.monotonic() - t0)
    return sorted(t * 1000 for t in took)


def count_writes(kube, ns, names, duration, url):
    """Requests every second to each sandbox for `duration` s; returns the
    number of distinct last-activity values seen on a watch."""
    seen = set()
    watch = subprocess.Popen([*kube.kubectl, "--kubeconfig", kube.kubeconfig, "get", "sandboxes", "-n", ns,
                              "--watch", "-o", "jsonpath={.metadata.name} {.metadata.annotations."
                              + LAST_ACTIVITY.replace(".", "\\.") + "}{\"\\n\"}"],
                             stdout=subprocess.PIPE, text=True)

    def read():
        for line in watch.stdout:
            parts = line.split()
            if len(parts) == 2:
                seen.add(tuple(parts))
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(2)
    before = set(seen)
    end = time.monotonic() + duration
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(names)) as ex:
        while time.monotonic() < end:
            t = time.monotonic()
            list(ex.map(lambda n: first_byte(url, ns, n, 30), names))
            time.sleep(max(0, 1 - (time.monotonic() - t)))
    time.sleep(3)
    watch.terminate()
    return len(seen - before)


def main(argv):
    ap = argparse.ArgumentParser(prog="bench/idle_wake.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=10, help="sandboxes woken per method (default 10)")
    ap.add_argument("--active", type=int, default=10, help="sandboxes kept active (default 10)")
    ap.add_argument("--duration", type=int, default=300, help="seconds of activity (default 300)")
    args = ap.parse_args(argv)
    kube = admin_kube()
    if kube is None:
        sys.exit("bench/idle_wake.py: KUBECONFIG must name a cluster with a real node (see --help)")
    kube.run("apply", "-k", os.path.join(ROOT, "deploy"))
    kube.run("apply", "-k", os.path.join(ROOT, "deploy", "router"))
    for d in ("agent-sandbox-controller", "sandbox-router"):
        kube.run("-n", SYSTEM_NS, "rollout", "status", f"deployment/{d}", "--timeout=240s")
    ip = kube.run("get", "service", "sandbox-router-svc", "-n", SYSTEM_NS, "-o", "jsonpath={.spec.clusterIP}").stdout
    url = f"http://{ip}:8080"
    ns = "idle-wake-" + uuid.uuid4().hex[:6]
    kube.run("create", "namespace", ns)
    kube.run("apply", "-n", ns, "-f", TEMPLATE_FILE)   # its NetworkPolicy lets the router in
    load0 = os.getloadavg()
    res = {}
    try:
        names = [f"w-{i:02d}" for i in range(args.count)]
        active = [f"a-{i:02d}" for i in range(args.active)]
        kube.create({"apiVersion": "v1", "kind": "List",
                     "items": [sandbox(n, 3600) for n in names] + [sandbox(n, 120) for n in active]}, ns)
        every = names + active
        wait_for(lambda: all(is_ready(s) for s in kube.list("sandbox", ns)) and
                 len(kube.list("sandbox", ns)) == len(every), timeout=600, interval=2, desc="all Ready")
        for n in names:   # the router's pools warm, the image on the node
            first_byte(url, ns, n)
        for how in ("client", "router", "client", "router"):
            lat = wake_phase(kube, url, ns, names, how)
            res.setdefault(how, []).extend(lat)
            log(f"{how}: p50 {pct(lat, 50):.0f} ms")
        writes = count_writes(kube, ns, active, args.duration, url)
        load1 = os.getloadavg()
    finally:
        kube.run("delete", "namespace", ns, "--wait=false", check=False)
    print(f"# idle_wake {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; {machine()}; "
          f"load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    print(f"# command: bench/idle_wake.py {shlex.join(argv)}")
    print("| suspended sandbox -> first byte of a command's answer | wakes | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|")
    for how, what in (("router", "request through the router (wake on request)"),
                      ("client", "client: patch Running, watch until Ready, request")):
        lat = sorted(res[how])
        print(f"| {what} | {len(lat)} | {pct(lat, 50):.0f} | {pct(lat, 99):.0f} | {lat[-1]:.0f} |")
    ratio = pct(sorted(res["router"]), 50) / max(pct(sorted(res["client"]), 50), 0.001)
    print(f"router / client p50: {ratio:.2f}x")
    per_min = writes / len(active) / (args.duration / 60)
    bound = (1 + args.duration // 30) / (args.duration / 60)
    print(f"activity writes: {writes} for {len(active)} sandboxes active {args.duration} s "
          f"(idleTimeoutSeconds 120, one request a second each, two router replicas): "
          f"{per_min:.2f} per sandbox per minute (bound: the first request's, then one per 30 s "
          f"interval: {bound:.2f}; 2 in the long run)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
