"""The long mutation fuzz campaign: mutated real dumps into ``compiler.compile_source``,
mutated ``.irbc`` files into ``vm.program.irbc.load`` and an interpreter run.

    python3 tools/fuzz_campaign.py --n 100000 --out /tmp/fuzz-failures
    python3 tools/fuzz_campaign.py --n 2000 --only irbc --seed 7

Each attempt draws 1-3 edits (tests/support/mutations.py) from a generator seeded by ``--seed``
and the attempt number, so a failure is replayed with ``--replay ir:SEED:N``.  An attempt
ends well with a result or one of irvm's own errors (``IRError`` and its families);
anything else, or an attempt that runs longer than ``--timeout`` seconds, is a failure:
its input, edits and traceback go to ``--out``, one folder per distinct failure (by
exception type and the innermost frame), and the counts are printed at the end.
"""

from __future__ import annotations

import argparse
import collections
import random
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.mutations import (
    IR_EDITS,
    IRBC_EDITS,
    Escape,
    apply_ir_edits,
    apply_irbc_edits,
    classify,
    ir_seeds,
    random_edits,
)


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def _irbc_seeds(texts: list[tuple[str, str]], limit: int) -> list[tuple[str, bytes, list[Any]]]:
    """Compiled programs (bytes of their .irbc) with inputs to run them on, from the corpus."""
    import compiler
    import vm.program.irbc as irbc
    from vm.files.npz import load_inputs

    seeds = []
    for name, text in texts:
        path = ROOT / name
        inputs_file = path.with_name(path.stem + ".inputs.npz")
        if not inputs_file.exists() or path.with_name(path.stem + ".weights.npz").exists():
            continue
        try:
            program = compiler.compile_source(text, name)
        except Exception:
            continue
        try:
            inputs = load_inputs(inputs_file, program)
        except Exception:
            continue
        buf = Path("/tmp") / f"fuzz-seed-{path.stem}.irbc"
        irbc.save(program, buf)
        seeds.append((name, buf.read_bytes(), inputs))
        buf.unlink()
        if len(seeds) >= limit:
            break
    return seeds


def _run_ir(text: str) -> str:
    import compiler

    return classify(lambda: compiler.compile_source(text, "mutant.ir"))


def _run_irbc(data: bytes, inputs: list[Any], scratch: Path) -> str:
    import copy

    from vm.interpreter.machine import Interpreter
    from vm.program import irbc

    scratch.write_bytes(data)

    def attempt() -> None:
        program = irbc.load(scratch)
        Interpreter(program)(*copy.deepcopy(inputs))

    return classify(attempt)


def _signature(err: BaseException) -> str:
    tb = traceback.extract_tb(err.__traceback__)
    where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
    return f"{type(err).__name__}@{where}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000, help="attempts of each kind (default 1000)")
    ap.add_argument("--only", choices=("ir", "irbc"), help="run one kind only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before an attempt counts as a hang")
    ap.add_argument("--out", default="fuzz-failures", help="folder for failing inputs (default ./fuzz-failures)")
    ap.add_argument("--replay", metavar="KIND:SEED:N", help="rerun one attempt and print its traceback")
    args = ap.parse_args(argv)

    texts = [(str(p.relative_to(ROOT)), p.read_text()) for p in ir_seeds()]
    out = Path(args.out)
    signal.signal(signal.SIGALRM, _alarm)
    kinds = [args.only] if args.only else ["ir", "irbc"]
    if args.replay:
        kind, seed, n = args.replay.split(":")
        kinds, args.seed, first, args.n = [kind], int(seed), int(n), int(n) + 1
    else:
        first = 0
    scratch = Path(f"/tmp/fuzz-campaign-{id(args)}.irbc")
    status = 0
    for kind in kinds:
        seeds: list[Any] = texts if kind == "ir" else _irbc_seeds(texts, 40)
        counts: collections.Counter[str] = collections.Counter()
        failures: dict[str, int] = collections.Counter()
        start = time.perf_counter()
        for i in range(first, args.n):
            rng = random.Random(f"{kind}:{args.seed}:{i}")
            seed = rng.choice(seeds)
            edits = random_edits(rng, IR_EDITS if kind == "ir" else IRBC_EDITS)
            if kind == "ir":
                mutant: Any = apply_ir_edits(seed[1], edits)
            else:
                mutant = apply_irbc_edits(seed[1], edits)
            signal.setitimer(signal.ITIMER_REAL, args.timeout)
            try:
                counts[_run_ir(mutant) if kind == "ir" else _run_irbc(mutant, seed[2], scratch)] += 1
                failure = None
            except Escape as esc:
                failure, trace, sig = esc.error, esc.trace, _signature(esc.error)
            except _Timeout as err:
                failure, trace, sig = err, f"no answer in {args.timeout} s\n", "hang"
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if (i + 1) % 5000 == 0:
                print(f"  {kind} {i + 1}/{args.n} {dict(counts)}", flush=True)
            if failure is None:
                continue
            counts["escape" if sig != "hang" else "hang"] += 1
            failures[sig] += 1
            if args.replay:
                print(trace)
            if failures[sig] <= 3:
                folder = out / kind / f"{sig.replace(':', '_').replace('@', '-')}-{failures[sig]}"
                folder.mkdir(parents=True, exist_ok=True)
                (folder / ("mutant.ir" if kind == "ir" else "mutant.irbc")).write_bytes(
                    mutant.encode() if kind == "ir" else mutant
                )
                (folder / "info.txt").write_text(
                    f"seed file: {seed[0]}\nedits: {edits}\nreplay: --replay {kind}:{args.seed}:{i}\n\n{trace}"
                )
        elapsed = time.perf_counter() - start
        print(f"{kind}: {args.n - first} mutants in {elapsed:.0f} s: {dict(counts)}")
        for sig, n in failures.most_common():
            print(f"  {n:6d}  {sig}")
        if failures:
            status = 1
    scratch.unlink(missing_ok=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
