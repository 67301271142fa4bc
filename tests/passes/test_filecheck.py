"""FileCheck as the pass goldens use it (the PyPI ``filecheck`` package through
tests/support/filecheck_runner.py): each directive accepts and refuses, and a failure is
reported at the directive's line in the golden file."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.filecheck_runner import (
    CheckError,
    check_output,
    golden_cases,
    strip_checks,
)

OUT = """graph(%x):
  %1 = aten::add(%x, %x)
  %2 = aten::mul(%1, %1)
  return (%2)
"""


@pytest.mark.parametrize(
    "checks",
    [
        "# CHECK: aten::add\n# CHECK: return",
        "# CHECK: aten::add\n# CHECK-NEXT: aten::mul",
        "# CHECK: %1 =\n# CHECK-SAME: aten::add",
        "# CHECK: aten::add\n# CHECK-NOT: aten::sub\n# CHECK: aten::mul",
        "# CHECK: [[V:%[0-9]+]] = aten::add\n# CHECK: aten::mul([[V]], [[V]])",
        "# CHECK-DAG: aten::mul\n# CHECK-DAG: aten::add\n# CHECK: return",
        "# CHECK: aten::{{add|sub}}(%x,   %x)",
        "# CHECK: return\n# CHECK-NOT: graph",  # a trailing NOT looks after the last match only
    ],
)
def test_accepts(checks: str) -> None:
    check_output(checks, OUT)


@pytest.mark.parametrize(
    "checks",
    [
        "# CHECK: aten::mul\n# CHECK: aten::add",  # order matters
        "# CHECK: graph\n# CHECK-NEXT: aten::mul",  # not the next line
        "# CHECK: %1 =\n# CHECK-SAME: aten::mul",  # not on the same line
        "# CHECK: aten::add\n# CHECK-NOT: aten::mul\n# CHECK: return",  # forbidden in between
        "# CHECK: [[V:%[0-9]+]] = aten::mul\n# CHECK: aten::add([[V]]",  # capture mismatch
        "# CHECK-DAG: aten::add\n# CHECK-DAG: aten::add",  # DAG matches may not overlap
        "",  # no checks at all cannot pass
    ],
)
def test_refuses(checks: str) -> None:
    with pytest.raises(CheckError):
        check_output(checks, OUT)


def test_strip_checks_keeps_the_program() -> None:
    text = "graph():\n  return ()\n# CHECK: graph\n"
    assert strip_checks(text) == "graph():\n  return ()\n"


def test_a_failure_names_the_golden_file_and_the_directive_line(tmp_path: Path) -> None:
    """A case's directives are reported at their line in the file it came from, with the
    output that was checked (the second case below starts on line 6)."""
    (tmp_path / "somepass").mkdir()
    path = tmp_path / "somepass" / "cases.ir"
    path.write_text("graph():\n  return ()\n# CHECK: graph\n# -----\n# second case\ngraph():\n  return ()\n# CHECK: aten::mul\n")
    first, second = golden_cases(tmp_path)
    assert (first.id, second.id, second.first_line) == ("somepass-0", "somepass-1", 5)
    first.check(OUT)
    with pytest.raises(CheckError) as err:
        second.check("graph():\n  return ()\n")
    assert f"{path}:8:" in str(err.value) and "aten::mul" in str(err.value)
    assert "--- output checked ---\ngraph():" in str(err.value)
