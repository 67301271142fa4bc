"""Schema type text -> ``vm.core.types.Type``: the types of operator schemas (``int[]?``,
``Tensor(a!)`` without its alias annotation, ``t[]`` with a type variable ``t``).

The operator library reads them at run time (``prim::isinstance``), so they live in the
VM; ``vm.ir.resolve`` re-exports them for overload resolution.
"""

from __future__ import annotations

import re

import attrs

from vm.core import types as T


@attrs.frozen
class TypeVar(T.Type):
    """A schema type variable such as ``t`` in ``t[] a``: binds to one type per call."""

    name: str

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class FixedList(T.ListType):
    """``int[2]``: a list type with a declared length, which also accepts a single int."""

    size: int = 0

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


# ---------------------------------------------------------------------------------------
# Schema type text -> Type

_LEAVES: dict[str, T.Type] = {
    "Tensor": T.TENSOR,
    "int": T.INT,
    "SymInt": T.INT,
    "float": T.FLOAT,
    "bool": T.BOOL,
    "str": T.STR,
    "Scalar": T.SCALAR,
    "number": T.SCALAR,
    "NoneType": T.NONE,
    "Device": T.DEVICE,
    "Any": T.ANY,
    "ScalarType": T.SCALAR_TYPE,
    "Layout": T.LAYOUT,
    "MemoryFormat": T.MEMORY_FORMAT,
    "Generator": T.GENERATOR,
}
_TOKEN = re.compile(r"\s*([\w.]+|\[\d*\]|[()?,\[\]])")
_schema_type_cache: dict[str, T.Type] = {}


def parse_schema_type(text: str) -> T.Type:
    """``"int[]?"`` -> ``OptionalType(ListType(INT))``; lowercase unknown names are TypeVars."""
    cached = _schema_type_cache.get(text)
    if cached is None:
        tokens = _TOKEN.findall(text)
        parsed, pos = _parse_type(tokens, 0)
        if pos != len(tokens):
            raise ValueError(f"cannot parse schema type {text!r}")
        cached = _schema_type_cache[text] = parsed
    return cached


def _parse_type(tokens: list[str], pos: int) -> tuple[T.Type, int]:
    tok = tokens[pos]
    if tok == "(":
        elems, pos = _parse_type_list(tokens, pos + 1)
        base: T.Type = T.TupleType(tuple(elems))
    elif pos + 1 < len(tokens) and tokens[pos + 1] == "(" and tok in ("Dict", "Future", "Union", "Optional", "List", "Tuple"):
        elems, pos = _parse_type_list(tokens, pos + 2)
        base = _generic(tok, elems)
    else:
        pos += 1
        base = _LEAVES.get(tok) or _named(tok)
    while pos < len(tokens) and (tokens[pos] == "?" or tokens[pos].startswith("[")):
        tok = tokens[pos]
        if tok == "?":
            base = T.OptionalType(base)
        elif tok == "[]":
            base = T.ListType(base)
        else:
            base = FixedList(base, int(tok[1:-1]))
        pos += 1
    return base, pos


def _named(tok: str) -> T.Type:
    """A type variable (``t``), a class (``__torch__.torch.classes.quantized.Conv2dPackedParamsBase``,
    torch's packed parameters) or another named type."""
    if "." in tok:
        return T.ClassType(tok)
    return TypeVar(tok) if tok[:1].islower() else T.NamedType(tok)


def _parse_type_list(tokens: list[str], pos: int) -> tuple[list[T.Type], int]:
    elems: list[T.Type] = []
    while tokens[pos] != ")":
        elem, pos = _parse_type(tokens, pos)
        elems.append(elem)
        if tokens[pos] == ",":
            pos += 1
    return elems, pos + 1


def _generic(name: str, elems: list[T.Type]) -> T.Type:
    if name == "Dict":
        return T.DictType(elems[0], elems[1])
    if name == "Future":
        return T.FutureType(elems[0])
    if name == "Optional":
        return T.OptionalType(elems[0])
    if name == "List":
        return T.ListType(elems[0])
    if name == "Tuple":
        return T.TupleType(tuple(elems))
    return T.UnionType(tuple(elems))
