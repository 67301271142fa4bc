"""Order statistics that return indices: ``median`` (whole and by dim), ``cummax`` /
``cummin`` and ``aminmax``.

``median`` is PyTorch's lower median (the element at index (n-1)//2 of the sorted
values), not numpy's average of the two middle values; a NaN anywhere is the median,
as in PyTorch.  The cumulative extremes move their index forward on ties.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.ops._common import copy_out, norm_dim
from vm.ops._dtypes import INT64, wrap
from vm.ops.registry import kernel

Array = np.ndarray


def _lower_median_index(x: Array, axis: int) -> Array:
    n = x.shape[axis]
    order = np.argsort(x, axis=axis, kind="stable")
    k = (n - 1) // 2
    idx = np.take(order, [k], axis=axis)
    nan = np.isnan(x).any(axis=axis, keepdims=True) if x.dtype.kind == "f" else None
    if nan is not None and nan.any():  # a NaN is the median: the first NaN, as in torch
        first_nan = np.argmax(np.isnan(x), axis=axis, keepdims=True)
        idx = np.where(nan, first_nan, idx)
    return idx


@kernel("aten::median(Tensor self) -> Tensor")
def median(self: Array) -> Array:
    if self.size == 0:
        return np.array(np.nan, self.dtype) if self.dtype.kind == "f" else np.zeros((), self.dtype)
    flat = self.reshape(-1)
    return wrap(flat[_lower_median_index(flat, 0)[0]])


median.out(copy_out(median))


@kernel("aten::median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
def median_dim(self: Array, dim: int, keepdim: bool) -> tuple[Array, Array]:
    if self.ndim == 0:
        return self.copy(), np.zeros((), INT64)
    d = norm_dim(dim, self.ndim)
    idx = _lower_median_index(self, d)
    vals = np.take_along_axis(self, idx, axis=d)
    if not keepdim:
        idx, vals = idx.squeeze(d), vals.squeeze(d)
    return wrap(vals), wrap(idx.astype(INT64))


def _cum_extreme(better: Any) -> Any:
    def run(self: Array, dim: int) -> tuple[Array, Array]:
        if self.ndim == 0:
            return self.copy(), np.zeros((), INT64)
        d = norm_dim(dim, self.ndim)
        x = np.moveaxis(self, d, 0)
        vals, idx = np.empty_like(x), np.empty(x.shape, INT64)
        if x.shape[0]:
            vals[0], idx[0] = x[0], 0
        for i in range(1, x.shape[0]):
            # ties move the index forward and a NaN takes over for good, as in torch
            take = better(x[i], vals[i - 1]) | (x[i] == vals[i - 1])
            if x.dtype.kind == "f":
                take |= np.isnan(x[i])
            vals[i] = np.where(take, x[i], vals[i - 1])
            idx[i] = np.where(take, i, idx[i - 1])
        return np.moveaxis(vals, 0, d), np.moveaxis(idx, 0, d)

    return run


kernel("aten::cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)")(_cum_extreme(np.greater))
kernel("aten::cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)")(_cum_extreme(np.less))


@kernel("aten::aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)")
def aminmax(self: Array, dim: int | None, keepdim: bool) -> tuple[Array, Array]:
    axis = None if dim is None else norm_dim(dim, self.ndim)
    if self.ndim == 0:
        return self.copy(), self.copy()
    lo, hi = np.min(self, axis=axis, keepdims=keepdim), np.max(self, axis=axis, keepdims=keepdim)
    if dim is None and keepdim:
        lo, hi = np.asarray(lo).reshape((1,) * self.ndim), np.asarray(hi).reshape((1,) * self.ndim)
    return wrap(lo), wrap(hi)
