"""The Python SDK (sdk-python/, package agent_sandbox_c, over libsandbox's
client C API) against the real control plane, with the extension
controllers running (fixture `extensions_controller`): the control-plane
side of the SDK, and the modes the whole-stack tests (test_stack.py) do not
take.

- create from a warm pool and cold (a zero-replica pool), the claim the SDK
  writes (docs/upstream.md#claim-manifest: name, labels, UTC ISO-8601 annotation,
  lifecycle, volume claim templates, additional pod metadata) and what the
  controller makes of it;
- the wait of docs/upstream.md#readiness-wait: fail-fast TemplateNotFound / WarmPoolNotFound (the
  specific exception, long before the timeout), a ready timeout that leaves
  no claim behind, an asyncio task cancelled mid-wait;
- get / list / delete, status, pod name and IP;
- a sandbox deleted under the client: the next call says so;
- in-cluster mode against sandboxd on the pod's IP; gateway mode (a
  stand-in router on port 80).

The SDK talks to the API server as the cluster admin (a user's kubeconfig).
The wire details (headers, bodies, retries, the kubectl tunnel) are tested in
test_sdk_wire.py against a stand-in; SDK -> router -> sandboxd, concurrency
and the upstream client in test_stack.py.
"""
import asyncio
import datetime
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, condition, sdk_child_env, wait_for
from test_sandbox import IMAGE
from test_sdk_wire import Standin, headers

import agent_sandbox_c as sdk

pytestmark = pytest.mark.usefixtures("extensions_controller")

EXT_API = "extensions.agents.x-k8s.io/v1beta1"
CLAIM = "sandboxclaims.extensions.agents.x-k8s.io"
POOL = "sandboxwarmpools.extensions.agents.x-k8s.io"
A_REQUESTED = "agents.x-k8s.io/client-first-requested-at"
# A router address nobody listens on: these tests make no data-path call
# that should succeed.
NOWHERE = sdk.SandboxDirectConnectionConfig(api_url="http://127.0.0.1:9", max_retries=0)


def template(name, podspec=None, **fields):
    spec = podspec or {"containers": [{"name": "main", "image": IMAGE}]}
    return {"apiVersion": EXT_API, "kind": "SandboxTemplate", "metadata": {"name": name},
            "spec": {"podTemplate": {"spec": spec}, **fields}}


def pool(name, tpl, replicas):
    return {"apiVersion": EXT_API, "kind": "SandboxWarmPool", "metadata": {"name": name},
            "spec": {"replicas": replicas, "sandboxTemplateRef": {"name": tpl}}}


def setup_pool(kube, ns, replicas, name="pool", tpl_fields=None, podspec=None):
    """A template and a pool of `replicas`, waited until all are Ready."""
    kube.create({"apiVersion": "v1", "kind": "List", "items": [
        template(name + "-tpl", podspec, **(tpl_fields or {})),
        pool(name, name + "-tpl", replicas)]}, ns)
    if replicas:
        wait_for(lambda: ((kube.get(POOL, name, ns) or {}).get("status") or {})
                 .get("readyReplicas") == replicas, timeout=90, desc=f"pool {name} ready")
    return name


@pytest.fixture
def client(kube):
    c = sdk.SandboxClient(NOWHERE, kubeconfig=kube.kubeconfig)
    yield c
    c.delete_all()


def claims(kube, ns):
    return [c["metadata"]["name"] for c in kube.list(CLAIM, ns)]


# ---------------------------------------------------------------- create


def test_create_cold_from_zero_replica_pool(kube, ns, client):
    setup_pool(kube, ns, 0)
    before = datetime.datetime.now(datetime.timezone.utc)
    sb = client.create_sandbox("pool", namespace=ns, sandbox_ready_timeout=60,
                               labels={"app": "sdk-test"})
    assert sb.claim_name.startswith("sandbox-claim-") and len(sb.claim_name) == 22
    assert sb.sandbox_id == sb.claim_name  # cold: the Sandbox is named after the claim
    assert sb.namespace == ns and sb.is_active
    claim = kube.get(CLAIM, sb.claim_name, ns)
    assert condition(claim, "Ready")["status"] == "True"
    md = claim["metadata"]
    assert md["labels"] == {"app": "sdk-test", "agents.x-k8s.io/created-by": "python-client"}
    stamp = datetime.datetime.fromisoformat(md["annotations"][A_REQUESTED])
    assert stamp.utcoffset() == datetime.timedelta(0), md["annotations"][A_REQUESTED]
    assert before - datetime.timedelta(seconds=1) <= stamp <= datetime.datetime.now(
        datetime.timezone.utc)
    assert claim["spec"] == {"warmPoolRef": {"name": "pool"}}
    sandbox = kube.get("sandbox", sb.sandbox_id, ns)
    assert sandbox["metadata"]["labels"]["agents.x-k8s.io/launch-type"] == "cold"
    assert sb.status() == ("SandboxReady", condition(sandbox, "Ready")["message"])
    assert sb.get_pod_name() == sb.sandbox_id
    pod = kube.get("pod", sb.sandbox_id, ns)
    assert sb.get_pod_ip() == pod["status"]["podIP"] and sb.get_pod_ip().startswith("127.")
    assert sb.get_sandbox_name_hash() == \
        sandbox["status"]["selector"].split("=", 1)[1]
    assert client.list_active_sandboxes() == [(ns, sb.claim_name)]


def test_create_warm_adopts_a_pool_member(kube, ns, client):
    setup_pool(kube, ns, 2)
    members = {s["metadata"]["name"] for s in kube.list("sandbox", ns)}
    sb = client.create_sandbox("pool", namespace=ns)
    assert sb.sandbox_id in members and sb.sandbox_id != sb.claim_name
    sandbox = kube.get("sandbox", sb.sandbox_id, ns)
    assert sandbox["metadata"]["labels"]["agents.x-k8s.io/launch-type"] == "warm"
    # the pod keeps its pool name (the Sandbox's pod-name annotation)
    assert sb.get_pod_name() == \
        sandbox["metadata"].get("annotations", {}).get("agents.x-k8s.io/pod-name", sb.sandbox_id)
    assert kube.get("pod", sb.get_pod_name(), ns)["status"]["podIP"] == sb.get_pod_ip()
    assert client.get_sandbox_claim_warmpool_name(sb.claim_name, ns) == "pool"


def test_claim_options_reach_the_claim_and_the_pod(kube, ns, client):
    setup_pool(kube, ns, 0, tpl_fields={"volumeClaimTemplatesPolicy": "Allowed"})
    vct = {"metadata": {"name": "data"},
           "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}
    t0 = datetime.datetime.now(datetime.timezone.utc)
    sb = client.create_sandbox(
        "pool", ns, 90, {"team": "a"}, claim_name="my-claim", shutdown_after_seconds=3600,
        volume_claim_templates=[vct], pod_labels={"sandbox.users.io/run": "r1"},
        pod_annotations={"example.com/note": "hello"})
    assert sb.claim_name == "my-claim"
    spec = kube.get(CLAIM, "my-claim", ns)["spec"]
    assert spec["lifecycle"]["shutdownPolicy"] == "Delete"
    at = datetime.datetime.strptime(spec["lifecycle"]["shutdownTime"], "%Y-%m-%dT%H:%M:%SZ") \
        .replace(tzinfo=datetime.timezone.utc)
    assert t0 + datetime.timedelta(seconds=3598) <= at <= t0 + datetime.timedelta(seconds=3602)
    assert spec["volumeClaimTemplates"] == [vct]
    assert spec["additionalPodMetadata"] == {"labels": {"sandbox.users.io/run": "r1"},
                                             "annotations": {"example.com/note": "hello"}}
    pod = kube.get("pod", sb.get_pod_name(), ns)
    assert pod["metadata"]["labels"]["sandbox.users.io/run"] == "r1"
    assert pod["metadata"]["annotations"]["example.com/note"] == "hello"
    pvc = kube.get("pvc", f"data-{sb.sandbox_id}", ns)
    assert pvc is not None, "the claim's volume claim template made no PVC"
    assert any(v.get("persistentVolumeClaim", {}).get("claimName") == f"data-{sb.sandbox_id}"
               for v in pod["spec"].get("volumes", []))


def test_bad_arguments_are_refused_before_anything_is_created(kube, ns, client):
    cases = [
        (dict(warmpool=""), "warmpool name cannot be empty"),
        (dict(warmpool="p", labels={"-bad": "x"}), 'invalid label key "-bad"'),
        (dict(warmpool="p", labels={"ok": "bad value"}), 'invalid label value "bad value"'),
        (dict(warmpool="p", shutdown_after_seconds=0), "shutdown_after_seconds"),
        (dict(warmpool="p", shutdown_after_seconds=True), "shutdown_after_seconds"),
        (dict(warmpool="p", pod_labels={"a/b/c": "x"}), 'invalid pod label key "a/b/c"'),
        (dict(warmpool="p", volume_claim_templates={"not": "a list"}), "must be a list"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            client.create_sandbox(namespace=ns, **kwargs)
    assert claims(kube, ns) == []


# ---------------------------------------------------------------- failures of the wait


@pytest.mark.parametrize("pool_name,exc,message", [
    ("orphan", sdk.SandboxTemplateNotFoundError,
     "SandboxTemplate requested does not exist: .*no-such-template"),
    ("no-such-pool", sdk.SandboxWarmPoolNotFoundError,
     "SandboxWarmPool requested does not exist: .*no-such-pool"),
])
def test_missing_template_or_pool_fails_fast_and_cleans_up(kube, ns, client, pool_name, exc,
                                                           message):
    kube.create(pool("orphan", "no-such-template", 0), ns)
    t0 = time.monotonic()
    with pytest.raises(exc, match=message):
        client.create_sandbox(pool_name, ns, sandbox_ready_timeout=60)
    elapsed = time.monotonic() - t0
    print(f"{exc.__name__} raised after {elapsed:.3f} s (timeout 60 s)")
    assert elapsed < 30, "raised at the timeout, not when the controller reported it"
    wait_for(lambda: claims(kube, ns) == [], timeout=10, desc="the failed claim deleted")


def unschedulable(kube, ns):
    """A pool whose pods can never run (no node matches): claims never get Ready."""
    return setup_pool(kube, ns, 0, name="stuck", podspec={
        "nodeSelector": {"no-such-label": "x"},
        "containers": [{"name": "main", "image": IMAGE}]})


def test_ready_timeout_raises_and_leaves_no_claim(kube, ns, client):
    unschedulable(kube, ns)
    with pytest.raises(TimeoutError, match=r"Could not resolve claim readiness from claim "
                                           r"'sandbox-claim-[0-9a-f]{8}' within 2 seconds\."):
        client.create_sandbox("stuck", ns, sandbox_ready_timeout=2)
    wait_for(lambda: claims(kube, ns) == [], timeout=10, desc="the timed-out claim deleted")
    assert client.list_active_sandboxes() == []


def test_terminal_reason_raises_claim_failed(kube, ns, client):
    # VCTs on a template whose policy disallows them: VolumeClaimTemplatesError
    setup_pool(kube, ns, 0)
    vct = {"metadata": {"name": "data"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    with pytest.raises(sdk.SandboxClaimFailedError,
                       match="failed with terminal reason VolumeClaimTemplatesError: ") as e:
        client.create_sandbox("pool", ns, 60, volume_claim_templates=[vct])
    assert e.value.reason == "VolumeClaimTemplatesError"
    wait_for(lambda: claims(kube, ns) == [], timeout=10, desc="the failed claim deleted")


def test_cancelled_async_create_deletes_its_claim(kube, ns):
    unschedulable(kube, ns)

    async def main():
        async with sdk.AsyncSandboxClient(NOWHERE, kubeconfig=kube.kubeconfig) as c:
            task = asyncio.create_task(c.create_sandbox("stuck", ns, sandbox_ready_timeout=60))
            await asyncio.to_thread(wait_for, lambda: claims(kube, ns), 20, 0.1, "claim created")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    asyncio.run(main())
    wait_for(lambda: claims(kube, ns) == [], timeout=15, desc="the cancelled claim deleted")


INTERRUPT_SCRIPT = """
import faulthandler, signal, sys, time
faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's post-mortem
# A job a shell starts in the background inherits SIGINT ignored, and then
# Python installs no KeyboardInterrupt handler: give the child the one an
# interactive user has, whatever ran the suite.
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {sdk!r})
import agent_sandbox_c as sdk
c = sdk.SandboxClient(sdk.SandboxDirectConnectionConfig(api_url="http://127.0.0.1:9"),
                      kubeconfig={kc!r})
print("waiting", flush=True)
t0 = time.monotonic()
try:
    c.create_sandbox("stuck", {ns!r}, sandbox_ready_timeout=120)
except KeyboardInterrupt:
    print("interrupted after %.1f s" % (time.monotonic() - t0), flush=True)
    sys.exit(3)
"""


def test_ctrl_c_ends_a_sync_create_and_deletes_its_claim(kube, ns):
    """The plain client's create_sandbox() on the main thread: SIGINT
    (Ctrl-C) raises KeyboardInterrupt during the wait, not after the ready
    timeout, and the claim is deleted."""
    unschedulable(kube, ns)
    env = sdk_child_env()
    script = INTERRUPT_SCRIPT.format(sdk=os.path.dirname(os.path.dirname(sdk.__file__)),
                                     kc=kube.kubeconfig, ns=ns)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "waiting"
        wait_for(lambda: claims(kube, ns), timeout=30, desc="the claim created")
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            # where every thread of the child is: its stacks on stderr
            p.send_signal(signal.SIGUSR1)
            time.sleep(2)
            p.kill()
            out, err = p.communicate()
            raise AssertionError(f"no exit 60 s after SIGINT; stdout {out!r}; stacks:\n{err[-6000:]}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 3, f"exit {p.returncode}: {out} {err[-2000:]}"
    assert "interrupted after" in out
    wait_for(lambda: claims(kube, ns) == [], timeout=15, desc="the interrupted claim deleted")


# ---------------------------------------------------------------- the data path


def start_sandboxd(host, root, logdir):
    """sandboxd (cmd/sandboxd) on a pod's loopback IP, as the pod would run
    it: python-runtime API on 8888, REST on 8080 (each pod has its own IP)."""
    binary = os.path.join(os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build")),
                          "cmd", "sandboxd", "sandboxd")
    log = open(os.path.join(str(logdir), f"sandboxd-{host}.log"), "w")
    proc = subprocess.Popen([binary, "--listen-host", host, "--runtime-port", "8888",
                             "--rest-port", "8080", "--root-dir", str(root)],
                            stdout=log, stderr=subprocess.STDOUT)

    def up():
        assert proc.poll() is None, f"sandboxd exited {proc.returncode}"
        with socket.socket() as sock:
            return sock.connect_ex((host, 8888)) == 0
    wait_for(up, timeout=20, interval=0.05, desc=f"sandboxd on {host}:8888")
    return proc


def test_in_cluster_mode_against_sandboxd(kube, ns, tmp_path):
    """SandboxInClusterConnectionConfig: straight to http://<pod IP>:8888 from
    the Sandbox's status (no router), served by the real sandboxd on the
    pod's loopback IP: the docs/upstream.md#upstream-e2e-scenarios command and file round trip; then the sandbox
    is deleted under the client (and its runtime stops, as the pod's would):
    the next call says so."""
    setup_pool(kube, ns, 0)
    with sdk.SandboxClient(NOWHERE, kubeconfig=kube.kubeconfig) as c:
        created = c.create_sandbox("pool", ns)
        ip = created.get_pod_ip()
        runtime = start_sandboxd(ip, tmp_path / "workspace", tmp_path)
        try:
            other = sdk.SandboxClient(sdk.SandboxInClusterConnectionConfig(max_retries=0),
                                      kubeconfig=kube.kubeconfig)
            sb = other.get_sandbox(created.claim_name, ns)
            r = sb.commands.run("echo 'Hello from SDK'")
            assert (r.stdout, r.stderr, r.exit_code) == ("Hello from SDK\n", "", 0)
            sb.files.write("test.txt", b"Hello, file!")
            assert sb.files.read("test.txt") == b"Hello, file!"
            assert (tmp_path / "workspace" / "test.txt").read_bytes() == b"Hello, file!"
            assert [(e.name, e.type, e.size) for e in sb.files.list(".")] == [
                ("test.txt", "file", 12)]
            assert sb.files.exists("test.txt") and not sb.files.exists("nope.txt")

            c.delete_sandbox(created.claim_name, ns)
            wait_for(lambda: kube.get("sandbox", created.sandbox_id, ns) is None, timeout=30,
                     desc="the Sandbox garbage-collected")
            runtime.terminate()
            runtime.wait(20)
            with pytest.raises(sdk.SandboxNotFoundError, match="deleted while this client"):
                sb.commands.run("echo again")
        finally:
            if runtime.poll() is None:
                runtime.kill()
                runtime.wait()
        assert runtime.returncode == 0, "sandboxd did not exit cleanly on SIGTERM"


GATEWAY_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gateways.gateway.networking.k8s.io",
                 "annotations": {"api-approved.kubernetes.io":
                                 "https://github.com/kubernetes-sigs/gateway-api/pull/891"}},
    "spec": {"group": "gateway.networking.k8s.io", "scope": "Namespaced",
             "names": {"plural": "gateways", "singular": "gateway", "kind": "Gateway"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.mark.skipif(os.geteuid() != 0, reason="the stand-in router must listen on port 80")
def test_gateway_mode_waits_for_an_address(kube, ns, tmp_path):
    """SandboxGatewayConnectionConfig: the first valid status.addresses[] of
    the Gateway (a minimal Gateway CRD here: no Gateway API controller runs
    on the local control plane), watched until it appears; invalid values
    are skipped; requests go to http://<address> (port 80)."""
    if not kube.get("crd", GATEWAY_CRD["metadata"]["name"]):
        kube.apply(GATEWAY_CRD)
        kube.run("wait", "--for=condition=Established", "--timeout=60s",
                 "crd/" + GATEWAY_CRD["metadata"]["name"])
    kube.create({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
                 "metadata": {"name": "gw"}, "spec": {}}, ns)
    router = Standin(tmp_path, host="127.0.0.77", port=80)
    client = _native_client(kube)
    sb = sdk.Sandbox("claim-x", "sbx-x", ns, sdk.SandboxGatewayConnectionConfig(
        gateway_name="gw", gateway_namespace=ns, gateway_ready_timeout=30), k8s_helper=client,
        pod_ip="10.0.0.9")

    def publish():
        time.sleep(1)
        kube.patch("gateways.gateway.networking.k8s.io", "gw", ns, {"status": {"addresses": [
            {"value": "0x7f000001"}, {"value": ""}, {"value": "127.0.0.77"}]}},
            subresource="status")
    t = threading.Thread(target=publish)
    t.start()
    try:
        assert sb.commands.run("via gateway").stdout == "ran: via gateway\n"
        assert headers(router.last())["host"] == "127.0.0.77"
        assert headers(router.last())["x-sandbox-id"] == "sbx-x"
    finally:
        t.join()
        router.stop()
    sb2 = sdk.Sandbox("claim-y", "sbx-y", ns, sdk.SandboxGatewayConnectionConfig(
        gateway_name="no-such-gw", gateway_namespace=ns, gateway_ready_timeout=2),
        k8s_helper=client, pod_ip="10.0.0.9")
    with pytest.raises(TimeoutError, match="no-such-gw got no address within 2 seconds"):
        sb2.commands.run("never")


def _native_client(kube):
    from agent_sandbox_c import _native
    return _native.Client(kube.kubeconfig)


# ---------------------------------------------------------------- get, list, delete


def test_get_list_delete(kube, ns, client):
    setup_pool(kube, ns, 1)
    a = client.create_sandbox("pool", ns, labels={"batch": "one"})
    b = client.create_sandbox("pool", ns, labels={"batch": "two"})
    assert sorted(client.list_all_sandboxes(ns)) == sorted([a.claim_name, b.claim_name])
    assert client.list_all_sandboxes(ns, label_selector="batch=two") == [b.claim_name]
    assert client.get_sandbox(a.claim_name, ns) is a  # the tracked, active handle

    other = sdk.SandboxClient(NOWHERE, kubeconfig=kube.kubeconfig)
    again = other.get_sandbox(b.claim_name, ns)
    assert again is not b and again.sandbox_id == b.sandbox_id and again.claim_name == b.claim_name
    assert other.list_active_sandboxes() == [(ns, b.claim_name)]
    with pytest.raises(sdk.SandboxNotFoundError):
        other.get_sandbox("no-such-claim", ns)

    client.delete_sandbox(a.claim_name, ns)
    assert not a.is_active and a.commands is None and a.files is None
    wait_for(lambda: claims(kube, ns) == [b.claim_name], timeout=10, desc="claim a deleted")
    assert client.list_active_sandboxes() == [(ns, b.claim_name)]
    client.delete_sandbox("no-such-claim", ns)  # logged, not raised

    b.close_connection()  # keeps the claim
    assert not b.is_active and claims(kube, ns) == [b.claim_name]
    assert client.list_active_sandboxes() == []
    reopened = client.get_sandbox(b.claim_name, ns)
    assert reopened is not b and reopened.is_active
    with reopened:
        pass  # terminates on exit
    reopened.terminate()  # idempotent
    wait_for(lambda: claims(kube, ns) == [], timeout=10, desc="claim b deleted")


def test_sandbox_deleted_under_the_client(kube, ns, client):
    setup_pool(kube, ns, 0)
    sb = client.create_sandbox("pool", ns)
    kube.delete(CLAIM, sb.claim_name, ns)
    wait_for(lambda: kube.get("sandbox", sb.sandbox_id, ns) is None, timeout=30,
             desc="the Sandbox garbage-collected")
    assert sb.status()[0] == "SandboxNotFound"
    # the data path fails (nothing answers), and the error says why
    with pytest.raises(sdk.SandboxNotFoundError, match="no longer exists: it was deleted"):
        sb.commands.run("echo hi")
    with pytest.raises(sdk.SandboxNotFoundError):
        client.get_sandbox(sb.claim_name, ns)
    sb.terminate()  # the claim is gone already: fine
