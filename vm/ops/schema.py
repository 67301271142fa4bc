"""Operator schemas in PyTorch's notation: ``aten::add.Tensor(Tensor self, Tensor other, *,
Scalar alpha=1) -> Tensor`` parsed into a ``Schema`` of ``Argument`` records.

A schema names the operator and its overload, every argument with its type, default,
keyword-only mark and alias annotation (``(a!)`` for a written argument, ``(a)`` for a
result that may share memory with one), and the returns.  The registry
(``vm.ops.registry``) keeps one per registered overload; the compiler matches node types
against them.  The parser reads the subset of PyTorch's grammar TorchScript prints.
"""

from __future__ import annotations

import ast
import re
from typing import Any

import attrs

MISSING: Any = attrs.NOTHING


@attrs.frozen
class Argument:
    name: str
    type: str  # schema notation without alias annotation: "Tensor", "int[]", "Scalar?"
    default: Any = MISSING
    kwarg_only: bool = False
    alias: str | None = None  # "a" or "a!" from "Tensor(a!)"

    @property
    def mutated(self) -> bool:
        return bool(self.alias and self.alias.endswith("!"))


@attrs.frozen
class Schema:
    name: str  # "aten::add"
    overload: str  # "Tensor" ("" for the default overload)
    arguments: tuple[Argument, ...]
    returns: tuple[Argument, ...]
    vararg: bool = False  # "..." among the arguments
    text: str = attrs.field(default="", eq=False)

    @property
    def qualified(self) -> str:
        return f"{self.name}.{self.overload}" if self.overload else self.name

    @property
    def mutates(self) -> bool:
        return any(a.mutated for a in self.arguments)

    @property
    def returns_alias(self) -> bool:
        return any(r.alias for r in self.returns)

    def __str__(self) -> str:
        return self.text or self.qualified


def generality(schema: Schema) -> int:
    """How many kinds of value the schema's arguments accept, as a rank (lower is more
    specific): 3 per ``Any`` or type variable, 2 per ``Scalar``/``number``, 1 per optional,
    summed over arguments and list elements.  Overload order puts the more specific first."""
    return sum(_type_generality(a.type) for a in schema.arguments)


_CONCRETE = frozenset({"int", "float", "bool", "str", "complex", "number"})


def _type_generality(text: str) -> int:
    text = text.strip()
    if text.endswith("?"):
        return 1 + _type_generality(text[:-1])
    if text.endswith("]"):
        return _type_generality(text[: text.index("[")])
    if text == "Any" or (text.isidentifier() and text[0].islower() and text not in _CONCRETE):
        return 3  # a type variable: t, t1, tVal
    return 2 if text in ("Scalar", "number") else 0


# ---------------------------------------------------------------------------------------
# Schema parsing: "ns::name.overload(args) -> returns"

_SCHEMA_RE = re.compile(r"^\s*([\w:]+?)(?:\.(\w+))?\s*\((.*)\)\s*->\s*(.*?)\s*$", re.S)
_ALIAS_RE = re.compile(r"\(([a-z*|]+!?)(?:\s*->\s*[^)]*)?\)")


def parse_schema(text: str) -> Schema:
    m = _SCHEMA_RE.match(text)
    if not m:
        raise ValueError(f"malformed schema: {text!r}")
    name, overload, args_text, ret_text = m.group(1), m.group(2) or "", m.group(3), m.group(4)
    arguments: list[Argument] = []
    kwarg_only = vararg = False
    for part in _split_top(args_text):
        if part == "*":
            kwarg_only = True
            continue
        if part == "...":
            vararg = True
            continue
        arguments.append(_parse_argument(part, kwarg_only, text))
    ret_text = ret_text.strip()
    if ret_text.startswith("(") and _matching_paren(ret_text) == len(ret_text) - 1:
        returns = tuple(_parse_argument(p, False, text, is_return=True) for p in _split_top(ret_text[1:-1]))
    else:
        returns = (_parse_argument(ret_text, False, text, is_return=True),)
    return Schema(name, overload, tuple(arguments), returns, vararg, text.strip())


def _parse_argument(part: str, kwarg_only: bool, schema: str, is_return: bool = False) -> Argument:
    part = part.strip()
    default: Any = MISSING
    if "=" in part and not is_return:
        part, raw = part.split("=", 1)
        default = _parse_default(raw.strip())
        part = part.strip()
    alias = None
    am = _ALIAS_RE.search(part)
    if am:
        alias = am.group(1)
        part = part[: am.start()] + part[am.end() :]
    # the type is everything up to the last top-level space; a return may have no name
    type_text, _, name = part.rpartition(" ") if " " in _strip_nested(part) else (part, "", "")
    if not type_text:
        type_text, name = part, ""
    if "(" not in type_text and " " in type_text:
        raise ValueError(f"malformed argument {part!r} in schema {schema!r}")
    return Argument(name.strip(), type_text.strip(), default, kwarg_only, alias)


def _parse_default(raw: str) -> Any:
    if raw == "None":
        return None
    if raw in ("True", "False"):
        return raw == "True"
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        return raw  # symbolic defaults such as contiguous_format, Mean, long
    return list(value) if isinstance(value, tuple) else value


def _strip_nested(text: str) -> str:
    """``text`` with everything inside parentheses removed (to find top-level spaces)."""
    out, depth = [], 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip()
    if tail:
        parts.append(tail)
    return parts


def _matching_paren(text: str) -> int:
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1
