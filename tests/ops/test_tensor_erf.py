"""vm.ops._erf: the scipy-free vectorized erf/erfc stays within a few ulp of C's libm
(math.erf) over the whole line, tails included, and keeps ±0, ±inf and nan as C does."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from tests.support.cpu_dependent import assert_gelu_matches_torch
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


def _f32_grid() -> np.ndarray:
    """Every 64th float32 in [0, 4.5] (both signs), a decade sweep down to subnormals, the tails."""
    bits = np.arange(0, np.float32(4.5).view(np.int32), 64, dtype=np.int32)
    pos = bits.view(np.float32)
    tiny = np.geomspace(1e-45, 1.0, 2000, dtype=np.float32)
    tails = np.array([3.9, 3.92, 3.95, 4.0, 5.0, 10.0, 1e30, np.finfo(np.float32).max], np.float32)
    return np.concatenate([pos, -pos, tiny, -tiny, tails, -tails])


def _ulps32(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """|got - want| in units of the float32 spacing at want (want in float64)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


def test_float32_erf_within_a_few_ulp_of_the_true_value_and_keeps_dtype() -> None:
    """The float32 approximation (vm/ops/_erf32.py) stays within 2.5 ulp of erf over every
    64th float32 of [-4.5, 4.5], down to subnormals and out in the tails, in float32."""
    x = _f32_grid()
    got = lookup("aten::erf").kernel(x)
    assert got.dtype == np.float32
    want = np.array([math.erf(float(v)) for v in x])
    assert _ulps32(got, want).max() <= 3.0


def test_float32_erf_special_values() -> None:
    """±0 keep their sign, ±inf give ±1, nan stays nan, and erf stays odd, in the float32 path."""
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0], np.float32)
    got = lookup("aten::erf").kernel(x)
    assert list(np.signbit(got[:2])) == [False, True]
    assert list(got[:4]) == [0.0, -0.0, 1.0, -1.0] and np.isnan(got[4])
    assert _ulps32(got[5:6], np.array([math.erf(1.0)]))[0] <= 3.0 and got[6] == -got[5]


def test_float32_erf_within_four_ulp_of_torch() -> None:
    """Against torch.erf (itself within 1 ulp) on the same dense grid, specials included."""
    torch = pytest.importorskip("torch")
    x = np.concatenate([_f32_grid(), np.array([np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)])
    got = lookup("aten::erf").kernel(x)
    want = torch.erf(torch.from_numpy(x)).numpy()
    same_nan = np.isnan(got) == np.isnan(want)
    assert same_nan.all()
    finite = ~np.isnan(want)
    assert _ulps32(got[finite], want[finite].astype(np.float64)).max() <= 4.0
    assert np.array_equal(np.signbit(got[finite]), np.signbit(want[finite]))


@settings(max_examples=200, deadline=None)
@given(arrays(np.float32, array_shapes(max_dims=3, max_side=70), elements=st.floats(width=32)))
def test_float32_erf_and_gelu_agree_with_torch(x: np.ndarray) -> None:
    """Property: on any float32 tensor (any shape, any value), erf is within 4 ulp of
    torch.erf and exact GELU within 4 ulp of the float32 scale of x of torch's GELU (torch's
    own float32 kernel is up to 3.2 of them from the true GELU, near x = 3), and the right
    value where torch's kernels disagree (tests/support/cpu_dependent.py)."""
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(x.copy())
    got, want = lookup("aten::erf").kernel(x), torch.erf(t).numpy()
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert (_ulps32(got[ok], want[ok].astype(np.float64)) <= 4.0).all()
    g, gw = lookup("aten::gelu").kernel(x, "none"), torch.nn.functional.gelu(t).numpy()
    assert_gelu_matches_torch(g, gw, x)


def test_gelu_exact_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    x = np.linspace(-8, 8, 4001)
    got = lookup("aten::gelu").kernel(x, "none")
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=4e-16, atol=1e-15)


def test_gelu_float32_matches_torch_into_a_planned_buffer() -> None:
    """The out variant writes exact GELU of a float32 tensor into its buffer (the static
    runtime's path), with torch's value, and at +inf and -inf the right limits (inf and
    -0.0), which torch's kernels give or not depending on the CPU."""
    torch = pytest.importorskip("torch")
    x = np.linspace(-9, 9, 70000, dtype=np.float32).reshape(7, -1)
    x[0, :3] = [np.inf, -np.inf, np.nan]
    buf = np.empty_like(x)
    got = lookup("aten::gelu").out(buf, x, "none")
    assert got is buf
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    assert_gelu_matches_torch(got, want, x)
    assert got[0, 0] == np.inf and got[0, 1] == 0 and np.signbit(got[0, 1]) and np.isnan(got[0, 2])


# the edges and the right value there: x * Phi(x), its limit, with the sign of x
EDGES = np.array([-0.0, 0.0, np.inf, -np.inf, 3e38, -3e38, -20.0], np.float32)
RIGHT = np.array([-0.0, 0.0, np.inf, -0.0, 3e38, -0.0, -0.0], np.float32)


def test_gelu_float32_special_values_in_every_form_are_the_right_ones() -> None:
    """Exact GELU in float32, functional, out variant and in place, gives the right value at
    the edges (-0.0 stays -0.0, +inf gives inf, -inf and -3e38 give -0.0, 3e38 stays 3e38),
    across block boundaries (the kernel works block by block), and torch's value elsewhere."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal(150001).astype(np.float32) * 5
    edge = [0, 65535, 65536, 131072, x.size - 1, 7, 8]
    x[edge] = EDGES
    want = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    buf = np.empty_like(x)
    forms = [lookup("aten::gelu").kernel(x, "none"), lookup("aten::gelu").out(buf, x, "none")]
    y = x.copy()
    assert lookup("aten::gelu_").kernel(y, "none") is y
    for got in [*forms, y]:
        np.testing.assert_array_equal(got[edge], RIGHT)
        assert np.array_equal(np.signbit(got[edge]), np.signbit(RIGHT))
        assert_gelu_matches_torch(got, want, x)


def test_float32_gelu_within_an_ulp_and_a_half_of_x_of_the_true_gelu() -> None:
    """Exact GELU in float32 (vm/ops/_erf32.py's degree-6 fit) stays within 1.5 float32 ulps
    of x of the true x * Phi(x) (math.erf in float64) over every 4099th float32 of
    [-12, 12] and a sweep down to subnormals; torch's own kernel is 3.2 from it."""
    bits = np.arange(0, np.float32(12).view(np.int32), 4099, dtype=np.int32)
    tiny = np.geomspace(1e-45, 1.0, 2000, dtype=np.float32)
    x = np.concatenate([bits.view(np.float32), tiny])
    x = np.concatenate([x, -x])
    got = lookup("aten::gelu").kernel(x, "none").astype(np.float64)
    wide = x.astype(np.float64)
    want = wide * 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in wide]))
    assert (np.abs(got - want) <= 1.5 * np.abs(wide) * 2.0**-23 + 1e-45).all()
