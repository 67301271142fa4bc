"""Fused kernels: one fusion group, run in one pass over memory.

A ``prim::FusionGroup`` holds a sub-graph of elementwise operators.  Run op by op, each
operator streams its whole inputs from memory and writes a whole temporary back: for the
ratio_iou group that is about thirty-seven array reads and twenty writes, and on this
machine every fresh temporary also costs its page faults.  A fused kernel reads the
group's inputs and writes its outputs once.

``FusedKernel`` does it with numpy alone, by cache blocking: the elements are cut into
blocks (``MAX_BLOCK`` elements at most), and each block runs the group's *block plan*
(``vm.fusion.plan``): straight-line ufunc calls with ``out=`` into a few per-thread
scratch buffers that stay in L2, compiled once per dtype signature (the declared one
when the kernel is built).  Calls with enough work (``PARALLEL_WORK``) split their blocks
between the calling thread and a small thread pool (numpy releases the GIL in its
ufuncs), up to ``vm.fusion.threads.get_num_threads()`` threads in all.  Because every operator is elementwise, a block computes exactly
what the unfused operators compute for those elements: same dtypes, same NaN and clamp
behaviour, the same bits.

When the blocked path cannot apply, the group runs unfused, through the very same bound
kernels called straight-line (no interpreter in between), and the kernel counts it with
the reason (``irvm profile`` reports it): the call is small (below two ``MIN_BLOCK``s,
where blocking only adds overhead), its tensor inputs do not share one shape
(broadcasting other than against 0-dim tensors and scalars), or its dtypes have no plan.

With numba installed and enabled (``enable_numba``), big calls run a compiled single-pass
loop instead (``vm.fusion.numba_backend``).

Errors inside a group name the original node and its ``file:line:col``, not the group:
a failing call is re-run operator by operator to find it.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, NoReturn

import numpy as np

from vm.core.errors import RunError, Span
from vm.fusion import numba_backend as fusion_numba
from vm.fusion.plan import BlockPlan, make_plan, make_whole, probe_dtypes
from vm.fusion.threads import borrow, get_num_threads, give_back, thread_pool
from vm.ops.registry import OpRef, bind, bind_out, prim_factory

MIN_BLOCK = 1 << 13  # 8K elements: calls below two blocks run unfused (tools/bench_fusion.py)
# 128K elements: best or within noise of the best in every --sweep-blocks run of
# tools/bench_fusion.py (ratio_iou 8e5, 5-op chain 16M); below 32K the per-block Python costs show.
MAX_BLOCK = 1 << 17
# Element-operations (elements x operators) a call needs per extra thread: measured on
# ratio_iou (19 operators, quiet machine), one thread wins at 1e5 elements (0.28 vs 0.33 ms),
# they tie at 2e5, two win at 4e5 (1.20 vs 1.73 ms) and 8e5 (2.2 vs 2.8 ms).
PARALLEL_WORK = 3 << 20

_scratch = threading.local()


class _Step:
    """One operator of the group: its kernels, where its inputs are, where it writes."""

    __slots__ = ("defaults", "inputs", "kernel", "name", "out", "output", "ref", "span", "text")

    def __init__(self, ref: OpRef, inputs: tuple[int, ...], output: int, span: Span | None, text: str):
        self.kernel, self.out, self.ref = bind(ref), bind_out(ref), ref
        self.name, self.defaults = ref.name, ref.defaults
        self.inputs, self.output, self.span, self.text = inputs, output, span, text


class _NumbaKernel(NamedTuple):
    kernel: Callable[..., Any]
    out_dtypes: tuple[np.dtype, ...]


_NOT_PLANNED = "no block plan"
_SMALL = "smaller than two blocks"


class FusedKernel:
    """A fusion group's sub-graph compiled into one callable.

    Built once, when the program is compiled or loaded, and shared by every thread: a call
    keeps its state in locals and per-thread scratch.  ``stats`` counts fused and unfused
    calls and the reasons of the latter.  The block plan of the dtypes the sub-graph
    declares (float32 for a plain ``Tensor``) is compiled here; another signature gets
    its plan, a few hundred microseconds of planning, on its first call.
    """

    def __init__(self, subgraph: FusionSpec, name: str = "prim::FusionGroup", min_block: int | None = None,
                 max_block: int | None = None):
        self.name = name
        self.min_block = MIN_BLOCK if min_block is None else min_block
        self.max_block = max(self.min_block, MAX_BLOCK if max_block is None else max_block)
        spec = self.spec = subgraph  # a FusionSpec (vm.ir.fusion_spec makes one from a sub-graph)
        self.n_inputs = spec.n_inputs
        self.constants: dict[int, Any] = dict(spec.constants)
        self.steps = tuple(
            _Step(ref, inputs, output, None if span is None else Span(*span), text)
            for ref, inputs, output, span, text in spec.steps
        )
        self.n_slots = spec.n_inputs + len(spec.constants) + len(spec.steps)
        self.outputs = spec.outputs
        self.input_types = spec.input_kinds
        self.whole_source, self._whole = make_whole(self.steps, self.constants, self.n_inputs, self.outputs)
        self.plans: dict[tuple[Any, ...], BlockPlan | str] = {}
        self.numba_kernels: dict[tuple[Any, ...], _NumbaKernel] = {}
        self._stats = {"fused": 0, "unfused": 0, "numba": 0}
        self._small = 2 * self.min_block
        self._small_calls = itertools.count()
        thread_pool()  # made now, so the first big call costs what later ones do
        self._reasons: dict[str, int] = {}
        self._lock = threading.Lock()
        self.plan_for(_declared_sample(self.input_types))

    # -- running ------------------------------------------------------------------------

    def __call__(self, *args: Any) -> Any:
        for a in args:  # the first full tensor tells a small call at once: the common case in loops
            if type(a) is np.ndarray and a.ndim:
                if a.size < self._small:
                    next(self._small_calls)
                    try:
                        return self._whole(*args)
                    except Exception as exc:  # noqa: BLE001 - re-run step by step to name the node
                        self._raise_located(args, exc)
                break
        shape = self._common_shape(args)
        n = math.prod(shape) if shape is not None else 0
        if shape is None or n < self._small:
            self._count("unfused", "inputs of different shapes" if shape is None else _SMALL)
            return self.run_unfused(*args)
        if self.numba_kernels and n >= fusion_numba.THRESHOLD:
            values = self._run_numba(args, shape, n)
            if values is not None:
                self._count("numba", None)
                return self._result(values)
        plan = self.plan_for(args)
        if isinstance(plan, str):
            self._count("unfused", plan)
            return self.run_unfused(*args)
        self._count("fused", None)
        return self._run_blocked(plan, args, shape, n)

    @property
    def stats(self) -> dict[str, int]:
        """Calls so far: ``fused`` (blocked), ``numba``, ``unfused`` (with the reasons in
        ``fallback_reasons``)."""
        small = self._small_count()
        stats = dict(self._stats)
        stats["unfused"] += small
        return stats

    @property
    def fallback_reasons(self) -> dict[str, int]:
        reasons = dict(self._reasons)
        small = self._small_count()
        if small:
            reasons[_SMALL] = reasons.get(_SMALL, 0) + small
        return reasons

    def _small_count(self) -> int:
        # itertools.count advances atomically under the GIL, with no lock on the hot path;
        # its repr, "count(N)", shows how many times it was advanced.
        return int(repr(self._small_calls)[6:-1])

    def run_unfused(self, *args: Any) -> Any:
        """The group's operators one by one over whole arrays: what the kernel must equal."""
        try:
            return self._whole(*args)
        except Exception as exc:  # noqa: BLE001 - re-run step by step to name the failing node
            self._raise_located(args, exc)

    def _raise_located(self, args: Sequence[Any], exc: Exception) -> NoReturn:
        """Re-run the call operator by operator, so the error names the node that failed."""
        self._run_whole(args)
        raise RunError(f"{type(exc).__name__}: {exc}\n  while executing {self.name}", None) from exc

    def _count(self, kind: str | None, reason: str | None) -> None:
        """Count a call of ``kind`` (fused, unfused, numba) and, if given, why it fell back."""
        with self._lock:
            if kind is not None:
                self._stats[kind] += 1
            if reason is not None:
                self._reasons[reason] = self._reasons.get(reason, 0) + 1

    def _result(self, values: list[Any]) -> Any:
        outs = [values[i] for i in self.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _slots(self, args: Sequence[Any]) -> list[Any]:
        values: list[Any] = [None] * self.n_slots
        values[: self.n_inputs] = args
        for slot, value in self.constants.items():
            values[slot] = value
        return values

    def _apply(self, step: _Step, values: list[Any]) -> None:
        try:
            result = step.kernel(*[values[i] for i in step.inputs])
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
        return shape

    # -- the blocked fuser --------------------------------------------------------------

    def plan_for(self, args: Sequence[Any]) -> BlockPlan | str:
        """The block plan for the signature of ``args`` (made once per signature), or why
        there is none: the group then runs unfused."""
        key = _signature(args)
        plan = self.plans.get(key)
        if plan is None:
            plan = self._make_plan(args)
            with self._lock:
                if len(self.plans) >= 32:  # a bounded cache: signatures are few in practice
                    self.plans.clear()
                self.plans[key] = plan
        return plan

    def _make_plan(self, args: Sequence[Any]) -> BlockPlan | str:
        full = [_is_full(a) for a in args] + [False] * (self.n_slots - self.n_inputs)
        for step in self.steps:
            full[step.output] = any(full[i] for i in step.inputs)
        probe = self._slots([a.reshape(-1)[:1] if f else a for a, f in zip(args, full)])
        try:
            with np.errstate(all="ignore"):
                dtypes = probe_dtypes(self.steps, probe, full)
            return make_plan(self.steps, self.constants, self.n_inputs, self.outputs, full, dtypes)
        except Exception as exc:  # noqa: BLE001 - e.g. a dtype an operator refuses: the run says so
            return f"{_NOT_PLANNED}: {type(exc).__name__}: {exc}"

    def _run_blocked(self, plan: BlockPlan, args: Sequence[Any], shape: tuple[int, ...], n: int) -> Any:
        values = self._slots(args)
        try:
            for step in plan.prologue:
                values[step.output] = step.kernel(*[values[i] for i in step.inputs])
            flat: list[Any] = [a.reshape(-1) if plan.full[i] else None for i, a in enumerate(args)]
            results: dict[int, np.ndarray] = {}
            for slot in self.outputs:
                if plan.full[slot] and slot >= self.n_inputs and slot not in results:
                    results[slot] = np.empty(n, dtype=plan.dtypes[slot])
            out: list[Any] = [results.get(slot) for slot in range(self.n_slots)]
            pool = thread_pool()
            helpers = borrow(self._threads(n) - 1) if pool is not None else 0
            threads = helpers + 1
            n_blocks = -(-max(threads, -(-n // self.max_block)) // threads) * threads
            block = -(-n // n_blocks)
            per_thread = block * (n_blocks // threads)
            spans = [(lo, min(lo + per_thread, n)) for lo in range(0, n, per_thread)]
            try:
                futures = [pool.submit(self._run_blocks, plan, flat, values, out, lo, hi, block)
                           for lo, hi in spans[1:]] if pool is not None else []
                error: BaseException | None = None
                try:
                    self._run_blocks(plan, flat, values, out, *spans[0], block)
                except Exception as exc:  # noqa: BLE001 - wait for the other threads first
                    error = exc
                for f in futures:
                    exc = f.exception()
                    error = error or exc
            finally:
                give_back(helpers)
            if error is not None:
                raise error
        except Exception as exc:  # noqa: BLE001
            self._raise_located(args, exc)
        for slot, array in results.items():
            values[slot] = array.reshape(shape)
        return self._result(values)

    def _threads(self, n: int) -> int:
        """How many threads share a call of ``n`` elements: one more per PARALLEL_WORK
        element-operations (below that, waking a pool thread costs more than it saves)."""
        return max(1, min(get_num_threads(), 1 + n * len(self.steps) // PARALLEL_WORK))

    def _run_blocks(self, plan: BlockPlan, flat: list[Any], values: list[Any], out: list[Any],
                    lo: int, hi: int, block: int) -> None:
        scratch, constants = _thread_buffers(plan, self.max_block)
        run = plan.run_block
        with np.errstate(all="ignore"):
            for start in range(lo, hi, block):
                run(start, min(start + block, hi), flat, values, scratch, constants, out)

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
        return _signature(args), compiled

    def _call_numba(self, compiled: _NumbaKernel, args: Sequence[Any], n: int) -> list[np.ndarray]:
        outs = [np.empty(n, dtype=dtype) for dtype in compiled.out_dtypes]
        flat = [a.reshape(-1) if _is_full(a) else (a[()] if isinstance(a, np.ndarray) else a) for a in args]
        fusion_numba.call(compiled.kernel, [*flat, *outs])
        return outs

    def _run_numba(self, args: Sequence[Any], shape: tuple[int, ...], n: int) -> list[Any] | None:
        compiled = self.numba_kernels.get(_signature(args))
        if compiled is None:
            self._count(None, "numba: dtypes not compiled ahead")  # the blocked run is counted after
            return None
        values: list[Any] = [None] * self.n_slots
        for slot, out in zip(dict.fromkeys(self.outputs), self._call_numba(compiled, args, n)):
            values[slot] = out.reshape(shape)
        return values


def _is_full(a: Any) -> bool:
    return isinstance(a, np.ndarray) and a.ndim > 0




_DECLARED = {"Float": np.float32, "Double": np.float64, "Long": np.int64, "Int": np.int32, "Bool": np.bool_,
             "Half": np.float16}


def _declared_sample(kinds: Sequence[str]) -> list[Any]:
    """One-element arguments of the kinds a sub-graph declares (``FusionSpec.input_kinds``)."""
    sample: list[Any] = []
    for kind in kinds:
        if kind == "int":
            sample.append(1)
        elif kind == "bool":
            sample.append(True)
        elif kind == "float":
            sample.append(1.0)
        else:  # a tensor: its declared dtype, float32 for a plain ``Tensor``
            sample.append(np.ones(1, dtype=_DECLARED.get(kind, np.float32)))
    return sample


def _signature(args: Sequence[Any]) -> tuple[Any, ...]:
    """What a block plan depends on: each input's dtype and whether it is full-size, or
    the Python type of a scalar."""
    return tuple((a.dtype.str, a.ndim > 0) if isinstance(a, np.ndarray) else type(a).__name__ for a in args)


SCRATCH_ENTRIES = 256  # per thread: scratch lists and constant blocks, least recently used out


def _thread_buffers(plan: BlockPlan, cap: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """This thread's scratch buffers and constant blocks for ``plan`` (``cap`` elements
    each), reused across calls and kernels.  The cache keeps the ``SCRATCH_ENTRIES`` most
    recently used entries, so a model with many groups does not reallocate every call."""
    cache: OrderedDict[Any, Any] | None = getattr(_scratch, "buffers", None)
    if cache is None:
        cache = _scratch.buffers = OrderedDict()
    scratch = _cached(cache, (plan.scratch_key, cap), lambda: [np.empty(cap, dtype=d) for d in plan.scratch])
    constants = [
        _cached(cache, (dtype.str, repr(value), cap), lambda dtype=dtype, value=value: np.full(cap, value, dtype=dtype))
        for dtype, value in plan.constants
    ]
    return scratch, constants


def _cached(cache: OrderedDict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    found = cache.get(key)
    if found is None:
        found = cache[key] = make()
        while len(cache) > SCRATCH_ENTRIES:
            cache.popitem(last=False)
    else:
        cache.move_to_end(key)
    return found


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


class FusionSpec(NamedTuple):
    """A fusion group resolved at compile time: everything a ``FusedKernel`` is built
    from, as plain data (what a ``.irbc`` file stores), so that loading a program neither
    parses the group nor resolves its operators again.

    ``steps`` are (operator, input slots, output slot, span as a tuple or None, node text)
    in order; slots number the group's inputs first, then ``constants`` (slot -> value),
    then the steps' results; ``outputs`` are the slots the group returns; ``input_kinds``
    are the declared kinds of the inputs (``vm.ir.fusion_spec.input_kind``)."""

    n_inputs: int
    constants: tuple[tuple[int, Any], ...]
    steps: tuple[tuple[OpRef, tuple[int, ...], int, tuple[Any, ...] | None, str], ...]
    outputs: tuple[int, ...]
    input_kinds: tuple[str, ...]


@prim_factory("prim::FusedKernel")
def _fused_kernel_factory(attrs: dict[str, Any], n_inputs: int, n_outputs: int) -> Callable[..., Any]:
    """Bind an emitted fused kernel: ``attrs["spec"]`` is its ``FusionSpec`` as stored
    (``spec_attrs``)."""
    return FusedKernel(spec_from_attrs(attrs["spec"]), str(attrs.get("name", "prim::FusionGroup")))


def spec_attrs(spec: FusionSpec) -> tuple[Any, ...]:
    """``spec`` as nested tuples of plain values (operators as their fields)."""
    steps = tuple(
        ((r.name, r.n_inputs, r.n_outputs, r.defaults, r.attrs), inputs, output, span, text)
        for r, inputs, output, span, text in spec.steps
    )
    return (spec.n_inputs, spec.constants, steps, spec.outputs, spec.input_kinds)


def spec_from_attrs(stored: Sequence[Any]) -> FusionSpec:
    """The inverse of ``spec_attrs`` (lists read back from a file are accepted)."""
    n_inputs, constants, steps, outputs, kinds = stored
    return FusionSpec(
        int(n_inputs),
        tuple((int(k), v) for k, v in constants),
        tuple(
            (
                OpRef(str(r[0]), int(r[1]), int(r[2]), tuple(r[3]), tuple((str(k), v) for k, v in r[4])),
                tuple(int(i) for i in inputs),
                int(output),
                None if span is None else tuple(span),
                str(text),
            )
            for r, inputs, output, span, text in steps
        ),
        tuple(int(o) for o in outputs),
        tuple(str(k) for k in kinds),
    )
