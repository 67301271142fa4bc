"""A prepared form (``vm.ops.prepared``) decides on its node's constant arguments once,
when the static runtime is built; a tensor the program writes in place is not constant,
so no form may capture it."""

from __future__ import annotations

import numpy as np

import compiler
import vm

# eval-mode batch_norm whose running mean the program itself updates in place on every call
IR = """graph(%self : __torch__.M,
      %x.1 : Tensor):
  %rm : Tensor = prim::GetAttr[name="rm"](%self)
  %rv : Tensor = prim::GetAttr[name="rv"](%self)
  %one : int = prim::Constant[value=1]()
  %false : bool = prim::Constant[value=0]()
  %mom : float = prim::Constant[value=0.10000000000000001]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %none : NoneType = prim::Constant()
  %u : Tensor = aten::add_(%rm, %rv, %one)
  %y : Tensor = aten::batch_norm(%x.1, %none, %none, %rm, %rv, %false, %mom, %eps, %false)
  return (%y)
"""


def _weights() -> dict[str, np.ndarray]:
    return {"rm": np.zeros(3, np.float32), "rv": np.ones(3, np.float32)}


def test_statistics_written_in_place_are_read_on_every_call() -> None:
    """Each call normalizes with the running mean as updated by that call (1, 2, 3...),
    as the interpreter does: the prepared batch_norm must not keep the mean it saw when
    the runtime was built."""
    program = compiler.compile_source(IR, "bn.ir")
    x = np.ones((2, 3, 4), np.float32)
    interp, static = vm.Interpreter(program, _weights()), vm.StaticRuntime(program, _weights())
    for call in range(1, 4):
        want = interp(x)
        np.testing.assert_allclose(want, (1.0 - call) / np.sqrt(1.0 + 1e-5), rtol=1e-6)
        np.testing.assert_array_equal(static(x), want)
