"""Activations in one pass: exact and tanh GELU, SiLU, hardswish (float32).

numba compiles ``math.exp`` or ``math.tanh`` to a call into libm per element, which LLVM
does not vectorize without Intel's SVML: a numba GELU built on them ran 1.6-6x slower than
numpy's own SIMD loops.  So the one transcendental these kernels need, ``exp``, is written
here in a form LLVM vectorizes: Cody and Waite's range reduction ``x = k ln2 + r`` with
``|r| <= ln2/2`` (``ln2`` split in two so ``k ln2`` is exact), Cephes' degree-7 polynomial
for ``e^r`` (within 1-2 float32 ulp), and ``2^k`` built from its bits (an LLVM bitcast, see
``_bits_as_f32``).  Every step is a multiply, add, floor or select, so the loop runs eight
lanes at a time on AVX2.

Everything else is a rewrite into ``exp`` without cancellation:
- SiLU ``x / (1 + e^-x)``: PyTorch's formula (sigmoid stays numpy's: the fusion groups
  spell it with numpy's exp, and the interpreter and the static runtime must agree bit for bit);
- GELU ``x/2 (1 + erf(x/sqrt 2))`` as ``(x/2) * 2 / (1 + e^(-2u))`` with
  ``erf(x/sqrt 2) = tanh(u)``, ``u = x G(x^2)`` (``vm.ops._erf32``'s fit, within 6e-8 of
  erf), because ``1 + tanh(u) = 2 / (1 + e^(-2u))``: the left tail keeps its relative
  accuracy, which ``1 + tanh`` loses;
- tanh GELU likewise, with ``u = sqrt(2/pi) (x + 0.044715 x^3)``;
- hardswish ``x * min(max(x + 3, 0), 6) / 6``, PyTorch's order.
The GELUs give the mathematically right values at the edges (docs/quantized.md,
"CPU-dependent answers"): ``x`` is clipped to the largest float as the factor of ``Phi``, so
``-inf`` gives ``-0.0``, ``+inf`` gives ``inf`` and ``-0.0`` stays ``-0.0``; nan flows through
every select (comparisons with nan are false).

In place (``out`` is ``x``) the loops would alias their input and output, and LLVM keeps such
a loop scalar (its runtime overlap check fails): 4-40x slower measured.  So an in-place call
runs block by block into a scratch block of ``_BLOCK`` elements, which stays in the L1/L2
cache, and copies each block back: the vector loop, plus one cached copy.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

F = np.float32
_OPTS = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False, "fastmath": {"contract"}}

_LOG2E = F(1.4426950408889634)
_LN2_HI = F(0.693359375)  # ln 2 = _LN2_HI + _LN2_LO, the first exact in 9 bits: k * _LN2_HI is exact
_LN2_LO = F(-2.12194440e-4)
_HI = F(88.72283)  # above: e^x overflows float32
_LO = F(-87.0)  # below: 0 (the reduction's 2^k would leave the normal range)
_INF = F(np.inf)
_E = tuple(F(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                          1.6666665459e-1, 5.0000001201e-1))
_G = tuple(F(c) for c in (
    0.7978849411010742, 0.03633308410644531, -3.259497680119239e-05, -5.530619455385022e-05,
    3.964744337281445e-06, -1.3226332384874695e-07, 1.756170320277306e-09,
))
_G0, _G1, _G2, _G3, _G4, _G5, _G6 = _G
_E0, _E1, _E2, _E3, _E4, _E5 = _E
_ONE, _TWO, _HALF, _ZERO = F(1), F(2), F(0.5), F(0)
_THREE, _SIX = F(3), F(6)
_NEG_MAX = F(-np.finfo(np.float32).max)
_SQRT_2_PI = F(math.sqrt(2.0 / math.pi))
_KAPPA = F(0.044715)


def _ro(ndim: int) -> types.Array:
    """A C-contiguous float32 array the kernel only reads (a read-only one is accepted too)."""
    return types.Array(types.float32, ndim, "C", readonly=True)


def _rw(ndim: int) -> types.Array:
    return types.Array(types.float32, ndim, "C")


@intrinsic
def _bits_as_f32(typingctx, bits):
    """The float32 whose bit pattern is the int32 ``bits`` (free: one LLVM bitcast)."""
    if bits != types.int32:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@njit("float32(float32)", inline="always", **_OPTS)
def exp32(x):
    """e^x in float32, vectorizable; below -87 gives 0 (e^-87 = 1.6e-38: subnormals are
    flushed), above 88.72 inf."""
    over = x > _HI
    c = _LO if x < _LO else (_HI if over else x)
    k = np.floor(c * _LOG2E + _HALF)
    k = k if k == k else _ZERO  # nan: any k (p is nan), but one whose int conversion is defined
    r = (c - k * _LN2_HI) - k * _LN2_LO
    p = ((((_E0 * r + _E1) * r + _E2) * r + _E3) * r + _E4) * r + _E5
    p = p * (r * r) + r + _ONE
    # 2^k as 2^(k-1) * 2: k reaches 128 just below _HI, past the largest float32 exponent
    bits = np.int32((np.int32(k) + np.int32(126)) << np.int32(23))
    scale = _bits_as_f32(bits)  # pyright: ignore[reportCallIssue]  (numba passes the typing context itself)
    e = p * scale * _TWO
    return _INF if over else (_ZERO if x < _LO else e)


@njit(types.void(_ro(1), _rw(1)), **_OPTS)
def silu(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = v / (_ONE + exp32(-v))


@njit(types.void(_ro(1), _rw(1)), **_OPTS)
def gelu(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        z = v * v
        u = v * ((((((_G6 * z + _G5) * z + _G4) * z + _G3) * z + _G2) * z + _G1) * z + _G0)
        # x clipped to the largest float (nan kept): -inf gives -0.0 rather than -inf * 0, the
        # mathematically right value, as vm.ops._erf32.gelu_f32 gives it
        c = _NEG_MAX if v < _NEG_MAX else v
        out[i] = (c * _HALF) * (_TWO / (_ONE + exp32(-_TWO * u)))


@njit(types.void(_ro(1), _rw(1)), **_OPTS)
def gelu_tanh(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        u = _SQRT_2_PI * (v + _KAPPA * (v * v * v))
        c = _NEG_MAX if v < _NEG_MAX else v  # -inf: -0.0, as exact GELU
        out[i] = (c * _HALF) * (_TWO / (_ONE + exp32(-_TWO * u)))


@njit(types.void(_ro(1), _rw(1)), **_OPTS)
def hardswish(x, out):
    for i in range(x.shape[0]):
        v = x[i]
        g = v + _THREE
        g = _ZERO if g < _ZERO else g
        g = _SIX if g > _SIX else g
        out[i] = v * g / _SIX


KERNELS = {"silu": silu, "gelu": gelu, "gelu_tanh": gelu_tanh, "hardswish": hardswish}


_BLOCK = 1 << 14  # elements per in-place block: 64 KiB of scratch
_scratch = threading.local()


def apply(name: str, x: np.ndarray, out: np.ndarray) -> bool:
    """Run kernel ``name`` from ``x`` into ``out`` if both are float32, C-contiguous, of one
    shape, and apart or the same memory; False (nothing written) otherwise."""
    if x.dtype != F or out.dtype != F or x.shape != out.shape or not x.size:
        return False
    if not (x.flags.c_contiguous and out.flags.c_contiguous):
        return False
    same = out is x or out.ctypes.data == x.ctypes.data
    if not same and np.shares_memory(x, out):
        return False
    run = KERNELS[name]
    src, dst = x.reshape(-1), out.reshape(-1)
    if not same or src.size <= 16:
        run(src, dst)
        return True
    block = getattr(_scratch, "block", None)
    if block is None:
        block = _scratch.block = np.empty(_BLOCK, F)
    for lo in range(0, src.size, _BLOCK):
        part = src[lo : lo + _BLOCK]
        tmp = block[: part.size]
        run(part, tmp)
        dst[lo : lo + _BLOCK] = tmp
    return True
