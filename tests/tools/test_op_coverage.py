"""tools/op_coverage.py: it lists exactly the nodes the registry cannot resolve (unknown
kinds, kinds without a fitting overload, nested blocks included), counts them per input
signature and names the graphs that use them; graphs that do not parse are reported."""

from __future__ import annotations

import sys

from tests.support.paths import TOOLS

sys.path.insert(0, str(TOOLS))

import op_coverage

GRAPH = """\
graph(%x.1 : Tensor, %n.1 : int):
  %1 : int = prim::Constant[value=1]()
  %y.1 : Tensor = aten::relu(%x.1)
  %z.1 : Tensor = aten::frobnicate(%y.1, %1)
  %b.1 : bool = aten::gt(%n.1, %1)
  %w.1 : Tensor = prim::If(%b.1)
    block0():
      %u.1 : Tensor = aten::frobnicate(%z.1, %n.1)
      -> (%u.1)
    block1():
      %v.1 : Tensor = aten::relu(%z.1, %z.1, %z.1)
      -> (%v.1)
  return (%w.1)
"""


def test_unresolved_nodes_are_counted_by_signature_and_graph(tmp_path) -> None:
    (tmp_path / "a.ir").write_text(GRAPH)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.ir").write_text(GRAPH)
    (tmp_path / "broken.ir").write_text("graph(%x : Tensor):\n  return (%y)\n")
    report = op_coverage.Report()
    for path in op_coverage.ir_files([str(tmp_path)]):
        report.add_graph(path.stem, path.read_text(), str(path))
    gaps = {key: (g.reason, g.count, sorted(g.models)) for key, g in report.gaps.items()}
    assert gaps == {
        ("aten::frobnicate", "aten::frobnicate(Tensor, int)"): ("unknown operator", 4, ["a", "b"]),
        ("aten::relu", "aten::relu(Tensor, Tensor, Tensor)"): ("no overload", 2, ["a", "b"]),
    }
    assert sorted(report.graphs) == ["a", "b"] and list(report.failures) == ["broken"]
    text = report.markdown()
    assert "`aten::frobnicate(Tensor, int)` | unknown operator | 4" in text and "| broken |" in text


def test_command_line_exit_status_says_whether_anything_is_missing(tmp_path, capsys) -> None:
    good = tmp_path / "good.ir"
    good.write_text("graph(%x.1 : Tensor):\n  %y.1 : Tensor = aten::relu(%x.1)\n  return (%y.1)\n")
    assert op_coverage.main([str(good)]) == 0
    assert "1 graphs analysed, 0 unresolved" in capsys.readouterr().out
    bad = tmp_path / "bad.ir"
    bad.write_text(GRAPH)
    out = tmp_path / "report.md"
    assert op_coverage.main([str(bad), "-o", str(out)]) == 1
    assert "aten::frobnicate" in out.read_text()
