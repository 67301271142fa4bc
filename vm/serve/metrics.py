"""The server's metrics, rendered in Prometheus's text exposition format for ``GET /metrics``.

Counters and histograms per model, kept under one lock (a handful of additions per
request); histograms are cumulative buckets with ``_sum`` and ``_count``, as Prometheus's
client libraries write them::

    irvm_requests_total{model="resnet18"} 2000
    irvm_request_failures_total{model="resnet18",code="400"} 3
    irvm_request_duration_seconds_bucket{model="resnet18",le="0.05"} 1874
    irvm_queue_duration_seconds_bucket{...}     time from arrival to the start of its run
    irvm_batch_size_bucket{...}                 requests per run (1 without dynamic batching)
"""

from __future__ import annotations

import threading
from collections import defaultdict

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


class Histogram:
    """Cumulative buckets, a sum and a count (Prometheus's histogram)."""

    def __init__(self, bounds: tuple[float, ...]):
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[i] += 1
        self.total += value
        self.count += 1

    def lines(self, name: str, labels: str) -> list[str]:
        sep = "," if labels else ""
        out = [f'{name}_bucket{{{labels}{sep}le="{_number(b)}"}} {c}' for b, c in zip(self.bounds, self.counts)]
        out.append(f'{name}_bucket{{{labels}{sep}le="+Inf"}} {self.count}')
        out.append(f"{name}_sum{{{labels}}} {self.total!r}")
        out.append(f"{name}_count{{{labels}}} {self.count}")
        return out


def _number(b: float) -> str:
    return str(int(b)) if float(b).is_integer() else repr(b)


class Metrics:
    """What ``GET /metrics`` reports; every method is thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[str, int] = defaultdict(int)
        self.failures: dict[tuple[str, int], int] = defaultdict(int)
        self.latency: dict[str, Histogram] = {}
        self.queue: dict[str, Histogram] = {}
        self.batch: dict[str, Histogram] = {}

    def request(self, model: str, status: int, seconds: float) -> None:
        """One infer request answered with ``status`` after ``seconds``."""
        with self._lock:
            self.requests[model] += 1
            if status >= 400:
                self.failures[(model, status)] += 1
            self._histogram(self.latency, model, LATENCY_BUCKETS).observe(seconds)

    def run(self, model: str, batch_size: int, queued: list[float]) -> None:
        """One run of ``batch_size`` requests, which waited ``queued`` seconds each."""
        with self._lock:
            self._histogram(self.batch, model, BATCH_BUCKETS).observe(batch_size)
            wait = self._histogram(self.queue, model, LATENCY_BUCKETS)
            for seconds in queued:
                wait.observe(seconds)

    @staticmethod
    def _histogram(table: dict[str, Histogram], model: str, bounds: tuple[float, ...]) -> Histogram:
        if model not in table:
            table[model] = Histogram(bounds)
        return table[model]

    def render(self) -> str:
        """The Prometheus text exposition of every metric."""
        with self._lock:
            out = ["# HELP irvm_requests_total Infer requests received, per model.",
                   "# TYPE irvm_requests_total counter"]
            out += [f'irvm_requests_total{{model="{_label(m)}"}} {n}' for m, n in sorted(self.requests.items())]
            out += ["# HELP irvm_request_failures_total Infer requests answered with an error, per model and status.",
                    "# TYPE irvm_request_failures_total counter"]
            out += [f'irvm_request_failures_total{{model="{_label(m)}",code="{c}"}} {n}'
                    for (m, c), n in sorted(self.failures.items())]
            for name, table, what in (
                ("irvm_request_duration_seconds", self.latency, "Time from a request's arrival to its response."),
                ("irvm_queue_duration_seconds", self.queue, "Time a request waited before its run started."),
                ("irvm_batch_size", self.batch, "Requests per run (dynamic batching stacks several)."),
            ):
                out += [f"# HELP {name} {what}", f"# TYPE {name} histogram"]
                for model, histogram in sorted(table.items()):
                    out += histogram.lines(name, f'model="{_label(model)}"')
        return "\n".join(out) + "\n"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


__all__ = ["Histogram", "Metrics"]
