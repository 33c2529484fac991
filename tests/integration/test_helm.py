"""The Helm chart deploy/helm/agent-sandbox (docs/install.md#helm).

deploy/ (kustomize) is the source of truth: `helm template` with the
default values must give deploy/'s objects, less the differences the chart
means to have (INTENDED below); explicit false and 0 values must reach the
controller's flags; an upstream-style values file must carry over; the
release manifests of tools/gen-install-yaml --release must hold deploy/'s
objects. Then `helm install` on the local cluster, and the controller run
from what it installed: the Deployment's container args, the chart's
ServiceAccount (a TokenRequest token), reconciling a Sandbox and a warm pool
to Ready (kwok plays the kubelet, so the Deployment's pod runs no process:
the built binary runs here instead, as the `controller` fixture does).
helm is the one tools/install-deps builds.
"""
import os
import re
import subprocess
import uuid

import pytest
import yaml

from conftest import LOCAL_CLUSTER, ROOT, ControllerProcess, apply_deploy, condition, controller_binary, new_namespace, wait_for
from kubetest import EXT_API, POOL, helm_binary

CHART = os.path.join(ROOT, "deploy", "helm", "agent-sandbox")
NS = "agent-sandbox-system"
# Labels the chart puts on every object it templates (upstream's chart's).
HELM_LABELS = {"helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance",
               "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}
# The controller Deployment's selector in the chart: upstream's chart's, so
# that `helm upgrade` from an upstream release keeps the Deployment (a
# selector is immutable); deploy/ selects `app: agent-sandbox-controller`.
SELECTOR = {"app.kubernetes.io/name": "agent-sandbox", "app.kubernetes.io/instance": "agent-sandbox"}
# Flags the chart always passes, as upstream's chart does, because both are
# values (webhookServiceName, namespace.name); deploy/ leaves them at the
# controller's defaults, which are these.
WEBHOOK_ARGS = ["--webhook-service-name=agent-sandbox-webhook-service",
                "--webhook-namespace=agent-sandbox-system"]


def helm(*args, check=True):
    binary = helm_binary()
    assert os.path.exists(binary), f"helm not built: {binary} (run tools/install-deps)"
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=180)
    if check and p.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def template(*args, values=None, tmp_path=None):
    """`helm template agent-sandbox CHART -n agent-sandbox-system --include-crds ARGS`
    (VALUES: a dict written to a values file): the objects, keyed by
    (kind, namespace, name)."""
    extra = list(args)
    if values is not None:
        path = os.path.join(str(tmp_path), f"values-{uuid.uuid4().hex[:6]}.yaml")
        with open(path, "w") as f:
            f.write(values if isinstance(values, str) else yaml.safe_dump(values))
        extra += ["-f", path]
    out = helm("template", "agent-sandbox", CHART, "-n", NS, "--include-crds", *extra).stdout
    return by_key(yaml.safe_load_all(out))


def by_key(objs):
    out = {}
    for o in objs:
        if o:
            key = (o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"])
            assert key not in out, f"{key} twice"
            out[key] = o
    return out


def kustomize(path):
    p = subprocess.run([LOCAL_CLUSTER, "kubectl", "kustomize", path], capture_output=True, text=True,
                       timeout=120, check=True)
    return by_key(yaml.safe_load_all(p.stdout))


def blank_lines_dropped(obj):
    """obj with blank lines removed from its strings. kubectl kustomize
    (kyaml) re-writes a folded block scalar that has a more-indented line
    (deploy/router's admission policy's CEL) as a literal one with an extra
    blank line; that is what kubectl sends, and CEL ignores it."""
    if isinstance(obj, dict):
        return {k: blank_lines_dropped(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [blank_lines_dropped(v) for v in obj]
    return re.sub(r"\n\s*\n", "\n", obj) if isinstance(obj, str) else obj


def controller_deployment(objs):
    return objs[("Deployment", NS, "agent-sandbox-controller")]


def container(objs):
    (c,) = controller_deployment(objs)["spec"]["template"]["spec"]["containers"]
    assert c["name"] == "agent-sandbox-controller"
    return c


def intended(obj):
    """The chart's object with the differences the chart means to have taken
    back out, each one checked on the way (docs/install.md#helm)."""
    md = obj["metadata"]
    labels = md.pop("labels", {}) or {}
    assert HELM_LABELS - {"app.kubernetes.io/version"} <= set(labels) or obj["kind"] == "CustomResourceDefinition", \
        f"{obj['kind']}/{md['name']} lacks the chart's labels: {labels}"
    rest = {k: v for k, v in labels.items() if k not in HELM_LABELS}
    if rest:
        md["labels"] = rest
    if obj["kind"] == "Deployment" and md["name"] == "agent-sandbox-controller":
        spec = obj["spec"]
        assert spec["selector"] == {"matchLabels": SELECTOR}
        spec["selector"] = {"matchLabels": {"app": "agent-sandbox-controller"}}
        pod_labels = spec["template"]["metadata"]["labels"]
        assert {k: pod_labels.pop(k) for k in SELECTOR} == SELECTOR
        args = spec["template"]["spec"]["containers"][0]["args"]
        assert args[-2:] == WEBHOOK_ARGS, args
        del args[-2:]
    if obj["kind"] == "Service" and md["name"] in ("agent-sandbox-controller", "agent-sandbox-webhook-service"):
        assert obj["spec"]["selector"] == SELECTOR
        obj["spec"]["selector"] = {"app": "agent-sandbox-controller"}
    return obj


def assert_same_objects(chart, deploy):
    assert sorted(chart) == sorted(deploy), "the chart and deploy/ make different objects"
    for key, obj in chart.items():
        assert blank_lines_dropped(intended(obj)) == blank_lines_dropped(deploy[key]), f"{key} differs from deploy/"


def test_helm_lint():
    helm("lint", "--strict", CHART)
    helm("lint", "--strict", CHART, "--set", "router.enabled=true", "--set", "metrics.serviceMonitor.enabled=true",
         "--set", "metrics.prometheusRule.enabled=true", "--set", "namespace.create=false")


def test_default_values_render_the_objects_of_deploy():
    """helm template with the default values == kubectl kustomize deploy/
    (parsed objects), less INTENDED; with router.enabled, the router's
    objects == deploy/router's."""
    assert_same_objects(template(), kustomize(os.path.join(ROOT, "deploy")))
    chart = template("--set", "router.enabled=true")
    router = kustomize(os.path.join(ROOT, "deploy", "router"))
    assert_same_objects({k: v for k, v in chart.items() if k in router}, router)


def test_explicit_false_and_zero_values_reach_the_flags(tmp_path):
    """Each controller.* key set is passed, false and 0 included (a chart that
    tests `{{ if .Values.x }}` drops them); numbers from a values file are
    float64 in Helm and must not print as 1e+06; unset keys are not passed."""
    values = {"replicaCount": 0, "controller": {
        "leaderElect": False, "extensions": False, "enableWarmPoolEviction": False, "enableTracing": False,
        "enablePprof": False, "kubeApiBurst": 0, "kubeApiQps": -1.0, "sandboxConcurrentWorkers": 0,
        "pprofBlockProfileRate": 1000000, "pprofMutexProfileFraction": 0, "sandboxWarmPoolMaxBatchSize": 0,
        "clusterDomain": "", "extraArgs": ["--log-format=json", "--manage-webhook-certs=false"]}}
    objs = template(values=values, tmp_path=tmp_path)
    assert controller_deployment(objs)["spec"]["replicas"] == 0
    assert container(objs)["args"] == [
        "--leader-elect=false", "--cluster-domain=", "--extensions=false", "--enable-tracing=false",
        "--enable-pprof=false", "--pprof-block-profile-rate=1000000", "--pprof-mutex-profile-fraction=0",
        "--kube-api-qps=-1", "--kube-api-burst=0", "--sandbox-concurrent-workers=0",
        "--sandbox-warm-pool-max-batch-size=0", "--enable-warm-pool-eviction=false",
        *WEBHOOK_ARGS, "--log-format=json", "--manage-webhook-certs=false"]
    # extensions off: their ClusterRole stays, unbound (as upstream's chart)
    assert ("ClusterRole", None, "agent-sandbox-controller-extensions") in objs
    assert ("ClusterRoleBinding", None, "agent-sandbox-controller-extensions") not in objs

    # the same through --set (ints are int64 there) and a fractional rate
    objs = template("--set", "controller.leaderElect=false", "--set", "controller.kubeApiBurst=0",
                    "--set", "controller.kubeApiQps=2.5", "--set", "controller.sandboxClaimConcurrentWorkers=2000000")
    assert container(objs)["args"] == ["--leader-elect=false", "--extensions=true", "--kube-api-qps=2.5",
                                       "--kube-api-burst=0", "--sandbox-claim-concurrent-workers=2000000",
                                       *WEBHOOK_ARGS]



def test_null_huge_and_nested_values_never_render_a_wrong_flag(tmp_path):
    """A key set to null is left out, as Helm's null means (not
    `--kube-api-qps=`, which the controller refuses); a whole number beyond
    int64 keeps its value (not -9223372036854775808: a qps of 1.5e300 read
    as negative meant no limit); a map or a list fails the render naming
    the key."""
    values = {"controller": {"kubeApiQps": None, "kubeApiBurst": 1e20,
                             "pprofBlockProfileRate": 12345678901234567890,
                             "sandboxConcurrentWorkers": -1e300, "sandboxWarmPoolMaxBatchSize": 3e9}}
    args = container(template(values=values, tmp_path=tmp_path))["args"]
    assert args[:6] == ["--leader-elect=true", "--extensions=true", "--pprof-block-profile-rate=1.2345678901234567e+19",
                        "--kube-api-burst=1e+20", "--sandbox-concurrent-workers=-1e+300",
                        "--sandbox-warm-pool-max-batch-size=3000000000"], args
    assert not any(a.startswith("--kube-api-qps") for a in args), args
    for bad in ('{"a": 1}', "[1, 2]"):
        p = helm("template", "agent-sandbox", CHART, "--set", "image.tag=x", "--set-json",
                 f"controller.kubeApiQps={bad}", check=False)
        assert p.returncode != 0 and "controller.kubeApiQps" in p.stderr, (p.stdout[-300:], p.stderr)

# Upstream's chart's values.yaml, every key set (its names and shapes; the
# values are a user's). Each must carry over.
UPSTREAM_VALUES = """
namespace:
  create: false
  name: sandboxes
image:
  repository: registry.example.com/agent-sandbox-controller
  tag: v0.1.0
  pullPolicy: Always
imagePullSecrets:
- name: my-registry-creds
replicaCount: 2
podAnnotations:
  team.example.com/owner: platform
podLabels:
  team: platform
controller:
  clusterDomain: corp.local
  leaderElect: true
  leaderElectionNamespace: sandboxes
  extensions: true
  enableTracing: false
  enablePprof: false
  enablePprofDebug: false
  pprofBlockProfileRate: 1000000
  pprofMutexProfileFraction: 10
  kubeApiQps: -1.0
  kubeApiBurst: 10
  sandboxConcurrentWorkers: 100
  sandboxClaimConcurrentWorkers: 50
  sandboxWarmPoolConcurrentWorkers: 1
  sandboxTemplateConcurrentWorkers: 1
  sandboxWarmPoolMaxBatchSize: 300
  sandboxWarmPoolReadinessGracePeriod: 5m
  sandboxWarmPoolUnschedulableRecheckInterval: 1m
  enableWarmPoolEviction: true
  extraArgs: ["--zap-log-level=debug"]
resources:
  limits:
    cpu: 500m
    memory: 128Mi
  requests:
    cpu: 10m
    memory: 64Mi
nodeSelector:
  kubernetes.io/os: linux
tolerations:
- key: dedicated
  operator: Equal
  value: sandboxes
  effect: NoSchedule
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
podSecurityContext: null
containerSecurityContext:
  allowPrivilegeEscalation: false
  runAsNonRoot: true
webhookServiceName: my-webhook
service:
  name: my-metrics
metrics:
  serviceMonitor:
    enabled: true
    additionalLabels:
      release: kube-prometheus-stack
    interval: 15s
    scrapeTimeout: 10s
  prometheusRule:
    enabled: true
    additionalLabels:
      release: kube-prometheus-stack
    additionalGroups:
    - name: mine
      rules:
      - alert: Mine
        expr: vector(1)
"""


def test_an_upstream_values_file_carries_over(tmp_path):
    path = tmp_path / "upstream-values.yaml"
    path.write_text(UPSTREAM_VALUES)
    helm("lint", "--strict", CHART, "-f", str(path))
    objs = template(values=UPSTREAM_VALUES, tmp_path=tmp_path)
    ns = "sandboxes"
    assert ("Namespace", None, ns) not in objs and ("Namespace", None, NS) not in objs
    assert {k[1] for k in objs if k[0] not in ("Namespace", "CustomResourceDefinition") and
            not k[0].startswith("Cluster")} == {ns}
    dep = objs[("Deployment", ns, "agent-sandbox-controller")]
    assert dep["spec"]["replicas"] == 2
    pod = dep["spec"]["template"]
    assert pod["metadata"]["labels"]["team"] == "platform"
    assert pod["metadata"]["annotations"]["team.example.com/owner"] == "platform"
    spec = pod["spec"]
    assert spec["imagePullSecrets"] == [{"name": "my-registry-creds"}]
    assert spec["nodeSelector"] == {"kubernetes.io/os": "linux"}
    assert spec["tolerations"][0]["key"] == "dedicated"
    assert "nodeAffinity" in spec["affinity"]
    assert "securityContext" not in spec, "podSecurityContext: null removes the chart's default"
    (c,) = spec["containers"]
    assert (c["image"], c["imagePullPolicy"]) == ("registry.example.com/agent-sandbox-controller:v0.1.0", "Always")
    assert c["resources"] == {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "10m", "memory": "64Mi"}}
    assert c["securityContext"]["runAsNonRoot"] is True
    assert c["args"] == [
        "--leader-elect=true", "--cluster-domain=corp.local", "--leader-election-namespace=sandboxes",
        "--extensions=true", "--enable-tracing=false", "--enable-pprof=false", "--enable-pprof-debug=false",
        "--pprof-block-profile-rate=1000000", "--pprof-mutex-profile-fraction=10", "--kube-api-qps=-1",
        "--kube-api-burst=10", "--sandbox-concurrent-workers=100", "--sandbox-claim-concurrent-workers=50",
        "--sandbox-warm-pool-concurrent-workers=1", "--sandbox-template-concurrent-workers=1",
        "--sandbox-warm-pool-max-batch-size=300", "--sandbox-warm-pool-readiness-grace-period=5m",
        "--sandbox-warm-pool-unschedulable-recheck-interval=1m", "--enable-warm-pool-eviction=true",
        "--webhook-service-name=my-webhook", "--webhook-namespace=sandboxes", "--zap-log-level=debug"]
    assert objs[("Service", ns, "my-webhook")]["spec"]["ports"][0]["targetPort"] == 9443
    assert objs[("Service", ns, "my-metrics")]["spec"]["ports"][0]["name"] == "metrics"
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for key, o in objs.items():
            if key[0] == kind:
                assert [s["namespace"] for s in o["subjects"]] == [ns], key
    sm = objs[("ServiceMonitor", ns, "agent-sandbox-controller")]
    assert sm["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert sm["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "scheme": "http",
                                        "interval": "15s", "scrapeTimeout": "10s"}]
    rule = objs[("PrometheusRule", ns, "agent-sandbox-controller")]
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    groups = rule["spec"]["groups"]
    assert [g["name"] for g in groups] == ["agent-sandbox-controller.rules", "mine"]
    assert "AgentSandboxControllerMetricsTargetsDown" in [r["alert"] for r in groups[0]["rules"]]
    assert 'service="my-metrics"' in groups[0]["rules"][0]["expr"]

    # every flag the chart can pass is one the controller has
    usage = subprocess.run([controller_binary(), "--help"], capture_output=True, text=True, timeout=30)
    for arg in c["args"]:
        assert arg.split("=", 1)[0] in usage.stdout + usage.stderr, f"controller has no flag {arg}"


# Upstream's chart's values.yaml as it ships (its keys and defaults).
UPSTREAM_DEFAULTS = """
namespace: {create: true, name: agent-sandbox-system}
image: {repository: registry.k8s.io/agent-sandbox/agent-sandbox-controller, tag: "", pullPolicy: IfNotPresent}
imagePullSecrets: []
replicaCount: 1
podAnnotations: {}
podLabels: {}
controller: {leaderElect: true, extensions: false, extraArgs: []}
resources: {}
nodeSelector: {}
tolerations: []
affinity: {}
podSecurityContext: null
containerSecurityContext: null
webhookServiceName: agent-sandbox-webhook-service
service: {name: agent-sandbox-controller}
metrics:
  serviceMonitor: {enabled: false, additionalLabels: {}, interval: 30s, scrapeTimeout: ""}
  prometheusRule: {enabled: false, additionalLabels: {}, additionalGroups: []}
"""


def test_upstreams_default_values_file_carries_over(tmp_path):
    """Upstream's shipped values.yaml plus the image tag it requires: its
    explicit choices hold (extensions off, no security contexts); an empty
    map cannot remove a default (Helm merges maps): resources stay ours."""
    p = tmp_path / "values.yaml"
    p.write_text(UPSTREAM_DEFAULTS)
    assert "image.tag is required" in helm("template", CHART, "-f", str(p), check=False).stderr
    objs = template("--set", "image.tag=v0.1.0", values=UPSTREAM_DEFAULTS, tmp_path=tmp_path)
    c = container(objs)
    assert c["args"] == ["--leader-elect=true", "--extensions=false", *WEBHOOK_ARGS]
    assert c["image"] == "registry.k8s.io/agent-sandbox/agent-sandbox-controller:v0.1.0"
    assert "securityContext" not in c
    assert "securityContext" not in controller_deployment(objs)["spec"]["template"]["spec"]
    assert c["resources"]["limits"] == {"memory": "512Mi"}
    assert ("ClusterRoleBinding", None, "agent-sandbox-controller-extensions") not in objs
    assert ("Namespace", None, NS) in objs


def test_release_manifests_hold_the_objects_of_deploy(tmp_path):
    """tools/gen-install-yaml --release: sandbox-with-extensions.yaml is
    deploy/; sandbox.yaml is deploy/ less the extensions (their CRDs, RBAC
    and --extensions); applying extensions.yaml after it gives deploy/."""
    p = subprocess.run([os.path.join(ROOT, "tools", "gen-install-yaml"), "--release", str(tmp_path),
                        "--image", "registry.example.com/agent-sandbox-controller:v9.9.9"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr

    def load(name):
        with open(tmp_path / name) as f:
            return by_key(yaml.safe_load_all(f))
    deploy = kustomize(os.path.join(ROOT, "deploy"))
    container(deploy)["image"] = "registry.example.com/agent-sandbox-controller:v9.9.9"
    both, core, ext = load("sandbox-with-extensions.yaml"), load("sandbox.yaml"), load("extensions.yaml")
    assert both == deploy
    assert ("CustomResourceDefinition", None, "sandboxes.agents.x-k8s.io") in core
    assert not [k for k in core if "extensions" in k[2]], "extension objects in sandbox.yaml"
    assert container(core)["args"] == ["--leader-elect=true"]
    assert {**core, **ext} == deploy
    assert {k[0] for k in ext} == {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Deployment"}


def test_optional_objects_are_accepted_by_the_api_server(deployed):
    """The router's objects (router.enabled) pass the API server's validation
    (server-side dry run; its ValidatingAdmissionPolicy's CEL is compiled
    there). The ServiceMonitor and PrometheusRule need the Prometheus
    Operator's CRDs, which this cluster lacks: they are checked by shape in
    test_an_upstream_values_file_carries_over."""
    out = helm("template", "agent-sandbox", CHART, "-n", NS, "--set", "router.enabled=true",
               "--show-only", "templates/router.yaml").stdout
    p = deployed.run("apply", "--dry-run=server", "-f", "-", input=out)
    assert "validatingadmissionpolicy.admissionregistration.k8s.io/sandbox-router-sandbox-writes" in p.stdout
    assert "deployment.apps/sandbox-router" in p.stdout

    # in another namespace, the policy names the router's ServiceAccount there
    objs = template("--set", "router.enabled=true", "--set", "namespace.name=elsewhere")
    policy = objs[("ValidatingAdmissionPolicy", None, "sandbox-router-sandbox-writes")]
    assert policy["spec"]["matchConditions"][0]["expression"] == \
        "request.userInfo.username == 'system:serviceaccount:elsewhere:sandbox-router'"
    for name in ("sandbox-router", "sandbox-router-auth-delegator"):
        assert objs[("ClusterRoleBinding", None, name)]["subjects"][0]["namespace"] == "elsewhere"
    assert ("Deployment", "elsewhere", "sandbox-router") in objs


# ---------------------------------------------------------------- helm install


@pytest.fixture
def installed(deployed, exclusive_controller):
    """`helm install` of the chart into a namespace of its own (with the
    namespace's name in namespace.name, so its flags and subjects name it).
    The cluster-scoped objects (CRDs, ClusterRoles and their bindings) are
    deploy/'s, which the session applied: Helm applies its own over them
    (--take-ownership --force-conflicts). The session controller is stopped meanwhile
    (exclusive_controller). Afterwards the namespace is deleted and deploy/
    applied again, so its bindings name its ServiceAccount again."""
    ns = "helm-" + uuid.uuid4().hex[:8]
    # the CRDs' webhook back on its Service (the session controller pointed it
    # at its loopback URL), or Helm's apply of crds/ would set both
    apply_deploy(deployed)
    try:
        helm("install", "agent-sandbox", CHART, "-n", ns, "--create-namespace", "--take-ownership", "--force-conflicts",
             "--set", f"namespace.name={ns}", "--wait", "--timeout", "120s",
             "--kubeconfig", deployed.kubeconfig)
        yield ns
    finally:
        deployed.run("delete", "namespace", ns, "--wait=false", check=False)
        apply_deploy(deployed)


def test_helm_install_runs_the_controller(deployed, installed, tmp_path):
    ns = installed
    kube = deployed
    assert "STATUS: deployed" in helm("status", "agent-sandbox", "-n", ns, "--kubeconfig", kube.kubeconfig).stdout
    dep = kube.get("deployment", "agent-sandbox-controller", ns)
    assert dep["status"].get("readyReplicas") == 1
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["name"] == "agent-sandbox-controller"
    assert c["args"] == ["--leader-elect=true", "--extensions=true", "--webhook-service-name=agent-sandbox-webhook-service",
                         f"--webhook-namespace={ns}"]
    binding = kube.get("clusterrolebinding", "agent-sandbox-controller-extensions")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "agent-sandbox-controller", "namespace": ns}]

    # The Deployment's container as a local process: its args, with the
    # chart's ServiceAccount's token. The fixture's loopback listeners and
    # webhook URL come first, the Deployment's args after them (they win),
    # then the Lease's namespace, which in a pod is the pod's own.
    sa_name = dep["spec"]["template"]["spec"]["serviceAccountName"]
    sa = subprocess.run([LOCAL_CLUSTER, "sa-kubeconfig", ns, sa_name],
                        capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    proc = ControllerProcess(tmp_path, sa, [*c["args"], f"--leader-election-namespace={ns}"], name="helm")
    try:
        proc.wait_leading()
        work = new_namespace(kube, "helm-it-")
        kube.apply(SANDBOX, work)
        wait_for(lambda: ready(kube.get("sandbox", "sb", work)), timeout=60, desc="Sandbox Ready")
        # the extension controllers, through the chart's extensions binding
        kube.apply(TEMPLATE, work)
        kube.apply(WARM_POOL, work)
        wait_for(lambda: ((kube.get(POOL, "pool", work) or {}).get("status") or {}).get("readyReplicas") == 1,
                 timeout=60, desc="warm pool Ready")
        kube.delete("namespace", work)
    finally:
        rc = proc.stop()
        print("---- helm-installed controller log (tail) ----\n" + proc.text()[-4000:])
    assert rc == 0, f"controller exit code {rc} after SIGTERM"
    proc.assert_clean_log()


def ready(obj):
    c = condition(obj or {}, "Ready")
    return c and c["status"] == "True"


IMAGE = "registry.k8s.io/pause:3.10"
SANDBOX = {"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox", "metadata": {"name": "sb"},
           "spec": {"podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}}}}
TEMPLATE = {"apiVersion": EXT_API, "kind": "SandboxTemplate", "metadata": {"name": "tpl"},
            "spec": {"podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}}}}
WARM_POOL = {"apiVersion": EXT_API, "kind": "SandboxWarmPool", "metadata": {"name": "pool"},
             "spec": {"replicas": 1, "sandboxTemplateRef": {"name": "tpl"}}}
