"""The tables a compiled program carries about its IR (see ``vm.program.self_reads``), made here,
on the compiler's side: ``%self``'s attribute reads, the span of every node, and the
operator every node resolved to (what the static runtime binds, without resolving)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler import types as T
from vm.ir.graph import Graph, Module, all_nodes

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
def check_table(module: Module) -> dict[str, Any]:
    """The check table of ``module`` (``vm.program.check_graph``): the nodes of its entry graph
    that the run-time checks read (``vm.binding.preflight.checked_kind``, tensor constants, and
    the blocks around them), each function's tensor constants, and whether an input of the
    entry reaches a strict operator.  JSON-able; values, types and spans are indices into
    tables stored once."""
    from vm.binding.preflight import checked_kind, reaches_strict
    from vm.program.check_graph import TABLE_VERSION

    writer = _CheckWriter(checked_kind)
    main = module.main
    takes_self = bool(main.inputs) and isinstance(main.inputs[0].type, T.ClassType)
    return {
        "version": TABLE_VERSION,
        "main": writer.block(main.block),
        "functions": [writer.block(g.block, constants_only=True) for g in module.functions.values()],
        "reaches_strict": reaches_strict(main.inputs[1:] if takes_self else main.inputs),
        "values": writer.values,
        "types": list(writer.types),
        "spans": list(writer.spans),
    }


class _CheckWriter:
    def __init__(self, checked_kind: Any) -> None:
        self.checked_kind = checked_kind
        self.ids: dict[Any, int] = {}
        self.values: list[tuple[str, int]] = []
        self.types: dict[str | None, int] = {}
        self.spans: dict[tuple[Any, ...] | None, int] = {}

    def value(self, value: Any) -> int:
        found = self.ids.get(value)
        if found is None:
            text = None if value.type is None else str(value.type)
            found = self.ids[value] = len(self.values)
            self.values.append((value.name, self.types.setdefault(text, len(self.types))))
        return found

    def block(self, block: Any, constants_only: bool = False) -> list[Any] | None:
        nodes = []
        for node in block.nodes:
            stored = self.node(node, constants_only)
            if stored is not None:
                nodes.append(stored)
        return [[self.value(p) for p in block.params], nodes, [self.value(r) for r in block.returns]]

    def node(self, node: Any, constants_only: bool) -> list[Any] | None:
        from vm.ir.graph import TensorLiteral

        stored_attrs: dict[str, Any] = {}
        blocks: list[Any] = []
        if node.kind == "prim::Constant":
            literal = node.attrs.get("value")
            if not isinstance(literal, TensorLiteral) or not node.outputs:
                return None
            shape = None if literal.shape is None else list(literal.shape)
            stored_attrs["tensor"] = [literal.values is not None, shape, literal.dtype]
        elif constants_only:
            return None
        elif node.blocks:
            blocks = [self.block(b) for b in node.blocks]
            if not any(b[1] for b in blocks):  # nothing checked inside
                return None
        elif not self.checked_kind(node.kind):
            return None
        if node.kind == "prim::GetAttr":
            stored_attrs["name"] = str(node.attrs["name"])
            if node.attrs.get("required"):
                stored_attrs["required"] = 1
        span = self.spans.setdefault(_span_tuple(node.span), len(self.spans))
        return [node.kind, [self.value(v) for v in node.inputs], [self.value(v) for v in node.outputs],
                stored_attrs, blocks, span]
