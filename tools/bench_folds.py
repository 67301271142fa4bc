"""What the static runtime's load-time rewrites buy, per zoo model.

    python3 tools/bench_folds.py [--only shufflenet_v2_x0_5 --only 'mobilenet*'] [--rounds 30]

For each model (default: ``bench_zoo.DEFAULT``), built and exported as ``tools/bench_zoo.py``
does (its program compiled *without* weights, as a user who runs ``StaticRuntime(program,
weights)`` has it), one static runtime per setting of ``vm.static.module_ir.LOAD_TIME_FOLDS``:
every fold on (the default), all off, the BatchNorm fold alone (what the runtime did before
issue #16's folds), and each one off alone.  Reported: the nodes the
module runs, and the median and 10th-percentile ms per call over interleaved rounds (one
call of each runtime per round, so load from other processes falls on all alike; the
objects alive before the rounds frozen out of the garbage collector, as bench_zoo does);
one BLAS thread.
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is first imported

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))


def settings() -> dict[str, Any]:
    """Column name -> StaticOptions: all folds on, all off, each off alone."""
    from vm.static import StaticOptions
    from vm.static.module_ir import LOAD_TIME_FOLDS

    off = {f: False for f in LOAD_TIME_FOLDS}
    columns = {
        "all on": StaticOptions(),
        "all off": StaticOptions(**off),
        "batch_norm only": StaticOptions(**{**off, "fold_batch_norm": True}),  # the folds before #16's
    }
    for fold in LOAD_TIME_FOLDS:
        columns[f"no {fold[5:]}"] = StaticOptions(**{fold: False})
    return columns


def measure(name: str, rounds: int) -> dict[str, tuple[int, float, float]]:
    """Column -> (nodes, median ms, p10 ms) for zoo model ``name``."""
    import bench_zoo
    from export_torch import to_numpy
    from zoo_models import ZOO

    from vm import StaticModule, StaticRuntime

    model, inputs = ZOO[name].build()
    program, weights, _ = bench_zoo.export_case(model, inputs, name)
    args = [to_numpy(x) for x in inputs]
    runtimes = {}
    for column, options in settings().items():
        runtime = StaticRuntime(StaticModule(program, weights, options))
        runtime(*args)
        runtime(*args)
        runtimes[column] = runtime
    gc.collect()
    gc.freeze()  # as bench_zoo: the process holds torch; keep it out of the collector's scans
    samples: dict[str, list[float]] = {c: [] for c in runtimes}
    for _ in range(rounds):
        for column, runtime in runtimes.items():
            start = time.perf_counter()
            runtime(*args)
            samples[column].append(time.perf_counter() - start)
    return {
        c: (
            len(runtimes[c].module.processed_nodes) - len(runtimes[c].module.shape_skip),  # shape-only ones run once
            statistics.median(s) * 1e3,
            sorted(s)[len(s) // 10] * 1e3,
        )
        for c, s in samples.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="model name or glob (repeatable)")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args(argv)

    import bench_zoo
    from zoo_models import ZOO

    names = [n for n in ZOO if any(fnmatch.fnmatch(n, p) for p in args.only)] if args.only else list(bench_zoo.DEFAULT)
    columns = list(settings())
    print(f"`python3 tools/bench_folds.py {' '.join(argv if argv is not None else sys.argv[1:])}`".replace(" `", "`"))
    print("\nms per call, median (p10); nodes the static module runs per call (shape-only ones not counted)\n")
    print("| model | " + " | ".join(columns) + " | batch_norm only / all on (p10) |")
    print("|---|" + "---:|" * (len(columns) + 1))
    for name in names:
        row = measure(name, args.rounds)
        cells = [f"{row[c][1]:.2f} ({row[c][2]:.2f}), {row[c][0]} nodes" for c in columns]
        ratio = row["batch_norm only"][2] / row["all on"][2]  # p10: the least disturbed by load
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
