"""The Python SDK (agent_sandbox_c) as a drop-in for upstream's
k8s_agent_sandbox: every public name of upstream's modules imports from
ours at the same module path (the list read from the installed upstream
packages, 1.0.8 and 0.5.6, when the test runs), and the pieces that came
with that, against the local cluster (fixture `extensions_controller`):

- FileEntry in both upstream shapes (``modified``/``mode``, ``mod_time``);
- SandboxdInClusterConnectionConfig: by pod IP straight to sandboxd, by
  Service (SandboxNoServiceError, alias SandboxServiceUnavailableError,
  when the Sandbox has none);
- AsyncFilesystem.delete (NotImplementedError on the python-runtime API);
- get_metrics(): the discovery latency histogram, observed by libsandbox's
  connect hook, in a text format Prometheus' own parser reads;
- OpenTelemetry spans with upstream's names and attributes (in-memory
  exporter of opentelemetry-sdk), and none, without an import error, when
  opentelemetry is absent.
"""
import ast
import asyncio
import datetime
import importlib
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, sdk_child_env, wait_for
from test_sdk import CLAIM, NOWHERE, setup_pool, start_sandboxd

import agent_sandbox_c as sdk
from agent_sandbox_c import metrics

CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                     "agent-sandbox")
UPSTREAMS = {  # installed by tools/install-deps
    "1.0.8": os.environ.get("AGENT_SANDBOX_UPSTREAM_CLIENT",
                            os.path.join(CACHE, "k8s-agent-sandbox-1.0.8")),
    "0.5.6": os.environ.get("AGENT_SANDBOX_UPSTREAM_CLIENT_056",
                            os.path.join(CACHE, "k8s-agent-sandbox-0.5.6")),
}

# Names every upstream module has that are no API: its module logger and
# its typing variables.
NOT_API = {"logger", "T", "P", "R"}

# What we deliberately do not provide, module by module ("*": the whole
# module), and why.
OMITTED = {
    # The transport and Kubernetes plumbing behind the clients: in this
    # package it is libsandbox's C (sandbox/handle.h, client.h), reached as
    # Sandbox.connector and SandboxClient.k8s_helper with other methods.
    # Classes of the same names with different methods would mislead.
    "connector": "*", "async_connector": "*", "k8s_helper": "*", "async_k8s_helper": "*",
    # upstream's helper functions (claim manifest, label checks, pod IP
    # choice, kubeconfig arguments): libsandbox's sbx_claim_build(),
    # sbx_pick_pod_ip() and its label checks do this work in C
    "utils": "*", "pod_metadata": "*", "claim_adoption": "*",
    # the computer-use agent endpoint (a runtime this project has not) and
    # GKE pod snapshots (GKE's PodSnapshot API)
    "extensions": "*", "extensions.computer_use": "*",
    "gke_extensions.snapshots": "*", "gke_extensions.snapshots.podsnapshot_client": "*",
    "gke_extensions.snapshots.sandbox_with_snapshot_support": "*",
    "gke_extensions.snapshots.snapshot_engine": "*", "gke_extensions.snapshots.utils": "*",
    "models": {
        # 1.0.8's pydantic wire models of requests the C core builds itself
        "LegacyExecuteRequest", "SandboxClaimEnvVar", "AdditionalPodMetadata",
    },
    "trace_manager": {
        # opentelemetry-sdk's own classes, which upstream imports into the
        # module when installed: import them from opentelemetry
        "OTLPSpanExporter", "Resource", "TracerProvider", "BatchSpanProcessor",
    },
    "files.filesystem": {"BinaryWriter"},              # 1.0.8's typing Protocols
    "files.async_filesystem": {"AsyncBinaryWriter"},
}


def public_names(pkg_dir):
    """{module path below the package: [names]} of an installed upstream
    package, read from its sources (no import: its dependencies need not be
    installed): top-level classes, functions and assignments, and what the
    package __init__ files import, skipping _private names, modules and
    tests."""
    root = os.path.join(pkg_dir, "k8s_agent_sandbox")
    out = {}
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(("_", ".")) and d not in ("test", "tests"))
        for f in sorted(files):
            if not f.endswith(".py") or (f.startswith("_") and f != "__init__.py"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)[:-3].replace(os.sep, ".")
            mod = rel[:-len(".__init__")] if rel.endswith(".__init__") else rel
            mod = "" if mod == "__init__" else mod
            tree = ast.parse(open(os.path.join(dirpath, f), encoding="utf-8").read())
            names = []
            for node in tree.body:
                body = [node] + (node.body if isinstance(node, ast.Try) else [])
                for n in body:
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        names.append(n.name)
                    elif isinstance(n, ast.Assign):
                        names += [t.id for t in n.targets if isinstance(t, ast.Name)]
                    elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                        names.append(n.target.id)
                    # trace_manager re-exports what it imports from
                    # opentelemetry inside its try block
                    elif isinstance(n, ast.ImportFrom) and (
                            f == "__init__.py" or (mod == "trace_manager" and n is not node)):
                        names += [a.asname or a.name for a in n.names]
            out[mod] = sorted({n for n in names if not n.startswith("_")} - {"__all__"})
    return out


@pytest.mark.parametrize("version", sorted(UPSTREAMS))
def test_upstream_names_import_from_the_same_module_path(version):
    pkg = UPSTREAMS[version]
    if not os.path.isdir(os.path.join(pkg, "k8s_agent_sandbox")):
        msg = f"k8s-agent-sandbox {version} is not installed in {pkg} (tools/install-deps)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    modules = public_names(pkg)
    assert "sandbox_client" in modules and "files.filesystem" in modules, modules.keys()
    missing, checked = [], 0
    for mod, names in sorted(modules.items()):
        omitted = OMITTED.get(mod, set())
        if omitted == "*":
            continue
        path = "agent_sandbox_c" + ("." + mod if mod else "")
        try:
            ours = importlib.import_module(path)
        except ImportError as e:
            missing.append(f"{path}: {e}")
            continue
        for name in names:
            if name in NOT_API or name in omitted:
                continue
            checked += 1
            if not hasattr(ours, name):
                missing.append(f"from {path} import {name}")
    assert not missing, "upstream names we lack:\n" + "\n".join(missing)
    assert checked > 60


def test_same_objects_under_every_path():
    from agent_sandbox_c.async_sandbox import AsyncSandbox
    from agent_sandbox_c.async_sandbox_client import AsyncSandboxClient
    from agent_sandbox_c.commands.async_command_executor import AsyncCommandExecutor
    from agent_sandbox_c.commands.command_executor import CommandExecutor
    from agent_sandbox_c.exceptions import SandboxNoServiceError, SandboxServiceUnavailableError
    from agent_sandbox_c.files.async_filesystem import AsyncFilesystem
    from agent_sandbox_c.files.filesystem import Filesystem
    from agent_sandbox_c.metrics_utils import get_metrics
    from agent_sandbox_c.sandbox_client import SandboxClient
    assert (SandboxClient, AsyncSandboxClient, AsyncSandbox) == \
        (sdk.SandboxClient, sdk.AsyncSandboxClient, sdk.AsyncSandbox)
    assert (Filesystem, AsyncFilesystem, CommandExecutor, AsyncCommandExecutor) == \
        (sdk.Filesystem, sdk.AsyncFilesystem, sdk.CommandExecutor, sdk.AsyncCommandExecutor)
    assert SandboxServiceUnavailableError is SandboxNoServiceError is sdk.SandboxNoServiceError
    assert issubclass(SandboxNoServiceError, sdk.SandboxError)
    assert get_metrics is sdk.get_metrics


def test_file_entry_has_both_upstream_shapes():
    import datetime as dt
    old = sdk.FileEntry(name="a", size=1, type="file", mod_time=1700000000.25)   # 0.5.6
    assert old.modified == dt.datetime(2023, 11, 14, 22, 13, 20, 250000, dt.timezone.utc)
    new = sdk.FileEntry(name="a", size=1, type="file", modified=old.modified, mode="0644")  # 1.0.8
    assert new.mod_time == 1700000000.25 and new.mode == "0644"
    assert sdk.FileEntry.from_legacy({"name": "b", "size": 2, "type": "directory",
                                      "mod_time": 5.5}).modified.timestamp() == 5.5


def test_sandboxd_in_cluster_config_checks_as_upstream():
    c = sdk.SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip")
    assert (c.rest_port, c.grpc_port, c.runtime_port) == (8080, 9090, 8888)
    with pytest.warns(DeprecationWarning, match="use 'in-cluster-service'"):
        assert sdk.SandboxdInClusterConnectionConfig(mode="service-dns").mode == \
            "in-cluster-service"
    with pytest.raises(ValueError, match="must be different"):
        sdk.SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip", rest_port=9090)
    with pytest.raises(ValueError, match="mode must be"):
        sdk.SandboxdInClusterConnectionConfig(mode="pod")
    with pytest.raises(ValueError, match="grpc_port"):
        sdk.SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip", grpc_port=0)


def test_no_opentelemetry_no_spans_no_import_error(tmp_path):
    """With opentelemetry not importable, the package imports, tracing on is
    a no-op, and upstream's trace_manager names are there."""
    script = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import agent_sandbox_c as sdk\n"
        "from agent_sandbox_c.trace_manager import OPENTELEMETRY_AVAILABLE, trace, "
        "create_tracer_manager\n"
        "c = sdk.SandboxClient(sdk.SandboxDirectConnectionConfig(api_url='http://127.0.0.1:9'),"
        " sdk.SandboxTracerConfig(enable_tracing=True), kubeconfig=sys.argv[1])\n"
        "assert c.tracer is None and c.tracing_manager is None\n"
        "assert not trace.get_current_span().is_recording()\n"
        "print('ok', OPENTELEMETRY_AVAILABLE)\n")
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n"
                  "    server: https://127.0.0.1:9\ncontexts:\n- name: c\n  context:\n"
                  "    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n"
                  "  user: {}\n")
    env = sdk_child_env()
    env["PYTHONPATH"] = os.path.join(ROOT, "sdk-python")
    p = subprocess.run([sys.executable, "-c", script, str(kc)], capture_output=True,
                       text=True, timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 0 and p.stdout.strip() == "ok False", p.stdout + p.stderr


def discovery_count(mode, status):
    for name, labels, value in metrics.sandbox_client_discovery_latency_ms.samples():
        if name.endswith("_count") and labels == {"mode": mode, "status": status}:
            return value
    return 0.0


def test_metrics_text_reads_as_prometheus_text():
    """get_metrics() is upstream's shape: Prometheus text with the four
    histograms, upstream's buckets; Prometheus' own parser (from the
    upstream client's dependencies) reads it."""
    metrics.sandbox_client_discovery_latency_ms.labels(mode="gateway", status="success") \
        .observe(120.0)
    text = sdk.get_metrics()
    for h in ("discovery", "suspend", "resume", "restore"):
        assert f"# TYPE sandbox_client_{h}_latency_ms histogram" in text
    assert 'sandbox_client_discovery_latency_ms_bucket{le="240000.0",mode="gateway",' \
           'status="success"}' in text
    pkg = UPSTREAMS["1.0.8"]
    if not os.path.isdir(os.path.join(pkg, "prometheus_client")):
        pytest.skip("prometheus_client (a dependency of the upstream client) not installed")
    parse = ("import json, sys\n"
             "from prometheus_client.parser import text_string_to_metric_families as f\n"
             "print(json.dumps({m.name: [[s.name, s.labels, s.value] for s in m.samples]"
             " for m in f(sys.stdin.read())}))\n")
    p = subprocess.run([sys.executable, "-c", parse], input=text, capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, PYTHONPATH=pkg))
    assert p.returncode == 0, p.stderr
    fams = json.loads(p.stdout)
    samples = fams["sandbox_client_discovery_latency_ms"]
    le = [s[1]["le"] for s in samples if s[0].endswith("_bucket")
          and s[1].get("mode") == "gateway" and s[1].get("status") == "success"]
    assert le == ["100.0", "250.0", "500.0", "750.0", "1000.0", "1250.0", "1500.0", "2000.0",
                  "2500.0", "5000.0", "10000.0", "30000.0", "60000.0", "120000.0",
                  "240000.0", "+Inf"]
    assert set(fams) >= {f"sandbox_client_{h}_latency_ms"
                         for h in ("discovery", "suspend", "resume", "restore")}


# ---------------------------------------------------------------- against the cluster


pytestmark_cluster = pytest.mark.usefixtures("extensions_controller")


@pytestmark_cluster
def test_sandboxd_in_cluster_by_pod_ip(kube, ns, tmp_path):
    """SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip") reaches the
    real sandboxd on the pod's IP: a command, a file, the listing in both
    FileEntry shapes, the async delete refused as upstream refuses it on the
    python-runtime API; the discovery (the Sandbox lookup) is observed."""
    setup_pool(kube, ns, 0)
    before = discovery_count("in_cluster", "success")
    with sdk.SandboxClient(NOWHERE, kubeconfig=kube.kubeconfig) as c:
        created = c.create_sandbox("pool", ns)
        runtime = start_sandboxd(created.get_pod_ip(), tmp_path / "ws", tmp_path)
        try:
            cfg = sdk.SandboxdInClusterConnectionConfig(mode="in-cluster-pod-ip",
                                                        max_retries=0)
            sb = sdk.SandboxClient(cfg, kubeconfig=kube.kubeconfig).get_sandbox(
                created.claim_name, ns)
            assert sb.commands.run("echo hi").stdout == "hi\n"
            sb.files.write("f.txt", b"abc")
            mtime = os.stat(tmp_path / "ws" / "f.txt").st_mtime
            [e] = sb.files.list(".")
            assert (e.name, e.size, e.type) == ("f.txt", 3, "file")
            assert abs(e.mod_time - mtime) < 1e-3 and abs(e.modified.timestamp() - mtime) < 1e-3
            assert discovery_count("in_cluster", "success") == before + 1

            async def async_delete():
                ac = sdk.AsyncSandboxClient(cfg, kubeconfig=kube.kubeconfig, cleanup=False)
                asb = await ac.get_sandbox(created.claim_name, ns)
                try:
                    await asb.files.delete("f.txt")
                finally:
                    await ac.close()
            with pytest.raises(NotImplementedError, match="no file delete"):
                asyncio.run(async_delete())
            assert (tmp_path / "ws" / "f.txt").exists()
        finally:
            runtime.terminate()
            runtime.wait(20)


@pytestmark_cluster
def test_sandboxd_in_cluster_by_service(kube, ns):
    """mode="in-cluster-service": a Sandbox without a Service is
    SandboxNoServiceError (caught as SandboxServiceUnavailableError too);
    with one, the client goes to status.serviceFQDN (no cluster DNS here:
    the error names the host it tried)."""
    setup_pool(kube, ns, 0, name="plain")
    setup_pool(kube, ns, 0, name="svc", tpl_fields={"service": True})
    cfg = sdk.SandboxdInClusterConnectionConfig(mode="in-cluster-service", max_retries=0)
    with sdk.SandboxClient(cfg, kubeconfig=kube.kubeconfig) as c:
        plain = c.create_sandbox("plain", ns)
        failures = discovery_count("in_cluster", "failure")
        with pytest.raises(sdk.SandboxServiceUnavailableError, match="has no Service"):
            plain.commands.run("echo hi")
        assert discovery_count("in_cluster", "failure") == failures + 1
        with_svc = c.create_sandbox("svc", ns)
        fqdn = wait_for(lambda: (kube.get("sandbox", with_svc.sandbox_id, ns)
                                 .get("status") or {}).get("serviceFQDN"),
                        timeout=30, desc="status.serviceFQDN")
        assert fqdn == f"{with_svc.sandbox_id}.{ns}.svc.cluster.local"
        with pytest.raises(sdk.SandboxRequestError, match=f"{fqdn}:8888"):
            with_svc.commands.run("echo hi")


@pytestmark_cluster
def test_port_forward_discovery_failure_is_observed(kube, ns):
    """A local tunnel to a router namespace that does not exist: kubectl
    fails, the call is SandboxPortForwardError, and the discovery histogram
    counts one port_forward failure."""
    setup_pool(kube, ns, 0)
    before = discovery_count("port_forward", "failure")
    cfg = sdk.SandboxLocalTunnelConnectionConfig(router_namespace="no-such-router-ns",
                                                 port_forward_ready_timeout=20, max_retries=0)
    with sdk.SandboxClient(cfg, kubeconfig=kube.kubeconfig) as c:
        sb = c.create_sandbox("pool", ns)
        with pytest.raises(sdk.SandboxPortForwardError):
            sb.commands.run("echo hi")
    assert discovery_count("port_forward", "failure") == before + 1
    assert 'sandbox_client_discovery_latency_ms_count{mode="port_forward",status="failure"}' \
        in sdk.get_metrics()


@pytestmark_cluster
def test_spans_with_upstreams_names_and_attributes(kube, ns, tmp_path):
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("opentelemetry-sdk is not installed (tools/install-deps)")
        pytest.skip("opentelemetry-sdk is not installed (tools/install-deps installs it)")
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):  # the first test to set one
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    setup_pool(kube, ns, 0)
    tracing = sdk.SandboxTracerConfig(enable_tracing=True, trace_service_name="my-agent")
    c = sdk.SandboxClient(sdk.SandboxInClusterConnectionConfig(max_retries=0), tracing,
                          kubeconfig=kube.kubeconfig)
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("caller") as caller:
        sb = c.create_sandbox("pool", ns, shutdown_after_seconds=600)
    claim_name = sb.claim_name
    claim = kube.get(CLAIM, claim_name, ns)
    runtime = start_sandboxd(sb.get_pod_ip(), tmp_path / "ws", tmp_path)
    try:
        assert sb.commands.run("/bin/echo hi").exit_code == 0
        sb.files.write("a.txt", b"12345")
        assert sb.files.read("a.txt") == b"12345"
        assert sb.files.read("a.txt", destination=str(tmp_path / "copy")) == 5
        assert len(sb.files.list(".")) == 1 and sb.files.exists("a.txt")
        with pytest.raises(NotImplementedError):
            sb.files.delete("a.txt")
        c.delete_sandbox(claim_name, ns)
    finally:
        runtime.terminate()
        runtime.wait(20)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    create, wait = spans["my-agent.create_claim"], spans["my-agent.wait_for_claim_ready"]
    assert create.attributes["sandbox.claim.name"] == claim_name
    assert create.attributes["sandbox.lifecycle.shutdown_policy"] == "Delete"
    # computed as the manifest's (now + 600 s), a moment apart: to the second
    stamp = lambda v: datetime.datetime.strptime(v, "%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
    assert abs((stamp(create.attributes["sandbox.lifecycle.shutdown_time"]) -
                stamp(claim["spec"]["lifecycle"]["shutdownTime"])).total_seconds()) <= 1
    assert create.parent.span_id == wait.parent.span_id == caller.get_span_context().span_id
    assert create.start_time <= create.end_time <= wait.start_time <= wait.end_time
    # the claim carries the create span's W3C trace context, as upstream's
    carried = json.loads(claim["metadata"]["annotations"]["opentelemetry.io/trace-context"])
    ctx = create.get_span_context()
    assert carried["traceparent"].startswith(f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-")
    assert spans["my-agent.run"].attributes == {"sandbox.command.executable": "echo",
                                                "sandbox.exit_code": 0}
    assert spans["my-agent.write"].attributes == {"sandbox.file.path": "a.txt",
                                                  "sandbox.file.size": 5}
    assert spans["my-agent.read"].attributes == {"sandbox.file.path": "a.txt",
                                                 "sandbox.file.size": 5}
    assert spans["my-agent.read_to"].attributes == {"sandbox.file.path": "a.txt",
                                                    "sandbox.file.size": 5}
    assert spans["my-agent.list"].attributes == {"sandbox.file.path": ".",
                                                 "sandbox.file.count": 1}
    assert spans["my-agent.exists"].attributes == {"sandbox.file.path": "a.txt",
                                                   "sandbox.file.exists": True}
    assert not spans["my-agent.delete"].status.is_ok
    assert "my-agent.delete_claim" in spans
    wait_for(lambda: kube.list(CLAIM, ns) == [], timeout=15, desc="claim deleted")
