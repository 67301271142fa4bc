"""Pooling: max/avg pooling (1-d, 2-d, with ceil_mode, dilation, divisor_override) and
adaptive average/max pooling.

Every kernel works on the last one or two axes, so batched ``(N, C, H, W)`` and unbatched
``(C, H, W)`` inputs take the same path.  A fixed-window pool is a loop over the kernel
taps (``kh * kw``, 9 for a 3x3 window), each tap one strided slice of the padded input
combined with ``np.maximum`` or ``+`` into the whole output: whole-tensor numpy work, no
loop over pixels.  The max pool is ``np.maximum`` per tap (NaN-propagating, as PyTorch's
is); with indices it tracks, per tap, where the winner came from, a strict ``>`` keeping
the first maximum and a NaN winning, as PyTorch's CPU kernel does.

Adaptive pooling follows PyTorch's bins: output cell ``i`` of ``n`` over an input of
``size`` covers ``[floor(i*size/n), ceil((i+1)*size/n))``.  The average is a difference
of cumulative sums taken per axis (the bins are separable); the max loops over the
largest bin's offsets, clamping shorter bins to their last element, which cannot change
a maximum.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from types import EllipsisType
from typing import Any

import numpy as np

from vm.ops.nn._util import copying_out, expand
from vm.ops.registry import kernel

Ints = Sequence[int]


def _pool_out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    span = d * (k - 1) + 1
    if p > k // 2:
        raise ValueError(f"pad should be at most half of the effective kernel size, got pad={p}, kernel={k}")
    num = size + 2 * p - span
    out = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1  # the last window must start inside the input or its left padding
    if out <= 0:
        raise ValueError(f"pooling output size is {out} for an input of size {size}")
    return out


def _geometry(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    n: int = 2,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    k = expand(kernel_size, n, "kernel_size")
    s = expand(stride, n, "stride") if stride not in ([], None) else k
    p = expand(padding, n, "padding")
    d = expand(dilation, n, "dilation")
    sizes = x.shape[-n:]
    outs = tuple(_pool_out_size(*args, ceil_mode) for args in zip(sizes, k, s, p, d))
    return k, s, p, d, outs


def _padded(x: np.ndarray, p: Ints, outs: Ints, k: Ints, s: Ints, d: Ints, fill: float) -> np.ndarray:
    """``x`` padded by ``p`` on the left and enough on the right for the last window."""
    n = len(p)
    widths = [(0, 0)] * (x.ndim - n)
    for size, pi, o, ki, si, di in zip(x.shape[-n:], p, outs, k, s, d):
        right = max((o - 1) * si + di * (ki - 1) + 1 - size - pi, 0)
        widths.append((pi, right))
    if not any(w for pair in widths for w in pair):
        return x
    return np.pad(x, widths, constant_values=fill)


def _tap_slices(tap: Ints, d: Ints, s: Ints, outs: Ints) -> tuple[EllipsisType | slice, ...]:
    return (Ellipsis,) + tuple(slice(t * di, t * di + (o - 1) * si + 1, si) for t, di, si, o in zip(tap, d, s, outs))


def max_pool2d_with_indices(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
    want_indices: bool = True,
) -> tuple[np.ndarray, np.ndarray | None]:
    k, s, p, d, outs = _geometry(x, kernel_size, stride, padding, dilation, ceil_mode)
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _padded(x, p, outs, k, s, d, fill)
    width = x.shape[-1]
    best = best_idx = None
    for tap in itertools.product(range(k[0]), range(k[1])):
        val = xp[_tap_slices(tap, d, s, outs)]
        if best is None:
            best = val.copy()
            take = np.ones(val.shape, bool) if want_indices else None
        elif not want_indices:
            np.maximum(best, val, out=best)  # one pass per tap; NaN propagates, as in torch
            continue
        else:
            take = val > best
            if x.dtype.kind == "f":
                take |= np.isnan(val)
            np.copyto(best, val, where=take)
        if want_indices:
            assert take is not None  # set on every tap when indices are wanted
            rows = np.arange(outs[0]) * s[0] - p[0] + tap[0] * d[0]
            cols = np.arange(outs[1]) * s[1] - p[1] + tap[1] * d[1]
            flat = rows[:, None] * width + cols[None, :]
            best_idx = np.broadcast_to(flat, val.shape).copy() if best_idx is None else np.where(take, flat, best_idx)
    assert best is not None  # _geometry's sizes are positive: there is at least one tap
    return best, best_idx


@copying_out
@kernel(
    "aten::max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
    "int[2] dilation=1, bool ceil_mode=False) -> Tensor"
)
def max_pool2d(x: np.ndarray, *geometry: Any) -> np.ndarray:
    """``geometry``: kernel_size, stride, padding, dilation, ceil_mode, as in the schema."""
    return max_pool2d_with_indices(x, *geometry, want_indices=False)[0]


@kernel(
    "aten::max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
    "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)"
)
def max_pool2d_with_indices_kernel(x: np.ndarray, *geometry: Any) -> tuple[np.ndarray, np.ndarray]:
    out, idx = max_pool2d_with_indices(x, *geometry)
    assert idx is not None  # want_indices=True
    return out, idx.astype(np.int64)


@copying_out
@kernel(
    "aten::max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], "
    "int[1] dilation=[1], bool ceil_mode=False) -> Tensor"
)
def max_pool1d(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    ceil_mode: bool,
) -> np.ndarray:
    k, s, p = _as_2d(kernel_size, stride, padding)
    out, _ = max_pool2d_with_indices(x[..., None, :], k, s, p, [1, expand(dilation, 1)[0]], ceil_mode, False)
    return out[..., 0, :]


def _as_2d(kernel_size: Ints, stride: Ints, padding: Ints) -> tuple[list[int], list[int], list[int]]:
    """A 1-d pool's geometry as a 2-d pool's over a height of 1."""
    stride2 = [] if stride in ([], None) else [1, expand(stride, 1)[0]]
    return [1, expand(kernel_size, 1)[0]], stride2, [0, expand(padding, 1)[0]]


@copying_out
@kernel(
    "aten::avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
    "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> Tensor"
)
def avg_pool2d(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> np.ndarray:
    k, s, p, d, outs = _geometry(x, kernel_size, stride, padding, (1,), ceil_mode)
    acc_dtype = x.dtype if x.dtype.kind == "f" else np.int64
    xp = _padded(x, p, outs, k, s, d, 0)
    total = np.zeros(x.shape[:-2] + outs, acc_dtype)
    for tap in itertools.product(range(k[0]), range(k[1])):
        total += xp[_tap_slices(tap, d, s, outs)]
    if divisor_override:
        divisor = np.asarray(divisor_override)
    else:
        counts = [
            _window_counts(size, o, ki, si, pi, count_include_pad)
            for size, o, ki, si, pi in zip(x.shape[-2:], outs, k, s, p)
        ]
        divisor = counts[0][:, None] * counts[1][None, :]
    if x.dtype.kind == "f":
        return (total / divisor.astype(x.dtype)).astype(x.dtype, copy=False)
    return (total // divisor).astype(x.dtype)


def _window_counts(size: int, n_out: int, k: int, s: int, p: int, include_pad: bool) -> np.ndarray:
    """How many elements each window divides by along one axis."""
    start = np.arange(n_out) * s - p
    end = np.minimum(start + k, size + p)
    if include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


@copying_out
@kernel(
    "aten::avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], "
    "bool ceil_mode=False, bool count_include_pad=True) -> Tensor"
)
def avg_pool1d(
    x: np.ndarray,
    kernel_size: Ints,
    stride: Ints,
    padding: Ints,
    ceil_mode: bool,
    count_include_pad: bool,
) -> np.ndarray:
    out = avg_pool2d(x[..., None, :], *_as_2d(kernel_size, stride, padding), ceil_mode, count_include_pad, None)
    return out[..., 0, :]


# ---------------------------------------------------------------------------------------
# Adaptive pooling


def _bins(size: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    i = np.arange(n_out)
    return (i * size) // n_out, -((-(i + 1) * size) // n_out)


def _adaptive_average(x: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Adaptive average pooling of ``x``'s last ``len(sizes)`` dimensions as torch's CPU
    kernel computes it: each window summed whole, in x's dtype (a float32 sum of 2e38s
    overflows to inf; a row of 2e38, -2e38 cancels before the next row is added), then
    divided by its length along each pooled dimension in turn (``sum / kh / kw``), so that
    denormals survive as torch's do."""
    first = x.ndim - len(sizes)
    spatial = x.shape[first:]
    axes = tuple(range(first, x.ndim))
    if all(n % o == 0 for n, o in zip(spatial, sizes)):  # equal windows: one reshape
        split = x.shape[:first] + tuple(v for n, o in zip(spatial, sizes) for v in (o, n // o))
        sums = x.reshape(split).sum(axis=tuple(first + 2 * i + 1 for i in range(len(sizes))), dtype=x.dtype)
    else:
        bins = [list(zip(*(b.tolist() for b in _bins(n, o)))) for n, o in zip(spatial, sizes)]
        sums = np.empty(x.shape[:first] + tuple(sizes), x.dtype)
        for at in itertools.product(*(range(o) for o in sizes)):
            window = tuple(slice(*bins[i][k]) for i, k in enumerate(at))
            sums[(Ellipsis, *at)] = x[(Ellipsis, *window)].sum(axis=axes, dtype=x.dtype)
    with np.errstate(all="ignore"):
        for i, (n, o) in enumerate(zip(spatial, sizes)):
            start, end = _bins(n, o)
            shape = [1] * sums.ndim
            shape[first + i] = o
            sums = sums / (end - start).astype(x.dtype).reshape(shape)
    return sums


def _output_size(x: np.ndarray, output_size: Sequence[int | None], n: int) -> tuple[int, ...]:
    sizes = list(output_size) if not isinstance(output_size, int) else [output_size] * n
    if len(sizes) == 1:
        sizes = sizes * n
    return tuple(x.shape[-n + i] if v is None else int(v) for i, v in enumerate(sizes))


@copying_out
@kernel("aten::adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor")
def adaptive_avg_pool2d(x: np.ndarray, output_size: Sequence[int | None]) -> np.ndarray:
    oh, ow = _output_size(x, output_size, 2)
    if oh == ow == 1 and x.ndim >= 3 and x.dtype in _BLAS_FLOATS and x.size and x.flags.c_contiguous:
        return _global_average(x)
    return _adaptive_average(x, (oh, ow))


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _global_average(x: np.ndarray) -> np.ndarray:
    """The mean of each (H, W) plane of a float32/float64 ``x``: the sum as one BLAS
    matrix-vector product, accumulating in x's dtype as PyTorch's CPU kernel does (global
    pooling ends every classification network), then ``/ H / W`` as torch divides."""
    h, w = x.shape[-2:]
    rows = x.reshape(-1, h * w)
    sums = rows @ np.ones(h * w, x.dtype)
    if not np.isfinite(sums).all():  # an overflow may be the BLAS kernel's order of terms (2e38, 2e38,
        sums = rows.sum(axis=1, dtype=x.dtype)  # -2e38...): then numpy's pairwise order, as torch's cancels
    with np.errstate(all="ignore"):
        means = sums / x.dtype.type(h) / x.dtype.type(w)
    return means.reshape(x.shape[:-2] + (1, 1))


@copying_out
@kernel("aten::adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor")
def adaptive_avg_pool3d(x: np.ndarray, output_size: Sequence[int | None]) -> np.ndarray:
    """Also what a scripted ``F.interpolate(mode="area")`` reaches for 5-d input."""
    return _adaptive_average(x, _output_size(x, output_size, 3))


@copying_out
@kernel("aten::adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor")
def adaptive_avg_pool1d(x: np.ndarray, output_size: Sequence[int | None]) -> np.ndarray:
    return _adaptive_average(x, _output_size(x, output_size, 1))


@kernel("aten::adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)")
def adaptive_max_pool2d(x: np.ndarray, output_size: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray]:
    """Returns (values, flat indices into each H*W plane), first maximum winning."""
    oh, ow = _output_size(x, output_size, 2)
    h, w = x.shape[-2:]
    (hs, he), (ws, we) = _bins(h, oh), _bins(w, ow)
    best: np.ndarray | None = None
    best_idx: np.ndarray | None = None
    for dh, dw in itertools.product(range(int((he - hs).max())), range(int((we - ws).max()))):
        rows = np.minimum(hs + dh, he - 1)
        cols = np.minimum(ws + dw, we - 1)
        val = x[..., rows[:, None], cols[None, :]]
        flat = rows[:, None] * w + cols[None, :]
        if best is None or best_idx is None:
            best, best_idx = val.copy(), np.broadcast_to(flat, val.shape).copy()
            continue
        take = val > best
        if x.dtype.kind == "f":
            take |= np.isnan(val)
        np.copyto(best, val, where=take)
        best_idx = np.where(take, flat, best_idx)
    if best is None or best_idx is None:  # an empty bin: no element to take
        raise RuntimeError(
            f"adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has "
            f"sizes {list(x.shape)}"
        )
    return best, best_idx.astype(np.int64)


@kernel("aten::adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)")
def adaptive_max_pool1d(x: np.ndarray, output_size: Sequence[int | None]) -> tuple[np.ndarray, np.ndarray]:
    out, idx = adaptive_max_pool2d(x[..., None, :], [1, _output_size(x, output_size, 1)[0]])
    return out[..., 0, :], idx[..., 0, :]
