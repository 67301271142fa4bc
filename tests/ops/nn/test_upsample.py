"""Every interpolation mode F.interpolate can reach, against torch: nearest and
nearest-exact (1-3 d), linear/bilinear/trilinear, bicubic, and the antialiased bilinear,
bicubic and lanczos kernels, by size and by scale factor, with and without align_corners."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches
from tests.support.nn import FEW, op, randn

torch = pytest.importorskip("torch")

# (our operator, rank, takes align_corners)
MODES = {
    "upsample_nearest1d": (1, False), "upsample_nearest2d": (2, False), "upsample_nearest3d": (3, False),
    "_upsample_nearest_exact1d": (1, False), "_upsample_nearest_exact2d": (2, False),
    "_upsample_nearest_exact3d": (3, False), "upsample_linear1d": (1, True), "upsample_bilinear2d": (2, True),
    "upsample_trilinear3d": (3, True), "upsample_bicubic2d": (2, True), "_upsample_bilinear2d_aa": (2, True),
    "_upsample_bicubic2d_aa": (2, True), "_upsample_lanczos2d_aa": (2, True),
}


@pytest.mark.parametrize("name", sorted(MODES))
@FEW
@given(data=st.data())
def test_vec_overload_matches_torch(name, data):
    rank, corners = MODES[name]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    spatial = [data.draw(st.integers(2, 7 if rank < 3 else 4)) for _ in range(rank)]
    x = randn(rng, 1, 2, *spatial)
    if data.draw(st.booleans(), "by size"):
        size, factors = [data.draw(st.integers(1, 13 if rank < 3 else 6)) for _ in range(rank)], None
    else:
        size, factors = None, [data.draw(st.sampled_from([0.5, 0.75, 1.5, 2.0, 2.5, 3.0])) for _ in range(rank)]
    if name.endswith("_aa"):
        # PyTorch's antialiased kernels return the first row everywhere when the output is
        # one column wide (a torch bug: the plain kernels and ours interpolate the rows)
        assume((size[-1] if size else int(spatial[-1] * factors[-1])) >= 2)
    args = [data.draw(st.booleans(), "align_corners")] if corners else []
    fn = getattr(torch.ops.aten, name).vec
    want = fn(torch.from_numpy(x), size, *args, factors)
    assert_matches(op(f"aten::{name}.vec")(x, size, *args, factors), want, atol=2e-5)


@pytest.mark.parametrize("name", sorted(MODES))
def test_sized_overload_with_explicit_scales_matches_torch(name):
    rank, corners = MODES[name]
    rng = np.random.default_rng(0)
    x = randn(rng, 2, 3, *([5, 4, 3][:rank]))
    size = [9, 3, 6][:rank]
    scales = [1.7, 0.8, 2.2][:rank]
    args = [False] if corners else []
    want = getattr(torch.ops.aten, name).default(torch.from_numpy(x), size, *args, *scales)
    assert_matches(op(f"aten::{name}")(x, size, *args, *scales), want, atol=2e-5)


def test_antialiased_one_column_output_interpolates_rows():
    """Where torch's _aa kernels repeat the first row, ours follow the plain kernel."""
    x = np.arange(3, dtype=np.float32).reshape(1, 1, 3, 1)
    got = op("aten::_upsample_bilinear2d_aa")(x, [5, 1], False, None, None)
    plain = torch.ops.aten.upsample_bilinear2d.default(torch.from_numpy(x), [5, 1], False)
    assert_matches(got, plain, atol=1e-6)


def test_zero_sized_output_is_refused():
    with pytest.raises(ValueError, match="positive"):
        op("aten::upsample_nearest2d.vec")(np.zeros((1, 1, 1, 1), np.float32), None, [0.5, 0.5])
