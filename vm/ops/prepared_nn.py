"""The prepared form of ``max_pool2d`` (``vm.ops.prepared`` says what prepared forms promise).

A max pool without padding or ceil mode needs no padded copy: its output is the
elementwise maximum of the input's kernel taps, each one strided slice.  The kernel
re-derives that geometry on every call (its sizes, the padding it will not need, the
taps); on the 2-conv CNN's (1, 8, 28, 28) that prologue was most of its 16 us.  The
prepared form decides the output shape and the tap slices once per input shape (for the
node's constant kernel size, stride and dilation) and combines the taps with
``np.maximum`` in the kernel's order, so its bits are the kernel's (6 us).  Padding, ceil
mode, an unbatched 2-d input, a bool input, an output of no size: the kernel runs.

(The convolution needs no prepared form of its own here: ``vm.ops.nn.im2col`` keeps its
per-shape plan and per-thread buffers itself.)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from vm.ops.prepared import Forms, Known, first_argument_forms, prepares

Kernel = Callable[..., Any]
_MAX_SHAPES = 16  # input shapes remembered per node


def _pair(value: Any) -> tuple[int, int] | None:
    """A constant ``int[2]`` argument as a pair (an int or a 1-list repeats), else None."""
    if type(value) is int:
        return (value, value)
    if type(value) is tuple and all(type(v) is int for v in value) and len(value) in (1, 2):
        return (value[0], value[-1])
    return None


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

    return first_argument_forms(pool, kernel, out_variant)
