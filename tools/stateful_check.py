"""Run the stateful harness and print its table: model, calls, mismatches per backend.

    python3 tools/stateful_check.py [--calls 100] [--only NAME]... [--source pt|ir|both]
                                    [--cache DIR] [--details]
    python3 tools/stateful_check.py --archive MODEL.pt --shape 1,512 [--arg 16000]...


Every model of ``tests/support/stateful_models.py`` (a streaming RNN, a streaming VAD
whose context starts empty, running statistics, a counter, a growing key/value cache, a
module that resets on a new batch size, state in a submodule, None -> tensor state, state
that changes dtype, a list that grows) runs ``--calls`` consecutive calls, in three runs
over two shapes, from its ``.pt`` (with its other methods' calls: ``reset_states``...) and
from its printed IR, on torch and on each irvm backend (``interp``, ``static``, and
``static-planned``: the static runtime planning every tensor, ``min_managed_bytes=0``);
the table counts the calls whose result is not torch's (``tests/support/stateful.py``
judges them, as ``tests/stateful/test_streams.py`` does).  Archives and IR are written to
``--cache`` (default ``$IRVM_CACHE_DIR/stateful``, else ``~/.cache/irvm/stateful``), made
again when missing.  ``--archive`` runs the same comparison on any saved model instead
(silero-vad's ``silero_vad.jit``: ``--shape 1,512 --arg 16000``): ``--calls`` forward calls
on random float32 inputs of ``--shape`` followed by the ``--arg`` literals.  Exit status 1
when any call differs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def default_cache() -> Path:
    base = os.environ.get("IRVM_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "irvm") / "stateful"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="consecutive calls per stream (default 100)")
    parser.add_argument("--only", action="append", default=[], metavar="NAME", help="run only this model (repeatable)")
    parser.add_argument("--source", choices=("pt", "ir", "both"), default="both", help="what irvm loads")
    parser.add_argument("--cache", type=Path, default=None, help="where the .pt and .ir files go")
    parser.add_argument("--details", action="store_true", help="print the first differing calls of each stream")
    parser.add_argument("--archive", type=Path, help="a torch.jit.save archive to stream instead of the harness's models")
    parser.add_argument("--shape", help="with --archive: the float32 input's shape, as 1,512")
    parser.add_argument("--arg", action="append", default=[], help="with --archive: a literal argument after it")
    args = parser.parse_args(argv)
    if args.archive is not None:
        if not args.shape:
            parser.error("--archive needs --shape")
        return _archive(args.archive, tuple(int(n) for n in args.shape.split(",")), args.arg, args.calls)

    from tests.support import stateful
    from tests.support.stateful_models import CASES

    cases = [c for c in CASES if not args.only or c.name in args.only]
    unknown = set(args.only) - {c.name for c in CASES}
    if unknown:
        parser.error(f"unknown model(s) {', '.join(sorted(unknown))}: {', '.join(c.name for c in CASES)}")
    sources = ("pt", "ir") if args.source == "both" else (args.source,)
    cache = args.cache or default_cache()
    header = f"{'model':<16} {'from':<4} {'calls':>5}" + "".join(f" {b:>15}" for b in stateful.BACKENDS)
    print(header)
    print("-" * len(header))
    bad = 0
    details: list[str] = []
    for case in cases:
        for source in sources:
            row = f"{case.name:<16} {source:<4} {args.calls:>5}"
            for backend in stateful.BACKENDS:
                try:
                    result = stateful.check(case, args.calls, cache, backend, source)
                    cell = str(len(result.mismatches))
                    bad += len(result.mismatches)
                    details += [f"{case.name} {source} {backend} call {i}: {why}" for i, why in result.mismatches[:3]]
                except Exception as err:  # noqa: BLE001  (a model that does not load is a row, not a crash)
                    cell = "load failed"
                    bad += 1
                    details.append(f"{case.name} {source} {backend}: {type(err).__name__}: {err}"[:300])
                row += f" {cell:>15}"
            print(row, flush=True)
    print(f"\nmismatches per backend: calls whose result is not torch's (of {args.calls} per stream)")
    if args.details and details:
        print("\n" + "\n".join(details))
    return 1 if bad else 0


def _archive(path: Path, shape: tuple[int, ...], extra: list[str], calls: int) -> int:
    """One row per backend: ``calls`` forward calls of ``path`` on torch and irvm."""
    import ast

    import numpy as np

    from tests.support import stateful

    rng = np.random.default_rng(0)
    literals = tuple(ast.literal_eval(a) for a in extra)
    stream = [("forward", (rng.standard_normal(shape).astype(np.float32), *literals)) for _ in range(calls)]
    theirs = stateful.run_torch(path, stream)
    import vm

    print(f"{'model':<24} {'calls':>5}" + "".join(f" {b:>15}" for b in ("interp", "static")))
    row, bad = f"{path.name:<24} {calls:>5}", 0
    for backend in ("interp", "static"):
        result = stateful.compare(path.name, "pt", backend, stateful.run_irvm(vm.load(path, backend=backend), stream),
                                  theirs, stream)
        bad += len(result.mismatches) + len(result.both_failed)
        row += f" {len(result.mismatches):>15}"
    print(row)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
