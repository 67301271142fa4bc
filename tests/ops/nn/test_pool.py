"""Pooling against torch: max (values and indices, ceil_mode, dilation), average
(count_include_pad, divisor_override, ceil_mode), adaptive average and max, 1-d forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches
from tests.support.nn import FEW, op, randn

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _window(data):
    k = [data.draw(st.integers(1, 4)) for _ in range(2)]
    s = [data.draw(st.integers(1, 3)) for _ in range(2)]
    p = [data.draw(st.integers(0, ki // 2)) for ki in k]
    return k, s, p


def _input(data, lo=1):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    shape = [data.draw(st.integers(1, 2)), data.draw(st.integers(1, 3))]
    shape += [data.draw(st.integers(lo, 10)) for _ in range(2)]
    x = randn(rng, *shape)
    if data.draw(st.booleans(), "ties"):
        x = np.round(x)  # repeated maxima: the first one's index must win
    return x


@FEW
@given(st.data())
def test_max_pool2d_values_and_indices_match_torch(data):
    x = _input(data)
    k, s, p = _window(data)
    d = [data.draw(st.integers(1, 2)) for _ in range(2)]
    ceil = data.draw(st.booleans())
    for size, ki, pi, di in zip(x.shape[2:], k, p, d):
        assume(size + 2 * pi >= di * (ki - 1) + 1)
    want = F.max_pool2d(torch.from_numpy(x), k, s, p, d, ceil, return_indices=True)
    # A dilated window that falls wholly in the padding gives -inf and an index torch
    # takes from past the row (undefined): compare only windows that see the input.
    assume(bool(torch.isfinite(want[0]).all()))
    assert_matches(op("aten::max_pool2d_with_indices")(x, k, s, p, d, ceil), want)
    assert_matches(op("aten::max_pool2d")(x, k, s, p, d, ceil), want[0])


@FEW
@given(st.data())
def test_avg_pool2d_matches_torch(data):
    x = _input(data)
    k, s, p = _window(data)
    ceil, include = data.draw(st.booleans()), data.draw(st.booleans())
    divisor = data.draw(st.one_of(st.none(), st.integers(1, 7)))
    for size, ki, pi in zip(x.shape[2:], k, p):
        assume(size + 2 * pi >= ki)
    want = F.avg_pool2d(torch.from_numpy(x), k, s, p, ceil, include, divisor)
    assert_matches(op("aten::avg_pool2d")(x, k, s, p, ceil, include, divisor), want)


@FEW
@given(st.data())
def test_adaptive_pools_match_torch(data):
    x = _input(data)
    out = [data.draw(st.integers(1, 12)) for _ in range(2)]
    t = torch.from_numpy(x)
    assert_matches(op("aten::adaptive_avg_pool2d")(x, out), F.adaptive_avg_pool2d(t, out))
    assert_matches(op("aten::adaptive_max_pool2d")(x, out), F.adaptive_max_pool2d(t, out, return_indices=True))


def test_default_stride_is_the_kernel_and_unbatched_input_works():
    rng = np.random.default_rng(0)
    x = randn(rng, 3, 9, 8)  # (C, H, W)
    assert_matches(op("aten::max_pool2d")(x, [3, 2], [], [1, 0], [1, 1], False), F.max_pool2d(torch.from_numpy(x), (3, 2), padding=(1, 0)))
    assert_matches(op("aten::avg_pool2d")(x, [2, 2], [], [0, 0], True, True, None), F.avg_pool2d(torch.from_numpy(x), 2, ceil_mode=True))


def test_one_d_pools_match_torch():
    rng = np.random.default_rng(1)
    x = randn(rng, 2, 3, 11)
    t = torch.from_numpy(x)
    assert_matches(op("aten::max_pool1d")(x, [3], [2], [1], [2], True), F.max_pool1d(t, 3, 2, 1, 2, True))
    assert_matches(op("aten::avg_pool1d")(x, [4], [3], [2], True, False), F.avg_pool1d(t, 4, 3, 2, True, False))
    assert_matches(op("aten::adaptive_avg_pool1d")(x, [4]), F.adaptive_avg_pool1d(t, 4))
    assert_matches(op("aten::adaptive_max_pool1d")(x, [4]), F.adaptive_max_pool1d(t, 4, return_indices=True))


def test_nan_wins_a_max_pool_window():
    x = np.array([[[[1.0, np.nan], [3.0, 2.0]]]], np.float32)
    got = op("aten::max_pool2d")(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    assert np.isnan(got).all()


def test_padding_larger_than_half_the_kernel_is_refused():
    with pytest.raises(ValueError, match="at most half"):
        op("aten::max_pool2d")(np.zeros((1, 1, 4, 4), np.float32), [2, 2], [1, 1], [2, 2], [1, 1], False)


def test_adaptive_avg_pool3d_matches_torch():
    """What scripted F.interpolate(mode='area') reaches for 5-d input."""
    rng = np.random.default_rng(2)
    x = randn(rng, 2, 3, 5, 7, 6)
    assert_matches(op("aten::adaptive_avg_pool3d")(x, [2, 3, 4]), F.adaptive_avg_pool3d(torch.from_numpy(x), (2, 3, 4)))
    assert_matches(op("aten::adaptive_avg_pool3d")(x, [5, 1, 6]), F.adaptive_avg_pool3d(torch.from_numpy(x), (5, 1, 6)))


@FEW
@given(st.data())
def test_global_average_pool_matches_torch(data):
    """Property: adaptive_avg_pool2d to (1, 1) (global pooling, one BLAS product per call)
    equals torch's for float32 and float64 inputs of 3 or 4 dims, a NaN or inf in a plane
    spreading to that plane's mean only, and a non-contiguous input taking the general path."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    shape = [data.draw(st.integers(1, 3))] * data.draw(st.integers(0, 1)) + [data.draw(st.integers(1, 40)) for _ in range(3)]
    x = rng.standard_normal(shape).astype(dtype)
    special = data.draw(st.sampled_from([None, np.nan, np.inf]))
    if special is not None:
        x.reshape(-1)[data.draw(st.integers(0, x.size - 1))] = special
    if data.draw(st.booleans(), "transposed"):
        x = x.swapaxes(-1, -2)
    want = F.adaptive_avg_pool2d(torch.from_numpy(x), 1).numpy()
    got = op("aten::adaptive_avg_pool2d")(x, [1, 1])
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("shape", [(1, 3, 0, 4), (2, 5, 0)])
def test_adaptive_max_pool2d_of_an_empty_plane_raises_like_torch(shape):
    """An input with an empty spatial dimension is refused with PyTorch's RuntimeError
    ("Expected input to have non-zero size for non-batch dimensions"), not a Python error."""
    x = np.zeros(shape, np.float32)
    with pytest.raises(RuntimeError) as theirs:
        F.adaptive_max_pool2d(torch.from_numpy(x), (2, 2), return_indices=True)
    with pytest.raises(RuntimeError) as ours:
        op("aten::adaptive_max_pool2d")(x, [2, 2])
    expected = "Expected input to have non-zero size for non-batch dimensions"
    assert expected in str(theirs.value) and expected in str(ours.value)
