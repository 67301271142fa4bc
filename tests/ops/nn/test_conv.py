"""Convolutions against torch: conv1d/2d/3d (stride, padding incl. 'same'/'valid',
dilation, groups, depthwise), _convolution as traced graphs call it, and transposed
convolutions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches, to_torch
from tests.support.nn import FEW, op, randn

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _conv_case(data, dims: int):
    n = data.draw(st.integers(1, 2), "n")
    groups = data.draw(st.integers(1, 3), "groups")
    cin, cout = groups * data.draw(st.integers(1, 3)), groups * data.draw(st.integers(1, 3))
    kernel = [data.draw(st.integers(1, 4)) for _ in range(dims)]
    size = [data.draw(st.integers(1, 9)) for _ in range(dims)]
    stride = [data.draw(st.integers(1, 3)) for _ in range(dims)]
    padding = [data.draw(st.integers(0, 2)) for _ in range(dims)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(dims)]
    for s, k, p, d in zip(size, kernel, padding, dilation):
        assume(s + 2 * p >= d * (k - 1) + 1)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = randn(rng, n, cin, *size)
    w = randn(rng, cout, cin // groups, *kernel)
    b = randn(rng, cout) if data.draw(st.booleans(), "bias") else None
    return x, w, b, stride, padding, dilation, groups


@FEW
@given(st.data())
def test_conv2d_matches_torch(data):
    x, w, b, stride, padding, dilation, groups = _conv_case(data, 2)
    got = op("aten::conv2d")(x, w, b, stride, padding, dilation, groups)
    assert_matches(got, F.conv2d(to_torch(x), to_torch(w), to_torch(b), stride, padding, dilation, groups))


@FEW
@given(st.data())
def test_conv1d_and_conv3d_match_torch(data):
    dims = data.draw(st.sampled_from([1, 3]))
    x, w, b, stride, padding, dilation, groups = _conv_case(data, dims)
    fn = F.conv1d if dims == 1 else F.conv3d
    got = op(f"aten::conv{dims}d")(x, w, b, stride, padding, dilation, groups)
    assert_matches(got, fn(to_torch(x), to_torch(w), to_torch(b), stride, padding, dilation, groups))


@FEW
@given(st.data())
def test_conv2d_string_padding_matches_torch(data):
    x, w, b, _, _, dilation, groups = _conv_case(data, 2)
    mode = data.draw(st.sampled_from(["same", "valid"]))
    if mode == "valid":
        assume(all(s >= d * (k - 1) + 1 for s, k, d in zip(x.shape[2:], w.shape[2:], dilation)))
    got = op("aten::conv2d.padding")(x, w, b, [1, 1], mode, dilation, groups)
    assert_matches(got, F.conv2d(to_torch(x), to_torch(w), to_torch(b), 1, mode, dilation, groups))


@pytest.mark.parametrize("multiplier", [1, 2])
def test_depthwise_conv2d_matches_torch(multiplier):
    rng = np.random.default_rng(0)
    x, w, b = randn(rng, 2, 6, 11, 9), randn(rng, 6 * multiplier, 1, 3, 3), randn(rng, 6 * multiplier)
    got = op("aten::conv2d")(x, w, b, [2, 1], [1, 1], [1, 2], 6)
    assert_matches(got, F.conv2d(to_torch(x), to_torch(w), to_torch(b), (2, 1), 1, (1, 2), 6))


def test_unbatched_conv2d_and_out_variant():
    """A (C, H, W) input gives (O, H', W'); the out variant fills the given buffer."""
    rng = np.random.default_rng(1)
    x, w = randn(rng, 3, 8, 8), randn(rng, 4, 3, 3, 3)
    want = F.conv2d(to_torch(x), to_torch(w), None, 1, 1)
    assert_matches(op("aten::conv2d")(x, w, None, [1, 1], [1, 1], [1, 1], 1), want)
    from vm.ops.registry import lookup

    buf = np.empty((4, 8, 8), np.float32)
    assert lookup("aten::conv2d").out(buf, x, w, None, [1, 1], [1, 1], [1, 1], 1) is buf
    assert_matches(buf, want)
    with pytest.raises(ValueError, match="out buffer"):
        lookup("aten::conv2d").out(np.empty((4, 7, 8), np.float32), x, w, None, [1, 1], [1, 1], [1, 1], 1)


def test_same_padding_with_even_kernel_pads_right():
    rng = np.random.default_rng(2)
    x, w = randn(rng, 1, 2, 7, 6), randn(rng, 3, 2, 4, 2)
    assert_matches(op("aten::conv2d.padding")(x, w, None, [1, 1], "same", [2, 1], 1), F.conv2d(to_torch(x), to_torch(w), None, 1, "same", (2, 1)))
    with pytest.raises(ValueError, match="strided"):
        op("aten::conv2d.padding")(x, w, None, [2, 2], "same", [1, 1], 1)


@FEW
@given(st.data())
def test_conv_transpose2d_matches_torch(data):
    groups = data.draw(st.integers(1, 2))
    cin, cout_g = groups * data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    kernel = [data.draw(st.integers(1, 4)) for _ in range(2)]
    stride = [data.draw(st.integers(1, 3)) for _ in range(2)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(2)]
    padding = [data.draw(st.integers(0, 2)) for _ in range(2)]
    output_padding = [data.draw(st.integers(0, max(s, d) - 1)) for s, d in zip(stride, dilation)]
    size = [data.draw(st.integers(1, 6)) for _ in range(2)]
    for i, s, k, p, d, op_ in zip(size, stride, kernel, padding, dilation, output_padding):
        assume((i - 1) * s - 2 * p + d * (k - 1) + op_ + 1 > 0)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x, w, b = randn(rng, 2, cin, *size), randn(rng, cin, cout_g, *kernel), randn(rng, cout_g * groups)
    got = op("aten::conv_transpose2d.input")(x, w, b, stride, padding, output_padding, groups, dilation)
    want = F.conv_transpose2d(to_torch(x), to_torch(w), to_torch(b), stride, padding, output_padding, groups, dilation)
    assert_matches(got, want)


def test_underscore_convolution_dispatches_forward_and_transposed():
    """Traced graphs call aten::_convolution for every ConvNd, transposed or not."""
    rng = np.random.default_rng(3)
    x, w, b = randn(rng, 1, 4, 6, 6), randn(rng, 4, 2, 3, 3), randn(rng, 4)
    flags = [False, False, True, True]
    fwd = op("aten::_convolution")(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 2, *flags)
    assert_matches(fwd, F.conv2d(to_torch(x), to_torch(w), to_torch(b), 1, 1, 1, 2))
    tr = op("aten::_convolution")(x, w, b[:2], [2, 2], [1, 1], [1, 1], True, [1, 1], 1, *flags)
    assert_matches(tr, F.conv_transpose2d(to_torch(x), to_torch(w), to_torch(b[:2]), 2, 1, 1, 1, 1))
    x1, w1 = randn(rng, 2, 3, 10), randn(rng, 5, 3, 3)
    assert_matches(op("aten::convolution")(x1, w1, None, [2], [1], [1], False, [0], 1), F.conv1d(to_torch(x1), to_torch(w1), None, 2, 1))
    wt = randn(rng, 3, 2, 3)
    assert_matches(op("aten::conv_transpose1d")(x1, wt, None, [2], [0], [1], 1, [1]), F.conv_transpose1d(to_torch(x1), to_torch(wt), None, 2, 0, 1))


def test_bad_channel_count_is_a_clear_error():
    rng = np.random.default_rng(4)
    with pytest.raises(ValueError, match="groups=1 does not fit an input of 5 channels"):
        op("aten::conv2d")(randn(rng, 1, 5, 4, 4), randn(rng, 2, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], 1)


@pytest.mark.parametrize("mode", ["same", "valid"])
def test_convolution_mode_is_what_traced_string_padding_records(mode):
    rng = np.random.default_rng(5)
    x, w, b = randn(rng, 2, 6, 11), randn(rng, 6, 2, 4), randn(rng, 6)
    want = torch.ops.aten._convolution_mode(to_torch(x), to_torch(w), to_torch(b), [1], mode, [2], 3)
    assert_matches(op("aten::_convolution_mode")(x, w, b, [1], mode, [2], 3), want)


@FEW
@given(st.data())
def test_depthwise_and_pointwise_paths_match_torch(data):
    """Property: depthwise convolution on planes small (channels-last columns) and large
    (flattened planes at stride 1, channel blocks tap by tap at stride 2), and 1x1
    convolution (the input multiplied directly, grouped or not), equal torch's to float32
    rounding, including through the out variant."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n, c = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 8))
    h, w_ = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 40))
    if data.draw(st.booleans(), "pointwise"):
        groups = data.draw(st.sampled_from([g for g in (1, 2, c) if c % g == 0]))
        x, wt = randn(rng, n, c, h, w_), randn(rng, 2 * c, c // groups, 1, 1)
        stride, padding, dilation = [1, 1], [0, 0], [1, 1]
    else:
        k = data.draw(st.integers(1, 5))
        stride, dilation = [data.draw(st.integers(1, 2))] * 2, [data.draw(st.integers(1, 2))] * 2
        padding = [data.draw(st.integers(0, 2))] * 2
        assume(min(h, w_) + 2 * padding[0] >= dilation[0] * (k - 1) + 1)
        x, wt, groups = randn(rng, n, c, h, w_), randn(rng, c, 1, k, k), c
    b = randn(rng, wt.shape[0])
    want = F.conv2d(to_torch(x), to_torch(wt), to_torch(b), stride, padding, dilation, groups)
    assert_matches(op("aten::conv2d")(x, wt, b, stride, padding, dilation, groups), want)
    buf = np.empty(tuple(want.shape), np.float32)
    from vm.ops.registry import lookup

    got = lookup("aten::conv2d").out(buf, x, wt, b, stride, padding, dilation, groups)
    assert got is buf
    assert_matches(buf, want)


@FEW
@given(st.data())
def test_depthwise_routes_match_torch_in_every_dimension(data):
    """Property: depthwise convolution (one input channel per group) in 1, 2 and 3
    dimensions, with stride, padding and dilation drawn per axis and planes from below to
    above the channels-last threshold (16 outputs per row), equals torch's."""
    dims = data.draw(st.integers(1, 3), "dims")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    c = data.draw(st.integers(1, 6), "channels")
    size = [data.draw(st.integers(1, 40 if dims < 3 else 20)) for _ in range(dims)]
    kernel = [data.draw(st.integers(1, 7)) for _ in range(dims)]
    stride = [data.draw(st.integers(1, 2)) for _ in range(dims)]
    padding = [data.draw(st.integers(0, 3)) for _ in range(dims)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(dims)]
    for s_, k, p, d in zip(size, kernel, padding, dilation):
        assume(s_ + 2 * p >= d * (k - 1) + 1)
    x, w = randn(rng, data.draw(st.integers(1, 2), "n"), c, *size), randn(rng, c, 1, *kernel)
    b = randn(rng, c) if data.draw(st.booleans(), "bias") else None
    fn = (F.conv1d, F.conv2d, F.conv3d)[dims - 1]
    got = op(f"aten::conv{dims}d")(x, w, b, stride, padding, dilation, c)
    assert_matches(got, fn(to_torch(x), to_torch(w), to_torch(b), stride, padding, dilation, c))


@FEW
@given(st.data())
def test_depthwise_with_many_channels_matches_torch(data):
    """Property: depthwise convolution with 64 or more channels (the channels-last einsum
    route) in 1, 2 and 3 dimensions, any kernel, stride, padding and dilation, float32 or
    float64, with or without bias and through the out variant, equals torch's."""
    dims = data.draw(st.integers(1, 3), "dims")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    c = data.draw(st.integers(64, 80), "channels")
    size = [data.draw(st.integers(1, 20 if dims < 3 else 6)) for _ in range(dims)]
    kernel = [data.draw(st.integers(1, 7 if dims < 3 else 3)) for _ in range(dims)]
    stride = [data.draw(st.integers(1, 2)) for _ in range(dims)]
    padding = [data.draw(st.integers(0, 3)) for _ in range(dims)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(dims)]
    for s_, k, p, d in zip(size, kernel, padding, dilation):
        assume(s_ + 2 * p >= d * (k - 1) + 1)
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), "dtype")
    x, w = randn(rng, data.draw(st.integers(1, 2), "n"), c, *size).astype(dtype), randn(rng, c, 1, *kernel).astype(dtype)
    b = randn(rng, c).astype(dtype) if data.draw(st.booleans(), "bias") else None
    fn = (F.conv1d, F.conv2d, F.conv3d)[dims - 1]
    want = fn(to_torch(x), to_torch(w), to_torch(b), stride, padding, dilation, c)
    got = op(f"aten::conv{dims}d")(x, w, b, stride, padding, dilation, c)
    assert got.dtype == dtype
    assert_matches(got, want, rtol=None, atol=None)
    buf = np.empty(tuple(want.shape), dtype)
    from vm.ops.registry import lookup

    assert lookup(f"aten::conv{dims}d").out(buf, x, w, b, stride, padding, dilation, c) is buf
    assert_matches(buf, want, rtol=None, atol=None)


@FEW
@given(st.data())
def test_im2col_scratch_reuse_matches_torch(data):
    """Property: the regular (im2col) convolution reuses per-thread scratch buffers across
    calls, so calls of one shape with different data, a strided or non-contiguous input
    (a channels-last permutation, a slice), float32 or float64, with or without bias, and
    through the out variant (C-contiguous or not) each equal torch's, on outputs narrow
    (columns gathered through an index) and wide (columns copied from a strided view), a
    batch of small planes as one GEMM; the padded buffer's zero border is never written by
    a call."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n, groups = data.draw(st.integers(1, 3), "n"), data.draw(st.integers(1, 2), "groups")
    cin, cout = groups * data.draw(st.integers(1, 4)), groups * data.draw(st.integers(1, 4))
    k = data.draw(st.integers(1, 3), "k")
    size = data.draw(st.integers(k, 20), "size")
    stride, padding = [data.draw(st.integers(1, 2))] * 2, [data.draw(st.integers(0, 2))] * 2
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), "dtype")
    layout = data.draw(st.sampled_from(["contiguous", "channels_last", "slice"]), "layout")
    w = randn(rng, cout, cin // groups, k, k).astype(dtype)
    b = randn(rng, cout).astype(dtype) if data.draw(st.booleans(), "bias") else None
    from vm.ops.registry import lookup

    for _ in range(2):  # the second call finds the first one's scratch buffers
        if layout == "channels_last":
            x = np.ascontiguousarray(randn(rng, n, size, size, cin).astype(dtype)).transpose(0, 3, 1, 2)
        elif layout == "slice":
            x = randn(rng, n, cin, size, 2 * size).astype(dtype)[..., ::2]
        else:
            x = randn(rng, n, cin, size, size).astype(dtype)
        want = F.conv2d(torch.from_numpy(np.ascontiguousarray(x)), to_torch(w), to_torch(b), stride, padding, 1, groups)
        got = op("aten::conv2d")(x, w, b, stride, padding, [1, 1], groups)
        assert_matches(got, want, rtol=None, atol=None)
        buf = np.empty(tuple(want.shape), dtype)
        view = np.empty(tuple(want.shape)[::-1], dtype).T if data.draw(st.booleans(), "strided out") else buf
        assert lookup("aten::conv2d").out(view, x, w, b, stride, padding, [1, 1], groups) is view
        assert_matches(np.ascontiguousarray(view), want, rtol=None, atol=None)


def test_im2col_scratch_is_per_thread():
    """Two threads convolving different data of one shape at once each get their own
    result: the scratch buffers (padded input, columns) belong to the calling thread."""
    import threading

    rng = np.random.default_rng(7)
    w, b = randn(rng, 8, 4, 3, 3), randn(rng, 8)
    xs = [randn(rng, 1, 4, 12, 12) for _ in range(2)]
    wants = [F.conv2d(to_torch(x), to_torch(w), to_torch(b), 1, 1).numpy() for x in xs]
    conv = op("aten::conv2d")
    errors: list[str] = []

    def work(i: int) -> None:
        for _ in range(200):
            got = conv(xs[i], w, b, [1, 1], [1, 1], [1, 1], 1)
            if not np.allclose(got, wants[i], rtol=1e-4, atol=1e-5):
                errors.append(f"thread {i}")
                return

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_padded_scratch_is_not_shared_across_paddings():
    """A 3x3 input padded by 1 and a 1x1 input padded by 2 both make a 5x5 padded plane;
    the first writes where the second's zero border is, so each padding has its own
    buffer (and an unpadded non-contiguous input its own dense copy)."""
    rng = np.random.default_rng(8)
    w = randn(rng, 2, 1, 1, 1)
    conv = op("aten::conv2d")
    small, big = randn(rng, 1, 1, 1, 1), randn(rng, 1, 1, 3, 3)
    strided = randn(rng, 1, 1, 5, 10)[..., ::2]
    for x, pad in ((big, 1), (small, 2), (strided, 0), (small, 2)):
        want = F.conv2d(torch.from_numpy(np.ascontiguousarray(x)), to_torch(w), None, 1, pad)
        assert_matches(conv(x, w, None, [1, 1], [pad, pad], [1, 1], 1), want)


def test_scratch_is_bounded_and_evicted_buffers_come_back_zeroed(monkeypatch):
    """The per-thread scratch keeps at most _SCRATCH_BYTES (the least recently used buffer
    goes first); a padded buffer made again after eviction has a zero border again, so
    convolutions cycling through more shapes than fit stay right."""
    from vm.ops.nn import im2col

    monkeypatch.setattr(im2col, "_SCRATCH_BYTES", 20_000)
    rng = np.random.default_rng(9)
    conv = op("aten::conv2d")
    for _ in range(2):
        for size in (6, 9, 12, 15):
            x, w = randn(rng, 1, 4, size, size), randn(rng, 3, 4, 3, 3)
            want = F.conv2d(to_torch(x), to_torch(w), None, 1, 1)
            assert_matches(conv(x, w, None, [1, 1], [1, 1], [1, 1], 1), want)
            scratch = im2col._scratch
            assert scratch.nbytes == sum(b.nbytes for b in scratch.buffers.values())
            assert scratch.nbytes <= 20_000 or len(scratch.buffers) == 1


@pytest.mark.parametrize("transposed", [False, True])
def test_traced_convolution_out_variants_write_into_the_buffer(transposed):
    """The out variants of aten::_convolution, _convolution.deprecated and convolution
    (what traced graphs call) fill the given buffer, the forward convolution computing
    straight into it, the transposed one copying; _convolution_mode's too; a buffer of the
    wrong shape is an error naming both shapes."""
    from vm.ops.registry import lookup

    rng = np.random.default_rng(10)
    x, w, b = randn(rng, 2, 4, 6, 6), randn(rng, 4, 2, 3, 3), randn(rng, 4)
    if transposed:
        want = F.conv_transpose2d(to_torch(x), to_torch(w), to_torch(b[:2]), 2, 1, 1, 1, 1)
        args = (x, w, b[:2], [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
    else:
        want = F.conv2d(to_torch(x), to_torch(w), to_torch(b), 1, 1, 1, 2)
        args = (x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 2)
    flags = (False, False, True, True)
    for name, extra in (("aten::_convolution", flags), ("aten::_convolution.deprecated", flags[:3]), ("aten::convolution", ())):
        buf = np.empty(tuple(want.shape), np.float32)
        assert lookup(name).out(buf, *args, *extra) is buf
        assert_matches(buf, want)
        with pytest.raises(ValueError, match="out buffer"):
            lookup(name).out(np.empty((1, 1), np.float32), *args, *extra)
    if not transposed:
        want = F.conv2d(to_torch(x), to_torch(w), to_torch(b), 1, "same", 1, 2)
        buf = np.empty(tuple(want.shape), np.float32)
        assert lookup("aten::_convolution_mode").out(buf, x, w, b, [1, 1], "same", [1, 1], 2) is buf
        assert_matches(buf, want)


@FEW
@given(st.data())
def test_bias_folded_into_the_gemm_matches_torch(data):
    """Property: where the output is big against the weight (few input channels, a big
    plane) the bias is added by the GEMM itself (an augmented weight column against a row
    of ones under the columns, the pointwise input copied above that row); for every kernel
    size, stride, padding, batch, dtype and input layout the result equals torch's, also
    after calls of the same shape without a bias, which use the plain columns."""
    from vm.ops.nn import im2col
    from vm.ops.registry import lookup

    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n, cin = data.draw(st.integers(1, 3), "n"), data.draw(st.integers(1, 4), "cin")
    cout = data.draw(st.integers(cin, 9), "cout")
    k = data.draw(st.sampled_from([1, 2, 3]), "k")
    size = data.draw(st.integers(20, 26), "size")  # outputs 9 wide or more: no gather, no batch-inner GEMM
    stride = [data.draw(st.integers(1, 2))] * 2
    padding = [0, 0] if k == 1 else [data.draw(st.integers(0, 1))] * 2
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), "dtype")
    layout = data.draw(st.sampled_from(["contiguous", "channels_last", "slice"]), "layout")
    w = randn(rng, cout, cin, k, k).astype(dtype)
    b = randn(rng, cout).astype(dtype)
    if layout == "channels_last":
        x = np.ascontiguousarray(randn(rng, n, size, size, cin).astype(dtype)).transpose(0, 3, 1, 2)
    elif layout == "slice":
        x = randn(rng, n, cin, size, 2 * size).astype(dtype)[..., ::2]
    else:
        x = randn(rng, n, cin, size, size).astype(dtype)
    plan = im2col._plan(x.shape, w.shape, tuple(stride), tuple(padding), (1, 1), 1)
    assert plan.augmented  # what this test is about
    tx = torch.from_numpy(np.ascontiguousarray(x))
    for bias in (b, None, b):
        want = F.conv2d(tx, to_torch(w), to_torch(bias), stride, padding)
        assert_matches(op("aten::conv2d")(x, w, bias, stride, padding, [1, 1], 1), want, rtol=None, atol=None)
        buf = np.empty(tuple(want.shape), dtype)
        assert lookup("aten::conv2d").out(buf, x, w, bias, stride, padding, [1, 1], 1) is buf
        assert_matches(buf, want, rtol=None, atol=None)


def test_bias_of_the_wrong_size_is_a_clear_error():
    """A bias must hold one value per output channel, as torch requires: a single value is
    not broadcast (the GEMM that adds it would otherwise do so silently)."""
    rng = np.random.default_rng(10)
    with pytest.raises(ValueError, match="expected bias to be 1-dimensional with 4 elements, but got bias of size"):
        op("aten::conv2d")(randn(rng, 1, 2, 8, 8), randn(rng, 4, 2, 3, 3), randn(rng, 1), [1, 1], [1, 1], [1, 1], 1)


@FEW
@given(st.data())
def test_channels_last_weight_matches_torch(data):
    """Property: a weight laid out channels-last (same shape and values; what torch's
    channels_last memory format or a load-time layout gives) takes the columns built with
    the channel axis innermost where that pays (16+ channels, or a weight bigger than the
    input) and the NCHW columns elsewhere; for every kernel, stride, padding, dilation,
    batch, dtype and input layout the result (and the out variant's) equals torch's."""
    from vm.ops.nn import im2col
    from vm.ops.registry import lookup

    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    n, cin, cout = data.draw(st.integers(1, 2), "n"), data.draw(st.sampled_from([3, 64]), "cin"), data.draw(st.integers(1, 6))
    kh, kw = data.draw(st.integers(1, 3), "kh"), data.draw(st.integers(2, 3), "kw")
    size = data.draw(st.integers(3, 10), "size")
    stride = [data.draw(st.sampled_from([1, 1, 2])) for _ in range(2)]
    padding = [data.draw(st.integers(0, 2)) for _ in range(2)]
    dilation = [data.draw(st.integers(1, 2)) for _ in range(2)]
    assume(size + 2 * min(padding) >= 2 * (max(kh, kw) - 1) + 1)
    dtype = data.draw(st.sampled_from([np.float32, np.float64]), "dtype")
    w = im2col.channels_last(randn(rng, cout, cin, kh, kw).astype(dtype))
    assert im2col.is_channels_last(w) and not w.flags.c_contiguous
    b = randn(rng, cout).astype(dtype) if data.draw(st.booleans(), "bias") else None
    x = randn(rng, n, cin, size, size).astype(dtype)
    if data.draw(st.booleans(), "channels-last input"):
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    taken: list[bool] = []
    real = im2col._conv_nhwc
    try:
        im2col._conv_nhwc = lambda *a: (taken.append(True), real(*a))[1]
        for _ in range(2):  # the second call reuses the scratch buffers
            want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), to_torch(b), stride, padding, dilation)
            got = op("aten::conv2d")(x, w, b, stride, padding, dilation, 1)
            assert_matches(got, want, rtol=None, atol=None)
            buf = np.empty(tuple(want.shape), dtype)
            assert lookup("aten::conv2d").out(buf, x, w, b, stride, padding, dilation, 1) is buf
            assert_matches(buf, want, rtol=None, atol=None)
    finally:
        im2col._conv_nhwc = real
    assert len(taken) == (4 if im2col.nhwc_pays(x.shape, w.shape) else 0)


@pytest.mark.parametrize(
    ("shape", "kernel", "padding", "dilation", "dtype", "bias"),
    [
        ((1, 64, 8, 8), (3, 3), (1, 1), (1, 1), np.float32, True),
        ((1, 96, 4, 4), (3, 2), (1, 0), (1, 1), np.float64, False),
        ((1, 64, 7, 5), (2, 3), (2, 1), (2, 1), np.float32, True),
        ((3, 16, 12, 9), (3, 3), (1, 1), (1, 2), np.float32, True),
        ((64, 2, 2), (3, 3), (1, 1), (1, 1), np.float32, True),  # unbatched
    ],
)
def test_channels_last_columns_route_matches_torch(shape, kernel, padding, dilation, dtype, bias):
    """Many channels and a channels-last weight go through the channels-innermost columns
    (checked), and equal torch's convolution, padding and dilation per axis, a batch and
    an unbatched input included."""
    from vm.ops.nn import im2col

    rng = np.random.default_rng(11)
    cin = shape[-3]
    x = randn(rng, *shape).astype(dtype)
    w = im2col.channels_last(randn(rng, 5, cin, *kernel).astype(dtype))
    b = randn(rng, 5).astype(dtype) if bias else None
    calls: list[int] = []
    real = im2col._conv_nhwc
    try:
        im2col._conv_nhwc = lambda *a: (calls.append(1), real(*a))[1]
        got = op("aten::conv2d")(x, w, b, [1, 1], list(padding), list(dilation), 1)
    finally:
        im2col._conv_nhwc = real
    assert calls == [1]
    assert_matches(got, F.conv2d(to_torch(x), torch.from_numpy(w), to_torch(b), 1, padding, dilation))
