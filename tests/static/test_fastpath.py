"""The static runtime's plan-time fast path on the MLP and on relu/clamp chains.

- ``maximum``/``minimum`` nodes with a constant operand (relu, clamp) whose shape the plan
  key fixes get the constant as a filled, read-only array of the output's shape (numpy's
  SIMD loop for these ufuncs needs array operands), one array shared per value, dtype and
  shape; the results stay bit for bit the interpreter's, NaN payloads and signed zeros
  included;
- nodes whose shape is not fixed by the plan (inside a loop) keep the scalar;
- the benchmark's 3-layer MLP in a steady state allocates no managed intermediate: every
  linear and relu writes its slab view, tracemalloc sees only the output and numpy's own
  small iteration buffer;
- chunk's pieces have planned shapes, so the LSTM gates run in the slab;
- a fusion group near the fused kernel's size threshold is timed both ways when the plan
  is made, and the faster way runs.
"""

from __future__ import annotations

import time
import tracemalloc
import warnings

import numpy as np
import pytest

import compiler
import vm
from tests.static.test_runtime import LSTM_CELL
from tests.support.paths import EXAMPLES
from vm import StaticRuntime
from vm.ops.linalg import linear_fast
from vm.static import StaticOptions, fastpath

MLP = """
graph(%x : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor, %b2 : Tensor, %w3 : Tensor, %b3 : Tensor):
  %l1 : Tensor = aten::linear(%x, %w1, %b1)
  %h1 : Tensor = aten::relu(%l1)
  %l2 : Tensor = aten::linear(%h1, %w2, %b2)
  %h2 : Tensor = aten::relu(%l2)
  %y : Tensor = aten::linear(%h2, %w3, %b3)
  return (%y)
"""

CLAMPS = """
graph(%x : Tensor, %y : Tensor):
  %zero : float = prim::Constant[value=0.]()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::relu(%y)
  %c : Tensor = aten::clamp(%x, %eps, %none)
  %d : Tensor = aten::clamp(%y, %none, %zero)
  %s : Tensor = aten::add(%a, %b, %one)
  %t : Tensor = aten::add(%c, %d, %one)
  %u : Tensor = aten::mul(%s, %t)
  return (%u, %a, %d)
"""

LOOP_RELU = """
graph(%x : Tensor):
  %true : bool = prim::Constant[value=1]()
  %n : int = prim::Constant[value=3]()
  %half : float = prim::Constant[value=0.5]()
  %out : Tensor = prim::Loop(%n, %true, %x)
    block0(%i : int, %acc : Tensor):
      %r : Tensor = aten::relu(%acc)
      %m : Tensor = aten::mul(%r, %half)
      -> (%true, %m)
  return (%out)
"""


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.itemsize}")


def _specials(n: int, dtype: type, seed: int) -> np.ndarray:
    """Random bit patterns (so NaNs of many payloads and signs), with +-0 and +-inf."""
    uint = np.dtype(dtype).str.replace("f", "u")
    raw = np.random.default_rng(seed).integers(0, 2 ** (8 * np.dtype(dtype).itemsize) - 1, n, dtype=uint)
    x = raw.view(dtype).copy()
    x[::5] = (np.random.default_rng(seed).standard_normal(x[::5].size) * 3).astype(dtype)
    x[1::7], x[2::7], x[3::11], x[4::11] = -0.0, 0.0, np.inf, -np.inf
    return x


def _interpreted(text: str, *args: np.ndarray):
    with np.errstate(all="ignore"):
        return vm.Interpreter(compiler.compile_source(text))(*args)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_filled_constants_give_the_interpreters_bits(dtype) -> None:
    x, y = _specials(4096, dtype, 1), _specials(4096, dtype, 2)
    expected = _interpreted(CLAMPS, x, y)
    rt = StaticRuntime(compiler.compile_source(CLAMPS, fusion=False))
    with np.errstate(all="ignore"):
        runs = [rt(x, y) for _ in range(3)]  # the recording run, then two planned runs
    for got in runs:
        for g, e in zip(got, expected):
            assert np.array_equal(_bits(g), _bits(e))
    filled = [a for _, scalars, _ in rt._last_plan.fast.values() for a in scalars if type(a) is np.ndarray]
    assert len(filled) == 4, "relu, relu, clamp(min), clamp(max) should each get a filled constant"
    assert all(a.shape == x.shape and not a.flags.writeable for a in filled)
    zeros = [a for a in filled if not a.any()]
    assert len({id(a) for a in zeros}) == 1, "one shared zeros array for the four zero constants"


def test_small_tensors_and_loop_bodies_keep_the_scalar() -> None:
    small = np.linspace(-1, 1, fastpath.FILL_MIN_ELEMENTS - 1, dtype=np.float32)
    big = np.linspace(-1, 1, 4096, dtype=np.float32)
    for text, args in ((CLAMPS, (small, small)), (LOOP_RELU, (big,))):
        rt = StaticRuntime(compiler.compile_source(text, fusion=False))
        expected = _interpreted(text, *args)
        for _ in range(2):
            got = rt(*args)
        got, expected = (got, expected) if isinstance(got, tuple) else ((got,), (expected,))
        assert all(np.array_equal(_bits(g), _bits(e)) for g, e in zip(got, expected))
        assert not any(type(a) is np.ndarray for _, scalars, _ in rt._last_plan.fast.values() for a in scalars)


def _mlp_inputs(batch: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32) * 0.1

    return [f32(batch, 256), f32(512, 256), f32(512), f32(512, 512), f32(512), f32(10, 512), f32(10)]


def test_mlp_steady_state_allocates_no_managed_intermediate_and_matches_the_interpreter() -> None:
    inputs = _mlp_inputs(256)
    program = compiler.compile_source(MLP)
    expected = vm.Interpreter(program)(*inputs)
    rt = StaticRuntime(program)
    rt(*inputs), rt(*inputs)
    plan = rt._last_plan
    assert len(plan.views) == 4, "both linears and both relus write slab views"
    intermediate = 256 * 512 * 4
    tracemalloc.start()
    try:
        got = rt(*inputs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(_bits(got), _bits(expected))
    # the output (256 x 10 floats) and numpy's bounded iteration buffer, no 512 KiB tensor
    assert peak < intermediate // 4, f"peak {peak} bytes in a steady-state run"
    # each relu writes over its linear's output (it dies there): two buffers, not four
    names = {v.name: slot for v, slot in rt.module.entry.slots.items()}
    views = plan.views
    assert np.shares_memory(views[names["l1"]], views[names["h1"]])
    assert np.shares_memory(views[names["l2"]], views[names["h2"]])
    assert not np.shares_memory(views[names["h1"]], views[names["l2"]])
    assert plan.memory.slab_bytes == 2 * intermediate


SIGMOID = """
graph(%x : Tensor):
  %s : Tensor = aten::sigmoid(%x)
  return (%s)
"""


def test_fast_sigmoid_overflows_silently_like_its_kernel() -> None:
    """exp(-x) overflows for x << 0; the kernel ignores it (sigmoid is 0 there), so a planned
    run must not turn it into a RuntimeWarning (an error under -W error)."""
    x = np.full(50_000, -200.0, np.float32)
    rt = StaticRuntime(compiler.compile_source(SIGMOID))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert not rt(x).any()
    assert rt._last_plan.fast, "the planned run called sigmoid through the fast path"


def test_chunk_pieces_have_planned_shapes_so_the_lstm_gates_run_in_the_slab() -> None:
    """chunk's pieces follow from the input shapes, so the gate activations after it are
    managed (slab views) and called unguarded, and the results keep the interpreter's bits."""
    rng = np.random.default_rng(4)
    b, h = 64, 256

    def f32(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape, dtype=np.float32)

    args = [f32(b, h), f32(b, h), f32(b, h), f32(4 * h, h), f32(4 * h, h), f32(4 * h), f32(4 * h)]
    program = compiler.compile_source(LSTM_CELL)
    expected = vm.Interpreter(program)(*args)
    rt = StaticRuntime(program, options=StaticOptions(fused_kernels=False))
    for _ in range(3):
        got = rt(*args)
        assert all(np.array_equal(_bits(g), _bits(e)) for g, e in zip(got, expected))
    sm, plan = rt.module, rt._last_plan
    names = {v.name: slot for v, slot in sm.entry.slots.items()}
    gates = [names[n] for n in ("i", "f", "c", "o", "fc", "ic", "tc")]
    assert set(gates) <= set(plan.views), "every gate activation writes a slab view"
    assert not any(guarded for _, _, guarded in plan.mode.fast), "no dtype guard is needed"
    assert not {names[n] for n in ("i0", "f0", "c0", "o0")} & sm.tainted


def test_profile_reports_the_filled_constants() -> None:
    from vm.static.profile import profile

    report = profile(compiler.compile_source(MLP), _mlp_inputs(256), runs=1)
    # the two relus share one zeros row of the hidden layer's width
    assert report.filled_constants == 1 and report.filled_bytes == 512 * 4
    assert "constants filled to arrays for maximum/minimum: 1, 2048 bytes" in str(report)


class _Timed:
    """A fused kernel stand-in: delegates to the real one, the fused call made slower or
    faster than the unfused one by sleeping in the other."""

    def __init__(self, kernel, slow: str):
        self.kernel, self.slow = kernel, slow
        self.min_block, self.calls = kernel.min_block, {"fused": 0, "unfused": 0}

    def __call__(self, *args):
        self.calls["fused"] += 1
        if self.slow == "fused":
            time.sleep(0.002)
        return self.kernel(*args)

    def run_unfused(self, *args):
        self.calls["unfused"] += 1
        if self.slow == "unfused":
            time.sleep(0.002)
        return self.kernel.run_unfused(*args)


RATIO_IOU = (EXAMPLES / "ratio_iou.ir").read_text()


@pytest.mark.parametrize("slow", ["fused", "unfused"])
def test_a_plan_times_a_small_fused_group_against_its_nodes_and_keeps_the_faster(slow) -> None:
    """Near the fused kernel's size threshold the plan measures both ways on the recorded
    inputs; the faster one runs, and the results equal the interpreter's either way."""
    from vm.fusion.kernels import MIN_BLOCK

    program = compiler.compile_source(RATIO_IOU, fusion=True)
    rt = StaticRuntime(program)
    (group,) = rt.module.groups
    group.kernel = _Timed(group.kernel, slow)
    rng = np.random.default_rng(9)
    n = 2 * MIN_BLOCK
    assert n < fastpath.MEASURE_BELOW
    args = [rng.random(n, dtype=np.float32) + 0.1 for _ in range(8)]
    expected = vm.Interpreter(program)(*args)
    for _ in range(3):
        np.testing.assert_array_equal(rt(*args), expected)
    assert group.kernel.calls["unfused"] == fastpath.MEASURE_CALLS  # timed once, at plan time
    assert rt._last_plan.mode.fused == (frozenset() if slow == "fused" else frozenset({0}))
    if slow == "fused":
        from vm.static.profile import profile

        report = profile(rt.module, args, runs=1)
        assert any(fastpath.TIMED_SLOWER in f for f in report.fusion_fallbacks)


def test_big_groups_are_fused_without_timing() -> None:
    program = compiler.compile_source(RATIO_IOU, fusion=True)
    rt = StaticRuntime(program)
    (group,) = rt.module.groups
    group.kernel = _Timed(group.kernel, "fused")
    args = [np.full(fastpath.MEASURE_BELOW, 0.5, np.float32) for _ in range(8)]
    rt(*args), rt(*args)
    assert group.kernel.calls["unfused"] == 0 and rt._last_plan.mode.fused == frozenset({0})


def test_nodes_inside_a_fused_kernel_get_no_filled_constants() -> None:
    """A plan that runs a group fused does not fill constants for the group's clamps."""
    program = compiler.compile_source(RATIO_IOU, fusion=True)
    rt = StaticRuntime(program, options=StaticOptions(measure_fused=False))
    args = [np.full(fastpath.MEASURE_BELOW, 0.5, np.float32) for _ in range(8)]
    rt(*args), rt(*args)
    assert rt._last_plan.mode.fused == frozenset({0}) and not rt._last_plan.fast
    unfused = StaticRuntime(program, options=StaticOptions(fused_kernels=False))
    unfused(*args), unfused(*args)
    filled = {id(a) for _, scalars, _ in unfused._last_plan.fast.values() for a in scalars if type(a) is np.ndarray}
    assert len(filled) == 2, "the zero and the 1e-5 of the three clamps, shared"


def test_a_long_last_dim_is_filled_as_one_broadcast_row_a_short_one_in_full(monkeypatch) -> None:
    """With a long last dimension the filled constant is one row of it (little memory,
    still an array operand); with a short one a full array up to FILL_MAX_BYTES, then the
    scalar; the bits stay the interpreter's."""
    short = np.linspace(-1, 1, 2048 * 8, dtype=np.float32).reshape(2048, 8)
    rt = StaticRuntime(compiler.compile_source(CLAMPS, fusion=False))
    rt(short, short), rt(short, short)
    shapes = {a.shape for _, scalars, _ in rt._last_plan.fast.values() for a in scalars if type(a) is np.ndarray}
    assert shapes == {(2048, 8)}
    monkeypatch.setattr(fastpath, "FILL_MAX_BYTES", 1 << 12)
    rt = StaticRuntime(compiler.compile_source(CLAMPS, fusion=False))
    rt(short, short), rt(short, short)
    assert not any(type(a) is np.ndarray for _, scalars, _ in rt._last_plan.fast.values() for a in scalars)
    x = _specials(64 * 512, np.float32, 5).reshape(64, 512)
    y = _specials(64 * 512, np.float32, 6).reshape(64, 512)
    rt = StaticRuntime(compiler.compile_source(CLAMPS, fusion=False))
    expected = _interpreted(CLAMPS, x, y)
    with np.errstate(all="ignore"):
        got = [rt(x, y) for _ in range(2)][-1]
    assert all(np.array_equal(_bits(g), _bits(e)) for g, e in zip(got, expected))
    filled = [a for _, scalars, _ in rt._last_plan.fast.values() for a in scalars if type(a) is np.ndarray]
    assert filled and all(a.shape == (512,) for a in filled)


LINEAR_3D = """
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %y : Tensor = aten::linear(%x, %w, %b)
  %r : Tensor = aten::relu(%y)
  return (%r)
"""


@pytest.mark.parametrize("batch", [1, 256])
def test_linear_runs_as_matmul_and_add_with_the_kernels_bits(batch) -> None:
    """A 2-d linear with a bias is called as the kernel's own two numpy calls (no dtype
    dispatch), unguarded; the MLP's result keeps the interpreter's bits."""
    inputs = _mlp_inputs(batch)
    program = compiler.compile_source(MLP)
    expected = vm.Interpreter(program)(*inputs)
    rt = StaticRuntime(program)
    for _ in range(3):
        assert np.array_equal(_bits(rt(*inputs)), _bits(expected))
    ufuncs = [u for u, _, guard in rt._last_plan.fast.values() if guard is None]
    assert ufuncs.count(linear_fast) == 3


def test_linear_of_a_3d_input_keeps_its_kernel() -> None:
    rng = np.random.default_rng(8)
    args = [rng.standard_normal(s, dtype=np.float32) for s in ((4, 64, 32), (48, 32), (48,))]
    program = compiler.compile_source(LINEAR_3D)
    rt = StaticRuntime(program)
    for _ in range(2):
        assert np.array_equal(_bits(rt(*args)), _bits(vm.Interpreter(program)(*args)))
    assert linear_fast not in [u for u, _, _ in rt._last_plan.fast.values()]
