"""Integration fixtures: a real kube-apiserver (tools/local-cluster), the
CRDs and RBAC from deploy/, and our controller running as its ServiceAccount.

Environment:
  KUBECONFIG               admin kubeconfig of the running local cluster (required)
  AGENT_SANDBOX_BUILD_DIR  meson build dir holding the controller (default: build)
"""
import json
import os
import signal
import subprocess
import sys
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The Python SDK from this tree (test_sdk*.py); it loads libsandbox from
# $AGENT_SANDBOX_BUILD_DIR (see sdk-python/agent_sandbox_c/_native.py).
sys.path.insert(0, os.path.join(ROOT, "sdk-python"))
# tests/kubetest.py: Kube, wait_for, free_port, condition (shared with tests/e2e)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from kubetest import LOCAL_CLUSTER, Kube, admin_kube, condition, free_port, wait_for  # noqa: E402,F401
# In the sanitizer pass tools/test preloads libasan into pytest (the SDK
# loads a sanitized libsandbox) with leak detection off: this process keeps
# both, the processes it starts (controllers, kubectl) get the environment
# they would have had. ASAN_PRELOAD stays set for tests that start python
# children loading the SDK.
if os.environ.get("AGENT_SANDBOX_ASAN_PRELOAD"):
    os.environ.pop("LD_PRELOAD", None)
    os.environ["ASAN_OPTIONS"] = os.environ.get("AGENT_SANDBOX_CHILD_ASAN_OPTIONS", "")


def sdk_child_env():
    """The environment of a python child that loads the SDK: this one, plus,
    in the sanitizer pass, libasan preloaded with leak detection off (as
    tools/test runs pytest itself)."""
    env = dict(os.environ)
    if env.get("AGENT_SANDBOX_ASAN_PRELOAD"):
        env.update(LD_PRELOAD=env["AGENT_SANDBOX_ASAN_PRELOAD"],
                   ASAN_OPTIONS=env.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    return env
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
# the CRDs of deploy/ (the controller points their conversion webhook at itself)
CRDS = ("sandboxes.agents.x-k8s.io", "sandboxtemplates.extensions.agents.x-k8s.io",
        "sandboxclaims.extensions.agents.x-k8s.io", "sandboxwarmpools.extensions.agents.x-k8s.io")


# Modules of disruptive tests (kill -9, kube-apiserver restarts, 200-pod bursts).
DISRUPTIVE = ("test_chaos.py", "test_claim_burst.py")


def pytest_collection_modifyitems(session, config, items):
    """Disruptive tests run last, so no other test runs on a cluster they just shook."""
    def disruptive(item):
        path = item.nodeid.split("::", 1)[0]
        return os.path.basename(path) in DISRUPTIVE
    items.sort(key=disruptive)


# the extension kinds' CRDs (--extensions)
EXTENSION_CRDS = CRDS[1:]


@pytest.fixture(scope="session")
def kube():
    k = admin_kube()
    if k is None:
        pytest.fail("KUBECONFIG must point at the admin kubeconfig of a running cluster "
                    "(run the suite with tools/test, or `tools/local-cluster up`)")
    return k


@pytest.fixture(scope="session")
def deployed(kube):
    """Installs the namespace, CRDs and RBAC of deploy/ and waits for the CRD."""
    apply_deploy(kube)
    return kube


def apply_deploy(kube):
    """`kubectl apply -k deploy/`, waiting for the CRDs to be Established."""
    # A controller run with --webhook-url (below) left the CRDs' conversion
    # clientConfig on a URL; `apply` would add the Service beside it, which the
    # API server refuses (exactly one of url and service): put the Service back.
    for crd in CRDS:
        if kube.run("get", f"crd/{crd}", "-o",
                    "jsonpath={.spec.conversion.webhook.clientConfig.url}", check=False).stdout:
            kube.run("patch", f"crd/{crd}", "--type=merge", "-p", json.dumps(
                {"spec": {"conversion": {"webhook": {"clientConfig": {"url": None, "service": {
                    "name": "agent-sandbox-webhook-service", "namespace": "agent-sandbox-system",
                    "path": "/convert"}}}}}}))
    kube.run("apply", "-k", os.path.join(ROOT, "deploy"))
    kube.run("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{c}" for c in CRDS])


def controller_binary():
    build = os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build"))
    binary = os.path.join(build, "cmd", "controller", "agent-sandbox-controller")
    assert os.path.exists(binary), f"controller binary not built: {binary}"
    return binary


def sa_kubeconfig():
    """A kubeconfig for the deploy/ ServiceAccount (TokenRequest, cached per run)."""
    sa = subprocess.run([LOCAL_CLUSTER, "sa-kubeconfig", "agent-sandbox-system",
                         "agent-sandbox-controller"], capture_output=True, text=True, check=True)
    return sa.stdout.strip().splitlines()[-1]


class LoggedProcess:
    """A process of ours under test whose output goes to `self.log` through
    `self._logf` (subclasses set both and `self.proc`); `kind` names it in
    failure messages."""

    kind = "process"

    def text(self):
        with open(self.log) as f:
            return f.read()

    def records(self):
        """The log's JSON lines (the programs' default format), parsed;
        other lines (a sanitizer report) are skipped."""
        out = []
        for ln in self.text().splitlines():
            if ln.startswith("{"):
                try:
                    out.append(json.loads(ln))
                except ValueError:
                    pass
        return out

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig` and waits; returns the exit code (SIGKILL: -9)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()
        return self.proc.returncode

    def assert_clean_log(self):
        text = self.text()
        for bad in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer"):
            assert bad not in text, f"sanitizer report in {self.kind} log: {bad}\n" + text[-6000:]


class ControllerProcess(LoggedProcess):
    """One agent-sandbox-controller process running as the deploy/ ServiceAccount,
    on free loopback ports, logging to `log`. Extra flags are appended last, so
    they override the defaults given here."""

    kind = "controller"

    # The conversion webhook's port, shared by the controllers of a session that
    # run one after another. The controller points the CRDs at its URL when it
    # starts; a new URL is a real CRD update, and the API server then rebuilds
    # those kinds' storage and closes every watch on them. kube-controller-
    # manager's garbage collector re-lists after a back-off that grows with each
    # such close (seen: 20 s), and meanwhile works from a stale graph: a
    # foreground delete of a SandboxClaim whose Sandbox it has not seen finishes
    # at once (TestSandboxClaimDeleteForeground's flake). The same URL makes the
    # patch a no-op. A controller started while another still runs (replicas)
    # gets a port of its own.
    _session_webhook_port = None
    _running = []

    def __init__(self, logdir, kubeconfig, extra_args=(), name="controller"):
        self.log = os.path.join(str(logdir), f"{name}.log")
        self.kubeconfig = kubeconfig
        self.metrics_port, self.probe_port = free_port(), free_port()
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}"
        self.probe_url = f"http://127.0.0.1:{self.probe_port}"
        # the conversion webhook, reached by the API server on loopback; the
        # controller points the CRD at this URL when it starts
        cls = ControllerProcess
        cls._running = [c for c in cls._running if c.proc.poll() is None]
        if cls._session_webhook_port is None:
            cls._session_webhook_port = free_port()
        if any(c.webhook_port == cls._session_webhook_port for c in cls._running):
            self.webhook_port = free_port()
        else:
            self.webhook_port = cls._session_webhook_port
        self.webhook_url = f"https://127.0.0.1:{self.webhook_port}/convert"
        self.webhook_cert_dir = os.path.join(str(logdir), f"{name}-webhook-certs")
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self._logf = open(self.log, "a")
        self.args = [controller_binary(), "--kubeconfig", kubeconfig, "--log-level", "debug",
                     "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
                     "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}",
                     "--sandbox-concurrent-workers", "8",
                     "--webhook-port", str(self.webhook_port), "--webhook-bind-address", "127.0.0.1",
                     "--webhook-cert-dir", self.webhook_cert_dir, "--webhook-url", self.webhook_url,
                     # leader election on (the default), as in a cluster
                     "--leader-election-namespace", "agent-sandbox-system"] + list(extra_args)
        self.proc = subprocess.Popen(self.args, stdout=self._logf, stderr=subprocess.STDOUT, env=env)
        ControllerProcess._running.append(self)

    def wait_leading(self, timeout=60):
        """Waits until caches are synced and this process leads (workers started)."""
        wait_for(lambda: "starting workers" in self.text() or self.proc.poll() is not None,
                 timeout=timeout, desc="controller caches to sync and leadership")
        assert self.proc.poll() is None, "controller exited early:\n" + self.text()[-4000:]



@pytest.fixture(scope="session")
def controller(deployed, tmp_path_factory):
    """Runs agent-sandbox-controller with the deploy/ ServiceAccount identity."""
    c = ControllerProcess(tmp_path_factory.mktemp("controller"), sa_kubeconfig())
    state = {"proc": c.proc, "log": c.log, "kubeconfig": c.kubeconfig,
             "metrics_url": c.metrics_url, "probe_url": c.probe_url, "process": c,
             "webhook_url": c.webhook_url}
    try:
        c.wait_leading()
        yield state
    finally:
        c = state["process"]  # exclusive_controller may have replaced it
        rc = c.stop()
        print("---- controller log (tail) ----\n" + c.text()[-6000:])
        assert rc == 0, f"controller exit code {rc} after SIGTERM"
        c.assert_clean_log()


def new_namespace(kube, prefix="it-"):
    """Creates a namespace named prefix + 8 hex digits; waits for its
    default ServiceAccount. Returns the name."""
    name = prefix + uuid.uuid4().hex[:8]
    kube.run("create", "namespace", name)
    # kube-controller-manager's serviceaccount controller makes it; under the
    # sanitizer pass on two cores that once took more than 30 s
    wait_for(lambda: kube.get("serviceaccount", "default", name), timeout=120,
             desc="default ServiceAccount")
    return name


@pytest.fixture
def ns(deployed, controller):
    """A fresh namespace per test, deleted afterwards (without waiting)."""
    name = new_namespace(deployed)
    yield name
    deployed.delete("namespace", name)


@pytest.fixture
def exclusive_controller(controller):
    """For tests that run controllers of their own (kill them, restart them,
    run replicas): stops the session controller cleanly (SIGTERM releases the
    Lease; exit code checked) and yields start(extra_args=(), name=None) ->
    ControllerProcess. Afterwards stops what start() started (each one still
    running must exit 0 on SIGTERM), checks their logs for sanitizer reports,
    then starts a replacement session controller, waits for it to lead and
    updates the `controller` dict in place."""
    old = controller["process"]
    rc = old.stop()
    old.assert_clean_log()
    assert rc == 0, f"session controller exit code {rc} after SIGTERM:\n" + old.text()[-4000:]
    logdir = os.path.dirname(old.log)
    started = []

    def start(extra_args=(), name=None):
        c = ControllerProcess(logdir, controller["kubeconfig"], extra_args,
                              name or f"exclusive-{uuid.uuid4().hex[:6]}")
        started.append(c)
        return c

    try:
        yield start
    finally:
        failures = []
        for c in started:
            running = c.proc.poll() is None
            rc = c.stop()
            if running and rc != 0:
                failures.append(f"{c.log}: exit code {rc} after SIGTERM")
            c.assert_clean_log()
        c = ControllerProcess(logdir, controller["kubeconfig"], name=f"controller-{uuid.uuid4().hex[:6]}")
        controller.update(proc=c.proc, log=c.log, kubeconfig=c.kubeconfig,
                          metrics_url=c.metrics_url, probe_url=c.probe_url, process=c,
                          webhook_url=c.webhook_url)
        c.wait_leading()
        assert not failures, failures


def install_extension_crds(kube):
    """The extension CRDs of deploy/crds, installed if missing (deploy/ may
    not list them), and waited for. A CRD that is there is left alone: the
    running controller may have pointed its conversion webhook at itself."""
    for crd in EXTENSION_CRDS:
        if not kube.get("crd", crd):
            kube.run("apply", "-f", os.path.join(ROOT, "deploy", "crds", f"extensions.agents.x-k8s.io_{crd.split('.')[0]}.yaml"))
    kube.run("wait", "--for=condition=Established", "--timeout=60s", *[f"crd/{c}" for c in EXTENSION_CRDS])


@pytest.fixture(scope="module")
def extensions_controller(controller, deployed):
    """For a module whose tests need the extension controllers (SandboxClaim,
    SandboxTemplate, SandboxWarmPool): installs their CRDs if deploy/ did
    not, stops the session controller cleanly (SIGTERM, exit code checked),
    runs one with --extensions in its place (same ServiceAccount, conversion
    webhook for the four kinds on loopback) for the whole module, and
    updates the `controller` dict in place. Afterwards: that process must
    exit 0 on SIGTERM with no sanitizer report; a plain session controller
    is started again."""
    install_extension_crds(deployed)
    old = controller["process"]
    rc = old.stop()
    old.assert_clean_log()
    assert rc == 0, f"session controller exit code {rc} after SIGTERM:\n" + old.text()[-4000:]
    logdir = os.path.dirname(old.log)

    def swap(c):
        controller.update(proc=c.proc, log=c.log, kubeconfig=c.kubeconfig, metrics_url=c.metrics_url,
                          probe_url=c.probe_url, process=c, webhook_url=c.webhook_url)
        c.wait_leading()
        return c

    ext = swap(ControllerProcess(logdir, controller["kubeconfig"], ["--extensions"],
                                 name=f"extensions-{uuid.uuid4().hex[:6]}"))
    try:
        yield ext
    finally:
        ext = controller["process"]  # an exclusive_controller in the module may have replaced it
        rc = ext.stop()
        print("---- extensions controller log (tail) ----\n" + ext.text()[-6000:])
        ext.assert_clean_log()
        swap(ControllerProcess(logdir, controller["kubeconfig"], name=f"controller-{uuid.uuid4().hex[:6]}"))
        assert rc == 0, f"extensions controller exit code {rc} (SIGTERM at the end of the module)"
