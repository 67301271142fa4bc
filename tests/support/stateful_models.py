"""A family of torch models that keep state in module attributes, for the stateful harness.

Each model's ``forward`` reads attributes it, or another of its methods, reassigns
(``prim::SetAttr``) or writes in place: a streaming RNN, a streaming convolution whose
context buffer starts empty (the silero-VAD pattern, ``if not bool(len(self._context))``),
running statistics, a counter, a key/value cache that grows, a module that resets itself
on a new batch size, state in a submodule, state that goes None -> tensor, state whose
dtype changes (an accumulator; a weight cast on the first call), a list that grows, a
large sliding window (planned and fused at the static runtime's default sizes).  ``CASES`` describes each: how to build it, its inputs
for a shape, the two shapes a stream alternates (as Static Runtime's tests run with two
shapes), the other methods the stream calls and when.  Import only after
``pytest.importorskip("torch")``; ``tests/support/stateful.py`` runs them.
"""


from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn


class StreamingRNN(nn.Module):
    """LSTM state in attributes, empty until the first call, made again for a new batch."""

    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(4, 6)
        self.h = torch.zeros(0)
        self.c = torch.zeros(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.h.size(0) != x.size(0):
            self.h = torch.zeros(x.size(0), 6)
            self.c = torch.zeros(x.size(0), 6)
        h, c = self.cell(x, (self.h, self.c))
        self.h = h
        self.c = c
        return h


class StreamingVAD(nn.Module):
    """A silero-VAD-like streaming model: LSTM state and the last 64 samples kept in
    attributes, the context empty on the first call and after ``reset_states``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 5)
        self.rnn = nn.LSTMCell(4, 8)
        self.out = nn.Linear(8, 1)
        self._state = torch.zeros(0)
        self._context = torch.zeros(0)
        self._last_sr = 0
        self._last_batch_size = 0

    @torch.jit.export
    def reset_states(self, batch_size: int = 1) -> None:
        self._state = torch.zeros([2, batch_size, 8])
        self._context = torch.zeros(0)
        self._last_sr = 0
        self._last_batch_size = 0

    @torch.jit.export
    def audio_forward(self, x: torch.Tensor, sr: int) -> torch.Tensor:
        """A whole recording, chunk by chunk (the last one padded), from a fresh state."""
        outs: list[torch.Tensor] = []
        self.reset_states(x.shape[0])
        for i in range(0, x.shape[1], 128):
            chunk = x[:, i : i + 128]
            if chunk.shape[1] < 128:
                chunk = nn.functional.pad(chunk, (0, 128 - chunk.shape[1]))
            outs.append(self.forward(chunk, sr))
        return torch.cat(outs, dim=1)

    def forward(self, x: torch.Tensor, sr: int) -> torch.Tensor:
        batch_size = x.shape[0]
        if not self._last_batch_size:
            self.reset_states(batch_size)
        if self._last_sr and self._last_sr != sr:
            self.reset_states(batch_size)
        if self._last_batch_size and self._last_batch_size != batch_size:
            self.reset_states(batch_size)
        if not bool(len(self._context)):
            self._context = torch.zeros(batch_size, 64)
        x1 = torch.cat([self._context, x], dim=1)
        y = self.conv(x1.unsqueeze(1)).mean(-1)
        h, c = self.rnn(y, (self._state[0], self._state[1]))
        self._state = torch.stack([h, c])
        self._context = x1[..., -64:]
        self._last_sr = sr
        self._last_batch_size = batch_size
        return torch.sigmoid(self.out(h))


class RunningStats(nn.Module):
    """Running mean (a buffer written in place) and variance (reassigned), and a count."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(5))
        self.register_buffer("var", torch.ones(5))
        self.count = 0

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        self.count += 1
        self.mean.mul_(0.9).add_(0.1 * x.mean(0))
        self.var = 0.9 * self.var + 0.1 * x.var(0)
        return (x - self.mean) / torch.sqrt(self.var + 1e-5), self.count


class Counter(nn.Module):
    """The issue's counter: ``self.count += 1; self.state = 0.5*self.state + x``; the
    state's shape follows the inputs' (broadcast)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.state = torch.zeros(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count += 1
        self.state = 0.5 * self.state + x
        return self.state * self.count


class KVCache(nn.Module):
    """The keys and values of every call so far, concatenated: a cache that grows."""

    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)
        self.v = nn.Linear(8, 8)
        self.keys = torch.zeros(1, 0, 8)
        self.values = torch.zeros(1, 0, 8)

    @torch.jit.export
    def reset(self) -> None:
        self.keys = torch.zeros(1, 0, 8)
        self.values = torch.zeros(1, 0, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.keys = torch.cat([self.keys, self.k(x)], 1)
        self.values = torch.cat([self.values, self.v(x)], 1)
        scores = torch.matmul(self.q(x), self.keys.transpose(1, 2)) / 8**0.5
        return torch.matmul(torch.softmax(scores, -1), self.values)


class BatchReset(nn.Module):
    """An accumulator that starts again when the batch size changes."""

    def __init__(self) -> None:
        super().__init__()
        self.last_batch = 0
        self.acc = torch.zeros(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.size(0) != self.last_batch:
            self.acc = torch.zeros_like(x)
            self.last_batch = x.size(0)
        self.acc = self.acc + x
        return self.acc * 2


class Accumulate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.total = torch.zeros(4)
        self.steps = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total = self.total + x.sum(0)
        self.steps = self.steps + 1
        return x + self.total


class SubState(nn.Module):
    """State in a submodule, written by the submodule's own forward."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.acc = Accumulate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.acc(self.lin(x)) * self.acc.steps


class OptionalState(nn.Module):
    """State that is None on the first call and after ``reset``, a tensor otherwise."""

    prev: torch.Tensor | None

    def __init__(self) -> None:
        super().__init__()
        self.prev = None

    @torch.jit.export
    def reset(self) -> None:
        self.prev = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        prev = self.prev
        out = x if prev is None else x - prev
        self.prev = x.mean(0)
        return out


class DtypeState(nn.Module):
    """An accumulator that starts int64, turns float32, and every fifth call int64 again."""

    def __init__(self) -> None:
        super().__init__()
        self.acc = torch.zeros(1, dtype=torch.long)
        self.n = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.n += 1
        if self.n % 5 == 0:
            self.acc = self.acc.to(torch.int64)
        else:
            self.acc = self.acc + x.sum()
        return x * self.acc


class CastOnce(nn.Module):
    """A weight kept int64 until the first call casts it: later calls multiply by it, which
    torch refuses for an int64 weight (no check may keep its first dtype)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.ones(3, 2, dtype=torch.long)
        self.n = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.n += 1
        if self.n > 1:
            return torch.mm(x, self.w)
        self.w = self.w.float() * 0.5
        return x[:, :2]


class SlidingWindow(nn.Module):
    """The last 64 rows of every input so far, large enough (up to 1 MiB) for the static
    runtime to plan tensors and run a fused elementwise chain at its default thresholds."""

    def __init__(self) -> None:
        super().__init__()
        self.window = torch.zeros(0, 4096)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.window = torch.cat([self.window, x])[-64:]
        w = self.window
        return torch.sigmoid(w * 2 + 1) * w - w / 3 + x.mean()


class History(nn.Module):
    """A list attribute appended to in place; the sum of the last three entries."""

    history: list[torch.Tensor]

    def __init__(self) -> None:
        super().__init__()
        self.history = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.history.append(x.sum(0))
        out = self.history[-1]
        for i in range(2, min(len(self.history), 3) + 1):
            out = out + self.history[-i]
        return out


Inputs = Callable[[np.random.Generator, tuple[int, ...]], tuple[Any, ...]]


def _tensor(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, ...]:
    return (rng.standard_normal(shape).astype(np.float32),)


def _audio(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[Any, ...]:
    return (rng.standard_normal(shape).astype(np.float32), 16000)


RECORDING = np.random.default_rng(7).standard_normal((1, 300)).astype(np.float32)  # 3 chunks, the last padded


@dataclass
class Case:
    """One stateful model: ``make()`` builds it (seeded), ``inputs(rng, shape)`` a call's
    arguments, ``shapes`` the two a stream alternates, ``calls``: call index -> (method,
    arguments) of the other methods the stream calls before that call."""

    name: str
    make: Callable[[], nn.Module]
    shapes: tuple[tuple[int, ...], tuple[int, ...]]
    inputs: Inputs = _tensor
    calls: dict[int, tuple[str, tuple[Any, ...]]] = field(default_factory=dict)


CASES = [
    Case("streaming_rnn", StreamingRNN, ((2, 4), (3, 4))),
    Case("streaming_vad", StreamingVAD, ((1, 128), (2, 128)), _audio,
         {7: ("reset_states", (1,)), 17: ("reset_states", ()), 24: ("audio_forward", (RECORDING, 16000))}),
    Case("running_stats", RunningStats, ((4, 5), (7, 5))),
    Case("counter", Counter, ((3,), (2, 3))),
    Case("kv_cache", KVCache, ((1, 1, 8), (1, 3, 8)), calls={20: ("reset", ())}),
    Case("batch_reset", BatchReset, ((2, 3), (5, 3))),
    Case("sub_state", SubState, ((2, 4), (3, 4))),
    Case("optional_state", OptionalState, ((2, 4), (6, 4)), calls={12: ("reset", ())}),
    Case("dtype_state", DtypeState, ((3,), (2, 3))),
    Case("cast_once", CastOnce, ((2, 3), (4, 3))),
    Case("history", History, ((2, 4), (5, 4))),
    Case("sliding_window", SlidingWindow, ((8, 4096), (3, 4096))),
]


def build(case: Case) -> nn.Module:
    """The case's model, seeded and in eval mode."""
    torch.manual_seed(0)
    return case.make().eval()
