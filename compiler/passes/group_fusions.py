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

The group node's ``attrs["Subgraph"]`` is a ``vm.ir.graph.Graph`` whose parameters match
the group's inputs and whose returns match its outputs; the printer shows it as PyTorch
does, ``prim::FusionGroup_0(...)`` and ``with prim::FusionGroup_0 = graph(...)``.
"""

from __future__ import annotations

from collections.abc import Iterator

from compiler import types as T
from compiler.passes import Target, apply_to_clone, collecting, note
from compiler.passes.eliminate_dead_code import sweep_dead_code
from compiler.passes.pool_constants import pool_graph
from vm.ir.effects import is_pure, op_info
from vm.ir.graph import Block, Graph, Node, Value, clone_node
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
    dropped when the scan ends), so ``_Scan.pos`` finds any node's place in constant time
    and ``_Scan.live_between`` steps over the stale entries without visiting them."""
    any_change = False
    for node in block.nodes:
        for inner in node.blocks:
            any_change |= _fuse_block(inner)
    changed = True
    while changed:
        changed = False
        scan = _Scan(block)
        for consumer in reversed(list(block.nodes)):
            if consumer.owner is block and (consumer.kind == GROUP or is_fusible(consumer)):
                while (merged := _absorb_one_producer(consumer, scan)) is not None:
                    consumer, changed = merged, True
        block.nodes[:] = [n for n in block.nodes if n.owner is block]
        any_change |= changed
    return any_change


class _Scan:
    """The bookkeeping of one scan of a block, so that each merge costs the size of what
    it moves, not the size of the group it grows (a chain of N maps is N merges):

    - ``pos``: every node's slot in ``block.nodes``;
    - ``live_between``: the live slots between two slots, found through ``_skip`` (a
      union-find of stale slots onto the next slot, with path halving) rather than by
      stepping over the producers merged so far;
    - ``names(group)``: the value names taken in a group's subgraph, collected once per
      group and kept up to date, rather than collected on each fresh name;
    - ``constants(group)``: a group's cloned scalar constants by payload, and how many
      there are (they sit at the start of its subgraph)."""

    def __init__(self, block: Block) -> None:
        self.block = block
        self.pos = {node: i for i, node in enumerate(block.nodes)}
        self._skip = list(range(len(block.nodes) + 1))
        self._names: dict[Node, set[str]] = {}
        self._constants: dict[Node, dict[tuple[str, str], Value]] = {}
        self._prefix: dict[Node, int] = {}

    def kill(self, node: Node) -> None:
        """``node``'s slot is stale from now on."""
        slot = self.pos[node]
        self._skip[slot] = slot + 1

    def _live(self, slot: int) -> int:
        skip = self._skip
        while skip[slot] != slot:
            skip[slot] = skip[skip[slot]]
            slot = skip[slot]
        return slot

    def live_between(self, first: Node, last: Node) -> Iterator[Node]:
        """The live nodes strictly between ``first`` and ``last``, in order."""
        slot, end = self._live(self.pos[first] + 1), self.pos[last]
        while slot < end:
            yield self.block.nodes[slot]
            slot = self._live(slot + 1)

    def names(self, group: Node) -> set[str]:
        taken = self._names.get(group)
        if taken is None:
            taken = self._names[group] = group.subgraph.value_names()
        return taken

    def fresh(self, group: Node, base: str) -> str:
        """A name not taken in ``group``'s subgraph (``Graph.fresh_name``), now taken."""
        taken = self.names(group)
        name = group.subgraph.fresh_name(base, taken)
        taken.add(name)
        return name

    def constants(self, group: Node) -> dict[tuple[str, str], Value]:
        """``group``'s cloned scalar constants by payload (the first of equal ones)."""
        known = self._constants.get(group)
        if known is None:
            known = self._constants[group] = {}
            self._prefix[group] = _constant_prefix(group.subgraph)
            for node in group.subgraph.nodes[: self._prefix[group]]:
                known.setdefault(_constant_key(node.output), node.output)
        return known

    def n_constants(self, group: Node) -> int:
        self.constants(group)
        return self._prefix[group]

    def add_constant(self, group: Node, const: Node) -> None:
        """Put ``const`` after the constants that lead ``group``'s subgraph."""
        known = self.constants(group)
        group.subgraph.block.insert(self._prefix[group], const)
        self._prefix[group] += 1
        known.setdefault(_constant_key(const.output), const.output)

    def forget(self, group: Node) -> None:
        self._names.pop(group, None)
        self._constants.pop(group, None)
        self._prefix.pop(group, None)


def _constant_key(v: Value) -> tuple[str, str]:
    """A cloned scalar constant's payload and type, as a key (``repr`` keeps 1, 1.0 and True
    apart, which ``==`` would not; ``pool_constants`` merges what is left at the end)."""
    node = v.node
    assert node is not None
    return repr(sorted(node.attrs.items())), repr(v.type)


def _absorb_one_producer(consumer: Node, scan: _Scan) -> Node | None:
    """Pull the latest fusible producer of ``consumer`` into its group; the group, or None."""
    block, pos = scan.block, scan.pos
    producers = {v.node for v in consumer.inputs if v.node is not None and v.node.owner is block}
    for producer in sorted(producers, key=pos.__getitem__, reverse=True):
        if producer.kind != GROUP and not is_fusible(producer):
            continue
        if len(consumer.inputs) + len(producer.inputs) > MAX_INPUTS or not _can_move_down(producer, consumer, scan):
            continue
        group = consumer if consumer.kind == GROUP else _singleton(consumer, scan)
        _merge(group, producer if producer.kind == GROUP else _singleton(producer, scan), scan)
        note("nodes fused")
        return group
    return None


def _can_move_down(producer: Node, consumer: Node, scan: _Scan) -> bool:
    outputs = set(producer.outputs)
    for node in scan.live_between(producer, consumer):
        for inner in (node, *node.walk()):
            if not is_pure(inner) or any(v in outputs for v in inner.inputs):
                return False
        for inner_block in _blocks(node):
            if any(v in outputs for v in inner_block.returns):
                return False
    return True


def _blocks(node: Node) -> list[Block]:
    return [b for n in (node, *node.walk()) for b in n.blocks]


def _singleton(node: Node, scan: _Scan) -> Node:
    """Replace ``node`` by a group holding only it, in its slot; returns the group."""
    sub = Graph(name=GROUP)
    group = Node(GROUP, attrs={"Subgraph": sub}, span=node.span)
    mapping: dict[int, Value] = {}
    for v in node.inputs:
        if id(v) not in mapping:
            mapping[id(v)] = _bring_in(group, v, scan)
    inner = clone_node(node, mapping)
    sub.block.append(inner)
    scan.names(group).update(v.name for n in (inner, *inner.walk()) for v in n.outputs)
    for out, new in zip(node.outputs, inner.outputs):
        sub.block.add_return(new)
        group_out = group.add_output(out.name, out.type)
        out.replace_all_uses_with(group_out)
    block = scan.block
    slot = scan.pos[node]
    block.nodes[slot] = group
    group.owner, scan.pos[group] = block, slot
    node.owner = None  # its slot is the group's now
    node.destroy()
    return group


def _bring_in(group: Node, v: Value, scan: _Scan) -> Value:
    """The value standing for outer ``v`` inside ``group``'s subgraph (added on demand)."""
    sub = group.subgraph
    producer = v.node
    if producer is not None and _cloned_constant(v):
        known = scan.constants(group)
        key = _constant_key(v)
        if key in known:
            return known[key]
        const = clone_node(producer, {})
        const.outputs[0].name = scan.fresh(group, v.name)
        scan.add_constant(group, const)
        return const.output
    for param, outer in zip(sub.inputs, group.inputs):  # at most MAX_INPUTS
        if outer is v:
            return param
    group.add_input(v)
    return sub.block.add_param(scan.fresh(group, v.name), v.type)


def _merge(group: Node, producer: Node, scan: _Scan) -> None:
    """Move the subgraph of group ``producer`` (which precedes ``group``) into ``group``:
    its constants join the constants that lead the group's subgraph (one of each payload: a
    chain of N ``add(x, y, 1)`` would otherwise carry N copies of 1, each named ``1.k``
    after a search through the k before it), its other nodes go, in one splice, before the
    group's own nodes."""
    sub = group.subgraph
    psub = producer.subgraph
    mapping = {id(p): _bring_in(group, outer, scan) for p, outer in zip(psub.inputs, producer.inputs)}
    renamed: list[tuple[Value, str]] = []
    moved: list[Node] = []
    known = scan.constants(group)
    for node in psub.nodes:
        if node.kind == "prim::Constant" and _cloned_constant(node.output) and _constant_key(node.output) in known:
            mapping[id(node.output)] = known[_constant_key(node.output)]  # the group has it already
            continue
        copy = clone_node(node, mapping)
        for out in copy.outputs:
            renamed.append((out, out.name))
            out.name = scan.fresh(group, out.name)
        if copy.kind == "prim::Constant":
            scan.add_constant(group, copy)
        else:
            moved.append(copy)
    at = scan.n_constants(group)
    for node in moved:
        node.owner = sub.block
    sub.block.nodes[at:at] = moved  # one C-level splice per merge
    for outer, ret in zip(producer.outputs, psub.outputs):
        inner = mapping.get(id(ret), ret)
        _connect(group, outer, inner, scan)
    scan.kill(producer)
    scan.forget(producer)
    producer.owner = None  # a stale entry of the block until the scan ends (_fuse_block)
    producer.destroy()
    taken = scan.names(group)
    for value, name in renamed:  # a parameter that held the name may be gone now
        if value.name != name and name not in taken:
            taken.discard(value.name)
            value.name = name
            taken.add(name)


def _constant_prefix(sub: Graph) -> int:
    """How many constants lead ``sub``."""
    n = 0
    while n < len(sub.nodes) and sub.nodes[n].kind == "prim::Constant":
        n += 1
    return n


def _connect(group: Node, outer: Value, inner: Value, scan: _Scan) -> None:
    """``outer`` (a producer output) is now computed inside ``group`` as ``inner``."""
    sub = group.subgraph
    for i in reversed(range(len(group.inputs))):
        if group.inputs[i] is outer:
            param = sub.inputs[i]
            param.replace_all_uses_with(inner)
            sub.block.remove_param(i)
            scan.names(group).discard(param.name)
            group.remove_input(i)
    if outer.uses:  # still needed after the group: one more group output
        sub.block.add_return(inner)
        outer.replace_all_uses_with(group.add_output(outer.name, outer.type))
