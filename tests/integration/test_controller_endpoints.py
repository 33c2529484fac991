"""The controller's metrics and probe endpoints (docs/upstream.md#controller-flags and #controller-metrics-and-probes,
docs/api.md#metrics, docs/controller.md#metrics), scraped over HTTP from the controller the
`controller` fixture runs on free loopback ports.
"""
import os
import re
import time
import urllib.error
import urllib.request

from conftest import ROOT, condition, wait_for
from promtext import check_process_metrics, families, samples

IMAGE = "registry.k8s.io/pause:3.10"
LEASE = "a3317529.agent-sandbox.x-k8s.io"
# before any test runs, so before the session controller starts
IMPORTED = time.time()


def get(url):
    """GET url; returns (status, headers, body text) for any status."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


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


def test_process_leader_and_reconcile_counter_families(controller):
    """What users alert on, as the Go binary exposes it: process_*, the
    leader gauge (the fixture runs with leader election and waited until it
    leads), controller-runtime's panic/timeout/terminal-error counters (0:
    docs/controller.md#metrics says why) and the webhook's panic counters."""
    body, s = scrape(controller)
    check_process_metrics(body, IMPORTED, pid=controller["proc"].pid)
    fams = families(body)
    assert fams["leader_election_master_status"] == (
        "gauge", "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
        "backup, 1 indicates master. 'name' is the string used to identify the lease. Please make "
        "sure to group by name.")
    assert s[f'leader_election_master_status{{name="{LEASE}"}}'] == 1
    for family, help_text in (
            ("controller_runtime_reconcile_panics_total", "Total number of reconciliation panics per controller"),
            ("controller_runtime_reconcile_timeouts_total", "Total number of reconciliation timeouts per controller"),
            ("controller_runtime_terminal_reconcile_errors_total",
             "Total number of terminal reconciliation errors per controller")):
        assert fams[family] == ("counter", help_text)
        assert s[f'{family}{{controller="sandbox"}}'] == 0
    assert fams["controller_runtime_webhook_panics_total"] == ("counter", "Total number of webhook panics")
    assert fams["controller_runtime_conversion_webhook_panics_total"] == (
        "counter", "Total number of conversion webhook panics")
    assert s["controller_runtime_webhook_panics_total"] == 0
    assert s["controller_runtime_conversion_webhook_panics_total"] == 0
    # a counter never goes back
    _, later = scrape(controller)
    assert later["process_cpu_seconds_total"] >= s["process_cpu_seconds_total"]


def test_webhook_metrics_count_a_conversion_by_the_api_server(deployed, controller, ns):
    """A v1alpha1 read of a Sandbox stored as v1beta1 makes the API server
    post a ConversionReview to the controller: counted as controller-runtime
    counts it, webhook="/convert"."""
    hook = 'webhook="/convert"'
    ok = f'controller_runtime_webhook_requests_total{{code="200",{hook}}}'
    count = f"controller_runtime_webhook_latency_seconds_count{{{hook}}}"
    body, before = scrape(controller)
    # from the start, as controller-runtime: 200 and 500 at 0 or more, nothing in flight
    assert f'controller_runtime_webhook_requests_total{{code="500",{hook}}}' in before
    assert ok in before
    deployed.apply({"apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
                    "metadata": {"name": "webhook-metrics"},
                    "spec": {"podTemplate": {"spec": {"containers": [
                        {"name": "main", "image": IMAGE}]}}}}, ns=ns)
    alpha = deployed.get("sandboxes.v1alpha1.agents.x-k8s.io", "webhook-metrics", ns)
    assert alpha["apiVersion"] == "agents.x-k8s.io/v1alpha1"
    body, after = scrape(controller)
    assert after[ok] > before[ok]
    assert after[count] > before.get(count, 0)
    assert after[f"controller_runtime_webhook_requests_in_flight{{{hook}}}"] == 0
    fams = families(body)
    assert fams["controller_runtime_webhook_requests_total"] == (
        "counter", "Total number of admission requests by HTTP status code.")
    assert fams["controller_runtime_webhook_requests_in_flight"] == (
        "gauge", "Current number of admission requests being served.")
    assert fams["controller_runtime_webhook_latency_seconds"] == (
        "histogram", "Histogram of the latency of processing admission requests")
    # client_golang's ExponentialBuckets(10e-9, 10, 12), written as Go writes them
    les = re.findall(r'^controller_runtime_webhook_latency_seconds_bucket\{webhook="/convert",le="([^"]+)"\}',
                     body, re.M)
    assert les == ["1e-08", "1e-07", "1e-06", "9.999999999999999e-06", "9.999999999999999e-05",
                   "0.001", "0.01", "0.1", "1", "10", "100", "1000", "+Inf"]
    assert after[f'controller_runtime_webhook_latency_seconds_bucket{{{hook},le="+Inf"}}'] == after[count]
