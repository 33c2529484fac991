"""The Sandbox controller on a real control plane (docs/api.md#shared-conventions, #sandbox, #sandbox-controller).

Every test runs in a fresh namespace against the controller started by the
`controller` fixture with the least-privilege identity of deploy/rbac.
"""
import copy
import glob
import os

import pytest
import yaml

from conftest import SHARED, condition, wait_for

IMAGE = "registry.k8s.io/pause:3.10"
EXAMPLES = os.path.join(SHARED, "upstream-examples")


def name_hash(s):
    """FNV-1a 32, the tracking-label hash of docs/api.md#name-hash (test oracle)."""
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return f"{h:08x}"


def test_name_hash_oracle_matches_spec_vectors():
    assert name_hash("") == "811c9dc5"
    assert name_hash("sandbox-name") == "ab179450"
    assert name_hash("my-sandbox") == "374de8f5"


def sandbox(name, **spec):
    podspec = spec.pop("podspec", None) or {"containers": [{"name": "main", "image": IMAGE}]}
    meta = spec.pop("podmeta", None)
    pt = {"spec": podspec}
    if meta:
        pt["metadata"] = meta
    return {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
            "metadata": {"name": name}, "spec": {"podTemplate": pt, **spec}}


def ready(kube, name, ns):
    sb = kube.get("sandbox", name, ns)
    c = condition(sb, "Ready")
    return sb if c and c["status"] == "True" else None


def wait_ready(kube, name, ns, timeout=60):
    try:
        return wait_for(lambda: ready(kube, name, ns), timeout=timeout,
                        desc=f"Sandbox {ns}/{name} Ready=True")
    except AssertionError as e:
        raise AssertionError(f"{e}\n{why_not_ready(kube, name, ns)}") from None


def why_not_ready(kube, name, ns):
    """What a failed wait for Ready saw: the Sandbox's conditions, its pod's
    node and conditions, the namespace's PVCs and its recent events (a CI
    log is all there is to read afterwards)."""
    def conds(obj):
        return [(c.get("type"), c.get("status"), c.get("reason"), c.get("message"))
                for c in (obj or {}).get("status", {}).get("conditions", [])]
    sb = kube.get("sandbox", name, ns)
    pod = kube.get("pod", name, ns)
    lines = [f"Sandbox conditions: {conds(sb)}",
             f"pod: {'absent' if pod is None else (pod['spec'].get('nodeName'), pod['status'].get('phase'), conds(pod))}"]
    for pvc in kube.list("persistentvolumeclaim", ns):
        lines.append(f"pvc {pvc['metadata']['name']}: {pvc['status'].get('phase')} "
                     f"volume {pvc['spec'].get('volumeName')}")
    evs = sorted(kube.list("events", ns), key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    for e in evs[-15:]:
        lines.append(f"event {e.get('lastTimestamp') or e.get('eventTime')} {e['involvedObject']['kind']}/"
                     f"{e['involvedObject']['name']} {e.get('reason')}: {e.get('message')}")
    return "\n".join(lines)


def sandbox_manifests():
    out = []
    for path in sorted(glob.glob(os.path.join(EXAMPLES, "*.yaml"))):
        with open(path) as f:
            text = f.read().replace("${IMAGE}", IMAGE)
        for doc in yaml.safe_load_all(text):
            if doc and doc.get("kind") == "Sandbox":
                out.append(pytest.param(doc, id=os.path.basename(path)))
    return out


@pytest.mark.parametrize("manifest", sandbox_manifests())
def test_upstream_example_becomes_ready(kube, ns, manifest):
    manifest = copy.deepcopy(manifest)
    manifest["metadata"].pop("namespace", None)
    name = manifest["metadata"]["name"]
    kube.apply(manifest, ns)
    sb = wait_ready(kube, name, ns)
    c = condition(sb, "Ready")
    assert c["reason"] == "DependenciesReady"
    pod = kube.get("pod", name, ns)
    assert pod["metadata"]["labels"]["agents.x-k8s.io/sandbox-name-hash"] == name_hash(name)
    assert pod["status"]["podIP"].startswith("127.")
    assert sb["status"]["podIPs"] == [pod["status"]["podIP"]]
    for vct in manifest["spec"].get("volumeClaimTemplates", []):
        pvc = kube.get("pvc", f"{vct['metadata']['name']}-{name}", ns)
        assert pvc is not None
        assert pvc["metadata"]["ownerReferences"][0]["uid"] == sb["metadata"]["uid"]


def test_pod_and_service_carry_owner_labels_annotations(kube, ns):
    name = "meta-box"
    podmeta = {"labels": {"team": "a", "agents.x-k8s.io/forged": "x"},
               "annotations": {"note": "hi", "extensions.agents.x-k8s.io/forged": "y"}}
    podspec = {"containers": [{"name": "main", "image": IMAGE,
                               "ports": [{"containerPort": 8888, "name": "http"},
                                         {"containerPort": 9090}]}]}
    kube.apply(sandbox(name, service=True, podspec=podspec, podmeta=podmeta), ns)
    sb = wait_ready(kube, name, ns)
    uid = sb["metadata"]["uid"]
    h = name_hash(name)

    assert condition(sb, "Ready")["message"] == "Pod is Ready; Service Exists"
    susp = condition(sb, "Suspended")
    assert (susp["status"], susp["reason"]) == ("False", "NotSuspended")
    sched = condition(sb, "PodScheduled")
    assert sched["status"] == "True"
    st = sb["status"]
    assert st["service"] == name
    assert st["serviceFQDN"] == f"{name}.{ns}.svc.cluster.local"
    assert st["selector"] == f"agents.x-k8s.io/sandbox-name-hash={h}"
    assert st["nodeName"].startswith("kwok-") or st["nodeName"]
    assert sb["metadata"]["annotations"]["agents.x-k8s.io/pod-name"] == name

    pod = kube.get("pod", name, ns)
    labels, ann = pod["metadata"]["labels"], pod["metadata"].get("annotations", {})
    assert labels["team"] == "a"
    assert labels["agents.x-k8s.io/sandbox-name-hash"] == h
    assert "agents.x-k8s.io/forged" not in labels
    assert ann["note"] == "hi"
    assert "extensions.agents.x-k8s.io/forged" not in ann
    assert ann["agents.x-k8s.io/propagated-labels"] == "team"
    assert ann["agents.x-k8s.io/propagated-annotations"] == "note"
    ref = pod["metadata"]["ownerReferences"]
    assert len(ref) == 1
    assert ref[0]["apiVersion"] == "agents.x-k8s.io/v1beta1"
    assert (ref[0]["kind"], ref[0]["name"], ref[0]["uid"]) == ("Sandbox", name, uid)
    assert ref[0]["controller"] is True and ref[0]["blockOwnerDeletion"] is True

    svc = kube.get("service", name, ns)
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["selector"] == {"agents.x-k8s.io/sandbox-name-hash": h}
    assert svc["metadata"]["labels"]["agents.x-k8s.io/sandbox-name-hash"] == h
    ports = {(p["name"], p["port"], p["protocol"]) for p in svc["spec"]["ports"]}
    assert ports == {("http", 8888, "TCP"), ("p-9090-tcp", 9090, "TCP")}
    sref = svc["metadata"]["ownerReferences"][0]
    assert (sref["kind"], sref["uid"], sref["controller"]) == ("Sandbox", uid, True)


def test_deleted_pod_is_recreated_and_ready_returns(kube, ns):
    name = "phoenix"
    kube.apply(sandbox(name), ns)
    sb = wait_ready(kube, name, ns)
    before = kube.get("pod", name, ns)["metadata"]["uid"]
    susp_before = condition(sb, "Suspended")
    kube.delete("pod", name, ns)

    def new_pod():
        p = kube.get("pod", name, ns)
        return p if p and p["metadata"]["uid"] != before else None
    pod = wait_for(new_pod, timeout=60, desc="a new pod with a new UID")
    assert pod["metadata"]["ownerReferences"][0]["name"] == name
    sb = wait_ready(kube, name, ns)
    # deleting the pod of a Running sandbox must not touch Suspended
    susp = condition(sb, "Suspended")
    assert susp["status"] == "False"
    assert susp["lastTransitionTime"] == susp_before["lastTransitionTime"]
    assert len(kube.list("pods", ns, f"agents.x-k8s.io/sandbox-name-hash={name_hash(name)}")) == 1


def test_suspend_removes_pod_and_running_brings_it_back(kube, ns):
    name = "sleepy"
    kube.apply(sandbox(name, service=True), ns)
    wait_ready(kube, name, ns)
    kube.patch("sandbox", name, ns, {"spec": {"operatingMode": "Suspended"}})

    def suspended():
        sb = kube.get("sandbox", name, ns)
        c = condition(sb, "Suspended")
        return sb if c and c["status"] == "True" and kube.get("pod", name, ns) is None else None
    sb = wait_for(suspended, timeout=60, desc="Suspended=True and the pod gone")
    c = condition(sb, "Suspended")
    assert (c["reason"], c["message"]) == ("PodTerminated", "Pod has been terminated. Sandbox is suspended")
    r = condition(sb, "Ready")
    assert (r["status"], r["reason"], r["message"]) == ("False", "SandboxSuspended", "Sandbox is suspended")
    assert "agents.x-k8s.io/pod-name" not in sb["metadata"].get("annotations", {})
    assert condition(sb, "PodScheduled") is None
    # the Service is kept while suspended
    assert kube.get("service", name, ns) is not None

    kube.patch("sandbox", name, ns, {"spec": {"operatingMode": "Running"}})
    sb = wait_ready(kube, name, ns)
    c = condition(sb, "Suspended")
    assert (c["status"], c["reason"]) == ("False", "NotSuspended")
    assert kube.get("pod", name, ns) is not None


def test_deleting_sandbox_garbage_collects_pod_and_service(kube, ns):
    name = "ephemeral"
    kube.apply(sandbox(name, service=True), ns)
    wait_ready(kube, name, ns)
    kube.delete("sandbox", name, ns)
    wait_for(lambda: kube.get("pod", name, ns) is None and kube.get("service", name, ns) is None,
             timeout=90, desc="garbage collection of the pod and the service")


def test_service_false_deletes_owned_service(kube, ns):
    name = "svc-toggle"
    kube.apply(sandbox(name, service=True), ns)
    wait_ready(kube, name, ns)
    kube.patch("sandbox", name, ns, {"spec": {"service": False}})
    wait_for(lambda: kube.get("service", name, ns) is None, timeout=60, desc="service deleted")
    sb = wait_for(lambda: (lambda s: s if not s["status"].get("service") else None)(kube.get("sandbox", name, ns)),
                  timeout=30, desc="status.service cleared")
    assert not sb["status"].get("serviceFQDN")
    assert condition(sb, "Ready")["message"] == "Pod is Ready"


def test_volume_claim_templates_are_immutable(kube, ns):
    name = "vct-box"
    vct = [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    kube.apply(sandbox(name, volumeClaimTemplates=vct), ns)
    # the pod waits for kube-controller-manager's hostpath provisioner to bind
    # the PVC, which once took over a minute under the sanitizer pass
    wait_ready(kube, name, ns, timeout=180)
    pvc = kube.get("pvc", f"data-{name}", ns)
    assert pvc["metadata"]["labels"]["agents.x-k8s.io/sandbox-name-hash"] == name_hash(name)
    pod = kube.get("pod", name, ns)
    vols = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert vols["data"]["persistentVolumeClaim"]["claimName"] == f"data-{name}"
    p = kube.run("patch", "sandbox", name, "-n", ns, "--type", "json", "-p",
                 '[{"op":"replace","path":"/spec/volumeClaimTemplates/0/spec/resources/requests/storage","value":"2Gi"}]',
                 check=False)
    assert p.returncode != 0
    assert "volumeClaimTemplates is immutable" in p.stderr


def test_invalid_enum_is_rejected(kube, ns):
    p = kube.create(sandbox("bad-mode", operatingMode="Paused"), ns, check=False)
    assert p.returncode != 0
    assert "operatingMode" in p.stderr


def test_long_name_with_service_is_refused_clearly(kube, ns):
    name = "a" * 64
    p = kube.create(sandbox(name, service=True), ns, check=False)
    if p.returncode != 0:
        # rejected up front by the CRD's validation rule
        assert "63" in p.stderr, p.stderr
        return
    # accepted: the controller must report why it cannot make the Service
    sb = wait_for(lambda: (lambda s: s if (condition(s, "Ready") or {}).get("reason") == "ReconcilerError" else None)(
        kube.get("sandbox", name, ns)), timeout=60, desc="ReconcilerError")
    assert "service" in condition(sb, "Ready")["message"].lower()


def test_two_owned_pods_report_multiple_pods_with_an_event(kube, ns):
    name = "twins"
    kube.apply(sandbox(name), ns)
    sb = wait_ready(kube, name, ns)
    twin = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name + "-twin",
                         "labels": {"agents.x-k8s.io/sandbox-name-hash": name_hash(name)},
                         "ownerReferences": [{"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                                              "name": name, "uid": sb["metadata"]["uid"],
                                              "controller": True}]},
            "spec": {"containers": [{"name": "main", "image": IMAGE}]}}
    kube.create(twin, ns)
    sb = wait_for(lambda: (lambda s: s if (condition(s, "Ready") or {}).get("reason") == "MultiplePods" else None)(
        kube.get("sandbox", name, ns)), timeout=60, desc="Ready reason MultiplePods")
    msg = "multiple Pods (2) are controlled by this Sandbox; refusing to choose or create a Pod"
    assert condition(sb, "Ready")["message"] == msg

    def warning_event():
        evs = [e for e in kube.list("events.events.k8s.io", ns)
               if e.get("reason") == "MultiplePods" and e["regarding"]["name"] == name]
        return evs[0] if evs else None
    ev = wait_for(warning_event, timeout=60, desc="a MultiplePods event")
    assert (ev["type"], ev["action"], ev["note"]) == ("Warning", "Reconciling", msg)
    assert ev["reportingController"] == "sandbox-controller"
    assert ev["regarding"]["kind"] == "Sandbox" and ev["regarding"]["uid"] == sb["metadata"]["uid"]
    # nothing was deleted or created to "fix" it
    assert len(kube.list("pods", ns, f"agents.x-k8s.io/sandbox-name-hash={name_hash(name)}")) == 2
