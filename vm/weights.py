"""Module objects: what a scripted module's ``%self`` is at run time.

A graph of a scripted module takes ``%self`` and reads parameters through chains of
``prim::GetAttr[name="..."]``.  The runtime builds ``%self`` from a flat mapping of dotted
attribute paths, as a PyTorch state_dict has them (``0.weight``, ``bn.running_mean``)::

    >>> root = ModuleObject.from_state_dict({"fc.weight": w, "fc.bias": b})
    >>> root.get("fc").get("weight") is w
    True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.diagnostics import RunError


class ModuleObject:
    """One level of a module tree: named attributes, some of them sub-modules."""

    __slots__ = ("path", "attributes")

    def __init__(self, path: str = "", attributes: dict[str, Any] | None = None):
        self.path = path
        self.attributes: dict[str, Any] = {} if attributes is None else attributes

    def __repr__(self) -> str:
        return f"<ModuleObject {self.path or 'self'}: {sorted(self.attributes)}>"

    def dotted(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def get(self, name: str) -> Any:
        try:
            return self.attributes[name]
        except KeyError:
            raise RunError(f"module attribute {self.dotted(name)!r} is not in the weights") from None

    def set(self, name: str, value: Any) -> None:
        self.attributes[name] = value

    @classmethod
    def from_state_dict(cls, weights: Mapping[str, Any]) -> "ModuleObject":
        root = cls()
        for key, value in weights.items():
            node = root
            *parents, leaf = key.split(".")
            for part in parents:
                child = node.attributes.get(part)
                if not isinstance(child, ModuleObject):
                    child = ModuleObject(node.dotted(part))
                    node.attributes[part] = child
                node = child
            node.attributes[leaf] = value
        return root
