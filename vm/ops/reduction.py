"""Reduction kernels: sum/mean/prod, max/min, arg-reductions, any/all, norms, std/var,
cumulative ops and ``diff``, softmax family, sort and topk.

Every reduction names its dims the PyTorch way (an ``int[1]?`` that may be None or empty
for "all dims", negative dims wrapping), which ``_axes`` turns into a numpy ``axis``
tuple; ``keepdim`` is numpy's ``keepdims``.  The dtype rules are PyTorch's, not numpy's:

- ``sum``/``prod``/``cumsum`` of bool or any integer type give int64 unless a ``dtype``
  is passed, in which case the input is cast to it first;
- ``mean``, ``std``, ``var``, the norms and the softmax family need a floating input
  (PyTorch raises otherwise; ``logsumexp`` alone lifts integers to float32);
- ``max.dim``/``min.dim``/``argmax`` return int64 indices of the *first* extreme element,
  NaN counting as the extreme (numpy's argmax/argmin agree);
- whole-tensor results are 0-dim arrays, never numpy scalars.

``sort`` is stable (PyTorch's CPU sort is too); descending order keeps equal elements
in their original order, which needs a reversed ascending sort rather than a negation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops import _softmax as softmax_family
from vm.ops._common import copy_out, fits, into, norm_dim, norm_dims
from vm.ops._dtypes import (
    DEFAULT_FLOAT,
    FLOAT_CAT,
    INT64,
    INT_CAT,
    category,
    dtype_name,
    result_type,
    to_code,
    to_dtype,
    wrap,
)
from vm.ops.registry import kernel

Array = np.ndarray
Dims = Sequence[int] | None


def _axes(x: Array, dims: Dims) -> tuple[int, ...] | None:
    """numpy's ``axis`` for PyTorch's dims: None (all) for None/[], else wrapped dims."""
    if not dims or not x.ndim:
        return None if x.ndim else ()
    if len(dims) == 1 and 0 <= dims[0] < x.ndim:
        return (dims[0],)
    return norm_dims(dims, x.ndim)


def _int_to_long(x: Array, dtype: int | None) -> Array:
    if dtype is not None:
        return x.astype(to_dtype(dtype), copy=False)
    return x.astype(INT64) if category(x.dtype) <= INT_CAT and x.dtype != INT64 else x


def _need_float(x: Array, op: str, dtype: int | None = None) -> Array:
    if dtype is not None:
        return x.astype(to_dtype(dtype), copy=False)
    if category(x.dtype) < FLOAT_CAT:
        raise RuntimeError(
            f"{op}(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {dtype_name(to_code(x.dtype))}"
        )
    return x


def _reg(schema: str, fn: Any) -> Any:
    reg = kernel(schema)(fn)
    reg.out(copy_out(fn))
    return reg


# ---------------------------------------------------------------------------------------
# sum, mean, prod


def _sum(x: Array, dims: Dims, keepdim: bool, dtype: int | None) -> Array:
    x = _int_to_long(x, dtype)
    return wrap(x.sum(axis=_axes(x, dims), keepdims=keepdim))


_reg("aten::sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", lambda self, dtype: _sum(self, None, False, dtype))
_reg("aten::sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", _sum)


@np.errstate(all="ignore")
def _mean(x: Array, dims: Dims, keepdim: bool, dtype: int | None) -> Array:
    x = _need_float(x, "mean", dtype)
    return wrap(x.mean(axis=_axes(x, dims), keepdims=keepdim, dtype=x.dtype))


_reg("aten::mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", lambda self, dtype: _mean(self, None, False, dtype))
_reg("aten::mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", _mean)


def _prod(x: Array, dims: Dims, keepdim: bool, dtype: int | None) -> Array:
    x = _int_to_long(x, dtype)
    return wrap(np.prod(x, axis=_axes(x, dims), keepdims=keepdim, dtype=x.dtype))


_reg("aten::prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", lambda self, dtype: _prod(self, None, False, dtype))
_reg("aten::prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
     lambda self, dim, keepdim, dtype: _prod(self, [dim], keepdim, dtype))


# ---------------------------------------------------------------------------------------
# max / min / argmax / argmin / amax / amin


def _nonempty(x: Array, op: str) -> None:
    if x.size == 0:
        raise RuntimeError(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
            "dim with the 'dim' argument."
        )


def _extreme(fn: Any, arg: Any, op: str) -> tuple[Any, Any]:
    def whole(self: Array) -> Array:
        _nonempty(self, op)
        return wrap(fn(self))

    def by_dim(self: Array, dim: int, keepdim: bool) -> tuple[Array, Array]:
        if self.ndim == 0:
            norm_dim(dim, 0)
            return self.copy(), np.zeros((), INT64)
        d = norm_dim(dim, self.ndim)
        if self.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
        idx = arg(self, axis=d, keepdims=True)
        vals = np.take_along_axis(self, idx, axis=d)
        if not keepdim:
            idx, vals = np.squeeze(idx, d), np.squeeze(vals, d)
        return wrap(vals), wrap(idx.astype(INT64, copy=False))

    return whole, by_dim


for _name, _fn, _arg in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
    _whole, _by_dim = _extreme(_fn, _arg, _name)
    _reg(f"aten::{_name}(Tensor self) -> Tensor", _whole)
    kernel(f"aten::{_name}.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")(_by_dim)

    def _amax(self: Array, dim: Sequence[int], keepdim: bool, _f: Any = _fn, _n: str = _name) -> Array:
        axes = _axes(self, dim)
        if self.size == 0 and (not axes or any(self.shape[a] == 0 for a in axes)):
            raise IndexError(f"a{_n}(): Expected reduction dim to have non-zero size.")
        return wrap(_f(self, axis=axes, keepdims=keepdim))

    _reg(f"aten::a{_name}(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", _amax)

    def _argext(self: Array, dim: int | None, keepdim: bool, _a: Any = _arg, _n: str = _name) -> Array:
        if dim is None:
            _nonempty(self, f"arg{_n}")
            r = np.asarray(_a(self.reshape(-1)), dtype=INT64)
            return r.reshape((1,) * self.ndim) if keepdim else r
        if self.ndim == 0:
            norm_dim(dim, 0)
            return np.zeros((), INT64)
        d = norm_dim(dim, self.ndim)
        return wrap(_a(self, axis=d, keepdims=keepdim).astype(INT64, copy=False))

    _reg(f"aten::arg{_name}(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", _argext)


# ---------------------------------------------------------------------------------------
# any / all


def _logical_reduce(fn: Any) -> Any:
    def red(self: Array, dims: Dims, keepdim: bool) -> Array:
        axes = () if dims is not None and not dims else _axes(self, dims)  # [] reduces nothing here
        r = wrap(fn(self, axis=axes, keepdims=keepdim)) if axes or dims is None else self.astype(bool)
        return r.astype(self.dtype) if self.dtype == np.uint8 else r

    return red


for _name, _fn in (("any", np.any), ("all", np.all)):
    _red = _logical_reduce(_fn)
    _reg(f"aten::{_name}(Tensor self) -> Tensor", lambda self, _r=_red: _r(self, None, False))
    _reg(f"aten::{_name}.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
         lambda self, dim, keepdim, _r=_red: _r(self, [dim], keepdim))
    _reg(f"aten::{_name}.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", _red)


# ---------------------------------------------------------------------------------------
# cumulative


def _cum(fn: Any) -> Any:
    def run(self: Array, dim: int, dtype: int | None) -> Array:
        x = _int_to_long(self, dtype)
        if x.ndim == 0:
            norm_dim(dim, 0)
            return x.copy()
        return fn(x, axis=norm_dim(dim, x.ndim), dtype=x.dtype)

    return run


_reg("aten::cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", _cum(np.cumsum))
_reg("aten::cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", _cum(np.cumprod))


@kernel("aten::diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor")
def diff(self: Array, n: int, dim: int, prepend: Array | None, append: Array | None) -> Array:
    """The ``n``-th forward difference along ``dim`` (the inverse of ``cumsum``).

    ``prepend``/``append`` are concatenated first (with ``cat``'s type promotion); bool
    tensors take ``x[1:] != x[:-1]`` (PyTorch's logical_xor); an ``n`` larger than the
    length gives an empty dim, as ``n`` equal to it does; ``n=0`` copies ``self`` alone.
    """
    if self.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = norm_dim(dim, self.ndim)
    parts = [x for x in (prepend, self, append) if x is not None]
    for extra in parts:
        if extra.ndim != self.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if n == 0:  # PyTorch checks prepend/append, then leaves them out
        return self.copy()
    x = self if len(parts) == 1 else _cat(parts, d)
    return np.diff(x, n=min(n, x.shape[d]), axis=d)


def _cat(parts: list[Array], dim: int) -> Array:
    for x in parts:
        if any(a != b for i, (a, b) in enumerate(zip(x.shape, parts[1].shape)) if i != dim):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {dim}. "
                f"Expected size {parts[1].shape} but got {x.shape}"
            )
    return np.concatenate(parts, axis=dim, dtype=result_type(*parts))


diff.out(copy_out(diff))


# ---------------------------------------------------------------------------------------
# softmax family


def _softmax_input(x: Array, dim: int, dtype: int | None, op: str) -> tuple[Array, int]:
    if dtype is not None:
        x = x.astype(to_dtype(dtype), copy=False)
    elif category(x.dtype) < FLOAT_CAT:
        raise RuntimeError(f'"{op}_lastdim_kernel_impl" not implemented for \'{dtype_name(to_code(x.dtype))}\'')
    return x, norm_dim(dim, x.ndim)


def _softmax(self: Array, dim: int, dtype: int | None, out: Array | None = None) -> Array:
    x, d = _softmax_input(self, dim, dtype, "softmax")
    if x.ndim == 0 or x.size == 0:
        result = _softmax(x.reshape(1), 0, None).reshape(()) if x.ndim == 0 else x.copy()
        return result if out is None else into(out, result)
    return softmax_family.softmax(x, d, out if fits(out, x) else None)


def _log_softmax(self: Array, dim: int, dtype: int | None, out: Array | None = None) -> Array:
    x, d = _softmax_input(self, dim, dtype, "log_softmax")
    if x.ndim == 0 or x.size == 0:
        result = _log_softmax(x.reshape(1), 0, None).reshape(()) if x.ndim == 0 else x.copy()
        return result if out is None else into(out, result)
    return softmax_family.log_softmax(x, d, out if fits(out, x) else None)


def _softmax_kernel(schema: str, fn: Any, *fixed: Any) -> None:
    """Register ``fn(self, dim, dtype)`` and an out variant that computes in the buffer itself
    (when it has the result's shape and dtype, else the result is fresh, as ``copy_out``)."""

    def call(self: Array, dim: int, *rest: Any) -> Array:
        return fn(self, dim, *(fixed or rest))

    def call_out(buf: Array, self: Array, dim: int, *rest: Any) -> Array:
        return fn(self, dim, *(fixed or rest), buf)

    call.__name__, call_out.__name__ = fn.__name__, f"{fn.__name__}_out"
    kernel(schema)(call).out(call_out)


_softmax_kernel("aten::softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", _softmax)
_softmax_kernel("aten::log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", _log_softmax)
_softmax_kernel("aten::_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", _softmax, None)
_softmax_kernel("aten::_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", _log_softmax, None)


@np.errstate(all="ignore")
def _logsumexp(self: Array, dim: Sequence[int], keepdim: bool) -> Array:
    x = self if category(self.dtype) >= FLOAT_CAT else self.astype(DEFAULT_FLOAT)
    axes = _axes(x, dim)
    if x.size == 0:
        return wrap(np.log(np.sum(np.exp(x), axis=axes, keepdims=keepdim)))
    m = np.max(x, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, x.dtype.type(0))
    r = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
    return wrap(r if keepdim else np.squeeze(r, axes))


_reg("aten::logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", _logsumexp)


# ---------------------------------------------------------------------------------------
# norms, std, var


def vector_norm(self: Array, ord: Any, dims: Dims, keepdim: bool, dtype: int | None) -> Array:
    x = self.astype(to_dtype(dtype), copy=False) if dtype is not None else self
    if category(x.dtype) < FLOAT_CAT:
        raise RuntimeError(
            f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {dtype_name(to_code(x.dtype))}"
        )
    axes = _axes(x, dims)
    a = np.abs(x)
    p = float(ord)
    if p == 2.0:
        r = np.sqrt(np.sum(a * a, axis=axes, keepdims=keepdim))
    elif p == 1.0:
        r = np.sum(a, axis=axes, keepdims=keepdim)
    elif p == float("inf"):
        r = np.max(a, axis=axes, keepdims=keepdim, initial=x.dtype.type(0))
    elif p == float("-inf"):
        r = np.min(a, axis=axes, keepdims=keepdim)
    elif p == 0.0:
        r = np.sum(a != 0, axis=axes, keepdims=keepdim).astype(x.dtype)
    else:
        with np.errstate(all="ignore"):
            r = np.sum(a ** x.dtype.type(p), axis=axes, keepdims=keepdim) ** x.dtype.type(1.0 / p)
    return wrap(np.asarray(r, dtype=x.dtype))


_reg("aten::linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
     "ScalarType? dtype=None) -> Tensor", vector_norm)
_reg("aten::norm.Scalar(Tensor self, Scalar p=2) -> Tensor", lambda self, p: vector_norm(self, p, None, False, None))
_reg("aten::norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
     lambda self, p, dim, keepdim: vector_norm(self, 2 if p is None else p, dim, keepdim, None))
_reg("aten::norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor",
     lambda self, p, dim, keepdim, dtype: vector_norm(self, 2 if p is None else p, dim, keepdim, dtype))
_reg("aten::norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor",
     lambda self, p, dtype: vector_norm(self, 2 if p is None else p, None, False, dtype))


@np.errstate(all="ignore")
def _variance(self: Array, dims: Dims, correction: Any, keepdim: bool) -> tuple[np.ndarray, np.dtype]:
    """The variance in float64 and the dtype of the result.  torch's CPU kernel runs
    Welford's recurrence in double for float32 and half inputs, so four 2e38s have a
    variance of 0 (a float32 mean would overflow to inf first) and the standard deviation
    of [2e38, 2e38, -2e38, -2e38] is 2.3e38 (its variance, 5.3e76, only becomes inf as a
    float32); a two-pass float64 variance rounds to the same float32."""
    x = _need_float(self, "var")
    axes = _axes(x, dims)
    n = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
    c = 1 if correction is None else correction
    wide = x.astype(np.float64) if x.dtype.itemsize < 8 else x
    mean = np.mean(wide, axis=axes, keepdims=True)
    dev = wide - mean
    ss = np.sum(dev * dev, axis=axes, keepdims=keepdim)
    return np.asarray(ss / wide.dtype.type(max(n - c, 0))), x.dtype


def _var(self: Array, dims: Dims, correction: Any, keepdim: bool) -> Array:
    var, dtype = _variance(self, dims, correction, keepdim)
    return wrap(var.astype(dtype))


def _std(self: Array, dims: Dims, correction: Any, keepdim: bool) -> Array:
    var, dtype = _variance(self, dims, correction, keepdim)
    with np.errstate(all="ignore"):
        return wrap(np.sqrt(var).astype(dtype))


for _name, _f in (("var", _var), ("std", _std)):
    _reg(f"aten::{_name}(Tensor self, bool unbiased=True) -> Tensor",
         lambda self, unbiased, _f=_f: _f(self, None, int(unbiased), False))
    _reg(f"aten::{_name}.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
         lambda self, dim, unbiased, keepdim, _f=_f: _f(self, dim, int(unbiased), keepdim))
    _reg(f"aten::{_name}.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) "
         "-> Tensor", _f)
    kernel(f"aten::{_name}_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
           "bool keepdim=False) -> (Tensor, Tensor)")(
        lambda self, dim, correction, keepdim, _f=_f: (
            _f(self, dim, correction, keepdim), _mean(self, dim, keepdim, None))
    )


# ---------------------------------------------------------------------------------------
# sort, topk


def _sort(self: Array, dim: int, descending: bool) -> tuple[Array, Array]:
    if self.ndim == 0:
        norm_dim(dim, 0)
        return self.copy(), np.zeros((), INT64)
    d = norm_dim(dim, self.ndim)
    if descending:
        n = self.shape[d]
        rev = np.flip(np.argsort(np.flip(self, d), axis=d, kind="stable"), d)
        idx = (n - 1) - rev
    else:
        idx = np.argsort(self, axis=d, kind="stable")
    return np.take_along_axis(self, idx, axis=d), idx.astype(INT64, copy=False)


kernel("aten::sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)")(_sort)
kernel("aten::sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)")(
    lambda self, stable, dim, descending: _sort(self, dim, descending)
)
_reg("aten::argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor",
     lambda self, dim, descending: _sort(self, dim, descending)[1])


@kernel("aten::topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values, Tensor indices)")
def topk(self: Array, k: int, dim: int, largest: bool, sorted: bool) -> tuple[Array, Array]:
    n = self.shape[norm_dim(dim, self.ndim)] if self.ndim else 1
    if k < 0 or k > n:
        raise RuntimeError("selected index k out of range")
    vals, idx = _sort(self, dim, largest)
    if self.ndim == 0:
        return vals, idx
    d = norm_dim(dim, self.ndim)
    sl = (slice(None),) * d + (slice(0, k),)
    return vals[sl].copy(), idx[sl].copy()

