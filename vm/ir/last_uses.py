"""Last-use analysis: which use of each value is the one after which it is dead, and what
a node reads.  The one implementation the emitter, ``insert_drops`` and the static
runtime's codegen and planner share.

This is JAX's ``last_used(jaxpr)`` for a graph with nested blocks, computed the way
TorchScript's interpreter pre-processing does (``insertLastUses``): scan each block
backwards -- its return first, then its nodes from last to first, and for each node its
nested blocks before its own inputs, inputs right to left.  The first time the scan meets
a value is the value's last use in program order.

On a graph with nested control flow the answer can lie inside a loop body or in one
branch of an If; ``compiler.passes.insert_drops`` adds ``prim::Drop`` nodes so that,
afterwards, every last use sits in the block that defines the value, which is what the
emitter's LOAD/MOVE rule relies on.

``last_use_in_block`` answers the same question one level up, as the static runtime's
generated code needs it: a read inside an If or Loop counts at that node, so a value read
in a loop body is live for the whole loop.  ``reads`` lists what a node reads from the
scopes around it, its nested blocks included.  All three are linear in the graph (a
node's nested blocks are walked once per enclosing level).

This module reads the IR data model only and runs no pass: it sits on the ground floor
(``vm/ir/``), which the compiler and the static runtime both import.
"""

from __future__ import annotations

from collections.abc import Sequence

from vm.ir.graph import Block, Graph, Node, Value

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


def reads(node: Node) -> list[Value]:
    """The values defined outside ``node`` that it reads (its inputs, and what its nested
    blocks read from outside them), each once, in order of first read."""
    if not node.blocks:
        return list(dict.fromkeys(node.inputs))
    nested = list(node.walk())
    blocks = [b for sub in (node, *nested) for b in sub.blocks]
    inner: set[Value] = {p for b in blocks for p in b.params}
    inner.update(v for sub in nested for v in sub.outputs)
    found = list(node.inputs)
    found += [v for sub in nested for v in sub.inputs if v not in inner]
    found += [v for b in blocks for v in b.returns if v not in inner]
    return list(dict.fromkeys(found))


def last_use_in_block(block: Block) -> dict[Value, User]:
    """Map every value read in ``block`` to the node of ``block`` that reads it last (a read
    inside an If or Loop counts at that node), or to ``block`` when its return reads it."""
    last: dict[Value, User] = dict.fromkeys(block.returns, block)
    for node in reversed(block.nodes):
        for value in reads(node):
            last.setdefault(value, node)
    return last


def final_reads(values: Sequence[Value]) -> list[bool]:
    """For each position of ``values``, whether no later position holds the same value
    (``add(%x, %x)`` reads ``%x`` last at its second operand)."""
    seen: set[Value] = set()
    final = [False] * len(values)
    for i in range(len(values) - 1, -1, -1):
        if values[i] not in seen:
            seen.add(values[i])
            final[i] = True
    return final


def defining_block(value: Value) -> Block:
    block = value.defining_block
    assert block is not None, f"%{value.name} is not attached to a block"
    return block
