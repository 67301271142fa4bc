"""The static runtime's contract: call protocol, control flow, errors, threads.

Programs are IR text; results are checked against numpy written by hand (and, where the
semantics are PyTorch's, against the interpreter).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import RunError
from tests.support.paths import EXAMPLES
from vm import StaticModule, StaticRuntime
from vm.program import irbc
from vm.static import RuntimePool, StaticOptions

LSTM_CELL = """
graph(%x : Tensor, %hx : Tensor, %cx : Tensor, %w_ih : Tensor, %w_hh : Tensor, %b_ih : Tensor, %b_hh : Tensor):
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %t1 : Tensor = aten::t(%w_ih)
  %g1 : Tensor = aten::mm(%x, %t1)
  %t2 : Tensor = aten::t(%w_hh)
  %g2 : Tensor = aten::mm(%hx, %t2)
  %g3 : Tensor = aten::add(%g1, %g2, %one)
  %g4 : Tensor = aten::add(%g3, %b_ih, %one)
  %gates : Tensor = aten::add(%g4, %b_hh, %one)
  %chunks : Tensor[] = aten::chunk(%gates, %four, %one)
  %i0 : Tensor, %f0 : Tensor, %c0 : Tensor, %o0 : Tensor = prim::ListUnpack(%chunks)
  %i : Tensor = aten::sigmoid(%i0)
  %f : Tensor = aten::sigmoid(%f0)
  %c : Tensor = aten::tanh(%c0)
  %o : Tensor = aten::sigmoid(%o0)
  %fc : Tensor = aten::mul(%f, %cx)
  %ic : Tensor = aten::mul(%i, %c)
  %cy : Tensor = aten::add(%fc, %ic, %one)
  %tc : Tensor = aten::tanh(%cy)
  %hy : Tensor = aten::mul(%o, %tc)
  return (%hy, %cy)
"""

LOOP = """
graph(%x : Tensor, %n : int):
  %true : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %out : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %a : Tensor = aten::mul(%acc, %half)
      %b : Tensor = aten::add(%a, %x, %one)
      -> (%true, %b)
  return (%out)
"""

WHILE_IF = """
graph(%x : Tensor, %limit : float):
  %big : int = prim::Constant[value=9223372036854775807]()
  %one : int = prim::Constant[value=1]()
  %two : float = prim::Constant[value=2.]()
  %none : NoneType = prim::Constant()
  %x0 : Tensor = aten::sum(%x, %none)
  %s0 : float = aten::Float(%x0)
  %go : bool = aten::lt(%s0, %limit)
  %y : Tensor, %k : int = prim::Loop(%big, %go, %x, %one)
    block0(%i : int, %acc : Tensor, %steps : int):
      %d : Tensor = aten::mul(%acc, %two)
      %s : int = aten::add(%steps, %one)
      %total : Tensor = aten::sum(%d, %none)
      %tf : float = aten::Float(%total)
      %more : bool = aten::lt(%tf, %limit)
      -> (%more, %d, %s)
  %neg : bool = aten::gt(%k, %one)
  %z : Tensor = prim::If(%neg)
    block0():
      %m : Tensor = aten::neg(%y)
      -> (%m)
    block1():
      -> (%y)
  return (%z, %k)
"""

RECURSE = """
graph(%x : Tensor):
  %f : Function = prim::Constant[name="forever"]()
  %y : Tensor = prim::CallFunction(%f, %x)
  return (%y)
with forever = graph(%x : Tensor):
  %f : Function = prim::Constant[name="forever"]()
  %y : Tensor = prim::CallFunction(%f, %x)
  return (%y)
"""

MM = """
graph(%a : Tensor, %b : Tensor):
  %c : Tensor = aten::mm(%a, %b) # model.py:3:8
  return (%c)
"""


def lstm_reference(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = x @ w_ih.T + hx @ w_hh.T + b_ih + b_hh
    i, f, c, o = np.split(gates, 4, axis=1)

    def sig(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    cy = sig(f) * cx + sig(i) * np.tanh(c)
    return sig(o) * np.tanh(cy), cy


def lstm_inputs(batch: int, hidden: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)

    def f(*s: int) -> np.ndarray:
        return rng.standard_normal(s, dtype=np.float32) * 0.1

    return [f(batch, hidden), f(batch, hidden), f(batch, hidden), f(4 * hidden, hidden), f(4 * hidden, hidden),
            f(4 * hidden), f(4 * hidden)]  # fmt: skip


def test_lstm_cell_returns_a_tuple_like_the_interpreter() -> None:
    from vm.interpreter.machine import Interpreter

    program = compiler.compile_source(LSTM_CELL)
    static, interp = StaticRuntime(program), Interpreter(program)
    for batch, hidden in ((1, 8), (4, 16), (1, 8)):
        args = lstm_inputs(batch, hidden, seed=batch)
        hy, cy = static(*args)
        np.testing.assert_allclose(hy, lstm_reference(*args)[0], rtol=1e-5, atol=1e-6)
        ihy, icy = interp(*args)
        np.testing.assert_array_equal(hy, ihy)
        np.testing.assert_array_equal(cy, icy)


def test_for_loop_with_a_carried_tensor() -> None:
    x = np.arange(4, dtype=np.float32)
    rt = StaticRuntime(LOOP)
    for n in (0, 1, 5):
        acc = x.copy()
        for _ in range(n):
            acc = acc * 0.5 + x
        np.testing.assert_allclose(rt(x, n), acc)


def test_while_loop_and_if_follow_torchscript_semantics() -> None:
    """A loop with a condition computed in its body, the initial condition checked before
    the first iteration, and an If choosing between a new value and an outer one."""
    from vm.interpreter.machine import Interpreter

    program = compiler.compile_source(WHILE_IF)
    static, interp = StaticRuntime(program), Interpreter(program)
    for values, limit in (([1.0, 2.0], 50.0), ([1.0, 2.0], 1.0), ([0.5], 7.0)):
        x = np.array(values, np.float32)
        (z, k), (iz, ik) = static(x, limit), interp(x, limit)
        np.testing.assert_array_equal(z, iz)
        assert k == ik and type(k) is int


def test_runaway_recursion_is_a_run_error_not_a_python_recursion_error() -> None:
    rt = StaticRuntime(RECURSE, options=StaticOptions(max_call_depth=50))
    with pytest.raises(RunError, match="maximum call depth"):
        rt(np.ones(2, np.float32))


def test_a_failing_kernel_names_the_op_the_node_and_its_span() -> None:
    rt = StaticRuntime(compiler.compile_source(MM, "model.ir"))
    with pytest.raises(RunError) as info:
        rt(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    text = str(info.value)
    assert text.startswith("model.ir:3:3:")
    assert "while executing %c = aten::mm(%a, %b)" in text and "aten::mm" in text


def test_inputs_are_checked_against_their_declared_types() -> None:
    """The static runtime refuses a bad input as the interpreter does (one checker,
    vm.binding.inputs), naming it; a numpy integer for an int is taken as the int."""
    program = compiler.compile_source(LOOP)
    rt, interp = StaticRuntime(program), vm.Interpreter(program)
    for args, message in (
        ((np.ones(2, np.float32), 2.5), r"input %n is declared int but got a float"),
        (([1.0, 2.0], 2), r"input %x is declared Tensor but got a list"),
    ):
        for run in (rt, interp):
            with pytest.raises(RunError, match=message):
                run(*args)
    with pytest.raises(RunError, match="takes 2 input"):
        rt(np.ones(2, np.float32))
    x = np.arange(2, dtype=np.float32)
    np.testing.assert_array_equal(rt(x, np.int64(3)), interp(x, 3))


def test_a_refined_input_type_fixes_the_dtype() -> None:
    """A declared ``Float(2)`` input refuses a float64 array on both backends."""
    program = compiler.compile_source(
        "graph(%x : Float(2)):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n"
    )
    for run in (StaticRuntime(program), vm.Interpreter(program)):
        with pytest.raises(RunError, match=r"input %x is declared Float\(2\) \(float32\) but is a float64"):
            run(np.ones(2))
        np.testing.assert_array_equal(run(np.ones(2, np.float32)), np.ones(2, np.float32))


def test_eight_threads_share_one_module_through_a_pool() -> None:
    """8 threads x 200 runs with different inputs (and shapes) through a RuntimePool of 3
    runtimes over one StaticModule: every result is checked."""
    pool = RuntimePool(
        StaticModule(LSTM_CELL, options=StaticOptions(min_managed_bytes=0)), 3
    )
    weights = lstm_inputs(2, 8)[3:]
    failures: list[str] = []

    def worker(tid: int) -> None:
        rng = np.random.default_rng(tid)
        for k in range(200):
            batch = 1 + (tid + k) % 3
            state = [
                rng.standard_normal((batch, 8), dtype=np.float32) for _ in range(3)
            ]
            hy, cy = pool(*state, *weights)
            ehy, ecy = lstm_reference(*state, *weights)
            if not (
                np.allclose(hy, ehy, rtol=1e-5, atol=1e-6)
                and np.allclose(cy, ecy, rtol=1e-5, atol=1e-6)
            ):
                failures.append(f"thread {tid} run {k}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:5]


def test_static_module_accepts_a_program_a_module_a_graph_or_text() -> None:
    program = compiler.compile_source(MM)
    a, b = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    for source in (program, program.module, program.module.main, MM):
        np.testing.assert_array_equal(StaticRuntime(source)(a, b), a @ b)


RATIO_IOU = (EXAMPLES / "ratio_iou.ir").read_text()


def test_big_fusion_groups_run_their_fused_kernel_small_ones_their_nodes() -> None:
    """A plan picks vm.fusion.kernels's fused kernel when the recorded group inputs span at least
    two of its blocks, and the group's own nodes otherwise; both equal the interpreter."""
    from vm.fusion.kernels import MIN_BLOCK
    from vm.interpreter.machine import Interpreter
    from vm.static.profile import profile

    program = compiler.compile_source(RATIO_IOU, fusion=True)
    # the size rule alone (measure_fused=False): timing is tested in test_static_fastpath.py
    static = StaticRuntime(program, options=StaticOptions(measure_fused=False))
    interp = Interpreter(program)
    rng = np.random.default_rng(3)
    for n in (100, 2 * MIN_BLOCK, 100):
        args = [rng.random(n, dtype=np.float32) + 0.1 for _ in range(8)]
        np.testing.assert_array_equal(static(*args), interp(*args))
    modes = [p.mode.fused for p in static._plans.values()]
    assert sorted(len(m) for m in modes) == [0, 1]
    report = profile(
        program, [rng.random(100, dtype=np.float32) for _ in range(8)], runs=1
    )
    assert any("below the fused kernel's size" in f for f in report.fusion_fallbacks)


def test_a_module_built_with_example_inputs_starts_planned() -> None:
    """``StaticModule(..., example_inputs=)`` records and plans at construction: the
    first call with inputs of those shapes (other values) is a plan hit, no recording
    run, and gives the numbers of a runtime that planned on its own first call."""
    program = compiler.compile_source(LSTM_CELL)
    options = StaticOptions(min_managed_bytes=0)
    sm = StaticModule(program, options=options, example_inputs=lstm_inputs(4, 16, seed=0))
    warm, cold = StaticRuntime(sm), StaticRuntime(program, options=options)
    args = lstm_inputs(4, 16, seed=7)
    for got, want in zip(warm(*args), cold(*args)):
        np.testing.assert_array_equal(got, want)
    assert warm.stats["plans_made"] == 0 and warm.stats["plan_hits"] == 1
    assert cold.stats["plans_made"] == 1
    assert warm.plans[0].slab_bytes > 0, "the plan made at construction manages memory"


def test_runtimes_of_one_module_share_its_plan_layouts() -> None:
    """A plan's layout (memory plan, generated code) is made once per module and input
    shapes: a second runtime binds it to its own slab instead of recording again."""
    sm = StaticModule(compiler.compile_source(LSTM_CELL), options=StaticOptions(min_managed_bytes=0))
    first, second = StaticRuntime(sm), StaticRuntime(sm)
    args = lstm_inputs(2, 8, seed=3)
    a, b = first(*args), second(*args)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert first.stats["plans_made"] == 1 and second.stats["plans_made"] == 0
    (first_plan,), (second_plan,) = first._plans.values(), second._plans.values()
    assert first_plan.layout is second_plan.layout and first_plan.slab is not second_plan.slab


def test_generated_code_reads_its_tables_as_globals_not_closure_cells() -> None:
    """The generated function has no free variables: CPython compiles closure cells in
    time quadratic in their number (16 s for a 53k-node transformer), globals linearly."""
    rt = StaticRuntime(compiler.compile_source(LSTM_CELL), options=StaticOptions(min_managed_bytes=0))
    rt(*lstm_inputs(2, 8, seed=1))
    (plan,) = rt._plans.values()
    assert plan.views and plan.run.__code__.co_freevars == ()


def test_a_static_module_of_a_compiled_or_loaded_program_resolves_no_operator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compiler records each node's operator (``Program.node_refs``, kept in the
    ``.irbc``), so building a StaticModule, fusion groups expanded, resolves nothing."""
    import vm.ir.resolve

    program = compiler.compile_source(RATIO_IOU, fusion=True)
    path = tmp_path / "ratio_iou.irbc"
    vm.save(program, path)
    loaded = irbc.load(path)
    assert loaded.node_refs == program.node_refs and any(r is not None for r in program.node_refs)

    def refuse(node: object) -> None:
        raise AssertionError(f"resolved {node.kind} again")

    import vm.ir.fusion_spec

    monkeypatch.setattr(vm.ir.resolve, "resolve", refuse)
    monkeypatch.setattr(vm.ir.fusion_spec, "resolve", refuse)  # the fused kernels' operators
    rng = np.random.default_rng(5)
    args = [rng.random(4096, dtype=np.float32) + 0.1 for _ in range(8)]
    want = vm.Interpreter(program)(*args)
    for source in (program, loaded):
        sm = StaticModule(source, options=StaticOptions(min_managed_bytes=0))
        assert sm.groups, "the fusion group was expanded, its fused kernel kept"
        np.testing.assert_array_equal(StaticRuntime(sm)(*args), want)


@pytest.mark.parametrize("source", ["lstm", "ratio_iou"])
def test_a_new_input_shape_compiles_no_code(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The planned code is generated once, at construction, for every plan (codegen's
    ``Mode.generic``): a runtime's calls with new shapes (planned tensors, bare-ufunc
    calls, a fusion group fused or run as its nodes) generate and compile nothing, and
    give the interpreter's numbers."""
    from vm.fusion.kernels import MIN_BLOCK
    from vm.interpreter.machine import Interpreter
    from vm.static import codegen

    options = StaticOptions(min_managed_bytes=0, measure_fused=False)
    if source == "lstm":
        program = compiler.compile_source(LSTM_CELL)
        calls = [lstm_inputs(n, 16, seed=n) for n in (2, 5, 2, 9)]
    else:
        program = compiler.compile_source(RATIO_IOU, fusion=True)
        rng = np.random.default_rng(11)
        calls = [[rng.random(n, dtype=np.float32) + 0.1 for _ in range(8)] for n in (100, 2 * MIN_BLOCK, 300)]
    sm = StaticModule(program, options=options)
    assert sm.generic_mode is not None

    def refuse(self: object) -> None:
        raise AssertionError("code generated after construction")

    monkeypatch.setattr(codegen._Generator, "compile", refuse)
    rt, interp = StaticRuntime(sm), Interpreter(program)
    for args in calls:
        got, want = rt(*args), interp(*args)
        for x, y in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_array_equal(x, y)
    plans = list(rt._plans.values())
    assert len(plans) == len({tuple(a.shape for a in args) for args in calls})
    unfused = [p for p in plans if not p.mode.fused]
    assert unfused and all(p.views and p.fast for p in unfused), "plans manage memory and call bare ufuncs"
    if source == "ratio_iou":
        assert sorted(len(p.mode.fused) for p in plans) == [0, 0, 1]
