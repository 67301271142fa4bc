"""A vectorized numpy ``erf`` / ``erfc``, accurate to a few ulp in float64, without scipy.

irvm depends on numpy only, and numpy has no erf ufunc; a per-element ``math.erf`` is
exact but slow.  This module evaluates W. J. Cody's rational Chebyshev approximations
("Rational Chebyshev approximations for the error function", Math. Comp. 1969; the
CALERF routine), whose coefficients are published facts, on whole arrays at once:

- ``|x| <= 0.46875``: ``erf(x) = x * P(x^2) / Q(x^2)`` (degree 4/4 in ``x^2``);
- ``0.46875 < |x| <= 4``: ``erfc(y) = exp(-y^2) * P(y) / Q(y)`` (degree 8/8);
- ``|x| > 4``: ``erfc(y) = exp(-y^2) / y * (1/sqrt(pi) + R(1/y^2) / y^2)``.

``exp(-y^2)`` is computed as ``exp(-s^2) * exp(-(y - s)(y + s))`` with ``s`` = ``y``
rounded down to a multiple of 1/16, so the squaring does not lose the low bits (Cody's
trick).  Each region is evaluated only on its own elements (boolean masks), so no
overflow warnings come from the other branches.  ``erf`` of the outer regions is ``1 -
erfc`` with the sign of ``x``; ``erfc`` of negative ``x`` is ``2 - erfc(-x)``.  Signed
zeros, infinities and nan come out as in C's ``erf``/``erfc``.  float32 (and float16)
inputs are computed in float64 and rounded once, so they are correctly rounded but for
rare ties.
"""

from __future__ import annotations

import numpy as np

_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)
_INV_SQRT_PI = 5.6418958354775628695e-1
_XBIG = 27.3  # erfc(x) rounds to 0 beyond this (below it the result may be subnormal)


def _erf_small(x: np.ndarray) -> np.ndarray:
    z = x * x
    num, den = _A[4] * z, z
    for i in range(3):
        num, den = (num + _A[i]) * z, (den + _B[i]) * z
    return x * (num + _A[3]) / (den + _B[3])


def _scaled_exp(y: np.ndarray) -> np.ndarray:
    s = np.trunc(y * 16.0) / 16.0
    return np.exp(-s * s) * np.exp(-(y - s) * (y + s))


def _erfc_mid(y: np.ndarray) -> np.ndarray:
    num, den = _C[8] * y, y
    for i in range(7):
        num, den = (num + _C[i]) * y, (den + _D[i]) * y
    return (num + _C[7]) / (den + _D[7]) * _scaled_exp(y)


def _erfc_large(y: np.ndarray) -> np.ndarray:
    z = 1.0 / (y * y)
    num, den = _P[5] * z, z
    for i in range(4):
        num, den = (num + _P[i]) * z, (den + _Q[i]) * z
    r = z * (num + _P[4]) / (den + _Q[4])
    return (_INV_SQRT_PI - r) / y * _scaled_exp(y)


def _erfc_positive(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 0.46875 (or nan), in float64."""
    out = np.zeros_like(y)
    mid = y <= 4.0
    out[mid] = _erfc_mid(y[mid])
    big = (y > 4.0) & (y < _XBIG)
    out[big] = _erfc_large(y[big])
    out[np.isnan(y)] = np.nan
    return out


def _as_f64(x: np.ndarray) -> tuple[np.ndarray, np.dtype]:
    x = np.asarray(x)
    dt = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    return x.astype(np.float64), dt


def erf(x: np.ndarray) -> np.ndarray:
    """erf of a floating array (ints as float32, PyTorch's default), in the input dtype."""
    v, dt = _as_f64(x)
    y = np.abs(v)
    out = np.empty_like(v)
    small = y <= 0.46875
    out[small] = _erf_small(v[small])
    rest = ~small
    out[rest] = np.copysign(1.0 - _erfc_positive(y[rest]), v[rest])
    return out.astype(dt)


def erfc(x: np.ndarray) -> np.ndarray:
    """erfc of a floating array (ints as float32), in the input dtype."""
    v, dt = _as_f64(x)
    y = np.abs(v)
    out = np.empty_like(v)
    small = y <= 0.46875
    out[small] = 1.0 - _erf_small(v[small])
    rest = ~small
    tail = _erfc_positive(y[rest])
    out[rest] = np.where(v[rest] < 0, 2.0 - tail, tail)
    return out.astype(dt)


def erfinv(x: np.ndarray) -> np.ndarray:
    """Inverse of erf: Winitzki's closed-form guess (relative error ~2e-3), then Newton.

    Newton solves ``erf(y) = x`` for ``|x| <= 0.5`` and ``erfc(y) = 1 - |x|`` beyond (that
    subtraction is exact there), so the tail near ±1 keeps its relative accuracy; four
    steps take the guess's 1e-3 to below float64 rounding.  ``erfinv(±1) = ±inf``,
    ``|x| > 1`` gives nan.
    """
    v, dt = _as_f64(x)
    a = np.abs(v)
    with np.errstate(all="ignore"):
        ln = np.log((1.0 - a) * (1.0 + a))
        k = 2.0 / (np.pi * 0.147) + ln / 2.0
        y = np.sqrt(np.sqrt(k * k - ln / 0.147) - k)
        inner = a <= 0.5
        for _ in range(4):
            resid = np.where(inner, erf(y) - a, (1.0 - a) - erfc(y))
            step = resid / (2.0 * _INV_SQRT_PI * np.exp(-y * y))
            y = np.where(np.isfinite(step), y - step, y)
    y = np.where(a == 1.0, np.inf, np.where(a > 1.0, np.nan, y))
    return np.copysign(y, v).astype(dt)
