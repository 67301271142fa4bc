"""Dead-code elimination: mark what the result or an effect needs, sweep the rest.

This is TorchScript's inverse mark-and-sweep (``dead_code_elimination.cpp``) over our
IR.  *Mark* starts from the graph's returns and from every node with a side effect
(raise, print, calls, unknown operators) and runs to a fixpoint over the whole graph:

- a node is live when an output is live, when it has a side effect, when it contains a
  live node (an If or Loop around a print), or when it writes (``(a!)`` in its schema)
  to memory that a live value or a graph input may refer to (the caller sees a write to
  an input) -- the points-to sets of ``compiler.analysis.effects.AliasClasses``;
- a live node makes its inputs live; a live If makes its condition live, and for each
  live output the matching return of both branches;
- a live Loop makes its trip count, its initial condition and the body's continue
  condition live; a loop-carried value is live when its loop output or its body
  parameter is, and then its initial value and its body return are live too.  Because a
  write or a read in iteration k can feed iteration k+1, marking repeats until nothing
  changes.

As in PyTorch, a pure operator that would have raised (a shape error, say) is removed
when its result is dead: only explicit raises are effects.

*Sweep* removes the nodes left unmarked, the If outputs nobody needs (with the branch
returns that fed them) and the dead loop-carried values (initial value, body parameter,
body return and loop output together).
"""

from __future__ import annotations

from compiler.analysis.effects import AliasClasses, has_side_effects, mutated_inputs
from compiler.ir import Block, Graph, Node, Value
from compiler.passes import Target, apply_to_clone, note


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
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.nodes = list(graph.walk())
        self.aliases = AliasClasses(graph)
        self.live_nodes: set[Node] = set()
        self.live_values: set[Value] = set(graph.outputs)
        self.observed = frozenset().union(*(self.aliases.locations(v) for v in graph.inputs))
        self.writes = {
            n: frozenset().union(*(self.aliases.locations(n.inputs[i]) for i in mutated_inputs(n))) for n in self.nodes
        }
        self.effects = {n for n in self.nodes if has_side_effects(n)}

    def run(self) -> tuple[set[Node], set[Value]]:
        changed = True
        while changed:
            changed = False
            roots = self.observed.union(*(self.aliases.locations(v) for v in self.live_values))
            for node in self.nodes:
                if self._wanted(node, roots) and self._mark(node):
                    changed = True
                if node.kind == "prim::Loop" and node in self.live_nodes:
                    changed |= self._mark_loop(node)
        return self.live_nodes, self.live_values

    def _wanted(self, node: Node, roots: frozenset[int]) -> bool:
        if node in self.effects or any(v in self.live_values for v in node.outputs):
            return True
        return bool(self.writes[node] & roots)

    def _mark(self, node: Node) -> bool:
        """Mark ``node`` and its enclosing nodes live; True if anything was new."""
        new = False
        current: Node | None = node
        while current is not None and current not in self.live_nodes:
            new = True
            self.live_nodes.add(current)
            if current.kind == "prim::If":
                self.live_values.add(current.inputs[0])
            elif current.kind == "prim::Loop":
                self.live_values.update(current.inputs[:2])
                self.live_values.add(current.blocks[0].returns[0])
            else:
                self.live_values.update(current.inputs)
            current = current.owner.owner if current.owner is not None else None
        if node.kind == "prim::If":
            new |= self._mark_if(node)
        return new

    def _mark_if(self, node: Node) -> bool:
        before = len(self.live_values)
        for i, out in enumerate(node.outputs):
            if out in self.live_values:
                self.live_values.update(block.returns[i] for block in node.blocks)
        return len(self.live_values) != before

    def _mark_loop(self, node: Node) -> bool:
        before = len(self.live_values)
        body = node.blocks[0]
        for j, out in enumerate(node.outputs):
            if out in self.live_values or body.params[j + 1] in self.live_values:
                self.live_values.update((node.inputs[j + 2], body.returns[j + 1], out, body.params[j + 1]))
        if node.kind == "prim::Loop":
            self.live_values.update(node.inputs[:2])
        return len(self.live_values) != before


def _sweep_block(block: Block, live: tuple[set[Node], set[Value]]) -> None:
    live_nodes = live[0]
    for node in reversed(list(block.nodes)):
        if node not in live_nodes:
            for out in node.outputs:
                assert not out.uses, f"dead %{out.name} still used"
            node.destroy()
            note("nodes removed")
        elif node.kind == "prim::If":
            _sweep_if(node, live)
        elif node.kind == "prim::Loop":
            _sweep_loop(node, live)
        else:
            for inner in node.blocks:
                _sweep_block(inner, live)


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
