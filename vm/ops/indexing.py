"""Indexing kernels: advanced indexing, index_put_, gather/scatter, masked ops, nonzero.

``x[idx]`` with tensor indices compiles to ``aten::index(x, [None, idx])``: the list holds
one entry per leading dimension, None meaning "all of it".  numpy's advanced indexing has
PyTorch's rules for this (integer and boolean index arrays broadcast together; when the
advanced indices are separated by a slice, their dimensions go first), so the kernel turns
the list into a numpy index tuple and lets numpy do the work.  ``index_put_`` is the same
tuple on the left of an assignment, or ``np.add.at`` when ``accumulate`` is set (which
sums repeated indices, as PyTorch's accumulate does).

``gather`` and ``scatter`` index along one dimension with an index tensor that may be
smaller than ``self`` in the other dimensions; both build the full coordinate arrays
(``np.indices`` of the index's shape, with the index itself on ``dim``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops._common import copy_out, norm_dim
from vm.ops._dtypes import BOOL, INT64, UINT8, scalar_for
from vm.ops.registry import Fact, kernel

Array = np.ndarray


def _index_tuple(self: Array, indices: Sequence[Array | None]) -> tuple[Any, ...]:
    if len(indices) > max(self.ndim, 1) and not all(i is None for i in indices[self.ndim :]):
        raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {len(indices)})")
    out: list[Any] = []
    for i in indices:
        if i is None:
            out.append(slice(None))
        elif i.dtype == BOOL or i.dtype == UINT8:
            out.append(i.astype(BOOL, copy=False))
        elif i.dtype.kind in "iu":
            out.append(i)
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return tuple(out)


@kernel("aten::index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", facts=Fact.DATA_DEPENDENT_SHAPE)
def index(self: Array, indices: Sequence[Array | None]) -> Array:
    r = self[_index_tuple(self, indices)]
    return r.copy() if np.shares_memory(r, self) else np.asarray(r)


index.out(copy_out(index))
kernel("aten::index.Tensor_hacked_twin(Tensor self, Tensor[] indices) -> Tensor")(index.__wrapped__).out(
    copy_out(index.__wrapped__)
)


def _index_put(self: Array, indices: Sequence[Array | None], values: Array, accumulate: bool) -> Array:
    idx = _index_tuple(self, indices)
    vals = values.astype(self.dtype, copy=False)
    if accumulate:
        # np.add.at wants integer coordinates: spell boolean masks out as their nonzeros
        expanded: list[Any] = []
        for i in idx:
            expanded.extend(np.nonzero(i) if isinstance(i, np.ndarray) and i.dtype == BOOL else [i])
        np.add.at(self, tuple(expanded), vals)
    else:
        self[idx] = vals
    return self


kernel("aten::index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)")(
    _index_put
)
kernel("aten::index_put_.hacked_twin(Tensor(a!) self, Tensor[] indices, Tensor values, bool accumulate=False) "
       "-> Tensor(a!)")(_index_put)


def _index_put_fresh(self: Array, indices: Sequence[Array | None], values: Array, accumulate: bool) -> Array:
    return _index_put(self.copy(), indices, values, accumulate)


for _sig in ("(Tensor self, Tensor?[] indices", ".hacked_twin(Tensor self, Tensor[] indices"):
    kernel(f"aten::index_put{_sig}, Tensor values, bool accumulate=False) -> Tensor")(_index_put_fresh).out(
        copy_out(_index_put_fresh)
    )


@kernel("aten::index_select(Tensor self, int dim, Tensor index) -> Tensor")
def index_select(self: Array, dim: int, index: Array) -> Array:
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if self.ndim == 0:
        return np.take(self.reshape(1), index.reshape(-1)).reshape(())
    return np.take(self, index.reshape(-1), axis=norm_dim(dim, self.ndim))


index_select.out(copy_out(index_select))


def _coords(index: Array, d: int) -> list[Array]:
    grid: list[Array] = list(np.indices(index.shape, sparse=True))
    grid[d] = index
    return grid


def _check_index(self: Array, index: Array, d: int, what: str) -> None:
    if index.dtype != INT64:
        raise RuntimeError(f"{what}(): Expected dtype int64 for index")
    if index.ndim != self.ndim and not (index.ndim <= 1 and self.ndim <= 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as {what} tensor")
    for k in range(index.ndim):
        if k != d and index.shape[k] > self.shape[k]:
            raise RuntimeError(
                f"Size does not match at dimension {k} expected index {list(index.shape)} to be no larger "
                f"than self {list(self.shape)} apart from dimension {d}"
            )


@kernel("aten::gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor")
def gather(self: Array, dim: int, index: Array, sparse_grad: bool) -> Array:
    if self.ndim == 0:
        return self.reshape(1)[index.reshape(-1)].reshape(index.shape)
    d = norm_dim(dim, self.ndim)
    _check_index(self, index, d, "gather")
    return self[tuple(_coords(index, d))]


gather.out(copy_out(gather))

_REDUCE = {"add": np.add, "multiply": np.multiply, "sum": np.add, "prod": np.multiply}


def _scatter_(self: Array, dim: int, index: Array, src: Any, reduce: str | None = None) -> Array:
    if self.ndim == 0:
        flat_src = src.reshape(-1) if isinstance(src, np.ndarray) else src
        _scatter_(self.reshape(1), 0, index.reshape(-1), flat_src, reduce)
        return self
    d = norm_dim(dim, self.ndim)
    _check_index(self, index, d, "scatter")
    coords = tuple(_coords(index, d))
    if isinstance(src, np.ndarray):
        vals = src[tuple(slice(0, n) for n in index.shape)].astype(self.dtype, copy=False)
    else:
        vals = scalar_for(src, self.dtype)
    if reduce is None:
        self[coords] = vals
    elif reduce in _REDUCE:
        _REDUCE[reduce].at(self, coords, vals)
    else:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")
    return self


def _scatter_fresh(self: Array, dim: int, index: Array, src: Any, reduce: str | None = None) -> Array:
    return _scatter_(self.copy(), dim, index, src, reduce)


for _kind, _arg in (("src", "Tensor src"), ("value", "Scalar value")):
    kernel(f"aten::scatter.{_kind}(Tensor self, int dim, Tensor index, {_arg}) -> Tensor")(
        lambda self, dim, index, src: _scatter_(self.copy(), dim, index, src)
    ).out(copy_out(lambda self, dim, index, src: _scatter_(self.copy(), dim, index, src)))
    kernel(f"aten::scatter_.{_kind}(Tensor(a!) self, int dim, Tensor index, {_arg}) -> Tensor(a!)")(_scatter_)
    _r = "reduce" if _kind == "src" else "value_reduce"
    kernel(f"aten::scatter.{_r}(Tensor self, int dim, Tensor index, {_arg}, *, str reduce) -> Tensor")(
        _scatter_fresh
    ).out(copy_out(_scatter_fresh))
    kernel(f"aten::scatter_.{_r}(Tensor(a!) self, int dim, Tensor index, {_arg}, *, str reduce) -> Tensor(a!)")(
        _scatter_
    )
kernel("aten::scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor")(
    _scatter_add := lambda self, dim, index, src: _scatter_(self.copy(), dim, index, src, "add")
).out(copy_out(_scatter_add))
kernel("aten::scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)")(
    lambda self, dim, index, src: _scatter_(self, dim, index, src, "add")
)


def _masked_scatter_(self: Array, mask: Array, source: Array) -> Array:
    if mask.dtype != BOOL:
        raise RuntimeError("masked_scatter_ only supports boolean masks")
    if source.dtype != self.dtype:
        raise RuntimeError(
            f"masked_scatter: expected self and source to have same dtypes but got {self.dtype} and {source.dtype}"
        )
    full = np.broadcast_to(mask, self.shape)
    count = int(np.count_nonzero(full))
    if count > source.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    self[full] = source.reshape(-1)[:count].astype(self.dtype, copy=False)
    return self


@kernel("aten::masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor")
def masked_scatter(self: Array, mask: Array, source: Array) -> Array:
    shape = np.broadcast_shapes(self.shape, mask.shape)
    return _masked_scatter_(np.array(np.broadcast_to(self, shape)), mask, source)


masked_scatter.out(copy_out(masked_scatter))
kernel("aten::masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)")(_masked_scatter_)


@kernel("aten::masked_select(Tensor self, Tensor mask) -> Tensor", facts=Fact.DATA_DEPENDENT_SHAPE)
def masked_select(self: Array, mask: Array) -> Array:
    if mask.dtype != BOOL:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = np.broadcast_shapes(self.shape, mask.shape)
    return np.broadcast_to(self, shape)[np.broadcast_to(mask, shape)]


masked_select.out(copy_out(masked_select))


@kernel("aten::nonzero(Tensor self) -> Tensor", facts=Fact.DATA_DEPENDENT_SHAPE)
def nonzero(self: Array) -> Array:
    if self.ndim == 0:
        return np.zeros((1 if self.item() else 0, 0), INT64)
    return np.stack(np.nonzero(self), axis=1).astype(INT64, copy=False)


nonzero.out(copy_out(nonzero))


@kernel("aten::where(Tensor condition) -> Tensor[]")
def where_single(condition: Array) -> list[Array]:
    return [c.astype(INT64, copy=False) for c in np.nonzero(np.atleast_1d(condition))]


@kernel("aten::argwhere(Tensor self) -> Tensor", facts=Fact.DATA_DEPENDENT_SHAPE)
def argwhere(self: Array) -> Array:
    return np.argwhere(self).astype(INT64, copy=False)


argwhere.out(copy_out(argwhere))
