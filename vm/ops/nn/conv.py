"""Convolutions: ``conv1d/2d/3d``, ``_convolution``, ``convolution``, ``conv_transpose1d/2d``.

The forward convolution is im2col plus one BLAS call (``vm.ops.nn.im2col``: the padded
input copied into a scratch buffer, its windows copied once into a column matrix
``(N, groups, C/groups * prod(kernel), prod(out))``, multiplied by the weight reshaped to
``(groups, O/groups, C/groups * prod(kernel))`` straight into the NCHW output).  Depthwise
convolution (one input channel per group) would be many tiny matmuls, so it takes other
routes, chosen by shape, in ``vm.ops.nn.depthwise``.

The transposed convolution is the adjoint: one matmul computes, for every input
position, its contribution to each kernel tap (``W^T @ x``), and a loop over the taps (9
for a 3x3 kernel) scatter-adds those planes into the strided output ("col2im"), which is
then cropped by ``padding``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import attrs
import numpy as np

from vm.ops import compiled
from vm.ops.nn._util import check_out, copying_out, expand, pad_spatial, write_out
from vm.ops.nn.depthwise import depthwise
from vm.ops.nn.im2col import conv_forward, out_shape
from vm.ops.registry import CHANNEL, DtypeRule, Fact, Weights, WeightShapes, kernel

Ints = Sequence[int]


def _batched(x: np.ndarray, weight: np.ndarray) -> tuple[np.ndarray, bool]:
    """``x`` with a batch axis (unbatched input is ``(C, *spatial)``), and whether one was added."""
    if x.ndim == weight.ndim - 1:
        return x[None], True
    if x.ndim != weight.ndim:
        raise ValueError(f"expected a {weight.ndim - 1}-D or {weight.ndim}-D input, got {x.ndim}-D")
    return x, False


@attrs.frozen
class _Layout:
    """What one call's shapes and arguments decide, worked out once per combination."""

    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    batched: tuple[int, ...]  # the input's shape with its batch axis
    full: tuple[int, ...]  # the output's shape with its batch axis
    out: tuple[int, ...]  # the result's shape (no batch axis for an unbatched input)
    depthwise: bool


def check_kernel_size(kernel: Sequence[int]) -> None:
    """Refuse a weight with an empty kernel dimension (an archive's (4, 1, 3, 0)), as torch's
    convolutions do, in torch's words (``slow_conv2d_shape_check``)."""
    if all(k > 0 for k in kernel):
        return
    if len(kernel) == 3:
        raise ValueError(f"kernel size should be greater than zero, but got: {' x '.join(map(str, kernel))} (TxHxW)")
    height, width = (1, *kernel)[-2:]  # a 1-D convolution runs as a 2-D one of height 1
    raise ValueError(f"kernel size should be greater than zero, but got kernel_height: {height} kernel_width: {width}")


def _hashable(v: int | Ints) -> int | tuple[int, ...]:
    return int(v) if isinstance(v, (int, np.integer)) else tuple(v)


@lru_cache(maxsize=512)
def _layout(
    xshape: tuple[int, ...],
    wshape: tuple[int, ...],
    stride: int | tuple[int, ...],
    padding: int | tuple[int, ...],
    dilation: int | tuple[int, ...],
    groups: int,
) -> _Layout:
    nsp = len(wshape) - 2
    st, pd, dl = (expand(v, nsp) for v in (stride, padding, dilation))
    if len(xshape) not in (nsp + 1, nsp + 2):
        raise ValueError(f"expected a {nsp + 1}-D or {nsp + 2}-D input, got {len(xshape)}-D")
    unbatched = len(xshape) == nsp + 1
    batched = (1, *xshape) if unbatched else xshape
    o, cg, *kernel_ = wshape
    check_kernel_size(kernel_)
    if batched[1] != cg * groups or o % groups:
        raise ValueError(f"weight {list(wshape)} with groups={groups} does not fit an input of {batched[1]} channels")
    full = (batched[0], o, *out_shape(batched[2:], kernel_, st, pd, dl))
    return _Layout(st, pd, dl, batched, full, full[1:] if unbatched else full, cg == 1 and groups > 1)


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
    lay = _layout(x.shape, weight.shape, _hashable(stride), _hashable(padding), _hashable(dilation), groups)
    dtype = x.dtype if x.dtype == weight.dtype else np.result_type(x, weight)
    if out is None:
        result = np.empty(lay.full, dtype)
    elif not out.flags.c_contiguous:  # matmul could not write through a copy
        return write_out(out, conv_nd(x, weight, bias, stride, padding, dilation, groups))
    else:
        if out.shape != lay.out or out.dtype != dtype:
            check_out(out, lay.out, dtype)
        result = out.reshape(lay.full)
    if bias is not None and bias.shape != lay.full[1:2]:
        raise ValueError(
            f"given weight of size {list(weight.shape)}, expected bias to be 1-dimensional with "
            f"{lay.full[1]} elements, but got bias of size {list(bias.shape)} instead"
        )
    xb = x.reshape(lay.batched)
    if lay.depthwise:
        if x.dtype == np.float32 and (fam := compiled.ready("depthwise")) is not None and fam.apply(
            xb, weight, bias, lay.stride, lay.padding, lay.dilation, result
        ):
            return out if out is not None else result.reshape(lay.out)
        depthwise(xb, weight, lay.stride, lay.padding, lay.dilation, lay.full[2:], result)
        if bias is not None:
            result += bias.reshape((-1,) + (1,) * (weight.ndim - 2))
    else:
        conv_forward(xb, weight, bias, lay.stride, lay.padding, lay.dilation, groups, result)
    if out is not None:
        return out
    return result.reshape(lay.out)


def _same_padding(x: np.ndarray, weight: np.ndarray, stride: Ints, dilation: Ints) -> tuple[np.ndarray, int]:
    """Pad ``x`` so a stride-1 convolution keeps its size ('same'); odd totals go right."""
    nsp = weight.ndim - 2
    if any(s != 1 for s in expand(stride, nsp)):
        raise ValueError("padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for d, k in zip(expand(dilation, nsp), weight.shape[2:])]
    before = [t // 2 for t in total]
    after = [t - b for t, b in zip(total, before)]
    xb, unbatched = _batched(x, weight)
    padded = pad_spatial(xb, before, after)
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
    check_kernel_size(kernel_)
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
# Registrations.  Every convolution takes input, weight and bias of one dtype, and its
# fresh result may take an activation in place (``fold_epilogues``); the forward ones
# keep their output channels on the weight's axis 0, so an eval BatchNorm after one folds
# into it (``fold_batch_norm``).

_LAYER = {"dtypes": DtypeRule((0, 1, 2)), "facts": Fact.TAKES_EPILOGUE}


def _through_out(fn: Any) -> Any:
    """The out variant of a kernel that computes into a keyword ``out`` (the forward
    convolution's GEMM writes into it, where ``copying_out`` would copy)."""

    def out_variant(out: np.ndarray, *args: Any) -> np.ndarray:
        return fn(*args, out=out)

    out_variant.__name__ = f"{fn.__name__}_out"
    return out_variant


def _register_conv(dims: int) -> None:
    zeros, ones = [0] * dims, [1] * dims
    base = f"Tensor input, Tensor weight, Tensor? bias=None, SymInt[{dims}] stride={ones}"
    tail = f"SymInt[{dims}] dilation={ones}, SymInt groups=1) -> Tensor"
    name = f"aten::conv{dims}d"
    layer = {
        **_LAYER,
        # a scripted model's input read by one has the op's rank and, groups 1, the weight's channels
        "weights": Weights(groups=6, rank=dims + 2, folds_batch_norm=True, infers_input=True),
        "weight_shapes": WeightShapes(1, (("out", CHANNEL, 0),)),
    }
    kernel(f"{name}({base}, SymInt[{dims}] padding={zeros}, {tail}", out=_through_out(conv_nd), **layer)(conv_nd)
    kernel(f'{name}.padding({base}, str padding="valid", {tail}', out=_through_out(conv_padding_str),
           **layer)(conv_padding_str)


for _dims in (1, 2, 3):
    _register_conv(_dims)

# what a traced ``nn.ConvNd(padding="same"/"valid")`` records
kernel(
    "aten::_convolution_mode(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, str padding, "
    "SymInt[] dilation, SymInt groups) -> Tensor",
    out=_through_out(conv_padding_str),
)(conv_padding_str)


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
    *_flags: bool,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """The forward or transposed convolution; the forward one computes into ``out``.
    ``_flags``: the backend flags ``_convolution`` adds (benchmark, deterministic...),
    which change nothing here."""
    if transposed:
        result = conv_transpose_nd(x, weight, bias, stride, padding, output_padding, groups, dilation)
        return result if out is None else write_out(out, result)
    return conv_nd(x, weight, bias, stride, padding, dilation, groups, out)


_CONV = "Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation"
_EITHER = Weights(groups=8, transposed=6, folds_batch_norm=True)  # the weight's axes as for a forward one
kernel(
    f"aten::convolution({_CONV}, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor",
    out=_through_out(convolution), weights=_EITHER, **_LAYER,
)(convolution)
kernel(
    # what traced graphs emit for every nn.ConvNd
    f"aten::_convolution({_CONV}, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark, "
    "bool deterministic, bool cudnn_enabled, bool allow_tf32) -> Tensor",
    f"aten::_convolution.deprecated({_CONV}, bool transposed, int[] output_padding, SymInt groups, "
    "bool benchmark, bool deterministic, bool cudnn_enabled) -> Tensor",
    out=_through_out(convolution), weights=attrs.evolve(_EITHER, infers_input=True), **_LAYER,
)(convolution)


def _register_conv_transpose(dims: int) -> None:
    zeros, ones = [0] * dims, [1] * dims
    suffix = ".input" if dims == 2 else ""
    schema = (
        f"aten::conv_transpose{dims}d{suffix}(Tensor input, Tensor weight, Tensor? bias=None, "
        f"SymInt[{dims}] stride={ones}, SymInt[{dims}] padding={zeros}, SymInt[{dims}] output_padding={zeros}, "
        f"SymInt groups=1, SymInt[{dims}] dilation={ones}) -> Tensor"
    )
    # the weight is (in, out / groups, *kernel): nothing folds into it
    weights = Weights(out_axis=1, in_axis=0, groups=6, rank=dims + 2)
    copying_out(kernel(schema, weights=weights, **_LAYER)(conv_transpose_nd))


for _dims in (1, 2):
    _register_conv_transpose(_dims)
