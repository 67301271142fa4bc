"""Prepared forms of ``conv2d`` and ``max_pool2d`` for small inputs (``vm.ops.prepared``).

On a small image the convolution kernel's time is its prologue, not its product: for
the 2-conv CNN at batch 1 (conv 1->8 on 28x28, 8->16 on 14x14), ``conv_nd`` took 31 and
36 us where its one GEMM takes 3-6 us, and torch 6.4 and 12.5 us.  The time goes to
re-deciding the geometry, padding the input into a fresh array, and building the window
view through ``sliding_window_view``.  With stride, padding, dilation and groups=1
constant, all of that is fixed per input shape, so the prepared form keeps, per thread
and per shape, a zero-bordered padded buffer, the window view over it (one
``as_strided``) and the column buffer, and a call is: copy the input into the buffer's
interior, copy the windows into the columns, one matmul into the output, the bias added
in place (5.8 and 11.2 us).  The columns have ``conv_nd``'s layout (channel, then kernel
taps, by output position) and the product is the same GEMM, so the bits are the kernel's.
Past ``MAX_COLUMN_BYTES`` of columns the kernel runs: there the product dominates and a
cached column buffer per shape would only hold memory.

Each thread keeps the buffers of at most ``_MAX_SHAPES`` geometries (each under
``MAX_COLUMN_BYTES`` of columns plus its padded input), for as long as the thread lives.

``max_pool2d`` without padding or ceil mode needs no padded copy at all: the prepared
form takes the kernel's tap slices (decided once per input shape) and combines them with
``np.maximum`` in the kernel's order (16 -> 6 us on (1, 8, 28, 28)).

Anything else -- a pointwise (1x1, stride 1, unpadded) convolution, which the kernel
already runs as one matmul on its input, grouped, unbatched, other dtypes, mismatched
channels, an output of no size -- goes to the kernel, which decides (and raises) as always.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from vm.ops.prepared import Forms, Known, const_int, prepares

Kernel = Callable[..., Any]
MAX_COLUMN_BYTES = 1 << 20  # one L2's worth; beyond it the GEMM is the cost, not the prologue
_MAX_SHAPES = 16  # per thread: a model's distinct small convolutions
_local = threading.local()
_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # the products BLAS computes


def _pair(value: Any) -> tuple[int, int] | None:
    """A constant ``int[2]`` argument as a pair (an int or a 1-list repeats), else None."""
    if type(value) is int:
        return (value, value)
    if type(value) is tuple and all(type(v) is int for v in value) and len(value) in (1, 2):
        return (value[0], value[-1])
    return None


class _ConvScratch:
    """One thread's buffers for one input geometry: padded input, window view, columns."""

    __slots__ = ("cols", "interior", "matrix", "out_shape", "padded", "windows")

    def __init__(self, x: np.ndarray, wshape: tuple[int, ...], stride, padding, dilation, oh: int, ow: int):
        n, c, h, w = x.shape
        (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
        kh, kw = wshape[2:]
        self.padded = np.zeros((n, c, h + 2 * ph, w + 2 * pw), x.dtype)
        self.interior = self.padded[:, :, ph : ph + h, pw : pw + w]
        s0, s1, s2, s3 = self.padded.strides
        self.windows = as_strided(
            self.padded, (n, c, kh, kw, oh, ow), (s0, s1, s2 * dh, s3 * dw, s2 * sh, s3 * sw), writeable=False
        )
        self.cols = np.empty((n, c, kh, kw, oh, ow), x.dtype)
        self.matrix = self.cols.reshape(n, c * kh * kw, oh * ow)
        self.out_shape = (n, wshape[0], oh, ow)


def _scratch(key: tuple[Any, ...], make: Callable[[], _ConvScratch]) -> _ConvScratch:
    cache: dict[tuple[Any, ...], _ConvScratch] | None = getattr(_local, "conv", None)
    if cache is None:
        cache = _local.conv = {}
    found = cache.get(key)
    if found is None:
        if len(cache) >= _MAX_SHAPES:
            cache.clear()
        found = cache[key] = make()
    return found


@prepares("aten::conv2d")
def _conv2d(known: Known, kernel: Kernel, out_variant: Kernel | None) -> Forms | None:
    if const_int(known, 6) != 1:
        return None
    return _conv_forms(known[3], known[4], known[5], kernel, out_variant)


def _underscore_convolution(known: Known, kernel: Kernel, out_variant: Kernel | None) -> Forms | None:
    """What traced graphs record for ``nn.Conv2d``: the same forms when not transposed."""
    if known[6] is not False or const_int(known, 8) != 1:
        return None
    return _conv_forms(known[3], known[4], known[5], kernel, out_variant)


for _name in ("aten::_convolution", "aten::_convolution.deprecated", "aten::convolution"):
    prepares(_name)(_underscore_convolution)


def _conv_forms(stride_: Any, padding_: Any, dilation_: Any, kernel: Kernel, out_variant: Kernel | None) -> Forms | None:
    """The prepared forms of a 2-d, groups=1 convolution with this constant geometry."""
    stride, padding, dilation = _pair(stride_), _pair(padding_), _pair(dilation_)
    if stride is None or padding is None or dilation is None:
        return None
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        return None

    decisions: dict[tuple[Any, ...], tuple[Any, ...] | None] = {}  # immutable answers: thread-safe

    def decide(x: np.ndarray, weight: np.ndarray, bias: Any) -> tuple[Any, ...] | None:
        """(scratch key, output height, width) for calls like this one, or None (the kernel)."""
        if x.ndim != 4 or weight.ndim != 4 or x.dtype not in _BLAS_FLOATS or weight.dtype != x.dtype:
            return None
        if x.shape[1] != weight.shape[1] or not x.size:
            return None
        if bias is not None and (type(bias) is not np.ndarray or bias.dtype != x.dtype or bias.shape != weight.shape[:1]):
            return None
        n, c, h, w = x.shape
        kh, kw = weight.shape[2:]
        if kh == kw == 1 and stride == (1, 1) and padding == (0, 0):
            return None  # the kernel multiplies the input itself: no columns to prepare
        oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        if oh <= 0 or ow <= 0 or n * c * kh * kw * oh * ow * x.dtype.itemsize > MAX_COLUMN_BYTES:
            return None
        return (x.shape, weight.shape, x.dtype.str, stride, padding, dilation), oh, ow

    def scratch_for(x: Any, weight: Any, bias: Any) -> _ConvScratch | None:
        """This thread's buffers for the call, or None when the kernel must decide."""
        if type(x) is not np.ndarray or type(weight) is not np.ndarray:
            return None
        bias_key = None if bias is None else (type(bias), getattr(bias, "shape", None), getattr(bias, "dtype", None))
        key = (x.shape, x.dtype, weight.shape, weight.dtype, bias_key)
        found = decisions.get(key, key)
        if found is key:
            if len(decisions) >= _MAX_SHAPES:
                decisions.clear()
            found = decisions[key] = decide(x, weight, bias)
        if found is None:
            return None
        skey, oh, ow = found
        cached = getattr(_local, "conv", {}).get(skey)
        if cached is not None:
            return cached
        return _scratch(skey, lambda: _ConvScratch(x, weight.shape, stride, padding, dilation, oh, ow))

    def run(s: _ConvScratch, result: np.ndarray, x: np.ndarray, weight: np.ndarray, bias: Any) -> np.ndarray:
        np.copyto(s.interior, x)
        np.copyto(s.cols, s.windows)
        o = weight.shape[0]
        product = result.reshape(s.out_shape[0], o, -1)
        np.matmul(weight.reshape(o, -1), s.matrix, out=product)
        if bias is not None:
            np.add(result, bias.reshape(o, 1, 1), out=result)
        return result

    def conv2d(x: Any, weight: Any, bias: Any, *args: Any) -> np.ndarray:
        s = scratch_for(x, weight, bias)
        if s is None:
            return kernel(x, weight, bias, *args)
        return run(s, np.empty(s.out_shape, x.dtype), x, weight, bias)

    def conv2d_out(out: np.ndarray, x: Any, weight: Any, bias: Any, *args: Any) -> np.ndarray:
        s = scratch_for(x, weight, bias)
        if (
            s is None
            or out_variant is None
            or type(out) is not np.ndarray
            or out.shape != s.out_shape
            or out.dtype != x.dtype
            or not out.flags.c_contiguous
        ):
            assert out_variant is not None  # codegen keeps an out form only where the node had one
            return out_variant(out, x, weight, bias, *args)
        return run(s, out, x, weight, bias)

    return Forms(conv2d, conv2d_out if out_variant is not None else None)


@prepares("aten::max_pool2d")
def _max_pool2d(known: Known, kernel: Kernel, out_variant: Kernel | None) -> Forms | None:
    size, padding, dilation = _pair(known[1]), _pair(known[3]), _pair(known[4])
    stride = size if known[2] == () else _pair(known[2])
    if size is None or stride is None or padding != (0, 0) or dilation is None or known[5] is not False:
        return None
    if min(size) < 1 or min(stride) < 1 or min(dilation) < 1:
        return None
    memo: dict[tuple[int, ...], Any] = {}

    def plan(shape: tuple[int, ...]) -> Any:
        """(output shape, tap index tuples) for an input shape, or None (the kernel's case)."""
        found = memo.get(shape, ())
        if found != ():
            return found
        outs = tuple(
            (n - d * (k - 1) - 1) // s + 1 for n, k, s, d in zip(shape[-2:], size, stride, dilation)
        )
        made = None
        if len(shape) in (3, 4) and min(outs) > 0:
            taps = [
                (Ellipsis,) + tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, s, o in zip(tap, dilation, stride, outs))
                for tap in itertools.product(range(size[0]), range(size[1]))
            ]
            made = (shape[:-2] + outs, taps)
        if len(memo) >= _MAX_SHAPES:
            memo.clear()
        memo[shape] = made
        return made

    def pool(result: np.ndarray | None, x: Any) -> np.ndarray | None:
        if type(x) is not np.ndarray or x.dtype.kind not in "fiu":
            return None
        p = plan(x.shape)
        if p is None or (result is not None and (result.shape != p[0] or result.dtype != x.dtype)):
            return None
        taps = p[1]
        if len(taps) == 1:
            if result is None:
                return x[taps[0]].copy()
            np.copyto(result, x[taps[0]])
            return result
        best = np.maximum(x[taps[0]], x[taps[1]], out=result)  # one pass per tap, as the kernel
        for tap in taps[2:]:
            np.maximum(best, x[tap], out=best)
        return best

    def max_pool2d(x: Any, *args: Any) -> np.ndarray:
        r = pool(None, x)
        return r if r is not None else kernel(x, *args)

    def max_pool2d_out(out: np.ndarray, x: Any, *args: Any) -> np.ndarray:
        r = pool(out, x) if type(out) is np.ndarray else None
        if r is not None:
            return r
        assert out_variant is not None  # codegen keeps an out form only where the node had one
        return out_variant(out, x, *args)

    return Forms(max_pool2d, max_pool2d_out if out_variant is not None else None)
