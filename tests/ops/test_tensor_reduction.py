"""Reduction kernels against PyTorch: dims (None, empty, negative, several), keepdim,
dtype rules (int sums give int64, mean of ints is an error), index results, sort order."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.against_torch import assert_same
from tests.support.tensor_ops import (
    ALL,
    EXAMPLES,
    F32,
    F64,
    FLOAT,
    NUM,
    check_against_torch,
    tensor,
    tensor_dim,
)

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

keep = st.booleans()
dtypes_opt = st.sampled_from([None, 4, 6, 7])  # None, int64, float32, float64


@st.composite
def tensor_dims(draw, dtypes=ALL, allow_none=True, min_dims=0, min_size=0):
    """A tensor and a list of distinct valid dims (possibly empty, or None)."""
    x = draw(tensor(dtypes, min_dims=min_dims))
    if x.ndim == 0:
        dims = draw(st.sampled_from([[], [0], [-1]]))
    else:
        picks = draw(st.lists(st.integers(0, x.ndim - 1), unique=True, min_size=min_size, max_size=x.ndim))
        dims = [d - x.ndim if draw(st.booleans()) else d for d in picks]
    if allow_none and draw(st.booleans()) and not dims:
        dims = None
    return x, dims


def _with(strategy, *extra):
    return st.tuples(strategy, *extra).map(lambda t: (*t[0], *t[1:]))


CASES = [
    ("aten::sum", st.tuples(tensor(ALL), dtypes_opt)),
    ("aten::sum.dim_IntList", _with(tensor_dims(ALL), keep, dtypes_opt)),
    ("aten::mean", st.tuples(tensor(ALL), st.sampled_from([None, 6, 7]))),
    ("aten::mean.dim", _with(tensor_dims(ALL), keep, st.sampled_from([None, 7]))),
    ("aten::prod", st.tuples(tensor(ALL), dtypes_opt)),
    ("aten::prod.dim_int", _with(tensor_dim(ALL), keep, dtypes_opt)),
    ("aten::max", st.tuples(tensor(ALL))),
    ("aten::min", st.tuples(tensor(ALL))),
    ("aten::max.dim", _with(tensor_dim(ALL), keep)),
    ("aten::min.dim", _with(tensor_dim(ALL), keep)),
    ("aten::amax", _with(tensor_dims(NUM, allow_none=False), keep)),
    ("aten::amin", _with(tensor_dims(NUM, allow_none=False), keep)),
    ("aten::argmax", st.tuples(tensor(NUM), st.none(), keep)),
    ("aten::argmax", _with(tensor_dim(NUM), keep)),
    ("aten::argmin", _with(tensor_dim(NUM), keep)),
    ("aten::any", st.tuples(tensor(ALL))),
    ("aten::all", st.tuples(tensor(ALL))),
    ("aten::any.dim", _with(tensor_dim(ALL), keep)),
    ("aten::all.dims", _with(tensor_dims(ALL), keep)),
    ("aten::cumsum", _with(tensor_dim(ALL), dtypes_opt)),
    ("aten::cumprod", _with(tensor_dim(NUM), st.none())),
    ("aten::softmax.int", _with(tensor_dim(ALL), st.sampled_from([None, 7]))),
    ("aten::log_softmax.int", _with(tensor_dim(FLOAT), st.sampled_from([None, 7]))),
    ("aten::logsumexp", _with(tensor_dims(ALL, allow_none=False, min_dims=1, min_size=1), keep)),
    ("aten::norm.Scalar", st.tuples(tensor(ALL), st.sampled_from([2, 1, 3, 0, float("inf")]))),
    ("aten::norm.ScalarOpt_dim", _with(tensor_dims(FLOAT, allow_none=False, min_dims=1), keep).map(
        lambda t: (t[0], 2, t[1], t[2]))),
    ("aten::linalg_vector_norm", _with(tensor_dims(FLOAT), keep).map(lambda t: (t[0], 2, t[1], t[2], None))),
    ("aten::linalg_vector_norm", st.tuples(tensor(FLOAT, min_side=1), st.sampled_from([1, 0.5, float("-inf")]),
                                           st.none(), keep, st.sampled_from([None, 7]))),
    ("aten::std", st.tuples(tensor(ALL), st.booleans())),
    ("aten::var", st.tuples(tensor(FLOAT), st.booleans())),
    ("aten::var.dim", _with(tensor_dims(FLOAT), st.booleans(), keep)),
    ("aten::std.dim", _with(tensor_dims(FLOAT), st.booleans(), keep)),
    ("aten::var.correction", _with(tensor_dims(FLOAT), st.sampled_from([None, 0, 1, 2]), keep)),
    ("aten::std.correction", _with(tensor_dims(FLOAT), st.sampled_from([None, 0, 1]), keep)),
    ("aten::sort", _with(tensor_dim(NUM), st.booleans())),
    ("aten::argsort", _with(tensor_dim(NUM), st.booleans())),
]


@pytest.mark.parametrize("name,strategy", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_reduction_matches_torch(name, strategy) -> None:
    """Values, dtype and shape equal PyTorch's for random tensors, dims, keepdim and dtype."""

    compared = []

    @settings(max_examples=EXAMPLES)
    @given(strategy)
    def check(values):
        compared.append(check_against_torch(name, values) is not None)

    check()
    assert any(compared), f"every example of {name} raised in both torch and irvm: the strategy tests nothing"


@st.composite
def _topk_case(draw):
    x, dim = draw(tensor_dim(FLOAT, min_dims=1))
    n = x.shape[dim]
    # distinct values, so that torch and irvm must agree on the indices too
    flat = np.random.default_rng(draw(st.integers(0, 2**16))).permutation(x.size).astype(x.dtype)
    return flat.reshape(x.shape), draw(st.integers(0, n)), dim, draw(st.booleans()), True


@settings(max_examples=EXAMPLES)
@given(_topk_case())
def test_topk_matches_torch(values) -> None:
    check_against_torch("aten::topk", values)


def test_max_dim_picks_first_of_ties_and_nan() -> None:
    x = np.array([[1.0, 3.0, 3.0], [np.nan, 2.0, np.nan]], np.float32)
    check_against_torch("aten::max.dim", (x, 1, False))
    check_against_torch("aten::min.dim", (x, 1, True))
    check_against_torch("aten::argmax", (x, None, False))


def test_int_sum_gives_int64_and_mean_of_int_raises() -> None:
    from vm.ops.registry import lookup

    assert lookup("aten::sum").kernel(np.ones(3, np.int32), None).dtype == np.int64
    assert lookup("aten::sum").kernel(np.ones(3, bool), None).dtype == np.int64
    with pytest.raises(RuntimeError):
        lookup("aten::mean").kernel(np.ones(3, np.int64), None)


def test_whole_reductions_return_zero_dim_arrays() -> None:
    from vm.ops.registry import lookup

    x = np.arange(6, dtype=F32).reshape(2, 3)
    for name, args in [("aten::sum", (x, None)), ("aten::max", (x,)), ("aten::mean", (x, None)),
                       ("aten::any", (x,)), ("aten::norm.Scalar", (x, 2)), ("aten::std", (x, True))]:
        r = lookup(name).kernel(*args)
        assert type(r) is np.ndarray and r.shape == (), name


def test_descending_sort_is_stable() -> None:
    x = np.array([3, 1, 3, 1, 2], np.int64)
    from vm.ops.registry import lookup

    values, indices = lookup("aten::sort").kernel(x, 0, True)
    assert_same(values, np.array([3, 3, 2, 1, 1]))
    assert_same(indices, np.array([0, 2, 4, 1, 3]))
    assert F64  # keep the import list honest


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.data())
def test_softmax_family_in_the_out_buffer_matches_torch(data) -> None:
    """Property: softmax and log_softmax along any axis of a float32/float64 tensor (rows of
    finite numbers, NaN, +-inf, or all -inf; contiguous or transposed) equal torch's, and
    the out variant computes in the given buffer (the BLAS row sums on a contiguous last
    axis, ndarray.sum elsewhere)."""
    from vm.ops.registry import lookup

    dtype = data.draw(st.sampled_from([F32, F64]))
    shape = tuple(data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=3)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = (rng.standard_normal(shape) * data.draw(st.sampled_from([1.0, 30.0]))).astype(dtype)
    special = data.draw(st.sampled_from(["none", "nan", "inf", "-inf", "row -inf"]))
    flat = x.reshape(-1)
    if special == "row -inf":
        x[(0,) * (x.ndim - 1)] = -np.inf  # a whole row along the last axis
    elif special != "none":
        flat[data.draw(st.integers(0, flat.size - 1))] = float(special)
    if x.ndim > 1 and data.draw(st.booleans(), "transposed"):
        x = x.swapaxes(0, -1)
    dim = data.draw(st.integers(-x.ndim, x.ndim - 1))
    for name, fn in (("aten::softmax.int", torch.softmax), ("aten::log_softmax.int", torch.log_softmax)):
        want = fn(torch.from_numpy(x), dim).numpy()
        assert_same(lookup(name).kernel(x, dim, None), want)
        buf = np.empty(x.shape, dtype)
        assert lookup(name).out(buf, x, dim, None) is buf
        assert_same(buf, want)


def test_attention_softmax_gives_zeros_for_fully_masked_rows() -> None:
    """safe_softmax (scaled_dot_product_attention's): a row of all -inf is zeros, not NaN,
    the other rows are softmax, computed in place when given the scores as out."""
    from vm.ops._softmax import safe_softmax

    x = np.random.default_rng(0).standard_normal((2, 3, 5)).astype(F32)
    x[1, 2] = -np.inf
    want = torch.softmax(torch.from_numpy(x), -1).nan_to_num(0.0).numpy()
    assert_same(safe_softmax(x.copy()), want)
    scores = x.copy()
    assert safe_softmax(scores, -1, scores) is scores
    assert_same(scores, want)
