"""Recurrent models against torch.jit, one thread each, in one process.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 tools/bench_recurrent.py [--rounds 15] [--only NAME]

Each model is scripted with torch (random weights, seeded), saved as a ``.pt`` into a
temporary folder and opened with ``vm.load`` on both backends; the columns are the median
milliseconds per call of ``irvm static``, ``irvm interp`` and ``torch.jit`` (the same
archive through ``torch.jit.load``), over interleaved rounds after two warm-up calls, then
irvm static / torch.jit.  Every call's output is checked against torch's (largest
difference printed).  The models: the fused layers (``aten::lstm``/``aten::gru``: a 3-layer
LSTM speaker encoder, a 2-layer bidirectional LSTM, a GRU with an initial state, a
dynamic-quantized LSTM tagger) and TorchScript loops over cells (a seq2seq decoder feeding
its argmax back, a streaming GRU cell over a chunk), as ``vm.ops.compiled.rnn`` and
``qrnn`` run them.  The BLAS kernel numpy runs is printed (threadpoolctl).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402


def _models() -> dict[str, Any]:
    import torch
    from torch import nn

    class SpeakerEncoder(nn.Module):  # a 3-layer LSTM, its last state projected and normalized
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(40, 256, 3, batch_first=True)
            self.linear = nn.Linear(256, 256)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            _, (h, _) = self.lstm(x)
            e = torch.relu(self.linear(h[-1]))
            return e / torch.norm(e, dim=1, keepdim=True)

    class BiLSTM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(32, 64, 2, bidirectional=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lstm(x)[0]

    class GRUState(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gru = nn.GRU(32, 64, 2)

        def forward(self, x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
            return self.gru(x, h0)[0]

    class Decoder(nn.Module):  # greedy seq2seq decoding: embed, LSTM cell, project, argmax, 20 steps
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(100, 32)
            self.cell = nn.LSTMCell(32, 128)
            self.out = nn.Linear(128, 100)

        def forward(self, h: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
            token = torch.zeros(h.shape[0], dtype=torch.long)
            tokens = []
            for _ in range(20):
                h, c = self.cell(self.embed(token), (h, c))
                token = self.out(h).argmax(dim=1)
                tokens.append(token)
            return torch.stack(tokens, 1)

    class StreamingGRU(nn.Module):  # a chunk of frames through a GRU cell, one step at a time
        def __init__(self) -> None:
            super().__init__()
            self.cell = nn.GRUCell(64, 128)

        def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
            for t in range(x.shape[0]):
                h = self.cell(x[t], h)
            return h

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(64, 128, 2)
            self.linear = nn.Linear(128, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(self.lstm(x)[0])

    g = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    tagger = torch.ao.quantization.quantize_dynamic(Tagger().eval(), {nn.LSTM, nn.Linear}, dtype=torch.qint8)
    return {
        "speaker_lstm3": (SpeakerEncoder(), (rand(2, 160, 40),)),
        "bilstm2": (BiLSTM(), (rand(30, 2, 32),)),
        "gru2_state": (GRUState(), (rand(30, 2, 32), rand(2, 2, 64))),
        "decoder_lstm_cell": (Decoder(), (rand(1, 128), rand(1, 128))),
        "streaming_gru_cell": (StreamingGRU(), (rand(16, 1, 64), rand(1, 128))),
        "quantized_lstm_tagger": (tagger, (rand(30, 2, 64),)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--only", action="append", default=[])
    args = ap.parse_args(argv)
    import torch
    from threadpoolctl import threadpool_info

    import vm

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    blas = [f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info() if i.get("user_api") == "blas"]
    print(f"numpy BLAS: {', '.join(blas)}; load {os.getloadavg()[0]:.2f}")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, (module, inputs) in _models().items():
            if args.only and name not in args.only:
                continue
            path = Path(folder) / f"{name}.pt"
            torch.jit.save(torch.jit.script(module.eval()), str(path))
            theirs = torch.jit.load(str(path))
            feeds = [t.numpy() for t in inputs]
            engines = {
                "irvm static": vm.load(path, threads=1),
                "irvm interp": vm.load(path, backend="interp", threads=1),
            }
            with torch.no_grad():
                want = theirs(*inputs).numpy()
            worst = max(float(np.abs(np.asarray(m(*feeds), np.float64) - want).max()) for m in engines.values())
            calls = {**{k: (lambda m=m, feeds=feeds: m(*feeds)) for k, m in engines.items()},
                     "torch.jit": lambda theirs=theirs, inputs=inputs: theirs(*inputs)}
            times: dict[str, list[float]] = {k: [] for k in calls}
            with torch.no_grad():
                for _ in range(2):
                    for f in calls.values():
                        f()
                for _ in range(args.rounds):
                    for k, f in calls.items():
                        start = time.perf_counter()
                        f()
                        times[k].append((time.perf_counter() - start) * 1e3)
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append((name, med, worst))
    print("\n| model | irvm static ms | irvm interp ms | torch.jit ms | static / torch.jit | largest difference |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, med, worst in rows:
        print(f"| {name} | {med['irvm static']:.3f} | {med['irvm interp']:.3f} | {med['torch.jit']:.3f} | "
              f"{med['irvm static'] / med['torch.jit']:.2f} | {worst:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
