"""Benchmark every way of running the same programs, in one process.

    python tools/bench_runtimes.py [--quick] [--only CASE] [--out bench_results/runtimes]

Columns: hand-written numpy, irvm's interpreter (``vm.Interpreter``), irvm's static
runtime (``vm.StaticRuntime``), and when torch is installed ``torch.jit.script``,
PyTorch's Static Runtime (``torch._C._jit_to_static_module``) and ONNX Runtime (the CPU
provider, on the function exported by ``torch.onnx.export``).  Rows: ratio_iou (the seed
notebook) at 10, 1e3, 1e5 and 8e5 elements; the LSTM cell (the seed article) at batch
1 / hidden 64 and batch 64 / hidden 256; a 3-layer MLP at batch 1 and 256; a 100-iteration
loop over small tensors; the 2-conv CNN of ``examples/cnn.ir`` (conv 1->8, conv 8->16,
28x28, max-pool, linear) at batch 1 and 32, weights as arguments; and with torch, the
zoo's BERT-tiny (hidden 64, 2 layers, sequence 16: ``tools/zoo_models.py``'s ``bert``,
weights bound).  The peer rows of issue #16 are ``--only peer``: the CNN at batch 1 and
32, the MLP at batch 256, ratio_iou at 1e5, and BERT-tiny.  With torch installed, irvm
runs the graph torch.jit.script prints for the same Python function (what a user would
dump); without it, the same graphs written out below (and no CNN or BERT rows).  Each cell
is the time of one call in the best of ``--batches`` (30) batches, interleaved across the
columns (medians are kept in the JSON); the ratios are to torch.jit (or, without torch,
to hand-written numpy).  Threads: one everywhere by default (numpy's BLAS through
``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, set before numpy is
imported; irvm's fused kernels through ``vm.fusion.set_num_threads``; torch through
``torch.set_num_threads``; ORT through ``intra_op_num_threads``);
``--threads N`` gives every engine N, and the report says what each column used.  30 batches of ~20 ms rather than 9 of ~67 ms
for the same total time: on the shared 2-core machine a shorter batch is more often left
alone by the other processes, so its minimum is less disturbed.  ``--only CASE`` runs the
row labelled CASE or the rows "CASE ..." (``--only mlp3``), for quick measurements.
Results go to ``OUT.json`` and ``OUT.md``.  A last measurement reports the static
runtime's dispatch cost per node: a chain of 200 int additions, run by the static runtime
and by calling the same bound kernel 200 times from a loop.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _threads_from(argv: list[str]) -> int:
    """``--threads N`` from the command line, read before numpy is imported (its BLAS reads
    the environment once); one thread by default: the headline comparison is per core."""
    for i, arg in enumerate(argv):
        if arg == "--threads" and i + 1 < len(argv):
            return int(argv[i + 1])
        if arg.startswith("--threads="):
            return int(arg.split("=", 1)[1])
    return 1


THREADS = _threads_from(sys.argv)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

try:
    import torch
except ImportError:  # the torch columns stay empty
    torch = None

# ONNX Runtime's column needs onnxruntime, and onnx + onnxscript for torch's exporter; it is
# left empty, and the threads report says why, where they are not installed
ORT = torch is not None and all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx", "onnxscript"))


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


def cnn(x, w1, b1, w2, b2, w3, b3):
    # aten's own functions: functional.max_pool2d would be a call torch's Static Runtime refuses
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, w1, b1, padding=1)), 2)
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, w2, b2, padding=1)), 2)
    return torch.nn.functional.linear(torch.flatten(x, 1), w3, b3)


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
TORCH_ONLY = {"cnn": cnn}  # rows with no hand-written numpy and no graph written out here
ZOO_ROWS = {"bert-tiny s=16": "bert"}  # rows running a zoo model, weights bound
PEER = ("cnn2 b=1", "cnn2 b=32", "mlp3 b=256", "ratio_iou n=100000", "bert-tiny s=16")


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
    if torch is not None:
        cnn_weights = [f32(8, 1, 3, 3), f32(8), f32(16, 8, 3, 3), f32(16), f32(10, 16 * 7 * 7), f32(10)]
        for batch in (1, 32):
            rows.append((f"cnn2 b={batch}", "cnn", [f32(batch, 1, 28, 28), *cnn_weights]))
        rows.extend((label, f"zoo:{name}", []) for label, name in ZOO_ROWS.items())
    return rows


# ---------------------------------------------------------------------------------------
# timing


def median_calls(
    fns: dict[str, Callable[[], Any]], budget: float, batches: int = 30
) -> dict[str, tuple[float, float]]:
    """(minimum, median) seconds per call of each function over ``batches`` batches.

    Batches are interleaved (one batch of each function in turn) so that a load spike on
    the shared machine hits every column alike; a batch lasts about budget / batches.  The
    minimum is the figure a loaded machine disturbs least, and the one the ratios use.  The
    objects alive before the timing are frozen out of the garbage collector (as in
    ``bench_zoo.py``): a process holding torch and transformers otherwise pays full
    collections of them on whichever call triggers one."""
    gc.collect()
    gc.freeze()
    try:
        numbers = {}
        for name, fn in fns.items():
            fn()
            t0 = time.perf_counter()
            fn()
            numbers[name] = max(1, int(budget / batches / max(time.perf_counter() - t0, 1e-7)))
        samples: dict[str, list[float]] = {name: [] for name in fns}
        for _ in range(batches):
            for name, fn in fns.items():
                t0 = time.perf_counter()
                for _ in range(numbers[name]):
                    fn()
                samples[name].append((time.perf_counter() - t0) / numbers[name])
    finally:
        gc.unfreeze()  # the caller's objects are collectable again (the tests import this module)
    return {name: (min(s), statistics.median(s)) for name, s in samples.items()}


def runners(program: str) -> dict[str, Callable[..., Any]]:
    """The columns' callables for ``program`` but ORT's, each taking a row's numpy inputs."""
    import compiler
    import vm

    if program.startswith("zoo:"):
        return zoo_runners(program.removeprefix("zoo:"))
    python = TORCH_ONLY.get(program) or PROGRAMS[program][0]
    scripted = torch.jit.script(python) if torch is not None else None
    text = str(scripted.graph) if scripted is not None else IR[program]
    compiled = compiler.compile_source(text, f"<{program}>")
    out: dict[str, Callable[..., Any]] = {}
    if program in PROGRAMS:
        out["numpy"] = PROGRAMS[program][1]
    out["interpreter"] = vm.Interpreter(compiled)
    out["static"] = vm.StaticRuntime(compiled)
    if scripted is not None:
        out["torch.jit"] = _on_tensors(scripted)
        static_module = torch._C._jit_to_static_module(scripted.graph)
        out["torch static"] = _on_tensors(lambda *args: static_module(*args))
    return out


def _on_tensors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` called on torch tensors sharing the numpy inputs' memory, under no_grad."""
    cache: dict[int, list[Any]] = {}

    def call(*arrays: np.ndarray) -> Any:
        key = id(arrays[0]) if arrays else 0
        if key not in cache:
            cache.clear()
            cache[key] = [torch.from_numpy(a) for a in arrays]
        with torch.no_grad():
            return fn(*cache[key])

    return call


def onnx_runner(python: Callable[..., Any], example: list[np.ndarray]) -> Callable[..., Any]:
    """ONNX Runtime's CPU provider on ``python`` exported by torch.onnx.export for the
    shapes of ``example`` (a call runs on those inputs)."""
    import bench_zoo

    class Wrapper(torch.nn.Module):
        def forward(self, *args: Any) -> Any:
            return python(*args)

    session = bench_zoo.onnx_session(Wrapper(), tuple(torch.from_numpy(a) for a in example), THREADS)
    return lambda *arrays: session()


def zoo_runners(name: str) -> dict[str, Callable[..., Any]]:
    """The columns for a zoo model at its example inputs (the row's inputs are ignored)."""
    import bench_zoo
    from export_torch import to_numpy
    from zoo_models import ZOO

    import vm

    model, inputs = ZOO[name].build()
    program, weights, compiled = bench_zoo.export_case(model, inputs, name)
    args = [to_numpy(x) for x in inputs]
    static, interp = vm.StaticRuntime(program, weights), vm.Interpreter(program, weights)
    jit, eager = bench_zoo._no_grad(lambda: compiled(*inputs)), bench_zoo._no_grad(lambda: model(*inputs))
    calls = {"interpreter": lambda: interp(*args), "static": lambda: static(*args), "torch.jit": jit, "torch eager": eager}
    if ORT:
        calls["ORT"] = bench_zoo.onnx_session(model, inputs, THREADS)
    return calls


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
        __import__("vm.ir.resolve", fromlist=["resolve"]).resolve(
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
        help="run only the row CASE, or the rows 'CASE ...' (repeatable; e.g. 'mlp3 b=256', 'mlp3';"
        " 'peer': issue #16's peer rows); the results file is then not written unless --out is given",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads for every engine (numpy's BLAS, torch, ORT; default 1)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out) if args.out else ROOT / "bench_results" / "runtimes"
    budget = 0.05 if args.quick else 0.6
    if torch is not None:
        torch.set_num_threads(THREADS)
    import vm
    import vm.fusion

    vm.set_num_threads(THREADS)  # BLAS, fused and compiled kernels' threads, as many as every engine gets
    results = []
    built: dict[str, dict[str, Callable[..., Any]]] = {}
    only = [c for case in args.only or [] for c in (PEER if case == "peer" else (case,))]
    for label, program, inputs in cases():
        if only and not any(_selects(case, label) for case in only):
            continue
        if program not in built:
            built[program] = runners(program)
        calls = {column: (lambda fn=fn, a=inputs: fn(*a)) for column, fn in built[program].items()}
        if ORT and not program.startswith("zoo:"):
            calls["ORT"] = onnx_runner(TORCH_ONLY.get(program) or PROGRAMS[program][0], inputs)
        measured = median_calls(calls, budget, args.batches)
        times = {column: m[0] for column, m in measured.items()}
        medians = {column: m[1] for column, m in measured.items()}
        results.append({"case": label, "seconds": times, "median_seconds": medians})
        print(format_row(label, times), flush=True)
    print(thread_text(), file=sys.stderr)
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


COLUMNS = ["numpy", "interpreter", "static", "torch.jit", "torch static", "torch eager", "ORT"]


def _base(times: dict[str, float]) -> str:
    """The column the ratios are to: torch.jit, or hand-written numpy without torch."""
    return "torch.jit" if "torch.jit" in times else "numpy"


def format_row(label: str, times: dict[str, float]) -> str:
    base = _base(times)
    cells = [f"{label:<20}"]
    for c in COLUMNS:
        if c in times:
            cells.append(f"{c} {times[c] * 1e6:8.1f}us ({times[c] / times[base]:4.2f}x)")
    return "  ".join(cells)


def thread_lines() -> list[str]:
    """What each column runs on, as the engines report it."""
    try:
        import threadpoolctl  # type: ignore[import-not-found]

        blas = ", ".join(f"{p['internal_api']} {p['num_threads']}" for p in threadpoolctl.threadpool_info())
    except ImportError:
        blas = f"OPENBLAS/OMP/MKL_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    import vm.fusion

    lines = [
        f"- numpy, interpreter, static: 1 Python thread; numpy's BLAS: {blas}; irvm's fused kernels:"
        f" up to {vm.fusion.get_num_threads()} thread(s) (vm.fusion.set_num_threads)"
    ]
    if torch is not None:
        lines.append(f"- torch.jit, torch static, torch eager: torch.get_num_threads() = {torch.get_num_threads()}")
        lines.append(f"- ORT: intra_op_num_threads = {THREADS}, inter_op_num_threads = 1" if ORT else
                     "- ORT: not installed (pip install onnxruntime onnx onnxscript), its column is empty")
    return lines


def thread_text() -> str:
    return "Threads:\n" + "\n".join(thread_lines())


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
        "threads": THREADS,
    }
    out.with_suffix(".json").write_text(
        json.dumps({"meta": meta, "results": results, "dispatch": overhead}, indent=1)
    )
    cols = [c for c in COLUMNS if any(c in r["seconds"] for r in results)]
    lines = [
        "# irvm runtimes benchmark",
        "",
        f"numpy {meta['numpy']}, torch {meta['torch']}, Python {meta['python']}, {THREADS} thread(s) per"
        f" engine, on a shared 2-core machine. Time per call in the best of {batches} interleaved batches (us;"
        " the JSON also has medians); in parentheses the ratio to torch.jit (to hand-written numpy without torch).",
        "",
        "| case | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    for r in results:
        s = r["seconds"]
        base = _base(s)
        cells = [f"{s[c] * 1e6:.1f} ({s[c] / s[base]:.2f}x)" if c in s else "" for c in cols]
        lines.append(f"| {r['case']} | " + " | ".join(cells) + " |")
    lines += ["", "Threads:", *thread_lines()]
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
