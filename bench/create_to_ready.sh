#!/usr/bin/env bash
# Sandbox create-to-Ready benchmark: latency p50/p90/p99, throughput, and the
# controller's peak RSS and CPU seconds, for N Sandboxes created at R/s.
#
# Usage: bench/create_to_ready.sh [--count N] [--rate R] [--build-dir DIR] [--timeout S]
#                                 [-- CONTROLLER COMMAND ... [-- ANOTHER COMMAND ...]]
#   defaults: --count 1000 --rate 50; command: our controller from DIR (default
#   build/), leader election off, as the deploy/ ServiceAccount. `{kubeconfig}`
#   in a command is replaced by that ServiceAccount's kubeconfig (also in its
#   KUBECONFIG). Several commands: each measured in turn, same workload.
#   Without KUBECONFIG it starts (and stops) a private control plane with enough
#   kwok nodes; see bench/README.md and the docstring of create_to_ready.py.
set -euo pipefail
exec python3 "$(cd "$(dirname "$0")" && pwd)/create_to_ready.py" "$@"
