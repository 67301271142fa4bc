"""Graph pictures: the structure of the drawing follows the IR.

Counts come from the DOT text (boxes per node, clusters per block and fusion group), so
these tests need neither graphviz nor ``dot``; one test renders a PNG where ``dot`` is
installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import compiler
from compiler.pipeline import optimize
from compiler.viz import render, to_dot

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

IF_LOOP = """\
graph(%x.1 : Tensor, %n.1 : int, %c.1 : bool):
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = prim::If(%c.1) # m.py:3:4
    block0():
      %a : Tensor = aten::relu(%x.1) # m.py:4:12
      -> (%a)
    block1():
      %b : Tensor = aten::neg(%x.1) # m.py:6:12
      -> (%b)
  %z : Tensor = prim::Loop(%n.1, %t, %y) # m.py:7:4
    block0(%i : int, %acc : Tensor):
      %acc.2 : Tensor = aten::add(%acc, %x.1, %one) # m.py:8:14
      -> (%t, %acc.2)
  return (%z)
"""


def boxes(dot: str) -> list[str]:
    return re.findall(r'^\s*n\d+ \[shape=(?:box|octagon), label="([^"]*)"', dot, flags=re.M)


def clusters(dot: str) -> list[str]:
    return re.findall(r"subgraph (cluster_\d+) \{\s*label=\"([^\"]*)\"", dot)


def test_one_box_per_node_constants_folded() -> None:
    module = compiler.parse(IF_LOOP, "m.ir")
    dot = to_dot(module)
    labels = boxes(dot)
    assert len(labels) == 5  # If, relu, neg, Loop, add: constants are not boxes
    assert any(label.startswith("aten::add(·, ·, 1)") for label in labels), "constant 1 folded into the label"
    assert dot.count("shape=invhouse") == 3 and dot.count("shape=house") == 1


def test_constants_as_nodes_when_asked() -> None:
    dot = to_dot(compiler.parse(IF_LOOP, "m.ir"), fold_constants=False)
    assert len(boxes(dot)) == 7  # the two constants become boxes


def test_blocks_are_nested_clusters_with_spans_as_tooltips() -> None:
    dot = to_dot(compiler.parse(IF_LOOP, "m.ir"))
    names = [label for _, label in clusters(dot)]
    assert names == ["prim::If block0", "prim::If block1", "prim::Loop block0"]
    assert 'tooltip="m.ir:6:7 m.py:4:12"' in dot  # the IR place and the Python place
    assert dot.count("shape=ellipse") == 2  # the loop body's parameters %i and %acc


def test_lstm_cell_before_and_after_fusion() -> None:
    """The seed LSTM cell: 20-odd boxes before fusion; after it, two fusion-group clusters."""
    module = compiler.parse((EXAMPLES / "lstm_cell.ir").read_text(), "lstm_cell.ir")
    before = to_dot(module)
    assert not clusters(before)
    fused, _ = optimize(module)
    after = to_dot(fused)
    groups = [label for _, label in clusters(after) if label.startswith("with prim::FusionGroup")]
    assert groups == ["with prim::FusionGroup_0 = graph", "with prim::FusionGroup_1 = graph"]
    assert len(boxes(after)) < len(boxes(before)) + 16  # the group bodies replace, not add to, the ops
    outer = [b for b in boxes(after) if b.startswith("prim::FusionGroup_")]
    assert len(outer) == 2


def test_ratio_iou_picture_matches_its_graph() -> None:
    module = compiler.parse((EXAMPLES / "ratio_iou.ir").read_text(), "ratio_iou.ir")
    n_ops = sum(1 for n in module.main.walk() if n.kind != "prim::Constant")
    assert len(boxes(to_dot(module))) == n_ops


def test_render_dot_and_refuse_unknown_suffix(tmp_path: Path) -> None:
    out = tmp_path / "g.dot"
    assert "wrote" in render(IF_LOOP, "m.ir", out)
    assert out.read_text().startswith("digraph irvm {")
    with pytest.raises(compiler.IRError, match="svg"):
        render(IF_LOOP, "m.ir", tmp_path / "g.txt")


def test_render_after_unknown_pass_names_the_pipeline(tmp_path: Path) -> None:
    with pytest.raises(compiler.IRError, match="group_fusions"):
        render(IF_LOOP, "m.ir", tmp_path / "g.dot", after="no_such_pass")


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed")
def test_cli_renders_png(tmp_path: Path) -> None:
    out = tmp_path / "lstm.png"
    proc = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "viz", str(EXAMPLES / "lstm_cell.ir"), "-o", str(out), "--after", "group_fusions"],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_without_dot_writes_the_dot_file_and_says_how_to_install(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    message = render(IF_LOOP, "m.ir", tmp_path / "g.svg")
    assert (tmp_path / "g.dot").exists() and not (tmp_path / "g.svg").exists()
    assert "apt-get install graphviz" in message
