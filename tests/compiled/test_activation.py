"""Compiled activations (vm/ops/compiled/activation.py) against the numpy kernels and torch:
SiLU, exact and tanh GELU, hardswish, in every form the runtimes call (functional,
out variant, in place), on float32 tensors of any size with NaN, ±inf, ±0 and values at the
edges of the exp reduction's range (±87, ±88.7, ±104) anywhere."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.compiled.support import both
from tests.support.cpu_dependent import assert_gelu_matches_torch
from vm.ops import compiled
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.skipif(not compiled.ENABLED, reason="IRVM_KERNELS=numpy: the compiled tier is off")

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-40, -1e-40, 87.0, -87.0, 88.7, -88.7,
                     88.73, -88.73, 104.0, -104.0, 1e-7, -1e-7], np.float32)
# (name, extra args, torch, max error in float32 ulps: of the torch value, or of x for GELU)
CASES = [
    ("silu", (), F.silu, 4.0),
    ("hardswish", (), F.hardswish, 0.0),
    ("gelu", ("none",), F.gelu, 4.0),
    ("gelu", ("tanh",), lambda t: F.gelu(t, approximate="tanh"), 4.0),
]
IDS = ["silu", "hardswish", "gelu", "gelu_tanh"]


@st.composite
def tensors(draw: st.DrawFn) -> np.ndarray:
    shape = draw(st.sampled_from([(1,), (7,), (3, 5), (2, 33, 17), (197 * 64,), (1, 8, 31, 31)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal(shape) * draw(st.sampled_from([1.0, 6.0, 40.0]))).astype(np.float32)
    flat = x.reshape(-1)
    for i in draw(st.lists(st.integers(0, flat.size - 1), max_size=8)):
        flat[i] = SPECIALS[draw(st.integers(0, len(SPECIALS) - 1))]
    return x


def _close(got: np.ndarray, want: np.ndarray, x: np.ndarray, ulps: float, of_x: bool) -> None:
    if of_x:  # exact GELU: torch's answer at its special points depends on the CPU
        assert_gelu_matches_torch(got, want, x, ulps)
        return
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    ok = np.isfinite(want)
    ref = np.abs(x[ok] if of_x else want[ok]).astype(np.float32)
    bound = ulps * np.spacing(ref).astype(np.float64) + 2e-38  # below e^-87 the kernels flush to 0
    assert (np.abs(got[ok].astype(np.float64) - want[ok]) <= bound).all()


@pytest.mark.parametrize(("name", "args", "theirs", "ulps"), CASES, ids=IDS)
@given(x=tensors())
def test_matches_torch_and_the_numpy_kernel(name, args, theirs, ulps, x) -> None:
    op = lookup(f"aten::{name}")
    want = theirs(torch.from_numpy(x)).numpy()
    fast, slow = both(lambda: op.kernel(x, *args))
    _close(fast, want, x, ulps, name == "gelu")
    _close(fast, slow, x, 2 * ulps, name == "gelu")  # each within ulps of torch


@pytest.mark.parametrize(("name", "args", "theirs", "ulps"), CASES, ids=IDS)
def test_out_variant_and_in_place_write_the_functional_values(name, args, theirs, ulps) -> None:
    x = (np.random.default_rng(1).standard_normal((4, 300)) * 9).astype(np.float32)
    x[0, :len(SPECIALS)] = SPECIALS
    op, inplace = lookup(f"aten::{name}"), lookup(f"aten::{name}_")
    want = op.kernel(x, *args)
    buf = np.full_like(x, 7.0)
    assert op.out(buf, x, *args) is buf
    np.testing.assert_array_equal(buf, want)
    y = x.copy()
    assert inplace.kernel(y, *args) is y
    np.testing.assert_array_equal(y, want)


def test_non_contiguous_and_float64_inputs_take_the_numpy_kernel() -> None:
    x = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)[:, ::2]
    fast, slow = both(lambda: lookup("aten::silu").kernel(x))
    np.testing.assert_array_equal(fast, slow)
    x64 = x.astype(np.float64)
    fast, slow = both(lambda: lookup("aten::gelu").kernel(x64, "none"))
    assert fast.dtype == np.float64
    np.testing.assert_array_equal(fast, slow)


def test_gelu_gives_the_right_values_at_the_edges() -> None:
    """The compiled exact GELU gives x * Phi(x)'s right values where torch's kernels disagree:
    -0.0 stays -0.0, -inf and -3e38 give -0.0, +inf gives inf, nan stays nan, 3e38 stays 3e38."""
    x = np.array([-0.0, -np.inf, np.nan, 3e38, -3e38, np.inf] * 4, np.float32)
    got = lookup("aten::gelu").kernel(x, "none")
    assert np.signbit(got[0]) and got[0] == 0 and got[1] == 0 and np.signbit(got[1]) and np.isnan(got[2])
    assert got[3] == np.float32(3e38) and got[4] == 0 and np.signbit(got[4]) and got[5] == np.inf


@pytest.mark.parametrize(("name", "args", "theirs", "ulps"), CASES, ids=IDS)
def test_in_place_calls_take_the_compiled_loop_on_memory_apart(name, args, theirs, ulps, monkeypatch) -> None:
    """``aten::silu_(x)`` and the other in-place forms run the compiled kernel, never with
    its input and output aliased (LLVM keeps an aliased loop scalar: 4-40x slower), and
    write the functional values; the numpy fallback is not reached."""
    from vm.ops.compiled import activation

    key = "gelu_tanh" if args == ("tanh",) else name
    calls: list[bool] = []
    real = activation.KERNELS[key]

    def spy(x, out):
        calls.append(np.shares_memory(x, out))
        real(x, out)

    monkeypatch.setitem(activation.KERNELS, key, spy)
    x = (np.random.default_rng(4).standard_normal((3, 40000)) * 4).astype(np.float32)
    want = lookup(f"aten::{name}").kernel(x, *args)
    calls.clear()
    y = x.copy()
    assert lookup(f"aten::{name}_").kernel(y, *args) is y
    np.testing.assert_array_equal(y, want)
    assert calls and not any(calls), "the compiled loop ran with aliased input and output"
