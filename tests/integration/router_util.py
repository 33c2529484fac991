"""Helpers of the sandbox-router tests: the router process, loopback test
backends (HTTP on http.server, WebSocket echo and raw sockets), and small
HTTP/WebSocket clients that stream instead of buffering.

No cluster needed here; test_router_cluster.py adds the cluster parts.
"""
import base64
import hashlib
import http.client
import http.server
import json
import os
import socket
import socketserver
import struct
import subprocess
import threading
import time

from conftest import LoggedProcess, free_port, wait_for

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def build_dir():
    return os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build"))


def router_binary():
    b = os.path.join(build_dir(), "cmd", "router", "sandbox-router")
    assert os.path.exists(b), f"router binary not built: {b}"
    return b


def asan_build():
    """True when the router was built with AddressSanitizer (memory figures
    then include the sanitizer's quarantine and shadow memory)."""
    out = subprocess.run(["ldd", router_binary()], capture_output=True, text=True).stdout
    return "libasan" in out


class Router(LoggedProcess):
    """One sandbox-router process on free loopback ports, logging to `log`."""

    kind = "router"

    def __init__(self, logdir, extra_args=(), env=None, name="router", allow_loopback=True):
        self.port, self.metrics_port, self.probe_port = free_port(), free_port(), free_port()
        self.log = os.path.join(str(logdir), f"{name}.log")
        self.args = [router_binary(),
                     "--http-bind-address", f"127.0.0.1:{self.port}",
                     "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}",
                     "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}",
                     "--shutdown-timeout=5s"]
        if allow_loopback:
            self.args.append("--allow-loopback-pod-ip")
        self.args += list(extra_args)
        e = dict(os.environ if env is None else env)
        # a small ASan quarantine, so memory figures mean something there too
        if "ASAN_OPTIONS" in e or asan_build():
            e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=16").lstrip(":")
        self._logf = open(self.log, "a")
        self.proc = subprocess.Popen(self.args, stdout=self._logf, stderr=subprocess.STDOUT, env=e)

    def wait_ready(self, timeout=90):
        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"router exited ({self.proc.returncode}):\n{self.text()[-4000:]}")
            try:
                return self.get_probe("/readyz")[0] == 200
            except OSError:
                return False
        wait_for(ready, timeout=timeout, interval=0.05, desc="router /readyz")
        return self

    def get_probe(self, path, port=None):
        c = http.client.HTTPConnection("127.0.0.1", port or self.probe_port, timeout=5)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def metrics(self):
        return self.get_probe("/metrics", self.metrics_port)[1]

    def status(self, key):
        """A /proc/<pid>/status value in KiB (VmRSS, VmHWM)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise KeyError(key)

    def request(self, method, path, headers=None, body=None, timeout=30):
        """One request on a new connection: (status, headers dict, body bytes)."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()



def sandbox_headers(sid="sb", port=None, ip="127.0.0.1", ns=None, **extra):
    h = {"X-Sandbox-ID": sid}
    if port is not None:
        h["X-Sandbox-Port"] = str(port)
    if ip is not None:
        h["X-Sandbox-Pod-IP"] = ip
    if ns is not None:
        h["X-Sandbox-Namespace"] = ns
    h.update(extra)
    return h


# ------------------------------------------------------------------ backends

class _Handler(http.server.BaseHTTPRequestHandler):
    """Test sandbox: GET /echo (request as JSON), POST /count (reads the body
    in pieces: length and SHA-256), GET /chunked (a chunked response),
    GET /bytes?n=N (N bytes, Content-Length), GET /slow?s=S (answers after S
    seconds), anything else: 404."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def parse_request(self):
        ok = super().parse_request()
        if ok:
            self.server.seen.append((self.command, self.path, list(self.headers.items())))
        return ok

    def _send(self, status, body, ctype="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _query(self):
        q = {}
        if "?" in self.path:
            for kv in self.path.split("?", 1)[1].split("&"):
                k, _, v = kv.partition("=")
                q[k] = v
        return q

    def _read_body(self):
        """Length and SHA-256 of the body, read 64 KiB at a time."""
        h = hashlib.sha256()
        n = 0
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                left = size
                while left:
                    b = self.rfile.read(min(left, 65536))
                    h.update(b)
                    n += len(b)
                    left -= len(b)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left:
                b = self.rfile.read(min(left, 65536))
                if not b:
                    break
                h.update(b)
                n += len(b)
                left -= len(b)
        return n, h.hexdigest()

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        q = self._query()
        if path.startswith("/echo"):
            body = json.dumps({"method": self.command, "path": self.path,
                               "headers": [[k, v] for k, v in self.headers.items()],
                               "peer": self.client_address[0]}).encode()
            self._send(200, body, extra=[("X-Backend", "1")])
        elif path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for i in range(int(q.get("n", "5"))):
                piece = f"piece-{i}\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif path == "/bytes":
            n = int(q.get("n", "0"))
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = b"x" * 65536
            while n > 0:
                self.wfile.write(block[:min(n, len(block))])
                n -= min(n, len(block))
        elif path == "/slow":
            time.sleep(float(q.get("s", "1")))
            self._send(200, b"late")
        elif path == "/status":
            self._send(int(q.get("code", "200")), b"{}")
        else:
            self._send(404, b'{"detail":"backend 404"}')

    do_HEAD = do_GET
    do_DELETE = do_GET

    def do_POST(self):
        n, digest = self._read_body()
        self._send(200, json.dumps({"length": n, "sha256": digest}).encode())

    do_PUT = do_POST


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class Backend:
    """The HTTP test sandbox on host:port, in a thread."""

    def __init__(self, host="127.0.0.1", port=0):
        self.server = _Server((host, port), _Handler)
        self.server.seen = []  # (method, path, headers) of every request
        self.host, self.port = self.server.server_address[:2]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC11B85"


def ws_accept(key):
    return base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()


def ws_frame(payload, opcode=1, mask=True):
    """One final WebSocket frame (RFC 6455 §5.2), masked as a client sends it."""
    head = bytes([0x80 | opcode])
    n = len(payload)
    m = 0x80 if mask else 0
    if n < 126:
        head += bytes([m | n])
    elif n < 65536:
        head += bytes([m | 126]) + struct.pack("!H", n)
    else:
        head += bytes([m | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def ws_read_frame(sock_file):
    """Reads one frame: (opcode, payload), unmasking when masked."""
    b0, b1 = sock_file.read(2)
    n = b1 & 0x7f
    if n == 126:
        n = struct.unpack("!H", sock_file.read(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", sock_file.read(8))[0]
    key = sock_file.read(4) if b1 & 0x80 else None
    data = sock_file.read(n)
    if key:
        data = bytes(b ^ key[i % 4] for i, b in enumerate(data))
    return b0 & 0x0f, data


class WebSocketEcho:
    """A WebSocket echo sandbox (RFC 6455 handshake, then each frame back,
    unmasked) on a raw socket, one thread per connection. Records the
    handshake headers it saw."""

    def __init__(self, host="127.0.0.1"):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.handshakes = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        f = conn.makefile("rb")
        try:
            lines = []
            while True:
                line = f.readline()
                if line in (b"\r\n", b""):
                    break
                lines.append(line.decode().rstrip("\r\n"))
            headers = {}
            for ln in lines[1:]:
                k, _, v = ln.partition(":")
                headers[k.strip().lower()] = v.strip()
            self.handshakes.append(headers)
            conn.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n"
                          % ws_accept(headers.get("sec-websocket-key", ""))).encode())
            while True:
                op, data = ws_read_frame(f)
                if op == 8:  # close: answer it and stop
                    conn.sendall(ws_frame(data, 8, mask=False))
                    break
                conn.sendall(ws_frame(data, op, mask=False))
        except (OSError, ValueError):
            pass
        finally:
            f.close()
            conn.close()

    def close(self):
        self.sock.close()


def ws_connect(port, path="/ws", headers=None, timeout=10):
    """Opens a WebSocket through the router; returns (socket, file, status
    line, response headers)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    key = base64.b64encode(os.urandom(16)).decode()
    h = {"Host": f"127.0.0.1:{port}", "Upgrade": "websocket", "Connection": "Upgrade",
         "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}
    h.update(headers or {})
    s.sendall((f"GET {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
               + "\r\n").encode())
    f = s.makefile("rb")
    status = f.readline().decode().rstrip("\r\n")
    resp = {}
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        k, _, v = line.decode().partition(":")
        resp[k.strip().lower()] = v.strip()
    if status.split(" ")[1] == "101":
        assert resp.get("sec-websocket-accept") == ws_accept(key), resp
    return s, f, status, resp


def raw_exchange(port, data, timeout=5.0):
    """Sends raw bytes on a new connection and returns what comes back until
    the router closes it or `timeout` passes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        out = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            except ConnectionResetError:
                break
            if not b:
                break
            out += b
            if b"\r\n\r\n" in out and _complete(out):
                break
        return out
    finally:
        s.close()


def _complete(resp):
    """True when `resp` holds a whole response with a Content-Length body."""
    head, _, body = resp.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            return len(body) >= int(v)
    return False


def status_of(resp):
    return int(resp.split(b" ", 2)[1]) if resp.startswith(b"HTTP/1.") else None


class GateProxy:
    """A TCP proxy to host:port (TLS passes through untouched) whose client
    to server direction can be held: while the gate is closed, no byte a
    client sends goes on, so every request through it hangs (a stand-in for
    an API server that has stopped answering). `held` counts the chunks
    waiting at the gate now."""

    def __init__(self, host, port):
        self.target = (host, port)
        self.gate = threading.Event()
        self.gate.set()
        self.lock = threading.Lock()
        self.held = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(self.target)
            except OSError:
                c.close()
                continue
            self.conns += [c, u]
            threading.Thread(target=self._pump, args=(c, u, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, False), daemon=True).start()

    def _pump(self, src, dst, gated):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if gated and not self.gate.is_set():
                    with self.lock:
                        self.held += 1
                    self.gate.wait()
                    with self.lock:
                        self.held -= 1
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close_gate(self):
        self.gate.clear()

    def open_gate(self):
        self.gate.set()

    def close(self):
        self.closed = True
        self.gate.set()
        self.sock.close()
        for s in self.conns:
            try:
                s.close()
            except OSError:
                pass
