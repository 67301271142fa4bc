"""First call against steady call, on both backends, over models of the zoo.

    python tools/bench_startup.py --zoo [NAME ...] [--runs 7] [--repeat 1] [--warm]
    python tools/bench_zoo_start.py [NAME ...] [--runs 7] [--repeat 1] [--warm | --again]

A NAME is a zoo model (``resnet18``: its scripted case, else its traced one) or a case
(``resnet18.trace``), read from the zoo cache (``$IRVM_ZOO_CACHE``, else
``~/.cache/irvm/zoo``) where ``tools/gen_zoo.py`` wrote it (``python tools/gen_zoo.py
NAME`` makes a missing one; it needs torch).  Without a NAME, ``SAMPLE``: ~17 models of
every family.

Each (case, backend) is measured in a process of its own, so that no backend warms the
other's kernels: the program is compiled (not timed), the runner built (``construct``),
called once (``first``), then ``--runs`` more times (``steady``: the median).  The
garbage collector is left as a user has it.  Both the wall clock and the process CPU
time are given; on a shared machine CPU time is the steadier of the two, and the ratio
column (the bar of issue #15: at most 1.5x) is the CPU one.  ``--repeat K`` measures each
pair K times, in K processes, and reports the median of each column.

A fresh process pays, on its first call of any model, what no runtime can decide ahead:
the first execution of every kernel and numpy path (CPython specializes bytecode as it
runs, numpy resolves and caches ufunc loops, OpenBLAS sets up its buffers) and cold CPU
caches.  ``--warm`` measures each backend after the *other* backend has run the same
model twice in that process: what is left is the runtime's own first-call work.
``--again`` measures a second runner of the *same* backend, built after a first one ran
the model twice (for the static runtime, a second ``StaticModule``): every kernel path
is warm, so what is left is what that runner's construction leaves to its first call,
and the first touch of the code and data it made.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SAMPLE = (
    "resnet18", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "shufflenet_v2_x1_0",
    "regnet_x_400mf", "densenet121", "googlenet", "vit_b_16", "swin_t", "bert", "gpt2", "t5",
    "timm_resnet18", "timm_deit_tiny_patch16_224", "timm_convnext_atto", "timm_efficientvit_b0",
)
BACKENDS = ("interp", "static")
COLUMNS = ("construct_s", "first_ms", "steady_ms", "first_cpu_ms", "steady_cpu_ms")


def zoo_dir() -> Path:
    return Path(os.environ.get("IRVM_ZOO_CACHE") or Path.home() / ".cache" / "irvm" / "zoo")


def case_of(name: str, folder: Path) -> str | None:
    """The case a NAME stands for: itself when it names a case, else the model's scripted
    case, else its traced one; None when the cache has neither."""
    if "." in name:
        return name if (folder / f"{name}.ir").exists() else None
    return next((f"{name}.{m}" for m in ("script", "trace") if (folder / f"{name}.{m}.ir").exists()), None)


def measure(case: str, backend: str, runs: int, folder: Path, warm: bool = False, again: bool = False) -> dict[str, float]:
    """Compile ``case``, build a ``backend`` runner, time its first and steady calls
    (``warm``: after a runner of the other backend ran the inputs twice; ``again``: after
    a runner of the same backend did)."""
    import compiler
    import vm
    from vm.files.npz import load_inputs, read_npz

    sys.setrecursionlimit(10000)
    program = compiler.compile_source((folder / f"{case}.ir").read_text(), str(folder / f"{case}.ir"))
    weights_path = folder / f"{case}.weights.npz"
    weights = read_npz(weights_path) if weights_path.exists() else None
    inputs = load_inputs(folder / f"{case}.inputs.npz", program)
    runners = {"interp": vm.Interpreter, "static": vm.StaticRuntime}
    if warm or again:
        other = runners[backend if again else "static" if backend == "interp" else "interp"](program, weights)
        other(*inputs)
        other(*inputs)
        del other
    t0 = time.perf_counter()
    runner = runners[backend](program, weights)
    construct = time.perf_counter() - t0
    walls, cpus = [], []
    for _ in range(1 + runs):
        t0, c0 = time.perf_counter(), time.process_time()
        runner(*inputs)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return {
        "construct_s": construct,
        "first_ms": 1e3 * walls[0],
        "steady_ms": 1e3 * statistics.median(walls[1:]),
        "first_cpu_ms": 1e3 * cpus[0],
        "steady_cpu_ms": 1e3 * statistics.median(cpus[1:]),
    }


def _spawn(case: str, backend: str, runs: int, folder: Path, warm: bool, again: bool = False) -> dict[str, Any]:
    """``measure`` in a fresh process (its JSON line), or the error it ended with."""
    done = subprocess.run(
        [sys.executable, __file__, "--worker", case, backend, "--runs", str(runs), *(["--warm"] if warm else []),
         *(["--again"] if again else [])],
        check=False, capture_output=True, text=True, env={**os.environ, "IRVM_ZOO_CACHE": str(folder)},
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail}
    return json.loads(lines[-1])


def bench_zoo(
    names: list[str], runs: int, repeat: int, folder: Path | None = None, warm: bool = False, again: bool = False
) -> int:
    """Print the table for ``names``; 0, or 1 when a case was missing or failed."""
    folder = folder or zoo_dir()
    how = "second runner of the backend" if again else "process warmed by the other backend" if warm else "fresh process"
    print(f"== first call against steady call (zoo: {folder}; {how}; steady = median of {runs}; CPU ratio) ==")
    head = f"{'case':<34} {'backend':<7} {'construct s':>11} {'first ms':>9} {'steady ms':>9}"
    print(f"{head} {'first cpu':>9} {'steady cpu':>10} {'first/steady':>12}", flush=True)
    status = 0
    for name in names:
        case = case_of(name, folder)
        if case is None:
            print(f"{name:<34} not in the zoo cache (python tools/gen_zoo.py {name})")
            status = 1
            continue
        for backend in BACKENDS:
            results = [_spawn(case, backend, runs, folder, warm, again) for _ in range(max(1, repeat))]
            errors = [r["error"] for r in results if "error" in r]
            if errors:
                print(f"{case:<34} {backend:<7} failed: {errors[0]}", flush=True)
                status = 1
                continue
            row = {c: statistics.median(r[c] for r in results) for c in COLUMNS}
            ratio = row["first_cpu_ms"] / row["steady_cpu_ms"] if row["steady_cpu_ms"] else float("nan")
            print(
                f"{case:<34} {backend:<7} {row['construct_s']:>11.3f} {row['first_ms']:>9.2f} {row['steady_ms']:>9.2f}"
                f" {row['first_cpu_ms']:>9.2f} {row['steady_cpu_ms']:>10.2f} {ratio:>11.2f}x",
                flush=True,
            )
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME")
    parser.add_argument("--runs", type=int, default=7, help="steady calls (the median is kept), at least 5")
    parser.add_argument("--repeat", type=int, default=1, help="processes per case and backend")
    parser.add_argument("--warm", action="store_true", help="run the other backend first in each process")
    parser.add_argument("--again", action="store_true", help="measure a second runner of the backend in each process")
    parser.add_argument("--worker", nargs=2, metavar=("CASE", "BACKEND"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    runs = max(args.runs, 5)
    if args.worker:
        case, backend = args.worker
        print(json.dumps(measure(case, backend, runs, zoo_dir(), args.warm, args.again)), flush=True)
        return 0
    return bench_zoo(args.names or list(SAMPLE), runs, args.repeat, warm=args.warm, again=args.again)


if __name__ == "__main__":
    sys.exit(main())
