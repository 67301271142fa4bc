"""The compiled depthwise convolution (vm/ops/compiled/depthwise.py) against torch and
numpy's routes: any kernel size, stride, padding and dilation, with and without bias,
batch above 1, and the fallbacks (channel multiplier, float64, 1-d)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.compiled.support import both
from vm.ops import compiled
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.skipif(not compiled.ENABLED, reason="IRVM_KERNELS=numpy: the compiled tier is off")


@given(seed=st.integers(0, 2**31), batch=st.sampled_from([1, 2]), c=st.sampled_from([1, 3, 8, 33]),
       h=st.integers(1, 12), w=st.integers(1, 12), k=st.sampled_from([(1, 1), (3, 3), (5, 5), (7, 7), (3, 1)]),
       stride=st.sampled_from([(1, 1), (2, 2), (1, 2), (3, 3)]), pad=st.integers(0, 3), dil=st.sampled_from([1, 2]),
       with_bias=st.booleans())
def test_matches_torch_and_numpy(seed, batch, c, h, w, k, stride, pad, dil, with_bias) -> None:
    if h + 2 * pad < dil * (k[0] - 1) + 1 or w + 2 * pad < dil * (k[1] - 1) + 1:
        return  # no output: torch refuses the shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((c, 1, *k)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32) if with_bias else None
    args = (list(stride), [pad, pad], [dil, dil], c)
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), None if b is None else torch.from_numpy(b),
                                      *args).numpy()
    fast, slow = both(lambda: lookup("aten::conv2d").kernel(x, wt, b, *args))
    np.testing.assert_allclose(fast, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-5)


def test_out_variant_writes_into_the_planned_buffer() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 16, 9, 9)).astype(np.float32)
    wt = rng.standard_normal((16, 1, 3, 3)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    op = lookup("aten::conv2d")
    buf = np.full((1, 16, 9, 9), np.nan, np.float32)
    assert op.out(buf, x, wt, b, [1, 1], [1, 1], [1, 1], 16) is buf
    np.testing.assert_array_equal(buf, op.kernel(x, wt, b, [1, 1], [1, 1], [1, 1], 16))


def test_channel_multiplier_and_float64_take_numpy() -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 4, 6, 6)).astype(np.float32)
    wt = rng.standard_normal((8, 1, 3, 3)).astype(np.float32)
    fast, slow = both(lambda: lookup("aten::conv2d").kernel(x, wt, None, [1, 1], [1, 1], [1, 1], 4))
    np.testing.assert_array_equal(fast, slow)
    x64, w64 = x.astype(np.float64), rng.standard_normal((4, 1, 3, 3))
    fast, slow = both(lambda: lookup("aten::conv2d").kernel(x64, w64, None, [1, 1], [1, 1], [1, 1], 4))
    np.testing.assert_array_equal(fast, slow)
