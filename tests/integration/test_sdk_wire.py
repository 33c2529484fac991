"""What the SDK (agent_sandbox_c over libsandbox) puts on the wire to the
router, checked against a stand-in (sdk_standin.py, a separate process)
until the router and sandboxd land: the requests of docs/upstream.md#connector /
docs/upstream.md#commands-and-files (paths, percent-encoding, router headers, JSON and multipart bodies),
results and errors, retries, a 50 MB file streamed both ways in bounded
memory, and the kubectl tunnel mode (a stand-in kubectl that forwards to
the stand-in router).

No cluster: the handles are built directly with a pod IP, on a client whose
kubeconfig names an API server that is not there (only error paths ask it
anything, and get no answer).
"""
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import sdk_child_env

import agent_sandbox_c as sdk
from agent_sandbox_c import _native

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "sdk_standin.py")
POD_IP = "10.1.2.3"
NS = "team-a"


class Standin:
    def __init__(self, tmp, host="127.0.0.1", port=0):
        self.root = tmp / "root"
        self.root.mkdir()
        self.log = tmp / "requests.jsonl"
        self.log.touch()
        self.proc = subprocess.Popen([sys.executable, STANDIN, "--root", str(self.root),
                                      "--log", str(self.log), "--host", host,
                                      "--port", str(port)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), line
        self.port = int(line.split()[1])
        self.url = f"http://{host}:{self.port}"

    def requests(self):
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def last(self):
        return self.requests()[-1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture
def standin(tmp_path):
    s = Standin(tmp_path)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def native_client(tmp_path_factory):
    """A client whose API server does not exist (nothing here needs one)."""
    kc = tmp_path_factory.mktemp("kc") / "kubeconfig"
    kc.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Config
        clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
        users: [{name: u, user: {token: t}}]
        contexts: [{name: c, context: {cluster: none, user: u, namespace: team-a}}]
        current-context: c
        """))
    c = _native.Client(str(kc), request_timeout=2, api_max_retries=0)
    yield c
    c.close()


def handle(native_client, config, sandbox_id="sbx-1"):
    return sdk.Sandbox("claim-1", sandbox_id, NS, config, k8s_helper=native_client,
                       pod_ip=POD_IP)


def headers(entry):
    return {k.lower(): v for k, v in entry["headers"].items()}


# ---------------------------------------------------------------- requests


def test_run_sends_the_router_contract(standin, native_client):
    sb = handle(native_client, sdk.SandboxDirectConnectionConfig(api_url=standin.url + "/"))
    r = sb.commands.run("echo 'Hello from SDK'")
    assert (r.stdout, r.stderr, r.exit_code) == ("ran: echo 'Hello from SDK'\n", "", 0)
    req = standin.last()
    assert req["method"] == "POST" and req["path"] == "/execute"
    assert json.loads(req["body"]) == {"command": "echo 'Hello from SDK'"}
    h = headers(req)
    assert h["content-type"] == "application/json"
    assert h["x-sandbox-id"] == "sbx-1"
    assert h["x-sandbox-namespace"] == NS
    assert h["x-sandbox-port"] == "8888"
    assert h["x-sandbox-timeout"] == "60"
    assert h["x-sandbox-pod-ip"] == POD_IP
    assert "authorization" not in h and "expect" not in h and "x-sandbox-uid" not in h

    sb2 = handle(native_client, sdk.SandboxDirectConnectionConfig(api_url=standin.url,
                                                                  server_port=9000))
    sb2.commands.run("true", timeout=2.5)
    h = headers(standin.last())
    assert h["x-sandbox-port"] == "9000" and h["x-sandbox-timeout"] == "2.5"
    sb2.commands.run("true", timeout=(5, 30))  # requests-style (connect, read)
    assert headers(standin.last())["x-sandbox-timeout"] == "30"
    with pytest.raises(ValueError):
        sb2.commands.run("true", timeout=0)


def test_files_round_trip_and_encoding(standin, native_client):
    sb = handle(native_client, sdk.SandboxDirectConnectionConfig(api_url=standin.url))
    sb.files.write("/dir/test.txt", "héllo")  # guarded: leading / dropped; str as UTF-8
    up = standin.last()
    assert up["path"] == "/upload" and up["part"] == "file" and up["filename"] == "dir/test.txt"
    assert headers(up)["content-type"].startswith("multipart/form-data; boundary=")
    assert headers(up)["x-sandbox-id"] == "sbx-1"
    assert (standin.root / "dir" / "test.txt").read_bytes() == "héllo".encode()
    assert sb.files.read("dir/test.txt") == "héllo".encode()
    assert standin.last()["path"] == "/download/dir%2Ftest.txt"

    sb.files.write("a b/é~x.txt", b"\x00\x01binary")
    assert sb.files.read("a b/é~x.txt") == b"\x00\x01binary"
    assert standin.last()["path"] == "/download/a%20b%2F%C3%A9~x.txt"

    entries = {e.name: e for e in sb.files.list("dir")}
    assert standin.last()["path"] == "/list/dir"
    assert set(entries) == {"test.txt"} and entries["test.txt"].type == "file"
    assert entries["test.txt"].size == len("héllo".encode())
    assert abs(entries["test.txt"].modified.timestamp() - time.time()) < 3600
    assert {e.name: e.type for e in sb.files.list("")} == {"dir": "directory",
                                                          "a b": "directory"}
    assert standin.last()["path"] == "/list/"
    assert sb.files.exists("dir/test.txt") is True
    assert sb.files.exists("dir/missing") is False
    assert standin.last()["path"] == "/exists/dir%2Fmissing"

    # the guard refuses before sending; allow_unsafe_paths sends as given
    n = len(standin.requests())
    with pytest.raises(ValueError, match="escapes the sandbox root"):
        sb.files.write("../x", b"")
    with pytest.raises(ValueError, match="does not name a file"):
        sb.files.read("/")
    assert len(standin.requests()) == n
    sb.files.write("./odd//name", b"x", allow_unsafe_paths=True)
    assert standin.last()["filename"] == "./odd//name"
    with pytest.raises(NotImplementedError):
        sb.files.delete("dir/test.txt")


def test_streams_from_and_to_files_and_file_objects(standin, native_client, tmp_path):
    sb = handle(native_client, sdk.SandboxDirectConnectionConfig(api_url=standin.url))
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(3 << 20))
    with open(src, "rb") as f:
        sb.files.write("big.bin", f)  # by file descriptor, with its length
    up = standin.last()
    assert "transfer-encoding" not in headers(up) and up["size"] == 3 << 20

    class Reader:  # a file object without a descriptor: read through a callback
        def __init__(self, data):
            self.data, self.pos = data, 0

        def read(self, n):
            out = self.data[self.pos:self.pos + n]
            self.pos += len(out)
            return out
    sb.files.write("cb.bin", Reader(b"abc" * 100000))
    up = standin.last()
    assert headers(up).get("transfer-encoding") == "chunked" and up["size"] == 300000

    dest = tmp_path / "back.bin"
    assert sb.files.read("big.bin", destination=str(dest)) == 3 << 20
    assert dest.read_bytes() == src.read_bytes()

    class Writer:  # no descriptor: streamed through a callback
        def __init__(self):
            self.parts = []

        def write(self, b):
            self.parts.append(bytes(b))
    w = Writer()
    assert sb.files.read("cb.bin", destination=w) == 300000
    assert b"".join(w.parts) == b"abc" * 100000

    class Failing:
        def write(self, b):
            raise OSError("disk full")
    with pytest.raises(OSError, match="disk full"):
        sb.files.read("big.bin", destination=Failing())


# Run in a child process: its peak RSS says whether a body was held in memory.
STREAM_SCRIPT = """
import os, sys
sys.path.insert(0, {sdk!r})
import agent_sandbox_c as sdk
from agent_sandbox_c import _native
size = int(sys.argv[1])
c = _native.Client({kc!r})
sb = sdk.Sandbox("c", "s", "ns", sdk.SandboxDirectConnectionConfig(api_url={url!r}),
                 k8s_helper=c, pod_ip="10.0.0.1")
with open({src!r}, "rb") as f:
    sb.files.write("stream.bin", f, timeout=120)
n = sb.files.read("__zeros__%d" % size, timeout=120, destination={dest!r})
assert n == size, n
# VmHWM, not ru_maxrss: that one keeps the parent's peak across fork + exec
print(next(ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("VmHWM:")))
"""


def test_fifty_megabytes_both_ways_in_flat_memory(standin, native_client, tmp_path):
    kc = tmp_path / "kc"
    kc.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: n, cluster: {server: "
                  "'https://127.0.0.1:1'}}]\nusers: [{name: u, user: {token: t}}]\n"
                  "contexts: [{name: c, context: {cluster: n, user: u}}]\ncurrent-context: c\n")

    def peak_kib(size):
        src = tmp_path / f"src-{size}"
        with open(src, "wb") as f:
            f.truncate(size)  # sparse: costs no page cache to write
        script = STREAM_SCRIPT.format(sdk=os.path.dirname(os.path.dirname(sdk.__file__)),
                                      kc=str(kc), url=standin.url, src=str(src),
                                      dest=str(tmp_path / f"dest-{size}"))
        env = sdk_child_env()
        out = subprocess.run([sys.executable, "-c", script, str(size)], capture_output=True,
                             text=True, timeout=300, env=env)
        assert out.returncode == 0, out.stderr
        return int(out.stdout.split()[-1])

    small, big = peak_kib(1 << 20), peak_kib(50 << 20)
    print(f"peak RSS: 1 MiB each way {small} KiB, 50 MiB each way {big} KiB")
    assert standin.requests()[-2]["size"] == 50 << 20
    assert os.path.getsize(tmp_path / f"dest-{50 << 20}") == 50 << 20
    # holding either body would add 50 MiB; streaming adds buffers only
    assert big - small < 16 * 1024, f"peak RSS grew by {big - small} KiB for 49 MiB more"


# ---------------------------------------------------------------- errors


def test_nul_characters_are_refused_before_sending(standin, native_client):
    """A NUL would end the C string: the command, path or claim field would
    silently be another one (`echo a` for "echo a\\0b", file `a` for
    "a\\0b.txt"). ValueError instead, and nothing is sent."""
    sb = handle(native_client, sdk.SandboxDirectConnectionConfig(api_url=standin.url))
    n = len(standin.requests())
    calls = [lambda: sb.commands.run("echo a\0b"),
             lambda: sb.files.write("a\0b.txt", b"x"),
             lambda: sb.files.write("a\0b.txt", b"x", allow_unsafe_paths=True),
             lambda: sb.files.read("x\0../etc/passwd"),
             lambda: sb.files.list("d\0ir"),
             lambda: sb.files.exists("a\0b"),
             lambda: native_client.create("pool", NS, 1, labels={"k": "v\0w"}),
             lambda: native_client.create("pool", NS, 1, env={"K": "v\0w"}),
             lambda: native_client.create("po\0ol", NS, 1)]
    for call in calls:
        with pytest.raises(ValueError, match="contains a NUL character"):
            call()
    assert len(standin.requests()) == n
    assert sb.commands.run("echo ab").exit_code == 0  # the handle still works


def test_error_statuses_retries_and_bad_answers(standin, native_client, tmp_path):
    quick = sdk.SandboxDirectConnectionConfig(api_url=standin.url, max_retries=2,
                                              retry_backoff=0.01)
    sb = handle(native_client, quick)
    # a GET: 503 twice, then the file: retried
    n = len(standin.requests())
    assert sb.files.read("__fail__503_2_k1", allow_unsafe_paths=True) == b"after the failures"
    assert len(standin.requests()) == n + 3
    # more often than the retries allow: the last status is reported
    with pytest.raises(sdk.SandboxRequestError) as e:
        sb.files.read("__fail__500_9_k2", allow_unsafe_paths=True)
    assert e.value.status_code == 500 and "HTTP 500" in str(e.value)
    assert len(standin.requests()) == n + 6
    # a POST that went out is never sent twice (upstream 1.0.8): a command
    # must not run again because its answer was a 5xx or never came
    with pytest.raises(sdk.SandboxRequestError) as e:
        sb.commands.run("fail 503 1 k3")
    assert e.value.status_code == 503
    assert str(e.value).startswith(f"Failed to communicate with the sandbox at {standin.url}"
                                   "/execute.")
    assert len(standin.requests()) == n + 7
    # a 4xx is not retried
    n = len(standin.requests())
    with pytest.raises(sdk.SandboxRequestError) as e:
        sb.files.read("missing.txt")
    assert e.value.status_code == 404 and "File not found" in str(e.value)
    assert len(standin.requests()) == n + 1
    # a failed read into a path leaves the path as it was: absent, or intact
    dest = tmp_path / "out.bin"
    with pytest.raises(sdk.SandboxRequestError):
        sb.files.read("missing.txt", destination=str(dest))
    dest.write_bytes(b"before")
    with pytest.raises(sdk.SandboxRequestError):
        sb.files.read("missing.txt", destination=dest)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("out.bin")) == \
        ["out.bin"] and dest.read_bytes() == b"before"
    # a redirect is an error, never followed
    with pytest.raises(sdk.SandboxRequestError) as e:
        sb.files.read("__redirect__", allow_unsafe_paths=True)
    assert e.value.status_code == 302 and "http://elsewhere/" in str(e.value)
    with pytest.raises(RuntimeError, match="Failed to decode JSON response from sandbox"):
        sb.commands.run("badjson")
    with pytest.raises(RuntimeError, match="invalid execution result format"):
        sb.commands.run("badformat")
    # the request timeout is the call's, and a timed-out command is not re-run
    n = len(standin.requests())
    with pytest.raises(sdk.SandboxRequestError) as e:
        sb.commands.run("sleep 3", timeout=0.5)
    assert e.value.status_code is None
    time.sleep(0.3)
    assert len(standin.requests()) == n + 1


def test_unreachable_router_and_closed_handle(native_client):
    sb = handle(native_client, sdk.SandboxDirectConnectionConfig(api_url="http://127.0.0.1:9",
                                                                 max_retries=0))
    with pytest.raises(sdk.SandboxRequestError) as e:
        sb.commands.run("true")
    assert e.value.status_code is None and "127.0.0.1:9" in str(e.value)
    run = sb.commands.run
    sb.close_connection()
    assert sb.commands is None and sb.files is None and not sb.is_active
    with pytest.raises(sdk.SandboxNotReadyError, match="closed"):
        run("true")
    sb.close_connection()  # idempotent


def test_configs_are_checked():
    with pytest.raises(ValueError):
        sdk.SandboxDirectConnectionConfig(api_url="ftp://x")
    with pytest.raises(ValueError, match="namespace"):
        sdk.SandboxLocalTunnelConnectionConfig(router_namespace="Bad_NS")
    with pytest.raises(ValueError):
        sdk.SandboxGatewayConnectionConfig(gateway_name="")
    with pytest.raises(ValueError):
        sdk.SandboxInClusterConnectionConfig(server_port=70000)
    with pytest.raises(ValueError, match="connection_config"):
        sdk.AsyncSandboxClient()


# ---------------------------------------------------------------- the kubectl tunnel

# Stands in for `kubectl port-forward svc/... LOCAL:8080`: records its argv,
# listens on LOCAL and forwards every connection to $TARGET_PORT.
FAKE_KUBECTL = r"""#!{python}
import json, os, socket, sys, threading
with open(os.environ["FAKE_KUBECTL_LOG"], "a") as f:
    f.write(json.dumps({"pid": os.getpid(), "argv": sys.argv[1:]}) + "\n")
if os.environ.get("FAKE_KUBECTL_FAIL"):
    sys.stderr.write("error: services \"sandbox-router-svc\" not found\n")
    sys.exit(1)
local = int(sys.argv[3].split(":")[0])
target = int(os.environ["TARGET_PORT"])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", local))
srv.listen(64)
def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    finally:
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
while True:
    c, _ = srv.accept()
    u = socket.create_connection(("127.0.0.1", target))
    threading.Thread(target=pipe, args=(c, u), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
"""


def test_local_tunnel_runs_kubectl_port_forward(standin, native_client, tmp_path, monkeypatch):
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(FAKE_KUBECTL.replace("{python}", sys.executable))
    kubectl.chmod(kubectl.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "kubectl.log"
    monkeypatch.setenv("AGENT_SANDBOX_KUBECTL", str(kubectl))
    monkeypatch.setenv("FAKE_KUBECTL_LOG", str(log))
    monkeypatch.setenv("TARGET_PORT", str(standin.port))
    sb = handle(native_client, sdk.SandboxLocalTunnelConnectionConfig(router_namespace="routers",
                                                                      max_retries=0))
    assert sb.commands.run("echo via tunnel").stdout == "ran: echo via tunnel\n"
    assert sb.commands.run("again").exit_code == 0
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(runs) == 1, "one tunnel serves every request"
    args = runs[0]["argv"]
    assert args[:2] == ["port-forward", "svc/sandbox-router-svc"]
    assert args[2].endswith(":8080") and args[3:5] == ["-n", "routers"]
    assert "--kubeconfig" in args
    assert headers(standin.last())["x-sandbox-id"] == "sbx-1"

    # kubectl dies: the next call says so, the one after starts a new tunnel
    os.kill(runs[0]["pid"], signal.SIGKILL)
    time.sleep(0.2)
    with pytest.raises(sdk.SandboxPortForwardError, match="kubectl port-forward exited"):
        sb.commands.run("after death")
    assert sb.commands.run("restarted").exit_code == 0
    assert len(log.read_text().splitlines()) == 2
    second = json.loads(log.read_text().splitlines()[1])["pid"]
    sb.close_connection()
    # close stops kubectl (SIGTERM): the process is gone and reaped
    with pytest.raises(ProcessLookupError):
        os.kill(second, 0)

    monkeypatch.setenv("FAKE_KUBECTL_FAIL", "1")
    sb2 = handle(native_client, sdk.SandboxLocalTunnelConnectionConfig(max_retries=0))
    with pytest.raises(sdk.SandboxPortForwardError, match="sandbox-router-svc.*not found"):
        sb2.commands.run("true")
