"""Dead-code elimination: mark what the result or an effect needs, sweep the rest.

This is TorchScript's inverse mark-and-sweep (``dead_code_elimination.cpp``) over our
IR.  *Mark* starts from the graph's returns and from every node with a side effect
(raise, print, calls, unknown operators) and follows a worklist of newly live values:

- a node is live when an output is live, when it has a side effect, when it contains a
  live node (an If or Loop around a print), or when it writes (``(a!)`` in its schema)
  to memory that a live value or a graph input may refer to (the caller sees a write to
  an input) -- the points-to sets of ``vm.ir.effects.AliasClasses``;
- a live node makes its inputs live; a live If makes its condition live, and for each
  live output the matching return of both branches;
- a live Loop makes its trip count, its initial condition and the body's continue
  condition live; a loop-carried value is live when its loop output or its body
  parameter is, and then its initial value and its body return are live too (a write
  or a read in iteration k can feed iteration k+1).

Each value enters the worklist once, when it becomes live, so marking is linear.

As in PyTorch, a pure operator that would have raised (a shape error, say) is removed
when its result is dead: only explicit raises are effects.

*Sweep* removes the nodes left unmarked, the If outputs nobody needs (with the branch
returns that fed them) and the dead loop-carried values (initial value, body parameter,
body return and loop output together).
"""

from __future__ import annotations

from compiler.passes import Target, apply_to_clone, note
from vm.ir.effects import AliasClasses, has_side_effects
from vm.ir.graph import Block, Graph, Node, Value


def eliminate_dead_code(target: Target) -> Target:
    """A copy of ``target`` where every remaining node has a side effect, writes to
    something observable, or has an output that is returned or used by a remaining node;
    every If output and loop-carried value is needed by the result or an effect."""
    return apply_to_clone(target, sweep_dead_code)


def sweep_dead_code(graph: Graph) -> None:
    """Eliminate dead code of ``graph`` in place (for other passes that clean up after)."""
    live = _Marker(graph).run()
    _sweep_block(graph.block, live)


class _Marker:
    """The mark phase as a worklist: each value becomes live once, and making it live
    does the work its liveness implies (its producer, the writers of its memory, the
    loop-carried value it is part of) once, so marking is linear in the graph plus the
    memory locations each value may refer to."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes = list(graph.walk())
        self.aliases = AliasClasses(graph)
        self.live_nodes: set[Node] = set()
        self.live_values: set[Value] = set()
        self.pending: list[Value] = []
        self.roots: set[int] = set()
        self.writers: dict[int, list[Node]] = {}
        self.carried: dict[Value, tuple[Node, int]] = {}  # loop body parameter -> (loop, j)
        for n, written in self.aliases.writes:  # the nodes with mutated inputs
            for v in written:
                for loc in self.aliases.locations(v):
                    self.writers.setdefault(loc, []).append(n)
        for n in self.nodes:
            if n.kind == "prim::Loop":
                for j, param in enumerate(n.blocks[0].params[1:]):
                    self.carried[param] = (n, j)

    def run(self) -> tuple[set[Node], set[Value]]:
        for v in self.graph.outputs:
            self._live(v)
        for v in self.graph.inputs:  # the caller sees writes to its inputs
            self._add_roots(self.aliases.locations(v))
        for node in self.nodes:
            if has_side_effects(node):
                self._mark(node)
        while self.pending:
            value = self.pending.pop()
            self._add_roots(self.aliases.locations(value))
            producer = value.node
            if producer is not None:
                self._mark(producer)
                if producer.kind == "prim::If":
                    self._mark_if_output(producer, _index(producer.outputs, value))
                elif producer.kind == "prim::Loop":
                    self._mark_carried(producer, _index(producer.outputs, value))
            elif value in self.carried:
                loop, j = self.carried[value]
                if loop in self.live_nodes:
                    self._mark_carried(loop, j)
        return self.live_nodes, self.live_values

    def _live(self, value: Value) -> None:
        if value not in self.live_values:
            self.live_values.add(value)
            self.pending.append(value)

    def _add_roots(self, locations: frozenset[int]) -> None:
        for loc in locations:
            if loc not in self.roots:
                self.roots.add(loc)
                for writer in self.writers.get(loc, ()):
                    self._mark(writer)

    def _mark(self, node: Node) -> None:
        """Mark ``node`` and its enclosing nodes live, with what each of them needs."""
        current: Node | None = node
        while current is not None and current not in self.live_nodes:
            self.live_nodes.add(current)
            if current.kind == "prim::If":
                self._live(current.inputs[0])
                for i, out in enumerate(current.outputs):
                    if out in self.live_values:
                        self._mark_if_output(current, i)
            elif current.kind == "prim::Loop":
                for v in current.inputs[:2]:
                    self._live(v)
                body = current.blocks[0]
                self._live(body.returns[0])
                for j, out in enumerate(current.outputs):
                    if out in self.live_values or body.params[j + 1] in self.live_values:
                        self._mark_carried(current, j)
            else:
                for v in current.inputs:
                    self._live(v)
            current = current.owner.owner if current.owner is not None else None

    def _mark_if_output(self, node: Node, i: int) -> None:
        if node in self.live_nodes:
            for block in node.blocks:
                self._live(block.returns[i])

    def _mark_carried(self, node: Node, j: int) -> None:
        body = node.blocks[0]
        for v in (node.inputs[j + 2], body.returns[j + 1], node.outputs[j], body.params[j + 1]):
            self._live(v)


def _index(values: list[Value], value: Value) -> int:
    for i, v in enumerate(values):
        if v is value:
            return i
    raise ValueError(f"%{value.name} is not an output of its producer")


def _sweep_block(block: Block, live: tuple[set[Node], set[Value]]) -> None:
    live_nodes = live[0]
    removed = 0
    for node in reversed(block.nodes):
        if node not in live_nodes:
            for out in node.outputs:
                assert not out.uses, f"dead %{out.name} still used"
            node.owner = None  # taken out of the block below, all at once
            node.destroy()
            removed += 1
        elif node.kind == "prim::If":
            _sweep_if(node, live)
        elif node.kind == "prim::Loop":
            _sweep_loop(node, live)
        else:
            for inner in node.blocks:
                _sweep_block(inner, live)
    if removed:
        block.nodes[:] = [n for n in block.nodes if n.owner is block]
        note("nodes removed", removed)


def _sweep_if(node: Node, live: tuple[set[Node], set[Value]]) -> None:
    for i in reversed(range(len(node.outputs))):
        if node.outputs[i] not in live[1]:
            for block in node.blocks:
                block.remove_return(i)
            node.remove_output(i)
            note("If outputs removed")
    for block in node.blocks:
        _sweep_block(block, live)


def _sweep_loop(node: Node, live: tuple[set[Node], set[Value]]) -> None:
    body = node.blocks[0]
    dead = [j for j, out in enumerate(node.outputs) if out not in live[1]]
    for j in reversed(dead):
        body.remove_return(j + 1)
    _sweep_block(body, live)
    for j in reversed(dead):
        body.remove_param(j + 1)
        node.remove_output(j)
        node.remove_input(j + 2)
        note("loop-carried values removed")
