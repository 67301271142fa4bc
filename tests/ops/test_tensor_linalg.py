"""Linear algebra kernels against PyTorch: matrix products of every rank matmul accepts,
addmm/linear with and without bias and scaling, einsum on the common equations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.tensor_ops import (
    EXAMPLES,
    F32,
    F64,
    I64,
    check_against_torch,
    tensor,
)

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

sides = st.integers(1, 4)
MATMUL_DTYPES = (F32, F64, I64)


@st.composite
def mats(draw, *specs):
    """Tensors of one dtype whose shapes are given by letter specs ("ij", "jk"), sizes shared."""
    dt = draw(st.sampled_from(MATMUL_DTYPES))
    sizes = {}
    out = []
    for spec in specs:
        shape = tuple(sizes.setdefault(c, draw(sides)) for c in spec)
        out.append(draw(tensor((dt,), shape=st.just(shape))))
    return tuple(out)


@st.composite
def matmul_case(draw):
    left = draw(st.sampled_from(["j", "ij", "bij", "aij"]))
    right = draw(st.sampled_from(["j", "jk", "bjk", "jk"]))
    a, b = draw(mats(left, right))
    if draw(st.booleans()) and a.ndim == 3 and b.ndim == 3:
        b = b[:1]  # broadcast the batch dim
    return a, b


scales = st.sampled_from([1, 2, 0.5, 0])

CASES = [
    ("aten::mm", mats("ij", "jk")),
    ("aten::bmm", mats("bij", "bjk")),
    ("aten::matmul", matmul_case()),
    ("aten::addmm", st.tuples(mats("ik", "ij", "jk"), scales, scales).map(lambda t: (*t[0], t[1], t[2]))),
    ("aten::addmm", st.tuples(mats("k", "ij", "jk"), scales, scales).map(lambda t: (*t[0], t[1], t[2]))),
    ("aten::baddbmm", st.tuples(mats("bik", "bij", "bjk"), scales, scales).map(lambda t: (*t[0], t[1], t[2]))),
    ("aten::linear", st.tuples(mats("bi", "oi", "o"), st.booleans()).map(
        lambda t: (t[0][0], t[0][1], t[0][2] if t[1] else None))),
    ("aten::linear", mats("abi", "oi", "o")),
    ("aten::dot", mats("i", "i")),
    ("aten::mv", mats("ij", "j")),
    ("aten::outer", mats("i", "j")),
]

EINSUM = [("ij,jk->ik", "ij", "jk"), ("bij,bjk->bik", "bij", "bjk"), ("ij->ji", "ij"), ("ii->i", "ii"),
          ("i,i->", "i", "i"), ("i,j->ij", "i", "j"), ("bhqd,bhkd->bhqk", "bhqd", "bhkd"), ("ij->", "ij"),
          ("...ij,...jk->...ik", "bij", "bjk"), ("ij,jk,kl->il", "ij", "jk", "kl"), ("i j , j k -> i k", "ij", "jk")]


@pytest.mark.parametrize("name,strategy", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_linalg_matches_torch(name, strategy) -> None:
    """Values, dtype and shape equal PyTorch's for random sizes and dtypes."""
    compared = []

    @settings(max_examples=EXAMPLES)
    @given(strategy)
    def check(values):
        compared.append(check_against_torch(name, values) is not None)

    check()
    assert any(compared), f"every example of {name} raised in both torch and irvm"


@pytest.mark.parametrize("equation,specs", [(e[0], e[1:]) for e in EINSUM], ids=[e[0] for e in EINSUM])
def test_einsum_matches_torch(equation, specs) -> None:
    @settings(max_examples=EXAMPLES)
    @given(mats(*specs).filter(lambda t: t[0].dtype != I64))
    def check(tensors):
        assert check_against_torch("aten::einsum", (equation, list(tensors), None)) is not None

    check()


def test_mixed_dtypes_are_refused_like_torch() -> None:
    a, b = np.ones((2, 2), F32), np.ones((2, 2), F64)
    for name in ("aten::mm", "aten::matmul"):
        check_against_torch(name, (a, b))  # both raise
    from vm.ops.registry import lookup

    with pytest.raises(RuntimeError, match="same dtype"):
        lookup("aten::mm").kernel(a, b)


def test_addmm_beta_zero_ignores_nan_bias() -> None:
    bias = np.full((2, 2), np.nan, F32)
    check_against_torch("aten::addmm", (bias, np.ones((2, 3), F32), np.ones((3, 2), F32), 0, 1))


@pytest.mark.parametrize("name,args", [("aten::tril", 0), ("aten::triu", 1)])
def test_tril_triu_batched(name, args) -> None:
    x = np.arange(24, dtype=F32).reshape(2, 3, 4)
    check_against_torch(name, (x, args))


@st.composite
def stacked_rows(draw):
    """An N-d float tensor (2-4 dims, sizes 0-5) in C order, or permuted (a strided view, as
    ConvNeXt's NHWC MLP input), and a matrix that multiplies its last axis."""
    dt = draw(st.sampled_from((np.float32, np.float64)))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=2, max_size=4)))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape).astype(dt)
    if draw(st.booleans()):
        perm = draw(st.permutations(range(len(shape))))
        x = x.transpose(perm)
    w = rng.standard_normal((draw(st.integers(1, 6)), x.shape[-1])).astype(dt)
    return x, w, rng.standard_normal(w.shape[0]).astype(dt)


@settings(max_examples=EXAMPLES, deadline=None)
@given(stacked_rows(), st.booleans())
def test_linear_and_matmul_on_stacked_inputs_match_torch(case, with_bias: bool) -> None:
    """Property: linear (with and without bias) and matmul by a matrix of an N-d input of
    any layout, computed as one gemm on the input seen as rows, equal torch's to rounding,
    through the kernel and through a C-contiguous and a strided out buffer."""
    from vm.ops.registry import lookup

    x, w, b = case
    bias = b if with_bias else None
    want = torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w),
                                      None if bias is None else torch.from_numpy(bias)).numpy()
    tol = 1e-5 if x.dtype == np.float32 else 1e-12
    lin = lookup("aten::linear")
    np.testing.assert_allclose(lin.kernel(x, w, bias), want, rtol=tol, atol=tol)
    buf = np.empty(want.shape, x.dtype)
    assert lin.out(buf, x, w, bias) is buf
    np.testing.assert_allclose(buf, want, rtol=tol, atol=tol)
    strided = np.empty(want.shape[::-1], x.dtype).T
    np.testing.assert_allclose(lin.out(strided, x, w, bias), want, rtol=tol, atol=tol)
    if x.ndim > 2:
        mm_want = torch.matmul(torch.from_numpy(x), torch.from_numpy(w.T.copy())).numpy()
        mm = lookup("aten::matmul")
        np.testing.assert_allclose(mm.kernel(x, w.T), mm_want, rtol=tol, atol=tol)
        buf = np.empty(mm_want.shape, x.dtype)
        np.testing.assert_allclose(mm.out(buf, x, w.T), mm_want, rtol=tol, atol=tol)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    st.integers(1, 40), st.sampled_from([(192, 256), (64, 192), (64, 64), (256, 64), (32, 96)]),
    st.sampled_from([F32, F64]), st.sampled_from(["none", "nan", "inf"]), st.integers(0, 2**16),
)
def test_few_rows_against_a_big_matrix_match_torch(rows: int, dims, dt, special: str, seed: int) -> None:
    """Property: linear, mm and addmm of 1 to 40 rows against a big matrix (192x256) or a
    small one (the few-rows route computes the transposed product, from 2 to 32 rows,
    against a big matrix or from 16 rows against a wide transposed one) equal torch's, through the
    kernels and their out variants, a NaN or inf in the input spreading as in torch."""
    from vm.ops.registry import lookup

    k, o = dims
    rng = np.random.default_rng(seed)
    x, w, b = (rng.standard_normal(s).astype(dt) for s in ((1, rows, k), (o, k), (o,)))
    if special != "none":
        x[0, rng.integers(rows), rng.integers(k)] = float(special)
    t = torch.from_numpy
    tol = 1e-4 if dt == F32 else 1e-12
    want = torch.nn.functional.linear(t(x), t(w), t(b)).numpy()
    lin = lookup("aten::linear")
    np.testing.assert_allclose(lin.kernel(x, w, b), want, rtol=tol, atol=tol)
    buf = np.empty(want.shape, dt)
    assert lin.out(buf, x, w, b) is buf
    np.testing.assert_allclose(buf, want, rtol=tol, atol=tol)
    x2, wt = x[0], np.ascontiguousarray(w.T)
    mm_want = torch.mm(t(x2), t(wt)).numpy()
    np.testing.assert_allclose(lookup("aten::mm").kernel(x2, wt), mm_want, rtol=tol, atol=tol)
    buf = np.empty(mm_want.shape, dt)
    assert lookup("aten::mm").out(buf, x2, wt) is buf
    np.testing.assert_allclose(buf, mm_want, rtol=tol, atol=tol)
    add_want = torch.addmm(t(b), t(x2), t(wt), beta=0.5, alpha=2.0).numpy()
    addmm = lookup("aten::addmm")
    np.testing.assert_allclose(addmm.kernel(b, x2, wt, 0.5, 2.0), add_want, rtol=tol, atol=tol)
    buf = np.empty(add_want.shape, dt)
    assert addmm.out(buf, b, x2, wt, 0.5, 2.0) is buf
    np.testing.assert_allclose(buf, add_want, rtol=tol, atol=tol)
