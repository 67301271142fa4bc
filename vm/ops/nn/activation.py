"""The activation functions of ``torch.nn`` that are not plain pointwise math.

``hardtanh``, ``relu6``, ``leaky_relu``, ``elu``, ``selu``, ``celu``, ``softplus``,
``hardswish``, ``hardsigmoid``, ``mish``, ``threshold``, ``hardshrink``,
``softshrink``, ``log_sigmoid``, ``prelu`` and ``glu``.  (``relu``, ``sigmoid``,
``tanh``, ``silu`` and ``gelu`` live with the pointwise kernels; ``rrelu``, random in
training, with the random operators in ``vm.ops.random``.)

Each is one numpy expression of the input and the Scalars, in the input's dtype (numpy 2
keeps float32 when combined with a Python float).  ``_register`` turns that expression
into the functional operator with an out variant, and into the in-place ``name_``
operator when PyTorch has one: the in-place form computes, writes the result back into
``self`` and returns ``self``, as ``Tensor(a!)`` promises.  As in PyTorch, only
``hardtanh``, ``relu6`` and ``threshold`` take integer tensors; the others refuse them
(and bool) rather than compute in integer arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vm.ops import compiled
from vm.ops._common import flat_blocks
from vm.ops.nn._util import copying_out, sigmoid, write_out
from vm.ops.registry import DtypeRule, Fact, kernel

Fn = Callable[..., np.ndarray]
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# the activations PyTorch also runs on integer tensors (never on bool); the rest are float-only
INTEGER_OK = frozenset({"hardtanh", "relu6", "threshold"})


def need_float(name: str, x: np.ndarray) -> None:
    """Refuse a tensor dtype PyTorch's kernel for ``name`` does not implement."""
    if x.dtype.kind != "f" and (name not in INTEGER_OK or x.dtype == np.bool_):
        raise NotImplementedError(f"{name} is not implemented for {x.dtype} tensors")


def _register(name: str, params: str, compute: Fn, *, inplace: bool = True, into: Fn | None = None,
              facts: Fact = Fact.NONE) -> None:
    """``aten::name``, its out variant and ``aten::name_``; ``into(x, *args, out=buf)``, when
    given, computes ``compute`` straight into a float buffer of x's shape and dtype (x itself
    for the in-place form) with the same ufuncs, so the same bits.  ``facts``: ``EPILOGUE``
    for an activation ``fold_epilogues`` may write in place over a product's result."""
    sep = ", " if params else ""

    def fn(x: np.ndarray, *args: Any) -> np.ndarray:
        need_float(name, x)
        return compute(x, *args)

    def functional(x: np.ndarray, *args: Any) -> np.ndarray:
        return np.asarray(fn(x, *args), dtype=x.dtype)

    functional.__name__ = name
    registered = kernel(f"aten::{name}(Tensor self{sep}{params}) -> Tensor", elementwise=True, facts=facts)(functional)

    def direct(out: np.ndarray, x: np.ndarray) -> bool:
        return (type(out) is np.ndarray and out.shape == x.shape
                and out.dtype == x.dtype and x.dtype.kind == "f")  # fmt: skip

    @registered.out
    def out_variant(out: np.ndarray, x: np.ndarray, *args: Any) -> np.ndarray:
        if into is not None and direct(out, x):
            into(x, *args, out=out)
            return out
        return write_out(out, functional(x, *args))

    if inplace:

        def in_place(x: np.ndarray, *args: Any) -> np.ndarray:
            if into is not None and direct(x, x):
                into(x, *args, out=x)
            else:
                x[...] = fn(x, *args)
            return x

        in_place.__name__ = name + "_"
        kernel(f"aten::{name}_(Tensor(a!) self{sep}{params}) -> Tensor(a!)")(in_place)


def _elu(x: np.ndarray, alpha: float, scale: float, input_scale: float) -> np.ndarray:
    return np.where(x > 0, x * scale, np.expm1(np.minimum(x, 0) * input_scale) * (alpha * scale))


def _softplus(x: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    bx = x * beta
    return np.where(bx > threshold, x, np.log1p(np.exp(np.minimum(bx, threshold))) / beta)


def _celu(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.maximum(x, 0) + np.minimum(0, np.expm1(np.minimum(x, 0) / alpha) * alpha)


def _hardsigmoid_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``min(max(x + 3, 0), 6) / 6``, PyTorch's order of operations, into ``out`` (which
    may be ``x``), block by block so the three passes stay in the L2 cache."""
    for src, dst in flat_blocks(x, out):
        np.add(src, 3, out=dst)
        np.clip(dst, 0, 6, out=dst)  # one pass for max and min, NaN kept as by both
        np.divide(dst, 6, out=dst)
    return out


def _hardswish_into(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``x * min(max(x + 3, 0), 6) / 6`` (the product first, as PyTorch's kernel), into
    ``out``, which may be ``x`` itself, block by block through one block of scratch (float32:
    one compiled pass)."""
    if (fam := compiled.ready("activation")) is not None and fam.apply("hardswish", x, out):
        return out
    blocks = flat_blocks(x, out)
    gate = np.empty(blocks[0][0].shape, x.dtype)  # an array even for a 0-d x
    for src, dst in blocks:
        g = gate if gate.shape == src.shape else gate[: src.size]
        np.add(src, 3, out=g)
        np.clip(g, 0, 6, out=g)
        np.multiply(src, g, out=dst)
        np.divide(dst, 6, out=dst)
    return out


def _hardsigmoid(x: np.ndarray) -> np.ndarray:
    return _hardsigmoid_into(x, np.empty_like(x))


_EPILOGUE = Fact.EPILOGUE  # fold_epilogues may write it in place over a conv's or matmul's result
_register("hardtanh", "Scalar min_val=-1, Scalar max_val=1", lambda x, lo, hi: np.clip(x, lo, hi),
          into=lambda x, lo, hi, out: np.clip(x, lo, hi, out=out), facts=_EPILOGUE)
_register("relu6", "", lambda x: np.clip(x, 0, 6), into=lambda x, out: np.clip(x, 0, 6, out=out), facts=_EPILOGUE)
_register("leaky_relu", "Scalar negative_slope=0.01", lambda x, s: np.where(x > 0, x, x * s), facts=_EPILOGUE)
_register("elu", "Scalar alpha=1, Scalar scale=1, Scalar input_scale=1", _elu, facts=_EPILOGUE)
_register("selu", "", lambda x: _elu(x, SELU_ALPHA, SELU_SCALE, 1))
_register("celu", "Scalar alpha=1.", _celu)
_register("softplus", "Scalar beta=1, Scalar threshold=20", _softplus, inplace=False)
_register("hardswish", "", lambda x: _hardswish_into(x, np.empty_like(x)),
          into=lambda x, out: _hardswish_into(x, out), facts=_EPILOGUE)
_register("hardsigmoid", "", _hardsigmoid, into=lambda x, out: _hardsigmoid_into(x, out), facts=_EPILOGUE)
_register("mish", "", lambda x: x * np.tanh(_softplus(x, 1, 20)), facts=_EPILOGUE)
_register("threshold", "Scalar threshold, Scalar value", lambda x, t, v: np.where(x > t, x, v))
_register("hardshrink", "Scalar lambd=0.5", lambda x, lam: np.where(np.abs(x) > lam, x, 0), inplace=False)
_register(
    "softshrink",
    "Scalar lambd=0.5",
    lambda x, lam: np.where(x > lam, x - lam, np.where(x < -lam, x + lam, 0)),
    inplace=False,
)
_register("log_sigmoid", "", lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))), inplace=False)


@copying_out
@kernel("aten::prelu(Tensor self, Tensor weight) -> Tensor", dtypes=DtypeRule((0, 1)))
def prelu(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per-channel (axis 1) or shared negative slope."""
    need_float("prelu", x)
    w = weight.reshape(-1)
    if w.size > 1:
        shape = [1] * x.ndim
        shape[1 if x.ndim > 1 else 0] = w.size
        w = w.reshape(shape)
    return np.where(x > 0, x, x * w).astype(x.dtype, copy=False)


@copying_out
@kernel("aten::glu(Tensor self, int dim=-1) -> Tensor")
def glu(x: np.ndarray, dim: int) -> np.ndarray:
    need_float("glu", x)
    if x.shape[dim] % 2:
        raise ValueError(f"glu: dimension {dim} of size {x.shape[dim]} is not even")
    a, b = np.split(x, 2, axis=dim)
    return (a * sigmoid(b)).astype(x.dtype, copy=False)
