"""Fused kernels against unfused numpy and torch.jit, side by side in one process.

    python tools/bench_fusion.py [--quick] [--out bench_results/fusion.md]

Rows: ratio_iou (the seed notebook's box IoU, 20 elementwise ops) at 1e5 and 8e5
elements, and the 5-op chain ``relu(x*w + b)*0.5 + x`` at 16M elements, all float32.
Columns (median ms): hand-written numpy, the group's ops unfused (irvm kernels one by
one), fused-blocked (numpy, cache-blocked, threads), fused-numba (when numba is
installed), torch.jit.script (when torch is installed), and the memory-bandwidth bound
(bytes the group must read and write / measured copy bandwidth).  Ratios are to torch.jit.
Variants run in interleaved blocks of consecutive calls (see ``measure``).
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

# OpenMP threads (torch's, numba's) spin after each parallel region by default; on two
# cores shared with irvm's own fusion threads that spinning starves the next variant.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

try:
    import torch
except ImportError:  # the torch column is left out
    torch = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import compiler
from compiler.pipeline import optimize
from vm import fusion_numba  # noqa: E402
from vm.fusion import FusedKernel

CHAIN_IR = """\
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %xw : Tensor = aten::mul(%x, %w)
  %xwb : Tensor = aten::add(%xw, %b, %one)
  %r : Tensor = aten::relu(%xwb)
  %h : Tensor = aten::mul(%r, %half)
  %y : Tensor = aten::add(%h, %x, %one)
  return (%y)
"""


def ratio_iou_numpy(x1, y1, w1, h1, x2, y2, w2, h2):
    xi = np.maximum(x1, x2)
    yi = np.maximum(y1, y2)
    wi = np.clip(np.minimum(x1 + w1, x2 + w2) - xi, 0, None)
    hi = np.clip(np.minimum(y1 + h1, y2 + h2) - yi, 0, None)
    area_i = wi * hi
    area_u = w1 * h1 + w2 * h2 - area_i
    return area_i / np.clip(area_u, 1e-5, None)


def chain_numpy(x, w, b):
    return np.maximum(x * w + b, 0) * np.float32(0.5) + x


def ratio_iou_torch(x1, y1, w1, h1, x2, y2, w2, h2):
    xi = torch.max(x1, x2)
    yi = torch.max(y1, y2)
    wi = torch.clamp(torch.min(x1 + w1, x2 + w2) - xi, min=0.)
    hi = torch.clamp(torch.min(y1 + h1, y2 + h2) - yi, min=0.)
    area_i = wi * hi
    area_u = w1 * h1 + w2 * h2 - area_i
    return area_i / torch.clamp(area_u, min=1e-5)


def chain_torch(x, w, b):
    return torch.relu(x * w + b) * 0.5 + x


def group_kernel(text: str, name: str) -> FusedKernel:
    optimized, _ = optimize(compiler.parse(text, name))
    (node,) = [n for n in optimized.main.walk() if "Subgraph" in n.attrs]
    return FusedKernel(node.attrs["Subgraph"])


def copy_bandwidth(n_bytes: int = 256 << 20) -> float:
    """Bytes per second of a large numpy copy (read + write)."""
    a = np.ones(n_bytes // 4, np.float32)
    b = np.empty_like(a)
    best = min(_time(lambda: np.copyto(b, a)) for _ in range(5))
    return 2 * a.nbytes / best


def _time(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure(variants: dict[str, Callable[[], Any]], repeats: int, rounds: int = 3) -> dict[str, float]:
    """Median ms of each variant.  Variants run in blocks of consecutive calls, the blocks
    interleaved over ``rounds``: per-call interleaving would pit torch's OpenMP threads,
    which spin for a while after each parallel region, against the next variant's."""
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            fn()  # warm-up of this block: page faults, thread pools waking up
            for _ in range(repeats):
                times[name].append(_time(fn))
            time.sleep(0.2)  # let spinning worker threads go idle before the next variant
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--out", default=str(ROOT / "bench_results" / "fusion.md"))
    args = parser.parse_args()
    repeats = 3 if args.quick else 7
    if torch is not None:
        torch.set_num_threads(2)
    bandwidth = copy_bandwidth()
    ratio_text = (ROOT / "examples" / "ratio_iou.ir").read_text()
    cases = [
        ("ratio_iou", ratio_text, 100_000, 8, ratio_iou_numpy, ratio_iou_torch),
        ("ratio_iou", ratio_text, 800_000, 8, ratio_iou_numpy, ratio_iou_torch),
        ("5-op chain", CHAIN_IR, 16_000_000, 3, chain_numpy, chain_torch),
    ]
    rows = []
    for name, text, n, n_in, numpy_fn, torch_fn in cases:
        rng = np.random.default_rng(0)
        inputs = [rng.random(n, dtype=np.float32) + 0.1 for _ in range(n_in)]
        kernel = group_kernel(text, name)
        numba_kernel = group_kernel(text, name)
        numba_problems = numba_kernel.enable_numba()
        variants: dict[str, Callable[[], Any]] = {
            "numpy": lambda: numpy_fn(*inputs),
            "unfused": lambda: kernel._run_whole(inputs),
            "fused-blocked": lambda: kernel(*inputs),
        }
        if numba_problems:
            pass
        elif n < fusion_numba.THRESHOLD:
            numba_problems = [f"below numba's threshold ({fusion_numba.THRESHOLD} elements): the kernel runs blocked"]
        else:
            variants["fused-numba"] = lambda: numba_kernel(*inputs)
        if torch is not None:
            scripted = torch.jit.script(torch_fn)
            t_inputs = [torch.from_numpy(a) for a in inputs]
            for _ in range(3):  # let the profiling executor specialise and fuse
                scripted(*t_inputs)
            variants["torch.jit"] = lambda: scripted(*t_inputs)
        result = measure(variants, repeats)
        bound = (n_in + 1) * n * 4 / bandwidth * 1e3
        rows.append((f"{name} n={n:.0e}", result, bound, numba_problems))
        assert numba_kernel.stats["numba"] > 0 or numba_problems, "the numba column must run numba"
        if kernel.stats["fused"] == 0:
            numba_problems = [*numba_problems, f"fused-blocked ran unfused: {', '.join(kernel.fallback_reasons)}"]
    columns = ["numpy", "unfused", "fused-blocked", "fused-numba", "torch.jit"]
    lines = [
        f"copy bandwidth: {bandwidth / 1e9:.1f} GB/s; times are medians in ms; (x) is the ratio to torch.jit "
        "(below 1 is faster than torch.jit)",
        "",
        "| case | " + " | ".join(columns) + " | bandwidth bound |",
        "|---" * (len(columns) + 2) + "|",
    ]
    for label, result, bound, problems in rows:
        ref = result.get("torch.jit")
        cells = []
        for c in columns:
            if c not in result:
                cells.append("n/a")
            elif ref:
                cells.append(f"{result[c]:.3f} ({result[c] / ref:.2f}x)")
            else:
                cells.append(f"{result[c]:.3f}")
        numba_vs_bound = f" (numba {result['fused-numba'] / bound:.2f}x of it)" if "fused-numba" in result else ""
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {bound:.3f}{numba_vs_bound} |")
        if problems:
            lines.append(f"|   numba column: {'; '.join(problems)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


if __name__ == "__main__":
    main()
