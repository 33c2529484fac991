"""The client's latency histograms, with upstream's names, help texts, label
names and buckets (milliseconds), in a registry of the package's own: the
SDK has no third-party dependency, so no ``prometheus_client``.
``metrics_utils.get_metrics()`` renders them in the Prometheus text format.

``sandbox_client_discovery_latency_ms{mode, status}`` is observed each time
a handle works out the way to its sandbox (libsandbox's connect hook,
sbx_connect_fn): ``mode`` is ``gateway`` (the Gateway's address wait),
``port_forward`` (the kubectl tunnel's start) or ``in_cluster`` (the
Sandbox lookup of the in-cluster configs; ours: upstream observes only the
first two and its gRPC pod tunnel), ``status`` is ``success`` or
``failure``. The suspend, resume and restore histograms belong to upstream's
GKE snapshot extension, which this package does not have: they are
registered, so scrapers find them, and stay empty.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Any, Iterator, Sequence

_LATENCY_BUCKETS_MS = (100, 250, 500, 750, 1000, 1250, 1500, 2000, 2500, 5000, 10000, 30000,
                       60000, 120000, 240000)


def _fmt(v: float) -> str:
    """A sample value as Python's repr of a float (what Prometheus clients write)."""
    if v == math.inf:
        return "+Inf"
    return repr(float(v))


def _escape(v: str) -> str:
    return v.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


class Registry:
    """The metrics ``get_metrics()`` renders, in registration order."""

    def __init__(self) -> None:
        self._metrics: list["Histogram"] = []
        self._lock = threading.Lock()

    def register(self, metric: "Histogram") -> None:
        with self._lock:
            if any(m.name == metric.name for m in self._metrics):
                raise ValueError(f"duplicate metric name {metric.name!r}")
            self._metrics.append(metric)

    def render(self) -> str:
        with self._lock:
            metrics = list(self._metrics)
        return "".join(line + "\n" for m in metrics for line in m.lines())


REGISTRY = Registry()


class _Child:
    """One label combination of a histogram."""

    def __init__(self, buckets: Sequence[float]) -> None:
        self.bounds = list(buckets) + [math.inf]
        self.counts = [0] * len(self.bounds)  # per bucket, not cumulative
        self.sum = 0.0
        self.created = time.time()
        self.lock = threading.Lock()

    def observe(self, value: float) -> None:
        """Records one value (milliseconds)."""
        v = float(value)
        with self.lock:
            self.sum += v
            for i, bound in enumerate(self.bounds):
                if v <= bound:
                    self.counts[i] += 1
                    break


class Histogram:
    """A labelled histogram: ``h.labels(status="success").observe(12.5)``."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = (),
                 buckets: Sequence[float] = _LATENCY_BUCKETS_MS,
                 registry: Registry | None = REGISTRY) -> None:
        self.name, self.documentation = name, documentation
        self.labelnames = tuple(labelnames)
        self.buckets = tuple(float(b) for b in buckets)
        self._children: dict[tuple[str, ...], _Child] = {}
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def labels(self, *values: Any, **kw: Any) -> _Child:
        """The series of these label values (by position or by name)."""
        if values and kw:
            raise ValueError("labels: give the values by position or by name, not both")
        if kw:
            if set(kw) != set(self.labelnames):
                raise ValueError(f"labels: expected {self.labelnames}, got {tuple(kw)}")
            values = tuple(kw[n] for n in self.labelnames)
        if len(values) != len(self.labelnames):
            raise ValueError(f"labels: expected {len(self.labelnames)} values")
        key = tuple(str(v) for v in values)
        with self._lock:
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = _Child(self.buckets)
        return child

    def observe(self, value: float) -> None:
        """Records one value on a histogram without labels."""
        if self.labelnames:
            raise ValueError(f"{self.name} has labels {self.labelnames}: use labels()")
        self.labels().observe(value)

    def samples(self) -> Iterator[tuple[str, dict[str, str], float]]:
        """(sample name, labels, value) of every series, as rendered."""
        with self._lock:
            children = list(self._children.items())
        for key, c in children:
            base = dict(zip(self.labelnames, key))
            with c.lock:
                counts, total, created = list(c.counts), c.sum, c.created
            acc = 0
            for bound, n in zip(c.bounds, counts):
                acc += n
                yield self.name + "_bucket", {"le": _fmt(bound), **base}, float(acc)
            yield self.name + "_count", base, float(acc)
            yield self.name + "_sum", base, total
            yield self.name + "_created", base, created

    def lines(self) -> Iterator[str]:
        """The text format: HELP, TYPE, the series, then the ``_created``
        gauge of each series (as Prometheus' Python client writes them)."""
        doc = self.documentation.replace("\\", r"\\").replace("\n", r"\n")
        yield f"# HELP {self.name} {doc}"
        yield f"# TYPE {self.name} histogram"
        created = []
        for name, labels, value in self.samples():
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            line = f"{name}{{{text}}} {_fmt(value)}" if text else f"{name} {_fmt(value)}"
            if name.endswith("_created"):
                created.append(line)
            else:
                yield line
        if created:
            yield f"# HELP {self.name}_created {doc}"
            yield f"# TYPE {self.name}_created gauge"
            yield from created


sandbox_client_discovery_latency_ms = Histogram(
    "sandbox_client_discovery_latency_ms",
    "Latency of establishing connection to the sandbox in milliseconds",
    ["mode", "status"])

sandbox_client_suspend_latency_ms = Histogram(
    "sandbox_client_suspend_latency_ms", "Latency of suspending the sandbox in milliseconds",
    ["status"])

sandbox_client_resume_latency_ms = Histogram(
    "sandbox_client_resume_latency_ms", "Latency of resuming the sandbox in milliseconds",
    ["status"])

sandbox_client_restore_latency_ms = Histogram(
    "sandbox_client_restore_latency_ms",
    "Latency of restoring the sandbox from a snapshot in milliseconds", ["status"])

#: libsandbox's connect modes (sbx_connect_mode) as the ``mode`` label;
#: DIRECT (3rd) never reports
_MODES = {0: "port_forward", 1: "gateway", 3: "in_cluster"}


def observe_discovery(_userdata: Any, mode: int, rc: int, elapsed_ms: float) -> None:
    """The sbx_connect_fn behind every handle: one discovery observed."""
    try:
        sandbox_client_discovery_latency_ms.labels(
            mode=_MODES.get(mode, str(mode)),
            status="success" if rc == 0 else "failure").observe(elapsed_ms)
    except Exception:  # noqa: BLE001 - a metric never breaks a request
        pass
