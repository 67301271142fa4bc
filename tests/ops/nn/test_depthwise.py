"""vm/ops/nn/depthwise.py: the depthwise routes chosen by shape give torch's results, and
the taps they drop are exactly those that read nothing but padding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vm.ops.nn.depthwise import live_taps
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional


@settings(max_examples=300, deadline=None)
@given(size=st.integers(1, 12), k=st.integers(1, 9), stride=st.integers(1, 3), dilation=st.integers(1, 3),
       padding=st.integers(0, 6))
def test_live_taps_are_the_taps_that_read_the_input(size: int, k: int, stride: int, dilation: int, padding: int) -> None:
    """Property: every tap outside ``live_taps`` reads only padding for every output, and
    every tap inside has positions spanning the input (checked by enumerating positions);
    when no tap reads the input (an output made of padding alone) all taps are kept."""
    n_out = (size + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    if n_out < 1:
        return
    lo, hi = live_taps(size, k, stride, dilation, padding, n_out)
    reads = [any(0 <= i * stride + t * dilation - padding < size for i in range(n_out)) for t in range(k)]
    assert all(not reads[t] for t in range(k) if not lo <= t < hi)
    if not any(reads):
        assert (lo, hi) == (0, k)
        return
    # inside the range a tap's span of positions meets the input (with stride > 1 it may
    # step over it, which only costs a tap of zeros)
    assert all(t * dilation - padding < size and (n_out - 1) * stride + t * dilation - padding >= 0
               for t in range(lo, hi))


@st.composite
def depthwise_cases(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, list[int], list[int], list[int]]:
    """Depthwise convolutions with outputs rows 12-64 wide (the row-run route, strides 1-3,
    phases for strides along the row) or on planes smaller than the kernel's reach (dead
    taps), any channel count up to 300."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    dims = draw(st.integers(1, 2))
    c = draw(st.integers(1, 300))
    tiny = draw(st.booleans())
    stride = [draw(st.integers(1, 3)) for _ in range(dims)]
    size = [draw(st.integers(1, 3) if tiny else st.integers(12 * s, (40 if dims == 2 else 64) * s)) for s in stride]
    k = [draw(st.sampled_from([1, 3, 5, 7])) for _ in range(dims)]
    dilation = [draw(st.integers(1, 2)) for _ in range(dims)]
    padding = [d * (kk - 1) // 2 for d, kk in zip(dilation, k)]
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    x = rng.standard_normal((draw(st.integers(1, 2)), c, *size)).astype(dtype)
    w = rng.standard_normal((c, 1, *k)).astype(dtype)
    b = rng.standard_normal(c).astype(dtype) if draw(st.booleans()) else None
    return x, w, b, stride, padding, dilation


@settings(max_examples=40, deadline=None)
@given(depthwise_cases())
def test_row_runs_and_dead_taps_match_torch(case: tuple) -> None:
    """Property: depthwise convolution through the row-run einsum (rows 12-64 wide, any
    stride, strides along the row by phases) and on planes smaller than the kernel (its
    dead taps dropped) equals torch's, float32 and float64, fresh and into an out buffer."""
    x, w, b, stride, padding, dilation = case
    dims = x.ndim - 2
    c = x.shape[1]
    name = f"aten::conv{dims}d"
    t = torch.from_numpy
    want = (F.conv1d, F.conv2d)[dims - 1](t(x), t(w), None if b is None else t(b), stride, padding, dilation, c).numpy()
    tol = 1e-4 if x.dtype == np.float32 else 1e-10
    got = lookup(name).kernel(x, w, b, stride, padding, dilation, c)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    buf = np.empty_like(want)
    assert lookup(name).out(buf, x, w, b, stride, padding, dilation, c) is buf
    np.testing.assert_allclose(buf, want, rtol=tol, atol=tol)


@pytest.mark.parametrize(
    ("shape", "k", "stride", "dtype"),
    [((1, 96, 32, 32), 3, 2, np.float32), ((2, 144, 16, 16), 3, 1, np.float32),
     ((1, 64, 16, 16), 5, 2, np.float32), ((1, 80, 16, 16), 7, 1, np.float64), ((1, 64, 32, 32), 3, 1, np.float32)],
)
def test_planes_with_aliasing_channel_strides_match_torch(shape: tuple[int, ...], k: int, stride: int,
                                                          dtype: type) -> None:
    """Planes of 16x16 and 32x32 numbers with 64+ channels (their channel stride a multiple
    of 1 KiB: transposed through a staggered copy) give torch's result on the row-run and
    channels-last einsum routes, into a fresh result and into an out buffer."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((shape[1], 1, k, k)).astype(dtype)
    b = rng.standard_normal(shape[1]).astype(dtype)
    t = torch.from_numpy
    want = F.conv2d(t(x), t(w), t(b), stride, k // 2, 1, shape[1]).numpy()
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(lookup("aten::conv2d").kernel(x, w, b, [stride] * 2, [k // 2] * 2, [1, 1], shape[1]),
                               want, rtol=tol, atol=tol)
    buf = np.empty_like(want)
    assert lookup("aten::conv2d").out(buf, x, w, b, [stride] * 2, [k // 2] * 2, [1, 1], shape[1]) is buf
    np.testing.assert_allclose(buf, want, rtol=tol, atol=tol)


def test_row_runs_skip_dead_leading_taps_along_the_row() -> None:
    """A row-run case whose first taps along the row read only padding (padding 25,
    dilation 18 on a 1-wide row: 15 outputs, tap 0 dead) starts its view at the first live
    tap and equals torch's."""
    rng = np.random.default_rng(3)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((2, 8, 1), (8, 1, 3), (8,)))
    assert live_taps(1, 3, 1, 18, 25, 15)[0] > 0
    t = torch.from_numpy
    want = F.conv1d(t(x), t(w), t(b), 1, 25, 18, 8).numpy()
    got = lookup("aten::conv1d").kernel(x, w, b, [1], [25], [18], 8)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
