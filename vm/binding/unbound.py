"""``<Tensor>`` constants: values the IR does not print, bound from the weights by name."""

from __future__ import annotations

import re
from typing import Any

import attrs

from vm.core.errors import CompileError


@attrs.frozen
class UnboundTensor:
    """A ``<Tensor>`` constant: PyTorch did not print its values, so they come from weights.

    ``name`` is the constant's value name without ``%`` (``self.0.weight``).  A runtime
    binds it from its weights mapping under the first of ``keys()`` it holds: the name
    itself, the name without its ``self.`` prefix (a state_dict key, ``0.weight``), and
    both again without a trailing ``.N`` uniquing suffix (``self.0.weight.1``).
    """

    name: str

    def keys(self) -> list[str]:
        bases = [self.name]
        stripped = re.sub(r"\.\d+$", "", self.name)
        if stripped != self.name:
            bases.append(stripped)
        keys: list[str] = []
        for base in bases:
            keys.append(base)
            if base.startswith("self."):
                keys.append(base[len("self.") :])
        return list(dict.fromkeys(keys))

    def bind(self, weights: Any) -> Any:
        """The weight for this constant from a mapping; CompileError naming the keys tried."""
        for key in self.keys():
            if key in weights:
                return weights[key]
        raise CompileError(f"no weight for tensor constant %{self.name} (tried {', '.join(self.keys())})")
