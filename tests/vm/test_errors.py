"""Run-time errors are ONE RunError that says what failed, where, and through which calls.

A failing kernel, a script's ``raise``, a runaway recursion and a bad input each end in a
``compiler.diagnostics.RunError`` (never a bare numpy error or Python's RecursionError)
naming the operator, the node's ``file:line:col`` and the stack of IR functions.
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler import compile_source
from compiler.diagnostics import RunError
from vm.interpreter.machine import Interpreter

CALLS = """\
graph(%a : Tensor, %b : Tensor):
  %f : Function = prim::Constant[name="inner"]()
  %r : Tensor = prim::CallFunction(%f, %a, %b)
  return (%r)
with inner = graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %p : Tensor = aten::mm(%x, %y)
  %q : Tensor = aten::add(%p, %x, %one)
  return (%q)
"""

RAISES = """\
graph(%x : int):
  %msg : str = prim::Constant[value="x must be positive"]()
  %cls : str = prim::Constant[value="builtins.ValueError"]()
  %zero : int = prim::Constant[value=0]()
  %bad : bool = aten::le(%x, %zero)
   = prim::If(%bad)
    block0():
       = prim::RaiseException(%msg, %cls)
      -> ()
    block1():
      -> ()
  return (%x)
"""

FOREVER = """\
graph(%n : int):
  %f : Function = prim::Constant[name="down"]()
  %r : int = prim::CallFunction(%f, %n)
  return (%r)
with down = graph(%k : int):
  %one : int = prim::Constant[value=1]()
  %g : Function = prim::Constant[name="down"]()
  %k1 : int = aten::sub(%k, %one)
  %r : int = prim::CallFunction(%g, %k1)
  return (%r)
"""


def _runs(interp: Interpreter):
    return [interp, lambda *a: interp.run_traced(*a)[0]]


def test_kernel_failure_names_op_place_and_call_stack() -> None:
    interp = Interpreter(compile_source(CALLS, "calls.ir", passes=[]))  # keep the call
    a, b = np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)
    for run in _runs(interp):
        with pytest.raises(RunError) as info:
            run(a, b)
        text = str(info.value)
        assert "aten::mm" in text
        assert "calls.ir:7:" in text  # the mm node, inside `inner`
        assert "IR call stack" in text
        assert "main at calls.ir:3:" in text and "inner at calls.ir:7:" in text
        assert info.value.span is not None and info.value.span.line == 7


def test_script_raise_is_one_run_error_with_its_message() -> None:
    interp = Interpreter(compile_source(RAISES, "raises.ir"))
    assert interp(3) == 3
    for run in _runs(interp):
        with pytest.raises(RunError, match="x must be positive") as info:
            run(-1)
        assert "prim::RaiseException" in str(info.value)
        assert "raises.ir:8:" in str(info.value)


def test_runaway_recursion_hits_the_depth_limit() -> None:
    interp = Interpreter(compile_source(FOREVER, "forever.ir"), max_depth=300)
    for run in _runs(interp):
        with pytest.raises(RunError, match="call depth exceeds 300") as info:
            run(5)
        assert not isinstance(info.value.__cause__, RecursionError)
        assert "down at forever.ir:9:" in str(info.value)


def test_deep_recursion_within_limit_needs_no_python_stack() -> None:
    """5000 nested IR calls run without touching Python's recursion limit."""
    program = compile_source(
        FOREVER.replace(
            "  %r : int = prim::CallFunction(%g, %k1)\n  return (%r)\n",
            "  %z : int = prim::Constant[value=0]()\n"
            "  %stop : bool = aten::le(%k, %z)\n"
            "  %r : int = prim::If(%stop)\n"
            "    block0():\n      -> (%k)\n"
            "    block1():\n"
            "      %r1 : int = prim::CallFunction(%g, %k1)\n      -> (%r1)\n"
            "  return (%r)\n",
        ),
        "deep.ir",
    )
    assert Interpreter(program, max_depth=10_000)(5000) == 0


@pytest.mark.parametrize(
    "args,message",
    [
        ((np.ones(3, np.float32),), "takes 2 input"),
        ((np.ones(3, np.float32), 2.5), "input %n is declared int but got a float"),
        ((3, 2), "input %x is declared Float(3) but got a int"),
        (
            (np.ones(3, np.float64), 2),
            "input %x is declared Float(3) (float32) but is a float64 tensor",
        ),
    ],
)
def test_inputs_checked_against_declared_types(args: tuple, message: str) -> None:
    text = "graph(%x : Float(3), %n : int):\n  %y : Tensor = aten::mul(%x, %n)\n  return (%y)\n"
    interp = Interpreter(compile_source(text, "typed.ir"))
    with pytest.raises(RunError) as info:
        interp(*args)
    assert message in str(info.value)
    np.testing.assert_array_equal(interp(np.ones(3, np.float32), np.int64(2)), np.full(3, 2, np.float32))


def test_in_place_op_on_a_constant_fails_instead_of_changing_the_program() -> None:
    """Constants are shared by every run and thread: they are read-only at run time."""
    text = (
        "graph(%x : Tensor):\n"
        "  %c : Tensor = prim::Constant[value={2}]()\n"
        "  %one : int = prim::Constant[value=1]()\n"
        "  %y : Tensor = aten::add_(%c, %x, %one)\n"
        "  return (%y)\n"
    )
    program = compile_source(text, "const.ir", passes=[])
    interp = Interpreter(program)
    for run in _runs(interp):
        with pytest.raises(RunError, match="aten::add_") as info:
            run(np.array(1.0, np.float32))
        assert "const.ir:4:" in str(info.value)
    assert float(program.main.constants[0]) == 2.0


def test_dict_and_tuple_inputs_are_not_taken_for_refined_tensors() -> None:
    """``Dict(str, Tensor)`` starts like ``Float(3)`` but is a container: a dict passes,
    anything else is refused as not a dict."""
    text = (
        "graph(%d : Dict(str, Tensor)):\n"
        "  %k : str = prim::Constant[value=\"a\"]()\n"
        "  %t : Tensor = aten::__getitem__(%d, %k)\n"
        "  return (%t)\n"
    )
    interp = Interpreter(compile_source(text, "dict.ir"))
    np.testing.assert_array_equal(interp({"a": np.arange(3)}), np.arange(3))
    with pytest.raises(RunError, match="declared Dict"):
        interp(np.arange(3))


def test_an_attribute_read_twice_is_listed_once_when_the_weights_lack_it() -> None:
    """The missing-weights message counts attributes, not reads (levit listed one six times)."""
    import compiler
    from vm import Interpreter
    from vm.core.errors import RunError

    program = compiler.compile_source(
        """graph(%self : __torch__.M, %x : Tensor, %c : bool):
  %y : Tensor = prim::If(%c)
    block0():
      %s : float = prim::GetAttr[name="scale"](%self)
      %a : Tensor = aten::mul(%x, %s)
      -> (%a)
    block1():
      %s2 : float = prim::GetAttr[name="scale"](%self)
      %b : Tensor = aten::div(%x, %s2)
      -> (%b)
  return (%y)
""",
        fusion=False,
    )
    with pytest.raises(RunError, match=r"lack 1 attribute\(s\)") as err:
        Interpreter(program, {})
    assert str(err.value).count("scale : float") == 1
