"""Fusion grouping: gather maximal groups of elementwise operators into ``prim::FusionGroup``.

This follows TorchScript's legacy graph fuser (``graph_fuser.cpp``).  A node is fusible
when it is a simple map (``isSimpleMap``): an elementwise operator of the registry
(``OpInfo.elementwise``) or of PyTorch's pointwise list (``vm.ops.facts.SIMPLE_MAPS``), pure, with one tensor
output and at least one tensor input; its other inputs are scalars, cloned into the group
when they are constants and passed in otherwise.

Each block is scanned from its last node to its first.  For a fusible consumer (or a
group), its producers are visited latest first, and each is pulled into the consumer's
group (a singleton group is created on demand) when it is fusible or itself a group, is
in the same block, and can move down to the consumer: no node in between uses its
outputs, and every node in between is pure (a print, a raise, an in-place write or a
call in between blocks the move -- a node never crosses a side effect or an alias
write).  A producer whose results are also used after the consumer gives the group an
extra output.  Pulling a group in merges the two subgraphs.  The scan repeats until
nothing changes, since a merge can make new producers adjacent, and every nested block
is fused on its own (groups never cross blocks).  Finally the constants of each subgraph
are pooled (merging brings copies of the same scalar constants).  Dead code is swept
before every round of fusing, and rounds repeat until one merges nothing: a dead use
between a producer and its consumer blocks a move, and fusing can make code dead (the
scalar constants cloned into groups; a write whose target became a fresh group output),
so without the rounds a second run would fuse more.  PyTorch runs DCE around its fuser
for the same reasons.

The group node's ``attrs["Subgraph"]`` is a ``compiler.ir.Graph`` whose parameters match
the group's inputs and whose returns match its outputs; the printer shows it as PyTorch
does, ``prim::FusionGroup_0(...)`` and ``with prim::FusionGroup_0 = graph(...)``.
"""

from __future__ import annotations

from compiler import types as T
from compiler.analysis.effects import is_pure, op_info
from compiler.ir import Block, Graph, Node, Value, clone_node
from compiler.passes import Target, apply_to_clone, collecting, note
from compiler.passes.eliminate_dead_code import sweep_dead_code
from compiler.passes.pool_constants import pool_graph
from vm.ops.facts import SIMPLE_MAPS

GROUP = "prim::FusionGroup"
MAX_INPUTS = 128

def group_fusions(target: Target) -> Target:
    """A copy of ``target`` where fusible nodes that can be brought together without
    crossing a side effect form ``prim::FusionGroup`` nodes (of two or more operators,
    only fusible ones inside), and no two adjacent-able groups remain unmerged."""
    return apply_to_clone(target, _fuse_graph)


def _fuse_graph(graph: Graph) -> None:
    before = sum(1 for n in graph.walk() if n.kind == GROUP)
    fused = True
    while fused:
        # Dead code goes before each round: a dead user in between blocks a move, and a
        # fused group can make a write dead (its target becomes a fresh group output).
        sweep_dead_code(graph)
        fused = _fuse_block(graph.block)
    groups = [n for n in graph.walk() if n.kind == GROUP]
    note("groups formed", len(groups) - before)
    for node in groups:  # merged subgraphs bring copies of the same constants
        with collecting():  # not this pass's news: the group's internals
            pool_graph(node.subgraph)


def is_fusible(node: Node) -> bool:
    """Is ``node`` a simple elementwise map this pass may put in a group?"""
    if len(node.outputs) != 1 or node.blocks or not _is_tensor(node.output):
        return False
    info = op_info(node)
    # The overload decides, not the kind: aten::max(Tensor) is a reduction while
    # aten::max.other is a map, as isSimpleMap matches schemas, not names.
    if info is not None:
        elementwise = info.elementwise
    else:
        elementwise = node.kind in SIMPLE_MAPS
    if not elementwise or not is_pure(node):
        return False
    if not any(_is_tensor(v) for v in node.inputs):
        return False
    return all(_is_tensor(v) or _is_scalar(v) for v in node.inputs)


def _is_tensor(v: Value) -> bool:
    return v.type is None or isinstance(v.type, T.TensorType)


def _is_scalar(v: Value) -> bool:
    return v.type in (T.INT, T.FLOAT, T.BOOL, T.SCALAR, T.NUMBER, T.NONE) or _is_constant(v)


def _is_constant(v: Value) -> bool:
    return v.node is not None and v.node.kind == "prim::Constant"


def _cloned_constant(v: Value) -> bool:
    return _is_constant(v) and not _is_tensor(v)


def _fuse_block(block: Block) -> bool:
    """Fuse ``block`` and its nested blocks to a fixpoint; True if anything merged.

    During a scan, nodes keep their slots in ``block.nodes`` (a new group takes the slot
    of the node it replaces; a merged producer is left as a stale entry, its owner None,
    dropped when the scan ends), so ``pos`` finds any node's place in constant time."""
    any_change = False
    for node in block.nodes:
        for inner in node.blocks:
            any_change |= _fuse_block(inner)
    changed = True
    while changed:
        changed = False
        pos = {node: i for i, node in enumerate(block.nodes)}
        for consumer in reversed(list(block.nodes)):
            if consumer.owner is block and (consumer.kind == GROUP or is_fusible(consumer)):
                while (merged := _absorb_one_producer(consumer, block, pos)) is not None:
                    consumer, changed = merged, True
        block.nodes[:] = [n for n in block.nodes if n.owner is block]
        any_change |= changed
    return any_change


def _absorb_one_producer(consumer: Node, block: Block, pos: dict[Node, int]) -> Node | None:
    """Pull the latest fusible producer of ``consumer`` into its group; the group, or None."""
    producers = {v.node for v in consumer.inputs if v.node is not None and v.node.owner is block}
    for producer in sorted(producers, key=pos.__getitem__, reverse=True):
        if producer.kind != GROUP and not is_fusible(producer):
            continue
        if len(consumer.inputs) + len(producer.inputs) > MAX_INPUTS or not _can_move_down(producer, consumer, pos):
            continue
        group = consumer if consumer.kind == GROUP else _singleton(consumer, pos)
        _merge(group, producer if producer.kind == GROUP else _singleton(producer, pos))
        note("nodes fused")
        return group
    return None


def _can_move_down(producer: Node, consumer: Node, pos: dict[Node, int]) -> bool:
    block = consumer.owner
    assert block is not None
    outputs = set(producer.outputs)
    for node in block.nodes[pos[producer] + 1 : pos[consumer]]:
        if node.owner is not block:
            continue  # merged away earlier in this scan
        for inner in (node, *node.walk()):
            if not is_pure(inner) or any(v in outputs for v in inner.inputs):
                return False
        for inner_block in _blocks(node):
            if any(v in outputs for v in inner_block.returns):
                return False
    return True


def _blocks(node: Node) -> list[Block]:
    return [b for n in (node, *node.walk()) for b in n.blocks]


def _singleton(node: Node, pos: dict[Node, int]) -> Node:
    """Replace ``node`` by a group holding only it, in its slot; returns the group."""
    sub = Graph(name=GROUP)
    group = Node(GROUP, attrs={"Subgraph": sub}, span=node.span)
    mapping: dict[int, Value] = {}
    for v in node.inputs:
        if id(v) not in mapping:
            mapping[id(v)] = _bring_in(group, v)
    inner = clone_node(node, mapping)
    sub.block.append(inner)
    for out, new in zip(node.outputs, inner.outputs):
        sub.block.add_return(new)
        group_out = group.add_output(out.name, out.type)
        out.replace_all_uses_with(group_out)
    block = node.owner
    assert block is not None
    slot = pos[node]
    block.nodes[slot] = group
    group.owner, pos[group] = block, slot
    node.owner = None  # its slot is the group's now
    node.destroy()
    return group


def _bring_in(group: Node, v: Value) -> Value:
    """The value standing for outer ``v`` inside ``group``'s subgraph (added on demand)."""
    sub = group.subgraph
    producer = v.node
    if producer is not None and _cloned_constant(v):
        for node in sub.nodes:
            if node.kind == "prim::Constant" and node.attrs == producer.attrs and node.output.type == v.type:
                return node.output
        const = clone_node(producer, {})
        const.outputs[0].name = sub.fresh_name(v.name)
        sub.block.insert(_constant_prefix(sub), const)
        return const.output
    for param, outer in zip(sub.inputs, group.inputs):
        if outer is v:
            return param
    group.add_input(v)
    return sub.block.add_param(sub.fresh_name(v.name), v.type)


def _merge(group: Node, producer: Node) -> None:
    """Move the subgraph of group ``producer`` (which precedes ``group``) into ``group``."""
    sub = group.subgraph
    psub = producer.subgraph
    mapping = {id(p): _bring_in(group, outer) for p, outer in zip(psub.inputs, producer.inputs)}
    at = sum(1 for n in sub.nodes if n.kind == "prim::Constant")
    renamed: list[tuple[Value, str]] = []
    for node in psub.nodes:
        copy = clone_node(node, mapping)
        for out in copy.outputs:
            renamed.append((out, out.name))
            out.name = sub.fresh_name(out.name)
        if copy.kind == "prim::Constant":
            sub.block.insert(_constant_prefix(sub), copy)
        else:
            sub.block.insert(at, copy)
        at += 1
    for outer, ret in zip(producer.outputs, psub.outputs):
        inner = mapping.get(id(ret), ret)
        _connect(group, outer, inner)
    producer.owner = None  # a stale entry of the block until the scan ends (_fuse_block)
    producer.destroy()
    taken = sub.value_names()
    for value, name in renamed:  # a parameter that held the name may be gone now
        if value.name != name and name not in taken:
            taken.discard(value.name)
            value.name = name
            taken.add(name)


def _constant_prefix(sub: Graph) -> int:
    """Where the next constant goes: after the constants at the start of ``sub``."""
    n = 0
    while n < len(sub.nodes) and sub.nodes[n].kind == "prim::Constant":
        n += 1
    return n


def _connect(group: Node, outer: Value, inner: Value) -> None:
    """``outer`` (a producer output) is now computed inside ``group`` as ``inner``."""
    sub = group.subgraph
    for i in reversed(range(len(group.inputs))):
        if group.inputs[i] is outer:
            sub.inputs[i].replace_all_uses_with(inner)
            sub.block.remove_param(i)
            group.remove_input(i)
    if outer.uses:  # still needed after the group: one more group output
        sub.block.add_return(inner)
        outer.replace_all_uses_with(group.add_output(outer.name, outer.type))
