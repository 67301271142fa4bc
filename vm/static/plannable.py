"""Which tensors of a graph the static runtime may carve out of its slab, and for how long.

The memory planner (``vm/static/memory_planner.py``) needs three facts about the top-level block
of the entry graph, all computed once when a ``StaticModule`` is built:

* steps: the block's nodes in order, a node with sub-blocks counting as one step; a value
  read anywhere inside an ``If`` or ``Loop`` is read at that node's step;
* may-alias edges, directed from a value to the values that may view or contain it: the
  outputs of every op but those with an out variant and an unannotated return (views
  such as ``Tensor(a)``, in-place results ``Tensor(a!)``, list/tuple/dict constructors and
  unpackers, ``If``/``Loop``/calls, and any kernel that might return a view its schema does
  not announce); and, when an op writes an argument of a container type (``aten::append``),
  from its other arguments into that container;
* candidates: the tensor output of an op that has an out variant and a schema return
  without alias annotation (a fresh tensor), whose alias closure reaches no graph input,
  no graph output and no module state (a ``prim::SetAttr``'s value, or an attribute some
  method writes, ``vm.ir.module_state``: ``self.history.append(t)``), and whose
  *shape is known from the input shapes alone*.

The last condition is what makes a plan keyed by input shapes sound.  A forward taint
marks the values whose size may depend on data: non-tensor graph inputs, module state
(what the block reads of the attributes some method writes: a context that is empty on the
first call), non-tensor results computed from tensor contents (``aten::item``,
``aten::Int``...: every op that reads a tensor and returns a non-tensor, except shape
queries such as ``aten::size`` of an untainted tensor and the splits whose pieces follow
from shapes, such as ``aten::chunk``),
outputs of ops with data-dependent shapes (``aten::nonzero``...), outputs of control flow,
and everything computed from a tainted value (an elementwise op only looks at its tensor
operands, since a scalar operand cannot change its shape).  Tainted tensors run with their
allocating kernel; a new input shape gets a new plan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from vm.core import types as T
from vm.ir import effects, module_state
from vm.ir.graph import Graph, Node, Value
from vm.ir.last_uses import reads
from vm.ops import registry
from vm.ops.facts import (
    CONTAINER_KINDS,
    DATA_DEPENDENT_SHAPES,
    EFFECT_KINDS,
    SHAPE_ONLY_LISTS,
    SHAPE_QUERIES,
    SUBGRAPH_KINDS,
)
from vm.ops.registry import OpRef


@attrs.frozen
class BlockFacts:
    """What the planner needs about the entry graph's top-level block."""

    steps: tuple[Node, ...]
    produced_at: dict[Value, int]  # candidate -> its producer's step
    output_candidates: tuple[Value, ...]  # graph outputs an output arena may hold
    used_at: dict[Value, list[int]]
    may_alias: dict[Value, list[Value]]
    tainted: frozenset[
        Value
    ]  # values whose size or dtype may depend on more than the key
    # what the block reads of module state (``vm.ir.module_state``): the
    # attribute values some method writes, which may differ on every call
    state: frozenset[Value] = frozenset()


def is_tensor_type(t: T.Type | None) -> bool:
    return t is None or isinstance(t, T.TensorType)


def analyze(
    graph: Graph, refs: dict[Node, OpRef], has_out: Callable[[Node], bool], state: frozenset[str] = frozenset()
) -> BlockFacts:
    """Facts for ``graph``'s top-level block; ``refs`` are the resolved ops of its nodes,
    ``state`` the attributes some method writes (``module_state.written_attributes``):
    what the block reads of them is tainted (its size may change from call to call) and
    a sink (a tensor stored into it outlives the call)."""
    steps = tuple(
        n for n in graph.nodes if n.kind not in ("prim::Constant", "prim::Drop")
    )
    used_at: dict[Value, list[int]] = {}
    may_alias: dict[Value, list[Value]] = {}
    for step, node in enumerate(steps):
        for v in reads(node):
            used_at.setdefault(v, []).append(step)
        for src, dst in _alias_edges(node, _fresh_tensor_op(node, refs, has_out)):
            may_alias.setdefault(src, []).append(dst)
    read = frozenset(v for n in module_state.state_reads(graph, state) for v in n.outputs)
    tainted = _taint(graph, steps, refs, read)
    escape = _escapes(graph, steps, may_alias, read)
    produced_at: dict[Value, int] = {}
    outputs = []
    graph_outputs = set(graph.outputs)
    for step, node in enumerate(steps):
        if not _fresh_tensor_op(node, refs, has_out) or node.output in tainted:
            continue
        if node.output in graph_outputs:
            outputs.append(node.output)
        elif node.output not in escape:
            produced_at[node.output] = step
    return BlockFacts(
        steps,
        produced_at,
        tuple(dict.fromkeys(outputs)),
        used_at,
        may_alias,
        frozenset(tainted),
        read,
    )


def _fresh_tensor_op(
    node: Node, refs: dict[Node, OpRef], has_out: Callable[[Node], bool]
) -> bool:
    ref = refs.get(node)
    if (
        ref is None
        or len(node.outputs) != 1
        or not is_tensor_type(node.output.type)
        or not has_out(node)
    ):
        return False
    info = _info(ref)
    return (
        info is not None and not info.schema.returns_alias and not info.schema.mutates
    )


def _info(ref: OpRef) -> registry.OpInfo | None:
    try:
        return registry.lookup(ref.name)
    except KeyError:
        return None


def _alias_edges(node: Node, fresh: bool) -> list[tuple[Value, Value]]:
    """(a, b): b may view or contain a.

    Only an op with an out variant is trusted to return a fresh tensor: a kernel may
    return a view its schema does not announce (``aten::unsafe_chunk`` returns views of
    its input), so every other op's outputs may alias every tensor it reads.
    """
    mutable = [v for v in reads(node) if effects.is_mutable_type(v.type)]
    if node.kind in SUBGRAPH_KINDS or node.kind in EFFECT_KINDS:
        edges = [(v, out) for v in mutable for out in node.outputs]
        return edges + [(a, b) for a in mutable for b in mutable if a is not b]
    edges = []
    if not fresh or node.kind in CONTAINER_KINDS or effects.returns_alias(node):
        edges += [(v, out) for v in mutable for out in node.outputs]
    written = effects.mutated_inputs(node)
    for i in written:
        target = node.inputs[i]
        edges += [(target, out) for out in node.outputs]
        if not is_tensor_type(
            target.type
        ):  # a container may now hold the other arguments
            edges += [(v, target) for v in mutable if v is not target]
    return edges


def _closure(start: Value, may_alias: dict[Value, list[Value]]) -> set[Value]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in may_alias.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _escapes(
    graph: Graph, steps: tuple[Node, ...], may_alias: dict[Value, list[Value]], state: frozenset[Value]
) -> set[Value]:
    """Values whose alias closure reaches a graph input, a graph output or module state
    (an attribute assigned, or a state attribute's object: ``self.cache.append(k)``)."""
    sinks = set(graph.inputs) | set(graph.outputs) | state
    for node in steps:
        for sub in (node, *node.walk()):
            if sub.kind in ("prim::SetAttr", "prim::CallMethod"):
                sinks.update(sub.inputs)
    escaping = set()
    for node in steps:
        for out in node.outputs:
            if _closure(out, may_alias) & sinks:
                escaping.add(out)
    return escaping


def _taint(
    graph: Graph, steps: tuple[Node, ...], refs: dict[Node, OpRef], state: frozenset[Value]
) -> set[Value]:
    """Values whose size (or, for non-tensors, value) may depend on more than input
    shapes: non-tensor inputs, module state, and what follows from them."""
    tainted = {
        v
        for v in graph.inputs
        if not is_tensor_type(v.type) and not isinstance(v.type, T.ClassType)
    } | set(state)
    for node in steps:
        if _taints(node, refs, tainted):
            tainted.update(node.outputs)
    return tainted


def _taints(node: Node, refs: dict[Node, OpRef], tainted: set[Value]) -> bool:
    if node.kind in SUBGRAPH_KINDS or node.kind in DATA_DEPENDENT_SHAPES:
        return True
    if node.kind == "prim::GetAttr":
        return False  # a setting or a weight (module state is tainted from the start)
    if node.kind in SHAPE_QUERIES:  # the size of a tensor whose size varies varies
        return any(v in tainted for v in node.inputs if is_tensor_type(v.type))
    ref = refs.get(node)
    info = _info(ref) if ref is not None else None
    if info is not None and info.elementwise:
        return any(v in tainted for v in node.inputs if is_tensor_type(v.type))
    if any(v in tainted for v in node.inputs):
        return True
    if node.kind in SHAPE_ONLY_LISTS:
        return False
    reads_tensor = any(is_tensor_type(v.type) for v in node.inputs)
    makes_data = any(not is_tensor_type(v.type) for v in node.outputs)
    return reads_tensor and makes_data and node.kind not in CONTAINER_KINDS


def value_bound_loops(graphs: Iterable[Graph]) -> list[Node]:
    """The ``prim::Loop`` nodes of ``graphs`` whose trip count or condition may follow
    from tensor *contents* (a ``while`` on ``aten::item``, a count from ``aten::Int``):
    a run on stand-in inputs could take any time there, or never end.

    A forward analysis to a fixed point over every block: a value is data-bound when it
    is a non-tensor graph input (a callee's ``int`` parameter counts), a non-tensor read
    off a tensor by anything but a shape query, a tensor of a data-dependent shape, or
    anything computed from a data-bound value; a loop's carried values and an ``If``'s
    outputs are data-bound when what feeds them, or what decides them, is.
    """
    found: list[Node] = []
    for graph in graphs:
        data = {v for v in graph.inputs if not is_tensor_type(v.type) and not isinstance(v.type, T.ClassType)}
        size = -1
        while size != len(data):
            size = len(data)
            for node in graph.walk():
                _spread(node, data)
        found += [n for n in graph.walk() if n.kind == "prim::Loop" and _loop_bound(n, data)]
    return found


def _loop_bound(loop: Node, data: set[Value]) -> bool:
    """Whether ``loop``'s trip count, first condition or body condition is data-bound."""
    return any(v in data for v in loop.inputs[:2]) or loop.blocks[0].returns[0] in data


def _spread(node: Node, data: set[Value]) -> None:
    """Add to ``data`` what ``node`` makes data-bound (one pass; the caller iterates)."""
    if node.kind == "prim::Loop":
        body = node.blocks[0]
        bound = _loop_bound(node, data)
        if node.inputs[0] in data:
            data.add(body.params[0])  # the iteration counter
        for j, out in enumerate(node.outputs):  # carried values: initial, body's, or the trip
            if bound or node.inputs[j + 2] in data or body.returns[j + 1] in data:
                data.update((out, body.params[j + 1]))
        return
    if node.kind == "prim::If":
        decided = node.inputs[0] in data
        for j, out in enumerate(node.outputs):
            if decided or any(b.returns[j] in data for b in node.blocks):
                data.add(out)
        return
    if node.kind == "prim::GetAttr" or node.kind == "prim::Constant":
        return
    if any(v in data for v in node.inputs) or node.kind in DATA_DEPENDENT_SHAPES:
        data.update(node.outputs)
    elif node.kind not in SHAPE_QUERIES and node.kind not in SHAPE_ONLY_LISTS and node.kind not in CONTAINER_KINDS:
        if any(is_tensor_type(v.type) for v in node.inputs):
            data.update(v for v in node.outputs if not is_tensor_type(v.type))
