"""Normalisation and dropout against torch: batch_norm (eval, and training with the
running-stat update), layer_norm / native_layer_norm, group_norm, instance_norm
(dropout: tests/ops/test_random.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches, to_torch
from tests.support.nn import FEW, op, randn
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _case(data, min_rank=2):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    rank = data.draw(st.integers(min_rank, 4))
    shape = [data.draw(st.integers(1, 5)) for _ in range(rank)]
    return rng, shape


@FEW
@given(st.data())
def test_batch_norm_eval_and_training_match_torch(data):
    rng, shape = _case(data)
    training = data.draw(st.booleans())
    if training:
        shape[0] = max(shape[0], 2)
    c = shape[1]
    x = randn(rng, *shape) * 3 + 1
    w, b = randn(rng, c), randn(rng, c)
    affine = data.draw(st.booleans())
    rm, rv = randn(rng, c), np.abs(randn(rng, c)) + 0.5
    trm, trv = to_torch(rm.copy()), to_torch(rv.copy())
    want = F.batch_norm(to_torch(x), trm, trv, to_torch(w) if affine else None, to_torch(b) if affine else None, training, 0.2, 1e-3)
    got = op("aten::batch_norm")(x, w if affine else None, b if affine else None, rm, rv, training, 0.2, 1e-3, True)
    assert_matches(got, want, atol=1e-4)
    assert_matches(rm, trm, atol=1e-6)  # running stats: updated in training, untouched in eval
    assert_matches(rv, trv, atol=1e-5)


@FEW
@given(st.data())
def test_layer_norm_matches_torch(data):
    rng, shape = _case(data, 1)
    k = data.draw(st.integers(1, len(shape)))
    norm_shape = shape[len(shape) - k :]
    x = randn(rng, *shape) * 2 + 0.5
    w, b = (randn(rng, *norm_shape), randn(rng, *norm_shape)) if data.draw(st.booleans()) else (None, None)
    want = F.layer_norm(to_torch(x), norm_shape, to_torch(w), to_torch(b))
    assert_matches(op("aten::layer_norm")(x, norm_shape, w, b, 1e-5, True), want, atol=1e-4)
    buf = np.empty_like(x)  # the out variant writes the planned buffer directly
    assert lookup("aten::layer_norm").out(buf, x, norm_shape, w, b, 1e-5, True) is buf
    assert_matches(buf, want, atol=1e-4)
    assert_matches(op("aten::native_layer_norm")(x, norm_shape, w, b, 1e-5), torch.native_layer_norm(to_torch(x), norm_shape, to_torch(w), to_torch(b), 1e-5), atol=1e-4)


@FEW
@given(st.data())
def test_layer_norm_rows_match_torch_at_model_sizes(data):
    """Property: layer_norm over rows of model sizes (up to 768, and 70000 on the float64
    path) equals torch's, for float32 and float64, inputs permuted channels-last (ConvNeXt),
    a mean far from zero (the variance is taken around the mean, not as E[x^2] - mean^2),
    and a row holding NaN or inf (that row is NaN, the others unharmed); the out variant
    writes its buffer."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    row = data.draw(st.sampled_from([1, 3, 64, 96, 768, 70000]))
    lead = [data.draw(st.integers(1, 4)) for _ in range(data.draw(st.integers(0, 2)))]
    offset = data.draw(st.sampled_from([0.0, 1000.0]))
    x = (rng.standard_normal((*lead, row)) + offset).astype(dtype)
    if lead and data.draw(st.booleans(), "channels-last view"):
        x = np.ascontiguousarray(np.moveaxis(x, -1, 0)).transpose(*range(1, x.ndim), 0)
    special = data.draw(st.sampled_from([None, np.nan, np.inf]))
    if special is not None:
        x.reshape(-1)[data.draw(st.integers(0, x.size - 1))] = special
    w = rng.standard_normal(row).astype(dtype) if data.draw(st.booleans()) else None
    b = rng.standard_normal(row).astype(dtype) if data.draw(st.booleans()) else None
    want = F.layer_norm(to_torch(x), [row], to_torch(w), to_torch(b)).numpy()
    got = op("aten::layer_norm")(x, [row], w, b, 1e-5, True)
    # at 1000 a float32 input is only known to 6e-5 (its spacing), so torch itself is off the
    # exact result by ~2e-4 there: the bound is a few spacings of the input over its std (1)
    tol = (1e-4 if offset == 0 else 5e-4) if dtype == np.float32 else 1e-9
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)
    buf = np.empty(x.shape, dtype)
    assert lookup("aten::layer_norm").out(buf, x, [row], w, b, 1e-5, True) is buf
    np.testing.assert_allclose(buf, want, rtol=tol, atol=tol, equal_nan=True)


@FEW
@given(st.data())
def test_rms_norm_matches_torch(data):
    """aten::rms_norm over any trailing shape, with and without weight, with a given eps
    or the dtype's machine epsilon (None), in float32 and float64."""
    rng, shape = _case(data, 1)
    k = data.draw(st.integers(1, len(shape)))
    norm_shape = shape[len(shape) - k :]
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    x = (randn(rng, *shape) * 2 + 0.5).astype(dtype)
    w = randn(rng, *norm_shape).astype(dtype) if data.draw(st.booleans()) else None
    eps = data.draw(st.sampled_from([None, 1e-6, 0.1]))
    want = torch.rms_norm(to_torch(x), norm_shape, to_torch(w), eps)
    got = op("aten::rms_norm")(x, norm_shape, w, eps)
    assert got.dtype == want.numpy().dtype
    assert_matches(got, want, atol=1e-4)


def test_rms_norm_refuses_a_shape_that_does_not_end_the_input():
    with pytest.raises(ValueError, match="does not end the input shape"):
        op("aten::rms_norm")(np.ones((2, 3), np.float32), [2], None, None)


@FEW
@given(st.data())
def test_group_and_instance_norm_match_torch(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    groups = data.draw(st.integers(1, 3))
    n, c = data.draw(st.integers(1, 3)), groups * data.draw(st.integers(1, 3))
    spatial = [data.draw(st.integers(2, 5)) for _ in range(data.draw(st.integers(1, 2)))]
    x = randn(rng, n, c, *spatial)
    w, b = randn(rng, c), randn(rng, c)
    assert_matches(op("aten::group_norm")(x, groups, w, b, 1e-5, True), F.group_norm(to_torch(x), groups, to_torch(w), to_torch(b)), atol=1e-4)
    assert_matches(op("aten::instance_norm")(x, w, b, None, None, True, 0.1, 1e-5, True), F.instance_norm(to_torch(x), None, None, to_torch(w), to_torch(b)), atol=1e-4)
    rm, rv = randn(rng, c), np.abs(randn(rng, c)) + 0.5
    assert_matches(op("aten::instance_norm")(x, w, b, rm, rv, False, 0.1, 1e-5, True),
          F.instance_norm(to_torch(x), to_torch(rm), to_torch(rv), to_torch(w), to_torch(b), use_input_stats=False), atol=1e-4)


def test_instance_norm_with_input_stats_updates_running_buffers_like_torch():
    rng = np.random.default_rng(0)
    x = randn(rng, 3, 2, 4, 4)
    rm, rv = np.zeros(2, np.float32), np.ones(2, np.float32)
    trm, trv = to_torch(rm.copy()), to_torch(rv.copy())
    F.instance_norm(to_torch(x), trm, trv, use_input_stats=True, momentum=0.3)
    op("aten::instance_norm")(x, None, None, rm, rv, True, 0.3, 1e-5, True)
    assert_matches(rm, trm, atol=1e-6)
    assert_matches(rv, trv, atol=1e-5)


def test_layer_norm_shape_mismatch_is_a_clear_error():
    with pytest.raises(ValueError, match="normalized_shape"):
        op("aten::layer_norm")(np.zeros((2, 3), np.float32), [4], None, None, 1e-5, True)
