"""The runtime value of a TorchScript enum member.

A graph names a member by its qualified name (``prim::Constant[value=__torch__.m.Color.RED]``
of type ``Enum<__torch__.m.Color>``) and a weights file by its member name (``'RED'``);
neither carries the member's value, so two members are equal when their enum class and
member name are, as TorchScript compares them.

    >>> EnumValue("__torch__.m.Color", "RED") == EnumValue("__torch__.m.Color", "RED", 1)
    True
    >>> str(EnumValue("__torch__.m.Color", "RED"))
    '__torch__.m.Color.RED'

A file (weights, inputs) stores a member as its name, or as ``NAME=VALUE`` with the
member's value as a JSON literal when the value is needed (``prim::EnumValue``, Python's
``member.value``), as ``tools/export_torch.py`` writes it:

    >>> parse_member("__torch__.m.Color", 'RED=1').value
    1
    >>> stored(EnumValue("__torch__.m.Color", "RED", "red"))
    'RED="red"'
"""

from __future__ import annotations

import json
from typing import Any

import attrs


@attrs.frozen
class EnumValue:
    """One member of enum class ``qualname``: its ``name``, and its ``value`` when known."""

    qualname: str
    name: str
    value: Any = attrs.field(default=None, eq=False)

    def __str__(self) -> str:
        return f"{self.qualname}.{self.name}"


def member_of(qualname: str, dotted: str) -> EnumValue | None:
    """The member a qualified name such as ``__torch__.m.Color.RED`` denotes in enum
    class ``qualname``, or None when it names no member of that class."""
    prefix = qualname + "."
    if not dotted.startswith(prefix):
        return None
    name = dotted[len(prefix):]
    return EnumValue(qualname, name) if name.isidentifier() else None


def parse_member(qualname: str, text: str) -> EnumValue | None:
    """The member of enum class ``qualname`` that a stored string names: ``RED``,
    ``__torch__.m.Color.RED``, or either followed by ``=VALUE`` (a JSON int, float or
    string); None when the text names no member."""
    head, sep, tail = text.partition("=")
    member = member_of(qualname, head) if "." in head else EnumValue(qualname, head)
    if member is None or not member.name.isidentifier():
        return None
    if not sep:
        return member
    try:
        value = json.loads(tail)
    except ValueError:
        return None
    if not isinstance(value, (int, float, str)) or isinstance(value, bool):
        return None
    return EnumValue(qualname, member.name, value)


def stored(member: EnumValue) -> str:
    """How a file stores ``member``: its name, and ``=VALUE`` when its value is known."""
    return member.name if member.value is None else f"{member.name}={json.dumps(member.value)}"
