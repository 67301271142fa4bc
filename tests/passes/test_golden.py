"""Golden tests of each pass: ``tests/passes/<pass>/*.ir``, checked with tests/filecheck.py.

Each file holds cases separated by ``# -----`` lines.  A case is an IR program (its
first comment line says what it shows) followed by ``# CHECK`` directives about the IR
printed after running the pass named by the directory.  The pass's output must also
pass the verifier and give the same results as its input on random inputs is the
business of tests/test_passes_fuzz.py; here we pin exact rewrites.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.filecheck import check_output, parse_checks, strip_checks

from compiler import parse
from compiler.pipeline import get_pass
from compiler.printer import print_module
from compiler.verify import verify

ROOT = Path(__file__).parent
SPLIT = "# -----"


def _cases() -> list[tuple[str, int, str]]:
    cases = []
    for path in sorted(ROOT.glob("*/*.ir")):
        for i, text in enumerate(path.read_text().split(SPLIT + "\n")):
            cases.append((path.parent.name, i, text))
            _ = path
    return cases


def _id(case: tuple[str, int, str]) -> str:
    return f"{case[0]}-{case[1]}"


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_golden(case: tuple[str, int, str]) -> None:
    name, _, text = case
    checks = parse_checks(text)
    assert checks, "a golden case without CHECK lines cannot fail"
    module = parse(strip_checks(text), f"{name}.ir")
    verify(module)
    result = get_pass(name)(module)
    verify(result)
    check_output(checks, print_module(result))


def test_every_pass_has_goldens() -> None:
    from compiler.pipeline import available_passes

    assert {c[0] for c in CASES} == set(available_passes())
