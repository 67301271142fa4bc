"""The runtime value of a TorchScript enum member.

A graph names a member by its qualified name (``prim::Constant[value=__torch__.m.Color.RED]``
of type ``Enum<__torch__.m.Color>``) and a weights file by its member name (``'RED'``);
neither carries the member's value, so two members are equal when their enum class and
member name are, as TorchScript compares them.

    >>> EnumValue("__torch__.m.Color", "RED") == EnumValue("__torch__.m.Color", "RED", 1)
    True
    >>> str(EnumValue("__torch__.m.Color", "RED"))
    '__torch__.m.Color.RED'
"""

from __future__ import annotations

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
