"""A model whose input shapes are known is planned and run once on zeros when it is opened
(``vm.api.model.Method._warm``), so its first call is a steady one; the warm-up changes
nothing a call sees: not the random stream, not the result."""

from __future__ import annotations

import numpy as np
import pytest

import compiler
import vm

RANDOM = """graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %r : Tensor = aten::rand_like(%x, %none, %none, %none, %none, %none)
  %y : Tensor = aten::mul(%x, %r)
  return (%y)
"""


@pytest.mark.parametrize("backend", ["static", "interp"])
def test_the_warm_up_leaves_the_random_stream_where_it_was(backend) -> None:
    """Seeded alike, a model opened with its input shapes (warmed on zeros, a draw made)
    and one without (not warmed) give the same numbers on their first calls."""
    program = compiler.compile_source(RANDOM)
    x = np.ones((2, 3), np.float32)
    warmed = vm.Model(program, backend=backend, seed=3, examples=[("float32", [2, 3])])
    cold = vm.Model(program, backend=backend, seed=3)
    for _ in range(2):
        np.testing.assert_array_equal(warmed(x), cold(x))


def test_a_static_model_is_planned_and_run_before_its_first_call() -> None:
    """With the shapes known, the plan is made at load and the first call runs it: no
    recording run is left to the first call."""
    program = compiler.compile_source(RANDOM)
    model = vm.Model(program, backend="static", seed=0, examples=[("float32", [4, 5])])
    module = model.static_module
    assert module.layouts_made == 1
    runtime = model._methods["forward"].runtime()
    hits = runtime.stats["plan_hits"]
    model(np.ones((4, 5), np.float32))
    assert module.layouts_made == 1 and runtime.stats["plan_hits"] == hits + 1 and runtime.stats["plans_made"] == 0


def test_no_warm_up_without_every_size_known() -> None:
    """A recorded shape with an unknown size is no plan: the first call records, as before."""
    program = compiler.compile_source(RANDOM)
    model = vm.Model(program, backend="static", seed=0, examples=[("float32", [None, 5])])
    assert model.static_module.layouts_made == 0
