"""The whole stack on one machine: the Python SDK (agent_sandbox_c) ->
sandbox-router (cmd/router, Sandbox/Pod caches on) -> sandboxd (cmd/sandboxd)
on each sandbox pod's loopback IP, started by tools/sandboxd-pods standing in
for the kubelet; the extension controllers run the warm pool and the claims.

- the Python SDK e2e scenarios of docs/upstream.md#upstream-e2e-scenarios: router mode and
  gateway mode (as root: port 80), each with a zero-replica pool (cold) and
  a warm pool, the claim annotation in UTC ISO-8601, volume claim
  templates; each runs `echo 'Hello from SDK'`
  (stdout exact, stderr empty, exit 0) and a write/read round trip;
- a 50 MB file both ways through the router in flat memory;
- the sandbox deleted under the client;
- 50 sandboxes from 50 threads and 50 from 50 asyncio tasks, each running
  a command;
- the upstream client (`k8s-agent-sandbox` 1.0.8 from PyPI, installed by
  tools/install-deps) against our warm pool, router and sandboxd.

The template is the example of deploy/sandboxd/sandboxtemplate.yaml as it is
(runAsUser 1000: as root, sandboxd-pods runs each sandboxd as that user).
"""
import asyncio
import datetime
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import pytest
import yaml

from conftest import LoggedProcess, ROOT, condition, sdk_child_env, wait_for
from kubetest import CLAIM, EXT_API, POOL, UPSTREAM_CLIENT
from router_util import Router
from test_sdk import GATEWAY_CRD

import agent_sandbox_c as sdk

pytestmark = pytest.mark.usefixtures("extensions_controller")

A_REQUESTED = "agents.x-k8s.io/client-first-requested-at"
HELLO = "echo 'Hello from SDK'"


class SandboxdPods(LoggedProcess):
    """tools/sandboxd-pods for the whole test cluster."""

    kind = "sandboxd-pods"

    def __init__(self, logdir, kubeconfig, extra_args=(), state=None):
        # sandboxd runs as the pods' runAsUser: its directories must be
        # reachable by that user, which pytest's private tmp dirs are not
        self.state = state or tempfile.mkdtemp(prefix="agent-sandbox-test-pods-", dir="/tmp")
        os.chmod(self.state, 0o755)
        self.log = os.path.join(str(logdir), "sandboxd-pods.log")
        self._logf = open(self.log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tools", "sandboxd-pods"),
             "--kubeconfig", kubeconfig, "--state-dir", self.state, *extra_args],
            stdout=self._logf, stderr=subprocess.STDOUT)

        def watching():
            assert self.proc.poll() is None, f"sandboxd-pods exited:\n{self.text()}"
            return "watching pods" in self.text()
        try:
            wait_for(watching, timeout=30, desc="sandboxd-pods watching")
        except BaseException:
            self.stop()
            raise

    def stop(self, sig=signal.SIGTERM, timeout=60):
        # longer than its own longest wait (a pod's grace period, 30 s at most)
        return super().stop(sig, timeout)

    def root_of(self, ns, pod):
        """The directory a pod's sandboxd serves (its /workspace)."""
        found = glob.glob(os.path.join(self.state, "pods", f"{ns}_{pod}_*"))
        assert len(found) == 1, f"runtime directories of {ns}/{pod}: {found}"
        return found[0]


class Stack:
    def __init__(self, pods, router):
        self.pods, self.router = pods, router
        self.url = f"http://127.0.0.1:{router.port}"

    def config(self, **kw):
        return sdk.SandboxDirectConnectionConfig(api_url=self.url, **kw)


# kwok marks a pod Ready at once, with no probe: a pod listing this gate is
# held not Ready (tools/local-cluster's kwok stage) until tools/sandboxd-pods
# sees its sandboxd start, as a kubelet's readiness probe would hold it.
SANDBOXD_GATE = "agent-sandbox.local/sandboxd-started"


@pytest.fixture(scope="module")
def stack(kube, extensions_controller, tmp_path_factory):
    logdir = tmp_path_factory.mktemp("stack")
    pods = SandboxdPods(logdir, kube.kubeconfig)
    router = None
    try:
        router = Router(logdir, ["--cache-enabled", "--kubeconfig", kube.kubeconfig])
        router.wait_ready()
        yield Stack(pods, router)
    finally:
        rc_router = router.stop() if router else None
        rc_pods = pods.stop()
        print("---- sandboxd-pods log (tail) ----\n" + pods.text()[-3000:])
        # the sandboxd logs stay with the test's logs; their directories go
        shutil.copytree(os.path.join(pods.state, "logs"),
                        os.path.join(str(logdir), "sandboxd-logs"))
        shutil.rmtree(pods.state, ignore_errors=True)
    router.assert_clean_log()
    for path in glob.glob(os.path.join(str(logdir), "sandboxd-logs", "*.log")):
        with open(path) as f:
            text = f.read()
        for bad in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer"):
            assert bad not in text, f"sanitizer report in {path}:\n{text[-4000:]}"
    assert "exited by itself" not in pods.text(), "a sandboxd died under its pod"
    assert rc_router == 0, "sandbox-router: exit code %d on SIGTERM" % rc_router
    assert rc_pods == 0, "sandboxd-pods: exit code %d on SIGTERM" % rc_pods
    stops = [ln for ln in pods.text().splitlines() if "stopped sandboxd for pod" in ln]
    assert stops and all(ln.endswith("exit 0)") for ln in stops), \
        "a sandboxd did not exit 0 on SIGTERM:\n" + "\n".join(ln for ln in stops
                                                           if not ln.endswith("exit 0)"))


def sandboxd_template(**fields):
    with open(os.path.join(ROOT, "deploy", "sandboxd", "sandboxtemplate.yaml")) as f:
        tpl = yaml.safe_load(f)
    # Ready once its sandboxd listens (tools/sandboxd-pods sets the gate), not
    # at once as kwok makes pods: what the template's readinessProbe does on
    # a kubelet.
    tpl["spec"]["podTemplate"]["spec"]["readinessGates"] = [{"conditionType": SANDBOXD_GATE}]
    tpl["spec"].update(fields)
    return tpl


def setup_pool(kube, ns, replicas, **tpl_fields):
    """deploy/sandboxd's template and a pool `pool` of `replicas` on it,
    waited until Ready."""
    kube.create({"apiVersion": "v1", "kind": "List", "items": [
        sandboxd_template(**tpl_fields),
        {"apiVersion": EXT_API, "kind": "SandboxWarmPool", "metadata": {"name": "pool"},
         "spec": {"replicas": replicas, "sandboxTemplateRef": {"name": "sandboxd"}}}]}, ns)
    if replicas:
        wait_for(lambda: ((kube.get(POOL, "pool", ns) or {}).get("status") or {})
                 .get("readyReplicas") == replicas, timeout=90, desc="pool ready")


def claims(kube, ns):
    return [c["metadata"]["name"] for c in kube.list(CLAIM, ns)]


def assert_hello_and_round_trip(stack, sb, content=b"Hello, file!"):
    """docs/upstream.md#upstream-e2e-scenarios: the command's exact output, then test.txt written, read back,
    listed and found, and on the pod's own disk."""
    r = sb.commands.run(HELLO)
    assert (r.stdout, r.stderr, r.exit_code) == ("Hello from SDK\n", "", 0)
    sb.files.write("test.txt", content)
    assert sb.files.read("test.txt") == content
    assert [(e.name, e.type, e.size) for e in sb.files.list(".")] == \
        [("test.txt", "file", len(content))]
    assert sb.files.exists("test.txt") and not sb.files.exists("missing.txt")
    with open(os.path.join(stack.pods.root_of(sb.namespace, sb.get_pod_name()), "test.txt"),
              "rb") as f:
        assert f.read() == content


def assert_utc_iso8601(stamp, not_before):
    t = datetime.datetime.fromisoformat(stamp)
    assert t.utcoffset() == datetime.timedelta(0), stamp
    assert not_before - datetime.timedelta(seconds=1) <= t <= \
        datetime.datetime.now(datetime.timezone.utc), stamp


@pytest.mark.parametrize("replicas", [0, 2], ids=["cold", "warm"])
def test_router_mode(kube, ns, stack, replicas):
    """docs/upstream.md#upstream-e2e-scenarios router mode with a zero-replica pool (cold) and a warm pool; the
    claim's annotation is UTC ISO-8601; leaving the client deletes the claim,
    and the pod's sandboxd stops with its pod."""
    setup_pool(kube, ns, replicas)
    before = datetime.datetime.now(datetime.timezone.utc)
    with sdk.SandboxClient(stack.config(), kubeconfig=kube.kubeconfig) as c:
        sb = c.create_sandbox("pool", ns, 90)
        launch = kube.get("sandbox", sb.sandbox_id, ns)["metadata"]["labels"][
            "agents.x-k8s.io/launch-type"]
        assert launch == ("warm" if replicas else "cold")
        assert (sb.sandbox_id == sb.claim_name) == (replicas == 0)
        claim = kube.get(CLAIM, sb.claim_name, ns)
        assert_utc_iso8601(claim["metadata"]["annotations"][A_REQUESTED], before)
        assert condition(claim, "Ready")["status"] == "True"
        assert_hello_and_round_trip(stack, sb)
        pod = sb.get_pod_name()
    wait_for(lambda: claims(kube, ns) == [], timeout=15, desc="claim deleted on exit")
    wait_for(lambda: f"stopped sandboxd for pod {ns}/{pod}" in stack.pods.text(), timeout=60,
             desc="the pod's sandboxd stopped with its pod")


@pytest.mark.skipif(os.geteuid() != 0, reason="a Gateway's address is reached on port 80")
@pytest.mark.parametrize("replicas", [0, 2], ids=["cold", "warm"])
def test_gateway_mode(kube, ns, stack, replicas, tmp_path):
    """docs/upstream.md#upstream-e2e-scenarios gateway mode, cold and warm: the SDK finds the router behind a
    Gateway's status.addresses (a minimal Gateway CRD: no Gateway API
    controller runs here) and reaches it on port 80; a second sandbox-router
    listens there."""
    if not kube.get("crd", GATEWAY_CRD["metadata"]["name"]):
        kube.apply(GATEWAY_CRD)
        kube.run("wait", "--for=condition=Established", "--timeout=60s",
                 "crd/" + GATEWAY_CRD["metadata"]["name"])
    kube.create({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                 "metadata": {"name": "gw"}, "spec": {}}, ns)
    kube.patch("gateways.gateway.networking.k8s.io", "gw", ns,
               {"status": {"addresses": [{"type": "IPAddress", "value": "127.0.0.78"}]}},
               subresource="status")
    gw = Router(tmp_path, ["--cache-enabled", "--kubeconfig", kube.kubeconfig,
                           "--http-bind-address", "127.0.0.78:80"],
                name="gateway-router")
    try:
        gw.wait_ready()
        setup_pool(kube, ns, replicas)
        config = sdk.SandboxGatewayConnectionConfig(gateway_name="gw", gateway_namespace=ns)
        with sdk.SandboxClient(config, kubeconfig=kube.kubeconfig) as c:
            sb = c.create_sandbox("pool", ns, 90)
            assert (sb.sandbox_id == sb.claim_name) == (replicas == 0)
            assert_hello_and_round_trip(stack, sb)
            sid = sb.sandbox_id
    finally:
        rc = gw.stop()
    gw.assert_clean_log()
    assert rc == 0
    served = [json.loads(ln) for ln in gw.text().splitlines() if '"sandbox-router.access"' in ln]
    assert {r["sandbox_id"] for r in served} == {sid} and len(served) >= 6, served


def test_volume_claim_templates(kube, ns, stack):
    """docs/upstream.md#upstream-e2e-scenarios volume claim templates: a template that allows them, a claim
    carrying one; the Sandbox gets the PVC and the data path works."""
    setup_pool(kube, ns, 0, volumeClaimTemplatesPolicy="Allowed")
    vct = {"metadata": {"name": "data"},
           "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}
    with sdk.SandboxClient(stack.config(), kubeconfig=kube.kubeconfig) as c:
        sb = c.create_sandbox("pool", ns, 90, volume_claim_templates=[vct])
        assert kube.get(CLAIM, sb.claim_name, ns)["spec"]["volumeClaimTemplates"] == [vct]
        assert kube.get("pvc", f"data-{sb.sandbox_id}", ns) is not None
        assert_hello_and_round_trip(stack, sb, b"on a volume claim template")


def test_sandbox_deleted_under_the_client(kube, ns, stack):
    setup_pool(kube, ns, 1)
    with sdk.SandboxClient(stack.config(max_retries=1), kubeconfig=kube.kubeconfig) as c:
        sb = c.create_sandbox("pool", ns, 90)
        assert sb.commands.run("true").exit_code == 0
        pod = sb.get_pod_name()
        kube.delete(CLAIM, sb.claim_name, ns)
        wait_for(lambda: kube.get("sandbox", sb.sandbox_id, ns) is None, timeout=30,
                 desc="the Sandbox garbage-collected")
        wait_for(lambda: f"stopped sandboxd for pod {ns}/{pod}" in stack.pods.text(),
                 timeout=60, desc="its sandboxd stopped")
        with pytest.raises(sdk.SandboxNotFoundError, match="deleted while this client"):
            sb.commands.run("echo again")


# Run in a child process: its peak RSS says whether a body was held in memory.
STREAM_SCRIPT = """
import os, sys
sys.path.insert(0, {sdk!r})
import agent_sandbox_c as sdk
size = int(sys.argv[1])
c = sdk.SandboxClient(sdk.SandboxDirectConnectionConfig(api_url={url!r}), kubeconfig={kc!r})
sb = c.get_sandbox({claim!r}, {ns!r})
with open(sys.argv[2], "rb") as f:
    sb.files.write("big.bin", f, timeout=300)
n = sb.files.read("big.bin", timeout=300, destination=sys.argv[3])
assert n == size, n
# VmHWM, not ru_maxrss: that one keeps the parent's peak across fork + exec
print(next(ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("VmHWM:")))
"""


def test_fifty_megabytes_both_ways_through_the_router(kube, ns, stack, tmp_path):
    """A 50 MB file up and back down through router and sandboxd: the SDK
    process's peak RSS grows by buffers, not by the file."""
    setup_pool(kube, ns, 1)
    with sdk.SandboxClient(stack.config(), kubeconfig=kube.kubeconfig) as c:
        sb = c.create_sandbox("pool", ns, 90)
        root = stack.pods.root_of(ns, sb.get_pod_name())

        def peak_kib(size):
            src, dest = tmp_path / f"src-{size}", tmp_path / f"dest-{size}"
            chunk = os.urandom(1 << 20)
            with open(src, "wb") as f:
                for _ in range(size >> 20):
                    f.write(chunk)
            script = STREAM_SCRIPT.format(
                sdk=os.path.dirname(os.path.dirname(sdk.__file__)), url=stack.url,
                kc=kube.kubeconfig, claim=sb.claim_name, ns=ns)
            env = sdk_child_env()
            out = subprocess.run([sys.executable, "-c", script, str(size), str(src), str(dest)],
                                 capture_output=True, text=True, timeout=600, env=env)
            assert out.returncode == 0, out.stderr[-4000:]
            assert os.path.getsize(os.path.join(root, "big.bin")) == size
            assert_same_file(src, dest)
            return int(out.stdout.split()[-1])

        small, big = peak_kib(1 << 20), peak_kib(50 << 20)
    print(f"SDK peak RSS: 1 MiB each way {small} KiB, 50 MiB each way {big} KiB")
    # holding either body would add 50 MiB; streaming adds buffers only
    assert big - small < 16 * 1024, f"peak RSS grew by {big - small} KiB for 49 MiB more"


def assert_same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            assert x == y, f"{b} differs from {a}"
            if not x:
                return


# ---------------------------------------------------------------- concurrency

N = 50


def test_fifty_threads_and_fifty_tasks_each_run_a_command(kube, ns, stack):
    """50 sandboxes from 50 threads (sync client) while 50 asyncio tasks
    (async client) create 50 more, on a pool of 10: 100 claims in flight;
    each sandbox then runs a command of its own through the router."""
    setup_pool(kube, ns, 10)
    errors = []
    outputs = {}

    def one(c, i):
        try:
            sb = c.create_sandbox("pool", ns, 180, {"by": "thread"})
            r = sb.commands.run(f"echo thread-{i}", timeout=120)
            outputs[f"thread-{i}"] = (sb.sandbox_id, r.stdout, r.exit_code)
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors.append(f"thread {i}: {e!r}")

    async def task(c, i):
        sb = await c.create_sandbox("pool", ns, 180, {"by": "task"})
        r = await sb.commands.run(f"echo task-{i}", timeout=120)
        outputs[f"task-{i}"] = (sb.sandbox_id, r.stdout, r.exit_code)

    async def tasks():
        async with sdk.AsyncSandboxClient(stack.config(), kubeconfig=kube.kubeconfig) as c:
            res = await asyncio.gather(*(task(c, i) for i in range(N)), return_exceptions=True)
            errors.extend(f"task {i}: {e!r}" for i, e in enumerate(res) if e is not None)
            return await c.list_all_sandboxes(ns, "by=task")

    t0 = time.monotonic()
    with sdk.SandboxClient(stack.config(), kubeconfig=kube.kubeconfig) as sync_client:
        threads = [threading.Thread(target=one, args=(sync_client, i)) for i in range(N)]
        for t in threads:
            t.start()
        by_task = asyncio.run(tasks())
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        assert errors == [], "\n".join(errors[:10])
        assert len(by_task) == N and len(sync_client.list_all_sandboxes(ns, "by=thread")) == N
        launch = [s["metadata"]["labels"]["agents.x-k8s.io/launch-type"]
                  for s in kube.list("sandbox", ns, selector="agents.x-k8s.io/claim-uid")]
    print(f"{2 * N} sandboxes created and each ran a command in {elapsed:.1f} s "
          f"({launch.count('warm')} warm, {launch.count('cold')} cold)")
    assert len(outputs) == 2 * N
    wrong = {k: v for k, v in outputs.items() if v[1:] != (f"{k}\n", 0)}
    assert wrong == {}, "commands whose output was not their own"
    assert len({v[0] for v in outputs.values()}) == 2 * N, "a Sandbox was handed out twice"
    wait_for(lambda: claims(kube, ns) == [], timeout=60, desc="every claim deleted")


# ---------------------------------------------------------------- compatibility

UPSTREAM_SCRIPT = """
import json, sys
from k8s_agent_sandbox import SandboxClient
from k8s_agent_sandbox.models import SandboxDirectConnectionConfig
c = SandboxClient(connection_config=SandboxDirectConnectionConfig(api_url=sys.argv[1]))
sb = c.create_sandbox("pool", namespace=sys.argv[2], sandbox_ready_timeout=120)
r = sb.commands.run("echo 'Hello from SDK'")
sb.files.write("test.txt", b"from the upstream client")
out = {"claim": sb.claim_name, "sandbox": sb.sandbox_id, "stdout": r.stdout,
       "stderr": r.stderr, "exit_code": r.exit_code,
       "read": sb.files.read("test.txt").decode(),
       "list": [e.name for e in sb.files.list(".")],
       "exists": sb.files.exists("test.txt"), "missing": sb.files.exists("nope.txt")}
pod = sb.get_pod_name()
out["pod"] = pod
print("RESULT " + json.dumps(out), flush=True)
sb.terminate()
"""


def test_upstream_client_through_our_stack(kube, ns, stack):
    """The upstream Python client, unchanged (k8s-agent-sandbox 1.0.8), in
    direct mode against our router: it claims from our warm pool, waits on
    our controller's conditions, runs a command and moves a file through
    our router and sandboxd, and terminates."""
    if not os.path.isdir(os.path.join(UPSTREAM_CLIENT, "k8s_agent_sandbox")):
        msg = f"the upstream client is not installed in {UPSTREAM_CLIENT} (tools/install-deps)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    setup_pool(kube, ns, 2)
    members = {s["metadata"]["name"] for s in kube.list("sandbox", ns)}
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "PYTHONPATH") and not k.startswith("ASAN")}
    env.update(PYTHONPATH=UPSTREAM_CLIENT, KUBECONFIG=kube.kubeconfig)
    p = subprocess.run([sys.executable, "-c", UPSTREAM_SCRIPT, stack.url, ns],
                       capture_output=True, text=True, timeout=300, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    assert p.returncode == 0 and lines, \
        f"upstream client failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    out = json.loads(lines[0][len("RESULT "):])
    assert out["sandbox"] in members, "not a member of our warm pool"
    assert (out["stdout"], out["stderr"], out["exit_code"]) == ("Hello from SDK\n", "", 0)
    assert out["read"] == "from the upstream client"
    assert out["list"] == ["test.txt"] and out["exists"] is True and out["missing"] is False
    wait_for(lambda: claims(kube, ns) == [], timeout=15, desc="terminate deleted the claim")
    wait_for(lambda: f"stopped sandboxd for pod {ns}/{out['pod']}" in stack.pods.text(),
             timeout=60, desc="its sandboxd stopped")


def test_sandboxd_pods_follows_the_pods(kube, ns, stack):
    """The harness itself: a pod gets its sandboxd on its IP as that pod's
    runAsUser, with the container's own flags; a deleted pod's sandboxd
    stops (SIGTERM, exit 0) and its directory goes."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "rt"},
           "spec": {"securityContext": {"runAsUser": 1000, "runAsGroup": 1000},
                    "containers": [{"name": "s", "image": "sandboxd:dev",
                                    "args": ["--listen-host=0.0.0.0", "--root-dir=/workspace",
                                             "--runtime-port=0"]}]}}
    kube.create(pod, ns)
    wait_for(lambda: f"started sandboxd for pod {ns}/rt" in stack.pods.text(), timeout=60,
             desc="sandboxd started for the pod")
    ip = kube.get("pod", "rt", ns)["status"]["podIP"]
    pid = int(stack.pods.text().split(f"started sandboxd for pod {ns}/rt on {ip} (pid ")[1]
              .split(")")[0])
    with open(f"/proc/{pid}/status") as f:
        uid = next(ln.split()[1] for ln in f if ln.startswith("Uid:"))
    if os.geteuid() == 0:
        assert uid == "1000", "sandboxd does not run as the pod's runAsUser"
    root = stack.pods.root_of(ns, "rt")
    with open(f"/proc/{pid}/cmdline") as f:
        argv = f.read().split("\0")
    assert f"--listen-host={ip}" in argv and f"--root-dir={root}" in argv
    assert "--runtime-port=0" in argv and "--listen-host=0.0.0.0" not in argv
    kube.delete("pod", "rt", ns)
    wait_for(lambda: f"stopped sandboxd for pod {ns}/rt (pod deleted; exit 0)"
             in stack.pods.text(), timeout=60, desc="its sandboxd stopped")
    assert not os.path.exists(root)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_sandboxd_pods_killed_takes_its_sandboxds_along(kube, ns, stack, tmp_path):
    """sandboxd-pods SIGKILLed (no chance to stop anything): its sandboxds get
    SIGTERM from the kernel (parent-death signal) instead of living on with
    their pods' IPs and ports, which a restarted sandboxd-pods could then not
    bind. A second sandboxd-pods of its own, for an image the stack's ignores."""
    own = SandboxdPods(tmp_path, kube.kubeconfig,
                       ["--namespace", ns, "--image-match", "orphan-check"])
    pid = None

    def running():
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    def serving():
        try:
            with open(os.path.join(own.state, "logs", f"{ns}_orphan.log")) as f:
                return "sandboxd started" in f.read()
        except FileNotFoundError:
            return False

    try:
        kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan"},
                     "spec": {"containers": [{"name": "s", "image": "orphan-check:dev"}]}}, ns)
        wait_for(lambda: f"started sandboxd for pod {ns}/orphan" in own.text(), timeout=60,
                 desc="sandboxd started for the pod")
        pid = int(own.text().split(f"started sandboxd for pod {ns}/orphan on ")[1]
                  .split("(pid ")[1].split(")")[0])
        wait_for(serving, timeout=10, desc="sandboxd serving")
        assert running()
        assert own.stop(signal.SIGKILL) == -signal.SIGKILL
        wait_for(lambda: not running(), timeout=15, desc="the orphaned sandboxd stopped")
    finally:
        own.stop()
        if pid and running():  # the failure above: leave no orphan behind
            os.kill(pid, signal.SIGKILL)
        kube.delete("pod", "orphan", ns)
        shutil.rmtree(own.state, ignore_errors=True)
    assert f"sandboxd for pod {ns}/orphan" not in stack.pods.text()


def test_gated_pod_is_ready_only_once_its_sandboxd_listens(kube, ns, tmp_path):
    """A pod listing the sandboxd readiness gate: kwok runs it (an IP, phase
    Running) but leaves it not Ready while no sandboxd serves it; once one
    is started for it, the gate and Ready turn True, and by then sandboxd
    answers on the pod's IP. A sandboxd-pods of its own, for an image the
    stack's ignores, started after the pod."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
           "spec": {"readinessGates": [{"conditionType": SANDBOXD_GATE}],
                    "containers": [{"name": "s", "image": "gate-check:dev"}]}}
    kube.create(pod, ns)

    def conditions():
        p = kube.get("pod", "gated", ns)
        return {c["type"]: c["status"] for c in p["status"].get("conditions", [])}, p["status"]

    wait_for(lambda: conditions()[1].get("podIP"), timeout=60, desc="the pod running")
    time.sleep(2)  # time enough for anything that would mark it Ready
    conds, status = conditions()
    assert status["phase"] == "Running"
    assert (conds.get("Ready"), conds.get(SANDBOXD_GATE)) == ("False", "False"), conds
    ip = status["podIP"]

    def health():
        try:
            with urllib.request.urlopen(f"http://{ip}:8080/v1/health", timeout=5) as r:
                return r.status
        except OSError:
            return None
    assert health() is None

    own = SandboxdPods(tmp_path, kube.kubeconfig,
                       ["--namespace", ns, "--image-match", "gate-check"])
    try:
        wait_for(lambda: conditions()[0].get("Ready") == "True", timeout=60, desc="the pod Ready")
        assert health() == 200
        assert conditions()[0].get(SANDBOXD_GATE) == "True"
        assert f"pod {ns}/gated Ready: its sandboxd started" in own.text()
    finally:
        assert own.stop() == 0
        kube.delete("pod", "gated", ns)
        shutil.rmtree(own.state, ignore_errors=True)


def test_sandboxd_pods_restart_keeps_live_pods_files(kube, ns, tmp_path):
    """sandboxd-pods stopped and started again (as `tools/demo` does): a live
    pod's files are served again, as across a kubelet restart; a pod deleted
    while it was down loses its directory at the next start. A sandboxd-pods
    of its own, for an image the stack's ignores."""
    args = ["--namespace", ns, "--image-match", "restart-check"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "keep"},
           "spec": {"containers": [{"name": "s", "image": "restart-check:dev"}]}}
    os.makedirs(tmp_path / "first")
    first = SandboxdPods(tmp_path / "first", kube.kubeconfig, args)
    state = first.state
    try:
        kube.create(pod, ns)
        kube.create({**pod, "metadata": {"name": "gone"}}, ns)
        for name in ("keep", "gone"):
            wait_for(lambda: f"started sandboxd for pod {ns}/{name}" in first.text(), timeout=60,
                     desc=f"sandboxd started for {name}")
        keep, gone = first.root_of(ns, "keep"), first.root_of(ns, "gone")
        with open(os.path.join(keep, "notes.txt"), "w") as f:
            f.write("still here")
        assert first.stop() == 0
        assert os.path.isdir(keep) and os.path.isdir(gone)
        kube.delete("pod", "gone", ns, wait=True)

        os.makedirs(tmp_path / "second")
        second = SandboxdPods(tmp_path / "second", kube.kubeconfig, args, state=state)
        try:
            wait_for(lambda: f"started sandboxd for pod {ns}/keep" in second.text(), timeout=60,
                     desc="sandboxd started again for keep")
            assert second.root_of(ns, "keep") == keep
            ip = kube.get("pod", "keep", ns)["status"]["podIP"]

            def served():
                try:
                    with urllib.request.urlopen(f"http://{ip}:8080/v1/files/notes.txt",
                                                timeout=5) as r:
                        return r.read()
                except OSError:
                    return None
            assert wait_for(served, timeout=20, desc="notes.txt served again") == b"still here"
            assert not os.path.exists(gone), "the deleted pod's directory was kept"
        finally:
            assert second.stop() == 0
    finally:
        first.stop()
        kube.delete("pod", "keep", ns)
        shutil.rmtree(state, ignore_errors=True)
