"""Structural checks the pass tests share: exact use lists, scoping, and a name-free
canonical form of a module (to test that a second run of a pass changes nothing).

``check_wellformed`` complements ``compiler.verify.verify`` with what only the in-memory
IR has: every ``Value.uses`` entry matches an operand and every operand is listed in its
value's uses, and node/block back-pointers are right.
"""

from __future__ import annotations

from typing import Any

from compiler.passes import graphs_of
from compiler.passes.pool_constants import _tagged
from vm.ir.graph import Block, Graph, Module, Node, Use, Value
from vm.ir.printer import print_graph, print_module


def check_wellformed(target: Graph | Module) -> None:
    for graph in graphs_of(target):
        _check_graph(graph)


def _check_graph(graph: Graph) -> None:
    visible: set[Value] = set()
    _check_block(graph.block, None, visible)
    for node in graph.walk():
        sub = node.attrs.get("Subgraph")
        if isinstance(sub, Graph):
            assert len(sub.inputs) == len(node.inputs), f"{node!r}: subgraph arity"
            assert len(sub.outputs) == len(node.outputs), f"{node!r}: subgraph returns"
            _check_graph(sub)


def _check_block(block: Block, owner: Node | None, visible: set[Value]) -> None:
    assert block.owner is owner, f"{block!r}: wrong owner"
    scope = set(visible)
    for p in block.params:
        assert p.block is block and p.node is None, f"%{p.name}: parameter back-pointer"
        scope.add(p)
    for node in block.nodes:
        assert node.owner is block, f"{node!r}: wrong owner block"
        for i, v in enumerate(node.inputs):
            assert v in scope, f"{node!r}: %{v.name} used before definition or out of scope"
            assert Use(node, i) in v.uses, f"{node!r}: use {i} of %{v.name} not recorded"
        for inner in node.blocks:
            _check_block(inner, node, scope)
        for out in node.outputs:
            assert out.node is node, f"%{out.name}: producer back-pointer"
            assert out not in scope, f"%{out.name} defined twice"
            scope.add(out)
            for use in out.uses:
                operands = use.user.inputs if isinstance(use.user, Node) else use.user.returns
                assert use.index < len(operands) and operands[use.index] is out, f"%{out.name}: stale use {use}"
        if node.kind == "prim::If":
            assert len(node.blocks) == 2 and all(len(b.returns) == len(node.outputs) for b in node.blocks)
        if node.kind == "prim::Loop":
            body = node.blocks[0]
            n = len(node.outputs)
            assert len(node.inputs) == n + 2 and len(body.params) == n + 1 and len(body.returns) == n + 1
    for i, v in enumerate(block.returns):
        assert v in scope, f"return %{v.name} out of scope"
        assert Use(block, i) in v.uses, f"return {i} of %{v.name} not recorded"


def structure(target: Graph | Module) -> Any:
    """A hashable, name-free description of ``target``: equal iff the IR is the same up to
    value names."""
    return tuple(_graph_structure(g) for g in graphs_of(target))


def _graph_structure(graph: Graph) -> Any:
    numbers: dict[Value, int] = {}

    def num(v: Value) -> int:
        return numbers.setdefault(v, len(numbers))

    def block(b: Block) -> Any:
        params = tuple((num(p), str(p.type)) for p in b.params)
        nodes = tuple(node(n) for n in b.nodes)
        return (params, nodes, tuple(numbers.get(v, ("outer", v.name)) for v in b.returns))

    def node(n: Node) -> Any:
        ins = tuple(numbers.get(v, ("outer", v.name)) for v in n.inputs)
        attrs = tuple(
            sorted((k, _graph_structure(v) if isinstance(v, Graph) else _tagged(v)) for k, v in n.attrs.items())
        )
        blocks = tuple(block(b) for b in n.blocks)
        outs = tuple((num(o), str(o.type)) for o in n.outputs)
        return (n.kind, ins, attrs, blocks, outs)

    return block(graph.block)


def dump(target: Graph | Module) -> str:
    """The module as text, for failure messages."""
    return print_graph(target) if isinstance(target, Graph) else print_module(target)
