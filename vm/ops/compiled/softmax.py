"""softmax and log_softmax along a contiguous last axis, one row at a time (float32).

Each row is read three times while it is in cache (its maximum; ``e = exp(x - max)``
written into the output and summed; the output scaled by ``1 / sum``), so memory sees one
read and one write; numpy's version makes five passes over the whole tensor.  ``exp`` is
``vm.ops.compiled.activation.exp32`` (vectorizable).  The maximum keeps NaN (a NaN in a
row makes the whole row NaN, and a row of NaN and -inf is not masked out); a row
that is all ``-inf`` gives NaN, as PyTorch's softmax does (zeros in ``safe_softmax``,
attention's).  log_softmax is
``(x - max) - log(sum)``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types

from vm.ops.compiled.activation import exp32

_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False,
         "fastmath": {"reassoc", "contract"}}
_NEG_INF = np.float32(-np.inf)
_ONE = np.float32(1)


def _ro(ndim: int) -> types.Array:
    """A C-contiguous float32 array the kernel only reads (a read-only one is accepted too)."""
    return types.Array(types.float32, ndim, "C", readonly=True)


def _rw(ndim: int) -> types.Array:
    return types.Array(types.float32, ndim, "C")


@njit(inline="always", **_OPTS)
def _peak(row):
    peak = _NEG_INF
    for v in row:
        peak = v if (v > peak or v != v) else peak  # NaN sticks: [nan, -inf] is not a masked row
    return peak


@njit(types.void(_ro(2), _rw(2), types.boolean), **_OPTS)
def _softmax(x, out, safe):
    for r in range(x.shape[0]):
        row, dst = x[r], out[r]
        peak = _peak(row)
        if safe and peak == _NEG_INF:  # attention's rule: a row masked everywhere gives zeros
            for i in range(row.shape[0]):
                dst[i] = 0
            continue
        total = np.float32(0)
        for i in range(row.shape[0]):
            e = exp32(row[i] - peak)
            dst[i] = e
            total += e
        scale = _ONE / total
        for i in range(row.shape[0]):
            dst[i] *= scale


@njit(types.void(_ro(2), _rw(2)), **_OPTS)
def log_softmax(x, out):
    for r in range(x.shape[0]):
        row, dst = x[r], out[r]
        peak = _peak(row)
        total = 0.0
        for i in range(row.shape[0]):
            total += exp32(row[i] - peak)
        shift = np.float32(math.log(total))
        for i in range(row.shape[0]):
            dst[i] = (row[i] - peak) - shift


@njit(types.void(_ro(2), _rw(2)), **_OPTS)
def softmax(x, out):
    _softmax(x, out, False)


@njit(types.void(_ro(2), _rw(2)), **_OPTS)
def safe_softmax(x, out):
    _softmax(x, out, True)


KERNELS = {"softmax": softmax, "log_softmax": log_softmax, "safe_softmax": safe_softmax}


def apply(name: str, x: np.ndarray, axis: int, out: np.ndarray) -> bool:
    """Run ``name`` along ``axis`` into ``out`` when that is the last axis and both are
    float32, C-contiguous and apart (or one array); False (nothing written) otherwise."""
    if x.dtype != np.float32 or out.dtype != np.float32 or not x.ndim or x.shape != out.shape or not x.size:
        return False
    if axis not in (-1, x.ndim - 1) or not (x.flags.c_contiguous and out.flags.c_contiguous):
        return False
    if out is not x and np.shares_memory(x, out):
        return False
    n = x.shape[-1]
    KERNELS[name](x.reshape(-1, n), out.reshape(-1, n))
    return True
