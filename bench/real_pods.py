#!/usr/bin/env python3
"""What a real container start costs: create_sandbox -> first command output
through the router, warm and cold, on a real node and on kwok in one run.

    bench/real_pods.py [--count N] [--timeout S] [--build-dir DIR] [-- CONTROLLER COMMAND ...]

A private control plane (tools/local-cluster, /tmp/agent-sandbox-bench-real-pods,
ports 21xxx) with one real node (kubelet, containerd, runc; root) and one
kwok node, unless KUBECONFIG names a cluster that has both. The images are
tools/images' (built first when missing). Data path for both kinds: our
sandbox-router on this machine (caches on) -> sandboxd: in the real pod from
cmd/sandboxd/Dockerfile's image, or, on kwok, on the pod's loopback IP
(tools/sandboxd-pods). The template is deploy/sandboxd/sandboxtemplate.yaml
pinned to the kind of node by `nodeSelector: {type: real|kwok}`. The
controller runs on this machine (ours from --build-dir by default; after
`--`, another one, e.g. upstream's, `{kubeconfig}` in it replaced by its
ServiceAccount kubeconfig), so both kinds see the same controller and the
difference between the rows is the node: image, container start, probes.
The in-cluster controller of deploy/ is scaled to 0 for the run.

For each kind: `--count` sandboxes one after the other from a warm pool of
`--count` Ready members, then `--count` from a pool of 0 (each created);
each latency from the create_sandbox() call to the first command's output.
"""
import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from claim_latency import default_command, drop_ns, new_ns, prepare_cluster, start_controller  # noqa: E402
from create_to_ready import ROOT, cluster_for, machine, pct, sa_kubeconfig  # noqa: E402
from sdk_latency import local_stack, phase, sandboxd_template, stop_all  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "sdk-python"))
import agent_sandbox_c as sdk  # noqa: E402

IMAGES = ("docker.io/library/sandboxd:dev", "docker.io/library/agent-sandbox-controller:dev")


def log(*a):
    print("[real_pods]", *a, file=sys.stderr, flush=True)


def ensure_images():
    missing = [i for i in IMAGES if subprocess.run(["buildah", "inspect", "--type", "image", i],
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode]
    if missing:
        log("building the images (tools/images build):", ", ".join(missing))
        subprocess.run([os.path.join(ROOT, "tools", "images"), "build"], check=True, stdout=sys.stderr)


def template_on(kind):
    tpl = sandboxd_template()
    tpl["spec"]["podTemplate"]["spec"]["nodeSelector"] = {"type": kind}
    return tpl


def main(argv):
    cmd = None
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(prog="bench/real_pods.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20, help="sandboxes per phase and kind (default 20)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build")))
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench/real_pods.py: the real node needs root")
    os.environ.setdefault("AGENT_SANDBOX_BUILD_DIR", os.path.abspath(args.build_dir))
    cmd = cmd or default_command(args.build_dir, "real_pods")
    ensure_images()
    os.environ.setdefault("AGENT_SANDBOX_REAL_NODES", "1")
    os.environ.setdefault("AGENT_SANDBOX_NODES", "1")
    own, env, kubeconfig = cluster_for("bench-real-pods", 21, 2 * args.count + 20)
    tmp = tempfile.mkdtemp(prefix="real_pods-")
    stack, proc, logf, state = [], None, None, None
    res = {}
    try:
        kc, kubectl = prepare_cluster(kubeconfig, 2 * args.count + 20)
        # the controller here, not deploy/'s in-cluster one (one leader at a time)
        subprocess.run([kubectl, "--kubeconfig", kubeconfig, "-n", "agent-sandbox-system", "scale",
                        "deployment/agent-sandbox-controller", "--replicas=0"], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([kubectl, "--kubeconfig", kubeconfig, "-n", "agent-sandbox-system", "wait", "--for=delete",
                        "pod", "-l", "app=agent-sandbox-controller", "--timeout=60s"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sa = sa_kubeconfig(kc, kubectl, tmp)
        proc, logf, logpath, line = start_controller(cmd, sa, tmp, 0)
        stack, url, state = local_stack(kubeconfig, os.path.abspath(args.build_dir), tmp)
        client = sdk.SandboxClient(sdk.SandboxDirectConnectionConfig(api_url=url), kubeconfig=kubeconfig)
        load0 = os.getloadavg()
        for kind in ("real", "kwok"):
            tpl = template_on(kind)
            ns = new_ns(kc, f"rp-warmup-{kind}")
            phase(client, kc, ns, 0, 1, args.timeout, tpl)  # caches synced, image on the node's disk
            drop_ns(kc, ns)
            for name, replicas in (("warm", args.count), ("cold", 0)):
                ns = new_ns(kc, f"rp-{kind}-{name}")
                res[kind, name] = phase(client, kc, ns, replicas, args.count, args.timeout, tpl)
                log(f"{kind} {name}: p50 {pct(res[kind, name][0], 50):.0f} ms")
                drop_ns(kc, ns)
        load1 = os.getloadavg()
    finally:
        stop_all(stack, state, proc and (proc, logf), own and env)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# real_pods {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; {machine()}; "
          f"load average {load0[0]:.1f} before, {load1[0]:.1f} after")
    print(f"# command: bench/real_pods.py {shlex.join(sys.argv[1:])}")
    print(f"# controller: {line}")
    print("# data path: sandbox-router (caches on) on this machine -> sandboxd in the real pod / on the kwok pod's IP")
    print("| create_sandbox -> first command output | node | sandboxes | p50 ms | p99 ms | max ms | p50 real/kwok |")
    print("|---|---|---|---|---|---|---|")
    for name in ("warm", "cold"):
        for kind in ("real", "kwok"):
            lat = res[kind, name][0]
            ratio = pct(res["real", name][0], 50) / max(pct(res["kwok", name][0], 50), 0.001)
            print(f"| {name} | {kind} | {len(lat)} | {pct(lat, 50):.0f} | {pct(lat, 99):.0f} | {lat[-1]:.0f} | "
                  + (f"{ratio:.2f}x |" if kind == "real" else "|"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
