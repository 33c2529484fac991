#!/usr/bin/env bash
# Router throughput, latency and idle-connection memory, on loopback, with
# wrk (Debian's) against a no-op backend (nginx answering 200 "ok"):
#   (a) the backend directly,
#   (b) the router under test (default: build/cmd/router/sandbox-router),
#   (c) nginx (Debian's) configured as the equivalent reverse proxy
#       (keep-alive upstream, X-Forwarded-* set, Authorization dropped),
# at concurrency 10, 50 and 200, in one run: requests/s and p50/p99. Then the
# router's resident memory with 10,000 idle client connections.
#
# Each target runs ROUNDS times per concurrency, interleaved (direct,
# router, nginx, direct, ...), and the medians are printed, with the
# proxy's CPU time per request (the router process; the proxy nginx's
# workers, which serve nothing else): on a shared machine the CPU figure
# moves less than the throughput.
#
# Usage: bench/router.sh [DURATION_SECONDS]   (default 10)
#   ROUTER_CMD="path [args]"  the router to measure (default: ours, with
#                             --upstream-max-idle-per-host=256 as nginx's
#                             keepalive 256); it gets the Go router's
#                             listener flags (--http-bind-address,
#                             --metrics-bind-address, --health-probe-bind-address,
#                             --allow-loopback-pod-ip), so any router with
#                             upstream's flag names can be measured the same way
#   IDLE_CONNS=N              idle connections for the memory figure (10000)
#   WORKERS=N                 nginx worker processes and router loops (nproc)
#   ROUNDS=N                  runs of each target per concurrency (3)
# Installs wrk and nginx with apt-get when they are missing (root).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-10}
# idle upstream connections kept as nginx's `keepalive 256` below keeps them
# (ours: per sandbox and loop thread, default 64, which at c=200 closes and
# reopens connections)
router_cmd=${ROUTER_CMD:-$root/build/cmd/router/sandbox-router --upstream-max-idle-per-host=256}
idle=${IDLE_CONNS:-10000}
workers=${WORKERS:-$(nproc)}
rounds=${ROUNDS:-3}

need=()
command -v wrk >/dev/null || need+=(wrk)
[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null || need+=(nginx)
if ((${#need[@]})); then
  echo "bench/router.sh: installing ${need[*]} (Debian packages)" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
read -r -a rcmd <<<"$router_cmd"
[ -x "${rcmd[0]}" ] || { echo "bench/router.sh: no router at ${rcmd[0]} (meson compile -C build)" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
BACKEND=$(port) NGX=$(port) RPORT=$(port) RMET=$(port) RPROBE=$(port)

# nginx: the no-op backend, and apart from it the reverse proxy in front of
# it (two instances, so that the proxy's CPU time is its own)
mkdir -p "$tmp/ngx" "$tmp/back"
cat >"$tmp/back/nginx.conf" <<EOF
worker_processes $workers;
pid $tmp/back/nginx.pid;
error_log $tmp/back/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $tmp/back/body; proxy_temp_path $tmp/back/proxy;
  fastcgi_temp_path $tmp/back/fcgi; uwsgi_temp_path $tmp/back/uwsgi; scgi_temp_path $tmp/back/scgi;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:$BACKEND; location / { return 200 "ok\n"; } }
}
EOF
cat >"$tmp/ngx/nginx.conf" <<EOF
worker_processes $workers;
pid $tmp/ngx/nginx.pid;
error_log $tmp/ngx/error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path $tmp/ngx/body; proxy_temp_path $tmp/ngx/proxy;
  fastcgi_temp_path $tmp/ngx/fcgi; uwsgi_temp_path $tmp/ngx/uwsgi; scgi_temp_path $tmp/ngx/scgi;
  keepalive_requests 1000000;
  upstream sandbox { server 127.0.0.1:$BACKEND; keepalive 256; }
  server {
    listen 127.0.0.1:$NGX;
    access_log $tmp/ngx/access.log;
    location / {
      proxy_pass http://sandbox;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host 127.0.0.1:$BACKEND;
      proxy_set_header X-Forwarded-For \$remote_addr;
      proxy_set_header X-Forwarded-Host \$host;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header Forwarded "";
      proxy_set_header Authorization "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
EOF
"$NGINX" -p "$tmp/back" -c "$tmp/back/nginx.conf" -g 'daemon off;' 2>>"$tmp/back/error.log" &
pids+=($!)
"$NGINX" -p "$tmp/ngx" -c "$tmp/ngx/nginx.conf" -g 'daemon off;' 2>>"$tmp/ngx/error.log" &
ngx_master=$!
pids+=($ngx_master)

# the router, logging its access lines to a file as nginx does
"${rcmd[@]}" --http-bind-address="127.0.0.1:$RPORT" --metrics-bind-address="127.0.0.1:$RMET" \
  --health-probe-bind-address="127.0.0.1:$RPROBE" --allow-loopback-pod-ip \
  >"$tmp/router.log" 2>&1 &
rpid=$!
pids+=($rpid)
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$RPROBE/readyz" >/dev/null 2>&1 && curl -fs "http://127.0.0.1:$BACKEND/" >/dev/null 2>&1 && break
  sleep 0.1
done

hdrs=(-H "X-Sandbox-ID: bench" -H "X-Sandbox-Pod-IP: 127.0.0.1" -H "X-Sandbox-Port: $BACKEND")
curl -fs "${hdrs[@]}" "http://127.0.0.1:$RPORT/" >/dev/null || { echo "router does not proxy:"; cat "$tmp/router.log"; exit 1; }
curl -fs "${hdrs[@]}" "http://127.0.0.1:$NGX/" >/dev/null || { echo "nginx does not proxy"; exit 1; }

echo "# bench/router.sh $secs  ($(date -u +%FT%TZ))"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# router: $router_cmd (loops: one per CPU); nginx $("$NGINX" -v 2>&1 | sed 's/.*\///') with $workers workers; wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}')"
echo "# wrk -t2 -c{10,50,200} -d${secs}s --latency, $rounds rounds interleaved, medians; backend: nginx 'return 200' on loopback"
printf '%-8s %5s %10s %9s %9s %11s\n' target conc req/s p50_ms p99_ms cpu_us/req

declare -A RPS P50 P99 CPU S_RPS S_P50 S_P99 S_CPU
to_ms() { # wrk latency "1.23ms" / "512.00us" / "1.02s" -> ms
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n = n; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }'
}
ticks() { # CPU clock ticks (user + system) of the given pids
  local t=0 p
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
  done
  echo "$t"
}
median() { # of the numbers given as arguments ("-" when none)
  printf '%s\n' "$@" | { grep -E '^[0-9.]+$' || true; } | sort -n |
    awk '{ v[NR] = $1 } END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
proxy_pids() { # the processes whose CPU time is the target's
  case $1 in
    router) echo "$rpid" ;;
    nginx) pgrep -P "$ngx_master" | tr '\n' ' ' ;;
  esac
}
run() { # name url conc [headers...]: one round, added to the name's samples
  local name=$1 url=$2 c=$3; shift 3
  local out pp t0 t1 rps n p50 p99 cpu
  pp=$(proxy_pids "$name")
  # shellcheck disable=SC2086
  t0=$(ticks $pp)
  out=$(wrk -t2 -c"$c" -d"${secs}s" --latency "$@" "$url")
  # shellcheck disable=SC2086
  t1=$(ticks $pp)
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  cpu=$(awk -v t=$((t1 - t0)) -v n="${n:-0}" -v hz="$(getconf CLK_TCK)" -v has="$pp" \
        'BEGIN { if (has == "" || n == 0) print "-"; else printf "%.1f", t * 1e6 / hz / n }')
  if grep -q "Non-2xx" <<<"$out"; then echo "warning: $name c=$c had non-2xx answers" >&2; fi
  S_RPS[$name,$c]+=" $rps" S_P50[$name,$c]+=" $p50" S_P99[$name,$c]+=" $p99" S_CPU[$name,$c]+=" $cpu"
}
for c in 10 50 200; do
  for _ in $(seq "$rounds"); do
    run direct "http://127.0.0.1:$BACKEND/" "$c"
    run router "http://127.0.0.1:$RPORT/" "$c" "${hdrs[@]}"
    run nginx "http://127.0.0.1:$NGX/" "$c" "${hdrs[@]}"
  done
  for name in direct router nginx; do
    # shellcheck disable=SC2086
    { RPS[$name,$c]=$(median ${S_RPS[$name,$c]}); P50[$name,$c]=$(median ${S_P50[$name,$c]})
      P99[$name,$c]=$(median ${S_P99[$name,$c]}); CPU[$name,$c]=$(median ${S_CPU[$name,$c]}); }
    printf '%-8s %5s %10.0f %9s %9s %11s\n' "$name" "$c" "${RPS[$name,$c]}" "${P50[$name,$c]}" \
      "${P99[$name,$c]}" "${CPU[$name,$c]}"
  done
done
echo
echo "# ratios (router / other): throughput, p99 latency, proxy CPU per request"
for c in 10 50 200; do
  awk -v c="$c" -v r="${RPS[router,$c]}" -v d="${RPS[direct,$c]}" -v n="${RPS[nginx,$c]}" \
      -v rp="${P99[router,$c]}" -v dp="${P99[direct,$c]}" -v np="${P99[nginx,$c]}" \
      -v rc="${CPU[router,$c]}" -v nc="${CPU[nginx,$c]}" \
    'BEGIN { printf "c=%-4s rps router/direct %.2f  router/nginx %.2f   p99 router/direct %.2f  router/nginx %.2f   cpu/req router/nginx %.2f\n", c, r/d, r/n, rp/dp, rp/np, (nc > 0 ? rc/nc : 0) }'
done
echo
echo "# resident memory with $idle idle client connections"
python3 - "$rpid" "$RPORT" "$idle" <<'EOF'
import os, resource, socket, struct, sys, time
pid, port, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1000), hard))
def rss():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
before = rss()
socks = []
for i in range(n):
    s = socket.socket(); s.setblocking(False); s.connect_ex(("127.0.0.1", port)); socks.append(s)
    if i % 500 == 499:
        time.sleep(0.02)
deadline = time.time() + 30
while len(os.listdir(f"/proc/{pid}/fd")) < n and time.time() < deadline:
    time.sleep(0.1)
time.sleep(0.5)
after = rss()
print(f"router RSS: {before/1024:.1f} MiB before, {after/1024:.1f} MiB with {n} idle connections "
      f"(+{(after-before)/1024:.1f} MiB, {(after-before)/n:.2f} KiB each)")
for s in socks:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)); s.close()
EOF
