"""Rearranging kernels: diagonals, axis swaps and moves, broadcasting helpers, meshgrid,
repeat_interleave, tile, unfold, the numpy-style stacks, and ``stride``.

Views stay views: ``diagonal``, ``swapaxes``, ``mT`` and the ``broadcast_tensors`` pieces
are numpy views of their input (numpy makes ``diagonal`` and broadcast views read-only, so
an in-place write through them raises instead of silently writing elsewhere).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops._common import copy_out, norm_dim
from vm.ops._dtypes import INT64, wrap
from vm.ops.registry import Fact, kernel
from vm.ops.shape import _join_dtype

Array = np.ndarray


@kernel("aten::diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)")
def diagonal(self: Array, offset: int, dim1: int, dim2: int) -> Array:
    d1, d2 = norm_dim(dim1, self.ndim), norm_dim(dim2, self.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return np.diagonal(self, offset, d1, d2)


@kernel("aten::diag(Tensor self, int diagonal=0) -> Tensor")
def diag(self: Array, diagonal: int) -> Array:
    if self.ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")
    return np.diag(self, diagonal).copy()


diag.out(copy_out(diag))


@kernel("aten::trace(Tensor self) -> Tensor")
def trace(self: Array) -> Array:
    if self.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    if self.dtype.kind == "b":
        raise NotImplementedError("\"trace\" not implemented for 'Bool'")
    x = self.astype(INT64) if self.dtype.kind in "iu" else self
    return wrap(np.trace(x).astype(x.dtype))


trace.out(copy_out(trace))

for _name, _a, _b in (("swapaxes", "axis0", "axis1"), ("swapdims", "dim0", "dim1")):
    kernel(f"aten::{_name}(Tensor(a) self, int {_a}, int {_b}) -> Tensor(a)")(
        lambda self, a, b: self.swapaxes(norm_dim(a, self.ndim), norm_dim(b, self.ndim)) if self.ndim else self.view()
    )


@kernel("aten::movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)")
def movedim(self: Array, source: Sequence[int], destination: Sequence[int]) -> Array:
    return np.moveaxis(self, [norm_dim(d, self.ndim) for d in source], [norm_dim(d, self.ndim) for d in destination])


@kernel("aten::mT(Tensor(a) self) -> Tensor(a)")
def mT(self: Array) -> Array:
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
    return self.swapaxes(-1, -2)


kernel("aten::numpy_T(Tensor(a) self) -> Tensor(a)")(lambda self: self.T)


@kernel("aten::broadcast_tensors(Tensor[] tensors) -> Tensor[]", facts=Fact.SHAPE_ONLY_LIST)
def broadcast_tensors(tensors: Sequence[Array]) -> list[Array]:
    return list(np.broadcast_arrays(*tensors))


def _meshgrid(tensors: Sequence[Array], indexing: str) -> list[Array]:
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    return list(np.meshgrid(*[t.reshape(-1) for t in tensors], indexing=indexing, copy=False, sparse=False))


kernel("aten::meshgrid(Tensor[] tensors) -> Tensor[]", facts=Fact.SHAPE_ONLY_LIST)(lambda tensors: _meshgrid(tensors, "ij"))
kernel("aten::meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]")(_meshgrid)


def _repeat_interleave(self: Array, repeats: Any, dim: int | None, output_size: int | None) -> Array:
    reps = repeats.reshape(-1) if isinstance(repeats, np.ndarray) and repeats.ndim else (
        int(repeats) if not isinstance(repeats, np.ndarray) else int(repeats.item()))
    if dim is None:
        return np.repeat(self.reshape(-1), reps)
    return np.repeat(self, reps, axis=norm_dim(dim, self.ndim))


kernel("aten::repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) "
       "-> Tensor", facts=Fact.DATA_DEPENDENT_SHAPE)(_repeat_interleave).out(copy_out(_repeat_interleave))
kernel("aten::repeat_interleave.self_Tensor(Tensor self, Tensor repeats, int? dim=None, *, SymInt? output_size=None) "
       "-> Tensor")(_repeat_interleave).out(copy_out(_repeat_interleave))
def _repeat_index(repeats: Array, output_size: int | None) -> Array:
    return np.repeat(np.arange(repeats.size, dtype=INT64), repeats.reshape(-1))


kernel("aten::repeat_interleave.Tensor(Tensor repeats, *, SymInt? output_size=None) -> Tensor")(_repeat_index).out(
    copy_out(_repeat_index)
)


@kernel("aten::unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]", facts=Fact.SHAPE_ONLY_LIST)
def unsafe_split(self: Array, split_size: int, dim: int) -> list[Array]:
    from vm.ops.shape import split

    return split.__wrapped__(self, split_size, dim)


# ---------------------------------------------------------------------------------------
# one stride; hstack/vstack/dstack/column_stack (numpy's helpers, PyTorch's dtype rules)


@kernel("aten::stride.int(Tensor self, int dim) -> int")
def stride_int(self: np.ndarray, dim: int) -> int:
    if self.ndim == 0:
        raise IndexError("dimension specified as 0 but tensor has no dimensions")
    return self.strides[norm_dim(dim, self.ndim)] // self.itemsize


def _stacker(name: str, join: Any) -> None:
    def run(tensors: Sequence[np.ndarray]) -> np.ndarray:
        if not tensors:
            raise RuntimeError(f"{name} expects a non-empty TensorList")
        dt = _join_dtype(tensors)
        return np.ascontiguousarray(join([np.asarray(t, dtype=dt) for t in tensors]))

    run.__name__ = name
    kernel(f"aten::{name}(Tensor[] tensors) -> Tensor")(run).out(copy_out(run))


for _name, _join in (("hstack", np.hstack), ("vstack", np.vstack), ("dstack", np.dstack),
                     ("column_stack", np.column_stack)):
    _stacker(_name, _join)


@kernel("aten::tile(Tensor self, SymInt[] dims) -> Tensor")
def tile(self: Array, dims: Sequence[int]) -> Array:
    """``np.tile``: repeats per dim, fewer dims than the tensor's meaning leading 1s."""
    if any(d < 0 for d in dims):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(dims)}")
    return np.tile(self, tuple(dims)) if dims else self.copy()


tile.out(copy_out(tile))


@kernel("aten::unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)")
def unfold(self: Array, dimension: int, size: int, step: int) -> Array:
    """Every ``size``-long window along ``dimension``, ``step`` apart, as a new last dim (a view)."""
    d = norm_dim(dimension, self.ndim)
    length = self.shape[d] if self.ndim else 1
    if size < 0 or size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {length} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if self.ndim == 0:
        return self.reshape(1)[:size]
    windows = np.lib.stride_tricks.sliding_window_view(self, size, axis=d)
    return windows[(slice(None),) * d + (slice(None, None, step),)]
