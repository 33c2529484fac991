"""The stack on a real node, deployed as a user deploys it.

The controller and the router run in pods from the image `Dockerfile` builds
(deploy/, in-cluster config, leader election, the conversion webhook reached
through its Service); sandboxd runs in pods from `cmd/sandboxd/Dockerfile`'s
image with deploy/sandboxd's SandboxTemplate. Each test asserts something
only a real container shows: the command's hostname is the pod's, its UID
the image's 1000, its root filesystem the image's; files on a PVC survive a
suspend/resume and a deleted pod; Ready waits for sandboxd's readiness
probe.
"""
import base64
import copy
import json
import os
import shlex
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

from conftest import (CONTROLLER, ROOT, ROUTER, SYSTEM_NS, TEMPLATE_FILE, condition, dump,
                      pod_of, router_config, wait_for)

import agent_sandbox_c as sdk

from kubetest import CLAIM, EXT_API, POOL, UPSTREAM_CLIENT  # noqa: E402
# Prints what only the container knows: its hostname, its identity, its root
# filesystem (the image's sandboxd binary and Debian release, and no trace of
# this machine's checkout).
PROBE = ("hostname; id -u; id -g; test -x /usr/local/bin/sandboxd && echo image-binary; "
         "cat /etc/debian_version; test -e " + ROOT + " && echo host-root-visible; pwd")


POOL_FILE = os.path.join(ROOT, "deploy", "sandboxd", "sandboxwarmpool.yaml")


def pool(kube, ns, replicas):
    """deploy/sandboxd's warm pool (sandboxd-pool), with `replicas`."""
    with open(POOL_FILE) as f:
        wp = yaml.safe_load(f)
    wp["spec"]["replicas"] = replicas
    kube.apply(wp, ns)
    if replicas:
        wait_for(lambda: ((kube.get(POOL, "sandboxd-pool", ns) or {}).get("status") or {})
                 .get("readyReplicas") == replicas, timeout=180, desc=f"pool ready\n{dump(kube, ns)}")


def assert_real_container(kube, ns, sb, pod_name):
    r = sb.commands.run("sh -c " + shlex.quote(PROBE))
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == pod_name, "the command's hostname is not its pod's"
    assert lines[1:3] == ["1000", "1000"], "not the image's user"
    assert lines[3] == "image-binary"
    assert lines[4].startswith("12."), "not the image's Debian 12 root filesystem"
    assert "host-root-visible" not in lines, "the host's filesystem is visible"
    assert lines[5] == "/workspace"


@pytest.mark.parametrize("replicas", [0, 1], ids=["cold", "warm"])
def test_sdk_default_mode_runs_in_a_real_container(stack, ns, replicas):
    """The SDK in its default mode (kubectl port-forward to the router's
    Service, served by the real kubelet), a cold claim and a warm one: the
    command runs in the sandbox's container; a file written through the
    router is on the pod's disk (kubectl exec) and the pod logs are there
    (kubectl logs)."""
    pool(stack, ns, replicas)
    members = {s["metadata"]["name"] for s in stack.list("sandbox", ns)}
    with sdk.SandboxClient(router_config(), kubeconfig=stack.kubeconfig) as c:
        sb = c.create_sandbox("sandboxd-pool", ns, 180)
        assert (sb.sandbox_id in members) == bool(replicas), "warm claims take a pool member"
        pod = sb.get_pod_name()
        assert_real_container(stack, ns, sb, pod)
        content = os.urandom(4096)
        sb.files.write("data.bin", content)
        assert sb.files.read("data.bin") == content
        on_disk = subprocess.run(
            [*stack.kubectl, "--kubeconfig", stack.kubeconfig, "exec", "-n", ns, pod, "-c", "sandboxd",
             "--", "cat", "/workspace/data.bin"], capture_output=True, timeout=60)
        assert on_disk.returncode == 0, on_disk.stderr
        assert on_disk.stdout == content
        logs = stack.run("logs", "-n", ns, pod, "-c", "sandboxd").stdout
        # JSON lines by default, as upstream's sandboxd
        assert '"logger":"sandboxd","msg":"sandboxd started"' in logs, logs[-2000:]
    wait_for(lambda: stack.list(CLAIM, ns) == [], timeout=30, desc="claim deleted on exit")


def router_url(kube):
    ip = kube.run("get", "service", "sandbox-router-svc", "-n", SYSTEM_NS,
                  "-o", "jsonpath={.spec.clusterIP}").stdout
    assert ip, "the router's Service has no ClusterIP"
    return f"http://{ip}:8080"


def test_sdk_direct_mode_through_the_router_service(stack, ns):
    """Direct mode: this machine reaches the router's ClusterIP (kube-proxy's
    rules), the router the pod's IP on the bridge."""
    pool(stack, ns, 1)
    cfg = sdk.SandboxDirectConnectionConfig(api_url=router_url(stack))
    with sdk.SandboxClient(cfg, kubeconfig=stack.kubeconfig) as c:
        sb = c.create_sandbox("sandboxd-pool", ns, 180)
        assert_real_container(stack, ns, sb, sb.get_pod_name())


def execute(url, ns, sandbox, command, timeout=60):
    """POST /execute of the python-runtime API through the router; the
    command runs under sh -c (the API itself splits it, no shell)."""
    body = json.dumps({"command": "sh -c " + shlex.quote(command)}).encode()
    req = urllib.request.Request(url + "/execute", data=body,
                                 headers={"Content-Type": "application/json", "X-Sandbox-ID": sandbox,
                                          "X-Sandbox-Namespace": ns, "X-Sandbox-Port": "8888"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def pvc_sandbox(name):
    """A Sandbox of deploy/sandboxd's pod spec whose /workspace is a PVC
    (volumeClaimTemplates). The local cluster's hostPath provisioner makes
    the volume root-owned 0750 and hostPath volumes take no fsGroup, so an
    init container gives it to UID 1000, as one does on such storage."""
    with open(TEMPLATE_FILE) as f:
        spec = copy.deepcopy(yaml.safe_load(f)["spec"]["podTemplate"])
    spec["spec"]["volumes"] = [v for v in spec["spec"]["volumes"] if v["name"] != "workspace"]
    image = spec["spec"]["containers"][0]["image"]
    spec["spec"]["initContainers"] = [{
        "name": "workspace-owner", "image": image, "command": ["chown", "1000:1000", "/workspace"],
        "securityContext": {"runAsUser": 0, "runAsNonRoot": False, "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}},
        "volumeMounts": [{"name": "workspace", "mountPath": "/workspace"}]}]
    return {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": name},
            "spec": {"podTemplate": spec, "volumeClaimTemplates": [
                {"metadata": {"name": "workspace"},
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}


def ready(kube, ns, name):
    sb = kube.get("sandbox", name, ns)
    c = condition(sb, "Ready")
    return sb if c and c["status"] == "True" else None


def test_pvc_data_survives_suspend_resume_and_a_deleted_pod(stack, ns):
    """Bytes written in the sandbox are read back, the same, after a
    suspend (pod gone, PVC kept) and resume, and after the pod is deleted
    under the Sandbox (the controller makes a new one on the same PVC)."""
    name = "keeper"
    stack.apply(pvc_sandbox(name), ns)
    wait_for(lambda: ready(stack, ns, name), timeout=180, desc=f"Sandbox Ready\n{dump(stack, ns)}")
    url = router_url(stack)
    payload = base64.b64encode(os.urandom(3000)).decode()
    out = execute(url, ns, name, f"printf %s {payload} > /workspace/kept.txt && sha256sum /workspace/kept.txt")
    assert out["exit_code"] == 0, out
    digest = out["stdout"].split()[0]
    pod1 = pod_of(stack, ns, name)
    pvc = stack.get("pvc", f"workspace-{name}", ns)
    assert pvc and pvc["status"]["phase"] == "Bound"

    stack.patch("sandbox", name, ns, {"spec": {"operatingMode": "Suspended"}})
    wait_for(lambda: (condition(stack.get("sandbox", name, ns), "Suspended") or {}).get("status") == "True",
             timeout=120, desc="suspended")
    assert stack.get("pod", pod1["metadata"]["name"], ns) is None, "the pod outlived the suspend"
    assert stack.get("pvc", f"workspace-{name}", ns)["metadata"]["uid"] == pvc["metadata"]["uid"]

    stack.patch("sandbox", name, ns, {"spec": {"operatingMode": "Running"}})
    wait_for(lambda: ready(stack, ns, name), timeout=180, desc=f"resumed\n{dump(stack, ns)}")
    pod2 = pod_of(stack, ns, name)
    assert pod2["metadata"]["uid"] != pod1["metadata"]["uid"]
    out = wait_for(lambda: _try_execute(url, ns, name, "sha256sum /workspace/kept.txt"), timeout=60,
                   desc="the resumed sandbox answers")
    assert out["exit_code"] == 0 and out["stdout"].split()[0] == digest, out

    stack.run("delete", "pod", "-n", ns, pod2["metadata"]["name"], "--wait=true", "--timeout=60s")
    wait_for(lambda: (pod_of(stack, ns, name) or {}).get("metadata", {}).get("uid") not in
             (None, pod2["metadata"]["uid"]) and ready(stack, ns, name), timeout=180,
             desc=f"a new pod after the deletion\n{dump(stack, ns)}")
    out = wait_for(lambda: _try_execute(url, ns, name, "sha256sum /workspace/kept.txt"), timeout=60,
                   desc="the new pod answers")
    assert out["exit_code"] == 0 and out["stdout"].split()[0] == digest, out


def _try_execute(url, ns, name, command):
    try:
        return execute(url, ns, name, command, timeout=20)
    except OSError:
        return None


def test_ready_waits_for_sandboxd_readiness(stack, ns):
    """A sandbox whose sandboxd starts 6 s after its container is not Ready
    (nor handed out by the router) before sandboxd's readiness probe
    passes: Ready's transition comes after the container started + 6 s."""
    with open(TEMPLATE_FILE) as f:
        tpl = yaml.safe_load(f)
    c = tpl["spec"]["podTemplate"]["spec"]["containers"][0]
    c["command"] = ["/bin/sh", "-c", 'sleep 6; exec /usr/local/bin/sandboxd --listen-host=0.0.0.0 "$@"', "sh"]
    stack.apply({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": "slow"},
                 "spec": {"podTemplate": tpl["spec"]["podTemplate"]}}, ns)
    sb = wait_for(lambda: ready(stack, ns, "slow"), timeout=180, desc=f"Ready\n{dump(stack, ns)}")
    pod = pod_of(stack, ns, "slow")
    started = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    ready_at = condition(sb, "Ready")["lastTransitionTime"]
    # RFC 3339 seconds: compare as epoch seconds
    def epoch(t):
        return time.mktime(time.strptime(t, "%Y-%m-%dT%H:%M:%SZ"))
    assert epoch(ready_at) - epoch(started) >= 5, (started, ready_at)


def test_controller_and_router_run_in_cluster(stack, ns):
    """The controller holds its leader Lease from inside its pod (in-cluster
    config), logs there, and converts a stored v1beta1 Sandbox to v1alpha1
    for the API server, which calls it through the webhook Service; both
    router replicas are Ready."""
    pods = stack.list("pods", SYSTEM_NS, selector=f"app={CONTROLLER}")
    assert len(pods) == 1 and pods[0]["status"]["phase"] == "Running"
    lease = stack.get("lease", "a3317529.agent-sandbox.x-k8s.io", SYSTEM_NS)
    assert lease and lease["spec"]["holderIdentity"].startswith(pods[0]["metadata"]["name"]), lease
    logs = stack.run("logs", "-n", SYSTEM_NS, pods[0]["metadata"]["name"]).stdout
    assert logs.strip(), "no controller logs"
    stack.apply({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": "conv"},
                 "spec": {"podTemplate": {"spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}, ns)
    old = json.loads(stack.run("get", "sandboxes.v1alpha1.agents.x-k8s.io", "conv", "-n", ns, "-o", "json").stdout)
    assert old["apiVersion"] == "agents.x-k8s.io/v1alpha1"
    assert old["spec"]["podTemplate"]["spec"]["containers"][0]["image"] == "registry.k8s.io/pause:3.10"
    routers = stack.list("pods", SYSTEM_NS, selector=f"app={ROUTER}")
    assert len(routers) == 2 and all(condition(p, "Ready")["status"] == "True" for p in routers)


def test_upstream_client_default_mode(stack, ns):
    """The upstream client (k8s-agent-sandbox 1.0.8), unchanged, in its
    default mode (its own kubectl port-forward to the router's Service):
    claim from our warm pool, a command, a file both ways."""
    if not os.path.isdir(os.path.join(UPSTREAM_CLIENT, "k8s_agent_sandbox")):
        pytest.fail(f"the upstream client is not installed in {UPSTREAM_CLIENT} (tools/install-deps)")
    pool(stack, ns, 1)
    script = """
import json, sys
from k8s_agent_sandbox import SandboxClient
c = SandboxClient()
sb = c.create_sandbox("sandboxd-pool", namespace=sys.argv[1], sandbox_ready_timeout=180)
r = sb.commands.run("sh -c 'hostname; id -u'")
sb.files.write("up.txt", b"from upstream")
print("RESULT " + json.dumps({"stdout": r.stdout, "exit": r.exit_code, "pod": sb.get_pod_name(),
                              "read": sb.files.read("up.txt").decode()}), flush=True)
sb.terminate()
"""
    from conftest import kubectl_path
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PYTHONPATH") and not k.startswith("ASAN")}
    env.update(PYTHONPATH=UPSTREAM_CLIENT, KUBECONFIG=stack.kubeconfig,
               PATH=os.path.dirname(kubectl_path()) + os.pathsep + env.get("PATH", ""))
    p = subprocess.run([sys.executable, "-c", script, ns], capture_output=True, text=True, timeout=400, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, f"upstream client failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    out = json.loads(lines[0][len("RESULT "):])
    assert out["exit"] == 0 and out["stdout"] == f"{out['pod']}\n1000\n"
    assert out["read"] == "from upstream"


def test_runtime_class_from_the_template_reaches_the_pod(stack, ns):
    """A template's runtimeClassName is its pods', and the kubelet runs them
    with that RuntimeClass's handler (runc: this machine's kernel; gVisor's
    would show its own, docs/local-cluster.md says why there is none here);
    sandboxd answers through the router."""
    with open(TEMPLATE_FILE) as f:
        tpl = yaml.safe_load(f)
    tpl["spec"]["podTemplate"]["spec"]["runtimeClassName"] = "runc"
    stack.apply(tpl, ns)
    pool(stack, ns, 1)
    with sdk.SandboxClient(router_config(), kubeconfig=stack.kubeconfig) as c:
        sb = c.create_sandbox("sandboxd-pool", ns, 180)
        pod = stack.get("pod", sb.get_pod_name(), ns)
        assert pod["spec"]["runtimeClassName"] == "runc"
        kernel = sb.commands.run("cat /proc/version").stdout
        assert os.uname().release in kernel, kernel
        assert_real_container(stack, ns, sb, pod["metadata"]["name"])


def test_controller_killed_mid_burst_loses_nothing(stack, ns):
    """Twelve claims, the controller's pod deleted after the sixth: its
    Deployment's next pod takes the Lease and every claim gets a Sandbox of
    its own, Ready, with no Sandbox made twice."""
    # 15 pods on a node of two CPUs (beside the controller and two routers):
    # the template asks for less than deploy/sandboxd's 100m each
    with open(TEMPLATE_FILE) as f:
        tpl = yaml.safe_load(f)
    tpl["spec"]["podTemplate"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "10m"
    stack.apply(tpl, ns)
    pool(stack, ns, 3)
    claims = [f"burst-{i}" for i in range(12)]

    def claim(name):
        return {"apiVersion": EXT_API, "kind": "SandboxClaim", "metadata": {"name": name},
                "spec": {"warmPoolRef": {"name": "sandboxd-pool"}}}
    old = stack.list("pods", SYSTEM_NS, selector=f"app={CONTROLLER}")[0]["metadata"]["name"]
    for name in claims[:6]:
        stack.create(claim(name), ns)
    stack.run("delete", "pod", "-n", SYSTEM_NS, old, "--wait=false")
    for name in claims[6:]:
        stack.create(claim(name), ns)

    def all_ready():
        got = {c["metadata"]["name"]: c for c in stack.list(CLAIM, ns)}
        return all((condition(got.get(n), "Ready") or {}).get("status") == "True" for n in claims) and got
    got = wait_for(all_ready, timeout=300, desc=f"every claim Ready\n{dump(stack, ns)}")
    names = [got[n]["status"]["sandbox"]["name"] for n in claims]
    assert len(set(names)) == len(claims), f"a Sandbox handed out twice: {names}"
    new = stack.list("pods", SYSTEM_NS, selector=f"app={CONTROLLER}")
    assert [p["metadata"]["name"] for p in new] != [old]
    lease = stack.get("lease", "a3317529.agent-sandbox.x-k8s.io", SYSTEM_NS)
    assert not lease["spec"]["holderIdentity"].startswith(old)
    # the pool refills to 3 beside the 12 claimed: nothing orphaned, nothing doubled
    wait_for(lambda: len(stack.list("sandbox", ns)) == len(claims) + 3, timeout=180,
             desc=f"12 claimed + 3 warm Sandboxes\n{dump(stack, ns)}")


def fw_drops(kube):
    """Packets dropped so far by the real nodes' FORWARD chain
    (AGENT-SANDBOX-<NET>, NET from the node's address 10.NET.64.1)."""
    node = kube.list("nodes", selector="type=real")[0]
    ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
    out = subprocess.run(["iptables", "-w", "-L", f"AGENT-SANDBOX-{ip.split('.')[1]}", "-v", "-x", "-n"],
                         capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[0]) for line in out.splitlines()[2:] if " DROP " in f" {line} ")


def test_a_sandbox_reaches_nothing_beyond_this_machine(stack, ns):
    """What a tenant's code tries: the host's default gateway (no route in
    the pod: unreachable at once), an address the pod does route through the
    bridge but no node holds (10.NET.100.x: the host would forward it out of
    its own interface) and an unallocated ClusterIP. Nothing answers, and
    the FORWARD rule counts the packets it dropped, so they did leave the
    pod and were stopped at the host, not lost elsewhere."""
    pool(stack, ns, 1)
    gw = subprocess.run(["ip", "-4", "route", "show", "default"], capture_output=True, text=True).stdout.split()
    gateway = gw[gw.index("via") + 1] if "via" in gw else "192.0.2.1"
    node = stack.list("nodes", selector="type=real")[0]
    net = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP").split(".")[1]
    before = fw_drops(stack)
    with sdk.SandboxClient(router_config(), kubeconfig=stack.kubeconfig) as c:
        sb = c.create_sandbox("sandboxd-pool", ns, 180)
        for target in (f"{gateway}/53", f"10.{net}.100.7/80", "10.96.255.254/443"):
            r = sb.commands.run("bash -c " + shlex.quote(
                f"timeout 3 bash -c 'exec 3<>/dev/tcp/{target}' 2>&1; echo rc=$?"), timeout=30)
            assert "rc=0" not in r.stdout, f"{target} answered: {r.stdout}"
    assert fw_drops(stack) > before, "no packet was dropped by the FORWARD rule"
