#!/usr/bin/env python3
"""Python SDK benchmark (run it through bench/sdk_latency.sh). See
bench/README.md.

Through the SDK (sdk-python, agent_sandbox_c over libsandbox), with our
controller (--extensions) on a local control plane:
  1. warm: `--count` sandboxes, one after the other, from a pool of
     `--count` Ready members: time from the create_sandbox() call to the
     first command's output (commands.run("echo ...") returned);
  2. cold: the same from a pool with replicas 0 (every sandbox created);
  3. commands/s: for each concurrency C of `--concurrency`, C threads run
     commands.run() on one sandbox for `--seconds` s.
The router: `--router-url` (a sandbox router in front of real runtimes),
else a stand-in router+runtime (tests/integration/sdk_standin.py, Python's
http.server, one process) on loopback, which answers at once and so
measures the SDK, the controller and the control plane, not a runtime; its
own throughput bounds the commands/s.

Cluster and controller as bench/claim_latency.sh: KUBECONFIG's cluster, or a
private one (ports 20xxx); the controller command after `--`, default ours
from --build-dir.
"""
import argparse
import json
import os
import shlex
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


def phase(client, kc, ns, replicas, count, timeout):
    """count sequential create_sandbox + first command; latencies in ms."""
    create(kc, ns, "sandboxtemplates", template())
    create(kc, ns, "sandboxwarmpools", pool("pool", replicas))
    if replicas:
        wait_pool(kc, ns, "pool", replicas, timeout)
    lat, warm = [], 0
    for i in range(count):
        t = time.monotonic()
        sb = client.create_sandbox("pool", ns, sandbox_ready_timeout=timeout)
        out = sb.commands.run(f"echo sandbox {i}")
        lat.append((time.monotonic() - t) * 1000)
        assert out.exit_code == 0, out
        warm += sb.sandbox_id != sb.claim_name
        sb.terminate()
    return sorted(lat), warm


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
    ap.add_argument("--router-url", help="a sandbox router (default: the stand-in, see the docstring)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build")))
    args = ap.parse_args(argv)
    os.environ.setdefault("AGENT_SANDBOX_BUILD_DIR", os.path.abspath(args.build_dir))
    cmd = cmd or default_command(args.build_dir, "sdk_latency")
    own, env, kubeconfig = cluster_for("bench-sdk-cluster", 20, 2 * args.count + 20)
    tmp = tempfile.mkdtemp(prefix="sdk_latency-")
    router, proc = None, None
    try:
        kc, kubectl = prepare_cluster(kubeconfig, 2 * args.count + 20)
        sa = sa_kubeconfig(kc, kubectl, tmp)
        proc, logf, logpath, line = start_controller(cmd, sa, tmp, 0)
        url = args.router_url
        if not url:
            router, url = standin_router(tmp)
        client = sdk.SandboxClient(sdk.SandboxDirectConnectionConfig(api_url=url), kubeconfig=kubeconfig)
        load0 = os.getloadavg()
        # warm-up: the controller's caches are synced once a claim is served
        ns = new_ns(kc, "sdk-warmup")
        phase(client, kc, ns, 0, 1, args.timeout)
        drop_ns(kc, ns)
        res = {}
        for name, replicas in (("warm", args.count), ("cold", 0)):
            ns = new_ns(kc, f"sdk-{name}")
            res[name] = phase(client, kc, ns, replicas, args.count, args.timeout)
            log(f"{name}: p50 {pct(res[name][0], 50):.0f} ms")
            drop_ns(kc, ns)
        ns = new_ns(kc, "sdk-cps")
        create(kc, ns, "sandboxtemplates", template())
        create(kc, ns, "sandboxwarmpools", pool("pool", 0))
        sb = client.create_sandbox("pool", ns, sandbox_ready_timeout=args.timeout)
        cps = {c: commands_per_second(sb, c, args.seconds) for c in map(int, args.concurrency.split(","))}
        sb.terminate()
        drop_ns(kc, ns)
        load1 = os.getloadavg()
    finally:
        if router:
            router.terminate()
            router.wait()
        if proc:
            stop_controller(proc, logf)
        if own:
            subprocess.run([LOCAL_CLUSTER, "down"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(f"# sdk_latency {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; {machine()}; "
          f"load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    print(f"# command: bench/sdk_latency.sh {shlex.join(sys.argv[1:])}")
    print(f"# controller: {line}")
    print(f"# router: {args.router_url or 'stand-in (tests/integration/sdk_standin.py)'}")
    print("| figure | sandboxes | warm / cold | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|")
    for name in ("warm", "cold"):
        lat, warm = res[name]
        print(f"| create_sandbox -> first command output, {name} pool | {len(lat)} | {warm} / {len(lat) - warm} | "
              f"{pct(lat, 50):.0f} | {pct(lat, 99):.0f} | {lat[-1]:.0f} |")
    for c, v in cps.items():
        print(f"| commands/s through the SDK, {c} threads, one sandbox | - | - | {v:.0f}/s | | |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
