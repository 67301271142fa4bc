"""Small helpers shared by the nn kernel modules (``nn.conv``, ``nn.pool``, ...).

Schemas declare fixed-size lists (``int[2] stride``) that TorchScript lets a caller pass
as one int or a one-element list; ``expand`` turns any of these into a tuple of the
declared length.  ``write_out`` is how an out variant hands a freshly computed result to
the buffer it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def expand(value: int | Sequence[int], n: int, name: str = "argument") -> tuple[int, ...]:
    """``3 -> (3, 3)``, ``[3] -> (3, 3)``, ``[2, 3] -> (2, 3)`` for ``n == 2``."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    items = tuple(map(int, value))
    if len(items) == 1:
        return items * n
    if len(items) != n:
        raise ValueError(f"{name} must have {n} elements, got {list(items)}")
    return items


def check_out(out: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Raise unless ``out`` can receive a result of ``shape`` and ``dtype`` in place."""
    if out.shape != tuple(shape) or out.dtype != dtype:
        raise ValueError(
            f"out buffer is {out.dtype}{list(out.shape)}, the result is {np.dtype(dtype)}{list(shape)}"
        )


def write_out(out: np.ndarray, result: np.ndarray) -> np.ndarray:
    """Copy ``result`` into ``out`` (same shape and dtype) and return ``out``."""
    check_out(out, result.shape, result.dtype)
    np.copyto(out, result)
    return out


def copying_out(registered: Any) -> Any:
    """Give a ``@kernel`` an out variant that computes as usual and copies into the buffer.

    For kernels whose result is fresh memory anyway: the copy lets the static runtime's
    planner own the result's storage (and reuse it across runs).
    """

    def out_variant(out: np.ndarray, *args: Any) -> np.ndarray:
        return write_out(out, registered(*args))

    out_variant.__name__ = f"{getattr(registered, '__name__', 'kernel')}_out"
    registered.out(out_variant)
    return registered


def sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function without overflow warnings: ``0.5 * (1 + tanh(x / 2))``."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def as_float_result(x: np.ndarray) -> np.ndarray:
    """``x`` itself when it is a floating tensor, else ``x`` as float32 (PyTorch's default)."""
    return x if x.dtype.kind == "f" else x.astype(np.float32)


def pad_spatial(x: np.ndarray, before: Sequence[int], after: Sequence[int]) -> np.ndarray:
    """``x`` zero-padded on its spatial axes (a fresh array; ``np.pad`` costs ~30 µs more)."""
    if not any(before) and not any(after):
        return x
    n, c, *spatial = x.shape
    xp = np.zeros((n, c, *(b + size + a for b, size, a in zip(before, spatial, after))), x.dtype)
    xp[(slice(None), slice(None)) + tuple(slice(b, b + size) for b, size in zip(before, spatial))] = x
    return xp
