#!/usr/bin/env python3
"""sandboxd benchmark: command round trips and file transfer throughput,
ours beside upstream's runtimes in the same run.

Starts the built sandboxd (from --build-dir) on a temporary root and free
loopback ports, and, when given their commands, upstream's python-runtime
(--upstream-runtime) and upstream's Go sandboxd (--upstream-sandboxd), then
measures each target in turn:
- POST /execute {"command": "true"} (the python-runtime API): requests/s,
  p50, p99, closed loop, --concurrency keep-alive connections (wrk with a
  Lua script that also counts answers whose exit_code is not 0);
- POST /v1/execute {"config": {"command": ["true"]}} (our REST process API;
  upstream's Go sandboxd serves Execute over gRPC only, so this row compares
  with upstream's python-runtime);
- download of a 100 MiB file: GET /v1/files/{path} (ours, upstream's
  sandboxd) and GET /download/{path} (ours, upstream's python-runtime),
  curl writing to /dev/null: MB/s, best of --repeat;
- upload of the same file: PUT /v1/files/{path} (raw body) and POST /upload
  (multipart), curl from the file: MB/s, best of --repeat;
then every ratio ours/upstream and each server's peak RSS (VmHWM).

Upstream's python-runtime (examples/python-runtime-sandbox in upstream's
repository, run with uvicorn) works in /app, which it hard-codes: the
benchmark creates /app when it is missing and removes what it put there.

Usage: bench/sandboxd.py [--build-dir build] [--seconds 5] [--concurrency 4]
         [--repeat 3] [--only execute,download,upload] [--sandboxd-args '...']
         [--upstream-runtime 'CMD ... {port} ...']
         [--upstream-sandboxd 'CMD ... {root} {rest} {grpc} ...']
  e.g. --upstream-runtime '/work/upstream-venv/bin/uvicorn main:app
         --app-dir /work/upstream/examples/python-runtime-sandbox
         --host 127.0.0.1 --port {port} --log-level warning'
       --upstream-sandboxd '/work/upstream-bin/sandboxd --root-dir {root}
         --rest-port {rest} --grpc-port {grpc}'
Needs wrk and curl (Debian's; installed with apt-get when missing and root).
"""
import argparse
import http.client
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE = 100 << 20

WRK_SCRIPT = r"""
wrk.method = "POST"
wrk.body = os.getenv("SBXD_BENCH_BODY")
wrk.headers["Content-Type"] = "application/json"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0 end
function response(status, headers, body)
  if status ~= 200 or not (body:find('"exit_code":0', 1, true) or
                           body:find('"exit_code": 0', 1, true) or
                           body:find('"exitCode":0', 1, true)) then
    bad = bad + 1
  end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + t:get("bad") end
  io.write(string.format("BENCH bad=%d\n", n))
end
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port, path, proc, what):
    for _ in range(400):
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode} before answering")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not answer GET {path} on port {port}")


def start(binary, base, *extra):
    """sandboxd on root `base` and free loopback ports, answering /v1/health:
    (process, REST port, runtime port)."""
    rest, runtime = free_port(), free_port()
    proc = subprocess.Popen([binary, "--root-dir", base, "--rest-port", str(rest),
                             "--runtime-port", str(runtime), "--log-level", "warn", *extra])
    wait_http(rest, "/v1/health", proc, binary)
    return proc, rest, runtime


def start_template(template, what, check_path, **ports):
    cmd = shlex.split(template.format(**ports))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    port = ports.get("port") or ports.get("rest")
    wait_http(port, check_path, proc, what)
    return proc


def to_ms(v):
    n = float(re.match(r"[\d.]+", v).group(0))
    if v.endswith("us"):
        return n / 1000
    if v.endswith("ms"):
        return n
    return n * 1000


def load(port, path, body, seconds, concurrency, script):
    """wrk closed loop: (requests/s, p50 ms, p99 ms, failed answers)."""
    env = dict(os.environ, SBXD_BENCH_BODY=body)
    threads = min(2, concurrency)
    r = subprocess.run(["wrk", f"-t{threads}", f"-c{concurrency}", f"-d{seconds:g}s",
                        "--latency", "-s", script, f"http://127.0.0.1:{port}{path}"],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"wrk failed ({r.returncode}): {r.stderr.strip() or r.stdout}")
    out = r.stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = to_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))
    p99 = to_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))
    bad = int(re.search(r"BENCH bad=(\d+)", out).group(1))
    m = re.search(r"Socket errors: (.*)", out)
    if m:
        bad += sum(int(x) for x in re.findall(r"\d+", m.group(1)))
    return rps, p50, p99, bad


def curl_rate(args, size, expect):
    """One curl transfer of SIZE bytes of content: MB/s (curl's own timing).
    `size`: the exact byte count curl must report moved, or None for a
    multipart upload, whose framing adds a few bytes."""
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w",
                          "%{http_code} %{size_download} %{size_upload} %{time_total}", *args],
                         capture_output=True, text=True, check=True).stdout.split()
    code, down, up, total = int(out[0]), int(out[1]), int(out[2]), float(out[3])
    moved = down if expect == "down" else up
    if code not in (200, 201, 204) or moved < SIZE or (size is not None and moved != size):
        raise SystemExit(f"curl {' '.join(args)}: status {code}, {moved} of {SIZE} bytes")
    return SIZE / total / 1e6


def vmhwm_mib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def need_tools():
    missing = [t for t in ("wrk", "curl") if not shutil.which(t)]
    if missing and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=False,
                       stdout=subprocess.DEVNULL, env=dict(os.environ,
                                                           DEBIAN_FRONTEND="noninteractive"))
        missing = [t for t in missing if not shutil.which(t)]
    if missing:
        raise SystemExit(f"bench/sandboxd.py needs {' and '.join(missing)} (apt-get install)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR",
                                                          os.path.join(ROOT, "build")))
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="execute,download,upload",
                    help="comma-separated phases: execute, download, upload")
    ap.add_argument("--sandboxd-args", default="",
                    help="more flags for our sandboxd, e.g. '--idle-keepers 0'")
    ap.add_argument("--upstream-runtime", default="",
                    help="command starting upstream's python-runtime; {port} is replaced")
    ap.add_argument("--upstream-sandboxd", default="",
                    help="command starting upstream's sandboxd; {root}, {rest}, {grpc} replaced")
    args = ap.parse_args()
    phases = set(args.only.split(","))
    need_tools()
    binary = os.path.join(args.build_dir, "cmd", "sandboxd", "sandboxd")
    tmp = tempfile.mkdtemp(prefix="sbxd-bench-")
    base = os.path.join(tmp, "ours")
    up_root = os.path.join(tmp, "upstream-sandboxd")
    os.makedirs(base)
    os.makedirs(up_root)
    src = os.path.join(tmp, "big.bin")
    with open(src, "wb") as f:
        block = os.urandom(1 << 20)
        for _ in range(SIZE >> 20):
            f.write(block)
    for d in (base, up_root):
        os.link(src, os.path.join(d, "big.bin"))
    script = os.path.join(tmp, "execute.lua")
    with open(script, "w") as f:
        f.write(WRK_SCRIPT)

    procs = {}
    made_app = False
    app_files = []
    try:
        procs["ours"], rest, runtime = start(binary, base, *shlex.split(args.sandboxd_args))
        up_rt_port = up_rest = None
        if args.upstream_runtime:
            if not os.path.isdir("/app"):
                os.makedirs("/app")
                made_app = True
            dst = "/app/sbxd-bench-big.bin"
            shutil.copyfile(src, dst)
            app_files += [dst, "/app/sbxd-bench-up.bin"]
            up_rt_port = free_port()
            procs["upstream python-runtime"] = start_template(
                args.upstream_runtime, "upstream python-runtime", "/", port=up_rt_port)
        if args.upstream_sandboxd:
            up_rest, up_grpc = free_port(), free_port()
            procs["upstream sandboxd"] = start_template(
                args.upstream_sandboxd, "upstream sandboxd", "/v1/health",
                root=up_root, rest=up_rest, grpc=up_grpc)

        print("command:", " ".join(shlex.quote(a) for a in sys.argv))
        print(f"machine: {os.cpu_count()} cores, {platform.machine()}, {platform.platform()}, "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"ours: {binary}")
        for name, t in (("upstream python-runtime", args.upstream_runtime),
                        ("upstream sandboxd", args.upstream_sandboxd)):
            if t:
                print(f"{name}: {t}")
        print()
        print("| Figure | Ours | Upstream | Ours / upstream |")
        print("|---|---|---|---|")

        def row(name, ours, theirs, fmt, key=lambda v: v):
            """A table row; the ratio is of key(value), higher is better."""
            if theirs is None:
                print(f"| {name} | {fmt(ours)} | (not run) | |")
            else:
                print(f"| {name} | {fmt(ours)} | {fmt(theirs)} | "
                      f"**{key(ours) / key(theirs):.2f}x** |")
            sys.stdout.flush()

        def cmd_fmt(v):
            rps, p50, p99, bad = v
            return (f"{rps:,.0f}/s, p50 {p50:.2f} ms, p99 {p99:.2f} ms"
                    f"{f', {bad} failed' if bad else ''}")

        if "execute" in phases:
            c = args.concurrency
            theirs = None
            if up_rt_port:
                theirs = load(up_rt_port, "/execute", '{"command": "true"}', args.seconds, c,
                              script)
            ours = load(runtime, "/execute", '{"command": "true"}', args.seconds, c, script)
            row(f"POST /execute `true`, {c} clients (vs python-runtime)", ours, theirs,
                cmd_fmt, key=lambda v: v[0])
            ours = load(rest, "/v1/execute", '{"config": {"command": ["true"]}}',
                        args.seconds, c, script)
            row(f"POST /v1/execute `true`, {c} clients (vs python-runtime /execute)", ours,
                theirs, cmd_fmt, key=lambda v: v[0])

        def best(fn):
            return max(fn() for _ in range(args.repeat))

        mbs = lambda v: f"{v:,.0f} MB/s"  # noqa: E731
        if "download" in phases:
            theirs = None
            if up_rest:
                theirs = best(lambda: curl_rate(
                    [f"http://127.0.0.1:{up_rest}/v1/files/big.bin"], SIZE, "down"))
            ours = best(lambda: curl_rate([f"http://127.0.0.1:{rest}/v1/files/big.bin"],
                                          SIZE, "down"))
            row(f"GET /v1/files (100 MiB), best of {args.repeat} (vs Go sandboxd)", ours,
                theirs, mbs)
            theirs = None
            if up_rt_port:
                theirs = best(lambda: curl_rate(
                    [f"http://127.0.0.1:{up_rt_port}/download/sbxd-bench-big.bin"], SIZE,
                    "down"))
            ours = best(lambda: curl_rate([f"http://127.0.0.1:{runtime}/download/big.bin"],
                                          SIZE, "down"))
            row(f"GET /download (100 MiB), best of {args.repeat} (vs python-runtime)", ours,
                theirs, mbs)
        if "upload" in phases:
            theirs = None
            if up_rest:
                theirs = best(lambda: curl_rate(
                    ["-T", src, f"http://127.0.0.1:{up_rest}/v1/files/up.bin"], SIZE, "up"))
            ours = best(lambda: curl_rate(
                ["-T", src, f"http://127.0.0.1:{rest}/v1/files/up.bin"], SIZE, "up"))
            row(f"PUT /v1/files (100 MiB), best of {args.repeat} (vs Go sandboxd)", ours,
                theirs, mbs)
            # multipart: the size curl reports includes the part's framing
            framed = lambda port, name: curl_rate(  # noqa: E731
                ["-F", f"file=@{src};filename={name}", f"http://127.0.0.1:{port}/upload"],
                None, "up")
            theirs = None
            if up_rt_port:
                theirs = best(lambda: framed(up_rt_port, "sbxd-bench-up.bin"))
            ours = best(lambda: framed(runtime, "up.bin"))
            row(f"POST /upload (100 MiB, multipart), best of {args.repeat} (vs python-runtime)",
                ours, theirs, mbs)
        print()
        for name, p in procs.items():
            print(f"peak RSS (VmHWM) of {name}: {vmhwm_mib(p.pid):.1f} MiB")
    finally:
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        for f in app_files:
            try:
                os.unlink(f)
            except OSError:
                pass
        if made_app:
            shutil.rmtree("/app", ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
