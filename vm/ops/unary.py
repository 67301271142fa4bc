"""Unary pointwise kernels: math functions, rounding, sign, and the common activations.

Three kinds, by what PyTorch does with the dtype:

- *floating* ops (exp, log, sqrt, sin, sigmoid, erf...) compute in the input's dtype when
  it is floating and in the default dtype (float32) for int and bool inputs;
- *dtype-keeping* ops (abs, neg, floor, round, sign, relu...) return the input's dtype;
  on integers the rounding family is the identity (a copy), and PyTorch's refusals on
  bool inputs are kept (``-`` on a bool tensor is an error, as is ``abs``);
- the activations that are plain pointwise math: relu, sigmoid, tanh, silu, gelu (with
  ``approximate``); the other ``torch.nn`` activations live in ``nn/activation.py``.

Each op is one small function from an ndarray to an ndarray; ``_register`` adds the
``foo`` kernel with its out variant, and the ``foo_`` in-place form that PyTorch has for
nearly all of them.  The out variant of the float ufuncs (exp, tanh...), sigmoid and relu
writes straight into the buffer through ``out=`` when the buffer has the input's shape and
dtype and the input is floating (``_writing_out``): the same ufuncs on the same operands,
so the same bits as the kernel, with no temporary; otherwise (integer inputs, a buffer
planned for other shapes) it computes and copies (``_common.copy_out``).  Functions run under
``np.errstate(all="ignore")``: log(0) is -inf and sqrt(-1) nan, silently, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from vm.ops import _erf as _cody
from vm.ops import compiled
from vm.ops._common import BLOCK as _BLOCK
from vm.ops._common import copy_out, flat_blocks, write_inplace
from vm.ops._dtypes import BOOL, DEFAULT_FLOAT, FLOAT_CAT, INT64, category, wrap
from vm.ops._erf32 import erf_f32, gelu_f32
from vm.ops.registry import Fact, FastCall, declare, kernel

Fn = Callable[[np.ndarray], Any]
_BARE = {"abs", "neg", "negative", "floor", "ceil", "trunc", "round", "frac", "sign", "sgn", "square",
         "bitwise_not", "logical_not", "relu", "erf", "erfc", "tanh", "atan", "asinh"}


def _floating(x: np.ndarray) -> np.ndarray:
    return x if category(x.dtype) >= FLOAT_CAT else x.astype(DEFAULT_FLOAT)


Write = Callable[..., Any]  # write(x, buf, *args): fn(x, *args) computed into buf


def _register(
    name: str, fn: Callable[..., Any], extra: str = "", inplace: bool = True, write: Write | None = None,
    facts: Fact = Fact.NONE,
) -> None:
    """Register ``aten::name(Tensor self{extra})``, its out variant and ``name_`` (``facts``:
    ``EPILOGUE`` for an activation ``fold_epilogues`` may write in place over a product).

    Functions that can overflow or leave their domain (exp, log, sqrt...) run under
    ``np.errstate(all="ignore")``, about 1.5 us a call; the others (``_BARE``) run bare.
    ``write(x, buf)``, when given, computes ``fn(x)`` into ``buf`` for the out variant.
    """

    def run(self: np.ndarray, *args: Any) -> np.ndarray:
        r = fn(self, *args)
        return r if type(r) is np.ndarray else np.asarray(r)

    if name not in _BARE:
        run = np.errstate(all="ignore")(run)

    run.__name__ = name
    out = copy_out(run) if write is None else _writing_out(name, write, copy_out(run))
    kernel(f"aten::{name}(Tensor self{extra}) -> Tensor", elementwise=True, facts=facts)(run).out(out)
    if inplace:
        kernel(f"aten::{name}_(Tensor(a!) self{extra}) -> Tensor(a!)")(
            _writing_inplace(name, write, run) if write is not None
            else lambda self, *args: write_inplace(self, run(self, *args))
        )


def _writing_out(name: str, write: Write, fallback: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """The out variant ``out(buf, x)``: ``write(x, buf)`` when ``x`` is a floating tensor of
    at least one dimension and ``buf`` has its shape and dtype, else ``fallback``.

    A 0-dim input takes the fallback because some kernels (sigmoid) use a scalar formula
    there.  The ufuncs give the same bits whatever the memory layout of input and output
    (checked by tests/ops/test_tensor_out.py), so writing into a planned buffer is exact."""
    guarded = name not in _BARE

    def out(buf: np.ndarray, x: np.ndarray, *args: Any) -> np.ndarray:
        if (
            type(buf) is np.ndarray
            and type(x) is np.ndarray
            and buf.dtype is x.dtype
            and buf.shape == x.shape
            and x.ndim
            and category(x.dtype) >= FLOAT_CAT
        ):
            if guarded:
                with np.errstate(all="ignore"):
                    write(x, buf, *args)
            else:
                write(x, buf, *args)
            return buf
        return fallback(buf, x, *args)

    out.__name__ = f"{name}_out"
    return out


def _writing_inplace(name: str, write: Write, run: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """The in-place form ``name_(self)``: ``write(self, self)`` on a floating tensor of at
    least one dimension (the writers are elementwise and accept ``buf is x``), else compute
    and copy back, with PyTorch's refusal to cast a float result into an integer tensor."""
    guarded = name not in _BARE

    def inplace(self: np.ndarray, *args: Any) -> np.ndarray:
        if type(self) is np.ndarray and self.ndim and category(self.dtype) >= FLOAT_CAT:
            if guarded:
                with np.errstate(all="ignore"):
                    write(self, self, *args)
            else:
                write(self, self, *args)
            return self
        return write_inplace(self, run(self, *args))

    inplace.__name__ = f"{name}_"
    return inplace


def _into(ufunc: Callable[..., Any]) -> Write:
    """The writer ``write(x, buf)`` of a kernel that is ``ufunc(x)`` on floating inputs."""
    return lambda x, buf: ufunc(x, out=buf)


def _float_ufunc(ufunc: Callable[..., Any]) -> Fn:
    return lambda x: ufunc(_floating(x))


# ---------------------------------------------------------------------------------------
# erf / erfc: vm.ops._erf (Cody's rational approximations, vectorized; no scipy) in
# float64, vm.ops._erf32 (float32 polynomials, within 2 ulp) for float32 and float16


def _erf(x: np.ndarray) -> np.ndarray:
    x = _floating(x)
    if x.dtype == np.float64 or x.ndim == 0:
        return np.asarray(_cody.erf(x)).astype(x.dtype, copy=False)
    return erf_f32(x).astype(x.dtype, copy=False)


def _erf_into(x: np.ndarray, buf: np.ndarray) -> None:
    if buf.dtype == np.float32:
        erf_f32(x, out=buf)
    else:
        np.copyto(buf, _erf(x))


def _erfc(x: np.ndarray) -> np.ndarray:
    x = _floating(x)
    return np.asarray(_cody.erfc(x)).astype(x.dtype, copy=False)


# ---------------------------------------------------------------------------------------
# floating ops

_FLOAT_UFUNCS: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh,
    "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
}
for _name, _uf in _FLOAT_UFUNCS.items():
    _register(_name, _float_ufunc(_uf), write=_into(_uf))


def _one(x: np.ndarray) -> Any:
    return x.dtype.type(1)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = _floating(x)
    if not x.ndim:
        e = -x
        return _one(e) / (_one(e) + np.exp(e))
    buf = np.empty_like(x)
    _sigmoid_into(x, buf)
    return buf


def _sigmoid_into(x: np.ndarray, buf: np.ndarray) -> None:
    """``1 / (1 + exp(-x))`` of a floating ``x`` computed in ``buf`` (which may be ``x``),
    in blocks that stay in the L2 cache across the four passes (1.1x faster on a
    (1, 197, 3072) tensor: exp is most of the time).  No compiled form: the fusion groups
    spell sigmoid with numpy's exp (vm.fusion.plan), and both backends must agree bit for bit."""
    for src, dst in flat_blocks(x, buf):
        np.negative(src, out=dst)
        np.exp(dst, out=dst)
        dst += _one(dst)
        np.reciprocal(dst, out=dst)


def _rsqrt(x: np.ndarray) -> np.ndarray:
    x = _floating(x)
    return _one(x) / np.sqrt(x)


def _reciprocal(x: np.ndarray) -> np.ndarray:
    x = _floating(x)
    return _one(x) / x


_register("sigmoid", _sigmoid, write=_sigmoid_into)
_register("rsqrt", _rsqrt)
_register("reciprocal", _reciprocal)
_register("erf", _erf, write=_erf_into)
_register("erfc", _erfc)
_register("erfinv", lambda x: _cody.erfinv(_floating(x)))


# ---------------------------------------------------------------------------------------
# dtype-keeping ops


def _no_bool(name: str, message: str | None = None) -> Callable[[np.ndarray], None]:
    def check(x: np.ndarray) -> None:
        if x.dtype == BOOL:
            raise RuntimeError(message or f'"{name}" not implemented for \'Bool\'')

    return check


def _keep(name: str, op: Fn, int_identity: bool = False, bool_message: str | None = None) -> Fn:
    check = _no_bool(name, bool_message)

    def fn(x: np.ndarray) -> np.ndarray:
        check(x)
        if int_identity and category(x.dtype) < FLOAT_CAT:
            return x.copy()
        return op(x)

    return fn


_register("abs", _keep("abs", np.abs), write=_into(np.abs))
_register("neg", _keep("neg", np.negative, bool_message=(
    "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, "
    "use the `~` or `logical_not()` operator instead.")), write=_into(np.negative))
_register("negative", _keep("neg", np.negative), write=_into(np.negative))
_register("floor", _keep("floor", np.floor, int_identity=True), write=_into(np.floor))
_register("ceil", _keep("ceil", np.ceil, int_identity=True), write=_into(np.ceil))
_register("trunc", _keep("trunc", np.trunc, int_identity=True), write=_into(np.trunc))
_register("round", _keep("round", np.rint, int_identity=True), write=_into(np.rint))



def _frac(x: np.ndarray) -> np.ndarray:
    if category(x.dtype) < FLOAT_CAT:
        raise NotImplementedError(f'"frac_cpu" not implemented for \'{x.dtype}\'')
    return x - np.trunc(x)


def _round_decimals(x: np.ndarray, decimals: int) -> np.ndarray:
    if category(x.dtype) < FLOAT_CAT:
        raise RuntimeError(f'"round_cpu" not implemented for \'{x.dtype}\'')
    if decimals >= 0:
        scale = x.dtype.type(10.0**decimals)
        return np.rint(x * scale) / scale
    scale = x.dtype.type(10.0 ** (-decimals))
    return np.rint(x / scale) * scale


_register("frac", _frac)
kernel("aten::round.decimals(Tensor self, *, int decimals) -> Tensor", elementwise=True)(
    lambda self, decimals: wrap(_round_decimals(self, decimals))
).out(copy_out(lambda self, decimals: wrap(_round_decimals(self, decimals))))
kernel("aten::round_.decimals(Tensor(a!) self, *, int decimals) -> Tensor(a!)")(
    lambda self, decimals: write_inplace(self, wrap(_round_decimals(self, decimals)))
)


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype == BOOL:
        return x.copy()
    dt = x.dtype
    return (x > 0).astype(dt) - (x < 0).astype(dt)  # sign(nan) is 0 in PyTorch


def _square(x: np.ndarray) -> np.ndarray:
    if x.dtype == BOOL:
        x = x.astype(INT64)
    return np.multiply(x, x)


_register("sign", _sign)
_register("sgn", _sign)
_register("square", _square)
_register("bitwise_not", lambda x: np.invert(x) if category(x.dtype) < FLOAT_CAT else _float_bitwise())
_register("logical_not", np.logical_not)


def _float_bitwise() -> np.ndarray:
    raise RuntimeError('"bitwise_not_cpu" not implemented for floating point tensors')


# ---------------------------------------------------------------------------------------
# activations


def _relu(x: np.ndarray) -> np.ndarray:
    if x.dtype == BOOL:
        raise RuntimeError("Boolean inputs not supported for relu")
    return np.maximum(x, x.dtype.type(0))


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def _gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if category(x.dtype) < FLOAT_CAT:
        raise RuntimeError(f'"GeluKernelImpl" not implemented for \'{x.dtype}\'')
    t = x.dtype.type
    if approximate == "none" and x.dtype == np.float32 and x.ndim:
        return _gelu_f32(x)
    # x is clipped to the largest float where it is the factor of Phi(x), so -inf gives -0.0
    # (the limit) rather than -inf * 0 (docs/quantized.md, "CPU-dependent answers")
    if approximate == "none":
        return t(0.5) * _clip_low(x) * (t(1) + _erf(x * t(_SQRT1_2)))
    if approximate == "tanh" and x.ndim:
        return _gelu_tanh_into(x, np.empty_like(x))
    if approximate == "tanh":
        return t(0.5) * _clip_low(x) * (t(1) + np.tanh(t(_SQRT_2_PI) * (x + t(0.044715) * (x * x * x))))
    raise RuntimeError(f"approximate argument must be either none or tanh, got {approximate!r}")


def _clip_low(x: np.ndarray) -> np.ndarray:
    """x with -inf raised to the most negative float (nan kept)."""
    return np.maximum(x, -np.finfo(x.dtype).max)


def _gelu_f32(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``x/2 * (1 + erf(x / sqrt(2)))`` in float32 (``vm.ops._erf32.gelu_f32``, block by
    block, or one compiled pass); ``out`` (float32, x's shape) receives it and may be ``x`` itself."""
    if compiled.ENABLED:
        dst = np.empty_like(x) if out is None else out
        if (fam := compiled.ready("activation")) is not None and fam.apply("gelu", x, dst):
            return dst
    return gelu_f32(x, out=out)


def _gelu_tanh_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The tanh GELU ``0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` in PyTorch's
    order (its vectorized kernel's), into ``out`` (x's shape and dtype, x itself or apart
    from it), block by block through one scratch block: 9 passes in the L2 cache (float32:
    one compiled pass)."""
    if (fam := compiled.ready("activation")) is not None and fam.apply("gelu_tanh", x, out):
        return out
    t = x.dtype.type
    blocks = flat_blocks(x, out)
    scratch = np.empty(blocks[0][0].shape, x.dtype)
    for src, dst in blocks:
        z = scratch if scratch.shape == src.shape else scratch[: src.size]
        np.multiply(src, src, out=z)
        z *= src
        z *= t(0.044715)
        z += src
        z *= t(_SQRT_2_PI)
        np.tanh(z, out=z)
        z += t(1)
        np.maximum(src, -np.finfo(x.dtype).max, out=dst)  # -inf: -0.0, the limit
        dst *= t(0.5)
        dst *= z
    return out


def _gelu_into(x: np.ndarray, buf: np.ndarray, approximate: str = "none") -> None:
    apart = buf is x or not np.shares_memory(x, buf)
    if approximate == "none" and buf.dtype == x.dtype == np.float32 and apart:
        _gelu_f32(x, out=buf)
    elif approximate == "tanh" and buf.dtype == x.dtype and apart:
        _gelu_tanh_into(x, buf)
    else:
        np.copyto(buf, _gelu(x, approximate))


def _silu(x: np.ndarray) -> np.ndarray:
    if category(x.dtype) < FLOAT_CAT:
        raise NotImplementedError(f'"silu_cpu" not implemented for \'{x.dtype}\'')
    if x.dtype == np.float16:  # PyTorch computes half in float32 and rounds once
        return _silu(x.astype(np.float32)).astype(np.float16)
    if not x.ndim:
        return x / (_one(x) + np.exp(-x))
    return _silu_into(x, np.empty_like(x))


def _silu_into(x: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """``x / (1 + exp(-x))``, PyTorch's formula and order, into ``buf`` (which may be ``x``
    itself): four passes, no temporary unless ``buf`` overlaps ``x`` (float32: one compiled pass)."""
    if (fam := compiled.ready("activation")) is not None and fam.apply("silu", x, buf):
        return buf
    if x.dtype == np.float16:
        np.copyto(buf, _silu(x))
        return buf
    if x.size > _BLOCK and x.flags.c_contiguous and buf.flags.c_contiguous:
        src, dst = x.reshape(-1), buf.reshape(-1)
        den = np.empty(_BLOCK, x.dtype)  # the passes of a block stay in the L2 cache: 2x faster
        for lo in range(0, src.size, _BLOCK):
            _silu_flat(src[lo : lo + _BLOCK], dst[lo : lo + _BLOCK], den)
        return buf
    _silu_flat(x, buf, buf if not np.shares_memory(x, buf) else np.empty_like(x))
    return buf


def _silu_flat(x: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> None:
    den = scratch[: x.size].reshape(x.shape) if scratch is not out else scratch
    np.negative(x, out=den)
    np.exp(den, out=den)
    den += _one(den)
    np.divide(x, den, out=out)


_register("relu", _relu, write=lambda x, buf: np.maximum(x, x.dtype.type(0), out=buf))
_register("gelu", _gelu, ', *, str approximate="none"', write=_gelu_into, facts=Fact.EPILOGUE)
_register("silu", _silu, write=_silu_into, facts=Fact.EPILOGUE)


# ---------------------------------------------------------------------------------------
# The bare numpy calls the static runtime may make in these kernels' place once a plan
# shows float tensors (``vm.static.fastpath``): the kernel's own ufuncs for such operands


@np.errstate(all="ignore")  # as the kernel: exp(-x) overflows to inf silently
def sigmoid_fast(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The kernel's own recipe (``_sigmoid_into``), minus its dtype dispatch: same bits."""
    e = np.negative(x, out=out)
    np.exp(e, out=e)
    e += e.dtype.type(1)
    return np.reciprocal(e, out=e)


declare("aten::neg", fast=(FastCall(np.negative, (0,)),))
declare("aten::tanh", fast=(FastCall(np.tanh, (0,)),))
declare("aten::sigmoid", fast=(FastCall(sigmoid_fast, (0,)),))
declare("aten::relu", fast=(FastCall(np.maximum, (0, ("s", 0))),))
