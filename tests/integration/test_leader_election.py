"""Leader election of agent-sandbox-controller on a real API server: the
controller started by the `controller` fixture holds upstream's Lease, and a
second replica waits without reconciling until the first one is gone."""
import time
import urllib.request

from conftest import ControllerProcess, wait_for
from promtext import samples

LEASE = "a3317529.agent-sandbox.x-k8s.io"


def test_controller_holds_the_upstream_lease(kube, controller):
    lease = wait_for(lambda: kube.get("lease", LEASE, "agent-sandbox-system"), timeout=30,
                     desc="the leader Lease")
    holder = lease["spec"].get("holderIdentity", "")
    assert holder, lease
    assert "became leader" in open(controller["log"]).read()


def test_second_replica_waits_and_takes_over_on_release(kube, controller, tmp_path):
    """Starts a second replica; it must not lead while the first holds the
    Lease. (The first is stopped only by the session teardown, which checks
    it releases cleanly; here we check the follower side.) The replica serves
    no webhook, so it leaves the CRD's conversion config pointing at the
    session controller."""
    replica = ControllerProcess(tmp_path, controller["kubeconfig"],
                                ["--enable-webhook=false"], name="replica")
    try:
        wait_for(lambda: "waiting for leadership" in replica.text() or replica.proc.poll() is not None,
                 timeout=60, desc="the replica's caches")
        time.sleep(3)  # more than one retry period
        text = replica.text()
        assert replica.proc.poll() is None, text
        assert "became leader" not in text, text
        # the follower says so on /metrics; the leader says 1
        gauge = f'leader_election_master_status{{name="{LEASE}"}}'
        follower = samples(urllib.request.urlopen(replica.metrics_url + "/metrics", timeout=10).read().decode())
        leader = samples(urllib.request.urlopen(controller["metrics_url"] + "/metrics", timeout=10).read().decode())
        assert (follower[gauge], leader[gauge]) == (0, 1)
        # without a webhook server: no request families (as upstream), panic counters still there
        assert not any(k.startswith("controller_runtime_webhook_requests_total") for k in follower)
        assert follower["controller_runtime_conversion_webhook_panics_total"] == 0
    finally:
        rc = replica.stop()
    assert rc == 0, replica.text()
    replica.assert_clean_log()
