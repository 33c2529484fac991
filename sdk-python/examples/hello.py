#!/usr/bin/env python3
"""A sandbox from a warm pool, a command run in it, a file written and read
back, the sandbox let go: the flow tools/demo shows on the local stack.

    python3 sdk-python/examples/hello.py [ROUTER_URL|tunnel [POOL [NAMESPACE]]]

ROUTER_URL: the router's address (direct mode); `tunnel` or nothing: the
SDK's default mode, a `kubectl port-forward` to the sandbox-router-svc
Service in agent-sandbox-system (kubectl from $PATH or $AGENT_SANDBOX_KUBECTL).
POOL defaults to sandboxd-pool, NAMESPACE to default. The cluster is
$KUBECONFIG's (else ~/.kube/config, or in-cluster). With upstream's client
installed, `from k8s_agent_sandbox import ...` runs the same code.
"""
import sys
import time

from agent_sandbox_c import SandboxClient, SandboxDirectConnectionConfig

router = sys.argv[1] if len(sys.argv) > 1 else "tunnel"
pool = sys.argv[2] if len(sys.argv) > 2 else "sandboxd-pool"
namespace = sys.argv[3] if len(sys.argv) > 3 else "default"

if router == "tunnel":
    client = SandboxClient()  # default: kubectl port-forward to the router's Service
else:
    client = SandboxClient(SandboxDirectConnectionConfig(api_url=router))
t0 = time.monotonic()
with client.create_sandbox(pool, namespace=namespace) as sb:  # a SandboxClaim on the pool
    print(f"claim {sb.claim_name} got Sandbox {sb.sandbox_id} "
          f"(pod {sb.get_pod_name()}, {sb.get_pod_ip()}) in {(time.monotonic() - t0) * 1000:.0f} ms")
    # split like shlex.split and run without a shell: for `;`, pipes or
    # variables, run `sh -c '...'` (docs/sandboxd.md)
    result = sb.commands.run("echo 'Hello from SDK'")
    print(f"exit code {result.exit_code}, stdout:\n{result.stdout}", end="")
    print(f"it ran in the container of pod {sb.commands.run('hostname').stdout.strip()}")
    sb.files.write("notes/hello.txt", b"written from Python\n")
    print(f"read back: {sb.files.read('notes/hello.txt')!r}")
    print("files:", [(e.name, e.type) for e in sb.files.list("notes")])
# leaving the block deleted the claim, and with it the Sandbox
print("sandbox released")
