"""Build hook of agent-sandbox-c: puts libsandbox, libk8s and libasb into the
package (agent_sandbox_c/_lib/), so the installed package needs no build
tree. The libraries come from $AGENT_SANDBOX_BUILD_DIR, else from the
repository's build/ directory; when neither holds them, the C core is built
with meson into build/ first (meson, ninja and the -dev packages of
tools/install-deps are needed then).
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def build_dir() -> Path:
    env = os.environ.get("AGENT_SANDBOX_BUILD_DIR")
    if env:
        return Path(env)
    build = REPO / "build"
    if not (build / "libsandbox" / "libsandbox.so").exists():
        if not (REPO / "meson.build").exists():
            raise SystemExit("agent-sandbox-c: no libsandbox build found; set "
                             "AGENT_SANDBOX_BUILD_DIR to a meson build directory")
        if not (build / "build.ninja").exists():
            subprocess.run(["meson", "setup", str(build), "-Dtests=false"], cwd=REPO, check=True)
        subprocess.run(["meson", "compile", "-C", str(build)], cwd=REPO, check=True)
    return build


class BuildWithLibs(build_py):
    def run(self):
        super().run()
        build = build_dir()
        out = Path(self.build_lib) / "agent_sandbox_c" / "_lib"
        out.mkdir(parents=True, exist_ok=True)
        # real files under the names the loader looks for (libsandbox.so)
        # and libsandbox's dependencies ask for (libk8s.so.0 and libasb.so.0,
        # their sonames)
        shutil.copy2(os.path.realpath(build / "libsandbox" / "libsandbox.so"),
                     out / "libsandbox.so")
        shutil.copy2(os.path.realpath(build / "libk8s" / "libk8s.so"), out / "libk8s.so.0")
        shutil.copy2(os.path.realpath(build / "libasb" / "libasb.so"), out / "libasb.so.0")


class BinaryDistribution(Distribution):
    """The wheel holds shared libraries: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithLibs}, distclass=BinaryDistribution)
