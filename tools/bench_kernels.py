"""Micro-benchmark irvm's kernels against torch's and against this machine's limits.

    python3 tools/bench_kernels.py [--only gelu] [--repeat 20] [--threads 1]

Each row runs one operator of irvm's library (``vm.ops``, the kernel a runtime calls, or
its out variant into a preallocated buffer when ``out`` is marked) and the same torch
function on the same float32 data, checks that they agree (to the row's tolerance), and
prints the median and minimum milliseconds of each and the ratio irvm / torch of the
minima (the figure least disturbed by a busy machine).  Both get the same threads
(``--threads``, default 1: torch's intra-op pool and numpy's BLAS, whose variables are set
before numpy is imported); runs are interleaved so that load falls on both alike.

Each row also has a bound: the least time the machine needs for it, measured here before
the rows run.  Memory: the bytes a kernel must move (its inputs read once, its result
written once) at the copy bandwidth of ``np.copyto`` between two 64 MB float32 arrays.
Arithmetic, for the rows that are matrix products (linear, convolutions): their
multiply-adds at the rate of a large float32 ``matmul`` (numpy's BLAS, the same threads).
A row's bound is the larger of the two, and ``/ bound`` is each engine's minimum time over
it (1.0 is the hardware's limit; tensors of a few MB sit in the last-level cache when a
kernel is called in a loop, so a row can come out below 1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple


def _threads(argv: list[str]) -> int:
    n = int(argv[argv.index("--threads") + 1]) if "--threads" in argv else 1
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    return n


THREADS = _threads(sys.argv)  # before numpy is first imported
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

class Case(NamedTuple):
    label: str
    ours: Callable[[], Any]
    theirs: Callable[[], Any]
    tol: float
    moved: int = 0  # bytes read and written at least once: the inputs (result added at run time)
    macs: int = 0  # multiply-adds of a matrix-product row (0 for the others)


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

    def nbytes(*arrays: np.ndarray) -> int:
        return sum(a.nbytes for a in arrays)

    t = torch.from_numpy
    out: list[Case] = []
    x = randn(1, 197, 3072)
    buf = np.empty_like(x)
    out.append(Case("gelu (1,197,3072) out", lambda: op("aten::gelu").out(buf, x, "none"), lambda: F.gelu(t(x)), 1e-6,
                    x.nbytes))
    out.append(Case("gelu tanh (1,197,3072)", lambda: op("aten::gelu").kernel(x, "tanh"),
                    lambda: F.gelu(t(x), approximate="tanh"), 1e-6, x.nbytes))
    out.append(Case("erf (1,197,3072) out", lambda: op("aten::erf").out(buf, x), lambda: torch.erf(t(x)), 1e-6, x.nbytes))
    xh2 = randn(1, 96, 112, 112)
    xs = randn(1, 16, 256)
    out.append(Case("gelu (1,16,256)", lambda: op("aten::gelu").kernel(xs, "none"), lambda: F.gelu(t(xs)), 1e-6,
                    xs.nbytes))
    xe = randn(1, 96, 48, 48)
    out.append(Case("silu (1,96,48,48)", lambda: op("aten::silu").kernel(xe), lambda: F.silu(t(xe)), 1e-6, xe.nbytes))
    out.append(Case("silu (1,96,112,112)", lambda: op("aten::silu").kernel(xh2), lambda: F.silu(t(xh2)), 1e-6,
                    xh2.nbytes))
    out.append(Case("sigmoid (1,197,3072)", lambda: op("aten::sigmoid").kernel(x), lambda: torch.sigmoid(t(x)), 1e-6,
                    x.nbytes))
    out.append(Case("tanh (1,197,3072)", lambda: op("aten::tanh").kernel(x), lambda: torch.tanh(t(x)), 1e-6, x.nbytes))
    xp = randn(1, 96, 56, 56).transpose(0, 2, 3, 1)
    w, b = randn(384, 96), randn(384)
    out.append(Case("linear NHWC (1,56,56,96)->384", lambda: op("aten::linear").kernel(xp, w, b),
                    lambda: F.linear(t(xp), t(w), t(b)), 1e-4, nbytes(xp, w, b), 56 * 56 * 96 * 384))
    xl, wl, bl = randn(1, 197, 768), randn(3072, 768), randn(3072)
    out.append(Case("linear (1,197,768)->3072", lambda: op("aten::linear").kernel(xl, wl, bl),
                    lambda: F.linear(t(xl), t(wl), t(bl)), 1e-3, nbytes(xl, wl, bl), 197 * 768 * 3072))
    conv = op("aten::conv2d").kernel
    for label, shape, o, k, s, p, g in (
        ("depthwise 3x3", (1, 144, 56, 56), 144, 3, 1, 1, 144),
        ("depthwise 3x3/2", (1, 144, 56, 56), 144, 3, 2, 1, 144),
        ("depthwise 5x5", (1, 240, 14, 14), 240, 5, 1, 2, 240),
        ("depthwise 5x5", (1, 672, 14, 14), 672, 5, 1, 2, 672),
        ("depthwise 5x5/2", (1, 144, 56, 56), 144, 5, 2, 2, 144),
        ("depthwise 3x3", (1, 32, 48, 48), 32, 3, 1, 1, 32),
        ("depthwise 3x3", (1, 32, 112, 112), 32, 3, 1, 1, 32),
        ("depthwise 7x7", (1, 96, 56, 56), 96, 7, 1, 3, 96),
        ("depthwise 7x7", (1, 768, 7, 7), 768, 7, 1, 3, 768),
        ("depthwise 7x7", (1, 384, 14, 14), 384, 7, 1, 3, 384),
        # the zoo's own depthwise shapes (its images are 64x64): mobilenet_v2, efficientnet_b0,
        # mnasnet, shufflenet, convnext_tiny
        ("zoo depthwise 3x3", (1, 32, 32, 32), 32, 3, 1, 1, 32),
        ("zoo depthwise 3x3/2", (1, 96, 32, 32), 96, 3, 2, 1, 96),
        ("zoo depthwise 3x3", (1, 144, 16, 16), 144, 3, 1, 1, 144),
        ("zoo depthwise 5x5/2", (1, 144, 16, 16), 144, 5, 2, 2, 144),
        ("zoo depthwise 5x5", (1, 240, 8, 8), 240, 5, 1, 2, 240),
        ("zoo depthwise 3x3", (1, 384, 4, 4), 384, 3, 1, 1, 384),
        ("zoo depthwise 3x3", (1, 48, 4, 4), 48, 3, 1, 1, 48),
        ("zoo depthwise 7x7", (1, 96, 16, 16), 96, 7, 1, 3, 96),
        ("zoo depthwise 7x7", (1, 384, 4, 4), 384, 7, 1, 3, 384),
        ("grouped 3x3 g=32", (1, 128, 28, 28), 128, 3, 1, 1, 32),
        ("grouped 3x3 g=2", (1, 64, 28, 28), 64, 3, 1, 1, 2),
        ("pointwise 1x1", (1, 144, 56, 56), 24, 1, 1, 0, 1),
        ("regular 3x3", (1, 64, 56, 56), 64, 3, 1, 1, 1),
    ):
        xc, wc, bc = randn(*shape), randn(o, shape[1] // g, k, k), randn(o)
        outputs = o * ((shape[2] + 2 * p - k) // s + 1) ** 2
        dense = g == 1 or shape[1] // g > 1  # a matrix product: bounded by the GEMM rate too
        out.append(Case(
            f"conv {label} {shape}",
            lambda xc=xc, wc=wc, bc=bc, s=s, p=p, g=g: conv(xc, wc, bc, [s, s], [p, p], [1, 1], g),
            lambda xc=xc, wc=wc, bc=bc, s=s, p=p, g=g: F.conv2d(t(xc), t(wc), t(bc), s, p, 1, g),
            1e-3,
            nbytes(xc, wc, bc),
            outputs * (shape[1] // g) * k * k if dense else 0,
        ))
    ln = op("aten::layer_norm").kernel
    for shape in ((1, 16, 64), (1, 197, 768)):
        xn, gn, bn = randn(*shape), randn(shape[-1]), randn(shape[-1])
        out.append(Case(f"layer_norm {shape}", lambda xn=xn, gn=gn, bn=bn: ln(xn, [xn.shape[-1]], gn, bn, 1e-5, True),
                        lambda xn=xn, gn=gn, bn=bn: F.layer_norm(t(xn), (xn.shape[-1],), t(gn), t(bn)), 1e-4,
                        nbytes(xn, gn, bn)))
        lnf = _prepared("aten::layer_norm", ([shape[-1]], gn, bn, 1e-5, True))
        out.append(Case(f"layer_norm {shape} prepared", lambda xn=xn, gn=gn, bn=bn, f=lnf: f(xn, [xn.shape[-1]], gn, bn, 1e-5, True),
                        lambda xn=xn, gn=gn, bn=bn: F.layer_norm(t(xn), (xn.shape[-1],), t(gn), t(bn)), 1e-4,
                        nbytes(xn, gn, bn)))
    # eval batch norms that cannot fold into a producer (densenet's, after a cat)
    bnk = op("aten::batch_norm")
    for shape in ((1, 512, 7, 7), (1, 256, 28, 28), (1, 128, 56, 56)):
        c = shape[1]
        xb, yb = randn(*shape), np.empty(shape, np.float32)
        args = (randn(c), randn(c), randn(c), np.abs(randn(c)) + 0.5, False, 0.1, 1e-5, True)
        ta = (t(args[2]), t(args[3]), t(args[0]), t(args[1]), False, 0.1, 1e-5)
        out.append(Case(f"batch_norm eval {shape} out", lambda xb=xb, yb=yb, a=args: bnk.out(yb, xb, *a),
                        lambda xb=xb, ta=ta: F.batch_norm(t(xb), *ta), 1e-5, xb.nbytes))
        bnf = _prepared("aten::batch_norm", args, out=True)
        out.append(Case(f"batch_norm eval {shape} prepared out", lambda xb=xb, yb=yb, a=args, f=bnf: f(yb, xb, *a),
                        lambda xb=xb, ta=ta: F.batch_norm(t(xb), *ta), 1e-5, xb.nbytes))
    for shape in ((1, 2, 16, 16), (1, 12, 197, 197)):
        xm = randn(*shape)
        out.append(Case(f"softmax {shape}", lambda xm=xm: op("aten::softmax.int").kernel(xm, -1, None),
                        lambda xm=xm: torch.softmax(t(xm), -1), 1e-6, xm.nbytes))
        out.append(Case(f"log_softmax {shape}", lambda xm=xm: op("aten::log_softmax.int").kernel(xm, -1, None),
                        lambda xm=xm: torch.log_softmax(t(xm), -1), 1e-5, xm.nbytes))
    xw = randn(1, 16, 112, 112)
    out.append(Case("hardswish (1,16,112,112)", lambda: op("aten::hardswish").kernel(xw), lambda: F.hardswish(t(xw)),
                    1e-6, xw.nbytes))
    out.append(Case("hardsigmoid (1,16,112,112)", lambda: op("aten::hardsigmoid").kernel(xw),
                    lambda: F.hardsigmoid(t(xw)), 1e-6, xw.nbytes))
    xh = randn(1, 96, 56, 56)
    out.append(Case("hardtanh (relu6) (1,96,56,56)", lambda: op("aten::hardtanh").kernel(xh, 0.0, 6.0),
                    lambda: F.hardtanh(t(xh), 0.0, 6.0), 0, xh.nbytes))
    return out


def _prepared(name: str, args: tuple[Any, ...], out: bool = False) -> Any:
    """The prepared form (``vm.ops.prepared``) of ``name`` for constant ``args`` after the
    input, as the static runtime binds it (its out variant when ``out``)."""
    from vm.ops import registry
    from vm.ops.prepared import UNKNOWN, prepared

    ref = registry.OpRef(name, 1 + len(args), 1)
    forms = prepared(ref, [UNKNOWN, *args], registry.bind(ref), registry.bind_out(ref))
    assert forms is not None and forms.out is not None, f"{name}: no prepared form for these arguments"
    return forms.out if out else forms.kernel


def machine_limits(repeat: int = 5) -> tuple[float, float]:
    """(copy bandwidth in bytes/s, float32 matmul rate in multiply-adds/s) of this machine,
    with the threads numpy's BLAS was given: the minimum time of ``repeat`` runs of
    ``np.copyto`` between two 64 MB arrays and of a 1024 x 1024 x 1024 ``matmul``."""
    import numpy as np

    src = np.ones(1 << 24, np.float32)
    dst = np.empty_like(src)
    a = np.ones((1024, 1024), np.float32)
    c = np.empty_like(a)
    copy, gemm = min_seconds(lambda: np.copyto(dst, src), repeat), min_seconds(lambda: np.matmul(a, a, out=c), repeat)
    return 2 * src.nbytes / copy, 1024**3 / gemm


def min_seconds(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _numpy_kernels(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with irvm's compiled kernel tier switched off: the numpy kernels alone."""
    from vm.ops import compiled

    def run() -> Any:
        before = compiled.mode()
        compiled.use("numpy")
        try:
            return fn()
        finally:
            compiled.use(before)

    return run


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

    import vm

    torch.set_num_threads(args.threads)
    vm.set_num_threads(args.threads)  # numpy's BLAS and irvm's compiled kernels, as many as torch's
    print(f"threads: torch {torch.get_num_threads()}, irvm {vm.get_num_threads()} (BLAS, fused, compiled)")
    bandwidth, gemm = machine_limits()
    print(f"copy bandwidth {bandwidth / 1e9:.1f} GB/s (np.copyto, 64 MB float32 arrays); "
          f"float32 matmul {2 * gemm / 1e9:.0f} GFLOP/s (1024^3, numpy's BLAS)\n")
    from vm.ops import compiled

    print(f"irvm's kernel tier: {compiled.mode()} (the 'numpy min' column: the same call with the tier off)\n")
    print("| kernel | irvm median | irvm min | numpy min | torch median | torch min | irvm / torch (min) | bound ms "
          "| irvm / bound | torch / bound |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case in cases():
        if args.only not in case.label:
            continue
        got, want = np.asarray(case.ours()), case.theirs().numpy()
        if not np.allclose(got, want, rtol=case.tol, atol=case.tol, equal_nan=True):
            print(f"| {case.label} | disagrees with torch (max diff {np.abs(got - want).max():.3g}) ||||||||")
            continue
        (om, on), (_, nn), (tm, tn) = timings([case.ours, _numpy_kernels(case.ours), case.theirs], args.repeat)
        memory = (case.moved + want.nbytes) / bandwidth * 1e3
        arithmetic = case.macs / gemm * 1e3
        bound = max(memory, arithmetic)
        kind = "gemm" if arithmetic > memory else "mem"
        print(f"| {case.label} | {om:.3f} | {on:.3f} | {nn:.3f} | {tm:.3f} | {tn:.3f} | {on / tn:.2f} | {bound:.3f} {kind} "
              f"| {on / bound:.1f} | {tn / bound:.1f} |", flush=True)
    print(f"\nthreads: torch {torch.get_num_threads()}, numpy BLAS OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
