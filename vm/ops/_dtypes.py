"""Dtypes for the kernels: PyTorch's ScalarType codes, type promotion, scalar wrapping.

Every kernel family shares these helpers so that irvm promotes types exactly as PyTorch
does, which numpy alone does not: ``np.result_type(int32, float32)`` is float64 where
``torch.promote_types`` says float32, and numpy lets a Python float raise nothing but a
0-dim float64 array raise everything.

PyTorch's rule (``c10/core/ScalarType.h``, ``ATen/native/TypeProperties.cpp``) sorts the
operands of an op into three groups: dimensioned tensors, 0-dim tensors and "wrapped
numbers" (Python scalars).  Each group is promoted on its own; the result is the
dimensioned group's dtype unless a lower group belongs to a higher *category* (bool <
integer < floating < complex), in which case the two are promoted.  A Python float counts
as the default dtype (float32), a Python int as int64, a bool as bool.  So::

    int32 tensor + 2.5             -> float32   (float scalar lifts int to the default float)
    int32 tensor + 0-dim float64   -> float64   (a 0-dim tensor lifts the category with its own dtype)
    float16 tensor + 0-dim float64 -> float16   (same category: the dimensioned tensor wins)
    bool tensor + 1                -> int64

Public API (used by every family):

- ``to_dtype(code)`` / ``to_code(dtype)``: ScalarType int code <-> numpy dtype;
- ``promote_types(a, b)``: ``torch.promote_types`` on numpy dtypes;
- ``result_type(*operands)``: ``torch.result_type`` over ndarrays and Python scalars;
  ``binary_result_type(a, b)`` is its fast two-operand form;
- ``float_type(dt)``: the dtype a floating op (div, sqrt, mean...) computes in;
- ``as_array(value, dtype)``: a scalar or an array as an ndarray of ``dtype`` (integers
  wrap around like PyTorch's casts instead of raising like numpy 2);
- ``wrap(r)``: a numpy scalar (what ufuncs return for 0-dim inputs) as a 0-dim array;
- ``is_floating`` / ``is_integral`` / ``is_bool`` / ``is_complex`` / ``category``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

BOOL = np.dtype(np.bool_)
UINT8 = np.dtype(np.uint8)
INT8 = np.dtype(np.int8)
INT16 = np.dtype(np.int16)
INT32 = np.dtype(np.int32)
INT64 = np.dtype(np.int64)
FLOAT16 = np.dtype(np.float16)
FLOAT32 = np.dtype(np.float32)
FLOAT64 = np.dtype(np.float64)
COMPLEX64 = np.dtype(np.complex64)
COMPLEX128 = np.dtype(np.complex128)

DEFAULT_FLOAT = FLOAT32
DEFAULT_COMPLEX = COMPLEX64

# PyTorch's ScalarType codes (c10/core/ScalarType.h); 15 (bfloat16) has no numpy dtype.
_CODE_TO_DTYPE: dict[int, np.dtype[Any]] = {
    0: UINT8, 1: INT8, 2: INT16, 3: INT32, 4: INT64, 5: FLOAT16, 6: FLOAT32, 7: FLOAT64,
    9: COMPLEX64, 10: COMPLEX128, 11: BOOL,
}
_DTYPE_TO_CODE: dict[np.dtype[Any], int] = {v: k for k, v in _CODE_TO_DTYPE.items()}

_NAMES = {
    0: "Byte", 1: "Char", 2: "Short", 3: "Int", 4: "Long", 5: "Half", 6: "Float", 7: "Double",
    9: "ComplexFloat", 10: "ComplexDouble", 11: "Bool", 15: "BFloat16",
}

# Categories, ordered as PyTorch orders them for promotion.
BOOL_CAT, INT_CAT, FLOAT_CAT, COMPLEX_CAT = 0, 1, 2, 3
_CATEGORY: dict[np.dtype[Any], int] = {
    BOOL: BOOL_CAT, UINT8: INT_CAT, INT8: INT_CAT, INT16: INT_CAT, INT32: INT_CAT, INT64: INT_CAT,
    FLOAT16: FLOAT_CAT, FLOAT32: FLOAT_CAT, FLOAT64: FLOAT_CAT,
    COMPLEX64: COMPLEX_CAT, COMPLEX128: COMPLEX_CAT,
}


def to_dtype(code: int | None, default: np.dtype[Any] | None = None) -> np.dtype[Any]:
    """The numpy dtype of ScalarType ``code`` (``None`` gives ``default``, else float32)."""
    if code is None:
        return default if default is not None else DEFAULT_FLOAT
    try:
        return _CODE_TO_DTYPE[code]
    except KeyError:
        name = _NAMES.get(code, str(code))
        raise TypeError(f"dtype {name} (ScalarType {code}) is not supported by irvm") from None


def to_code(dtype: np.dtype[Any]) -> int:
    """PyTorch's ScalarType code of a numpy dtype (float32 -> 6)."""
    try:
        return _DTYPE_TO_CODE[dtype]
    except KeyError:
        raise TypeError(f"numpy dtype {dtype} has no PyTorch ScalarType") from None


def dtype_name(code: int) -> str:
    """PyTorch's name of ScalarType ``code`` as error messages print it ("Float")."""
    return _NAMES.get(code, str(code))


def category(dtype: np.dtype[Any]) -> int:
    return _CATEGORY[dtype]


def is_floating(dtype: np.dtype[Any]) -> bool:
    return _CATEGORY.get(dtype) == FLOAT_CAT


def is_complex(dtype: np.dtype[Any]) -> bool:
    return _CATEGORY.get(dtype) == COMPLEX_CAT


def is_bool(dtype: np.dtype[Any]) -> bool:
    return dtype == BOOL


def is_integral(dtype: np.dtype[Any], include_bool: bool = False) -> bool:
    cat = _CATEGORY.get(dtype)
    return cat == INT_CAT or (include_bool and cat == BOOL_CAT)


# ---------------------------------------------------------------------------------------
# promote_types: a cached table, because numpy's lattice differs for int x float.

_PROMOTE: dict[tuple[np.dtype[Any], np.dtype[Any]], np.dtype[Any]] = {}


def _promote_uncached(a: np.dtype[Any], b: np.dtype[Any]) -> np.dtype[Any]:
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb and (ca >= FLOAT_CAT or cb >= FLOAT_CAT):
        hi, lo = (a, b) if ca > cb else (b, a)
        if _CATEGORY[hi] == COMPLEX_CAT and lo == FLOAT64:
            return COMPLEX128
        return hi  # int/bool with a float: the float type, whatever the int width
    return np.promote_types(a, b)  # same category, or bool with int: numpy agrees with torch


def promote_types(a: np.dtype[Any], b: np.dtype[Any]) -> np.dtype[Any]:
    """``torch.promote_types`` on numpy dtypes (int32 with float16 -> float16)."""
    if a is b or a == b:
        return a
    key = (a, b)
    r = _PROMOTE.get(key)
    if r is None:
        r = _PROMOTE[key] = _promote_uncached(a, b)
    return r


def scalar_dtype(value: Any) -> np.dtype[Any]:
    """The dtype a Python scalar takes as a wrapped number: bool, int64, float32, complex64."""
    t = type(value)
    if t is bool:
        return BOOL
    if t is int:
        return INT64
    if t is float:
        return DEFAULT_FLOAT
    if t is complex:
        return DEFAULT_COMPLEX
    if isinstance(value, np.ndarray):
        return value.dtype
    if isinstance(value, np.generic):  # a stray numpy scalar counts as a wrapped number
        return scalar_dtype(value.item())
    raise TypeError(f"expected a tensor or a number, got {type(value).__name__}")


def _combine(higher: np.dtype[Any] | None, lower: np.dtype[Any] | None) -> np.dtype[Any] | None:
    """PyTorch's ``combine_categories``: keep ``higher`` unless ``lower`` is of a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    ch, cl = _CATEGORY[higher], _CATEGORY[lower]
    if ch >= FLOAT_CAT and cl <= ch:
        return higher
    if ch == BOOL_CAT or cl > ch:
        return promote_types(higher, lower)
    return higher


def result_type(*operands: Any) -> np.dtype[Any]:
    """``torch.result_type`` over ndarrays (tensors) and Python scalars (wrapped numbers)."""
    dim = zero = wrapped = None
    for x in operands:
        if isinstance(x, np.ndarray):
            if x.ndim:
                dim = x.dtype if dim is None else promote_types(dim, x.dtype)
            else:
                zero = x.dtype if zero is None else promote_types(zero, x.dtype)
        elif x is not None:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else promote_types(wrapped, d)
    r = _combine(dim, _combine(zero, wrapped))
    if r is None:
        raise TypeError("result_type needs at least one operand")
    return r


_BINARY: dict[tuple[Any, ...], np.dtype[Any]] = {}


def _key(x: Any) -> tuple[Any, int]:
    if type(x) is np.ndarray:
        return x.dtype, (2 if x.ndim else 1)
    return type(x), 0


def binary_result_type(a: Any, b: Any) -> np.dtype[Any]:
    """``result_type(a, b)`` with a cache keyed on (dtype, group) pairs: the hot path."""
    if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype is b.dtype:
        return a.dtype
    key = _key(a) + _key(b)
    r = _BINARY.get(key)
    if r is None:
        r = _BINARY[key] = result_type(a, b)
    return r


def float_type(dtype: np.dtype[Any]) -> np.dtype[Any]:
    """The dtype a floating op computes in: ``dtype`` if floating/complex, else float32."""
    return dtype if _CATEGORY[dtype] >= FLOAT_CAT else DEFAULT_FLOAT


# ---------------------------------------------------------------------------------------
# Values


def wrap(r: Any) -> np.ndarray:
    """A ufunc result as an ndarray: numpy returns scalars for 0-dim inputs, we never do."""
    return r if type(r) is np.ndarray else np.asarray(r)


def as_array(value: Any, dtype: np.dtype[Any] | None = None) -> np.ndarray:
    """``value`` (ndarray or Python scalar) as an ndarray of ``dtype`` (its own dtype if None).

    Scalars become 0-dim arrays; a Python float with no dtype becomes float32 as a wrapped
    number would.  Integer casts wrap around (300 -> int8 44) as PyTorch's do.  An ndarray
    already of ``dtype`` is returned as is (no copy).
    """
    if type(value) is np.ndarray:
        if dtype is None or value.dtype is dtype or value.dtype == dtype:
            return value
        return value.astype(dtype)
    if dtype is None:
        dtype = scalar_dtype(value)
    if type(value) is int and _CATEGORY.get(dtype) == INT_CAT and dtype != INT64:
        return np.array(value, dtype=INT64).astype(dtype)  # wrap around, never raise
    return np.array(value, dtype=dtype)


def scalar_for(value: Any, dtype: np.dtype[Any]) -> Any:
    """A Python scalar as a numpy scalar of ``dtype``, for mixing into a ufunc call cheaply."""
    if type(value) is int and _CATEGORY.get(dtype) == INT_CAT and dtype != INT64:
        return np.array(value, dtype=INT64).astype(dtype)[()]
    return dtype.type(value)


def to_python(x: Any) -> Any:
    """A 0-dim array or numpy scalar as the Python int/float/bool (``Tensor.item()``)."""
    if isinstance(x, (np.ndarray, np.generic)):
        if x.size != 1:
            raise ValueError(f"a Tensor with {x.size} elements cannot be converted to Scalar")
        return x.item() if x.ndim == 0 or isinstance(x, np.generic) else x.reshape(()).item()
    return x
