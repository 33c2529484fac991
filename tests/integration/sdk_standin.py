"""A stand-in for the sandbox router in front of a python-runtime
(docs/upstream.md#router-request-contract, #python-runtime-api), for the SDK's wire tests until the real router
and sandboxd land: it answers the runtime's endpoints from a directory and
logs every request (method, path, headers, body size and digest) as one
JSON line, so a test can check what the SDK sent.

Not a fake of anything the tests claim to test: the router and the runtime
are not under test here, the SDK's requests are.

    python3 sdk_standin.py --root DIR --log FILE [--host 127.0.0.1] [--port 0]

prints "PORT <n>" once listening. Special commands of POST /execute:
`fail <status> <times> <key>` answers <status> the first <times> calls with
that key, then a result; `badjson` answers text; `badformat` answers
`{"exit_code": "x"}`; `sleep <s>` sleeps; anything else is echoed as stdout
"ran: <command>\n". GET /download/__zeros__<n> streams n zero bytes;
GET /download/__redirect__ answers 302 with a Location.
"""
import argparse
import hashlib
import json
import os
import shutil
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CHUNK = 1 << 16


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    root = "."
    log_path = "/dev/null"
    lock = threading.Lock()
    fail_counts: dict = {}

    def log_message(self, fmt, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        # headers and body go out in two writes: without this, Nagle holds
        # the body until the client's delayed ACK (40 ms a request)
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # ------------------------------------------------------------ body

    def body_chunks(self):
        """Yields the request body, Content-Length or chunked."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return
                left = size
                while left:
                    b = self.rfile.read(min(left, CHUNK))
                    left -= len(b)
                    yield b
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left:
                b = self.rfile.read(min(left, CHUNK))
                if not b:
                    return
                left -= len(b)
                yield b

    def record(self, **extra):
        entry = {"method": self.command, "path": self.path,
                 "headers": {k: v for k, v in self.headers.items()}, **extra}
        with self.lock, open(self.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def reply(self, status, body=b"", ctype="application/json", headers=()):
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def local(self, rest):
        """The file of a percent-encoded path under root."""
        rel = urllib.parse.unquote(rest).lstrip("/")
        return os.path.join(self.root, rel)

    # ------------------------------------------------------------ verbs

    def do_POST(self):
        if self.path == "/execute":
            raw = b"".join(self.body_chunks())
            self.record(body=raw.decode("utf-8", "replace"))
            return self.execute(json.loads(raw)["command"])
        if self.path == "/upload":
            return self.upload()
        self.record()
        self.reply(404, {"detail": "Not Found"})

    def execute(self, cmd):
        words = cmd.split()
        if words[0] == "fail":
            status, times, key = int(words[1]), int(words[2]), words[3]
            with self.lock:
                n = self.fail_counts[key] = self.fail_counts.get(key, 0) + 1
            if n <= times:
                return self.reply(status, {"detail": f"failure {n}"})
        if cmd == "badjson":
            return self.reply(200, b"this is not json", "text/plain")
        if cmd == "badformat":
            return self.reply(200, {"exit_code": "x"})
        if words[0] == "sleep":
            time.sleep(float(words[1]))
        self.reply(200, {"stdout": f"ran: {cmd}\n", "stderr": "", "exit_code": 0})

    def upload(self):
        """multipart/form-data with one part `file`, streamed to disk."""
        ctype = self.headers.get("Content-Type", "")
        boundary = ctype.split("boundary=", 1)[1].strip('"').encode()
        data = self.body_chunks()
        buf = b""
        for b in data:  # the part headers
            buf += b
            if b"\r\n\r\n" in buf:
                break
        head, buf = buf.split(b"\r\n\r\n", 1)
        disposition = [line for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-disposition")][0].decode()
        name = disposition.split('name="', 1)[1].split('"', 1)[0]
        filename = disposition.split('filename="', 1)[1].rsplit('"', 1)[0]
        path = os.path.join(self.root, filename)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        end = b"\r\n--" + boundary
        digest, size = hashlib.sha256(), 0
        with open(path, "wb") as f:
            for b in data:
                buf += b
                if len(buf) > len(end) + CHUNK:
                    keep = len(end)
                    f.write(buf[:-keep])
                    digest.update(buf[:-keep])
                    size += len(buf) - keep
                    buf = buf[-keep:]
            content = buf.split(end, 1)[0]
            f.write(content)
            digest.update(content)
            size += len(content)
        self.record(part=name, filename=filename, size=size, sha256=digest.hexdigest(),
                    part_headers=head.decode("utf-8", "replace"))
        self.reply(200, {"message": f"File '{filename}' uploaded successfully."})

    def do_GET(self):
        self.record()
        verb, _, rest = self.path.lstrip("/").partition("/")
        if verb == "download" and rest.startswith("__zeros__"):
            n = int(rest[len("__zeros__"):])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(n))
            self.end_headers()
            zeros = bytes(CHUNK)
            while n:
                k = min(n, CHUNK)
                self.wfile.write(zeros[:k])
                n -= k
            return
        if verb == "download" and rest.startswith("__fail__"):
            # __fail__<status>_<times>_<key>: as the `fail` command, for a GET
            status, times, key = rest[len("__fail__"):].split("_", 2)
            with self.lock:
                n = self.fail_counts[key] = self.fail_counts.get(key, 0) + 1
            if n <= int(times):
                return self.reply(int(status), {"detail": f"failure {n}"})
            return self.reply(200, b"after the failures", "application/octet-stream")
        if verb == "download" and rest == "__redirect__":
            return self.reply(302, b"", headers=[("Location", "http://elsewhere/")])
        path = self.local(rest)
        if verb == "download":
            if not os.path.isfile(path):
                return self.reply(404, {"message": "File not found"})
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(os.path.getsize(path)))
            self.end_headers()
            with open(path, "rb") as f:
                shutil.copyfileobj(f, self.wfile, CHUNK)
            return
        if verb == "list":
            if not os.path.isdir(path):
                return self.reply(404, {"message": "Path is not a directory"})
            out = []
            for e in os.scandir(path):
                st = e.stat()
                out.append({"name": e.name, "size": st.st_size,
                            "type": "directory" if e.is_dir() else "file",
                            "mod_time": st.st_mtime})
            return self.reply(200, out)
        if verb == "exists":
            return self.reply(200, {"path": urllib.parse.unquote(rest),
                                    "exists": os.path.exists(path)})
        self.reply(404, {"detail": "Not Found"})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # a client that hung up (its timeout, an aborted download) is normal here
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    Handler.root, Handler.log_path = a.root, a.log
    srv = Server((a.host, a.port), Handler)
    print(f"PORT {srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
