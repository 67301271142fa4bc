"""The elementwise kernels that run big tensors block by block (sigmoid, hardswish,
hardsigmoid, exact and tanh GELU) give torch's values in every form (functional, out variant into a
planned buffer, in place), whatever the size relative to the block, wherever NaN, ±inf and
±0 fall, and on non-contiguous inputs (which take the unblocked path)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.cpu_dependent import assert_gelu_matches_torch
from vm.ops._common import BLOCK
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-40, -1e-40, 88.7, -88.7, 104.0, -104.0],
                    np.float32)

# (irvm name, extra args, torch function, max error in float32 ulps of the torch value,
# or for GELU in ulps of x, as its tests measure it: torch's own GELU is 3.2 from the truth)
KERNELS = [
    ("sigmoid", (), torch.sigmoid, 4.0),  # numpy's exp and torch's differ: up to 4 ulps after 1 / (1 + e)
    ("hardswish", (), F.hardswish, 0.0),
    ("hardsigmoid", (), F.hardsigmoid, 0.0),
    ("gelu", ("none",), F.gelu, 4.0),
    ("gelu", ("tanh",), lambda t: F.gelu(t, approximate="tanh"), 4.0),
]
IDS = ["sigmoid", "hardswish", "hardsigmoid", "gelu", "gelu_tanh"]


@st.composite
def tensors(draw: st.DrawFn) -> np.ndarray:
    """A float32 tensor around the block size (below, at, across several block boundaries),
    normal values scaled by a drawn spread, with special values at drawn positions (block
    edges included)."""
    size = draw(st.sampled_from([1, 7, BLOCK - 1, 2 * BLOCK, 2 * BLOCK + 1, 3 * BLOCK + 17]))
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from([1.0, 5.0, 30.0]))
    x = (np.random.default_rng(seed).standard_normal(size) * spread).astype(np.float32)
    edges = [0, size - 1, BLOCK - 1, BLOCK, 2 * BLOCK]
    where = draw(st.lists(st.sampled_from(edges + list(range(min(size, 50)))), max_size=6))
    for i in where:
        if i < size:
            x[i] = SPECIALS[draw(st.integers(0, len(SPECIALS) - 1))]
    return x


def _close(name: str, got: np.ndarray, want: np.ndarray, x: np.ndarray, ulps: float) -> None:
    if name == "gelu":  # torch's answer at its special points depends on the CPU
        assert_gelu_matches_torch(got, want, x, ulps)
        return
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want)), name
    inf = np.isinf(want)
    assert np.array_equal(got[inf], want[inf]), name
    ok = np.isfinite(want)
    scale = np.spacing(np.abs(want[ok])).astype(np.float64)
    err = np.abs(got[ok].astype(np.float64) - want[ok].astype(np.float64))
    assert (err <= ulps * scale).all(), f"{name}: {np.max(err / scale):.2f} ulps"


@pytest.mark.parametrize(("name", "args", "fn", "ulps"), KERNELS, ids=IDS)
@settings(max_examples=25, deadline=None)
@given(x=tensors(), shape2d=st.booleans())
def test_blocked_kernels_match_torch_in_every_form(
    name: str, args: tuple[str, ...], fn: Callable[..., Any], ulps: float, x: np.ndarray, shape2d: bool
) -> None:
    """Property: functional, out variant and in-place forms all agree with torch to the
    kernel's tolerance, with the same NaNs, on tensors that span block boundaries."""
    if shape2d and x.size % 2 == 0:
        x = x.reshape(2, -1)
    want = fn(torch.from_numpy(x.copy())).numpy()
    op = lookup(f"aten::{name}")
    _close(name, op.kernel(x, *args), want, x, ulps)
    buf = np.empty_like(x)
    assert op.out(buf, x, *args) is buf
    _close(name, buf, want, x, ulps)
    y = x.copy()
    assert lookup(f"aten::{name}_").kernel(y, *args) is y
    _close(name, y, want, x, ulps)


@pytest.mark.parametrize(("name", "args", "fn", "ulps"), KERNELS, ids=IDS)
def test_non_contiguous_inputs_take_the_whole_tensor_path(
    name: str, args: tuple[str, ...], fn: Callable[..., Any], ulps: float
) -> None:
    """A transposed (non-contiguous) input of more than two blocks gives torch's values,
    into a fresh result and into a contiguous buffer."""
    x = (np.random.default_rng(1).standard_normal((600, 500)) * 4).astype(np.float32).T
    want = fn(torch.from_numpy(np.ascontiguousarray(x))).numpy()
    op = lookup(f"aten::{name}")
    _close(name, op.kernel(x, *args), want, x, ulps)
    buf = np.empty(x.shape, np.float32)
    _close(name, op.out(buf, x, *args), want, x, ulps)
