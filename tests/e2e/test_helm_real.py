"""The Helm chart (deploy/helm/agent-sandbox, docs/install.md#helm) on a
real node: `helm install` with the router on, one router replica (two CPUs),
the images tools/images built (the chart's default image is deploy/'s,
agent-sandbox-controller:dev),
into a namespace of its own. The controller and the router run in pods from
what Helm installed; the conversion webhook is reached through the chart's
Service in that namespace; a Sandbox of deploy/sandboxd's pod template gets
Ready; the SDK, through the chart's router, runs a command in a claimed
sandbox's container.

The cluster's other tests run deploy/ (the `stack` fixture). When it is
already there, its controller is scaled to 0 meanwhile (two controllers in
two namespaces would both lead) and deploy/ and deploy/router are applied
again afterwards: `helm uninstall` removes the cluster-scoped objects the
release took over.
"""
import copy
import os
import subprocess
import uuid

import pytest
import yaml

from conftest import CONTROLLER, ROOT, ROUTER, SYSTEM_NS, TEMPLATE_FILE, condition, dump, rollout, wait_for
from kubetest import helm_binary
from test_real_stack import pool

import agent_sandbox_c as sdk

CHART = os.path.join(ROOT, "deploy", "helm", "agent-sandbox")
RELEASE_NS = "agent-sandbox-helm"


def helm(kube, *args, check=True, timeout=420):
    p = subprocess.run([helm_binary(), "--kubeconfig", kube.kubeconfig, *args],
                       capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


@pytest.fixture
def release(kube):
    had_deploy = kube.get("deployment", CONTROLLER, SYSTEM_NS) is not None
    if had_deploy:
        kube.run("-n", SYSTEM_NS, "scale", f"deployment/{CONTROLLER}", "--replicas=0")
        wait_for(lambda: not kube.list("pods", SYSTEM_NS, "app=agent-sandbox-controller"), timeout=120,
                 desc="deploy/'s controller pod gone")
    try:
        p = helm(kube, "install", "agent-sandbox", CHART, "-n", RELEASE_NS, "--create-namespace",
                 "--take-ownership", "--force-conflicts", "--set", f"namespace.name={RELEASE_NS}",
                 "--set", "router.enabled=true", "--set", "router.replicaCount=1", "--wait", "--timeout", "300s", check=False)
        if p.returncode != 0:
            pods = kube.run("-n", RELEASE_NS, "get", "pods", "-o", "wide", check=False).stdout
            events = kube.run("-n", RELEASE_NS, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout
            raise AssertionError(f"helm install failed:\n{p.stdout}\n{p.stderr}\n{pods}\n{events[-4000:]}")
        yield RELEASE_NS
    finally:
        # The Namespace is part of the release, so uninstall also deletes the
        # release's own record and says "release: not found" at the end.
        helm(kube, "uninstall", "agent-sandbox", "-n", RELEASE_NS, "--wait", "--timeout", "300s", check=False)
        kube.run("delete", "namespace", RELEASE_NS, "--ignore-not-found", "--wait=true", "--timeout=180s",
                 check=False)
        if had_deploy:
            kube.run("apply", "-k", os.path.join(ROOT, "deploy"))
            kube.run("apply", "-k", os.path.join(ROOT, "deploy", "router"))
            kube.run("-n", SYSTEM_NS, "scale", f"deployment/{CONTROLLER}", "--replicas=1")
            rollout(kube, CONTROLLER)
            rollout(kube, ROUTER)


def sandboxd_sandbox(name):
    with open(TEMPLATE_FILE) as f:
        pt = copy.deepcopy(yaml.safe_load(f)["spec"]["podTemplate"])
    return {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": name},
            "spec": {"podTemplate": pt}}


def test_helm_install_runs_the_stack_on_a_real_node(kube, release):
    ns_sys = release
    dep = kube.get("deployment", CONTROLLER, ns_sys)
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["name"] == "agent-sandbox-controller"
    assert f"--webhook-namespace={ns_sys}" in c["args"]
    assert dep["status"].get("readyReplicas") == 1
    assert kube.get("deployment", ROUTER, ns_sys)["status"].get("readyReplicas") == 1
    # the controller pointed the CRDs' conversion webhook at the chart's
    # Service in this namespace, with its own CA
    wait_for(lambda: kube.get("crd", "sandboxes.agents.x-k8s.io")["spec"]["conversion"]["webhook"]
             ["clientConfig"].get("service", {}).get("namespace") == ns_sys, timeout=60,
             desc="the CRD's webhook in the release's namespace")

    ns = "e2e-helm-" + uuid.uuid4().hex[:6]
    kube.run("create", "namespace", ns)
    try:
        kube.apply(sandboxd_sandbox("sb"), ns)
        wait_for(lambda: (condition(kube.get("sandbox", "sb", ns) or {}, "Ready") or {}).get("status") == "True",
                 timeout=180, desc=f"Sandbox Ready\n{dump(kube, ns)}")
        # a v1alpha1 read goes through the conversion webhook
        wait_for(lambda: kube.run("get", "sandboxes.v1alpha1.agents.x-k8s.io", "-n", ns, check=False).returncode == 0,
                 timeout=60, desc="the conversion webhook to answer through the chart's Service")

        # the SDK through the chart's router (its ClusterIP), on a warm pool
        kube.run("apply", "-n", ns, "-f", TEMPLATE_FILE)
        pool(kube, ns, 1)
        ip = kube.run("get", "service", "sandbox-router-svc", "-n", ns_sys,
                      "-o", "jsonpath={.spec.clusterIP}").stdout
        cfg = sdk.SandboxDirectConnectionConfig(api_url=f"http://{ip}:8080")
        with sdk.SandboxClient(cfg, kubeconfig=kube.kubeconfig) as client:
            sb = client.create_sandbox("sandboxd-pool", ns, 180)
            r = sb.commands.run("hostname")
            assert r.exit_code == 0, r.stderr
            assert r.stdout.strip() == sb.get_pod_name()
    finally:
        kube.run("delete", "namespace", ns, "--wait=true", "--timeout=120s", check=False)
