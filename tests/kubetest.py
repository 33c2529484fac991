"""Helpers shared by the test suites that run against a real cluster
(tests/integration on kwok nodes, tests/e2e on real nodes): a kubectl
wrapper, polling, conditions, free ports."""
import json
import os
import socket
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCAL_CLUSTER = os.path.join(ROOT, "tools", "local-cluster")
EXT_API = "extensions.agents.x-k8s.io/v1beta1"
CLAIM = "sandboxclaims.extensions.agents.x-k8s.io"
POOL = "sandboxwarmpools.extensions.agents.x-k8s.io"
# the upstream Python client, installed by tools/install-deps (pip --target)
UPSTREAM_CLIENT = os.environ.get("AGENT_SANDBOX_UPSTREAM_CLIENT", os.path.join(
    os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "agent-sandbox",
    "k8s-agent-sandbox-1.0.8"))


def helm_binary():
    """helm as tools/install-deps builds it (the version tools/helm/go.mod
    pins, in the cache), or $AGENT_SANDBOX_HELM."""
    if os.environ.get("AGENT_SANDBOX_HELM"):
        return os.environ["AGENT_SANDBOX_HELM"]
    with open(os.path.join(ROOT, "tools", "helm", "go.mod")) as f:
        version = next(line.split()[2] for line in f if line.startswith("require helm.sh/helm/v4 "))
    cache = os.environ.get("AGENT_SANDBOX_CACHE", os.path.expanduser("~/.cache/agent-sandbox"))
    return os.path.join(cache, f"helm-{version}", "bin", "helm")


def admin_kube():
    """A Kube on $KUBECONFIG, the admin kubeconfig of a running cluster;
    None when it is not set or the file is missing (the caller says what to do)."""
    kc = os.environ.get("KUBECONFIG")
    return Kube(kc) if kc and os.path.exists(kc) else None


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
