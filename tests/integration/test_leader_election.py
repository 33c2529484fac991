"""Leader election of agent-sandbox-controller on a real API server: the
controller started by the `controller` fixture holds upstream's Lease, and a
second replica waits without reconciling until the first one is gone."""
import time

from conftest import ControllerProcess, wait_for

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
    finally:
        rc = replica.stop()
    assert rc == 0, replica.text()
    replica.assert_clean_log()
