"""The conversion webhook against the real kube-apiserver: v1alpha1 Sandboxes
served beside v1beta1 (docs/api.md#quick-reference, #sandbox-v1alpha1, #converting-sandbox), the self-managed
certificate of docs/upstream.md#webhook-certificates, with the controller running as its
deploy/ ServiceAccount and reached by the API server on loopback
(--webhook-url, conftest.ControllerProcess).
"""
import base64
import glob
import json
import os
import stat
import time


from conftest import SHARED, condition, wait_for

CRD = "crd/sandboxes.agents.x-k8s.io"
ALPHA = "sandboxes.v1alpha1.agents.x-k8s.io"
BETA = "sandboxes.v1beta1.agents.x-k8s.io"
SNAPSHOT = "api.agents.x-k8s.io/v1alpha1-sandbox-state"
SECRET = "agent-sandbox-webhook-certs"
SYSTEM_NS = "agent-sandbox-system"
WARNING = ("agents.x-k8s.io/v1alpha1 Sandbox is deprecated; "
           "use agents.x-k8s.io/v1beta1 Sandbox instead")
IMAGE = "registry.k8s.io/pause:3.10"


def upstream_sandboxes():
    """The upstream example manifests of kind Sandbox, placeholders filled in."""
    out = []
    for path in sorted(glob.glob(os.path.join(SHARED, "upstream-examples", "*.yaml"))):
        text = open(path).read()
        if "\nkind: Sandbox\n" not in "\n" + text + "\n":
            continue
        out.append((os.path.basename(path), text.replace("${IMAGE}", IMAGE)))
    return out


def secret_data(kube):
    s = kube.get("secret", SECRET, SYSTEM_NS)
    assert s is not None, f"Secret {SYSTEM_NS}/{SECRET} missing"
    return {k: base64.b64decode(v).decode() for k, v in s.get("data", {}).items()}


def client_config(kube):
    crd = kube.get(CRD.split("/")[0], CRD.split("/")[1])
    return crd["spec"]["conversion"]


def read(path):
    with open(path) as f:
        return f.read()


def alpha_get(kube, name, ns):
    return kube.get(ALPHA, name, ns)


def replace_as_alpha(kube, name, ns):
    """Reads the object as v1alpha1 and writes it back unchanged (PUT as
    v1alpha1, raw: a plain `kubectl replace` would rewrite kubectl's
    last-applied annotation); a status write of the controller in between is
    a conflict, retried with a fresh read."""
    uri = f"/apis/agents.x-k8s.io/v1alpha1/namespaces/{ns}/sandboxes/{name}"
    for _ in range(20):
        obj = alpha_get(kube, name, ns)
        p = kube.run("replace", "--raw", uri, "-f", "-", input=json.dumps(obj), check=False)
        if p.returncode == 0:
            return obj
        assert "Conflict" in p.stderr or "modified" in p.stderr, p.stderr
        time.sleep(0.2)
    raise AssertionError(f"replace of {ns}/{name} kept conflicting")


def without_snapshot(annotations):
    return {k: v for k, v in (annotations or {}).items() if k != SNAPSHOT}


def test_session_controller_configured_the_webhook(deployed, controller):
    """The Secret holds the three PEMs, the controller's files are its
    tls.crt/tls.key, and the CRD trusts its CA at the controller's URL."""
    kube = deployed
    data = secret_data(kube)
    for key in ("ca.crt", "tls.crt", "tls.key"):
        assert "-----BEGIN " in data.get(key, ""), f"{key} is not PEM"
    assert "-----BEGIN EC PRIVATE KEY-----" in data["tls.key"]
    certdir = controller["process"].webhook_cert_dir
    assert read(os.path.join(certdir, "tls.crt")) == data["tls.crt"]
    assert read(os.path.join(certdir, "tls.key")) == data["tls.key"]
    conv = client_config(kube)
    assert conv["strategy"] == "Webhook"
    cc = conv["webhook"]["clientConfig"]
    assert base64.b64decode(cc["caBundle"]).decode() == data["ca.crt"]
    assert cc["url"] == controller["webhook_url"]
    assert "service" not in cc
    assert conv["webhook"]["conversionReviewVersions"] == ["v1", "v1beta1"]


def test_upstream_examples_round_trip_through_v1alpha1(deployed, ns):
    """Each upstream Sandbox: applied as v1beta1, read as v1alpha1, written
    back as v1alpha1, read as v1beta1: spec, labels and annotations as first
    read (plus the v1alpha1 snapshot annotation, docs/api.md#converting-sandbox)."""
    kube = deployed
    examples = upstream_sandboxes()
    assert examples, "no upstream Sandbox manifest found"
    for fname, text in examples:
        kube.run("apply", "-n", ns, "-f", "-", input=text)
        name = [l.split(":", 1)[1].strip() for l in text.splitlines() if l.startswith("  name:")][0]
        first = kube.get(BETA, name, ns)
        alpha = alpha_get(kube, name, ns)
        assert alpha["apiVersion"] == "agents.x-k8s.io/v1alpha1", fname
        assert alpha["spec"]["replicas"] == 1, fname
        assert "operatingMode" not in alpha["spec"], fname
        assert SNAPSHOT not in (alpha["metadata"].get("annotations") or {}), fname
        for k in ("podTemplate", "volumeClaimTemplates", "service", "shutdownTime", "shutdownPolicy"):
            assert alpha["spec"].get(k) == first["spec"].get(k), f"{fname}: spec.{k}"
        replace_as_alpha(kube, name, ns)
        second = kube.get(BETA, name, ns)
        assert second["spec"] == first["spec"], fname
        assert second["metadata"].get("labels") == first["metadata"].get("labels"), fname
        assert without_snapshot(second["metadata"].get("annotations")) == \
            without_snapshot(first["metadata"].get("annotations")), fname
        snap = json.loads(second["metadata"]["annotations"][SNAPSHOT])
        assert snap["apiVersion"] == "agents.x-k8s.io/v1alpha1" and snap["spec"]["replicas"] == 1, fname
        # and the v1alpha1 view is stable across the write
        again = alpha_get(kube, name, ns)
        assert again["spec"] == alpha["spec"], fname


def alpha_manifest(name, replicas):
    return {"apiVersion": "agents.x-k8s.io/v1alpha1", "kind": "Sandbox",
            "metadata": {"name": name, "labels": {"team": "a"}},
            "spec": {"replicas": replicas,
                     "podTemplate": {"spec": {"containers": [{"name": "c", "image": IMAGE}]}}}}


def test_v1alpha1_replicas_zero_is_suspended(deployed, ns):
    kube = deployed
    p = kube.create(alpha_manifest("zero", 0), ns=ns)
    assert WARNING in p.stderr, p.stderr
    beta = kube.get(BETA, "zero", ns)
    assert beta["spec"]["operatingMode"] == "Suspended"
    assert "replicas" not in beta["spec"]
    sb = wait_for(lambda: (lambda s: s if (condition(s, "Suspended") or {}).get("status") == "True" else None)(
        kube.get(BETA, "zero", ns)), timeout=60, desc="Suspended=True")
    assert condition(sb, "Ready")["status"] == "False"
    assert kube.get("pod", "zero", ns) is None
    alpha = alpha_get(kube, "zero", ns)
    assert alpha["spec"]["replicas"] == 0
    assert alpha["status"]["replicas"] == 0


def test_v1alpha1_scale_subresource(deployed, ns):
    kube = deployed
    kube.create(alpha_manifest("scaled", 1), ns=ns)
    assert kube.get(BETA, "scaled", ns)["spec"]["operatingMode"] == "Running"
    wait_for(lambda: kube.get("pod", "scaled", ns), timeout=60, desc="pod of the running Sandbox")
    scale = json.loads(kube.run("get", ALPHA, "scaled", "-n", ns, "--subresource=scale", "-o", "json").stdout)
    assert scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    wait_for(lambda: kube.run("get", ALPHA, "scaled", "-n", ns, "--subresource=scale", "-o",
                              "jsonpath={.status.selector}").stdout.startswith(
        "agents.x-k8s.io/sandbox-name-hash="), timeout=60, desc="scale status.selector")
    kube.run("scale", "--replicas=0", f"{ALPHA}/scaled", "-n", ns)
    assert kube.get(BETA, "scaled", ns)["spec"]["operatingMode"] == "Suspended"
    wait_for(lambda: kube.get("pod", "scaled", ns) is None, timeout=60, desc="pod deleted on suspend")
    kube.run("scale", "--replicas=1", f"{ALPHA}/scaled", "-n", ns)
    assert kube.get(BETA, "scaled", ns)["spec"]["operatingMode"] == "Running"
    wait_for(lambda: kube.get("pod", "scaled", ns), timeout=60, desc="pod recreated on resume")
    # replicas is 0..1
    p = kube.run("scale", "--replicas=2", f"{ALPHA}/scaled", "-n", ns, check=False)
    assert p.returncode != 0 and "spec.replicas" in p.stderr, p.stderr


def test_deprecation_warning_on_v1alpha1_only(deployed, ns):
    kube = deployed
    kube.create(alpha_manifest("warned", 1), ns=ns)
    p = kube.run("get", ALPHA, "warned", "-n", ns, "-o", "name")
    assert WARNING in p.stderr, p.stderr
    p = kube.run("get", BETA, "warned", "-n", ns, "-o", "name")
    assert "deprecated" not in p.stderr, p.stderr
    p = kube.run("get", ALPHA, "-n", ns, "-o", "name")  # a list too
    assert WARNING in p.stderr, p.stderr


def test_invalid_snapshot_fails_the_read_with_the_spec_message(deployed, ns):
    """A snapshot annotation that is not JSON fails conversion (docs/api.md#converting-sandbox); the
    API server reports the webhook's message, and v1beta1 still reads."""
    kube = deployed
    kube.create(alpha_manifest("corrupt", 1), ns=ns)
    kube.patch(BETA, "corrupt", ns, {"metadata": {"annotations": {SNAPSHOT: "{not json"}}})
    p = kube.run("get", ALPHA, "corrupt", "-n", ns, "-o", "json", check=False)
    assert p.returncode != 0
    assert "failed to unmarshal v1alpha1 Sandbox state" in p.stderr, p.stderr
    assert kube.get(BETA, "corrupt", ns)["spec"]["operatingMode"] == "Running"


def test_secret_created_when_absent_and_reused_by_the_next_start(deployed, ns, exclusive_controller):
    """Without the Secret a controller creates it (CA + cert, files 0600 in a
    0755 dir, CRD patched); a second start reuses it (same CA, same files)."""
    kube = deployed
    kube.run("delete", "secret", SECRET, "-n", SYSTEM_NS, "--ignore-not-found")

    first = exclusive_controller(name="webhook-first")
    wait_for(lambda: "serving HTTPS" in first.text() or first.proc.poll() is not None,
             timeout=60, desc="first controller serving the webhook")
    assert first.proc.poll() is None, first.text()[-4000:]
    assert "Secret created" in first.text()
    data = secret_data(kube)
    s = kube.get("secret", SECRET, SYSTEM_NS)
    assert s["type"] == "Opaque"
    assert sorted(data) == ["ca.crt", "tls.crt", "tls.key"]
    d = first.webhook_cert_dir
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o755
    for f in ("tls.crt", "tls.key"):
        assert stat.S_IMODE(os.stat(os.path.join(d, f)).st_mode) == 0o600
        assert read(os.path.join(d, f)) == data[f]
    cc = client_config(kube)["webhook"]["clientConfig"]
    assert base64.b64decode(cc["caBundle"]).decode() == data["ca.crt"]
    assert cc["url"] == first.webhook_url
    kube.create(alpha_manifest("probe", 1), ns=ns)  # converted by `first`
    assert alpha_get(kube, "probe", ns)["spec"]["replicas"] == 1
    assert first.stop() == 0

    second = exclusive_controller(name="webhook-second")
    wait_for(lambda: "serving HTTPS" in second.text() or second.proc.poll() is not None,
             timeout=60, desc="second controller serving the webhook")
    assert second.proc.poll() is None, second.text()[-4000:]
    assert "read from Secret" in second.text()
    assert secret_data(kube) == data
    assert read(os.path.join(second.webhook_cert_dir, "tls.crt")) == data["tls.crt"]
    cc = client_config(kube)["webhook"]["clientConfig"]
    assert base64.b64decode(cc["caBundle"]).decode() == data["ca.crt"]
    assert cc["url"] == second.webhook_url
    assert alpha_get(kube, "probe", ns)["spec"]["replicas"] == 1  # served by `second`
