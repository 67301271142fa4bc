"""Op facts: what the passes, fusion, the memory planner and the fast path may assume about
an operator, as queries over the registry.

Two sources, one vocabulary (``Fact``, defined in ``vm.ops.registry``):

* an **overload** (``aten::add.Tensor``) gets its facts from its registration
  (``op_facts``): ``EFFECT`` when registered ``pure=False`` (print, raise, random numbers),
  ``MUTATES`` for a ``(a!)`` argument, ``VIEW`` for a ``(a)`` return, ``ELEMENTWISE`` for a
  pointwise map fusion may group, ``OUT_VARIANT`` when it can write into a given buffer;
* a **node kind** (``prim::If``, ``aten::size``) gets the kind-level facts its overloads
  declare at registration (``facts=Fact.SHAPE_QUERY`` on ``aten::size``), or, for node
  kinds no registration describes, the table below: the prim nodes the emitter and the
  runtimes handle themselves, aten kinds irvm has no kernel for (so an unknown node is
  still classified), and PyTorch's isSimpleMap list (a fact about PyTorch, by kind).

The kind sets (``EFFECT_KINDS``...) are live views: a custom operator registered after
import shows up in them.  ``vm.ir.effects`` answers DCE's, CSE's and fusion's
questions from both; ``vm.ir.resolve`` and the emitter skip ``CONTROL`` kinds;
``vm.static.plannable`` reads the shape facts for its plan key and the alias facts for its
may-alias edges; ``vm.static.fastpath`` lets an ``ELEMENTWISE`` node's output take an
operand's bytes; ``compiler.passes.fold_epilogues`` writes an ``EPILOGUE`` activation in
place into a ``TAKES_EPILOGUE`` result.

The facts of operators that read weights are declared on their registrations as small
records (``registry.DtypeRule``, ``Weights``, ``WeightShapes``) and read here by node kind
(``dtype_rule``, ``weights_of``, ``weight_shapes_of``): the pre-run dtype and weight-shape
checks (``vm.binding``), the input shapes a model's weights imply (``vm.api.signature``) and
the weight passes (``compiler.passes.fold_batch_norm``, ``fold_transposed_weights``) ask
them, so none of those names an operator.  The bare numpy calls the static runtime may
make for an overload (``registry.FastCall``) are read by overload (``fast_calls``).  ``tests/ops/test_facts.py`` checks that the
facts of every registered operator agree with each other and with its schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from types import MappingProxyType
from typing import Any

from vm.ops import registry
from vm.ops.registry import DtypeRule, Fact, FastCall, OpInfo, Weights, WeightShapes

F = Fact
_CONTAINER = F.PURE | F.ALIASING | F.CONTAINER

# node kind -> its facts, for kinds no registration describes
KINDS: dict[str, Fact] = {
    # control: nodes with blocks, calls, constants, drops
    "prim::If": F.PURE | F.CONTROL | F.SUBGRAPH,
    "prim::Loop": F.PURE | F.CONTROL | F.SUBGRAPH,
    "prim::FusionGroup": F.PURE | F.CONTROL | F.SUBGRAPH,
    "prim::CallFunction": F.EFFECT | F.ALIASING | F.CONTROL | F.SUBGRAPH,
    "prim::CallMethod": F.EFFECT | F.ALIASING | F.CONTROL | F.SUBGRAPH,
    "prim::Constant": F.PURE | F.CONTROL,
    "prim::Drop": F.EFFECT | F.CONTROL,
    # containers and casts
    "prim::ListConstruct": _CONTAINER,
    "prim::ListUnpack": _CONTAINER,
    "prim::TupleConstruct": _CONTAINER,
    "prim::TupleUnpack": _CONTAINER,
    "prim::TupleIndex": _CONTAINER,
    "prim::DictConstruct": _CONTAINER,
    "prim::GetAttr": _CONTAINER,
    "prim::unchecked_cast": _CONTAINER,
    # other prims without effects
    "prim::NumToTensor": F.PURE,
    "prim::Uninitialized": F.PURE,
    # effects
    "prim::RaiseException": F.EFFECT,
    "prim::Print": F.EFFECT,
    "prim::SetAttr": F.EFFECT,
    "prim::Enter": F.EFFECT,
    "prim::Exit": F.EFFECT,
    "prim::AddStatValue": F.EFFECT,
    "prim::TimePoint": F.EFFECT,
    # metadata queries
    "aten::sym_size": F.SHAPE_QUERY,
    "aten::get_device": F.SHAPE_QUERY,
    "prim::dtype": F.PURE | F.SHAPE_QUERY,
    "prim::device": F.PURE | F.SHAPE_QUERY,
    "prim::shape": F.SHAPE_QUERY,
    "prim::layout": F.SHAPE_QUERY,
    "prim::is_cuda": F.SHAPE_QUERY,
}


def _add(names: tuple[str, ...], fact: Fact) -> None:
    for name in names:
        KINDS[name] = KINDS.get(name, F.NONE) | fact


# shapes that depend on data
_add(("aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_consecutive", "aten::unique_dim",
      "aten::nonzero_numpy", "aten::bincount", "aten::histc"),
     F.DATA_DEPENDENT_SHAPE)  # fmt: skip
# splits whose pieces follow from the input shapes (chunk(gates, 4, 1) in an LSTM cell)
_add(("aten::unsafe_split_with_sizes",), F.SHAPE_ONLY_LIST)
# PyTorch's isSimpleMap set (graph_fuser.cpp), by kind: what fusion may group when a
# node's overload is not known (the registry's ELEMENTWISE decides when it is)
_add(tuple(f"aten::{name}" for name in (
    "abs", "acos", "add", "asin", "atan", "atan2", "ceil", "clamp", "cos", "cosh", "div",
    "exp", "expm1", "erf", "erfc", "floor", "fmod", "frac", "lgamma", "log", "log10",
    "log1p", "log2", "logit", "lerp", "max", "min", "mul", "neg", "pow", "reciprocal",
    "relu", "threshold", "remainder", "round", "rsqrt", "sigmoid", "sin", "sinh", "sqrt",
    "sub", "tan", "tanh", "trunc", "eq", "ne", "ge", "gt", "le", "lt", "addcmul", "where",
    "type_as", "_cast_Float")), F.SIMPLE_MAP)  # fmt: skip


class _KindSet(Set[str]):
    """The kinds with one fact: the table's and every registration's, kept current as
    operators register (a custom op registered after import is seen too)."""

    def __init__(self, fact: Fact):
        self.fact = fact
        self._version = -1
        self._kinds: frozenset[str] = frozenset()

    def _current(self) -> frozenset[str]:
        if self._version != registry.version():
            self._kinds = kinds_with(self.fact)
            self._version = registry.version()
        return self._kinds

    @classmethod
    def _from_iterable(cls, it: Any) -> frozenset[str]:  # what &, | and - make
        return frozenset(it)

    def __contains__(self, kind: object) -> bool:
        return kind in self._current()

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())


def kinds_with(fact: Fact) -> frozenset[str]:
    """Every node kind the table or a registration gives ``fact``."""
    table = {k for k, facts in KINDS.items() if fact in facts}
    return frozenset(table | {k for k in registry.kinds() if fact in registry.declared_facts(k)})


# the sets the hot paths test membership in
PURE_KINDS = _KindSet(F.PURE)
EFFECT_KINDS = _KindSet(F.EFFECT)
ALIASING_KINDS = _KindSet(F.ALIASING)
CONTROL_KINDS = _KindSet(F.CONTROL)
SUBGRAPH_KINDS = _KindSet(F.SUBGRAPH)
CONTAINER_KINDS = _KindSet(F.CONTAINER)
SHAPE_QUERIES = _KindSet(F.SHAPE_QUERY)
DATA_DEPENDENT_SHAPES = _KindSet(F.DATA_DEPENDENT_SHAPE)
SHAPE_ONLY_LISTS = _KindSet(F.SHAPE_ONLY_LIST)
SIMPLE_MAPS = _KindSet(F.SIMPLE_MAP)
RANDOM_KINDS = _KindSet(F.RANDOM)
TAKES_EPILOGUE_KINDS = _KindSet(F.TAKES_EPILOGUE)
EPILOGUE_KINDS = _KindSet(F.EPILOGUE)


def kind_facts(kind: str) -> Fact:
    """The facts the table and the registrations give node kind ``kind`` (``Fact.NONE``
    when none does)."""
    return KINDS.get(kind, F.NONE) | registry.declared_facts(kind)


def info_facts(info: OpInfo) -> Fact:
    """The facts of one registered overload: its registration's, then its kind's."""
    facts = kind_facts(info.schema.name)
    if not info.pure:
        facts |= F.EFFECT
    if info.elementwise:
        facts |= F.ELEMENTWISE
    if info.out is not None:
        facts |= F.OUT_VARIANT
    if info.schema.mutates:
        facts |= F.MUTATES
    if info.schema.returns_alias:
        facts |= F.VIEW
    return facts


def op_facts(qualified: str) -> Fact:
    """The facts of the overload registered as ``qualified`` (``aten::add.Tensor``), or of
    the node kind when nothing is registered under that name (a prim factory)."""
    try:
        return info_facts(registry.lookup(qualified))
    except KeyError:
        return kind_facts(qualified)


# ---------------------------------------------------------------------------------------
# The facts of operators that read weights, by node kind


_DECLARED: dict[str, tuple[int, Mapping[str, Any]]] = {}


def _declared(field: str) -> Mapping[str, Any]:
    """Node kind -> the record its overloads declare in ``field`` (the first overload, in
    overload order, that declares one), rebuilt when a registration changes."""
    cached = _DECLARED.get(field)
    if cached is None or cached[0] != registry.version():
        table: dict[str, Any] = {}
        for kind in registry.kinds():
            found = next((v for i in registry.overloads(kind) if (v := getattr(i, field)) is not None), None)
            if found is not None:
                table[kind] = found
        cached = _DECLARED[field] = (registry.version(), MappingProxyType(table))
    return cached[1]


def dtype_rules() -> Mapping[str, DtypeRule]:
    """Every node kind whose kernel takes some tensors of one dtype only, with its rule."""
    return _declared("dtypes")


def dtype_rule(kind: str) -> DtypeRule | None:
    return dtype_rules().get(kind)


def layer_weights() -> Mapping[str, Weights]:
    """Every node kind that applies a weight to its input (convolutions, linear), with where
    it keeps it."""
    return _declared("weights")


def weights_of(kind: str) -> Weights | None:
    return layer_weights().get(kind)


def weight_shapes() -> Mapping[str, WeightShapes]:
    """Every node kind whose weight shares sizes with its values, with those sizes."""
    return _declared("weight_shapes")


def weight_shapes_of(kind: str) -> WeightShapes | None:
    return weight_shapes().get(kind)


_FAST: list[Any] = [-1, MappingProxyType({})]


def fast_calls() -> Mapping[str, tuple[FastCall, ...]]:
    """Overload -> the bare numpy calls the static runtime may make in its place
    (``vm.static.fastpath``), for every overload that declares some."""
    if _FAST[0] != registry.version():
        _FAST[:] = [registry.version(), MappingProxyType({i.name: i.fast for i in registry.all_ops() if i.fast})]
    return _FAST[1]
