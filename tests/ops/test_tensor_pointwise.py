"""Pointwise kernels against PyTorch: values, dtype (type promotion), shape (broadcasting,
0-dim), errors, and in-place mutation, for every overload in the table below."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.tensor_ops import (
    ALL,
    BOOL,
    EXAMPLES,
    F32,
    F64,
    FLOAT,
    I32,
    I64,
    INTS,
    NUM,
    binary,
    broadcast_pair,
    check_against_torch,
    scalars,
    tensor,
    tensor_scalar,
    unary,
)

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

alphas = st.sampled_from([1, 2, -1])
modes = st.sampled_from([None, "floor", "trunc"])

BINARY_TENSOR = ["mul.Tensor", "eq.Tensor", "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor",
                 "maximum", "minimum", "max.other", "min.other", "div.Tensor", "true_divide.Tensor",
                 "logical_and", "logical_or", "logical_xor"]
BINARY_SCALAR = ["mul.Scalar", "eq.Scalar", "ne.Scalar", "lt.Scalar", "le.Scalar", "gt.Scalar", "ge.Scalar",
                 "div.Scalar"]
UNARY_FLOATING = ["exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                  "sigmoid", "erf", "erfc", "erfinv", "reciprocal", "atan", "sinh", "cosh", "asin", "acos", "exp2", "asinh"]
UNARY_KEEP = ["abs", "neg", "floor", "ceil", "round", "trunc", "sign", "square", "relu", "bitwise_not",
              "logical_not", "silu", "frac"]

CASES: list[tuple[str, st.SearchStrategy]] = (
    [(f"aten::{n}", binary(ALL)) for n in BINARY_TENSOR]
    + [(f"aten::{n}", tensor_scalar(ALL)) for n in BINARY_SCALAR]
    + [(f"aten::{n}", unary(ALL)) for n in UNARY_FLOATING + UNARY_KEEP]
    + [
        ("aten::add.Tensor", binary(ALL, alphas)),
        ("aten::add.Scalar", tensor_scalar(ALL, "ifb", alphas)),
        ("aten::sub.Tensor", binary(NUM, alphas)),
        ("aten::sub.Scalar", tensor_scalar(NUM, "if", alphas)),
        ("aten::rsub.Tensor", binary(NUM, alphas)),
        ("aten::rsub.Scalar", tensor_scalar(NUM, "if", alphas)),
        ("aten::div.Tensor_mode", binary(NUM, modes)),
        ("aten::div.Scalar_mode", tensor_scalar(NUM, "if", modes)),
        ("aten::floor_divide", binary(NUM)),
        ("aten::floor_divide.Scalar", tensor_scalar(NUM, "if")),
        ("aten::remainder.Tensor", binary(NUM)),
        ("aten::remainder.Scalar", tensor_scalar(NUM, "if")),
        ("aten::remainder.Scalar_Tensor", st.tuples(scalars("if"), tensor(NUM))),
        ("aten::fmod.Tensor", binary(NUM)),
        ("aten::fmod.Scalar", tensor_scalar(NUM, "if")),
        ("aten::pow.Tensor_Tensor", binary(NUM)),
        ("aten::pow.Tensor_Scalar", tensor_scalar(NUM, "if")),
        ("aten::pow.Scalar", st.tuples(scalars("if"), tensor(NUM))),
        ("aten::bitwise_and.Tensor", binary(INTS)),
        ("aten::bitwise_or.Scalar", tensor_scalar(INTS, "ib")),
        ("aten::bitwise_xor.Tensor", binary(INTS)),
        ("aten::__and__.Tensor", binary(INTS)),
        ("aten::__or__.Tensor", binary(INTS)),
        ("aten::__xor__.Scalar", tensor_scalar(INTS, "ib")),
        ("aten::where.self", st.tuples(broadcast_pair((BOOL,), ALL), tensor(ALL, max_dims=2)).map(
            lambda t: (t[0][0], t[0][1], t[1]))),
        ("aten::where.ScalarOther", st.tuples(broadcast_pair((BOOL,), ALL), scalars()).map(
            lambda t: (t[0][0], t[0][1], t[1]))),
        ("aten::where.ScalarSelf", st.tuples(broadcast_pair((BOOL,), ALL), scalars()).map(
            lambda t: (t[0][0], t[1], t[0][1]))),
        ("aten::where.Scalar", st.tuples(tensor((BOOL,)), scalars(), scalars())),
        ("aten::clamp", st.tuples(tensor(NUM), st.none() | scalars("if"), st.none() | scalars("if"))),
        ("aten::clamp.Tensor", st.tuples(broadcast_pair(NUM), st.none() | tensor(NUM, max_dims=1)).map(
            lambda t: (t[0][0], t[0][1], t[1]))),
        ("aten::clamp_min", tensor_scalar(NUM, "if")),
        ("aten::clamp_max", tensor_scalar(NUM, "if")),
        ("aten::clamp_min.Tensor", binary(NUM)),
        ("aten::masked_fill.Scalar", st.tuples(broadcast_pair(ALL, (BOOL,)), scalars()).map(
            lambda t: (t[0][0], t[0][1], t[1]))),
        ("aten::masked_fill.Tensor", st.tuples(broadcast_pair(ALL, (BOOL,)), tensor(ALL, max_dims=0)).map(
            lambda t: (t[0][0], t[0][1], t[1]))),
        ("aten::gelu", unary(FLOAT, st.sampled_from(["none", "tanh"]))),
        ("aten::round.decimals", unary(FLOAT, st.integers(-1, 3))),
        # in-place forms: self is mutated and returned (and dtype errors match)
        ("aten::add_.Tensor", binary(ALL, alphas)),
        ("aten::add_.Scalar", tensor_scalar(ALL, "ifb", alphas)),
        ("aten::sub_.Tensor", binary(NUM, alphas)),
        ("aten::mul_.Tensor", binary(ALL)),
        ("aten::mul_.Scalar", tensor_scalar(ALL)),
        ("aten::div_.Tensor", binary(NUM)),
        ("aten::div_.Scalar_mode", tensor_scalar(NUM, "if", modes)),
        ("aten::pow_.Scalar", tensor_scalar(NUM, "if")),
        ("aten::clamp_", st.tuples(tensor(NUM), st.none() | scalars("if"), st.none() | scalars("if"))),
        ("aten::masked_fill_.Scalar", st.tuples(broadcast_pair(ALL, (BOOL,)), scalars()).map(
            lambda t: (t[0][0], t[0][1], t[1]))),
        ("aten::relu_", unary(NUM)),
        ("aten::sigmoid_", unary(ALL)),
        ("aten::silu_", unary(ALL)),
        ("aten::tanh_", unary(ALL)),
        ("aten::erf_", unary(ALL)),
        ("aten::exp_", unary(ALL)),
        ("aten::neg_", unary(NUM)),
        ("aten::eq_.Scalar", tensor_scalar(ALL)),
        ("aten::gelu_", unary(FLOAT, st.sampled_from(["none", "tanh"]))),
    ]
)


@pytest.mark.parametrize("name,strategy", CASES, ids=[c[0] for c in CASES])
def test_pointwise_matches_torch(name: str, strategy: st.SearchStrategy) -> None:
    """Values, dtype and shape equal PyTorch's for random shapes, dtypes and scalars."""

    compared = []

    @settings(max_examples=EXAMPLES)
    @given(strategy)
    def check(values):
        compared.append(check_against_torch(name, values) is not None)

    check()
    assert any(compared), f"every example of {name} raised in both torch and irvm: the strategy tests nothing"


@pytest.mark.parametrize("name", ["aten::maximum", "aten::max.other", "aten::minimum", "aten::clamp"])
def test_nan_propagates_like_torch(name: str) -> None:
    """NaN wins in maximum/minimum/clamp, as in torch (and not as in Python's max)."""
    x = np.array([np.nan, 1.0, -2.0, np.nan], np.float32)
    y = np.array([0.0, np.nan, 5.0, np.nan], np.float32)
    args = (x, 0.0, 0.5) if name == "aten::clamp" else (x, y)
    check_against_torch(name, args)


def test_sign_of_nan_is_zero() -> None:
    check_against_torch("aten::sign", (np.array([np.nan, -3.0, 0.0, 2.0], np.float32),))


@pytest.mark.parametrize("dtype", [I64, I32, F32, F64])
def test_floor_divide_and_remainder_follow_python_sign_rules(dtype: np.dtype) -> None:
    """-7 // 2 is -4 and -7 % 2 is 1, for ints and floats, like torch and Python."""
    a = np.array([-7, 7, -7, 7, 0], dtype)
    b = np.array([2, -2, -2, 2, 3], dtype)
    for op in ("aten::floor_divide", "aten::remainder.Tensor", "aten::fmod.Tensor"):
        check_against_torch(op, (a, b))
    check_against_torch("aten::div.Tensor_mode", (a, b, "trunc"))


def test_integer_division_by_zero_raises() -> None:
    from vm.ops.registry import lookup

    with pytest.raises(ZeroDivisionError):
        lookup("aten::floor_divide").kernel(np.array([1, 2]), np.array([1, 0]))
    # true division of ints by zero is a float inf, as in torch
    r = lookup("aten::div.Tensor").kernel(np.array([1, -1]), np.array([0, 0]))
    assert r.dtype == F32 and np.isinf(r).all()


def test_scalar_does_not_raise_tensor_dtype() -> None:
    """float32 tensor + Python float stays float32; int32 + float gives float32; bool + int gives int64."""
    from vm.ops.registry import lookup

    add = lookup("aten::add.Scalar").kernel
    assert add(np.ones(2, F32), 1.5, 1).dtype == F32
    assert add(np.ones(2, I32), 1.5, 1).dtype == F32
    assert add(np.ones(2, I32), 7, 1).dtype == I32
    assert add(np.ones(2, BOOL), 7, 1).dtype == I64
    zero_dim = lookup("aten::add.Tensor").kernel(np.ones(2, I32), np.array(1.5, F64), 1)
    assert zero_dim.dtype == F64


def test_zero_dim_results_are_arrays() -> None:
    from vm.ops.registry import lookup

    x = np.array(2.0, F32)
    for name, args in [("aten::add.Tensor", (x, x, 1)), ("aten::exp", (x,)), ("aten::eq.Scalar", (x, 2.0)),
                       ("aten::where.Scalar", (np.array(True), 1.0, 2.0)), ("aten::neg", (x,))]:
        r = lookup(name).kernel(*args)
        assert type(r) is np.ndarray and r.shape == (), name


def test_pow_by_three_is_torchs_two_multiplies_bit_for_bit() -> None:
    """x ** 3 on a float tensor is computed as torch does it, (x * x) * x: the same bits,
    infinities, nan and -0.0 included (not powf, which rounds differently and is slow)."""
    import torch

    from vm.ops.registry import lookup

    x = np.random.default_rng(0).standard_normal(4096).astype(np.float32) * 40
    x[:5] = [np.inf, -np.inf, np.nan, -0.0, 1e20]
    for exponent in (3, 3.0):
        got = lookup("aten::pow.Tensor_Scalar").kernel(x, exponent)
        want = torch.pow(torch.from_numpy(x), exponent).numpy()
        assert got.dtype == np.float32
        assert np.array_equal(got, want, equal_nan=True) and np.signbit(got[3])
