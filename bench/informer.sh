#!/usr/bin/env bash
# Informer benchmark: 10,000 realistic Pods on the local control plane.
# Prints LIST-to-cache rate and resident memory per cached Pod (full objects,
# the controller's "diet" as cJSON, and the diet as compact sbx_pod structs),
# offline watch-stream decode+store rate, Pod codec decode/encode rate, and
# watch events/s under a write burst.
#
# Usage: bench/informer.sh [PODS]   (default 10000; needs `meson compile -C build`,
#        or AGENT_SANDBOX_BUILD_DIR=<dir> for another build directory)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-10000}
kubeconfig=$(tools/local-cluster up | tail -n 1)
export KUBECONFIG="$kubeconfig"
b=${AGENT_SANDBOX_BUILD_DIR:-build}/bench/informer_pods
ns=bench-informer
echo "# $(date -u +%FT%TZ) $(uname -m), $(nproc) cores, $(awk '/MemTotal/ {print $2/1048576 " GiB"}' /proc/meminfo); command: bench/informer.sh $n"
tools/local-cluster kubectl delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
$b setup "$n" "$ns"
$b cache "$ns" full
$b cache "$ns" diet
$b cache "$ns" compact
$b codec "$ns"
$b decode "$ns"
$b watch "$ns"
tools/local-cluster kubectl delete namespace "$ns" --wait=false >/dev/null
