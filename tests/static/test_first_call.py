"""The first call after construction does no work construction could have done.

What a plan needs of a model but not of its inputs (which nodes may be called as bare
ufuncs and in which form, which slots a recording keeps) is decided when the
``StaticModule`` is built; a model whose input types fix every shape and dtype (a traced
graph) is planned then too.  These tests count that work (calls of the functions that do
it, the module's ``layouts_made``), never the clock.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import compiler
from tests.static.test_runtime import LSTM_CELL, lstm_inputs
from vm import StaticModule, StaticRuntime
from vm.interpreter.machine import Interpreter
from vm.static import StaticOptions, fastpath
from vm.static.model import Mode

OPTIONS = StaticOptions(min_managed_bytes=0)


def _typed(source: str, types: list[str]) -> str:
    """``source`` with its graph inputs given the refined ``types``, in order."""
    head, rest = source.split(":\n", 1)
    names = [part.split(":")[0].strip() for part in head[head.index("(") + 1 : head.rindex(")")].split(",")]
    typed = ", ".join(f"{name} : {t}" for name, t in zip(names, types, strict=True))
    return f"\ngraph({typed}):\n{rest}"


def _lstm_types(batch: int, hidden: int) -> list[str]:
    def t(*shape: int) -> str:
        strides = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
        return f"Float({', '.join(map(str, shape))}, strides=[{', '.join(map(str, strides))}], requires_grad=0, device=cpu)"

    h4 = 4 * hidden
    return [t(batch, hidden)] * 3 + [t(h4, hidden)] * 2 + [t(h4)] * 2


TYPED_LSTM = _typed(LSTM_CELL, _lstm_types(4, 16))


def test_a_graph_whose_types_fix_the_shapes_is_planned_at_construction() -> None:
    """Input types that fix every shape and dtype (as a traced graph's) are enough to plan
    when the module is built: the first call is a plan hit, no recording, no new layout,
    and gives the interpreter's numbers; other shapes still plan on their first call."""
    program = compiler.compile_source(TYPED_LSTM)
    sm = StaticModule(program, options=OPTIONS)
    assert sm.planned_from_types and sm.layouts_made == 1
    rt = StaticRuntime(sm)
    args = lstm_inputs(4, 16, seed=7)
    for got, want in zip(rt(*args), Interpreter(program)(*args)):
        np.testing.assert_array_equal(got, want)
    assert rt.stats["plans_made"] == 0 and rt.stats["plan_hits"] == 1
    assert sm.layouts_made == 1, "the first call made no layout"
    assert rt.plans[0].slab_bytes > 0


def test_planning_from_types_can_be_turned_off_and_needs_complete_types() -> None:
    """``plan_from_types=False``, or a type that leaves a size open (``*``) or the dtype
    unsaid, leaves the planning to the first call, as for a scripted graph."""
    off = StaticModule(compiler.compile_source(TYPED_LSTM), options=StaticOptions(min_managed_bytes=0, plan_from_types=False))
    types = _lstm_types(4, 16)
    open_size = StaticModule(compiler.compile_source(_typed(LSTM_CELL, ["Float(*, 16)", *types[1:]])), options=OPTIONS)
    untyped = StaticModule(compiler.compile_source(LSTM_CELL), options=OPTIONS)
    for sm in (off, open_size, untyped):
        assert not sm.planned_from_types and sm.layouts_made == 0
        rt = StaticRuntime(sm)
        rt(*lstm_inputs(4, 16, seed=1))
        assert rt.stats["plans_made"] == 1 and sm.layouts_made == 1


FAILS_ON_ZEROS = """
graph(%x : Long(3, strides=[1], requires_grad=0, device=cpu), %y : Float(8, 64, strides=[64, 1], requires_grad=0, device=cpu)):
  %ten : int = prim::Constant[value=10]()
  %one : int = prim::Constant[value=1]()
  %s : Tensor = aten::sum(%x, %one)
  %n : int = aten::Int(%s)
  %q : int = aten::floordiv(%ten, %n)
  %z : Tensor = aten::mul(%y, %q)
  %w : Tensor = aten::relu(%z)
  return (%w)
"""


def test_a_program_that_zeros_make_fail_plans_on_its_first_call() -> None:
    """Zeros are only stand-ins: when they make the run fail (here an integer division
    by a sum of the input), construction succeeds without a plan and the first call
    plans, with the interpreter's numbers."""
    program = compiler.compile_source(FAILS_ON_ZEROS)
    sm = StaticModule(program, options=OPTIONS)
    assert not sm.planned_from_types and sm.layouts_made == 0
    x = np.array([1, 2, 0], dtype=np.int64)
    y = np.random.default_rng(0).standard_normal((8, 64), dtype=np.float32)
    rt = StaticRuntime(sm)
    np.testing.assert_array_equal(rt(x, y), Interpreter(program)(x, y))
    assert rt.stats["plans_made"] == 1


def test_a_first_call_derives_no_per_model_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Which nodes may be called fast and in which form (``fastpath.probe``,
    ``fastpath.call_shape``) is decided per model at construction: a first call's
    recording and layout only check what the run saw against those probes."""
    program = compiler.compile_source(LSTM_CELL)
    sm = StaticModule(program, options=OPTIONS)
    assert sm.fast_probes, "the LSTM cell has adds, muls and tanh the fast path takes"

    def refuse(*args: Any) -> None:
        raise AssertionError("a per-model fact derived on a call")

    monkeypatch.setattr(fastpath, "probe", refuse)
    monkeypatch.setattr(fastpath, "call_shape", refuse)
    rt = StaticRuntime(sm)
    args = lstm_inputs(4, 16, seed=2)
    for got, want in zip(rt(*args), Interpreter(program)(*args)):
        np.testing.assert_array_equal(got, want)
    (plan,) = rt._plans.values()
    assert rt.stats["plans_made"] == 1 and plan.fast, "the plan calls nodes fast"


def test_a_recording_keeps_only_what_a_plan_reads() -> None:
    """The recording run keeps alive only the values a layout reads (planned tensors'
    sizes, fast nodes' operands and results, fusion groups' inputs), not every result."""
    sm = StaticModule(compiler.compile_source(LSTM_CELL), options=StaticOptions(min_managed_bytes=1 << 40))
    every_result = {slot for pn in sm.entry.pnodes for slot in pn.outputs} | set(sm.entry.params)
    probed = {slot for probe, _ in sm.fast_probes for slot in probe.slots()}
    assert sm.recorded_slots == probed | set(sm.candidates) and sm.recorded_slots < every_result


def test_a_first_call_binds_only_its_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A runtime binds its recording function when it is built: its first call with a new
    key binds one function, the plan's (its slab views), and the recording dict is empty
    again afterwards (no recorded value outlives the plan)."""
    sm = StaticModule(compiler.compile_source(LSTM_CELL), options=OPTIONS)
    rt = StaticRuntime(sm)
    binds: list[Any] = []
    real = sm.bind

    def counting(*args: Any, **kwargs: Any) -> Any:
        binds.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(sm, "bind", counting)
    rt(*lstm_inputs(4, 16, seed=3))
    assert rt.stats["plans_made"] == 1
    (plan,) = rt._plans.values()
    assert binds == [plan.mode] and not plan.mode.record, "only the plan's code was bound"
    assert rt._recorder is not None and rt._recorder[1] == {}


NAN_TO_INT = """
graph(%x : Float(64, 64, strides=[64, 1], requires_grad=0, device=cpu)):
  %y : Tensor = aten::div(%x, %x)
  %int : int = prim::Constant[value=3]()
  %false : bool = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %i : Tensor = aten::to(%y, %int, %false, %false, %none)
  %z : Tensor = aten::relu(%i)
  return (%z)
"""


def test_planning_on_zeros_warns_nothing() -> None:
    """The zeros a module plans with at construction are its own stand-ins: what they
    make numpy say (0/0 cast to int: "invalid value encountered in cast") is not shown
    to the caller, and the plan is made."""
    import warnings

    program = compiler.compile_source(NAN_TO_INT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sm = StaticModule(program, options=OPTIONS)
    assert sm.planned_from_types
    assert not caught, [str(w.message) for w in caught]


def test_a_first_call_copies_no_module_globals(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generic planned code's globals (every kernel, out variant and constant: ~6*10^4
    names on a 12-layer transformer) are copied when a runtime is built: its first plan
    binds into that copy, and only a second plan of the runtime copies them again."""
    from vm.static import codegen

    program = compiler.compile_source(LSTM_CELL)
    sm = StaticModule(program, options=OPTIONS)
    assert sm.generic_mode is not None
    rt = StaticRuntime(sm)
    copies: list[Any] = []
    real = codegen._Factory.globals_for

    def counting(self: Any, *args: Any) -> Any:
        copies.append(self)
        return real(self, *args)

    monkeypatch.setattr(codegen._Factory, "globals_for", counting)
    args = lstm_inputs(4, 16, seed=4)
    for got, want in zip(rt(*args), Interpreter(program)(*args)):
        np.testing.assert_array_equal(got, want)
    assert rt.stats["plans_made"] == 1 and copies == [], "the first plan bound into the runtime's copy"
    rt(*lstm_inputs(2, 16, seed=5))
    assert rt.stats["plans_made"] == 2 and len(copies) == 1, "a second plan copies its own"


def test_each_block_last_uses_are_computed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code of several modes of a graph (the generic planned code, which records too,
    and a timed one, as ``irvm profile`` compiles): the last uses of a block, which place
    the ``del`` lines, are computed once for all."""
    from vm.ir.last_uses import last_use_in_block
    from vm.static import codegen

    blocks: list[Any] = []

    def counting(block: Any) -> Any:
        blocks.append(block)
        return last_use_in_block(block)

    monkeypatch.setattr(codegen, "last_use_in_block", counting)
    sm = StaticModule(compiler.compile_source(LSTM_CELL), options=OPTIONS)
    sm.entry.factory(Mode(timed=True))
    assert sm.generic_mode is not None and len(sm.entry._factories) == 2, "two modes compiled"
    assert blocks and len(blocks) == len({id(b) for b in blocks})


def test_the_recording_run_and_the_plans_run_one_code_object() -> None:
    """Construction compiles one function for the entry graph: the generic planned code,
    which, bound with nothing planned and a recording dict, is also the recording run.
    The first call records with it, the plan runs it, and both give the interpreter's
    numbers; a planned run records nothing."""
    program = compiler.compile_source(LSTM_CELL)
    sm = StaticModule(program, options=OPTIONS)
    assert sm.record_mode is sm.generic_mode and list(sm.entry._factories) == [sm.generic_mode]
    rt = StaticRuntime(sm)
    assert rt._recorder is not None
    record_fn, recorded = rt._recorder
    want = Interpreter(program)(*lstm_inputs(4, 16, seed=6))
    for _ in range(2):  # the recording call, then a planned one
        for got, expected in zip(rt(*lstm_inputs(4, 16, seed=6)), want):
            np.testing.assert_array_equal(got, expected)
        assert recorded == {}
    (plan,) = rt._plans.values()
    assert plan.run.__code__ is record_fn.__code__ and rt.stats["plan_hits"] == 1


TRAINING_BN = """graph(%self : __torch__.M,
      %x.1 : Float(2, 3, 4, strides=[12, 4, 1], requires_grad=0, device=cpu)):
  %rm : Tensor = prim::GetAttr[name="rm"](%self)
  %rv : Tensor = prim::GetAttr[name="rv"](%self)
  %true : bool = prim::Constant[value=1]()
  %mom : float = prim::Constant[value=0.10000000000000001]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::batch_norm(%x.1, %none, %none, %rm, %rv, %true, %mom, %eps, %true)
  return (%y)
"""


def test_a_program_that_writes_its_weights_is_not_run_at_construction() -> None:
    """Batch norm in training mode updates its running statistics in place (no schema
    annotation says so): planning on zeros at construction would change the caller's
    weights and every later result, so such a module plans on its first call, and its
    calls match the interpreter's."""
    from vm import StaticModule, StaticRuntime
    from vm.interpreter.machine import Interpreter

    def weights() -> dict[str, np.ndarray]:
        return {"rm": np.zeros(3, np.float32), "rv": np.ones(3, np.float32)}

    program = compiler.compile_source(TRAINING_BN, "bn.ir")
    mine, theirs = weights(), weights()
    module = StaticModule(program, mine)
    assert not module.planned_from_types
    np.testing.assert_array_equal(mine["rv"], np.ones(3, np.float32))  # untouched by construction
    runtime, interp = StaticRuntime(module), Interpreter(program, theirs)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for _ in range(2):
        np.testing.assert_allclose(runtime(x), interp(x), rtol=1e-6)
    np.testing.assert_allclose(mine["rm"], theirs["rm"], rtol=1e-6)
