"""A module is planned at construction (on zeros of the typed input shapes) only when
that run cannot spin: no loop whose trip count or condition may follow from tensor
contents (``analysis.value_bound_loops``).  These tests check the analysis on loops of
every kind and that such a module plans on its first call instead."""

from __future__ import annotations

import numpy as np

import compiler
from vm import StaticModule, StaticRuntime
from vm.interpreter.machine import Interpreter
from vm.static import StaticOptions
from vm.static.plannable import value_bound_loops

OPTIONS = StaticOptions(min_managed_bytes=0)
X = "Float(8, 64, strides=[64, 1], requires_grad=0, device=cpu)"

# while x.sum() > 0: x = x - 1   (on zeros it stops at once; on other values it may not)
WHILE_ON_CONTENTS = f"""
graph(%x : {X}):
  %big : int = prim::Constant[value=9223372036854775807]()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %s0 : Tensor = aten::sum(%x, %none)
  %c0 : Tensor = aten::gt(%s0, %zero)
  %go : bool = aten::Bool(%c0)
  %y : Tensor = prim::Loop(%big, %go, %x)
    block0(%i : int, %acc : Tensor):
      %d : Tensor = aten::sub(%acc, %one, %one)
      %s : Tensor = aten::sum(%d, %none)
      %c : Tensor = aten::gt(%s, %zero)
      %more : bool = aten::Bool(%c)
      -> (%more, %d)
  %z : Tensor = aten::relu(%y)
  return (%z)
"""

# for i in range(x.size(0)): acc = acc * 0.5 + x   (a trip count from a shape)
FOR_OVER_SHAPE = f"""
graph(%x : {X}):
  %zero : int = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %n : int = aten::size(%x, %zero)
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %a : Tensor = aten::mul(%acc, %half)
      %b : Tensor = aten::add(%a, %x, %one)
      -> (%true, %b)
  %z : Tensor = aten::relu(%y)
  return (%z)
"""

# for i in range(int(x.sum())) nested under a loop over a shape: the count is carried
# through an outer loop's value before the inner loop reads it
CARRIED_COUNT = f"""
graph(%x : {X}):
  %zero : int = prim::Constant[value=0]()
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %n : int = aten::size(%x, %zero)
  %s : Tensor = aten::sum(%x, %none)
  %k : int = aten::Int(%s)
  %y : Tensor, %kk : int = prim::Loop(%n, %true, %x, %zero)
    block0(%i : int, %acc : Tensor, %c : int):
      %c2 : int = aten::add(%c, %k)
      %w : Tensor = prim::Loop(%c, %true, %acc)
        block0(%j : int, %inner : Tensor):
          %b : Tensor = aten::add(%inner, %x, %one)
          -> (%true, %b)
      -> (%true, %w, %c2)
  %z : Tensor = aten::relu(%y)
  return (%z)
"""


def _loops(source: str) -> list[str]:
    module = compiler.compile_source(source).module
    return [n.outputs[0].name for n in value_bound_loops((module.main, *module.functions.values()))]


def test_loops_bound_by_tensor_contents_are_found() -> None:
    """A ``while`` on a tensor's value and a count that reaches a loop through another
    loop's carried value are data-bound; a trip count from ``aten::size`` is not."""
    assert len(_loops(WHILE_ON_CONTENTS)) == 1
    assert _loops(FOR_OVER_SHAPE) == []
    module = compiler.compile_source(CARRIED_COUNT).module
    found = value_bound_loops((module.main,))
    assert [n.kind for n in found] == ["prim::Loop"]
    assert found[0].owner is not module.main.block, "the inner loop, whose count is carried"


def test_a_loop_over_an_int_parameter_counts_as_data_bound() -> None:
    """A non-tensor parameter (a callee's argument, say) may come from a tensor's
    contents: a loop it bounds is data-bound."""
    source = FOR_OVER_SHAPE.replace(f"%x : {X})", f"%x : {X}, %m : int)").replace("prim::Loop(%n,", "prim::Loop(%m,")
    assert len(_loops(source)) == 1


def test_a_loop_bound_by_contents_is_not_run_at_construction() -> None:
    """Typed inputs would let the module plan on zeros, but a loop that tensor values
    bound could spin on them: the module plans on its first call instead, with the
    interpreter's numbers.  A loop over a shape still plans at construction."""
    program = compiler.compile_source(WHILE_ON_CONTENTS)
    sm = StaticModule(program, options=OPTIONS)
    assert not sm.planned_from_types and sm.layouts_made == 0
    x = np.linspace(-1, 2, 8 * 64, dtype=np.float32).reshape(8, 64)
    rt = StaticRuntime(sm)
    np.testing.assert_array_equal(rt(x), Interpreter(program)(x))
    assert rt.stats["plans_made"] == 1
    shaped = StaticModule(compiler.compile_source(FOR_OVER_SHAPE), options=OPTIONS)
    assert shaped.planned_from_types and shaped.layouts_made == 1
