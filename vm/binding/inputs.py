"""Checking a run's inputs against the entry graph's declared input types.

The types come as PyTorch prints them (``Tensor``, ``Float(2, 3, strides=[3, 1])``,
``int``, ``float``, ``bool``, ``str``, ``Tensor?``, ``int[]``, ``(Tensor, int)``...), so a
program read from a file needs no compiler to check them.  The check is what a caller
gets wrong: the count, a tensor where a scalar is declared or the reverse, a dtype that
contradicts a refined tensor type, a list or tuple where something else is declared.  A
numpy scalar or 0-d array passed for an ``int``/``float``/``bool`` becomes the Python
scalar (the runtime value convention), when torch would take it: an ``int`` is an integer
within int64 (never 2.7, ``'3'`` or a uint64 of 2^64-1), a ``float`` a real number, a
``bool`` a bool (``check_scalar``).  Every error is a ``RunError`` naming the input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.core.errors import RunError
from vm.core.types import NUMPY_DTYPES
from vm.program.bytecode import Program

DTYPES = NUMPY_DTYPES  # the dtype names of refined tensor types, as numpy dtype names
_DTYPES = DTYPES
# A refined tensor type names its dtype: ``Float(2, 3, strides=[3, 1], ...)``; ``Dict(str, Tensor)``
# and other container types start the same way but are not tensors.
_REFINED = re.compile(r"^(" + "|".join(_DTYPES) + r")\(")


def with_defaults(defaults: Sequence[Any], args: Sequence[Any], n_inputs: int) -> Sequence[Any]:
    """``args`` completed with ``defaults`` (a program's ``input_defaults``) for the
    trailing inputs a caller left out, as torch calls ``forward(x)`` for ``def
    forward(self, x, scale: float=2.)``; ``args`` itself when nothing is missing or the
    defaults do not reach."""
    missing = n_inputs - len(args)
    if 0 < missing <= len(defaults):
        return (*args, *defaults[len(defaults) - missing :])
    return args


def check_inputs(program: Program, args: Sequence[Any]) -> list[Any]:
    """The inputs as the runtime takes them, or a RunError naming the first bad one."""
    names, types = list(program.input_names), list(program.input_types)
    if program.takes_self:
        names, types = names[1:], types[1:]
    args = with_defaults(program.input_defaults, args, len(types))
    if len(args) != len(types):
        listing = ", ".join(f"{n}: {t}" for n, t in zip(names, types)) or "none"
        raise RunError(f"the program takes {len(types)} input(s) ({listing}), got {len(args)}")
    return [check_value(f"input %{name}", value, type_text) for name, value, type_text in zip(names, args, types)]


class InputChecker:
    """``check_inputs`` compiled once for a program: one checker per input, with a fast
    path for the common case (an array for a ``Tensor``, an int for an ``int``)."""

    def __init__(self, program: Program):
        self.program = program
        types = program.input_types[1:] if program.takes_self else program.input_types
        self.count = len(types)
        self.fast = tuple(_FAST.get(t) for t in types)

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        if len(args) == self.count:
            for kind, value in zip(self.fast, args):
                if kind is None or type(value) is not kind or kind is int and not _INT64[0] <= value <= _INT64[1]:
                    break
            else:
                return list(args)
        return check_inputs(self.program, args)


_FAST: dict[str, type] = {
    "Tensor": np.ndarray,
    "int": int,
    "float": float,
    "bool": bool,
    "str": str,
}


def check_value(what: str, value: Any, type_text: str) -> Any:
    """``value`` (converted when it is a numpy scalar for a scalar type) if it fits."""
    t = type_text.strip()
    if t.endswith("?"):
        return None if value is None else check_value(what, value, t[:-1])
    if t == "Tensor" or _REFINED.match(t) or t in _DTYPES:
        return _check_tensor(what, value, t)
    if t == "int":
        return _scalar(what, value, t, (int,), int)
    if t == "float":
        return _scalar(what, value, t, (float, int), float)
    if t == "bool":
        return _scalar(what, value, t, (bool,), bool)
    if t in ("str", "Device"):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "U":
            value = str(value.item())
        if not isinstance(value, str):
            raise _mismatch(what, value, t)
        return value
    if t.endswith("[]"):
        if not isinstance(value, list):
            raise _mismatch(what, value, t)
        return [check_value(f"{what}[{i}]", v, t[:-2]) for i, v in enumerate(value)]
    if t.startswith("(") and t.endswith(")"):
        if not isinstance(value, tuple):
            raise _mismatch(what, value, t)
        elems = _split_top(t[1:-1])
        if len(elems) != len(value):
            raise RunError(f"{what} is declared {t} but got a tuple of {len(value)} element(s)")
        return tuple(check_value(f"{what}[{i}]", v, e) for i, (v, e) in enumerate(zip(value, elems)))
    if t.startswith("Dict(") and not isinstance(value, dict):
        raise _mismatch(what, value, t)
    return value


def _split_top(text: str) -> list[str]:
    """The comma-separated parts of ``text`` at bracket depth 0 (``int, Tensor[]``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([" and 1 or ch in ")]" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return [*parts, tail] if tail else parts


def _check_tensor(what: str, value: Any, t: str) -> Any:
    if not isinstance(value, np.ndarray):
        raise _mismatch(what, value, t)
    m = _REFINED.match(t)
    name = m.group(1) if m else (t if t in _DTYPES else None)
    if name in _DTYPES and value.dtype != np.dtype(_DTYPES[name]):
        raise RunError(f"{what} is declared {t} ({_DTYPES[name]}) but is a {value.dtype} tensor")
    return value


_INT64 = (-(2**63), 2**63 - 1)
# what each scalar type takes, as torch's argument checks take it (a bool is an int in Python,
# and a ``bool`` argument takes any number): the numpy kinds of a scalar or 0-d array
# (b bool, i/u integers, f floats), as the Python types below
_KINDS = {"int": "biu", "float": "biuf", "bool": "biuf"}
_PYTHON: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "bool": (int, float, type(None))}


def check_scalar(what: str, value: Any, t: str) -> Any:
    """``value`` as the Python ``int``/``float``/``bool`` a ``t`` argument is, or a RunError,
    as torch checks a call: an ``int`` takes an integer only (Python, numpy, or a 0-d integer
    array) that fits int64, never 2.7 or ``'3'``; a ``float`` a real number; a ``bool`` a
    number or None (its truth, as torch takes them); a string is only ever a ``str``."""
    if isinstance(value, (np.ndarray, np.generic)):
        if value.ndim != 0 or value.dtype.kind not in _KINDS[t]:
            raise _mismatch(what, value, t)
        value = value.item()
    elif not isinstance(value, _PYTHON[t]):
        raise _mismatch(what, value, t)
    if t == "int" and not _INT64[0] <= value <= _INT64[1]:
        raise RunError(f"{what} is declared int but got {value}, which does not fit in int64 "
                       f"(torch refuses it: value cannot be converted without overflow)")
    return {"int": int, "float": float, "bool": bool}[t](value)


def _scalar(what: str, value: Any, t: str, accepted: tuple[type, ...], convert: type) -> Any:
    del accepted, convert  # the rule is check_scalar's
    return check_scalar(what, value, t)


def _mismatch(what: str, value: Any, t: str) -> RunError:
    return RunError(f"{what} is declared {t} but got {_describe(value)}")


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if value is None:
        return "None"
    return f"a {type(value).__name__} ({value!r:.40})"




_MAX_EXAMPLE = 1 << 26  # elements of one example input planned ahead (256 MiB of float32)


def example_zeros(shapes: Sequence[Any] | None, count: int) -> tuple[np.ndarray, ...] | None:
    """Zeros of the recorded ``(dtype name, shape)`` of each input, or None unless every
    input has one with every size known."""
    if not shapes or len(shapes) != count:
        return None
    made = []
    for spec in shapes:
        if not isinstance(spec, (tuple, list)) or len(spec) != 2:
            return None
        dtype, shape = spec
        if not isinstance(shape, (tuple, list)) or not all(isinstance(d, int) and 0 <= d < _MAX_EXAMPLE for d in shape):
            return None
        if np.prod(shape, dtype=np.float64) > _MAX_EXAMPLE:  # a recorded size is a claim: bound what it costs
            return None
        try:
            made.append(np.zeros(tuple(shape), np.dtype(str(dtype))))
        except (TypeError, ValueError, MemoryError):
            return None
    return tuple(made)


__all__ = ["InputChecker", "check_inputs", "check_scalar", "check_value", "example_zeros", "with_defaults"]
