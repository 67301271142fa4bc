"""`with NAME = graph(...)` sections: fusion sub-graphs pair with their `kind_N` nodes
depth first (a sub-graph's own sections follow it), other names are module functions."""

from __future__ import annotations

import pytest

from compiler.diagnostics import IRValidationError
from compiler.parser import parse
from compiler.verify import verify
from vm.ir.graph import Graph
from vm.ir.printer import print_module

NESTED = """graph(%x : Tensor):
  %a : Tensor = prim::FusionGroup_0(%x)
  %f : Function = prim::Constant[name="helper"]()
  %b : Tensor = prim::CallFunction(%f, %a)
  %c : Tensor = prim::TensorExprGroup_1[cache_id=3](%b)
  return (%c)
with prim::FusionGroup_0 = graph(%y : Tensor):
  %z : Tensor = prim::FusionGroup_0(%y)
  return (%z)
with prim::FusionGroup_0 = graph(%p : Tensor):
  %q : Tensor = aten::relu(%p)
  return (%q)
with prim::TensorExprGroup_1 = graph(%r : Tensor):
  %s : Tensor = aten::neg(%r)
  return (%s)
with helper = graph(%h : Tensor):
  %k : Tensor = prim::FusionGroup_0(%h)
  return (%k)
with prim::FusionGroup_0 = graph(%m : Tensor):
  %n : Tensor = aten::exp(%m)
  return (%n)
"""


def test_nested_sections_pair_depth_first_and_print_back() -> None:
    module = parse(NESTED, "nested.ir")
    verify(module)
    first = module.main.nodes[0]
    outer = first.attrs["Subgraph"]
    assert first.kind == "prim::FusionGroup" and isinstance(outer, Graph)
    inner = outer.nodes[0].attrs["Subgraph"]
    assert isinstance(inner, Graph) and inner.nodes[0].kind == "aten::relu"
    group = module.main.nodes[3]
    assert group.kind == "prim::TensorExprGroup" and group.attrs["cache_id"] == 3
    assert group.attrs["Subgraph"].nodes[0].kind == "aten::neg"
    helper = module.functions["helper"]
    assert helper.nodes[0].attrs["Subgraph"].nodes[0].kind == "aten::exp"
    assert print_module(module) == NESTED


def test_section_without_a_node_is_an_error() -> None:
    text = "graph(%x : Tensor):\n  return (%x)\nwith prim::FusionGroup_0 = graph(%y : Tensor):\n  return (%y)\n"
    with pytest.raises(IRValidationError, match="no node refers to sub-graph prim::FusionGroup_0") as info:
        parse(text, "s.ir")
    assert info.value.span is not None and info.value.span.line == 3


def test_sections_out_of_order_are_an_error() -> None:
    text = NESTED.replace("prim::TensorExprGroup_1", "prim::FusionGroup_1")
    lines = text.split("with ")
    swapped = "with ".join([lines[0], lines[3], lines[1], lines[2], *lines[4:]])
    with pytest.raises(IRValidationError, match="out of order"):
        parse(swapped, "s.ir")


def test_function_defined_twice_is_an_error() -> None:
    text = "graph(%x : Tensor):\n  return (%x)\nwith f = graph(%y : Tensor):\n  return (%y)\nwith f = graph(%z : Tensor):\n  return (%z)\n"
    with pytest.raises(IRValidationError, match="function f is defined twice") as info:
        parse(text, "s.ir")
    assert info.value.span is not None and info.value.span.line == 5


def test_op_named_like_a_group_without_section_stays_an_op() -> None:
    """`my::op_0` with no section is an ordinary op kind, printed back unchanged."""
    text = "graph(%x : Tensor):\n  %y : Tensor = my::op_0(%x)\n  return (%y)\n"
    module = parse(text)
    assert module.main.nodes[0].kind == "my::op_0" and print_module(module) == text
