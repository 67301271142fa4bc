"""Quantized convolutions and linear layers, static and dynamic, and their prepack/unpack ops.

A static layer (``quantized::conv2d``, ``quantized::linear``...) takes a quantized input and
the packed weight, accumulates ``(x - zx) * (w - zw)`` exactly (float64, see
``vm.ops.quantized.arith``) with the float convolution/matmul kernels of ``vm.ops.nn`` (on
fbgemm's kernels that saturate pair sums, ``vm.ops.quantized.saturating``), and
requantizes to the output's scale and zero point as the current engine does.  conv1d is a
2-d convolution over a unit height, as torch packs it.  A dynamic layer
(``quantized::linear_dynamic``) quantizes its float input with parameters chosen from its
range (``reduce_range`` halving it), accumulates likewise and returns float32:
``acc * (sx * sw) + bias``.  The fp16 form multiplies by the weight rounded to float16.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from vm.core.errors import RunError
from vm.core.quantized import ConvPacked, LinearPacked, QTensor
from vm.ops.nn.conv import conv_nd, conv_transpose_nd
from vm.ops.quantized import saturating
from vm.ops.quantized.arith import (
    centered,
    choose_qparams,
    engine,
    float32_channels,
    prepared_weight,
    quantize,
    requantize,
    weight_scales,
)
from vm.ops.quantized.cpu import fbgemm_kernel
from vm.ops.quantized.tensors import float_input, qtensor
from vm.ops.registry import kernel

CONV2D = "__torch__.torch.classes.quantized.Conv2dPackedParamsBase"
CONV3D = "__torch__.torch.classes.quantized.Conv3dPackedParamsBase"
LINEAR = "__torch__.torch.classes.quantized.LinearPackedParamsBase"


def _packed(value: Any, kind: type, op: str) -> Any:
    if not isinstance(value, kind):
        raise RunError(f"{op}: expected packed parameters ({kind.__name__}), got {type(value).__name__}")
    return value


def qconv(x: Any, packed: Any, scale: float, zero_point: int, relu: bool, op: str, dims: int) -> QTensor:
    """A quantized (transposed) convolution of ``dims`` spatial dimensions."""
    x = qtensor(x, op)
    p: ConvPacked = _packed(packed, ConvPacked, op)
    squeeze = dims == 1 and p.spatial == 2
    if x.per_channel:
        raise RunError(f"{op}: the input is quantized per channel (torch takes a per-tensor input)")
    if x.ndim != (dims if squeeze else p.spatial) + 2:
        raise RunError(f"{op}: expected a {dims + 2}-d input, got shape {list(x.shape)}")
    wshape = p.weight.shape
    channels_in = wshape[0] // p.groups if p.transpose else wshape[1]
    fit = float32_channels(x, p.weight, int(np.prod(wshape[2:])))
    dtype = np.float32 if fit >= channels_in or (fit and p.groups == 1 and not p.transpose) else np.float64
    xs = centered(x, dtype=dtype)
    if squeeze:
        xs = xs[:, :, None, :]
    w = prepared_weight(p.weight, dtype)[0]
    if p.transpose:
        acc = conv_transpose_nd(xs, w, None, p.stride, p.padding, p.output_padding, p.groups, p.dilation)
        channels = p.weight.shape[1] * p.groups
        if p.weight.per_channel:
            raise RunError(f"{op}: per-channel transposed convolution weights are not supported")
    else:
        if xs.shape[1] != p.weight.shape[1] * p.groups:
            raise RunError(
                f"{op}: the weight {list(p.weight.shape)} with groups={p.groups} does not fit "
                f"{xs.shape[1]} input channels"
            )
        if dtype == np.float32 and fit < channels_in:  # exact in float32 chunk by chunk of channels
            acc = _sum64(conv_nd(xs[:, c : c + fit], w[:, c : c + fit], None, p.stride, p.padding, p.dilation, 1)
                         for c in range(0, channels_in, fit))
        else:
            acc = conv_nd(xs, w, None, p.stride, p.padding, p.dilation, p.groups)
        if _on_fbgemm_bytes(x, p.weight):
            xq = x.like(x.int_repr[:, :, None, :]) if squeeze else x
            acc = saturating.conv(xq, p.weight, acc, p.stride, p.padding, p.dilation, p.groups, fbgemm_kernel())
        channels = p.weight.shape[0]
    out = requantize(
        acc, x.scale, weight_scales(p.weight, channels), p.bias, scale, zero_point, x.code, relu, 1, p.weight.per_channel
    )
    if squeeze:
        return out.like(out.int_repr[:, :, 0, :])
    out.channels_last = out.ndim == 4  # torch's quantized convolutions write NHWC
    return out


def _register_convs() -> None:
    for dims, cls in ((1, CONV2D), (2, CONV2D), (3, CONV3D)):
        suffix = "" if dims == 1 else ".new"
        for relu in (False, True):
            name = f"conv{dims}d" + ("_relu" if relu else "")
            schema = (f"quantized::{name}{suffix}(Tensor qx, {cls} packed_weight, float output_scale, "
                      "int output_zero_point) -> Tensor")
            kernel(schema)(_conv_kernel(relu, f"quantized::{name}", dims))
        schema = (f"quantized::conv_transpose{dims}d(Tensor qx, {cls} packed_weight, float output_scale, "
                  "int output_zero_point) -> Tensor")
        kernel(schema)(_conv_kernel(False, f"quantized::conv_transpose{dims}d", dims))


def _conv_kernel(relu: bool, op: str, dims: int) -> Any:
    def run(x: Any, packed: Any, scale: float, zero_point: int) -> QTensor:
        return qconv(x, packed, scale, zero_point, relu, op, dims)

    run.__name__ = op.replace("quantized::", "q")
    return run


_register_convs()


def _linear_acc(x: QTensor, w: QTensor) -> np.ndarray:
    """The accumulator ``sum_k (x - zx)(w - zw)`` over the last axis of ``x``, as the current
    engine's kernel computes it (exact, or fbgemm's saturating pairs: ``saturating``)."""
    k = w.shape[1]
    fit = float32_channels(x, w, 1)
    if fit:  # exact in float32, in chunks of the reduction where it must
        xs, ws = centered(x, dtype=np.float32), prepared_weight(w, np.float32)[0]
        if fit >= k:
            acc = np.matmul(xs, ws.T)
        else:
            acc = _sum64(np.matmul(xs[..., c : c + fit], ws[:, c : c + fit].T) for c in range(0, k, fit))
    else:
        acc = np.matmul(centered(x), prepared_weight(w, np.float64)[0].T)
    if _on_fbgemm_bytes(x, w) and fbgemm_kernel() != "vnni":
        acc = saturating.linear(x, w, acc)
    return acc


def _sum64(parts: Iterable[np.ndarray]) -> np.ndarray:
    """The float64 sum of exact float32 partial accumulators (each an integer below 2**24)."""
    total: np.ndarray | None = None
    for part in parts:
        total = part.astype(np.float64) if total is None else total + part
    assert total is not None
    return total


def _on_fbgemm_bytes(x: QTensor, w: QTensor) -> bool:
    """Whether fbgemm multiplies these with ``vpmaddubsw`` (uint8 activations, int8 weights)."""
    return engine() == "fbgemm" and x.int_repr.dtype == np.uint8 and w.int_repr.dtype == np.int8


def qlinear(x: Any, packed: Any, scale: float, zero_point: int, relu: bool, op: str) -> QTensor:
    x = qtensor(x, op)
    p: LinearPacked = _packed(packed, LinearPacked, op)
    if p.fp16 or not isinstance(p.weight, QTensor):
        raise RunError(f"{op}: the packed weight is an fp16 one (use linear_dynamic_fp16)")
    if x.shape[-1] != p.weight.shape[1]:
        raise RunError(f"{op}: an input of {x.shape[-1]} features does not fit the weight {list(p.weight.shape)}")
    acc = _linear_acc(x, p.weight)
    w_scale = weight_scales(p.weight, p.weight.shape[0])
    return requantize(acc, x.scale, w_scale, p.bias, scale, zero_point, x.code, relu, acc.ndim - 1, p.weight.per_channel)


@kernel(f"quantized::linear(Tensor X, {LINEAR} W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y")
def linear(x: Any, packed: Any, scale: float, zero_point: int) -> QTensor:
    return qlinear(x, packed, scale, zero_point, False, "quantized::linear")


@kernel(f"quantized::linear_relu(Tensor X, {LINEAR} W_prepack, float Y_scale_i, int Y_zero_point_i) -> Tensor Y")
def linear_relu(x: Any, packed: Any, scale: float, zero_point: int) -> QTensor:
    return qlinear(x, packed, scale, zero_point, True, "quantized::linear_relu")


def dynamic_linear(x: np.ndarray, p: LinearPacked, reduce_range: bool, relu: bool, op: str) -> np.ndarray:
    """float32 ``x @ W.T + b`` with ``x`` quantized on the fly to quint8 (fbgemm's dynamic linear)."""
    x = float_input(x, op)
    if x.shape[-1] != p.weight.shape[1]:
        raise RunError(f"{op}: an input of {x.shape[-1]} features does not fit the weight {list(p.weight.shape)}")
    if p.fp16:
        y = np.matmul(x.astype(np.float32), np.asarray(p.weight, np.float32).T).astype(np.float32)
    else:
        w = p.weight
        assert isinstance(w, QTensor)
        lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
        sx, zx = choose_qparams(lo, hi, 0, 255, reduce_range)
        acc = _linear_acc(quantize(x, sx, zx, 13), w)
        # fbgemm's AVX2 epilogue: one fused multiply-add of acc by float32(sx * sw) and the
        # bias (emulated in float64: the product of an int32 and a float32 is exact there)
        multiplier = (np.float32(sx) * weight_scales(w, w.shape[0])).astype(np.float32).astype(np.float64)
        bias = 0.0 if p.bias is None else p.bias.astype(np.float64)
        y = (acc * multiplier + bias).astype(np.float32)
        if relu:
            y = np.maximum(y, np.float32(0))
        return y
    if p.bias is not None:
        y = y + p.bias
    if relu:
        y = np.maximum(y, np.float32(0))
    return y.astype(np.float32, copy=False)


@kernel(f"quantized::linear_dynamic(Tensor X, {LINEAR} W_prepack, bool reduce_range=False) -> Tensor Y")
def linear_dynamic(x: np.ndarray, packed: Any, reduce_range: bool) -> np.ndarray:
    p = _packed(packed, LinearPacked, "quantized::linear_dynamic")
    if p.fp16:
        raise RunError("quantized::linear_dynamic: the packed weight is an fp16 one (use linear_dynamic_fp16)")
    return dynamic_linear(x, p, reduce_range, False, "quantized::linear_dynamic")


@kernel(f"quantized::linear_relu_dynamic(Tensor X, {LINEAR} W_prepack, bool reduce_range=False) -> Tensor Y")
def linear_relu_dynamic(x: np.ndarray, packed: Any, reduce_range: bool) -> np.ndarray:
    p = _packed(packed, LinearPacked, "quantized::linear_relu_dynamic")
    return dynamic_linear(x, p, reduce_range, True, "quantized::linear_relu_dynamic")


@kernel(f"quantized::linear_dynamic_fp16(Tensor X, {LINEAR} W_prepack) -> Tensor Y")
def linear_dynamic_fp16(x: np.ndarray, packed: Any) -> np.ndarray:
    p = _packed(packed, LinearPacked, "quantized::linear_dynamic_fp16")
    if not p.fp16:
        raise RunError("quantized::linear_dynamic_fp16: the packed weight is an int8 one (use linear_dynamic)")
    return dynamic_linear(x, p, False, False, "quantized::linear_dynamic_fp16")


@kernel(f"quantized::linear_relu_dynamic_fp16(Tensor X, {LINEAR} W_prepack) -> Tensor Y")
def linear_relu_dynamic_fp16(x: np.ndarray, packed: Any) -> np.ndarray:
    p = _packed(packed, LinearPacked, "quantized::linear_relu_dynamic_fp16")
    return dynamic_linear(x, p, False, True, "quantized::linear_relu_dynamic_fp16")


# --- prepack / unpack: what scripted modules' set_weight_bias and _weight_bias call


@kernel(f"quantized::linear_prepack(Tensor W, Tensor? B=None) -> {LINEAR} W_prepack")
def linear_prepack(w: Any, b: np.ndarray | None) -> LinearPacked:
    w = qtensor(w, "quantized::linear_prepack")
    return LinearPacked(w, None if b is None else np.asarray(b, np.float32))


@kernel(f"quantized::linear_prepack_fp16(Tensor W, Tensor? B=None) -> {LINEAR} W_prepack")
def linear_prepack_fp16(w: np.ndarray, b: np.ndarray | None) -> LinearPacked:
    w16 = float_input(w, "quantized::linear_prepack_fp16").astype(np.float16).astype(np.float32)
    return LinearPacked(w16, None if b is None else np.asarray(b, np.float32))


@kernel(f"quantized::linear_unpack({LINEAR} W_prepack) -> (Tensor W_origin, Tensor? B_origin)")
def linear_unpack(packed: Any) -> tuple[Any, Any]:
    p = _packed(packed, LinearPacked, "quantized::linear_unpack")
    return p.weight, p.bias


@kernel(f"quantized::linear_unpack_fp16({LINEAR} W_prepack) -> (Tensor W_origin, Tensor? B_origin)")
def linear_unpack_fp16(packed: Any) -> tuple[Any, Any]:
    return linear_unpack(packed)


def _conv_prepack(dims: int, transpose: bool) -> Any:
    def prepack(w: Any, b: Any, stride: list[int], padding: list[int], *rest: Any) -> ConvPacked:
        op = f"quantized::conv{'_transpose' if transpose else ''}{dims}d_prepack"
        q = qtensor(w, op)
        out_pad, dilation, groups = rest if transpose else ([0] * dims, *rest)
        bias = None if b is None else np.asarray(b, np.float32)
        if dims == 1:  # stored as a 2-d convolution over a unit height
            if q.per_channel and q.axis != 0:
                raise RunError(f"{op}: per-channel weights along axis {q.axis} are not supported")
            q = q.like(q.int_repr[:, :, None, :])
            stride, padding, dilation, out_pad = [1, *stride], [0, *padding], [1, *dilation], [0, *out_pad]
        return ConvPacked(q, bias, stride, padding, dilation, groups, out_pad, transpose)

    return prepack


for _dims, _cls in ((1, CONV2D), (2, CONV2D), (3, CONV3D)):
    kernel(f"quantized::conv{_dims}d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
           f"int[] dilation, int groups) -> {_cls}")(_conv_prepack(_dims, False))
    kernel(f"quantized::conv_transpose{_dims}d_prepack(Tensor weight, Tensor? bias, int[] stride, int[] padding, "
           f"int[] output_padding, int[] dilation, int groups) -> {_cls}")(_conv_prepack(_dims, True))


@kernel(f"quantized::conv2d_unpack({CONV2D} packed_weights) -> (Tensor unpacked_weights, Tensor? B_origin)")
def conv2d_unpack(packed: Any) -> tuple[Any, Any]:
    p = _packed(packed, ConvPacked, "quantized::conv2d_unpack")
    return p.weight, p.bias
