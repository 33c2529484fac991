"""The idle fields of the API (ours, docs/api.md#idle-suspend-and-resume) on the real
control plane of tools/local-cluster with kwok nodes: what the API server
accepts and stores, and how the extension controllers carry the fields from
a SandboxTemplate and a SandboxClaim to the Sandboxes they build or adopt.
What the controller and the router then do with them (suspend, delete,
resume) is test_idle.py's and the router tests'.

  - the CRDs bound them (idleTimeoutSeconds 30 to 31536000, idlePolicy
    Suspend or Delete) in every kind and served version, and add nothing to
    an object written without them;
  - pool members carry the template's fields; a claim adopting one sets the
    claim's pair (else the template's) and stamps
    agents.x-k8s.io/last-activity with the adoption time, so the idle clock
    of a member that waited unclaimed starts when it is claimed;
  - a cold claim's Sandbox carries the claim's pair (else the template's);
  - a Recreate pool replaces its members when only the template's idle
    fields change.

Timeouts here are long (an hour and more): nothing goes idle while a test
runs.
"""
import datetime
import json

import pytest

from test_extensions import (CLAIM, CLAIM_ALPHA, GROUP, TEMPLATE, TEMPLATE_ALPHA, annotations,
                             bound_sandbox, claim, labels, parse_time, setup_pool, template,
                             wait_claim_ready, wait_members)
from test_sandbox import sandbox

pytestmark = pytest.mark.usefixtures("extensions_controller")

LAST_ACTIVITY = "agents.x-k8s.io/last-activity"
L_LAUNCH = "agents.x-k8s.io/launch-type"
IDLE_KEYS = ("idleTimeoutSeconds", "idlePolicy")


def idle_of(spec):
    """The idle fields present in a spec (or claim lifecycle)."""
    return {k: spec[k] for k in IDLE_KEYS if k in (spec or {})}


def now():
    return datetime.datetime.now(datetime.timezone.utc)


# ================================================================ the API server

def _kinds():
    """(description, manifest builder taking the idle fields) per kind and version."""
    def sbx(version):
        def build(**idle):
            m = sandbox("s", **idle)
            m["apiVersion"] = f"agents.x-k8s.io/{version}"
            return m
        return build

    def tpl(version):
        def build(**idle):
            m = template("t", **idle)
            m["apiVersion"] = f"{GROUP}/{version}"
            return m
        return build

    def clm(version):
        def build(**idle):
            if version == "v1beta1":
                return claim("c", "pool", lifecycle=dict(idle))
            return {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SandboxClaim", "metadata": {"name": "c"},
                    "spec": {"sandboxTemplateRef": {"name": "t"}, "lifecycle": dict(idle)}}
        return build

    return [(f"{kind} {v}", b(v)) for kind, b in (("Sandbox", sbx), ("SandboxTemplate", tpl),
                                                  ("SandboxClaim", clm)) for v in ("v1beta1", "v1alpha1")]


def test_api_server_bounds_the_idle_fields(kube, ns):
    """Every kind and served version refuses idleTimeoutSeconds below 30 or
    above 31536000 and an idlePolicy other than Suspend or Delete (schema
    validation, before any controller), and accepts the bounds."""
    failures = []
    refused = [({"idleTimeoutSeconds": 5}, "should be greater than or equal to 30"),
               ({"idleTimeoutSeconds": 31536001}, "should be less than or equal to 31536000"),
               ({"idleTimeoutSeconds": 60, "idlePolicy": "Pause"}, 'Unsupported value: "Pause"'),
               ({"idleTimeoutSeconds": "60"}, "must be of type integer")]
    accepted = [{"idleTimeoutSeconds": 30}, {"idleTimeoutSeconds": 31536000, "idlePolicy": "Delete"},
                {"idleTimeoutSeconds": 600, "idlePolicy": "Suspend"}]
    for what, build in _kinds():
        for idle, want in refused:
            p = kube.run("create", "--dry-run=server", "-n", ns, "-f", "-",
                         input=json.dumps(build(**idle)), check=False)
            if p.returncode == 0 or want not in p.stderr:
                failures.append(f"{what} {idle}: rc {p.returncode}, want refusal with {want!r}: {p.stderr.strip()}")
        for idle in accepted:
            p = kube.run("create", "--dry-run=server", "-n", ns, "-f", "-",
                         input=json.dumps(build(**idle)), check=False)
            if p.returncode != 0:
                failures.append(f"{what} {idle}: refused: {p.stderr.strip()}")
    assert not failures, "\n".join(failures)


def test_objects_without_the_idle_fields_are_stored_as_written(kube, ns):
    """No schema default: a Sandbox, template and claim written without the
    fields read back without them (in both versions), pool members of such
    a template carry none, and adopting one adds neither them nor a
    last-activity stamp."""
    kube.create(sandbox("plain"), ns)
    setup_pool(kube, ns, 1)
    kube.create(claim("c", "pool"), ns)
    c = wait_claim_ready(kube, "c", ns)
    sb = bound_sandbox(kube, c, ns)
    assert labels(sb)[L_LAUNCH] == "warm"
    assert idle_of(sb["spec"]) == {}
    assert LAST_ACTIVITY not in annotations(sb)
    assert idle_of(kube.get("sandbox", "plain", ns)["spec"]) == {}
    assert idle_of(kube.get("sandboxes.v1alpha1.agents.x-k8s.io", "plain", ns)["spec"]) == {}
    assert idle_of(kube.get(TEMPLATE, "tpl", ns)["spec"]) == {}
    assert idle_of(kube.get(TEMPLATE_ALPHA, "tpl", ns)["spec"]) == {}
    assert idle_of(kube.get(CLAIM, "c", ns)["spec"].get("lifecycle")) == {}
    assert idle_of(kube.get(CLAIM_ALPHA, "c", ns)["spec"].get("lifecycle")) == {}
    [m] = wait_members(kube, ns, "pool", 1, desc="the pool refilled")
    assert idle_of(m["spec"]) == {}


def test_idle_fields_read_the_same_in_both_versions(kube, ns):
    """Written in one version, the fields read back unchanged in the other
    (the conversion webhook copies them) for the three kinds."""
    kube.create(sandbox("s", idleTimeoutSeconds=3600, idlePolicy="Delete"), ns)
    a = kube.get("sandboxes.v1alpha1.agents.x-k8s.io", "s", ns)
    assert idle_of(a["spec"]) == {"idleTimeoutSeconds": 3600, "idlePolicy": "Delete"}
    ta = template("t", idleTimeoutSeconds=7200)
    ta["apiVersion"] = f"{GROUP}/v1alpha1"
    kube.create(ta, ns)
    assert idle_of(kube.get(TEMPLATE, "t", ns)["spec"]) == {"idleTimeoutSeconds": 7200}
    ca = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "SandboxClaim", "metadata": {"name": "c"},
          "spec": {"sandboxTemplateRef": {"name": "t"}, "warmpool": "none",
                   "lifecycle": {"idleTimeoutSeconds": 5400, "idlePolicy": "Suspend"}}}
    kube.create(ca, ns)
    assert idle_of(kube.get(CLAIM, "c", ns)["spec"]["lifecycle"]) == {"idleTimeoutSeconds": 5400,
                                                                      "idlePolicy": "Suspend"}


# ================================================================ propagation

def test_warm_claims_carry_the_claims_idle_fields_else_the_templates(kube, ns):
    """Members carry the template's pair and no activity stamp. A claim with
    its own lifecycle pair adopts a member: the Sandbox carries the claim's
    pair; a claim with a timeout only gets no idlePolicy (Suspend), not the
    template's Delete; a claim without them keeps the template's. Each
    adopted Sandbox's last-activity is its adoption time, not the member's
    creation."""
    tpl_pair = {"idleTimeoutSeconds": 3600, "idlePolicy": "Delete"}
    ms = setup_pool(kube, ns, 3, tpl=template("tpl", **tpl_pair))
    for m in ms:
        assert idle_of(m["spec"]) == tpl_pair, m["metadata"]["name"]
        assert LAST_ACTIVITY not in annotations(m)
    created = max(parse_time(m["metadata"]["creationTimestamp"]) for m in ms)
    wanted = {"own": ({"idleTimeoutSeconds": 1800, "idlePolicy": "Suspend"},
                      {"idleTimeoutSeconds": 1800, "idlePolicy": "Suspend"}),
              "timeout-only": ({"idleTimeoutSeconds": 900}, {"idleTimeoutSeconds": 900}),
              "none": (None, tpl_pair)}
    before = now().replace(microsecond=0)
    for name, (lc, _) in wanted.items():
        kube.create(claim(name, "pool", **({"lifecycle": lc} if lc else {})), ns)
    failures = []
    for name, (_, want) in wanted.items():
        c = wait_claim_ready(kube, name, ns)
        sb = bound_sandbox(kube, c, ns)
        if labels(sb)[L_LAUNCH] != "warm":
            failures.append(f"{name}: launch-type {labels(sb)[L_LAUNCH]}, want warm")
        if idle_of(sb["spec"]) != want:
            failures.append(f"{name}: idle fields {idle_of(sb['spec'])}, want {want}")
        stamp = annotations(sb).get(LAST_ACTIVITY)
        if not stamp:
            failures.append(f"{name}: no {LAST_ACTIVITY}")
            continue
        t = parse_time(stamp)
        if not (before <= t <= now() and t >= created):
            failures.append(f"{name}: {LAST_ACTIVITY} {stamp} not the adoption time "
                            f"(claims created at {before}, members by {created})")
    assert not failures, "\n".join(failures)


def test_cold_claims_carry_the_claims_idle_fields_else_the_templates(kube, ns):
    """An empty pool: each claim's Sandbox is cold, named like the claim,
    with the claim's pair, else the template's; no activity stamp (its
    clock starts at its creation)."""
    tpl_pair = {"idleTimeoutSeconds": 3600, "idlePolicy": "Delete"}
    setup_pool(kube, ns, 0, tpl=template("tpl", **tpl_pair))
    kube.create(claim("own", "pool", lifecycle={"idleTimeoutSeconds": 1200, "idlePolicy": "Suspend"}), ns)
    kube.create(claim("timeout-only", "pool", lifecycle={"idleTimeoutSeconds": 600}), ns)
    kube.create(claim("none", "pool"), ns)
    want = {"own": {"idleTimeoutSeconds": 1200, "idlePolicy": "Suspend"},
            "timeout-only": {"idleTimeoutSeconds": 600}, "none": tpl_pair}
    for name, pair in want.items():
        sb = bound_sandbox(kube, wait_claim_ready(kube, name, ns), ns)
        assert (sb["metadata"]["name"], labels(sb)[L_LAUNCH]) == (name, "cold")
        assert idle_of(sb["spec"]) == pair, name
        assert LAST_ACTIVITY not in annotations(sb), name


def test_recreate_pool_replaces_members_when_only_the_idle_fields_change(kube, ns):
    """docs/api.md#staleness-and-update-strategies: the idle fields are part of
    what a template stamps, so changing only them makes Recreate replace
    the members, which then carry the new values."""
    ms = setup_pool(kube, ns, 2, tpl=template("tpl", idleTimeoutSeconds=3600), strategy="Recreate")
    old = {m["metadata"]["name"] for m in ms}
    kube.patch(TEMPLATE, "tpl", ns, {"spec": {"idleTimeoutSeconds": 7200, "idlePolicy": "Delete"}})
    fresh = wait_members(kube, ns, "pool", 2,
                         pred=lambda s: s["metadata"]["name"] not in old,
                         desc="both members replaced", timeout=120)
    for m in fresh:
        assert idle_of(m["spec"]) == {"idleTimeoutSeconds": 7200, "idlePolicy": "Delete"}
