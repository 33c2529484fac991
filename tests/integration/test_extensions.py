"""The extension controllers (SandboxTemplate, SandboxWarmPool, SandboxClaim;
controller run with --extensions) on the real control plane: the scenarios
of upstream's extension e2e suite that make sense on kwok
(docs/upstream.md#upstream-e2e-scenarios "Extensions"; the image-specific ones, TestRunPythonRuntime*,
TestRunSandboxdSandbox, TestRuntimeClass* and the density tests, need real
containers and are left out) and the known failure modes of issue 5, with
the behaviour, reasons and messages of docs/api.md#sandboxtemplate, #sandboxclaim-and-sandboxwarmpool, #sandboxtemplate-controller to #events.

The module runs one controller with --extensions (fixture
`extensions_controller`), as the deploy/ ServiceAccount. kwok makes pods
Running/Ready in about a second. As in test_sandbox_core.py, a completed pod
is made by writing its status subresource as admin (`complete_pod`), and a
pod is held Terminating by binding it to a node nobody serves and adding a
finalizer.

Several table-like scenarios (VCT policies, env injection, metadata
validation) run their cases side by side in one namespace and report every
mismatch at once, to keep the module's run time modest.
"""
import datetime
import json
import re
import subprocess
import threading
import time
import uuid

import pytest

from conftest import condition, wait_for
from test_chaos import metric_sum
from test_sandbox import IMAGE, name_hash, sandbox
from test_sandbox_core import NO_KUBELET_NODE, complete_pod, rfc3339

pytestmark = pytest.mark.usefixtures("extensions_controller")

GROUP = "extensions.agents.x-k8s.io"
EXT_API = GROUP + "/v1beta1"
CLAIM = "sandboxclaims." + GROUP
TEMPLATE = "sandboxtemplates." + GROUP
POOL = "sandboxwarmpools." + GROUP
CLAIM_ALPHA = "sandboxclaims.v1alpha1." + GROUP
TEMPLATE_ALPHA = "sandboxtemplates.v1alpha1." + GROUP
POOL_ALPHA = "sandboxwarmpools.v1alpha1." + GROUP
EVENTS = "events.v1.events.k8s.io"

L_POOL = "agents.x-k8s.io/warm-pool-sandbox"
L_TPL_REF = "agents.x-k8s.io/sandbox-template-ref-hash"
L_TPL_HASH = "agents.x-k8s.io/sandbox-template-hash"
L_POD_TPL_HASH = "agents.x-k8s.io/sandbox-pod-template-hash"
L_LAUNCH = "agents.x-k8s.io/launch-type"
L_CREATED_BY = "agents.x-k8s.io/created-by"
L_CLAIM_UID = "agents.x-k8s.io/claim-uid"
A_TPL_REF = "agents.x-k8s.io/sandbox-template-ref"
A_SANDBOX_NAME = "agents.x-k8s.io/sandbox-name"
A_POD_NAME = "agents.x-k8s.io/pod-name"
A_FIRST_OBSERVED = "agents.x-k8s.io/controller-first-observed-at"
A_FIRST_READY = "agents.x-k8s.io/claim-first-ready-at"
A_SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SECURE_DNS = {"nameservers": ["8.8.8.8", "1.1.1.1"]}
EXPIRED_MSG = "Claim expired. Sandbox cleanup initiated."
RFC3339NANO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


# ---------------------------------------------------------------- manifests

def podspec(env=None, **extra):
    c = {"name": "main", "image": IMAGE}
    if env is not None:
        c["env"] = env
    return {"containers": [c], **extra}


def template(name, spec=None, podmeta=None, **fields):
    pt = {"spec": spec if spec is not None else podspec()}
    if podmeta:
        pt["metadata"] = podmeta
    return {"apiVersion": EXT_API, "kind": "SandboxTemplate", "metadata": {"name": name},
            "spec": {"podTemplate": pt, **fields}}


def pool(name, tpl, replicas=1, strategy=None):
    spec = {"replicas": replicas, "sandboxTemplateRef": {"name": tpl}}
    if strategy:
        spec["updateStrategy"] = {"type": strategy}
    return {"apiVersion": EXT_API, "kind": "SandboxWarmPool", "metadata": {"name": name}, "spec": spec}


def claim(name, pool_name, labels=None, **spec):
    md = {"name": name}
    if labels:
        md["labels"] = labels
    return {"apiVersion": EXT_API, "kind": "SandboxClaim", "metadata": md,
            "spec": {"warmPoolRef": {"name": pool_name}, **spec}}


def vct(name, size="1Gi"):
    return {"metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}}


def create_all(kube, ns, *objs):
    """Creates the objects with one kubectl call (a List)."""
    kube.create({"apiVersion": "v1", "kind": "List", "items": list(objs)}, ns)


# ---------------------------------------------------------------- reading

def cond(obj, ctype):
    c = condition(obj, ctype)
    return (c["status"], c["reason"], c["message"]) if c else None


def labels(obj):
    return obj["metadata"].get("labels") or {}


def annotations(obj):
    return obj["metadata"].get("annotations") or {}


def controller_ref(obj):
    refs = [r for r in obj["metadata"].get("ownerReferences", []) if r.get("controller")]
    assert len(refs) <= 1, refs
    return refs[0] if refs else None


def is_ready(obj):
    return (condition(obj, "Ready") or {}).get("status") == "True"


def wait_obj(kube, kind, name, ns, pred, desc, timeout=60, interval=0.2):
    """Polls the object until pred(obj) holds; returns it."""
    def check():
        o = kube.get(kind, name, ns)
        return o if o is not None and pred(o) else None
    return wait_for(check, timeout=timeout, interval=interval, desc=desc)


def wait_gone(kube, kind, name, ns, timeout=60):
    wait_for(lambda: kube.get(kind, name, ns) is None, timeout=timeout, desc=f"{kind} {ns}/{name} gone")


def wait_claim_ready(kube, name, ns, timeout=60):
    return wait_obj(kube, CLAIM, name, ns, is_ready, f"claim {ns}/{name} Ready=True", timeout)


def wait_claim_reason(kube, name, ns, reason, timeout=60):
    return wait_obj(kube, CLAIM, name, ns, lambda c: (condition(c, "Ready") or {}).get("reason") == reason,
                    f"claim {ns}/{name} Ready reason {reason}", timeout)


def bound_sandbox(kube, c, ns):
    name = (c.get("status", {}).get("sandbox") or {}).get("name")
    assert name, f"claim {c['metadata']['name']} has no status.sandbox.name: {c.get('status')}"
    sb = kube.get("sandbox", name, ns)
    assert sb is not None, f"Sandbox {name} of claim {c['metadata']['name']} not found"
    return sb


def members(kube, ns, pool_name, active=True):
    """Sandboxes labelled as members of the pool (active: not being deleted)."""
    sbs = kube.list("sandboxes", ns, selector=f"{L_POOL}={name_hash(pool_name)}")
    return [s for s in sbs if not (active and s["metadata"].get("deletionTimestamp"))]


def wait_members(kube, ns, pool_name, n, pred=lambda s: True, timeout=90, desc=None):
    """Waits for exactly n active members, every one Ready with podIPs and
    satisfying pred; returns them sorted by name."""
    def check():
        ms = members(kube, ns, pool_name)
        ok = [s for s in ms if is_ready(s) and s["status"].get("podIPs") and pred(s)]
        return sorted(ok, key=lambda s: s["metadata"]["name"]) if len(ms) == n and len(ok) == n else None
    return wait_for(check, timeout=timeout, interval=0.3,
                    desc=desc or f"{n} Ready members of pool {ns}/{pool_name}")


def setup_pool(kube, ns, replicas=1, tpl=None, pool_name="pool", tpl_name="tpl", strategy=None, wait=True):
    """Creates the template (default: pause container) and the pool; waits
    for `replicas` Ready members unless wait is False. Returns the members."""
    create_all(kube, ns, tpl or template(tpl_name), pool(pool_name, tpl_name, replicas, strategy))
    return wait_members(kube, ns, pool_name, replicas) if wait and replicas else []


def env_of(sb_or_pod, container="main"):
    spec = sb_or_pod["spec"]["podTemplate"]["spec"] if sb_or_pod.get("kind") == "Sandbox" else sb_or_pod["spec"]
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        if c["name"] == container:
            return c.get("env", [])
    raise AssertionError(f"no container {container}")


def version_of(sb):
    return {e["name"]: e.get("value") for e in env_of(sb)}.get("VERSION")


def set_template_version(kube, ns, tpl_name, version):
    kube.patch(TEMPLATE, tpl_name, ns, {"spec": {"podTemplate": {"spec": {"containers": [
        {"name": "main", "image": IMAGE, "env": [{"name": "VERSION", "value": version}]}]}}}})


def events(kube, ns, reason=None, name=None):
    items = json.loads(kube.run("get", EVENTS, "-n", ns, "-o", "json").stdout)["items"]
    return [e for e in items if (reason is None or e.get("reason") == reason)
            and (name is None or (e.get("regarding") or {}).get("name") == name)]


def wait_event(kube, ns, reason, name, note, timeout=30):
    return wait_for(lambda: [e for e in events(kube, ns, reason, name) if e.get("note") == note],
                    timeout=timeout, interval=0.5, desc=f"event {reason} {note!r} on {name}")


def parse_rfc3339nano(ts):
    """(datetime in UTC, fraction digits) of an RFC 3339 time with optional fraction."""
    m = RFC3339NANO.match(ts)
    assert m, f"not RFC 3339: {ts!r}"
    base, frac, tz = m.groups()
    dt = datetime.datetime.strptime(base, "%Y-%m-%dT%H:%M:%S")
    offset = datetime.timedelta(0) if tz == "Z" else \
        (1 if tz[0] == "+" else -1) * datetime.timedelta(hours=int(tz[1:3]), minutes=int(tz[4:6]))
    dt = (dt - offset).replace(tzinfo=datetime.timezone.utc)
    if frac:
        dt += datetime.timedelta(microseconds=int((frac + "000000")[:6]))
    return dt, frac or ""


def parse_time(ts):
    return parse_rfc3339nano(ts)[0]


def now():
    return datetime.datetime.now(datetime.timezone.utc)


def list_rv(kube, plural_api, ns):
    return json.loads(kube.run("get", "--raw", f"{plural_api.format(ns=ns)}?limit=1").stdout)["metadata"][
        "resourceVersion"]


class Watch:
    """Every version of the objects a watch delivers (kubectl get --raw
    ...?watch=1 from a resourceVersion), collected by a thread."""

    def __init__(self, kube, path):
        self.proc = subprocess.Popen([*kube.kubectl, "--kubeconfig", kube.kubeconfig, "get", "--raw", path],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._seen, self._lock = [], threading.Lock()
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.strip():
                ev = json.loads(line)
                with self._lock:
                    self._seen.append((ev["type"], ev["object"]))

    def objects(self, name=None):
        with self._lock:
            return [o for _, o in self._seen if name is None or o["metadata"]["name"] == name]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self._t.join(5)


SANDBOXES_API = "/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes"
CLAIMS_API = f"/apis/{EXT_API}/namespaces/{{ns}}/sandboxclaims"


def watch(kube, api, ns):
    rv = list_rv(kube, api, ns)
    return Watch(kube, f"{api.format(ns=ns)}?watch=1&resourceVersion={rv}&timeoutSeconds=180")


def check_all(failures):
    assert not failures, "\n".join(failures)


# ================================================================ pool members, adoption, cold start

def test_pool_members_are_built_from_the_template(kube, ns):
    """docs/api.md#pool-sizing, #secure-defaults, #sandboxwarmpool-status, #sandboxtemplate-controller: members are named <pool>-xxxxx, labelled and
    annotated as the spec says, controlled by the pool, with the template's
    pod metadata plus the pool's system labels and safe-to-evict, and the
    secure defaults (no token automount, public DNS); their pods carry the
    pool and template labels; the pool's status counts them; the template
    gets its template-ref-hash label."""
    tpl = template("tpl", podmeta={"labels": {"team": "x"}, "annotations": {"note": "n"}})
    ms = setup_pool(kube, ns, 2, tpl=tpl)
    p = kube.get(POOL, "pool", ns)
    for sb in ms:
        name = sb["metadata"]["name"]
        assert re.fullmatch(r"pool-[a-z0-9]{5}", name), name
        assert sb["metadata"].get("generateName") == "pool-"
        lb = labels(sb)
        assert {k: lb.get(k) for k in (L_POOL, L_TPL_REF, L_LAUNCH, L_CREATED_BY)} == {
            L_POOL: name_hash("pool"), L_TPL_REF: name_hash("tpl"), L_LAUNCH: "warm", L_CREATED_BY: "controller"}
        assert re.fullmatch(r"[0-9a-f]{8}", lb.get(L_TPL_HASH, "")), lb
        assert re.fullmatch(r"[0-9a-f]{8}", lb.get(L_POD_TPL_HASH, "")), lb
        assert annotations(sb).get(A_TPL_REF) == "tpl"
        ref = controller_ref(sb)
        assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == \
            (EXT_API, "SandboxWarmPool", "pool", p["metadata"]["uid"])
        assert len(sb["metadata"]["ownerReferences"]) == 1
        pt = sb["spec"]["podTemplate"]
        assert pt["metadata"]["labels"] == {"team": "x", L_POOL: name_hash("pool"), L_TPL_REF: name_hash("tpl"),
                                            L_TPL_HASH: lb[L_TPL_HASH], L_POD_TPL_HASH: lb[L_POD_TPL_HASH]}
        assert pt["metadata"]["annotations"] == {"note": "n", A_SAFE_TO_EVICT: "true"}
        assert pt["spec"]["automountServiceAccountToken"] is False
        assert pt["spec"]["dnsPolicy"] == "None"
        assert pt["spec"]["dnsConfig"] == SECURE_DNS
        assert "lifecycle" not in sb["spec"] or not sb["spec"]["lifecycle"].get("shutdownTime")
        pod = kube.get("pod", name, ns)
        assert labels(pod).get(L_POOL) == name_hash("pool")
        assert labels(pod).get(L_TPL_REF) == name_hash("tpl")
        assert labels(pod).get("team") == "x"
        assert L_CLAIM_UID not in labels(pod)
        assert annotations(pod).get(A_SAFE_TO_EVICT) == "true"
        assert annotations(pod).get("note") == "n"
    # the two members come from the same template: same content hashes
    assert len({labels(s)[L_TPL_HASH] for s in ms}) == 1
    p = wait_obj(kube, POOL, "pool", ns, lambda o: (o.get("status") or {}).get("readyReplicas") == 2,
                 "pool status readyReplicas 2")
    assert p["status"]["replicas"] == 2
    assert p["status"]["selector"] == f"{L_POOL}={name_hash('pool')}"
    assert p["status"].get("observedGeneration") == p["metadata"]["generation"]
    t = wait_obj(kube, TEMPLATE, "tpl", ns, lambda o: labels(o).get(L_TPL_REF), "template labelled")
    assert labels(t)[L_TPL_REF] == name_hash("tpl")


def test_warm_claim_adopts_a_member(kube, ns):
    """docs/api.md#claim-adoption: the claim adopts the Ready member: the claim names it (status
    and annotation, podIPs mirrored, Ready forwarded); the Sandbox is
    controlled by the claim alone, loses the pool's labels, gains claim-uid
    and the claim's metadata; its pod is updated in place (not recreated);
    event SandboxAdopted; the pool refills; deleting the claim deletes the
    Sandbox and its pod."""
    tpl = template("tpl", podmeta={"labels": {"team": "x"}})
    [member] = setup_pool(kube, ns, 1, tpl=tpl)
    mname = member["metadata"]["name"]
    pod_uid = kube.get("pod", mname, ns)["metadata"]["uid"]
    kube.create(claim("c1", "pool", labels={L_CREATED_BY: "python-client"},
                      additionalPodMetadata={"labels": {"sandbox.users.io/owner": "me"}}), ns)
    c = wait_claim_ready(kube, "c1", ns)
    sb = bound_sandbox(kube, c, ns)
    assert sb["metadata"]["name"] == mname
    # adoption is one conditional write of the Sandbox: the claim carries no
    # assignment annotation, its status names the Sandbox
    assert A_SANDBOX_NAME not in annotations(c)
    assert c["status"]["sandbox"].get("podIPs") == sb["status"]["podIPs"]
    assert cond(c, "Ready") == cond(sb, "Ready") == ("True", "DependenciesReady", "Pod is Ready")
    assert condition(c, "Ready")["observedGeneration"] == c["metadata"]["generation"]

    refs = sb["metadata"]["ownerReferences"]
    assert [(r["apiVersion"], r["kind"], r["name"], r["uid"], r.get("controller")) for r in refs] == \
        [(EXT_API, "SandboxClaim", "c1", c["metadata"]["uid"], True)]
    lb = labels(sb)
    for gone in (L_POOL, L_TPL_HASH, L_POD_TPL_HASH):
        assert gone not in lb, (gone, lb)
    assert lb[L_LAUNCH] == "warm"
    assert lb[L_CLAIM_UID] == c["metadata"]["uid"]
    assert lb[L_TPL_REF] == name_hash("tpl")
    assert lb[L_CREATED_BY] == "python-client"
    assert annotations(sb)[A_POD_NAME] == mname
    pt = sb["spec"]["podTemplate"]["metadata"]
    assert pt["labels"] == {"team": "x", L_CLAIM_UID: c["metadata"]["uid"], L_TPL_REF: name_hash("tpl"),
                            L_CREATED_BY: "python-client", "sandbox.users.io/owner": "me"}
    assert A_SAFE_TO_EVICT not in (pt.get("annotations") or {})

    def pod_updated():
        pod = kube.get("pod", mname, ns)
        return pod if labels(pod).get("sandbox.users.io/owner") == "me" and L_POOL not in labels(pod) else None
    pod = wait_for(pod_updated, desc="the adopted pod's metadata updated")
    assert pod["metadata"]["uid"] == pod_uid
    assert labels(pod)[L_TPL_REF] == name_hash("tpl")
    assert labels(pod)[L_CREATED_BY] == "python-client"
    assert A_SAFE_TO_EVICT not in annotations(pod)

    ev = wait_event(kube, ns, "SandboxAdopted", "c1", f'Adopted warm pool Sandbox "{mname}"')[0]
    assert (ev["type"], ev.get("action")) == ("Normal", "Adoption")
    [fresh] = wait_members(kube, ns, "pool", 1, desc="the pool refilled")
    assert fresh["metadata"]["name"] != mname

    kube.delete(CLAIM, "c1", ns)
    wait_gone(kube, "sandbox", mname, ns)
    wait_gone(kube, "pod", mname, ns)


def test_cold_claim_when_the_pool_is_empty(kube, ns):
    """docs/api.md#cold-start: pool replicas 0 => a Sandbox named like the claim, built from
    the template (service, secure defaults), labelled cold with claim-uid
    and template-ref-hash, annotated with the template name, controlled by
    the claim; no assigned-sandbox annotation; event SandboxProvisioned."""
    setup_pool(kube, ns, 0, tpl=template("tpl", service=True))
    kube.create(claim("c2", "pool"), ns)
    c = wait_claim_ready(kube, "c2", ns)
    sb = bound_sandbox(kube, c, ns)
    assert sb["metadata"]["name"] == "c2"
    assert A_SANDBOX_NAME not in annotations(c)
    lb = labels(sb)
    assert (lb.get(L_LAUNCH), lb.get(L_CLAIM_UID), lb.get(L_TPL_REF)) == ("cold", c["metadata"]["uid"], name_hash("tpl"))
    assert L_POOL not in lb and L_CREATED_BY not in lb
    assert annotations(sb).get(A_TPL_REF) == "tpl"
    ref = controller_ref(sb)
    assert (ref["kind"], ref["name"], ref["uid"]) == ("SandboxClaim", "c2", c["metadata"]["uid"])
    assert sb["spec"].get("service") is True
    assert not (sb["spec"].get("lifecycle") or {}).get("shutdownTime")
    ps = sb["spec"]["podTemplate"]
    assert ps["spec"]["automountServiceAccountToken"] is False
    assert (ps["spec"]["dnsPolicy"], ps["spec"]["dnsConfig"]) == ("None", SECURE_DNS)
    assert ps["metadata"]["labels"] == {L_CLAIM_UID: c["metadata"]["uid"], L_TPL_REF: name_hash("tpl")}
    assert cond(c, "Ready") == ("True", "DependenciesReady", "Pod is Ready; Service Exists")
    ev = wait_event(kube, ns, "SandboxProvisioned", "c2", 'Created Sandbox "c2"')[0]
    assert (ev["type"], ev.get("action")) == ("Normal", "Provisioning")


def test_lost_status_write_after_a_cold_create_binds_the_existing_sandbox(kube, ns):
    """Failure mode: the cold Sandbox was created but the claim's status
    write was lost (simulated by clearing the claim's status as admin). The
    next pass finds the Sandbox named like the claim and controlled by it
    (docs/api.md#finding-the-claims-sandbox step 3, the resolution of AlreadyExists) and binds it again: no
    second Sandbox, no second create, no error reason on the way."""
    setup_pool(kube, ns, 0)
    kube.create(claim("lost", "pool"), ns)
    c = wait_claim_ready(kube, "lost", ns)
    uid = c["metadata"]["uid"]
    assert bound_sandbox(kube, c, ns)["metadata"]["name"] == "lost"
    w = watch(kube, CLAIMS_API, ns)
    try:
        kube.run("patch", CLAIM, "lost", "-n", ns, "--subresource=status", "--type=merge",
                 "-p", json.dumps({"status": {"sandbox": None, "conditions": None}}))
        c = wait_obj(kube, CLAIM, "lost", ns,
                     lambda o: is_ready(o) and (o.get("status", {}).get("sandbox") or {}).get("name") == "lost",
                     "claim lost bound to Sandbox lost again")
    finally:
        w.stop()
    reasons = {(condition(o, "Ready") or {}).get("reason") for o in w.objects("lost")} - {None}
    assert reasons <= {"DependenciesReady"}, f"claim went through {reasons} while re-binding"
    owned = [s for s in kube.list("sandboxes", ns)
             if (controller_ref(s) or {}).get("uid") == uid]
    assert [s["metadata"]["name"] for s in owned] == ["lost"], owned
    assert labels(owned[0]).get(L_LAUNCH) == "cold"
    assert len(wait_event(kube, ns, "SandboxProvisioned", "lost", 'Created Sandbox "lost"')) == 1


def test_claim_observability_annotations(kube, ns):
    """TestSandboxClaimObservabilityAnnotation (docs/api.md#claim-reconcile step 4, docs/api.md#metrics): the claim
    gets controller-first-observed-at, RFC 3339 with (non-zero) fractional
    seconds, not before the test started; after its first Ready,
    claim-first-ready-at (UTC, RFC 3339 nano), not before the first one."""
    setup_pool(kube, ns, 1)
    start = now()
    kube.create(claim("obs", "pool"), ns)
    c = wait_obj(kube, CLAIM, "obs", ns, lambda o: annotations(o).get(A_FIRST_OBSERVED), "first-observed annotation")
    observed, frac = parse_rfc3339nano(annotations(c)[A_FIRST_OBSERVED])
    assert frac and int(frac) != 0, annotations(c)[A_FIRST_OBSERVED]
    # the clocks are the same machine's; the fraction is truncated to µs here
    assert observed >= start - datetime.timedelta(microseconds=1), (observed, start)
    assert observed <= now()
    c = wait_obj(kube, CLAIM, "obs", ns, lambda o: annotations(o).get(A_FIRST_READY), "claim-first-ready-at")
    first_ready = annotations(c)[A_FIRST_READY]
    assert first_ready.endswith("Z"), first_ready
    ready_at, frac = parse_rfc3339nano(first_ready)
    assert frac, first_ready
    assert observed <= ready_at <= now()
    # stamped once: unchanged on later passes
    assert annotations(c)[A_FIRST_OBSERVED] == annotations(kube.get(CLAIM, "obs", ns))[A_FIRST_OBSERVED]


def test_claim_metrics(kube, ns, extensions_controller):
    """docs/api.md#metrics: agent_sandbox_claim_creation_total counts one warm adoption
    (pod_condition ready, warmpool_name = the pool) and one cold create
    (not_ready); the controller-startup latency histogram gets one
    observation per launch type."""
    url = extensions_controller.metrics_url
    fam = "agent_sandbox_claim_controller_startup_latency_ms_count"
    before = {lt: metric_sum(url, fam, launch_type=lt, sandbox_template="tpl") for lt in ("warm", "cold")}
    setup_pool(kube, ns, 1)
    # one member, two claims at once: one adopts it, the other finds the queue empty
    create_all(kube, ns, claim("m1", "pool"), claim("m2", "pool"))
    cs = [wait_claim_ready(kube, n, ns) for n in ("m1", "m2")]
    kinds = sorted(labels(bound_sandbox(kube, c, ns))[L_LAUNCH] for c in cs)
    assert kinds == ["cold", "warm"], kinds
    common = dict(namespace=ns, sandbox_template="tpl", warmpool_name="pool")
    total = "agent_sandbox_claim_creation_total"
    wait_for(lambda: metric_sum(url, total, launch_type="warm", pod_condition="ready", **common) == 1
             and metric_sum(url, total, launch_type="cold", pod_condition="not_ready", **common) == 1,
             timeout=20, desc="claim creation counters")
    assert metric_sum(url, total, namespace=ns) == 2
    wait_for(lambda: all(metric_sum(url, fam, launch_type=lt, sandbox_template="tpl") == before[lt] + 1
                         for lt in ("warm", "cold")), timeout=20, desc="one startup latency per launch type")


# ================================================================ volumeClaimTemplates policy (docs/api.md#claim-volumeclaimtemplates)

def test_claim_volume_claim_templates_policy_table(kube, ns):
    """TestCreateSandboxClaimVolumeClaimTemplates: template policy x claim
    VCTs. Disallowed + claim VCTs and Allowed + an override are refused
    (VolumeClaimTemplatesError, exact messages, nothing created, the warm
    member left alone); no claim VCTs => warm adoption with the template's
    VCTs and the assigned-sandbox annotation; Allowed appends, Overrides
    replaces by name and appends: cold Sandboxes with the merged VCTs and
    their PVCs."""
    base = [vct("data")]
    tpls = {"dis": template("t-dis", volumeClaimTemplates=base),
            "all": template("t-all", volumeClaimTemplates=base, volumeClaimTemplatesPolicy="Allowed"),
            "ovr": template("t-ovr", volumeClaimTemplates=base, volumeClaimTemplatesPolicy="Overrides")}
    create_all(kube, ns, *tpls.values(), *[pool(f"p-{k}", f"t-{k}", 1) for k in tpls])
    member = {k: wait_members(kube, ns, f"p-{k}", 1)[0]["metadata"]["name"] for k in tpls}
    cases = {
        # claim name: (pool, claim VCTs, expected: error message | (launch type, [(vct, size)]))
        "dis-custom": ("dis", [vct("scratch")],
                       "failed to merge volume claim templates: volume claim templates are disallowed by the template"),
        "dis-none": ("dis", None, ("warm", [("data", "1Gi")])),
        "all-new": ("all", [vct("scratch", "2Gi")], ("cold", [("data", "1Gi"), ("scratch", "2Gi")])),
        "all-override": ("all", [vct("data", "2Gi")],
                         "failed to merge volume claim templates: overriding volume claim templates is forbidden "
                         'by the template: cannot override template volume "data"'),
        "ovr": ("ovr", [vct("scratch"), vct("data", "3Gi")], ("cold", [("data", "3Gi"), ("scratch", "1Gi")])),
    }
    create_all(kube, ns, *[claim(n, f"p-{p}", **({"volumeClaimTemplates": v} if v else {}))
                           for n, (p, v, _) in cases.items()])
    failures = []
    for n, (p, v, want) in cases.items():
        if isinstance(want, str):
            c = wait_claim_reason(kube, n, ns, "VolumeClaimTemplatesError")
            if cond(c, "Ready") != ("False", "VolumeClaimTemplatesError", want):
                failures.append(f"{n}: Ready {cond(c, 'Ready')}, want {want!r}")
            if kube.get("sandbox", n, ns) is not None:
                failures.append(f"{n}: a Sandbox was created")
            continue
        c = wait_claim_ready(kube, n, ns)
        sb = bound_sandbox(kube, c, ns)
        sbn = sb["metadata"]["name"]
        launch, vcts = want
        got = [(t["metadata"]["name"], t["spec"]["resources"]["requests"]["storage"])
               for t in sb["spec"].get("volumeClaimTemplates", [])]
        if got != vcts:
            failures.append(f"{n}: Sandbox VCTs {got}, want {vcts}")
        if labels(sb).get(L_LAUNCH) != launch:
            failures.append(f"{n}: launch-type {labels(sb).get(L_LAUNCH)}, want {launch}")
        if launch == "warm":
            if (sbn, annotations(c).get(A_SANDBOX_NAME)) != (member[p], None):
                failures.append(f"{n}: sandbox {sbn}, annotation {annotations(c).get(A_SANDBOX_NAME)}, "
                                f"want the member {member[p]}")
        elif sbn != n or A_SANDBOX_NAME in annotations(c):
            failures.append(f"{n}: cold sandbox {sbn} (want {n}), annotation {annotations(c).get(A_SANDBOX_NAME)}")
        for vname, size in vcts:
            pvc = kube.get("pvc", f"{vname}-{sbn}", ns)
            if pvc is None or pvc["spec"]["resources"]["requests"]["storage"] != size:
                failures.append(f"{n}: PVC {vname}-{sbn}: {pvc and pvc['spec']['resources']}")
    # the members of the pools whose claims were refused or went cold are still unclaimed
    for k in ("all", "ovr"):
        sb = kube.get("sandbox", member[k], ns)
        if sb is None or (controller_ref(sb) or {}).get("kind") != "SandboxWarmPool":
            failures.append(f"member {member[k]} of p-{k} was taken: {sb and sb['metadata'].get('ownerReferences')}")
    check_all(failures)


# ================================================================ lifecycle (docs/api.md#claim-expiry)

def held_template(name="tpl", **fields):
    """A template whose pods are bound to a node no kubelet (and no kwok)
    serves: a finalizer then holds them Terminating as long as it is there."""
    return template(name, spec={"nodeName": NO_KUBELET_NODE, "terminationGracePeriodSeconds": 0,
                                "containers": [{"name": "main", "image": IMAGE}]}, **fields)


def wait_gc_watching(kube, ns, timeout=90):
    """Waits until kube-controller-manager's garbage collector watches the
    Sandbox and SandboxClaim kinds again. A CRD update (a controller pointing
    the conversion webhook at a new URL) closes every watch on its kind; the
    GC re-lists after a back-off (seen: 20 s) and until then decides from a
    stale graph: a claim deleted in the foreground whose Sandbox it has not
    seen has "no dependents" and goes at once. Proof that it watches: an
    object of each kind whose owner does not exist is collected, which the
    GC only does for objects its watch delivered."""
    ghost = {"apiVersion": "v1", "kind": "ConfigMap", "name": "gc-canary-owner",
             "uid": str(uuid.uuid4())}
    sb = sandbox("gc-canary", operatingMode="Suspended")  # no pod
    c = claim("gc-canary", "no-such-pool")
    for obj in (sb, c):
        obj["metadata"]["ownerReferences"] = [ghost]
        kube.create(obj, ns)
    for kind in ("sandbox", CLAIM):
        wait_gone(kube, kind, "gc-canary", ns, timeout=timeout)


def test_claim_delete_foreground(kube, ns):
    """TestSandboxClaimDeleteForeground: at expiry the claim gets
    Ready=False/ClaimExpired, then is deleted with foreground propagation:
    it stays (deletionTimestamp set) while its Sandbox's pod is held
    Terminating, and goes once the pod is gone. Events ClaimExpired
    (Claim Expired) and ClaimExpired (Deleting, DeleteForeground)."""
    setup_pool(kube, ns, 0, tpl=held_template())
    kube.create(claim("fg", "pool", lifecycle={"shutdownPolicy": "DeleteForeground"}), ns)
    wait_for(lambda: kube.get("pod", "fg", ns), desc="the claim's pod")
    kube.patch("pod", "fg", ns, {"metadata": {"finalizers": ["agents.x-k8s.io/test-hold"]}})
    # The garbage collector must hold the claim -> Sandbox -> pod chain in its
    # graph, or the foreground delete has nothing to wait for.
    wait_gc_watching(kube, ns)
    kube.patch(CLAIM, "fg", ns, {"spec": {"lifecycle": {"shutdownTime": rfc3339(now() - datetime.timedelta(seconds=1))}}})

    c = wait_obj(kube, CLAIM, "fg", ns, lambda o: o["metadata"].get("deletionTimestamp"), "the claim deleting")
    assert "foregroundDeletion" in c["metadata"].get("finalizers", [])
    assert cond(c, "Ready") == ("False", "ClaimExpired", EXPIRED_MSG)
    wait_obj(kube, "sandbox", "fg", ns, lambda o: o["metadata"].get("deletionTimestamp"), "the Sandbox deleting")
    wait_obj(kube, "pod", "fg", ns, lambda o: o["metadata"].get("deletionTimestamp"), "the pod deleting")
    # held: everything lingers while the pod does
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        assert kube.get(CLAIM, "fg", ns) is not None, "the claim went while its dependents remained"
        time.sleep(0.3)
    assert kube.get("sandbox", "fg", ns) is not None
    ev = wait_event(kube, ns, "ClaimExpired", "fg", "Deleting Claim (ShutdownPolicy=DeleteForeground)")[0]
    assert ev.get("action") == "Deleting"
    ev = wait_event(kube, ns, "ClaimExpired", "fg", "Claim expired")[0]
    assert ev.get("action") == "Claim Expired"

    kube.patch("pod", "fg", ns, {"metadata": {"finalizers": None}})
    wait_gone(kube, "pod", "fg", ns)
    wait_gone(kube, "sandbox", "fg", ns)
    wait_gone(kube, CLAIM, "fg", ns)


@pytest.mark.parametrize("policy", ["Delete", "DeleteForeground"])
def test_claim_ttl_after_finished(kube, ns, policy):
    """TestSandboxClaimTTLAfterFinished / ...TTLDeleteForegroundAfterFinished:
    the pod completes; the claim mirrors Finished (the Sandbox's condition
    with its lastTransitionTime) and, ttlSecondsAfterFinished later, is
    deleted with its Sandbox, pod and service."""
    ttl = 2
    setup_pool(kube, ns, 0, tpl=template("tpl", service=True))
    kube.create(claim("ttl", "pool", lifecycle={"ttlSecondsAfterFinished": ttl, "shutdownPolicy": policy}), ns)
    wait_claim_ready(kube, "ttl", ns)
    complete_pod(kube, "ttl", ns)
    c = wait_obj(kube, CLAIM, "ttl", ns, lambda o: (condition(o, "Finished") or {}).get("status") == "True",
                 "Finished mirrored on the claim")
    assert cond(c, "Finished") == ("True", "PodSucceeded", "Pod completed successfully")
    sb = kube.get("sandbox", "ttl", ns)
    if sb is not None:  # may already be going
        assert condition(c, "Finished")["lastTransitionTime"] == condition(sb, "Finished")["lastTransitionTime"]
    finished = parse_time(condition(c, "Finished")["lastTransitionTime"])

    def gone():
        if kube.get(CLAIM, "ttl", ns) is not None:
            return False
        assert now() >= finished + datetime.timedelta(seconds=ttl), "claim deleted before its TTL"
        return True
    wait_for(gone, timeout=60, desc="the claim deleted after its TTL")
    wait_for(lambda: all(kube.get(k, "ttl", ns) is None for k in ("sandbox", "pod", "service")),
             timeout=60, desc="Sandbox, pod and service deleted")
    ev = wait_event(kube, ns, "ClaimExpired", "ttl", f"Deleting Claim (ShutdownPolicy={policy})")[0]
    assert (ev["type"], ev.get("action")) == ("Normal", "Deleting")


def test_claim_expiry_uses_the_earlier_of_shutdown_time_and_ttl(kube, ns):
    """TestSandboxClaimExpiryUsesEarlierOfShutdownTimeAndTTL (Retain): a claim
    with an early shutdownTime and a long TTL expires at its shutdownTime,
    never before; one with a late shutdownTime and a short TTL expires after
    its TTL, long before the shutdownTime."""
    setup_pool(kube, ns, 0)
    late = now().replace(microsecond=0) + datetime.timedelta(seconds=600)
    create_all(kube, ns,
               claim("by-time", "pool", lifecycle={"ttlSecondsAfterFinished": 600}),
               claim("by-ttl", "pool", lifecycle={"shutdownTime": rfc3339(late), "ttlSecondsAfterFinished": 1}))
    for n in ("by-time", "by-ttl"):
        wait_claim_ready(kube, n, ns)
        complete_pod(kube, n, ns)
    # finished, with a long TTL: the shutdownTime, set now, is the earlier
    early = now().replace(microsecond=0) + datetime.timedelta(seconds=3)
    kube.patch(CLAIM, "by-time", ns, {"spec": {"lifecycle": {"shutdownTime": rfc3339(early)}}})

    c = wait_claim_reason(kube, "by-ttl", ns, "ClaimExpired", timeout=30)
    assert cond(c, "Ready") == ("False", "ClaimExpired", EXPIRED_MSG)
    assert cond(c, "Finished") == ("True", "PodSucceeded", "Pod completed successfully")
    assert now() < late

    def expired_by_time():
        c = kube.get(CLAIM, "by-time", ns)
        if (condition(c, "Ready") or {}).get("reason") != "ClaimExpired":
            return None
        assert now() >= early, "expired before its shutdownTime"
        return c
    c = wait_for(expired_by_time, timeout=40, desc="by-time expired at its shutdownTime")
    assert cond(c, "Ready") == ("False", "ClaimExpired", EXPIRED_MSG)
    # Retain: the claims stay, their Sandboxes go
    for n in ("by-time", "by-ttl"):
        wait_gone(kube, "sandbox", n, ns)
        assert kube.get(CLAIM, n, ns) is not None


def test_claim_finished_without_ttl_is_retained(kube, ns):
    """TestSandboxClaimFinishedWithoutTTLIsRetained: Finished without a TTL
    (policy Delete, no shutdownTime) never expires: the claim forwards the
    Sandbox's Ready=False/PodSucceeded and stays, with its Sandbox."""
    setup_pool(kube, ns, 0)
    kube.create(claim("done", "pool", lifecycle={"shutdownPolicy": "Delete"}), ns)
    wait_claim_ready(kube, "done", ns)
    complete_pod(kube, "done", ns)
    c = wait_obj(kube, CLAIM, "done", ns, lambda o: (condition(o, "Finished") or {}).get("status") == "True",
                 "Finished mirrored")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        c = kube.get(CLAIM, "done", ns)
        assert c is not None and not c["metadata"].get("deletionTimestamp"), "the claim was deleted"
        time.sleep(0.5)
    c = wait_obj(kube, CLAIM, "done", ns, lambda o: (condition(o, "Ready") or {}).get("reason") == "PodSucceeded",
                 "the Sandbox's Ready forwarded")
    assert cond(c, "Ready") == ("False", "PodSucceeded", "Pod completed successfully")
    assert cond(c, "Finished") == ("True", "PodSucceeded", "Pod completed successfully")
    sb = kube.get("sandbox", "done", ns)
    assert sb is not None and not sb["metadata"].get("deletionTimestamp")


def test_claim_ttl_zero_retain_preserves_finished_during_cleanup(kube, ns):
    """TestSandboxClaimTTLZeroRetainPreservesFinishedConditionDuringCleanup:
    TTL 0 + Retain expires as soon as Finished is mirrored; the Sandbox is
    deleted; the claim stays with Ready ClaimExpired and the Finished
    condition unchanged, and status.sandbox is cleared once the Sandbox is
    gone."""
    setup_pool(kube, ns, 0)
    kube.create(claim("zero", "pool", lifecycle={"ttlSecondsAfterFinished": 0, "shutdownPolicy": "Retain"}), ns)
    wait_claim_ready(kube, "zero", ns)
    complete_pod(kube, "zero", ns)
    c = wait_claim_reason(kube, "zero", ns, "ClaimExpired")
    finished = condition(c, "Finished")
    assert cond(c, "Finished") == ("True", "PodSucceeded", "Pod completed successfully")
    assert cond(c, "Ready") == ("False", "ClaimExpired", EXPIRED_MSG)
    wait_gone(kube, "sandbox", "zero", ns)
    c = wait_obj(kube, CLAIM, "zero", ns, lambda o: not (o["status"].get("sandbox") or {}).get("name"),
                 "status.sandbox cleared")
    assert condition(c, "Finished") == finished
    assert cond(c, "Ready") == ("False", "ClaimExpired", EXPIRED_MSG)
    assert not c["metadata"].get("deletionTimestamp")


def test_retain_expiry_deletes_the_adopted_sandbox_by_status_name(kube, ns):
    """Failure mode (issue 5): a warm claim's Sandbox is not named like the
    claim; expiry with Retain must delete the Sandbox named by
    status.sandbox.name, and never a Sandbox that merely has the claim's
    name (a user's, not controlled by the claim)."""
    [member] = setup_pool(kube, ns, 1)
    mname = member["metadata"]["name"]
    kube.create(claim("keep", "pool", lifecycle={"shutdownPolicy": "Retain"}), ns)
    c = wait_claim_ready(kube, "keep", ns)
    assert c["status"]["sandbox"]["name"] == mname
    decoy = {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": "keep"},
             "spec": {"podTemplate": {"spec": podspec()}}}
    decoy_uid = json.loads(kube.run("create", "-n", ns, "-o", "json", "-f", "-", input=json.dumps(decoy)).stdout)[
        "metadata"]["uid"]
    kube.patch(CLAIM, "keep", ns, {"spec": {"lifecycle": {"shutdownTime": rfc3339(now() - datetime.timedelta(seconds=1))}}})
    c = wait_claim_reason(kube, "keep", ns, "ClaimExpired")
    wait_gone(kube, "sandbox", mname, ns)
    c = wait_obj(kube, CLAIM, "keep", ns, lambda o: not (o["status"].get("sandbox") or {}).get("name"),
                 "status.sandbox cleared")
    assert condition(c, "Ready")["reason"] == "ClaimExpired"
    assert cond(c, "Ready")[2] in (
        EXPIRED_MSG,
        'Claim expired. sandbox not owned by this claim: sandbox "keep" is not owned by claim "keep"; '
        'deletion skipped.'), cond(c, "Ready")
    d = kube.get("sandbox", "keep", ns)
    assert d is not None and d["metadata"]["uid"] == decoy_uid and not d["metadata"].get("deletionTimestamp")
    assert not d["metadata"].get("ownerReferences")


# ================================================================ rollout (docs/api.md#staleness-and-update-strategies)

@pytest.mark.parametrize("strategy", [None, "OnReplenish", "Recreate"])
def test_warm_pool_rollout(kube, ns, strategy):
    """TestWarmPoolRollout: after a template change, Recreate replaces the
    idle members with members of the new template; OnReplenish (and the
    default) keeps them until claimed, and the replacement of a claimed one
    is built from the new template."""
    tpl = template("tpl", spec=podspec(env=[{"name": "VERSION", "value": "1"}]))
    old = setup_pool(kube, ns, 2, tpl=tpl, strategy=strategy)
    old_names = {s["metadata"]["name"] for s in old}
    old_hash = labels(old[0])[L_TPL_HASH]
    set_template_version(kube, ns, "tpl", "2")
    if strategy == "Recreate":
        new = wait_members(kube, ns, "pool", 2, pred=lambda s: version_of(s) == "2"
                           and s["metadata"]["name"] not in old_names, desc="2 members of the new template")
        assert all(labels(s)[L_TPL_HASH] != old_hash for s in new)
        wait_for(lambda: not {s["metadata"]["name"] for s in members(kube, ns, "pool", active=False)} & old_names,
                 desc="the stale members gone")
        return
    # OnReplenish: a claim takes a stale member, the replacement is new
    kube.create(claim("c", "pool"), ns)
    c = wait_claim_ready(kube, "c", ns)
    taken = c["status"]["sandbox"]["name"]
    assert taken in old_names
    assert version_of(kube.get("sandbox", taken, ns)) == "1"
    [kept] = old_names - {taken}
    ms = wait_members(kube, ns, "pool", 2, pred=lambda s: s["metadata"]["name"] == kept or version_of(s) == "2",
                      desc="the stale member kept and a new-template replacement")
    fresh = [s for s in ms if s["metadata"]["name"] != kept][0]
    assert labels(fresh)[L_TPL_HASH] != old_hash
    sb = kube.get("sandbox", kept, ns)
    assert version_of(sb) == "1" and not sb["metadata"].get("deletionTimestamp")


def test_warm_pool_rollout_multi_template_isolation(kube, ns):
    """TestWarmPoolRolloutMultiTemplateIsolation: two Recreate pools on two
    templates; editing one template rolls its pool only. The other pool's
    members stay (checked after a scale-up of that pool, whose new member
    proves a pass ran after the edit, built from its own template)."""
    v1 = [{"name": "VERSION", "value": "1"}]
    create_all(kube, ns, template("tpl-a", spec=podspec(env=v1)), template("tpl-b", spec=podspec(env=v1)),
               pool("pool-a", "tpl-a", 2, "Recreate"), pool("pool-b", "tpl-b", 2, "Recreate"))
    a_old = {s["metadata"]["name"] for s in wait_members(kube, ns, "pool-a", 2)}
    b_old = {s["metadata"]["name"] for s in wait_members(kube, ns, "pool-b", 2)}
    set_template_version(kube, ns, "tpl-a", "2")
    wait_members(kube, ns, "pool-a", 2, pred=lambda s: version_of(s) == "2" and s["metadata"]["name"] not in a_old,
                 desc="pool-a rolled")
    kube.patch(POOL, "pool-b", ns, {"spec": {"replicas": 3}})
    ms = wait_members(kube, ns, "pool-b", 3, desc="pool-b scaled to 3")
    names = {s["metadata"]["name"] for s in ms}
    assert b_old <= names, (b_old, names)
    assert all(version_of(s) == "1" for s in ms)
    assert all(labels(s)[L_TPL_REF] == name_hash("tpl-b") for s in ms)


def test_warm_pool_rollout_switch_to_identical_template(kube, ns):
    """TestWarmPoolRolloutSwitchTemplate: a Recreate pool switched to another
    template with an identical spec: the members are stale by template
    reference (docs/api.md#staleness-and-update-strategies) and are replaced by members of the new template, whose
    content hashes are the same as before (same blueprint)."""
    create_all(kube, ns, template("tpl-a"), template("tpl-b"), pool("pool", "tpl-a", 2, "Recreate"))
    old = wait_members(kube, ns, "pool", 2)
    old_names = {s["metadata"]["name"] for s in old}
    kube.patch(POOL, "pool", ns, {"spec": {"sandboxTemplateRef": {"name": "tpl-b"}}})
    new = wait_members(kube, ns, "pool", 2, pred=lambda s: labels(s).get(L_TPL_REF) == name_hash("tpl-b"),
                       desc="2 members of tpl-b")
    assert not {s["metadata"]["name"] for s in new} & old_names
    for s in new:
        assert annotations(s)[A_TPL_REF] == "tpl-b"
        assert labels(s)[L_TPL_HASH] == labels(old[0])[L_TPL_HASH]
        assert labels(s)[L_POD_TPL_HASH] == labels(old[0])[L_POD_TPL_HASH]
        assert s["spec"]["podTemplate"]["metadata"]["labels"][L_TPL_REF] == name_hash("tpl-b")


def test_warm_pool_rollout_metadata_only_edit_does_not_roll(kube, ns):
    """TestWarmPoolRolloutMetadataUpdate: a Recreate pool whose template's pod
    metadata (only) changes keeps its members: their content hash differs
    now, but the semantic comparison ignores metadata (docs/api.md#staleness-and-update-strategies). Checked after
    a scale-up whose new member carries the new metadata."""
    tpl = template("tpl", podmeta={"labels": {"team": "a"}})
    old = setup_pool(kube, ns, 2, tpl=tpl, strategy="Recreate")
    old_names = {s["metadata"]["name"] for s in old}
    kube.patch(TEMPLATE, "tpl", ns, {"spec": {"podTemplate": {"metadata": {"labels": {"team": "b"}}}}})
    kube.patch(POOL, "pool", ns, {"spec": {"replicas": 3}})
    ms = wait_members(kube, ns, "pool", 3, desc="the pool scaled to 3")
    assert old_names <= {s["metadata"]["name"] for s in ms}
    [fresh] = [s for s in ms if s["metadata"]["name"] not in old_names]
    assert fresh["spec"]["podTemplate"]["metadata"]["labels"]["team"] == "b"
    assert labels(fresh)[L_TPL_HASH] != labels(old[0])[L_TPL_HASH]
    # still there a moment later
    time.sleep(1)
    assert old_names <= {s["metadata"]["name"] for s in members(kube, ns, "pool")}


def test_recreate_never_hands_out_a_stale_sandbox(kube, ns):
    """Failure mode (issue 5): claims made right after a template edit on a
    Recreate pool never get a member of the old template (docs/api.md#claim-adoption: stale
    candidates are discarded; they get fresh members or cold Sandboxes)."""
    tpl = template("tpl", spec=podspec(env=[{"name": "VERSION", "value": "1"}]))
    setup_pool(kube, ns, 3, tpl=tpl, strategy="Recreate")
    set_template_version(kube, ns, "tpl", "2")
    create_all(kube, ns, *[claim(f"c{i}", "pool") for i in range(3)])
    for i in range(3):
        c = wait_claim_ready(kube, f"c{i}", ns)
        sb = bound_sandbox(kube, c, ns)
        assert version_of(sb) == "2", f"claim c{i} got {sb['metadata']['name']} of the old template"
        pod = kube.get("pod", sb["metadata"]["name"], ns)
        assert {e["name"]: e.get("value") for e in env_of(pod)}["VERSION"] == "2"


# ================================================================ RollingUpdate (ours, docs/api.md#rolling-update)

def rolling_pool(name, tpl, replicas, surge, unavailable):
    p = pool(name, tpl, replicas, "RollingUpdate")
    p["spec"]["updateStrategy"]["rollingUpdate"] = {"maxSurge": surge, "maxUnavailable": unavailable}
    return p


def progressing(kube, ns, name="pool"):
    return cond(kube.get(POOL, name, ns), "Progressing")


def test_rolling_update_under_claim_load_hands_out_warm_members(kube, ns):
    """A pool of 20 rolls to a new template (maxSurge 1, maxUnavailable 0:
    twenty waves) while claims arrive steadily: every claim gets a warm member (none goes
    cold because of the roll), the pool ends with 20 Ready members of the new
    template, and its status says so (updatedReplicas, Progressing
    UpdateComplete), with RollingUpdate while it rolled."""
    tpl = template("tpl", spec=podspec(env=[{"name": "VERSION", "value": "1"}]))
    create_all(kube, ns, tpl, rolling_pool("pool", "tpl", 20, 1, 0))
    old = wait_members(kube, ns, "pool", 20, timeout=120)
    old_names = {s["metadata"]["name"] for s in old}
    wait_obj(kube, POOL, "pool", ns, lambda p: (condition(p, "Progressing") or {}).get("reason") == "UpdateComplete",
             "Progressing UpdateComplete before the roll")

    stop = threading.Event()
    made = []

    def claims():
        i = 0
        while not stop.is_set():
            kube.create(claim(f"c{i}", "pool"), ns)
            made.append((f"c{i}", time.monotonic()))
            i += 1
            stop.wait(0.1)
    t = threading.Thread(target=claims)
    t.start()
    seen_rolling = []
    try:
        time.sleep(1.5)
        set_template_version(kube, ns, "tpl", "2")
        started = time.monotonic()

        def rolled():
            p = kube.get(POOL, "pool", ns)
            c = condition(p, "Progressing") or {}
            if c.get("reason") == "RollingUpdate":
                seen_rolling.append(time.monotonic())
            ms = members(kube, ns, "pool")
            done = (len(ms) == 20 and all(is_ready(s) and version_of(s) == "2" for s in ms)
                    and p.get("status", {}).get("updatedReplicas") == 20 and c.get("reason") == "UpdateComplete")
            return ms if done else None
        new = wait_for(rolled, timeout=180, interval=0.3, desc="20 Ready members of the new template")
        finished = time.monotonic()
    finally:
        stop.set()
        t.join()
    assert seen_rolling, "the pool never reported Progressing/RollingUpdate while rolling"
    assert not {s["metadata"]["name"] for s in new} & old_names
    during = [n for n, at in made if started <= at <= finished]
    assert len(during) >= 3, f"too few claims while the pool rolled: {made}, {started}-{finished}"
    for name, _ in made:
        c = wait_claim_ready(kube, name, ns, timeout=90)
        sb = bound_sandbox(kube, c, ns)
        assert labels(sb).get(L_LAUNCH) == "warm", f"claim {name} went cold during the roll: {sb['metadata']['name']}"
    status, reason, _ = progressing(kube, ns)
    assert (status, reason) == ("True", "UpdateComplete")


def test_rolling_update_with_a_template_that_never_gets_ready_keeps_the_old_members(kube, ns):
    """A new template whose members never become Ready (their pods bound to
    a node no kubelet serves): with maxUnavailable 0 the old members keep
    serving (none deleted, all Ready), only the surge member of the new
    template is made, and a claim still gets an old, warm member."""
    tpl = template("tpl", spec=podspec(env=[{"name": "VERSION", "value": "1"}]))
    create_all(kube, ns, tpl, rolling_pool("pool", "tpl", 3, 1, 0))
    old = wait_members(kube, ns, "pool", 3)
    old_names = {s["metadata"]["name"] for s in old}
    kube.patch(TEMPLATE, "tpl", ns, {"spec": {"podTemplate": {"spec": {
        "nodeName": NO_KUBELET_NODE, "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "main", "image": IMAGE, "env": [{"name": "VERSION", "value": "2"}]}]}}}})

    def surged():
        ms = members(kube, ns, "pool")
        new = [s for s in ms if s["metadata"]["name"] not in old_names]
        return ms if len(new) == 1 else None
    wait_for(surged, timeout=60, interval=0.3, desc="one member of the new template")
    time.sleep(3)   # passes run on every member event: none may take an old member
    ms = members(kube, ns, "pool")
    names = {s["metadata"]["name"] for s in ms}
    assert old_names <= names, f"old members deleted though the new one is not Ready: {old_names - names}"
    assert len(ms) == 4, sorted(names)
    assert all(is_ready(s) for s in ms if s["metadata"]["name"] in old_names)
    [new] = [s for s in ms if s["metadata"]["name"] not in old_names]
    assert not is_ready(new)
    p = wait_obj(kube, POOL, "pool", ns, lambda p: p.get("status", {}).get("replicas") == 4, "status.replicas 4")
    assert p["status"].get("updatedReplicas") == 1
    assert cond(p, "Progressing") == ("True", "RollingUpdate", "1 of 3 members on the current template")
    kube.create(claim("c", "pool"), ns)
    sb = bound_sandbox(kube, wait_claim_ready(kube, "c", ns), ns)
    assert sb["metadata"]["name"] in old_names and labels(sb).get(L_LAUNCH) == "warm"


def test_rolling_update_limits_are_validated(kube, ns):
    """maxSurge and maxUnavailable take an integer or a percentage; anything
    else is refused by the API server with the schema's message."""
    kube.create(template("tpl"), ns)
    bad = rolling_pool("pool", "tpl", 1, "lots", 0)
    r = kube.run("create", "-n", ns, "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0
    assert "must be a non-negative integer or a percentage" in r.stderr, r.stderr


# ================================================================ claim <-> sandbox status

def test_sandbox_watcher_claim_ready_follows_pod_replacement(kube, ns):
    """TestWarmPoolSandboxWatcher + failure mode "claim Ready mirrors the
    Sandbox": the adopted Sandbox is controlled by the claim; deleting its
    pod makes the claim not Ready (within 30 s), then Ready again once the
    pod is replaced, equal to the Sandbox's Ready and with its new podIPs."""
    [member] = setup_pool(kube, ns, 1)
    mname = member["metadata"]["name"]
    kube.create(claim("w", "pool"), ns)
    c = wait_claim_ready(kube, "w", ns)
    sb = kube.get("sandbox", mname, ns)
    assert controller_ref(sb)["uid"] == c["metadata"]["uid"]
    old_pod = kube.get("pod", mname, ns)["metadata"]["uid"]
    w = watch(kube, CLAIMS_API, ns)
    try:
        kube.delete("pod", mname, ns)
        wait_for(lambda: any(not is_ready(o) for o in w.objects("w")), timeout=30, interval=0.1,
                 desc="the claim not Ready after its pod was deleted")
        wait_for(lambda: is_ready((w.objects("w") or [{}])[-1]) and
                 any(not is_ready(o) for o in w.objects("w")), timeout=60, interval=0.1,
                 desc="the claim Ready again")
    finally:
        w.stop()
    pod = kube.get("pod", mname, ns)
    assert pod["metadata"]["uid"] != old_pod
    c = wait_obj(kube, CLAIM, "w", ns, lambda o: (o["status"]["sandbox"].get("podIPs") or [None]) ==
                 kube.get("sandbox", mname, ns)["status"].get("podIPs"), "podIPs mirrored")
    sb = kube.get("sandbox", mname, ns)
    assert cond(c, "Ready") == cond(sb, "Ready") == ("True", "DependenciesReady", "Pod is Ready")
    assert sb["status"]["podIPs"] == [pod["status"]["podIP"]]
    assert c["status"]["sandbox"]["name"] == mname


def test_pod_name_annotation_before_ready_on_adoption(kube, ns):
    """TestWarmPoolPodNameAnnotationBeforeReady: no version of a Sandbox
    (member or adopted) is ever Ready=True without the pod-name annotation,
    and no version of the claim is Ready=True without status.sandbox."""
    setup_pool(kube, ns, 2)
    ws, wc = watch(kube, SANDBOXES_API, ns), watch(kube, CLAIMS_API, ns)
    try:
        kube.create(claim("p", "pool"), ns)
        c = wait_claim_ready(kube, "p", ns)
        sbn = c["status"]["sandbox"]["name"]
        wait_for(lambda: any(is_ready(o) and (controller_ref(o) or {}).get("kind") == "SandboxClaim"
                             for o in ws.objects(sbn)), timeout=30, desc="the adopted Sandbox seen Ready")
        wait_for(lambda: any(is_ready(o) for o in wc.objects("p")), timeout=30, desc="the claim seen Ready")
    finally:
        ws.stop()
        wc.stop()
    for o in ws.objects():
        if is_ready(o):
            assert annotations(o).get(A_POD_NAME) == o["metadata"]["name"], o["metadata"]
    for o in wc.objects("p"):
        if is_ready(o):
            assert (o["status"].get("sandbox") or {}).get("name") == sbn, o["status"]
            assert o["status"]["sandbox"].get("podIPs"), o["status"]


@pytest.mark.parametrize("replicas", [25, 5], ids=["sufficient", "insufficient"])
def test_parallel_claims(kube, ns, replicas):
    """TestParallelSandboxClaimsWithSufficientWarmPool / ...Insufficient...:
    20 claims at once against a pool of 25 (all warm) or 5 (some warm, the
    rest cold): all Ready, each bound to its own Sandbox, controlled by it,
    with exactly one pod."""
    setup_pool(kube, ns, replicas)
    names = [f"claim-{i:02d}" for i in range(20)]
    create_all(kube, ns, *[claim(n, "pool") for n in names])

    def all_ready():
        cs = {c["metadata"]["name"]: c for c in kube.list(CLAIM, ns)}
        return cs if all(n in cs and is_ready(cs[n]) for n in names) else None
    cs = wait_for(all_ready, timeout=120, interval=0.5, desc="20 claims Ready")
    bound = {n: cs[n]["status"]["sandbox"]["name"] for n in names}
    assert len(set(bound.values())) == 20, bound
    sbs = {s["metadata"]["name"]: s for s in kube.list("sandboxes", ns)}
    pods = kube.list("pods", ns)
    launch = {}
    for n, sbn in bound.items():
        sb = sbs[sbn]
        assert controller_ref(sb)["uid"] == cs[n]["metadata"]["uid"], (n, sbn)
        owned = [p for p in pods if (controller_ref(p) or {}).get("uid") == sb["metadata"]["uid"]]
        assert len(owned) == 1, (sbn, [p["metadata"]["name"] for p in owned])
        launch[n] = labels(sb)[L_LAUNCH]
        assert (launch[n] == "cold") == (sbn == n), (n, sbn, launch[n])
    warm = sum(v == "warm" for v in launch.values())
    print(f"pool {replicas}: {warm} warm, {20 - warm} cold")
    if replicas >= 20:
        assert warm == 20, launch
    else:
        assert warm >= 1, launch


# ================================================================ NetworkPolicy (docs/api.md#sandboxtemplate-controller)

DEFAULT_INGRESS = [{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "agent-sandbox-system"}},
                              "podSelector": {"matchLabels": {"app": "sandbox-router"}}}]}]
DEFAULT_EGRESS = [{"to": [
    {"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"]}},
    {"ipBlock": {"cidr": "::/0", "except": ["fc00::/7", "fe80::/10"]}}]}]
CUSTOM_INGRESS = [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                   "ports": [{"port": 8080, "protocol": "TCP"}]}]


def test_network_policy_managed_default_custom_then_unmanaged(kube, ns):
    """docs/api.md#sandboxtemplate-controller: a Managed template (the default) without rules gets the secure
    default NetworkPolicy <t>-network-policy (router-only ingress, public
    egress), controlled by the template; custom rules replace it in place
    (an empty list denies that direction); Unmanaged deletes the one it
    controls."""
    kube.create(template("tpl"), ns)
    np = wait_for(lambda: kube.get("networkpolicy", "tpl-network-policy", ns), desc="the NetworkPolicy")
    t = kube.get(TEMPLATE, "tpl", ns)
    ref = controller_ref(np)
    assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == (EXT_API, "SandboxTemplate", "tpl",
                                                                         t["metadata"]["uid"])
    spec = np["spec"]
    assert spec["podSelector"] == {"matchLabels": {L_TPL_REF: name_hash("tpl")}}
    assert spec["policyTypes"] == ["Ingress", "Egress"]
    assert spec["ingress"] == DEFAULT_INGRESS
    assert spec["egress"] == DEFAULT_EGRESS

    kube.patch(TEMPLATE, "tpl", ns, {"spec": {"networkPolicy": {"ingress": CUSTOM_INGRESS, "egress": []}}})
    np2 = wait_obj(kube, "networkpolicy", "tpl-network-policy", ns,
                   lambda o: o["spec"].get("ingress") == CUSTOM_INGRESS, "the custom rules")
    assert np2["metadata"]["uid"] == np["metadata"]["uid"]
    assert not np2["spec"].get("egress")
    assert np2["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert np2["spec"]["podSelector"] == spec["podSelector"]

    kube.patch(TEMPLATE, "tpl", ns, {"spec": {"networkPolicyManagement": "Unmanaged"}})
    wait_gone(kube, "networkpolicy", "tpl-network-policy", ns)


def test_network_policy_custom_rules_keep_cluster_dns(kube, ns):
    """docs/api.md#sandboxtemplate-controller, #secure-defaults: custom rules at creation => that policy; secure-by-default
    mode is off, so members keep the template's DNS settings (no public DNS
    override) but still get automountServiceAccountToken false."""
    tpl = template("tpl", networkPolicy={"ingress": CUSTOM_INGRESS})
    [m] = setup_pool(kube, ns, 1, tpl=tpl)
    np = wait_for(lambda: kube.get("networkpolicy", "tpl-network-policy", ns), desc="the NetworkPolicy")
    assert np["spec"]["ingress"] == CUSTOM_INGRESS
    assert not np["spec"].get("egress")
    assert np["spec"]["policyTypes"] == ["Ingress", "Egress"]
    ps = m["spec"]["podTemplate"]["spec"]
    assert ps.get("dnsPolicy") != "None" and "dnsConfig" not in ps, ps
    assert ps["automountServiceAccountToken"] is False


def test_network_policy_unmanaged_and_foreign_policies(kube, ns, extensions_controller):
    """docs/api.md#sandboxtemplate-controller: an Unmanaged template gets no NetworkPolicy and leaves a user's
    policy of that name alone; a Managed template refuses to update a
    policy of its name that it does not control (logged error, policy
    untouched)."""
    user_np = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "spec": {"podSelector": {"matchLabels": {"mine": "yes"}}, "policyTypes": ["Ingress"]}}
    create_all(kube, ns, {**user_np, "metadata": {"name": "um-network-policy"}},
               {**user_np, "metadata": {"name": "foreign-network-policy"}})
    before = {n: kube.get("networkpolicy", f"{n}-network-policy", ns) for n in ("um", "foreign")}
    create_all(kube, ns, template("um", networkPolicyManagement="Unmanaged"), template("bare-um", networkPolicyManagement="Unmanaged"),
               template("foreign"))
    for t in ("um", "bare-um", "foreign"):
        wait_obj(kube, TEMPLATE, t, ns, lambda o: labels(o).get(L_TPL_REF), f"template {t} reconciled")
    msg = 'refusing to update NetworkPolicy "foreign-network-policy" as it is not controlled by SandboxTemplate "foreign"'
    # the log escapes the quotes in a value (JSON, the default, and logfmt alike)
    wait_for(lambda: msg.replace('"', '\\"') in extensions_controller.text() or msg in extensions_controller.text(),
             timeout=30, desc="the refusal logged")
    time.sleep(1)
    assert kube.get("networkpolicy", "bare-um-network-policy", ns) is None
    for n in ("um", "foreign"):
        after = kube.get("networkpolicy", f"{n}-network-policy", ns)
        assert after["metadata"]["resourceVersion"] == before[n]["metadata"]["resourceVersion"], n
        assert not after["metadata"].get("ownerReferences")


# ================================================================ scale subresource (docs/api.md#sandboxwarmpool-spec, #sandboxwarmpool-status)

def test_pool_scale_subresource(kube, ns):
    """`kubectl scale swp` drives spec.replicas; status replicas,
    readyReplicas and selector follow and are served through /scale;
    replicas 0 drains the pool."""
    setup_pool(kube, ns, 1)
    kube.run("scale", "swp", "pool", "-n", ns, "--replicas=3")
    wait_members(kube, ns, "pool", 3)
    sel = f"{L_POOL}={name_hash('pool')}"
    p = wait_obj(kube, POOL, "pool", ns, lambda o: (o.get("status") or {}).get("readyReplicas") == 3,
                 "status readyReplicas 3")
    assert p["spec"]["replicas"] == 3
    assert (p["status"]["replicas"], p["status"]["selector"]) == (3, sel)
    scale = json.loads(kube.run("get", "--raw", f"/apis/{EXT_API}/namespaces/{ns}/sandboxwarmpools/pool/scale").stdout)
    assert scale["kind"] == "Scale"
    assert scale["spec"]["replicas"] == 3
    assert (scale["status"]["replicas"], scale["status"]["selector"]) == (3, sel)

    kube.run("scale", "swp", "pool", "-n", ns, "--replicas=0")
    wait_for(lambda: not members(kube, ns, "pool", active=False), desc="the pool drained")
    p = wait_obj(kube, POOL, "pool", ns, lambda o: not (o.get("status") or {}).get("replicas")
                 and not o["status"].get("readyReplicas"), "status replicas 0")
    assert p["status"]["selector"] == sel


# ================================================================ failure modes of issue 5

def test_claim_before_its_pool_and_template_binds_when_they_appear(kube, ns):
    """Failure mode: a claim made before its pool (WarmPoolNotFound), then
    the pool before its template (TemplateNotFound): exact messages; once
    the template exists the claim binds promptly (watches, not the 1-minute
    fallback)."""
    kube.create(claim("early", "pool"), ns)
    c = wait_claim_reason(kube, "early", ns, "WarmPoolNotFound")
    assert cond(c, "Ready") == ("False", "WarmPoolNotFound", 'SandboxWarmPool "pool" not found')
    kube.create(pool("pool", "tpl", 1), ns)
    c = wait_claim_reason(kube, "early", ns, "TemplateNotFound", timeout=20)
    assert cond(c, "Ready") == ("False", "TemplateNotFound", 'SandboxTemplate "tpl" not found')
    kube.create(template("tpl"), ns)
    c = wait_claim_ready(kube, "early", ns, timeout=25)
    bound_sandbox(kube, c, ns)


def test_env_injection_policies(kube, ns):
    """docs/api.md#env-injection (exact reasons/messages): Disallowed (default) refuses; Allowed
    appends (named container or the first main one), refuses to override an
    existing name, refuses a container with envFrom, and an unknown
    container is an error; Overrides replaces in place (valueFrom dropped)
    and appends. Env forces a cold start even with a Ready member."""
    main_env = [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]
    spec = {"containers": [{"name": "main", "image": IMAGE, "env": main_env}, {"name": "side", "image": IMAGE}]}
    envfrom = {"containers": [{"name": "main", "image": IMAGE, "envFrom": [{"configMapRef": {"name": "cm"}}]}]}
    create_all(kube, ns, template("t-dis", spec=spec), template("t-all", spec=spec, envVarsInjectionPolicy="Allowed"),
               template("t-ovr", spec=spec, envVarsInjectionPolicy="Overrides"),
               template("t-from", spec=envfrom, envVarsInjectionPolicy="Allowed"),
               pool("p-dis", "t-dis", 0), pool("p-all", "t-all", 1), pool("p-ovr", "t-ovr", 0),
               pool("p-from", "t-from", 0))
    [member] = wait_members(kube, ns, "p-all", 1)
    x = {"name": "X", "value": "x"}
    cases = {
        "dis": ("p-dis", [x], ("EnvVarsInjectionRejected", "environment variable injection rejected: environment "
                               "variable injection is not allowed by the template policy")),
        "all-new": ("p-all", [x, {"name": "Y", "value": "y", "containerName": "side"}],
                    {"main": main_env + [x], "side": [{"name": "Y", "value": "y"}]}),
        "all-existing": ("p-all", [{"name": "A", "value": "2"}],
                         ("ReconcilerError", 'Error seen: environment variable override is not allowed by the '
                                             'template policy for variable "A"')),
        "all-unknown": ("p-all", [{"name": "X", "value": "x", "containerName": "nope"}],
                        ("ReconcilerError", 'Error seen: target container "nope" not found in template for '
                                            'environment variable "X"')),
        "from": ("p-from", [x], ("EnvVarsInjectionRejected", 'environment variable injection rejected: container '
                                 '"main" uses EnvFrom sources; Allowed policy cannot safely prevent overriding '
                                 'EnvFrom-provided variables')),
        "ovr": ("p-ovr", [{"name": "B", "value": "b"}, x],
                {"main": [main_env[0], {"name": "B", "value": "b"}, x], "side": []}),
    }
    create_all(kube, ns, *[claim(n, p, env=e) for n, (p, e, _) in cases.items()])
    failures = []
    for n, (p, e, want) in cases.items():
        if isinstance(want, tuple):
            c = wait_claim_reason(kube, n, ns, want[0])
            if cond(c, "Ready") != ("False", *want):
                failures.append(f"{n}: Ready {cond(c, 'Ready')}, want {want}")
            if kube.get("sandbox", n, ns) is not None:
                failures.append(f"{n}: a Sandbox was created")
            continue
        c = wait_claim_ready(kube, n, ns)
        sb = bound_sandbox(kube, c, ns)
        if sb["metadata"]["name"] != n or labels(sb).get(L_LAUNCH) != "cold":
            failures.append(f"{n}: sandbox {sb['metadata']['name']} launch-type {labels(sb).get(L_LAUNCH)}; want cold")
        for cname, env in want.items():
            if env_of(sb, cname) != env:
                failures.append(f"{n}: container {cname} env {env_of(sb, cname)}, want {env}")
    sb = kube.get("sandbox", member["metadata"]["name"], ns)
    if (controller_ref(sb) or {}).get("kind") != "SandboxWarmPool":
        failures.append("the Ready member of p-all was adopted by a claim with env")
    check_all(failures)


def test_additional_pod_metadata_validation(kube, ns):
    """docs/api.md#additionalpodmetadata: invalid additionalPodMetadata => Ready False/InvalidMetadata with
    the exact message (labels checked before annotations), nothing created;
    a metadata override conflict with the template => ReconcilerError;
    valid metadata (allowlisted label domains, any unprefixed annotation,
    the safe-to-evict exception) reaches the pod; a bound claim edited to
    invalid metadata reports InvalidMetadata and keeps its binding."""
    pre = "invalid additionalPodMetadata: "
    cases = {
        "no-domain": ({"team": "a"}, None, f'{pre}failed to validate label "team": label "team" must have a domain '
                      "prefix (e.g. 'sandbox.users.io/my-label') to prevent opting into unintended policy domains"),
        "bad-domain": ({"evil.io/x": "1"}, None,
                       f'{pre}failed to validate label "evil.io/x": label domain "evil.io" is not in the allowlist'),
        "router": ({"app": "Sandbox-Router"}, None, f'{pre}failed to validate label "app": restricted system label '
                   'value: "app"="Sandbox-Router" is not allowed in AdditionalPodMetadata'),
        "k8s-annotation": (None, {"kubernetes.io/x": "1"}, f'{pre}failed to validate annotation "kubernetes.io/x": '
                           'restricted system domain: "kubernetes.io/x" is not allowed in AdditionalPodMetadata'),
        "sub-annotation": (None, {"sub.agents.x-k8s.io/y": "1"}, f'{pre}failed to validate annotation '
                           '"sub.agents.x-k8s.io/y": restricted system domain: "sub.agents.x-k8s.io/y" is not allowed '
                           'in AdditionalPodMetadata'),
        "labels-first": ({"team": "a"}, {"kubernetes.io/x": "1"}, f'{pre}failed to validate label "team": label "team" '
                         "must have a domain prefix (e.g. 'sandbox.users.io/my-label') to prevent opting into "
                         "unintended policy domains"),
    }
    tpl = template("tpl", podmeta={"labels": {"sandbox.users.io/team": "a"}})
    setup_pool(kube, ns, 0, tpl=tpl)
    good = {"labels": {"sandbox.users.io/team": "a", "dev.sandbox.users.io/x": "b"},
            "annotations": {"note": "hi", A_SAFE_TO_EVICT: "false"}}
    objs = [claim("good", "pool", additionalPodMetadata=good),
            claim("conflict", "pool", additionalPodMetadata={"labels": {"sandbox.users.io/team": "b"}})]
    for n, (lb, an, _) in cases.items():
        md = {}
        if lb:
            md["labels"] = lb
        if an:
            md["annotations"] = an
        objs.append(claim(n, "pool", additionalPodMetadata=md))
    create_all(kube, ns, *objs)
    failures = []
    for n, (_, _, msg) in cases.items():
        c = wait_claim_reason(kube, n, ns, "InvalidMetadata")
        if cond(c, "Ready") != ("False", "InvalidMetadata", msg):
            failures.append(f"{n}: Ready {cond(c, 'Ready')},\n   want {msg!r}")
        if kube.get("sandbox", n, ns) is not None:
            failures.append(f"{n}: a Sandbox was created")
    c = wait_claim_reason(kube, "conflict", ns, "ReconcilerError")
    want = ('metadata override conflict: label "sandbox.users.io/team" is defined in template with value "a", '
            'but claim requests "b"')
    if not cond(c, "Ready")[2].startswith("Error seen: ") or want not in cond(c, "Ready")[2]:
        failures.append(f"conflict: Ready {cond(c, 'Ready')}, want ReconcilerError with {want!r}")
    check_all(failures)

    c = wait_claim_ready(kube, "good", ns)
    sbn = bound_sandbox(kube, c, ns)["metadata"]["name"]
    pod = kube.get("pod", sbn, ns)
    assert {k: labels(pod).get(k) for k in good["labels"]} == good["labels"]
    assert {k: annotations(pod).get(k) for k in good["annotations"]} == good["annotations"]
    # a bound claim edited to invalid metadata: InvalidMetadata, binding kept
    kube.patch(CLAIM, "good", ns, {"spec": {"additionalPodMetadata": {"labels": {"team": "a"}}}})
    c = wait_claim_reason(kube, "good", ns, "InvalidMetadata")
    assert c["status"]["sandbox"]["name"] == sbn
    assert kube.get("sandbox", sbn, ns) is not None


# ================================================================ conversion (docs/api.md#converting-sandboxclaim to #converting-sandboxwarmpool)

def replace_raw(kube, path, obj):
    """PUT obj as is (its apiVersion), retrying conflicts with a fresh read."""
    for _ in range(20):
        p = kube.run("replace", "--raw", path, "-f", "-", input=json.dumps(obj), check=False)
        if p.returncode == 0:
            return
        assert "Conflict" in p.stderr or "modified" in p.stderr, p.stderr
        time.sleep(0.2)
        obj = json.loads(kube.run("get", "--raw", path).stdout)
    raise AssertionError(f"replace of {path} kept conflicting")


def test_v1alpha1_round_trip_through_the_conversion_webhook(kube, ns):
    """docs/api.md#converting-sandboxclaim to #converting-sandboxwarmpool through the controller's webhook: a v1beta1 template reads
    as v1alpha1 with its VCT policy in an annotation and comes back intact;
    a bad policy annotation is refused; a v1alpha1 pool and claim are
    stored as v1beta1 (claim: warmpool => warmPoolRef, template-only =>
    shadow-pool-<t>), reconciled, and read back as written; a v1beta1
    claim reads as v1alpha1 with the pool name as template and warmpool."""
    alpha = f"/apis/{GROUP}/v1alpha1/namespaces/{ns}"
    policy_ann = "api.agents.x-k8s.io/v1beta1-volume-claim-templates-policy"
    kube.create(template("tpl", volumeClaimTemplatesPolicy="Allowed", envVarsInjectionPolicy="Allowed"), ns)
    first = kube.get(TEMPLATE, "tpl", ns)
    ta = kube.get(TEMPLATE_ALPHA, "tpl", ns)
    assert ta["apiVersion"] == f"{GROUP}/v1alpha1"
    assert "volumeClaimTemplatesPolicy" not in ta["spec"]
    assert annotations(ta).get(policy_ann) == "Allowed"
    assert ta["spec"]["envVarsInjectionPolicy"] == "Allowed"
    replace_raw(kube, f"{alpha}/sandboxtemplates/tpl", ta)
    second = kube.get(TEMPLATE, "tpl", ns)
    assert second["spec"] == first["spec"]
    assert policy_ann not in annotations(second)

    bad = template("bad-tpl")
    bad["apiVersion"] = f"{GROUP}/v1alpha1"
    bad["metadata"]["annotations"] = {policy_ann: "Sometimes"}
    p = kube.create(bad, ns, check=False)
    assert p.returncode != 0 and 'invalid VolumeClaimTemplatesPolicy annotation value: "Sometimes"' in p.stderr, p.stderr

    pa = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SandboxWarmPool", "metadata": {"name": "apool"},
          "spec": {"replicas": 1, "sandboxTemplateRef": {"name": "tpl"}}}
    p = kube.create(pa, ns)
    assert f"{GROUP}/v1alpha1 SandboxWarmPool is deprecated; use {GROUP}/v1beta1 SandboxWarmPool instead" in p.stderr
    assert kube.get(POOL, "apool", ns)["spec"]["replicas"] == 1
    wait_members(kube, ns, "apool", 1)
    pa_back = kube.get(POOL_ALPHA, "apool", ns)
    assert pa_back["spec"]["replicas"] == 1
    assert "observedGeneration" not in (pa_back.get("status") or {})
    assert not [k for k in annotations(pa_back) if k.startswith("api.agents.x-k8s.io/")]

    ca = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SandboxClaim", "metadata": {"name": "aclaim"},
          "spec": {"sandboxTemplateRef": {"name": "tpl"}, "warmpool": "apool"}}
    shadow = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SandboxClaim", "metadata": {"name": "shadowed"},
              "spec": {"sandboxTemplateRef": {"name": "tpl"}}}
    p = kube.create(ca, ns)
    assert f"{GROUP}/v1alpha1 SandboxClaim is deprecated; use {GROUP}/v1beta1 SandboxClaim instead" in p.stderr
    kube.create(shadow, ns)
    assert kube.get(CLAIM, "aclaim", ns)["spec"]["warmPoolRef"] == {"name": "apool"}
    assert kube.get(CLAIM, "shadowed", ns)["spec"]["warmPoolRef"] == {"name": "shadow-pool-tpl"}
    c = wait_claim_ready(kube, "aclaim", ns)
    bound_sandbox(kube, c, ns)
    s = wait_claim_reason(kube, "shadowed", ns, "WarmPoolNotFound")
    assert cond(s, "Ready")[2] == 'SandboxWarmPool "shadow-pool-tpl" not found'
    back = kube.get(CLAIM_ALPHA, "aclaim", ns)
    assert (back["spec"]["sandboxTemplateRef"], back["spec"].get("warmpool")) == ({"name": "tpl"}, "apool")
    assert "warmPoolRef" not in back["spec"]
    assert (back.get("status", {}).get("sandbox") or {}).get("name") == c["status"]["sandbox"]["name"], back.get("status")
    assert cond(back, "Ready")[0] == "True"

    kube.create(claim("beta", "apool"), ns)
    b = kube.get(CLAIM_ALPHA, "beta", ns)
    assert (b["spec"]["sandboxTemplateRef"], b["spec"].get("warmpool")) == ({"name": "apool"}, "apool")
