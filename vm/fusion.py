"""Fused kernels: one fusion group, run in one pass over memory.

A ``prim::FusionGroup`` holds a sub-graph of elementwise operators.  Run op by op, each
operator streams its whole inputs from memory and writes a whole temporary back: for the
ratio_iou group that is about thirty-seven array reads and twenty writes.  A fused kernel
reads the group's inputs and writes its outputs once.

``FusedKernel`` does it with numpy alone, by cache blocking: the elements are cut into
blocks (64K-256K elements, so a block's temporaries stay in L2), and the group's operators
run block by block through scratch buffers with the registered out variants.  The blocks
are split between the calling thread and a small thread pool (numpy releases the GIL in
its ufuncs), so both cores work.  Because every operator is elementwise, a block computes
exactly what the unfused operators compute for those elements: same kernels, same dtypes,
same NaN and clamp behaviour, bit for bit.

When the blocked path cannot apply, the group runs unfused, through the very same bound
kernels, and the kernel counts it with the reason (``irvm profile`` reports it): the
group is small (below two blocks, where blocking only adds overhead), or its tensor inputs
do not share one shape (broadcasting other than against 0-dim tensors and scalars).

The first block of a call is run with the plain kernels; it tells each value's dtype and
whether it is elementwise-full (depends on a full-shape input) or a 0-dim constant of the
call.  Later blocks write into per-thread scratch of those dtypes.

Errors inside a group name the original node and its ``file:line:col``, not the group.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from compiler.diagnostics import RunError, Span
from vm import fusion_numba
from vm.ops.registry import OpRef, bind, bind_out, prim_factory

MIN_BLOCK = 1 << 16  # 64K elements: below this, per-call overhead eats the cache win
MAX_BLOCK = 1 << 18  # 256K elements: the best block measured for a 16M-element chain
THREADS = max(1, min(4, os.cpu_count() or 1))

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_scratch = threading.local()


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="irvm-fusion")
        return _pool


class _Step:
    """One operator of the group: its kernels, where its inputs are, where it writes."""

    __slots__ = ("inputs", "kernel", "out", "output", "ref", "span", "text")

    def __init__(self, ref: OpRef, inputs: tuple[int, ...], output: int, span: Span | None, text: str):
        self.kernel, self.out, self.ref = bind(ref), bind_out(ref), ref
        self.inputs, self.output, self.span, self.text = inputs, output, span, text


class _NumbaKernel(NamedTuple):
    kernel: Callable[..., Any]
    out_dtypes: tuple[np.dtype, ...]


class FusedKernel:
    """A fusion group's sub-graph compiled into one callable.

    Built once, when the program is compiled or loaded, and shared by every thread: a call
    keeps its state in locals and per-thread scratch.  ``stats`` counts fused and unfused
    calls and the reasons of the latter.
    """

    def __init__(self, subgraph: Any, name: str = "prim::FusionGroup", min_block: int | None = None,
                 max_block: int | None = None):
        from compiler.resolve import constant_value, resolve

        self.name = name
        self.min_block = MIN_BLOCK if min_block is None else min_block
        self.max_block = max(self.min_block, MAX_BLOCK if max_block is None else max_block)
        index: dict[int, int] = {}
        self.n_inputs = len(subgraph.inputs)
        for i, v in enumerate(subgraph.inputs):
            index[id(v)] = i
        self.constants: dict[int, Any] = {}
        steps: list[_Step] = []
        n_slots = self.n_inputs
        for node in subgraph.nodes:
            if node.kind == "prim::Constant":
                index[id(node.output)] = n_slots
                self.constants[n_slots] = constant_value(node)
                n_slots += 1
                continue
            ref = resolve(node)
            index[id(node.output)] = n_slots
            steps.append(_Step(ref, tuple(index[id(v)] for v in node.inputs), n_slots, node.span, repr(node)))
            n_slots += 1
        self.steps = tuple(steps)
        self.n_slots = n_slots
        self.outputs = tuple(index[id(v)] for v in subgraph.outputs)
        self.input_types = tuple(v.type for v in subgraph.inputs)
        self.numba_kernels: dict[tuple[Any, ...], _NumbaKernel] = {}
        self.stats = {"fused": 0, "unfused": 0, "numba": 0}
        self._pool = _thread_pool()  # made now, so the first big call costs what later ones do
        self.fallback_reasons: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- running ------------------------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        shape = self._common_shape(args)
        n = math.prod(shape) if shape is not None else 0
        if shape is None or n < 2 * self.min_block:
            reason = "inputs of different shapes" if shape is None else "smaller than two blocks"
            self._count("unfused", reason)
            return self._result(self._run_whole(args))
        if self.numba_kernels and n >= fusion_numba.THRESHOLD:
            values = self._run_numba(args, shape, n)
            if values is not None:
                self._count("numba", None)
                return self._result(values)
        self._count("fused", None)
        return self._result(self._run_blocked(args, shape, n))

    def run_unfused(self, *args: Any) -> Any:
        """The group's operators one by one over whole arrays: what the kernel must equal."""
        return self._result(self._run_whole(args))

    def _count(self, kind: str | None, reason: str | None) -> None:
        """Count a call of ``kind`` (fused, unfused, numba) and, if given, why it fell back."""
        with self._lock:
            if kind is not None:
                self.stats[kind] += 1
            if reason is not None:
                self.fallback_reasons[reason] = self.fallback_reasons.get(reason, 0) + 1

    def _result(self, values: list[Any]) -> Any:
        outs = [values[i] for i in self.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _slots(self, args: Sequence[Any]) -> list[Any]:
        values: list[Any] = [None] * self.n_slots
        values[: self.n_inputs] = args
        for slot, value in self.constants.items():
            values[slot] = value
        return values

    def _apply(self, step: _Step, values: list[Any], out: np.ndarray | None = None) -> None:
        try:
            args = [values[i] for i in step.inputs]
            if out is not None and step.out is not None:
                result = step.out(out, *args)
                if result is not out:  # the out variant declined the buffer
                    out[...] = result
                    result = out
            else:
                result = step.kernel(*args)
        except RunError:
            raise
        except Exception as exc:
            raise RunError(
                f"{type(exc).__name__}: {exc}\n  while executing {step.text} (inside {self.name})", step.span
            ) from exc
        values[step.output] = result

    def _run_whole(self, args: Sequence[Any]) -> list[Any]:
        values = self._slots(args)
        for step in self.steps:
            self._apply(step, values)
        return values

    @staticmethod
    def _common_shape(args: Sequence[Any]) -> tuple[int, ...] | None:
        """The one shape all dimensioned tensor inputs share, or None (then: unfused)."""
        shape: tuple[int, ...] | None = None
        for a in args:
            if isinstance(a, np.ndarray) and a.ndim > 0:
                if shape is None:
                    shape = a.shape
                elif a.shape != shape:
                    return None
        return shape if shape is not None else None

    def _run_blocked(self, args: Sequence[Any], shape: tuple[int, ...], n: int) -> list[Any]:
        flat = [a.reshape(-1) if isinstance(a, np.ndarray) and a.ndim > 0 else a for a in args]
        full = [isinstance(a, np.ndarray) and a.ndim > 0 for a in args] + [False] * (self.n_slots - self.n_inputs)
        for step in self.steps:
            full[step.output] = any(full[i] for i in step.inputs)
        block = min(self.max_block, max(self.min_block, -(-n // (2 * THREADS))))
        # The first block, with the plain kernels, gives every value's dtype.
        first = self._slots([a[:block] if f else a for a, f in zip(flat, full)])
        for step in self.steps:
            self._apply(step, first)
        results: dict[int, Any] = {}
        for slot in set(self.outputs):
            if full[slot]:
                out = np.empty(n, dtype=first[slot].dtype)
                out[:block] = first[slot]
                results[slot] = out
            else:
                results[slot] = first[slot]
        starts = list(range(block, n, block))
        chunks = [starts[i::THREADS] for i in range(THREADS)] if len(starts) > 1 else [starts]
        chunks = [c for c in chunks if c]
        dtypes = {s.output: first[s.output].dtype for s in self.steps if full[s.output]}
        futures = [self._pool.submit(self._run_blocks, flat, full, results, dtypes, c, block, n) for c in chunks[1:]]
        if chunks:
            self._run_blocks(flat, full, results, dtypes, chunks[0], block, n)
        for f in futures:
            f.result()
        values: list[Any] = [None] * self.n_slots
        for slot, value in results.items():
            values[slot] = value.reshape(shape) if full[slot] else value
        return values

    # -- the numba fuser ----------------------------------------------------------------

    def enable_numba(self, samples: Sequence[Sequence[Any]] | None = None) -> list[str]:
        """Compile numba kernels now, for the dtypes of ``samples`` (argument lists), or for
        the dtypes the sub-graph declares (float32 for a plain ``Tensor``).  Calls whose
        dtypes were not compiled run blocked: nothing is compiled on a run.  Returns the
        reasons a signature could not be compiled (empty when all were)."""
        if not fusion_numba.AVAILABLE:
            return ["numba is not installed (pip install irvm[fast])"]
        if not fusion_numba.supports([s.ref.name for s in self.steps]):
            missing = sorted({s.ref.name for s in self.steps} - set(fusion_numba.EXPRESSIONS) - set(fusion_numba.WHERE))
            return [f"no numba expression for {', '.join(missing)}"]
        problems = []
        for args in samples or [_declared_sample(self.input_types)]:
            try:
                key, compiled = self._numba_signature(args)
                self.numba_kernels[key] = compiled
            except Exception as exc:  # noqa: BLE001 - a signature numba cannot compile runs blocked
                problems.append(f"{type(exc).__name__}: {exc}")
        return problems

    def _numba_signature(self, args: Sequence[Any]) -> tuple[tuple[Any, ...], _NumbaKernel]:
        full = [_is_full(a) for a in args] + [False] * (self.n_slots - self.n_inputs)
        for step in self.steps:
            full[step.output] = any(full[i] for i in step.inputs)
        if not all(full[o] for o in self.outputs):
            raise ValueError("an output does not depend on a full-size input")
        probe = self._slots([a.reshape(-1)[:1] if f else a for a, f in zip(args, full)])
        for step in self.steps:  # the unfused kernels tell every value's dtype
            self._apply(step, probe)
        dtypes = {s.output: np.asarray(probe[s.output]).dtype for s in self.steps}
        dtypes.update({i: a.dtype for i, a in enumerate(args) if isinstance(a, np.ndarray)})
        steps = [(s.ref.name, s.inputs, s.output, s.ref.defaults) for s in self.steps]
        source = fusion_numba.generate(steps, dtypes, full, self.constants, self.n_inputs, self.outputs)
        out_dtypes = tuple(dtypes[slot] for slot in dict.fromkeys(self.outputs))
        tiny = [a.reshape(-1)[:1] if _is_full(a) else a for a in args]
        compiled = _NumbaKernel(fusion_numba.load_kernel(source), out_dtypes)
        try:
            self._call_numba(compiled, tiny, 1)  # compiles, or loads the machine code cached on disk
        except Exception:  # noqa: BLE001 - a stale disk cache: compile afresh, once
            compiled = _NumbaKernel(fusion_numba.load_kernel(source, fresh=True), out_dtypes)
            self._call_numba(compiled, tiny, 1)
        return _numba_key(args), compiled

    def _call_numba(self, compiled: _NumbaKernel, args: Sequence[Any], n: int) -> list[np.ndarray]:
        outs = [np.empty(n, dtype=dtype) for dtype in compiled.out_dtypes]
        flat = [a.reshape(-1) if _is_full(a) else (a[()] if isinstance(a, np.ndarray) else a) for a in args]
        fusion_numba.call(compiled.kernel, [*flat, *outs])
        return outs

    def _run_numba(self, args: Sequence[Any], shape: tuple[int, ...], n: int) -> list[Any] | None:
        compiled = self.numba_kernels.get(_numba_key(args))
        if compiled is None:
            self._count(None, "numba: dtypes not compiled ahead")  # the blocked run is counted after
            return None
        values: list[Any] = [None] * self.n_slots
        for slot, out in zip(dict.fromkeys(self.outputs), self._call_numba(compiled, args, n)):
            values[slot] = out.reshape(shape)
        return values

    def _run_blocks(self, flat: list[Any], full: list[bool], results: dict[int, Any], dtypes: dict[int, np.dtype],
                    starts: list[int], block: int, n: int) -> None:
        scratch = _thread_scratch(dtypes, block)
        for lo in starts:
            hi = min(lo + block, n)
            values = self._slots([a[lo:hi] if f else a for a, f in zip(flat, full)])
            for step in self.steps:
                slot = step.output
                if not full[slot]:
                    self._apply(step, values)
                elif slot in results:
                    self._apply(step, values, results[slot][lo:hi])
                else:
                    self._apply(step, values, scratch[slot][: hi - lo])


def _is_full(a: Any) -> bool:
    return isinstance(a, np.ndarray) and a.ndim > 0


def _numba_key(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple((a.dtype.str, a.ndim > 0) if isinstance(a, np.ndarray) else type(a).__name__ for a in args)


_DECLARED = {"Float": np.float32, "Double": np.float64, "Long": np.int64, "Int": np.int32, "Bool": np.bool_,
             "Half": np.float16}


def _declared_sample(types: Sequence[Any]) -> list[Any]:
    """One-element arguments with the dtypes a sub-graph declares (float32 for ``Tensor``)."""
    from compiler import types as T

    sample: list[Any] = []
    for t in types:
        if t is None or isinstance(t, T.TensorType):
            dtype = _DECLARED.get(getattr(t, "dtype", None) or "Float", np.float32)
            sample.append(np.ones(1, dtype=dtype))
        elif t == T.INT:
            sample.append(1)
        elif t == T.BOOL:
            sample.append(True)
        else:
            sample.append(1.0)
    return sample


def _thread_scratch(dtypes: dict[int, np.dtype], block: int) -> dict[int, np.ndarray]:
    """This thread's scratch buffers for one call's intermediates, reused across calls."""
    cache: dict[tuple[str, int], list[np.ndarray]] = getattr(_scratch, "buffers", None) or {}
    _scratch.buffers = cache
    taken: dict[tuple[str, int], int] = {}
    out: dict[int, np.ndarray] = {}
    for slot, dtype in dtypes.items():
        key = (dtype.str, block)
        k = taken.get(key, 0)
        pool = cache.setdefault(key, [])
        if k == len(pool):
            pool.append(np.empty(block, dtype=dtype))
        out[slot] = pool[k]
        taken[key] = k + 1
    return out


FUSERS = ("blocked", "numba")


def enable_fuser(fuser: str, kernels: Any) -> list[str]:
    """Prepare the fused kernels among ``kernels`` for ``fuser``, now (never on a run).

    "blocked" needs nothing; "numba" compiles each kernel's numba loop for the dtypes its
    group declares.  Returns what could not be compiled (those groups run blocked); a
    missing numba is an error, since the user asked for it."""
    if fuser not in FUSERS:
        raise ValueError(f"unknown fuser {fuser!r} (choose from {', '.join(FUSERS)})")
    if fuser == "blocked":
        return []
    if not fusion_numba.AVAILABLE:
        raise RunError("the numba fuser needs numba: pip install irvm[fast]")
    problems: list[str] = []
    for kernel in kernels:
        if isinstance(kernel, FusedKernel):
            problems += [f"{kernel.name}: {p}" for p in kernel.enable_numba()]
    return problems


@prim_factory("prim::FusedKernel")
def _fused_kernel_factory(attrs: dict[str, Any], n_inputs: int, n_outputs: int) -> Callable[..., Any]:
    """Bind an emitted fused kernel: ``attrs["graph"]`` is the group's sub-graph as IR text
    and ``attrs["spans"]`` the original spans of its nodes (for error messages)."""
    from compiler.parser import parse

    graph = parse(str(attrs["graph"]), "<fusion group>").main
    spans = attrs.get("spans", ())
    operators = [n for n in graph.nodes if n.kind != "prim::Constant"]
    for node, span in zip(operators, spans):
        if span is not None:
            node.span = Span(str(span[0]), int(span[1]), int(span[2]), span[3] if len(span) > 3 else None)
    return FusedKernel(graph, str(attrs.get("name", "prim::FusionGroup")))


def fused_opref(node: Any) -> OpRef:
    """The OpRef an emitter stores for a ``prim::FusionGroup`` node."""
    from compiler.printer import print_graph

    subgraph = node.attrs["Subgraph"]
    spans = tuple(
        None if n.span is None else (n.span.file, n.span.line, n.span.col, n.span.source_line)
        for n in subgraph.nodes
        if n.kind != "prim::Constant"
    )
    attrs = (("graph", print_graph(subgraph)), ("name", node.kind), ("spans", spans))
    return OpRef("prim::FusedKernel", len(node.inputs), len(node.outputs), attrs=attrs)
