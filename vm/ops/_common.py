"""Helpers shared by the tensor kernel families: in-place write-back, out variants, dims.

- ``write_inplace(self, result)``: what every ``foo_`` op does after computing ``foo``:
  check that the result's dtype may be cast to ``self``'s (PyTorch refuses float into an
  int tensor) and that the result has ``self``'s shape, then copy it in and return ``self``.
- ``copy_out(kernel)``: the generic out variant of a kernel that returns one fresh tensor:
  compute, and copy into the buffer when it has the result's shape and dtype.  When it
  does not (a planner sized it for different inputs) the fresh result is returned instead,
  so ``out(buf, ...) is buf`` tells a caller whether its buffer was used.
- ``norm_dim(d, ndim)`` / ``norm_dims(dims, ndim)``: PyTorch's dim wrapping and errors.
- ``flat_blocks(x, buf)``: an elementwise kernel's input and output cut into matching
  flat blocks that stay in the L2 cache across the kernel's passes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vm.ops._dtypes import category, dtype_name, to_code


def write_inplace(self: np.ndarray, result: np.ndarray) -> np.ndarray:
    """Copy ``result`` into ``self`` as an in-place op does; return ``self``."""
    if result.dtype != self.dtype and category(result.dtype) > category(self.dtype):
        raise RuntimeError(
            f"result type {dtype_name(to_code(result.dtype))} can't be cast to the desired "
            f"output type {dtype_name(to_code(self.dtype))}"
        )
    if result.shape != self.shape:
        raise RuntimeError(
            f"output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(np.broadcast_shapes(self.shape, result.shape))}"
        )
    np.copyto(self, result, casting="unsafe")
    return self


def fits(buf: Any, result: np.ndarray) -> bool:
    return type(buf) is np.ndarray and buf.shape == result.shape and buf.dtype == result.dtype


def into(buf: Any, result: np.ndarray) -> np.ndarray:
    """``result`` copied into ``buf`` when it fits (then ``buf`` is returned), else ``result``."""
    if fits(buf, result):
        np.copyto(buf, result)
        return buf
    return result


def copy_out(kernel: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """The out variant ``out(buf, *args)`` of ``kernel``, by computing then copying."""

    def out(buf: np.ndarray, *args: Any) -> np.ndarray:
        result = kernel(*args)
        if fits(buf, result):
            np.copyto(buf, result)
            return buf
        return result

    out.__name__ = f"{getattr(kernel, '__name__', 'kernel')}_out"
    return out


def norm_dim(d: int, ndim: int) -> int:
    """``d`` wrapped into ``range(ndim)``; a 0-dim tensor accepts dims -1 and 0."""
    n = ndim if ndim > 0 else 1
    if d < -n or d >= n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d + n if d < 0 else d


def norm_dims(dims: Sequence[int] | None, ndim: int) -> tuple[int, ...]:
    """Every dim of ``dims`` wrapped (all dims when ``dims`` is None or empty), no repeats."""
    if not dims:
        return tuple(range(ndim))
    out = tuple(norm_dim(d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"dim {out} appears multiple times in the list of dims")
    return out


BLOCK = 1 << 16  # elements per block of the blocked elementwise kernels (256 KiB of float32)


def flat_blocks(x: np.ndarray, buf: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """``x`` and ``buf`` (same shape) as pairs of matching flat blocks of ``BLOCK``
    elements, for a kernel of several elementwise passes that runs each block through all
    of them while it is in the L2 cache (measured on tensors of megabytes: 1.1x for
    sigmoid, whose exp dominates, 1.3x for hardswish).  Blocked only when both are C-contiguous and ``buf`` is ``x`` itself or
    apart from it; otherwise, and for tensors of up to two blocks, the one pair ``(x, buf)``."""
    if x.size <= 2 * BLOCK or not (x.flags.c_contiguous and buf.flags.c_contiguous):
        return [(x, buf)]
    if buf is not x and np.shares_memory(x, buf):
        return [(x, buf)]
    src, dst = x.reshape(-1), buf.reshape(-1)
    return [(src[lo : lo + BLOCK], dst[lo : lo + BLOCK]) for lo in range(0, src.size, BLOCK)]
