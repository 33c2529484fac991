#!/usr/bin/env python3
"""Python SDK benchmark (run it through bench/sdk_latency.sh). See
bench/README.md.

Through the SDK (sdk-python, agent_sandbox_c over libsandbox), with our
controller (--extensions) on a local control plane:
  1. warm: `--count` sandboxes, one after the other (`--settle` s apart
     after each termination), from a pool of
     `--count` Ready members: time from the create_sandbox() call to the
     first command's output (commands.run("echo ...") returned);
  2. cold: the same from a pool with replicas 0 (every sandbox created);
  3. commands/s: for each concurrency C of `--concurrency`, C threads run
     commands.run() on one sandbox for `--seconds` s.
The data path, by default the whole local stack: our sandbox-router
(cmd/router, Sandbox/Pod caches on) and sandboxd (cmd/sandboxd) on every
pod's loopback IP, started by tools/sandboxd-pods; the template is
deploy/sandboxd/sandboxtemplate.yaml. `--router-url URL` uses a router (and
sandboxd pods) already running instead; `--standin` a stand-in
router+runtime (tests/integration/sdk_standin.py, one Python process that
answers at once: the SDK, controller and control plane alone).

Cluster and controller as bench/claim_latency.sh: KUBECONFIG's cluster, or a
private one (ports 20xxx); the controller command after `--`, default ours
from --build-dir.
"""
import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from claim_latency import (EXT, call, create, default_command, drop_ns, new_ns, pool,  # noqa: E402
                           prepare_cluster, start_controller, template)
from create_to_ready import (ROOT, LOCAL_CLUSTER, cluster_for, machine, pct, sa_kubeconfig,  # noqa: E402
                             stop_controller)

sys.path.insert(0, os.path.join(ROOT, "sdk-python"))
import agent_sandbox_c as sdk  # noqa: E402


def log(*a):
    print("[sdk_latency]", *a, file=sys.stderr, flush=True)


def sandboxd_template():
    import yaml
    with open(os.path.join(ROOT, "deploy", "sandboxd", "sandboxtemplate.yaml")) as f:
        tpl = yaml.safe_load(f)
    tpl["metadata"]["name"] = "tpl"
    return tpl


def wait_listening(proc, port, what, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode})")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{what} not listening after {timeout} s")


def local_stack(kubeconfig, build_dir, tmp):
    """sandbox-router with its caches and tools/sandboxd-pods; returns
    ([processes], router URL)."""
    port, probes = free_port(), free_port()
    router = subprocess.Popen(
        [os.path.join(build_dir, "cmd", "router", "sandbox-router"),
         "--http-bind-address", f"127.0.0.1:{port}", "--metrics-bind-address", "",
         "--health-probe-bind-address", f"127.0.0.1:{probes}", "--access-log=false",
         "--allow-loopback-pod-ip", "--cache-enabled", "--kubeconfig", kubeconfig],
        stdout=open(os.path.join(tmp, "router.log"), "w"), stderr=subprocess.STDOUT)
    state = tempfile.mkdtemp(prefix="sdk_latency-pods-", dir="/tmp")
    os.chmod(state, 0o755)
    pods = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tools", "sandboxd-pods"), "--kubeconfig", kubeconfig,
         "--state-dir", state, "--sandboxd", os.path.join(build_dir, "cmd", "sandboxd", "sandboxd")],
        stdout=open(os.path.join(tmp, "sandboxd-pods.log"), "w"), stderr=subprocess.STDOUT)
    wait_listening(router, port, "sandbox-router")
    return [router, pods], f"http://127.0.0.1:{port}", state


def stop_all(stack, state, controller, cluster_env):
    """Ends a run: the local stack's processes, sandboxd-pods' state, the
    controller ((proc, log file) or None), and the private cluster (its
    environment, or None when the cluster was not ours)."""
    for p in stack:
        p.terminate()
        p.wait()
    if state:
        shutil.rmtree(state, ignore_errors=True)
    if controller:
        stop_controller(*controller)
    if cluster_env:
        subprocess.run([LOCAL_CLUSTER, "down"], env=cluster_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def standin_router(tmp):
    """The stand-in router+runtime of the SDK tests; returns (proc, url)."""
    os.makedirs(os.path.join(tmp, "root"), exist_ok=True)
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "integration", "sdk_standin.py"),
                             "--root", os.path.join(tmp, "root"), "--log", "/dev/null"],
                            stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline().split()[1])
    return proc, f"http://127.0.0.1:{port}"


def wait_pool(kc, ns, name, n, timeout):
    """Until the pool reports n Ready members."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = call(kc, "GET", f"{EXT}/namespaces/{ns}/sandboxwarmpools/{name}")
        if status == 200 and (json.loads(body).get("status") or {}).get("readyReplicas") == n:
            return
        time.sleep(0.25)
    raise RuntimeError(f"pool {ns}/{name} not {n} Ready in {timeout} s")


def phase(client, kc, ns, replicas, count, timeout, tpl, settle=0.0):
    """count sequential create_sandbox + first command; latencies in ms."""
    create(kc, ns, "sandboxtemplates", tpl)
    create(kc, ns, "sandboxwarmpools", pool("pool", replicas))
    if replicas:
        wait_pool(kc, ns, "pool", replicas, timeout)
    lat, created, warm = [], [], 0
    for i in range(count):
        t = time.monotonic()
        sb = client.create_sandbox("pool", ns, sandbox_ready_timeout=timeout)
        t1 = time.monotonic()
        out = sb.commands.run(f"echo sandbox {i}")
        lat.append((time.monotonic() - t) * 1000)
        created.append((t1 - t) * 1000)
        assert out.exit_code == 0, out
        warm += sb.sandbox_id != sb.claim_name
        sb.terminate()
        time.sleep(settle)  # let the termination's work (GC, refill) pass first
    return sorted(lat), warm, sorted(created)


UPSTREAM_PHASE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from k8s_agent_sandbox import SandboxClient
from k8s_agent_sandbox.models import SandboxDirectConnectionConfig
url, ns, count, timeout, settle = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
c = SandboxClient(connection_config=SandboxDirectConnectionConfig(api_url=url))
for i in range(count + 1):  # the first one warms the client up and is not counted
    t = time.monotonic()
    sb = c.create_sandbox("pool", namespace=ns, sandbox_ready_timeout=timeout)
    t1 = time.monotonic()
    r = sb.commands.run(f"echo sandbox {i}")
    t2 = time.monotonic()
    if r.exit_code != 0:
        sys.exit(f"command failed: {r!r}")
    if i:
        print(json.dumps({"lat": (t2 - t) * 1000, "created": (t1 - t) * 1000,
                          "warm": sb.sandbox_id != sb.claim_name}), flush=True)
    sb.terminate()
    time.sleep(settle)
"""


def upstream_phase(client_dir, url, kubeconfig, kc, ns, count, timeout, tpl, settle):
    """The warm phase with upstream's Python client (k8s-agent-sandbox, in
    `client_dir`) in a process of its own, against the same router."""
    create(kc, ns, "sandboxtemplates", tpl)
    create(kc, ns, "sandboxwarmpools", pool("pool", count + 1))
    wait_pool(kc, ns, "pool", count + 1, timeout)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONPATH")}
    env["KUBECONFIG"] = kubeconfig
    p = subprocess.run([sys.executable, "-c", UPSTREAM_PHASE, client_dir, url, ns, str(count),
                        str(timeout), str(settle)], capture_output=True, text=True, env=env,
                       timeout=timeout + count * (30 + settle))
    if p.returncode != 0:
        raise RuntimeError(f"upstream client phase failed ({p.returncode}): {p.stderr[-2000:]}")
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    return (sorted(r["lat"] for r in rows), sum(r["warm"] for r in rows),
            sorted(r["created"] for r in rows))


def commands_per_second(sb, threads, seconds):
    done = [0] * threads
    stop = time.monotonic() + seconds

    def loop(k):
        while time.monotonic() < stop:
            sb.commands.run("true")
            done[k] += 1
    ts = [threading.Thread(target=loop, args=(k,)) for k in range(threads)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(done) / (time.monotonic() - t0)


def main(argv):
    cmd = None
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(prog="bench/sdk_latency.sh",
                                 description="create_sandbox -> first command output (warm, cold) and commands/s "
                                             "through the Python SDK.")
    ap.add_argument("--count", type=int, default=100, help="sandboxes per phase (default 100)")
    ap.add_argument("--concurrency", default="1,8,32", help="threads of the commands/s phase (default 1,8,32)")
    ap.add_argument("--seconds", type=float, default=10, help="seconds per commands/s level (default 10)")
    ap.add_argument("--router-url", help="a sandbox router already running (default: ours and "
                                         "tools/sandboxd-pods, started here)")
    ap.add_argument("--standin", action="store_true",
                    help="a stand-in router+runtime instead (tests/integration/sdk_standin.py)")
    ap.add_argument("--settle", type=float, default=0,
                    help="seconds to wait after each sandbox's termination before the next create "
                         "(default 0: back to back, each create meets the previous one's cleanup)")
    ap.add_argument("--upstream-client", metavar="DIR",
                    help="also time the warm phase with upstream's Python client (k8s-agent-sandbox; "
                         "DIR holds its k8s_agent_sandbox package, e.g. what tools/install-deps puts in "
                         "~/.cache/agent-sandbox/k8s-agent-sandbox-1.0.8) against the same router")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build")))
    args = ap.parse_args(argv)
    os.environ.setdefault("AGENT_SANDBOX_BUILD_DIR", os.path.abspath(args.build_dir))
    cmd = cmd or default_command(args.build_dir, "sdk_latency")
    own, env, kubeconfig = cluster_for("bench-sdk-cluster", 20, 3 * args.count + 20)
    tmp = tempfile.mkdtemp(prefix="sdk_latency-")
    stack, proc, logf, state = [], None, None, None
    tpl = template() if args.standin else sandboxd_template()
    try:
        kc, kubectl = prepare_cluster(kubeconfig, 3 * args.count + 20)
        sa = sa_kubeconfig(kc, kubectl, tmp)
        proc, logf, logpath, line = start_controller(cmd, sa, tmp, 0)
        url = args.router_url
        if args.standin:
            router, url = standin_router(tmp)
            stack = [router]
        elif not url:
            stack, url, state = local_stack(kubeconfig, os.path.abspath(args.build_dir), tmp)
        client = sdk.SandboxClient(sdk.SandboxDirectConnectionConfig(api_url=url), kubeconfig=kubeconfig)
        load0 = os.getloadavg()
        # warm-up: the controller's caches are synced once a claim is served
        ns = new_ns(kc, "sdk-warmup")
        phase(client, kc, ns, 0, 1, args.timeout, tpl)
        drop_ns(kc, ns)
        res = {}
        for name, replicas in (("warm", args.count), ("cold", 0)):
            ns = new_ns(kc, f"sdk-{name}")
            res[name] = phase(client, kc, ns, replicas, args.count, args.timeout, tpl, args.settle)
            log(f"{name}: p50 {pct(res[name][0], 50):.0f} ms")
            drop_ns(kc, ns)
        if args.upstream_client:
            ns = new_ns(kc, "sdk-upstream")
            res["upstream client, warm"] = upstream_phase(args.upstream_client, url, kubeconfig, kc, ns,
                                                          args.count, args.timeout, tpl, args.settle)
            log(f"upstream client, warm: p50 {pct(res['upstream client, warm'][0], 50):.0f} ms")
            drop_ns(kc, ns)
        ns = new_ns(kc, "sdk-cps")
        create(kc, ns, "sandboxtemplates", tpl)
        create(kc, ns, "sandboxwarmpools", pool("pool", 0))
        sb = client.create_sandbox("pool", ns, sandbox_ready_timeout=args.timeout)
        cps = {c: commands_per_second(sb, c, args.seconds) for c in map(int, args.concurrency.split(","))}
        sb.terminate()
        drop_ns(kc, ns)
        load1 = os.getloadavg()
    finally:
        stop_all(stack, state, proc and (proc, logf), own and env)
    print(f"# sdk_latency {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; {machine()}; "
          f"load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    print(f"# command: bench/sdk_latency.sh {shlex.join(sys.argv[1:])}")
    print(f"# controller: {line}")
    print("# data path: " + ("stand-in router+runtime (tests/integration/sdk_standin.py)" if args.standin
                             else f"router {args.router_url}" if args.router_url
                             else "sandbox-router (caches on) -> sandboxd on each pod's IP (tools/sandboxd-pods)"))
    print("| figure | sandboxes | warm / cold | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|")
    for name in [n for n in ("warm", "cold", "upstream client, warm") if n in res]:
        lat, warm, created = res[name]
        print(f"| create_sandbox -> first command output, {name} pool | {len(lat)} | {warm} / {len(lat) - warm} | "
              f"{pct(lat, 50):.0f} | {pct(lat, 99):.0f} | {lat[-1]:.0f} |")
        print(f"| of which create_sandbox() returned, {name} pool | {len(lat)} | | "
              f"{pct(created, 50):.0f} | {pct(created, 99):.0f} | {created[-1]:.0f} |")
    for c, v in cps.items():
        print(f"| commands/s through the SDK (`true`), {c} threads, one sandbox | - | - | {v:.0f}/s | | |")
    if "upstream client, warm" in res:
        ours, theirs = pct(res["warm"][0], 50), pct(res["upstream client, warm"][0], 50)
        print(f"# warm create -> first output p50, ours / upstream's client: {ours:.0f} / {theirs:.0f} ms "
              f"= {ours / theirs:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
