#!/usr/bin/env python3
"""SandboxClaim latency and throughput benchmark (run it through
bench/claim_latency.sh). See bench/README.md.

Phases, each in a fresh namespace of the same control plane, for each
controller command:
  1. warm: claims against a pool of `--pool` members (pause container), in
     rounds of C concurrent claims for each C of `--concurrency` (default
     1,10,100): each round starts once the pool is full and Ready again, its
     C creates are released together, and the round's claims are deleted
     after they are Ready. Latency of a claim = first time a watch on the
     claims sees it Ready=True - start of its create call (this client's
     monotonic clock). The figures are for claims bound warm (adopted pool
     member); cold ones (pool momentarily empty) are counted apart.
  2. cold: `--cold` claims, one at a time, against a pool with replicas 0.
  3. fill: a pool of `--fill` members created; time until the last member
     is first seen Ready=True by a watch on the Sandboxes.
  4. sustained: open-loop arrivals at `--rate` claims/s for `--duration` s
     (creates scheduled at t0 + i/rate, whatever the completions do) against
     a pool of `--pool`; each claim deleted `--dwell` s after it is Ready;
     Ready/s, latency and the warm/cold split.
  5. roll (only when asked): a pool of `--pool` members has its template
     changed while claims arrive at `--rate`; the time until every member
     is of the new template and Ready, the fewest Ready members meanwhile,
     and the claims made during the roll (warm/cold, latency).
Also the controller's peak RSS (VmHWM) and CPU seconds over the run, from
/proc (the command's process and its descendants).

The controller command comes after `--` (several `--` groups: each measured
in turn); `{kubeconfig}` is replaced by a kubeconfig of the deploy/
ServiceAccount (also in its KUBECONFIG), `{logdir}` by the log directory.
Default: our controller from --build-dir with --extensions, leader election
off, metrics/probe endpoints off, the conversion webhook on loopback.

Without KUBECONFIG, starts a private control plane (tools/local-cluster,
state /tmp/agent-sandbox-bench-claims-cluster, ports 19xxx, unless
AGENT_SANDBOX_* say otherwise) with enough kwok nodes, and stops it at the
end. With KUBECONFIG (admin), uses that cluster, which needs room for the
pods and must run no other agent-sandbox controller.
"""
import argparse
import heapq
import http.client
import json
import re
import os
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from create_to_ready import (LEASE, LOCAL_CLUSTER, ROOT, FirstReady, Kubeconfig, cluster_for,  # noqa: E402
                             free_port, is_ready, kubectl_bin, machine, pct, request, sa_kubeconfig,
                             stop_controller, usage)

GROUP = "extensions.agents.x-k8s.io"
EXT = f"/apis/{GROUP}/v1beta1"
SBX = "/apis/agents.x-k8s.io/v1beta1"
IMAGE = "registry.k8s.io/pause:3.10"
L_POOL = "agents.x-k8s.io/warm-pool-sandbox"
EXT_CRDS = ("sandboxclaims", "sandboxtemplates", "sandboxwarmpools")


def log(*a):
    print("[claim_latency]", *a, file=sys.stderr, flush=True)


def name_hash(s):
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


def call(kc, method, path, body=None, conn=None, ok=(200, 201, 202), tries=40):
    """request() retried on a lost connection, 429 and 5xx (a CRD change
    reloads its storage for a moment); returns (status, body)."""
    for attempt in range(tries):
        try:
            status, data = request(kc, method, path, body, conn)
        except (OSError, http.client.HTTPException) as e:
            if conn is not None:
                conn.close()
            status, data = None, str(e).encode()
        if status in ok or status in (404, 409) or (status is not None and 400 <= status < 500 and status != 429):
            return status, data
        time.sleep(0.25)
    return status, data


# ---------------------------------------------------------------- objects

def template(name="tpl"):
    return {"apiVersion": f"{GROUP}/v1beta1", "kind": "SandboxTemplate", "metadata": {"name": name},
            "spec": {"podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}}}}


def pool(name, replicas, tpl="tpl"):
    return {"apiVersion": f"{GROUP}/v1beta1", "kind": "SandboxWarmPool", "metadata": {"name": name},
            "spec": {"replicas": replicas, "sandboxTemplateRef": {"name": tpl}}}


def claim(name, pool_name):
    return {"apiVersion": f"{GROUP}/v1beta1", "kind": "SandboxClaim", "metadata": {"name": name},
            "spec": {"warmPoolRef": {"name": pool_name}}}


def create(kc, ns, plural, obj, api=EXT, conn=None):
    status, body = call(kc, "POST", f"{api}/namespaces/{ns}/{plural}", obj, conn)
    if status not in (201, 409):
        raise RuntimeError(f"create {plural}/{obj['metadata']['name']}: {status} {body[:300]!r}")


def members(kc, ns, pool_name):
    status, body = call(kc, "GET", f"{SBX}/namespaces/{ns}/sandboxes?labelSelector={L_POOL}%3D{name_hash(pool_name)}")
    assert status == 200, body
    return [s for s in json.loads(body)["items"] if not s["metadata"].get("deletionTimestamp")]


def wait_pool_full(kc, ns, pool_name, n, timeout, proc):
    deadline = time.monotonic() + timeout
    while True:
        ms = members(kc, ns, pool_name)
        if len(ms) == n and all(is_ready(s) and s.get("status", {}).get("podIPs") for s in ms):
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the controller exited ({proc.returncode})")
        if time.monotonic() > deadline:
            raise RuntimeError(f"pool {ns}/{pool_name}: {len(ms)} members, "
                               f"{sum(map(is_ready, ms))} Ready after {timeout}s (want {n})")
        time.sleep(0.25)


def launch_of(claim_obj):
    """warm / cold from the claim as first seen Ready: a cold Sandbox is named
    like the claim (docs/api.md#cold-start), an adopted one is not."""
    sb = ((claim_obj.get("status") or {}).get("sandbox") or {}).get("name")
    return "cold" if sb == claim_obj["metadata"]["name"] else "warm"


CREATED_NS = []  # every namespace made, so that a run waits for their teardown


def new_ns(kc, tag):
    ns = f"bench-claims-{tag}-{uuid.uuid4().hex[:6]}"
    CREATED_NS.append(ns)
    status, body = call(kc, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                            "metadata": {"name": ns}})
    assert status == 201, body
    deadline = time.monotonic() + 30
    while call(kc, "GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default", ok=(200,))[0] != 200:
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    return ns


def drop_ns(kc, ns):
    call(kc, "DELETE", f"/api/v1/namespaces/{ns}")


def wait_no_pods(kc, ns, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = call(kc, "GET", f"/api/v1/namespaces/{ns}/pods?limit=1")
        if status == 200 and not json.loads(body)["items"]:
            return
        time.sleep(1)


def delete_claims(kc, ns, names):
    conn = kc.connect()
    for n in names:
        call(kc, "DELETE", f"{EXT}/namespaces/{ns}/sandboxclaims/{n}", conn=conn)
    conn.close()


# ---------------------------------------------------------------- phases

def phase_warm(kc, args, proc):
    """Rounds of C concurrent claims against a full pool; returns
    {C: (warm latencies ms, cold count, total)}."""
    ns = new_ns(kc, "warm")
    size = args.pool
    create(kc, ns, "sandboxtemplates", template())
    create(kc, ns, "sandboxwarmpools", pool("pool", size))
    watch = FirstReady(kc, f"{EXT}/namespaces/{ns}/sandboxclaims")
    watch.start()
    out = {}
    try:
        for c, rounds in zip(args.concurrency, args.rounds):
            warm, cold, total = [], 0, 0
            for r in range(rounds):
                wait_pool_full(kc, ns, "pool", size, args.timeout, proc)
                names = [f"w{c}-{r}-{i}" for i in range(c)]
                started = {}
                barrier = threading.Barrier(c)

                def one(n):
                    conn = kc.connect()
                    barrier.wait()
                    t = time.monotonic()
                    create(kc, ns, "sandboxclaims", claim(n, "pool"), conn=conn)
                    started[n] = t
                    conn.close()
                threads = [threading.Thread(target=one, args=(n,)) for n in names]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                if not watch.wait(names, time.monotonic() + args.timeout):
                    missing = [n for n in names if n not in watch.ready_at]
                    raise RuntimeError(f"{len(missing)} of {c} claims not Ready in {args.timeout}s: {missing[:5]}")
                for n in names:
                    total += 1
                    if launch_of(watch.obj[n]) == "warm":
                        warm.append((watch.ready_at[n] - started[n]) * 1000)
                    else:
                        cold += 1
                delete_claims(kc, ns, names)
            out[c] = (sorted(warm), cold, total)
            log(f"warm, {c} concurrent: {total} claims, {len(warm)} warm, p50 {pct(sorted(warm), 50):.0f} ms")
    finally:
        watch.stop = True
        drop_ns(kc, ns)
        wait_no_pods(kc, ns)
    return out


def phase_cold(kc, args, proc):
    ns = new_ns(kc, "cold")
    create(kc, ns, "sandboxtemplates", template())
    create(kc, ns, "sandboxwarmpools", pool("empty", 0))
    watch = FirstReady(kc, f"{EXT}/namespaces/{ns}/sandboxclaims")
    watch.start()
    lat, warm = [], 0
    try:
        for i in range(args.cold):
            n = f"cold-{i}"
            t = time.monotonic()
            create(kc, ns, "sandboxclaims", claim(n, "empty"))
            if not watch.wait([n], time.monotonic() + args.timeout):
                raise RuntimeError(f"cold claim {n} not Ready in {args.timeout}s")
            if proc.poll() is not None:
                raise RuntimeError("the controller exited")
            lat.append((watch.ready_at[n] - t) * 1000)
            warm += launch_of(watch.obj[n]) == "warm"
        log(f"cold: {len(lat)} claims, p50 {pct(sorted(lat), 50):.0f} ms")
    finally:
        watch.stop = True
        drop_ns(kc, ns)
        wait_no_pods(kc, ns)
    return sorted(lat), warm


def phase_fill(kc, args, proc):
    ns = new_ns(kc, "fill")
    create(kc, ns, "sandboxtemplates", template())
    watch = FirstReady(kc, f"{SBX}/namespaces/{ns}/sandboxes", selector=f"{L_POOL}%3D{name_hash('fill')}")
    watch.start()
    try:
        t0 = time.monotonic()
        create(kc, ns, "sandboxwarmpools", pool("fill", args.fill))
        done = watch.wait_count(args.fill, t0 + args.timeout)
        span = (max(watch.ready_at.values()) - t0) if watch.ready_at else float("nan")
        first = (min(watch.ready_at.values()) - t0) if watch.ready_at else float("nan")
        n = len(watch.ready_at)
        log(f"fill: {n} of {args.fill} Ready, last at {span:.2f} s")
        if proc.poll() is not None:
            raise RuntimeError("the controller exited")
    finally:
        watch.stop = True
        drop_ns(kc, ns)
        wait_no_pods(kc, ns)
    return n, span, first, done


def phase_sustained(kc, args, proc):
    ns = new_ns(kc, "sustained")
    create(kc, ns, "sandboxtemplates", template())
    create(kc, ns, "sandboxwarmpools", pool("pool", args.pool))
    wait_pool_full(kc, ns, "pool", args.pool, args.timeout, proc)
    dues, lock, stop = [], threading.Lock(), threading.Event()

    def on_ready(name, obj, t):
        with lock:
            heapq.heappush(dues, (t + args.dwell, name))

    def deleter():
        conn = kc.connect()
        while not stop.is_set():
            with lock:
                due = dues[0][0] if dues else None
                name = heapq.heappop(dues)[1] if due is not None and due <= time.monotonic() else None
            if name:
                call(kc, "DELETE", f"{EXT}/namespaces/{ns}/sandboxclaims/{name}", conn=conn)
            else:
                time.sleep(0.05)
        conn.close()

    watch = FirstReady(kc, f"{EXT}/namespaces/{ns}/sandboxclaims", on_ready=on_ready)
    watch.start()
    dt = threading.Thread(target=deleter, daemon=True)
    dt.start()
    count = int(args.rate * args.duration)
    names = [f"s-{i:05d}" for i in range(count)]
    started, errors, slock = {}, [], threading.Lock()
    t0 = time.monotonic() + 0.2
    nxt = iter(enumerate(names))
    ilock = threading.Lock()

    def worker():
        conn = kc.connect()
        while True:
            with ilock:
                item = next(nxt, None)
            if item is None:
                break
            i, n = item
            delay = t0 + i / args.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            t = time.monotonic()
            try:
                create(kc, ns, "sandboxclaims", claim(n, "pool"), conn=conn)
                with slock:
                    started[n] = t
            except RuntimeError as e:
                with slock:
                    errors.append(str(e))
                conn.close()
                conn = kc.connect()
        conn.close()
    try:
        threads = [threading.Thread(target=worker, daemon=True) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        created_by = max(started.values(), default=t0)
        complete = watch.wait(list(started), t0 + args.duration + args.timeout)
        ready = [n for n in started if n in watch.ready_at]
        lat = sorted((watch.ready_at[n] - started[n]) * 1000 for n in ready)
        warm = sum(launch_of(watch.obj[n]) == "warm" for n in ready)
        in_window = sum(watch.ready_at[n] - t0 <= args.duration for n in ready)
        last = max((watch.ready_at[n] for n in ready), default=t0)
        res = dict(offered=args.rate, created=len(started), errors=errors, create_rate=len(started) / max(created_by - t0, 1e-9),
                   ready=len(ready), warm=warm, cold=len(ready) - warm, lat=lat, complete=complete and not errors,
                   ready_rate_window=in_window / args.duration, throughput=len(ready) / max(last - t0, 1e-9))
        log(f"sustained: {len(ready)} of {len(started)} Ready, {warm} warm")
    finally:
        stop.set()
        watch.stop = True
        drop_ns(kc, ns)
        wait_no_pods(kc, ns)
        wait_no_pods(kc, ns)
    return res


def versioned_template(version):
    t = template()
    t["spec"]["podTemplate"]["spec"]["containers"][0]["env"] = [{"name": "VERSION", "value": version}]
    return t


def version_of(sb):
    for c in sb["spec"]["podTemplate"]["spec"].get("containers", []):
        for e in c.get("env") or []:
            if e.get("name") == "VERSION":
                return e.get("value")
    return None


def phase_roll(kc, args, proc):
    """A pool of --pool members rolls to a new template (--roll-strategy)
    under claims arriving at --rate: the time until every member is of the
    new template and Ready, the fewest Ready members seen meanwhile, and the
    claims made during the roll (warm / cold, claim-to-Ready)."""
    ns = new_ns(kc, "roll")
    create(kc, ns, "sandboxtemplates", versioned_template("1"))
    p = pool("pool", args.pool)
    p["spec"]["updateStrategy"] = {"type": args.roll_strategy}
    if args.roll_strategy == "RollingUpdate":
        p["spec"]["updateStrategy"]["rollingUpdate"] = {"maxSurge": args.roll_surge,
                                                       "maxUnavailable": args.roll_unavailable}
    create(kc, ns, "sandboxwarmpools", p)
    wait_pool_full(kc, ns, "pool", args.pool, args.timeout, proc)
    watch = FirstReady(kc, f"{EXT}/namespaces/{ns}/sandboxclaims")
    watch.start()
    stop, started, slock = threading.Event(), {}, threading.Lock()

    def arrivals():
        conn, i, t0 = kc.connect(), 0, time.monotonic()
        while not stop.is_set():
            delay = t0 + i / args.rate - time.monotonic()
            if delay > 0 and stop.wait(delay):
                break
            n = f"r-{i:05d}"
            t = time.monotonic()
            try:
                create(kc, ns, "sandboxclaims", claim(n, "pool"), conn=conn)
                with slock:
                    started[n] = t
            except RuntimeError:
                conn.close()
                conn = kc.connect()
            i += 1
        conn.close()
    arr = threading.Thread(target=arrivals, daemon=True)
    try:
        arr.start()
        time.sleep(1)
        t0 = time.monotonic()
        path = f"{EXT}/namespaces/{ns}/sandboxtemplates/tpl"
        status, body = call(kc, "GET", path)
        assert status == 200, body
        tpl = json.loads(body)
        tpl["spec"]["podTemplate"]["spec"]["containers"][0]["env"] = [{"name": "VERSION", "value": "2"}]
        status, body = call(kc, "PUT", path, tpl)
        assert status == 200, body
        ready_min, done_at = args.pool, None
        while time.monotonic() - t0 < args.timeout:
            ms = members(kc, ns, "pool")
            ready = [s for s in ms if is_ready(s)]
            ready_min = min(ready_min, len(ready))
            if len(ms) == args.pool and len(ready) == args.pool and all(version_of(s) == "2" for s in ms):
                done_at = time.monotonic()
                break
            if proc.poll() is not None:
                raise RuntimeError("the controller exited")
            time.sleep(0.2)
        stop.set()
        arr.join()
        end = done_at or time.monotonic()
        during = [n for n, t in started.items() if t0 <= t <= end]
        complete = watch.wait(during, time.monotonic() + args.timeout)
        ready = [n for n in during if n in watch.ready_at]
        lat = sorted((watch.ready_at[n] - started[n]) * 1000 for n in ready)
        warm = sum(launch_of(watch.obj[n]) == "warm" for n in ready)
        res = dict(strategy=args.roll_strategy, span=(done_at - t0) if done_at else None, ready_min=ready_min,
                   claims=len(during), ready=len(ready), warm=warm, lat=lat, complete=complete and done_at is not None)
        log(f"roll ({args.roll_strategy}): " + (f"done in {done_at - t0:.1f} s" if done_at else "not done") +
            f", fewest Ready members {ready_min} of {args.pool}, {len(during)} claims during it, {warm} warm")
    finally:
        stop.set()
        watch.stop = True
        drop_ns(kc, ns)
        wait_no_pods(kc, ns)
    return res


WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "APPLY")
_SAMPLE = re.compile(r'^apiserver_request_total\{([^}]*)\} ([0-9.e+]+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def write_counts(kc):
    """The API server's write requests so far, {(verb, group, resource,
    subresource): count}, from apiserver_request_total on /metrics."""
    status, body = request(kc, "GET", "/metrics")
    if status != 200:
        raise RuntimeError(f"GET /metrics: {status}")
    out = {}
    for line in body.decode().splitlines():
        m = _SAMPLE.match(line)
        if not m:
            continue
        lab = dict(_LABEL.findall(m.group(1)))
        if lab.get("verb") not in WRITE_VERBS or lab.get("dry_run"):
            continue
        if lab.get("scope") == "namespace" and lab["verb"] == "DELETE":
            continue  # deletecollection: the namespace controller emptying a namespace
        k = (lab["verb"], lab.get("group", ""), lab.get("resource", ""), lab.get("subresource", ""))
        out[k] = out.get(k, 0) + float(m.group(2))
    return out


def not_controllers(k):
    """Writes that other actors make: the benchmark's claim creates, the
    scheduler's bindings (its events are taken out by phase_writes), kwok's pod and node
    status and node leases, the control plane's own leases and
    EndpointSlices, authn/authz reviews."""
    verb, group, resource, sub = k
    return ((group == "extensions.agents.x-k8s.io" and resource == "sandboxclaims" and verb == "POST" and not sub)
            or (resource == "pods" and sub in ("binding", "status"))
            or resource in ("nodes", "leases", "endpointslices", "endpoints", "namespaces", "configmaps",
                            "serviceaccounts")
            or group in ("authentication.k8s.io", "authorization.k8s.io"))


def scheduler_events(kc, ns):
    """Names of the events the scheduler reported in `ns` (events.k8s.io,
    the API both the scheduler and our controller write events with)."""
    status, body = call(kc, "GET", f"/apis/events.k8s.io/v1/namespaces/{ns}/events")
    assert status == 200, body
    return {e["metadata"]["name"] for e in json.loads(body)["items"]
            if e.get("reportingController") == "default-scheduler"}


def wait_ns_gone(kc, ns, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if call(kc, "GET", f"/api/v1/namespaces/{ns}")[0] == 404:
            return
        time.sleep(0.5)


def phase_writes(kc, args, proc):
    """API writes per claim and its replacement: a full pool of `--writes`
    members, as many claims (10 at a time), until every claim is Ready and
    the pool is full and Ready again and the API server has seen no write
    for 3 s; the difference of apiserver_request_total across it."""
    n = args.writes
    ns = new_ns(kc, "writes")
    create(kc, ns, "sandboxtemplates", template())
    create(kc, ns, "sandboxwarmpools", pool("pool", n))
    watch = FirstReady(kc, f"{EXT}/namespaces/{ns}/sandboxclaims")
    watch.start()
    try:
        wait_pool_full(kc, ns, "pool", n, args.timeout, proc)
        time.sleep(3)
        before, sched0 = write_counts(kc), scheduler_events(kc, ns)
        names = [f"wr-{i}" for i in range(n)]
        for i in range(0, n, 10):
            batch = names[i:i + 10]
            threads = [threading.Thread(target=create, args=(kc, ns, "sandboxclaims", claim(x, "pool")))
                       for x in batch]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        if not watch.wait(names, time.monotonic() + args.timeout):
            raise RuntimeError("writes phase: claims not Ready in time")
        wait_pool_full(kc, ns, "pool", n, args.timeout, proc)
        # quiet: no write anywhere for 3 s (status writes trail Ready)
        prev, deadline = write_counts(kc), time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            time.sleep(3)
            cur = write_counts(kc)
            if cur == prev:
                break
            prev = cur
        after = prev
        # the scheduler's events (one POST each) are not the controller's
        sched = len(scheduler_events(kc, ns) - sched0)
        warm = sum(launch_of(watch.obj[x]) == "warm" for x in names)
        diff = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        diff = {k: v for k, v in diff.items() if v > 0}
        ctl = {k: v for k, v in diff.items() if not not_controllers(k)}
        ev = ("POST", "events.k8s.io", "events", "")
        if ev in ctl:
            ctl[ev] -= sched
            if ctl[ev] <= 0:
                del ctl[ev]
        res = dict(claims=n, warm=warm, total=sum(diff.values()), controller=sum(ctl.values()),
                   breakdown=sorted(ctl.items(), key=lambda kv: -kv[1]))
        log(f"writes: {res['controller'] / n:.1f} controller writes per claim ({warm} of {n} warm)")
    finally:
        watch.stop = True
        drop_ns(kc, ns)
        wait_no_pods(kc, ns)
    return res


# ---------------------------------------------------------------- one controller

def start_controller(cmd, sa_path, logdir, index):
    """Starts controller command `cmd` ({kubeconfig}, {logdir} filled in) in a
    session of its own; returns (proc, log file, log path, command line)."""
    cmd = [a.replace("{kubeconfig}", sa_path).replace("{logdir}", logdir) for a in cmd]
    logpath = os.path.join(logdir, f"controller-{index}.log")
    logf = open(logpath, "w")
    log("starting:", shlex.join(cmd), "(log:", logpath + ")")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=dict(os.environ, KUBECONFIG=sa_path),
                            start_new_session=True)
    return proc, logf, logpath, shlex.join(cmd)


def conversion_none(kubectl, kubeconfig):
    """CRD conversion strategy None, for a controller run without a
    conversion webhook (upstream's with --enable-webhook=false);
    prepare_cluster() puts the webhook back."""
    for crd in ["sandboxes.agents.x-k8s.io"] + [f"{p}.{GROUP}" for p in EXT_CRDS]:
        subprocess.run([kubectl, "--kubeconfig", kubeconfig, "patch", "crd", crd, "--type=merge", "-p",
                        json.dumps({"spec": {"conversion": {"strategy": "None", "webhook": None}}})],
                       check=True, stdout=subprocess.DEVNULL)


def run_one(kc, sa_path, cmd, args, logdir, index):
    if "--enable-webhook=false" in cmd:
        conversion_none(args.kubectl, args.kubeconfig)
    proc, logf, logpath, line = start_controller(cmd, sa_path, logdir, index)
    res = {"command": line, "log": logpath}
    try:
        # warm-up: one cold claim Ready means caches synced and workers running
        ns = new_ns(kc, "warmup")
        t = time.monotonic()
        watch = FirstReady(kc, f"{EXT}/namespaces/{ns}/sandboxclaims")
        watch.start()
        create(kc, ns, "sandboxtemplates", template())
        create(kc, ns, "sandboxwarmpools", pool("pool", 0))
        create(kc, ns, "sandboxclaims", claim("warmup", "pool"))
        while not watch.wait(["warmup"], time.monotonic() + 1):
            if proc.poll() is not None:
                raise RuntimeError(f"controller exited with {proc.returncode}; see {logpath}")
            if time.monotonic() - t > 180:
                raise RuntimeError(f"warm-up claim not Ready after 180 s; see {logpath}")
        watch.stop = True
        res["warmup_s"] = watch.ready_at["warmup"] - t
        drop_ns(kc, ns)
        wait_ns_gone(kc, ns)  # its teardown's writes stay out of the writes phase

        for ph, fn in (("writes", phase_writes), ("warm", phase_warm), ("cold", phase_cold),
                       ("fill", phase_fill), ("sustained", phase_sustained), ("roll", phase_roll)):
            if ph in args.phases:
                res[ph] = fn(kc, args, proc)
        cpu, hwm, _ = usage(proc.pid)
        res.update(cpu=cpu, hwm_mib=hwm / 1024, alive=proc.poll() is None)
    except RuntimeError as e:
        res["error"] = str(e)
        log("error:", e)
    finally:
        # the phases' namespaces go before the next controller starts: one
        # that still terminates has it reconcile a thousand Sandboxes whose
        # Pods cannot be made (the second controller of a run paid for the
        # first one's sustained phase: a 10 s warm-up and +15 s of CPU)
        t = time.monotonic()
        for ns in CREATED_NS:
            wait_ns_gone(kc, ns, timeout=600)
        CREATED_NS.clear()
        log(f"the run's namespaces are gone ({time.monotonic() - t:.0f} s)")
        stop_controller(proc, logf)
        res["exit_code"] = proc.returncode
    return res


def default_command(build_dir, prog):
    """Our controller from `build_dir` with --extensions, leader election and
    endpoints off, the conversion webhook on a free loopback port."""
    binary = os.path.join(os.path.abspath(build_dir), "cmd", "controller", "agent-sandbox-controller")
    if not os.access(binary, os.X_OK):
        sys.exit(f"{prog}: {binary} is not built (meson compile -C {build_dir})")
    port = free_port()
    return [binary, "--kubeconfig", "{kubeconfig}", "--extensions", "--leader-elect=false",
            "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
            "--webhook-port", str(port), "--webhook-bind-address", "127.0.0.1",
            "--webhook-cert-dir", "{logdir}/webhook-certs",
            "--webhook-url", f"https://127.0.0.1:{port}/convert"]


def prepare_cluster(kubeconfig, pods):
    """Installs deploy/ (CRDs, RBAC) on the cluster of admin `kubeconfig` and
    warns when another controller leads or the nodes lack room for `pods`.
    Returns (Kubeconfig, kubectl path)."""
    kc = Kubeconfig(kubeconfig)
    kubectl = kubectl_bin()
    # a controller run with --webhook-url left a CRD's conversion on a URL;
    # `apply` would add the Service beside it (refused): put the Service back
    for crd in ["sandboxes.agents.x-k8s.io"] + [f"{p}.{GROUP}" for p in EXT_CRDS]:
        status, body = request(kc, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
        if status == 200 and ((json.loads(body)["spec"].get("conversion") or {}).get("webhook") or {}).get(
                "clientConfig", {}).get("url"):
            subprocess.run([kubectl, "--kubeconfig", kubeconfig, "patch", "crd", crd, "--type=merge", "-p",
                            json.dumps({"spec": {"conversion": {"webhook": {"clientConfig": {
                                "url": None, "service": {"name": "agent-sandbox-webhook-service",
                                                         "namespace": "agent-sandbox-system",
                                                         "path": "/convert"}}}}}})],
                           check=True, stdout=subprocess.DEVNULL)
    subprocess.run([kubectl, "--kubeconfig", kubeconfig, "apply", "-k", os.path.join(ROOT, "deploy")],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run([kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established", "--timeout=60s"]
                   + [f"crd/{p}.{GROUP}" for p in EXT_CRDS], check=True, stdout=subprocess.DEVNULL)
    status, body = request(kc, "GET", f"/apis/coordination.k8s.io/v1/namespaces/agent-sandbox-system/leases/{LEASE}")
    if status == 200 and json.loads(body)["spec"].get("holderIdentity"):
        log("warning: the leader Lease is held by", json.loads(body)["spec"]["holderIdentity"],
            "- another controller may be running on this cluster")
    _, nodes = request(kc, "GET", "/api/v1/nodes")
    alloc = sum(int(n["status"]["allocatable"].get("pods", "0")) for n in json.loads(nodes)["items"])
    if alloc < pods:
        log(f"warning: the nodes take {alloc} pods; this run may need {pods}")
    return kc, kubectl


def fmt(v, unit=""):
    return "-" if v != v else f"{v:.0f}{unit}"  # NaN => -


def report(results, args, argv, load0, load1):
    print(f"# claim_latency {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; {machine()}; "
          f"load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    print(f"# command: bench/claim_latency.sh {shlex.join(argv)}")
    print("# latency = client create call -> Ready=True first seen on a watch (claims; fill: Sandboxes)")
    ok = True
    for i, r in enumerate(results):
        print(f"\n## controller {i}: {r['command']}")
        print(f"# log {r['log']}; warm-up claim Ready in {r.get('warmup_s', float('nan')):.2f} s; "
              f"exit code {r['exit_code']}")
        if "error" in r:
            ok = False
            print(f"# FAILED: {r['error']}")
        print("| figure | claims | warm / cold | p50 ms | p99 ms | max ms | other |")
        print("|---|---|---|---|---|---|---|")
        for c, (lat, cold, total) in (r.get("warm") or {}).items():
            print(f"| warm claim-to-Ready, {c} concurrent (pool {args.pool}) | {total} | {len(lat)} / {cold} | "
                  f"{fmt(pct(lat, 50))} | {fmt(pct(lat, 99))} | {fmt(lat[-1] if lat else float('nan'))} | "
                  f"p50/p99 of the warm ones |")
        if "cold" in r:
            lat, warm = r["cold"]
            print(f"| cold claim-to-Ready (pool replicas 0), one at a time | {len(lat)} | {warm} / {len(lat) - warm} | "
                  f"{fmt(pct(lat, 50))} | {fmt(pct(lat, 99))} | {fmt(lat[-1] if lat else float('nan'))} | |")
        if "fill" in r:
            n, span, first, done = r["fill"]
            ok &= done
            print(f"| fill a {args.fill}-member pool | - | - | - | - | - | {n} Ready, last at {span:.2f} s, "
                  f"first at {first:.2f} s ({n / span if span == span and span > 0 else float('nan'):.1f} members/s) |")
        if "sustained" in r:
            s = r["sustained"]
            ok &= s["complete"]
            lat = s["lat"]
            print(f"| sustained {s['offered']:g} claims/s offered for {args.duration:g} s (pool {args.pool}, dwell "
                  f"{args.dwell:g} s) | {s['created']} created ({s['create_rate']:.1f}/s) | {s['warm']} / {s['cold']} | "
                  f"{fmt(pct(lat, 50))} | {fmt(pct(lat, 99))} | {fmt(lat[-1] if lat else float('nan'))} | "
                  f"{s['ready']} Ready; {s['ready_rate_window']:.1f} Ready/s within the window, "
                  f"{s['throughput']:.1f} Ready/s to the last |")
            if s["errors"]:
                print(f"#    create errors: {s['errors'][:3]}")
        if "roll" in r:
            o = r["roll"]
            ok &= o["complete"]
            lat = o["lat"]
            span = f"done in {o['span']:.1f} s" if o["span"] is not None else "**not done**"
            print(f"| roll a {args.pool}-member pool ({o['strategy']}) under {args.rate:g} claims/s | {o['claims']} "
                  f"during the roll | {o['warm']} / {o['ready'] - o['warm']} | {fmt(pct(lat, 50))} | "
                  f"{fmt(pct(lat, 99))} | {fmt(lat[-1] if lat else float('nan'))} | {span}; fewest Ready members "
                  f"{o['ready_min']} of {args.pool} |")
        if "writes" in r:
            w = r["writes"]
            print(f"| API writes, {w['claims']} claims and their refill (apiserver_request_total) | {w['claims']} | "
                  f"{w['warm']} / {w['claims'] - w['warm']} | - | - | - | all actors {w['total']:.0f} "
                  f"({w['total'] / w['claims']:.1f} per claim); the controller's {w['controller']:.0f} "
                  f"(**{w['controller'] / w['claims']:.1f} per claim**) |")
            print("#    the controller's writes: " + ", ".join(
                f"{verb} {res_}{'/' + sub if sub else ''} {v / w['claims']:.2f}"
                for (verb, _g, res_, sub), v in w["breakdown"]) + " (per claim)")
        if "cpu" in r:
            print(f"# controller: peak RSS {r['hwm_mib']:.1f} MiB, CPU {r['cpu']:.1f} s over the whole run")
        if not r.get("alive", False):
            ok = False
    return 0 if ok else 1


def main(argv):
    commands, own = [], argv
    if "--" in argv:
        i = argv.index("--")
        own, cur = argv[:i], []
        for a in argv[i + 1:]:
            if a == "--":
                commands.append(cur)
                cur = []
            else:
                cur.append(a)
        commands = [c for c in commands + [cur] if c]
    ap = argparse.ArgumentParser(prog="bench/claim_latency.sh",
                                 description="SandboxClaim claim-to-Ready latency (warm, cold), pool fill time and "
                                             "sustained claims/s.",
                                 usage="%(prog)s [options] [-- CONTROLLER COMMAND ... [-- ANOTHER ...]]")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: concurrency 1,5,20, pool 25, 3 cold, fill 50, 5 claims/s for 15 s")
    ap.add_argument("--concurrency", help="comma-separated concurrent claims per warm round (default 1,10,100)")
    ap.add_argument("--rounds", help="rounds per concurrency, comma-separated (default 20,5,2)")
    ap.add_argument("--pool", type=int, help="warm pool size for the warm and sustained phases "
                                             "(default: the largest concurrency)")
    ap.add_argument("--cold", type=int, help="cold claims, one at a time (default 10)")
    ap.add_argument("--fill", type=int, help="members of the pool whose fill is timed (default 300)")
    ap.add_argument("--rate", type=float, help="sustained phase: claims/s offered (default 10)")
    ap.add_argument("--duration", type=float, help="sustained phase: seconds of arrivals (default 60)")
    ap.add_argument("--dwell", type=float, default=5, help="sustained phase: a claim is deleted this long after "
                                                           "Ready (default 5)")
    ap.add_argument("--writes", type=int, help="writes phase: claims against a pool of as many (default 50)")
    ap.add_argument("--phases", default="writes,warm,cold,fill,sustained",
                    help="comma-separated phases to run (default writes,warm,cold,fill,sustained; "
                         "also roll)")
    ap.add_argument("--roll-strategy", default="RollingUpdate",
                    help="roll phase: the pool's updateStrategy.type (default RollingUpdate; upstream "
                         "knows Recreate and OnReplenish)")
    ap.add_argument("--roll-surge", default="25%", help="roll phase: maxSurge (default 25%%)")
    ap.add_argument("--roll-unavailable", default=0,
                    help="roll phase: maxUnavailable (default 0)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds to wait for a step (default 300)")
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build")),
                    help="meson build dir of the default controller command (default: build)")
    args = ap.parse_args(own)
    q = args.quick
    conc = args.concurrency or ("1,5,20" if q else "1,10,100")
    rounds = args.rounds or ("3,2,1" if q else "20,5,2")
    args.concurrency = [int(x) for x in conc.split(",")]
    args.rounds = [int(x) for x in rounds.split(",")]
    if len(args.rounds) == 1:
        args.rounds *= len(args.concurrency)
    if len(args.rounds) != len(args.concurrency) or min(args.concurrency + args.rounds) < 1:
        ap.error("--rounds needs one positive count per --concurrency level")
    args.pool = args.pool or (25 if q else max(args.concurrency))
    if args.pool < max(args.concurrency):
        ap.error("--pool must be at least the largest --concurrency")
    args.writes = args.writes or (10 if q else 50)
    args.phases = set(args.phases.split(","))
    if args.phases - {"writes", "warm", "cold", "fill", "sustained", "roll"}:
        ap.error("--phases: unknown phase in " + ",".join(sorted(args.phases)))
    args.roll_surge, args.roll_unavailable = (
        int(v) if str(v).isdigit() else str(v) for v in (args.roll_surge, args.roll_unavailable))
    args.cold = args.cold if args.cold is not None else (3 if q else 10)
    args.fill = args.fill or (50 if q else 300)
    args.rate = args.rate or (5 if q else 10)
    args.duration = args.duration or (15 if q else 60)
    if not commands:
        commands = [default_command(args.build_dir, "claim_latency")]

    # pods at once: the fill pool, or a full warm pool + a round of claims +
    # its refills, or the sustained pool + claims within dwell + refills
    pods = max(args.fill, 2 * args.pool + max(args.concurrency), 2 * args.writes,
               2 * args.pool + int(args.rate * (args.dwell + 10)),
               2 * args.pool + int(args.rate * 60) if "roll" in args.phases else 0) + 20
    own_cluster, env, kubeconfig = cluster_for("bench-claims-cluster", 19, pods)
    results = []
    try:
        kc, kubectl = prepare_cluster(kubeconfig, pods)
        logdir = tempfile.mkdtemp(prefix="claim_latency-")
        sa = sa_kubeconfig(kc, kubectl, logdir)
        load0 = os.getloadavg()
        args.kubectl, args.kubeconfig = kubectl, kubeconfig
        for i, cmd in enumerate(commands):
            if i:
                prepare_cluster(kubeconfig, pods)  # the webhook back, if a run took it
            results.append(run_one(kc, sa, cmd, args, logdir, i))
        load1 = os.getloadavg()
    finally:
        if own_cluster:
            subprocess.run([LOCAL_CLUSTER, "down"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return report(results, args, argv, load0, load1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
