"""Dynamic quantized LSTM and GRU (``aten::quantized_lstm``, ``aten::quantized_gru``).

ATen runs them as its float RNNs with each cell's two linear maps replaced by dynamic
quantized linears (``vm.ops.quantized.layers.dynamic_linear``, the bias packed with the
weight): for a layer, the input map over the whole sequence at once (ATen precomputes it on
CPU, so the input's quantization parameters come from the whole sequence), then per step
the hidden map of the last hidden state, gates in ATen's order::

    LSTM  gates = hh(h) + ih(x);  i, f, g, o = chunk(4);  c' = sig(f) * c + sig(i) * tanh(g);
          h' = sig(o) * tanh(c')
    GRU   r = sig(hh_r + ih_r);  z = sig(hh_z + ih_z);  n = tanh(ih_n + hh_n * r);
          h' = (h - n) * z + n

Layers stack; a bidirectional layer runs a second cell over the reversed sequence and
concatenates.  ``batch_first`` inputs are (B, T, I).  Each step's hidden map is one compiled
call (``vm.ops.compiled.qrnn``, the same integers and floats as the numpy dynamic linear)
where the tier is on; the gates are numpy's sigmoid and tanh.  The results agree with torch's
to float rounding (the tests report the largest difference).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.core.errors import RunError
from vm.core.quantized import CellParams, QTensor
from vm.ops import compiled
from vm.ops.quantized.arith import engine, weight_scales
from vm.ops.quantized.cpu import fbgemm_kernel
from vm.ops.quantized.layers import dynamic_linear
from vm.ops.quantized.tensors import float_input
from vm.ops.registry import kernel

CELL = "__torch__.torch.classes.rnn.CellParamsBase"


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def _linear(x: np.ndarray, cell: CellParams, which: str) -> np.ndarray:
    packed = cell.ih if which == "ih" else cell.hh
    return dynamic_linear(x, packed, cell.reduce_range, False, f"quantized {which} of an RNN cell")


class _HiddenMap:
    """``_linear(h, cell, "hh")`` for every step of one layer and direction, as one compiled
    call a step (``vm.ops.compiled.qrnn.hidden_map``) where it applies: an int8 hidden weight
    and a float32 state; else the numpy dynamic linear."""

    def __init__(self, cell: CellParams, batch: int) -> None:
        self.cell = cell
        w = cell.hh.weight
        fam = compiled.ready("qrnn") if isinstance(w, QTensor) and w.int_repr.dtype == np.int8 else None
        self.compiled = fam is not None
        if fam is None:
            return
        assert isinstance(w, QTensor)
        prepared = w.prepared if w.prepared is not None else {}
        w.prepared = prepared
        found = prepared.get("rnn")
        if found is None:
            _, zp = w.channel_params(2)
            zp = np.broadcast_to(np.asarray(zp, np.int64).reshape(-1), (w.shape[0],)).copy()
            found = prepared["rnn"] = (np.ascontiguousarray(w.int_repr.T.astype(np.int32)), zp,
                                       weight_scales(w, w.shape[0]).astype(np.float32))
        self.w_t, self.w_zp, self.w_scale = found
        self.bias = np.zeros(w.shape[0]) if cell.hh.bias is None else np.asarray(cell.hh.bias, np.float64)
        self.saturate = engine() == "fbgemm" and fbgemm_kernel() != "vnni"
        self.run = fam.hidden_map
        self.q = np.empty((batch, w.shape[1]), np.int64)
        self.acc = np.empty((batch, w.shape[0]), np.int64)

    def __call__(self, h: np.ndarray) -> np.ndarray:
        if (not self.compiled or h.dtype != np.float32 or h.ndim != 2 or h.shape[0] != self.q.shape[0]
                or h.shape[1] != self.w_t.shape[0]):  # else the numpy linear, which raises on a bad shape
            return _linear(h, self.cell, "hh")
        y = np.empty((h.shape[0], self.w_t.shape[1]), np.float32)
        self.run(np.ascontiguousarray(h), self.w_t, self.w_zp, self.w_scale, self.bias, self.cell.reduce_range,
                 self.saturate, self.q, self.acc, y)
        return y


def _lstm_direction(xs: np.ndarray, h: np.ndarray, c: np.ndarray, cell: CellParams) -> tuple[Any, ...]:
    pre = _linear(xs, cell, "ih")  # (T, B, 4H), the whole sequence at once
    hidden_map = _HiddenMap(cell, h.shape[0] if h.ndim == 2 else 0)
    outs = []
    for t in range(xs.shape[0]):
        gates = hidden_map(h) + pre[t]
        i, f, g, o = np.split(gates, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = (_sigmoid(o) * np.tanh(c)).astype(np.float32)
        outs.append(h)
    return np.stack(outs), h, c.astype(np.float32)


def _gru_direction(xs: np.ndarray, h: np.ndarray, cell: CellParams) -> tuple[Any, ...]:
    pre = _linear(xs, cell, "ih")
    hidden_map = _HiddenMap(cell, h.shape[0] if h.ndim == 2 else 0)
    outs = []
    for t in range(xs.shape[0]):
        ir, iz, inn = np.split(pre[t], 3, axis=-1)
        hr, hz, hn = np.split(hidden_map(h), 3, axis=-1)
        r, z = _sigmoid(hr + ir), _sigmoid(hz + iz)
        n = np.tanh(inn + hn * r)
        h = ((h - n) * z + n).astype(np.float32)
        outs.append(h)
    return np.stack(outs), h


def _check(params: list[Any], num_layers: int, bidirectional: bool, op: str) -> list[CellParams]:
    need = num_layers * (2 if bidirectional else 1)
    if len(params) != need or not all(isinstance(p, CellParams) for p in params):
        raise RunError(f"{op}: expected {need} packed cell parameters, got {len(params)}")
    return params


def _run(op: str, x: np.ndarray, hidden: list[np.ndarray], params: list[Any], num_layers: int,
         bidirectional: bool, batch_first: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    x = float_input(x, op)
    if x.ndim != 3:
        raise RunError(f"{op}: expected a 3-d input, got shape {list(x.shape)}")
    cells = _check(params, num_layers, bidirectional, op)
    dirs = 2 if bidirectional else 1
    seq = x.transpose(1, 0, 2) if batch_first else x
    finals: list[list[np.ndarray]] = [[] for _ in hidden]
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            xs = seq[::-1] if d else seq
            state = [hd[k] for hd in hidden]
            if len(hidden) == 2:
                out, h, c = _lstm_direction(xs, state[0], state[1], cells[k])
                finals[0].append(h)
                finals[1].append(c)
            else:
                out, h = _gru_direction(xs, state[0], cells[k])
                finals[0].append(h)
            outs.append(out[::-1] if d else out)
        seq = np.ascontiguousarray(np.concatenate(outs, axis=-1))
    output = seq.transpose(1, 0, 2) if batch_first else seq
    return np.ascontiguousarray(output), [np.stack(f) for f in finals]


@kernel(
    f"aten::quantized_lstm.input(Tensor input, Tensor[] hx, {CELL}[] params, bool has_biases, int num_layers, "
    "float dropout, bool train, bool bidirectional, bool batch_first, *, ScalarType? dtype=None, "
    "bool use_dynamic=False) -> (Tensor, Tensor, Tensor)"
)
def quantized_lstm(x: np.ndarray, hx: list[np.ndarray], params: list[Any], has_biases: bool, num_layers: int,
                   dropout: float, train: bool, bidirectional: bool, batch_first: bool, dtype: Any,
                   use_dynamic: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if len(hx) != 2:
        raise RunError(f"aten::quantized_lstm: expected hx = [h0, c0], got {len(hx)} tensors")
    out, (h, c) = _run("aten::quantized_lstm", x, list(hx), params, num_layers, bidirectional, batch_first)
    return out, h, c


@kernel(
    f"aten::quantized_gru.input(Tensor input, Tensor hx, {CELL}[] params, bool has_biases, int num_layers, "
    "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)"
)
def quantized_gru(x: np.ndarray, hx: np.ndarray, params: list[Any], has_biases: bool, num_layers: int,
                  dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple[np.ndarray, np.ndarray]:
    out, (h,) = _run("aten::quantized_gru", x, [hx], params, num_layers, bidirectional, batch_first)
    return out, h
