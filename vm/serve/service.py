"""One served model: its protocol metadata, K runtime instances, and dynamic batching.

A ``ServedModel`` wraps a loaded model (a ``vm.Model``: ``inputs``, ``outputs``,
``run(output_names, feeds)``, thread-safe) and runs its calls on ``instances`` worker
threads, so K requests run at once on one loaded program (each call takes a runtime of its
own from the model, as ``vm.RuntimePool`` does) and the event loop never waits on numpy.

With ``max_batch_size`` > 1 (only for a model the user says batches along its first axis),
requests go through a ``Batcher``: a thread takes the first waiting request, gathers
more for up to ``batch_delay`` seconds or until ``max_batch_size`` rows, stacks the
requests whose inputs agree in everything but the first dimension (dtype, trailing
shape, every non-tensor input equal), runs them as one call and splits every output back
by rows.  A request that cannot be stacked (a scalar-only input, more rows than a batch, a
model whose output does not keep the batch axis) runs alone, so the answer is always the
unbatched one.

``classify`` maps a failure to the protocol's status: a ``RunError`` raised before the
first operator (bad count, dtype or shape, the checks of ``irvm run``) is the caller's
(400); a failure inside the run (an operator raised) is the server's (500).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
from typing import Any

import attrs
import numpy as np

from vm.core.errors import IRError, RunError
from vm.serve.metrics import Metrics
from vm.serve.protocol import ProtocolError, TensorSpec, spec_from_node_arg


@attrs.frozen
class ServeOptions:
    """How a model is served: ``instances`` concurrent runs; dynamic batching when
    ``max_batch_size`` > 1, waiting at most ``batch_delay_ms`` for a batch to fill; a
    request not answered within ``request_timeout`` seconds (None: no limit) is answered
    with 504 (``vm.serve.asgi``)."""

    instances: int = 1
    max_batch_size: int = 1
    batch_delay_ms: float = 5.0
    request_timeout: float | None = None


def classify(exc: BaseException) -> tuple[int, str]:
    """(HTTP status, message) for a failure while answering an infer request."""
    if isinstance(exc, ProtocolError):
        return exc.status, exc.message
    if isinstance(exc, RunError) and getattr(exc, "static_node", None) is None and getattr(exc, "cause", None) is None:
        return 400, str(exc)  # refused before the first operator: the inputs are wrong
    if isinstance(exc, IRError):
        return 500, str(exc)
    return 500, f"{type(exc).__name__}: {exc}"


class ServedModel:
    """A model behind the protocol: metadata, and ``infer`` on its worker threads."""

    def __init__(self, name: str, model: Any, options: ServeOptions | None = None,
                 metrics: Metrics | None = None, version: str = "1", platform: str = "irvm"):
        self.name = name
        self.model = model
        self.version = version
        self.platform = platform
        self.options = options or ServeOptions()
        if self.options.instances < 1 or self.options.max_batch_size < 1:
            raise ValueError("instances and max_batch_size are at least 1")
        self.metrics = metrics or Metrics()
        self.inputs: list[TensorSpec] = [spec_from_node_arg(a) for a in model.inputs]
        self.outputs: list[TensorSpec] = [spec_from_node_arg(a) for a in model.outputs]
        self.output_names = [spec.name for spec in self.outputs]
        self._pool = ThreadPoolExecutor(self.options.instances, thread_name_prefix=f"irvm-{name}")
        self._batcher = Batcher(self) if self.options.max_batch_size > 1 else None

    def metadata(self) -> dict[str, Any]:
        """The protocol's ``$metadata_model_response`` (with ``parameters`` naming the quantized
        arithmetic, for a quantized model: ``vm.Model.quantized_arithmetic``)."""
        response = {
            "name": self.name, "versions": [self.version], "platform": self.platform,
            "inputs": [s.metadata() for s in self.inputs], "outputs": [s.metadata() for s in self.outputs],
        }
        arithmetic = getattr(self.model, "quantized_arithmetic", None)
        if arithmetic:
            response["parameters"] = dict(arithmetic)
        return response

    async def infer(self, feeds: dict[str, Any], names: Sequence[str] | None) -> list[Any]:
        """The outputs ``names`` (None: all) for ``feeds``, computed off the event loop."""
        return await asyncio.wrap_future(self.submit(feeds, names))

    def submit(self, feeds: dict[str, Any], names: Sequence[str] | None) -> Future:
        """A future of the outputs ``names`` (None: all) for ``feeds``."""
        wanted = list(names) if names is not None else list(self.output_names)
        if self._batcher is not None:
            return self._batcher.submit(feeds, wanted)
        arrived = time.perf_counter()
        return self._pool.submit(self._run_one, feeds, wanted, arrived)

    def _run_one(self, feeds: dict[str, Any], names: list[str], arrived: float) -> list[Any]:
        self.metrics.run(self.name, 1, [time.perf_counter() - arrived])
        return self.run(feeds, names)

    def run(self, feeds: dict[str, Any], names: list[str]) -> list[Any]:
        """One call of the model (on the calling thread), numpy warnings silenced as irvm run does."""
        with np.errstate(all="ignore"):
            return list(self.model.run(names, feeds))

    def close(self, grace: float | None = None) -> int:
        """Stop the threads: the runs not started are cancelled, the ones under way get
        ``grace`` seconds (None: as long as they take) to finish.  A run cannot be
        interrupted mid-kernel, so one stuck past the grace is left to its thread; returns
        how many threads are still running."""
        if self._batcher is not None:
            self._batcher.close(grace)
        self._pool.shutdown(wait=grace is None, cancel_futures=grace is not None)
        if grace is None:
            return 0
        end = time.perf_counter() + grace
        workers = list(getattr(self._pool, "_threads", ()))  # ThreadPoolExecutor keeps its threads there
        for thread in workers:
            thread.join(max(0.0, end - time.perf_counter()))
        return sum(t.is_alive() for t in workers)


@attrs.define(eq=False)
class _Pending:
    feeds: dict[str, Any]
    names: list[str]
    rows: int | None  # rows along the first axis; None when it cannot be stacked
    key: Any
    future: Future
    arrived: float


class Batcher:
    """Dynamic batching for one ServedModel (see the module docstring)."""

    def __init__(self, served: ServedModel):
        self.served = served
        self.max_rows = served.options.max_batch_size
        self.delay = served.options.batch_delay_ms / 1000.0
        self._queue: queue.Queue[_Pending | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=f"irvm-batch-{served.name}", daemon=True)
        self._thread.start()

    def submit(self, feeds: dict[str, Any], names: list[str]) -> Future:
        rows, key = _stacking(feeds)
        if rows is not None and rows > self.max_rows:
            rows = None
        pending = _Pending(feeds, names, rows, key, Future(), time.perf_counter())
        self._queue.put(pending)
        return pending.future

    def close(self, grace: float | None = None) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30 if grace is None else grace)

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = self._gather(first)
            for group in _groups(batch, self.max_rows):
                self.served._pool.submit(self._run, group)
            if stop:
                return

    def _gather(self, first: _Pending) -> tuple[list[_Pending], bool]:
        """``first`` and what arrives within the delay, up to max_rows stackable rows."""
        batch, rows = [first], first.rows or self.max_rows
        deadline = time.perf_counter() + self.delay
        while rows < self.max_rows:
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            try:
                item = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
            rows += item.rows or 0
        return batch, False

    def _run(self, group: list[_Pending]) -> None:
        try:
            self._run_group(group)
        except BaseException as err:  # noqa: BLE001 - no request is left waiting
            for p in group:
                _resolve(p.future, error=err)

    def _run_group(self, group: list[_Pending]) -> None:
        group = [p for p in group if not p.future.cancelled()]  # timed out while they waited
        if not group:
            return
        started = time.perf_counter()
        self.served.metrics.run(self.served.name, len(group), [started - p.arrived for p in group])
        if len(group) == 1:
            _settle(group[0], lambda: self.served.run(group[0].feeds, group[0].names))
            return
        names = sorted({n for p in group for n in p.names}, key=self.served.output_names.index)
        stacked = {k: np.concatenate([p.feeds[k] for p in group]) if _stacks(v) else v
                   for k, v in group[0].feeds.items()}
        try:
            outputs = self.served.run(stacked, names)
        except BaseException as err:  # noqa: BLE001 - each request alone says whose input failed
            del err
            for p in group:
                _settle(p, lambda p=p: self.served.run(p.feeds, p.names))
            return
        total = sum(p.rows or 0 for p in group)
        if not all(isinstance(o, np.ndarray) and o.ndim >= 1 and o.shape[0] == total for o in outputs):
            for p in group:  # the outputs do not keep the batch axis: the model does not batch
                _settle(p, lambda p=p: self.served.run(p.feeds, p.names))
            return
        at = 0
        for p in group:
            rows = p.rows or 0
            parts = {n: o[at : at + rows] for n, o in zip(names, outputs)}
            _resolve(p.future, [parts[n] for n in p.names])
            at += rows


def _settle(p: _Pending, compute: Any) -> None:
    if p.future.cancelled():  # its request timed out while it waited: nobody reads it
        return
    try:
        _resolve(p.future, compute())
    except BaseException as err:  # noqa: BLE001 - handed to the waiting request
        _resolve(p.future, error=err)


def _resolve(future: Future, value: Any = None, error: BaseException | None = None) -> None:
    """Settle ``future``, unless its request gave up on it (timed out, cancelled) meanwhile."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
    except InvalidStateError:
        pass


def _stacks(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.ndim >= 1 and v.dtype != object


def _stacking(feeds: dict[str, Any]) -> tuple[int | None, Any]:
    """(rows, key): requests with equal keys stack along the first axis; rows None: alone."""
    rows, key = None, []
    for name in sorted(feeds):
        v = feeds[name]
        if _stacks(v):
            if rows is not None and v.shape[0] != rows:
                return None, object()
            rows = v.shape[0]
            key.append((name, v.dtype.str, v.shape[1:]))
        elif isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype != object:
            key.append((name, v.dtype.str, v.item()))
        elif isinstance(v, (str, int, float, bool)):
            key.append((name, type(v).__name__, v))
        else:
            return None, object()
    if rows is None:
        return None, object()
    return rows, tuple(key)


def _groups(batch: list[_Pending], max_rows: int) -> list[list[_Pending]]:
    """``batch`` split into stackable groups of at most ``max_rows`` rows, in arrival order."""
    groups: list[list[_Pending]] = []
    open_: dict[Any, tuple[list[_Pending], list[int]]] = {}
    for p in batch:
        if p.rows is None:
            groups.append([p])
            continue
        entry = open_.get(p.key)
        if entry is None or entry[1][0] + p.rows > max_rows:
            entry = ([], [0])
            open_[p.key] = entry
            groups.append(entry[0])
        entry[0].append(p)
        entry[1][0] += p.rows
    return groups


__all__ = ["Batcher", "ServeOptions", "ServedModel", "classify"]
