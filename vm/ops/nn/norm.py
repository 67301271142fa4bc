"""Normalisation layers: ``batch_norm``, ``layer_norm``, ``native_layer_norm``,
``rms_norm``, ``group_norm``, ``instance_norm`` (dropout, a random operator, is in
``vm.ops.random``).  RMS norm divides by the root mean square alone (no mean, no bias).

Every normaliser is ``(x - mean) * rsqrt(var + eps) * weight + bias`` and differs only in
which axes the statistics come from: the running buffers (batch norm in eval), the
trailing ``normalized_shape`` axes (layer norm), groups of channels (group norm) or each
sample's spatial axes (instance norm).  Statistics use the biased variance, as PyTorch
does; they are accumulated in float64 and the result is returned in the input dtype.

Batch and instance norm in training mode normalise with the batch statistics and, when
running buffers are given, update them in place with ``momentum`` and the unbiased
variance, exactly as PyTorch's forward does.

The static runtime binds ``batch_norm`` (weights bound, eval) and ``layer_norm`` (constant
``normalized_shape`` and eps) in prepared forms (``vm.ops.prepared_norm``) that share this
module's arithmetic (``bn_affine``, ``layer_norm_rows``) and so give these kernels' bits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops import compiled
from vm.ops.nn._util import copying_out, write_out
from vm.ops.registry import DtypeRule, WeightShapes, kernel

# with the batch's statistics, the running statistics are updated in place (no schema
# annotation says so): the writes unless the switch argument is the constant off value
_RUNNING = ("running_mean", "running_var")


def _channel_shape(x: np.ndarray) -> tuple[int, ...]:
    """Broadcast shape of a per-channel vector against ``x`` (channels on axis 1)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2) if x.ndim > 1 else (x.shape[0],)


def _affine(y: np.ndarray, weight: np.ndarray | None, bias: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray:
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _normalize(x: np.ndarray, mean: np.ndarray, var: np.ndarray, eps: float) -> np.ndarray:
    invstd = 1.0 / np.sqrt(var + eps)
    return ((x - mean) * invstd).astype(x.dtype, copy=False)


def _update_running(
    running_mean: np.ndarray | None,
    running_var: np.ndarray | None,
    mean: np.ndarray,
    var_biased: np.ndarray,
    count: int,
    momentum: float,
) -> None:
    if running_mean is not None:
        running_mean *= 1 - momentum
        running_mean += (momentum * mean).astype(running_mean.dtype)
    if running_var is not None:
        unbiased = var_biased * (count / max(count - 1, 1))
        running_var *= 1 - momentum
        running_var += (momentum * unbiased).astype(running_var.dtype)


@copying_out
@kernel(
    "aten::batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor",
    writes_unless=("training", False, _RUNNING),
    dtypes=DtypeRule((0, 1, 2, 3, 4), cpu_norm=True),
    weight_shapes=WeightShapes(1, (("in", 1, 0), ("out", 1, 0))),  # one entry per channel
)
def batch_norm(
    x: np.ndarray,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    running_mean: np.ndarray | None,
    running_var: np.ndarray | None,
    training: bool,
    momentum: float,
    eps: float,
    *_cudnn_enabled: bool,
) -> np.ndarray:
    shape = _channel_shape(x)
    if training or running_mean is None or running_var is None:
        axes = tuple(i for i in range(x.ndim) if i != (1 if x.ndim > 1 else 0))
        x64 = x.astype(np.float64)
        mean, var = x64.mean(axis=axes), x64.var(axis=axes)
        if training:
            _update_running(running_mean, running_var, mean, var, x.size // x.shape[1 if x.ndim > 1 else 0], momentum)
    else:
        mean, var = running_mean.astype(np.float64), running_var.astype(np.float64)
    w, b = bn_affine(weight, bias, mean, var, eps)
    return (x * w.astype(x.dtype).reshape(shape) + b.astype(x.dtype).reshape(shape)).astype(x.dtype, copy=False)


def bn_affine(
    weight: np.ndarray | None, bias: np.ndarray | None, mean: np.ndarray, var: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray]:
    """Batch norm as ``x * w + b`` per channel: ``w = weight / sqrt(var + eps)`` and
    ``b = bias - mean * w``, in float64 (the caller rounds them to x's dtype)."""
    mean, var = np.asarray(mean, np.float64), np.asarray(var, np.float64)
    scale = 1.0 / np.sqrt(var + eps)
    w = scale if weight is None else weight * scale
    b = -mean * w if bias is None else bias - mean * w
    return w, b


@kernel(
    "aten::_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, "
    "Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)"
)
def native_batch_norm_no_training(
    x: np.ndarray,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    running_mean: np.ndarray | None,
    running_var: np.ndarray | None,
    momentum: float,
    eps: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    empty = np.empty((0,), x.dtype)
    return batch_norm(x, weight, bias, running_mean, running_var, False, momentum, eps), empty, empty.copy()


def _layer_stats(x: np.ndarray, n_axes: int) -> tuple[np.ndarray, np.ndarray]:
    axes = tuple(range(x.ndim - n_axes, x.ndim))
    x64 = x.astype(np.float64)
    return x64.mean(axis=axes, keepdims=True), x64.var(axis=axes, keepdims=True)


@kernel(
    "aten::native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, "
    "float eps) -> (Tensor, Tensor, Tensor)"
)
def native_layer_norm(
    x: np.ndarray,
    normalized_shape: Sequence[int],
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    eps: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    shape = tuple(int(s) for s in normalized_shape)
    if x.shape[x.ndim - len(shape) :] != shape:
        raise ValueError(f"layer_norm: normalized_shape {list(shape)} does not end the input shape {list(x.shape)}")
    mean, var = _layer_stats(x, len(shape))
    y = _affine(_normalize(x, mean, var, eps), weight, bias, shape)
    rstd = 1.0 / np.sqrt(var + eps)
    return y.astype(x.dtype, copy=False), mean.astype(x.dtype), rstd.astype(x.dtype)


@kernel(
    "aten::layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
    "float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor",
    dtypes=DtypeRule((0, 2, 3), cpu_norm=True),
)
def layer_norm(
    x: np.ndarray,
    normalized_shape: Sequence[int],
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    eps: float,
    cudnn_enable: bool,
) -> np.ndarray:
    fast = _layer_norm_direct(x, normalized_shape, weight, bias, eps, None)
    return fast if fast is not None else native_layer_norm(x, normalized_shape, weight, bias, eps)[0]


@copying_out
@kernel("aten::rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, float? eps=None) -> Tensor")
def rms_norm(
    x: np.ndarray, normalized_shape: Sequence[int], weight: np.ndarray | None, eps: float | None
) -> np.ndarray:
    """``x * rsqrt(mean(x**2) + eps) * weight`` over the trailing ``normalized_shape``
    axes; ``eps`` defaults to the machine epsilon of ``x``'s dtype, as in PyTorch."""
    shape = tuple(int(s) for s in normalized_shape)
    if x.shape[x.ndim - len(shape) :] != shape:
        raise ValueError(f"rms_norm: normalized_shape {list(shape)} does not end the input shape {list(x.shape)}")
    if x.dtype.kind != "f":
        raise TypeError(f"rms_norm: expected a floating-point input, got {x.dtype}")
    if weight is not None and weight.shape != shape:
        raise ValueError(f"rms_norm: weight of shape {list(weight.shape)} does not match normalized_shape {list(shape)}")
    eps = float(np.finfo(x.dtype).eps) if eps is None else eps
    if compiled.ENABLED and x.dtype == np.float32 and x.size:
        y = np.empty_like(x)
        if (fam := compiled.ready("norm")) is not None and fam.apply_rms_norm(x, math.prod(shape), weight, eps, y):
            return y
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    wide = x.astype(np.float64)
    y = wide / np.sqrt(np.mean(wide * wide, axis=axes, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return y.astype(x.dtype, copy=False)


def _layer_norm_direct(
    x: np.ndarray,
    normalized_shape: Sequence[int],
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    eps: float,
    out: np.ndarray | None,
) -> np.ndarray | None:
    """``layer_norm`` of a float32/float64 ``x`` with weight and bias of its dtype (or None),
    on rows ``(x.size / m, m)`` where ``m`` is the normalized size, in one output buffer
    and no temporary the size of ``x``: the row means as one BLAS matrix-vector product,
    the deviations ``x - mean`` written into the result (corrected by their own mean when
    rounding left a drift: a mean far from zero costs no digits beyond the input's own),
    their sums of squares as one dot per row (numpy 2's ``vecdot``: BLAS dots, faster
    and closer to the exact sums than ``einsum``'s), then the result scaled by ``rsqrt(var + eps)``, ``weight`` and
    ``bias`` in place.  The statistics accumulate in x's dtype, as PyTorch's CPU kernel
    does for float32; rows longer than 65536 numbers take the general path, which keeps
    them in float64.  None when another case applies.  ``out``: a C-contiguous buffer
    of x's shape and dtype, or None."""
    dt = x.dtype
    if dt != np.float32 and dt != np.float64:
        return None
    n = len(normalized_shape)
    if n == 0 or n > x.ndim or x.shape[x.ndim - n :] != tuple(map(int, normalized_shape)):
        return None
    if (weight is not None and weight.dtype != dt) or (bias is not None and bias.dtype != dt):
        return None
    row = math.prod(x.shape[x.ndim - n :])
    if not 0 < row <= ROW_MAX or x.size == 0:
        return None
    return layer_norm_rows(x, row, weight, bias, eps, out)


def layer_norm_rows(
    x: np.ndarray, row: int, weight: np.ndarray | None, bias: np.ndarray | None, eps: float, out: np.ndarray | None
) -> np.ndarray:
    """The body of ``_layer_norm_direct`` once its checks have passed: ``x`` float32/float64
    of positive size whose trailing axes hold ``row <= ROW_MAX`` numbers, weight and bias
    of its dtype or None, ``out`` as there (``vm.ops.prepared_norm`` calls it directly).
    float32 runs the compiled kernel when the tier is on (one read, one write)."""
    dt = x.dtype
    if compiled.ENABLED and dt == np.float32:
        y = np.empty(x.shape, dt) if out is None else out
        if (fam := compiled.ready("norm")) is not None and fam.apply_layer_norm(x, row, weight, bias, eps, y):
            return y
    rows = x.reshape(-1, row)
    y = (np.empty(x.shape, dt) if out is None else out).reshape(rows.shape)
    consts = _consts.get((row, dt))
    if consts is None:
        inv = np.full((row, 1), 1.0 / row, dt)  # a column: the row means come out as a column
        inv.flags.writeable = False
        consts = _consts[row, dt] = (inv, dt.type(math.sqrt(row)))
    inv, root = consts
    mean = rows @ inv
    np.subtract(rows, mean, out=y)
    drift = y @ inv  # what rounding left of the mean (the corrected two-pass algorithm)
    # on small tensors one more pass costs less than the test whether it is needed
    if y.size <= _ALWAYS_CORRECT or float(np.abs(drift).max()) > _DRIFT * float(np.abs(mean).min()):
        y -= drift
        scale = _row_dots(y)
    else:
        scale = _row_dots(y)
        scale -= (drift * drift) * dt.type(row)
    # rsqrt(ss / row + eps) as sqrt(row) / sqrt(ss + row * eps): three passes over the rows
    scale += dt.type(row * eps)
    np.sqrt(scale, out=scale)
    np.divide(root, scale, out=scale)
    y *= scale
    if weight is not None:
        y *= weight.reshape(-1)
    if bias is not None:
        y += bias.reshape(-1)
    return y.reshape(x.shape)


def _row_dots(y: np.ndarray) -> np.ndarray:
    """The dot product of each row of the 2-d ``y`` with itself, as a column."""
    vecdot = getattr(np, "vecdot", None)  # numpy >= 2.0
    return vecdot(y, y, keepdims=True) if vecdot is not None else np.einsum("ij,ij->i", y, y)[:, None]


ROW_MAX = 1 << 16  # normalized sizes up to this accumulate in x's dtype (float32 rounding stays ~1e-6)
_ALWAYS_CORRECT = 1 << 14  # tensors up to this size subtract the drift without testing it
_DRIFT = 1e-7  # a mean correction above this (relative) is applied to the deviations too
# (row, dtype) -> (the read-only column 1/row, sqrt(row)) in that dtype
_consts: dict[tuple[int, np.dtype], tuple[np.ndarray, Any]] = {}


@layer_norm.out
def layer_norm_out(
    out: np.ndarray,
    x: np.ndarray,
    normalized_shape: Sequence[int],
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    eps: float,
    cudnn_enable: bool,
) -> np.ndarray:
    direct = type(out) is np.ndarray and out.shape == x.shape and out.dtype == x.dtype and out.flags.c_contiguous
    if direct and not np.shares_memory(out, x) and _layer_norm_direct(x, normalized_shape, weight, bias, eps, out) is not None:
        return out
    return write_out(out, native_layer_norm(x, normalized_shape, weight, bias, eps)[0])


@copying_out
@kernel(
    "aten::group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
    "float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor",
    dtypes=DtypeRule((0, 2, 3), cpu_norm=True),
)
def group_norm(
    x: np.ndarray,
    num_groups: int,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    eps: float,
    *_cudnn_enabled: bool,
) -> np.ndarray:
    n, c = x.shape[:2]
    if c % num_groups:
        raise ValueError(f"group_norm: {c} channels are not divisible into {num_groups} groups")
    if compiled.ENABLED and x.dtype == np.float32 and x.size:
        y = np.empty_like(x)
        if (fam := compiled.ready("norm")) is not None and fam.apply_group_norm(x, num_groups, weight, bias, eps, y):
            return y
    grouped = x.reshape(n, num_groups, -1)
    mean, var = _layer_stats(grouped, 1)
    y = _normalize(grouped, mean, var, eps).reshape(x.shape)
    return _affine(y, weight, bias, _channel_shape(x)).astype(x.dtype, copy=False)


@copying_out
@kernel(
    "aten::instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
    "Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor",
    writes_unless=("use_input_stats", False, _RUNNING),
    dtypes=DtypeRule((0, 1, 2, 3, 4), cpu_norm=True),
)
def instance_norm(
    x: np.ndarray,
    weight: np.ndarray | None,
    bias: np.ndarray | None,
    running_mean: np.ndarray | None,
    running_var: np.ndarray | None,
    use_input_stats: bool,
    momentum: float,
    eps: float,
    *_cudnn_enabled: bool,
) -> np.ndarray:
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: running_mean and running_var are needed when use_input_stats is False")
        return batch_norm(x, weight, bias, running_mean, running_var, False, momentum, eps)
    n, c = x.shape[:2]
    flat = x.reshape(n, c, -1)
    mean, var = _layer_stats(flat, 1)
    if running_mean is not None or running_var is not None:
        _update_running(running_mean, running_var, mean.mean(axis=0)[:, 0], var.mean(axis=0)[:, 0], flat.shape[2], momentum)
    y = _normalize(flat, mean, var, eps).reshape(x.shape)
    return _affine(y, weight, bias, _channel_shape(x)).astype(x.dtype, copy=False)
