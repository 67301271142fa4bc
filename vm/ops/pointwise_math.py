"""Pointwise math beyond arithmetic: two-argument functions (atan2, hypot, logaddexp,
xlogy, the bit shifts), the ternary maps (lerp, addcmul, addcdiv), nan_to_num and logit.

They follow ``pointwise.py``'s recipe: ``_operands`` brings both operands to PyTorch's
result dtype; the floating ones (atan2, hypot, logaddexp, xlogy, lerp, addcdiv of
integers) then lift integer results to float32 with ``float_type``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.ops._common import copy_out, write_inplace
from vm.ops._dtypes import FLOAT_CAT, category, float_type, result_type, scalar_for, wrap
from vm.ops.pointwise import _conv, _operands
from vm.ops.registry import kernel

Array = np.ndarray


def _register(schema: str, fn: Any, elementwise: bool = True) -> None:
    kernel(schema, elementwise=elementwise)(fn).out(copy_out(fn))


def _floating_pair(a: Any, b: Any) -> tuple[Any, Any]:
    dt = float_type(result_type(a, b))
    return _conv(a, dt), _conv(b, dt)


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
    return wrap(np.nan_to_num(self, nan=0.0 if nan is None else nan,
                              posinf=float(info.max) if posinf is None else posinf,
                              neginf=float(info.min) if neginf is None else neginf))


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
