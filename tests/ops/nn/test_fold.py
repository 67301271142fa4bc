"""im2col / col2im against torch (the kernels of F.unfold / F.fold): every geometry of
kernel, dilation, padding and stride, batched and unbatched, and the two as traced graphs
on both backends (timm's tnt and volo call them)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.support.nn import FEW, op, randn

torch = pytest.importorskip("torch")


def _geometry(data):
    k = [data.draw(st.integers(1, 4)) for _ in range(2)]
    d = [data.draw(st.integers(1, 2)) for _ in range(2)]
    p = [data.draw(st.integers(0, 2)) for _ in range(2)]
    s = [data.draw(st.integers(1, 3)) for _ in range(2)]
    return k, d, p, s


@FEW
@given(st.data())
def test_im2col_and_col2im_match_torch_exactly(data):
    """Both are data movement (col2im adds overlapping windows in one order): equal to torch's
    to float32 rounding, with torch's shapes, for 3-d and 4-d inputs."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    k, d, p, s = _geometry(data)
    size = [data.draw(st.integers(1, 9)) for _ in range(2)]
    blocks = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    assume(min(blocks) >= 1)
    batched = data.draw(st.booleans())
    shape = ([data.draw(st.integers(1, 2))] if batched else []) + [data.draw(st.integers(1, 3)), *size]
    x = randn(rng, *shape)
    want = torch._C._nn.im2col(torch.from_numpy(x), k, d, p, s).numpy()
    got = op("aten::im2col")(x, k, d, p, s)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    cols = randn(rng, *want.shape)
    want2 = torch._C._nn.col2im(torch.from_numpy(cols), size, k, d, p, s).numpy()
    got2 = op("aten::col2im")(cols, size, k, d, p, s)
    assert got2.shape == want2.shape and got2.dtype == want2.dtype
    np.testing.assert_allclose(got2, want2, rtol=1e-5, atol=1e-6)


def test_a_geometry_with_no_block_is_refused_as_torch_refuses_it():
    x = np.zeros((1, 1, 2, 2), np.float32)
    with pytest.raises(RuntimeError, match="must be at least one"):
        torch._C._nn.im2col(torch.from_numpy(x), [3, 3], [1, 1], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="must be at least one"):
        op("aten::im2col")(x, [3, 3], [1, 1], [0, 0], [1, 1])


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_traced_unfold_then_fold_runs_on_both_backends(backend: str) -> None:
    """nn.Unfold / nn.Fold as torch.jit.trace records them (aten::im2col / aten::col2im)."""
    import compiler
    from vm import Interpreter, StaticRuntime

    class M(torch.nn.Module):
        def forward(self, x):
            u = torch.nn.functional.unfold(x, (3, 2), dilation=(1, 2), padding=1, stride=(2, 1))
            return torch.nn.functional.fold(u * 2.0, (7, 6), (3, 2), dilation=(1, 2), padding=1, stride=(2, 1))

    x = torch.randn(2, 3, 7, 6)
    traced = torch.jit.trace(M(), (x,))
    text = str(traced.inlined_graph)
    assert "aten::im2col" in text and "aten::col2im" in text
    program = compiler.compile_source(text)
    run = Interpreter(program) if backend == "interp" else StaticRuntime(program)
    got = run(x.numpy())
    np.testing.assert_allclose(got, traced(x).numpy(), rtol=1e-5, atol=1e-5)
