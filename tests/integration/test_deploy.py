"""deploy/ as users install it (docs/upstream.md#deployment), the single-file
rendering deploy/install.yaml, and the image's library list (Dockerfile).

On the local cluster kwok plays the kubelet, so the controller Deployment's
pod "runs" without a process: these tests check what the API server and the
controllers of the control plane make of the manifests, not the container.
The controller under test is the `controller` fixture's process.
"""
import json
import os
import subprocess

from conftest import ROOT, controller_binary

NS = "agent-sandbox-system"


def test_install_yaml_is_up_to_date():
    p = subprocess.run([os.path.join(ROOT, "tools", "gen-install-yaml"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-4000:]


def test_image_library_list_matches_ldd():
    p = subprocess.run([os.path.join(ROOT, "tools", "check-image-libs"), controller_binary()],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr


def test_controller_deployment_rolls_out_and_the_metrics_service_selects_it(deployed):
    # A fresh rollout: a pod left from earlier in the session may have been
    # marked NotReady by the node lifecycle controller while kube-apiserver
    # restarted (test_chaos), and kwok, unlike a kubelet, never marks it
    # Ready again.
    deployed.run("rollout", "restart", "deployment/agent-sandbox-controller", "-n", NS)
    deployed.run("rollout", "status", "deployment/agent-sandbox-controller", "-n", NS,
                 "--timeout=120s")
    dep = deployed.get("deployment", "agent-sandbox-controller", NS)
    assert dep["spec"]["replicas"] == 1
    assert dep["spec"]["selector"]["matchLabels"] == {"app": "agent-sandbox-controller"}
    pod_spec = dep["spec"]["template"]["spec"]
    assert pod_spec["serviceAccountName"] == "agent-sandbox-controller"
    (c,) = pod_spec["containers"]
    # upstream's name, so users' patches by container name apply
    assert c["name"] == "agent-sandbox-controller"
    annotations = dep["spec"]["template"]["metadata"]["annotations"]
    assert annotations["kubectl.kubernetes.io/default-container"] == "agent-sandbox-controller"
    assert c["args"] == ["--leader-elect=true", "--extensions=true"]
    assert {(p["name"], p["containerPort"]) for p in c["ports"]} == \
        {("metrics", 8080), ("healthz", 8081), ("webhook", 9443)}

    # (kwok gives pods loopback IPs, which EndpointSlices refuse: check the
    # selection itself instead of the endpoints)
    svc = deployed.get("service", "agent-sandbox-controller", NS)
    assert svc["spec"]["ports"] == [{"name": "metrics", "port": 8080, "protocol": "TCP",
                                     "targetPort": "metrics"}]
    sel = ",".join(f"{k}={v}" for k, v in svc["spec"]["selector"].items())
    pods = deployed.list("pods", NS, sel)
    assert pods and all(p["metadata"]["labels"]["app"] == "agent-sandbox-controller" for p in pods)


def test_sandboxd_example_template_is_accepted(deployed):
    """deploy/sandboxd/sandboxtemplate.yaml (docs/sandboxd.md) passes the API
    server's validation against the SandboxTemplate CRD schema."""
    path = os.path.join(ROOT, "deploy", "sandboxd", "sandboxtemplate.yaml")
    p = deployed.run("apply", "--dry-run=server", "-n", "default", "-f", path)
    assert "sandboxtemplate.extensions.agents.x-k8s.io/sandboxd created (server dry run)" in p.stdout


def test_sandboxd_example_warm_pool_is_accepted(deployed):
    """deploy/sandboxd/sandboxwarmpool.yaml passes the API server's
    validation against the SandboxWarmPool CRD schema and names the
    example template."""
    path = os.path.join(ROOT, "deploy", "sandboxd", "sandboxwarmpool.yaml")
    p = deployed.run("apply", "--dry-run=server", "-n", "default", "-f", path, "-o", "json")
    pool = json.loads(p.stdout)
    assert (pool["kind"], pool["metadata"]["name"]) == ("SandboxWarmPool", "sandboxd-pool")
    assert pool["spec"]["sandboxTemplateRef"] == {"name": "sandboxd"}
