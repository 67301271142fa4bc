"""Binary pointwise kernels: arithmetic, comparisons, bitwise/logical ops, where, clamp.

Every binary kernel follows one recipe.  ``_operands(a, b)`` finds PyTorch's result dtype
(``_dtypes.binary_result_type``: categories, wrapped scalars, 0-dim tensors) and converts
both operands to it: an ndarray by ``astype`` only when its dtype differs, a Python scalar
into a numpy scalar of that dtype so that numpy cannot promote any further.  The numpy
ufunc then runs in exactly the dtype PyTorch computes in, and ``wrap`` turns the numpy
scalar a ufunc returns for 0-dim inputs back into a 0-dim array.

Out variants call the same ufunc with ``out=buf`` when the buffer has the result's dtype
and shape, so that a planned buffer is written without a temporary; otherwise they return
a fresh result (see ``_common.copy_out``).  In-place ``foo_`` kernels compute into
``self`` with PyTorch's checks (the result dtype must be castable to ``self``'s, and
``other`` must broadcast to ``self``'s shape).

Integer division by zero raises ``ZeroDivisionError`` as PyTorch does; floating
division by zero gives inf/nan without numpy warnings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vm.ops._common import copy_out, into, write_inplace
from vm.ops._dtypes import (
    BOOL,
    FLOAT_CAT,
    INT_CAT,
    binary_result_type,
    category,
    float_type,
    result_type,
    scalar_for,
    wrap,
)
from vm.ops.registry import FastCall, declare, kernel

Ufunc = Callable[..., Any]


def _operands(a: Any, b: Any) -> tuple[Any, Any, np.dtype[Any]]:
    """``a`` and ``b`` converted to their PyTorch result dtype, and that dtype.

    Fast paths: two arrays of one dtype; an array and a Python scalar that cannot raise
    its dtype (numpy 2 treats Python scalars as "weak", as PyTorch treats wrapped numbers,
    so the scalar is passed through unconverted).
    """
    if type(a) is np.ndarray:
        if type(b) is np.ndarray:
            if a.dtype is b.dtype:
                return a, b, a.dtype
        elif _RAW_SCALAR.get((a.dtype, type(b))):
            return a, b, a.dtype
    dt = binary_result_type(a, b)
    return _conv(a, dt), _conv(b, dt), dt


def _raw_scalar_table() -> dict[tuple[np.dtype[Any], type], bool]:
    """(array dtype, scalar type) pairs where numpy's weak scalar gives torch's dtype.

    A scalar of a lower or equal category keeps the array's dtype in both libraries;
    integer arrays narrower than int64 are left out, because numpy raises on an int
    that does not fit where PyTorch wraps around.
    """
    from vm.ops._dtypes import _CATEGORY, BOOL_CAT
    from vm.ops._dtypes import FLOAT_CAT as F

    table = {}
    for dt, cat in _CATEGORY.items():
        for t, scat in ((bool, BOOL_CAT), (int, INT_CAT), (float, F)):
            narrow_int = cat == INT_CAT and dt != np.dtype(np.int64) and t is int
            table[(dt, t)] = scat <= cat and not narrow_int and not (cat == BOOL_CAT and t is not bool)
    return table


_RAW_SCALAR = _raw_scalar_table()
_PY_NUMBER = (int, float, bool, type(None))


def _conv(x: Any, dt: np.dtype[Any]) -> Any:
    if type(x) is np.ndarray:
        return x if x.dtype == dt else x.astype(dt)
    return scalar_for(x, dt)


def _shape_of(a: Any, b: Any) -> tuple[int, ...]:
    sa = a.shape if type(a) is np.ndarray else ()
    sb = b.shape if type(b) is np.ndarray else ()
    return sa if sa == sb or not sb else (sb if not sa else np.broadcast_shapes(sa, sb))


def _check_int_zero(b: Any, dt: np.dtype[Any]) -> None:
    if category(dt) <= INT_CAT and not np.all(b):
        raise ZeroDivisionError("ZeroDivisionError")


def _scale(x: Any, alpha: Any, dt: np.dtype[Any]) -> Any:
    if alpha == 1:
        return x
    if category(dt) <= INT_CAT and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return np.multiply(x, scalar_for(alpha, dt))


# ---------------------------------------------------------------------------------------
# add / sub / rsub / mul (alpha-scaled)


def _add(self: Any, other: Any, alpha: Any) -> np.ndarray:
    a, b, dt = _operands(self, other)
    return wrap(np.add(a, _scale(b, alpha, dt)))


def _add_out(buf: np.ndarray, self: Any, other: Any, alpha: Any) -> np.ndarray:
    a, b, dt = _operands(self, other)
    if buf.dtype == dt and buf.shape == _shape_of(a, b):
        return np.add(a, _scale(b, alpha, dt), out=buf)
    return into(buf, _add(self, other, alpha))


def _sub(self: Any, other: Any, alpha: Any) -> np.ndarray:
    a, b, dt = _operands(self, other)
    if dt == BOOL:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported.")
    return wrap(np.subtract(a, _scale(b, alpha, dt)))


def _sub_out(buf: np.ndarray, self: Any, other: Any, alpha: Any) -> np.ndarray:
    a, b, dt = _operands(self, other)
    if buf.dtype == dt and buf.shape == _shape_of(a, b) and dt != BOOL:
        return np.subtract(a, _scale(b, alpha, dt), out=buf)
    return into(buf, _sub(self, other, alpha))


def _rsub_impl(self: Any, other: Any, alpha: Any) -> np.ndarray:
    a, b, dt = _operands(self, other)
    return wrap(np.subtract(b, _scale(a, alpha, dt)))


for _sfx, _other in (("Tensor", "Tensor other, *"), ("Scalar", "Scalar other")):
    kernel(f"aten::add.{_sfx}(Tensor self, {_other}, Scalar alpha=1) -> Tensor", elementwise=True)(_add).out(_add_out)
    kernel(f"aten::sub.{_sfx}(Tensor self, {_other}, Scalar alpha=1) -> Tensor", elementwise=True)(_sub).out(_sub_out)
    kernel(f"aten::rsub.{_sfx}(Tensor self, {_other}, Scalar alpha=1) -> Tensor", elementwise=True)(
        _rsub_impl
    ).out(copy_out(_rsub_impl))
    kernel(f"aten::add_.{_sfx}(Tensor(a!) self, {_other}, Scalar alpha=1) -> Tensor(a!)")(
        lambda self, other, alpha: write_inplace(self, _add(self, other, alpha))
    )
    kernel(f"aten::sub_.{_sfx}(Tensor(a!) self, {_other}, Scalar alpha=1) -> Tensor(a!)")(
        lambda self, other, alpha: write_inplace(self, _sub(self, other, alpha))
    )


# ---------------------------------------------------------------------------------------
# Plain binary ufuncs: mul, pow, maximum/minimum, bitwise, comparisons


def _binary(ufunc: Ufunc) -> tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]:
    def fn(self: Any, other: Any) -> np.ndarray:
        a, b, _ = _operands(self, other)
        return wrap(ufunc(a, b))

    def out(buf: np.ndarray, self: Any, other: Any) -> np.ndarray:
        a, b, dt = _operands(self, other)
        if buf.dtype == dt and buf.shape == _shape_of(a, b):
            return ufunc(a, b, out=buf)
        return into(buf, wrap(ufunc(a, b)))

    return fn, out


def _compare(ufunc: Ufunc) -> tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]:
    def fn(self: Any, other: Any) -> np.ndarray:
        a, b, _ = _operands(self, other)
        return wrap(ufunc(a, b))

    def out(buf: np.ndarray, self: Any, other: Any) -> np.ndarray:
        a, b, _ = _operands(self, other)
        if buf.dtype == BOOL and buf.shape == _shape_of(a, b):
            return ufunc(a, b, out=buf)
        return into(buf, wrap(ufunc(a, b)))

    return fn, out


def _register_binary(
    name: str, schemas: list[str], fn: Callable[..., np.ndarray], out: Callable[..., np.ndarray] | None,
    inplace: Sequence[str] = (),
) -> None:
    for sig in schemas:
        reg = kernel(f"aten::{name}{sig} -> Tensor", elementwise=True)(fn)
        if out is not None:
            reg.out(out)
    for sig in inplace:
        kernel(f"aten::{name}_{sig} -> Tensor(a!)")(lambda self, other, _f=fn: write_inplace(self, _f(self, other)))


_TS = ["Tensor(Tensor self, Tensor other)", "Scalar(Tensor self, Scalar other)"]
_TS_INPLACE = ["Tensor(Tensor(a!) self, Tensor other)", "Scalar(Tensor(a!) self, Scalar other)"]

_register_binary("mul", [f".{s}" for s in _TS], *_binary(np.multiply), inplace=[f".{s}" for s in _TS_INPLACE])
for _name, _uf in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                   ("gt", np.greater), ("ge", np.greater_equal)):
    _register_binary(_name, [f".{s}" for s in _TS], *_compare(_uf), inplace=[f".{s}" for s in _TS_INPLACE])
_register_binary("maximum", ["(Tensor self, Tensor other)"], *_binary(np.maximum))
_register_binary("minimum", ["(Tensor self, Tensor other)"], *_binary(np.minimum))
_register_binary("max", [".other(Tensor self, Tensor other)"], *_binary(np.maximum))
_register_binary("min", [".other(Tensor self, Tensor other)"], *_binary(np.minimum))


def _bitwise(ufunc: Ufunc) -> tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]:
    fn, out = _binary(ufunc)

    def checked(self: Any, other: Any) -> np.ndarray:
        dt = binary_result_type(self, other)
        if category(dt) > INT_CAT:
            raise RuntimeError(f"\"{ufunc.__name__}\" not implemented for floating point tensors")
        return fn(self, other)

    return checked, out


for _name, _uf in (("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)):
    _fn, _out = _bitwise(_uf)
    _register_binary(f"bitwise_{_name}", [f".{s}" for s in _TS], _fn, _out, inplace=[f".{s}" for s in _TS_INPLACE])
    _register_binary(f"__{_name}__", [f".{s}" for s in _TS], _fn, _out)
    for _sfx, _other in (("Tensor", "Tensor other"), ("Scalar", "Scalar other")):
        kernel(f"aten::__i{_name}__.{_sfx}(Tensor(a!) self, {_other}) -> Tensor(a!)")(
            lambda self, other, _f=_fn: write_inplace(self, _f(self, other))
        )


def _logical(ufunc: Ufunc) -> tuple[Callable[..., np.ndarray], Callable[..., np.ndarray]]:
    def fn(self: np.ndarray, other: np.ndarray) -> np.ndarray:
        return wrap(ufunc(self, other))  # numpy's logical ufuncs test truth, as torch's do

    def out(buf: np.ndarray, self: np.ndarray, other: np.ndarray) -> np.ndarray:
        if buf.dtype == BOOL and buf.shape == _shape_of(self, other):
            return ufunc(self, other, out=buf)
        return fn(self, other)

    return fn, out


for _name, _uf in (("and", np.logical_and), ("or", np.logical_or), ("xor", np.logical_xor)):
    _fn, _out = _logical(_uf)
    _register_binary(f"logical_{_name}", ["(Tensor self, Tensor other)"], _fn, _out)
    kernel(f"aten::logical_{_name}_(Tensor(a!) self, Tensor other) -> Tensor(a!)")(
        lambda self, other, _f=_fn: write_inplace(self, _f(self, other).astype(self.dtype))
    )


# ---------------------------------------------------------------------------------------
# Division family


@np.errstate(all="ignore")
def _div(self: Any, other: Any) -> np.ndarray:
    dt = float_type(binary_result_type(self, other))
    return wrap(np.true_divide(_conv(self, dt), _conv(other, dt)))


@np.errstate(all="ignore")
def _div_out(buf: np.ndarray, self: Any, other: Any) -> np.ndarray:
    dt = float_type(binary_result_type(self, other))
    a, b = _conv(self, dt), _conv(other, dt)
    if buf.dtype == dt and buf.shape == _shape_of(a, b):
        return np.true_divide(a, b, out=buf)
    return into(buf, wrap(np.true_divide(a, b)))


@np.errstate(all="ignore")
def _div_mode(self: Any, other: Any, rounding_mode: str | None) -> np.ndarray:
    if rounding_mode is None:
        return _div(self, other)
    a, b, dt = _operands(self, other)
    if rounding_mode == "floor":
        _check_int_zero(b, dt)
        return wrap(np.floor_divide(a, b))
    if rounding_mode == "trunc":
        _check_int_zero(b, dt)
        if category(dt) <= INT_CAT:
            q = np.floor_divide(a, b)
            fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
            return wrap((q + fix).astype(dt))
        return wrap(np.trunc(np.true_divide(a, b)))
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'"
    )


for _sfx, _other in (("Tensor", "Tensor other"), ("Scalar", "Scalar other")):
    kernel(f"aten::div.{_sfx}(Tensor self, {_other}) -> Tensor", elementwise=True)(_div).out(_div_out)
    kernel(f"aten::div.{_sfx}_mode(Tensor self, {_other}, *, str? rounding_mode) -> Tensor", elementwise=True)(
        _div_mode
    ).out(copy_out(_div_mode))
    kernel(f"aten::div_.{_sfx}(Tensor(a!) self, {_other}) -> Tensor(a!)")(
        lambda self, other: write_inplace(self, _div(self, other))
    )
    kernel(f"aten::div_.{_sfx}_mode(Tensor(a!) self, {_other}, *, str? rounding_mode) -> Tensor(a!)")(
        lambda self, other, mode: write_inplace(self, _div_mode(self, other, mode))
    )
    kernel(f"aten::true_divide.{_sfx}(Tensor self, {_other}) -> Tensor", elementwise=True)(_div).out(_div_out)


@np.errstate(all="ignore")
def _floor_divide(self: Any, other: Any) -> np.ndarray:
    return _div_mode(self, other, "floor")


@np.errstate(all="ignore")
def _remainder(self: Any, other: Any) -> np.ndarray:
    a, b, dt = _operands(self, other)
    _check_int_zero(b, dt)
    return wrap(np.remainder(a, b))


@np.errstate(all="ignore")
def _fmod(self: Any, other: Any) -> np.ndarray:
    a, b, dt = _operands(self, other)
    _check_int_zero(b, dt)
    return wrap(np.fmod(a, b))


kernel("aten::floor_divide(Tensor self, Tensor other) -> Tensor", elementwise=True)(_floor_divide).out(
    copy_out(_floor_divide)
)
kernel("aten::floor_divide.Scalar(Tensor self, Scalar other) -> Tensor", elementwise=True)(_floor_divide).out(
    copy_out(_floor_divide)
)
kernel("aten::floor_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")(
    lambda self, other: write_inplace(self, _floor_divide(self, other))
)
kernel("aten::floor_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)")(
    lambda self, other: write_inplace(self, _floor_divide(self, other))
)
for _name, _fn in (("remainder", _remainder), ("fmod", _fmod)):
    for _sfx, _other in (("Tensor", "Tensor other"), ("Scalar", "Scalar other")):
        kernel(f"aten::{_name}.{_sfx}(Tensor self, {_other}) -> Tensor", elementwise=True)(_fn).out(copy_out(_fn))
        kernel(f"aten::{_name}_.{_sfx}(Tensor(a!) self, {_other}) -> Tensor(a!)")(
            lambda self, other, _f=_fn: write_inplace(self, _f(self, other))
        )
kernel("aten::remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", elementwise=True)(_remainder).out(
    copy_out(_remainder)
)


# ---------------------------------------------------------------------------------------
# pow


@np.errstate(all="ignore")
def _pow(self: Any, exponent: Any) -> np.ndarray:
    a, b, dt = _operands(self, exponent)
    if category(dt) <= INT_CAT:
        if dt == BOOL:  # bool ** bool is logical "a or not b"; numpy has no bool power
            return wrap(np.power(np.asarray(a).astype(np.int64), b).astype(BOOL))
        if np.any(np.asarray(b) < 0):
            if type(exponent) is not np.ndarray:
                raise RuntimeError("Integers to negative integer powers are not allowed.")
            return wrap(_int_pow_negative(np.asarray(a), np.asarray(b)))
    elif type(exponent) in (int, float) and exponent == 3 and type(a) is np.ndarray and a.dtype.kind == "f":
        # as torch's pow with a scalar exponent of 3: two multiplies (numpy's power would
        # call powf per element, 50x slower; GPT-2's tanh-GELU computes x ** 3)
        return wrap(np.multiply(np.multiply(a, a), a))
    return wrap(np.power(a, b))


def _int_pow_negative(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer powers with some negative exponents, as torch computes them elementwise:
    1 ** -n is 1, (-1) ** -n is +-1 by parity, any other base ** -n truncates to 0."""
    neg = b < 0
    pos = np.power(a, np.where(neg, 0, b))
    odd = (b % 2) != 0
    at_neg = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(pos.dtype)
    return np.where(neg, at_neg, pos)


for _sig in ("Tensor_Tensor(Tensor self, Tensor exponent)", "Tensor_Scalar(Tensor self, Scalar exponent)",
             "Scalar(Scalar self, Tensor exponent)"):
    kernel(f"aten::pow.{_sig} -> Tensor", elementwise=True)(_pow).out(copy_out(_pow))
kernel("aten::pow_.Scalar(Tensor(a!) self, Scalar exponent) -> Tensor(a!)")(
    lambda self, e: write_inplace(self, _pow(self, e))
)
kernel("aten::pow_.Tensor(Tensor(a!) self, Tensor exponent) -> Tensor(a!)")(
    lambda self, e: write_inplace(self, _pow(self, e))
)
kernel("aten::float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", elementwise=True)(
    _float_power := lambda self, e: _pow(self.astype(np.float64), e.astype(np.float64))
).out(copy_out(_float_power))


# ---------------------------------------------------------------------------------------
# where, clamp, masked_fill


def _where(condition: np.ndarray, self: Any, other: Any) -> np.ndarray:
    if condition.dtype != BOOL and condition.dtype != np.uint8:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype {condition.dtype}")
    if type(self) is not np.ndarray and type(other) is not np.ndarray:
        dt = result_type(self, other)
        return wrap(np.where(condition, scalar_for(self, dt), scalar_for(other, dt)))
    a, b, _ = _operands(self, other)
    return wrap(np.where(condition, a, b))


for _sig in ("self(Tensor condition, Tensor self, Tensor other)", "ScalarOther(Tensor condition, Tensor self, Scalar other)",
             "ScalarSelf(Tensor condition, Scalar self, Tensor other)", "Scalar(Tensor condition, Scalar self, Scalar other)"):
    kernel(f"aten::where.{_sig} -> Tensor", elementwise=True)(_where).out(copy_out(_where))


def _clamp(self: np.ndarray, min: Any = None, max: Any = None) -> np.ndarray:
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if type(min) in _PY_NUMBER and type(max) in _PY_NUMBER and category(self.dtype) >= FLOAT_CAT:
        r = np.maximum(self, min) if min is not None else self  # Python numbers are weak in numpy
        own = type(r) is np.ndarray and r is not self
        return wrap(np.minimum(r, max, out=r if own else None) if max is not None else r)
    dt = result_type(self, min, max)
    r = _conv(self, dt)
    if min is not None:
        r = np.maximum(r, _conv(min, dt))
    if max is not None:
        r = np.minimum(r, _conv(max, dt))
    return wrap(r)


def _clamp_out(buf: np.ndarray, self: np.ndarray, min: Any = None, max: Any = None) -> np.ndarray:
    """``_clamp`` written into ``buf`` with ``out=`` (the kernel's ufuncs and operands, so its
    bits) when ``buf`` has the result's dtype and shape; else computed and copied."""
    if type(buf) is np.ndarray and type(self) is np.ndarray and (min is not None or max is not None):
        if type(min) in _PY_NUMBER and type(max) in _PY_NUMBER and category(self.dtype) >= FLOAT_CAT:
            if buf.dtype is self.dtype and buf.shape == self.shape:
                r = np.maximum(self, min, out=buf) if min is not None else self
                return np.minimum(r, max, out=buf) if max is not None else buf
        else:
            dt = result_type(self, min, max)
            shape = np.broadcast_shapes(*(np.shape(x) for x in (self, min, max) if type(x) is np.ndarray))
            if buf.dtype == dt and buf.shape == shape:
                r = _conv(self, dt)
                if min is not None:
                    r = np.maximum(r, _conv(min, dt), out=buf)
                return np.minimum(r, _conv(max, dt), out=buf) if max is not None else buf
    return into(buf, _clamp(self, min, max))


kernel("aten::clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", elementwise=True)(_clamp).out(_clamp_out)
kernel("aten::clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", elementwise=True)(_clamp).out(
    _clamp_out
)
kernel("aten::clip(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", elementwise=True)(_clamp).out(_clamp_out)
kernel("aten::clamp_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)")(
    lambda self, lo, hi: write_inplace(self, _clamp(self, lo, hi))
)
kernel("aten::clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)")(
    lambda self, lo, hi: write_inplace(self, _clamp(self, lo, hi))
)
for _arg in ("Scalar", "Tensor"):
    _sfx = "" if _arg == "Scalar" else ".Tensor"
    kernel(f"aten::clamp_min{_sfx}(Tensor self, {_arg} min) -> Tensor", elementwise=True)(
        lambda self, lo: _clamp(self, lo, None)
    ).out(lambda buf, self, lo: _clamp_out(buf, self, lo, None))
    kernel(f"aten::clamp_max{_sfx}(Tensor self, {_arg} max) -> Tensor", elementwise=True)(
        lambda self, hi: _clamp(self, None, hi)
    ).out(lambda buf, self, hi: _clamp_out(buf, self, None, hi))
    kernel(f"aten::clamp_min_{_sfx}(Tensor(a!) self, {_arg} min) -> Tensor(a!)")(
        lambda self, lo: write_inplace(self, _clamp(self, lo, None))
    )
    kernel(f"aten::clamp_max_{_sfx}(Tensor(a!) self, {_arg} max) -> Tensor(a!)")(
        lambda self, hi: write_inplace(self, _clamp(self, None, hi))
    )


def _masked_fill(self: np.ndarray, mask: np.ndarray, value: Any) -> np.ndarray:
    if mask.dtype != BOOL:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}")
    if type(value) is np.ndarray:
        if value.ndim != 0:
            raise RuntimeError(
                "masked_fill_ only supports a 0-dimensional value tensor, "
                f"but got tensor with {value.ndim} dimension(s)."
            )
        value = value.item()
    return wrap(np.where(mask, scalar_for(value, self.dtype) if self.dtype != BOOL else bool(value), self))


def _masked_fill_(self: np.ndarray, mask: np.ndarray, value: Any) -> np.ndarray:
    r = _masked_fill(self, mask, value)
    if r.shape != self.shape:
        raise RuntimeError(f"masked_fill_: mask of shape {list(mask.shape)} does not broadcast to {list(self.shape)}")
    np.copyto(self, r)
    return self


for _sfx, _v in (("Scalar", "Scalar value"), ("Tensor", "Tensor value")):
    kernel(f"aten::masked_fill.{_sfx}(Tensor self, Tensor mask, {_v}) -> Tensor", elementwise=True)(
        _masked_fill
    ).out(copy_out(_masked_fill))
    kernel(f"aten::masked_fill_.{_sfx}(Tensor(a!) self, Tensor mask, {_v}) -> Tensor(a!)")(_masked_fill_)


# ---------------------------------------------------------------------------------------
# The bare numpy calls the static runtime may make in these kernels' place once a plan
# shows float tensors of one dtype and constant numbers (``vm.static.fastpath``): for such
# operands each kernel calls exactly this ufunc (``add``/``sub`` only with ``alpha=1``)

for _name, _uf in (("add", np.add), ("sub", np.subtract)):
    for _overload in ("Tensor", "Scalar"):
        declare(f"aten::{_name}.{_overload}", fast=(FastCall(_uf, (0, 1), required=((2, 1),)),))
for _qualified, _uf in (("aten::mul.Tensor", np.multiply), ("aten::mul.Scalar", np.multiply),
                        ("aten::maximum", np.maximum), ("aten::minimum", np.minimum),
                        ("aten::max.other", np.maximum), ("aten::min.other", np.minimum),
                        ("aten::clamp_min", np.maximum), ("aten::clamp_max", np.minimum)):
    declare(_qualified, fast=(FastCall(_uf, (0, 1)),))
# a clamp with one constant bound is minimum or maximum with it
declare("aten::clamp", fast=(FastCall(np.minimum, (0, ("c", 2)), none=(1,)),
                             FastCall(np.maximum, (0, ("c", 1)), none=(2,))))
