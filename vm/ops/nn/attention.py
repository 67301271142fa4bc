"""Attention: ``scaled_dot_product_attention`` and the fused inference
kernels that ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` reach in eval
mode (``_native_multi_head_attention``, ``_transformer_encoder_layer_fwd``).  (``baddbmm``,
which the scripted attention path also calls, lives with the linear algebra kernels.)

Everything is batched matmuls (``np.matmul`` broadcasts over batch and head axes) and one
softmax along the key axis.  The softmax is the "safe" one PyTorch uses for attention: a
query row whose keys are all masked gets zeros, not NaN.

Two mask conventions meet here, and they are opposite.  ``scaled_dot_product_attention``
takes a boolean mask where True means *may attend*, or a float mask that is *added* to
the scores.  The fused kernels take the module-level masks (``attn_mask``,
``key_padding_mask``), converted to bool where True (or any nonzero float) means *masked
out*; ``mask_type`` says how the mask lines up with the ``(B, heads, L, S)`` scores: 0 an
``(L, S)`` attention mask, 1 a ``(B, S)`` key padding mask, 2 a full mask.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops._softmax import safe_softmax
from vm.ops.linalg import flat_matmul
from vm.ops.nn._util import copying_out
from vm.ops.random import dropout_impl
from vm.ops.registry import DtypeRule, Fact, kernel, lookup

Array = np.ndarray


def _repeat_heads(t: Array, heads: int) -> Array:
    kv_heads = t.shape[-3]
    if heads % kv_heads:
        raise ValueError(f"enable_gqa: {heads} query heads are not a multiple of {kv_heads} key/value heads")
    return np.repeat(t, heads // kv_heads, axis=-3)


@kernel(
    "aten::scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
    "float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
    facts=Fact.RANDOM,
    draws_unless=(("dropout_p", 0.0),),
)
def scaled_dot_product_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    attn_mask: np.ndarray | None,
    dropout_p: float,
    is_causal: bool,
    scale: float | None,
    enable_gqa: bool,
) -> np.ndarray:
    if enable_gqa and q.ndim >= 3:
        k, v = _repeat_heads(k, q.shape[-3]), _repeat_heads(v, q.shape[-3])
    factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    scores *= q.dtype.type(factor)
    length, source = scores.shape[-2:]
    if is_causal:
        if attn_mask is not None:
            raise ValueError("scaled_dot_product_attention: an explicit attn_mask cannot be used with is_causal=True")
        attn_mask = np.tril(np.ones((length, source), bool))
    if attn_mask is not None:
        if attn_mask.dtype == np.bool_:
            scores = np.where(attn_mask, scores, -np.inf).astype(scores.dtype)
        else:
            scores = scores + attn_mask.astype(scores.dtype)
    weights = safe_softmax(scores, -1, scores if scores.flags.writeable else None)
    if dropout_p > 0:  # on the attention weights, as ATen's math kernel does (vm.ops.random's generator)
        weights = dropout_impl(weights, dropout_p, True, feature=False, alpha=False)
    return np.matmul(weights, v)


@scaled_dot_product_attention.out
def _scaled_dot_product_attention_out(out: np.ndarray, *args: Any) -> np.ndarray:
    """Into ``out`` when it fits the result; otherwise the fresh result (as the tensor
    operators' out variants do, so a planned buffer of another shape is never an error)."""
    result = scaled_dot_product_attention(*args)
    if out.shape != result.shape or out.dtype != result.dtype:
        return result
    np.copyto(out, result)
    return out


# ---------------------------------------------------------------------------------------
# Fused inference kernels of nn.MultiheadAttention and nn.TransformerEncoderLayer


def _linear(x: Array, w: Array, b: Array | None) -> Array:
    """``x @ w.T + b`` as one gemm on ``x`` seen as rows (``vm.ops.linalg.flat_matmul``,
    which takes the faster operand order for a few rows), the bias added in place (by the
    transposing copy of the few-rows order when it is a vector of the product's dtype)."""
    if b is not None and b.shape == (w.shape[0],) and b.dtype == x.dtype == w.dtype:
        return flat_matmul(x, w.T, bias=b)
    y = flat_matmul(x, w.T)
    if b is not None:
        np.add(y, b, out=y, casting="unsafe")
    return y


def _heads(x: Array, heads: int) -> Array:
    b, n, e = x.shape
    return x.reshape(b, n, heads, e // heads).transpose(0, 2, 1, 3)


def _masked_scores(scores: Array, mask: Array | None, mask_type: int | None) -> Array:
    if mask is None:
        return scores
    blocked = mask.astype(bool) if mask.dtype != np.bool_ else mask
    if mask_type == 1:  # (B, S) key padding
        blocked = blocked[:, None, None, :]
    elif blocked.ndim == 2:  # (L, S) attention mask
        blocked = blocked[None, None]
    elif blocked.ndim == 3:  # (B * heads or B, L, S)
        blocked = blocked.reshape(scores.shape[0], -1, *blocked.shape[-2:])
    return np.where(blocked, -np.inf, scores).astype(scores.dtype)


def multi_head_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    embed_dim: int,
    num_head: int,
    qkv_weight: np.ndarray,
    qkv_bias: np.ndarray | None,
    proj_weight: np.ndarray,
    proj_bias: np.ndarray | None,
    mask: np.ndarray | None,
    mask_type: int | None,
) -> tuple[Array, Array]:
    """Batch-first attention; returns (output (B, L, E), per-head weights (B, heads, L, S))."""
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = query[None], key[None], value[None]
    if query is key and key is value:  # self-attention: one gemm reads the packed weight once
        q, k, v = (_heads(t, num_head) for t in np.split(_linear(query, qkv_weight, qkv_bias), 3, axis=-1))
    else:
        wq, wk, wv = np.split(qkv_weight, 3, axis=0)
        bq, bk, bv = np.split(qkv_bias, 3) if qkv_bias is not None else (None, None, None)
        q = _heads(_linear(query, wq, bq), num_head)
        k = _heads(_linear(key, wk, bk), num_head)
        v = _heads(_linear(value, wv, bv), num_head)
    scale = q.dtype.type(1.0 / math.sqrt(embed_dim // num_head))
    scores = _masked_scores(np.matmul(q * scale, np.swapaxes(k, -1, -2)), mask, mask_type)
    weights = safe_softmax(scores)
    attended = np.matmul(weights, v).transpose(0, 2, 1, 3).reshape(query.shape[0], query.shape[1], embed_dim)
    out = _linear(attended, proj_weight, proj_bias)
    return (out[0], weights[0]) if unbatched else (out, weights)


@kernel(
    "aten::_native_multi_head_attention(Tensor query, Tensor key, Tensor value, int embed_dim, int num_head, "
    "Tensor qkv_weight, Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, Tensor? mask=None, "
    "bool need_weights=True, bool average_attn_weights=True, int? mask_type=None) -> (Tensor, Tensor)",
    dtypes=DtypeRule((0, 1, 2, 5, 6, 7, 8)),
)
def native_multi_head_attention(
    query: np.ndarray,
    key: np.ndarray,
    value: np.ndarray,
    embed_dim: int,
    num_head: int,
    qkv_weight: np.ndarray,
    qkv_bias: np.ndarray | None,
    proj_weight: np.ndarray,
    proj_bias: np.ndarray | None,
    mask: np.ndarray | None,
    need_weights: bool,
    average_attn_weights: bool,
    mask_type: int | None,
) -> tuple[np.ndarray, np.ndarray]:
    out, weights = multi_head_attention(
        query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias, mask, mask_type
    )
    if not need_weights:
        return out, np.empty((0,), out.dtype)
    return out, weights.mean(axis=-3) if average_attn_weights else weights


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    return lookup("aten::layer_norm").kernel(x, [x.shape[-1]], weight, bias, eps, True)


def _activation(x: Array, use_gelu: bool) -> Array:
    if use_gelu:
        return lookup("aten::gelu").kernel(x, "none")
    return np.maximum(x, 0)


@copying_out
@kernel(
    "aten::_transformer_encoder_layer_fwd(Tensor src, int embed_dim, int num_heads, Tensor qkv_weight, "
    "Tensor qkv_bias, Tensor proj_weight, Tensor proj_bias, bool use_gelu, bool norm_first, float eps, "
    "Tensor norm_weight_1, Tensor norm_bias_1, Tensor norm_weight_2, Tensor norm_bias_2, Tensor ffn_weight_1, "
    "Tensor ffn_bias_1, Tensor ffn_weight_2, Tensor ffn_bias_2, Tensor? mask=None, int? mask_type=None) -> Tensor",
    dtypes=DtypeRule((0, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, 16, 17)),
)
def transformer_encoder_layer_fwd(
    src: np.ndarray,
    embed_dim: int,
    num_heads: int,
    qkv_weight: np.ndarray,
    qkv_bias: np.ndarray | None,
    proj_weight: np.ndarray,
    proj_bias: np.ndarray | None,
    use_gelu: bool,
    norm_first: bool,
    eps: float,
    norm_weight_1: np.ndarray,
    norm_bias_1: np.ndarray,
    norm_weight_2: np.ndarray,
    norm_bias_2: np.ndarray,
    ffn_weight_1: np.ndarray,
    ffn_bias_1: np.ndarray,
    ffn_weight_2: np.ndarray,
    ffn_bias_2: np.ndarray,
    mask: np.ndarray | None,
    mask_type: int | None,
) -> np.ndarray:
    """One post-norm (or pre-norm with ``norm_first``) encoder layer: attention + feed-forward."""

    def attention(x: Array) -> Array:
        return multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                                    mask, mask_type)[0]

    def feed_forward(x: Array) -> Array:
        return _linear(_activation(_linear(x, ffn_weight_1, ffn_bias_1), use_gelu), ffn_weight_2, ffn_bias_2)

    x = src
    if norm_first:
        x = x + attention(_layer_norm(x, norm_weight_1, norm_bias_1, eps))
        return x + feed_forward(_layer_norm(x, norm_weight_2, norm_bias_2, eps))
    x = _layer_norm(x + attention(x), norm_weight_1, norm_bias_1, eps)
    return _layer_norm(x + feed_forward(x), norm_weight_2, norm_bias_2, eps)


# ---------------------------------------------------------------------------------------
# nn.TransformerEncoder's nested-tensor fast path.  A scripted encoder holds it in a branch
# taken only in eval with a key padding mask and ``enable_nested_tensor=True``; numpy has
# no nested tensors, so that branch is refused with the way around it.

_NESTED = (
    "nested tensors have no numpy equivalent; build nn.TransformerEncoder with "
    "enable_nested_tensor=False (its outputs are the same, padded positions included)"
)


@kernel("aten::_nested_tensor_from_mask_left_aligned(Tensor t, Tensor mask) -> bool")
def nested_tensor_from_mask_left_aligned(t: np.ndarray, mask: np.ndarray) -> bool:
    """Whether each row of ``mask`` (True = a real token) is Trues followed by Falses."""
    keep = mask.astype(bool)
    return bool(np.all(keep[..., :-1] >= keep[..., 1:]))


@kernel("aten::_nested_tensor_from_mask(Tensor t, Tensor mask, bool mask_check=True) -> Tensor")
def nested_tensor_from_mask(t: np.ndarray, mask: np.ndarray, mask_check: bool) -> np.ndarray:
    raise NotImplementedError(f"aten::_nested_tensor_from_mask: {_NESTED}")


@kernel("aten::to_padded_tensor(Tensor self, float padding, SymInt[]? output_size=None) -> Tensor")
def to_padded_tensor(x: np.ndarray, padding: float, output_size: Sequence[int] | None) -> np.ndarray:
    raise NotImplementedError(f"aten::to_padded_tensor: {_NESTED}")
