"""TorchScript enums: the ``Enum<...>`` type and enum-member constants in graph text, and
module attributes of enum type (timm's ``output_fmt: Format``, a ``str`` Enum).

The parser reads ``Enum<__torch__.m.Color>`` and ``prim::Constant[value=__torch__.m.Color.RED]``
and prints them back unchanged; ``aten::eq.enum`` / ``aten::ne.enum`` and ``prim::EnumName``
run on both backends; tools/export_torch.py writes an enum attribute as its member's name
and the weights binding turns that name back into the member (differential against torch).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import IRError, RunError
from compiler.parser import parse
from tests.support.paths import ROOT
from vm.core import types as T
from vm.core.enum_values import EnumValue
from vm.files.npz import compare_flat, flatten_outputs
from vm.ir.printer import print_module

GRAPH = """graph(%self : __torch__.M,
      %x.1 : Tensor):
  %2 : Enum<__torch__.Color> = prim::Constant[value=__torch__.Color.RED]() # m.py:18:25
  %3 : Enum<__torch__.timm.layers.format.Format> = prim::Constant[value=__torch__.timm.layers.format.Format.NHWC]()
  %4 : int = prim::Constant[value=1]()
  %fmt : Enum<__torch__.timm.layers.format.Format> = prim::GetAttr[name="fmt"](%self)
  %7 : bool = aten::eq(%fmt, %3) # m.py:16:11
  %x.33 : Tensor = prim::If(%7) # m.py:16:8
    block0():
      %x.5 : Tensor = aten::add(%x.1, %4, %4) # m.py:17:16
      -> (%x.5)
    block1():
      -> (%x.1)
  %color : Enum<__torch__.Color> = prim::GetAttr[name="color"](%self)
  %11 : bool = aten::ne(%color, %2) # m.py:18:11
  %name : str = prim::EnumName(%color)
  return (%x.33, %11, %name)
"""


def test_enum_types_and_member_constants_parse_and_print_back_unchanged() -> None:
    """``Enum<Q>`` is an EnumType, a constant naming ``Q.MEMBER`` is that member, and the
    printer writes both exactly as PyTorch printed them."""
    module = parse(GRAPH, "m.ir")
    nodes = list(module.main.nodes)
    assert nodes[0].outputs[0].type == T.EnumType("__torch__.Color")
    assert nodes[0].attrs["value"] == EnumValue("__torch__.Color", "RED")
    assert nodes[1].attrs["value"] == EnumValue("__torch__.timm.layers.format.Format", "NHWC")
    assert print_module(module) == GRAPH


def test_a_constant_naming_no_member_of_its_declared_enum_is_an_error_on_its_line() -> None:
    """A constant whose qualified name is not under its declared enum class is refused by
    the verifier, naming the constant's line."""
    text = GRAPH.replace("value=__torch__.Color.RED", "value=__torch__.Shade.RED")
    with pytest.raises(IRError) as err:
        compiler.compile_source(text, "m.ir")
    assert "m.ir:3:" in str(err.value) and "Enum<__torch__.Color>" in str(err.value)


@pytest.mark.parametrize(("fmt", "color"), [("NHWC", "RED"), ("NCHW", "GREEN")])
def test_enum_attributes_bind_from_member_names_and_compare_on_both_backends(fmt: str, color: str) -> None:
    """An enum attribute stored as its member's name binds to that member; ``==``, ``!=``
    and ``.name`` give what TorchScript gives for it."""
    program = compiler.compile_source(GRAPH, "m.ir")
    weights = {"fmt": np.array(fmt), "color": np.array(color)}
    x = np.arange(3, dtype=np.float32)
    for make in (vm.Interpreter, vm.StaticRuntime):
        y, differs, name = make(program, weights)(x)
        np.testing.assert_array_equal(y, x + 1 if fmt == "NHWC" else x)
        assert (differs, name) == (color != "RED", color)


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        (np.array("NO SUCH"), "'NO SUCH' is not the name of a member of __torch__.Color"),
        (np.array(3), "expected the name of a member of __torch__.Color as a string"),
    ],
)
def test_an_enum_attribute_that_is_no_member_name_is_a_clear_error(stored: Any, message: str) -> None:
    """A weight for an ``Enum<...>`` attribute that is not a member name fails naming the
    attribute and the enum class, not with a traceback or a silent wrong answer."""
    program = compiler.compile_source(GRAPH, "m.ir")
    with pytest.raises(RunError) as err:
        vm.Interpreter(program, {"fmt": np.array("NHWC"), "color": stored})(np.zeros(1, np.float32))
    assert "'color'" in str(err.value) and message in str(err.value)


def test_an_irbc_file_keeps_enum_constants(tmp_path: Path) -> None:
    """Enum-member constants survive the .irbc round trip (stored as class + member name)."""
    from vm.program import irbc
    program = compiler.compile_source(GRAPH, "m.ir")
    irbc.save(program, tmp_path / "m.irbc")
    loaded = irbc.load(tmp_path / "m.irbc")
    weights = {"fmt": np.array("NHWC"), "color": np.array("BLUE")}
    y, differs, name = vm.Interpreter(loaded, weights)(np.zeros(2, np.float32))
    assert (y.tolist(), differs, name) == ([1.0, 1.0], True, "BLUE")


ENUM_NET = '''
import enum
import torch
from typing import Tuple


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Format(str, enum.Enum):
    NCHW = "NCHW"
    NHWC = "NHWC"


class Net(torch.nn.Module):
    fmt: Format
    color: Color

    def __init__(self, fmt: Format, color: Color):
        super().__init__()
        self.fmt = fmt
        self.color = color

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, str, int, str]:
        if self.fmt == Format.NHWC:
            x = x.permute(0, 2, 3, 1)
        if self.color != Color.RED:
            x = x * 2
        if self.fmt != Format.NCHW and self.color == Color.GREEN:
            x = x + 1
        return x, self.color.name, self.color.value, self.fmt.value


def nhwc():
    return Net(Format.NHWC, Color.GREEN)


def nchw():
    return Net(Format.NCHW, Color.RED)


def nhwc_inputs():
    return (torch.arange(24, dtype=torch.float32).reshape(1, 2, 3, 4),)


nchw_inputs = nhwc_inputs
'''


@pytest.mark.parametrize("name", ["nhwc", "nchw"])
def test_a_scripted_module_with_enum_attributes_exports_and_matches_torch(name: str, tmp_path: Path) -> None:
    """tools/export_torch.py writes each enum attribute as its member name and value
    (``NAME=VALUE``, a str in the ``__spec__``); both backends then reproduce torch's
    outputs, the members' values (``prim::EnumValue``) included."""
    pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "tools"))
    import export_torch

    source = tmp_path / "enum_net.py"
    source.write_text(ENUM_NET)
    module = export_torch.load_file(source)
    exp = export_torch.export(getattr(module, name), name, getattr(module, f"{name}_inputs")())
    paths = export_torch.write(exp, tmp_path / name)
    assert "Enum<" in Path(paths["ir"]).read_text()
    with np.load(paths["weights"], allow_pickle=False) as data:
        weights = {k: data[k] for k in data.files}
    assert str(weights["fmt"]) == f'{name.upper()}="{name.upper()}"' and '"fmt": "str"' in str(weights["__spec__"])
    assert "prim::EnumValue" in Path(paths["ir"]).read_text()
    inputs = [exp.inputs[k] for k in exp.inputs]
    # compiled alone, and with the weights (enum attributes folded into member constants)
    for program in (compiler.compile_file(paths["ir"]), compiler.compile_file(paths["ir"], weights=weights)):
        for make in (vm.Interpreter, vm.StaticRuntime):
            got = make(program, weights)(*inputs)
            assert compare_flat(flatten_outputs(exp.outputs), flatten_outputs([got])) == []


def test_compiling_with_the_weights_folds_enum_attributes_and_their_comparisons(tmp_path: Path) -> None:
    """Given the weights at compile time, an enum attribute becomes a member constant, so
    its comparisons fold and the branch they decide disappears (as torch.jit.freeze does);
    the .irbc keeps the folding and weights naming another member are refused."""
    from vm.program import irbc
    weights = {"fmt": np.array("NHWC"), "color": np.array("GREEN")}
    program = compiler.compile_source(GRAPH, "m.ir", weights=weights)
    optimized = program.optimized_text()
    assert "prim::If" not in optimized and "aten::eq" not in optimized and "GetAttr" not in optimized
    irbc.save(program, tmp_path / "m.irbc")
    for loaded in (program, irbc.load(tmp_path / "m.irbc")):
        for make in (vm.Interpreter, vm.StaticRuntime):
            y, differs, name = make(loaded, weights)(np.zeros(2, np.float32))
            assert (y.tolist(), differs, name) == ([1.0, 1.0], True, "GREEN")
        with pytest.raises(RunError, match="fmt = 'NHWC' in the program, 'NCHW' in these weights"):
            vm.Interpreter(loaded, {**weights, "fmt": np.array("NCHW")})(np.zeros(2, np.float32))


ENUM_FUNCTION = '''
import enum
import torch
from typing import List, Optional


class Color(enum.Enum):
    RED = 1
    GREEN = 2


def f(x: torch.Tensor, c: Optional[Color]):
    cs: List[Color] = [Color.RED, Color.GREEN]
    d = Color.GREEN if bool(x.sum() > 0) else None
    if c is not None and c == cs[0] and d is not None:
        x = x + 1
    print(Color.RED)
    return x, Color.RED.value, Color.GREEN.name
'''


@pytest.mark.parametrize("member", [None, "RED", "GREEN"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_optional_enums_enum_lists_and_printing_match_torch(
    member: str | None, sign: float, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``Enum<...>?`` inputs and If results, ``Enum<...>[]`` lists and ``prim::Print`` of a
    member (``Enum<Color.RED>``, as TorchScript prints it): both backends give torch's
    results for every input member and for None."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "tools"))
    import export_torch

    source = tmp_path / "enum_fn.py"
    source.write_text(ENUM_FUNCTION)
    mod = export_torch.load_file(source)
    scripted = torch.jit.script(mod.f)
    text = str(scripted.graph)
    parsed = parse(text, "f.ir")
    assert print_module(parsed) == text
    program = compiler.compile_source(text, "f.ir")
    enum_type = parsed.main.inputs[1].type
    assert isinstance(enum_type, T.OptionalType) and isinstance(enum_type.elem, T.EnumType)
    x = np.full(2, sign, dtype=np.float32)
    c = None if member is None else getattr(mod.Color, member)
    want = scripted(torch.from_numpy(x), c)
    capfd.readouterr()
    arg = None if member is None else EnumValue(enum_type.elem.qualname, member)
    for make in (vm.Interpreter, vm.StaticRuntime):
        got = make(program, {})(x, arg)
        np.testing.assert_array_equal(got[0], want[0].numpy())
        assert got[1:] == want[1:]
        assert capfd.readouterr().out == "Enum<Color.RED>\n"


def test_enum_inputs_and_outputs_go_through_npz_files_as_member_names(tmp_path: Path) -> None:
    """``irvm run`` reads an ``Enum<...>`` input given as its member's name and writes an
    enum output as its member's name (what tools/export_torch.py writes for torch's);
    a non-name input is refused naming the input."""
    from vm.files.npz import load_inputs, save_values

    text = """graph(%c.1 : Enum<__torch__.Color>, %d.1 : Enum<__torch__.Color>?):
  %2 : Enum<__torch__.Color> = prim::Constant[value=__torch__.Color.RED]()
  %3 : bool = aten::eq(%c.1, %2)
  return (%3, %c.1)
"""
    program = compiler.compile_source(text, "e.ir")
    save_values(tmp_path / "in.npz", {"c.1": "RED"})
    args = load_inputs(tmp_path / "in.npz", program)
    assert args == [EnumValue("__torch__.Color", "RED"), None]
    same, member = vm.Interpreter(program, {})(*args)
    assert same is True and flatten_outputs([member])["out0"] == np.array("RED")
    save_values(tmp_path / "bad.npz", {"c.1": 3})
    with pytest.raises(RunError, match="input 'c.1' has type Enum<__torch__.Color>: give the name"):
        load_inputs(tmp_path / "bad.npz", program)


VALUE_GRAPH = """graph(%self : __torch__.M,
      %x.1 : Tensor):
  %color : Enum<__torch__.Color> = prim::GetAttr[name="color"](%self)
  %v : int = prim::EnumValue(%color)
  %y : Tensor = aten::mul(%x.1, %v)
  return (%y)
"""


@pytest.mark.parametrize("make", [vm.Interpreter, vm.StaticRuntime], ids=["interp", "static"])
def test_enum_value_reads_the_stored_value_and_says_when_there_is_none(make: Any) -> None:
    """``prim::EnumValue`` returns the value stored after the member's name (``RED=3``);
    a member stored by name alone stops the run saying its value is not known."""
    program = compiler.compile_source(VALUE_GRAPH, "v.ir")
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(make(program, {"color": np.array("RED=3")})(x), [3.0, 3.0])
    with pytest.raises(RunError, match="value of __torch__.Color.RED is not known"):
        make(program, {"color": np.array("RED")})(x)


@pytest.mark.parametrize("make", [vm.Interpreter, vm.StaticRuntime], ids=["interp", "static"])
def test_an_irbc_file_keeps_the_values_of_enum_constants(make: Any, tmp_path: Path) -> None:
    """An enum-member constant that still feeds ``prim::EnumValue`` after compiling (here:
    no constant propagation) keeps its value through the .irbc round trip, on both
    backends (the static runtime reads the printed IR, which names the member only)."""
    from vm.program import irbc
    weights = {"color": np.array("RED=3")}
    program = compiler.compile_source(VALUE_GRAPH, "v.ir", weights=weights, passes=["inline_calls"])
    assert "prim::EnumValue" in program.optimized_text()
    irbc.save(program, tmp_path / "v.irbc")
    loaded = irbc.load(tmp_path / "v.irbc")
    np.testing.assert_array_equal(make(loaded, weights)(np.ones(2, np.float32)), [3.0, 3.0])
