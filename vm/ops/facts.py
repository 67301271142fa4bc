"""Op facts: what the passes, fusion, the memory planner and the fast path may assume about
an operator, in one table.

Two sources, one vocabulary (``Fact``):

* an **overload** (``aten::add.Tensor``) gets its facts from its registration
  (``op_facts``): ``EFFECT`` when registered ``pure=False`` (print, raise, random numbers),
  ``MUTATES`` for a ``(a!)`` argument, ``VIEW`` for a ``(a)`` return, ``ELEMENTWISE`` for a
  pointwise map fusion may group, ``OUT_VARIANT`` when it can write into a given buffer;
* a **node kind** (``prim::If``, ``aten::size``) gets the facts below (``kind_facts``):
  the prim nodes no schema describes, and the groupings of aten kinds by what their
  results depend on, which no schema says.

``compiler.analysis.effects`` answers DCE's, CSE's and fusion's questions from both;
``compiler.resolve`` and the emitter skip ``CONTROL`` kinds; ``vm.static.plannable`` reads
the shape facts for its plan key and the alias facts for its may-alias edges;
``vm.static.fastpath`` lets an ``ELEMENTWISE`` node's output take an operand's bytes.
``tests/ops/test_facts.py`` checks that the facts of every registered operator agree with
each other.
"""

from __future__ import annotations

import enum

from vm.ops import registry
from vm.ops.registry import OpInfo


class Fact(enum.Flag):
    """One fact about an operator or node kind; a kind's facts are an or of these."""

    NONE = 0
    PURE = enum.auto()  # no side effect, whatever the registry says: removable, movable
    EFFECT = enum.auto()  # always a side effect: never removed, merged or moved
    ALIASING = enum.auto()  # outputs are (or contain) inputs rather than fresh values
    CONTROL = enum.auto()  # no operator entry: the emitter and the runtimes handle the node
    SUBGRAPH = enum.auto()  # runs other IR (blocks, a callee, a fusion group's subgraph)
    CONTAINER = enum.auto()  # packs, unpacks or casts containers: computes no new data
    SHAPE_QUERY = enum.auto()  # reads a tensor's metadata (size, dtype...), not its contents
    DATA_DEPENDENT_SHAPE = enum.auto()  # the result's shape depends on tensor contents
    SHAPE_ONLY_LIST = enum.auto()  # a list of pieces whose number and shapes follow from shapes
    SIMPLE_MAP = enum.auto()  # PyTorch's isSimpleMap by kind: fusible when no overload is known
    # per overload, from the registration
    ELEMENTWISE = enum.auto()  # a pointwise map: fusion may group it; output may reuse an operand
    OUT_VARIANT = enum.auto()  # has out(buffer, *args): the memory planner may hand it a buffer
    MUTATES = enum.auto()  # writes an argument annotated (a!)
    VIEW = enum.auto()  # a return annotated (a): may share memory with an argument


F = Fact
_CONTAINER = F.PURE | F.ALIASING | F.CONTAINER

# node kind -> its facts
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
    "aten::__getitem__": F.CONTAINER,
    "aten::list": F.CONTAINER,
    # other prims without effects
    "prim::NumToTensor": F.PURE,
    "prim::Uninitialized": F.PURE,
    "aten::__is__": F.PURE,
    "aten::__isnot__": F.PURE,
    # effects
    "prim::RaiseException": F.EFFECT,
    "prim::Print": F.EFFECT,
    "aten::warn": F.EFFECT,
    "prim::SetAttr": F.EFFECT,
    "prim::Enter": F.EFFECT,
    "prim::Exit": F.EFFECT,
    "prim::AddStatValue": F.EFFECT,
    "prim::TimePoint": F.EFFECT,
    # metadata queries
    "aten::size": F.SHAPE_QUERY,
    "aten::dim": F.SHAPE_QUERY,
    "aten::numel": F.SHAPE_QUERY,
    "aten::len": F.SHAPE_QUERY,
    "aten::sym_size": F.SHAPE_QUERY,
    "aten::is_floating_point": F.SHAPE_QUERY,
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
_add(("aten::nonzero", "aten::unique", "aten::_unique", "aten::_unique2", "aten::unique_consecutive",
      "aten::unique_dim", "aten::masked_select", "aten::index", "aten::argwhere", "aten::repeat_interleave",
      "aten::nonzero_numpy", "aten::bincount", "aten::histc", "aten::multinomial"),
     F.DATA_DEPENDENT_SHAPE)  # fmt: skip
# splits whose pieces follow from the input shapes (chunk(gates, 4, 1) in an LSTM cell)
_add(("aten::chunk", "aten::unsafe_chunk", "aten::split", "aten::unsafe_split", "aten::split_with_sizes",
      "aten::unsafe_split_with_sizes", "aten::unbind", "aten::broadcast_tensors", "aten::meshgrid"),
     F.SHAPE_ONLY_LIST)  # fmt: skip
# PyTorch's isSimpleMap set (graph_fuser.cpp), by kind: what fusion may group when a
# node's overload is not known (the registry's ELEMENTWISE decides when it is)
_add(tuple(f"aten::{name}" for name in (
    "abs", "acos", "add", "asin", "atan", "atan2", "ceil", "clamp", "cos", "cosh", "div",
    "exp", "expm1", "erf", "erfc", "floor", "fmod", "frac", "lgamma", "log", "log10",
    "log1p", "log2", "logit", "lerp", "max", "min", "mul", "neg", "pow", "reciprocal",
    "relu", "threshold", "remainder", "round", "rsqrt", "sigmoid", "sin", "sinh", "sqrt",
    "sub", "tan", "tanh", "trunc", "eq", "ne", "ge", "gt", "le", "lt", "addcmul", "where",
    "type_as", "_cast_Float")), F.SIMPLE_MAP)  # fmt: skip


def kinds_with(fact: Fact) -> frozenset[str]:
    """Every node kind the table gives ``fact``."""
    return frozenset(k for k, facts in KINDS.items() if fact in facts)


# the sets the hot paths test membership in
PURE_KINDS = kinds_with(F.PURE)
EFFECT_KINDS = kinds_with(F.EFFECT)
ALIASING_KINDS = kinds_with(F.ALIASING)
CONTROL_KINDS = kinds_with(F.CONTROL)
SUBGRAPH_KINDS = kinds_with(F.SUBGRAPH)
CONTAINER_KINDS = kinds_with(F.CONTAINER)
SHAPE_QUERIES = kinds_with(F.SHAPE_QUERY)
DATA_DEPENDENT_SHAPES = kinds_with(F.DATA_DEPENDENT_SHAPE)
SHAPE_ONLY_LISTS = kinds_with(F.SHAPE_ONLY_LIST)
SIMPLE_MAPS = kinds_with(F.SIMPLE_MAP)


def kind_facts(kind: str) -> Fact:
    """The facts the table gives node kind ``kind`` (``Fact.NONE`` when it lists none)."""
    return KINDS.get(kind, F.NONE)


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
