"""Overload resolution and constant values: the IR's bridge to the operator library.

A node in the IR names an operator without its overload (``aten::add``); which kernel
runs depends on the types of the values it consumes.  TorchScript chose that overload
when it compiled the Python source, but the printed graph only keeps the types, so we
choose again here, once, at compile time, and the VMs bind the result (an ``OpRef``)
without ever looking at types again.

The choice works on schema types, parsed from the registry's schema text into
``vm.core.types`` objects plus ``TypeVar`` for type variables (``t``, ``tVal``).  Each
registered overload of the node's kind is scored against the node's input types: every
argument either fits, at a cost, or rules the overload out.  An exact fit costs nothing;
a binding of a type variable, an ``Optional`` accepting its element, a ``Scalar``
accepting an ``int`` or a fixed-size list (``int[2]``) accepting a single ``int`` cost a
little more, and ``Any`` most.  The cheapest overload wins, which is TorchScript's "most
specific" choice: two ints pick ``add.int`` (exact) over ``add(Scalar, Scalar)``.  When
the inputs alone tie, the node's output types decide, then registration order.  Missing
trailing arguments must have defaults; their values travel in ``OpRef.defaults``.

Node kinds whose behaviour depends on attributes or arity (``prim::GetAttr``,
``prim::ListUnpack``...) have a ``prim_factory`` instead of a schema; they resolve to an
``OpRef`` that carries the node's attributes.

``constant_value`` gives the run-time value of a ``prim::Constant``.  A ``<Tensor>``
constant prints no values: it becomes an ``UnboundTensor`` marker that the runtimes
replace by a weight looked up under the constant's name (see ``UnboundTensor.keys``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import attrs
import numpy as np

from vm.binding.unbound import UnboundTensor
from vm.core import types as T
from vm.core.errors import CompileError
from vm.core.schema_types import FixedList, TypeVar, parse_schema_type
from vm.core.types import NUMPY_DTYPES
from vm.ir.graph import Graph, Module, Node, TensorLiteral, Value
from vm.ops import registry
from vm.ops.facts import CONTROL_KINDS  # the emitter and the runtimes handle these
from vm.ops.registry import MISSING, OpInfo, OpRef

# ---------------------------------------------------------------------------------------
# Fitting one actual type to one schema type.  Lower cost = more specific; None = no fit.

_EXACT, _VAR, _OPTIONAL, _SCALAR, _WIDEN, _BOOL_AS_NUMBER, _ANY = 0, 1, 1, 2, 3, 5, 6
_INT_LIKE = (T.INT, T.SCALAR_TYPE, T.LAYOUT, T.MEMORY_FORMAT)
_NUMBERS = (T.INT, T.FLOAT, T.NamedType("complex"))
_ANY_ENUM = T.NamedType("AnyEnumType")


def normalize(t: T.Type | None) -> T.Type:
    """The type resolution reasons about: an untyped value is a Tensor, refinements drop."""
    if t is None or isinstance(t, T.TensorType):
        return T.TENSOR
    if t == T.NUMBER:
        return T.SCALAR
    return t


def fit(formal: T.Type, actual: T.Type | None, env: dict[str, T.Type]) -> int | None:
    """The cost of passing a value of type ``actual`` where the schema says ``formal``.

    ``env`` holds the type-variable bindings made so far in this call and is extended.
    """
    actual = normalize(actual)
    if formal == T.ANY:
        return _ANY
    if isinstance(formal, TypeVar):
        bound = env.get(formal.name)
        if bound is None:
            env[formal.name] = actual
            return _VAR
        cost = fit(bound, actual, {})
        if cost is None and fit(actual, bound, {}) is not None:
            env[formal.name] = actual  # widen the binding: t = Tensor? after a Tensor
            return _VAR
        return None if cost is None else _VAR + cost
    if isinstance(formal, T.OptionalType):
        if actual == T.NONE:
            return _OPTIONAL
        inner = actual.elem if isinstance(actual, T.OptionalType) else actual
        cost = fit(formal.elem, inner, env)
        return None if cost is None else cost + (0 if inner is not actual else _OPTIONAL)
    if isinstance(actual, T.OptionalType) or actual == T.ANY:
        return None
    if isinstance(formal, T.UnionType):
        costs = [c for c in (fit(m, actual, dict(env)) for m in formal.elems) if c is not None]
        return min(costs) if costs else None
    if isinstance(formal, T.ListType):
        return _fit_list(formal, actual, env)
    if isinstance(formal, T.TupleType):
        if not isinstance(actual, T.TupleType) or len(actual.elems) != len(formal.elems):
            return None
        return _fit_all(formal.elems, actual.elems, env)
    if isinstance(formal, T.DictType):
        if not isinstance(actual, T.DictType):
            return None
        return _fit_all((formal.key, formal.value), (actual.key, actual.value), env)
    if isinstance(formal, T.FutureType):
        return fit(formal.elem, actual.elem, env) if isinstance(actual, T.FutureType) else None
    return _fit_leaf(formal, actual)


def _fit_all(formals: Iterable[T.Type], actuals: Iterable[T.Type], env: dict[str, T.Type]) -> int | None:
    total = 0
    for f, a in zip(formals, actuals):
        cost = fit(f, a, env)
        if cost is None:
            return None
        total += cost
    return total


def _fit_list(formal: T.ListType, actual: T.Type, env: dict[str, T.Type]) -> int | None:
    if isinstance(actual, T.ListType):
        return fit(formal.elem, actual.elem, env)
    if isinstance(formal, FixedList) and formal.elem == T.INT and actual == T.INT:
        return _WIDEN  # int[2] stride=1 accepts a single int, as PyTorch does
    if isinstance(actual, T.TupleType):
        cost = _fit_all([formal.elem] * len(actual.elems), actual.elems, env)
        return None if cost is None else cost + _WIDEN
    return None


def _fit_leaf(formal: T.Type, actual: T.Type) -> int | None:
    if formal == actual:
        return _EXACT
    if formal == T.SCALAR:
        if actual in _NUMBERS:
            return _SCALAR
        return _BOOL_AS_NUMBER if actual == T.BOOL else None
    if formal in _INT_LIKE and actual in _INT_LIKE:
        return _EXACT
    if formal == T.DEVICE and actual == T.STR:
        return _WIDEN
    if formal == _ANY_ENUM and isinstance(actual, T.EnumType):
        return _EXACT
    return None


# ---------------------------------------------------------------------------------------
# Choosing an overload


@attrs.frozen
class Candidate:
    info: OpInfo
    cost: tuple[int, int, int]  # (inputs, outputs, registration order)
    defaults: tuple[Any, ...]


def match(info: OpInfo, node: Node, order: int = 0) -> Candidate | None:
    """How well ``info``'s schema fits ``node``'s values, or None when it does not fit."""
    schema = info.schema
    args = schema.arguments
    inputs = node.inputs
    if len(inputs) > len(args) and not schema.vararg:
        return None
    if len(node.outputs) != len(schema.returns):
        return None
    env: dict[str, T.Type] = {}
    total = 0
    for arg, value in zip(args, inputs):
        cost = fit(parse_schema_type(arg.type), value.type, env)
        if cost is None:
            return None
        total += cost
    missing = args[len(inputs) :]
    if any(a.default is MISSING for a in missing):
        return None
    out_cost = 0
    for ret, value in zip(schema.returns, node.outputs):
        cost = fit(parse_schema_type(ret.type), value.type, dict(env))
        out_cost += 10 if cost is None else cost
    defaults = tuple(default_value(a.type, a.default) for a in missing)
    return Candidate(info, (total, out_cost, order), defaults)


def resolve(node: Node) -> OpRef:
    """The operator ``node`` runs: a prim factory, or the best-fitting registered overload.

    Raises CompileError at ``node.span`` when the operator is unknown or no overload fits.
    """
    n_in, n_out = len(node.inputs), len(node.outputs)
    if registry.has_factory(node.kind):
        return OpRef(node.kind, n_in, n_out, attrs=factory_attrs(node))
    infos = registry.overloads(node.kind)
    if not infos:
        raise _unknown_operator(node)
    # the choice depends on the kind, the overloads and the types only: made once per signature
    key = (node.kind, len(infos), tuple([v.type for v in node.inputs]), tuple([v.type for v in node.outputs]))
    ref = _RESOLVED.get(key)
    if ref is None:
        candidates = [c for i, info in enumerate(infos) if (c := match(info, node, i)) is not None]
        if not candidates:
            raise _no_overload(node, infos)
        best = min(candidates, key=lambda c: c.cost)
        ref = _RESOLVED[key] = OpRef(best.info.name, n_in, n_out, defaults=best.defaults)
    return ref


_RESOLVED: dict[tuple[object, ...], OpRef] = {}


def factory_attrs(node: Node) -> tuple[tuple[str, Any], ...]:
    """The node's attributes as sorted, hashable (key, value) pairs (subgraphs left out)."""
    return tuple(sorted((k, _frozen(v)) for k, v in node.attrs.items() if not isinstance(v, Graph)))


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def resolve_all(graph: Graph | Module) -> tuple[dict[Node, OpRef], list[CompileError]]:
    """Resolve every node of ``graph`` (every graph of a module), nested blocks included.

    Returns the resolved nodes and ALL the errors at once, so a user sees every
    unsupported operator in one compile; constants are checked with ``constant_value``.
    """
    graphs = [graph] if isinstance(graph, Graph) else [graph.main, *graph.functions.values()]
    resolved: dict[Node, OpRef] = {}
    errors: list[CompileError] = []
    for g in graphs:
        for node in g.walk():
            try:
                if node.kind == "prim::Constant":
                    constant_value(node)
                elif node.kind not in CONTROL_KINDS:
                    resolved[node] = resolve(node)
                elif node.kind == "prim::FusionGroup" and isinstance(node.attrs.get("Subgraph"), Graph):
                    sub, sub_errors = resolve_all(node.subgraph)
                    resolved.update(sub)
                    errors.extend(sub_errors)
            except CompileError as err:
                errors.append(err)
    return resolved, errors


def check_all(graph: Graph | Module) -> None:
    """Raise one CompileError listing every unresolvable node of ``graph``, if any."""
    _, errors = resolve_all(graph)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        text = f"{len(errors)} nodes cannot be compiled:\n" + "\n".join(str(e) for e in errors)
        err = CompileError(text, None)
        err.errors = errors
        raise err


# ---------------------------------------------------------------------------------------
# Error messages


def _describe(node: Node) -> str:
    args = ", ".join(str(normalize(v.type)) for v in node.inputs)
    return f"{node.kind}({args})"


_WITHOUT_BODY = {
    "prim::Enter": "a `with` block: prim::Enter calls the object's __enter__",
    "prim::Exit": "a `with` block: prim::Exit calls the object's __exit__",
}


def _unknown_operator(node: Node) -> CompileError:
    if node.kind in _WITHOUT_BODY:
        return CompileError(
            f"{_WITHOUT_BODY[node.kind]}, whose body a printed graph does not hold; run the module's "
            "torch.jit.save archive (.pt), whose source has it", node.span)
    by_base: dict[str, list[str]] = {}
    for info in registry.all_ops():
        by_base.setdefault(info.schema.name.rpartition("::")[2], []).append(info.schema.name)
    base = node.kind.rpartition("::")[2]
    close = [n for b in difflib.get_close_matches(base, list(by_base), n=5, cutoff=0.6) for n in by_base[b]]
    close = sorted(dict.fromkeys(close), key=lambda n: n.partition("::")[0] != node.kind.partition("::")[0])[:5]
    hint = ("; did you mean " + ", ".join(close) + "?") if close else ""
    return CompileError(f"unknown operator {_describe(node)}{hint}", node.span)


def _no_overload(node: Node, infos: list[OpInfo]) -> CompileError:
    def distance(info: OpInfo) -> tuple[int, int]:
        schema = info.schema
        env: dict[str, T.Type] = {}
        misfits = sum(
            fit(parse_schema_type(a.type), v.type, env) is None for a, v in zip(schema.arguments, node.inputs)
        )
        return abs(len(schema.arguments) - len(node.inputs)), misfits

    closest = sorted(infos, key=distance)[:5]
    listing = "".join(f"\n    {info.schema}" for info in closest)
    return CompileError(
        f"no overload of {node.kind} accepts ({', '.join(str(normalize(v.type)) for v in node.inputs)})"
        f" -> {len(node.outputs)} output(s); closest schemas:{listing}",
        node.span,
    )


# ---------------------------------------------------------------------------------------
# Default values written symbolically in native_functions.yaml

_SYMBOLIC_DEFAULTS: dict[str, Any] = {
    "contiguous_format": 0,
    "preserve_format": 1,
    "channels_last": 2,
    "channels_last_3d": 3,
    "strided": 0,
    "Mean": 1,
    "Sum": 2,
    "long": 4,
    "float": 6,
    "double": 7,
    "int": 3,
    "bool": 11,
    "inf": float("inf"),
    "-inf": float("-inf"),
    "nan": float("nan"),
}


def default_value(type_text: str, default: Any) -> Any:
    """The run-time value of a schema default: ``Mean`` -> 1, ``int[2] x=1`` -> [1, 1]."""
    if isinstance(default, str) and default in _SYMBOLIC_DEFAULTS and parse_schema_type(type_text) != T.STR:
        default = _SYMBOLIC_DEFAULTS[default]
    formal = parse_schema_type(type_text)
    if isinstance(formal, T.OptionalType):
        formal = formal.elem
    if isinstance(formal, FixedList) and isinstance(default, int) and not isinstance(default, bool):
        return [default] * formal.size
    if formal == T.FLOAT and isinstance(default, int) and not isinstance(default, bool):
        return float(default)
    return default


# ---------------------------------------------------------------------------------------
# Constants



def constant_value(node: Node) -> Any:
    """The run-time value of a ``prim::Constant`` (see the runtime value conventions).

    ``bool = prim::Constant[value=1]()`` is True; a tensor literal is a numpy array with the
    dtype of the literal or of the output type; ``<Tensor>`` is an ``UnboundTensor``; a
    function reference ``prim::Constant[name="f"]()`` gives the name ``"f"``.
    """
    out = node.outputs[0] if node.outputs else Value("?")
    if "value" not in node.attrs:
        if "name" in node.attrs:
            return node.attrs["name"]
        return None
    try:
        return _convert(node.attrs["value"], out.type, out.name)
    except (TypeError, ValueError) as err:
        raise CompileError(f"bad constant for type {out.type}: {err}", node.span) from None


def _convert(value: Any, type_: T.Type | None, name: str) -> Any:
    if isinstance(value, TensorLiteral):
        return _tensor_literal(value, type_, name)
    if type_ is None or isinstance(type_, T.TensorType):
        if isinstance(value, (int, float, bool)) and isinstance(type_, T.TensorType):
            return np.array(value, dtype=_literal_dtype(None, type_, [value]))
        return value if type_ is None else np.asarray(value)
    if isinstance(type_, T.OptionalType):
        return None if value is None else _convert(value, type_.elem, name)
    if type_ == T.BOOL:
        return bool(value)
    if type_ == T.INT:
        return int(value)
    if type_ == T.FLOAT:
        return float(value)
    if type_ in (T.STR, T.DEVICE):
        return str(value)
    if isinstance(type_, T.ListType):
        return [_convert(v, type_.elem, name) for v in value]
    if isinstance(type_, T.TupleType) and isinstance(value, (list, tuple)):
        return tuple(_convert(v, t, name) for v, t in zip(value, type_.elems))
    return value


def _literal_dtype(lit: TensorLiteral | None, type_: T.Type | None, values: list[Any]) -> str:
    name = lit.dtype if lit is not None else None
    if name is None and isinstance(type_, T.TensorType):
        name = type_.dtype
    if name is not None:
        return NUMPY_DTYPES.get(name, "float32")
    if values and all(isinstance(v, bool) for v in values):
        return "bool"
    if values and all(isinstance(v, int) for v in values):
        return "int64"
    return "float32"


def _tensor_literal(lit: TensorLiteral, type_: T.Type | None, name: str) -> Any:
    if lit.values is None:
        return UnboundTensor(name)
    values = list(lit.values)
    shape = lit.shape
    if shape is None and isinstance(type_, T.TensorType) and type_.sizes is not None and None not in type_.sizes:
        shape = tuple(type_.sizes)
    if shape is None:
        shape = () if len(values) == 1 else (len(values),)
    array = np.array(values, dtype=_literal_dtype(lit, type_, values))
    return array.reshape(shape)
