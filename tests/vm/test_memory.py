"""No tensor lives longer than it must: MOVE frees a value at its last use, DROPR frees
a value nobody reads, as soon as the emitter knows it is dead.

Two impure probe operators watch a big array through a weak reference:
``test_vm::remember(x)`` records a weakref to its input and returns a small summary;
``test_vm::alive()`` says whether the remembered array still exists.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest

from compiler import compile_source
from vm.interpreter.machine import Interpreter
from vm.ops.registry import register_op

_refs: list[Any] = []


def _remember(x: np.ndarray) -> np.ndarray:
    _refs.append(weakref.ref(x))
    return np.array(x.sum(), dtype=x.dtype)


def _alive() -> bool:
    return _refs[-1]() is not None


register_op("test_vm::remember(Tensor x) -> Tensor", _remember, pure=False, replace=True)
register_op("test_vm::alive() -> bool", _alive, pure=False, replace=True)


def _big(x: np.ndarray) -> np.ndarray:
    out = np.repeat(x, 1000)
    _refs.append(weakref.ref(out))
    return out


register_op("test_vm::big(Tensor x) -> Tensor", _big, pure=False, replace=True)

LAST_USE = """\
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %big : Tensor = aten::mul(%x, %two)
  %s : Tensor = test_vm::remember(%big)
  %after : bool = test_vm::alive()
  return (%s, %after)
"""

USED_LATER = """\
graph(%x : Tensor):
  %two : int = prim::Constant[value=2]()
  %big : Tensor = aten::mul(%x, %two)
  %s : Tensor = test_vm::remember(%big)
  %after : bool = test_vm::alive()
  %t : Tensor = aten::mul(%big, %s)
  return (%t, %after)
"""

UNUSED_IN_LOOP = """\
graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %y : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %big : Tensor = test_vm::big(%acc)
      %s : Tensor = test_vm::remember(%big)
      %a1 : bool = test_vm::alive()
      %dead : Tensor = test_vm::big(%acc)
      %a2 : bool = test_vm::alive()
      %both : bool = aten::__or__(%a1, %a2)
      %cond : bool = aten::__not__(%both)
      %next : Tensor = aten::add(%acc, %s, %i)
      -> (%cond, %next)
  return (%y)
"""


@pytest.mark.parametrize("traced", [False, True], ids=["fast", "reference"])
def test_big_intermediate_freed_after_last_use(traced: bool) -> None:
    interp = Interpreter(compile_source(LAST_USE, "last_use.ir"))
    x = np.ones(1 << 20, dtype=np.float32)
    s, alive = interp.run_reference(x) if traced else interp(x)
    assert alive is False
    assert float(s) == 2.0 * x.size


def test_value_used_later_stays_alive() -> None:
    """The control case: the probe does see a live array when a later use needs it."""
    interp = Interpreter(compile_source(USED_LATER, "used_later.ir"))
    _, alive = interp(np.ones(16, dtype=np.float32))
    assert alive is True


def test_values_inside_loop_body_freed_each_iteration() -> None:
    """In a loop body the big value is moved into its last use and the unused one is
    DROPR'd right after its definition: the loop runs on while both are dead, so all five
    iterations happen."""
    program = compile_source(UNUSED_IN_LOOP, "loop.ir")
    x = np.ones(4, dtype=np.float32)
    expected = x
    for i in range(5):
        expected = expected + np.float32(1000 * expected.sum()) * i
    out = Interpreter(program)(x, 5)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    assert any(ins.op.name == "DROPR" for ins in program.main.instructions)
