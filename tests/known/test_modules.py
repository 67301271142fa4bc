"""Dumps of ``torch.jit.script(model).graph``: standard submodules run from irvm's own bodies.

Such a dump calls each submodule through ``prim::CallMethod[name="forward"]`` without its
body; ``compiler.known`` supplies the forward of standard ``torch.nn`` classes and
reads every setting (stride, eps, inplace...) from the weights, which
``tools/export_torch.known_module_settings`` writes.  Each model here is dumped at test
time, run on both engines and compared with torch; settings are non-default where the
module has any, so a body that ignored one would fail.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")
nn = torch.nn

sys.path.insert(0, str(ROOT / "tools"))
import export_torch

import compiler
import vm
from compiler.diagnostics import CompileError, RunError
from tests.support.against_torch import assert_matches


class Wrap(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.m = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.m(x)


class Wrap2(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.m = inner

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.m(x, y)


class AliasedInplace(nn.Module):
    """An in-place activation changes its input, which the caller reads again."""

    def __init__(self, act: nn.Module) -> None:
        super().__init__()
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(x)
        return x + y


def _stats(bn: nn.Module) -> nn.Module:
    """Running statistics away from 0 and 1, so that using them (or not) shows."""
    if getattr(bn, "running_mean", None) is not None:
        g = torch.Generator().manual_seed(1)
        bn.running_mean.copy_(torch.randn(bn.running_mean.shape, generator=g))
        bn.running_var.copy_(torch.rand(bn.running_var.shape, generator=g) + 0.5)
    return bn


def f32(*shape: int) -> Callable[[], torch.Tensor]:
    return lambda: torch.randn(*shape)


CASES: list[tuple[str, Callable[[], nn.Module], Callable[[], Any]]] = [
    ("linear", lambda: nn.Linear(5, 3), f32(2, 4, 5)),
    ("linear_nobias", lambda: nn.Linear(5, 3, bias=False), f32(4, 5)),
    ("bilinear", lambda: nn.Bilinear(3, 4, 2), lambda: (torch.randn(5, 3), torch.randn(5, 4))),
    ("bilinear_nobias", lambda: nn.Bilinear(3, 4, 2, bias=False), lambda: (torch.randn(2, 5, 3), torch.randn(2, 5, 4))),
    ("identity", lambda: nn.Identity(), f32(3, 2)),
    ("conv1d", lambda: nn.Conv1d(2, 4, 3), f32(2, 2, 9)),
    ("conv1d_strided_circular", lambda: nn.Conv1d(2, 4, 3, stride=2, padding=2, dilation=2, groups=2,
                                                  padding_mode="circular"), f32(2, 2, 11)),
    ("conv1d_same_nobias", lambda: nn.Conv1d(3, 2, 5, padding="same", bias=False), f32(1, 3, 8)),
    ("conv2d_groups", lambda: nn.Conv2d(3, 6, (3, 5), stride=(2, 1), padding=(1, 2), groups=3), f32(2, 3, 8, 9)),
    ("conv2d_reflect", lambda: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"), f32(1, 2, 6, 7)),
    ("conv2d_replicate_valid", lambda: nn.Conv2d(2, 3, 2, padding="valid", padding_mode="replicate"), f32(1, 2, 5, 5)),
    ("conv3d", lambda: nn.Conv3d(2, 2, 3, padding=1, stride=(1, 2, 1)), f32(1, 2, 4, 5, 4)),
    ("conv_transpose1d", lambda: nn.ConvTranspose1d(2, 3, 3, stride=2, padding=1, output_padding=1), f32(2, 2, 5)),
    ("conv_transpose2d", lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, groups=2, dilation=2), f32(1, 4, 4, 5)),
    ("layer_norm_eps", lambda: nn.LayerNorm(6, eps=1e-2), f32(2, 3, 6)),
    ("layer_norm_plain", lambda: nn.LayerNorm([3, 6], elementwise_affine=False), f32(2, 3, 6)),
    ("layer_norm_nobias", lambda: nn.LayerNorm(6, bias=False), f32(4, 6)),
    ("batch_norm1d_2d", lambda: _stats(nn.BatchNorm1d(4, eps=1e-1)), f32(3, 4)),
    ("batch_norm1d_3d", lambda: _stats(nn.BatchNorm1d(4)), f32(3, 4, 5)),
    ("batch_norm2d_plain", lambda: _stats(nn.BatchNorm2d(3, eps=1e-2, affine=False)), f32(2, 3, 4, 4)),
    ("batch_norm2d_untracked", lambda: nn.BatchNorm2d(3, track_running_stats=False), f32(2, 3, 4, 4)),
    ("batch_norm3d", lambda: _stats(nn.BatchNorm3d(2)), f32(1, 2, 3, 3, 2)),
    ("group_norm", lambda: nn.GroupNorm(2, 4, eps=1e-3), f32(2, 4, 5)),
    ("group_norm_plain", lambda: nn.GroupNorm(4, 4, affine=False), f32(2, 4, 3, 3)),
    ("instance_norm1d_affine", lambda: nn.InstanceNorm1d(3, affine=True, eps=1e-2), f32(2, 3, 7)),
    ("instance_norm2d_unbatched", lambda: nn.InstanceNorm2d(3), f32(3, 4, 5)),
    ("instance_norm2d_tracked", lambda: _stats(nn.InstanceNorm2d(3, track_running_stats=True)), f32(2, 3, 4, 5)),
    ("instance_norm1d_unbatched", lambda: nn.InstanceNorm1d(3, affine=True), f32(3, 6)),
    ("instance_norm3d", lambda: nn.InstanceNorm3d(2), f32(1, 2, 3, 4, 3)),
    ("embedding", lambda: nn.Embedding(10, 4, padding_idx=0), lambda: torch.randint(0, 10, (3, 5))),
    ("dropout", lambda: nn.Dropout(0.3), f32(4, 5)),
    ("dropout1d", lambda: nn.Dropout1d(0.5), f32(2, 3, 4)),
    ("dropout2d", lambda: nn.Dropout2d(0.5), f32(2, 3, 4, 4)),
    ("dropout3d", lambda: nn.Dropout3d(0.5), f32(1, 2, 3, 2, 2)),
    ("alpha_dropout", lambda: nn.AlphaDropout(0.5), f32(3, 4)),
    ("relu", lambda: nn.ReLU(), f32(3, 4)),
    ("relu6", lambda: nn.ReLU6(), lambda: torch.randn(3, 4) * 5),
    ("leaky_relu", lambda: nn.LeakyReLU(0.2), f32(3, 4)),
    ("gelu", lambda: nn.GELU(), f32(3, 4)),
    ("gelu_tanh", lambda: nn.GELU("tanh"), f32(3, 4)),
    ("silu", lambda: nn.SiLU(), f32(3, 4)),
    ("sigmoid", lambda: nn.Sigmoid(), f32(3, 4)),
    ("tanh", lambda: nn.Tanh(), f32(3, 4)),
    ("softmax0", lambda: nn.Softmax(dim=0), f32(3, 4)),
    ("softmax_last", lambda: nn.Softmax(dim=-1), f32(2, 3, 4)),
    ("softmax_implicit", lambda: nn.Softmax(), f32(2, 3, 4)),
    ("log_softmax", lambda: nn.LogSoftmax(1), f32(3, 4, 2)),
    ("elu", lambda: nn.ELU(0.5), f32(3, 4)),
    ("hardswish", lambda: nn.Hardswish(), lambda: torch.randn(3, 4) * 4),
    ("hardtanh", lambda: nn.Hardtanh(-2.0, 0.5), lambda: torch.randn(3, 4) * 3),
    ("hardsigmoid", lambda: nn.Hardsigmoid(), lambda: torch.randn(3, 4) * 4),
    ("mish", lambda: nn.Mish(), f32(3, 4)),
    ("max_pool1d", lambda: nn.MaxPool1d(3, stride=2, padding=1), f32(2, 3, 9)),
    ("max_pool2d", lambda: nn.MaxPool2d(2), f32(1, 2, 6, 7)),
    ("max_pool2d_dilated_ceil", lambda: nn.MaxPool2d((3, 2), stride=1, padding=1, dilation=(1, 2), ceil_mode=True),
     f32(1, 2, 6, 7)),
    ("avg_pool1d", lambda: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False), f32(2, 3, 9)),
    ("avg_pool2d", lambda: nn.AvgPool2d(2), f32(1, 2, 6, 6)),
    ("avg_pool2d_divisor", lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, divisor_override=4),
     f32(1, 2, 7, 6)),
    ("adaptive_avg_pool1d", lambda: nn.AdaptiveAvgPool1d(3), f32(2, 3, 8)),
    ("adaptive_avg_pool2d", lambda: nn.AdaptiveAvgPool2d((2, 3)), f32(1, 2, 7, 8)),
    ("adaptive_avg_pool2d_one", lambda: nn.AdaptiveAvgPool2d(1), f32(1, 2, 5, 5)),
    ("adaptive_max_pool1d", lambda: nn.AdaptiveMaxPool1d(3), f32(2, 3, 8)),
    ("adaptive_max_pool2d", lambda: nn.AdaptiveMaxPool2d((2, 3)), f32(1, 2, 7, 8)),
    ("unflatten", lambda: nn.Unflatten(1, (2, 3)), f32(4, 6, 2)),
    ("prelu", lambda: nn.PReLU(3, init=0.1), f32(2, 3, 4)),
    ("softplus", lambda: nn.Softplus(beta=2.0, threshold=1.5), f32(3, 4)),
    ("celu", lambda: nn.CELU(0.7), f32(3, 4)),
    ("selu", lambda: nn.SELU(), f32(3, 4)),
    ("threshold", lambda: nn.Threshold(0.1, -2.0), f32(3, 4)),
    ("glu", lambda: nn.GLU(dim=0), f32(4, 3)),
    ("log_sigmoid", lambda: nn.LogSigmoid(), f32(3, 4)),
    ("softshrink", lambda: nn.Softshrink(0.3), f32(3, 4)),
    ("hardshrink", lambda: nn.Hardshrink(0.7), f32(3, 4)),
    ("tanhshrink", lambda: nn.Tanhshrink(), f32(3, 4)),
    ("softmin", lambda: nn.Softmin(dim=1), f32(3, 4)),
    ("softmax2d", lambda: nn.Softmax2d(), f32(2, 3, 4, 2)),
    ("pixel_shuffle", lambda: nn.PixelShuffle(2), f32(1, 8, 3, 2)),
    ("pixel_unshuffle", lambda: nn.PixelUnshuffle(2), f32(1, 2, 4, 6)),
    ("zero_pad1d", lambda: nn.ZeroPad1d((1, 2)), f32(2, 3, 4)),
    ("zero_pad2d", lambda: nn.ZeroPad2d(1), f32(1, 2, 3, 4)),
    ("constant_pad2d", lambda: nn.ConstantPad2d((0, 1, 2, 3), 1.5), f32(1, 2, 3, 4)),
    ("reflection_pad1d", lambda: nn.ReflectionPad1d((2, 1)), f32(2, 3, 4)),
    ("reflection_pad2d", lambda: nn.ReflectionPad2d((1, 2, 0, 1)), f32(1, 2, 3, 4)),
    ("replication_pad2d", lambda: nn.ReplicationPad2d(2), f32(1, 2, 3, 4)),
    ("flatten", lambda: nn.Flatten(), f32(2, 3, 4)),
    ("flatten_0_1", lambda: nn.Flatten(0, 1), f32(2, 3, 4)),
]


def _args(made: Any) -> tuple[Any, ...]:
    return made if isinstance(made, tuple) else (made,)


def weights_of(model: nn.Module) -> dict[str, np.ndarray]:
    """What a user of tools/export_torch.py gets: the state_dict plus the known settings."""
    weights = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    weights.update(export_torch.known_module_settings(model))
    return weights


def run_both(text: str, weights: dict[str, Any], args: tuple[Any, ...]) -> list[Any]:
    program = compiler.compile_source(text, "<graph>")
    inputs = [a.numpy().copy() for a in args]
    return [
        vm.Interpreter(program, weights)(*[a.copy() for a in inputs]),
        vm.StaticRuntime(program, weights)(*[a.copy() for a in inputs]),
    ]


def check_against_torch(model: nn.Module, args: tuple[Any, ...]) -> str:
    """Dump ``model``'s ``.graph``, run it on both engines, compare with torch; the dump."""
    model = model.eval()
    scripted = torch.jit.script(model)
    text = str(scripted.graph)
    with torch.no_grad():
        expected = model(*[a.clone() for a in args])
    for got in run_both(text, weights_of(model), args):
        assert_matches(got, expected)
    return text


@pytest.mark.parametrize("name,make,inputs", CASES, ids=[c[0] for c in CASES])
def test_standard_module_called_from_a_graph_dump_matches_torch(name: str, make: Any, inputs: Any) -> None:
    torch.manual_seed(0)
    inner = make()
    args = _args(inputs())
    model = Wrap2(inner) if len(args) == 2 else Wrap(inner)
    text = check_against_torch(model, args)
    assert 'prim::CallMethod[name="forward"]' in text  # the dump really lacks the body


@pytest.mark.parametrize("act", [nn.ReLU(inplace=True), nn.LeakyReLU(0.1, inplace=True), nn.SiLU(inplace=True)])
def test_inplace_activation_changes_the_input_the_caller_reads_again(act: nn.Module) -> None:
    torch.manual_seed(0)
    check_against_torch(AliasedInplace(act), (torch.randn(3, 4),))


class LSTMWrap(nn.Module):
    def __init__(self, rnn: nn.LSTM) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x: torch.Tensor, h: torch.Tensor, c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        y, (h1, c1) = self.rnn(x)
        y2, (h2, c2) = self.rnn(x, (h, c))
        return y + y2, h1 + h2, c1 * c2


class GRUWrap(nn.Module):
    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y, h1 = self.rnn(x)
        y2, h2 = self.rnn(x, h)
        return y - y2, h1 + h2


RNN_CASES = [
    ("lstm_2layer_bidir_batch_first", lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True),
     (2, 5, 3), (4, 2, 4), (4, 2, 4)),
    ("lstm_proj_unbatched", lambda: nn.LSTM(3, 4, proj_size=2), (5, 3), (1, 2), (1, 4)),
    ("gru_nobias", lambda: nn.GRU(3, 4, bias=False), (5, 2, 3), (1, 2, 4), None),
    ("gru_unbatched_batch_first", lambda: nn.GRU(3, 4, batch_first=True, num_layers=2), (5, 3), (2, 4), None),
    ("rnn_relu_2layer", lambda: nn.RNN(3, 4, nonlinearity="relu", num_layers=2), (5, 2, 3), (2, 2, 4), None),
    ("rnn_tanh_bidir", lambda: nn.RNN(3, 4, batch_first=True, bidirectional=True), (2, 5, 3), (2, 2, 4), None),
]


@pytest.mark.parametrize("name,make,x,h,c", RNN_CASES, ids=[c[0] for c in RNN_CASES])
def test_recurrent_module_called_from_a_graph_dump_matches_torch(name: str, make: Any, x: Any, h: Any, c: Any) -> None:
    """LSTM/GRU/RNN: `forward__0` (the tensor overload), with and without an initial state."""
    torch.manual_seed(0)
    rnn = make()
    model = (LSTMWrap(rnn) if c else GRUWrap(rnn)).eval()
    args = tuple(torch.randn(*shape) for shape in (x, h, c) if shape)
    scripted = torch.jit.script(model)
    assert 'prim::CallMethod[name="forward__0"]' in str(scripted.graph)
    with torch.no_grad():
        expected = list(model(*args))
    for got in run_both(str(scripted.graph), weights_of(model), args):
        assert_matches(list(got), expected)


class AttentionWrap(nn.Module):
    def __init__(self, att: nn.MultiheadAttention) -> None:
        super().__init__()
        self.att = att

    def forward(
        self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, kpm: torch.Tensor | None,
        am: torch.Tensor | None, need_weights: bool, average: bool, causal: bool,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return self.att(q, k, v, key_padding_mask=kpm, need_weights=need_weights, attn_mask=am,
                        average_attn_weights=average, is_causal=causal)


def _causal(n: int) -> torch.Tensor:
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


ATTENTION_CASES = [
    # name, module, q shape, kv shape, key_padding_mask, attn_mask, need_weights, average, causal
    ("self_time_major", lambda: nn.MultiheadAttention(8, 2), (5, 3, 8), None, None, None, True, True, False),
    ("cross_batch_first_masks", lambda: nn.MultiheadAttention(8, 4, batch_first=True), (3, 5, 8), (3, 6, 8),
     torch.tensor([[False] * 5 + [True]] * 2 + [[False] * 6]), torch.randn(5, 6), True, False, False),
    ("bool_mask_no_weights", lambda: nn.MultiheadAttention(6, 3), (4, 2, 6), (7, 2, 6),
     None, torch.rand(4, 7) < 0.3, False, True, False),
    ("unbatched_bool_mask", lambda: nn.MultiheadAttention(4, 1), (3, 4), (5, 4),
     torch.tensor([False, False, True, False, False]), None, True, True, False),
    ("causal_hint", lambda: nn.MultiheadAttention(8, 2, batch_first=True), (2, 4, 8), None, None, _causal(4),
     False, True, True),
    ("per_head_mask", lambda: nn.MultiheadAttention(4, 2), (3, 2, 4), None, None, torch.randn(4, 3, 3),
     True, False, False),
]


@pytest.mark.parametrize("case", ATTENTION_CASES, ids=[c[0] for c in ATTENTION_CASES])
def test_multihead_attention_called_from_a_graph_dump_matches_torch(case: Any) -> None:
    """Masks (bool and float, padding and attention, per head), layouts, weights or not."""
    _name, make, q_shape, kv_shape, kpm, am, need_weights, average, causal = case
    torch.manual_seed(0)
    model = AttentionWrap(make()).eval()
    q = torch.randn(*q_shape)
    kv = q if kv_shape is None else torch.randn(*kv_shape)
    args = (q, kv, kv, kpm, am, need_weights, average, causal)
    scripted = torch.jit.script(model)
    with torch.no_grad():
        expected = model(*args)
    program = compiler.compile_source(str(scripted.graph), "<graph>")
    np_args = [a.numpy() if isinstance(a, torch.Tensor) else a for a in args]
    for engine in (vm.Interpreter, vm.StaticRuntime):
        out, weights = engine(program, weights_of(model))(*np_args)
        np.testing.assert_allclose(out, expected[0].numpy(), rtol=1e-4, atol=1e-5)
        if expected[1] is None:
            assert weights is None
        else:
            np.testing.assert_allclose(weights, expected[1].numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("options", [{"kdim": 4, "vdim": 4}, {"add_bias_kv": True}, {"add_zero_attn": True}])
def test_attention_settings_irvm_lacks_raise_with_the_reason(options: dict[str, Any]) -> None:
    model = AttentionWrap(nn.MultiheadAttention(8, 2, **options)).eval()
    program = compiler.compile_source(str(torch.jit.script(model).graph))
    q, kv = np.ones((3, 2, 8), np.float32), np.ones((3, 2, options.get("kdim", 8)), np.float32)
    weights = weights_of(model)
    unread = {"kdim": "q_proj_weight", "add_bias_kv": "bias_k", "add_zero_attn": None}[next(iter(options))]
    if unread is not None:  # weights the body cannot read: refused up front, naming them (vm.binding.strict)
        with pytest.raises(RunError, match=unread):
            vm.Interpreter(program, weights)
    with pytest.raises(RunError, match="MultiheadAttention with"):
        vm.Interpreter(program, weights, strict=False)(q, kv, kv, None, None, True, True, False)


class EncoderLayerWrap(nn.Module):
    def __init__(self, layer: nn.TransformerEncoderLayer) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None, kpm: torch.Tensor | None) -> torch.Tensor:
        return self.layer(x, src_mask=mask, src_key_padding_mask=kpm)


ENCODER_CASES = [
    ("post_norm_relu", {"d_model": 8, "nhead": 2, "dim_feedforward": 16}, (5, 2, 8), None, None),
    ("pre_norm_gelu_batch_first_padding", {"d_model": 8, "nhead": 4, "dim_feedforward": 12, "activation": "gelu",
                                               "norm_first": True, "batch_first": True, "layer_norm_eps": 1e-3},
     (2, 5, 8), None, torch.tensor([[False] * 4 + [True], [False] * 5])),
    ("causal_mask", {"d_model": 6, "nhead": 3, "dim_feedforward": 8}, (4, 3, 6), _causal(4), None),
]


@pytest.mark.parametrize("name,options,shape,mask,kpm", ENCODER_CASES, ids=[c[0] for c in ENCODER_CASES])
def test_transformer_encoder_layer_matches_torch(name: str, options: Any, shape: Any, mask: Any, kpm: Any) -> None:
    """Its body calls its children (attention, linears, norms, dropouts) through their known bodies."""
    torch.manual_seed(0)
    model = EncoderLayerWrap(nn.TransformerEncoderLayer(**options)).eval()
    x = torch.randn(*shape)
    with torch.no_grad():
        expected = model(x, mask, kpm).numpy()
    program = compiler.compile_source(str(torch.jit.script(model).graph), "<graph>")
    args = [x.numpy(), None if mask is None else mask.numpy(), None if kpm is None else kpm.numpy()]
    for engine in (vm.Interpreter, vm.StaticRuntime):
        np.testing.assert_allclose(engine(program, weights_of(model))(*args), expected, rtol=1e-4, atol=1e-5)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1, stride=2)
        self.norm = nn.BatchNorm2d(4)
        self.act = nn.Hardswish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.conv(x)))


class Net(nn.Module):
    """Known modules inside a user module, in a ModuleList loop, and in a Sequential."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.pool = nn.AdaptiveAvgPool2d(2)
        self.flat = nn.Flatten()
        self.layers = nn.ModuleList([nn.Linear(16, 8), nn.Linear(8, 8)])
        self.drop = nn.Dropout(0.2)
        self.head = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 3), nn.LogSoftmax(dim=1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.flat(self.pool(self.block(x)))
        for layer in self.layers:
            y = torch.tanh(layer(y))
        return self.head(self.drop(y))


def test_model_export_without_inlining_runs_on_both_engines() -> None:
    """export_torch --no-inline: `.graph` + bodies of the user's and container classes."""
    torch.manual_seed(0)
    model = Net().eval()
    _stats(model.block.norm)
    x = torch.randn(2, 2, 8, 8)
    exp = export_torch.export(model, "net", (x,), inline=False)
    # TorchScript mangles a class scripted twice in one process (___torch_mangle_N.Sequential)
    assert re.search(r"with __torch__\.torch\.nn\.modules\.container\.(___torch_mangle_\d+\.)?Sequential\.forward = graph\(",
                     exp.ir)
    assert "Linear.forward = graph" not in exp.ir  # known classes get irvm's body
    for got in run_both(exp.ir, exp.weights, (x,)):
        np.testing.assert_allclose(got, exp.outputs[0], rtol=1e-4, atol=1e-5)


def test_sequential_without_its_body_is_a_compile_error_naming_the_ways_out() -> None:
    text = str(torch.jit.script(Net().eval()).graph)
    with pytest.raises(CompileError, match=r"Sequential\.forward.*inlined_graph.*irvm run model\.pt"):
        compiler.compile_source(text)


def test_plain_state_dict_fails_before_running_naming_each_missing_setting() -> None:
    model = Wrap(nn.Conv2d(2, 3, 3, padding=1)).eval()
    program = compiler.compile_source(str(torch.jit.script(model).graph))
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    for engine in (vm.Interpreter, vm.StaticRuntime):
        with pytest.raises(RunError) as info:
            engine(program, state)  # constructing the engine: nothing has run
        message = str(info.value)
        for key in ("m.padding : int[]", "m.stride : int[]", "m.padding_mode : str", "m.groups : int"):
            assert key in message
        assert "m.weight" not in message and "irvm run model.pt" in message and "inlined_graph" in message


@pytest.mark.parametrize("inner", [nn.Dropout2d(0.1), nn.BatchNorm1d(3), nn.InstanceNorm1d(3, track_running_stats=True)])
def test_eval_mode_must_be_stated_not_assumed(inner: nn.Module) -> None:
    """`training` is no plain default here: the weights must say False (or True, which raises)."""
    model = Wrap(inner).eval()
    program = compiler.compile_source(str(torch.jit.script(model).graph))
    weights = weights_of(model)
    del weights["m.training"]
    with pytest.raises(RunError, match=r"m\.training : bool"):
        vm.Interpreter(program, weights)
    weights["m.training"] = np.array(True)
    with pytest.raises(RunError, match="training mode"):
        vm.StaticRuntime(program, weights)(np.ones((2, 3, 4), np.float32))


@pytest.mark.parametrize("inner", [nn.Dropout, nn.AlphaDropout])
@pytest.mark.parametrize("inplace", [False, True])
def test_dropout_modules_in_training_mode_draw_as_torch_does(inner: type, inplace: bool) -> None:
    """Dropout and AlphaDropout called through prim::CallMethod run in training mode too:
    p=1 gives torch's constant output (Dropout's zeros), p=0 and eval mode the input."""
    x = torch.randn(2, 3, 4)
    for p, train in ((1.0, True), (0.0, True), (0.5, False)):
        model = Wrap(inner(p, inplace=inplace)).train(train)
        want = model(x.clone()).numpy()
        program = compiler.compile_source(str(torch.jit.script(model).graph))
        for engine in (vm.Interpreter, vm.StaticRuntime):
            np.testing.assert_allclose(engine(program, weights_of(model))(x.numpy().copy()), want, atol=1e-6)


def test_a_setting_of_the_wrong_kind_is_reported_with_its_path() -> None:
    model = Wrap(nn.Conv1d(1, 1, 3)).eval()
    program = compiler.compile_source(str(torch.jit.script(model).graph))
    weights = weights_of(model) | {"m.padding": np.array("same")}
    with pytest.raises(RunError, match=r"'m\.padding'.*int\[\]"):
        vm.Interpreter(program, weights)


def test_a_dump_with_the_methods_own_body_keeps_it() -> None:
    """A `with <class>.forward = graph(...)` section wins over irvm's known body."""
    scripted = torch.jit.script(Wrap(nn.Linear(2, 2)).eval())
    linear = scripted.m._c._type().qualified_name()  # mangled when other Linears were scripted
    text = str(scripted.graph)
    own = (
        f"with {linear}.forward = graph(%self : {linear}, %input : Tensor):\n"
        "  %two : int = prim::Constant[value=2]()\n"
        "  %y : Tensor = aten::mul(%input, %two)\n"
        "  return (%y)\n"
    )
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    for got in run_both(text + own, {}, (torch.from_numpy(x),)):  # no weight is read
        np.testing.assert_array_equal(got, x * 2)


def test_optional_settings_must_be_given_and_none_is_spelled_out() -> None:
    model = Wrap(nn.Embedding(6, 3)).eval()
    program = compiler.compile_source(str(torch.jit.script(model).graph))
    ids = np.array([[1, 5], [0, 2]])
    with pytest.raises(RunError, match=r"m\.max_norm : float\?"):
        vm.Interpreter(program, {"m.weight": model.m.weight.detach().numpy()})
    weights = weights_of(model)
    assert str(weights["m.max_norm"]) == "None"
    np.testing.assert_array_equal(vm.Interpreter(program, weights)(ids), model.m.weight.detach().numpy()[ids])
    with pytest.raises(RunError, match="max_norm"):
        vm.Interpreter(program, weights | {"m.max_norm": np.array(1.0)})(ids)


def test_training_mode_batch_norm_is_refused_not_silently_run_in_eval() -> None:
    model = Wrap(nn.BatchNorm1d(3)).eval()
    program = compiler.compile_source(str(torch.jit.script(model).graph))
    weights = weights_of(model) | {"m.training": np.array(True)}
    with pytest.raises(RunError, match="training"):
        vm.Interpreter(program, weights)(np.ones((2, 3), np.float32))


def test_a_wrong_input_rank_raises_as_torch_does() -> None:
    model = Wrap(nn.BatchNorm2d(3)).eval()
    program = compiler.compile_source(str(torch.jit.script(model).graph))
    with pytest.raises(RunError, match="expected 4D input"):
        vm.Interpreter(program, weights_of(model))(np.ones((2, 3, 4), np.float32))


def test_results_the_known_body_does_not_have_are_a_compile_error() -> None:
    with pytest.raises(CompileError, match="return_indices"):
        compiler.compile_source(str(torch.jit.script(_PoolIdx().eval()).graph))


def test_a_call_declaring_another_result_type_is_a_compile_error() -> None:
    text = str(torch.jit.script(Wrap(nn.Linear(2, 2)).eval()).graph)
    changed = text.replace('Tensor = prim::CallMethod[name="forward"]', '(Tensor, Tensor) = prim::CallMethod[name="forward"]')
    assert changed != text
    with pytest.raises(CompileError, match=r"returns \(\(Tensor, Tensor\)\) here"):
        compiler.compile_source(changed)


INLINED = """graph(%self : __torch__.Net, %x : Tensor):
  %fc : __torch__.torch.nn.modules.linear.___torch_mangle_7.Linear = prim::GetAttr[name="fc"](%self)
  %act : __torch__.torch.nn.modules.activation.LeakyReLU = prim::GetAttr[name="act"](%self)
  %y : Tensor = prim::CallMethod[name="forward"](%fc, %x)
  %z : Tensor = prim::CallMethod[name="forward"](%act, %y)
  return (%z)
# CHECK: %fc : __torch__.torch.nn.modules.linear.___torch_mangle_7.Linear = prim::GetAttr[name="fc"](%self)
# CHECK: %weight : Tensor = prim::GetAttr[name="weight"](%fc)
# CHECK-NEXT: %bias : Tensor? = prim::GetAttr[name="bias"](%fc)
# CHECK-NEXT: %out : Tensor = aten::linear(%x, %weight, %bias)
# CHECK: %negative_slope : float = prim::GetAttr[name="negative_slope"](%act)
# CHECK-NEXT: %inplace : bool = prim::GetAttr[name="inplace"](%act)
# CHECK: aten::leaky_relu_(%out, %negative_slope)
# CHECK: aten::leaky_relu(%out, %negative_slope)
# CHECK-NOT: prim::CallMethod
# CHECK: with __torch__.torch.nn.modules.linear.___torch_mangle_7.Linear.forward = graph(
"""


def test_known_bodies_are_added_under_the_mangled_class_and_inlined_at_the_call() -> None:
    from compiler import parse
    from compiler.passes.add_known_methods import add_known_methods
    from compiler.passes.inline_calls import inline_calls
    from tests.support.filecheck_runner import check_output, strip_checks
    from vm.ir.printer import print_module

    module = parse(strip_checks(INLINED))
    with_bodies = add_known_methods(module)
    assert module.functions == {} and set(with_bodies.functions) == {
        "__torch__.torch.nn.modules.linear.___torch_mangle_7.Linear.forward",
        "__torch__.torch.nn.modules.activation.LeakyReLU.forward",
    }
    check_output(INLINED, print_module(inline_calls(with_bodies)))


class _PoolIdx(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool1d(2, return_indices=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _indices = self.pool(x)
        return y


def test_irc_compile_supplies_the_bodies_too(tmp_path: Path) -> None:
    from compiler.cli import main

    path = tmp_path / "m.ir"
    path.write_text(str(torch.jit.script(Wrap(nn.Linear(2, 2)).eval()).graph))
    assert main(["compile", str(path), "-o", str(tmp_path / "m.irbc")]) == 0
    from vm.program.irbc import load

    program = load(tmp_path / "m.irbc")  # the optimized IR it carries has the bodies inlined
    optimized = program.optimized_text()
    assert "aten::linear" in optimized and "prim::CallMethod" not in optimized
