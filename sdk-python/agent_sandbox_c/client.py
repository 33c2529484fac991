"""``SandboxClient``: ask for sandboxes, find them again, list and delete
them (docs/upstream.md#sandboxclient). Kubernetes work (the claim, the wait on one
watch, the deletes) is libsandbox's; this class keeps the registry of the
handles it gave out.
"""
from __future__ import annotations

import atexit
import contextvars
import ctypes
import datetime
import functools
import json
import logging
import threading
import time
from typing import Any, Generic, Optional, Type, TypeVar

from . import _native
from .exceptions import SandboxError, SandboxNotFoundError
from .models import SandboxConnectionConfig, SandboxLocalTunnelConnectionConfig, SandboxTracerConfig
from .sandbox import Sandbox
from .trace_manager import (context as otel_context, create_tracer_manager, initialize_tracer, record_error,
                            trace, trace_span)

log = logging.getLogger(__name__)

T = TypeVar("T", bound=Sandbox)


def check_shutdown_after(n: Any) -> Optional[int]:
    """upstream's rule: a positive int, bools refused."""
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"shutdown_after_seconds must be a positive integer, got {n!r}")
    return n


def vcts_json(vcts: Optional[list[dict[str, Any]]]) -> Optional[str]:
    if vcts is None:
        return None
    if not isinstance(vcts, list):
        raise ValueError("volume_claim_templates must be a list of PVC templates")
    return json.dumps(vcts)


class SandboxClient(Generic[T]):
    """Creates and tracks sandboxes.

    Args:
        connection_config: how handles reach their sandbox (default: a local
            ``kubectl port-forward`` tunnel to the router).
        tracer_config: OpenTelemetry spans (trace_manager.py); off by default.
        cleanup: delete every tracked sandbox when the program exits.
        kubeconfig, context: the cluster (default: in-cluster config when in
            a pod, else ``$KUBECONFIG`` / ``~/.kube/config``).

    As a context manager, deletes every tracked sandbox on exit.
    """

    sandbox_class: Type[T] = Sandbox  # type: ignore[assignment]

    def __init__(self, connection_config: Optional[SandboxConnectionConfig] = None,
                 tracer_config: Optional[SandboxTracerConfig] = None, cleanup: bool = False,
                 *, kubeconfig: Optional[str] = None, context: Optional[str] = None) -> None:
        self.connection_config = connection_config or SandboxLocalTunnelConnectionConfig()
        self.tracer_config = tracer_config or SandboxTracerConfig()
        self.trace_service_name = self.tracer_config.trace_service_name
        if self.tracer_config.enable_tracing:
            initialize_tracer(self.trace_service_name)
        self.tracing_manager, self.tracer = create_tracer_manager(self.tracer_config)
        self.k8s_helper = _native.Client(kubeconfig, context)
        self._active: dict[tuple[str, str], T] = {}
        self._lock = threading.Lock()
        if cleanup:
            atexit.register(self.delete_all)

    def __enter__(self) -> "SandboxClient[T]":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.delete_all()

    def _handle(self, namespace: str, claim: str, sandbox: str, pod_ip: Optional[str]) -> T:
        return self.sandbox_class(claim, sandbox, namespace, self.connection_config,
                                  self.tracer_config, self.k8s_helper, pod_ip=pod_ip)

    def create_sandbox(self, warmpool: str, namespace: str = "default",
                       sandbox_ready_timeout: int = 180,
                       labels: Optional[dict[str, str]] = None, *,
                       claim_name: Optional[str] = None,
                       shutdown_after_seconds: Optional[int] = None,
                       volume_claim_templates: Optional[list[dict[str, Any]]] = None,
                       pod_labels: Optional[dict[str, str]] = None,
                       pod_annotations: Optional[dict[str, str]] = None,
                       env: Optional[dict[str, str]] = None) -> T:
        """Claims a sandbox from the warm pool ``warmpool`` (a cold one when the
        pool is empty) and waits until it is Ready.

        The claim is named ``sandbox-claim-<8 hex>`` unless ``claim_name`` is
        given. On any failure the claim is deleted and the error raised:
        SandboxTemplateNotFoundError / SandboxWarmPoolNotFoundError /
        SandboxClaimFailedError as soon as the controller reports them,
        TimeoutError after ``sandbox_ready_timeout`` seconds, ValueError for bad
        arguments (checked before anything is created).
        """
        call = functools.partial(
            self._create, warmpool, namespace, sandbox_ready_timeout, labels,
            claim_name=claim_name, shutdown_after_seconds=shutdown_after_seconds,
            volume_claim_templates=volume_claim_templates,
            pod_labels=pod_labels, pod_annotations=pod_annotations, env=env)
        if threading.current_thread() is not threading.main_thread():
            return call()
        # On the main thread, Ctrl-C (KeyboardInterrupt) must end the wait:
        # the C call blocks there, so it runs on a worker and a signal
        # cancels it; the claim is deleted before the interrupt goes on.
        cancel = ctypes.c_int(0)
        out: dict[str, Any] = {}
        ctx = contextvars.copy_context()  # the caller's current span, for the worker

        def work() -> None:
            try:
                out["sandbox"] = ctx.run(call, cancel=cancel)
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                out["error"] = e
            finally:
                out["finished"] = True
        # A plain flag polled with time.sleep(), no lock: a KeyboardInterrupt
        # raised inside a lock-based wait (Event, Condition, join) can leave
        # the lock held, and then neither this thread nor the worker gets
        # past it (CPython gh-90882, bpo-29988); the claim would never be
        # deleted.
        threading.Thread(target=work, name="agent_sandbox_c-create", daemon=True).start()
        try:
            while "finished" not in out:
                time.sleep(0.05)
        except BaseException:
            cancel.value = 1
            while "finished" not in out:
                time.sleep(0.05)
            sb = out.get("sandbox")
            if sb is not None:  # won the race with the interrupt: nobody will use it
                self.delete_sandbox(sb.claim_name or "", sb.namespace)
            raise
        if "error" in out:
            raise out["error"]
        return out["sandbox"]

    def _create(self, warmpool: str, namespace: str, sandbox_ready_timeout: float,
                labels: Optional[dict[str, str]], *, claim_name: Optional[str],
                shutdown_after_seconds: Optional[int],
                volume_claim_templates: Optional[list[dict[str, Any]]],
                pod_labels: Optional[dict[str, str]], pod_annotations: Optional[dict[str, str]],
                env: Optional[dict[str, str]], cancel: Any = None) -> T:
        """create_sandbox(), with an optional ctypes int that cancels the wait
        (the async client's task cancellation)."""
        if not warmpool:
            raise ValueError("warmpool name cannot be empty")
        shutdown = check_shutdown_after(shutdown_after_seconds)
        ns, claim, sandbox, pod_ip = self._create_and_wait(
            warmpool, namespace, sandbox_ready_timeout, shutdown, name=claim_name, labels=labels,
            shutdown_after_seconds=shutdown,
            volume_claim_templates_json=vcts_json(volume_claim_templates),
            pod_labels=pod_labels, pod_annotations=pod_annotations, env=env, cancel=cancel)
        try:
            sb = self._handle(ns, claim, sandbox, pod_ip)
        except BaseException:
            self.k8s_helper.delete_claim(claim, ns)
            raise
        with self._lock:
            self._active[(ns, claim)] = sb
        return sb

    def _create_and_wait(self, warmpool: str, namespace: str, timeout: float,
                         shutdown: Optional[int], **kw: Any) -> tuple[str, str, str, Optional[str]]:
        """One sbx_client_create() call: the claim's create, then the wait for
        Ready. Traced, it is upstream's two spans, ``create_claim`` and
        ``wait_for_claim_ready``, split where the C call says the create was
        answered; the claim carries the trace context (annotation
        ``opentelemetry.io/trace-context``) as upstream's does."""
        if not self.tracer:
            return self.k8s_helper.create(warmpool, namespace, timeout, **kw)[:4]
        t0 = time.time_ns()
        span = self.tracer.start_span(f"{self.trace_service_name}.create_claim", start_time=t0)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            carried = self.tracing_manager.get_trace_context_json()
            ns, claim, sandbox, pod_ip, created = self.k8s_helper.create(
                warmpool, namespace, timeout,
                annotations={"opentelemetry.io/trace-context": carried} if carried else None,
                **kw)
        except BaseException as e:
            record_error(span, e)
            span.end()
            raise
        finally:
            otel_context.detach(token)
        t2 = time.time_ns()
        t1 = min(max(int(created * 1e9), t0), t2) if created else t2
        span.set_attribute("sandbox.claim.name", claim)
        if shutdown:
            at = datetime.datetime.fromtimestamp(t0 / 1e9 + shutdown, datetime.timezone.utc)
            span.set_attribute("sandbox.lifecycle.shutdown_time",
                               at.strftime("%Y-%m-%dT%H:%M:%SZ"))
            span.set_attribute("sandbox.lifecycle.shutdown_policy", "Delete")
        span.end(end_time=t1)
        self.tracer.start_span(f"{self.trace_service_name}.wait_for_claim_ready",
                               start_time=t1).end(end_time=t2)
        return ns, claim, sandbox, pod_ip

    def get_sandbox(self, claim_name: str, namespace: str = "default",
                    resolve_timeout: int = 30) -> T:
        """A handle on the existing claim ``claim_name``: the tracked one while it
        is active, else a new one. SandboxNotFoundError when the claim or its
        Sandbox does not exist (or does not resolve within
        ``resolve_timeout`` seconds)."""
        key = (namespace, claim_name)
        try:
            ns, claim, sandbox, pod_ip = self.k8s_helper.wait(claim_name, namespace, False,
                                                              resolve_timeout)
            with self._lock:
                tracked = self._active.get(key)
            if tracked is not None and tracked.is_active and tracked.sandbox_id == sandbox:
                sb = tracked
            else:
                sb = self._handle(ns, claim, sandbox, pod_ip)
            if sb.status()[0] == "SandboxNotFound":
                raise SandboxNotFoundError(f"Sandbox {ns}/{sandbox} of claim {claim} not found")
        except (ValueError, SandboxNotFoundError):
            self._untrack(key)
            raise
        except (SandboxError, TimeoutError) as e:
            self._untrack(key)
            raise SandboxNotFoundError(f"Sandbox claim {namespace}/{claim_name}: {e}") from e
        with self._lock:
            self._active[key] = sb
        return sb

    def _untrack(self, key: tuple[str, str]) -> None:
        with self._lock:
            stale = self._active.pop(key, None)
        if stale is not None:
            stale.close_connection()

    def list_active_sandboxes(self) -> list[tuple[str, str]]:
        """(namespace, claim name) of the tracked handles still active."""
        with self._lock:
            for key in [k for k, s in self._active.items() if not s.is_active]:
                del self._active[key]
            return list(self._active)

    def list_all_sandboxes(self, namespace: str = "default",
                           label_selector: Optional[str] = None) -> list[str]:
        """The names of every SandboxClaim in ``namespace`` (matching the selector)."""
        return self.k8s_helper.list_claims(namespace, label_selector)

    def delete_sandbox(self, claim_name: str, namespace: str = "default") -> None:
        """Deletes the sandbox of ``claim_name``: terminates the tracked handle, or
        deletes the claim. Errors are logged, not raised (upstream)."""
        with self._lock:
            sb = self._active.pop((namespace, claim_name), None)
        try:
            self._delete_claim(sb, claim_name, namespace)
        except Exception as e:  # noqa: BLE001 - upstream logs and goes on
            log.error("deleting sandbox claim %s/%s failed: %s", namespace, claim_name, e)

    @trace_span("delete_claim")
    def _delete_claim(self, sb: Optional[T], claim_name: str, namespace: str) -> None:
        if sb is not None:
            sb.terminate()
        else:
            self.k8s_helper.delete_claim(claim_name, namespace)

    def delete_all(self) -> None:
        """Deletes every tracked sandbox."""
        with self._lock:
            keys = list(self._active)
        for ns, claim in keys:
            self.delete_sandbox(claim, ns)

    def get_sandbox_claim_warmpool_name(self, claim_name: str, namespace: str) -> str:
        """``spec.warmPoolRef.name`` of the claim; SandboxNotFoundError when missing."""
        return self.k8s_helper.claim_warm_pool(claim_name, namespace)
