"""A program's inputs and outputs as a caller sees them: name, type, dtype, shape.

``irvm info`` prints this table, as ONNX Runtime's ``session.get_inputs()`` lists a
model's inputs.  It reads only the type strings a Program records (``input_types``,
``output_types``, as PyTorch prints them), so it works the same for ``.ir`` and ``.irbc``::

    >>> tensor_spec("Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu)")
    ('float32', [2, 3])
    >>> tensor_spec("Tensor")
    (None, None)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.binding.inputs import DTYPES

_REFINED = re.compile(r"^(\w+)\((.*)\)$")


def tensor_spec(type_text: str) -> tuple[str | None, list[int | None] | None]:
    """(numpy dtype name, shape) a tensor type declares; None where it says nothing.  A
    dimension printed ``*`` is None; ``strides=``, ``device=`` and other keywords are skipped."""
    t = type_text.strip()
    if t in DTYPES:
        return DTYPES[t], None
    m = _REFINED.match(t)
    if not m or m.group(1) not in DTYPES:
        return None, None
    shape: list[int | None] = []
    for part in _top_level_items(m.group(2)):
        if "=" in part:
            continue
        shape.append(int(part) if part.lstrip("-").isdigit() else None)
    return DTYPES[m.group(1)], shape


def _top_level_items(text: str) -> list[str]:
    items, depth, current = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        items.append(current.strip())
    return items


def is_tensor_type(type_text: str) -> bool:
    t = type_text.strip().rstrip("?")
    refined = _REFINED.match(t)
    return t == "Tensor" or t in DTYPES or bool(refined and refined.group(1) in DTYPES)


def rows(program: Any, examples: Sequence[Any] | None = None) -> list[tuple[str, str, str, str, str]]:
    """(role, name, type, dtype, shape) for each input (``%self`` noted as coming from the
    weights) and each output (``out0``..., the keys ``irvm run --output`` writes).
    ``examples``: one entry per input (not ``%self``): an example array (a traced
    archive's), or a ``(dtype name, shape)`` known otherwise, or None; it gives the
    input's dtype and shape."""
    table = []
    examples = list(examples or ())
    for i, (name, t) in enumerate(zip(program.input_names, program.input_types)):
        if i == 0 and program.takes_self:
            table.append(("input", name, t, "-", "the module object, bound from --weights"))
            continue
        example = examples[i - program.takes_self] if len(examples) == len(program.input_names) - program.takes_self else None
        if isinstance(example, np.ndarray) and is_tensor_type(t):
            table.append(("input", name, t, example.dtype.name, "[" + ", ".join(map(str, example.shape)) + "]"))
            continue
        if isinstance(example, tuple) and is_tensor_type(t):
            dtype, shape = example
            shown = "?" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
            table.append(("input", name, t, dtype or "?", shown))
            continue
        table.append(("input", name, t, *_dtype_shape(t)))
    for i, t in enumerate(output_types(program)):
        table.append(("output", f"out{i}", t, *_dtype_shape(t)))
    return table


def output_types(program: Any) -> list[str]:
    """The type text of each output (``?`` where the program does not record it)."""
    return list(program.output_types) or _module_output_types(program) or ["?"] * program.n_outputs


def _module_output_types(program: Any) -> list[str]:
    """The output types of the IR module a program was read with (an .irbc records its
    input types, and its IR text gives the outputs')."""
    module = getattr(program, "module", None)
    if module is None:
        return []
    return ["Tensor" if v.type is None else str(v.type) for v in module.main.outputs]


def _dtype_shape(t: str) -> tuple[str, str]:
    if not is_tensor_type(t):
        return "-", "-"
    dtype, shape = tensor_spec(t.rstrip("?"))
    shown = "?" if shape is None else "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"
    return dtype or "?", shown


def describe_program(program: Any, examples: Sequence[Any] | None = None) -> str:
    """The ``irvm info`` table: one line per input and output, columns aligned (``examples``: see ``rows``)."""
    table = [("", "name", "type", "dtype", "shape"), *rows(program, examples)]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    lines = []
    for role, name, t, dtype, shape in table:
        lines.append(f"{role:<{widths[0]}}  {name:<{widths[1]}}  {t:<{widths[2]}}  {dtype:<{widths[3]}}  {shape}".rstrip())
    names = program.input_names[1:] if program.takes_self else program.input_names
    defaults = tuple(getattr(program, "input_defaults", ()))
    if defaults:  # what a caller (or an inputs file) may leave out
        given = ", ".join(f"{n} = {v!r}" for n, v in zip(names[len(names) - len(defaults) :], defaults))
        lines.append(f"defaults: {given}")
    return "\n".join(lines) + "\n"


__all__ = ["describe_program", "is_tensor_type", "output_types", "rows", "tensor_spec"]
