#!/usr/bin/env python3
"""Sandbox create-to-Ready benchmark (run it through bench/create_to_ready.sh).

Creates N Sandboxes at a fixed rate R (client-side pacing, 16 connections)
in a fresh namespace while one watch on Sandboxes records, on this client's
monotonic clock, when each one is first seen with Ready=True. Latency of a
Sandbox = first Ready=True seen - start of its create call. Prints p50, p90,
p99 and max, the achieved create rate, the throughput (Sandboxes Ready per
second from the first create to the last Ready), and the controller's peak
resident memory (VmHWM) and CPU seconds (utime+stime, whole run and burst
only), read from /proc for the controller process and its descendants.

Each controller command given after `--` (several: `-- cmd1 ... -- cmd2 ...`)
is measured in turn with the same workload on the same control plane. In a
command, `{kubeconfig}` is replaced by a kubeconfig of the deploy/
ServiceAccount (agent-sandbox-system/agent-sandbox-controller), which is also
in the command's KUBECONFIG environment variable. Default command: our
controller from --build-dir, leader election off, endpoints disabled.

Without KUBECONFIG, starts a private local control plane (tools/local-cluster,
state /tmp/agent-sandbox-bench-cluster, ports 18xxx, unless AGENT_SANDBOX_*
say otherwise) with enough kwok nodes for N pods (110 per node), and stops it
at the end. With KUBECONFIG (admin), uses that cluster: it needs room for N
pods and must run no other Sandbox controller.
"""
import argparse
import http.client
import json
import math
import os
import platform
import queue
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from kubeconfig import Context  # noqa: E402  tools/kubeconfig.py
LOCAL_CLUSTER = os.path.join(ROOT, "tools", "local-cluster")
API = "/apis/agents.x-k8s.io/v1beta1"
IMAGE = "registry.k8s.io/pause:3.10"
PODS_PER_NODE = 110
LEASE = "a3317529.agent-sandbox.x-k8s.io"


def log(*a):
    print("[create_to_ready]", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- kubeconfig

class Kubeconfig:
    """The current context of a kubeconfig: server, TLS context, token."""

    def __init__(self, path):
        self.path = path
        ctx = Context(path, tempfile.mkdtemp(prefix="c2r-kc-"))
        self.server = ctx.server
        hostport = self.server.split("://", 1)[1].split("/", 1)[0]
        self.host, _, port = hostport.rpartition(":")
        self.port = int(port or 443)
        self.ca = ctx.ca  # a file, kept for the life of this process
        self.ctx = ssl.create_default_context(cafile=ctx.ca)
        if ctx.cert:
            self.ctx.load_cert_chain(ctx.cert, ctx.key)
        self.token = ctx.token

    def connect(self, timeout=60):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def headers(self, extra=None):
        h = {"Accept": "application/json", "User-Agent": "bench-create-to-ready"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h


def request(kc, method, path, body=None, conn=None):
    own = conn is None
    conn = conn or kc.connect()
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, body=data,
                     headers=kc.headers({"Content-Type": "application/json"} if data else None))
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        if own:
            conn.close()


# ---------------------------------------------------------------- /proc

def descendants(pid):
    """pid and every descendant process (by ppid), from /proc."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def usage(pid):
    """(cpu seconds utime+stime, VmHWM KiB, VmRSS KiB) summed over the tree."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu, hwm, rss = 0.0, 0, 0
    for p in descendants(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            cpu += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15)
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm += int(line.split()[1])
                    elif line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return cpu, hwm, rss


# ---------------------------------------------------------------- workload

WITH_SERVICE = False  # --service: every Sandbox asks for its headless Service


def sandbox(name):
    spec = {"podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}}}
    if WITH_SERVICE:
        spec["service"] = True
    return {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
            "metadata": {"name": name}, "spec": spec}


def is_ready(obj):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


class FirstReady(threading.Thread):
    """Watches a collection (path, optional labelSelector) and records, on
    the monotonic clock, the first time each object is seen Ready=True, and
    the object as then seen. on_ready(name, obj, t) is called once per name.
    Shared by this benchmark (Sandboxes) and claim_latency.py (claims, pool
    members)."""

    def __init__(self, kc, path, selector=None, on_ready=None):
        super().__init__(daemon=True)
        self.kc, self.path, self.on_ready = kc, path, on_ready
        self.q = f"labelSelector={selector}&" if selector else ""
        self.ready_at, self.obj = {}, {}
        self.cond = threading.Condition()
        self.stop = False
        for _ in range(120):  # 429/503 while a CRD change reloads its storage
            status, body = request(kc, "GET", f"{path}?{self.q}limit=1")
            if status == 200:
                break
            time.sleep(0.5)
        assert status == 200, body
        self.rv = json.loads(body)["metadata"]["resourceVersion"]

    def run(self):
        while not self.stop:
            conn = self.kc.connect(timeout=None)
            try:
                conn.request("GET", f"{self.path}?{self.q}watch=1&allowWatchBookmarks=false&resourceVersion="
                             f"{self.rv}&timeoutSeconds=3600", headers=self.kc.headers())
                r = conn.getresponse()
                if r.status != 200:
                    log("watch answered", r.status, r.read()[:300])
                    time.sleep(1)
                    continue
                while not self.stop:
                    line = r.readline()
                    if not line:
                        break
                    t = time.monotonic()
                    ev = json.loads(line)
                    obj = ev.get("object", {})
                    if ev.get("type") == "ERROR":  # 410 Gone: relist
                        status, body = request(self.kc, "GET", f"{self.path}?{self.q}")
                        lst = json.loads(body)
                        self.rv = lst["metadata"]["resourceVersion"]
                        for o in lst["items"]:
                            self._seen(o, t)
                        break
                    self.rv = obj.get("metadata", {}).get("resourceVersion", self.rv)
                    if ev.get("type") in ("ADDED", "MODIFIED"):
                        self._seen(obj, t)
            except (OSError, http.client.HTTPException, ValueError) as e:
                if not self.stop:
                    log("watch interrupted:", e)
                    time.sleep(0.5)
            finally:
                conn.close()

    def _seen(self, obj, t):
        name = obj.get("metadata", {}).get("name")
        if not name or not is_ready(obj) or name in self.ready_at:
            return
        with self.cond:
            self.ready_at[name] = t
            self.obj[name] = obj
            self.cond.notify_all()
        if self.on_ready:
            self.on_ready(name, obj, t)

    def wait(self, names, deadline):
        with self.cond:
            while not all(n in self.ready_at for n in names):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 1.0))
            return True

    def wait_count(self, n, deadline):
        with self.cond:
            while len(self.ready_at) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 1.0))
            return True


def create_paced(kc, ns, names, rate, connections=16):
    """Creates names[i] at t0 + i/rate (or as soon after as a connection is
    free). Returns ({name: monotonic start of its create call}, errors, t0)."""
    started, errors, lock = {}, [], threading.Lock()
    todo = queue.Queue()
    for i, n in enumerate(names):
        todo.put((i, n))
    t0 = time.monotonic() + 0.2

    def worker():
        conn = kc.connect()
        while True:
            try:
                i, n = todo.get_nowait()
            except queue.Empty:
                break
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            for attempt in range(20):
                if attempt:
                    time.sleep(0.25)  # 503 while a CRD change reloads its storage, 429, lost connection
                t = time.monotonic()
                try:
                    status, body = request(kc, "POST", f"{API}/namespaces/{ns}/sandboxes", sandbox(n), conn)
                except (OSError, http.client.HTTPException) as e:
                    conn.close()
                    conn = kc.connect()
                    status, body = None, str(e).encode()
                if status == 201:
                    with lock:
                        started[n] = t
                    break
                if status == 409:  # created by a try whose answer was lost
                    with lock:
                        started.setdefault(n, t)
                    break
            else:
                with lock:
                    errors.append(f"{n}: {status} {body[:200]!r}")
        conn.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return started, errors, t0


def stop_controller(proc, logf):
    """SIGTERM to the controller's session, SIGKILL after 30 s; closes its log."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    logf.close()


def pct(sorted_vals, p):
    """Nearest-rank percentile."""
    if not sorted_vals:
        return float("nan")
    return sorted_vals[max(0, math.ceil(p / 100 * len(sorted_vals)) - 1)]


# ---------------------------------------------------------------- one controller

def settled_rss(pid, step=1.0, most=15.0):
    """VmRSS (KiB) of pid's tree once it stops moving: two readings `step`
    apart within 0.5 % (or after `most` seconds), so a checkpoint reads what
    the cache keeps, not a burst's passing buffers."""
    last, t_end = usage(pid)[2], time.monotonic() + most
    while time.monotonic() < t_end:
        time.sleep(step)
        cur = usage(pid)[2]
        if abs(cur - last) <= 0.005 * max(last, 1):
            return cur
        last = cur
    return last


def count_rate_spans(started, stages):
    """Per stage, the time from its first to its last create call started."""
    spans, prev = [], 0
    for upto in stages:
        ts = [started[n] for n in (f"sb-{i:05d}" for i in range(prev, upto)) if n in started]
        if ts:
            spans.append(max(max(ts) - min(ts), 1e-9))
        prev = upto
    return spans


def controller_pid(pid):
    """The deepest process of pid's tree (the controller under `env` or a
    wrapper), for --checkpoint-command."""
    tree = descendants(pid)
    return tree[-1] if tree else pid


def restart_and_measure(kc_admin, ns, cmd, env, logdir, index, proc, logf, watch, count):
    """Stops the controller and starts it again beside the `count` Sandboxes
    (and their Pods and Services) it made: it LISTs them all at start. Once a
    new Sandbox is Ready (its caches synced), reads its settled RSS. Returns
    (rss KiB, the new process, its log file)."""
    stop_controller(proc, logf)
    logpath = os.path.join(logdir, f"controller-{index}-restarted.log")
    logf = open(logpath, "w")
    log(f"restarting the controller beside {count} Sandboxes (log: {logpath})")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    t = time.monotonic()
    status, body = request(kc_admin, "POST", f"{API}/namespaces/{ns}/sandboxes", sandbox("after-restart"))
    if status not in (201, 409):
        raise RuntimeError(f"cannot create the after-restart Sandbox: {status} {body[:300]!r}")
    while not watch.wait(["after-restart"], time.monotonic() + 1):
        if proc.poll() is not None:
            raise RuntimeError(f"restarted controller exited with {proc.returncode}; see {logpath}")
        if time.monotonic() - t > 300:
            raise RuntimeError(f"after-restart Sandbox not Ready after 300 s; see {logpath}")
    rss = settled_rss(proc.pid)
    log(f"restarted beside {count} Sandboxes: controller RSS {rss / 1024:.1f} MiB "
        f"(synced and a new Sandbox Ready in {time.monotonic() - t:.1f} s)")
    return rss, proc, logf


def run_one(kc_admin, sa_kc_path, cmd, count, rate, timeout, logdir, index, checkpoints=None,
            checkpoint_command=None, restart=False):
    ns = f"bench-c2r-{index}-{uuid.uuid4().hex[:6]}"
    status, body = request(kc_admin, "POST", "/api/v1/namespaces",
                           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert status == 201, body
    cmd = [a.replace("{kubeconfig}", sa_kc_path).replace("{logdir}", logdir) for a in cmd]
    env = dict(os.environ, KUBECONFIG=sa_kc_path)
    logpath = os.path.join(logdir, f"controller-{index}.log")
    logf = open(logpath, "w")
    log("starting:", shlex.join(cmd), "(log:", logpath + ")")
    proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    result = {"command": shlex.join(cmd), "log": logpath}
    try:
        # warm-up: one Sandbox Ready means caches synced and workers running
        watch = FirstReady(kc_admin, f"{API}/namespaces/{ns}/sandboxes")
        watch.start()
        t = time.monotonic()
        # retried: the controller's startup patch of the CRD (conversion
        # webhook) makes the API server reload its storage, answering 503 meanwhile
        for _ in range(120):
            try:
                status, body = request(kc_admin, "POST", f"{API}/namespaces/{ns}/sandboxes", sandbox("warmup"))
            except (OSError, http.client.HTTPException) as e:
                status, body = None, str(e).encode()
            if status in (201, 409):
                break
            time.sleep(0.5)
        else:
            raise RuntimeError(f"cannot create the warm-up Sandbox: {status} {body[:300]!r}")
        while not watch.wait(["warmup"], time.monotonic() + 1):
            if proc.poll() is not None:
                raise RuntimeError(f"controller exited with {proc.returncode}; see {logpath}")
            if time.monotonic() - t > 180:
                raise RuntimeError(f"warm-up Sandbox not Ready after 180 s; see {logpath}")
        result["warmup_s"] = watch.ready_at["warmup"] - t
        cpu0, _, _ = usage(proc.pid)
        rss0 = settled_rss(proc.pid) if restart else 0

        # in stages when memory checkpoints are asked: create up to each,
        # wait for all Ready, let the controller settle, read its VmRSS
        stages = sorted(set(c for c in (checkpoints or []) if c < count)) + [count]
        started, errors, span, mem, done, prev = {}, [], 0.0, [], True, 0
        for upto in stages:
            names = [f"sb-{i:05d}" for i in range(prev, upto)]
            log(f"creating {len(names)} Sandboxes at {rate}/s in {ns} ({upto} in all)")
            st, err, t0 = create_paced(kc_admin, ns, names, rate)
            started.update(st)
            errors += err
            done = watch.wait(list(st), t0 + len(names) / rate + timeout) and done
            span += max((watch.ready_at[n] for n in st if n in watch.ready_at), default=t0) - t0
            if checkpoints:
                mem.append((upto, settled_rss(proc.pid)))
                log(f"{upto} Sandboxes: controller RSS {mem[-1][1] / 1024:.1f} MiB")
                if checkpoint_command:
                    # e.g. gdb -p {pid} -batch -ex 'call (void)malloc_stats()'
                    subprocess.run(checkpoint_command.replace("{pid}", str(controller_pid(proc.pid)))
                                   .replace("{count}", str(upto)), shell=True)
            prev = upto
        cpu1, hwm, rss = usage(proc.pid)
        alive = proc.poll() is None
        if restart and alive:
            rss_before = settled_rss(proc.pid)
            rss_after, proc, logf = restart_and_measure(kc_admin, ns, cmd, env, logdir, index, proc, logf,
                                                        watch, count)
            result["restart"] = {"count": count, "rss0": rss0, "before": rss_before, "after": rss_after}
        lat = sorted((watch.ready_at[n] - started[n]) * 1000 for n in started if n in watch.ready_at)
        result.update(
            created=len(started), create_errors=errors, ready=len(lat), complete=done and not errors,
            create_rate=len(started) / max(sum(count_rate_spans(started, stages)), 1e-9),
            p50=pct(lat, 50), p90=pct(lat, 90), p99=pct(lat, 99), max=lat[-1] if lat else float("nan"),
            throughput=len(lat) / max(span, 1e-9), span_s=span,
            cpu_total=cpu1, cpu_burst=cpu1 - cpu0, hwm_mib=hwm / 1024, rss_mib=rss / 1024,
            memory=mem, alive=alive)
        watch.stop = True
    finally:
        stop_controller(proc, logf)
        result["exit_code"] = proc.returncode
        request(kc_admin, "DELETE", f"/api/v1/namespaces/{ns}")
        wait_gone(kc_admin, ns)
    return result


def wait_gone(kc, ns, timeout=600):
    """Waits until namespace `ns` is gone: while it terminates, its Sandboxes
    are still there, and the next controller would reconcile all of them
    (failing to create Pods in a terminating namespace) during its own burst."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, _ = request(kc, "GET", f"/api/v1/namespaces/{ns}")
        if status == 404:
            return
        time.sleep(1)
    log(f"warning: namespace {ns} still terminating after {timeout} s")


def wait_room(kc, count, timeout=600):
    """Waits until the nodes have room for count pods (an earlier namespace may
    still be terminating); fails if they never can."""
    deadline = time.monotonic() + timeout
    while True:
        _, nodes = request(kc, "GET", "/api/v1/nodes")
        alloc = sum(int(n["status"]["allocatable"].get("pods", "0")) for n in json.loads(nodes)["items"])
        if alloc < count + 1:
            sys.exit(f"create_to_ready: the nodes take {alloc} pods in all; {count + 1} are needed "
                     "(without KUBECONFIG the script starts a cluster with enough kwok nodes)")
        _, pods = request(kc, "GET", "/api/v1/pods?limit=1")
        # remainingItemCount + the page gives the total without listing it all
        p = json.loads(pods)
        used = len(p["items"]) + p["metadata"].get("remainingItemCount", 0)
        if alloc - used >= count + 1:
            return
        if time.monotonic() > deadline:
            sys.exit(f"create_to_ready: no room for {count + 1} pods ({used} of {alloc} used)")
        time.sleep(3)


def kubectl_bin():
    out = subprocess.run([LOCAL_CLUSTER, "env"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.startswith("export PATH="):
            for d in line.split("=", 1)[1].strip("'\"").split(":"):
                p = os.path.join(d.strip("'\""), "kubectl")
                if os.access(p, os.X_OK):
                    return p
    return "kubectl"


def sa_kubeconfig(kc, kubectl, outdir):
    """A kubeconfig for the deploy/ ServiceAccount with a TokenRequest token."""
    token = subprocess.run([kubectl, "--kubeconfig", kc.path, "-n", "agent-sandbox-system", "create",
                            "token", "agent-sandbox-controller", "--duration=2h"],
                           capture_output=True, text=True, check=True).stdout.strip()
    cluster = {"server": kc.server}
    if kc.ca:
        cluster["certificate-authority"] = kc.ca
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "sa",
           "clusters": [{"name": "c", "cluster": cluster}],
           "users": [{"name": "sa", "user": {"token": token}}],
           "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa",
                                                   "namespace": "agent-sandbox-system"}}]}
    path = os.path.join(outdir, "sa.kubeconfig")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(doc, f)
    return path


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) / 1048576
    return f"{platform.machine()}, {os.cpu_count()} cores ({model}), {mem:.0f} GiB"


def cluster_for(name, port_prefix, pods):
    """The cluster a benchmark runs on: KUBECONFIG's when set, else a private
    control plane (tools/local-cluster) in /tmp/agent-sandbox-<name>, on ports
    <port_prefix>xxx, with kwok nodes for `pods` pods; AGENT_SANDBOX_* in the
    environment override each. Returns (own, env, kubeconfig): when `own`,
    stop it with `tools/local-cluster down` under `env`."""
    if os.environ.get("KUBECONFIG"):
        return False, os.environ, os.environ["KUBECONFIG"]
    env = dict(os.environ)
    for k, v in (("CLUSTER_DIR", f"/tmp/agent-sandbox-{name}"), ("APISERVER_PORT", f"{port_prefix}443"),
                 ("ETCD_PORT", f"{port_prefix}379"), ("ETCD_PEER_PORT", f"{port_prefix}380"),
                 ("KCM_PORT", f"{port_prefix}257"), ("SCHEDULER_PORT", f"{port_prefix}259"),
                 ("KWOK_PORT", f"{port_prefix}247"), ("POD_NET", str(port_prefix))):
        env.setdefault("AGENT_SANDBOX_" + k, v)
    env.setdefault("AGENT_SANDBOX_NODES", str(math.ceil(pods / PODS_PER_NODE) + 1))
    env["PATH"] = env.get("PATH", "") + ":/usr/local/go/bin"
    log(f"starting a private control plane in {env['AGENT_SANDBOX_CLUSTER_DIR']} "
        f"({env['AGENT_SANDBOX_NODES']} kwok nodes)")
    up = subprocess.run([LOCAL_CLUSTER, "up"], env=env, stdout=subprocess.PIPE, text=True)
    if up.returncode != 0:
        sys.exit(f"{os.path.basename(sys.argv[0])}: tools/local-cluster up failed")
    return True, env, up.stdout.strip().splitlines()[-1]


def main(argv):
    commands, own = [], argv
    if "--" in argv:
        i = argv.index("--")
        own, rest = argv[:i], argv[i + 1:]
        cur = []
        for a in rest:
            if a == "--":
                commands.append(cur)
                cur = []
            else:
                cur.append(a)
        commands.append(cur)
        commands = [c for c in commands if c]
    ap = argparse.ArgumentParser(prog="bench/create_to_ready.sh",
                                 description="Sandbox create-to-Ready latency, throughput, controller memory and CPU.",
                                 usage="%(prog)s [--count N] [--rate R] [--memory-at N,M] [--service] [--restart] [--build-dir DIR] [--timeout S] "
                                       "[-- CONTROLLER COMMAND ... [-- ANOTHER ...]]")
    ap.add_argument("--count", type=int, default=1000, help="Sandboxes to create (default 1000)")
    ap.add_argument("--rate", type=float, default=50, help="creates per second (default 50)")
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build")),
                    help="meson build dir of the default controller command (default: build)")
    ap.add_argument("--memory-at", default="",
                    help="comma-separated Sandbox counts (e.g. 1000,5000): create in stages up to each, "
                         "read the controller's settled RSS there and print KiB per Sandbox between them; "
                         "the last one sets --count")
    ap.add_argument("--checkpoint-command", default="",
                    help="shell command run at each --memory-at checkpoint once RSS is read; {pid} is the "
                         "controller's pid, {count} the checkpoint (e.g. gdb -p {pid} -batch -ex "
                         "'call (void)malloc_stats()', which prints the heap to the controller's log)")
    ap.add_argument("--service", action="store_true",
                    help="every Sandbox has spec.service: true, so the controller also makes and caches "
                         "its headless Service")
    ap.add_argument("--restart", action="store_true",
                    help="at the end, restart the controller beside all the Sandboxes and read its settled "
                         "RSS once it has listed them (memory a fresh LIST leaves, per Sandbox)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds to wait for the last Ready after the last scheduled create (default 300)")
    args = ap.parse_args(own)
    global WITH_SERVICE
    WITH_SERVICE = args.service
    checkpoints = []
    if args.memory_at:
        try:
            checkpoints = sorted(int(x) for x in args.memory_at.split(",") if x.strip())
        except ValueError:
            ap.error("--memory-at takes comma-separated integers")
        if not checkpoints or checkpoints[0] < 1:
            ap.error("--memory-at counts must be >= 1")
        args.count = checkpoints[-1]
    if args.count < 1 or args.rate <= 0:
        ap.error("--count must be >= 1 and --rate > 0")
    if not commands:
        binary = os.path.join(os.path.abspath(args.build_dir), "cmd", "controller", "agent-sandbox-controller")
        if not os.access(binary, os.X_OK):
            sys.exit(f"create_to_ready: {binary} is not built (meson compile -C {args.build_dir})")
        port = free_port()
        commands = [[binary, "--kubeconfig", "{kubeconfig}", "--leader-elect=false",
                     "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
                     # the conversion webhook on loopback, as in tests/integration
                     "--webhook-port", str(port), "--webhook-bind-address", "127.0.0.1",
                     "--webhook-cert-dir", "{logdir}/webhook-certs",
                     "--webhook-url", f"https://127.0.0.1:{port}/convert"]]

    own_cluster, env, kubeconfig = cluster_for("bench-cluster", 18, args.count + 2)
    results = []
    try:
        kc = Kubeconfig(kubeconfig)
        kubectl = kubectl_bin()
        subprocess.run([kubectl, "--kubeconfig", kubeconfig, "apply", "-k", os.path.join(ROOT, "deploy")],
                       check=True, stdout=subprocess.DEVNULL)
        subprocess.run([kubectl, "--kubeconfig", kubeconfig, "wait", "--for=condition=Established",
                        "--timeout=60s", "crd/sandboxes.agents.x-k8s.io"], check=True, stdout=subprocess.DEVNULL)
        status, body = request(kc, "GET", f"/apis/coordination.k8s.io/v1/namespaces/agent-sandbox-system/leases/{LEASE}")
        if status == 200 and json.loads(body)["spec"].get("holderIdentity"):
            log("warning: the leader Lease is held by", json.loads(body)["spec"]["holderIdentity"],
                "- another Sandbox controller may be running on this cluster")
        logdir = tempfile.mkdtemp(prefix="create_to_ready-")
        sa = sa_kubeconfig(kc, kubectl, logdir)
        load0 = os.getloadavg()
        for i, cmd in enumerate(commands):
            wait_room(kc, args.count)
            results.append(run_one(kc, sa, cmd, args.count, args.rate, args.timeout, logdir, i, checkpoints,
                                   args.checkpoint_command, args.restart))
        load1 = os.getloadavg()
    finally:
        if own_cluster:
            subprocess.run([LOCAL_CLUSTER, "down"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    print(f"# create_to_ready {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; {machine()}; "
          f"load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    print(f"# command: bench/create_to_ready.sh {shlex.join(argv)}")
    print(f"# {args.count} Sandboxes at {args.rate:g}/s{' with their Services' if args.service else ''}; "
          "latency = client create call -> Ready=True seen on a watch")
    print("| # | created | Ready | create/s | p50 ms | p90 ms | p99 ms | max ms | Ready/s | peak RSS MiB | CPU s burst | CPU s total | exit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for i, r in enumerate(results):
        print(f"| {i} | {r['created']} | {r['ready']} | {r['create_rate']:.1f} | {r['p50']:.0f} | {r['p90']:.0f} | "
              f"{r['p99']:.0f} | {r['max']:.0f} | {r['throughput']:.1f} | {r['hwm_mib']:.1f} | "
              f"{r['cpu_burst']:.2f} | {r['cpu_total']:.2f} | {r['exit_code']} |")
    if checkpoints:
        print("# controller RSS once settled (VmRSS, the process tree), and its growth per Sandbox between checkpoints")
        print("| # | " + " | ".join(f"RSS MiB at {c}" for c in checkpoints) + " | KiB per Sandbox (slope) |")
        print("|---|" + "---|" * (len(checkpoints) + 1))
        for i, r in enumerate(results):
            m = r.get("memory") or []
            slopes = [f"{(b[1] - a[1]) / max(b[0] - a[0], 1):.2f} ({a[0]}->{b[0]})" for a, b in zip(m, m[1:])]
            print(f"| {i} | " + " | ".join(f"{v / 1024:.1f}" for _, v in m) + f" | {'; '.join(slopes) or '-'} |")
        slopes = [(r["memory"][-1][1] - r["memory"][0][1]) / max(r["memory"][-1][0] - r["memory"][0][0], 1)
                  if len(r.get("memory") or []) >= 2 else None for r in results]
        if len(slopes) > 1 and slopes[0]:
            print("# slope of each command over #0's: " +
                  ", ".join(f"#{i} {s / slopes[0]:.2f}x" for i, s in enumerate(slopes) if i and s is not None))
    if args.restart:
        print("# restart: RSS once settled after the warm-up Sandbox, before the restart with all of them, and after "
              "a restart beside them (their LIST), KiB per Sandbox from the warm-up's RSS")
        print("| # | Sandboxes | RSS MiB at warm-up | before restart | after restart | KiB per Sandbox before / after |")
        print("|---|---|---|---|---|---|")
        for i, r in enumerate(results):
            x = r.get("restart")
            if not x:
                print(f"| {i} | - | - | - | - | - |")
                continue
            print(f"| {i} | {x['count']} | {x['rss0'] / 1024:.1f} | {x['before'] / 1024:.1f} | "
                  f"{x['after'] / 1024:.1f} | {(x['before'] - x['rss0']) / x['count']:.2f} / "
                  f"{(x['after'] - x['rss0']) / x['count']:.2f} |")
        after = [r["restart"]["after"] - r["restart"]["rss0"] for r in results if r.get("restart")]
        if len(after) > 1 and after[0] > 0:
            print("# after-restart growth of each command over #0's: " +
                  ", ".join(f"#{i} {a / after[0]:.2f}x" for i, a in enumerate(after) if i))
    for i, r in enumerate(results):
        print(f"# {i}: {r['command']}  (log {r['log']}; warm-up Sandbox Ready in {r['warmup_s']:.2f} s)")
        if not r["complete"]:
            ok = False
            print(f"#    INCOMPLETE: {r['ready']} of {args.count} Ready; create errors: {r['create_errors'][:5]}")
        if not r["alive"]:
            ok = False
            print("#    the controller exited during the run")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
