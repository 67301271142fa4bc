"""Every nn operator is registered with PyTorch's own schema: same name, overload,
argument names, types, defaults and returns, so graphs bind their inputs as PyTorch does."""

from __future__ import annotations

import pytest

from vm.ops import registry

torch = pytest.importorskip("torch")

NN_MODULES = ("vm.ops.nn.conv", "vm.ops.nn.pool", "vm.ops.nn.norm", "vm.ops.nn.activation",
              "vm.ops.nn.resize", "vm.ops.nn.upsample", "vm.ops.nn.embedding", "vm.ops.nn.rnn", "vm.ops.nn.attention")


def _nn_ops() -> list[registry.OpInfo]:
    ops = [o for o in registry.all_ops() if getattr(o.kernel, "__module__", "") in NN_MODULES]
    assert len(ops) > 80, "the nn kernel modules registered fewer operators than expected"
    return ops


@pytest.mark.parametrize("info", _nn_ops(), ids=lambda o: o.name)
def test_schema_is_pytorchs(info):
    torch_schemas = {}
    for s in torch._C._jit_get_schemas_for_operator(info.schema.name):
        parsed = registry.parse_schema(str(s))
        torch_schemas[parsed.qualified] = parsed
    assert info.name in torch_schemas, f"PyTorch has no overload {info.name}"
    assert info.schema == torch_schemas[info.name], f"\n ours:  {info.schema.text}\n torch: {torch_schemas[info.name].text}"


WITHOUT_OUT = {  # several results, or a result that may be the input itself (identity at inference)
    "aten::max_pool2d_with_indices", "aten::adaptive_max_pool2d", "aten::adaptive_max_pool1d",
    "aten::native_layer_norm", "aten::_native_batch_norm_legit_no_training", "aten::embedding_bag",
    "aten::embedding_bag.padding_idx", "aten::lstm_cell", "aten::lstm.input", "aten::gru.input",
    "aten::rnn_tanh.input", "aten::rnn_relu.input", "aten::_native_multi_head_attention",
    "aten::_nested_tensor_from_mask", "aten::to_padded_tensor",  # refused: no nested tensors
}


@pytest.mark.parametrize("info", _nn_ops(), ids=lambda o: o.name)
def test_fresh_single_result_ops_have_out_variants(info):
    """The static runtime plans memory only for ops with out variants."""
    returns_one_tensor = [r.type for r in info.schema.returns] == ["Tensor"]
    if info.name in WITHOUT_OUT or info.schema.mutates or not returns_one_tensor:
        assert info.out is None or not info.schema.mutates
        return
    assert info.out is not None, f"{info.name} returns a fresh tensor but has no out variant"


def test_out_variants_write_the_kernels_result_into_the_buffer():
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    cases = [
        ("aten::max_pool2d", (x, [2, 2], [], [1, 0], [1, 1], True)),
        ("aten::avg_pool2d", (x, [3, 2], [2, 1], [1, 1], False, False, None)),
        ("aten::adaptive_avg_pool2d", (x, [4, 3])),
        ("aten::pad", (x, [1, 2, 0, 1], "reflect", None)),
        ("aten::upsample_bilinear2d.vec", (x, None, False, [1.5, 2.0])),
        ("aten::pixel_shuffle", (x[:, :, :2, :2].repeat(4, axis=1), 2)),
        ("aten::conv_transpose2d.input", (x, rng.standard_normal((3, 2, 3, 3)).astype(np.float32), None, [2, 2], [1, 1], [0, 0], 1, [1, 1])),
        ("aten::instance_norm", (x, None, None, None, None, True, 0.1, 1e-5, True)),
    ]
    for name, args in cases:
        info = registry.lookup(name)
        want = info.kernel(*args)
        buf = np.full(want.shape, np.nan, want.dtype)
        assert info.out(buf, *args) is buf, name
        np.testing.assert_array_equal(buf, want, err_msg=name)


def test_conv_out_variant_writes_through_a_strided_buffer():
    import numpy as np

    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((1, 2, 5, 5)).astype(np.float32), rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    want = registry.lookup("aten::conv2d").kernel(x, w, None, [1, 1], [1, 1], [1, 1], 1)
    backing = np.zeros((1, 3, 5, 10), np.float32)
    view = backing[..., ::2]
    registry.lookup("aten::conv2d").out(view, x, w, None, [1, 1], [1, 1], [1, 1], 1)
    np.testing.assert_allclose(view, want, rtol=1e-6)


def test_fallback_ops_that_nn_modules_call_behave_as_at_inference():
    """vm/ops/nn/fallbacks.py (or the family that owns these ops) answers like torch in
    inference mode and chunks like torch.chunk."""
    import numpy as np

    def k(name):
        return registry.lookup(name).kernel

    assert k("aten::is_grad_enabled")() is False and k("aten::is_autocast_enabled")() is False
    x = np.arange(14.0).reshape(2, 7)
    assert k("prim::is_nested")(x) is False
    assert k("aten::is_floating_point")(x) is True and k("aten::is_floating_point")(x.astype(np.int64)) is False
    for chunks, dim in [(2, 1), (3, 1), (7, 1), (9, 1), (3, 0), (1, -1)]:
        got = k("aten::unsafe_chunk")(x, chunks, dim)
        want = torch.from_numpy(x).unsafe_chunk(chunks, dim)
        assert [g.shape for g in got] == [tuple(w.shape) for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w.numpy())
