"""Compiled softmax, log_softmax and attention's safe_softmax (vm/ops/compiled/softmax.py)
against torch and the numpy kernels: rows with -inf (masked scores: exactly 0), all -inf
(NaN, or zeros for attention's softmax), NaN, and large spreads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.compiled.support import both
from vm.ops import _softmax, compiled
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not compiled.ENABLED, reason="IRVM_KERNELS=numpy: the compiled tier is off")


@st.composite
def scores(draw: st.DrawFn) -> np.ndarray:
    shape = draw(st.sampled_from([(1, 1), (4, 7), (2, 3, 16), (12, 33)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = (rng.standard_normal(shape) * draw(st.sampled_from([1.0, 10.0, 60.0]))).astype(np.float32)
    flat = x.reshape(-1, shape[-1])
    for r in draw(st.lists(st.integers(0, flat.shape[0] - 1), max_size=3)):
        kind = draw(st.sampled_from(["mask", "all", "nan"]))
        if kind == "mask":
            flat[r, : max(1, shape[-1] // 2)] = -np.inf
        elif kind == "all":
            flat[r] = -np.inf
        else:
            flat[r, draw(st.integers(0, shape[-1] - 1))] = np.nan
    return x


def _same(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=tol, atol=tol)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@given(x=scores())
def test_matches_torch_and_numpy(name, x) -> None:
    want = getattr(torch, name)(torch.from_numpy(x), -1).numpy()
    fast, slow = both(lambda: lookup(f"aten::{name}.int").kernel(x, -1, None))
    _same(fast, want, 2e-6)
    _same(fast, slow, 2e-6)
    if name == "softmax":  # a masked score is exactly 0, as exp(-inf) is
        masked = np.isneginf(x) & ~np.isnan(want)
        assert (fast[masked] == 0).all()


@given(x=scores())
def test_safe_softmax_zeroes_fully_masked_rows(x) -> None:
    fast, slow = both(lambda: _softmax.safe_softmax(x, -1))
    dead = np.isneginf(x).all(axis=-1)
    assert (fast[dead] == 0).all()
    _same(fast, slow, 2e-6)


def test_softmax_over_another_axis_takes_the_numpy_kernel() -> None:
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    fast, slow = both(lambda: lookup("aten::softmax.int").kernel(x, 0, None))
    np.testing.assert_array_equal(fast, slow)
