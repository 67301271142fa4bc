"""torch's quantized arithmetic: quantizing, choosing parameters, requantizing, integer GEMM.

Quantizing a float tensor (``quantize_per_tensor``, ATen's ``quantize_val``) is
``clamp(zero_point + nearbyint(x * (1 / scale)))`` with the product in float32 and
``nearbyint`` rounding half to even (``np.rint``).

Requantizing the int32 accumulator of a convolution or linear layer differs by engine:

- **fbgemm** keeps the bias in float: ``y = nearbyint((acc + bias / (sx * sw)) * (sx * sw /
  sy)) + zy``, every step in float32 (``act_times_w_scale = sx * sw`` and the multiplier
  ``act_times_w_scale / sy`` are float32 products/quotients, per output channel when the
  weight is per channel), then clamped to the output range (from ``zy`` with a fused ReLU);
- **qnnpack** quantizes the bias to int32 first (``nearbyint(bias / (sx * sw))``, added to the
  accumulator) and rounds ``float32(acc) * (sx * sw / sy)``.

The accumulator is exact: the centred integers ``(q - zero_point)`` are multiplied in float64,
exact for any realistic reduction length (an int8 x uint8 product is below 2**16 and a
float64 sum stays exact up to 2**53), measured faster here than int32 ``matmul`` (numpy has no
integer BLAS) and than float32 with the reduction split into chunks of 512.

``choose_qparams`` is ATen's ``ChooseQuantizationParams`` (dynamic quantization of the input
of ``linear_dynamic`` and the RNN cells): the range widened to hold 0, ``reduce_range`` halving
the integer range (fbgemm's 7-bit activations), the zero point nudged to an integer.

The engine is a context value (``engine()``, set with ``using_engine``) that the runtimes set
for a call from their ``quantized_engine`` option; kernels read it, nothing else changes.
So is fbgemm's kernel (``vm.ops.quantized.cpu``: AVX2's saturating pair sums or VNNI's exact
ones, the host's by default), from their ``quantized_kernel`` option; ``using_quantized``
sets both.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from vm.core.errors import RunError
from vm.core.quantized import QDTYPES, QTensor
from vm.ops.quantized.cpu import check_kernel, pinned_kernel, using_kernel

ENGINES = ("fbgemm", "qnnpack")
_ENGINE: contextvars.ContextVar[str] = contextvars.ContextVar("irvm_quantized_engine", default="fbgemm")


def engine() -> str:
    """The quantized engine whose arithmetic the kernels follow now (default fbgemm)."""
    return _ENGINE.get()


def check_engine(name: str) -> str:
    if name not in ENGINES:
        raise RunError(f"unknown quantized engine {name!r}: irvm follows {' or '.join(ENGINES)}")
    return name


@contextlib.contextmanager
def using_engine(name: str) -> Iterator[None]:
    """Run the block with the quantized arithmetic of engine ``name``."""
    token = _ENGINE.set(check_engine(name))
    try:
        yield
    finally:
        _ENGINE.reset(token)


Setting = tuple[str, str | None]  # (engine, fbgemm kernel or None for the host's)


def quantized_setting(engine_name: str | None, kernel_name: str | None) -> Setting | None:
    """A runtime's pinned quantized arithmetic, checked (None: follow the caller's)."""
    if engine_name is None and kernel_name is None:
        return None
    return (check_engine(engine_name or "fbgemm"), None if kernel_name is None else check_kernel(kernel_name))


def current_setting() -> Setting:
    return (_ENGINE.get(), pinned_kernel())


@contextlib.contextmanager
def using_quantized(setting: Setting) -> Iterator[None]:
    """Run the block with this engine and fbgemm kernel."""
    with using_engine(setting[0]), using_kernel(setting[1]):
        yield


def storage_dtype(code: int) -> tuple[type, int, int]:
    """numpy dtype, qmin, qmax of torch's quantized ScalarType ``code``."""
    entry = QDTYPES.get(code)
    if entry is None:
        raise RunError(f"ScalarType {code} is not a quantized dtype (12 qint8, 13 quint8, 14 qint32)")
    return entry[1], entry[2], entry[3]


def quantize(x: np.ndarray, scale: Any, zero_point: Any, code: int, axis: int | None = None) -> QTensor:
    """``quantize_per_tensor`` (``axis`` None) or ``quantize_per_channel``, as ATen computes
    them: an 8-bit per-tensor one through fbgemm's ``Quantize``, which rounds one fused
    multiply-add ``x * (1 / scale) + zero_point``; the others ``zero_point + nearbyint(x *
    (1 / scale))`` (``quantize_val``)."""
    dtype, qmin, qmax = storage_dtype(code)
    x = np.asarray(x, dtype=np.float32)
    if axis is None and code in (12, 13):
        inv = np.float64(np.float32(1.0) / np.float32(scale))
        q = np.rint((x.astype(np.float64) * inv + float(zero_point)).astype(np.float32)).astype(np.float64)
        return QTensor(np.clip(q, qmin, qmax).astype(dtype), scale, zero_point)
    return quantize_vec(x, scale, zero_point, code, axis)


def quantize_vec(x: np.ndarray, scale: Any, zero_point: Any, code: int, axis: int | None = None) -> QTensor:
    """``zero_point + nearbyint(x * (1 / scale))`` in float32: ATen's ``quantize_val`` and its
    vectorized ``Vectorized<q>::quantize`` (the elementwise quantized kernels' last step)."""
    dtype, qmin, qmax = storage_dtype(code)
    x = np.asarray(x, dtype=np.float32)
    if axis is None:
        inv, zp = np.float32(1.0) / np.float32(scale), zero_point
    else:
        shape = [1] * x.ndim
        shape[axis] = -1
        inv = (np.float32(1.0) / np.asarray(scale, np.float64).astype(np.float32)).reshape(shape)
        zp = np.asarray(zero_point, np.int64).reshape(shape)
    q = np.rint(x * inv).astype(np.float64) + zp
    return QTensor(np.clip(q, qmin, qmax).astype(dtype), scale, zero_point, axis)


def choose_qparams(lo: float, hi: float, qmin: int, qmax: int, reduce_range: bool = False) -> tuple[float, int]:
    """ATen's ``ChooseQuantizationParams`` (no sparsity preservation): ``(scale, zero_point)``."""
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    lo, hi = min(float(np.float32(lo)), 0.0), max(float(np.float32(hi)), 0.0)
    scale = (hi - lo) / (qmax - qmin)
    if float(np.float32(scale)) == 0.0 or math.isinf(1.0 / float(np.float32(scale))):
        scale = 0.1
    from_min, from_max = qmin - lo / scale, qmax - hi / scale
    err_min, err_max = abs(qmin) - abs(lo / scale), abs(qmax) - abs(hi / scale)
    initial = from_min if err_min < err_max else from_max
    zp = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    return float(np.float32(scale)), zp  # fbgemm and qnnpack keep the scale as a float


def centered(q: QTensor, ndim: int | None = None, dtype: Any = np.float64) -> np.ndarray:
    """``q - zero_point`` as float64 (or ``dtype``; exact for 8-bit values in float32 too),
    per channel along the tensor's axis."""
    _, zp = q.channel_params(ndim)
    if isinstance(zp, np.ndarray):
        zp = zp.astype(dtype)
    else:
        zp = dtype(zp)
    out = q.int_repr.astype(dtype)
    out -= zp
    return out


EXACT_FLOAT32 = 2**24  # integers below this are exact in float32, and so is every partial sum


def float32_channels(x: QTensor, w: QTensor, per_channel: int) -> int:
    """How many input channels (each adding ``per_channel`` products) a float32 GEMM can
    reduce exactly: every partial sum of products ``(x - zx)(w - zw)`` stays an integer below
    2**24, exact in float32 whatever order the GEMM adds in.  The bound uses x's actual range
    and the weight's (``prepared_weight``); 0: not even one."""
    ints = x.int_repr
    if not ints.size:
        return 0
    if x.axis is None:
        zx = x.zero_point
        x_dev = max(int(ints.max()) - zx, zx - int(ints.min()), 0)
    else:
        x_dev = 255
    w_dev = prepared_weight(w, np.float64)[1]
    per = per_channel * x_dev * w_dev
    return (EXACT_FLOAT32 - 1) // per if per else 1 << 62


def prepared_weight(w: QTensor, dtype: Any) -> tuple[np.ndarray, int]:
    """The weight centred in ``dtype`` and its largest ``|w - zw|``, made once per weight."""
    cache = w.prepared
    if cache is None:
        cache = w.prepared = {}
    found = cache.get(dtype)
    if found is None:
        values = centered(w, dtype=dtype)
        found = cache[dtype] = (values, int(np.abs(values).max()) if values.size else 0)
    return found


def weight_scales(w: QTensor, channels: int) -> np.ndarray:
    """The weight's scale per output channel, as float32 (fbgemm and qnnpack keep float)."""
    if w.axis is None:
        return np.full(channels, w.scale, np.float32)
    if w.axis != 0:
        raise RunError(f"a quantized weight quantized per channel along axis {w.axis} (irvm reads axis 0)")
    return np.asarray(w.scale, np.float32)


def requantize(
    acc: np.ndarray, x_scale: float, w_scale: np.ndarray, bias: np.ndarray | None, y_scale: float, y_zp: int,
    code: int, relu: bool, channel_axis: int, per_channel: bool = False,
) -> QTensor:
    """The int32 accumulator ``acc`` (exact, float64) as the output tensor, rounded as the
    current engine rounds (module docstring); ``w_scale`` has one entry per output channel,
    found along ``channel_axis`` of ``acc``."""
    dtype, qmin, qmax = storage_dtype(code)
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    act_w = (np.float32(x_scale) * w_scale).astype(np.float32)
    multiplier = (act_w / np.float32(y_scale)).astype(np.float32).reshape(shape)
    if engine() == "qnnpack":
        total = acc
        if bias is not None:
            qbias = np.rint(bias.astype(np.float32) * (np.float32(1.0) / act_w)).astype(np.float64)
            total = acc + qbias.reshape(shape)
        scaled = total.astype(np.float32) * multiplier
    else:
        raw = acc.astype(np.float32)
        if bias is not None:
            if not per_channel:  # per tensor: times the reciprocal, taken in double
                scaled_bias = bias.astype(np.float32) * np.float32(1.0 / np.float64(act_w[0]))
            else:  # per channel: divided
                scaled_bias = bias.astype(np.float32) / act_w
            raw = raw + scaled_bias.astype(np.float32).reshape(shape)
        scaled = raw * multiplier
    q = np.rint(scaled).astype(np.float64) + y_zp
    low = max(qmin, y_zp) if relu else qmin
    return QTensor(np.clip(q, low, qmax).astype(dtype), y_scale, y_zp)


def requantize_values(x: np.ndarray, scale: float, zero_point: int, code: int, relu: bool = False) -> QTensor:
    """Float values (already in real units) quantized to the output's parameters: the
    elementwise ops (add, mul, hardswish, pooling averages) compute in float and end so."""
    q = quantize(x, scale, zero_point, code)
    if relu:
        q.int_repr = np.maximum(q.int_repr, np.array(zero_point).astype(q.int_repr.dtype))
    return q
