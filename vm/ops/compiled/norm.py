"""Normalizations in one pass over memory: layer_norm, RMS norm, group_norm, eval batch_norm (float32).

A row (layer_norm's normalized trailing axes, RMS norm's, a group of group_norm) is read
three times while it sits in the L1 or L2 cache: its mean, the sum of squared deviations
from that mean (the two-pass variance, so a large mean costs no digits), then the result
``(x - mean) * rstd * weight + bias`` written once.  Memory sees one read and one write.
The sums and ``x - mean`` are float64 (numba vectorizes the sums with ``reassoc``), so the
result is at least as close to the exact one as PyTorch's float32 arithmetic, even on rows
whose mean is far from zero.  Eval batch norm is
``x * scale[c] + shift[c]`` with the per-channel terms the prepared form derived once.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, types

# reassoc lets LLVM vectorize the sums; no contract, so x * scale + shift rounds twice, as numpy's passes do
_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False, "fastmath": {"reassoc"}}


def _ro(ndim: int) -> types.Array:
    """A C-contiguous float32 array the kernel only reads (a read-only one is accepted too)."""
    return types.Array(types.float32, ndim, "C", readonly=True)


def _rw(ndim: int) -> types.Array:
    return types.Array(types.float32, ndim, "C")


@njit(inline="always", **_OPTS)
def _stats(x, lo, hi, eps):
    """Mean and 1/sqrt(var + eps) of x[lo:hi] (1-d float32), in float64."""
    total = 0.0
    for i in range(lo, hi):
        total += x[i]
    n = hi - lo
    mean = total / n
    ss = 0.0
    for i in range(lo, hi):
        d = x[i] - mean
        ss += d * d
    return mean, 1.0 / math.sqrt(ss / n + eps)


@njit(types.void(_ro(2), _ro(1), _ro(1), types.boolean, types.boolean, types.float64, _rw(2)), **_OPTS)
def layer_norm(x, weight, bias, has_weight, has_bias, eps, out):
    rows, n = x.shape
    for r in range(rows):
        row = x[r]
        mean, rstd = _stats(row, 0, n, eps)
        dst = out[r]
        # x - mean in float64: a mean far from zero rounded to float32 first would cost digits
        if has_weight and has_bias:
            for i in range(n):
                dst[i] = np.float32((row[i] - mean) * rstd) * weight[i] + bias[i]
        elif has_weight:
            for i in range(n):
                dst[i] = np.float32((row[i] - mean) * rstd) * weight[i]
        elif has_bias:
            for i in range(n):
                dst[i] = np.float32((row[i] - mean) * rstd) + bias[i]
        else:
            for i in range(n):
                dst[i] = np.float32((row[i] - mean) * rstd)


@njit(types.void(_ro(2), _ro(1), types.boolean, types.float64, _rw(2)), **_OPTS)
def rms_norm(x, weight, has_weight, eps, out):
    rows, n = x.shape
    for r in range(rows):
        row = x[r]
        ss = 0.0
        for i in range(n):
            v = np.float64(row[i])
            ss += v * v
        s = 1.0 / math.sqrt(ss / n + eps)
        dst = out[r]
        if has_weight:
            for i in range(n):
                dst[i] = np.float32(row[i] * s) * weight[i]
        else:
            for i in range(n):
                dst[i] = np.float32(row[i] * s)


@njit(types.void(_ro(3), types.int64, _ro(1), _ro(1), types.boolean, types.boolean, types.float64, _rw(3)), **_OPTS)
def group_norm(x, groups, weight, bias, has_weight, has_bias, eps, out):
    """x and out: (N, C, HW); C divisible by ``groups``."""
    batch, channels, hw = x.shape
    per = channels // groups
    for b in range(batch):
        flat = x[b].reshape(-1)
        dst = out[b]
        for g in range(groups):
            mean, rstd = _stats(flat, g * per * hw, (g + 1) * per * hw, eps)
            for c in range(g * per, (g + 1) * per):
                scale = rstd * weight[c] if has_weight else rstd
                shift = bias[c] if has_bias else np.float32(0)
                src, d = x[b, c], dst[c]
                for i in range(hw):
                    d[i] = np.float32((src[i] - mean) * scale) + shift


@njit(types.void(_ro(3), _ro(1), _ro(1), _rw(3)), **_OPTS)
def channel_affine(x, scale, shift, out):
    """out[n, c, :] = x[n, c, :] * scale[c] + shift[c] (eval batch norm's terms)."""
    batch, channels, hw = x.shape
    for b in range(batch):
        for c in range(channels):
            s, t = scale[c], shift[c]
            src, dst = x[b, c], out[b, c]
            for i in range(hw):
                dst[i] = src[i] * s + t


_EMPTY = np.zeros(1, np.float32)


def _vector(v: np.ndarray | None, n: int) -> bool:
    return v is None or (v.dtype == np.float32 and v.size == n and v.flags.c_contiguous)


def _fits(x: np.ndarray, out: np.ndarray) -> bool:
    return (x.dtype == np.float32 and out.dtype == np.float32 and x.size > 0 and x.flags.c_contiguous
            and out.flags.c_contiguous and out.size == x.size and not (out is not x and np.shares_memory(x, out)))


def apply_layer_norm(x: np.ndarray, row: int, weight, bias, eps: float, out: np.ndarray) -> bool:
    """layer_norm of x's rows of ``row`` numbers into ``out``; False (nothing written) if not float32 and contiguous."""
    if not (_fits(x, out) and _vector(weight, row) and _vector(bias, row)):
        return False
    layer_norm(x.reshape(-1, row), _EMPTY if weight is None else weight.reshape(-1),
               _EMPTY if bias is None else bias.reshape(-1), weight is not None, bias is not None, float(eps),
               out.reshape(-1, row))
    return True


def apply_rms_norm(x: np.ndarray, row: int, weight, eps: float, out: np.ndarray) -> bool:
    if not (_fits(x, out) and _vector(weight, row)):
        return False
    rms_norm(x.reshape(-1, row), _EMPTY if weight is None else weight.reshape(-1), weight is not None, float(eps),
             out.reshape(-1, row))
    return True


def apply_group_norm(x: np.ndarray, groups: int, weight, bias, eps: float, out: np.ndarray) -> bool:
    if x.ndim < 2 or not (_fits(x, out) and _vector(weight, x.shape[1]) and _vector(bias, x.shape[1])):
        return False
    shape = (x.shape[0], x.shape[1], -1)
    group_norm(x.reshape(shape), groups, _EMPTY if weight is None else weight, _EMPTY if bias is None else bias,
               weight is not None, bias is not None, float(eps), out.reshape(shape))
    return True


def apply_channel_affine(x: np.ndarray, scale: np.ndarray, shift: np.ndarray, out: np.ndarray) -> bool:
    if x.ndim < 2 or not (_fits(x, out) and _vector(scale, x.shape[1]) and _vector(shift, x.shape[1])):
        return False
    shape = (x.shape[0], x.shape[1], -1)
    channel_affine(x.reshape(shape), scale.reshape(-1), shift.reshape(-1), out.reshape(shape))
    return True
