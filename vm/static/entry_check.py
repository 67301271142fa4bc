"""The static runtime's entry: a generated ``enter(*args) -> (key, args)``.

The rules are the interpreter's (``vm.binding.inputs.check_value``: one input checker for both
backends, a ``RunError`` naming the input; a numpy scalar for an ``int`` becomes the
Python int).  What is generated here is only the fast path in front of it: an array for
a ``Tensor`` (of the declared dtype, for a refined type such as ``Float(2, 3)``) passes
with one ``type`` test, and the plan key, the shapes and dtypes of the tensor inputs, is
built in the same function.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.binding.inputs import check_value
from vm.ir.graph import Value
from vm.program.signature import is_tensor_type, tensor_spec


def input_checker(inputs: list[Value]) -> Any:
    """A generated ``enter(*args) -> (key, args)`` for the entry graph's ``inputs``."""
    lines: list[str] = []
    key: list[str] = []
    env: dict[str, Any] = {"_nd": np.ndarray}
    for i, v in enumerate(inputs):
        type_text = "Tensor" if v.type is None else str(v.type)
        env[f"_c{i}"] = _checker(f"input %{v.name}", type_text)
        if is_tensor_type(type_text) and not type_text.endswith("?"):
            dtype = tensor_spec(type_text)[0]
            test = f"type(a{i}) is not _nd"
            if dtype is not None:
                env[f"_t{i}"] = np.dtype(dtype)
                test += f" or a{i}.dtype != _t{i}"
            lines.append(f"    if {test}: a{i} = _c{i}(a{i})")
            key.append(f"a{i}.shape, a{i}.dtype")
        else:
            lines.append(f"    a{i} = _c{i}(a{i})")
    params = ", ".join(f"a{i}" for i in range(len(inputs)))
    comma = "," if len(inputs) == 1 else ""
    src = (
        f"def enter({params}):\n"
        + "\n".join(lines)
        + f"\n    return ({', '.join(key)}{',' if key else ''}), ({params}{comma})\n"
    )
    exec(compile(src, "<static:inputs>", "exec"), env)  # noqa: S102  (generated above)
    enter = env["enter"]
    enter.inputs = inputs
    return enter


def _checker(what: str, type_text: str) -> Any:
    return lambda value: check_value(what, value, type_text)


def typed_inputs(inputs: list[Value]) -> tuple[np.ndarray, ...] | None:
    """Inputs of the very shapes and dtypes ``inputs``' types declare, filled with zeros
    (a valid index, a false mask), or None unless every input is a tensor whose type fixes
    both, as a traced graph's do (``Long(1, 16, strides=[16, 1], ...)``)."""
    made = []
    for v in inputs:
        type_text = "Tensor" if v.type is None else str(v.type)
        if not is_tensor_type(type_text) or type_text.endswith("?"):
            return None
        dtype, shape = tensor_spec(type_text)
        if dtype is None or shape is None or any(d is None or d < 0 for d in shape):
            return None
        made.append(np.zeros(tuple(d for d in shape if d is not None), dtype=dtype))
    return tuple(made)
