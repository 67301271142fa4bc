"""The grammar's callbacks: build IR objects straight from the LALR parser's reductions.

``Builder`` is passed to lark as an inline transformer, so each method runs when its rule
is reduced and receives the already-built children; no parse tree is materialized.  It
creates ``Node``s (kind, outputs, attributes, span, source, scope), ``Block``s with their
parameters, attribute payloads and types, but leaves each ``%name`` *use* as its lexer
token inside ``RawNode``/``RawBlock``: binding uses to values needs scopes, which is
compiler/parser.py's second step.

Types are interned by their text-free structure (``TensorType`` etc. are frozen), and the
named leaf types by name, so a 10k-node graph does not build 10k ``Tensor`` objects.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, Protocol

from attrs import define, field
from lark import Token, Transformer

from compiler import types as T
from compiler.diagnostics import IRSyntaxError
from vm.core.type_text import TypeTextError, read_tensor_type, tensor_type_of, type_of_name
from vm.ir.graph import Block, Node, TensorLiteral, Value
from vm.ir.literals import AnnotatedDict, AnnotatedList, Opaque, tensor_tag, unquote

__all__ = ["Builder", "RawBlock", "RawGraph", "RawNode", "Spelled"]


class Spelled(Protocol):
    """A ``%name`` (or a section name) where the text spells it: lark's ``Token`` or the
    line parser's ``Tok``; resolving names reads these three fields only."""

    @property
    def value(self) -> Any: ...

    @property
    def line(self) -> int | None: ...

    @property
    def column(self) -> int | None: ...


@define(slots=True)
class RawNode:
    node: Node
    inputs: list[Spelled]
    output_tokens: list[Spelled]
    blocks: list[RawBlock] = field(factory=list)


@define(slots=True)
class RawBlock:
    block: Block
    params: list[tuple[Value, Spelled]]
    nodes: list[RawNode]
    returns: list[Spelled]


@define(slots=True)
class RawGraph:
    block: RawBlock
    span: Any


_TENSOR_NAMES = frozenset(T.SCALAR_TYPE_CODES) | {"Tensor"}
_FLOATING = frozenset({"Float", "Double", "Half", "BFloat16", "ComplexFloat", "ComplexDouble", "ComplexHalf"})
_NUMBERS = {"INF": math.inf, "NEG_INF": -math.inf, "NAN": math.nan, "NEG_NAN": math.nan}


_TENSOR_TYPES: dict[str, T.Type] = {}


class _Size(tuple):
    """A non-type argument of a refined tensor type: ("size", n) / ("kw", key, value)."""


class Builder(Transformer):
    """Inline callbacks for grammar/ir.lark (one method per rule or alias)."""

    context: ClassVar[Any] = None  # the parser's _Context (file name, lines) for spans

    def __init__(self) -> None:
        super().__init__(visit_tokens=False)
        self._named: dict[str, T.Type] = {}  # each name's type, looked up once (vm.core.type_text)

    # -- structure ---------------------------------------------------------------------

    def start(self, children: list[Any]) -> tuple[RawGraph, list[tuple[Token, RawGraph]]]:
        return children[0], children[1:]

    def with_section(self, children: list[Any]) -> tuple[Token, RawGraph]:
        return children[0], children[1]

    def graph(self, children: list[Any]) -> RawGraph:
        head = children[0]
        raw = self._raw_block(children[1], children[2:])
        return RawGraph(raw, self.context.at(head))

    def block(self, children: list[Any]) -> RawBlock:
        raw = self._raw_block(children[1], children[2:])
        raw.block.span = self.context.at(children[0])
        return raw

    def _raw_block(self, params: list[tuple[Value, Spelled]], rest: list[Any]) -> RawBlock:
        block = Block()
        for value, _ in params:
            value.block = block
            block.params.append(value)
        nodes = [c for c in rest[:-1] if type(c) is RawNode]
        at = -1 if type(rest[-1]) is list else -2
        block.return_span = self.context.at(rest[at - 1])  # the `->` or `return` keyword
        return RawBlock(block, params, nodes, rest[at])

    def params(self, children: list[Any]) -> list[tuple[Value, Token]]:
        return [] if children[0] is None else children

    outputs = params

    def param(self, children: list[Any]) -> tuple[Value, Token]:
        token, type_ = children
        return Value(token.value[1:], type_), token

    def value_refs(self, children: list[Any]) -> list[Token]:
        return [] if children[0] is None else children

    def node(self, children: list[Any]) -> RawNode:
        if type(children[0]) is list:  # `%a, %b = op(...)` or ` = op(...)`
            outputs, eq, (kind, attrs, _), refs = children[0], children[1], children[2], children[3]
            first, rest = (outputs[0][1] if outputs else eq), children[4:]
        else:  # `op(...)`: no outputs and no `=`
            outputs, (kind, attrs, first), refs, rest = [], children[0], children[1], children[2:]
        node = Node(kind, attrs=attrs, span=self.context.at(first))
        raw = RawNode(node, refs, [tok for _, tok in outputs])
        for value, _ in outputs:
            value.node = node
            node.outputs.append(value)
        for extra in rest:
            if type(extra) is RawBlock:
                extra.block.owner = node
                node.blocks.append(extra.block)
                raw.blocks.append(extra)
            elif extra.type == "COMMENT":
                node.source = extra.value[1:].strip()
            else:  # SCOPE
                node.scope = extra.value.split("scope:", 1)[1].strip()
        return raw

    def builtin_op(self, children: list[Any]) -> tuple[str, dict[str, Any], Token]:
        return children[0].value, (children[1] if len(children) > 1 else {}), children[0]

    def python_op(self, children: list[Any]) -> tuple[str, dict[str, Any], Token]:
        attrs: dict[str, Any] = {"^name": children[0].value[1:]}
        if len(children) > 2:
            attrs.update(children[1])
        attrs["^scalars"] = children[-1].value
        return "prim::PythonOp", attrs, children[0]

    # -- attributes --------------------------------------------------------------------

    def attributes(self, children: list[Any]) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if children[0] is None:
            return attrs
        for name, value in children:
            if name.value in attrs:
                raise IRSyntaxError(f"attribute {name.value} is given twice", self.context.at(name))
            attrs[name.value] = value
        return attrs

    py_attributes = attributes

    def attribute(self, children: list[Any]) -> tuple[Token, Any]:
        return children[0], children[1]

    def int_value(self, children: list[Token]) -> int:
        return int(children[0])

    def float_value(self, children: list[Token]) -> float:
        tok = children[0]
        return _NUMBERS[tok.type] if tok.type in _NUMBERS else float(tok)

    def string(self, children: list[Token]) -> str:
        try:
            return unquote(children[0].value)
        except ValueError as err:
            raise IRSyntaxError(str(err), self.context.at(children[0])) from None

    def true(self, _: list[Any]) -> bool:
        return True

    def false(self, _: list[Any]) -> bool:
        return False

    def none(self, _: list[Any]) -> None:
        return None

    def list_value(self, children: list[Any]) -> list[Any]:
        return children

    def tuple_value(self, children: list[Any]) -> tuple[Any, ...]:
        return tuple(children)

    def dict_value(self, children: list[Any]) -> dict[Any, Any]:
        try:
            return dict(children)
        except TypeError as err:
            raise IRSyntaxError(f"bad dictionary literal: {err}", self.context.span(0, 0)) from None

    def dict_item(self, children: list[Any]) -> tuple[Any, Any]:
        return children[0], children[1]

    def annotated(self, children: list[Any]) -> Any:
        annotation, value = children
        if isinstance(value, list):
            return AnnotatedList(value, annotation)
        if isinstance(value, dict):
            return AnnotatedDict(value, annotation)
        return value

    def py_type(self, children: list[Any]) -> str:
        head = children[0].value
        return head if len(children) == 1 else f"{head}[{', '.join(children[1:])}]"

    def py_none(self, _: list[Any]) -> str:
        return "None"

    def tensor_scalar(self, children: list[Token]) -> TensorLiteral:
        text = children[0].value
        body = text[1:-1]
        if body.lstrip("-").isdigit():
            return TensorLiteral((int(body),), printed=text)
        try:
            value = float(body)
        except ValueError:
            raise IRSyntaxError(f"bad tensor literal {text}", self.context.at(children[0])) from None
        digits = sum(c.isdigit() for c in body.split("e")[0].lstrip("-0."))
        return TensorLiteral((value,), approximate=digits >= 6, printed=text)

    def tensor_opaque(self, children: list[Token]) -> TensorLiteral:
        # <Tensor>, or object(0x...): a frozen torch object (packed quantized parameters),
        # bound from the weights by name as a <Tensor> is
        return TensorLiteral(None, printed=str(children[0]) if children else "<Tensor>")

    def graph_opaque(self, children: list[Token]) -> Opaque:
        return Opaque(children[0].value)

    def tensor_item(self, children: list[Token]) -> Token:
        return children[0]

    def tensor_long(self, children: list[Token]) -> TensorLiteral:
        tag = children[-1]
        dtype, shape = tensor_tag(tag.value)
        floating = dtype in _FLOATING
        values: list[Any] = []
        scale = 1.0
        for tok in children[:-1]:
            kind = tok.type
            if kind == "STAR":  # "1e-05 *": the number before is a scale factor
                scale = float(values.pop()) if values else 1.0
            elif kind == "INT":
                values.append(int(tok) * scale if floating else int(tok))
            elif kind == "FLOAT" or kind in _NUMBERS:
                values.append((_NUMBERS[kind] if kind in _NUMBERS else float(tok)) * scale)
        if dtype == "Bool":
            values = [bool(v) for v in values]
        elif floating:
            values = [float(v) for v in values]
        if math.prod(shape) != len(values):
            raise IRSyntaxError(
                f"tensor literal has {len(values)} values but shape {list(shape)}", self.context.at(tag)
            )
        source = self.context.text
        start = children[0].start_pos
        assert start is not None  # lark's lexer gives every token its position
        padded = start
        while padded > 0 and source[padded - 1] == " ":
            padded -= 1
        if len(children) > 1 and padded > 0 and source[padded - 1] == "=":
            start = padded  # `value= 0.1 ...`: PyTorch pads the first value
        text = source[start : tag.end_pos]
        return TensorLiteral(tuple(values), shape, dtype, approximate=floating, printed=text)

    def type_value(self, children: list[Any]) -> T.Type:
        return children[0]

    # -- types -------------------------------------------------------------------------

    def named_type(self, children: list[Token]) -> T.Type:
        name = children[0].value
        found = self._named.get(name)
        if found is None:
            found = type_of_name(name)
            if found is None:
                raise IRSyntaxError(f"unknown type {name}", self.context.at(children[0]))
            self._named[name] = found
        return found

    def enum_type(self, children: list[Token]) -> T.Type:
        text = children[0].value  # Enum<__torch__.m.Color>
        return T.EnumType(text[len("Enum<") : -1])

    def interface_type(self, children: list[Token]) -> T.Type:
        text = children[0].value  # InterfaceType<Iface>
        return T.InterfaceType(text[len("InterfaceType<") : -1])

    def list_type(self, children: list[Any]) -> T.Type:
        return T.ListType(children[0])

    def optional_type(self, children: list[Any]) -> T.Type:
        return T.OptionalType(children[0])

    def tuple_type(self, children: list[Any]) -> T.Type:
        return T.TupleType(() if children == [None] else tuple(children))

    def size_arg(self, children: list[Token]) -> _Size:
        return _Size(("size", int(children[0])))

    def unknown_size(self, children: list[Token]) -> _Size:
        return _Size(("size", None))

    def size_stride_arg(self, children: list[Token]) -> _Size:
        return _Size(("sizestride", int(children[0]), int(children[1])))

    def kwarg(self, children: list[Any]) -> _Size:
        return _Size(("kw", children[0].value, children[1]))

    def stride_list(self, children: list[Any]) -> list[int | None]:
        if children == [None]:
            return []
        return [None if tok.type == "STAR" else int(tok) for tok in children]

    def device(self, children: list[Any]) -> str:
        name = children[0].value
        return name if len(children) == 1 else f"{name}:{children[1]}"

    def tensor_type(self, children: list[Token]) -> T.Type:
        """One TENSOR_TYPE token such as ``Float(2, *, strides=[3, 1], device=cpu)``; each
        distinct spelling is read once per process."""
        token = children[0]
        found = _TENSOR_TYPES.get(token.value)
        if found is None:
            try:
                found = read_tensor_type(token.value)  # the ground floor's reader of tensor type text
            except TypeTextError as err:
                raise IRSyntaxError(str(err), self.context.at(token)) from None
            if len(_TENSOR_TYPES) < 100_000:
                _TENSOR_TYPES[token.value] = found
        return found

    def named_field(self, children: list[Any]) -> _Size:
        return _Size(("field", children[0].value, children[1]))

    def call_type(self, children: list[Any]) -> T.Type:
        head: Token = children[0]
        args = [] if children[1:] == [None] else children[1:]
        name = head.value.rstrip("[")
        if name in _TENSOR_NAMES:
            try:
                return tensor_type_of(head.value, args)
            except TypeTextError as err:
                raise IRSyntaxError(str(err), self.context.at(head)) from None
        if name == "NamedTuple" and args and all(isinstance(a, _Size) and a[0] == "field" for a in args):
            return T.TupleType(tuple(a[2] for a in args), tuple(a[1] for a in args))
        if any(isinstance(a, _Size) for a in args):
            raise IRSyntaxError(f"{name}(...) takes types only", self.context.at(head))
        if name == "Dict" and len(args) == 2:
            return T.DictType(args[0], args[1])
        if name == "Union" and args:
            return T.UnionType(tuple(args))
        if name == "Future" and len(args) == 1:
            return T.FutureType(args[0])
        if name in ("RRef", "Await") and len(args) == 1:
            return T.NamedType(f"{name}[{args[0]}]")
        if name == "Optional" and len(args) == 1:
            return T.OptionalType(args[0])
        raise IRSyntaxError(f"unknown type {name}({', '.join(map(str, args))})", self.context.at(head))
