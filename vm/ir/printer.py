"""IR -> text, in the format PyTorch prints (``Graph::print`` / ``Node::print``).

The layout follows PyTorch exactly: the header lists the inputs separated by
``",\\n      "``; nodes are indented two spaces per level; a node without outputs starts
with `` = ``; a node's blocks print as ``blockN(params):`` one level deeper than the node,
their nodes and ``-> (returns)`` two levels deeper.  A fusion group node (any node with a
``Subgraph`` graph attribute) prints as ``kind_N`` and its graph follows the whole graph
as ``with kind_N = graph(...)``, numbered in document order; each sub-graph's own
sections follow it (depth first).  ``Module.functions`` print last as
``with NAME = graph(...)``.

Literals use vm/ir/literals.py, so floats, strings and tensor literals print as C++
prints them.  Everything is iterative: a graph nested 500 blocks deep prints without
recursion.

``structurally_equal(a, b)`` compares two modules or graphs up to value identity: same
kinds, attributes, types, names, sources, scopes, wiring and nested blocks/sub-graphs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from vm.core.enum_values import EnumValue
from vm.core.gc_pause import gc_paused
from vm.core.types import Type
from vm.ir.graph import MODULE_PRINTER, Block, Graph, Module, Node, TensorLiteral, Value
from vm.ir.literals import AnnotatedDict, AnnotatedList, Opaque, format_float, format_tensor_literal, quote

__all__ = ["print_module", "print_graph", "format_attr_value", "structurally_equal"]


def print_module(module: Module) -> str:
    """The module as text: the main graph, its sub-graphs, then its functions."""
    out: list[str] = []
    with gc_paused():
        _print_graph_into(module.main, out)
        for name, graph in module.functions.items():
            out.append(f"with {name} = ")
            _print_graph_into(graph, out)
    return "".join(out)


MODULE_PRINTER[:] = [print_module]


def print_graph(graph: Graph) -> str:
    """One graph (and its fusion sub-graphs as ``with`` sections)."""
    out: list[str] = []
    with gc_paused():
        _print_graph_into(graph, out)
    return "".join(out)


def _print_graph_into(graph: Graph, out: list[str]) -> None:
    groups: list[Node] = []
    out.append("graph(" + ",\n      ".join(map(_decl, graph.inputs)) + "):\n")
    _print_block_nodes(graph.block, out, groups)
    out.append("  return (" + ", ".join("%" + v.name for v in graph.outputs) + ")\n")
    for i, node in enumerate(groups):
        out.append(f"with {node.kind}_{i} = ")
        _print_graph_into(node.subgraph, out)


def _decl(value: Value) -> str:
    return f"%{value.name}" if value.type is None else f"%{value.name} : {value.type}"


def _print_block_nodes(top: Block, out: list[str], groups: list[Node]) -> None:
    """The nodes of ``top`` (level 1) and of every nested block, without recursion."""
    # Work items: ("node", node, level) or ("text", line).
    stack: list[tuple[str, Any, int]] = [("node", n, 1) for n in reversed(top.nodes)]
    while stack:
        what, item, level = stack.pop()
        if what == "text":
            out.append(item)
            continue
        node: Node = item
        out.append(_node_line(node, level, groups))
        pending: list[tuple[str, Any, int]] = []
        for i, block in enumerate(node.blocks):
            pad = "  " * (level + 1)
            params = ", ".join(map(_decl, block.params))
            pending.append(("text", f"{pad}block{i}({params}):\n", 0))
            pending.extend(("node", n, level + 2) for n in block.nodes)
            rets = ", ".join("%" + v.name for v in block.returns)
            pending.append(("text", f"{pad}  -> ({rets})\n", 0))
        stack.extend(reversed(pending))


def _node_line(node: Node, level: int, groups: list[Node]) -> str:
    parts = ["  " * level, ", ".join(map(_decl, node.outputs)), " = "]
    attrs = node.attrs
    if node.kind == "prim::PythonOp" and "^name" in attrs:
        parts.append("^" + str(attrs["^name"]))
        rest = {k: v for k, v in attrs.items() if not k.startswith("^")}
        parts.append(_attrs_text(rest))
        parts.append(str(attrs.get("^scalars", "()")))
    elif isinstance(attrs.get("Subgraph"), Graph):
        parts.append(f"{node.kind}_{len(groups)}")
        groups.append(node)
        rest = {k: v for k, v in attrs.items() if k != "Subgraph"}
        if rest:
            parts.append(_attrs_text(rest))
    else:
        parts.append(node.kind)
        if attrs:
            parts.append(_attrs_text(attrs))
    parts.append("(" + ", ".join("%" + v.name for v in node.inputs) + ")")
    if node.scope is not None:
        parts.append(f", scope: {node.scope}")
    if node.source is not None:
        parts.append(f" # {node.source}")
    parts.append("\n")
    return "".join(parts)


def _attrs_text(attrs: dict[str, Any]) -> str:
    return "[" + ", ".join(f"{k}={format_attr_value(v)}" for k, v in attrs.items()) + "]"


def format_attr_value(value: Any) -> str:
    """An attribute payload as PyTorch prints it: ``1``, ``1.``, ``"s"``, ``[1, 2]``, ``{2}``..."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, Opaque):
        return str(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, TensorLiteral):
        return format_tensor_literal(value)
    if isinstance(value, (Type, EnumValue)):
        return str(value)
    if isinstance(value, list):
        body = "[" + ", ".join(format_attr_value(v) for v in value) + "]"
        return f"annotate({value.annotation}, {body})" if isinstance(value, AnnotatedList) else body
    if isinstance(value, tuple):
        if len(value) == 1:
            return f"({format_attr_value(value[0])},)"
        return "(" + ", ".join(format_attr_value(v) for v in value) + ")"
    if isinstance(value, dict):
        body = "{" + ", ".join(f"{format_attr_value(k)}: {format_attr_value(v)}" for k, v in value.items()) + "}"
        return f"annotate({value.annotation}, {body})" if isinstance(value, AnnotatedDict) else body
    if isinstance(value, Graph):
        return "<Graph>"
    raise TypeError(f"cannot print attribute payload {value!r}")


# ----------------------------------------------------------------------------- equality


def structurally_equal(a: Module | Graph, b: Module | Graph) -> bool:
    """True when ``a`` and ``b`` are the same program: see :func:`structural_diff`."""
    return structural_diff(a, b) is None


def structural_diff(a: Module | Graph, b: Module | Graph) -> str | None:
    """None when equal, else a sentence naming the first difference found."""
    if isinstance(a, Module) and isinstance(b, Module):
        if list(a.functions) != list(b.functions):
            return f"functions differ: {list(a.functions)} vs {list(b.functions)}"
        pairs = [(a.main, b.main)] + [(a.functions[k], b.functions[k]) for k in a.functions]
    elif isinstance(a, Graph) and isinstance(b, Graph):
        pairs = [(a, b)]
    else:
        return f"cannot compare {type(a).__name__} with {type(b).__name__}"
    while pairs:
        ga, gb = pairs.pop()
        diff = _graph_diff(ga, gb, pairs)
        if diff is not None:
            return diff
    return None


def _graph_diff(a: Graph, b: Graph, subgraphs: list[tuple[Graph, Graph]]) -> str | None:
    mapping: dict[int, Value] = {}
    blocks: list[tuple[Block, Block]] = [(a.block, b.block)]
    while blocks:
        ba, bb = blocks.pop()
        diff = _values_diff(ba.params, bb.params, mapping, "block parameters")
        if diff is None and len(ba.nodes) != len(bb.nodes):
            diff = f"a block has {len(ba.nodes)} vs {len(bb.nodes)} nodes"
        if diff is not None:
            return diff
        for na, nb in zip(ba.nodes, bb.nodes):
            diff = _node_diff(na, nb, mapping, subgraphs)
            if diff is not None:
                return diff
            blocks.extend(zip(na.blocks, nb.blocks))
        diff = _uses_diff(ba.returns, bb.returns, mapping, "block returns")
        if diff is not None:
            return diff
    return None


def _node_diff(a: Node, b: Node, mapping: dict[int, Value], subgraphs: list[tuple[Graph, Graph]]) -> str | None:
    where = f"{a.kind} ({a.span})"
    if a.kind != b.kind:
        return f"kinds differ: {a.kind} vs {b.kind}"
    if (a.source, a.scope) != (b.source, b.scope):
        return f"{where}: source/scope differ: {(a.source, a.scope)} vs {(b.source, b.scope)}"
    if len(a.blocks) != len(b.blocks):
        return f"{where}: {len(a.blocks)} vs {len(b.blocks)} blocks"
    if list(a.attrs) != list(b.attrs):
        return f"{where}: attribute names differ: {list(a.attrs)} vs {list(b.attrs)}"
    for key, va in a.attrs.items():
        vb = b.attrs[key]
        if isinstance(va, Graph) and isinstance(vb, Graph):
            subgraphs.append((va, vb))
        elif not payload_equal(va, vb):
            return f"{where}: attribute {key} differs: {va!r} vs {vb!r}"
    return _uses_diff(a.inputs, b.inputs, mapping, f"{where} inputs") or _values_diff(
        a.outputs, b.outputs, mapping, f"{where} outputs"
    )


def _values_diff(xs: list[Value], ys: list[Value], mapping: dict[int, Value], what: str) -> str | None:
    if len(xs) != len(ys):
        return f"{what}: {len(xs)} vs {len(ys)} values"
    for x, y in zip(xs, ys):
        if x.name != y.name or x.type != y.type:
            return f"{what}: %{x.name} : {x.type} vs %{y.name} : {y.type}"
        mapping[id(x)] = y
    return None


def _uses_diff(xs: list[Value], ys: list[Value], mapping: dict[int, Value], what: str) -> str | None:
    if len(xs) != len(ys):
        return f"{what}: {len(xs)} vs {len(ys)} operands"
    for x, y in zip(xs, ys):
        if mapping.get(id(x)) is not y:
            return f"{what}: %{x.name} is not wired like %{y.name}"
    return None


def payload_equal(a: Any, b: Any) -> bool:
    """Attribute payload equality where nan equals nan and 0. differs from -0., types must match."""
    todo: list[tuple[Any, Any]] = [(a, b)]
    while todo:
        x, y = todo.pop()
        if _kind(x) is not _kind(y):
            return False
        if isinstance(x, float):
            if not (x == y and math.copysign(1, x) == math.copysign(1, y) or math.isnan(x) and math.isnan(y)):
                return False
        elif isinstance(x, TensorLiteral):
            if (x.shape, x.dtype, x.approximate) != (y.shape, y.dtype, y.approximate):
                return False
            if (x.values is None) != (y.values is None):
                return False
            if x.values is not None:
                if len(x.values) != len(y.values):
                    return False
                todo.extend(zip(x.values, y.values))
        elif isinstance(x, (list, tuple)):
            if len(x) != len(y):
                return False
            todo.extend(zip(x, y))
        elif isinstance(x, dict):
            if list(x) != list(y):
                return False
            todo.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


def _kind(x: Any) -> type:
    if isinstance(x, AnnotatedList):
        return list
    if isinstance(x, AnnotatedDict):
        return dict
    return type(x)


def iter_graphs(module: Module) -> Iterator[Graph]:
    """Every graph of the module: main, functions, and all fusion sub-graphs."""
    todo = [module.main, *module.functions.values()]
    while todo:
        graph = todo.pop()
        yield graph
        for node in graph.walk():
            todo.extend(v for v in node.attrs.values() if isinstance(v, Graph))
