"""Differential-test support for the tensor kernels: strategies, a torch runner, comparison.

A test case is an operator's qualified name (``aten::add.Tensor``) and a hypothesis
strategy of argument tuples in irvm's runtime form (numpy arrays, Python scalars,
ScalarType codes, lists).  ``check_against_torch`` runs irvm's kernel and the same
overload through ``torch.ops.aten`` on copies of the same values, converting arguments
by their schema type (ScalarType codes become ``torch.dtype``s, arrays become tensors),
and passing keyword-only arguments by keyword as PyTorch requires.  Then:

- if torch raises, irvm must raise too (any exception: messages differ);
- otherwise the results must agree in Python type (a Tensor is a numpy *array*, 0-dim
  included, never a numpy scalar), dtype, shape and values (float32 tolerance), and any
  argument the schema marks as mutated (``Tensor(a!)``) must end up equal as well.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.support.against_torch import assert_same, to_numpy, to_torch
from vm.ops._dtypes import to_dtype
from vm.ops.registry import Schema, lookup

F32, F64, I64, I32, BOOL = (np.dtype(t) for t in ("float32", "float64", "int64", "int32", "bool"))
FLOAT = (F32, F64)
NUM = (F32, F64, I64, I32)
ALL = (F32, F64, I64, I32, BOOL)
INTS = (I64, I32, BOOL)

#: examples per parametrized op: 25 in the ci and dev profiles, more in the long one
EXAMPLES = max(25, settings.default.max_examples // 8)

Args = tuple[Any, ...]


# ---------------------------------------------------------------------------------------
# strategies


def elements(dtype: np.dtype[Any]) -> st.SearchStrategy[Any]:
    """Element values for hand-built cases: small ints, and floats on a grid with halves."""
    if dtype == BOOL:
        return st.booleans()
    if dtype.kind in "iu":
        return st.integers(-9, 9)
    return st.one_of(st.floats(-6, 6, width=32), st.integers(-12, 12).map(lambda i: i / 2))


def shapes(min_dims: int = 0, max_dims: int = 3, min_side: int = 1) -> st.SearchStrategy[tuple[int, ...]]:
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=4)


def _values(rng: np.random.Generator, dt: np.dtype[Any], shape: tuple[int, ...], style: int) -> np.ndarray:
    """Array contents from a seeded generator (drawing each element through hypothesis
    costs more than the kernels under test).  Styles: 0 a coarse grid (zeros, ties and
    exact halves are common), 1 uniform floats, 2 the grid with one NaN or inf planted."""
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(-9, 10, shape).astype(dt)
    if style == 1:
        return rng.uniform(-6, 6, shape).astype(dt)
    arr = np.array(rng.integers(-12, 13, shape) / 2, dtype=dt)
    if style == 2 and arr.size:
        arr.reshape(-1)[rng.integers(arr.size)] = rng.choice([np.nan, np.inf, -np.inf])
    return arr


@st.composite
def tensor(draw: Any, dtypes: Sequence[np.dtype[Any]] = ALL, shape: Any = None, **shape_kw: Any) -> np.ndarray:
    dt = draw(st.sampled_from(dtypes))
    shp = draw(shape if shape is not None else shapes(**shape_kw))
    style = draw(st.sampled_from([0, 0, 1, 1, 2]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return np.array(_values(rng, dt, tuple(shp), style), dtype=dt)  # 0-dim draws come back as scalars


@st.composite
def broadcast_pair(draw: Any, dtypes: Sequence[np.dtype[Any]] = ALL, dtypes2: Sequence[np.dtype[Any]] | None = None):
    bs = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3))
    a = draw(tensor(dtypes, shape=st.just(bs.input_shapes[0])))
    b = draw(tensor(dtypes2 or dtypes, shape=st.just(bs.input_shapes[1])))
    return a, b


def scalars(kinds: str = "ifb") -> st.SearchStrategy[Any]:
    options = []
    if "i" in kinds:
        options.append(st.integers(-5, 5))
    if "f" in kinds:
        options.append(st.sampled_from([-2.5, -1.0, 0.0, 0.5, 1.5, 3.0]))
    if "b" in kinds:
        options.append(st.booleans())
    return st.one_of(*options)


def args(*parts: st.SearchStrategy[Any]) -> st.SearchStrategy[Args]:
    return st.tuples(*parts)


def unary(dtypes: Sequence[np.dtype[Any]] = ALL, *extra: st.SearchStrategy[Any]) -> st.SearchStrategy[Args]:
    return st.tuples(tensor(dtypes), *extra)


def binary(dtypes: Sequence[np.dtype[Any]] = ALL, *extra: st.SearchStrategy[Any]) -> st.SearchStrategy[Args]:
    return st.tuples(broadcast_pair(dtypes), *extra).map(lambda t: (*t[0], *t[1:]))


def tensor_scalar(dtypes: Sequence[np.dtype[Any]] = ALL, kinds: str = "ifb", *extra: st.SearchStrategy[Any]):
    return st.tuples(tensor(dtypes), scalars(kinds), *extra)


@st.composite
def tensor_dim(draw: Any, dtypes: Sequence[np.dtype[Any]] = ALL, min_dims: int = 0, min_side: int = 1) -> Args:
    """A tensor and a valid (possibly negative) dim of it."""
    x = draw(tensor(dtypes, min_dims=min_dims, min_side=min_side))
    n = max(x.ndim, 1)
    return x, draw(st.integers(-n, n - 1))


# ---------------------------------------------------------------------------------------
# running irvm and torch


def _torch() -> Any:
    import torch

    return torch


def _to_torch(value: Any, type_text: str) -> Any:
    torch = _torch()
    if isinstance(value, np.ndarray):
        return to_torch(value)
    if isinstance(value, list):
        inner = type_text.rstrip("?").removesuffix("[]")
        return [_to_torch(v, inner) for v in value]
    if value is not None and type_text.startswith("ScalarType"):
        return _TORCH_DTYPES()[to_dtype(value)]
    if type_text.startswith("MemoryFormat") and value == 0:
        return torch.contiguous_format
    return value


def _TORCH_DTYPES() -> dict[np.dtype[Any], Any]:
    torch = _torch()
    return {F32: torch.float32, F64: torch.float64, I64: torch.int64, I32: torch.int32, BOOL: torch.bool,
            np.dtype("uint8"): torch.uint8, np.dtype("int8"): torch.int8, np.dtype("int16"): torch.int16,
            np.dtype("float16"): torch.float16}


def copy_args(values: Args) -> list[Any]:
    return [v.copy() if isinstance(v, np.ndarray) else [x.copy() if isinstance(x, np.ndarray) else x for x in v]
            if isinstance(v, list) else v for v in values]


def run_torch(schema: Schema, values: Args) -> Any:
    torch = _torch()
    packet = getattr(torch.ops.aten, schema.name.split("::")[1])
    op = getattr(packet, schema.overload or "default")
    pos, kw = [], {}
    for arg, v in zip(schema.arguments, values):
        tv = _to_torch(v, arg.type)
        if arg.kwarg_only:
            kw[arg.name] = tv
        else:
            pos.append(tv)
    result = op(*pos, **kw)
    return result, pos, kw


def check_against_torch(qualified: str, values: Args, compare: Callable[..., None] | None = None) -> Any:
    """Run ``qualified`` in irvm and in torch on copies of ``values``; assert they agree."""
    info = lookup(qualified)
    ours_args = copy_args(values)
    try:
        theirs, torch_pos, torch_kw = run_torch(info.schema, values)
    except (RuntimeError, IndexError, ValueError, TypeError, NotImplementedError, ZeroDivisionError) as e:
        try:
            info.kernel(*ours_args)
        except Exception:
            return None
        raise AssertionError(f"torch raised {type(e).__name__}: {e}; irvm did not") from None
    ours = info.kernel(*ours_args)
    (compare or assert_same)(ours, theirs)
    for i, arg in enumerate(info.schema.arguments):
        if arg.mutated:
            assert_same(ours_args[i], to_numpy(_torch_arg(info.schema, torch_pos, torch_kw, i)), f"mutated {arg.name}")
            assert ours is ours_args[i], f"{qualified} must return its mutated argument itself"
    return ours, ours_args


def _torch_arg(schema: Schema, pos: list[Any], kw: dict[str, Any], i: int) -> Any:
    arg = schema.arguments[i]
    if arg.kwarg_only:
        return kw[arg.name]
    return pos[sum(1 for a in schema.arguments[:i] if not a.kwarg_only)]
