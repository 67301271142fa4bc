"""Convolutions: ``conv1d/2d/3d``, ``_convolution``, ``convolution``, ``conv_transpose1d/2d``.

The forward convolution is im2col plus one BLAS call.  The zero-padded input is viewed,
without copying, as a window per output position (``sliding_window_view`` over the
spatial axes, then strided slices for stride and dilation); that view is rearranged and
copied once into a column matrix ``(N, groups, C/groups * prod(kernel), prod(out))`` and
multiplied by the weight reshaped to ``(groups, O/groups, C/groups * prod(kernel))``; a
1x1 convolution with stride 1 skips the window view and multiplies the input itself.
The product already has the NCHW layout, so no transpose follows: ``np.matmul`` batches
over the batch and group axes and each slice is one sgemm.  Depthwise convolution (one
input channel per group) would be many tiny matmuls, so it takes other routes, chosen by
shape: on planes 16 or more outputs wide at stride 1, a sum over the kernel taps of the
shifted input times a per-channel weight, each tap one multiply-add over whole flattened
planes (``_depthwise_flat``); on smaller planes, windows copied channels-last into
columns, scaled and summed over the taps (``_depthwise_channels_last``); otherwise the
taps over blocks of channels.  No path loops over pixels in Python.

The transposed convolution is the adjoint: one matmul computes, for every input
position, its contribution to each kernel tap (``W^T @ x``), and a loop over the taps (9
for a 3x3 kernel) scatter-adds those planes into the strided output ("col2im"), which is
then cropped by ``padding``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from vm.ops.nn._util import check_out, copying_out, expand, write_out
from vm.ops.registry import kernel

Ints = Sequence[int]


def _batched(x: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, bool]:
    """``x`` with a batch axis (unbatched input is ``(C, *spatial)``), and whether one was added."""
    if x.ndim == weight.ndim - 1:
        return x[None], True
    if x.ndim != weight.ndim:
        raise ValueError(f"expected a {weight.ndim - 1}-D or {weight.ndim}-D input, got {x.ndim}-D")
    return x, False


def _out_shape(spatial: Ints, kernel_: Ints, stride: Ints, padding: Ints, dilation: Ints) -> tuple[int, ...]:
    shape = tuple(
        (size + 2 * p - d * (k - 1) - 1) // s + 1
        for size, k, s, p, d in zip(spatial, kernel_, stride, padding, dilation)
    )
    if any(o <= 0 for o in shape):
        raise ValueError(f"convolution output size {list(shape)} is too small (input {list(spatial)})")
    return shape


def _pad_spatial(x: np.ndarray, before: Ints, after: Ints) -> np.ndarray:
    """``x`` zero-padded on its spatial axes (a fresh array; ``np.pad`` costs ~30 µs more)."""
    if not any(before) and not any(after):
        return x
    n, c, *spatial = x.shape
    xp = np.zeros((n, c, *(b + size + a for b, size, a in zip(before, spatial, after))), x.dtype)
    xp[(slice(None), slice(None)) + tuple(slice(b, b + size) for b, size in zip(before, spatial))] = x
    return xp


def _windows(xp: np.ndarray, kernel_: Ints, stride: Ints, dilation: Ints, out: Ints) -> np.ndarray:
    """A view ``(N, C, *out, *kernel)`` of the padded input: element ``[n, c, o.., k..]`` is
    ``xp[n, c, o*stride + k*dilation ...]``."""
    nsp = len(kernel_)
    span = [d * (k - 1) + 1 for k, d in zip(kernel_, dilation)]
    view = sliding_window_view(xp, span, axis=tuple(range(2, 2 + nsp)))
    index = (
        (slice(None), slice(None))
        + tuple(slice(0, o * s, s) for o, s in zip(out, stride))
        + tuple(slice(None, None, d) for d in dilation)
    )
    return view[index]


def conv_nd(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    groups: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """N-d convolution (cross-correlation) with symmetric zero ``padding``; see the module essay."""
    nsp = weight.ndim - 2
    stride, padding, dilation = (expand(v, nsp) for v in (stride, padding, dilation))
    x, unbatched = _batched(x, weight)
    n, c = x.shape[:2]
    o, cg, *kernel_ = weight.shape
    if c != cg * groups or o % groups:
        raise ValueError(
            f"weight {list(weight.shape)} with groups={groups} does not fit an input of {c} channels"
        )
    dtype = np.result_type(x, weight)
    oshape = _out_shape(x.shape[2:], kernel_, stride, padding, dilation)
    full = (n, o, *oshape)
    if out is not None and not out.flags.c_contiguous:  # matmul could not write through a copy
        return write_out(out, conv_nd(x[0] if unbatched else x, weight, bias, stride, padding, dilation, groups))
    if out is not None:
        check_out(out, full[1:] if unbatched else full, dtype)
        result = out.reshape(full)
    else:
        result = np.empty(full, dtype)
    if cg == 1 and groups > 1:
        _depthwise(x, weight, stride, padding, dilation, oshape, result)
        if bias is not None:
            result += bias.reshape((o,) + (1,) * nsp)
        return result[0] if unbatched and out is None else (out if out is not None else result)
    xp = _pad_spatial(x, padding, padding)
    if all(k == 1 for k in kernel_) and all(s == 1 for s in stride):
        # a pointwise convolution is a matmul on the input itself: no window view, no copy
        cols = np.ascontiguousarray(xp).reshape(n, groups, cg, -1)
        np.matmul(weight.reshape(groups, o // groups, cg), cols, out=result.reshape(n, groups, o // groups, -1))
    else:
        win = _windows(xp, kernel_, stride, dilation, oshape)  # (N, C, *out, *k)
        perm = (0, 1, *range(2 + nsp, 2 + 2 * nsp), *range(2, 2 + nsp))
        cols = win.transpose(perm).reshape(n, groups, cg * int(np.prod(kernel_)), -1)
        w = weight.reshape(groups, o // groups, -1)
        np.matmul(w, cols, out=result.reshape(n, groups, o // groups, -1))
    if bias is not None:
        result += bias.reshape((o,) + (1,) * nsp)
    return result[0] if unbatched and out is None else (out if out is not None else result)


def _depthwise(
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
    xp = _pad_spatial(x, padding, padding)
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


def _same_padding(x: np.ndarray, weight: np.ndarray, stride: Ints, dilation: Ints) -> tuple[np.ndarray, int]:
    """Pad ``x`` so a stride-1 convolution keeps its size ('same'); odd totals go right."""
    nsp = weight.ndim - 2
    if any(s != 1 for s in expand(stride, nsp)):
        raise ValueError("padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for d, k in zip(expand(dilation, nsp), weight.shape[2:])]
    before = [t // 2 for t in total]
    after = [t - b for t, b in zip(total, before)]
    xb, unbatched = _batched(x, weight)
    padded = _pad_spatial(xb, before, after)
    return (padded[0] if unbatched else padded), 0


def conv_padding_str(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: str,
    dilation: Ints,
    groups: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    if padding == "valid":
        return conv_nd(x, weight, bias, stride, (0,), dilation, groups, out)
    if padding == "same":
        xp, _ = _same_padding(x, weight, stride, dilation)
        return conv_nd(xp, weight, bias, stride, (0,), dilation, groups, out)
    raise ValueError(f"invalid padding string {padding!r}: expected 'same' or 'valid'")


def conv_transpose_nd(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    output_padding: Ints,
    groups: int,
    dilation: Ints,
) -> np.ndarray:
    """N-d transposed convolution; ``weight`` is ``(C_in, C_out/groups, *kernel)``."""
    nsp = weight.ndim - 2
    stride, padding, output_padding, dilation = (
        expand(v, nsp) for v in (stride, padding, output_padding, dilation)
    )
    x, unbatched = _batched(x, weight)
    n, c, *spatial = x.shape
    cin, og, *kernel_ = weight.shape
    if c != cin or cin % groups:
        raise ValueError(f"weight {list(weight.shape)} with groups={groups} does not fit {c} input channels")
    full = [(i - 1) * s + d * (k - 1) + 1 + op for i, s, d, k, op in zip(spatial, stride, dilation, kernel_, output_padding)]
    oshape = [f - 2 * p for f, p in zip(full, padding)]
    if any(v <= 0 for v in oshape):
        raise ValueError(f"transposed convolution output size {oshape} is too small")
    dtype = np.result_type(x, weight)
    cg = cin // groups
    w = weight.reshape(groups, cg, og * int(np.prod(kernel_))).transpose(0, 2, 1)  # (g, og*K, cg)
    cols = np.matmul(w, x.reshape(n, groups, cg, -1))  # (N, g, og*K, L)
    cols = cols.reshape(n, groups * og, *kernel_, *spatial)
    acc = np.zeros((n, groups * og, *full), dtype)
    for tap in itertools.product(*(range(k) for k in kernel_)):
        index = (slice(None), slice(None)) + tuple(
            slice(t * d, t * d + (i - 1) * s + 1, s) for t, d, s, i in zip(tap, dilation, stride, spatial)
        )
        acc[index] += cols[(slice(None), slice(None)) + tap]
    crop = (slice(None), slice(None)) + tuple(slice(p, p + o) for p, o in zip(padding, oshape))
    result = np.ascontiguousarray(acc[crop])
    if bias is not None:
        result += bias.reshape((-1,) + (1,) * nsp)
    return result[0] if unbatched else result


# ---------------------------------------------------------------------------------------
# Registrations


def _register_conv(dims: int) -> None:
    zeros, ones = [0] * dims, [1] * dims
    base = f"Tensor input, Tensor weight, Tensor? bias=None, SymInt[{dims}] stride={ones}"
    tail = f"SymInt[{dims}] dilation={ones}, SymInt groups=1) -> Tensor"
    name = f"aten::conv{dims}d"

    @kernel(f"{name}({base}, SymInt[{dims}] padding={zeros}, {tail}")
    def conv(
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> np.ndarray:
        return conv_nd(x, weight, bias, stride, padding, dilation, groups)

    @conv.out
    def conv_out(
        out: np.ndarray,
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        stride: Ints,
        padding: Ints,
        dilation: Ints,
        groups: int,
    ) -> np.ndarray:
        return conv_nd(x, weight, bias, stride, padding, dilation, groups, out)

    @kernel(f'{name}.padding({base}, str padding="valid", {tail}')
    def conv_str(
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        stride: Ints,
        padding: str,
        dilation: Ints,
        groups: int,
    ) -> np.ndarray:
        return conv_padding_str(x, weight, bias, stride, padding, dilation, groups)

    @conv_str.out
    def conv_str_out(
        out: np.ndarray,
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        stride: Ints,
        padding: str,
        dilation: Ints,
        groups: int,
    ) -> np.ndarray:
        return conv_padding_str(x, weight, bias, stride, padding, dilation, groups, out)


for _dims in (1, 2, 3):
    _register_conv(_dims)


def _convolution(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    transposed: bool,
    output_padding: Ints,
    groups: int,
) -> np.ndarray:
    if transposed:
        return conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation)
    return conv_nd(x, weight, bias, stride, padding, dilation, groups)


@copying_out
@kernel(
    "aten::_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
    "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, "
    "bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor"
)
def underscore_convolution(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    transposed: bool,
    output_padding: Ints,
    groups: int,
    *_flags: bool,
) -> np.ndarray:
    """What traced graphs emit for every nn.ConvNd; the trailing backend flags are ignored."""
    return _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


@copying_out
@kernel(
    "aten::_convolution.deprecated(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, "
    "SymInt[] padding, SymInt[] dilation, bool transposed, int[] output_padding, SymInt groups, "
    "bool benchmark, bool deterministic, bool cudnn_enabled) -> Tensor"
)
def underscore_convolution_deprecated(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    transposed: bool,
    output_padding: Ints,
    groups: int,
    *_flags: bool,
) -> np.ndarray:
    return _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


@copying_out
@kernel(
    "aten::_convolution_mode(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, str padding, "
    "SymInt[] dilation, SymInt groups) -> Tensor"
)
def convolution_mode(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: str,
    dilation: Ints,
    groups: int,
) -> np.ndarray:
    """What a traced ``nn.ConvNd(padding="same"/"valid")`` records."""
    return conv_padding_str(x, weight, bias, stride, padding, dilation, groups)


@copying_out
@kernel(
    "aten::convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
    "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor"
)
def convolution(
    x: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray | None,
    stride: Ints,
    padding: Ints,
    dilation: Ints,
    transposed: bool,
    output_padding: Ints,
    groups: int,
) -> np.ndarray:
    return _convolution(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


def _register_conv_transpose(dims: int) -> None:
    zeros, ones = [0] * dims, [1] * dims
    suffix = ".input" if dims == 2 else ""

    @kernel(
        f"aten::conv_transpose{dims}d{suffix}(Tensor input, Tensor weight, Tensor? bias=None, "
        f"SymInt[{dims}] stride={ones}, SymInt[{dims}] padding={zeros}, SymInt[{dims}] output_padding={zeros}, "
        f"SymInt groups=1, SymInt[{dims}] dilation={ones}) -> Tensor"
    )
    def conv_transpose(
        x: np.ndarray,
        weight: np.ndarray,
        bias: np.ndarray | None,
        stride: Ints,
        padding: Ints,
        output_padding: Ints,
        groups: int,
        dilation: Ints,
    ) -> np.ndarray:
        return conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation)

    copying_out(conv_transpose)


for _dims in (1, 2):
    _register_conv_transpose(_dims)
