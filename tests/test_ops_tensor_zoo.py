"""Operators that real model zoos reach (found by ``tools/op_coverage.py``), against PyTorch:
``diff`` (Hugging Face GPT-2's packed-sequence detection, traced without a mask) and the
in-place twins of functional kernels (``addmm_``, ``baddbmm_``, ``cumsum_``, ``lerp_``...),
which must write PyTorch's result into ``self`` and return ``self`` itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tensor_op_support import (
    ALL,
    EXAMPLES,
    F32,
    FLOAT,
    I64,
    NUM,
    check_against_torch,
    scalars,
    shapes,
    tensor,
    tensor_dim,
)

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


@st.composite
def into_self(draw, dtypes=NUM, other_dtypes=None, n_others=1):
    """``self`` and tensors that broadcast to ``self``'s shape (an in-place op's operands)."""
    x = draw(tensor(dtypes))
    others = []
    for _ in range(n_others):
        keep = draw(st.integers(0, x.ndim))
        shape = tuple(1 if draw(st.booleans()) else n for n in x.shape[x.ndim - keep :])
        others.append(draw(tensor(other_dtypes or (x.dtype,), shape=st.just(shape))))
    return (x, *others)


@st.composite
def products(draw, batched: bool, dtypes=FLOAT):
    """``self``, two matrices (batches) whose product has ``self``'s shape, beta and alpha."""
    dt = (draw(st.sampled_from(dtypes)),)
    b = (draw(st.integers(1, 3)),) if batched else ()
    n, k, m = (draw(st.integers(1, 4)) for _ in range(3))
    beta, alpha = draw(st.sampled_from([1, 0, 0.5, -2])), draw(st.sampled_from([1, 2, -0.5]))
    return (draw(tensor(dt, shape=st.just((*b, n, m)))), draw(tensor(dt, shape=st.just((*b, n, k)))),
            draw(tensor(dt, shape=st.just((*b, k, m)))), beta, alpha)


def _with(strategy, *extra):
    return st.tuples(strategy, *extra).map(lambda t: (*t[0], *t[1:]))


CASES = [
    ("aten::diff", diff_args()),
    ("aten::addmm_", products(False)),
    ("aten::baddbmm_", products(True)),
    ("aten::clip_", st.tuples(tensor(NUM), st.none() | scalars("if"), st.none() | scalars("if"))),
    ("aten::cumsum_", _with(tensor_dim(NUM), st.none())),
    ("aten::cumprod_", _with(tensor_dim(NUM), st.none())),
    ("aten::lerp_.Scalar", _with(into_self(FLOAT), st.sampled_from([0, 0.25, 1, 1.5]))),
    ("aten::lerp_.Tensor", into_self(FLOAT, n_others=2)),
    ("aten::logit_", st.tuples(tensor(FLOAT), st.none() | st.just(0.1))),
    ("aten::hypot_", into_self(FLOAT)),
    ("aten::deg2rad_", st.tuples(tensor(NUM))),
    ("aten::rad2deg_", st.tuples(tensor(NUM))),
    ("aten::true_divide_.Tensor", into_self(NUM, NUM)),
    ("aten::true_divide_.Scalar", st.tuples(tensor(NUM), scalars("if").filter(bool))),
    ("aten::xlogy_.Tensor", into_self(NUM, NUM)),
    ("aten::xlogy_.Scalar_Other", st.tuples(tensor(NUM), scalars("if"))),
    ("aten::bitwise_left_shift_.Tensor", into_self((I64,)).map(lambda t: (t[0], np.asarray(np.abs(t[1]) % 4)))),
    ("aten::bitwise_left_shift_.Tensor_Scalar", st.tuples(tensor((I64,)), st.integers(0, 3))),
    ("aten::bitwise_right_shift_.Tensor", into_self((I64,)).map(lambda t: (t[0], np.asarray(np.abs(t[1]) % 4)))),
    ("aten::bitwise_right_shift_.Tensor_Scalar", st.tuples(tensor((I64,)), st.integers(0, 3))),
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
    assert ALL and shapes


def test_list_inplace_add_extends_the_list_itself() -> None:
    """``l += other`` on a list (aten::add_.t) extends ``l`` in place and returns it."""
    from vm.ops.registry import lookup

    a, b = [1, 2], [3]
    assert lookup("aten::add_.t").kernel(a, b) is a and a == [1, 2, 3]
    assert lookup("aten::add_.t").kernel(a, a) == [1, 2, 3, 1, 2, 3]


@st.composite
def pad_args(draw):
    """Any rank, any number of pad pairs, negative and oversized widths, every mode, int
    and float tensors: PyTorch's rank and size rules decide which of these are errors."""
    mode = draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    x = draw(tensor(ALL if mode == "constant" else NUM, min_dims=1, max_dims=5))
    pairs = draw(st.integers(1, 3))
    pad = [draw(st.integers(-2, 4)) for _ in range(2 * pairs)]
    value = draw(st.none() | st.sampled_from([0.0, -1.5, 2.0])) if mode == "constant" else None
    if mode == "circular" and len(pad) <= 2 * x.ndim:
        # wrapping a dim cropped shorter than the wrap reads uninitialised memory in torch
        for i in range(len(pad) // 2):
            left, right, size = pad[2 * i], pad[2 * i + 1], x.shape[-1 - i]
            kept = size - max(-left, 0) - max(-right, 0)
            assume(not kept < max(left, right) <= size)
    return x, pad, mode, value


def test_pad_matches_torch_on_every_mode_rank_and_dtype() -> None:
    """aten::pad (F.pad's operator) gives torch's result, or fails where torch fails."""
    compared = []

    @settings(max_examples=EXAMPLES * 8)
    @given(pad_args())
    def check(values):
        compared.append(check_against_torch("aten::pad", values) is not None)

    check()
    assert sum(compared) > len(compared) // 4
