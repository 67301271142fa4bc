"""Each quantized operator against torch's, with both engines: the same integers where torch
is deterministic.  Where irvm does not reproduce torch's rounding exactly the test states the
largest difference it allows, in quantization steps, and prints the one it saw.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import vm.ops  # noqa: E402,F401  (fills the registry)
from vm.core.errors import RunError  # noqa: E402
from vm.core.quantized import ConvPacked, LinearPacked, QTensor  # noqa: E402
from vm.ops import registry as R  # noqa: E402
from vm.ops.quantized import using_engine  # noqa: E402

ENGINES = ["fbgemm", "qnnpack"]


def q_of(t: Any) -> QTensor:
    """torch's quantized tensor as irvm's (its memory format too)."""
    ints = t.int_repr().contiguous().numpy().copy()
    cl = t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()
    if t.qscheme() == torch.per_tensor_affine:
        return QTensor(ints, t.q_scale(), t.q_zero_point(), channels_last=cl)
    return QTensor(ints, t.q_per_channel_scales().numpy(), t.q_per_channel_zero_points().numpy(),
                   t.q_per_channel_axis())


def steps(mine: QTensor, theirs: Any, allowed: int = 0) -> None:
    a = mine.int_repr.astype(np.int64)
    b = theirs.int_repr().numpy().astype(np.int64)
    assert a.shape == b.shape
    assert mine.scale == pytest.approx(theirs.q_scale()) and mine.zero_point == theirs.q_zero_point()
    worst = int(np.abs(a - b).max()) if a.size else 0
    print(f"largest difference: {worst} step(s), {(a != b).sum()} of {a.size} elements")
    assert worst <= allowed


def op(name: str) -> Any:
    return R.lookup(name).kernel


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Any:
    torch.backends.quantized.engine = request.param
    with using_engine(request.param):
        yield request.param


def _act(shape: tuple[int, ...], scale: float, zp: int, seed: int = 0, cl: bool = False) -> Any:
    g = torch.Generator().manual_seed(seed)
    t = torch.quantize_per_tensor(torch.randn(*shape, generator=g) * 3, scale, zp, torch.quint8)
    return t.contiguous(memory_format=torch.channels_last) if cl else t


@pytest.mark.parametrize("n", [1, 63, 64, 150, 1000])
def test_quantize_per_tensor_is_torchs(n: int) -> None:
    """quantize_per_tensor rounds as fbgemm's Quantize (one fused multiply-add), for any
    length and both 8-bit dtypes; int_repr, q_scale and q_zero_point read it back."""
    x = (torch.randn(n, generator=torch.Generator().manual_seed(n)) * 5)
    for code, dtype, zp in ((13, torch.quint8, 117), (12, torch.qint8, -3)):
        mine = op("aten::quantize_per_tensor")(x.numpy(), 0.031, zp, code)
        steps(mine, torch.quantize_per_tensor(x, 0.031, zp, dtype))
        assert op("aten::q_scale")(mine) == pytest.approx(0.031)
        assert op("aten::q_zero_point")(mine) == zp
        assert np.array_equal(op("aten::int_repr")(mine), mine.int_repr)
        assert np.array_equal(op("aten::dequantize.self")(mine), torch.quantize_per_tensor(x, 0.031, zp, dtype).dequantize().numpy())


def test_quantize_per_channel_is_torchs() -> None:
    x = torch.randn(4, 6, 3)
    scales, zps = torch.rand(6).double() / 10 + 0.01, torch.randint(-5, 5, (6,))
    theirs = torch.quantize_per_channel(x, scales, zps, 1, torch.qint8)
    mine = op("aten::quantize_per_channel")(x.numpy(), scales.numpy(), zps.numpy(), 1, 12)
    assert np.array_equal(mine.int_repr, theirs.int_repr().numpy())
    assert np.array_equal(mine.dequantize(), theirs.dequantize().numpy())
    assert op("aten::q_per_channel_axis")(mine) == 1


@pytest.mark.parametrize("cl", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("shape", [(2, 16, 7, 7), (1, 72, 14, 14), (1, 40, 5, 5), (1, 3, 2, 2)])
def test_elementwise_ops_are_torchs(engine: str, shape: tuple[int, ...], cl: bool) -> None:
    """hardswish, mul, relu, hardsigmoid, sigmoid, max_pool2d, adaptive_avg_pool2d and cat
    give torch's integers, in either memory format (ATen's vectorized and scalar paths round
    differently, and which elements each reaches follows the memory order)."""
    x, y = _act(shape, 0.05, 128, 1, cl), _act(shape, 0.07, 120, 2, cl)
    steps(op("quantized::hardswish")(q_of(x), 0.04, 100), torch.ops.quantized.hardswish(x, 0.04, 100))
    steps(op("quantized::mul")(q_of(x), q_of(y), 0.3, 110), torch.ops.quantized.mul(x, y, 0.3, 110))
    steps(op("aten::relu")(q_of(x)), torch.relu(x))
    steps(op("aten::hardsigmoid")(q_of(x)), torch.nn.functional.hardsigmoid(x))
    steps(op("aten::sigmoid")(q_of(x)), torch.sigmoid(x))
    steps(op("aten::max_pool2d")(q_of(x), [3, 3], [2, 2], [1, 1], [1, 1], False), torch.nn.functional.max_pool2d(x, 3, 2, 1))
    steps(op("aten::adaptive_avg_pool2d")(q_of(x), [1, 1]), torch.nn.functional.adaptive_avg_pool2d(x, 1))
    # channels-last concatenation of a channel count that is no multiple of 8: see _cat_nhwc
    allowed = 1 if cl and shape[1] % 8 else 0
    steps(op("quantized::cat")([q_of(x), q_of(y)], 1, 0.08, 100), torch.ops.quantized.cat([x, y], 1, 0.08, 100), allowed)


def test_add_is_torchs_but_for_the_scalar_tail(engine: str) -> None:
    """quantized::add gives torch's integers on the elements ATen's vectorized loop covers
    (fbgemm) or everywhere (qnnpack's fixed-point add); on fbgemm's last (fewer than 64)
    elements ATen's scalar path rounds in a way irvm does not reproduce exactly: at most one
    step there."""
    x, y = _act((2, 16, 7, 7), 0.05, 128, 1), _act((2, 16, 7, 7), 0.07, 120, 2)
    mine = op("quantized::add")(q_of(x), q_of(y), 0.1, 110)
    theirs = torch.ops.quantized.add(x, y, 0.1, 110)
    cut = mine.size // 64 * 64
    assert np.array_equal(mine.int_repr.reshape(-1)[:cut], theirs.int_repr().numpy().reshape(-1)[:cut])
    steps(mine, theirs, allowed=1)
    steps(op("quantized::add_relu")(q_of(x), q_of(y), 0.1, 110), torch.ops.quantized.add_relu(x, y, 0.1, 110), allowed=1)


def _conv_weight(shape: tuple[int, ...], per_channel: bool, seed: int = 0) -> Any:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(*shape, generator=g)
    if per_channel:
        scales = (torch.rand(shape[0], generator=g) / 20 + 0.005).double()
        return torch.quantize_per_channel(w, scales, torch.zeros(shape[0], dtype=torch.long), 0, torch.qint8)
    return torch.quantize_per_tensor(w, 0.02, 0, torch.qint8)


def _packed_conv(w: Any, b: Any, stride: list[int], padding: list[int], dilation: list[int], groups: int) -> ConvPacked:
    return ConvPacked(q_of(w), None if b is None else b.numpy(), stride, padding, dilation, groups)


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
@pytest.mark.parametrize(("groups", "stride", "relu"), [(1, 1, False), (2, 2, True), (8, 1, False)])
def test_conv2d_is_torchs(engine: str, per_channel: bool, groups: int, stride: int, relu: bool) -> None:
    """quantized::conv2d(_relu): exact int32 accumulation and the engine's requantization
    (fbgemm: float bias scaled by 1 / (sx * sw); qnnpack: bias quantized to int32).  The
    activations stay below 128, as fbgemm's qconfig keeps them (reduce_range): fbgemm's
    saturating int16 pair sums are emulated for linear layers, not for convolutions."""
    if engine == "qnnpack" and per_channel:
        pytest.skip("torch's qnnpack takes per-channel conv weights only through its own packing path")
    g = torch.Generator().manual_seed(groups * 10 + stride)
    x = torch.quantize_per_tensor(torch.rand(2, 8, 9, 9, generator=g) * 3.8, 0.03, 0, torch.quint8)
    w = _conv_weight((16, 8 // groups, 3, 3), per_channel)
    b = torch.randn(16)
    packed = torch.ops.quantized.conv2d_prepack(w, b, [stride, stride], [1, 1], [1, 1], groups)
    theirs = (torch.ops.quantized.conv2d_relu if relu else torch.ops.quantized.conv2d)(x, packed, 0.2, 64)
    name = "quantized::conv2d_relu.new" if relu else "quantized::conv2d.new"
    mine = op(name)(q_of(x), _packed_conv(w, b, [stride] * 2, [1, 1], [1, 1], groups), 0.2, 64)
    steps(mine, theirs)


def test_conv1d_conv3d_and_transposed_are_torchs(engine: str) -> None:
    x1 = torch.quantize_per_tensor(torch.rand(2, 4, 11) * 3.7, 0.03, 3, torch.quint8)
    w1 = _conv_weight((6, 4, 3), False)
    p1 = torch.ops.quantized.conv1d_prepack(w1, torch.randn(6), [2], [1], [1], 1)
    mine_p1 = op("quantized::conv1d_prepack")(q_of(w1), p1.unpack()[1].numpy() if p1.unpack()[1] is not None else None,
                                              [2], [1], [1], 1)
    steps(op("quantized::conv1d")(q_of(x1), mine_p1, 0.1, 60), torch.ops.quantized.conv1d(x1, p1, 0.1, 60))
    if engine == "fbgemm":  # torch's qnnpack has no 3-d convolution
        x3 = torch.quantize_per_tensor(torch.rand(1, 3, 5, 6, 6) * 3.8, 0.03, 0, torch.quint8)
        w3 = _conv_weight((4, 3, 3, 3, 3), False)
        p3 = torch.ops.quantized.conv3d_prepack(w3, None, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1)
        mine_p3 = ConvPacked(q_of(w3), None, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1)
        steps(op("quantized::conv3d.new")(q_of(x3), mine_p3, 0.1, 60), torch.ops.quantized.conv3d(x3, p3, 0.1, 60))
    xt = torch.quantize_per_tensor(torch.rand(1, 4, 5, 5) * 3.8, 0.03, 0, torch.quint8)
    wt = _conv_weight((4, 3, 3, 3), False)
    pt = torch.ops.quantized.conv_transpose2d_prepack(wt, None, [2, 2], [1, 1], [1, 1], [1, 1], 1)
    mine_pt = ConvPacked(q_of(wt), None, [2, 2], [1, 1], [1, 1], 1, [1, 1], True)
    steps(op("quantized::conv_transpose2d")(q_of(xt), mine_pt, 0.1, 60), torch.ops.quantized.conv_transpose2d(xt, pt, 0.1, 60))


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_linear_is_torchs(engine: str, per_channel: bool) -> None:
    if engine == "qnnpack" and per_channel:
        pytest.skip("torch's qnnpack takes per-channel linear weights only through its own packing path")
    x = torch.quantize_per_tensor(torch.rand(5, 32) * 7, 0.03, 0, torch.quint8)  # past 127: saturating pairs
    w, b = _conv_weight((24, 32), per_channel), torch.randn(24)
    packed = torch.ops.quantized.linear_prepack(w, b)
    steps(op("quantized::linear")(q_of(x), LinearPacked(q_of(w), b.numpy()), 0.2, 64),
          torch.ops.quantized.linear(x, packed, 0.2, 64))
    steps(op("quantized::linear_relu")(q_of(x), LinearPacked(q_of(w), b.numpy()), 0.2, 64),
          torch.ops.quantized.linear_relu(x, packed, 0.2, 64))


@pytest.mark.parametrize("reduce_range", [False, True])
@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_linear_dynamic_is_fbgemms(per_channel: bool, reduce_range: bool) -> None:
    """fbgemm's dynamic linear, bit for bit: the input's parameters from its range, int8
    pairs summed into a saturating int16 (AVX2's vpmaddubsw: reachable without
    reduce_range), and one fused multiply-add of the accumulator by sx * sw and the bias."""
    torch.backends.quantized.engine = "fbgemm"
    w, b = _conv_weight((64, 33), per_channel), torch.randn(64)
    x = torch.randn(3, 7, 33) * 3
    theirs = torch.ops.quantized.linear_dynamic(x, torch.ops.quantized.linear_prepack(w, b), reduce_range).numpy()
    with using_engine("fbgemm"):
        mine = op("quantized::linear_dynamic")(x.numpy(), LinearPacked(q_of(w), b.numpy()), reduce_range)
    assert mine.dtype == np.float32 and np.array_equal(mine, theirs)


def test_linear_dynamic_fp16_is_close_to_torchs() -> None:
    torch.backends.quantized.engine = "fbgemm"
    w, b, x = torch.randn(16, 8), torch.randn(16), torch.randn(4, 8)
    theirs = torch.ops.quantized.linear_dynamic_fp16(x, torch.ops.quantized.linear_prepack_fp16(w, b)).numpy()
    mine = op("quantized::linear_dynamic_fp16")(x.numpy(), op("quantized::linear_prepack_fp16")(w.numpy(), b.numpy()))
    print("largest difference:", float(np.abs(mine - theirs).max()))
    assert np.allclose(mine, theirs, rtol=1e-5, atol=1e-5)


def test_a_quantized_tensor_reaching_a_float_kernel_is_a_clear_error() -> None:
    """A float operator that does not take quantized tensors refuses one by name, never
    computing on its integers."""
    q = QTensor(np.zeros((2, 2), np.uint8), 0.1, 3)
    with pytest.raises(RunError, match="quantized tensor"):
        op("aten::exp")(q)
    with pytest.raises(RunError, match="expects a float tensor"):
        op("quantized::linear_dynamic")(q, LinearPacked(QTensor(np.zeros((2, 2), np.int8), 0.1, 0), None), False)
    with pytest.raises(RunError, match="expected packed parameters"):
        op("quantized::conv2d.new")(QTensor(np.zeros((1, 1, 2, 2), np.uint8), 0.1, 3), object(), 0.1, 0)


@pytest.mark.parametrize("hw", [1, 4, 7, 14])
def test_global_average_pools_of_channels_last_tensors_are_torchs(engine: str, hw: int) -> None:
    """A global average of a channels-last tensor, as a squeeze-excitation block takes it
    (mobilenet_v3): ``adaptive_avg_pool2d(x, 1)`` goes to QNNPACK's global pool under qnnpack,
    and ``mean(x, [2, 3])`` under fbgemm is ATen's float mean, one in-order sum per channel."""
    x = _act((2, 480, hw, hw), 0.0123, 3, seed=hw, cl=True)
    steps(op("aten::adaptive_avg_pool2d")(q_of(x), [1, 1]), torch.nn.functional.adaptive_avg_pool2d(x, 1))
    steps(op("aten::mean.dim")(q_of(x), [2, 3], True, None), torch.mean(x, [2, 3], True))
    steps(op("aten::mean.dim")(q_of(x), [2, 3], False, None), torch.mean(x, [2, 3], False))
