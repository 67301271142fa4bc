"""Embeddings against torch: embedding (+ out variant), embedding_bag in every mode with
offsets, 2-d input, include_last_offset, per_sample_weights, padding_idx and empty bags;
one_hot."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches
from tests.support.nn import FEW, op, randn
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional


def test_embedding_gathers_rows_and_fills_out_buffers():
    rng = np.random.default_rng(0)
    w = randn(rng, 10, 4)
    idx = np.array([[1, 9], [0, 1]])
    want = F.embedding(torch.from_numpy(idx), torch.from_numpy(w), padding_idx=1)
    assert_matches(op("aten::embedding")(w, idx, 1, False, False), want)
    buf = np.empty((2, 2, 4), np.float32)
    assert lookup("aten::embedding").out(buf, w, idx, -1, False, False) is buf
    assert_matches(buf, want)
    with pytest.raises(IndexError, match="out of range"):
        op("aten::embedding")(w, np.array([10]), -1, False, False)


@FEW
@given(st.data())
def test_embedding_bag_output_matches_torch(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    rows = data.draw(st.integers(1, 8))
    w = randn(rng, rows, 3)
    n = data.draw(st.integers(1, 12))
    idx = rng.integers(0, rows, n)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), min_size=0, max_size=4)))
    offsets = np.array([0] + cuts, np.int64)  # repeated cuts make empty bags
    mode = data.draw(st.sampled_from([0, 1, 2]))
    padding_idx = data.draw(st.one_of(st.none(), st.integers(0, rows - 1)))
    psw = randn(rng, n) if mode == 0 and data.draw(st.booleans()) else None
    last = data.draw(st.booleans())
    if last:
        offsets = np.append(offsets, n)
    t = torch.from_numpy
    want = torch.ops.aten.embedding_bag.padding_idx(
        t(w), t(idx), t(offsets), False, mode, False, None if psw is None else t(psw), last, padding_idx)
    got = op("aten::embedding_bag.padding_idx")(w, idx, offsets, False, mode, False, psw, last, padding_idx)
    assert_matches(got[0], want[0], atol=1e-5)
    if padding_idx is None:
        assert_matches(op("aten::embedding_bag")(w, idx, offsets, False, mode, False, psw, last)[0], want[0], atol=1e-5)


def test_embedding_bag_two_dimensional_input_is_fixed_size_bags():
    rng = np.random.default_rng(1)
    w, idx = randn(rng, 6, 4), rng.integers(0, 6, (3, 4))
    want = F.embedding_bag(torch.from_numpy(idx), torch.from_numpy(w), mode="mean")
    assert_matches(op("aten::embedding_bag")(w, idx, np.zeros(0, np.int64), False, 1, False, None, False)[0], want)


def test_one_hot_matches_torch():
    idx = np.array([[0, 3], [2, 1]])
    assert_matches(op("aten::one_hot")(idx, -1), F.one_hot(torch.from_numpy(idx)))
    assert_matches(op("aten::one_hot")(idx, 6), F.one_hot(torch.from_numpy(idx), 6))
    with pytest.raises(ValueError, match="num_classes"):
        op("aten::one_hot")(idx, 3)
