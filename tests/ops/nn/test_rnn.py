"""Recurrent operators against torch modules: the four cells, and the fused lstm / gru /
rnn_tanh / rnn_relu ops over layers, directions, batch_first, no-bias, projections and
unbatched input, fed the module's flat weight list in PyTorch's order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches, to_numpy
from tests.support.nn import FEW, op

torch = pytest.importorskip("torch")
nn = torch.nn


@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(batched):
    torch.manual_seed(0)
    x, h, c = torch.randn(3, 5), torch.randn(3, 7), torch.randn(3, 7)
    if not batched:
        x, h, c = x[0], h[0], c[0]
    lstm, gru = nn.LSTMCell(5, 7), nn.GRUCell(5, 7)
    tanh, relu = nn.RNNCell(5, 7), nn.RNNCell(5, 7, nonlinearity="relu")

    def params(cell):
        return [to_numpy(p) for p in (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh)]

    assert_matches(op("aten::lstm_cell")(to_numpy(x), [to_numpy(h), to_numpy(c)], *params(lstm)), lstm(x, (h, c)), atol=1e-6)
    assert_matches(op("aten::gru_cell")(to_numpy(x), to_numpy(h), *params(gru)), gru(x, h), atol=1e-6)
    assert_matches(op("aten::rnn_tanh_cell")(to_numpy(x), to_numpy(h), *params(tanh)), tanh(x, h), atol=1e-6)
    assert_matches(op("aten::rnn_relu_cell")(to_numpy(x), to_numpy(h), *params(relu)), relu(x, h), atol=1e-6)
    no_bias = nn.GRUCell(5, 7, bias=False)
    assert_matches(op("aten::gru_cell")(to_numpy(x), to_numpy(h), to_numpy(no_bias.weight_ih), to_numpy(no_bias.weight_hh), None, None),
          no_bias(x, h), atol=1e-6)


@FEW
@given(st.data())
def test_fused_recurrent_ops_match_torch_modules(data):
    kind = data.draw(st.sampled_from(["lstm", "gru", "rnn_tanh", "rnn_relu"]))
    layers, bidirectional = data.draw(st.integers(1, 3)), data.draw(st.booleans())
    batch_first, bias = data.draw(st.booleans()), data.draw(st.booleans())
    proj = data.draw(st.sampled_from([0, 3])) if kind == "lstm" else 0
    batched = data.draw(st.booleans())
    torch.manual_seed(data.draw(st.integers(0, 2**16)))
    cls = {"lstm": nn.LSTM, "gru": nn.GRU}.get(kind, nn.RNN)
    extra = {"proj_size": proj} if kind == "lstm" else {}
    if cls is nn.RNN:
        extra = {"nonlinearity": kind.split("_")[1]}
    module = cls(4, 6, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias, **extra).eval()
    steps, batch = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 3))
    dirs = 2 if bidirectional else 1
    x = torch.randn(batch, steps, 4) if batch_first else torch.randn(steps, batch, 4)
    h0 = torch.randn(layers * dirs, batch, proj or 6)
    if not batched:
        x, h0 = (x[0] if batch_first else x[:, 0]), h0[:, 0]
    flat = [to_numpy(p) for p in module._flat_weights]
    tail = (bias, layers, 0.0, False, bidirectional, batch_first)
    with torch.no_grad():
        if kind == "lstm":
            c0 = torch.randn(layers * dirs, *h0.shape[1:-1], 6)
            out, (h, c) = module(x, (h0, c0))
            got = op("aten::lstm.input")(to_numpy(x), [to_numpy(h0), to_numpy(c0)], flat, *tail)
            assert_matches(got, (out, h, c), atol=1e-5)
        else:
            out, h = module(x, h0)
            got = op(f"aten::{kind}.input")(to_numpy(x), to_numpy(h0), flat, *tail)
            assert_matches(got, (out, h), atol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_training_inter_layer_dropout_matches_torch_where_it_is_not_random(kind):
    """In training, the output of every layer but the last goes through dropout: with
    p=1 the second layer sees zeros and with p=0 nothing drops, so both match torch
    exactly; the last layer's output is never dropped."""
    torch.manual_seed(3)
    cls = nn.LSTM if kind == "lstm" else nn.GRU
    x = torch.randn(4, 2, 3)
    for p in (1.0, 0.0):
        module = cls(3, 5, num_layers=3, dropout=p).train()
        flat = [to_numpy(w) for w in module._flat_weights]
        h0 = torch.randn(3, 2, 5)
        with torch.no_grad():
            if kind == "lstm":
                c0 = torch.randn(3, 2, 5)
                out, (h, c) = module(x, (h0, c0))
                got = op("aten::lstm.input")(to_numpy(x), [to_numpy(h0), to_numpy(c0)], flat, True, 3, p, True, False, False)
                assert_matches(got, (out, h, c), atol=1e-5)
            else:
                out, h = module(x, h0)
                got = op("aten::gru.input")(to_numpy(x), to_numpy(h0), flat, True, 3, p, True, False, False)
                assert_matches(got, (out, h), atol=1e-5)


def test_training_inter_layer_dropout_draws_from_the_runtime_generator():
    """With 0 < p < 1 the result depends on the draw: the same seed repeats it, another
    seed changes it, and eval mode (train=False) ignores dropout."""
    from vm.ops.random import using_generator

    torch.manual_seed(4)
    module = nn.LSTM(3, 5, num_layers=2, dropout=0.5)
    flat = [to_numpy(w) for w in module._flat_weights]
    x, h0, c0 = (to_numpy(torch.randn(*shape)) for shape in ((6, 1, 3), (2, 1, 5), (2, 1, 5)))

    def run(seed, train=True):
        with using_generator(np.random.default_rng(seed)):
            return op("aten::lstm.input")(x, [h0, c0], flat, True, 2, 0.5, train, False, False)[0]

    np.testing.assert_array_equal(run(1), run(1))
    assert not np.array_equal(run(1), run(2))
    with torch.no_grad():
        assert_matches(run(1, train=False), module.eval()(torch.from_numpy(x), (torch.from_numpy(h0), torch.from_numpy(c0)))[0],
              atol=1e-5)


def test_wrong_parameter_count_is_a_clear_error():
    with pytest.raises(ValueError, match="parameters"):
        op("aten::gru.input")(np.zeros((2, 1, 3), np.float32), np.zeros((1, 1, 4), np.float32),
                              [np.zeros((12, 3), np.float32)] * 3, True, 1, 0.0, False, False, False)
