"""sandbox-router against real test sandboxes on loopback (no cluster): the
request contract of docs/upstream.md#router-request-contract to #upstream-retries, streaming both ways (a 100 MB
upload with flat router memory, chunked bodies), WebSocket tunnels, retries
and timeouts, keep-alive pools, probes, metrics, the access log, scoped
tokens and graceful shutdown.

The sandboxes are addressed by X-Sandbox-Pod-IP 127.0.0.1, hence
--allow-loopback-pod-ip (the Router helper passes it).
"""
import http.client
import json
import os
import socket
import threading
import time

import pytest

from router_util import (Backend, Router, WebSocketEcho, asan_build, sandbox_headers, ws_connect,
                         ws_frame, ws_read_frame, wait_for)
from promtext import check_process_metrics

# before the module's router starts
IMPORTED = time.time()


@pytest.fixture(scope="module")
def backend():
    b = Backend()
    yield b
    b.close()


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    r = Router(tmp_path_factory.mktemp("router"),
               ["--response-header-timeout=2s", "--upstream-retry-initial-delay=50ms",
                "--upstream-retry-max-delay=100ms"]).wait_ready()
    yield r
    rc = r.stop()
    r.assert_clean_log()
    assert rc == 0, f"router exit code {rc} after SIGTERM:\n{r.text()[-3000:]}"


def echo(router, backend, path="/echo", **kw):
    st, hdrs, body = router.request("GET", path, sandbox_headers(port=backend.port, **kw.pop("h", {})), **kw)
    assert st == 200, body
    return hdrs, json.loads(body)


def test_get_forwards_path_query_and_rewrites_headers(router, backend):
    h = sandbox_headers(port=backend.port)
    h.update({"Authorization": "Bearer secret", "X-Forwarded-For": "6.6.6.6", "Forwarded": "for=6.6.6.6",
              "X-Forwarded-Host": "evil", "Connection": "X-Hop", "X-Hop": "1", "X-Keep": "yes",
              "Host": "router.example"})
    st, hdrs, body = router.request("GET", "/echo/a%2Fb/./c?q=1&r=%20x", h)
    assert st == 200, body
    seen = json.loads(body)
    got = {k.lower(): v for k, v in seen["headers"]}
    assert seen["path"] == "/echo/a%2Fb/./c?q=1&r=%20x"   # byte for byte
    assert got["host"] == f"127.0.0.1:{backend.port}"
    assert got["x-forwarded-for"] == "127.0.0.1"
    assert got["x-forwarded-host"] == "router.example"
    assert got["x-forwarded-proto"] == "http"
    assert got["x-keep"] == "yes" and got["x-sandbox-id"] == "sb"
    for gone in ("authorization", "forwarded", "x-hop", "connection"):
        assert gone not in got, (gone, got)
    assert hdrs["x-backend"] == "1"
    assert "keep-alive" not in hdrs


def test_validation_errors_are_json(router):
    st, hdrs, body = router.request("GET", "/x", {})
    assert (st, json.loads(body)) == (400, {"detail": "X-Sandbox-ID header is required."})
    assert hdrs["content-type"] == "application/json"
    assert body.endswith(b"\n")
    for h, detail in (({"X-Sandbox-ID": "Bad_ID"}, "Invalid sandbox ID format."),
                      ({"X-Sandbox-ID": "ok", "X-Sandbox-Namespace": "NS"}, "Invalid namespace format."),
                      ({"X-Sandbox-ID": "ok", "X-Sandbox-Port": "70000"}, "Invalid port format."),
                      ({"X-Sandbox-ID": "ok", "X-Sandbox-Pod-IP": "169.254.169.254"}, "Invalid target IP address."),
                      ({"X-Sandbox-ID": "ok", "X-Sandbox-Pod-IP": "ff02::1"}, "Invalid target IP address.")):
        st, _, body = router.request("GET", "/x", h)
        assert (st, json.loads(body)["detail"]) == (400, detail)
    # /readyz and /metrics on the proxy port are sandbox paths; /healthz is the router's
    assert router.request("GET", "/readyz", {})[0] == 400
    st, hdrs, body = router.request("POST", "/healthz", {})
    assert (st, body, hdrs["content-type"]) == (200, b'{"status":"ok"}', "application/json")


def test_post_100mb_streamed_with_flat_memory(router, backend):
    size, piece = 100 * 1024 * 1024, b"\xa5" * (1024 * 1024)
    import hashlib
    want = hashlib.sha256()
    for _ in range(size // len(piece)):
        want.update(piece)
    before = router.status("VmHWM")

    def gen():
        for _ in range(size // len(piece)):
            yield piece
    h = sandbox_headers(port=backend.port)
    h["Content-Length"] = str(size)
    st, _, body = router.request("POST", "/count", h, body=gen(), timeout=120)
    assert st == 200, body
    assert json.loads(body) == {"length": size, "sha256": want.hexdigest()}
    grew_mib = (router.status("VmHWM") - before) / 1024
    # the body streams through bounded buffers (256 KiB per side); under ASan
    # allocator quarantine and redzones add their own bounded share
    bound = 64 if asan_build() else 16
    assert grew_mib < bound, f"router peak RSS grew by {grew_mib:.1f} MiB for a 100 MB upload"


def test_chunked_both_ways(router, backend):
    def gen():
        for i in range(50):
            yield b"%d-" % i * 1000
    st, _, body = router.request("POST", "/count", sandbox_headers(port=backend.port), body=gen())
    assert st == 200
    assert json.loads(body)["length"] == sum(len(b"%d-" % i * 1000) for i in range(50))
    st, hdrs, body = router.request("GET", "/chunked?n=7", sandbox_headers(port=backend.port))
    assert st == 200
    assert hdrs.get("transfer-encoding") == "chunked"
    assert body == b"".join(b"piece-%d\n" % i for i in range(7))


def test_large_response_and_head(router, backend):
    st, hdrs, body = router.request("GET", "/bytes?n=5000000", sandbox_headers(port=backend.port))
    assert (st, len(body), hdrs["content-length"]) == (200, 5000000, "5000000")
    st, hdrs, body = router.request("HEAD", "/echo", sandbox_headers(port=backend.port))
    assert st == 200 and body == b"" and int(hdrs["content-length"]) > 0
    st, _, body = router.request("DELETE", "/nothing-here", sandbox_headers(port=backend.port))
    assert (st, body) == (404, b'{"detail":"backend 404"}')


def test_keepalive_pool_reuses_connections(router, backend):
    c = http.client.HTTPConnection("127.0.0.1", router.port, timeout=10)
    for _ in range(20):
        c.request("GET", "/echo", headers=sandbox_headers(port=backend.port))
        r = c.getresponse()
        assert r.status == 200
        json.loads(r.read())
    c.close()
    m = router.metrics()
    idle = [ln for ln in m.splitlines() if ln.startswith('sandbox_router_upstream_connections{state="idle"}')]
    assert idle and float(idle[0].split()[-1]) >= 1, m


def test_websocket_echo_outlives_the_proxy_timeout(tmp_path):
    ws = WebSocketEcho()
    r = Router(tmp_path, ["--proxy-timeout=1s"]).wait_ready()
    try:
        s, f, status, resp = ws_connect(r.port, headers={**sandbox_headers(port=ws.port),
                                                         "Origin": "http://client.example",
                                                         "Sec-WebSocket-Protocol": "chat"})
        assert status.startswith("HTTP/1.1 101"), (status, resp)
        assert resp["upgrade"].lower() == "websocket"
        for i, size in enumerate((5, 300, 70000)):
            msg = bytes([65 + i]) * size
            s.sendall(ws_frame(msg))
            assert ws_read_frame(f) == (1, msg)
            if i == 1:
                time.sleep(1.5)  # beyond --proxy-timeout: tunnels are exempt
        s.sendall(ws_frame(b"bye", 8))
        assert ws_read_frame(f)[0] == 8
        s.close()
        seen = ws.handshakes[-1]
        assert "origin" not in seen and seen["sec-websocket-protocol"] == "chat"
        assert seen["connection"].lower() == "upgrade"
        wait_for(lambda: 'code="101"' in r.metrics(), timeout=10, desc="101 in metrics")
        # a plain request is still cut at the proxy timeout
        b = Backend()
        st, _, body = r.request("GET", "/slow?s=3", sandbox_headers(port=b.port))
        b.close()
        assert st == 504 and json.loads(body)["detail"] == "Timed out waiting for the backend sandbox: sb"
    finally:
        ws.close()
        assert r.stop() == 0
        r.assert_clean_log()


def test_backend_down_502_after_retries(router):
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()  # nothing listens there
    def counter(text, name):
        for ln in text.splitlines():
            if ln.startswith(name + " "):
                return float(ln.split()[-1])
        return 0.0
    retries = 'sandbox_router_upstream_retries_total{sandbox_namespace="default"}'
    before = counter(router.metrics(), retries)
    st, _, body = router.request("GET", "/x", sandbox_headers(port=port))
    assert (st, json.loads(body)["detail"]) == (502, "Could not connect to the backend sandbox: sb")
    m = router.metrics()
    assert counter(m, retries) - before == 3, "three retries (the default) before the 502"
    assert 'sandbox_router_upstream_errors_total{reason="dial",sandbox_namespace="default"}' in m


def test_backend_starting_late_is_reached_by_retries(tmp_path):
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    p = port.getsockname()[1]
    port.close()
    # backoff 200/400/800/800... ms: six retries cover a slow start under load
    r = Router(tmp_path, ["--upstream-max-retries=6"]).wait_ready()
    holder = {}

    def late():
        time.sleep(0.4)
        holder["b"] = Backend(port=p)
    t = threading.Thread(target=late)
    t.start()
    try:
        st, _, body = r.request("GET", "/echo", sandbox_headers(port=p))
        assert st == 200, body
    finally:
        t.join()
        holder["b"].close()
        assert r.stop() == 0


def test_backend_slow_504(router, backend):
    st, _, body = router.request("GET", "/slow?s=4", sandbox_headers(port=backend.port))
    assert (st, json.loads(body)["detail"]) == (504, "Timed out waiting for the backend sandbox: sb")
    # X-Sandbox-Timeout shortens the wait for one request
    st, _, _ = router.request("GET", "/slow?s=2", sandbox_headers(port=backend.port, **{"X-Sandbox-Timeout": "0.5"}))
    assert st == 504
    assert 'reason="timeout"' in router.metrics()


def test_body_limit_413(tmp_path, backend):
    r = Router(tmp_path, ["--max-request-body-bytes=1000"]).wait_ready()
    try:
        st, _, body = r.request("POST", "/count", sandbox_headers(port=backend.port), body=b"x" * 1001)
        assert (st, json.loads(body)["detail"]) == (413, "Request body too large.")
        st, _, body = r.request("POST", "/count", sandbox_headers(port=backend.port),
                                body=(b"y" * 300 for _ in range(10)))
        assert st == 413 and json.loads(body)["detail"] == "Request body too large."
        st, _, body = r.request("POST", "/count", sandbox_headers(port=backend.port), body=b"x" * 1000)
        assert st == 200 and json.loads(body)["length"] == 1000
    finally:
        assert r.stop() == 0
        r.assert_clean_log()


def test_probes_metrics_and_access_log(router, backend):
    assert router.get_probe("/healthz") == (200, '{"status":"ok"}')
    assert router.get_probe("/readyz") == (200, "ok")
    echo(router, backend, h={"User-Agent": "probe-test/1"})
    m = router.metrics()
    for name in ("sandbox_router_requests_total{", "sandbox_router_request_duration_seconds_bucket{",
                 "sandbox_router_inflight_requests ", "sandbox_router_build_info{",
                 "sandbox_router_authz_decisions_total{"):
        assert name in m, name
    assert 'sandbox_router_requests_total{code="200",method="GET",sandbox_namespace="default"}' in m
    line = wait_for(lambda: [json.loads(ln) for ln in router.text().splitlines()
                             if '"probe-test/1"' in ln], timeout=5, desc="access log line")[-1]
    assert line["logger"] == "sandbox-router.access" and line["msg"] == "request"
    assert (line["method"], line["path"], line["status"], line["sandbox_id"]) == ("GET", "/echo", 200, "sb")
    assert line["client_ip"] == "127.0.0.1" and line["bytes_out"] > 0
    assert not any('"path":"/healthz"' in ln for ln in router.text().splitlines())


def test_access_log_stays_utf8_json_for_latin1_headers(router, backend):
    """A User-Agent in Latin-1 (HTTP allows such bytes in a header value)
    still gives an access line that is UTF-8 JSON: the stray byte is U+FFFD."""
    echo(router, backend, h={"User-Agent": "probe-test/3 caf\xe9"})  # http.client sends 0xe9
    def line():
        with open(router.log, "rb") as f:
            raw = f.read()
        return [json.loads(ln.decode("utf-8")) for ln in raw.splitlines() if b"probe-test/3" in ln]
    rec = wait_for(line, timeout=5, desc="access log line")[-1]
    assert rec["user_agent"] == "probe-test/3 caf\ufffd", rec

def test_process_metrics(router):
    """The process_* families of client_golang's process collector on the
    metrics port (docs/router.md#metrics)."""
    check_process_metrics(router.metrics(), IMPORTED, pid=router.proc.pid)


def test_scoped_token(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("  0123456789abcdef0123456789abcdef  \n")
    r = Router(tmp_path, ["--authz-mode=scoped-token", f"--authz-scoped-token-secret-file={secret}",
                          "--upstream-max-retries=0", "--cluster-domain=invalid"]).wait_ready()
    import base64
    import hashlib
    import hmac

    def token(ns, name, exp):
        p = base64.urlsafe_b64encode(json.dumps({"ns": ns, "name": name, "exp": exp},
                                                separators=(",", ":")).encode()).rstrip(b"=").decode()
        mac = hmac.new(b"0123456789abcdef0123456789abcdef", b"agent-sandbox/scoped-token/v1." + p.encode(),
                       hashlib.sha256).digest()
        return f"v1.{p}." + base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    try:
        good = token("team", "alpha", int(time.time()) + 60)
        cases = [({}, 401, "unauthenticated"),
                 ({"Authorization": "Bearer " + good + "x"}, 401, "unauthenticated"),
                 ({"Authorization": "Bearer " + token("team", "alpha", int(time.time()) - 1)}, 401, "unauthenticated"),
                 ({"Authorization": "Bearer " + token("team", "beta", int(time.time()) + 60)}, 403, "forbidden"),
                 ({"Authorization": "Bearer " + good, "X-Sandbox-Pod-IP": "10.0.0.1"}, 403, "forbidden")]
        for extra, want, detail in cases:
            h = {"X-Sandbox-ID": "alpha", "X-Sandbox-Namespace": "team", **extra}
            st, _, body = r.request("GET", "/", h)
            assert (st, json.loads(body)["detail"]) == (want, detail), extra
        # allowed: the target is then the DNS name, which does not resolve here
        st, _, body = r.request("GET", "/", {"X-Sandbox-ID": "alpha", "X-Sandbox-Namespace": "team",
                                             "Authorization": "Bearer " + good})
        assert st == 502, body
        m = r.metrics()
        assert 'sandbox_router_authz_decisions_total{decision="deny",sandbox_namespace="team"} 5' in m
        assert 'sandbox_router_authz_decisions_total{decision="allow",sandbox_namespace="team"} 1' in m
    finally:
        assert r.stop() == 0
        r.assert_clean_log()


def test_graceful_shutdown_finishes_in_flight(tmp_path, backend):
    r = Router(tmp_path, ["--shutdown-timeout=10s"]).wait_ready()
    result = {}

    def slow():
        result["r"] = r.request("GET", "/slow?s=1.5", sandbox_headers(port=backend.port))
    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.5)
    r.proc.send_signal(15)
    # while requests drain, readiness says so (the probe listener goes last)
    assert wait_for(lambda: r.get_probe("/readyz") == (503, "draining"), timeout=5, desc="503 draining")
    t.join()
    assert result["r"][0] == 200 and result["r"][2] == b"late"
    assert r.proc.wait(timeout=15) == 0
    r.stop()
    r.assert_clean_log()


def test_config_errors_exit_2(tmp_path):
    import subprocess
    from router_util import router_binary
    bad = subprocess.run([router_binary(), "--authz-mode=nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--authz-mode" in bad.stderr
    cfg = tmp_path / "c.yaml"
    cfg.write_text("unknown-key: 1\n")
    bad = subprocess.run([router_binary(), f"--config={cfg}"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown key" in bad.stderr
    v = subprocess.run([router_binary(), "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("sandbox-router ")
    # a port in use: runtime error, exit 1, nothing left bound
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    used = s.getsockname()[1]
    p = subprocess.run([router_binary(), f"--http-bind-address=127.0.0.1:{used}",
                        "--metrics-bind-address=", "--health-probe-bind-address="],
                       capture_output=True, text=True, timeout=30)
    s.close()
    assert p.returncode == 1, p.stderr


def test_image_library_list_matches_router_ldd():
    """The image (Dockerfile) ships /sandbox-router next to the controller:
    the libraries it loads must be the image's list."""
    import os
    import subprocess
    from router_util import ROOT, router_binary
    p = subprocess.run([os.path.join(ROOT, "tools", "check-image-libs"), router_binary()],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def _openssl(*args):
    import subprocess
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def test_https_and_mtls(tmp_path, backend):
    """The TLS listener (mbedTLS): X-Forwarded-Proto https; with
    --mtls-mode=required a client without a certificate of the CA is refused
    at the handshake, one with it is served."""
    import ssl
    d = tmp_path
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"), "-days", "1", "-subj", "/CN=test-ca")
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                 "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.csr"), "-subj", f"/CN={name}")
        (d / f"{name}.ext").write_text(ext + "\n")
        _openssl("x509", "-req", "-in", str(d / f"{name}.csr"), "-CA", str(d / "ca.crt"), "-CAkey", str(d / "ca.key"),
                 "-CAcreateserial", "-out", str(d / f"{name}.crt"), "-days", "1", "-extfile", str(d / f"{name}.ext"))
    from router_util import free_port
    tls_port = free_port()
    r = Router(d, [f"--https-bind-address=127.0.0.1:{tls_port}", f"--tls-cert-file={d / 'server.crt'}",
                   f"--tls-key-file={d / 'server.key'}", f"--tls-client-ca-file={d / 'ca.crt'}",
                   "--mtls-mode=required"]).wait_ready()
    try:
        def get(with_cert):
            ctx = ssl.create_default_context(cafile=str(d / "ca.crt"))
            if with_cert:
                ctx.load_cert_chain(str(d / "client.crt"), str(d / "client.key"))
            c = http.client.HTTPSConnection("127.0.0.1", tls_port, timeout=10, context=ctx)
            try:
                c.request("GET", "/echo", headers=sandbox_headers(port=backend.port))
                resp = c.getresponse()
                return resp.status, resp.read()
            finally:
                c.close()
        st, body = get(True)
        assert st == 200, body
        got = {k.lower(): v for k, v in json.loads(body)["headers"]}
        assert got["x-forwarded-proto"] == "https"
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            get(False)
        # the plain listener is still there and says http
        hdrs, seen = echo(r, backend)
        assert {k.lower(): v for k, v in seen["headers"]}["x-forwarded-proto"] == "http"
    finally:
        assert r.stop() == 0
        r.assert_clean_log()


def test_client_gone_ends_its_command_through_the_router(tmp_path):
    """A client that closes its connection (a plain close: FIN, the request
    already sent) while its command runs in sandboxd behind the router: the
    router ends the exchange and its upstream connection, so sandboxd ends
    the command and what it started (issue 15 item 7, through the router)."""
    from sandboxd_util import Sandboxd, wait_dead, wait_pid_file
    s = Sandboxd(tmp_path / "root", tmp_path, args=["--max-processes=1"])
    r = Router(tmp_path, name="router-gone").wait_ready()
    script = "setsid sleep 60 & echo $! > {0}.bg; echo $$ > {0}.pid; exec sleep 60"
    try:
        for name, port, path, body in [
                ("rest", s.rest_port, "/v1/execute", {"config": {"shell": script.format("rest")}}),
                ("runtime", s.runtime_port, "/execute",
                 {"command": "sh -c '" + script.format("runtime") + "'"})]:
            c = http.client.HTTPConnection("127.0.0.1", r.port, timeout=30)
            c.request("POST", path, body=json.dumps(body),
                      headers={"Content-Type": "application/json", **sandbox_headers(port=port)})
            pid = wait_pid_file(os.path.join(s.root, name + ".pid"))
            bg = wait_pid_file(os.path.join(s.root, name + ".bg"))
            c.close()
            assert wait_dead(pid), f"{name}: the command outlived its client"
            assert wait_dead(bg), f"{name}: what it started outlived its client"
        # the one slot is free again
        st, _, body = r.request("POST", "/execute", {"Content-Type": "application/json",
                                                     **sandbox_headers(port=s.runtime_port)},
                                body=json.dumps({"command": "true"}))
        assert st == 200 and json.loads(body)["exit_code"] == 0, body
    finally:
        assert r.stop() == 0
        r.assert_clean_log()
        assert s.stop() == 0, s.text()
