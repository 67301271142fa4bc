"""fbgemm's int8 kernels that sum pairs of products into a saturating int16, emulated.

fbgemm multiplies uint8 activations by int8 weights with ``vpmaddubsw`` in two places, which
adds the two products of each pair of reduction indices (2i, 2i+1) into an int16 with
saturation before they are widened and summed in int32:

- its GEMM (linear layers, and convolutions through im2col) on a CPU without AVX-512 VNNI
  (``vm.ops.quantized.cpu``'s ``"avx2"`` and ``"avx512"``; with VNNI it adds exactly);
- its depthwise convolution kernel, on every CPU (VNNI included), pairing kernel positions.

The zero points' corrections are exact integers, applied after, as fbgemm's row and column
offsets are:

    acc = sum_pairs clip(x[2i] w[2i] + x[2i+1] w[2i+1], -32768, 32767)
          - zx * (sum_k w - zw * K) - zw * sum_k x

A pair can saturate only when ``(x[2i] + x[2i+1]) * max|w| > 32767``, which needs the full
8-bit activation range (fbgemm's own qconfig halves it with ``reduce_range``, so fbgemm-
calibrated models never get here); for a GEMM only the rows that can are recomputed, 16 at a
time, over the exact accumulator the caller computed.

The reduction is laid out as fbgemm lays it out: a linear layer's input features in order; a
convolution's im2col row as (kernel row, kernel column, input channel) over the NHWC
activations, padding filled with the activation's zero point, one GEMM per group; a depthwise
convolution's kernel positions in row-major order, per channel.

Which kernel a convolution takes (``path``; measured against torch 2.13 forced onto each
kernel with ``FBGEMM_ENABLE_INSTRUCTIONS``, tests/data/fbgemm_kernels.npz):
``"depthwise"`` for groups = input channels (any channel multiplier) with "same" padding
``(k - 1) / 2``, dilation 1 and stride 1 or 2; ``"groupwise"``, which adds exactly, for 2, 4,
8 or 16 input and output channels per group, 3x3(x3) kernels, padding 1, dilation 1, stride 1
or 2, and at least as many groups as fbgemm packs together, ``max(W / out_per_group /
max(in_per_group, 4), 1)`` for a vector of W bytes: 64 on an AVX-512 CPU, 32 on AVX2 (the
AVX2 width is read from fbgemm's packing rule, not measured: no AVX2-only CPU was at hand);
``"im2col"`` otherwise.  Transposed convolutions are not emulated (irvm adds them exactly);
their pairs follow another layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vm.core.quantized import QTensor

_ROWS = 16  # rows recomputed per step (the pair products of 16 rows stay small)


def _weight_zero_points(w: QTensor, channels: int) -> np.ndarray:
    _, zp = w.channel_params(2)
    return np.broadcast_to(np.asarray(zp).reshape(-1), (channels,)).astype(np.int64)


def pair_saturated(xi: np.ndarray, wi: np.ndarray, zx: int, wzp: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """The accumulator of ``xi`` (M, K) raw uint8 rows times ``wi`` (N, K) raw int8 weights,
    ``exact`` (M, N) with the rows that can saturate recomputed (a copy where any does)."""
    xi, wi = xi.astype(np.int32), wi.astype(np.int32)
    k = xi.shape[1]
    if k % 2:
        xi, wi = np.pad(xi, ((0, 0), (0, 1))), np.pad(wi, ((0, 0), (0, 1)))
    wmax = int(np.abs(wi).max()) if wi.size else 0
    pair_sum = xi[:, 0::2] + xi[:, 1::2]
    rows = np.nonzero(pair_sum.max(axis=1, initial=0) * wmax > 32767)[0]
    if rows.size == 0:
        return exact
    out = np.array(exact, dtype=np.float64)
    col = wi.sum(axis=1, dtype=np.int64) - wzp * k
    for start in range(0, rows.size, _ROWS):
        r = rows[start : start + _ROWS]
        pairs = xi[r, None, 0::2] * wi[None, :, 0::2] + xi[r, None, 1::2] * wi[None, :, 1::2]
        raw = np.clip(pairs, -32768, 32767).sum(axis=2, dtype=np.int64)
        row = xi[r].sum(axis=1, dtype=np.int64)[:, None]
        out[r] = raw - zx * col[None, :] - row * wzp[None, :]
    return out


def linear(x: QTensor, w: QTensor, exact: np.ndarray) -> np.ndarray:
    """A linear layer's accumulator (``exact``: (..., out features)) as fbgemm's AVX2 GEMM."""
    flat = exact.reshape(-1, exact.shape[-1])
    xi = x.int_repr.reshape(-1, x.shape[-1])
    got = pair_saturated(xi, w.int_repr.reshape(w.shape[0], -1), int(x.zero_point),
                         _weight_zero_points(w, w.shape[0]), flat)
    return exact if got is flat else got.reshape(exact.shape)


def _could_saturate(x: QTensor, w: QTensor) -> bool:
    xmax = int(x.int_repr.max()) if x.int_repr.size else 0
    wmax = int(np.abs(w.int_repr.astype(np.int32)).max()) if w.int_repr.size else 0
    return 2 * xmax * wmax > 32767


def path(
    channels: int, w_shape: Sequence[int], stride: Sequence[int], padding: Sequence[int],
    dilation: Sequence[int], groups: int, kernel_name: str,
) -> str:
    """The kernel fbgemm runs this convolution on (module docstring): ``"depthwise"``,
    ``"groupwise"`` or ``"im2col"``."""
    oc, icg, kernel = w_shape[0], w_shape[1], list(w_shape[2:])
    plain = all(d == 1 for d in dilation) and all(s in (1, 2) for s in stride)
    if groups == channels and icg == 1 and oc % groups == 0:
        same = all(p == (k - 1) // 2 for p, k in zip(padding, kernel))
        return "depthwise" if plain and same else "im2col"
    ocg = oc // groups
    width = 64 if kernel_name in ("avx512", "vnni") else 32
    if (plain and icg == ocg and icg in (2, 4, 8, 16) and all(k == 3 for k in kernel)
            and all(p == 1 for p in padding) and groups >= max(width // ocg // max(icg, 4), 1)):
        return "groupwise"
    return "im2col"


def _windows(xp: np.ndarray, kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int],
             out_sizes: Sequence[int]) -> list[np.ndarray]:
    """The padded activations ``xp`` (N, *spatial, C) seen through each kernel offset, in
    row-major order of the offsets: one (N, *out_sizes, C) view each."""
    views = []
    for offset in np.ndindex(*kernel):
        index = (slice(None),) + tuple(
            slice(o * d, o * d + (size - 1) * s + 1, s) for o, d, s, size in zip(offset, dilation, stride, out_sizes)
        )
        views.append(xp[index])
    return views


def _depthwise(x: QTensor, w: QTensor, xp: np.ndarray, exact: np.ndarray, stride: Sequence[int],
               dilation: Sequence[int], out_sizes: Sequence[int]) -> np.ndarray:
    """fbgemm's depthwise kernel: per output channel, its kernel positions paired in row-major
    order, each pair saturated (on every CPU).  Only the channels where a pair can saturate
    (the largest input of the channel times its largest pair of weights) are recomputed."""
    oc, kernel = w.shape[0], w.shape[2:]
    multiplier = oc // x.shape[1]
    k = int(np.prod(kernel))
    wi = w.int_repr.reshape(oc, k).astype(np.int32)
    if k % 2:
        wi = np.pad(wi, ((0, 0), (0, 1)))
    x_max = xp.reshape(-1, xp.shape[-1]).max(axis=0).astype(np.int64)  # per input channel
    pair_w = (np.abs(wi[:, 0::2]) + np.abs(wi[:, 1::2])).max(axis=1)
    chosen = np.nonzero(x_max[np.arange(oc) // multiplier] * pair_w > 32767)[0]
    if chosen.size == 0:
        return exact
    views = _windows(xp, kernel, stride, dilation, out_sizes)
    wzp = _weight_zero_points(w, oc)
    col = wi.sum(axis=1, dtype=np.int64) - wzp * k
    acc = np.moveaxis(np.array(exact, dtype=np.float64), 1, -1)  # N, *out, OC
    step = 32  # output channels at a time: the pair products stay small
    for lo in range(0, chosen.size, step):
        sel = chosen[lo : lo + step]
        src = sel // multiplier
        patch = np.stack([v[..., src].astype(np.int32) for v in views], axis=-1)  # N, *out, c, k
        if k % 2:
            patch = np.concatenate([patch, np.zeros_like(patch[..., :1])], axis=-1)
        pairs = patch[..., 0::2] * wi[sel, 0::2] + patch[..., 1::2] * wi[sel, 1::2]
        raw = np.clip(pairs, -32768, 32767).sum(axis=-1, dtype=np.int64)
        row = patch.sum(axis=-1, dtype=np.int64)
        acc[..., sel] = raw - int(x.zero_point) * col[sel] - row * wzp[sel]
    return np.moveaxis(acc, -1, 1)


def conv(
    x: QTensor, w: QTensor, exact: np.ndarray, stride: Sequence[int], padding: Sequence[int],
    dilation: Sequence[int], groups: int, kernel_name: str,
) -> np.ndarray:
    """A convolution's accumulator (``exact``: (N, OC, *spatial)) as fbgemm computes it with
    ``kernel_name``, for 2-d and 3-d convolutions over ``x`` (N, C, *spatial)."""
    oc, icg = w.shape[0], w.shape[1]
    way = path(x.shape[1], w.shape, stride, padding, dilation, groups, kernel_name)
    if way == "groupwise" or (way == "im2col" and kernel_name == "vnni") or not _could_saturate(x, w):
        return exact
    xi = np.moveaxis(x.int_repr, 1, -1)  # N, *spatial, C
    pad = [(0, 0), *((p, p) for p in padding), (0, 0)]
    xi = np.pad(xi, pad, constant_values=np.asarray(x.zero_point, xi.dtype))
    kernel = w.shape[2:]
    out_sizes = exact.shape[2:]
    if way == "depthwise":
        return _depthwise(x, w, xi, exact, stride, dilation, out_sizes)
    n = x.shape[0]
    wzp = _weight_zero_points(w, oc)
    result = exact
    ocg = oc // groups
    for g in range(groups):
        # im2col rows in (kernel position..., input channel) order
        cols = _windows(xi[..., g * icg : (g + 1) * icg], kernel, stride, dilation, out_sizes)
        patches = np.stack(cols, axis=-2).reshape(n * int(np.prod(out_sizes)), -1)
        wg = w.int_repr[g * ocg : (g + 1) * ocg]
        wrows = np.moveaxis(wg, 1, -1).reshape(ocg, -1)
        part = np.moveaxis(exact[:, g * ocg : (g + 1) * ocg], 1, -1).reshape(patches.shape[0], ocg)
        got = pair_saturated(patches, wrows, int(x.zero_point), wzp[g * ocg : (g + 1) * ocg], part)
        if got is part:
            continue
        if result is exact:
            result = np.array(exact, dtype=np.float64)
        result[:, g * ocg : (g + 1) * ocg] = np.moveaxis(got.reshape(n, *out_sizes, ocg), -1, 1)
    return result
