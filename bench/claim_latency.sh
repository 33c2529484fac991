#!/usr/bin/env bash
# SandboxClaim benchmark: warm claim-to-Ready p50/p99 at 1, 10 and 100
# concurrent claims, cold claim latency (pool replicas 0), the time to fill a
# 300-member warm pool, and claims/s sustained for 60 s (open-loop arrivals,
# warm/cold split); the controller's peak RSS and CPU seconds.
#
# Usage: bench/claim_latency.sh [--quick] [--concurrency 1,10,100] [--rounds 20,5,2] [--pool N]
#                               [--cold N] [--fill N] [--rate R] [--duration S] [--dwell S]
#                               [--timeout S] [--build-dir DIR]
#                               [-- CONTROLLER COMMAND ... [-- ANOTHER COMMAND ...]]
#   default command: our controller from DIR (default build/) with --extensions,
#   leader election off, as the deploy/ ServiceAccount. `{kubeconfig}` in a
#   command is replaced by that ServiceAccount's kubeconfig (also in its
#   KUBECONFIG), `{logdir}` by the run's log directory. Without KUBECONFIG it
#   starts (and stops) a private control plane with enough kwok nodes; see
#   bench/README.md and the docstring of claim_latency.py.
set -euo pipefail
exec python3 "$(cd "$(dirname "$0")" && pwd)/claim_latency.py" "$@"
