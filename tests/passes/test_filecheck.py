"""The FileCheck matcher the pass goldens rely on: each directive accepts and refuses."""

from __future__ import annotations

import pytest
from tests.filecheck import CheckError, check_output, strip_checks

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
