"""Interpreter and static runtime agree on programs whose outputs are constants, containers
of constants, shape-derived values the static runtime folds per plan, inputs passed
through, and aliases (tests/support/output_programs.py), call after call and across a
shape change: the static runtime's second call runs the plan's code, which once read an
undefined name for a returned folded value."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

import compiler
import vm
from tests.support.output_programs import output_programs
from tests.support.reference import same_value


def _run_all(runtime, calls):  # noqa: ANN001, ANN202
    return [runtime(*args) for args in calls]


@settings(max_examples=60, deadline=None)
@given(output_programs())
def test_backends_agree_on_constant_and_aliased_outputs(text: str) -> None:
    program = compiler.compile_source(text)
    x2, x3 = np.arange(2, dtype=np.float32), np.arange(6, dtype=np.float32).reshape(2, 3)
    calls = [(x2.copy(), 4), (x3.copy(), 5), (x2.copy(), 4), (x2.copy(), 4)]
    interp = _run_all(vm.Interpreter(program), calls)
    static = _run_all(vm.StaticRuntime(program), calls)
    for a, b in zip(interp, static):
        assert same_value(a, b), (text, a, b)


def test_returned_len_of_an_empty_list_and_sizes_on_the_planned_path() -> None:
    text = """graph(%x : Tensor, %n : int):
  %e : int[] = prim::ListConstruct()
  %l : int = aten::len(%e)
  %z : int = prim::Constant[value=0]()
  %s : int = aten::size(%x, %z)
  %d : int = aten::dim(%x)
  return (%l, %s, %d)
"""
    runtime = vm.StaticRuntime(compiler.compile_source(text))
    for _ in range(3):
        assert runtime(np.ones(5, np.float32), 1) == (0, 5, 1)
