"""Padding and pixel shuffles: operators that change spatial extent by moving data.
(Interpolation lives in ``nn.upsample``.)

``pad`` takes PyTorch's flat pad list, pairs for the last dimension first
(``[left, right, top, bottom]``), and maps it onto ``np.pad`` modes: constant (negative
widths crop), reflect, replicate (``edge``) and circular (``wrap``).

``pixel_shuffle`` / ``pixel_unshuffle`` are a reshape, a transpose and a copy (the result
never aliases the input).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from vm.ops.nn._util import copying_out, write_out
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
        if x.shape[d] - max(-a, 0) - max(-b, 0) < 0:  # PyTorch crops before it pads
            raise ValueError(f"padding {list(pad)} crops dimension {d} of size {x.shape[d]} below zero")
    crop = tuple(slice(max(-a, 0), x.shape[d] - max(-b, 0)) for d, (a, b) in enumerate(widths))
    x = x[crop]
    grow = [(max(a, 0), max(b, 0)) for a, b in widths]
    return np.pad(x, grow, constant_values=value)


_NP_MODES: dict[str, Literal["reflect", "edge", "wrap"]] = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def mode_pad(x: np.ndarray, pad: Sequence[int], mode: str) -> np.ndarray:
    """Reflect, replicate or circular padding; negative widths crop, as in PyTorch.

    Reflect and replicate pad as if the whole input were there and then crop (a width
    must stay below the size for reflect); circular crops first and then wraps what is
    left, never more than once around.
    """
    widths = _pairs(x, pad)
    for d, (a, b) in enumerate(widths):
        size = x.shape[d]
        if mode == "reflect" and max(a, b) >= size:
            raise ValueError(f"reflect padding {max(a, b)} is too large for dimension {d} of size {size}")
        if mode == "circular" and max(a, b) > size:
            raise ValueError(f"circular padding {max(a, b)} wraps around dimension {d} of size {size} more than once")
        if size + a + b < 0:
            raise ValueError(f"{mode} padding {list(pad)} shrinks dimension {d} of size {size} below zero")
    padded = [x.shape[d] + a + b for d, (a, b) in enumerate(widths) if d >= x.ndim - len(pad) // 2]
    if mode != "circular" and padded and max(padded) < 1:  # PyTorch refuses only when every padded dim is empty
        raise ValueError(f"{mode} padding {list(pad)} leaves every padded dimension of {list(x.shape)} empty")
    grow = [(max(a, 0), max(b, 0)) for a, b in widths]
    if mode != "circular":
        padded = np.pad(x, grow, mode=_NP_MODES[mode])
        return padded[tuple(slice(max(-a, 0), n - max(-b, 0)) for n, (a, b) in zip(padded.shape, widths))]
    x = x[tuple(slice(max(-a, 0), x.shape[d] - max(-b, 0)) for d, (a, b) in enumerate(widths))]
    for d, (a, b) in enumerate(grow):
        if max(a, b) > x.shape[d]:
            raise ValueError(f"circular padding {max(a, b)} is larger than dimension {d} once cropped to {x.shape[d]}")
    return np.pad(x, grow, mode="wrap")


@copying_out
@kernel('aten::pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None) -> Tensor')
def pad(x: np.ndarray, pad_: Sequence[int], mode: str, value: float | None) -> np.ndarray:
    """``F.pad``'s operator.  Non-constant modes pad the last 1-3 dims of an input with
    one or two more dims (PyTorch's rule), take no fill value and no bool tensor except
    circular."""
    if len(pad_) % 2 or len(pad_) > 2 * x.ndim:
        raise ValueError(f"padding length {len(pad_)} must be even and at most twice the rank {x.ndim}")
    if mode == "constant":
        return constant_pad(x, pad_, 0 if value is None else value)
    if mode not in _NP_MODES:
        raise ValueError(f"unknown padding mode {mode!r}: expected constant, reflect, replicate or circular")
    if value:
        raise ValueError(f"padding mode {mode!r} doesn't take a value argument")
    dims = len(pad_) // 2
    if dims > 3 or x.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"{mode} padding of {dims} dims needs a {dims + 1}-d or {dims + 2}-d input, got {x.ndim}-d"
        )
    if x.dtype == np.bool_ and mode != "circular":
        raise TypeError(f"{mode} padding is not implemented for bool tensors")
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
