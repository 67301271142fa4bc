"""Block plans: the numpy fuser's compiled form of one fusion group for one signature.

A fusion group runs block by block (``vm.fusion.kernels``).  What a block does is fixed once the
dtypes of the group's inputs are known, so it is worked out once per signature (the
inputs' dtypes, and which inputs are full-size tensors rather than 0-dim tensors or
scalars) and compiled into a straight-line Python function, the way Static Runtime
pre-resolves kernels and our static runtime generates code:

- a 1-element probe through the registered kernels tells each value's dtype, exactly as
  the unfused operators would produce it;
- values that depend on no full-size input (arithmetic on scalars, 0-dim constants) are
  computed once per call, in a *prologue*, not once per block;
- each full-size operator becomes one line.  Where its semantics are exactly a numpy ufunc
  in the result dtype (every tensor operand already of that dtype, Python constants cast
  to it as PyTorch casts them), the line calls the ufunc with ``out=``; otherwise it calls
  the operator's registered out variant (or its kernel and copies).  Both give the bits the
  unfused operator gives: the ufuncs are the ones the registered kernels call;
- ``maximum``/``minimum`` against a constant (``clamp``, ``relu``) read a block filled with
  the constant: numpy's scalar-broadcast loop for them is four times slower than its
  array-array loop (0.37 vs 0.08 ns per float32 element, measured);
- intermediates live in a few per-thread scratch buffers, assigned by a linear scan over
  last uses (a ufunc may write over an operand that dies at that line: elementwise with
  exact overlap is safe; an out variant never writes over its own inputs), so a block's
  working set stays in L2;
- the group's outputs are written straight into the result arrays.

The same module generates the *whole* function: the group's kernels called one after the
other on whole arrays, without an interpreter loop, for calls too small to block.
Errors are not handled here: ``vm.fusion.kernels`` re-runs a failing call operator by operator to
name the node that failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from vm.ops._dtypes import BOOL, FLOAT_CAT, INT_CAT, category

# Operators that are exactly one numpy ufunc over operands of the result dtype.
BINARY_UFUNCS: dict[str, Callable[..., Any]] = {
    "aten::add.Tensor": np.add, "aten::add.Scalar": np.add,
    "aten::sub.Tensor": np.subtract, "aten::sub.Scalar": np.subtract,
    "aten::mul.Tensor": np.multiply, "aten::mul.Scalar": np.multiply,
    "aten::div.Tensor": np.true_divide, "aten::div.Scalar": np.true_divide,
    "aten::maximum": np.maximum, "aten::minimum": np.minimum,
    "aten::max.other": np.maximum, "aten::min.other": np.minimum,
}
COMPARE_UFUNCS: dict[str, Callable[..., Any]] = {
    f"aten::{name}.{sfx}": uf
    for name, uf in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                     ("gt", np.greater), ("ge", np.greater_equal))
    for sfx in ("Tensor", "Scalar")
}
# Unary operators that are one ufunc in the input's (floating) dtype.
FLOAT_UNARY: dict[str, Callable[..., Any]] = {
    f"aten::{name}": uf
    for name, uf in (("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("sin", np.sin), ("cos", np.cos),
                     ("tanh", np.tanh), ("expm1", np.expm1), ("log1p", np.log1p), ("log2", np.log2),
                     ("abs", np.absolute), ("neg", np.negative), ("negative", np.negative),
                     ("floor", np.floor), ("ceil", np.ceil), ("trunc", np.trunc))
}
_ALPHA_OPS = {"aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor", "aten::sub.Scalar"}
_MAXMIN = (np.maximum, np.minimum)


class Step(Protocol):
    """One operator of the group as the planner needs it (``vm.fusion.kernels`` builds them)."""

    name: str  # the resolved overload, ``aten::add.Tensor``
    inputs: tuple[int, ...]  # slots of its inputs
    output: int  # slot of its result
    defaults: tuple[Any, ...]  # schema defaults appended after the inputs
    kernel: Callable[..., Any]  # bound plain kernel
    out: Callable[..., Any] | None  # bound out variant, if any


class BlockPlan:
    """How one signature of a group runs: dtypes, prologue, and the compiled block.

    ``run_block(lo, hi, I, P, S, C, O)`` computes elements ``lo:hi`` of every full-size
    output: ``I`` the flattened full inputs by slot, ``P`` the call's other values by slot
    (after the prologue), ``S`` this thread's scratch buffers, ``C`` its constant blocks,
    ``O`` the flattened result arrays by slot.
    """

    def __init__(self, full: list[bool], dtypes: dict[int, np.dtype], prologue: list[Step],
                 source: str, run_block: Callable[..., None], scratch: list[np.dtype],
                 constants: list[tuple[np.dtype, Any]], direct: int):
        self.full, self.dtypes, self.prologue = full, dtypes, prologue
        self.source, self.run_block = source, run_block
        self.scratch, self.constants, self.direct = scratch, constants, direct
        self.scratch_key = tuple(d.str for d in scratch)


def probe_dtypes(steps: Sequence[Step], values: list[Any], full: list[bool]) -> dict[int, np.dtype]:
    """Run ``steps`` on 1-element slices (``values`` already holds them) with the plain
    kernels; the dtype of every full value.  Raises what the kernels raise."""
    for step in steps:
        values[step.output] = step.kernel(*(values[i] for i in step.inputs))
    return {slot: np.asarray(v).dtype for slot, v in enumerate(values) if full[slot]}


def make_plan(steps: Sequence[Step], constants: dict[int, Any], n_inputs: int, outputs: Sequence[int],
              full: list[bool], dtypes: dict[int, np.dtype]) -> BlockPlan:
    """Compile the block function of one signature (see the module docstring)."""
    return _Codegen(steps, constants, n_inputs, outputs, full, dtypes).build()


class _Codegen:
    def __init__(self, steps: Sequence[Step], constants: dict[int, Any], n_inputs: int, outputs: Sequence[int],
                 full: list[bool], dtypes: dict[int, np.dtype]):
        self.steps, self.consts, self.n_inputs = steps, constants, n_inputs
        self.full, self.dtypes = full, dtypes
        self.outputs = [s for s in dict.fromkeys(outputs) if full[s] and s >= n_inputs]
        self.lines: list[str] = []
        self.globals: dict[str, Any] = {"np": np}
        self.names: dict[int, str] = {}  # slot -> expression naming its block (or call) value
        self.buffer_of: dict[int, int] = {}  # slot -> scratch index
        self.free: dict[str, list[int]] = {}
        self.scratch: list[np.dtype] = []
        self.const_blocks: dict[tuple[str, str], int] = {}
        self.const_values: dict[tuple[str, str], Any] = {}
        self.direct = 0

    def build(self) -> BlockPlan:
        block_steps = [s for s in self.steps if self.full[s.output]]
        prologue = [s for s in self.steps if not self.full[s.output]]
        last: dict[int, int] = {}
        for k, step in enumerate(block_steps):
            for i in step.inputs:
                last[i] = k
        for slot in range(self.n_inputs):
            if self.full[slot]:
                self.names[slot] = f"i{slot}"
                self.lines.append(f"i{slot} = I[{slot}][lo:hi]")
        for slot in self.outputs:
            self.lines.append(f"o{slot} = O[{slot}][lo:hi]")
        for k, step in enumerate(block_steps):
            dying = [i for i in dict.fromkeys(step.inputs) if last.get(i) == k and i in self.buffer_of]
            line = self.direct_line(step, dying)
            if line is None:
                self.generic_line(step, dying)
            else:
                self.direct += 1
        body = "\n    ".join(self.lines) or "pass"
        source = f"def run_block(lo, hi, I, P, S, C, O):\n    m = hi - lo\n    {body}\n"
        namespace = dict(self.globals)
        exec(compile(source, "<fusion block>", "exec"), namespace)  # noqa: S102 - our own generated code
        constants = sorted(self.const_blocks, key=self.const_blocks.__getitem__)
        return BlockPlan(self.full, self.dtypes, prologue, source, namespace["run_block"], self.scratch,
                         [(np.dtype(d), self.const_values[(d, v)]) for d, v in constants], self.direct)

    # -- operands ----------------------------------------------------------------------

    def operand(self, slot: int) -> str:
        if slot in self.names:
            return self.names[slot]
        if slot in self.consts:
            return self.global_value(self.consts[slot])
        return f"P[{slot}]"  # a value of the call: a 0-dim input, a scalar, a prologue result

    def global_value(self, value: Any) -> str:
        name = f"k{len(self.globals)}"
        self.globals[name] = value
        return name

    def const_value(self, slot: int) -> tuple[bool, Any]:
        """(True, value) when ``slot`` is a constant of the group."""
        return (True, self.consts[slot]) if slot in self.consts else (False, None)

    def typed_operand(self, slot: int, dtype: np.dtype) -> str | None:
        """The operand as the ufunc in ``dtype`` must see it, or None when the operator's own
        promotion might differ (then the generic line is used)."""
        if self.full[slot]:
            return self.operand(slot) if self.dtypes[slot] == dtype else None
        is_const, value = self.const_value(slot)
        if not is_const or type(value) not in (int, float):
            return None  # a run-time scalar or 0-dim tensor: promotion left to the kernel
        cat = category(dtype)
        if cat >= FLOAT_CAT or (cat == INT_CAT and type(value) is int):
            try:
                cast = dtype.type(value)
            except (OverflowError, ValueError):
                return None
            if cat == INT_CAT and int(cast) != value:
                return None
            return self.global_value(cast)
        return None

    def const_block(self, dtype: np.dtype, value: Any) -> str:
        key = (dtype.str, repr(value))  # repr: a NaN bound is one key, -0.0 another than 0.0
        if key not in self.const_blocks:
            self.const_blocks[key] = len(self.const_blocks)
            self.const_values[key] = dtype.type(value)
        return f"C[{self.const_blocks[key]}][:m]"

    # -- destinations ------------------------------------------------------------------

    def destination(self, slot: int, reuse: Sequence[int]) -> str:
        """The block expression ``slot`` is written to; ``reuse`` may be overwritten."""
        if slot in self.outputs:
            name = f"o{slot}"
            for i in reuse:
                self.release(i)
        else:
            dtype = self.dtypes[slot]
            for i in reuse:
                self.release(i)
            pool = self.free.setdefault(dtype.str, [])
            if pool:
                index = pool.pop()
            else:
                index = len(self.scratch)
                self.scratch.append(dtype)
            self.buffer_of[slot] = index
            name = f"b{slot}"
            self.lines.append(f"{name} = S[{index}][:m]")
        self.names[slot] = name
        return name

    def release(self, slot: int) -> None:
        index = self.buffer_of.pop(slot, None)
        if index is not None:
            self.free.setdefault(self.scratch[index].str, []).append(index)

    # -- lines -------------------------------------------------------------------------

    def direct_line(self, step: Step, dying: list[int]) -> str | None:
        """Emit ``step`` as ufunc calls when they give exactly its result; the line, or None."""
        dtype = self.dtypes[step.output]
        args = list(step.inputs)
        name = step.name
        if name in BINARY_UFUNCS or name in COMPARE_UFUNCS:
            if name in _ALPHA_OPS:
                known, alpha = self.argument_value(step, args, 2)
                if not known or type(alpha) not in (int, float) or alpha != 1:
                    return None
            if name.startswith("aten::div") and category(dtype) < FLOAT_CAT:
                return None
            if name in COMPARE_UFUNCS:
                ufunc = COMPARE_UFUNCS[name]
                operand_dtype = self.full_dtype(args[:2])
                if dtype != BOOL or operand_dtype is None:
                    return None
            else:
                ufunc, operand_dtype = BINARY_UFUNCS[name], dtype
                if dtype == BOOL and ufunc not in (np.add, np.multiply, *_MAXMIN):
                    return None
            a = self.typed_operand(args[0], operand_dtype)
            b = self.typed_operand(args[1], operand_dtype)
            if a is None or b is None:
                return None
            if ufunc in _MAXMIN:  # a constant operand reads a block of it (see the docstring)
                a = self.const_block(operand_dtype, self.consts[args[0]]) if not self.full[args[0]] else a
                b = self.const_block(operand_dtype, self.consts[args[1]]) if not self.full[args[1]] else b
            out = self.destination(step.output, dying)
            return self.emit(f"np.{ufunc.__name__}({a}, {b}, out={out})")
        if name in FLOAT_UNARY or name == "aten::sigmoid":
            x = args[0]
            if category(dtype) < FLOAT_CAT or not self.full[x] or self.dtypes[x] != dtype:
                return None
            src = self.operand(x)
            out = self.destination(step.output, dying)
            if name != "aten::sigmoid":
                return self.emit(f"np.{FLOAT_UNARY[name].__name__}({src}, out={out})")
            one = self.global_value(dtype.type(1))  # as vm.ops.unary's sigmoid: 1 / (1 + exp(-x))
            self.emit(f"np.negative({src}, out={out})")
            self.emit(f"np.exp({out}, out={out})")
            self.emit(f"np.add({out}, {one}, out={out})")
            return self.emit(f"np.reciprocal({out}, out={out})")
        if name in ("aten::relu", "aten::clamp", "aten::clamp_min", "aten::clamp_max"):
            return self.clamp_line(step, args, dtype, dying)
        return None

    def clamp_line(self, step: Step, args: list[int], dtype: np.dtype, dying: list[int]) -> str | None:
        x = args[0]
        if not self.full[x] or self.dtypes[x] != dtype or dtype == BOOL:
            return None
        if step.name == "aten::relu":
            bounds = [(np.maximum, 0)]
        else:
            if category(dtype) < FLOAT_CAT:
                return None  # integer clamps promote by the bound's type: left to the kernel
            wanted = {"aten::clamp": (1, 2), "aten::clamp_min": (1, None), "aten::clamp_max": (None, 1)}[step.name]
            bounds = []
            for ufunc, position in zip(_MAXMIN, wanted):
                if position is None:
                    continue
                known, value = self.argument_value(step, args, position)
                if not known:
                    return None
                if value is None:
                    continue
                if type(value) not in (int, float):
                    return None
                bounds.append((ufunc, value))
            if not bounds:
                return None  # clamp() without bounds raises: the kernel says so
        src = self.operand(x)
        out = self.destination(step.output, dying)
        line = ""
        for ufunc, value in bounds:
            line = self.emit(f"np.{ufunc.__name__}({src}, {self.const_block(dtype, dtype.type(value))}, out={out})")
            src = out
        return line

    def generic_line(self, step: Step, dying: list[int]) -> None:
        args = [self.operand(i) for i in step.inputs]
        out = self.destination(step.output, ())  # never over the operator's own inputs
        for i in dying:
            self.release(i)
        if step.out is not None:
            fn = self.global_value(step.out)
            self.emit(f"r = {fn}({', '.join([out, *args])})")
            self.emit(f"if r is not {out}: {out}[...] = r")
        else:
            fn = self.global_value(step.kernel)
            self.emit(f"{out}[...] = {fn}({', '.join(args)})")

    def emit(self, line: str) -> str:
        self.lines.append(line)
        return line

    # -- argument facts ----------------------------------------------------------------

    def argument_value(self, step: Step, args: list[Any], position: int) -> tuple[bool, Any]:
        """(known, value) of the operator's argument ``position``: a group constant, a
        schema default, or unknown (a run-time value)."""
        if position < len(args):
            return self.const_value(args[position])
        extra = position - len(args)
        return (True, step.defaults[extra]) if extra < len(step.defaults) else (False, None)

    def full_dtype(self, slots: Sequence[int]) -> np.dtype | None:
        """The dtype shared by the full operands among ``slots`` (None if they differ)."""
        found = {self.dtypes[s] for s in slots if self.full[s]}
        return found.pop() if len(found) == 1 else None


def make_whole(steps: Sequence[Step], constants: dict[int, Any], n_inputs: int,
               outputs: Sequence[int]) -> tuple[str, Callable[..., Any]]:
    """The group's kernels called in order on whole values: ``whole(*args)`` returns the
    group's result (one value, or a tuple)."""
    namespace: dict[str, Any] = {}
    names = {i: f"a{i}" for i in range(n_inputs)}
    for slot, value in constants.items():
        names[slot] = f"c{slot}"
        namespace[f"c{slot}"] = value
    lines = []
    for step in steps:
        namespace[f"f{step.output}"] = step.kernel
        names[step.output] = f"v{step.output}"
        lines.append(f"v{step.output} = f{step.output}({', '.join(names[i] for i in step.inputs)})")
    result = [names[s] for s in outputs]
    ret = result[0] if len(result) == 1 else "(" + ", ".join(result) + ",)"
    params = ", ".join(f"a{i}" for i in range(n_inputs))
    body = "\n    ".join([*lines, f"return {ret}"])
    source = f"def whole({params}):\n    {body}\n"
    exec(compile(source, "<fusion group>", "exec"), namespace)  # noqa: S102 - our own generated code
    return source, namespace["whole"]
