"""Out variants that write straight into the planned buffer, bit for bit the kernel's result.

The static runtime's benchmark rows (ratio_iou, the LSTM cell, the MLP, the small loop)
run linear/addmm/mm/matmul/bmm, relu, sigmoid, tanh, exp, add/sub/mul/div, clamp (and
clamp_min/clamp_max), max/min and maximum/minimum through their out variants.  For these,
``out(buf, *args)`` must

- return ``buf`` itself with exactly the kernel's bits (NaN payloads, signed zeros and
  infinities included; not merely close), for contiguous, strided (a ``chunk``) and
  Fortran-ordered operands;
- allocate no temporary of the result's size on the way: tracemalloc (numpy reports its
  data buffers to it) sees a peak well below half of the result's bytes, where a
  compute-then-copy variant allocates the whole result (numpy's ufunc machinery itself
  allocates a bounded iteration buffer when an operand broadcasts);
- still return a fresh, correct result (and leave ``buf`` alone) when ``buf`` does not fit.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vm.ops.registry import lookup

# 384 KiB of float32: a result-sized temporary stands out in tracemalloc above numpy's own
# iteration buffer (up to 8192 elements per broadcast operand, allocated on every call)
SHAPE = (256, 384)


def _specials(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Random values with NaNs of several payloads (and signs), +-0 and +-inf mixed in."""
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = x.reshape(-1)
    uint = np.dtype(f"u{x.itemsize}")
    nan_bits = np.array([0x7FC00001, 0xFFC00003, 0x7F800005], np.uint32)
    if x.itemsize == 8:
        nan_bits = np.array([0x7FF8000000000001, 0xFFF8000000000003, 0x7FF0000000000005], np.uint64)
    flat[::13] = nan_bits.astype(uint)[np.arange(flat[::13].size) % 3].view(x.dtype)
    flat[1::17], flat[2::19] = -0.0, 0.0
    flat[3::23], flat[4::29] = np.inf, -np.inf
    return x


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(f"u{a.itemsize}")


def _layouts(x: np.ndarray) -> list[np.ndarray]:
    """``x`` itself, a strided view of the same shape (as chunk gives), and F order."""
    wide = np.empty((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, 1::2] = x
    return [x, wide[:, 1::2], np.asfortranarray(x)]


def _f(rng: np.random.Generator, dtype: Any) -> np.ndarray:
    return _specials(rng, SHAPE, dtype)


# (overload, builder of the arguments from rng and dtype)
UNARY = ["aten::relu", "aten::sigmoid", "aten::tanh", "aten::exp", "aten::neg"]
CASES: list[tuple[str, Any]] = [(name, lambda r, d: [_f(r, d)]) for name in UNARY]
CASES += [
    ("aten::add.Tensor", lambda r, d: [_f(r, d), _f(r, d), 1]),
    ("aten::add.Tensor", lambda r, d: [_f(r, d), _f(r, d)[0], 2]),  # a broadcast bias, alpha
    ("aten::add.Scalar", lambda r, d: [_f(r, d), 0.25, 1]),
    ("aten::sub.Tensor", lambda r, d: [_f(r, d), _f(r, d), 1]),
    ("aten::mul.Tensor", lambda r, d: [_f(r, d), _f(r, d)]),
    ("aten::mul.Scalar", lambda r, d: [_f(r, d), 0.5]),
    ("aten::div.Tensor", lambda r, d: [_f(r, d), _f(r, d)]),
    ("aten::max.other", lambda r, d: [_f(r, d), _f(r, d)]),
    ("aten::min.other", lambda r, d: [_f(r, d), _f(r, d)]),
    ("aten::maximum", lambda r, d: [_f(r, d), _f(r, d)]),
    ("aten::clamp", lambda r, d: [_f(r, d), 0.0, None]),
    ("aten::clamp", lambda r, d: [_f(r, d), 1e-5, None]),
    ("aten::clamp", lambda r, d: [_f(r, d), None, 0.5]),
    ("aten::clamp", lambda r, d: [_f(r, d), -0.5, 0.5]),
    ("aten::clamp.Tensor", lambda r, d: [_f(r, d), _f(r, d)[:1], None]),
    ("aten::clamp_min", lambda r, d: [_f(r, d), 0.0]),
    ("aten::clamp_max", lambda r, d: [_f(r, d), 2]),
    ("aten::linear", lambda r, d: [_f(r, d), _f(r, d)[:128], _f(r, d)[0, :128]]),
    ("aten::linear", lambda r, d: [_f(r, d), _f(r, d)[:128], None]),
    ("aten::addmm", lambda r, d: [_f(r, d)[0, :128], _f(r, d), _f(r, d).T[:, :128].copy(), 1, 1]),
    ("aten::mm", lambda r, d: [_f(r, d), _f(r, d).T]),
    ("aten::matmul", lambda r, d: [_f(r, d), _f(r, d).T]),
    ("aten::bmm", lambda r, d: [_f(r, d).reshape(4, 64, 384), _f(r, d).reshape(4, 384, 64)]),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


def _out_call(name: str, args: list[Any]) -> tuple[np.ndarray, np.ndarray, int]:
    """(kernel result, out-variant result, tracemalloc peak of the out call)."""
    info = lookup(name)
    with np.errstate(all="ignore"):
        expected = info.kernel(*args)
        buf = np.empty_like(expected, order="C")
        info.out(buf, *args)  # a first call, so lazily made tables are not counted
        tracemalloc.start()
        try:
            got = info.out(buf, *args)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert got is buf, f"{name}: the out variant did not return the buffer it was given"
    return expected, got, peak


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,build", CASES, ids=IDS)
def test_out_variant_writes_the_kernels_bits_into_the_buffer(name, build, dtype) -> None:
    args = build(np.random.default_rng(7), dtype)
    expected, got, _ = _out_call(name, args)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert np.array_equal(_bits(got), _bits(expected)), f"{name}: bits differ from the kernel's"


@pytest.mark.parametrize("name,build", CASES, ids=IDS)
def test_out_variant_allocates_no_result_sized_temporary(name, build) -> None:
    args = build(np.random.default_rng(3), np.float32)
    expected, _, peak = _out_call(name, args)
    assert peak < expected.nbytes // 2, f"{name}: {peak} bytes allocated writing {expected.nbytes} bytes"


@pytest.mark.parametrize("name", UNARY + ["aten::clamp", "aten::max.other"])
def test_out_variant_is_exact_for_every_operand_layout(name) -> None:
    rng = np.random.default_rng(11)
    x, y = _f(rng, np.float32), _f(rng, np.float32)
    extra = {"aten::clamp": [-0.25, 0.75], "aten::max.other": [y]}.get(name, [])
    for view in _layouts(x):
        expected, got, _ = _out_call(name, [view, *extra])
        assert np.array_equal(_bits(got), _bits(expected)), f"{name}: bits differ for strides {view.strides}"


@pytest.mark.parametrize("name,build", CASES, ids=IDS)
def test_out_variant_with_an_unfitting_buffer_returns_a_fresh_result(name, build) -> None:
    args = build(np.random.default_rng(5), np.float32)
    info = lookup(name)
    with np.errstate(all="ignore"):
        expected = info.kernel(*args)
        wrong = np.zeros(expected.shape + (2,), expected.dtype)
        fresh = info.out(wrong, *args)
    assert fresh is not wrong and not wrong.any()
    assert np.array_equal(_bits(fresh), _bits(expected))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), min_size=1, max_size=40),
    st.sampled_from(["aten::relu", "aten::sigmoid", "aten::tanh", "aten::clamp"]),
)
def test_out_variant_matches_the_kernel_on_any_float32_values(values, name) -> None:
    x = np.array(values, np.float32)
    args = [x, -1.5, 2.0] if name == "aten::clamp" else [x]
    info = lookup(name)
    with np.errstate(all="ignore"):
        expected = info.kernel(*args)
        buf = np.empty_like(expected)
        got = info.out(buf, *args)
    assert got is buf and np.array_equal(_bits(got), _bits(expected))
