"""Constant pooling: one ``prim::Constant`` per distinct value and type, at the graph start.

As TorchScript's ``ConstantPooling``, we walk every constant of the graph, nested blocks
included, key it by its output type and its attributes, keep the first node of each key
and point the uses of every later duplicate at it.  The survivors move to the start of
the graph's top-level block, in the order they were first met, so a constant used in a
loop body is defined once, before everything, and a second run changes nothing.

The key is exact on types: ``1``, ``1.`` and ``True`` compare equal in Python but are
three constants (the payload is tagged with its Python type, recursively, and floats are
compared by their bits so that ``0.`` and ``-0.`` stay apart and ``nan`` meets ``nan``).
Two constants are never merged when one of them may be written in place (a tensor
constant fed to ``aten::add_``): sharing would make one write visible through the other.
A ``<Tensor>`` constant, whose values come from the weights under its own name, is only
hoisted, never merged.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from compiler.passes import Target, apply_to_clone, note
from vm.ir.effects import AliasClasses, is_mutable_type
from vm.ir.graph import Block, Graph, Node, TensorLiteral, Value
from vm.ir.resolve import constant_value


def pool_constants(target: Target) -> Target:
    """A copy of ``target`` where every constant node is in the top-level block, before
    every other node, and no two constants of a graph have the same type and payload
    (unless one of them is written in place)."""
    return apply_to_clone(target, pool_graph)


def constant_key(node: Node) -> tuple[Any, ...]:
    """What makes two constants interchangeable: output type and tagged attributes."""
    value = node.attrs.get("value")
    rest = tuple(sorted((k, _tagged(v)) for k, v in node.attrs.items() if k != "value"))
    if isinstance(value, TensorLiteral):
        payload = _tagged(value)
        if value.values is None:
            payload += (node.output.name,)  # bound from the weights by name: never the same
    else:  # the run-time value: a bool printed as value=1 meets one stored as True
        payload = _tagged(constant_value(node))
    return (str(node.output.type), payload, rest)


def _tagged(value: Any) -> Any:
    if isinstance(value, float):
        return ("float", value.hex())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_tagged(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((_tagged(k), _tagged(v)) for k, v in value.items()))
    if isinstance(value, TensorLiteral):
        return ("tensor", _tagged(value.values or ()), value.values is None, value.shape, value.dtype)
    return (type(value).__name__, value)


def _written(graph: Graph) -> set[Value]:
    """Constant outputs that may be written in place (directly or through an alias)."""
    constants = [n for n in graph.walk() if n.kind == "prim::Constant" and is_mutable_type(n.output.type)]
    # only a constant with an equal twin could be pooled, so only those need the answer
    # (an int, a string... is never written; a list unlike every other is never merged)
    keyed = [(n.output, constant_key(n)) for n in constants]
    twins = Counter(key for _, key in keyed)
    mutable = [v for v, key in keyed if twins[key] > 1]
    if not mutable:
        return set()  # no need for the alias classes
    aliases = AliasClasses(graph)
    return {v for v in mutable if aliases.is_written(v)}


def pool_graph(graph: Graph) -> None:
    """Pool the constants of ``graph`` in place (for passes that clean up after themselves).

    One walk decides each constant's fate (kept, or replaced by an earlier equal one);
    then every block is rebuilt once, the kept constants first in the top-level block."""
    written = _written(graph)
    kept: dict[tuple[Any, ...], Node] = {}
    block = graph.block
    front: list[Node] = []
    holders: dict[int, Block] = {}  # the blocks that held constants
    behind = False  # a top-level node that stays has come before: later constants move
    for node in list(graph.walk()):
        if node.kind != "prim::Constant":
            behind |= node.owner is block
            continue
        owner = node.owner
        assert owner is not None
        holders[id(owner)] = owner
        key = constant_key(node) if node.output not in written else ("written", id(node))
        first = kept.get(key)
        if first is not None:
            node.output.replace_all_uses_with(first.output)
            node.owner = None  # out of its block when the blocks are rebuilt below
            node.destroy()
            note("constants pooled")
            continue
        kept[key] = node
        if owner is not block or behind:
            note("constants hoisted")
        front.append(node)
    for holder in holders.values():
        if holder is not block:
            holder.nodes[:] = [n for n in holder.nodes if n.kind != "prim::Constant"]
    block.nodes[:] = front + [n for n in block.nodes if n.kind != "prim::Constant"]
    for node in front:
        node.owner = block
