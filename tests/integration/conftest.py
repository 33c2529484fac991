"""Integration fixtures: a real kube-apiserver (tools/local-cluster), the
CRDs and RBAC from deploy/, and our controller running as its ServiceAccount.

Environment:
  KUBECONFIG               admin kubeconfig of the running local cluster (required)
  AGENT_SANDBOX_BUILD_DIR  meson build dir holding the controller (default: build)
"""
import json
import os
import signal
import socket
import subprocess
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
LOCAL_CLUSTER = os.path.join(ROOT, "tools", "local-cluster")


class Kube:
    """Thin kubectl wrapper (admin identity) returning parsed JSON."""

    def __init__(self, kubeconfig):
        self.kubeconfig = kubeconfig
        # the kubectl built with the cluster, same release as the API server
        self.kubectl = [os.environ["KUBECTL"]] if os.environ.get("KUBECTL") else [LOCAL_CLUSTER, "kubectl"]

    def run(self, *args, input=None, check=True):
        p = subprocess.run([*self.kubectl, "--kubeconfig", self.kubeconfig, *args],
                           input=input, capture_output=True, text=True, timeout=120)
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
        return p

    def apply(self, manifest, ns=None):
        data = manifest if isinstance(manifest, str) else json.dumps(manifest)
        args = ["apply", "-f", "-"] + (["-n", ns] if ns else [])
        return self.run(*args, input=data)

    def create(self, manifest, ns=None, check=True):
        data = manifest if isinstance(manifest, str) else json.dumps(manifest)
        args = ["create", "-f", "-"] + (["-n", ns] if ns else [])
        return self.run(*args, input=data, check=check)

    def get(self, kind, name, ns=None):
        args = ["get", kind, name, "-o", "json"] + (["-n", ns] if ns else [])
        p = self.run(*args, check=False)
        if p.returncode != 0:
            if "NotFound" in p.stderr or "not found" in p.stderr:
                return None
            raise AssertionError(p.stderr)
        return json.loads(p.stdout)

    def list(self, kind, ns=None, selector=None):
        args = ["get", kind, "-o", "json"] + (["-n", ns] if ns else ["-A"])
        if selector:
            args += ["-l", selector]
        return json.loads(self.run(*args).stdout)["items"]

    def patch(self, kind, name, ns, patch, type_="merge", subresource=None):
        args = ["patch", kind, name, "-n", ns, "--type", type_, "-p", json.dumps(patch)]
        if subresource:
            args += ["--subresource", subresource]
        return self.run(*args)

    def delete(self, kind, name, ns=None, wait=False):
        args = ["delete", kind, name, "--ignore-not-found", f"--wait={'true' if wait else 'false'}"]
        if ns:
            args += ["-n", ns]
        return self.run(*args)


def wait_for(fn, timeout=60.0, interval=0.2, desc="condition"):
    """Polls fn() until it returns a truthy value; returns it or fails with the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {desc}; last value: {last!r}")


def free_port():
    """A loopback TCP port free right now (the kernel's pick), for a server we start."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def condition(obj, ctype):
    for c in (obj or {}).get("status", {}).get("conditions", []) or []:
        if c.get("type") == ctype:
            return c
    return None


@pytest.fixture(scope="session")
def kube():
    kc = os.environ.get("KUBECONFIG")
    if not kc or not os.path.exists(kc):
        pytest.fail("KUBECONFIG must point at the admin kubeconfig of a running cluster "
                    "(run the suite with tools/test, or `tools/local-cluster up`)")
    return Kube(kc)


@pytest.fixture(scope="session")
def deployed(kube):
    """Installs the namespace, CRDs and RBAC of deploy/ and waits for the CRD."""
    kube.run("apply", "-k", os.path.join(ROOT, "deploy"))
    kube.run("wait", "--for=condition=Established", "--timeout=60s",
             "crd/sandboxes.agents.x-k8s.io")
    return kube


@pytest.fixture(scope="session")
def controller(deployed, tmp_path_factory):
    """Runs agent-sandbox-controller with the deploy/ ServiceAccount identity."""
    build = os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build"))
    binary = os.path.join(build, "cmd", "controller", "agent-sandbox-controller")
    assert os.path.exists(binary), f"controller binary not built: {binary}"
    sa = subprocess.run([LOCAL_CLUSTER, "sa-kubeconfig", "agent-sandbox-system",
                         "agent-sandbox-controller"], capture_output=True, text=True, check=True)
    sa_kubeconfig = sa.stdout.strip().splitlines()[-1]
    logdir = tmp_path_factory.mktemp("controller")
    logpath = os.path.join(str(logdir), "controller.log")
    log = open(logpath, "w")
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    # free loopback ports: parallel runs and other processes never collide
    metrics_port, probe_port = free_port(), free_port()
    proc = subprocess.Popen([binary, "--kubeconfig", sa_kubeconfig, "--log-level", "debug",
                             "--metrics-bind-address", f"127.0.0.1:{metrics_port}",
                             "--health-probe-bind-address", f"127.0.0.1:{probe_port}",
                             "--sandbox-concurrent-workers", "8",
                             # leader election on (the default), as in a cluster
                             "--leader-election-namespace", "agent-sandbox-system"],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for(lambda: "starting workers" in open(logpath).read() or proc.poll() is not None,
                 timeout=60, desc="controller caches to sync and leadership")
        assert proc.poll() is None, "controller exited early:\n" + open(logpath).read()[-4000:]
        yield {"proc": proc, "log": logpath, "kubeconfig": sa_kubeconfig,
               "metrics_url": f"http://127.0.0.1:{metrics_port}",
               "probe_url": f"http://127.0.0.1:{probe_port}"}
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        text = open(logpath).read()
        assert proc.returncode == 0, f"controller exit code {proc.returncode} after SIGTERM"
        print("---- controller log (tail) ----\n" + text[-6000:])
        for bad in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer"):
            assert bad not in text, f"sanitizer report in controller log: {bad}"


@pytest.fixture
def ns(deployed, controller):
    """A fresh namespace per test, deleted afterwards (without waiting)."""
    name = "it-" + uuid.uuid4().hex[:8]
    deployed.run("create", "namespace", name)
    wait_for(lambda: deployed.get("serviceaccount", "default", name), timeout=30,
             desc="default ServiceAccount")
    yield name
    deployed.delete("namespace", name)
