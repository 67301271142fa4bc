"""Predicates on tensors: the elementwise tests (isnan, isinf, isfinite, isclose...),
and the queries that turn a tensor into one answer (equal, allclose, is_nonzero, item,
count_nonzero).

Elementwise predicates return bool tensors; ``isnan`` of an integer tensor is all False,
as in PyTorch.  ``isclose`` brings both operands to PyTorch's result dtype first
(``pointwise._operands``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.ops._common import copy_out
from vm.ops._dtypes import BOOL, FLOAT_CAT, category, float_type, result_type, to_python, wrap
from vm.ops.pointwise import _conv
from vm.ops.registry import Fact, kernel

Array = np.ndarray


def _register(schema: str, fn: Any, elementwise: bool = True) -> None:
    kernel(schema, elementwise=elementwise)(fn).out(copy_out(fn))


def _floating_pair(a: Any, b: Any) -> tuple[Any, Any]:
    dt = float_type(result_type(a, b))
    return _conv(a, dt), _conv(b, dt)


# ---------------------------------------------------------------------------------------
# predicates


def _pred(fn: Any) -> Any:
    def run(self: Array) -> Array:
        if category(self.dtype) < FLOAT_CAT:
            return np.zeros(self.shape, BOOL) if fn is not np.isfinite else np.ones(self.shape, BOOL)
        return wrap(fn(self))

    return run


for _name, _fn in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                   ("isposinf", np.isposinf), ("isneginf", np.isneginf)):
    _register(f"aten::{_name}(Tensor self) -> Tensor", _pred(_fn))


def _isclose(self: Array, other: Array, rtol: float, atol: float, equal_nan: bool) -> Array:
    if self.dtype != other.dtype:
        raise RuntimeError(f"{self.dtype} did not match {other.dtype}")
    if self.dtype == BOOL:
        return wrap(np.equal(self, other))
    return wrap(np.isclose(self, other, rtol=rtol, atol=atol, equal_nan=equal_nan))


_register("aten::isclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, "
          "bool equal_nan=False) -> Tensor", _isclose)
kernel("aten::allclose(Tensor self, Tensor other, float rtol=1.0000000000000001e-05, float atol=1e-08, "
       "bool equal_nan=False) -> bool")(lambda self, other, rtol, atol, en: bool(_isclose(self, other, rtol, atol, en).all()))
kernel("aten::equal(Tensor self, Tensor other) -> bool")(
    lambda self, other: self.shape == other.shape and bool(np.array_equal(self, other))
)
kernel("aten::is_floating_point(Tensor self) -> bool", facts=Fact.SHAPE_QUERY)(lambda self: category(self.dtype) == FLOAT_CAT)


@kernel("aten::is_nonzero(Tensor self) -> bool")
def is_nonzero(self: Array) -> bool:
    if self.size != 1:
        raise RuntimeError(f"Boolean value of Tensor with {'no values' if self.size == 0 else 'more than one value'} "
                           "is ambiguous")
    return bool(self.reshape(()).item())


kernel("aten::item(Tensor self) -> Scalar")(to_python)


def _count_nonzero(self: Array, dim: Any) -> Array:
    axis = None if dim is None else (tuple(dim) if isinstance(dim, list) else dim)
    return wrap(np.asarray(np.count_nonzero(self, axis=axis), dtype=np.int64))


_register("aten::count_nonzero(Tensor self, int? dim=None) -> Tensor", _count_nonzero, elementwise=False)
_register("aten::count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor", _count_nonzero, elementwise=False)
