"""Padding, upsampling and pixel shuffles: operators that change spatial extent.

``pad`` takes PyTorch's flat pad list, pairs for the last dimension first
(``[left, right, top, bottom]``), and maps it onto ``np.pad`` modes: constant (negative
widths crop), reflect, replicate (``edge``) and circular (``wrap``).

Upsampling reproduces PyTorch's index arithmetic, including its float32 rounding: the
nearest source index is ``min(floor(dst * scale), size - 1)`` with ``scale`` either
``1 / scale_factor`` or ``in / out``; bilinear interpolation uses the half-pixel source
coordinate ``scale * (dst + 0.5) - 0.5`` clamped at 0 (or ``dst * (in-1)/(out-1)`` with
``align_corners``) and blends the two neighbours along each axis in turn.  Both are
gathers with index arrays, never loops over pixels.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vm.ops._nn_util import copying_out, write_out
from vm.ops.registry import kernel

Ints = Sequence[int]


def _pairs(x: np.ndarray, pad: Sequence[int]) -> list[tuple[int, int]]:
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ValueError(f"padding length {len(pad)} must be even and at most twice the rank {x.ndim}")
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    return widths


def constant_pad(x: np.ndarray, pad: Sequence[int], value: float) -> np.ndarray:
    widths = _pairs(x, pad)
    for d, (a, b) in enumerate(widths):
        if x.shape[d] + a + b < 0:
            raise ValueError(f"padding {list(pad)} shrinks dimension {d} of size {x.shape[d]} below zero")
    crop = tuple(slice(max(-a, 0), x.shape[d] - max(-b, 0)) for d, (a, b) in enumerate(widths))
    x = x[crop]
    grow = [(max(a, 0), max(b, 0)) for a, b in widths]
    return np.pad(x, grow, constant_values=value)


_NP_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def mode_pad(x: np.ndarray, pad: Sequence[int], mode: str) -> np.ndarray:
    widths = _pairs(x, pad)
    for d, (a, b) in enumerate(widths):
        if a < 0 or b < 0:
            raise ValueError(f"{mode} padding does not accept negative widths, got {list(pad)}")
        limit = x.shape[d] - 1 if mode == "reflect" else x.shape[d]
        if mode != "replicate" and max(a, b) > limit:
            raise ValueError(f"{mode} padding {max(a, b)} is too large for dimension {d} of size {x.shape[d]}")
    return np.pad(x, widths, mode=_NP_MODES[mode])


@copying_out
@kernel('aten::pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor')
def pad(x: np.ndarray, pad_: Sequence[int], mode: str, value: float) -> np.ndarray:
    if mode == "constant":
        return constant_pad(x, pad_, 0 if value is None else value)
    if mode not in _NP_MODES:
        raise ValueError(f"unknown padding mode {mode!r}: expected constant, reflect, replicate or circular")
    return mode_pad(x, pad_, mode)


@kernel("aten::constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor")
def constant_pad_nd(x: np.ndarray, pad_: Sequence[int], value: float) -> np.ndarray:
    return constant_pad(x, pad_, value)


@constant_pad_nd.out
def constant_pad_nd_out(out: np.ndarray, x: np.ndarray, pad_: Sequence[int], value: float) -> np.ndarray:
    return write_out(out, constant_pad(x, pad_, value))


def _register_mode_pads() -> None:
    for mode, prefix in (("reflect", "reflection"), ("replicate", "replication")):
        for dims in (1, 2, 3):

            def fn(x: np.ndarray, padding: Ints, _mode: str = mode) -> np.ndarray:
                return mode_pad(x, padding, _mode)

            copying_out(kernel(f"aten::{prefix}_pad{dims}d(Tensor self, SymInt[{2 * dims}] padding) -> Tensor")(fn))
    copying_out(kernel("aten::_pad_circular(Tensor self, SymInt[] pad) -> Tensor")(lambda x, p: mode_pad(x, p, "circular")))


_register_mode_pads()


# ---------------------------------------------------------------------------------------
# Upsampling


def _scale(in_size: int, out_size: int, scale: float | None) -> np.float32:
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(in_size) / np.float32(out_size)


def _nearest_index(in_size: int, out_size: int, scale: float | None, exact: bool = False) -> np.ndarray:
    dst = np.arange(out_size)
    if not exact and out_size == in_size:
        return dst
    if not exact and out_size == 2 * in_size:
        return dst >> 1
    s = _scale(in_size, out_size, scale)
    pos = (dst.astype(np.float32) + np.float32(0.5)) * s if exact else dst.astype(np.float32) * s
    return np.minimum(np.floor(pos).astype(np.int64), in_size - 1)


def _vec_sizes(
    x: np.ndarray,
    output_size: Sequence[int | None],
    scale_factors: Sequence[float] | None,
    n: int,
) -> tuple[list[int], list[float | None]]:
    if output_size is not None:
        return [int(v) for v in output_size], [None] * n
    if scale_factors is None:
        raise ValueError("upsample: either output_size or scale_factors must be given")
    sizes = [int(x.shape[x.ndim - n + i] * float(f)) for i, f in enumerate(scale_factors)]
    return sizes, [float(f) for f in scale_factors]


def upsample_nearest(x: np.ndarray, sizes: Sequence[int], scales: Sequence[float | None], exact: bool = False) -> np.ndarray:
    n = len(sizes)
    for i, (o, s) in enumerate(zip(sizes, scales)):
        axis = x.ndim - n + i
        x = np.take(x, _nearest_index(x.shape[axis], int(o), s, exact), axis=axis)
    return x


@copying_out
@kernel("aten::upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) -> Tensor")
def upsample_nearest2d(
    x: np.ndarray,
    output_size: Sequence[int | None],
    scales_h: float | None,
    scales_w: float | None,
) -> np.ndarray:
    return upsample_nearest(x, output_size, [scales_h, scales_w])


@copying_out
@kernel("aten::upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor")
def upsample_nearest2d_vec(
    x: np.ndarray,
    output_size: Sequence[int | None],
    scale_factors: Sequence[float] | None,
) -> np.ndarray:
    return upsample_nearest(x, *_vec_sizes(x, output_size, scale_factors, 2))


@copying_out
@kernel("aten::upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor")
def upsample_nearest1d(x: np.ndarray, output_size: Sequence[int | None], scales: float | None) -> np.ndarray:
    return upsample_nearest(x, output_size, [scales])


@copying_out
@kernel("aten::upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor")
def upsample_nearest1d_vec(
    x: np.ndarray,
    output_size: Sequence[int | None],
    scale_factors: Sequence[float] | None,
) -> np.ndarray:
    return upsample_nearest(x, *_vec_sizes(x, output_size, scale_factors, 1))


@copying_out
@kernel(
    "aten::_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
    "float? scales_w=None) -> Tensor"
)
def upsample_nearest_exact2d(
    x: np.ndarray,
    output_size: Sequence[int | None],
    scales_h: float | None,
    scales_w: float | None,
) -> np.ndarray:
    return upsample_nearest(x, output_size, [scales_h, scales_w], exact=True)


@copying_out
@kernel("aten::_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor")
def upsample_nearest_exact2d_vec(
    x: np.ndarray,
    output_size: Sequence[int | None],
    scale_factors: Sequence[float] | None,
) -> np.ndarray:
    return upsample_nearest(x, *_vec_sizes(x, output_size, scale_factors, 2), exact=True)


def _linear_axis(x: np.ndarray, axis: int, out_size: int, align_corners: bool, scale: float | None) -> np.ndarray:
    in_size = x.shape[axis]
    dst = np.arange(out_size, dtype=np.float32)
    if align_corners:
        s = np.float32(in_size - 1) / np.float32(out_size - 1) if out_size > 1 else np.float32(0)
        src = dst * s
    else:
        src = np.maximum(_scale(in_size, out_size, scale) * (dst + np.float32(0.5)) - np.float32(0.5), np.float32(0))
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < in_size - 1)
    lam1 = (src - i0.astype(np.float32)).astype(x.dtype)
    shape = [1] * x.ndim
    shape[axis] = out_size
    lam1 = lam1.reshape(shape)
    return np.take(x, i0, axis=axis) * (1 - lam1) + np.take(x, i1, axis=axis) * lam1


def upsample_bilinear(x: np.ndarray, sizes: Sequence[int], align_corners: bool, scales: float | None) -> np.ndarray:
    y = _linear_axis(x, x.ndim - 2, int(sizes[0]), align_corners, scales[0])
    return _linear_axis(y, x.ndim - 1, int(sizes[1]), align_corners, scales[1]).astype(x.dtype, copy=False)


@copying_out
@kernel(
    "aten::upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, "
    "float? scales_h=None, float? scales_w=None) -> Tensor"
)
def upsample_bilinear2d(
    x: np.ndarray,
    output_size: Sequence[int | None],
    align_corners: bool,
    scales_h: float | None,
    scales_w: float | None,
) -> np.ndarray:
    return upsample_bilinear(x, output_size, align_corners, [scales_h, scales_w])


@copying_out
@kernel(
    "aten::upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
    "float[]? scale_factors) -> Tensor"
)
def upsample_bilinear2d_vec(
    x: np.ndarray,
    output_size: Sequence[int | None],
    align_corners: bool,
    scale_factors: Sequence[float] | None,
) -> np.ndarray:
    sizes, scales = _vec_sizes(x, output_size, scale_factors, 2)
    return upsample_bilinear(x, sizes, align_corners, scales)


# ---------------------------------------------------------------------------------------
# Pixel shuffles


@copying_out
@kernel("aten::pixel_shuffle(Tensor self, int upscale_factor) -> Tensor")
def pixel_shuffle(x: np.ndarray, r: int) -> np.ndarray:
    *lead, c, h, w = x.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: {c} channels are not divisible by upscale_factor**2 = {r * r}")
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    y = y.transpose(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return y.copy().reshape(*lead, c // (r * r), h * r, w * r)  # a fresh tensor, even when r == 1


@copying_out
@kernel("aten::pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor")
def pixel_unshuffle(x: np.ndarray, r: int) -> np.ndarray:
    *lead, c, h, w = x.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: spatial size {h}x{w} is not divisible by downscale_factor {r}")
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    k = len(lead)
    y = y.transpose(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return y.copy().reshape(*lead, c * r * r, h // r, w // r)
