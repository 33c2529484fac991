"""OpenTelemetry spans, optional: with ``opentelemetry-api`` installed
(``pip install agent-sandbox-c[tracing]``) and
``SandboxTracerConfig(enable_tracing=True)``, the client and its handles
emit spans named ``<trace_service_name>.<operation>`` with upstream's names
and attributes, through the application's tracer provider. Without the
package, or with tracing off, nothing is emitted and nothing fails: ``trace``
and ``context`` are then stand-ins whose spans record nothing.

``initialize_tracer()`` (called by the clients when tracing is on) installs
upstream's pipeline, a TracerProvider with a batch OTLP exporter, only when
``opentelemetry-sdk`` and the OTLP exporter are installed and the
application has not set a provider of its own.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import json
import logging
import threading
from typing import Any, Awaitable, Callable, Iterator, Optional, TypeVar

log = logging.getLogger(__name__)

__all__ = ["OPENTELEMETRY_AVAILABLE", "initialize_tracer", "trace_span", "async_trace_span",
           "TracerManager", "create_tracer_manager", "trace", "context",
           "TraceContextTextMapPropagator"]

try:
    from opentelemetry import context, trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    OPENTELEMETRY_AVAILABLE = True
except ImportError:
    OPENTELEMETRY_AVAILABLE = False

    class _Span:
        """A span that records nothing."""

        def is_recording(self) -> bool:
            return False

        def set_attribute(self, key: str, value: Any) -> None:
            pass

        def end(self, end_time: Optional[int] = None) -> None:
            pass

    class _Tracer:
        def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
            return contextlib.nullcontext(_Span())

        def start_span(self, *args: Any, **kwargs: Any) -> _Span:
            return _Span()

    class trace:  # type: ignore[no-redef]  # noqa: N801 - the module's name
        """Stand-in for ``opentelemetry.trace``."""

        @staticmethod
        def get_current_span() -> _Span:
            return _Span()

        @staticmethod
        def get_tracer(name: str, version: Optional[str] = None) -> _Tracer:
            return _Tracer()

        @staticmethod
        def set_tracer_provider(provider: Any) -> None:
            pass

        @staticmethod
        def set_span_in_context(span: Any, context: Any = None) -> None:
            return None

    class context:  # type: ignore[no-redef]  # noqa: N801
        """Stand-in for ``opentelemetry.context``."""

        @staticmethod
        def attach(*args: Any, **kwargs: Any) -> None:
            return None

        @staticmethod
        def detach(*args: Any, **kwargs: Any) -> None:
            pass

    class TraceContextTextMapPropagator:  # type: ignore[no-redef]
        """Stand-in: injects nothing."""

        def inject(self, carrier: dict, context: Any = None, setter: Any = None) -> None:
            pass

R = TypeVar("R")


def record_error(span: Any, exc: BaseException) -> None:
    """Marks a span started by hand (not as a context manager) failed."""
    if not OPENTELEMETRY_AVAILABLE or not span.is_recording():
        return
    from opentelemetry.trace import Status, StatusCode
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))

_PROVIDER: Any = None
_PROVIDER_LOCK = threading.Lock()


def initialize_tracer(service_name: str) -> None:
    """Installs a global TracerProvider (resource ``service.name``) exporting
    by OTLP in batches, once per process, when opentelemetry-sdk and the OTLP
    exporter are installed and no provider is set yet; otherwise does
    nothing (the application's provider, if any, receives the spans)."""
    global _PROVIDER
    if not OPENTELEMETRY_AVAILABLE:
        return
    with _PROVIDER_LOCK:
        if _PROVIDER is not None:
            return
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return  # the application configured its own
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            log.debug("opentelemetry-sdk or the OTLP exporter is not installed: spans go to "
                      "the application's tracer provider, if it sets one")
            return
        _PROVIDER = TracerProvider(resource=Resource(attributes={"service.name": service_name}))
        _PROVIDER.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(_PROVIDER)
        atexit.register(_PROVIDER.shutdown)


@contextlib.contextmanager
def _span(instance: Any, suffix: str) -> Iterator[Any]:
    tracer = getattr(instance, "tracer", None)
    if not tracer:
        yield trace.get_current_span()
        return
    name = f"{getattr(instance, 'trace_service_name', 'sandbox-client')}.{suffix}"
    with tracer.start_as_current_span(name) as span:
        yield span


def trace_span(span_suffix: str) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Decorates a method of an object with ``tracer`` (None: no span) and
    ``trace_service_name``: the call runs in the span
    ``<trace_service_name>.<span_suffix>``."""
    def decorator(func: Callable[..., R]) -> Callable[..., R]:
        @functools.wraps(func)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> R:
            with _span(self, span_suffix):
                return func(self, *args, **kwargs)
        return wrapper
    return decorator


def async_trace_span(span_suffix: str
                     ) -> Callable[[Callable[..., Awaitable[R]]], Callable[..., Awaitable[R]]]:
    """trace_span for coroutine methods."""
    def decorator(func: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
        @functools.wraps(func)
        async def wrapper(self: Any, *args: Any, **kwargs: Any) -> R:
            with _span(self, span_suffix):
                return await func(self, *args, **kwargs)
        return wrapper
    return decorator


class TracerManager:
    """The tracer of one client (instrumentation scope: the service name with
    ``_`` for ``-``), an optional ``<service>.lifecycle`` parent span, and
    the W3C trace context of the current span as JSON (the claim's
    ``opentelemetry.io/trace-context`` annotation)."""

    def __init__(self, service_name: str) -> None:
        self.tracer = trace.get_tracer(service_name.replace("-", "_"))
        self.lifecycle_span_name = f"{service_name}.lifecycle"
        self.parent_span: Any = None
        self.context_token: Any = None
        self.propagator = TraceContextTextMapPropagator()

    def start_lifecycle_span(self) -> None:
        """Starts the lifecycle span and makes it current on this thread."""
        self.parent_span = self.tracer.start_span(self.lifecycle_span_name)
        self.context_token = context.attach(trace.set_span_in_context(self.parent_span))

    def end_lifecycle_span(self) -> None:
        """Ends the lifecycle span, if started, and detaches its context."""
        if self.context_token:
            context.detach(self.context_token)
            self.context_token = None
        if self.parent_span:
            self.parent_span.end()
            self.parent_span = None

    def get_trace_context_json(self) -> str:
        """``{"traceparent": ..., "tracestate": ...}`` of the current span, or ""."""
        carrier: dict[str, str] = {}
        self.propagator.inject(carrier)
        return json.dumps(carrier) if carrier else ""


def create_tracer_manager(config: Any) -> tuple[Optional[TracerManager], Any]:
    """(manager, tracer) for a SandboxTracerConfig; (None, None) when tracing
    is off or opentelemetry-api is not installed."""
    if not getattr(config, "enable_tracing", False) or not OPENTELEMETRY_AVAILABLE:
        return None, None
    manager = TracerManager(config.trace_service_name)
    return manager, manager.tracer
