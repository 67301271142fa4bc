"""Depthwise convolution (one input channel per group), for ``vm.ops.nn.conv.conv_nd``.

Depthwise convolution as grouped im2col would be one tiny matmul per channel, so it takes
other routes, chosen by shape: on planes 16 or more outputs wide at stride 1, a sum over
the kernel taps of the shifted input times a per-channel weight, each tap one multiply-add
over whole flattened planes (``_depthwise_flat``); on smaller planes, windows copied
channels-last into columns, scaled and summed over the taps (``_depthwise_channels_last``);
with 64 channels or more one channels-last ``einsum``; otherwise the taps over blocks of
channels.  No path loops over pixels in Python.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from vm.ops.nn._util import pad_spatial

Ints = Sequence[int]


def depthwise(
    x: np.ndarray, weight: np.ndarray, stride: Ints, padding: Ints, dilation: Ints, oshape: Ints, result: np.ndarray
) -> None:
    """One input channel per group: accumulate ``w[:, tap] * shifted input`` over the taps.

    Four routes, by shape (measured with ``tools/bench_kernels.py``): 64 channels or more
    as one channels-last ``einsum`` (``_depthwise_einsum``); with fewer, small planes as
    channels-last columns (``_depthwise_channels_last``), bigger ones with stride 1 on
    flattened planes (``_depthwise_flat``), and the rest (strides, channel multipliers) on
    blocks of channels, tap by tap, through one scratch buffer (two passes per tap, no
    temporaries), a block's planes staying in cache across its taps."""
    o, _, *kernel_ = weight.shape
    mult = o // x.shape[1]
    if mult == 1 and o >= _EINSUM_FROM_CHANNELS:
        _depthwise_einsum(x, weight, stride, padding, dilation, oshape, result)
        return
    if mult == 1 and oshape[-1] < _CHANNELS_LAST_BELOW:
        _depthwise_channels_last(x, weight, stride, padding, dilation, oshape, result)
        return
    if mult == 1 and all(s == 1 for s in stride):
        _depthwise_flat(x, weight, padding, dilation, oshape, result)
        return
    xp = pad_spatial(x, padding, padding)
    nsp = len(kernel_)
    plane = int(np.prod(xp.shape[2:])) * xp.itemsize * max(xp.shape[0], 1)
    block = max(1, _DEPTHWISE_BLOCK_BYTES // plane)
    taps = list(itertools.product(*(range(k) for k in kernel_)))
    index = [
        (slice(None), slice(None))
        + tuple(slice(t * d, t * d + (n_out - 1) * s + 1, s) for t, d, s, n_out in zip(tap, dilation, stride, oshape))
        for tap in taps
    ]
    for c0 in range(0, o, block):
        c1 = min(c0 + block, o)
        src = np.repeat(xp[:, c0 // mult : (c1 - 1) // mult + 1], mult, axis=1)[:, c0 % mult :][:, : c1 - c0] if mult > 1 else xp[:, c0:c1]
        out = result[:, c0:c1]
        scratch = np.empty_like(out)
        for i, tap in enumerate(taps):
            w = weight[(slice(c0, c1), 0) + tap].reshape((c1 - c0,) + (1,) * nsp)
            np.multiply(src[index[i]], w, out=out if i == 0 else scratch)
            if i:
                out += scratch


_DEPTHWISE_BLOCK_BYTES = 256 * 1024
_EINSUM_FROM_CHANNELS = 64  # from this many channels the channels-last einsum wins on every shape measured
_CHANNELS_LAST_BELOW = 16  # output rows shorter than this (14x14, 7x7 planes) run channels-last


def _depthwise_flat(
    x: np.ndarray, weight: np.ndarray, padding: Ints, dilation: Ints, oshape: Ints, result: np.ndarray
) -> None:
    """Depthwise convolution on each channel's padded plane seen as one flat row.

    In a padded plane of row pitch ``P`` (2-D: the padded width), the input under tap
    ``(a, b)`` of output ``(i, j)`` sits at flat index ``a*d*P + b*d + s*(i*P + j)``: for
    every tap, the outputs numbered ``l = i*P + j`` read one evenly strided run of the
    flat plane, starting at the tap's offset.  So each tap is one multiply-add over rows
    as long as the whole plane, for a block of channels at a time (kept in cache across
    the taps), instead of one short row per output line.  The outputs with ``j`` past the
    real width are computed and dropped when the block is copied out; the plane gets
    enough zero rows at the bottom that the last tap's run stays inside it.
    """
    n, c, *spatial = x.shape
    nsp = len(spatial)
    padded = [size + 2 * p for size, p in zip(spatial, padding)]
    pitch = [int(np.prod(padded[i + 1 :])) for i in range(nsp)]  # flat distance of one step per axis
    taps = list(itertools.product(*(range(k) for k in weight.shape[2:])))
    offsets = [sum(t * d * r for t, d, r in zip(tap, dilation, pitch)) for tap in taps]
    length = oshape[0] * pitch[0]  # outputs per channel, counted in padded rows
    need = max(offsets) + length
    rows = max(padded[0], -(-need // pitch[0]))
    xp = np.zeros((n, c, rows, *padded[1:]), x.dtype)
    xp[(slice(None), slice(None)) + tuple(slice(p, p + size) for p, size in zip(padding, spatial))] = x
    flat = xp.reshape(n, c, -1)
    w = weight.reshape(c, -1).astype(result.dtype, copy=False)
    block = max(1, min(c, _DEPTHWISE_BLOCK_BYTES // (n * length * result.itemsize)))
    acc = np.empty((n, block, length), result.dtype)
    scratch = np.empty_like(acc)
    crop = (slice(None), slice(None), slice(None)) + tuple(slice(0, size) for size in oshape[1:])
    for c0 in range(0, c, block):
        c1 = min(c0 + block, c)
        a, s = acc[:, : c1 - c0], scratch[:, : c1 - c0]
        for i, off in enumerate(offsets):
            np.multiply(flat[:, c0:c1, off : off + length], w[c0:c1, i : i + 1],
                        out=a if i == 0 else s)
            if i:
                a += s
        result[:, c0:c1] = a.reshape(n, c1 - c0, oshape[0], *padded[1:])[crop]


def _channels_last_windows(
    x: np.ndarray, kernel_: Ints, stride: Ints, padding: Ints, dilation: Ints, oshape: Ints, dt: np.dtype
) -> np.ndarray:
    """The windows of ``x`` zero-padded channels-last, as a view ``(N, *out, *kernel, C)``
    (built from strides directly: numpy's ``sliding_window_view`` and ``moveaxis`` cost
    more than the arithmetic on small planes)."""
    n, c, *spatial = x.shape
    nsp = len(spatial)
    xl = np.zeros((n, *(size + 2 * p for size, p in zip(spatial, padding)), c), dt)
    xl[(slice(None),) + tuple(slice(p, p + size) for p, size in zip(padding, spatial))] = x.transpose(
        0, *range(2, 2 + nsp), 1
    )
    st_ = xl.strides
    return np.ndarray(
        (n, *oshape, *kernel_, c),
        dt,
        buffer=xl,
        strides=(st_[0], *(s * st_[1 + i] for i, s in enumerate(stride)),
                 *(d * st_[1 + i] for i, d in enumerate(dilation)), st_[-1]),
    )


def _depthwise_einsum(
    x: np.ndarray, weight: np.ndarray, stride: Ints, padding: Ints, dilation: Ints, oshape: Ints, result: np.ndarray
) -> None:
    """Depthwise convolution with many channels (64 or more) as one ``einsum`` over the
    channels-last window view: a C loop whose innermost axis runs along the channels
    (contiguous in input, weight and output), summing the taps of each output without
    copying the windows; any stride, dilation and kernel size.  3-20x faster than the
    tap loops on 5x5 and 7x7 kernels and on strided or small planes."""
    nsp = len(oshape)
    view = _channels_last_windows(x, weight.shape[2:], stride, padding, dilation, oshape, result.dtype)
    w = np.ascontiguousarray(np.moveaxis(weight[:, 0], 0, -1), result.dtype)  # (*kernel, C)
    axes = "hwdabe"[:nsp]
    taps = "ijkxyz"[:nsp]
    acc = np.einsum(f"n{axes}{taps}c,{taps}c->n{axes}c", view, w)
    np.copyto(result, acc.transpose(0, 1 + nsp, *range(1, 1 + nsp)))


def _depthwise_channels_last(
    x: np.ndarray, weight: np.ndarray, stride: Ints, padding: Ints, dilation: Ints, oshape: Ints, result: np.ndarray
) -> None:
    """Depthwise convolution on small planes (14x14, 7x7) as a few whole-tensor passes.

    The input is padded channels-last and its windows copied once into columns
    ``(N, outputs, taps, C)``; the columns are scaled in place by the weight laid out
    ``(taps, C)`` and summed over the taps.  On small planes a tap loop would be dozens of
    numpy calls on a few thousand numbers each; here it is a handful whose inner loops
    run over the channels."""
    n, c, *spatial = x.shape
    nsp = len(spatial)
    kernel_ = weight.shape[2:]
    dt = result.dtype
    view = _channels_last_windows(x, kernel_, stride, padding, dilation, oshape, dt)
    taps = math.prod(kernel_)
    cols = np.empty(view.shape, dt)  # a copy, never a view: the windows overlap
    np.copyto(cols, view)
    cols = cols.reshape(n, -1, taps, c)
    cols *= np.ascontiguousarray(weight.reshape(c, taps).T, dt)  # contiguous along C, as the columns
    acc = cols.sum(axis=2)  # (N, outputs, C)
    np.copyto(result, acc.reshape(n, *oshape, c).transpose(0, 1 + nsp, *range(1, 1 + nsp)))
