"""Last-use analysis: which use of each value is the one after which it is dead.

This is JAX's ``last_used(jaxpr)`` for a graph with nested blocks, computed the way
TorchScript's interpreter pre-processing does (``insertLastUses``): scan each block
backwards -- its return first, then its nodes from last to first, and for each node its
nested blocks before its own inputs, inputs right to left.  The first time the scan meets
a value is the value's last use in program order.

On a graph with nested control flow the answer can lie inside a loop body or in one
branch of an If; ``compiler.passes.insert_drops`` adds ``prim::Drop`` nodes so that,
afterwards, every last use sits in the block that defines the value, which is what the
emitter's LOAD/MOVE rule relies on.
"""

from __future__ import annotations

from compiler.ir import Block, Graph, Node, Value

User = Node | Block  # a node's input, or a block's return (the block is the user)


def last_uses(graph: Graph) -> dict[Value, User]:
    """Map every used value of ``graph`` to the node (or block, for a return) of its last use.

    >>> # x = a + b; y = x * x; return y   ->   {a: add, b: add, x: mul, y: <graph block>}
    """
    seen: dict[Value, User] = {}
    _scan_block(graph.block, seen)
    return seen


def _scan_block(block: Block, seen: dict[Value, User]) -> None:
    for value in reversed(block.returns):
        seen.setdefault(value, block)
    for node in reversed(block.nodes):
        for inner in node.blocks:
            _scan_block(inner, seen)
        for value in reversed(node.inputs):
            seen.setdefault(value, node)


def defining_block(value: Value) -> Block:
    block = value.defining_block
    assert block is not None, f"%{value.name} is not attached to a block"
    return block
