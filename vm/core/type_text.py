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
             | TENSOR                                         one token: read_tensor_type
             | qualname                                       a leaf, class or type variable

It reads a text as ``compiler.parser`` reads the same text (a test holds the two to
that over every type of the examples), and raises ``BytecodeError`` on anything else.

A refined tensor type (``Float(2, *, strides=[3, 1], requires_grad=0, device=cpu)``,
``Double(*, 4:1)``) is one token here as in the IR grammar (``TENSOR_TYPE``), and
``read_tensor_type`` is the one reader of its text: the compiler's parser calls it for
that token, turning its ``TypeTextError`` into a syntax error at the token.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from vm.core import types as T
from vm.core.errors import BytecodeError

_TENSOR_NAMES = "Tensor|Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool|ComplexFloat|ComplexDouble|ComplexHalf|QInt8|QUInt8|QInt32"
TENSOR_TYPE = re.compile(rf"(?:{_TENSOR_NAMES})\([^()\n]*\)")  # grammar/ir.lark's TENSOR_TYPE
_TOKEN = re.compile(rf"\s*({TENSOR_TYPE.pattern}|(?:Enum|InterfaceType)<[A-Za-z0-9_.]*>|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|-?\d+|\[\]|[()\[\],:?=*])")
_LEAVES: dict[str, T.Type] = {
    t.name: t
    for t in (T.INT, T.FLOAT, T.BOOL, T.STR, T.NONE, T.DEVICE, T.SCALAR, T.NUMBER, T.ANY, T.FUNCTION,
              T.LAYOUT, T.SCALAR_TYPE, T.MEMORY_FORMAT, T.GENERATOR)
}
_LEAVES["Tensor"] = T.TENSOR


def type_of_name(name: str) -> T.Type | None:
    """The type a bare name spells: a leaf (``int``, ``Tensor``, ``Device``...), a class
    (a dotted qualname) or another known leaf name; None for a name that is no type."""
    found = _LEAVES.get(name)
    if found is None and T.is_known_leaf_name(name):
        found = T.ClassType(name) if "." in name else T.NamedType(name)
    return found


class TypeTextError(ValueError):
    """A tensor type's text that says no tensor type; the message names what is wrong."""


_STRIDES = re.compile(r"strides=\[([^\]]*)\]")
_DEVICE = re.compile(r"[A-Za-z_]+(:[0-9]+)?")
_SIZE_ITEM = re.compile(r"(\*|-?[0-9]+)(?::(-?[0-9]+))?|(requires_grad|device|strides)(?:=([A-Za-z0-9_:]+))?")


def read_tensor_type(text: str) -> T.TensorType:
    """The tensor type ``text`` spells: ``NAME(item, ...)`` with items a size (``2``,
    ``*``), a size and its stride (``2:3``), then ``strides=[3, 1]``, ``requires_grad=0|1``,
    ``device=cpu|cuda:1``; TypeTextError otherwise."""
    head = text[: text.index("(")]
    body = text[len(head) + 1 : -1]
    args: list[tuple[Any, ...]] = []
    strides = _STRIDES.search(body)
    if strides is not None:
        body = body[: strides.start()] + "strides" + body[strides.end() :]
    for item in (x.strip() for x in body.split(",")) if body.strip() else ():
        m = _SIZE_ITEM.fullmatch(item)
        if m is None:
            raise TypeTextError(f"bad tensor type item {item!r} in {text}")
        size, stride, key, value = m.groups()
        if key in ("requires_grad", "device") and value is None:
            raise TypeTextError(f"{key} needs a value in {text}")
        if key == "strides" and strides is not None:
            items = [x.strip() for x in strides.group(1).split(",") if x.strip()]
            if not all(x == "*" or x.lstrip("-").isdigit() for x in items):
                raise TypeTextError(f"bad strides in {text}")
            args.append(("kw", "strides", [None if x == "*" else int(x) for x in items]))
        elif key is not None:
            args.append(("kw", key, value))
        elif stride is not None:
            args.append(("sizestride", int(size), int(stride)))
        else:
            args.append(("size", None if size == "*" else int(size)))
    return tensor_type_of(head, args)


def tensor_type_of(head: str, args: Sequence[Any]) -> T.TensorType:
    """The tensor type ``head(args)``, each argument ``("size", n)``, ``("sizestride", n,
    stride)`` or ``("kw", key, value)`` (anything else is refused); TypeTextError when they
    say no tensor type (sizes after options, strides of another rank, a bad option)."""
    sizes: list[int | None] = []
    strides: list[int | None] | None = None
    options: dict[str, Any] = {}
    for arg in args:
        if not isinstance(arg, tuple):
            raise TypeTextError(f"unexpected type {arg} in a tensor type")
        if arg[0] != "kw" and (options or (strides is not None and arg[0] == "size")):
            raise TypeTextError(f"size after the options of {head}(...)")
        if arg[0] == "size":
            sizes.append(arg[1])
        elif arg[0] == "sizestride":
            sizes.append(arg[1])
            strides = (strides or []) + [arg[2]]
        elif arg[1] == "strides" and isinstance(arg[2], list) and strides is None:
            strides = arg[2]
        elif arg[1] in ("requires_grad", "device") and arg[1] not in options:
            options[arg[1]] = arg[2]
        else:
            raise TypeTextError(f"unexpected tensor type option {arg[1]}=")
    if strides is not None and len(strides) != len(sizes):
        raise TypeTextError(f"{head}(...) has {len(sizes)} sizes but {len(strides)} strides")
    requires_grad = options.get("requires_grad")
    device = options.get("device")
    if requires_grad is not None and str(requires_grad) not in ("0", "1"):
        raise TypeTextError(f"requires_grad must be 0 or 1 in {head}(...)")
    if device is not None and not (isinstance(device, str) and _DEVICE.fullmatch(device)):
        raise TypeTextError(f"bad device in {head}(...): expected cpu, cuda:1...")
    return T.TensorType(
        dtype=None if head == "Tensor" else head,
        sizes=tuple(sizes) if (sizes or head != "Tensor") else None,
        strides=None if strides is None else tuple(strides),
        requires_grad=None if requires_grad is None else bool(int(requires_grad)),
        device=None if device is None else str(device),
    )


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
        if TENSOR_TYPE.fullmatch(token):
            try:
                return read_tensor_type(token)
            except TypeTextError:
                raise self.fail() from None
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
        found = type_of_name(token)
        if found is None:
            raise self.fail()
        return found

    def call(self, name: str) -> T.Type:
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


__all__ = ["TENSOR_TYPE", "TypeTextError", "parse_type_text", "read_tensor_type", "tensor_type_of", "type_of_name"]
