"""Interpolation: every ``aten::upsample_*`` / ``_upsample_*_aa`` operator that a scripted
``F.interpolate`` can reach (nearest, nearest-exact, linear/bilinear/trilinear, bicubic,
and the antialiased bilinear/bicubic/lanczos), in their sized and ``.vec`` overloads.

A scripted ``F.interpolate`` holds a branch for every mode and rank, so all of these must
resolve even when a model only ever takes one branch.

Every mode is separable: resampling the last ``n`` axes is ``n`` one-axis resamplings.
Nearest modes gather with an index array.  The other modes build, per axis, a small
dense matrix ``W (out, in)`` of interpolation weights and contract the axis with it
(``tensordot``).  The weights reproduce PyTorch's index arithmetic in float32, including
its rounding:

- nearest: source ``min(floor(dst * scale), in - 1)``; nearest-exact uses ``dst + 0.5``;
  ``scale`` is ``1 / scale_factor`` when one is given, else ``in / out``;
- linear: source ``scale * (dst + 0.5) - 0.5`` clamped at 0 (``dst * (in-1)/(out-1)``
  with ``align_corners``), blending the two neighbours;
- bicubic: the same source without the clamp, Keys' cubic with ``A = -0.75`` over four
  neighbours clamped to the edge;
- antialiased (PIL's resampling, as PyTorch's ``_aa`` kernels): each output averages the
  inputs within ``support = size/2 * max(scale, 1)`` of its centre with a triangle,
  cubic (``A = -0.5``) or Lanczos-3 filter stretched by the scale, normalised to sum 1.

Inputs are floating point, or uint8 where PyTorch has uint8 kernels (nearest, 2-d
bilinear and bicubic, antialiased): those compute in float32 and round to nearest (PyTorch
accumulates in fixed point, so a value halfway between two integers may round the other
way); other integer and bool tensors are refused, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vm.ops.nn._util import copying_out
from vm.ops.registry import kernel

Scales = Sequence[float | None]
F32 = np.float32


def _scale(in_size: int, out_size: int, scale: float | None) -> np.float32:
    if scale is not None and scale > 0:
        return F32(1.0 / scale)
    return F32(in_size) / F32(out_size)


def _area_scale(in_size: int, out_size: int, align_corners: bool, scale: float | None) -> np.float32:
    if align_corners:
        return F32(in_size - 1) / F32(out_size - 1) if out_size > 1 else F32(0)
    return _scale(in_size, out_size, scale)


def _nearest_index(in_size: int, out_size: int, scale: float | None, exact: bool, shortcut: bool) -> np.ndarray:
    """``shortcut``: PyTorch's 2-d nearest kernel maps equal and doubled sizes directly,
    whatever scale it was given; its 1-d and 3-d kernels always use the scale."""
    dst = np.arange(out_size)
    if shortcut and out_size == in_size:
        return dst
    if shortcut and out_size == 2 * in_size:
        return dst >> 1
    s = _scale(in_size, out_size, scale)
    pos = (dst.astype(F32) + F32(0.5)) * s if exact else dst.astype(F32) * s
    return np.minimum(np.floor(pos).astype(np.int64), in_size - 1)


def _source(in_size: int, out_size: int, align_corners: bool, scale: float | None, clamp: bool) -> np.ndarray:
    dst = np.arange(out_size, dtype=F32)
    s = _area_scale(in_size, out_size, align_corners, scale)
    if align_corners:
        return dst * s
    src = s * (dst + F32(0.5)) - F32(0.5)
    return np.maximum(src, F32(0)) if clamp else src


def _linear_weights(in_size: int, out_size: int, align_corners: bool, scale: float | None) -> np.ndarray:
    src = _source(in_size, out_size, align_corners, scale, clamp=True)
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < in_size - 1)
    lam1 = src - i0.astype(F32)
    w = np.zeros((out_size, in_size), F32)
    rows = np.arange(out_size)
    np.add.at(w, (rows, i0), F32(1) - lam1)
    np.add.at(w, (rows, i1), lam1)
    return w


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0)).astype(F32)


def _bicubic_weights(in_size: int, out_size: int, align_corners: bool, scale: float | None) -> np.ndarray:
    src = _source(in_size, out_size, align_corners, scale, clamp=False)
    base = np.floor(src).astype(np.int64)
    t = src - base.astype(F32)
    w = np.zeros((out_size, in_size), F32)
    rows = np.arange(out_size)
    for k in range(4):  # neighbours base-1 .. base+2, clamped to the edge
        np.add.at(w, (rows, np.clip(base - 1 + k, 0, in_size - 1)), _cubic(t - F32(k - 1), -0.75))
    return w


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(F32(1) - np.abs(x), F32(0))


def _lanczos3(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return np.where(np.abs(x) < 3, np.sinc(x) * np.sinc(x / 3), 0).astype(F32)


_AA_FILTERS: dict[str, tuple[float, Callable[[np.ndarray], np.ndarray]]] = {
    "bilinear": (2.0, _triangle),
    "bicubic": (4.0, lambda x: _cubic(x, -0.5)),
    "lanczos": (6.0, _lanczos3),
}


def _aa_weights(kind: str, in_size: int, out_size: int, align_corners: bool, scale: float | None) -> np.ndarray:
    size, filt = _AA_FILTERS[kind]
    s = float(_area_scale(in_size, out_size, align_corners, scale))
    support = size / 2 * s if s >= 1.0 else size / 2
    invscale = 1.0 / s if s >= 1.0 else 1.0
    w = np.zeros((out_size, in_size), F32)
    for i in range(out_size):  # one row of weights per output position (not per pixel)
        center = s * (i + 0.5)  # align_corners only changes the scale
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), in_size)
        taps = filt(((np.arange(lo, hi) - center + 0.5) * invscale).astype(F32))
        total = taps.sum()
        w[i, lo:hi] = taps / total if total != 0 else taps
    return w


def _apply(x: np.ndarray, axis: int, w: np.ndarray) -> np.ndarray:
    moved = np.tensordot(x, w.astype(x.dtype, copy=False), axes=([axis], [1]))
    return np.moveaxis(moved, -1, axis)


def _sizes(x: np.ndarray, n: int, output_size: Sequence[int] | None, scale_factors: Sequence[float] | None) -> tuple[list[int], list[float | None]]:
    """PyTorch's ``.vec`` rule: the given sizes, or ``floor(in * factor)`` with the factors
    also passed on as scales."""
    if output_size is not None:
        return [int(v) for v in output_size], [None] * n
    if scale_factors is None:
        raise ValueError("upsample: either output_size or scale_factors must be given")
    sizes = [int(x.shape[x.ndim - n + i] * float(f)) for i, f in enumerate(scale_factors)]
    return sizes, [float(f) for f in scale_factors]


def resample(x: np.ndarray, mode: str, sizes: Sequence[int], scales: Scales, align_corners: bool = False) -> np.ndarray:
    """Resize the last ``len(sizes)`` axes of ``x`` with ``mode`` (see the module essay)."""
    n = len(sizes)
    if any(s <= 0 for s in sizes) or any(d <= 0 for d in x.shape[x.ndim - n :]):
        raise ValueError(f"upsample: input and output sizes must be positive, got {list(x.shape)} -> {list(sizes)}")
    if x.dtype.kind != "f":
        # PyTorch: floats everywhere; uint8 for nearest, 2-d bilinear/bicubic and antialiased
        if x.dtype != np.uint8 or (mode == "linear" and n != 2):
            raise TypeError(f"upsample ({mode}, {n}-d) is not implemented for {x.dtype} tensors")
        if mode not in ("nearest", "nearest-exact"):
            # PyTorch's uint8 kernels resample the width, then the height, each pass
            # rounded to nearest and saturated to 0..255 (cubic lobes overshoot)
            for i in reversed(range(n)):
                keep = [x.shape[x.ndim - n + j] if j != i else sizes[j] for j in range(n)]
                one = [s if j == i else None for j, s in enumerate(scales)]
                y = resample(x.astype(F32), mode, keep, one, align_corners)
                x = np.clip(np.floor(y + F32(0.5)), 0, 255).astype(np.uint8)
            return x
    for i, (out, scale) in enumerate(zip(sizes, scales)):
        axis = x.ndim - n + i
        size = x.shape[axis]
        if mode in ("nearest", "nearest-exact"):
            exact = mode == "nearest-exact"
            x = np.take(x, _nearest_index(size, int(out), scale, exact, n == 2 and not exact), axis=axis)
        elif mode == "linear":
            x = _apply(x, axis, _linear_weights(size, int(out), align_corners, scale))
        elif mode == "bicubic":
            x = _apply(x, axis, _bicubic_weights(size, int(out), align_corners, scale))
        else:
            x = _apply(x, axis, _aa_weights(mode.removesuffix("-aa"), size, int(out), align_corners, scale))
    return np.ascontiguousarray(x)


# ---------------------------------------------------------------------------------------
# Registrations: name, rank, mode, whether it takes align_corners, scale argument names

_OPS = [
    ("upsample_nearest1d", 1, "nearest", False, ["scales"]),
    ("upsample_nearest2d", 2, "nearest", False, ["scales_h", "scales_w"]),
    ("upsample_nearest3d", 3, "nearest", False, ["scales_d", "scales_h", "scales_w"]),
    ("_upsample_nearest_exact1d", 1, "nearest-exact", False, ["scales"]),
    ("_upsample_nearest_exact2d", 2, "nearest-exact", False, ["scales_h", "scales_w"]),
    ("_upsample_nearest_exact3d", 3, "nearest-exact", False, ["scales_d", "scales_h", "scales_w"]),
    ("upsample_linear1d", 1, "linear", True, ["scales"]),
    ("upsample_bilinear2d", 2, "linear", True, ["scales_h", "scales_w"]),
    ("upsample_trilinear3d", 3, "linear", True, ["scales_d", "scales_h", "scales_w"]),
    ("upsample_bicubic2d", 2, "bicubic", True, ["scales_h", "scales_w"]),
    ("_upsample_bilinear2d_aa", 2, "bilinear-aa", True, ["scales_h", "scales_w"]),
    ("_upsample_bicubic2d_aa", 2, "bicubic-aa", True, ["scales_h", "scales_w"]),
    ("_upsample_lanczos2d_aa", 2, "lanczos-aa", True, ["scales_h", "scales_w"]),
]


def _register(name: str, n: int, mode: str, corners: bool, scale_names: list[str]) -> None:
    ac = "bool align_corners, " if corners else ""
    scales = ", ".join(f"float? {s}=None" for s in scale_names)

    # rest: (align_corners,) when the mode has it, then the float? scales (sized) or the
    # float[]? scale_factors (vec), as the schema gives them
    def sized(x: np.ndarray, output_size: Sequence[int], *rest: Any) -> np.ndarray:
        align = bool(rest[0]) if corners else False
        return resample(x, mode, output_size, list(rest[1:] if corners else rest), align)

    def vec(x: np.ndarray, output_size: Sequence[int] | None, *rest: Any) -> np.ndarray:
        align = bool(rest[0]) if corners else False
        sizes, scale_values = _sizes(x, n, output_size, rest[-1])
        return resample(x, mode, sizes, scale_values, align)

    sized.__name__, vec.__name__ = name, f"{name}_vec"
    copying_out(kernel(f"aten::{name}(Tensor self, SymInt[{n}] output_size, {ac}{scales}) -> Tensor")(sized))
    copying_out(
        kernel(f"aten::{name}.vec(Tensor input, SymInt[]? output_size, {ac}float[]? scale_factors) -> Tensor")(vec)
    )


for _op in _OPS:
    _register(*_op)
