"""Constant propagation: run at compile time what only depends on constants.

As TorchScript's ``ConstantPropagation``: a node whose inputs are all constants is run
now -- resolved to its overload with ``vm.ir.resolve`` and called through
``vm.ops.registry.bind``, the same kernels the VMs use -- and its outputs are replaced by
new constants.  Only pure nodes qualify (no side effect, no ``(a!)`` write, no blocks),
and only results a constant can hold exactly: ints, floats, bools, strings, None and
lists of those.  Tensors are not folded (a tensor literal would print rounded), nor are
lists that are written later (a constant list is one shared object).  If the operator
raises, the node is left alone: the error belongs to run time.

What every irvm tensor is folds too, whatever the tensor (``TENSOR_FACTS``: strided, on the
CPU), so that a library function's check of ``input.layout`` or ``input.device`` decides
its path.  Control flow folds too: a ``prim::If`` on a constant condition is replaced by the body
of the branch taken, an If output that both branches return from outside the If is that
value, a ``prim::Loop`` that cannot run (trip count <= 0, or initial condition false)
is replaced by its initial carried values, and a carried value the body returns
unchanged is replaced by its initial value (and stops being carried).  Folding
continues to a fixpoint (a worklist: a fold revisits only the users of what it
replaced), and dead code is then removed, since folded nodes leave their inputs unused.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from compiler import types as T
from compiler.passes import Target, apply_to_clone, lazy_is_written, note
from compiler.passes.eliminate_dead_code import sweep_dead_code
from vm.ir.effects import has_side_effects, mutated_inputs
from vm.ir.graph import FreshNames, Graph, Node, Value
from vm.ir.resolve import constant_value, resolve
from vm.ops.facts import CONTROL_KINDS
from vm.ops.registry import bind

_NO_FOLD = frozenset({"prim::Uninitialized", "prim::GetAttr", "prim::unchecked_cast", "aten::format", "prim::device"})


def propagate_constants(target: Target) -> Target:
    """A copy of ``target`` where no foldable node has only constant inputs, no If has a
    constant condition, and no Loop is known not to run."""
    return apply_to_clone(target, _propagate)


def _propagate(graph: Graph) -> None:
    """Fold in one pass over a worklist: every node once in program order, then again
    only the nodes a fold can have made foldable (the users of the values it replaced,
    the If or Loop whose block returns changed).  The alias classes are computed once,
    when a list result is first about to be folded: folding only redirects uses to new
    constants and removes nodes, which never makes a list written that was not."""
    is_written = lazy_is_written(graph)
    names = graph.name_source()
    work = deque(graph.walk())
    queued = set(work)
    changed_any = False

    def revisit(values: list[Value]) -> None:
        for value in values:
            for use in value.uses:
                user = use.user if isinstance(use.user, Node) else use.user.owner
                if user is not None and user not in queued:
                    queued.add(user)
                    work.append(user)

    while work:
        node = work.popleft()
        queued.discard(node)
        if node.owner is None:
            continue  # inside a branch that folding removed, or folded itself
        if node.kind == "prim::If":
            touched = _fold_if(node)
        elif node.kind == "prim::Loop":
            touched = _fold_loop(node)
        elif node.kind in TENSOR_FACTS and node.inputs and isinstance(node.inputs[0].type, T.TensorType):
            touched = _fold_tensor_fact(node, names)
        elif _foldable(node):
            touched = _fold_node(node, names, is_written)
        else:
            continue
        if touched is not None:
            changed_any = True
            revisit(touched)
    if changed_any:
        sweep_dead_code(graph)


def _constant_node(value: Value) -> Node | None:
    """The prim::Constant that defines ``value``, or None."""
    node = value.node
    return node if node is not None and node.kind == "prim::Constant" else None


def _is_constant(value: Value) -> bool:
    return _constant_node(value) is not None


def _foldable(node: Node) -> bool:
    return (
        node.kind not in CONTROL_KINDS
        and node.kind not in _NO_FOLD
        and not node.blocks
        and all(_is_constant(v) for v in node.inputs)
        and not any(isinstance(v.type, T.TensorType) or v.type is None for v in node.inputs)
        and not has_side_effects(node)
        and not mutated_inputs(node)
    )


def _fold_node(node: Node, names: FreshNames, is_written: Any) -> list[Value] | None:
    """Replace ``node`` by constants; the new constants' values, or None if it stays."""
    producers = [_constant_node(v) for v in node.inputs]
    try:
        fn = bind(resolve(node))
        args = [constant_value(p) for p in producers if p is not None]
        if len(args) != len(producers):
            return None  # an input is not a constant
        result = fn(*args)
    except Exception:  # noqa: BLE001
        return None  # unknown operator, or it raises: leave it to run time
    results = list(result) if len(node.outputs) > 1 else [result]
    if len(results) != len(node.outputs):
        return None
    payloads = [_payload(r, out.type) for r, out in zip(results, node.outputs)]
    if any(p is _UNREPRESENTABLE for p in payloads):
        return None
    if any(isinstance(out.type, T.ListType) and is_written(out) for out in node.outputs):
        return None
    made = []
    for out, payload in zip(node.outputs, payloads):
        const = make_constant(payload, out.type, names(out.name), node)
        assert node.owner is not None  # a node being folded sits in a block
        node.owner.insert_before(node, const)
        out.replace_all_uses_with(const.output)
        made.append(const.output)
    node.destroy()
    note("nodes folded")
    return made


# what every irvm tensor is, whatever its values (a numpy array: strided, on the CPU), as
# torch's library code asks before choosing a path (``torch.norm``: ``input.layout ==
# torch.strided and input.device.type in ("cpu", ...)``)
TENSOR_FACTS: dict[str, tuple[Any, T.Type]] = {
    "prim::layout": (0, T.INT), "prim::device": ("cpu", T.DEVICE), "prim::is_cuda": (0, T.BOOL),
}


def _fold_tensor_fact(node: Node, names: FreshNames) -> list[Value]:
    payload, type_ = TENSOR_FACTS[node.kind]
    out = node.outputs[0]
    const = make_constant(payload, out.type or type_, names(out.name), node)
    assert node.owner is not None
    node.owner.insert_before(node, const)
    out.replace_all_uses_with(const.output)
    node.destroy()
    note("nodes folded")
    return [const.output]


_UNREPRESENTABLE = object()


def _payload(value: Any, type_: T.Type | None) -> Any:
    """The ``value=`` attribute holding ``value`` as a constant of ``type_``, if any."""
    if type_ == T.BOOL and isinstance(value, (bool, np.bool_)):
        return int(bool(value))
    if type_ == T.INT and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    if type_ == T.FLOAT and isinstance(value, (float, np.floating)):
        return float(value)
    if type_ in (T.STR, T.DEVICE) and isinstance(value, str):
        return value
    if type_ == T.NONE and value is None:
        return None
    if isinstance(type_, T.ListType) and isinstance(value, list) and type_.elem in (T.INT, T.FLOAT, T.BOOL, T.STR):
        items = [_payload(v, type_.elem) for v in value]
        return _UNREPRESENTABLE if any(i is _UNREPRESENTABLE for i in items) else items
    return _UNREPRESENTABLE


def make_constant(payload: Any, type_: T.Type | None, name: str, like: Node) -> Node:
    """A ``prim::Constant`` node (not yet in a block) with the span of ``like``."""
    const = Node("prim::Constant", attrs={} if payload is None else {"value": payload}, span=like.span)
    const.add_output(name, type_)
    return const


def _bool_constant(value: Value) -> bool | None:
    producer = _constant_node(value)
    if producer is None:
        return None
    payload = constant_value(producer)
    return bool(payload) if isinstance(payload, (bool, int)) else None


def _fold_if(node: Node) -> list[Value] | None:
    """Fold an If; the values whose uses changed, or None if nothing changed."""
    cond = _bool_constant(node.inputs[0])
    if cond is None:
        return _fold_if_outputs(node)
    taken = node.blocks[0 if cond else 1]
    block = node.owner
    assert block is not None
    block.move_all_before(taken.nodes, node)
    returns = list(taken.returns)
    for out, ret in zip(node.outputs, returns):
        out.replace_all_uses_with(ret)
    node.destroy()
    note("Ifs folded")
    return returns


def _fold_if_outputs(node: Node) -> list[Value] | None:
    """An output that both branches return as the same outside value is that value."""
    changed: list[Value] = []
    then, other = node.blocks
    for i in reversed(range(len(node.outputs))):
        a, b = then.returns[i], other.returns[i]
        if a is b and a.defining_block not in (then, other) and not _defined_inside(a, node):
            node.outputs[i].replace_all_uses_with(a)
            then.remove_return(i)
            other.remove_return(i)
            node.remove_output(i)
            note("If outputs folded")
            changed.append(a)
    return changed or None


def _defined_inside(value: Value, node: Node) -> bool:
    block = value.defining_block
    while block is not None:
        if block.owner is node:
            return True
        block = block.owner.owner if block.owner is not None else None
    return False


def _drop_invariant_carried(node: Node) -> list[Value] | None:
    """A carried value the body returns unchanged is its initial value throughout."""
    body = node.blocks[0]
    changed: list[Value] = []
    for j in reversed(range(len(node.outputs))):
        param, init = body.params[j + 1], node.inputs[j + 2]
        if body.returns[j + 1] is not param:
            continue
        param.replace_all_uses_with(init)
        node.outputs[j].replace_all_uses_with(init)
        body.remove_return(j + 1)
        body.remove_param(j + 1)
        node.remove_output(j)
        node.remove_input(j + 2)
        note("loop-invariant carried values removed")
        changed.append(init)
    return changed or None


def _fold_loop(node: Node) -> list[Value] | None:
    trip, cond = node.inputs[0], node.inputs[1]
    never = _bool_constant(cond) is False
    trip_node = _constant_node(trip)
    trip_count = constant_value(trip_node) if trip_node is not None else None
    if isinstance(trip_count, int):
        never |= trip_count <= 0
    if not never:
        return _drop_invariant_carried(node)
    inits = list(node.inputs[2:])
    for out, init in zip(node.outputs, inits):
        out.replace_all_uses_with(init)
    node.destroy()
    note("Loops removed")
    return inits
