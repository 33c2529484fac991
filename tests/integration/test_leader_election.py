"""Leader election of agent-sandbox-controller on a real API server: the
controller started by the `controller` fixture holds upstream's Lease, and a
second replica waits without reconciling until the first one is gone."""
import os
import signal
import subprocess
import time

from conftest import ROOT, wait_for

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
    it releases cleanly; here we check the follower side.)"""
    build = os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build"))
    binary = os.path.join(build, "cmd", "controller", "agent-sandbox-controller")
    logpath = tmp_path / "replica.log"
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    with open(logpath, "w") as log:
        proc = subprocess.Popen([binary, "--kubeconfig", controller["kubeconfig"],
                                 "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
                                 "--leader-election-namespace", "agent-sandbox-system"],
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(lambda: "waiting for leadership" in logpath.read_text() or proc.poll() is not None,
                     timeout=60, desc="the replica's caches")
            time.sleep(3)  # more than one retry period
            text = logpath.read_text()
            assert proc.poll() is None, text
            assert "became leader" not in text, text
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    assert proc.returncode == 0, logpath.read_text()
