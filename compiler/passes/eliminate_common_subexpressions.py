"""Common-subexpression elimination for pure operators.

One walk in program order with a scoped table, as TorchScript's
``common_subexpression_elimination.cpp``: a node is keyed by its kind, its inputs (by
identity), its attributes and its output types; when an equal node was met before in the
same block or in an enclosing one (the lookup follows the chain of parent scopes, never a
sibling branch), the later node's outputs are replaced by the earlier one's and the later
node is destroyed.

Only pure nodes take part: no side effect, no ``(a!)`` write, no nested blocks, not a
constant (pooling merges those).  Reads of memory that is written somewhere are left
alone too: two ``x + 1`` around an ``x.add_(1)`` are different values, and a fresh result
that is later written in place (``y = x + 1; y.mul_(2)``) must stay a distinct tensor; we
test both with the graph's points-to sets (``AliasClasses``); likewise two reads of an
object attribute that a ``prim::SetAttr`` assigns.  Two graph outputs are never made the same
tensor by a merge.
"""

from __future__ import annotations

from typing import Any

from compiler.passes import Target, apply_to_clone, note
from compiler.passes.pool_constants import _tagged
from vm.ir.effects import AliasClasses, is_mutable_type, is_pure
from vm.ir.graph import Block, Graph, Node, Value


def eliminate_common_subexpressions(target: Target) -> Target:
    """A copy of ``target`` where no pure node (outside reads of written memory) is equal
    to a node before it in its own block or an enclosing block."""
    return apply_to_clone(target, _cse_graph)


def _cse_graph(graph: Graph) -> None:
    aliases = AliasClasses(graph)

    # attributes some prim::SetAttr writes: two GetAttrs of one are different reads
    assigned = {(id(n.inputs[0]), n.attrs.get("name")) for n in graph.walk() if n.kind == "prim::SetAttr" and n.inputs}

    def touches_written(node: Node) -> bool:
        if node.kind == "prim::GetAttr" and (id(node.inputs[0]), node.attrs.get("name")) in assigned:
            return True
        return any(aliases.is_written(v) for v in (*node.inputs, *node.outputs))

    returned = set(graph.outputs)
    _cse_block(graph.block, [{}], touches_written, returned)


def _key(node: Node) -> tuple[Any, ...]:
    attrs = tuple(sorted((k, _tagged(v)) for k, v in node.attrs.items()))
    return (node.kind, tuple(id(v) for v in node.inputs), attrs, tuple(str(v.type) for v in node.outputs))


def _cse_block(block: Block, scopes: list[dict[Any, Node]], touches_written: Any, returned: set[Value]) -> None:
    scopes.append({})
    for node in list(block.nodes):
        for inner in node.blocks:
            _cse_block(inner, scopes, touches_written, returned)
        if node.blocks or node.kind == "prim::Constant" or not is_pure(node) or touches_written(node):
            continue
        if any(isinstance(v, Graph) for v in node.attrs.values()):
            continue  # fusion groups: their subgraphs are not part of the key
        key = _key(node)
        earlier = next((scope[key] for scope in reversed(scopes) if key in scope), None)
        if earlier is None:
            scopes[-1][key] = node
            continue
        if any(a in returned and b in returned and is_mutable_type(a.type) for a, b in zip(node.outputs, earlier.outputs)):
            continue
        for old, new in zip(node.outputs, earlier.outputs):
            old.replace_all_uses_with(new)
        node.destroy()
        note("nodes merged")
    scopes.pop()
