"""The handle on one sandbox (docs/upstream.md#sandbox-handle, #commands-and-files): ``commands.run``,
``files.write / read / list / exists``, pod identity and status,
``close_connection`` and ``terminate``. Each call is one C call of
libsandbox (sandbox/handle.h), which does the HTTP through the router.
"""
from __future__ import annotations

import contextlib
import math
import os
import threading
from typing import IO, Any, Optional, Union

from . import _native
from .models import (ExecutionResult, FileEntry, SandboxConnectionConfig,
                     SandboxLocalTunnelConnectionConfig, SandboxTracerConfig, native_connection)
from .trace_manager import create_tracer_manager, trace, trace_span

#: what ``files.write`` accepts: bytes, text (sent as UTF-8), or a binary
#: file object (streamed: by its file descriptor when it has one)
Content = Union[bytes, bytearray, memoryview, str, IO[bytes]]

_NO_TIMEOUT_S = 3600.0


def timeout_ms(timeout: Any) -> int:
    """A per-call timeout (seconds; a (connect, read) tuple counts by its
    last element, as upstream's header does) in milliseconds."""
    if isinstance(timeout, tuple):
        timeout = timeout[-1] if timeout else None
    if timeout is None or isinstance(timeout, bool):
        timeout = _NO_TIMEOUT_S
    t = float(timeout)
    if not math.isfinite(t) or t <= 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return _native.ms(t)


def _executable(command: str) -> str:
    """The program of a command line, as upstream's span attribute names it:
    the first word that is not a VAR=value, without its directory."""
    for word in (command or "").split():
        if "=" not in word:
            return word.split("/")[-1]
    return ""


def _attrs(**attrs: Any) -> None:
    """Sets attributes on the current span, when it records."""
    span = trace.get_current_span()
    if span.is_recording():
        for k, v in attrs.items():
            span.set_attribute(k.replace("__", "."), v)


class CommandExecutor:
    """``sandbox.commands``: runs commands in the sandbox."""

    def __init__(self, handle: "_native.Handle", tracer: Any = None,
                 trace_service_name: str = "sandbox-client") -> None:
        self._h = handle
        self.tracer, self.trace_service_name = tracer, trace_service_name

    @trace_span("run")
    def run(self, command: str, timeout: float = 60) -> ExecutionResult:
        """Runs ``command`` (split shell-style by the runtime, no shell) and
        returns its stdout, stderr and exit code. Raises SandboxRequestError
        when the sandbox can not be reached, SandboxNotFoundError when it was
        deleted."""
        _attrs(sandbox__command__executable=_executable(command))
        out, err, code = self._h.run(command, timeout_ms(timeout))
        _attrs(sandbox__exit_code=code)
        return ExecutionResult(stdout=out, stderr=err, exit_code=code)


class Filesystem:
    """``sandbox.files``: moves files in and out of the sandbox. Bodies are
    streamed by libsandbox, so a file object or a destination file moves in
    bounded memory whatever its size."""

    def __init__(self, handle: "_native.Handle", tracer: Any = None,
                 trace_service_name: str = "sandbox-client") -> None:
        self._h = handle
        self.tracer, self.trace_service_name = tracer, trace_service_name

    @trace_span("write")
    def write(self, path: str, content: Content, timeout: float = 60,
              allow_unsafe_paths: bool = False) -> None:
        """Writes ``content`` to ``path`` in the sandbox (parents created).
        ``path`` is normalised and refused when it escapes the sandbox root,
        unless ``allow_unsafe_paths``."""
        _attrs(sandbox__file__path=path)
        if isinstance(content, (bytes, bytearray, memoryview, str)):
            _attrs(sandbox__file__size=len(content.encode("utf-8")) if isinstance(content, str)
                   else memoryview(content).nbytes)
        self._h.write(path, content, timeout_ms(timeout),
                      _native.FILE_ALLOW_UNSAFE_PATHS if allow_unsafe_paths else 0)

    def read(self, path: str, timeout: float = 60, allow_unsafe_paths: bool = False, *,
             destination: Union[str, "os.PathLike[str]", IO[bytes], None] = None
             ) -> Union[bytes, int]:
        """Returns the bytes of ``path``; with ``destination`` (a file path or a
        writable binary file object) streams them there instead and returns
        the number of bytes written. A path is written whole or not at all
        (a failed read leaves it as it was)."""
        if destination is None:
            return self._read(path, timeout, allow_unsafe_paths)
        return self._read_to(path, destination, timeout, allow_unsafe_paths)

    @trace_span("read")
    def _read(self, path: str, timeout: float, allow_unsafe_paths: bool) -> bytes:
        _attrs(sandbox__file__path=path)
        flags = _native.FILE_ALLOW_UNSAFE_PATHS if allow_unsafe_paths else 0
        data = self._h.read(path, timeout_ms(timeout), flags)
        _attrs(sandbox__file__size=len(data))
        return data

    @trace_span("read_to")
    def _read_to(self, path: str, destination: Any, timeout: float,
                 allow_unsafe_paths: bool) -> int:
        _attrs(sandbox__file__path=path)
        n = self._read_into(path, destination, timeout_ms(timeout),
                            _native.FILE_ALLOW_UNSAFE_PATHS if allow_unsafe_paths else 0)
        _attrs(sandbox__file__size=n)
        return n

    def _read_into(self, path: str, destination: Any, ms: int, flags: int) -> int:
        if isinstance(destination, (str, os.PathLike)):
            # into a temporary file beside it, renamed once whole: a failed
            # read leaves neither an empty or partial file nor a clobbered one
            dest = os.fspath(destination)
            part = f"{dest}.part-{os.getpid()}-{threading.get_ident()}"
            try:
                with open(part, "xb") as f:
                    n = self._h.read_into(path, f, ms, flags)
                os.replace(part, dest)
                return n
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(part)
                raise
        return self._h.read_into(path, destination, ms, flags)

    @trace_span("list")
    def list(self, path: str, timeout: float = 60) -> list[FileEntry]:
        """Lists the directory ``path`` (sent as given)."""
        _attrs(sandbox__file__path=path)
        entries = [FileEntry(name=n, size=s, type="directory" if d else "file", mod_time=m)
                   for n, s, d, m in self._h.list(path, timeout_ms(timeout))]
        _attrs(sandbox__file__count=len(entries))
        return entries

    @trace_span("exists")
    def exists(self, path: str, timeout: float = 60) -> bool:
        """Whether ``path`` exists in the sandbox."""
        _attrs(sandbox__file__path=path)
        found = self._h.exists(path, timeout_ms(timeout))
        _attrs(sandbox__file__exists=found)
        return found

    @trace_span("delete")
    def delete(self, path: str, recursive: bool = False, timeout: float = 60) -> None:
        """The python-runtime API has no delete: NotImplementedError, as
        upstream raises on that runtime."""
        _attrs(sandbox__file__path=path)
        raise NotImplementedError("the sandbox runtime reached through the router has no file "
                                  "delete endpoint")


class Sandbox:
    """A handle on one sandbox, bound to the claim ``claim_name``.

    Usually obtained from ``SandboxClient.create_sandbox`` or
    ``get_sandbox``. As a context manager it terminates the sandbox (deletes
    its claim) on exit.
    """

    def __init__(self, claim_name: str, sandbox_id: str, namespace: str = "default",
                 connection_config: Optional[SandboxConnectionConfig] = None,
                 tracer_config: Optional[SandboxTracerConfig] = None,
                 k8s_helper: Optional["_native.Client"] = None, *,
                 pod_ip: Optional[str] = None) -> None:
        self.claim_name: Optional[str] = claim_name
        self.sandbox_id = sandbox_id
        self.namespace = namespace
        self.connection_config = connection_config or SandboxLocalTunnelConnectionConfig()
        self.tracer_config = tracer_config or SandboxTracerConfig()
        self.trace_service_name = self.tracer_config.trace_service_name
        self.tracing_manager, self.tracer = create_tracer_manager(self.tracer_config)
        self._client = k8s_helper or _native.Client()
        self._handle = _native.Handle(self._client, namespace, claim_name, sandbox_id, pod_ip,
                                      native_connection(self.connection_config))
        self.connector = self._handle
        self._commands: Optional[CommandExecutor] = CommandExecutor(
            self._handle, self.tracer, self.trace_service_name)
        self._files: Optional[Filesystem] = Filesystem(self._handle, self.tracer,
                                                       self.trace_service_name)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (f"Sandbox(claim_name={self.claim_name!r}, sandbox_id={self.sandbox_id!r}, "
                f"namespace={self.namespace!r})")

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.terminate()

    @property
    def commands(self) -> Optional[CommandExecutor]:
        """Runs commands; None once the connection is closed."""
        return self._commands

    @property
    def files(self) -> Optional[Filesystem]:
        """Moves files; None once the connection is closed."""
        return self._files

    @property
    def is_active(self) -> bool:
        """True until ``close_connection()`` or ``terminate()``."""
        return self._commands is not None and self._handle.is_active()

    def get_pod_name(self) -> str:
        """The pod's name (its ``agents.x-k8s.io/pod-name`` annotation, else the
        sandbox name)."""
        return self._handle.pod_name()

    def get_pod_ip(self) -> Optional[str]:
        """The pod's IP from the Sandbox's status, read now (IPv4 preferred)."""
        return self._handle.pod_ip()

    def get_sandbox_name_hash(self) -> str:
        """The 8-hex-digit name hash of the Sandbox (its tracking label value)."""
        return _native.name_hash(self.sandbox_id)

    def status(self) -> tuple[str, str]:
        """(state, message): state is SandboxReady, SandboxNotReady or SandboxNotFound."""
        return self._handle.status()

    def close_connection(self) -> None:
        """Closes the connection (tunnel, pooled connections) and disables
        ``commands`` and ``files``; the sandbox keeps running. Idempotent."""
        with self._lock:
            self._commands = self._files = None
        self._handle.close()

    def terminate(self) -> None:
        """Closes the connection and deletes the claim (a claim already gone is
        fine). Idempotent."""
        with self._lock:
            self._commands = self._files = None
            first = self.claim_name is not None
            self.claim_name = None
        if first:
            self._handle.terminate()
        else:
            self._handle.close()
