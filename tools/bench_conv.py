"""Benchmark irvm's convolution and linear kernels against torch, and against the GEMM bound.

    python tools/bench_conv.py [--repeat 20] [--threads 1] [--only conv|linear] [--imagenet] [--channels-last]

First the GEMM bound of this machine: the sgemm flop rate of ``np.matmul`` (OpenBLAS) and
of ``torch.mm`` on big square float32 matrices, one thread by default.  Then, per shape:

- convolutions at the shapes the zoo models run (ResNet-18, ConvNeXt-T, EfficientNet-B0,
  ViT-B/16 at their 64x64 zoo inputs, a few batches; ``--imagenet`` adds ResNet's
  224x224 shapes):
  irvm's ``aten::conv2d`` into an out buffer (as the static runtime calls it) and
  ``torch.conv2d``, the ratio, and irvm's time split into its parts measured alone: the
  padded copy, the column copy (im2col), the GEMM on the columns and the bias pass; and
  the fraction of the GEMM bound that irvm's GEMM, irvm's whole convolution and torch's
  convolution reach (``2 * O * C/groups * prod(kernel) * prod(out)`` flops);
- linear layers at the zoo's shapes (ConvNeXt's MLP on a channels-last permutation of an
  NCHW tensor, ViT's 17 tokens, a classifier head): ``aten::linear`` into an out buffer
  and ``torch.nn.functional.linear``.

``--channels-last`` gives irvm each conv weight laid out channels-last (same values; the
layout a load-time fold can choose), which takes the columns with the channel axis
innermost (``vm.ops.nn.im2col._conv_nhwc``; its parts are not split, shown as nan).

Both sides get the same threads (``--threads``: OpenBLAS's and torch's intra-op pools),
their runs are interleaved, and the figure is the minimum over ``--repeat`` runs (the one
least disturbed by other processes on a shared machine).  Weights stay in cache from run to
run here; in a model they are read from memory once per call, which is what makes the
few-row products weight-bound there (see the issue #16 report).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
np: Any = None  # numpy, imported once the BLAS thread count is set

# (label, input NCHW, out channels, kernel, stride, padding)
CONVS = [
    ("r18 stem 7x7/2", (1, 3, 64, 64), 64, 7, 2, 3),
    ("r18 l1 3x3", (1, 64, 16, 16), 64, 3, 1, 1),
    ("r18 l2 3x3/2", (1, 64, 16, 16), 128, 3, 2, 1),
    ("r18 l2 3x3", (1, 128, 8, 8), 128, 3, 1, 1),
    ("r18 l3 3x3/2", (1, 128, 8, 8), 256, 3, 2, 1),
    ("r18 l3 3x3", (1, 256, 4, 4), 256, 3, 1, 1),
    ("r18 l4 3x3/2", (1, 256, 4, 4), 512, 3, 2, 1),
    ("r18 l4 3x3", (1, 512, 2, 2), 512, 3, 1, 1),
    ("r18 l4 1x1/2", (1, 256, 4, 4), 512, 1, 2, 0),
    ("cnx stem 4x4/4", (1, 3, 64, 64), 96, 4, 4, 0),
    ("cnx down 2x2/2", (1, 96, 16, 16), 192, 2, 2, 0),
    ("cnx down 2x2/2", (1, 384, 4, 4), 768, 2, 2, 0),
    ("eff stem 3x3/2", (1, 3, 64, 64), 32, 3, 2, 1),
    ("eff 1x1", (1, 16, 32, 32), 96, 1, 1, 0),
    ("eff 1x1", (1, 112, 4, 4), 672, 1, 1, 0),
    ("eff 1x1", (1, 1152, 2, 2), 192, 1, 1, 0),
    ("eff SE 1x1", (1, 20, 1, 1), 480, 1, 1, 0),
    ("vit patch 16/16", (1, 3, 64, 64), 768, 16, 16, 0),
]
IMAGENET = [
    ("r18 stem 224", (1, 3, 224, 224), 64, 7, 2, 3),
    ("r18 l1 56x56", (1, 64, 56, 56), 64, 3, 1, 1),
    ("r18 l2 28x28", (1, 128, 28, 28), 128, 3, 1, 1),
    ("r18 l3 14x14", (1, 256, 14, 14), 256, 3, 1, 1),
    ("batch 8 3x3", (8, 64, 28, 28), 64, 3, 1, 1),
]
BATCHED = [  # the 2-conv CNN of the peer rows at batch 32, and small planes in a batch
    ("cnn conv1 b32", (32, 1, 28, 28), 8, 3, 1, 1),
    ("cnn conv2 b32", (32, 8, 14, 14), 16, 3, 1, 1),
    ("b4 3x3 8x8", (4, 128, 8, 8), 128, 3, 1, 1),
    ("b8 3x3 4x4", (8, 256, 4, 4), 256, 3, 1, 1),
]
# (label, input shape, permutation of it that the layer sees or None, out features)
LINEARS = [
    ("cnx mlp1 16x16", (1, 96, 16, 16), (0, 2, 3, 1), 384),
    ("cnx mlp2 16x16", (1, 384, 16, 16), (0, 2, 3, 1), 96),
    ("cnx mlp1 4x4", (1, 384, 4, 4), (0, 2, 3, 1), 1536),
    ("cnx mlp2 4x4", (1, 1536, 4, 4), (0, 2, 3, 1), 384),
    ("cnx mlp1 2x2", (1, 768, 2, 2), (0, 2, 3, 1), 3072),
    ("vit mlp1", (1, 17, 768), None, 3072),
    ("vit mlp2", (1, 17, 3072), None, 768),
    ("vit qkv", (1, 17, 768), None, 2304),
    ("r18 fc", (1, 512), None, 1000),
]


def best_ms(fns: list[Callable[[], object]], repeat: int) -> list[float]:
    """The minimum milliseconds of each function over ``repeat`` interleaved runs."""
    for fn in fns:
        fn()  # warm up (allocations, scratch buffers, BLAS thread start)
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            start = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - start)
    return [b * 1e3 for b in best]


def gemm_bound(repeat: int) -> tuple[float, float]:
    """GFLOP/s of float32 ``np.matmul`` and ``torch.mm`` on 1024x1024 matrices."""
    import torch

    n = 1024
    a, b = np.ones((n, n), np.float32), np.ones((n, n), np.float32)
    c = np.empty((n, n), np.float32)
    ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(c)
    t_np, t_torch = best_ms([lambda: np.matmul(a, b, out=c), lambda: torch.mm(ta, tb, out=tc)], max(10, repeat))
    return 2 * n**3 / t_np / 1e6, 2 * n**3 / t_torch / 1e6


def conv_parts(x: Any, w: Any, b: Any, stride: int, pad: int, repeat: int) -> tuple[float, float, float, float, float]:
    """(pad, columns, gemm, bias) milliseconds of irvm's im2col convolution, each measured
    alone on buffers like the ones it uses, and the GEMM's flops.  (A batch of small planes
    is one GEMM whose result is copied transposed with the bias added: that copy is the
    "bias" part then.  Where the GEMM adds the bias, "bias" is the copy of the weight with
    the bias as its last column, and "cols" includes a pointwise input's copy.)"""
    from vm.ops.nn import im2col

    plan = im2col._plan(x.shape, w.shape, (stride,) * 2, (pad,) * 2, (1, 1), 1)
    n, _, og, length = plan.out_groups
    src = np.zeros(plan.padded, np.float32) if plan.padded else x
    fns: list[Callable[[], object]] = []
    if plan.padded:
        fns.append(lambda: src.__setitem__(plan.interior, x))
    if plan.augmented:
        k1 = plan.augmented[2]
        cols = np.ones(plan.augmented, np.float32)
        body = cols[:, :, :-1].reshape(plan.window_shape if plan.cols else x.shape, copy=False)
        view = im2col._strided(src, plan.window_shape, plan.window_strides) if plan.cols else x
        wb, result = np.empty((og, k1), np.float32), np.empty((n, og, length), np.float32)
        c3 = cols.reshape(n, k1, length)
        fns += [
            lambda: np.copyto(body, view),
            lambda: np.matmul(wb, c3, out=result),
            lambda: (np.copyto(wb[:, :-1], w.reshape(og, -1)), np.copyto(wb[:, -1], b)),
        ]
        times = best_ms(fns, repeat)
        t_pad = times.pop(0) if plan.padded else 0.0
        return t_pad, times[0], times[1], times[2], 2.0 * n * og * (k1 - 1) * length
    if plan.cols:
        cols = np.empty(plan.cols, np.float32)
        if plan.gather:
            index = im2col._gather_index(plan.window_shape, plan.window_strides)
            fns.append(lambda: np.take(src.reshape(-1), index, out=cols.reshape(-1), mode="clip"))
        else:
            view = im2col._strided(src, plan.window_shape, plan.window_strides)
            fns.append(lambda: np.copyto(cols.reshape(plan.window_shape), view))
    else:
        cols = x
    w2 = w.reshape(og, -1)
    result = np.empty((n, og, length), np.float32)
    if plan.batch_inner:
        prod, c2 = np.empty((og, n * length), np.float32), cols.reshape(-1, n * length)
        fns.append(lambda: np.matmul(w2, c2, out=prod))
        by_batch = prod.reshape(og, n, length).transpose(1, 0, 2)
        fns.append(lambda: np.add(by_batch, b.reshape(-1, 1), out=result))
    else:
        c3 = cols.reshape(n, -1, length)
        fns.append(lambda: np.matmul(w2, c3, out=result))
        fns.append(lambda: np.add(result, b.reshape(-1, 1), out=result))
    times = best_ms(fns, repeat)
    parts = [times.pop(0) if plan.padded else 0.0, times.pop(0) if plan.cols else 0.0, *times]
    return parts[0], parts[1], parts[2], parts[3], 2.0 * n * og * w2.shape[1] * length


def bench_convs(shapes: list[Any], repeat: int, peak: float, channels_last: bool = False) -> list[float]:
    import torch

    from vm.ops.nn import im2col
    from vm.ops.registry import lookup

    conv2d = lookup("aten::conv2d").out
    rng = np.random.default_rng(0)
    print(f"\n{'conv':<16}{'input':>14}{'out':>5}{'k/s':>5}{'irvm ms':>9}{'torch':>8}{'ratio':>7}"
          f"{'pad':>7}{'cols':>7}{'gemm':>7}{'bias':>6}{'gemm%':>7}{'irvm%':>7}{'torch%':>7}")
    ratios = []
    for label, shape, o, k, stride, pad in shapes:
        x = rng.standard_normal(shape, dtype=np.float32)
        w = rng.standard_normal((o, shape[1], k, k), dtype=np.float32)
        b = rng.standard_normal(o, dtype=np.float32)
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)
        with torch.no_grad():
            want = torch.conv2d(tx, tw, tb, stride, pad).numpy()
        out = np.empty(want.shape, np.float32)
        st, pd = [stride, stride], [pad, pad]
        wi = im2col.channels_last(w) if channels_last else w
        np.testing.assert_allclose(conv2d(out, x, wi, b, st, pd, [1, 1], 1), want, rtol=1e-3, atol=1e-3)
        with torch.no_grad():
            t_irvm, t_torch = best_ms(
                [partial(conv2d, out, x, wi, b, st, pd, [1, 1], 1), partial(torch.conv2d, tx, tw, tb, stride, pad)], repeat
            )
        t_pad, t_cols, t_gemm, t_bias, flops = conv_parts(x, w, b, stride, pad, repeat)
        if channels_last and im2col.is_channels_last(wi) and not wi.flags.c_contiguous:  # parts of the NCHW route
            t_pad = t_cols = t_gemm = t_bias = float("nan")
        ratios.append(t_irvm / t_torch)

        def pct(ms: float, flops: float = flops) -> str:
            return f"{flops / ms / 1e6 / peak:.0%}"

        print(f"{label:<16}{'x'.join(map(str, shape[1:])):>14}{o:>5}{f'{k}/{stride}':>5}{t_irvm:>9.3f}{t_torch:>8.3f}"
              f"{ratios[-1]:>7.2f}{t_pad:>7.3f}{t_cols:>7.3f}{t_gemm:>7.3f}{t_bias:>6.3f}"
              f"{pct(t_gemm):>7}{pct(t_irvm):>7}{pct(t_torch):>7}")
    return ratios


def bench_linears(repeat: int) -> list[float]:
    import torch

    from vm.ops.registry import lookup

    linear = lookup("aten::linear").out
    rng = np.random.default_rng(1)
    print(f"\n{'linear':<16}{'input (as seen)':>22}{'out':>6}{'irvm ms':>9}{'torch':>8}{'ratio':>7}")
    ratios = []
    for label, shape, perm, o in LINEARS:
        base = rng.standard_normal(shape, dtype=np.float32)
        x = base.transpose(perm) if perm else base
        w = rng.standard_normal((o, x.shape[-1]), dtype=np.float32)
        b = rng.standard_normal(o, dtype=np.float32)
        tx = torch.from_numpy(base).permute(perm) if perm else torch.from_numpy(base)
        tw, tb = torch.from_numpy(w), torch.from_numpy(b)
        with torch.no_grad():
            want = torch.nn.functional.linear(tx, tw, tb).numpy()
        out = np.empty(want.shape, np.float32)
        np.testing.assert_allclose(linear(out, x, w, b), want, rtol=1e-3, atol=1e-3)
        with torch.no_grad():
            t_irvm, t_torch = best_ms([partial(linear, out, x, w, b), partial(torch.nn.functional.linear, tx, tw, tb)], repeat)
        ratios.append(t_irvm / t_torch)
        seen = "x".join(map(str, x.shape)) + ("  (permuted)" if perm else "")
        print(f"{label:<16}{seen:>22}{o:>6}{t_irvm:>9.3f}{t_torch:>8.3f}{ratios[-1]:>7.2f}")
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="BLAS and torch threads (default 1)")
    parser.add_argument("--only", choices=["conv", "linear"])
    parser.add_argument("--channels-last", action="store_true",
                        help="irvm's conv weights laid out channels-last (vm.ops.nn.im2col.channels_last); torch's stay NCHW")
    parser.add_argument("--imagenet", action="store_true", help="add ResNet's 224x224 shapes")
    args = parser.parse_args(argv)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    global np
    import numpy
    import torch

    np = numpy
    torch.set_num_threads(args.threads)
    g_np, g_torch = gemm_bound(args.repeat)
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads), numpy {np.__version__}")
    print(f"GEMM bound (1024^3 float32): np.matmul {g_np:.0f} GFLOP/s, torch.mm {g_torch:.0f} GFLOP/s; "
          "the % columns are of np.matmul's")
    for what, ratios in (
        ("conv", bench_convs(CONVS + BATCHED + (IMAGENET if args.imagenet else []), args.repeat, g_np, args.channels_last)
     if args.only != "linear" else []),
        ("linear", bench_linears(args.repeat) if args.only != "conv" else []),
    ):
        if ratios:
            mean = float(np.exp(np.mean(np.log(ratios))))
            print(f"{what}: geometric mean irvm/torch of the minima {mean:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
