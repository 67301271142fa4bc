"""More pointwise kernels: predicates (isnan, isclose...), two-argument math (atan2,
hypot, logaddexp, xlogy, shifts), the ternary maps (lerp, addcmul, addcdiv), nan_to_num,
logit, and the tensor-to-bool queries (equal, allclose, is_nonzero, item).

They follow ``pointwise.py``'s recipe: ``_operands`` brings both operands to PyTorch's
result dtype; the floating ones (atan2, hypot, logaddexp, xlogy, lerp, addcdiv of
integers) then lift integer results to float32 with ``float_type``.  Predicates return
bool tensors; ``isnan`` of an integer tensor is all False, as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.ops._common import copy_out, write_inplace
from vm.ops._dtypes import BOOL, FLOAT_CAT, category, float_type, result_type, scalar_for, to_python, wrap
from vm.ops.pointwise import _conv, _operands
from vm.ops.registry import kernel

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
kernel("aten::is_floating_point(Tensor self) -> bool")(lambda self: category(self.dtype) == FLOAT_CAT)


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


# ---------------------------------------------------------------------------------------
# two-argument math


def _float2(fn: Any) -> Any:
    @np.errstate(all="ignore")
    def run(self: Any, other: Any) -> Array:
        a, b = _floating_pair(self, other)
        return wrap(fn(a, b))

    return run


def _xlogy(x: Any, y: Any) -> Array:
    r = np.multiply(x, np.log(y))
    return np.where((np.asarray(x) == 0) & ~np.isnan(y), r.dtype.type(0), r)


def _logaddexp(a: Array, b: Array) -> Array:
    return np.logaddexp(a, b)


_register("aten::atan2(Tensor self, Tensor other) -> Tensor", _float2(np.arctan2))
_register("aten::hypot(Tensor self, Tensor other) -> Tensor", _float2(np.hypot))
_register("aten::logaddexp(Tensor self, Tensor other) -> Tensor", _float2(_logaddexp))
for _sig in ("Tensor(Tensor self, Tensor other)", "Scalar_Other(Tensor self, Scalar other)",
             "Scalar_Self(Scalar self, Tensor other)"):
    _register(f"aten::xlogy.{_sig} -> Tensor", _float2(_xlogy))
kernel("aten::atan2_(Tensor(a!) self, Tensor other) -> Tensor(a!)")(
    lambda self, other: write_inplace(self, _float2(np.arctan2)(self, other))
)


def _shift(left: bool) -> Any:
    def run(self: Any, other: Any) -> Array:
        a, b, dt = _operands(self, other)
        if category(dt) > 1:
            raise RuntimeError(f'"{"lshift" if left else "rshift"}_cpu" not implemented for floating point tensors')
        return wrap(np.left_shift(a, b) if left else np.right_shift(a, b))

    return run


for _name, _left in (("lshift", True), ("rshift", False)):
    _fn = _shift(_left)
    _register(f"aten::__{_name}__.Tensor(Tensor self, Tensor other) -> Tensor", _fn)
    _register(f"aten::__{_name}__.Scalar(Tensor self, Scalar other) -> Tensor", _fn)
    _long = "left" if _left else "right"
    for _sig in ("Tensor(Tensor self, Tensor other)", "Tensor_Scalar(Tensor self, Scalar other)",
                 "Scalar_Tensor(Scalar self, Tensor other)"):
        _register(f"aten::bitwise_{_long}_shift.{_sig} -> Tensor", _fn)


# ---------------------------------------------------------------------------------------
# ternary maps and the rest


@np.errstate(all="ignore")
def _lerp(self: Array, end: Array, weight: Any) -> Array:
    dt = result_type(self, end)
    if category(dt) < FLOAT_CAT:
        raise RuntimeError(f'"lerp_kernel_scalar" not implemented for \'{dt}\'')
    a, b = self.astype(dt, copy=False), end.astype(dt, copy=False)
    w = _conv(weight, dt)
    diff = b - a
    # PyTorch's two-sided formula: exact at both ends, and nan/inf exactly where torch has them
    return wrap(np.where(np.abs(w) < 0.5, a + w * diff, b - diff * (dt.type(1) - w)))


_register("aten::lerp.Scalar(Tensor self, Tensor end, Scalar weight) -> Tensor", _lerp)
_register("aten::lerp.Tensor(Tensor self, Tensor end, Tensor weight) -> Tensor", _lerp)


def _addc(div: bool) -> Any:
    @np.errstate(all="ignore")
    def run(self: Array, t1: Array, t2: Array, value: Any) -> Array:
        dt = result_type(self, t1, t2)
        if div and category(dt) < FLOAT_CAT:
            raise RuntimeError("Integer division with addcdiv is no longer supported")
        a, x, y = (v.astype(dt, copy=False) for v in (self, t1, t2))
        prod = np.true_divide(x, y) if div else np.multiply(x, y)
        return wrap(a + scalar_for(value, dt) * prod)

    return run


_register("aten::addcmul(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", _addc(False))
_register("aten::addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor", _addc(True))
kernel("aten::addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)")(
    lambda self, t1, t2, v: write_inplace(self, _addc(False)(self, t1, t2, v))
)
kernel("aten::addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor(a!)")(
    lambda self, t1, t2, v: write_inplace(self, _addc(True)(self, t1, t2, v))
)


def _nan_to_num(self: Array, nan: float | None, posinf: float | None, neginf: float | None) -> Array:
    if category(self.dtype) < FLOAT_CAT:
        return self.copy()
    info = np.finfo(self.dtype)
    return wrap(np.nan_to_num(self, nan=0.0 if nan is None else nan, posinf=info.max if posinf is None else posinf,
                              neginf=info.min if neginf is None else neginf))


_register("aten::nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor",
          _nan_to_num)
kernel("aten::nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, float? neginf=None) -> Tensor(a!)")(
    lambda self, nan, posinf, neginf: write_inplace(self, _nan_to_num(self, nan, posinf, neginf))
)


@np.errstate(all="ignore")
def _logit(self: Array, eps: float | None) -> Array:
    x = self if category(self.dtype) >= FLOAT_CAT else self.astype(np.float32)
    if eps is not None:
        x = np.clip(x, eps, 1 - eps).astype(x.dtype, copy=False)
    return wrap(np.log(x / (x.dtype.type(1) - x)))


_register("aten::logit(Tensor self, float? eps=None) -> Tensor", _logit)
_register("aten::deg2rad(Tensor self) -> Tensor",
          lambda self: wrap(np.deg2rad(self if category(self.dtype) >= FLOAT_CAT else self.astype(np.float32))))
_register("aten::rad2deg(Tensor self) -> Tensor",
          lambda self: wrap(np.rad2deg(self if category(self.dtype) >= FLOAT_CAT else self.astype(np.float32))))
