"""Clients that stop: a download nobody reads and an upload whose body stops
arriving are cut after --stall-timeout (without it they held their
connection and slot for good), and /v1/health answers while file transfers
take as many connections as they may (before, 1024 of them left it waiting
in the listen backlog), or while big directories are being listed (before,
each listing held the loop).
"""
import os
import resource
import shutil
import socket
import tempfile
import threading
import time

import pytest
import requests

from sandboxd_util import Sandboxd

MB = 1024 * 1024
BIG = 64 * MB


@pytest.fixture(scope="module")
def sbx(tmp_path_factory):
    base = tmp_path_factory.mktemp("stalls")
    s = Sandboxd(base / "root", base, args=["--stall-timeout=500ms"])
    with open(os.path.join(s.root, "big"), "wb") as f:
        f.truncate(BIG)  # sparse: reads cost no disk
    yield s
    assert s.stop() == 0, s.text()


def connect(port, rcvbuf=None):
    c = socket.socket()
    if rcvbuf:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: the window
    c.settimeout(5)
    c.connect(("127.0.0.1", port))
    return c


def read_to_end(c):
    """Bytes read until the server closes (EOF or reset); None if it never does."""
    n = 0
    try:
        while True:
            b = c.recv(1 << 20)
            if not b:
                return n
            n += len(b)
    except ConnectionResetError:
        return n
    except socket.timeout:
        return None


@pytest.mark.parametrize("api,path", [("rest", "/v1/files/big"), ("runtime", "/download/big")])
def test_download_nobody_reads_is_cut(sbx, api, path):
    c = connect(sbx.rest_port if api == "rest" else sbx.runtime_port, rcvbuf=4096)
    try:
        c.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        time.sleep(2)  # reads nothing for four stall timeouts
        got = read_to_end(c)
        assert got is not None and got < BIG, f"read {got} of {BIG} bytes: never cut"
    finally:
        c.close()
    assert "transfer without progress" in sbx.text()
    # a client that reads gets it all
    r = requests.get(sbx.rest + "/v1/files/big")
    assert r.status_code == 200 and len(r.content) == BIG


def test_upload_that_stops_is_cut(sbx):
    c = connect(sbx.rest_port)
    try:
        c.sendall(b"PUT /v1/files/up.bin HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" +
                  b"x" * 1000)
        c.settimeout(10)
        t0 = time.monotonic()
        got = read_to_end(c)
        assert got is not None, "a body that stopped arriving was waited for"
        assert time.monotonic() - t0 < 8
    finally:
        c.close()
    deadline = time.time() + 5
    while any(n.startswith(".sandboxd-tmp-") for n in os.listdir(sbx.root)) and \
            time.time() < deadline:
        time.sleep(0.05)
    assert not [n for n in os.listdir(sbx.root) if n.startswith(".sandboxd-tmp-")]
    assert not os.path.exists(os.path.join(sbx.root, "up.bin"))


def test_health_answers_while_transfers_saturate(tmp_path):
    """1100 uploads whose bodies never come (the default stall timeout,
    60 s, does not cut them during the test): 1024 hold a transfer slot,
    the others are refused with 429, and /v1/health still answers."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 1300
    if hard != resource.RLIM_INFINITY and hard < want:
        pytest.skip(f"hard RLIMIT_NOFILE {hard} is too low")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    s = Sandboxd(tmp_path / "root", tmp_path)
    conns = []
    try:
        for i in range(1100):
            c = connect(s.rest_port)
            c.sendall(f"PUT /v1/files/u{i} HTTP/1.1\r\nHost: x\r\n"
                      f"Content-Length: 1048576\r\n\r\n".encode())
            conns.append(c)
        r = requests.get(s.rest + "/v1/health", timeout=5)
        assert r.status_code == 200 and r.json()["status"] == "ok"
        last = conns[-1].recv(4096)
        assert last.startswith(b"HTTP/1.1 429 "), last[:200]
        assert b"RESOURCE_EXHAUSTED" in last and b"too many transfers" in last
        # the python-runtime side shares the slots
        r = requests.post(s.runtime + "/upload", files={"file": ("x.txt", b"x")}, timeout=5)
        assert r.status_code == 429 and "too many transfers" in r.json()["message"]
    finally:
        for c in conns:
            c.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert s.stop() == 0, s.text()


@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="needs /dev/shm (tmpfs) for 60,000 files")
def test_health_answers_while_big_directories_are_listed():
    """Eight listings of a 60,000-entry directory at once, on both APIs:
    /v1/health answers before the first of them (off the loop, they run on
    worker threads; before, the loop was held a listing at a time)."""
    base = tempfile.mkdtemp(prefix="sbxd-list-", dir="/dev/shm")
    try:
        root = os.path.join(base, "root")
        os.makedirs(os.path.join(root, "many"))
        fd = os.open(os.path.join(root, "many"), os.O_RDONLY | os.O_DIRECTORY)
        for i in range(60000):
            os.close(os.open(f"f{i:05d}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
        os.close(fd)
        s = Sandboxd(root, base)
        try:
            done = []
            lock = threading.Lock()

            def lister(url, check):
                r = requests.get(url, timeout=60)
                check(r)
                with lock:
                    done.append(("list", time.monotonic()))

            def rest(r):
                assert r.status_code == 200 and len(r.json()["entries"]) == 60000

            def runtime(r):
                assert r.status_code == 200 and len(r.json()) == 60000

            ts = [threading.Thread(target=lister, args=(s.rest + "/v1/files/many", rest))
                  for _ in range(4)]
            ts += [threading.Thread(target=lister, args=(s.runtime + "/list/many", runtime))
                   for _ in range(4)]
            for t in ts:
                t.start()
            time.sleep(0.05)  # the listings are in
            r = requests.get(s.rest + "/v1/health", timeout=30)
            health_at = time.monotonic()
            assert r.status_code == 200
            for t in ts:
                t.join(60)
            assert len(done) == 8
            first = min(at for _, at in done)
            assert health_at < first, "/v1/health waited for a listing"
        finally:
            assert s.stop() == 0, s.text()
    finally:
        shutil.rmtree(base, ignore_errors=True)
