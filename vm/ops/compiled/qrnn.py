"""The hidden map of a dynamic quantized LSTM or GRU step in one compiled call.

``vm.ops.quantized.rnn`` runs ATen's dynamic quantized RNNs: the input map of the whole
sequence as one dynamic quantized linear, then per step the hidden map of the last hidden
state as another.  That map chooses the state's quantization parameters from its range
(ATen's ``ChooseQuantizationParams``), quantizes it (fbgemm's ``Quantize``: one fused
multiply-add, ``rint(float32(h * (1 / scale) + zero_point))``), multiplies the uint8 state by
the int8 weight in integers (exactly, or in fbgemm's saturating int16 pairs on its AVX2 and
AVX-512 kernels: ``vm.ops.quantized.saturating``), and scales the accumulator by
``float32(sx * sw)`` plus the bias (in float64, exact for an int32 times a float32): a dozen
numpy calls per step in ``vm.ops.quantized.layers.dynamic_linear``, one call here, with the
same integers and the same float32 result.

The gates stay numpy's (the caller's): the next step quantizes the state again, so a gate
an ulp off torch's can move an integer a whole step and the output by a quantization step
(measured: 6e-4 on a 2-layer tagger with an exp-based compiled sigmoid, 0 with numpy's).
No fused multiply-adds here either (``fastmath`` off): each product and sum rounds as
numpy's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit, types

from vm.ops.compiled.activation import _OPTS as _CONTRACTING

F = np.float32
# no fused multiply-adds: each product and sum rounds as numpy's do, so the state quantized at
# the next step is the numpy path's, integer for integer
_OPTS = {k: v for k, v in _CONTRACTING.items() if k != "fastmath"}


@njit(inline="always", **_OPTS)
def _choose(lo, hi, reduce_range):
    """(scale, zero point) as vm.ops.quantized.arith.choose_qparams for quint8."""
    qmin, qmax = 0, 255
    if reduce_range:
        qmax = 127
    lo = min(float(np.float32(lo)), 0.0)
    hi = max(float(np.float32(hi)), 0.0)
    scale = (hi - lo) / (qmax - qmin)
    s32 = float(np.float32(scale))
    if s32 == 0.0 or math.isinf(1.0 / s32):
        scale = 0.1
    from_min, from_max = qmin - lo / scale, qmax - hi / scale
    err_min, err_max = abs(qmin) - abs(lo / scale), abs(qmax) - abs(hi / scale)
    initial = from_min if err_min < err_max else from_max
    if initial < qmin:
        zp = qmin
    elif initial > qmax:
        zp = qmax
    else:
        zp = int(np.rint(initial))
    return float(np.float32(scale)), zp


def _arr(dtype: Any, ndim: int, readonly: bool = False) -> types.Array:
    return types.Array(dtype, ndim, "C", readonly=readonly)


# compiled when the family is imported (python3 -m vm.ops.compiled fills the cache), not on a call
@njit(types.void(_arr(types.float32, 2, True), _arr(types.int32, 2, True), _arr(types.int64, 1, True),
                 _arr(types.float32, 1, True), _arr(types.float64, 1, True), types.boolean, types.boolean,
                 _arr(types.int64, 2), _arr(types.int64, 2), _arr(types.float32, 2)), **_OPTS)
def hidden_map(h, w_t, w_zp, w_scale, bias, reduce_range, saturate, q, acc, y):
    """y = the dynamic quantized linear of h (B, K) by the int8 weight w_t (K, G) (int32
    values, transposed), per-column zero points and float32 scales, float64 bias."""
    batch, k = h.shape
    g = w_t.shape[1]
    lo, hi = h[0, 0], h[0, 0]
    for b in range(batch):
        for i in range(k):
            v = h[b, i]
            lo = v if v < lo else lo
            hi = v if v > hi else hi
    sx, zx = _choose(lo, hi, reduce_range)
    inv = float(np.float32(1.0) / np.float32(sx))
    for b in range(batch):
        for i in range(k):
            r = np.rint(np.float32(float(h[b, i]) * inv + zx))
            q[b, i] = 0 if r < 0 else (255 if r > 255 else np.int32(r))
    for b in range(batch):
        for j in range(g):
            acc[b, j] = 0
        if saturate:  # pairs of products into a saturating int16, then the offsets
            for i in range(0, k, 2):
                a0 = q[b, i]
                a1 = q[b, i + 1] if i + 1 < k else 0
                for j in range(g):
                    w1 = w_t[i + 1, j] if i + 1 < k else 0
                    p = a0 * w_t[i, j] + a1 * w1
                    p = -32768 if p < -32768 else (32767 if p > 32767 else p)
                    acc[b, j] += p
            row = 0
            for i in range(k):
                row += q[b, i]
            for j in range(g):
                col = 0
                for i in range(k):
                    col += w_t[i, j]
                acc[b, j] += -zx * (col - w_zp[j] * k) - row * w_zp[j]
        else:
            for i in range(k):
                a = q[b, i] - zx
                for j in range(g):
                    acc[b, j] += a * (w_t[i, j] - w_zp[j])
        for j in range(g):
            mult = float(np.float32(np.float32(sx) * w_scale[j]))
            y[b, j] = np.float32(acc[b, j] * mult + bias[j])
