"""The IR strings of PyTorch's own parser tests (test/cpp/jit/test_irparser.cpp).

Where PyTorch checks an exact round trip (``checkRoundtrip``), so do we: our printer must
give back the very same text.  Where it only parses, we parse and check what the C++ test
asserts: ``ValueReuse`` redefines ``%x`` and later uses see the newest definition, and
``If``/``If2`` give ``prim::If`` a single block, which parses (running it is the
verifier's question, tests/parser/test_verify_errors.py).  Its malformed inputs are rejected by
both parsers.  Where torch is installed, ``torch._C.parse_ir`` reads every case too and
both parsers must build the same graph (kinds, wiring, blocks).
"""

from __future__ import annotations

import pytest

from compiler import types as T
from compiler.diagnostics import IRSyntaxError, IRValidationError
from compiler.parser import parse
from compiler.verify import verify
from vm.ir.printer import print_module

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
    "If": """graph(%0 : Tensor,
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
""",
    "If2": """graph(%0 : Tensor,
      %1 : Tensor,
      %2 : Tensor):
  %3 : int = prim::Constant[value=-1]()
  %4 : Tensor = aten::add(%0, %1, %3)
  %5 : Tensor = prim::If(%2)
    block0():
      %6 : int = prim::Constant[value=1]()
      %7 : Tensor = aten::add(%1, %3, %6)
      %8 : int = prim::Constant[value=1]()
      %9 : Tensor = aten::add(%7, %3, %8)
      -> (%9)
  %10 : int = prim::Constant[value=-987]()
  %11 : Tensor = aten::add(%5, %3, %10)
  return (%11)
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


def test_single_block_if_parses_and_the_verifier_refuses_to_run_it() -> None:
    """IRParserTest.If: a one-block prim::If is IR (it prints back as given); it is not
    runnable, and the verifier says so at the node."""
    module = parse(ROUNDTRIP["If"], "if.ir")
    if_node = module.main.nodes[2]
    assert if_node.kind == "prim::If" and len(if_node.blocks) == 1
    assert if_node.blocks[0].returns[0].name == "9" and module.main.nodes[4].inputs[0] is if_node.output
    with pytest.raises(IRValidationError, match="prim::If must have 2 blocks, found 1") as info:
        verify(module)
    assert info.value.span is not None and (info.value.span.line, info.value.span.col) == (6, 3)


def test_value_reuse_rebinds_the_name() -> None:
    """IRParserTest.ValueReuse: `%x = a::a(%x); %x = b::b(%x)` reads each %x as the newest
    definition so far: a takes the input, b takes a's output, the graph returns b's."""
    g = parse(VALUE_REUSE).main
    x0 = g.inputs[0]
    a, b = g.nodes
    assert (a.kind, b.kind) == ("a::a", "b::b")
    assert a.inputs == [x0] and b.inputs == [a.output] and g.outputs == [b.output]


def test_rebound_names_stay_unique_and_print_back() -> None:
    """The value that loses its name is renamed as TorchScript renames it (``x.1``, the next
    free suffix), so names stay unique, the verifier accepts the graph and its printed
    form reads back to the same graph."""
    module = parse(VALUE_REUSE + "\n")
    names = [module.main.inputs[0].name] + [n.output.name for n in module.main.nodes]
    assert names == ["x.1", "x.2", "x"]
    verify(module)
    printed = print_module(module)
    assert print_module(parse(printed)) == printed


def test_rebinding_skips_suffixes_the_text_uses_later() -> None:
    """Renaming never takes a name that another value holds, whichever order they come in."""
    text = """graph(%x : int, %x.1 : int):
  %x : int = aten::add(%x, %x.1)
  %x.1 : int = aten::mul(%x, %x.1)
  %x : int = aten::sub(%x, %x.1)
  return (%x, %x.1)
"""
    module = parse(text)
    g = module.main
    values = [*g.inputs, *(n.output for n in g.nodes)]
    assert len({v.name for v in values}) == len(values)
    add, mul, sub = g.nodes
    assert add.inputs == g.inputs and mul.inputs == [add.output, g.inputs[1]]
    assert sub.inputs == [add.output, mul.output] and g.outputs == [sub.output, mul.output]
    verify(module)
    printed = print_module(module)
    assert print_module(parse(printed)) == printed


def test_node_without_outputs_needs_no_equals_sign() -> None:
    """`prim::If(%c)` (irparser.cpp reads the outputs only when the line starts with %):
    a node with no outputs, printed back in PyTorch's own ` = prim::If(%c)` form."""
    text = """graph(%c : bool, %x : Tensor):
  prim::If(%c)
    block0():
      prim::RaiseException(%x)
      -> ()
    block1():
      -> ()
  aten::relu_(%x)
  return (%x)
"""
    module = parse(text)
    if_node, relu = module.main.nodes
    assert if_node.outputs == [] and relu.outputs == [] and relu.kind == "aten::relu_"
    assert if_node.blocks[0].nodes[0].kind == "prim::RaiseException"
    assert if_node.span is not None and (if_node.span.line, if_node.span.col) == (2, 3)
    verify(module)
    printed = print_module(module)
    assert "\n   = prim::If(%c)\n" in printed and "\n   = aten::relu_(%x)\n" in printed
    assert print_module(parse(printed)) == printed


def _torch_structure(graph) -> list:
    """Kinds, wiring (each input as the index of its definition) and blocks of a torch graph."""
    index: dict = {}

    def define(v) -> None:
        index[v.unique()] = len(index)

    def block(b) -> list:
        for p in b.inputs():
            define(p)
        body = []
        for n in b.nodes():
            ins = [index[v.unique()] for v in n.inputs()]
            subs = [block(sub) for sub in n.blocks()]
            for o in n.outputs():
                define(o)
            body.append((n.kind(), ins, len(list(n.outputs())), subs))
        return [len(list(b.inputs())), body, [index[v.unique()] for v in b.outputs()]]

    return block(graph.block())


def _our_structure(graph) -> list:
    index: dict = {}

    def block(b) -> list:
        for p in b.params:
            index[id(p)] = len(index)
        body = []
        for n in b.nodes:
            ins = [index[id(v)] for v in n.inputs]
            subs = [block(sub) for sub in n.blocks]
            for o in n.outputs:
                index[id(o)] = len(index)
            body.append((n.kind, ins, len(n.outputs), subs))
        return [len(b.params), body, [index[id(v)] for v in b.returns]]

    return block(graph.block)


TORCH_CASES = {**ROUNDTRIP, "Basic": BASIC, "ValueReuse": VALUE_REUSE, "FileCheck": FILECHECK,
               "NoOutputs": "graph(%c : bool):\n  prim::If(%c)\n    block0():\n      -> ()\n  return (%c)\n"}  # fmt: skip


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(TORCH_CASES))
def test_same_graph_as_torch_parser(name: str) -> None:
    """torch._C.parse_ir and compiler.parse build the same graph from each case."""
    torch = pytest.importorskip("torch")
    text = TORCH_CASES[name]
    assert _our_structure(parse(text).main) == _torch_structure(torch._C.parse_ir(text))
