"""Matrix norms and the norm dispatchers torch's library code reaches: ``linalg_matrix_norm``
(a numeric or a string order), ``linalg_norm`` (vector or matrix, as ``torch.linalg.norm``
decides), and the legacy ``frobenius_norm`` and ``nuclear_norm`` that ``torch.norm`` calls
on its old path.

A matrix norm reduces two dims ``(d0, d1)`` (default the last two) of a batch of matrices,
as ``torch.linalg.matrix_norm`` documents: ``'fro'`` the square root of the sum of squares;
``'nuc'`` the sum of the singular values; ``1`` / ``-1`` the largest / smallest column sum of
absolute values (a sum over ``d0``, then max/min over ``d1``); ``inf`` / ``-inf`` the same over
rows; ``2`` / ``-2`` the largest / smallest singular value (``numpy.linalg.svd`` of the
matrices moved to the last two dims).  ``keepdim`` keeps both dims as size 1.  An input of
another dtype than float or complex is refused, as torch refuses it; ``dtype=`` casts first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops._common import norm_dims
from vm.ops._dtypes import FLOAT_CAT, category, dtype_name, to_code, to_dtype, wrap
from vm.ops.reduction import vector_norm
from vm.ops.registry import kernel

Array = np.ndarray


def _input(self: Array, dtype: int | None, op: str) -> Array:
    x = self.astype(to_dtype(dtype), copy=False) if dtype is not None else self
    if category(x.dtype) < FLOAT_CAT:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {dtype_name(to_code(x.dtype))}")
    return x


def _two_dims(x: Array, dim: Sequence[int], op: str) -> tuple[int, int]:
    if x.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    d0, d1 = norm_dims(list(dim), x.ndim)
    if d0 == d1:
        raise RuntimeError(f"{op}: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def _singular_values(x: Array, d0: int, d1: int) -> Array:
    moved = np.moveaxis(x, (d0, d1), (-2, -1))
    return np.linalg.svd(moved, compute_uv=False).astype(np.abs(x[..., :0]).dtype, copy=False)


def _matrix_norm(self: Array, ord: Any, dim: Sequence[int], keepdim: bool, dtype: int | None) -> Array:
    op = "linalg.matrix_norm"
    x = _input(self, dtype, op)
    d0, d1 = _two_dims(x, dim, op)
    a = np.abs(x)
    if ord == "fro":
        r = np.sqrt(np.sum(a * a, axis=(d0, d1), keepdims=True))
    elif ord == "nuc" or (not isinstance(ord, str) and abs(float(ord)) == 2.0):
        s = _singular_values(x, d0, d1)
        if ord == "nuc":
            r = np.sum(s, axis=-1)
        else:
            r = np.max(s, axis=-1) if float(ord) > 0 else np.min(s, axis=-1)
        r = np.expand_dims(r, tuple(sorted((d0, d1))))
    elif isinstance(ord, str):
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    elif abs(float(ord)) in (1.0, math.inf):
        inner, outer = (d0, d1) if abs(float(ord)) == 1.0 else (d1, d0)
        sums = np.sum(a, axis=inner, keepdims=True)
        r = np.max(sums, axis=outer, keepdims=True) if float(ord) > 0 else np.min(sums, axis=outer, keepdims=True)
    else:
        raise RuntimeError(f"{op}: Order {ord} not supported.")
    r = np.asarray(r, dtype=a.dtype)
    return wrap(r if keepdim else np.squeeze(r, axis=(d0, d1)))


kernel("aten::linalg_matrix_norm(Tensor self, Scalar ord, int[] dim=[-2,-1], bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor")(_matrix_norm)
kernel("aten::linalg_matrix_norm.str_ord(Tensor self, str ord=\"fro\", int[] dim=[-2,-1], bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor")(_matrix_norm)


def _norm(self: Array, ord: Any, dim: Sequence[int] | None, keepdim: bool, dtype: int | None) -> Array:
    """``torch.linalg.norm``: a matrix norm for a string order, two dims, or no dims of a 2-d
    input with an order; else a vector norm (all elements when neither is given)."""
    if dim is not None and len(dim) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dim)}")
    if ord is not None and dim is None and self.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {self.ndim}D.")
    matrix = isinstance(ord, str) or (dim is not None and len(dim) == 2) or (ord is not None and dim is None and self.ndim == 2)
    if matrix:
        return _matrix_norm(self, "fro" if ord is None else ord, [-2, -1] if dim is None else dim, keepdim, dtype)
    return vector_norm(self, 2 if ord is None else ord, dim, keepdim, dtype)


kernel("aten::linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor")(_norm)
kernel("aten::linalg_norm.ord_str(Tensor self, str ord, int[1]? dim=None, bool keepdim=False, *, "
       "ScalarType? dtype=None) -> Tensor")(_norm)


@kernel("aten::frobenius_norm.dim(Tensor self, int[1] dim, bool keepdim=False) -> Tensor")
def frobenius_norm(self: Array, dim: Sequence[int], keepdim: bool) -> Array:
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions instead.")
    return vector_norm(self, 2, dim, keepdim, None)


@kernel("aten::nuclear_norm(Tensor self, bool keepdim=False) -> Tensor")
def nuclear_norm(self: Array, keepdim: bool) -> Array:
    if self.ndim != 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have 2 dimensions. Got {self.ndim}D.")
    return _matrix_norm(self, "nuc", [0, 1], keepdim, None)


@kernel("aten::nuclear_norm.dim(Tensor self, int[2] dim, bool keepdim=False) -> Tensor")
def nuclear_norm_dim(self: Array, dim: Sequence[int], keepdim: bool) -> Array:
    return _matrix_norm(self, "nuc", dim, keepdim, None)
