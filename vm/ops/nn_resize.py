"""Padding and pixel shuffles: operators that change spatial extent by moving data.
(Interpolation lives in ``nn_upsample``.)

``pad`` takes PyTorch's flat pad list, pairs for the last dimension first
(``[left, right, top, bottom]``), and maps it onto ``np.pad`` modes: constant (negative
widths crop), reflect, replicate (``edge``) and circular (``wrap``).

``pixel_shuffle`` / ``pixel_unshuffle`` are a reshape, a transpose and a copy (the result
never aliases the input).
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
