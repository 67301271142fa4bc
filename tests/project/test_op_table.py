"""docs/operators.md is generated from the registry and must match it.

The generator runs in a fresh interpreter, so that operators registered by other tests
(custom ops, replaced kernels) cannot leak into the comparison.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def test_operator_table_is_up_to_date() -> None:
    """Fails when an operator was added, removed or changed without regenerating the docs:
    run `python tools/gen_op_table.py`."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_op_table.py"), "--check"],
        capture_output=True, text=True, cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr


def test_operator_table_lists_every_family_and_core_overloads() -> None:
    text = (ROOT / "docs" / "operators.md").read_text()
    for family in ("pointwise", "reduction", "shape", "linalg", "factory", "indexing", "unary"):
        assert f"## {family}\n" in text, family
    for overload in ("aten::add.Tensor", "aten::add_.Scalar", "aten::max.dim", "aten::to.dtype",
                     "aten::slice.Tensor", "aten::linear", "aten::einsum"):
        assert f"| `{overload}` |" in text, overload


def test_check_mode_detects_a_stale_file(tmp_path: Path, capsys) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_op_table

    stale = tmp_path / "operators.md"
    stale.write_text("# Operators\n")
    assert gen_op_table.main(["--check", "--output", str(stale)]) == 1
    assert "stale" in capsys.readouterr().err
