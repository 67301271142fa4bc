"""torch's quantized values as irvm's (``vm.core.quantized``), for ``tools/export_torch.py``.

A quantized ``torch.Tensor`` becomes a ``QTensor`` (its ``int_repr`` with per-tensor or
per-channel parameters); a packed-parameters ``torch.ScriptObject`` (``Conv2dPackedParamsBase``,
``LinearPackedParamsBase``, ``rnn.CellParamsBase``) is rebuilt from its ``__getstate__`` by the
same code that reads it from a ``.pt`` archive (``compiler.torchscript.quantized``), so the
printed-IR path and the archive path hold identical values.  ``encode_all`` writes a weights
mapping with such values as plain ``.npz`` entries (``vm/files/quantized.py``).
"""

from __future__ import annotations

from typing import Any

import torch

from compiler.torchscript import quantized as CQ
from vm.core.quantized import PACKED_TYPES, QTensor
from vm.files.quantized import encode

_KINDS = {
    "Conv2dPackedParamsBase": CQ.PickledConvPacked,
    "Conv3dPackedParamsBase": CQ.PickledConvPacked,
    "LinearPackedParamsBase": CQ.PickledLinearPacked,
    "CellParamsBase": CQ.PickledCellParams,
}


def is_quantized_object(value: Any) -> bool:
    return isinstance(value, torch.ScriptObject) or (isinstance(value, torch.Tensor) and value.is_quantized)


def to_irvm(value: Any) -> Any:
    """A quantized tensor, packed-parameters object, or a tree of them, as irvm values."""
    if isinstance(value, torch.Tensor):
        if not value.is_quantized:
            return value.detach().cpu().numpy().copy()
        ints = value.int_repr().numpy().copy()
        if value.qscheme() == torch.per_tensor_affine:
            return QTensor(ints, value.q_scale(), value.q_zero_point())
        if value.qscheme() == torch.per_channel_affine:
            return QTensor(ints, value.q_per_channel_scales().numpy(), value.q_per_channel_zero_points().numpy(),
                           value.q_per_channel_axis())
        raise ValueError(f"quantized tensors of scheme {value.qscheme()} are not supported")
    if isinstance(value, torch.ScriptObject):
        state, qualname = value.__getstate__()
        cls = _KINDS.get(str(qualname).rsplit(".", 1)[-1])
        if cls is None:
            raise ValueError(f"cannot export a {qualname} object")
        obj = cls.__new__(cls)
        obj.__setstate__(to_irvm(state))
        return obj
    if isinstance(value, (list, tuple)):
        return type(value)(to_irvm(v) for v in value)
    return value


def encode_all(weights: dict[str, Any]) -> dict[str, Any]:
    """``weights`` with QTensor and packed-parameter values written as ``.npz`` entries."""
    flat: dict[str, Any] = {}
    for key, value in weights.items():
        if isinstance(value, (QTensor, *PACKED_TYPES)):
            encode(key, value, flat)
        else:
            flat[key] = value
    return flat
