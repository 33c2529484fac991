"""The core Sandbox scenarios of upstream's e2e suite (docs/upstream.md#upstream-e2e-scenarios
"Core") and the known failure modes of the Sandbox controller
(docs/api.md#sandbox-controller, #edge-cases), on the real control plane of tools/local-cluster.

What test_sandbox.py already covers is not repeated here: TestSimpleSandbox
(test_pod_and_service_carry_owner_labels_annotations), a pod deleted out of
band (test_deleted_pod_is_recreated_and_ready_returns, which also checks
that Suspended keeps its transition time), garbage collection, service
false, volumeClaimTemplates immutability and MultiplePods with its event.

kwok plays the kubelet of the nodes annotated kwok.x-k8s.io/node=fake: their
pods become Running/Ready with an IP in about a second, and on deletion kwok
empties the pod's finalizers and removes it at once. Two scenarios need
something kwok does not do:
  - a pod held by a finalizer (suspension of a terminating pod): the pod is
    bound by spec.nodeName to a node no kubelet (and no kwok) serves, with
    terminationGracePeriodSeconds 0, so the API server keeps it Terminating
    exactly as long as the finalizer is there, then removes it;
  - a completed pod (phase Succeeded): kwok completes only Job pods; the
    test writes the pod's status subresource as admin (phase Succeeded, the
    IP kept) and kwok leaves it so, as none of its stages matches a pod that
    has an IP and is not Running.
"""
import datetime
import json
import subprocess
import threading

from conftest import condition, wait_for
from test_sandbox import IMAGE, name_hash, sandbox, wait_ready

NOT_ADOPTABLE = ('missing required pool authorization label ("agents.x-k8s.io/adoptable") '
                 'or sandbox tracking label ("agents.x-k8s.io/sandbox-name-hash")')
# A node name that neither kwok nor any kubelet serves (see the module doc).
NO_KUBELET_NODE = "no-kubelet-node"


def cond(sb, ctype):
    c = condition(sb, ctype)
    return (c["status"], c["reason"], c["message"]) if c else None


def wait_sandbox(kube, name, ns, pred, desc, timeout=60):
    """Polls the Sandbox until pred(sb) holds; returns it."""
    def check():
        sb = kube.get("sandbox", name, ns)
        return sb if sb and pred(sb) else None
    return wait_for(check, timeout=timeout, desc=desc)


def wait_reason(kube, name, ns, ctype, reason, timeout=60):
    return wait_sandbox(kube, name, ns, lambda s: (condition(s, ctype) or {}).get("reason") == reason,
                        f"{ctype} reason {reason} on {ns}/{name}", timeout)


def parse_time(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)


def rfc3339(dt):
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def wait_clock_past(ts):
    """Waits until the wall clock is in a later second than the RFC 3339 `ts`, so
    that a condition flipping now gets a lastTransitionTime after `ts` (they
    have a resolution of one second)."""
    wait_for(lambda: datetime.datetime.now(datetime.timezone.utc) >= parse_time(ts) + datetime.timedelta(seconds=1),
             timeout=5, interval=0.05, desc=f"the clock past {ts}")


def create_json(kube, manifest, ns):
    """Creates `manifest` and returns the object as the API server stored it."""
    return json.loads(kube.run("create", "-n", ns, "-o", "json", "-f", "-", input=json.dumps(manifest)).stdout)


def pod_of(kube, name, ns):
    return kube.get("pod", name, ns)


def owner_uids(obj):
    return [r["uid"] for r in obj["metadata"].get("ownerReferences", []) if r.get("controller")]


def plain_pod(name, labels=None, owner=None):
    md = {"name": name, "labels": labels or {}}
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"containers": [{"name": "main", "image": IMAGE}]}}


# ---- docs/upstream.md#upstream-e2e-scenarios core scenarios ----

def test_suspend_resume_cycle_with_operating_mode(kube, ns):
    """TestSandboxSuspendResumeCycleWithOperatingMode: Running -> Suspended ->
    Running deletes the pod, then creates a new one; Suspended's
    lastTransitionTime advances at each flip."""
    name = "cycle"
    kube.apply(sandbox(name), ns)
    sb = wait_ready(kube, name, ns)
    t0 = condition(sb, "Suspended")["lastTransitionTime"]
    assert cond(sb, "Suspended") == ("False", "NotSuspended", "Sandbox is not suspended")
    first_uid = pod_of(kube, name, ns)["metadata"]["uid"]

    wait_clock_past(t0)
    kube.patch("sandbox", name, ns, {"spec": {"operatingMode": "Suspended"}})
    sb = wait_sandbox(kube, name, ns, lambda s: (condition(s, "Suspended") or {}).get("status") == "True",
                      "Suspended=True")
    assert cond(sb, "Suspended") == ("True", "PodTerminated", "Pod has been terminated. Sandbox is suspended")
    assert cond(sb, "Ready") == ("False", "SandboxSuspended", "Sandbox is suspended")
    t1 = condition(sb, "Suspended")["lastTransitionTime"]
    assert parse_time(t1) > parse_time(t0)
    assert pod_of(kube, name, ns) is None
    assert not sb["status"].get("podIPs") and not sb["status"].get("nodeName")

    wait_clock_past(t1)
    kube.patch("sandbox", name, ns, {"spec": {"operatingMode": "Running"}})
    sb = wait_ready(kube, name, ns)
    assert cond(sb, "Suspended") == ("False", "NotSuspended", "Sandbox is not suspended")
    t2 = condition(sb, "Suspended")["lastTransitionTime"]
    assert parse_time(t2) > parse_time(t1)
    pod = pod_of(kube, name, ns)
    assert pod["metadata"]["uid"] != first_uid
    assert owner_uids(pod) == [sb["metadata"]["uid"]]
    # the pod spec is the template's, nothing defaulted by the controller
    assert "automountServiceAccountToken" not in pod["spec"]
    assert sb["metadata"]["annotations"]["agents.x-k8s.io/pod-name"] == name


def test_suspension_with_terminating_pod(kube, ns):
    """TestSandboxSuspensionWithTerminatingPod: while a finalizer holds the
    pod, Suspended stays False/PodTerminating with its transition time
    unchanged (and the pod-name annotation stays); once the pod is gone it
    is True/PodTerminated."""
    name = "held"
    podspec = {"nodeName": NO_KUBELET_NODE, "terminationGracePeriodSeconds": 0,
               "containers": [{"name": "main", "image": IMAGE}]}
    kube.apply(sandbox(name, podspec=podspec), ns)
    sb = wait_sandbox(kube, name, ns, lambda s: condition(s, "Suspended") and
                      s["metadata"].get("annotations", {}).get("agents.x-k8s.io/pod-name"),
                      "the pod created and the Suspended condition set")
    t0 = condition(sb, "Suspended")["lastTransitionTime"]
    kube.patch("pod", name, ns, {"metadata": {"finalizers": ["agents.x-k8s.io/test-hold"]}})

    kube.patch("sandbox", name, ns, {"spec": {"operatingMode": "Suspended"}})
    sb = wait_reason(kube, name, ns, "Suspended", "PodTerminating")
    assert cond(sb, "Suspended") == ("False", "PodTerminating", "Pod is terminating. Sandbox is suspending")
    assert condition(sb, "Suspended")["lastTransitionTime"] == t0
    assert cond(sb, "Ready") == ("False", "SandboxSuspended", "Sandbox is suspending")
    assert sb["metadata"]["annotations"]["agents.x-k8s.io/pod-name"] == name
    pod = pod_of(kube, name, ns)
    assert pod["metadata"].get("deletionTimestamp")

    kube.patch("pod", name, ns, {"metadata": {"finalizers": None}})
    sb = wait_reason(kube, name, ns, "Suspended", "PodTerminated")
    assert cond(sb, "Suspended") == ("True", "PodTerminated", "Pod has been terminated. Sandbox is suspended")
    assert cond(sb, "Ready") == ("False", "SandboxSuspended", "Sandbox is suspended")
    assert "agents.x-k8s.io/pod-name" not in sb["metadata"].get("annotations", {})
    assert pod_of(kube, name, ns) is None


def test_terminating_pod_is_waited_on_not_duplicated(kube, ns):
    """docs/api.md#edge-cases: a Running sandbox's pod deleted out of band but held by a
    finalizer is waited on: no second pod while it terminates (checked after
    a reconcile that saw it, proven by observedGeneration); once it is gone
    a new pod with the same name is created."""
    name = "waiter"
    podspec = {"nodeName": NO_KUBELET_NODE, "terminationGracePeriodSeconds": 0,
               "containers": [{"name": "main", "image": IMAGE}]}
    kube.apply(sandbox(name, podspec=podspec), ns)
    pod = wait_for(lambda: pod_of(kube, name, ns), desc="the pod")
    kube.patch("pod", name, ns, {"metadata": {"finalizers": ["agents.x-k8s.io/test-hold"]}})
    kube.delete("pod", name, ns)
    wait_for(lambda: (pod_of(kube, name, ns) or {}).get("metadata", {}).get("deletionTimestamp"),
             desc="the pod terminating")
    # a spec edit: once its generation is observed, a pass has seen the terminating pod
    gen = json.loads(kube.run("patch", "sandbox", name, "-n", ns, "--type", "merge", "-o", "json", "-p",
                              json.dumps({"spec": {"podTemplate": {"metadata": {"labels": {"x": "1"}}}}}))
                     .stdout)["metadata"]["generation"]
    sb = wait_sandbox(kube, name, ns, lambda s: (condition(s, "Ready") or {}).get("observedGeneration") == gen,
                      "the new generation observed")
    pods = kube.list("pods", ns)
    assert [p["metadata"]["uid"] for p in pods] == [pod["metadata"]["uid"]]
    assert cond(sb, "Suspended") == ("False", "NotSuspended", "Sandbox is not suspended")

    kube.patch("pod", name, ns, {"metadata": {"finalizers": None}})
    new = wait_for(lambda: (lambda p: p if p and p["metadata"]["uid"] != pod["metadata"]["uid"] else None)(
        pod_of(kube, name, ns)), desc="a new pod")
    assert owner_uids(new) == [sb["metadata"]["uid"]]
    assert len(kube.list("pods", ns)) == 1


def test_suspension_blocked_by_unowned_pod(kube, ns):
    """TestSandboxSuspensionBlockedByUnownedPodConflict: an unowned pod with
    the sandbox's name is never deleted: Suspended False/PodNotOwned,
    Ready False/SandboxSuspended, the pod untouched."""
    name = "squatted"
    kube.create(plain_pod(name, labels={"app": "mine"}), ns)
    before = wait_for(lambda: (lambda p: p if p and p["status"].get("podIP") else None)(pod_of(kube, name, ns)),
                      desc="the unowned pod running")
    kube.apply(sandbox(name, operatingMode="Suspended"), ns)
    sb = wait_reason(kube, name, ns, "Suspended", "PodNotOwned")
    assert cond(sb, "Suspended") == ("False", "PodNotOwned",
                                     "Refused to delete pod because it is not owned by this sandbox")
    assert cond(sb, "Ready") == ("False", "SandboxSuspended", "Sandbox is suspending")
    assert sb["status"]["selector"] == f"agents.x-k8s.io/sandbox-name-hash={name_hash(name)}"
    assert not sb["status"].get("podIPs")
    assert condition(sb, "PodScheduled") is None
    after = pod_of(kube, name, ns)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert not after["metadata"].get("deletionTimestamp")
    assert after["metadata"]["labels"] == {"app": "mine"}
    assert "ownerReferences" not in after["metadata"]
    assert "annotations" not in after["metadata"]


def test_parallel_sandboxes(kube, ns):
    """TestParallelSandboxes: 20 Sandboxes created at once all become Ready."""
    names = [f"par-{i:02d}" for i in range(20)]
    items = [sandbox(n) for n in names]
    kube.create({"apiVersion": "v1", "kind": "List", "items": items}, ns)

    def all_ready():
        sbs = kube.list("sandboxes", ns)
        ok = [s for s in sbs if (condition(s, "Ready") or {}).get("status") == "True"]
        return len(ok) == len(names) and ok
    sbs = wait_for(all_ready, timeout=120, interval=0.5, desc="20 Sandboxes Ready")
    for s in sbs:
        assert s["status"]["podIPs"]
    pods = kube.list("pods", ns)
    assert sorted(p["metadata"]["name"] for p in pods) == names


def test_shutdown_time_with_delete_policy(kube, ns):
    """TestSandboxShutdownTime: the Sandbox (Delete policy) is deleted no
    earlier than shutdownTime, its pod and service with it."""
    name = "doomed"
    kube.apply(sandbox(name, service=True), ns)
    wait_ready(kube, name, ns)
    shutdown = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) + datetime.timedelta(seconds=3)
    kube.patch("sandbox", name, ns, {"spec": {"shutdownTime": rfc3339(shutdown), "shutdownPolicy": "Delete"}})

    def gone():
        if kube.get("sandbox", name, ns) is not None:
            return False
        # observed gone: it must not have been deleted before its time
        assert datetime.datetime.now(datetime.timezone.utc) >= shutdown
        return True
    wait_for(gone, timeout=60, desc="the Sandbox deleted at its shutdownTime")
    wait_for(lambda: pod_of(kube, name, ns) is None and kube.get("service", name, ns) is None,
             timeout=60, desc="pod and service gone")


def test_shutdown_time_with_retain_policy(kube, ns):
    """Retain: Ready False/SandboxExpired, pod and service deleted, the PVC kept,
    the status reset to its conditions (PodScheduled removed)."""
    name = "retained"
    vct = [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    kube.apply(sandbox(name, service=True, volumeClaimTemplates=vct, shutdownPolicy="Retain"), ns)
    sb = wait_ready(kube, name, ns)
    pvc_uid = kube.get("pvc", f"data-{name}", ns)["metadata"]["uid"]
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)
    kube.patch("sandbox", name, ns, {"spec": {"shutdownTime": rfc3339(past)}})

    sb = wait_sandbox(kube, name, ns, lambda s: (condition(s, "Ready") or {}).get("reason") == "SandboxExpired"
                      and not s["status"].get("selector"), "SandboxExpired and the status reset")
    assert cond(sb, "Ready") == ("False", "SandboxExpired", "Sandbox has expired")
    assert condition(sb, "PodScheduled") is None
    assert cond(sb, "Suspended") == ("False", "NotSuspended", "Sandbox is not suspended")
    assert set(sb["status"]) == {"conditions"}, sb["status"]
    wait_for(lambda: pod_of(kube, name, ns) is None and kube.get("service", name, ns) is None,
             timeout=60, desc="pod and service deleted")
    pvc = kube.get("pvc", f"data-{name}", ns)
    assert pvc is not None and pvc["metadata"]["uid"] == pvc_uid
    assert not pvc["metadata"].get("deletionTimestamp")
    # the expired Sandbox stays, and no pod comes back
    sb = kube.get("sandbox", name, ns)
    assert sb is not None and condition(sb, "Ready")["reason"] == "SandboxExpired"
    assert pod_of(kube, name, ns) is None


def complete_pod(kube, name, ns):
    """Makes the pod Succeeded through its status subresource (admin), keeping its IP."""
    pod = pod_of(kube, name, ns)
    status = {"phase": "Succeeded",
              "conditions": [{"type": "Ready", "status": "False", "reason": "PodCompleted"},
                             {"type": "PodScheduled", "status": "True"}],
              "podIP": pod["status"]["podIP"], "podIPs": pod["status"]["podIPs"]}
    kube.patch("pod", name, ns, {"status": status}, subresource="status")


def test_retained_expiry_preserves_finished_condition(kube, ns):
    """TestSandboxRetainedExpiryPreservesFinishedCondition: a completed pod gives
    Finished True/PodSucceeded (Ready False/PodSucceeded); expiry with Retain
    deletes the pod and keeps Finished."""
    name = "finisher"
    kube.apply(sandbox(name, service=True, shutdownPolicy="Retain"), ns)
    wait_ready(kube, name, ns)
    complete_pod(kube, name, ns)
    sb = wait_reason(kube, name, ns, "Finished", "PodSucceeded")
    assert cond(sb, "Finished") == ("True", "PodSucceeded", "Pod completed successfully")
    assert cond(sb, "Ready") == ("False", "PodSucceeded", "Pod completed successfully")
    # kwok left the phase alone, and the pod is neither restarted nor deleted
    assert pod_of(kube, name, ns)["status"]["phase"] == "Succeeded"
    finished = condition(sb, "Finished")

    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)
    kube.patch("sandbox", name, ns, {"spec": {"shutdownTime": rfc3339(past)}})
    sb = wait_sandbox(kube, name, ns, lambda s: (condition(s, "Ready") or {}).get("reason") == "SandboxExpired"
                      and not s["status"].get("selector"), "SandboxExpired and the status reset")
    assert condition(sb, "Finished") == finished
    wait_for(lambda: pod_of(kube, name, ns) is None and kube.get("service", name, ns) is None,
             timeout=60, desc="pod and service deleted")
    sb = kube.get("sandbox", name, ns)
    assert condition(sb, "Finished") == finished
    assert cond(sb, "Ready") == ("False", "SandboxExpired", "Sandbox has expired")


def test_volume_claim_templates_kept_across_suspend_resume(kube, ns):
    """TestSandboxVolumeClaimTemplates: PVC `data-<sandbox>` owned by the
    Sandbox, with the tracking label and the template's labels, mounted as
    volume `data` (replacing the template's own `data` volume); the same
    claim survives a suspend/resume cycle and is mounted by the new pod."""
    name = "storage"
    vct = [{"metadata": {"name": "data", "labels": {"tier": "fast"}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    podspec = {"containers": [{"name": "main", "image": IMAGE,
                               "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
               "volumes": [{"name": "data", "emptyDir": {}}, {"name": "scratch", "emptyDir": {}}]}
    kube.apply(sandbox(name, podspec=podspec, volumeClaimTemplates=vct), ns)
    sb = wait_ready(kube, name, ns, timeout=180)   # the PVC's provisioning (test_sandbox.py)
    pvc = kube.get("pvc", f"data-{name}", ns)
    assert owner_uids(pvc) == [sb["metadata"]["uid"]]
    assert pvc["metadata"]["labels"] == {"tier": "fast", "agents.x-k8s.io/sandbox-name-hash": name_hash(name)}

    def volumes():
        # without the token volume the ServiceAccount admission plugin adds
        return [v for v in pod_of(kube, name, ns)["spec"]["volumes"]
                if not v["name"].startswith("kube-api-access-")]
    vols = volumes()
    assert [v["name"] for v in vols] == ["scratch", "data"]
    assert vols[1]["persistentVolumeClaim"] == {"claimName": f"data-{name}"}

    kube.patch("sandbox", name, ns, {"spec": {"operatingMode": "Suspended"}})
    wait_reason(kube, name, ns, "Suspended", "PodTerminated")
    kept = kube.get("pvc", f"data-{name}", ns)
    assert kept["metadata"]["uid"] == pvc["metadata"]["uid"]
    kube.patch("sandbox", name, ns, {"spec": {"operatingMode": "Running"}})
    wait_ready(kube, name, ns)
    assert kube.get("pvc", f"data-{name}", ns)["metadata"]["uid"] == pvc["metadata"]["uid"]
    assert volumes()[1]["persistentVolumeClaim"] == {"claimName": f"data-{name}"}


# ---- failure modes ----

def test_ready_never_true_before_pod_ip_and_pod_name_annotation(kube, ns):
    """Every version of the Sandbox from its creation on, as a watch from the
    creation's resourceVersion delivers them: Ready=True only together with
    status.podIPs and the agents.x-k8s.io/pod-name annotation."""
    name = "watched"
    created = create_json(kube, sandbox(name, service=True), ns)
    rv = created["metadata"]["resourceVersion"]
    path = (f"/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes?watch=1&resourceVersion={rv}"
            f"&fieldSelector=metadata.name%3D{name}&timeoutSeconds=60")
    proc = subprocess.Popen([*kube.kubectl, "--kubeconfig", kube.kubeconfig, "get", "--raw", path],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen = [created]
    done = threading.Event()

    def reader():
        for line in proc.stdout:
            if line.strip():
                seen.append(json.loads(line)["object"])
                if (condition(seen[-1], "Ready") or {}).get("status") == "True":
                    done.set()
        done.set()
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        wait_for(done.is_set, timeout=60, interval=0.1, desc="a watched version with Ready=True")
    finally:
        proc.terminate()
        proc.wait()
        t.join(5)
    assert (condition(seen[-1], "Ready") or {}).get("status") == "True", "the watch ended before Ready"
    assert len(seen) >= 3
    for sb in seen:
        if (condition(sb, "Ready") or {}).get("status") == "True":
            assert sb["status"].get("podIPs"), sb
            assert sb["metadata"].get("annotations", {}).get("agents.x-k8s.io/pod-name") == name, sb


def test_stale_pod_name_annotation_adopts_the_owned_pod(kube, ns, exclusive_controller):
    """The pod-name annotation names a missing pod while another pod owned by
    the Sandbox exists (under another name): the owned pod is used and named
    by the annotation; no second pod is created. The state is made while no
    controller runs, then one starts."""
    name = "stale"
    other = "stale-by-another-name"
    sb = create_json(kube, {**sandbox(name), "metadata": {
        "name": name, "annotations": {"agents.x-k8s.io/pod-name": "gone-pod"}}}, ns)
    owner = {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "name": name,
             "uid": sb["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    kube.create(plain_pod(other, labels={"agents.x-k8s.io/sandbox-name-hash": name_hash(name)}, owner=owner), ns)
    c = exclusive_controller()
    c.wait_leading()
    sb = wait_ready(kube, name, ns)
    assert sb["metadata"]["annotations"]["agents.x-k8s.io/pod-name"] == other
    pods = kube.list("pods", ns)
    assert [p["metadata"]["name"] for p in pods] == [other]
    assert sb["status"]["podIPs"] == [pods[0]["status"]["podIP"]]


def test_unowned_pod_with_adoptable_label_is_adopted(kube, ns):
    name = "adoptee"
    kube.create(plain_pod(name, labels={"agents.x-k8s.io/adoptable": "true"}), ns)
    before = wait_for(lambda: (lambda p: p if p and p["status"].get("podIP") else None)(pod_of(kube, name, ns)),
                      desc="the unowned pod running")
    kube.apply(sandbox(name), ns)
    sb = wait_ready(kube, name, ns)
    pod = pod_of(kube, name, ns)
    assert pod["metadata"]["uid"] == before["metadata"]["uid"]
    ref = pod["metadata"]["ownerReferences"]
    assert [(r["apiVersion"], r["kind"], r["name"], r["uid"], r["controller"], r["blockOwnerDeletion"])
            for r in ref] == [("agents.x-k8s.io/v1beta1", "Sandbox", name, sb["metadata"]["uid"], True, True)]
    assert pod["metadata"]["labels"]["agents.x-k8s.io/sandbox-name-hash"] == name_hash(name)
    assert sb["metadata"]["annotations"]["agents.x-k8s.io/pod-name"] == name


def test_unowned_pod_without_authorisation_is_refused(kube, ns):
    name = "stranger"
    kube.create(plain_pod(name, labels={"app": "x"}), ns)
    before = wait_for(lambda: pod_of(kube, name, ns), desc="the unowned pod")
    kube.apply(sandbox(name), ns)
    sb = wait_reason(kube, name, ns, "Ready", "ReconcilerError")
    assert cond(sb, "Ready") == ("False", "ReconcilerError",
                                 f'Error seen: cannot adopt unowned pod "{name}": {NOT_ADOPTABLE}')
    assert cond(sb, "PodScheduled") == ("Unknown", "PodSchedulingUnknown",
                                        "Pod state is unknown. Pod scheduling cannot be determined")
    after = pod_of(kube, name, ns)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert "ownerReferences" not in after["metadata"]
    assert after["metadata"]["labels"] == {"app": "x"}


def test_foreign_owned_pod_is_refused_and_untouched(kube, ns):
    name = "foreign"
    cm = json.loads(kube.run("create", "configmap", "owner-cm", "-n", ns, "-o", "json").stdout)
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner-cm", "uid": cm["metadata"]["uid"],
             "controller": True}
    kube.create(plain_pod(name, labels={"agents.x-k8s.io/adoptable": "true"}, owner=owner), ns)
    before = wait_for(lambda: pod_of(kube, name, ns), desc="the foreign pod")
    kube.apply(sandbox(name), ns)
    sb = wait_reason(kube, name, ns, "Ready", "ReconcilerError")
    assert cond(sb, "Ready")[2] == (f'Error seen: pod "{name}" is owned by ConfigMap/owner-cm '
                                    f'(UID: {cm["metadata"]["uid"]}), not by sandbox "{name}"')
    after = pod_of(kube, name, ns)
    assert after["metadata"]["ownerReferences"] == before["metadata"]["ownerReferences"]
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert "agents.x-k8s.io/pod-name" not in sb["metadata"].get("annotations", {})


def headless_service(name, labels=None, cluster_ip="None"):
    spec = {"selector": {"app": "whatever"}, "ports": [{"port": 80, "name": "web"}]}
    if cluster_ip is not None:
        spec["clusterIP"] = cluster_ip
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels or {}},
            "spec": spec}


def test_unowned_service_adoption_and_refusals(kube, ns):
    """An adoptable headless Service is adopted (owner, selector, ports
    rewritten); one with a real ClusterIP is refused with the exact message;
    one without authorisation is refused and left as it was."""
    ok, ip, bare = "svc-adopt", "svc-clusterip", "svc-bare"
    kube.create(headless_service(ok, labels={"agents.x-k8s.io/adoptable": "true"}), ns)
    kube.create(headless_service(ip, labels={"agents.x-k8s.io/adoptable": "true"}, cluster_ip=None), ns)
    kube.create(headless_service(bare), ns)
    assigned = kube.get("service", ip, ns)["spec"]["clusterIP"]
    assert assigned and assigned != "None"
    for n in (ok, ip, bare):
        kube.apply(sandbox(n, service=True), ns)

    sb = wait_ready(kube, ok, ns)
    svc = kube.get("service", ok, ns)
    assert owner_uids(svc) == [sb["metadata"]["uid"]]
    assert svc["spec"]["selector"] == {"agents.x-k8s.io/sandbox-name-hash": name_hash(ok)}
    assert "ports" not in svc["spec"]   # the template has no ports
    assert sb["status"]["service"] == ok
    assert cond(sb, "Ready") == ("True", "DependenciesReady", "Pod is Ready; Service Exists")

    sb = wait_reason(kube, ip, ns, "Ready", "ReconcilerError")
    assert cond(sb, "Ready")[2] == (f'Error seen: cannot adopt service "{ip}": ClusterIP is "{assigned}" '
                                    f'(expected "None", field is immutable)')
    assert "ownerReferences" not in kube.get("service", ip, ns)["metadata"]

    sb = wait_reason(kube, bare, ns, "Ready", "ReconcilerError")
    assert cond(sb, "Ready")[2] == f'Error seen: cannot adopt unowned service "{bare}": {NOT_ADOPTABLE}'
    svc = kube.get("service", bare, ns)
    assert "ownerReferences" not in svc["metadata"]
    assert svc["spec"]["selector"] == {"app": "whatever"}
    # the pod step is not held up by the Service step
    assert pod_of(kube, bare, ns) is not None


def unowned_pvc(name, labels=None):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def test_unowned_pvc_adoption_and_refusal(kube, ns):
    vct = [{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    kube.create(unowned_pvc("data-pvc-ok", labels={"agents.x-k8s.io/adoptable": "true"}), ns)
    kube.create(unowned_pvc("data-pvc-no"), ns)
    kube.apply(sandbox("pvc-ok", volumeClaimTemplates=vct), ns)
    kube.apply(sandbox("pvc-no", volumeClaimTemplates=vct), ns)

    sb = wait_ready(kube, "pvc-ok", ns)
    assert owner_uids(kube.get("pvc", "data-pvc-ok", ns)) == [sb["metadata"]["uid"]]

    sb = wait_reason(kube, "pvc-no", ns, "Ready", "ReconcilerError")
    assert cond(sb, "Ready")[2] == f'Error seen: cannot adopt unowned PVC "data-pvc-no": {NOT_ADOPTABLE}'
    assert "ownerReferences" not in kube.get("pvc", "data-pvc-no", ns)["metadata"]
    # a PVC error does not stop the Pod step: the pod exists and mounts the claim
    pod = wait_for(lambda: pod_of(kube, "pvc-no", ns), desc="the pod of pvc-no")
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc-no"}} in pod["spec"]["volumes"]


def test_pod_metadata_follows_the_template(kube, ns):
    """docs/api.md#pod-metadata on an existing pod: template labels/annotations edited => the pod
    is patched, removed keys deleted, tracking annotations rewritten (an
    emptied list becomes ""), system keys of the template never copied, keys
    added by others kept; the pod is not replaced."""
    name = "meta-edit"
    podmeta = {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "1"}}
    kube.apply(sandbox(name, podmeta=podmeta), ns)
    wait_ready(kube, name, ns)
    uid = pod_of(kube, name, ns)["metadata"]["uid"]
    kube.patch("pod", name, ns, {"metadata": {"labels": {"other": "keep"}, "annotations": {"note": "keep"}}})

    kube.patch("sandbox", name, ns, {"spec": {"podTemplate": {"metadata": {
        "labels": {"a": "10", "b": None, "c": "3", "agents.x-k8s.io/forged": "x"},
        "annotations": {"x": None, "extensions.agents.x-k8s.io/forged": "y",
                        "opentelemetry.io/trace-context": "{}"}}}}})

    def updated():
        p = pod_of(kube, name, ns)
        return p if p["metadata"]["labels"].get("a") == "10" else None
    pod = wait_for(updated, desc="the pod's labels patched")
    assert pod["metadata"]["uid"] == uid
    labels, ann = pod["metadata"]["labels"], pod["metadata"]["annotations"]
    assert labels == {"a": "10", "c": "3", "other": "keep",
                      "agents.x-k8s.io/sandbox-name-hash": name_hash(name)}
    assert ann == {"note": "keep", "agents.x-k8s.io/propagated-labels": "a,c",
                   "agents.x-k8s.io/propagated-annotations": ""}


def test_write_behind_window_defers_and_coalesces_pod_metadata(kube, ns, exclusive_controller):
    """--sandbox-write-behind-window (docs/upstream.md#controller-flags): template label edits
    reach the pod after a deferral (logged), the last edit winning; a
    negative window is refused at startup."""
    from conftest import controller_binary
    bad = subprocess.run([controller_binary(), "--sandbox-write-behind-window=-1s"],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1
    assert "--sandbox-write-behind-window" in bad.stderr

    c = exclusive_controller(["--sandbox-write-behind-window=500ms"])
    c.wait_leading()
    name = "behind"
    kube.apply(sandbox(name, podmeta={"labels": {"v": "1"}}), ns)
    wait_ready(kube, name, ns)
    for v in ("2", "3"):
        kube.patch("sandbox", name, ns, {"spec": {"podTemplate": {"metadata": {"labels": {"v": v}}}}})
    pod = wait_for(lambda: (lambda p: p if p["metadata"]["labels"].get("v") == "3" else None)(pod_of(kube, name, ns)),
                   desc="the pod labelled v=3")
    assert pod["metadata"]["annotations"]["agents.x-k8s.io/propagated-labels"] == "v"
    deferred = [r for r in c.records() if r.get("msg") == "pod metadata patch deferred"
                and r.get("sandbox") == f"{ns}/{name}"]
    assert deferred, c.text()[-4000:]
    assert all(isinstance(r["yield"], bool) for r in deferred), deferred  # a JSON boolean
