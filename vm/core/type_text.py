"""Reading a type back from the text ``str(type)`` prints, without the IR parser.

A program read from a ``.irbc`` file names its types as text: the graph's inputs and
outputs (``Program.input_types``), ``%self``'s attribute reads, the values of the run-time
check tables (``vm.program.check_graph``), type constants.  ``str`` of a ``vm.core.types`` type prints
one canonical spelling of each type, so a small recursive-descent reader of that spelling
is enough, and the VM needs no compiler to understand its own file:

    type    := primary ("[]" | "?")*
    primary := "(" [type ("," type)*] ")"                    a tuple
             | "NamedTuple(" name ":" type ("," ...)* ")"
             | "Dict(" type "," type ")" | "Union(" type ("," type)* ")"
             | ("Future" | "RRef" | "Await") "[" type "]" | "Enum<" qualname ">"
             | "InterfaceType<" qualname ">"
             | DTYPE "(" sizes ["strides=[" ... "]"] ["requires_grad=" 0|1] ["device=" d] ")"
             | qualname                                       a leaf, class or type variable

It reads a text as ``compiler.parser`` reads the same text (a test holds the two to
that over every type of the examples), and raises ``BytecodeError`` on anything else.
"""

from __future__ import annotations

import re
from functools import lru_cache

from vm.core import types as T
from vm.core.errors import BytecodeError

_TOKEN = re.compile(r"\s*((?:Enum|InterfaceType)<[A-Za-z0-9_.]*>|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|-?\d+|\[\]|[()\[\],:?=*])")
_DTYPES = frozenset(T.SCALAR_TYPE_CODES)
_LEAVES: dict[str, T.Type] = {
    t.name: t
    for t in (T.INT, T.FLOAT, T.BOOL, T.STR, T.NONE, T.DEVICE, T.SCALAR, T.NUMBER, T.ANY, T.FUNCTION,
              T.LAYOUT, T.SCALAR_TYPE, T.MEMORY_FORMAT, T.GENERATOR)
}
_LEAVES["Tensor"] = T.TENSOR


@lru_cache(maxsize=4096)
def parse_type_text(text: str) -> T.Type:
    """The type printed as ``text`` (each distinct spelling read once per process)."""
    tokens = _tokens(text)
    reader = _Reader(tokens, text)
    found = reader.type()
    if reader.pos != len(tokens):
        raise reader.fail()
    return found


def _tokens(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip():
                raise BytecodeError(f"malformed type {text!r}")
            break
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


class _Reader:
    def __init__(self, tokens: list[str], text: str) -> None:
        self.tokens, self.text, self.pos = tokens, text, 0

    def fail(self) -> BytecodeError:
        return BytecodeError(f"malformed type {self.text!r}")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise self.fail()
        self.pos += 1
        return token

    def type(self) -> T.Type:
        found = self.primary()
        while self.peek() in ("[]", "?"):
            found = T.ListType(found) if self.take() == "[]" else T.OptionalType(found)
        return found

    def types_until(self, close: str) -> list[T.Type]:
        items: list[T.Type] = []
        while self.peek() != close:
            if items:
                self.take(",")
            items.append(self.type())
        self.take(close)
        return items

    def primary(self) -> T.Type:
        token = self.take()
        if token == "(":
            return T.TupleType(tuple(self.types_until(")")))
        if token.startswith("Enum<"):
            return T.EnumType(token[len("Enum<") : -1])
        if token.startswith("InterfaceType<"):
            return T.InterfaceType(token[len("InterfaceType<") : -1])
        if self.peek() == "[" and token in ("Future", "RRef", "Await"):
            self.take("[")
            (elem,) = self.types_until("]") or [None]
            if elem is None:
                raise self.fail()
            return T.FutureType(elem) if token == "Future" else T.NamedType(f"{token}[{elem}]")
        if self.peek() == "(":
            self.take("(")
            return self.call(token)
        if token in _LEAVES:
            return _LEAVES[token]
        if not T.is_known_leaf_name(token):
            raise self.fail()
        return T.ClassType(token) if "." in token else T.NamedType(token)

    def call(self, name: str) -> T.Type:
        if name in _DTYPES or name == "Tensor":
            return self.tensor(name)
        if name == "NamedTuple":
            names: list[str] = []
            elems: list[T.Type] = []
            while self.peek() != ")":
                if names:
                    self.take(",")
                names.append(self.take())
                self.take(":")
                elems.append(self.type())
            self.take(")")
            return T.TupleType(tuple(elems), tuple(names))
        args = self.types_until(")")
        if name == "Dict" and len(args) == 2:
            return T.DictType(args[0], args[1])
        if name == "Union" and args:
            return T.UnionType(tuple(args))
        if name == "Optional" and len(args) == 1:
            return T.OptionalType(args[0])
        raise self.fail()

    def tensor(self, name: str) -> T.TensorType:
        sizes: list[int | None] = []
        strides: tuple[int | None, ...] | None = None
        requires_grad: bool | None = None
        device: str | None = None
        first = True
        while self.peek() != ")":
            if not first:
                self.take(",")
            first = False
            token = self.take()
            if token in ("strides", "requires_grad", "device"):
                self.take("=")
                if token == "strides":
                    strides = self.dims()
                elif token == "requires_grad":
                    requires_grad = self.take() == "1"
                else:
                    device = self.take()
                    if self.peek() == ":":
                        self.take(":")
                        device += ":" + self.take()
            elif token == "*" or token.lstrip("-").isdigit():
                sizes.append(None if token == "*" else int(token))
            else:
                raise self.fail()
        self.take(")")
        return T.TensorType(
            dtype=None if name == "Tensor" else name,
            sizes=tuple(sizes) if (sizes or name != "Tensor") else None,
            strides=strides,
            requires_grad=requires_grad,
            device=device,
        )

    def dims(self) -> tuple[int | None, ...]:
        if self.peek() == "[]":
            self.take()
            return ()
        self.take("[")
        items: list[int | None] = []
        while self.peek() != "]":
            if items:
                self.take(",")
            token = self.take()
            if not (token == "*" or token.lstrip("-").isdigit()):
                raise self.fail()
            items.append(None if token == "*" else int(token))
        self.take("]")
        return tuple(items)


__all__ = ["parse_type_text"]
