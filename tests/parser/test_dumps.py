"""Real PyTorch dumps (tests/data/dumps, written by tools/dump_parser_cases.py, and the corpus
dumps of tests/data/corpus) parse, verify, print back, and parse again to the same module.

Beyond the round trip, a few dumps are checked for what the parser must have understood:
fusion groups and their sub-graphs, Python ops, tensor literals, strings with escapes,
source locations and scopes.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from compiler import types as T
from compiler.parser import parse
from compiler.verify import verify
from tests.support import paths
from vm.ir.graph import Graph, Module, TensorLiteral
from vm.ir.literals import AnnotatedList
from vm.ir.printer import print_module, structural_diff

DUMPS = sorted(paths.DUMPS.glob("*.ir"))
CORPUS = sorted(paths.CORPUS.glob("*.ir"))


def load(name: str) -> Module:
    path = paths.DUMPS / f"{name}.ir"
    return parse(path.read_text(), str(path))


def constants(graph: Graph) -> dict[str, object]:
    return {n.output.name: n.attrs.get("value") for n in graph.walk() if n.kind == "prim::Constant"}


def test_there_are_enough_dumps() -> None:
    """The dump set covers the ~30 cases tools/dump_parser_cases.py writes."""
    assert len(DUMPS) >= 30


@pytest.mark.parametrize("path", DUMPS + CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_dump_parses_verifies_and_round_trips(path: Path) -> None:
    """parse -> verify -> print -> parse gives a structurally equal module, and printing
    after one parse is a fixed point (print(parse(print(parse(t)))) == print(parse(t)))."""
    text = path.read_text()
    module = parse(text, str(path))
    verify(module)
    once = print_module(module)
    again = parse(once, str(path))
    assert structural_diff(module, again) is None
    verify(again)
    assert print_module(again) == once


@pytest.mark.parametrize("path", DUMPS + CORPUS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_printer_reproduces_pytorch_text(path: Path) -> None:
    """Our printer writes exactly what PyTorch printed (layout, floats, strings, tensors)."""
    text = path.read_text()
    assert print_module(parse(text, str(path))) == text.rstrip("\n") + "\n"


def test_fusion_groups_become_nodes_with_subgraphs() -> None:
    """`prim::TensorExprGroup_N(...)` + `with prim::TensorExprGroup_N = graph(...)` becomes a
    prim::TensorExprGroup node holding its Subgraph, even inside If blocks; TypeCheck keeps
    its list of types."""
    module = load("fused_branches")
    groups = [n for n in module.main.walk() if n.kind == "prim::TensorExprGroup"]
    assert len(groups) == 2 and not module.functions
    for group in groups:
        sub = group.attrs["Subgraph"]
        assert isinstance(sub, Graph)
        assert len(sub.inputs) == len(group.inputs) and len(sub.outputs) == len(group.outputs)
    assert groups[0].owner is not module.main.block  # nested in the If's blocks
    check = next(n for n in module.main.walk() if n.kind == "prim::TypeCheck")
    types = check.attrs["types"]
    assert isinstance(types, list) and all(isinstance(t, T.TensorType) for t in types)
    assert types[0] == T.TensorType("Float", (3, 3), (3, 1), False, "cpu")


def test_python_op_keeps_name_attributes_and_scalars() -> None:
    """`^_MyReLU[inplace=0, ...](2.5)(%x)` is a prim::PythonOp with its name and scalars."""
    module = load("traced_python_op")
    op = next(n for n in module.main.walk() if n.kind == "prim::PythonOp")
    assert op.attrs["^name"] == "_MyReLU" and op.attrs["^scalars"] == "(2.5)"
    assert op.attrs["inplace"] == 0 and op.attrs["module"] == "__main__"
    assert [v.name for v in op.inputs] == ["x"]


def test_frozen_constants_keep_values_shapes_and_dtypes() -> None:
    """Tensor literals keep their values, shape, dtype and approximate=True (PyTorch rounds
    them), including the scaled form `0.001 * ...` and N-d slices `(1,.,.) = ...`;
    list, dict, tuple and annotate(...) constants keep their payloads."""
    values = constants(load("frozen_constants").main)
    cube = values["self.cube"]
    assert isinstance(cube, TensorLiteral) and cube.shape == (2, 2, 2) and cube.dtype == "Float"
    assert cube.approximate and cube.values is not None and math.isclose(cube.values[1], 1 / 3, abs_tol=1e-4)
    small = values["self.small"]
    assert isinstance(small, TensorLiteral) and small.values is not None
    assert all(math.isclose(a, b, rel_tol=1e-3) for a, b in zip(small.values, (1e-5, 2e-5, 3e-3)))
    ints = values["self.ints"]
    assert isinstance(ints, TensorLiteral) and ints.values == (1, -2, 3, 4) and not ints.approximate
    assert values["self.d"] == {"a": 1, "b": 2}
    assert values["self.t"] == (1, 2.5, "x")
    assert values["self.fl"] == [1.5, 2.0]
    assert isinstance(values["self.ls"], AnnotatedList) and values["self.ls"].annotation == "List[int]"
    mask = constants(load("frozen_buffers").main)["self.mask"]
    assert isinstance(mask, TensorLiteral) and mask.values == (True, False, True, True)


def test_strings_and_floats_decode_like_cpp_printed_them() -> None:
    """Escapes and PyTorch's signed-octal bytes decode to the original text; C++ floats
    (`1.`, `-0.`, `1e+20`, `inf`, `nan`, `10000000000000000`) decode to the right floats."""
    strings = set(constants(load("script_strings").main).values())
    assert 'quote" \\ back\tslash\n' in strings and "é" in strings
    floats = [v for v in constants(load("script_floats").main).values() if isinstance(v, float)]
    assert {0.1, 1.0, -1.0, 1e-5, 1e20, 1e16, math.inf, -math.inf} <= set(floats)
    assert any(math.isnan(f) for f in floats)
    assert any(f == 0 and math.copysign(1, f) < 0 for f in floats)


def test_sources_and_scopes_are_kept() -> None:
    """`# file:line:col` is Node.source; `, scope: a/b` is Node.scope; spans point at the dump."""
    module = load("traced_mlp_inlined")
    linear = next(n for n in module.main.walk() if n.kind == "aten::linear")
    assert linear.scope is not None and linear.scope.startswith("__module.seq")
    assert linear.source is not None and linear.source.startswith("torch/nn/modules/linear.py:")
    assert linear.span is not None and linear.span.file.endswith("traced_mlp_inlined.ir")
    assert linear.span.source_line is not None and "aten::linear" in linear.span.source_line


def test_class_typed_self_and_module_types() -> None:
    """`%self : __torch__...Sequential`-style inputs parse as class types."""
    module = load("module_transformer_layer")
    assert isinstance(module.main.inputs[0].type, T.ClassType)
    assert module.main.inputs[0].type.qualname.startswith("__torch__.")
