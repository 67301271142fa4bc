"""Operators that real model zoos reach (found by ``tools/op_coverage.py``), against PyTorch:
``diff`` (Hugging Face GPT-2's packed-sequence detection, traced without a mask), ``tile``
(SAM2's Hiera), ``Tensor.unfold`` (HaloNet), and the
in-place twins of functional kernels (``addmm_``, ``baddbmm_``, ``cumsum_``, ``lerp_``...),
which must write PyTorch's result into ``self`` and return ``self`` itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.support.tensor_ops import (
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


@st.composite
def roll_args(draw):
    """Shifts beyond the size and negative, several dims, no dims (the flattened roll),
    and shift/dim lists of different lengths (an error in PyTorch)."""
    x = draw(tensor(ALL, min_dims=0, max_dims=3))
    n = max(x.ndim, 1)
    dims = draw(st.lists(st.integers(-n, n - 1), max_size=3))
    k = len(dims) if draw(st.integers(0, 4)) else draw(st.integers(0, 3))
    return x, draw(st.lists(st.integers(-7, 7), min_size=max(k, 0), max_size=max(k, 0))), dims


@st.composite
def einsum_args(draw):
    """A random equation over 1-3 operands: repeated letters (diagonals), letters summed
    away, an implicit or explicit output, sometimes an ellipsis over broadcast dims."""
    letters = "abcdA"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    dtype = draw(st.sampled_from([F32, I64, np.dtype("float64")]))
    ellipsis = draw(st.booleans())
    lead = draw(st.lists(st.integers(1, 2), max_size=2)) if ellipsis else []
    terms, tensors = [], []
    for _ in range(draw(st.integers(1, 3))):
        sub = "".join(draw(st.lists(st.sampled_from(letters), max_size=3)))
        shape = [sizes[c] for c in sub]
        if ellipsis:
            mine = lead[len(lead) - draw(st.integers(0, len(lead))):]
            mine = [1 if draw(st.booleans()) else s for s in mine]  # broadcasting inside the ellipsis
            sub, shape = "..." + sub, mine + shape
        terms.append(sub)
        # finite values: where inf meets 0 depends on the contraction order, not on the equation
        tensors.append(draw(tensor((dtype,), shape=st.just(tuple(shape))).map(lambda x: np.asarray(np.nan_to_num(x)))))
    used = sorted({c for t in terms for c in t if c.isalpha()})
    equation = ",".join(terms)
    if draw(st.booleans()):
        out = draw(st.permutations(used)) [: draw(st.integers(0, len(used)))]
        equation += "->" + ("..." if ellipsis else "") + "".join(out)
    return equation, tensors, None


@st.composite
def baddbmm_args(draw):
    """``self`` broadcast to the product's shape, beta 0 (``self`` ignored, NaN included),
    int and float tensors."""
    dt = (draw(st.sampled_from([F32, I64])),)
    b, n, k, m = (draw(st.integers(1, 3)) for _ in range(4))
    shape = draw(st.sampled_from([(b, n, m), (n, m), (1, m), (m,), (1, 1, 1), ()]))
    ints = dt[0] == I64
    beta = draw(st.sampled_from([1, 0, 2] if ints else [1, 0, 0.5, -2]))
    alpha = draw(st.sampled_from([1, 3] if ints else [1, 2, -0.5]))
    return (draw(tensor(dt, shape=st.just(shape))), draw(tensor(dt, shape=st.just((b, n, k)))),
            draw(tensor(dt, shape=st.just((b, k, m)))), beta, alpha)


@st.composite
def sdpa_args(draw):
    """Attention as the zoos call it: 3-d or 4-d, float32/64, bool or float masks of any
    broadcastable shape (HF's (B, 1, 1, S) padding mask, (L, S) causal masks), is_causal
    with L != S, an explicit scale, grouped-query heads."""
    dt = draw(st.sampled_from([F32, np.dtype("float64")]))
    b, h, length, source, e, ev = (draw(st.integers(1, 3)) for _ in range(6))
    gqa = draw(st.booleans())
    kv_heads = draw(st.sampled_from([d for d in (1, h) if h % d == 0])) if gqa else h
    four = draw(st.booleans()) or gqa
    q_shape = (b, h, length, e) if four else (b, length, e)
    k_shape = (b, kv_heads, source, e) if four else (b, source, e)
    v_shape = (b, kv_heads, source, ev) if four else (b, source, ev)
    q, k, v = (draw(tensor((dt,), shape=st.just(s)).map(lambda x: np.nan_to_num(x, posinf=3, neginf=-3)))
               for s in (q_shape, k_shape, v_shape))
    mask_kind = draw(st.sampled_from(["none", "bool", "float", "causal"]))
    mask, causal = None, False
    full = (b, h, length, source) if four else (b, length, source)
    if mask_kind in ("bool", "float"):
        shape = tuple(1 if draw(st.booleans()) else n for n in full)[draw(st.integers(0, len(full) - 2)):]
        mask = draw(tensor((np.dtype(bool),) if mask_kind == "bool" else (dt,), shape=st.just(shape)))
        if mask_kind == "float":
            mask = np.nan_to_num(mask, nan=0.0)
    causal = mask_kind == "causal"
    scale = draw(st.none() | st.sampled_from([0.5, 1.0, 2.0]))
    return q, k, v, mask, 0.0, causal, scale, gqa


@st.composite
def masked_fill_args(draw, tensor_value: bool):
    """A mask that broadcasts with ``self`` (or an int mask, refused by PyTorch), and a
    value of any kind: a Python int/float/bool or a tensor of any dtype (0-d, or 1-d:
    refused), including -inf, as attention masks use."""
    x = draw(tensor(ALL))
    keep = draw(st.integers(0, x.ndim))
    shape = tuple(1 if draw(st.booleans()) else n for n in x.shape[x.ndim - keep :])
    mask = draw(tensor((np.dtype(bool),) * 5 + (I64,), shape=st.just(shape)))
    if tensor_value:
        value = draw(tensor(ALL, max_dims=0) | tensor(ALL, shape=st.just((1,))))
    else:
        value = draw(scalars("ifb") | st.just(float("-inf")))
    return x, mask, value


@st.composite
def unfold_args(draw):
    """Tensor.unfold windows (timm's HaloNet): any dim, sizes up to and past the length, steps."""
    x, dim = draw(tensor_dim(ALL))
    length = x.shape[dim] if x.ndim else 1
    return x, dim, draw(st.integers(0, length + 1)), draw(st.integers(0, 3))


CASES += [
    ("aten::tile", st.tuples(tensor(ALL), st.lists(st.integers(0, 3), max_size=4))),
    ("aten::unfold", unfold_args()),
    ("aten::masked_fill.Scalar", masked_fill_args(False)),
    ("aten::masked_fill.Tensor", masked_fill_args(True)),
    ("aten::masked_fill_.Scalar", masked_fill_args(False)),
    ("aten::masked_fill_.Tensor", masked_fill_args(True)),
    ("aten::roll", roll_args()),
    ("aten::einsum", einsum_args()),
    ("aten::baddbmm", baddbmm_args()),
    ("aten::scaled_dot_product_attention", sdpa_args()),
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


UPSAMPLE_2D = [("upsample_nearest2d", ()), ("_upsample_nearest_exact2d", ()), ("upsample_bilinear2d", (False,)),
               ("upsample_bilinear2d", (True,)), ("upsample_bicubic2d", (False,)), ("upsample_bicubic2d", (True,)),
               ("_upsample_bilinear2d_aa", (False,)), ("_upsample_bicubic2d_aa", (False,))]


@pytest.mark.parametrize("name,corners", UPSAMPLE_2D, ids=[f"{n}{c}" for n, c in UPSAMPLE_2D])
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_upsample_of_images_in_uint8_and_refused_dtypes(name, corners, data) -> None:
    """uint8 images resample as PyTorch's uint8 kernels do (nearest exactly; weighted modes
    width then height, rounded and saturated per pass: within 2 levels of PyTorch's fixed
    point); int64, int32 and bool tensors are refused where PyTorch refuses them."""
    from vm.ops.registry import lookup

    h, w, oh, ow = (data.draw(st.integers(1 if i > 1 else 2, 9)) for i in range(4))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = rng.integers(0, 256, (1, 2, h, w)).astype(np.uint8)
    by_scale = data.draw(st.booleans())
    size, scales = (None, [oh / h, ow / w]) if by_scale else ([oh, ow], None)
    want = getattr(torch.ops.aten, name).vec(torch.from_numpy(x), size, *corners, scales).numpy()
    got = lookup(f"aten::{name}.vec").kernel(x, size, *corners, scales)
    assert got.dtype == np.uint8 and got.shape == want.shape
    limit = 0 if "nearest" in name else 2
    assert np.abs(got.astype(int) - want.astype(int)).max(initial=0) <= limit
    bad = data.draw(st.sampled_from([np.int64, np.int32, np.bool_]))
    with pytest.raises(TypeError):
        lookup(f"aten::{name}.vec").kernel(x.astype(bad), size, *corners, scales)


ACTIVATIONS = ["hardtanh", "relu6", "leaky_relu", "elu", "selu", "celu", "softplus", "hardswish", "hardsigmoid",
               "mish", "hardshrink", "softshrink", "log_sigmoid"]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations_refuse_the_dtypes_torch_refuses(name) -> None:
    """On int and bool tensors an activation either matches torch or raises as torch does
    (only hardtanh and relu6 run on integers); floats keep matching."""
    from vm.ops.registry import overloads

    info = overloads(f"aten::{name}")[0]
    extra = [a.default for a in info.schema.arguments[1:]]
    for dtype in ("int64", "int32", "bool", "float32"):
        x = np.array([[-2, -1, 0], [1, 2, 3]], dtype)
        assert check_against_torch(info.name, (x, *extra)) is not None or dtype != "float32"
