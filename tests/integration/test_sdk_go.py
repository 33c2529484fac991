"""The Go SDK (sdk-go/) against the whole local stack: `go test ./...` in
sdk-go, its integration tests (sdk-go/sandbox/integration_test.go) pointed
at the stack of test_stack.py (controller with --extensions,
sandbox-router with its caches, sandboxd per pod by tools/sandboxd-pods):
create, get, list, delete, commands, streamed files (24 MiB each way),
cancellation by context, error shapes; and its unit tests.

cgo builds against this build of libsandbox: PKG_CONFIG_PATH names the
build's meson-uninstalled/ (libsandbox-uninstalled.pc), LD_LIBRARY_PATH its
libraries. In the sanitizer pass (AGENT_SANDBOX_ASAN_PRELOAD set) the test
binary is built with `go test -asan` and UBSan's runtime linked in, the
way the sanitized libraries need; leak detection stays off there, as for
python (the Go heap holds C pointers LeakSanitizer cannot see).
The standard library is the module's only dependency: nothing is fetched.
"""
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from kubetest import EXT_API
from test_stack import sandboxd_template, setup_pool, stack  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("extensions_controller")

GO_TESTS = ("TestIntegrationLifecycle", "TestIntegrationStreaming",
            "TestIntegrationCancellation", "TestIntegrationErrorShapes",
            "TestOptionsAreChecked", "TestBadKubeconfig", "TestRefusedBeforeSending",
            "TestErrorShapes", "TestDefaults")


def go_binary():
    found = shutil.which("go") or "/usr/local/go/bin/go"
    if not os.access(found, os.X_OK):
        pytest.fail("Go is needed for sdk-go (tools/install-deps checks for it)")
    return found


def go_env(build, extra):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the sanitizer pass's preload is python's
    libs = [os.path.join(build, d) for d in ("libsandbox", "libk8s", "libasb")]
    env.update(
        CGO_ENABLED="1",
        GOFLAGS="-mod=mod",
        PKG_CONFIG_PATH=os.path.join(build, "meson-uninstalled"),
        LD_LIBRARY_PATH=":".join(libs + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":"),
        **extra)
    if env.get("AGENT_SANDBOX_ASAN_PRELOAD"):
        env["CGO_LDFLAGS"] = (env.get("CGO_LDFLAGS", "") + " -fsanitize=undefined").strip()
        env["ASAN_OPTIONS"] = env.get("AGENT_SANDBOX_CHILD_ASAN_OPTIONS", "") + ":detect_leaks=0"
    return env


def test_go_sdk(kube, ns, stack):  # noqa: F811 (fixture)
    """`go test ./...` in sdk-go passes with every integration test run, none
    skipped."""
    setup_pool(kube, ns, 1)
    # pool "stuck": its pods ask for a node that does not exist, so a claim
    # on it is never Ready (the cancellation test's wait)
    tpl = sandboxd_template()
    tpl["metadata"]["name"] = "stuck"
    tpl["spec"]["podTemplate"]["spec"]["nodeSelector"] = {"agent-sandbox-test/no-such": "node"}
    kube.create({"apiVersion": "v1", "kind": "List", "items": [
        tpl,
        {"apiVersion": EXT_API, "kind": "SandboxWarmPool", "metadata": {"name": "stuck"},
         "spec": {"replicas": 0, "sandboxTemplateRef": {"name": "stuck"}}}]}, ns)

    build = os.environ.get("AGENT_SANDBOX_BUILD_DIR") or os.path.join(ROOT, "build")
    env = go_env(build, {
        "KUBECONFIG": kube.kubeconfig,
        "AGENT_SANDBOX_GO_IT_ROUTER": stack.url,
        "AGENT_SANDBOX_GO_IT_NAMESPACE": ns,
    })
    cmd = [go_binary(), "test", "-count=1", "-v", "-timeout", "600s"]
    if env.get("AGENT_SANDBOX_ASAN_PRELOAD"):
        cmd.append("-asan")
    proc = subprocess.run(cmd + ["./..."], cwd=os.path.join(ROOT, "sdk-go"), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900)
    print(proc.stdout[-20000:])
    assert proc.returncode == 0, f"go test failed:\n{proc.stdout[-8000:]}"
    for name in GO_TESTS:
        assert f"--- PASS: {name} " in proc.stdout, f"{name} did not pass (skipped?)"
    assert "--- SKIP" not in proc.stdout
