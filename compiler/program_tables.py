"""The tables a compiled program carries about its IR (see ``vm.self_reads``), made here,
on the compiler's side: ``%self``'s attribute reads, the span of every node, and the
operator every node resolved to (what the static runtime binds, without resolving)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from compiler import types as T
from compiler.ir import Graph, Module

SelfRead = tuple[int, str, str, bool, Any]


def _span_tuple(span: Any) -> tuple[Any, ...] | None:
    return None if span is None else (span.file, span.line, span.col, span.source_line)


def self_reads_of(graph: Graph) -> tuple[SelfRead, ...]:
    """The GetAttr tree rooted at ``graph``'s ``%self`` (empty for a function)."""
    if not graph.inputs or not isinstance(graph.inputs[0].type, T.ClassType):
        return ()
    reads: list[SelfRead] = []
    pending: list[tuple[Any, int]] = [(graph.inputs[0], -1)]
    while pending:
        value, parent = pending.pop(0)
        for use in value.uses:
            node = use.user
            if getattr(node, "kind", None) != "prim::GetAttr" or use.index != 0:
                continue
            out = node.outputs[0]
            type_text = "" if out.type is None else str(out.type)
            reads.append((parent, str(node.attrs["name"]), type_text, bool(node.attrs.get("required")), _span_tuple(node.span)))
            if isinstance(out.type, T.ClassType):
                pending.append((out, len(reads) - 1))
    return tuple(reads)


def all_nodes(module: Module) -> Iterator[Any]:
    """Every node of every graph of ``module``, fusion sub-graphs included, in a fixed
    order: each graph walked in program order, a node's sub-graph right after it."""
    for graph in (module.main, *module.functions.values()):
        stack = [graph.walk()]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            yield node
            for value in node.attrs.values():
                if isinstance(value, Graph):
                    stack.append(value.walk())


def node_spans_of(module: Module) -> tuple[Any, ...]:
    """The span of every node of ``module`` (``all_nodes`` order), as plain tuples."""
    return tuple(_span_tuple(node.span) for node in all_nodes(module))


def node_refs_of(module: Module, emitted: Module, resolved: Mapping[Any, Any]) -> tuple[Any, ...]:
    """The operator each node of ``module`` resolved to (``all_nodes`` order; None for
    constants and control flow), read from ``resolved``, keyed by the nodes of
    ``emitted``: ``module`` with ``prim::Drop`` nodes added (``insert_drops``).  Empty
    when the two do not line up node for node (then nothing is recorded)."""
    refs: list[Any] = []
    kept = (n for n in all_nodes(emitted) if n.kind != "prim::Drop")
    for node in all_nodes(module):
        twin = next(kept, None)
        if twin is None or twin.kind != node.kind:
            return ()
        refs.append(resolved.get(twin))
    return tuple(refs) if next(kept, None) is None else ()
