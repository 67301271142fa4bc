"""int/float/bool kernels against TorchScript itself: same overload, same value, same type.

Each case scripts a one-line function with torch, resolves the graph TorchScript produced
with irvm's resolver, runs both on hypothesis-drawn values and compares results, or that
both raise.  The drawn values include the cases where C++ and Python disagree (negative
operands of ``//`` and ``%``, division by zero, nan, huge floats, int64 overflow).
"""

from __future__ import annotations

import functools
import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.against_torch import outcome, same
from tests.support.prim_torch import Scripted

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

ints = st.one_of(st.integers(-20, 20), st.integers(-(2**63), 2**63 - 1))
floats = st.one_of(
    st.floats(-20, 20),
    st.sampled_from([0.0, -0.0, 0.5, -2.5, 1e300, -1e-300, math.inf, -math.inf, math.nan]),
    st.floats(allow_nan=True, allow_infinity=True),
)
TYPES = {"int": ints, "float": floats}


@functools.cache
def scripted(src: str) -> Scripted:
    return Scripted(src)


def check(src: str, *args: object) -> None:
    fn = scripted(src)
    theirs = outcome(fn.theirs, *args)
    ours = outcome(fn.ours, *args)
    assert theirs[0] == ours[0], f"{src!r}{args}: torch {theirs}, irvm {ours} via {fn.kinds()}"
    assert same(theirs[1], ours[1]), f"{src!r}{args}: torch {theirs[1]!r}, irvm {ours[1]!r} via {fn.kinds()}"


BINARY = ["a + b", "a - b", "a * b", "a / b", "a // b", "a % b", "a ** b", "a == b", "a != b", "a < b",
          "a <= b", "a > b", "a >= b", "min(a, b)", "max(a, b)", "math.fmod(a, b)", "math.atan2(a, b)",
          "math.copysign(a, b)", "math.remainder(a, b)", "divmod(a, b)", "math.log(a, b)"]  # fmt: skip


@pytest.mark.parametrize("ta", ["int", "float"])
@pytest.mark.parametrize("tb", ["int", "float"])
def test_binary_matches_torchscript(ta: str, tb: str) -> None:
    """Every binary expression on one drawn pair (one hypothesis run per type pair)."""
    sources = [f"def f(a: {ta}, b: {tb}):\n    return {expr}" for expr in BINARY]

    @given(TYPES[ta], TYPES[tb])
    @example(-7, 2)
    @example(7, -2)
    @example(5, 0)
    @example(0, -1)
    def run(a: float, b: float) -> None:
        a = (int(a) if math.isfinite(a) else 0) if ta == "int" else float(a)
        b = (int(b) if math.isfinite(b) else 0) if tb == "int" else float(b)
        for src, expr in zip(sources, BINARY):
            crash = expr in ("a % b", "divmod(a, b)", "a // b") and (b == 0 or (b == -1 and a == -(2**63)))
            if ta == tb == "int" and crash:
                continue  # a SIGFPE inside TorchScript itself; irvm raises ZeroDivisionError instead
            check(src, a, b)

    run()


INT_BINARY = ["a << b", "a >> b", "a & b", "a | b", "a ^ b", "math.gcd(a, b)"]


@given(a=ints, b=st.integers(0, 62))
def test_int_bitwise_matches_torchscript(a: int, b: int) -> None:
    for expr in INT_BINARY:
        check(f"def f(a: int, b: int):\n    return {expr}", a, b)


@given(a=st.booleans(), b=st.booleans())
def test_bool_ops_match_torchscript(a: bool, b: bool) -> None:
    for expr in ["a != b", "a == b", "not a", "a ^ b", "a & b", "a | b"]:
        check(f"def f(a: bool, b: bool):\n    return {expr}", a, b)


UNARY = ["-a", "abs(a)", "float(a)", "int(a)", "bool(a)", "round(a)", "math.floor(a)", "math.ceil(a)",
         "math.sqrt(a)", "math.exp(a)", "math.log(a)", "math.log10(a)", "math.log1p(a)", "math.expm1(a)",
         "math.sin(a)", "math.cos(a)", "math.tan(a)", "math.tanh(a)", "math.asin(a)", "math.acos(a)",
         "math.atan(a)", "math.sinh(a)", "math.cosh(a)", "math.asinh(a)", "math.acosh(a)", "math.atanh(a)",
         "math.erf(a)", "math.erfc(a)", "math.lgamma(a)", "math.gamma(a)", "math.degrees(a)",
         "math.radians(a)", "str(a)"]  # fmt: skip


@pytest.mark.parametrize("ta", ["int", "float"])
def test_unary_matches_torchscript(ta: str) -> None:
    sources = [f"def f(a: {ta}):\n    return {expr}" for expr in UNARY]
    if ta == "float":
        sources += [f"def f(a: float):\n    return {expr}" for expr in FLOAT_ONLY]

    @given(TYPES[ta])
    @example(0)
    @example(-3)
    def run(a: float) -> None:
        a = (int(a) if math.isfinite(a) else 0) if ta == "int" else float(a)
        for src in sources:
            check(src, a)

    run()


FLOAT_ONLY = ["math.isnan(a)", "math.isinf(a)", "math.isfinite(a)", "math.modf(a)", "math.frexp(a)",
              "math.ldexp(a, 3)"]  # fmt: skip


def test_pow_of_ints_is_a_float_unless_the_output_says_int() -> None:
    assert scripted("def f(a: int, b: int):\n    return a ** b").kinds() == ["aten::pow.int"]
    check("def f(a: int, b: int):\n    return a ** b", 2, -2)
    check("def f(a: int, b: int):\n    return a ** b", 0, -1)


@given(lo=st.integers(-30, 30), hi=st.integers(-30, 30), step=st.integers(-7, 7))
def test_range_length_and_derive_index_match_python_range(lo: int, hi: int, step: int) -> None:
    from vm.ops.registry import lookup
    from vm.ops.scalar import range_length

    if step == 0:
        with pytest.raises(ValueError):
            range_length(lo, hi, step)
        return
    expected = list(range(lo, hi, step))
    assert range_length(lo, hi, step) == len(expected)
    derive = lookup("aten::__derive_index").kernel
    assert [derive(i, lo, step) for i in range(len(expected))] == expected
