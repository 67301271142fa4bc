"""Values the static runtime computes once per plan: those that depend only on the plan key.

A plan is made per input-shape key (the shapes and dtypes of the tensor inputs), so within
one plan every value computed only from constants and the shapes or dtypes of tensors
whose shape follows from the key is itself a constant: the position ids and attention
masks of a transformer (``arange``, ``new_ones``, ``expand``, ``ge``, ``cumsum``...), the
``size``/``ListConstruct``/``floordiv`` arithmetic of a ``view``, ShuffleNet's channel
shuffle sizes.  The recording run computes them; the plan's code binds the ones later
nodes read as globals and does not run their producers.

A top-level node of the entry graph is *shape-only* when

* it is pure and deterministic (no effect, no write, no random draw:
  ``vm.ir.effects.is_pure``), not control flow, not a call, not an attribute
  read, and not part of a fusion group;
* each input is a constant (a literal, a weight or a module attribute the module read
  once: ``bound``; a weight's slice is computed once as well), a shape-only
  value, or, for a shape query (``aten::size``, ``prim::dtype``...: ``facts.SHAPE_QUERIES``)
  and the metadata operand of ``new_ones``/``zeros_like``... (``METADATA_OPERAND``), a
  tensor whose shape and dtype follow from the key (not tainted, ``vm/static/plannable.py``);
* its outputs are safe to share between calls: no node may write them or anything that
  may alias them (``effects.may_be_written``), and nothing that may alias them reaches a
  graph output (the caller owns outputs) or module state;
* it reads nothing of module state, even through a shape query: an attribute some method
  writes (``facts.state``, from ``vm.ir.module_state``) may hold a tensor of
  another length on the next call (a streaming model's context, empty on the first).

A shape-only value read by a node that is not shape-only, or returned by the graph, is a
*cached* value: recorded, then bound (read-only) as a constant of the plan's code.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from vm.core import types as T
from vm.ir import effects
from vm.ir.graph import Graph, Node, Value
from vm.ir.last_uses import reads
from vm.ops.facts import SHAPE_QUERIES, SUBGRAPH_KINDS
from vm.ops.random import RANDOM_KINDS
from vm.ops.registry import OpRef
from vm.static.plannable import BlockFacts, _taints

# factories that read only the dtype (and, for ``*_like``, the shape) of their first operand
METADATA_OPERAND = frozenset({
    "aten::new_ones", "aten::new_zeros", "aten::new_full",
    "aten::zeros_like", "aten::ones_like", "aten::full_like",
})  # fmt: skip
_NEVER = frozenset({"prim::GetAttr", "prim::Constant", "prim::Drop", "prim::Uninitialized"})


@attrs.frozen
class ShapeOnly:
    """The entry block's shape-only nodes and the values of them later nodes read."""

    nodes: frozenset[Node]  # not run by a plan's code
    cached: tuple[Value, ...]  # recorded once, bound as constants of the plan's code


def shape_only(
    graph: Graph,
    facts: BlockFacts,
    refs: dict[Node, OpRef],
    groups: list[list[Node]],
    bound: set[Value],
    written: Callable[[Value], bool],
) -> ShapeOnly:
    """The shape-only nodes of ``graph``'s top-level block and the values the rest of the
    graph reads of them.  A fusion group (``groups``: each one's nodes) is shape-only as a
    whole or not at all: a group partly shape-only is left alone, and the search redone."""
    excluded: set[Node] = set()
    while True:
        found = _search(graph, facts, refs, excluded, bound, written)
        partial = [g for g in groups if any(n in found.nodes for n in g) and not _all_in(g, found.nodes)]
        if not partial:
            return found
        excluded.update(n for g in partial for n in g)


def _all_in(group: list[Node], nodes: frozenset[Node]) -> bool:
    return all(n in nodes for n in group if n.kind not in ("prim::Constant", "prim::Drop"))


def _search(
    graph: Graph,
    facts: BlockFacts,
    refs: dict[Node, OpRef],
    grouped: set[Node],
    bound: set[Value],
    written: Callable[[Value], bool],
) -> ShapeOnly:
    constant = {v for n in graph.nodes if n.kind == "prim::Constant" for v in n.outputs} | set(bound)
    # a tensor the program may write in place (a weight updated by ``add_``) is no constant
    constant = {v for v in constant if not (effects.is_mutable_type(v.type) and written(v))}
    # the planner's taint, refined: what a pure node computes from constants and the key
    # (``aten::Int`` of a ``NumToTensor`` of a size) follows from the key as well
    tainted = {v for v in graph.inputs if v in facts.tainted} | set(facts.state)
    determined: set[Value] = set()
    keyed = {v for v in graph.inputs if _is_tensor(v.type) and v not in tainted}
    sinks = set(graph.outputs) | set(facts.state)
    for node in facts.steps:
        for sub in (node, *node.walk()):
            if sub.kind in ("prim::SetAttr", "prim::CallMethod"):
                sinks.update(sub.inputs)
    nodes: set[Node] = set()
    values: set[Value] = set()
    for node in facts.steps:
        pure = bool(node.outputs) and _candidate(node)
        if pure and all(_input_ok(node, i, v, constant, determined, keyed) for i, v in enumerate(node.inputs)):
            determined.update(node.outputs)
        elif _taints(node, refs, tainted):
            tainted.update(node.outputs)
        keyed.update(v for v in node.outputs if _is_tensor(v.type) and v not in tainted)
        if node in grouped or not pure:
            continue
        if not all(_input_ok(node, i, v, constant, values, keyed) for i, v in enumerate(node.inputs)):
            continue
        if any(_shared_unsafely(v, facts, sinks, written) for v in node.outputs):
            continue
        nodes.add(node)
        values.update(node.outputs)
    read_later: dict[Value, None] = {}
    for node in facts.steps:
        if node not in nodes:
            for v in reads(node):
                if v in values:
                    read_later[v] = None
    for v in graph.outputs:  # returned: the plan's code returns the recorded value
        if v in values:
            read_later[v] = None
    return ShapeOnly(frozenset(nodes), tuple(read_later))


def _candidate(node: Node) -> bool:
    kind = node.kind
    if kind in _NEVER or kind in SUBGRAPH_KINDS or kind in RANDOM_KINDS or node.blocks:
        return False
    return effects.is_pure(node)


def _input_ok(node: Node, i: int, v: Value, constant: set[Value], values: set[Value], keyed: set[Value]) -> bool:
    if v in values or v in constant:
        return True
    metadata = node.kind in SHAPE_QUERIES or (node.kind in METADATA_OPERAND and i == 0)
    return metadata and v in keyed


def _shared_unsafely(v: Value, facts: BlockFacts, sinks: set[Value], written: Callable[[Value], bool]) -> bool:
    """May a value shared by every call of a plan be written, or handed to a caller?"""
    if not effects.is_mutable_type(v.type):
        return False
    seen, todo = {v}, [v]
    while todo:
        for nxt in facts.may_alias.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return bool(seen & sinks) or written(v)


def _is_tensor(t: T.Type | None) -> bool:
    return isinstance(t, T.TensorType)
