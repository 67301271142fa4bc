"""The fast path of parsing: the lines PyTorch prints, read line by line without lark.

``grammar/ir.lark`` stays the definition of the language; this module reads the common
shape of printed graphs much faster than lark's Python lexer and LALR loop (the 12+12
transformer is 548k tokens), and builds the same ``RawGraph``/``RawBlock``/``RawNode``
objects as the grammar's callbacks, so ``compiler/parser.py`` binds names and attaches
sections the same way whichever path read the text.

It reads, each on one line: a graph header (its parameters may run over several lines),
``with NAME = graph(...)``, ``blockN(...):``, ``-> (...)``, ``return (...)`` and node lines
``%a : T, %b = kind[attrs](%x, %y), scope: ... # file.py:1:2``.  Simple attribute values
(numbers, strings, True/False/None, flat lists of those) are read here; a type is read
by lark once per distinct spelling (and kept); any other node line is read by lark alone
(its positions moved to the line it stands on).  Whenever something is not exactly what
lark would read, :class:`NotFast` is raised and the whole text goes to lark, so every
error keeps lark's message and span.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from compiler import types as T
from compiler.parse_tree import RawBlock, RawGraph, RawNode, Spelled
from vm.ir.graph import Block, Node, TensorLiteral, Value
from vm.ir.literals import unquote

__all__ = ["NotFast", "Tok", "read"]

_VALUE = r"%[^\s,()\[\]{}:=#\"']+"
_VALUE_RE = re.compile(_VALUE)
_OUTPUT = re.compile(rf"({_VALUE})(?: : (\S.*))?\Z")
_KIND = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*")
_REFS = re.compile(rf"\((?:{_VALUE}(?:, {_VALUE})*)?\)")
_TAIL = re.compile(r"(, *scope: *[^#\n]*)?[ \t\f\r]*(#[^\n]*)?\Z")
_END = re.compile(r"[ \t\f\r]*(#[^\n]*)?\Z")
_BLOCK = re.compile(r"block\d+\(")
_WITH = re.compile(r"with[ \t]+([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*|(?:\.[A-Za-z_][A-Za-z0-9_]*)*))[ \t]+=[ \t]+graph\(")
_ATTR_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_SCALAR = re.compile(
    r"(-?[0-9]+(?![0-9.eE]))"  # INT
    r"|(-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+))"  # FLOAT
    r"|(\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*\")"  # STRING
    r"|(True|False|None)(?![A-Za-z0-9_.])"
)
_WORDS = {"True": True, "False": False, "None": None}
_TYPES: dict[str, T.Type] = {}  # the spelling of a type -> the type lark read from it


class NotFast(Exception):
    """The text has a form this module does not read: lark reads all of it."""


class Tok(NamedTuple):
    """A ``%name`` (or section name) where it was written, as the resolver reads a lark token."""

    value: str
    line: int
    column: int


# lark reads what this module leaves to it: ``(text) -> RawGraph`` of a one-graph document,
# raising NotFast when lark finds an error in it
LarkGraph = Callable[[str], RawGraph]


def read(
    lines: list[str], span: Callable[[int, int], Any], lark_graph: LarkGraph
) -> tuple[RawGraph, list[tuple[Spelled, RawGraph]]]:
    """The main graph and the ``with`` sections of the text split into ``lines``."""
    return _Reader(lines, span, lark_graph).document()


class _Reader:
    def __init__(self, lines: list[str], span: Callable[[int, int], Any], lark_graph: LarkGraph) -> None:
        self.lines = lines
        self.span = span
        self.lark_graph = lark_graph
        self.i = 0  # index of the line being read

    def _next_line(self) -> str | None:
        """Advance to the next line with something on it (not blank, not a comment line)."""
        lines = self.lines
        while self.i < len(lines):
            s = lines[self.i].lstrip(" \t\f\r")
            if s and s[0] != "#":
                return lines[self.i]
            self.i += 1
        return None

    def document(self) -> tuple[RawGraph, list[tuple[Spelled, RawGraph]]]:
        line = self._next_line()
        if line is None:
            raise NotFast
        pos = len(line) - len(line.lstrip(" \t\f\r"))
        if not line.startswith("graph(", pos):
            raise NotFast
        main = self._graph(pos)
        sections: list[tuple[Spelled, RawGraph]] = []
        while (line := self._next_line()) is not None:
            pos = len(line) - len(line.lstrip(" \t\f\r"))
            m = _WITH.match(line, pos)
            if m is None:
                raise NotFast
            name = Tok(m.group(1), self.i + 1, m.start(1) + 1)
            sections.append((name, self._graph(m.end() - len("graph("))))
        return main, sections

    # -- graphs and blocks ---------------------------------------------------------------

    def _graph(self, pos: int) -> RawGraph:
        """The graph whose ``graph(`` starts at ``pos`` of the current line, to its ``return``."""
        head = self.span(self.i + 1, pos + 1)
        root = RawBlock(Block(), self._params(pos + len("graph(")), [], [])
        _own_params(root)
        frames: list[tuple[RawBlock, RawNode | None]] = [(root, None)]
        last: RawNode | None = None  # the node that a `blockN(` line would belong to
        while True:
            line = self._next_line()
            if line is None:
                raise NotFast
            lineno = self.i + 1
            pos = len(line) - len(line.lstrip(" \t\f\r"))
            c = line[pos]
            if c == "r" and line.startswith("return", pos) and len(frames) == 1:
                root.returns = self._returns(line, pos + len("return"))
                root.block.return_span = self.span(lineno, pos + 1)
                return RawGraph(root, head)
            if c == "-" and line.startswith("->", pos):
                if len(frames) == 1:
                    raise NotFast
                raw, owner = frames.pop()
                raw.returns = self._returns(line, pos + 2)
                raw.block.return_span = self.span(lineno, pos + 1)
                last = owner
                continue
            if c == "b" and _BLOCK.match(line, pos):
                if last is None:
                    raise NotFast
                raw = RawBlock(Block(span=self.span(lineno, pos + 1)), self._params(line.index("(", pos) + 1), [], [])
                _own_params(raw)
                raw.block.owner = last.node
                last.node.blocks.append(raw.block)
                last.blocks.append(raw)
                frames.append((raw, last))
                last = None
                continue
            last = self._node(line, pos, lineno)
            frames[-1][0].nodes.append(last)
            self.i += 1

    def _returns(self, line: str, pos: int) -> list[Spelled]:
        """``(%a, %b)`` (after a space) and an optional comment, to the end of the line."""
        while pos < len(line) and line[pos] in " \t\f\r":
            pos += 1
        m = _REFS.match(line, pos)
        if m is None or _END.match(line, m.end()) is None:
            raise NotFast
        lineno = self.i + 1
        self.i += 1
        return [Tok(v.group(), lineno, v.start() + 1) for v in _VALUE_RE.finditer(line, m.start(), m.end())]

    def _params(self, pos: int) -> list[tuple[Value, Spelled]]:
        """``%x : T, %y : T):`` from ``pos`` of the current line, over as many lines as it
        takes; leaves the current line just after the ``):`` line."""
        params: list[tuple[Value, Spelled]] = []
        line = self.lines[self.i]
        while True:
            while pos < len(line) and line[pos] in " \t\f\r":
                pos += 1
            if pos == len(line):  # the list goes on on the next line
                self.i += 1
                if self.i == len(self.lines):
                    raise NotFast
                line, pos = self.lines[self.i], 0
                continue
            if line[pos] == ")" and not params:
                break
            m = _VALUE_RE.match(line, pos)
            if m is None:
                raise NotFast
            token = Tok(m.group(), self.i + 1, pos + 1)
            pos = m.end()
            type_: T.Type | None = None
            if line.startswith(" : ", pos):
                end = _type_end(line, pos + 3)
                type_ = self._type(line[pos + 3 : end])
                pos = end
            params.append((Value(token.value[1:], type_), token))
            if pos < len(line) and line[pos] == ",":
                pos += 1
                continue
            if pos < len(line) and line[pos] == ")":
                break
            raise NotFast
        if not line.startswith(":", pos + 1) or _END.match(line, pos + 2) is None:
            raise NotFast
        self.i += 1
        return params

    def _type(self, text: str) -> T.Type:
        found = _TYPES.get(text)
        if found is None:
            found = _canonical_type(text)
        if found is None:
            raw = self.lark_graph(f"graph(%x : {text}):\n  return (%x)\n")
            found = raw.block.params[0][0].type
            assert found is not None
            _TYPES[text] = found
        return found

    # -- nodes ---------------------------------------------------------------------------

    def _node(self, line: str, pos: int, lineno: int) -> RawNode:
        """The node on ``line`` from ``pos``; lark reads a line with forms not read here."""
        try:
            return self._fast_node(line, pos, lineno)
        except NotFast:
            return self._lark_node(line, lineno)

    def _fast_node(self, line: str, pos: int, lineno: int) -> RawNode:
        outputs: list[tuple[Value, Spelled]] = []
        if line[pos] == "%":
            eq = line.find(" = ", pos)
            if eq < 0:
                raise NotFast
            start = pos
            for piece in line[pos:eq].split(", %"):
                piece = piece if start == pos else "%" + piece
                m = _OUTPUT.match(piece)
                if m is None:
                    raise NotFast
                type_ = None if m.group(2) is None else self._type(m.group(2))
                outputs.append((Value(m.group(1)[1:], type_), Tok(m.group(1), lineno, start + 1)))
                start += len(piece) + 2
            first_col = pos + 1
            pos = eq + 3
        elif line[pos] == "=":
            first_col = pos + 1
            pos += 1
            while pos < len(line) and line[pos] == " ":
                pos += 1
        else:
            raise NotFast  # a node without `=`: lark reads it
        m = _KIND.match(line, pos)
        if m is None:
            raise NotFast
        kind = m.group()
        pos = m.end()
        attrs: dict[str, Any] = {}
        if pos < len(line) and line[pos] == "[":
            attrs, pos = _attributes(line, pos + 1)
        refs = _REFS.match(line, pos)
        if refs is None:
            raise NotFast
        tail = _TAIL.match(line, refs.end())
        if tail is None:
            raise NotFast
        node = Node(kind, attrs=attrs, span=self.span(lineno, first_col))
        for value, _ in outputs:
            value.node = node
        node.outputs = [value for value, _ in outputs]
        if tail.group(2) is not None:
            node.source = tail.group(2)[1:].strip()
        if tail.group(1) is not None:
            node.scope = tail.group(1).split("scope:", 1)[1].strip()
        uses: list[Spelled] = [Tok(v.group(), lineno, v.start() + 1) for v in _VALUE_RE.finditer(line, refs.start(), refs.end())]
        return RawNode(node, uses, [tok for _, tok in outputs])

    def _lark_node(self, line: str, lineno: int) -> RawNode:
        """The node on ``line`` as lark reads it alone, moved to line ``lineno``."""
        raw = self.lark_graph(f"graph():\n{line}\n  return ()\n").block.nodes
        if len(raw) != 1 or raw[0].blocks:  # blocks on the node's own line: lark reads the text
            raise NotFast
        node = raw[0]
        node.inputs = [Tok(t.value, lineno, t.column or 0) for t in node.inputs]
        node.output_tokens = [Tok(t.value, lineno, t.column or 0) for t in node.output_tokens]
        span = node.node.span
        node.node.span = self.span(lineno, span.col if span is not None else 0)
        return node


def _own_params(raw: RawBlock) -> None:
    block = raw.block
    for value, _ in raw.params:
        value.block = block
        block.params.append(value)


def _type_end(line: str, pos: int) -> int:
    """Where the type starting at ``pos`` ends: the first ``,`` or ``)`` outside brackets."""
    depth = 0
    for index in range(pos, len(line)):
        c = line[index]
        if c in "([":
            depth += 1
        elif c in ")]":
            if depth == 0:
                return index
            depth -= 1
        elif c == "," and depth == 0:
            return index
    raise NotFast


def _attributes(line: str, pos: int) -> tuple[dict[str, Any], int]:
    """``name=value, ...]`` from ``pos`` (just after the ``[``) with simple values."""
    attrs: dict[str, Any] = {}
    if line.startswith("]", pos):
        return attrs, pos + 1
    while True:
        m = _ATTR_NAME.match(line, pos)
        if m is None or m.group(1) in attrs:
            raise NotFast
        value, pos = _attr_value(line, m.end())
        attrs[m.group(1)] = value
        if line.startswith(", ", pos):
            pos += 2
        elif line.startswith("]", pos):
            return attrs, pos + 1
        else:
            raise NotFast


def _attr_value(line: str, pos: int) -> tuple[Any, int]:
    if line.startswith("[", pos):
        items: list[Any] = []
        pos += 1
        if line.startswith("]", pos):
            return items, pos + 1
        while True:
            m = _SCALAR.match(line, pos)
            if m is None or m.group(3) is not None:
                raise NotFast
            items.append(_scalar(m))
            pos = m.end()
            if line.startswith(", ", pos):
                pos += 2
            elif line.startswith("]", pos):
                return items, pos + 1
            else:
                raise NotFast
    if line.startswith("<Tensor>", pos):  # a tensor too large to print: bound from the weights by name
        return TensorLiteral(None, printed="<Tensor>"), pos + 8
    m = _SCALAR.match(line, pos)
    if m is None:
        raise NotFast
    return _scalar(m), m.end()


def _scalar(m: re.Match[str]) -> Any:
    integer, real, string, word = m.groups()
    if integer is not None:
        return int(integer)
    if real is not None:
        return float(real)
    if string is not None:
        try:
            return unquote(string)
        except ValueError:
            raise NotFast from None
    return _WORDS[word]


def _canonical_type(text: str) -> T.Type | None:
    """The type of ``text`` when it is the one spelling ``str`` prints of a type (what irvm's
    printer writes, in an ``.irbc``'s optimized IR): read by ``vm.core.type_text`` without
    building the lark grammar (which costs a process more than reading a model does).  Any
    other spelling, None: the grammar reads it.  ``tests/vm/test_type_text.py`` holds the
    two readers to one answer on every printed type."""
    from vm.core.errors import BytecodeError
    from vm.core.type_text import parse_type_text

    try:
        found = parse_type_text(text)
    except BytecodeError:
        return None
    return found if str(found) == text else None
