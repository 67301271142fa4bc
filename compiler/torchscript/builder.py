"""Emitting IR for the TorchScript frontend: value names, constants, typed operator calls.

``GraphBuilder`` appends nodes to its current block and names their outputs uniquely in
the graph (a Python variable's name, else a number, as PyTorch's dumps do).  An operator
call ``torch.add(x, 1)`` / ``ops.prim.NumToTensor(n)`` is matched against every
registered overload of ``aten::add`` with the rules of ``vm.ir.resolve`` (positional
arguments, keyword arguments by name, the schema's defaults for the rest, a ``...``
vararg taking the extras); the cheapest fit wins, its defaults become constants so the
node has every argument (as TorchScript's own graphs do), and the outputs get the
schema's return types with its type variables bound.
"""

from __future__ import annotations

from typing import Any

from compiler import types as T
from compiler.diagnostics import CompileError, Span
from vm.ir.graph import Block, Graph, Node, TensorLiteral, Value
from vm.ir.resolve import (
    TypeVar,
    _no_overload,
    _unknown_operator,
    default_value,
    fit,
    parse_schema_type,
)
from vm.ops import registry
from vm.ops.registry import MISSING, OpInfo

MAX_INT = 9223372036854775807


class GraphBuilder:
    """Appends nodes to ``block`` (the current insertion point) of one graph."""

    def __init__(self, graph: Graph, origin: Any = None) -> None:
        self.graph = graph
        self.origin = origin  # span -> "model.py:LINE:COL" of the user's source, or None
        self.block: Block = graph.block
        self.scope: str | None = None  # the module whose method is being inlined (``Node.scope``), when asked
        self.taken: set[str] = set()
        self._counter = 0

    def fresh(self, base: str | None = None) -> str:
        """An unused value name: ``base``, ``base.1``... or the next number."""
        if base is None or base.isdigit() or base.startswith("_") and base[1:].isdigit():
            while str(self._counter) in self.taken:
                self._counter += 1
            name = str(self._counter)
        elif base not in self.taken:
            name = base
        else:
            i = 1
            while f"{base}.{i}" in self.taken:
                i += 1
            name = f"{base}.{i}"
        self.taken.add(name)
        return name

    def param(self, block: Block, base: str | None, type_: T.Type | None) -> Value:
        return block.add_param(self.fresh(base), type_)

    def node(
        self,
        kind: str,
        inputs: list[Value],
        out_types: list[T.Type | None],
        span: Span | None,
        attrs: dict[str, Any] | None = None,
        names: list[str | None] | None = None,
    ) -> Node:
        node = Node(kind, attrs=dict(attrs or {}), span=span)
        if self.origin is not None and kind != "prim::Constant":
            node.source = self.origin(span)
        if self.scope is not None and kind != "prim::Constant":
            node.scope = self.scope
        for v in inputs:
            node.add_input(v)
        for t, name in zip(out_types, names if names is not None else [None] * len(out_types)):
            node.add_output(self.fresh(name), t)
        return self.block.append(node)

    def constant(self, value: Any, span: Span | None, type_: T.Type | None = None) -> Value:
        """A ``prim::Constant`` for a Python value (bool/int/float/str/None/lists of them)."""
        type_ = type_ or constant_type(value)
        if value is None:
            return self.node("prim::Constant", [], [type_], span).output
        payload = int(value) if isinstance(value, bool) else value
        if isinstance(value, list):
            payload = [int(v) if isinstance(v, bool) else v for v in value]
        return self.node("prim::Constant", [], [type_], span, {"value": payload}).output

    def tensor_constant(self, name: str, type_: T.Type = T.TENSOR) -> Value:
        """A ``<Tensor>`` constant at the top of the graph, bound from the weights by ``name``
        (``type_`` a class type: a frozen packed-parameters object, printed ``object(0x0)``)."""
        printed = "<Tensor>" if type_ == T.TENSOR else "object(0x0)"
        node = Node("prim::Constant", attrs={"value": TensorLiteral(None, printed=printed)})
        node.add_output(self.fresh(name), type_)
        self.graph.block.insert(0, node)
        return node.output

    # ------------------------------------------------------------------ operator calls

    def op(self, kind: str, args: list[Value], kwargs: dict[str, Value], span: Span | None) -> list[Value]:
        """The outputs of a schema-matched call of operator ``kind`` (see the module docstring)."""
        infos = registry.overloads(kind)
        if not infos:
            probe = Node(kind, span=span)
            probe.inputs = list(args)  # only read by the message builder
            raise _unknown_operator(probe)
        best: tuple[tuple[int, int], OpInfo, list[Any], dict[str, T.Type]] | None = None
        for order, info in enumerate(infos):
            bound = _bind(info, args, kwargs)
            if bound is None:
                continue
            env: dict[str, T.Type] = {}
            cost = 0
            for arg, given in zip(info.schema.arguments, bound):
                if isinstance(given, Value):
                    c = fit(parse_schema_type(arg.type), given.type, env)
                    if c is None:
                        break
                    cost += c
            else:
                for given in bound[len(info.schema.arguments) :]:
                    cost += 0 if isinstance(given, Value) else 1
                if best is None or (cost, order) < best[0]:
                    best = ((cost, order), info, bound, env)
        if best is None:
            probe = Node(kind, span=span)
            probe.inputs = list(args) + list(kwargs.values())
            raise _no_overload(probe, infos)
        _, info, bound, env = best
        inputs: list[Value] = []
        for i, given in enumerate(bound):
            if isinstance(given, Value):
                inputs.append(given)
            else:
                arg = info.schema.arguments[i]
                value = default_value(arg.type, arg.default)
                inputs.append(self.constant(value, span, _default_type(arg.type, value)))
        out_types: list[T.Type | None] = [substitute(parse_schema_type(r.type), env) for r in info.schema.returns]
        return self.node(kind, inputs, out_types, span).outputs


def _bind(info: OpInfo, args: list[Value], kwargs: dict[str, Value]) -> list[Any] | None:
    """Schema arguments in order (a Value, or MISSING for a default), then varargs; None
    when the call does not fit the schema's arity or names."""
    schema = info.schema
    params = schema.arguments
    bound: list[Any] = [None] * len(params)
    positional = [i for i, p in enumerate(params) if not p.kwarg_only]
    if len(args) > len(positional) and not schema.vararg:
        return None
    for i, value in zip(positional, args):
        bound[i] = value
    extra = list(args[len(positional) :])
    for name, value in kwargs.items():
        index = next((i for i, p in enumerate(params) if p.name == name), None)
        if index is None or bound[index] is not None:
            return None
        bound[index] = value
    for i, p in enumerate(params):
        if bound[i] is None:
            if p.default is MISSING:
                return None
            bound[i] = MISSING
    return bound + extra


def _default_type(type_text: str, value: Any) -> T.Type:
    formal = parse_schema_type(type_text)
    if value is None:
        return T.NONE
    if isinstance(formal, T.OptionalType):
        formal = formal.elem
    if isinstance(formal, T.ListType):
        if not isinstance(formal.elem, TypeVar):
            return T.ListType(formal.elem)
        actual = constant_type(value)
        assert isinstance(actual, T.ListType)  # the default of a list argument is a list
        return T.ListType(actual.elem)
    if formal in (T.SCALAR, T.ANY) or isinstance(formal, TypeVar):
        return constant_type(value)
    if formal in (T.SCALAR_TYPE, T.LAYOUT, T.MEMORY_FORMAT):
        return T.INT
    return formal


def constant_type(value: Any) -> T.Type:
    if value is None:
        return T.NONE
    if isinstance(value, bool):
        return T.BOOL
    if isinstance(value, int):
        return T.INT
    if isinstance(value, float):
        return T.FLOAT
    if isinstance(value, str):
        return T.STR
    if isinstance(value, complex):
        return T.NamedType("complex")
    if isinstance(value, list):
        elems = {constant_type(v) for v in value}
        return T.ListType(elems.pop() if len(elems) == 1 else T.INT if not value else T.ANY)
    raise TypeError(f"no constant type for {type(value).__name__}")


def substitute(t: T.Type, env: dict[str, T.Type]) -> T.Type:
    """``t`` with its type variables replaced by their bindings (Any when unbound)."""
    if isinstance(t, TypeVar):
        return env.get(t.name, T.ANY)
    if isinstance(t, T.OptionalType):
        return T.OptionalType(substitute(t.elem, env))
    if isinstance(t, T.ListType):
        return T.ListType(substitute(t.elem, env))
    if isinstance(t, T.TupleType):
        return T.TupleType(tuple(substitute(e, env) for e in t.elems), t.names)
    if isinstance(t, T.DictType):
        return T.DictType(substitute(t.key, env), substitute(t.value, env))
    if isinstance(t, T.FutureType):
        return T.FutureType(substitute(t.elem, env))
    return t


def unify(a: T.Type | None, b: T.Type | None) -> T.Type | None:
    """The type of a value that is an ``a`` on one path and a ``b`` on another, or None."""
    a = T.TENSOR if a is None else a
    b = T.TENSOR if b is None else b
    if a == b:
        return a
    if isinstance(a, T.TensorType) and isinstance(b, T.TensorType):
        return T.TENSOR
    if a == T.NONE:
        return b if isinstance(b, T.OptionalType) else T.OptionalType(b)
    if b == T.NONE:
        return a if isinstance(a, T.OptionalType) else T.OptionalType(a)
    if isinstance(a, T.OptionalType) and unify(a.elem, b) == a.elem:
        return a
    if isinstance(b, T.OptionalType) and unify(b.elem, a) == b.elem:
        return b
    if {a, b} <= {T.SCALAR, T.INT, T.FLOAT}:
        return T.SCALAR  # a number that is an int or a float depending on the path
    if isinstance(a, T.ListType) and isinstance(b, T.ListType):
        elem = unify(a.elem, b.elem)
        return None if elem is None else T.ListType(elem)
    if isinstance(a, T.TupleType) and isinstance(b, T.TupleType) and len(a.elems) == len(b.elems):
        elems = [unify(x, y) for x, y in zip(a.elems, b.elems)]
        known = [e for e in elems if e is not None]
        return T.TupleType(tuple(known), a.names) if len(known) == len(elems) else None
    return None


def type_error(message: str, span: Span | None) -> CompileError:
    return CompileError(message, span)
