"""Inlining: a call of a known graph is replaced by a copy of the callee's body.

As TorchScript's ``Inline`` (``inliner.cpp``): a ``prim::CallFunction`` whose first
input is a function constant ``prim::Constant[name="f"]()`` naming a graph of
``Module.functions``, or a ``prim::CallMethod[name="m"]`` whose method graph is in the
module (under ``"<class>.m"``, or ``"m"`` when that graph's first input has the class
type), is replaced by the callee's nodes: the callee's parameters map to the call's
arguments (without the function constant), every copied value gets a name fresh in the
caller, the call's outputs are replaced by the copied return values, and each copied
node keeps its own span.  Calls inside nested blocks are inlined in place.

A call of a name the module does not define, but that ``compiler.known``
knows (``relu``, ``layer_norm``, ``pad``... which a ``.graph`` dump calls without their
bodies), first gets irvm's body for it in ``Module.functions``, when the call's arity and
argument types fit one; the nodes copied from such a body take the call's span.  Known
bodies that no call uses any more are removed again, so the result holds no function the
input did not (a call that fits no body stays, and the emitter reports it).

Callees are inlined bottom-up, so a body arrives with its own calls already inlined.  A
function that can reach itself through calls (directly or through others) is never
inlined: its calls stay calls, and the emitter gives them a frame.  Functions stay in
``Module.functions`` even when nothing calls them any more.
"""

from __future__ import annotations

from compiler import types as T
from compiler.known import known_body
from compiler.passes import Target, graphs_of, note, owned_copy
from vm.ir.graph import Block, Graph, Module, Node, Value, clone_node


def inline_calls(target: Target) -> Target:
    """A copy of ``target`` with no call left to a known graph, except calls to graphs
    that are (mutually) recursive."""
    copy = owned_copy(target)
    functions = copy.functions if isinstance(copy, Module) else {}
    added = _add_known_functions(graphs_of(copy), functions)
    recursive = _recursive_functions(functions)
    for graph in graphs_of(copy):
        _inline_graph(graph, functions, recursive)
    for name in added:
        if not any(callee_name(n, {name: functions[name]}) for g in graphs_of(copy) for n in g.walk()):
            del functions[name]
    return copy


def _add_known_functions(graphs: list[Graph], functions: dict[str, Graph]) -> list[str]:
    """Give every call of an undefined function that ``compiler.known`` has a fitting
    body for that body in ``functions`` (and so for the calls inside the bodies added);
    returns the keys added.  A second overload of the same name goes under ``name#k``,
    and the call is pointed at it."""
    added: list[str] = []
    pending = list(graphs)
    while pending:  # a known body may call known functions itself
        graph = pending.pop()
        taken = graph.value_names()
        for node in graph.walk():
            if node.kind != "prim::CallFunction" or not node.inputs:
                continue
            producer = node.inputs[0].node
            name = producer.attrs.get("name") if producer is not None and producer.kind == "prim::Constant" else None
            if not isinstance(name, str) or (name in functions and name not in added):
                continue
            found = known_body(name, node)
            if found is None:
                continue
            index, body = found
            key = name if index == 0 else f"{name}#{index}"
            if key not in functions:
                functions[key] = body
                added.append(key)
                pending.append(body)
            if key != name:
                _point_at(node, key, taken)
    return added


def _point_at(call: Node, key: str, taken: set[str]) -> None:
    """Make ``call`` use a function constant named ``key`` (a new one right before it,
    as the old constant may serve other calls)."""
    old = call.inputs[0]
    assert old.node is not None and call.owner is not None
    constant = Node("prim::Constant", attrs={"name": key}, span=old.node.span)
    constant.add_output(_fresh(f"{old.name}.{key.replace('#', '_')}", taken), old.type)
    call.owner.insert_before(call, constant)
    call.replace_input(0, constant.output)


def callee_name(node: Node, functions: dict[str, Graph]) -> str | None:
    """The key in ``functions`` of the graph ``node`` calls, or None."""
    if node.kind == "prim::CallFunction" and node.inputs:
        producer = node.inputs[0].node
        if producer is not None and producer.kind == "prim::Constant":
            name = producer.attrs.get("name")
            return name if isinstance(name, str) and name in functions else None
    if node.kind == "prim::CallMethod" and node.inputs:
        method = node.attrs.get("name")
        if not isinstance(method, str):
            return None
        self_type = node.inputs[0].type
        if isinstance(self_type, T.ClassType) and f"{self_type.qualname}.{method}" in functions:
            return f"{self_type.qualname}.{method}"
        graph = functions.get(method)
        if graph is not None and graph.inputs and graph.inputs[0].type == self_type:
            return method
    return None


def _calls(graph: Graph, functions: dict[str, Graph]) -> list[tuple[Node, str]]:
    return [(n, name) for n in graph.walk() if (name := callee_name(n, functions)) is not None]


def _recursive_functions(functions: dict[str, Graph]) -> set[str]:
    edges = {name: {callee for _, callee in _calls(g, functions)} for name, g in functions.items()}
    recursive: set[str] = set()
    for start in functions:
        stack, seen = list(edges[start]), set()
        while stack:
            name = stack.pop()
            if name == start:
                recursive.add(start)
                break
            if name not in seen:
                seen.add(name)
                stack.extend(edges[name])
    return recursive


def _inline_graph(graph: Graph, functions: dict[str, Graph], recursive: set[str]) -> None:
    taken = graph.value_names()
    changed = True
    while changed:  # a copied body may bring calls of its own
        changed = False
        for node, name in _calls(graph, functions):
            if name not in recursive:
                _inline_call(node, functions[name], taken)
                note("calls inlined")
                changed = True


def _inline_call(call: Node, callee: Graph, taken: set[str]) -> None:
    block = call.owner
    assert block is not None
    args = call.inputs[1:] if call.kind == "prim::CallFunction" else call.inputs
    assert len(args) == len(callee.inputs), f"{call!r}: {len(args)} arguments for {len(callee.inputs)} parameters"
    mapping: dict[int, Value] = {id(p): a for p, a in zip(callee.inputs, args)}
    copies = []
    for node in callee.nodes:
        copy = clone_node(node, mapping)
        _rename(copy, taken)
        _adopt_span(copy, call)
        copy.owner = block
        copies.append(copy)
    at = block.index_of(call)
    block.nodes[at:at] = copies  # one splice, not one list insertion per node
    for out, ret in zip(call.outputs, callee.outputs):
        out.replace_all_uses_with(mapping.get(id(ret), ret))
    call.destroy()


def _adopt_span(node: Node, call: Node) -> None:
    """A copied node without a span (one of a known body) points at the call instead."""
    for inner in [node, *node.walk()]:
        if inner.span is None:
            inner.span = call.span
            inner.source = call.source


def _rename(node: Node, taken: set[str]) -> None:
    values: list[Value] = list(node.outputs)
    for inner in node.walk():
        values.extend(inner.outputs)
    for b in _blocks(node):
        values.extend(b.params)
    for v in values:
        v.name = _fresh(v.name, taken)


def _blocks(node: Node) -> list[Block]:
    out = list(node.blocks)
    for inner in node.walk():
        out.extend(inner.blocks)
    return out


def _fresh(base: str, taken: set[str]) -> str:
    name, i = base, 0
    while name in taken:
        i += 1
        name = f"{base}.{i}"
    taken.add(name)
    return name
