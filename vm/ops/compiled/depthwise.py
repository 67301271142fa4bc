"""Depthwise 2-d convolution computed directly, bias included (float32, NCHW).

numpy has no direct convolution, so ``vm.ops.nn.depthwise`` routes each shape through
``einsum`` calls over window views (about 5 GMAC/s) and adds the bias in another pass.
Here each output row of each channel is built in place in the output, which stays in the
L1 cache: it starts as the bias, then every tap adds ``w[c, kh, kw] * x[c, ih, iw]`` over
the run of output columns whose input column is inside the image, worked out once per
tap, so the inner loop has no bounds test and, at stride 1, runs eight lanes wide.  The
taps' weights sit in registers for their row; padding is never materialised.  One read of
the input per tap row (from cache), one write of the output.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False, "fastmath": {"contract"}}


def _ro(ndim: int) -> types.Array:
    """A C-contiguous float32 array the kernel only reads (a read-only one is accepted too)."""
    return types.Array(types.float32, ndim, "C", readonly=True)


def _rw(ndim: int) -> types.Array:
    return types.Array(types.float32, ndim, "C")


@njit(inline="always", **_OPTS)
def _run(w, out_size, stride, offset):
    """The output columns [lo, hi) whose input column ``o * stride + offset`` is in [0, w)."""
    lo = 0 if offset >= 0 else (-offset + stride - 1) // stride
    hi = 0 if w - 1 - offset < 0 else (w - 1 - offset) // stride + 1
    return lo, min(hi, out_size)


@njit(inline="always", **_OPTS)
def _tap(acc, taps, t0, padded, p0):
    """acc += taps[t0:t0+C] * padded[p0:p0+C].  The indices are unsigned: numba wraps a
    negative signed index around, a select per element that keeps LLVM from vectorizing
    (and slicing views per tap costs more than the tap on 32 channels)."""
    a, b = np.uint64(t0), np.uint64(p0)
    for i in range(acc.shape[0]):
        j = np.uint64(i)
        acc[i] += taps[a + j] * padded[b + j]


@njit(**_OPTS)
def _tiled(taps, kh_size, kw_size, channels, ow_size):
    """The taps repeated along an output row: tiled[k, ow * C + c] = taps[k * C + c]."""
    tiled = np.empty((kh_size * kw_size, ow_size * channels), np.float32)
    for k in range(kh_size * kw_size):
        for ow in range(ow_size):
            for c in range(channels):
                tiled[k, ow * channels + c] = taps[k * channels + c]
    return tiled


@njit(**_OPTS)
def _rows_stride1(padded, tiled, bias, kh_size, kw_size, sh, ph, dh, dw, wp, channels, n, out):
    """Stride 1 along the row: an output row's pixels and channels read one contiguous run of
    the padded channels-last input per tap, so each tap is one long multiply-add against
    the taps tiled along the row."""
    oh_size, ow_size = out.shape[2], out.shape[3]
    run = ow_size * channels
    acc = np.empty(run, np.float32)
    for oh in range(oh_size):
        for ow in range(ow_size):
            for c in range(channels):
                acc[ow * channels + c] = bias[c]
        for kh in range(kh_size):
            row = (oh * sh + kh * dh) * wp * channels
            for kw in range(kw_size):
                k = kh * kw_size + kw
                _tap(acc, tiled[k], 0, padded, row + kw * dw * channels)
        for c in range(channels):
            for ow in range(ow_size):
                out[n, c, oh, ow] = acc[ow * channels + c]


@njit(types.void(_ro(4), _ro(1), _ro(1), *([types.int64] * 8), _rw(4)), **_OPTS)
def depthwise2d(x, taps, bias, kh_size, kw_size, sh, sw, ph, pw, dh, dw, out):
    """x (N, C, H, W); taps the weight channels-last, (KH, KW, C) flattened; out (N, C, OH, OW)."""
    batch, channels, h, w = x.shape
    oh_size, ow_size = out.shape[2], out.shape[3]
    hp, wp = h + 2 * ph, w + 2 * pw
    padded = np.zeros(hp * wp * channels, np.float32)  # channels-last, the border stays zero
    acc = np.empty(channels, np.float32)
    tiled = _tiled(taps, kh_size, kw_size, channels, ow_size) if sw == 1 else np.empty((0, 0), np.float32)
    for n in range(batch):
        for c in range(channels):
            for i in range(h):
                base = ((ph + i) * wp + pw) * channels + c
                for j in range(w):
                    padded[base + j * channels] = x[n, c, i, j]
        if sw == 1:
            _rows_stride1(padded, tiled, bias, kh_size, kw_size, sh, ph, dh, dw, wp, channels, n, out)
            continue
        for oh in range(oh_size):
            for ow in range(ow_size):
                acc[:] = bias
                for kh in range(kh_size):
                    row = ((oh * sh + kh * dh) * wp + ow * sw) * channels
                    for kw in range(kw_size):
                        _tap(acc, taps, (kh * kw_size + kw) * channels, padded, row + kw * dw * channels)
                for c in range(channels):
                    out[n, c, oh, ow] = acc[c]


_EMPTY = np.zeros(1, np.float32)


def apply(x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, stride, padding, dilation,
          result: np.ndarray) -> bool:
    """The depthwise convolution of the batched ``x`` into ``result`` with ``bias`` added,
    when it is 2-d, float32, C-contiguous, one output channel per input channel; False
    (nothing written) otherwise."""
    if x.ndim != 4 or weight.ndim != 4 or weight.shape[1] != 1 or weight.shape[0] != x.shape[1]:
        return False
    if x.dtype != np.float32 or weight.dtype != np.float32 or result.dtype != np.float32:
        return False
    if not (x.flags.c_contiguous and weight.flags.c_contiguous and result.flags.c_contiguous):
        return False
    if bias is not None and (bias.dtype != np.float32 or bias.shape != (x.shape[1],) or not bias.flags.c_contiguous):
        return False
    if np.shares_memory(x, result):
        return False
    taps = np.ascontiguousarray(weight[:, 0].transpose(1, 2, 0)).reshape(-1)
    shift = np.zeros(x.shape[1], np.float32) if bias is None else bias
    depthwise2d(x, taps, shift, weight.shape[2], weight.shape[3], int(stride[0]), int(stride[1]), int(padding[0]), int(padding[1]),
                int(dilation[0]), int(dilation[1]), result)
    return True
