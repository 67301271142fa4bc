"""Fused kernels give exactly the unfused result: same dtype, same values, every group.

The blocked path is forced on small arrays with a tiny ``min_block``, so that these tests
exercise block boundaries, the thread split and the scratch reuse without big data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import compiler
from compiler.diagnostics import RunError
from compiler.pipeline import optimize
from tests.support.paths import EXAMPLES
from vm.fusion.kernels import FusedKernel
from vm.ir.fusion_spec import fused_opref, fusion_spec
from vm.ops.registry import bind


def _groups(module) -> list:
    found = []
    for graph in [module.main, *module.functions.values()]:
        for node in graph.walk():
            if "Subgraph" in node.attrs:
                found.append(node)
    return found


def _same(a, b) -> None:
    a_list = a if isinstance(a, tuple) else (a,)
    b_list = b if isinstance(b, tuple) else (b,)
    assert len(a_list) == len(b_list)
    for x, y in zip(a_list, b_list):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


CHAIN = """\
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %xw : Tensor = aten::mul(%x, %w) # chain.py:2:9
  %xwb : Tensor = aten::add(%xw, %b, %one) # chain.py:2:9
  %r : Tensor = aten::relu(%xwb) # chain.py:2:4
  %h : Tensor = aten::mul(%r, %half) # chain.py:2:4
  %y : Tensor = aten::add(%h, %x, %one) # chain.py:2:4
  return (%y, %xwb)
"""


def _chain_kernel(min_block: int = 64) -> FusedKernel:
    optimized, _ = optimize(compiler.parse(CHAIN, "chain.ir"))
    (node,) = _groups(optimized)
    return FusedKernel(fusion_spec(node.attrs["Subgraph"]), min_block=min_block, max_block=4 * min_block)


@settings(max_examples=200)
@given(
    n=st.integers(1, 3000),
    dtype=st.sampled_from([np.float32, np.float64, np.int64]),
    scalar_b=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_blocked_chain_equals_unfused(n: int, dtype, scalar_b: bool, seed: int) -> None:
    """Any length (block remainders included), dtype, and a 0-dim operand broadcast."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 4).astype(dtype)
    w = (rng.standard_normal(n) * 4).astype(dtype)
    b = np.array(1.5 if dtype != np.int64 else 2, dtype=dtype) if scalar_b else (rng.standard_normal(n)).astype(dtype)
    kernel = _chain_kernel(min_block=16)
    _same(kernel(x, w, b), kernel._result(kernel._run_whole([x, w, b])))


def test_nan_and_inf_behave_as_unfused() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0] * 50, np.float32)
    kernel = _chain_kernel(min_block=16)
    _same(kernel(x, x, x), kernel._result(kernel._run_whole([x, x, x])))


def test_float32_group_stays_float32() -> None:
    """The 0.5 constant is a Python float: it must not widen a float32 group to float64."""
    x = np.ones(1000, np.float32)
    y, xwb = _chain_kernel()(x, x, x)
    assert y.dtype == np.float32 and xwb.dtype == np.float32


def test_shapes_that_do_not_match_fall_back_and_say_so() -> None:
    kernel = _chain_kernel(min_block=16)
    x = np.ones((40, 30), np.float32)
    b = np.ones((1, 30), np.float32)
    y, _ = kernel(x, x, b)
    np.testing.assert_array_equal(y, np.full((40, 30), 2.0, np.float32))  # relu(1*1+1)*0.5+1
    assert kernel.stats["unfused"] == 1
    assert kernel.fallback_reasons == {"inputs of different shapes": 1}


def test_small_inputs_run_unfused() -> None:
    kernel = _chain_kernel(min_block=1 << 16)
    kernel(np.ones(10, np.float32), np.ones(10, np.float32), np.ones(10, np.float32))
    assert kernel.stats == {"fused": 0, "unfused": 1, "numba": 0}
    assert "smaller than two blocks" in kernel.fallback_reasons


def test_errors_name_the_original_node() -> None:
    """An int division by zero inside the group names aten::div's line, not the group."""
    text = """\
graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %y, %one) # model.py:3:8
  %q : Tensor = aten::floor_divide(%a, %y) # model.py:4:8
  %r : Tensor = aten::mul(%q, %a) # model.py:5:8
  return (%r)
"""
    optimized, _ = optimize(compiler.parse(text, "model.ir"))
    groups = _groups(optimized)
    assert groups, "the group must form for this test to mean anything"
    kernel = bind(fused_opref(groups[0]))
    # the group's inputs come in the order the fuser met them: feed zeros to %y by name
    data = {"x": np.ones(200, np.int64), "y": np.zeros(200, np.int64)}
    args = [data[v.name] for v in groups[0].attrs["Subgraph"].inputs]
    with pytest.raises(RunError) as info:
        kernel(*args)
    assert "floor_divide" in str(info.value)
    assert info.value.span is not None and info.value.span.line == 4


def test_fused_opref_rebinds_to_an_equal_kernel() -> None:
    """The OpRef stored in bytecode rebuilds a kernel computing the same thing."""
    optimized, _ = optimize(compiler.parse(CHAIN, "chain.ir"))
    (node,) = _groups(optimized)
    rebound = bind(fused_opref(node))
    x = np.linspace(-3, 3, 500, dtype=np.float32)
    _same(rebound(x, x, x), _chain_kernel()(x, x, x))


# --- the numba fuser (skipped, with its reason, where numba is not installed) -----------

def _numba_or_skip() -> None:
    pytest.importorskip("numba", reason="numba is not installed (pip install irvm[fast])")


def test_numba_kernel_matches_unfused_within_float32_rounding(tmp_path: Path, monkeypatch) -> None:
    _numba_or_skip()
    import vm.fusion.numba_backend as fn

    monkeypatch.setenv("IRVM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fn, "THRESHOLD", 64)
    kernel = _chain_kernel(min_block=16)
    assert kernel.enable_numba() == []
    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(5000).astype(np.float32) for _ in range(3))
    x[:4] = [np.nan, np.inf, -np.inf, -0.0]
    fused = kernel(x, w, b)
    assert kernel.stats["numba"] == 1
    unfused = kernel._result(kernel._run_whole([x, w, b]))
    for got, want in zip(fused, unfused):
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=0, equal_nan=True)
    assert list(tmp_path.glob("numba/fused_*.py")), "kernels are real files, so numba can cache them"


def test_numba_never_compiles_on_a_run(tmp_path: Path, monkeypatch) -> None:
    """Dtypes not compiled ahead run blocked (and say so) instead of compiling lazily."""
    _numba_or_skip()
    import vm.fusion.numba_backend as fn

    monkeypatch.setenv("IRVM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fn, "THRESHOLD", 64)
    kernel = _chain_kernel(min_block=16)
    assert kernel.enable_numba() == []  # float32, as the sub-graph declares plain Tensors
    x = np.ones(4000, np.float64)
    kernel(x, x, x)
    assert kernel.stats["numba"] == 0 and kernel.stats["fused"] == 1
    assert "numba: dtypes not compiled ahead" in kernel.fallback_reasons


def test_interpreter_fuser_numba_compiles_at_construction(tmp_path: Path, monkeypatch) -> None:
    """Interpreter(fuser="numba") compiles every group's numba loop before the first call."""
    _numba_or_skip()
    import vm

    monkeypatch.setenv("IRVM_CACHE_DIR", str(tmp_path))
    program = compiler.compile_file(EXAMPLES / "ratio_iou.ir")
    interp = vm.Interpreter(program, fuser="numba")
    assert interp.fuser_problems == []
    kernels = [k for ks in interp.kernels for k in ks if isinstance(k, FusedKernel)]
    assert kernels and all(k.numba_kernels for k in kernels)


def test_unknown_fuser_is_refused() -> None:
    import vm

    program = compiler.compile_source(CHAIN, "chain.ir")
    with pytest.raises(ValueError, match="unknown fuser"):
        vm.Interpreter(program, fuser="cuda")
