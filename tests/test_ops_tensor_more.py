"""The less common tensor kernels against PyTorch: predicates, two-argument math, ternary
maps, diagonals, meshgrid, repeat_interleave, median and the cumulative extremes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensor_op_support import (
    ALL, BOOL, EXAMPLES, F32, FLOAT, I64, INTS, NUM, binary, broadcast_pair, check_against_torch, scalars, tensor,
    tensor_dim, tensor_scalar, unary,
)

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")


def _with(strategy, *extra):
    return st.tuples(strategy, *extra).map(lambda t: (*t[0], *t[1:]))


@st.composite
def same_dtype_pair(draw, dtypes=ALL):
    a, b = draw(broadcast_pair(dtypes))
    return a, b.astype(a.dtype)


@st.composite
def triple(draw, dtypes=FLOAT):
    a, b = draw(same_dtype_pair(dtypes))
    return a, b, draw(tensor((a.dtype,), shape=st.just(b.shape)))


CASES = [
    ("aten::isnan", unary(ALL)), ("aten::isinf", unary(ALL)), ("aten::isfinite", unary(ALL)),
    ("aten::isclose", _with(same_dtype_pair(NUM), st.just(1e-5), st.just(1e-8), st.booleans())),
    ("aten::allclose", _with(same_dtype_pair(FLOAT), st.just(1e-5), st.just(1e-8), st.booleans())),
    ("aten::equal", same_dtype_pair(ALL)),
    ("aten::is_floating_point", unary(ALL)),
    ("aten::count_nonzero", _with(tensor_dim(ALL, min_dims=1))),
    ("aten::nan_to_num", st.tuples(tensor(NUM), st.none() | st.just(1.5), st.none(), st.none() | st.just(-2.0))),
    ("aten::atan2", binary(NUM)), ("aten::hypot", same_dtype_pair(FLOAT)), ("aten::logaddexp", same_dtype_pair(FLOAT)),
    ("aten::xlogy.Tensor", binary(NUM)), ("aten::xlogy.Scalar_Other", tensor_scalar(NUM, "if")),
    ("aten::__lshift__.Scalar", st.tuples(tensor((I64,)), st.integers(0, 3))),
    ("aten::bitwise_right_shift.Tensor", st.tuples(same_dtype_pair((I64,))).map(
        lambda t: (t[0][0], np.asarray(np.abs(t[0][1]) % 4)))),
    ("aten::lerp.Scalar", _with(same_dtype_pair(FLOAT), st.sampled_from([0, 0.25, 1, 1.5]))),
    ("aten::lerp.Tensor", triple(FLOAT)),
    ("aten::addcmul", _with(triple(NUM), st.sampled_from([1, 2, -1]))),
    ("aten::addcdiv", _with(triple(FLOAT), st.sampled_from([1, 0.5]))),
    ("aten::logit", st.tuples(tensor(FLOAT), st.none() | st.just(0.1))),
    ("aten::deg2rad", unary(NUM)),
    ("aten::diagonal", st.tuples(tensor(ALL, min_dims=2), st.integers(-2, 2), st.just(0), st.just(-1))),
    ("aten::diag", st.tuples(tensor(ALL, min_dims=1, max_dims=2), st.integers(-1, 1))),
    ("aten::trace", st.tuples(tensor(ALL, min_dims=2, max_dims=2))),
    ("aten::swapaxes", st.tuples(tensor(ALL, min_dims=1), st.just(0), st.just(-1))),
    ("aten::mT", st.tuples(tensor(ALL, min_dims=2))),
    ("aten::movedim.intlist", st.tuples(tensor(ALL, min_dims=2), st.just([0, 1]), st.just([1, 0]))),
    ("aten::broadcast_tensors", st.tuples(broadcast_pair(ALL).map(list))),
    ("aten::meshgrid.indexing", st.tuples(st.tuples(tensor(NUM, max_dims=1), tensor(NUM, max_dims=1)).map(
        lambda t: [t[0], t[1].astype(t[0].dtype)]), st.sampled_from(["ij", "xy"]))),
    ("aten::repeat_interleave.self_int", st.tuples(tensor(ALL, min_dims=1), st.integers(0, 3),
                                                   st.none() | st.just(0), st.none())),
    ("aten::median", unary(NUM)),
    ("aten::median.dim", _with(tensor_dim(NUM), st.booleans())),
    ("aten::cummax", tensor_dim(NUM)),
    ("aten::cummin", tensor_dim(NUM)),
    ("aten::aminmax", st.tuples(tensor(NUM), st.none(), st.booleans())),
    ("aten::argwhere", unary(ALL)),
    ("aten::item", st.tuples(tensor(ALL, max_dims=0))),
    ("aten::is_nonzero", st.tuples(tensor(ALL, max_dims=1))),
]


@pytest.mark.parametrize("name,strategy", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_more_ops_match_torch(name, strategy) -> None:
    """Values, dtype and shape equal PyTorch's for random tensors."""
    compared = []

    @settings(max_examples=EXAMPLES)
    @given(strategy)
    def check(values):
        compared.append(check_against_torch(name, values) is not None)

    check()
    assert any(compared), f"every example of {name} raised in both torch and irvm"


def test_nan_handling_of_median_and_cummax() -> None:
    x = np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 4.0, 1.0, 4.0]], F32)
    check_against_torch("aten::median.dim", (x, 1, False))
    check_against_torch("aten::cummax", (x, 1))
    check_against_torch("aten::cummin", (x, 1))
    assert BOOL and INTS and scalars
