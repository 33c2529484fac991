"""The controller's upstream command line (docs/upstream.md#controller-flags, #startup-validation, #cache-scoping) and
the agent_sandboxes gauge (docs/api.md#metrics, docs/upstream.md#controller-metrics-and-probes).

Flag validation runs before the controller talks to the cluster, so those
tests start the binary with a kubeconfig that does not exist: a flag that
passes validation then fails on the configuration instead (exit 1 too, but
with another message). --cache-label-selectors needs a controller that
reconciles alone: it runs under `exclusive_controller`.
"""
import datetime
import json
import re
import subprocess
import urllib.request

import pytest

from conftest import condition, controller_binary, wait_for
from test_sandbox import IMAGE, name_hash, sandbox, wait_ready

NO_CONFIG = ["--kubeconfig", "/nonexistent/kubeconfig"]

# Every flag of docs/upstream.md#controller-flags (the zap row lists five flags).
A2_FLAGS = [
    "--version", "--metrics-bind-address", "--health-probe-bind-address", "--leader-elect",
    "--leader-election-namespace", "--extensions", "--cluster-domain", "--enable-tracing",
    "--enable-pprof", "--enable-pprof-debug", "--pprof-block-profile-rate",
    "--pprof-mutex-profile-fraction", "--kube-api-qps", "--kube-api-burst", "--api-connections",
    "--separate-watch-connection", "--sandbox-concurrent-workers",
    "--sandbox-claim-concurrent-workers", "--sandbox-warm-pool-concurrent-workers",
    "--sandbox-template-concurrent-workers", "--sandbox-warm-pool-max-batch-size",
    "--sandbox-warm-pool-replenish-delay", "--sandbox-warm-pool-max-refill-rate",
    "--sandbox-warm-pool-readiness-grace-period",
    "--sandbox-warm-pool-unschedulable-recheck-interval", "--enable-warm-pool-eviction",
    "--cache-label-selectors", "--disable-claim-events",
    "--disable-claim-observability-annotations", "--sandbox-write-behind-window",
    "--webhook-port", "--webhook-cert-dir", "--webhook-cert-name", "--webhook-key-name",
    "--webhook-service-name", "--webhook-namespace", "--manage-webhook-certs", "--enable-webhook",
    "--zap-devel", "--zap-encoder", "--zap-log-level", "--zap-stacktrace-level",
    "--zap-time-encoding", "--kubeconfig",
]

# Defaults of docs/upstream.md#controller-flags that --help must show, flag -> the default as written there.
A2_DEFAULTS = {
    "--sandbox-claim-concurrent-workers": "50", "--sandbox-warm-pool-concurrent-workers": "1",
    "--sandbox-template-concurrent-workers": "1", "--sandbox-warm-pool-max-batch-size": "300",
    "--sandbox-warm-pool-replenish-delay": "0", "--sandbox-warm-pool-max-refill-rate": "0",
    "--sandbox-warm-pool-readiness-grace-period": "5m",
    "--sandbox-warm-pool-unschedulable-recheck-interval": "1m",
    "--enable-warm-pool-eviction": "true", "--cache-label-selectors": "false",
    "--extensions": "false", "--disable-claim-events": "false",
    "--disable-claim-observability-annotations": "false", "--enable-tracing": "false",
    "--enable-pprof": "false", "--enable-pprof-debug": "false",
    "--pprof-block-profile-rate": "1000000", "--pprof-mutex-profile-fraction": "10",
}


def run(*args, timeout=30):
    return subprocess.run([controller_binary(), *args], capture_output=True, text=True,
                          timeout=timeout)


def test_help_lists_every_upstream_flag_with_its_default():
    p = run("--help")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    missing = [f for f in A2_FLAGS if not any(re.search(rf"(^|\s){re.escape(f)}(\[|=|\s|$)", ln)
                                              for ln in lines)]
    assert not missing, f"--help does not document {missing}"
    for flag, default in A2_DEFAULTS.items():
        line = next(ln for ln in lines if re.search(rf"\s{re.escape(flag)}(\[|\s)", ln))
        assert f"(default {default})" in line, line


# (flag, the part of the message that must name it and say why); docs/upstream.md#startup-validation.
INVALID = [
    ("--sandbox-concurrent-workers=0", '"0" for flag --sandbox-concurrent-workers'),
    ("--sandbox-claim-concurrent-workers=0", '"0" for flag --sandbox-claim-concurrent-workers'),
    ("--sandbox-warm-pool-concurrent-workers=-1", '"-1" for flag --sandbox-warm-pool-concurrent-workers'),
    ("--sandbox-warm-pool-max-batch-size=0", '"0" for flag --sandbox-warm-pool-max-batch-size'),
    ("--sandbox-warm-pool-readiness-grace-period=0s",
     '"0s" for flag --sandbox-warm-pool-readiness-grace-period: must be a positive duration'),
    ("--sandbox-warm-pool-unschedulable-recheck-interval=-1m",
     '"-1m" for flag --sandbox-warm-pool-unschedulable-recheck-interval: must be a positive duration'),
    ("--sandbox-warm-pool-readiness-grace-period=5", '"5" for flag --sandbox-warm-pool-readiness-grace-period'),
    ("--sandbox-warm-pool-max-refill-rate=NaN", '"NaN" for flag --sandbox-warm-pool-max-refill-rate'),
    ("--sandbox-warm-pool-max-refill-rate=+Inf", '"+Inf" for flag --sandbox-warm-pool-max-refill-rate'),
    ("--sandbox-warm-pool-max-refill-rate=-0.5", '"-0.5" for flag --sandbox-warm-pool-max-refill-rate'),
    ("--sandbox-write-behind-window=-1s", '"-1s" for flag --sandbox-write-behind-window'),
    ("--kube-api-burst=0", '"0" for flag --kube-api-burst'),
    ("--api-connections=0", '"0" for flag --api-connections'),
    ("--cache-label-selectors=maybe", '"maybe" for flag --cache-label-selectors'),
    ("--zap-encoder=logfmt", '"logfmt" for flag --zap-encoder'),
    ("--zap-log-level=0", '"0" for flag --zap-log-level'),
    ("--zap-stacktrace-level=warn", '"warn" for flag --zap-stacktrace-level'),
    ("--zap-time-encoding=unix", '"unix" for flag --zap-time-encoding'),
]


# Values Go's flag package itself refuses (not of the flag's type: upstream
# exits 2); every other row is well formed and refused by upstream's startup
# checks after parsing (exit 1).
NOT_OF_THE_TYPE = {
    "--sandbox-warm-pool-readiness-grace-period=5", "--cache-label-selectors=maybe",
    "--zap-encoder=logfmt", "--zap-log-level=0", "--zap-stacktrace-level=warn",
    "--zap-time-encoding=unix",
}


@pytest.mark.parametrize("flag,message", INVALID, ids=[f for f, _ in INVALID])
def test_invalid_flag_exits_as_upstream_naming_it(flag, message):
    p = run(*NO_CONFIG, flag)
    assert p.returncode == (2 if flag in NOT_OF_THE_TYPE else 1), (p.returncode, p.stderr)
    assert message in p.stderr, p.stderr
    assert "cannot load cluster configuration" not in p.stderr  # refused before connecting


def test_extensions_flag_passes_validation():
    """--extensions (the extension controllers) is a valid flag: the process
    gets as far as loading the cluster configuration."""
    p = run(*NO_CONFIG, "--extensions")
    assert p.returncode == 1
    assert "invalid value" not in p.stderr, p.stderr
    assert "cannot load cluster configuration" in p.stderr, p.stderr


def test_valid_upstream_flags_pass_validation():
    """Every docs/upstream.md#controller-flags flag with a valid non-default value, as Helm would pass them:
    validation passes, and the process only fails on the missing kubeconfig."""
    p = run(*NO_CONFIG, "--extensions=false", "--sandbox-claim-concurrent-workers=10",
            "--sandbox-warm-pool-concurrent-workers=2", "--sandbox-template-concurrent-workers=0",
            "--sandbox-warm-pool-max-batch-size=50", "--sandbox-warm-pool-replenish-delay=1.5s",
            "--sandbox-warm-pool-max-refill-rate=2.5", "--sandbox-warm-pool-readiness-grace-period=10m",
            "--sandbox-warm-pool-unschedulable-recheck-interval=30s",
            "--enable-warm-pool-eviction=false", "--disable-claim-events",
            "--disable-claim-observability-annotations=true", "--cache-label-selectors=false",
            "--pprof-block-profile-rate=-1", "--pprof-mutex-profile-fraction=5",
            "--zap-devel=false", "--zap-encoder=console", "--zap-log-level=info",
            "--zap-stacktrace-level=error", "--zap-time-encoding=iso8601")
    assert p.returncode == 1
    assert "invalid value" not in p.stderr, p.stderr
    assert "cannot load cluster configuration" in p.stderr, p.stderr
    assert '"level":"warn"' not in p.stderr and "level=warn" not in p.stderr, p.stderr


def json_lines(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines and all(ln.startswith("{") for ln in lines), lines
    return [json.loads(ln) for ln in lines]


def test_warnings_for_questionable_and_unsupported_flags():
    p = run(*NO_CONFIG, "--enable-tracing", "--enable-pprof-debug", "--kube-api-qps=20",
            "--sandbox-concurrent-workers=990")
    assert p.returncode == 1 and "cannot load cluster configuration" in p.stderr, p.stderr
    warns = [r for r in json_lines(p.stderr) if r["level"] == "warn"]
    assert len(warns) == 4, warns
    assert all(r["logger"] == "setup" for r in warns), warns
    by_flag = {r["flag"]: r["msg"] for r in warns}
    assert "1042" in by_flag["--sandbox-concurrent-workers"], warns
    assert "--kube-api-burst" in by_flag, warns
    assert "not supported" in by_flag["--enable-tracing"], warns
    assert "pprof" in by_flag["--enable-pprof-debug"], warns


def test_default_log_is_upstreams_json_shape():
    """As upstream's controller (controller-runtime's production zap): one
    JSON object a line, keys level, ts (RFC 3339), logger, msg, then the
    fields."""
    p = run(*NO_CONFIG, "-sandbox-concurrent-workers=990", "-enable-tracing")
    assert p.returncode == 1, p.stderr
    records = json_lines(p.stderr)
    for r in records:
        assert list(r)[:2] == ["level", "ts"], r
        assert r["level"] in ("debug", "info", "warn", "error"), r
        assert datetime.datetime.fromisoformat(r["ts"].replace("Z", "+00:00")).tzinfo, r
        keys = [k for k in r if k != "logger"]
        assert keys[2] == "msg", r
    err = next(r for r in records if r["level"] == "error")
    assert list(err)[:4] == ["level", "ts", "logger", "msg"], err
    assert err["logger"] == "setup" and err["msg"] == "cannot load cluster configuration", err
    assert "/nonexistent/kubeconfig" in err["error"], err


def test_text_format_by_flag():
    for flags in (["--log-format=text"], ["-zap-encoder", "console"], ["-zap-devel"]):
        p = run(*NO_CONFIG, *flags)
        assert p.returncode == 1, p.stderr
        line = next(ln for ln in p.stderr.splitlines() if "level=error" in ln)
        assert re.match(r'ts=\S+Z level=error logger=setup msg="cannot load cluster configuration" '
                        r'error=', line), line


def test_zap_encoder_json_and_log_level_apply_to_the_log():
    p = run(*NO_CONFIG, "--zap-encoder=json", "--zap-log-level=error")
    assert p.returncode == 1
    assert all(r["level"] == "error" for r in json_lines(p.stderr))  # info lines filtered


# ---- Go's flag syntax, as upstream's manifests write it ----

def test_go_style_single_dash_flags_are_accepted():
    p = run("-kubeconfig", "/nonexistent/kubeconfig", "-leader-elect=false", "-webhook-port",
            "9444", "-enable-webhook=false", "-zap-log-level=info", "-extensions")
    assert p.returncode == 1
    assert "invalid value" not in p.stderr and "not defined" not in p.stderr, p.stderr
    assert "cannot load cluster configuration" in p.stderr, p.stderr


def test_go_style_version_and_help():
    v = run("-version")
    assert v.returncode == 0 and v.stdout.startswith("agent-sandbox-controller "), v
    h = run("-h")
    assert h.returncode == 0 and "-leader-elect" in h.stdout, h


@pytest.mark.parametrize("args,message", [
    (["-leader-elect=false", "-nope"], "flag provided but not defined: -nope"),
    (["--nope=1"], "flag provided but not defined: --nope"),
    (["-leader-elect=maybe"], 'invalid value "maybe" for flag --leader-elect'),
    (["-webhook-port"], "flag needs an argument: --webhook-port"),
])
def test_bad_flag_message_names_the_flag_not_the_program(args, message):
    p = run(*NO_CONFIG, *args)
    assert p.returncode == 2, p  # Go's flag package: exit 2
    first = p.stderr.splitlines()[0]
    assert first == "agent-sandbox-controller: " + message or first.startswith(
        "agent-sandbox-controller: " + message + ":"), p.stderr
    assert controller_binary() not in p.stderr, p.stderr


# ---- --cache-label-selectors (docs/upstream.md#cache-scoping) ----

def plain_pod(name, labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "main", "image": IMAGE}]}}


def test_cache_label_selectors_hide_unlabelled_adoptable_pods(kube, ns, exclusive_controller):
    """With --cache-label-selectors an unowned adoptable Pod named like the
    Sandbox but without the tracking label is invisible: not adopted, the
    create of the Sandbox's Pod fails AlreadyExists. With the tracking label
    it is adopted."""
    c = exclusive_controller(["--cache-label-selectors"], name="cache-label-selectors")
    c.wait_leading()
    hidden, visible = "scoped-hidden", "scoped-visible"
    kube.create(plain_pod(hidden, {"agents.x-k8s.io/adoptable": "true"}), ns)
    kube.create(plain_pod(visible, {"agents.x-k8s.io/adoptable": "true",
                                    "agents.x-k8s.io/sandbox-name-hash": name_hash(visible)}), ns)
    before = kube.get("pod", hidden, ns)
    kube.apply(sandbox(hidden), ns)
    kube.apply(sandbox(visible), ns)

    sb = wait_ready(kube, visible, ns)
    pod = kube.get("pod", visible, ns)
    assert [(r["kind"], r["name"], r["uid"]) for r in pod["metadata"]["ownerReferences"]] == \
        [("Sandbox", visible, sb["metadata"]["uid"])]

    def refused():
        s = kube.get("sandbox", hidden, ns)
        c_ = condition(s, "Ready")
        return s if c_ and c_["reason"] == "ReconcilerError" else None
    sb = wait_for(refused, timeout=60, desc="the hidden pod's Sandbox to report ReconcilerError")
    msg = condition(sb, "Ready")["message"]
    assert "already exists" in msg and "--cache-label-selectors" in msg, msg
    after = kube.get("pod", hidden, ns)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert "ownerReferences" not in after["metadata"]
    assert after["metadata"]["labels"] == {"agents.x-k8s.io/adoptable": "true"}
    assert c.proc.poll() is None


# ---- agent_sandboxes (docs/api.md#metrics) ----

def gauge_lines(url, ns):
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sorted(ln for ln in text.splitlines()
                  if ln.startswith("agent_sandboxes{") and f'namespace="{ns}"' in ln)


def series(ns, ready="false", expired="false", launch="cold", template="unknown",
           owner="None", created="unknown", n=1):
    return (f'agent_sandboxes{{created_by="{created}",expired="{expired}",launch_type="{launch}",'
            f'namespace="{ns}",owned_by="{owner}",ready_condition="{ready}",'
            f'sandbox_template="{template}"}} {n}')


def test_agent_sandboxes_gauge(kube, controller, ns):
    past = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)
            ).strftime("%Y-%m-%dT%H:%M:%SZ")
    kube.apply(sandbox("ready-1"), ns)
    kube.apply(sandbox("ready-2"), ns)
    kube.apply(sandbox("suspended", operatingMode="Suspended"), ns)
    kube.apply(sandbox("expired", shutdownTime=past, shutdownPolicy="Retain"), ns)
    labelled = sandbox("labelled")
    labelled["metadata"]["labels"] = {"agents.x-k8s.io/launch-type": "warm",
                                      "agents.x-k8s.io/created-by": "python-client"}
    labelled["metadata"]["annotations"] = {"agents.x-k8s.io/sandbox-template-ref": "python-runtime"}
    kube.apply(labelled, ns)

    want = sorted([
        series(ns, ready="true", n=2),
        series(ns),                                   # suspended: Ready=False
        series(ns, expired="true"),                   # Ready=False/SandboxExpired
        series(ns, ready="true", launch="warm", template="python-runtime", created="python-client"),
    ])
    got = []

    def settled():
        got[:] = gauge_lines(controller["metrics_url"], ns)
        return got == want
    try:
        wait_for(settled, timeout=60, desc="agent_sandboxes to count the five Sandboxes")
    except AssertionError:
        raise AssertionError("agent_sandboxes lines:\n" + "\n".join(got) +
                             "\nwanted:\n" + "\n".join(want)) from None
    with urllib.request.urlopen(controller["metrics_url"] + "/metrics", timeout=10) as r:
        assert "# TYPE agent_sandboxes gauge\n" in r.read().decode()

    # deleting Sandboxes is reflected at the next scrape
    kube.delete("sandbox", "ready-1", ns, wait=True)
    kube.delete("sandbox", "expired", ns, wait=True)
    want = sorted([series(ns, ready="true"), series(ns),
                   series(ns, ready="true", launch="warm", template="python-runtime",
                          created="python-client")])
    wait_for(settled, timeout=60, desc="agent_sandboxes after two deletions")
