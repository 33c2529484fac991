"""`pip install ./sdk-python` (after the C build): the installed package
carries libsandbox and libk8s in agent_sandbox_c/_lib/, and works from
there with no build tree, repository or AGENT_SANDBOX_* variable around: it
lists claims on the real API server.
"""
import os
import shutil
import subprocess
import sys

from conftest import ROOT

CHECK = """
import agent_sandbox_c as sdk
c = sdk.SandboxClient(sdk.SandboxDirectConnectionConfig(api_url="http://127.0.0.1:9"))
print("claims:", c.list_all_sandboxes("default"))
maps = open("/proc/self/maps").read()
print("\\n".join(sorted({l.split()[-1] for l in maps.splitlines() if "libsandbox" in l or "libk8s" in l or "libasb" in l})))
"""


def test_pip_install_makes_a_self_contained_package(kube, tmp_path):
    build = os.environ.get("AGENT_SANDBOX_BUILD_DIR", os.path.join(ROOT, "build"))
    # a copy: setuptools writes build/ and *.egg-info next to setup.py
    src = tmp_path / "sdk-python"
    shutil.copytree(os.path.join(ROOT, "sdk-python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "_lib"))
    target = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-build-isolation", "--disable-pip-version-check",
                        "--target", str(target), str(src)],
                       env=dict(os.environ, AGENT_SANDBOX_BUILD_DIR=build),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lib = target / "agent_sandbox_c" / "_lib"
    assert sorted(os.listdir(lib)) == ["libasb.so.0", "libk8s.so.0", "libsandbox.so"]
    assert (target / "agent_sandbox_c" / "py.typed").exists()

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AGENT_SANDBOX_", "PYTHON", "LD_", "ASAN"))}
    if os.environ.get("AGENT_SANDBOX_ASAN_PRELOAD"):  # a sanitized build (tools/test)
        env.update(LD_PRELOAD=os.environ["AGENT_SANDBOX_ASAN_PRELOAD"],
                   ASAN_OPTIONS="detect_leaks=0")
    env.update(PYTHONPATH=str(target), KUBECONFIG=kube.kubeconfig)
    p = subprocess.run([sys.executable, "-c", CHECK], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.splitlines()
    assert lines[0].startswith("claims: ["), lines
    loaded = lines[1:]
    assert loaded == sorted([str(lib / "libasb.so.0"), str(lib / "libk8s.so.0"),
                             str(lib / "libsandbox.so")]), \
        f"not the packaged libraries: {loaded}"
