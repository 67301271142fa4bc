"""Depthwise convolution (one input channel per group), for ``vm.ops.nn.conv.conv_nd``.

Depthwise convolution as grouped im2col would be one tiny matmul per channel, so it takes
other routes, chosen by shape.  What decides among them on numpy is less the arithmetic
than how many times a ufunc or ``einsum`` starts an inner loop (a few dozen ns each) and
how long those loops run:

- on output rows 12 to 64 wide with up to 256 channels at stride 1 (most depthwise
  convolutions of the zoo's 64x64 images and of a 224x224 MobileNet), and with fewer than
  64 channels at stride 2 or 3 along the row, ``_depthwise_rows``: channels-last, an
  output row's pixels and channels are one contiguous run of the padded input for every
  tap, so one ``einsum`` multiplies and sums the taps with inner loops ``width x channels``
  long against the weights tiled along the row (1.2-2.3x faster than the routes below on
  those shapes; with more channels at stride 2 the channels-last einsum wins);
- otherwise with 64 channels or more, one channels-last ``einsum`` over the window view
  (inner loops over the channels);
- on wide planes at stride 1, a tap loop over whole flattened planes (``_depthwise_flat``);
  on small planes, windows copied channels-last into columns (``_depthwise_channels_last``);
  otherwise the taps over blocks of channels.

Taps that read only padding for every output (a 7x7 kernel on a 2x2 plane has 9 live taps
of 49) are dropped first on the two einsum routes.  No path loops over pixels in Python.
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
    """One input channel per group: accumulate ``w[:, tap] * shifted input`` over the taps,
    into ``result``.  Routes by shape (the module essay says which takes which): the row
    runs (``_depthwise_rows``), the channels-last window ``einsum`` (``_depthwise_einsum``),
    channels-last columns on small planes (``_depthwise_channels_last``), flattened planes
    at stride 1 (``_depthwise_flat``), and the rest (channel multipliers, strides with few
    channels) on blocks of channels, tap by tap through one scratch buffer, a block's planes
    staying in cache across its taps."""
    o, _, *kernel_ = weight.shape
    mult = o // x.shape[1]
    if (mult == 1 and _ROWS_FROM_WIDTH <= oshape[-1] <= _ROWS_UP_TO_WIDTH and o <= _ROWS_UP_TO_CHANNELS
            and (stride[-1] == 1 or (dilation[-1] == 1 and o < _EINSUM_FROM_CHANNELS))):
        _depthwise_rows(x, weight, stride, padding, dilation, oshape, result)
        return
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
# the row-run einsum from/up to these output widths and up to this many channels (measured:
# wider rows pay more for the two channels-last transposes, more channels for the tiled
# weights, and on 8x8 planes and smaller the set-up costs more than the einsum saves)
_ROWS_FROM_WIDTH = 12
_ROWS_UP_TO_WIDTH = 64
_ROWS_UP_TO_CHANNELS = 256
_CHANNELS_LAST_BELOW = 16  # output rows shorter than this (14x14, 7x7 planes) run channels-last


def _padded_channels_last(x: np.ndarray, padding: Ints, dt: np.dtype) -> np.ndarray:
    """``x`` (N, C, *spatial) zero-padded on its spatial axes and laid out channels-last,
    ``(N, *padded, C)``, in dtype ``dt``."""
    n, c, *spatial = x.shape
    xl = np.zeros((n, *(size + 2 * p for size, p in zip(spatial, padding)), c), dt)
    inner = xl[(slice(None),) + tuple(slice(p, p + size) for p, size in zip(padding, spatial))]
    inner[...] = _unaliased(x).transpose(0, *range(2, 2 + len(spatial)), 1)
    return xl


def _to_channels_first(acc: np.ndarray, result: np.ndarray) -> None:
    """Copy the channels-last ``acc`` (N, *out, C) into ``result`` (N, C, *out)."""
    nsp = acc.ndim - 2
    order = (0, 1 + nsp, *range(1, 1 + nsp))
    if _aliasing(result):
        staged = _unaliased(np.empty(result.shape, result.dtype), copy=False)
        staged[...] = acc.transpose(order)
        result[...] = staged
    else:
        np.copyto(result, acc.transpose(order))


def _aliasing(x: np.ndarray) -> bool:
    """Whether a transpose to or from channels-last would stride ``x``'s channels at a
    multiple of 1 KiB, up to 4 KiB apart, with 64 channels or more: the cache sets such
    strides map to are few, and the transpose runs 2-2.5x slower (measured on planes of
    16x16 and 32x32 floats)."""
    plane = math.prod(x.shape[2:]) * x.itemsize
    return x.ndim > 2 and x.shape[1] >= 64 and plane <= 4096 and plane % 1024 == 0


def _unaliased(x: np.ndarray, copy: bool = True) -> np.ndarray:
    """``x`` itself, or when its channel stride aliases (``_aliasing``) a view of a copy
    whose channels sit 64 bytes further apart (the contiguous copy costs less than the
    conflicts it avoids); ``copy=False`` gives the view without filling it."""
    if not _aliasing(x):
        return x
    n, c, *spatial = x.shape
    plane = math.prod(spatial)
    store = np.empty((n, c, plane + 64 // x.itemsize), x.dtype)
    view = store[:, :, :plane].reshape(x.shape)
    if copy:
        view[...] = x
    return view


def live_taps(size: int, k: int, stride: int, dilation: int, padding: int, n_out: int) -> tuple[int, int]:
    """The taps ``[lo, hi)`` of one axis that read the input for some output: tap ``t``
    reads positions ``i*stride + t*dilation - padding`` for outputs ``i < n_out``; a tap
    whose positions all fall in the padding only adds zeros.  (Live taps are contiguous.)"""
    live = [t for t in range(k) if t * dilation - padding < size and (n_out - 1) * stride + t * dilation - padding >= 0]
    return (live[0], live[-1] + 1) if live else (0, k)


def _depthwise_rows(
    x: np.ndarray, weight: np.ndarray, stride: Ints, padding: Ints, dilation: Ints, oshape: Ints, result: np.ndarray
) -> None:
    """Depthwise convolution as ``einsum`` over row runs.

    Padded channels-last, ``xl[..., j + b, c]`` for the outputs ``j`` of a row and the
    channels ``c`` is one contiguous run of ``width * C`` numbers for every tap ``b``,
    starting ``C`` numbers further per tap step along the row.  So the input seen as
    ``(N, *out_lead, *taps, width * C)`` is a view (no copy), and with the weights tiled
    along the row (``(*taps, width * C)``, the same channel pattern ``width`` times) the
    convolution is ``einsum("n...t...m,t...m->n...m")``: each inner loop multiplies and
    sums a whole row for one tap.  A stride ``s`` along the row splits the padded columns
    into ``s`` phases (columns ``s*u + r``, copied contiguous): tap ``b = s*q + r`` reads
    phase ``r`` at ``j + q``, a run again, and the phases' sums add up.  Strides along the
    other axes and dilations are view strides.  Dead taps (padding only) are left out."""
    n, c, *spatial = x.shape
    nsp = len(spatial)
    dt = result.dtype
    step = stride[-1]
    spans = [live_taps(size, k, s, d, p, n_out)
             for size, k, s, d, p, n_out in zip(spatial, weight.shape[2:], stride, dilation, padding, oshape)]
    if step > 1:  # the row's taps are split by phase instead
        spans[-1] = (0, weight.shape[-1])
    xl = _padded_channels_last(x, padding, dt)
    w = np.moveaxis(weight[(slice(None), 0) + tuple(slice(lo, hi) for lo, hi in spans)], 0, -1)  # (*taps, C)
    lead, tap = "hdw"[: nsp - 1], "ijk"[:nsp]
    acc: np.ndarray | None = None
    for phase in range(step):
        taps_here = w[..., phase::step, :]
        if taps_here.shape[-2] == 0:
            continue
        src = xl if step == 1 else np.ascontiguousarray(xl[..., phase::step, :])
        st_ = src.strides
        taps = [hi - lo for lo, hi in spans[:-1]] + [taps_here.shape[-2]]
        start = sum(lo * d * st_[1 + i] for i, ((lo, _), d) in enumerate(zip(spans, dilation)))  # first live taps
        view = np.ndarray(
            (n, *oshape[:-1], *taps, oshape[-1] * c), dt, buffer=src, offset=start,
            strides=(st_[0], *(s * st_[1 + i] for i, s in enumerate(stride[:-1])),
                     *(d * st_[1 + i] for i, d in enumerate(dilation)), st_[-1]),
        )
        tiled = np.tile(taps_here.astype(dt, copy=False), (1,) * nsp + (oshape[-1],))  # (*taps, width*C)
        part = np.einsum(f"n{lead}{tap}m,{tap}m->n{lead}m", view, tiled)
        acc = part if acc is None else np.add(acc, part, out=acc)
    assert acc is not None  # phase 0 always has tap 0
    _to_channels_first(acc.reshape(n, *oshape, c), result)


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
    n, c = x.shape[:2]
    xl = _padded_channels_last(x, padding, dt)
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
    tap loops on 5x5 and 7x7 kernels and on strided or small planes.  Taps that read only
    padding are left out."""
    nsp = len(oshape)
    view = _channels_last_windows(x, weight.shape[2:], stride, padding, dilation, oshape, result.dtype)
    live = tuple(slice(*live_taps(size, k, s, d, p, n_out)) for size, k, s, d, p, n_out in
                 zip(x.shape[2:], weight.shape[2:], stride, dilation, padding, oshape))
    view = view[(slice(None),) * (1 + nsp) + live]  # without the taps that read only padding
    w = np.ascontiguousarray(np.moveaxis(weight[(slice(None), 0) + live], 0, -1), result.dtype)  # (*taps, C)
    axes = "hwdabe"[:nsp]
    taps = "ijkxyz"[:nsp]
    acc = np.einsum(f"n{axes}{taps}c,{taps}c->n{axes}c", view, w)
    _to_channels_first(acc, result)


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
    kernel_ = weight.shape[2:]
    dt = result.dtype
    view = _channels_last_windows(x, kernel_, stride, padding, dilation, oshape, dt)
    taps = math.prod(kernel_)
    cols = np.empty(view.shape, dt)  # a copy, never a view: the windows overlap
    np.copyto(cols, view)
    cols = cols.reshape(n, -1, taps, c)
    cols *= np.ascontiguousarray(weight.reshape(c, taps).T, dt)  # contiguous along C, as the columns
    acc = cols.sum(axis=2)  # (N, outputs, C)
    _to_channels_first(acc.reshape(n, *oshape, c), result)
