"""The embedded Kubernetes types of our CRDs (docs/crd-schemas.md): the
API server validates, prunes and defaults a Sandbox's podTemplate, the PVC
templates and a SandboxTemplate's NetworkPolicy rules as it does a Pod's,
deploy/crds is what tools/gen-crd-schemas writes for this cluster's
Kubernetes, and every upstream example manifest still applies."""
import copy
import glob
import json
import os
import re
import subprocess

import pytest
import yaml

from conftest import ROOT, SHARED, wait_for

IMAGE = "registry.k8s.io/pause:3.10"
EXAMPLES = os.path.join(SHARED, "upstream-examples")
BETA = "agents.x-k8s.io/v1beta1"
ALPHA = "agents.x-k8s.io/v1alpha1"
EXT = "extensions.agents.x-k8s.io/v1beta1"


def sandbox(name, containers, api=BETA, **podspec):
    return {"apiVersion": api, "kind": "Sandbox", "metadata": {"name": name},
            "spec": {"podTemplate": {"spec": {"containers": containers, **podspec}}}}


def main(**extra):
    return {"name": "main", "image": IMAGE, **extra}


def test_committed_crds_are_what_the_generator_writes(kube):
    """deploy/crds equals tools/gen-crd-schemas' output for the OpenAPI
    document of this cluster's API server: nobody edited a generated
    subtree by hand, and the script is deterministic."""
    env = dict(os.environ, KUBECONFIG=kube.kubeconfig)
    p = subprocess.run([os.path.join(ROOT, "tools", "gen-crd-schemas"), "--check"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-6000:]


POD_SPEC = "io.k8s.api.core.v1.PodSpec"


@pytest.mark.parametrize("doc,names", [
    ("{not json", "openapi.json"),
    ([], "components.schemas"),
    ({"info": 5, "components": 5}, "components.schemas"),
    ({"components": {"schemas": {POD_SPEC: 5}}}, POD_SPEC),
    ({"components": {"schemas": {POD_SPEC: {"type": "object", "properties": {"a": 5}}}}}, POD_SPEC + ".a"),
    ({"components": {"schemas": {POD_SPEC: {"type": "object", "properties": []}}}}, POD_SPEC),
    ({"components": {"schemas": {POD_SPEC: {"type": "object", "properties": {"a": {"$ref": 5}}}}}},
     POD_SPEC + ".a"),
    ({"components": {"schemas": {POD_SPEC: {"type": "object", "required": 5}}}}, POD_SPEC),
    ({"components": {"schemas": {POD_SPEC: {"type": "object", "allOf": [5]}}}}, POD_SPEC),
    ({"components": {"schemas": {POD_SPEC: {"type": "array", "items": [1]}}}}, POD_SPEC + "[]"),
], ids=["not-json", "list", "scalars", "type-not-object", "property-not-object", "properties-list", "ref-not-string",
        "required-not-list", "allof-not-ref", "items-list"])
def test_generator_names_what_is_wrong_in_a_malformed_openapi_document(tmp_path, doc, names):
    """A document of the wrong shape is refused with exit 2 and a message
    naming the place (never a Python traceback, and never exit 1, which
    --check means "deploy/crds is out of date")."""
    if isinstance(doc, dict):
        doc.setdefault("info", {"version": "v1.34.0"})
    path = tmp_path / "openapi.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    p = subprocess.run([os.path.join(ROOT, "tools", "gen-crd-schemas"), "--check", "--openapi", str(path)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and names in p.stderr, p.stderr[-2000:]

def test_crds_fit_client_side_apply(deployed):
    """`kubectl apply` (client side) stores the whole CRD in the
    last-applied annotation; the API server refuses annotations over
    256 KiB, so each CRD must stay below that (docs/crd-schemas.md)."""
    for crd in ("sandboxes.agents.x-k8s.io", "sandboxtemplates.extensions.agents.x-k8s.io"):
        ann = deployed.get("crd", crd)["metadata"]["annotations"]
        size = len(ann["kubectl.kubernetes.io/last-applied-configuration"].encode())
        assert size < 256 * 1024, (crd, size)


@pytest.mark.parametrize("api", [BETA, ALPHA])
def test_typo_in_pod_template_is_refused_or_pruned(kube, ns, api):
    """A misspelt PodSpec field: refused under kubectl's default strict
    field validation, dropped (not stored) when validation is off, as for a
    Pod. Both API versions (v1alpha1 goes through the conversion webhook)."""
    name = "typo-" + api.split("/")[1]
    sb = sandbox(name, [main(imagePullPolicyy="Always")], api=api)
    p = kube.create(sb, ns, check=False)
    assert p.returncode != 0
    assert 'unknown field "spec.podTemplate.spec.containers[0].imagePullPolicyy"' in p.stderr

    kube.run("create", "--validate=false", "-n", ns, "-f", "-", input=json.dumps(sb))
    stored = kube.get("sandbox", name, ns)
    (c,) = stored["spec"]["podTemplate"]["spec"]["containers"]
    assert "imagePullPolicyy" not in c
    assert c["name"] == "main" and c["image"] == IMAGE


def test_wrong_type_and_unknown_enum_value_are_refused(kube, ns):
    p = kube.create(sandbox("badtype", [main(ports=[{"containerPort": "http"}])]), ns, check=False)
    assert p.returncode != 0
    assert "spec.podTemplate.spec.containers[0].ports[0].containerPort" in p.stderr
    p = kube.create(sandbox("badenum", [main(imagePullPolicy="Sometimes")]), ns, check=False)
    assert p.returncode != 0
    assert 'Unsupported value: "Sometimes"' in p.stderr
    # an empty string is "unset" to Kubernetes (the Pod gets the default): accepted
    kube.create(sandbox("emptyenum", [main(imagePullPolicy="")]), ns)


def test_duplicate_container_name_is_refused(kube, ns):
    p = kube.create(sandbox("dup", [main(), main()]), ns, check=False)
    assert p.returncode != 0
    assert "spec.podTemplate.spec.containers[1]: Duplicate value" in p.stderr

    tpl = {"apiVersion": EXT, "kind": "SandboxTemplate", "metadata": {"name": "dup"},
           "spec": {"podTemplate": {"spec": {"containers": [main()],
                                             "initContainers": [main(), main()]}}}}
    p = kube.create(tpl, ns, check=False)
    assert p.returncode != 0
    assert "spec.podTemplate.spec.initContainers[1]: Duplicate value" in p.stderr


def test_kubernetes_defaults_appear_on_the_stored_sandbox(kube, ns):
    """The defaults Kubernetes declares in its API (ports[].protocol TCP, a
    grpc probe's service "", a reference's name "") are applied to the
    stored Sandbox; those its Go code applies when it creates a Pod
    (terminationMessagePath, imagePullPolicy) are not, and appear on the Pod
    the controller creates."""
    name = "defaults"
    c = main(ports=[{"containerPort": 8080}], livenessProbe={"grpc": {"port": 9000}})
    kube.create(sandbox(name, [c]), ns)
    spec = kube.get("sandbox", name, ns)["spec"]["podTemplate"]["spec"]
    (got,) = spec["containers"]
    assert got["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert got["livenessProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert "terminationMessagePath" not in got and "imagePullPolicy" not in got

    pod = wait_for(lambda: kube.get("pod", name, ns), timeout=60, desc=f"Pod {ns}/{name}")
    (pc,) = pod["spec"]["containers"]
    assert pc["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert pc["livenessProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert pc["terminationMessagePath"] == "/dev/termination-log"
    assert pc["imagePullPolicy"] == "IfNotPresent"

    # (a Pod refuses empty reference names: server dry run, no Pod)
    c = main(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"key": "k"}}}])
    p = kube.run("create", "--dry-run=server", "-o", "json", "-n", ns, "-f", "-",
                 input=json.dumps(sandbox("refs", [c], imagePullSecrets=[{}])))
    spec = json.loads(p.stdout)["spec"]["podTemplate"]["spec"]
    assert spec["containers"][0]["env"][0]["valueFrom"]["configMapKeyRef"] == {"key": "k", "name": ""}
    assert spec["imagePullSecrets"] == [{"name": ""}]


def test_defaults_reach_pvc_and_network_policy_templates(kube, ns):
    """A SandboxTemplate's PVC template and NetworkPolicy rules are
    declared too: a typo is pruned, the PodSpec defaults apply."""
    tpl = {"apiVersion": EXT, "kind": "SandboxTemplate", "metadata": {"name": "typed"},
           "spec": {"podTemplate": {"spec": {"containers": [main(ports=[{"containerPort": 1}])]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                              "spec": {"accessModes": ["ReadWriteOnce"],
                                                       "storageClassNam": "x",
                                                       "resources": {"requests": {"storage": "1Gi"}}}}],
                    "networkPolicy": {"ingress": [{"ports": [{"port": 80}], "frm": []}]}}}
    p = kube.create(tpl, ns, check=False)
    assert p.returncode != 0
    assert 'unknown field "spec.volumeClaimTemplates[0].spec.storageClassNam"' in p.stderr
    assert 'unknown field "spec.networkPolicy.ingress[0].frm"' in p.stderr
    kube.run("create", "--validate=false", "-n", ns, "-f", "-", input=json.dumps(tpl))
    spec = kube.get("sandboxtemplate", "typed", ns)["spec"]
    assert spec["volumeClaimTemplates"][0]["spec"] == {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    assert spec["networkPolicy"]["ingress"] == [{"ports": [{"port": 80}]}]
    assert spec["podTemplate"]["spec"]["containers"][0]["ports"] == \
        [{"containerPort": 1, "protocol": "TCP"}]


def test_v1alpha1_claim_shutdown_policy_is_an_enum(kube, ns):
    claim = {"apiVersion": "extensions.agents.x-k8s.io/v1alpha1", "kind": "SandboxClaim",
             "metadata": {"name": "bad-policy"},
             "spec": {"sandboxTemplateRef": {"name": "t"}, "lifecycle": {"shutdownPolicy": "Bogus"}}}
    p = kube.run("create", "--dry-run=server", "-n", ns, "-f", "-", input=json.dumps(claim),
                 check=False)
    assert p.returncode != 0
    assert ('spec.lifecycle.shutdownPolicy: Unsupported value: "Bogus": supported values: '
            '"Delete", "DeleteForeground", "Retain"') in p.stderr


def upstream_manifests():
    out = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml"))):
        with open(path) as f:
            text = f.read().replace("${IMAGE}", IMAGE)
        # other placeholders (${SANDBOX_TEMPLATE_NAME}) become valid names
        text = re.sub(r"\$\{(\w+)\}", lambda m: m.group(1).lower().replace("_", "-"), text)
        for i, doc in enumerate(yaml.safe_load_all(text)):
            if doc:
                out.append(pytest.param(doc, id=f"{os.path.basename(path)}#{i}"))
    return out


def leaves(obj, path=""):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from leaves(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from leaves(v, f"{path}[{i}]")
    else:
        yield path, obj


@pytest.mark.parametrize("manifest", upstream_manifests())
def test_every_upstream_example_applies_unchanged(deployed, ns, manifest):
    """Each document of the upstream examples passes the API server's
    validation under the full schemas (server dry run, strict field
    validation), and keeps every field it sets (nothing pruned)."""
    m = copy.deepcopy(manifest)
    m["metadata"].pop("namespace", None)
    p = deployed.run("apply", "--dry-run=server", "-n", ns, "-f", "-", "-o", "json",
                     input=json.dumps(m))
    got = json.loads(p.stdout)
    have = dict(leaves(got.get("spec", {})))
    for path, value in leaves(m.get("spec", {})):
        assert path in have, f"{path} was dropped"
