"""Quantized elementwise ops, pooling and concatenation: ``quantized::add``/``mul``/``cat``/
``hardswish``..., and the aten operators torch also runs on quantized tensors.

The ``quantized::`` ops here follow ATen's quantized CPU kernels: both operands dequantized
to float32 (``q * scale + (-zero_point * scale)``, one fused multiply-add as ATen's vectorized
``dequantize`` does), the float operation, and the result quantized to the output's
parameters (``vm.ops.quantized.arith.quantize``).

An aten operator such as ``aten::max_pool2d`` or ``aten::flatten`` is resolved at compile time
by its argument *types*, and a quantized tensor is typed ``Tensor`` like any other; which
kernel runs is known only from the value, as in torch's dispatcher.  ``install`` therefore
wraps the registered kernels (and prepared forms) of the operators listed in ``QUANTIZED``:
the wrapper sends a ``QTensor`` first argument to the quantized implementation and anything
else to the original kernel, so float models pay one ``isinstance`` per call of those ops.
An aten operator not listed refuses a quantized tensor with an error naming it
(``QTensor.__array__``), never computes on its integers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from vm.core.errors import RunError
from vm.core.quantized import QTensor
from vm.ops import prepared as P
from vm.ops import registry as R
from vm.ops.quantized.arith import engine, quantize, quantize_vec, requantize_values, storage_dtype
from vm.ops.quantized.cpu import vector_bytes
from vm.ops.quantized.tensors import qtensor
from vm.ops.registry import kernel


def fdequant(q: QTensor) -> np.ndarray:
    """float32 values as ATen's vectorized dequantize computes them (a fused multiply-add
    ``q * scale + (-zp * scale)``, emulated exactly in float64: the product of an 8-bit
    integer and a float32 is exact there)."""
    scale, zp = q.channel_params()
    s32 = np.asarray(scale, np.float32)
    premul = (-np.asarray(zp, np.float32) * s32).astype(np.float32)
    return (q.int_repr.astype(np.float64) * s32.astype(np.float64) + premul).astype(np.float32)


def sdequant(q: QTensor) -> np.ndarray:
    """float32 values as ATen's scalar ``dequantize_val`` computes them: ``(float(q) - zp)``
    times the scale in double, rounded to float."""
    scale, zp = q.channel_params()
    centered = (q.int_repr.astype(np.float32) - np.asarray(zp, np.float32)).astype(np.float64)
    return (centered * np.asarray(scale, np.float32).astype(np.float64)).astype(np.float32)


def split_vectorized(n: int, itemsize: int = 1) -> int:
    """How many leading elements ATen's ``cpu_kernel_vec`` runs vectorized: whole blocks of
    two vectors; the rest (fewer than 2 * 32 8-bit elements on AVX2, 2 * 64 on AVX-512:
    ``vm.ops.quantized.cpu.vector_bytes``) runs its scalar lambda, whose rounding can differ."""
    block = 2 * (vector_bytes() // itemsize)
    return n // block * block


def elementwise(qs: list[QTensor], fn: Callable[..., np.ndarray], scale: float, zp: int, code: int) -> QTensor:
    """``fn`` of the dequantized operands, quantized to (scale, zp): the vectorized part with
    the fused dequantize, the tail with the scalar one (see ``split_vectorized``)."""
    n = qs[0].size
    cut = split_vectorized(n, qs[0].int_repr.itemsize)
    nhwc = qs[0].channels_last  # the tail is the last elements in memory order

    def memory_order(a: np.ndarray) -> np.ndarray:
        return (a.transpose(0, 2, 3, 1) if nhwc else a).reshape(-1)

    flat = fn(*(memory_order(fdequant(q)) for q in qs)).astype(np.float32)
    if cut < n:
        flat[cut:] = fn(*(memory_order(sdequant(q))[cut:] for q in qs)).astype(np.float32)
    shape = qs[0].shape
    values = flat.reshape((shape[0], shape[2], shape[3], shape[1])).transpose(0, 3, 1, 2) if nhwc else flat.reshape(shape)
    out = quantize_vec(values, scale, zp, code)
    out.channels_last = nhwc
    return out


def qnnpack_add(a: QTensor, b: QTensor, scale: float, zero_point: int, relu: bool) -> QTensor:
    """QNNPACK's quint8 add: fixed-point multipliers of ``sa / s`` and ``sb / s`` scaled by
    ``2**shift`` so that the larger lies in [2**21, 2**22), an int32 sum, and an arithmetic
    shift right rounding half away from zero."""
    f32 = np.float32
    a_out, b_out = f32(f32(a.scale) / f32(scale)), f32(f32(b.scale) / f32(scale))
    exponent = int((np.array(max(a_out, b_out), np.float32).view(np.int32) >> 23) - 127)
    shift = 21 - exponent
    mult = f32(2.0**shift)
    a_mult, b_mult = int(np.rint(a_out * mult)), int(np.rint(b_out * mult))
    acc = (a.int_repr.astype(np.int64) * a_mult + b.int_repr.astype(np.int64) * b_mult
           - (a_mult * a.zero_point + b_mult * b.zero_point))
    mask, threshold = (1 << shift) - 1, ((1 << shift) - 1) >> 1
    rounded = (acc >> shift) + (((acc & mask) - (acc < 0)) > threshold)
    low = zero_point if relu else 0
    return QTensor(np.clip(rounded + zero_point, low, 255).astype(np.uint8), scale, zero_point)


def _binary(op: Callable[[np.ndarray, np.ndarray], np.ndarray], relu: bool, name: str) -> Callable[..., QTensor]:
    def run(a: Any, b: Any, scale: float, zero_point: int) -> QTensor:
        qa, qb = qtensor(a, name), qtensor(b, name)
        if qa.code != qb.code:
            raise RunError(f"{name}: both operands must have the same quantized dtype ({qa.qdtype}, {qb.qdtype})")
        if engine() == "qnnpack" and op is np.add and qa.code == 13 and qa.shape == qb.shape:
            return qnnpack_add(qa, qb, scale, zero_point, relu)
        if qa.shape != qb.shape:
            qa, qb = _broadcast(qa, qb)

        def fn(x: np.ndarray, y: np.ndarray) -> np.ndarray:
            c = op(x, y).astype(np.float32)
            return np.maximum(c, np.float32(0)) if relu else c

        return elementwise([qa, qb], fn, scale, zero_point, qa.code)

    return run


def _broadcast(a: QTensor, b: QTensor) -> tuple[QTensor, QTensor]:
    shape = np.broadcast_shapes(a.shape, b.shape)
    return (a.like(np.ascontiguousarray(np.broadcast_to(a.int_repr, shape))),
            b.like(np.ascontiguousarray(np.broadcast_to(b.int_repr, shape))))


def _mul(relu: bool, name: str) -> Callable[..., QTensor]:
    """ATen's qmul: the integer product of the centred values, requantized by
    ``float32(sa * sb * (1 / s))`` (the same in its vector and scalar paths)."""

    def run(a: Any, b: Any, scale: float, zero_point: int) -> QTensor:
        qa, qb = qtensor(a, name), qtensor(b, name)
        if qa.shape != qb.shape:
            qa, qb = _broadcast(qa, qb)
        _, qmin, qmax = storage_dtype(qa.code)
        c = (qa.int_repr.astype(np.int64) - qa.zero_point) * (qb.int_repr.astype(np.int64) - qb.zero_point)
        multiplier = np.float32(qa.scale) * np.float32(qb.scale) * (np.float32(1.0) / np.float32(scale))
        q = np.rint(c.astype(np.float32) * np.float32(multiplier)).astype(np.float64) + zero_point
        low = max(qmin, zero_point) if relu else qmin
        return QTensor(np.clip(q, low, qmax).astype(qa.int_repr.dtype), scale, zero_point)

    return run


for _fused in (False, True):
    _full = f"quantized::add{'_relu' if _fused else ''}"
    kernel(f"{_full}(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc")(_binary(np.add, _fused, _full))
    _full = f"quantized::mul{'_relu' if _fused else ''}"
    kernel(f"{_full}(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc")(_mul(_fused, _full))


def _scalar(op: Callable[[np.ndarray, Any], np.ndarray], name: str) -> Callable[..., QTensor]:
    def run(a: Any, b: Any) -> QTensor:
        qa = qtensor(a, name)
        y = op(fdequant(qa), np.float32(b)).astype(np.float32)
        lo, hi = float(y.min()) if y.size else 0.0, float(y.max()) if y.size else 0.0
        from vm.ops.quantized.arith import choose_qparams, storage_dtype

        _, qmin, qmax = storage_dtype(qa.code)
        scale, zp = choose_qparams(lo, hi, qmin, qmax)
        return quantize(y, scale, zp, qa.code)

    return run


kernel("quantized::add.Scalar(Tensor qa, Scalar b) -> Tensor qc")(_scalar(np.add, "quantized::add.Scalar"))
kernel("quantized::mul.Scalar(Tensor qa, Scalar b) -> Tensor qc")(_scalar(np.multiply, "quantized::mul.Scalar"))


def _cat(xs: list[Any], dim: int, scale: float | None, zero_point: int | None, relu: bool) -> QTensor:
    qs = [qtensor(x, "quantized::cat") for x in xs]
    if not qs:
        raise RunError("quantized::cat: no tensors to concatenate")
    first = qs[0]
    if first.per_channel:
        raise RunError("quantized::cat: per-channel quantized tensors are not supported")
    out_scale = float(first.scale if scale is None else scale)
    out_zp = int(first.zero_point if zero_point is None else zero_point)
    if all(q.channels_last for q in qs) and dim in (1, -3):
        return _cat_nhwc(qs, out_scale, out_zp, relu)
    y = np.concatenate([q.dequantize() for q in qs], axis=dim)  # Tensor.dequantize, then quantize_per_tensor
    return requantize_values(y, out_scale, out_zp, first.code, relu)


def _cat_nhwc(qs: list[QTensor], scale: float, zero_point: int, relu: bool) -> QTensor:
    """ATen's channels-last concatenation along channels: an input with the output's
    parameters is copied; another is dequantized (fused multiply-add over whole float vectors
    of channels, 8 on AVX2 and 16 on AVX-512, the scalar form past them) and quantized again
    (``Vectorized::quantize``).  When the channel count is not a multiple of 8 a few elements can still differ from
    torch by one step (measured: 5 of 2,700 in tests/quantized/test_ops.py's sweep)."""
    parts = []
    for q in qs:
        if q.scale == scale and q.zero_point == zero_point and not relu:
            parts.append(q.int_repr)
        else:
            y = fdequant(q)
            cut = q.shape[1] // 8 * 8  # channels past whole float vectors: the scalar dequantize
            y[:, cut:] = sdequant(q)[:, cut:]
            if relu:
                y = np.maximum(y, np.float32(0))
            parts.append(quantize_vec(y, scale, zero_point, q.code).int_repr)
    out = QTensor(np.concatenate(parts, axis=1), scale, zero_point, channels_last=True)
    return out


@kernel("quantized::cat(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor")
def qcat(xs: list[Any], dim: int, scale: float | None, zero_point: int | None) -> QTensor:
    return _cat(xs, dim, scale, zero_point, False)


@kernel("quantized::cat_relu(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor")
def qcat_relu(xs: list[Any], dim: int, scale: float | None, zero_point: int | None) -> QTensor:
    return _cat(xs, dim, scale, zero_point, True)


def _unary_float(fn: Callable[[np.ndarray], np.ndarray], name: str) -> Callable[..., QTensor]:
    def run(x: Any, scale: float, zero_point: int) -> QTensor:
        q = qtensor(x, name)
        return elementwise([q], fn, scale, zero_point, q.code)

    return run


def _hardswish(x: np.ndarray) -> np.ndarray:
    return x * np.clip(x + np.float32(3), 0, 6) / np.float32(6)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


kernel("quantized::hardswish(Tensor input, float output_scale, int output_zero_point) -> Tensor")(
    _unary_float(_hardswish, "quantized::hardswish"))
kernel("quantized::sigmoid(Tensor qx, float output_scale, int output_zero_point) -> Tensor")(
    _unary_float(_sigmoid, "quantized::sigmoid"))


@kernel("quantized::relu6(Tensor qx, bool inplace=False) -> Tensor")
def qrelu6(x: Any, inplace: bool) -> QTensor:
    return _hardtanh(qtensor(x, "quantized::relu6"), 0.0, 6.0)


# --- aten operators on quantized tensors -------------------------------------------


def _relu(q: QTensor, *_rest: Any) -> QTensor:
    if q.per_channel:
        _, zp = q.channel_params()
        return q.like(np.maximum(q.int_repr, zp.astype(q.int_repr.dtype)))
    return q.like(np.maximum(q.int_repr, np.array(q.zero_point).astype(q.int_repr.dtype)))


def _hardtanh(q: QTensor, lo: float, hi: float, *_rest: Any) -> QTensor:
    qlo = quantize(np.array([lo], np.float32), q.scale, q.zero_point, q.code).int_repr[0]
    qhi = quantize(np.array([hi], np.float32), q.scale, q.zero_point, q.code).int_repr[0]
    return q.like(np.clip(q.int_repr, qlo, qhi))


def _fixed_output(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., QTensor]:
    """hardsigmoid, sigmoid: torch quantizes the output with fixed parameters (quint8:
    scale 1/256, zero point 0; qint8: 1/256, -128)."""

    def run(q: QTensor, *_rest: Any) -> QTensor:
        zp = -128 if q.code == 12 else 0
        return elementwise([q], fn, 1.0 / 256.0, zp, q.code)

    return run


def _hardsigmoid(x: np.ndarray) -> np.ndarray:
    return np.clip(x + np.float32(3), 0, 6) / np.float32(6)


def _adaptive_avg_pool2d(q: QTensor, output_size: Any) -> QTensor:
    if engine() == "qnnpack" and q.code == 13 and q.ndim == 4 and list(output_size) in ([1], [1, 1]):
        return _qnnpack_mean(q, True)  # ATen sends a global pool to QNNPACK's, as it does mean
    return _adaptive_avg_pool_ints(q, output_size)


def _adaptive_avg_pool_ints(q: QTensor, output_size: Any) -> QTensor:
    """Averages of the integers, ``(sum - zp * n) / n`` rounded as ATen rounds it: NCHW
    ``zp + nearbyint(acc * (1 / n))``; NHWC (conv outputs) fbgemm's ``nearbyint(acc * (1 / n)
    + zp)`` in one fused multiply-add, which breaks ties differently."""
    x = q.int_repr
    oh, ow = (list(output_size) * 2)[:2] if len(output_size) == 1 else list(output_size)
    h, w = x.shape[-2:]
    oh, ow = h if oh is None else oh, w if ow is None else ow
    out = np.empty(x.shape[:-2] + (oh, ow), x.dtype)
    _, qmin, qmax = _range(q)
    for i in range(oh):
        h0, h1 = (i * h) // oh, -((-(i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -((-(j + 1) * w) // ow)
            n = (h1 - h0) * (w1 - w0)
            acc = x[..., h0:h1, w0:w1].astype(np.int64).sum(axis=(-2, -1)) - q.zero_point * n
            inv = np.float32(1.0) / (np.float32(1.0) / (np.float32(1.0) / np.float32(n)))  # 1 / (1 / multiplier)
            if q.channels_last:  # the NHWC kernel quantizes with fbgemm (one fused multiply-add)
                rounded = np.rint((acc.astype(np.float32).astype(np.float64) * inv + q.zero_point).astype(np.float32))
            else:
                rounded = np.rint(acc.astype(np.float32) * inv) + q.zero_point
            out[..., i, j] = np.clip(rounded, qmin, qmax)
    return q.like(out)


def _range(q: QTensor) -> tuple[Any, int, int]:
    from vm.ops.quantized.arith import storage_dtype

    return storage_dtype(q.code)


def _on_values(original: Callable[..., Any]) -> Callable[..., Any]:
    """An op that only moves or selects values (a view, a max, a nearest resize): the float
    kernel on the integers, exact in float32, cast back, the quantizer kept."""

    def run(q: QTensor, *rest: Any) -> Any:
        if q.per_channel:
            raise RunError("a per-channel quantized tensor reached a layout operator (irvm supports per-tensor ones)")
        result = original(q.int_repr.astype(np.float32), *rest)
        if isinstance(result, (list, tuple)):
            return type(result)(q.like(r.astype(q.int_repr.dtype)) for r in result)
        return q.like(np.asarray(result).astype(q.int_repr.dtype))

    return run


def _on_ints(original: Callable[..., Any]) -> Callable[..., Any]:
    """A view op on the integers themselves (reshape, flatten, transpose...)."""

    def run(q: QTensor, *rest: Any) -> Any:
        if q.per_channel:
            raise RunError("a per-channel quantized tensor reached a view operator (irvm supports per-tensor ones)")
        result = original(q.int_repr, *rest)
        if isinstance(result, (list, tuple)):
            return type(result)(q.like(r) for r in result)
        return q.like(result)

    return run


def _shape_query(original: Callable[..., Any]) -> Callable[..., Any]:
    def run(q: QTensor, *rest: Any) -> Any:
        return original(q.int_repr, *rest)

    return run


def _through_float(original: Callable[..., Any]) -> Callable[..., Any]:
    """ATen's generic quantized fallback (``aten::mean`` on a quantized tensor): dequantize,
    the float kernel, quantized again with the input's parameters."""

    def run(q: QTensor, *rest: Any) -> QTensor:
        if q.per_channel:
            raise RunError("a per-channel quantized tensor reached a reduction (irvm supports per-tensor ones)")
        if q.ndim == 4 and rest and _inner_hw(rest[0]):
            keepdim = bool(rest[1]) if len(rest) > 1 else False
            if engine() == "qnnpack" and q.code == 13:
                return _qnnpack_mean(q, keepdim)
            if q.channels_last:  # ATen's float mean of channels-last values: its cascade sum, per channel
                y = q.dequantize()
                rows = y.reshape(y.shape[0], y.shape[1], -1).transpose(2, 0, 1)  # (H*W, N, C)
                mean = outer_cascade_sum(rows) / np.float32(rows.shape[0])
                return quantize(mean[:, :, None, None] if keepdim else mean, q.scale, q.zero_point, q.code)
        y = np.asarray(original(q.dequantize(), *rest), np.float32)
        return quantize(y, q.scale, q.zero_point, q.code)

    return run


def outer_cascade_sum(rows: np.ndarray) -> np.ndarray:
    """The float32 sum over the first axis as ATen's outer reduction adds it (``SumKernel``'s
    ``multi_row_sum``): rows in runs of ``2**p`` (``p = max(4, ceil(log2 n) / 4)``) into a
    first accumulator, each run carried into a second one, every ``2**p`` runs into a third,
    and so on over four levels; the rows past the last whole run into the first; then the
    levels added from the first up."""
    n = rows.shape[0]
    power = max(4, int(np.ceil(np.log2(n))) // 4 if n > 1 else 0)
    step, mask = 1 << power, (1 << power) - 1
    acc = [np.zeros(rows.shape[1:], np.float32) for _ in range(4)]
    i = 0
    while i + step <= n:
        for _ in range(step):
            acc[0] += rows[i]
            i += 1
        for j in range(1, 4):
            acc[j] += acc[j - 1]
            acc[j - 1][...] = 0
            if i & (mask << (j * power)):
                break
    while i < n:
        acc[0] += rows[i]
        i += 1
    for j in range(1, 4):
        acc[0] += acc[j]
    return acc[0]


def _inner_hw(dims: Any) -> bool:
    return isinstance(dims, (list, tuple)) and sorted(d % 4 for d in dims) == [2, 3]


def _qnnpack_mean(q: QTensor, keepdim: bool) -> QTensor:
    """ATen's qnnpack mean over H and W (QNNPACK's global average pooling), with the
    input's parameters: ``zp + nearbyint(acc * (1 / n))`` on the integer sums."""
    n = q.shape[2] * q.shape[3]
    acc = q.int_repr.astype(np.int64).sum(axis=(2, 3), keepdims=keepdim) - q.zero_point * n
    rounded = np.rint(acc.astype(np.float32) * (np.float32(1.0) / np.float32(n))) + q.zero_point
    return q.like(np.clip(rounded, 0, 255).astype(np.uint8))


def _cat_list(xs: list[Any], dim: int) -> Any:
    return _cat(xs, dim, None, None, False)


# op -> how a quantized first argument is handled (given the original kernel)
QUANTIZED: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "aten::relu": lambda _k: _relu,
    "aten::relu_": lambda _k: _relu,
    "aten::hardtanh": lambda _k: _hardtanh,
    "aten::hardtanh_": lambda _k: _hardtanh,
    "aten::relu6": lambda _k: lambda q: _hardtanh(q, 0.0, 6.0),
    "aten::hardsigmoid": lambda _k: _fixed_output(_hardsigmoid),
    "aten::hardsigmoid_": lambda _k: _fixed_output(_hardsigmoid),
    "aten::sigmoid": lambda _k: _fixed_output(_sigmoid),
    "aten::hardswish": lambda _k: lambda q: elementwise([q], _hardswish, q.scale, q.zero_point, q.code),
    "aten::adaptive_avg_pool2d": lambda _k: _adaptive_avg_pool2d,
    "aten::mean.dim": _through_float,
    "aten::max_pool1d": _on_values,
    "aten::max_pool2d": _on_values,
    "aten::max_pool3d": _on_values,
    "aten::upsample_nearest2d": _on_values,
    "aten::upsample_nearest2d.vec": _on_values,
    "aten::flatten.using_ints": _on_ints,
    "aten::reshape": _on_ints,
    "aten::view": _on_ints,
    "aten::contiguous": _on_ints,
    "aten::transpose.int": _on_ints,
    "aten::permute": _on_ints,
    "aten::unsqueeze": _on_ints,
    "aten::squeeze": _on_ints,
    "aten::squeeze.dim": _on_ints,
    "aten::chunk": _on_ints,
    "aten::split.Tensor": _on_ints,
    "aten::select.int": _on_ints,
    "aten::slice.Tensor": _on_ints,
    "aten::clone": _on_ints,
    "aten::dropout": lambda _k: lambda q, p, train: q,
    "aten::size": _shape_query,
    "aten::size.int": _shape_query,
    "aten::dim": _shape_query,
    "aten::numel": _shape_query,
    "aten::len.Tensor": _shape_query,
    "prim::dtype": lambda _k: lambda q: q.code,
}


def _wrap(original: Callable[..., Any], quantized: Callable[..., Any]) -> Callable[..., Any]:
    def dispatch(*args: Any) -> Any:
        if args and isinstance(args[0], QTensor):
            return quantized(*args)
        return original(*args)

    return functools.wraps(original)(dispatch)  # named as the kernel it stands for (profiles, tests)


def _wrap_out(original: Callable[..., Any]) -> Callable[..., Any]:
    def dispatch_out(out: Any, *args: Any) -> Any:
        if args and isinstance(args[0], QTensor):
            raise RunError("a quantized tensor reached an out variant (its value cannot be planned)")
        return original(out, *args)

    return dispatch_out


def install() -> None:
    """Wrap the kernels of ``QUANTIZED`` (and ``aten::cat``) to dispatch on quantized tensors."""
    table = R._REGISTRY
    for qualified, make in QUANTIZED.items():
        info = table.get(qualified)
        if info is None:
            continue
        handler = make(info.kernel)
        table[qualified] = attrs.evolve(
            info,
            kernel=_wrap(info.kernel, handler),
            out=None if info.out is None else _wrap_out(info.out),
            prepare=None if info.prepare is None else _wrap_preparer(info.prepare, handler),
        )
    info = table.get("aten::cat")
    if info is not None:
        original = info.kernel

        def cat(tensors: list[Any], dim: int) -> Any:
            if tensors and isinstance(tensors[0], QTensor):
                return _cat_list(tensors, dim)
            return original(tensors, dim)

        table["aten::cat"] = attrs.evolve(info, kernel=cat)


def _wrap_preparer(preparer: Any, handler: Callable[..., Any]) -> Any:
    def prepare(known: Any, kernel_: Any, out: Any, *rest: Any) -> Any:
        made = preparer(known, kernel_, out, *rest)
        if made is None:
            return None
        if isinstance(made, P.Forms):
            return P.Forms(_wrap(made.kernel, handler), None if made.out is None else _wrap_out(made.out))
        return _wrap(made, handler)

    return prepare
