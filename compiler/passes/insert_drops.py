"""Drop insertion: give every value a final use in the block that defines it.

The interpreter frees a register when it emits a value's last use (MOVE instead of
LOAD, chosen by counting uses as it emits) and frees values nobody reads with DROPR.
For that counting to be safe, the last use of a value must be in the block where the
value is defined: a value defined before a loop and last read inside the body must not
be moved out on the first iteration, and a value read in one branch of an If must be
freed whichever branch runs.  This pass establishes that, exactly as TorchScript's
interpreter pre-processing (``preprocess_graph.cpp``) does, in two steps:

1. *dropUnused*: every block parameter and every node output with no use at all
   (constants excepted: they are LOADC'd, never stored) gets a ``prim::Drop`` right
   after its definition -- at the start of the block for parameters, right after the
   node for outputs, one Drop node per definition carrying all its unused values.
2. *insertLastUses*: the last use of each value (``vm.ir.last_uses``: each
   block scanned backwards, return first, nested blocks before a node's own inputs).
   When that use is nested inside an If or Loop, find the node at the value's
   defining depth that contains the use and add the value to a ``prim::Drop`` placed
   right after that node (one Drop per control-flow node, created on demand).

Afterwards ``vm.ir.last_uses`` puts every non-constant value's last use in
its defining block, and the emitter turns each ``prim::Drop`` input into DROPR.
"""

from __future__ import annotations

from compiler.diagnostics import Span
from compiler.passes import Target, ancestor_in, graphs_of, note
from vm.ir.graph import Block, Graph, Node, Value
from vm.ir.last_uses import last_uses

DROP = "prim::Drop"


def insert_drops(target: Target) -> Target:
    """A copy of ``target`` where every non-constant value is used, and its last use (in
    program order) is a node or return of the block that defines it."""
    copy = target.clone()
    for graph in graphs_of(copy):
        _drop_unused(graph.block)
        _move_last_uses_out(graph)
    return copy


def _is_constant(value: Value) -> bool:
    return value.node is not None and value.node.kind == "prim::Constant"


def _drop_node(values: list[Value], span: Span | None = None) -> Node:
    node = Node(DROP, span=span)
    for v in values:
        node.add_input(v)
    return node


def _drop_unused(block: Block) -> None:
    unused = [p for p in block.params if not p.uses]
    if unused:
        block.insert(0, _drop_node(unused, block.owner.span if block.owner else None))
        note("unused values dropped", len(unused))
    for node in list(block.nodes):
        unused = [v for v in node.outputs if not v.uses and node.kind != "prim::Constant"]
        if unused:
            block.insert_after(node, _drop_node(unused, node.span))
            note("unused values dropped", len(unused))
        for inner in node.blocks:
            _drop_unused(inner)


def _move_last_uses_out(graph: Graph) -> None:
    """insertLastUses: a Drop after the node of the defining block that holds each nested
    last use (``last_uses`` lists values in the order of its backward scan)."""
    drop_after: dict[Node, Node] = {}
    for value, user in last_uses(graph).items():
        home = value.defining_block
        assert home is not None, f"%{value.name} is not attached to a block"
        user_block = user if isinstance(user, Block) else user.owner
        if user_block is home:
            continue  # a legitimate final use already
        holder = ancestor_in(user.owner if isinstance(user, Block) else user, home)
        assert holder is not None, f"%{value.name} used outside its scope (run the verifier)"
        if _is_constant(value):
            continue
        drop = drop_after.get(holder)
        if drop is None:
            drop = _drop_node([], holder.span)
            home.insert_after(holder, drop)
            drop_after[holder] = drop
        if value not in drop.inputs:
            drop.add_input(value)
            note("last uses moved out of blocks")
