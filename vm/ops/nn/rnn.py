"""Recurrent cells and the fused multi-layer recurrent operators.

Cells: ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``, with PyTorch's
gate order (LSTM ``i, f, g, o``; GRU ``r, z, n``, where the hidden projection of ``n`` is
multiplied by the reset gate *after* its bias).

Fused ops: ``aten::lstm.input``, ``aten::gru.input``, ``aten::rnn_tanh.input`` and
``aten::rnn_relu.input``, which scripted and traced ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN``
call with the module's flat weight list.  That list is ordered layer by layer and, in a
layer, forward direction then reverse, each direction contributing ``w_ih, w_hh``, then
``b_ih, b_hh`` when ``has_biases``, then ``w_hr`` when the LSTM has projections
(``proj_size > 0``, detected from the list's length).  Hidden state tensors are
``(num_layers * num_directions, batch, hidden)``, indexed ``layer * dirs + direction``.

A layer computes its input projection for every time step in one matmul (``T*B x I`` by
``I x G``), then steps through time: in float32 in one compiled call (``vm.ops.compiled.rnn``,
the recurrent product, gates and state update per step, no Python per step), else with one
``B x H`` by ``H x G`` matmul per step in a Python loop over time, which the recurrence
makes sequential.  Between layers,
in training (``train`` true), the output of every layer but the last goes through dropout
with probability ``dropout`` (``vm.ops.random``'s generator), as ATen's ``_rnn_impl`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops import compiled
from vm.ops.nn._util import copying_out, sigmoid
from vm.ops.random import dropout_impl
from vm.ops.registry import DtypeRule, Fact, kernel

Array = np.ndarray


def _proj(x: Array, w: Array, b: Array | None) -> Array:
    """``x @ w.T + b`` over the last axis, as one 2-d product (a stacked 3-d ``matmul`` runs one
    small GEMM per leading index, or numpy's own loop: 50x slower on a 160-step sequence)."""
    y = (x.reshape(-1, x.shape[-1]) @ w.T).reshape(*x.shape[:-1], w.shape[0])
    return y + b if b is not None else y


def lstm_step(gates: Array, c: Array) -> tuple[Array, Array]:
    """From pre-activation gates ``(.., 4H)`` and the cell state: (h', c')."""
    i, f, g, o = np.split(gates, 4, axis=-1)
    c2 = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c2), c2


def gru_step(gi: Array, gh: Array, h: Array) -> Array:
    """From the input and hidden projections ``(.., 3H)`` (biases included) and h: h'."""
    i_r, i_z, i_n = np.split(gi, 3, axis=-1)
    h_r, h_z, h_n = np.split(gh, 3, axis=-1)
    r = sigmoid(i_r + h_r)
    z = sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1 - z) * n + z * h


_CELL = DtypeRule((0, 2, 3, 4, 5))  # the input, the weights and the biases: one dtype


@kernel(
    "aten::lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
    "Tensor? b_hh=None) -> (Tensor, Tensor)",
    dtypes=_CELL,
)
def lstm_cell(
    x: np.ndarray,
    hx: Sequence[np.ndarray],
    w_ih: np.ndarray,
    w_hh: np.ndarray,
    b_ih: np.ndarray | None,
    b_hh: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    h, c = hx
    if (fam := compiled.ready("rnn")) is not None:  # the gates and state update in one compiled call
        done = fam.cell("lstm", x, (h, c), w_ih, w_hh, b_ih, b_hh)
        if done is not None:
            return done[0], done[1]
    return lstm_step(_proj(x, w_ih, b_ih) + _proj(h, w_hh, b_hh), c)


@copying_out
@kernel(
    "aten::gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
    "Tensor? b_hh=None) -> Tensor",
    dtypes=_CELL,
)
def gru_cell(
    x: np.ndarray,
    hx: np.ndarray,
    w_ih: np.ndarray,
    w_hh: np.ndarray,
    b_ih: np.ndarray | None,
    b_hh: np.ndarray | None,
) -> np.ndarray:
    if (fam := compiled.ready("rnn")) is not None:
        done = fam.cell("gru", x, (hx,), w_ih, w_hh, b_ih, b_hh)
        if done is not None:
            return done[0]
    return gru_step(_proj(x, w_ih, b_ih), _proj(hx, w_hh, b_hh), hx)


def _relu(x: Array) -> Array:
    return np.maximum(x, 0)


@copying_out
@kernel(
    "aten::rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
    "Tensor? b_hh=None) -> Tensor",
    dtypes=_CELL,
)
def rnn_tanh_cell(
    x: np.ndarray,
    hx: np.ndarray,
    w_ih: np.ndarray,
    w_hh: np.ndarray,
    b_ih: np.ndarray | None,
    b_hh: np.ndarray | None,
) -> np.ndarray:
    return np.tanh(_proj(x, w_ih, b_ih) + _proj(hx, w_hh, b_hh))


@copying_out
@kernel(
    "aten::rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, "
    "Tensor? b_hh=None) -> Tensor",
    dtypes=_CELL,
)
def rnn_relu_cell(
    x: np.ndarray,
    hx: np.ndarray,
    w_ih: np.ndarray,
    w_hh: np.ndarray,
    b_ih: np.ndarray | None,
    b_hh: np.ndarray | None,
) -> np.ndarray:
    return _relu(_proj(x, w_ih, b_ih) + _proj(hx, w_hh, b_hh))


# ---------------------------------------------------------------------------------------
# Fused multi-layer operators


# one layer and direction's (w_ih, w_hh, b_ih, b_hh, w_hr); the biases and projection may be absent
LayerWeights = tuple[Array, Array, Array | None, Array | None, Array | None]


def _split_params(params: Sequence[Array], has_biases: bool, num_layers: int, dirs: int) -> list[LayerWeights]:
    """Per (layer, direction): [w_ih, w_hh, b_ih, b_hh, w_hr], absent ones None."""
    groups = num_layers * dirs
    if len(params) % groups:
        raise ValueError(f"{len(params)} RNN parameters do not split into {num_layers} layers x {dirs} directions")
    per = len(params) // groups
    base = 4 if has_biases else 2
    if per not in (base, base + 1):
        raise ValueError(f"expected {base} (or {base + 1} with projections) parameters per layer and direction, got {per}")
    out: list[LayerWeights] = []
    for g in range(groups):
        chunk = list(params[g * per : (g + 1) * per])
        w_ih, w_hh = chunk[0], chunk[1]
        b_ih, b_hh = (chunk[2], chunk[3]) if has_biases else (None, None)
        w_hr = chunk[-1] if per == base + 1 else None
        out.append((w_ih, w_hh, b_ih, b_hh, w_hr))
    return out


def _run_direction(
    xs: Array,
    state: tuple[Array, ...],
    weights: LayerWeights,
    reverse: bool,
    kind: str,
) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """One layer, one direction over time-major ``xs (T, B, I)``: (outputs (T, B, H), final state)."""
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    gi_all = _proj(xs, w_ih, b_ih)  # (T, B, G): every time step in one matmul
    if (fam := compiled.ready("rnn")) is not None:  # the time loop as one compiled call (float32)
        done = fam.run(kind, gi_all, w_hh, b_hh, w_hr, state, reverse)
        if done is not None:
            return done
    steps = range(xs.shape[0] - 1, -1, -1) if reverse else range(xs.shape[0])
    h = state[0]
    c = state[1] if kind == "lstm" else None
    outs: list[Array] = []  # in the order of ``steps``
    for t in steps:
        gh = _proj(h, w_hh, b_hh)
        if kind == "lstm":
            assert c is not None  # an LSTM's state is (h, c)
            h, c = lstm_step(gi_all[t] + gh, c)
            if w_hr is not None:
                h = h @ w_hr.T
        elif kind == "gru":
            h = gru_step(gi_all[t], gh, h)
        elif kind == "rnn_tanh":
            h = np.tanh(gi_all[t] + gh)
        else:
            h = _relu(gi_all[t] + gh)
        outs.append(h)
    if reverse:
        outs.reverse()
    final = (h, c) if c is not None else (h,)
    return np.stack(outs), final


def run_rnn(
    kind: str,
    x: np.ndarray,
    hx: Sequence[Array],
    params: Sequence[np.ndarray],
    has_biases: bool,
    num_layers: int,
    dropout: float,
    train: bool,
    bidirectional: bool,
    batch_first: bool,
) -> tuple[np.ndarray, ...]:
    """The shared body of the fused ops; returns (output, *final states)."""
    dirs = 2 if bidirectional else 1
    weights = _split_params(params, has_biases, num_layers, dirs)
    if x.ndim in (2, 3) and x.shape[1 if batch_first and x.ndim == 3 else 0] == 0:
        raise ValueError("Expected sequence length to be larger than 0 in RNN (torch's words)")
    unbatched = x.ndim == 2
    if unbatched:
        x = x[:, None]
        hx = [h[:, None] for h in hx]
    elif batch_first:
        x = x.transpose(1, 0, 2)
    finals: list[list[Array]] = [[] for _ in hx]
    layer_in = x
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            idx = layer * dirs + d
            y, state = _run_direction(layer_in, tuple(h[idx] for h in hx), weights[idx], d == 1, kind)
            outs.append(y)
            for k, s in enumerate(state):
                finals[k].append(s)
        layer_in = np.concatenate(outs, axis=-1) if dirs == 2 else outs[0]
        if train and dropout > 0 and layer < num_layers - 1:
            layer_in = dropout_impl(layer_in, dropout, True, feature=False, alpha=False)
    output = layer_in
    states = [np.stack(f) for f in finals]
    if unbatched:
        output = output[:, 0]
        states = [s[:, 0] for s in states]
    elif batch_first:
        output = output.transpose(1, 0, 2)
    return (np.ascontiguousarray(output), *states)


_TAIL = "bool has_biases, int num_layers, float dropout, bool train, bool bidirectional, bool batch_first"
# dropout between layers draws only in training, with dropout > 0 and more than one layer
_DRAWS = dict(facts=Fact.RANDOM, draws_unless=(("dropout", 0.0), ("train", False), ("num_layers", 1)),
              dtypes=DtypeRule((0, 2)))  # the input and the params' items share a dtype


@kernel(f"aten::lstm.input(Tensor input, Tensor[] hx, Tensor[] params, {_TAIL}) -> (Tensor, Tensor, Tensor)", **_DRAWS)
def lstm(x: np.ndarray, hx: Sequence[np.ndarray], *rest: Any) -> tuple[np.ndarray, ...]:
    """``rest``: params and the ``_TAIL`` arguments, as ``run_rnn`` takes them."""
    return run_rnn("lstm", x, list(hx), *rest)


def _register_single_state(kind: str) -> None:
    @kernel(f"aten::{kind}.input(Tensor input, Tensor hx, Tensor[] params, {_TAIL}) -> (Tensor, Tensor)", **_DRAWS)
    def fused(x: np.ndarray, hx: np.ndarray, *rest: Any) -> tuple[np.ndarray, ...]:
        return run_rnn(kind, x, [hx], *rest)


for _kind in ("gru", "rnn_tanh", "rnn_relu"):
    _register_single_state(_kind)
