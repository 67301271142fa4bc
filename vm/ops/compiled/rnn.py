"""Recurrent layers' time loops, one compiled call per layer and direction (float32).

``vm.ops.nn.rnn`` computes a layer's input projection for every time step in one BLAS
product; what remains is the recurrence, sequential in time: per step a ``B x H`` by
``H x G`` product, the gates' sigmoids and tanhs and the state update.  In numpy that is a
dozen calls per step on small arrays, each paying its Python and dispatch cost (a 160-step
3-layer LSTM ran at 9x torch's time).  Here the whole time loop is one compiled function:
per step the hidden product reads the recurrent weight once (transposed to ``(H, G)`` so
the inner loop runs along contiguous gate columns and vectorizes), then the gate
nonlinearities and the state update run in registers over each row, with ``exp`` as
``vm.ops.compiled.activation.exp32`` (vectorizable):

- sigmoid ``1 / (1 + e^-x)``; tanh ``1 - 2 / (1 + e^2x)`` (within a few 1e-8 absolute of
  libm's; ``+-1`` at the tails, no overflow);
- LSTM (gates ``i, f, g, o``): ``c' = f c + i g``, ``h' = o tanh(c')``, then ``h' W_hr^T``
  when the layer has projections;
- GRU (``r, z, n``): ``n = tanh(gi_n + r (h W_hn^T + b_hn))``, ``h' = (1 - z) n + z h``;
- RNN: ``h' = tanh`` or ``relu`` of ``gi + h W_hh^T + b_hh``.

Sums run in another order than numpy's BLAS, so results agree with torch to float32
rounding (about 1e-7), as the numpy kernel does; both backends call the same kernel.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from vm.ops.compiled.activation import _OPTS, _ro, _rw, exp32

F = np.float32
_ONE, _TWO, _ZERO = F(1), F(2), F(0)


@njit("float32(float32)", inline="always", **_OPTS)
def _sigmoid(x):
    return _ONE / (_ONE + exp32(-x))


@njit("float32(float32)", inline="always", **_OPTS)
def _tanh(x):
    return _ONE - _TWO / (_ONE + exp32(_TWO * x))


@njit(inline="always", **_OPTS)
def _hidden_product(h, bias, w_t, acc):
    """acc[b, :] = bias + h[b, :] @ w_t, reading each row of w_t once for the whole batch."""
    for b in range(h.shape[0]):
        acc[b, :] = bias
    for k in range(w_t.shape[0]):
        row = w_t[k]
        for b in range(h.shape[0]):
            hk = h[b, k]
            line = acc[b]  # a 1-d view: LLVM vectorizes this loop, the 2-d index less well
            for j in range(line.shape[0]):
                line[j] += hk * row[j]


@njit(types.void(_ro(3), _ro(2), _ro(1), _ro(2), types.boolean, types.boolean, _rw(3), _rw(2), _rw(2)), **_OPTS)
def lstm(gi, w_hh_t, b_hh, w_hr_t, has_proj, reverse, out, h, c):
    """One LSTM layer and direction: ``gi`` (T, B, 4H) the input projections (bias in),
    ``w_hh_t`` (P, 4H), ``b_hh`` (4H), ``w_hr_t`` (H, P) when ``has_proj``; ``h`` (B, P)
    and ``c`` (B, H) hold the initial state and end with the final one; ``out`` (T, B, P)."""
    steps, batch, gates_n = gi.shape
    hidden = gates_n // 4
    acc = np.empty((batch, gates_n), F)
    hh = np.empty((batch, hidden), F)
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        _hidden_product(h, b_hh, w_hh_t, acc)
        for b in range(batch):
            for j in range(hidden):
                i = _sigmoid(gi[t, b, j] + acc[b, j])
                f = _sigmoid(gi[t, b, hidden + j] + acc[b, hidden + j])
                g = _tanh(gi[t, b, 2 * hidden + j] + acc[b, 2 * hidden + j])
                o = _sigmoid(gi[t, b, 3 * hidden + j] + acc[b, 3 * hidden + j])
                cc = f * c[b, j] + i * g
                c[b, j] = cc
                hh[b, j] = o * _tanh(cc)
        if has_proj:
            for b in range(batch):
                for p in range(h.shape[1]):
                    h[b, p] = _ZERO
            for k in range(hidden):
                row = w_hr_t[k]
                for b in range(batch):
                    v = hh[b, k]
                    for p in range(h.shape[1]):
                        h[b, p] += v * row[p]
        else:
            for b in range(batch):
                for j in range(hidden):
                    h[b, j] = hh[b, j]
        for b in range(batch):
            for p in range(h.shape[1]):
                out[t, b, p] = h[b, p]


@njit(types.void(_ro(3), _ro(2), _ro(1), types.boolean, _rw(3), _rw(2)), **_OPTS)
def gru(gi, w_hh_t, b_hh, reverse, out, h):
    """One GRU layer and direction: ``gi`` (T, B, 3H), ``w_hh_t`` (H, 3H), ``b_hh`` (3H);
    ``h`` (B, H) holds the initial state and ends with the final one; ``out`` (T, B, H)."""
    steps, batch, gates_n = gi.shape
    hidden = gates_n // 3
    acc = np.empty((batch, gates_n), F)
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        _hidden_product(h, b_hh, w_hh_t, acc)
        for b in range(batch):
            for j in range(hidden):
                r = _sigmoid(gi[t, b, j] + acc[b, j])
                z = _sigmoid(gi[t, b, hidden + j] + acc[b, hidden + j])
                n = _tanh(gi[t, b, 2 * hidden + j] + r * acc[b, 2 * hidden + j])
                v = (_ONE - z) * n + z * h[b, j]
                h[b, j] = v
                out[t, b, j] = v


@njit(types.void(_ro(3), _ro(2), _ro(1), types.boolean, types.boolean, _rw(3), _rw(2)), **_OPTS)
def rnn(gi, w_hh_t, b_hh, relu, reverse, out, h):
    """One Elman RNN layer and direction (tanh, or relu when ``relu``), as ``gru``."""
    steps, batch, hidden = gi.shape
    acc = np.empty((batch, hidden), F)
    for s in range(steps):
        t = steps - 1 - s if reverse else s
        _hidden_product(h, b_hh, w_hh_t, acc)
        for b in range(batch):
            for j in range(hidden):
                v = gi[t, b, j] + acc[b, j]
                v = (v if v > _ZERO else _ZERO) if relu else _tanh(v)
                h[b, j] = v
                out[t, b, j] = v


def _f32(a: np.ndarray | None) -> bool:
    return a is None or (a.dtype == F and a.ndim >= 1)


def run(kind: str, gi: np.ndarray, w_hh: np.ndarray, b_hh: np.ndarray | None, w_hr: np.ndarray | None,
        state: tuple[np.ndarray, ...], reverse: bool) -> tuple[np.ndarray, tuple[np.ndarray, ...]] | None:
    """One layer and direction over ``gi`` (T, B, G), as ``vm.ops.nn.rnn._run_direction``
    computes it: (outputs (T, B, H or P), final state); None where the kernel does not apply
    (not float32, an empty sequence)."""
    if gi.dtype != F or gi.ndim != 3 or not gi.shape[0] or not all(_f32(a) for a in (w_hh, b_hh, w_hr, *state)):
        return None
    gates, batch = gi.shape[2], gi.shape[1]
    width = w_hh.shape[1] if w_hh.ndim == 2 else -1
    hidden = gates // {"lstm": 4, "gru": 3}.get(kind, 1)
    # shapes the loops read unchecked: anything else takes the numpy loop, which raises
    # torch's error (a state of another batch, a weight of another width)
    if (w_hh.shape[0] != gates or (b_hh is not None and b_hh.shape != (gates,))
            or state[0].shape != (batch, width) or (kind == "lstm" and state[1].shape != (batch, hidden))
            or (w_hr is not None and w_hr.shape != (width, hidden)) or (w_hr is None and width != hidden)):
        return None
    gi = np.ascontiguousarray(gi)
    w_t = np.ascontiguousarray(w_hh.T)
    bias = np.zeros(w_hh.shape[0], F) if b_hh is None else np.ascontiguousarray(b_hh)
    h = np.array(state[0], F, order="C", copy=True)
    out = np.empty((gi.shape[0], gi.shape[1], h.shape[-1]), F)
    if kind == "lstm":
        c = np.array(state[1], F, order="C", copy=True)
        proj = np.zeros((0, 0), F) if w_hr is None else np.ascontiguousarray(w_hr.T)
        lstm(gi, w_t, bias, proj, w_hr is not None, reverse, out, h, c)
        return out, (h, c)
    if kind == "gru":
        gru(gi, w_t, bias, reverse, out, h)
    else:
        rnn(gi, w_t, bias, kind == "rnn_relu", reverse, out, h)
    return out, (h,)


@njit(types.void(_ro(2), _ro(1), _ro(2), _ro(1), _ro(2), _rw(2), _rw(2)), **_OPTS)
def lstm_cell(gi, b_ih, gh, b_hh, c, h_out, c_out):
    """An LSTM cell's gates and state update, from its two products ``gi`` = x W_ih^T and
    ``gh`` = h W_hh^T (B, 4H) and their biases: (h', c') into ``h_out``, ``c_out``."""
    hidden = c.shape[1]
    for b in range(c.shape[0]):
        for j in range(hidden):
            i = _sigmoid((gi[b, j] + b_ih[j]) + (gh[b, j] + b_hh[j]))
            f = _sigmoid((gi[b, hidden + j] + b_ih[hidden + j]) + (gh[b, hidden + j] + b_hh[hidden + j]))
            k = 2 * hidden + j
            g = _tanh((gi[b, k] + b_ih[k]) + (gh[b, k] + b_hh[k]))
            k = 3 * hidden + j
            o = _sigmoid((gi[b, k] + b_ih[k]) + (gh[b, k] + b_hh[k]))
            cc = f * c[b, j] + i * g
            c_out[b, j] = cc
            h_out[b, j] = o * _tanh(cc)


@njit(types.void(_ro(2), _ro(1), _ro(2), _ro(1), _ro(2), _rw(2)), **_OPTS)
def gru_cell(gi, b_ih, gh, b_hh, h, h_out):
    """A GRU cell's gates and state update, as ``lstm_cell`` (``gi``, ``gh``: (B, 3H))."""
    hidden = h.shape[1]
    for b in range(h.shape[0]):
        for j in range(hidden):
            r = _sigmoid((gi[b, j] + b_ih[j]) + (gh[b, j] + b_hh[j]))
            k = hidden + j
            z = _sigmoid((gi[b, k] + b_ih[k]) + (gh[b, k] + b_hh[k]))
            k = 2 * hidden + j
            n = _tanh((gi[b, k] + b_ih[k]) + r * (gh[b, k] + b_hh[k]))
            h_out[b, j] = (_ONE - z) * n + z * h[b, j]


def cell(kind: str, x: np.ndarray, state: tuple[np.ndarray, ...], w_ih: np.ndarray, w_hh: np.ndarray,
         b_ih: np.ndarray | None, b_hh: np.ndarray | None) -> tuple[np.ndarray, ...] | None:
    """An LSTM or GRU cell (``aten::lstm_cell``, ``aten::gru_cell``) in one compiled call after
    its two products: the new state, or None where the kernel does not apply (not float32)."""
    if not all(a is None or a.dtype == F for a in (x, w_ih, w_hh, b_ih, b_hh, *state)) or x.ndim not in (1, 2):
        return None
    one = x.ndim == 1
    gates = w_ih.shape[0] if w_ih.ndim == 2 else -1
    hidden = gates // (4 if kind == "lstm" else 3)
    want = x.shape[:-1] + (hidden,)
    if (w_ih.ndim != 2 or w_hh.shape != (gates, hidden) or w_ih.shape[1] != x.shape[-1]
            or any(a is not None and a.shape != (gates,) for a in (b_ih, b_hh))
            or any(s.shape != want for s in state)):
        return None  # the numpy cell raises torch's error
    rows = (lambda a: a[None]) if one else (lambda a: a)
    gi = np.ascontiguousarray(rows(x) @ w_ih.T)
    gh = np.ascontiguousarray(rows(state[0]) @ w_hh.T)
    zeros = np.zeros(gi.shape[1], F)
    bi = zeros if b_ih is None else np.ascontiguousarray(b_ih)
    bh = zeros if b_hh is None else np.ascontiguousarray(b_hh)
    h_out = np.empty((gi.shape[0], w_hh.shape[1]), F)
    if kind == "lstm":
        c_out = np.empty_like(h_out)
        lstm_cell(gi, bi, gh, bh, np.ascontiguousarray(rows(state[1])), h_out, c_out)
        return (h_out[0], c_out[0]) if one else (h_out, c_out)
    gru_cell(gi, bi, gh, bh, np.ascontiguousarray(rows(state[0])), h_out)
    return (h_out[0],) if one else (h_out,)
