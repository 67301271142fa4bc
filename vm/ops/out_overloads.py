"""PyTorch's ``out=`` overloads (``aten::div.out(..., *, Tensor(a!) out)``) for every family.

TorchScript graphs compiled without optimization keep calls such as
``aten::norm(%x, %p, %dim, %keepdim, %out)`` from branches of library code where the
Python wrapper passes ``out=``.  Rather than write one such overload per family, this
module (named to import after the families) reads ``vm/ops/_out_schemas.py`` -- a table
generated from PyTorch's own schemas by ``tools/gen_out_schemas.py``, mapping each
registered single-Tensor operator to its real out overload, names and all -- and
registers each out schema with a kernel taking the functional arguments then ``out``.

The kernel runs the operator's out variant (``copy_out`` of the functional kernel when
the family registered none) into ``out``.  When ``out`` has the result's shape and a
dtype it can hold, the result is written there and ``out`` itself is returned, so the
caller's tensor sees the write as in PyTorch.  Otherwise PyTorch would resize ``out`` in
place (and raise on a dtype it cannot cast to); numpy cannot resize an array that other
names refer to, so the kernel returns a new array instead: the returned value is right,
but the caller's ``out`` tensor keeps its old contents -- the documented limit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vm.ops._common import copy_out
from vm.ops._out_schemas import OUT_SCHEMAS
from vm.ops.registry import _REGISTRY, OpInfo, parse_schema, register_op


def _out_overload(info: OpInfo) -> Callable[..., Any]:
    write = info.out or copy_out(info.kernel)

    def run(*args: Any) -> Any:
        return write(args[-1], *args[:-1])

    run.__name__ = f"{info.schema.name.split('::')[-1]}_out_overload"
    return run


def _register_all() -> None:
    for functional, text in OUT_SCHEMAS.items():
        info = _REGISTRY.get(functional)
        if info is None or parse_schema(text).qualified in _REGISTRY:
            continue
        if len(parse_schema(text).arguments) != len(info.schema.arguments) + 1:
            continue
        register_op(text, _out_overload(info), pure=info.pure, elementwise=False)


_register_all()
