"""Plan-time specialization: a few pointwise ops (and linear) called as bare numpy calls.

A kernel of the operator library must work for every dtype mix PyTorch accepts, so it
first finds the result dtype and converts its operands; on a 10-element tensor that
bookkeeping costs more than the arithmetic (a bare ``np.add`` call ~0.3 us, the kernel
~2x that, some unary kernels ~5x).  Once a plan exists, the static runtime knows more:
the recording run saw every tensor of the entry block, and for values whose dtypes and
shapes follow from the plan key (the untainted values of ``vm/static/plannable.py``) what
it saw holds for every run with that key.

So when the recording run shows that a node whose registration declares a bare call
(``vm.ops.registry.FastCall``, ``fast=`` beside its kernel) took float tensors of one
dtype (and scalar *constants*), produced that dtype with at least one dimension, the plan
calls the ufunc directly: ``v5 = u3(v1, s3_1)`` (or ``u3(v1, s3_1, b5)`` into a slab view),
with the constant pre-converted to a numpy scalar of the tensor's dtype exactly as the
kernel's ``scalar_for`` does.  For those operands the kernel would call the very same
ufunc, so the result is bit for bit the kernel's.  Ops that can warn (division, exp) or
whose kernels use another formula are left to their kernels; sigmoid is called as the
kernel's own four-ufunc recipe, overflow ignored as the kernel ignores it; a 2-d
``linear`` with a bias as the kernel's matmul and in-place add (``linear_fast``: measured
~0.6 us a call saved: the 3-layer MLP at batch 1 went from 28.2 to 26.4 us).  An unguarded
bare ufunc is also what lets the planner write its result over an operand that dies at
the node (in-place reuse, ``vm/static/memory_planner.py``): a ufunc is exact with ``out=`` equal
to an input.

One more step for ``maximum``/``minimum`` (relu, clamp, clamp_min/max, max/min with a
constant): numpy 2's SIMD loops for these two ufuncs only run when both operands are
contiguous arrays; with a scalar operand they take a slow element-by-element path.
Measured here on float32: relu of a 256x512 tensor costs 44 us as ``np.maximum(x, 0)``
and 14 us as ``np.maximum(x, zeros)``; 272 vs 99 us at 8e5 elements, 0.92 vs 0.46 us at
1e3.  So when the plan key fixes the node's shape (an unguarded node) and the tensor has
at least ``FILL_MIN_ELEMENTS`` elements, the plan passes the constant as an array filled
with it (``filled``; read-only, one per value, dtype and shape, shared by the nodes of a
plan).  When the last dimension is long (``FILL_MIN_ROW``) that array is one row, which
broadcasts: alone a full array is a little faster (14 us against 17 us for the relu
above), but inside a run the full array is one more tensor to stream from memory, and
the row stays in L1 -- measured on the 3-layer MLP at batch 256 under load, p10 of a run
2268 us with a row, 2365 us with a full array, 2313 us with the scalar.  For 1-d tensors
(or short rows) the full array it is, up to ``FILL_MAX_BYTES``: ratio_iou at 1e5
elements run as nodes took 342 us (p10) with full arrays, 377 us with scalars.  Each
element is the same ``maximum(x_i, c)``, so the bits are those of the scalar call
(checked over random bit patterns, NaN payloads and signed zeros by the tests).

Last, which fusion groups a plan runs with their fused kernel (``vm.fusion.kernels``) rather than
as their own nodes (``groups_to_fuse``).  The kernel's rule is size: one common shape of
at least two of its cache blocks.  Near that threshold the blocked kernel may still lose
to the nodes, which here write planned buffers through the calls above: measured on the
LSTM cell at batch 64 / hidden 256, the gate group (five 64x256 inputs, two blocks) took
68 us fused and 60 us as its nodes.  So when the recorded inputs have fewer than
``MEASURE_BELOW`` elements, the plan times both on the recorded inputs (three alternating
calls each, the minimum; both are pure elementwise code with the same bits) and fuses
only when the fused kernel is faster.  Above that size blocking wins clearly (ratio_iou at
8e5 elements: 2.6 ms fused, 3.7 ms as nodes) and the rule stands alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np

from vm.ops.facts import Fact, fast_calls, op_facts
from vm.ops.registry import FastCall
from vm.static.model import ProcessedNode

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# a ufunc, or a function called as one: f(operands..., out=None) (sigmoid_fast, linear_fast)
UfuncLike = Callable[..., np.ndarray]

# the overloads with a bare call, each declared on its registration (vm.ops.registry.FastCall)
NAMES = frozenset(fast_calls())
# nodes whose output may take an operand's bytes: the elementwise ones (vm.ops.facts)
ELEMENTWISE = frozenset(n for n in NAMES if Fact.ELEMENTWISE in op_facts(n))

Arg = tuple[
    str, Any
]  # ("v", slot) an operand read from a slot; ("s", scalar) a constant


_NO = object()  # "not a constant"


Choice = tuple[UfuncLike, tuple[Arg, ...], "np.dtype | None"]

# maximum/minimum take their SIMD loop only with array operands (see the module docstring)
FILLABLE = (np.maximum, np.minimum)
FILL_MIN_ELEMENTS = 256
FILL_MIN_ROW = 256  # a last dim at least this long: fill one row, which broadcasts
FILL_MAX_BYTES = 1 << 24  # otherwise a full array, which costs the tensor's memory


def choose(
    pn: ProcessedNode,
    recorded: Mapping[int, Any],
    constants: Mapping[int, Any],
    tainted: frozenset[int],
) -> Choice | None:
    """The ufunc, its arguments and a guard for ``pn`` under this plan, or None (keep the
    kernel).  The guard is None when the plan key fixes the operands' dtypes (an untainted
    node of the entry block); otherwise it is the dtype the recording run saw, and the code
    checks it (and that the result has a dimension) before taking the fast call, falling
    back to the kernel: this is how nodes inside loops and branches are specialized."""
    found = probe(pn, constants, tainted)
    return None if found is None else found.choose(recorded)


@attrs.frozen(eq=False)
class Probe:
    """What ``choose`` decides of one node before any run: its ufunc, its operands (slots)
    and constants (Python numbers), whether it is guarded.  A ``StaticModule`` makes one
    per fast candidate at construction, so that a plan only checks the recorded dtypes and
    shapes (``Probe.choose``)."""

    index: int
    out: int  # the output slot
    ufunc: UfuncLike
    args: tuple[tuple[str, Any], ...]  # ("v", slot) or ("s", a Python number)
    guarded: bool
    linear: bool  # a product (``FastCall.matrices``): x, w, b must also be 2-d, 2-d, 1-d of matching sizes

    @property
    def structure(self) -> tuple[tuple[tuple[str, int], ...], bool]:
        """The form of its call (as ``call_shape``): ``("s", j)`` for the j-th constant."""
        out, j = [], 0
        for kind, value in self.args:
            out.append((kind, value) if kind == "v" else ("s", j))
            j += kind == "s"
        return tuple(out), self.guarded

    def slots(self) -> tuple[int, ...]:
        """The slots a plan reads of the recording for this node."""
        return (self.out, *(v for kind, v in self.args if kind == "v"))

    def choose(self, recorded: Mapping[int, Any]) -> Choice | None:
        """``choose``'s answer for a run that recorded ``recorded`` (slot -> value)."""
        out = recorded.get(self.out)
        if type(out) is not np.ndarray or out.dtype not in FLOATS or out.ndim == 0:
            return None
        dtype = out.dtype
        args: list[Arg] = []
        for kind, value in self.args:
            if kind == "s":
                args.append(("s", dtype.type(value)))
                continue
            seen = recorded.get(value)
            if (seen is not None or not self.guarded) and (type(seen) is not np.ndarray or seen.dtype != dtype):
                return None  # (a guarded operand the recording did not see, a block parameter, is checked at run time)
            args.append(("v", value))
        if self.linear:
            x, w, b = (recorded[v] for _, v in self.args)
            if not (x.ndim == w.ndim == 2 and b.ndim == 1 and x.shape[1] == w.shape[1]
                    and b.shape[0] == w.shape[0]):  # fmt: skip
                return None
        return self.ufunc, tuple(args), dtype if self.guarded else None


def probe(pn: ProcessedNode, constants: Mapping[int, Any], tainted: frozenset[int]) -> Probe | None:
    """The part of ``choose`` that no run changes, or None when ``choose`` never picks
    ``pn`` (no bare call declared, a constant operand that is not a number...)."""
    if pn.ref is None or len(pn.outputs) != 1:
        return None
    fast = _fitting(pn, fast_calls().get(pn.ref.name, ()), constants)
    if fast is None:
        return None
    call, operands = fast
    guarded = _guarded(pn, operands, tainted)
    if call.matrices and guarded:
        return None  # a product is only called fast where the plan key fixes the shapes
    args: list[tuple[str, Any]] = []
    for operand in operands:
        value = operand[1] if isinstance(operand, tuple) else _constant(pn, operand, constants)
        if value is _NO:
            if isinstance(operand, tuple) or operand >= len(pn.inputs):
                return None
            args.append(("v", pn.inputs[operand]))
        elif _number(value):
            args.append(("s", value))
        else:
            return None
    if not any(kind == "v" for kind, _ in args) or (call.matrices and len(args) != len(operands)):
        return None
    return Probe(pn.index, pn.outputs[0], call.call, tuple(args), guarded, call.matrices)


def _fitting(
    pn: ProcessedNode, calls: tuple[FastCall, ...], constants: Mapping[int, Any]
) -> tuple[FastCall, list[Any]] | None:
    """The first declared call whose constants ``pn`` has (``required`` values, ``none``
    positions, ``("c", i)`` numbers), with its operands: positions, and ``("s", c)`` for a
    constant the call adds or takes; None when none fits."""
    for call in calls:
        operands = _operands(pn, call, constants)
        if operands is not None:
            return call, operands
    return None


def _operands(pn: ProcessedNode, call: FastCall, constants: Mapping[int, Any]) -> list[Any] | None:
    if any(_constant(pn, i, constants) is not None for i in call.none):
        return None
    if any(
        _constant(pn, i, constants) != v or type(_constant(pn, i, constants)) is not int
        for i, v in call.required
    ):
        return None
    operands: list[Any] = []
    for operand in call.operands:
        if isinstance(operand, tuple) and operand[0] == "c":
            value = _constant(pn, operand[1], constants)
            if not _number(value):
                return None
            operand = ("s", value)
        operands.append(operand)
    return operands


def call_shape(
    pn: ProcessedNode, constants: Mapping[int, Any], tainted: frozenset[int]
) -> tuple[tuple[tuple[str, int], ...], bool] | None:
    """The form a fast call of ``pn`` would take under any plan, known before any run:
    its arguments (``("v", slot)`` an operand, ``("s", j)`` the j-th pre-converted
    constant) and whether it is guarded, or None when ``choose`` can never pick it.
    The layout-independent planned code (``model.Mode.generic``) is written with it;
    a plan's choice of another form is not taken."""
    if pn.ref is None or len(pn.outputs) != 1:
        return None
    calls = fast_calls().get(pn.ref.name, ())
    if not calls:
        return None
    operands: list[Any] = list(calls[0].operands)  # alternatives share their form
    args: list[tuple[str, int]] = []
    j = 0
    for operand in operands:
        if isinstance(operand, tuple):  # a constant the call adds (relu's 0), or a bound (clamp's)
            args.append(("s", j))
            j += 1
            continue
        value = _constant(pn, operand, constants)
        if value is _NO:
            if operand >= len(pn.inputs):
                return None
            args.append(("v", pn.inputs[operand]))
        elif _number(value):
            args.append(("s", j))
            j += 1
        else:
            return None
    if not any(kind == "v" for kind, _ in args):
        return None
    return tuple(args), _guarded(pn, operands, tainted)


def _guarded(pn: ProcessedNode, operands: list, tainted: frozenset[int]) -> bool:
    """Whether a fast call of ``pn`` needs a dtype guard: its result or an operand is a
    value whose dtype the plan key does not fix."""
    return pn.outputs[0] in tainted or any(
        pn.inputs[i] in tainted
        for i in operands
        if not isinstance(i, tuple) and i < len(pn.inputs)
    )


def _constant(pn: ProcessedNode, index: int, constants: Mapping[int, Any]) -> Any:
    """The value of input ``index`` when it is a constant (or a default the node left out)."""
    if index >= len(pn.inputs):
        defaults = pn.ref.defaults if pn.ref is not None else ()
        k = index - len(pn.inputs)
        return defaults[k] if k < len(defaults) else _NO
    return constants.get(pn.inputs[index], _NO)


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def filled(
    choice: Choice,
    out: Any,
    cache: dict[tuple[Any, ...], np.ndarray],
) -> Choice:
    """``choice`` with its scalar constants as arrays of ``out``'s shape, when that pays.

    Only for an unguarded ``maximum``/``minimum`` node (its shape is fixed by the plan key)
    whose output ``out`` (the recorded result) is big enough; ``cache`` shares one array
    per (value bits, dtype, shape) among the nodes of a plan."""
    ufunc, args, guard = choice
    if (
        ufunc not in FILLABLE
        or guard is not None
        or type(out) is not np.ndarray
        or out.size < FILL_MIN_ELEMENTS
    ):
        return choice
    shape = out.shape
    if out.ndim >= 2 and shape[-1] >= FILL_MIN_ROW:
        shape = shape[-1:]  # one row that broadcasts: it stays in L1 between calls
    elif out.nbytes > FILL_MAX_BYTES:
        return choice
    wide: list[Arg] = []
    for kind, value in args:
        if kind == "s":
            key = (value.tobytes(), out.dtype.str, shape)
            array = cache.get(key)
            if array is None:
                array = cache[key] = np.full(shape, value, dtype=out.dtype)
                array.setflags(write=False)
            value = array
        wide.append((kind, value))
    return ufunc, tuple(wide), guard


MEASURE_BELOW = 1 << 17  # elements; groups this small are timed fused vs unfused at plan time
MEASURE_CALLS = 3


TIMED_SLOWER = "timed slower than its nodes when the plan was made"


def groups_to_fuse(
    sm: Any, recorded: Mapping[int, Any], measure: bool = True
) -> tuple[frozenset[int], dict[int, str]]:
    """The fusion groups of ``sm`` (a module's ``model.PlanningFacts``) that this plan runs fused: the recorded
    inputs are untainted, share one shape of at least two cache blocks, and (below
    ``MEASURE_BELOW`` elements, when ``measure``) the fused kernel timed faster.  Also,
    for each group that runs as its nodes, why (``irvm profile`` prints it)."""
    chosen, why = set(), {}
    for group in sm.groups:
        slots = [sm.entry.slots[v] for v in group.inputs]
        values = [sm.entry.constants.get(s, recorded.get(s)) for s in slots]
        shapes = {v.shape for v in values if isinstance(v, np.ndarray) and v.ndim}
        n = math.prod(next(iter(shapes))) if len(shapes) == 1 else 0
        if any(s in sm.tainted for s in slots):
            why[group.gid] = "inputs whose shapes the plan does not fix"
        elif len(shapes) != 1:
            why[group.gid] = "inputs of different shapes"
        elif n < 2 * group.kernel.min_block:
            why[group.gid] = "below the fused kernel's size"
        elif measure and n < MEASURE_BELOW and not _fused_is_faster(group.kernel, values):
            why[group.gid] = TIMED_SLOWER
        else:
            chosen.add(group.gid)
    return frozenset(chosen), why


def _fused_is_faster(kernel: Any, values: list[Any]) -> bool:
    """Time ``kernel(*values)`` against ``kernel.run_unfused(*values)`` (the group's own
    kernels, straight-line), alternating; True when the fused call's best time is lower.
    A kernel without ``run_unfused``, or one that fails here, keeps the size rule."""
    unfused = getattr(kernel, "run_unfused", None)
    if unfused is None:
        return True
    best = {"fused": math.inf, "unfused": math.inf}
    try:
        for _ in range(MEASURE_CALLS):
            for name, fn in (("fused", kernel), ("unfused", unfused)):
                t0 = time.perf_counter()
                fn(*values)
                best[name] = min(best[name], time.perf_counter() - t0)
    except Exception:  # noqa: BLE001  (the real run reports errors; this is only a choice)
        return True
    return best["fused"] < best["unfused"]
