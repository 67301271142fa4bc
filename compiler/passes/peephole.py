"""Peephole rewrites: a few local identities, each applied only where it provably keeps
the value, its dtype and its shape.

From TorchScript's ``peephole.cpp`` we keep the rewrites that are safe on our typed IR:

- ``x.t().t()`` -> ``x`` (for a tensor whose rank is known to be 2: ``t`` of a 1-d tensor
  is itself, and we do not guess);
- ``x.type_as(y)`` -> ``x`` when both types carry the same dtype;
- ``x * 1``, ``x / 1``, ``x + 0``, ``x - 0`` (a constant int or float scalar, ``alpha``
  absent or the constant 1) -> ``x`` when ``x`` is known to be a floating-point tensor
  (then a Python scalar cannot change its dtype, and the shape is ``x``'s own);
- ``a is None`` / ``a is not None`` -> a bool constant when the types decide it (both
  ``NoneType``, or one ``NoneType`` and the other a type that cannot hold None);
- ``dropout(x, p, False)`` and its feature / alpha / in-place kin -> ``x`` when ``p`` is a
  constant in [0, 1] (ATen returns the input itself then; torch.jit.freeze's
  ``removeDropout``): dropout is random, hence impure, and would otherwise stay.

A rewrite that replaces a fresh result by its input would make a later in-place write to
the result visible through the input, so the arithmetic identities are skipped when the
result may be written.  As in PyTorch, dead code is eliminated after the rewrites (they
leave the producers of their operands unused); the constants a rewrite creates are left
for pooling.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler import types as T
from compiler.passes import Target, apply_to_clone, lazy_is_written, note
from compiler.passes.eliminate_dead_code import sweep_dead_code
from vm.ir.graph import FreshNames, Graph, Node, Value

_FLOAT_DTYPES = frozenset({"Float", "Double", "Half", "BFloat16"})
_IDENTITY_SCALAR = {"aten::mul": 1, "aten::div": 1, "aten::add": 0, "aten::sub": 0}


def peephole(target: Target) -> Target:
    """A copy of ``target`` where none of the rewrites above applies any more."""
    return apply_to_clone(target, _peephole_graph)


def _peephole_graph(graph: Graph) -> None:
    if _rewrite_all(graph):
        sweep_dead_code(graph)  # a rewrite leaves its operands' producers unused


def _rewrite_all(graph: Graph) -> bool:
    changed = False
    is_written = lazy_is_written(graph)  # asked of arithmetic identities only
    names = graph.name_source()
    for node in list(graph.walk()):
        if node.owner is None:
            continue  # removed by an earlier rewrite
        replacement = _rewrite(node, is_written, names)
        if replacement is None:
            continue
        node.output.replace_all_uses_with(replacement)
        note(f"{node.kind.split('::')[-1]} rewritten")
        node.destroy()
        changed = True
    return changed


def _rewrite(node: Node, is_written: Callable[[Value], bool], names: FreshNames) -> Value | None:
    kind = node.kind
    if len(node.outputs) != 1:
        return None
    if kind == "aten::t" and len(node.inputs) == 1:
        inner = node.inputs[0].node
        if inner is not None and inner.kind == "aten::t" and _rank(inner.inputs[0]) == 2:
            return inner.inputs[0]
    elif kind == "aten::type_as" and len(node.inputs) == 2:
        x, y = node.inputs
        if _dtype(x) is not None and _dtype(x) == _dtype(y):
            return x
    elif kind in _IDENTITY_SCALAR and 2 <= len(node.inputs) <= 3:
        return _arith_identity(node, is_written)
    elif kind in ("aten::__is__", "aten::__isnot__") and len(node.inputs) == 2:
        return _none_test(node, names)
    elif kind in _DROPOUTS and len(node.inputs) == 3:
        return _eval_dropout(node)
    return None


_DROPOUTS = frozenset(
    f"aten::{name}{suffix}"
    for name in ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout")
    for suffix in ("", "_")
)


def _eval_dropout(node: Node) -> Value | None:
    from vm.ir.resolve import constant_value

    x, p, train = node.inputs
    if p.node is None or p.node.kind != "prim::Constant" or train.node is None or train.node.kind != "prim::Constant":
        return None
    p_value, train_value = constant_value(p.node), constant_value(train.node)
    if train_value is not False and train_value != 0:
        return None
    if not isinstance(p_value, (int, float)) or not 0 <= p_value <= 1:
        return None  # the kernel raises, at run time
    return x


def _arith_identity(node: Node, is_written: Callable[[Value], bool]) -> Value | None:
    x, other = node.inputs[0], node.inputs[1]
    if _dtype(x) not in _FLOAT_DTYPES or not isinstance(node.output.type, T.TensorType):
        return None
    if _scalar_constant(other) != _IDENTITY_SCALAR[node.kind]:
        return None
    if len(node.inputs) == 3 and _scalar_constant(node.inputs[2]) != 1:
        return None
    if is_written(node.output) or is_written(x):
        return None
    return x


def _none_test(node: Node, names: FreshNames) -> Value | None:
    a, b = (v.type for v in node.inputs)
    can_be_none = [t is not None and (t == T.NONE or isinstance(t, T.OptionalType) or t == T.ANY) for t in (a, b)]
    if a == T.NONE and b == T.NONE:
        result = True
    elif (a == T.NONE and not can_be_none[1]) or (b == T.NONE and not can_be_none[0]):
        result = False
    else:
        return None
    if node.kind == "aten::__isnot__":
        result = not result
    const = Node("prim::Constant", attrs={"value": int(result)}, span=node.span)
    out = const.add_output(names(node.output.name), T.BOOL)
    assert node.owner is not None
    node.owner.insert_before(node, const)
    return out


def _scalar_constant(value: Value) -> object:
    """The int/float payload of a scalar constant, else a sentinel that matches nothing."""
    node = value.node
    if node is None or node.kind != "prim::Constant" or value.type not in (T.INT, T.FLOAT):
        return _NOT_CONSTANT
    payload = node.attrs.get("value")
    return payload if isinstance(payload, (int, float)) and not isinstance(payload, bool) else _NOT_CONSTANT


_NOT_CONSTANT = object()


def _dtype(value: Value) -> str | None:
    return value.type.dtype if isinstance(value.type, T.TensorType) else None


def _rank(value: Value) -> int | None:
    t = value.type
    return len(t.sizes) if isinstance(t, T.TensorType) and t.sizes is not None else None
