"""A float32 ``erf`` (for the exact GELU and ``aten::erf``) computed in float32, block by block.

``vm/ops/_erf.py`` evaluates Cody's float64 approximations region by region through
boolean masks: right to the last bit, but a (1, 197, 3072) float32 tensor took 51 ms
there (casts to float64, gathers and scatters), against 0.4 ms for torch.  numpy has no
erf ufunc, but it has a fast float32 ``tanh`` (vectorized, about as fast as a multiply),
and ``erf`` is ``tanh`` of a smooth odd function, ``g(x) = atanh(erf(x))``.  So here

    erf(x) = tanh(c + c * q(c^2)),   c = clip(x, -4.5, 4.5),

with ``q`` a polynomial of degree 9 (``q(0) = 2/sqrt(pi) - 1``; adding ``c`` last keeps
the rounding error of ``q`` scaled down).  From 3.92 on, ``erf`` rounds to ±1 in float32,
and the fit keeps ``c + c q(c^2)`` above 9 there, where float32 ``tanh`` is ±1.  One clip,
20 Horner passes, two more and a ``tanh``, all in place on float32 buffers; no mask, no
exp, no float64.

The coefficients were fitted for this module: a least-squares fit on Chebyshev nodes,
iterated toward minimax (Lawson's method), weighted by how an error in ``q`` moves the
result in float32 ulps (``x (1 - erf(x)^2) / ulp(erf(x))``, at least 20 so the tail
keeps ``g`` to 1/20), on [0, 4.5], then rounded to float32.
Over a dense grid of float32 inputs the result is within 3 ulp of the true erf (2.8 at
worst, just below the binade boundary 1/16) and of torch's.  ``-0.0`` stays ``-0.0`` (``tanh(-0.0)``), nan stays nan
(``clip`` keeps it), ±inf give ±1.

``gelu_f32`` evaluates the exact GELU ``x/2 * (1 + erf(x/sqrt(2)))`` through its own,
shorter fit, ``erf(x/sqrt 2) = tanh(x G(x^2))`` with ``G`` of degree 6.  GELU needs less
than erf: its result is ``x`` times ``(1 + erf)/2``, and ``1 + erf`` is rounded to an ulp
of numbers in [0, 2], so an absolute error of erf below 6e-8 is within that rounding,
where erf alone must keep a few ulp of tiny results.  Fitted the same way (Lawson,
weighted by ``x (1 - erf^2)``, the error it makes in erf, on [0, 5]), ``G`` is within
5.8e-8 of erf everywhere, and within 1.2 float32 ulps of ``x`` of the true GELU over a
dense float32 grid (torch's own kernel: 3.2).  ``G`` is positive and ``x G(x^2)`` grows
without bound, so no clip is needed: large ``|x|`` saturate ``tanh`` (``inf`` included)
and nan flows through.  18 passes over each cache-resident block instead of 25.

The arrays go through in blocks of ``BLOCK`` elements so the passes stay in the L2 cache
(a whole (1, 197, 3072) tensor at once is 2.5x slower).
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
# g(c) / c - 1 = q(c^2), coefficients from degree 0 up
_Q = tuple(F32(c) for c in (
    0.128379225730896, 0.10277144610881805, -0.00020288465020712465, -0.0006022010347805917,
    7.510074647143483e-05, -1.177694798570883e-06, -7.003970381447289e-07, 8.15030887224566e-08,
    -3.733964692997915e-09, 6.271709540595083e-11,
))
_CLIP = F32(4.5)
# GELU's erf(x / sqrt 2) = tanh(x G(x^2)), coefficients from degree 0 up (G_0 = sqrt(2/pi))
_G = tuple(F32(c) for c in (
    0.7978849411010742, 0.03633308410644531, -3.259497680119239e-05, -5.530619455385022e-05,
    3.964744337281445e-06, -1.3226332384874695e-07, 1.756170320277306e-09,
))
_FMAX = F32(np.finfo(np.float32).max)
BLOCK = 1 << 16  # elements per block: the scratch arrays (256 KiB each) stay in the L2 cache


def _erf_block(x: np.ndarray, out: np.ndarray, c: np.ndarray, acc: np.ndarray) -> None:
    """erf of the 1-d float32 block ``x`` into ``out`` (not overlapping ``x``), with float32
    scratch arrays ``c`` and ``acc`` of the same length."""
    np.clip(x, -_CLIP, _CLIP, out=c)
    z = np.multiply(c, c, out=out)  # out holds c^2 until the final tanh
    np.multiply(z, _Q[-1], out=acc)
    for coef in _Q[-2:0:-1]:
        acc += coef
        acc *= z
    acc += _Q[0]
    acc *= c
    acc += c
    np.tanh(acc, out=out)


def erf_f32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """erf of a float array in float32 (``out``: a float32 array of x's shape, which may
    be ``x`` itself)."""
    src = np.ascontiguousarray(x, dtype=F32).reshape(-1)
    result = out if out is not None and out.flags.c_contiguous else np.empty(np.shape(x), F32)
    flat = result.reshape(-1)
    inplace = np.shares_memory(flat, src)
    n = src.size
    size = min(n, BLOCK)
    c, acc = np.empty(size, F32), np.empty(size, F32)
    spare = np.empty(size, F32) if inplace else None
    for lo in range(0, n, BLOCK):
        k = min(lo + BLOCK, n) - lo
        if spare is not None:  # compute beside the block, then write it over its input
            _erf_block(src[lo : lo + k], spare[:k], c[:k], acc[:k])
            flat[lo : lo + k] = spare[:k]
        else:
            _erf_block(src[lo : lo + k], flat[lo : lo + k], c[:k], acc[:k])
    if out is not None and result is not out:
        np.copyto(out, result)
        return out
    return result


def _gelu_block(x: np.ndarray, out: np.ndarray, z: np.ndarray, acc: np.ndarray) -> None:
    """Exact GELU of the 1-d float32 block ``x`` into ``out`` (which may be ``x``), with
    float32 scratch arrays ``z`` and ``acc`` of its length."""
    np.multiply(x, x, out=z)
    np.multiply(z, _G[-1], out=acc)
    for coef in _G[-2:0:-1]:
        acc += coef
        acc *= z
    acc += _G[0]
    acc *= x
    np.tanh(acc, out=acc)
    # x * Phi(x) with Phi = (1 + erf) / 2, the mathematically right value at the edges (torch's
    # own differs between its CPU kernels there, docs/quantized.md "CPU-dependent answers"):
    # +inf gives inf and -inf -0.0 (x clipped to the largest float so 0 * x stays a zero),
    # negative x give a negative result or -0.0, -0.0 stays -0.0, nan stays nan
    acc *= F32(0.5)
    acc += F32(0.5)
    np.maximum(x, -_FMAX, out=out)
    out *= acc


def gelu_f32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Exact GELU of a float32 array in float32 (``out``: a float32 array of x's shape,
    which may be ``x`` itself)."""
    src = np.ascontiguousarray(x, dtype=F32).reshape(-1)
    result = out if out is not None and out.flags.c_contiguous else np.empty(np.shape(x), F32)
    flat = result.reshape(-1)
    size = min(src.size, BLOCK)
    z, acc = np.empty(size, F32), np.empty(size, F32)
    for lo in range(0, src.size, BLOCK):
        k = min(lo + BLOCK, src.size) - lo
        _gelu_block(src[lo : lo + k], flat[lo : lo + k], z[:k], acc[:k])
    if out is not None and result is not out:
        np.copyto(out, result)
        return out
    return result
