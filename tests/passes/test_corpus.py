"""The pipeline on the real torch dumps of tests/corpus: it never changes an output.

Each corpus program is run by the reference evaluator (tests/support/reference.py) before
and after ``optimize`` (every pass, fusion on, the verifier after each pass), and the
optimized program must give exactly the same outputs, or raise the same error.  The
unoptimized run is also compared with what torch returned (to 1e-4: matmuls sum in another
order), which checks the reference evaluator itself on real programs.  A program using an
operator the library does not have yet is skipped, with the operator named.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from compiler.parser import parse
from compiler.pipeline import DEFAULT_PIPELINE, optimize
from tests.support.paths import CORPUS
from tests.support.reference import run_reference, same_value
from vm.binding.weights import bind_self
from vm.files.npz import compare_flat, flatten_outputs, load_inputs, outputs_as_list, read_npz

NAMES = [rec["name"] for rec in json.loads((CORPUS / "manifest.json").read_text())]


def _run(module: Any, name: str) -> tuple[str, Any]:
    weights_path = CORPUS / f"{name}.weights.npz"
    weights = read_npz(weights_path) if weights_path.exists() else {}
    inputs = load_inputs(CORPUS / f"{name}.inputs.npz", module.main)
    main = module.main
    if main.inputs and len(inputs) == len(main.inputs) - 1:
        inputs = [bind_self(main, weights), *inputs]
    try:
        return "ok", run_reference(module, inputs, weights)
    except Exception as err:  # noqa: BLE001
        return "raised", f"{type(err).__name__}: {err}"


@pytest.mark.parametrize("name", NAMES)
def test_pipeline_keeps_corpus_outputs(name: str) -> None:
    """optimize() changes no output of a real dump (and the reference agrees with torch)."""
    module = parse((CORPUS / f"{name}.ir").read_text(), f"{name}.ir")
    before = _run(module, name)
    if before[0] == "raised" and before[1].startswith("CompileError"):
        pytest.skip(f"the operator library cannot run it yet: {before[1].splitlines()[0]}")
    optimized, records = optimize(module, verify_each=True)
    assert [r.name for r in records] == DEFAULT_PIPELINE
    after = _run(optimized, name)
    assert before[0] == after[0], f"{before} vs {after}"
    if before[0] == "raised":
        assert before[1] == after[1]
        assert (CORPUS / f"{name}.error.txt").exists(), f"the reference raised {before[1]}"
        return
    assert same_value(before[1], after[1]), f"optimized {after[1]!r} != {before[1]!r}"
    n = len(module.main.outputs)
    problems = compare_flat(read_npz(CORPUS / f"{name}.expected.npz"), flatten_outputs(outputs_as_list(before[1], n)), 1e-4, 1e-4)
    assert not problems, "reference vs torch:\n  " + "\n  ".join(problems)
