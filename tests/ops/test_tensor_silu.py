"""``silu`` in float32 (``x / (1 + exp(-x))`` block by block): functional, out variant into a
planned buffer and in-place forms agree with PyTorch to float32 rounding, NaN and ±inf
included, on contiguous, transposed and block-straddling inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.support.against_torch import assert_matches, to_torch
from vm.ops.registry import lookup

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

F32 = np.float32
floats = st.floats(width=32, allow_nan=True, allow_infinity=True)
arrays = hnp.arrays(F32, hnp.array_shapes(min_dims=1, max_dims=3, max_side=9), elements=floats)


def _torch_silu(x: np.ndarray) -> np.ndarray:
    return torch.nn.functional.silu(to_torch(np.ascontiguousarray(x))).numpy()


def _assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert_matches(got, want, rtol=2e-6, atol=1e-37)  # float32 rounding: a few ulp


@settings(max_examples=80, deadline=None)
@given(arrays, st.booleans())
def test_silu_float32_forms_match_torch(x: np.ndarray, transpose: bool) -> None:
    """Property: for any float32 array (NaN, ±inf, -0.0 included), transposed or not, the
    functional result, the out variant's buffer and the in-place result are PyTorch's silu
    within float32 rounding, and the in-place form returns its own argument."""
    if transpose:
        x = x.T
    want = _torch_silu(x)
    op = lookup("aten::silu")
    _assert_close(op.kernel(x), want)
    buf = np.empty_like(x)
    assert op.out(buf, x) is buf
    _assert_close(buf, want)
    y = x.copy()
    assert lookup("aten::silu_").kernel(y) is y
    _assert_close(y, want)


def test_silu_across_blocks_matches_torch() -> None:
    """A tensor larger than one block (several L2-sized blocks and a partial last one),
    with special values at block edges, gives PyTorch's result in every form."""
    x = np.random.default_rng(1).standard_normal((3, 70001)).astype(F32) * 30
    flat = x.reshape(-1)
    flat[[0, 65535, 65536, 131071, flat.size - 1]] = [np.nan, np.inf, -np.inf, -0.0, -100.0]
    want = _torch_silu(x)
    _assert_close(lookup("aten::silu").kernel(x), want)
    buf = np.empty_like(x)
    _assert_close(lookup("aten::silu").out(buf, x), want)
    lookup("aten::silu_").kernel(x)
    _assert_close(x, want)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_silu_other_float_dtypes_match_torch(dtype: type) -> None:
    """float16 and float64 keep their dtype and match PyTorch (float16 computed in float32)."""
    x = np.linspace(-12, 12, 301).astype(dtype)
    got = lookup("aten::silu").kernel(x)
    want = torch.nn.functional.silu(to_torch(x)).numpy()
    assert_matches(got, want, rtol=1e-3 if dtype == np.float16 else 1e-12, atol=1e-300)


def test_silu_refuses_integers_as_torch() -> None:
    """An integer tensor is refused, as PyTorch's silu_cpu refuses it."""
    with pytest.raises(NotImplementedError, match="silu"):
        lookup("aten::silu").kernel(np.arange(4))
