"""sandboxd's processes over HTTP (docs/upstream.md#processservice, #process-semantics semantics):
the NDJSON event stream, launch errors, cwd and env, stdin streaming,
signals, a terminal session with resize, a timeout that kills a group
ignoring SIGTERM, 1 GB of output cut at the bound with flat memory, and a
fork bomb held by the process cap and the task limit.
"""
import base64
import http.client
import json
import os
import shutil
import signal
import tempfile
import threading
import time

import pytest
import requests

from sandboxd_util import Sandboxd, alive, events, run_stream, wait_dead, wait_pid_file

MB = 1024 * 1024


@pytest.fixture(scope="module")
def sbx(tmp_path_factory):
    base = tmp_path_factory.mktemp("procs")
    s = Sandboxd(base / "root", base, args=["--max-output-bytes=1Mi", "--kill-grace=300ms",
                                            "--stream-keepalive=200ms"],
                 env={"SANDBOX_EXEC_TIMEOUT_SECONDS": "1"})
    yield s
    assert s.stop() == 0, s.text()


def test_stream_events_in_order(sbx):
    r = sbx.start_process({"config": {"command": ["sh", "-c", "echo one; echo two >&2; exit 7"]}})
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "application/x-ndjson"
    evs = list(events(r))
    assert "init" in evs[0] and evs[0]["init"]["processId"] > 0
    assert evs[-1] == {"exit": {"exitCode": 7}}
    assert b"".join(e.get("stdout", b"") for e in evs) == b"one\n"
    assert b"".join(e.get("stderr", b"") for e in evs) == b"two\n"
    # ids are the daemon's own counter
    r2 = sbx.start_process({"config": {"command": ["true"]}})
    assert next(events(r2))["init"]["processId"] > evs[0]["init"]["processId"]
    r2.close()


def test_cwd_env_and_execute(sbx):
    os.makedirs(os.path.join(sbx.root, "work"), exist_ok=True)
    out, _, ex = run_stream(sbx, {"config": {"shell": "pwd; echo $GREETING", "cwd": "work",
                                             "envVars": {"GREETING": "hello"}}})
    assert out == (os.path.join(sbx.root, "work") + "\nhello\n").encode()
    assert ex["exitCode"] == 0
    r = sbx.session.post(sbx.rest + "/v1/execute",
                         json={"config": {"command": ["sh", "-c", "cat; echo x; echo y >&2"]}})
    assert r.status_code == 200
    j = r.json()
    assert j["exitCode"] == 0
    assert base64.b64decode(j["stdout"]) == b"x\n"  # stdin is empty for Execute
    assert base64.b64decode(j["stderr"]) == b"y\n"


def test_command_cannot_change_the_next_commands_keeper(sbx):
    """A command may change what its keeper's next commands inherit ($PPID
    runs as the same user): limits, nice, scheduling policy, CPU affinity,
    I/O priority, oom_score_adj. A keeper reused (--idle-keepers, default 8)
    is compared after each command with what it started with, and a changed
    one is not reused: the next commands start with the daemon's own."""
    def execute(script):
        r = sbx.session.post(sbx.rest + "/v1/execute",
                             json={"config": {"command": ["sh", "-c", script]}})
        assert r.status_code == 200, r.text
        j = r.json()
        return j["exitCode"], base64.b64decode(j["stdout"]).decode()

    probe = ("ulimit -n; nice; cat /proc/self/oom_score_adj; chrt -p $$ | cut -d: -f2; "
             "ionice; grep Cpus_allowed_list /proc/self/status")
    before = execute(probe)
    assert before[0] == 0
    changes = ["prlimit --pid $PPID --nofile=12:12",
               "renice -n 7 -p $PPID >/dev/null",
               "echo 500 > /proc/$PPID/oom_score_adj",
               "chrt -b -p 0 $PPID",
               "ionice -c 3 -p $PPID",
               "echo 0x7f > /proc/$PPID/coredump_filter",
               "taskset -p -c 0 $PPID >/dev/null"]
    probe += "; cat /proc/self/coredump_filter"
    if os.geteuid() == 0:  # another process's timer slack needs CAP_SYS_NICE
        changes.insert(0, "echo 12345 > /proc/$PPID/timerslack_ns")
        probe += "; cat /proc/self/timerslack_ns"
    before = execute(probe)
    if os.cpu_count() == 1:
        changes.pop()  # one CPU: an affinity cannot change
    for change in changes:
        code, _ = execute(change)
        assert code == 0, change
        for _ in range(2):
            assert execute(probe) == before, f"after {change!r}"


def test_idle_keepers_changed_by_another_process_are_not_used(tmp_path):
    """Idle keepers reniced and limited by another process of the user (a
    command running beside them could do it): each finds itself changed at
    its next job, exits before taking it, and the job goes to another
    keeper, so every command still starts with the daemon's own."""
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--idle-keepers=8"])
    try:
        def run(cmd):
            r = s.session.post(s.rest + "/v1/execute",
                               json={"config": {"command": ["sh", "-c", cmd]}})
            assert r.status_code == 200, r.text
            return base64.b64decode(r.json()["stdout"]).decode()
        before = run("nice; ulimit -n")
        threads = [threading.Thread(target=run, args=("sleep 0.3",)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.time() + 5
        while len(_idle_keepers(s.pid)) < 4 and time.time() < deadline:
            time.sleep(0.05)
        idle = _idle_keepers(s.pid)
        assert len(idle) >= 4, idle
        import resource
        for pid in idle:
            os.setpriority(os.PRIO_PROCESS, int(pid), 12)
            resource.prlimit(int(pid), resource.RLIMIT_NOFILE, (50, 50))
        for _ in range(6):
            assert run("nice; ulimit -n") == before
        assert not (idle & _idle_keepers(s.pid))  # the changed ones are gone
    finally:
        assert s.stop() == 0, s.text()


def test_command_that_kills_its_keeper_is_not_a_failed_start(sbx):
    """A command whose first act is to kill its keeper ($PPID) has run: it
    is answered as a command whose end is unknown (exit -1), never as a
    start that failed (429, which a client would retry, running it twice)."""
    marker = os.path.join(sbx.root, "killed-keeper-runs")
    runs = 30
    for _ in range(runs):
        r = sbx.session.post(sbx.rest + "/v1/execute", json={"config": {"command": [
            "sh", "-c", f"kill -9 $PPID; echo x >> {marker}"]}})
        assert r.status_code == 200, r.text
    deadline = time.time() + 5
    while time.time() < deadline:
        with open(marker) as f:
            if len(f.read().split()) == runs:
                break
        time.sleep(0.05)
    with open(marker) as f:
        assert len(f.read().split()) == runs


def test_dead_idle_keepers_are_replaced(tmp_path):
    """Idle keepers killed (a command can kill them: they run as the same
    user) are reaped and replaced: the next commands run, however many died."""
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--idle-keepers=8"])
    try:
        def run(cmd):
            return s.session.post(s.rest + "/v1/execute",
                                  json={"config": {"command": ["sh", "-c", cmd]}})
        # eight at once: eight keepers, idle after
        threads = [threading.Thread(target=run, args=("sleep 0.3",)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.time() + 5
        while len(_idle_keepers(s.pid)) < 8 and time.time() < deadline:
            time.sleep(0.05)
        idle = _idle_keepers(s.pid)
        assert len(idle) == 8, idle
        for pid in idle:
            os.kill(int(pid), signal.SIGKILL)
        for _ in range(4):
            r = run("echo alive")
            assert r.status_code == 200, r.text
            assert base64.b64decode(r.json()["stdout"]) == b"alive\n"
        assert not (idle & _idle_keepers(s.pid))
    finally:
        assert s.stop() == 0, s.text()


def test_keeper_forked_beside_a_big_answer_is_not_kept(tmp_path):
    """A keeper is a copy of the daemon: one forked while the daemon holds a
    big answer (20 MiB of output here) would keep those pages while idle,
    so it serves one command only. Keepers forked while the daemon is small
    are kept."""
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--idle-keepers=8", "--max-output-bytes=32Mi"])
    try:
        big = {}

        def hold():
            big["r"] = s.session.post(s.rest + "/v1/execute", json={"config": {
                "command": ["sh", "-c", f"head -c {20 * MB} /dev/zero; sleep 2"]}})
        t = threading.Thread(target=hold)
        t.start()
        time.sleep(1)  # its output is in the daemon by now; it sleeps
        r = requests.post(s.rest + "/v1/execute", json={"config": {"command": ["true"]}})
        assert r.status_code == 200 and r.json()["exitCode"] == 0
        time.sleep(0.3)
        # the second keeper (forked beside 20 MiB) exited; the first is busy
        assert _idle_keepers(s.pid) == set()
        t.join()
        assert big["r"].status_code == 200
        deadline = time.time() + 5
        while len(_idle_keepers(s.pid)) < 1 and time.time() < deadline:
            time.sleep(0.05)
        assert len(_idle_keepers(s.pid)) == 1  # the first, forked small, is kept
    finally:
        assert s.stop() == 0, s.text()


def test_launch_errors(sbx):
    r = sbx.start_process({"config": {"command": ["no-such-binary-y"]}})
    assert r.status_code == 404 and r.json()["code"] == "NOT_FOUND"
    assert "command or path not found" in r.json()["message"]
    r = sbx.start_process({"config": {"command": ["ls"], "cwd": "../.."}})
    assert r.status_code == 403 and r.json()["message"].startswith("cwd: ")
    # a missing cwd names the path that is missing, as the client wrote it
    r = sbx.start_process({"config": {"command": ["ls"], "cwd": "missing-dir/sub"}})
    assert r.status_code == 404 and r.json()["code"] == "NOT_FOUND"
    assert r.json()["message"] == ('command or path not found: cwd "missing-dir/sub": '
                                   'no such directory')
    with open(os.path.join(sbx.root, "plain-file"), "w"):
        pass
    r = sbx.session.post(sbx.rest + "/v1/execute",
                         json={"config": {"command": ["ls"], "cwd": "/plain-file"}})
    assert r.status_code == 404
    assert r.json()["message"] == 'command or path not found: cwd "/plain-file": not a directory'
    r = sbx.start_process({"config": {"command": []}})
    assert (r.status_code, r.json()) == (400, {"code": "INVALID_ARGUMENT",
                                               "message": "command is required"})
    r = sbx.session.post(sbx.rest + "/v1/processes", data=b"{not json")
    assert r.status_code == 400


def test_stdin_streaming_and_control(sbx):
    r = sbx.start_process({"config": {"command": ["wc", "-c"]}})
    it = events(r)
    pid = next(it)["init"]["processId"]
    # 10 MiB of raw bytes streamed into stdin, then EOF
    payload = (b"0123456789abcdef" * 65536) * 10

    def gen():
        for i in range(0, len(payload), MB):
            yield payload[i:i + MB]

    w = sbx.session.post(f"{sbx.rest}/v1/processes/{pid}/stdin?eof=true", data=gen(),
                         headers={"Content-Type": "application/octet-stream"})
    assert w.status_code == 200, w.text
    out = b"".join(e.get("stdout", b"") for e in it if "stdout" in e)
    assert out.strip() == str(len(payload)).encode()
    # JSON form; a second eof is an error (one-shot, as upstream)
    r = sbx.start_process({"config": {"command": ["cat"]}})
    it = events(r)
    pid = next(it)["init"]["processId"]
    assert sbx.control(pid, "stdin", {"input": base64.b64encode(b"ping\n").decode()}).status_code == 200
    assert next(it)["stdout"] == b"ping\n"
    assert sbx.control(pid, "stdin", {"eof": {}}).status_code == 200
    again = sbx.control(pid, "stdin", {"eof": {}})
    assert again.status_code in (404, 500)  # gone, or closed already
    assert list(it)[-1]["exit"]["exitCode"] == 0
    assert sbx.control(99999, "stdin", {"eof": {}}).status_code == 404
    assert sbx.control(pid, "signal", {"signal": "SIGNAL_SIGTERM"}).status_code == 404


def test_json_stdin_writes_wait_for_the_process(sbx):
    """JSON stdin writes to a process that does not read are queued up to a
    bound, then answered only as the process reads (before, every write was
    answered at once and the queue grew without end)."""
    r = sbx.start_process({"config": {"shell": "while [ ! -e stdin-go ]; do sleep 0.05; done; "
                                                "exec wc -c"}})
    it = events(r)
    pid = next(it)["init"]["processId"]
    chunk = base64.b64encode(b"z" * (512 * 1024)).decode()
    answered = []

    def writer():
        with requests.Session() as w:
            for _ in range(16):  # 8 MiB
                resp = w.post(f"{sbx.rest}/v1/processes/{pid}/stdin", json={"input": chunk},
                              timeout=30)
                answered.append(resp.status_code)

    t = threading.Thread(target=writer)
    t.start()
    time.sleep(1.5)
    # 1 MiB queued, what the pipe took, one write held: the others wait
    held_back = len(answered)
    try:
        assert held_back <= 4, f"{held_back} writes of 512 KiB answered to a process not reading"
        assert t.is_alive()
    finally:
        with open(os.path.join(sbx.root, "stdin-go"), "w"):
            pass
        t.join(30)
    assert answered == [200] * 16
    assert sbx.control(pid, "stdin", {"eof": {}}).status_code == 200
    out = b"".join(e.get("stdout", b"") for e in it if "stdout" in e)
    assert out.strip() == str(16 * 512 * 1024).encode()


def test_signal_and_resize_rules(sbx):
    r = sbx.start_process({"config": {"command": ["sleep", "30"]}})
    it = events(r)
    pid = next(it)["init"]["processId"]
    assert sbx.control(pid, "resize", {"cols": 10, "rows": 10}).json()["code"] == "FAILED_PRECONDITION"
    assert sbx.control(pid, "signal", {"signal": "SIGNAL_UNSPECIFIED"}).status_code == 400
    assert sbx.control(pid, "signal", {"signal": "SIGNAL_SIGTERM"}).status_code == 200
    assert list(it)[-1] == {"exit": {"exitCode": -1, "signal": 15}}


def test_tty_session_with_resize(sbx):
    r = sbx.start_process({"config": {"shell": "test -t 0 && echo is-a-tty; stty size; "
                                                "echo ready; read x; echo got=$x; stty size"},
                           "pty": {"cols": 80, "rows": 24}})
    it = events(r)
    pid = next(it)["init"]["processId"]
    out = b""
    for ev in it:
        out += ev.get("stdout", b"")
        if b"ready" in out:
            break
    assert sbx.control(pid, "resize", {"cols": 120, "rows": 40}).status_code == 200
    assert sbx.control(pid, "stdin", {"input": base64.b64encode(b"go\n").decode()}).status_code == 200
    for ev in it:
        out += ev.get("stdout", b"")
        assert "stderr" not in ev  # a terminal has one stream
        if "exit" in ev:
            assert ev["exit"]["exitCode"] == 0
    assert b"is-a-tty" in out and b"24 80" in out and b"got=go" in out and b"40 120" in out


def test_timeout_kills_group_ignoring_sigterm(sbx):
    out, _, ex = run_stream(sbx, {"config": {"shell": "trap '' TERM; sleep 60 & echo $!; "
                                                      "sleep 60 >/dev/null 2>&1 & echo $!; wait"},
                                  "timeoutSeconds": 1})
    assert ex["timedOut"] is True and ex["exitCode"] == -1 and ex["signal"] == 9
    for pid in map(int, out.split()):
        assert wait_dead(pid), f"child {pid} survived the timeout"
    # the python-runtime: SANDBOX_EXEC_TIMEOUT_SECONDS=1, group SIGKILLed
    r = requests.post(sbx.runtime + "/execute",
                      json={"command": "sh -c 'trap \"\" TERM; sleep 60 & echo $! > bg.pid; sleep 60'"})
    j = r.json()
    assert r.status_code == 200 and j["exit_code"] == 1 and "timed out" in j["stderr"]
    with open(os.path.join(sbx.root, "bg.pid")) as f:
        assert wait_dead(int(f.read()))


def test_1gb_output_cut_at_the_bound_memory_flat(sbx):
    sbx.reset_hwm()
    base = sbx.vmhwm_kb()
    r = sbx.session.post(sbx.rest + "/v1/execute",
                         json={"config": {"shell": "head -c 1073741824 /dev/zero; echo done >&2"}})
    j = r.json()
    assert j["exitCode"] == 0 and j["stdoutTruncated"] is True
    assert len(base64.b64decode(j["stdout"])) == MB
    assert base64.b64decode(j["stderr"]) == b"done\n"
    # streamed: the client reads 1 MiB of events, the rest is dropped
    out, _, ex = run_stream(sbx, {"config": {"shell": "head -c 1073741824 /dev/zero"}})
    assert len(out) == MB and ex["stdoutTruncated"] is True and ex["exitCode"] == 0
    r = requests.post(sbx.runtime + "/execute", json={"command": "head -c 268435456 /dev/zero"})
    assert len(r.json()["stdout"]) <= 3 * MB  # U+FFFD for each NUL, 1 MiB of them
    grown_mb = (sbx.vmhwm_kb() - base) / 1024
    assert grown_mb < 32, f"sandboxd peak RSS grew {grown_mb:.1f} MiB over 3 GB of output"


def test_client_gone_kills_process(sbx):
    r = sbx.start_process({"config": {"shell": "echo $$; exec sleep 60"}})
    it = events(r)
    next(it)
    pid = int(next(it)["stdout"])
    r.close()
    assert wait_dead(pid)


def test_timeout_ends_what_left_the_session(tmp_path):
    """A timeout ends everything the command started, a process that left
    its session (setsid) and keeps the output open included, and the answer
    comes at the timeout, not when that process would have ended (60 s).
    One slot: a slot still taken would refuse the next command."""
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--max-processes=1", "--kill-grace=300ms"],
                 env={"SANDBOX_EXEC_TIMEOUT_SECONDS": "1"})
    try:
        r = requests.post(s.rest + "/v1/execute",
                          json={"config": {"shell": "setsid sleep 60 & echo $!; sleep 60"},
                                "timeoutSeconds": 1}, timeout=20)
        j = r.json()
        assert r.status_code == 200 and j["timedOut"] is True, j
        assert wait_dead(int(base64.b64decode(j["stdout"])))
        r = requests.post(s.rest + "/v1/execute", json={"config": {"command": ["true"]}})
        assert r.status_code == 200 and r.json()["exitCode"] == 0, r.text
        # the python-runtime (SANDBOX_EXEC_TIMEOUT_SECONDS=1)
        r = requests.post(s.runtime + "/execute", timeout=20,
                          json={"command": "sh -c 'setsid sleep 60 & echo $! > sid.pid; sleep 60'"})
        assert "timed out" in r.json()["stderr"], r.text
        with open(os.path.join(s.root, "sid.pid")) as f:
            assert wait_dead(int(f.read()))
        r = requests.post(s.runtime + "/execute", json={"command": "true"})
        assert r.json() == {"stdout": "", "stderr": "", "exit_code": 0}
    finally:
        assert s.stop() == 0, s.text()


def test_background_server_answered_after_a_short_drain(sbx):
    """`server & echo started`: once the command itself exited, what is in
    its pipes is collected briefly and answered, well before the timeout;
    the server lives on, and keeps living when it writes to the output
    nobody reads any more (no EPIPE)."""
    bg = "sh -c 'echo $$ > {}; sleep 0.5; echo late; echo late >&2; exec sleep 300'"
    r = requests.post(sbx.rest + "/v1/execute", timeout=10,
                      json={"config": {"shell": bg.format("srv1.pid") + " & echo started"},
                            "timeoutSeconds": 20})
    j = r.json()
    assert r.status_code == 200 and j["exitCode"] == 0 and "timedOut" not in j, j
    assert base64.b64decode(j["stdout"]) == b"started\n"
    # the python-runtime (its timeout is 1 s here: before, the answer was
    # that timeout's failure)
    r = requests.post(sbx.runtime + "/execute", timeout=10,
                      json={"command": 'sh -c "' + bg.format("srv2.pid") + ' & echo started"'})
    assert r.json() == {"stdout": "started\n", "stderr": "", "exit_code": 0}, r.text
    pids = []
    for name in ("srv1.pid", "srv2.pid"):
        with open(os.path.join(sbx.root, name)) as f:
            pids.append(int(f.read()))
    time.sleep(1.0)  # they wrote "late" meanwhile
    try:
        for pid in pids:
            assert alive(pid), f"background server {pid} did not survive its output"
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)


def test_client_gone_ends_its_command(tmp_path):
    """A client that closes its connection ends its command, and what the
    command started, at once: without a timeout the slot would be held
    forever (one slot here)."""
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--max-processes=1"])
    script = "setsid sleep 60 & echo $! > {0}.bg; echo $$ > {0}.pid; exec sleep 60"
    try:
        for name, port, path, body, after in [
                ("rest", s.rest_port, "/v1/execute",
                 {"config": {"shell": script.format("rest")}},
                 lambda: requests.post(s.rest + "/v1/execute",
                                       json={"config": {"command": ["true"]}}).json()),
                ("runtime", s.runtime_port, "/execute",
                 {"command": "sh -c '" + script.format("runtime") + "'"},
                 lambda: requests.post(s.runtime + "/execute", json={"command": "true"}).json())]:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", path, body=json.dumps(body),
                      headers={"Content-Type": "application/json"})
            pid = wait_pid_file(os.path.join(s.root, name + ".pid"))
            bg = wait_pid_file(os.path.join(s.root, name + ".bg"))
            c.close()  # gone without reading the answer
            assert wait_dead(pid), f"{name}: the command outlived its client"
            assert wait_dead(bg), f"{name}: what it started outlived its client"
            j = after()
            assert j.get("exitCode", j.get("exit_code")) == 0, (name, j)
    finally:
        assert s.stop() == 0, s.text()


def test_process_cap(tmp_path):
    """Clients starting processes as fast as they can (a fork bomb at the
    API) get --max-processes of them; the others are refused with 429
    until one ends."""
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--max-processes=4"])
    try:
        held = [s.start_process({"config": {"command": ["sleep", "30"]}}) for _ in range(4)]
        its = [events(r) for r in held]
        ids = [next(it)["init"]["processId"] for it in its]
        results = []

        def client():
            r = requests.post(s.rest + "/v1/processes", json={"config": {"command": ["true"]}})
            results.append((r.status_code, r.json() if r.status_code != 200 else None))

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert [c for c, _ in results] == [429] * 8, results
        assert all(b["code"] == "RESOURCE_EXHAUSTED" for _, b in results)
        r = requests.post(s.rest + "/v1/execute", json={"config": {"command": ["true"]}})
        assert r.status_code == 429
        r = requests.post(s.runtime + "/execute", json={"command": "true"})
        assert r.status_code == 200 and "too many processes" in r.json()["stderr"]
        # one ends: a slot is free again
        assert s.control(ids[0], "signal", {"signal": "SIGNAL_SIGKILL"}).status_code == 200
        assert list(its[0])[-1]["exit"]["signal"] == 9
        r = requests.post(s.rest + "/v1/execute", json={"config": {"command": ["true"]}})
        assert r.status_code == 200 and r.json()["exitCode"] == 0
        for r in held[1:]:
            r.close()
    finally:
        assert s.stop() == 0, s.text()


# no passwd entry needed: setpriv and chown take the number
BOMB_UID = 64917


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                    reason="needs root and setpriv to run sandboxd as an unprivileged user")
def test_fork_bomb_held_by_task_limit(tmp_path):
    """A fork bomb inside a command: its user's tasks stay under --max-tasks
    (RLIMIT_NPROC; sandboxd runs as an unprivileged user, as the image runs
    non-root), the timeout ends every process of it, and the daemon keeps
    serving. The user is a uid of its own, not `nobody`: RLIMIT_NPROC and the
    survivor count are per uid, and other software (nginx workers) runs as
    nobody."""
    nobody = BOMB_UID
    # pytest's temporary directories are private to root: a public one
    base = tempfile.mkdtemp(prefix="sbxd-bomb-")
    os.chmod(base, 0o755)
    root = os.path.join(base, "root")
    os.mkdir(root)
    os.chown(root, nobody, nobody)
    s = Sandboxd(root, tmp_path, user=nobody, args=["--max-tasks=64", "--kill-grace=200ms"])
    try:
        peak = [0]
        stop = threading.Event()

        def count_tasks():
            while not stop.is_set():
                peak[0] = max(peak[0], len(_procs_of(nobody)))
                time.sleep(0.02)

        counter = threading.Thread(target=count_tasks)
        counter.start()
        try:
            out, err, ex = run_stream(s, {"config": {"shell": "b(){ b | b & }; b; sleep 60"},
                                          "timeoutSeconds": 3})
        finally:
            stop.set()
            counter.join()
        assert ex["timedOut"] is True, ex
        # it forked up to the limit (its shells say they cannot fork: the
        # sampler, a thread starved on a loaded machine, may miss the peak
        # now that the command's keeper reaps the bomb's zombies at once),
        # and no further
        assert b"Cannot fork" in err or peak[0] > 8, (peak, err[:200])
        assert peak[0] <= 64, peak
        deadline = time.time() + 10
        left = _procs_of(nobody) - {str(s.pid)} - _idle_keepers(s.pid)
        while left and time.time() < deadline:
            time.sleep(0.1)
            left = _procs_of(nobody) - {str(s.pid)} - _idle_keepers(s.pid)
        assert not left, f"bomb processes survived: {left}"
        assert requests.get(s.rest + "/v1/health").status_code == 200
        r = requests.post(s.rest + "/v1/execute", json={"config": {"command": ["true"]}})
        assert r.json()["exitCode"] == 0
    finally:
        rc = s.stop()
        shutil.rmtree(base, ignore_errors=True)
        assert rc == 0, s.text()


def _idle_keepers(daemon):
    """sandboxd's keepers waiting for a next command (--idle-keepers): its
    own children, copies of it (same executable), with no child of their
    own; the bomb's processes are shells below a keeper."""
    keepers = set()
    exe = os.readlink(f"/proc/{daemon}/exe")
    for p in os.listdir("/proc"):
        try:
            if not p.isdigit() or os.readlink(f"/proc/{p}/exe") != exe:
                continue
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{p}/task/{p}/children") as f:
                kids = f.read().split()
        except OSError:
            continue
        if ppid == daemon and not kids:
            keepers.add(p)
    return keepers


def _procs_of(uid):
    pids = set()
    for p in os.listdir("/proc"):
        if p.isdigit() and _uid(p) == uid:
            pids.add(p)
    return pids


def _uid(p):
    try:
        return os.stat(f"/proc/{p}").st_uid
    except FileNotFoundError:
        return -1
