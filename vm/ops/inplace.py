"""In-place forms (``foo_``) of functional kernels registered by the other families.

PyTorch gives most operators an in-place twin that computes the functional result and
writes it into ``self`` (``addmm_``, ``baddbmm_``, ``cumsum_``, ``lerp_``...).  Rather
than write each twin beside its functional kernel, this module lists the in-place
schemas as PyTorch registers them, each with the functional overload it mirrors, and
registers ``write_inplace(self, functional(self, *args))``: the result keeps ``self``'s
dtype (a float result into an integer tensor is refused, as in PyTorch) and must have
``self``'s shape (``addmm_`` cannot broadcast ``self`` up).

The functional kernels come from their family modules, imported here explicitly, so the
package's import order does not matter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import vm.ops.linalg
import vm.ops.pointwise
import vm.ops.pointwise_math
import vm.ops.reduction
import vm.ops.unary  # noqa: F401  (the functional kernels below register on import)
from vm.ops._common import write_inplace
from vm.ops.registry import find, register_op

# in-place schema (PyTorch's text) -> the functional overload it writes back
INPLACE: dict[str, str] = {
    "aten::addmm_(Tensor(a!) self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)":
        "aten::addmm",
    "aten::baddbmm_(Tensor(a!) self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor(a!)":
        "aten::baddbmm",
    "aten::clip_(Tensor(a!) self, Scalar? min=None, Scalar? max=None) -> Tensor(a!)": "aten::clip",
    "aten::cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)": "aten::cumsum",
    "aten::cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)": "aten::cumprod",
    "aten::lerp_.Scalar(Tensor(a!) self, Tensor end, Scalar weight) -> Tensor(a!)": "aten::lerp.Scalar",
    "aten::lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)": "aten::lerp.Tensor",
    "aten::logit_(Tensor(a!) self, float? eps=None) -> Tensor(a!)": "aten::logit",
    "aten::hypot_(Tensor(a!) self, Tensor other) -> Tensor(a!)": "aten::hypot",
    "aten::deg2rad_(Tensor(a!) self) -> Tensor(a!)": "aten::deg2rad",
    "aten::rad2deg_(Tensor(a!) self) -> Tensor(a!)": "aten::rad2deg",
    "aten::true_divide_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)": "aten::true_divide.Tensor",
    "aten::true_divide_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)": "aten::true_divide.Scalar",
    "aten::xlogy_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)": "aten::xlogy.Tensor",
    "aten::xlogy_.Scalar_Other(Tensor(a!) self, Scalar other) -> Tensor(a!)": "aten::xlogy.Scalar_Other",
    "aten::bitwise_left_shift_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)":
        "aten::bitwise_left_shift.Tensor",
    "aten::bitwise_left_shift_.Tensor_Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)":
        "aten::bitwise_left_shift.Tensor_Scalar",
    "aten::bitwise_right_shift_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)":
        "aten::bitwise_right_shift.Tensor",
    "aten::bitwise_right_shift_.Tensor_Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)":
        "aten::bitwise_right_shift.Tensor_Scalar",
}


def _inplace(functional: Callable[..., Any]) -> Callable[..., Any]:
    def run(self: Any, *args: Any) -> Any:
        return write_inplace(self, functional(self, *args))

    run.__name__ = f"{getattr(functional, '__name__', 'kernel')}_inplace"
    return run


def _register_all() -> None:
    for schema, functional in INPLACE.items():
        info = find(functional)
        if info is None:
            raise ImportError(f"vm.ops.inplace: {functional} is not registered (needed for {schema.split('(')[0]})")
        register_op(schema, _inplace(info.kernel))


_register_all()
