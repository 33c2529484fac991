"""The ctypes mirrors of sdk-python/agent_sandbox_c/_native.py match the C
structs they stand for: size, and offset and size of every field, as the
sdk_layout program (built from the real headers) prints them.

No cluster needed. meson runs this file as the unit test `sdk_layout` with
$SDK_LAYOUT pointing at the program; it also runs under pytest with
SDK_LAYOUT (or $AGENT_SANDBOX_BUILD_DIR/tests/unit/libsandbox/sdk_layout) set.
"""
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "sdk-python"))

from agent_sandbox_c import _native  # noqa: E402  (needs the path above)

# ctypes class name in _native.py -> the C typedef it mirrors.
MIRRORS = {
    "_Error": "asb_error",
    "KV": "sbx_kv",
    "ClientOptions": "sbx_client_options",
    "ClaimOptions": "sbx_claim_options",
    "ClaimInfo": "sbx_claim_info",
    "ConnectionOptions": "sbx_connection_options",
    "ExecResult": "sbx_exec_result",
    "UploadSource": "sbx_upload_source",
    "FileEntryC": "sbx_file_entry",
    "FileList": "sbx_file_list",
}


def c_layout() -> dict:
    prog = os.environ.get("SDK_LAYOUT")
    if not prog:
        build = os.environ.get("AGENT_SANDBOX_BUILD_DIR", str(ROOT / "build"))
        prog = os.path.join(build, "tests", "unit", "libsandbox", "sdk_layout")
    out = subprocess.run([prog], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def layout_errors(layout: dict) -> list[str]:
    """Every difference, each naming the struct and the field."""
    errors = []
    for cls_name, c_name in MIRRORS.items():
        cls = getattr(_native, cls_name)
        c = layout[c_name]
        if ctypes.sizeof(cls) != c["size"]:
            errors.append(f"{cls_name} ({c_name}): sizeof {ctypes.sizeof(cls)} in ctypes, "
                          f"{c['size']} in C")
        py_fields = [f[0] for f in cls._fields_]
        for name in py_fields:
            if name not in c["fields"]:
                errors.append(f"{cls_name}.{name}: no field {name} in {c_name}")
                continue
            desc = getattr(cls, name)
            off, size = c["fields"][name]
            if desc.offset != off:
                errors.append(f"{cls_name}.{name} ({c_name}.{name}): offset {desc.offset} "
                              f"in ctypes, {off} in C")
            if desc.size != size:
                errors.append(f"{cls_name}.{name} ({c_name}.{name}): size {desc.size} "
                              f"in ctypes, {size} in C")
        for name in c["fields"]:
            if name not in py_fields:
                errors.append(f"{cls_name}: {c_name}.{name} is not mirrored")
    return errors


def unmapped_structures() -> list[str]:
    """Structure classes of _native.py that MIRRORS does not check."""
    return sorted(n for n, v in vars(_native).items()
                  if isinstance(v, type) and issubclass(v, ctypes.Structure)
                  and v.__module__ == _native.__name__ and n not in MIRRORS)


def test_every_mirror_is_checked():
    assert unmapped_structures() == []


def test_mirrors_match_c_layout():
    errors = layout_errors(c_layout())
    assert not errors, "\n".join(errors)


if __name__ == "__main__":
    problems = layout_errors(c_layout())
    problems += [f"{n}: a ctypes Structure not checked here (add it to MIRRORS "
                 "and sdk_layout.c)" for n in unmapped_structures()]
    for p in problems:
        print("FAIL", p)
    print(f"{len(MIRRORS)} structs checked, {len(problems)} problems")
    sys.exit(1 if problems else 0)
