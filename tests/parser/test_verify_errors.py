"""compiler.verify rejects each kind of malformed IR with an IRValidationError at the
offending node's span, and accepts what the parser builds from good text."""

from __future__ import annotations

import re

import pytest

from compiler import types as T
from compiler.diagnostics import IRValidationError
from compiler.parser import parse
from compiler.verify import assignable, verify
from vm.ir.graph import Node, Use

GOOD = """graph(%x : Tensor, %c : bool, %n : int):
  %one : int = prim::Constant[value=1]()
  %l : int[] = prim::ListConstruct(%one, %n)
  %t : (Tensor, int) = prim::TupleConstruct(%x, %one)
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      -> (%a)
    block1():
      -> (%x)
  %r : int = prim::Loop(%n, %c, %one)
    block0(%i : int, %acc : int):
      %acc2 : int = aten::add(%acc, %i)
      -> (%c, %acc2)
  return (%y, %r, %l, %t)
"""


def good():
    return parse(GOOD, "good.ir")


def node(module, kind: str) -> Node:
    return next(n for n in module.main.walk() if n.kind == kind)


def expect(module, *words: str, line: int | None = None) -> IRValidationError:
    with pytest.raises(IRValidationError) as info:
        verify(module)
    for word in words:
        assert word in info.value.message, info.value.message
    if line is not None:
        assert info.value.span is not None and info.value.span.line == line, str(info.value)
        assert str(info.value).startswith(f"good.ir:{line}:")
    return info.value


def test_good_graph_verifies() -> None:
    verify(good())


def test_use_list_with_an_extra_use() -> None:
    """A Use recorded on a value that no operand slot matches."""
    m = good()
    relu = node(m, "aten::relu")
    m.main.inputs[1].uses.append(Use(relu, 5))
    expect(m, "use list of %c")


def test_use_list_missing_a_use() -> None:
    """An operand whose Use was dropped from its value's list."""
    m = good()
    add = node(m, "aten::add")
    add.inputs[0].uses.clear()
    expect(m, "use list of %acc")


def test_value_from_a_sibling_block_is_out_of_scope() -> None:
    """block1 of an If cannot see what block0 defined."""
    m = good()
    if_node = node(m, "prim::If")
    a = if_node.blocks[0].nodes[0].output
    if_node.blocks[1].replace_return(0, a)
    expect(m, "%a is used out of scope")


def test_use_before_definition() -> None:
    """Moving a use above its producer is caught at the user's span."""
    m = good()
    listc = node(m, "prim::ListConstruct")
    const = node(m, "prim::Constant")
    m.main.block.move_before(listc, const)
    expect(m, "%one is used out of scope or before", line=3)


def test_value_defined_twice() -> None:
    """Two values with the same name in one graph."""
    m = good()
    node(m, "aten::relu").output.name = "x"
    expect(m, "%x is defined twice", line=7)


def test_if_arity_after_a_bad_edit() -> None:
    """An If whose branch lost its return."""
    m = good()
    node(m, "prim::If").blocks[1].remove_return(0)
    expect(m, "block1 returns 0", line=10)  # block1's `-> (...)` line


def test_loop_arity_after_a_bad_edit() -> None:
    """A Loop body that returns the condition only."""
    m = good()
    node(m, "prim::Loop").blocks[0].remove_return(1)
    expect(m, "must return 2 value(s)")


def test_broken_owner_link() -> None:
    m = good()
    node(m, "aten::relu").owner = m.main.block
    expect(m, "does not point back", line=7)


@pytest.mark.parametrize(
    "decl,words",
    [
        ("%k : Tensor = prim::Constant[value=3]()", ["declared Tensor", "3 is not a Tensor"]),
        ('%k : int = prim::Constant[value="s"]()', ["'s' is not a int"]),
        ("%k : bool = prim::Constant[value=2]()", ["2 is not a bool"]),
        ("%k : float[] = prim::Constant[value=[1., \"a\"]]()", ["'a' is not a float"]),
        ("%k : int = prim::Constant[value={2}]()", ["is not a int"]),
        ("%k : int = prim::Constant()", ["is None, but %k is declared int"]),
        ("%k : int = prim::ListConstruct(%n)", ["prim::ListConstruct produces a list"]),
        ("%k : Tensor[] = prim::ListConstruct(%n)", ["element %n: int where Tensor"]),
        ("%k : (int, int) = prim::TupleConstruct(%n)", ["TupleConstruct of 1 values"]),
        ("%k : Tensor, %j : int = prim::TupleUnpack(%p)", ["output %k: int where Tensor"]),
    ],
)
def test_declared_types_against_what_nodes_produce(decl: str, words: list[str]) -> None:
    """Constants, list/tuple construction and unpacking check their declared types."""
    text = f"graph(%n : int, %p : (int, int)):\n  {decl}\n  return (%n)\n"
    m = parse(text, "good.ir")
    expect(m, *words, line=2)


def test_if_output_type_against_branch_returns() -> None:
    text = """graph(%c : bool, %x : Tensor, %n : int):
  %y : int = prim::If(%c)
    block0():
      -> (%n)
    block1():
      -> (%x)
  return (%y)
"""
    expect(parse(text, "good.ir"), "output %y (returned %x): Tensor where int", line=2)


def test_loop_carried_type_against_initial_value() -> None:
    text = """graph(%c : bool, %x : Tensor, %n : int):
  %r : int = prim::Loop(%n, %c, %x)
    block0(%i : int, %acc : int):
      -> (%c, %acc)
  return (%r)
"""
    expect(parse(text, "good.ir"), "loop-carried %acc (initial %x)", line=2)


def test_assignable_is_lenient_only_where_types_are_not_modelled() -> None:
    assert assignable(T.NONE, T.OptionalType(T.INT))
    assert assignable(T.TensorType("Float", (2,)), T.TENSOR)
    assert assignable(T.INT, T.SCALAR) and assignable(T.ClassType("__torch__.M"), T.INT)
    assert not assignable(T.INT, T.TENSOR)
    assert not assignable(T.ListType(T.INT), T.ListType(T.STR))
    assert not assignable(T.TupleType((T.INT,)), T.TupleType((T.INT, T.INT)))


# Texts that parse (PyTorch's parser takes them too) but cannot run.  The first line says
# where the verifier must put the error and what it must say, clox-style.
UNRUNNABLE = {
    "if_one_block": """# ERROR: 3:4 prim::If must have 2 blocks, found 1
graph(%c : bool):
   = prim::If(%c)
    block0():
      -> ()
  return (%c)
""",
    "if_three_blocks": """# ERROR: 3:3 prim::If must have 2 blocks, found 3
graph(%c : bool):
  prim::If(%c)
    block0():
      -> ()
    block1():
      -> ()
    block2():
      -> ()
  return (%c)
""",
    "if_branch_arity": """# ERROR: 5:7 prim::If has 1 output(s) but block0 returns 0
graph(%c : bool):
  %y : int = prim::If(%c)
    block0():
      -> ()
    block1():
      -> (%c)
  return (%y)
""",
    "if_second_branch_arity": """# ERROR: 8:7 prim::If has 0 output(s) but block1 returns 1
graph(%c : bool):
  prim::If(%c)
    block0():
      %a : int = prim::Constant[value=1]()
      -> ()
    block1():
      -> (%c)
  return (%c)
""",
    "if_block_params": """# ERROR: 4:5 prim::If block0 must take no parameters
graph(%c : bool):
  prim::If(%c)
    block0(%p : int):
      -> ()
    block1():
      -> ()
  return (%c)
""",
    "loop_params": """# ERROR: 4:5 must take 2 parameter(s)
graph(%n : int, %c : bool, %a : int):
  %r : int = prim::Loop(%n, %c, %a)
    block0(%i : int):
      -> (%c, %i)
  return (%r)
""",
    "loop_returns": """# ERROR: 5:7 must return 2 value(s) (condition + 1 carried), returns 1
graph(%n : int, %c : bool, %a : int):
  %r : int = prim::Loop(%n, %c, %a)
    block0(%i : int, %b : int):
      -> (%c)
  return (%r)
""",
    "loop_outputs": """# ERROR: 3:3 prim::Loop carries 1 value(s) but has 0 output(s)
graph(%n : int, %c : bool, %a : int):
  prim::Loop(%n, %c, %a)
    block0(%i : int, %b : int):
      -> (%c, %b)
  return (%n)
""",
    "loop_no_block": """# ERROR: 3:3 prim::Loop must have 1 block, found 0
graph(%n : int, %c : bool):
  %r : int = prim::Loop(%n, %c)
  return (%r)
""",
}


@pytest.mark.parametrize("name", sorted(UNRUNNABLE))
def test_unrunnable_text_parses_and_the_verifier_names_the_wrong_line(name: str) -> None:
    """The parser takes the text (as PyTorch's does); the verifier raises at the line that
    is wrong: a branch's return count at its `->` line, a block count at the node."""
    text = UNRUNNABLE[name]
    want = re.match(r"# ERROR: (\d+):(\d+) (.*)", text)
    assert want is not None
    line, col, words = int(want.group(1)), int(want.group(2)), want.group(3)
    module = parse(text, f"{name}.ir")
    with pytest.raises(IRValidationError) as info:
        verify(module)
    err = info.value
    assert err.span is not None and (err.span.line, err.span.col) == (line, col), str(err)
    assert words in err.message, str(err)
    assert str(err).split("\n")[1] == "  " + text.split("\n")[line - 1]
