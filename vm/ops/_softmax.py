"""The softmax family's arithmetic, shared by ``softmax``/``log_softmax`` and attention.

Each is PyTorch's numerically safe form: subtract the maximum along the axis, exponentiate,
sum, and scale by the reciprocal of the sum, as PyTorch's ``_vec_softmax_lastdim`` does
(on random rows that gives torch's bits half the time, dividing 40%), or subtract the log
of the sum.  What makes it fast on numpy:

- the work runs in the result buffer (``out``, which may be the input itself when the
  caller owns it): one subtract, one exp and one scale in place, no temporaries the size of
  the input except ``log_softmax``'s exponentials;
- the rows are not blocked for the cache: on rows of a few hundred numbers each pass costs
  numpy's per-row loop set-up more than memory traffic (measured: blocking gained nothing);
- sums along a contiguous last axis are a matrix-vector product with a vector of ones (one
  BLAS call, ~8x faster than ``ndarray.sum`` on rows of a few hundred numbers).  A NaN or
  inf still propagates through the product as through a sum; the rounding is float32's in
  another order, as torch's vectorized sum has its own.

A NaN in a slice makes that slice NaN, a ``+inf`` makes it NaN (``inf - inf``), as in
PyTorch; ``safe_softmax`` (attention's) gives zeros for a slice that is all ``-inf``.
"""

from __future__ import annotations

import numpy as np

from vm.ops import compiled

Array = np.ndarray
_BLAS = (np.dtype(np.float32), np.dtype(np.float64))
_BLAS_FROM = 4096  # elements; below, ndarray.sum's lower call overhead wins


def axis_sums(a: Array, axis: int) -> Array:
    """``a.sum(axis, keepdims=True)``, through BLAS when ``axis`` is ``a``'s contiguous last one."""
    n = a.shape[axis]
    if a.size >= _BLAS_FROM and axis in (-1, a.ndim - 1) and a.dtype in _BLAS and a.flags.c_contiguous and n:
        sums = a.reshape(-1, n) @ np.ones(n, a.dtype)
        return sums.reshape(a.shape[:-1] + (1,))
    return a.sum(axis=axis, keepdims=True)


def _row_peaks(x: Array, axis: int) -> Array:
    """The maximum along ``axis`` for softmax's shift, by ``fmax`` (which skips NaN):
    1.2-1.7x faster than ``max`` on short rows, and the same result, since a NaN in a row
    makes its sum, so the whole row, NaN either way.  (``safe_softmax`` keeps ``max``: it
    tells an all ``-inf`` row by its peak, and ``[nan, -inf]`` is not one.)"""
    return np.fmax.reduce(x, axis=axis, keepdims=True)


@np.errstate(all="ignore")
def softmax(x: Array, axis: int, out: Array | None = None) -> Array:
    """``exp(x - max) * (1 / sum(exp(x - max)))`` along ``axis``, written into ``out``
    (fresh when None); float32 along the last axis: one compiled pass when the tier is on."""
    if compiled.ENABLED and x.dtype == np.float32:
        dst = np.empty_like(x) if out is None else out
        if (fam := compiled.ready("softmax")) is not None and fam.apply("softmax", x, axis, dst):
            return dst
    peak = _row_peaks(x, axis)
    out = np.subtract(x, peak) if out is None else np.subtract(x, peak, out=out)
    np.exp(out, out=out)
    scale = axis_sums(out, axis)
    out *= np.reciprocal(scale, out=scale)
    return out


@np.errstate(all="ignore")
def log_softmax(x: Array, axis: int, out: Array | None = None) -> Array:
    """``(x - max) - log(sum(exp(x - max)))`` along ``axis``, written into ``out`` (compiled as softmax)."""
    if compiled.ENABLED and x.dtype == np.float32:
        dst = np.empty_like(x) if out is None else out
        if (fam := compiled.ready("softmax")) is not None and fam.apply("log_softmax", x, axis, dst):
            return dst
    peak = _row_peaks(x, axis)
    out = np.subtract(x, peak) if out is None else np.subtract(x, peak, out=out)
    total = axis_sums(np.exp(out), axis)
    np.log(total, out=total)
    out -= total
    return out


@np.errstate(all="ignore")
def safe_softmax(x: Array, axis: int = -1, out: Array | None = None) -> Array:
    """Softmax along ``axis``; a slice that is all ``-inf`` becomes zeros (attention's rule)."""
    out = np.empty_like(x) if out is None else out
    if x.dtype == np.float32 and (fam := compiled.ready("softmax")) is not None and fam.apply("safe_softmax", x, axis, out):
        return out
    peak = np.max(x, axis=axis, keepdims=True)
    dead = np.isneginf(peak)
    any_dead = bool(dead.any())
    if any_dead:  # exp(-inf - 0) = 0 on those rows, and their sum is made 1 below
        peak[dead] = 0
    np.subtract(x, peak, out=out)
    np.exp(out, out=out)
    scale = axis_sums(out, axis)
    if any_dead:
        scale[dead] = 1
    np.reciprocal(scale, out=scale)
    out *= scale
    return out
