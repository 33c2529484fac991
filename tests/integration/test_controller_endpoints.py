"""The controller's metrics and probe endpoints (docs/upstream.md#controller-flags and #controller-metrics-and-probes,
docs/api.md#metrics), scraped over HTTP from the controller the
`controller` fixture runs on free loopback ports.
"""
import os
import re
import urllib.error
import urllib.request

from conftest import ROOT, condition, wait_for

IMAGE = "registry.k8s.io/pause:3.10"


def get(url):
    """GET url; returns (status, headers, body text) for any status."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def samples(text):
    """Exposition text -> {'name{labels}': value} (comments skipped)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        out[series] = float(value)
    return out


def scrape(controller):
    status, headers, body = get(controller["metrics_url"] + "/metrics")
    assert status == 200, body
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return body, samples(body)


def test_health_and_readiness_probes_answer_ok(controller):
    status, _, body = get(controller["probe_url"] + "/healthz")
    assert (status, body) == (200, "ok")
    # the fixture waited for the caches: the informers-synced check passes
    status, _, body = get(controller["probe_url"] + "/readyz")
    assert (status, body) == (200, "ok")
    status, _, body = get(controller["probe_url"] + "/readyz?verbose")
    assert status == 200
    assert body == "[+]ping ok\n[+]informers-synced ok\nreadyz check passed\n"
    # each endpoint lives on its own address, as upstream's
    status, _, _ = get(controller["metrics_url"] + "/healthz")
    assert status == 404
    status, _, _ = get(controller["probe_url"] + "/metrics")
    assert status == 404


def test_build_info(controller):
    body, _ = scrape(controller)
    assert "# TYPE agent_sandbox_build_info gauge\n" in body
    m = re.search(r'^agent_sandbox_build_info\{build_date="([^"]*)",compiler="([^"]+)",'
                  r'git_commit="([^"]*)",git_version="([^"]+)",go_version="",'
                  r'platform="linux/[a-z0-9]+"\} 1$', body, re.M)
    assert m, body[:2000]
    assert m.group(4) and m.group(4) != "unknown"
    # built from a git checkout: stamped with a commit and its date
    if os.path.isdir(os.path.join(ROOT, ".git")):
        assert re.fullmatch(r"[0-9a-f]{40}", m.group(3)), m.group(0)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[-+Z].*", m.group(1)), m.group(0)


def test_reconcile_and_workqueue_metrics_after_a_sandbox(deployed, controller, ns):
    deployed.apply({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                    "metadata": {"name": "metrics-sb"},
                    "spec": {"podTemplate": {"spec": {"containers": [
                        {"name": "main", "image": IMAGE}]}}}}, ns=ns)
    wait_for(lambda: condition(deployed.get("sandbox", "metrics-sb", ns), "Ready"),
             timeout=60, desc="the Sandbox to get a Ready condition (reconciled)")

    ok = 'controller_runtime_reconcile_total{controller="sandbox",result="success"}'
    wait_for(lambda: scrape(controller)[1].get(ok, 0) >= 1, timeout=30,
             desc="a successful reconcile counted")
    body, s = scrape(controller)
    for result in ("success", "error", "requeue", "requeue_after"):
        assert f'controller_runtime_reconcile_total{{controller="sandbox",result="{result}"}}' in s
    assert 'controller_runtime_reconcile_errors_total{controller="sandbox"}' in s
    assert s['controller_runtime_reconcile_time_seconds_count{controller="sandbox"}'] >= 1
    assert s['controller_runtime_reconcile_time_seconds_bucket{controller="sandbox",le="+Inf"}'] == \
        s['controller_runtime_reconcile_time_seconds_count{controller="sandbox"}']
    # the fixture runs --sandbox-concurrent-workers 8
    assert s['controller_runtime_max_concurrent_reconciles{controller="sandbox"}'] == 8
    assert 0 <= s['controller_runtime_active_workers{controller="sandbox"}'] <= 8

    q = '{controller="sandbox",name="sandbox"}'
    assert s["workqueue_adds_total" + q] >= 1
    assert s["workqueue_queue_duration_seconds_count" + q] >= 1
    assert s["workqueue_work_duration_seconds_count" + q] >= 1
    assert "workqueue_retries_total" + q in s
    assert 'workqueue_depth{controller="sandbox",name="sandbox",priority=""}' in s
    assert s["workqueue_unfinished_work_seconds" + q] >= 0
    assert s["workqueue_longest_running_processor_seconds" + q] >= 0
    # the REST client: list/watch GETs and the Pod the reconcile created
    def rest(code, method):
        return sum(v for k, v in s.items() if re.fullmatch(
            rf'rest_client_requests_total\{{code="{code}",host="[^"]+",method="{method}"\}}', k))
    assert rest("200", "GET") >= 3  # a list per informer at least
    assert rest("201", "POST") >= 1
    assert any(re.fullmatch(r'rest_client_request_duration_seconds_count\{host="[^"]+",verb="POST"\}', k)
               for k in s)
    for family, kind in (("controller_runtime_reconcile_total", "counter"),
                         ("rest_client_requests_total", "counter"),
                         ("rest_client_request_duration_seconds", "histogram"),
                         ("controller_runtime_reconcile_time_seconds", "histogram"),
                         ("workqueue_depth", "gauge"),
                         ("workqueue_queue_duration_seconds", "histogram")):
        assert f"# TYPE {family} {kind}\n" in body
