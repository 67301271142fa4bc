"""Quantized values in archives and files: what the unpickler builds, what it still refuses,
and the plain ``.npz`` form of quantized tensors and packed parameters (no torch needed)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from compiler.torchscript import quantized as CQ  # noqa: F401  (registers the quantized globals)
from compiler.torchscript.unpickle import ArchiveError, safe_loads
from vm.core.errors import RunError
from vm.core.quantized import CellParams, ConvPacked, LinearPacked, QTensor
from vm.files.quantized import decode, encode


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _storage_pid(kind: str, key: str, numel: int) -> bytes:
    # ('storage', torch.<kind>, key, 'cpu', numel) as a persistent id
    return (
        b"(" + pickle.dumps("storage", 2)[2:-1] + _global("torch", kind) + pickle.dumps(key, 2)[2:-1]
        + pickle.dumps("cpu", 2)[2:-1] + pickle.dumps(numel, 2)[2:-1] + b"tQ"
    )


def _qtensor_pickle(quantizer: bytes, kind: str = "QInt8Storage") -> bytes:
    """``_rebuild_qtensor(storage, 0, (2, 3), (3, 1), quantizer, False, OrderedDict())``."""
    body = (
        _global("torch._utils", "_rebuild_qtensor") + b"(" + _storage_pid(kind, "0", 6)
        + pickle.dumps(0, 2)[2:-1] + pickle.dumps((2, 3), 2)[2:-1] + pickle.dumps((3, 1), 2)[2:-1]
        + quantizer + b"\x89" + _global("collections", "OrderedDict") + b")R" + b"tR"
    )
    return b"\x80\x02" + body + b"."


def _storage(values: np.ndarray):  # noqa: ANN202
    return lambda dtype, key, numel: values.astype(dtype)[:numel]


def test_a_per_tensor_quantized_tensor_is_rebuilt() -> None:
    quantizer = b"(" + _global("torch", "per_tensor_affine") + pickle.dumps(0.5, 2)[2:-1] + pickle.dumps(3, 2)[2:-1] + b"t"
    q = safe_loads(_qtensor_pickle(quantizer), _storage(np.arange(-3, 3)), "data.pkl")
    assert isinstance(q, QTensor) and q.int_repr.dtype == np.int8 and q.shape == (2, 3)
    assert q.scale == 0.5 and q.zero_point == 3 and q.axis is None
    assert np.array_equal(q.dequantize(), (np.arange(-3, 3).reshape(2, 3) - 3) * 0.5)
    assert "quantization_scheme=torch.per_tensor_affine, scale=0.5, zero_point=3" in repr(q)


def test_a_quantized_tensor_reaching_past_its_storage_is_refused() -> None:
    quantizer = b"(" + _global("torch", "per_tensor_affine") + pickle.dumps(0.5, 2)[2:-1] + pickle.dumps(3, 2)[2:-1] + b"t"
    with pytest.raises(ArchiveError, match="reaches element"):
        safe_loads(_qtensor_pickle(quantizer), lambda dtype, key, numel: np.zeros(4, dtype), "data.pkl")


def test_a_malformed_quantizer_is_refused_by_name() -> None:
    with pytest.raises(ArchiveError, match="malformed quantizer"):
        safe_loads(_qtensor_pickle(pickle.dumps((1, 2), 2)[2:-1]), _storage(np.arange(6)), "data.pkl")


def test_the_unpickler_still_refuses_every_other_global() -> None:
    """Registering the quantized globals opens nothing else: an unknown torch name, or any
    importable callable, is refused by name."""
    for module, name in (("torch", "per_tensor_symmetric"), ("os", "system"), ("torch._utils", "_rebuild_parameter")):
        with pytest.raises(ArchiveError, match=f"refusing to load global '{module}.{name}'"):
            safe_loads(b"\x80\x02" + _global(module, name) + b".", _storage(np.arange(1)), "data.pkl")


def test_packed_parameters_are_rebuilt_from_their_state() -> None:
    weight = QTensor(np.ones((4, 2, 3, 3), np.int8), 0.1, 0)
    conv = CQ.PickledConvPacked.__new__(CQ.PickledConvPacked)
    config = np.array([2, 2, 1, 1, 0, 1, 1, 0, 0, 2, 0], np.int16)
    conv.__setstate__(("2", [config, weight], [np.ones(4, np.float32)]))
    assert (conv.stride, conv.padding, conv.dilation, conv.groups, conv.transpose) == ([2, 1], [1, 0], [1, 1], 2, False)
    with pytest.raises(ArchiveError, match="unsupported serialization format"):
        CQ.PickledConvPacked.__new__(CQ.PickledConvPacked).__setstate__(("3", [config, weight], []))
    with pytest.raises(ArchiveError, match="does not fit a weight"):
        CQ.PickledConvPacked.__new__(CQ.PickledConvPacked).__setstate__(("2", [config[:5], weight], []))
    linear = CQ.PickledLinearPacked.__new__(CQ.PickledLinearPacked)
    linear.__setstate__((QTensor(np.ones((3, 2), np.int8), 0.1, 0), None))
    assert not linear.fp16 and linear.bias is None
    cell = CQ.PickledCellParams.__new__(CQ.PickledCellParams)
    cell.__setstate__(("quantized_dynamic", [np.zeros(3, np.float32)] * 2, [], [1], [linear, linear]))
    assert cell.reduce_range and cell.ih is linear
    with pytest.raises(ArchiveError, match="not supported"):
        CQ.PickledCellParams.__new__(CQ.PickledCellParams).__setstate__(("quantized", [], [], [], [linear, linear]))


def test_quantized_values_round_trip_through_npz_entries() -> None:
    """The plain .npz form of docs/weights.md: quantized tensors per tensor and per channel,
    conv, linear (int8 and fp16) and RNN-cell parameters come back equal."""
    per_channel = QTensor(np.arange(12, dtype=np.int8).reshape(3, 4), np.array([0.1, 0.2, 0.3]), np.array([0, 1, 2]), 0)
    per_tensor = QTensor(np.arange(6, dtype=np.uint8).reshape(2, 3), 0.25, 7)
    conv = ConvPacked(QTensor(np.ones((2, 1, 3, 3), np.int8), 0.1, 0), np.ones(2, np.float32), [1, 1], [1, 1], [1, 1], 1)
    lin = LinearPacked(per_channel, np.ones(3, np.float32))
    fp16 = LinearPacked(np.ones((3, 4), np.float32), None)
    cell = CellParams("quantized_dynamic", lin, lin, np.zeros(3, np.float32), None, True)
    flat: dict[str, np.ndarray] = {"plain": np.ones(2)}
    for key, value in (("a", per_channel), ("b", per_tensor), ("m.conv", conv), ("m.lin", lin), ("f", fp16), ("c", cell)):
        encode(key, value, flat)
    back = decode(flat)
    assert np.array_equal(back["plain"], np.ones(2))
    assert back["a"] == per_channel and back["b"] == per_tensor
    assert back["m.conv"].weight == conv.weight and back["m.conv"].stride == [1, 1]
    assert back["m.lin"].weight == per_channel and back["f"].fp16 and back["c"].reduce_range
    del flat["m.conv:groups"]
    with pytest.raises(RunError, match="'m.conv:groups' is missing"):
        decode(flat)


def test_a_quantized_tensor_is_no_array() -> None:
    q = QTensor(np.zeros(3, np.uint8), 0.1, 0)
    with pytest.raises(RunError, match="quantized tensor"):
        np.asarray(q)
    with pytest.raises(RunError, match="it read .dtype"):
        _ = q.dtype
    assert not hasattr(q, "flags")
    with pytest.raises(RunError, match="one scale per index"):
        QTensor(np.zeros((2, 3), np.int8), np.ones(2), np.zeros(2), 1)
