"""``get_metrics()`` and ``print_metrics()``: the client's histograms
(metrics.py) in the Prometheus text exposition format, as upstream's
functions of the same names return them (upstream renders the
``prometheus_client`` default registry, so its text also holds that
library's process and Python collectors; this package has only its own)."""
from __future__ import annotations

from .metrics import REGISTRY


def get_metrics() -> str:
    """The client's metrics in the Prometheus text format (version 0.0.4)."""
    return REGISTRY.render()


def print_metrics() -> None:
    """Prints ``get_metrics()`` to stdout."""
    print(get_metrics())
