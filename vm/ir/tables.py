"""A module as plain tables and back: how a ``.irbc`` carries its optimized IR.

The static runtime runs the optimized IR itself, so a program read from a file must give
it the IR objects; reading them back is a decode of JSON data, not a parse of IR text (no
grammar, no lark, nothing of ``compiler/``).  ``module_table(module)`` writes each graph
flat, so that a graph nested 500 blocks deep is no deeper as JSON:

    {"version": 1, "filename": ..., "types": [type text...], "spans": [[file, line, col, line text]...],
     "main": GRAPH, "functions": [[name, GRAPH]...]}
    GRAPH  = [name, span, BLOCKS, NODES]
    BLOCKS = [[owner node (-1: the graph's own block), params, returns, span, return span]...]
    NODES  = [[block, kind, inputs, outputs, attributes, span, source, scope]...]

Blocks come in the order their owners do and nodes in program order (``Graph.walk``), a
node's blocks listed after the node.  A value is ``[name, type]`` where it is defined (a
block parameter, a node output), and elsewhere its number in the graph: all block
parameters first (block order), then all node outputs (node order).  Types and spans are
indices into the two shared tables; a type is its printed text, read back by
``vm.core.type_text`` (the one reader of type text).  An attribute payload is JSON itself
when it is ``None``, a bool, an int, a float or a plain string, else a tagged list:
``["list", items]``, ``["tuple", items]``, ``["dict", [[k, v]...]]``, ``["annotated list",
annotation, items]``, ``["annotated dict", annotation, pairs]``, ``["opaque", text]``,
``["type", index]``, ``["enum", qualname, name]``, ``["tensor", values, shape, dtype,
approximate, printed]`` and ``["graph", GRAPH]`` (a fusion group's ``Subgraph``, its values
numbered on their own).

``module_from_table`` refuses anything malformed with a ``BytecodeError`` (a file is read
from anyone): an index out of range, a block owned by a node it contains, a payload of an
unknown tag.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from vm.core.enum_values import EnumValue
from vm.core.errors import BytecodeError, Span
from vm.core.type_text import parse_type_text
from vm.core.types import Type
from vm.ir.graph import Block, Graph, Module, Node, TensorLiteral, Value
from vm.ir.literals import AnnotatedDict, AnnotatedList, Opaque

TABLE_VERSION = 1


# ---------------------------------------------------------------------------------------
# Writing


class _Writer:
    def __init__(self) -> None:
        self.types: dict[str, int] = {}
        self.spans: dict[tuple[Any, ...], int] = {}

    def type(self, t: Type | None) -> int | None:
        if t is None:
            return None
        return self.types.setdefault(str(t), len(self.types))

    def span(self, span: Span | None) -> int | None:
        if span is None:
            return None
        key = (span.file, span.line, span.col, span.source_line)
        return self.spans.setdefault(key, len(self.spans))

    def graph(self, graph: Graph) -> list[Any]:
        blocks: list[Block] = [graph.block]
        nodes: list[Node] = []
        for node in graph.walk():
            nodes.append(node)
            blocks.extend(node.blocks)
        number: dict[int, int] = {}
        for block in blocks:
            for value in block.params:
                number[id(value)] = len(number)
        for node in nodes:
            for value in node.outputs:
                number[id(value)] = len(number)
        node_index = {id(node): k for k, node in enumerate(nodes)}
        block_index = {id(block): k for k, block in enumerate(blocks)}

        def ref(value: Value) -> int:
            found = number.get(id(value))
            if found is None:
                raise ValueError(f"%{value.name} is used in graph {graph.name} but not defined there")
            return found

        def define(value: Value) -> list[Any]:
            return [value.name, self.type(value.type)]

        stored_blocks = [
            [
                -1 if block.owner is None else node_index[id(block.owner)],
                [define(v) for v in block.params],
                [ref(v) for v in block.returns],
                self.span(block.span),
                self.span(block.return_span),
            ]
            for block in blocks
        ]
        stored_nodes = [
            [
                block_index[id(node.owner)],
                node.kind,
                [ref(v) for v in node.inputs],
                [define(v) for v in node.outputs],
                [[key, self.payload(value)] for key, value in node.attrs.items()],
                self.span(node.span),
                node.source,
                node.scope,
            ]
            for node in nodes
        ]
        return [graph.name, self.span(graph.span), stored_blocks, stored_nodes]

    def payload(self, value: Any) -> Any:
        if value is None or type(value) is str:
            return value
        if isinstance(value, bool):
            return bool(value)
        if isinstance(value, (int, float)):  # as the printer prints them: a number
            return int(value) if isinstance(value, int) else float(value)
        if isinstance(value, Opaque):
            return ["opaque", str(value)]
        if isinstance(value, TensorLiteral):
            values = None if value.values is None else list(value.values)
            shape = None if value.shape is None else list(value.shape)
            return ["tensor", values, shape, value.dtype, value.approximate, value.printed]
        if isinstance(value, Type):
            return ["type", self.type(value)]
        if isinstance(value, EnumValue):
            return ["enum", value.qualname, value.name]  # the value is the bytecode's (as printed)
        if isinstance(value, AnnotatedList):
            return ["annotated list", value.annotation, [self.payload(v) for v in value]]
        if isinstance(value, AnnotatedDict):
            return ["annotated dict", value.annotation, [[self.payload(k), self.payload(v)] for k, v in value.items()]]
        if isinstance(value, list):
            return ["list", [self.payload(v) for v in value]]
        if isinstance(value, tuple):
            return ["tuple", [self.payload(v) for v in value]]
        if isinstance(value, dict):
            return ["dict", [[self.payload(k), self.payload(v)] for k, v in value.items()]]
        if isinstance(value, Graph):
            return ["graph", self.graph(value)]
        raise TypeError(f"cannot store attribute payload {value!r}")

    def table(self, module: Module) -> dict[str, Any]:
        main = self.graph(module.main)
        functions = [[name, self.graph(g)] for name, g in module.functions.items()]
        return {
            "version": TABLE_VERSION,
            "filename": module.filename,
            "types": list(self.types),
            "spans": [list(key) for key in self.spans],
            "main": main,
            "functions": functions,
        }


def module_table(module: Module) -> dict[str, Any]:
    """``module``'s graphs as plain JSON data (see the module essay); the attributes a
    program records beside its IR (``Module.attributes``, ``state``...) are not included."""
    return _Writer().table(module)


# ---------------------------------------------------------------------------------------
# Reading


def module_from_table(table: Any, where: str = "<program>", filename: str | None = None) -> Module:
    """The module ``table`` stores (``filename``: the one it gets, else the stored one);
    BytecodeError when the table is malformed."""
    try:
        return _Reader(table).module(filename)
    except BytecodeError as err:
        raise BytecodeError(f"{where}: malformed optimized IR table ({err})") from None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
        raise BytecodeError(f"{where}: malformed optimized IR table ({type(err).__name__}: {err})") from None


def _index(items: list[Any], i: Any) -> Any:
    if type(i) is not int or not 0 <= i < len(items):
        raise ValueError(f"index {i!r} out of range (0..{len(items) - 1})")
    return items[i]


def _optional(items: list[Any], i: Any) -> Any:
    return None if i is None else _index(items, i)


def _text(value: Any) -> str | None:
    if value is not None and type(value) is not str:
        raise ValueError(f"{value!r} is not a string")
    return value


class _Reader:
    def __init__(self, table: Any) -> None:
        if not isinstance(table, dict):
            raise ValueError("not a table")
        if table.get("version") != TABLE_VERSION:
            raise BytecodeError(f"version {table.get('version')!r}, this irvm reads {TABLE_VERSION}")
        self.table = table
        self.types: list[Type] = [parse_type_text(str(t)) for t in table["types"]]
        self.spans: list[Span] = [
            Span(str(file), int(line), int(col), _text(text)) for file, line, col, text in table["spans"]
        ]

    def module(self, filename: str | None) -> Module:
        table = self.table
        functions = {str(name): self.graph(stored) for name, stored in table["functions"]}
        name = filename if filename is not None else str(table["filename"])
        return Module(self.graph(table["main"]), functions, name)

    def graph(self, stored: list[Any]) -> Graph:
        name, span, stored_blocks, stored_nodes = stored
        values: list[Value] = []
        blocks: list[Block] = []
        for k, (owner, params, _returns, block_span, return_span) in enumerate(stored_blocks):
            if (owner == -1) != (k == 0):
                raise ValueError(f"block {k}: only the first block is the graph's own")
            block = Block(span=_optional(self.spans, block_span), return_span=_optional(self.spans, return_span))
            for value_name, t in params:
                values.append(block.add_param(str(value_name), _optional(self.types, t)))
            blocks.append(block)
        nodes: list[Node] = []
        block_of: list[int] = []
        for k, (in_block, kind, _inputs, outputs, attributes, node_span, source, scope) in enumerate(stored_nodes):
            _index(blocks, in_block)
            if in_block > 0 and not stored_blocks[in_block][0] < k:
                raise ValueError(f"node {k} comes before the node that owns its block")
            node = Node(str(kind), span=_optional(self.spans, node_span), source=_text(source), scope=_text(scope))
            node.attrs = {str(key): self.payload(value) for key, value in attributes}
            for value_name, t in outputs:
                values.append(node.add_output(str(value_name), _optional(self.types, t)))
            nodes.append(node)
            block_of.append(in_block)
        for k, block in enumerate(blocks[1:], 1):
            owner = _index(nodes, stored_blocks[k][0])
            if not block_of[stored_blocks[k][0]] < k:
                raise ValueError(f"block {k} is owned by a node inside it")
            block.owner = owner
            owner.blocks.append(block)
        for node, in_block in zip(nodes, block_of):
            blocks[in_block].append(node)
        graph = Graph(blocks[0], str(name), _optional(self.spans, span))
        self._wire(graph, stored_blocks, stored_nodes, values, {id(n): k for k, n in enumerate(nodes)},
                   {id(b): k for k, b in enumerate(blocks)})
        return graph

    @staticmethod
    def _wire(graph: Graph, stored_blocks: list[Any], stored_nodes: list[Any], values: list[Value],
              node_index: dict[int, int], block_index: dict[int, int]) -> None:
        """Each node's inputs and each block's returns, in program order (a block's returns
        after its nodes), so the uses come in the order a parse gives them."""
        stack: list[tuple[Block, Iterator[Node]]] = [(graph.block, iter(graph.block.nodes))]
        while stack:
            block, nodes = stack[-1]
            node = next(nodes, None)
            if node is None:
                stack.pop()
                for ref in stored_blocks[block_index[id(block)]][2]:
                    block.add_return(_index(values, ref))
                continue
            for ref in stored_nodes[node_index[id(node)]][2]:
                node.add_input(_index(values, ref))
            for inner in reversed(node.blocks):
                stack.append((inner, iter(inner.nodes)))

    def payload(self, value: Any) -> Any:
        if value is None or type(value) in (bool, int, float, str):
            return value
        if type(value) is not list or not value:
            raise ValueError(f"attribute payload {value!r}")
        tag, *rest = value
        if tag == "list":
            return [self.payload(v) for v in rest[0]]
        if tag == "tuple":
            return tuple(self.payload(v) for v in rest[0])
        if tag == "dict":
            return {self.payload(k): self.payload(v) for k, v in rest[0]}
        if tag == "annotated list":
            return AnnotatedList([self.payload(v) for v in rest[1]], str(rest[0]))
        if tag == "annotated dict":
            return AnnotatedDict({self.payload(k): self.payload(v) for k, v in rest[1]}, str(rest[0]))
        if tag == "opaque":
            return Opaque(str(rest[0]))
        if tag == "type":
            return _index(self.types, rest[0])
        if tag == "enum":
            return EnumValue(str(rest[0]), str(rest[1]))
        if tag == "tensor":
            values, shape, dtype, approximate, printed = rest
            return TensorLiteral(
                None if values is None else tuple(_number(v) for v in values),
                None if shape is None else tuple(int(s) for s in shape),
                _text(dtype), bool(approximate), _text(printed),
            )
        if tag == "graph":
            return self.graph(rest[0])
        raise ValueError(f"attribute payload of unknown kind {tag!r}")


def _number(value: Any) -> float | int | bool:
    if type(value) not in (bool, int, float):
        raise ValueError(f"{value!r} is not a number")
    return value


__all__ = ["TABLE_VERSION", "module_from_table", "module_table"]
