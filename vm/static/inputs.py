"""The static runtime's entry check: a generated ``enter(*args) -> key`` that refuses an
argument of the wrong type (a ``RunError`` naming the input) and returns the plan key,
the shapes and dtypes of the tensor inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from compiler.ir import Value
from vm import types as T
from vm.errors import RunError


def input_checker(inputs: list[Value]) -> Any:
    """A generated ``enter(*args) -> key``: type checks, then the tensor shapes and dtypes."""
    lines: list[str] = []
    key: list[str] = []
    env: dict[str, Any] = {
        "_nd": np.ndarray,
        "_bad": lambda i, x: _bad_input(inputs[i], x),
    }
    for i, v in enumerate(inputs):
        t = v.type
        if t is None or isinstance(t, T.TensorType):
            lines.append(
                f"    if type(a{i}) is not _nd and not isinstance(a{i}, _nd): _bad({i}, a{i})"
            )
            key.append(f"a{i}.shape, a{i}.dtype")
        else:
            env[f"_c{i}"] = _type_check(t)
            lines.append(f"    if not _c{i}(a{i}): _bad({i}, a{i})")
    params = ", ".join(f"a{i}" for i in range(len(inputs)))
    src = (
        f"def enter({params}):\n"
        + "\n".join(lines)
        + f"\n    return ({', '.join(key)}{',' if key else ''})\n"
    )
    exec(compile(src, "<static:inputs>", "exec"), env)
    enter = env["enter"]
    enter.inputs = inputs
    return enter


def _type_check(t: T.Type) -> Any:
    if t is None or isinstance(t, T.TensorType):
        return lambda x: isinstance(x, np.ndarray)
    if t == T.INT:
        return lambda x: (
            isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
        )
    if t == T.FLOAT:
        return lambda x: (
            isinstance(x, (int, float, np.integer, np.floating))
            and not isinstance(x, (bool, np.bool_))
        )
    if t == T.BOOL:
        return lambda x: isinstance(x, (bool, np.bool_))
    if t == T.STR:
        return lambda x: isinstance(x, str)
    if isinstance(t, T.OptionalType):
        inner = _type_check(t.elem)
        return lambda x: x is None or inner(x)
    if isinstance(t, T.ListType):
        inner = _type_check(t.elem)
        return lambda x: isinstance(x, list) and all(inner(e) for e in x)
    if isinstance(t, T.TupleType):
        parts = [_type_check(e) for e in t.elems]
        return lambda x: (
            isinstance(x, tuple)
            and len(x) == len(parts)
            and all(p(e) for p, e in zip(parts, x))
        )
    if isinstance(t, T.DictType):
        return lambda x: isinstance(x, dict)
    return lambda x: True


def _bad_input(decl: Value, value: Any) -> None:
    raise RunError(
        f"input %{decl.name} expects {decl.type or 'Tensor'}, {_describe(value)}"
    )


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"got a Tensor {value.dtype}{list(value.shape)}"
    return f"got {type(value).__name__} {value!r:.60}"
