"""The IR strings of PyTorch's own parser tests (test/cpp/jit/test_irparser.cpp).

Where PyTorch checks an exact round trip (``checkRoundtrip``), so do we: our printer must
give back the very same text.  Where it only parses, we parse and check what the C++ test
asserts.  Three of its inputs are deliberately *not* our format, and we assert the clear
error instead: ``ValueReuse`` redefines ``%x`` (our IR is strict SSA), and ``If``/``If2``
give ``prim::If`` a single block (ours needs both branches).  Its malformed inputs are
rejected by both parsers.
"""

from __future__ import annotations

import pytest

from compiler import types as T
from compiler.diagnostics import IRSyntaxError, IRValidationError
from compiler.parser import parse
from compiler.printer import print_module

ROUNDTRIP = {
    "NestedBlock": """graph():
  %0 : Tensor = a::a()
    block0():
      %1 : Tensor = b::b()
        block0():
          %2 : Tensor = c::c()
          -> ()
      -> ()
  %3 : Tensor = d::d()
  return (%3)
""",
    "Attributes": """graph(%0 : Tensor,
      %1 : Tensor,
      %2 : Tensor):
  %3 : int, %4 : Tensor = qqq::qqq[i_asdf=2, f_asdf=3., s_asdf="hello", ss_asdf=["hello world", "bye bye"]](%0)
  %5 : int, %6 : Tensor = ppp::ppp[i_asdf=2, f_asdf=3., s_asdf="\\"\\"\\"\\"\\nhe\\"llo", q=[3, 2, 4]](%0)
  %7 : float = vvv::vvv[s_asdf="hello"](%0)
  %8 : string = z::z()
  return (%7)
""",
    "OptionalTypes": """graph(%0 : Tensor,
      %1 : Tensor,
      %2 : Tensor):
  %3 : int? = prim::Constant()
  return (%3)
""",
    "StarTensor": """graph(%0 : Tensor,
      %1 : Tensor,
      %2 : Tensor):
  %3 : Float(*, *, *) = prim::Constant()
  return (%3)
""",
    "UnshapedTensor": """graph(%0 : Tensor,
      %1 : Tensor,
      %2 : Tensor):
  %3 : Long() = prim::Constant()
  return (%3)
""",
    "ShapedTensor": """graph(%0 : Tensor,
      %1 : Tensor,
      %2 : Tensor):
  %3 : Double(4, 4, 5) = prim::Constant()
  return (%3)
""",
    "NestedContrainer": """graph():
  %0 : float[] = prim::Constant[value=[1., 2., 3.]]()
  %1 : str[] = prim::Constant[value=["ab", "cd", "ef"]]()
  %2 : (float[], str[]) = prim::TupleConstruct(%0, %1)
  return (%2)
""",
    "TensorShapes": """graph(%a : Float(4, 5),
      %b : Float(4, 5, strides=[5, 1]),
      %c : Double(*, *)):
  return (%a)
""",
    "DeviceAndRequiresGradTensors": """graph(%a : Float(*, *, device=cpu),
      %b : Float(*, *, requires_grad=1),
      %c : Long(5, 10, requires_grad=1, device=cpu),
      %d : Float(5, requires_grad=0, device=cuda:2),
      %e : Long(4, 3, 1, strides=[6, 2, 1], requires_grad=0, device=cuda:1),
      %f : Float(),
      %g : Float(device=cpu),
      %h : Float(requires_grad=1),
      %i : Float(requires_grad=0, device=cuda:1),
      %j : Double(*, *, requires_grad=0)):
  return (%a)
""",
    "PartialStarTensor": """graph(%x : Float(10, *, 10)):
  return (%x)
""",
    "ComplexTensorAttributes": """graph(%x : Double(*, 200, *, requires_grad=1, device=cuda:1),
      %b : Float(5, *, requires_grad=1),
      %c : Long(*, 10, device=cpu)):
  return (%x)
""",
}

BASIC = """
graph(%0 : Tensor, %1 : Tensor):
  %2 : Tensor = foo::add(%0, %1)
  %res, %3 = foo::mul(%0, %2)
  %x, %y = foo::combine(%res, %2, %3)
  return (%x, %y, %res)"""

FILECHECK = """
    graph(%a):
    # CHECK: return
      return (%a)"""

IF_ONE_BLOCK = """
graph(%0 : Tensor,
      %1 : Tensor,
      %2 : Tensor):
  %3 : int = prim::Constant[value=1]()
  %4 : Tensor = aten::add(%0, %1, %3)
  %5 : Tensor = prim::If(%2)
    block0():
      %6 : int = prim::Constant[value=1]()
      %7 : Tensor = aten::add(%1, %3, %6)
      %8 : int = prim::Constant[value=1]()
      %9 : Tensor = aten::add(%7, %3, %8)
      -> (%9)
  %10 : int = prim::Constant[value=1]()
  %11 : Tensor = aten::add(%5, %3, %10)
  return (%11)
"""

VALUE_REUSE = """
graph(%x):
  %x = a::a(%x)
  %x = b::b(%x)
  return (%x)"""


@pytest.mark.parametrize("name", sorted(ROUNDTRIP))
def test_check_roundtrip_cases_print_back_identically(name: str) -> None:
    """PyTorch's checkRoundtrip cases: print(parse(text)) == text, byte for byte."""
    text = ROUNDTRIP[name]
    assert print_module(parse(text, f"{name}.ir")) == text


def test_basic_multi_output_untyped_values() -> None:
    """Untyped outputs, several outputs per node, wiring as IRParserTest.Basic asserts."""
    g = parse(BASIC).main
    x, y, res = g.outputs
    assert x.node is y.node and x.node.kind == "foo::combine"
    assert [v.name for v in x.node.inputs] == ["res", "2", "3"]
    assert res.node.kind == "foo::mul" and res.node.outputs[1].name == "3"
    assert [v.name for v in res.node.inputs] == ["0", "2"] and x.type is None


def test_untyped_input_and_standalone_comment_lines() -> None:
    """`graph(%a):` and a `# CHECK:` line on its own (ignored, not a source location)."""
    module = parse(FILECHECK)
    assert module.main.inputs[0].type is None and module.main.outputs == module.main.inputs


def test_strides_and_star_sizes() -> None:
    """IRParserTest.Strides: sizes, strides and unknown extents land in the TensorType."""
    a, b, c = parse(ROUNDTRIP["TensorShapes"]).main.inputs
    assert a.type == T.TensorType("Float", (4, 5))
    assert b.type == T.TensorType("Float", (4, 5), (5, 1))
    assert c.type == T.TensorType("Double", (None, None))


def test_list_constant() -> None:
    """IRParserTest.ListConstant: `[1,2,3]` is the list [1, 2, 3]."""
    g = parse("graph():\n  %d : int[] = prim::Constant[value=[1,2,3]]()\n  return (%d)\n").main
    assert g.outputs[0].node.attrs["value"] == [1, 2, 3]


@pytest.mark.parametrize(
    "text",
    [
        "graph(%0 : Tensor,\n    %1 : Tensor,\n    %2 : Tensor):\n  %3 : Double(4!, 4, 5) = prim::Constant()\n  return (%3)\n",
        "graph(%a : Float(4, strides=[5], 5)):\n  return (%a)\n",
    ],
    ids=["MalformedShapeAnnotation", "MalformedStrides"],
)
def test_malformed_inputs_are_rejected(text: str) -> None:
    with pytest.raises(IRSyntaxError):
        parse(text)


def test_single_block_if_is_rejected_with_arity_error() -> None:
    """IRParserTest.If: PyTorch's parser takes a one-block prim::If; ours requires two."""
    with pytest.raises(IRValidationError, match="prim::If must have 2 blocks") as info:
        parse(IF_ONE_BLOCK, "if.ir")
    assert info.value.span is not None and info.value.span.line == 7


def test_value_reuse_is_rejected_as_not_ssa() -> None:
    """IRParserTest.ValueReuse redefines %x; our IR is strict SSA."""
    with pytest.raises(IRValidationError, match="%x is defined twice"):
        parse(VALUE_REUSE)
