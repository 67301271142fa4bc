"""Benchmark every way of running the same programs, in one process.

    python tools/bench_runtimes.py [--quick] [--only CASE] [--out bench_results/runtimes]

Columns: hand-written numpy, irvm's interpreter (``vm.Interpreter``), irvm's static
runtime (``vm.StaticRuntime``), and when torch is installed ``torch.jit.script`` and
PyTorch's Static Runtime (``torch._C._jit_to_static_module``).  Rows: ratio_iou (the seed
notebook) at 10, 1e3, 1e5 and 8e5 elements; the LSTM cell (the seed article) at batch
1 / hidden 64 and batch 64 / hidden 256; a 3-layer MLP at batch 1 and 256; a 100-iteration
loop over small tensors.  With torch installed, irvm runs the graph torch.jit.script
prints for the same Python function (what a user would dump); without it, the same
graphs written out below.  Each cell is the time of one call in the best of ``--batches``
(30) batches, interleaved across the columns (medians are kept in the JSON); the ratios
are to hand-written numpy and to torch.jit.  30 batches of ~20 ms rather than 9 of ~67 ms
for the same total time: on the shared 2-core machine a shorter batch is more often left
alone by the other processes, so its minimum is less disturbed.  ``--only CASE`` runs the
row labelled CASE or the rows "CASE ..." (``--only mlp3``), for quick measurements.
Results go to ``OUT.json`` and ``OUT.md``.  A last measurement reports the static
runtime's dispatch cost per node: a chain of 200 int additions, run by the static runtime
and by calling the same bound kernel 200 times from a loop.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# One BLAS thread, as torch gets one: the machine is shared and the comparison is per core.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

try:
    import torch
except ImportError:  # the torch columns stay empty
    torch = None


# ---------------------------------------------------------------------------------------
# the programs, as Python (scripted by torch) and as hand-written numpy


def ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2):
    xi = torch.max(x1, x2)
    yi = torch.max(y1, y2)
    wi = torch.clamp(torch.min(x1 + w1, x2 + w2) - xi, min=0.0)
    hi = torch.clamp(torch.min(y1 + h1, y2 + h2) - yi, min=0.0)
    area_i = wi * hi
    area_u = w1 * h1 + w2 * h2 - wi * hi
    return area_i / torch.clamp(area_u, min=1e-5)


def np_ratio_iou(x1, y1, w1, h1, x2, y2, w2, h2):
    xi = np.maximum(x1, x2)
    yi = np.maximum(y1, y2)
    wi = np.clip(np.minimum(x1 + w1, x2 + w2) - xi, 0.0, None)
    hi = np.clip(np.minimum(y1 + h1, y2 + h2) - yi, 0.0, None)
    area_i = wi * hi
    area_u = w1 * h1 + w2 * h2 - wi * hi
    return area_i / np.clip(area_u, 1e-5, None)


def lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = x.mm(w_ih.t()) + hx.mm(w_hh.t()) + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = gates.chunk(4, 1)
    ingate = torch.sigmoid(ingate)
    forgetgate = torch.sigmoid(forgetgate)
    cellgate = torch.tanh(cellgate)
    outgate = torch.sigmoid(outgate)
    cy = (forgetgate * cx) + (ingate * cellgate)
    hy = outgate * torch.tanh(cy)
    return hy, cy


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def np_lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = x @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
    ingate, forgetgate, cellgate, outgate = np.split(gates, 4, axis=1)
    cy = _sigmoid(forgetgate) * cx + _sigmoid(ingate) * np.tanh(cellgate)
    return _sigmoid(outgate) * np.tanh(cy), cy


def mlp(x, w1, b1, w2, b2, w3, b3):
    h = torch.relu(torch.nn.functional.linear(x, w1, b1))
    h = torch.relu(torch.nn.functional.linear(h, w2, b2))
    return torch.nn.functional.linear(h, w3, b3)


def np_mlp(x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1.T + b1, 0)
    h = np.maximum(h @ w2.T + b2, 0)
    return h @ w3.T + b3


def small_loop(x, y):
    for _ in range(100):
        x = x * 0.5 + y
    return x


def np_small_loop(x, y):
    for _ in range(100):
        x = x * np.float32(0.5) + y
    return x


# The graphs torch.jit.script prints for the functions above (used without torch).
IR = {
    "ratio_iou": """
graph(%x1 : Tensor, %y1 : Tensor, %w1 : Tensor, %h1 : Tensor, %x2 : Tensor, %y2 : Tensor, %w2 : Tensor, %h2 : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : float = prim::Constant[value=0.]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %none : NoneType = prim::Constant()
  %xi : Tensor = aten::max(%x1, %x2)
  %yi : Tensor = aten::max(%y1, %y2)
  %a : Tensor = aten::add(%x1, %w1, %one)
  %b : Tensor = aten::add(%x2, %w2, %one)
  %m : Tensor = aten::min(%a, %b)
  %s : Tensor = aten::sub(%m, %xi, %one)
  %wi : Tensor = aten::clamp(%s, %zero, %none)
  %a2 : Tensor = aten::add(%y1, %h1, %one)
  %b2 : Tensor = aten::add(%y2, %h2, %one)
  %m2 : Tensor = aten::min(%a2, %b2)
  %s2 : Tensor = aten::sub(%m2, %yi, %one)
  %hi : Tensor = aten::clamp(%s2, %zero, %none)
  %ai : Tensor = aten::mul(%wi, %hi)
  %p1 : Tensor = aten::mul(%w1, %h1)
  %p2 : Tensor = aten::mul(%w2, %h2)
  %q : Tensor = aten::add(%p1, %p2, %one)
  %ai2 : Tensor = aten::mul(%wi, %hi)
  %au : Tensor = aten::sub(%q, %ai2, %one)
  %c : Tensor = aten::clamp(%au, %eps, %none)
  %r : Tensor = aten::div(%ai, %c)
  return (%r)
""",
    "lstm_cell": """
graph(%x : Tensor, %hx : Tensor, %cx : Tensor, %w_ih : Tensor, %w_hh : Tensor, %b_ih : Tensor, %b_hh : Tensor):
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %t1 : Tensor = aten::t(%w_ih)
  %g1 : Tensor = aten::mm(%x, %t1)
  %t2 : Tensor = aten::t(%w_hh)
  %g2 : Tensor = aten::mm(%hx, %t2)
  %g3 : Tensor = aten::add(%g1, %g2, %one)
  %g4 : Tensor = aten::add(%g3, %b_ih, %one)
  %gates : Tensor = aten::add(%g4, %b_hh, %one)
  %chunks : Tensor[] = aten::chunk(%gates, %four, %one)
  %i0 : Tensor, %f0 : Tensor, %c0 : Tensor, %o0 : Tensor = prim::ListUnpack(%chunks)
  %i : Tensor = aten::sigmoid(%i0)
  %f : Tensor = aten::sigmoid(%f0)
  %c : Tensor = aten::tanh(%c0)
  %o : Tensor = aten::sigmoid(%o0)
  %fc : Tensor = aten::mul(%f, %cx)
  %ic : Tensor = aten::mul(%i, %c)
  %cy : Tensor = aten::add(%fc, %ic, %one)
  %tc : Tensor = aten::tanh(%cy)
  %hy : Tensor = aten::mul(%o, %tc)
  %out : (Tensor, Tensor) = prim::TupleConstruct(%hy, %cy)
  return (%out)
""",
    "mlp": """
graph(%x : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor, %b2 : Tensor, %w3 : Tensor, %b3 : Tensor):
  %l1 : Tensor = aten::linear(%x, %w1, %b1)
  %h1 : Tensor = aten::relu(%l1)
  %l2 : Tensor = aten::linear(%h1, %w2, %b2)
  %h2 : Tensor = aten::relu(%l2)
  %y : Tensor = aten::linear(%h2, %w3, %b3)
  return (%y)
""",
    "small_loop": """
graph(%x.1 : Tensor, %y.1 : Tensor):
  %true : bool = prim::Constant[value=1]()
  %n : int = prim::Constant[value=100]()
  %half : float = prim::Constant[value=0.5]()
  %one : int = prim::Constant[value=1]()
  %x : Tensor = prim::Loop(%n, %true, %x.1)
    block0(%i : int, %x.5 : Tensor):
      %a : Tensor = aten::mul(%x.5, %half)
      %x.7 : Tensor = aten::add(%a, %y.1, %one)
      -> (%true, %x.7)
  return (%x)
""",
}

PROGRAMS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "ratio_iou": (ratio_iou, np_ratio_iou),
    "lstm_cell": (lstm_cell, np_lstm_cell),
    "mlp": (mlp, np_mlp),
    "small_loop": (small_loop, np_small_loop),
}


def cases() -> list[tuple[str, str, list[np.ndarray]]]:
    """(row label, program, inputs)."""
    rng = np.random.default_rng(0)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32) * 0.1

    rows = []
    for n in (10, 1_000, 100_000, 800_000):
        rows.append(
            (f"ratio_iou n={n:g}", "ratio_iou", [np.exp(f32(n)) for _ in range(8)])
        )
    for batch, hidden in ((1, 64), (64, 256)):
        weights = [
            f32(4 * hidden, hidden),
            f32(4 * hidden, hidden),
            f32(4 * hidden),
            f32(4 * hidden),
        ]
        state = [f32(batch, hidden) for _ in range(3)]
        rows.append((f"lstm_cell b={batch} h={hidden}", "lstm_cell", state + weights))
    for batch in (1, 256):
        layers = [
            f32(512, 256),
            f32(512),
            f32(512, 512),
            f32(512),
            f32(10, 512),
            f32(10),
        ]
        rows.append((f"mlp3 b={batch}", "mlp", [f32(batch, 256), *layers]))
    rows.append(("loop100 n=16", "small_loop", [f32(16), f32(16)]))
    return rows


# ---------------------------------------------------------------------------------------
# timing


def median_calls(
    fns: dict[str, Callable[[], Any]], budget: float, batches: int = 30
) -> dict[str, tuple[float, float]]:
    """(minimum, median) seconds per call of each function over ``batches`` batches.

    Batches are interleaved (one batch of each function in turn) so that a load spike on
    the shared machine hits every column alike; a batch lasts about budget / batches.  The
    minimum is the figure a loaded machine disturbs least, and the one the ratios use."""
    numbers = {}
    for name, fn in fns.items():
        fn()
        t0 = time.perf_counter()
        fn()
        numbers[name] = max(
            1, int(budget / batches / max(time.perf_counter() - t0, 1e-7))
        )
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(batches):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(numbers[name]):
                fn()
            samples[name].append((time.perf_counter() - t0) / numbers[name])
    return {name: (min(s), statistics.median(s)) for name, s in samples.items()}


def runners(program: str) -> dict[str, Callable[..., Any]]:
    import compiler
    import vm

    scripted = torch.jit.script(PROGRAMS[program][0]) if torch is not None else None
    text = str(scripted.graph) if scripted is not None else IR[program]
    compiled = compiler.compile_source(text, f"<{program}>")
    out: dict[str, Callable[..., Any]] = {
        "numpy": PROGRAMS[program][1],
        "interpreter": vm.Interpreter(compiled),
        "static": vm.StaticRuntime(compiled),
    }
    if scripted is not None:
        out["torch.jit"] = scripted
        static_module = torch._C._jit_to_static_module(scripted.graph)
        out["torch static"] = lambda *args: static_module(*args)
    return out


def dispatch_overhead(budget: float) -> dict[str, float]:
    """Static-runtime cost per node beyond its kernel, on 200 chained int additions."""
    import compiler
    import vm
    from vm.ops import registry

    n = 200
    lines = ["graph(%x0 : int):", "  %one : int = prim::Constant[value=1]()"]
    lines += [f"  %x{i + 1} : int = aten::add(%x{i}, %one)" for i in range(n)]
    lines.append(f"  return (%x{n})")
    module = compiler.parse("\n".join(lines))
    static = vm.StaticRuntime(module)  # unoptimized: constant propagation would fold it
    kernel = registry.bind(
        __import__("compiler.resolve", fromlist=["resolve"]).resolve(
            module.main.nodes[1]
        )
    )

    def direct() -> int:
        x = 0
        for _ in range(n):
            x = kernel(x, 1)
        return x

    measured = median_calls({"static": lambda: static(0), "direct": direct}, budget)
    t_static, t_direct = measured["static"][0], measured["direct"][0]
    return {"static_us_per_node": t_static / n * 1e6, "kernel_loop_us_per_node": t_direct / n * 1e6,
            "overhead_us_per_node": (t_static - t_direct) / n * 1e6}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="short timing budget (a smoke run)"
    )
    parser.add_argument(
        "--out", default=None, help="results file stem (default bench_results/runtimes)"
    )
    parser.add_argument(
        "--batches",
        type=int,
        default=30,
        help="interleaved timing batches per row (the minimum over them is reported)",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="CASE",
        help="run only the row CASE, or the rows 'CASE ...' (repeatable; e.g. 'mlp3 b=256', 'mlp3');"
        " the results file is then not written unless --out is given",
    )
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else ROOT / "bench_results" / "runtimes"
    budget = 0.05 if args.quick else 0.6
    if torch is not None:
        torch.set_num_threads(1)
    results = []
    built: dict[str, dict[str, Callable[..., Any]]] = {}
    for label, program, inputs in cases():
        if args.only and not any(_selects(case, label) for case in args.only):
            continue
        row = built.setdefault(program, runners(program))
        tensors = [torch.from_numpy(a) for a in inputs] if torch is not None else None
        calls = {}
        for column, fn in row.items():
            call_args = tensors if column.startswith("torch") else inputs
            calls[column] = lambda fn=fn, a=call_args: fn(*a)
        measured = median_calls(calls, budget, args.batches)
        times = {column: m[0] for column, m in measured.items()}
        medians = {column: m[1] for column, m in measured.items()}
        results.append({"case": label, "seconds": times, "median_seconds": medians})
        print(format_row(label, times), flush=True)
    if args.only:  # a partial run: rows only, and a results file only when asked for
        if args.out:
            write_results(out, results, None, args.batches)
        return 0
    overhead = dispatch_overhead(budget)
    print(
        f"static runtime dispatch: {overhead['overhead_us_per_node']:.3f} us per node beyond the kernel"
    )
    write_results(out, results, overhead, args.batches)
    return 0


def _selects(case: str, label: str) -> bool:
    """``--only CASE`` picks the row named CASE and the rows CASE + " ..." ("mlp3": both MLP
    rows; "ratio_iou n=10" only that row, not n=1000)."""
    return label == case or label.startswith(case + " ")


COLUMNS = ["numpy", "interpreter", "static", "torch.jit", "torch static"]


def format_row(label: str, times: dict[str, float]) -> str:
    cells = [f"{label:<24}"]
    for c in COLUMNS:
        if c in times:
            ratio = times[c] / times["numpy"]
            cells.append(f"{c} {times[c] * 1e6:9.1f}us ({ratio:4.2f}x)")
    return "  ".join(cells)


def write_results(
    out: Path,
    results: list[dict[str, Any]],
    overhead: dict[str, float] | None,
    batches: int = 30,
) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "numpy": np.__version__,
        "torch": getattr(torch, "__version__", None),
        "python": sys.version.split()[0],
        "batches": batches,
    }
    out.with_suffix(".json").write_text(
        json.dumps({"meta": meta, "results": results, "dispatch": overhead}, indent=1)
    )
    cols = [c for c in COLUMNS if any(c in r["seconds"] for r in results)]
    lines = [
        "# irvm runtimes benchmark",
        "",
        f"numpy {meta['numpy']}, torch {meta['torch']} (1 thread, 1 BLAS thread), Python {meta['python']},"
        f" on a shared 2-core machine. Time per call in the best of {batches} interleaved batches (us; the JSON"
        " also has medians); in parentheses the ratio to hand-written numpy, then to torch.jit.",
        "",
        "| case | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for r in results:
        s = r["seconds"]
        cells = []
        for c in cols:
            text = f"{s[c] * 1e6:.1f} ({s[c] / s['numpy']:.2f}x"
            text += f", {s[c] / s['torch.jit']:.2f}x jit)" if "torch.jit" in s else ")"
            cells.append(text)
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " |")
    if overhead is not None:
        lines += [
            "",
            (
                f"Static runtime dispatch overhead: {overhead['overhead_us_per_node']:.3f} us per node"
                f" (200 chained int adds: {overhead['static_us_per_node']:.3f} us/node vs"
                f" {overhead['kernel_loop_us_per_node']:.3f} us/node calling the kernel from a loop)."
            ),
        ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
