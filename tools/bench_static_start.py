"""The static runtime's start: construction, first call and steady calls, side by side.

    python tools/bench_static_start.py [--models transformer12,densenet121,vit_b_16] [--runs 5]

For each model (exported once by ``tools/bench_startup.py``'s ``export_model`` into
``$IRVM_STARTUP_DIR``, default ``~/.cache/irvm/startup``; needs torch for that export
only): ``irc compile`` in process, then two static runtimes over the compiled program:

- ``cold``: ``StaticRuntime(program, weights)``; its first call records sizes and plans;
- ``planned``: ``StaticModule(program, weights, example_inputs=inputs)``, which plans at
  construction, then ``StaticRuntime(module)``.

Each line gives construction seconds, the first call, the best of ``--runs`` steady
calls and first/steady (the bar of issue #15: at most 1.5x), on the wall clock; then the
same in process CPU time with the median of the steady calls (``cpu`` lines), which a
shared machine disturbs less.  One process.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import numpy as np


def _arrays(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def bench(name: str, runs: int) -> None:
    from bench_startup import export_model, first_and_steady, first_and_steady_cpu

    import compiler
    from vm import StaticModule, StaticRuntime
    from vm.files.npz import load_inputs

    info = export_model(name)
    program = compiler.compile_file(str(info["ir"]))
    weights = _arrays(info["weights"])
    inputs = load_inputs(_arrays(info["inputs"]), program)
    makers = {
        "cold": lambda: StaticRuntime(program, weights),
        "planned": lambda: StaticRuntime(StaticModule(program, weights, example_inputs=inputs)),
    }
    for label, make in makers.items():
        for clock, measure in (("wall", first_and_steady), ("cpu", first_and_steady_cpu)):
            build, first, steady = measure(make, inputs, runs)
            print(
                f"{name:<14} {label:<8} {clock:<4} construct {build:7.2f}s  first {first:8.4f}s  steady {steady:8.4f}s"
                f"  first/steady {first / steady:6.2f}x",
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="transformer12,densenet121,vit_b_16")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    sys.setrecursionlimit(10000)
    for name in [m for m in args.models.split(",") if m]:
        bench(name, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
