"""Text -> IR: the lark front end for the graph IR that PyTorch prints.

Parsing is two steps, as in TorchScript's own ``irparser.cpp``.  Step 1 is first tried by
``compiler/line_parser.py``, which reads the lines PyTorch prints without lark and builds
the same objects (lark still reads any line it does not know, and the whole text on any
doubt, so errors and their spans are lark's):

1. ``grammar/ir.lark`` (LALR(1), contextual lexer, loaded once per process) turns the text
   into objects.  The grammar's callbacks (:class:`_Builder`, run inline by the LALR parser,
   so no parse tree is ever materialized) build ``Node``/``Block``/``Value`` objects and
   attribute payloads, but leave every ``%name`` *use* as the lexer token that spelled it.
2. :func:`_resolve_graph` walks those objects in program order with an explicit stack
   (blocks nested 500 deep cost no Python recursion), binds each use to the ``Value`` in
   scope, and reports "undefined value %x" / "not in scope" at the token's span.  A name
   defined twice is rebound, as torch's parser does (:class:`_Scope`).

The parser takes what TorchScript's parser takes (a node without outputs written with
no ``=``, any number of blocks on any node); whether the graph can run (a ``prim::If``
with two blocks, a loop body of the right arity...) is ``compiler.verify``'s question.

After the entry graph come ``with NAME = graph(...)`` sections.  A node printed as
``prim::FusionGroup_0`` refers to a section of that name; PyTorch prints a graph's
sections right after it, depth first, each sub-graph's own sections right after the
sub-graph, so a stack of graphs still waiting for sections pairs them up.  The node
becomes kind ``prim::FusionGroup`` with ``attrs["Subgraph"]``.  Any other section name is
a function of the module (``Module.functions``).

Every error is an ``IRSyntaxError`` or ``IRValidationError`` whose span carries the file,
line, column and source line; lark's exceptions are converted at the boundary.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from importlib import resources
from typing import cast

import lark
from lark import Lark

from compiler import line_parser
from compiler import types as T
from compiler.diagnostics import IRSyntaxError, IRValidationError, Span
from compiler.parse_tree import Builder, RawBlock, RawGraph, RawNode, Spelled
from vm.core.enum_values import member_of
from vm.core.gc_pause import gc_paused
from vm.ir.graph import Graph, Module, Node, Value

__all__ = ["grammar", "parse"]

_PARSER: Lark | None = None
_LOCK = threading.Lock()
_FLOAT_LIST = T.ListType(T.FLOAT)
_GROUP = re.compile(r"^([A-Za-z_]\w*::\w+?)_(\d+)$")


def grammar() -> Lark:
    """The IR grammar, compiled once per process (LALR, contextual lexer)."""
    global _PARSER
    if _PARSER is None:
        text = resources.files("grammar").joinpath("ir.lark").read_text()
        _PARSER = Lark(
            text,
            parser="lalr",
            lexer="contextual",
            propagate_positions=False,
            maybe_placeholders=True,
            transformer=Builder(),
        )
    return _PARSER


def parse(text: str, filename: str | None = None, *, fast: bool = True) -> Module:
    """Parse graph IR text (as PyTorch prints it) into a ``Module``.

    The first graph is ``Module.main``; ``with`` sections become fusion sub-graphs or
    ``Module.functions``.  Raises ``IRSyntaxError`` / ``IRValidationError`` with a span.
    ``fast`` reads the common line forms without lark (``compiler.line_parser``, which
    hands anything else to lark); ``fast=False`` reads everything with lark (the reference).
    """
    file = filename or "<string>"
    if not isinstance(text, str):
        raise IRSyntaxError(f"expected IR text, got {type(text).__name__}", Span(file, 1, 1))
    ctx = _Context(file, text)
    if not text.strip() or all(not ln.strip() or ln.lstrip().startswith("#") for ln in ctx.lines):
        raise IRSyntaxError("empty file: expected a graph, `graph(%x : Tensor): ...`", ctx.span(1, 1))
    with gc_paused():  # the IR is full of reference cycles: see vm.core.gc_pause
        try:
            if not fast:
                raise line_parser.NotFast
            main_raw, sections = line_parser.read(ctx.lines, ctx.span, _fragment_reader(file))
        except line_parser.NotFast:
            main_raw, sections = _run_lark(text, ctx)
        main = _resolve_graph(main_raw, ctx)
        module = Module(main, {}, file)
        _attach_sections(module, main_raw, sections, ctx)
    return module


class _Context:
    """The file name and its lines, to make spans with the source line."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.lines = text.split("\n")

    def span(self, line: int, col: int) -> Span:
        lines = self.lines
        source = lines[line - 1] if 0 < line <= len(lines) else None
        if source is not None and not source.isprintable():
            source = "".join(c if c.isprintable() else " " if c == "\t" else "?" for c in source)
        return Span(self.file, line, col, source)

    def at(self, token: Spelled) -> Span:
        return self.span(token.line or 0, token.column or 0)


def _run_lark(text: str, ctx: _Context) -> tuple[RawGraph, list[tuple[Spelled, RawGraph]]]:
    parser = grammar()
    try:
        with _LOCK:  # the callbacks read the file context from the shared Builder
            Builder.context = ctx
            # the grammar's Transformer builds the result; lark types parse() as giving a tree
            return cast("tuple[RawGraph, list[tuple[Spelled, RawGraph]]]", parser.parse(text))
    except lark.exceptions.UnexpectedInput as err:
        raise _syntax_error(err, text, ctx) from None
    except lark.exceptions.VisitError as err:  # an error raised inside a callback
        if isinstance(err.orig_exc, (IRSyntaxError, IRValidationError)):
            raise err.orig_exc from None
        raise
    except RecursionError:  # pragma: no cover - the LALR parser keeps its own stack
        raise IRSyntaxError("input nested too deeply", ctx.span(1, 1)) from None


def _fragment_reader(file: str) -> line_parser.LarkGraph:
    """Lark on a one-graph document the line parser builds around a line it leaves to lark."""

    def read_fragment(text: str) -> RawGraph:
        try:
            with _LOCK:
                Builder.context = _Context(file, text)
                parsed = grammar().parse(text)  # built by the grammar's Transformer (see _run_lark)
                raw, sections = cast("tuple[RawGraph, list[tuple[Spelled, RawGraph]]]", parsed)
        except (lark.exceptions.LarkError, IRSyntaxError, IRValidationError, RecursionError):
            raise line_parser.NotFast from None
        if sections:
            raise line_parser.NotFast
        return raw

    return read_fragment


_FRIENDLY = {
    "VALUE": "a value (%x)",
    "KIND": "an operator (aten::add)",
    "PYOP": "a Python op (^name)",
    "QUALNAME": "a name",
    "NAME": "a name",
    "INT": "an integer",
    "FLOAT": "a number",
    "STRING": "a string",
    "BLOCK": "a block (block0(...):)",
    "COMMENT": "a comment",
    "SCOPE": "`, scope: ...`",
    "TENSOR_TAG": "a tensor type tag",
    "TENSOR_SCALAR": "a tensor literal",
    "OPAQUE_TENSOR": "<Tensor> or object(0x...)",
    "OPAQUE_GRAPH": "<Graph>",
    "PY_SCALARS": "Python op scalars `(...)`",
    "SLICE_LABEL": "a tensor slice label",
    "$END": "end of input",
}


def _describe_expected(names: set[str] | frozenset[str]) -> str:
    parser = grammar()
    shown: set[str] = set()
    for name in names:
        if name in _FRIENDLY:
            shown.add(_FRIENDLY[name])
            continue
        try:
            pattern = parser.get_terminal(name).pattern
        except KeyError:
            shown.add(name)
            continue
        shown.add(f"'{pattern.value}'" if pattern.type == "str" else name)
    ordered = sorted(shown)
    if len(ordered) > 8:
        ordered = ordered[:8] + ["..."]
    return ", ".join(ordered)


def _end_of_input(ctx: _Context) -> Span:
    """Just after the last non-blank character of the file."""
    lines = ctx.lines
    line = len(lines)
    while line > 1 and not lines[line - 1].strip():
        line -= 1
    return ctx.span(line, len(lines[line - 1].rstrip()) + 1)


def _syntax_error(err: lark.exceptions.UnexpectedInput, text: str, ctx: _Context) -> IRSyntaxError:
    line, col = getattr(err, "line", -1), getattr(err, "column", -1)
    token = getattr(err, "token", None)
    at_end = isinstance(err, lark.exceptions.UnexpectedEOF) or (token is not None and token.type == "$END")
    if at_end or line is None or line < 1:
        expected = _describe_expected(set(getattr(err, "expected", ())))
        return IRSyntaxError(f"unexpected end of input; expected {expected}", _end_of_input(ctx))
    span = ctx.span(line, col)
    if isinstance(err, lark.exceptions.UnexpectedCharacters):
        ch = err.char
        if ch == '"':
            return IRSyntaxError("unterminated string literal", span)
        shown = repr(ch) if ch.isprintable() and ch != "'" else f"{ch!r} (U+{ord(ch):04X})"
        expected = _describe_expected(set(err.allowed or ()))
        return IRSyntaxError(f"unexpected character {shown}; expected {expected}", span)
    assert isinstance(err, lark.exceptions.UnexpectedToken)
    tok = err.token
    if "ARROW" in err.expected:
        unclosed = _unclosed_block(ctx, line)
        if unclosed is not None:
            return unclosed
    shown = tok.value if len(tok.value) <= 40 else tok.value[:37] + "..."
    expected = _describe_expected(set(err.expected))
    return IRSyntaxError(f"unexpected '{shown}'; expected {expected}", span)


_BLOCK_HEADER = re.compile(r"^(\s*)(block\d+)\(")


def _unclosed_block(ctx: _Context, upto: int) -> IRSyntaxError | None:
    """Where a block ends without its ``-> (...)``, reported at the block's end, as
    torch's parser reports it (``expected ident but found 'dedent'``), not where the
    grammar noticed: without its arrow a block swallows what follows (a next
    ``block1():`` reads as a block of the last node), so that is a line or two later.
    The grammar ignores indentation; the report reads it: a block's body is indented
    past its header, so the first later line that is not, and is no ``->``, ends it."""
    lines = ctx.lines
    open_blocks: list[tuple[int, int, str]] = []  # (indent, header line, blockN)
    for number in range(1, min(upto, len(lines)) + 1):
        text = lines[number - 1]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        indent = len(text) - len(text.lstrip())
        if open_blocks and indent <= open_blocks[-1][0] and not text.lstrip().startswith("->"):
            _, header, name = open_blocks[-1]
            return IRSyntaxError(
                f"{name} (opened on line {header}) ends here without its `-> (...)`: a block lists the values "
                f"it returns, `-> ()` when none",
                ctx.span(number, indent + 1),
            )
        if text.lstrip().startswith("->") and open_blocks:
            open_blocks.pop()
        header = _BLOCK_HEADER.match(text)
        if header is not None:
            open_blocks.append((len(header.group(1)), number, header.group(2)))
    return None


# ----------------------------------------------------------------------------- resolving


class _Scope:
    """Names while walking one graph, bound as TorchScript's ``irparser.cpp`` binds them.

    A name maps to its newest definition: ``%x = a::a(%x)`` after ``%x`` rebinds ``%x``
    and later uses see the new value (``IRParserTest.ValueReuse``).  Value names stay
    unique in a graph as TorchScript's ``Value::setDebugName`` keeps them: the value that
    loses its name is renamed ``x.1`` (the next free suffix), so the printed graph reads
    back to the same graph.  Leaving a block takes its values out of scope but keeps
    their names bound (as torch does), so a later use reports "not in scope here".
    """

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self.env: dict[str, Value] = {}  # the text's name -> its newest definition
        self.where: dict[str, Spelled] = {}  # the text's name -> the token of that definition
        self.live: set[int] = set()  # ids of the values in scope here
        self.owners: dict[str, Value] = {}  # Value.name -> the value carrying it
        self.suffixes: dict[str, int] = {}  # base name -> next suffix to try

    def define(self, value: Value, token: Spelled, local: list[Value]) -> None:
        name = value.name
        self.env[name] = value
        self.where[name] = token
        self.live.add(id(value))
        local.append(value)
        old = self.owners.get(name)
        if old is not None:
            self._rename(old)
        self.owners[name] = value

    def _rename(self, value: Value) -> None:
        base, dot, tail = value.name.rpartition(".")
        suffix = int(tail) if dot and base and tail.isdigit() else 1
        if not (dot and base and tail.isdigit()):
            base = value.name
        suffix = max(suffix, self.suffixes.get(base, 1))
        while f"{base}.{suffix}" in self.owners:
            suffix += 1
        self.suffixes[base] = suffix + 1
        value.name = f"{base}.{suffix}"
        self.owners[value.name] = value

    def lookup(self, token: Spelled) -> Value:
        name = token.value[1:]
        value = self.env.get(name)
        if value is not None and id(value) in self.live:
            return value
        if value is not None:
            first = self.where[name]
            msg = f"value %{name} is not in scope here (defined at {first.line}:{first.column} in another block)"
        else:
            msg = f"undefined value %{name}"
        raise IRValidationError(msg, self.ctx.at(token))

    def leave(self, local: list[Value]) -> None:
        live = self.live
        for value in local:
            live.discard(id(value))


def _resolve_graph(raw: RawGraph, ctx: _Context) -> Graph:
    """Bind every use in ``raw`` to its Value; returns the finished Graph."""
    scope = _Scope(ctx)
    graph = Graph(block=raw.block.block, span=raw.span)
    # A frame is a block being filled, or a node whose outputs are defined once its
    # blocks are done.  Blocks are pushed in reverse so block0 is walked first.
    stack: list[_Frame | RawNode] = [_Frame(raw.block)]
    while stack:
        top = stack[-1]
        if isinstance(top, RawNode):
            stack.pop()
            _finish_node(top, scope, _enclosing_locals(stack), ctx)
            continue
        if not top.started:
            top.started = True
            for value, token in top.raw.params:
                scope.define(value, token, top.local)
        if top.index == len(top.raw.nodes):
            stack.pop()
            block = top.raw.block
            for token in top.raw.returns:
                block.add_return(scope.lookup(token))
            scope.leave(top.local)
            continue
        raw_node = top.raw.nodes[top.index]
        top.index += 1
        node = raw_node.node
        for token in raw_node.inputs:
            node.add_input(scope.lookup(token))
        top.raw.block.append(node)
        if raw_node.blocks:
            stack.append(raw_node)
            stack.extend(_Frame(b) for b in reversed(raw_node.blocks))
        else:
            _finish_node(raw_node, scope, top.local, ctx)
    return graph


class _Frame:
    __slots__ = ("raw", "index", "local", "started")

    def __init__(self, raw: RawBlock) -> None:
        self.raw = raw
        self.index = 0
        self.local: list[Value] = []
        self.started = False


def _enclosing_locals(stack: list[_Frame | RawNode]) -> list[Value]:
    for frame in reversed(stack):
        if isinstance(frame, _Frame):
            return frame.local
    raise AssertionError("a node outside any block")


def _finish_node(raw: RawNode, scope: _Scope, local: list[Value], ctx: _Context) -> None:
    node = raw.node
    for value, token in zip(node.outputs, raw.output_tokens):
        scope.define(value, token, local)
    if node.kind == "prim::Constant" and node.outputs:
        _float_payload(node)
        _enum_payload(node)


def _float_payload(node: Node) -> None:
    """PyTorch prints an integral double of 1e10 or more as ``10000000000000000``; a
    float-typed constant keeps it as the float it is."""
    value, type_ = node.attrs.get("value"), node.outputs[0].type
    if type_ == T.FLOAT and type(value) is int:
        node.attrs["value"] = float(value)
    elif type_ == _FLOAT_LIST and type(value) is list and any(type(v) is int for v in value):
        node.attrs["value"] = [float(v) if type(v) is int else v for v in value]


def _enum_payload(node: Node) -> None:
    """``prim::Constant[value=__torch__.m.Color.RED]()`` of type ``Enum<__torch__.m.Color>``:
    the qualified name, read as a class name, is that enum's member ``RED`` (a name that is
    no member of the declared enum stays, for the verifier to report)."""
    value, type_ = node.attrs.get("value"), node.outputs[0].type
    if isinstance(type_, T.EnumType) and isinstance(value, T.ClassType):
        member = member_of(type_.qualname, value.qualname)
        if member is not None:
            node.attrs["value"] = member


# ----------------------------------------------------------------------------- sections


def _group_refs(raw: RawGraph) -> Iterator[RawNode]:
    """Nodes printed as ``kind_N`` in document order, N counting 0, 1, 2... as PyTorch numbers them."""
    stack: list[Iterator[RawNode]] = [iter(raw.block.nodes)]
    expected = 0
    while stack:
        raw_node = next(stack[-1], None)
        if raw_node is None:
            stack.pop()
            continue
        m = _GROUP.match(raw_node.node.kind)
        if m is not None and int(m.group(2)) == expected:
            expected += 1
            yield raw_node
        stack.extend(iter(b.nodes) for b in reversed(raw_node.blocks))


def _attach_sections(
    module: Module,
    main_raw: RawGraph,
    sections: list[tuple[Spelled, RawGraph]],
    ctx: _Context,
) -> None:
    """Pair ``with`` sections with the group nodes waiting for them, depth first.

    ``waiting`` holds, per graph still open, its ``kind_N`` nodes without a section yet.
    A node whose section never comes keeps its printed kind (it was an ordinary op whose
    name happens to end in ``_N``).
    """
    waiting: list[list[RawNode]] = [list(_group_refs(main_raw))]
    for name_token, raw in sections:
        name = name_token.value
        while waiting and (not waiting[-1] or waiting[-1][0].node.kind != name):
            if any(r.node.kind == name for r in waiting[-1]):
                expected = waiting[-1][0].node.kind
                raise IRValidationError(
                    f"sub-graph {name} is out of order: expected the section of {expected} first",
                    ctx.at(name_token),
                )
            waiting.pop()
        if waiting:
            node = waiting[-1].pop(0).node
            group = _GROUP.match(name)
            assert group is not None  # waiting holds only the nodes whose kind matches _GROUP
            node.kind = group.group(1)
            node.attrs["Subgraph"] = _section_graph(raw, name, ctx)
        elif "::" in name:
            raise IRValidationError(f"no node refers to sub-graph {name}", ctx.at(name_token))
        else:
            if name in module.functions:
                raise IRValidationError(f"function {name} is defined twice", ctx.at(name_token))
            module.functions[name] = _section_graph(raw, name, ctx)
        waiting.append(list(_group_refs(raw)))


def _section_graph(raw: RawGraph, name: str, ctx: _Context) -> Graph:
    graph = _resolve_graph(raw, ctx)
    graph.name = name
    return graph
