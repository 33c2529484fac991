"""Hostile paths against both sandboxd APIs: `..` segments, absolute paths,
percent-encoded traversal (once and twice), links inside the root that
point outside, a link swapped in while requests run, NUL bytes and
over-long paths. Each is refused with a clear error, and nothing outside
the root is read, written or deleted (a sentinel tree beside the root is
checked after every case).
"""
import ctypes
import os
import threading

import pytest
import requests

from sandboxd_util import Sandboxd

SECRET = b"top-secret-outside-the-root"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    root, outside = base / "root", base / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(SECRET)
    s = Sandboxd(root, base)
    os.symlink("../outside", root / "link_out")                 # relative, escaping
    os.symlink(str(outside / "secret"), root / "abs_out")       # absolute, escaping
    os.makedirs(root / "inner")
    (root / "inner" / "f.txt").write_bytes(b"inside")
    os.symlink("inner/f.txt", root / "link_in")                 # stays inside
    yield s, root, outside
    assert s.stop() == 0, s.text()


def untouched(outside):
    assert sorted(os.listdir(outside)) == ["secret"]
    assert (outside / "secret").read_bytes() == SECRET


def refused_rest(status, body):
    assert status in (400, 403), (status, body)
    assert SECRET not in body


@pytest.mark.parametrize("target", [
    "/v1/files/../outside/secret",
    "/v1/files/inner/../../outside/secret",
    "/v1/files/%2e%2e/outside/secret",
    "/v1/files/%2E%2E%2Foutside%2Fsecret",
    "/v1/files/inner%2F..%2F..%2Foutside%2Fsecret",
    "/v1/files/link_out/secret",
    "/v1/files/abs_out",
    "/v1/files/link_out",
])
def test_rest_traversal_refused(env, target):
    s, root, outside = env
    for method, body in (("GET", None), ("HEAD", None), ("PUT", b"pwned"), ("DELETE", None)):
        status, data, _ = s.raw(method, target, body=body)
        assert status == 403, (method, target, status, data)
        if method != "HEAD":
            assert b"PERMISSION_DENIED" in data and SECRET not in data
            assert str(root).encode() not in data and str(outside).encode() not in data
    untouched(outside)


def test_rest_absolute_paths_are_rerooted(env):
    s, root, outside = env
    status, data, _ = s.raw("GET", "/v1/files/" + str(outside / "secret"))
    assert status == 404 and SECRET not in data
    status, data, _ = s.raw("GET", "/v1/files//etc/passwd")
    assert status == 404 and b"root:" not in data
    status, _, _ = s.raw("PUT", "/v1/files/%2Fetc%2Fpwned", body=b"x")
    assert status == 204
    assert (root / "etc" / "pwned").exists() and not os.path.exists("/etc/pwned")
    # the root's own absolute path names the root
    status, data, _ = s.raw("GET", "/v1/files/" + str(root) + "/inner/f.txt")
    assert status == 200 and data == b"inside"
    untouched(outside)


def test_links_inside_are_followed(env):
    s, root, outside = env
    status, data, _ = s.raw("GET", "/v1/files/link_in")
    assert (status, data) == (200, b"inside")
    listing = requests.get(s.rest + "/v1/files/").json()["entries"]
    names = [e["name"] for e in listing]
    assert "link_in" in names and "link_out" not in names and "abs_out" not in names


@pytest.mark.parametrize("target", [
    "/download/..%2Foutside%2Fsecret",
    "/download/%252e%252e%252foutside%252fsecret",   # decoded twice, as upstream
    "/download/link_out%2Fsecret",
    "/download/abs_out",
    "/list/link_out",
    "/list/..",
    "/exists/..%2Foutside%2Fsecret",
    "/exists/link_out%2Fsecret",
])
def test_runtime_traversal_refused(env, target):
    s, root, outside = env
    status, data, _ = s.raw("GET", target, port=s.runtime_port)
    assert (status, data) == (403, b'{"message":"Access denied"}'), (target, status, data)
    untouched(outside)


def test_runtime_upload_traversal_refused(env):
    s, root, outside = env
    for name in ("../outside/new", "link_out/new", "inner/../../outside/new"):
        r = requests.post(s.runtime + "/upload", files={"file": (name, b"pwned")})
        assert (r.status_code, r.json()) == (403, {"message": "Access denied"}), name
    untouched(outside)


def test_nul_and_long_paths(env):
    s, root, outside = env
    status, data, _ = s.raw("GET", "/v1/files/inner%00/../../outside/secret")
    assert status == 400 and b"NUL" in data
    status, data, _ = s.raw("PUT", "/v1/files/a%00b", body=b"x")
    assert status == 400
    status, data, _ = s.raw("GET", "/exists/a%2500b", port=s.runtime_port)
    assert status == 400
    long_path = "/".join(["d" * 200] * 30)   # 6 KB
    status, data, _ = s.raw("PUT", "/v1/files/" + long_path, body=b"x")
    assert status == 400 and b"too long" in data
    status, data, _ = s.raw("PUT", "/v1/files/" + "n" * 300, body=b"x")
    assert status == 400
    status, _, _ = s.raw("GET", "/v1/files/" + "x" * 200000)
    assert status in (400, 414, 431)
    assert requests.get(s.rest + "/v1/health").status_code == 200  # still serving
    untouched(outside)


def test_link_swapped_in_during_requests(env):
    """A directory name flips between a real directory and a link to the
    outside (renameat2 RENAME_EXCHANGE, atomic) while requests write, read,
    list and delete through it."""
    s, root, outside = env
    (root / "swap").mkdir()
    (root / "swap" / "f").write_bytes(b"real")
    os.symlink("../outside", root / "swap_other")
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    a, b = os.fsencode(root / "swap"), os.fsencode(root / "swap_other")
    assert libc.renameat2(at_fdcwd, a, at_fdcwd, b, rename_exchange) == 0
    assert libc.renameat2(at_fdcwd, a, at_fdcwd, b, rename_exchange) == 0
    stop = threading.Event()

    def flipper():
        while not stop.is_set():
            libc.renameat2(at_fdcwd, a, at_fdcwd, b, rename_exchange)

    t = threading.Thread(target=flipper)
    t.start()
    seen = {"ok": 0, "refused": 0}
    try:
        with requests.Session() as sess:
            for i in range(60):
                for r in (sess.put(f"{s.rest}/v1/files/swap/secret", data=b"pwned"),
                          sess.put(f"{s.rest}/v1/files/swap/new{i}", data=b"pwned"),
                          sess.get(f"{s.rest}/v1/files/swap/secret"),
                          sess.get(f"{s.rest}/v1/files/swap"),
                          sess.delete(f"{s.rest}/v1/files/swap/secret"),
                          sess.get(f"{s.runtime}/download/swap%2Fsecret"),
                          sess.get(f"{s.runtime}/list/swap")):
                    assert SECRET not in r.content
                    seen["ok" if r.status_code < 300 else "refused"] += 1
    finally:
        stop.set()
        t.join()
    untouched(outside)
    # both states were hit: some requests went through the real directory
    assert seen["ok"] > 0 and seen["refused"] > 0, seen
