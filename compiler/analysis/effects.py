"""Op facts the passes ask: is a node pure, what does it mutate, what may alias what.

The facts come from one place, the operator registry (``vm.ops.registry``): a schema's
``(a!)`` annotations say which arguments an operator writes, a ``(a)`` on a return says
the result may alias an argument, ``OpInfo.pure`` is False for operators with effects
beyond those annotations (print, raise, random numbers), ``OpInfo.elementwise`` marks the
pointwise maps fusion may group.  Node kinds without a schema (prim:: nodes handled by a
factory or by the emitter) get their facts from the small tables below.  Anything we know
nothing about is treated as impure: a pass may then neither remove nor move it.

Aliasing is answered with *alias classes*: a union-find over the values of a graph that
puts together every pair of values that may share memory (a view and its base, a list and
the tensors put into it, an If output and the branch values it returns, a loop-carried
value in all its forms).  A write to any member of a class is a write to the class.
This is a coarse stand-in for TorchScript's AliasDb, sound for what the passes need.
"""

from __future__ import annotations

from functools import lru_cache

from compiler import types as T
from compiler.ir import Graph, Node, Value
from vm.ops import registry
from vm.ops.registry import OpInfo

# prim:: kinds (and a few aten ones without interesting schemas) with no side effect.
PURE_KINDS = frozenset(
    {
        "prim::Constant",
        "prim::ListConstruct",
        "prim::ListUnpack",
        "prim::TupleConstruct",
        "prim::TupleUnpack",
        "prim::TupleIndex",
        "prim::DictConstruct",
        "prim::GetAttr",
        "prim::NumToTensor",
        "prim::dtype",
        "prim::device",
        "prim::unchecked_cast",
        "prim::Uninitialized",
        "prim::FusionGroup",
        "prim::If",
        "prim::Loop",
        "aten::__is__",
        "aten::__isnot__",
    }
)
# Kinds that always have an effect, whatever the registry says.
EFFECT_KINDS = frozenset(
    {
        "prim::RaiseException",
        "prim::Print",
        "aten::warn",
        "prim::SetAttr",
        "prim::Drop",
        "prim::CallFunction",
        "prim::CallMethod",
        "prim::Enter",
        "prim::Exit",
        "prim::AddStatValue",
        "prim::TimePoint",
    }
)
# Kinds whose outputs are (or contain) their inputs rather than fresh values.
ALIASING_KINDS = frozenset(
    {
        "prim::ListConstruct",
        "prim::ListUnpack",
        "prim::TupleConstruct",
        "prim::TupleUnpack",
        "prim::TupleIndex",
        "prim::DictConstruct",
        "prim::GetAttr",
        "prim::unchecked_cast",
        "prim::CallFunction",
        "prim::CallMethod",
    }
)


_INFO_CACHE: dict[tuple[object, ...], OpInfo | None] = {}


def op_info(node: Node) -> OpInfo | None:
    """The registered overload ``node`` runs, or None (control flow, prims, unknown ops)."""
    if node.kind in PURE_KINDS or node.kind in EFFECT_KINDS:
        return None
    key = (node.kind, tuple(v.type for v in node.inputs), tuple(v.type for v in node.outputs))
    if key not in _INFO_CACHE:
        _INFO_CACHE[key] = _resolve_info(node)
    return _INFO_CACHE[key]


def _resolve_info(node: Node) -> OpInfo | None:
    try:
        from compiler.resolve import resolve

        ref = resolve(node)
    except Exception:  # unresolvable here: the caller falls back to the overload set
        return None
    try:
        return registry.lookup(ref.name)
    except KeyError:
        return None  # a prim factory


@lru_cache(maxsize=None)
def _kind_facts(kind: str) -> tuple[bool, bool, bool, bool]:
    """(known, pure, mutates, aliases) over every overload of ``kind``, conservatively."""
    infos = registry.overloads(kind)
    if not infos:
        return (registry.has_factory(kind), True, kind.endswith("_"), True)
    return (
        True,
        all(i.pure for i in infos),
        any(i.schema.mutates for i in infos),
        any(i.schema.returns_alias for i in infos),
    )


def has_side_effects(node: Node) -> bool:
    """True when running ``node`` matters beyond its outputs and its ``(a!)`` writes:
    raise, print, calls, random numbers, unknown operators."""
    kind = node.kind
    if kind in EFFECT_KINDS:
        return True
    if kind in PURE_KINDS:
        return False
    info = op_info(node)
    if info is not None:
        return not info.pure
    known, pure, _, _ = _kind_facts(kind)
    if not known:
        return True
    if registry.has_factory(kind) and not registry.overloads(kind):
        return False  # a prim factory: reads its inputs and attributes only
    return not pure


def mutated_inputs(node: Node) -> list[int]:
    """Indices of the inputs ``node`` writes to (from ``(a!)`` schema annotations)."""
    info = op_info(node)
    if info is not None:
        args = info.schema.arguments
        return [i for i, arg in enumerate(args[: len(node.inputs)]) if arg.mutated]
    if node.kind in ("prim::CallFunction", "prim::CallMethod"):  # a callee may write its arguments
        return [i for i, v in enumerate(node.inputs) if is_mutable_type(v.type)]
    if node.kind in PURE_KINDS or node.kind in EFFECT_KINDS:
        return []
    known, _, mutates, _ = _kind_facts(node.kind)
    if mutates or not known:
        return [i for i, v in enumerate(node.inputs) if is_mutable_type(v.type)]
    return []


def returns_alias(node: Node) -> bool:
    """True when an output of ``node`` may share memory with (or contain) an input."""
    if node.kind in ALIASING_KINDS:
        return True
    if node.kind in PURE_KINDS or node.kind in EFFECT_KINDS:
        return False
    info = op_info(node)
    if info is not None:
        return info.schema.returns_alias or info.schema.mutates
    known, _, mutates, aliases = _kind_facts(node.kind)
    return aliases or mutates or not known


def is_pure(node: Node) -> bool:
    """No side effect and no write: the node may be removed, merged, or moved freely
    (its blocks, if any, are not inspected: If/Loop purity is the caller's business)."""
    return not has_side_effects(node) and not mutated_inputs(node)


def is_mutable_type(t: T.Type | None) -> bool:
    """Can a value of type ``t`` be written in place (or hold something that can)?"""
    if t is None or isinstance(t, (T.TensorType, T.ListType, T.DictType, T.ClassType, T.UnionType)):
        return True
    if isinstance(t, (T.OptionalType, T.FutureType)):
        return is_mutable_type(t.elem)
    if isinstance(t, T.TupleType):
        return any(is_mutable_type(e) for e in t.elems)
    return t == T.ANY


class AliasClasses:
    """Union-find over the values of a graph: ``same(a, b)`` when they may share memory."""

    def __init__(self, graph: Graph) -> None:
        self.parent: dict[Value, Value] = {}
        for node in graph.walk():
            self._add_node(node)

    def find(self, v: Value) -> Value:
        root = v
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        while v is not root:  # path compression
            v, self.parent[v] = self.parent[v], root
        return root

    def union(self, a: Value, b: Value) -> None:
        if is_mutable_type(a.type) and is_mutable_type(b.type):
            ra, rb = self.find(a), self.find(b)
            if ra is not rb:
                self.parent[ra] = rb

    def same(self, a: Value, b: Value) -> bool:
        return self.find(a) is self.find(b)

    def _add_node(self, node: Node) -> None:
        if node.kind == "prim::If":
            for block in node.blocks:
                for out, ret in zip(node.outputs, block.returns):
                    self.union(out, ret)
        elif node.kind == "prim::Loop":
            body = node.blocks[0]
            carried = zip(node.inputs[2:], body.params[1:], body.returns[1:], node.outputs)
            for init, param, ret, out in carried:
                for v in (param, ret, out):
                    self.union(init, v)
        else:
            info = op_info(node)
            if info is not None:
                self._add_from_schema(node, info)
            else:
                self._add_unknown(node)

    def _add_from_schema(self, node: Node, info: OpInfo) -> None:
        """Only annotated arguments alias: ``t(Tensor(a) self) -> Tensor(a)`` ties the view
        to its base, ``append(t[](a!) self, t(c -> *) el)`` puts ``el`` into the list."""
        annotated = [v for arg, v in zip(info.schema.arguments, node.inputs) if arg.alias]
        if info.schema.returns_alias or info.schema.mutates:
            for out in node.outputs:
                for v in annotated:
                    self.union(out, v)
        if info.schema.mutates:
            for v in annotated[1:]:
                self.union(annotated[0], v)

    def _add_unknown(self, node: Node) -> None:
        mutable_inputs = [v for v in node.inputs if is_mutable_type(v.type)]
        if returns_alias(node):
            for out in node.outputs:
                for v in mutable_inputs:
                    self.union(out, v)
        if mutated_inputs(node):  # a write may store one argument into another
            for v in mutable_inputs[1:]:
                self.union(mutable_inputs[0], v)
