"""Shape-only values computed once per plan (``vm/static/shape_only.py``).

Each hazard gets a program where caching a value would be wrong (a later in-place write,
a graph output the caller owns, a view that is written or returned, a random draw): the
runtime must not skip it, and three calls must each give the interpreter's answer.  The
zoo models whose masks and position ids are shape-only run against torch with the switch
on and off.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import compiler
from tests.support.paths import TOOLS
from vm import StaticModule, StaticRuntime
from vm.interpreter.machine import Interpreter
from vm.static import StaticOptions

ON = StaticOptions(min_managed_bytes=0)
OFF = StaticOptions(min_managed_bytes=0, fold_shapes=False)

HEADER = """
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %n : int = aten::size(%x, %one)
  %r : Tensor = aten::arange(%n, %none, %none, %none, %none)
"""

# position ids and a mask from the input's width: arange, ge, mul, all shape-only
POSITIONS = HEADER + """
  %m : Tensor = aten::ge(%r, %one)
  %p : Tensor = aten::mul(%r, %m)
  %y : Tensor = aten::add(%x, %p, %one)
  return (%y)
"""

# the arange is written in place afterwards: caching it would add 1 again on every call
INPLACE_USER = HEADER + """
  %w : Tensor = aten::add_(%r, %one, %one)
  %y : Tensor = aten::add(%x, %r, %one)
  return (%y)
"""

# the arange is a graph output: the caller owns it (and writes into it below)
OUTPUT = HEADER + """
  %y : Tensor = aten::add(%x, %r, %one)
  return (%y, %r)
"""

# a view of the arange is written in place
ALIAS_WRITTEN = HEADER + """
  %s : Tensor = aten::select(%r, %zero, %zero)
  %f : Tensor = aten::add_(%s, %one, %one)
  %y : Tensor = aten::add(%x, %r, %one)
  return (%y)
"""

# a view of the arange, made by a node that is not shape-only (its offset is an input),
# is a graph output
ALIAS_OUTPUT = HEADER.replace("%x : Tensor", "%x : Tensor, %i : int") + """
  %e : Tensor = aten::slice(%r, %zero, %i, %none, %one)
  return (%e)
"""

# random numbers of a shape-determined size are drawn on every call
RANDOM = HEADER + """
  %sizes : int[] = prim::ListConstruct(%n)
  %u : Tensor = aten::rand(%sizes, %none, %none, %none, %none)
  %y : Tensor = aten::add(%x, %u, %one)
  return (%y)
"""


def _x(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((3, 5)).astype(np.float32)


def _skipped_kinds(sm: StaticModule) -> set[str]:
    return {pn.kind for pn in sm.entry.pnodes if pn.index in sm.shape_skip}


def _as_list(result: Any) -> list[np.ndarray]:
    return list(result) if isinstance(result, tuple) else [result]


def _three_calls_match_the_interpreter(text: str, mutate_outputs: bool = False, *extra: Any) -> StaticModule:
    program = compiler.compile_source(text)
    sm = StaticModule(program, None, ON)
    runtime = StaticRuntime(sm)
    interp = Interpreter(program)
    for seed in (0, 1, 0):
        x = _x(seed)
        got = _as_list(runtime(x.copy(), *extra))
        want = _as_list(interp(x.copy(), *extra))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
        if mutate_outputs:
            for g in got:
                g[...] = -7  # the caller owns its outputs
    return sm


def test_position_ids_and_masks_are_computed_once_per_plan() -> None:
    """arange/ge/mul of the input's width are skipped by the plan's code (its source calls
    none of their kernels) and every call still gives torch's answer."""
    torch = pytest.importorskip("torch")
    # without fusion: fused, ge/mul would share a group with the add, which is not shape-only
    sm = StaticModule(POSITIONS, None, StaticOptions(min_managed_bytes=0, fusion=False))
    assert {"aten::size", "aten::arange", "aten::ge", "aten::mul"} <= _skipped_kinds(sm)
    assert sm.generic_mode is not None
    source = sm.entry.factory(sm.generic_mode).source
    for pn in sm.entry.pnodes:
        if pn.index in sm.shape_skip:
            assert f"k{pn.index}(" not in source
    runtime = StaticRuntime(sm)
    for seed in (0, 1, 2):
        x = _x(seed)
        t = torch.from_numpy(x)
        r = torch.arange(t.size(1))
        want = (t + r * (r >= 1)).numpy()
        np.testing.assert_array_equal(runtime(x), want)


def test_a_fusion_group_partly_shape_only_runs_whole() -> None:
    """Fused, ge/mul/add form one group: the group runs on every call (only the size and
    arange before it are skipped), with the interpreter's results."""
    sm = _three_calls_match_the_interpreter(POSITIONS)
    assert "aten::arange" in _skipped_kinds(sm)
    assert "aten::add" not in _skipped_kinds(sm)


def test_a_value_written_in_place_later_is_not_cached() -> None:
    """An arange that add_ writes afterwards runs on every call (cached, it would grow)."""
    sm = _three_calls_match_the_interpreter(INPLACE_USER)
    assert "aten::arange" not in _skipped_kinds(sm)


def test_a_graph_output_is_not_cached() -> None:
    """A shape-only graph output is computed on every call: the caller may write it."""
    sm = _three_calls_match_the_interpreter(OUTPUT, mutate_outputs=True)
    assert "aten::arange" not in _skipped_kinds(sm)


def test_a_value_whose_view_is_written_is_not_cached() -> None:
    """An arange whose select view is written in place runs on every call."""
    sm = _three_calls_match_the_interpreter(ALIAS_WRITTEN)
    assert "aten::arange" not in _skipped_kinds(sm)


def test_a_value_whose_view_is_returned_is_not_cached() -> None:
    """An arange that a returned slice view shares memory with runs on every call, so
    the caller gets a writable array and writing it changes no later call."""
    sm = _three_calls_match_the_interpreter(ALIAS_OUTPUT, True, 1)
    assert "aten::arange" not in _skipped_kinds(sm)


def test_random_draws_are_never_cached() -> None:
    """rand of a shape-determined size draws anew on each call; the size is still cached."""
    sm = StaticModule(RANDOM, None, ON)
    assert "aten::rand" not in _skipped_kinds(sm)
    assert "prim::ListConstruct" in _skipped_kinds(sm)
    runtime = StaticRuntime(sm, seed=3)
    x = _x(0)
    first, second = runtime(x), runtime(x)
    assert not np.array_equal(first, second)


def test_cached_arrays_are_read_only_and_shared_by_runtimes() -> None:
    """The values a plan binds are read-only arrays, and a second runtime of the module
    reuses the layout (and its values) without recording again."""
    sm = StaticModule(POSITIONS, None, ON)
    x = _x(0)
    StaticRuntime(sm)(x)
    [(_, layout)] = sm.layouts()
    arrays = [v for v in layout.shapes.values() if isinstance(v, np.ndarray)]
    assert arrays and not any(a.flags.writeable for a in arrays)
    other = StaticRuntime(sm)
    np.testing.assert_array_equal(other(x), StaticRuntime(StaticModule(POSITIONS, None, OFF))(x))
    assert sm.layouts_made == 1


def test_switched_off_nothing_is_skipped() -> None:
    """fold_shapes=False runs every node, with the same results."""
    off = StaticModule(POSITIONS, None, OFF)
    assert not off.shape_skip and not off.shape_cached
    x = _x(1)
    np.testing.assert_array_equal(StaticRuntime(off)(x), StaticRuntime(StaticModule(POSITIONS, None, ON))(x))


ZOO_CASES = ["bert.trace", "gpt2.trace", "shufflenet_v2_x0_5.script", "shufflenet_v2_x0_5.trace"]


@pytest.mark.parametrize("case", ZOO_CASES)
@pytest.mark.parametrize("fold", [True, False])
def test_zoo_cases_match_torch_with_shape_folding_on_and_off(case: str, fold: bool) -> None:
    """BERT, GPT-2 and ShuffleNet (masks, position ids, channel-shuffle sizes) give torch's
    outputs with shape-only values cached and without; with it on, nodes are skipped."""
    pytest.importorskip("torch")
    sys.path.insert(0, str(TOOLS))
    import gen_zoo
    import zoo_check
    from zoo_models import ZOO, available

    model_name = case.split(".")[0]
    model = ZOO.get(model_name)
    if model is None or available(model) is not None:
        pytest.skip(f"{model_name} is not available here")
    folder = zoo_check.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    records = {r["name"]: r for r in gen_zoo.process(model_name, folder, generate=True, run=False)}
    if "torch_error" in records[case]:
        pytest.skip(f"torch cannot compile {case}")
    options = StaticOptions(fold_shapes=fold)
    outcome = zoo_check.run_case(case, "static", folder, repeat_under_s=0, options=options)
    assert outcome.status == "match", f"{case}, fold_shapes={fold}: {outcome.error}"
    interp = zoo_check.run_case(case, "interp", folder, repeat_under_s=0)
    assert interp.status == "match", f"{case} on the interpreter: {interp.error}"
    if fold:
        from vm.files.npz import load_inputs, read_npz

        program = compiler.compile_file(str(folder / f"{case}.ir"))
        weights_path = folder / f"{case}.weights.npz"
        weights = read_npz(weights_path) if weights_path.exists() else None
        sm = StaticModule(program, weights, options)
        assert sm.shape_skip, f"{case}: no shape-only node found"
        StaticRuntime(sm)(*load_inputs(folder / f"{case}.inputs.npz", program))


def test_each_input_shape_gets_its_own_values() -> None:
    """Alternating input widths on one runtime: each plan binds the values recorded for
    its own key (an arange of the other width would not even broadcast)."""
    program = compiler.compile_source(POSITIONS)
    runtime, interp = StaticRuntime(StaticModule(program, None, ON)), Interpreter(program)
    rng = np.random.default_rng(0)
    for width in (5, 9, 5, 9, 2):
        x = rng.standard_normal((3, width)).astype(np.float32)
        np.testing.assert_array_equal(runtime(x), interp(x))
    assert runtime.stats["plans_made"] == 3


WEIGHT_WRITTEN = """graph(%self : __torch__.M,
      %x.1 : Tensor):
  %w : Tensor = prim::GetAttr[name="w"](%self)
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %s : Tensor = aten::mul(%w, %two)
  %y : Tensor = aten::add(%x.1, %s, %one)
  %u : Tensor = aten::add_(%w, %w, %one)
  return (%y)
"""


def test_a_value_computed_from_a_weight_written_in_place_is_not_cached() -> None:
    """``w * 2`` reads only a weight and a literal, but the program doubles ``w`` in place on
    every call, so each call sees a new ``w`` (2, 4, 8, 16 ...), as in the interpreter: a
    weight some node may write is no constant (here without fusion groups, which would
    otherwise hide the node from the search)."""
    program = compiler.compile_source(WEIGHT_WRITTEN, fusion=False)
    sm = StaticModule(program, {"w": np.ones(3, np.float32)}, ON)
    runtime, interp = StaticRuntime(sm), Interpreter(program, {"w": np.ones(3, np.float32)})
    x = np.zeros(3, np.float32)
    for call in range(4):
        want = interp(x)
        np.testing.assert_array_equal(want, np.full(3, 2.0 ** (call + 1), np.float32))
        np.testing.assert_array_equal(runtime(x), want)
    assert "aten::mul" not in _skipped_kinds(sm)
