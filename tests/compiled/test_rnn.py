"""The compiled recurrent loops (vm/ops/compiled/rnn.py) against the numpy loop and torch:
LSTM (with and without projections), GRU and Elman RNNs, one to three layers, both
directions, batch first or not, with initial states, over sequences long enough for
rounding to build up through the state."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.compiled.support import both
from vm.ops import compiled
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
nn = torch.nn

pytestmark = pytest.mark.skipif(not compiled.ENABLED, reason="IRVM_KERNELS=numpy: the compiled tier is off")


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_compiled_loops_match_the_numpy_loop_and_torch(data) -> None:
    kind = data.draw(st.sampled_from(["lstm", "gru", "rnn_tanh", "rnn_relu"]))
    layers, bidirectional, batch_first = data.draw(st.integers(1, 3)), data.draw(st.booleans()), data.draw(st.booleans())
    proj = data.draw(st.sampled_from([0, 5])) if kind == "lstm" else 0
    hidden, steps, batch = data.draw(st.sampled_from([8, 33])), data.draw(st.integers(1, 40)), data.draw(st.integers(1, 3))
    torch.manual_seed(data.draw(st.integers(0, 2**16)))
    cls = {"lstm": nn.LSTM, "gru": nn.GRU}.get(kind, nn.RNN)
    extra = {"proj_size": proj} if kind == "lstm" else {"nonlinearity": kind.split("_")[1]} if cls is nn.RNN else {}
    module = cls(6, hidden, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first, **extra).eval()
    dirs = 2 if bidirectional else 1
    x = torch.randn(batch, steps, 6) if batch_first else torch.randn(steps, batch, 6)
    h0 = torch.randn(layers * dirs, batch, proj or hidden)
    flat = [p.detach().numpy() for p in module._flat_weights]
    tail = (True, layers, 0.0, False, bidirectional, batch_first)
    with torch.no_grad():
        if kind == "lstm":
            c0 = torch.randn(layers * dirs, batch, hidden)
            out, (h, c) = module(x, (h0, c0))
            want = (out, h, c)
            states = [h0.numpy(), c0.numpy()]
            run = lambda: lookup("aten::lstm.input").kernel(x.numpy(), states, flat, *tail)  # noqa: E731
        else:
            out, h = module(x, h0)
            want = (out, h)
            run = lambda: lookup(f"aten::{kind}.input").kernel(x.numpy(), h0.numpy(), flat, *tail)  # noqa: E731
    fast, slow = both(run)
    for f, s, w in zip(fast, slow, want):
        assert f.dtype == np.float32 and f.shape == tuple(w.shape)
        np.testing.assert_allclose(f, w.numpy(), atol=2e-6, rtol=1e-5)
        np.testing.assert_allclose(f, s, atol=2e-6, rtol=1e-5)


def test_a_fused_recurrent_op_runs_its_time_loop_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """One compiled call per layer and direction, none from Python per time step."""
    family = compiled.family("rnn")
    calls: list[int] = []
    real = family.lstm

    def spy(gi, *rest):
        calls.append(gi.shape[0])
        real(gi, *rest)

    monkeypatch.setattr(family, "lstm", spy)
    module = nn.LSTM(4, 8, num_layers=2, bidirectional=True).eval()
    x = torch.randn(25, 2, 4)
    h0 = np.zeros((4, 2, 8), np.float32)
    flat = [p.detach().numpy() for p in module._flat_weights]
    got = lookup("aten::lstm.input").kernel(x.numpy(), [h0, h0], flat, True, 2, 0.0, False, True, False)
    with torch.no_grad():
        np.testing.assert_allclose(got[0], module(x)[0].numpy(), atol=2e-6)
    assert calls == [25, 25, 25, 25]


def test_an_empty_sequence_is_refused_as_torch_refuses_it() -> None:
    module = nn.GRU(4, 8).eval()
    flat = [p.detach().numpy() for p in module._flat_weights]
    with pytest.raises(ValueError, match="sequence length to be larger than 0"):
        lookup("aten::gru.input").kernel(np.zeros((0, 2, 4), np.float32), np.zeros((1, 2, 8), np.float32), flat,
                                         True, 1, 0.0, False, False, False)


def _cells(kind: str, layers: int, dirs: int, inputs: int, hidden: int, reduce_range: bool, seed: int) -> list:
    from vm.core.quantized import CellParams, LinearPacked, QTensor

    rng = np.random.default_rng(seed)
    gates = (4 if kind == "lstm" else 3) * hidden
    cells = []
    for layer in range(layers):
        for _ in range(dirs):
            width = inputs if layer == 0 else hidden * dirs
            packs = []
            for k in (width, hidden):
                w = QTensor(rng.integers(-128, 128, (gates, k)).astype(np.int8), 0.004, 0)
                packs.append(LinearPacked(w, rng.standard_normal(gates).astype(np.float32) * 0.1))
            cells.append(CellParams("quantized_dynamic", packs[0], packs[1], None, None, reduce_range))
    return cells


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["lstm", "gru"]), layers=st.integers(1, 2), bidirectional=st.booleans(),
       reduce_range=st.booleans(), kernel=st.sampled_from(["vnni", "avx2"]), steps=st.integers(1, 30),
       seed=st.integers(0, 2**16))
def test_compiled_dynamic_quantized_loops_match_the_numpy_loop(kind, layers, bidirectional, reduce_range, kernel,
                                                             steps, seed) -> None:
    """The compiled hidden map of a dynamic quantized LSTM/GRU step (vm/ops/compiled/qrnn.py)
    quantizes the state, multiplies in integers (saturating on fbgemm's AVX2 kernel) and
    scales as the numpy dynamic linear does: the same float32 values, bit for bit."""
    from vm.ops.quantized.arith import using_quantized

    dirs = 2 if bidirectional else 1
    cells = _cells(kind, layers, dirs, 5, 16, reduce_range, seed)
    rng = np.random.default_rng(seed + 1)
    x = (rng.standard_normal((steps, 2, 5)) * 2).astype(np.float32)
    h0 = (rng.standard_normal((layers * dirs, 2, 16))).astype(np.float32)
    with using_quantized(("fbgemm", kernel)):
        if kind == "lstm":
            run = lambda: lookup("aten::quantized_lstm.input").kernel(  # noqa: E731
                x, [h0, h0 * 0.5], cells, True, layers, 0.0, False, bidirectional, False, None, True)
        else:
            run = lambda: lookup("aten::quantized_gru.input").kernel(  # noqa: E731
                x, h0, cells, True, layers, 0.0, False, bidirectional, False)
        fast, slow = both(run)
    for f, s in zip(fast, slow):
        assert f.dtype == np.float32 and f.shape == s.shape
        np.testing.assert_array_equal(f, s)


def test_a_dynamic_quantized_lstm_step_maps_its_state_in_one_compiled_call(monkeypatch: pytest.MonkeyPatch) -> None:
    family = compiled.family("qrnn")
    calls: list[int] = []
    real = family.hidden_map

    def spy(h, *rest):
        calls.append(h.shape[0])
        real(h, *rest)

    monkeypatch.setattr(family, "hidden_map", spy)
    cells = _cells("lstm", 2, 1, 5, 16, True, 0)
    x = np.random.default_rng(0).standard_normal((12, 2, 5)).astype(np.float32)
    h0 = np.zeros((2, 2, 16), np.float32)
    lookup("aten::quantized_lstm.input").kernel(x, [h0, h0], cells, True, 2, 0.0, False, False, False, None, True)
    assert calls == [2] * 24  # 12 steps x 2 layers, batch 2


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_compiled_cells_match_the_numpy_cells_and_torch(batched: bool, bias: bool) -> None:
    """``aten::lstm_cell`` and ``aten::gru_cell``, called once per step from a TorchScript loop
    (streaming and decoding models), pay one compiled call after their two products."""
    torch.manual_seed(3)
    lstm, gru = nn.LSTMCell(5, 12, bias=bias), nn.GRUCell(5, 12, bias=bias)
    x, h, c = torch.randn(3, 5), torch.randn(3, 12), torch.randn(3, 12)
    if not batched:
        x, h, c = x[0], h[0], c[0]
    n = lambda t: t.detach().numpy()  # noqa: E731
    lp = [n(p) for p in (lstm.weight_ih, lstm.weight_hh)] + ([n(lstm.bias_ih), n(lstm.bias_hh)] if bias else [None, None])
    gp = [n(p) for p in (gru.weight_ih, gru.weight_hh)] + ([n(gru.bias_ih), n(gru.bias_hh)] if bias else [None, None])
    fast, slow = both(lambda: lookup("aten::lstm_cell").kernel(n(x), [n(h), n(c)], *lp))
    with torch.no_grad():
        want = lstm(x, (h, c))
    for f, s, w in zip(fast, slow, want):
        np.testing.assert_allclose(f, n(w), atol=1e-6)
        np.testing.assert_allclose(f, s, atol=1e-6)
    fast, slow = both(lambda: lookup("aten::gru_cell").kernel(n(x), n(h), *gp))
    with torch.no_grad():
        np.testing.assert_allclose(fast, n(gru(x, h)), atol=1e-6)
    np.testing.assert_allclose(fast, slow, atol=1e-6)


def test_states_of_another_batch_are_refused_not_read_past() -> None:
    """The compiled loops read their arrays unchecked: a state whose batch or width differs
    from the input's goes to the numpy path, which raises (torch refuses it too), never
    reading past the state into other memory."""
    w_ih, w_hh, b = np.ones((20, 4), np.float32), np.ones((20, 5), np.float32), np.ones(20, np.float32)
    x, h, short = np.ones((4, 4), np.float32), np.ones((4, 5), np.float32), np.ones((3, 5), np.float32)
    with pytest.raises(ValueError):
        lookup("aten::lstm_cell").kernel(x, [short, short], w_ih, w_hh, b, b)
    params = [w_ih, w_hh, b, b]
    with pytest.raises(ValueError):
        lookup("aten::lstm.input").kernel(np.ones((6, 4, 4), np.float32), [short[None], short[None]], params,
                                          True, 1, 0.0, False, False, False)
    got = lookup("aten::lstm_cell").kernel(x, [h, h], w_ih, w_hh, b, b)
    assert got[0].shape == (4, 5)
