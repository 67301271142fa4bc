"""Tensor properties and metadata queries, as TorchScript reads them off a tensor.

irvm's tensors are dense numpy arrays on the CPU, without autograd, names, conjugate or
negative bits, quantization or sparsity: so ``is_cpu`` is True and ``is_cuda``/``is_meta``/
``is_sparse``... are False, ``is_leaf`` is True and ``grad`` None (a tensor no autograd
graph produced), ``conj``/``real`` of a real tensor are the tensor itself (torch returns a
view), and of a complex one numpy's conjugate / real view.  The Hermitian transposes
(``mH``, ``H``, ``adjoint``) conjugate and transpose the last two axes with torch's checks.
The byte counts come from the numpy dtype, which matches torch's element size for every
dtype irvm holds; ``storage_offset`` is counted in elements from the start of the array
that owns the memory.
"""

from __future__ import annotations

import numpy as np

from vm.ops.registry import kernel

Array = np.ndarray

for _name, _value in (
    ("is_cpu", True), ("is_meta", False), ("is_mkldnn", False), ("is_sparse", False),
    ("is_xpu", False), ("is_mps", False), ("is_vulkan", False), ("is_ipu", False), ("is_nested", False),
):
    kernel(f"prim::{_name}(Tensor a) -> bool")(lambda a, _v=_value: _v)
for _name in ("is_conj", "is_neg", "is_inference", "retains_grad"):
    kernel(f"aten::{_name}(Tensor self) -> bool")(lambda self: False)
kernel("aten::is_leaf(Tensor self) -> bool")(lambda self: True)
kernel("aten::is_pinned(Tensor self, Device? device=None) -> bool")(lambda self, device=None: False)
kernel("prim::grad(Tensor a) -> Tensor(*)")(lambda a: None)
kernel("prim::name(Tensor a) -> str?")(lambda a: None)
kernel("prim::itemsize(Tensor a) -> int")(lambda a: int(a.dtype.itemsize))
kernel("prim::nbytes(Tensor a) -> int")(lambda a: int(a.size * a.dtype.itemsize))
kernel("aten::element_size(Tensor self) -> int")(lambda self: int(self.dtype.itemsize))
kernel("aten::is_complex(Tensor self) -> bool")(lambda self: self.dtype.kind == "c")
kernel("aten::is_signed(Tensor self) -> bool")(lambda self: self.dtype.kind in "ifc")
kernel("aten::get_device(Tensor self) -> int")(lambda self: -1)
kernel("aten::is_same_size(Tensor self, Tensor other) -> bool")(lambda self, other: self.shape == other.shape)
kernel("aten::cpu(Tensor(a) self) -> Tensor(b|a)")(lambda self: self)
kernel("aten::resolve_conj(Tensor(a) self) -> Tensor(a)")(lambda self: self)
kernel("aten::resolve_neg(Tensor(a) self) -> Tensor(a)")(lambda self: self)


@kernel("aten::storage_offset(Tensor self) -> int")
def storage_offset(self: Array) -> int:
    owner = self
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    start = owner.__array_interface__["data"][0]
    return (self.__array_interface__["data"][0] - start) // max(self.dtype.itemsize, 1)


@kernel("aten::is_set_to(Tensor self, Tensor tensor) -> bool")
def is_set_to(self: Array, tensor: Array) -> bool:
    """Same memory, at the same offset, with the same sizes and strides."""
    return (
        self.__array_interface__["data"][0] == tensor.__array_interface__["data"][0]
        and self.shape == tensor.shape and self.strides == tensor.strides and self.dtype == tensor.dtype
    )


@kernel("aten::conj(Tensor(a) self) -> Tensor(a)")
def conj(self: Array) -> Array:
    return np.conj(self) if self.dtype.kind == "c" else self


@kernel("aten::real(Tensor(a) self) -> Tensor(a)")
def real(self: Array) -> Array:
    return np.real(self) if self.dtype.kind == "c" else self  # a view of the real parts


def _adjoint(self: Array) -> Array:
    swapped = self.swapaxes(-1, -2)
    return np.conj(swapped) if self.dtype.kind == "c" else swapped


@kernel("aten::mH(Tensor(a) self) -> Tensor(a)")
def m_h(self: Array) -> Array:
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor.")
    return _adjoint(self)


@kernel("aten::matrix_H(Tensor(a) self) -> Tensor(a)")
def matrix_h(self: Array) -> Array:
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.")
    return _adjoint(self)
