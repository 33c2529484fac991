"""Helpers for the sandboxd integration tests: start the built binary on a
temporary root and free loopback ports, talk to it, stop it.

No cluster is needed: sandboxd is a standalone process.

Environment:
  AGENT_SANDBOX_BUILD_DIR  meson build dir holding cmd/sandboxd/sandboxd (default: build)
"""
import base64
import http.client
import json
import os
import signal
import socket
import subprocess
import time

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def binary():
    build = os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build"))
    return os.path.join(build, "cmd", "sandboxd", "sandboxd")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def is_asan_build():
    out = subprocess.run(["ldd", binary()], capture_output=True, text=True).stdout
    return "libasan" in out


class Sandboxd:
    """One sandboxd process on `root` with its own ports."""

    def __init__(self, root, logdir, args=(), env=None, user=None, preexec_fn=None):
        self.root = str(root)
        self.rest_port = free_port()
        self.runtime_port = free_port()
        self.log_path = os.path.join(str(logdir), f"sandboxd-{self.rest_port}.log")
        e = dict(os.environ)
        e.pop("SANDBOX_BASE_DIR", None)
        if is_asan_build():
            # a small quarantine, or ASan keeps every freed buffer of a
            # 100 MB transfer and the memory assertions measure ASan
            e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") +
                                 ":quarantine_size_mb=8:thread_local_quarantine_size_kb=64").lstrip(":")
        e.update(env or {})
        cmd = [binary(), "--root-dir", self.root, "--rest-port", str(self.rest_port),
               "--runtime-port", str(self.runtime_port), "--log-level", "debug", *args]
        if user is not None:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=e,
                                     preexec_fn=preexec_fn)
        self.rest = f"http://127.0.0.1:{self.rest_port}"
        self.runtime = f"http://127.0.0.1:{self.runtime_port}"
        self.session = requests.Session()
        deadline = time.time() + 20
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"sandboxd exited {self.proc.returncode}: {self.text()}")
            try:
                if requests.get(self.rest + "/v1/health", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            if time.time() > deadline:
                raise AssertionError("sandboxd did not become healthy: " + self.text())
            time.sleep(0.05)

    @property
    def pid(self):
        return self.proc.pid

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def vmhwm_kb(self):
        """Peak resident set size of the daemon (kB), from /proc."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        raise AssertionError("no VmHWM")

    def reset_hwm(self):
        """Resets VmHWM to the current RSS (writing 5 to clear_refs)."""
        with open(f"/proc/{self.pid}/clear_refs", "w") as f:
            f.write("5")

    def stop(self, timeout=30):
        """SIGTERM; returns the exit code (0 expected: ASan leak checks included)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("sandboxd did not stop on SIGTERM: " + self.text())
        self.session.close()
        self.log.close()
        return self.proc.returncode

    # --- HTTP helpers

    def raw(self, method, target, port=None, body=None, headers=None):
        """A request with the exact target (no client-side normalisation)."""
        c = http.client.HTTPConnection("127.0.0.1", port or self.rest_port, timeout=30)
        try:
            c.putrequest(method, target, skip_accept_encoding=True)
            for k, v in (headers or {}).items():
                c.putheader(k, v)
            if body is not None:
                c.putheader("Content-Length", str(len(body)))
            c.endheaders(body)
            r = c.getresponse()
            return r.status, r.read(), dict(r.getheaders())
        finally:
            c.close()

    def start_process(self, req, **kw):
        """POST /v1/processes; returns the streamed response (caller iterates)."""
        return self.session.post(self.rest + "/v1/processes", json=req, stream=True, **kw)

    def control(self, pid, action, body):
        return self.session.post(f"{self.rest}/v1/processes/{pid}/{action}", json=body)


def events(resp):
    """Decoded NDJSON events of a process stream: yields dicts, with
    stdout/stderr already base64-decoded."""
    for line in resp.iter_lines():
        if not line:
            continue
        ev = json.loads(line)
        if not ev:
            continue  # the keepalive event
        for k in ("stdout", "stderr"):
            if k in ev:
                ev[k] = base64.b64decode(ev[k])
        yield ev


def run_stream(sbx, req, on_init=None):
    """Runs a process to its end; returns (stdout, stderr, exit event)."""
    r = sbx.start_process(req)
    assert r.status_code == 200, r.text
    out, err, exit_ev = b"", b"", None
    for ev in events(r):
        if "init" in ev and on_init:
            on_init(ev["init"]["processId"])
        out += ev.get("stdout", b"")
        err += ev.get("stderr", b"")
        if "exit" in ev:
            exit_ev = ev["exit"]
    return out, err, exit_ev


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False  # gone, also between the open and the read (ESRCH)


def wait_pid_file(path, timeout=10):
    """The PID a command wrote to `path` (a line), once written whole."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                text = f.read()
            if text.endswith("\n"):
                return int(text)
        except FileNotFoundError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def wait_dead(pid, timeout=10):
    deadline = time.time() + timeout
    while alive(pid) and time.time() < deadline:
        time.sleep(0.05)
    return not alive(pid)
