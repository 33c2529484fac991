"""sandboxd as a container's first process (its image's ENTRYPOINT makes it
PID 1 of the pod's container): orphaned grandchildren of its commands are
reparented to it, so it must reap them, or every `cmd &` leaves a zombie
that holds a pid (and counts against --max-tasks) until the pod dies.

A child subreaper (prctl PR_SET_CHILD_SUBREAPER, kept across exec) gets
orphans exactly as PID 1 does, without a PID namespace: the tests start
sandboxd as one.
"""
import ctypes
import os
import resource
import time

import requests

from sandboxd_util import Sandboxd

PR_SET_CHILD_SUBREAPER = 36


def as_subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def children(pid):
    """(pid, state) of every process whose parent is `pid`."""
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid:
            out.append((int(p), fields[0]))
    return out


def zombies(pid):
    return [c for c, state in children(pid) if state == "Z"]


def test_orphans_are_reaped(tmp_path):
    s = Sandboxd(tmp_path / "root", tmp_path, preexec_fn=as_subreaper)
    try:
        # background children outlive their command on both APIs, then exit
        for _ in range(3):
            r = requests.post(s.rest + "/v1/execute",
                              json={"config": {"shell": "sleep 0.1 >/dev/null 2>&1 &"}})
            assert r.status_code == 200 and r.json()["exitCode"] == 0, r.text
        r = requests.post(s.runtime + "/execute",
                          json={"command": "sh -c 'sleep 0.1 >/dev/null 2>&1 &'"})
        assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
        # the sleeps end within 0.1 s; their zombies must go too
        deadline = time.time() + 5
        while children(s.pid) and time.time() < deadline:
            time.sleep(0.05)
        assert zombies(s.pid) == [], "orphans left as zombies of sandboxd"
        # the daemon's own children are still waited for by their requests
        r = requests.post(s.rest + "/v1/execute", json={"config": {"shell": "exit 3"}})
        assert r.json()["exitCode"] == 3
    finally:
        assert s.stop() == 0, s.text()


def test_fd_limit_raised_to_hard_limit(tmp_path):
    """Started with a low soft limit of descriptors (container runtimes may
    leave it at 1024; 256 here keeps the tree small), sandboxd raises it to
    the hard limit, as Go programs (upstream's sandboxd) do; a deep tree
    is created and removed on the way."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        import pytest
        pytest.skip(f"hard RLIMIT_NOFILE {hard} is too low to tell")

    def low_soft_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    s = Sandboxd(tmp_path / "root", tmp_path, preexec_fn=low_soft_limit)
    try:
        assert resource.prlimit(s.pid, resource.RLIMIT_NOFILE) == (hard, hard)
        deep = "/".join(["d"] * 300)
        r = requests.put(f"{s.rest}/v1/files/top/{deep}/f", data=b"x")
        assert r.status_code == 204, r.text
        r = requests.delete(f"{s.rest}/v1/files/top", params={"recursive": "true"})
        assert r.status_code == 204, r.text
        assert os.listdir(tmp_path / "root") == []
    finally:
        assert s.stop() == 0, s.text()
