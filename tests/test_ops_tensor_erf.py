"""vm.ops._erf: the scipy-free vectorized erf/erfc stays within a few ulp of C's libm
(math.erf) over the whole line, tails included, and keeps ±0, ±inf and nan as C does."""

import math

import numpy as np
import pytest

from vm.ops._erf import erf, erfc
from vm.ops.registry import lookup


def _ulps(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want) / np.spacing(np.maximum(np.abs(want), np.finfo(float).tiny))))


POINTS = np.concatenate([
    np.random.default_rng(0).standard_normal(20000) * 4,
    np.linspace(-7, 28, 20001),
    [0.46875, -0.46875, 4.0, -4.0, 1e-300, 5e-324, -1e-10, 26.5, 27.2, 27.4],
])


def test_erf_float64_within_a_few_ulp_of_libm() -> None:
    assert _ulps(erf(POINTS), np.array([math.erf(v) for v in POINTS])) <= 8


def test_erfc_float64_within_a_few_ulp_of_libm_including_the_far_tail() -> None:
    assert _ulps(erfc(POINTS), np.array([math.erfc(v) for v in POINTS])) <= 8


def test_special_values() -> None:
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan])
    e, c = erf(x), erfc(x)
    assert list(np.signbit(e[:2])) == [False, True] and list(e[:4]) == [0.0, -0.0, 1.0, -1.0]
    assert list(c[:4]) == [1.0, 1.0, 0.0, 2.0] and np.isnan(e[4]) and np.isnan(c[4])


def test_float32_is_correctly_rounded_and_keeps_dtype() -> None:
    x = POINTS.astype(np.float32)
    got = lookup("aten::erf").kernel(x)
    assert got.dtype == np.float32
    want = np.array([math.erf(float(v)) for v in x]).astype(np.float32)
    assert np.array_equal(got, want)


def test_gelu_exact_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    x = np.linspace(-8, 8, 4001)
    got = lookup("aten::gelu").kernel(x, "none")
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=1e-15)
