"""Golden tests of each pass: ``tests/passes/<pass>/*.ir``, checked with the PyPI ``filecheck``
package (tests/support/filecheck_runner.py).

Each file holds cases separated by ``# -----`` lines.  A case is an IR program (its
first comment line says what it shows) followed by ``# CHECK`` directives about the IR
printed after running the pass named by the directory.  The pass's output must also
pass the verifier and give the same results as its input on random inputs is the
business of tests/passes/test_fuzz.py; here we pin exact rewrites.

The passes that take the weights (``compiler.pipeline.WEIGHT_PASSES``) get seeded random
arrays for the case's ``<Tensor>`` constants, of their declared shapes (variances
positive), and the settings a ``# WEIGHTS: {json}`` first line gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compiler import parse
from compiler import types as T
from compiler.pipeline import WEIGHT_PASSES, get_pass
from compiler.verify import verify
from tests.support.filecheck_runner import Case, golden_cases, has_checks, strip_checks
from vm.ir.graph import Module, TensorLiteral
from vm.ir.printer import print_module

CASES = golden_cases(Path(__file__).parent)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden(case: Case) -> None:
    assert has_checks(case.text), "a golden case without CHECK lines cannot fail"
    module = parse(strip_checks(case.text), f"{case.group}.ir")
    verify(module)
    if case.group in WEIGHT_PASSES:
        result = get_pass(case.group)(module, weights=case_weights(module, case.text))
        assert set(result.folded_tensors) <= result.main.value_names()
    else:
        result = get_pass(case.group)(module)
    verify(result)
    case.check(print_module(result))


def case_weights(module: Module, text: str, seed: int = 0) -> dict[str, object]:
    """Seeded float32 arrays for every ``<Tensor>`` constant of ``module``'s main graph, by
    its declared shape (a name with ``var`` in it positive), and the ``# WEIGHTS:`` line's
    settings of ``text``."""
    rng = np.random.default_rng(seed)
    first = text.splitlines()[0] if text else ""
    weights: dict[str, object] = dict(json.loads(first.split(":", 1)[1])) if first.startswith("# WEIGHTS:") else {}
    for node in module.main.walk():
        if node.kind == "prim::Constant" and isinstance(node.attrs.get("value"), TensorLiteral):
            out = node.outputs[0]
            assert isinstance(out.type, T.TensorType) and out.type.sizes is not None
            array = rng.standard_normal(tuple(1 if n is None else n for n in out.type.sizes)).astype(np.float32)
            weights[out.name] = np.abs(array) + 0.1 if "var" in out.name else array
    return weights


def test_every_pass_has_goldens() -> None:
    from compiler.pipeline import available_passes

    assert {c.group for c in CASES} == set(available_passes())
