"""sandboxd's HTTP APIs with normal input (docs/upstream.md#python-runtime-api, #sandboxd-rest-api): the
python-runtime endpoints, the REST files API, health and metadata, 100 MB
binary round trips both ways with the daemon's memory staying flat, and a
graceful shutdown. No cluster: the built binary on a temporary root.
"""
import base64
import concurrent.futures
import hashlib
import os
import stat
import time

import pytest
import requests

from promtext import check_process_metrics
from sandboxd_util import Sandboxd

# before the module's sandboxd starts
IMPORTED = time.time()

MB = 1024 * 1024


@pytest.fixture(scope="module")
def sbx(tmp_path_factory):
    base = tmp_path_factory.mktemp("sandboxd")
    root = base / "root"
    s = Sandboxd(root, base, env={"SANDBOX_GREETING": "hi", "SANDBOX_API_TOKEN": "secret",
                                  "OTHER_VAR": "x"})
    yield s
    assert s.stop() == 0, s.text()


# --- python-runtime API (docs/upstream.md#python-runtime-api) ---------------------------------------------------

def test_runtime_root(sbx):
    r = requests.get(sbx.runtime + "/")
    assert r.status_code == 200
    assert r.json() == {"status": "ok", "message": "Sandbox Runtime is active."}


def test_runtime_execute(sbx):
    r = requests.post(sbx.runtime + "/execute", json={"command": "sh -c 'echo out; echo err >&2; exit 4'"})
    assert r.status_code == 200
    assert r.json() == {"stdout": "out\n", "stderr": "err\n", "exit_code": 4}
    # no shell: quotes are honoured, pipes are plain words
    r = requests.post(sbx.runtime + "/execute", json={"command": "echo 'a  b' | wc"})
    assert r.json()["stdout"] == "a  b | wc\n"
    # runs in the root
    r = requests.post(sbx.runtime + "/execute", json={"command": "pwd"})
    assert r.json()["stdout"] == sbx.root + "\n"


@pytest.mark.parametrize("api", ["runtime", "rest"])
def test_execute_big_output_memory(tmp_path, api):
    """The answer with 16 MiB of output (NUL bytes: 48 MiB of U+FFFD once
    cleaned for /execute; 21 MiB of base64 for /v1/execute) is sent in
    pieces: sandboxd's peak RSS grows by less than 2.5 times the output
    (before: 7 times for /execute, 3.7 for /v1/execute, the output encoded,
    then printed, then copied whole). A fresh daemon: memory an earlier
    request left to malloc would hide the growth."""
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--max-output-bytes=32Mi"])
    try:
        s.reset_hwm()
        base = s.vmhwm_kb()
        cmd = f"head -c {16 * MB} /dev/zero"
        if api == "runtime":
            r = requests.post(s.runtime + "/execute", json={"command": cmd})
        else:
            r = requests.post(s.rest + "/v1/execute",
                              json={"config": {"command": ["sh", "-c", cmd]}})
        assert r.status_code == 200 and int(r.headers["Content-Length"]) == len(r.content)
        j = r.json()
        if api == "runtime":
            assert j["stdout"] == "\ufffd" * (16 * MB) and j["stderr"] == "" and j["exit_code"] == 0
        else:
            assert base64.b64decode(j["stdout"]) == bytes(16 * MB) and j["exitCode"] == 0
        grown_mb = (s.vmhwm_kb() - base) / 1024
        assert grown_mb < 2.5 * 16, f"peak RSS grew {grown_mb:.1f} MiB for 16 MiB of output"
    finally:
        assert s.stop() == 0, s.text()


def test_runtime_execute_failures_are_200(sbx):
    r = requests.post(sbx.runtime + "/execute", json={"command": "no-such-binary-x"})
    assert r.status_code == 200
    assert r.json() == {"stdout": "", "exit_code": 1, "stderr":
                        "Failed to execute command: [Errno 2] No such file or directory: 'no-such-binary-x'"}
    r = requests.post(sbx.runtime + "/execute", json={"command": "echo 'unterminated"})
    assert r.json()["stderr"] == "Failed to execute command: No closing quotation"
    # signal death: Python's negative return code
    r = requests.post(sbx.runtime + "/execute", json={"command": "sh -c 'kill -9 $$'"})
    assert r.json()["exit_code"] == -9


def test_runtime_request_shape_errors_are_422(sbx):
    for body in ({}, {"command": 5}):
        r = requests.post(sbx.runtime + "/execute", json=body)
        assert r.status_code == 422
        assert r.json()["detail"][0]["loc"] == ["body", "command"]
    r = requests.post(sbx.runtime + "/upload", data=b"x")
    assert r.status_code == 422
    r = requests.post(sbx.runtime + "/upload", files={"other": ("a.txt", b"x")})
    assert r.status_code == 422
    assert r.json()["detail"][0]["loc"] == ["body", "file"]


def test_runtime_upload_download_list_exists(sbx):
    r = requests.post(sbx.runtime + "/upload", files={"file": ("/up/dir/a.bin", b"\x00\x01hello")})
    assert r.status_code == 200, r.text
    assert r.json() == {"message": "File '/up/dir/a.bin' uploaded successfully."}
    # clients percent-encode the whole path, "/" included
    r = requests.get(sbx.runtime + "/download/up%2Fdir%2Fa.bin")
    assert r.status_code == 200
    assert r.content == b"\x00\x01hello"
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert r.headers["Content-Disposition"] == 'attachment; filename="up/dir/a.bin"'
    assert requests.get(sbx.runtime + "/download/up/dir/a.bin").content == b"\x00\x01hello"
    r = requests.get(sbx.runtime + "/download/up%2Fnope")
    assert (r.status_code, r.json()) == (404, {"message": "File not found"})
    r = requests.get(sbx.runtime + "/download/up")  # a directory
    assert (r.status_code, r.json()) == (404, {"message": "File not found"})
    r = requests.get(sbx.runtime + "/list/up%2Fdir")
    assert r.status_code == 200
    [entry] = r.json()
    assert entry["name"] == "a.bin" and entry["size"] == 7 and entry["type"] == "file"
    assert abs(entry["mod_time"] - time.time()) < 60
    r = requests.get(sbx.runtime + "/list/up%2Fdir%2Fa.bin")
    assert (r.status_code, r.json()) == (404, {"message": "Path is not a directory"})
    names = {e["name"]: e["type"] for e in requests.get(sbx.runtime + "/list/").json()}
    assert names.get("up") == "directory"
    assert requests.get(sbx.runtime + "/exists/up%2Fdir%2Fa.bin").json() == \
        {"path": "up/dir/a.bin", "exists": True}
    assert requests.get(sbx.runtime + "/exists/up%2Fzzz").json() == \
        {"path": "up/zzz", "exists": False}
    assert requests.get(sbx.runtime + "/exists/").json()["exists"] is True


# --- REST API (docs/upstream.md#sandboxd-rest-api) --------------------------------------------------------------

def test_runtime_upload_failures_are_500(sbx):
    """Every /upload failure other than an escape is upstream's 500
    {"message": "File upload failed: ..."} (docs/upstream.md#python-runtime-api), also
    those that sandboxd finds before writing: a directory as the target,
    an over-long name, a name that is the root. (A malformed body stays a
    400, as Starlette's.)"""
    os.makedirs(os.path.join(sbx.root, "updir"), exist_ok=True)
    for name in ("updir", "x" * 300, "/"):
        r = requests.post(sbx.runtime + "/upload", files={"file": (name, b"data")})
        assert r.status_code == 500, (name, r.status_code, r.text)
        assert r.json()["message"].startswith("File upload failed: ")
    r = requests.post(sbx.runtime + "/upload", data=b"--zz\r\nbroken",
                      headers={"Content-Type": "multipart/form-data; boundary=zz"})
    assert r.status_code == 400, r.text


def test_files_put_get_head_list(sbx):
    r = sbx.session.put(sbx.rest + "/v1/files/dir%2Fsub%2Ffile.txt?mode=0600", data=b"content")
    assert r.status_code == 204 and r.content == b""
    path = os.path.join(sbx.root, "dir/sub/file.txt")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.startswith(".sandboxd-tmp-")]
    r = sbx.session.get(sbx.rest + "/v1/files/dir/sub/file.txt")
    assert r.status_code == 200 and r.content == b"content"
    assert r.headers["Content-Type"] == "application/octet-stream"
    assert "Last-Modified" in r.headers
    assert sbx.session.head(sbx.rest + "/v1/files/dir/sub/file.txt").status_code == 200
    h = sbx.session.head(sbx.rest + "/v1/files/dir/nope")
    assert h.status_code == 404 and h.content == b""
    r = sbx.session.get(sbx.rest + "/v1/files/dir")
    assert r.status_code == 200
    listing = r.json()
    assert listing["path"] == "/dir"
    [e] = listing["entries"]
    assert e["name"] == "sub" and e["type"] == "directory" and e["mode"] == "0755"
    assert e["modified_at"].endswith("Z") and len(e["modified_at"]) == 20
    assert sbx.session.get(sbx.rest + "/v1/files/").json()["path"] == "/"
    os.makedirs(os.path.join(sbx.root, "empty"), exist_ok=True)
    assert sbx.session.get(sbx.rest + "/v1/files/empty").json() == {"path": "/empty", "entries": []}
    # multipart body: the "file" part is the content
    r = sbx.session.put(sbx.rest + "/v1/files/mp.txt", files={"file": ("x", b"from-multipart")})
    assert r.status_code == 204
    assert sbx.session.get(sbx.rest + "/v1/files/mp.txt").content == b"from-multipart"


def test_files_ranges_and_conditional(sbx):
    sbx.session.put(sbx.rest + "/v1/files/r.txt", data=b"0123456789")
    r = sbx.session.get(sbx.rest + "/v1/files/r.txt", headers={"Range": "bytes=2-4"})
    assert r.status_code == 206 and r.content == b"234"
    assert r.headers["Content-Range"] == "bytes 2-4/10"
    r = sbx.session.get(sbx.rest + "/v1/files/r.txt", headers={"Range": "bytes=-3"})
    assert r.content == b"789"
    r = sbx.session.get(sbx.rest + "/v1/files/r.txt", headers={"Range": "bytes=20-"})
    assert r.status_code == 416 and r.headers["Content-Range"] == "bytes */10"
    lm = r.headers.get("Last-Modified") or sbx.session.get(sbx.rest + "/v1/files/r.txt").headers["Last-Modified"]
    r = sbx.session.get(sbx.rest + "/v1/files/r.txt", headers={"If-Modified-Since": lm})
    assert r.status_code == 304 and r.content == b""


def test_files_big_range_sent_from_the_file(sbx):
    """A file past 128 KiB goes out by sendfile in 256 KiB ranges: a range
    that starts and ends inside them, the whole file, and a suffix range
    are the file's bytes, on one kept-alive connection."""
    data = os.urandom(3 * MB + 12345)
    with open(os.path.join(sbx.root, "big-range.bin"), "wb") as f:
        f.write(data)
    url = sbx.rest + "/v1/files/big-range.bin"
    r = sbx.session.get(url, headers={"Range": "bytes=300001-2900000"})
    assert r.status_code == 206 and r.content == data[300001:2900001]
    assert r.headers["Content-Range"] == f"bytes 300001-2900000/{len(data)}"
    r = sbx.session.get(url)
    assert r.status_code == 200 and r.content == data
    r = sbx.session.get(url, headers={"Range": "bytes=-200000"})
    assert r.status_code == 206 and r.content == data[-200000:]
    r = requests.get(sbx.runtime + "/download/big-range.bin")
    assert r.status_code == 200 and r.content == data


def test_files_put_errors(sbx):
    r = sbx.session.put(sbx.rest + "/v1/files/x.txt?mode=644", data=b"x")
    assert r.status_code == 400
    assert r.json() == {"code": "INVALID_ARGUMENT", "message": 'mode "644" must match ^0[0-7]{3}$'}
    os.makedirs(os.path.join(sbx.root, "adir"), exist_ok=True)
    r = sbx.session.put(sbx.rest + "/v1/files/adir", data=b"x")
    assert r.json() == {"code": "INVALID_ARGUMENT", "message": "target path is a directory"}
    r = sbx.session.put(sbx.rest + "/v1/files/m.txt", files={"other": ("x", b"y")})
    assert r.status_code == 400
    assert r.json()["message"] == 'multipart body is missing the required "file" part'
    r = sbx.session.put(sbx.rest + "/v1/files/m.txt", data=b"garbage",
                        headers={"Content-Type": "multipart/form-data; boundary=zz"})
    assert r.status_code == 400 and r.json()["message"].startswith("invalid multipart body")
    assert not os.path.exists(os.path.join(sbx.root, "m.txt"))
    # a file used as a directory: 500 with the OS's text
    sbx.session.put(sbx.rest + "/v1/files/plain", data=b"x")
    r = sbx.session.put(sbx.rest + "/v1/files/plain/child", data=b"x")
    assert r.status_code == 500 and r.json()["code"] == "INTERNAL"
    assert sbx.root not in r.text


def test_files_delete(sbx):
    for p in ("del/a/b.txt", "del/c.txt"):
        sbx.session.put(sbx.rest + "/v1/files/" + p, data=b"x")
    r = sbx.session.delete(sbx.rest + "/v1/files/del/none")
    assert r.status_code == 404 and r.json()["code"] == "NOT_FOUND"
    r = sbx.session.delete(sbx.rest + "/v1/files/del/none?recursive=maybe")
    assert r.status_code == 404  # existence is checked before `recursive`
    r = sbx.session.delete(sbx.rest + "/v1/files/del?recursive=maybe")
    assert r.status_code == 400 and r.json()["message"] == 'recursive "maybe" must be a boolean'
    r = sbx.session.delete(sbx.rest + "/v1/files/del")
    assert r.status_code == 409
    assert r.json()["message"] == "directory is not empty; pass recursive=true to remove it"
    assert sbx.session.delete(sbx.rest + "/v1/files/del/c.txt").status_code == 204
    assert sbx.session.delete(sbx.rest + "/v1/files/del?recursive=T").status_code == 204
    assert not os.path.exists(os.path.join(sbx.root, "del"))
    r = sbx.session.delete(sbx.rest + "/v1/files/")
    assert r.status_code == 409 and r.json()["code"] == "CONFLICT"


def test_routing_404_405(sbx):
    r = sbx.session.post(sbx.rest + "/v1/files/x", data=b"")
    assert r.status_code == 405 and "PUT" in r.headers.get("Allow", "")
    assert sbx.session.get(sbx.rest + "/v1/nothing").status_code == 404


def test_health_and_metadata(sbx):
    h = sbx.session.get(sbx.rest + "/v1/health").json()
    assert h["status"] == "ok" and isinstance(h["uptime_seconds"], int)
    env = sbx.session.get(sbx.rest + "/v1/metadata").json()["env"]
    assert env.get("SANDBOX_GREETING") == "hi"
    assert "SANDBOX_API_TOKEN" not in env and "OTHER_VAR" not in env


def test_process_metrics_on_the_rest_port(sbx):
    """GET /metrics: the process_* families of client_golang's process
    collector (docs/sandboxd.md#metrics); not served on the python-runtime port."""
    r = sbx.session.get(sbx.rest + "/metrics")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    check_process_metrics(r.text, IMPORTED, pid=sbx.pid)
    assert sbx.session.get(sbx.runtime + "/metrics").status_code == 404


def test_metrics_refuses_hostile_requests(sbx):
    """What a tenant could send /metrics: other methods, a 100 kB header, a
    NUL in the path, 100 scrapes at once; it keeps answering."""
    for m in ("POST", "PUT", "DELETE"):
        assert sbx.session.request(m, sbx.rest + "/metrics", data=b"x").status_code == 405
    assert sbx.session.get(sbx.rest + "/metrics", headers={"X-Big": "a" * 100_000}).status_code == 431
    assert sbx.session.get(sbx.rest + "/metrics%00x").status_code == 404
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        codes = list(ex.map(lambda _: requests.get(sbx.rest + "/metrics", timeout=30).status_code,
                            range(100)))
    assert codes == [200] * 100
    check_process_metrics(sbx.session.get(sbx.rest + "/metrics").text, IMPORTED, pid=sbx.pid)


# --- 100 MB round trips, memory flat ----------------------------------------------

def chunks(total_mb):
    """total_mb MiB of incompressible bytes, 1 MiB at a time, each MiB distinct."""
    block = os.urandom(MB)
    for i in range(total_mb):
        yield i.to_bytes(8, "little") + block[8:]


def sha(gen):
    h = hashlib.sha256()
    for c in gen:
        h.update(c)
    return h.hexdigest()


def multipart(filename, gen, boundary="sbxdtestboundary"):
    yield (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
           f"filename=\"{filename}\"\r\n\r\n").encode()
    yield from gen
    yield f"\r\n--{boundary}--\r\n".encode()


def test_round_trip_100mb_memory_flat(sbx):
    size_mb = 100
    want = hashlib.sha256()
    parts = []
    for c in chunks(size_mb):
        want.update(c)
        parts.append(c)
    # (1 MiB x 100 in this process is the test's own buffer, not sandboxd's)
    sbx.session.get(sbx.rest + "/v1/health")
    sbx.reset_hwm()
    base = sbx.vmhwm_kb()
    r = sbx.session.put(sbx.rest + "/v1/files/big/rest.bin", data=iter(parts))
    assert r.status_code == 204, r.text
    r = sbx.session.get(sbx.rest + "/v1/files/big/rest.bin", stream=True)
    assert int(r.headers["Content-Length"]) == size_mb * MB
    assert sha(r.iter_content(MB)) == want.hexdigest()
    r = requests.post(sbx.runtime + "/upload", data=multipart("big/rt.bin", iter(parts)),
                      headers={"Content-Type": "multipart/form-data; boundary=sbxdtestboundary"})
    assert r.status_code == 200, r.text
    r = requests.get(sbx.runtime + "/download/big%2Frt.bin", stream=True)
    assert sha(r.iter_content(MB)) == want.hexdigest()
    grown_mb = (sbx.vmhwm_kb() - base) / 1024
    # streamed: a few MiB of buffers, never the 100 MB file
    assert grown_mb < 32, f"sandboxd peak RSS grew {grown_mb:.1f} MiB over 400 MB of transfers"


# --- shutdown ----------------------------------------------------------------------

def test_graceful_shutdown_ends_processes(tmp_path):
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--kill-grace=500ms", "--shutdown-timeout=10s"])
    r = s.start_process({"config": {"shell": "trap '' TERM; echo started; sleep 60"}})
    lines = r.iter_lines()
    assert b"init" in next(lines)
    assert b"stdout" in next(lines)
    t0 = time.monotonic()
    assert s.stop() == 0, s.text()
    assert time.monotonic() - t0 < 8
    rest = b"".join(lines)
    assert b'"exit"' in rest and b'"signal":9' in rest
    assert "shutting down" in s.text()
