"""The optional numba fuser: a fusion group as one compiled loop over its elements.

Where numba is installed (``pip install irvm[fast]``), a fusion group whose tensors are
large becomes a single ``prange`` loop: each element is read once from every input, the
group's operators run on scalars in registers, and each output is written once.  That is
the memory-bandwidth bound the numpy paths cannot reach.

The loop is generated as Python source from the group's operators and the dtypes of one
call's values (the same dtypes the unfused kernels produce, taken from ``FusedKernel``'s
first block), with PyTorch's rules spelled out: every operator computes in the dtype
``vm.ops._dtypes.result_type`` gives for its operands (so a Python float constant is cast
to a float32 tensor's dtype, as PyTorch does), comparisons compare in the promoted dtype,
``max``/``min``/``clamp``/``relu`` propagate NaN like PyTorch.  An operator missing from
the table below makes the group ineligible (it then runs blocked, with numpy).

numba caches compiled code only for functions defined in real files (not ``exec``), so
each generated kernel is written to ``$IRVM_CACHE_DIR`` (default ``~/.cache/irvm``) as
``fused_<hash>.py`` and imported from there with ``cache=True``: a second process loads
the machine code instead of compiling it.  ``precompile`` builds the float32 kernels of a
program ahead of time (``irc compile`` calls it), so a run does not pay for compilation.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vm.ops import _dtypes

# An optional dependency, found without importing it: importing numba takes about half a
# second, which every `irc` and `irvm` start (and `vm.load`) would pay for a fuser that is
# off by default.  The generated kernel modules import it when they are built.
AVAILABLE = importlib.util.find_spec("numba") is not None

# Elements from which a call runs the numba kernel.  Measured on ratio_iou (2 cores): at 40K
# elements numba takes 0.024 ms and the blocked numpy path 0.114 ms, at 1e5 0.045 vs 0.28 ms;
# below two of vm.fusion.kernels's blocks (16K) the group runs its kernels straight-line anyway.
THRESHOLD = 1 << 14
_call_lock = threading.Lock()  # numba's workqueue threading layer must not be entered twice at once
_loaded: dict[str, Callable[..., Any]] = {}
_load_lock = threading.Lock()


def cache_dir() -> Path:
    root = os.environ.get("IRVM_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "irvm")
    path = Path(root) / "numba"
    path.mkdir(parents=True, exist_ok=True)
    return path


# ---------------------------------------------------------------------------------------
# Scalar expressions per operator: each takes the operand expressions (already cast to the
# computation dtype ``c``) and returns an expression.  ``nan_max``/``nan_min`` are helpers
# defined in the generated file.


Expr = Callable[[list[str], list[Any]], str]
_NOT_CONST = object()  # an operand whose value is only known at run time


def _binary(symbol: str) -> Expr:
    return lambda a, k: f"({a[0]} {symbol} {a[1]})"


def _alpha(symbol: str) -> Expr:
    """add/sub with ``alpha``: the third operand, a constant (1 unless the IR says else)."""

    def expr(a: list[str], k: list[Any]) -> str:
        alpha = k[2] if len(k) > 2 else 1
        if alpha is _NOT_CONST:
            return f"({a[0]} {symbol} {a[2]} * {a[1]})"
        return f"({a[0]} {symbol} {a[1]})" if alpha == 1 else f"({a[0]} {symbol} C({alpha!r}) * {a[1]})"

    return expr


def _clamp(a: list[str], k: list[Any]) -> str:
    out = a[0]
    if len(a) > 1 and k[1] is not None:
        out = f"({a[1]} if {out} < {a[1]} else {out})"
    if len(a) > 2 and k[2] is not None:
        out = f"({a[2]} if {out} > {a[2]} else {out})"
    return out


EXPRESSIONS: dict[str, Expr] = {
    "aten::add.Tensor": _alpha("+"),
    "aten::add.Scalar": _alpha("+"),
    "aten::sub.Tensor": _alpha("-"),
    "aten::sub.Scalar": _alpha("-"),
    "aten::mul.Tensor": _binary("*"),
    "aten::mul.Scalar": _binary("*"),
    "aten::div.Tensor": _binary("/"),
    "aten::div.Scalar": _binary("/"),
    "aten::neg": lambda a, k: f"(-{a[0]})",
    "aten::abs": lambda a, k: f"abs({a[0]})",
    "aten::exp": lambda a, k: f"np.exp({a[0]})",
    "aten::log": lambda a, k: f"np.log({a[0]})",
    "aten::log1p": lambda a, k: f"np.log1p({a[0]})",
    "aten::sqrt": lambda a, k: f"np.sqrt({a[0]})",
    "aten::rsqrt": lambda a, k: f"(C(1) / np.sqrt({a[0]}))",
    "aten::reciprocal": lambda a, k: f"(C(1) / {a[0]})",
    "aten::sigmoid": lambda a, k: f"(C(1) / (C(1) + np.exp(-{a[0]})))",
    "aten::tanh": lambda a, k: f"np.tanh({a[0]})",
    "aten::sin": lambda a, k: f"np.sin({a[0]})",
    "aten::cos": lambda a, k: f"np.cos({a[0]})",
    "aten::relu": lambda a, k: f"({a[0]} if not {a[0]} < C(0) else C(0))",
    "aten::silu": lambda a, k: f"({a[0]} / (C(1) + np.exp(-{a[0]})))",
    "aten::floor": lambda a, k: f"np.floor({a[0]})",
    "aten::ceil": lambda a, k: f"np.ceil({a[0]})",
    "aten::max.other": lambda a, k: f"nan_max({a[0]}, {a[1]})",
    "aten::min.other": lambda a, k: f"nan_min({a[0]}, {a[1]})",
    "aten::maximum": lambda a, k: f"nan_max({a[0]}, {a[1]})",
    "aten::minimum": lambda a, k: f"nan_min({a[0]}, {a[1]})",
    "aten::clamp": _clamp,
    "aten::clamp.Tensor": _clamp,
    "aten::clamp_min": lambda a, k: _clamp([a[0], a[1]], [k[0], k[1]]),
    "aten::clamp_max": lambda a, k: _clamp([a[0], "", a[1]], [k[0], None, k[1]]),
}
COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
for _name, _sym in COMPARISONS.items():
    EXPRESSIONS[f"aten::{_name}.Tensor"] = _binary(_sym)
    EXPRESSIONS[f"aten::{_name}.Scalar"] = _binary(_sym)
WHERE = ("aten::where.self", "aten::where.ScalarOther", "aten::where.ScalarSelf", "aten::where.Scalar")
FLOATING = ("aten::div", "aten::sigmoid", "aten::exp", "aten::log", "aten::sqrt", "aten::rsqrt", "aten::tanh",
            "aten::sin", "aten::cos", "aten::reciprocal", "aten::silu")


def supports(op_names: Sequence[str]) -> bool:
    """Can every operator of a group be generated?"""
    return all(name in EXPRESSIONS or name in WHERE for name in op_names)


# ---------------------------------------------------------------------------------------
# Code generation


_HEADER = '''\
# Generated by irvm (vm/fusion/numba_backend.py) for one fusion group; safe to delete.
import numpy as np
import numba


@numba.njit(inline="always")
def nan_max(a, b):
    return a if (a > b or a != a) else b


@numba.njit(inline="always")
def nan_min(a, b):
    return a if (a < b or a != a) else b

'''


Step = tuple[str, tuple[int, ...], int, tuple[Any, ...]]


def generate(steps: Sequence[Step], dtypes: dict[int, np.dtype], full: Sequence[bool],
             constants: dict[int, Any], n_inputs: int, outputs: Sequence[int]) -> str:
    """The source of one kernel ``kernel(in0.., out0..)`` for a call signature.

    ``steps`` are (operator name, input slots, output slot, defaults appended after the
    inputs); ``dtypes`` gives every tensor slot's dtype; ``full`` says which slots vary per
    element (the others are 0-dim tensors or scalars, passed in once as scalars).
    """
    args = [f"in{i}" for i in range(n_inputs)] + [f"out{k}" for k in range(len(set(outputs)))]
    lines = [_HEADER, "@numba.njit(parallel=True, cache=True, fastmath=False)", f"def kernel({', '.join(args)}):"]
    lines += ["    n = out0.shape[0]", "    for i in numba.prange(n):"]
    name: dict[int, str] = {i: f"in{i}[i]" if full[i] else f"in{i}" for i in range(n_inputs)}
    for slot, value in constants.items():
        name[slot] = _literal(value)
    for op, ins, out, defaults in steps:
        known = [constants.get(s, _NOT_CONST) if s in constants else _NOT_CONST for s in ins] + list(defaults)
        exprs = [name[s] for s in ins] + [_literal(d) for d in defaults]
        probes = [constants[s] if s in constants else _probe(dtypes[s], full[s]) for s in ins] + list(defaults)
        result = dtypes[out]
        if op in WHERE:
            cast = f"np.{result.name}"
            expr = f"({cast}({exprs[1]}) if {exprs[0]} else {cast}({exprs[2]}))"
        else:
            cast = f"np.{_compute_dtype(op, probes).name}"
            operands = [e if k is None else f"{cast}({e})" for e, k in zip(exprs, known)]
            expr = EXPRESSIONS[op](operands, known).replace("C(", f"{cast}(")
        lines.append(f"        v{out} = np.{result.name}({expr})")
        name[out] = f"v{out}"
    for k, slot in enumerate(dict.fromkeys(outputs)):
        lines.append(f"        out{k}[i] = {name[slot]}")
    return "\n".join(lines) + "\n"


def _literal(value: Any) -> str:
    if isinstance(value, float) and not np.isfinite(value):
        return "np.nan" if np.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    return repr(value)


def _probe(dtype: np.dtype, full: bool) -> Any:
    """A stand-in operand for promotion: a dimensioned or a 0-dim array of ``dtype``."""
    return np.zeros(1 if full else (), dtype=dtype)


def _compute_dtype(op: str, operands: list[Any]) -> np.dtype:
    """The dtype PyTorch computes ``op`` in, from its operands (arrays and scalars)."""
    values = [v for v in operands if v is not None and not isinstance(v, str)]
    dtype = np.dtype(_dtypes.result_type(*values[:2] if op.startswith(("aten::add", "aten::sub")) else values))
    return np.dtype(_dtypes.float_type(dtype)) if op.startswith(FLOATING) else dtype


def load_kernel(source: str, fresh: bool = False) -> Callable[..., Any]:
    """Write ``source`` to the cache directory (once) and import its ``kernel``.

    ``fresh`` drops numba's cached machine code for it first (after a cache that would
    not load, e.g. one written by another numba version)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    with _load_lock:
        if fresh:
            _loaded.pop(digest, None)
            for stale in (cache_dir() / "__pycache__").glob(f"fused_{digest}.*"):
                stale.unlink(missing_ok=True)
        if digest in _loaded:
            return _loaded[digest]
        path = cache_dir() / f"fused_{digest}.py"
        if not path.exists():
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            tmp.replace(path)
        spec = importlib.util.spec_from_file_location(f"irvm_fused_{digest}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # numba's cache loader looks the module up by name
        spec.loader.exec_module(module)
        _loaded[digest] = module.kernel
        return module.kernel


def call(kernel: Callable[..., Any], args: Sequence[Any]) -> None:
    """Run a compiled kernel on at most ``vm.fusion.threads.get_num_threads()`` of numba's
    threads (numba's own pool, sized by ``NUMBA_NUM_THREADS``)."""
    import numba  # installed: a kernel was compiled

    from vm.fusion.threads import get_num_threads

    with _call_lock:
        numba.set_num_threads(min(get_num_threads(), numba.config.NUMBA_NUM_THREADS))  # pyright: ignore[reportPrivateImportUsage, reportAttributeAccessIssue]
        kernel(*args)
