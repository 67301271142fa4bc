"""Micro-benchmark irvm's kernels against torch's on the shapes real models give them.

    python3 tools/bench_kernels.py [--only gelu] [--repeat 20] [--threads 1]

Each row runs one operator of irvm's library (``vm.ops``, the kernel a runtime calls, or
its out variant into a preallocated buffer when ``out`` is marked) and the same torch
function on the same float32 data, checks that they agree (to the row's tolerance), and
prints the median and minimum milliseconds of each and the ratio irvm / torch of the
minima (the figure least disturbed by a busy machine).  Both get the same threads
(``--threads``, default 1: torch's intra-op pool and numpy's BLAS, whose variables are set
before numpy is imported); runs are interleaved so that load falls on both alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _threads(argv: list[str]) -> int:
    n = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 1
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    return n


THREADS = _threads(sys.argv)  # before numpy is first imported
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

Case = tuple[str, Callable[[], Any], Callable[[], Any], float]  # label, irvm, torch, tolerance


def cases() -> list[Case]:
    import numpy as np
    import torch
    import torch.nn.functional as F

    from vm.ops.registry import lookup

    rng = np.random.default_rng(0)

    def randn(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    def op(name: str) -> Any:
        return lookup(name)

    t = torch.from_numpy
    out: list[Case] = []
    x = randn(1, 197, 3072)
    buf = np.empty_like(x)
    out.append(("gelu (1,197,3072) out", lambda: op("aten::gelu").out(buf, x, "none"), lambda: F.gelu(t(x)), 1e-6))
    out.append(("gelu tanh (1,197,3072)", lambda: op("aten::gelu").kernel(x, "tanh"),
                lambda: F.gelu(t(x), approximate="tanh"), 1e-6))
    out.append(("erf (1,197,3072) out", lambda: op("aten::erf").out(buf, x), lambda: torch.erf(t(x)), 1e-6))
    xh2 = randn(1, 96, 112, 112)
    xs = randn(1, 16, 256)
    out.append(("gelu (1,16,256)", lambda: op("aten::gelu").kernel(xs, "none"), lambda: F.gelu(t(xs)), 1e-6))
    xe = randn(1, 96, 48, 48)
    out.append(("silu (1,96,48,48)", lambda: op("aten::silu").kernel(xe), lambda: F.silu(t(xe)), 1e-6))
    out.append(("silu (1,96,112,112)", lambda: op("aten::silu").kernel(xh2), lambda: F.silu(t(xh2)), 1e-6))
    out.append(("sigmoid (1,197,3072)", lambda: op("aten::sigmoid").kernel(x), lambda: torch.sigmoid(t(x)), 1e-6))
    out.append(("tanh (1,197,3072)", lambda: op("aten::tanh").kernel(x), lambda: torch.tanh(t(x)), 1e-6))
    xp = randn(1, 96, 56, 56).transpose(0, 2, 3, 1)
    w, b = randn(384, 96), randn(384)
    out.append(("linear NHWC (1,56,56,96)->384", lambda: op("aten::linear").kernel(xp, w, b),
                lambda: F.linear(t(xp), t(w), t(b)), 1e-4))
    xl, wl, bl = randn(1, 197, 768), randn(3072, 768), randn(3072)
    out.append(("linear (1,197,768)->3072", lambda: op("aten::linear").kernel(xl, wl, bl),
                lambda: F.linear(t(xl), t(wl), t(bl)), 1e-3))
    conv = op("aten::conv2d").kernel
    for label, shape, o, k, s, p, g in (
        ("depthwise 3x3", (1, 144, 56, 56), 144, 3, 1, 1, 144),
        ("depthwise 3x3/2", (1, 144, 56, 56), 144, 3, 2, 1, 144),
        ("depthwise 5x5", (1, 240, 14, 14), 240, 5, 1, 2, 240),
        ("depthwise 5x5", (1, 672, 14, 14), 672, 5, 1, 2, 672),
        ("depthwise 5x5/2", (1, 144, 56, 56), 144, 5, 2, 2, 144),
        ("depthwise 3x3", (1, 32, 48, 48), 32, 3, 1, 1, 32),
        ("depthwise 7x7", (1, 96, 56, 56), 96, 7, 1, 3, 96),
        ("depthwise 7x7", (1, 768, 7, 7), 768, 7, 1, 3, 768),
        ("depthwise 7x7", (1, 384, 14, 14), 384, 7, 1, 3, 384),
        ("grouped 3x3 g=32", (1, 128, 28, 28), 128, 3, 1, 1, 32),
        ("grouped 3x3 g=2", (1, 64, 28, 28), 64, 3, 1, 1, 2),
        ("pointwise 1x1", (1, 144, 56, 56), 24, 1, 1, 0, 1),
        ("regular 3x3", (1, 64, 56, 56), 64, 3, 1, 1, 1),
    ):
        xc, wc, bc = randn(*shape), randn(o, shape[1] // g, k, k), randn(o)
        out.append((
            f"conv {label} {shape}",
            lambda xc=xc, wc=wc, bc=bc, s=s, p=p, g=g: conv(xc, wc, bc, [s, s], [p, p], [1, 1], g),
            lambda xc=xc, wc=wc, bc=bc, s=s, p=p, g=g: F.conv2d(t(xc), t(wc), t(bc), s, p, 1, g),
            1e-3,
        ))
    ln = op("aten::layer_norm").kernel
    for shape in ((1, 16, 64), (1, 197, 768)):
        xn, gn, bn = randn(*shape), randn(shape[-1]), randn(shape[-1])
        out.append((f"layer_norm {shape}", lambda xn=xn, gn=gn, bn=bn: ln(xn, [xn.shape[-1]], gn, bn, 1e-5, True),
                    lambda xn=xn, gn=gn, bn=bn: F.layer_norm(t(xn), (xn.shape[-1],), t(gn), t(bn)), 1e-4))
    for shape in ((1, 2, 16, 16), (1, 12, 197, 197)):
        xm = randn(*shape)
        out.append((f"softmax {shape}", lambda xm=xm: op("aten::softmax.int").kernel(xm, -1, None),
                    lambda xm=xm: torch.softmax(t(xm), -1), 1e-6))
        out.append((f"log_softmax {shape}", lambda xm=xm: op("aten::log_softmax.int").kernel(xm, -1, None),
                    lambda xm=xm: torch.log_softmax(t(xm), -1), 1e-5))
    xw = randn(1, 16, 112, 112)
    out.append(("hardswish (1,16,112,112)", lambda: op("aten::hardswish").kernel(xw), lambda: F.hardswish(t(xw)), 1e-6))
    out.append(("hardsigmoid (1,16,112,112)", lambda: op("aten::hardsigmoid").kernel(xw), lambda: F.hardsigmoid(t(xw)), 1e-6))
    xh = randn(1, 96, 56, 56)
    out.append(("hardtanh (relu6) (1,96,56,56)", lambda: op("aten::hardtanh").kernel(xh, 0.0, 6.0),
                lambda: F.hardtanh(t(xh), 0.0, 6.0), 0))
    return out


def timings(fns: list[Callable[[], Any]], repeat: int) -> list[tuple[float, float]]:
    """(median, minimum) ms of each function, runs interleaved."""
    samples: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for fn, times in zip(fns, samples):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return [(statistics.median(s) * 1e3, min(s) * 1e3) for s in samples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", default="", help="rows whose label contains this text")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    print("| kernel | irvm median | irvm min | torch median | torch min | irvm / torch (min) |\n|---|---:|---:|---:|---:|---:|")
    for label, ours, theirs, tol in cases():
        if args.only not in label:
            continue
        got, want = np.asarray(ours()), theirs().numpy()
        if not np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True):
            print(f"| {label} | disagrees with torch (max diff {np.abs(got - want).max():.3g}) |||||")
            continue
        (om, on), (tm, tn) = timings([ours, theirs], args.repeat)
        print(f"| {label} | {om:.3f} | {on:.3f} | {tm:.3f} | {tn:.3f} | {on / tn:.2f} |", flush=True)
    print(f"\nthreads: torch {torch.get_num_threads()}, numpy BLAS OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
