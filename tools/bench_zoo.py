"""Benchmark the model zoo on every engine, in one process, one thread each.

    python3 tools/bench_zoo.py [--only resnet18 --only 'mobilenet*'] [--all] [--rounds 7]
                               [--out bench_results/zoo.md] [--json bench_results/zoo.json]

For each model of ``tools/zoo_models.ZOO`` (by default ``DEFAULT``, a dozen models of
every kind; ``--all``: the whole zoo but the heavy ones), built with its seeded random
weights at its example input size, batch 1, the columns are the median milliseconds per
call of:

- ``irvm static``: ``vm.StaticRuntime`` on the scripted graph (the traced one when torch
  cannot script the model or irvm cannot compile the scripted graph), weights bound, its
  load-time folds on;
- ``static numpy kernels``: the same runtime with the compiled kernel tier switched off
  (``vm.ops.compiled.use("numpy")`` around each call): the numpy kernels alone;
- ``irvm interp``: ``vm.Interpreter`` on the same program;
- ``torch.jit``: the scripted (or traced) module;
- ``torch eager``: the ``nn.Module`` itself, under ``torch.no_grad()``;
- ``ORT``: ONNX Runtime's CPU provider on the model exported by ``torch.onnx.export``
  (the TorchScript-based exporter, ``dynamo=False``; torch 2.13's dynamo exporter is
  tried when that one fails).

Rounds are interleaved (one call of each engine per round, after two warm-up calls;
``--rounds`` rounds, more for fast models: as many as fill about half a second per engine,
up to 200) so load from other processes falls on every column alike; the objects alive
before the rounds are frozen out of the garbage collector (``gc.freeze``), whose full scans
of a process holding torch and transformers otherwise land as 10 ms pauses on whichever
call triggers them.  Then the ratios
irvm static / torch.jit and irvm static / ORT (and their geometric means), and for irvm
the operators that take the most time (``vm.static.profile``: per-node timing of the static
runtime, share of the summed node time).  Threads: numpy's BLAS is limited to one thread
through ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` (set before numpy
is imported; ``--threads N`` raises every engine to N), torch through
``torch.set_num_threads``, ORT through ``intra_op_num_threads``; the report prints what
each engine says it used.  A model an engine cannot run gets the error in place of its
time.

``--quantized`` runs the quantized section instead (``tools/bench_quantized.py``: each
quantized model against torch running it and against irvm running the float model).
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import io
import json
import math
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _set_threads(argv: list[str]) -> int:
    n = 1
    if "--threads" in argv:
        n = int(argv[argv.index("--threads") + 1])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)
    return n


THREADS = _set_threads(sys.argv)  # before numpy is first imported

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

DEFAULT = (
    "resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "shufflenet_v2_x0_5",
    "densenet121", "convnext_tiny", "vit_b_16", "swin_t", "bert", "gpt2",
)
ROUND_SECONDS, MAX_ROUNDS = 0.5, 200  # small models get more rounds: ~0.5 s per engine
ENGINES = ("irvm static", "static numpy kernels", "irvm interp", "torch.jit", "torch eager", "ORT")


def export_case(model: Any, inputs: tuple[Any, ...], name: str) -> tuple[Any, Any, Any]:
    """(irvm program, weights, compiled torch module): scripted, or traced when torch
    cannot script the model."""
    import export_torch

    import compiler

    last: Exception | None = None
    for trace in (False, True):
        try:
            exp = export_torch.export(model, name, inputs, trace=trace)
        except Exception as err:  # noqa: BLE001  (torch refuses: try the other mode)
            last = err
            continue
        # compiled for the weights' settings, as `irvm run x.ir --weights w.npz` and `irc compile
        # --weights` do (the static runtime would otherwise fold them when it is built)
        program = compiler.compile_source(exp.ir, f"{name}.ir", weights=exp.weights)
        compiled = export_torch.compile_target(model, export_torch._clone_args(inputs), trace=trace, freeze=False)
        return program, exp.weights, compiled
    assert last is not None
    raise last


def onnx_session(model: Any, inputs: tuple[Any, ...], threads: int) -> Callable[[], Any]:
    """A call running ``model`` exported to ONNX in ONNX Runtime's CPU provider."""
    import onnxruntime as ort
    import torch

    tensors = tuple(x for x in inputs if isinstance(x, torch.Tensor))
    data = None
    errors = []
    for dynamo in (False, True):
        buffer = io.BytesIO()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(model, tensors, buffer, dynamo=dynamo)  # pyright: ignore[reportArgumentType]
            data = buffer.getvalue()
            break
        except Exception as err:  # noqa: BLE001
            errors.append(f"{'dynamo' if dynamo else 'torchscript'} exporter: {type(err).__name__}")
    if data is None:
        raise RuntimeError("; ".join(errors))
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    feed = {i.name: t.numpy() for i, t in zip(session.get_inputs(), tensors)}
    return lambda: session.run(None, feed)


def engines(name: str, threads: int) -> tuple[dict[str, Callable[[], Any] | str], Any, list[Any], Any]:
    """The engines' calls for model ``name`` (or an error string each), and what profiling needs."""
    from export_torch import to_numpy
    from zoo_models import ZOO

    from vm import StaticRuntime
    from vm.interpreter.machine import Interpreter

    model, inputs = ZOO[name].build()
    calls: dict[str, Callable[[], Any] | str] = {}
    program = weights = None
    args: list[Any] = []
    try:
        program, weights, compiled = export_case(model, inputs, name)
        args = [to_numpy(x) for x in inputs]
        static = StaticRuntime(program, weights)
        interp = Interpreter(program, weights)
        calls["irvm static"] = lambda: static(*args)
        calls["static numpy kernels"] = _numpy_kernels(lambda: static(*args))
        calls["irvm interp"] = lambda: interp(*args)
        calls["torch.jit"] = _no_grad(lambda: compiled(*inputs))
    except Exception as err:  # noqa: BLE001
        for engine in ("irvm static", "static numpy kernels", "irvm interp", "torch.jit"):
            calls.setdefault(engine, f"{type(err).__name__}: {str(err).splitlines()[0][:120]}")
    calls["torch eager"] = _no_grad(lambda: model(*inputs))
    try:
        calls["ORT"] = onnx_session(model, inputs, threads)
    except Exception as err:  # noqa: BLE001
        calls["ORT"] = f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
    return calls, program, args, weights


def _numpy_kernels(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with the compiled kernel tier off (``vm.ops.compiled.use``), the numpy kernels only."""
    from vm.ops import compiled

    def run() -> Any:
        before = compiled.mode()
        compiled.use("numpy")
        try:
            return fn()
        finally:
            compiled.use(before)

    return run


def _no_grad(fn: Callable[[], Any]) -> Callable[[], Any]:
    import torch

    def run() -> Any:
        with torch.no_grad():
            return fn()

    return run


def measure(calls: dict[str, Callable[[], Any] | str], rounds: int, stat: str = "median") -> dict[str, float | str]:
    """Median (or ``stat="min"``: best) ms per call of each callable engine, interleaved rounds;
    errors pass through.  The best of the rounds is the steadier figure on a machine other jobs
    load (each call is then mostly someone else's time slice)."""
    live = {}
    slowest = 0.0
    result: dict[str, float | str] = {}
    gc.collect()
    gc.freeze()  # the process holds torch, transformers and every engine: keep them out of GC scans
    for engine, fn in calls.items():
        if isinstance(fn, str):
            result[engine] = fn
            continue
        try:
            fn()
            start = time.perf_counter()
            fn()
            slowest = max(slowest, time.perf_counter() - start)
            live[engine] = fn
        except Exception as err:  # noqa: BLE001
            result[engine] = f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
    rounds = max(rounds, min(MAX_ROUNDS, int(ROUND_SECONDS / max(slowest, 1e-9))))
    samples: dict[str, list[float]] = {e: [] for e in live}
    for _ in range(rounds):
        for engine, fn in live.items():
            start = time.perf_counter()
            fn()
            samples[engine].append(time.perf_counter() - start)
    for engine, times in samples.items():
        result[engine] = (min(times) if stat == "min" else statistics.median(times)) * 1e3
    return result


def operator_shares(program: Any, args: list[Any], weights: Any, top: int = 4) -> list[tuple[str, float]]:
    """irvm static's most expensive operators: (kind, share of the summed node time)."""
    from vm.static.profile import profile

    report = profile(program, args, weights, runs=3)
    return [(k.kind, k.share) for k in report.per_kind[:top]]


def thread_report(threads: int) -> dict[str, str]:
    """What each engine says it runs on."""
    import torch

    try:
        import threadpoolctl  # type: ignore[import-not-found]

        blas = ", ".join(f"{p['internal_api']} {p['num_threads']}" for p in threadpoolctl.threadpool_info())
    except ImportError:
        blas = f"OPENBLAS/OMP/MKL_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}"
    import vm

    fused = f"fused and compiled kernels: vm.get_num_threads() = {vm.get_num_threads()}"
    return {
        "irvm static": f"1 Python thread; numpy BLAS: {blas}; {fused}",
        "static numpy kernels": f"1 Python thread; numpy BLAS: {blas}; {fused}",
        "irvm interp": f"1 Python thread; numpy BLAS: {blas}; {fused}",
        "torch.jit": f"torch.get_num_threads() = {torch.get_num_threads()}",
        "torch eager": f"torch.get_num_threads() = {torch.get_num_threads()}",
        "ORT": f"intra_op_num_threads = {threads}, inter_op_num_threads = 1",
    }


def _cell(value: float | str | None) -> str:
    if value is None:
        return ""
    return f"{value:.2f}" if isinstance(value, float) else "error"


def _ratio(a: Any, b: Any) -> float | None:
    return a / b if isinstance(a, float) and isinstance(b, float) and b > 0 else None


def table(rows: list[dict[str, Any]], threads: dict[str, str], command: str) -> str:
    """The markdown report: times, ratios, geometric means, operator shares, threads, errors."""
    head = "| model | " + " | ".join(f"{e} ms" for e in ENGINES) + " | static / jit | static / ORT | irvm's top operators |"
    lines = [f"`{command}`", "", head, "|---|" + "---:|" * (len(ENGINES) + 2) + "---|"]
    jit_ratios, ort_ratios, errors = [], [], []
    for row in rows:
        t = row["times"]
        rj, ro = _ratio(t.get("irvm static"), t.get("torch.jit")), _ratio(t.get("irvm static"), t.get("ORT"))
        jit_ratios += [rj] if rj else []
        ort_ratios += [ro] if ro else []
        ops = ", ".join(f"{k.split('::')[-1]} {s:.0%}" for k, s in row.get("ops", []))
        cells = [_cell(t.get(e)) for e in ENGINES]
        lines.append(f"| {row['model']} | " + " | ".join(cells)
                     + f" | {_cell(rj)} | {_cell(ro)} | {ops} |")
        errors += [f"- {row['model']} / {e}: {v}" for e, v in t.items() if isinstance(v, str)]
    def gm(xs: list[float]) -> float | None:
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None

    lines.append(f"| geometric mean | {' | '.join('' for _ in ENGINES)} | {_cell(gm(jit_ratios))} | {_cell(gm(ort_ratios))} | |")
    lines += ["", "Threads:", *(f"- {e}: {d}" for e, d in threads.items())]
    if errors:
        lines += ["", "Errors:", *errors]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--quantized" in argv:  # the quantized section: tools/bench_quantized.py
        import bench_quantized

        return bench_quantized.main([a for a in argv if a != "--quantized"])
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="model name or glob (repeatable)")
    parser.add_argument("--all", action="store_true", help="every zoo model but the heavy ones")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-profile", action="store_true", help="skip irvm's operator shares")
    parser.add_argument("--stat", choices=["median", "min"], default="median",
                        help="per engine: the median of the rounds (default) or the best (on a loaded machine)")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown table here")
    parser.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    args = parser.parse_args(argv)

    import torch
    from zoo_models import ZOO

    import vm

    torch.set_num_threads(args.threads)
    vm.set_num_threads(args.threads)  # irvm's BLAS, fused and compiled kernels: one thread in the headline
    names = [n for n, m in ZOO.items() if not m.heavy] if args.all else list(DEFAULT)
    if args.only:
        names = [n for n in ZOO if any(fnmatch.fnmatch(n, p) for p in args.only)]
    rows = []
    for name in names:
        if name not in ZOO:
            print(f"{name}: not in the zoo", file=sys.stderr)
            continue
        calls, program, inputs, weights = engines(name, args.threads)
        times = measure(calls, args.rounds, args.stat)
        row: dict[str, Any] = {"model": name, "times": times}
        if not args.no_profile and program is not None and isinstance(times.get("irvm static"), float):
            row["ops"] = operator_shares(program, inputs, weights)
        rows.append(row)
        print(f"{name}: " + ", ".join(f"{e} {_cell(times.get(e))}" for e in ENGINES), file=sys.stderr, flush=True)
    command = "python3 tools/bench_zoo.py " + " ".join(argv if argv is not None else sys.argv[1:])
    report = table(rows, thread_report(args.threads), command.strip())
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
