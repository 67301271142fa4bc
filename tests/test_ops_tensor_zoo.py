"""Operators that real model zoos reach (found by ``tools/op_coverage.py``), against PyTorch:
``diff`` (Hugging Face GPT-2's packed-sequence detection, traced without a mask), ..."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tensor_op_support import ALL, EXAMPLES, F32, I64, NUM, check_against_torch, tensor

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")


@st.composite
def diff_args(draw):
    """A tensor, an order n (0 and beyond the length included), a dim, and optional
    prepend/append of the same rank (sometimes of another dtype, or the wrong rank)."""
    x = draw(tensor(ALL, min_dims=0, max_dims=3))
    n = draw(st.integers(-1, 5))
    ndim = max(x.ndim, 1)
    dim = draw(st.integers(-ndim, ndim - 1))

    def extra():
        if x.ndim == 0 or not draw(st.booleans()):
            return None
        d = dim % x.ndim
        shape = draw(st.sampled_from([x.shape[:d] + (k,) + x.shape[d + 1 :] for k in (0, 1, 2)] + [x.shape[1:]]))
        return draw(tensor(draw(st.sampled_from([(x.dtype,), (x.dtype,), (I64,), (F32,)])), shape=st.just(shape)))

    return x, n, dim, extra(), extra()


CASES = [
    ("aten::diff", diff_args()),
]


@pytest.mark.parametrize("name,strategy", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_zoo_ops_match_torch(name, strategy) -> None:
    """Values, dtype and shape equal PyTorch's for random arguments (errors where torch errs)."""
    compared = []

    @settings(max_examples=EXAMPLES * 4)
    @given(strategy)
    def check(values):
        compared.append(check_against_torch(name, values) is not None)

    check()
    assert any(compared), f"every example of {name} raised in both torch and irvm"


def test_diff_of_positions_as_gpt2_traces_it() -> None:
    """The exact call GPT-2 makes: int64 positions, prepend = first - 1, dim -1."""
    pos = np.array([[0, 1, 2, 0, 1, 5]], I64)
    check_against_torch("aten::diff", (pos, 1, -1, pos[:, :1] - 1, None))
    assert NUM
