"""Quantized tensors and packed parameters as plain ``.npz`` entries (no pickle).

A quantized tensor stored under ``NAME`` is its integer values and its quantizer beside it:

    NAME              the integers (uint8 quint8, int8 qint8, int32 qint32), the tensor's shape
    NAME:scale        float64: 0-d per tensor, 1-d (one per channel) per channel
    NAME:zero_point   int64, shaped as the scale
    NAME:axis         int64 0-d, only per channel: the channel dimension

Packed parameters (what the quantized convolutions and linears take; ``tools/export_torch.py``
writes them for the printed-IR path, ``irc compile model.pt`` beside the ``.irbc``) are a group
of entries under their attribute's dotted name ``P``, ``P:packed`` naming the kind:

    P:packed = "conv"    P:weight (a quantized tensor as above), P:bias (float32, optional),
                         P:stride, P:padding, P:dilation, P:output_padding (int64, one per
                         spatial dimension; conv1d is stored 2-d, as torch packs it), P:groups,
                         P:transpose (0-d)
    P:packed = "linear"  P:weight (quantized; or float32 for the fp16 form), P:bias (optional)
    P:packed = "cell"    P:kind (``quantized_dynamic`` / ``quantized_fp16``), P:ih and P:hh (two
                         linear groups), P:b_ih, P:b_hh (optional), P:reduce_range (0-d bool)

``encode`` writes a value so; ``decode`` turns a flat mapping back (every other entry kept as
it is), refusing an incomplete or contradictory group by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vm.core.errors import RunError
from vm.core.quantized import CellParams, ConvPacked, LinearPacked, QTensor

SEP = ":"


def encode(prefix: str, value: Any, into: dict[str, np.ndarray]) -> None:
    """Store a QTensor or packed-parameters ``value`` under ``prefix`` (module docstring)."""
    if isinstance(value, QTensor):
        into[prefix] = value.int_repr
        into[prefix + ":scale"] = np.asarray(value.scale, np.float64)
        into[prefix + ":zero_point"] = np.asarray(value.zero_point, np.int64)
        if value.axis is not None:
            into[prefix + ":axis"] = np.array(value.axis, np.int64)
    elif isinstance(value, ConvPacked):
        into[prefix + ":packed"] = np.array("conv")
        encode(prefix + ":weight", value.weight, into)
        if value.bias is not None:
            into[prefix + ":bias"] = value.bias
        for name in ("stride", "padding", "dilation", "output_padding"):
            into[f"{prefix}:{name}"] = np.array(getattr(value, name), np.int64)
        into[prefix + ":groups"] = np.array(value.groups, np.int64)
        into[prefix + ":transpose"] = np.array(value.transpose)
    elif isinstance(value, LinearPacked):
        into[prefix + ":packed"] = np.array("linear")
        if isinstance(value.weight, QTensor):
            encode(prefix + ":weight", value.weight, into)
        else:
            into[prefix + ":weight"] = value.weight
        if value.bias is not None:
            into[prefix + ":bias"] = value.bias
    elif isinstance(value, CellParams):
        into[prefix + ":packed"] = np.array("cell")
        into[prefix + ":kind"] = np.array(value.kind)
        into[prefix + ":reduce_range"] = np.array(value.reduce_range)
        encode(prefix + ":ih", value.ih, into)
        encode(prefix + ":hh", value.hh, into)
        for name in ("b_ih", "b_hh"):
            if getattr(value, name) is not None:
                into[f"{prefix}:{name}"] = getattr(value, name)
    else:
        raise RunError(f"{prefix}: cannot store a {type(value).__name__} as quantized entries")


def decode(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``flat`` with every quantized group reassembled under its name (module docstring)."""
    if not any(SEP in k for k in flat):
        return dict(flat)
    out = {k: v for k, v in flat.items() if SEP not in k}
    roots = sorted({k.split(SEP, 1)[0] for k in flat if SEP in k})
    for root in roots:
        out[root] = _value(root, flat)
    return out


def _value(prefix: str, flat: Mapping[str, Any]) -> Any:
    packed = flat.get(prefix + ":packed")
    if packed is None:
        return _qtensor(prefix, flat)
    kind = str(np.asarray(packed).item())
    if kind == "conv":
        ints = {n: _ints(flat, f"{prefix}:{n}") for n in ("stride", "padding", "dilation", "output_padding")}
        return ConvPacked(
            _qtensor(prefix + ":weight", flat), _optional(flat, prefix + ":bias"), ints["stride"], ints["padding"],
            ints["dilation"], int(_need(flat, prefix + ":groups")), ints["output_padding"],
            bool(_need(flat, prefix + ":transpose")),
        )
    if kind == "linear":
        return _linear(prefix, flat)
    if kind == "cell":
        return CellParams(
            str(np.asarray(_need(flat, prefix + ":kind")).item()), _linear(prefix + ":ih", flat),
            _linear(prefix + ":hh", flat), _optional(flat, prefix + ":b_ih"), _optional(flat, prefix + ":b_hh"),
            bool(flat.get(prefix + ":reduce_range", False)),
        )
    raise RunError(f"{prefix}:packed names an unknown kind of packed parameters {kind!r} (conv, linear, cell)")


def _linear(prefix: str, flat: Mapping[str, Any]) -> LinearPacked:
    weight: Any = (
        _qtensor(prefix + ":weight", flat)
        if prefix + ":weight:scale" in flat
        else np.asarray(_need(flat, prefix + ":weight"), np.float32)
    )
    return LinearPacked(weight, _optional(flat, prefix + ":bias"))


def _qtensor(prefix: str, flat: Mapping[str, Any]) -> QTensor:
    values = np.asarray(_need(flat, prefix))
    scale, zp = _need(flat, prefix + ":scale"), _need(flat, prefix + ":zero_point")
    axis = flat.get(prefix + ":axis")
    if axis is None:
        q = QTensor(values, float(np.asarray(scale).reshape(-1)[0]), int(np.asarray(zp).reshape(-1)[0]))
    else:
        q = QTensor(values, np.asarray(scale), np.asarray(zp), int(np.asarray(axis)))
    try:
        q.check_zero_points()
    except RunError as err:
        raise RunError(f"quantized tensor {prefix!r}: {err.message}") from None
    return q


def _need(flat: Mapping[str, Any], key: str) -> Any:
    if key not in flat:
        raise RunError(f"quantized entries are incomplete: {key!r} is missing")
    return flat[key]


def _optional(flat: Mapping[str, Any], key: str) -> np.ndarray | None:
    value = flat.get(key)
    return None if value is None else np.asarray(value, np.float32)


def _ints(flat: Mapping[str, Any], key: str) -> list[int]:
    return [int(v) for v in np.asarray(_need(flat, key)).reshape(-1)]
