"""Quantized tensors and packed parameters in a TorchScript archive, rebuilt without torch.

``torch.jit.save`` pickles a quantized tensor as ``torch._utils._rebuild_qtensor(storage,
offset, size, stride, quantizer, requires_grad, hooks)`` over a ``torch.QInt8Storage`` /
``QUInt8Storage`` / ``QInt32Storage`` (int8 / uint8 / int32 bytes), where ``quantizer`` is
``(torch.per_tensor_affine, scale, zero_point)`` or ``(torch.per_channel_affine, scales,
zero_points, axis)`` (scales a float64 tensor, zero points an int64 one).  The unpickler's
table (``unpickle._GLOBALS``) sends those names here; nothing else is reachable.

torch's packed-parameter objects (``__torch__.torch.classes.quantized.*PackedParamsBase``,
``__torch__.torch.classes.rnn.CellParamsBase``) pickle as ``NEWOBJ`` of the class and
``BUILD`` with what their ``__getstate__`` returned; the classes below are subclasses of the
runtime's types (``vm.core.quantized``) whose ``__setstate__`` reads that state:

- conv (``Conv2dPackedParamsBase``, ``Conv3d...``; conv1d is stored as a 2-d one over a
  weight with a unit height): ``("2", [config, weight], [bias])`` with ``config`` an int16
  tensor ``[spatial_dim, stride*d, padding*d, dilation*d, output_padding*d, groups,
  transpose]``; the older ``("3", ...)``/version-1 forms are refused by name;
- linear: ``(weight, bias)``, the weight a qint8 tensor, or a float one for the fp16 form;
- RNN cell: ``(kind, [b_ih, b_hh], doubles, longs, [packed_ih, packed_hh])``, kind
  ``quantized_dynamic`` or ``quantized_fp16`` (whose biases sit in the packed linears).

torch.ao's quantized conv modules (``Conv2d``, ``ConvReLU2d``, ``ConvTranspose2d``...)
define ``__getstate__``/``__setstate__`` themselves: their state is a 15-tuple
``(in_channels, out_channels, kernel_size, stride, padding, dilation, transposed,
output_padding, groups, padding_mode, weight, bias, scale, zero_point, training)`` from which
their ``__setstate__`` re-packs the weight.  ``restore_modules`` does what that method does
(the attributes, and ``_packed_params`` as ``convNd_prepack`` would build it), so the code
that reads ``self._packed_params`` finds it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.torchscript.unpickle import ArchiveError, Record, _rebuild_tensor, allow_globals
from vm.core.errors import RunError
from vm.core.quantized import CellParams, ConvPacked, LinearPacked, QTensor

STORAGE_DTYPES = {"QInt8Storage": "int8", "QUInt8Storage": "uint8", "QInt32Storage": "int32"}


class QScheme:
    """What ``torch.per_tensor_affine`` (and the other qscheme globals) unpickle to."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


PER_TENSOR = QScheme("per_tensor_affine")
PER_CHANNEL = QScheme("per_channel_affine")
PER_CHANNEL_FLOAT = QScheme("per_channel_affine_float_qparams")


def rebuild_qtensor(storage: Any, offset: Any, size: Any, stride: Any, quantizer: Any, *_rest: Any) -> QTensor:
    """``torch._utils._rebuild_qtensor``: the integer values as ``_rebuild_tensor_v2`` reads
    them (bounds-checked), with the quantizer's parameters."""
    values = _rebuild_tensor(storage, offset, size, stride)
    if not isinstance(quantizer, tuple) or not quantizer or not isinstance(quantizer[0], QScheme):
        raise ArchiveError(f"a quantized tensor has a malformed quantizer {quantizer!r:.80}")
    scheme = quantizer[0]
    try:
        if scheme is PER_TENSOR and len(quantizer) == 3:
            q = QTensor(values, float(quantizer[1]), int(quantizer[2]))
        elif scheme is PER_CHANNEL and len(quantizer) == 4:
            scales, zps, axis = quantizer[1:]
            if not isinstance(scales, np.ndarray) or not isinstance(zps, np.ndarray) or not isinstance(axis, int):
                raise ArchiveError(f"a per-channel quantized tensor has malformed parameters {quantizer!r:.80}")
            if zps.shape != scales.shape:
                raise RunError(f"{zps.size} zero points for {scales.size} scales")
            q = QTensor(values, scales, zps, axis)
        else:
            q = None
        if q is not None:
            q.check_zero_points()
            return q
    except RunError as err:
        raise ArchiveError(f"a quantized tensor of shape {list(values.shape)} is malformed: {err.message}") from None
    raise ArchiveError(f"quantized tensors with quantizer {scheme!r} are not supported (irvm reads per-tensor and "
                       "per-channel affine ones)")


def _qtensor(value: Any, what: str) -> QTensor:
    if not isinstance(value, QTensor):
        raise ArchiveError(f"{what}: expected a quantized weight, found {type(value).__name__}")
    return value


def _bias(value: Any, what: str) -> np.ndarray | None:
    if value is None:
        return None
    if not isinstance(value, np.ndarray) or value.dtype.kind != "f":
        raise ArchiveError(f"{what}: the bias is {type(value).__name__}, not a float tensor")
    return value.astype(np.float32, copy=False)


class PickledConvPacked(ConvPacked):
    """``Conv{2,3}dPackedParamsBase`` as unpickled (see the module docstring)."""

    __slots__ = ()

    def __new__(cls, *_args: Any) -> PickledConvPacked:
        return object.__new__(cls)

    def __setstate__(self, state: Any) -> None:
        what = "Conv packed params"
        if not (isinstance(state, tuple) and len(state) == 3 and state[0] == "2"):
            version = state[0] if isinstance(state, tuple) and state else state
            raise ArchiveError(f"{what}: unsupported serialization format {version!r:.40} (irvm reads version '2')")
        tensors, optional = state[1], state[2]
        if not (isinstance(tensors, list) and len(tensors) >= 2 and isinstance(optional, list)):
            raise ArchiveError(f"{what}: malformed state")
        config = np.asarray(tensors[0]).astype(np.int64).tolist()
        weight = _qtensor(tensors[1], what)
        d = config[0] if config else 0
        if d not in (2, 3) or len(config) != 3 + 4 * d or weight.ndim != d + 2:
            raise ArchiveError(f"{what}: a config of {config} does not fit a weight of shape {list(weight.shape)}")
        parts = [config[1 + i * d : 1 + (i + 1) * d] for i in range(4)]
        ConvPacked.__init__(
            self, weight, _bias(optional[0] if optional else None, what), parts[0], parts[1], parts[2],
            config[1 + 4 * d], parts[3], bool(config[2 + 4 * d] & 1),
        )


class PickledLinearPacked(LinearPacked):
    """``LinearPackedParamsBase`` as unpickled: state ``(weight, bias)``."""

    __slots__ = ()

    def __new__(cls, *_args: Any) -> PickledLinearPacked:
        return object.__new__(cls)

    def __setstate__(self, state: Any) -> None:
        what = "Linear packed params"
        if not (isinstance(state, tuple) and len(state) == 2):
            raise ArchiveError(f"{what}: malformed state {state!r:.60}")
        weight = state[0]
        if isinstance(weight, np.ndarray) and weight.dtype.kind == "f" and weight.ndim == 2:
            weight = weight.astype(np.float16).astype(np.float32)  # the fp16 form
        elif not (isinstance(weight, QTensor) and weight.ndim == 2):
            raise ArchiveError(f"{what}: the weight is not a 2-d tensor")
        LinearPacked.__init__(self, weight, _bias(state[1], what))


class PickledCellParams(CellParams):
    """``rnn.CellParamsBase`` as unpickled (see the module docstring)."""

    __slots__ = ()

    def __new__(cls, *_args: Any) -> PickledCellParams:
        return object.__new__(cls)

    def __setstate__(self, state: Any) -> None:
        what = "RNN cell params"
        if not (isinstance(state, tuple) and len(state) == 5 and isinstance(state[0], str)):
            raise ArchiveError(f"{what}: malformed state {state!r:.60}")
        kind, tensors, _doubles, longs, packed = state
        if kind not in ("quantized_dynamic", "quantized_fp16") or not isinstance(packed, list) or len(packed) != 2:
            raise ArchiveError(f"{what}: cells of kind {kind!r} are not supported (irvm reads quantized_dynamic and "
                               "quantized_fp16)")
        ih, hh = packed
        if not isinstance(ih, LinearPacked) or not isinstance(hh, LinearPacked):
            raise ArchiveError(f"{what}: the weights are not packed linear parameters")
        if kind == "quantized_dynamic":
            if not (isinstance(tensors, list) and len(tensors) == 2):
                raise ArchiveError(f"{what}: expected two biases")
            b_ih, b_hh = (_bias(t, what) for t in tensors)
        else:
            b_ih, b_hh = ih.bias, hh.bias
        reduce_range = bool(longs[0]) if isinstance(longs, list) and longs else False
        CellParams.__init__(self, kind, ih, hh, b_ih, b_hh, reduce_range)


# the globals the unpickler's table takes from here: (module, name) -> what it builds
GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_qtensor"): rebuild_qtensor,
    ("torch", "per_tensor_affine"): PER_TENSOR,
    ("torch", "per_channel_affine"): PER_CHANNEL,
    ("torch", "per_channel_affine_float_qparams"): PER_CHANNEL_FLOAT,
    ("__torch__.torch.classes.quantized", "Conv2dPackedParamsBase"): PickledConvPacked,
    ("__torch__.torch.classes.quantized", "Conv3dPackedParamsBase"): PickledConvPacked,
    ("__torch__.torch.classes.quantized", "LinearPackedParamsBase"): PickledLinearPacked,
    ("__torch__.torch.classes.rnn", "CellParamsBase"): PickledCellParams,
}
allow_globals(GLOBALS, STORAGE_DTYPES, buildable=(PickledConvPacked, PickledLinearPacked, PickledCellParams))

_CONV_FIELDS = (
    "in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "transposed", "output_padding",
    "groups", "padding_mode", "weight", "bias", "scale", "zero_point", "training",
)


def restore_modules(root: Any) -> None:
    """Do what the ``__setstate__`` of torch.ao's quantized conv modules does, for every
    such module under ``root`` (see the module docstring); other objects are left alone."""
    stack, seen = [root], set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, Record):
            if _is_conv_state(obj.state) and not obj.attributes:
                _restore_conv(obj)
            stack.extend(obj.attributes.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())


def _is_conv_state(state: Any) -> bool:
    return (
        isinstance(state, tuple) and len(state) == len(_CONV_FIELDS) and isinstance(state[9], str)
        and isinstance(state[10], QTensor) and isinstance(state[6], bool)
    )


def _restore_conv(obj: Record) -> None:
    fields: dict[str, Any] = dict(zip(_CONV_FIELDS, obj.state))
    weight, bias = fields.pop("weight"), _bias(fields.pop("bias"), obj.qualname)
    d = weight.ndim - 2
    stride, padding, dilation = (list(fields[k]) for k in ("stride", "padding", "dilation"))
    if fields["padding_mode"] != "zeros":
        padding = [0] * d  # the module pads in forward, with its padding mode
    out_pad = list(fields["output_padding"])
    if d == 1:  # conv1d_prepack: a 2-d convolution over a unit height
        weight = weight.like(weight.int_repr[:, :, None, :]) if weight.axis in (None, 0) else weight
        stride, padding, dilation, out_pad = [1, *stride], [0, *padding], [1, *dilation], [0, *out_pad]
    obj.attributes.clear()
    obj.attributes.update(fields)
    obj.attributes["_packed_params"] = ConvPacked(
        weight, bias, stride, padding, dilation, fields["groups"], out_pad, fields["transposed"]
    )
    obj.state = None


def quantized_type(value: Any) -> Any:
    """The IR type of a quantized value: Tensor for a QTensor, torch's class for packed
    parameters (what a frozen graph declares for its ``object(0x...)`` constants)."""
    from compiler import types as T

    if isinstance(value, ConvPacked):
        return T.ClassType(f"__torch__.torch.classes.quantized.Conv{value.spatial}dPackedParamsBase")
    if isinstance(value, LinearPacked):
        return T.ClassType("__torch__.torch.classes.quantized.LinearPackedParamsBase")
    if isinstance(value, CellParams):
        return T.ClassType("__torch__.torch.classes.rnn.CellParamsBase")
    return T.TENSOR
