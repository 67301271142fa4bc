"""Linear algebra kernels: mm, bmm, matmul, addmm, linear, dot, mv, outer,
baddbmm, einsum, and the triangular masks tril/triu.

numpy's ``matmul`` already has PyTorch's ``matmul`` rules (1-d operands are promoted to
a matrix and the added dim removed again; leading dims broadcast), and both hand float32
and float64 products to BLAS, so results agree to float32 rounding.  PyTorch does *not*
promote across dtypes in matrix products (``mm`` of float32 and float64 is an error), and
neither do these kernels: numpy would silently compute in float64.

``linear``, and ``matmul`` of an N-d tensor by a matrix, run as one gemm on the input
seen as a matrix of rows (``flat_matmul``), not one gemm per matrix of the stack.
``addmm`` and ``linear`` write the product into the result and add the bias in place,
one temporary fewer than ``a @ b + c``; ``beta == 0`` ignores ``self`` entirely (NaNs in
it do not propagate), as PyTorch documents.  Out variants use ``np.matmul(out=...)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from vm.ops._common import copy_out, into
from vm.ops._dtypes import dtype_name, result_type, scalar_for, to_code, wrap
from vm.ops.registry import DtypeRule, Fact, FastCall, Weights, WeightShapes, declare, kernel

Array = np.ndarray


def _same_dtype(a: Array, b: Array, what: str = "m1 and m2") -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(
            f"expected {what} to have the same dtype, but got: "
            f"{dtype_name(to_code(a.dtype))} != {dtype_name(to_code(b.dtype))}"
        )


def _need_dims(x: Array, n: int, op: str, name: str) -> None:
    if x.ndim != n:
        raise RuntimeError(f"{op}: {name} must be a {n}D tensor (got {x.ndim}D)")


def gemm(a: Array, b: Array, out: Array | None = None, bias: Array | None = None) -> Array:
    """``a @ b`` (plus ``bias``, a row of the result's width and dtype, when given) for 2-d
    float operands of one dtype, as one BLAS call.

    With a few rows in ``a`` (2 to 32: a linear layer on a short sequence, a ConvNeXt
    stage on a 2x2 plane) against a big ``b``, OpenBLAS's sgemm is 1.5-1.7x faster
    producing the transposed product ``b^T a^T`` (few columns) than ``a b`` (few rows):
    that is what runs, and its small result is copied into place transposed.  With 16 rows
    or more it also pays against a small ``b`` that is wide and stored transposed (a
    linear layer's ``weight.T``: (16, 64) @ (64, 192) 7.5 -> 6.1 us, (64, 256) 9.6 ->
    7.5 us, (128, 384) 25.9 -> 17.7 us); against a C-contiguous small ``b`` (``addmm``'s
    (K, N) weight), a narrow one, or with 2 to 8 rows the plain order stays faster."""
    rows = a.shape[0]
    wide_t = rows >= 16 and b.shape[1] >= _WIDE and b.strides[0] == b.itemsize
    if 2 <= rows <= _FEW_ROWS and (b.size >= _FEW_ROWS_FROM or wide_t) and a.dtype == b.dtype and a.dtype.kind == "f":
        prod = np.matmul(b.T, a.T)
        res = np.empty(prod.shape[::-1], prod.dtype) if out is None else out
        if bias is None:
            np.copyto(res, prod.T)
        else:  # the transposing copy adds the bias: one pass over the result, not two
            np.add(prod.T, bias, out=res)
        return res
    res = np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    if bias is not None:
        np.add(res, bias, out=res)
    return res


# the products take their tensors of one dtype, and return a fresh tensor an activation may
# overwrite in place (``fold_epilogues``)
_PRODUCT = {"dtypes": DtypeRule((0, 1)), "facts": Fact.TAKES_EPILOGUE}
_ADDED = {"dtypes": DtypeRule((0, 1, 2)), "facts": Fact.TAKES_EPILOGUE}  # ... a bias (self) with them

_FEW_ROWS = 32
_FEW_ROWS_FROM = 32768  # elements of b; below, the plain product is as fast ...
_WIDE = 96  # ... but for 16 rows or more against this many columns stored transposed


@kernel("aten::mm(Tensor self, Tensor mat2) -> Tensor", **_PRODUCT)
def mm(self: Array, mat2: Array) -> Array:
    _need_dims(self, 2, "mm", "self")
    _need_dims(mat2, 2, "mm", "mat2")
    _same_dtype(self, mat2)
    return gemm(self, mat2)


@mm.out
def mm_out(buf: Array, self: Array, mat2: Array) -> Array:
    r_shape = (self.shape[0], mat2.shape[1]) if self.ndim == 2 and mat2.ndim == 2 else None
    if r_shape == buf.shape and buf.dtype == self.dtype == mat2.dtype:
        return gemm(self, mat2, out=buf)
    return into(buf, mm(self, mat2))


@kernel("aten::bmm(Tensor self, Tensor mat2) -> Tensor", **_PRODUCT)
def bmm(self: Array, mat2: Array) -> Array:
    _need_dims(self, 3, "bmm", "batch1")
    _need_dims(mat2, 3, "bmm", "batch2")
    _same_dtype(self, mat2)
    return np.matmul(self, mat2)


@bmm.out
def bmm_out(buf: Array, self: Array, mat2: Array) -> Array:
    if self.ndim == 3 and mat2.ndim == 3 and buf.dtype == self.dtype == mat2.dtype and (
        buf.shape == (self.shape[0], self.shape[1], mat2.shape[2]) and self.shape[0] == mat2.shape[0]
    ):
        return np.matmul(self, mat2, out=buf)
    return into(buf, bmm(self, mat2))


@kernel("aten::matmul(Tensor self, Tensor other) -> Tensor", **_PRODUCT)
def matmul(self: Array, other: Array) -> Array:
    if self.ndim == 0 or other.ndim == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {self.ndim}D and {other.ndim}D"
        )
    _same_dtype(self, other, "both arguments")
    if self.ndim > 2 and other.ndim == 2 and self.shape[-1] == other.shape[0]:
        return flat_matmul(self, other)
    return wrap(np.matmul(self, other))


@matmul.out
def matmul_out(buf: Array, self: Array, other: Array) -> Array:
    if self.ndim > 2 and other.ndim == 2 and buf.flags.c_contiguous and buf.dtype == self.dtype == other.dtype and (
        buf.shape == self.shape[:-1] + other.shape[1:] and self.shape[-1] == other.shape[0]
    ):
        return flat_matmul(self, other, out=buf)
    if self.ndim >= 2 and other.ndim >= 2 and buf.dtype == self.dtype == other.dtype:
        shape = np.broadcast_shapes(self.shape[:-2], other.shape[:-2]) + (self.shape[-2], other.shape[-1])
        if shape == buf.shape:
            return np.matmul(self, other, out=buf)
    return into(buf, matmul(self, other))


def _add_scaled(prod: Array, bias: Array | None, beta: Any, alpha: Any, blas: bool = False) -> Array:
    t = prod.dtype
    if alpha == 0 and blas:  # addmm is one BLAS gemm: alpha == 0 never reads the product
        prod[...] = 0
    elif alpha != 1:
        np.multiply(prod, scalar_for(alpha, t), out=prod)
    if bias is not None and beta != 0:
        b = bias if beta == 1 else np.multiply(bias, scalar_for(beta, t))
        trailing = b.ndim <= prod.ndim and b.shape == prod.shape[prod.ndim - b.ndim :]  # the usual bias
        if trailing or np.broadcast_shapes(b.shape, prod.shape) == prod.shape:
            np.add(prod, b, out=prod, casting="unsafe")
        else:
            prod = prod + b
    return prod


@kernel("aten::addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", **_ADDED)
def addmm(self: Array, mat1: Array, mat2: Array, beta: Any, alpha: Any) -> Array:
    _same_dtype(self, mat1, "self and mat1")
    return _add_scaled(mm(mat1, mat2), self, beta, alpha, blas=True)


@addmm.out
def addmm_out(buf: Array, self: Array, mat1: Array, mat2: Array, beta: Any, alpha: Any) -> Array:
    if mat1.ndim == 2 and mat2.ndim == 2 and buf.shape == (mat1.shape[0], mat2.shape[1]) and (
        buf.dtype == mat1.dtype == mat2.dtype == self.dtype
    ):
        if beta == 1 and alpha == 1 and _row_bias(self, buf.dtype, buf.shape[1]):
            return gemm(mat1, mat2, out=buf, bias=self)
        return _add_scaled(gemm(mat1, mat2, out=buf), self, beta, alpha, blas=True)
    return into(buf, addmm(self, mat1, mat2, beta, alpha))


def _rows(x: Array) -> Array:
    """``x`` as a 2-d matrix of its last axis (a view when the layout allows, else one
    copy), with unit stride along the rows so BLAS takes it: numpy's matmul runs a
    non-BLAS loop on operands without a unit stride, and on stacked operands it calls one
    gemm per matrix of the stack."""
    x2 = x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) if x.ndim != 2 else x
    if x2.strides[-1] != x2.itemsize and x2.strides[0] != x2.itemsize:
        x2 = np.ascontiguousarray(x2)
    return x2


def flat_matmul(x: Array, w: Array, out: Array | None = None, bias: Array | None = None) -> Array:
    """``x @ w`` (plus ``bias``, as for ``gemm``) for an N-d ``x`` and a 2-d ``w`` as one
    BLAS gemm on ``x`` seen as rows; ``out``, when given, is a C-contiguous array of the
    result's shape and dtype."""
    shape = x.shape[:-1] + (w.shape[1],)
    x2 = _rows(x)
    if out is None:
        return gemm(x2, w, bias=bias).reshape(shape)
    gemm(x2, w, out=out.reshape(x2.shape[0], w.shape[1]), bias=bias)
    return out


def _row_bias(bias: Array | None, prod_dtype: np.dtype, width: int) -> bool:
    """Whether ``bias`` is the usual one: a vector of the product's width and dtype."""
    return bias is not None and bias.shape == (width,) and bias.dtype == prod_dtype


@kernel(
    "aten::linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",
    weights=Weights(features_last=True, folds_batch_norm=True, transposed_weight=True, infers_input=True),
    weight_shapes=WeightShapes(1, (("out", -1, 0), ("in", -1, 1))),
    **_ADDED,
)
def linear(input: Array, weight: Array, bias: Array | None) -> Array:
    if input.dtype is not weight.dtype:
        _same_dtype(input, weight, "input and weight")
    if input.ndim >= 2 and weight.ndim == 2 and input.shape[-1] == weight.shape[1]:
        prod = flat_matmul(input, weight.T)
    else:
        prod = input @ weight.T
    if type(prod) is not np.ndarray:
        return wrap(prod + bias if bias is not None else prod)
    if bias is not None:
        if bias.ndim <= prod.ndim and bias.dtype is prod.dtype:
            prod += bias
        else:
            prod = prod + bias
    return prod


@linear.out
def linear_out(buf: Array, input: Array, weight: Array, bias: Array | None) -> Array:
    if input.ndim >= 2 and weight.ndim == 2 and buf.dtype == input.dtype == weight.dtype and (
        buf.shape == input.shape[:-1] + (weight.shape[0],) and input.shape[-1] == weight.shape[1]
    ):
        if buf.flags.c_contiguous:
            if _row_bias(bias, buf.dtype, buf.shape[-1]):
                return flat_matmul(input, weight.T, out=buf, bias=bias)
            return _add_scaled(flat_matmul(input, weight.T, out=buf), bias, 1, 1)
        return _add_scaled(np.matmul(input, weight.T, out=buf), bias, 1, 1)
    return into(buf, linear(input, weight, bias))


def linear_fast(x: Array, w: Array, b: Array, out: Array | None = None) -> Array:
    """``linear`` for a 2-d float input, a 2-d weight and a 1-d bias of one dtype, as the
    static runtime calls it once a plan fixes those shapes (``vm.static.fastpath``): the
    kernel's own two calls (the product, then the bias added in place), so its bits; the
    bias as a (1, n) view, which numpy adds ~0.4 us faster than a broadcast 1-d one."""
    prod = np.matmul(x, w.T, out=out)
    return np.add(prod, b.reshape(1, -1), out=prod)


declare("aten::linear", fast=(FastCall(linear_fast, (0, 1, 2), matrices=True),))


@kernel("aten::dot(Tensor self, Tensor tensor) -> Tensor", dtypes=DtypeRule((0, 1)))
def dot(self: Array, tensor: Array) -> Array:
    if self.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {tensor.ndim}D tensors")
    _same_dtype(self, tensor, "both vectors")
    if self.shape != tensor.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{self.size}] and src [{tensor.size}] to have the same "
            f"number of elements, but got {self.size} and {tensor.size} elements respectively"
        )
    return wrap(np.dot(self, tensor))


dot.out(copy_out(dot))
kernel("aten::vdot(Tensor self, Tensor other) -> Tensor")(dot.__wrapped__).out(copy_out(dot.__wrapped__))


@kernel("aten::mv(Tensor self, Tensor vec) -> Tensor", dtypes=DtypeRule((0, 1)))
def mv(self: Array, vec: Array) -> Array:
    _need_dims(self, 2, "mv", "self")
    _need_dims(vec, 1, "mv", "vec")
    _same_dtype(self, vec, "self and vec")
    return np.matmul(self, vec)


mv.out(copy_out(mv))


@kernel("aten::outer(Tensor self, Tensor vec2) -> Tensor")
def outer(self: Array, vec2: Array) -> Array:
    dt = result_type(self, vec2)
    return np.multiply.outer(self.astype(dt, copy=False), vec2.astype(dt, copy=False))


outer.out(copy_out(outer))


@kernel("aten::baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        **_ADDED)
def baddbmm(self: Array, batch1: Array, batch2: Array, beta: Any, alpha: Any) -> Array:
    _same_dtype(self, batch1, "self and batch1")
    return _add_scaled(bmm(batch1, batch2), self, beta, alpha)


baddbmm.out(copy_out(baddbmm))


@lru_cache(maxsize=64)
def _einsum_path(n: int) -> list[Any]:
    """Left to right, as torch.einsum contracts without opt_einsum (the order decides
    where 0 * inf becomes nan, so it is part of the semantics)."""
    return ["einsum_path"] + [(0, 1)] * (n - 1)


@kernel("aten::einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor")
def einsum(equation: str, tensors: Sequence[Array], path: Sequence[int] | None) -> Array:
    eq = equation.replace(" ", "")
    dt = tensors[0].dtype
    for x in tensors[1:]:
        _same_dtype(tensors[0], x, "all operands")
    if len(tensors) <= 2:
        return wrap(np.einsum(eq, *tensors, optimize=len(tensors) == 2 and _big(tensors)))
    opt = _einsum_path(len(tensors))
    return wrap(np.asarray(np.einsum(eq, *tensors, optimize=opt), dtype=dt))


def _big(tensors: Sequence[Array]) -> bool:
    """Whether BLAS (einsum's optimize=True) pays for its planning overhead."""
    return tensors[0].size * tensors[1].size > 4096


einsum.out(copy_out(einsum))


# ---------------------------------------------------------------------------------------
# triangular masks


def _tri(fn: Any, name: str) -> Any:
    def run(self: Array, diagonal: int) -> Array:
        if self.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return fn(self, diagonal)

    return run


for _name, _fn in (("tril", np.tril), ("triu", np.triu)):
    _run = _tri(_fn, _name)
    kernel(f"aten::{_name}(Tensor self, SymInt diagonal=0) -> Tensor")(_run).out(copy_out(_run))

    def _inplace(self: Array, diagonal: int, _r: Any = _run) -> Array:
        np.copyto(self, _r(self, diagonal))
        return self

    kernel(f"aten::{_name}_(Tensor(a!) self, SymInt diagonal=0) -> Tensor(a!)")(_inplace)

