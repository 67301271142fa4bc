"""Attention against torch: scaled_dot_product_attention (bool/float masks, causal, scale,
GQA, fully masked rows), baddbmm, and the fused eval kernels of nn.MultiheadAttention
and nn.TransformerEncoderLayer with their masks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches, to_numpy
from tests.support.nn import FEW, op

torch = pytest.importorskip("torch")
F, nn = torch.nn.functional, torch.nn


@FEW
@given(st.data())
def test_sdpa_matches_torch(data):
    torch.manual_seed(data.draw(st.integers(0, 2**16)))
    b, h, length, source = (data.draw(st.integers(1, 3)) for _ in range(4))
    e, ev = data.draw(st.integers(1, 8)), data.draw(st.integers(1, 8))
    q, k, v = torch.randn(b, h, length, e), torch.randn(b, h, source, e), torch.randn(b, h, source, ev)
    mask_kind = data.draw(st.sampled_from(["none", "bool", "float", "causal"]))
    mask, causal = None, False
    if mask_kind == "bool":
        mask = torch.rand(length, source) > 0.3  # may leave a row fully masked: zeros, like torch
    elif mask_kind == "float":
        mask = torch.randn(b, 1, length, source)
    elif mask_kind == "causal":
        causal = True
    scale = data.draw(st.one_of(st.none(), st.floats(0.1, 2.0)))
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)
    got = op("aten::scaled_dot_product_attention")(to_numpy(q), to_numpy(k), to_numpy(v), to_numpy(mask), 0.0, causal, scale, False)
    assert_matches(got, want, atol=1e-5)


def test_sdpa_grouped_query_attention():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 3, 8), torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 6)
    assert_matches(op("aten::scaled_dot_product_attention")(to_numpy(q), to_numpy(k), to_numpy(v), None, 0.0, False, None, True),
          F.scaled_dot_product_attention(q, k, v, enable_gqa=True), atol=1e-5)


def test_sdpa_dropout_drops_attention_weights_as_torch_does():
    """With dropout_p > 0, dropout applies to the attention weights (after the softmax),
    scaled by 1/(1-p): with identity values the output is those weights, so every entry
    is either 0 or torch's weight / (1-p), about a fraction p are 0, and p=1 gives zeros."""
    from vm.ops.random import using_generator

    torch.manual_seed(5)
    q, k = torch.randn(2, 3, 40, 8), torch.randn(2, 3, 40, 8)
    v = torch.eye(40).expand(2, 3, 40, 40).contiguous()
    weights = to_numpy(F.scaled_dot_product_attention(q, k, v))
    sdpa = op("aten::scaled_dot_product_attention")
    with using_generator(np.random.default_rng(0)):
        got = sdpa(to_numpy(q), to_numpy(k), to_numpy(v), None, 0.25, False, None, False)
        zeros = sdpa(to_numpy(q), to_numpy(k), to_numpy(v), None, 1.0, False, None, False)
    kept = got != 0
    np.testing.assert_allclose(got[kept], weights[kept] / 0.75, rtol=1e-5)
    assert 0.2 < 1 - kept.mean() < 0.3
    np.testing.assert_array_equal(zeros, np.zeros_like(zeros))
    np.testing.assert_array_equal(zeros, to_numpy(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)))


def test_baddbmm_matches_torch():
    torch.manual_seed(1)
    s, b1, b2 = torch.randn(3, 4, 5), torch.randn(3, 4, 6), torch.randn(3, 6, 5)
    assert_matches(op("aten::baddbmm")(to_numpy(s), to_numpy(b1), to_numpy(b2), 0.5, 2), torch.baddbmm(s, b1, b2, beta=0.5, alpha=2), atol=1e-5)


def _mha_params(m):
    return [to_numpy(m.in_proj_weight), to_numpy(m.in_proj_bias), to_numpy(m.out_proj.weight), to_numpy(m.out_proj.bias)]


@pytest.mark.parametrize("mask", ["none", "key_padding", "attn", "float_attn"])
@pytest.mark.parametrize("average", [True, False])
def test_native_multi_head_attention_matches_the_module(mask, average):
    torch.manual_seed(2)
    m = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16)
    kpm = torch.tensor([[False, False, True, False, True], [False, True, True, True, True]])
    am = torch.rand(5, 5) > 0.6
    am.fill_diagonal_(False)
    kwargs, ours = {}, (None, None)
    if mask == "key_padding":
        kwargs, ours = {"key_padding_mask": kpm}, (to_numpy(kpm), 1)
    elif mask == "attn":
        kwargs, ours = {"attn_mask": am}, (to_numpy(am), 0)
    elif mask == "float_attn":
        fm = torch.zeros(5, 5).masked_fill(am, float("-inf"))
        kwargs, ours = {"attn_mask": fm}, (to_numpy(fm), 0)
    with torch.no_grad():
        want = m(x, x, x, average_attn_weights=average, **kwargs)
    got = op("aten::_native_multi_head_attention")(to_numpy(x), to_numpy(x), to_numpy(x), 16, 4, *_mha_params(m), ours[0], True, average, ours[1])
    assert_matches(got, want, atol=1e-5)
    _, weights = op("aten::_native_multi_head_attention")(to_numpy(x), to_numpy(x), to_numpy(x), 16, 4, *_mha_params(m), None, False, True, None)
    assert weights.shape == (0,)


@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer_fwd_matches_the_module(norm_first, activation):
    torch.manual_seed(3)
    layer = nn.TransformerEncoderLayer(16, 4, 32, batch_first=True, norm_first=norm_first, activation=activation).eval()
    x = torch.randn(2, 5, 16)
    kpm = torch.tensor([[False, False, False, True, True], [False, False, False, False, False]])
    with torch.no_grad():
        want = layer(x, src_key_padding_mask=kpm)
    sa = layer.self_attn
    got = op("aten::_transformer_encoder_layer_fwd")(
        to_numpy(x), 16, 4, *_mha_params(sa), activation == "gelu", norm_first, 1e-5,
        to_numpy(layer.norm1.weight), to_numpy(layer.norm1.bias), to_numpy(layer.norm2.weight), to_numpy(layer.norm2.bias),
        to_numpy(layer.linear1.weight), to_numpy(layer.linear1.bias), to_numpy(layer.linear2.weight), to_numpy(layer.linear2.bias),
        to_numpy(kpm), 1,
    )
    assert_matches(got, want, atol=1e-5)


def test_nested_tensor_branch_checks_alignment_and_refuses_nesting():
    """TransformerEncoder's nested fast path: the alignment test is exact, nesting refused."""
    t = np.zeros((2, 3, 4), np.float32)
    for mask in ([[True, True, False], [True, False, False]], [[True, False, True], [True, True, True]]):
        m = np.array(mask)
        assert op("aten::_nested_tensor_from_mask_left_aligned")(t, m) == torch._nested_tensor_from_mask_left_aligned(
            torch.from_numpy(t), torch.from_numpy(m))
    with pytest.raises(NotImplementedError, match="enable_nested_tensor=False"):
        op("aten::_nested_tensor_from_mask")(t, np.ones((2, 3), bool), True)


@pytest.mark.parametrize("same", [True, False])
def test_native_multi_head_attention_self_and_cross(same):
    """Self-attention (one array for query, key and value: the projections are one gemm
    with the packed weight) and cross-attention (three arrays: three gemms with its thirds)
    both equal the module's result."""
    torch.manual_seed(3)
    m = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    q = torch.randn(1, 7, 16)
    kv = q if same else torch.randn(1, 9, 16)
    with torch.no_grad():
        want = m(q, kv, kv)
    qn = to_numpy(q)
    kn = qn if same else to_numpy(kv)
    vn = kn if same else to_numpy(kv).copy()
    got = op("aten::_native_multi_head_attention")(qn, kn, vn, 16, 4, *_mha_params(m), None, True, True, None)
    assert_matches(got, want, atol=1e-5)
