"""ctypes bindings to libsandbox's client API (sandbox/client.h, handle.h).

Everything Kubernetes- or HTTP-shaped happens in C; this module only loads
the library, declares the functions, converts arguments and turns error
codes into exceptions.

Where the library is found, first match wins:

1. ``$AGENT_SANDBOX_LIB``: the path of ``libsandbox.so`` (or of a directory
   holding it);
2. ``agent_sandbox_c/_lib/``: the copies ``pip install`` puts in the
   package;
3. ``$AGENT_SANDBOX_BUILD_DIR/libsandbox/``: a meson build directory;
4. ``<repository>/build/libsandbox/``: the default build directory of the
   source tree this package sits in;
5. the system's library path (``ctypes.util.find_library("sandbox")``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char, c_char_p, c_double,
                    c_int, c_int64, c_long, c_size_t, c_ssize_t, c_uint, c_void_p)
from pathlib import Path
from typing import Any, Callable, Mapping, NoReturn

from . import exceptions as exc

_PKG = Path(__file__).resolve().parent
_LIB_NAME = "libsandbox.so"


def _candidates() -> list[Path]:
    out: list[Path] = []
    env = os.environ.get("AGENT_SANDBOX_LIB")
    if env:
        p = Path(env)
        out.append(p / _LIB_NAME if p.is_dir() else p)
    out.append(_PKG / "_lib" / _LIB_NAME)
    build = os.environ.get("AGENT_SANDBOX_BUILD_DIR")
    if build:
        out.append(Path(build) / "libsandbox" / _LIB_NAME)
    out.append(_PKG.parent.parent / "build" / "libsandbox" / _LIB_NAME)
    return out


def _load() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        if not path.exists():
            tried.append(str(path))
            continue
        # A packaged copy sits beside libasb and libk8s without a run path:
        # load those first (libasb before libk8s, which needs it), so that
        # libsandbox's dependencies resolve to them.
        for dep in ("libasb.so*", "libk8s.so*"):
            found = sorted(path.parent.glob(dep))
            if found:
                ctypes.CDLL(str(found[0]), mode=ctypes.RTLD_GLOBAL)
        return ctypes.CDLL(str(path))
    found = ctypes.util.find_library("sandbox")
    if found:
        return ctypes.CDLL(found)
    raise ImportError(
        "agent_sandbox_c: libsandbox.so not found (tried " + ", ".join(tried) +
        " and the system library path). Build it (meson setup build && meson compile -C build) "
        "and set AGENT_SANDBOX_LIB or AGENT_SANDBOX_BUILD_DIR, or pip install the package "
        "after the build.")


lib = _load()

# ---------------------------------------------------------------- error codes

ASB_EINVAL = -3
ASB_ECONFIG = -4
ASB_ECANCELED = -8
ASB_ETIMEOUT = -9
ASB_ENOTFOUND = -23
SBX_ETEMPLATENOTFOUND = -100
SBX_EWARMPOOLNOTFOUND = -101
SBX_ECLAIMDELETED = -107
SBX_EREQUEST = -110
SBX_EPORTFORWARD = -111
SBX_ECLOSED = -112
SBX_EUNSUPPORTED = -113
SBX_ERESPONSE = -114
SBX_ENOSERVICE = -115
SBX_ENOPODIP = -116


class _Error(Structure):
    _fields_ = [("code", c_int), ("http_status", c_int), ("reason", c_char_p),
                ("message", c_char_p)]


lib.asb_error_last.restype = POINTER(_Error)
lib.asb_error_last.argtypes = []
lib.sbx_strerror.restype = c_char_p
lib.sbx_strerror.argtypes = [c_int]
lib.sbx_error_is_claim_failure.restype = c_bool
lib.sbx_error_is_claim_failure.argtypes = [c_int]


class NativeError(Exception):
    """An error code and the calling thread's message, as the C call left them."""

    def __init__(self, code: int, http_status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.http_status, self.reason, self.message = code, http_status, reason, message


def last_error(code: int) -> NativeError:
    """Reads asb_error_last(); call on the thread that saw `code`."""
    e = lib.asb_error_last().contents
    msg = (e.message or b"").decode("utf-8", "replace") or \
        lib.sbx_strerror(code).decode()
    return NativeError(code, e.http_status, (e.reason or b"").decode("utf-8", "replace"), msg)


def raise_for(err: NativeError) -> NoReturn:
    """Raises the exception of upstream's SDK that matches a C error code
    (docs/upstream.md#sdk-exceptions)."""
    code, msg = err.code, err.message
    if code == ASB_EINVAL:
        raise ValueError(msg)
    if code == ASB_ETIMEOUT:
        raise TimeoutError(msg)
    if code == SBX_ETEMPLATENOTFOUND:
        raise exc.SandboxTemplateNotFoundError(msg)
    if code == SBX_EWARMPOOLNOTFOUND:
        raise exc.SandboxWarmPoolNotFoundError(msg)
    if lib.sbx_error_is_claim_failure(code):
        raise exc.SandboxClaimFailedError(msg, reason=err.reason)
    if code == SBX_ECLAIMDELETED:
        raise exc.SandboxMetadataError(msg)
    if code == SBX_EREQUEST:
        raise exc.SandboxRequestError(msg, status_code=err.http_status or None)
    if code == SBX_EPORTFORWARD:
        raise exc.SandboxPortForwardError(msg)
    if code == ASB_ENOTFOUND:
        raise exc.SandboxNotFoundError(msg)
    if code == SBX_ECLOSED:
        raise exc.SandboxNotReadyError(msg)
    if code == SBX_EUNSUPPORTED:
        raise NotImplementedError(msg)
    if code == SBX_ERESPONSE:
        raise RuntimeError(msg)
    if code == SBX_ENOSERVICE:
        raise exc.SandboxNoServiceError(msg)
    if code == SBX_ENOPODIP:
        raise exc.SandboxNotReadyError(msg)
    if code == ASB_ECANCELED:
        raise exc.SandboxError(msg)
    raise exc.SandboxApiError(msg, code=code, status=err.http_status or None,
                              reason=err.reason or None)


def check(rc: int) -> int:
    """Raises for a negative return code (on the calling thread)."""
    if rc < 0:
        raise_for(last_error(rc))
    return rc


# ---------------------------------------------------------------- structures

class KV(Structure):
    _fields_ = [("key", c_char_p), ("value", c_char_p)]


class ClientOptions(Structure):
    _fields_ = [("version", c_uint), ("kubeconfig", c_char_p), ("context", c_char_p),
                ("in_cluster", c_bool), ("request_timeout_ms", c_long),
                ("api_connections", c_int), ("qps", c_double), ("burst", c_int),
                ("logger", c_void_p), ("user_agent", c_char_p), ("api_max_retries", c_int)]


class ClaimOptions(Structure):
    _fields_ = [("version", c_uint), ("warm_pool", c_char_p), ("ns", c_char_p),
                ("name", c_char_p), ("labels", POINTER(KV)), ("nlabels", c_size_t),
                ("annotations", POINTER(KV)), ("nannotations", c_size_t),
                ("shutdown_after_seconds", c_int64), ("shutdown_policy", c_char_p),
                ("volume_claim_templates_json", c_char_p),
                ("pod_labels", POINTER(KV)), ("npod_labels", c_size_t),
                ("pod_annotations", POINTER(KV)), ("npod_annotations", c_size_t),
                ("env", POINTER(KV)), ("nenv", c_size_t),
                ("created_by", c_char_p), ("ready_timeout_ms", c_long),
                ("keep_on_failure", c_bool), ("cancel", POINTER(c_int))]


class ClaimInfo(Structure):
    _fields_ = [("ns", c_char_p), ("claim_name", c_char_p), ("sandbox_name", c_char_p),
                ("pod_ip", c_char_p), ("resource_version", c_char_p),
                ("created_at", c_double)]


#: sbx_connect_fn: (userdata, mode, rc, elapsed_ms)
CONNECT_FN = CFUNCTYPE(None, c_void_p, c_int, c_int, c_double)


class ConnectionOptions(Structure):
    _fields_ = [("version", c_uint), ("mode", c_int), ("api_url", c_char_p),
                ("gateway_name", c_char_p), ("gateway_namespace", c_char_p),
                ("gateway_ready_timeout_ms", c_long), ("router_namespace", c_char_p),
                ("port_forward_ready_timeout_ms", c_long), ("kubectl", c_char_p),
                ("server_port", c_int), ("max_retries", c_int),
                ("retry_backoff_ms", c_long), ("connect_timeout_ms", c_long),
                ("in_cluster_address", c_int), ("on_connect", CONNECT_FN),
                ("on_connect_userdata", c_void_p)]


class ExecResult(Structure):
    _fields_ = [("out", POINTER(c_char)), ("out_len", c_size_t),
                ("err", POINTER(c_char)), ("err_len", c_size_t), ("exit_code", c_int)]


READ_FN = CFUNCTYPE(c_ssize_t, c_void_p, POINTER(c_char), c_size_t)
WRITE_FN = CFUNCTYPE(c_int, c_void_p, POINTER(c_char), c_size_t)


class UploadSource(Structure):
    _fields_ = [("data", c_void_p), ("fd", c_int), ("read", READ_FN),
                ("userdata", c_void_p), ("size", c_int64)]


class FileEntryC(Structure):
    _fields_ = [("name", c_char_p), ("size", c_int64), ("is_dir", c_bool),
                ("mod_time", c_double)]


class FileList(Structure):
    _fields_ = [("entries", POINTER(FileEntryC)), ("count", c_size_t)]


CLIENT_OPTIONS_VERSION = 1
CLAIM_OPTIONS_VERSION = 1
CONNECTION_OPTIONS_VERSION = 2
MODE_LOCAL_TUNNEL, MODE_GATEWAY, MODE_DIRECT, MODE_IN_CLUSTER = 0, 1, 2, 3
IN_CLUSTER_ANY, IN_CLUSTER_POD_IP, IN_CLUSTER_SERVICE = 0, 1, 2
FILE_ALLOW_UNSAFE_PATHS = 1
STATES = {0: "SandboxReady", 1: "SandboxNotReady", 2: "SandboxNotFound"}

# ---------------------------------------------------------------- functions


def _proto(name: str, restype: Any, *argtypes: Any) -> None:
    f = getattr(lib, name)
    f.restype, f.argtypes = restype, list(argtypes)


_proto("sbx_global_init", c_int)
_proto("sbx_free", None, c_void_p)
_proto("sbx_strv_free", None, c_void_p)
_proto("sbx_client_options_init", c_int, POINTER(ClientOptions), c_uint)
_proto("sbx_client_new", c_int, POINTER(c_void_p), POINTER(ClientOptions))
_proto("sbx_client_free", None, c_void_p)
_proto("sbx_client_namespace", c_char_p, c_void_p)
_proto("sbx_claim_options_init", c_int, POINTER(ClaimOptions), c_uint)
_proto("sbx_client_create", c_int, c_void_p, POINTER(ClaimOptions), POINTER(POINTER(ClaimInfo)))
_proto("sbx_client_wait_claim", c_int, c_void_p, c_char_p, c_char_p, c_bool, c_long,
       POINTER(c_int), POINTER(POINTER(ClaimInfo)))
_proto("sbx_claim_info_free", None, POINTER(ClaimInfo))
_proto("sbx_client_delete_claim", c_int, c_void_p, c_char_p, c_char_p)
_proto("sbx_client_list_claims", c_int, c_void_p, c_char_p, c_char_p,
       POINTER(POINTER(c_char_p)), POINTER(c_size_t))
_proto("sbx_client_claim_warm_pool", c_int, c_void_p, c_char_p, c_char_p, POINTER(c_void_p))
_proto("sbx_connection_options_init", c_int, POINTER(ConnectionOptions), c_uint)
_proto("sbx_handle_new", c_int, POINTER(c_void_p), c_void_p, c_char_p, c_char_p, c_char_p,
       c_char_p, POINTER(ConnectionOptions))
_proto("sbx_handle_free", None, c_void_p)
_proto("sbx_handle_is_active", c_bool, c_void_p)
_proto("sbx_handle_pod_name", c_int, c_void_p, POINTER(c_void_p))
_proto("sbx_handle_pod_ip", c_int, c_void_p, POINTER(c_void_p))
_proto("sbx_handle_status", c_int, c_void_p, POINTER(c_int), POINTER(c_void_p))
_proto("sbx_handle_close", None, c_void_p)
_proto("sbx_handle_terminate", c_int, c_void_p)
_proto("sbx_handle_run", c_int, c_void_p, c_char_p, c_long, POINTER(POINTER(ExecResult)))
_proto("sbx_exec_result_free", None, POINTER(ExecResult))
_proto("sbx_handle_write", c_int, c_void_p, c_char_p, POINTER(UploadSource), c_long, c_uint)
_proto("sbx_handle_read", c_int, c_void_p, c_char_p, c_long, c_uint, POINTER(c_void_p),
       POINTER(c_size_t))
_proto("sbx_handle_read_fd", c_int, c_void_p, c_char_p, c_int, c_long, c_uint, POINTER(c_int64))
_proto("sbx_handle_read_cb", c_int, c_void_p, c_char_p, WRITE_FN, c_void_p, c_long, c_uint,
       POINTER(c_int64))
_proto("sbx_handle_list", c_int, c_void_p, c_char_p, c_long, POINTER(POINTER(FileList)))
_proto("sbx_file_list_free", None, POINTER(FileList))
_proto("sbx_handle_exists", c_int, c_void_p, c_char_p, c_long, POINTER(c_bool))
_proto("sbx_path_guard", c_int, c_char_p, POINTER(c_void_p))
_proto("sbx_name_hash", c_char_p, c_char_p, c_char_p)

check(lib.sbx_global_init())


def enc(s: str | None) -> bytes | None:
    """UTF-8 for a C string; ValueError for a NUL, where C would silently cut
    the string (a command or path would run or land somewhere else)."""
    if s is None:
        return None
    if "\0" in s:
        raise ValueError(f"{s!r} contains a NUL character, which cannot be passed on")
    return s.encode("utf-8")


def take_string(p: c_void_p) -> str:
    """Copies a string the library allocated and frees it."""
    try:
        return ctypes.string_at(p.value).decode("utf-8", "replace") if p.value else ""
    finally:
        lib.sbx_free(p)


def kv_array(m: Mapping[str, str] | None) -> tuple[Any, int, list[bytes]]:
    """A C array of sbx_kv, its length, and the bytes that must outlive it."""
    items = list((m or {}).items())
    keep: list[bytes] = []
    arr = (KV * max(len(items), 1))()
    for i, (k, v) in enumerate(items):
        if not isinstance(k, str) or not isinstance(v, str):
            raise ValueError(f"labels and annotations must map str to str, got {k!r}: {v!r}")
        kb, vb = enc(k), enc(v)
        keep += [kb, vb]
        arr[i].key, arr[i].value = kb, vb
    return arr, len(items), keep


def ms(seconds: float) -> int:
    """Seconds (int or float) to whole milliseconds, at least 1."""
    return max(1, int(round(float(seconds) * 1000)))


def name_hash(name: str) -> str:
    buf = ctypes.create_string_buffer(9)
    return lib.sbx_name_hash(name.encode(), buf).decode()


class Client:
    """An sbx_client: one connection to a cluster, shared by handles."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None,
                 in_cluster: bool = False, request_timeout: float = 30.0,
                 api_max_retries: int = -1) -> None:
        o = ClientOptions()
        check(lib.sbx_client_options_init(ctypes.byref(o), CLIENT_OPTIONS_VERSION))
        o.kubeconfig, o.context, o.in_cluster = enc(kubeconfig), enc(context), in_cluster
        o.request_timeout_ms = ms(request_timeout)
        o.api_max_retries = api_max_retries
        ptr = c_void_p()
        check(lib.sbx_client_new(ctypes.byref(ptr), ctypes.byref(o)))
        self.ptr: int | None = ptr.value
        self._lock = threading.Lock()

    def close(self) -> None:
        """Drops this reference; handles keep the C client alive as long as they live."""
        with self._lock:
            ptr, self.ptr = self.ptr, None
        if ptr:
            lib.sbx_client_free(ptr)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _ptr(self) -> int:
        if not self.ptr:
            raise exc.SandboxError("the sandbox client is closed")
        return self.ptr

    def create(self, warmpool: str, namespace: str, timeout: float, *,
               name: str | None = None, labels: Mapping[str, str] | None = None,
               annotations: Mapping[str, str] | None = None,
               shutdown_after_seconds: int | None = None,
               volume_claim_templates_json: str | None = None,
               pod_labels: Mapping[str, str] | None = None,
               pod_annotations: Mapping[str, str] | None = None,
               env: Mapping[str, str] | None = None,
               cancel: c_int | None = None) -> tuple[str, str, str, str | None, float]:
        """sbx_client_create(): (namespace, claim, sandbox, pod IP, when the
        claim was created in POSIX seconds)."""
        o = ClaimOptions()
        check(lib.sbx_claim_options_init(ctypes.byref(o), CLAIM_OPTIONS_VERSION))
        keep: list[Any] = []
        o.warm_pool, o.ns, o.name = enc(warmpool), enc(namespace), enc(name)
        for field, m in (("labels", labels), ("annotations", annotations),
                         ("pod_labels", pod_labels), ("pod_annotations", pod_annotations),
                         ("env", env)):
            arr, n, k = kv_array(m)
            keep += [arr, k]
            setattr(o, field, ctypes.cast(arr, POINTER(KV)))
            setattr(o, "n" + field, n)
        o.shutdown_after_seconds = shutdown_after_seconds or 0
        o.volume_claim_templates_json = enc(volume_claim_templates_json)
        o.created_by = b"python-client"
        o.ready_timeout_ms = max(0, int(float(timeout) * 1000))
        if cancel is not None:
            o.cancel = ctypes.pointer(cancel)
        info = POINTER(ClaimInfo)()
        check(lib.sbx_client_create(self._ptr(), ctypes.byref(o), ctypes.byref(info)))
        created_at = info.contents.created_at
        return (*_take_info(info), created_at)

    def wait(self, claim: str, namespace: str, need_ready: bool, timeout: float,
             cancel: c_int | None = None) -> tuple[str, str, str, str | None]:
        info = POINTER(ClaimInfo)()
        check(lib.sbx_client_wait_claim(self._ptr(), enc(namespace), enc(claim), need_ready,
                                        max(0, int(float(timeout) * 1000)),
                                        ctypes.pointer(cancel) if cancel is not None else None,
                                        ctypes.byref(info)))
        return _take_info(info)

    def delete_claim(self, claim: str, namespace: str) -> bool:
        """Deletes a claim; False when it was already gone."""
        rc = lib.sbx_client_delete_claim(self._ptr(), enc(namespace), enc(claim))
        if rc == ASB_ENOTFOUND:
            return False
        check(rc)
        return True

    def list_claims(self, namespace: str, label_selector: str | None) -> list[str]:
        arr = POINTER(c_char_p)()
        n = c_size_t()
        check(lib.sbx_client_list_claims(self._ptr(), enc(namespace), enc(label_selector),
                                         ctypes.byref(arr), ctypes.byref(n)))
        try:
            return [arr[i].decode() for i in range(n.value)]
        finally:
            lib.sbx_strv_free(ctypes.cast(arr, c_void_p))

    def claim_warm_pool(self, claim: str, namespace: str) -> str:
        out = c_void_p()
        check(lib.sbx_client_claim_warm_pool(self._ptr(), enc(namespace), enc(claim),
                                             ctypes.byref(out)))
        return take_string(out)


def _take_info(info: Any) -> tuple[str, str, str, str | None]:
    try:
        i = info.contents
        return (i.ns.decode(), i.claim_name.decode(), i.sandbox_name.decode(),
                i.pod_ip.decode() if i.pod_ip else None)
    finally:
        lib.sbx_claim_info_free(info)


class Handle:
    """An sbx_handle on one sandbox."""

    def __init__(self, client: Client, namespace: str, claim: str, sandbox_id: str,
                 pod_ip: str | None, conn: ConnectionOptions) -> None:
        ptr = c_void_p()
        check(lib.sbx_handle_new(ctypes.byref(ptr), client._ptr(), enc(namespace), enc(claim),
                                 enc(sandbox_id), enc(pod_ip), ctypes.byref(conn)))
        self.ptr: int | None = ptr.value
        self._lock = threading.Lock()

    def free(self) -> None:
        with self._lock:
            ptr, self.ptr = self.ptr, None
        if ptr:
            lib.sbx_handle_free(ptr)

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass

    def _p(self) -> int:
        if not self.ptr:
            raise exc.SandboxNotReadyError("the sandbox handle is closed")
        return self.ptr

    def is_active(self) -> bool:
        return bool(self.ptr) and bool(lib.sbx_handle_is_active(self.ptr))

    def pod_name(self) -> str:
        out = c_void_p()
        check(lib.sbx_handle_pod_name(self._p(), ctypes.byref(out)))
        return take_string(out)

    def pod_ip(self) -> str | None:
        out = c_void_p()
        check(lib.sbx_handle_pod_ip(self._p(), ctypes.byref(out)))
        return take_string(out) if out.value else None

    def status(self) -> tuple[str, str]:
        st, msg = c_int(), c_void_p()
        check(lib.sbx_handle_status(self._p(), ctypes.byref(st), ctypes.byref(msg)))
        return STATES.get(st.value, "SandboxNotReady"), take_string(msg)

    def close(self) -> None:
        if self.ptr:
            lib.sbx_handle_close(self.ptr)

    def terminate(self) -> None:
        if self.ptr:
            check(lib.sbx_handle_terminate(self.ptr))

    def run(self, command: str, timeout_ms: int) -> tuple[str, str, int]:
        r = POINTER(ExecResult)()
        check(lib.sbx_handle_run(self._p(), enc(command), timeout_ms, ctypes.byref(r)))
        try:
            c = r.contents
            return (ctypes.string_at(c.out, c.out_len).decode("utf-8", "replace"),
                    ctypes.string_at(c.err, c.err_len).decode("utf-8", "replace"), c.exit_code)
        finally:
            lib.sbx_exec_result_free(r)

    def write(self, path: str, content: Any, timeout_ms: int, flags: int) -> None:
        src = UploadSource(None, -1, READ_FN(), None, -1)
        keep: list[Any] = []
        if isinstance(content, str):
            content = content.encode("utf-8")
        if isinstance(content, (bytes, bytearray, memoryview)):
            buf = memoryview(content).cast("B")
            if buf.readonly:
                data = bytes(buf) if not isinstance(content, bytes) else content
                src.data = ctypes.cast(ctypes.c_char_p(data), c_void_p)
                keep.append(data)
            else:
                arr = (c_char * len(buf)).from_buffer(buf)
                src.data = ctypes.addressof(arr)
                keep.append(arr)
            src.size = len(buf)
        elif _fileno(content) is not None:
            if hasattr(content, "flush"):
                content.flush()
            src.fd = _fileno(content)
        elif hasattr(content, "readinto") or hasattr(content, "read"):
            src.read = READ_FN(_reader(content))
            keep.append(src.read)
        else:
            raise TypeError("content must be bytes, str or a readable binary file object, "
                            f"not {type(content).__name__}")
        check(lib.sbx_handle_write(self._p(), enc(path), ctypes.byref(src), timeout_ms, flags))

    def read(self, path: str, timeout_ms: int, flags: int) -> bytes:
        data, n = c_void_p(), c_size_t()
        check(lib.sbx_handle_read(self._p(), enc(path), timeout_ms, flags, ctypes.byref(data),
                                  ctypes.byref(n)))
        try:
            return ctypes.string_at(data.value, n.value) if n.value else b""
        finally:
            lib.sbx_free(data)

    def read_into(self, path: str, dest: Any, timeout_ms: int, flags: int) -> int:
        written = c_int64()
        fd = _fileno(dest)
        if fd is not None:
            if hasattr(dest, "flush"):
                dest.flush()
            check(lib.sbx_handle_read_fd(self._p(), enc(path), fd, timeout_ms, flags,
                                         ctypes.byref(written)))
            return written.value
        err: list[BaseException] = []

        def sink(_ud: Any, buf: Any, n: int) -> int:
            try:
                dest.write(ctypes.string_at(buf, n))
                return 0
            except BaseException as e:  # surfaced after the call
                err.append(e)
                return 1
        cb = WRITE_FN(sink)
        rc = lib.sbx_handle_read_cb(self._p(), enc(path), cb, None, timeout_ms, flags,
                                    ctypes.byref(written))
        if err:
            raise err[0]
        check(rc)
        return written.value

    def list(self, path: str, timeout_ms: int) -> list[tuple[str, int, bool, float]]:
        lst = POINTER(FileList)()
        check(lib.sbx_handle_list(self._p(), enc(path), timeout_ms, ctypes.byref(lst)))
        try:
            c = lst.contents
            return [(c.entries[i].name.decode("utf-8", "replace"), c.entries[i].size,
                     c.entries[i].is_dir, c.entries[i].mod_time) for i in range(c.count)]
        finally:
            lib.sbx_file_list_free(lst)

    def exists(self, path: str, timeout_ms: int) -> bool:
        out = c_bool()
        check(lib.sbx_handle_exists(self._p(), enc(path), timeout_ms, ctypes.byref(out)))
        return out.value


def _fileno(obj: Any) -> int | None:
    """The OS file descriptor behind a file object, or None."""
    if isinstance(obj, int) and not isinstance(obj, bool):
        return obj
    f = getattr(obj, "fileno", None)
    if f is None:
        return None
    try:
        return int(f())
    except (OSError, ValueError, AttributeError):
        return None


def _reader(stream: Any) -> Callable[[Any, Any, int], int]:
    """A READ_FN over a Python stream (readinto when it has one)."""
    def read(_ud: Any, buf: Any, cap: int) -> int:
        try:
            if hasattr(stream, "readinto"):
                view = (c_char * cap).from_address(ctypes.addressof(buf.contents))
                n = stream.readinto(memoryview(view).cast("B"))
                return int(n or 0)
            chunk = stream.read(cap)
            if isinstance(chunk, str):
                chunk = chunk.encode("utf-8")
            ctypes.memmove(buf, chunk, len(chunk))
            return len(chunk)
        except BaseException:
            return -1
    return read


def path_guard(path: str) -> str:
    """Upstream's upload path guard (sbx_path_guard); ValueError on refusal."""
    out = c_void_p()
    check(lib.sbx_path_guard(enc(path), ctypes.byref(out)))
    return take_string(out)


def connection_options(mode: int, **fields: Any) -> ConnectionOptions:
    """sbx_connection_options of `mode` with `fields` set (strings encoded).
    The result must outlive the handle made from it only for `on_connect`,
    which callers keep in a module-level object."""
    o = ConnectionOptions()
    check(lib.sbx_connection_options_init(ctypes.byref(o), CONNECTION_OPTIONS_VERSION))
    o.mode = mode
    for k, v in fields.items():
        setattr(o, k, enc(v) if isinstance(v, str) else v)
    return o
