"""Comparisons with torch where torch's own answer depends on the CPU it runs on.

(Both GELUs, exact and tanh, are compared so: irvm gives the right limit at -inf for both.)

torch 2.13's exact float32 GELU gives different values at a few special points on different
CPUs (measured: ``gelu(+inf)`` is ``inf`` on one machine and ``nan`` on another, large negative
inputs and ``-0.0`` give ``+0.0`` on one and ``-0.0`` on the other, ``3e38`` stays ``3e38`` or
overflows to ``inf``).  irvm gives the mathematically right value there (docs/quantized.md,
"CPU-dependent answers"), and a test accepts any of torch's answers at those points while
holding irvm to the right one; everywhere else it is held to torch's value on this machine.
"""

from __future__ import annotations

import numpy as np

_FMAX = float(np.finfo(np.float32).max)


def gelu_limit(x: np.ndarray) -> np.ndarray:
    """GELU's value at the points where torch's kernels disagree: ``+inf`` at ``+inf``, a
    zero of x's sign where ``x * Phi(x)`` underflows (``-inf``, large negative x, ``-0.0``),
    and x itself where ``Phi(x)`` rounds to 1 (large positive x)."""
    return np.where(x > 0, x, np.where(x < 0, np.float32(-0.0), x)).astype(np.float32)


def assert_gelu_matches_torch(got: np.ndarray, want: np.ndarray, x: np.ndarray, ulps: float = 4.0) -> None:
    """``got`` (irvm's exact float32 GELU of ``x``) is torch's ``want`` within ``ulps`` float32
    ulps of x wherever torch's answer is finite and x is not near the float32 limit; at the
    points where torch's kernels disagree (a non-finite answer for a non-nan input, |x| > 1e38)
    it is the right value (``gelu_limit``); and a zero or tiny result has the sign of x (the
    sign of ``x * Phi(x)``), whichever zero torch gave."""
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(x)), "nan exactly where the input is nan"
    wide_x = x.astype(np.float64)
    real = ~np.isnan(x)
    disputed = real & (~np.isfinite(want) | (np.abs(wide_x) > 1e38))
    limit = gelu_limit(x)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf: equal
        diff = np.where(got[disputed] == limit[disputed], 0.0, np.abs(got[disputed].astype(np.float64) - limit[disputed]))
    far = ~(diff <= 2.0**-22 * np.abs(limit[disputed].astype(np.float64)))
    assert not far.any(), f"at {x[disputed][far][:8]}: {got[disputed][far][:8]}, the right values {limit[disputed][far][:8]}"
    ok = real & ~disputed
    scale = np.abs(wide_x[ok]) * 2.0**-23 + 1e-45
    err = np.abs(got[ok].astype(np.float64) - want[ok].astype(np.float64))
    assert (err <= ulps * scale).all(), f"{np.max(err / scale):.2f} ulps of x from torch's"
    small = real & (np.abs(got) < 1e-30)
    assert np.array_equal(np.signbit(got[small]), np.signbit(x[small])), "a zero or tiny result of x's sign"
