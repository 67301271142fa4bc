"""The part of the optimized IR that a run checks before its first operator, as the VM
reads it from an ``.irbc`` file: a few small graph records, no compiler.

Binding weights and refusing what PyTorch would refuse (``vm.binding.weights.bind_self`` and
``bind_constants``, ``vm.binding.preflight``'s dtype guard, ``vm.binding.weight_checks``) walk the IR:
``prim::GetAttr`` chains from ``%self``, tensor constants, the nodes whose argument dtypes
must agree, and the nodes that carry a dtype from one to the next.  A program compiled in
this process hands them the compiler's IR; a program read from a file carries a *check
table* instead (``compiler.program_tables.check_table``, member ``checks.json``): just those
nodes, with their values' names, types (as printed, read by ``vm.core.type_text``) and spans,
inside the blocks that hold them.  ``from_table`` rebuilds it as the records below, which
have the attributes the checks read on the compiler's ``Node``/``Value``/``Block``/
``Graph`` (``kind``, ``inputs``, ``outputs``, ``attrs``, ``blocks``, ``span``, ``owner``,
``uses``, ``returns``, ``walk``), so one implementation of each check serves both.

A node the table leaves out changes no check: the dtype walk knows nothing of its
outputs either way.  What needs every node, whether the inputs reach a strict operator at
all (``vm.binding.preflight``), is decided by the compiler and stored as ``reaches_strict``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from vm.core.errors import BytecodeError, Span
from vm.core.type_text import parse_type_text

TABLE_VERSION = 1


@attrs.frozen
class Use:
    user: Any  # a CheckNode, or the CheckBlock that returns the value
    index: int


@attrs.define(eq=False)
class CheckValue:
    name: str
    type: Any
    node: CheckNode | None = None
    uses: list[Use] = attrs.field(factory=list)


@attrs.define(eq=False)
class CheckNode:
    kind: str
    inputs: list[CheckValue]
    outputs: list[CheckValue]
    attrs: dict[str, Any]
    blocks: list[CheckBlock]
    span: Span | None
    owner: CheckBlock | None = None


@attrs.define(eq=False)
class CheckBlock:
    params: list[CheckValue]
    nodes: list[CheckNode] = attrs.field(factory=list)
    returns: list[CheckValue] = attrs.field(factory=list)
    owner: CheckNode | None = None


@attrs.frozen
class TensorConstant:
    """What the checks know of a ``prim::Constant`` tensor literal: whether its values were
    printed (None for ``<Tensor>``, bound from the weights by name), its shape and dtype."""

    values: tuple[()] | None
    shape: tuple[int, ...] | None
    dtype: str | None


@attrs.define(eq=False)
class CheckGraph:
    block: CheckBlock
    span: Span | None = None

    @property
    def inputs(self) -> list[CheckValue]:
        return self.block.params

    def walk(self) -> Iterator[CheckNode]:
        """Every node, a node's blocks right after it (the compiler's ``Graph.walk``)."""
        stack = [iter(self.block.nodes)]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            yield node
            for block in reversed(node.blocks):
                stack.append(iter(block.nodes))


@attrs.frozen
class CheckTables:
    """The entry graph, each function's tensor constants, and whether any input reaches
    a strict operator (``vm.binding.preflight``)."""

    main: CheckGraph
    functions: tuple[CheckGraph, ...]
    reaches_strict: bool


def from_table(table: dict[str, Any], where: str = "<program>") -> CheckTables:
    """The records of a check table; BytecodeError when it is malformed."""
    try:
        return _Reader(table).tables()
    except BytecodeError as err:
        raise BytecodeError(f"{where}: malformed check table ({err})") from None
    except (KeyError, IndexError, TypeError, ValueError) as err:
        raise BytecodeError(f"{where}: malformed check table ({type(err).__name__}: {err})") from None


class _Reader:
    def __init__(self, table: dict[str, Any]) -> None:
        if table.get("version") != TABLE_VERSION:
            raise BytecodeError(f"check table version {table.get('version')!r}, this irvm reads {TABLE_VERSION}")
        types = [None if t is None else parse_type_text(str(t)) for t in table["types"]]
        spans = [None if s is None else Span(str(s[0]), int(s[1]), int(s[2]), s[3]) for s in table["spans"]]
        self.table, self.spans = table, spans
        self.values = [CheckValue(str(name), types[t]) for name, t in table["values"]]

    def tables(self) -> CheckTables:
        table = self.table
        main = CheckGraph(self.block(table["main"], None))
        functions = tuple(CheckGraph(self.block(f, None)) for f in table["functions"])
        return CheckTables(main, functions, bool(table["reaches_strict"]))

    def block(self, stored: list[Any], owner: CheckNode | None) -> CheckBlock:
        params, nodes, returns = stored
        block = CheckBlock([self.values[i] for i in params], owner=owner)
        for stored_node in nodes:
            block.nodes.append(self.node(stored_node, block))
        block.returns = [self.values[i] for i in returns]
        for k, value in enumerate(block.returns):
            value.uses.append(Use(block, k))
        return block

    def node(self, stored: list[Any], owner: CheckBlock) -> CheckNode:
        kind, inputs, outputs, stored_attrs, blocks, span = stored
        attributes = dict(stored_attrs)
        if "tensor" in attributes:
            has_values, shape, dtype = attributes.pop("tensor")
            attributes["value"] = TensorConstant(
                () if has_values else None, None if shape is None else tuple(int(s) for s in shape), dtype
            )
        node = CheckNode(str(kind), [self.values[i] for i in inputs], [self.values[i] for i in outputs],
                         attributes, [], None if span is None else self.spans[span], owner)
        for k, value in enumerate(node.inputs):
            value.uses.append(Use(node, k))
        for value in node.outputs:
            value.node = node
        node.blocks = [self.block(b, node) for b in blocks]
        return node


def self_graph(self_type: str, reads: Any) -> CheckGraph:
    """A graph whose ``%self`` (of type ``self_type``) has the GetAttr nodes ``reads``
    records (``vm.program.self_reads``), for ``vm.binding.weights.bind_self``."""
    root = CheckValue("self", parse_type_text(self_type))
    block = CheckBlock([root])
    values = [root]
    for parent, name, type_text, required, span in reads:
        attributes: dict[str, Any] = {"name": name}
        if required:
            attributes["required"] = 1
        out = CheckValue(f"attr.{len(values)}", parse_type_text(type_text) if type_text else None)
        node = CheckNode("prim::GetAttr", [values[parent + 1]], [out], attributes, [], span_of(span), block)
        values[parent + 1].uses.append(Use(node, 0))
        out.node = node
        block.nodes.append(node)
        values.append(out)
    return CheckGraph(block)


def span_of(stored: Any) -> Span | None:
    """A span stored as ``(file, line, col, source line)``."""
    if stored is None:
        return None
    file, line, col, *rest = stored
    return Span(str(file), int(line), int(col), rest[0] if rest else None)


def is_tensor_literal(value: Any) -> bool:
    """A tensor constant's literal: the compiler's ``TensorLiteral`` or a ``TensorConstant``."""
    return type(value).__name__ in ("TensorLiteral", "TensorConstant")


__all__ = ["CheckGraph", "CheckTables", "TensorConstant", "from_table", "is_tensor_literal", "self_graph"]
