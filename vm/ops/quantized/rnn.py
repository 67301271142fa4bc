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
concatenates.  ``batch_first`` inputs are (B, T, I).  The time loop is one compiled call
(``vm.ops.compiled.qrnn``, the same integers step by step) where the tier is on; else numpy's
sigmoid and tanh per step.  The results agree with torch's to float rounding (the tests report
the largest difference).
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


def _compiled_loop(kind: str, pre: np.ndarray, state: list[np.ndarray], cell: CellParams) -> tuple[Any, ...] | None:
    """The time loop as one compiled call (``vm.ops.compiled.qrnn``), where it applies: an
    int8 hidden weight, a float32 state and input map; None otherwise."""
    w = cell.hh.weight
    if not (compiled.ENABLED and isinstance(w, QTensor) and w.int_repr.dtype == np.int8 and pre.dtype == np.float32
            and pre.shape[0] and all(s.dtype == np.float32 for s in state)):
        return None
    prepared = w.prepared if w.prepared is not None else {}
    w.prepared = prepared
    found = prepared.get("rnn")
    if found is None:
        _, zp = w.channel_params(2)
        zp = np.broadcast_to(np.asarray(zp, np.int64).reshape(-1), (w.shape[0],)).copy()
        found = prepared["rnn"] = (np.ascontiguousarray(w.int_repr.T.astype(np.int32)), zp,
                                   weight_scales(w, w.shape[0]).astype(np.float32))
    w_t, w_zp, w_scale = found
    bias = np.zeros(w.shape[0]) if cell.hh.bias is None else np.asarray(cell.hh.bias, np.float64)
    saturate = engine() == "fbgemm" and fbgemm_kernel() != "vnni"
    family = compiled.family("qrnn")
    out = np.empty((pre.shape[0], pre.shape[1], w.shape[1]), np.float32)
    h = np.array(state[0], np.float32, order="C", copy=True)
    if kind == "lstm":
        c = np.array(state[1], np.float32, order="C", copy=True)
        family.lstm(np.ascontiguousarray(pre), w_t, w_zp, w_scale, bias, cell.reduce_range, saturate, False, out, h, c)
        return out, h, c
    family.gru(np.ascontiguousarray(pre), w_t, w_zp, w_scale, bias, cell.reduce_range, saturate, False, out, h)
    return out, h


def _lstm_direction(xs: np.ndarray, h: np.ndarray, c: np.ndarray, cell: CellParams) -> tuple[Any, ...]:
    pre = _linear(xs, cell, "ih")  # (T, B, 4H), the whole sequence at once
    done = _compiled_loop("lstm", pre, [h, c], cell)
    if done is not None:
        return done
    outs = []
    for t in range(xs.shape[0]):
        gates = _linear(h, cell, "hh") + pre[t]
        i, f, g, o = np.split(gates, 4, axis=-1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = (_sigmoid(o) * np.tanh(c)).astype(np.float32)
        outs.append(h)
    return np.stack(outs), h, c.astype(np.float32)


def _gru_direction(xs: np.ndarray, h: np.ndarray, cell: CellParams) -> tuple[Any, ...]:
    pre = _linear(xs, cell, "ih")
    done = _compiled_loop("gru", pre, [h], cell)
    if done is not None:
        return done
    outs = []
    for t in range(xs.shape[0]):
        ir, iz, inn = np.split(pre[t], 3, axis=-1)
        hr, hz, hn = np.split(_linear(h, cell, "hh"), 3, axis=-1)
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
