"""The asyncio client (docs/upstream.md#async-api): ``AsyncSandboxClient`` and
``AsyncSandbox`` with the coroutine versions of the sync methods.

Each call runs the same libsandbox call as the sync client on the client's
own thread pool (libsandbox releases no lock to Python: ctypes drops the
GIL for the duration of a C call), so many sandboxes are created and used
concurrently. Cancelling a ``create_sandbox`` task stops the wait within a
second and deletes the claim, as upstream does.
"""
from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextvars
import ctypes
import functools
import logging
from typing import IO, Any, Callable, Optional, TypeVar, Union

from .client import SandboxClient
from .models import (ExecutionResult, FileEntry, SandboxConnectionConfig, SandboxTracerConfig)
from .sandbox import Content, Sandbox

log = logging.getLogger(__name__)

R = TypeVar("R")


class _Runner:
    """Runs blocking calls on a thread pool from coroutines."""

    def __init__(self, executor: concurrent.futures.Executor) -> None:
        self.executor = executor

    async def __call__(self, fn: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        loop = asyncio.get_running_loop()
        # in the caller's context, so that its current span is the parent of
        # the call's span (run_in_executor alone does not carry it over)
        ctx = contextvars.copy_context()
        return await loop.run_in_executor(self.executor,
                                          functools.partial(ctx.run, fn, *args, **kwargs))


class AsyncCommandExecutor:
    """``sandbox.commands`` of an AsyncSandbox."""

    def __init__(self, sync: Any, run: _Runner) -> None:
        self._sync, self._run = sync, run

    async def run(self, command: str, timeout: float = 60) -> ExecutionResult:
        """As CommandExecutor.run."""
        return await self._run(self._sync.run, command, timeout)


class AsyncFilesystem:
    """``sandbox.files`` of an AsyncSandbox (write, read, list, exists, delete)."""

    def __init__(self, sync: Any, run: _Runner) -> None:
        self._sync, self._run = sync, run

    async def write(self, path: str, content: Content, timeout: float = 60,
                    allow_unsafe_paths: bool = False) -> None:
        """As Filesystem.write."""
        await self._run(self._sync.write, path, content, timeout, allow_unsafe_paths)

    async def read(self, path: str, timeout: float = 60, allow_unsafe_paths: bool = False, *,
                   destination: Union[str, IO[bytes], None] = None) -> Union[bytes, int]:
        """As Filesystem.read."""
        return await self._run(self._sync.read, path, timeout, allow_unsafe_paths,
                               destination=destination)

    async def list(self, path: str, timeout: float = 60) -> list[FileEntry]:
        """As Filesystem.list."""
        return await self._run(self._sync.list, path, timeout)

    async def exists(self, path: str, timeout: float = 60) -> bool:
        """As Filesystem.exists."""
        return await self._run(self._sync.exists, path, timeout)

    async def delete(self, path: str, recursive: bool = False, timeout: float = 60) -> None:
        """As Filesystem.delete: NotImplementedError (the python-runtime API
        has no delete; upstream raises the same on that runtime)."""
        await self._run(self._sync.delete, path, recursive, timeout)


class AsyncSandbox:
    """The asyncio handle on one sandbox; an async context manager that
    terminates the sandbox on exit."""

    def __init__(self, claim_name: str, sandbox_id: str, namespace: str = "default",
                 connection_config: Optional[SandboxConnectionConfig] = None,
                 tracer_config: Optional[SandboxTracerConfig] = None,
                 k8s_helper: Any = None, *, pod_ip: Optional[str] = None,
                 _sync: Optional[Sandbox] = None, _runner: Optional[_Runner] = None) -> None:
        if _sync is None:
            if connection_config is None:
                raise ValueError("AsyncSandbox requires a connection_config")
            _sync = Sandbox(claim_name, sandbox_id, namespace, connection_config,
                            tracer_config, k8s_helper, pod_ip=pod_ip)
        self._sync = _sync
        self._run = _runner or _Runner(concurrent.futures.ThreadPoolExecutor(4))
        self._commands: Optional[AsyncCommandExecutor] = AsyncCommandExecutor(
            _sync.commands, self._run)
        self._files: Optional[AsyncFilesystem] = AsyncFilesystem(_sync.files, self._run)

    def __repr__(self) -> str:
        return "Async" + repr(self._sync)

    @property
    def claim_name(self) -> Optional[str]:
        return self._sync.claim_name

    @property
    def sandbox_id(self) -> str:
        return self._sync.sandbox_id

    @property
    def namespace(self) -> str:
        return self._sync.namespace

    @property
    def commands(self) -> Optional[AsyncCommandExecutor]:
        return self._commands if self._sync.commands is not None else None

    @property
    def files(self) -> Optional[AsyncFilesystem]:
        return self._files if self._sync.files is not None else None

    @property
    def is_active(self) -> bool:
        return self._sync.is_active

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.terminate()

    async def get_pod_name(self) -> str:
        return await self._run(self._sync.get_pod_name)

    async def get_pod_ip(self) -> Optional[str]:
        return await self._run(self._sync.get_pod_ip)

    async def get_sandbox_name_hash(self) -> str:
        return self._sync.get_sandbox_name_hash()

    async def status(self) -> tuple[str, str]:
        return await self._run(self._sync.status)

    async def close_connection(self) -> None:
        await self._run(self._sync.close_connection)

    async def terminate(self) -> None:
        await self._run(self._sync.terminate)


class AsyncSandboxClient:
    """The asyncio SandboxClient. ``connection_config`` is required (as
    upstream); ``cleanup`` (default True, as upstream) deletes tracked
    sandboxes at exit. As an async context manager: ``delete_all()`` then
    ``close()`` on exit.

    ``max_workers`` bounds the calls in flight at once (each blocks a pool
    thread for its duration, waits for Ready included).
    """

    def __init__(self, connection_config: Optional[SandboxConnectionConfig] = None,
                 tracer_config: Optional[SandboxTracerConfig] = None, cleanup: bool = True,
                 *, kubeconfig: Optional[str] = None, context: Optional[str] = None,
                 max_workers: int = 64) -> None:
        if connection_config is None:
            raise ValueError("AsyncSandboxClient requires a connection_config")
        self.connection_config = connection_config
        self._sync: SandboxClient[Sandbox] = SandboxClient(connection_config, tracer_config,
                                                           kubeconfig=kubeconfig,
                                                           context=context)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers, thread_name_prefix="agent-sandbox")
        self._run = _Runner(self._executor)
        self._wrappers: dict[int, AsyncSandbox] = {}
        if cleanup:
            atexit.register(self._sync.delete_all)

    def _wrap(self, sb: Sandbox) -> AsyncSandbox:
        w = self._wrappers.get(id(sb))
        if w is None or w._sync is not sb:
            w = self._wrappers[id(sb)] = AsyncSandbox(sb.claim_name or "", sb.sandbox_id,
                                                      sb.namespace, _sync=sb,
                                                      _runner=self._run)
        return w

    async def __aenter__(self) -> "AsyncSandboxClient":
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.delete_all()
        await self.close()

    async def create_sandbox(self, warmpool: str, namespace: str = "default",
                             sandbox_ready_timeout: int = 180,
                             labels: Optional[dict[str, str]] = None, *,
                             claim_name: Optional[str] = None,
                             shutdown_after_seconds: Optional[int] = None,
                             volume_claim_templates: Optional[list[dict[str, Any]]] = None,
                             pod_labels: Optional[dict[str, str]] = None,
                             pod_annotations: Optional[dict[str, str]] = None,
                             env: Optional[dict[str, str]] = None) -> AsyncSandbox:
        """As SandboxClient.create_sandbox. Cancelling the task ends the wait
        and deletes the claim (in the background, within about a second)."""
        cancel = ctypes.c_int(0)
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self._executor, functools.partial(
            contextvars.copy_context().run, self._sync._create, warmpool, namespace, sandbox_ready_timeout, labels,
            claim_name=claim_name, shutdown_after_seconds=shutdown_after_seconds,
            volume_claim_templates=volume_claim_templates, pod_labels=pod_labels,
            pod_annotations=pod_annotations, env=env, cancel=cancel))
        try:
            sb = await asyncio.shield(fut)
        except asyncio.CancelledError:
            cancel.value = 1

            def drop(f: "asyncio.Future[Sandbox]") -> None:
                # Won the race with the cancel: the sandbox nobody will use goes.
                if not f.cancelled() and f.exception() is None:
                    s = f.result()
                    self._executor.submit(self._sync.delete_sandbox, s.claim_name or "",
                                          s.namespace)
            fut.add_done_callback(drop)
            raise
        return self._wrap(sb)

    async def get_sandbox(self, claim_name: str, namespace: str = "default",
                          resolve_timeout: int = 30,
                          warmpool_name: Optional[str] = None) -> AsyncSandbox:
        """As SandboxClient.get_sandbox; with ``warmpool_name``, a claim of
        another pool is a ValueError."""
        if warmpool_name is not None:
            pool = await self._run(self._sync.get_sandbox_claim_warmpool_name, claim_name,
                                   namespace)
            if pool != warmpool_name:
                raise ValueError(f"claim {namespace}/{claim_name} belongs to warm pool {pool!r}, "
                                 f"not {warmpool_name!r}")
        return self._wrap(await self._run(self._sync.get_sandbox, claim_name, namespace,
                                          resolve_timeout))

    async def list_active_sandboxes(self) -> list[tuple[str, str]]:
        return self._sync.list_active_sandboxes()

    async def list_all_sandboxes(self, namespace: str = "default",
                                 label_selector: Optional[str] = None) -> list[str]:
        return await self._run(self._sync.list_all_sandboxes, namespace, label_selector)

    async def delete_sandbox(self, claim_name: str, namespace: str = "default") -> None:
        await self._run(self._sync.delete_sandbox, claim_name, namespace)

    async def delete_all(self) -> None:
        keys = self._sync.list_active_sandboxes()
        await asyncio.gather(*(self.delete_sandbox(c, ns) for ns, c in keys))

    async def close(self) -> None:
        """Closes every tracked handle's connection and forgets them."""
        with self._sync._lock:
            tracked = list(self._sync._active.values())
            self._sync._active.clear()
        for sb in tracked:
            sb.close_connection()
        self._wrappers.clear()
