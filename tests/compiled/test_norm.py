"""Compiled layer_norm, RMS norm, group_norm and eval batch_norm (vm/ops/compiled/norm.py)
against torch and the numpy kernels, with and without weight and bias, on rows with large
means (where a one-pass variance would lose every digit) and on NaN rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.compiled.support import both
from vm.ops import compiled, registry
from vm.ops.prepared import UNKNOWN, prepared
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional

pytestmark = pytest.mark.skipif(not compiled.ENABLED, reason="IRVM_KERNELS=numpy: the compiled tier is off")


def _data(seed: int, shape: tuple[int, ...], mean: float) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + mean).astype(np.float32)


def _t(a: np.ndarray | None):
    return None if a is None else torch.from_numpy(a)


@given(seed=st.integers(0, 2**31), rows=st.sampled_from([1, 3, 16, 197]), row=st.sampled_from([1, 7, 64, 768]),
       mean=st.sampled_from([0.0, 100.0, -3e3]), affine=st.sampled_from(["both", "weight", "bias", "none"]))
def test_layer_norm(seed, rows, row, mean, affine) -> None:
    x = _data(seed, (rows, row), mean)
    w = _data(seed + 1, (row,), 0) if affine in ("both", "weight") else None
    b = _data(seed + 2, (row,), 0) if affine in ("both", "bias") else None
    want = F.layer_norm(torch.from_numpy(x), (row,), _t(w), _t(b), 1e-5).numpy()
    fast, slow = both(lambda: lookup("aten::layer_norm").kernel(x, [row], w, b, 1e-5, True))
    wide = x.astype(np.float64)
    exact = (wide - wide.mean(-1, keepdims=True)) / np.sqrt(wide.var(-1, keepdims=True) + 1e-5)
    exact = exact * (1 if w is None else w) + (0 if b is None else b)
    scale = np.abs(exact).max() + 1
    np.testing.assert_allclose(fast, exact, rtol=0, atol=2e-6 * scale)  # float64 statistics: near exact
    # torch and the numpy kernel keep the mean in float32: an ulp of it, over the spread, is theirs to lose
    loose = 4e-6 * scale + 2 * float(np.spacing(np.float32(abs(mean)))) * scale
    np.testing.assert_allclose(fast, want, rtol=0, atol=loose)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=loose)


@given(seed=st.integers(0, 2**31), row=st.sampled_from([1, 8, 96]), weighted=st.booleans())
def test_rms_norm(seed, row, weighted) -> None:
    x = _data(seed, (5, row), 1.0)
    w = _data(seed + 1, (row,), 0) if weighted else None
    want = F.rms_norm(torch.from_numpy(x), (row,), _t(w), 1e-6).numpy()
    fast, slow = both(lambda: lookup("aten::rms_norm").kernel(x, [row], w, 1e-6))
    np.testing.assert_allclose(fast, want, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(fast, slow, rtol=2e-6, atol=2e-6)


@given(seed=st.integers(0, 2**31), groups=st.sampled_from([1, 2, 4]), hw=st.sampled_from([(1, 1), (3, 5), (8, 8)]),
       affine=st.sampled_from(["both", "weight", "bias", "none"]), mean=st.sampled_from([0.0, 50.0]))
def test_group_norm(seed, groups, hw, affine, mean) -> None:
    c = 8
    x = _data(seed, (2, c, *hw), mean)
    w = _data(seed + 1, (c,), 0) if affine in ("both", "weight") else None
    b = _data(seed + 2, (c,), 0) if affine in ("both", "bias") else None
    want = F.group_norm(torch.from_numpy(x), groups, _t(w), _t(b), 1e-5).numpy()
    fast, slow = both(lambda: lookup("aten::group_norm").kernel(x, groups, w, b, 1e-5, True))
    grouped = x.astype(np.float64).reshape(2, groups, -1)
    exact = ((grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    exact = exact * (1 if w is None else w.reshape(-1, 1, 1)) + (0 if b is None else b.reshape(-1, 1, 1))
    np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-5)
    # torch and numpy keep the mean in float32: an ulp of it over the group's spread is theirs to lose
    spread = float(np.sqrt(grouped.var(-1)).min()) + 1e-3
    gain = 1 + (0 if w is None else float(np.abs(w).max()))
    loose = 1e-5 + 4 * float(np.spacing(np.float32(mean + 8))) / spread * gain
    np.testing.assert_allclose(fast, want, rtol=0, atol=loose)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=loose)


def test_nan_in_a_row_stays_in_that_row() -> None:
    x = _data(0, (3, 16), 0)
    x[1, 4] = np.nan
    fast, slow = both(lambda: lookup("aten::layer_norm").kernel(x, [16], None, None, 1e-5, True))
    assert np.isnan(fast[1]).all() and np.isfinite(fast[[0, 2]]).all()
    np.testing.assert_array_equal(np.isnan(fast), np.isnan(slow))


def test_eval_batch_norm_prepared_form_is_one_pass_with_the_kernels_values() -> None:
    c = 6
    x = _data(1, (2, c, 5, 5), 3.0)
    w, b, m, v = (_data(i, (c,), 0) for i in range(2, 6))
    v = np.abs(v) + 0.1
    want = F.batch_norm(torch.from_numpy(x), torch.from_numpy(m), torch.from_numpy(v), torch.from_numpy(w),
                        torch.from_numpy(b), False, 0.1, 1e-5).numpy()
    args = (w, b, m, v, False, 0.1, 1e-5, True)
    ref = registry.OpRef("aten::batch_norm", 1 + len(args), 1)
    forms = prepared(ref, [UNKNOWN, *args], registry.bind(ref), registry.bind_out(ref))
    assert forms is not None
    fast, slow = both(lambda: forms.kernel(x, *args))
    np.testing.assert_allclose(fast, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fast, slow, rtol=1e-6, atol=1e-6)
