"""Activations, padding, upsampling and pixel shuffles against torch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches
from tests.support.nn import FEW, op, randn
from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional

scalars = st.floats(0.05, 3.0)

# name -> (our arguments after self, torch function of (tensor, *args))
ACTIVATIONS = {
    "hardtanh": (st.tuples(st.floats(-3, -0.1), st.floats(0.1, 3)), lambda t, lo, hi: F.hardtanh(t, lo, hi)),
    "relu6": (st.just(()), F.relu6),
    "leaky_relu": (st.tuples(scalars), F.leaky_relu),
    "elu": (st.tuples(scalars, scalars, scalars), lambda t, a, s, i: torch.ops.aten.elu(t, a, s, i)),
    "selu": (st.just(()), F.selu),
    "celu": (st.tuples(scalars), F.celu),
    "softplus": (st.tuples(scalars, st.floats(1, 20)), F.softplus),
    "hardswish": (st.just(()), F.hardswish),
    "hardsigmoid": (st.just(()), F.hardsigmoid),
    "mish": (st.just(()), F.mish),
    "threshold": (st.tuples(st.floats(-1, 1), st.floats(-2, 2)), F.threshold),
    "hardshrink": (st.tuples(scalars), F.hardshrink),
    "softshrink": (st.tuples(scalars), F.softshrink),
    "log_sigmoid": (st.just(()), F.logsigmoid),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@FEW
@given(data=st.data())
def test_activation_matches_torch(name, data):
    args_strategy, reference = ACTIVATIONS[name]
    args = tuple(data.draw(args_strategy))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = np.asarray(randn(rng, *data.draw(st.lists(st.integers(1, 5), min_size=0, max_size=3))) * 6)
    assert_matches(op(f"aten::{name}")(x, *args), reference(torch.from_numpy(x), *args), atol=1e-6)


@pytest.mark.parametrize("name", ["hardtanh", "relu6", "leaky_relu", "elu", "selu", "celu", "hardswish", "hardsigmoid", "mish", "threshold"])
def test_in_place_variant_writes_self_and_returns_it(name):
    args = {"threshold": (0.1, -1.0)}.get(name, ())
    x = np.linspace(-4, 4, 9, dtype=np.float32)
    want = op(f"aten::{name}")(x, *([*args] or [d for d in _defaults(name)]))
    y = x.copy()
    assert op(f"aten::{name}_")(y, *([*args] or _defaults(name))) is y
    assert_matches(y, want)
    buf = np.empty_like(x)
    assert lookup(f"aten::{name}").out(buf, x, *([*args] or _defaults(name))) is buf
    assert_matches(buf, want)


def _defaults(name: str) -> list:
    return [a.default for a in lookup(f"aten::{name}").schema.arguments[1:]]


def test_prelu_glu_and_rrelu_match_torch():
    rng = np.random.default_rng(0)
    x, w = randn(rng, 2, 3, 4), np.array([0.1, -0.2, 0.3], np.float32)
    assert_matches(op("aten::prelu")(x, w), F.prelu(torch.from_numpy(x), torch.from_numpy(w)))
    assert_matches(op("aten::prelu")(x, w[:1]), F.prelu(torch.from_numpy(x), torch.from_numpy(w[:1])))
    assert_matches(op("aten::glu")(x, 2), F.glu(torch.from_numpy(x), 2))
    assert_matches(op("aten::rrelu")(x, 0.1, 0.3, False, None), F.rrelu(torch.from_numpy(x), 0.1, 0.3, False))


@FEW
@given(st.data())
def test_pad_modes_match_torch(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    mode = data.draw(st.sampled_from(["constant", "reflect", "replicate", "circular"]))
    dims = data.draw(st.integers(1, 2))
    shape = [2, 3] + [data.draw(st.integers(2, 6)) for _ in range(dims)]
    x = randn(rng, *shape)
    pads = []
    for size in reversed(shape[2:]):
        lo = -(size - 1) if mode == "constant" else 0
        hi = size - 1 if mode == "reflect" else size
        pair = [data.draw(st.integers(lo, hi)), data.draw(st.integers(lo, hi))]
        assume(size + sum(pair) > 0)
        pads += pair
    value = data.draw(st.floats(-2, 2)) if mode == "constant" else None
    want = F.pad(torch.from_numpy(x), pads, mode, value)
    assert_matches(op("aten::pad")(x, pads, mode, value), want)
    if mode == "constant":
        assert_matches(op("aten::constant_pad_nd")(x, pads, value), want)
    elif mode != "circular":
        prefix = "reflection" if mode == "reflect" else "replication"
        assert_matches(op(f"aten::{prefix}_pad{dims}d")(x, pads), want)
    else:
        assert_matches(op("aten::_pad_circular")(x, pads), want)


@FEW
@given(st.data())
def test_upsampling_matches_torch(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x = randn(rng, 1, 2, data.draw(st.integers(2, 7)), data.draw(st.integers(2, 7)))
    t = torch.from_numpy(x)
    if data.draw(st.booleans(), "by size"):
        size, scale = [data.draw(st.integers(1, 15)) for _ in range(2)], None
    else:
        size, scale = None, [data.draw(st.sampled_from([0.5, 1.5, 2.0, 2.5, 3.0, 1.7])) for _ in range(2)]
    assert_matches(op("aten::upsample_nearest2d.vec")(x, size, scale), F.interpolate(t, size, scale, "nearest"))
    assert_matches(op("aten::_upsample_nearest_exact2d.vec")(x, size, scale), F.interpolate(t, size, scale, "nearest-exact"))
    corners = data.draw(st.booleans())
    assert_matches(op("aten::upsample_bilinear2d.vec")(x, size, corners, scale),
          F.interpolate(t, size, scale, "bilinear", align_corners=corners), atol=1e-5)


def test_explicit_size_overloads_match_torch():
    rng = np.random.default_rng(1)
    x = randn(rng, 1, 2, 5, 4)
    t = torch.from_numpy(x)
    assert_matches(op("aten::upsample_nearest2d")(x, [11, 7], None, None), torch.ops.aten.upsample_nearest2d(t, [11, 7]))
    assert_matches(op("aten::upsample_bilinear2d")(x, [9, 9], False, None, None), torch.ops.aten.upsample_bilinear2d(t, [9, 9], False))
    x1 = randn(rng, 2, 3, 5)
    assert_matches(op("aten::upsample_nearest1d")(x1, [12], None), torch.ops.aten.upsample_nearest1d(torch.from_numpy(x1), [12]))


def test_pixel_shuffle_round_trips_and_matches_torch():
    rng = np.random.default_rng(2)
    x = randn(rng, 2, 12, 4, 6)
    shuffled = op("aten::pixel_shuffle")(x, 2)
    assert_matches(shuffled, F.pixel_shuffle(torch.from_numpy(x), 2))
    assert_matches(op("aten::pixel_unshuffle")(shuffled, 2), x)
    assert_matches(op("aten::pixel_unshuffle")(x[..., :4], 2), F.pixel_unshuffle(torch.from_numpy(x[..., :4].copy()), 2))


def test_bad_pads_are_clear_errors():
    x = np.zeros((1, 2, 3), np.float32)
    with pytest.raises(ValueError, match="too large"):
        op("aten::pad")(x, [3, 0], "reflect", None)
    with pytest.raises(ValueError, match="unknown padding mode"):
        op("aten::pad")(x, [1, 1], "mirror", None)
