"""Op facts the passes ask: is a node pure, what does it mutate, what may alias what.

The facts come from one place, the operator registry (``vm.ops.registry``): a schema's
``(a!)`` annotations say which arguments an operator writes, a ``(a)`` on a return says
the result may alias an argument, ``OpInfo.pure`` is False for operators with effects
beyond those annotations (print, raise, random numbers), ``OpInfo.elementwise`` marks the
pointwise maps fusion may group.  Node kinds without a schema (prim:: nodes handled by a
factory or by the emitter) get their facts from the kind table of ``vm.ops.facts``.  Anything we know
nothing about is treated as impure: a pass may then neither remove nor move it.

Aliasing is answered with *alias classes*: a union-find over the values of a graph that
puts together every pair of values that may share memory (a view and its base, a list and
the tensors put into it, an If output and the branch values it returns, a loop-carried
value in all its forms).  A write to any member of a class is a write to the class.
This is a coarse stand-in for TorchScript's AliasDb, sound for what the passes need.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from vm.core import types as T
from vm.ir.graph import Graph, Node, Value
from vm.ops import registry
from vm.ops.facts import ALIASING_KINDS, EFFECT_KINDS, PURE_KINDS
from vm.ops.registry import OpInfo

_INFO_CACHE: dict[tuple[object, ...], OpInfo | None] = {}


def op_info(node: Node) -> OpInfo | None:
    """The registered overload ``node`` runs, or None (control flow, prims, unknown ops)."""
    if node.kind in PURE_KINDS or node.kind in EFFECT_KINDS:
        return None
    key = (node.kind, tuple([v.type for v in node.inputs]), tuple([v.type for v in node.outputs]))
    try:
        return _INFO_CACHE[key]
    except KeyError:
        info = _INFO_CACHE[key] = _resolve_info(node)
        return info


def _resolve_info(node: Node) -> OpInfo | None:
    from vm.core.errors import CompileError
    from vm.ir.resolve import resolve

    try:
        ref = resolve(node)
    except CompileError:  # unresolvable here: the caller falls back to the overload set
        return None
    try:
        return registry.lookup(ref.name)
    except KeyError:
        return None  # a prim factory


@cache
def _kind_facts(kind: str) -> tuple[bool, bool, bool, bool]:
    """(known, pure, mutates, aliases) over every overload of ``kind``, conservatively."""
    infos = registry.overloads(kind)
    if not infos:
        return (registry.has_factory(kind), True, kind.endswith("_"), True)
    return (
        True,
        all(i.pure for i in infos),
        any(i.schema.mutates for i in infos),
        any(i.schema.returns_alias for i in infos),
    )


def has_side_effects(node: Node) -> bool:
    """True when running ``node`` matters beyond its outputs and its ``(a!)`` writes:
    raise, print, calls, random numbers, unknown operators, a loop that may never end."""
    kind = node.kind
    if kind in EFFECT_KINDS:
        return True
    if kind == "prim::Loop":
        return may_not_terminate(node)
    if kind in PURE_KINDS:
        return False
    info = op_info(node)
    if info is not None and info.draws_unless and _may_draw(node, info, info.draws_unless):
        return True
    if info is not None:
        return not info.pure
    known, pure, _, _ = _kind_facts(kind)
    if not known:
        return True
    if registry.has_factory(kind) and not registry.overloads(kind):
        return False  # a prim factory: reads its inputs and attributes only
    return not pure


NO_TRIP_BOUND = 2**63 - 1  # the trip count TorchScript gives a ``while`` loop


def may_not_terminate(loop: Node) -> bool:
    """Can ``prim::Loop`` ``loop`` run forever?  Not when its trip count is a constant below
    TorchScript's ``while`` sentinel (2^63-1), nor when its initial or its body's continue
    condition is the constant False (it runs at most once); otherwise it can (``while
    True:``, ``while k < n:``, ``for i in range(n)`` with ``n`` unknown), and running it is
    an effect: eliminating it as dead would end a program TorchScript never ends."""
    trip, condition = loop.inputs[:2]
    if _constant(condition) is False or _constant(loop.blocks[0].returns[0]) is False:
        return False
    count = _constant(trip)
    return not (type(count) is int and count < NO_TRIP_BOUND)


def _constant(v: Value) -> object:
    """``v``'s value when a ``prim::Constant`` produces it (``...`` otherwise)."""
    from vm.ir.resolve import constant_value

    node = v.node
    return constant_value(node) if node is not None and node.kind == "prim::Constant" else ...


def _may_draw(node: Node, info: OpInfo, switches: tuple[tuple[str, object], ...]) -> bool:
    """Can this call of a conditionally random operator draw?  No when a constant argument
    turns its dropout off (the registration's ``draws_unless``); yes otherwise."""
    from vm.ir.resolve import constant_value

    names = [a.name for a in info.schema.arguments]
    for name, off in switches:
        if name not in names or names.index(name) >= len(node.inputs):
            continue
        producer = node.inputs[names.index(name)].node
        if producer is not None and producer.kind == "prim::Constant" and constant_value(producer) == off:
            return False
    return True


def mutated_inputs(node: Node) -> list[int]:
    """Indices of the inputs ``node`` writes to (from ``(a!)`` schema annotations, and
    the registration's ``writes_unless``, for the inputs its schema does not annotate, unless
    a constant argument turns them off: batch norm with the batch's statistics)."""
    info = op_info(node)
    if info is not None:
        args = info.schema.arguments
        written = [i for i, arg in enumerate(args[: len(node.inputs)]) if arg.mutated]
        conditional = info.writes_unless
        if conditional is not None:
            written += _conditional_writes(node, [a.name for a in args], conditional)
        return written
    if node.kind == "prim::SetAttr":  # writes its object, storing the value in it (read back by GetAttr)
        return [0]
    if node.kind in ("prim::CallFunction", "prim::CallMethod"):  # a callee may write its arguments
        return [i for i, v in enumerate(node.inputs) if is_mutable_type(v.type)]
    if node.kind in PURE_KINDS or node.kind in EFFECT_KINDS:
        return []
    known, _, mutates, _ = _kind_facts(node.kind)
    if mutates or not known:
        return [i for i, v in enumerate(node.inputs) if is_mutable_type(v.type)]
    return []


def _conditional_writes(node: Node, names: list[str], conditional: tuple[str, object, tuple[str, ...]]) -> list[int]:
    from vm.ir.resolve import constant_value

    switch, off, targets = conditional
    if switch in names and names.index(switch) < len(node.inputs):
        producer = node.inputs[names.index(switch)].node
        if producer is not None and producer.kind == "prim::Constant" and constant_value(producer) == off:
            return []
    return [
        names.index(name) for name in targets
        if name in names and names.index(name) < len(node.inputs)
        and is_mutable_type(node.inputs[names.index(name)].type)
        and node.inputs[names.index(name)].type != T.NONE
    ]


def returns_alias(node: Node) -> bool:
    """True when an output of ``node`` may share memory with (or contain) an input."""
    if node.kind in ALIASING_KINDS:
        return True
    if node.kind in PURE_KINDS or node.kind in EFFECT_KINDS:
        return False
    info = op_info(node)
    if info is not None:
        return info.schema.returns_alias or info.schema.mutates
    known, _, mutates, aliases = _kind_facts(node.kind)
    return aliases or mutates or not known


def is_pure(node: Node) -> bool:
    """No side effect and no write: the node may be removed, merged, or moved freely
    (its blocks, if any, are not inspected: If/Loop purity is the caller's business)."""
    return not has_side_effects(node) and not mutated_inputs(node)


@cache
def is_mutable_type(t: T.Type | None) -> bool:
    """Can a value of type ``t`` be written in place (or hold something that can)?"""
    if t is None or isinstance(t, (T.TensorType, T.ListType, T.DictType, T.ClassType, T.UnionType)):
        return True
    if isinstance(t, (T.OptionalType, T.FutureType)):
        return is_mutable_type(t.elem)
    if isinstance(t, T.TupleType):
        return any(is_mutable_type(e) for e in t.elems)
    return t == T.ANY


# (how, indices of the inputs the outputs inherit from, whether they alias, indices written)
_Template = tuple[str, tuple[int, ...], bool, tuple[int, ...]]


def _template(node: Node) -> _Template:
    """What ``node`` does to memory, as input indices (see ``AliasClasses._step``)."""
    info = op_info(node)
    written = tuple(mutated_inputs(node))
    if info is not None:
        annotated = tuple(i for i, arg in enumerate(info.schema.arguments[: len(node.inputs)]) if arg.alias)
        aliases = info.schema.returns_alias or info.schema.mutates
        if aliases and not annotated:
            # a wildcard result (``keys(Dict) -> str[](*)``, ``d[k] -> t(*)``): memory of its own
            # (the new list keys() returns) or any element its mutable inputs hold (the stored
            # tensor d[k] returns), as TorchScript's alias analysis takes a wildcard
            mutable = tuple(i for i, v in enumerate(node.inputs) if is_mutable_type(v.type))
            return ("other", mutable, True, written)
        return ("schema", annotated, aliases, written)
    mutable = tuple(i for i, v in enumerate(node.inputs) if is_mutable_type(v.type))
    return ("other", mutable, returns_alias(node), written)


def _nested_first(graph: Graph) -> list[Node]:
    """Every node, each control-flow node after the nodes of its blocks (no recursion)."""
    order: list[Node] = []
    stack: list[tuple[Node | None, list[Node]]] = [(None, list(reversed(graph.block.nodes)))]
    while stack:
        owner, pending = stack[-1]
        if not pending:
            stack.pop()
            if owner is not None:
                order.append(owner)
            continue
        node = pending.pop()
        if node.blocks:
            nested = [n for b in node.blocks for n in b.nodes]
            stack.append((node, list(reversed(nested))))
        else:
            order.append(node)
    return order


class AliasClasses:
    """Points-to sets over the values of a graph: which memory each value may refer to.

    Every fresh result (and every graph input) is a memory location of its own; a view
    refers to what its base refers to; an If output to what either branch returns; a
    loop-carried value to its initial value and to every body return; a container to its
    own location and to its elements' (and what a write stores into it, ``append``).
    Two values may alias when their sets meet, and a write to a value writes its whole
    set.  Unlike a union-find, a join (an If output that is %a or %b) does not make %a
    and %b alias each other.  Computed to a fixpoint, flow-insensitively.
    """

    def __init__(self, graph: Graph) -> None:
        self.points: dict[Value, frozenset[int]] = {}
        self.contents: dict[int, frozenset[int]] = {}
        self._fresh: dict[Value, int] = {}
        self._locations: dict[Value, frozenset[int]] = {}
        self._seen: set[Node] | None = set()  # nodes transferred once (None: all of them)
        self._queue: list[Node] = []
        self._queued: set[Node] = set()
        for v in graph.inputs:
            self._join(v, self._new(v))
        # What each node does to memory depends only on its schema: work it out once, so
        # the fixpoint below only joins sets.  Nested nodes go before the If/Loop that
        # owns them, so an If's outputs see its arms' results at once: one sweep in this
        # order, then a worklist of the nodes that read a set after it grew (loop-carried
        # values), each transferred again only when something it reads changed.
        order = _nested_first(graph)
        templates: dict[tuple[object, ...], _Template] = {}
        steps = {node: self._step(node, templates) for node in order}
        seen = self._seen
        for node in order:
            seen.add(node)
            self._transfer(node, steps[node])
        self._seen = None
        queue, queued = self._queue, self._queued
        while queue:
            node = queue.pop()
            queued.discard(node)
            self._transfer(node, steps[node])
        # the nodes that write, with the inputs they write (``mutated_inputs``), in order
        self.writes: list[tuple[Node, list[Value]]] = [(n, s[3]) for n, s in steps.items() if s[3]]
        self.written: frozenset[int] = frozenset().union(
            *(self.locations(v) for _, written in self.writes for v in written)
        )

    def _grew(self, v: Value) -> None:
        """``v``'s set grew: transfer again every node already transferred that reads it
        (a block's return is read by the If or Loop owning the block)."""
        seen, queued = self._seen, self._queued
        for use in v.uses:
            user = use.user
            node = user if isinstance(user, Node) else user.owner
            if node is None or node in queued or (seen is not None and node not in seen):
                continue
            queued.add(node)
            self._queue.append(node)

    def locations(self, v: Value) -> frozenset[int]:
        """The memory ``v`` may refer to, with everything stored inside it (asked after
        the fixpoint only, so each answer is worked out once)."""
        points = self.points.get(v)
        if not points:
            return frozenset()
        known = self._locations.get(v)
        if known is not None:
            return known
        contents = self.contents
        if contents and not contents.keys().isdisjoint(points):
            locs = set(points)
            todo = list(locs)
            while todo:
                for inner in contents.get(todo.pop(), ()):
                    if inner not in locs:
                        locs.add(inner)
                        todo.append(inner)
            points = frozenset(locs)
        self._locations[v] = points
        return points

    def is_written(self, v: Value) -> bool:
        """May some node of the graph write to memory ``v`` refers to?"""
        return bool(self.written) and not self.written.isdisjoint(self.locations(v))

    def _new(self, v: Value) -> frozenset[int]:
        if not is_mutable_type(v.type):
            return frozenset()
        if v not in self._fresh:
            self._fresh[v] = len(self._fresh)
        return frozenset({self._fresh[v]})

    def _join(self, v: Value, locs: frozenset[int]) -> bool:
        if not is_mutable_type(v.type):
            return False
        old = self.points.get(v, frozenset())
        if locs <= old:
            return False
        self.points[v] = old | locs
        self._grew(v)
        return True

    def _union(self, values: list[Value]) -> frozenset[int]:
        return frozenset().union(*(self.points.get(v, frozenset()) for v in values))

    def _step(self, node: Node, templates: dict[tuple[object, ...], _Template]) -> _Step:
        return _node_step(node, templates)

    def _transfer(self, node: Node, step: _Step) -> bool:
        changed = False
        how, sources, aliases, written, stored = step
        if how == "prim::If":
            for i, out in enumerate(node.outputs):
                changed |= self._join(out, self._union([b.returns[i] for b in node.blocks]))
            return changed
        if how == "prim::Loop":
            body = node.blocks[0]
            for j, out in enumerate(node.outputs):
                locs = self._union([node.inputs[j + 2], body.returns[j + 1]])
                changed |= self._join(body.params[j + 1], locs) | self._join(out, locs)
            return changed
        if how == "schema":
            for out in node.outputs:
                changed |= self._join(out, self._union(sources) if aliases else self._new(out))
        else:
            inherited = self._union(sources) if aliases else frozenset()
            for out in node.outputs:
                changed |= self._join(out, self._new(out) | inherited)
        if written and stored:  # append(list, el): the list now holds el
            inner = self._union(stored)
            for loc in self._union(written):
                old = self.contents.get(loc, frozenset())
                if not inner <= old:
                    self.contents[loc] = old | inner
                    changed = True
        return changed


_Step = tuple[str, list[Value], bool, list[Value], list[Value]]


def _node_step(node: Node, templates: dict[tuple[object, ...], _Template]) -> _Step:
    """(how outputs get locations, the inputs they inherit from, whether they alias, the
    inputs written, the values stored into the written ones)."""
    kind = node.kind
    if kind in ("prim::If", "prim::Loop"):
        return (kind, [], False, [], [])
    inputs = node.inputs
    # the facts depend on the kind and the types only (as ``op_info``'s overload):
    # worked out once per signature, then applied to each node's operands
    key = (kind, tuple([v.type for v in inputs]), tuple([v.type for v in node.outputs]))
    template = templates.get(key)
    if template is None:
        template = templates[key] = _template(node)
    how, source_at, aliases, written_at = template
    sources = [inputs[i] for i in source_at]
    written = [inputs[i] for i in written_at]
    stored = [v for v in sources if v not in written] if written or how == "schema" else []
    return (how, sources, aliases, written, stored)


def may_be_written(value: Value, templates: dict[tuple[object, ...], _Template] | None = None) -> bool:
    """False when no node can write memory ``value`` refers to; True means *maybe* (ask
    ``AliasClasses``).  Two searches along the edges ``AliasClasses`` carries its sets on
    (aliasing results, If outputs from branch returns, loop-carried values): back from
    ``value`` to every value its memory may come from, then forward from those to every
    value that may refer to the same memory; True as soon as a node reached writes (or
    stores into what it writes) a reached value.  A value read near its definition is
    so answered without the analysis of the whole graph."""
    templates = {} if templates is None else templates
    reached = {value}
    todo = [value]
    while todo:  # back to the origins (a graph input, an If's block parameter: none)
        for source in _back_sources(todo.pop(), templates):
            if source not in reached and is_mutable_type(source.type):
                reached.add(source)
                todo.append(source)
    return _written_forward(reached, templates)


def may_be_written_through(value: Value, templates: dict[tuple[object, ...], _Template] | None = None) -> bool:
    """Whether a node may write ``value``'s memory through ``value`` itself or what may
    alias it downstream (a view of it, a list holding it), not counting writes to the
    values it came from: ``self.buf.add_(x)`` writes the attribute ``buf``, while a
    ``self.count = ...`` elsewhere writes ``%self``, not the tensors it holds."""
    return _written_forward({value}, {} if templates is None else templates)


def _written_forward(reached: set[Value], templates: dict[tuple[object, ...], _Template]) -> bool:
    """True when a node writes (or stores into what it writes) a value that may share
    memory with one of ``reached`` (which this extends)."""
    todo = list(reached)
    while todo:  # forward to every value that may share memory with them
        current = todo.pop()
        for use in current.uses:
            user = use.user
            node = user if isinstance(user, Node) else user.owner
            if node is None:
                continue  # returned from the graph
            if node.kind in ("prim::If", "prim::Loop"):
                if node.kind == "prim::If" and node is user:
                    continue  # the condition
                targets = [*node.outputs, *(p for b in node.blocks for p in b.params)]
            else:
                _, sources, aliases, written, stored = _node_step(node, templates)
                if current in written or (written and current in stored):
                    return True
                targets = node.outputs if aliases and current in sources else []
            for out in targets:
                if out not in reached and is_mutable_type(out.type):
                    reached.add(out)
                    todo.append(out)
    return False


class WriteIndex:
    """``may_be_written`` and ``may_be_written_through`` for every value of some graphs at
    once, in work linear in their nodes and uses: what a runtime or an analysis asks of
    every weight, constant and attribute of a model (asked one by one, each question
    walked from ``%self`` to every attribute read: quadratic in the model).

    The same two searches, run backwards from their answers: ``through`` holds the values
    from which the forward search reaches a write (every value that is written, or stored
    into what is written, and every value whose aliasing edges lead to one); ``written``
    adds the values the backward search leads from one of those (an attribute read of a
    ``%self`` some other read of which is written).  Ask it of a graph that does not change
    between the questions; its answers are exactly those of the two functions."""

    def __init__(self, graphs: Iterable[Graph], templates: dict[tuple[object, ...], _Template] | None = None) -> None:
        templates = {} if templates is None else templates
        direct: set[Value] = set()  # written, or stored into what is written, by some use
        into: dict[Value, list[Value]] = {}  # forward edges, reversed: target -> values leading to it
        below: dict[Value, list[Value]] = {}  # backward edges, reversed: origin -> values it is a source of
        values: list[Value] = []

        def forward(current: Value, targets: Iterable[Value]) -> None:
            for out in targets:
                if is_mutable_type(out.type):
                    into.setdefault(out, []).append(current)

        for graph in graphs:
            values.extend(graph.inputs)
            for node in graph.walk():
                values.extend(node.outputs)
                for block in node.blocks:
                    values.extend(block.params)
                kind = node.kind
                if kind in ("prim::If", "prim::Loop"):
                    targets = [*node.outputs, *(p for b in node.blocks for p in b.params)]
                    carried = node.inputs if kind == "prim::Loop" else []
                    for current in (*carried, *(r for b in node.blocks for r in b.returns)):
                        forward(current, targets)
                    continue
                _, sources, aliases, written, stored = _node_step(node, templates)
                direct.update(written)
                if written:
                    direct.update(stored)
                if aliases:
                    for current in sources:
                        forward(current, node.outputs)
        for value in values:
            for source in _back_sources(value, templates):
                if is_mutable_type(source.type):
                    below.setdefault(source, []).append(value)
        through = set(direct)
        todo = list(direct)
        while todo:
            for current in into.get(todo.pop(), ()):
                if current not in through:
                    through.add(current)
                    todo.append(current)
        written_set = set(through)
        todo = [v for v in through if is_mutable_type(v.type)]
        while todo:
            for value in below.get(todo.pop(), ()):
                if value not in written_set:
                    written_set.add(value)
                    if is_mutable_type(value.type):
                        todo.append(value)
        self.through: frozenset[Value] = frozenset(through)
        self.written: frozenset[Value] = frozenset(written_set)

    def may_be_written(self, value: Value) -> bool:
        return value in self.written

    def may_be_written_through(self, value: Value) -> bool:
        return value in self.through


def _back_sources(current: Value, templates: dict[tuple[object, ...], _Template]) -> list[Value]:
    """The values ``current``'s memory may come from (one step of ``may_be_written``'s
    backward search, and of ``WriteIndex``'s)."""
    node = current.node
    if node is None:
        owner = current.block.owner if current.block is not None else None
        node = owner if owner is not None and owner.kind == "prim::Loop" else None
        if node is None:
            return []
    if node.kind == "prim::If":
        return [r for b in node.blocks for r in b.returns]
    if node.kind == "prim::Loop":
        return [*node.inputs[2:], *node.blocks[0].returns[1:]]
    _, sources, aliases, _, _ = _node_step(node, templates)
    return sources if aliases else []
