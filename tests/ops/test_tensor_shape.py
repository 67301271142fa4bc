"""Shape, view, indexing and factory kernels against PyTorch, plus the aliasing contract:
``Tensor(a)`` results share memory with their input (writes go through), fresh results
do not, and the ``to`` family returns its input itself when nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.against_torch import assert_same
from tests.support.tensor_ops import (
    ALL,
    BOOL,
    EXAMPLES,
    F32,
    FLOAT,
    I64,
    NUM,
    check_against_torch,
    shapes,
    tensor,
    tensor_dim,
)
from vm.ops.registry import lookup

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")


def _with(strategy, *extra):
    return st.tuples(strategy, *extra).map(lambda t: (*t[0], *t[1:]))


@st.composite
def reshape_case(draw, dtypes=ALL):
    x = draw(tensor(dtypes))
    sizes = [d for d in x.shape]
    n = x.size
    target = draw(st.sampled_from([[n], [-1], [1, n], [n, 1], [-1, 1]] + ([[]] if n == 1 else [])))
    del sizes
    return x, target


@st.composite
def permute_case(draw):
    x = draw(tensor(ALL))
    perm = draw(st.permutations(range(x.ndim)))
    return x, [p - x.ndim if draw(st.booleans()) else p for p in perm]


@st.composite
def slice_case(draw):
    x, d = draw(tensor_dim(ALL, min_dims=1))
    n = x.shape[d]
    bound = st.none() | st.integers(-n - 2, n + 2)
    return x, d, draw(bound), draw(bound), draw(st.integers(1, 3))


@st.composite
def select_case(draw):
    x, d = draw(tensor_dim(ALL, min_dims=1))
    n = x.shape[d]
    return x, d, draw(st.integers(-n, n - 1))


@st.composite
def join_case(draw, same_dtype=False):
    base = draw(shapes(min_dims=1))
    d = draw(st.integers(-len(base), len(base) - 1))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        shp = list(base)
        shp[d] = draw(st.integers(0, 3))
        parts.append(draw(tensor((F32,) if same_dtype else ALL, shape=st.just(tuple(shp)))))
    return parts, d


@st.composite
def stack_case(draw):
    shp = draw(shapes())
    parts = [draw(tensor(ALL, shape=st.just(shp))) for _ in range(draw(st.integers(1, 3)))]
    return parts, draw(st.integers(-len(shp) - 1, len(shp)))


@st.composite
def expand_case(draw):
    x = draw(tensor(ALL, max_dims=2))
    lead = draw(st.lists(st.integers(1, 3), max_size=2))
    sizes = [(draw(st.integers(1, 3)) if s == 1 else s) if not draw(st.booleans()) else -1 for s in x.shape]
    return x, lead + sizes, False


@st.composite
def index_case(draw):
    x = draw(tensor(ALL, min_dims=1))
    idx = []
    for n in x.shape[: draw(st.integers(1, x.ndim))]:
        kind = draw(st.sampled_from(["none", "int", "bool"]))
        if kind == "none":
            idx.append(None)
        elif kind == "int":
            idx.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3)), I64))
        else:
            idx.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool))
    ints = [i for i in idx if i is not None and i.dtype == I64]
    if len({len(i) for i in ints}) > 1 or any(i is not None and i.dtype == bool for i in idx) and ints:
        idx = [None if i is not None and i.dtype == I64 else i for i in idx]  # keep them broadcastable
    if all(i is None for i in idx):  # torch asserts internally on an all-None index list
        idx[0] = np.array([0], I64)
    return x, idx


@st.composite
def gather_case(draw):
    x, d = draw(tensor_dim(NUM, min_dims=1))
    shp = tuple(draw(st.integers(1, s)) if k != d else draw(st.integers(1, 4)) for k, s in enumerate(x.shape))
    n = x.shape[d]
    index = np.array(draw(st.lists(st.integers(0, n - 1), min_size=int(np.prod(shp)), max_size=int(np.prod(shp)))),
                     I64).reshape(shp)
    return x, d, index


def _scatter_src(t):
    (x, d, index), src_extra = t
    return x, d, index, np.arange(int(np.prod(index.shape)) + src_extra).astype(x.dtype)[: index.size].reshape(
        index.shape)


FACTORY_OPTS = (st.sampled_from([None, 4, 6, 7, 11]), st.none(), st.just("cpu") | st.none(), st.none())

CASES = [
    ("aten::size", st.tuples(tensor(ALL))),
    ("aten::size.int", tensor_dim(ALL, min_dims=1)),
    ("aten::dim", st.tuples(tensor(ALL))),
    ("aten::numel", st.tuples(tensor(ALL))),
    ("aten::view", reshape_case()),
    ("aten::reshape", _with(permute_case()).map(lambda t: (np.transpose(t[0], t[1]) if t[0].ndim else t[0], [-1]))),
    ("aten::flatten.using_ints", _with(tensor_dim(ALL), st.integers(-1, 0)).map(lambda t: (t[0], t[1], -1))),
    ("aten::t", st.tuples(tensor(ALL, max_dims=2))),
    ("aten::transpose.int", _with(tensor_dim(ALL), st.integers(-1, 0))),
    ("aten::permute", permute_case()),
    ("aten::unsqueeze", st.tuples(tensor(ALL), st.integers(-1, 0))),
    ("aten::squeeze", st.tuples(tensor(ALL))),
    ("aten::squeeze.dim", tensor_dim(ALL)),
    ("aten::expand", expand_case()),
    ("aten::contiguous", st.tuples(tensor(ALL), st.just(0))),
    ("aten::repeat", st.tuples(tensor(ALL, max_dims=2), st.lists(st.integers(0, 3), min_size=2, max_size=3))),
    ("aten::cat", join_case()),
    ("aten::stack", stack_case()),
    ("aten::hstack", stack_case().map(lambda t: (t[0],))),
    ("aten::vstack", stack_case().map(lambda t: (t[0],))),
    ("aten::dstack", stack_case().map(lambda t: (t[0],))),
    ("aten::column_stack", stack_case().map(lambda t: (t[0],))),
    ("aten::stride.int", tensor_dim(ALL)),
    ("aten::chunk", _with(tensor_dim(ALL, min_dims=1, min_side=0)).map(lambda t: (t[0], 2, t[1]))),
    ("aten::chunk", _with(tensor_dim(ALL, min_dims=1), st.integers(1, 5)).map(lambda t: (t[0], t[2], t[1]))),
    ("aten::split.Tensor", _with(tensor_dim(ALL, min_dims=1), st.integers(1, 3)).map(lambda t: (t[0], t[2], t[1]))),
    ("aten::unbind.int", tensor_dim(ALL, min_dims=1)),
    ("aten::slice.Tensor", slice_case()),
    ("aten::select.int", select_case()),
    ("aten::narrow", select_case().map(lambda t: (t[0], t[1], t[2], 0 if t[2] < 0 else t[0].shape[t[1]] - t[2]))),
    ("aten::index.Tensor", index_case()),
    ("aten::index_select", _with(tensor_dim(ALL, min_dims=1)).map(
        lambda t: (t[0], t[1], np.array([0, t[0].shape[t[1]] - 1, 0], I64)))),
    ("aten::gather", gather_case().map(lambda t: (*t, False))),
    ("aten::scatter.src", st.tuples(gather_case(), st.integers(0, 2)).map(_scatter_src)),
    ("aten::scatter.value", st.tuples(gather_case(), st.integers(0, 3)).map(lambda t: (*t[0], t[1]))),
    ("aten::tril", st.tuples(tensor(ALL, min_dims=2), st.integers(-2, 2))),
    ("aten::triu", st.tuples(tensor(ALL, min_dims=2), st.integers(-2, 2))),
    ("aten::flip", st.tuples(tensor(ALL, min_dims=1), st.just([0]))),
    ("aten::roll", st.tuples(tensor(ALL, min_dims=1), st.lists(st.integers(-3, 3), min_size=1, max_size=1),
                             st.just([0]))),
    ("aten::to.dtype", st.tuples(tensor(ALL), st.sampled_from([4, 6, 7, 11, 3]), st.just(False), st.booleans(),
                                 st.none())),
    ("aten::type_as", st.tuples(tensor(ALL), tensor(ALL))),
    ("aten::clone", st.tuples(tensor(ALL), st.none())),
    ("aten::masked_select", st.tuples(tensor(ALL, shape=st.just((2, 3))), tensor((BOOL,), shape=st.just((3,))))),
    ("aten::nonzero", st.tuples(tensor(ALL))),
    ("aten::zeros", st.tuples(st.lists(st.integers(0, 3), max_size=3), *FACTORY_OPTS)),
    ("aten::ones", st.tuples(st.lists(st.integers(0, 3), max_size=3), *FACTORY_OPTS)),
    ("aten::full", st.tuples(st.lists(st.integers(0, 3), max_size=3), st.sampled_from([2, 2.5, True]),
                             *FACTORY_OPTS)),
    ("aten::zeros_like", st.tuples(tensor(ALL), *FACTORY_OPTS, st.none())),
    ("aten::full_like", st.tuples(tensor(ALL), st.sampled_from([3, -1.5]), *FACTORY_OPTS, st.none())),
    ("aten::arange", st.tuples(st.sampled_from([0, 5, 7.5, 1]), *FACTORY_OPTS[1:]).map(lambda t: (t[0], None, *t[1:]))),
    ("aten::arange.start_step", st.tuples(st.sampled_from([0, -3, 1.5]), st.sampled_from([4, 10, 2.25]),
                                          st.sampled_from([1, 2, 0.5, 0.3]), st.none(), *FACTORY_OPTS[1:])),
    ("aten::scalar_tensor", st.tuples(st.sampled_from([1, 2.5, True]), *FACTORY_OPTS)),
    ("aten::eye", st.tuples(st.integers(0, 3), *FACTORY_OPTS)),
    ("aten::linspace", st.tuples(st.sampled_from([0, -1.5]), st.sampled_from([1, 4.0]), st.integers(0, 5),
                                 st.sampled_from([None, 7]), st.none(), st.none(), st.none())),
    # in place: x[1:3] = y is slice + copy_; index_put_, masked_scatter_, fill_
    ("aten::copy_", st.tuples(tensor(ALL, shape=st.just((2, 3))), tensor(ALL, shape=st.just((3,))), st.just(False))),
    ("aten::index_put_", index_case().map(lambda t: (t[0], t[1], np.array(7, t[0].dtype), False))),
    ("aten::index_put_", st.tuples(tensor(NUM, shape=st.just((4,))), st.just([np.array([0, 1, 0, 3], I64)]),
                                   st.just(np.array([1, 2, 3, 4]))).map(lambda t: (t[0], t[1], t[2].astype(t[0].dtype), True))),
    ("aten::masked_scatter", st.tuples(tensor(ALL, shape=st.just((2, 3))), tensor((BOOL,), shape=st.just((3,))),
                                       st.just(np.arange(6).reshape(2, 3))).map(
        lambda t: (t[0], t[1], t[2].astype(t[0].dtype)))),
    ("aten::fill_.Scalar", st.tuples(tensor(ALL), st.sampled_from([0, 1.5, True]))),
    ("aten::zero_", st.tuples(tensor(ALL))),
]


@pytest.mark.parametrize("name,strategy", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_shape_op_matches_torch(name, strategy) -> None:
    """Values, dtype and shape equal PyTorch's (mutated arguments too)."""

    compared = []

    @settings(max_examples=EXAMPLES)
    @given(strategy)
    def check(values):
        compared.append(check_against_torch(name, values) is not None)

    check()
    assert any(compared), f"every example of {name} raised in both torch and irvm: the strategy tests nothing"


VIEWS = [
    ("aten::view", lambda x: (x, [-1])),
    ("aten::reshape", lambda x: (x, [2, 6])),
    ("aten::flatten.using_ints", lambda x: (x, 0, -1)),
    ("aten::transpose.int", lambda x: (x, 0, 1)),
    ("aten::permute", lambda x: (x, [1, 0])),
    ("aten::unsqueeze", lambda x: (x, 1)),
    ("aten::expand", lambda x: (x, [2, 3, 4], False)),
    ("aten::select.int", lambda x: (x, 1, 2)),
    ("aten::slice.Tensor", lambda x: (x, 1, 1, 3, 1)),
    ("aten::narrow", lambda x: (x, 0, 1, 2)),
    ("aten::t", lambda x: (x,)),
    ("aten::detach", lambda x: (x,)),
    ("aten::alias", lambda x: (x,)),
    ("aten::squeeze", lambda x: (x,)),
    ("aten::contiguous", lambda x: (x, 0)),
    ("aten::to.dtype", lambda x: (x, 6, False, False, None)),
    ("aten::view_as", lambda x: (x, np.zeros((4, 3)))),
]


@pytest.mark.parametrize("name,make", VIEWS, ids=[v[0] for v in VIEWS])
def test_views_share_memory(name, make) -> None:
    """A view op's result aliases its input, so in-place writes go through as in PyTorch."""
    x = np.arange(12, dtype=F32).reshape(3, 4)
    r = lookup(name).kernel(*make(x))
    assert np.shares_memory(r, x)


@pytest.mark.parametrize("name", ["aten::chunk", "aten::split.Tensor", "aten::unbind.int"])
def test_pieces_are_views(name) -> None:
    x = np.arange(12, dtype=F32).reshape(4, 3)
    pieces = lookup(name).kernel(x, 2, 0) if name != "aten::unbind.int" else lookup(name).kernel(x, 0)
    assert pieces and all(np.shares_memory(p, x) for p in pieces)


def test_slice_then_copy_writes_through() -> None:
    """`x[1:3] = y` compiles to aten::slice + aten::copy_: x changes."""
    x = np.zeros((4, 2), F32)
    view = lookup("aten::slice.Tensor").kernel(x, 0, 1, 3, 1)
    lookup("aten::copy_").kernel(view, np.array([1, 2], I64), False)
    assert_same(x, np.array([[0, 0], [1, 2], [1, 2], [0, 0]], F32))
    row = lookup("aten::select.int").kernel(x, 0, 0)
    lookup("aten::fill_.Scalar").kernel(row, 5)
    assert x[0].tolist() == [5, 5]


def test_select_of_vector_is_zero_dim_view() -> None:
    x = np.arange(3, dtype=F32)
    r = lookup("aten::select.int").kernel(x, 0, 1)
    assert type(r) is np.ndarray and r.shape == () and np.shares_memory(r, x)


@pytest.mark.parametrize("name,args", [("aten::clone", (None,)), ("aten::repeat", ([1, 1],)),
                                       ("aten::to.dtype", (7, False, False, None)), ("aten::flip", ([0],))])
def test_fresh_results_do_not_alias(name, args) -> None:
    x = np.arange(6, dtype=F32).reshape(2, 3)
    assert not np.shares_memory(lookup(name).kernel(x, *args), x)


def test_to_same_dtype_returns_input_unless_copy() -> None:
    x = np.ones(3, F32)
    to = lookup("aten::to.dtype").kernel
    assert to(x, 6, False, False, None) is x
    assert to(x, 6, False, True, None) is not x


def test_view_refuses_to_copy() -> None:
    x = np.arange(6, dtype=F32).reshape(2, 3).T
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        lookup("aten::view").kernel(x, [6])
    assert lookup("aten::reshape").kernel(x, [6]).shape == (6,)


def test_x_float_is_to_dtype() -> None:
    """TorchScript prints x.float() as aten::to(%x, 6, False, False, None): aten::to.dtype."""
    r = lookup("aten::to.dtype").kernel(np.arange(3), 6, False, False, None)
    assert r.dtype == F32 and FLOAT


@pytest.mark.parametrize("data", [[1, 2], [[1.5, 2.0]], [True, False], [[1], [2]], [], [1, 2.5]])
@pytest.mark.parametrize("dtype", [None, 7, 4])
def test_tensor_literal_dtype_like_torch_tensor(data, dtype) -> None:
    """aten::tensor(%list, %dtype, ...) infers int64/float32/bool from the data as torch.tensor does."""
    from tests.support.tensor_ops import _TORCH_DTYPES
    from vm.ops._dtypes import to_dtype

    ours = lookup("aten::tensor").kernel(data, dtype, None, False)
    theirs = torch.tensor(data, dtype=None if dtype is None else _TORCH_DTYPES()[to_dtype(dtype)])
    assert_same(ours, theirs)
