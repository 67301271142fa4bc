"""The part of the optimized IR that a run checks before its first operator, as the VM
reads it from an ``.irbc`` file: a few nodes of the IR, in the ground floor's data model.

Binding weights and refusing what PyTorch would refuse (``vm.binding.weights.bind_self`` and
``bind_constants``, ``vm.binding.preflight``'s dtype guard, ``vm.binding.weight_checks``) walk the IR:
``prim::GetAttr`` chains from ``%self``, tensor constants, the nodes whose argument dtypes
must agree, and the nodes that carry a dtype from one to the next.  A program compiled in
this process hands them its module; a program read from a file carries a *check table*
instead (``compiler.program_tables.check_table``, member ``checks.json``): just those
nodes, with their values' names, types (as printed, read by ``vm.core.type_text``) and spans,
inside the blocks that hold them.  ``from_table`` rebuilds them as ``vm.ir.graph`` objects
(``Graph``, ``Block``, ``Node``, ``Value``; a tensor constant's ``TensorLiteral`` with its
values left out), so one implementation of each check serves both, on one data model.

A node the table leaves out changes no check: the dtype walk knows nothing of its
outputs either way.  What needs every node, whether the inputs reach a strict operator at
all (``vm.binding.preflight``), is decided by the compiler and stored as ``reaches_strict``.
"""

from __future__ import annotations

from typing import Any

import attrs

from vm.core.errors import BytecodeError, Span
from vm.core.type_text import parse_type_text
from vm.ir.graph import Block, Graph, Node, TensorLiteral, Value

TABLE_VERSION = 1


@attrs.frozen
class CheckTables:
    """The entry graph, each function's tensor constants, and whether any input reaches
    a strict operator (``vm.binding.preflight``)."""

    main: Graph
    functions: tuple[Graph, ...]
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
        self.table, self.spans, self.types = table, spans, types
        self.values: list[Value] = []
        self.defined: list[bool] = []
        for name, t in table["values"]:
            self.values.append(Value(str(name), types[t]))
            self.defined.append(False)

    def tables(self) -> CheckTables:
        table = self.table
        main = Graph(self.block(table["main"], None))
        functions = tuple(Graph(self.block(f, None)) for f in table["functions"])
        return CheckTables(main, functions, bool(table["reaches_strict"]))

    def define(self, i: int) -> Value:
        """Value ``i`` where it is defined (a parameter, an output): once."""
        value = self.values[i]
        if self.defined[i]:
            raise BytecodeError(f"value {i} (%{value.name}) is defined twice")
        self.defined[i] = True
        return value

    def block(self, stored: list[Any], owner: Node | None) -> Block:
        params, nodes, returns = stored
        block = Block(owner=owner)
        for i in params:
            value = self.define(i)
            value.block = block
            block.params.append(value)
        for stored_node in nodes:
            block.append(self.node(stored_node))
        for i in returns:
            block.add_return(self.values[i])
        return block

    def node(self, stored: list[Any]) -> Node:
        kind, inputs, outputs, stored_attrs, blocks, span = stored
        attributes = dict(stored_attrs)
        if "tensor" in attributes:
            has_values, shape, dtype = attributes.pop("tensor")
            attributes["value"] = TensorLiteral(
                () if has_values else None, None if shape is None else tuple(int(s) for s in shape), dtype
            )
        node = Node(str(kind), attrs=attributes, span=None if span is None else self.spans[span])
        for i in inputs:
            node.add_input(self.values[i])
        for i in outputs:
            value = self.define(i)
            value.node = node
            node.outputs.append(value)
        node.blocks = [self.block(b, node) for b in blocks]
        return node


def self_graph(self_type: str, reads: Any) -> Graph:
    """A graph whose ``%self`` (of type ``self_type``) has the GetAttr nodes ``reads``
    records (``vm.program.self_reads``), for ``vm.binding.weights.bind_self``."""
    graph = Graph()
    values = [graph.block.add_param("self", parse_type_text(self_type))]
    for parent, name, type_text, required, span in reads:
        attributes: dict[str, Any] = {"name": name}
        if required:
            attributes["required"] = 1
        node = graph.block.append(Node("prim::GetAttr", attrs=attributes, span=span_of(span)))
        node.add_input(values[parent + 1])
        values.append(node.add_output(f"attr.{len(values)}", parse_type_text(type_text) if type_text else None))
    return graph


def span_of(stored: Any) -> Span | None:
    """A span stored as ``(file, line, col, source line)``."""
    if stored is None:
        return None
    file, line, col, *rest = stored
    return Span(str(file), int(line), int(col), rest[0] if rest else None)


def is_tensor_literal(value: Any) -> bool:
    """A tensor constant's literal (its values left out when it came from a check table)."""
    return isinstance(value, TensorLiteral)


__all__ = ["CheckTables", "from_table", "is_tensor_literal", "self_graph"]
