#!/usr/bin/env python3
"""sandboxd benchmark: memory an /execute answer costs for a big output.

For each kind of output (ASCII text; NUL bytes, which the python-runtime's
text turns into U+FFFD, 3 bytes each; control bytes, which JSON escapes as
\\u0001, 6 bytes each) and each API (python-runtime POST /execute, REST POST
/v1/execute), a fresh sandboxd (memory an earlier request left to malloc
would hide the growth) runs one command printing --mib MiB on stdout, with
--max-output-bytes above it, and the growth of its peak RSS (VmHWM, reset
just before) is printed, also as a multiple of the output. --concurrent N
runs N such requests at once on one daemon instead.

Usage: bench/sandboxd_execute_memory.py [--build-dir build] [--mib 16] [--concurrent 1]
"""
import argparse
import http.client
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sandboxd import start  # noqa: E402  bench/sandboxd.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MB = 1 << 20

KINDS = {
    "ASCII text": "sh -c 'yes aaaaaaaaaaaaaaa | head -c {n}'",
    "NUL bytes": "head -c {n} /dev/zero",
    "control bytes": "sh -c \"yes '' | tr '\\\\n' '\\\\001' | head -c {n}\"",
}


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise SystemExit(f"no {field}")


def post(port, path, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        raise SystemExit(f"{path}: {r.status} {data[:200]!r}")
    return len(data)


def measure(binary, kind, api, mib, concurrent):
    base = tempfile.mkdtemp(prefix="sbxd-mem-")
    proc, rest, runtime = start(binary, base, f"--max-output-bytes={2 * mib}Mi")
    try:
        cmd = KINDS[kind].format(n=mib * MB)
        if api == "runtime":
            port, path, body = runtime, "/execute", {"command": cmd}
        else:
            port, path, body = rest, "/v1/execute", {"config": {"command": ["sh", "-c", cmd]}}
        with open(f"/proc/{proc.pid}/clear_refs", "w") as f:
            f.write("5")
        before = status_kb(proc.pid, "VmHWM")
        sizes = []
        threads = [threading.Thread(target=lambda: sizes.append(post(port, path, body)))
                   for _ in range(concurrent)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return (status_kb(proc.pid, "VmHWM") - before) / 1024, sizes[0] / MB
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.environ.get("AGENT_SANDBOX_BUILD_DIR",
                                                          os.path.join(ROOT, "build")))
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--concurrent", type=int, default=1)
    args = ap.parse_args()
    binary = os.path.join(args.build_dir, "cmd", "sandboxd", "sandboxd")
    print("command:", " ".join(sys.argv))
    print(f"machine: {os.cpu_count()} cores, {platform.machine()}, {platform.platform()}, "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"sandboxd: {binary}")
    print()
    print("| API | output | answer | peak RSS growth | per output byte |")
    print("|---|---|---|---|---|")
    for api, name in (("runtime", "POST /execute"), ("rest", "POST /v1/execute")):
        for kind in KINDS:
            grown, answer = measure(binary, kind, api, args.mib, args.concurrent)
            total = args.mib * args.concurrent
            each = f"{args.concurrent} x " if args.concurrent > 1 else ""
            print(f"| {name} | {each}{args.mib} MiB of {kind} | {answer:.1f} MiB | "
                  f"{grown:.1f} MiB | {grown / total:.2f}x |")


if __name__ == "__main__":
    main()
