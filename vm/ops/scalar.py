"""int/float/bool arithmetic, comparisons and ``math`` functions with TorchScript's rules.

TorchScript computes on int64 and double in C++, which differs from Python in ways a
graph can observe; each rule below was checked against ``torch.jit`` itself:

- ints wrap around at 64 bits (``2**62 * 4 == 0``); ``<<`` shifts by ``b mod 64``;
- ``div`` is true division and never raises: ``5 / 0`` is ``inf``, as is ``5.0 // 0.0``
  (``floordiv.float`` is ``floor(a / b)``); integer ``//`` and ``%`` by zero raise;
- ``//`` and ``%`` on ints have Python's sign rules; float ``%`` is
  ``fmod(b + fmod(a, b), b)`` (so ``-1e-20 % 1.0 == 0.0`` where Python gives ``1.0``);
- ``int ** int`` is a float (``pow.int``) unless the node's output is an int
  (``pow.int_to_int``); ``0 ** -1`` raises; ``(-8.0) ** (1/3)`` is nan, not complex;
- ``math`` functions follow C: ``sqrt(-1)`` is nan and ``log(0)`` is ``-inf``, no raise;
- ``round`` rounds half to even and returns a float; ``floor``/``ceil`` of a float return
  an int, and a float that does not fit in int64 raises.

Schemas are PyTorch's, overload names included (``aten::add.int_float``); the overload
resolver picks one from the IR's types.  Each family is registered from one table of
Python functions, one registration per overload.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from vm.ops.registry import register_op

Number = int | float

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def wrap_int(x: int) -> int:
    """``x`` as a C++ int64 holds it (two's complement wrap-around)."""
    if _I64_MIN <= x <= _I64_MAX:
        return x
    return (x + 2**63) % 2**64 - 2**63


def to_int(x: float) -> int:
    """A float converted to int64 as TorchScript does; raises when it does not fit."""
    if not math.isfinite(x) or not _I64_MIN <= x < 2.0**63:
        raise RuntimeError(f"Cannot convert float {x:f} to integer")
    return int(x)


def _num(x: Number) -> Number:
    """The result of a ``Scalar`` overload: an int stays int (wrapped), anything else float."""
    return wrap_int(x) if isinstance(x, int) else float(x)


# ---------------------------------------------------------------------------------------
# Binary arithmetic: one function, registered for every overload PyTorch has.

_PAIRS = {"int": ("int", "int"), "float": ("float", "float"), "int_float": ("int", "float"),
          "float_int": ("float", "int")}  # fmt: skip


def _ieee_div(a: Number, b: Number) -> float:
    a, b = float(a), float(b)  # C++ converts each operand to double first
    if b == 0:
        a = float(a)
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, float(b))
    return a / b


def _floordiv(a: Number, b: Number) -> Number:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("division by 0")
        return wrap_int(a // b)
    q = _ieee_div(a, b)
    return _float_floor(q) if math.isfinite(q) else q


def _float_floor(q: float) -> float:
    r = float(math.floor(q))
    return math.copysign(r, q) if r == 0 else r


def _c_mod(a: int, b: int) -> int:
    """C's ``%`` on int64: the sign follows the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _c_fmod(a: float, b: float) -> float:
    if b == 0 or not math.isfinite(a) or math.isnan(b):
        return math.nan
    return a if math.isinf(b) else math.fmod(a, b)


def _remainder(a: Number, b: Number) -> Number:
    """``(b + a % b) % b`` in C arithmetic, as TorchScript computes it (int64 overflow too)."""
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        return _c_mod(wrap_int(b + _c_mod(a, b)), b)
    return _c_fmod(b + _c_fmod(a, b), b)


def _pow(a: Number, b: Number) -> float:
    if a == 0 and b < 0:
        raise ZeroDivisionError("0.0 cannot be raised to a negative power")
    try:
        return math.pow(a, b)
    except OverflowError:
        even = float(b) % 2.0 == 0.0  # parity of the exponent as a double, as C's pow sees it
        return math.inf if a > 0 or even else -math.inf
    except ValueError:
        return math.nan


def _pow_int(a: int, b: int) -> int:
    if b < 0:
        if a == 0:
            raise ZeroDivisionError("Integers to negative integer powers are not allowed.")
        return 1 if a == 1 else ((1 if b % 2 == 0 else -1) if a == -1 else 0)
    return wrap_int(pow(a, b, 2**64)) if a not in (0, 1) else a


_FLOAT_SAFE = (operator.add, operator.sub, operator.mul)
_BINARY: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
    # name: (function, what the int/int overload returns)
    "add": (operator.add, "int"),
    "sub": (operator.sub, "int"),
    "mul": (operator.mul, "int"),
    "floordiv": (_floordiv, "int"),
    "remainder": (_remainder, "int"),
}


def _typed(fn: Callable[[Any, Any], Any], result: str) -> Callable[[Any, Any], Any]:
    if fn in _FLOAT_SAFE and result == "float":
        return fn  # float op float (or int): already a float, and these are C functions (hot loops)
    if result == "int":

        def int_result(a: int, b: int) -> int:
            r = fn(a, b)
            return r if _I64_MIN <= r <= _I64_MAX else wrap_int(r)

        return int_result
    if result == "float":
        return lambda a, b: float(fn(a, b))
    return lambda a, b: _num(fn(a, b))


def _register_binary(name: str, fn: Callable[[Any, Any], Any], int_result: str) -> None:
    for overload, (ta, tb) in _PAIRS.items():
        result = int_result if overload == "int" else "float"
        register_op(f"aten::{name}.{overload}({ta} a, {tb} b) -> {result}", _typed(fn, result))
    register_op(f"aten::{name}(Scalar a, Scalar b) -> Scalar", _typed(fn, "Scalar"))


for _name, (_fn, _int_result) in _BINARY.items():
    _register_binary(_name, _fn, _int_result)

register_op("aten::div.int(int a, int b) -> float", lambda a, b: _ieee_div(a, b))
register_op("aten::div.float(float a, float b) -> float", lambda a, b: _ieee_div(a, b))
register_op("aten::div(Scalar a, Scalar b) -> float", lambda a, b: _ieee_div(a, b))
register_op("aten::pow.int(int a, int b) -> float", _pow)
register_op("aten::pow.float(float a, float b) -> float", _pow)
register_op("aten::pow.int_float(int a, float b) -> float", _pow)
register_op("aten::pow.float_int(float a, int b) -> float", _pow)
register_op("aten::pow.Scalar_Scalar(Scalar a, Scalar b) -> float", _pow)
register_op("aten::pow.int_to_int(int a, int b) -> int", _pow_int)
register_op("aten::__round_to_zero_floordiv.int(int a, int b) -> int",
            lambda a, b: wrap_int(int(a / b)) if b else _floordiv(a, b))  # fmt: skip


def _divmod(a: Number, b: Number) -> tuple[Number, Number]:
    if isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("integer division or modulo by zero")
        return divmod(a, b)
    if b == 0:
        raise ZeroDivisionError("float divmod()")
    if isinstance(a, float) and isinstance(b, float):
        rem = _c_fmod(a, b)
        if rem and (a < 0) != (b < 0):
            rem += b
        return (a - rem) / b, rem
    return _divmod_mixed(a, b)


def _divmod_mixed(a: Number, b: Number) -> tuple[float, float]:
    """PyTorch's divmod.int_float / float_int declare C++ ``int`` and ``float`` operands:
    an int32 (wrapped) and a float32, a single-precision quotient floored through int64
    (so an infinite quotient raises), and a remainder in double precision."""
    fa, fb = _narrow(a), _narrow(b)
    if fb == 0:
        raise ZeroDivisionError("float divmod()")
    with np.errstate(all="ignore"):
        q = float(np.float32(fa) / np.float32(fb))
    quot = float(to_int(math.floor(q)) if math.isfinite(q) else to_int(q))
    return quot, float(fa) - quot * float(fb)


def _narrow(v: Number) -> float | int:
    if isinstance(v, int):
        return int(np.int64(wrap_int(v)).astype(np.int32))
    with np.errstate(over="ignore"):
        return float(np.float32(v))


register_op("aten::divmod.int(int x, int y) -> (int, int)", _divmod)
for _overload, (_ta, _tb) in list(_PAIRS.items())[1:]:
    register_op(f"aten::divmod.{_overload}({_ta} x, {_tb} y) -> (float, float)", _divmod)


# Bitwise and logical operators on ints and bools.
for _name, _op in (("__and__", lambda a, b: a & b), ("__or__", lambda a, b: a | b), ("__xor__", lambda a, b: a ^ b)):
    register_op(f"aten::{_name}.bool(bool a, bool b) -> bool", _op)
    register_op(f"aten::{_name}.int(int a, int b) -> int", _op)
register_op("aten::__lshift__.int(int a, int b) -> int", lambda a, b: wrap_int(a << (b & 63)))
register_op("aten::__rshift__.int(int a, int b) -> int", lambda a, b: a >> min(b & 63, 63))


# ---------------------------------------------------------------------------------------
# Comparisons

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}  # fmt: skip
for _name, _cmp in _COMPARE.items():
    for _overload, (_ta, _tb) in _PAIRS.items():
        register_op(f"aten::{_name}.{_overload}({_ta} a, {_tb} b) -> bool", _cmp)
    register_op(f"aten::{_name}(Scalar a, Scalar b) -> bool", _cmp)
for _name in ("eq", "ne"):
    register_op(f"aten::{_name}.bool(bool a, bool b) -> bool", _COMPARE[_name])


# ---------------------------------------------------------------------------------------
# Unary math: C semantics (nan / inf instead of Python's ValueError)


def _c_math(fn: Callable[[float], float], np_fn: Callable[[Any], Any]) -> Callable[[Number], float]:
    def apply(x: Number) -> float:
        try:
            return float(fn(x))
        except (ValueError, OverflowError):
            with np.errstate(all="ignore"):
                return float(np_fn(np.float64(x)))

    return apply


def _libm(name: str) -> Callable[[float], float] | None:
    """A C math function, for the ones where CPython has its own implementation."""
    path = ctypes.util.find_library("m")
    if path is None:
        return None
    fn = getattr(ctypes.CDLL(path), name, None)
    if fn is None:
        return None
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_double]
    return lambda x: fn(float(x))


def _lgamma_py(x: float) -> float:
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


def _gamma_py(x: float) -> float:
    try:
        return math.gamma(x)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.copysign(math.inf, x) if x == 0 else math.nan


_lgamma = _libm("lgamma") or _lgamma_py
_gamma = _libm("tgamma") or _gamma_py


_UNARY_FLOAT: dict[str, Callable[[Number], float]] = {
    "exp": _c_math(math.exp, np.exp),
    "log": _c_math(math.log, np.log),
    "log10": _c_math(math.log10, np.log10),
    "log1p": _c_math(math.log1p, np.log1p),
    "expm1": _c_math(math.expm1, np.expm1),
    "sqrt": _c_math(math.sqrt, np.sqrt),
    "sin": _c_math(math.sin, np.sin),
    "cos": _c_math(math.cos, np.cos),
    "tan": _c_math(math.tan, np.tan),
    "tanh": _c_math(math.tanh, np.tanh),
    "asin": _c_math(math.asin, np.arcsin),
    "acos": _c_math(math.acos, np.arccos),
    "atan": _c_math(math.atan, np.arctan),
    "sinh": _c_math(math.sinh, np.sinh),
    "cosh": _c_math(math.cosh, np.cosh),
    "asinh": _c_math(math.asinh, np.arcsinh),
    "acosh": _c_math(math.acosh, np.arccosh),
    "atanh": _c_math(math.atanh, np.arctanh),
    "erf": _c_math(math.erf, np.vectorize(math.erf)),
    "erfc": _c_math(math.erfc, np.vectorize(math.erfc)),
    "lgamma": _lgamma,
    "gamma": _gamma,
    "radians": _c_math(math.radians, np.radians),
    "degrees": _c_math(math.degrees, np.degrees),
}
for _name, _fn in _UNARY_FLOAT.items():
    register_op(f"aten::{_name}.int(int a) -> float", _fn)
    register_op(f"aten::{_name}.float(float a) -> float", _fn)
    register_op(f"aten::{_name}.Scalar(Scalar a) -> Scalar", _fn)


def _int_via_double(a: int) -> int:
    """``(int64_t) floor((double) a)``: exact below 2**53, rounded above, as PyTorch does."""
    f = float(a)
    return int(f) if f < 2.0**63 else -(2**63)


def _round(x: Number) -> float:
    return float(np.rint(np.float64(x)))  # half to even, inf and nan kept


register_op("aten::round.int(int a) -> float", _round)
register_op("aten::round.float(float a) -> float", _round)
register_op("aten::round.Scalar(Scalar a) -> Scalar", _round)
register_op("aten::floor.int(int a) -> int", lambda a: _int_via_double(a))
register_op("aten::floor.float(float a) -> int", lambda a: to_int(math.floor(a)) if math.isfinite(a) else to_int(a))
register_op("aten::floor.Scalar(Scalar a) -> Scalar", lambda a: a if isinstance(a, int) else to_int(a // 1))
register_op("aten::ceil.int(int a) -> int", lambda a: a)  # exact, unlike floor.int
register_op("aten::ceil.float(float a) -> int", lambda a: to_int(math.ceil(a)) if math.isfinite(a) else to_int(a))
register_op("aten::ceil.Scalar(Scalar a) -> Scalar", lambda a: a if isinstance(a, int) else to_int(-(-a // 1)))
register_op("aten::neg.int(int a) -> int", lambda a: wrap_int(-a))
register_op("aten::neg.float(float a) -> float", lambda a: -a)
register_op("aten::neg.Scalar(Scalar a) -> Scalar", lambda a: _num(-a))
register_op("prim::abs.int(int a) -> int", lambda a: wrap_int(abs(a)))
register_op("prim::abs.float(float a) -> float", lambda a: abs(a))
register_op("prim::abs.Scalar(Scalar a) -> Scalar", lambda a: _num(abs(a)))
register_op("aten::isnan.float(float a) -> bool", math.isnan)
register_op("aten::isinf.float(float a) -> bool", math.isinf)
register_op("aten::isfinite.float(float a) -> bool", math.isfinite)
register_op("aten::gcd.int(int a, int b) -> int", lambda a, b: wrap_int(math.gcd(a, b)))  # gcd(INT_MIN, 0) wraps
register_op("aten::factorial.int(int a) -> int", lambda a: wrap_int(math.factorial(a)))
register_op("aten::modf(float a) -> (float, float)", math.modf)
register_op("aten::frexp(float a) -> (float, int)", math.frexp)


def _ldexp(x: float, i: int) -> float:
    try:
        return math.ldexp(x, i)
    except OverflowError:
        return math.copysign(math.inf, x)


register_op("aten::ldexp(float x, int i) -> float", _ldexp)


def _log_base(a: Number, b: Number) -> float:
    return _ieee_div(_UNARY_FLOAT["log"](a), _UNARY_FLOAT["log"](b))


def _fmod(a: Number, b: Number) -> float:
    return _c_fmod(float(a), float(b))


def _math_remainder(a: Number, b: Number) -> float:
    return math.nan if b == 0 or not math.isfinite(a) else math.remainder(a, b)


_BINARY_FLOAT = {"atan2": math.atan2, "fmod": _fmod, "copysign": math.copysign,
                 "mathremainder": _math_remainder}  # fmt: skip
for _name, _fn in _BINARY_FLOAT.items():
    for _overload, (_ta, _tb) in _PAIRS.items():
        register_op(f"aten::{_name}.{_overload}({_ta} a, {_tb} b) -> float", _typed(_fn, "float"))
register_op("aten::atan2.Scalar_Scalar(Scalar a, Scalar b) -> float", _typed(math.atan2, "float"))
register_op("aten::fmod(Scalar a, Scalar b) -> float", _typed(_fmod, "float"))
register_op("aten::copysign(Scalar a, Scalar b) -> float", _typed(math.copysign, "float"))
register_op("aten::mathremainder(Scalar a, Scalar b) -> float", _typed(_math_remainder, "float"))
for _overload, (_ta, _tb) in _PAIRS.items():
    register_op(f"aten::log.{_overload}_{_overload}({_ta} a, {_tb} b) -> float" if _ta == _tb
                else f"aten::log.{_overload}({_ta} a, {_tb} b) -> float", _log_base)  # fmt: skip
register_op("aten::log.Scalar_Scalar(Scalar a, Scalar b) -> float", _log_base)


# ---------------------------------------------------------------------------------------
# min / max of two scalars and of lists (TorchScript emits prim::min / prim::max)


def _pick(better: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    return lambda a, b: a if better(a, b) else b


_MIN2 = _pick(lambda a, b: a < b)  # ``a < b ? a : b``: min(nan, 0.0) is 0.0, min(0.0, nan) nan
_MAX2 = _pick(lambda a, b: a > b)


def _list_extreme(name: str, better: Callable[[Any, Any], Any]) -> Callable[[list[Any]], Any]:
    def extreme(values: list[Any]) -> Any:
        if not values:
            raise ValueError(f"{name}() arg is an empty sequence")
        best = values[0]
        for v in values[1:]:
            best = better(best, v)
        return best

    return extreme


def _lexicographic(pick_first: Callable[[Any, Any], bool]) -> Callable[[list[Any], list[Any]], list[Any]]:
    def choose(a: list[Any], b: list[Any]) -> list[Any]:
        for x, y in zip(a, b):
            if x != y:
                return a if pick_first(x, y) else b
        return a if pick_first(len(a), len(b)) else b

    return choose


for _name, _two, _better in (("min", _MIN2, lambda x, y: x < y), ("max", _MAX2, lambda x, y: x > y)):
    register_op(f"prim::{_name}.int(int a, int b) -> int", _two)
    register_op(f"prim::{_name}.float(float a, float b) -> float", lambda a, b, f=_two: float(f(a, b)))
    register_op(f"prim::{_name}.int_float(int a, float b) -> float", lambda a, b, f=_two: float(f(a, b)))
    register_op(f"prim::{_name}.float_int(float a, int b) -> float", lambda a, b, f=_two: float(f(a, b)))
    register_op(f"prim::{_name}(Scalar a, Scalar b) -> Scalar", _two)
    for _elem in ("int", "float", "bool"):
        register_op(f"prim::{_name}.{_elem}_list({_elem}[] l, {_elem}[] r) -> {_elem}[]", _lexicographic(_better))
        register_op(f"prim::{_name}.self_{_elem}({_elem}[] self) -> {_elem}", _list_extreme(_name, _two))


# ---------------------------------------------------------------------------------------
# sum / any / all of lists, and the helpers for-in-range loops are compiled to

register_op("aten::sum.int(int[] self) -> int", lambda xs: wrap_int(sum(xs)))
register_op("aten::sum.float(float[] self) -> float", lambda xs: float(sum(xs)))
register_op("aten::sum.bool(bool[] self) -> int", lambda xs: sum(1 for x in xs if x))
for _elem in ("str", "int", "float", "bool"):
    register_op(f"aten::any.{_elem}({_elem}[] self) -> bool", lambda xs: any(map(bool, xs)))
    if _elem != "str":
        register_op(f"aten::all.{_elem}({_elem}[] self) -> bool", lambda xs: all(map(bool, xs)))


def range_length(lo: int, hi: int, step: int) -> int:
    """How many values ``range(lo, hi, step)`` yields (``aten::__range_length``)."""
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    if step > 0 and lo < hi:
        return 1 + (hi - 1 - lo) // step
    if step < 0 and lo > hi:
        return 1 + (lo - 1 - hi) // (-step)
    return 0


register_op("aten::__range_length(int lo, int hi, int step) -> int", range_length)
register_op("aten::__derive_index(int index, int start, int step) -> int",
            lambda index, start, step: wrap_int(start + index * step))  # fmt: skip
register_op("prim::rangelist(int n) -> int[]", lambda n: list(range(n)))
