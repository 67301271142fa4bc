"""The operator registry: schemas in PyTorch's notation, kernels, out variants, op facts.

Every operator is registered once with its schema text::

    @kernel("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor")
    def add_tensor(self, other, alpha):
        ...

    @add_tensor.out          # the out variant writes into a given buffer and returns it
    def add_tensor_out(out, self, other, alpha):
        ...

Calling convention (shared by the interpreter and the static runtime): a kernel takes
every schema argument positionally, in schema order, defaults already filled in by the
compiler; it returns one value, or a tuple when the schema has several returns.  Tensors
are numpy arrays (0-dim tensors are 0-dim arrays, never numpy scalars), ``int``/``float``/
``bool`` are Python scalars, ``ScalarType`` is PyTorch's integer code (6 = float32),
``Device`` a string such as ``"cpu"``, lists are Python lists and tuples Python tuples.

Op facts that passes read (DCE, CSE, fusion, the memory planner) come from the schema
and the registration: a ``(a!)`` annotation marks a mutated argument, ``(a)`` a result
that may alias an argument; ``pure=False`` marks side effects (print, raise, random).
``vm.ops.facts`` puts them in one table with the facts of node kinds no schema states.

The table is full whenever this module can be used: it lives inside ``vm.ops``, and
Python runs a package's ``__init__`` (which imports every family, ``vm.ops.FAMILIES``)
before any module of it, so the registry never imports the kernels itself (that import
would be a cycle: each family imports the registry to register).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
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


@attrs.frozen
class OpInfo:
    schema: Schema
    kernel: Callable[..., Any]
    out: Callable[..., Any] | None = None  # out(out_buffer, *args) -> out_buffer
    pure: bool = True  # no side effect beyond what the schema's (a!) annotations say
    elementwise: bool = False  # a pointwise map the fusion pass may group

    @property
    def name(self) -> str:
        return self.schema.qualified


_REGISTRY: dict[str, OpInfo] = {}
_BY_NAME: dict[str, list[str]] = {}


class _Registered:
    """What ``@kernel`` returns: the function, plus ``.out`` to register an out variant."""

    def __init__(self, fn: Callable[..., Any], qualified: str):
        self._fn = fn
        self.qualified = qualified
        self.__wrapped__ = fn
        self.__name__ = getattr(fn, "__name__", qualified)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)

    def out(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        info = _REGISTRY[self.qualified]
        _REGISTRY[self.qualified] = attrs.evolve(info, out=fn)
        return fn


def register_op(
    schema: str,
    fn: Callable[..., Any],
    *,
    out: Callable[..., Any] | None = None,
    pure: bool = True,
    elementwise: bool = False,
    replace: bool = False,
) -> OpInfo:
    """Register an operator from its schema text and a kernel; the public custom-op API."""
    parsed = parse_schema(schema)
    if parsed.qualified in _REGISTRY and not replace:
        raise ValueError(f"operator {parsed.qualified} is already registered")
    info = OpInfo(parsed, fn, out, pure, elementwise)
    _REGISTRY[parsed.qualified] = info
    names = _BY_NAME.setdefault(parsed.name, [])
    if parsed.qualified not in names:
        names.append(parsed.qualified)
    return info


def kernel(schema: str, *, pure: bool = True, elementwise: bool = False) -> Callable[[Callable[..., Any]], _Registered]:
    """Decorator form of ``register_op``."""

    def wrap(fn: Callable[..., Any]) -> _Registered:
        info = register_op(schema, fn, pure=pure, elementwise=elementwise)
        return _Registered(fn, info.name)

    return wrap


def lookup(qualified: str) -> OpInfo:
    """The operator registered under ``aten::add.Tensor``; KeyError if none."""
    return _REGISTRY[qualified]


def overloads(name: str) -> list[OpInfo]:
    """Every overload registered for ``aten::add``, in registration order."""
    return [_REGISTRY[q] for q in _BY_NAME.get(name, [])]


def all_ops() -> list[OpInfo]:
    return list(_REGISTRY.values())


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


# ---------------------------------------------------------------------------------------
# Binding: what the compiler resolved, made callable.  The compiler (compiler/resolve.py)
# turns a node into an OpRef using the IR's types; the VM binds an OpRef to a callable at
# load time, without the compiler (an .irbc file stores OpRefs).


@attrs.frozen
class OpRef:
    """A resolved operator as the bytecode stores it.

    ``name`` is a registered overload (``aten::add.Tensor``) or a prim kind with a
    factory (``prim::GetAttr``).  The bound callable takes the node's ``n_inputs`` inputs;
    ``defaults`` are the values of the schema's trailing arguments the node left out,
    appended after them.  ``attrs`` are the node attributes a prim factory needs
    (``(("name", "weight"),)`` for a GetAttr), as sorted (key, value) pairs.
    """

    name: str
    n_inputs: int
    n_outputs: int
    defaults: tuple[Any, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()


Factory = Callable[[dict[str, Any], int, int], Callable[..., Any]]
_FACTORIES: dict[str, Factory] = {}


def prim_factory(kind: str) -> Callable[[Factory], Factory]:
    """Register a factory for a node kind whose behaviour depends on its attributes or its
    number of inputs/outputs (``prim::GetAttr[name=...]``, ``prim::ListUnpack``...).

    ``factory(attrs, n_inputs, n_outputs)`` returns the callable the VM will run.
    """

    def wrap(factory: Factory) -> Factory:
        _FACTORIES[kind] = factory
        return factory

    return wrap


def has_factory(kind: str) -> bool:
    return kind in _FACTORIES


def bind(ref: OpRef) -> Callable[..., Any]:
    """The callable for ``ref``: ``f(*inputs)`` returns the value (or a tuple of values)."""
    if ref.name in _FACTORIES:
        return _FACTORIES[ref.name](dict(ref.attrs), ref.n_inputs, ref.n_outputs)
    fn = _REGISTRY[ref.name].kernel
    if not ref.defaults:
        return fn
    defaults = ref.defaults
    return lambda *args: fn(*args, *defaults)


def bind_out(ref: OpRef) -> Callable[..., Any] | None:
    """The out variant for ``ref``, ``f(out, *inputs)``, or None when it has none."""
    info = _REGISTRY.get(ref.name)
    if info is None or info.out is None:
        return None
    out, defaults = info.out, ref.defaults
    if not defaults:
        return out
    return lambda buf, *args: out(buf, *args, *defaults)
