"""Prepared forms of the size queries and views (``vm.ops.prepared`` says what they promise).

Each takes the node's constant dims, sizes or bounds, decides per input rank what the
kernel in ``vm.ops.shape`` would decide (the wrapped dim, the index tuple, the target
shape), and calls the one numpy operation the kernel ends in.  Whenever the kernel would
raise, or takes a path other than its common one (a 0-dim input, a non-contiguous
``view``), the prepared form calls the kernel instead.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from vm.ops.prepared import UNKNOWN, Known, const_int, per_rank, prepares, wrap_dim

Kernel = Callable[..., Any]
Array = np.ndarray


@prepares("aten::size.int")
def _size_int(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    d = const_int(known, 1)
    if d is None:
        return None

    def size_int(self: Array, *args: Any) -> int:
        shape = self.shape
        if shape and -len(shape) <= d < len(shape):
            return shape[d]
        return kernel(self, *args)

    return size_int


@prepares("aten::flatten.using_ints")
def _flatten(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    start, end = const_int(known, 1), const_int(known, 2)
    if start is None or end is None:
        return None

    def decide(ndim: int) -> tuple[int, int] | None:
        s, e = wrap_dim(start, ndim), wrap_dim(end, ndim)
        return (s, e + 1) if ndim and s is not None and e is not None and s <= e else None

    bounds = per_rank(decide)

    def flatten(self: Array, *args: Any) -> Array:
        shape = self.shape
        se = bounds(len(shape))
        if se is None:
            return kernel(self, *args)
        s, e = se
        return self.reshape(shape[:s] + (math.prod(shape[s:e]),) + shape[e:])

    return flatten


@prepares("aten::unsqueeze")
def _unsqueeze(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    d = const_int(known, 1)
    if d is None:
        return None

    def decide(ndim: int) -> tuple[Any, ...] | None:
        w = wrap_dim(d, ndim + 1)
        return None if w is None else (slice(None),) * w + (None, Ellipsis)

    index = per_rank(decide)

    def unsqueeze(self: Array, *args: Any) -> Array:
        i = index(self.ndim)
        return self[i] if i is not None else kernel(self, *args)

    return unsqueeze


@prepares("aten::transpose.int")
def _transpose(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    d0, d1 = const_int(known, 1), const_int(known, 2)
    if d0 is None or d1 is None:
        return None

    def decide(ndim: int) -> tuple[int, int] | None:
        a, b = wrap_dim(d0, ndim), wrap_dim(d1, ndim)
        return (a, b) if ndim and a is not None and b is not None else None

    axes = per_rank(decide)

    def transpose(self: Array, *args: Any) -> Array:
        ab = axes(self.ndim)
        return self.swapaxes(*ab) if ab is not None else kernel(self, *args)

    return transpose


@prepares("aten::select.int")
def _select(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    d, index = const_int(known, 1), const_int(known, 2)
    if d is None or index is None:
        return None

    def decide(ndim: int) -> tuple[int, tuple[Any, ...]] | None:
        w = wrap_dim(d, ndim)
        return None if not ndim or w is None else (w, (slice(None),) * w + (index, Ellipsis))

    plan = per_rank(decide)

    def select(self: Array, *args: Any) -> Array:
        p = plan(self.ndim)
        if p is not None and -self.shape[p[0]] <= index < self.shape[p[0]]:
            return self[p[1]]
        return kernel(self, *args)

    return select


@prepares("aten::slice.Tensor")
def _slice(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    d, step = const_int(known, 1), const_int(known, 4)
    start, end = known[2], known[3]
    if d is None or step is None or step <= 0:
        return None
    if not all(v is None or type(v) is int for v in (start, end)):
        return None
    cut = slice(start, end, step)

    def decide(ndim: int) -> tuple[Any, ...] | None:
        w = wrap_dim(d, ndim)
        return None if not ndim or w is None else (slice(None),) * w + (cut,)

    index = per_rank(decide)

    def slice_(self: Array, *args: Any) -> Array:
        i = index(self.ndim)
        return self[i] if i is not None else kernel(self, *args)

    return slice_


@prepares("aten::contiguous")
def _contiguous(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    def contiguous(self: Array, *args: Any) -> Array:
        return self if self.flags.c_contiguous else self.copy()

    return contiguous


def _constant_shape(known: Known) -> tuple[int, ...] | None:
    size = known[1] if len(known) > 1 else UNKNOWN
    if type(size) is not tuple or not all(type(s) is int for s in size):
        return None
    return size


@prepares("aten::view")
def _view(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    shape = _constant_shape(known)
    if shape is None:
        return None

    def view(self: Array, *args: Any) -> Array:
        if self.flags.c_contiguous:  # the kernel's own early exit: a contiguous input never copies
            try:
                return self.reshape(shape)
            except ValueError:
                pass
        return kernel(self, *args)

    return view


@prepares("aten::reshape")
def _reshape(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    shape = _constant_shape(known)
    if shape is None:
        return None

    def reshape(self: Array, *args: Any) -> Array:
        try:
            return self.reshape(shape)
        except ValueError:
            return kernel(self, *args)

    return reshape


@prepares("aten::expand")
def _expand(known: Known, kernel: Kernel, out: Kernel | None) -> Kernel | None:
    size = _constant_shape(known)
    if size is None:
        return None
    cache: dict[tuple[int, ...], tuple[tuple[int, ...], tuple[int, ...]] | None] = {}

    def decide(shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        lead = len(size) - len(shape)
        if lead < 0 or -1 in size[:lead]:
            return None
        target = tuple(shape[i - lead] if i >= lead and s == -1 else s for i, s in enumerate(size))
        if any(s < 0 for s in target) or any(
            a != b and a != 1 for a, b in zip(shape, target[lead:])
        ):  # not broadcastable: the kernel raises numpy's message
            return None
        if 0 in target:
            return None  # an empty result: the kernel's (numpy's strides for it vary)
        out_strides = (0,) * lead + tuple(  # numpy's: 0 for a broadcast or a size-1 axis
            0 if a != b or b == 1 else st for a, b, st in zip(shape, target[lead:], strides)
        )
        return target, out_strides

    def expand(self: Array, *args: Any) -> Array:
        key = self.shape + (-1,) + self.strides
        plan = cache.get(key, UNKNOWN)
        if plan is UNKNOWN:
            if len(cache) > 64:  # shapes that keep changing: keep the memo small
                cache.clear()
            plan = cache[key] = decide(self.shape, self.strides)
        if plan is None or not self.flags.c_contiguous:
            return kernel(self, *args)
        # broadcast_to's view, built directly: a read-only array over self's memory
        view = np.ndarray(plan[0], self.dtype, self, 0, plan[1])
        view.flags.writeable = False
        return view

    return expand
