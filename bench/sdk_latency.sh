#!/usr/bin/env bash
# Python SDK benchmark: create_sandbox -> first command output, warm and cold
# (p50/p99 over --count sandboxes), and commands/s through the SDK.
#
# Usage: bench/sdk_latency.sh [--count N] [--concurrency 1,8,32] [--seconds S] [--settle S]
#                             [--router-url URL | --standin] [--build-dir DIR] [-- CONTROLLER COMMAND ...]
#   defaults: --count 100; data path: our router and sandboxd (tools/sandboxd-pods); controller:
#   ours from DIR (default build/) with --extensions. Without KUBECONFIG it
#   starts (and stops) a private control plane; see bench/README.md.
set -euo pipefail
exec python3 "$(cd "$(dirname "$0")" && pwd)/sdk_latency.py" "$@"
