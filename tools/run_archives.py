"""Run saved ``torch.jit.save`` archives on both irvm backends, with PyTorch blocked.

    python tools/run_archives.py [DIR] [--json RESULTS.json] [--only PREFIX...]

For every ``NAME.pt`` + ``NAME.case.pkl`` in DIR (written by
``tools/torchscript_archives.py``; default ``~/.cache/irvm/archives``) this compiles the
archive with ``compiler.torchscript`` and runs it on the interpreter and on the static
runtime, comparing with torch's outputs (float tolerance rtol 1e-4, atol 1e-5 times the
largest output magnitude; ints,
bools and strings exactly), or, where torch raised, expecting irvm to raise a RunError.  ``import torch`` fails in this process: the first line
makes sure of it.  Prints one line per case and a summary by cause of failure.
"""

from __future__ import annotations

import sys

sys.modules["torch"] = None  # type: ignore[assignment]  # any `import torch` now fails

import argparse
import json
import os
import pickle
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CACHE = Path(os.environ.get("IRVM_ARCHIVE_CACHE", Path.home() / ".cache" / "irvm" / "archives"))


def output_scale(value: Any) -> float:
    """The largest finite magnitude among the floating outputs, at least 1: float32 error
    grows with it, so absolute tolerances scale with it (as tools/zoo_check.py does)."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "fc" and value.size:
        finite = np.abs(value[np.isfinite(value)])
        return max(1.0, float(finite.max())) if finite.size else 1.0
    if isinstance(value, (tuple, list)):
        return max([1.0, *(output_scale(v) for v in value)])
    if isinstance(value, dict):
        return max([1.0, *(output_scale(v) for v in value.values())])
    return 1.0


def compare(expected: Any, got: Any, where: str = "out", scale: float | None = None) -> str | None:
    """Why ``got`` differs from torch's ``expected``, or None when they agree."""
    if scale is None:
        scale = output_scale(expected)
    if isinstance(expected, np.ndarray):
        got_a = np.asarray(got)
        if got_a.shape != expected.shape:
            return f"{where}: shape {list(got_a.shape)}, torch {list(expected.shape)}"
        if expected.dtype.kind in "fc":
            if not np.allclose(got_a, expected, rtol=1e-4, atol=1e-5 * scale, equal_nan=True):
                return f"{where}: max abs difference {np.nanmax(np.abs(got_a - expected)):.3g}"
            return None
        return None if np.array_equal(got_a, expected) else f"{where}: values differ"
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"{where}: {type(got).__name__} of {len(got) if hasattr(got, '__len__') else '?'}, torch {len(expected)}"
        for i, (e, g) in enumerate(zip(expected, got)):
            problem = compare(e, g, f"{where}.{i}", scale)
            if problem:
                return problem
        return None
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"{where}: dict keys differ"
        for k in expected:
            problem = compare(expected[k], got[k], f"{where}.{k}", scale)
            if problem:
                return problem
        return None
    if isinstance(expected, float) and isinstance(got, (float, int)):
        ok = np.isclose(got, expected, rtol=1e-6, atol=1e-9, equal_nan=True)
        return None if ok else f"{where}: {got!r}, torch {expected!r}"
    return None if got == expected else f"{where}: {got!r:.60}, torch {expected!r:.60}"


def run_case(path: Path) -> dict[str, str]:
    """{"interp": "ok" | why, "static": ...} for one archive."""
    import vm
    from compiler.diagnostics import IRError
    from compiler.torchscript import compile_archive, method_defaults
    from vm.binding.strict import ArchiveState

    with open(path.with_suffix(".case.pkl"), "rb") as f:
        case = pickle.load(f)  # our own file, written by tools/torchscript_archives.py
    try:
        program, weights = compile_archive(path)
    except Exception as err:  # noqa: BLE001 - reported, by cause
        why = f"compile: {_first_line(err)}"
        return {"interp": why, "static": why}
    inputs = list(case["inputs"])
    wanted = len(program.input_names) - int(program.takes_self)
    if len(inputs) < wanted:  # torch filled the forward's default arguments: so do we
        defaults = method_defaults(path)
        inputs += defaults[len(defaults) - (wanted - len(inputs)) :] if len(defaults) >= wanted - len(inputs) else []
    results: dict[str, str] = {}
    for backend, runtime in (("interp", vm.Interpreter), ("static", vm.StaticRuntime)):
        try:
            # a run may update buffers; the copy is still the archive's own state (vm.binding.strict)
            fresh = ArchiveState({k: v.copy() if isinstance(v, np.ndarray) else v for k, v in weights.items()})
            if "error" in case:
                try:
                    got = runtime(program, fresh)(*_copy(inputs))
                except IRError:
                    results[backend] = "ok"
                else:
                    results[backend] = f"mismatch: returned {got!r:.60} where torch raised {case['error']!r:.80}"
                continue
            got = runtime(program, fresh)(*_copy(inputs))
            problem = compare(case["expected"], got)
            results[backend] = "ok" if problem is None else f"mismatch: {problem}"
        except Exception as err:  # noqa: BLE001 - reported, by cause
            results[backend] = f"run: {_first_line(err)}"
    return results


def _copy(values: list[Any]) -> list[Any]:
    return [v.copy() if isinstance(v, np.ndarray) else v for v in values]


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0] if text else ''}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=str(CACHE))
    parser.add_argument("--json", help="write {case: {backend: result}} here")
    parser.add_argument("--only", nargs="*", help="name prefixes to run")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, str]] = {}
    with np.errstate(all="ignore"):
        for path in sorted(Path(args.dir).glob("*.pt")):
            name = path.stem
            if not path.with_suffix(".case.pkl").exists():
                continue  # still being written by tools/torchscript_archives.py
            if args.only and not any(name.startswith(o) for o in args.only):
                continue
            results[name] = run_case(path)
            print(f"{name}: interp {results[name]['interp']}; static {results[name]['static']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, sort_keys=True))
    n = len(results)
    both = sum(r["interp"] == "ok" and r["static"] == "ok" for r in results.values())
    print(f"\n{both}/{n} archives run and match torch on both backends")
    causes = Counter(v for r in results.values() for v in r.values() if v != "ok")
    for cause, count in causes.most_common():
        print(f"  {count:3d}  {cause[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
