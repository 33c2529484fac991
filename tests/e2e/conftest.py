"""End-to-end fixtures on real nodes: the whole stack as a user deploys it.

The cluster is tools/local-cluster with AGENT_SANDBOX_REAL_NODES >= 1 (kubelet,
containerd, runc) and the images of tools/images loaded into its nodes;
tools/test brings it up for this suite. The controller and the router run as
the Deployments of deploy/ (`kubectl apply -k`), in-cluster, from the image
the Dockerfile builds; sandboxd runs in real pods from its own image.

Environment:
  KUBECONFIG               admin kubeconfig of that cluster (required)
  AGENT_SANDBOX_BUILD_DIR  meson build dir whose libsandbox the SDK loads (default: build)
"""
import os
import subprocess
import sys
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "sdk-python"))
sys.path.insert(0, os.path.join(ROOT, "tests"))
from kubetest import LOCAL_CLUSTER, admin_kube, condition, wait_for  # noqa: E402,F401

SYSTEM_NS = "agent-sandbox-system"
CONTROLLER = "agent-sandbox-controller"
ROUTER = "sandbox-router"
TEMPLATE_FILE = os.path.join(ROOT, "deploy", "sandboxd", "sandboxtemplate.yaml")


def kubectl_path():
    """The kubectl built with the cluster (the SDK's port-forward runs it)."""
    out = subprocess.run([LOCAL_CLUSTER, "env"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.startswith("export PATH="):
            first = line.split("=", 1)[1].strip("'\"").split(":", 1)[0].strip("'")
            return os.path.join(first, "kubectl")
    raise AssertionError("tools/local-cluster env printed no PATH")


@pytest.fixture(scope="session")
def kube():
    k = admin_kube()
    if k is None:
        pytest.fail("KUBECONFIG must point at the admin kubeconfig of a cluster with real nodes "
                    "(AGENT_SANDBOX_REAL_NODES=1 tools/local-cluster up; tools/test does it)")
    nodes = k.list("nodes", selector="type=real")
    if not any(condition(n, "Ready") and condition(n, "Ready")["status"] == "True" for n in nodes):
        pytest.fail("no Ready real node (type=real) in this cluster: start it with AGENT_SANDBOX_REAL_NODES=1")
    return k


def rollout(kube, name, timeout="240s"):
    p = kube.run("-n", SYSTEM_NS, "rollout", "status", f"deployment/{name}", f"--timeout={timeout}", check=False)
    if p.returncode != 0:
        pods = kube.run("-n", SYSTEM_NS, "get", "pods", "-o", "wide", check=False).stdout
        events = kube.run("-n", SYSTEM_NS, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout
        raise AssertionError(f"deployment/{name} did not roll out: {p.stderr}\n{pods}\n{events[-4000:]}")


@pytest.fixture(scope="session")
def stack(kube):
    """deploy/ and deploy/router applied as a user does; both Deployments
    rolled out; the conversion webhook answering through its Service."""
    kube.run("apply", "-k", os.path.join(ROOT, "deploy"))
    kube.run("apply", "-k", os.path.join(ROOT, "deploy", "router"))
    rollout(kube, CONTROLLER)
    rollout(kube, ROUTER)
    # The controller patches its serving CA into the CRDs at start; a v1alpha1
    # read of a stored v1beta1 list goes through the webhook then.
    wait_for(lambda: kube.run("get", "sandboxes.v1alpha1.agents.x-k8s.io", "-A", check=False).returncode == 0,
             timeout=60, desc="the conversion webhook to answer")
    return kube


def new_namespace(kube, prefix="e2e-"):
    name = prefix + uuid.uuid4().hex[:8]
    kube.run("create", "namespace", name)
    return name


@pytest.fixture
def ns(stack):
    """A namespace with the sandboxd SandboxTemplate of deploy/sandboxd."""
    name = new_namespace(stack)
    stack.run("apply", "-n", name, "-f", TEMPLATE_FILE)
    yield name
    # Waited for: the node has two CPUs (its real capacity), and the next
    # test's pods must not queue behind this one's that are terminating.
    stack.run("delete", "namespace", name, "--wait=true", "--timeout=120s", check=False)


def pod_of(kube, ns, sandbox):
    sb = kube.get("sandbox", sandbox, ns)
    name = ((sb or {}).get("metadata", {}).get("annotations") or {}).get("agents.x-k8s.io/pod-name") or sandbox
    return kube.get("pod", name, ns)


def router_config():
    """The SDK's default mode: a kubectl port-forward tunnel to the router's Service."""
    from agent_sandbox_c import SandboxLocalTunnelConnectionConfig
    os.environ.setdefault("AGENT_SANDBOX_KUBECTL", kubectl_path())
    return SandboxLocalTunnelConnectionConfig()


def dump(kube, ns):
    """What a failing test shows: the namespace's objects and events."""
    out = kube.run("get", "sandboxes,sandboxclaims,sandboxwarmpools,pods,pvc", "-n", ns, "-o", "wide", check=False).stdout
    ev = kube.run("get", "events", "-n", ns, "--sort-by=.lastTimestamp", check=False).stdout
    return out + "\n" + ev[-3000:]


def jsonpath(kube, kind, name, ns, path):
    return kube.run("get", kind, name, "-n", ns, "-o", f"jsonpath={path}").stdout


