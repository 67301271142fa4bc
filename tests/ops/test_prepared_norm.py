"""Prepared forms of ``batch_norm`` and ``layer_norm`` (``vm.ops.prepared_norm``) against
their kernels, and in the static runtime against torch.

Property: for any constants (training on or off, weights or None, per-channel arrays of
the input's channel count or not) and any input (float32, float64, int, any rank, NaN and
inf included), the prepared callable and its out variant give the kernel's bits, dtype
and shape, or raise the kernel's own error.  The running statistics are read once, at
construction; the arrays a preparer sees are the node's constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vm.ops  # noqa: F401  (fills the registry)
from tests.support.paths import TOOLS
from vm.ops import registry
from vm.ops.prepared import UNKNOWN, prepared

dtypes = st.sampled_from([np.float32, np.float64, np.int32])


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        r = fn(*args)
    except Exception as err:  # noqa: BLE001  (the error is the outcome compared)
        return ("raises", type(err), str(err))
    return ("array", r.shape, r.dtype, r.tobytes())


def _array(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, special: bool) -> np.ndarray:
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    if special and x.size and x.dtype.kind == "f":
        x.reshape(-1)[rng.integers(x.size)] = rng.choice([np.nan, np.inf, -np.inf])
    return x


def _held_to_kernel(name: str, args: tuple[Any, ...], x: np.ndarray) -> bool:
    """Assert ``name``'s prepared forms (when made) equal its kernel on ``x``; True when made."""
    ref = registry.OpRef(name, 1 + len(args), 1)
    kernel, out_variant = registry.bind(ref), registry.bind_out(ref)
    forms = prepared(ref, [UNKNOWN, *args], kernel, out_variant)
    if forms is None:
        return False
    expected = _outcome(kernel, x, *args)
    assert _outcome(forms.kernel, x, *args) == expected
    assert _outcome(forms.kernel, x, *args) == expected  # again: the memoized decisions answer
    if expected[0] == "array":
        buf, want = np.full(expected[1], 7, expected[2]), np.full(expected[1], 7, expected[2])
        assert forms.out is not None
        got_out, want_out = _outcome(forms.out, buf, x, *args), _outcome(out_variant, want, x, *args)
        assert got_out == want_out and buf.tobytes() == want.tobytes()
    return True


@given(
    st.integers(0, 2**16), st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple), dtypes,
    st.integers(1, 4), st.booleans(), st.booleans(), st.booleans(), st.sampled_from([1e-5, 1e-3, 0.5]), st.booleans(),
)
def test_batch_norm_is_the_kernel(seed, shape, dtype, channels, training, affine, weight_f64, eps, special) -> None:
    """Any batch_norm: the prepared form gives the kernel's bits (eval) or declines (training)."""
    rng = np.random.default_rng(seed)
    x = _array(rng, shape, dtype, special)
    wdt = np.float64 if weight_f64 else np.float32
    w, b = (rng.standard_normal(channels).astype(wdt), rng.standard_normal(channels).astype(wdt)) if affine else (None, None)
    mean, var = rng.standard_normal(channels).astype(wdt), (np.abs(rng.standard_normal(channels)) + 0.1).astype(wdt)
    made = _held_to_kernel("aten::batch_norm", (w, b, mean.copy(), var.copy(), training, 0.1, eps, True), x)
    assert made == (not training)


def test_batch_norm_prepared_form_runs_two_passes_into_the_planned_buffer() -> None:
    """The out form writes the given buffer and returns it; the constants it derived stay
    read-only, so no caller can change them behind the node's back."""
    rng = np.random.default_rng(0)
    c = 6
    args = (None, None, rng.standard_normal(c).astype(np.float32), np.ones(c, np.float32), False, 0.1, 1e-5, True)
    ref = registry.OpRef("aten::batch_norm", 9, 1)
    forms = prepared(ref, [UNKNOWN, *args], registry.bind(ref), registry.bind_out(ref))
    assert forms is not None and forms.out is not None
    x = rng.standard_normal((2, c, 3, 3)).astype(np.float32)
    buf = np.empty_like(x)
    assert forms.out(buf, x, *args) is buf
    np.testing.assert_array_equal(buf, registry.bind(ref)(x, *args))


@given(
    st.integers(0, 2**16), st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple), dtypes,
    st.integers(1, 3), st.booleans(), st.booleans(), st.booleans(), st.booleans(), st.booleans(),
)
def test_layer_norm_is_the_kernel(seed, shape, dtype, k, weighted, biased, wrong_shape, offset, special) -> None:
    """Any layer_norm: the prepared form gives the kernel's bits, or its error when
    ``normalized_shape`` does not end the input's shape."""
    rng = np.random.default_rng(seed)
    x = _array(rng, shape, dtype, special) + (1000 if offset else 0)
    norm = list(shape[max(0, len(shape) - k) :])
    if wrong_shape:
        norm[-1] += 1
    w = rng.standard_normal(norm).astype(x.dtype if x.dtype.kind == "f" else np.float32) if weighted else None
    b = rng.standard_normal(norm).astype(x.dtype if x.dtype.kind == "f" else np.float32) if biased else None
    assert _held_to_kernel("aten::layer_norm", (norm, w, b, 1e-5, True), x)


def test_static_runtime_binds_the_prepared_batch_norm_and_matches_torch() -> None:
    """A BatchNorm after a ``cat`` (densenet's: nothing to fold into) and a LayerNorm after
    it run prepared in the static runtime, with weights bound, and match torch in eval mode."""
    torch = pytest.importorskip("torch")
    import sys

    sys.path.insert(0, str(TOOLS))
    import export_torch

    from compiler import parse
    from vm import StaticRuntime

    class Dense(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 5, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.ln = torch.nn.LayerNorm(6)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.ln(torch.relu(self.bn(torch.cat([x, self.conv(x)], 1))))

    torch.manual_seed(0)
    model = Dense()
    model.ln.weight.data.uniform_(0.5, 1.5)
    model.bn.running_mean.uniform_(-1, 1)
    model.bn.running_var.uniform_(0.5, 2)
    model.bn.weight.data.uniform_(0.5, 1.5)
    model.bn.bias.data.uniform_(-1, 1)
    model.eval()
    x = torch.randn(2, 3, 6, 6)
    exp = export_torch.export(model, "dense", (x,))
    runtime = StaticRuntime(parse(exp.ir), exp.weights)
    for name in ("aten::batch_norm", "aten::layer_norm"):
        nodes = [pn for pn in runtime.module.processed_nodes if pn.ref is not None and pn.ref.name == name]
        assert nodes and all(pn.kernel is not registry.bind(pn.ref) for pn in nodes), name  # bound in a prepared form
    with torch.no_grad():
        want = model(x).numpy()
    for _ in range(2):  # the first run plans, the second runs the plan (the out form)
        np.testing.assert_allclose(runtime(x.numpy()), want, rtol=1e-5, atol=1e-5)
