"""Run one cached zoo case on an irvm backend and compare it with torch's outputs.

Shared by ``tools/gen_zoo.py`` (the sweep and ``docs/zoo.md``) and ``tests/zoo/test_zoo.py``,
so the table and the test judge a case by the same rule.  No torch here: a case is the
corpus files ``NAME.ir``, ``NAME.inputs.npz``, ``NAME.weights.npz``, ``NAME.expected.npz``
in the cache folder (``cache_dir()``).

Tolerance.  A float output matches when ``|irvm - torch| <= ATOL_SCALE * scale + RTOL *
|torch|`` element-wise, where ``scale`` is the largest magnitude among torch's float
outputs (at least 1).  Float32 rounding in a deep network grows with the size of the
activations, not with each element: a ResNet-152 with random BatchNorm statistics has
logits near 1e8, and an element that happens to be near zero carries the rounding of its
large neighbours' sums (different summation orders in numpy's and torch's GEMMs and
convolutions).  The error is measured against the output's scale, like a relative norm
error, so the same rule holds for a 3-layer BERT with outputs near 1 and a 150-layer
ResNet.  ``ATOL_SCALE = 1e-4`` is about 100 float32 epsilons at the output's scale; a real
bug (a wrong operator, a missed bias, a swapped axis) is off by the scale itself.
Integer, bool and shape results compare exactly, and the kinds (tuple, dict, tensor) too.
"""

from __future__ import annotations

import functools
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vm.files.npz import (
    SPEC_KEY,
    compare_flat,
    flatten_outputs,
    load_inputs,
    outputs_as_list,
    read_npz,
)

RTOL, ATOL_SCALE = 1e-3, 1e-4
BACKENDS = ("interp", "static")


def cache_dir() -> Path:
    """Where the zoo's cases live: ``$IRVM_ZOO_CACHE``, else ``~/.cache/irvm/zoo``."""
    return Path(os.environ.get("IRVM_ZOO_CACHE") or Path.home() / ".cache" / "irvm" / "zoo")


def output_scale(expected: dict[str, np.ndarray]) -> float:
    """The largest finite magnitude among the float outputs, at least 1."""
    scale = 1.0
    for key, value in expected.items():
        if key != SPEC_KEY and value.dtype.kind == "f" and value.size:
            finite = np.abs(value[np.isfinite(value)])
            if finite.size:
                scale = max(scale, float(finite.max()))
    return scale


def compare(expected: dict[str, np.ndarray], actual: dict[str, np.ndarray]) -> tuple[list[str], float]:
    """(problems, max error relative to the output scale); no problems means a match."""
    scale = output_scale(expected)
    problems = compare_flat(expected, actual, rtol=RTOL, atol=ATOL_SCALE * scale)
    worst = 0.0
    for key in set(expected) & set(actual) - {SPEC_KEY}:
        e, a = expected[key], actual[key]
        if e.dtype.kind == "f" and a.shape == e.shape and e.size:
            diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
            diff = diff[np.isfinite(diff)]
            if diff.size:
                worst = max(worst, float(diff.max()) / scale)
    return problems, worst


@dataclass
class Outcome:
    """One case on one backend: ``match``, ``mismatch`` or ``error`` (and why)."""

    status: str
    error: str = ""  # the first line of the error, or of the comparison's problems
    max_error: float | None = None  # relative to the output scale
    compile_ms: float | None = None
    run_ms: float | None = None  # one steady run (after a first, warming run when cheap)


def first_line(text: str) -> str:
    """The first line of an error message that says something, without object addresses
    (``<function f at 0x7f...>``), so reruns give the same text."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[0] if lines else text
    if line.endswith(":") and len(lines) > 1:  # "... reads from %self:" and its first item
        line = f"{line} {lines[1]}"
    return re.sub(r" at 0x[0-9a-f]+", "", line)


def run_case(
    name: str, backend: str, folder: Path | None = None, repeat_under_s: float = 0.5, options: Any = None
) -> Outcome:
    """Compile case ``name`` from ``folder`` and run it on ``backend``; compare with torch.
    ``options``: the ``StaticOptions`` of the static backend (its defaults when None).

    The run is timed; when the first run takes under ``repeat_under_s`` it runs again and
    the faster of the two is kept (the first carries one-time costs of both backends)."""
    import vm
    from compiler.diagnostics import IRError, RunError

    folder = folder or cache_dir()
    try:
        program, compile_ms = _compiled(folder / f"{name}.ir")
        weights_path = folder / f"{name}.weights.npz"
        weights = read_npz(weights_path) if weights_path.exists() else None
        inputs = load_inputs(folder / f"{name}.inputs.npz", program)
        if backend == "interp":
            runtime = vm.Interpreter(program, weights)
        else:
            from vm import StaticModule, StaticRuntime

            runtime = StaticRuntime(StaticModule(program, weights, options))
        start = time.perf_counter()
        result = runtime(*inputs)
        run_s = time.perf_counter() - start
        if run_s < repeat_under_s:
            start = time.perf_counter()
            runtime(*inputs)
            run_s = min(run_s, time.perf_counter() - start)
        actual = flatten_outputs(outputs_as_list(result, program.n_outputs))
    except (IRError, RunError) as err:
        return Outcome("error", f"{type(err).__name__}: {first_line(_message(err))}")
    except Exception as err:  # noqa: BLE001 - an internal error is a failure too: record it, keep sweeping
        return Outcome("error", f"internal {type(err).__name__}: {first_line(str(err))}")
    problems, worst = compare(read_npz(folder / f"{name}.expected.npz"), actual)
    status = "mismatch" if problems else "match"
    return Outcome(status, problems[0] if problems else "", worst, compile_ms, run_s * 1e3)


@functools.lru_cache(maxsize=1)
def _compiled(path: Path) -> tuple[Any, float]:
    """The Program of one case and its compile time (ms); the last one is kept, so the
    second backend reuses the first's (a Program is immutable)."""
    import compiler

    start = time.perf_counter()
    program = compiler.compile_source(path.read_text(), str(path))
    return program, (time.perf_counter() - start) * 1e3


def _message(err: Exception) -> str:
    """A diagnostic's message with its IR line, without the file name and source excerpt;
    for a combined CompileError, the distinct messages of the nodes it lists."""
    parts = getattr(err, "errors", None)
    if parts:
        distinct = list(dict.fromkeys(first_line(p.message) for p in parts))
        more = f" (+{len(distinct) - 4} more)" if len(distinct) > 4 else ""
        return f"{len(parts)} nodes cannot be compiled: " + "; ".join(distinct[:4]) + more
    message = getattr(err, "message", None)
    if not isinstance(message, str) or not message:
        return str(err)
    span = getattr(err, "span", None)
    return f"line {span.line}: {message}" if span is not None else message


def expected_exists(name: str, folder: Path | None = None) -> bool:
    return ((folder or cache_dir()) / f"{name}.expected.npz").exists()


def outcome_dict(outcome: Outcome) -> dict[str, Any]:
    return {k: v for k, v in vars(outcome).items() if v not in (None, "")}
