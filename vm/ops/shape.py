"""Shape and view kernels: size queries, views, reshapes, joins and splits, dtype moves.

PyTorch's views share storage with their base; numpy's basic slicing, ``reshape`` (when
the strides allow), ``transpose``, ``swapaxes``, ``expand_dims`` and ``broadcast_to``
return views too, so every op whose schema says ``Tensor(a)`` returns a numpy view of its
input and a later in-place op on the view (``x[1:3] = y`` is ``slice`` + ``copy_``)
writes through to the base, as in PyTorch.  The cases to watch:

- ``select`` on a 1-d array must not return a numpy scalar (a copy): indexing with a
  trailing ``...`` keeps it a 0-dim view;
- ``view`` must never copy: ``np.reshape(..., copy=False)`` raises where PyTorch's view
  would ("view size is not compatible with input tensor's size and stride");
- ``expand`` is ``np.broadcast_to``, which is read-only (writing into an expanded tensor
  is an error in PyTorch as well);
- ``to`` returns its input itself when nothing changes and ``copy`` is False.

Joins (``cat``, ``stack``) promote their inputs' dtypes as PyTorch does; ``cat`` skips
the legacy 1-d empty tensors PyTorch skips.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops._common import copy_out, into, norm_dim, norm_dims
from vm.ops._dtypes import result_type, to_dtype
from vm.ops.registry import Fact, kernel

Array = np.ndarray

# ---------------------------------------------------------------------------------------
# size queries


@kernel("aten::size(Tensor self) -> int[]", facts=Fact.SHAPE_QUERY)
def size(self: Array) -> list[int]:
    return list(self.shape)


@kernel("aten::size.int(Tensor self, int dim) -> int", facts=Fact.SHAPE_QUERY)
def size_int(self: Array, dim: int) -> int:
    if self.ndim == 0:
        raise IndexError("dimension specified as 0 but tensor has no dimensions")
    return self.shape[norm_dim(dim, self.ndim)]


@kernel("aten::dim(Tensor self) -> int", facts=Fact.SHAPE_QUERY)
def dim(self: Array) -> int:
    return self.ndim


@kernel("aten::numel(Tensor self) -> int", facts=Fact.SHAPE_QUERY)
def numel(self: Array) -> int:
    return self.size


@kernel("aten::stride(Tensor self) -> int[]")
def stride(self: Array) -> list[int]:
    return [s // self.itemsize for s in self.strides]


@kernel("aten::is_contiguous(Tensor self) -> bool")
def is_contiguous(self: Array) -> bool:
    return bool(self.flags.c_contiguous)


# ---------------------------------------------------------------------------------------
# views of the same elements


def _infer_shape(shape: Sequence[int], numel: int) -> tuple[int, ...]:
    shape = tuple(shape)
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


@kernel("aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)")
def view(self: Array, size: Sequence[int]) -> Array:
    try:
        r = self.reshape(size)  # numpy infers -1 and checks the element count
    except ValueError:
        r = np.reshape(self, _infer_shape(size, self.size))  # PyTorch's message
    owner = self if self.base is None else self.base
    if r.base is owner or r.size == 0 or self.flags.c_contiguous or np.may_share_memory(r, self):
        return r
    raise RuntimeError(
        "view size is not compatible with input tensor's size and stride (at least one dimension "
        "spans across two contiguous subspaces). Use .reshape(...) instead."
    )


@kernel("aten::reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)")
def reshape(self: Array, shape: Sequence[int]) -> Array:
    try:
        return self.reshape(shape)
    except ValueError:
        return np.reshape(self, _infer_shape(shape, self.size))  # raises PyTorch's message


kernel("aten::view_as(Tensor(a) self, Tensor other) -> Tensor(a)")(lambda self, other: view(self, other.shape))
kernel("aten::reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)")(lambda self, other: reshape(self, other.shape))


@kernel("aten::flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)")
def flatten(self: Array, start_dim: int, end_dim: int) -> Array:
    if self.ndim == 0:
        return self.reshape(1)
    s, e = norm_dim(start_dim, self.ndim), norm_dim(end_dim, self.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = self.shape[:s] + (math.prod(self.shape[s : e + 1]),) + self.shape[e + 1 :]
    return self.reshape(shape)


@kernel("aten::unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)")
def unflatten(self: Array, dim: int, sizes: Sequence[int]) -> Array:
    d = norm_dim(dim, self.ndim)
    inner = _infer_shape(sizes, self.shape[d])
    return self.reshape(self.shape[:d] + inner + self.shape[d + 1 :])


@kernel("aten::t(Tensor(a) self) -> Tensor(a)")
def t(self: Array) -> Array:
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self.T


@kernel("aten::transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")
def transpose(self: Array, dim0: int, dim1: int) -> Array:
    if self.ndim == 0:
        norm_dim(dim0, 0)  # raises for a dim other than -1 or 0, as torch does
        norm_dim(dim1, 0)
        return self.view()
    return self.swapaxes(norm_dim(dim0, self.ndim), norm_dim(dim1, self.ndim))


@kernel("aten::permute(Tensor(a) self, int[] dims) -> Tensor(a)")
def permute(self: Array, dims: Sequence[int]) -> Array:
    if len(dims) != self.ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the length of "
            f"the desired ordering of dimensions i.e. input.dim() = {self.ndim} is not equal to len(dims) = {len(dims)}"
        )
    return np.transpose(self, norm_dims(dims, self.ndim)) if self.ndim else self.view()


@kernel("aten::movedim.int(Tensor(a) self, int source, int destination) -> Tensor(a)")
def movedim(self: Array, source: int, destination: int) -> Array:
    return np.moveaxis(self, norm_dim(source, self.ndim), norm_dim(destination, self.ndim))


@kernel("aten::unsqueeze(Tensor(a) self, int dim) -> Tensor(a)")
def unsqueeze(self: Array, dim: int) -> Array:
    return self[(slice(None),) * norm_dim(dim, self.ndim + 1) + (None, Ellipsis)]


@kernel("aten::squeeze(Tensor(a) self) -> Tensor(a)")
def squeeze(self: Array) -> Array:
    return np.squeeze(self) if 1 in self.shape else self.view()


@kernel("aten::squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)")
def squeeze_dim(self: Array, dim: int) -> Array:
    d = norm_dim(dim, self.ndim)
    return np.squeeze(self, d) if self.ndim and self.shape[d] == 1 else self.view()


@kernel("aten::squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)")
def squeeze_dims(self: Array, dim: Sequence[int]) -> Array:
    axes = tuple(d for d in norm_dims(dim, self.ndim) if self.ndim and self.shape[d] == 1) if dim else ()
    return np.squeeze(self, axes) if axes else self.view()


@kernel("aten::expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)")
def expand(self: Array, size: Sequence[int], implicit: bool) -> Array:
    if len(size) < self.ndim:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(size)}) must be greater or equal to the number "
            f"of dimensions in the tensor ({self.ndim})"
        )
    lead = len(size) - self.ndim
    shape = tuple(
        (self.shape[i - lead] if s == -1 else s) if i >= lead else s for i, s in enumerate(size)
    )
    if -1 in shape[:lead]:
        raise RuntimeError("expand: -1 is not allowed in a leading, non-existing dimension")
    return broadcast_view(self, shape)


def broadcast_view(x: Array, shape: tuple[int, ...]) -> Array:
    """``np.broadcast_to(x, shape)``, built directly when ``x`` is C-contiguous: the same
    read-only view with numpy's strides (0 on broadcast and size-1 axes) in ~1 us instead
    of ~5 (BERT-tiny expands its masks three times a call); otherwise numpy's own."""
    lead = len(shape) - x.ndim
    if lead < 0 or not x.flags.c_contiguous or not all(s > 0 for s in shape):
        return np.broadcast_to(x, shape)
    strides = [0] * lead
    for a, b, st in zip(x.shape, shape[lead:], x.strides):
        if a != b and a != 1:
            return np.broadcast_to(x, shape)  # raises numpy's message
        strides.append(0 if a != b or b == 1 else st)
    view = np.ndarray(shape, x.dtype, x, 0, tuple(strides))
    view.flags.writeable = False
    return view


kernel("aten::expand_as(Tensor(a) self, Tensor other) -> Tensor(a)")(
    lambda self, other: broadcast_view(self, other.shape)
)


@kernel("aten::contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)")
def contiguous(self: Array, memory_format: int) -> Array:
    return self if self.flags.c_contiguous else self.copy()


@kernel("aten::detach(Tensor(a) self) -> Tensor(a)")
def detach(self: Array) -> Array:
    return self.view()


kernel("aten::alias(Tensor(a) self) -> Tensor(a)")(lambda self: self.view())
kernel("aten::detach_(Tensor(a!) self) -> Tensor(a!)")(lambda self: self)


# ---------------------------------------------------------------------------------------
# slicing views


@kernel("aten::select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)")
def select(self: Array, dim: int, index: int) -> Array:
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = norm_dim(dim, self.ndim)
    n = self.shape[d]
    if index < -n or index >= n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self.shape)} at dimension {d}")
    return self[(slice(None),) * d + (index, Ellipsis)]


@kernel("aten::slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor(a)")
def slice_(self: Array, dim: int, start: int | None, end: int | None, step: int) -> Array:
    if self.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    d = norm_dim(dim, self.ndim)
    return self[(slice(None),) * d + (slice(start, end, step),)]


@kernel("aten::narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)")
def narrow(self: Array, dim: int, start: Any, length: int) -> Array:
    d = norm_dim(dim, self.ndim)
    n = self.shape[d]
    start = int(start)
    if start < 0:
        start += n
    if start < 0 or start + length > n or length < 0:
        raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return self[(slice(None),) * d + (slice(start, start + length),)]


kernel("aten::narrow.Tensor(Tensor(a) self, int dim, Tensor start, SymInt length) -> Tensor(a)")(narrow.__wrapped__)


def _pieces(self: Array, dim: int, sizes: Sequence[int]) -> list[Array]:
    d = norm_dim(dim, self.ndim)
    if sum(sizes) != self.shape[d]:
        raise RuntimeError(
            f"split_with_sizes expects split_sizes to sum exactly to {self.shape[d]} (input tensor's size at "
            f"dimension {d}), but got split_sizes={list(sizes)}"
        )
    out, at, lead = [], 0, (slice(None),) * d
    for s in sizes:
        out.append(self[lead + (slice(at, at + s),)])
        at += s
    return out


@kernel("aten::split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", facts=Fact.SHAPE_ONLY_LIST)
def split(self: Array, split_size: int, dim: int) -> list[Array]:
    n = self.shape[norm_dim(dim, self.ndim)]
    if split_size <= 0:
        if n == 0 and split_size == 0:
            return [self.view()]
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    sizes = [split_size] * (n // split_size) + ([n % split_size] if n % split_size else [])
    return _pieces(self, dim, sizes or [0])


for _sig in ("split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0)",
             "split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0)"):
    kernel(f"aten::{_sig} -> Tensor(a)[]", facts=Fact.SHAPE_ONLY_LIST)(lambda self, sizes, dim: _pieces(self, dim, sizes))


@kernel("aten::chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", facts=Fact.SHAPE_ONLY_LIST)
def chunk(self: Array, chunks: int, dim: int) -> list[Array]:
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0")
    n = self.shape[norm_dim(dim, self.ndim)]
    return split(self, -(-n // chunks), dim) if n else [self.view() for _ in range(chunks)]


@kernel("aten::unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", facts=Fact.SHAPE_ONLY_LIST)
def unbind(self: Array, dim: int) -> list[Array]:
    d = norm_dim(dim, self.ndim)
    lead = (slice(None),) * d
    return [self[lead + (i, Ellipsis)] for i in range(self.shape[d])]


# ---------------------------------------------------------------------------------------
# joins and copies


def _join_dtype(tensors: Sequence[Array]) -> np.dtype[Any]:
    dt = tensors[0].dtype
    for x in tensors[1:]:
        if x.dtype != dt:
            return result_type(*[x.reshape(-1) if x.ndim == 0 else x for x in tensors])
    return dt


@kernel("aten::cat(Tensor[] tensors, int dim=0) -> Tensor")
def cat(tensors: Sequence[Array], dim: int) -> Array:
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    dt = _join_dtype(tensors)
    parts = [x for x in tensors if not (x.ndim == 1 and x.shape[0] == 0)]
    if not parts:
        return np.empty((0,), dt)
    for x in parts:
        if x.ndim == 0:
            raise RuntimeError("zero-dimensional tensor cannot be concatenated")
    return np.concatenate(parts, axis=norm_dim(dim, parts[0].ndim), dtype=dt)


@cat.out
def cat_out(buf: Array, tensors: Sequence[Array], dim: int) -> Array:
    parts = [x for x in tensors if not (x.ndim == 1 and x.shape[0] == 0)]
    if tensors and buf.dtype == _join_dtype(tensors):
        if not parts:
            return buf if buf.shape == (0,) else cat(tensors, dim)
        if buf.ndim == parts[0].ndim and buf.ndim:
            d = norm_dim(dim, buf.ndim)
            shape = list(parts[0].shape)
            shape[d] = sum(x.shape[d] for x in parts)
            if tuple(shape) == buf.shape:
                return np.concatenate(parts, axis=d, out=buf)
    return into(buf, cat(tensors, dim))


@kernel("aten::stack(Tensor[] tensors, int dim=0) -> Tensor")
def stack(tensors: Sequence[Array], dim: int) -> Array:
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    return np.stack(tensors, axis=norm_dim(dim, tensors[0].ndim + 1), dtype=_join_dtype(tensors))


stack.out(copy_out(stack))


@kernel("aten::repeat(Tensor self, SymInt[] repeats) -> Tensor")
def repeat(self: Array, repeats: Sequence[int]) -> Array:
    if len(repeats) < self.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
        )
    x = self.reshape((1,) * (len(repeats) - self.ndim) + self.shape)
    return np.tile(x, tuple(repeats)).copy() if len(repeats) else self.copy()


repeat.out(copy_out(repeat))


@kernel("aten::flip(Tensor self, int[] dims) -> Tensor")
def flip(self: Array, dims: Sequence[int]) -> Array:
    return np.flip(self, norm_dims(dims, self.ndim) if dims else ()).copy()


flip.out(copy_out(flip))


@kernel("aten::roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor")
def roll(self: Array, shifts: Sequence[int], dims: Sequence[int]) -> Array:
    if len(shifts) != max(len(dims), 1):
        raise RuntimeError(f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims: {len(dims)}")
    if not dims:
        return np.roll(self.reshape(-1), shifts[0]).reshape(self.shape)
    return np.roll(self, tuple(shifts), tuple(norm_dim(d, self.ndim) for d in dims))


roll.out(copy_out(roll))


@kernel("aten::clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor")
def clone(self: Array, memory_format: Any) -> Array:
    return self.copy()


@clone.out
def clone_out(buf: Array, self: Array, memory_format: Any) -> Array:
    if buf.shape == self.shape and buf.dtype == self.dtype:
        np.copyto(buf, self)
        return buf
    return self.copy()


def _copy_into(self: Array, src: Any) -> Array:
    if not self.flags.writeable:
        raise RuntimeError(
            "unsupported operation: more than one element of the written-to tensor refers to a single "
            "memory location. Please clone() the tensor before performing the operation."
        )
    np.copyto(self, src, casting="unsafe")
    return self


kernel("aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)")(
    lambda self, src, non_blocking: _copy_into(self, src)
)
kernel("aten::copy_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)")(_copy_into)
kernel("aten::copy_.int(Tensor(a!) self, int other) -> Tensor(a!)")(_copy_into)
kernel("aten::copy_.float(Tensor(a!) self, float other) -> Tensor(a!)")(_copy_into)


def _fill(self: Array, value: Any) -> Array:
    if type(value) is np.ndarray and value.ndim != 0:
        raise RuntimeError(
            f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions."
        )
    return _copy_into(self, value)


kernel("aten::fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)")(_fill)
kernel("aten::fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)")(_fill)
kernel("aten::zero_(Tensor(a!) self) -> Tensor(a!)")(lambda self: _copy_into(self, 0))


# ---------------------------------------------------------------------------------------
# dtype conversion: the `to` family (x.float() prints as aten::to(%x, 6, False, False, None))


def _to(self: Array, dtype: int | None, copy: bool) -> Array:
    dt = self.dtype if dtype is None else to_dtype(dtype)
    if dt == self.dtype:
        return self.copy() if copy else self
    return self.astype(dt)


def _check_device(device: Any) -> None:
    if device is not None and not str(device).startswith("cpu"):
        raise RuntimeError(f"irvm runs on the CPU only; cannot move a tensor to {device!r}")


kernel("aten::to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
       "MemoryFormat? memory_format=None) -> Tensor(a)")(lambda self, dtype, nb, copy, mf: _to(self, dtype, copy))
kernel("aten::to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, "
       "MemoryFormat? memory_format=None) -> Tensor(a)")(
    lambda self, device, dtype, nb, copy, mf: (_check_device(device), _to(self, dtype, copy))[1]
)
kernel("aten::to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, "
       "MemoryFormat? memory_format=None) -> Tensor(a)")(
    lambda self, other, nb, copy, mf: self.copy() if copy and other.dtype == self.dtype else (
        self if other.dtype == self.dtype else self.astype(other.dtype))
)
kernel("aten::to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) -> Tensor(a)")(
    lambda self, dtype, layout, device, pin, nb, copy, mf: (_check_device(device), _to(self, dtype, copy))[1]
)
kernel("aten::to.prim_Device(Tensor(a) self, Device? device, int? dtype=None, bool non_blocking=False, "
       "bool copy=False) -> Tensor(b|a)")(
    lambda self, device, dtype, nb, copy: (_check_device(device), _to(self, dtype, copy))[1]
)
kernel("aten::to.prim_dtype(Tensor(a) self, int? dtype=None, bool non_blocking=False, bool copy=False) -> Tensor(b|a)")(
    lambda self, dtype, nb, copy: _to(self, dtype, copy)
)
kernel("aten::to.prim_other(Tensor(a) self, bool non_blocking=False, bool copy=False) -> Tensor(b|a)")(
    lambda self, nb, copy: self.copy() if copy else self
)
kernel("aten::type_as(Tensor self, Tensor other) -> Tensor", elementwise=True)(
    _type_as := lambda self, other: self if self.dtype == other.dtype else self.astype(other.dtype)
).out(copy_out(_type_as))
kernel("aten::view.dtype(Tensor(a) self, ScalarType dtype) -> Tensor(a)")(
    lambda self, dtype: self.view(to_dtype(dtype))
)

