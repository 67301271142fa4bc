"""An archive's module object as an irvm weights mapping (see ``vm/binding/weights.py``).

Every attribute of the module tree gets its dotted path (``fc.weight``, ``layers.0.bias``,
``bn.eps``), as the runtime's ``bind_self`` looks it up from ``%self``'s GetAttr chains:

- a tensor is its array; a bool/int/float a 0-d array; a str a 0-d string array;
- a list of numbers a 1-d array; a list or tuple of anything else indexed entries
  (``name.0``, ``name.1``...); a dict the dict itself (in an npz: ``name.<key>`` entries);
- None is left out (an absent Optional attribute reads as None);
- a sub-module recurses; an enum member is its value.

The code's tensor constants (``CONSTANTS.cN`` of a frozen module) are added under
``CONSTANTS.cN``, the name the frontend gives their ``<Tensor>`` constants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.torchscript.unpickle import Record
from vm.core.quantized import PACKED_TYPES, QTensor


def flatten(root: Record, constants: tuple[Any, ...] = (), *, arrays_only: bool = False) -> dict[str, Any]:
    """The weights mapping of ``root`` (see the module docstring).  A dict attribute stays
    a Python dict (the runtime reads it as one) unless ``arrays_only`` (for an npz)."""
    out: dict[str, Any] = {}
    keep_dicts = not arrays_only
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, Record) and not value.attributes and isinstance(value.state, (str, int, float)):
            _leaf(out, path, value.state, stack)  # an enum member: its value
        elif isinstance(value, Record):
            for name, attr in value.attributes.items():
                stack.append((f"{path}.{name}" if path else name, attr))
        else:
            if keep_dicts and isinstance(value, dict) and not any(isinstance(v, Record) for v in value.values()):
                out[path] = dict(value)
                continue
            _leaf(out, path, value, stack)
    for i, value in enumerate(constants):
        if isinstance(value, (np.ndarray, QTensor, *PACKED_TYPES)):
            out[f"CONSTANTS.c{i}"] = value
    return out


def _leaf(out: dict[str, Any], path: str, value: Any, stack: list[tuple[str, Any]]) -> None:
    if value is None:
        return
    if isinstance(value, np.ndarray):
        out[path] = value
    elif isinstance(value, bool):
        out[path] = np.array(value)
    elif isinstance(value, (int, float)):
        out[path] = np.array(value, dtype=np.int64 if isinstance(value, int) else np.float64)
    elif isinstance(value, str):
        out[path] = np.array(value)
    elif isinstance(value, list) and all(isinstance(v, (int, float, bool)) for v in value):
        kinds = {type(v) for v in value}
        dtype = np.bool_ if kinds == {bool} else np.float64 if float in kinds else np.int64
        out[path] = np.array(value, dtype=dtype)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            stack.append((f"{path}.{i}", item))
    elif isinstance(value, dict):
        for key, item in value.items():
            stack.append((f"{path}.{key}", item))
    elif isinstance(value, complex):
        out[path] = np.array(value)
    elif isinstance(value, (QTensor, *PACKED_TYPES)):
        out[path] = value  # quantized values (vm.core.quantized)


def model_keys(root: Record, classes: dict[str, Any], weights: dict[str, Any]) -> dict[str, bool]:
    """The model keys (``Module.model_keys``: key -> a state_dict must hold it) of the module
    tree ``root`` flattened as ``weights``: every key of ``weights``; must-hold are the
    parameters and buffers each module's class declares (``__parameters__``, ``__buffers__``:
    what ``state_dict()`` holds), quantized values (a quantized module's packed parameters, held
    by its ``__getstate__``), and the code's tensor constants (``CONSTANTS.cN``: the program
    cannot run without them).  ``classes``: the archive's classes by qualified name."""
    from vm.binding.strict import model_keys_of

    keys = model_keys_of(weights)
    for key in keys:
        keys[key] = isinstance(weights[key], (QTensor, *PACKED_TYPES)) or key.startswith("CONSTANTS.")
    stack: list[tuple[str, Record]] = [("", root)]
    while stack:
        path, record = stack.pop()
        info = classes.get(record.qualname)
        for name in getattr(info, "state", ()):
            key = f"{path}.{name}" if path else name
            if key in keys:
                keys[key] = True
        for name, attr in record.attributes.items():
            if isinstance(attr, Record):
                stack.append((f"{path}.{name}" if path else name, attr))
    return keys
