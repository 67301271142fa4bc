"""Quantized tensors and the packed-parameter objects of torch's quantized operators.

A quantized tensor is its integer array (``int_repr``: uint8 for ``quint8``, int8 for
``qint8``, int32 for ``qint32``) with an affine quantizer: ``real = (q - zero_point) *
scale``, either per tensor (one float scale, one int zero point) or per channel (a float64
scale and an int64 zero point per index of dimension ``axis``).  It is not a numpy array on
purpose: a float kernel handed one would compute on the integers and give a wrong answer
silently, so ``QTensor`` refuses ``np.asarray`` with an error naming the operation, and only
the operators of ``vm/ops/quantized/`` (and the shape queries it answers itself: ``shape``,
``ndim``, ``size``) take it.

Packed parameters are what torch's ``*_prepack`` operators return and its quantized modules
keep in ``_packed_params``: ``ConvPacked`` (conv1d/2d/3d and transposed: the quantized weight,
the float bias and the settings), ``LinearPacked`` (a quantized weight, or a float one for the
fp16 form, and the bias), ``CellParams`` (a dynamic RNN cell: two ``LinearPacked`` and the
biases) and ``EmbeddingPacked``.  They are plain values here; torch's engine-specific packing
(fbgemm's blocked layouts, qnnpack's) is not reproduced, only what it computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.core.errors import RunError

# torch's ScalarType codes of the quantized dtypes, their storage dtypes and ranges
QDTYPES: dict[int, tuple[str, type, int, int]] = {
    12: ("torch.qint8", np.int8, -128, 127),
    13: ("torch.quint8", np.uint8, 0, 255),
    14: ("torch.qint32", np.int32, -(2**31), 2**31 - 1),
}
CODE_OF_NAME = {"qint8": 12, "quint8": 13, "qint32": 14}
CODE_OF_STORAGE = {np.dtype(np.int8): 12, np.dtype(np.uint8): 13, np.dtype(np.int32): 14}


class QuantizedValueError(RunError, AttributeError):
    """A float kernel read an attribute a quantized tensor does not have (``.dtype``...):
    a RunError naming it, and an AttributeError for ``hasattr``."""


class QTensor:
    """A quantized tensor (see the module docstring).  ``scale``/``zero_point`` are a float
    and an int per tensor; arrays of ``shape[axis]`` entries per channel."""

    __slots__ = ("axis", "channels_last", "int_repr", "prepared", "scale", "zero_point")
    __array_priority__ = 1000
    scale: Any  # float per tensor, float64 array per channel
    zero_point: Any  # int per tensor, int64 array per channel

    def __init__(
        self, int_repr: np.ndarray, scale: Any, zero_point: Any, axis: int | None = None, channels_last: bool = False
    ) -> None:
        # torch's memory format of the tensor (quantized convolutions write NHWC): it decides
        # which elements ATen's elementwise kernels reach in their scalar tail
        self.channels_last = channels_last and int_repr.ndim == 4
        # a weight's forms for the kernels, made on first use and kept (vm.ops.quantized.layers):
        # a weight's integers are never written after it is built
        self.prepared: dict[Any, Any] | None = None
        if int_repr.dtype not in CODE_OF_STORAGE:
            raise RunError(f"a quantized tensor holds uint8, int8 or int32 values, not {int_repr.dtype}")
        self.int_repr = int_repr
        self.axis = axis
        if axis is None:
            self.scale = float(scale)
            self.zero_point = int(zero_point)
        else:
            self.scale = np.asarray(scale, dtype=np.float64).reshape(-1)
            self.zero_point = np.asarray(zero_point, dtype=np.int64).reshape(-1)
            if not 0 <= axis < max(int_repr.ndim, 1) or self.scale.shape[0] != int_repr.shape[axis]:
                raise RunError(
                    f"a per-channel quantized tensor of shape {list(int_repr.shape)} needs one scale per index of "
                    f"axis {axis}, got {self.scale.shape[0]}"
                )

    def check_zero_points(self) -> None:
        """Refuse zero points outside the dtype's range, as torch refuses every use of them
        (``dequantize_tensor_per_channel_affine zero_point 2048 is above upper bound``); a
        reader calls this, so a file's tensor is refused when read.  Scales are not checked:
        torch computes with a nan, 0, inf or negative one, and so does irvm."""
        name, _storage, qmin, qmax = QDTYPES[self.code]
        zps = np.asarray(self.zero_point).reshape(-1)
        bad = np.flatnonzero((zps < qmin) | (zps > qmax))
        if bad.size:
            k = int(bad[0])
            where = f" (channel {k} of axis {self.axis})" if self.per_channel else ""
            raise RunError(f"zero point {int(zps[k])}{where} is outside {name}'s range [{qmin}, {qmax}]")

    # --- what shape queries and the runtimes read
    @property
    def shape(self) -> tuple[int, ...]:
        return self.int_repr.shape

    @property
    def ndim(self) -> int:
        return self.int_repr.ndim

    @property
    def size(self) -> int:
        return self.int_repr.size

    @property
    def nbytes(self) -> int:
        return self.int_repr.nbytes

    @property
    def code(self) -> int:
        """torch's ScalarType code: 12 qint8, 13 quint8, 14 qint32."""
        return CODE_OF_STORAGE[self.int_repr.dtype]

    @property
    def qdtype(self) -> str:
        return QDTYPES[self.code][0]

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    def like(self, int_repr: np.ndarray) -> QTensor:
        """A tensor with this one's quantizer over other values (a view, a max, a pool); it
        keeps the memory format when it keeps the rank."""
        return QTensor(int_repr, self.scale, self.zero_point, self.axis, self.channels_last and int_repr.ndim == 4)

    def __getattr__(self, name: str) -> Any:
        raise QuantizedValueError(
            f"a quantized tensor ({self.qdtype}) reached an operation that takes float tensors (it read .{name}); "
            "irvm runs it only through the quantized operators (dequantize it first)"
        )

    def channel_params(self, ndim: int | None = None) -> tuple[Any, Any]:
        """``(scale, zero_point)`` shaped to broadcast against the values."""
        if self.axis is None:
            return self.scale, self.zero_point
        shape = [1] * (self.ndim if ndim is None else ndim)
        shape[self.axis] = -1
        return self.scale.reshape(shape), self.zero_point.reshape(shape)

    def dequantize(self) -> np.ndarray:
        """float32 values, as torch's dequantize computes them: ``(q - zp) * scale`` in float."""
        scale, zp = self.channel_params()
        centered = (self.int_repr.astype(np.int64) - zp).astype(np.float32)
        if self.axis is not None:  # ATen's per-channel loop multiplies by the float64 scale
            return (centered.astype(np.float64) * scale).astype(np.float32)
        return centered * np.float32(scale)

    def __array__(self, *_args: Any, **_kwargs: Any) -> np.ndarray:
        raise RunError(
            f"a quantized tensor ({self.qdtype}) reached an operation that takes float tensors; "
            "irvm runs it only through the quantized operators (dequantize it first)"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, QTensor):
            return NotImplemented
        return (
            self.axis == other.axis
            and self.int_repr.dtype == other.int_repr.dtype
            and np.array_equal(self.int_repr, other.int_repr)
            and np.array_equal(self.scale, other.scale)
            and np.array_equal(self.zero_point, other.zero_point)
        )

    __hash__ = None  # pyright: ignore[reportAssignmentType]  (mutable: not hashable)

    def __repr__(self) -> str:
        values = np.array2string(self.dequantize(), separator=", ", prefix="tensor(")
        if self.axis is None:
            quant = f"quantization_scheme=torch.per_tensor_affine, scale={self.scale}, zero_point={self.zero_point}"
        else:
            scales = np.array2string(self.scale, separator=", ")
            zps = np.array2string(self.zero_point, separator=", ")
            quant = (
                f"quantization_scheme=torch.per_channel_affine,\n       scale=tensor({scales}, dtype=torch.float64),"
                f"\n       zero_point=tensor({zps}),\n       axis={self.axis}"
            )
        return f"tensor({values}, size={tuple(self.shape)}, dtype={self.qdtype},\n       {quant})"


class ConvPacked:
    """``Conv{1,2,3}dPackedParamsBase`` (and the transposed forms): what ``convNd_prepack``
    holds.  ``weight`` is a QTensor (out, in/groups, *k) -- (in, out/groups, *k) transposed --,
    ``bias`` a float32 array or None; lists have one entry per spatial dimension."""

    __slots__ = ("bias", "dilation", "groups", "output_padding", "padding", "stride", "transpose", "weight")

    def __init__(
        self, weight: QTensor, bias: np.ndarray | None, stride: list[int], padding: list[int], dilation: list[int],
        groups: int, output_padding: list[int] | None = None, transpose: bool = False,
    ) -> None:
        self.weight, self.bias = weight, bias
        self.stride, self.padding, self.dilation = list(stride), list(padding), list(dilation)
        self.groups = int(groups)
        self.output_padding = list(output_padding) if output_padding else [0] * len(self.stride)
        self.transpose = bool(transpose)

    @property
    def spatial(self) -> int:
        return self.weight.ndim - 2

    def __repr__(self) -> str:
        kind = "ConvTranspose" if self.transpose else "Conv"
        return f"<{kind}{self.spatial}dPackedParams weight {list(self.weight.shape)} stride {self.stride} groups {self.groups}>"


class LinearPacked:
    """``LinearPackedParamsBase``: a quantized (qint8) weight (out, in), or a float32 one for
    the fp16 form (its values rounded to float16, as torch's fp16 packing stores them), and
    a float32 bias or None."""

    __slots__ = ("bias", "weight")

    def __init__(self, weight: QTensor | np.ndarray, bias: np.ndarray | None) -> None:
        self.weight, self.bias = weight, bias

    @property
    def fp16(self) -> bool:
        return not isinstance(self.weight, QTensor)

    def __repr__(self) -> str:
        kind = "fp16" if self.fp16 else "int8"
        return f"<LinearPackedParams {kind} weight {list(self.weight.shape)}>"


class CellParams:
    """``rnn.CellParamsBase`` of a dynamic quantized RNN cell: ``kind`` is torch's tag
    (``quantized_dynamic``, ``quantized_dynamic_fp16``), ``ih``/``hh`` the packed input and
    hidden weights, ``b_ih``/``b_hh`` the float biases."""

    __slots__ = ("b_hh", "b_ih", "hh", "ih", "kind", "reduce_range")

    def __init__(
        self, kind: str, ih: LinearPacked, hh: LinearPacked, b_ih: Any, b_hh: Any, reduce_range: bool = False
    ) -> None:
        self.kind, self.ih, self.hh, self.b_ih, self.b_hh = kind, ih, hh, b_ih, b_hh
        self.reduce_range = reduce_range

    def __repr__(self) -> str:
        return f"<CellParams {self.kind} ih {list(self.ih.weight.shape)}>"


class EmbeddingPacked:
    """``EmbeddingPackedParamsBase``: a per-row quantized weight (quint8 with float
    per-row scale and offset), its bit rate and optimization flags."""

    __slots__ = ("bit_rate", "weight")

    def __init__(self, weight: QTensor, bit_rate: int = 8) -> None:
        self.weight, self.bit_rate = weight, bit_rate

    def __repr__(self) -> str:
        return f"<EmbeddingPackedParams {self.bit_rate}-bit weight {list(self.weight.shape)}>"


PACKED_TYPES = (ConvPacked, LinearPacked, CellParams, EmbeddingPacked)
