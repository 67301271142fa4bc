"""Golden tests of each pass: ``tests/passes/<pass>/*.ir``, checked with the PyPI ``filecheck``
package (tests/support/filecheck_runner.py).

Each file holds cases separated by ``# -----`` lines.  A case is an IR program (its
first comment line says what it shows) followed by ``# CHECK`` directives about the IR
printed after running the pass named by the directory.  The pass's output must also
pass the verifier and give the same results as its input on random inputs is the
business of tests/passes/test_fuzz.py; here we pin exact rewrites.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler import parse
from compiler.pipeline import get_pass
from compiler.printer import print_module
from compiler.verify import verify
from tests.support.filecheck_runner import Case, golden_cases, has_checks, strip_checks

CASES = golden_cases(Path(__file__).parent)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden(case: Case) -> None:
    assert has_checks(case.text), "a golden case without CHECK lines cannot fail"
    module = parse(strip_checks(case.text), f"{case.group}.ir")
    verify(module)
    result = get_pass(case.group)(module)
    verify(result)
    case.check(print_module(result))


def test_every_pass_has_goldens() -> None:
    from compiler.pipeline import available_passes

    assert {c.group for c in CASES} == set(available_passes())
