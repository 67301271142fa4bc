"""Quantizing, dequantizing and reading quantized tensors (``aten::quantize_per_tensor``...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.core.errors import RunError
from vm.core.quantized import QTensor
from vm.ops.quantized.arith import choose_qparams, quantize, storage_dtype
from vm.ops.registry import kernel


def qtensor(x: Any, op: str) -> QTensor:
    """``x`` when it is a quantized tensor; a clear error naming ``op`` otherwise."""
    if not isinstance(x, QTensor):
        raise RunError(f"{op} expects a quantized tensor, got a {getattr(x, 'dtype', type(x).__name__)} one")
    return x


def float_input(x: Any, op: str) -> np.ndarray:
    if isinstance(x, QTensor) or not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        what = x.qdtype if isinstance(x, QTensor) else getattr(x, "dtype", type(x).__name__)
        raise RunError(f"{op} expects a float tensor, got {what}")
    return x


@kernel("aten::quantize_per_tensor(Tensor self, float scale, int zero_point, ScalarType dtype) -> Tensor")
def quantize_per_tensor(x: np.ndarray, scale: float, zero_point: int, dtype: int) -> QTensor:
    x = float_input(x, "quantize_per_tensor")
    _, qmin, qmax = storage_dtype(dtype)
    if not qmin <= zero_point <= qmax:
        raise RunError(f"quantize_per_tensor: zero_point {zero_point} is outside [{qmin}, {qmax}]")
    return quantize(x, scale, zero_point, dtype)


@kernel(
    "aten::quantize_per_tensor.tensor_qparams(Tensor self, Tensor scale, Tensor zero_point, ScalarType dtype) -> Tensor"
)
def quantize_per_tensor_tensors(x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, dtype: int) -> QTensor:
    return quantize_per_tensor(x, float(np.asarray(scale).reshape(-1)[0]), int(np.asarray(zero_point).reshape(-1)[0]),
                               dtype)


@kernel("aten::quantize_per_tensor_dynamic(Tensor self, ScalarType dtype, bool reduce_range) -> Tensor")
def quantize_per_tensor_dynamic(x: np.ndarray, dtype: int, reduce_range: bool) -> QTensor:
    x = float_input(x, "quantize_per_tensor_dynamic")
    _, qmin, qmax = storage_dtype(dtype)
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 0.0)
    scale, zp = choose_qparams(lo, hi, qmin, qmax, reduce_range)
    return quantize(x, scale, zp, dtype)


@kernel(
    "aten::quantize_per_channel(Tensor self, Tensor scales, Tensor zero_points, int axis, ScalarType dtype) -> Tensor"
)
def quantize_per_channel(x: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, axis: int, dtype: int) -> QTensor:
    x = float_input(x, "quantize_per_channel")
    if not -x.ndim <= axis < x.ndim:
        raise RunError(f"quantize_per_channel: axis {axis} is out of range for a {x.ndim}-d tensor")
    axis %= x.ndim
    if np.asarray(scales).size != x.shape[axis] or np.asarray(zero_points).size != x.shape[axis]:
        raise RunError(f"quantize_per_channel: expected {x.shape[axis]} scales and zero points along axis {axis}")
    return quantize(x, scales, zero_points, dtype, axis)


@kernel("aten::dequantize.self(Tensor self) -> Tensor")
def dequantize(x: Any) -> np.ndarray:
    if isinstance(x, QTensor):
        return x.dequantize()
    return x.astype(np.float32) if x.dtype == np.float16 else x  # torch: a float tensor is returned as it is


@kernel("aten::dequantize.tensors(Tensor[] tensors) -> Tensor[]")
def dequantize_list(xs: list[Any]) -> list[np.ndarray]:
    return [dequantize(x) for x in xs]


@kernel("aten::int_repr(Tensor self) -> Tensor")
def int_repr(x: Any) -> np.ndarray:
    return qtensor(x, "int_repr").int_repr.copy()


@kernel("aten::q_scale(Tensor self) -> float")
def q_scale(x: Any) -> float:
    q = qtensor(x, "q_scale")
    if q.per_channel:
        raise RunError("q_scale: the tensor is quantized per channel (use q_per_channel_scales)")
    return float(q.scale)


@kernel("aten::q_zero_point(Tensor self) -> int")
def q_zero_point(x: Any) -> int:
    q = qtensor(x, "q_zero_point")
    if q.per_channel:
        raise RunError("q_zero_point: the tensor is quantized per channel (use q_per_channel_zero_points)")
    return int(q.zero_point)


def _per_channel(x: Any, op: str) -> QTensor:
    q = qtensor(x, op)
    if not q.per_channel:
        raise RunError(f"{op}: the tensor is quantized per tensor")
    return q


@kernel("aten::q_per_channel_scales(Tensor self) -> Tensor")
def q_per_channel_scales(x: Any) -> np.ndarray:
    return np.array(_per_channel(x, "q_per_channel_scales").scale, dtype=np.float64)


@kernel("aten::q_per_channel_zero_points(Tensor self) -> Tensor")
def q_per_channel_zero_points(x: Any) -> np.ndarray:
    return np.array(_per_channel(x, "q_per_channel_zero_points").zero_point, dtype=np.int64)


@kernel("aten::q_per_channel_axis(Tensor self) -> int")
def q_per_channel_axis(x: Any) -> int:
    axis = _per_channel(x, "q_per_channel_axis").axis
    assert axis is not None
    return axis


@kernel("prim::is_quantized(Tensor a) -> bool")
def is_quantized(x: Any) -> bool:
    return isinstance(x, QTensor)
