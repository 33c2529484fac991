#!/usr/bin/env python3
"""sandboxd benchmark: command round trips and file download throughput.

Starts the built sandboxd (from --build-dir) on a temporary root and free
loopback ports, then measures, each for --seconds with --concurrency client
threads (one keep-alive connection each, http.client, no extra libraries):
- python-runtime POST /execute {"command": "true"}: requests/s, p50, p99;
- sandboxd POST /v1/execute {"config": {"command": ["true"]}}: the same;
- download of a 100 MiB file, GET /v1/files/{path} and GET /download/{path},
  one client reading 1 MiB at a time: MB/s (best of --repeat);
plus sandboxd's peak RSS (VmHWM) at the end.

The upstream python-runtime (examples/python-runtime-sandbox in upstream's
repository) is not a published package, so it cannot be installed here to
run side by side: these figures are ours alone (docs/upstream.md#tests-and-figures has no
published sandboxd figures either).

Usage: bench/sandboxd.py [--build-dir build] [--seconds 5] [--concurrency 4]
"""
import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, base, *extra):
    """sandboxd on root `base` and free loopback ports, answering /v1/health:
    (process, REST port, runtime port)."""
    rest, runtime = free_port(), free_port()
    proc = subprocess.Popen([binary, "--root-dir", base, "--rest-port", str(rest),
                             "--runtime-port", str(runtime), "--log-level", "warn", *extra])
    for _ in range(200):
        try:
            c = http.client.HTTPConnection("127.0.0.1", rest, timeout=1)
            c.request("GET", "/v1/health")
            if c.getresponse().status == 200:
                break
        except OSError:
            time.sleep(0.05)
    return proc, rest, runtime


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, int(round(p / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[k]


def load(port, path, body, seconds, concurrency):
    """Closed loop: each thread sends the next request when the last answered."""
    lat = [[] for _ in range(concurrency)]
    errors = [0] * concurrency
    stop_at = time.monotonic() + seconds
    payload = json.dumps(body).encode()

    def worker(i):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.monotonic() < stop_at:
            t0 = time.perf_counter()
            c.request("POST", path, payload, {"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            dt = time.perf_counter() - t0
            ok = r.status == 200 and (b'"exit_code":0' in data or b'"exitCode":0' in data)
            if ok:
                lat[i].append(dt)
            else:
                errors[i] += 1
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    all_lat = sorted(x for l in lat for x in l)
    return len(all_lat) / wall, percentile(all_lat, 50), percentile(all_lat, 99), sum(errors)


def download(port, path, size):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    t0 = time.perf_counter()
    c.request("GET", path)
    r = c.getresponse()
    n = 0
    while True:
        chunk = r.read(1 << 20)
        if not chunk:
            break
        n += len(chunk)
    dt = time.perf_counter() - t0
    c.close()
    if n != size or r.status != 200:
        raise SystemExit(f"download {path}: status {r.status}, {n} of {size} bytes")
    return size / dt / 1e6


def vmhwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR",
                                                          os.path.join(ROOT, "build")))
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    binary = os.path.join(args.build_dir, "cmd", "sandboxd", "sandboxd")
    base = tempfile.mkdtemp(prefix="sbxd-bench-")
    proc, rest, runtime = start(binary, base)
    try:
        size = 100 << 20
        with open(os.path.join(base, "big.bin"), "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(100):
                f.write(block)

        print("command:", " ".join(sys.argv))
        print(f"machine: {os.cpu_count()} cores, {platform.machine()}, {platform.platform()}, "
              f"load average {os.getloadavg()[0]:.2f}")
        print(f"sandboxd: {binary}")
        print()
        print("| Figure | Value |")
        print("|---|---|")
        for name, port, path, body in (
                ("python-runtime POST /execute `true`", runtime, "/execute", {"command": "true"}),
                ("REST POST /v1/execute `true`", rest, "/v1/execute",
                 {"config": {"command": ["true"]}})):
            rps, p50, p99, errs = load(port, path, body, args.seconds, args.concurrency)
            print(f"| {name}, {args.concurrency} clients | {rps:,.0f} req/s, p50 {p50 * 1e3:.2f} ms, "
                  f"p99 {p99 * 1e3:.2f} ms{f', {errs} errors' if errs else ''} |")
        for name, port, path in (("GET /v1/files/big.bin (100 MiB)", rest, "/v1/files/big.bin"),
                                 ("GET /download/big.bin (100 MiB)", runtime, "/download/big.bin")):
            best = max(download(port, path, size) for _ in range(args.repeat))
            print(f"| {name}, best of {args.repeat} | {best:,.0f} MB/s |")
        print(f"| sandboxd peak RSS (VmHWM) after all of it | {vmhwm_mib(proc.pid):.1f} MiB |")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
