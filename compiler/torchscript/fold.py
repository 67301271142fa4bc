"""What the frontend decides while compiling: None checks by type, scalar comparisons of
constants, what every irvm tensor is (strided, on the CPU: ``input.layout``,
``input.device.type``), membership in a list of constants, and ``if`` on a decided condition.

Inlining gives every value its caller's type, so much of the printed code is decided
before it runs, as TorchScript's own compiler decides it (type refinement, constant
propagation): ``bias is not None`` for a ``Tensor`` bias is True, ``not training`` for a
module in eval mode whose ``training`` no code assigns is True.  The frontend then
compiles only the arm of an ``if`` that runs -- which also keeps an operator of a
training-only path (``bernoulli_`` in stochastic depth) from failing the compile, and
the paths of an inlined library function that its constant arguments rule out (``torch.norm``
with ``p="fro"``: its ``linalg_matrix_norm`` and legacy ``frobenius_norm`` paths).

``fold(kind, inputs)`` returns the Python value of an operator call it can decide, or
``NOT_FOLDED``; ``constant_of(value)`` the value of a ``prim::Constant`` of a primitive
type, or ``NOT_FOLDED``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from compiler import types as T
from vm.ir.graph import Value

NOT_FOLDED: Any = object()

_PRIMITIVE = (T.INT, T.FLOAT, T.BOOL, T.STR, T.NONE)
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "aten::eq": operator.eq,
    "aten::ne": operator.ne,
    "aten::lt": operator.lt,
    "aten::le": operator.le,
    "aten::gt": operator.gt,
    "aten::ge": operator.ge,
}


def constant_of(value: Value) -> Any:
    """The Python value of ``value`` when a ``prim::Constant`` of a primitive type makes it."""
    node = value.node
    if node is None or node.kind != "prim::Constant" or value.type not in _PRIMITIVE:
        return NOT_FOLDED
    if value.type == T.NONE:
        return None
    raw = node.attrs.get("value", NOT_FOLDED)
    if raw is NOT_FOLDED:
        return NOT_FOLDED
    return bool(raw) if value.type == T.BOOL else raw


# what every irvm tensor is (a numpy array: strided, on the CPU), as torch's library code asks
# before choosing a path (``torch.norm`` checks ``input.layout == torch.strided``)
_TENSOR_FACTS: dict[str, Any] = {"prim::layout": 0, "prim::is_cuda": False}


def _constant_list(value: Value) -> list[Any] | None:
    """The items of a ``prim::ListConstruct`` of primitive constants, else None."""
    node = value.node
    if node is None or node.kind != "prim::ListConstruct":
        return None
    items = [constant_of(v) for v in node.inputs]
    return None if any(i is NOT_FOLDED for i in items) else items


def _never_none(t: T.Type | None) -> bool:
    return t is not None and t != T.NONE and t != T.ANY and not isinstance(t, (T.OptionalType, T.UnionType))


def fold(kind: str, inputs: list[Value]) -> Any:
    """The result of ``kind(*inputs)`` when it is decided now, else ``NOT_FOLDED``."""
    if kind in _TENSOR_FACTS and len(inputs) == 1 and isinstance(inputs[0].type, T.TensorType):
        return _TENSOR_FACTS[kind]  # every irvm tensor is strided, on the CPU
    if kind == "prim::type" and len(inputs) == 1 and inputs[0].node is not None and inputs[0].node.kind == "prim::device":
        return "cpu"
    if kind == "aten::__contains__" and len(inputs) == 2:
        items, needle = _constant_list(inputs[0]), constant_of(inputs[1])
        if items is not None and needle is not NOT_FOLDED and inputs[1].type in (T.STR, T.INT):
            return needle in items
    if kind in ("aten::__is__", "aten::__isnot__") and len(inputs) == 2:
        a, b = (v.type for v in inputs)
        if a == T.NONE and b == T.NONE:
            return kind == "aten::__is__"
        if (a == T.NONE and _never_none(b)) or (b == T.NONE and _never_none(a)):
            return kind == "aten::__isnot__"
        return NOT_FOLDED
    if kind == "aten::__not__" and len(inputs) == 1:
        v = constant_of(inputs[0])
        return NOT_FOLDED if v is NOT_FOLDED or inputs[0].type != T.BOOL else not v
    compare = _COMPARE.get(kind)
    if compare is not None and len(inputs) == 2:
        a, b = (constant_of(v) for v in inputs)
        numbers = (T.INT, T.FLOAT, T.BOOL)
        if a is NOT_FOLDED or b is NOT_FOLDED:
            return NOT_FOLDED
        types = {inputs[0].type, inputs[1].type}
        if types <= set(numbers) or types == {T.STR}:
            return bool(compare(a, b))
    return NOT_FOLDED


def assigns_training(lines: dict[str, list[str]]) -> bool:
    """True when some code of the archive assigns a ``training`` attribute (then a
    module's ``training`` is not a constant of the program)."""
    return any(".training =" in line or "setattr(" in line for file in lines.values() for line in file)
