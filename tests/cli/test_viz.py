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
from tests.support.paths import ROOT

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
    # render marks the picture itself, in the one atomic write that puts it in place
    assert out.read_text().startswith("// irvm viz\ndigraph irvm {")
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


def test_without_dot_a_picture_is_an_error_with_the_install_hint(tmp_path: Path, monkeypatch, capsys) -> None:
    """Asking for an .svg/.png without graphviz's `dot` exits non-zero, says how to install
    it, and writes nothing (no stray .dot file next to the picture)."""
    from compiler.cli import main

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(compiler.IRError, match="apt-get install graphviz"):  # a RunError: exit 1
        render(IF_LOOP, "m.ir", tmp_path / "g.svg")
    source = tmp_path / "m.ir"
    source.write_text(IF_LOOP)
    assert main(["viz", str(source), "-o", str(tmp_path / "g.png")]) != 0
    assert "graphviz" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ir"]
    assert "wrote" in render(IF_LOOP, "m.ir", tmp_path / "g.dot")  # DOT text needs no graphviz


def _cluster_of_each_line(dot: str) -> list[tuple[str | None, str]]:
    """(innermost cluster label or None at the top level, line) for every line."""
    stack: list[str | None] = []
    out = []
    for line in dot.splitlines()[1:-1]:
        if line.strip().startswith("subgraph cluster_"):
            stack.append("?")
        elif line.strip() == "}":
            stack.pop()
        elif line.strip().startswith("label=") and stack and stack[-1] == "?":
            stack[-1] = line.strip().split('"')[1]
        out.append((stack[-1] if stack else None, line.strip()))
    return out


def test_nodes_sit_in_their_own_block_and_edges_at_the_top_level() -> None:
    """Every edge is written outside all clusters (an edge inside a cluster would pull its
    ends into it: top-level nodes drawn inside a prim::If box); each box is declared in
    the cluster of the block that owns its node."""
    placed = _cluster_of_each_line(to_dot(compiler.parse(IF_LOOP, "m.ir")))
    edges = [(c, line) for c, line in placed if "->" in line and "label=" not in line]
    assert edges and all(c is None for c, _ in edges)
    where = {line.split('label="')[1].split("(")[0]: c for c, line in placed if "shape=box" in line or "shape=octagon" in line}
    assert where == {"prim::If": None, "aten::relu": "prim::If block0", "aten::neg": "prim::If block1",
                     "prim::Loop": None, "aten::add": "prim::Loop block0"}  # fmt: skip


def test_labels_are_ir_text_not_python_reprs() -> None:
    """Constants read as the IR prints them: "a" not 'a', {0.5} not TensorLiteral(...)."""
    text = """graph(%x : Tensor):
  %s : str = prim::Constant[value="same"]()
  %h : Tensor = prim::Constant[value={0.5}]()
  %l : int[] = prim::Constant[value=[1, 2]]()
  %y : Tensor = aten::mul(%x, %h)
  %z : Tensor = aten::sum(%y, %l)
  %w : Tensor = aten::div(%z, %x, %s)
  return (%w)
"""
    dot = to_dot(compiler.parse(text, "m.ir"))
    labels = boxes(dot)
    assert "aten::mul(·, {0.5})\\nTensor" in labels
    assert "aten::sum(·, [1, 2])\\nTensor" in labels
    assert 'label="aten::div(·, ·, \\"same\\")\\nTensor"' in dot
    assert "TensorLiteral" not in dot and "'" not in dot


def _layered_module(n_layers: int, per_layer: int) -> str:
    """A scripted-module-like graph: each layer reads its weight through GetAttr chains."""
    lines = ["graph(%self : __torch__.Net, %x : Tensor):"]
    prev = "%x"
    for i in range(n_layers):
        lines.append(f'  %layer{i} : __torch__.Block = prim::GetAttr[name="layer{i}"](%self)')
        lines.append(f'  %w{i} : Tensor = prim::GetAttr[name="weight"](%layer{i})')
        for j in range(per_layer):
            lines.append(f"  %h{i}_{j} : Tensor = aten::mul({prev}, %w{i})")
            prev = f"%h{i}_{j}"
            lines.append(f"  %r{i}_{j} : Tensor = aten::relu({prev})")
            prev = f"%r{i}_{j}"
    lines.append(f"  return ({prev})")
    return "\n".join(lines) + "\n"


def test_large_graph_is_collapsed_to_one_box_per_module() -> None:
    """Past COLLAPSE_AT boxes the picture has one box per top-level module (named, with
    its op counts) and one edge per connection; collapse=False (irc viz --expand) draws
    every node again."""
    from compiler.viz import COLLAPSE_AT

    module = compiler.parse(_layered_module(8, 12), "net.ir")
    n_ops = sum(1 for n in module.main.walk())
    assert n_ops > COLLAPSE_AT
    dot = to_dot(module)
    labels = re.findall(r'shape=box, style=rounded, label="([^"]*)"', dot)
    assert labels == [f"layer{i}\\n24 ops: mul x12, relu x12" for i in range(8)]
    # %x -> layer0 -> ... -> layer7 -> return (no edge from %self: reading weights is no data flow)
    assert len(re.findall(r" -> ", dot)) == 1 + 7 + 1
    assert "%self" not in dot
    assert len(boxes(to_dot(module, collapse=False))) == n_ops
    small = compiler.parse(_layered_module(2, 2), "net.ir")
    assert len(boxes(to_dot(small))) == sum(1 for _ in small.main.walk())  # small graphs stay expanded


@pytest.mark.torch
def test_resnet18_fits_on_a_screen() -> None:
    """A scripted ResNet-18 (about 900 nodes inlined) and its traced form draw as a
    handful of module boxes: conv1, the four layers, fc."""
    pytest.importorskip("torch")
    import types

    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18().eval()
    for graph in (torch.jit.script(model).inlined_graph, torch.jit.trace(model, torch.randn(1, 3, 32, 32)).inlined_graph):
        dot = to_dot(compiler.parse(str(graph), "resnet.ir"))
        names = [label.split("\\n")[0] for label in re.findall(r'shape=box, style=rounded, label="([^"]*)"', dot)]
        assert {"conv1", "layer1", "layer2", "layer3", "layer4", "fc"} <= set(names) and len(names) <= 12, names


def _box_edges(dot: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """The collapsed picture's boxes (id -> first label line) and edges (from, to, label)."""
    boxes_ = {m[0]: m[1].split("\\n")[0] for m in re.findall(r'^\s*(\w+) \[shape=\w+, [^\n]*?label="([^"]*)"', dot, re.M)}
    edges = [(a, b, label or "") for a, b, label in re.findall(r'^\s*(\w+) -> (\w+)(?: \[label="([^"]*)"\])?;', dot, re.M)]
    return boxes_, edges


def _acyclic(edges: list[tuple[str, str, str]]) -> bool:
    graph: dict[str, set[str]] = {}
    for a, b, _ in edges:
        graph.setdefault(a, set()).add(b)
    state: dict[str, int] = {}

    def visit(n: str) -> bool:
        state[n] = 1
        for m in graph.get(n, ()):
            if state.get(m) == 1 or (m not in state and not visit(m)):
                return False
        state[n] = 2
        return True

    return all(visit(n) for n in list(graph) if n not in state)


@pytest.mark.torch
def test_a_pt_draws_each_node_in_the_module_that_owns_it(tmp_path: Path) -> None:
    """A traced archive drawn collapsed: relu and maxpool (modules without weights) hold
    their own ops, bn1 holds only batch_norm, the root's own flatten and the final tuple
    are the root's, no edge runs backwards (a cycle), and the edges carry the shapes the
    traced example inputs give."""
    torch = pytest.importorskip("torch")
    from compiler.cli import _viz_source

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn1 = torch.nn.BatchNorm2d(4)
            self.relu = torch.nn.ReLU(inplace=True)
            self.maxpool = torch.nn.MaxPool2d(2)
            self.fc = torch.nn.Linear(64, 5)
            self.head = torch.nn.Linear(5, 2)

        def forward(self, x: torch.Tensor):
            y = self.fc(torch.flatten(self.maxpool(self.relu(self.bn1(self.conv1(x)))), 1))
            return y, self.head(y)

    pt = tmp_path / "net.pt"
    torch.jit.save(torch.jit.trace(Net().eval(), torch.randn(1, 3, 8, 8)), str(pt))
    text, shapes = _viz_source(str(pt))
    dot = to_dot(compiler.parse(text, str(pt)), collapse=True, shapes=shapes)
    labels = dict(re.findall(r'label="(\w+)\\n(\d+ ops: [^"]*)"', dot))
    assert "relu" in labels["relu"] and "max_pool2d" in labels["maxpool"], labels
    assert "relu" not in labels["bn1"] and "max_pool2d" not in labels["bn1"]
    assert "flatten" in dot and "flatten" not in labels["maxpool"] and "flatten" not in labels["fc"]
    boxes_, edges = _box_edges(dot)
    assert _acyclic(edges)
    assert "1x3x8x8" in {label for _, _, label in edges} and "1x4x4x4" in {label for _, _, label in edges}
    assert not [b for b in boxes_.values() if b.startswith("%self")]


def test_getattr_boxes_name_their_attribute() -> None:
    """In the expanded picture a prim::GetAttr box says which attribute it reads."""
    module = compiler.parse(
        "graph(%self : __torch__.M, %x : Float(2, 3)):\n"
        '  %w : Tensor = prim::GetAttr[name="weight"](%self)\n'
        "  %y : Float(2, 3) = aten::mul(%x, %w)\n"
        "  return (%y)\n",
        "m.ir",
    )
    dot = to_dot(module, collapse=False)
    assert "prim::GetAttr[weight]" in dot
    assert 'label="2x3"' in dot  # a refined type's shape on its edge
