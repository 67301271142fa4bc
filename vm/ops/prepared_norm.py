"""Prepared forms of ``batch_norm`` and ``layer_norm`` (``vm.ops.prepared`` says what prepared forms promise).

Inference batch norm is ``x * scale + shift`` per channel, where ``scale`` and ``shift``
come from the weight, bias, running statistics and eps alone.  A batch norm that the
load-time fold could not merge into a convolution (densenet's 62 after a ``cat``, those
after a pool or an add) used to derive them on every call, in float64, from the
running buffers.  When the node's ``training`` is the constant False and its four
per-channel arrays are constants (weights bound), the prepared form derives them once,
with the kernel's arithmetic and rounding (``norm.bn_affine``), and each call is two
passes into the result or the planned buffer: the kernel's bits.  Anything unusual (a
non-float input, a channel count that is not the arrays', rank < 2) runs the kernel.

``layer_norm`` on BERT-tiny's 16x64 rows spent most of its time deciding: parsing
``normalized_shape``, comparing it with the input's tail, picking the dtype path.  With a
constant ``normalized_shape`` and eps, the prepared form decides per input shape and
calls the row kernel (``norm.layer_norm_rows``) directly; the weight and bias are read at
every call, as the kernel reads them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from vm.ops import compiled
from vm.ops.nn.norm import ROW_MAX, bn_affine, layer_norm_rows
from vm.ops.prepared import Forms, Known, first_argument_forms, prepares

Kernel = Callable[..., Any]
_MAX_SHAPES = 16  # input shapes remembered per layer_norm node


def _vector(value: Any, channels: int | None) -> bool:
    """``value`` is a constant 1-d float array (of ``channels`` entries when given)."""
    return (
        type(value) is np.ndarray and value.ndim == 1 and value.dtype.kind == "f"
        and (channels is None or value.shape[0] == channels)
    )


@prepares("aten::batch_norm", tensors=True)
def _batch_norm(known: Known, kernel: Kernel, out_variant: Kernel | None) -> Forms | None:
    weight, bias, mean, var, training, eps = known[1], known[2], known[3], known[4], known[5], known[7]
    if training is not False or type(eps) is not float or not _vector(mean, None):
        return None
    c = mean.shape[0]
    if not _vector(var, c) or not (weight is None or _vector(weight, c)) or not (bias is None or _vector(bias, c)):
        return None
    w64, b64 = bn_affine(weight, bias, mean, var, eps)  # float64, rounded per input dtype below
    affine: dict[tuple[np.dtype, int], tuple[np.ndarray, np.ndarray]] = {}

    def terms(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The per-channel factor and term in x's dtype, shaped for x's rank; None: the kernel."""
        key = (x.dtype, x.ndim)
        found = affine.get(key)
        if found is None:
            if x.dtype != np.float32 and x.dtype != np.float64 or x.ndim < 2:
                return None
            shape = (1, c) + (1,) * (x.ndim - 2)
            w, b = w64.astype(x.dtype).reshape(shape), b64.astype(x.dtype).reshape(shape)
            w.flags.writeable = b.flags.writeable = False
            found = affine[key] = (w, b)  # a dict write of an immutable answer: safe under threads
        return found

    def apply(result: np.ndarray | None, x: Any) -> np.ndarray | None:
        if type(x) is not np.ndarray or x.ndim < 2 or x.shape[1] != c:
            return None
        t = terms(x)
        if t is None or (result is not None and (result.shape != x.shape or result.dtype != x.dtype)):
            return None
        if compiled.ENABLED and x.dtype == np.float32:  # one pass: x * scale + shift per channel
            y = np.empty_like(x) if result is None else result
            if (fam := compiled.ready("norm")) is not None and fam.apply_channel_affine(x, t[0], t[1], y):
                return y
        y = np.multiply(x, t[0], out=result)
        np.add(y, t[1], out=y)
        return y

    return first_argument_forms(apply, kernel, out_variant)


@prepares("aten::layer_norm")
def _layer_norm(known: Known, kernel: Kernel, out_variant: Kernel | None) -> Forms | None:
    normalized, eps = known[1], known[4]
    if type(normalized) is not tuple or not normalized or any(type(s) is not int for s in normalized):
        return None
    if type(eps) is not float:
        return None
    n, row = len(normalized), math.prod(normalized)
    if not 0 < row <= ROW_MAX:
        return None
    memo: dict[tuple[tuple[int, ...], np.dtype], bool] = {}

    def fits(x: np.ndarray) -> bool:
        """x's shape ends in ``normalized_shape`` and its dtype takes the row kernel."""
        key = (x.shape, x.dtype)
        found = memo.get(key)
        if found is None:
            found = (
                (x.dtype == np.float32 or x.dtype == np.float64)
                and x.ndim >= n and x.shape[x.ndim - n :] == normalized and x.size > 0
            )
            if len(memo) >= _MAX_SHAPES:
                memo.clear()
            memo[key] = found
        return found

    def usable(x: Any, weight: Any, bias: Any) -> bool:
        if type(x) is not np.ndarray or not fits(x):
            return False
        dt = x.dtype
        return (weight is None or (type(weight) is np.ndarray and weight.dtype == dt)) and (
            bias is None or (type(bias) is np.ndarray and bias.dtype == dt)
        )

    def layer_norm(x: Any, shape: Any, weight: Any = None, bias: Any = None, *args: Any) -> np.ndarray:
        if usable(x, weight, bias):
            return layer_norm_rows(x, row, weight, bias, eps, None)
        return kernel(x, shape, weight, bias, *args)

    def layer_norm_out(out: np.ndarray, x: Any, shape: Any, weight: Any = None, bias: Any = None, *args: Any) -> np.ndarray:
        if (
            type(out) is np.ndarray and usable(x, weight, bias) and out.shape == x.shape and out.dtype == x.dtype
            and out.flags.c_contiguous and not np.shares_memory(out, x)
        ):
            return layer_norm_rows(x, row, weight, bias, eps, out)
        assert out_variant is not None  # codegen keeps an out form only where the node had one
        return out_variant(out, x, shape, weight, bias, *args)

    return Forms(layer_norm, layer_norm_out if out_variant is not None else None)
