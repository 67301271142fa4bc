"""Benchmark irvm's conv2d kernel against torch at ResNet-like shapes.

    python tools/bench_conv.py [--repeat 10] [--threads 1]

For each shape, runs ``aten::conv2d`` from irvm's operator library (numpy: im2col + one
BLAS matmul, or the depthwise tap loop) and ``torch.conv2d`` on the same float32 data,
checks they agree, and prints the median and the minimum time of each and the ratios
irvm / torch.
Both sides get the same number of threads (``--threads``, default 1: OpenBLAS's and
torch's intra-op pools), and their runs are interleaved, so that a loaded machine slows
both alike; the ratio is the figure to read, not the absolute times.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
np: Any = None  # numpy, imported once the BLAS thread count is set

# (label, input NCHW, out channels, kernel, stride, padding, groups)
SHAPES = [
    ("stem 7x7/2", (1, 3, 224, 224), 64, 7, 2, 3, 1),
    ("res2 3x3", (1, 64, 56, 56), 64, 3, 1, 1, 1),
    ("res3 3x3", (1, 128, 28, 28), 128, 3, 1, 1, 1),
    ("res3 3x3/2", (1, 128, 28, 28), 128, 3, 2, 1, 1),
    ("res4 3x3", (1, 256, 14, 14), 256, 3, 1, 1, 1),
    ("res4 1x1", (1, 256, 14, 14), 1024, 1, 1, 0, 1),
    ("depthwise 3x3", (1, 128, 56, 56), 128, 3, 1, 1, 128),
    ("batch 8 3x3", (8, 64, 28, 28), 64, 3, 1, 1, 1),
]


def timings_ms(fns: list[Callable[[], object]], repeat: int) -> list[tuple[float, float]]:
    """(median, minimum) milliseconds of each function, runs interleaved so that load from
    other processes falls on all of them alike; the minimum is the figure least disturbed
    by a busy machine."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()  # warm up (allocations, BLAS thread start)
    for _ in range(repeat):
        for fn, samples in zip(fns, times):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
    return [(statistics.median(samples) * 1e3, min(samples) * 1e3) for samples in times]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads (default 1)")
    args = parser.parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    global np
    import numpy
    import torch

    from vm.ops.registry import lookup

    np = numpy
    torch.set_num_threads(args.threads)
    conv2d = lookup("aten::conv2d").kernel
    rng = np.random.default_rng(0)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), numpy {np.__version__}")
    print(f"{'':<36}{'---------- median ----------':>28}{'---------- minimum ---------':>28}")
    print(f"{'shape':<16}{'input':>20}{'irvm ms':>10}{'torch ms':>10}{'ratio':>8}{'irvm ms':>10}{'torch ms':>10}{'ratio':>8}")
    ratios = []
    for label, shape, out, k, stride, pad, groups in SHAPES:
        x = rng.standard_normal(shape, dtype=np.float32)
        w = rng.standard_normal((out, shape[1] // groups, k, k), dtype=np.float32)
        b = rng.standard_normal(out, dtype=np.float32)
        st, pd = [stride, stride], [pad, pad]
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        ours = conv2d(x, w, b, st, pd, [1, 1], groups)
        with torch.no_grad():
            theirs = torch.conv2d(tx, tw, tb, stride, pad, 1, groups).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-3)
        with torch.no_grad():
            (t_irvm, m_irvm), (t_torch, m_torch) = timings_ms(
                [partial(conv2d, x, w, b, st, pd, [1, 1], groups), partial(torch.conv2d, tx, tw, tb, stride, pad, 1, groups)],
                args.repeat,
            )
        ratios.append((t_irvm / t_torch, m_irvm / m_torch))
        print(
            f"{label:<16}{'x'.join(map(str, shape)):>20}{t_irvm:>10.2f}{t_torch:>10.2f}{ratios[-1][0]:>8.2f}"
            f"{m_irvm:>10.2f}{m_torch:>10.2f}{ratios[-1][1]:>8.2f}"
        )
    for i, what in enumerate(("medians", "minima")):
        mean = float(np.exp(np.mean(np.log([r[i] for r in ratios]))))
        print(f"geometric mean ratio irvm/torch of the {what}: {mean:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
